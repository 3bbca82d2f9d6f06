/*
 * test_planset.c - plan sets: loading a tuning index (and a single .ccs),
 * the lookup rule at range edges, ties and beyond the tuned span, bad
 * indexes each with the status and message they must give, and runs on
 * the threads transport that pick a plan by byte count with the checks a
 * run makes first.
 *
 * Plans are hand-built fixtures written with the format's writer and the
 * index is written here, by hand, in the shape docs/tuning.md specifies,
 * so this test depends on the runtime only.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "rt_fixtures.h"
#include "../../runtime/ccs_int.h"
#include "../../runtime/format.h"
#include "../../runtime/planset.h"

#define FP 0x1234abcd5678ef01ull

static char tmpdir[64];

static void write_plan(const char *dir, const char *name, ccs_sched_t *s,
                       uint64_t fp)
{
    char path[256];

    CHECK(s != NULL);
    if (s == NULL)
        return;
    s->topo_fingerprint = fp;
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    CHECK_STATUS(ccs_format_write_file(s, path, NULL), CCS_OK);
    ccs_sched_destroy(s);
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");

    CHECK(f != NULL);
    if (f == NULL)
        return;
    fputs(text, f);
    fclose(f);
}

/* A fresh directory DIR/name holding the fixture plans and `index` as its
 * tuning.json (NULL: none). */
static void make_dir(const char *name, const char *index, char *out,
                     size_t len)
{
    char p[256];

    snprintf(out, len, "%s/%s", tmpdir, name);
    CHECK(mkdir(out, 0755) == 0);
    write_plan(out, "ring1.ccs", fx_ring_allreduce(4, 1), FP);
    write_plan(out, "ring2.ccs", fx_ring_allreduce(4, 2), FP);
    write_plan(out, "ring3.ccs", fx_ring_scratch(4), FP);
    write_plan(out, "two.ccs", fx_ring_allreduce(2, 1), FP);
    write_plan(out, "ag.ccs", fx_ring_allgather(4, 1), FP);
    write_plan(out, "otherfp.ccs", fx_ring_allreduce(4, 1), FP + 1);
    write_plan(out, "strag.ccs", fx_straggler(4, 3), FP);
    if (index != NULL) {
        snprintf(p, sizeof(p), "%s/tuning.json", out);
        write_text(p, index);
    }
}

/* The tuner's shape; RANGES is the body of "ranges". */
#define INDEX(ver, coll, n, fp, ranges)                                     \
    "{\n  \"format\": \"ccsynth-tuning\",\n  \"version\": " ver ",\n"      \
    "  \"topo\": \"switch:4\",\n  \"topo_fingerprint\": \"" fp "\",\n"     \
    "  \"coll\": \"" coll "\",\n  \"nranks\": " n ",\n"                     \
    "  \"elem_bytes\": 4,\n  \"search\": {\"mode\": \"pruned\", "           \
    "\"pruned\": [\"rhd\"]},\n  \"configs\": [],\n  \"ranges\": [" ranges   \
    "\n  ],\n  \"sizes\": []\n}\n"
#define FPS "0x1234abcd5678ef01"
#define RANGE(lo, hi, file)                                                 \
    "\n    {\"min_bytes\": " lo ", \"max_bytes\": " hi ", \"first_size\": " \
    "1024, \"last_size\": 2048, \"config\": 0, \"file\": \"" file "\"}"

static const char *good_index =
    INDEX("1", "allreduce", "4", FPS,
          RANGE("0", "1023", "ring1.ccs") ","
          RANGE("1024", "65535", "ring2.ccs") ","
          RANGE("65536", "1048575", "ring1.ccs") ","
          RANGE("1048576", "null", "ring3.ccs"));

static double arr_start(const void *ctx, uint32_t k)
{
    return ((const double *)ctx)[k];
}

TEST(lookup_rule_table)
{
    /* The rule with a table of its own: last start <= bytes, else 0. */
    static const double starts[] = { 0, 100, 1000, 1e6 };
    static const double late[] = { 50, 100 };
    static const struct { const double *st; uint32_t n; double b;
                          uint32_t want; } t[] = {
        { starts, 4, 0, 0 },        { starts, 4, 99, 0 },
        { starts, 4, 100, 1 },      { starts, 4, 999.5, 1 },
        { starts, 4, 1000, 2 },     { starts, 4, 1e6, 3 },
        { starts, 4, 1e18, 3 },     { starts, 1, 1e9, 0 },
        { starts, 3, 1e9, 2 },      { late, 2, 10, 0 },
        { late, 2, 50, 0 },         { late, 2, 100, 1 },
        { starts, 0, 5, 0 },
    };

    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        uint32_t got = ccs_planset_pick_range(t[i].n, t[i].b, arr_start,
                                              t[i].st);
        CHECK_MSG(got == t[i].want, "case %zu: bytes %g -> %u, want %u", i,
                  t[i].b, got, t[i].want);
    }
}

