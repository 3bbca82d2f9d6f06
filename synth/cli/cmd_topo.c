/* cmd_topo.c - `ccsynth topo`: summarize a topology, write Graphviz DOT. */
#include <errno.h>
#include <getopt.h>
#include <string.h>

#include "cli.h"
#include "commands.h"

static void topo_usage(FILE *f)
{
    fprintf(f,
"usage: ccsynth topo --topo SPEC|FILE [--dot FILE|-] [--alpha T] [--bw BW]\n"
"\n"
"Load a topology and print a summary: nodes by kind, servers, links,\n"
"degrees, diameter, GPU-to-GPU route lengths, bandwidth and latency\n"
"ranges, fingerprint.\n"
"\n"
"  -t, --topo SPEC|FILE   built-in spec or YAML file (ccsynth list;\n"
"                         schema in docs/topology.md)\n"
"  -d, --dot FILE|-       also write Graphviz DOT to FILE ('-': stdout,\n"
"                         instead of the summary)\n"
"      --alpha T          override every link's latency (e.g. 3us)\n"
"      --bw BW            override every link's bandwidth (e.g. 450GB/s)\n"
"  -h, --help             this text\n"
"\n"
"exit codes: 0 ok, 1 internal or I/O error, 2 usage, 3 bad topology\n");
}

enum { OPT_ALPHA = 256, OPT_BW };

int cmd_topo(int argc, char **argv)
{
    static const struct option longopts[] = {
        { "topo", required_argument, NULL, 't' },
        { "dot", required_argument, NULL, 'd' },
        { "alpha", required_argument, NULL, OPT_ALPHA },
        { "bw", required_argument, NULL, OPT_BW },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    const char *cmd = "topo";
    const char *spec = NULL, *dot = NULL;
    topo_opts_t opts = { 0, 0 };
    topo_t *t = NULL;
    ccs_err_t err = { { 0 } };
    ccs_status_t st;
    FILE *f = NULL;
    int rc = CLI_EXIT_OK;
    int c;

    optind = 1;
    while ((c = getopt_long(argc, argv, "t:d:h", longopts, NULL)) != -1) {
        switch (c) {
        case 't': spec = optarg; break;
        case 'd': dot = optarg; break;
        case 'h': topo_usage(stdout); return CLI_EXIT_OK;
        case OPT_ALPHA:
            if (!units_parse_time(optarg, &opts.alpha_s) || opts.alpha_s <= 0)
                return cli_fail(cmd, CLI_EXIT_USAGE, "bad --alpha '%s'",
                                optarg);
            break;
        case OPT_BW:
            if (!units_parse_bw(optarg, &opts.bw_Bps))
                return cli_fail(cmd, CLI_EXIT_USAGE, "bad --bw '%s'", optarg);
            break;
        default:
            topo_usage(stderr);
            return CLI_EXIT_USAGE;
        }
    }
    if (optind < argc)
        return cli_fail(cmd, CLI_EXIT_USAGE, "unexpected argument '%s'",
                        argv[optind]);
    rc = cli_load_topo(cmd, spec, &opts, &t);
    if (rc != CLI_EXIT_OK)
        return rc;
    if (dot == NULL || strcmp(dot, "-") != 0) {
        st = topo_print_summary(t, stdout, &err);
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
