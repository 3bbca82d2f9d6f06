/*
 * algo_rhd.c - recursive halving / doubling allreduce (Rabenseifner's
 * algorithm as in MPICH, Thakur et al. 2005; the "RH/D" row of Table 1 in
 * the StragglAR paper).
 *
 * n = 2^m ranks: recursive halving reduce-scatter (m steps; in step s rank
 * r exchanges half of its current range with r ^ (2^m >> (s+1)), keeping
 * the lower half when that bit of r is clear), then recursive doubling
 * all-gather (m steps, partners r ^ 1, r ^ 2, ..., each sending the range
 * it holds).  2 log2(n) steps, one-port.
 * Cost on a uniform switch: 2 log2(n) a + 2(n-1)/n s b.
 *
 * Other n (the usual extension): with P = 2^floor(log2 n) and r = n - P,
 * in a first step each even rank 2i < 2r sends its whole input to rank
 * 2i+1, which reduces it; the odd ranks 2i+1 < 2r and the ranks >= 2r
 * (P in all, renumbered 0..P-1 in rank order) run the power-of-two
 * algorithm; a last step sends the result from 2i+1 back to 2i.
 * 2 log2(P) + 2 steps, one-port;
 * cost 2(log2(P) + 1) a + (2 + 2(P-1)/P) s b.
 * (a = alpha, b = beta, s = buffer bytes, n ranks.)
 *
 * Chunks: P blocks of `pipeline` chunks, or --chunks C for any C >= P
 * (ranges are then halved as evenly as chunks allow).  Topology-oblivious:
 * runs on any topology with n >= 2 GPUs.
 */
#include <stdlib.h>

#include "algo.h"

/* Largest power of two <= n (n >= 1). */
static uint32_t rhd_pow2_floor(uint32_t n)
{
    uint32_t p = 1;

    while (p <= n / 2)
        p *= 2;
    return p;
}

static ccs_status_t rhd_nchunks(uint32_t n, const algo_params_t *p,
                                uint32_t *nchunks, ccs_err_t *err)
{
    uint32_t pw = rhd_pow2_floor(n);
    uint64_t c = (uint64_t)pw * (p->pipeline < 1 ? 1 : p->pipeline);

    if (p->nchunks > 0) {
        if (p->nchunks < pw)
            return ccs_err_set(err, CCS_ERR_UNSUPPORTED,
                               "rhd: --chunks %u is fewer than the %u ranks "
                               "that halve the buffer", p->nchunks, pw);
        c = p->nchunks;
    }
    if (c > CCS_MAX_CHUNKS)
        return ccs_err_set(err, CCS_ERR_UNSUPPORTED,
                           "rhd: %llu chunks exceeds %u",
                           (unsigned long long)c, CCS_MAX_CHUNKS);
    *nchunks = (uint32_t)c;
    return CCS_OK;
}

static ccs_status_t check_rhd(const topo_t *t, const algo_params_t *p,
                              ccs_err_t *err)
{
    uint32_t c = 0;

    if (t->ngpus < 2)
        return ccs_err_set(err, CCS_ERR_UNSUPPORTED,
                           "rhd: topology '%s' has %d GPU(s), needs 2 or "
                           "more", t->name, t->ngpus);
    return rhd_nchunks((uint32_t)t->ngpus, p, &c, err);
}

