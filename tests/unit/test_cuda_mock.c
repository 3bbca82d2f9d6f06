/*
 * test_cuda_mock.c - the cuda transport's host logic (mailbox matching,
 * event hand-over, stream ordering, event pool, reference counts, peer
 * copies between devices) on a machine without a GPU, against a fake CUDA
 * runtime defined in this file.
 *
 * The fake replaces the cuda* functions the transport calls (the
 * program's own definitions take precedence over libcudart's) and the
 * kernels (ccs_reduce_cuda / ccs_div_cuda run reduce.c's code).  "Device"
 * memory is host memory.  Streams are queues of deferred operations that
 * run LATE and in a RANDOM interleaving: an operation runs only when some
 * caller synchronises (or, at random, when another operation is enqueued),
 * a stream whose head waits on an event not yet reached is skipped, and
 * among runnable streams one is picked at random.  So a missing
 * cudaStreamWaitEvent, a copy issued on the wrong stream or an event
 * recorded too early shows up as wrong data, and a wait cycle between
 * streams as a reported deadlock.  What it cannot show: real device
 * faults, kernel speed, NCCL.  The real thing is scripts/gpu-check.sh.
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

#include "../../runtime/reduce_cuda.h"

/* ====================== the fake CUDA runtime ====================== */

enum { M_COPY, M_MEMSET, M_RECORD, M_WAIT, M_REDUCE, M_DIV };

typedef struct mop {
    int kind;
    void *dst;
    const void *a, *b;
    size_t n;
    int dt, op;
    uint32_t div;
    int val;                   /* M_MEMSET byte */
    struct mrec *rec;          /* M_RECORD: its record; M_WAIT: the one
                                  it waits for (NULL: none, no wait) */
    struct mop *next;
} mop_t;

struct CUstream_st {
    mop_t *head, *tail;
    int slot;
};

/* One cudaEventRecord.  As in CUDA, a wait or a query concerns the
 * event's most recent record at the time of the call, and recording the
 * event again later (on any stream) does not change what an earlier wait
 * waits for: so each record is its own object, shared (refs) by the
 * event, the record operation and the waits on it. */
struct mrec {
    bool reached;
    int refs;
};

struct CUevent_st {
    struct mrec *last;         /* most recent record, NULL: never */
};

#define M_MAX_STREAMS 512
#define M_NDEV 2

/* The fake's state is process-global, like the real runtime's. */
static pthread_mutex_t m_mu = PTHREAD_MUTEX_INITIALIZER;
static struct CUstream_st *m_streams[M_MAX_STREAMS];
static struct CUstream_st m_null;        /* the legacy default stream */
static uint64_t m_rng = 88172645463325252ull;
static _Thread_local int m_dev;
static int m_deadlocks, m_peer_copies, m_peer_enables;
static size_t m_queries;
static size_t m_ops_run, m_max_depth;

/* Lock held. */
static void m_rec_put(struct mrec *r)
{
    if (r != NULL && --r->refs == 0)
        free(r);
}

static uint64_t m_rand(void)
{
    m_rng ^= m_rng << 13;
    m_rng ^= m_rng >> 7;
    m_rng ^= m_rng << 17;
    return m_rng;
}

static bool m_runnable(const struct CUstream_st *s)
{
    return s->head != NULL &&
           (s->head->kind != M_WAIT || s->head->rec == NULL ||
            s->head->rec->reached);
}

static void m_exec(struct CUstream_st *s)
{
    mop_t *o = s->head;

    s->head = o->next;
    if (s->head == NULL)
        s->tail = NULL;
    switch (o->kind) {
    case M_COPY: memmove(o->dst, o->a, o->n); break;
    case M_MEMSET: memset(o->dst, o->val, o->n); break;
    case M_RECORD: o->rec->reached = true; break;
    case M_REDUCE:
        ccs_reduce_cpu(o->dst, o->a, o->b, o->n, (ccs_dtype_t)o->dt,
                       (ccs_redop_t)o->op);
        break;
    case M_DIV: ccs_reduce_div(o->dst, o->n, (ccs_dtype_t)o->dt, o->div);
        break;
    default: break;
    }
    m_ops_run++;
    m_rec_put(o->rec);
    free(o);
}

