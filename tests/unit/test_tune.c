/*
 * test_tune.c - `ccsynth tune`'s library (synth/tune/tune.c): the pruned search
 * chooses what the full grid chooses, with fewer simulations; latency-
 * versus bandwidth-optimal choices on switch:8; ranges; emitted plans
 * verify and load; determinism; option errors.
 *
 * Every expectation is computed here from independent runs (the full grid,
 * the topology's link bandwidth), not copied from the tuner's output.
 */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../runtime/ccs.h"
#include "../../runtime/format.h"
#include "sim.h"
#include "topo.h"
#include "tune.h"
#include "verify.h"
#include "harness.h"

/* 1 KiB .. 1 GiB, factor 4: 11 sizes (kept small for test time). */
static void sizes_1k_1g(double *s, uint32_t *n)
{
    *n = 0;
    for (double b = 1024; b <= 1073741824.0; b *= 4)
        s[(*n)++] = b;
}

static tune_result_t *run(const char *topo_spec, ccs_coll_t coll,
                          const char *const *algos, uint32_t nalgos,
                          bool full, double prune)
{
    topo_t *t = NULL;
    tune_result_t *r = NULL;
    tune_opts_t o;
    ccs_err_t err = { { 0 } };
    double sizes[16];
    uint32_t n;
    ccs_status_t st;

    st = topo_load(topo_spec, NULL, &t, &err);
    CHECK_MSG(st == CCS_OK, "%s: %s", topo_spec, ccs_err_msg(&err, st));
    if (st != CCS_OK)
        return NULL;
    sizes_1k_1g(sizes, &n);
    tune_opts_init(&o);
    /* The search is checked against the ideal alpha-beta model (closed
     * forms); the protocol axis has its own test in test_nccl.c. */
    o.proto = SIM_PROTO_IDEAL;
    o.coll = coll;
    o.algos = algos;
    o.nalgos = nalgos;
    o.sizes = sizes;
    o.nsizes = n;
    o.full_grid = full;
    o.prune = prune;
    o.topo_spec = topo_spec;
    st = tune_run(t, &o, &r, &err);
    CHECK_MSG(st == CCS_OK, "%s %s: %s", topo_spec, ccs_coll_str(coll),
              ccs_err_msg(&err, st));
    topo_destroy(t);
    return st == CCS_OK ? r : NULL;
}

static const char *winner(const tune_result_t *r, uint32_t i)
{
    return r->configs[r->points[i].config].algo;
}

/* The pruned search picks, at every size, what the full grid picks (same
 * time to the last bits, same algorithm) and simulates less. */
TEST(pruned_matches_full_grid)
{
    static const char *const ring_db[] = { "ring", "dbtree" };
    static const struct {
        const char *topo;
        ccs_coll_t coll;
        const char *const *algos;
        uint32_t nalgos;
    } cases[] = {
        { "switch:8", CCS_COLL_ALLREDUCE, NULL, 0 },
        { "switch:8", CCS_COLL_ALLREDUCE, ring_db, 2 },
        { "cluster:2x8,nics=server", CCS_COLL_ALLREDUCE, NULL, 0 },
        { "torus:4x4", CCS_COLL_ALLGATHER, NULL, 0 },
        { "switch:8", CCS_COLL_BROADCAST, NULL, 0 },
    };
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        tune_result_t *p = run(cases[c].topo, cases[c].coll, cases[c].algos,
                               cases[c].nalgos, false, 0.25);
        tune_result_t *g = run(cases[c].topo, cases[c].coll, cases[c].algos,
                               cases[c].nalgos, true, 0.25);
        if (p == NULL || g == NULL) {
            tune_result_destroy(p);
            tune_result_destroy(g);
            continue;
        }
        CHECK_EQ_INT(p->npoints, g->npoints);
        for (uint32_t i = 0; i < p->npoints && i < g->npoints; i++) {
            CHECK_NEAR(p->points[i].time_s, g->points[i].time_s, 1e-12);
            CHECK_MSG(strcmp(winner(p, i), winner(g, i)) == 0,
                      "%s %s size %.0f: pruned chose %s, grid %s",
                      cases[c].topo, ccs_coll_str(cases[c].coll),
                      p->points[i].size_bytes, winner(p, i), winner(g, i));
        }
        /* Both count the same grid; the grid run simulates all of it. */
        CHECK_EQ_INT(p->stats.grid_evals, g->stats.grid_evals);
        CHECK_EQ_INT(g->stats.evals, g->stats.grid_evals);
        CHECK_EQ_INT(g->stats.built, g->stats.grid_configs);
        CHECK_MSG(p->stats.evals + p->stats.ref_evals < g->stats.evals,
                  "%s: pruned %llu (+%llu) simulations, grid %llu",
                  cases[c].topo, (unsigned long long)p->stats.evals,
                  (unsigned long long)p->stats.ref_evals,
                  (unsigned long long)g->stats.evals);
        CHECK(p->stats.built <= g->stats.built);
        CHECK_EQ_INT(p->stats.evals, p->stats.evals_phase[0] +
                     p->stats.evals_phase[1] + p->stats.evals_phase[2]);
        tune_result_destroy(p);
        tune_result_destroy(g);
    }
}

