/* test_milp.c - the AdapCC-style MILP: optimum against enumeration, plan
 * structure, verified output for every collective on several topologies,
 * the solver improving on its warm start (and the simulator agreeing),
 * warm start, time-limit and node-limit fallbacks, GLPK's error hook, LP
 * dump, determinism, the default M on one switch and across servers
 * against ring, and the heap and MultiTree warm starts as feasible points
 * of the model. */
#include <glpk.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../runtime/format.h"
#include "algo.h"
#include "milp_heur.h"
#include "milp_model.h"
#include "mtree.h"
#include "sim.h"
#include "sim_cost.h"
#include "verify.h"
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

/* One instance under test: the topology, its network, a spec and, after
 * fixture_heur, the heuristic plan and its concurrency.  Everything is
 * owned by the fixture (fixture_free); a failed step is recorded by its
 * CHECK and leaves the fields it did not reach NULL. */
typedef struct fixture {
    topo_t *t;
    milp_net_t *net;
    milp_spec_t sp;
    milp_plan_t *heur;
    double *conc;
} fixture_t;

static bool fixture_load(fixture_t *f, const char *topo)
{
    ccs_err_t err = { { 0 } };

    memset(f, 0, sizeof(*f));
    CHECK_MSG(topo_load(topo, NULL, &f->t, &err) == CCS_OK, "%s: %s", topo,
              err.msg);
    if (f->t != NULL)
        CHECK_MSG(milp_net_build(f->t, &f->net, &err) == CCS_OK, "%s: %s",
                  topo, err.msg);
    return f->net != NULL;
}

/* The heuristic plan for f->sp and its concurrency. */
static bool fixture_heur(fixture_t *f)
{
    ccs_err_t err = { { 0 } };

    CHECK_STATUS(milp_heur_plan(f->net, &f->sp, &f->heur, &err), CCS_OK);
    if (f->heur != NULL)
        CHECK_STATUS(milp_concurrency(f->net, &f->sp, f->heur, &f->conc,
                                      &err), CCS_OK);
    return f->conc != NULL;
}

static void fixture_free(fixture_t *f)
{
    free(f->conc);
    milp_plan_destroy(f->heur);
    milp_net_destroy(f->net);
    topo_destroy(f->t);
    memset(f, 0, sizeof(*f));
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
        /* the fill bound's cases (star or deep, edge sharing) on two
         * subs of four GPUs */
        { "switch:4", CCS_COLL_ALLREDUCE, -1, 2, 4, 1, 2 },
        { "ring:4", CCS_COLL_ALLREDUCE, -1, 2, 4, 1, 4 },
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        fixture_t f;
        milp_net_t *net;
        milp_plan_t *sol = NULL, *scratch = NULL;
        double *conc, best;
        milp_spec_t sp;
        milp_solve_opts_t o;
        milp_stats_t stats;
        ccs_err_t err = { { 0 } };

        if (!fixture_load(&f, cases[i].topo))
            goto next;
        spec_init(&f.sp, cases[i].coll, cases[i].root, cases[i].m,
                  cases[i].c, cases[i].q0, cases[i].q1);
        if (!fixture_heur(&f))
            goto next;
        net = f.net;
        conc = f.conc;
        sp = f.sp;
        milp_solve_opts_init(&o);
        o.mip_gap = 0;
        o.time_limit_s = 30;
        CHECK_STATUS(milp_solve(net, &sp, conc, f.heur, &o, &sol, &stats,
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
        /* The fill cuts keep the optimum, and the fill bound is below
         * it. */
        CHECK_MSG(!(stats.fill_us > best + 1e-6 * best + 1e-6),
                  "%s: fill bound %.6f us above the optimum %.6f us",
                  cases[i].topo, stats.fill_us, best);
        milp_plan_destroy(scratch);
        milp_plan_destroy(sol);
next:
        fixture_free(&f);
    }
}

/* Hand-computed optimum: 2 GPUs on a switch, M = 1, reduce to rank 1, one
 * piece.  The only tree is 0 -> 1: T = load + hop - piece = bytes/bw plus
 * the route's alpha. */
TEST(two_gpu_by_hand)
{
    fixture_t f;
    milp_plan_t *sol = NULL;
    double want;
    milp_solve_opts_t o;
    milp_stats_t stats;
    ccs_err_t err = { { 0 } };

    if (fixture_load(&f, "switch:2")) {
        spec_init(&f.sp, CCS_COLL_REDUCE, 1, 1, 8, 8, 0);
        if (fixture_heur(&f)) {
            milp_solve_opts_init(&o);
            o.mip_gap = 0;
            CHECK_STATUS(milp_solve(f.net, &f.sp, f.conc, f.heur, &o, &sol,
                                    &stats, &err), CCS_OK);
            /* Bottleneck pipe: the slowest link of the route 0 -> switch
             * -> 1. */
            want = 1e6 * (f.net->route_alpha_s[0 * 2 + 1] +
                          8.0 * (1 << 20) / fmin(f.t->links[0].bw_Bps,
                                                 f.t->links[1].bw_Bps));
            CHECK_NEAR(stats.obj_us, want, 1e-6);
            CHECK(sol != NULL && sol->parent[0] == 1 && sol->root[0] == 1);
        }
    }
    milp_plan_destroy(sol);
    fixture_free(&f);
}

static void check_aggregation(const ccs_sched_t *s, const char *what);

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
    p.milp.m = coll == CCS_COLL_ALLTOALL ? 0 : 2;
    p.size_bytes = 8 << 20;
    p.milp.chunk_sizes = "1M,4M";
    p.milp.time_limit_s = tl;
    p.milp.cost = sim_cost_time;
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
                char what[64];

                st = verify_sched(s, NULL, &err);
                CHECK_MSG(st == CCS_OK, "%s %s: %s", topos[i],
                          ccs_coll_str(colls[j]), ccs_err_msg(&err, st));
                snprintf(what, sizeof(what), "%s %s", topos[i],
                         ccs_coll_str(colls[j]));
                if (colls[j] != CCS_COLL_ALLTOALL)
                    check_aggregation(s, what);
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
    fixture_t f;
    milp_plan_t *sol = NULL;
    milp_solve_opts_t o;
    milp_stats_t stats;
    ccs_sched_t *s = NULL;
    ccs_err_t err = { { 0 } };

    if (!fixture_load(&f, "cluster:3x4"))
        goto done;
    spec_init(&f.sp, CCS_COLL_ALLREDUCE, -1, 3, 48, 1, 4);
    if (!fixture_heur(&f))
        goto done;
    f.heur->cost_us = milp_plan_cost(f.net, &f.sp, f.conc, f.heur, NULL);

    milp_solve_opts_init(&o);
    o.node_limit = 20;
    CHECK_STATUS(milp_solve(f.net, &f.sp, f.conc, f.heur, &o, &sol, &stats,
                            &err), CCS_OK);
    CHECK(stats.warm_offered);
    CHECK(stats.warm_accepted);
    CHECK(sol != NULL);
    CHECK(stats.obj_us <= f.heur->cost_us * (1 + 1e-9));
    CHECK(stats.bound_us <= stats.obj_us + 1e-6);
    milp_plan_destroy(sol);
    sol = NULL;

    o.use_warm = false;
    o.glpk_heuristics = false;
    o.node_limit = 1;
    CHECK_STATUS(milp_solve(f.net, &f.sp, f.conc, f.heur, &o, &sol, &stats,
                            &err), CCS_OK);
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
done:
    fixture_free(&f);
}

