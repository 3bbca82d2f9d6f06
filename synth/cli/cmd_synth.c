/* cmd_synth.c - `ccsynth synth`: topology -> algorithm -> verify -> .ccs */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "algo.h"
#include "cli.h"
#include "sim_cost.h"
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
"      --straggler R      straggler rank written as default (stragglar)\n"
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
"      --dot FILE         also draw the algorithm's structure (multitree: its\n"
"                         spanning trees) as Graphviz DOT; - for stdout\n"
"      --alpha T          override every link's latency (e.g. 3us)\n"
"      --bw BW            override every link's bandwidth (e.g. 450GB/s)\n"
"  -q, --quiet            print nothing on success\n"
"  -h, --help             this text\n");
}

enum {
    OPT_ROOT = 256, OPT_STRAGGLER, OPT_PHASE0, OPT_PIPELINE, OPT_CHUNKS,
    OPT_SIZE, OPT_TIME_LIMIT, OPT_MIP_GAP, OPT_MILP_M, OPT_CHUNK_SIZES,
    OPT_WRITE_LP, OPT_SEED, OPT_ALPHA, OPT_BW, OPT_DOT, OPT_NODE_LIMIT
};

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
    static const struct option longopts[] = {
        { "algo", required_argument, NULL, 'a' },
        { "coll", required_argument, NULL, 'c' },
        { "topo", required_argument, NULL, 't' },
        { "output", required_argument, NULL, 'o' },
        { "root", required_argument, NULL, OPT_ROOT },
        { "straggler", required_argument, NULL, OPT_STRAGGLER },
        { "phase0", required_argument, NULL, OPT_PHASE0 },
        { "pipeline", required_argument, NULL, OPT_PIPELINE },
        { "chunks", required_argument, NULL, OPT_CHUNKS },
        { "size", required_argument, NULL, OPT_SIZE },
        { "time-limit", required_argument, NULL, OPT_TIME_LIMIT },
        { "mip-gap", required_argument, NULL, OPT_MIP_GAP },
        { "milp-m", required_argument, NULL, OPT_MILP_M },
        { "node-limit", required_argument, NULL, OPT_NODE_LIMIT },
        { "chunk-sizes", required_argument, NULL, OPT_CHUNK_SIZES },
        { "write-lp", required_argument, NULL, OPT_WRITE_LP },
        { "seed", required_argument, NULL, OPT_SEED },
        { "alpha", required_argument, NULL, OPT_ALPHA },
        { "bw", required_argument, NULL, OPT_BW },
        { "dot", required_argument, NULL, OPT_DOT },
        { "quiet", no_argument, NULL, 'q' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    const char *cmd = "synth";
    const char *algo = NULL, *topo_spec = NULL, *output = NULL;
    algo_params_t p;
    topo_opts_t topts = { 0, 0 };
    topo_t *topo = NULL;
    ccs_sched_t *s = NULL;
    verify_report_t rep;
    ccs_err_t err = { { 0 } };
    ccs_status_t st;
    char params[1024];
    bool quiet = false;
    const char *milp_opt = NULL;   /* a milp-only option that was given */
    const char *lp_out = NULL, *dot_out = NULL;  /* --write-lp, --dot */
    algo_report_t arep;            /* owned here: the build's report */
    int rc = CLI_EXIT_OK;
    int c;
    long v;

    algo_params_init(&p);
    algo_report_init(&arep);
    optind = 1;
    while ((c = getopt_long(argc, argv, "a:c:t:o:qh", longopts, NULL)) != -1) {
        switch (c) {
        case 'a': algo = optarg; break;
        case 't': topo_spec = optarg; break;
        case 'o': output = optarg; break;
        case 'q': quiet = true; break;
        case 'h': synth_usage(stdout); return CLI_EXIT_OK;
        case 'c':
            if (ccs_coll_parse(optarg, &p.coll) != CCS_OK)
                return cli_fail(cmd, CLI_EXIT_USAGE,
                                "unknown collective '%s'", optarg);
            break;
        case OPT_ROOT:
            if (!units_parse_int(optarg, 0, CCS_MAX_RANKS - 1, &v))
                return cli_fail(cmd, CLI_EXIT_USAGE, "bad --root '%s'", optarg);
            p.root = (int32_t)v;
            break;
        case OPT_STRAGGLER:
            if (!units_parse_int(optarg, 0, CCS_MAX_RANKS - 1, &v))
                return cli_fail(cmd, CLI_EXIT_USAGE, "bad --straggler '%s'",
                                optarg);
            p.straggler = (int32_t)v;
            break;
        case OPT_PHASE0: p.stragglar.phase0 = optarg; break;
        case OPT_PIPELINE:
            if (!units_parse_int(optarg, 1, 1024, &v))
                return cli_fail(cmd, CLI_EXIT_USAGE,
                                "bad --pipeline '%s' (1..1024)", optarg);
            p.pipeline = (uint32_t)v;
            break;
        case OPT_CHUNKS:
            if (!units_parse_int(optarg, 1, CCS_MAX_CHUNKS, &v))
                return cli_fail(cmd, CLI_EXIT_USAGE, "bad --chunks '%s'",
                                optarg);
            p.nchunks = (uint32_t)v;
            break;
        case OPT_SIZE:
            milp_opt = "--size";
            if (!units_parse_size(optarg, &p.size_bytes) || p.size_bytes <= 0)
                return cli_fail(cmd, CLI_EXIT_USAGE, "bad --size '%s'", optarg);
            break;
        case OPT_TIME_LIMIT:
            milp_opt = "--time-limit";
            if (!units_parse_time(optarg, &p.milp.time_limit_s) ||
                p.milp.time_limit_s <= 0)
                return cli_fail(cmd, CLI_EXIT_USAGE, "bad --time-limit '%s'",
                                optarg);
            break;
        case OPT_MIP_GAP:
            milp_opt = "--mip-gap";
            if (!units_parse_double(optarg, &p.milp.mip_gap) ||
                p.milp.mip_gap < 0)
                return cli_fail(cmd, CLI_EXIT_USAGE, "bad --mip-gap '%s'",
                                optarg);
            break;
        case OPT_MILP_M:
            milp_opt = "--milp-m";
            if (!units_parse_int(optarg, 1, 64, &v))
                return cli_fail(cmd, CLI_EXIT_USAGE, "bad --milp-m '%s' (1..64)",
                                optarg);
            p.milp.m = (uint32_t)v;
            break;
        case OPT_NODE_LIMIT:
            milp_opt = "--node-limit";
            if (!units_parse_int(optarg, 0, INT32_MAX, &v))
                return cli_fail(cmd, CLI_EXIT_USAGE,
                                "bad --node-limit '%s' (0: none, or a count)",
                                optarg);
            p.milp.nodes = v == 0 ? -1 : (int32_t)v;
            break;
        case OPT_CHUNK_SIZES:
            milp_opt = "--chunk-sizes";
            p.milp.chunk_sizes = optarg;
            break;
        case OPT_WRITE_LP:
            milp_opt = "--write-lp";
            lp_out = optarg;
            p.milp.want_lp = true;
            break;
        case OPT_DOT: dot_out = optarg; break;
        case OPT_SEED:
            if (!units_parse_int(optarg, 0, __LONG_MAX__, &v))
                return cli_fail(cmd, CLI_EXIT_USAGE, "bad --seed '%s'", optarg);
            p.seed = (uint64_t)v;
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
            synth_usage(stderr);
            return CLI_EXIT_USAGE;
        }
    }
    if (optind < argc)
        return cli_fail(cmd, CLI_EXIT_USAGE, "unexpected argument '%s'",
                        argv[optind]);
    if (algo == NULL)
        return cli_fail(cmd, CLI_EXIT_USAGE,
                        "--algo is required (see 'ccsynth list')");
    if (algo_find(algo) == NULL)
        return cli_fail(cmd, CLI_EXIT_USAGE,
                        "unknown algorithm '%s' (see 'ccsynth list')", algo);
    /* Only MultiTree has a structure worth drawing besides the schedule
     * itself (`ccsynth show --dot`); say so rather than ignore --dot. */
    if (dot_out != NULL && strcmp(algo, "multitree") != 0)
        return cli_fail(cmd, CLI_EXIT_USAGE,
                        "--dot draws multitree's trees; for any schedule use "
                        "'ccsynth show --dot FILE'");
    /* The solver's options mean nothing to the other algorithms: refuse
     * them rather than ignore them. */
    if (milp_opt != NULL && strcmp(algo, "milp") != 0)
        return cli_fail(cmd, CLI_EXIT_USAGE, "%s is an option of --algo milp",
                        milp_opt);
    rc = cli_load_topo(cmd, topo_spec, &topts, &topo);
    if (rc != CLI_EXIT_OK)
        goto cleanup;
    /* The MILP checks its piece sizes in the simulator. */
    p.milp.cost = sim_cost_time;

    st = algo_synthesize_report(algo, topo, &p, &s, &arep, &err);
    if (st == CCS_OK && lp_out != NULL && arep.lp != NULL)
        st = cli_write_text(lp_out, arep.lp, "LP file", &err);
    if (st == CCS_OK && dot_out != NULL && arep.trees != NULL)
        st = cli_write_trees_dot(arep.trees, topo, dot_out, &err);
    if (st != CCS_OK) {
        rc = cli_fail_status(cmd, st, &err);
        goto cleanup;
    }
    if (!quiet)
        algo_report_print(&arep, stderr);
    params_text(algo, topo_spec, &p, params, sizeof(params));
    st = ccs_sched_set_params(s, params, &err);
    if (st != CCS_OK) {
        rc = cli_fail_status(cmd, st, &err);
        goto cleanup;
    }
    st = verify_sched(s, &rep, &err);
    if (st != CCS_OK) {
        ccs_err_prefix(&err, "%s %s on %s: ", algo, ccs_coll_str(p.coll),
                       topo->name);
        rc = cli_fail(cmd, CLI_EXIT_VERIFY, "schedule failed verification: %s",
                      ccs_err_msg(&err, st));
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
    return rc;
}
