/* cmd_export.c - `ccsynth export --msccl FILE.ccs -o ALGO.xml`: a verified
 * schedule as an MSCCL algorithm XML (synth/msccl; docs/msccl.md). */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "msccl.h"
#include "options.h"
#include "sim_proto.h"
#include "units.h"
#include "verify.h"

static void export_usage(FILE *f)
{
    fprintf(f,
"usage: ccsynth export --msccl FILE.ccs -o ALGO.xml [options]\n"
"\n"
"Write a schedule as an MSCCL algorithm XML that msccl-executor-nccl and\n"
"RCCL load from MSCCL_ALGO_DIR (docs/msccl.md).  The schedule is verified\n"
"first; the program stays within the executor's limits (spread over more\n"
"channels when needed) or the export says which limit and what to do.\n"
"\n"
"      --msccl            the format (the only one; required)\n"
"  -o, --output FILE      the XML to write (- for stdout)\n"
"      --proto P          simple, ll or ll128 (default: the plan's\n"
"                         proto=, else simple)\n"
"      --nchannels N      spread over at least N channels (default: as\n"
"                         few as the limits allow)\n"
"      --channels C       run as C replicas on C channel sets, each moving\n"
"                         1/C of every transfer (default: the plan's\n"
"                         channels=, else 1; fewer when the limits allow\n"
"                         fewer, said on stderr)\n"
"      --min-bytes B      smallest call size that uses it (default 0)\n"
"      --max-bytes B      largest (default 0: no upper bound)\n"
"      --inplace auto|0|1 declare in-place use (auto: when the program is\n"
"                         also right with input and output aliased)\n"
"      --outofplace 0|1   declare out-of-place use (default 1)\n"
"      --order steps|data keep the schedule's step order on every rank\n"
"                         (default; falls back to data when the limits\n"
"                         do not allow it) or only its data dependencies\n"
"      --max-steps N      steps per thread block (default 64; 256 for\n"
"                         RCCL and the older msccl runtime)\n"
"      --max-tbs N        thread blocks per GPU (default %d: they must all\n"
"                         be resident, one per SM; the SM count of the\n"
"                         GPU it runs on, e.g. 132 on an H100 SXM)\n"
"      --name NAME        the algo name attribute\n"
"  -q, --quiet            print nothing on success\n"
"  -h, --help             this text\n", MSCCL_RESIDENT_TBS);
}

