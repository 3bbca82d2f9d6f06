/*
 * cmd_tune.c - `ccsynth tune`: per buffer-size range, the best algorithm
 * and chunking for one collective on one topology (TuCCL-style search,
 * synth/tune.h and docs/tuning.md), printed as a table, CSV or JSON, and
 * with --emit written as verified plans plus a tuning.json index.
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "sim.h"
#include "tune.h"

static void tune_usage(FILE *f)
{
    fprintf(f,
"usage: ccsynth tune --topo SPEC|FILE [options]\n"
"\n"
"Choose, per buffer-size range, the fastest configuration (algorithm x\n"
"pipeline factor x chunk count) of one collective on one topology, as\n"
"scored by the simulator on verified schedules.  The search prunes in\n"
"phases (docs/tuning.md); --full-grid scores every configuration.\n"
"\n"
"  -t, --topo SPEC|FILE     topology (required)\n"
"  -c, --coll COLL          collective (default allreduce)\n"
"  -a, --algos LIST         algorithms, comma-separated, in tie-breaking\n"
"                           order (default: all but milp, which is slow)\n"
"  -s, --sizes LIST         SIZE, LO:HI[:FACTOR] or a comma list\n"
"                           (default 1K:1G, doubling)\n"
"      --pipelines LIST     pipeline factors (default 1,2,4,8; 1 always)\n"
"      --chunks LIST|auto|none\n"
"                           explicit chunk counts to try where accepted;\n"
"                           auto (default) tries C0/2, C0/4, C0/8 of each\n"
"                           algorithm's default count C0; may be combined\n"
"                           as 'auto,6,12'\n"
"      --prune X            keep an algorithm at a size while within\n"
"                           (1+X) of the best there (default 0.25)\n"
"      --coarse K           phase 1 scores every K-th size (default 3)\n"
"      --full-grid          score every configuration at every size\n"
"      --straggler R        straggler scenario: rank R arrives late ...\n"
"      --straggler-delay D  ... at time D (e.g. 5ms)\n"
"      --type T             element type (default float32)\n"
"      --root R             root of reduce/broadcast (default 0)\n"
"  -m, --mode rank|barrier  simulator step semantics (default rank)\n"
"      --local-bw BW        cost of COPY/REDUCE_LOCAL (default: free)\n"
"      --alpha T, --bw BW   override every link's latency / bandwidth\n"
"      --json FILE          write the result as JSON ('-': stdout)\n"
"      --csv                print one CSV row per size instead of the table\n"
"      --emit DIR           write the chosen plans (.ccs, verified) and\n"
"                           DIR/tuning.json mapping size ranges to them\n"
"  -q, --quiet              no notes on stderr\n"
"  -h, --help               this text\n"
"\n"
"exit codes: 0 ok, 1 internal or I/O error, 2 usage, 3 bad input,\n"
"5 no algorithm can run the collective on the topology\n");
}

enum {
    OPT_PIPELINES = 256, OPT_CHUNKS, OPT_PRUNE, OPT_COARSE, OPT_FULL,
    OPT_STRAGGLER, OPT_DELAY, OPT_TYPE, OPT_ROOT, OPT_LOCAL_BW, OPT_ALPHA,
    OPT_BW, OPT_JSON, OPT_CSV, OPT_EMIT
};

/* "1,2,4" into out[max]; "auto" and "none" set *autop when autop != NULL.
 * False on junk, 0, or too many. */
static bool parse_list(const char *spec, uint32_t *out, uint32_t max,
                       uint32_t *n, bool *autop)
{
    char buf[256], *save = NULL, *tok;
    long v;

    if (strlen(spec) >= sizeof(buf))
        return false;
    strcpy(buf, spec);
    *n = 0;
    if (autop != NULL)
        *autop = false;
    for (tok = strtok_r(buf, ",", &save); tok != NULL;
         tok = strtok_r(NULL, ",", &save)) {
        if (autop != NULL && strcmp(tok, "auto") == 0) {
            *autop = true;
            continue;
        }
        if (autop != NULL && strcmp(tok, "none") == 0)
            continue;
        if (*n == max || !units_parse_int(tok, 1, CCS_MAX_CHUNKS, &v))
            return false;
        out[(*n)++] = (uint32_t)v;
    }
    return true;
}

