/*
 * nccl.h - what NCCL's topology search decides, shared by the NCCL
 * baselines (algo_nccl_ring.c, algo_nccl_tree.c, algo_nvls.c): how ranks
 * group into servers, how many NICs a server has, the ring order of each
 * channel, and the multi-channel ring emission they use.
 *
 * These are models of NCCL's choices written from its documentation and
 * source (src/graph/search.cc, connect.cc, tuning.cc), not its code.
 */
#ifndef CCS_NCCL_H
#define CCS_NCCL_H

#include <stdint.h>

#include "algo.h"

typedef struct nccl_layout {
    uint32_t n;            /* ranks */
    uint32_t nservers;     /* servers (>= 1) */
    uint32_t per;          /* GPUs per server when every server has the
                              same count and ranks are server-contiguous;
                              0 otherwise (one flat ring order then) */
    uint32_t nics;         /* NICs of server 0 (0: none) */
    int direct;            /* GPUs forward (ring, torus, mesh, dgx1) */
    int nvls;              /* every server's switch reduces (NVLS) */
    double gpu_bw;         /* rank 0's links to switches and GPUs, bytes/s
                              per direction (NCCL's intra-node bandwidth) */
} nccl_layout_t;

ccs_status_t nccl_layout(const topo_t *t, nccl_layout_t *l, ccs_err_t *err);

/* The channel count NCCL's ring search ends with (src/graph/search.cc),
 * when the caller gives none:
 * - servers with several NICs: one ring per NIC (each leaves through its
 *   own NIC; at 48 GB/s per channel NCCL does not duplicate them on
 *   Hopper, ncclTopoDupChannels);
 * - one NIC per server: 2 (one 48 GB/s ring fits the NIC, duplicated);
 * - direct networks (GPUs forward): 2, a Hamiltonian ring and its reverse;
 * - otherwise (one NVSwitch server, or one NIC per server): as many
 *   channels of the fastest per-channel speed that fits the GPU's NVLink
 *   bandwidth (60 GB/s on Hopper-class GPUs, 40 before: the first entry
 *   of the search's speed arrays) as fit, doubled by
 *   ncclTopoDupChannels (speed >= 25 GB/s), at most 32: 14 on dgx-h100
 *   (450 GB/s) and on dgx-a100 (300 GB/s). */
uint32_t nccl_default_channels(const nccl_layout_t *l);

/* Ring order of channel c: order[i] is the rank at ring position i.
 * Servers in index order; inside a server the GPUs from local index c
 * onwards, so channel c leaves server s from local GPU c-1 (its NIC) and
 * enters server s+1 at local GPU c: with one NIC per GPU every channel
 * crosses through its own pair of NICs (rail by rail).  On direct
 * networks a Hamiltonian cycle over GPU-GPU links, reversed on odd
 * channels (NCCL's rings over NVLink follow the wires); identity when no
 * cycle is found quickly. */
ccs_status_t nccl_ring_order(const topo_t *t, const nccl_layout_t *l,
                             uint32_t c, uint32_t *order, ccs_err_t *err);

/* Multi-channel ring for allreduce, reducescatter or allgather: channel c
 * runs over order[c * n .. c * n + n), all channels in the same steps.
 * Rank b's block (nchan * per chunks from chunk b * nchan * per, the
 * collective's own block layout) is split over the channels: channel c
 * carries its chunks from (b * nchan + c) * per, wherever rank b sits in
 * that channel's ring, so reducescatter and allgather land each rank's
 * block on that rank.  Steps are created
 * here from phase `phase`.  Cost on a uniform switch, s bytes: as one
 * ring, 2(n-1) a + 2(n-1)/n s b for allreduce. */
ccs_status_t nccl_ring_emit(ccs_sched_t *s, ccs_coll_t coll,
                            const uint32_t *order, uint32_t n,
                            uint32_t nchan, uint32_t per, uint32_t phase,
                            ccs_err_t *err);

/* Append "key=value\n" to the schedule's params (algorithms mark what the
 * simulator must know: channels, nvls). */
ccs_status_t nccl_params_add(ccs_sched_t *s, const char *key, uint32_t v,
                             ccs_err_t *err);

/* The same with a text value ("caps=tree"). */
ccs_status_t nccl_params_add_str(ccs_sched_t *s, const char *key,
                                 const char *v, ccs_err_t *err);

#endif /* CCS_NCCL_H */