/* Run random runnable operations until `until` is empty (NULL: every
 * stream), or `budget` operations ran (budget < 0: no limit).  Lock
 * held. */
static void m_progress(struct CUstream_st *until, long budget)
{
    struct CUstream_st *run[M_MAX_STREAMS + 1];

    for (;;) {
        int n = 0, pending = 0;
        if (budget == 0)
            return;
        if (until != NULL && until->head == NULL)
            return;
        for (int i = 0; i <= M_MAX_STREAMS; i++) {
            struct CUstream_st *s = i < M_MAX_STREAMS ? m_streams[i] : &m_null;
            if (s == NULL || s->head == NULL)
                continue;
            pending++;
            if (m_runnable(s))
                run[n++] = s;
        }
        if (pending == 0)
            return;
        if (n == 0) {
            /* Every wait targets a record already enqueued, so no stream
             * can run only if the streams wait on each other. */
            if (budget < 0)
                m_deadlocks++;
            return;
        }
        m_exec(run[m_rand() % (uint64_t)n]);
        if (budget > 0)
            budget--;
    }
}

/* 0 and cudaStreamLegacy are both the legacy default stream here. */
static struct CUstream_st *m_stream(cudaStream_t s)
{
    return s != NULL && s != cudaStreamLegacy ? s : &m_null;
}

static void m_push(cudaStream_t st, mop_t *o)
{
    struct CUstream_st *s = m_stream(st);
    size_t depth = 1;


    o->next = NULL;
    if (s->tail != NULL)
        s->tail->next = o;
    else
        s->head = o;
    s->tail = o;
    for (mop_t *p = s->head; p != NULL; p = p->next)
        depth++;
    if (depth > m_max_depth)
        m_max_depth = depth;
    /* Now and then some work runs early, interleaved at random. */
    if (m_rand() % 4 == 0)
        m_progress(NULL, (long)(m_rand() % 3));
}

static cudaError_t m_enqueue(cudaStream_t st, int kind, void *dst,
                             const void *a, const void *b, size_t n)
{
    mop_t *o = calloc(1, sizeof(*o));

    if (o == NULL)
        return cudaErrorMemoryAllocation;
    o->kind = kind;
    o->dst = dst;
    o->a = a;
    o->b = b;
    o->n = n;
    pthread_mutex_lock(&m_mu);
    m_push(st, o);
    pthread_mutex_unlock(&m_mu);
    return cudaSuccess;
}

cudaError_t cudaGetDeviceCount(int *count)
{
    *count = M_NDEV;
    return cudaSuccess;
}

cudaError_t cudaGetDevice(int *device)
{
    *device = m_dev;
    return cudaSuccess;
}

cudaError_t cudaSetDevice(int device)
{
    if (device < 0 || device >= M_NDEV)
        return cudaErrorInvalidDevice;
    m_dev = device;
    return cudaSuccess;
}

cudaError_t cudaGetLastError(void)
{
    return cudaSuccess;
}

const char *cudaGetErrorString(cudaError_t error)
{
    return error == cudaSuccess ? "no error" : "fake CUDA error";
}

const char *cudaGetErrorName(cudaError_t error)
{
    return error == cudaSuccess ? "cudaSuccess" : "cudaErrorFake";
}

cudaError_t cudaDeviceCanAccessPeer(int *can, int device, int peer)
{
    *can = device != peer;
    return cudaSuccess;
}

