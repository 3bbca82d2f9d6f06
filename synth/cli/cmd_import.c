/* cmd_import.c - `ccsynth import --msccl ALGO.xml -o FILE.ccs`: an MSCCL
 * algorithm as a schedule, checked as the executor does not check it
 * (deadlocks, FIFO order, limits, the collective's result), then verified
 * and written like any synthesized schedule (synth/msccl; docs/msccl.md). */
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "cli.h"
#include "commands.h"
#include "msccl.h"
#include "verify.h"

static void import_usage(FILE *f)
{
    fprintf(f,
"usage: ccsynth import --msccl ALGO.xml [-o FILE.ccs] [options]\n"
"\n"
"Read an MSCCL algorithm XML, check it (attributes, ranges, the executor's\n"
"limits, send/receive order per connection, dependency cycles), translate\n"
"it into a schedule, verify it symbolically (the collective's result on\n"
"every rank and chunk) and write it.  Without -o it only checks: an MSCCL\n"
"linter.  `ccsynth verify/show/sim/compare` work on the written file.\n"
"\n"
"      --msccl          the format (the only one; required)\n"
"  -o, --output FILE    the .ccs file to write\n"
"      --max-steps N    steps per thread block the executor runs (default\n"
"                       64; 256 for RCCL and the older msccl runtime)\n"
"      --no-limits      do not enforce the executor's limits\n"
"  -q, --quiet          print nothing on success\n"
"  -h, --help           this text\n"
"\n"
"exit codes: 0 ok, 3 malformed file, 4 deadlock or wrong result,\n"
"5 beyond the executor's limits, 1 internal error, 2 usage\n");
}

enum { OPT_MSCCL = 256, OPT_MAXSTEPS, OPT_NOLIMITS };

int cmd_import(int argc, char **argv)
{
    static const struct option longopts[] = {
        { "msccl", no_argument, NULL, OPT_MSCCL },
        { "output", required_argument, NULL, 'o' },
        { "max-steps", required_argument, NULL, OPT_MAXSTEPS },
        { "no-limits", no_argument, NULL, OPT_NOLIMITS },
        { "quiet", no_argument, NULL, 'q' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    const char *cmd = "import", *output = NULL, *path;
    msccl_import_opts_t o;
    msccl_import_info_t info;
    verify_report_t rep;
    ccs_sched_t *s = NULL;     /* owned */
    ccs_err_t err = { { 0 } };
    ccs_status_t st;
    bool msccl = false, quiet = false;
    long v;
    int c, rc;

    msccl_import_opts_init(&o);
    optind = 1;
    while ((c = getopt_long(argc, argv, "o:qh", longopts, NULL)) != -1) {
        switch (c) {
        case OPT_MSCCL: msccl = true; break;
        case 'o': output = optarg; break;
        case OPT_MAXSTEPS:
            if (!units_parse_int(optarg, 1, 1 << 20, &v))
                return cli_fail(cmd, CLI_EXIT_USAGE, "bad --max-steps '%s'",
                                optarg);
            o.max_tb_steps = (uint32_t)v;
            break;
        case OPT_NOLIMITS: o.check_limits = false; break;
        case 'q': quiet = true; break;
        case 'h': import_usage(stdout); return CLI_EXIT_OK;
        default:
            import_usage(stderr);
            return CLI_EXIT_USAGE;
        }
    }
    if (!msccl)
        return cli_fail(cmd, CLI_EXIT_USAGE, "say which format: --msccl "
                        "(the only one)");
    if (optind + 1 != argc)
        return cli_fail(cmd, CLI_EXIT_USAGE, "one XML file expected (usage: "
                        "ccsynth import --msccl ALGO.xml -o FILE.ccs)");
    path = argv[optind];
    st = msccl_import_file(path, &o, &s, &info, &err);
    if (st != CCS_OK) {
        rc = st == CCS_ERR_VERIFY ? CLI_EXIT_VERIFY
             : st == CCS_ERR_UNSUPPORTED ? CLI_EXIT_UNSUPPORTED
             : st == CCS_ERR_NOMEM ? CLI_EXIT_INTERNAL : CLI_EXIT_INPUT;
        return cli_fail(cmd, rc, "%s", ccs_err_msg(&err, st));
    }
    st = verify_sched(s, &rep, &err);
    if (st != CCS_OK) {
        rc = cli_fail(cmd, CLI_EXIT_VERIFY, "%s: the algorithm is wrong "
                      "(as laid out in ccsynth's lock-step schedule): %s",
                      path, ccs_err_msg(&err, st));
        goto cleanup;
    }
    if (output != NULL) {
        st = ccs_format_write_file(s, output, &err);
        if (st != CCS_OK) {
            rc = cli_fail_status(cmd, st, &err);
            goto cleanup;
        }
    }
    if (!quiet)
        printf("%s: ok (%s \"%s\", %u gpus, %u chunks per loop, %s, %u "
               "channel(s), %u thread blocks, %" PRIu64 " MSCCL steps -> "
               "%u schedule steps), verified%s%s\n", path,
               ccs_coll_str(s->coll), info.name, s->nranks,
               info.nchunksperloop, msccl_proto_str(info.proto),
               info.nchannels, info.ntbs, info.nsteps, s->nsteps,
               output ? " -> " : "", output ? output : "");
    rc = CLI_EXIT_OK;

cleanup:
    ccs_sched_destroy(s);
    return rc;
}