/* switch:8: a latency-optimal algorithm (few steps) at 1 KiB, and at
 * 1 GiB one that reaches the bandwidth bound 2(n-1)/n s / bw. */
TEST(switch8_latency_then_bandwidth)
{
    tune_result_t *r = run("switch:8", CCS_COLL_ALLREDUCE, NULL, 0, false,
                           0.25);
    topo_t *t = NULL;
    ccs_err_t err = { { 0 } };
    const char *small;
    double s, bound;

    if (r == NULL)
        return;
    CHECK_STATUS(topo_load("switch:8", NULL, &t, &err), CCS_OK);
    small = winner(r, 0);
    CHECK_MSG(strcmp(small, "allpairs") == 0 || strcmp(small, "rhd") == 0,
              "1 KiB winner %s", small);
    if (t != NULL) {
        s = r->points[r->npoints - 1].size_bytes;
        bound = 2.0 * 7.0 / 8.0 * s / t->links[0].bw_Bps;
        CHECK(r->points[r->npoints - 1].time_s >= bound);
        CHECK_MSG(r->points[r->npoints - 1].time_s <= 1.01 * bound,
                  "1 GiB: %.9g s, bound %.9g s", r->points[r->npoints - 1]
                  .time_s, bound);
    }
    /* Never slower than ring, which is among the candidates. */
    for (uint32_t i = 0; i < r->npoints; i++)
        CHECK(r->points[i].time_s <= r->points[i].ring_time_s);
    topo_destroy(t);
    tune_result_destroy(r);
}

/* With ring and dbtree only, the crossover: dbtree with fewer, larger
 * chunks (a chunk count below its default, found by the chunk axis) for
 * small buffers, ring for large ones. */
TEST(switch8_crossover_ring_dbtree)
{
    static const char *const algos[] = { "ring", "dbtree" };
    tune_result_t *r = run("switch:8", CCS_COLL_ALLREDUCE, algos, 2, false,
                           0.25);
    const tune_config_t *lo, *hi;

    if (r == NULL)
        return;
    lo = &r->configs[r->points[0].config];
    hi = &r->configs[r->points[r->npoints - 1].config];
    CHECK_MSG(strcmp(lo->algo, "dbtree") == 0, "1 KiB: %s", lo->algo);
    CHECK(lo->chunks_param > 0 && lo->chunks_param < 16);
    CHECK_MSG(strcmp(hi->algo, "ring") == 0, "1 GiB: %s", hi->algo);
    CHECK(r->points[0].time_s < r->points[0].ring_time_s);
    CHECK(r->nranges >= 2);
    tune_result_destroy(r);
}

/* Ranges are contiguous, cover every size, alternate winners, and the
 * lookup rule finds each size's range. */