TEST(load_index_and_pick)
{
    char dir[128], idx[160];
    ccs_planset_t *set = NULL;
    ccs_planset_info_t in;
    char msg[512];
    /* bytes -> plan: edges of every range, ties at a start, past the end */
    static const struct { size_t bytes; uint32_t plan; } t[] = {
        { 0, 0 }, { 1, 0 }, { 1023, 0 }, { 1024, 1 }, { 65535, 1 },
        { 65536, 0 }, { 1048575, 0 }, { 1048576, 2 }, { SIZE_MAX, 2 },
    };
    uint64_t lo, hi;
    uint32_t pi;

    make_dir("good", good_index, dir, sizeof(dir));
    CHECK_STATUS(ccs_planset_load(dir, &set, msg, sizeof(msg)), CCS_OK);
    CHECK_MSG(msg[0] == '\0', "message on success: %s", msg);
    if (set == NULL)
        return;
    CHECK_STATUS(ccs_planset_get_info(set, &in), CCS_OK);
    CHECK_EQ_INT(in.coll, CCS_COLL_ALLREDUCE);
    CHECK_EQ_INT(in.nranks, 4);
    CHECK_EQ_INT(in.nplans, 3);          /* ring1 is loaded once */
    CHECK_EQ_INT(in.nranges, 4);
    CHECK_EQ_INT(in.elem_bytes, 4);
    CHECK(in.topo_fingerprint == FP);
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        CHECK_STATUS(ccs_planset_pick(set, t[i].bytes, &pi), CCS_OK);
        CHECK_MSG(pi == t[i].plan, "bytes %zu -> plan %u, want %u",
                  t[i].bytes, pi, t[i].plan);
    }
    CHECK_STATUS(ccs_planset_range(set, 3, &lo, &hi, &pi), CCS_OK);
    CHECK(lo == 1048576 && hi == UINT64_MAX && pi == 2);
    CHECK_STATUS(ccs_planset_range(set, 4, &lo, &hi, &pi), CCS_ERR_INVALID);
    CHECK(ccs_planset_plan(set, 2) != NULL);
    CHECK(ccs_planset_plan(set, 3) == NULL);
    CHECK_EQ_INT(ccs_plan_nranks(ccs_planset_plan(set, 1)), 4);
    /* the byte count of a call: the whole buffer */
    CHECK_EQ_INT(ccs_planset_call_bytes(set, 10, CCS_FLOAT32), 40);
    CHECK_EQ_INT(ccs_planset_call_bytes(set, 10, CCS_BFLOAT16), 20);
    CHECK(ccs_planset_call_bytes(set, SIZE_MAX / 2, CCS_FLOAT64) ==
          SIZE_MAX);
    CHECK_EQ_INT(ccs_planset_call_bytes(set, 10, CCS_DTYPE_COUNT), 0);
    ccs_planset_destroy(set);
    set = NULL;

    /* tuning.json named directly is the same set */
    snprintf(idx, sizeof(idx), "%s/tuning.json", dir);
    CHECK_STATUS(ccs_planset_load(idx, &set, NULL, 0), CCS_OK);
    CHECK_STATUS(ccs_planset_get_info(set, &in), CCS_OK);
    CHECK_EQ_INT(in.nranges, 4);
    ccs_planset_destroy(set);
    ccs_planset_destroy(NULL);
}

TEST(single_plan_is_a_set_of_one)
{
    char dir[128], path[192];
    ccs_planset_t *set = NULL;
    ccs_planset_info_t in;
    uint32_t pi = 99;

    make_dir("single", NULL, dir, sizeof(dir));
    snprintf(path, sizeof(path), "%s/ag.ccs", dir);
    CHECK_STATUS(ccs_planset_load(path, &set, NULL, 0), CCS_OK);
    if (set == NULL)
        return;
    CHECK_STATUS(ccs_planset_get_info(set, &in), CCS_OK);
    CHECK_EQ_INT(in.coll, CCS_COLL_ALLGATHER);
    CHECK_EQ_INT(in.nplans, 1);
    CHECK_EQ_INT(in.nranges, 1);
    CHECK_EQ_INT(in.elem_bytes, 0);
    CHECK(in.topo_fingerprint == FP);
    CHECK_STATUS(ccs_planset_pick(set, 0, &pi), CCS_OK);
    CHECK_EQ_INT(pi, 0);
    CHECK_STATUS(ccs_planset_pick(set, SIZE_MAX, &pi), CCS_OK);
    CHECK_EQ_INT(pi, 0);
    /* allgather's count is per rank: the whole buffer is nranks times */
    CHECK_EQ_INT(ccs_planset_call_bytes(set, 10, CCS_FLOAT32), 160);
    ccs_planset_destroy(set);
}

