/* cmd_import.c - `ccsynth import --msccl ALGO.xml -o FILE.ccs`: an MSCCL
 * algorithm as a schedule, checked as the executor does not check it
 * (deadlocks, FIFO order, limits, the collective's result), then verified
 * and written like any synthesized schedule (synth/msccl; docs/msccl.md). */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "cli.h"
#include "commands.h"
#include "json.h"
#include "msccl.h"
#include "options.h"
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
"  -j, --json           the result as JSON on stdout (with the size\n"
"                       window, in-place modes and counts)\n"
"      --max-steps N    steps per thread block the executor runs (default\n"
"                       64; 256 for RCCL and the older msccl runtime)\n"
"      --max-tbs N      thread blocks per GPU (default %d: they must all\n"
"                       be resident, one per SM; e.g. 132 on an H100 SXM)\n"
"      --no-limits      do not enforce the executor's limits\n"
"  -q, --quiet          print nothing on success\n"
"  -h, --help           this text\n"
"\n"
"exit codes: 0 ok, 3 malformed file, 4 deadlock or wrong result,\n"
"5 beyond the executor's limits, 1 internal error, 2 usage\n",
            MSCCL_RESIDENT_TBS);
}

/* What the text line says, and the size window MSCCL picks the file for
 * (max_bytes 0: no upper bound), for scripts that check a directory. */
static void print_json(const char *path, const char *output,
                       const ccs_sched_t *s, const msccl_import_info_t *info)
{
    json_w_t w;

    json_w_init(&w, stdout, 2);
    json_w_begin_object(&w);
    json_w_key(&w, "file");
    json_w_str(&w, path);
    json_w_key(&w, "ok");
    json_w_bool(&w, true);
    json_w_key(&w, "name");
    json_w_str(&w, info->name);
    json_w_key(&w, "coll");
    json_w_str(&w, ccs_coll_str(s->coll));
    json_w_key(&w, "ngpus");
    json_w_int(&w, s->nranks);
    json_w_key(&w, "nchunksperloop");
    json_w_int(&w, info->nchunksperloop);
    json_w_key(&w, "proto");
    json_w_str(&w, msccl_proto_str(info->proto));
    json_w_key(&w, "nchannels");
    json_w_int(&w, info->nchannels);
    json_w_key(&w, "inplace");
    json_w_bool(&w, info->inplace);
    json_w_key(&w, "outofplace");
    json_w_bool(&w, info->outofplace);
    json_w_key(&w, "min_bytes");
    json_w_int(&w, (long long)info->min_bytes);
    json_w_key(&w, "max_bytes");
    json_w_int(&w, (long long)info->max_bytes);
    json_w_key(&w, "thread_blocks");
    json_w_int(&w, info->ntbs);
    json_w_key(&w, "msccl_steps");
    json_w_int(&w, (long long)info->nsteps);
    json_w_key(&w, "steps");
    json_w_int(&w, s->nsteps);
    json_w_key(&w, "verified");
    json_w_bool(&w, true);
    json_w_key(&w, "output");
    if (output != NULL)
        json_w_str(&w, output);
    else
        json_w_null(&w);
    json_w_end_object(&w);
    fputc('\n', stdout);
}

