/*
 * test_cuda_mock.c - the cuda transport's host logic (mailbox matching,
 * event hand-over, stream ordering, event pool, reference counts, peer
 * copies between devices) on a machine without a GPU, against the fake
 * CUDA runtime of fake_cuda.h (linked before libccs.a by the Makefile).
 *
 * The fake's streams run their work late and in a random interleaving,
 * so a missing cudaStreamWaitEvent, a copy issued on the wrong stream or
 * an event recorded too early shows up here as wrong data, and a wait
 * cycle between streams as a reported deadlock.  What it cannot show:
 * real device faults, kernel code or speed, NCCL.  The real thing is
 * scripts/gpu-check.sh; tests/gpu/test_cuda_xport.c also runs on this
 * fake (build/tests/test_cuda_xport_fake, docs/gpu.md).
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "rt_fixtures.h"
#include "../../runtime/ccs_int.h"
#include "../../runtime/reduce.h"
#include "../../tools/ccs_check.h"

#ifdef CCS_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "fake_cuda.h"

/* The fake's counters now (a snapshot). */
static fake_cuda_stats_t fk(void)
{
    fake_cuda_stats_t s;
    fake_cuda_stats(&s);
    return s;
}

typedef struct combo {
    ccs_dtype_t dt;
    ccs_redop_t op;
    size_t count;
    bool inplace, null_stream;
} combo_t;

#define MAX_R 8
#define MAX_COMBOS 128

typedef struct job {
    const ccs_plan_t *plan;
    ccs_comm_t *comm;
    int rank, R;
    const combo_t *c;
    int nc;
    ccs_status_t st[MAX_COMBOS];
    size_t wrong[MAX_COMBOS];
    char msg[256];
} job_t;

static void *rank_main(void *arg)
{
    job_t *j = arg;
    ccs_coll_t coll = ccs_plan_coll(j->plan);
    int root = ccs_plan_root(j->plan);
    cudaStream_t stream = NULL;

    cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
    for (int k = 0; k < j->nc; k++) {
        const combo_t *c = &j->c[k];
        size_t es = ccs_dtype_size(c->dt);
        size_t in_n = chk_in_elems(coll, j->R, c->count);
        size_t out_n = chk_out_elems(coll, j->R, c->count);
        size_t big = (in_n > out_n ? in_n : out_n) * es;
        uint8_t *a = NULL, *b = NULL, *send, *recv;
        cudaStream_t s = c->null_stream ? NULL : stream;
        size_t off = 0;

        j->st[k] = CCS_ERR_INTERNAL;
        cudaMalloc((void **)&a, big);
        cudaMalloc((void **)&b, big);
        memset(a, 0xA5, big);
        /* Poison the output the way a CUDA program would: on the default
         * stream (deferred) before a NULL-stream run, which must be
         * ordered after it; on the run's own stream otherwise. */
        if (s == NULL)
            cudaMemset(b, 0x5A, big);
        else
            cudaMemsetAsync(b, 0x5A, big, s);
        if (c->inplace && coll == CCS_COLL_ALLGATHER)
            off = (size_t)j->rank * c->count * es;
        chk_fill(coll, c->dt, c->op, j->rank, j->R, root, c->count, a + off);
        send = a + off;
        recv = c->inplace ? a : b;
        if (c->inplace && coll == CCS_COLL_REDUCESCATTER)
            recv = a + (size_t)j->rank * c->count * es;
        j->st[k] = ccs_run(j->plan, j->comm, send, recv, c->count, c->dt,
                           c->op, (void *)s);
        if (j->st[k] == CCS_OK && s != NULL &&
            cudaStreamSynchronize(s) != cudaSuccess)
            j->st[k] = CCS_ERR_CUDA;
        /* Whatever is still queued anywhere runs now: a poison the run
         * was not ordered after would overwrite the result here. */
        cudaDeviceSynchronize();
        if (j->st[k] != CCS_OK)
            snprintf(j->msg, sizeof(j->msg), "%s",
                     ccs_comm_last_error(j->comm));
        else
            j->wrong[k] = chk_wrong(coll, c->dt, c->op, j->rank, j->R, root,
                                    c->count, recv);
        cudaFree(a);
        cudaFree(b);
        if (j->st[k] != CCS_OK)
            break;
    }
    cudaStreamDestroy(stream);
    return NULL;
}

