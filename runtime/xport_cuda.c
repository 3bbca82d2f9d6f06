/*
 * xport_cuda.c - the cuda transport: one process drives several GPUs, or
 * several virtual ranks on one GPU.  Ranks are host threads of one
 * "world" (as in the threads transport), each with its own device and
 * stream.  Also home of the hooks both GPU transports share (xport_gpu.h).
 *
 * A transfer src -> dst is one device copy enqueued on the RECEIVER's
 * stream, ordered against both streams with two CUDA events that change
 * hands through a host-side mailbox:
 *
 *   sender, send():    record READY on its stream (the data is there once
 *                      everything before it on that stream ran); post a
 *                      message {src pointer, bytes, READY} on the FIFO of
 *                      the pair (src, dst).
 *   receiver, wait():  for each of its receives, in order, take the next
 *                      message of the pair (waiting on the host for the
 *                      sender to post it); cudaStreamWaitEvent(READY);
 *                      enqueue the copy (cudaMemcpyAsync on one device,
 *                      cudaMemcpyPeerAsync between devices); record DONE;
 *                      hand DONE back in the message.
 *   sender, wait():    for each of its sends, wait on the host until the
 *                      receiver handed DONE back; cudaStreamWaitEvent(DONE),
 *                      so later writes to the send buffer follow the copy.
 *
 * So wait() only enqueues: nothing waits on the GPU from the host, and
 * every hook the executor calls after wait() sees the received bytes in
 * stream order (the contract of xport.h).  Receives are handled before
 * sends in wait(): a receive needs only its sender's post, which every
 * rank makes before it waits, so no cycle of ranks can block (a sender
 * waiting for DONE waits for a receiver that is itself past its posts).
 *
 * Events: each rank keeps a grow-only pool of events (timing disabled) in
 * the world.  A slot is busy from its record until the peer has called
 * cudaStreamWaitEvent on it (which captures the event's state at that
 * moment, so it may be recorded again afterwards); the peer then clears
 * `busy`.  Messages are counted twice (sender and receiver) and freed by
 * the last; the world frees what is left in the FIFOs.
 *
 * Failure: a failing rank sets the world's abort flag and wakes every
 * rank; ranks blocked in wait() return CCS_ERR_TRANSPORT.  CCS_TIMEOUT_S
 * bounds host waits (CCS_ERR_TIMEOUT).
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "reduce_cuda.h"
#include "xport_gpu.h"

/* ================= hooks shared by the GPU transports ================= */

ccs_status_t ccs_gpu_fail(ccs_err_t *err, cudaError_t e, const char *fmt,
                          ...)
{
    char what[256];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    return ccs_err_set(err, ccs_cuda_status((int)e), "%s: %s (%s)", what,
                       cudaGetErrorString(e), cudaGetErrorName(e));
}

void ccs_gpu_copy_msg(const ccs_err_t *err, ccs_status_t st, char *msg,
                      size_t msglen)
{
    if (msg != NULL && msglen > 0)
        snprintf(msg, msglen, "%s", ccs_err_msg(err, st));
}

ccs_status_t ccs_gpu_device_count(const char *who, int *out, ccs_err_t *err)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);

    if (e != cudaSuccess) {
        ccs_status_t st = ccs_cuda_status((int)e);
        /* Whatever the runtime says, without a device count there is no
         * device we could use. */
        (void)cudaGetLastError();
        return ccs_err_set(err, st == CCS_ERR_CUDA ? CCS_ERR_NO_DEVICE : st,
                           "%s: no CUDA device (cudaGetDeviceCount: %s, %s)",
                           who, cudaGetErrorString(e), cudaGetErrorName(e));
    }
    if (n <= 0)
        return ccs_err_set(err, CCS_ERR_NO_DEVICE,
                           "%s: no CUDA device (cudaGetDeviceCount: 0 "
                           "devices)", who);
    *out = n;
    return CCS_OK;
}

/* Make `dev` current for a call outside a run; *prev gets the old one. */
static cudaError_t dev_enter(int dev, int *prev)
{
    cudaError_t e = cudaGetDevice(prev);

    if (e != cudaSuccess)
        return e;
    return *prev == dev ? cudaSuccess : cudaSetDevice(dev);
}

