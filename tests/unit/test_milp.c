/* test_milp.c - the AdapCC-style MILP: optimum against enumeration, plan
 * structure, verified output for every collective on several topologies,
 * warm start, fallback, LP dump, determinism. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../runtime/format.h"
#include "../../synth/algo.h"
#include "../../synth/milp_heur.h"
#include "../../synth/milp_model.h"
#include "../../synth/verify.h"
#include "harness.h"

/* A small instance: C chunks of 1 MiB, candidate pieces (in chunks). */
static void spec_init(milp_spec_t *sp, ccs_coll_t coll, int32_t root,
                      int32_t m, uint32_t c, uint32_t q0, uint32_t q1)
{
    memset(sp, 0, sizeof(*sp));
    sp->coll = coll;
    sp->root = root;
    sp->m = m;
    sp->nchunks = c;
    sp->unit_bytes = 1 << 20;
    sp->cand[sp->ncand++] = q0;
    if (q1 > q0)
        sp->cand[sp->ncand++] = q1;
}

/* Minimum of milp_plan_cost over every plan: all in-trees per sub (each
 * non-root picks any allowed parent, cycles skipped), every split, every
 * piece size.  Only for n <= 4, M <= 2. */
static double enumerate_best(const milp_net_t *net, const milp_spec_t *sp,
                             const double *conc, milp_plan_t *pl)
{
    int32_t n = net->n, M = sp->m;
    double best = INFINITY;
    long trees = 1, total;

    for (int32_t u = 0; u < n; u++)
        trees *= n;           /* parent code per node (n = "is root") */
    total = 1;
    for (int32_t m = 0; m < M; m++)
        total *= trees * sp->ncand;
    for (long code = 0; code < total; code++) {
        long c = code;
        bool ok = true;

        for (int32_t m = 0; m < M && ok; m++) {
            int32_t roots = 0;

            pl->piece[m] = sp->cand[c % sp->ncand];
            c /= sp->ncand;
            for (int32_t u = 0; u < n; u++) {
                int32_t v = (int32_t)(c % n);

                c /= n;
                if (v == u) {
                    pl->parent[m * n + u] = -1;
                    pl->root[m] = u;
                    roots++;
                } else {
                    pl->parent[m * n + u] = v;
                }
            }
            ok = roots == 1;
        }
        if (!ok)
            continue;
        for (uint32_t c0 = 1; c0 < sp->nchunks || (M == 1 && c0 == 1);
             c0++) {
            pl->count[0] = M == 1 ? sp->nchunks : c0;
            if (M == 2)
                pl->count[1] = sp->nchunks - c0;
            if (milp_plan_check(net, sp, pl, NULL) == CCS_OK) {
                double v = milp_plan_cost(net, sp, conc, pl, NULL);

                if (v < best)
                    best = v;
            }
            if (M == 1)
                break;
        }
    }
    return best;
}

