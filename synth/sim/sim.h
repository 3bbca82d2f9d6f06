/*
 * sim.h - discrete-event alpha-beta simulator of a schedule on a topology.
 *
 * Every SEND of the schedule is one transfer of nchunks * chunk_bytes bytes
 * from the sender's GPU node to the receiver's, routed over the topology
 * (topo_route by default: fewest hops, through switches and NICs).  A
 * transfer costs the sum of its links' alphas, then a fluid bandwidth phase
 * in which all transfers active on a directed link share its bandwidth
 * max-min fairly; rates are recomputed whenever a transfer enters or leaves
 * the bandwidth phase.  Parallel links between the same ordered node pair
 * form one "pipe" whose bandwidth is their sum.  Steps synchronise either
 * per rank (the runtime executor's rule, the default) or with a barrier.
 * The model in full: docs/simulator.md and the top comment of sim.c.
 *
 * Ownership: a sim_t (sim_create) borrows the schedule and the topology,
 * which must outlive it; sim_destroy frees it.  A sim_result_t's arrays
 * are owned by the result and freed by sim_result_free.  A sim_t is not
 * thread-safe (its run state is reused between runs); use one per thread.
 */
#ifndef CCS_SIM_H
#define CCS_SIM_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "sched.h"
#include "sim_proto.h"
#include "topo.h"

typedef enum {
    /* Per rank (default; what the executor does): rank r starts its ops
     * of step t when it has finished its own ops of the previous step it
     * takes part in; a transfer starts when both its sender and its
     * receiver have reached its step. */
    SIM_MODE_RANK = 0,
    /* Global barrier: step t starts when every op of step t-1 has finished
     * and every rank with ops in step t has arrived. */
    SIM_MODE_BARRIER = 1,
    /* Hazard-ordered issue ("dataflow"): a rank issues its steps in order,
     * at most `window` of its steps (steps in which it has ops) ahead of
     * its oldest unfinished one, and each op starts as soon as every
     * earlier op of the rank it conflicts with (read-after-write,
     * write-after-read, write-after-write on a buffer's chunks) has
     * finished; a transfer starts when both of its ops may start and the
     * previous transfer between the same ordered pair has started.  The
     * same data as the step order (docs/simulator.md, "Dataflow").  No
     * executor runs schedules this way: its figures are a simulation's
     * only. */
    SIM_MODE_DATAFLOW = 2,
    SIM_MODE_COUNT
} sim_mode_t;

/* Steps a rank may have in flight in dataflow mode when the caller says
 * 0 (sim_opts_t.window). */
#define SIM_DATAFLOW_WINDOW 4u

/* "rank", "barrier", "dataflow" */
const char *sim_mode_str(sim_mode_t m);
/* What a figure simulated in mode m stands for, when not every executor
 * runs schedules that way (dataflow: the CPU executors with an issue
 * window, not CUDA or NCCL); NULL for the modes every executor follows.
 * Every output of such a figure carries it. */
const char *sim_mode_note(sim_mode_t m);
ccs_status_t sim_mode_parse(const char *name, sim_mode_t *out);

/* Route override (tests, other routing policies): same contract as
 * topo_route, i.e. link ids in path order from node src to node dst. */
typedef ccs_status_t (*sim_route_fn)(const topo_t *t, int32_t src,
                                     int32_t dst, int32_t *links,
                                     int32_t cap, int32_t *nhops,
                                     void *ctx, ccs_err_t *err);

typedef struct sim_opts {
    sim_mode_t mode;
    /* Dataflow mode: a rank's ops of at most this many of its steps are
     * in flight (1: exactly rank mode); 0 takes SIM_DATAFLOW_WINDOW.
     * Ignored by the other modes. */
    uint32_t window;
    /* Arrival times: rank r enters the collective at arrival_s[r] seconds
     * (NULL: every rank at 0).  [nranks] when set; borrowed. */
    const double *arrival_s;
    /* One straggler on top of arrival_s: rank `straggler` (-1: none)
     * arrives at max(its arrival, straggler_delay_s). */
    int32_t straggler;
    double straggler_delay_s;
    /* Element size in bytes (0 counts as 1): a chunk holds
     * ceil(ceil(size / elem_bytes) / nchunks) elements, as the runtime
     * pads the tail. */
    uint32_t elem_bytes;
    /* Local ops (COPY, REDUCE_LOCAL) move their bytes at this rate
     * (bytes/s); 0 makes them free. */
    double local_bw_Bps;
    sim_route_fn route;      /* NULL: topo_route */
    void *route_ctx;
    /* Protocol cost model (sim_proto.h): PLAN (the default) takes the
     * schedule's proto= param, and the ideal alpha-beta model without
     * one; may differ between sim_exec calls on one sim_t. */
    sim_proto_t proto;
    /* Channels a transfer runs on (sim_proto_channels): 0 takes the
     * schedule's channels= param; none there leaves transfers uncapped.
     * Ignored where the protocol has no per-channel cap (ideal, NVLS). */
    uint32_t channels;
} sim_opts_t;

