/*
 * cmd_compare.c - `ccsynth compare`: synthesize several algorithms for one
 * collective on one topology, verify each, simulate each over a range of
 * buffer sizes, and print them side by side (time and algbw per algorithm,
 * plus the fastest); --plot draws algbw against size with gnuplot.
 *
 * Every row also carries the `nccl` baseline (baseline.h): the best of
 * NCCL's algorithms and protocols at that size; each algorithm's speedup
 * is against it, never against the single ring.  Protocols: by default
 * every algorithm is timed at its best of LL, LL128 and Simple per size
 * (--proto fixes one; --proto ideal is the pure alpha-beta model).
 *
 * An algorithm that cannot run on the topology (CCS_ERR_UNSUPPORTED, e.g.
 * rhd on a non-power-of-two rank count) is left out with a note on stderr;
 * any other failure, verification included, stops the command.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "algo.h"
#include "baseline.h"
#include "cli.h"
#include "json.h"
#include "outfile.h"
#include "commands.h"
#include "options.h"
#include "sim.h"
#include "sim_bound.h"
#include "verify.h"

#define CMP_MAX_ALGOS 32

static void compare_usage(FILE *f)
{
    fprintf(f,
"usage: ccsynth compare --topo SPEC|FILE [options]\n"
"\n"
"Synthesize, verify and simulate several algorithms and print, per buffer\n"
"size, each one's time (us) and algbw (GB/s) and the fastest.  Algorithms\n"
"that cannot run on the topology are left out with a note.\n"
"\n"
"  -t, --topo SPEC|FILE      topology (required)\n"
"  -c, --coll COLL           collective (default allreduce)\n"
"  -a, --algos LIST          comma-separated (default: every algorithm\n"
"                            that implements the collective; stragglar\n"
"                            when --straggler is given; milp only when\n"
"                            named, as its solver is slow)\n"
"  -s, --sizes LIST          SIZE, LO:HI[:FACTOR] or a comma list\n"
"                            (default 1K:4G, doubling)\n"
"      --type T              element type (default float32)\n"
"      --root R              root of reduce/broadcast (default 0)\n"
"  -m, --mode rank|barrier|dataflow\n"
"                            step semantics (default rank; dataflow:\n"
"                            hazard-ordered issue: not on NCCL)\n"
"      --window W            dataflow: steps in flight per rank (default\n"
"                            4; 1 is the rank mode)\n"
"      --straggler R         rank R arrives late (also given to the\n"
"                            algorithms, e.g. stragglar) ...\n"
"      --straggler-delay D   ... at time D (e.g. 5ms)\n"
"      --arrivals FILE       per-rank arrival times, lines \"rank seconds\"\n"
"      --local-bw BW         cost of COPY/REDUCE_LOCAL (default: free)\n"
"      --proto P             auto (default: each algorithm at its best of\n"
"                            ll, ll128, simple per size), ll, ll128,\n"
"                            simple, or ideal (pure alpha-beta)\n"
"      --channels C          channels of nccl-ring / nccl-tree when named,\n"
"                            and of every other algorithm's transfers\n"
"                            (default: as many as NCCL's ring uses here)\n"
"      --alpha T, --bw BW    override every link's latency / bandwidth\n"
"      --plot OUT.svg        draw algbw against size (gnuplot, svg)\n"
"  -j, --json | --csv        machine-readable output\n"
"  -q, --quiet               no notes on stderr\n"
"  -h, --help                this text\n"
"\n"
"Every row carries the nccl baseline: the fastest of NCCL's algorithms\n"
"(nccl-ring, nccl-tree, nvls) and protocols at that size, with the\n"
"straggler's delay like everyone; 'vs nccl' is its time over the\n"
"algorithm's (> 1: faster than NCCL).  The '# assumes' line names what\n"
"the numbers rest on (NICs, NVLS, protocol calibration).\n"
"\n"
"Times need a unit (s, ms, us, ns): --straggler-delay 20 is refused.\n"
"\n"
"exit codes: 0 ok, 1 internal error (gnuplot failing included), 2 usage,\n"
"3 bad input, 4 a schedule failed verification, 5 no algorithm could run\n");
}

enum { OUT_TEXT, OUT_CSV, OUT_JSON };

/* gnuplot single-quoted string: a quote is written twice. */
static void gp_str(FILE *f, const char *s)
{
    fputc('\'', f);
    for (; *s != '\0'; s++) {
        if (*s == '\'')
            fputc('\'', f);
        if (*s != '\n')
            fputc(*s, f);
    }
    fputc('\'', f);
}

