/*
 * cmd_tune.c - `ccsynth tune`: per buffer-size range, the best algorithm
 * and chunking for one collective on one topology (TuCCL-style search,
 * synth/tune.h and docs/tuning.md), printed as a table, CSV or JSON, and
 * with --emit written as verified plans plus a tuning.json index.
 */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "options.h"
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
"  -a, --algo(s) LIST       algorithms, comma-separated, in tie-breaking\n"
"                           order (default: all but milp, which is slow)\n"
"  -s, --sizes LIST         SIZE, LO:HI[:FACTOR] or a comma list\n"
"                           (default 1K:1G, doubling)\n"
"      --pipeline LIST      pipeline factors (default 1,2,4,8; 1 always;\n"
"                           --pipelines is the same option)\n"
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
"      --proto P            auto (default: every configuration at its\n"
"                           best of ll, ll128, simple per size; the\n"
"                           winner's protocol travels in its plan), or\n"
"                           one of ll, ll128, simple, ideal\n"
"      --channels C         run every plan on C channels (default: each on\n"
"                           the fewest, up to 32, that NCCL's per-channel\n"
"                           caps do not slow; the count travels in its\n"
"                           plan as channels=)\n"
"      --alpha T, --bw BW   override every link's latency / bandwidth\n"
"  -j, --json | --csv       print the result as JSON, or one CSV row per\n"
"                           size, instead of the table\n"
"  -o, --output FILE        also write the result as JSON to FILE\n"
"      --emit DIR           write the chosen plans (.ccs, verified) and\n"
"                           DIR/tuning.json mapping size ranges to them\n"
"      --msccl              with --emit, also DIR/msccl/: one MSCCL XML per\n"
"                           size range, usable as MSCCL_ALGO_DIR (the\n"
"                           tuner's earlier XMLs there are replaced; any\n"
"                           other XML there is refused)\n"
"  -q, --quiet              no notes on stderr\n"
"  -h, --help               this text\n"
"\n"
"Every size also gets the nccl baseline (the best of NCCL's algorithms\n"
"and protocols there); 'vs nccl' is its time over the tuned choice's.\n"
"NCCL's algorithms (nccl-ring, nccl-tree, nvls) are not candidates\n"
"unless named.\n"
"\n"
"Times need a unit (s, ms, us, ns): --straggler-delay 20 is refused.\n"
"\n"
"exit codes: 0 ok, 1 internal or I/O error, 2 usage, 3 bad input,\n"
"5 no algorithm can run the collective on the topology\n");
}

/* The option layer's lists hand over to the tuner as they are. */
_Static_assert(OPT_MAX_LIST - 1 <= TUNE_MAX_PIPELINES - 1 &&
               OPT_MAX_LIST <= TUNE_MAX_CHUNKS,
               "a parsed list must fit the tuner's arrays");