TEST(optimum_matches_enumeration)
{
    static const struct {
        const char *topo;
        ccs_coll_t coll;
        int32_t root, m;
        uint32_t c, q0, q1;
    } cases[] = {
        { "switch:3", CCS_COLL_ALLREDUCE, -1, 2, 4, 1, 2 },
        { "switch:3", CCS_COLL_REDUCE, 2, 1, 4, 1, 4 },
        { "ring:4", CCS_COLL_BROADCAST, 0, 1, 4, 1, 2 },
        { "ring:3", CCS_COLL_ALLREDUCE, -1, 2, 3, 1, 3 },
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        topo_t *t = NULL;
        milp_net_t *net = NULL;
        milp_plan_t *heur = NULL, *sol = NULL, *scratch = NULL;
        double *conc = NULL, best;
        milp_spec_t sp;
        milp_solve_opts_t o;
        milp_stats_t stats;
        ccs_err_t err = { { 0 } };

        CHECK_STATUS(topo_load(cases[i].topo, NULL, &t, &err), CCS_OK);
        CHECK_STATUS(milp_net_build(t, &net, &err), CCS_OK);
        spec_init(&sp, cases[i].coll, cases[i].root, cases[i].m, cases[i].c,
                  cases[i].q0, cases[i].q1);
        CHECK_STATUS(milp_heur_plan(net, &sp, &heur, &err), CCS_OK);
        CHECK_STATUS(milp_concurrency(net, &sp, heur, &conc, &err), CCS_OK);
        milp_solve_opts_init(&o);
        o.mip_gap = 0;
        o.time_limit_s = 30;
        CHECK_STATUS(milp_solve(net, &sp, conc, heur, &o, &sol, &stats,
                                &err), CCS_OK);
        CHECK_EQ_INT(stats.outcome, MILP_OUT_OPTIMAL);
        CHECK(sol != NULL);
        CHECK_STATUS(milp_plan_create(sp.coll, net->n, sp.m, sp.nchunks,
                                      &scratch, &err), CCS_OK);
        best = enumerate_best(net, &sp, conc, scratch);
        CHECK_MSG(fabs(stats.obj_us - best) <= 1e-6 * best + 1e-6,
                  "%s %s: MILP %.6f us, enumeration %.6f us",
                  cases[i].topo, ccs_coll_str(cases[i].coll), stats.obj_us,
                  best);
        if (sol != NULL) {
            /* The decoded plan is a valid in-tree forest (flow
             * conservation: one parent per non-root, all reach the root)
             * and its cost in the model is the solver's objective. */
            CHECK_STATUS(milp_plan_check(net, &sp, sol, &err), CCS_OK);
            CHECK_NEAR(milp_plan_cost(net, &sp, conc, sol, NULL),
                       stats.obj_us, 1e-6);
            CHECK(stats.bound_us <= stats.obj_us + 1e-6);
        }
        milp_plan_destroy(scratch);
        milp_plan_destroy(sol);
        milp_plan_destroy(heur);
        free(conc);
        milp_net_destroy(net);
        topo_destroy(t);
    }
}

/* Hand-computed optimum: 2 GPUs on a switch, M = 1, reduce to rank 1, one
 * piece.  The only tree is 0 -> 1: T = load + hop - piece = bytes/bw plus
 * the route's alpha. */
TEST(two_gpu_by_hand)
{
    topo_t *t = NULL;
    milp_net_t *net = NULL;
    milp_plan_t *heur = NULL, *sol = NULL;
    double *conc = NULL, want;
    milp_spec_t sp;
    milp_solve_opts_t o;
    milp_stats_t stats;
    ccs_err_t err = { { 0 } };

    CHECK_STATUS(topo_load("switch:2", NULL, &t, &err), CCS_OK);
    CHECK_STATUS(milp_net_build(t, &net, &err), CCS_OK);
    spec_init(&sp, CCS_COLL_REDUCE, 1, 1, 8, 8, 0);
    CHECK_STATUS(milp_heur_plan(net, &sp, &heur, &err), CCS_OK);
    CHECK_STATUS(milp_concurrency(net, &sp, heur, &conc, &err), CCS_OK);
    milp_solve_opts_init(&o);
    o.mip_gap = 0;
    CHECK_STATUS(milp_solve(net, &sp, conc, heur, &o, &sol, &stats, &err),
                 CCS_OK);
    /* Bottleneck pipe: the slowest link of the route 0 -> switch -> 1. */
    want = 1e6 * (net->route_alpha_s[0 * 2 + 1] +
                  8.0 * (1 << 20) / fmin(t->links[0].bw_Bps,
                                         t->links[1].bw_Bps));
    CHECK_NEAR(stats.obj_us, want, 1e-6);
    CHECK(sol != NULL && sol->parent[0] == 1 && sol->root[0] == 1);
    milp_plan_destroy(sol);
    milp_plan_destroy(heur);
    free(conc);
    milp_net_destroy(net);
    topo_destroy(t);
}

static ccs_status_t synth(const char *topo, ccs_coll_t coll, int32_t root,
                          double tl, ccs_sched_t **out, ccs_err_t *err)
{
    topo_t *t = NULL;
    algo_params_t p;
    ccs_status_t st;

    st = topo_load(topo, NULL, &t, err);
    if (st != CCS_OK)
        return st;
    algo_params_init(&p);
    p.coll = coll;
    p.root = root;
    p.milp_m = 2;
    p.size_bytes = 8 << 20;
    p.chunk_sizes = "1M,4M";
    p.time_limit_s = tl;
    st = algo_synthesize("milp", t, &p, out, err);
    topo_destroy(t);
    return st;
}