static void dev_leave(int dev, int prev)
{
    if (prev != dev)
        (void)cudaSetDevice(prev);
}

ccs_status_t ccs_gpu_mem_alloc(ccs_xport_t *x, size_t bytes, void **out,
                               ccs_err_t *err)
{
    ccs_gpu_base_t *b = (ccs_gpu_base_t *)x;
    void *p = NULL;
    int prev = b->device;
    cudaError_t e = dev_enter(b->device, &prev);

    if (e == cudaSuccess)
        e = cudaMalloc(&p, bytes ? bytes : 256); /* 256-byte aligned */
    dev_leave(b->device, prev);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        if (e == cudaErrorMemoryAllocation)
            return ccs_err_set(err, CCS_ERR_NOMEM,
                               "%s: cudaMalloc of %zu bytes of scratch on "
                               "device %d: %s", b->who, bytes, b->device,
                               cudaGetErrorString(e));
        return ccs_gpu_fail(err, e, "%s: cudaMalloc of %zu bytes on device "
                            "%d", b->who, bytes, b->device);
    }
    *out = p;
    return CCS_OK;
}

void ccs_gpu_mem_free(ccs_xport_t *x, void *p)
{
    ccs_gpu_base_t *b = (ccs_gpu_base_t *)x;
    int prev = b->device;

    if (p == NULL)
        return;
    /* The arena may still be in use by work in flight: a run on a
     * caller's stream returns before it is done, and a peer's copy out of
     * our staging runs on the peer's stream.  Freeing is rare (the arena
     * only grows, and goes at destroy), so simply wait for the device. */
    if (dev_enter(b->device, &prev) == cudaSuccess) {
        (void)cudaDeviceSynchronize();
        (void)cudaFree(p);
    }
    dev_leave(b->device, prev);
    (void)cudaGetLastError();
}

ccs_status_t ccs_gpu_copy(ccs_xport_t *x, void *dst, const void *src,
                          size_t bytes, ccs_err_t *err)
{
    ccs_gpu_base_t *b = (ccs_gpu_base_t *)x;
    cudaError_t e;

    if (dst == src || bytes == 0)
        return CCS_OK;
    /* cudaMemcpyDefault: the pointers say where they live (UVA), so
     * managed or pinned host buffers work too. */
    e = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, b->stream);
    if (e != cudaSuccess)
        return ccs_gpu_fail(err, e, "%s: copy of %zu bytes on device %d",
                            b->who, bytes, b->device);
    return CCS_OK;
}

ccs_status_t ccs_gpu_memset0(ccs_xport_t *x, void *dst, size_t bytes,
                             ccs_err_t *err)
{
    ccs_gpu_base_t *b = (ccs_gpu_base_t *)x;
    cudaError_t e;

    if (bytes == 0)
        return CCS_OK;
    e = cudaMemsetAsync(dst, 0, bytes, b->stream);
    if (e != cudaSuccess)
        return ccs_gpu_fail(err, e, "%s: memset of %zu bytes on device %d",
                            b->who, bytes, b->device);
    return CCS_OK;
}

ccs_status_t ccs_gpu_reduce(ccs_xport_t *x, void *dst, const void *a,
                            const void *b, size_t n, ccs_dtype_t dtype,
                            ccs_redop_t op, ccs_err_t *err)
{
    ccs_gpu_base_t *g = (ccs_gpu_base_t *)x;
    return ccs_reduce_cuda(dst, a, b, n, dtype, op, (void *)g->stream, err);
}

ccs_status_t ccs_gpu_div(ccs_xport_t *x, void *buf, size_t n,
                         ccs_dtype_t dtype, uint32_t divisor, ccs_err_t *err)
{
    ccs_gpu_base_t *g = (ccs_gpu_base_t *)x;
    return ccs_div_cuda(buf, n, dtype, divisor, (void *)g->stream, err);
}

