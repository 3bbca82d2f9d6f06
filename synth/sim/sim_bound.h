/*
 * sim_bound.h - a lower bound on an allreduce's time after the straggler
 * arrives, from the topology's cuts (derivation: docs/stragglar-topo.md).
 *
 * Model: the simulator's (sim.h).  The straggler sigma arrives at D and
 * sends and receives nothing before; every other rank may have done
 * anything that does not need sigma's data.  After D, for every node set X
 * below, s bytes derived from sigma's contribution (or, for X = {sigma},
 * the others' sums) must cross X's boundary in one direction, each byte
 * in a transfer that starts at D or later, pays its route's latency, then
 * shares the links' bandwidth:
 *     T_after >= alpha_X + s / bw_X      for every such cut X
 * with bw_X the summed bandwidth of the links crossing the cut in that
 * direction and alpha_X the smallest route latency across it.
 */
#ifndef CCS_SIM_BOUND_H
#define CCS_SIM_BOUND_H

#include <stdint.h>

#include "topo.h"

typedef struct sim_bound {
    double time_s;        /* the bound: max over the cuts, seconds */
    double bw_Bps;        /* bandwidth of the binding cut, bytes/s */
    double alpha_s;       /* its latency term, seconds */
    char cut[64];         /* which cut binds, e.g. "into server 2" */
} sim_bound_t;

/* The bound for `bytes` bytes with rank `straggler` late (0 <= straggler
 * < ngpus).  Cuts: out of sigma, into sigma, and, where there are several
 * servers, out of sigma's server and into every other server.  Fills *out
 * on success. */
ccs_status_t sim_straggler_bound(const topo_t *t, int32_t straggler,
                                 double bytes, sim_bound_t *out,
                                 ccs_err_t *err);

#endif /* CCS_SIM_BOUND_H */