TEST(ranges_contiguous)
{
    tune_result_t *r = run("cluster:2x8", CCS_COLL_ALLREDUCE, NULL, 0, false,
                           0.25);

    if (r == NULL)
        return;
    CHECK(r->nranges >= 2);
    CHECK_EQ_INT(r->ranges[0].first, 0);
    CHECK_EQ_INT(r->ranges[r->nranges - 1].last, r->npoints - 1);
    for (uint32_t k = 0; k < r->nranges; k++) {
        CHECK(r->ranges[k].first <= r->ranges[k].last);
        CHECK(r->ranges[k].config < r->nconfigs);
        if (k + 1 < r->nranges) {
            CHECK_EQ_INT(r->ranges[k + 1].first, r->ranges[k].last + 1);
            CHECK(r->ranges[k + 1].config != r->ranges[k].config);
        }
    }
    for (uint32_t i = 0; i < r->npoints; i++) {
        const tune_range_t *g = &r->ranges[r->points[i].range];
        CHECK(g->first <= i && i <= g->last);
        CHECK_EQ_INT(g->config, r->points[i].config);
        CHECK_EQ_INT(tune_lookup(r, r->points[i].size_bytes),
                     r->points[i].range);
        if (i + 1 < r->npoints)
            CHECK(r->points[i].size_bytes < r->points[i + 1].size_bytes);
    }
    /* Between samples: the lower sample's range; below all: the first. */
    CHECK_EQ_INT(tune_lookup(r, 1.0), 0);
    CHECK_EQ_INT(tune_lookup(r, 1e15), r->nranges - 1);
    tune_result_destroy(r);
}

/* --emit: every plan file verifies and loads in the runtime, tuning.json
 * names them, and no temporary file is left behind. */
TEST(emit_verifies_and_loads)
{
    tune_result_t *r = run("cluster:2x8", CCS_COLL_ALLREDUCE, NULL, 0, false,
                           0.25);
    char dir[] = "/tmp/ccs_tune_XXXXXX", path[512], *json = NULL;
    ccs_err_t err = { { 0 } };
    uint32_t nfiles = 0;
    size_t len = 0;
    DIR *d;
    struct dirent *e;

    if (r == NULL)
        return;
    CHECK(mkdtemp(dir) != NULL);
    CHECK_STATUS(tune_emit(r, dir, &err), CCS_OK);
    for (uint32_t g = 0; g < r->nconfigs; g++) {
        ccs_sched_t *s = NULL;
        ccs_plan_t *plan = NULL;
        ccs_status_t st;

        snprintf(path, sizeof(path), "%s/%s", dir, r->configs[g].file);
        st = ccs_format_read_file(path, &s, &err);
        CHECK_MSG(st == CCS_OK, "%s: %s", path, ccs_err_msg(&err, st));
        if (s != NULL) {
            CHECK_STATUS(verify_sched(s, NULL, &err), CCS_OK);
            CHECK_MSG(strcmp(s->algo, r->configs[g].algo) == 0, "%s: %s",
                      path, s->algo);
            CHECK_EQ_INT(s->nchunks, r->configs[g].nchunks);
            CHECK_STR_CONTAINS(s->params, "tuned=");
            CHECK_STR_CONTAINS(s->params, "topo=cluster:2x8");
        }
        CHECK_STATUS(ccs_plan_load_file(path, &plan), CCS_OK);
        CHECK_EQ_INT(ccs_plan_nranks(plan), 16);
        ccs_plan_destroy(plan);
        ccs_sched_destroy(s);
    }
    snprintf(path, sizeof(path), "%s/tuning.json", dir);
    {
        FILE *f = fopen(path, "r");
        CHECK(f != NULL);
        if (f != NULL) {
            json = calloc(1, 1 << 16);
            len = json ? fread(json, 1, (1 << 16) - 1, f) : 0;
            fclose(f);
        }
    }
    CHECK(len > 0);
    for (uint32_t g = 0; json != NULL && g < r->nconfigs; g++)
        CHECK_STR_CONTAINS(json, r->configs[g].file);
    CHECK_STR_CONTAINS(json, "\"format\": \"ccsynth-tuning\"");
    d = opendir(dir);
    CHECK(d != NULL);
    while (d != NULL && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        CHECK_MSG(strstr(e->d_name, "tmp") == NULL, "left over: %s",
                  e->d_name);
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        unlink(path);
        nfiles++;
    }
    if (d != NULL)
        closedir(d);
    CHECK_EQ_INT(nfiles, r->nconfigs + 1);
    rmdir(dir);
    free(json);
    tune_result_destroy(r);
}

