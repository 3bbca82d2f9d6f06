/*
 * test_ring.c - ring_reduce_scatter / ring_all_gather (synth/algo/ring.h) over
 * arbitrary ordered subsets of ranks, with chunk offsets, idle ranks,
 * phases and the k == 1 and k == 2 edge cases.  Resulting states are
 * checked by symbolic execution (symcheck.h); whole collectives built from
 * the pieces also pass verify_sched.
 */
#include <stdlib.h>
#include <string.h>

#include "ring.h"
#include "verify.h"
#include "harness.h"
#include "symcheck.h"

static uint64_t subset_mask(const uint32_t *ranks, uint32_t k)
{
    uint64_t m = 0;

    for (uint32_t i = 0; i < k; i++)
        m |= 1ull << ranks[i];
    return m;
}

static bool in_subset(const uint32_t *ranks, uint32_t k, uint32_t r)
{
    for (uint32_t i = 0; i < k; i++) {
        if (ranks[i] == r)
            return true;
    }
    return false;
}

typedef struct ring_case {
    uint32_t n;               /* ranks in the schedule */
    uint32_t k;               /* ranks in the ring */
    uint32_t ranks[8];        /* ring order */
    uint32_t nchunks, chunk0, per;
} ring_case_t;

static const ring_case_t ring_cases[] = {
    { 7, 4, { 0, 2, 3, 5 }, 12, 3, 2 },
    { 7, 4, { 5, 0, 3, 2 }, 9, 0, 2 },      /* unsorted ring order */
    { 6, 5, { 1, 2, 3, 4, 5 }, 5, 0, 1 },   /* StragglAR-like: 0 idle */
    { 4, 2, { 3, 1 }, 7, 1, 3 },
    { 3, 1, { 2 }, 4, 2, 2 },               /* a ring of one */
    { 8, 8, { 0, 1, 2, 3, 4, 5, 6, 7 }, 16, 0, 2 },
};

/* Reduce-scatter then all-gather on a subset, OUT as the partial buffer:
 * after RS, ranks[i] holds the subset's sum of block i; after AG every
 * subset rank holds every block; idle ranks have no ops. */
TEST(subset_rs_then_ag)
{
    for (size_t ci = 0; ci < sizeof(ring_cases) / sizeof(ring_cases[0]);
         ci++) {
        const ring_case_t *rc = &ring_cases[ci];
        uint64_t all = subset_mask(rc->ranks, rc->k);
        ccs_sched_t *s = NULL;
        ccs_err_t err = { { 0 } };
        symcheck_t sc = { 0 };
        char msg[512];
        uint32_t rs_steps = rc->k == 1 ? 1 : rc->k - 1;

        CHECK_STATUS(ccs_sched_create(CCS_COLL_ALLREDUCE, rc->n, rc->nchunks,
                                      "test", &s, &err), CCS_OK);
        if (s == NULL)
            continue;
        CHECK_STATUS(ring_reduce_scatter(s, rc->ranks, rc->k, rc->chunk0,
                                         rc->per, 0, &err), CCS_OK);
        CHECK_EQ_INT(s->nsteps, rs_steps);
        CHECK_STATUS(ccs_sched_validate(s, &err), CCS_OK);
        CHECK_MSG(symcheck_run(s, &sc, msg, sizeof(msg)) == 0, "case %zu "
                  "RS: %s", ci, msg);
        for (uint32_t i = 0; i < rc->k && sc.buf[CCS_BUF_OUT]; i++) {
            for (uint32_t x = 0; x < rc->per; x++) {
                uint32_t c = rc->chunk0 + i * rc->per + x;
                symcheck_val_t v =
                    *symcheck_at(&sc, CCS_BUF_OUT, rc->ranks[i], c);
                CHECK_MSG(v.origin == c && v.ranks == all,
                          "case %zu: rank %u OUT %u = (%lld, %llx)", ci,
                          rc->ranks[i], c, (long long)v.origin,
                          (unsigned long long)v.ranks);
            }
        }
        symcheck_free(&sc);

        CHECK_STATUS(ring_all_gather(s, rc->ranks, rc->k, rc->chunk0,
                                     rc->per, 0, &err), CCS_OK);
        CHECK_EQ_INT(s->nsteps, rs_steps + rc->k - 1);
        CHECK_STATUS(ccs_sched_validate(s, &err), CCS_OK);
        CHECK_MSG(symcheck_run(s, &sc, msg, sizeof(msg)) == 0, "case %zu "
                  "AG: %s", ci, msg);
        for (uint32_t r = 0; r < rc->n && sc.buf[CCS_BUF_OUT]; r++) {
            bool member = in_subset(rc->ranks, rc->k, r);

            if (!member)
                CHECK_EQ_INT(s->rank_nops[r], 0);
            for (uint32_t c = 0; c < rc->nchunks; c++) {
                symcheck_val_t v = *symcheck_at(&sc, CCS_BUF_OUT, r, c);
                bool inside = c >= rc->chunk0 &&
                              c < rc->chunk0 + rc->k * rc->per;
                if (member && inside)
                    CHECK_MSG(v.origin == c && v.ranks == all,
                              "case %zu: rank %u OUT %u = (%lld, %llx)", ci,
                              r, c, (long long)v.origin,
                              (unsigned long long)v.ranks);
                else
                    CHECK_MSG(v.origin == -1, "case %zu: rank %u OUT %u "
                              "written outside the ring's blocks", ci, r, c);
            }
        }
        /* One-port: one send and one receive per rank per step (a ring of
         * one only copies). */
        CHECK(sc.max_sends <= 1 && sc.max_recvs <= 1);
        symcheck_free(&sc);
        ccs_sched_destroy(s);
    }
}

