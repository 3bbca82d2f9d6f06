/*
 * sim_cost.h - the simulator as a cost function for algorithms that
 * compare candidate schedules (algo_cost_fn in algo.h: the MILP's
 * piece-size check).  The caller hands it to the algorithm in its
 * parameters; algorithms do not call the simulator themselves.
 */
#ifndef CCS_SIM_COST_H
#define CCS_SIM_COST_H

#include "err.h"
#include "sched.h"
#include "topo.h"

/* Simulated time of s on t for a buffer of `bytes`, with the simulator's
 * default options (no straggler delay), into *time_s.  ctx is unused
 * (NULL).  Matches algo_cost_fn. */
ccs_status_t sim_cost_time(void *ctx, const topo_t *t, const ccs_sched_t *s,
                           double bytes, double *time_s, ccs_err_t *err);

#endif /* CCS_SIM_COST_H */
