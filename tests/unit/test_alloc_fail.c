/*
 * test_alloc_fail.c - fail the Nth allocation and check the error path.
 *
 * The allocator hook is the linker's: this program is linked with
 * -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=free (see the
 * Makefile), so every allocation made by code in the program, libccs.a and
 * libccsynth.a included, goes through the __wrap_* functions below.  The
 * libraries themselves carry no hook and no global state for it.
 * Allocations made inside shared libraries (libc's strdup, igraph, GLPK)
 * are not seen: they are not ours to unwind.
 *
 * For each operation (a whole create -> use -> destroy sequence) and for
 * N = 1, 2, ...: allocation number N fails; the operation must then return
 * CCS_ERR_NOMEM (or succeed, if it could do without that memory), and every
 * block it allocated must have been freed -- on the error path as on the
 * success path.  The loop ends at the first N the operation never reaches.
 *
 * A failure in the middle of a multi-rank run on the threads transport is
 * covered too: the failing rank aborts the world and its peers return
 * CCS_ERR_TRANSPORT (the MPI, CUDA and NCCL transports are not run here).
 */
#include <dirent.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "../../runtime/ccs.h"
#include "../../runtime/format.h"
#include "algo.h"
#include "sim.h"
#include "topo.h"
#include "topo_init.h"
#include "verify.h"
#include "harness.h"
#include "rt_fixtures.h"

void *__real_malloc(size_t size);
void *__real_calloc(size_t nmemb, size_t size);
void *__real_realloc(void *ptr, size_t size);
void __real_free(void *ptr);
void *__wrap_malloc(size_t size);
void *__wrap_calloc(size_t nmemb, size_t size);
void *__wrap_realloc(void *ptr, size_t size);
void __wrap_free(void *ptr);

/* ---- the hook: a counter, a failure point and a set of live blocks ---- */

#define LIVE_SLOTS (1u << 20) /* open addressing; far above any test's need */
#define TOMBSTONE ((void *)1)

static struct {
    pthread_mutex_t mu;  /* the threads transport allocates from ranks */
    bool armed;          /* count and track allocations */
    uint64_t count;      /* allocations seen while armed */
    uint64_t fail_at;    /* 1-based allocation number to fail; 0: none */
    bool failed;         /* the failure was injected */
    uint64_t live;       /* tracked blocks not yet freed */
    bool overflow;       /* the live set filled up: results unreliable */
    void **slots;        /* [LIVE_SLOTS] */
} hook = { .mu = PTHREAD_MUTEX_INITIALIZER };

static size_t slot_of(const void *p)
{
    uintptr_t x = (uintptr_t)p;
    x ^= x >> 17;
    x *= UINT64_C(0xed5ad4bb);
    x ^= x >> 11;
    return (size_t)(x & (LIVE_SLOTS - 1));
}

static void live_add(void *p)
{
    size_t i = slot_of(p);
    for (size_t k = 0; k < LIVE_SLOTS; k++, i = (i + 1) & (LIVE_SLOTS - 1)) {
        if (hook.slots[i] == NULL || hook.slots[i] == TOMBSTONE) {
            hook.slots[i] = p;
            hook.live++;
            return;
        }
    }
    hook.overflow = true;
}

/* Forget p if it is tracked (blocks from before arming, or from libc's own
 * allocations, are not). */
static void live_del(void *p)
{
    size_t i = slot_of(p);
    for (size_t k = 0; k < LIVE_SLOTS; k++, i = (i + 1) & (LIVE_SLOTS - 1)) {
        if (hook.slots[i] == NULL)
            return;
        if (hook.slots[i] == p) {
            hook.slots[i] = TOMBSTONE;
            hook.live--;
            return;
        }
    }
}

/* True when this allocation must fail. */
static bool hook_fail_now(void)
{
    if (!hook.armed)
        return false;
    hook.count++;
    if (hook.fail_at != 0 && hook.count == hook.fail_at) {
        hook.failed = true;
        return true;
    }
    return false;
}

/* The allocation itself is made outside the lock; counting and the live
 * set are updated under it. */
