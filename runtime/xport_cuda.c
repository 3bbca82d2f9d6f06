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
 * moment, so it may be recorded again afterwards); the peer then counts
 * `users` down to 0.  Messages are counted twice (sender and receiver)
 * and freed by the last; the world frees what is left in the FIFOs.
 *
 * Failure: a failing rank sets the world's abort flag and wakes every
 * rank; ranks blocked in wait() return CCS_ERR_TRANSPORT.  CCS_TIMEOUT_S
 * bounds host waits (CCS_ERR_TIMEOUT).
 *
 * Issue window (W > 1; exec.c run_flow).  The executor takes a ticket
 * before each post and completes requests one by one with test and
 * wait_any; a post that follows ticket() is a "ticketed" request, handled
 * as below (the mailbox, READY and the FIFOs are the same, so a ticketed
 * rank talks to a step-by-step one).  Streams of a rank: S, the run's
 * stream, which carries every local op (pack, unpack, copy, reduce, div)
 * the executor enqueues; and one port stream P[q] per peer q, created at
 * the first ticketed receive from q, which carries the copies INTO this
 * rank from q, so that transfers from different peers, and local work on
 * S, overlap.
 *
 *   send posted:     record READY on S, post the message (as above).
 *   receive posted:  record POST on S and make P[q] wait for it at once.
 *   progress (in test / wait_any):  for each ticketed receive not yet
 *                    matched, in posting order per peer, take the pair's
 *                    next message if there is one (never waiting); P[q]
 *                    waits READY; the copy on P[q]; record DONE on P[q];
 *                    hand DONE to the sender.
 *   complete:        a receive when its DONE has completed on the device
 *                    (cudaEventQuery), a send when the receiver handed
 *                    DONE back and it has completed; then S waits DONE.
 *
 * Why the results are those of the step order.  run_flow starts an op
 * only when every earlier op it conflicts with (RAW, WAR, WAW on a chunk
 * range) is complete, and it treats a local op as complete once enqueued.
 * Invariant: S at any moment is ordered after every op the executor has
 * seen complete -- local ops are on S; a transfer is complete only after
 * its DONE completed on the device, and S then waits DONE as well.  Now
 * take an op X and an earlier conflicting op Y, complete when X starts:
 *   - X local: enqueued on S after Y by the invariant.
 *   - X a send: its copy (on the receiver's P) waits READY, recorded on S
 *     after Y: the data it reads are Y's result, and Y's reads are done.
 *   - X a receive: its copy on P[q] follows POST, recorded on S after Y:
 *     it overwrites nothing Y still reads and writes after Y.
 * Ops started later that conflict with X wait in run_flow until X is
 * complete, which by the invariant orders them after X the same way.
 * Staging slots are reused only by groups issued after every op of the
 * slot's earlier group completed, so the same argument covers them.
 *
 * Why it cannot hang.  GPU work never waits for a host action still to
 * come (cudaStreamWaitEvent captures an event's last record, already
 * enqueued), so every DONE enqueued completes; a receive needs only the
 * peer's post, which it sees at its next progress; a send needs only the
 * receiver's progress, which a ticketed rank makes whenever it tests or
 * waits.  So the host side completes like the CPU transports' requests,
 * and run_flow's argument (no deadlock where the step order has none)
 * carries over.  wait_any has no host signal for a device completion, so
 * it sleeps in CX_POLL_US slices on the rank's condition variable (a post
 * or a hand-back by a peer wakes it at once), bounded by CCS_TIMEOUT_S.
 *
 * Cost of this choice: a ticketed run returns only once its transfers
 * have completed on the device (only the work after the last transfer --
 * tails, avg's division -- may still be queued on a caller's stream);
 * the step-by-step run never waits for the GPU.  In exchange each local
 * op is enqueued only after the transfers it reads finished, instead of
 * S waiting for every transfer in issue order, which would queue a
 * step's reduction behind later steps' transfers and undo the overlap.
 * An event slot of a ticketed receive's DONE has two users (the receiver
 * queries it, the sender too); `users` counts them down.
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

