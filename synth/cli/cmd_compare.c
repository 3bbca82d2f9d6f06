/*
 * cmd_compare.c - `ccsynth compare`: synthesize several algorithms for one
 * collective on one topology, verify each, simulate each over a range of
 * buffer sizes, and print them side by side (time and algbw per algorithm,
 * plus the fastest); --plot draws algbw against size with gnuplot.
 *
 * An algorithm that cannot run on the topology (CCS_ERR_UNSUPPORTED, e.g.
 * rhd on a non-power-of-two rank count) is left out with a note on stderr;
 * any other failure, verification included, stops the command.
 */
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "algo.h"
#include "cli.h"
#include "json.h"
#include "outfile.h"
#include "commands.h"
#include "sim.h"
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
"  -a, --algos LIST          comma-separated (default ring,rhd,allpairs,\n"
"                            dbtree)\n"
"  -s, --sizes LIST          SIZE, LO:HI[:FACTOR] or a comma list\n"
"                            (default 1K:4G, doubling)\n"
"      --type T              element type (default float32)\n"
"      --root R              root of reduce/broadcast (default 0)\n"
"  -m, --mode rank|barrier   step semantics (default rank)\n"
"      --straggler R         rank R arrives late (also given to the\n"
"                            algorithms, e.g. stragglar) ...\n"
"      --straggler-delay D   ... at time D (e.g. 5ms)\n"
"      --arrivals FILE       per-rank arrival times, lines \"rank seconds\"\n"
"      --local-bw BW         cost of COPY/REDUCE_LOCAL (default: free)\n"
"      --alpha T, --bw BW    override every link's latency / bandwidth\n"
"      --plot OUT.svg        draw algbw against size (gnuplot, svg)\n"
"      --csv | --json        machine-readable output\n"
"  -h, --help                this text\n"
"\n"
"exit codes: 0 ok, 1 internal error (gnuplot failing included), 2 usage,\n"
"3 bad input, 4 a schedule failed verification, 5 no algorithm could run\n");
}

enum {
    OPT_TYPE = 256, OPT_ROOT, OPT_STRAGGLER, OPT_DELAY, OPT_ARRIVALS,
    OPT_LOCAL_BW, OPT_ALPHA, OPT_BW, OPT_PLOT, OPT_CSV, OPT_JSON
};

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