/* The model comes back as CPLEX LP text (the algorithm writes no file);
 * glp_read_lp reads it with the rows and columns the solve reports. */
TEST(write_lp_reads_back)
{
    fixture_t f;
    milp_plan_t *sol = NULL;
    milp_solve_opts_t o;
    milp_stats_t stats;
    ccs_err_t err = { { 0 } };
    char path[] = "/tmp/ccs_milp_XXXXXX";
    char *lp = NULL;            /* owned here */
    int fd = mkstemp(path);
    int32_t rows = 0, cols = 0;

    CHECK(fd >= 0);
    if (fd >= 0)
        close(fd);
    if (fixture_load(&f, "cluster:2x4")) {
        spec_init(&f.sp, CCS_COLL_ALLREDUCE, -1, 2, 16, 1, 4);
        if (fixture_heur(&f)) {
            FILE *out;

            milp_solve_opts_init(&o);
            o.lp_out = &lp;
            o.node_limit = 5;
            CHECK_STATUS(milp_solve(f.net, &f.sp, f.conc, f.heur, &o, &sol,
                                    &stats, &err), CCS_OK);
            CHECK(lp != NULL);
            out = fopen(path, "w");
            CHECK(out != NULL);
            if (lp != NULL && out != NULL) {
                fputs(lp, out);
                fclose(out);
                CHECK_STATUS(milp_read_lp(path, &rows, &cols, &err), CCS_OK);
                CHECK_EQ_INT(rows, stats.rows);
                CHECK_EQ_INT(cols, stats.cols);
                CHECK_STR_CONTAINS(lp, "\nGenerals\n");
            }
            CHECK(stats.ints > 0);
        }
    }
    remove(path);
    free(lp);
    milp_plan_destroy(sol);
    fixture_free(&f);
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

/* The piece-size check uses the caller's cost: counted calls through the
 * simulator give the simulator's plan; a constant cost ties every
 * candidate, so the model's piece sizes stay, as with no cost at all; a
 * failing cost fails the build with its status. */
typedef struct cost_probe {
    int calls;
    double constant;            /* > 0: return this instead of simulating */
    bool fail;
} cost_probe_t;

static ccs_status_t probe_cost(void *ctx, const topo_t *t,
                               const ccs_sched_t *s, double bytes,
                               double *time_s, ccs_err_t *err)
{
    cost_probe_t *pr = ctx;

    pr->calls++;
    if (pr->fail)
        return ccs_err_set(err, CCS_ERR_INTERNAL, "probe: no cost today");
    if (pr->constant > 0) {
        *time_s = pr->constant;
        return CCS_OK;
    }
    return sim_cost_time(NULL, t, s, bytes, time_s, err);
}

static bool milp_bytes(const topo_t *t, algo_cost_fn cost, void *ctx,
                       uint8_t **buf, size_t *len, char *rep_text,
                       size_t rep_len, ccs_status_t *st, ccs_err_t *err)
{
    algo_params_t p;
    algo_report_t rep;          /* owned here */
    ccs_sched_t *s = NULL;      /* owned here */
    size_t used = 0;

    algo_params_init(&p);
    algo_report_init(&rep);
    p.milp.m = 2;
    p.size_bytes = 8 << 20;
    p.milp.chunk_sizes = "1M,4M";
    p.milp.time_limit_s = 30;
    p.milp.cost = cost;
    p.milp.cost_ctx = ctx;
    *st = algo_synthesize_report("milp", t, &p, &s, &rep, err);
    if (*st == CCS_OK)
        *st = ccs_format_encode(s, buf, len, err);
    rep_text[0] = '\0';
    for (int32_t i = 0; i < rep.nlines && used + 1 < rep_len; i++) {
        int k = snprintf(rep_text + used, rep_len - used, "%s\n",
                         rep.lines[i]);
        used += k > 0 ? (size_t)k : 0;
    }
    algo_report_free(&rep);
    ccs_sched_destroy(s);
    return *st == CCS_OK;
}

TEST(cost_is_the_callers)
{
    topo_t *t = NULL;
    ccs_err_t err = { { 0 } };
    uint8_t *sim = NULL, *probed = NULL, *flat = NULL, *none = NULL;
    size_t lsim = 0, lprobed = 0, lflat = 0, lnone = 0;
    char text[4096];
    cost_probe_t pr = { 0, 0, false };
    ccs_status_t st;

    CHECK_STATUS(topo_load("switch:4", NULL, &t, &err), CCS_OK);
    if (t == NULL)
        return;
    CHECK(milp_bytes(t, sim_cost_time, NULL, &sim, &lsim, text,
                     sizeof(text), &st, &err));
    CHECK_STR_CONTAINS(text, "after the piece-size check");
    CHECK(milp_bytes(t, probe_cost, &pr, &probed, &lprobed, text,
                     sizeof(text), &st, &err));
    /* The model's pieces, then each of the two candidates, per solve. */
    CHECK(pr.calls >= 3 && pr.calls % 3 == 0);
    CHECK(lsim == lprobed && sim != NULL && probed != NULL &&
          memcmp(sim, probed, lsim) == 0);
    pr.constant = 1.0;
    CHECK(milp_bytes(t, probe_cost, &pr, &flat, &lflat, text, sizeof(text),
                     &st, &err));
    CHECK(milp_bytes(t, NULL, NULL, &none, &lnone, text, sizeof(text), &st,
                     &err));
    CHECK_STR_CONTAINS(text, "no cost function");
    CHECK(lflat == lnone && flat != NULL && none != NULL &&
          memcmp(flat, none, lflat) == 0);
    pr.fail = true;
    CHECK(!milp_bytes(t, probe_cost, &pr, &none, &lnone, text, sizeof(text),
                      &st, &err));
    CHECK_EQ_INT(st, CCS_ERR_INTERNAL);
    CHECK_STR_CONTAINS(err.msg, "no cost today");
    free(sim);
    free(probed);
    free(flat);
    free(none);
    topo_destroy(t);
}

/* Simulated time of schedule s at `bytes` (rank mode) once it verifies;
 * NAN on failure, with the reason in *err. */
static double sim_verified(const ccs_sched_t *s, const topo_t *t,
                           double bytes, ccs_err_t *err)
{
    sim_opts_t so;
    sim_result_t res;
    double v = NAN;

    sim_opts_init(&so);
    if (verify_sched(s, NULL, err) == CCS_OK &&
        sim_run(s, t, bytes, &so, &res, err) == CCS_OK) {
        v = res.time_s;
        sim_result_free(&res);
    }
    return v;
}

/* Simulated time of a plan's schedule at `bytes` (rank mode); the
 * schedule must verify.  NAN on failure. */
static double sim_plan(const topo_t *t, const milp_plan_t *pl, int32_t root,
                       double bytes)
{
    ccs_sched_t *s = NULL;
    ccs_err_t err = { { 0 } };
    double v = NAN;

    if (milp_emit(t, pl, root, &s, &err) == CCS_OK)
        v = sim_verified(s, t, bytes, &err);
    if (isnan(v))
        fprintf(stderr, "sim_plan: %s\n", err.msg);
    ccs_sched_destroy(s);
    return v;
}

/* The solver must do better than the plan it is warm-started from, and
 * the better objective must be a faster schedule in the simulator (at
 * 256 MiB, where the model's load term dominates).
 *  - adapcc-hetero, M = 6: the heuristic roots two subs in the 50 Gb/s
 *    servers and splits equally; the LNS's split sub-MIP moves the data to
 *    the four subs rooted behind 100 Gb/s NICs (branch and bound alone
 *    does not find it within its node limit: lns off is not in the
 *    table).
 *  - ring:4, M = 2: branch and bound alone proves the optimum, 10%
 *    below the heuristic; the simulator measures the model's time.
 *  - milp_hetero (three 2-GPU servers, one with a 50 Gb/s NIC), M = 3:
 *    branch and bound alone re-roots and re-splits. */
TEST(solver_beats_warm_start)
{
    static const struct {
        const char *topo;
        int32_t m;
        uint32_t c, q0, q1, q2, nodes;
        bool lns;
        double gain;       /* objective at most (1 - gain) x heuristic's */
    } cases[] = {
        { "topologies/adapcc-hetero.yaml", 6, 256, 1, 4, 0, 5, true, 0.30 },
        { "ring:4", 2, 32, 1, 4, 0, 400, false, 0.08 },
        { "tests/data/topo/milp_hetero.yaml", 3, 64, 1, 4, 16, 400, false,
          0.05 },
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        fixture_t f;
        milp_plan_t *sol = NULL;
        double t_heur, t_sol;
        milp_solve_opts_t o;
        milp_stats_t stats;
        ccs_err_t err = { { 0 } };

        if (!fixture_load(&f, cases[i].topo))
            goto next;
        spec_init(&f.sp, CCS_COLL_ALLREDUCE, -1, cases[i].m, cases[i].c,
                  cases[i].q0, cases[i].q1);
        f.sp.unit_bytes = 256.0 * (1 << 20) / cases[i].c;    /* 256 MiB */
        if (cases[i].q2 > 0)
            f.sp.cand[f.sp.ncand++] = cases[i].q2;
        if (!fixture_heur(&f))
            goto next;
        f.heur->cost_us = milp_plan_cost(f.net, &f.sp, f.conc, f.heur, NULL);
        milp_solve_opts_init(&o);
        o.lns = cases[i].lns;
        o.node_limit = (int32_t)cases[i].nodes;
        o.time_limit_s = 60;
        CHECK_STATUS(milp_solve(f.net, &f.sp, f.conc, f.heur, &o, &sol,
                                &stats, &err), CCS_OK);
        CHECK(stats.warm_accepted);
        CHECK_NEAR(stats.warm_us, f.heur->cost_us, 1e-9);
        CHECK(sol != NULL);
        if (sol == NULL)
            goto next;
        CHECK_MSG(stats.obj_us <= (1 - cases[i].gain) * f.heur->cost_us,
                  "%s lns=%d: MILP %.1f us, heuristic %.1f us",
                  cases[i].topo, cases[i].lns, stats.obj_us, f.heur->cost_us);
        if (!cases[i].lns)
            CHECK_EQ_INT(stats.lns_tried, 0);
        else
            CHECK(stats.lns_improved > 0 && stats.lns_us < stats.warm_us);
        CHECK_STATUS(milp_plan_check(f.net, &f.sp, sol, &err), CCS_OK);
        CHECK_NEAR(milp_plan_cost(f.net, &f.sp, f.conc, sol, NULL),
                   stats.obj_us, 1e-6);
        t_heur = sim_plan(f.t, f.heur, -1, f.sp.nchunks * f.sp.unit_bytes);
        t_sol = sim_plan(f.t, sol, -1, f.sp.nchunks * f.sp.unit_bytes);
        CHECK_MSG(t_sol < t_heur,
                  "%s lns=%d: simulated %.1f us (MILP) vs %.1f us "
                  "(heuristic)", cases[i].topo, cases[i].lns, 1e6 * t_sol,
                  1e6 * t_heur);
next:
        milp_plan_destroy(sol);
        fixture_free(&f);
    }
}

/* --algo milp's parameters in these tests: allreduce, the simulator as the
 * cost, the given time limit. */
static void milp_params(algo_params_t *p, double limit_s)
{
    algo_params_init(p);
    p->coll = CCS_COLL_ALLREDUCE;
    p->milp.time_limit_s = limit_s;
    p->milp.cost = sim_cost_time;
}

/* --algo milp on t with p, as a user sees it: the schedule must come back
 * and verify, and its report is left in text[0..cap). */
static void milp_report_text(const topo_t *t, const algo_params_t *p,
                             char *text, size_t cap)
{
    algo_report_t ar;           /* owned here */
    ccs_sched_t *s = NULL;
    ccs_err_t err = { { 0 } };
    FILE *rep = tmpfile();      /* closed here */

    text[0] = '\0';
    CHECK(rep != NULL);
    if (rep == NULL)
        return;
    algo_report_init(&ar);
    CHECK_STATUS(algo_synthesize_report("milp", t, p, &s, &ar, &err),
                 CCS_OK);
    algo_report_print(&ar, rep);
    algo_report_free(&ar);
    CHECK(s != NULL);
    if (s != NULL)
        CHECK_STATUS(verify_sched(s, NULL, &err), CCS_OK);
    rewind(rep);
    text[fread(text, 1, cap - 1, rep)] = '\0';
    ccs_sched_destroy(s);
    fclose(rep);
}

/* Time limit: on the 24-GPU cluster 1 ms does not cover the root LP, so
 * the solve ends without an incumbent and says so; the algorithm then
 * writes the heuristic's (verified) schedule and reports it. */
TEST(time_limit_fallback)
{
    fixture_t f;
    milp_plan_t *sol = NULL;
    milp_solve_opts_t o;
    milp_stats_t stats;
    algo_params_t p;
    ccs_err_t err = { { 0 } };
    char text[4096] = "";

    if (!fixture_load(&f, "topologies/adapcc-hetero.yaml"))
        goto done;
    spec_init(&f.sp, CCS_COLL_ALLREDUCE, -1, 4, 256, 1, 4);
    if (!fixture_heur(&f))
        goto done;
    milp_solve_opts_init(&o);
    o.time_limit_s = 1e-3;
    CHECK_STATUS(milp_solve(f.net, &f.sp, f.conc, f.heur, &o, &sol, &stats,
                            &err), CCS_OK);
    CHECK(stats.time_limit_hit);
    CHECK_EQ_INT(stats.outcome, MILP_OUT_NOSOL);
    CHECK(sol == NULL);
    CHECK(isnan(stats.obj_us));

    milp_params(&p, 1e-3);
    milp_report_text(f.t, &p, text, sizeof(text));
    CHECK_STR_CONTAINS(text, "no-solution (time limit)");
    CHECK_STR_CONTAINS(text, "no incumbent: using the heuristic");
done:
    milp_plan_destroy(sol);
    fixture_free(&f);
}

/* Every phase answers to the one deadline, and the search stops as soon
 * as the bounds prove the incumbent:
 *  - a deadline already past (milp_solve_opts_t.deadline_s) ends the
 *    solve after building the model, before any LP, whatever the limit;
 *  - torus:4x4 with a tiny limit: the first solve runs out of time and
 *    the second warm start (MultiTree's trees) is not tried at all;
 *  - switch:8 and dgx-h100: the fill bound equals the heuristic's
 *    objective, so there is no LNS and no branch and bound (0 nodes). */
TEST(deadline_and_early_stop)
{
    static const struct {
        const char *topo;
        double limit_s;
        const char *says;       /* in the report */
        bool proven;            /* stats: proven_early */
    } rows[] = {
        { "torus:4x4", 1e-3, "second warm start was not tried", false },
        { "switch:8", 30, "proven within the gap by the bounds", true },
        { "dgx-h100", 30, "proven within the gap by the bounds", true },
    };
    fixture_t f;
    milp_plan_t *sol = NULL;
    milp_solve_opts_t o;
    milp_stats_t stats;
    ccs_err_t err = { { 0 } };

    if (fixture_load(&f, "topologies/adapcc-hetero.yaml")) {
        spec_init(&f.sp, CCS_COLL_ALLREDUCE, -1, 4, 256, 1, 4);
        if (fixture_heur(&f)) {
            milp_solve_opts_init(&o);
            o.time_limit_s = 600;
            o.deadline_s = milp_now_s() - 1;
            CHECK_STATUS(milp_solve(f.net, &f.sp, f.conc, f.heur, &o, &sol,
                                    &stats, &err), CCS_OK);
            CHECK(stats.time_limit_hit);
            CHECK_EQ_INT(stats.outcome, MILP_OUT_NOSOL);
            CHECK(isnan(stats.lp_us));
            CHECK(sol == NULL);
        }
        milp_plan_destroy(sol);
        fixture_free(&f);
    }
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        algo_params_t p;
        topo_t *t = NULL;
        char text[8192] = "";

        CHECK_STATUS(topo_load(rows[i].topo, NULL, &t, &err), CCS_OK);
        if (t == NULL)
            continue;
        milp_params(&p, rows[i].limit_s);
        milp_report_text(t, &p, text, sizeof(text));
        CHECK_MSG(strstr(text, rows[i].says) != NULL, "%s: report lacks "
                  "'%s':\n%s", rows[i].topo, rows[i].says, text);
        if (rows[i].proven)
            CHECK_STR_CONTAINS(text, ", 0 nodes,");
        topo_destroy(t);
    }
}

