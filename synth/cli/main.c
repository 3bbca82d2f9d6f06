/*
 * main.c - the ccsynth command line: dispatch to one subcommand.
 *
 * The only place that sets process-wide state: igraph's error handler is
 * replaced here (topo_global_init) so that no igraph failure aborts.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "topo_init.h"

static const struct {
    const char *name;
    cli_cmd_fn fn;
    const char *help;
} commands[] = {
    { "synth",    cmd_synth,    "synthesize a verified schedule (.ccs)" },
    { "verify",   cmd_verify,   "verify a .ccs file symbolically" },
    { "show",     cmd_show,     "print a schedule (text, --json, --dot)" },
    { "topo",     cmd_topo,     "summarize a topology, write Graphviz DOT" },
    { "sim",      cmd_sim,      "simulate a schedule on a topology" },
    { "compare",  cmd_compare,  "synthesize and simulate algorithms side by side" },
    { "tune",     cmd_tune,     "tune algorithm and chunking per size (TuCCL-style)" },
    { "trees",    cmd_trees,    "draw MultiTree's spanning trees as Graphviz DOT" },
    { "export",   cmd_export,   "write a schedule as MSCCL XML (--msccl)" },
    { "import",   cmd_import,   "read, check and verify an MSCCL XML (--msccl)" },
    { "matching", cmd_matching, "max-weight matching of a graph on stdin" },
    { "list",     cmd_list,     "list algorithms and built-in topologies" },
};

static void usage(FILE *f)
{
    fprintf(f, "usage: ccsynth <command> [options]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].help);
    fprintf(f,
            "\n'ccsynth <command> --help' describes a command.\n"
            "exit codes: 0 ok, 1 internal error, 2 usage, 3 bad input,\n"
            "            4 verification failed, 5 unsupported by the "
            "algorithm\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return CLI_EXIT_USAGE;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return CLI_EXIT_OK;
    }
    if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0) {
        printf("ccsynth %d.%d.%d\n", CCS_VERSION_MAJOR, CCS_VERSION_MINOR,
               CCS_VERSION_PATCH);
        return CLI_EXIT_OK;
    }
    topo_global_init();
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
        if (strcmp(argv[1], commands[i].name) == 0)
            return commands[i].fn(argc - 1, argv + 1);
    }
    fprintf(stderr, "ccsynth: unknown command '%s'\n\n", argv[1]);
    usage(stderr);
    return CLI_EXIT_USAGE;
}
