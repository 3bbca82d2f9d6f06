/*
 * options.h - the one option layer of the ccsynth command line.
 *
 * Every flag is one row of a table (options.c) with its long name, short
 * letter, group and help.  A flag has one meaning, one parser and one
 * validation rule whichever subcommand takes it, so the same text means
 * the same thing in `synth`, `sim`, `compare` and `tune`.  The groups:
 *
 *   topology    --topo --alpha --bw                    (opt_topo_t)
 *   synthesis   --algo --coll --root --straggler --phase0 --pipeline
 *               --chunks --channels --seed and the solver's knobs
 *                                                      (opt_synth_t)
 *   simulation  --sizes --type --mode --straggler-delay --arrivals
 *               --local-bw --proto                     (opt_sim_t)
 *   output      -o --json --csv --dot -q -h            (opt_out_t)
 *
 * plus a few options that belong to one command (show --rank, compare
 * --plot, tune --emit, export --proto ...): the layer only collects their
 * text; the command parses it.  `--msccl` (the format of export, import
 * and tune --emit) and `--max-steps` are one row each, shared by the
 * commands that take them.
 *
 * A subcommand lists the options it takes (opt_cmd_t) and calls
 * opt_parse once; a missing value, an unknown option or a bad value is
 * one line on stderr that names the option (exit 2).  The group setters
 * and checks below are what opt_parse calls, exported for the tests.
 */
#ifndef CCS_OPTIONS_H
#define CCS_OPTIONS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "algo.h"
#include "ccs.h"
#include "err.h"
#include "sim.h"
#include "topo.h"

typedef enum {
    /* topology */
    OPT_TOPO, OPT_ALPHA, OPT_BW,
    /* synthesis */
    OPT_ALGO, OPT_COLL, OPT_ROOT, OPT_STRAGGLER, OPT_PHASE0, OPT_PIPELINE,
    OPT_CHUNKS, OPT_SEED, OPT_SIZE, OPT_TIME_LIMIT, OPT_MIP_GAP,
    OPT_MILP_M, OPT_NODE_LIMIT, OPT_CHUNK_SIZES, OPT_WRITE_LP, OPT_CHANNELS,
    /* simulation */
    OPT_SIZES, OPT_TYPE, OPT_MODE, OPT_DELAY, OPT_ARRIVALS, OPT_LOCAL_BW,
    OPT_PROTO, OPT_WINDOW,
    /* output */
    OPT_OUTPUT, OPT_JSON, OPT_CSV, OPT_DOT, OPT_QUIET, OPT_HELP,
    /* one command's own; the text lands in cli_opts_t.own[] */
    OPT_RANK, OPT_PLOT, OPT_TIME, OPT_MAX_CARD, OPT_ORDER, OPT_CHILDREN,
    OPT_PRUNE, OPT_COARSE, OPT_FULL_GRID, OPT_EMIT, OPT_VS_NCCL, OPT_EXACT,
    OPT_MSCCL, OPT_NCHANNELS, OPT_MIN_BYTES, OPT_MAX_BYTES,
    OPT_INPLACE, OPT_OUTOFPLACE, OPT_MAX_STEPS, OPT_MAX_TBS, OPT_NAME,
    OPT_NO_LIMITS,
    OPT_COUNT,
    OPT_END = -1            /* ends an opt_cmd_t.ids list */
} opt_id_t;

typedef enum {
    OPT_GROUP_TOPO, OPT_GROUP_SYNTH, OPT_GROUP_SIM, OPT_GROUP_OUT,
    OPT_GROUP_OWN, OPT_GROUP_COUNT
} opt_group_t;

/* The long name ("straggler-delay") and group of an option. */
const char *opt_name(opt_id_t id);
opt_group_t opt_group(opt_id_t id);

/* At most this many values in a list option (--pipeline 1,2,4 ...). */
#define OPT_MAX_LIST 16

typedef struct opt_topo {
    const char *spec;       /* --topo, borrowed from argv; NULL: not given */
    topo_opts_t over;       /* --alpha (s), --bw (B/s); 0: the topology's */
} opt_topo_t;