/* --proto .. --name: the text the option layer collected, into o. */
static int export_opts(const char *cmd, const cli_opts_t *co,
                       msccl_export_opts_t *o)
{
    const char *a;
    double d;
    long v;

    /* --proto is the simulator's option (one parser everywhere); MSCCL
     * runs three of its protocols. */
    if (co->sim.proto_given) {
        const char *name = co->sim.proto == SIM_PROTO_LL ? "LL"
                           : co->sim.proto == SIM_PROTO_LL128 ? "LL128"
                           : co->sim.proto == SIM_PROTO_SIMPLE ? "Simple"
                           : NULL;
        if (name == NULL || co->sim.proto_auto)
            return cli_fail(cmd, CLI_EXIT_USAGE, "--proto %s: MSCCL runs "
                            "ll, ll128 or simple",
                            co->sim.proto_auto ? "auto"
                            : sim_proto_str(co->sim.proto));
        (void)msccl_proto_parse(name, &o->proto);
    }
    if ((a = co->own[OPT_NCHANNELS]) != NULL) {
        if (!units_parse_int(a, 1, MSCCL_MAX_CHANNELS, &v))
            return cli_fail(cmd, CLI_EXIT_USAGE, "bad --nchannels '%s' "
                            "(1..%d)", a, MSCCL_MAX_CHANNELS);
        o->min_channels = (uint32_t)v;
    }
    for (int k = 0; k < 2; k++) {
        opt_id_t id = k == 0 ? OPT_MIN_BYTES : OPT_MAX_BYTES;

        if ((a = co->own[id]) == NULL)
            continue;
        if (!units_parse_size(a, &d) || d < 0 || d > 9.0e18)
            return cli_fail(cmd, CLI_EXIT_USAGE, "bad --%s '%s' (a size "
                            ">= 0, e.g. 1M)", opt_name(id), a);
        if (id == OPT_MIN_BYTES)
            o->min_bytes = (uint64_t)d;
        else
            o->max_bytes = (uint64_t)d;
    }
    if ((a = co->own[OPT_INPLACE]) != NULL) {
        if (strcmp(a, "auto") == 0)
            o->inplace = -1;
        else if (strcmp(a, "0") == 0 || strcmp(a, "1") == 0)
            o->inplace = a[0] - '0';
        else
            return cli_fail(cmd, CLI_EXIT_USAGE, "bad --inplace '%s' (auto, "
                            "0 or 1)", a);
    }
    if ((a = co->own[OPT_OUTOFPLACE]) != NULL) {
        if (strcmp(a, "0") != 0 && strcmp(a, "1") != 0)
            return cli_fail(cmd, CLI_EXIT_USAGE, "bad --outofplace '%s' (0 "
                            "or 1)", a);
        o->outofplace = a[0] - '0';
    }
    if ((a = co->own[OPT_MAX_STEPS]) != NULL) {
        if (!units_parse_int(a, 1, 1 << 20, &v))
            return cli_fail(cmd, CLI_EXIT_USAGE, "bad --max-steps '%s' (1 "
                            "or more)", a);
        o->max_tb_steps = (uint32_t)v;
    }
    if ((a = co->own[OPT_MAX_TBS]) != NULL) {
        if (!units_parse_int(a, 1, MSCCL_MAX_TBS, &v))
            return cli_fail(cmd, CLI_EXIT_USAGE, "bad --max-tbs '%s' (1..%d, "
                            "the executor's thread-block ids)", a,
                            MSCCL_MAX_TBS);
        o->max_tbs = (uint32_t)v;
    }
    if ((a = co->own[OPT_NAME]) != NULL) {
        if (a[0] == '\0' || strlen(a) > MSCCL_MAX_STR)
            return cli_fail(cmd, CLI_EXIT_USAGE, "bad --name (1..%d "
                            "characters)", MSCCL_MAX_STR);
        o->name = a;
    }
    if ((a = co->own[OPT_ORDER]) != NULL) {
        if (strcmp(a, "steps") == 0)
            o->order_steps = 1;
        else if (strcmp(a, "data") == 0)
            o->order_steps = 0;
        else
            return cli_fail(cmd, CLI_EXIT_USAGE, "bad --order '%s' (steps "
                            "or data)", a);
    }
    return CLI_EXIT_OK;
}

/* The protocol and channel count a plan was made or tuned for (its
 * proto= and channels= params) travel into the XML unless the command
 * line names them. */
static void plan_proto_channels(const ccs_sched_t *s, bool proto_given,
                                bool nch_given, msccl_export_opts_t *o)
{
    static const char *const names[][2] = {
        { "ll", "LL" }, { "ll128", "LL128" }, { "simple", "Simple" },
    };
    char v[16];
    long c;

    if (!proto_given && sim_params_get(s->params, "proto", v, sizeof(v))) {
        for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
            if (strcmp(v, names[i][0]) == 0)
                (void)msccl_proto_parse(names[i][1], &o->proto);
    }
    if (!nch_given && sim_params_get(s->params, "channels", v, sizeof(v)) &&
        units_parse_int(v, 1, MSCCL_MAX_CHANNELS, &c))
        o->channels = (uint32_t)c;
}