/* A fatal GLPK error (here a column index out of range) would abort the
 * process; under milp_glpk_call it is a status with GLPK's message, and
 * GLPK works again afterwards. */
static ccs_status_t bad_glpk_call(void *arg, ccs_err_t *err)
{
    glp_prob **lp = arg;

    (void)err;
    *lp = glp_create_prob();
    glp_add_cols(*lp, 1);
    glp_set_col_bnds(*lp, 7, GLP_FX, 0, 0);    /* no column 7: fatal */
    return CCS_OK;
}

static ccs_status_t good_glpk_call(void *arg, ccs_err_t *err)
{
    glp_prob *lp = glp_create_prob();
    int *cols = arg;

    (void)err;
    *cols = glp_add_cols(lp, 3) + 2;
    glp_delete_prob(lp);
    return CCS_OK;
}

TEST(glpk_error_is_trapped)
{
    glp_prob *lp = NULL;
    bool freed = false;
    int cols = 0;
    ccs_err_t err = { { 0 } };

    CHECK_STATUS(milp_glpk_call(bad_glpk_call, &lp, &freed, &err),
                 CCS_ERR_SOLVER);
    CHECK(freed);                 /* lp went with GLPK's environment */
    CHECK_STR_CONTAINS(err.msg, "GLPK error");
    CHECK_STR_CONTAINS(err.msg, "glp_set_col_bnds");
    CHECK_STATUS(milp_glpk_call(good_glpk_call, &cols, &freed, &err),
                 CCS_OK);
    CHECK(!freed);
    CHECK_EQ_INT(cols, 3);
}

