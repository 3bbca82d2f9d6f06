/*
 * baseline.h - the `nccl` baseline: at each buffer size, the fastest of
 * NCCL's algorithms that apply (nccl-ring, nccl-tree, nvls; algo_nccl_*.c)
 * under each protocol NCCL allows for it, as NCCL's own selection would at
 * best achieve.  compare, sim and tune print speedups against it.
 *
 * The baseline is simulated like everything else (same topology, same
 * straggler arrivals: NCCL waits for a straggler like any rank), verified
 * before it is timed.  Its candidates: nccl-ring at NCCL's channel count;
 * nccl-tree with one chunk per tree and channel and at pipeline factors
 * 1, 4 and 16; nvls with one piece and at pipeline factors 1, 4 and 16
 * (NCCL sizes its chunks to the buffer; the best of these stands for
 * that).
 */
#ifndef CCS_BASELINE_H
#define CCS_BASELINE_H

#include <stdint.h>

#include "algo.h"
#include "sim.h"
#include "topo.h"

#define BASE_NAME_MAX 32

typedef struct base_point {
    double time_s;              /* INFINITY: no NCCL algorithm applies */
    char algo[BASE_NAME_MAX];   /* e.g. "nccl-ring/ll128" */
} base_point_t;

/* True when NCCL has a modelled algorithm for the collective (allreduce,
 * reducescatter, allgather). */
bool base_applies(ccs_coll_t coll);

/* Fill pts[nsizes].  p: the collective (other fields are reset to the
 * baselines' defaults); so: arrivals, straggler, mode, element size; its
 * proto: PLAN means "each protocol NCCL allows" (LL, LL128, Simple; NVLS
 * Simple only), any other value that one protocol for every candidate
 * (IDEAL: the pure alpha-beta model).  CCS_ERR_UNSUPPORTED when
 * no NCCL algorithm can run (the points are then INFINITY). */
ccs_status_t base_nccl(const topo_t *t, const algo_params_t *p,
                       const sim_opts_t *so, const double *sizes,
                       uint32_t nsizes, base_point_t *pts, ccs_err_t *err);

/* The note every comparison prints: what the numbers rest on (NICs per
 * server, NVLS, the protocol model and its calibration).  One line, no
 * newline, into buf. */
/* The channel count NCCL's ring search settles on for t (nccl.h,
 * nccl_default_channels); 2 when the layout cannot be read. */
uint32_t base_channels(const topo_t *t);

void base_assumptions(const topo_t *t, sim_proto_t proto, char *buf,
                      size_t len);

#endif /* CCS_BASELINE_H */
