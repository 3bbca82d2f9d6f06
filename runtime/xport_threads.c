/*
 * xport_threads.c - the threads transport: ranks are threads of one
 * process sharing a "world".
 *
 * Point to point without locks and without intermediate buffers.  For each
 * ordered pair (src -> dst) the world keeps a single-producer /
 * single-consumer ring of send descriptors: a send publishes (pointer,
 * bytes, step) in the next slot and advances the ring's tail; it moves no
 * data.  The receiver pulls: inside its wait it takes the descriptors in
 * ring order (the plan's matching order), copies straight from the
 * sender's buffer into its own -- or, for RECV_REDUCE, reduces straight
 * from the sender's buffer into the destination (recv_reduce), so nothing
 * is staged -- and advances the ring's head, which completes the send.
 * The sender's wait returns when the head has passed all its slots.  Both
 * sides of a pair therefore copy in parallel (each pulls its own
 * receives), and every message costs a few cache-line transfers.
 *
 * Waiting: poll (bounded, CCS_SPIN_US, default 20 us; 0 disables),
 * pausing and yielding every few rounds so that a peer sharing our core
 * runs at once, then sleep on a futex (the rank's "bell").  Whoever makes
 * progress possible for a rank -- a send to it, a head advance on a ring
 * it produces into, an abort -- rings its bell only when the rank has
 * announced it sleeps (sequentially consistent flag / re-check, so no
 * wake-up is lost); the hot path is plain loads and stores.
 *
 * A ring is full when a step sends more messages to one peer than it has
 * slots: the sender then consumes its own posted receives while it waits
 * for room (receives are posted before sends), so two ranks filling each
 * other's rings cannot deadlock.
 *
 * Failure: a rank that fails mid-run sets the world's abort flag and
 * rings every bell; blocked ranks return CCS_ERR_TRANSPORT.  Every wait
 * is bounded by the communicator's timeout (ccs_comm_set_timeout,
 * CCS_TIMEOUT_S, default CCS_TIMEOUT_DEFAULT_S): a rank that never calls,
 * or calls something else, is an error naming the step and peer, not a
 * hang.  A size mismatch between matched send and receive fails both.
 */
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef __linux__
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include "ccs_int.h"
#include "reduce.h"

#define RING_SLOTS 64        /* sends in flight per ordered pair */

typedef struct tx_slot {
    const void *ptr;         /* the sender's bytes */
    size_t bytes;
    uint32_t step;
    int mismatch;            /* set by the consumer before head moves */
} tx_slot_t;

typedef struct tx_ring {
    _Alignas(64) atomic_uint_fast64_t tail;  /* written by src */
    _Alignas(64) atomic_uint_fast64_t head;  /* written by dst */
    _Alignas(64) tx_slot_t slots[RING_SLOTS];
} tx_ring_t;

typedef struct tx_rank {
    _Alignas(64) atomic_uint bell;  /* futex word: bumped to wake */
    atomic_int sleeping;            /* the rank is (about to be) asleep */
} tx_rank_t;

typedef struct tx_world {
    int nranks;
    atomic_int refs;         /* communicators alive */
    atomic_int aborted;
    tx_rank_t *ranks;        /* owned; [nranks] */
    tx_ring_t *rings;        /* owned; [src * nranks + dst] */
} tx_world_t;

/* A receive posted in this step, completed by wait. */
typedef struct tx_recv {
    uint32_t peer, step;
    void *dst;
    const void *a;           /* recv_reduce: dst = a (op) message */
    size_t bytes, n;         /* n elements (recv_reduce only) */
    ccs_dtype_t dtype;
    ccs_redop_t op;
    bool reduce;
    bool done;
} tx_recv_t;

/* A send posted in this step: complete when the ring's head passes idx. */
typedef struct tx_send {
    uint32_t peer, step;
    uint64_t idx;
    size_t bytes;
} tx_send_t;

