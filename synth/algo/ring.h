/*
 * ring.h - ring building blocks shared by algorithms (ring allreduce,
 * StragglAR's phase 0, hierarchical schemes).  They append steps to a
 * schedule under construction; they never create one.
 *
 * Both operate on an ordered subset of ranks, ranks[0..k), and on k blocks
 * of `per` consecutive chunks starting at `chunk0` (block i is chunks
 * [chunk0 + i*per, chunk0 + (i+1)*per)).  Each appends exactly k-1 steps in
 * `phase` (none when k == 1: then reduce-scatter copies IN to OUT locally in
 * one step).
 */
#ifndef CCS_RING_H
#define CCS_RING_H

#include <stdbool.h>
#include <stdint.h>

#include "sched.h"

/* Where a ring's blocks and steps lie, for the _shaped variants.  Block b
 * is chunks [chunk0 + b*stride, + per); position i owns block i, or block
 * ranks[i] with by_rank (blocks indexed by rank id, as a collective's
 * layout is).  step0: the ring uses the caller's steps step0 .. step0 +
 * k-2 (several rings on shared steps), or appends k-1 new ones with
 * RING_APPEND.  ring_shape_init: stride per, by position, appending. */
#define RING_APPEND UINT32_MAX
typedef struct ring_shape {
    uint32_t chunk0;
    uint32_t per;
    uint32_t stride;       /* >= per */
    bool by_rank;
    uint32_t step0;
} ring_shape_t;

void ring_shape_init(ring_shape_t *sh, uint32_t chunk0, uint32_t per);

/* Reduce-scatter (ring_reduce_scatter_tmp's contract) laid out by sh:
 * partial sums of block b travel in tmp_buf at tmp_chunk0 + b*stride. */
ccs_status_t ring_reduce_scatter_shaped(ccs_sched_t *s,
                                        const uint32_t *ranks, uint32_t k,
                                        const ring_shape_t *sh,
                                        ccs_buf_t tmp_buf,
                                        uint32_t tmp_chunk0, uint32_t phase,
                                        ccs_err_t *err);

/* All-gather laid out by sh; from_in: the own block starts in IN (as
 * ring_all_gather_from_in) rather than OUT. */
ccs_status_t ring_all_gather_shaped(ccs_sched_t *s, const uint32_t *ranks,
                                    uint32_t k, const ring_shape_t *sh,
                                    bool from_in, uint32_t phase,
                                    ccs_err_t *err);

/* Reduce-scatter: afterwards OUT of ranks[i], block i, holds the reduction
 * over ranks[0..k) of their IN block i.  Partial sums travel in OUT (only
 * blocks the ring passes through are written). */
ccs_status_t ring_reduce_scatter(ccs_sched_t *s, const uint32_t *ranks,
                                 uint32_t k, uint32_t chunk0, uint32_t per,
                                 uint32_t phase, ccs_err_t *err);

/* All-gather: requires OUT of ranks[i], block i, to be final; afterwards
 * every ranks[j] holds every block in OUT. */
ccs_status_t ring_all_gather(ccs_sched_t *s, const uint32_t *ranks,
                             uint32_t k, uint32_t chunk0, uint32_t per,
                             uint32_t phase, ccs_err_t *err);

/* Additions (baselines): variants for collectives whose OUT is valid only
 * on part of the buffer, or whose input sits in IN. */

/* Like ring_reduce_scatter, but a partial sum of block i held by a rank
 * other than ranks[i] travels in tmp_buf at chunks [tmp_chunk0 + i*per,
 * tmp_chunk0 + (i+1)*per) (tmp_buf is OUT or SCRATCH); only the final
 * block of each rank is written to OUT.  With tmp_buf == CCS_BUF_OUT and
 * tmp_chunk0 == chunk0 it is ring_reduce_scatter.  Same step count. */
ccs_status_t ring_reduce_scatter_tmp(ccs_sched_t *s, const uint32_t *ranks,
                                     uint32_t k, uint32_t chunk0,
                                     uint32_t per, ccs_buf_t tmp_buf,
                                     uint32_t tmp_chunk0, uint32_t phase,
                                     ccs_err_t *err);

/* Like ring_all_gather, but block i starts in IN of ranks[i] (allgather's
 * input) rather than in OUT: the first step sends it from IN and copies it
 * to OUT locally.  Appends k-1 steps (one copy step when k == 1). */
ccs_status_t ring_all_gather_from_in(ccs_sched_t *s, const uint32_t *ranks,
                                     uint32_t k, uint32_t chunk0,
                                     uint32_t per, uint32_t phase,
                                     ccs_err_t *err);

#endif /* CCS_RING_H */
