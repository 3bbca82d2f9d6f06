/*
 * algo_nccl_ring.c - NCCL's ring algorithm with C channels, the ring half
 * of the `nccl` baseline.
 *
 * What NCCL does (src/graph/search.cc, connect.cc; docs "Environment
 * Variables" NCCL_MIN_NCHANNELS): it splits every collective over C
 * channels, each a ring over all ranks carrying 1/C of the data and driven
 * by its own thread block.  Its topology search orders each ring inside a
 * server along NVLink/NVSwitch and, between servers, gives each channel a
 * different NIC where servers have several (rail-aligned), so C rings use
 * C NICs at once.  A ring runs one direction; NCCL duplicates rings to
 * fill channels, it does not reverse them on NVSwitch systems.
 *
 * Here: channel c's ring is nccl_ring_order(c) (nccl.c): servers in
 * order, inside each the GPUs from local index c, so with one NIC per GPU
 * channel c leaves a server through NIC c-1 and enters the next through
 * NIC c.  Default C: one channel per NIC of a server when servers have
 * several, else 2 (--channels overrides).  All channels share steps.
 *
 * Cost (a = alpha, b = beta, s bytes, n ranks, C channels): on one switch
 * every channel is the same cyclic ring, so the time equals one ring's,
 * 2(n-1) a + 2(n-1)/n s b.  On S servers with C NICs of bandwidth B each
 * the inter-server part carries 2(n-1)/n s over C NICs per server:
 * T ~ 2(n-1) a + 2(n-1)/n s / (C B) when the NICs are the bottleneck.
 */
#include <stdlib.h>

#include "algo.h"
#include "nccl.h"

#define NRING_COLLS                                                        \
    (ALGO_COLL_BIT(CCS_COLL_ALLREDUCE) |                                   \
     ALGO_COLL_BIT(CCS_COLL_REDUCESCATTER) |                               \
     ALGO_COLL_BIT(CCS_COLL_ALLGATHER))

/* Channels and chunks per block, checked against the format's limits. */
static ccs_status_t nring_shape(const topo_t *t, const algo_params_t *p,
                                nccl_layout_t *l, uint32_t *nchan,
                                uint32_t *per, ccs_err_t *err)
{
    uint64_t total;
    ccs_status_t st = nccl_layout(t, l, err);

    if (st != CCS_OK)
        return st;
    *nchan = p->channels > 0 ? p->channels : nccl_default_channels(l);
    if (*nchan > 64)
        return ccs_err_set(err, CCS_ERR_UNSUPPORTED, "nccl-ring: %u "
                           "channels; NCCL runs at most 64", *nchan);
    *per = p->pipeline < 1 ? 1 : p->pipeline;
    if (p->nchunks > 0) {
        if (p->nchunks % (*nchan * l->n) != 0)
            return ccs_err_set(err, CCS_ERR_UNSUPPORTED,
                               "nccl-ring: --chunks %u is not a multiple of "
                               "%u channels x %u ranks", p->nchunks, *nchan,
                               l->n);
        *per = p->nchunks / (*nchan * l->n);
    }
    total = (uint64_t)*nchan * l->n * *per;
    if (total > CCS_MAX_CHUNKS)
        return ccs_err_set(err, CCS_ERR_UNSUPPORTED,
                           "nccl-ring: %u channels x %u ranks x %u chunks "
                           "exceeds %u chunks", *nchan, l->n, *per,
                           CCS_MAX_CHUNKS);
    if ((uint64_t)*nchan * l->n * 2 * l->n > 400000000ull)
        return ccs_err_set(err, CCS_ERR_UNSUPPORTED,
                           "nccl-ring: %u channels over %u ranks is too "
                           "large a schedule to build", *nchan, l->n);
    return CCS_OK;
}

static ccs_status_t check_nring(const topo_t *t, const algo_params_t *p,
                                ccs_err_t *err)
{
    nccl_layout_t l;
    uint32_t c, per;

    return nring_shape(t, p, &l, &c, &per, err);
}

static ccs_status_t build_nring(const topo_t *t, const algo_params_t *p,
                                ccs_sched_t **out, algo_report_t *rep,
                                ccs_err_t *err)
{
    nccl_layout_t l;
    uint32_t nchan = 0, per = 0;
    uint32_t *order = NULL;   /* owned here: [nchan * n] */
    ccs_sched_t *s = NULL;    /* owned until handed to *out */
    ccs_status_t st;

    st = nring_shape(t, p, &l, &nchan, &per, err);
    if (st != CCS_OK)
        return st;
    order = malloc(sizeof(*order) * (size_t)nchan * l.n);
    if (order == NULL)
        return ccs_err_set(err, CCS_ERR_NOMEM, "nccl-ring: out of memory");
    for (uint32_t c = 0; c < nchan; c++) {
        st = nccl_ring_order(t, &l, c, &order[(size_t)c * l.n], err);
        if (st != CCS_OK)
            goto cleanup;
    }
    st = ccs_sched_create(p->coll, l.n, nchan * l.n * per, "nccl-ring", &s,
                          err);
    if (st == CCS_OK)
        st = nccl_ring_emit(s, p->coll, order, l.n, nchan, per, 0, err);
    if (st == CCS_OK)
        st = nccl_params_add(s, "channels", nchan, err);
    /* each transfer is one channel's: capped at one channel's rate */
    if (st == CCS_OK)
        st = nccl_params_add(s, "lanes", 1, err);
    if (st != CCS_OK)
        goto cleanup;
    algo_report_addf(rep, "nccl-ring: %u channel(s), %u server(s), %u "
                     "NIC(s) per server", nchan, l.nservers, l.nics);
    *out = s;
    s = NULL;

cleanup:
    ccs_sched_destroy(s);
    free(order);
    return st;
}

const algo_desc_t algo_nccl_ring = {
    .name = "nccl-ring",
    .desc = "NCCL's ring: C channels, rail-aligned across servers "
            "(baseline)",
    .colls = NRING_COLLS,
    .check = check_nring,
    .build = build_nring,
};
