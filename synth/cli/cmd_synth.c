/* cmd_synth.c - `ccsynth synth`: topology -> algorithm -> verify -> .ccs */
#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "algo.h"
#include "cli.h"
#include "options.h"
#include "synth_out.h"
#include "verify.h"

static void synth_usage(FILE *f)
{
    fprintf(f,
"usage: ccsynth synth --algo ALGO --topo SPEC|FILE [options] -o OUT.ccs\n"
"\n"
"Synthesize a schedule, verify it symbolically, and write it atomically.\n"
"\n"
"  -a, --algo ALGO        algorithm (ccsynth list)\n"
"  -c, --coll COLL        allreduce (default), reducescatter, allgather,\n"
"                         reduce, broadcast, alltoall\n"
"  -t, --topo SPEC|FILE   built-in spec (dgx-h100, switch:16, torus:4x4, ...)\n"
"                         or a YAML topology file\n"
"  -o, --output FILE      where to write the .ccs file (omit to only verify)\n"
"      --root R           root rank of reduce/broadcast (default 0)\n"
"      --straggler R      straggler rank written as default (stragglar\n"
"                         only; refused for the others, which ignore it)\n"
"      --phase0 ALGO      stragglar's phase-0 reduce-scatter (default ring)\n"
"      --pipeline K       split each natural chunk into K (default 1)\n"
"      --chunks C         force the chunk count where the algorithm allows\n"
"      --size BYTES       buffer size to optimise for (milp), e.g. 256M\n"
"      --time-limit T     solver time limit (milp), e.g. 10s\n"
"      --mip-gap G        relative MIP gap (milp), e.g. 0.01\n"
"      --milp-m M         parallel sub-collectives (milp)\n"
"      --node-limit N     branch-and-bound nodes (milp; 0: no limit;\n"
"                         default: sized by the model, deterministic)\n"
"      --chunk-sizes LIST candidate chunk sizes (milp), e.g. 1M,4M,16M\n"
"      --write-lp FILE    dump the MILP in CPLEX LP form (milp)\n"
"      --seed N           seed for deterministic tie-breaking\n"
"      --channels C       channels of nccl-ring / nccl-tree (default:\n"
"                         NCCL's count: 14 on one NVSwitch server, one per\n"
"                         NIC across servers, 2 on direct networks)\n"
"      --proto P          protocol the plan is meant for: ll, ll128 or\n"
"                         simple (written as proto=; the simulator uses\n"
"                         it unless told otherwise)\n"
"      --alpha T          override every link's latency (e.g. 3us)\n"
"      --bw BW            override every link's bandwidth (e.g. 450GB/s)\n"
"  -q, --quiet            print nothing on success\n"
"  -h, --help             this text\n"
"\n"
"Times need a unit (s, ms, us, ns).  MultiTree's spanning trees are drawn\n"
"by 'ccsynth trees'; any schedule by 'ccsynth show --dot'.\n");
}

/* The parameters recorded in the file: enough to regenerate it. */
static void params_text(const char *algo, const char *topo,
                        const algo_params_t *p, char *buf, size_t len)
{
    int n = snprintf(buf, len, "algo=%s\ncoll=%s\ntopo=%s\n", algo,
                     ccs_coll_str(p->coll), topo);
    size_t used = n > 0 ? (size_t)n : 0;

#define APPEND(...)                                                        \
    do {                                                                   \
        if (used < len) {                                                  \
            int k_ = snprintf(buf + used, len - used, __VA_ARGS__);        \
            used += k_ > 0 ? (size_t)k_ : 0;                               \
        }                                                                  \
    } while (0)
    if (ccs_coll_rooted(p->coll))
        APPEND("root=%d\n", p->root);
    if (p->straggler >= 0)
        APPEND("straggler=%d\n", p->straggler);
    if (p->pipeline > 1)
        APPEND("pipeline=%u\n", p->pipeline);
    if (p->nchunks > 0)
        APPEND("chunks=%u\n", p->nchunks);
    if (p->stragglar.phase0 != NULL)
        APPEND("phase0=%s\n", p->stragglar.phase0);
    if (p->size_bytes > 0)
        APPEND("size=%.0f\n", p->size_bytes);
    if (p->milp.m > 0)
        APPEND("milp_m=%u\n", p->milp.m);
    if (p->milp.nodes != 0)
        APPEND("node_limit=%d\n", p->milp.nodes < 0 ? 0 : p->milp.nodes);
    if (p->milp.time_limit_s > 0)
        APPEND("time_limit=%g\n", p->milp.time_limit_s);
    if (p->milp.mip_gap >= 0)
        APPEND("mip_gap=%g\n", p->milp.mip_gap);
    if (p->milp.chunk_sizes != NULL)
        APPEND("chunk_sizes=%s\n", p->milp.chunk_sizes);
    if (p->seed != 0)
        APPEND("seed=%llu\n", (unsigned long long)p->seed);
#undef APPEND
}