TEST(bad_sets_fail_with_messages)
{
    static const struct {
        const char *name;
        const char *index;       /* NULL: no tuning.json */
        const char *load;        /* path under the directory, "" itself */
        ccs_status_t want;
        const char *msg;
    } t[] = {
        { "noindex", NULL, "", CCS_ERR_IO, "no tuning.json" },
        { "empty", INDEX("1", "allreduce", "4", FPS, ""), "", CCS_ERR_FORMAT,
          "no plans" },
        { "version", INDEX("2", "allreduce", "4", FPS,
                           RANGE("0", "null", "ring1.ccs")), "",
          CCS_ERR_VERSION, "version 2" },
        { "ranks", INDEX("1", "allreduce", "4", FPS,
                         RANGE("0", "99", "ring1.ccs") ","
                         RANGE("100", "null", "two.ccs")), "",
          CCS_ERR_MISMATCH, "allreduce on 2 ranks" },
        { "coll", INDEX("1", "allreduce", "4", FPS,
                        RANGE("0", "99", "ring1.ccs") ","
                        RANGE("100", "null", "ag.ccs")), "",
          CCS_ERR_MISMATCH, "plan is for allgather on 4 ranks" },
        { "fp", INDEX("1", "allreduce", "4", FPS,
                      RANGE("0", "null", "otherfp.ccs")), "",
          CCS_ERR_MISMATCH, "topology 0x1234abcd5678ef02" },
        { "gap", INDEX("1", "allreduce", "4", FPS,
                       RANGE("0", "99", "ring1.ccs") ","
                       RANGE("200", "null", "ring2.ccs")), "",
          CCS_ERR_FORMAT, "range 1 starting at 200 does not continue" },
        { "start", INDEX("1", "allreduce", "4", FPS,
                         RANGE("5", "null", "ring1.ccs")), "",
          CCS_ERR_FORMAT, "range 0 starting at 5" },
        { "opentail", INDEX("1", "allreduce", "4", FPS,
                            RANGE("0", "null", "ring1.ccs") ","
                            RANGE("1", "null", "ring2.ccs")), "",
          CCS_ERR_FORMAT, "only the last has max_bytes null" },
        { "escape", INDEX("1", "allreduce", "4", FPS,
                          RANGE("0", "null", "../good/ring1.ccs")), "",
          CCS_ERR_FORMAT, "not a plain name" },
        { "missing", INDEX("1", "allreduce", "4", FPS,
                           RANGE("0", "null", "nothere.ccs")), "",
          CCS_ERR_IO, "nothere.ccs" },
        { "notjson", "{\"format\": \"ccsynth-tuning\",\n \"version\": 1,,}",
          "", CCS_ERR_PARSE, "tuning.json:2:15: " },
        { "trailing", "{} {}", "", CCS_ERR_PARSE, "text after" },
        { "format", "{\"format\": \"other\", \"version\": 1}", "",
          CCS_ERR_FORMAT, "not a tuning index" },
        { "badcoll", INDEX("1", "allsum", "4", FPS,
                           RANGE("0", "null", "ring1.ccs")), "",
          CCS_ERR_FORMAT, "\"coll\" is not a collective" },
        { "badranks", INDEX("1", "allreduce", "0", FPS,
                            RANGE("0", "null", "ring1.ccs")), "",
          CCS_ERR_FORMAT, "\"nranks\"" },
        { "badfp", INDEX("1", "allreduce", "4", "zz",
                         RANGE("0", "null", "ring1.ccs")), "",
          CCS_ERR_FORMAT, "'zz' is not a hex" },
        { "norange", "{\"format\": \"ccsynth-tuning\", \"version\": 1, "
          "\"coll\": \"allreduce\", \"nranks\": 4}", "", CCS_ERR_FORMAT,
          "no \"ranges\"" },
        { "deep", "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]"
          "]]]]]]]]]]]]]]]]]]]]]]]]]", "", CCS_ERR_PARSE, "too deeply" },
        { "nofile", NULL, "nofile.ccs", CCS_ERR_IO, "nofile.ccs" },
        { "notccs", "just text", "tuning.json", CCS_ERR_PARSE,
          "tuning.json:1:1" },
    };

    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        char dir[128], path[192], msg[512];
        ccs_planset_t *set = NULL;
        ccs_status_t st;

        make_dir(t[i].name, t[i].index, dir, sizeof(dir));
        snprintf(path, sizeof(path), "%s%s%s", dir, t[i].load[0] ? "/" : "",
                 t[i].load);
        msg[0] = '\0';
        st = ccs_planset_load(path, &set, msg, sizeof(msg));
        CHECK_MSG(st == t[i].want, "%s: status %s, want %s (%s)", t[i].name,
                  ccs_status_name(st), ccs_status_name(t[i].want), msg);
        CHECK_MSG(set == NULL, "%s: set written on failure", t[i].name);
        CHECK_MSG(strstr(msg, t[i].msg) != NULL, "%s: message '%s' lacks "
                  "'%s'", t[i].name, msg, t[i].msg);
        ccs_planset_destroy(set);
    }
    CHECK_STATUS(ccs_planset_load(NULL, NULL, NULL, 0), CCS_ERR_INVALID);
}

