/* test_util.c - synth/util: the JSON writer (RFC 8259 strings, numbers,
 * nesting) and the output-file helper built on runtime/ccs_out.h. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "json.h"
#include "outfile.h"

/* What f holds, NUL-terminated, into buf. */
static const char *contents(FILE *f, char *buf, size_t len)
{
    size_t n;

    fflush(f);
    rewind(f);
    n = fread(buf, 1, len - 1, f);
    buf[n] = '\0';
    return buf;
}

TEST(json_strings)
{
    static const struct {
        const char *in;
        size_t n;          /* 0: strlen */
        const char *want;
    } cases[] = {
        { "plain", 0, "\"plain\"" },
        { "q\"b\\s/", 0, "\"q\\\"b\\\\s/\"" },
        { "\b\f\n\r\t", 0, "\"\\b\\f\\n\\r\\t\"" },
        { "\x01\x1f\x7f", 0, "\"\\u0001\\u001f\\u007f\"" },
        { "a\0b", 3, "\"a\\u0000b\"" },
        /* valid UTF-8 passes through: e-acute, the euro sign, an emoji */
        { "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", 0,
          "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"" },
        /* not UTF-8: each byte as \u00XX (Latin-1) */
        { "\xff", 0, "\"\\u00ff\"" },
        { "\xc0\x80", 0, "\"\\u00c0\\u0080\"" },          /* overlong */
        { "\xed\xa0\x80", 0, "\"\\u00ed\\u00a0\\u0080\"" }, /* surrogate */
        { "\xe2\x82", 0, "\"\\u00e2\\u0082\"" },           /* truncated */
        { "\xf4\x90\x80\x80", 0,
          "\"\\u00f4\\u0090\\u0080\\u0080\"" },             /* > U+10FFFF */
        { NULL, 0, "\"\"" },
    };
    char buf[256];

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        FILE *f = tmpfile();
        if (f == NULL) {
            CHECK(f != NULL);
            return;
        }
        if (cases[i].n)
            json_strn(f, cases[i].in, cases[i].n);
        else
            json_str(f, cases[i].in);
        CHECK_MSG(strcmp(contents(f, buf, sizeof(buf)), cases[i].want) == 0,
                  "case %zu: got %s, want %s", i, buf, cases[i].want);
        fclose(f);
    }
}

TEST(json_numbers_and_nesting)
{
    char buf[512];
    FILE *f = tmpfile();
    json_w_t w;

    if (f == NULL) {
        CHECK(f != NULL);
        return;
    }
    json_w_init(&w, f, 2);
    json_w_begin_object(&w);
    json_w_key(&w, "n");
    json_w_int(&w, -3);
    json_w_key(&w, "x");
    json_w_num(&w, "%.3f", 1.5);
    json_w_key(&w, "nan");
    json_w_num(&w, "%.3f", NAN);
    json_w_key(&w, "inf");
    json_w_num(&w, "%g", INFINITY);
    json_w_key(&w, "list");
    json_w_begin_array(&w);
    json_w_str(&w, "a");
    json_w_bool(&w, true);
    json_w_null(&w);
    json_w_begin_object(&w);
    json_w_end_object(&w);
    json_w_end_array(&w);
    json_w_key(&w, "empty");
    json_w_begin_array(&w);
    json_w_end_array(&w);
    json_w_end_object(&w);
    CHECK(json_w_ok(&w));
    CHECK_MSG(strcmp(contents(f, buf, sizeof(buf)),
                     "{\n  \"n\": -3,\n  \"x\": 1.500,\n  \"nan\": null,\n"
                     "  \"inf\": null,\n  \"list\": [\n    \"a\",\n    true,\n"
                     "    null,\n    {}\n  ],\n  \"empty\": []\n}") == 0,
              "got %s", buf);
    fclose(f);

    /* One line when indent is 0. */
    f = tmpfile();
    if (f == NULL)
        return;
    json_w_init(&w, f, 0);
    json_w_begin_array(&w);
    json_w_int(&w, 1);
    json_w_int(&w, 2);
    json_w_end_array(&w);
    CHECK(strcmp(contents(f, buf, sizeof(buf)), "[1, 2]") == 0);
    fclose(f);

    /* Nesting past the limit is reported, not overrun. */
    f = tmpfile();
    if (f == NULL)
        return;
    json_w_init(&w, f, 0);
    for (int i = 0; i < JSON_MAX_DEPTH + 4; i++)
        json_w_begin_array(&w);
    CHECK(!json_w_ok(&w));
    fclose(f);
}

static ccs_status_t write_hello(FILE *f, const void *ctx, ccs_err_t *err)
{
    (void)err;
    fputs((const char *)ctx, f);
    return CCS_OK;
}

static ccs_status_t write_fail(FILE *f, const void *ctx, ccs_err_t *err)
{
    (void)ctx;
    fputs("half", f);
    return ccs_err_set(err, CCS_ERR_INTERNAL, "writer gave up");
}

TEST(outfile_write_rules)
{
    char dir[] = "/tmp/test_util.XXXXXX", path[64], buf[64];
    ccs_err_t err = { { 0 } };
    FILE *f;

    CHECK(mkdtemp(dir) != NULL);
    snprintf(path, sizeof(path), "%s/out.json", dir);
    CHECK_STATUS(outfile_write(path, write_hello, "one", &err), CCS_OK);
    /* A failing writer leaves the old contents and no temporary. */
    CHECK_STATUS(outfile_write(path, write_fail, NULL, &err),
                 CCS_ERR_INTERNAL);
    CHECK_STR_CONTAINS(err.msg, path);
    f = fopen(path, "r");
    CHECK(f != NULL && strcmp(contents(f, buf, sizeof(buf)), "one") == 0);
    if (f)
        fclose(f);
    /* A full device: an error, exit-1 material for the CLI. */
    CHECK_STATUS(outfile_write("/dev/full", write_hello, "x", &err),
                 CCS_ERR_IO);
    /* /dev/null is written through, not replaced. */
    CHECK_STATUS(outfile_write("/dev/null", write_hello, "x", &err), CCS_OK);
    unlink(path);
    CHECK(rmdir(dir) == 0);   /* empty: no temporary left behind */
}

int main(void)
{
    RUN(json_strings);
    RUN(json_numbers_and_nesting);
    RUN(outfile_write_rules);
    return TEST_SUMMARY();
}
