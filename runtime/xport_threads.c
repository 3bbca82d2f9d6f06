/*
 * xport_threads.c - the threads transport: ranks are threads of one
 * process sharing a "world".
 *
 * Point to point by rendezvous, with a single copy and no intermediate
 * buffer: for each ordered pair (src -> dst) the world keeps a FIFO of
 * posted sends and a FIFO of posted receives, guarded by dst's mutex.
 * Whichever side posts second finds the other's entry, takes it off the
 * queue, copies the bytes straight from the sender's buffer into the
 * receiver's (outside the lock, so large copies run in parallel on the
 * pair's two threads), and completes the other side's request.  FIFO order
 * per pair is the matching order the executor guarantees.
 *
 * Waiting: a rank's outstanding requests are an atomic counter.  wait()
 * polls briefly (bounded, CCS_SPIN_US, default 20 us; 0 disables), pausing
 * and yielding the CPU every few rounds -- a peer on another core usually
 * completes within it, a peer sharing our core gets to run at once -- and
 * then sleeps on its condition variable, so an oversubscribed machine is
 * not starved.  (Measured on the 2-core CI box under load: ~1.2 us/step
 * with yielding, 20+ us/step with pure pause-spinning.)  A completer
 * decrements the counter and signals under the waiter's mutex only when
 * the waiter sleeps.
 *
 * Failure: a rank that fails mid-run sets the world's abort flag and wakes
 * everyone; blocked ranks return CCS_ERR_TRANSPORT.  CCS_TIMEOUT_S > 0
 * bounds every wait (CCS_ERR_TIMEOUT), which turns a mismatched call into
 * an error instead of a hang.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ccs_int.h"

typedef struct tx_rank tx_rank_t;

typedef struct tx_item {
    void *ptr;               /* send: source bytes; recv: destination */
    size_t bytes;
    tx_rank_t *owner;        /* rank whose request this is */
    uint32_t step;
} tx_item_t;

typedef struct tx_queue {
    tx_item_t *items;        /* owned ring buffer */
    uint32_t head, len, cap;
} tx_queue_t;

typedef struct tx_pair {
    tx_queue_t sends;        /* posted by src, not yet matched */
    tx_queue_t recvs;        /* posted by dst, not yet matched */
} tx_pair_t;

struct tx_rank {
    pthread_mutex_t mu;      /* guards pairs (*, this) and `sleeping` */
    pthread_cond_t cv;
    atomic_int pending;      /* this rank's uncompleted requests */
    atomic_int failed;       /* a request completed with a size mismatch */
    int sleeping;
    char pad[64];            /* keep ranks' hot fields apart */
};

typedef struct tx_world {
    int nranks;
    atomic_int refs;         /* communicators alive */
    atomic_int aborted;
    long spin_ns;
    long timeout_ms;         /* 0: wait forever */
    tx_rank_t *ranks;        /* owned; [nranks] */
    tx_pair_t *pairs;        /* owned; [src * nranks + dst] */
} tx_world_t;

