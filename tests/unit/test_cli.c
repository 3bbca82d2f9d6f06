/*
 * test_cli.c - the number parsers (synth/util/units.c), which every option
 * and every YAML topology number goes through; the option layer
 * (synth/cli/options.c): each group's parser and check, and the one-line
 * errors of opt_parse; and the status -> exit code map that the README
 * documents.
 */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

#include "cli.h"
#include "harness.h"
#include "options.h"

typedef enum { P_TIME, P_BW, P_SIZE, P_DOUBLE, P_TIME_STRICT } ptype_t;

static const char *const ptype_name[] = { "time", "bw", "size", "double",
                                          "strict time" };

static bool parse(ptype_t t, const char *s, double *v)
{
    switch (t) {
    case P_TIME:
        return units_parse_time(s, v);
    case P_BW:
        return units_parse_bw(s, v);
    case P_SIZE:
        return units_parse_size(s, v);
    case P_TIME_STRICT:
        return units_parse_time_strict(s, v);
    default:
        return units_parse_double(s, v);
    }
}

/* ok: whether the text is accepted; want: the value when it is. */
static const struct {
    ptype_t type;
    const char *text;
    bool ok;
    double want;
} numbers[] = {
    /* times: s, ms, us, ns; a bare number is seconds */
    { P_TIME, "3us", true, 3e-6 },
    { P_TIME, "150ns", true, 150e-9 },
    { P_TIME, "1.5ms", true, 1.5e-3 },
    { P_TIME, "2s", true, 2.0 },
    { P_TIME, "1.5e-6", true, 1.5e-6 },
    { P_TIME, "3 us", true, 3e-6 },
    { P_TIME, "0", true, 0.0 },
    { P_TIME, ".5us", true, 0.5e-6 },
    { P_TIME, "5.us", true, 5e-6 },
    { P_TIME, "+2us", true, 2e-6 },
    { P_TIME, "-1us", false, 0 },
    { P_TIME, "-0", false, 0 },        /* never negative, not even -0 */
    { P_TIME, "0x10", false, 0 },      /* strtod would take hex */
    { P_TIME, "0x1p3", false, 0 },
    { P_TIME, "inf", false, 0 },
    { P_TIME, "nan", false, 0 },
    { P_TIME, "infinity", false, 0 },
    { P_TIME, " 3us", false, 0 },      /* strtod would skip the blank */
    { P_TIME, "3US", false, 0 },
    { P_TIME, "3us1", false, 0 },
    { P_TIME, "fast", false, 0 },
    { P_TIME, "", false, 0 },
    { P_TIME, ".", false, 0 },
    { P_TIME, "e5", false, 0 },
    { P_TIME, "1e400", false, 0 },     /* overflows a double */
    /* options: the unit is required, zero may go without */
    { P_TIME_STRICT, "20ms", true, 20e-3 },
    { P_TIME_STRICT, "3 us", true, 3e-6 },
    { P_TIME_STRICT, "0", true, 0.0 },
    { P_TIME_STRICT, "0.0", true, 0.0 },
    { P_TIME_STRICT, "20", false, 0 },
    { P_TIME_STRICT, "1.5e-6", false, 0 },
    { P_TIME_STRICT, "-1ms", false, 0 },
    { P_TIME_STRICT, "ms", false, 0 },
    /* bandwidths: decimal bytes (GB/s, GBps) or bits (Gb/s, Gbps) */
    { P_BW, "450GB/s", true, 450e9 },
    { P_BW, "100Gb/s", true, 12.5e9 },
    { P_BW, "16GBps", true, 16e9 },
    { P_BW, "25Gbps", true, 3.125e9 },
    { P_BW, "1TB/s", true, 1e12 },
    { P_BW, "4.5e11", true, 4.5e11 },
    { P_BW, "450 GB/s", true, 450e9 },
    { P_BW, "0GB/s", false, 0 },
    { P_BW, "-5GB/s", false, 0 },
    { P_BW, "10GB", false, 0 },
    { P_BW, "450gb/s", false, 0 },
    { P_BW, "0x10GB/s", false, 0 },
    { P_BW, "infGB/s", false, 0 },
    { P_BW, "1e308TB/s", false, 0 },   /* finite number, infinite product */
    /* sizes: binary multiples, case-insensitive */
    { P_SIZE, "4G", true, 4294967296.0 },
    { P_SIZE, "64MiB", true, 67108864.0 },
    { P_SIZE, "1k", true, 1024.0 },
    { P_SIZE, "1000", true, 1000.0 },
    { P_SIZE, "1.5K", true, 1536.0 },
    { P_SIZE, "1e308T", false, 0 },    /* infinite product */
    { P_SIZE, "-1K", false, 0 },
    { P_SIZE, "0x400", false, 0 },
    { P_SIZE, "4Q", false, 0 },
    /* plain doubles (MIP gap, pruning threshold) */
    { P_DOUBLE, "0.25", true, 0.25 },
    { P_DOUBLE, "-1.5", true, -1.5 },
    { P_DOUBLE, "1e-3", true, 1e-3 },
    { P_DOUBLE, "0x10", false, 0 },
    { P_DOUBLE, "nan", false, 0 },
    { P_DOUBLE, "1.5x", false, 0 },
    { P_DOUBLE, "", false, 0 },
};

