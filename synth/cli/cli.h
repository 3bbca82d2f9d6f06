/*
 * cli.h - shared pieces of the ccsynth command line.
 *
 * Each subcommand lives in its own cmd_<name>.c and has the signature of
 * cli_cmd_fn.  Exit codes are documented here and in the README.
 */
#ifndef CCS_CLI_H
#define CCS_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "ccs.h"
#include "err.h"
#include "sched.h"
#include "topo.h"
#include "units.h"

/* Exit codes of every subcommand. */
enum {
    CLI_EXIT_OK = 0,        /* success */
    CLI_EXIT_INTERNAL = 1,  /* internal error, out of memory, I/O failure */
    CLI_EXIT_USAGE = 2,     /* bad command line */
    CLI_EXIT_INPUT = 3,     /* bad input: topology, YAML, .ccs file */
    CLI_EXIT_VERIFY = 4,    /* a schedule failed verification */
    CLI_EXIT_UNSUPPORTED = 5 /* the algorithm cannot run on this input */
};

typedef int (*cli_cmd_fn)(int argc, char **argv);

/* Map a status to an exit code (see above). */
int cli_exit_code(ccs_status_t st);

/* Print "ccsynth <cmd>: <message>" to stderr; returns `code`. */
int cli_fail(const char *cmd, int code, const char *fmt, ...) CCS_PRINTF(3, 4);
/* Print "ccsynth <cmd>: <err message>" and return cli_exit_code(st). */
int cli_fail_status(const char *cmd, ccs_status_t st, const ccs_err_t *err);
/* Report a failed verify_sched.  A verdict on the schedule prints
 * "ccsynth <cmd>: <fmt ...>: <err message>" and returns CLI_EXIT_VERIFY; a
 * verifier that ran out of room (its memory budget, malloc) has said
 * nothing about the schedule, which may be correct, so that prints "out of
 * memory budget: ..." and returns CLI_EXIT_INTERNAL; any other status
 * (a limit of the verifier's) is cli_fail_status. */
int cli_fail_verify(const char *cmd, ccs_status_t st, const ccs_err_t *err,
                    const char *fmt, ...) CCS_PRINTF(4, 5);

/* Load a topology with the --alpha/--bw overrides; prints the error and
 * returns the exit code on failure (0 on success). */
int cli_load_topo(const char *cmd, const char *spec, const topo_opts_t *opts,
                  topo_t **out);

/* Read a .ccs file; prints the error and returns the exit code on failure. */
int cli_read_sched(const char *cmd, const char *path, ccs_sched_t **out);

#endif /* CCS_CLI_H */
