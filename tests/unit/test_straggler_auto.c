/*
 * test_straggler_auto.c - straggler "auto" (runtime/auto.c) on the threads
 * transport: bad inputs refused with clear messages; under adversarial
 * per-rank delays (persistent, rotating every call or every few calls,
 * random) over hundreds of calls, every rank's decision log and state
 * hash are identical call by call (a disagreement would deadlock or
 * corrupt the result) and every result is right; a persistent straggler
 * past the critical delay ends up relabelled for.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "../../runtime/ccs_int.h"
#include "algo.h"

#define R 4
#define NCALLS 150
#define COUNT 4096

typedef enum { PAT_NONE, PAT_PERSIST, PAT_ROTATE1, PAT_ROTATE4,
               PAT_RANDOM } pattern_t;

typedef struct pcase {
    const char *name;
    pattern_t pat;
    unsigned delay_us;
    bool with_plain;
} pcase_t;

static const pcase_t pcases[] = {
    { "none", PAT_NONE, 0, true },
    { "persistent rank 2, 4 ms", PAT_PERSIST, 4000, true },
    { "rotating every call, 2 ms", PAT_ROTATE1, 2000, true },
    { "rotating every 4 calls, 3 ms", PAT_ROTATE4, 3000, true },
    { "random 0..3 ms on every rank", PAT_RANDOM, 3000, true },
    { "persistent, no plain plan", PAT_PERSIST, 3000, false },
    { "random, no plain plan", PAT_RANDOM, 2000, false },
};

typedef struct job {
    const pcase_t *pc;
    const ccs_plan_t *aware, *plain;
    ccs_comm_t *comm;
    int rank;
    ccs_status_t st;
    long wrong;
    int32_t strag[NCALLS];
    int plainlog[NCALLS];
    uint64_t hash[NCALLS];
    char msg[256];
} job_t;

/* Every rank computes every rank's delay from (call, rank) alone. */
static unsigned delay_of(const pcase_t *pc, int call, int rank)
{
    uint64_t x = (uint64_t)call * 0x9e3779b97f4a7c15ull + (uint64_t)rank;
    switch (pc->pat) {
    case PAT_NONE:
        return 0;
    case PAT_PERSIST:
        return rank == 2 ? pc->delay_us : 0;
    case PAT_ROTATE1:
        return rank == call % R ? pc->delay_us : 0;
    case PAT_ROTATE4:
        return rank == (call / 4) % R ? pc->delay_us : 0;
    case PAT_RANDOM:
        x ^= x >> 29;
        x *= 0xbf58476d1ce4e5b9ull;
        x ^= x >> 32;
        return (unsigned)(x % (pc->delay_us + 1));
    }
    return 0;
}

static void *rank_main(void *arg)
{
    job_t *j = arg;
    float *in = malloc(COUNT * sizeof(float));
    float *out = malloc(COUNT * sizeof(float));

    j->st = CCS_OK;
    if (in == NULL || out == NULL) {
        j->st = CCS_ERR_NOMEM;
        goto cleanup;
    }
    for (int k = 0; k < NCALLS; k++) {
        ccs_run_opts_t o = CCS_RUN_OPTS_INIT;
        ccs_run_stats_t stats;
        ccs_auto_info_t info;
        unsigned d = delay_of(j->pc, k, j->rank);

        /* Small integers: the float sum is exact in any order. */
        for (size_t i = 0; i < COUNT; i++)
            in[i] = (float)((i + (size_t)j->rank * 3 + (size_t)k) % 17);
        o.straggler = CCS_STRAGGLER_AUTO;
        o.plain = j->plain;
        o.stats = &stats;
        if (d > 0)
            usleep(d);
        j->st = ccs_run_ex(j->aware, j->comm, in, out, COUNT, CCS_FLOAT32,
                           CCS_SUM, NULL, &o);
        if (j->st != CCS_OK) {
            snprintf(j->msg, sizeof(j->msg), "call %d: %s", k,
                     ccs_comm_last_error(j->comm));
            goto cleanup;
        }
        for (size_t i = 0; i < COUNT; i++) {
            float want = 0;
            for (int q = 0; q < R; q++)
                want += (float)((i + (size_t)q * 3 + (size_t)k) % 17);
            if (out[i] != want)
                j->wrong++;
        }
        (void)ccs_comm_auto_info(j->comm, &info);
        j->strag[k] = stats.auto_plain ? -1 : stats.straggler;
        j->plainlog[k] = stats.auto_plain;
        j->hash[k] = info.state_hash;
    }
cleanup:
    free(in);
    free(out);
    return NULL;
}

