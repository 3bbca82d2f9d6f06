/*
 * algo_allpairs.c - direct ("all-pairs") collectives, MSCCL's allpairs
 * allreduce (Cowan et al. 2023; the MSCCL baseline of the StragglAR paper,
 * Sec. 5 and App. F): a one-round reduce-scatter in which every rank sends
 * block j straight to rank j, then a one-round mirror all-gather.
 *
 * The buffer is n blocks; block j belongs to rank j.
 * allreduce      comm step 0: rank j receives block j from all n-1 peers.
 *                A rank may not reduce two receives into one chunk in one
 *                step (runtime/sched.h), so the peer at distance 1 (rank
 *                j-1) is reduced on arrival, OUT_j = IN_j (+) recv, and the
 *                n-2 others land in SCRATCH slots.  Then ceil(log2(n-1))
 *                local-only steps fold the n-1 partials pairwise
 *                (REDUCE_LOCAL tree, the result ends in OUT).  Last comm
 *                step: rank j sends its final block j to every peer.
 *                2 communication steps, 2 + ceil(log2(n-1)) steps in all.
 *                Cost on a uniform switch: 2 a + 2(n-1)/n s b (local
 *                reductions not counted).
 * reducescatter  the first half: 1 comm step + ceil(log2(n-1)) local steps;
 *                a + (n-1)/n s b.
 * allgather      1 step: rank i sends its IN block i to all peers (and
 *                copies it into its own OUT); a + (n-1)/n s b.
 * alltoall       1 step: rank i sends IN block j to rank j, into OUT block
 *                i (and copies its own block); a + (n-1)/n s b.
 * (a = alpha, b = beta, s = buffer bytes, n ranks.)
 *
 * Not one-port: each rank sends and receives n-1 transfers per comm step,
 * splitting its bandwidth over all peers, which a non-blocking switch
 * allows.  Topology-oblivious: runs on any topology with n >= 2 GPUs.
 * Chunks: n blocks of `pipeline` chunks (each op covers a whole block), or
 * --chunks C when C is a multiple of n.
 */
#include "algo.h"

#define ALLPAIRS_COLLS                                                     \
    (ALGO_COLL_BIT(CCS_COLL_ALLREDUCE) |                                   \
     ALGO_COLL_BIT(CCS_COLL_REDUCESCATTER) |                               \
     ALGO_COLL_BIT(CCS_COLL_ALLGATHER) |                                   \
     ALGO_COLL_BIT(CCS_COLL_ALLTOALL))

static ccs_status_t ap_per_block(uint32_t n, const algo_params_t *p,
                                 uint32_t *per, ccs_err_t *err)
{
    uint32_t k = p->pipeline < 1 ? 1 : p->pipeline;

    if (p->nchunks > 0) {
        if (p->nchunks % n != 0)
            return ccs_err_set(err, CCS_ERR_UNSUPPORTED,
                               "allpairs: --chunks %u is not a multiple of "
                               "the %u ranks", p->nchunks, n);
        k = p->nchunks / n;
    }
    if ((uint64_t)k * n > CCS_MAX_CHUNKS)
        return ccs_err_set(err, CCS_ERR_UNSUPPORTED,
                           "allpairs: %u ranks x %u chunks per block "
                           "exceeds %u chunks", n, k, CCS_MAX_CHUNKS);
    *per = k;
    return CCS_OK;
}

static ccs_status_t check_allpairs(const topo_t *t, const algo_params_t *p,
                                   ccs_err_t *err)
{
    uint32_t per = 0;

    if (t->ngpus < 2)
        return ccs_err_set(err, CCS_ERR_UNSUPPORTED,
                           "allpairs: topology '%s' has %d GPU(s), needs 2 "
                           "or more", t->name, t->ngpus);
    return ap_per_block((uint32_t)t->ngpus, p, &per, err);
}