/* Draw algbw[a * nsizes + i] against sizes; written to a temporary file
 * beside `out` and renamed over it only when gnuplot succeeded. */
static int write_plot(const char *out, const char *title, char **names,
                      uint32_t nalgos, const double *sizes, uint32_t nsizes,
                      const double *algbw)
{
    const char *cmd = "compare";
    ccs_out_t *o = NULL;   /* committed or aborted here */
    ccs_err_t err;
    FILE *gp = NULL;
    int status, rc = CLI_EXIT_OK;

    /* gnuplot writes the file itself, to the writer's temporary path (or
     * straight into a device or FIFO given as the output). */
    if (ccs_out_open(out, &o, &err) != CCS_OK)
        return cli_fail(cmd, CLI_EXIT_INTERNAL, "%s", err.msg);
    gp = popen("gnuplot", "w");
    if (gp == NULL) {
        rc = cli_fail(cmd, CLI_EXIT_INTERNAL, "cannot run gnuplot");
        goto cleanup;
    }
    fprintf(gp, "set terminal svg size 900,560 dynamic noenhanced "
            "font 'sans,12' background rgb 'white'\nset output ");
    gp_str(gp, ccs_out_path(o));
    fprintf(gp, "\nset title ");
    gp_str(gp, title);
    fprintf(gp, "\nset logscale x 2\nset format x '%%.0b%%B'\n"
            "set xlabel 'buffer size (bytes)'\n"
            "set ylabel 'algbw (GB/s)'\nset key left top\nset grid\n"
            "$data << EOD\n");
    for (uint32_t i = 0; i < nsizes; i++) {
        fprintf(gp, "%.0f", sizes[i] > 0 ? sizes[i] : 1);
        for (uint32_t a = 0; a < nalgos; a++)
            fprintf(gp, " %.9g", algbw[(size_t)a * nsizes + i]);
        fputc('\n', gp);
    }
    fprintf(gp, "EOD\nplot ");
    for (uint32_t a = 0; a < nalgos; a++) {
        fprintf(gp, "%s$data using 1:%u with linespoints lw 2 title ",
                a ? ", " : "", a + 2);
        gp_str(gp, names[a]);
    }
    fprintf(gp, "\nset output\n");
    status = pclose(gp);
    gp = NULL;
    if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        rc = cli_fail(cmd, CLI_EXIT_INTERNAL,
                      "gnuplot failed (exit status %d); %s not written",
                      WIFEXITED(status) ? WEXITSTATUS(status) : -1, out);
        goto cleanup;
    }
    if (ccs_out_commit(o, &err) != CCS_OK)
        rc = cli_fail(cmd, CLI_EXIT_INTERNAL, "%s", err.msg);
    o = NULL;   /* committed (or failed and cleaned up) */

cleanup:
    if (gp != NULL)
        pclose(gp);
    ccs_out_abort(o);
    return rc;
}

/* The plot with the nccl baseline as the first curve where it applies
 * (it is what every other curve is measured against). */
