/*
 * cmd_sim.c - `ccsynth sim`: simulate a .ccs schedule on a topology over a
 * range of buffer sizes and print nccl-tests' columns (size, count, type,
 * time, algbw, busbw).  The model is docs/simulator.md.
 */
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "json.h"
#include "commands.h"
#include "sim.h"

static void sim_usage(FILE *f)
{
    fprintf(f,
"usage: ccsynth sim FILE.ccs [--topo SPEC|FILE] [options]\n"
"\n"
"Simulate a schedule with the alpha-beta model (link contention, max-min\n"
"fair sharing, stragglers) and print one line per buffer size in\n"
"nccl-tests' columns: size (B), count (elements), type, time (us),\n"
"algbw = size / time (GB/s, 1e9), busbw = algbw * nccl-tests' factor\n"
"(allreduce 2(n-1)/n; reducescatter, allgather, alltoall (n-1)/n;\n"
"broadcast, reduce 1).  The model: docs/simulator.md.\n"
"\n"
"  -t, --topo SPEC|FILE      topology (default: the topo= the schedule was\n"
"                            synthesized for, from its parameters)\n"
"  -s, --sizes LIST          sizes: SIZE, LO:HI[:FACTOR] or a comma list\n"
"                            (default 1K:4G, doubling)\n"
"      --type T              element type for the count column and chunk\n"
"                            padding (default float32)\n"
"  -m, --mode rank|barrier   per-rank step dependencies as the executor\n"
"                            runs them (default), or a global barrier\n"
"      --straggler R         rank R arrives late (default: the schedule's\n"
"                            straggler when --straggler-delay is given)\n"
"      --straggler-delay D   ... at time D (e.g. 5ms); others start at 0\n"
"      --arrivals FILE       per-rank arrival times, lines \"rank seconds\"\n"
"      --local-bw BW         cost of COPY/REDUCE_LOCAL (default: free)\n"
"      --alpha T             override every link's latency (e.g. 3us)\n"
"      --bw BW               override every link's bandwidth (450GB/s)\n"
"      --csv | --json        machine-readable output\n"
"      --time                report the simulator's own run time (stderr)\n"
"  -h, --help                this text\n"
"\n"
"exit codes: 0 ok, 1 internal error, 2 usage, 3 bad input (file,\n"
"topology, rank count mismatch)\n");
}

enum {
    OPT_TYPE = 256, OPT_STRAGGLER, OPT_DELAY, OPT_ARRIVALS, OPT_LOCAL_BW,
    OPT_ALPHA, OPT_BW, OPT_CSV, OPT_JSON, OPT_TIME
};

enum { OUT_TEXT, OUT_CSV, OUT_JSON };

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The value of "key=" in a params text, copied into buf; false if absent. */
static bool param_value(const char *params, const char *key, char *buf,
                        size_t len)
{
    size_t kl = strlen(key);

    for (const char *p = params; p != NULL && *p != '\0';) {
        const char *nl = strchr(p, '\n');
        size_t ll = nl ? (size_t)(nl - p) : strlen(p);
        if (ll > kl && strncmp(p, key, kl) == 0 && p[kl] == '=') {
            size_t vl = ll - kl - 1;
            if (vl >= len || vl == 0)
                return false;
            memcpy(buf, p + kl + 1, vl);
            buf[vl] = '\0';
            return true;
        }
        p = nl ? nl + 1 : NULL;
    }
    return false;
}

static void print_row(int fmt, bool first, double size, double count,
                      const char *type, const sim_result_t *r, double factor,
                      const topo_t *t)
{
    double us = r->time_s * 1e6;
    double algbw = r->time_s > 0 ? size / r->time_s / 1e9 : 0;
    double busbw = algbw * factor;

    if (fmt == OUT_CSV) {
        printf("%.0f,%.0f,%s,%.6f,%.6f,%.6f\n", size, count, type, us, algbw,
               busbw);
        return;
    }
    if (fmt == OUT_TEXT) {
        printf("%13.0f %13.0f %9s %12.2f %12.2f %12.2f\n", size, count, type,
               us, algbw, busbw);
        return;
    }
    printf("%s\n    {\"size\": %.0f, \"count\": %.0f, \"type\": \"%s\", "
           "\"time_us\": %.6f, \"algbw_GBps\": %.6f, \"busbw_GBps\": %.6f,\n"
           "     \"chunk_bytes\": %.0f, \"phase_end_us\": [",
           first ? "" : ",", size, count, type, us, algbw, busbw,
           r->chunk_bytes);
    for (uint32_t p = 0; p < r->nphases; p++)
        printf("%s%.6f", p ? ", " : "", r->phase_end_s[p] * 1e6);
    printf("], \"busiest_link\": ");
    if (r->busiest_link >= 0) {
        char name[2 * TOPO_NAME_MAX + 8];
        const topo_link_t *l = &t->links[r->busiest_link];
        snprintf(name, sizeof(name), "%s->%s", t->nodes[l->src].name,
                 t->nodes[l->dst].name);
        json_str(stdout, name);
    } else {
        printf("null");
    }
    printf(", \"busiest_util\": %.6f}", r->busiest_util);
}