TEST(verifies_everywhere)
{
    static const char *topos[] = { "switch:4", "ring:4", "dgx-h100",
                                   "cluster:2x4" };
    static const ccs_coll_t colls[] = { CCS_COLL_ALLREDUCE, CCS_COLL_REDUCE,
                                        CCS_COLL_BROADCAST,
                                        CCS_COLL_ALLTOALL };

    for (size_t i = 0; i < sizeof(topos) / sizeof(topos[0]); i++) {
        for (size_t j = 0; j < sizeof(colls) / sizeof(colls[0]); j++) {
            ccs_sched_t *s = NULL;
            ccs_err_t err = { { 0 } };
            ccs_status_t st = synth(topos[i], colls[j], 1, 0.5, &s, &err);

            CHECK_MSG(st == CCS_OK, "%s %s: %s", topos[i],
                      ccs_coll_str(colls[j]), ccs_err_msg(&err, st));
            if (st == CCS_OK) {
                st = verify_sched(s, NULL, &err);
                CHECK_MSG(st == CCS_OK, "%s %s: %s", topos[i],
                          ccs_coll_str(colls[j]), ccs_err_msg(&err, st));
            }
            ccs_sched_destroy(s);
        }
    }
}

/* Warm start offered and taken; with no warm start, no GLPK heuristic and
 * a one-node limit, the solver ends without an incumbent (the fallback
 * outcome); a ~0 time limit through the algorithm still gives a verified
 * schedule (the heuristic's). */
TEST(warm_start_and_fallback)
{
    topo_t *t = NULL;
    milp_net_t *net = NULL;
    milp_plan_t *heur = NULL, *sol = NULL;
    double *conc = NULL;
    milp_spec_t sp;
    milp_solve_opts_t o;
    milp_stats_t stats;
    ccs_sched_t *s = NULL;
    ccs_err_t err = { { 0 } };

    CHECK_STATUS(topo_load("cluster:3x4", NULL, &t, &err), CCS_OK);
    CHECK_STATUS(milp_net_build(t, &net, &err), CCS_OK);
    spec_init(&sp, CCS_COLL_ALLREDUCE, -1, 3, 48, 1, 4);
    CHECK_STATUS(milp_heur_plan(net, &sp, &heur, &err), CCS_OK);
    CHECK_STATUS(milp_concurrency(net, &sp, heur, &conc, &err), CCS_OK);
    heur->cost_us = milp_plan_cost(net, &sp, conc, heur, NULL);

    milp_solve_opts_init(&o);
    o.node_limit = 20;
    CHECK_STATUS(milp_solve(net, &sp, conc, heur, &o, &sol, &stats, &err),
                 CCS_OK);
    CHECK(stats.warm_offered);
    CHECK(stats.warm_accepted);
    CHECK(sol != NULL);
    CHECK(stats.obj_us <= heur->cost_us * (1 + 1e-9));
    CHECK(stats.bound_us <= stats.obj_us + 1e-6);
    milp_plan_destroy(sol);
    sol = NULL;

    o.use_warm = false;
    o.glpk_heuristics = false;
    o.node_limit = 1;
    CHECK_STATUS(milp_solve(net, &sp, conc, heur, &o, &sol, &stats, &err),
                 CCS_OK);
    CHECK_EQ_INT(stats.outcome, MILP_OUT_NOSOL);
    CHECK(sol == NULL);
    CHECK(!stats.warm_offered);
    milp_plan_destroy(sol);

    /* Through the algorithm: 0.1 ms leaves the LP unsolved. */
    CHECK_STATUS(synth("cluster:3x4", CCS_COLL_ALLREDUCE, 0, 1e-4, &s, &err),
                 CCS_OK);
    CHECK(s != NULL);
    if (s != NULL)
        CHECK_STATUS(verify_sched(s, NULL, &err), CCS_OK);
    ccs_sched_destroy(s);
    milp_plan_destroy(heur);
    free(conc);
    milp_net_destroy(net);
    topo_destroy(t);
}

