/*
 * test_straggler_auto.c - straggler "auto" (runtime/auto.c) on the threads
 * transport: bad inputs refused with clear messages; under adversarial
 * per-rank delays (persistent, rotating every call or every few calls,
 * random) over hundreds of calls, every rank's decision log and state
 * hash are identical call by call (a disagreement would deadlock or
 * corrupt the result) and every result is right; a persistent straggler
 * past the critical delay ends up relabelled for.  The same through a plan
 * set (ccs_planset_run with CCS_STRAGGLER_AUTO): the range with the
 * StragglAR plan runs auto and agrees, the range with a plain ring refuses
 * auto with the plan-role message.  Auto calls mixed with other calls on
 * the communicator (a fixed plan, the small exchange, count 0), each rank
 * destroying its communicator as soon as it is done: exact results, the
 * same state on every rank, every auto call counted.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "../../runtime/auto.h"
#include "../../runtime/ccs_int.h"
#include "../../runtime/format.h"
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
    const ccs_planset_t *set;    /* not NULL: run through the set */
    ccs_comm_t *comm;
    int rank;
    ccs_status_t st;
    long wrong;
    long wrong_plan;             /* set calls that picked another plan */
    int32_t strag[NCALLS];
    int plainlog[NCALLS];
    uint64_t hash[NCALLS];
    uint32_t streak[NCALLS];     /* auto's streak after each call */
    uint64_t exlog[NCALLS];      /* auto's exchange count after each call */
    uint64_t exchanges;          /* ... after the last call */
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
        if (j->set != NULL) {
            ccs_planset_opts_t so = CCS_PLANSET_OPTS_INIT;
            uint32_t idx = 99;
            so.straggler = CCS_STRAGGLER_AUTO;
            so.plain = j->plain;
            so.stats = &stats;
            so.plan_index = &idx;
            j->st = ccs_planset_run(j->set, j->comm, in, out, COUNT,
                                    CCS_FLOAT32, CCS_SUM, NULL, &so);
            if (j->st == CCS_OK && idx != 1)
                j->wrong_plan++;
        } else {
            j->st = ccs_run_ex(j->aware, j->comm, in, out, COUNT,
                               CCS_FLOAT32, CCS_SUM, NULL, &o);
        }
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
        j->streak[k] = info.streak;
        j->exlog[k] = info.exchanges;
        j->exchanges = info.exchanges;
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

/* Runs one pattern on R threads (through `set` when not NULL) and checks
 * that every call succeeded with exact results and that every rank's
 * decision and state hash are identical call by call.  Returns how many
 * calls after the first 10 ran the aware plan relabelled for rank 2. */