typedef struct job {
    const ccs_planset_t *set;
    ccs_comm_t *comm;
    size_t count;
    ccs_planset_opts_t o;
    uint32_t picked;
    ccs_status_t st;
    int wrong;
} job_t;

/* Each rank contributes rank + 1 + i % 7 at element i: the sum over 4
 * ranks is exact in float. */
static void *job_main(void *arg)
{
    job_t *j = arg;
    int r = ccs_comm_rank(j->comm), R = ccs_comm_size(j->comm);
    float *x = malloc(j->count * sizeof(float));

    if (x == NULL) {
        j->st = CCS_ERR_NOMEM;
        return NULL;
    }
    for (size_t i = 0; i < j->count; i++)
        x[i] = (float)(r + 1 + (int)(i % 7));
    j->o.plan_index = &j->picked;
    j->st = ccs_planset_run(j->set, j->comm, x, x, j->count, CCS_FLOAT32,
                            CCS_SUM, NULL, &j->o);
    for (size_t i = 0; j->st == CCS_OK && i < j->count; i++)
        if (x[i] != (float)(R * (R + 1) / 2 + R * (int)(i % 7)))
            j->wrong++;
    free(x);
    return NULL;
}

static void run_all(job_t *j, int n)
{
    pthread_t th[8];

    for (int r = 0; r < n; r++)
        pthread_create(&th[r], NULL, job_main, &j[r]);
    for (int r = 0; r < n; r++)
        pthread_join(th[r], NULL);
}

