/*
 * test_runtime_exec.c - the executor on the threads transport: every
 * fixture plan (rt_fixtures.h) and every registered algorithm's plan (milp
 * included) x every collective it declares x datatype x op x counts 1, 7,
 * 1000 (and 1000003), out of place and in place, checked element by
 * element against the independent reference of tools/ccs_check.h;
 * straggler relabeling and phase-0 progress without the straggler, on the
 * fixture and on the stragglar algorithm's own plans.
 *
 *   test_runtime_exec                 run the tests
 *   test_runtime_exec --write-plans D write the fixture plans into directory D
 *                                     (used by tests/e2e/mpi_correct.sh)
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "rt_fixtures.h"
#include "../../runtime/ccs_int.h"
#include "../../runtime/format.h"
#include "algo.h"
#include "../../tools/ccs_check.h"
#include "rt_world.h"

/* The plans' steps on a threads world, no window, nothing kept. */
static int run_world(const char *name, const ccs_plan_t *plan,
                     const rt_combo_t *combos, int ncombos, int straggler,
                     int delay_rank, unsigned delay_us, rt_job_t *jobs)
{
    return rt_run_world(name, plan, NULL, NULL, false, combos, ncombos,
                        straggler, delay_rank, delay_us, jobs);
}

static rt_job_t g_jobs[RT_MAX_R];   /* large: kept off the stack */

static void check_sched(const char *name, const ccs_sched_t *s,
                        const rt_combo_t *combos, int ncombos)
{
    ccs_plan_t *plan = NULL;
    ccs_err_t e;
    ccs_status_t st = ccs_plan_from_sched(s, &plan, &e);

    CHECK_STATUS(st, CCS_OK);
    if (st != CCS_OK) {
        FAIL_AT("%s: %s", name, ccs_err_msg(&e, st));
        return;
    }
    run_world(name, plan, combos, ncombos, -1, -1, 0, g_jobs);
    /* A plan with a straggler role must serve every straggler. */
    for (uint32_t k = 0; s->straggler >= 0 && k < s->nranks; k++) {
        char nm[128];
        if ((int32_t)k == s->straggler)
            continue;
        snprintf(nm, sizeof(nm), "%s straggler=%u", name, k);
        run_world(nm, plan, combos, ncombos < 6 ? ncombos : 6, (int)k, -1,
                  0, g_jobs);
    }
    ccs_plan_destroy(plan);
}

/* Every fixture at 3 and 4 ranks: every dtype x op x {1, 7, 1000}. */
TEST(fixtures_full_matrix)
{
    static const size_t counts[] = { 1, 7, 1000 };
    rt_combo_t combos[RT_MAX_COMBOS];
    int nc = rt_full_matrix(combos, RT_MAX_COMBOS, counts, 3);

    for (uint32_t R = 3; R <= 4; R++) {
        fx_entry_t fx[16];
        int n = fx_all(R, fx, 16);
        CHECK(n > 0);
        for (int i = 0; i < n; i++)
            check_sched(fx[i].name, fx[i].s, combos, nc);
        fx_free(fx, n);
    }
}

/* Every fixture at 2..8 ranks, a few types, both placements. */
TEST(fixtures_rank_sweep)
{
    static const rt_combo_t combos[] = {
        { CCS_FLOAT32, CCS_SUM, 1, false },
        { CCS_FLOAT32, CCS_SUM, 7, true },
        { CCS_INT32, CCS_MAX, 1000, false },
        { CCS_BFLOAT16, CCS_AVG, 13, true },
        { CCS_UINT8, CCS_PROD, 64, false },
        { CCS_FLOAT16, CCS_MIN, 33, true },
    };
    for (uint32_t R = 2; R <= RT_MAX_R; R++) {
        fx_entry_t fx[16];
        int n = fx_all(R, fx, 16);
        CHECK(n > 0);
        for (int i = 0; i < n; i++)
            check_sched(fx[i].name, fx[i].s, combos, 6);
        fx_free(fx, n);
    }
}