static int plot_with_base(const char *out, const char *title, char **names,
                          uint32_t nalgos, const double *sizes,
                          uint32_t nsizes, const double *algbw,
                          const base_point_t *base)
{
    char *nm[CMP_MAX_ALGOS + 1];
    double *bw = NULL;          /* owned here: [(nalgos + 1) * nsizes] */
    bool hb = false;
    int rc;

    for (uint32_t i = 0; i < nsizes; i++)
        hb = hb || isfinite(base[i].time_s);
    if (!hb)
        return write_plot(out, title, names, nalgos, sizes, nsizes, algbw);
    bw = malloc(sizeof(*bw) * (size_t)(nalgos + 1) * nsizes);
    if (bw == NULL)
        return cli_fail("compare", CLI_EXIT_INTERNAL, "out of memory");
    nm[0] = "nccl (best of NCCL's algorithms)";
    for (uint32_t i = 0; i < nsizes; i++)
        bw[i] = isfinite(base[i].time_s) && base[i].time_s > 0
                    ? sizes[i] / base[i].time_s / 1e9 : 0;
    for (uint32_t a = 0; a < nalgos; a++)
        nm[a + 1] = names[a];
    memcpy(bw + nsizes, algbw, sizeof(*bw) * (size_t)nalgos * nsizes);
    rc = write_plot(out, title, nm, nalgos + 1, sizes, nsizes, bw);
    free(bw);
    return rc;
}

/* The default set: every algorithm that implements the collective, in
 * registry order, but for those whose cost or input the user must ask
 * for; each one left out is named with its reason (unless quiet). */
static void default_algos(const cli_opts_t *co, char *buf, size_t len)
{
    size_t used = 0;

    buf[0] = '\0';
    for (int i = 0; i < algo_count(); i++) {
        const algo_desc_t *a = algo_at(i);
        const char *why = NULL;

        if ((a->colls & ALGO_COLL_BIT(co->synth.coll)) == 0)
            continue;
        if (strncmp(a->name, "nccl-", 5) == 0 ||
            strcmp(a->name, "nvls") == 0)
            continue;   /* they make up the nccl column */
        if (strcmp(a->name, "milp") == 0)
            why = "its solver takes seconds to minutes per schedule; name "
                  "it in --algos to include it";
        else if (opt_algo_uses_straggler(a->name) && co->synth.straggler < 0)
            why = "it is built around a straggler; give --straggler and "
                  "--straggler-delay to include it";
        if (why != NULL) {
            if (!co->out.quiet)
                fprintf(stderr, "ccsynth compare: note: %s left out: %s\n",
                        a->name, why);
            continue;
        }
        if (used + strlen(a->name) + 2 > len)
            break;
        used += (size_t)snprintf(buf + used, len - used, "%s%s",
                                 used ? "," : "", a->name);
    }
}

/* Time after the straggler's arrival (time - D) beside the lower bound on
 * it (sim_bound.h): the figure a straggler-aware schedule is judged by.
 * Meaningful once D is past the work that does not need the straggler. */
static void print_after_arrival(const topo_t *topo, const sim_opts_t *o,
                                char **ran, uint32_t nran,
                                const double *sizes, uint32_t nsizes,
                                const double *time_s)
{
    double D = o->straggler_delay_s;

    printf("# after rank %d arrives (time - %g us), and the lower bound on "
           "it (docs/stragglar-topo.md)\n# %11s", o->straggler, D * 1e6,
           "size");
    for (uint32_t a = 0; a < nran; a++)
        printf(" %12.12s", ran[a]);
    printf(" %12s  binding cut\n", "bound");
    for (uint32_t i = 0; i < nsizes; i++) {
        sim_bound_t bd;
        ccs_err_t err = { { 0 } };
        printf("#%12.0f", sizes[i]);
        for (uint32_t a = 0; a < nran; a++)
            printf(" %12.2f", (time_s[(size_t)a * nsizes + i] - D) * 1e6);
        if (sim_straggler_bound(topo, o->straggler, sizes[i], &bd, &err) ==
            CCS_OK)
            printf(" %12.2f  %s\n", bd.time_s * 1e6, bd.cut);
        else
            printf(" %12s  (%s)\n", "-", err.msg);
    }
}