typedef struct opt_synth {
    const char *algo;       /* --algo / --algos: a name or a comma list,
                               borrowed; NULL: not given */
    ccs_coll_t coll;        /* --coll (default allreduce) */
    int32_t root;           /* --root (default 0) */
    bool root_given;
    int32_t straggler;      /* --straggler, -1: not given */
    const char *phase0;     /* --phase0, borrowed, or NULL */
    uint32_t pipeline[OPT_MAX_LIST];   /* --pipeline K[,K...] */
    uint32_t npipeline;                /* 0: not given */
    uint32_t chunks[OPT_MAX_LIST];     /* --chunks C[,C...], auto, none */
    uint32_t nchunks;
    bool chunks_auto;       /* "auto" was in the list */
    bool chunks_given;
    uint64_t seed;          /* --seed (default 0) */
    uint32_t channels[OPT_MAX_LIST];   /* --channels C[,C...] */
    uint32_t nchannels;                /* 0: not given */
    /* the solver's knobs (milp only) */
    double size_bytes;      /* --size, bytes; 0: the algorithm's default */
    double time_limit_s;    /* --time-limit, s; 0: default */
    double mip_gap;         /* --mip-gap; < 0: default */
    uint32_t milp_m;        /* --milp-m; 0: default */
    int32_t milp_nodes;     /* --node-limit: 0 automatic, < 0 none */
    const char *chunk_sizes;   /* --chunk-sizes, borrowed, or NULL */
    const char *write_lp;      /* --write-lp FILE, borrowed, or NULL */
    const char *solver_opt;    /* the first solver knob given ("--mip-gap"),
                                  for the check that milp is asked for */
} opt_synth_t;

typedef struct opt_sim {
    double *sizes;          /* --sizes, owned, [nsizes] bytes; NULL: not
                               given (opt_sim_sizes applies a default) */
    uint32_t nsizes;
    ccs_dtype_t dtype;      /* --type (default float32) */
    sim_mode_t mode;        /* --mode (default rank) */
    uint32_t window;        /* --window (dataflow mode); 0: the default */
    double delay_s;         /* --straggler-delay, s, >= 0 */
    bool have_delay;
    const char *arrivals;   /* --arrivals FILE, borrowed, or NULL */
    double local_bw_Bps;    /* --local-bw; 0: local ops are free */
    /* --proto: one protocol, or "auto" (each at its best of LL, LL128 and
     * Simple per size; proto is then SIM_PROTO_PLAN) */
    sim_proto_t proto;
    bool proto_given;
    bool proto_auto;
} opt_sim_t;

typedef enum {
    OPT_FMT_TEXT, OPT_FMT_JSON, OPT_FMT_CSV, OPT_FMT_DOT
} opt_fmt_t;

typedef struct opt_out {
    const char *output;     /* -o FILE, borrowed, or NULL */
    opt_fmt_t fmt;          /* --json, --csv, --dot (default text) */
    bool quiet;             /* -q: nothing on stderr but errors, no
                               success line */
} opt_out_t;

typedef struct cli_opts {
    opt_topo_t topo;
    opt_synth_t synth;
    opt_sim_t sim;
    opt_out_t out;
    const char *own[OPT_COUNT]; /* a command's own options: the value
                                   (borrowed), "" for a flag; NULL: absent */
    bool help;              /* -h was given and the usage printed */
    int nargs;              /* positional arguments, in args[] */
    char **args;            /* borrowed from argv */
} cli_opts_t;

/* A subcommand: its name, the options it takes (ending with OPT_END),
 * its usage text, and how many positional arguments (-1: any). */
typedef struct opt_cmd {
    const char *name;
    const opt_id_t *ids;
    void (*usage)(FILE *f);
    int max_args;
} opt_cmd_t;

/* Defaults for every group; opt_free releases what parsing allocated. */
void opt_init(cli_opts_t *o);
void opt_free(cli_opts_t *o);

/* Parse argv (argv[0] is the command's name) into o.  CLI_EXIT_OK when
 * the command should go on or o->help is set (usage printed); otherwise
 * the exit code after one line on stderr.  o is initialised here. */
