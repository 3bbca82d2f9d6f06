/*
 * algo.h - algorithms are data: one descriptor per synth/algo_<name>.c,
 * listed in one registry table (algo.c) that serves `--algo` and
 * `ccsynth list`.  There is no silent fallback: an algorithm that cannot
 * run on a topology says why through `check`.
 *
 * An algorithm talks only to the schedule builder (runtime/sched.h); the
 * CLI verifies every schedule before writing it.
 */
#ifndef CCS_ALGO_H
#define CCS_ALGO_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "sched.h"
#include "topo.h"

struct mtree;

/* A cost the caller measures a candidate schedule with, in seconds for a
 * buffer of `bytes` (the synth command and the tuner pass the simulator's
 * time: sim_cost_time in sim_cost.h).  Algorithms take it as a parameter
 * rather than calling the simulator, so that algo/ only builds IR.  ctx
 * is the caller's (algo_milp_params_t.cost_ctx). */
typedef ccs_status_t (*algo_cost_fn)(void *ctx, const topo_t *t,
                                     const ccs_sched_t *s, double bytes,
                                     double *time_s, ccs_err_t *err);

/* The MILP's knobs (algo_milp.c). */
typedef struct algo_milp_params {
    uint32_t m;            /* parallel sub-collectives M (0 = default) */
    double time_limit_s;   /* solver time limit, seconds (0 = default) */
    double mip_gap;        /* relative MIP gap (< 0 = default) */
    int32_t nodes;         /* branch-and-bound node limit: 0 = automatic
                              (sized by the model), > 0 that many, < 0 none */
    const char *chunk_sizes; /* candidate chunk sizes, "1M,4M,16M" or NULL;
                                borrowed */
    bool want_lp;          /* return the model in CPLEX LP form
                              (algo_report_t.lp); the model is then built
                              even above the default size cap */
    /* Piece-size check: the decoded plan is emitted with the model's piece
     * sizes and with every candidate, and the cheapest by this cost wins.
     * NULL: the model's piece sizes are kept. */
    algo_cost_fn cost;
    void *cost_ctx;        /* borrowed; passed to cost */
} algo_milp_params_t;

/* StragglAR's knobs (algo_stragglar.c). */
typedef struct algo_stragglar_params {
    const char *phase0;    /* phase-0 reduce-scatter: NULL or "ring";
                              borrowed */
} algo_stragglar_params_t;

/* Synthesis parameters, filled by the CLI from its options: the fields
 * every algorithm reads are flat, each algorithm's own knobs nest. */
typedef struct algo_params {
    ccs_coll_t coll;
    int32_t root;          /* reduce/broadcast root rank (default 0) */
    int32_t straggler;     /* straggler rank, -1 for none (stragglar) */
    uint32_t pipeline;     /* chunks per natural unit (>= 1); pipelining */
    uint32_t nchunks;      /* force a chunk count when > 0 (where allowed) */
    double size_bytes;     /* buffer size the schedule is tuned for (MILP,
                              tuning); 0 = the algorithm's default */
    uint64_t seed;         /* deterministic tie-breaking seed */
    uint32_t channels;     /* NCCL channels (nccl-ring, nccl-tree); 0 = the
                              algorithm's default */
    algo_milp_params_t milp;
    algo_stragglar_params_t stragglar;
} algo_params_t;

/* What a build says besides the schedule.  The algorithm fills it, the
 * caller decides what to print or write (algorithms open no files and
 * print nothing).  Owned by the caller: algo_report_init before the build,
 * algo_report_free after. */
typedef struct algo_report {
    char **lines;          /* owned; nlines human lines (rounds, bounds,
                              solver figures), each without '\n' */
    int32_t nlines;
    int32_t cap;           /* lines allocated */
    bool lost;             /* a line was dropped (out of memory) */
    struct mtree *trees;   /* owned, or NULL: the spanning trees (multitree)
                              to draw with mtree_write_dot; mtree_destroy */
    char *lp;              /* owned, or NULL: the MILP in CPLEX LP form
                              (milp with want_lp) */
} algo_report_t;

void algo_report_init(algo_report_t *r);
void algo_report_free(algo_report_t *r);  /* NULL is a no-op */
/* Append one line (printf format, no trailing newline).  r NULL: nothing.
 * Out of memory drops the line and sets r->lost; the build goes on. */
void algo_report_addf(algo_report_t *r, const char *fmt, ...)
    CCS_PRINTF(2, 3);
/* Each line, with a newline, onto f. */
void algo_report_print(const algo_report_t *r, FILE *f);

/* Defaults for every field. */
void algo_params_init(algo_params_t *p);

typedef struct algo_desc {
    const char *name;      /* --algo name */
    const char *desc;      /* one line for `ccsynth list` */
    unsigned colls;        /* bitmask of (1u << ccs_coll_t) supported */
    /* CCS_OK when the algorithm can run on t with p; else
     * CCS_ERR_UNSUPPORTED with the reason in err.  May be NULL (always). */
    ccs_status_t (*check)(const topo_t *t, const algo_params_t *p,
                          ccs_err_t *err);
    /* Build the schedule.  *out is owned by the caller.  The schedule need
     * not be verified here: the caller does it.  rep (NULL: none wanted)
     * gets the report lines and structures; on failure it may hold some. */
    ccs_status_t (*build)(const topo_t *t, const algo_params_t *p,
                          ccs_sched_t **out, algo_report_t *rep,
                          ccs_err_t *err);
} algo_desc_t;

#define ALGO_COLL_BIT(c) (1u << (unsigned)(c))

/* Registry. */
const algo_desc_t *algo_find(const char *name);  /* NULL when unknown */
int algo_count(void);
const algo_desc_t *algo_at(int i);

/* Look up, check the collective and topology, build, finalize, stamp the
 * topology fingerprint.  Does not verify.  *out owned by the caller; rep
 * (NULL: none wanted) initialised by the caller, filled by the build. */
ccs_status_t algo_synthesize_report(const char *name, const topo_t *t,
                                    const algo_params_t *p, ccs_sched_t **out,
                                    algo_report_t *rep, ccs_err_t *err);

/* algo_synthesize_report without a report. */
ccs_status_t algo_synthesize(const char *name, const topo_t *t,
                             const algo_params_t *p, ccs_sched_t **out,
                             ccs_err_t *err);

#endif /* CCS_ALGO_H */
