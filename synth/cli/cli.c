/* cli.c - shared command-line helpers: exit codes, failures, loading. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "format.h"
#include "cli.h"

int cli_exit_code(ccs_status_t st)
{
    switch (st) {
    case CCS_OK:
        return CLI_EXIT_OK;
    case CCS_ERR_INVALID:
        return CLI_EXIT_USAGE;
    case CCS_ERR_FORMAT:
    case CCS_ERR_VERSION:
    case CCS_ERR_CHECKSUM:
    case CCS_ERR_TOPOLOGY:
    case CCS_ERR_PARSE:
    case CCS_ERR_MISMATCH:
        return CLI_EXIT_INPUT;
    case CCS_ERR_VERIFY:
        return CLI_EXIT_VERIFY;
    case CCS_ERR_UNSUPPORTED:
        return CLI_EXIT_UNSUPPORTED;
    default:
        return CLI_EXIT_INTERNAL;
    }
}

int cli_fail(const char *cmd, int code, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "ccsynth %s: ", cmd);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return code;
}

int cli_fail_status(const char *cmd, ccs_status_t st, const ccs_err_t *err)
{
    return cli_fail(cmd, cli_exit_code(st), "%s", ccs_err_msg(err, st));
}

int cli_fail_verify(const char *cmd, ccs_status_t st, const ccs_err_t *err,
                    const char *fmt, ...)
{
    va_list ap;

    if (st == CCS_ERR_VERIFY) {
        fprintf(stderr, "ccsynth %s: ", cmd);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fprintf(stderr, ": %s\n", ccs_err_msg(err, st));
        return CLI_EXIT_VERIFY;
    }
    if (st == CCS_ERR_NOMEM)
        return cli_fail(cmd, CLI_EXIT_INTERNAL, "out of memory budget: %s",
                        ccs_err_msg(err, st));
    return cli_fail_status(cmd, st, err);
}

int cli_load_topo(const char *cmd, const char *spec, const topo_opts_t *opts,
                  topo_t **out)
{
    ccs_err_t err = { { 0 } };
    ccs_status_t st;

    if (spec == NULL)
        return cli_fail(cmd, CLI_EXIT_USAGE, "--topo is required");
    st = topo_load(spec, opts, out, &err);
    if (st != CCS_OK)
        return cli_fail_status(cmd, st, &err);
    return CLI_EXIT_OK;
}

int cli_read_sched(const char *cmd, const char *path, ccs_sched_t **out)
{
    ccs_err_t err = { { 0 } };
    ccs_status_t st = ccs_format_read_file(path, out, &err);

    /* A missing, unreadable or malformed schedule is bad input (3), as in
     * `ccsynth verify` and for topology files; only running out of memory
     * is our failure. */
    if (st != CCS_OK)
        return cli_fail(cmd, st == CCS_ERR_NOMEM ? CLI_EXIT_INTERNAL
                                                 : CLI_EXIT_INPUT,
                        "%s", ccs_err_msg(&err, st));
    return CLI_EXIT_OK;
}