TEST(number_table)
{
    for (size_t i = 0; i < sizeof(numbers) / sizeof(numbers[0]); i++) {
        double v = -12345.0;
        bool ok = parse(numbers[i].type, numbers[i].text, &v);

        CHECK_MSG(ok == numbers[i].ok, "%s '%s': %s, want %s",
                  ptype_name[numbers[i].type], numbers[i].text,
                  ok ? "accepted" : "rejected",
                  numbers[i].ok ? "accepted" : "rejected");
        if (ok && numbers[i].ok)
            CHECK_MSG(fabs(v - numbers[i].want) <=
                          1e-12 * fabs(numbers[i].want),
                      "%s '%s' = %.17g, want %.17g",
                      ptype_name[numbers[i].type], numbers[i].text, v,
                      numbers[i].want);
    }
}

TEST(int_table)
{
    static const struct {
        const char *text;
        long lo, hi;
        bool ok;
        long want;
    } cases[] = {
        { "8", 1, 16, true, 8 },      { "16", 1, 16, true, 16 },
        { "17", 1, 16, false, 0 },    { "0", 1, 16, false, 0 },
        { "-1", -1, 5, true, -1 },    { "0x8", 0, 16, false, 0 },
        { "8.0", 0, 16, false, 0 },   { "8 ", 0, 16, false, 0 },
        { "", 0, 16, false, 0 },
        { "99999999999999999999", 0, 16, false, 0 },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        long v = -777;
        bool ok = units_parse_int(cases[i].text, cases[i].lo, cases[i].hi, &v);

        CHECK_MSG(ok == cases[i].ok, "int '%s' in %ld..%ld: %s",
                  cases[i].text, cases[i].lo, cases[i].hi,
                  ok ? "accepted" : "rejected");
        if (ok && cases[i].ok)
            CHECK_EQ_INT(v, cases[i].want);
    }
}

