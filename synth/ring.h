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

#include <stdint.h>

#include "../runtime/sched.h"

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

#endif /* CCS_RING_H */