/* Reduce-scatter: one comm step, then the local folding steps. */
static ccs_status_t ap_reduce_scatter(ccs_sched_t *s, uint32_t n,
                                      uint32_t per, ccs_err_t *err)
{
    uint32_t step;
    ccs_status_t st;

    if ((st = ccs_sched_add_step(s, 0, &step, err)) != CCS_OK)
        return st;
    for (uint32_t j = 0; j < n; j++) {
        for (uint32_t d = 1; d < n; d++) {
            uint32_t i = (j + n - d) % n;

            if (d == 1)
                st = ccs_sched_xfer_reduce_from(s, step, i, CCS_BUF_IN,
                                                j * per, j, CCS_BUF_OUT,
                                                j * per, CCS_BUF_IN, j * per,
                                                per, err);
            else
                st = ccs_sched_xfer(s, step, i, CCS_BUF_IN, j * per, j,
                                    CCS_BUF_SCRATCH, (d - 2) * per, per,
                                    false, err);
            if (st != CCS_OK)
                return st;
        }
    }
    /* Fold the n-1 partials V_0 = OUT block j, V_k = SCRATCH slot k-1:
     * V_k (+)= V_(k+stride) for k a multiple of 2*stride.  Pairs are
     * disjoint, so no chunk is written twice or read while written. */
    for (uint32_t stride = 1; stride < n - 1; stride *= 2) {
        if ((st = ccs_sched_add_step(s, 0, &step, err)) != CCS_OK)
            return st;
        for (uint32_t j = 0; j < n; j++) {
            for (uint32_t k = 0; k + stride < n - 1; k += 2 * stride) {
                ccs_buf_t dbuf = k == 0 ? CCS_BUF_OUT : CCS_BUF_SCRATCH;
                uint32_t dchunk = k == 0 ? j * per : (k - 1) * per;

                st = ccs_sched_local(s, step, j, dbuf, dchunk,
                                     CCS_BUF_SCRATCH,
                                     (k + stride - 1) * per, per, true, err);
                if (st != CCS_OK)
                    return st;
            }
        }
    }
    return CCS_OK;
}

/* One step: rank i sends (sbuf, block sblock(i, dst)) to every dst into
 * OUT block dblock(i, dst); own block copied locally when `copy`. */
static ccs_status_t ap_exchange(ccs_sched_t *s, uint32_t n, uint32_t per,
                                ccs_buf_t sbuf, bool alltoall, bool copy,
                                ccs_err_t *err)
{
    uint32_t step;
    ccs_status_t st;

    if ((st = ccs_sched_add_step(s, 0, &step, err)) != CCS_OK)
        return st;
    for (uint32_t i = 0; i < n; i++) {
        if (copy) {
            st = ccs_sched_local(s, step, i, CCS_BUF_OUT, i * per,
                                 CCS_BUF_IN, i * per, per, false, err);
            if (st != CCS_OK)
                return st;
        }
        for (uint32_t d = 1; d < n; d++) {
            uint32_t j = (i + d) % n;
            uint32_t sblock = alltoall ? j : i;

            st = ccs_sched_xfer(s, step, i, sbuf, sblock * per, j,
                                CCS_BUF_OUT, i * per, per, false, err);
            if (st != CCS_OK)
                return st;
        }
    }
    return CCS_OK;
}

static ccs_status_t build_allpairs(const topo_t *t, const algo_params_t *p,
                                   ccs_sched_t **out, algo_report_t *rep,
                                   ccs_err_t *err)
{
    uint32_t n = (uint32_t)t->ngpus;
    ccs_sched_t *s = NULL;
    uint32_t per = 0;
    ccs_status_t st;

    (void)rep;  /* nothing to report */

    st = ap_per_block(n, p, &per, err);
    if (st != CCS_OK)
        return st;
    /* Owned by the caller through *out on success. */
    st = ccs_sched_create(p->coll, n, n * per, "allpairs", &s, err);
    if (st != CCS_OK)
        return st;
    switch (p->coll) {
    case CCS_COLL_ALLREDUCE:
        st = ap_reduce_scatter(s, n, per, err);
        if (st == CCS_OK)
            st = ap_exchange(s, n, per, CCS_BUF_OUT, false, false, err);
        break;
    case CCS_COLL_REDUCESCATTER:
        st = ap_reduce_scatter(s, n, per, err);
        break;
    case CCS_COLL_ALLGATHER:
        st = ap_exchange(s, n, per, CCS_BUF_IN, false, true, err);
        break;
    case CCS_COLL_ALLTOALL:
        st = ap_exchange(s, n, per, CCS_BUF_IN, true, true, err);
        break;
    default:
        st = ccs_err_set(err, CCS_ERR_UNSUPPORTED,
                         "allpairs does not implement %s",
                         ccs_coll_str(p->coll));
        break;
    }
    if (st != CCS_OK) {
        ccs_sched_destroy(s);
        return st;
    }
    *out = s;
    return CCS_OK;
}

const algo_desc_t algo_allpairs = {
    .name = "allpairs",
    .desc = "direct all-pairs (MSCCL): 1-step reduce-scatter + 1-step "
            "all-gather; also alltoall",
    .colls = ALLPAIRS_COLLS,
    .check = check_allpairs,
    .build = build_allpairs,
};