void *__wrap_malloc(size_t size)
{
    void *p;
    bool fail;
    pthread_mutex_lock(&hook.mu);
    fail = hook_fail_now();
    pthread_mutex_unlock(&hook.mu);
    if (fail)
        return NULL;
    p = __real_malloc(size);
    pthread_mutex_lock(&hook.mu);
    if (p != NULL && hook.armed)
        live_add(p);
    pthread_mutex_unlock(&hook.mu);
    return p;
}

void *__wrap_calloc(size_t nmemb, size_t size)
{
    void *p;
    bool fail;
    pthread_mutex_lock(&hook.mu);
    fail = hook_fail_now();
    pthread_mutex_unlock(&hook.mu);
    if (fail)
        return NULL;
    p = __real_calloc(nmemb, size);
    pthread_mutex_lock(&hook.mu);
    if (p != NULL && hook.armed)
        live_add(p);
    pthread_mutex_unlock(&hook.mu);
    return p;
}

void *__wrap_realloc(void *ptr, size_t size)
{
    void *p;
    bool fail;
    pthread_mutex_lock(&hook.mu);
    fail = hook_fail_now();
    pthread_mutex_unlock(&hook.mu);
    if (fail)
        return NULL; /* ptr stays valid and tracked */
    p = __real_realloc(ptr, size);
    pthread_mutex_lock(&hook.mu);
    if (p != NULL || size == 0) {
        if (ptr != NULL && hook.armed)
            live_del(ptr);
        if (p != NULL && hook.armed)
            live_add(p);
    }
    pthread_mutex_unlock(&hook.mu);
    return p;
}

void __wrap_free(void *ptr)
{
    pthread_mutex_lock(&hook.mu);
    if (ptr != NULL && hook.armed)
        live_del(ptr);
    pthread_mutex_unlock(&hook.mu);
    __real_free(ptr);
}

static void hook_arm(uint64_t fail_at)
{
    pthread_mutex_lock(&hook.mu);
    memset(hook.slots, 0, LIVE_SLOTS * sizeof(*hook.slots));
    hook.count = 0;
    hook.fail_at = fail_at;
    hook.failed = false;
    hook.live = 0;
    hook.overflow = false;
    hook.armed = true;
    pthread_mutex_unlock(&hook.mu);
}

static void hook_disarm(void)
{
    pthread_mutex_lock(&hook.mu);
    hook.armed = false;
    pthread_mutex_unlock(&hook.mu);
}

/* ---- operations: each creates, uses and destroys everything it makes ---- */

typedef ccs_status_t (*op_fn)(const void *ctx);

typedef struct plan_bytes {
    const uint8_t *buf;
    size_t len;
} plan_bytes_t;

static ccs_status_t op_plan_load(const void *ctx)
{
    const plan_bytes_t *pb = ctx;
    ccs_plan_t *p = NULL;
    ccs_status_t st = ccs_plan_load_mem(pb->buf, pb->len, &p);
    ccs_plan_destroy(p);
    return st;
}

static ccs_status_t op_comm_threads(const void *ctx)
{
    ccs_comm_t *comms[4] = { NULL, NULL, NULL, NULL };
    ccs_status_t st;
    (void)ctx;
    st = ccs_comm_init_threads(4, comms);
    for (int i = 0; i < 4; i++)
        ccs_comm_destroy(comms[i]);
    return st;
}

/* A 4-rank allreduce on the threads transport, each rank in its own
 * thread: communicators, the run (arena, staging, transfer queues) and
 * their destruction.  A rank that fails mid-run aborts the world, so its
 * peers return CCS_ERR_TRANSPORT instead of waiting; the operation's status
 * is NOMEM if any rank ran out of memory. */
#define RUN_RANKS 4
#define RUN_COUNT 1000

typedef struct run_arg {
    const ccs_plan_t *plan;
    ccs_comm_t *comm;
    float *in, *out;
    ccs_status_t st;
} run_arg_t;