/* Defaults: per-rank mode, no straggler, bytes, free local ops. */
void sim_opts_init(sim_opts_t *o);

typedef struct sim_result {
    double time_s;           /* completion of the last op (from time 0) */
    double chunk_bytes;      /* bytes of one chunk at this size */
    uint32_t nranks;
    uint32_t nphases;
    double *rank_finish_s;   /* owned; [nranks] when the rank's last op
                                finished (its arrival if it has none) */
    double *phase_end_s;     /* owned; [nphases] latest op end in phase */
    uint64_t ntransfers;
    uint64_t nevents;        /* events processed (a cost figure) */
    int32_t busiest_link;    /* a link id of the most utilised pipe, -1 */
    double busiest_util;     /* its bytes / (bandwidth * time_s) */
    /* The fastest transfer's rate in units of one channel's cap
     * (sim_proto_channels): run uncapped, a plan needs ceil() of it
     * channels for no transfer to be slowed.  0 where the protocol has no
     * per-channel cap (ideal, NVLS). */
    double peak_channels;
} sim_result_t;

void sim_result_free(sim_result_t *r);  /* frees the arrays; NULL-safe */

typedef struct sim sim_t;

/* Prepare a schedule for simulation on a topology: validates its
 * structure, matches sends to receives, and routes every transfer (routes
 * are cached per (src, dst) pair).  The schedule's ranks are the
 * topology's ranks (rank_node).  CCS_ERR_MISMATCH when the rank counts
 * differ.  route/route_ctx from o (may be NULL) are used for routing. */
ccs_status_t sim_create(const ccs_sched_t *s, const topo_t *t,
                        const sim_opts_t *o, sim_t **out, ccs_err_t *err);
void sim_destroy(sim_t *sim);           /* NULL is a no-op */

/* Simulate one buffer size (bytes, >= 0).  On success *res is filled and
 * owned by the caller (sim_result_free). */
ccs_status_t sim_exec(sim_t *sim, double size_bytes, const sim_opts_t *o,
                      sim_result_t *res, ccs_err_t *err);

/* One-shot: sim_create + sim_exec + sim_destroy. */
ccs_status_t sim_run(const ccs_sched_t *s, const topo_t *t,
                     double size_bytes, const sim_opts_t *o,
                     sim_result_t *res, ccs_err_t *err);

/* nccl-tests' bus bandwidth factor: busbw = algbw * factor.  allreduce
 * 2(n-1)/n; reducescatter, allgather, alltoall (n-1)/n; broadcast,
 * reduce 1. */
double sim_busbw_factor(ccs_coll_t coll, uint32_t nranks);

/* Parse an arrivals file: lines "rank seconds" (seconds may carry a unit,
 * e.g. 3ms; '#' starts a comment).  Ranks not listed arrive at 0.  *out is
 * an owned [nranks] array (free()). */
ccs_status_t sim_read_arrivals(const char *path, uint32_t nranks,
                               double **out, ccs_err_t *err);

/* ---- helpers shared by `ccsynth sim` and `ccsynth compare` ---- */

#define SIM_MAX_SIZES 4096
#define SIM_MAX_SIZE_BYTES 9007199254740992.0   /* 2^53: exact in a double */

/* Parse a size list: comma-separated items, each SIZE ("1G"), LO:HI
 * (doubling) or LO:HI:FACTOR (factor > 1), e.g. "1K:4G", "8M,1G",
 * "1K:1M:4"; sizes are rounded to whole bytes, at most
 * SIM_MAX_SIZE_BYTES.  *out is an owned array of *n sizes in bytes
 * (free()); errors are CCS_ERR_INVALID quoting the list. */
ccs_status_t sim_parse_sizes(const char *spec, double **out, uint32_t *n,
                             ccs_err_t *err);

#endif /* CCS_SIM_H */