TEST(run_picks_by_size_and_checks_first)
{
    char dir[128], path[192];
    ccs_planset_t *set = NULL, *strag = NULL;
    ccs_comm_t *c[4] = { NULL }, *c2[2] = { NULL };
    /* counts of float32 -> plan: 4 B, 1 KiB, 64 KiB + 4 B, 4 MiB */
    static const struct { size_t count; uint32_t plan; } t[] = {
        { 1, 0 }, { 255, 0 }, { 256, 1 }, { 16385, 0 }, { 1 << 20, 2 },
    };
    float a[8] = { 0 };

    make_dir("run", good_index, dir, sizeof(dir));
    CHECK_STATUS(ccs_planset_load(dir, &set, NULL, 0), CCS_OK);
    CHECK_STATUS(ccs_comm_init_threads(4, c), CCS_OK);
    CHECK_STATUS(ccs_comm_init_threads(2, c2), CCS_OK);
    if (set == NULL || c[0] == NULL || c2[0] == NULL)
        goto cleanup;
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        job_t j[4];
        for (int r = 0; r < 4; r++) {
            ccs_planset_opts_t o = CCS_PLANSET_OPTS_INIT;
            j[r] = (job_t){ set, c[r], t[i].count, o, 99, CCS_OK, 0 };
            j[r].o.topo_fingerprint = FP;
            j[r].o.expect_coll = CCS_COLL_ALLREDUCE;
        }
        run_all(j, 4);
        for (int r = 0; r < 4; r++) {
            CHECK_MSG(j[r].st == CCS_OK, "count %zu rank %d: %s",
                      t[i].count, r, ccs_comm_last_error(c[r]));
            CHECK_EQ_INT(j[r].picked, t[i].plan);
            CHECK_EQ_INT(j[r].wrong, 0);
        }
    }

    /* Refused before anything moves, with the message on the comm. */
    {
        ccs_planset_opts_t o = CCS_PLANSET_OPTS_INIT;
        CHECK_STATUS(ccs_planset_run(set, c2[0], a, a, 8, CCS_FLOAT32,
                                     CCS_SUM, NULL, NULL), CCS_ERR_MISMATCH);
        CHECK_STR_CONTAINS(ccs_comm_last_error(c2[0]),
                           "plan set (allreduce) is for 4 ranks, the "
                           "communicator has 2");
        o.topo_fingerprint = FP + 7;
        CHECK_STATUS(ccs_planset_run(set, c[0], a, a, 8, CCS_FLOAT32,
                                     CCS_SUM, NULL, &o), CCS_ERR_MISMATCH);
        CHECK_STR_CONTAINS(ccs_comm_last_error(c[0]), "tuned for topology "
                           "0x1234abcd5678ef01, the job runs on "
                           "0x1234abcd5678ef08");
        o.topo_fingerprint = 0;
        o.expect_coll = CCS_COLL_ALLGATHER;
        CHECK_STATUS(ccs_planset_run(set, c[0], a, a, 8, CCS_FLOAT32,
                                     CCS_SUM, NULL, &o), CCS_ERR_MISMATCH);
        CHECK_STR_CONTAINS(ccs_comm_last_error(c[0]), "called as allgather");
        CHECK_STATUS(ccs_planset_run(set, c[0], a, a, 8, CCS_DTYPE_COUNT,
                                     CCS_SUM, NULL, NULL), CCS_ERR_INVALID);
        CHECK_STR_CONTAINS(ccs_comm_last_error(c[0]), "unknown datatype");
        CHECK_STATUS(ccs_planset_run(NULL, c[0], a, a, 8, CCS_FLOAT32,
                                     CCS_SUM, NULL, NULL), CCS_ERR_INVALID);
        CHECK_STR_CONTAINS(ccs_comm_last_error(c[0]), "NULL plan set");
        CHECK_STATUS(ccs_planset_run(set, NULL, a, a, 8, CCS_FLOAT32,
                                     CCS_SUM, NULL, NULL), CCS_ERR_INVALID);
        /* What the picked plan checks comes from ccs_run, same words. */
        o.expect_coll = CCS_COLL_COUNT;
        o.straggler = 2;
        CHECK_STATUS(ccs_planset_run(set, c[0], a, a, 8, CCS_FLOAT32,
                                     CCS_SUM, NULL, &o), CCS_ERR_MISMATCH);
        CHECK_STR_CONTAINS(ccs_comm_last_error(c[0]), "has no straggler "
                           "role to relabel");
        o.straggler = -1;
        CHECK_STATUS(ccs_planset_run(set, c[0], a, a, 8, CCS_FLOAT32,
                                     CCS_REDOP_COUNT, NULL, &o),
                     CCS_ERR_INVALID);
        CHECK_STR_CONTAINS(ccs_comm_last_error(c[0]), "unknown reduction op");
    }

    /* A StragglAR-role plan as a set of one, with a straggler per call. */
    snprintf(path, sizeof(path), "%s/strag.ccs", dir);
    CHECK_STATUS(ccs_planset_load(path, &strag, NULL, 0), CCS_OK);
    for (int s = 0; strag != NULL && s < 4; s++) {
        job_t j[4];
        for (int r = 0; r < 4; r++) {
            ccs_planset_opts_t o = CCS_PLANSET_OPTS_INIT;
            j[r] = (job_t){ strag, c[r], 1000, o, 99, CCS_OK, 0 };
            j[r].o.straggler = s;
        }
        run_all(j, 4);
        for (int r = 0; r < 4; r++) {
            CHECK_MSG(j[r].st == CCS_OK, "straggler %d rank %d: %s", s, r,
                      ccs_comm_last_error(c[r]));
            CHECK_EQ_INT(j[r].wrong, 0);
        }
    }
cleanup:
    for (int r = 0; r < 4; r++)
        ccs_comm_destroy(c[r]);
    for (int r = 0; r < 2; r++)
        ccs_comm_destroy(c2[r]);
    ccs_planset_destroy(set);
    ccs_planset_destroy(strag);
}

int main(void)
{
    char cmd[96];
    int rc;

    snprintf(tmpdir, sizeof(tmpdir), "/tmp/ccs-planset-XXXXXX");
    if (mkdtemp(tmpdir) == NULL) {
        perror("mkdtemp");
        return 1;
    }
    RUN(lookup_rule_table);
    RUN(load_index_and_pick);
    RUN(single_plan_is_a_set_of_one);
    RUN(bad_sets_fail_with_messages);
    RUN(run_picks_by_size_and_checks_first);
    rc = TEST_SUMMARY();
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", tmpdir);
    return rc;
}