/* The odd large count: 1000003 elements, uneven chunks everywhere. */
TEST(fixtures_large_odd_count)
{
    static const rt_combo_t combos[] = {
        { CCS_FLOAT32, CCS_SUM, 1000003, false },
        { CCS_BFLOAT16, CCS_AVG, 1000003, true },
    };
    fx_entry_t fx[16];
    int n = fx_all(4, fx, 16);

    CHECK(n > 0);
    for (int i = 0; i < n; i++)
        check_sched(fx[i].name, fx[i].s, combos, i % 3 == 0 ? 2 : 1);
    fx_free(fx, n);
}

/* A plan may declare up to 2^24 scratch chunks per rank and use few.  The
 * executor sizes scratch from the chunks the rank's ops touch: a declared
 * 2^24 chunks of 100 KB (1.6 TB) used to be asked of the allocator on
 * every run and failed with out of memory; the fuzzer found it. */
TEST(scratch_is_sized_by_use_not_declaration)
{
    static const rt_combo_t combos[] = {
        { CCS_FLOAT32, CCS_SUM, 100000, false },
        { CCS_INT32, CCS_MAX, 1000, true },
    };

    for (uint32_t R = 2; R <= 4; R++) {
        ccs_sched_t *s = fx_ring_scratch(R);
        ccs_plan_t *p = NULL;
        uint8_t *buf = NULL;
        size_t len = 0;
        char msg[256], name[64];
        uint32_t used[RT_MAX_R] = { 0 };

        CHECK(s != NULL);
        if (s == NULL)
            continue;
        /* What each rank's ops touch, from the ops themselves. */
        for (uint32_t r = 0; r < R; r++)
            for (uint32_t i = 0; i < s->rank_nops[r]; i++) {
                const ccs_op_t *op = &s->rank_ops[r][i];
                bool src = op->kind >= CCS_OP_RECV_REDUCE;
                if (op->buf == CCS_BUF_SCRATCH &&
                    op->chunk + op->nchunks > used[r])
                    used[r] = op->chunk + op->nchunks;
                if (src && op->src_buf == CCS_BUF_SCRATCH &&
                    op->src_chunk + op->nchunks > used[r])
                    used[r] = op->src_chunk + op->nchunks;
            }
        s->nscratch = CCS_MAX_CHUNKS;
        CHECK_STATUS(ccs_format_encode(s, &buf, &len, NULL), CCS_OK);
        CHECK_STATUS(ccs_plan_load_mem_msg(buf, len, &p, msg, sizeof(msg)),
                     CCS_OK);
        if (p != NULL) {
            for (uint32_t r = 0; r < R; r++) {
                CHECK(used[r] > 0);
                CHECK_EQ_INT(p->scratch_chunks[r], used[r]);
            }
            snprintf(name, sizeof(name), "ringscratch-r%u declared 2^24", R);
            run_world(name, p, combos, 2, -1, -1, 0, g_jobs);
        }
        ccs_plan_destroy(p);
        free(buf);
        ccs_sched_destroy(s);
    }
}