/* Every GPU aggregates (a_{m,g} = 1, docs/milp.md): in a reduce each
 * chunk is reduced into a receiver exactly once per tree arc, n - 1
 * times in all, and in a broadcast each chunk is received n - 1 times.
 * Without aggregation a relay would forward its children's data apart
 * and the counts would be higher. */
static void check_aggregation(const ccs_sched_t *s, const char *what)
{
    uint32_t C = s->nchunks, n = s->nranks;
    uint32_t *rr = calloc(C, sizeof(uint32_t));   /* owned here */
    uint32_t *rv = calloc(C, sizeof(uint32_t));   /* owned here */
    bool up = s->coll == CCS_COLL_ALLREDUCE || s->coll == CCS_COLL_REDUCE;
    bool down = s->coll == CCS_COLL_ALLREDUCE ||
                s->coll == CCS_COLL_BROADCAST;

    CHECK(rr != NULL && rv != NULL);
    for (uint32_t r = 0; rr != NULL && rv != NULL && r < n; r++) {
        for (uint32_t i = 0; i < s->rank_nops[r]; i++) {
            const ccs_op_t *op = &s->rank_ops[r][i];

            for (uint32_t k = 0; k < op->nchunks; k++) {
                if (op->kind == CCS_OP_RECV_REDUCE)
                    rr[op->chunk + k]++;
                else if (op->kind == CCS_OP_RECV)
                    rv[op->chunk + k]++;
            }
        }
    }
    for (uint32_t c = 0; rr != NULL && rv != NULL && c < C; c++) {
        CHECK_MSG(rr[c] == (up ? n - 1 : 0) && rv[c] == (down ? n - 1 : 0),
                  "%s: chunk %u reduced %u times, received %u times (n = %u)",
                  what, c, rr[c], rv[c], n);
        if (rr[c] != (up ? n - 1 : 0) || rv[c] != (down ? n - 1 : 0))
            break;
    }
    free(rr);
    free(rv);
}

