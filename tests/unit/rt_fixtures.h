/*
 * rt_fixtures.h - hand-built schedules for the runtime tests (header
 * only).  They cover every collective, every op kind, every buffer, ops of
 * several chunks that cross the padded tail and block boundaries, phases
 * with a straggler, and plans that are unsafe in place (so the executor
 * must stage the input).  Each returns a finalized schedule or NULL.
 */
#ifndef RT_FIXTURES_H
#define RT_FIXTURES_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "../../runtime/ccs_int.h"
#include "../../runtime/sched.h"

#define FX_MOD(a, n) ((uint32_t)((((int64_t)(a)) % (n) + (n)) % (n)))

/* Shorthands that stop the build on the first failure. */
#define FX_TRY(expr)                                                        \
    do {                                                                    \
        if ((expr) != CCS_OK)                                               \
            goto fail;                                                      \
    } while (0)

static inline ccs_sched_t *fx_finish(ccs_sched_t *s)
{
    if (ccs_sched_finalize(s, NULL) != CCS_OK) {
        ccs_sched_destroy(s);
        return NULL;
    }
    return s;
}

/* A plan of the fixture `s`, which it consumes (destroyed either way);
 * NULL when s is NULL or the loader refuses it.  The caller owns the plan. */
static inline ccs_plan_t *fx_plan_of(ccs_sched_t *s)
{
    ccs_plan_t *p = NULL;

    if (s == NULL || ccs_plan_from_sched(s, &p, NULL) != CCS_OK)
        p = NULL;
    ccs_sched_destroy(s);
    return p;
}

/* Ring reduce-scatter among ranks[0..k) over k blocks of `per` chunks at
 * chunk 0; partial sums travel in OUT; afterwards ranks[i] holds block
 * (i + 1) % k.  k - 1 steps in `phase`. */
static inline bool fx_ring_rs(ccs_sched_t *s, const uint32_t *rk, uint32_t k,
                       uint32_t per, uint32_t phase)
{
    for (uint32_t t = 0; t + 1 < k; t++) {
        uint32_t step;
        if (ccs_sched_add_step(s, phase, &step, NULL) != CCS_OK)
            return false;
        for (uint32_t i = 0; i < k; i++) {
            uint32_t b = FX_MOD((int64_t)i - t, k);
            if (ccs_sched_xfer_reduce_from(
                    s, step, rk[i], t == 0 ? CCS_BUF_IN : CCS_BUF_OUT,
                    b * per, rk[(i + 1) % k], CCS_BUF_OUT, b * per,
                    CCS_BUF_IN, b * per, per, NULL) != CCS_OK)
                return false;
        }
    }
    return true;
}

/* Ring all-gather of OUT blocks, ranks[i] starting with block (i+1) % k. */
static inline bool fx_ring_ag(ccs_sched_t *s, const uint32_t *rk, uint32_t k,
                       uint32_t per, uint32_t phase)
{
    for (uint32_t t = 0; t + 1 < k; t++) {
        uint32_t step;
        if (ccs_sched_add_step(s, phase, &step, NULL) != CCS_OK)
            return false;
        for (uint32_t i = 0; i < k; i++) {
            uint32_t b = FX_MOD((int64_t)i + 1 - t, k);
            if (ccs_sched_xfer(s, step, rk[i], CCS_BUF_OUT, b * per,
                               rk[(i + 1) % k], CCS_BUF_OUT, b * per, per,
                               false, NULL) != CCS_OK)
                return false;
        }
    }
    return true;
}

static inline ccs_sched_t *fx_ring_allreduce(uint32_t R, uint32_t per)
{
    ccs_sched_t *s = NULL;
    uint32_t rk[64];

    for (uint32_t i = 0; i < R; i++)
        rk[i] = i;
    FX_TRY(ccs_sched_create(CCS_COLL_ALLREDUCE, R, R * per, "fx-ring", &s,
                            NULL));
    if (!fx_ring_rs(s, rk, R, per, 0) || !fx_ring_ag(s, rk, R, per, 0))
        goto fail;
    return fx_finish(s);
fail:
    ccs_sched_destroy(s);
    return NULL;
}

/* Ring allreduce through SCRATCH with COPY and REDUCE_LOCAL: every
 * receive lands in scratch and is added in the next step. */
