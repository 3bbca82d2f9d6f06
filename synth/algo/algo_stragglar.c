/*
 * algo_stragglar.c - StragglAR: straggler-aware allreduce (Devraj et al.,
 * "StragglAR", section 3 and Algorithm 1; Appendix D for the round count;
 * Appendix E for n that is not a power of 2).
 *
 * Phase 0: a ring reduce-scatter among the n-1 non-stragglers on n-1 chunk
 * blocks (it can run while the straggler is late): (n-2) alpha +
 * (n-2)/(n-1) s beta.  Afterwards non-straggler rank i holds chunk c_i
 * reduced over the non-stragglers (in OUT).
 * Phase 1: R rounds of disjoint pairs, each moving one block of s/(n-1)
 * bytes per direction: R alpha + R/(n-1) s beta, with R = n + log2 n - 2
 * for powers of 2 (Theorem 1); other n are planned by searched
 * slack-weighted matchings (at most LB + 1 for every n up to 256; see
 * docs/stragglar.md for the measured table).
 *
 * Canonical labels: the plan is built for straggler sigma = n-1 and
 * non-stragglers 0..n-2 (phase-0 ring order 0, 1, ..., n-2; chunk c_i on
 * rank i).  `--straggler R` is served by swapping ranks R and n-1 when the
 * ops are emitted; ccs_sched_relabel (runtime/sched.h) applies the same
 * rule to a finished schedule, as the runtime does to serve another
 * straggler.
 *
 * Buffers.  In round r the straggler exchange is: rank r sends OUT[c_r]
 * (its partial) and sigma sends IN[c_r] (its contribution).  sigma reduces
 * into OUT[c_r] = IN[c_r] (+) received.  Rank r cannot reduce into OUT[c_r]
 * in the same step it sends from it (the IR forbids reading and writing one
 * chunk in one step), so it reduces into SCRATCH[0] = OUT[c_r] (+) received,
 * sends c_r from SCRATCH[0] from then on, and copies it to OUT[c_r] in the
 * next step.  Every other transfer is a plain copy of a complete chunk into
 * the receiver's OUT.  With --pipeline K every chunk index below stands for
 * K consecutive chunks and every op moves K chunks.
 *
 * The planner lives beside this file: stragglar_hold.c (plan storage,
 * holdings, the checker), stragglar_pow2.c (Algorithm 1),
 * stragglar_search.c (matchings for other n) and stragglar_beam.c (the
 * beam for the hardest odd n).  Here: the entry point, relabeling and
 * the emitter.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "algo.h"
#include "ring.h"
#include "stragglar_int.h"
#include "stragglar_topo.h"

uint32_t stragglar_lower_bound(uint32_t n)
{
    return n + stragglar_ceil_log2(n) - 2;
}

ccs_status_t stragglar_plan(uint32_t n, stragglar_plan_t **out,
                            ccs_err_t *err)
{
    stragglar_plan_t *p = NULL;
    ccs_status_t st = CCS_OK;

    if (n < 2 || n > CCS_MAX_RANKS)
        return ccs_err_set(err, CCS_ERR_INVALID,
                           "stragglar: %u ranks out of range 2..%u", n,
                           CCS_MAX_RANKS);
    if (!stragglar_is_pow2(n) && n > PLAN_MAX_MATCHING_N)
        return ccs_err_set(err, CCS_ERR_UNSUPPORTED,
                           "stragglar: %u ranks: non-powers of 2 are "
                           "planned by matchings up to %u ranks", n,
                           PLAN_MAX_MATCHING_N);
    p = calloc(1, sizeof(*p)); /* owned here until handed out */
    if (p == NULL)
        return ccs_err_set(err, CCS_ERR_NOMEM, "stragglar: out of memory");
    p->n = n;
    st = stragglar_is_pow2(n) ? stragglar_plan_pow2(n, p, err)
                               : stragglar_plan_search(n, p, err);
    if (st == CCS_OK)
        st = stragglar_plan_check(p, err);
    if (st != CCS_OK)
        goto cleanup;
    *out = p;
    p = NULL;