cudaError_t cudaDeviceEnablePeerAccess(int peer, unsigned int flags)
{
    (void)peer;
    (void)flags;
    pthread_mutex_lock(&m_mu);
    m_peer_enables++;
    pthread_mutex_unlock(&m_mu);
    return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize(void)
{
    pthread_mutex_lock(&m_mu);
    m_progress(NULL, -1);
    pthread_mutex_unlock(&m_mu);
    return cudaSuccess;
}

cudaError_t cudaMalloc(void **p, size_t size)
{
    return posix_memalign(p, 256, size ? size : 1) == 0
               ? cudaSuccess : cudaErrorMemoryAllocation;
}

cudaError_t cudaFree(void *p)
{
    cudaDeviceSynchronize();   /* cudaFree waits for the device too */
    free(p);
    return cudaSuccess;
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t n,
                       enum cudaMemcpyKind kind)
{
    (void)kind;
    cudaDeviceSynchronize();
    memmove(dst, src, n);
    return cudaSuccess;
}

/* On device memory cudaMemset is asynchronous to the host: it goes on the
 * legacy default stream, deferred like any other operation. */
cudaError_t cudaMemset(void *dst, int v, size_t n)
{
    return cudaMemsetAsync(dst, v, n, NULL);
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n,
                            enum cudaMemcpyKind kind, cudaStream_t st)
{
    (void)kind;
    return m_enqueue(st, M_COPY, dst, src, NULL, n);
}

cudaError_t cudaMemcpyPeerAsync(void *dst, int ddev, const void *src,
                                int sdev, size_t n, cudaStream_t st)
{
    if (ddev == sdev)
        return cudaErrorInvalidValue;
    pthread_mutex_lock(&m_mu);
    m_peer_copies++;
    pthread_mutex_unlock(&m_mu);
    return m_enqueue(st, M_COPY, dst, src, NULL, n);
}

cudaError_t cudaMemsetAsync(void *dst, int v, size_t n, cudaStream_t st)
{
    mop_t *o = calloc(1, sizeof(*o));

    if (o == NULL)
        return cudaErrorMemoryAllocation;
    o->kind = M_MEMSET;
    o->dst = dst;
    o->n = n;
    o->val = v;
    pthread_mutex_lock(&m_mu);
    m_push(st, o);
    pthread_mutex_unlock(&m_mu);
    return cudaSuccess;
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *out, unsigned int flags)
{
    struct CUstream_st *s = calloc(1, sizeof(*s));
    cudaError_t e = cudaErrorMemoryAllocation;

    (void)flags;
    if (s == NULL)
        return e;
    pthread_mutex_lock(&m_mu);
    for (int i = 0; i < M_MAX_STREAMS; i++) {
        if (m_streams[i] == NULL) {
            m_streams[i] = s;
            s->slot = i;
            *out = s;
            e = cudaSuccess;
            break;
        }
    }
    pthread_mutex_unlock(&m_mu);
    if (e != cudaSuccess)
        free(s);
    return e;
}

cudaError_t cudaStreamDestroy(cudaStream_t s)
{
    pthread_mutex_lock(&m_mu);
    m_progress(s, -1);   /* work already queued still completes */
    if (s->head == NULL) {
        m_streams[s->slot] = NULL;
        free(s);
    }
    pthread_mutex_unlock(&m_mu);
    return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t s)
{
    cudaError_t e = cudaSuccess;

    pthread_mutex_lock(&m_mu);
    m_progress(m_stream(s), -1);
    if (m_stream(s)->head != NULL)
        e = cudaErrorLaunchFailure;    /* deadlocked */
    pthread_mutex_unlock(&m_mu);
    return e;
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *ev, unsigned int flags)
{
    (void)flags;
    *ev = calloc(1, sizeof(**ev));
    return *ev ? cudaSuccess : cudaErrorMemoryAllocation;
}

cudaError_t cudaEventDestroy(cudaEvent_t ev)
{
    cudaDeviceSynchronize();   /* no queued op may still point to it */
    pthread_mutex_lock(&m_mu);
    m_rec_put(ev->last);
    pthread_mutex_unlock(&m_mu);
    free(ev);
    return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t ev, cudaStream_t st)
{
    mop_t *o = calloc(1, sizeof(*o));

    if (o == NULL)
        return cudaErrorMemoryAllocation;
    o->kind = M_RECORD;
    o->rec = calloc(1, sizeof(*o->rec));
    if (o->rec == NULL) {
        free(o);
        return cudaErrorMemoryAllocation;
    }
    o->rec->refs = 2;          /* the operation and the event */
    pthread_mutex_lock(&m_mu);
    m_rec_put(ev->last);
    ev->last = o->rec;
    m_push(st, o);
    pthread_mutex_unlock(&m_mu);
    return cudaSuccess;
}

/* A device makes progress while the host polls it: a query first runs a
 * few queued operations (else a polling loop would spin forever).  An
 * event that no stream can ever reach is a deadlock. */
cudaError_t cudaEventQuery(cudaEvent_t ev)
{
    cudaError_t e = cudaSuccess;

    pthread_mutex_lock(&m_mu);
    m_queries++;
    if (ev->last != NULL && !ev->last->reached)
        m_progress(NULL, 1 + (long)(m_rand() % 4));
    if (ev->last != NULL && !ev->last->reached) {
        bool any = m_runnable(&m_null);
        for (int i = 0; i < M_MAX_STREAMS && !any; i++)
            any = m_streams[i] != NULL && m_runnable(m_streams[i]);
        if (any) {
            e = cudaErrorNotReady;
        } else {
            m_deadlocks++;
            e = cudaErrorLaunchFailure;
        }
    }
    pthread_mutex_unlock(&m_mu);
    return e;
}

cudaError_t cudaStreamWaitEvent(cudaStream_t st, cudaEvent_t ev,
                                unsigned int flags)
{
    mop_t *o = calloc(1, sizeof(*o));

    (void)flags;
    if (o == NULL)
        return cudaErrorMemoryAllocation;
    o->kind = M_WAIT;
    pthread_mutex_lock(&m_mu);
    o->rec = ev->last;         /* the most recent record, as in CUDA */
    if (o->rec != NULL)
        o->rec->refs++;
    m_push(st, o);
    pthread_mutex_unlock(&m_mu);
    return cudaSuccess;
}

/* The kernels: reduce.c's code, deferred on the stream like a launch. */
ccs_status_t ccs_reduce_cuda(void *dst, const void *a, const void *b,
                             size_t n, ccs_dtype_t dtype, ccs_redop_t op,
                             void *stream, ccs_err_t *err)
{
    mop_t *o;

    if (n == 0)
        return CCS_OK;
    o = calloc(1, sizeof(*o));
    if (o == NULL)
        return ccs_err_set(err, CCS_ERR_NOMEM, "fake: out of memory");
    o->kind = M_REDUCE;
    o->dst = dst;
    o->a = a;
    o->b = b;
    o->n = n;
    o->dt = (int)dtype;
    o->op = (int)op;
    pthread_mutex_lock(&m_mu);
    m_push((cudaStream_t)stream, o);
    pthread_mutex_unlock(&m_mu);
    return CCS_OK;
}

ccs_status_t ccs_div_cuda(void *buf, size_t n, ccs_dtype_t dtype,
                          uint32_t divisor, void *stream, ccs_err_t *err)
{
    mop_t *o;

    if (n == 0 || divisor <= 1)
        return CCS_OK;
    o = calloc(1, sizeof(*o));
    if (o == NULL)
        return ccs_err_set(err, CCS_ERR_NOMEM, "fake: out of memory");
    o->kind = M_DIV;
    o->dst = buf;
    o->n = n;
    o->dt = (int)dtype;
    o->div = divisor;
    pthread_mutex_lock(&m_mu);
    m_push((cudaStream_t)stream, o);
    pthread_mutex_unlock(&m_mu);
    return CCS_OK;
}

ccs_status_t ccs_cuda_status(int cuda_error)
{
    return cuda_error == cudaSuccess ? CCS_OK : CCS_ERR_CUDA;
}

/* ====================== the tests ====================== */

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
    CHECK_EQ_INT(m_deadlocks, 0);
}

/* Ranks alternate between two devices: peer copies and peer access. */
TEST(fixtures_two_devices)
{
    static const int devs[MAX_R] = { 0, 1, 0, 1, 1, 0, 1, 0 };
    combo_t c[MAX_COMBOS];
    int nc = matrix(c) / 3;
    fx_entry_t fx[16];
    int n = fx_all(5, fx, 16);
    int copies0 = m_peer_copies;

    CHECK(n > 0);
    for (int i = 0; i < n; i++)
        run_plan(fx[i].name, fx[i].s, devs, c, nc);
    fx_free(fx, n < 0 ? 0 : n);
    CHECK(m_peer_copies > copies0);
    CHECK(m_peer_enables > 0);
    CHECK_EQ_INT(m_deadlocks, 0);
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
    CHECK(m_max_depth > 4);   /* work really was deferred */
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
    size_t queries0 = m_queries;

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
    CHECK(m_queries > queries0);   /* completion per request was used */
    CHECK_EQ_INT(m_deadlocks, 0);
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
    printf("test_cuda_mock: %zu deferred operations run, deepest stream "
           "queue %zu, %d peer copies\n", m_ops_run, m_max_depth,
           m_peer_copies);
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