ccs_status_t ccs_gpu_run_begin(ccs_gpu_base_t *b, void *stream,
                               ccs_err_t *err)
{
    cudaError_t e = dev_enter(b->device, &b->prev_device);

    if (e != cudaSuccess) {
        b->prev_device = b->device;
        return ccs_gpu_fail(err, e, "%s: cannot make device %d current",
                            b->who, b->device);
    }
    b->sync_at_end = stream == NULL;
    b->stream = stream ? (cudaStream_t)stream : b->own;
    if (stream == NULL) {
        /* Like an NCCL call on stream 0: after what the caller enqueued
         * on the default stream (xport_gpu.h). */
        if (b->dflt_ev == NULL)
            e = cudaEventCreateWithFlags(&b->dflt_ev,
                                         cudaEventDisableTiming);
        if (e == cudaSuccess)
            e = cudaEventRecord(b->dflt_ev, cudaStreamLegacy);
        if (e == cudaSuccess)
            e = cudaStreamWaitEvent(b->own, b->dflt_ev, 0);
        if (e != cudaSuccess) {
            dev_leave(b->device, b->prev_device);
            b->prev_device = b->device;
            return ccs_gpu_fail(err, e, "%s: ordering the internal stream "
                                "of device %d after the default stream",
                                b->who, b->device);
        }
    }
    return CCS_OK;
}

void ccs_gpu_base_fini(ccs_gpu_base_t *b)
{
    int prev = b->device;

    if (b->dflt_ev == NULL)
        return;
    if (dev_enter(b->device, &prev) == cudaSuccess)
        (void)cudaEventDestroy(b->dflt_ev);
    dev_leave(b->device, prev);
    (void)cudaGetLastError();
    b->dflt_ev = NULL;
}

ccs_status_t ccs_gpu_run_end(ccs_gpu_base_t *b, ccs_err_t *err)
{
    ccs_status_t st = CCS_OK;

    if (b->sync_at_end) {
        cudaError_t e = cudaStreamSynchronize(b->stream);
        if (e != cudaSuccess)
            st = ccs_gpu_fail(err, e, "%s: synchronising the internal "
                              "stream of device %d", b->who, b->device);
    }
    dev_leave(b->device, b->prev_device);
    b->prev_device = b->device;
    return st;
}

/* ========================= the cuda transport ========================= */

enum { MSG_POSTED = 0, MSG_DONE = 1, MSG_FAILED = 2 };

typedef struct cx_slot {
    cudaEvent_t ev;
    atomic_int busy;         /* recorded, the peer has not waited yet */
} cx_slot_t;

typedef struct cx_msg {
    struct cx_msg *next;     /* FIFO link (dst's mutex) */
    const void *src;         /* sender's bytes (device memory) */
    size_t bytes;
    uint32_t step;
    uint32_t dst_rank;
    int src_dev;
    cx_slot_t *ready;        /* sender's slot: data ready */
    cx_slot_t *done;         /* receiver's slot: copy finished */
    int state;               /* MSG_*; sender's mutex */
    atomic_int refs;         /* sender + receiver; last one frees */
} cx_msg_t;

typedef struct cx_rank {
    pthread_mutex_t mu;      /* FIFOs into this rank, states of its sends */
    pthread_cond_t cv;       /* only this rank's thread waits on it */
    int device;
    cudaStream_t own;        /* internal stream; owned */
    cx_slot_t **slots;       /* owned; event pool of this rank */
    size_t nslots, next;
    char pad[64];            /* keep ranks' locks apart */
} cx_rank_t;

typedef struct cx_fifo {
    cx_msg_t *head, *tail;
} cx_fifo_t;

typedef struct cx_world {
    int nranks;
    atomic_int refs;         /* communicators alive */
    atomic_int aborted;
    long timeout_ms;         /* 0: wait forever */
    cx_rank_t *ranks;        /* owned; [nranks] */
    cx_fifo_t *fifos;        /* owned; [src * nranks + dst] */
} cx_world_t;

typedef struct cx_recv {
    void *dst;
    size_t bytes;
    uint32_t peer, step;
} cx_recv_t;

struct ccs_xport {
    ccs_gpu_base_t base;     /* first: the shared hooks cast to it */
    cx_world_t *w;
    int rank;
    cx_recv_t *recvs;        /* owned; this step's receives */
    size_t nrecv, caprecv;
    cx_msg_t **sends;        /* owned array; this step's sends */
    size_t nsend, capsend;
};

