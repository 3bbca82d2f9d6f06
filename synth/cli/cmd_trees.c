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
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "options.h"
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

int cmd_trees(int argc, char **argv)
{
    static const opt_id_t ids[] = {
        OPT_TOPO, OPT_ALPHA, OPT_BW, OPT_PIPELINE, OPT_OUTPUT, OPT_QUIET,
        OPT_ORDER, OPT_CHILDREN, OPT_END
    };
    static const opt_cmd_t spec = { "trees", ids, trees_usage, 0 };
    const char *cmd = "trees";
    const char *topo_spec = NULL, *output = "-";
    cli_opts_t co;
    topo_t *topo = NULL;        /* owned here */
    mtree_t *m = NULL;          /* owned here */
    mtree_opts_t mo;
    ccs_err_t err = { { 0 } };
    ccs_status_t st;
    bool quiet = false, best = true;
    long pipeline = 1, v;
    int rc = CLI_EXIT_OK;
    const char *arg;

    mtree_opts_init(&mo);
    rc = opt_parse(&spec, argc, argv, &co);
    if (rc != CLI_EXIT_OK || co.help)
        goto cleanup;
    /* the trees are MultiTree's: the synthesis rule for one algorithm */
    co.synth.algo = "multitree";
    st = opt_synth_check(&co.synth, true, &err);
    if (st == CCS_OK)
        st = opt_topo_check(&co.topo, true, &err);
    if (st != CCS_OK) {
        rc = cli_fail_status(cmd, st, &err);
        goto cleanup;
    }
    topo_spec = co.topo.spec;
    quiet = co.out.quiet;
    if (co.out.output != NULL)
        output = co.out.output;
    if (co.synth.npipeline > 0)
        pipeline = co.synth.pipeline[0];
    arg = co.own[OPT_ORDER];
    if (arg != NULL && strcmp(arg, "best") != 0) {
        best = false;
        for (v = 0; v < MTREE_ORDER_COUNT; v++)
            if (strcmp(arg, mtree_order_str((mtree_order_t)v)) == 0)
                break;
        if (v == MTREE_ORDER_COUNT) {
            rc = cli_fail(cmd, CLI_EXIT_USAGE, "bad --order '%s' (best, "
                          "root, height)", arg);
            goto cleanup;
        }
        mo.order = (mtree_order_t)v;
    }
    arg = co.own[OPT_CHILDREN];
    if (arg != NULL) {
        for (v = 0; v < MTREE_CHILDREN_COUNT; v++)
            if (strcmp(arg, mtree_children_str((mtree_children_t)v)) == 0)
                break;
        if (v == MTREE_CHILDREN_COUNT) {
            rc = cli_fail(cmd, CLI_EXIT_USAGE, "bad --children '%s' (any, "
                          "one)", arg);
            goto cleanup;
        }
        mo.children = (mtree_children_t)v;
    }
    rc = cli_load_topo(cmd, topo_spec, &co.topo.over, &topo);
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
    opt_free(&co);
    return rc;
}