/* In-place staging happens exactly for the plans that need it. */
TEST(inplace_staging_decision)
{
    static const rt_combo_t c[] = { { CCS_INT32, CCS_SUM, 7, true } };
    ccs_sched_t *safe = fx_ring_allreduce(4, 1);
    ccs_sched_t *unsafe = fx_direct_hazard(4, 3);
    ccs_plan_t *p1 = NULL, *p2 = NULL;

    CHECK(safe != NULL && unsafe != NULL);
    CHECK_STATUS(ccs_plan_from_sched(safe, &p1, NULL), CCS_OK);
    CHECK_STATUS(ccs_plan_from_sched(unsafe, &p2, NULL), CCS_OK);
    if (p1 && p2) {
        CHECK_EQ_INT(p1->inplace_hazard[0], 0);
        CHECK_EQ_INT(p2->inplace_hazard[0], 1);
        CHECK_EQ_INT(run_world("ring", p1, c, 1, -1, -1, 0, g_jobs), 0);
        CHECK_EQ_INT(g_jobs[0].stats[0].staged_input, 0);
        CHECK_EQ_INT(run_world("direct", p2, c, 1, -1, -1, 0, g_jobs), 0);
        CHECK_EQ_INT(g_jobs[0].stats[0].staged_input, 1);
    }
    ccs_plan_destroy(p1);
    ccs_plan_destroy(p2);
    ccs_sched_destroy(safe);
    ccs_sched_destroy(unsafe);
}

/* One plan serves every straggler; the others finish phase 0 before the
 * straggler arrives. */
TEST(straggler_relabel_and_phase0)
{
    static const rt_combo_t c[] = { { CCS_FLOAT32, CCS_SUM, 1001, false },
                                 { CCS_INT64, CCS_MAX, 7, true } };
    const int R = 4;
    ccs_sched_t *s = fx_straggler((uint32_t)R, (uint32_t)(R - 1));
    ccs_plan_t *plan = NULL;

    CHECK(s != NULL);
    CHECK_STATUS(ccs_plan_from_sched(s, &plan, NULL), CCS_OK);
    for (int strag = 0; plan != NULL && strag < R; strag++) {
        char name[32];
        snprintf(name, sizeof(name), "straggler=%d", strag);
        CHECK_EQ_INT(run_world(name, plan, c, 2, strag, strag, 30000,
                               g_jobs), 0);
        for (int r = 0; r < R; r++) {
            const ccs_run_stats_t *st = &g_jobs[r].stats[0];
            uint32_t want = r == strag ? (uint32_t)(R - 1)
                          : r == R - 1 ? (uint32_t)strag : (uint32_t)r;
            CHECK_EQ_INT(st->logical_rank, want);
        }
        rt_check_phase0_before(name, g_jobs, (uint32_t)R, strag);
    }
    ccs_plan_destroy(plan);
    ccs_sched_destroy(s);
}

/* The same with the plans of the stragglar algorithm itself (power of two
 * and not): the late rank, chosen per call, is delayed 30 ms; the result
 * must be right and every other rank must have left phase 0 before the
 * late one entered ccs_run. */
TEST(stragglar_plans_phase0_before_straggler)
{
    static const rt_combo_t c[] = { { CCS_FLOAT32, CCS_SUM, 1000, false },
                                 { CCS_BFLOAT16, CCS_AVG, 7, true } };
    static const uint32_t Rs[] = { 4, 5, 8 };

    for (size_t ri = 0; ri < sizeof(Rs) / sizeof(Rs[0]); ri++) {
        uint32_t R = Rs[ri];
        int strags[3] = { (int)R - 1, 0, (int)R / 2 };
        ccs_plan_t *plan = rt_stragglar_plan(R);

        for (int k = 0; plan != NULL && k < 3; k++) {
            int strag = strags[k];
            char name[64];
            snprintf(name, sizeof(name), "stragglar r%u straggler=%d", R,
                     strag);
            CHECK_EQ_INT(ccs_plan_straggler(plan), (int)R - 1);
            CHECK_EQ_INT(run_world(name, plan, c, 2, strag, strag, 30000,
                                   g_jobs), 0);
            rt_check_phase0_before(name, g_jobs, R, strag);
        }
        ccs_plan_destroy(plan);
    }
}

/* What registry_algorithms runs each plan with. */
typedef struct reg_arg {
    const rt_combo_t *combos, *combos_big_r, *large;
    int nc, nc_big_r, nlarge;
    bool seen[16][CCS_COLL_COUNT];
} reg_arg_t;