static void *run_rank(void *p)
{
    run_arg_t *a = p;
    a->st = ccs_allreduce(a->plan, a->comm, a->in, a->out, RUN_COUNT,
                          CCS_FLOAT32, CCS_SUM, NULL);
    return NULL;
}

static ccs_status_t op_threads_run(const void *ctx)
{
    const ccs_plan_t *plan = ctx;
    ccs_comm_t *comms[RUN_RANKS] = { NULL };
    static float in[RUN_RANKS][RUN_COUNT], out[RUN_RANKS][RUN_COUNT];
    run_arg_t args[RUN_RANKS];
    pthread_t th[RUN_RANKS];
    ccs_status_t st = ccs_comm_init_threads(RUN_RANKS, comms);
    bool nomem = false;

    if (st != CCS_OK)
        return st;
    for (int r = 0; r < RUN_RANKS; r++) {
        for (int i = 0; i < RUN_COUNT; i++)
            in[r][i] = (float)(r + 1);
        args[r] = (run_arg_t){ plan, comms[r], in[r], out[r], CCS_OK };
        if (pthread_create(&th[r], NULL, run_rank, &args[r]) != 0)
            return CCS_ERR_INTERNAL;
    }
    for (int r = 0; r < RUN_RANKS; r++)
        pthread_join(th[r], NULL);
    for (int r = 0; r < RUN_RANKS; r++) {
        if (args[r].st == CCS_ERR_NOMEM)
            nomem = true;
        else if (args[r].st != CCS_OK && args[r].st != CCS_ERR_TRANSPORT &&
                 st == CCS_OK)
            st = args[r].st;
        ccs_comm_destroy(comms[r]);
    }
    if (st == CCS_OK && nomem)
        return CCS_ERR_NOMEM;
    if (st == CCS_OK) {
        for (int r = 0; r < RUN_RANKS; r++) {
            for (int i = 0; i < RUN_COUNT; i++) {
                if (args[r].st == CCS_OK && out[r][i] != 10.0f)
                    return CCS_ERR_INTERNAL; /* wrong result */
            }
        }
        for (int r = 0; r < RUN_RANKS; r++) {
            if (args[r].st != CCS_OK)
                return CCS_ERR_INTERNAL; /* aborted without a cause */
        }
    }
    return st;
}

/* The fixture builder reports failure as NULL; under this hook the only
 * cause is memory. */
static ccs_status_t op_sched_encode(const void *ctx)
{
    ccs_sched_t *s = fx_ring_allreduce(4, 2);
    uint8_t *buf = NULL;
    size_t len = 0;
    ccs_status_t st = CCS_ERR_NOMEM;
    (void)ctx;
    if (s == NULL)
        goto cleanup;
    st = ccs_sched_validate(s, NULL);
    if (st == CCS_OK)
        st = ccs_format_encode(s, &buf, &len, NULL);
cleanup:
    free(buf);
    ccs_sched_destroy(s);
    return st;
}

typedef struct write_case {
    const ccs_sched_t *s;
    char dir[64];      /* a fresh directory */
    char path[96];     /* dir/plan.ccs */
} write_case_t;

/* Entries in dir other than . and .. (-1: cannot read it). */
static int dir_entries(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    int k = 0;
    if (d == NULL)
        return -1;
    while ((de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, ".."))
            k++;
    }
    closedir(d);
    return k;
}

/* Atomic write: on failure neither the target nor a temporary file may be
 * left behind (a failure is reported as NOMEM, which the sweep checks). */
static ccs_status_t op_write_file(const void *ctx)
{
    const write_case_t *wc = ctx;
    ccs_status_t st = ccs_format_write_file(wc->s, wc->path, NULL);
    int left = dir_entries(wc->dir);

    if (st == CCS_OK && left != 1)
        return CCS_ERR_INTERNAL;
    if (st != CCS_OK && left != 0)
        return CCS_ERR_INTERNAL; /* half-written or stray file */
    unlink(wc->path);
    return st;
}

typedef struct synth_case {
    const char *topo;
    const char *algo;
    ccs_coll_t coll;
    uint64_t points;  /* failure points to try (0: every allocation) */
} synth_case_t;

