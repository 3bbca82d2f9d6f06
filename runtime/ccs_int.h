/*
 * ccs_int.h - runtime internals shared by plan.c, exec.c, comm.c, log.c
 * and the transports.  Not installed.
 */
#ifndef CCS_INT_H
#define CCS_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ccs.h"
#include "err.h"
#include "sched.h"
#include "xport.h"

/* ---- logging (log.c) ---- */

/* Levels of CCS_DEBUG: unset/NONE, WARN, INFO, TRACE. */
enum { CCS_LOG_NONE = 0, CCS_LOG_WARN = 1, CCS_LOG_INFO = 2,
       CCS_LOG_TRACE = 3 };

/* Parse CCS_DEBUG from the environment (read once per plan/communicator,
 * kept there: no global state). */
int ccs_log_level_env(void);
/* One line to stderr: "ccs <host>:<pid>:<tid> [<rank>] <LEVEL> <SUBSYS>
 * <message>".  rank < 0 prints no rank. */
void ccs_log_emit(int level, const char *subsys, int rank, const char *fmt,
                  ...) CCS_PRINTF(4, 5);

#define CCS_LOG(cur, lvl, subsys, rank, ...)                                \
    do {                                                                    \
        if ((cur) >= (lvl))                                                 \
            ccs_log_emit((lvl), (subsys), (rank), __VA_ARGS__);             \
    } while (0)

/* Monotonic clock in seconds. */
double ccs_now_s(void);

/* ---- plans (plan.c) ---- */

/* Ops of one rank that share a step. */
typedef struct plan_group {
    uint32_t step;
    uint32_t first;          /* index of the first op in rank_ops[r] */
    uint32_t end;            /* one past the last */
    uint32_t phase;
} plan_group_t;

struct ccs_plan {
    ccs_sched_t *sched;      /* owned, unless sched_borrowed */
    bool sched_borrowed;     /* only while the loader builds the plan as it
                                decodes: the reader still owns sched */
    uint32_t **seq;          /* owned; [nranks][rank_nops[r]]: index of the
                                op among the rank's ops to/from the same
                                peer in the same step, per direction.  A
                                rank whose indices are all 0 (every step
                                moves at most one message each way per
                                peer: rings, trees) points at seq_zero,
                                so a large plan writes no table for them */
    uint32_t nseq;           /* entries of seq (nranks once made) */
    uint32_t *seq_zero;      /* owned; zeros, as long as the longest rank */
    uint32_t *ngroups;       /* owned; [nranks] steps the rank takes part
                                in (ccs_plan_group walks them) */
    uint32_t *stage_chunks;  /* owned; [nranks] most chunks of transfer
                                staging one step of the rank can need */
    uint32_t *scratch_chunks; /* owned; [nranks] end of the highest SCRATCH
                                 chunk the rank's ops touch: the executor
                                 sizes scratch from it, not from the
                                 declared nscratch, so a plan that declares
                                 much scratch and uses little costs little */
    uint8_t *inplace_hazard; /* owned; [nranks] 1 when the rank reads
                                IN[c] after (or while) OUT[c] is written:
                                in-place calls must stage the input */
    int log_level;
    _Atomic uint64_t fingerprint; /* 0 until exec.c hashes the schedule
                                     (first run; every thread computes the
                                     same value, so racing is harmless) */
};

/* The group of rank r's ops that starts at op `first` (a group's first
 * op: 0, or the end of the previous group).  Groups are found from the
 * ops, which are sorted by step, instead of being stored: a table would
 * cost the loader 16 bytes per step and rank in fresh pages, and the
 * executor reads these ops anyway. */
static inline plan_group_t ccs_plan_group(const ccs_plan_t *p, uint32_t r,
                                          uint32_t first)
{
    const ccs_sched_t *s = p->sched;
    const ccs_op_t *ops = s->rank_ops[r];
    uint32_t e = first + 1, t = ops[first].step;
    plan_group_t g;

    while (e < s->rank_nops[r] && ops[e].step == t)
        e++;
    g.step = t;
    g.first = first;
    g.end = e;
    g.phase = s->step_phase[t];
    return g;
}

/* Build a plan from an in-memory schedule (deep copy; s stays the
 * caller's).  Validates structure, buffer validity per collective and
 * send/receive matching per step.  *out owned by the caller. */
ccs_status_t ccs_plan_from_sched(const ccs_sched_t *s, ccs_plan_t **out,
                                 ccs_err_t *err);
/* The plan's schedule (read-only). */
const ccs_sched_t *ccs_plan_sched(const ccs_plan_t *plan);

/* ---- communicators (comm.c) ---- */

