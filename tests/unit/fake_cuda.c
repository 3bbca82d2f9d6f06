/*
 * fake_cuda.c - the fake CUDA runtime of fake_cuda.h: what it models, what
 * it cannot show and how a program links it are described there.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "fake_cuda.h"
#include "../../runtime/ccs_int.h"
#include "../../runtime/reduce.h"
#include "../../runtime/reduce_cuda.h"

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
    bool blocking;             /* made without cudaStreamNonBlocking */
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
#define M_NDEV FAKE_CUDA_NDEV

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

/* A plain cudaMemcpy goes on the legacy default stream: it follows what
 * is queued there and on the blocking streams, NOT what is queued on
 * non-blocking streams (CUDA's legacy default stream semantics).  So it
 * runs only those queues before copying: a program that reads a result
 * still being written on a non-blocking stream it did not synchronise
 * (such as a NULL-stream run that returned too early) reads stale data
 * here, as it could on a device. */
cudaError_t cudaMemcpy(void *dst, const void *src, size_t n,
                       enum cudaMemcpyKind kind)
{
    cudaError_t e = cudaSuccess;

    (void)kind;
    pthread_mutex_lock(&m_mu);
    m_progress(&m_null, -1);
    for (int i = 0; i < M_MAX_STREAMS; i++)
        if (m_streams[i] != NULL && m_streams[i]->blocking)
            m_progress(m_streams[i], -1);
    if (m_null.head != NULL)
        e = cudaErrorLaunchFailure;    /* deadlocked */
    for (int i = 0; i < M_MAX_STREAMS && e == cudaSuccess; i++)
        if (m_streams[i] != NULL && m_streams[i]->blocking &&
            m_streams[i]->head != NULL)
            e = cudaErrorLaunchFailure;
    pthread_mutex_unlock(&m_mu);
    if (e == cudaSuccess)
        memmove(dst, src, n);
    return e;
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

    if (s == NULL)
        return e;
    s->blocking = (flags & cudaStreamNonBlocking) == 0;
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

void fake_cuda_stats(fake_cuda_stats_t *out)
{
    pthread_mutex_lock(&m_mu);
    out->ops_run = m_ops_run;
    out->max_depth = m_max_depth;
    out->queries = m_queries;
    out->deadlocks = m_deadlocks;
    out->peer_copies = m_peer_copies;
    out->peer_enables = m_peer_enables;
    pthread_mutex_unlock(&m_mu);
}

/* Only the name is meaningful: a program that prints the device it runs
 * on says it is the fake. */
cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *prop, int device)
{
    if (device < 0 || device >= M_NDEV)
        return cudaErrorInvalidDevice;
    memset(prop, 0, sizeof(*prop));
    snprintf(prop->name, sizeof(prop->name), "fake CUDA device %d (host "
             "memory, no GPU)", device);
    return cudaSuccess;
}