/* milp_plan_check rejects every kind of broken plan: what the model's flow
 * rows (one parent per non-root GPU, an in-tree to the root) and split row
 * rule out. */
TEST(plan_check_rejects)
{
    static const struct {
        const char *what;
        int32_t root0, parent[4];
        uint32_t count0, piece0;
        const char *msg;
    } cases[] = {
        { "valid", 0, { -1, 0, 0, 2 }, 8, 1, NULL },
        { "cycle", 0, { -1, 2, 1, 0 }, 8, 1, "cycle" },
        { "root has a parent", 0, { 1, 0, 0, 0 }, 8, 1, "bad root" },
        { "no parent", 0, { -1, 0, -1, 0 }, 8, 1, "not an overlay arc" },
        { "self loop", 0, { -1, 1, 0, 0 }, 8, 1, "not an overlay arc" },
        { "split short", 0, { -1, 0, 0, 0 }, 7, 1, "sum to" },
        { "piece 0", 0, { -1, 0, 0, 0 }, 8, 0, "piece size 0" },
    };
    fixture_t f;
    milp_net_t *net;
    milp_spec_t sp;
    ccs_err_t err = { { 0 } };

    fixture_load(&f, "switch:4");
    net = f.net;
    spec_init(&sp, CCS_COLL_ALLREDUCE, -1, 1, 8, 1, 4);
    for (size_t i = 0; net != NULL && i < sizeof(cases) / sizeof(cases[0]);
         i++) {
        milp_plan_t *pl = NULL;
        ccs_status_t st;

        CHECK_STATUS(milp_plan_create(sp.coll, 4, 1, 8, &pl, &err), CCS_OK);
        if (pl == NULL)
            continue;
        pl->root[0] = cases[i].root0;
        memcpy(pl->parent, cases[i].parent, sizeof(cases[i].parent));
        pl->count[0] = cases[i].count0;
        pl->piece[0] = cases[i].piece0;
        st = milp_plan_check(net, &sp, pl, &err);
        if (cases[i].msg == NULL) {
            CHECK_MSG(st == CCS_OK, "%s: %s", cases[i].what, err.msg);
        } else {
            CHECK_MSG(st == CCS_ERR_INTERNAL, "%s: accepted", cases[i].what);
            CHECK_STR_CONTAINS(err.msg, cases[i].msg);
        }
        milp_plan_destroy(pl);
    }
    /* Across servers only the sub's gateways talk (cluster:2x4, sub 0:
     * gateways 0 and 4): rank 1 -> rank 5 is no overlay arc. */
    fixture_free(&f);
    if (fixture_load(&f, "cluster:2x4")) {
        net = f.net;
        milp_plan_t *pl = NULL;
        int32_t par[8] = { -1, 0, 0, 0, 0, 4, 4, 4 };

        spec_init(&sp, CCS_COLL_ALLREDUCE, -1, 1, 8, 1, 4);
        CHECK_STATUS(milp_plan_create(sp.coll, 8, 1, 8, &pl, &err), CCS_OK);
        if (pl != NULL) {
            pl->root[0] = 0;
            pl->count[0] = 8;
            pl->piece[0] = 1;
            memcpy(pl->parent, par, sizeof(par));
            CHECK_STATUS(milp_plan_check(net, &sp, pl, &err), CCS_OK);
            pl->parent[5] = 1;
            CHECK_STATUS(milp_plan_check(net, &sp, pl, &err),
                         CCS_ERR_INTERNAL);
            CHECK_STR_CONTAINS(err.msg, "not an overlay arc");
        }
        milp_plan_destroy(pl);
    }
    fixture_free(&f);
}