struct ccs_xport {
    tx_world_t *w;
    int rank;
    long spin_ns;
    double timeout_s;        /* 0: wait forever */
    tx_recv_t *recvs;        /* owned; posted this step */
    uint32_t nrecv, rcap, recv_left;
    tx_send_t *sends;        /* owned; posted this step */
    uint32_t nsend, scap;
    uint32_t *blocked;       /* owned; [nranks] pass stamp per peer */
    uint32_t pass;
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
    free(w->rings);
    free(w->ranks);
    free(w);
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* Wake rank r if it sleeps.  Called after the store that makes progress
 * possible; seq_cst on both sides (store; load sleeping here, store
 * sleeping; re-check there) means either we see it asleep or it sees our
 * store. */
static void ring_bell(tx_world_t *w, uint32_t r)
{
    tx_rank_t *k = &w->ranks[r];

    if (atomic_load(&k->sleeping)) {
        atomic_fetch_add(&k->bell, 1);
#ifdef __linux__
        syscall(SYS_futex, &k->bell, FUTEX_WAKE_PRIVATE, INT_MAX, NULL,
                NULL, 0);
#endif
    }
}

/* Sleep until the bell moves from `seen` or `ns` pass (at most). */
static void bell_sleep(tx_rank_t *k, unsigned seen, double s)
{
#ifdef __linux__
    struct timespec ts;
    if (s > 0.5 || s <= 0)
        s = 0.5;     /* wake now and then to re-check abort and time */
    ts.tv_sec = (time_t)s;
    ts.tv_nsec = (long)((s - (double)ts.tv_sec) * 1e9);
    syscall(SYS_futex, &k->bell, FUTEX_WAIT_PRIVATE, seen, &ts, NULL, 0);
#else
    struct timespec ts = { 0, 50000 };
    (void)k;
    (void)seen;
    (void)s;
    nanosleep(&ts, NULL);
#endif
}

static ccs_status_t aborted_err(ccs_err_t *err)
{
    return ccs_err_set(err, CCS_ERR_TRANSPORT,
                       "another rank failed; the world is aborted");
}

/* Take every posted receive whose message has arrived.  Receives from one
 * peer are taken in posting order: a receive waiting on peer p blocks the
 * later ones from p for this pass. */
static ccs_status_t progress_recvs(ccs_xport_t *x, ccs_err_t *err)
{
    tx_world_t *w = x->w;
    uint32_t stamp = ++x->pass;

    if (stamp == 0) {
        memset(x->blocked, 0, (size_t)w->nranks * sizeof(*x->blocked));
        stamp = x->pass = 1;
    }
    for (uint32_t i = 0; i < x->nrecv && x->recv_left > 0; i++) {
        tx_recv_t *rv = &x->recvs[i];
        tx_ring_t *rg;
        uint64_t h;
        tx_slot_t *sl;

        if (rv->done || x->blocked[rv->peer] == stamp)
            continue;
        rg = &w->rings[(size_t)rv->peer * w->nranks + x->rank];
        h = atomic_load_explicit(&rg->head, memory_order_relaxed);
        if (atomic_load_explicit(&rg->tail, memory_order_acquire) == h) {
            x->blocked[rv->peer] = stamp;
            continue;
        }
        sl = &rg->slots[h % RING_SLOTS];
        if (sl->bytes != rv->bytes) {
            sl->mismatch = 1;
            atomic_store(&rg->head, h + 1);
            ring_bell(w, rv->peer);
            return ccs_err_set(err, CCS_ERR_MISMATCH,
                               "receive of %zu bytes from rank %u matched a "
                               "send of %zu bytes (posted in step %u): the "
                               "ranks made different calls", rv->bytes, rv->peer, sl->bytes,
                               sl->step);
        }
        if (rv->reduce)
            ccs_reduce_cpu(rv->dst, rv->a, sl->ptr, rv->n, rv->dtype,
                           rv->op);
        else
            memcpy(rv->dst, sl->ptr, rv->bytes);
        atomic_store(&rg->head, h + 1);
        ring_bell(w, rv->peer);
        rv->done = true;
        x->recv_left--;
    }
    return CCS_OK;
}

/* Index of the first of our sends not yet taken, or nsend. */
static uint32_t first_open_send(ccs_xport_t *x)
{
    tx_world_t *w = x->w;

    for (uint32_t i = 0; i < x->nsend; i++) {
        tx_send_t *sd = &x->sends[i];
        tx_ring_t *rg = &w->rings[(size_t)x->rank * w->nranks + sd->peer];
        if (atomic_load_explicit(&rg->head, memory_order_acquire) <= sd->idx)
            return i;
    }
    return x->nsend;
}

/* Spin, then sleep, until `ready` holds; CCS_ERR_TIMEOUT after the
 * communicator's timeout (the caller names what it waited for). */
typedef bool (*ready_fn)(ccs_xport_t *x, ccs_status_t *st, ccs_err_t *err);

static ccs_status_t block_until(ccs_xport_t *x, ready_fn ready,
                                ccs_err_t *err)
{
    tx_world_t *w = x->w;
    tx_rank_t *me = &w->ranks[x->rank];
    ccs_status_t st = CCS_OK;
    double t0 = -1, now;

    for (unsigned i = 1;; i++) {
        if (ready(x, &st, err))
            return st;
        if (atomic_load_explicit(&w->aborted, memory_order_relaxed))
            return aborted_err(err);
        /* Pause for a few rounds, then yield: when the peer shares our
         * core it runs at once instead of waiting out our time slice. */
        if ((i & 15) != 0) {
            cpu_relax();
            continue;
        }
        sched_yield();
        now = ccs_now_s();
        if (t0 < 0)
            t0 = now;
        if ((now - t0) * 1e9 < (double)x->spin_ns)
            continue;
        if (x->timeout_s > 0 && now - t0 >= x->timeout_s)
            return ccs_err_set(err, CCS_ERR_TIMEOUT, "timed out");
        {
            unsigned seen = atomic_load(&me->bell);
            atomic_store(&me->sleeping, 1);
            if (!ready(x, &st, err) && !atomic_load(&w->aborted))
                bell_sleep(me, seen, x->timeout_s > 0
                                         ? x->timeout_s - (now - t0) : 0);
            else
                i = 0;   /* ready now: the next round takes it */
            atomic_store(&me->sleeping, 0);
        }
    }
}

static bool ring_has_room(ccs_xport_t *x, ccs_status_t *st, ccs_err_t *err)
{
    /* x->sends[nsend] describes the send waiting for room (peer set). */
    tx_world_t *w = x->w;
    uint32_t peer = x->sends[x->nsend].peer;
    tx_ring_t *rg = &w->rings[(size_t)x->rank * w->nranks + peer];

    if (atomic_load_explicit(&rg->tail, memory_order_relaxed) -
            atomic_load_explicit(&rg->head, memory_order_acquire) <
        RING_SLOTS)
        return true;
    *st = progress_recvs(x, err);
    return *st != CCS_OK;
}

static bool grow(void **arr, uint32_t *cap, uint32_t need, size_t elem)
{
    if (need <= *cap)
        return true;
    uint32_t c = *cap ? *cap * 2 : 16;
    while (c < need)
        c *= 2;
    void *n = realloc(*arr, (size_t)c * elem);
    if (n == NULL)
        return false;
    *arr = n;
    *cap = c;
    return true;
}

static ccs_status_t th_send(ccs_xport_t *x, uint32_t peer, const void *buf,
                            size_t bytes, uint32_t step, uint32_t seq,
                            ccs_err_t *err)
{
    tx_world_t *w = x->w;
    tx_ring_t *rg = &w->rings[(size_t)x->rank * w->nranks + peer];
    uint64_t t;
    tx_slot_t *sl;
    tx_send_t *sd;

    (void)seq;
    if (atomic_load_explicit(&w->aborted, memory_order_relaxed))
        return aborted_err(err);
    /* One spare entry: ring_has_room reads the pending send's peer. */
    if (!grow((void **)&x->sends, &x->scap, x->nsend + 1, sizeof(*sd)))
        return ccs_err_set(err, CCS_ERR_NOMEM, "out of memory");
    sd = &x->sends[x->nsend];
    sd->peer = peer;
    sd->step = step;
    sd->bytes = bytes;
    t = atomic_load_explicit(&rg->tail, memory_order_relaxed);
    if (t - atomic_load_explicit(&rg->head, memory_order_acquire) >=
        RING_SLOTS) {
        ccs_status_t st = block_until(x, ring_has_room, err);
        if (st != CCS_OK) {
            if (st == CCS_ERR_TIMEOUT)
                ccs_err_set(err, st, "send of %zu bytes to rank %u: its "
                            "queue stayed full for %g s (CCS_TIMEOUT_S): "
                            "did every rank make the same call?", bytes,
                            peer, x->timeout_s);
            return st;
        }
    }
    sl = &rg->slots[t % RING_SLOTS];
    sl->ptr = buf;
    sl->bytes = bytes;
    sl->step = step;
    sl->mismatch = 0;
    sd->idx = t;
    x->nsend++;
    atomic_store(&rg->tail, t + 1);
    ring_bell(w, peer);
    return CCS_OK;
}

static ccs_status_t post_recv(ccs_xport_t *x, const tx_recv_t *rv,
                              ccs_err_t *err)
{
    if (atomic_load_explicit(&x->w->aborted, memory_order_relaxed))
        return aborted_err(err);
    if (!grow((void **)&x->recvs, &x->rcap, x->nrecv + 1, sizeof(*rv)))
        return ccs_err_set(err, CCS_ERR_NOMEM, "out of memory");
    x->recvs[x->nrecv++] = *rv;
    x->recv_left++;
    return CCS_OK;
}

static ccs_status_t th_recv(ccs_xport_t *x, uint32_t peer, void *buf,
                            size_t bytes, uint32_t step, uint32_t seq,
                            ccs_err_t *err)
{
    tx_recv_t rv = { .peer = peer, .step = step, .dst = buf,
                     .bytes = bytes };
    (void)seq;
    return post_recv(x, &rv, err);
}

static ccs_status_t th_recv_reduce(ccs_xport_t *x, uint32_t peer, void *dst,
                                   const void *a, size_t n,
                                   ccs_dtype_t dtype, ccs_redop_t op,
                                   uint32_t step, uint32_t seq,
                                   ccs_err_t *err)
{
    tx_recv_t rv = { .peer = peer, .step = step, .dst = dst, .a = a,
                     .bytes = n * ccs_dtype_size(dtype), .n = n,
                     .dtype = dtype, .op = op, .reduce = true };
    (void)seq;
    return post_recv(x, &rv, err);
}

static bool step_done(ccs_xport_t *x, ccs_status_t *st, ccs_err_t *err)
{
    if (x->recv_left > 0) {
        *st = progress_recvs(x, err);
        if (*st != CCS_OK)
            return true;
        if (x->recv_left > 0)
            return false;
    }
    return first_open_send(x) == x->nsend;
}

static ccs_status_t th_wait(ccs_xport_t *x, ccs_err_t *err)
{
    ccs_status_t st = block_until(x, step_done, err);

    if (st == CCS_ERR_TIMEOUT) {
        uint32_t i;
        for (i = 0; i < x->nrecv && x->recvs[i].done; i++)
            ;
        if (i < x->nrecv)
            ccs_err_set(err, st, "%s of %zu bytes from rank %u not "
                        "matched after %g s (CCS_TIMEOUT_S): the rank is "
                        "gone, late, or made a different call",
                        x->recvs[i].reduce ? "recv_reduce" : "receive",
                        x->recvs[i].bytes, x->recvs[i].peer, x->timeout_s);
        else if ((i = first_open_send(x)) < x->nsend)
            ccs_err_set(err, st, "send of %zu bytes to rank %u not "
                        "taken after %g s (CCS_TIMEOUT_S): the rank is "
                        "gone, late, or made a different call",
                        x->sends[i].bytes,
                        x->sends[i].peer, x->timeout_s);
    }
    if (st == CCS_OK) {
        tx_world_t *w = x->w;
        for (uint32_t i = 0; i < x->nsend; i++) {
            tx_ring_t *rg =
                &w->rings[(size_t)x->rank * w->nranks + x->sends[i].peer];
            if (rg->slots[x->sends[i].idx % RING_SLOTS].mismatch) {
                st = ccs_err_set(err, CCS_ERR_MISMATCH,
                                 "send of %zu bytes to rank %u matched a "
                                 "receive of another size: the ranks made "
                                 "different calls", x->sends[i].bytes,
                                 x->sends[i].peer);
                break;
            }
        }
    }
    x->nrecv = x->nsend = x->recv_left = 0;
    return st;
}

static void th_set_timeout(ccs_xport_t *x, double seconds)
{
    x->timeout_s = seconds > 0 ? seconds : 0;
}

static void th_abort(ccs_xport_t *x)
{
    tx_world_t *w = x->w;

    atomic_store(&w->aborted, 1);
    for (int r = 0; r < w->nranks; r++) {
        atomic_fetch_add(&w->ranks[r].bell, 1);
#ifdef __linux__
        syscall(SYS_futex, &w->ranks[r].bell, FUTEX_WAKE_PRIVATE, INT_MAX,
                NULL, NULL, 0);
#endif
    }
}

static void th_destroy(ccs_xport_t *x)
{
    if (x == NULL)
        return;
    if (atomic_fetch_sub(&x->w->refs, 1) == 1)
        world_free(x->w);
    free(x->recvs);
    free(x->sends);
    free(x->blocked);
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
    .recv_reduce = th_recv_reduce,
    .set_timeout = th_set_timeout,
    .abort = th_abort,
    .destroy = th_destroy,
};

ccs_status_t ccs_comm_init_threads(int nranks, ccs_comm_t **comms)
{
    tx_world_t *w = NULL;     /* shared by the comms; freed with the last */
    ccs_status_t st = CCS_OK;
    int made = 0;
    long spin_ns;
    double timeout_s;

    if (comms == NULL || nranks < 1 || (uint32_t)nranks > CCS_MAX_RANKS)
        return CCS_ERR_INVALID;
    w = calloc(1, sizeof(*w));
    if (w == NULL)
        return CCS_ERR_NOMEM;
    w->nranks = nranks;
    spin_ns = env_long("CCS_SPIN_US", 20) * 1000;
    timeout_s = ccs_timeout_env_s();
    w->ranks = aligned_alloc(64, ((size_t)nranks * sizeof(*w->ranks) + 63) /
                                     64 * 64);
    w->rings = aligned_alloc(64, (size_t)nranks * nranks * sizeof(*w->rings));
    if (w->ranks == NULL || w->rings == NULL) {
        world_free(w);
        return CCS_ERR_NOMEM;
    }
    memset(w->ranks, 0, (size_t)nranks * sizeof(*w->ranks));
    memset(w->rings, 0, (size_t)nranks * nranks * sizeof(*w->rings));
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
        x->spin_ns = spin_ns;
        x->timeout_s = timeout_s;
        x->blocked = calloc((size_t)nranks, sizeof(*x->blocked));
        if (x->blocked == NULL) {
            free(x);
            st = CCS_ERR_NOMEM;
            break;
        }
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