/* Partial sums in SCRATCH at an offset: OUT is written only in each
 * rank's own final block (what the reducescatter collective needs). */
TEST(subset_rs_scratch)
{
    for (size_t ci = 0; ci < sizeof(ring_cases) / sizeof(ring_cases[0]);
         ci++) {
        const ring_case_t *rc = &ring_cases[ci];
        uint64_t all = subset_mask(rc->ranks, rc->k);
        ccs_sched_t *s = NULL;
        ccs_err_t err = { { 0 } };
        symcheck_t sc = { 0 };
        char msg[512];
        uint32_t tmp0 = 5;

        CHECK_STATUS(ccs_sched_create(CCS_COLL_ALLREDUCE, rc->n, rc->nchunks,
                                      "test", &s, &err), CCS_OK);
        if (s == NULL)
            continue;
        CHECK_STATUS(ring_reduce_scatter_tmp(s, rc->ranks, rc->k, rc->chunk0,
                                             rc->per, CCS_BUF_SCRATCH, tmp0,
                                             0, &err), CCS_OK);
        CHECK_EQ_INT(s->nsteps, rc->k == 1 ? 1 : rc->k - 1);
        if (rc->k > 2)
            CHECK_EQ_INT(s->nscratch, tmp0 + rc->k * rc->per);
        CHECK_STATUS(ccs_sched_validate(s, &err), CCS_OK);
        CHECK_MSG(symcheck_run(s, &sc, msg, sizeof(msg)) == 0, "case %zu: "
                  "%s", ci, msg);
        for (uint32_t r = 0; r < rc->n && sc.buf[CCS_BUF_OUT]; r++) {
            for (uint32_t c = 0; c < rc->nchunks; c++) {
                symcheck_val_t v = *symcheck_at(&sc, CCS_BUF_OUT, r, c);
                bool own = false;

                for (uint32_t i = 0; i < rc->k; i++) {
                    own = own || (rc->ranks[i] == r &&
                                  c >= rc->chunk0 + i * rc->per &&
                                  c < rc->chunk0 + (i + 1) * rc->per);
                }
                if (own)
                    CHECK_MSG(v.origin == c && v.ranks == all,
                              "case %zu: rank %u OUT %u = (%lld, %llx)", ci,
                              r, c, (long long)v.origin,
                              (unsigned long long)v.ranks);
                else
                    CHECK_MSG(v.origin == -1, "case %zu: rank %u OUT %u "
                              "written but not its own block", ci, r, c);
            }
        }
        symcheck_free(&sc);
        ccs_sched_destroy(s);
    }
}