static int run_case(const pcase_t *pc, const ccs_plan_t *aware,
                    const ccs_plan_t *plain, const ccs_planset_t *set,
                    const char *via)
{
    ccs_comm_t *comms[R];
    pthread_t th[R];
    int aware_calls = 0, right = 0, late_calls = 0;

    CHECK_STATUS(ccs_comm_init_threads(R, comms), CCS_OK);
    memset(g_jobs, 0, sizeof(g_jobs));
    for (int r = 0; r < R; r++) {
        g_jobs[r] = (job_t){ .pc = pc, .aware = aware, .plain = plain,
                             .set = set, .comm = comms[r], .rank = r };
        ccs_comm_set_timeout(comms[r], 30);
        pthread_create(&th[r], NULL, rank_main, &g_jobs[r]);
    }
    for (int r = 0; r < R; r++)
        pthread_join(th[r], NULL);
    for (int r = 0; r < R; r++) {
        CHECK_MSG(g_jobs[r].st == CCS_OK, "%s%s: rank %d: %s", pc->name, via,
                  r, g_jobs[r].msg);
        CHECK_MSG(g_jobs[r].wrong == 0, "%s%s: rank %d: %ld wrong",
                  pc->name, via, r, g_jobs[r].wrong);
        CHECK_MSG(g_jobs[r].wrong_plan == 0, "%s%s: rank %d: %ld calls "
                  "picked another plan than the set's StragglAR", pc->name,
                  via, r, g_jobs[r].wrong_plan);
        for (int k = 0; k < NCALLS; k++) {
            CHECK_MSG(g_jobs[r].strag[k] == g_jobs[0].strag[k] &&
                      g_jobs[r].plainlog[k] == g_jobs[0].plainlog[k] &&
                      g_jobs[r].hash[k] == g_jobs[0].hash[k],
                      "%s%s: call %d: rank %d decided %d (plain %d), rank "
                      "0 %d (plain %d)", pc->name, via, k, r,
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
    /* The arrival-time exchange is skipped while nothing is late (after
     * 2, 4, 8, then 16 calls) and runs on every call that ran the aware
     * plan or ended with a rank on a streak.  The second is checked call
     * by call against auto's own state, not as a share of the calls: how
     * many calls a host makes look late is the host's (on a loaded
     * machine a thread's time slice can hide a 4 ms straggler in the
     * arrival noise).  The bound with nobody late is loose enough for a
     * descheduled thread to make a few calls look late. */
    if (pc->pat == PAT_NONE && pc->with_plain)
        CHECK_MSG(g_jobs[0].exchanges <= NCALLS / 2, "%s%s: %llu of %d "
                  "calls exchanged arrival times with nobody late",
                  pc->name, via, (unsigned long long)g_jobs[0].exchanges,
                  NCALLS);
    for (int k = 0; k < NCALLS; k++) {
        uint64_t before = k > 0 ? g_jobs[0].exlog[k - 1] : 0;
        bool late = g_jobs[0].streak[k] > 0 || !g_jobs[0].plainlog[k];
        late_calls += late;
        if (late && g_jobs[0].exlog[k] != before + 1) {
            CHECK_MSG(0, "%s%s: call %d ran %d with a streak of %u but "
                      "exchanged no arrival times", pc->name, via, k,
                      g_jobs[0].strag[k], g_jobs[0].streak[k]);
            break;
        }
    }
    printf("  %-32s%s aware %3d of %d calls after the first 10, %llu "
           "exchanges (%d due)\n", pc->name, via, aware_calls, NCALLS - 10,
           (unsigned long long)g_jobs[0].exchanges, late_calls);
    for (int r = 0; r < R; r++)
        ccs_comm_destroy(comms[r]);
    return right;
}

TEST(ranks_never_disagree)
{
    ccs_plan_t *aware = make_plan("stragglar", R - 1);
    ccs_plan_t *plain = make_plan("ring", -1);

    CHECK(aware != NULL && plain != NULL);
    for (size_t c = 0; aware && plain && c < sizeof(pcases) / sizeof(pcases[0]);
         c++) {
        const pcase_t *pc = &pcases[c];
        int right = run_case(pc, aware, pc->with_plain ? plain : NULL, NULL,
                             "");
        /* Without a plain plan auto only predicts the rank: a persistent
         * straggler must be found.  (With one, whether the aware plan
         * pays at 16 KiB on a busy host is the cost model's call, not
         * something a test can fix.) */
        if (pc->pat == PAT_PERSIST && !pc->with_plain)
            CHECK_MSG(right >= (NCALLS - 10) * 9 / 10, "%s: straggler 2 "
                      "picked in only %d of %d calls", pc->name, right,
                      NCALLS - 10);
    }
    ccs_plan_destroy(aware);
    ccs_plan_destroy(plain);
}

/* Writes `algo`'s switch:4 schedule to dir/name; true on success. */
static bool write_sched(const char *dir, const char *name, const char *algo,
                        int32_t strag)
{
    topo_t *t = NULL;
    algo_params_t p;
    ccs_sched_t *s = NULL;
    char path[256];
    bool ok = false;

    if (topo_load("switch:4", NULL, &t, NULL) != CCS_OK)
        return false;
    algo_params_init(&p);
    p.straggler = strag;
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    if (algo_synthesize(algo, t, &p, &s, NULL) == CCS_OK) {
        s->topo_fingerprint = 0x5a5a5a5a12345678ull;
        ok = ccs_format_write_file(s, path, NULL) == CCS_OK;
    }
    ccs_sched_destroy(s);
    topo_destroy(t);
    return ok;
}

/* A tuned set whose small range (< 8 KiB) is a ring and whose large range
 * is StragglAR, as `ccsynth tune --emit` writes one when the aware plan
 * wins large buffers. */
static const char planset_index[] =
    "{\n  \"format\": \"ccsynth-tuning\",\n  \"version\": 1,\n"
    "  \"topo\": \"switch:4\",\n"
    "  \"topo_fingerprint\": \"0x5a5a5a5a12345678\",\n"
    "  \"coll\": \"allreduce\",\n  \"nranks\": 4,\n"
    "  \"elem_bytes\": 4,\n  \"configs\": [],\n  \"ranges\": [\n"
    "    {\"min_bytes\": 0, \"max_bytes\": 8191, \"first_size\": 1024, "
    "\"last_size\": 4096, \"config\": 0, \"file\": \"ring.ccs\"},\n"
    "    {\"min_bytes\": 8192, \"max_bytes\": null, \"first_size\": "
    "8192, \"last_size\": 65536, \"config\": 1, \"file\": "
    "\"strag.ccs\"}\n  ],\n  \"sizes\": []\n}\n";

TEST(auto_through_a_plan_set)
{
    char dir[] = "/tmp/ccs-auto-set-XXXXXX", path[256];
    ccs_planset_t *set = NULL;
    ccs_plan_t *plain = make_plan("ring", -1);
    char msg[512] = "";
    FILE *f;
    bool made;

    CHECK(plain != NULL);
    CHECK(mkdtemp(dir) != NULL);
    made = write_sched(dir, "ring.ccs", "ring", -1) &&
           write_sched(dir, "strag.ccs", "stragglar", R - 1);
    CHECK(made);
    snprintf(path, sizeof(path), "%s/tuning.json", dir);
    f = fopen(path, "w");
    CHECK(f != NULL);
    if (f != NULL) {
        fputs(planset_index, f);
        fclose(f);
    }
    CHECK_STATUS(ccs_planset_load(dir, &set, msg, sizeof(msg)), CCS_OK);
    CHECK_MSG(set != NULL, "load: %s", msg);
    if (set != NULL && plain != NULL) {
        /* COUNT floats fall in the StragglAR range: auto runs, and the
         * ranks agree under the delay patterns that make them choose. */
        for (size_t c = 0; c < sizeof(pcases) / sizeof(pcases[0]); c++)
            if (pcases[c].pat == PAT_PERSIST || pcases[c].pat == PAT_ROTATE4)
                (void)run_case(&pcases[c], NULL,
                               pcases[c].with_plain ? plain : NULL, set,
                               " (set)");
        /* A count in the ring's range: auto has no straggler role to use
         * and must say so before any data moves (one rank alone asks). */
        {
            ccs_comm_t *comms[R];
            ccs_planset_opts_t so = CCS_PLANSET_OPTS_INIT;
            float x[256] = { 0 }, y[256];
            uint32_t idx = 99;
            ccs_status_t st;

            CHECK_STATUS(ccs_comm_init_threads(R, comms), CCS_OK);
            so.straggler = CCS_STRAGGLER_AUTO;
            so.plain = plain;
            so.plan_index = &idx;
            st = ccs_planset_run(set, comms[0], x, y, 256, CCS_FLOAT32,
                                 CCS_SUM, NULL, &so);
            CHECK_STATUS(st, CCS_ERR_MISMATCH);
            CHECK_EQ_INT(idx, 0);
            CHECK_MSG(strstr(ccs_comm_last_error(comms[0]),
                             "straggler auto needs a plan with a straggler "
                             "role") != NULL, "message '%s'",
                      ccs_comm_last_error(comms[0]));
            for (int r = 0; r < R; r++)
                ccs_comm_destroy(comms[r]);
        }
    }
    ccs_planset_destroy(set);
    ccs_plan_destroy(plain);
    snprintf(path, sizeof(path), "%s/tuning.json", dir);
    remove(path);
    snprintf(path, sizeof(path), "%s/ring.ccs", dir);
    remove(path);
    snprintf(path, sizeof(path), "%s/strag.ccs", dir);
    remove(path);
    rmdir(dir);
}

/* Auto's arrival-time exchange stays in flight from the end of one auto
 * call to the first wait of the next run on the communicator, whatever
 * that run is.  A rank's calls, in order (every rank makes the same): */
typedef enum { CALL_AUTO, CALL_RING } call_kind_t;
static const struct mixed_call {
    const char *what;
    call_kind_t kind;
    size_t count;            /* floats */
} mixed[] = {
    { "auto", CALL_AUTO, COUNT },
    { "the ring, fixed, between auto calls", CALL_RING, COUNT },
    { "auto", CALL_AUTO, COUNT },
    { "the ring at 8 bytes (one-step exchange)", CALL_RING, 2 },
    { "auto", CALL_AUTO, COUNT },
    { "auto with count 0 (moves nothing)", CALL_AUTO, 0 },
    { "auto", CALL_AUTO, COUNT },
    { "auto at 8 bytes (one-step exchange)", CALL_AUTO, 2 },
    { "auto, the last call before destroy", CALL_AUTO, COUNT },
};
#define MIXED_N (sizeof(mixed) / sizeof(mixed[0]))
#define MIXED_LOOPS 5

typedef struct mjob {
    const ccs_plan_t *aware, *plain;
    ccs_comm_t *comm;
    int rank;
    ccs_status_t st;
    long wrong;
    uint64_t calls;                 /* ccs_comm_auto_info at the end */
    uint64_t hash[MIXED_LOOPS * MIXED_N];
    char msg[256];
} mjob_t;

static void *mixed_main(void *arg)
{
    mjob_t *j = arg;
    float in[COUNT], out[COUNT];
    ccs_auto_info_t info;

    j->st = CCS_OK;
    for (size_t k = 0; k < MIXED_LOOPS * MIXED_N && j->st == CCS_OK; k++) {
        const struct mixed_call *c = &mixed[k % MIXED_N];
        ccs_run_opts_t o = CCS_RUN_OPTS_INIT;
        for (size_t i = 0; i < c->count; i++)
            in[i] = (float)((i + (size_t)j->rank * 5 + k) % 13);
        if (c->kind == CALL_AUTO) {
            o.straggler = CCS_STRAGGLER_AUTO;
            o.plain = j->plain;
        }
        /* Rank 1 late every call: auto learns and switches plans. */
        if (j->rank == 1)
            usleep(300);
        j->st = ccs_run_ex(c->kind == CALL_AUTO ? j->aware : j->plain,
                           j->comm, in, out, c->count, CCS_FLOAT32, CCS_SUM,
                           NULL, &o);
        if (j->st != CCS_OK) {
            snprintf(j->msg, sizeof(j->msg), "call %zu (%s): %s", k,
                     c->what, ccs_comm_last_error(j->comm));
            break;
        }
        for (size_t i = 0; i < c->count; i++) {
            float want = 0;
            for (int q = 0; q < R; q++)
                want += (float)((i + (size_t)q * 5 + k) % 13);
            j->wrong += out[i] != want;
        }
        (void)ccs_comm_auto_info(j->comm, &info);
        j->hash[k] = info.state_hash;
    }
    (void)ccs_comm_auto_info(j->comm, &info);
    j->calls = info.calls;
    /* Each rank destroys its communicator as soon as it is done, while
     * its peers may still be in the last call: the destroy must wait for
     * the exchange in flight (into buffers it would free) to complete. */
    ccs_comm_destroy(j->comm);
    j->comm = NULL;
    return NULL;
}

TEST(auto_between_other_calls)
{
    ccs_plan_t *aware = make_plan("stragglar", R - 1);
    ccs_plan_t *plain = make_plan("ring", -1);
    ccs_comm_t *comms[R];
    pthread_t th[R];
    static mjob_t jobs[R];
    uint64_t want_calls = 0;

    CHECK(aware != NULL && plain != NULL);
    if (aware == NULL || plain == NULL)
        goto cleanup;
    for (size_t k = 0; k < MIXED_LOOPS * MIXED_N; k++)
        want_calls += mixed[k % MIXED_N].kind == CALL_AUTO &&
                      mixed[k % MIXED_N].count > 0;
    CHECK_STATUS(ccs_comm_init_threads(R, comms), CCS_OK);
    for (int r = 0; r < R; r++) {
        memset(&jobs[r], 0, sizeof(jobs[r]));
        jobs[r].aware = aware;
        jobs[r].plain = plain;
        jobs[r].comm = comms[r];
        jobs[r].rank = r;
        ccs_comm_set_timeout(comms[r], 30);
        pthread_create(&th[r], NULL, mixed_main, &jobs[r]);
    }
    for (int r = 0; r < R; r++)
        pthread_join(th[r], NULL);
    for (int r = 0; r < R; r++) {
        CHECK_MSG(jobs[r].st == CCS_OK, "rank %d: %s", r, jobs[r].msg);
        CHECK_MSG(jobs[r].wrong == 0, "rank %d: %ld wrong", r,
                  jobs[r].wrong);
        CHECK_MSG(jobs[r].calls == want_calls, "rank %d: %llu auto calls "
                  "counted, want %llu", r, (unsigned long long)jobs[r].calls,
                  (unsigned long long)want_calls);
        for (size_t k = 0; k < MIXED_LOOPS * MIXED_N; k++)
            if (jobs[r].hash[k] != jobs[0].hash[k]) {
                CHECK_MSG(0, "call %zu (%s): rank %d's auto state differs "
                          "from rank 0's", k, mixed[k % MIXED_N].what, r);
                break;
            }
    }
cleanup:
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

/* ---- the rule alone (auto.h), on made-up arrival vectors ----
 *
 * A call of R ranks is given by each rank's lateness (us); the vector
 * the ranks would gather is made from a simple model of the two plans at
 * 16 KiB on an oversubscribed host: the plain plan takes T_P0 from the
 * last arrival with nobody late and T_P1 after a late arrival (the
 * waiting ranks must be scheduled back first); the aware plan's phase 0
 * takes T_RS from the last non-straggler's arrival, its part after the
 * straggler's arrival T_A0, or T_A1 after a late arrival.  A late arrival
 * is one past LATE_US, a wait long enough for the waiting ranks to be
 * descheduled: even the arrival noise makes the plain plan slow, which is
 * what made a single T_plain estimate read D* = 0 and buy the aware plan
 * on short streaks of noise.  Each row is a sequence of segments; the picks of
 * a segment's calls from `from` on must all be `want` (-1: plain). */
#define T_P0 50
#define T_P1 150
#define T_RS 20
#define T_A0 60
#define T_A1 90
#define LATE_US 25

typedef enum { SEG_QUIET, SEG_PERSIST, SEG_ROTATE, SEG_BURST,
               SEG_RANDOM } seg_kind_t;

typedef struct seg {
    seg_kind_t kind;
    int calls;
    int rank;             /* PERSIST, BURST: the late rank */
    int late_us;          /* its lateness (RANDOM: every rank 0..late_us) */
    int burst;            /* BURST: late this many calls in a row ... */
    int every;            /* ... out of every `every` */
    int from;             /* first call of the segment checked */
    int want;             /* what those calls pick; -2 unchecked */
    int aware_x;          /* the aware plan's part after the arrival
                             takes this many times the model's (0: 1):
                             samples taken while processes were
                             descheduled */
    int plain_x;          /* the same for the plain plan's time */
} seg_t;

#define MAX_SEGS 4

typedef struct rule_row {
    const char *name;
    int jitter_us;        /* arrival noise on every call (see lateness) */
    seg_t seg[MAX_SEGS];  /* calls == 0 ends */
} rule_row_t;

/* Arrival noise without randomness: the ranks' latenesses are 0, J, J/2
 * and J/4 (a permutation that moves every call), so the latest rank is
 * late by J and the runner-up by J/2 on every call. */
static int64_t jitter_of(int jitter_us, int call, int rank)
{
    static const int part[R] = { 0, 4, 2, 1 };
    return (int64_t)jitter_us * part[(rank + call) % R] / 4;
}

static int64_t lateness_of(const seg_t *sg, int jitter_us, int k, int call,
                           int rank)
{
    int64_t l = jitter_of(jitter_us, call, rank);
    uint64_t x = (uint64_t)call * 0x9e3779b97f4a7c15ull + (uint64_t)rank;

    switch (sg->kind) {
    case SEG_QUIET:
        break;
    case SEG_PERSIST:
        l += rank == sg->rank ? sg->late_us : 0;
        break;
    case SEG_ROTATE:
        l += rank == k % R ? sg->late_us : 0;
        break;
    case SEG_BURST:
        l += rank == sg->rank && k % sg->every < sg->burst ? sg->late_us : 0;
        break;
    case SEG_RANDOM:
        x ^= x >> 29;
        x *= 0xbf58476d1ce4e5b9ull;
        x ^= x >> 32;
        l += (int64_t)(x % ((uint64_t)sg->late_us + 1));
        break;
    }
    return l;
}

/* The gathered vector (elapsed, phase 0 per rank, ns) of a call that ran
 * `ran` with these latenesses (us), under the model above. */
static void model_vec(const int64_t lat_us[R], int ran, int aware_x,
                      int plain_x, int64_t vec[2 * R])
{
    int64_t lmin = lat_us[0], lmax = 0, l[R], end, end0 = 0;

    for (int q = 1; q < R; q++)
        lmin = lat_us[q] < lmin ? lat_us[q] : lmin;
    for (int q = 0; q < R; q++) {
        l[q] = lat_us[q] - lmin;
        lmax = l[q] > lmax ? l[q] : lmax;
    }
    if (ran < 0) {
        end = lmax + (lmax > LATE_US ? T_P1 : T_P0) * (plain_x > 0 ? plain_x : 1);
    } else {
        int64_t m = 0;
        for (int q = 0; q < R; q++)
            if (q != ran && l[q] > m)
                m = l[q];
        end0 = m + T_RS;
        end = (l[ran] > end0 ? l[ran] : end0) +
              (l[ran] > LATE_US ? T_A1 : T_A0) * (aware_x > 0 ? aware_x : 1);
    }
    for (int q = 0; q < R; q++) {
        vec[2 * q] = (end - l[q]) * 1000;
        vec[2 * q + 1] = (ran < 0 || q == ran ? end - l[q] : end0 - l[q]) *
                         1000;
    }
}

static const rule_row_t rule_rows[] = {
    { "nobody late, arrival noise of 40 us", 40,
      { { SEG_QUIET, 60, 0, 0, 0, 0, 6, -1, 0, 0 } } },
    { "a straggler 2 ms late: plain for 2 calls, then aware for it", 40,
      { { SEG_QUIET, 8, 0, 0, 0, 0, 0, -2, 0, 0 },
        { SEG_PERSIST, 2, 2, 2000, 0, 0, 0, -1, 0, 0 },
        { SEG_PERSIST, 38, 2, 2000, 0, 0, 2, 2, 0, 0 } } },
    { "the straggler gone: plain from the call after its first on-time "
      "arrival", 40,
      { { SEG_QUIET, 8, 0, 0, 0, 0, 0, -2, 0, 0 },
        { SEG_PERSIST, 30, 1, 2000, 0, 0, 0, -2, 0, 0 },
        { SEG_QUIET, 30, 0, 0, 0, 0, 1, -1, 0, 0 } } },
    { "a descheduled rank late 3 calls in a row at 1.5x the noise, every "
      "6 calls: plain", 40,
      { { SEG_QUIET, 8, 0, 0, 0, 0, 0, -2, 0, 0 },
        { SEG_BURST, 50, 1, 30, 3, 6, 0, -1, 0, 0 } } },
    { "... also after a straggler inflated the plain plan's late cost",
      40, { { SEG_QUIET, 8, 0, 0, 0, 0, 0, -2, 0, 0 },
            { SEG_PERSIST, 30, 2, 2000, 0, 0, 0, -2, 0, 0 },
            { SEG_QUIET, 6, 0, 0, 0, 0, 1, -1, 0, 0 },
            { SEG_BURST, 40, 0, 30, 3, 6, 0, -1, 0, 0 } } },
    { "one rank 40 us late every call, the others within 8 us (less than "
      "T_plain: end skew): plain", 8,
      { { SEG_QUIET, 8, 0, 0, 0, 0, 0, -2, 0, 0 },
        { SEG_PERSIST, 50, 1, 40, 0, 0, 0, -1, 0, 0 } } },
    { "a straggler late by 2 ms that changes every call: plain", 40,
      { { SEG_QUIET, 8, 0, 0, 0, 0, 0, -2, 0, 0 },
        { SEG_ROTATE, 50, 0, 2000, 0, 0, 0, -1, 0, 0 } } },
    { "every rank late by 0..300 us at random from the start: plain", 40,
      { { SEG_RANDOM, 60, 0, 300, 0, 0, 6, -1, 0, 0 } } },
    { "nobody late for 600 calls: plain on every call after the warm-up "
      "(no probes)", 40,
      { { SEG_QUIET, 600, 0, 0, 0, 0, 6, -1, 0, 0 } } },
    { "an aware estimate made 3x too slow is probed again while the "
      "straggler stays late, and bought", 20,
      { { SEG_QUIET, 8, 0, 0, 0, 0, 0, -2, 0, 0 },
        { SEG_PERSIST, 40, 2, 2000, 0, 0, 0, -2, 3, 0 },
        { SEG_PERSIST, 20, 2, 2000, 0, 0, 10, -1, 0, 0 },
        { SEG_PERSIST, 60, 2, 2000, 0, 0, 20, 2, 0, 0 } } },
    { "a straggler late on every call after a spell that made T_plain read "
      "2.5 ms: bought once T_plain is stale", 20,
      { { SEG_QUIET, 8, 0, 0, 0, 0, 0, -2, 0, 0 },
        { SEG_QUIET, 30, 0, 0, 0, 0, 0, -2, 0, 50 },
        { SEG_PERSIST, 120, 2, 2000, 0, 0, 80, 2, 0, 0 } } },
};

TEST(rule_table)
{
    const uint64_t key = 0x5eed0001;

    for (size_t i = 0; i < sizeof(rule_rows) / sizeof(rule_rows[0]); i++) {
        const rule_row_t *row = &rule_rows[i];
        struct ccs_auto *a = ccs_auto_new(R);
        int call = 0, bad = 0, checked = 0;

        CHECK(a != NULL);
        if (a == NULL)
            return;
        for (int s = 0; s < MAX_SEGS && row->seg[s].calls > 0; s++) {
            const seg_t *sg = &row->seg[s];
            for (int k = 0; k < sg->calls; k++, call++) {
                int64_t lat[R], vec[2 * R];
                int32_t pick = ccs_auto_decide(a, key, true, R - 1);
                if (sg->want != -2 && k >= sg->from) {
                    checked++;
                    if (pick != sg->want && bad++ == 0) {
                        ccs_auto_view_t v;
                        ccs_auto_view(a, key, &v);
                        CHECK_MSG(0, "%s: segment %d call %d picked %d, "
                                  "want %d (noise %lld floor %lld "
                                  "critical %lld ns, streak %u of %d)",
                                  row->name, s, k, pick, sg->want,
                                  (long long)v.noise_ns,
                                  (long long)v.floor_ns,
                                  (long long)v.crit_ns, v.streak,
                                  v.streak_rank);
                    }
                }
                ccs_auto_ran(a, key, pick);
                for (int q = 0; q < R; q++)
                    lat[q] = lateness_of(sg, row->jitter_us, k, call, q);
                model_vec(lat, pick, sg->aware_x, sg->plain_x, vec);
                ccs_auto_learn(a, key, pick, vec);
            }
        }
        CHECK_MSG(checked > 0, "%s: nothing checked", row->name);
        printf("  %-66.66s %d of %d picks as wanted\n", row->name,
               checked - bad, checked);
        ccs_auto_free(a);
    }
}

int main(void)
{
    RUN(rule_table);
    RUN(bad_input);
    RUN(ranks_never_disagree);
    RUN(auto_through_a_plan_set);
    RUN(auto_between_other_calls);
    return TEST_SUMMARY();
}