/* The CLI's path: topology, synthesis, verification, encoding, one
 * simulation. */
static ccs_status_t op_synth(const void *ctx)
{
    const synth_case_t *sc = ctx;
    topo_t *t = NULL;
    ccs_sched_t *s = NULL;
    uint8_t *buf = NULL;
    size_t len = 0;
    algo_params_t ap;
    sim_opts_t so;
    sim_result_t res;
    ccs_status_t st;

    memset(&res, 0, sizeof(res));
    algo_params_init(&ap);
    ap.coll = sc->coll;
    sim_opts_init(&so);
    st = topo_load(sc->topo, NULL, &t, NULL);
    if (st != CCS_OK)
        goto cleanup;
    st = algo_synthesize(sc->algo, t, &ap, &s, NULL);
    if (st != CCS_OK)
        goto cleanup;
    st = verify_sched(s, NULL, NULL);
    if (st != CCS_OK)
        goto cleanup;
    st = ccs_format_encode(s, &buf, &len, NULL);
    if (st != CCS_OK)
        goto cleanup;
    st = sim_run(s, t, 1 << 20, &so, &res, NULL);
cleanup:
    sim_result_free(&res);
    free(buf);
    ccs_sched_destroy(s);
    topo_destroy(t);
    return st;
}

/* Run op failing allocation 1, 2, ... up to the number it makes without
 * injection; check status and leaks each time.  `points` bounds the runs
 * for slow operations: when the operation makes more allocations, the
 * failure points are spread evenly over them (0: every one).  Returns the
 * number of allocations the operation makes. */
static uint64_t sweep(const char *name, op_fn op, const void *ctx,
                      uint64_t points)
{
    uint64_t stride = 1;
    uint64_t total;
    ccs_status_t st;

    hook_arm(0);
    st = op(ctx);
    total = hook.count;
    hook_disarm();
    CHECK_MSG(st == CCS_OK, "%s: fails without injection: %s", name,
              ccs_status_name(st));
    CHECK_MSG(hook.live == 0, "%s: %llu block(s) leaked on success", name,
              (unsigned long long)hook.live);
    CHECK_MSG(total > 0, "%s: no allocation seen (is the hook linked?)",
              name);
    if (points > 0 && total > points)
        stride = (total + points - 1) / points;
    for (uint64_t n = 1; n <= total; n += stride) {
        hook_arm(n);
        st = op(ctx);
        hook_disarm();
        CHECK_MSG(!hook.overflow, "%s: live set overflow", name);
        if (!hook.failed)
            continue; /* a shorter path this time: nothing injected */
        CHECK_MSG(st == CCS_ERR_NOMEM || st == CCS_OK,
                  "%s: allocation %llu of %llu failed: got %s, want "
                  "CCS_ERR_NOMEM", name, (unsigned long long)n,
                  (unsigned long long)total, ccs_status_name(st));
        CHECK_MSG(hook.live == 0,
                  "%s: allocation %llu of %llu failed: %llu block(s) "
                  "leaked", name, (unsigned long long)n,
                  (unsigned long long)total, (unsigned long long)hook.live);
    }
    return total;
}

TEST(runtime_plan_load)
{
    ccs_sched_t *s = fx_straggler(4, 3);
    uint8_t *buf = NULL;
    size_t len = 0;
    plan_bytes_t pb;

    CHECK(s != NULL);
    CHECK_STATUS(ccs_format_encode(s, &buf, &len, NULL), CCS_OK);
    pb.buf = buf;
    pb.len = len;
    CHECK(sweep("plan_load", op_plan_load, &pb, 0) >= 2);
    free(buf);
    ccs_sched_destroy(s);
}

TEST(runtime_comm_threads)
{
    CHECK(sweep("comm_init_threads", op_comm_threads, NULL, 0) >= 2);
}

