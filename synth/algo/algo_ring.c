/*
 * algo_ring.c - the ring baseline (Patarasuk and Yuan; Baidu/NCCL ring, the
 * "Ring" row of Table 1 in the StragglAR paper, multitree.txt Fig. 1).
 *
 * allreduce      ring reduce-scatter then ring all-gather over ranks
 *                0..n-1 (synth/ring.c): 2(n-1) steps, n blocks.
 *                Cost on a uniform switch: 2(n-1) a + 2(n-1)/n s b.
 * reducescatter  the reduce-scatter half; partial sums travel in SCRATCH
 *                because a rank's OUT is valid only on its own block:
 *                (n-1) steps, (n-1) a + (n-1)/n s b.
 * allgather      the all-gather half, starting from IN: (n-1) steps,
 *                (n-1) a + (n-1)/n s b.
 * (a = alpha, b = beta, s = buffer bytes, n ranks.)
 *
 * One-port: each rank sends one and receives one transfer per step.
 * Topology-oblivious: runs on any topology with n >= 2 GPUs.
 *
 * Chunks: n blocks of `pipeline` chunks (every op covers a whole block), or
 * --chunks C when C is a multiple of n (C/n chunks per block).
 */
#include <stdlib.h>

#include "algo.h"
#include "ring.h"

#define RING_COLLS                                                         \
    (ALGO_COLL_BIT(CCS_COLL_ALLREDUCE) |                                   \
     ALGO_COLL_BIT(CCS_COLL_REDUCESCATTER) |                               \
     ALGO_COLL_BIT(CCS_COLL_ALLGATHER))

/* Chunks per rank block: --chunks C / n, else the pipeline factor. */
static ccs_status_t ring_per_block(uint32_t n, const algo_params_t *p,
                                   uint32_t *per, ccs_err_t *err)
{
    uint32_t k = p->pipeline < 1 ? 1 : p->pipeline;

    if (p->nchunks > 0) {
        if (p->nchunks % n != 0)
            return ccs_err_set(err, CCS_ERR_UNSUPPORTED,
                               "ring: --chunks %u is not a multiple of the "
                               "%u ranks", p->nchunks, n);
        k = p->nchunks / n;
    }
    if ((uint64_t)k * n > CCS_MAX_CHUNKS)
        return ccs_err_set(err, CCS_ERR_UNSUPPORTED,
                           "ring: %u ranks x %u chunks per block exceeds "
                           "%u chunks", n, k, CCS_MAX_CHUNKS);
    *per = k;
    return CCS_OK;
}

static ccs_status_t check_ring(const topo_t *t, const algo_params_t *p,
                               ccs_err_t *err)
{
    uint32_t per = 0;

    if (t->ngpus < 2)
        return ccs_err_set(err, CCS_ERR_UNSUPPORTED,
                           "ring: topology '%s' has %d GPU(s), needs 2 or "
                           "more", t->name, t->ngpus);
    return ring_per_block((uint32_t)t->ngpus, p, &per, err);
}

static ccs_status_t build_ring(const topo_t *t, const algo_params_t *p,
                               ccs_sched_t **out, algo_report_t *rep,
                               ccs_err_t *err)
{
    uint32_t n = (uint32_t)t->ngpus;
    uint32_t *ranks = NULL;
    ccs_sched_t *s = NULL;
    uint32_t per = 0;
    ccs_status_t st;

    (void)rep;  /* nothing to report */

    st = ring_per_block(n, p, &per, err);
    if (st != CCS_OK)
        return st;
    /* Owned here, freed at cleanup: ring order 0..n-1. */
    ranks = malloc((size_t)n * sizeof(*ranks));
    if (ranks == NULL)
        return ccs_err_set(err, CCS_ERR_NOMEM, "ring: out of memory");
    for (uint32_t i = 0; i < n; i++)
        ranks[i] = i;

    /* Owned by the caller through *out on success. */
    st = ccs_sched_create(p->coll, n, n * per, "ring", &s, err);
    if (st != CCS_OK)
        goto cleanup;
    switch (p->coll) {
    case CCS_COLL_ALLREDUCE:
        st = ring_reduce_scatter(s, ranks, n, 0, per, 0, err);
        if (st == CCS_OK)
            st = ring_all_gather(s, ranks, n, 0, per, 0, err);
        break;
    case CCS_COLL_REDUCESCATTER:
        st = ring_reduce_scatter_tmp(s, ranks, n, 0, per, CCS_BUF_SCRATCH,
                                     0, 0, err);
        break;
    case CCS_COLL_ALLGATHER:
        st = ring_all_gather_from_in(s, ranks, n, 0, per, 0, err);
        break;
    default:
        st = ccs_err_set(err, CCS_ERR_UNSUPPORTED,
                         "ring does not implement %s", ccs_coll_str(p->coll));
        break;
    }
    if (st != CCS_OK)
        goto cleanup;
    *out = s;
    s = NULL;

cleanup:
    ccs_sched_destroy(s);
    free(ranks);
    return st;
}

const algo_desc_t algo_ring = {
    .name = "ring",
    .desc = "ring reduce-scatter + all-gather, 2(n-1) steps, one-port",
    .colls = RING_COLLS,
    .check = check_ring,
    .build = build_ring,
};