TEST(write_lp_reads_back)
{
    topo_t *t = NULL;
    milp_net_t *net = NULL;
    milp_plan_t *heur = NULL, *sol = NULL;
    double *conc = NULL;
    milp_spec_t sp;
    milp_solve_opts_t o;
    milp_stats_t stats;
    ccs_err_t err = { { 0 } };
    char path[] = "/tmp/ccs_milp_XXXXXX";
    int fd = mkstemp(path);
    int32_t rows = 0, cols = 0;

    CHECK(fd >= 0);
    if (fd >= 0)
        close(fd);
    CHECK_STATUS(topo_load("cluster:2x4", NULL, &t, &err), CCS_OK);
    CHECK_STATUS(milp_net_build(t, &net, &err), CCS_OK);
    spec_init(&sp, CCS_COLL_ALLREDUCE, -1, 2, 16, 1, 4);
    CHECK_STATUS(milp_heur_plan(net, &sp, &heur, &err), CCS_OK);
    CHECK_STATUS(milp_concurrency(net, &sp, heur, &conc, &err), CCS_OK);
    milp_solve_opts_init(&o);
    o.write_lp = path;
    o.node_limit = 5;
    CHECK_STATUS(milp_solve(net, &sp, conc, heur, &o, &sol, &stats, &err),
                 CCS_OK);
    CHECK_STATUS(milp_read_lp(path, &rows, &cols, &err), CCS_OK);
    CHECK_EQ_INT(rows, stats.rows);
    CHECK_EQ_INT(cols, stats.cols);
    CHECK(stats.ints > 0);
    /* An unwritable path is an I/O error, not an abort. */
    o.write_lp = "/nonexistent-dir/x.lp";
    CHECK_STATUS(milp_solve(net, &sp, conc, heur, &o, &sol, &stats, &err),
                 CCS_ERR_IO);
    remove(path);
    milp_plan_destroy(sol);
    milp_plan_destroy(heur);
    free(conc);
    milp_net_destroy(net);
    topo_destroy(t);
}

TEST(deterministic)
{
    uint8_t *b1 = NULL, *b2 = NULL;
    size_t l1 = 0, l2 = 0;
    ccs_sched_t *s1 = NULL, *s2 = NULL;
    ccs_err_t err = { { 0 } };

    CHECK_STATUS(synth("cluster:2x4", CCS_COLL_ALLREDUCE, 0, 60, &s1, &err),
                 CCS_OK);
    CHECK_STATUS(synth("cluster:2x4", CCS_COLL_ALLREDUCE, 0, 60, &s2, &err),
                 CCS_OK);
    if (s1 != NULL && s2 != NULL) {
        CHECK_STATUS(ccs_format_encode(s1, &b1, &l1, &err), CCS_OK);
        CHECK_STATUS(ccs_format_encode(s2, &b2, &l2, &err), CCS_OK);
        CHECK(l1 == l2 && b1 != NULL && b2 != NULL &&
              memcmp(b1, b2, l1) == 0);
    }
    free(b1);
    free(b2);
    ccs_sched_destroy(s1);
    ccs_sched_destroy(s2);
}

TEST(bad_inputs)
{
    topo_t *t = NULL;
    algo_params_t p;
    ccs_sched_t *s = NULL;
    ccs_err_t err = { { 0 } };

    CHECK_STATUS(topo_load("switch:4", NULL, &t, &err), CCS_OK);
    algo_params_init(&p);
    p.chunk_sizes = "1M,banana";
    CHECK_STATUS(algo_synthesize("milp", t, &p, &s, &err), CCS_ERR_INVALID);
    CHECK_STR_CONTAINS(err.msg, "chunk size");
    p.chunk_sizes = NULL;
    p.coll = CCS_COLL_ALLGATHER;
    CHECK_STATUS(algo_synthesize("milp", t, &p, &s, &err),
                 CCS_ERR_UNSUPPORTED);
    CHECK(s == NULL);
    topo_destroy(t);
}

int main(void)
{
    RUN(optimum_matches_enumeration);
    RUN(two_gpu_by_hand);
    RUN(verifies_everywhere);
    RUN(warm_start_and_fallback);
    RUN(write_lp_reads_back);
    RUN(deterministic);
    RUN(bad_inputs);
    return TEST_SUMMARY();
}