static long env_long(const char *name, long dflt)
{
    const char *v = getenv(name);
    char *end;
    long x;

    if (v == NULL || *v == '\0')
        return dflt;
    x = strtol(v, &end, 10);
    return (*end == '\0' && x >= 0) ? x : dflt;
}

static void msg_put(cx_msg_t *m)
{
    if (atomic_fetch_sub(&m->refs, 1) == 1)
        free(m);
}

static void world_free(cx_world_t *w)
{
    int prev = 0;

    if (w == NULL)
        return;
    (void)cudaGetDevice(&prev);
    if (w->fifos != NULL) {
        for (size_t i = 0; i < (size_t)w->nranks * w->nranks; i++) {
            cx_msg_t *m = w->fifos[i].head;
            while (m != NULL) {
                cx_msg_t *n = m->next;
                free(m);     /* never taken: only the FIFO holds it now */
                m = n;
            }
        }
    }
    if (w->ranks != NULL) {
        for (int r = 0; r < w->nranks; r++) {
            cx_rank_t *k = &w->ranks[r];
            (void)cudaSetDevice(k->device);
            for (size_t i = 0; i < k->nslots; i++) {
                (void)cudaEventDestroy(k->slots[i]->ev);
                free(k->slots[i]);
            }
            free(k->slots);
            if (k->own != NULL)
                (void)cudaStreamDestroy(k->own);
            pthread_mutex_destroy(&k->mu);
            pthread_cond_destroy(&k->cv);
        }
    }
    (void)cudaSetDevice(prev);
    (void)cudaGetLastError();
    free(w->fifos);
    free(w->ranks);
    free(w);
}

/* A free event slot of this rank (its thread only; device current). */
static ccs_status_t slot_take(ccs_xport_t *x, cx_slot_t **out,
                              ccs_err_t *err)
{
    cx_rank_t *me = &x->w->ranks[x->rank];
    cx_slot_t *s, **n;
    cudaError_t e;

    for (size_t k = 0; k < me->nslots; k++) {
        size_t i = (me->next + k) % me->nslots;
        if (atomic_load_explicit(&me->slots[i]->busy,
                                 memory_order_acquire) == 0) {
            atomic_store_explicit(&me->slots[i]->busy, 1,
                                  memory_order_relaxed);
            me->next = i + 1;
            *out = me->slots[i];
            return CCS_OK;
        }
    }
    n = realloc(me->slots, (me->nslots + 1) * sizeof(*n));
    if (n == NULL)
        return ccs_err_set(err, CCS_ERR_NOMEM, "out of memory");
    me->slots = n;
    s = calloc(1, sizeof(*s));   /* owned by the pool */
    if (s == NULL)
        return ccs_err_set(err, CCS_ERR_NOMEM, "out of memory");
    e = cudaEventCreateWithFlags(&s->ev, cudaEventDisableTiming);
    if (e != cudaSuccess) {
        free(s);
        return ccs_gpu_fail(err, e, "cuda transport: cudaEventCreate on "
                            "device %d", me->device);
    }
    atomic_store(&s->busy, 1);
    me->slots[me->nslots++] = s;
    me->next = 0;
    *out = s;
    return CCS_OK;
}

static void deadline_in(long ms, struct timespec *t)
{
    clock_gettime(CLOCK_REALTIME, t);
    t->tv_sec += ms / 1000;
    t->tv_nsec += (ms % 1000) * 1000000L;
    if (t->tv_nsec >= 1000000000L) {
        t->tv_sec++;
        t->tv_nsec -= 1000000000L;
    }
}

/* Sleep on this rank's condition variable (mutex held); false after the
 * deadline. */
static bool sleep_once(cx_world_t *w, cx_rank_t *me,
                       const struct timespec *deadline)
{
    if (w->timeout_ms <= 0) {
        pthread_cond_wait(&me->cv, &me->mu);
        return true;
    }
    return pthread_cond_timedwait(&me->cv, &me->mu, deadline) != ETIMEDOUT;
}