/* All-gather from IN on a subset: every member ends with block i of
 * ranks[i]'s input. */
TEST(subset_ag_from_in)
{
    for (size_t ci = 0; ci < sizeof(ring_cases) / sizeof(ring_cases[0]);
         ci++) {
        const ring_case_t *rc = &ring_cases[ci];
        ccs_sched_t *s = NULL;
        ccs_err_t err = { { 0 } };
        symcheck_t sc = { 0 };
        char msg[512];

        CHECK_STATUS(ccs_sched_create(CCS_COLL_ALLREDUCE, rc->n, rc->nchunks,
                                      "test", &s, &err), CCS_OK);
        if (s == NULL)
            continue;
        CHECK_STATUS(ring_all_gather_from_in(s, rc->ranks, rc->k, rc->chunk0,
                                             rc->per, 0, &err), CCS_OK);
        CHECK_EQ_INT(s->nsteps, rc->k == 1 ? 1 : rc->k - 1);
        CHECK_STATUS(ccs_sched_validate(s, &err), CCS_OK);
        CHECK_MSG(symcheck_run(s, &sc, msg, sizeof(msg)) == 0, "case %zu: "
                  "%s", ci, msg);
        for (uint32_t j = 0; j < rc->k && sc.buf[CCS_BUF_OUT]; j++) {
            for (uint32_t i = 0; i < rc->k; i++) {
                for (uint32_t x = 0; x < rc->per; x++) {
                    uint32_t c = rc->chunk0 + i * rc->per + x;
                    symcheck_val_t v =
                        *symcheck_at(&sc, CCS_BUF_OUT, rc->ranks[j], c);
                    CHECK_MSG(v.origin == c &&
                                  v.ranks == 1ull << rc->ranks[i],
                              "case %zu: rank %u OUT %u = (%lld, %llx)", ci,
                              rc->ranks[j], c, (long long)v.origin,
                              (unsigned long long)v.ranks);
                }
            }
        }
        symcheck_free(&sc);
        ccs_sched_destroy(s);
    }
}

/* Whole collectives from the pieces pass the real verifier; phases are
 * stamped on the steps appended. */
TEST(collectives_from_pieces)
{
    static const uint32_t ns[] = { 2, 3, 5, 8 };

    for (size_t i = 0; i < sizeof(ns) / sizeof(ns[0]); i++) {
        uint32_t n = ns[i];
        uint32_t ranks[8], rev[8];
        ccs_sched_t *s = NULL;
        ccs_err_t err = { { 0 } };
        verify_report_t rep;

        for (uint32_t r = 0; r < n; r++) {
            ranks[r] = r;           /* blocked collectives: rank r, block r */
            rev[r] = n - 1 - r;     /* allreduce: any ring order works */
        }
        /* allreduce: RS in phase 0, AG in phase 1 */
        CHECK_STATUS(ccs_sched_create(CCS_COLL_ALLREDUCE, n, 2 * n, "test",
                                      &s, &err), CCS_OK);
        CHECK_STATUS(ring_reduce_scatter(s, rev, n, 0, 2, 0, &err), CCS_OK);
        CHECK_STATUS(ring_all_gather(s, rev, n, 0, 2, 1, &err), CCS_OK);
        CHECK_STATUS(ccs_sched_finalize(s, &err), CCS_OK);
        CHECK_EQ_INT(s->nsteps, 2 * (n - 1));
        CHECK_EQ_INT(s->nphases, 2);
        CHECK_EQ_INT(s->step_phase[0], 0);
        CHECK_EQ_INT(s->step_phase[s->nsteps - 1], 1);
        CHECK_MSG(verify_sched(s, &rep, &err) == CCS_OK, "allreduce n=%u: "
                  "%s", n, err.msg);
        ccs_sched_destroy(s);
        s = NULL;

        /* reducescatter with partials in SCRATCH */
        CHECK_STATUS(ccs_sched_create(CCS_COLL_REDUCESCATTER, n, n, "test",
                                      &s, &err), CCS_OK);
        CHECK_STATUS(ring_reduce_scatter_tmp(s, ranks, n, 0, 1,
                                             CCS_BUF_SCRATCH, 0, 0, &err),
                     CCS_OK);
        CHECK_MSG(verify_sched(s, &rep, &err) == CCS_OK, "reducescatter "
                  "n=%u: %s", n, err.msg);
        ccs_sched_destroy(s);
        s = NULL;

        /* allgather from IN */
        CHECK_STATUS(ccs_sched_create(CCS_COLL_ALLGATHER, n, 3 * n, "test",
                                      &s, &err), CCS_OK);
        CHECK_STATUS(ring_all_gather_from_in(s, ranks, n, 0, 3, 0, &err),
                     CCS_OK);
        CHECK_MSG(verify_sched(s, &rep, &err) == CCS_OK, "allgather n=%u: "
                  "%s", n, err.msg);
        if (n > 1)
            CHECK(rep.one_port);
        ccs_sched_destroy(s);
    }
}