/* The solver's options reach GLPK as given: --mip-gap 0 is a gap target
 * of 0 (not the default), --node-limit 0 is no limit; the report says
 * what was used. */
TEST(options_reach_the_solver)
{
    static const struct {
        double gap;
        int32_t nodes;
        const char *want1, *want2;
    } cases[] = {
        { -1, 0, "gap target 1%", NULL },    /* defaults: sized limit */
        { 0, 0, "gap target 0%", NULL },
        { 0.05, 7, "gap target 5%", "node limit 7\n" },
        { 0.5, -1, "gap target 50%", "node limit 0\n" },
    };
    topo_t *t = NULL;
    ccs_err_t err = { { 0 } };

    CHECK_STATUS(topo_load("cluster:2x4", NULL, &t, &err), CCS_OK);
    for (size_t i = 0; t != NULL && i < sizeof(cases) / sizeof(cases[0]);
         i++) {
        algo_params_t p;
        char text[4096] = "";

        milp_params(&p, 30);
        p.milp.m = 2;
        p.milp.mip_gap = cases[i].gap;
        p.milp.nodes = cases[i].nodes;
        milp_report_text(t, &p, text, sizeof(text));
        CHECK_STR_CONTAINS(text, cases[i].want1);
        if (cases[i].want2 != NULL)
            CHECK_STR_CONTAINS(text, cases[i].want2);
        else
            CHECK(strstr(text, "node limit 0\n") == NULL &&
                  strstr(text, "node limit") != NULL);
    }
    topo_destroy(t);
}

TEST(bad_inputs)
{
    topo_t *t = NULL;
    algo_params_t p;
    ccs_sched_t *s = NULL;
    ccs_err_t err = { { 0 } };

    CHECK_STATUS(topo_load("switch:4", NULL, &t, &err), CCS_OK);
    algo_params_init(&p);
    p.milp.chunk_sizes = "1M,banana";
    CHECK_STATUS(algo_synthesize("milp", t, &p, &s, &err), CCS_ERR_INVALID);
    CHECK_STR_CONTAINS(err.msg, "chunk size");
    p.milp.chunk_sizes = NULL;
    p.coll = CCS_COLL_ALLGATHER;
    CHECK_STATUS(algo_synthesize("milp", t, &p, &s, &err),
                 CCS_ERR_UNSUPPORTED);
    CHECK(s == NULL);
    topo_destroy(t);
}

/* Simulated time (rank mode) of `algo`'s allreduce at `bytes` with the
 * default options; the report, when `rep` is given.  NAN on failure. */
static double sim_default(const topo_t *t, const char *algo, double bytes,
                          FILE *rep)
{
    algo_params_t p;
    algo_report_t ar;           /* owned here */
    ccs_sched_t *s = NULL;
    ccs_err_t err = { { 0 } };
    double v = NAN;

    algo_params_init(&p);
    p.coll = CCS_COLL_ALLREDUCE;
    p.size_bytes = bytes;
    p.milp.time_limit_s = 600; /* the node limit stops it: deterministic */
    p.milp.cost = sim_cost_time;
    algo_report_init(&ar);
    if (algo_synthesize_report(algo, t, &p, &s, &ar, &err) == CCS_OK)
        v = sim_verified(s, t, bytes, &err);
    if (rep != NULL)
        algo_report_print(&ar, rep);
    algo_report_free(&ar);
    if (isnan(v))
        fprintf(stderr, "sim_default %s: %s\n", algo, err.msg);
    ccs_sched_destroy(s);
    return v;
}

/* The quality target on a uniform switch, and the default M across
 * servers: with the default options AllReduce of 256 MiB simulates within
 * `ratio` of ring.  One switch: M = n, within 5%; on switch:16 the M = 16
 * model has 17074 rows, so the node limit is 3 (60 (4000 / rows)^2); from
 * switch:18 on the model is not built (above MILP_DEFAULT_MAX_ARCS) and
 * the heuristic's rotated-root plan must hold on its own.  Uniform
 * clusters: M = servers, faster than ring (M = 4 was slower than ring on
 * both). */