static ccs_status_t cx_send(ccs_xport_t *x, uint32_t peer, const void *buf,
                            size_t bytes, uint32_t step, uint32_t seq,
                            ccs_err_t *err)
{
    cx_world_t *w = x->w;
    cx_rank_t *dst = &w->ranks[peer];
    cx_fifo_t *f = &w->fifos[(size_t)x->rank * w->nranks + peer];
    cx_slot_t *ready = NULL;
    cx_msg_t *m;
    ccs_status_t st;
    cudaError_t e;

    (void)seq;
    if (atomic_load(&w->aborted))
        return ccs_err_set(err, CCS_ERR_TRANSPORT,
                           "another rank failed; the world is aborted");
    if (x->nsend == x->capsend) {
        size_t cap = x->capsend ? 2 * x->capsend : 8;
        cx_msg_t **n = realloc(x->sends, cap * sizeof(*n));
        if (n == NULL)
            return ccs_err_set(err, CCS_ERR_NOMEM, "out of memory");
        x->sends = n;
        x->capsend = cap;
    }
    if ((st = slot_take(x, &ready, err)) != CCS_OK)
        return st;
    e = cudaEventRecord(ready->ev, x->base.stream);
    if (e != cudaSuccess) {
        atomic_store(&ready->busy, 0);
        return ccs_gpu_fail(err, e, "cuda transport: send of %zu bytes to "
                            "rank %u: cudaEventRecord", bytes, peer);
    }
    m = calloc(1, sizeof(*m));   /* shared by sender and receiver (refs) */
    if (m == NULL) {
        atomic_store(&ready->busy, 0);
        return ccs_err_set(err, CCS_ERR_NOMEM, "out of memory");
    }
    m->src = buf;
    m->bytes = bytes;
    m->step = step;
    m->dst_rank = peer;
    m->src_dev = x->base.device;
    m->ready = ready;
    m->state = MSG_POSTED;
    atomic_store(&m->refs, 2);
    x->sends[x->nsend++] = m;
    pthread_mutex_lock(&dst->mu);
    if (f->tail != NULL)
        f->tail->next = m;
    else
        f->head = m;
    f->tail = m;
    pthread_cond_broadcast(&dst->cv);
    pthread_mutex_unlock(&dst->mu);
    return CCS_OK;
}

static ccs_status_t cx_recv(ccs_xport_t *x, uint32_t peer, void *buf,
                            size_t bytes, uint32_t step, uint32_t seq,
                            ccs_err_t *err)
{
    (void)seq;
    if (x->nrecv == x->caprecv) {
        size_t cap = x->caprecv ? 2 * x->caprecv : 8;
        cx_recv_t *n = realloc(x->recvs, cap * sizeof(*n));
        if (n == NULL)
            return ccs_err_set(err, CCS_ERR_NOMEM, "out of memory");
        x->recvs = n;
        x->caprecv = cap;
    }
    x->recvs[x->nrecv].dst = buf;
    x->recvs[x->nrecv].bytes = bytes;
    x->recvs[x->nrecv].peer = peer;
    x->recvs[x->nrecv].step = step;
    x->nrecv++;
    return CCS_OK;
}