static job_t g_jobs[MAX_R];

/* windows: the issue window of each rank (NULL: 1, step by step). */
static void run_plan_w(const char *name, const ccs_sched_t *s,
                       const int *devices, const combo_t *c, int nc,
                       const unsigned *windows)
{
    ccs_plan_t *plan = NULL;
    ccs_comm_t *comms[MAX_R];
    pthread_t th[MAX_R];
    char msg[256];
    int R = (int)s->nranks, shown = 0;

    if (ccs_plan_from_sched(s, &plan, NULL) != CCS_OK) {
        FAIL_AT("%s: plan", name);
        return;
    }
    if (ccs_comm_init_cuda_msg(R, devices, comms, msg, sizeof(msg)) !=
        CCS_OK) {
        FAIL_AT("%s: init: %s", name, msg);
        ccs_plan_destroy(plan);
        return;
    }
    for (int r = 0; windows != NULL && r < R; r++) {
        ccs_status_t st = ccs_comm_set_issue_window(comms[r], windows[r]);
        CHECK_MSG(st == CCS_OK, "%s: issue window %u on rank %d: %s", name,
                  windows[r], r, ccs_status_name(st));
    }
    for (int r = 0; r < R; r++) {
        memset(&g_jobs[r], 0, sizeof(g_jobs[r]));
        g_jobs[r].plan = plan;
        g_jobs[r].comm = comms[r];
        g_jobs[r].rank = r;
        g_jobs[r].R = R;
        g_jobs[r].c = c;
        g_jobs[r].nc = nc;
        pthread_create(&th[r], NULL, rank_main, &g_jobs[r]);
    }
    for (int r = 0; r < R; r++)
        pthread_join(th[r], NULL);
    for (int r = 0; r < R; r++) {
        for (int k = 0; k < nc && shown < 3; k++) {
            if (g_jobs[r].st[k] != CCS_OK || g_jobs[r].wrong[k] != 0) {
                FAIL_AT("%s rank %d (window %u): %s %s count %zu %s: %s, "
                        "%zu wrong: %s", name, r,
                        windows != NULL ? windows[r] : 1u,
                        ccs_dtype_str(c[k].dt),
                        ccs_redop_str(c[k].op), c[k].count,
                        c[k].inplace ? "in place" : "out of place",
                        ccs_status_name(g_jobs[r].st[k]), g_jobs[r].wrong[k],
                        g_jobs[r].msg);
                shown++;
                break;
            }
        }
        ccs_comm_destroy(comms[r]);
    }
    ccs_plan_destroy(plan);
}

static void run_plan(const char *name, const ccs_sched_t *s,
                     const int *devices, const combo_t *c, int nc)
{
    run_plan_w(name, s, devices, c, nc, NULL);
}

static int matrix(combo_t *c)
{
    static const size_t counts[] = { 1, 7, 1000 };
    int n = 0;
    for (int ci = 0; ci < 3; ci++)
        for (int d = 0; d < CCS_DTYPE_COUNT; d++)
            for (int o = 0; o < CCS_REDOP_COUNT; o += 1 + (d + ci) % 2) {
                c[n].dt = (ccs_dtype_t)d;
                c[n].op = (ccs_redop_t)o;
                c[n].count = counts[ci];
                c[n].inplace = (d + o + ci) % 2 == 1;
                c[n].null_stream = (d + o) % 3 == 0;
                n++;
            }
    return n;
}

/* Every fixture (every collective, op kind, buffer, staging case) on
 * virtual ranks of one device, random stream interleavings. */