static ccs_plan_t *make_plan(const char *algo, int32_t strag)
{
    topo_t *t = NULL;
    algo_params_t p;
    ccs_sched_t *s = NULL;
    ccs_plan_t *plan = NULL;

    if (topo_load("switch:4", NULL, &t, NULL) != CCS_OK)
        return NULL;
    algo_params_init(&p);
    p.straggler = strag;
    if (algo_synthesize(algo, t, &p, &s, NULL) == CCS_OK)
        (void)ccs_plan_from_sched(s, &plan, NULL);
    ccs_sched_destroy(s);
    topo_destroy(t);
    return plan;
}

static job_t g_jobs[R];

TEST(ranks_never_disagree)
{
    ccs_plan_t *aware = make_plan("stragglar", R - 1);
    ccs_plan_t *plain = make_plan("ring", -1);

    CHECK(aware != NULL && plain != NULL);
    for (size_t c = 0; aware && plain && c < sizeof(pcases) / sizeof(pcases[0]);
         c++) {
        const pcase_t *pc = &pcases[c];
        ccs_comm_t *comms[R];
        pthread_t th[R];
        int aware_calls = 0, right = 0;

        CHECK_STATUS(ccs_comm_init_threads(R, comms), CCS_OK);
        memset(g_jobs, 0, sizeof(g_jobs));
        for (int r = 0; r < R; r++) {
            g_jobs[r] = (job_t){ .pc = pc, .aware = aware,
                                 .plain = pc->with_plain ? plain : NULL,
                                 .comm = comms[r], .rank = r };
            ccs_comm_set_timeout(comms[r], 30);
            pthread_create(&th[r], NULL, rank_main, &g_jobs[r]);
        }
        for (int r = 0; r < R; r++)
            pthread_join(th[r], NULL);
        for (int r = 0; r < R; r++) {
            CHECK_MSG(g_jobs[r].st == CCS_OK, "%s: rank %d: %s", pc->name,
                      r, g_jobs[r].msg);
            CHECK_MSG(g_jobs[r].wrong == 0, "%s: rank %d: %ld wrong",
                      pc->name, r, g_jobs[r].wrong);
            for (int k = 0; k < NCALLS; k++) {
                CHECK_MSG(g_jobs[r].strag[k] == g_jobs[0].strag[k] &&
                          g_jobs[r].plainlog[k] == g_jobs[0].plainlog[k] &&
                          g_jobs[r].hash[k] == g_jobs[0].hash[k],
                          "%s: call %d: rank %d decided %d (plain %d), rank "
                          "0 %d (plain %d)", pc->name, k, r,
                          g_jobs[r].strag[k], g_jobs[r].plainlog[k],
                          g_jobs[0].strag[k], g_jobs[0].plainlog[k]);
                if (g_jobs[r].strag[k] != g_jobs[0].strag[k])
                    break;
            }
        }
        for (int k = 10; k < NCALLS; k++) {
            aware_calls += !g_jobs[0].plainlog[k];
            right += g_jobs[0].strag[k] == 2;
        }
        printf("  %-32s aware %3d of %d calls after the first 10\n",
               pc->name, aware_calls, NCALLS - 10);
        /* Without a plain plan auto only predicts the rank: a persistent
         * straggler must be found.  (With one, whether the aware plan
         * pays at 16 KiB on a busy host is the cost model's call, not
         * something a test can fix.) */
        if (pc->pat == PAT_PERSIST && !pc->with_plain)
            CHECK_MSG(right >= (NCALLS - 10) * 9 / 10, "%s: straggler 2 "
                      "picked in only %d of %d calls", pc->name, right,
                      NCALLS - 10);
        for (int r = 0; r < R; r++)
            ccs_comm_destroy(comms[r]);
    }
    ccs_plan_destroy(aware);
    ccs_plan_destroy(plain);
}