int cmd_sim(int argc, char **argv)
{
    static const struct option longopts[] = {
        { "topo", required_argument, NULL, 't' },
        { "sizes", required_argument, NULL, 's' },
        { "mode", required_argument, NULL, 'm' },
        { "type", required_argument, NULL, OPT_TYPE },
        { "straggler", required_argument, NULL, OPT_STRAGGLER },
        { "straggler-delay", required_argument, NULL, OPT_DELAY },
        { "arrivals", required_argument, NULL, OPT_ARRIVALS },
        { "local-bw", required_argument, NULL, OPT_LOCAL_BW },
        { "alpha", required_argument, NULL, OPT_ALPHA },
        { "bw", required_argument, NULL, OPT_BW },
        { "csv", no_argument, NULL, OPT_CSV },
        { "json", no_argument, NULL, OPT_JSON },
        { "time", no_argument, NULL, OPT_TIME },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    const char *cmd = "sim";
    const char *path = NULL, *topo_spec = NULL, *sizes_spec = "1K:4G";
    const char *arrivals = NULL;
    char topo_buf[256];
    topo_opts_t topts = { 0, 0 };
    ccs_dtype_t dtype = CCS_FLOAT32;
    sim_opts_t o;
    topo_t *topo = NULL;          /* owned */
    ccs_sched_t *s = NULL;        /* owned */
    sim_t *sim = NULL;            /* owned */
    double *sizes = NULL;         /* owned */
    double *arr = NULL;           /* owned */
    uint32_t nsizes = 0;
    ccs_err_t err = { { 0 } };
    ccs_status_t st;
    bool have_delay = false, have_strag = false, timing = false;
    int fmt = OUT_TEXT, rc = CLI_EXIT_OK, c;
    double t0, t_prep = 0, t_run = 0, factor;
    long v;

    sim_opts_init(&o);
    optind = 1;
    while ((c = getopt_long(argc, argv, "t:s:m:h", longopts, NULL)) != -1) {
        switch (c) {
        case 't': topo_spec = optarg; break;
        case 's': sizes_spec = optarg; break;
        case 'm':
            if (sim_mode_parse(optarg, &o.mode) != CCS_OK)
                return cli_fail(cmd, CLI_EXIT_USAGE,
                                "bad --mode '%s' (rank or barrier)", optarg);
            break;
        case OPT_TYPE:
            if (ccs_dtype_parse(optarg, &dtype) != CCS_OK)
                return cli_fail(cmd, CLI_EXIT_USAGE, "unknown --type '%s'",
                                optarg);
            break;
        case OPT_STRAGGLER:
            if (!units_parse_int(optarg, 0, CCS_MAX_RANKS - 1, &v))
                return cli_fail(cmd, CLI_EXIT_USAGE, "bad --straggler '%s'",
                                optarg);
            o.straggler = (int32_t)v;
            have_strag = true;
            break;
        case OPT_DELAY:
            if (!units_parse_time(optarg, &o.straggler_delay_s))
                return cli_fail(cmd, CLI_EXIT_USAGE,
                                "bad --straggler-delay '%s'", optarg);
            have_delay = true;
            break;
        case OPT_ARRIVALS: arrivals = optarg; break;
        case OPT_LOCAL_BW:
            if (!units_parse_bw(optarg, &o.local_bw_Bps))
                return cli_fail(cmd, CLI_EXIT_USAGE, "bad --local-bw '%s'",
                                optarg);
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
        case OPT_CSV: fmt = OUT_CSV; break;
        case OPT_JSON: fmt = OUT_JSON; break;
        case OPT_TIME: timing = true; break;
        case 'h': sim_usage(stdout); return CLI_EXIT_OK;
        default:
            sim_usage(stderr);
            return CLI_EXIT_USAGE;
        }
    }
    if (optind >= argc)
        return cli_fail(cmd, CLI_EXIT_USAGE, "a schedule file is required");
    path = argv[optind++];
    if (optind < argc)
        return cli_fail(cmd, CLI_EXIT_USAGE, "unexpected argument '%s'",
                        argv[optind]);
    if (have_strag && !have_delay)
        return cli_fail(cmd, CLI_EXIT_USAGE,
                        "--straggler needs --straggler-delay");
    st = sim_parse_sizes(sizes_spec, &sizes, &nsizes, &err);
    if (st != CCS_OK)
        return cli_fail_status(cmd, st, &err);
    o.elem_bytes = (uint32_t)ccs_dtype_size(dtype);

    rc = cli_read_sched(cmd, path, &s);
    if (rc != CLI_EXIT_OK)
        goto cleanup;
    if (topo_spec == NULL &&
        param_value(s->params, "topo", topo_buf, sizeof(topo_buf)))
        topo_spec = topo_buf;
    if (topo_spec == NULL) {
        rc = cli_fail(cmd, CLI_EXIT_USAGE,
                      "--topo is required (%s records no topology)", path);
        goto cleanup;
    }
    rc = cli_load_topo(cmd, topo_spec, &topts, &topo);
    if (rc != CLI_EXIT_OK)
        goto cleanup;
    if (s->topo_fingerprint != 0 && s->topo_fingerprint != topo->fingerprint)
        fprintf(stderr, "ccsynth sim: note: %s was synthesized for another "
                "topology than '%s' (fingerprints differ); simulating "
                "anyway\n", path, topo->name);
    if (have_delay && !have_strag) {
        if (s->straggler < 0) {
            rc = cli_fail(cmd, CLI_EXIT_USAGE,
                          "--straggler-delay needs --straggler (%s names no "
                          "straggler)", path);
            goto cleanup;
        }
        o.straggler = s->straggler;
    }
    if (o.straggler >= 0 && (uint32_t)o.straggler >= s->nranks) {
        rc = cli_fail(cmd, CLI_EXIT_USAGE, "--straggler %d out of range "
                      "0..%u", o.straggler, s->nranks - 1);
        goto cleanup;
    }
    if (arrivals != NULL) {
        st = sim_read_arrivals(arrivals, s->nranks, &arr, &err);
        if (st != CCS_OK) {
            rc = cli_fail_status(cmd, st, &err);
            goto cleanup;
        }
        o.arrival_s = arr;
    }

    t0 = now_s();
    st = sim_create(s, topo, &o, &sim, &err);
    t_prep = now_s() - t0;
    if (st != CCS_OK) {
        ccs_err_prefix(&err, "%s on %s: ", path, topo->name);
        rc = cli_fail_status(cmd, st, &err);
        goto cleanup;
    }
    factor = sim_busbw_factor(s->coll, s->nranks);
    if (fmt == OUT_TEXT) {
        printf("# ccsynth sim: %s %s, %u ranks, %u chunks, %u steps, "
               "%u phase(s) on %s, mode %s\n", s->algo, ccs_coll_str(s->coll),
               s->nranks, s->nchunks, s->nsteps, s->nphases, topo->name,
               sim_mode_str(o.mode));
        if (o.straggler >= 0)
            printf("# straggler: rank %d arrives at %g us\n", o.straggler,
                   o.straggler_delay_s * 1e6);
        if (arr != NULL)
            printf("# arrivals: %s\n", arrivals);
        printf("#\n# %11s %13s %9s %12s %12s %12s\n", "size", "count", "type",
               "time(us)", "algbw(GB/s)", "busbw(GB/s)");
    } else if (fmt == OUT_CSV) {
        printf("size,count,type,time_us,algbw_GBps,busbw_GBps\n");
    } else {
        printf("{\"schedule\": ");
        json_str(stdout, path);
        printf(", \"algo\": ");
        json_str(stdout, s->algo);
        printf(", \"coll\": \"%s\", \"nranks\": %u, \"topo\": ",
               ccs_coll_str(s->coll), s->nranks);
        json_str(stdout, topo->name);
        printf(", \"mode\": \"%s\", \"straggler\": %d, "
               "\"straggler_delay_s\": %.9g, \"busbw_factor\": %.9g,\n"
               " \"results\": [", sim_mode_str(o.mode), o.straggler,
               o.straggler_delay_s, factor);
    }
    for (uint32_t i = 0; i < nsizes; i++) {
        sim_result_t r;
        double ts;

        t0 = now_s();
        st = sim_exec(sim, sizes[i], &o, &r, &err);
        ts = now_s() - t0;
        t_run += ts;
        if (st != CCS_OK) {
            if (fmt == OUT_JSON)
                printf("]}\n");
            rc = cli_fail_status(cmd, st, &err);
            goto cleanup;
        }
        if (timing)
            fprintf(stderr, "ccsynth sim: time: size %.0f: %.3f ms "
                    "(%llu transfers, %llu events)\n", sizes[i], ts * 1e3,
                    (unsigned long long)r.ntransfers,
                    (unsigned long long)r.nevents);
        print_row(fmt, i == 0, sizes[i],
                  ceil(sizes[i] / (double)o.elem_bytes),
                  ccs_dtype_str(dtype), &r, factor, topo);
        sim_result_free(&r);
    }
    if (fmt == OUT_JSON)
        printf("\n]}\n");
    if (timing)
        fprintf(stderr, "ccsynth sim: time: prepare %.3f ms, %u size(s) "
                "%.3f ms\n", t_prep * 1e3, nsizes, t_run * 1e3);
    if (fflush(stdout) != 0)
        rc = cli_fail(cmd, CLI_EXIT_INTERNAL, "write error on stdout");

cleanup:
    sim_destroy(sim);
    free(arr);
    free(sizes);
    ccs_sched_destroy(s);
    topo_destroy(topo);
    return rc;
}