struct ccs_comm {
    const ccs_xport_ops_t *xops;
    ccs_xport_t *x;          /* owned, freed through xops->destroy */
    int rank;
    int nranks;
    int log_level;
    bool broken;             /* a run failed mid-way; peers may be out of
                                step: further runs are refused */
    ccs_err_t err;           /* last error message */
    void *arena;             /* owned (xops->mem_alloc); grow-only */
    size_t arena_bytes;
    /* Calls every rank agreed on (exec_checks.c): keys of (plan fingerprint,
     * count, dtype, op, straggler), a small round-robin cache. */
    uint64_t agreed[8];
    uint32_t agreed_next;
    bool agree_off;          /* CCS_CHECK_CALLS=0 */
    /* The last call agreed on, as is (exec_checks.c): an identical call
     * skips even the key's hashing. */
    bool last_valid;
    uint64_t last_fp;
    size_t last_count;
    ccs_dtype_t last_dtype;
    ccs_redop_t last_op;
    int32_t last_strag;
    size_t small_bytes;      /* allreduce inputs up to this many bytes take
                                the one-step exchange (xport.h) */
    size_t small_total;      /* ... while (R - 1) * input is at most this */
    /* In-place analysis of one (plan, rank), cached (exec.c). */
    const ccs_plan_t *ip_plan; /* borrowed; NULL: nothing cached */
    uint64_t ip_fp;
    uint32_t ip_rank;
    bool ip_copy, ip_any;
    uint8_t *ip_force;       /* owned; [ip_cap] per op of the rank */
    uint32_t ip_cap;
    struct ccs_auto *autos;  /* owned; straggler auto's state (auto.c),
                                NULL until the first auto call */
    /* Hazard-ordered issue (exec.c): groups a rank may have issued at
     * once, 1 (the step order) by default. */
    uint32_t issue_window;
    struct ccs_flow_op *flow; /* owned; per-op state of a run with a
                                 window above 1, grow-only */
    uint64_t *flow_wait;     /* owned; [flow_cap] tickets being waited for */
    uint32_t flow_cap;       /* entries of flow and flow_wait */
    uint32_t *flow_pair;     /* owned; [2 * nranks] per peer and direction:
                                the pass in which a transfer was held back */
};

/* ---- straggler auto (auto.c) ---- */

/* One run with a fixed straggler (exec.c): ccs_run_ex without auto.
 * stats (not NULL) is filled on success. */
ccs_status_t ccs_run_fixed(const ccs_plan_t *plan, ccs_comm_t *comm,
                           const void *sendbuff, void *recvbuff,
                           size_t count, ccs_dtype_t dtype, ccs_redop_t op,
                           void *stream, const ccs_run_opts_t *opts);
/* ccs_run_ex with opts->straggler == CCS_STRAGGLER_AUTO. */
ccs_status_t ccs_auto_run(const ccs_plan_t *plan, ccs_comm_t *comm,
                          const void *sendbuff, void *recvbuff, size_t count,
                          ccs_dtype_t dtype, ccs_redop_t op, void *stream,
                          const ccs_run_opts_t *opts);
void ccs_auto_free(struct ccs_auto *a); /* NULL: no-op */
/* Complete the arrival-time exchange the last auto call left in flight
 * (its buffers are the auto state's, and peers write into them), unless
 * the communicator is broken.  ccs_comm_destroy calls it first. */
void ccs_auto_drain(ccs_comm_t *comm);
/* The schedule's hash the ranks agree on (exec.c). */
uint64_t ccs_plan_fingerprint(const ccs_plan_t *plan);
uint64_t ccs_mix64(uint64_t h, uint64_t v);

/* Before a plan's first step (exec_checks.c).  The first time a
 * communicator sees a call, its ranks agree on (plan, count, dtype, op,
 * straggler); a mismatch is CCS_ERR_MISMATCH on every rank, and
 * *disagreed is set: every rank reaches that verdict by itself, so no one
 * needs to be woken by an abort.  before_step names the step in messages
 * (-1: after the last). */
ccs_status_t ccs_exec_agree(ccs_comm_t *comm, const ccs_plan_t *plan,
                            size_t count, ccs_dtype_t dtype, ccs_redop_t op,
                            int32_t straggler, int64_t before_step,
                            bool *disagreed, ccs_err_t *err);
/* In place, for the plan's rank L: *need_copy when the input must be
 * copied to the arena first; else *force marks the receives (by op index)
 * that must land in staging, or is NULL.  Cached per communicator. */
ccs_status_t ccs_exec_inplace(ccs_comm_t *comm, const ccs_plan_t *plan,
                              uint32_t L, bool *need_copy,
                              const uint8_t **force, ccs_err_t *err);

/* Make sure the arena has `bytes`; returns it through *out. */
ccs_status_t ccs_comm_arena(ccs_comm_t *comm, size_t bytes, void **out,
                            ccs_err_t *err);

#endif /* CCS_INT_H */