int cmd_compare(int argc, char **argv)
{
    static const opt_id_t ids[] = {
        OPT_TOPO, OPT_ALPHA, OPT_BW, OPT_ALGO, OPT_COLL, OPT_ROOT,
        OPT_STRAGGLER, OPT_SIZES, OPT_TYPE, OPT_MODE, OPT_DELAY,
        OPT_ARRIVALS, OPT_LOCAL_BW, OPT_JSON, OPT_CSV, OPT_QUIET, OPT_PLOT,
        OPT_PROTO, OPT_CHANNELS, OPT_WINDOW, OPT_END
    };
    static const opt_cmd_t spec = { "compare", ids, compare_usage, 0 };
    const char *cmd = "compare";
    const char *algos_spec = NULL, *plot = NULL;
    char dflt[256];
    cli_opts_t co;
    algo_params_t p;
    sim_opts_t o;
    topo_t *topo = NULL;          /* owned */
    char *algos_copy = NULL;      /* owned; names[] point into it */
    char *names[CMP_MAX_ALGOS];
    char *ran[CMP_MAX_ALGOS];     /* the algorithms that ran */
    const double *sizes = NULL;   /* borrowed from co */
    double *arr = NULL;           /* owned */
    double *time_s = NULL;        /* owned; [nran * nsizes] */
    double *algbw = NULL;         /* owned; [nran * nsizes] */
    base_point_t *base = NULL;    /* owned; [nsizes] the nccl baseline */
    char note[512];
    uint32_t nsizes = 0, nalgos = 0, nran = 0;
    ccs_err_t err = { { 0 } };
    ccs_status_t st;
    int fmt = OUT_TEXT, rc = CLI_EXIT_OK;
    int32_t rank = -1;
    char title[256], *save = NULL, *tok;
    double factor;
    sim_bound_t bd;

    rc = opt_parse(&spec, argc, argv, &co);
    if (rc != CLI_EXIT_OK || co.help)
        goto cleanup;
    fmt = co.out.fmt == OPT_FMT_JSON ? OUT_JSON
          : co.out.fmt == OPT_FMT_CSV ? OUT_CSV : OUT_TEXT;
    plot = co.own[OPT_PLOT];
    st = opt_check_sweep(&co, "1K:4G", &rank, &err);
    if (st != CCS_OK) {
        rc = cli_fail_status(cmd, st, &err);
        goto cleanup;
    }
    sizes = co.sim.sizes;
    nsizes = co.sim.nsizes;
    opt_fill_algo_params(&co, &p);
    opt_fill_sim_opts(&co, rank, &o);
    algos_spec = co.synth.algo;
    if (algos_spec == NULL) {
        default_algos(&co, dflt, sizeof(dflt));
        algos_spec = dflt;
    }
    algos_copy = strdup(algos_spec);
    if (algos_copy == NULL) {
        rc = cli_fail(cmd, CLI_EXIT_INTERNAL, "out of memory");
        goto cleanup;
    }
    for (tok = strtok_r(algos_copy, ",", &save); tok != NULL;
         tok = strtok_r(NULL, ",", &save)) {
        if (nalgos == CMP_MAX_ALGOS) {
            rc = cli_fail(cmd, CLI_EXIT_USAGE, "more than %d algorithms",
                          CMP_MAX_ALGOS);
            goto cleanup;
        }
        names[nalgos++] = tok;
    }
    if (nalgos == 0) {
        rc = cli_fail(cmd, CLI_EXIT_UNSUPPORTED, "no algorithm implements %s",
                      ccs_coll_str(p.coll));
        goto cleanup;
    }
    opt_straggler_note(cmd, &co, algos_spec, true);
    rc = opt_load_sweep_topo(cmd, &co, o.straggler, &topo);
    if (rc != CLI_EXIT_OK)
        goto cleanup;
    /* Our algorithms get the thread blocks NCCL gives itself here. */
    o.channels = p.channels > 0 ? p.channels : base_channels(topo);
    if (co.sim.arrivals != NULL) {
        st = sim_read_arrivals(co.sim.arrivals, (uint32_t)topo->ngpus, &arr,
                               &err);
        if (st != CCS_OK) {
            rc = cli_fail_status(cmd, st, &err);
            goto cleanup;
        }
        o.arrival_s = arr;
    }
    time_s = calloc((size_t)nalgos * nsizes, sizeof(double));
    algbw = calloc((size_t)nalgos * nsizes, sizeof(double));
    base = calloc(nsizes, sizeof(*base));
    if (time_s == NULL || algbw == NULL || base == NULL) {
        rc = cli_fail(cmd, CLI_EXIT_INTERNAL, "out of memory");
        goto cleanup;
    }

    for (uint32_t a = 0; a < nalgos; a++) {
        ccs_sched_t *s = NULL;    /* owned in this iteration */
        sim_t *sim = NULL;        /* owned in this iteration */

        st = algo_synthesize(names[a], topo, &p, &s, &err);
        if (st == CCS_ERR_UNSUPPORTED) {
            if (!co.out.quiet)
                fprintf(stderr, "ccsynth compare: note: %s left out: %s\n",
                        names[a], ccs_err_msg(&err, st));
            continue;
        }
        if (st == CCS_OK) {
            st = verify_sched(s, NULL, &err);
            if (st != CCS_OK) {
                ccs_err_prefix(&err, "%s %s on %s: ", names[a],
                               ccs_coll_str(p.coll), topo->name);
                rc = cli_fail_verify(cmd, st, &err,
                                     "schedule failed verification");
                ccs_sched_destroy(s);
                goto cleanup;
            }
            st = sim_create(s, topo, &o, &sim, &err);
        }
        for (uint32_t i = 0; st == CCS_OK && i < nsizes; i++) {
            size_t k = (size_t)nran * nsizes + i;

            time_s[k] = INFINITY;
            /* auto: the algorithm at its best protocol for this size */
            for (int pr = SIM_PROTO_LL; st == CCS_OK &&
                 pr <= SIM_PROTO_SIMPLE; pr++) {
                sim_opts_t op = o;
                sim_result_t r;

                if (!co.sim.proto_auto && co.sim.proto_given &&
                    pr != SIM_PROTO_LL)
                    break;
                if (co.sim.proto_given && !co.sim.proto_auto)
                    op.proto = co.sim.proto;
                else
                    op.proto = (sim_proto_t)pr;
                st = sim_exec(sim, sizes[i], &op, &r, &err);
                if (st == CCS_OK) {
                    if (r.time_s < time_s[k])
                        time_s[k] = r.time_s;
                    sim_result_free(&r);
                }
            }
            algbw[k] = time_s[k] > 0 ? sizes[i] / time_s[k] / 1e9 : 0;
        }
        sim_destroy(sim);
        ccs_sched_destroy(s);
        if (st != CCS_OK) {
            ccs_err_prefix(&err, "%s: ", names[a]);
            rc = cli_fail_status(cmd, st, &err);
            goto cleanup;
        }
        ran[nran++] = names[a];
    }
    if (nran == 0) {
        rc = cli_fail(cmd, CLI_EXIT_UNSUPPORTED,
                      "none of the algorithms can run %s on %s",
                      ccs_coll_str(p.coll), topo->name);
        goto cleanup;
    }

    /* The baseline, under the same protocol rule as the algorithms. */
    if (base_applies(p.coll)) {
        sim_opts_t bo = o;

        bo.proto = co.sim.proto_given && !co.sim.proto_auto ? co.sim.proto
                                                            : SIM_PROTO_PLAN;
        st = base_nccl(topo, &p, &bo, sizes, nsizes, base, &err);
        if (st != CCS_OK && st != CCS_ERR_UNSUPPORTED) {
            rc = cli_fail_status(cmd, st, &err);
            goto cleanup;
        }
    } else {
        for (uint32_t i = 0; i < nsizes; i++) {
            base[i].time_s = INFINITY;
            snprintf(base[i].algo, sizeof(base[i].algo), "-");
        }
    }
    base_assumptions(topo, co.sim.proto_given && !co.sim.proto_auto
                               ? co.sim.proto : SIM_PROTO_PLAN,
                     note, sizeof(note));
    factor = sim_busbw_factor(p.coll, (uint32_t)topo->ngpus);
    if (fmt == OUT_TEXT) {
        printf("# ccsynth compare: %s on %s (%d ranks), mode %s",
               ccs_coll_str(p.coll), topo->name, topo->ngpus,
               sim_mode_str(o.mode));
        if (o.straggler >= 0)
            printf(", rank %d arrives at %g us", o.straggler,
                   o.straggler_delay_s * 1e6);
        if (sim_mode_note(o.mode) != NULL)
            printf("\n# mode %s, window %u: %s", sim_mode_str(o.mode),
                   o.window ? o.window : SIM_DATAFLOW_WINDOW,
                   sim_mode_note(o.mode));
        printf("\n# %s\n# time in us, algbw in GB/s (busbw = algbw * %.4g);"
               " vs nccl = nccl time / time\n#%13s %42s", note, factor, "",
               "nccl (best of NCCL's algorithms)");
        for (uint32_t a = 0; a < nran; a++)
            printf(" %34s", ran[a]);
        printf("\n# %11s %12s %12s %16s", "size", "time", "algbw", "choice");
        for (uint32_t a = 0; a < nran; a++)
            printf(" %10s %12s %10s", "time", "algbw", "vs nccl");
        printf("  best\n");
    } else if (fmt == OUT_CSV) {
        if (sim_mode_note(o.mode) != NULL)
            printf("# mode %s, window %u: %s\n", sim_mode_str(o.mode),
                   o.window ? o.window : SIM_DATAFLOW_WINDOW,
                   sim_mode_note(o.mode));
        printf("size,count,nccl_time_us,nccl_algbw_GBps,nccl_choice");
        for (uint32_t a = 0; a < nran; a++)
            printf(",%s_time_us,%s_algbw_GBps,%s_vs_nccl", ran[a], ran[a],
                   ran[a]);
        printf(",best\n");
    } else {
        printf("{\"topo\": ");
        json_str(stdout, topo->name);
        printf(", \"coll\": \"%s\", \"nranks\": %d, \"mode\": \"%s\", "
               "\"straggler\": %d, \"straggler_delay_s\": %.9g, "
               "\"busbw_factor\": %.9g, ", ccs_coll_str(p.coll),
               topo->ngpus, sim_mode_str(o.mode), o.straggler,
               o.straggler_delay_s, factor);
        if (sim_mode_note(o.mode) != NULL) {
            printf("\"window\": %u, \"mode_note\": ",
                   o.window ? o.window : SIM_DATAFLOW_WINDOW);
            json_str(stdout, sim_mode_note(o.mode));
            printf(", ");
        }
        printf("\"assumptions\": ");
        json_str(stdout, note);
        printf(", \"algos\": [");
        for (uint32_t a = 0; a < nran; a++) {
            printf("%s", a ? ", " : "");
            json_str(stdout, ran[a]);
        }
        printf("],\n \"results\": [");
    }
    for (uint32_t i = 0; i < nsizes; i++) {
        uint32_t best = 0;
        double count = ceil(sizes[i] / (double)o.elem_bytes);

        for (uint32_t a = 1; a < nran; a++)
            if (time_s[(size_t)a * nsizes + i] <
                time_s[(size_t)best * nsizes + i])
                best = a;
        double bt = base[i].time_s;
        bool hb = isfinite(bt);
        double balg = hb && bt > 0 ? sizes[i] / bt / 1e9 : 0;

        if (fmt == OUT_TEXT) {
            printf("%13.0f", sizes[i]);
            if (hb)
                printf(" %12.2f %12.2f %16s", bt * 1e6, balg, base[i].algo);
            else
                printf(" %12s %12s %16s", "-", "-", "n/a");
            for (uint32_t a = 0; a < nran; a++) {
                double tt = time_s[(size_t)a * nsizes + i];
                printf(" %10.2f %12.2f", tt * 1e6,
                       algbw[(size_t)a * nsizes + i]);
                if (hb && tt > 0)
                    printf(" %9.2fx", bt / tt);
                else
                    printf(" %10s", "-");
            }
            printf("  %s\n", hb && bt < time_s[(size_t)best * nsizes + i]
                                ? "nccl" : ran[best]);
        } else if (fmt == OUT_CSV) {
            printf("%.0f,%.0f,", sizes[i], count);
            if (hb)
                printf("%.6f,%.6f,%s", bt * 1e6, balg, base[i].algo);
            else
                printf(",,");
            for (uint32_t a = 0; a < nran; a++) {
                double tt = time_s[(size_t)a * nsizes + i];
                printf(",%.6f,%.6f,", tt * 1e6,
                       algbw[(size_t)a * nsizes + i]);
                if (hb && tt > 0)
                    printf("%.6f", bt / tt);
            }
            printf(",%s\n", hb && bt < time_s[(size_t)best * nsizes + i]
                                 ? "nccl" : ran[best]);
        } else {
            printf("%s\n  {\"size\": %.0f, \"count\": %.0f, \"nccl\": ",
                   i ? "," : "", sizes[i], count);
            if (hb) {
                printf("{\"time_us\": %.6f, \"algbw_GBps\": %.6f, "
                       "\"choice\": ", bt * 1e6, balg);
                json_str(stdout, base[i].algo);
                printf("}");
            } else {
                printf("null");
            }
            printf(", \"algos\": {");
            for (uint32_t a = 0; a < nran; a++) {
                double al = algbw[(size_t)a * nsizes + i];
                printf("%s", a ? ", " : "");
                json_str(stdout, ran[a]);
                printf(": {\"time_us\": %.6f, \"algbw_GBps\": %.6f, "
                       "\"busbw_GBps\": %.6f, \"vs_nccl\": ",
                       time_s[(size_t)a * nsizes + i] * 1e6, al, al * factor);
                if (hb && time_s[(size_t)a * nsizes + i] > 0)
                    printf("%.6f}", bt / time_s[(size_t)a * nsizes + i]);
                else
                    printf("null}");
            }
            printf("}, \"best\": ");
            json_str(stdout, ran[best]);
            if (o.straggler >= 0 &&
                sim_straggler_bound(topo, o.straggler, sizes[i], &bd,
                                    &err) == CCS_OK) {
                printf(", \"after_arrival_bound_us\": %.6f, "
                       "\"bound_cut\": ", bd.time_s * 1e6);
                json_str(stdout, bd.cut);
            }
            printf("}");
        }
    }
    if (fmt == OUT_JSON)
        printf("\n]}\n");
    if (fmt == OUT_TEXT && o.straggler >= 0)
        print_after_arrival(topo, &o, ran, nran, sizes, nsizes, time_s);
    if (fflush(stdout) != 0) {
        rc = cli_fail(cmd, CLI_EXIT_INTERNAL, "write error on stdout");
        goto cleanup;
    }
    if (plot != NULL) {
        snprintf(title, sizeof(title), "%s on %s (%d ranks), simulated%s",
                 ccs_coll_str(p.coll), topo->name, topo->ngpus,
                 sim_mode_note(o.mode) != NULL
                     ? " in dataflow mode (not on NCCL)" : "");
        rc = plot_with_base(plot, title, ran, nran, sizes, nsizes, algbw,
                            base);
    }

cleanup:
    free(base);
    free(time_s);
    free(algbw);
    free(arr);
    opt_free(&co);
    free(algos_copy);
    topo_destroy(topo);
    return rc;
}