/* How long wait_any sleeps between two looks at the device: a device
 * completion has no host signal, and a copy of a step worth overlapping
 * takes far longer than this, while a shorter slice only burns the CPU
 * the other ranks' threads need to post. */
#define CX_POLL_US 20

typedef struct cx_slot {
    cudaEvent_t ev;
    atomic_int users;        /* still to wait on / query this record; 0:
                                free (see the top comment) */
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
    unsigned bell;           /* mu; counts posts and hand-backs to this
                                rank, so wait_any misses none */
    int device;
    cudaStream_t own;        /* internal stream; owned */
    cx_slot_t **slots;       /* owned; event pool of this rank */
    size_t nslots, next;
    /* Ticketed requests only; made at first use by this rank's thread: */
    cudaStream_t *port;      /* owned array [nranks] of owned streams;
                                port[q] carries the copies from q */
    cudaEvent_t post_ev;     /* owned; POST, waited on as soon as recorded */
    char pad[64];            /* keep ranks' locks apart */
} cx_rank_t;

typedef struct cx_fifo {
    cx_msg_t *head, *tail;
} cx_fifo_t;

/* The oldest message of f, unlinked, or NULL; under the receiver's mu. */
static cx_msg_t *fifo_pop(cx_fifo_t *f)
{
    cx_msg_t *m = f->head;

    if (m != NULL) {
        f->head = m->next;
        if (f->head == NULL)
            f->tail = NULL;
    }
    return m;
}

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

/* A ticketed request (issue window > 1). */
typedef struct cx_req {
    cx_msg_t *m;             /* send: the message (our reference, dropped
                                at completion); recv: NULL */
    void *dst;               /* recv: where the copy lands */
    size_t bytes;
    uint32_t peer, step;
    cx_slot_t *done;         /* recv: DONE of its copy, once matched (one
                                of its users is ours) */
    bool is_send, matched, complete;
} cx_req_t;