TEST(default_m_near_ring)
{
    static const struct {
        const char *topo, *m;   /* m: "M=<default>," in the report */
        bool built;
        double ratio;
    } cases[] = {
        { "switch:4", "M=4,", true, 1.05 },
        { "switch:8", "M=8,", true, 1.05 },
        { "switch:16", "M=16,", true, 1.05 },
        { "switch:24", "M=24,", false, 1.05 },
        { "switch:32", "M=32,", false, 1.05 },
        { "cluster:6x4", "M=6,", true, 1.0 },
        { "cluster:16x4", "M=16,", false, 1.0 },
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        topo_t *t = NULL;
        ccs_err_t err = { { 0 } };
        char text[8192] = "";
        FILE *rep = tmpfile();
        double tm, tr;

        CHECK(rep != NULL);
        CHECK_STATUS(topo_load(cases[i].topo, NULL, &t, &err), CCS_OK);
        if (t == NULL || rep == NULL) {
            if (rep != NULL)
                fclose(rep);
            topo_destroy(t);
            continue;
        }
        tm = sim_default(t, "milp", 256.0 * (1 << 20), rep);
        tr = sim_default(t, "ring", 256.0 * (1 << 20), NULL);
        CHECK_MSG(tm <= cases[i].ratio * tr, "%s: milp %.1f us, ring %.1f us",
                  cases[i].topo, 1e6 * tm, 1e6 * tr);
        rewind(rep);
        text[fread(text, 1, sizeof(text) - 1, rep)] = '\0';
        CHECK_STR_CONTAINS(text, cases[i].m);
        CHECK_MSG((strstr(text, "model not built") == NULL) == cases[i].built,
                  "%s: model %s built", cases[i].topo,
                  cases[i].built ? "not" : "");
        if (i == 1) /* the fill bound proves the stars optimal: no
                     * search at all */
            CHECK_STR_CONTAINS(text, "milp: optimal; "
                                     "objective 1175.5 us, bound 1175.5 us, "
                                     "gap 0.00%");
        if (i == 2)
            CHECK_STR_CONTAINS(text, "node limit 3\n");
        fclose(rep);
        topo_destroy(t);
    }
}

/* Solve from `heur` with the LNS off and one node: the warm start must be
 * a feasible point of the full model (milp_solve checks every row before
 * offering it) with the heuristic's objective. */
static void check_warm_feasible(const milp_net_t *net, const milp_spec_t *sp,
                                milp_plan_t *heur, const char *what,
                                milp_stats_t *out)
{
    milp_plan_t *sol = NULL;
    double *conc = NULL;
    milp_solve_opts_t o;
    milp_stats_t stats;
    ccs_err_t err = { { 0 } };

    CHECK_STATUS(milp_plan_check(net, sp, heur, &err), CCS_OK);
    CHECK_STATUS(milp_concurrency(net, sp, heur, &conc, &err), CCS_OK);
    if (conc == NULL)
        return;
    heur->cost_us = milp_plan_cost(net, sp, conc, heur, NULL);
    milp_solve_opts_init(&o);
    o.lns = false;
    o.node_limit = 1;
    o.time_limit_s = 60;
    CHECK_STATUS(milp_solve(net, sp, conc, heur, &o, &sol, &stats, &err),
                 CCS_OK);
    CHECK_MSG(stats.warm_offered && stats.warm_accepted,
              "%s: warm start not taken", what);
    CHECK_NEAR(stats.warm_us, heur->cost_us, 1e-6);
    CHECK(sol != NULL && stats.obj_us <= heur->cost_us * (1 + 1e-9));
    /* The fill bound is a valid bound: never above a feasible point. */
    CHECK_MSG(!(stats.fill_us > stats.obj_us + 1e-6),
              "%s: fill bound %.1f us above the incumbent %.1f us", what,
              stats.fill_us, stats.obj_us);
    if (out != NULL)
        *out = stats;
    milp_plan_destroy(sol);
    free(conc);
}

/* The reported bound is the larger of GLPK's and the fill bound (both
 * valid for the model), never above the incumbent, and the gap is taken
 * against it. */
static void check_bound(const milp_stats_t *st, double max_gap,
                        const char *what)
{
    double want = fmin(fmax(st->glpk_bound_us, st->fill_us), st->obj_us);

    CHECK_MSG(fabs(st->bound_us - want) <= 1e-9 * want,
              "%s: bound %.3f us, GLPK's %.3f, fill %.3f, incumbent %.3f",
              what, st->bound_us, st->glpk_bound_us, st->fill_us,
              st->obj_us);
    CHECK_NEAR(st->gap, (st->obj_us - st->bound_us) / st->obj_us, 1e-9);
    CHECK_MSG(st->gap <= max_gap, "%s: gap %.2f%% against %.1f us", what,
              100 * st->gap, st->bound_us);
}

/* torus:4x4, M = 4: the trees of two edge-disjoint Hamiltonian cycles
 * are trees of depth 8 whose every link carries at most two of them; the
 * plan picked from them beats MultiTree's in the model, is a feasible
 * warm start, and ends within 10% of the fill bound, which the
 * edge-count bound (L >= C / 2 chunks per link) lifts above the LP. */
static void check_ham_torus(const milp_net_t *net, const milp_spec_t *sp,
                            const milp_plan_t *mt_plan)
{
    int32_t *root = NULL, *parent = NULL, nt = 0, n = net->n;
    milp_plan_t *ham = NULL;
    milp_stats_t st;
    ccs_err_t err = { { 0 } };
    milp_trees_t ext;
    int32_t uses[16 * 16] = { 0 };

    CHECK_STATUS(milp_ham_trees(net, sp, &root, &parent, &nt, &err),
                 CCS_OK);
    CHECK_EQ_INT(nt, 2 * n);
    for (int32_t t = 0; t < nt && n == 16; t++) {
        int32_t depth = 0;

        CHECK_EQ_INT(parent[t * n + root[t]], -1);
        for (int32_t u = 0; u < n; u++) {
            int32_t v = u, d = 0;

            while (parent[t * n + v] >= 0 && d <= n) {
                v = parent[t * n + v];
                d++;
            }
            CHECK_EQ_INT(v, root[t]);
            depth = d > depth ? d : depth;
            if (u != root[t] && t % n == 0) {   /* one tree per cycle */
                int32_t w = parent[t * n + u];

                uses[u * n + w]++;
                uses[w * n + u]++;
            }
        }
        CHECK_EQ_INT(depth, n / 2);
    }
    for (int32_t i = 0; i < n * n && n == 16; i++)
        CHECK(uses[i] <= 1);        /* the two cycles share no edge */
    ext.ntrees = nt;
    ext.root = root;
    ext.parent = parent;
    CHECK_STATUS(milp_heur_plan_trees(net, sp, &ext, INFINITY, &ham, &err),
                 CCS_OK);
    CHECK(ham != NULL);
    if (ham != NULL && mt_plan != NULL) {
        CHECK_MSG(ham->cost_us < 0.8 * mt_plan->cost_us,
                  "Hamiltonian trees %.1f us, MultiTree's %.1f us",
                  ham->cost_us, mt_plan->cost_us);
        check_warm_feasible(net, sp, ham, "torus:4x4 Hamiltonian", &st);
        CHECK_MSG(st.fill_us > st.lp_us && st.obj_us < 1.1 * st.fill_us,
                  "torus:4x4 fill bound %.1f us, LP %.1f us, incumbent "
                  "%.1f us", st.fill_us, st.lp_us, st.obj_us);
        check_bound(&st, 0.10, "torus:4x4 M=4");
    }
    milp_plan_destroy(ham);
    free(root);
    free(parent);
}

