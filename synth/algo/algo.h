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

#include <stdint.h>
#include <stdio.h>

#include "sched.h"
#include "topo.h"

/* Synthesis parameters, filled by the CLI from its options. */
typedef struct algo_params {
    ccs_coll_t coll;
    int32_t root;          /* reduce/broadcast root rank (default 0) */
    int32_t straggler;     /* straggler rank, -1 for none (stragglar) */
    uint32_t pipeline;     /* chunks per natural unit (>= 1); pipelining */
    uint32_t nchunks;      /* force a chunk count when > 0 (where allowed) */
    double size_bytes;     /* buffer size the schedule is tuned for (MILP,
                              tuning); 0 = the algorithm's default */
    /* MILP / solver knobs */
    double time_limit_s;   /* solver time limit, seconds (0 = default) */
    double mip_gap;        /* relative MIP gap (< 0 = default) */
    uint32_t milp_m;       /* parallel sub-collectives M (0 = default) */
    int32_t milp_nodes;    /* branch-and-bound node limit: 0 = automatic
                              (sized by the model), > 0 that many, < 0 none */
    const char *chunk_sizes; /* candidate chunk sizes, "1M,4M,16M" or NULL */
    const char *write_lp;  /* write the model in CPLEX LP form, or NULL */
    uint64_t seed;         /* deterministic tie-breaking seed */
    const char *sub_algo;  /* inner algorithm (e.g. stragglar phase 0) */
    FILE *report;          /* human report lines (rounds, bounds, solver
                              figures); NULL = quiet */
    /* Added for MultiTree: write the algorithm's structure (multitree: its
     * spanning trees) as Graphviz DOT to this path, or NULL.  A .ccs file
     * does not carry trees, so the drawing is made at synthesis time.
     * Algorithms without such a structure ignore it. */
    const char *dot_out;
} algo_params_t;

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
     * not be verified here: the caller does it. */
    ccs_status_t (*build)(const topo_t *t, const algo_params_t *p,
                          ccs_sched_t **out, ccs_err_t *err);
} algo_desc_t;

#define ALGO_COLL_BIT(c) (1u << (unsigned)(c))

/* Registry. */
const algo_desc_t *algo_find(const char *name);  /* NULL when unknown */
int algo_count(void);
const algo_desc_t *algo_at(int i);

/* Look up, check the collective and topology, build, finalize, stamp the
 * topology fingerprint.  Does not verify.  *out owned by the caller. */
ccs_status_t algo_synthesize(const char *name, const topo_t *t,
                             const algo_params_t *p, ccs_sched_t **out,
                             ccs_err_t *err);

#endif /* CCS_ALGO_H */