struct ccs_xport {
    ccs_gpu_base_t base;     /* first: the shared hooks cast to it */
    cx_world_t *w;
    int rank;
    cx_recv_t *recvs;        /* owned; this step's receives */
    size_t nrecv, caprecv;
    cx_msg_t **sends;        /* owned array; this step's sends */
    size_t nsend, capsend;
    /* Ticketed requests since the last wait: reqs[i] has ticket tbase + i;
     * reqs[0 .. live0) are all complete.  tnext: ticket() was called, so
     * the next post is ticketed. */
    cx_req_t *reqs;          /* owned */
    size_t nreq, capreq, live0;
    uint64_t tbase;
    bool tnext;
    uint32_t pass;           /* progress: pass number, see held[] */
    uint32_t *held;          /* owned; [nranks]: a receive from q was left
                                unmatched in pass held[q] */
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
            for (int q = 0; k->port != NULL && q < w->nranks; q++)
                if (k->port[q] != NULL)
                    (void)cudaStreamDestroy(k->port[q]);
            free(k->port);
            if (k->post_ev != NULL)
                (void)cudaEventDestroy(k->post_ev);
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

/* One user of slot s is done with its record. */
static void slot_put(cx_slot_t *s)
{
    atomic_fetch_sub_explicit(&s->users, 1, memory_order_release);
}

/* A free event slot of this rank, for `users` users (its thread only;
 * device current). */
static ccs_status_t slot_take(ccs_xport_t *x, int users, cx_slot_t **out,
                              ccs_err_t *err)
{
    cx_rank_t *me = &x->w->ranks[x->rank];
    cx_slot_t *s, **n;
    cudaError_t e;

    for (size_t k = 0; k < me->nslots; k++) {
        size_t i = (me->next + k) % me->nslots;
        if (atomic_load_explicit(&me->slots[i]->users,
                                 memory_order_acquire) == 0) {
            atomic_store_explicit(&me->slots[i]->users, users,
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
    atomic_store(&s->users, users);
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

/* Room for one more element in the grow-only array *arr of n used and
 * *cap allocated elements of `size` bytes (the transport owns it; freed
 * in destroy). */
static ccs_status_t grow1(void **arr, size_t n, size_t *cap, size_t size,
                          size_t first, ccs_err_t *err)
{
    if (n == *cap) {
        size_t c = *cap ? 2 * *cap : first;
        void *p = realloc(*arr, c * size);
        if (p == NULL)
            return ccs_err_set(err, CCS_ERR_NOMEM, "out of memory");
        *arr = p;
        *cap = c;
    }
    return CCS_OK;
}

/* Room for one more ticketed request. */
static ccs_status_t req_grow(ccs_xport_t *x, ccs_err_t *err)
{
    return grow1((void **)&x->reqs, x->nreq, &x->capreq, sizeof(*x->reqs),
                 16, err);
}

/* Ticketed and step-by-step requests never mix between two waits: their
 * receives are matched in different places (progress, wait), and a
 * pair's messages must be taken in posting order.  (The executor never
 * mixes them; a GPU run has no agreement or small-message exchange.) */
static ccs_status_t check_kind(const ccs_xport_t *x, ccs_err_t *err)
{
    if (x->tnext ? x->nrecv + x->nsend > 0 : x->nreq > 0)
        return ccs_err_set(err, CCS_ERR_INTERNAL, "cuda transport: a %s "
                           "post while %s requests are pending",
                           x->tnext ? "ticketed" : "step-by-step",
                           x->tnext ? "step-by-step" : "ticketed");
    return CCS_OK;
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
    bool ticketed = x->tnext;
    ccs_status_t st;
    cudaError_t e;

    (void)seq;
    if (atomic_load(&w->aborted))
        return ccs_err_set(err, CCS_ERR_TRANSPORT,
                           "another rank failed; the world is aborted");
    if ((st = check_kind(x, err)) != CCS_OK)
        return st;
    x->tnext = false;
    if (ticketed) {
        if ((st = req_grow(x, err)) != CCS_OK)
            return st;
    } else if ((st = grow1((void **)&x->sends, x->nsend, &x->capsend,
                           sizeof(*x->sends), 8, err)) != CCS_OK) {
        return st;
    }
    if ((st = slot_take(x, 1, &ready, err)) != CCS_OK)
        return st;
    e = cudaEventRecord(ready->ev, x->base.stream);
    if (e != cudaSuccess) {
        slot_put(ready);
        return ccs_gpu_fail(err, e, "cuda transport: send of %zu bytes to "
                            "rank %u: cudaEventRecord", bytes, peer);
    }
    m = calloc(1, sizeof(*m));   /* shared by sender and receiver (refs) */
    if (m == NULL) {
        slot_put(ready);
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
    if (ticketed) {
        cx_req_t *rq = &x->reqs[x->nreq++];
        memset(rq, 0, sizeof(*rq));
        rq->m = m;
        rq->bytes = bytes;
        rq->peer = peer;
        rq->step = step;
        rq->is_send = true;
    } else {
        x->sends[x->nsend++] = m;
    }
    pthread_mutex_lock(&dst->mu);
    if (f->tail != NULL)
        f->tail->next = m;
    else
        f->head = m;
    f->tail = m;
    dst->bell++;
    pthread_cond_broadcast(&dst->cv);
    pthread_mutex_unlock(&dst->mu);
    return CCS_OK;
}

/* A ticketed receive from peer: its port stream, ordered after what S
 * holds now (POST; see the top comment). */
static ccs_status_t post_recv_ticketed(ccs_xport_t *x, uint32_t peer,
                                       void *buf, size_t bytes,
                                       uint32_t step, ccs_err_t *err)
{
    cx_world_t *w = x->w;
    cx_rank_t *me = &w->ranks[x->rank];
    cx_req_t *rq;
    ccs_status_t st;
    cudaError_t e = cudaSuccess;

    if ((st = req_grow(x, err)) != CCS_OK)
        return st;
    if (x->held == NULL) {
        x->held = calloc((size_t)w->nranks, sizeof(*x->held)); /* owned */
        if (x->held == NULL)
            return ccs_err_set(err, CCS_ERR_NOMEM, "out of memory");
    }
    if (me->port == NULL) {
        /* owned by the world (world_free) */
        me->port = calloc((size_t)w->nranks, sizeof(*me->port));
        if (me->port == NULL)
            return ccs_err_set(err, CCS_ERR_NOMEM, "out of memory");
    }
    if (me->port[peer] == NULL)
        e = cudaStreamCreateWithFlags(&me->port[peer],
                                      cudaStreamNonBlocking);
    if (e == cudaSuccess && me->post_ev == NULL)
        e = cudaEventCreateWithFlags(&me->post_ev, cudaEventDisableTiming);
    if (e != cudaSuccess)
        return ccs_gpu_fail(err, e, "cuda transport: rank %d: creating the "
                            "port stream for rank %u on device %d", x->rank,
                            peer, x->base.device);
    /* The wait captures the record at once, so one event serves every
     * POST of this rank. */
    e = cudaEventRecord(me->post_ev, x->base.stream);
    if (e == cudaSuccess)
        e = cudaStreamWaitEvent(me->port[peer], me->post_ev, 0);
    if (e != cudaSuccess)
        return ccs_gpu_fail(err, e, "cuda transport: step %u: ordering the "
                            "receive of %zu bytes from rank %u after the "
                            "run's stream", step, bytes, peer);
    rq = &x->reqs[x->nreq++];
    memset(rq, 0, sizeof(*rq));
    rq->dst = buf;
    rq->bytes = bytes;
    rq->peer = peer;
    rq->step = step;
    return CCS_OK;
}

static ccs_status_t cx_recv(ccs_xport_t *x, uint32_t peer, void *buf,
                            size_t bytes, uint32_t step, uint32_t seq,
                            ccs_err_t *err)
{
    ccs_status_t st;

    (void)seq;
    if ((st = check_kind(x, err)) != CCS_OK)
        return st;
    if (x->tnext) {
        x->tnext = false;
        return post_recv_ticketed(x, peer, buf, bytes, step, err);
    }
    if ((st = grow1((void **)&x->recvs, x->nrecv, &x->caprecv,
                    sizeof(*x->recvs), 8, err)) != CCS_OK)
        return st;
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
    s->bell++;
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

/* Receive message m (taken from the FIFO) into dst: the copy on stream
 * st after READY, then DONE (for `users` users) handed to the sender.
 * Consumes the receiver's reference to m; *done gets DONE. */
static ccs_status_t enqueue_copy(ccs_xport_t *x, cx_msg_t *m, void *dst,
                                 size_t bytes, uint32_t peer, uint32_t step,
                                 cudaStream_t st, int users,
                                 cx_slot_t **done_out, ccs_err_t *err)
{
    cx_world_t *w = x->w;
    cx_slot_t *done = NULL;
    ccs_status_t s;
    cudaError_t e;

    if (m->bytes != bytes) {
        s = ccs_err_set(err, CCS_ERR_MISMATCH,
                        "step %u: receive of %zu bytes from rank %u matched "
                        "a send of %zu bytes (posted in step %u): the ranks "
                        "made different calls", step, bytes, peer, m->bytes,
                        m->step);
        slot_put(m->ready);
        msg_finish(w, m, peer, MSG_FAILED);
        msg_put(m);
        return s;
    }
    e = cudaStreamWaitEvent(st, m->ready->ev, 0);
    /* The wait captured the event's state: the sender may record it
     * again. */
    slot_put(m->ready);
    if (e == cudaSuccess) {
        if (m->src_dev == x->base.device)
            e = cudaMemcpyAsync(dst, m->src, bytes,
                                cudaMemcpyDeviceToDevice, st);
        else
            e = cudaMemcpyPeerAsync(dst, x->base.device, m->src,
                                    m->src_dev, bytes, st);
    }
    if (e == cudaSuccess) {
        if ((s = slot_take(x, users, &done, err)) != CCS_OK) {
            msg_finish(w, m, peer, MSG_FAILED);
            msg_put(m);
            return s;
        }
        e = cudaEventRecord(done->ev, st);
    }
    if (e != cudaSuccess) {
        if (done != NULL)
            atomic_store(&done->users, 0);
        msg_finish(w, m, peer, MSG_FAILED);
        s = ccs_gpu_fail(err, e, "cuda transport: step %u: receive of "
                         "%zu bytes from rank %u (device %d -> %d)", step,
                         bytes, peer, m->src_dev, x->base.device);
        msg_put(m);
        return s;
    }
    m->done = done;
    msg_finish(w, m, peer, MSG_DONE);
    msg_put(m);
    *done_out = done;
    return CCS_OK;
}

/* One receive: take the sender's message, order the copy on our stream. */
static ccs_status_t complete_recv(ccs_xport_t *x, const cx_recv_t *rv,
                                  const struct timespec *deadline,
                                  ccs_err_t *err)
{
    cx_world_t *w = x->w;
    cx_rank_t *me = &w->ranks[x->rank];
    cx_fifo_t *f = &w->fifos[(size_t)rv->peer * w->nranks + x->rank];
    cx_slot_t *done = NULL;
    cx_msg_t *m;

    pthread_mutex_lock(&me->mu);
    while (f->head == NULL && !atomic_load(&w->aborted))
        if (!sleep_once(w, me, deadline))
            break;
    m = fifo_pop(f);
    pthread_mutex_unlock(&me->mu);
    if (m == NULL)
        return abort_or_timeout(w, err, "receive from", rv->peer, rv->step);
    /* One user of DONE: the sender.  Our stream needs no wait, the copy
     * is on it. */
    return enqueue_copy(x, m, rv->dst, rv->bytes, rv->peer, rv->step,
                        x->base.stream, 1, &done, err);
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
    slot_put(m->done);
    if (e != cudaSuccess)
        return ccs_gpu_fail(err, e, "cuda transport: step %u: ordering "
                            "after the send of %zu bytes to rank %u",
                            m->step, m->bytes, peer);
    return CCS_OK;
}

/* ---- ticketed requests (issue window > 1; see the top comment) ---- */

/* Match what the peers have posted to our ticketed receives, in posting
 * order per peer, without waiting. */
static ccs_status_t progress(ccs_xport_t *x, ccs_err_t *err)
{
    cx_world_t *w = x->w;
    cx_rank_t *me = &w->ranks[x->rank];
    ccs_status_t st;

    if (atomic_load(&w->aborted))
        return ccs_err_set(err, CCS_ERR_TRANSPORT,
                           "another rank failed; the world is aborted");
    if (++x->pass == 0) {
        /* wrapped: no stale pass number may look current */
        for (int q = 0; x->held != NULL && q < w->nranks; q++)
            x->held[q] = 0;
        x->pass = 1;
    }
    for (size_t i = x->live0; i < x->nreq; i++) {
        cx_req_t *rq = &x->reqs[i];
        cx_fifo_t *f;
        cx_msg_t *m;
        if (rq->is_send || rq->matched || x->held[rq->peer] == x->pass)
            continue;
        /* A later receive from the same peer may not take the message
         * this one is still waiting for: held[] keeps the pair's order
         * even if the message arrives during this pass. */
        f = &w->fifos[(size_t)rq->peer * w->nranks + x->rank];
        pthread_mutex_lock(&me->mu);
        m = fifo_pop(f);
        pthread_mutex_unlock(&me->mu);
        if (m == NULL) {
            x->held[rq->peer] = x->pass;
            continue;
        }
        /* Two users of DONE: we query it, so does the sender. */
        st = enqueue_copy(x, m, rq->dst, rq->bytes, rq->peer, rq->step,
                          me->port[rq->peer], 2, &rq->done, err);
        if (st != CCS_OK)
            return st;
        rq->matched = true;
    }
    return CCS_OK;
}

/* Has DONE completed on the device?  Then order S after it and let it go.
 * *done stays false while it has not. */
static ccs_status_t done_reached(ccs_xport_t *x, cx_slot_t *d,
                                 const cx_req_t *rq, bool *done,
                                 ccs_err_t *err)
{
    cudaError_t e = cudaEventQuery(d->ev);

    if (e == cudaErrorNotReady)
        return CCS_OK;
    if (e == cudaSuccess)
        e = cudaStreamWaitEvent(x->base.stream, d->ev, 0);
    if (e != cudaSuccess)
        return ccs_gpu_fail(err, e, "cuda transport: step %u: %s of %zu "
                            "bytes %s rank %u", rq->step,
                            rq->is_send ? "send" : "receive", rq->bytes,
                            rq->is_send ? "to" : "from", rq->peer);
    slot_put(d);
    *done = true;
    return CCS_OK;
}

/* Complete rq if it is (no waiting). */
static ccs_status_t req_try(ccs_xport_t *x, cx_req_t *rq, ccs_err_t *err)
{
    ccs_status_t st;
    bool done = false;

    if (rq->complete)
        return CCS_OK;
    if (rq->is_send) {
        cx_rank_t *me = &x->w->ranks[x->rank];
        int state;
        pthread_mutex_lock(&me->mu);
        state = rq->m->state;
        pthread_mutex_unlock(&me->mu);
        if (state == MSG_POSTED)
            return CCS_OK;
        if (state == MSG_FAILED)
            return ccs_err_set(err, CCS_ERR_MISMATCH,
                               "step %u: the receiver of a %zu-byte send "
                               "to rank %u failed (size mismatch or CUDA "
                               "error)", rq->step, rq->bytes, rq->peer);
        if ((st = done_reached(x, rq->m->done, rq, &done, err)) != CCS_OK)
            return st;
        if (done) {
            msg_put(rq->m);
            rq->m = NULL;
        }
    } else {
        if (!rq->matched)
            return CCS_OK;
        if ((st = done_reached(x, rq->done, rq, &done, err)) != CCS_OK)
            return st;
        if (done)
            rq->done = NULL;
    }
    rq->complete = done;
    while (x->live0 < x->nreq && x->reqs[x->live0].complete)
        x->live0++;
    return CCS_OK;
}

static uint64_t cx_ticket(ccs_xport_t *x)
{
    x->tnext = true;
    return x->tbase + x->nreq;
}

static cx_req_t *req_of(ccs_xport_t *x, uint64_t t)
{
    return t >= x->tbase && t - x->tbase < x->nreq ? &x->reqs[t - x->tbase]
                                                   : NULL;
}

static ccs_status_t cx_test(ccs_xport_t *x, uint64_t t, bool *done,
                            ccs_err_t *err)
{
    cx_req_t *rq = req_of(x, t);
    ccs_status_t st;

    if (rq == NULL)
        return ccs_err_set(err, CCS_ERR_INTERNAL,
                           "ticket %llu is not pending (tickets %llu..%llu "
                           "since the last wait)", (unsigned long long)t,
                           (unsigned long long)x->tbase,
                           (unsigned long long)(x->tbase + x->nreq));
    if (!rq->complete && ((st = progress(x, err)) != CCS_OK ||
                          (st = req_try(x, rq, err)) != CCS_OK))
        return st;
    *done = rq->complete;
    return CCS_OK;
}

static ccs_status_t cx_wait_any(ccs_xport_t *x, const uint64_t *t,
                                uint32_t n, ccs_err_t *err)
{
    cx_world_t *w = x->w;
    cx_rank_t *me = &w->ranks[x->rank];
    struct timespec deadline = { 0, 0 }, nap;
    ccs_status_t st;

    if (w->timeout_ms > 0)
        deadline_in(w->timeout_ms, &deadline);
    for (;;) {
        unsigned bell;
        pthread_mutex_lock(&me->mu);
        bell = me->bell;
        pthread_mutex_unlock(&me->mu);
        if ((st = progress(x, err)) != CCS_OK)
            return st;
        for (uint32_t i = 0; i < n; i++) {
            cx_req_t *rq = req_of(x, t[i]);
            if (rq == NULL)
                return CCS_OK;  /* test reports it */
            if ((st = req_try(x, rq, err)) != CCS_OK)
                return st;
            if (rq->complete)
                return CCS_OK;
        }
        if (n == 0)
            return CCS_OK;
        deadline_in(0, &nap);
        nap.tv_nsec += CX_POLL_US * 1000L;
        if (nap.tv_nsec >= 1000000000L) {
            nap.tv_sec++;
            nap.tv_nsec -= 1000000000L;
        }
        if (w->timeout_ms > 0 &&
            (nap.tv_sec > deadline.tv_sec ||
             (nap.tv_sec == deadline.tv_sec &&
              nap.tv_nsec >= deadline.tv_nsec))) {
            /* every t[i] is pending here (else we returned above) */
            const cx_req_t *rq = req_of(x, t[0]);
            return ccs_err_set(err, CCS_ERR_TIMEOUT,
                               "%s of %zu bytes %s rank %u (step %u) and "
                               "%u other request(s) not complete after %ld "
                               "ms (CCS_TIMEOUT_S): did every rank make the "
                               "same call?",
                               rq->is_send ? "send" : "receive", rq->bytes,
                               rq->is_send ? "to" : "from", rq->peer,
                               rq->step, n - 1, w->timeout_ms);
        }
        pthread_mutex_lock(&me->mu);
        if (me->bell == bell && !atomic_load(&w->aborted))
            (void)pthread_cond_timedwait(&me->cv, &me->mu, &nap);
        pthread_mutex_unlock(&me->mu);
    }
}

/* Drop what ticketed requests still hold (a failed run) and start the
 * next round of tickets. */
static void reqs_reset(ccs_xport_t *x)
{
    cx_rank_t *me = &x->w->ranks[x->rank];

    for (size_t i = 0; i < x->nreq; i++) {
        cx_req_t *rq = &x->reqs[i];
        if (rq->complete)
            continue;
        if (rq->m != NULL) {
            int state;
            pthread_mutex_lock(&me->mu);
            state = rq->m->state;
            pthread_mutex_unlock(&me->mu);
            if (state == MSG_DONE)
                slot_put(rq->m->done);   /* our use of the receiver's DONE */
            msg_put(rq->m);
        }
        if (rq->done != NULL)
            slot_put(rq->done);
    }
    x->tbase += x->nreq;
    x->nreq = x->live0 = 0;
    x->tnext = false;
}

/* wait() after ticketed posts: complete every one of them. */
static ccs_status_t wait_ticketed(ccs_xport_t *x, ccs_err_t *err)
{
    ccs_status_t st = CCS_OK;

    for (size_t i = x->live0; i < x->nreq && st == CCS_OK; i++) {
        uint64_t t = x->tbase + i;
        while (st == CCS_OK && !x->reqs[i].complete)
            st = cx_wait_any(x, &t, 1, err);
    }
    reqs_reset(x);
    return st;
}

static ccs_status_t cx_wait(ccs_xport_t *x, ccs_err_t *err)
{
    struct timespec deadline = { 0, 0 };
    ccs_status_t st = CCS_OK;

    if (x->nreq > 0)
        return wait_ticketed(x, err);
    x->tnext = false;
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
    reqs_reset(x);
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
    reqs_reset(x);
    free(x->sends);
    free(x->recvs);
    free(x->reqs);
    free(x->held);
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
    .ticket = cx_ticket,
    .test = cx_test,
    .wait_any = cx_wait_any,
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