int opt_parse(const opt_cmd_t *cmd, int argc, char **argv, cli_opts_t *o);

/* One setter per group: parse arg (NULL for a flag) for option id into
 * the group; CCS_ERR_INVALID with a message naming the option. */
ccs_status_t opt_topo_set(opt_topo_t *t, opt_id_t id, const char *arg,
                          ccs_err_t *err);
ccs_status_t opt_synth_set(opt_synth_t *s, opt_id_t id, const char *arg,
                           ccs_err_t *err);
ccs_status_t opt_sim_set(opt_sim_t *m, opt_id_t id, const char *arg,
                         ccs_err_t *err);
ccs_status_t opt_out_set(opt_out_t *u, opt_id_t id, const char *arg,
                         ccs_err_t *err);

/* One validation rule per group. */

/* --topo is given (required) or may come from elsewhere (!required). */
ccs_status_t opt_topo_check(const opt_topo_t *t, bool required,
                            ccs_err_t *err);

/* Synthesis: `single` (synth, trees) wants one algorithm, one pipeline
 * factor and one chunk count; otherwise --algo is a list of known,
 * distinct names.  Options that only some algorithms read are refused
 * rather than dropped: the solver's knobs need milp among the algorithms,
 * --phase0 needs stragglar, --root a rooted collective. */
ccs_status_t opt_synth_check(const opt_synth_t *s, bool single,
                             ccs_err_t *err);

/* --straggler is never dropped silently: a note on stderr (unless -q)
 * names the algorithms of `algos` (a comma list) that ignore it; with
 * `simulated`, it adds that the simulator still delays the rank. */
void opt_straggler_note(const char *cmd, const cli_opts_t *o,
                        const char *algos, bool simulated);

/* Simulation: the straggler pairing rule, the same for every command.
 * A straggler delay needs a straggler rank (`straggler`, else `dflt`,
 * the rank the input names: sim's schedule; -1 none), and a straggler
 * rank given on the command line needs a delay.  *rank is the rank the
 * simulator delays (-1: none). */
ccs_status_t opt_sim_check(const opt_sim_t *m, int32_t straggler,
                           int32_t dflt, int32_t *rank, ccs_err_t *err);

/* A rank option ("--root", "--straggler") against the rank count. */
ccs_status_t opt_rank_check(const char *what, int32_t rank,
                            uint32_t nranks, ccs_err_t *err);

/* The algorithms that place their schedule around --straggler: true for
 * stragglar; the others ignore the rank. */
bool opt_algo_uses_straggler(const char *algo);

/* The sizes, or `dflt` parsed when --sizes was not given; *out borrowed
 * from o (freed by opt_free). */
ccs_status_t opt_sim_sizes(opt_sim_t *m, const char *dflt, ccs_err_t *err);

/* The checks of a command that synthesizes on a topology and simulates a
 * sweep of sizes (compare, tune): the topology, the algorithm list, the
 * straggler rule (the rank in *rank, -1 for none) and the sizes (default
 * `dflt_sizes`), in that order; the first failure is returned. */
ccs_status_t opt_check_sweep(cli_opts_t *o, const char *dflt_sizes,
                             int32_t *rank, ccs_err_t *err);

/* The topology of a sweep command (compare, tune), with the straggler
 * rank checked against its rank count: CLI_EXIT_OK and *out (owned by
 * the caller) or the exit code, the message printed, *out NULL. */
int opt_load_sweep_topo(const char *cmd, const cli_opts_t *o, int32_t rank,
                        topo_t **out);

/* The one place algo_params_t is filled from the options: pipeline factor
 * index 0 and chunk count index 0 (when given); the MILP's piece-size check
 * gets the simulator as its cost function. */
void opt_fill_algo_params(const cli_opts_t *o, algo_params_t *p);

/* The simulator's options: mode, element size, local bandwidth, and the
 * straggler `rank` delayed by --straggler-delay. */
void opt_fill_sim_opts(const cli_opts_t *o, int32_t rank, sim_opts_t *so);

#endif /* CCS_OPTIONS_H */