/* Tell the sender of m how its message ended (under the sender's lock). */
static void msg_finish(cx_world_t *w, cx_msg_t *m, uint32_t sender,
                       int state)
{
    cx_rank_t *s = &w->ranks[sender];

    pthread_mutex_lock(&s->mu);
    m->state = state;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

static ccs_status_t abort_or_timeout(cx_world_t *w, ccs_err_t *err,
                                     const char *what, uint32_t peer,
                                     uint32_t step)
{
    if (atomic_load(&w->aborted))
        return ccs_err_set(err, CCS_ERR_TRANSPORT,
                           "another rank failed; the world is aborted");
    return ccs_err_set(err, CCS_ERR_TIMEOUT,
                       "%s rank %u (step %u) not matched after %ld ms "
                       "(CCS_TIMEOUT_S): did every rank make the same call?",
                       what, peer, step, w->timeout_ms);
}

/* One receive: take the sender's message, order the copy on our stream. */
static ccs_status_t complete_recv(ccs_xport_t *x, const cx_recv_t *rv,
                                  const struct timespec *deadline,
                                  ccs_err_t *err)
{
    cx_world_t *w = x->w;
    cx_rank_t *me = &w->ranks[x->rank];
    cx_fifo_t *f = &w->fifos[(size_t)rv->peer * w->nranks + x->rank];
    cudaStream_t st = x->base.stream;
    cx_slot_t *done = NULL;
    cx_msg_t *m;
    ccs_status_t s;
    cudaError_t e;

    pthread_mutex_lock(&me->mu);
    while (f->head == NULL && !atomic_load(&w->aborted))
        if (!sleep_once(w, me, deadline))
            break;
    m = f->head;
    if (m != NULL) {
        f->head = m->next;
        if (f->head == NULL)
            f->tail = NULL;
    }
    pthread_mutex_unlock(&me->mu);
    if (m == NULL)
        return abort_or_timeout(w, err, "receive from", rv->peer, rv->step);
    if (m->bytes != rv->bytes) {
        s = ccs_err_set(err, CCS_ERR_MISMATCH,
                        "step %u: receive of %zu bytes from rank %u matched "
                        "a send of %zu bytes (posted in step %u): the ranks "
                        "made different calls", rv->step, rv->bytes,
                        rv->peer, m->bytes, m->step);
        atomic_store_explicit(&m->ready->busy, 0, memory_order_release);
        msg_finish(w, m, rv->peer, MSG_FAILED);
        msg_put(m);
        return s;
    }
    e = cudaStreamWaitEvent(st, m->ready->ev, 0);
    /* The wait captured the event's state: the sender may record it
     * again. */
    atomic_store_explicit(&m->ready->busy, 0, memory_order_release);
    if (e == cudaSuccess) {
        if (m->src_dev == x->base.device)
            e = cudaMemcpyAsync(rv->dst, m->src, rv->bytes,
                                cudaMemcpyDeviceToDevice, st);
        else
            e = cudaMemcpyPeerAsync(rv->dst, x->base.device, m->src,
                                    m->src_dev, rv->bytes, st);
    }
    if (e == cudaSuccess) {
        if ((s = slot_take(x, &done, err)) != CCS_OK) {
            msg_finish(w, m, rv->peer, MSG_FAILED);
            msg_put(m);
            return s;
        }
        e = cudaEventRecord(done->ev, st);
    }
    if (e != cudaSuccess) {
        if (done != NULL)
            atomic_store(&done->busy, 0);
        msg_finish(w, m, rv->peer, MSG_FAILED);
        msg_put(m);
        return ccs_gpu_fail(err, e, "cuda transport: step %u: receive of "
                            "%zu bytes from rank %u (device %d -> %d)",
                            rv->step, rv->bytes, rv->peer, m->src_dev,
                            x->base.device);
    }
    m->done = done;
    msg_finish(w, m, rv->peer, MSG_DONE);
    msg_put(m);
    return CCS_OK;
}

/* One send: wait until the receiver enqueued its copy, order our stream
 * after it. */
static ccs_status_t complete_send(ccs_xport_t *x, cx_msg_t *m,
                                  const struct timespec *deadline,
                                  ccs_err_t *err)
{
    uint32_t peer = m->dst_rank;
    cx_world_t *w = x->w;
    cx_rank_t *me = &w->ranks[x->rank];
    int state;
    cudaError_t e;

    pthread_mutex_lock(&me->mu);
    while (m->state == MSG_POSTED && !atomic_load(&w->aborted))
        if (!sleep_once(w, me, deadline))
            break;
    state = m->state;
    pthread_mutex_unlock(&me->mu);
    if (state == MSG_POSTED)
        return abort_or_timeout(w, err, "send to", peer, m->step);
    if (state == MSG_FAILED)
        return ccs_err_set(err, CCS_ERR_MISMATCH,
                           "step %u: the receiver of a %zu-byte send to "
                           "rank %u failed (size mismatch or CUDA error)",
                           m->step, m->bytes, peer);
    e = cudaStreamWaitEvent(x->base.stream, m->done->ev, 0);
    atomic_store_explicit(&m->done->busy, 0, memory_order_release);
    if (e != cudaSuccess)
        return ccs_gpu_fail(err, e, "cuda transport: step %u: ordering "
                            "after the send of %zu bytes to rank %u",
                            m->step, m->bytes, peer);
    return CCS_OK;
}

static ccs_status_t cx_wait(ccs_xport_t *x, ccs_err_t *err)
{
    struct timespec deadline = { 0, 0 };
    ccs_status_t st = CCS_OK;

    if (x->w->timeout_ms > 0)
        deadline_in(x->w->timeout_ms, &deadline);
    /* Receives first: they need only posts, which every rank makes before
     * it waits (see the top comment). */
    for (size_t i = 0; i < x->nrecv && st == CCS_OK; i++)
        st = complete_recv(x, &x->recvs[i], &deadline, err);
    x->nrecv = 0;
    for (size_t i = 0; i < x->nsend; i++) {
        if (st == CCS_OK)
            st = complete_send(x, x->sends[i], &deadline, err);
        msg_put(x->sends[i]);  /* the sender's reference */
    }
    x->nsend = 0;
    return st;
}

static ccs_status_t cx_run_begin(ccs_xport_t *x, void *stream,
                                 ccs_err_t *err)
{
    x->nrecv = 0;
    x->nsend = 0;
    return ccs_gpu_run_begin(&x->base, stream, err);
}

static ccs_status_t cx_run_end(ccs_xport_t *x, ccs_err_t *err)
{
    return ccs_gpu_run_end(&x->base, err);
}

static void cx_abort(ccs_xport_t *x)
{
    cx_world_t *w = x->w;

    atomic_store(&w->aborted, 1);
    for (int r = 0; r < w->nranks; r++) {
        pthread_mutex_lock(&w->ranks[r].mu);
        pthread_cond_broadcast(&w->ranks[r].cv);
        pthread_mutex_unlock(&w->ranks[r].mu);
    }
}

static void cx_destroy(ccs_xport_t *x)
{
    if (x == NULL)
        return;
    for (size_t i = 0; i < x->nsend; i++)
        msg_put(x->sends[i]);
    free(x->sends);
    free(x->recvs);
    ccs_gpu_base_fini(&x->base);
    if (atomic_fetch_sub(&x->w->refs, 1) == 1)
        world_free(x->w);
    free(x);
}

static const ccs_xport_ops_t cuda_ops = {
    .name = "cuda",
    .device_mem = true,
    .mem_alloc = ccs_gpu_mem_alloc,
    .mem_free = ccs_gpu_mem_free,
    .copy = ccs_gpu_copy,
    .memset0 = ccs_gpu_memset0,
    .reduce = ccs_gpu_reduce,
    .div = ccs_gpu_div,
    .run_begin = cx_run_begin,
    .run_end = cx_run_end,
    .group_begin = ccs_cpu_group_begin,   /* nothing to group */
    .recv = cx_recv,
    .send = cx_send,
    .group_end = ccs_cpu_nop,
    .wait = cx_wait,
    .abort = cx_abort,
    .destroy = cx_destroy,
};

/* Let every pair of distinct devices in use copy directly where the
 * hardware allows (NVLink / PCIe P2P); cudaMemcpyPeerAsync works without
 * it too, through the host.  Peer access is a property of the process's
 * contexts: enabling it twice is harmless. */
static void enable_peers(const cx_world_t *w)
{
    for (int i = 0; i < w->nranks; i++) {
        for (int j = 0; j < w->nranks; j++) {
            int di = w->ranks[i].device, dj = w->ranks[j].device, can = 0;
            if (di == dj)
                continue;
            if (cudaDeviceCanAccessPeer(&can, di, dj) == cudaSuccess && can &&
                cudaSetDevice(di) == cudaSuccess)
                (void)cudaDeviceEnablePeerAccess(dj, 0);
            (void)cudaGetLastError(); /* "already enabled" is fine */
        }
    }
}

ccs_status_t ccs_comm_init_cuda_msg(int nranks, const int *devices,
                                    ccs_comm_t **comms, char *msg,
                                    size_t msglen)
{
    cx_world_t *w = NULL;    /* shared by the comms; freed with the last */
    ccs_status_t st = CCS_OK;
    ccs_err_t e;
    int ndev = 0, prev = 0, made = 0;
    cudaError_t ce;

    ccs_err_clear(&e);
    if (comms == NULL || nranks < 1 || (uint32_t)nranks > CCS_MAX_RANKS) {
        st = ccs_err_set(&e, CCS_ERR_INVALID, "cuda transport: need "
                         "comms != NULL and 1 <= nranks <= %u (got %d)",
                         CCS_MAX_RANKS, nranks);
        goto out;
    }
    if ((st = ccs_gpu_device_count("cuda transport", &ndev, &e)) != CCS_OK)
        goto out;
    for (int r = 0; devices != NULL && r < nranks; r++) {
        if (devices[r] < 0 || devices[r] >= ndev) {
            st = ccs_err_set(&e, CCS_ERR_INVALID, "cuda transport: rank "
                             "%d on device %d, but there are %d device(s)",
                             r, devices[r], ndev);
            goto out;
        }
    }
    if ((ce = cudaGetDevice(&prev)) != cudaSuccess) {
        st = ccs_gpu_fail(&e, ce, "cuda transport: cudaGetDevice");
        goto out;
    }
    w = calloc(1, sizeof(*w));
    if (w == NULL) {
        st = ccs_err_set(&e, CCS_ERR_NOMEM, "out of memory");
        goto out;
    }
    w->nranks = nranks;
    w->timeout_ms = env_long("CCS_TIMEOUT_S", 0) * 1000;
    w->ranks = calloc((size_t)nranks, sizeof(*w->ranks));
    w->fifos = calloc((size_t)nranks * nranks, sizeof(*w->fifos));
    if (w->ranks == NULL || w->fifos == NULL) {
        free(w->ranks);
        free(w->fifos);
        free(w);
        w = NULL;
        st = ccs_err_set(&e, CCS_ERR_NOMEM, "out of memory");
        goto out;
    }
    for (int r = 0; r < nranks; r++) {
        pthread_mutex_init(&w->ranks[r].mu, NULL);
        pthread_cond_init(&w->ranks[r].cv, NULL);
        w->ranks[r].device = devices ? devices[r] : 0;
    }
    /* From here world_free cleans up everything made so far. */
    for (int r = 0; r < nranks; r++) {
        cx_rank_t *k = &w->ranks[r];
        ce = cudaSetDevice(k->device);
        if (ce == cudaSuccess)
            ce = cudaStreamCreateWithFlags(&k->own, cudaStreamNonBlocking);
        if (ce != cudaSuccess) {
            k->own = NULL;
            st = ccs_gpu_fail(&e, ce, "cuda transport: rank %d: creating a "
                              "stream on device %d", r, k->device);
            break;
        }
    }
    if (st == CCS_OK)
        enable_peers(w);
    (void)cudaSetDevice(prev);
    if (st != CCS_OK) {
        world_free(w);
        w = NULL;
        goto out;
    }
    /* One reference per rank; ranks whose communicator was not made drop
     * theirs below, the made ones in ccs_comm_destroy. */
    atomic_store(&w->refs, nranks);
    for (; made < nranks; made++) {
        ccs_xport_t *x = calloc(1, sizeof(*x)); /* owned by its comm */
        int rest;
        if (x == NULL) {
            st = ccs_err_set(&e, CCS_ERR_NOMEM, "out of memory");
            rest = nranks - made;
        } else {
            x->w = w;
            x->rank = made;
            x->base.device = w->ranks[made].device;
            x->base.prev_device = x->base.device;
            x->base.own = w->ranks[made].own;
            x->base.stream = x->base.own;
            x->base.who = "cuda transport";
            st = ccs_comm_create(&cuda_ops, x, made, nranks, &comms[made],
                                 &e);
            /* On failure x was destroyed, dropping rank made's ref. */
            rest = nranks - made - 1;
        }
        if (st != CCS_OK) {
            for (int r = 0; r < made; r++) {
                ccs_comm_destroy(comms[r]);
                comms[r] = NULL;
            }
            if (rest > 0 && atomic_fetch_sub(&w->refs, rest) == rest)
                world_free(w);
            goto out;
        }
    }
out:
    if (st != CCS_OK) {
        CCS_LOG(ccs_log_level_env(), CCS_LOG_WARN, "INIT", -1, "%s",
                ccs_err_msg(&e, st));
        ccs_gpu_copy_msg(&e, st, msg, msglen);
    }
    return st;
}

ccs_status_t ccs_comm_init_cuda(int nranks, const int *devices,
                                ccs_comm_t **comms)
{
    return ccs_comm_init_cuda_msg(nranks, devices, comms, NULL, 0);
}