typedef struct bad {
    const char *name;
    int which;            /* plan: 0 aware, 1 ring */
    int plain;            /* 0 none, 1 ring, 2 the aware plan, 3 8-rank */
    int32_t straggler;
    ccs_status_t want;
    const char *msg;
} bad_t;

static const bad_t bads[] = {
    { "auto without a straggler role", 1, 0, CCS_STRAGGLER_AUTO,
      CCS_ERR_MISMATCH, "straggler auto needs a plan with a straggler role" },
    { "plain is the aware plan", 0, 2, CCS_STRAGGLER_AUTO, CCS_ERR_INVALID,
      "opts.plain is the straggler-aware plan itself" },
    { "plain for other ranks", 0, 3, CCS_STRAGGLER_AUTO, CCS_ERR_MISMATCH,
      "does not match the plan" },
    { "straggler out of range", 0, 0, 9, CCS_ERR_INVALID,
      "straggler 9 out of range" },
    { "straggler -3", 0, 0, -3, CCS_ERR_INVALID,
      "straggler -3 out of range" },
};

TEST(bad_input)
{
    ccs_plan_t *aware = make_plan("stragglar", R - 1);
    ccs_plan_t *ring = make_plan("ring", -1);
    ccs_plan_t *ring8 = NULL;
    ccs_comm_t *comms[R];
    ccs_auto_info_t info;
    float x[16] = { 0 }, y[16];
    topo_t *t = NULL;
    algo_params_t p;
    ccs_sched_t *s = NULL;

    if (topo_load("switch:8", NULL, &t, NULL) == CCS_OK) {
        algo_params_init(&p);
        if (algo_synthesize("ring", t, &p, &s, NULL) == CCS_OK)
            (void)ccs_plan_from_sched(s, &ring8, NULL);
        ccs_sched_destroy(s);
        topo_destroy(t);
    }
    CHECK(aware != NULL && ring != NULL && ring8 != NULL);
    CHECK_STATUS(ccs_comm_init_threads(R, comms), CCS_OK);
    CHECK_STATUS(ccs_comm_auto_info(NULL, &info), CCS_ERR_INVALID);
    CHECK_STATUS(ccs_comm_auto_info(comms[0], NULL), CCS_ERR_INVALID);
    CHECK_STATUS(ccs_comm_auto_info(comms[0], &info), CCS_OK);
    CHECK_EQ_INT(info.calls, 0);
    CHECK_EQ_INT(info.last, -1);
    for (size_t i = 0; aware && ring && ring8 &&
                       i < sizeof(bads) / sizeof(bads[0]); i++) {
        const bad_t *b = &bads[i];
        const ccs_plan_t *plains[] = { NULL, ring, aware, ring8 };
        ccs_run_opts_t o = CCS_RUN_OPTS_INIT;
        ccs_status_t st;
        o.straggler = b->straggler;
        o.plain = plains[b->plain];
        /* Refused before any data moves: one rank alone can ask. */
        st = ccs_run_ex(b->which ? ring : aware, comms[0], x, y, 16,
                        CCS_FLOAT32, CCS_SUM, NULL, &o);
        CHECK_MSG(st == b->want, "%s: got %s", b->name, ccs_status_name(st));
        CHECK_MSG(strstr(ccs_comm_last_error(comms[0]), b->msg) != NULL,
                  "%s: message '%s' lacks '%s'", b->name,
                  ccs_comm_last_error(comms[0]), b->msg);
    }
    CHECK_STATUS(ccs_comm_auto_info(comms[0], &info), CCS_OK);
    CHECK_EQ_INT(info.calls, 0);
    for (int r = 0; r < R; r++)
        ccs_comm_destroy(comms[r]);
    ccs_plan_destroy(aware);
    ccs_plan_destroy(ring);
    ccs_plan_destroy(ring8);
}

int main(void)
{
    RUN(bad_input);
    RUN(ranks_never_disagree);
    return TEST_SUMMARY();
}
