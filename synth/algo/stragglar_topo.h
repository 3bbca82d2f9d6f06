/*
 * stragglar_topo.h - the topology-aware StragglAR builder for clusters of
 * servers (stragglar_topo.c), called by algo_stragglar.c's build where
 * StragglAR's one-switch rounds do not fit the topology.
 */
#ifndef CCS_STRAGGLAR_TOPO_H
#define CCS_STRAGGLAR_TOPO_H

#include <stdbool.h>

#include "algo.h"

/* True when the topology-aware builder serves (t, straggler): at least two
 * servers, not one uniform switch, and the straggler's server holds at
 * least one other GPU.  Elsewhere StragglAR's rounds are used unchanged.
 * straggler -1 means rank n-1, as in algo_stragglar.c. */
bool stragglar_topo_applies(const topo_t *t, int32_t straggler);

/* Blocks per lane the builder uses for (t, p): p->pipeline when above 1,
 * else chosen from p->size_bytes (a default when 0). */
uint32_t stragglar_topo_blocks(const topo_t *t, const algo_params_t *p);

/* Build the schedule (phase 0: hierarchical reduce to the straggler's
 * server; phase 1: pipelined spread of the straggler's contribution and
 * the results).  *out owned by the caller; rep may be NULL. */
ccs_status_t stragglar_topo_build(const topo_t *t, const algo_params_t *p,
                                  ccs_sched_t **out, algo_report_t *rep,
                                  ccs_err_t *err);

#endif /* CCS_STRAGGLAR_TOPO_H */