static ccs_status_t build_rhd(const topo_t *t, const algo_params_t *p,
                              ccs_sched_t **out, algo_report_t *rep,
                              ccs_err_t *err)
{
    uint32_t n = (uint32_t)t->ngpus;
    uint32_t pw = rhd_pow2_floor(n);
    uint32_t extra = n - pw;       /* ranks folded into a partner */
    uint32_t *real = NULL;         /* [pw] new rank -> rank */
    uint32_t *lo = NULL, *hi = NULL; /* [pw] held range [lo, hi) */
    bool *has_out = NULL;          /* [n] input already reduced into OUT */
    ccs_sched_t *s = NULL;
    uint32_t nchunks = 0, step;
    ccs_status_t st;

    (void)rep;  /* nothing to report */

    st = rhd_nchunks(n, p, &nchunks, err);
    if (st != CCS_OK)
        return st;
    /* Owned here, freed at cleanup. */
    real = malloc((size_t)pw * sizeof(*real));
    lo = malloc((size_t)pw * sizeof(*lo));
    hi = malloc((size_t)pw * sizeof(*hi));
    has_out = calloc(n, sizeof(*has_out));
    if (real == NULL || lo == NULL || hi == NULL || has_out == NULL) {
        st = ccs_err_set(err, CCS_ERR_NOMEM, "rhd: out of memory");
        goto cleanup;
    }
    for (uint32_t nr = 0; nr < pw; nr++) {
        real[nr] = nr < extra ? 2 * nr + 1 : nr + extra;
        lo[nr] = 0;
        hi[nr] = nchunks;
    }
    /* Owned by the caller through *out on success. */
    st = ccs_sched_create(CCS_COLL_ALLREDUCE, n, nchunks, "rhd", &s, err);
    if (st != CCS_OK)
        goto cleanup;

    /* Fold: 2i -> 2i+1 for i < extra, whole buffer reduced into OUT. */
    if (extra > 0) {
        if ((st = ccs_sched_add_step(s, 0, &step, err)) != CCS_OK)
            goto cleanup;
        for (uint32_t i = 0; i < extra; i++) {
            st = ccs_sched_xfer_reduce_from(s, step, 2 * i, CCS_BUF_IN, 0,
                                            2 * i + 1, CCS_BUF_OUT, 0,
                                            CCS_BUF_IN, 0, nchunks, err);
            if (st != CCS_OK)
                goto cleanup;
            has_out[2 * i + 1] = true;
        }
    }

    /* Recursive halving: each pair splits its common range; the partner
     * whose bit is clear keeps the lower half. */
    for (uint32_t mask = pw / 2; mask >= 1; mask /= 2) {
        if ((st = ccs_sched_add_step(s, 0, &step, err)) != CCS_OK)
            goto cleanup;
        for (uint32_t nr = 0; nr < pw; nr++) {
            uint32_t peer = nr ^ mask;
            uint32_t mid = lo[nr] + (hi[nr] - lo[nr]) / 2;
            /* What nr sends is what the peer keeps. */
            uint32_t c0 = (nr & mask) ? lo[nr] : mid;
            uint32_t c1 = (nr & mask) ? mid : hi[nr];
            uint32_t src = real[nr], dst = real[peer];

            st = ccs_sched_xfer_reduce_from(
                s, step, src, has_out[src] ? CCS_BUF_OUT : CCS_BUF_IN, c0,
                dst, CCS_BUF_OUT, c0,
                has_out[dst] ? CCS_BUF_OUT : CCS_BUF_IN, c0, c1 - c0, err);
            if (st != CCS_OK)
                goto cleanup;
        }
        for (uint32_t nr = 0; nr < pw; nr++) {
            uint32_t mid = lo[nr] + (hi[nr] - lo[nr]) / 2;

            if (nr & mask)
                lo[nr] = mid;
            else
                hi[nr] = mid;
            has_out[real[nr]] = true;
        }
    }

    /* Recursive doubling: exchange the held ranges, which are siblings. */
    for (uint32_t mask = 1; mask < pw; mask *= 2) {
        if ((st = ccs_sched_add_step(s, 0, &step, err)) != CCS_OK)
            goto cleanup;
        for (uint32_t nr = 0; nr < pw; nr++) {
            st = ccs_sched_xfer(s, step, real[nr], CCS_BUF_OUT, lo[nr],
                                real[nr ^ mask], CCS_BUF_OUT, lo[nr],
                                hi[nr] - lo[nr], false, err);
            if (st != CCS_OK)
                goto cleanup;
        }
        for (uint32_t nr = 0; nr < pw; nr++) {
            uint32_t peer = nr ^ mask;

            if (nr < peer)
                hi[nr] = hi[peer];
            else
                lo[nr] = lo[peer];
        }
    }

    /* Unfold: 2i+1 returns the result to 2i. */
    if (extra > 0) {
        if ((st = ccs_sched_add_step(s, 0, &step, err)) != CCS_OK)
            goto cleanup;
        for (uint32_t i = 0; i < extra; i++) {
            st = ccs_sched_xfer(s, step, 2 * i + 1, CCS_BUF_OUT, 0, 2 * i,
                                CCS_BUF_OUT, 0, nchunks, false, err);
            if (st != CCS_OK)
                goto cleanup;
        }
    }
    *out = s;
    s = NULL;

cleanup:
    ccs_sched_destroy(s);
    free(real);
    free(lo);
    free(hi);
    free(has_out);
    return st;
}

const algo_desc_t algo_rhd = {
    .name = "rhd",
    .desc = "recursive halving/doubling allreduce, 2 log2(n) steps "
            "(+2 when n is not a power of 2)",
    .colls = ALGO_COLL_BIT(CCS_COLL_ALLREDUCE),
    .check = check_rhd,
    .build = build_rhd,
};