int cmd_tune(int argc, char **argv)
{
    static const opt_id_t ids[] = {
        OPT_TOPO, OPT_ALPHA, OPT_BW, OPT_ALGO, OPT_COLL, OPT_ROOT,
        OPT_STRAGGLER, OPT_PIPELINE, OPT_CHUNKS, OPT_SIZES, OPT_TYPE,
        OPT_MODE, OPT_DELAY, OPT_LOCAL_BW, OPT_OUTPUT, OPT_JSON, OPT_CSV,
        OPT_QUIET, OPT_PRUNE, OPT_COARSE, OPT_FULL_GRID, OPT_EMIT, OPT_PROTO,
        OPT_MSCCL, OPT_CHANNELS,
        OPT_END
    };
    static const opt_cmd_t spec = { "tune", ids, tune_usage, 0 };
    const char *cmd = "tune";
    const char *output = NULL, *emit = NULL;
    cli_opts_t co;
    tune_opts_t o;
    topo_t *topo = NULL;            /* owned */
    tune_result_t *res = NULL;      /* owned */
    char *algos_copy = NULL;        /* owned; names[] point into it */
    const char *names[TUNE_MAX_ALGOS];
    ccs_err_t err = { { 0 } };
    ccs_status_t st;
    bool quiet = false, msccl = false;
    int rc = CLI_EXIT_OK;
    int32_t rank = -1;
    long v;

    tune_opts_init(&o);
    rc = opt_parse(&spec, argc, argv, &co);
    if (rc != CLI_EXIT_OK || co.help)
        goto cleanup;
    st = opt_check_sweep(&co, "1K:1G", &rank, &err);
    if (st != CCS_OK) {
        rc = cli_fail_status(cmd, st, &err);
        goto cleanup;
    }
    if (co.out.fmt == OPT_FMT_DOT) {
        rc = cli_fail(cmd, CLI_EXIT_USAGE, "--dot: tune prints a table, "
                      "--csv or --json");
        goto cleanup;
    }
    /* the command's own options */
    if (co.own[OPT_PRUNE] != NULL &&
        (!units_parse_double(co.own[OPT_PRUNE], &o.prune) || !(o.prune >= 0))) {
        rc = cli_fail(cmd, CLI_EXIT_USAGE, "bad --prune '%s' (a number >= 0)",
                      co.own[OPT_PRUNE]);
        goto cleanup;
    }
    if (co.own[OPT_COARSE] != NULL) {
        if (!units_parse_int(co.own[OPT_COARSE], 1, 1 << 20, &v)) {
            rc = cli_fail(cmd, CLI_EXIT_USAGE, "bad --coarse '%s' (1 or "
                          "more)", co.own[OPT_COARSE]);
            goto cleanup;
        }
        o.coarse_stride = (uint32_t)v;
    }
    o.full_grid = co.own[OPT_FULL_GRID] != NULL;
    emit = co.own[OPT_EMIT];
    msccl = co.own[OPT_MSCCL] != NULL;
    if (msccl && emit == NULL) {
        rc = cli_fail(cmd, CLI_EXIT_USAGE, "--msccl needs --emit DIR: the "
                      "XMLs go to DIR/msccl/");
        goto cleanup;
    }
    output = co.out.output;
    quiet = co.out.quiet;

    if (co.synth.algo != NULL)
        opt_straggler_note(cmd, &co, co.synth.algo, true);
    o.coll = co.synth.coll;
    o.root = co.synth.root;
    o.straggler = rank;
    o.straggler_delay_s = rank >= 0 ? co.sim.delay_s : 0;
    o.mode = co.sim.mode;
    o.local_bw_Bps = co.sim.local_bw_Bps;
    o.proto = co.sim.proto;     /* PLAN (auto) unless --proto names one */
    o.channels = co.synth.nchannels > 0 ? co.synth.channels[0] : 0;
    o.elem_bytes = (uint32_t)ccs_dtype_size(co.sim.dtype);
    if (co.synth.npipeline > 0) {
        o.pipelines = co.synth.pipeline;
        o.npipelines = co.synth.npipeline;
    }
    if (co.synth.chunks_given) {
        o.chunks = co.synth.chunks;
        o.nchunks = co.synth.nchunks;
        o.chunks_auto = co.synth.chunks_auto;
    }
    if (co.synth.algo != NULL) {
        char *save = NULL, *tok;
        algos_copy = strdup(co.synth.algo);
        if (algos_copy == NULL) {
            rc = cli_fail(cmd, CLI_EXIT_INTERNAL, "out of memory");
            goto cleanup;
        }
        for (tok = strtok_r(algos_copy, ",", &save); tok != NULL;
             tok = strtok_r(NULL, ",", &save)) {
            if (o.nalgos == TUNE_MAX_ALGOS) {
                rc = cli_fail(cmd, CLI_EXIT_USAGE, "more than %d algorithms",
                              TUNE_MAX_ALGOS);
                goto cleanup;
            }
            names[o.nalgos++] = tok;
        }
        o.algos = names;
    }
    o.sizes = co.sim.sizes;
    o.nsizes = co.sim.nsizes;
    o.topo_spec = co.topo.spec;
    o.report = quiet ? NULL : stderr;
    rc = opt_load_sweep_topo(cmd, &co, o.straggler, &topo);
    if (rc != CLI_EXIT_OK)
        goto cleanup;

    st = tune_run(topo, &o, &res, &err);
    if (st != CCS_OK) {
        rc = cli_fail_status(cmd, st, &err);
        goto cleanup;
    }
    if (co.out.fmt == OPT_FMT_JSON)
        st = tune_write_json(res, stdout, &err);
    else if (co.out.fmt == OPT_FMT_CSV)
        st = tune_write_csv(res, stdout, &err);
    else
        st = tune_write_table(res, stdout, &err);
    if (st == CCS_OK && output != NULL)
        st = tune_save_json(res, output, &err);
    /* MSCCL's directory first: its refusal of a foreign XML then leaves
     * DIR as it was. */
    if (st == CCS_OK && msccl)
        st = tune_emit_msccl(res, emit, &err);
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
    if (msccl && !quiet)
        fprintf(stderr, "ccsynth tune: wrote %u MSCCL XML(s), one per size "
                "range, to %s/msccl\n", res->nranges, emit);

cleanup:
    tune_result_destroy(res);
    topo_destroy(topo);
    opt_free(&co);
    free(algos_copy);
    return rc;
}