int cmd_compare(int argc, char **argv)
{
    static const struct option longopts[] = {
        { "topo", required_argument, NULL, 't' },
        { "coll", required_argument, NULL, 'c' },
        { "algos", required_argument, NULL, 'a' },
        { "sizes", required_argument, NULL, 's' },
        { "mode", required_argument, NULL, 'm' },
        { "type", required_argument, NULL, OPT_TYPE },
        { "root", required_argument, NULL, OPT_ROOT },
        { "straggler", required_argument, NULL, OPT_STRAGGLER },
        { "straggler-delay", required_argument, NULL, OPT_DELAY },
        { "arrivals", required_argument, NULL, OPT_ARRIVALS },
        { "local-bw", required_argument, NULL, OPT_LOCAL_BW },
        { "alpha", required_argument, NULL, OPT_ALPHA },
        { "bw", required_argument, NULL, OPT_BW },
        { "plot", required_argument, NULL, OPT_PLOT },
        { "csv", no_argument, NULL, OPT_CSV },
        { "json", no_argument, NULL, OPT_JSON },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    const char *cmd = "compare";
    const char *topo_spec = NULL, *algos_spec = "ring,rhd,allpairs,dbtree";
    const char *sizes_spec = "1K:4G", *arrivals = NULL, *plot = NULL;
    topo_opts_t topts = { 0, 0 };
    ccs_dtype_t dtype = CCS_FLOAT32;
    algo_params_t p;
    sim_opts_t o;
    topo_t *topo = NULL;          /* owned */
    char *algos_copy = NULL;      /* owned; names[] point into it */
    char *names[CMP_MAX_ALGOS];
    char *ran[CMP_MAX_ALGOS];     /* the algorithms that ran */
    double *sizes = NULL;         /* owned */
    double *arr = NULL;           /* owned */
    double *time_s = NULL;        /* owned; [nran * nsizes] */
    double *algbw = NULL;         /* owned; [nran * nsizes] */
    uint32_t nsizes = 0, nalgos = 0, nran = 0;
    ccs_err_t err = { { 0 } };
    ccs_status_t st;
    bool have_delay = false, have_strag = false;
    int fmt = OUT_TEXT, rc = CLI_EXIT_OK, c;
    char title[256], *save = NULL, *tok;
    double factor;
    long v;

    algo_params_init(&p);
    sim_opts_init(&o);
    optind = 1;
    while ((c = getopt_long(argc, argv, "t:c:a:s:m:h", longopts, NULL)) !=
           -1) {
        switch (c) {
        case 't': topo_spec = optarg; break;
        case 'a': algos_spec = optarg; break;
        case 's': sizes_spec = optarg; break;
        case 'c':
            if (ccs_coll_parse(optarg, &p.coll) != CCS_OK)
                return cli_fail(cmd, CLI_EXIT_USAGE,
                                "unknown collective '%s'", optarg);
            break;
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
        case OPT_ROOT:
            if (!units_parse_int(optarg, 0, CCS_MAX_RANKS - 1, &v))
                return cli_fail(cmd, CLI_EXIT_USAGE, "bad --root '%s'",
                                optarg);
            p.root = (int32_t)v;
            break;
        case OPT_STRAGGLER:
            if (!units_parse_int(optarg, 0, CCS_MAX_RANKS - 1, &v))
                return cli_fail(cmd, CLI_EXIT_USAGE, "bad --straggler '%s'",
                                optarg);
            o.straggler = p.straggler = (int32_t)v;
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
        case OPT_PLOT: plot = optarg; break;
        case OPT_CSV: fmt = OUT_CSV; break;
        case OPT_JSON: fmt = OUT_JSON; break;
        case 'h': compare_usage(stdout); return CLI_EXIT_OK;
        default:
            compare_usage(stderr);
            return CLI_EXIT_USAGE;
        }
    }
    if (optind < argc)
        return cli_fail(cmd, CLI_EXIT_USAGE, "unexpected argument '%s'",
                        argv[optind]);
    if (have_strag != have_delay)
        return cli_fail(cmd, CLI_EXIT_USAGE,
                        "--straggler and --straggler-delay go together");
    algos_copy = strdup(algos_spec);
    if (algos_copy == NULL)
        return cli_fail(cmd, CLI_EXIT_INTERNAL, "out of memory");
    for (tok = strtok_r(algos_copy, ",", &save); tok != NULL;
         tok = strtok_r(NULL, ",", &save)) {
        if (algo_find(tok) == NULL) {
            rc = cli_fail(cmd, CLI_EXIT_USAGE,
                          "unknown algorithm '%s' (see 'ccsynth list')", tok);
            goto cleanup;
        }
        for (uint32_t i = 0; i < nalgos; i++) {
            if (strcmp(names[i], tok) == 0) {
                rc = cli_fail(cmd, CLI_EXIT_USAGE, "algorithm '%s' listed "
                              "twice", tok);
                goto cleanup;
            }
        }
        if (nalgos == CMP_MAX_ALGOS) {
            rc = cli_fail(cmd, CLI_EXIT_USAGE, "more than %d algorithms",
                          CMP_MAX_ALGOS);
            goto cleanup;
        }
        names[nalgos++] = tok;
    }
    if (nalgos == 0) {
        rc = cli_fail(cmd, CLI_EXIT_USAGE, "--algos is empty");
        goto cleanup;
    }
    st = sim_parse_sizes(sizes_spec, &sizes, &nsizes, &err);
    if (st != CCS_OK) {
        rc = cli_fail_status(cmd, st, &err);
        goto cleanup;
    }
    o.elem_bytes = (uint32_t)ccs_dtype_size(dtype);
    rc = cli_load_topo(cmd, topo_spec, &topts, &topo);
    if (rc != CLI_EXIT_OK)
        goto cleanup;
    if (o.straggler >= topo->ngpus) {
        rc = cli_fail(cmd, CLI_EXIT_USAGE, "--straggler %d out of range "
                      "0..%d", o.straggler, topo->ngpus - 1);
        goto cleanup;
    }
    if (arrivals != NULL) {
        st = sim_read_arrivals(arrivals, (uint32_t)topo->ngpus, &arr, &err);
        if (st != CCS_OK) {
            rc = cli_fail_status(cmd, st, &err);
            goto cleanup;
        }
        o.arrival_s = arr;
    }
    time_s = calloc((size_t)nalgos * nsizes, sizeof(double));
    algbw = calloc((size_t)nalgos * nsizes, sizeof(double));
    if (time_s == NULL || algbw == NULL) {
        rc = cli_fail(cmd, CLI_EXIT_INTERNAL, "out of memory");
        goto cleanup;
    }

    for (uint32_t a = 0; a < nalgos; a++) {
        ccs_sched_t *s = NULL;    /* owned in this iteration */
        sim_t *sim = NULL;        /* owned in this iteration */

        st = algo_synthesize(names[a], topo, &p, &s, &err);
        if (st == CCS_ERR_UNSUPPORTED) {
            fprintf(stderr, "ccsynth compare: note: %s left out: %s\n",
                    names[a], ccs_err_msg(&err, st));
            continue;
        }
        if (st == CCS_OK) {
            st = verify_sched(s, NULL, &err);
            if (st != CCS_OK) {
                ccs_err_prefix(&err, "%s %s on %s: ", names[a],
                               ccs_coll_str(p.coll), topo->name);
                rc = cli_fail(cmd, CLI_EXIT_VERIFY,
                              "schedule failed verification: %s",
                              ccs_err_msg(&err, st));
                ccs_sched_destroy(s);
                goto cleanup;
            }
            st = sim_create(s, topo, &o, &sim, &err);
        }
        for (uint32_t i = 0; st == CCS_OK && i < nsizes; i++) {
            sim_result_t r;
            st = sim_exec(sim, sizes[i], &o, &r, &err);
            if (st == CCS_OK) {
                size_t k = (size_t)nran * nsizes + i;
                time_s[k] = r.time_s;
                algbw[k] = r.time_s > 0 ? sizes[i] / r.time_s / 1e9 : 0;
                sim_result_free(&r);
            }
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

    factor = sim_busbw_factor(p.coll, (uint32_t)topo->ngpus);
    if (fmt == OUT_TEXT) {
        printf("# ccsynth compare: %s on %s (%d ranks), mode %s",
               ccs_coll_str(p.coll), topo->name, topo->ngpus,
               sim_mode_str(o.mode));
        if (o.straggler >= 0)
            printf(", rank %d arrives at %g us", o.straggler,
                   o.straggler_delay_s * 1e6);
        printf("\n# time in us, algbw in GB/s (busbw = algbw * %.4g)\n#%13s",
               factor, "");
        for (uint32_t a = 0; a < nran; a++)
            printf(" %25s", ran[a]);
        printf("\n# %11s", "size");
        for (uint32_t a = 0; a < nran; a++)
            printf(" %12s %12s", "time", "algbw");
        printf("  best\n");
    } else if (fmt == OUT_CSV) {
        printf("size,count");
        for (uint32_t a = 0; a < nran; a++)
            printf(",%s_time_us,%s_algbw_GBps", ran[a], ran[a]);
        printf(",best\n");
    } else {
        printf("{\"topo\": ");
        json_str(stdout, topo->name);
        printf(", \"coll\": \"%s\", \"nranks\": %d, \"mode\": \"%s\", "
               "\"straggler\": %d, \"straggler_delay_s\": %.9g, "
               "\"busbw_factor\": %.9g, \"algos\": [", ccs_coll_str(p.coll),
               topo->ngpus, sim_mode_str(o.mode), o.straggler,
               o.straggler_delay_s, factor);
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
        if (fmt == OUT_TEXT) {
            printf("%13.0f", sizes[i]);
            for (uint32_t a = 0; a < nran; a++)
                printf(" %12.2f %12.2f", time_s[(size_t)a * nsizes + i] * 1e6,
                       algbw[(size_t)a * nsizes + i]);
            printf("  %s\n", ran[best]);
        } else if (fmt == OUT_CSV) {
            printf("%.0f,%.0f", sizes[i], count);
            for (uint32_t a = 0; a < nran; a++)
                printf(",%.6f,%.6f", time_s[(size_t)a * nsizes + i] * 1e6,
                       algbw[(size_t)a * nsizes + i]);
            printf(",%s\n", ran[best]);
        } else {
            printf("%s\n  {\"size\": %.0f, \"count\": %.0f, \"algos\": {",
                   i ? "," : "", sizes[i], count);
            for (uint32_t a = 0; a < nran; a++) {
                double al = algbw[(size_t)a * nsizes + i];
                printf("%s", a ? ", " : "");
                json_str(stdout, ran[a]);
                printf(": {\"time_us\": %.6f, \"algbw_GBps\": %.6f, "
                       "\"busbw_GBps\": %.6f}",
                       time_s[(size_t)a * nsizes + i] * 1e6, al, al * factor);
            }
            printf("}, \"best\": ");
            json_str(stdout, ran[best]);
            printf("}");
        }
    }
    if (fmt == OUT_JSON)
        printf("\n]}\n");
    if (fflush(stdout) != 0) {
        rc = cli_fail(cmd, CLI_EXIT_INTERNAL, "write error on stdout");
        goto cleanup;
    }
    if (plot != NULL) {
        snprintf(title, sizeof(title), "%s on %s (%d ranks), simulated",
                 ccs_coll_str(p.coll), topo->name, topo->ngpus);
        rc = write_plot(plot, title, ran, nran, sizes, nsizes, algbw);
    }

cleanup:
    free(time_s);
    free(algbw);
    free(arr);
    free(sizes);
    free(algos_copy);
    topo_destroy(topo);
    return rc;
}
