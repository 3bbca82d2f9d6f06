/*
 * tune.h - TuCCL-style configuration tuning (`ccsynth tune`): for one
 * topology and collective, choose per buffer-size range the best
 * configuration = algorithm x chunking (pipeline factor or chunk count),
 * scored by the simulator (sim.h) on schedules that passed the verifier
 * (verify.h).  The search and its cost model: docs/tuning.md.
 *
 * The search is a multi-phase pruning in the spirit of TuCCL's MRACO
 * (tuccl.txt, Sec. III-D, Algorithm 1): cheap evaluations of many
 * candidates first, more evaluations for the survivors only.
 *   phase 1  every algorithm at its default configuration on a coarse
 *            subset of the sizes; an algorithm is kept at a coarse size
 *            when it is within (1 + prune) of the best there.
 *   phase 2  at each coarse size, the kept algorithms' chunking is
 *            refined by a hill climb along their chunk-count axis (warm
 *            started from the previous coarse size); then the same
 *            threshold prunes again on the refined times.
 *   phase 3  each size between two coarse sizes is scored only for the
 *            algorithms that survived phase 2 at either neighbour, at
 *            the chunkings between the two neighbours' optima; adjacent
 *            sizes with the same winner are merged into ranges.
 * `full_grid` evaluates every feasible configuration at every size
 * instead (the reference the pruned search is measured against).
 *
 * Library code: prints nothing except into the FILEs it is given.
 * Deterministic: the same inputs give the same choices, the same counts
 * and the same bytes from the writers (tune_stats_t.wall_s aside, which no
 * writer but the human table prints).
 *
 * Ownership: tune_run's *out is owned by the caller and freed with
 * tune_result_destroy; it owns its arrays and the winners' schedules.
 */
#ifndef CCS_TUNE_H
#define CCS_TUNE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "sched.h"
#include "sim.h"
#include "topo.h"

#define TUNE_MAX_ALGOS     32
#define TUNE_MAX_PIPELINES 16
#define TUNE_MAX_CHUNKS    16

typedef struct tune_opts {
    ccs_coll_t coll;
    int32_t root;               /* rooted collectives (default 0) */
    /* Algorithms to consider, in tie-breaking order; NULL/0: every
     * registered algorithm except the slow ones (milp). */
    const char *const *algos;   /* borrowed, [nalgos] */
    uint32_t nalgos;
    const double *sizes;        /* borrowed, [nsizes] bytes > 0; any order,
                                   duplicates dropped */
    uint32_t nsizes;
    /* Pipeline factors (algo_params_t.pipeline); 1 is always added.
     * NULL/0: 1, 2, 4, 8. */
    const uint32_t *pipelines;
    uint32_t npipelines;
    /* Explicit chunk counts (algo_params_t.nchunks, pipeline 1), tried
     * where the algorithm accepts them.  With chunks_auto, C0/2, C0/4 and
     * C0/8 are added, C0 being the algorithm's default chunk count
     * (coarser chunkings than any pipeline factor can give). */
    const uint32_t *chunks;     /* borrowed, [nchunks] */
    uint32_t nchunks;
    bool chunks_auto;           /* default true */
    double prune;               /* threshold, >= 0 (default 0.25) */
    uint32_t coarse_stride;     /* phase 1 every k-th size (default 3) */
    bool full_grid;             /* evaluate the whole grid instead */
    /* Straggler scenario: rank `straggler` (-1: none) arrives at
     * straggler_delay_s; the rank is also given to the algorithms. */
    int32_t straggler;
    double straggler_delay_s;
    uint32_t elem_bytes;        /* element size (default 4, float32) */
    sim_mode_t mode;            /* step semantics (default rank) */
    double local_bw_Bps;        /* COPY/REDUCE_LOCAL cost (0: free) */
    /* Protocol axis: SIM_PROTO_PLAN (default) tries LL, LL128 and Simple
     * for every configuration and keeps the best per size; any other
     * value fixes that protocol (IDEAL: the pure alpha-beta model). */
    sim_proto_t proto;
    /* Channel axis (sim_proto_channels): 0 (default) gives each plan the
     * fewest channels, at most TUNE_MAX_CHANNELS, under which no transfer
     * is slowed by the per-channel cap; any other value runs every plan
     * on that many.  Plans that lay out their own channels (nccl-ring,
     * nccl-tree) keep theirs. */
    uint32_t channels;
    const char *topo_spec;      /* written as topo= into the plans' params;
                                   NULL: the topology's name */
    FILE *report;               /* notes (algorithms left out, ...);
                                   NULL: quiet */
} tune_opts_t;

void tune_opts_init(tune_opts_t *o);

/* The most channels the tuner gives a plan: NCCL's ring search keeps at
 * most MAXCHANNELS / 2 = 32 (src/init.cc). */
#define TUNE_MAX_CHANNELS 32u

