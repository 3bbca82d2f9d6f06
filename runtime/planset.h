/*
 * planset.h - the size lookup of plan sets, shared with the tuner.
 *
 * Internal to ccsynth (runtime and synthesizer; not installed).  A tuned
 * plan set is a list of size ranges, each served by one plan: range k
 * covers the byte counts from its start up to the next range's start.
 * The rule lives here once so that `ccsynth tune` (which decides the
 * ranges) and libccs (which picks a plan per call) cannot disagree.
 */
#ifndef CCS_PLANSET_H
#define CCS_PLANSET_H

#include <stdint.h>

/* Start (smallest byte count) of range k of the caller's table. */
typedef double (*ccs_range_start_fn)(const void *ctx, uint32_t k);

/* The range for a buffer of `bytes`: the last k whose start is <= bytes
 * (a size between two tuned sizes takes the smaller one's plan; beyond the
 * last start, the last range), and 0 when bytes is below every start.
 * Starts must be strictly increasing (the loader checks; the tuner builds
 * them so).  nranges 0 gives 0.  O(log nranges). */
uint32_t ccs_planset_pick_range(uint32_t nranges, double bytes,
                                ccs_range_start_fn start, const void *ctx);

#endif /* CCS_PLANSET_H */