static inline ccs_sched_t *fx_ring_scratch(uint32_t R)
{
    ccs_sched_t *s = NULL;
    uint32_t step;
    uint32_t rk[64];

    for (uint32_t i = 0; i < R; i++)
        rk[i] = i;
    FX_TRY(ccs_sched_create(CCS_COLL_ALLREDUCE, R, R, "fx-ring-scratch", &s,
                            NULL));
    FX_TRY(ccs_sched_add_step(s, 0, &step, NULL));
    for (uint32_t r = 0; r < R; r++)
        FX_TRY(ccs_sched_local(s, step, r, CCS_BUF_OUT, 0, CCS_BUF_IN, 0, R,
                               false, NULL));
    for (uint32_t t = 0; t + 1 < R; t++) {
        uint32_t st1, st2;
        FX_TRY(ccs_sched_add_step(s, 0, &st1, NULL));
        FX_TRY(ccs_sched_add_step(s, 0, &st2, NULL));
        for (uint32_t r = 0; r < R; r++) {
            uint32_t b = FX_MOD((int64_t)r - t, R);
            uint32_t q = (r + 1) % R;
            FX_TRY(ccs_sched_xfer(s, st1, r, CCS_BUF_OUT, b, q,
                                  CCS_BUF_SCRATCH, 0, 1, false, NULL));
            FX_TRY(ccs_sched_local(s, st2, q, CCS_BUF_OUT, b,
                                   CCS_BUF_SCRATCH, 0, 1, true, NULL));
        }
    }
    if (!fx_ring_ag(s, rk, R, 1, 0))
        goto fail;
    return fx_finish(s);
fail:
    ccs_sched_destroy(s);
    return NULL;
}

/* Allreduce by whole-buffer exchanges that receive into OUT while IN is
 * still to be sent: unsafe in place, so the input must be staged.  Ops
 * span all C chunks (tail included). */
static inline ccs_sched_t *fx_direct_hazard(uint32_t R, uint32_t C)
{
    ccs_sched_t *s = NULL;
    uint32_t step;

    FX_TRY(ccs_sched_create(CCS_COLL_ALLREDUCE, R, C, "fx-direct", &s,
                            NULL));
    FX_TRY(ccs_sched_add_step(s, 0, &step, NULL));
    for (uint32_t r = 0; r < R; r++)
        FX_TRY(ccs_sched_xfer(s, step, r, CCS_BUF_IN, 0, (r + 1) % R,
                              CCS_BUF_OUT, 0, C, false, NULL));
    FX_TRY(ccs_sched_add_step(s, 0, &step, NULL));
    for (uint32_t r = 0; r < R; r++)
        FX_TRY(ccs_sched_local(s, step, r, CCS_BUF_OUT, 0, CCS_BUF_IN, 0, C,
                               true, NULL));
    for (uint32_t d = 2; d < R; d++) {
        FX_TRY(ccs_sched_add_step(s, 0, &step, NULL));
        for (uint32_t r = 0; r < R; r++)
            FX_TRY(ccs_sched_xfer(s, step, r, CCS_BUF_IN, 0, (r + d) % R,
                                  CCS_BUF_OUT, 0, C, true, NULL));
    }
    return fx_finish(s);
fail:
    ccs_sched_destroy(s);
    return NULL;
}

/* Ring reduce-scatter, partial sums in two SCRATCH slots. */
static inline ccs_sched_t *fx_ring_reducescatter(uint32_t R, uint32_t per)
{
    ccs_sched_t *s = NULL;

    FX_TRY(ccs_sched_create(CCS_COLL_REDUCESCATTER, R, R * per, "fx-rs", &s,
                            NULL));
    for (uint32_t t = 0; t + 1 < R; t++) {
        uint32_t step;
        FX_TRY(ccs_sched_add_step(s, 0, &step, NULL));
        for (uint32_t r = 0; r < R; r++) {
            uint32_t q = (r + 1) % R;
            uint32_t b = FX_MOD((int64_t)r - t - 1, R);
            bool last = t + 2 == R;
            FX_TRY(ccs_sched_xfer_reduce_from(
                s, step, r, t == 0 ? CCS_BUF_IN : CCS_BUF_SCRATCH,
                t == 0 ? b * per : ((t - 1) % 2) * per, q,
                last ? CCS_BUF_OUT : CCS_BUF_SCRATCH,
                last ? b * per : (t % 2) * per, CCS_BUF_IN, b * per, per,
                NULL));
        }
    }
    if (R == 1)
        goto fail;
    return fx_finish(s);
fail:
    ccs_sched_destroy(s);
    return NULL;
}