static void reg_check(const char *name, int algo, uint32_t R,
                      const ccs_sched_t *s, void *arg)
{
    reg_arg_t *g = arg;

    if (R <= 4)
        check_sched(name, s, g->combos, g->nc);
    else
        check_sched(name, s, g->combos_big_r, g->nc_big_r);
    if (R == 4)
        check_sched(name, s, g->large, g->nlarge);
    if (algo < 16)
        g->seen[algo][s->coll] = true;
}

/* Plans from every registered algorithm (milp included) x every collective
 * it declares, at ranks 2..5 and 8 on switch:R: every dtype x op x counts
 * 1, 7, 1000 in both placements (count 1000 only at 5 and 8 ranks), plus
 * the odd large count 1000003 at 4 ranks.  An algorithm that declares a
 * collective but cannot synthesize it here is a failure, not a skip. */
TEST(registry_algorithms)
{
    static const size_t counts[] = { 1, 7, 1000 };
    static const uint32_t Rs[] = { 2, 3, 4, 5, 8 };
    static const rt_combo_t large[] = {
        { CCS_FLOAT32, CCS_SUM, 1000003, false },
        { CCS_BFLOAT16, CCS_AVG, 1000003, true },
    };
    static const size_t counts_big_r[] = { 1000 };
    static rt_combo_t combos[RT_MAX_COMBOS], combos_big_r[RT_MAX_COMBOS];
    reg_arg_t g;
    int ran = 0, want = 0;

    memset(&g, 0, sizeof(g));
    g.combos = combos;
    g.combos_big_r = combos_big_r;
    g.large = large;
    g.nc = rt_full_matrix(combos, RT_MAX_COMBOS, counts, 3);
    g.nc_big_r = rt_full_matrix(combos_big_r, RT_MAX_COMBOS, counts_big_r, 1);
    g.nlarge = 2;
    CHECK(algo_count() <= 16);
    for (size_t ri = 0; ri < sizeof(Rs) / sizeof(Rs[0]); ri++)
        ran += rt_registry_scheds(Rs[ri], reg_check, &g, &want);
    CHECK_EQ_INT(ran, want);
    /* Every algorithm of the registry ran at least one collective. */
    for (int a = 0; a < algo_count() && a < 16; a++) {
        bool any = false;
        for (int coll = 0; coll < CCS_COLL_COUNT; coll++)
            any |= g.seen[a][coll];
        CHECK_MSG(any, "algorithm %s: no plan replayed", algo_at(a)->name);
    }
    printf("registry_algorithms: %d algorithm plans replayed (%d "
           "algorithms)\n", ran, algo_count());
}

static int write_plans(const char *dir)
{
    int bad = 0;
    for (uint32_t R = 2; R <= RT_MAX_R; R++) {
        fx_entry_t fx[16];
        int n = fx_all(R, fx, 16);
        for (int i = 0; i < n; i++) {
            char path[1024];
            ccs_err_t e;
            snprintf(path, sizeof(path), "%.900s/%.40s.ccs", dir, fx[i].name);
            if (ccs_format_write_file(fx[i].s, path, &e) != CCS_OK) {
                fprintf(stderr, "%s: %s\n", path,
                        ccs_err_msg(&e, CCS_ERR_IO));
                bad = 1;
            }
        }
        fx_free(fx, n < 0 ? 0 : n);
    }
    return bad;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--write-plans") == 0)
        return write_plans(argv[2]);
    setenv("CCS_TIMEOUT_S", "60", 0); /* a bug fails instead of hanging */
    RUN(fixtures_full_matrix);
    RUN(fixtures_rank_sweep);
    RUN(fixtures_large_odd_count);
    RUN(scratch_is_sized_by_use_not_declaration);
    RUN(inplace_staging_decision);
    RUN(straggler_relabel_and_phase0);
    RUN(stragglar_plans_phase0_before_straggler);
    RUN(registry_algorithms);
    return TEST_SUMMARY();
}
