/*
 * cmd_sim.c - `ccsynth sim`: simulate a .ccs schedule on a topology over a
 * range of buffer sizes and print nccl-tests' columns (size, count, type,
 * time, algbw, busbw).  The model is docs/simulator.md.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "baseline.h"
#include "cli.h"
#include "json.h"
#include "commands.h"
#include "options.h"
#include "sim.h"
#include "sim_bound.h"

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
"  -m, --mode rank|barrier|dataflow\n"
"                            per-rank step dependencies as the executor\n"
"                            runs them (default), a global barrier, or\n"
"                            hazard-ordered issue (ops start when the\n"
"                            chunks they touch are free; the CPU\n"
"                            executors' issue window, not CUDA/NCCL)\n"
"      --window W            dataflow: steps in flight per rank (default\n"
"                            4; 1 is the rank mode)\n"
"      --straggler R         rank R arrives late (default: the schedule's\n"
"                            straggler when --straggler-delay is given)\n"
"      --straggler-delay D   ... at time D (e.g. 5ms); others start at 0\n"
"      --arrivals FILE       per-rank arrival times, lines \"rank seconds\"\n"
"      --local-bw BW         cost of COPY/REDUCE_LOCAL (default: free)\n"
"      --proto P             ll, ll128, simple or ideal (default: the\n"
"                            schedule's proto= param, else ideal)\n"
"      --vs-nccl             add the nccl baseline (the best of NCCL's\n"
"                            algorithms and protocols at each size, same\n"
"                            straggler) and the speedup against it\n"
"      --alpha T             override every link's latency (e.g. 3us)\n"
"      --bw BW               override every link's bandwidth (450GB/s)\n"
"  -j, --json | --csv        machine-readable output\n"
"      --time                report the simulator's own run and cpu time\n"
"                            and its events per cpu second (stderr)\n"
"  -q, --quiet               no notes on stderr\n"
"  -h, --help                this text\n"
"\n"
"Times need a unit (s, ms, us, ns): --straggler-delay 20 is refused.\n"
"\n"
"exit codes: 0 ok, 1 internal error, 2 usage, 3 bad input (file,\n"
"topology, rank count mismatch)\n");
}

enum { OUT_TEXT, OUT_CSV, OUT_JSON };

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* This process's CPU time: on a loaded machine the steadier figure. */
static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
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
                      const topo_t *t, const base_point_t *b)
{
    double us = r->time_s * 1e6;
    double algbw = r->time_s > 0 ? size / r->time_s / 1e9 : 0;
    double busbw = algbw * factor;
    bool hb = b != NULL && isfinite(b->time_s) && r->time_s > 0;

    if (fmt == OUT_CSV) {
        printf("%.0f,%.0f,%s,%.6f,%.6f,%.6f", size, count, type, us, algbw,
               busbw);
        if (b != NULL && hb)
            printf(",%.6f,%s,%.6f", b->time_s * 1e6, b->algo,
                   b->time_s / r->time_s);
        else if (b != NULL)
            printf(",,,");
        printf("\n");
        return;
    }
    if (fmt == OUT_TEXT) {
        printf("%13.0f %13.0f %9s %12.2f %12.2f %12.2f", size, count, type,
               us, algbw, busbw);
        if (b != NULL && hb)
            printf(" %12.2f %16s %8.2fx", b->time_s * 1e6, b->algo,
                   b->time_s / r->time_s);
        else if (b != NULL)
            printf(" %12s %16s %9s", "-", "n/a", "-");
        printf("\n");
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
    printf(", \"busiest_util\": %.6f", r->busiest_util);
    if (b != NULL && hb) {
        printf(", \"nccl_time_us\": %.6f, \"nccl_choice\": ",
               b->time_s * 1e6);
        json_str(stdout, b->algo);
        printf(", \"vs_nccl\": %.6f", b->time_s / r->time_s);
    }
    printf("}");
}

/* Under a row with a straggler: its time after arrival, the lower bound
 * on it (sim_bound.h) and when phase 0 ended (the delay past which the
 * figure means what it says). */
static void print_after_arrival(const topo_t *t, const sim_opts_t *o,
                                double size, const sim_result_t *r)
{
    sim_bound_t bd;
    ccs_err_t err = { { 0 } };

    printf("#   after rank %d arrives: %.2f us", o->straggler,
           (r->time_s - o->straggler_delay_s) * 1e6);
    if (sim_straggler_bound(t, o->straggler, size, &bd, &err) == CCS_OK)
        printf(", lower bound %.2f us (%s)", bd.time_s * 1e6, bd.cut);
    if (r->nphases > 1)
        printf(", phase 0 ended at %.2f us", r->phase_end_s[0] * 1e6);
    printf("\n");
}

int cmd_sim(int argc, char **argv)
{
    static const opt_id_t ids[] = {
        OPT_TOPO, OPT_ALPHA, OPT_BW, OPT_STRAGGLER, OPT_SIZES, OPT_TYPE,
        OPT_MODE, OPT_DELAY, OPT_ARRIVALS, OPT_LOCAL_BW, OPT_JSON, OPT_CSV,
        OPT_QUIET, OPT_TIME, OPT_PROTO, OPT_VS_NCCL, OPT_WINDOW, OPT_END
    };
    static const opt_cmd_t spec = { "sim", ids, sim_usage, 1 };
    const char *cmd = "sim";
    const char *path = NULL, *topo_spec = NULL, *arrivals = NULL;
    char topo_buf[256];
    cli_opts_t co;
    sim_opts_t o;
    topo_t *topo = NULL;          /* owned */
    ccs_sched_t *s = NULL;        /* owned */
    sim_t *sim = NULL;            /* owned */
    const double *sizes = NULL;   /* borrowed from co */
    double *arr = NULL;           /* owned */
    uint32_t nsizes = 0;
    base_point_t *base = NULL;   /* owned; [nsizes] with --vs-nccl */
    char note[512];
    bool proto_auto = false;
    ccs_err_t err = { { 0 } };
    ccs_status_t st;
    bool timing = false;
    int fmt = OUT_TEXT, rc;
    int32_t rank = -1;
    double t0, c0, t_prep = 0, t_run = 0, c_prep = 0, c_run = 0, factor;
    uint64_t ev_run = 0;
    ccs_dtype_t dtype;

    rc = opt_parse(&spec, argc, argv, &co);
    if (rc != CLI_EXIT_OK || co.help)
        goto cleanup;
    timing = co.own[OPT_TIME] != NULL;
    fmt = co.out.fmt == OPT_FMT_JSON ? OUT_JSON
          : co.out.fmt == OPT_FMT_CSV ? OUT_CSV : OUT_TEXT;
    dtype = co.sim.dtype;
    topo_spec = co.topo.spec;
    arrivals = co.sim.arrivals;
    if (co.nargs < 1) {
        rc = cli_fail(cmd, CLI_EXIT_USAGE, "a schedule file is required");
        goto cleanup;
    }
    path = co.args[0];
    st = opt_sim_sizes(&co.sim, "1K:4G", &err);
    if (st != CCS_OK) {
        rc = cli_fail_status(cmd, st, &err);
        goto cleanup;
    }
    sizes = co.sim.sizes;
    nsizes = co.sim.nsizes;

    rc = cli_read_sched(cmd, path, &s);
    if (rc != CLI_EXIT_OK)
        goto cleanup;
    /* The pairing rule: a delay without --straggler delays the rank the
     * schedule was made for. */
    st = opt_sim_check(&co.sim, co.synth.straggler, s->straggler, &rank,
                       &err);
    if (st == CCS_OK)
        st = opt_rank_check("--straggler", rank, s->nranks, &err);
    if (st != CCS_OK) {
        rc = cli_fail_status(cmd, st, &err);
        goto cleanup;
    }
    opt_fill_sim_opts(&co, rank, &o);
    if (topo_spec == NULL &&
        param_value(s->params, "topo", topo_buf, sizeof(topo_buf)))
        topo_spec = topo_buf;
    if (topo_spec == NULL) {
        rc = cli_fail(cmd, CLI_EXIT_USAGE,
                      "--topo is required (%s records no topology)", path);
        goto cleanup;
    }
    rc = cli_load_topo(cmd, topo_spec, &co.topo.over, &topo);
    if (rc != CLI_EXIT_OK)
        goto cleanup;
    if (s->topo_fingerprint != 0 && s->topo_fingerprint != topo->fingerprint
        && !co.out.quiet)
        fprintf(stderr, "ccsynth sim: note: %s was synthesized for another "
                "topology than '%s' (fingerprints differ); simulating "
                "anyway\n", path, topo->name);
    if (arrivals != NULL) {
        st = sim_read_arrivals(arrivals, s->nranks, &arr, &err);
        if (st != CCS_OK) {
            rc = cli_fail_status(cmd, st, &err);
            goto cleanup;
        }
        o.arrival_s = arr;
    }

    t0 = now_s();
    c0 = cpu_s();
    st = sim_create(s, topo, &o, &sim, &err);
    t_prep = now_s() - t0;
    c_prep = cpu_s() - c0;
    if (st != CCS_OK) {
        ccs_err_prefix(&err, "%s on %s: ", path, topo->name);
        rc = cli_fail_status(cmd, st, &err);
        goto cleanup;
    }
    if (co.own[OPT_VS_NCCL] != NULL) {
        algo_params_t bp;
        sim_opts_t bo = o;

        base = calloc(nsizes, sizeof(*base));
        if (base == NULL) {
            rc = cli_fail(cmd, CLI_EXIT_INTERNAL, "out of memory");
            goto cleanup;
        }
        algo_params_init(&bp);
        bp.coll = s->coll;
        /* NCCL picks its protocol; a fixed --proto binds it too. */
        bo.proto = co.sim.proto_given ? co.sim.proto : SIM_PROTO_PLAN;
        st = base_applies(s->coll)
                 ? base_nccl(topo, &bp, &bo, sizes, nsizes, base, &err)
                 : CCS_ERR_UNSUPPORTED;
        if (st == CCS_ERR_UNSUPPORTED) {
            for (uint32_t i = 0; i < nsizes; i++)
                base[i].time_s = INFINITY;
        } else if (st != CCS_OK) {
            rc = cli_fail_status(cmd, st, &err);
            goto cleanup;
        }
        base_assumptions(topo, bo.proto, note, sizeof(note));
        proto_auto = !co.sim.proto_given &&
                     sim_proto_resolve(SIM_PROTO_PLAN, s) == SIM_PROTO_IDEAL;
    }
    factor = sim_busbw_factor(s->coll, s->nranks);
    if (fmt == OUT_TEXT) {
        printf("# ccsynth sim: %s %s, %u ranks, %u chunks, %u steps, "
               "%u phase(s) on %s, mode %s\n", s->algo, ccs_coll_str(s->coll),
               s->nranks, s->nchunks, s->nsteps, s->nphases, topo->name,
               sim_mode_str(o.mode));
        if (sim_mode_note(o.mode) != NULL)
            printf("# mode %s, window %u: %s\n", sim_mode_str(o.mode),
                   o.window ? o.window : SIM_DATAFLOW_WINDOW,
                   sim_mode_note(o.mode));
        if (o.straggler >= 0)
            printf("# straggler: rank %d arrives at %g us\n", o.straggler,
                   o.straggler_delay_s * 1e6);
        if (arr != NULL)
            printf("# arrivals: %s\n", arrivals);
        printf("# protocol: %s\n",
               proto_auto ? "best of ll, ll128, simple per size"
                          : sim_proto_str(sim_proto_resolve(o.proto, s)));
        if (base != NULL)
            printf("# %s\n", note);
        printf("#\n# %11s %13s %9s %12s %12s %12s", "size", "count", "type",
               "time(us)", "algbw(GB/s)", "busbw(GB/s)");
        if (base != NULL)
            printf(" %12s %16s %9s", "nccl(us)", "nccl choice", "vs nccl");
        printf("\n");
    } else if (fmt == OUT_CSV) {
        if (sim_mode_note(o.mode) != NULL)
            printf("# mode %s, window %u: %s\n", sim_mode_str(o.mode),
                   o.window ? o.window : SIM_DATAFLOW_WINDOW,
                   sim_mode_note(o.mode));
        printf("size,count,type,time_us,algbw_GBps,busbw_GBps%s\n",
               base != NULL ? ",nccl_time_us,nccl_choice,vs_nccl" : "");
    } else {
        printf("{\"schedule\": ");
        json_str(stdout, path);
        printf(", \"algo\": ");
        json_str(stdout, s->algo);
        printf(", \"coll\": \"%s\", \"nranks\": %u, \"topo\": ",
               ccs_coll_str(s->coll), s->nranks);
        json_str(stdout, topo->name);
        if (sim_mode_note(o.mode) != NULL) {
            printf(", \"window\": %u, \"mode_note\": ",
                   o.window ? o.window : SIM_DATAFLOW_WINDOW);
            json_str(stdout, sim_mode_note(o.mode));
        }
        printf(", \"mode\": \"%s\", \"straggler\": %d, "
               "\"straggler_delay_s\": %.9g, \"busbw_factor\": %.9g,\n"
               " \"results\": [", sim_mode_str(o.mode), o.straggler,
               o.straggler_delay_s, factor);
    }
    for (uint32_t i = 0; i < nsizes; i++) {
        sim_result_t r;
        double ts;

        uint64_t ev = 0;
        double cs;

        t0 = now_s();
        c0 = cpu_s();
        st = sim_exec(sim, sizes[i], &o, &r, &err);
        if (st == CCS_OK)
            ev = r.nevents;
        /* Against the baseline, which picks NCCL's best protocol, a plan
         * that names none is timed at its own best one too. */
        for (int pr = SIM_PROTO_LL; st == CCS_OK && proto_auto &&
             pr <= SIM_PROTO_SIMPLE; pr++) {
            sim_opts_t op = o;
            sim_result_t r2;

            op.proto = (sim_proto_t)pr;
            st = sim_exec(sim, sizes[i], &op, &r2, &err);
            if (st == CCS_OK)
                ev += r2.nevents;
            if (st == CCS_OK && (pr == SIM_PROTO_LL ||
                                 r2.time_s < r.time_s)) {
                sim_result_free(&r);
                r = r2;
            } else if (st == CCS_OK) {
                sim_result_free(&r2);
            } else {
                sim_result_free(&r);   /* the error path below owns none */
            }
        }
        ts = now_s() - t0;
        cs = cpu_s() - c0;
        t_run += ts;
        c_run += cs;
        ev_run += ev;
        if (st != CCS_OK) {
            if (fmt == OUT_JSON)
                printf("]}\n");
            rc = cli_fail_status(cmd, st, &err);
            goto cleanup;
        }
        if (timing)
            fprintf(stderr, "ccsynth sim: time: size %.0f: %.3f ms, cpu "
                    "%.3f ms (%llu transfers, %llu events)\n", sizes[i],
                    ts * 1e3, cs * 1e3, (unsigned long long)r.ntransfers,
                    (unsigned long long)ev);
        print_row(fmt, i == 0, sizes[i],
                  ceil(sizes[i] / (double)o.elem_bytes),
                  ccs_dtype_str(dtype), &r, factor, topo,
                  base != NULL ? &base[i] : NULL);
        if (fmt == OUT_TEXT && o.straggler >= 0)
            print_after_arrival(topo, &o, sizes[i], &r);
        sim_result_free(&r);
    }
    if (fmt == OUT_JSON)
        printf("\n]}\n");
    if (timing)
        fprintf(stderr, "ccsynth sim: time: prepare %.3f ms (cpu %.3f), "
                "%u size(s) %.3f ms (cpu %.3f), %llu events, %.2f M "
                "events/s of cpu\n", t_prep * 1e3, c_prep * 1e3, nsizes,
                t_run * 1e3, c_run * 1e3, (unsigned long long)ev_run,
                c_run > 0 ? (double)ev_run / c_run * 1e-6 : 0.0);
    if (fflush(stdout) != 0)
        rc = cli_fail(cmd, CLI_EXIT_INTERNAL, "write error on stdout");

cleanup:
    free(base);
    sim_destroy(sim);
    free(arr);
    opt_free(&co);
    ccs_sched_destroy(s);
    topo_destroy(topo);
    return rc;
}
