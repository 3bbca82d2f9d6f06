/*
 * cmd_trees.c - `ccsynth trees`: draw MultiTree's spanning trees as
 * Graphviz DOT.
 *
 * A .ccs file keeps only the schedule's steps, not the trees they came
 * from, so `ccsynth show --dot` cannot draw them; this command builds the
 * trees for a topology exactly as `ccsynth synth --algo multitree` does
 * (mtree_build_best, or one tree order with --order) and writes them with
 * mtree_write_dot: one cluster per tree, each edge labelled with its step
 * and, for a switched edge, the switches of its route (the route the
 * simulator uses).  The trees are the same for allgather, reducescatter
 * (reversed in time) and allreduce, and do not depend on --pipeline
 * (each edge then carries its block as K sub-chunks, one step apart),
 * which is accepted for symmetry with `synth` and only noted in the
 * summary line.
 */
#include <getopt.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "mtree.h"
#include "synth_out.h"

static void trees_usage(FILE *f)
{
    fprintf(f,
"usage: ccsynth trees --topo SPEC|FILE [options] [-o OUT.dot]\n"
"\n"
"Build MultiTree's spanning trees (one per rank) for a topology and write\n"
"them as Graphviz DOT (render with: dot -Tsvg OUT.dot > OUT.svg).\n"
"\n"
"  -t, --topo SPEC|FILE   built-in spec (torus:4x4, fattree:4x4, ...) or a\n"
"                         YAML topology file\n"
"  -o, --output FILE      DOT file, written atomically (default: stdout)\n"
"      --order ORDER      best (default: as synth), root, height\n"
"      --children C       any (default), one: children per parent and step\n"
"      --pipeline K       accepted as in synth; the trees do not change\n"
"      --alpha T          override every link's latency (e.g. 150ns)\n"
"      --bw BW            override every link's bandwidth (e.g. 16GB/s)\n"
"  -q, --quiet            print nothing on success\n"
"  -h, --help             this text\n");
}

enum { OPT_ORDER = 256, OPT_CHILDREN, OPT_PIPELINE, OPT_ALPHA, OPT_BW };

int cmd_trees(int argc, char **argv)
{
    static const struct option longopts[] = {
        { "topo", required_argument, NULL, 't' },
        { "output", required_argument, NULL, 'o' },
        { "order", required_argument, NULL, OPT_ORDER },
        { "children", required_argument, NULL, OPT_CHILDREN },
        { "pipeline", required_argument, NULL, OPT_PIPELINE },
        { "alpha", required_argument, NULL, OPT_ALPHA },
        { "bw", required_argument, NULL, OPT_BW },
        { "quiet", no_argument, NULL, 'q' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    const char *cmd = "trees";
    const char *topo_spec = NULL, *output = "-";
    topo_opts_t topts = { 0, 0 };
    topo_t *topo = NULL;        /* owned here */
    mtree_t *m = NULL;          /* owned here */
    mtree_opts_t mo;
    ccs_err_t err = { { 0 } };
    ccs_status_t st;
    bool quiet = false, best = true;
    long pipeline = 1, v;
    int rc = CLI_EXIT_OK;
    int c;

    mtree_opts_init(&mo);
    optind = 1;
    while ((c = getopt_long(argc, argv, "t:o:qh", longopts, NULL)) != -1) {
        switch (c) {
        case 't': topo_spec = optarg; break;
        case 'o': output = optarg; break;
        case 'q': quiet = true; break;
        case 'h': trees_usage(stdout); return CLI_EXIT_OK;
        case OPT_ORDER:
            best = strcmp(optarg, "best") == 0;
            if (best)
                break;
            for (v = 0; v < MTREE_ORDER_COUNT; v++)
                if (strcmp(optarg, mtree_order_str((mtree_order_t)v)) == 0)
                    break;
            if (v == MTREE_ORDER_COUNT)
                return cli_fail(cmd, CLI_EXIT_USAGE, "bad --order '%s' "
                                "(best, root, height)", optarg);
            mo.order = (mtree_order_t)v;
            break;
        case OPT_CHILDREN:
            for (v = 0; v < MTREE_CHILDREN_COUNT; v++)
                if (strcmp(optarg,
                           mtree_children_str((mtree_children_t)v)) == 0)
                    break;
            if (v == MTREE_CHILDREN_COUNT)
                return cli_fail(cmd, CLI_EXIT_USAGE, "bad --children '%s' "
                                "(any, one)", optarg);
            mo.children = (mtree_children_t)v;
            break;
        case OPT_PIPELINE:
            if (!units_parse_int(optarg, 1, 1024, &pipeline))
                return cli_fail(cmd, CLI_EXIT_USAGE,
                                "bad --pipeline '%s' (1..1024)", optarg);
            break;
        case OPT_ALPHA:
            if (!units_parse_time(optarg, &topts.alpha_s))
                return cli_fail(cmd, CLI_EXIT_USAGE, "bad --alpha '%s'",
                                optarg);
            break;
        case OPT_BW:
            if (!units_parse_bw(optarg, &topts.bw_Bps))
                return cli_fail(cmd, CLI_EXIT_USAGE, "bad --bw '%s'", optarg);
            break;
        default:
            trees_usage(stderr);
            return CLI_EXIT_USAGE;
        }
    }
    if (optind < argc)
        return cli_fail(cmd, CLI_EXIT_USAGE, "unexpected argument '%s'",
                        argv[optind]);
    if (topo_spec == NULL)
        return cli_fail(cmd, CLI_EXIT_USAGE, "--topo is required");
    rc = cli_load_topo(cmd, topo_spec, &topts, &topo);
    if (rc != CLI_EXIT_OK)
        goto cleanup;
    st = best ? mtree_build_best(topo, mo.children, &m, &err)
              : mtree_build(topo, &mo, &m, &err);
    if (st != CCS_OK) {
        rc = cli_fail_status(cmd, st, &err);
        goto cleanup;
    }
    st = cli_write_trees_dot(m, topo, output, &err);
    if (st != CCS_OK) {
        rc = cli_fail_status(cmd, st, &err);
        goto cleanup;
    }
    if (!quiet && strcmp(output, "-") != 0)
        printf("multitree trees on %s: %d trees, T=%d steps (lower bound "
               "%d), order %s, children %s%s -> %s\n", topo->name,
               m->nranks, m->nsteps, m->lower_bound,
               mtree_order_str(m->opts.order),
               mtree_children_str(m->opts.children),
               pipeline > 1 ? " (pipeline does not change the trees)" : "",
               output);

cleanup:
    mtree_destroy(m);
    topo_destroy(topo);
    return rc;
}