/* Bad arguments are refused with a message, and append nothing. */
TEST(ring_rejects)
{
    static const struct {
        uint32_t k;
        uint32_t ranks[4];
        uint32_t chunk0, per;
        const char *msg;
    } cases[] = {
        { 3, { 0, 2, 0 }, 0, 1, "twice" },
        { 2, { 0, 9 }, 0, 1, "out of range" },
        { 3, { 0, 1, 2 }, 2, 2, "pass the end" },
        { 2, { 0, 1 }, 0, 0, "0 chunks" },
        { 0, { 0 }, 0, 1, "0 ranks" },
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        ccs_sched_t *s = NULL;
        ccs_err_t err = { { 0 } };

        CHECK_STATUS(ccs_sched_create(CCS_COLL_ALLREDUCE, 4, 6, "test", &s,
                                      &err), CCS_OK);
        if (s == NULL)
            continue;
        CHECK_STATUS(ring_reduce_scatter(s, cases[i].ranks, cases[i].k,
                                         cases[i].chunk0, cases[i].per, 0,
                                         &err), CCS_ERR_INVALID);
        CHECK_STR_CONTAINS(err.msg, cases[i].msg);
        CHECK_STATUS(ring_all_gather(s, cases[i].ranks, cases[i].k,
                                     cases[i].chunk0, cases[i].per, 0, &err),
                     CCS_ERR_INVALID);
        CHECK_STR_CONTAINS(err.msg, cases[i].msg);
        CHECK_EQ_INT(s->nsteps, 0);
        CHECK_EQ_INT(ccs_sched_total_ops(s), 0);
        ccs_sched_destroy(s);
    }
    /* Partial sums may not go to IN. */
    {
        ccs_sched_t *s = NULL;
        ccs_err_t err = { { 0 } };
        uint32_t r[2] = { 0, 1 };

        CHECK_STATUS(ccs_sched_create(CCS_COLL_ALLREDUCE, 2, 2, "test", &s,
                                      &err), CCS_OK);
        CHECK_STATUS(ring_reduce_scatter_tmp(s, r, 2, 0, 1, CCS_BUF_IN, 0, 0,
                                             &err), CCS_ERR_INVALID);
        CHECK_STR_CONTAINS(err.msg, "in");
        ccs_sched_destroy(s);
    }
}

int main(void)
{
    RUN(subset_rs_then_ag);
    RUN(subset_rs_scratch);
    RUN(subset_ag_from_in);
    RUN(collectives_from_pieces);
    RUN(ring_rejects);
    return TEST_SUMMARY();
}