int cmd_tune(int argc, char **argv)
{
    static const struct option longopts[] = {
        { "topo", required_argument, NULL, 't' },
        { "coll", required_argument, NULL, 'c' },
        { "algos", required_argument, NULL, 'a' },
        { "sizes", required_argument, NULL, 's' },
        { "mode", required_argument, NULL, 'm' },
        { "pipelines", required_argument, NULL, OPT_PIPELINES },
        { "chunks", required_argument, NULL, OPT_CHUNKS },
        { "prune", required_argument, NULL, OPT_PRUNE },
        { "coarse", required_argument, NULL, OPT_COARSE },
        { "full-grid", no_argument, NULL, OPT_FULL },
        { "straggler", required_argument, NULL, OPT_STRAGGLER },
        { "straggler-delay", required_argument, NULL, OPT_DELAY },
        { "type", required_argument, NULL, OPT_TYPE },
        { "root", required_argument, NULL, OPT_ROOT },
        { "local-bw", required_argument, NULL, OPT_LOCAL_BW },
        { "alpha", required_argument, NULL, OPT_ALPHA },
        { "bw", required_argument, NULL, OPT_BW },
        { "json", required_argument, NULL, OPT_JSON },
        { "csv", no_argument, NULL, OPT_CSV },
        { "emit", required_argument, NULL, OPT_EMIT },
        { "quiet", no_argument, NULL, 'q' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    const char *cmd = "tune";
    const char *topo_spec = NULL, *sizes_spec = "1K:1G", *algos_spec = NULL;
    const char *json = NULL, *emit = NULL;
    topo_opts_t topts = { 0, 0 };
    ccs_dtype_t dtype = CCS_FLOAT32;
    tune_opts_t o;
    topo_t *topo = NULL;            /* owned */
    tune_result_t *res = NULL;      /* owned */
    double *sizes = NULL;           /* owned */
    char *algos_copy = NULL;        /* owned; names[] point into it */
    const char *names[TUNE_MAX_ALGOS];
    uint32_t pipes[TUNE_MAX_PIPELINES], chunks[TUNE_MAX_CHUNKS];
    uint32_t nsizes = 0;
    ccs_err_t err = { { 0 } };
    ccs_status_t st;
    bool csv = false, quiet = false, have_strag = false, have_delay = false;
    int rc = CLI_EXIT_OK, c;
    long v;

    tune_opts_init(&o);
    optind = 1;
    while ((c = getopt_long(argc, argv, "t:c:a:s:m:qh", longopts, NULL)) !=
           -1) {
        switch (c) {
        case 't': topo_spec = optarg; break;
        case 'a': algos_spec = optarg; break;
        case 's': sizes_spec = optarg; break;
        case 'q': quiet = true; break;
        case 'h': tune_usage(stdout); return CLI_EXIT_OK;
        case 'c':
            if (ccs_coll_parse(optarg, &o.coll) != CCS_OK)
                return cli_fail(cmd, CLI_EXIT_USAGE,
                                "unknown collective '%s'", optarg);
            break;
        case 'm':
            if (sim_mode_parse(optarg, &o.mode) != CCS_OK)
                return cli_fail(cmd, CLI_EXIT_USAGE,
                                "bad --mode '%s' (rank or barrier)", optarg);
            break;
        case OPT_PIPELINES:
            if (!parse_list(optarg, pipes, TUNE_MAX_PIPELINES - 1,
                            &o.npipelines, NULL) || o.npipelines == 0)
                return cli_fail(cmd, CLI_EXIT_USAGE, "bad --pipelines '%s' "
                                "(e.g. 1,2,4,8; at most %d)", optarg,
                                TUNE_MAX_PIPELINES - 1);
            for (uint32_t j = 0; j < o.npipelines; j++)
                if (pipes[j] > 1024)
                    return cli_fail(cmd, CLI_EXIT_USAGE, "bad --pipelines "
                                    "'%s' (factors 1..1024)", optarg);
            o.pipelines = pipes;
            break;
        case OPT_CHUNKS:
            if (!parse_list(optarg, chunks, TUNE_MAX_CHUNKS, &o.nchunks,
                            &o.chunks_auto))
                return cli_fail(cmd, CLI_EXIT_USAGE, "bad --chunks '%s' "
                                "(e.g. auto, none or 4,8; at most %d)",
                                optarg, TUNE_MAX_CHUNKS);
            o.chunks = chunks;
            break;
        case OPT_PRUNE:
            if (!units_parse_double(optarg, &o.prune) || !(o.prune >= 0))
                return cli_fail(cmd, CLI_EXIT_USAGE,
                                "bad --prune '%s' (a number >= 0)", optarg);
            break;
        case OPT_COARSE:
            if (!units_parse_int(optarg, 1, 1 << 20, &v))
                return cli_fail(cmd, CLI_EXIT_USAGE, "bad --coarse '%s'",
                                optarg);
            o.coarse_stride = (uint32_t)v;
            break;
        case OPT_FULL: o.full_grid = true; break;
        case OPT_STRAGGLER:
            if (!units_parse_int(optarg, 0, CCS_MAX_RANKS - 1, &v))
                return cli_fail(cmd, CLI_EXIT_USAGE, "bad --straggler '%s'",
                                optarg);
            o.straggler = (int32_t)v;
            have_strag = true;
            break;
        case OPT_DELAY:
            if (!units_parse_time(optarg, &o.straggler_delay_s) ||
                o.straggler_delay_s < 0)
                return cli_fail(cmd, CLI_EXIT_USAGE,
                                "bad --straggler-delay '%s'", optarg);
            have_delay = true;
            break;
        case OPT_TYPE:
            if (ccs_dtype_parse(optarg, &dtype) != CCS_OK)
                return cli_fail(cmd, CLI_EXIT_USAGE, "unknown --type '%s'",
                                optarg);
            break;
        case OPT_ROOT:
            if (!units_parse_int(optarg, 0, CCS_MAX_RANKS - 1, &v))
                return cli_fail(cmd, CLI_EXIT_USAGE, "bad --root '%s'",
                                optarg);
            o.root = (int32_t)v;
            break;
        case OPT_LOCAL_BW:
            if (!units_parse_bw(optarg, &o.local_bw_Bps))
                return cli_fail(cmd, CLI_EXIT_USAGE, "bad --local-bw '%s'",
                                optarg);
            break;
        case OPT_ALPHA:
            if (!units_parse_time(optarg, &topts.alpha_s))
                return cli_fail(cmd, CLI_EXIT_USAGE, "bad --alpha '%s'",
                                optarg);
            break;
        case OPT_BW:
            if (!units_parse_bw(optarg, &topts.bw_Bps))
                return cli_fail(cmd, CLI_EXIT_USAGE, "bad --bw '%s'", optarg);
            break;
        case OPT_JSON: json = optarg; break;
        case OPT_CSV: csv = true; break;
        case OPT_EMIT: emit = optarg; break;
        default:
            tune_usage(stderr);
            return CLI_EXIT_USAGE;
        }
    }
    if (optind < argc)
        return cli_fail(cmd, CLI_EXIT_USAGE, "unexpected argument '%s'",
                        argv[optind]);
    if (have_strag != have_delay)
        return cli_fail(cmd, CLI_EXIT_USAGE,
                        "--straggler and --straggler-delay go together");
    if (algos_spec != NULL) {
        char *save = NULL, *tok;
        algos_copy = strdup(algos_spec);
        if (algos_copy == NULL)
            return cli_fail(cmd, CLI_EXIT_INTERNAL, "out of memory");
        for (tok = strtok_r(algos_copy, ",", &save); tok != NULL;
             tok = strtok_r(NULL, ",", &save)) {
            if (o.nalgos == TUNE_MAX_ALGOS) {
                rc = cli_fail(cmd, CLI_EXIT_USAGE, "more than %d algorithms",
                              TUNE_MAX_ALGOS);
                goto cleanup;
            }
            names[o.nalgos++] = tok;
        }
        if (o.nalgos == 0) {
            rc = cli_fail(cmd, CLI_EXIT_USAGE, "--algos is empty");
            goto cleanup;
        }
        o.algos = names;
    }
    st = sim_parse_sizes(sizes_spec, &sizes, &nsizes, &err);
    if (st != CCS_OK) {
        rc = cli_fail_status(cmd, st, &err);
        goto cleanup;
    }
    o.sizes = sizes;
    o.nsizes = nsizes;
    o.elem_bytes = (uint32_t)ccs_dtype_size(dtype);
    o.topo_spec = topo_spec;
    o.report = quiet ? NULL : stderr;
    rc = cli_load_topo(cmd, topo_spec, &topts, &topo);
    if (rc != CLI_EXIT_OK)
        goto cleanup;
    if (o.straggler >= topo->ngpus) {
        rc = cli_fail(cmd, CLI_EXIT_USAGE, "--straggler %d out of range "
                      "0..%d", o.straggler, topo->ngpus - 1);
        goto cleanup;
    }

    st = tune_run(topo, &o, &res, &err);
    if (st != CCS_OK) {
        rc = cli_fail_status(cmd, st, &err);
        goto cleanup;
    }
    if (json != NULL && strcmp(json, "-") == 0)
        st = tune_write_json(res, stdout, &err);
    else if (csv)
        st = tune_write_csv(res, stdout, &err);
    else
        st = tune_write_table(res, stdout, &err);
    if (st == CCS_OK && json != NULL && strcmp(json, "-") != 0)
        st = tune_save_json(res, json, &err);
    if (st == CCS_OK && emit != NULL)
        st = tune_emit(res, emit, &err);
    if (st == CCS_OK && fflush(stdout) != 0)
        st = ccs_err_set(&err, CCS_ERR_IO, "write error on stdout");
    if (st != CCS_OK) {
        rc = cli_fail_status(cmd, st, &err);
        goto cleanup;
    }
    if (emit != NULL && !quiet)
        fprintf(stderr, "ccsynth tune: wrote %u plan(s) and tuning.json to "
                "%s\n", res->nconfigs, emit);

cleanup:
    tune_result_destroy(res);
    topo_destroy(topo);
    free(sizes);
    free(algos_copy);
    return rc;
}