TEST(fixtures_one_device)
{
    combo_t c[MAX_COMBOS];
    int nc = matrix(c);

    for (uint32_t R = 2; R <= 4; R++) {
        fx_entry_t fx[16];
        int n = fx_all(R, fx, 16);
        CHECK(n > 0);
        for (int i = 0; i < n; i++)
            run_plan(fx[i].name, fx[i].s, NULL, c, nc);
        fx_free(fx, n < 0 ? 0 : n);
    }
    CHECK_EQ_INT(fk().deadlocks, 0);
}

/* Ranks alternate between two devices: peer copies and peer access. */
TEST(fixtures_two_devices)
{
    static const int devs[MAX_R] = { 0, 1, 0, 1, 1, 0, 1, 0 };
    combo_t c[MAX_COMBOS];
    int nc = matrix(c) / 3;
    fx_entry_t fx[16];
    int n = fx_all(5, fx, 16);
    int copies0 = fk().peer_copies;

    CHECK(n > 0);
    for (int i = 0; i < n; i++)
        run_plan(fx[i].name, fx[i].s, devs, c, nc);
    fx_free(fx, n < 0 ? 0 : n);
    CHECK(fk().peer_copies > copies0);
    CHECK(fk().peer_enables > 0);
    CHECK_EQ_INT(fk().deadlocks, 0);
}

/* Many runs on one world: the event pool and the arena are reused (the
 * arena also grows), nothing leaks into the next run. */
TEST(repeated_runs_reuse)
{
    combo_t c[MAX_COMBOS];
    int nc = 0;
    ccs_sched_t *s = fx_ring_scratch(3);

    for (int k = 0; k < 40 && nc < MAX_COMBOS; k++, nc++) {
        c[nc].dt = (ccs_dtype_t)(k % CCS_DTYPE_COUNT);
        c[nc].op = (ccs_redop_t)(k % CCS_REDOP_COUNT);
        c[nc].count = (size_t)(1 + k * 37);
        c[nc].inplace = k % 2;
        c[nc].null_stream = k % 3 == 0;
    }
    CHECK(s != NULL);
    if (s != NULL)
        run_plan("ring-scratch-repeat", s, NULL, c, nc);
    ccs_sched_destroy(s);
    CHECK(fk().max_depth > 4);   /* work really was deferred */
}

/* Issue windows 2, 4, 8 (exec.c run_flow on ticketed requests): every
 * fixture on one device and on two, and ranks with different windows
 * (a ticketed rank matched with step-by-step ones).  The result must be
 * the reference's, whatever order the fake runs the streams in. */
TEST(fixtures_issue_window)
{
    static const int devs[MAX_R] = { 0, 1, 0, 1, 1, 0, 1, 0 };
    static const unsigned Ws[] = { 2, 4, 8 };
    combo_t c[MAX_COMBOS];
    int nc = matrix(c) / 2;
    size_t queries0 = fk().queries;

    for (uint32_t R = 2; R <= 5; R++) {
        fx_entry_t fx[16];
        int n = fx_all(R, fx, 16);
        CHECK(n > 0);
        for (int i = 0; i < n; i++) {
            for (size_t wi = 0; wi < sizeof(Ws) / sizeof(Ws[0]); wi++) {
                unsigned w[MAX_R];
                char name[960];
                for (int r = 0; r < MAX_R; r++)
                    w[r] = Ws[wi];
                snprintf(name, sizeof(name), "%s W=%u", fx[i].name, Ws[wi]);
                run_plan_w(name, fx[i].s, R == 5 ? devs : NULL, c, nc, w);
            }
            {
                unsigned w[MAX_R];
                char name[960];
                for (int r = 0; r < MAX_R; r++)
                    w[r] = r % 2 ? 1u : 4u;
                snprintf(name, sizeof(name), "%s W=4/1 mixed", fx[i].name);
                run_plan_w(name, fx[i].s, NULL, c, nc / 2, w);
            }
        }
        fx_free(fx, n < 0 ? 0 : n);
    }
    CHECK(fk().queries > queries0);   /* completion per request was used */
    CHECK_EQ_INT(fk().deadlocks, 0);
}