/* One chosen configuration (a winner at some size). */
typedef struct tune_config {
    char algo[CCS_ALGO_NAME_MAX];
    uint32_t pipeline;          /* algo_params_t.pipeline */
    uint32_t chunks_param;      /* algo_params_t.nchunks (0: from pipeline) */
    uint32_t nchunks;           /* the schedule's chunk count C */
    uint32_t nsteps;
    sim_proto_t proto;          /* protocol it was timed with (params
                                   proto=) */
    uint32_t channels;          /* channels it was timed on (params
                                   channels=); 0: no per-channel cap */
    char file[96];              /* plan file name under --emit */
} tune_config_t;

typedef struct tune_point {     /* one buffer size */
    double size_bytes;
    uint32_t config;            /* winner: index into configs */
    uint32_t range;             /* index into ranges */
    double time_s;              /* the winner's simulated time */
    double ring_time_s;         /* ring at its default; 0: ring cannot run */
    double nccl_time_s;         /* the nccl baseline (baseline.h); 0: no
                                   NCCL algorithm applies */
    char nccl_algo[32];         /* its choice, e.g. "nvls/simple" */
} tune_point_t;

typedef struct tune_range {     /* sizes first..last share a winner */
    uint32_t first, last;       /* point indices, inclusive */
    uint32_t config;
} tune_range_t;

typedef struct tune_stats {
    uint32_t nalgos;            /* algorithms asked for */
    uint32_t nalgos_run;        /* of which can run (phase 1 entrants) */
    uint32_t nalgos_pruned;     /* dropped everywhere by phase 1 or 2 */
    uint64_t grid_configs;      /* feasible (algorithm, chunking) pairs */
    uint64_t grid_evals;        /* grid_configs x sizes */
    uint64_t evals;             /* simulations made by the search */
    uint64_t evals_phase[3];    /* of which per phase (full grid: [0]) */
    uint64_t ref_evals;         /* extra ring runs for the speedup column */
    uint64_t built;             /* schedules synthesized + verified */
    double wall_s;              /* the search's wall-clock time */
} tune_stats_t;

typedef struct tune_result {
    ccs_coll_t coll;
    uint32_t nranks;
    char topo[64];              /* topology name (spec) */
    uint64_t topo_fingerprint;
    uint32_t elem_bytes;
    sim_mode_t mode;
    int32_t straggler;
    double straggler_delay_s;
    double prune;
    uint32_t coarse_stride;
    bool full_grid;
    uint32_t nconfigs;
    tune_config_t *configs;     /* owned, [nconfigs], first-win order */
    ccs_sched_t **plans;        /* owned, [nconfigs], verified schedules */
    uint32_t npoints;
    tune_point_t *points;       /* owned, [npoints], ascending sizes */
    uint32_t nranges;
    tune_range_t *ranges;       /* owned, [nranges], contiguous */
    char **pruned;              /* owned, [stats.nalgos_pruned] names */
    char assumptions[512];      /* what the numbers rest on (baseline.h) */
    tune_stats_t stats;
} tune_result_t;

/* Run the search.  CCS_ERR_UNSUPPORTED when no algorithm can run the
 * collective on the topology; CCS_ERR_INVALID for bad options. */
ccs_status_t tune_run(const topo_t *t, const tune_opts_t *o,
                      tune_result_t **out, ccs_err_t *err);
void tune_result_destroy(tune_result_t *r);     /* NULL is a no-op */

/* Writers.  The table is for people; CSV has one row per size; the JSON
 * document is the one `--emit` writes as tuning.json (docs/tuning.md). */
ccs_status_t tune_write_table(const tune_result_t *r, FILE *f,
                              ccs_err_t *err);
ccs_status_t tune_write_csv(const tune_result_t *r, FILE *f, ccs_err_t *err);
ccs_status_t tune_write_json(const tune_result_t *r, FILE *f, ccs_err_t *err);
/* The JSON document written atomically to `path` (temporary file in the
 * same directory, fsync, rename). */
ccs_status_t tune_save_json(const tune_result_t *r, const char *path,
                            ccs_err_t *err);
/* Write every winner's plan as DIR/<configs[i].file> (atomically, through
 * ccs_format_write_file) and then DIR/tuning.json; DIR is created when
 * missing (not its parents). */
ccs_status_t tune_emit(const tune_result_t *r, const char *dir,
                       ccs_err_t *err);

/* Write DIR/msccl/, an algorithm directory usable as MSCCL_ALGO_DIR: one
 * MSCCL XML per range (msccl_write_algo_dir), its window exactly the
 * range's sizes under tune_lookup's rule (the first from 0, each up to
 * just below the next range's first size, the last unbounded).  MSCCL
 * loads every XML of the directory, so a stale file would run beside the
 * new ones: the tuner's own earlier files ("<digits>-*.xml") are removed
 * first, and any other XML file there is refused (CCS_ERR_INVALID naming it)
 * before anything is touched.  DIR and DIR/msccl are created when
 * missing. */
ccs_status_t tune_emit_msccl(const tune_result_t *r, const char *dir,
                             ccs_err_t *err);

/* Index of the range a buffer of `bytes` uses (the last range whose first
 * size is <= bytes; the first range for smaller buffers): the lookup rule
 * tuning.json documents. */
uint32_t tune_lookup(const tune_result_t *r, double bytes);

#endif /* CCS_TUNE_H */