static char *json_of(const tune_result_t *r)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ccs_err_t err = { { 0 } };

    if (f == NULL)
        return NULL;
    CHECK_STATUS(tune_write_json(r, f, &err), CCS_OK);
    fclose(f);
    return buf;
}

/* Same inputs, same bytes (pruned and full grid), and the same plans. */
TEST(deterministic)
{
    for (int full = 0; full < 2; full++) {
        tune_result_t *a = run("torus:4x4", CCS_COLL_ALLREDUCE, NULL, 0,
                               full, 0.25);
        tune_result_t *b = run("torus:4x4", CCS_COLL_ALLREDUCE, NULL, 0,
                               full, 0.25);
        char *ja = a ? json_of(a) : NULL, *jb = b ? json_of(b) : NULL;

        CHECK(ja != NULL && jb != NULL);
        if (ja != NULL && jb != NULL)
            CHECK(strcmp(ja, jb) == 0);
        for (uint32_t g = 0; a && b && g < a->nconfigs && g < b->nconfigs;
             g++) {
            uint8_t *ba = NULL, *bb = NULL;
            size_t la = 0, lb = 0;
            ccs_err_t err = { { 0 } };
            CHECK_STATUS(ccs_format_encode(a->plans[g], &ba, &la, &err),
                         CCS_OK);
            CHECK_STATUS(ccs_format_encode(b->plans[g], &bb, &lb, &err),
                         CCS_OK);
            CHECK(la == lb && ba && bb && memcmp(ba, bb, la) == 0);
            free(ba);
            free(bb);
        }
        free(ja);
        free(jb);
        tune_result_destroy(a);
        tune_result_destroy(b);
    }
}

/* The threshold is an option with an effect: 0 keeps only the best at
 * each coarse size, a large one keeps everything (still below the grid
 * on the chunk axis). */
TEST(prune_threshold_option)
{
    tune_result_t *tight = run("cluster:2x8", CCS_COLL_ALLREDUCE, NULL, 0,
                               false, 0.0);
    tune_result_t *loose = run("cluster:2x8", CCS_COLL_ALLREDUCE, NULL, 0,
                               false, 100.0);

    if (tight != NULL && loose != NULL) {
        CHECK(tight->stats.evals < loose->stats.evals);
        CHECK(loose->stats.evals < loose->stats.grid_evals);
        CHECK_EQ_INT(loose->stats.nalgos_pruned, 0);
        CHECK(tight->stats.nalgos_pruned > 0);
        /* The loose search never finds worse than the tight one. */
        for (uint32_t i = 0; i < tight->npoints; i++)
            CHECK(loose->points[i].time_s <= tight->points[i].time_s);
    }
    tune_result_destroy(tight);
    tune_result_destroy(loose);
}

