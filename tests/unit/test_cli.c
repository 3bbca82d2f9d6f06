/*
 * test_cli.c - the CLI's number parsers (synth/cli.c), which every option and
 * every YAML topology number goes through, and the status -> exit code map
 * that the README documents.
 */
#include <math.h>
#include <stdbool.h>

#include "cli.h"
#include "harness.h"

typedef enum { P_TIME, P_BW, P_SIZE, P_DOUBLE } ptype_t;

static const char *const ptype_name[] = { "time", "bw", "size", "double" };

static bool parse(ptype_t t, const char *s, double *v)
{
    switch (t) {
    case P_TIME:
        return units_parse_time(s, v);
    case P_BW:
        return units_parse_bw(s, v);
    case P_SIZE:
        return units_parse_size(s, v);
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

int main(void)
{
    RUN(number_table);
    RUN(int_table);
    RUN(exit_codes);
    return TEST_SUMMARY();
}