struct ccs_xport {
    tx_world_t *w;
    int rank;
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

static void world_free(tx_world_t *w)
{
    if (w == NULL)
        return;
    if (w->pairs != NULL) {
        for (size_t i = 0; i < (size_t)w->nranks * w->nranks; i++) {
            free(w->pairs[i].sends.items);
            free(w->pairs[i].recvs.items);
        }
    }
    if (w->ranks != NULL) {
        for (int r = 0; r < w->nranks; r++) {
            pthread_mutex_destroy(&w->ranks[r].mu);
            pthread_cond_destroy(&w->ranks[r].cv);
        }
    }
    free(w->pairs);
    free(w->ranks);
    free(w);
}

static bool q_push(tx_queue_t *q, const tx_item_t *it)
{
    if (q->len == q->cap) {
        uint32_t cap = q->cap ? 2 * q->cap : 4;
        tx_item_t *n = malloc(cap * sizeof(*n));
        if (n == NULL)
            return false;
        for (uint32_t i = 0; i < q->len; i++)
            n[i] = q->items[(q->head + i) % q->cap];
        free(q->items);
        q->items = n;
        q->cap = cap;
        q->head = 0;
    }
    q->items[(q->head + q->len) % q->cap] = *it;
    q->len++;
    return true;
}

static tx_item_t q_pop(tx_queue_t *q)
{
    tx_item_t it = q->items[q->head];
    q->head = (q->head + 1) % q->cap;
    q->len--;
    return it;
}

/* Complete one request of `owner`. */
static void complete(tx_rank_t *owner, bool ok)
{
    if (!ok)
        atomic_store(&owner->failed, 1);
    atomic_fetch_sub_explicit(&owner->pending, 1, memory_order_release);
    pthread_mutex_lock(&owner->mu);
    if (owner->sleeping)
        pthread_cond_signal(&owner->cv);
    pthread_mutex_unlock(&owner->mu);
}

/* Post one side of a transfer between src and dst.  `mine` is the queue
 * of this side, `theirs` the other's. */
static ccs_status_t post(ccs_xport_t *x, bool is_send, uint32_t peer,
                         void *ptr, size_t bytes, uint32_t step,
                         ccs_err_t *err)
{
    tx_world_t *w = x->w;
    uint32_t src = is_send ? (uint32_t)x->rank : peer;
    uint32_t dst = is_send ? peer : (uint32_t)x->rank;
    tx_pair_t *pr = &w->pairs[(size_t)src * w->nranks + dst];
    tx_rank_t *lock = &w->ranks[dst];
    tx_rank_t *me = &w->ranks[x->rank];
    tx_queue_t *mine = is_send ? &pr->sends : &pr->recvs;
    tx_queue_t *theirs = is_send ? &pr->recvs : &pr->sends;
    tx_item_t other;

    if (atomic_load(&w->aborted))
        return ccs_err_set(err, CCS_ERR_TRANSPORT,
                           "another rank failed; the world is aborted");
    pthread_mutex_lock(&lock->mu);
    if (theirs->len == 0) {
        tx_item_t it = { ptr, bytes, me, step };
        atomic_fetch_add_explicit(&me->pending, 1, memory_order_relaxed);
        if (!q_push(mine, &it)) {
            atomic_fetch_sub(&me->pending, 1);
            pthread_mutex_unlock(&lock->mu);
            return ccs_err_set(err, CCS_ERR_NOMEM, "out of memory");
        }
        pthread_mutex_unlock(&lock->mu);
        return CCS_OK;
    }
    other = q_pop(theirs);
    pthread_mutex_unlock(&lock->mu);
    if (other.bytes != bytes) {
        complete(other.owner, false);
        return ccs_err_set(err, CCS_ERR_MISMATCH,
                           "step %u: %s of %zu bytes %s rank %u matched a "
                           "%s of %zu bytes (posted in step %u): the ranks "
                           "made different calls", step,
                           is_send ? "send" : "receive", bytes,
                           is_send ? "to" : "from", peer,
                           is_send ? "receive" : "send", other.bytes,
                           other.step);
    }
    if (is_send)
        memcpy(other.ptr, ptr, bytes);
    else
        memcpy(ptr, other.ptr, bytes);
    complete(other.owner, true);
    return CCS_OK;
}

static ccs_status_t th_send(ccs_xport_t *x, uint32_t peer, const void *buf,
                            size_t bytes, uint32_t step, uint32_t seq,
                            ccs_err_t *err)
{
    (void)seq;
    return post(x, true, peer, (void *)(uintptr_t)buf, bytes, step, err);
}

static ccs_status_t th_recv(ccs_xport_t *x, uint32_t peer, void *buf,
                            size_t bytes, uint32_t step, uint32_t seq,
                            ccs_err_t *err)
{
    (void)seq;
    return post(x, false, peer, buf, bytes, step, err);
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static ccs_status_t th_wait(ccs_xport_t *x, ccs_err_t *err)
{
    tx_world_t *w = x->w;
    tx_rank_t *me = &w->ranks[x->rank];
    struct timespec deadline;
    double t0;

    if (atomic_load_explicit(&me->pending, memory_order_acquire) == 0)
        goto done;
    t0 = ccs_now_s();
    for (unsigned i = 1; w->spin_ns > 0; i++) {
        if (atomic_load_explicit(&me->pending, memory_order_acquire) == 0)
            goto done;
        /* Pause for a few rounds, then yield: when the peer shares our
         * core (oversubscribed machine) it runs at once instead of
         * waiting for our time slice to end. */
        if ((i & 15) != 0) {
            cpu_relax();
            continue;
        }
        sched_yield();
        if ((ccs_now_s() - t0) * 1e9 > (double)w->spin_ns)
            break;
    }
    if (w->timeout_ms > 0) {
        clock_gettime(CLOCK_REALTIME, &deadline);
        deadline.tv_sec += w->timeout_ms / 1000;
        deadline.tv_nsec += (w->timeout_ms % 1000) * 1000000L;
        if (deadline.tv_nsec >= 1000000000L) {
            deadline.tv_sec++;
            deadline.tv_nsec -= 1000000000L;
        }
    }
    pthread_mutex_lock(&me->mu);
    me->sleeping = 1;
    while (atomic_load_explicit(&me->pending, memory_order_acquire) > 0 &&
           !atomic_load(&w->aborted)) {
        if (w->timeout_ms > 0) {
            if (pthread_cond_timedwait(&me->cv, &me->mu, &deadline) ==
                ETIMEDOUT) {
                me->sleeping = 0;
                pthread_mutex_unlock(&me->mu);
                return ccs_err_set(err, CCS_ERR_TIMEOUT,
                                   "%d transfer(s) not matched after %ld ms "
                                   "(CCS_TIMEOUT_S): did every rank make "
                                   "the same call?",
                                   atomic_load(&me->pending),
                                   w->timeout_ms);
            }
        } else {
            pthread_cond_wait(&me->cv, &me->mu);
        }
    }
    me->sleeping = 0;
    pthread_mutex_unlock(&me->mu);
    if (atomic_load_explicit(&me->pending, memory_order_acquire) > 0)
        return ccs_err_set(err, CCS_ERR_TRANSPORT,
                           "another rank failed; the world is aborted");
done:
    if (atomic_exchange(&me->failed, 0))
        return ccs_err_set(err, CCS_ERR_MISMATCH,
                           "a peer found a transfer size mismatch: the "
                           "ranks made different calls");
    return CCS_OK;
}

static void th_abort(ccs_xport_t *x)
{
    tx_world_t *w = x->w;

    atomic_store(&w->aborted, 1);
    for (int r = 0; r < w->nranks; r++) {
        pthread_mutex_lock(&w->ranks[r].mu);
        pthread_cond_broadcast(&w->ranks[r].cv);
        pthread_mutex_unlock(&w->ranks[r].mu);
    }
}

static void th_destroy(ccs_xport_t *x)
{
    if (x == NULL)
        return;
    if (atomic_fetch_sub(&x->w->refs, 1) == 1)
        world_free(x->w);
    free(x);
}

static const ccs_xport_ops_t threads_ops = {
    .name = "threads",
    .device_mem = false,
    .mem_alloc = ccs_cpu_mem_alloc,
    .mem_free = ccs_cpu_mem_free,
    .copy = ccs_cpu_copy,
    .memset0 = ccs_cpu_memset0,
    .reduce = ccs_cpu_reduce,
    .div = ccs_cpu_div,
    .run_begin = ccs_cpu_run_begin,
    .run_end = ccs_cpu_nop,
    .group_begin = ccs_cpu_group_begin,
    .recv = th_recv,
    .send = th_send,
    .group_end = ccs_cpu_nop,
    .wait = th_wait,
    .abort = th_abort,
    .destroy = th_destroy,
};

ccs_status_t ccs_comm_init_threads(int nranks, ccs_comm_t **comms)
{
    tx_world_t *w = NULL;     /* shared by the comms; freed with the last */
    ccs_status_t st = CCS_OK;
    int made = 0, inited = 0;

    if (comms == NULL || nranks < 1 || (uint32_t)nranks > CCS_MAX_RANKS)
        return CCS_ERR_INVALID;
    w = calloc(1, sizeof(*w));
    if (w == NULL)
        return CCS_ERR_NOMEM;
    w->nranks = nranks;
    w->spin_ns = env_long("CCS_SPIN_US", 20) * 1000;
    w->timeout_ms = env_long("CCS_TIMEOUT_S", 0) * 1000;
    w->ranks = calloc((size_t)nranks, sizeof(*w->ranks));
    w->pairs = calloc((size_t)nranks * nranks, sizeof(*w->pairs));
    if (w->ranks == NULL || w->pairs == NULL) {
        free(w->ranks);
        free(w->pairs);
        free(w);
        return CCS_ERR_NOMEM;
    }
    for (; inited < nranks; inited++) {
        pthread_mutex_init(&w->ranks[inited].mu, NULL);
        pthread_cond_init(&w->ranks[inited].cv, NULL);
    }
    /* One reference per rank; a rank whose communicator cannot be made
     * drops its reference here, the made ones in ccs_comm_destroy. */
    atomic_store(&w->refs, nranks);
    for (; made < nranks; made++) {
        ccs_xport_t *x = calloc(1, sizeof(*x)); /* owned by its comm */
        if (x == NULL) {
            st = CCS_ERR_NOMEM;
            break;
        }
        x->w = w;
        x->rank = made;
        st = ccs_comm_create(&threads_ops, x, made, nranks, &comms[made],
                             NULL);
        if (st != CCS_OK) {
            /* x was destroyed, dropping rank `made`'s reference. */
            int rest = nranks - made - 1;
            for (int r = 0; r < made; r++) {
                ccs_comm_destroy(comms[r]);
                comms[r] = NULL; /* nothing written on failure */
            }
            if (rest > 0 && atomic_fetch_sub(&w->refs, rest) == rest)
                world_free(w);
            return st;
        }
    }
    if (st != CCS_OK) {
        int rest = nranks - made;
        for (int r = 0; r < made; r++) {
            ccs_comm_destroy(comms[r]);
            comms[r] = NULL;
        }
        if (atomic_fetch_sub(&w->refs, rest) == rest)
            world_free(w);
        return st;
    }
    return CCS_OK;
}