/* Ring allgather; the first step sends from IN. */
static inline ccs_sched_t *fx_ring_allgather(uint32_t R, uint32_t per)
{
    ccs_sched_t *s = NULL;

    FX_TRY(ccs_sched_create(CCS_COLL_ALLGATHER, R, R * per, "fx-ag", &s,
                            NULL));
    for (uint32_t t = 0; t + 1 < R; t++) {
        uint32_t step;
        FX_TRY(ccs_sched_add_step(s, 0, &step, NULL));
        for (uint32_t r = 0; r < R; r++) {
            uint32_t b = FX_MOD((int64_t)r - t, R);
            FX_TRY(ccs_sched_xfer(s, step, r,
                                  t == 0 ? CCS_BUF_IN : CCS_BUF_OUT, b * per,
                                  (r + 1) % R, CCS_BUF_OUT, b * per, per,
                                  false, NULL));
            if (t == 0)
                FX_TRY(ccs_sched_local(s, step, r, CCS_BUF_OUT, r * per,
                                       CCS_BUF_IN, r * per, per, false,
                                       NULL));
        }
    }
    return fx_finish(s);
fail:
    ccs_sched_destroy(s);
    return NULL;
}

/* Recursive-doubling allgather (R a power of two): ops of 2^k blocks,
 * crossing block boundaries. */
static inline ccs_sched_t *fx_rd_allgather(uint32_t R, uint32_t per)
{
    ccs_sched_t *s = NULL;

    FX_TRY(ccs_sched_create(CCS_COLL_ALLGATHER, R, R * per, "fx-rd-ag", &s,
                            NULL));
    for (uint32_t d = 1; d < R; d *= 2) {
        uint32_t step;
        FX_TRY(ccs_sched_add_step(s, 0, &step, NULL));
        for (uint32_t r = 0; r < R; r++) {
            uint32_t first = (r / d) * d;
            FX_TRY(ccs_sched_xfer(s, step, r,
                                  d == 1 ? CCS_BUF_IN : CCS_BUF_OUT,
                                  first * per, r ^ d, CCS_BUF_OUT,
                                  first * per, d * per, false, NULL));
            if (d == 1)
                FX_TRY(ccs_sched_local(s, step, r, CCS_BUF_OUT, r * per,
                                       CCS_BUF_IN, r * per, per, false,
                                       NULL));
        }
    }
    return fx_finish(s);
fail:
    ccs_sched_destroy(s);
    return NULL;
}

/* Chain reduce to `root`; partial sums in SCRATCH off the root. */
static inline ccs_sched_t *fx_chain_reduce(uint32_t R, uint32_t root,
                                           uint32_t C)
{
    ccs_sched_t *s = NULL;

    FX_TRY(ccs_sched_create(CCS_COLL_REDUCE, R, C, "fx-reduce", &s, NULL));
    s->root = (int32_t)root;
    for (uint32_t t = 0; t + 1 < R; t++) {
        uint32_t step;
        uint32_t from = (root + 1 + t) % R, to = (root + 2 + t) % R;
        bool last = to == root;
        FX_TRY(ccs_sched_add_step(s, 0, &step, NULL));
        FX_TRY(ccs_sched_xfer_reduce_from(
            s, step, from, t == 0 ? CCS_BUF_IN : CCS_BUF_SCRATCH, 0, to,
            last ? CCS_BUF_OUT : CCS_BUF_SCRATCH, 0, CCS_BUF_IN, 0, C,
            NULL));
    }
    return fx_finish(s);
fail:
    ccs_sched_destroy(s);
    return NULL;
}

/* Chain broadcast from `root`, whole buffer per op. */
static inline ccs_sched_t *fx_chain_bcast(uint32_t R, uint32_t root, uint32_t C)
{
    ccs_sched_t *s = NULL;

    FX_TRY(ccs_sched_create(CCS_COLL_BROADCAST, R, C, "fx-bcast", &s, NULL));
    s->root = (int32_t)root;
    for (uint32_t t = 0; t + 1 < R; t++) {
        uint32_t step;
        uint32_t from = (root + t) % R;
        FX_TRY(ccs_sched_add_step(s, 0, &step, NULL));
        FX_TRY(ccs_sched_xfer(s, step, from,
                              t == 0 ? CCS_BUF_IN : CCS_BUF_OUT, 0,
                              (from + 1) % R, CCS_BUF_OUT, 0, C, false,
                              NULL));
        if (t == 0)
            FX_TRY(ccs_sched_local(s, step, root, CCS_BUF_OUT, 0, CCS_BUF_IN,
                                   0, C, false, NULL));
    }
    return fx_finish(s);
fail:
    ccs_sched_destroy(s);
    return NULL;
}