TEST(runtime_threads_run)
{
    ccs_sched_t *s = fx_ring_allreduce(RUN_RANKS, 2);
    uint8_t *buf = NULL;
    size_t len = 0;
    ccs_plan_t *plan = NULL;
    uint64_t comm_only, total;

    CHECK(s != NULL);
    CHECK_STATUS(ccs_format_encode(s, &buf, &len, NULL), CCS_OK);
    CHECK_STATUS(ccs_plan_load_mem(buf, len, &plan), CCS_OK);

    /* The run must allocate beyond its communicators, or the sweep would
     * not reach the middle of a run. */
    hook_arm(0);
    CHECK_STATUS(op_comm_threads(NULL), CCS_OK);
    comm_only = hook.count;
    hook_disarm();
    total = sweep("threads_run", op_threads_run, plan, 0);
    CHECK_MSG(total > comm_only, "threads_run: %llu allocations, %llu by "
              "the communicators alone", (unsigned long long)total,
              (unsigned long long)comm_only);
    ccs_plan_destroy(plan);
    free(buf);
    ccs_sched_destroy(s);
}

TEST(sched_build_validate_encode)
{
    CHECK(sweep("sched_encode", op_sched_encode, NULL, 0) >= 2);
}

TEST(format_write_file_atomic)
{
    write_case_t wc;
    ccs_sched_t *s = fx_ring_allreduce(4, 2);

    CHECK(s != NULL);
    wc.s = s;
    snprintf(wc.dir, sizeof(wc.dir), "/tmp/ccs-allocfail-XXXXXX");
    CHECK(mkdtemp(wc.dir) != NULL);
    snprintf(wc.path, sizeof(wc.path), "%s/plan.ccs", wc.dir);
    CHECK(sweep("write_file", op_write_file, &wc, 0) >= 1);
    CHECK_EQ_INT(dir_entries(wc.dir), 0);
    rmdir(wc.dir);
    ccs_sched_destroy(s);
}

/* Table: one synthesis path per algorithm module. */
static const synth_case_t synth_cases[] = {
    { "switch:4", "ring", CCS_COLL_ALLREDUCE, 0 },
    { "switch:5", "rhd", CCS_COLL_ALLREDUCE, 0 },
    { "switch:4", "allpairs", CCS_COLL_ALLREDUCE, 0 },
    { "switch:6", "dbtree", CCS_COLL_ALLREDUCE, 0 },
    { "switch:8", "stragglar", CCS_COLL_ALLREDUCE, 0 },
    { "switch:6", "stragglar", CCS_COLL_ALLREDUCE, 0 },
    /* The beam and its dives (threads, snapshots, the matcher inside
     * workers): 40 points spread over the run's allocations. */
    { "switch:63", "stragglar", CCS_COLL_ALLREDUCE, 40 },
    /* The topology-aware builder (servers, lanes, blocks). */
    { "cluster:2x4", "stragglar", CCS_COLL_ALLREDUCE, 40 },
    { "torus:2x2", "multitree", CCS_COLL_ALLGATHER, 0 },
    { "dgx1", "ring", CCS_COLL_REDUCESCATTER, 0 },
    { "mesh:2x3", "multitree", CCS_COLL_ALLREDUCE, 0 },
    /* Each run solves a MILP (0.3 s): 24 points spread over ~900. */
    { "switch:4", "milp", CCS_COLL_ALLREDUCE, 24 },
};

TEST(synth_paths)
{
    for (size_t i = 0; i < sizeof(synth_cases) / sizeof(synth_cases[0]);
         i++) {
        char name[96];
        snprintf(name, sizeof(name), "synth %s %s", synth_cases[i].algo,
                 synth_cases[i].topo);
        CHECK(sweep(name, op_synth, &synth_cases[i],
                    synth_cases[i].points) >= 2);
    }
}

int main(void)
{
    /* Owned by main; allocated before the hook is ever armed. */
    hook.slots = calloc(LIVE_SLOTS, sizeof(*hook.slots));
    if (hook.slots == NULL)
        return 1;
    topo_global_init();
    RUN(runtime_plan_load);
    RUN(runtime_comm_threads);
    RUN(runtime_threads_run);
    RUN(sched_build_validate_encode);
    RUN(format_write_file_atomic);
    RUN(synth_paths);
    free(hook.slots);
    return TEST_SUMMARY();
}
