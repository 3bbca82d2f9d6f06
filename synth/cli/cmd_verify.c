/* cmd_verify.c - `ccsynth verify FILE...`: read .ccs files, verify them
 * symbolically (verify.c), report one line (or one JSON object) per file. */
#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "cli.h"
#include "json.h"
#include "commands.h"
#include "options.h"
#include "verify.h"

static void verify_usage(FILE *f)
{
    fprintf(f,
"usage: ccsynth verify [--json] [--quiet] FILE.ccs...\n"
"\n"
"Read each schedule file, validate it and verify it symbolically: every\n"
"send is matched, nothing is read before it is written or reduced twice,\n"
"and the collective's postcondition holds at the end.\n"
"\n"
"  -j, --json     print a JSON array, one object per file, to stdout:\n"
"                 {\"file\", \"ok\", and on success \"collective\",\n"
"                 \"algorithm\", \"nranks\", \"nchunks\", \"nscratch\",\n"
"                 \"nsteps\", \"nphases\", \"root\", \"straggler\", \"nops\",\n"
"                 \"chunk_transfers\", \"max_sends_per_step\",\n"
"                 \"max_recvs_per_step\", \"one_port\"; on failure\n"
"                 \"status\" and \"error\"}\n"
"  -q, --quiet    print nothing for files that pass (text mode)\n"
"  -h, --help     this text\n"
"\n"
"exit: 0 all pass, 3 a file could not be read or is malformed (takes\n"
"precedence), 4 a schedule failed verification, 1 internal error,\n"
"2 usage.\n");
}

static void json_ok(const char *path, const ccs_sched_t *s,
                    const verify_report_t *r)
{
    fputs("  {\"file\": ", stdout);
    json_str(stdout, path);
    printf(", \"ok\": true, \"collective\": \"%s\", \"algorithm\": ",
           ccs_coll_str(s->coll));
    json_str(stdout, s->algo);
    printf(", \"nranks\": %u, \"nchunks\": %u, \"nscratch\": %u, "
           "\"nsteps\": %u, \"nphases\": %u, \"root\": %d, "
           "\"straggler\": %d, \"nops\": %llu, \"chunk_transfers\": %llu, "
           "\"max_sends_per_step\": %u, \"max_recvs_per_step\": %u, "
           "\"one_port\": %s}",
           s->nranks, s->nchunks, s->nscratch, s->nsteps, s->nphases,
           s->root, s->straggler, (unsigned long long)r->nops,
           (unsigned long long)r->chunk_transfers, r->max_sends_per_step,
           r->max_recvs_per_step, r->one_port ? "true" : "false");
}

static void json_fail(const char *path, ccs_status_t st, const char *msg)
{
    fputs("  {\"file\": ", stdout);
    json_str(stdout, path);
    printf(", \"ok\": false, \"status\": \"%s\", \"error\": ",
           ccs_status_name(st));
    json_str(stdout, msg);
    fputc('}', stdout);
}

static void text_ok(const char *path, const ccs_sched_t *s,
                    const verify_report_t *r)
{
    printf("%s: ok (%s, %s, %u ranks, %u steps", path, ccs_coll_str(s->coll),
           s->algo[0] ? s->algo : "?", s->nranks, s->nsteps);
    if (s->nphases > 1)
        printf(", %u phases", s->nphases);
    if (ccs_coll_rooted(s->coll))
        printf(", root %d", s->root);
    if (s->straggler >= 0)
        printf(", straggler %d", s->straggler);
    if (r->one_port)
        printf(", one-port)\n");
    else
        printf(", up to %u sends and %u receives per rank per step)\n",
               r->max_sends_per_step, r->max_recvs_per_step);
}

/* Verify one file; returns its exit code. */
static int verify_one(const char *path, bool json, bool quiet, bool first)
{
    ccs_sched_t *s = NULL;
    verify_report_t rep;
    ccs_err_t err = { { 0 } };
    ccs_status_t st;
    int rc;

    if (json && !first)
        fputs(",\n", stdout);
    /* s is owned here, freed below. */
    st = ccs_format_read_file(path, &s, &err);
    if (st != CCS_OK) {
        /* A missing, unreadable or malformed file is bad input (3); only
         * running out of memory is our failure. */
        rc = st == CCS_ERR_NOMEM ? CLI_EXIT_INTERNAL : CLI_EXIT_INPUT;
        if (json)
            json_fail(path, st, ccs_err_msg(&err, st));
        else
            cli_fail("verify", rc, "%s", ccs_err_msg(&err, st));
        goto cleanup;
    }
    st = verify_sched(s, &rep, &err);
    if (st != CCS_OK) {
        if (json) {
            rc = cli_exit_code(st);
            json_fail(path, st, ccs_err_msg(&err, st));
        } else {
            rc = cli_fail_verify("verify", st, &err, "%s: verification failed",
                                 path);
        }
        goto cleanup;
    }
    rc = CLI_EXIT_OK;
    if (json)
        json_ok(path, s, &rep);
    else if (!quiet)
        text_ok(path, s, &rep);

cleanup:
    ccs_sched_destroy(s);
    return rc;
}

/* Fold one file's exit code into the overall one: internal > input >
 * verify > ok. */
static int worse(int a, int b)
{
    static const int rank[] = {
        [CLI_EXIT_OK] = 0, [CLI_EXIT_VERIFY] = 1, [CLI_EXIT_UNSUPPORTED] = 2,
        [CLI_EXIT_USAGE] = 3, [CLI_EXIT_INPUT] = 4, [CLI_EXIT_INTERNAL] = 5,
    };
    return rank[b] > rank[a] ? b : a;
}

int cmd_verify(int argc, char **argv)
{
    static const opt_id_t ids[] = { OPT_JSON, OPT_QUIET, OPT_END };
    static const opt_cmd_t spec = { "verify", ids, verify_usage, -1 };
    cli_opts_t co;
    bool json, quiet;
    int rc;

    rc = opt_parse(&spec, argc, argv, &co);
    if (rc != CLI_EXIT_OK || co.help)
        return rc;
    json = co.out.fmt == OPT_FMT_JSON;
    quiet = co.out.quiet;
    if (co.nargs < 1)
        return cli_fail("verify", CLI_EXIT_USAGE,
                        "no file given (usage: ccsynth verify FILE.ccs...)");
    if (json)
        fputs("[\n", stdout);
    for (int i = 0; i < co.nargs; i++)
        rc = worse(rc, verify_one(co.args[i], json, quiet, i == 0));
    if (json)
        fputs("\n]\n", stdout);
    return rc;
}