int cmd_import(int argc, char **argv)
{
    static const opt_id_t ids[] = {
        OPT_MSCCL, OPT_OUTPUT, OPT_JSON, OPT_QUIET, OPT_MAX_STEPS,
        OPT_MAX_TBS, OPT_NO_LIMITS, OPT_END
    };
    static const opt_cmd_t spec = { "import", ids, import_usage, -1 };
    const char *cmd = "import", *output, *path;
    cli_opts_t co;
    msccl_import_opts_t o;
    msccl_import_info_t info;
    verify_report_t rep;
    ccs_sched_t *s = NULL;     /* owned */
    ccs_err_t err = { { 0 } };
    ccs_status_t st;
    long v;
    int rc;

    msccl_import_opts_init(&o);
    rc = opt_parse(&spec, argc, argv, &co);
    if (rc != CLI_EXIT_OK || co.help)
        goto cleanup;
    if (co.own[OPT_MAX_STEPS] != NULL) {
        if (!units_parse_int(co.own[OPT_MAX_STEPS], 1, 1 << 20, &v)) {
            rc = cli_fail(cmd, CLI_EXIT_USAGE, "bad --max-steps '%s' (1 or "
                          "more)", co.own[OPT_MAX_STEPS]);
            goto cleanup;
        }
        o.max_tb_steps = (uint32_t)v;
    }
    if (co.own[OPT_MAX_TBS] != NULL) {
        if (!units_parse_int(co.own[OPT_MAX_TBS], 1, MSCCL_MAX_TBS, &v)) {
            rc = cli_fail(cmd, CLI_EXIT_USAGE, "bad --max-tbs '%s' (1..%d)",
                          co.own[OPT_MAX_TBS], MSCCL_MAX_TBS);
            goto cleanup;
        }
        o.max_tbs = (uint32_t)v;
    }
    if (co.own[OPT_NO_LIMITS] != NULL)
        o.check_limits = false;
    if (co.out.fmt != OPT_FMT_TEXT && co.out.fmt != OPT_FMT_JSON) {
        rc = cli_fail(cmd, CLI_EXIT_USAGE, "import prints a line or --json");
        goto cleanup;
    }
    output = co.out.output;
    if (co.own[OPT_MSCCL] == NULL) {
        rc = cli_fail(cmd, CLI_EXIT_USAGE, "say which format: --msccl "
                      "(the only one)");
        goto cleanup;
    }
    if (co.nargs != 1) {
        rc = cli_fail(cmd, CLI_EXIT_USAGE, "one XML file expected (usage: "
                      "ccsynth import --msccl ALGO.xml -o FILE.ccs)");
        goto cleanup;
    }
    path = co.args[0];
    st = msccl_import_file(path, &o, &s, &info, &err);
    if (st != CCS_OK) {
        rc = st == CCS_ERR_VERIFY ? CLI_EXIT_VERIFY
             : st == CCS_ERR_UNSUPPORTED ? CLI_EXIT_UNSUPPORTED
             : st == CCS_ERR_NOMEM ? CLI_EXIT_INTERNAL : CLI_EXIT_INPUT;
        rc = cli_fail(cmd, rc, "%s", ccs_err_msg(&err, st));
        goto cleanup;
    }
    st = verify_sched(s, &rep, &err);
    if (st != CCS_OK) {
        rc = cli_fail_verify(cmd, st, &err, "%s: the algorithm is wrong (as "
                             "laid out in ccsynth's lock-step schedule)",
                             path);
        goto cleanup;
    }
    if (output != NULL) {
        st = ccs_format_write_file(s, output, &err);
        if (st != CCS_OK) {
            rc = cli_fail_status(cmd, st, &err);
            goto cleanup;
        }
    }
    if (co.out.fmt == OPT_FMT_JSON)
        print_json(path, output, s, &info);
    else if (!co.out.quiet)
        printf("%s: ok (%s \"%s\", %u gpus, %u chunks per loop, %s, %u "
               "channel(s), %u thread blocks, %" PRIu64 " MSCCL steps -> "
               "%u schedule steps), verified%s%s\n", path,
               ccs_coll_str(s->coll), info.name, s->nranks,
               info.nchunksperloop, msccl_proto_str(info.proto),
               info.nchannels, info.ntbs, info.nsteps, s->nsteps,
               output ? " -> " : "", output ? output : "");
    rc = CLI_EXIT_OK;

    if (fflush(stdout) != 0)
        rc = cli_fail(cmd, CLI_EXIT_INTERNAL, "write error on stdout");

cleanup:
    ccs_sched_destroy(s);
    opt_free(&co);
    return rc;
}