/* The new warm-start shapes: on switch:16 at M = 4 the k-ary heaps over
 * the least-loaded GPUs (depth 2, model 1450 us; the chains cost 1994 us),
 * on torus:4x4 at M = 4 four of MultiTree's trees (12901 us; the
 * shortest-path trees cost 17243 us).  Both are feasible points of the
 * full model. */
TEST(new_warm_starts_feasible)
{
    fixture_t f;
    milp_net_t *net;
    milp_plan_t *heur = NULL, *ext_plan = NULL;
    mtree_t *mt = NULL;
    milp_spec_t sp;
    ccs_err_t err = { { 0 } };
    milp_stats_t st16;
    int32_t roots[16];

    if (!fixture_load(&f, "switch:16"))
        return;
    net = f.net;
    spec_init(&sp, CCS_COLL_ALLREDUCE, -1, 4, 1024, 1, 4);
    sp.unit_bytes = 256 << 10;
    sp.cand[sp.ncand++] = 16;
    CHECK_STATUS(milp_heur_plan(net, &sp, &heur, &err), CCS_OK);
    if (heur != NULL) {
        CHECK_MSG(heur->cost_us < 1500, "switch:16 heuristic %.1f us",
                  heur->cost_us);
        for (int32_t m = 0; m < 4; m++)
            for (int32_t u = 0; u < 16; u++) {
                int32_t v = heur->parent[m * 16 + u], d = 0;

                while (v >= 0 && d < 16) {
                    v = heur->parent[m * 16 + v];
                    d++;
                }
                CHECK_MSG(d <= 2, "sub %d rank %d at depth %d", m, u,
                          d + 1);
            }
        check_warm_feasible(net, &sp, heur, "switch:16 heaps", &st16);
        /* The fill cuts lift the root LP above the bandwidth bound
         * (1118.5 us without them), and the fill bound by case analysis
         * puts the heaps' 1450 us within 10% of the optimum. */
        CHECK_MSG(st16.lp_us > 1150, "switch:16 root LP %.1f us",
                  st16.lp_us);
        CHECK_MSG(st16.fill_us > 1300 && st16.fill_us > st16.lp_us &&
                      st16.obj_us < 1.1 * st16.fill_us,
                  "switch:16 fill bound %.1f us, incumbent %.1f us",
                  st16.fill_us, st16.obj_us);
        check_bound(&st16, 0.10, "switch:16 M=4");
    }
    milp_plan_destroy(heur);
    heur = NULL;
    fixture_free(&f);

    if (!fixture_load(&f, "torus:4x4"))
        return;
    net = f.net;
    CHECK_STATUS(mtree_build(f.t, NULL, &mt, &err), CCS_OK);
    CHECK_STATUS(milp_heur_plan(net, &sp, &heur, &err), CCS_OK);
    if (mt != NULL && heur != NULL) {
        milp_trees_t ext = { 16, roots, mt->parent };

        for (int32_t r = 0; r < 16; r++)
            roots[r] = r;
        CHECK_STATUS(milp_heur_plan_trees(net, &sp, &ext, heur->cost_us,
                                          &ext_plan, &err), CCS_OK);
        CHECK(ext_plan != NULL &&
              ext_plan->cost_us < 0.8 * heur->cost_us);
        /* Every sub is one of MultiTree's trees. */
        for (int32_t m = 0; ext_plan != NULL && m < 4; m++)
            CHECK(memcmp(ext_plan->parent + m * 16,
                         mt->parent + ext_plan->root[m] * 16,
                         16 * sizeof(int32_t)) == 0);
        if (ext_plan != NULL)
            check_warm_feasible(net, &sp, ext_plan, "torus:4x4 MultiTree",
                                NULL);
        check_ham_torus(net, &sp, ext_plan);
        /* Rooted: the root's tree in every sub. */
        milp_plan_destroy(ext_plan);
        ext_plan = NULL;
        sp.coll = CCS_COLL_REDUCE;
        sp.root = 5;
        CHECK_STATUS(milp_heur_plan_trees(net, &sp, &ext, INFINITY,
                                          &ext_plan, &err), CCS_OK);
        CHECK(ext_plan != NULL);
        for (int32_t m = 0; ext_plan != NULL && m < 4; m++)
            CHECK_EQ_INT(ext_plan->root[m], 5);
        if (ext_plan != NULL)
            check_warm_feasible(net, &sp, ext_plan, "torus:4x4 reduce",
                                NULL);
    }
    milp_plan_destroy(ext_plan);
    milp_plan_destroy(heur);
    mtree_destroy(mt);
    fixture_free(&f);
}

int main(void)
{
    RUN(optimum_matches_enumeration);
    RUN(two_gpu_by_hand);
    RUN(verifies_everywhere);
    RUN(warm_start_and_fallback);
    RUN(write_lp_reads_back);
    RUN(deterministic);
    RUN(cost_is_the_callers);
    RUN(solver_beats_warm_start);
    RUN(time_limit_fallback);
    RUN(deadline_and_early_stop);
    RUN(glpk_error_is_trapped);
    RUN(plan_check_rejects);
    RUN(options_reach_the_solver);
    RUN(bad_inputs);
    RUN(default_m_near_ring);
    RUN(new_warm_starts_feasible);
    return TEST_SUMMARY();
}