cleanup:
    stragglar_plan_destroy(p);
    return st;
}

/* ---- Emitting the schedule ---- */

typedef struct emit {
    ccs_sched_t *s;
    uint32_t n, m, per, sigma_out; /* sigma_out: the written straggler */
} emit_t;

/* Canonical rank -> written rank: swap n-1 and the requested straggler. */
static uint32_t emap(const emit_t *e, uint32_t g)
{
    if (g == e->n - 1)
        return e->sigma_out;
    if (g == e->sigma_out)
        return e->n - 1;
    return g;
}

static ccs_status_t emit_round(const emit_t *e, const stragglar_plan_t *pl,
                               uint32_t r, uint32_t step, ccs_err_t *err)
{
    uint32_t n = e->n, m = e->m, sigma = n - 1, per = e->per;
    const int32_t *peer = &pl->peer[(size_t)r * n];
    const int32_t *snd = &pl->send[(size_t)r * n];
    ccs_status_t st = CCS_OK;

    /* Rank r-1 finished its exchange last round: publish it in OUT. */
    if (n > 2 && r >= 1 && r - 1 < m) {
        st = ccs_sched_local(e->s, step, emap(e, r - 1), CCS_BUF_OUT,
                             (r - 1) * per, CCS_BUF_SCRATCH, 0, per, false,
                             err);
        if (st != CCS_OK)
            return st;
    }
    for (uint32_t g = 0; g < n && st == CCS_OK; g++) {
        int32_t q = peer[g], c = snd[g];
        uint32_t cc;
        ccs_buf_t sbuf;
        uint32_t schunk;

        if (q < 0 || c < 0)
            continue;
        cc = (uint32_t)c * per;
        if (r < m && (g == sigma || (uint32_t)q == sigma)) {
            /* Straggler exchange on chunk r. */
            if (n == 2)
                st = ccs_sched_xfer_reduce_from(e->s, step, emap(e, g),
                                                CCS_BUF_IN, cc,
                                                emap(e, (uint32_t)q),
                                                CCS_BUF_OUT, cc, CCS_BUF_IN,
                                                cc, per, err);
            else if (g == sigma)
                st = ccs_sched_xfer_reduce_from(e->s, step, emap(e, g),
                                                CCS_BUF_IN, cc,
                                                emap(e, (uint32_t)q),
                                                CCS_BUF_SCRATCH, 0,
                                                CCS_BUF_OUT, cc, per, err);
            else
                st = ccs_sched_xfer_reduce_from(e->s, step, emap(e, g),
                                                CCS_BUF_OUT, cc,
                                                emap(e, (uint32_t)q),
                                                CCS_BUF_OUT, cc, CCS_BUF_IN,
                                                cc, per, err);
            continue;
        }
        /* A complete chunk; a rank's own chunk is sent from SCRATCH. */
        sbuf = CCS_BUF_OUT;
        schunk = cc;
        if (g == (uint32_t)c && g != sigma && n > 2) {
            sbuf = CCS_BUF_SCRATCH;
            schunk = 0;
        }
        st = ccs_sched_xfer(e->s, step, emap(e, g), sbuf, schunk,
                            emap(e, (uint32_t)q), CCS_BUF_OUT, cc, per, false,
                            err);
    }
    return st;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static ccs_status_t check_stragglar(const topo_t *t, const algo_params_t *p,
                                    ccs_err_t *err)
{
    uint32_t n = (uint32_t)t->ngpus;

    if (p->stragglar.phase0 != NULL && strcmp(p->stragglar.phase0, "ring") != 0)
        return ccs_err_set(err, CCS_ERR_UNSUPPORTED,
                           "stragglar: phase-0 algorithm '%s' not supported "
                           "(only 'ring')", p->stragglar.phase0);
    /* The topology-aware builder plans no rounds and sizes its chunks. */
    if (stragglar_topo_applies(t, p->straggler))
        return p->nchunks == 0 ? CCS_OK
               : ccs_err_set(err, CCS_ERR_UNSUPPORTED,
                             "stragglar: on %s the topology-aware builder "
                             "sizes its own chunks (--pipeline, --size); "
                             "--chunks does not apply", t->name);
    if (!stragglar_is_pow2(n) && n > PLAN_MAX_MATCHING_N)
        return ccs_err_set(err, CCS_ERR_UNSUPPORTED,
                           "stragglar: %u ranks: non-powers of 2 are "
                           "planned by matchings up to %u ranks", n,
                           PLAN_MAX_MATCHING_N);
    if (p->nchunks > 0 && p->nchunks != (n - 1) * p->pipeline)
        return ccs_err_set(err, CCS_ERR_UNSUPPORTED,
                           "stragglar: uses n-1 = %u chunks times "
                           "--pipeline; --chunks %u does not fit", n - 1,
                           p->nchunks);
    return CCS_OK;
}

static ccs_status_t build_stragglar(const topo_t *t, const algo_params_t *p,
                                    ccs_sched_t **out, algo_report_t *rep,
                                    ccs_err_t *err)
{
    uint32_t n = (uint32_t)t->ngpus, m = n - 1;
    uint32_t per = p->pipeline ? p->pipeline : 1, phase0 = 0;
    stragglar_plan_t *pl = NULL;
    uint32_t *ranks = NULL;
    ccs_sched_t *s = NULL;
    emit_t e;
    double t0 = now_ms(), t1;
    ccs_status_t st;

    st = check_stragglar(t, p, err);
    if (st != CCS_OK)
        return st;
    /* Beyond one switch the cost after arrival is set by the servers' NICs,
     * not by rounds: the topology-aware builder serves those. */
    if (stragglar_topo_applies(t, p->straggler))
        return stragglar_topo_build(t, p, out, rep, err);
    st = stragglar_plan(n, &pl, err);
    if (st != CCS_OK)
        goto cleanup;
    t1 = now_ms();
    st = ccs_sched_create(CCS_COLL_ALLREDUCE, n, m * per, "stragglar", &s,
                          err);
    if (st != CCS_OK)
        goto cleanup;
    e.s = s;
    e.n = n;
    e.m = m;
    e.per = per;
    e.sigma_out = p->straggler >= 0 ? (uint32_t)p->straggler : n - 1;
    s->straggler = (int32_t)e.sigma_out;

    if (m >= 2) {
        ranks = malloc(m * sizeof(*ranks)); /* owned here */
        if (ranks == NULL) {
            st = ccs_err_set(err, CCS_ERR_NOMEM, "stragglar: out of memory");
            goto cleanup;
        }
        for (uint32_t i = 0; i < m; i++)
            ranks[i] = emap(&e, i);
        phase0 = s->nsteps;
        st = ring_reduce_scatter(s, ranks, m, 0, per, 0, err);
        if (st != CCS_OK)
            goto cleanup;
        phase0 = s->nsteps - phase0;
    }
    for (uint32_t r = 0; r < pl->nrounds; r++) {
        uint32_t step;
        st = ccs_sched_add_step(s, 1, &step, err);
        if (st == CCS_OK)
            st = emit_round(&e, pl, r, step, err);
        if (st != CCS_OK)
            goto cleanup;
    }
    algo_report_addf(rep, "stragglar: n=%u, phase 0: %u steps, phase 1: %u "
                     "rounds (LB %u)", n, phase0, pl->nrounds,
                     stragglar_lower_bound(n));
    algo_report_addf(rep, "stragglar: planned in %.3f ms", t1 - t0);
    *out = s;
    s = NULL;
cleanup:
    free(ranks);
    stragglar_plan_destroy(pl);
    ccs_sched_destroy(s);
    return st;
}

const algo_desc_t algo_stragglar = {
    .name = "stragglar",
    .desc = "straggler-aware allreduce: reduce-scatter, then matching rounds",
    .colls = ALGO_COLL_BIT(CCS_COLL_ALLREDUCE),
    .check = check_stragglar,
    .build = build_stragglar,
};