typedef struct bad_job {
    const ccs_plan_t *plan;
    ccs_comm_t *comm;
    size_t count;
    ccs_status_t st;
} bad_job_t;

static void *bad_rank(void *arg)
{
    bad_job_t *j = arg;
    size_t n = 3 * j->count + 64;
    float *a = NULL, *b = NULL;

    cudaMalloc((void **)&a, n * sizeof(float));
    cudaMalloc((void **)&b, n * sizeof(float));
    memset(a, 0, n * sizeof(float));
    j->st = ccs_run(j->plan, j->comm, a, b, j->count, CCS_FLOAT32, CCS_SUM,
                    NULL);
    cudaDeviceSynchronize();
    cudaFree(a);
    cudaFree(b);
    return NULL;
}

/* With a window, ranks that make different calls (different counts, so
 * different message sizes) fail with a mismatch or are woken by the
 * failing rank's abort; none waits until the timeout. */
TEST(issue_window_mismatch_fails)
{
    ccs_sched_t *s = fx_ring_scratch(3);
    ccs_plan_t *plan = NULL;
    ccs_comm_t *comms[3];
    bad_job_t jobs[3];
    pthread_t th[3];
    int mismatches = 0;

    CHECK(s != NULL);
    if (s == NULL || ccs_plan_from_sched(s, &plan, NULL) != CCS_OK) {
        ccs_sched_destroy(s);
        return;
    }
    CHECK_STATUS(ccs_comm_init_cuda(3, NULL, comms), CCS_OK);
    for (int r = 0; r < 3; r++) {
        CHECK_STATUS(ccs_comm_set_issue_window(comms[r], 4), CCS_OK);
        jobs[r].plan = plan;
        jobs[r].comm = comms[r];
        jobs[r].count = 1000 + 100 * (size_t)r;
        jobs[r].st = CCS_OK;
        pthread_create(&th[r], NULL, bad_rank, &jobs[r]);
    }
    for (int r = 0; r < 3; r++)
        pthread_join(th[r], NULL);
    for (int r = 0; r < 3; r++) {
        CHECK_MSG(jobs[r].st == CCS_ERR_MISMATCH ||
                      jobs[r].st == CCS_ERR_TRANSPORT,
                  "rank %d: %s (%s)", r, ccs_status_name(jobs[r].st),
                  ccs_comm_last_error(comms[r]));
        mismatches += jobs[r].st == CCS_ERR_MISMATCH;
        ccs_comm_destroy(comms[r]);
    }
    CHECK(mismatches > 0);
    ccs_plan_destroy(plan);
    ccs_sched_destroy(s);
}

#endif /* CCS_HAVE_CUDA */

int main(void)
{
#ifdef CCS_HAVE_CUDA
    setenv("CCS_TIMEOUT_S", "30", 0);
    RUN(fixtures_one_device);
    RUN(fixtures_two_devices);
    RUN(repeated_runs_reuse);
    RUN(fixtures_issue_window);
    RUN(issue_window_mismatch_fails);
    {
        fake_cuda_stats_t s = fk();
        printf("test_cuda_mock: %zu deferred operations run, deepest "
               "stream queue %zu, %d peer copies\n", s.ops_run, s.max_depth,
               s.peer_copies);
    }
#else
    /* Nothing to fake without CUDA: the entry points say so. */
    harness_cur_name = "built_without_cuda";
    {
        ccs_comm_t *c[2];
        CHECK_STATUS(ccs_comm_init_cuda(2, NULL, c), CCS_ERR_UNSUPPORTED);
        harness_passed++;
    }
#endif
    return TEST_SUMMARY();
}
