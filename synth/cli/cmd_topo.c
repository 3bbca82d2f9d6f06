/* cmd_topo.c - `ccsynth topo`: summarize a topology, write Graphviz DOT. */
#include <errno.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "options.h"

static void topo_usage(FILE *f)
{
    fprintf(f,
"usage: ccsynth topo --topo SPEC|FILE [--exact] [--dot [-o FILE]] [--alpha T]\n"
"                    [--bw BW]\n"
"\n"
"Load a topology and print a summary: nodes by kind, servers, links,\n"
"degrees, diameter, GPU-to-GPU route lengths, bandwidth and latency\n"
"ranges, fingerprint.  On large topologies the diameter and route\n"
"figures come from a sample of sources, labelled as such.\n"
"\n"
"  -t, --topo SPEC|FILE   built-in spec or YAML file (ccsynth list;\n"
"                         schema in docs/topology.md)\n"
"      --exact            diameter and routes over all pairs, however\n"
"                         long that takes (one BFS per node)\n"
"  -d, --dot              print Graphviz DOT instead of the summary\n"
"  -o, --output FILE      with --dot: write the DOT to FILE and print the\n"
"                         summary\n"
"  -q, --quiet            no summary (with --dot -o: print nothing)\n"
"      --alpha T          override every link's latency (e.g. 3us)\n"
"      --bw BW            override every link's bandwidth (e.g. 450GB/s)\n"
"  -h, --help             this text\n"
"\n"
"exit codes: 0 ok, 1 internal or I/O error, 2 usage, 3 bad topology\n");
}

int cmd_topo(int argc, char **argv)
{
    static const opt_id_t ids[] = {
        OPT_TOPO, OPT_ALPHA, OPT_BW, OPT_DOT, OPT_OUTPUT, OPT_QUIET, OPT_EXACT,
        OPT_END
    };
    static const opt_cmd_t spec = { "topo", ids, topo_usage, 0 };
    const char *cmd = "topo";
    const char *dot = NULL;     /* where the DOT goes: "-" for stdout */
    cli_opts_t co;
    topo_t *t = NULL;
    ccs_err_t err = { { 0 } };
    ccs_status_t st;
    FILE *f = NULL;
    int rc = CLI_EXIT_OK;

    rc = opt_parse(&spec, argc, argv, &co);
    if (rc != CLI_EXIT_OK || co.help)
        return rc;
    if (co.out.fmt == OPT_FMT_DOT)
        dot = co.out.output != NULL ? co.out.output : "-";
    else if (co.out.output != NULL)
        return cli_fail(cmd, CLI_EXIT_USAGE, "-o writes the DOT drawing: "
                        "give --dot too");
    rc = cli_load_topo(cmd, co.topo.spec, &co.topo.over, &t);
    if (rc != CLI_EXIT_OK)
        return rc;
    if ((dot == NULL || strcmp(dot, "-") != 0) && !co.out.quiet) {
        st = topo_print_summary_opt(t, stdout, co.own[OPT_EXACT] != NULL,
                                    &err);
        if (st != CCS_OK) {
            rc = cli_fail_status(cmd, st, &err);
            goto cleanup;
        }
    }
    if (dot != NULL) {
        /* ownership: f is ours unless it is stdout; closed at cleanup */
        f = strcmp(dot, "-") == 0 ? stdout : fopen(dot, "w");
        if (f == NULL) {
            rc = cli_fail(cmd, CLI_EXIT_INTERNAL, "cannot write '%s': %s",
                          dot, strerror(errno));
            goto cleanup;
        }
        st = topo_write_dot(t, f, &err);
        if (st != CCS_OK) {
            rc = cli_fail_status(cmd, st, &err);
            goto cleanup;
        }
        if (f != stdout) {
            int bad = fclose(f) != 0;

            f = NULL;
            if (bad) {
                rc = cli_fail(cmd, CLI_EXIT_INTERNAL, "cannot write '%s': "
                              "%s", dot, strerror(errno));
                goto cleanup;
            }
        }
    }
    if (fflush(stdout) != 0)
        rc = cli_fail(cmd, CLI_EXIT_INTERNAL, "write error on stdout");
cleanup:
    if (f != NULL && f != stdout)
        fclose(f);
    topo_destroy(t);
    return rc;
}
