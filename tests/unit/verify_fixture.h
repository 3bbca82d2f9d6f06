/*
 * verify_fixture.h - schedules built straight from the IR builder, shared by
 * tests/unit/test_verify.c and the verifier benchmark
 * (tests/bench/bench_verify.c), so neither depends on an algorithm module.
 * Header only; every function is static.
 */
#ifndef CCS_VERIFY_FIXTURE_H
#define CCS_VERIFY_FIXTURE_H

#include "../../runtime/sched.h"

/* The common tail of every fixture: finalize a schedule built without error
 * and hand it to the caller (*out), or destroy it and return the error. */
static ccs_status_t fixture_finish(ccs_sched_t *s, ccs_status_t st,
                                   ccs_sched_t **out, ccs_err_t *err)
{
    if (st == CCS_OK)
        st = ccs_sched_finalize(s, err);
    if (st != CCS_OK) {
        ccs_sched_destroy(s);
        return st;
    }
    *out = s;
    return CCS_OK;
}

/* Ring allreduce over n ranks, C = n chunks: n-1 reduce-scatter steps in
 * which rank r sends chunk (r - k) mod n to r+1, which stores
 * out = in (+) received; then n-1 all-gather steps forwarding the finished
 * chunks in OUT.  One-port, 2(n-1) steps, 2n ops per step.  *out owned by
 * the caller. */
static ccs_status_t fixture_ring_allreduce(uint32_t n, ccs_sched_t **out,
                                           ccs_err_t *err)
{
    ccs_sched_t *s = NULL;
    ccs_status_t st;
    uint32_t t;

    st = ccs_sched_create(CCS_COLL_ALLREDUCE, n, n, "ring", &s, err);
    if (st != CCS_OK)
        return st;
    for (uint32_t k = 0; k + 1 < n && st == CCS_OK; k++) {
        st = ccs_sched_add_step(s, 0, &t, err);
        for (uint32_t r = 0; r < n && st == CCS_OK; r++) {
            uint32_t c = (r + n - k) % n;
            st = ccs_sched_xfer_reduce_from(s, t, r,
                                            k == 0 ? CCS_BUF_IN : CCS_BUF_OUT,
                                            c, (r + 1) % n, CCS_BUF_OUT, c,
                                            CCS_BUF_IN, c, 1, err);
        }
    }
    for (uint32_t k = 0; k + 1 < n && st == CCS_OK; k++) {
        st = ccs_sched_add_step(s, 0, &t, err);
        for (uint32_t r = 0; r < n && st == CCS_OK; r++) {
            uint32_t c = (r + 1 + n - k) % n;
            st = ccs_sched_xfer(s, t, r, CCS_BUF_OUT, c, (r + 1) % n,
                                CCS_BUF_OUT, c, 1, false, err);
        }
    }
    return fixture_finish(s, st, out, err);
}

/* The ring allreduce of fixture_ring_allreduce with every chunk widened
 * to w consecutive chunks (C = n * w): each op moves w chunks, so the
 * plan is as small as the n-chunk one however large w is. */
static inline ccs_status_t fixture_ring_allreduce_wide(uint32_t n, uint32_t w,
                                                ccs_sched_t **out,
                                                ccs_err_t *err)
{
    ccs_sched_t *s = NULL;
    ccs_status_t st;
    uint32_t t;

    st = ccs_sched_create(CCS_COLL_ALLREDUCE, n, n * w, "ring", &s, err);
    if (st != CCS_OK)
        return st;
    for (uint32_t k = 0; k + 1 < n && st == CCS_OK; k++) {
        st = ccs_sched_add_step(s, 0, &t, err);
        for (uint32_t r = 0; r < n && st == CCS_OK; r++) {
            uint32_t c = (r + n - k) % n * w;
            st = ccs_sched_xfer_reduce_from(s, t, r,
                                            k == 0 ? CCS_BUF_IN : CCS_BUF_OUT,
                                            c, (r + 1) % n, CCS_BUF_OUT, c,
                                            CCS_BUF_IN, c, w, err);
        }
    }
    for (uint32_t k = 0; k + 1 < n && st == CCS_OK; k++) {
        st = ccs_sched_add_step(s, 0, &t, err);
        for (uint32_t r = 0; r < n && st == CCS_OK; r++) {
            uint32_t c = (r + 1 + n - k) % n * w;
            st = ccs_sched_xfer(s, t, r, CCS_BUF_OUT, c, (r + 1) % n,
                                CCS_BUF_OUT, c, w, false, err);
        }
    }
    return fixture_finish(s, st, out, err);
}

/* Direct allgather over n ranks (C = n): one step in which every rank
 * copies its IN chunk to OUT and sends it to every other rank: n(n-1)
 * transfers in a single step.  *out owned by the caller. */
static ccs_status_t fixture_direct_allgather(uint32_t n, ccs_sched_t **out,
                                             ccs_err_t *err)
{
    ccs_sched_t *s = NULL;
    ccs_status_t st;
    uint32_t t;

    st = ccs_sched_create(CCS_COLL_ALLGATHER, n, n, "direct", &s, err);
    if (st != CCS_OK)
        return st;
    st = ccs_sched_add_step(s, 0, &t, err);
    for (uint32_t r = 0; r < n && st == CCS_OK; r++) {
        st = ccs_sched_local(s, t, r, CCS_BUF_OUT, r, CCS_BUF_IN, r, 1, false,
                             err);
        for (uint32_t q = 0; q < n && st == CCS_OK; q++) {
            if (q != r)
                st = ccs_sched_xfer(s, t, r, CCS_BUF_IN, r, q, CCS_BUF_OUT, r,
                                    1, false, err);
        }
    }
    return fixture_finish(s, st, out, err);
}

#endif /* CCS_VERIFY_FIXTURE_H */