int cmd_export(int argc, char **argv)
{
    static const opt_id_t ids[] = {
        OPT_MSCCL, OPT_OUTPUT, OPT_QUIET, OPT_PROTO, OPT_NCHANNELS,
        OPT_MIN_BYTES, OPT_MAX_BYTES, OPT_INPLACE, OPT_OUTOFPLACE,
        OPT_MAX_STEPS, OPT_MAX_TBS, OPT_NAME, OPT_ORDER, OPT_CHANNELS,
        OPT_END
    };
    static const opt_cmd_t spec = { "export", ids, export_usage, -1 };
    const char *cmd = "export", *output, *input;
    cli_opts_t co;
    msccl_export_opts_t o;
    msccl_export_info_t info;
    ccs_sched_t *s = NULL;     /* owned */
    char *xml = NULL;          /* owned */
    size_t len = 0;
    ccs_err_t err = { { 0 } };
    ccs_status_t st;
    int rc;

    msccl_export_opts_init(&o);
    rc = opt_parse(&spec, argc, argv, &co);
    if (rc != CLI_EXIT_OK || co.help)
        goto cleanup;
    rc = export_opts(cmd, &co, &o);
    if (rc != CLI_EXIT_OK)
        goto cleanup;
    if (co.synth.nchannels > 1 ||
        (co.synth.nchannels == 1 && co.synth.channels[0] > MSCCL_MAX_CHANNELS)) {
        rc = cli_fail(cmd, CLI_EXIT_USAGE, "--channels takes one count, "
                      "1..%d (the executor's channels)", MSCCL_MAX_CHANNELS);
        goto cleanup;
    }
    if (co.synth.nchannels == 1)
        o.channels = co.synth.channels[0];
    output = co.out.output;
    if (co.own[OPT_MSCCL] == NULL) {
        rc = cli_fail(cmd, CLI_EXIT_USAGE, "say which format: --msccl "
                      "(the only one)");
        goto cleanup;
    }
    if (co.nargs != 1) {
        rc = cli_fail(cmd, CLI_EXIT_USAGE, "one schedule file expected "
                      "(usage: ccsynth export --msccl FILE.ccs -o "
                      "ALGO.xml)");
        goto cleanup;
    }
    input = co.args[0];
    if (output == NULL) {
        rc = cli_fail(cmd, CLI_EXIT_USAGE, "-o ALGO.xml is required");
        goto cleanup;
    }
    rc = cli_read_sched(cmd, input, &s);
    if (rc != CLI_EXIT_OK)
        goto cleanup;
    plan_proto_channels(s, co.sim.proto_given, co.synth.nchannels > 0, &o);
    /* Verify before writing: a wrong schedule would hang or corrupt data
     * on the GPU, where nothing checks it. */
    st = verify_sched(s, NULL, &err);
    if (st != CCS_OK) {
        rc = cli_fail_verify(cmd, st, &err, "%s: verification failed", input);
        goto cleanup;
    }
    if (strcmp(output, "-") == 0) {
        st = msccl_export(s, &o, &xml, &len, &info, &err);
        if (st == CCS_OK && fwrite(xml, 1, len, stdout) != len)
            st = ccs_err_set(&err, CCS_ERR_IO, "write error on stdout");
    } else {
        st = msccl_export_file(s, &o, output, &info, &err);
    }
    if (st != CCS_OK) {
        rc = cli_fail_status(cmd, st, &err);
        goto cleanup;
    }
    if (info.channels < info.channels_asked)
        fprintf(stderr, "export: %u channels asked, %u written: %s\n",
                info.channels_asked, info.channels, info.channels_why);
    if (!co.out.quiet)
        fprintf(stderr, "export: %s %s, %u ranks -> %s: %u channel(s), up "
                "to %u thread blocks per gpu and %u steps per thread block, "
                "%" PRIu64 " steps (%" PRIu64 " fused, %" PRIu64 " nops), "
                "%" PRIu64 " dependencies, %s order, inplace=%d "
                "outofplace=%d\n",
                s->algo, ccs_coll_str(s->coll), s->nranks, output,
                info.nchannels, info.max_tbs_per_rank, info.max_tb_steps,
                info.nsteps, info.nfused, info.nnops, info.ndeps,
                info.step_order ? "step" : "data", info.inplace,
                info.outofplace);
    rc = CLI_EXIT_OK;

cleanup:
    free(xml);
    ccs_sched_destroy(s);
    opt_free(&co);
    return rc;
}
