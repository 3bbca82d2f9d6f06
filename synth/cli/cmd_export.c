/* cmd_export.c - `ccsynth export --msccl FILE.ccs -o ALGO.xml`: a verified
 * schedule as an MSCCL algorithm XML (synth/msccl; docs/msccl.md). */
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "msccl.h"
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
"      --proto P          Simple (default), LL or LL128\n"
"      --nchannels N      spread over at least N channels (default: as\n"
"                         few as the limits allow)\n"
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
"      --name NAME        the algo name attribute\n"
"  -q, --quiet            print nothing on success\n"
"  -h, --help             this text\n");
}

enum {
    OPT_MSCCL = 256, OPT_PROTO, OPT_NCH, OPT_MINB, OPT_MAXB, OPT_INPLACE,
    OPT_OOP, OPT_MAXSTEPS, OPT_NAME, OPT_ORDER
};

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
        o->min_channels = (uint32_t)c;
}

int cmd_export(int argc, char **argv)
{
    static const struct option longopts[] = {
        { "msccl", no_argument, NULL, OPT_MSCCL },
        { "output", required_argument, NULL, 'o' },
        { "proto", required_argument, NULL, OPT_PROTO },
        { "nchannels", required_argument, NULL, OPT_NCH },
        { "min-bytes", required_argument, NULL, OPT_MINB },
        { "max-bytes", required_argument, NULL, OPT_MAXB },
        { "inplace", required_argument, NULL, OPT_INPLACE },
        { "outofplace", required_argument, NULL, OPT_OOP },
        { "max-steps", required_argument, NULL, OPT_MAXSTEPS },
        { "name", required_argument, NULL, OPT_NAME },
        { "order", required_argument, NULL, OPT_ORDER },
        { "quiet", no_argument, NULL, 'q' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    const char *cmd = "export", *output = NULL;
    msccl_export_opts_t o;
    msccl_export_info_t info;
    ccs_sched_t *s = NULL;     /* owned */
    char *xml = NULL;          /* owned */
    size_t len = 0;
    ccs_err_t err = { { 0 } };
    ccs_status_t st;
    bool msccl = false, quiet = false, proto_given = false, nch_given = false;
    double d;
    long v;
    int c, rc;

    msccl_export_opts_init(&o);
    optind = 1;
    while ((c = getopt_long(argc, argv, "o:qh", longopts, NULL)) != -1) {
        switch (c) {
        case OPT_MSCCL: msccl = true; break;
        case 'o': output = optarg; break;
        case OPT_PROTO:
            proto_given = true;
            if (msccl_proto_parse(optarg, &o.proto) != CCS_OK)
                return cli_fail(cmd, CLI_EXIT_USAGE, "bad --proto '%s' "
                                "(Simple, LL or LL128)", optarg);
            break;
        case OPT_NCH:
            if (!units_parse_int(optarg, 1, MSCCL_MAX_CHANNELS, &v))
                return cli_fail(cmd, CLI_EXIT_USAGE, "bad --nchannels '%s' "
                                "(1..%d)", optarg, MSCCL_MAX_CHANNELS);
            o.min_channels = (uint32_t)v;
            nch_given = true;
            break;
        case OPT_MINB:
        case OPT_MAXB:
            if (!units_parse_size(optarg, &d) || d < 0 || d > 9.0e18)
                return cli_fail(cmd, CLI_EXIT_USAGE, "bad %s '%s'",
                                c == OPT_MINB ? "--min-bytes" : "--max-bytes",
                                optarg);
            if (c == OPT_MINB)
                o.min_bytes = (uint64_t)d;
            else
                o.max_bytes = (uint64_t)d;
            break;
        case OPT_INPLACE:
            if (strcmp(optarg, "auto") == 0)
                o.inplace = -1;
            else if (strcmp(optarg, "0") == 0 || strcmp(optarg, "1") == 0)
                o.inplace = optarg[0] - '0';
            else
                return cli_fail(cmd, CLI_EXIT_USAGE, "bad --inplace '%s' "
                                "(auto, 0 or 1)", optarg);
            break;
        case OPT_OOP:
            if (strcmp(optarg, "0") != 0 && strcmp(optarg, "1") != 0)
                return cli_fail(cmd, CLI_EXIT_USAGE, "bad --outofplace '%s' "
                                "(0 or 1)", optarg);
            o.outofplace = optarg[0] - '0';
            break;
        case OPT_MAXSTEPS:
            if (!units_parse_int(optarg, 1, 1 << 20, &v))
                return cli_fail(cmd, CLI_EXIT_USAGE, "bad --max-steps '%s'",
                                optarg);
            o.max_tb_steps = (uint32_t)v;
            break;
        case OPT_NAME: o.name = optarg; break;
        case OPT_ORDER:
            if (strcmp(optarg, "steps") == 0)
                o.order_steps = 1;
            else if (strcmp(optarg, "data") == 0)
                o.order_steps = 0;
            else
                return cli_fail(cmd, CLI_EXIT_USAGE, "bad --order '%s' "
                                "(steps or data)", optarg);
            break;
        case 'q': quiet = true; break;
        case 'h': export_usage(stdout); return CLI_EXIT_OK;
        default:
            export_usage(stderr);
            return CLI_EXIT_USAGE;
        }
    }
    if (!msccl)
        return cli_fail(cmd, CLI_EXIT_USAGE, "say which format: --msccl "
                        "(the only one)");
    if (optind + 1 != argc)
        return cli_fail(cmd, CLI_EXIT_USAGE, "one schedule file expected "
                        "(usage: ccsynth export --msccl FILE.ccs -o "
                        "ALGO.xml)");
    if (output == NULL)
        return cli_fail(cmd, CLI_EXIT_USAGE, "-o ALGO.xml is required");
    rc = cli_read_sched(cmd, argv[optind], &s);
    if (rc != CLI_EXIT_OK)
        return rc;
    plan_proto_channels(s, proto_given, nch_given, &o);
    /* Verify before writing: a wrong schedule would hang or corrupt data
     * on the GPU, where nothing checks it. */
    st = verify_sched(s, NULL, &err);
    if (st != CCS_OK) {
        rc = cli_fail(cmd, CLI_EXIT_VERIFY, "%s: verification failed: %s",
                      argv[optind], ccs_err_msg(&err, st));
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
    if (!quiet)
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
    return rc;
}