/* The exit codes the README and `ccsynth --help` document. */
TEST(exit_codes)
{
    static const struct {
        ccs_status_t st;
        int code;
    } cases[] = {
        { CCS_OK, 0 },
        { CCS_ERR_NOMEM, 1 },         { CCS_ERR_IO, 1 },
        { CCS_ERR_INTERNAL, 1 },      { CCS_ERR_SOLVER, 1 },
        { CCS_ERR_INVALID, 2 },
        { CCS_ERR_FORMAT, 3 },        { CCS_ERR_VERSION, 3 },
        { CCS_ERR_CHECKSUM, 3 },      { CCS_ERR_TOPOLOGY, 3 },
        { CCS_ERR_PARSE, 3 },         { CCS_ERR_MISMATCH, 3 },
        { CCS_ERR_VERIFY, 4 },
        { CCS_ERR_UNSUPPORTED, 5 },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        CHECK_MSG(cli_exit_code(cases[i].st) == cases[i].code,
                  "%s -> exit %d, want %d", ccs_status_name(cases[i].st),
                  cli_exit_code(cases[i].st), cases[i].code);
}


/* ---- the option layer ---- */

/* Each group's parser: the value it stores, or the message it gives. */
TEST(group_setters)
{
    static const struct {
        opt_id_t id;
        const char *arg;
        bool ok;
        double want;            /* the stored value, when ok */
        const char *msg;        /* part of the message, when not */
    } cases[] = {
        /* topology */
        { OPT_ALPHA, "3us", true, 3e-6, NULL },
        { OPT_ALPHA, "3", false, 0, "3 what? write 3us" },
        { OPT_ALPHA, "0", false, 0, "bad --alpha '0' (a time > 0" },
        { OPT_BW, "100Gb/s", true, 12.5e9, NULL },
        { OPT_BW, "fast", false, 0, "bad --bw 'fast'" },
        /* synthesis */
        { OPT_ROOT, "3", true, 3, NULL },
        { OPT_ROOT, "-1", false, 0, "bad --root '-1' (a rank >= 0)" },
        { OPT_STRAGGLER, "7", true, 7, NULL },
        { OPT_STRAGGLER, "x", false, 0, "bad --straggler 'x'" },
        { OPT_PIPELINE, "4", true, 4, NULL },
        { OPT_PIPELINE, "0", false, 0, "bad --pipeline '0'" },
        { OPT_PIPELINE, "1,2,4", true, 1, NULL },
        { OPT_CHUNKS, "8", true, 8, NULL },
        { OPT_CHUNKS, "auto,6", true, 6, NULL },
        { OPT_CHUNKS, "x", false, 0, "bad --chunks 'x'" },
        { OPT_COLL, "alltoall", true, CCS_COLL_ALLTOALL, NULL },
        { OPT_COLL, "allreduxe", false, 0, "unknown collective 'allreduxe'" },
        { OPT_SIZE, "256M", true, 268435456.0, NULL },
        { OPT_SIZE, "0", false, 0, "bad --size '0'" },
        { OPT_TIME_LIMIT, "600s", true, 600, NULL },
        { OPT_TIME_LIMIT, "600", false, 0, "600 what? write 600s" },
        { OPT_TIME_LIMIT, "0", false, 0, "bad --time-limit '0'" },
        { OPT_MIP_GAP, "0.01", true, 0.01, NULL },
        { OPT_MIP_GAP, "-1", false, 0, "bad --mip-gap '-1'" },
        { OPT_MILP_M, "65", false, 0, "bad --milp-m '65' (1..64)" },
        { OPT_NODE_LIMIT, "0", true, -1, NULL },
        { OPT_NODE_LIMIT, "5", true, 5, NULL },
        { OPT_SEED, "42", true, 42, NULL },
        /* simulation */
        { OPT_DELAY, "20ms", true, 20e-3, NULL },
        { OPT_DELAY, "0", true, 0, NULL },
        { OPT_DELAY, "20", false, 0, "--straggler-delay 20: 20 what? write "
                                     "20ms" },
        { OPT_DELAY, "-5ms", false, 0, "bad --straggler-delay '-5ms' (a "
                                       "time >= 0" },
        { OPT_MODE, "barrier", true, SIM_MODE_BARRIER, NULL },
        { OPT_MODE, "dataflow", true, SIM_MODE_DATAFLOW, NULL },
        { OPT_MODE, "lazy", false, 0, "bad --mode 'lazy' (rank, barrier or "
                                      "dataflow)" },
        { OPT_WINDOW, "4", true, 4, NULL },
        { OPT_WINDOW, "1000000", true, 1000000, NULL },
        { OPT_WINDOW, "0", false, 0, "bad --window '0' (a number of steps, "
                                     "1 to 1000000)" },
        { OPT_WINDOW, "-3", false, 0, "bad --window '-3'" },
        { OPT_WINDOW, "4x", false, 0, "bad --window '4x'" },
        { OPT_TYPE, "uint8", true, CCS_UINT8, NULL },
        { OPT_TYPE, "float7", false, 0, "unknown --type 'float7'" },
        { OPT_LOCAL_BW, "200GB/s", true, 200e9, NULL },
        { OPT_SIZES, "1K:4K", true, 1024, NULL },
        { OPT_SIZES, "big", false, 0, "" },
        /* output */
        { OPT_JSON, NULL, true, OPT_FMT_JSON, NULL },
        { OPT_CSV, NULL, true, OPT_FMT_CSV, NULL },
        { OPT_QUIET, NULL, true, 1, NULL },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        cli_opts_t o;
        ccs_err_t err = { { 0 } };
        ccs_status_t st = CCS_ERR_INTERNAL;
        opt_id_t id = cases[i].id;
        double got = NAN;

        opt_init(&o);
        switch (opt_group(id)) {
        case OPT_GROUP_TOPO:
            st = opt_topo_set(&o.topo, id, cases[i].arg, &err);
            got = id == OPT_ALPHA ? o.topo.over.alpha_s : o.topo.over.bw_Bps;
            break;
        case OPT_GROUP_SYNTH:
            st = opt_synth_set(&o.synth, id, cases[i].arg, &err);
            got = id == OPT_ROOT ? o.synth.root
                  : id == OPT_STRAGGLER ? o.synth.straggler
                  : id == OPT_PIPELINE ? o.synth.pipeline[0]
                  : id == OPT_CHUNKS ? o.synth.chunks[0]
                  : id == OPT_COLL ? o.synth.coll
                  : id == OPT_SIZE ? o.synth.size_bytes
                  : id == OPT_TIME_LIMIT ? o.synth.time_limit_s
                  : id == OPT_MIP_GAP ? o.synth.mip_gap
                  : id == OPT_MILP_M ? o.synth.milp_m
                  : id == OPT_NODE_LIMIT ? o.synth.milp_nodes
                  : (double)o.synth.seed;
            break;
        case OPT_GROUP_SIM:
            st = opt_sim_set(&o.sim, id, cases[i].arg, &err);
            got = id == OPT_DELAY ? o.sim.delay_s
                  : id == OPT_MODE ? o.sim.mode
                  : id == OPT_WINDOW ? o.sim.window
                  : id == OPT_TYPE ? o.sim.dtype
                  : id == OPT_LOCAL_BW ? o.sim.local_bw_Bps
                  : o.sim.sizes != NULL ? o.sim.sizes[0] : NAN;
            break;
        case OPT_GROUP_OUT:
            st = opt_out_set(&o.out, id, cases[i].arg, &err);
            got = id == OPT_QUIET ? o.out.quiet : o.out.fmt;
            break;
        default:
            break;
        }
        CHECK_MSG((st == CCS_OK) == cases[i].ok, "--%s '%s': %s",
                  opt_name(id), cases[i].arg ? cases[i].arg : "",
                  st == CCS_OK ? "accepted" : ccs_err_msg(&err, st));
        if (st == CCS_OK && cases[i].ok)
            CHECK_MSG(fabs(got - cases[i].want) <=
                          1e-12 * fabs(cases[i].want),
                      "--%s '%s' = %.17g, want %.17g", opt_name(id),
                      cases[i].arg, got, cases[i].want);
        if (st != CCS_OK && !cases[i].ok)
            CHECK_STR_CONTAINS(ccs_err_msg(&err, st), cases[i].msg);
        opt_free(&o);
    }
}

/* The synthesis check: one algorithm where one is built, known distinct
 * names, the solver's knobs only with milp. */
TEST(synth_check)
{
    static const struct {
        const char *algo;
        bool single;
        opt_id_t extra;         /* one more option, or OPT_END */
        const char *arg;
        const char *msg;        /* NULL: accepted */
    } cases[] = {
        { "ring", true, OPT_END, NULL, NULL },
        { NULL, true, OPT_END, NULL, "--algo is required" },
        { NULL, false, OPT_END, NULL, NULL },
        { "ring,rhd", false, OPT_END, NULL, NULL },
        { "ring,rhd", true, OPT_END, NULL, "--algo takes one algorithm" },
        { "ring,nope", false, OPT_END, NULL, "unknown algorithm 'nope'" },
        { "ring,ring", false, OPT_END, NULL, "algorithm 'ring' listed twice" },
        { "", false, OPT_END, NULL, "bad --algo ''" },
        { ",", false, OPT_END, NULL, "--algo is empty" },
        { "milp", true, OPT_MIP_GAP, "0.1", NULL },
        { "ring", true, OPT_MIP_GAP, "0.1",
          "--mip-gap is an option of --algo milp" },
        { "ring,milp", false, OPT_SIZE, "1M", NULL },
        { NULL, false, OPT_SIZE, "1M", "--size is an option of --algo milp" },
        { "ring", true, OPT_PIPELINE, "1,2", "--pipeline takes one factor" },
        { "ring", false, OPT_PIPELINE, "1,2", NULL },
        { "ring", true, OPT_CHUNKS, "auto", "--chunks takes one count" },
        { "ring", true, OPT_CHUNKS, "8", NULL },
        { "ring", true, OPT_PHASE0, "rhd",
          "--phase0 is an option of --algo stragglar" },
        { "stragglar", true, OPT_PHASE0, "rhd", NULL },
        { "ring", true, OPT_ROOT, "1", "--root: allreduce has no root" },
        /* a rank given to an algorithm that ignores it is a note, not an
         * error (opt_straggler_note) */
        { "ring", true, OPT_STRAGGLER, "3", NULL },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        opt_synth_t s;
        cli_opts_t o;
        ccs_err_t err = { { 0 } };
        ccs_status_t st;

        opt_init(&o);
        s = o.synth;
        s.algo = cases[i].algo;
        if (cases[i].extra != OPT_END)
            CHECK_STATUS(opt_synth_set(&s, cases[i].extra, cases[i].arg,
                                       &err), CCS_OK);
        st = opt_synth_check(&s, cases[i].single, &err);
        if (cases[i].msg == NULL) {
            CHECK_MSG(st == CCS_OK, "case %zu: %s", i, ccs_err_msg(&err, st));
        } else {
            CHECK_STATUS(st, CCS_ERR_INVALID);
            CHECK_STR_CONTAINS(ccs_err_msg(&err, st), cases[i].msg);
        }
    }
}

/* The straggler pairing rule, one for every command. */
TEST(sim_check)
{
    static const struct {
        int32_t straggler;      /* --straggler, -1: not given */
        const char *delay;      /* --straggler-delay, NULL: not given */
        int32_t dflt;           /* the input's own straggler (sim) */
        int32_t rank;           /* the rank delayed, when accepted */
        const char *msg;        /* NULL: accepted */
    } cases[] = {
        { -1, NULL, -1, -1, NULL },
        { -1, NULL, 5, -1, NULL },          /* no delay: nobody is late */
        { 3, "5ms", -1, 3, NULL },
        { 3, "0", -1, 3, NULL },
        { 3, "5ms", 5, 3, NULL },           /* the option wins */
        { -1, "5ms", 5, 5, NULL },          /* sim: the schedule's rank */
        { -1, "5ms", -1, -1, "--straggler-delay needs --straggler" },
        { 3, NULL, -1, -1, "--straggler 3 needs --straggler-delay" },
        { 3, NULL, 5, -1, "--straggler 3 needs --straggler-delay" },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        cli_opts_t o;
        ccs_err_t err = { { 0 } };
        ccs_status_t st;
        int32_t rank = -99;

        opt_init(&o);
        if (cases[i].delay != NULL)
            CHECK_STATUS(opt_sim_set(&o.sim, OPT_DELAY, cases[i].delay, &err),
                         CCS_OK);
        st = opt_sim_check(&o.sim, cases[i].straggler, cases[i].dflt, &rank,
                           &err);
        if (cases[i].msg == NULL) {
            CHECK_MSG(st == CCS_OK, "case %zu: %s", i, ccs_err_msg(&err, st));
            CHECK_EQ_INT(rank, cases[i].rank);
        } else {
            CHECK_STATUS(st, CCS_ERR_INVALID);
            CHECK_STR_CONTAINS(ccs_err_msg(&err, st), cases[i].msg);
        }
    }
}

static void no_usage(FILE *f)
{
    fprintf(f, "usage: test\n");
}

/* opt_parse with stderr captured: the exit code and the first line. */
static int parse_argv(const opt_cmd_t *cmd, char **argv, cli_opts_t *o,
                      char *line, size_t len)
{
    FILE *cap = tmpfile();
    int saved = dup(STDERR_FILENO), argc = 0, rc;
    static char *copy[64];  /* getopt permutes argv: the tables are const */

    while (argv[argc] != NULL && argc < 63) {
        copy[argc] = argv[argc];
        argc++;
    }
    copy[argc] = NULL;
    fflush(stderr);
    dup2(fileno(cap), STDERR_FILENO);
    rc = opt_parse(cmd, argc, copy, o);
    fflush(stderr);
    dup2(saved, STDERR_FILENO);
    close(saved);
    rewind(cap);
    line[0] = '\0';
    if (fgets(line, (int)len, cap) == NULL)
        line[0] = '\0';
    /* one line: nothing may follow the first */
    if (fgetc(cap) != EOF)
        snprintf(line, len, "(more than one line)");
    fclose(cap);
    return rc;
}

/* The errors of opt_parse: one line that names the option, exit 2. */
TEST(parse_errors)
{
    static const opt_id_t ids[] = {
        OPT_TOPO, OPT_STRAGGLER, OPT_DELAY, OPT_JSON, OPT_CSV, OPT_QUIET,
        OPT_SIZES, OPT_END
    };
    static const opt_cmd_t cmd = { "sim", ids, no_usage, 1 };
    static const struct {
        const char *argv[6];
        int rc;
        const char *line;       /* the whole line, or "" for none */
    } cases[] = {
        { { "sim", "f.ccs", "--straggler-delay", NULL }, 2,
          "ccsynth sim: option --straggler-delay needs a value\n" },
        { { "sim", "f.ccs", "--straggler-delay", "--json", NULL }, 2,
          "ccsynth sim: option --straggler-delay needs a value\n" },
        { { "sim", "f.ccs", "-t", NULL }, 2,
          "ccsynth sim: option --topo needs a value\n" },
        { { "sim", "f.ccs", "--straggler-delay", "20", NULL }, 2,
          "ccsynth sim: --straggler-delay 20: 20 what? write 20ms (units s, "
          "ms, us, ns)\n" },
        { { "sim", "f.ccs", "--nope", NULL }, 2,
          "ccsynth sim: unknown option '--nope' ('ccsynth sim --help' lists "
          "the options)\n" },
        { { "sim", "f.ccs", "-r", "1", NULL }, 2,
          "ccsynth sim: unknown option '-r' ('ccsynth sim --help' lists the "
          "options)\n" },
        { { "sim", "f.ccs", "--json=x", NULL }, 2,
          "ccsynth sim: option --json takes no value\n" },
        { { "sim", "f.ccs", "--json", "--csv", NULL }, 2,
          "ccsynth sim: --json and --csv exclude each other\n" },
        { { "sim", "f.ccs", "g.ccs", NULL }, 2,
          "ccsynth sim: unexpected argument 'g.ccs'\n" },
        { { "sim", "f.ccs", "-q", "--straggler", "2", NULL }, 0, "" },
        { { "sim", "--sizes=1K", "f.ccs", "-j", NULL }, 0, "" },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        cli_opts_t o;
        char line[512];
        int rc = parse_argv(&cmd, (char **)cases[i].argv, &o, line,
                            sizeof(line));

        CHECK_MSG(rc == cases[i].rc, "case %zu: exit %d, want %d (%s)", i,
                  rc, cases[i].rc, line);
        CHECK_MSG(strcmp(line, cases[i].line) == 0,
                  "case %zu: '%s', want '%s'", i, line, cases[i].line);
        opt_free(&o);
    }
}

/* --mode dataflow is what the GPU executors do not run: only the commands that take
 * --window (sim, compare) accept it, so tune never picks plans by it; and
 * --window alone means nothing. */
TEST(parse_dataflow_mode)
{
    static const opt_id_t with_w[] = { OPT_MODE, OPT_WINDOW, OPT_END };
    static const opt_id_t without_w[] = { OPT_MODE, OPT_END };
    static const opt_cmd_t sim = { "sim", with_w, no_usage, 1 };
    static const opt_cmd_t tune = { "tune", without_w, no_usage, 1 };
    static const struct {
        const opt_cmd_t *cmd;
        const char *argv[7];
        int rc;
        const char *line;
        uint32_t window;
    } cases[] = {
        { &sim, { "sim", "f.ccs", "-m", "dataflow", NULL }, 0, "", 0 },
        { &sim, { "sim", "f.ccs", "-m", "dataflow", "--window", "3",
            NULL }, 0, "",
          3 },
        { &sim, { "sim", "f.ccs", "--window", "3", NULL }, 2,
          "ccsynth sim: --window is for --mode dataflow\n", 0 },
        { &tune, { "tune", "-m", "dataflow", NULL }, 2,
          "ccsynth tune: --mode dataflow is for sim and compare (the CUDA "
          "and NCCL executors do not run it)\n", 0 },
        { &tune, { "tune", "-m", "barrier", NULL }, 0, "", 0 },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        cli_opts_t o;
        char line[512];
        sim_opts_t so;
        int rc = parse_argv(cases[i].cmd, (char **)cases[i].argv, &o, line,
                            sizeof(line));

        CHECK_MSG(rc == cases[i].rc, "case %zu: exit %d, want %d (%s)", i,
                  rc, cases[i].rc, line);
        CHECK_MSG(strcmp(line, cases[i].line) == 0,
                  "case %zu: '%s', want '%s'", i, line, cases[i].line);
        if (rc == 0) {
            opt_fill_sim_opts(&o, -1, &so);
            CHECK_EQ_INT(so.window, cases[i].window);
        }
        opt_free(&o);
    }
}

/* What a good command line leaves in the groups, and the one place that
 * turns them into algo_params_t. */
TEST(parse_fill)
{
    static const opt_id_t ids[] = {
        OPT_TOPO, OPT_ALPHA, OPT_ALGO, OPT_COLL, OPT_ROOT, OPT_STRAGGLER,
        OPT_PIPELINE, OPT_CHUNKS, OPT_PHASE0, OPT_DELAY, OPT_MODE,
        OPT_OUTPUT, OPT_QUIET, OPT_RANK, OPT_END
    };
    static const opt_cmd_t cmd = { "synth", ids, no_usage, 0 };
    static const char *argv[] = {
        "synth", "-t", "switch:8", "--alpha", "2us", "-a", "stragglar",
        "-c", "allreduce", "--straggler", "5", "--pipelines", "2",
        "--chunks", "14", "--phase0", "rhd", "--straggler-delay", "3ms",
        "-m", "barrier", "-o", "x.ccs", "-q", "-r", "3", NULL
    };
    cli_opts_t o;
    algo_params_t p;
    sim_opts_t so;
    char line[512];

    CHECK_EQ_INT(parse_argv(&cmd, (char **)argv, &o, line, sizeof(line)), 0);
    CHECK_MSG(line[0] == '\0', "unexpected message '%s'", line);
    CHECK(strcmp(o.topo.spec, "switch:8") == 0);
    CHECK_NEAR(o.topo.over.alpha_s, 2e-6, 1e-12);
    CHECK(strcmp(o.synth.algo, "stragglar") == 0);
    CHECK(strcmp(o.out.output, "x.ccs") == 0);
    CHECK(o.out.quiet);
    CHECK(o.own[OPT_RANK] != NULL && strcmp(o.own[OPT_RANK], "3") == 0);
    opt_fill_algo_params(&o, &p);
    CHECK_EQ_INT(p.coll, CCS_COLL_ALLREDUCE);
    CHECK_EQ_INT(p.straggler, 5);
    CHECK_EQ_INT(p.pipeline, 2);
    CHECK_EQ_INT(p.nchunks, 14);
    CHECK(p.stragglar.phase0 != NULL &&
          strcmp(p.stragglar.phase0, "rhd") == 0);
    CHECK(!p.milp.want_lp);
    CHECK(p.milp.cost != NULL);
    CHECK_EQ_INT(p.milp.mip_gap < 0, 1);
    opt_fill_sim_opts(&o, 5, &so);
    CHECK_EQ_INT(so.mode, SIM_MODE_BARRIER);
    CHECK_EQ_INT(so.straggler, 5);
    CHECK_NEAR(so.straggler_delay_s, 3e-3, 1e-12);
    CHECK_EQ_INT(so.elem_bytes, 4);
    opt_free(&o);
}

/* A short letter means one option wherever it is accepted. */
TEST(short_letters_unique)
{
    /* -h is every command's --help */
    static const char letters[] = "tacosmjdqr";

    for (const char *l = letters; *l != '\0'; l++) {
        int n = 0;
        char flag[3] = { '-', *l, '\0' };
        char *argv[] = { "x", flag, NULL };

        for (int id = 0; id < OPT_COUNT; id++) {
            opt_id_t ids[2] = { (opt_id_t)id, OPT_END };
            opt_cmd_t cmd = { "x", ids, no_usage, -1 };
            cli_opts_t o;
            char line[512];

            /* accepted (or missing its value): the letter is this id's */
            if (parse_argv(&cmd, argv, &o, line, sizeof(line)) == 0 ||
                strstr(line, "needs a value") != NULL)
                n++;
            opt_free(&o);
        }
        CHECK_MSG(n == 1, "-%c belongs to %d options", *l, n);
    }
}

int main(void)
{
    RUN(number_table);
    RUN(int_table);
    RUN(exit_codes);
    RUN(group_setters);
    RUN(synth_check);
    RUN(sim_check);
    RUN(parse_errors);
    RUN(parse_dataflow_mode);
    RUN(parse_fill);
    RUN(short_letters_unique);
    return TEST_SUMMARY();
}