/* Direct alltoall in one step (unsafe in place: staged). */
static inline ccs_sched_t *fx_alltoall(uint32_t R, uint32_t per)
{
    ccs_sched_t *s = NULL;
    uint32_t step;

    FX_TRY(ccs_sched_create(CCS_COLL_ALLTOALL, R, R * per, "fx-a2a", &s,
                            NULL));
    FX_TRY(ccs_sched_add_step(s, 0, &step, NULL));
    for (uint32_t r = 0; r < R; r++) {
        for (uint32_t b = 0; b < R; b++) {
            if (b == r)
                FX_TRY(ccs_sched_local(s, step, r, CCS_BUF_OUT, r * per,
                                       CCS_BUF_IN, r * per, per, false,
                                       NULL));
            else
                FX_TRY(ccs_sched_xfer(s, step, r, CCS_BUF_IN, b * per, b,
                                      CCS_BUF_OUT, r * per, per, false,
                                      NULL));
        }
    }
    return fx_finish(s);
fail:
    ccs_sched_destroy(s);
    return NULL;
}

/* StragglAR-shaped allreduce with straggler s0: phase 0 is a ring
 * reduce-scatter among the other R-1 ranks (the straggler has no phase-0
 * op); phase 1 adds the straggler's blocks and all-gathers. */
static inline ccs_sched_t *fx_straggler(uint32_t R, uint32_t s0)
{
    ccs_sched_t *s = NULL;
    uint32_t rk[64], k = 0, step;

    for (uint32_t r = 0; r < R; r++)
        if (r != s0)
            rk[k++] = r;
    FX_TRY(ccs_sched_create(CCS_COLL_ALLREDUCE, R, k, "fx-straggler", &s,
                            NULL));
    s->straggler = (int32_t)s0;
    if (k == 1) {
        FX_TRY(ccs_sched_add_step(s, 0, &step, NULL));
        FX_TRY(ccs_sched_local(s, step, rk[0], CCS_BUF_OUT, 0, CCS_BUF_IN, 0,
                               1, false, NULL));
    } else if (!fx_ring_rs(s, rk, k, 1, 0)) {
        goto fail;
    }
    /* holder of block b: rk[i] with (i + 1) % k == b */
    FX_TRY(ccs_sched_add_step(s, 1, &step, NULL));
    for (uint32_t b = 0; b < k; b++)
        FX_TRY(ccs_sched_xfer_reduce_from(s, step, s0, CCS_BUF_IN, b,
                                          rk[FX_MOD((int64_t)b - 1, k)],
                                          CCS_BUF_OUT, b, CCS_BUF_OUT, b, 1,
                                          NULL));
    FX_TRY(ccs_sched_add_step(s, 1, &step, NULL));
    for (uint32_t b = 0; b < k; b++) {
        uint32_t h = rk[FX_MOD((int64_t)b - 1, k)];
        for (uint32_t q = 0; q < R; q++)
            if (q != h)
                FX_TRY(ccs_sched_xfer(s, step, h, CCS_BUF_OUT, b, q,
                                      CCS_BUF_OUT, b, 1, false, NULL));
    }
    return fx_finish(s);
fail:
    ccs_sched_destroy(s);
    return NULL;
}

typedef struct fx_entry {
    char name[48];
    ccs_sched_t *s;      /* owned by the table */
} fx_entry_t;

/* Every fixture for R ranks (2..8) into out[] (capacity cap); returns how
 * many were made, or -1 when one failed to build. */
static inline int fx_all(uint32_t R, fx_entry_t *out, int cap)
{
    int n = 0;
#define FX_ADD(nm, expr)                                                    \
    do {                                                                    \
        if (n < cap) {                                                      \
            snprintf(out[n].name, sizeof(out[n].name), "%s-r%u", nm, R);    \
            out[n].s = (expr);                                              \
            if (out[n].s == NULL)                                           \
                return -1;                                                  \
            n++;                                                            \
        }                                                                   \
    } while (0)
    FX_ADD("ring1", fx_ring_allreduce(R, 1));
    FX_ADD("ring3", fx_ring_allreduce(R, 3));
    FX_ADD("ringscratch", fx_ring_scratch(R));
    FX_ADD("direct", fx_direct_hazard(R, 5));
    FX_ADD("rs", fx_ring_reducescatter(R, 2));
    FX_ADD("ag", fx_ring_allgather(R, 2));
    if ((R & (R - 1)) == 0)
        FX_ADD("rdag", fx_rd_allgather(R, 3));
    FX_ADD("reduce", fx_chain_reduce(R, R - 1, 3));
    FX_ADD("bcast", fx_chain_bcast(R, 1 % R, 4));
    FX_ADD("a2a", fx_alltoall(R, 2));
    FX_ADD("straggler", fx_straggler(R, R - 1));
#undef FX_ADD
    return n;
}

static inline void fx_free(fx_entry_t *e, int n)
{
    for (int i = 0; i < n; i++)
        ccs_sched_destroy(e[i].s);
}

#endif /* RT_FIXTURES_H */