/* Bad options and impossible requests give statuses and messages. */
TEST(errors)
{
    static const char *const nope[] = { "nope" };
    static const char *const twice[] = { "ring", "ring" };
    static const char *const ring[] = { "ring" };
    static const double sz[] = { 1024 }, bad_sz[] = { 1024, -1 };
    static const struct {
        const char *const *algos;
        uint32_t nalgos;
        ccs_coll_t coll;
        double prune;
        const double *sizes;
        uint32_t nsizes;
        ccs_status_t want;
        const char *msg;
    } cases[] = {
        { nope, 1, CCS_COLL_ALLREDUCE, 0.25, sz, 1, CCS_ERR_INVALID,
          "unknown algorithm 'nope'" },
        { twice, 2, CCS_COLL_ALLREDUCE, 0.25, sz, 1, CCS_ERR_INVALID,
          "listed twice" },
        { ring, 1, CCS_COLL_BROADCAST, 0.25, sz, 1, CCS_ERR_UNSUPPORTED,
          "none of the 1 algorithm(s) can run broadcast" },
        { NULL, 0, CCS_COLL_ALLREDUCE, -1, sz, 1, CCS_ERR_INVALID,
          "threshold" },
        { NULL, 0, CCS_COLL_ALLREDUCE, 0.25, sz, 0, CCS_ERR_INVALID,
          "no sizes" },
        { NULL, 0, CCS_COLL_ALLREDUCE, 0.25, bad_sz, 2, CCS_ERR_INVALID,
          "not a positive number" },
    };
    topo_t *t = NULL;
    ccs_err_t err = { { 0 } };

    CHECK_STATUS(topo_load("switch:4", NULL, &t, &err), CCS_OK);
    for (size_t c = 0; t != NULL && c < sizeof(cases) / sizeof(cases[0]);
         c++) {
        tune_opts_t o;
        tune_result_t *r = NULL;
        ccs_status_t st;

        tune_opts_init(&o);
        o.algos = cases[c].algos;
        o.nalgos = cases[c].nalgos;
        o.coll = cases[c].coll;
        o.prune = cases[c].prune;
        o.sizes = cases[c].sizes;
        o.nsizes = cases[c].nsizes;
        st = tune_run(t, &o, &r, &err);
        CHECK_STATUS(st, cases[c].want);
        CHECK(r == NULL);
        if (st != CCS_OK)
            CHECK_STR_CONTAINS(ccs_err_msg(&err, st), cases[c].msg);
        tune_result_destroy(r);
    }
    topo_destroy(t);
}

/* The channel axis: under Simple on dgx-h100 the ring's transfers run at
 * 0.8 x 450 GB/s, six 60 GB/s channels (sim_proto.c), so the tuner gives
 * the plan 6 channels and writes channels=6 into it; told --channels 2
 * it runs the plan on two, about 3x slower at 1 GiB. */
TEST(channels_travel_in_plan)
{
    static const char *const algos[] = { "ring" };
    static const uint32_t fixed[] = { 0, 2 };
    double size = 1 << 30, tm[2] = { 0, 0 };
    topo_t *t = NULL;
    ccs_err_t err = { { 0 } };

    CHECK_STATUS(topo_load("dgx-h100", NULL, &t, &err), CCS_OK);
    for (int k = 0; t != NULL && k < 2; k++) {
        tune_opts_t o;
        tune_result_t *r = NULL;
        char want[32];

        tune_opts_init(&o);
        o.proto = SIM_PROTO_SIMPLE;
        o.algos = algos;
        o.nalgos = 1;
        o.sizes = &size;
        o.nsizes = 1;
        o.channels = fixed[k];
        CHECK_STATUS(tune_run(t, &o, &r, &err), CCS_OK);
        if (r == NULL)
            continue;
        CHECK_EQ_INT(r->configs[0].channels, k == 0 ? 6 : 2);
        snprintf(want, sizeof(want), "channels=%u\n", k == 0 ? 6 : 2);
        CHECK_STR_CONTAINS(r->plans[0]->params, want);
        tm[k] = r->points[0].time_s;
        tune_result_destroy(r);
    }
    CHECK_MSG(tm[1] > 2.9 * tm[0] && tm[1] < 3.1 * tm[0],
              "2 channels %.1f us, 6 channels %.1f us", tm[1] * 1e6,
              tm[0] * 1e6);
    topo_destroy(t);
}

int main(void)
{
    RUN(pruned_matches_full_grid);
    RUN(switch8_latency_then_bandwidth);
    RUN(switch8_crossover_ring_dbtree);
    RUN(ranges_contiguous);
    RUN(emit_verifies_and_loads);
    RUN(deterministic);
    RUN(prune_threshold_option);
    RUN(errors);
    RUN(channels_travel_in_plan);
    return TEST_SUMMARY();
}