int cmd_synth(int argc, char **argv)
{
    static const opt_id_t ids[] = {
        OPT_TOPO, OPT_ALPHA, OPT_BW, OPT_ALGO, OPT_COLL, OPT_ROOT,
        OPT_STRAGGLER, OPT_PHASE0, OPT_PIPELINE, OPT_CHUNKS, OPT_SEED,
        OPT_SIZE, OPT_TIME_LIMIT, OPT_MIP_GAP, OPT_MILP_M, OPT_NODE_LIMIT,
        OPT_CHUNK_SIZES, OPT_WRITE_LP, OPT_OUTPUT, OPT_QUIET, OPT_DOT,
        OPT_PROTO, OPT_CHANNELS, OPT_END
    };
    /* Arguments are checked below, after --dot's hint. */
    static const opt_cmd_t spec = { "synth", ids, synth_usage, -1 };
    const char *cmd = "synth";
    const char *algo = NULL, *topo_spec = NULL, *output = NULL;
    cli_opts_t co;
    algo_params_t p;
    topo_t *topo = NULL;
    ccs_sched_t *s = NULL;
    verify_report_t rep;
    ccs_err_t err = { { 0 } };
    ccs_status_t st;
    char params[1024];
    bool quiet = false;
    algo_report_t arep;            /* owned here: the build's report */
    int rc = CLI_EXIT_OK;

    algo_report_init(&arep);
    rc = opt_parse(&spec, argc, argv, &co);
    if (rc != CLI_EXIT_OK || co.help)
        goto cleanup;
    /* A .ccs file does not keep MultiTree's trees; the drawing has its own
     * command, which builds the same trees. */
    if (co.out.fmt == OPT_FMT_DOT) {
        rc = cli_fail(cmd, CLI_EXIT_USAGE, "--dot: draw MultiTree's trees "
                      "with 'ccsynth trees --topo SPEC -o OUT.dot', any "
                      "schedule with 'ccsynth show --dot FILE.ccs'");
        goto cleanup;
    }
    if (co.nargs > 0) {
        rc = cli_fail(cmd, CLI_EXIT_USAGE, "unexpected argument '%s'",
                      co.args[0]);
        goto cleanup;
    }
    st = opt_synth_check(&co.synth, true, &err);
    if (st == CCS_OK)
        st = opt_topo_check(&co.topo, true, &err);
    if (st != CCS_OK) {
        rc = cli_fail_status(cmd, st, &err);
        goto cleanup;
    }
    algo = co.synth.algo;
    opt_straggler_note(cmd, &co, algo, false);
    topo_spec = co.topo.spec;
    output = co.out.output;
    quiet = co.out.quiet;
    opt_fill_algo_params(&co, &p);
    rc = cli_load_topo(cmd, topo_spec, &co.topo.over, &topo);
    if (rc != CLI_EXIT_OK)
        goto cleanup;

    st = algo_synthesize_report(algo, topo, &p, &s, &arep, &err);
    if (st == CCS_OK && co.synth.write_lp != NULL && arep.lp != NULL)
        st = cli_write_text(co.synth.write_lp, arep.lp, "LP file", &err);
    if (st != CCS_OK) {
        if (st == CCS_ERR_NOMEM)
            rc = cli_fail(cmd, CLI_EXIT_INTERNAL, "out of memory budget: %s",
                          ccs_err_msg(&err, st));
        else
            rc = cli_fail_status(cmd, st, &err);
        goto cleanup;
    }
    if (!quiet)
        algo_report_print(&arep, stderr);
    params_text(algo, topo_spec, &p, params, sizeof(params));
    if (co.sim.proto_given && !co.sim.proto_auto &&
        co.sim.proto != SIM_PROTO_IDEAL && co.sim.proto != SIM_PROTO_PLAN) {
        size_t u = strlen(params);
        snprintf(params + u, sizeof(params) - u, "proto=%s\n",
                 sim_proto_str(co.sim.proto));
    }
    /* What the algorithm recorded (channels, nvls) stays in the plan. */
    if (s->params != NULL) {
        size_t u = strlen(params);
        snprintf(params + u, sizeof(params) - u, "%s", s->params);
    }
    st = ccs_sched_set_params(s, params, &err);
    if (st != CCS_OK) {
        rc = cli_fail_status(cmd, st, &err);
        goto cleanup;
    }
    /* A schedule the format cannot hold is refused before the verifier
     * spends minutes on it (a ring on 8192 ranks is 6.4 GB of ops). */
    if (output != NULL) {
        uint64_t bytes;

        st = ccs_format_encoded_size(s, &bytes, &err);
        if (st != CCS_OK) {
            rc = cli_fail(cmd, CLI_EXIT_INTERNAL, "format limit: %s %s on "
                          "%s: %s; nothing written (the schedule can still "
                          "be synthesized and verified without -o)", algo,
                          ccs_coll_str(p.coll), topo->name,
                          ccs_err_msg(&err, st));
            goto cleanup;
        }
    }
    st = verify_sched(s, &rep, &err);
    if (st != CCS_OK) {
        ccs_err_prefix(&err, "%s %s on %s: ", algo, ccs_coll_str(p.coll),
                       topo->name);
        rc = cli_fail_verify(cmd, st, &err, "schedule failed verification");
        goto cleanup;
    }
    if (output != NULL) {
        st = ccs_format_write_file(s, output, &err);
        if (st != CCS_OK) {
            rc = cli_fail_status(cmd, st, &err);
            goto cleanup;
        }
    }
    if (!quiet) {
        printf("%s %s on %s: %u ranks, %u chunks, %u steps, %u phase(s), "
               "verified%s%s%s\n",
               algo, ccs_coll_str(p.coll), topo->name, s->nranks, s->nchunks,
               s->nsteps, s->nphases, rep.one_port ? " (one-port)" : "",
               output ? " -> " : "", output ? output : "");
    }

cleanup:
    algo_report_free(&arep);
    ccs_sched_destroy(s);
    topo_destroy(topo);
    opt_free(&co);
    return rc;
}
