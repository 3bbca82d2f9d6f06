/*
 * xport_threads.c - the threads transport: ranks are threads of one
 * process sharing a "world".
 *
 * Point to point without locks and without intermediate buffers.  Each
 * ordered pair (src -> dst) has a ring of slots; the k-th send from src to
 * dst and the k-th receive of dst from src (the plan's matching order)
 * meet in slot k % SLOTS.  Each side writes its half of the slot (pointer,
 * bytes; for RECV_REDUCE the destination, the local operand, dtype and op)
 * and then sets its bit in the slot's state with one atomic fetch-or, so
 * exactly one side learns that it came second:
 *   - sends of at most INLINE_BYTES copy their data into the slot and
 *     complete at once; the receiver moves it (see place);
 *   - small messages (< PULL_BYTES): the side that came second moves the
 *     data at once -- copies, or reduces straight from the sender's buffer
 *     into the receiver's destination -- and completes both requests: one
 *     handshake per message, and a rank whose peer is descheduled still
 *     finishes its step as long as the peer had posted;
 *   - large messages are cut into pieces that both sides claim inside
 *     their waits (the receiver as it waits for the data, the sender as it
 *     waits for the send to be taken): the ranks of a ring each copy their
 *     own receives in parallel, and when one rank is descheduled the other
 *     does the whole transfer instead of waiting for it.
 * Completion advances the slot's round, which frees the slot for message
 * k + SLOTS.  Nothing is staged: RECV_REDUCE reduces from the peer's
 * buffer in place (recv_reduce).
 *
 * Waiting: poll (bounded, CCS_SPIN_US, default 20 us; 0 disables),
 * pausing and yielding every few rounds so that a peer sharing our core
 * runs at once, then sleep on a futex (the rank's "bell").  Whoever makes
 * progress possible for a rank rings its bell only when the rank has
 * announced it sleeps (sequentially consistent flag / re-check, so no
 * wake-up is lost); the hot path is plain loads, stores and one fetch-or.
 *
 * A slot still busy with message k - SLOTS (a step that posts more than
 * SLOTS messages to one peer) never blocks the post: the request waits in
 * the rank's list and is placed by its wait once the slot frees, so ranks
 * filling each other's rings cannot deadlock.  Rings are allocated on
 * first use of a pair.
 *
 * Failure: a rank that fails mid-run sets the world's abort flag and
 * rings every bell; blocked ranks return CCS_ERR_TRANSPORT.  Every wait
 * is bounded by the communicator's timeout (ccs_comm_set_timeout,
 * CCS_TIMEOUT_S, default CCS_TIMEOUT_DEFAULT_S): a rank that never calls,
 * or calls something else, is an error naming the step and peer, not a
 * hang.  A size mismatch between matched send and receive fails both,
 * or only the receiver when the send was inline (complete already); the
 * receiver's failure then aborts the world.
 */
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdatomic.h>
#include <stddef.h>
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

#define SLOTS 16                     /* messages in flight per pair */
#define PULL_BYTES ((size_t)16384)   /* from here on: pieces, in waits */
#define PIECE_BYTES ((size_t)131072) /* one claim of a large message */
#define INLINE_BYTES 16              /* up to here: sent in the slot itself */

/* Slot state: round << 4 | INL | MM | RECVD | SENT.  MM reports a size
 * mismatch of the round just completed (read by the side waiting on it
 * before either side can complete the next round). */
#define ST_SENT 1u
#define ST_RECVD 2u
#define ST_MM 4u
#define ST_INL 8u      /* the send of this round is inline (set with SENT) */
#define ST_ROUND(s) ((s) >> 4)

/* The first cache line holds everything a small message needs (state and
 * both halves), so that the side moving it touches one line the peer
 * wrote, not two. */
typedef struct tx_slot {
    _Alignas(64) atomic_uint_fast64_t state;
    /* sender's half: where the data lies, or the data itself when it has
     * at most INLINE_BYTES (sbytes says which) */
    union {
        const void *src;
        unsigned char inl[INLINE_BYTES];
    } s;
    size_t sbytes;
    /* receiver's half (a reduce's element count is rbytes / its size) */
    void *dst;
    const void *a;            /* reduce: dst = a (op) src */
    size_t rbytes;
    uint8_t dtype;            /* ccs_dtype_t */
    uint8_t op;               /* ccs_redop_t */
    bool reduce;
    /* Large messages: round << 32 | pieces of the round (set by the side
     * that placed its half second: then both halves are known), round <<
     * 32 | next piece to claim, and pieces finished in this round (both
     * reset by that side before it publishes the pieces). */
    _Alignas(64) atomic_uint_fast64_t npieces;
    atomic_uint_fast64_t next;
    atomic_size_t finished;
} tx_slot_t;

_Static_assert(offsetof(tx_slot_t, npieces) == 64,
               "a small message's fields must share the slot's first line");
_Static_assert(CCS_DTYPE_COUNT <= 256 && CCS_REDOP_COUNT <= 256,
               "dtype and op are kept in one byte each");

typedef struct tx_ring {
    tx_slot_t slots[SLOTS];
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
    _Atomic(tx_ring_t *) *rings; /* owned, each ring too; [src * R + dst],
                                    made on first use */
    /* The reduce kernels for this CPU, picked once at init rather than on
     * every reduce (the instruction-set check is a noticeable share of a
     * small call).  A constant table of reduce.c, not owned. */
    const ccs_reduce_kernels_t *kern;
} tx_world_t;

/* A request posted in this step, complete when its slot's round moved.
 * It carries its half of the slot until it is placed there (a slot still
 * busy with message k - SLOTS makes it wait in the request list). */
typedef struct tx_req {
    tx_slot_t *slot;
    uint64_t round;
    uint32_t peer, step;
    size_t bytes;
    const void *src;          /* send */
    void *dst;                /* receive */
    const void *a;            /* reduce: dst = a (op) src */
    ccs_dtype_t dtype;
    ccs_redop_t op;
    bool reduce;
    bool is_send;
    bool big;                /* large: moved in pieces inside the waits */
    bool eager;              /* send of at most INLINE_BYTES: complete once
                                copied into its slot */
    bool placed;
    bool done;
    bool mm;                 /* completed with a size mismatch (set where
                                the completion is seen; tickets only) */
} tx_req_t;

struct ccs_xport {
    tx_world_t *w;
    int rank;
    long spin_ns;
    double timeout_s;        /* 0: wait forever */
    tx_req_t *reqs;          /* owned; posted since the last wait */
    uint32_t nreq, cap, left;
    uint32_t live0;          /* reqs[0 .. live0) are all complete */
    /* Per-request completion (ticket, test, wait_any): reqs[i] has ticket
     * tbase + i; wa_t[0 .. wa_n) are the tickets a wait_any waits for.
     * ticketed: a ticket was taken since the last wait, so requests of one
     * slot may be posted before the previous round's completion was seen
     * (see settle_slot). */
    uint64_t tbase;
    const uint64_t *wa_t;
    uint32_t wa_n;
    bool ticketed;
    uint64_t *sidx, *ridx;   /* owned; [nranks] messages sent to / received
                                from each peer so far */
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
    if (w->rings != NULL)
        for (size_t i = 0; i < (size_t)w->nranks * w->nranks; i++)
            free(atomic_load(&w->rings[i]));
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

    atomic_thread_fence(memory_order_seq_cst);
    if (atomic_load_explicit(&k->sleeping, memory_order_relaxed)) {
        atomic_fetch_add(&k->bell, 1);
#ifdef __linux__
        syscall(SYS_futex, &k->bell, FUTEX_WAKE_PRIVATE, INT_MAX, NULL,
                NULL, 0);
#endif
    }
}

/* Sleep until the bell moves from `seen`, for at most s seconds (and at
 * most half a second, to re-check abort and the clock). */
static void bell_sleep(tx_rank_t *k, unsigned seen, double s)
{
#ifdef __linux__
    struct timespec ts;
    if (s > 0.5 || s <= 0)
        s = 0.5;
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

static tx_ring_t *get_ring(tx_world_t *w, uint32_t src, uint32_t dst)
{
    _Atomic(tx_ring_t *) *pp = &w->rings[(size_t)src * w->nranks + dst];
    tx_ring_t *r = atomic_load_explicit(pp, memory_order_acquire), *exp;

    if (r != NULL)
        return r;
    r = aligned_alloc(64, sizeof(*r));   /* owned by the world */
    if (r == NULL)
        return NULL;
    memset(r, 0, sizeof(*r));
    exp = NULL;
    if (!atomic_compare_exchange_strong(pp, &exp, r)) {
        free(r);                 /* the other side of the pair made it */
        return exp;
    }
    return r;
}

/* Complete round q of a slot: free it for message k + SLOTS, wake the
 * other side (`me` is running this, so it is awake). */
static void finish_round(tx_world_t *w, tx_slot_t *sl, uint64_t q,
                         uint64_t mm, uint32_t src, uint32_t dst,
                         uint32_t me)
{
    atomic_store_explicit(&sl->state, ((q + 1) << 4) | mm,
                          memory_order_release);
    ring_bell(w, me == src ? dst : src);
}

/* Move the data of a small message whose two halves are posted (round q)
 * and complete the round. */
static void transfer(tx_world_t *w, tx_slot_t *sl, uint64_t q, uint32_t src,
                     uint32_t dst, uint32_t me)
{
    uint64_t mm = 0;
    const void *from = sl->sbytes <= INLINE_BYTES ? (const void *)sl->s.inl
                                                  : sl->s.src;

    if (sl->sbytes != sl->rbytes)
        mm = ST_MM;
    else if (sl->reduce)
        ccs_reduce_with(w->kern, sl->dst, sl->a, from,
                        sl->rbytes / ccs_dtype_size((ccs_dtype_t)sl->dtype),
                        (ccs_dtype_t)sl->dtype, (ccs_redop_t)sl->op);
    else
        memcpy(sl->dst, from, sl->rbytes);
    finish_round(w, sl, q, mm, src, dst, me);
}

/* Large messages are cut into pieces that whoever waits on the slot
 * claims: the receiver in its wait, and the sender while it waits for the
 * send to be taken -- so a rank whose peer is descheduled does the whole
 * transfer, and two running ranks share it.  A claim names the round, so
 * a late helper never touches the next message in the slot.  Whoever
 * finishes the last piece completes the round. */
static void work(tx_world_t *w, tx_slot_t *sl, uint64_t q, uint32_t src,
                 uint32_t dst, uint32_t me)
{
    uint64_t a = atomic_load_explicit(&sl->npieces, memory_order_acquire);
    uint64_t np = a & 0xffffffffu;

    if ((a >> 32) != (q & 0xffffffffu))
        return;                  /* not armed yet, or the round is over */
    for (;;) {
        uint64_t v = atomic_load_explicit(&sl->next, memory_order_relaxed);
        uint64_t p = v & 0xffffffffu;
        size_t off, len, bytes;
        if ((v >> 32) != (q & 0xffffffffu) || p >= np)
            return;
        if (!atomic_compare_exchange_weak_explicit(&sl->next, &v, v + 1,
                                                   memory_order_acquire,
                                                   memory_order_relaxed))
            continue;
        /* Piece p of round q is ours and unfinished, so the round cannot
         * end and both halves stay as they are while we read them. */
        bytes = sl->rbytes;
        if (sl->sbytes != bytes) {
            finish_round(w, sl, q, ST_MM, src, dst, me);
            return;
        }
        off = (size_t)p * PIECE_BYTES;
        len = bytes - off < PIECE_BYTES ? bytes - off : PIECE_BYTES;
        if (sl->reduce) {
            /* pieces hold whole elements */
            size_t es = ccs_dtype_size((ccs_dtype_t)sl->dtype);
            ccs_reduce_with(w->kern, (uint8_t *)sl->dst + off,
                            (const uint8_t *)sl->a + off,
                            (const uint8_t *)sl->s.src + off, len / es,
                            (ccs_dtype_t)sl->dtype, (ccs_redop_t)sl->op);
        } else {
            memcpy((uint8_t *)sl->dst + off,
                   (const uint8_t *)sl->s.src + off, len);
        }
        if (atomic_fetch_add_explicit(&sl->finished, 1,
                                      memory_order_acq_rel) + 1 == np)
            finish_round(w, sl, q, 0, src, dst, me);
    }
}

/* Put a request's half into its slot (free for its round) and set our
 * bit; the side that comes second moves a small message at once.  A send
 * of at most INLINE_BYTES copies its data into the slot and is complete
 * there; the receiver moves it, whichever side came second: the data
 * then crosses between the cores in the line that carries the state (the
 * sender takes it, the receiver reads it back), where a move by the
 * sender would fetch the slot and then the receiver's buffer, both of
 * which the receiver must then fetch back. */
static void place(ccs_xport_t *x, tx_req_t *rq)
{
    tx_world_t *w = x->w;
    tx_slot_t *sl = rq->slot;
    uint32_t me = (uint32_t)x->rank;
    uint64_t old;

    if (rq->is_send) {
        if (rq->eager)
            memcpy(sl->s.inl, rq->src, rq->bytes);
        else
            sl->s.src = rq->src;
        sl->sbytes = rq->bytes;
    } else {
        sl->dst = rq->dst;
        sl->a = rq->a;
        sl->rbytes = rq->bytes;
        sl->dtype = (uint8_t)rq->dtype;
        sl->op = (uint8_t)rq->op;
        sl->reduce = rq->reduce;
    }
    rq->placed = true;
    old = atomic_fetch_or_explicit(&sl->state,
                                   !rq->is_send ? ST_RECVD
                                   : rq->eager  ? ST_SENT | ST_INL
                                                : ST_SENT,
                                   memory_order_acq_rel);
    if (rq->eager) {
        /* Our data is in the slot: done.  A receiver already waiting
         * moves it in its wait; wake it if it sleeps. */
        rq->done = true;
        x->left--;
        if (old & ST_RECVD)
            ring_bell(w, rq->peer);
        return;
    }
    if (!(old & (rq->is_send ? ST_RECVD : ST_SENT))) {
        /* First: the peer finds our half when it posts its own.  Nobody
         * waits on a half alone, except a large message's peer, which
         * helps with pieces once armed (and is rung then); the bell here
         * is only kept for large messages, where it costs nothing. */
        if (rq->big)
            ring_bell(w, rq->peer);
        return;
    }
    if (!rq->big || (old & ST_INL)) {
        /* (a large receive matched by an inline send: the sizes differ,
         * transfer reports it) */
        transfer(w, sl, rq->round, rq->is_send ? me : rq->peer,
                 rq->is_send ? rq->peer : me, me);
        return;
    }
    {
        /* Second of a large message: both halves known, arm the pieces
         * (one when the sizes differ: it reports the mismatch).  The
         * claim counters are reset here, before the release that
         * publishes the round: no one claims a piece of this round before
         * seeing it armed, and every piece of the round before is
         * finished. */
        uint64_t np = sl->sbytes != sl->rbytes
                          ? 1 : (sl->rbytes + PIECE_BYTES - 1) / PIECE_BYTES;
        atomic_store_explicit(&sl->finished, 0, memory_order_relaxed);
        atomic_store_explicit(&sl->next, (rq->round & 0xffffffffu) << 32,
                              memory_order_relaxed);
        atomic_store_explicit(&sl->npieces,
                              ((rq->round & 0xffffffffu) << 32) | np,
                              memory_order_release);
    }
    ring_bell(w, rq->peer);
}

/* Place what can be placed, work on large messages whose halves are both
 * posted, and
 * retire completed requests; true when every request is complete. */
static bool progress(ccs_xport_t *x)
{
    for (uint32_t i = x->live0; i < x->nreq && x->left > 0; i++) {
        tx_req_t *rq = &x->reqs[i];
        uint64_t s;
        if (rq->done)
            continue;
        s = atomic_load_explicit(&rq->slot->state, memory_order_acquire);
        if (!rq->placed) {
            if (ST_ROUND(s) != rq->round)
                continue;        /* message k - SLOTS still in the slot */
            place(x, rq);
            if (rq->done)
                continue;        /* an eager send */
            s = atomic_load_explicit(&rq->slot->state, memory_order_acquire);
        }
        if (!rq->is_send && ST_ROUND(s) == rq->round &&
            (s & (ST_SENT | ST_RECVD | ST_INL)) ==
                (ST_SENT | ST_RECVD | ST_INL)) {
            /* An inline send came after our receive: ours to move.  (The
             * state says so, not sbytes: a sender that moved a message
             * itself may already be writing the slot's next round.) */
            uint32_t me = (uint32_t)x->rank;
            transfer(x->w, rq->slot, rq->round, rq->peer, me, me);
            s = atomic_load_explicit(&rq->slot->state, memory_order_acquire);
        } else if (ST_ROUND(s) == rq->round && rq->big &&
            (s & (ST_SENT | ST_RECVD)) == (ST_SENT | ST_RECVD)) {
            uint32_t me = (uint32_t)x->rank;
            work(x->w, rq->slot, rq->round, rq->is_send ? me : rq->peer,
                 rq->is_send ? rq->peer : me, me);
            s = atomic_load_explicit(&rq->slot->state, memory_order_acquire);
        }
        if (ST_ROUND(s) > rq->round) {
            /* The round after ours cannot have completed: our half of it
             * is placed by this loop, after us, or by post after
             * settle_slot saw us complete. */
            rq->mm = !rq->eager && (s & ST_MM) != 0;
            rq->done = true;
            x->left--;
            }
    }
    while (x->live0 < x->nreq && x->reqs[x->live0].done)
        x->live0++;
    return x->left == 0;
}

/* Spin, then sleep, until `ready` holds; CCS_ERR_TIMEOUT after the
 * communicator's timeout (the caller names what it waited for). */
typedef bool (*ready_fn)(ccs_xport_t *x);

static ccs_status_t block_until(ccs_xport_t *x, ready_fn ready,
                                ccs_err_t *err)
{
    tx_world_t *w = x->w;
    tx_rank_t *me = &w->ranks[x->rank];
    double t0 = -1, now;

    for (unsigned i = 1;; i++) {
        if (ready(x))
            return CCS_OK;
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
            if (!ready(x) && !atomic_load(&w->aborted))
                bell_sleep(me, seen, x->timeout_s > 0
                                         ? x->timeout_s - (now - t0) : 0);
            atomic_store(&me->sleeping, 0);
        }
    }
}

static ccs_status_t describe_timeout(ccs_xport_t *x, const tx_req_t *rq,
                                     const char *what, ccs_err_t *err)
{
    return ccs_err_set(err, CCS_ERR_TIMEOUT,
                       "%s of %zu bytes %s rank %u %s after %g s "
                       "(CCS_TIMEOUT_S): the rank is gone, late, or made a "
                       "different call", rq->is_send ? "send" : "receive",
                       rq->bytes, rq->is_send ? "to" : "from", rq->peer,
                       what, x->timeout_s);
}

/* With tickets a rank posts message k + SLOTS of a pair while message k
 * may be complete but not yet seen complete (its mismatch bit then still
 * in the slot).  Before placing the new half, which lets the next round
 * complete and overwrite that bit, record the old request's completion
 * (the slot's round moved past it: state s, read just before). */
static void settle_slot(ccs_xport_t *x, const tx_req_t *nrq, uint64_t s)
{
    for (uint32_t i = x->live0; i + 1 < x->nreq; i++) {
        tx_req_t *rq = &x->reqs[i];
        if (rq->done || rq->slot != nrq->slot || rq->is_send != nrq->is_send)
            continue;
        rq->mm = !rq->eager && (s & ST_MM) != 0;
        rq->done = true;
        x->left--;
    }
}

/* Post one half of a transfer: placed in its slot now when the slot is
 * free for it, else by a later progress (never blocks). */
static ccs_status_t post(ccs_xport_t *x, const tx_req_t *proto,
                         ccs_err_t *err)
{
    tx_world_t *w = x->w;
    uint32_t me = (uint32_t)x->rank, peer = proto->peer;
    uint64_t k = proto->is_send ? x->sidx[peer] : x->ridx[peer];
    tx_ring_t *ring;
    tx_req_t *rq;

    if (atomic_load_explicit(&w->aborted, memory_order_relaxed))
        return aborted_err(err);
    if (x->nreq == x->cap) {
        uint32_t cap = x->cap ? 2 * x->cap : 16;
        tx_req_t *n = realloc(x->reqs, (size_t)cap * sizeof(*n));
        if (n == NULL)
            return ccs_err_set(err, CCS_ERR_NOMEM, "out of memory");
        x->reqs = n;
        x->cap = cap;
    }
    ring = proto->is_send ? get_ring(w, me, peer) : get_ring(w, peer, me);
    if (ring == NULL)
        return ccs_err_set(err, CCS_ERR_NOMEM, "out of memory");
    rq = &x->reqs[x->nreq++];
    *rq = *proto;
    rq->slot = &ring->slots[k % SLOTS];
    rq->round = k / SLOTS;
    rq->big = rq->bytes >= PULL_BYTES;
    rq->eager = rq->is_send && rq->bytes <= INLINE_BYTES;
    rq->placed = rq->done = false;
    x->left++;
    if (rq->is_send)
        x->sidx[peer]++;
    else
        x->ridx[peer]++;
    /* Read the state with a read-modify-write that changes nothing: it
     * takes the line for writing, which place is about to do; a plain
     * load would share it first, and the writes then wait a second time
     * for the peer's copy to be invalidated. */
    {
        uint64_t s = atomic_fetch_add_explicit(&rq->slot->state, 0,
                                               memory_order_acquire);
        if (ST_ROUND(s) == rq->round) {
            if (x->ticketed)
                settle_slot(x, rq, s);
            place(x, rq);
        }
    }
    return CCS_OK;
}

static ccs_status_t th_send(ccs_xport_t *x, uint32_t peer, const void *buf,
                            size_t bytes, uint32_t step, uint32_t seq,
                            ccs_err_t *err)
{
    tx_req_t rq = { .peer = peer, .step = step, .bytes = bytes,
                    .src = buf, .is_send = true };
    (void)seq;
    return post(x, &rq, err);
}

static ccs_status_t th_recv(ccs_xport_t *x, uint32_t peer, void *buf,
                            size_t bytes, uint32_t step, uint32_t seq,
                            ccs_err_t *err)
{
    tx_req_t rq = { .peer = peer, .step = step, .bytes = bytes,
                    .dst = buf };
    (void)seq;
    return post(x, &rq, err);
}

static ccs_status_t th_recv_reduce(ccs_xport_t *x, uint32_t peer, void *dst,
                                   const void *a, size_t n,
                                   ccs_dtype_t dtype, ccs_redop_t op,
                                   uint32_t step, uint32_t seq,
                                   ccs_err_t *err)
{
    tx_req_t rq = { .peer = peer, .step = step,
                    .bytes = n * ccs_dtype_size(dtype), .dst = dst,
                    .a = a, .dtype = dtype, .op = op, .reduce = true };
    (void)seq;
    return post(x, &rq, err);
}

static ccs_status_t mismatch_err(const tx_req_t *rq, ccs_err_t *err)
{
    return ccs_err_set(err, CCS_ERR_MISMATCH,
                       "%s of %zu bytes %s rank %u matched a %s of another "
                       "size: the ranks made different calls",
                       rq->is_send ? "send" : "receive", rq->bytes,
                       rq->is_send ? "to" : "from", rq->peer,
                       rq->is_send ? "receive" : "send");
}

static ccs_status_t th_wait(ccs_xport_t *x, ccs_err_t *err)
{
    ccs_status_t st = x->left > 0 ? block_until(x, progress, err) : CCS_OK;

    if (st == CCS_ERR_TIMEOUT) {
        for (uint32_t i = 0; i < x->nreq; i++) {
            if (!x->reqs[i].done) {
                st = describe_timeout(x, &x->reqs[i], "not matched", err);
                break;
            }
        }
    }
    for (uint32_t i = 0; i < x->nreq && st == CCS_OK; i++) {
        /* The round after ours cannot complete before we post again, so
         * the mismatch bit is still the one of our round. */
        tx_req_t *rq = &x->reqs[i];
        /* An eager send completed before its receive was matched; the
         * receiver reports a mismatch (and aborts the world).  With
         * tickets a later round of the slot may have completed too: the
         * bit was recorded when the completion was seen. */
        if (x->ticketed ? rq->mm
                        : !rq->eager &&
                              (atomic_load_explicit(&rq->slot->state,
                                                    memory_order_acquire) &
                               ST_MM))
            st = mismatch_err(rq, err);
    }
    x->tbase += x->nreq;
    x->nreq = x->left = x->live0 = 0;
    x->ticketed = false;
    return st;
}

static uint64_t th_ticket(ccs_xport_t *x)
{
    x->ticketed = true;
    return x->tbase + x->nreq;
}

static ccs_status_t th_test(ccs_xport_t *x, uint64_t t, bool *done,
                            ccs_err_t *err)
{
    tx_req_t *rq;

    if (t < x->tbase || t - x->tbase >= x->nreq)
        return ccs_err_set(err, CCS_ERR_INTERNAL,
                           "ticket %llu is not pending (tickets %llu..%llu "
                           "since the last wait)", (unsigned long long)t,
                           (unsigned long long)x->tbase,
                           (unsigned long long)(x->tbase + x->nreq));
    rq = &x->reqs[t - x->tbase];
    if (!rq->done) {
        if (atomic_load_explicit(&x->w->aborted, memory_order_relaxed))
            return aborted_err(err);
        progress(x);
    }
    *done = rq->done;
    return rq->done && rq->mm ? mismatch_err(rq, err) : CCS_OK;
}

/* Ready for wait_any: one of its tickets is complete (an unknown one
 * counts as complete: test reports it). */
static bool any_done(ccs_xport_t *x)
{
    progress(x);
    for (uint32_t i = 0; i < x->wa_n; i++) {
        uint64_t k = x->wa_t[i] - x->tbase;
        if (x->wa_t[i] < x->tbase || k >= x->nreq || x->reqs[k].done)
            return true;
    }
    return false;
}

static ccs_status_t th_wait_any(ccs_xport_t *x, const uint64_t *t,
                                uint32_t n, ccs_err_t *err)
{
    ccs_status_t st;

    x->wa_t = t;
    x->wa_n = n;
    st = n == 0 || any_done(x) ? CCS_OK : block_until(x, any_done, err);
    if (st == CCS_ERR_TIMEOUT) {
        for (uint32_t i = x->live0; i < x->nreq; i++) {
            if (!x->reqs[i].done) {
                st = describe_timeout(x, &x->reqs[i], "not matched", err);
                break;
            }
        }
    }
    x->wa_t = NULL;
    x->wa_n = 0;
    return st;
}

static ccs_status_t th_reduce(ccs_xport_t *x, void *dst, const void *a,
                              const void *b, size_t n, ccs_dtype_t dtype,
                              ccs_redop_t op, ccs_err_t *err)
{
    (void)err;
    ccs_reduce_with(x->w->kern, dst, a, b, n, dtype, op);
    return CCS_OK;
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
    free(x->reqs);
    free(x->sidx);
    free(x->ridx);
    free(x);
}

static const ccs_xport_ops_t threads_ops = {
    .name = "threads",
    .device_mem = false,
    .mem_alloc = ccs_cpu_mem_alloc,
    .mem_free = ccs_cpu_mem_free,
    .copy = ccs_cpu_copy,
    .memset0 = ccs_cpu_memset0,
    .reduce = th_reduce,
    .div = ccs_cpu_div,
    .run_begin = ccs_cpu_run_begin,
    .run_end = ccs_cpu_nop,
    .group_begin = ccs_cpu_group_begin,
    .recv = th_recv,
    .send = th_send,
    .group_end = ccs_cpu_nop,
    .wait = th_wait,
    .recv_reduce = th_recv_reduce,
    .ticket = th_ticket,
    .test = th_test,
    .wait_any = th_wait_any,
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
    w->kern = ccs_reduce_kernels(ccs_reduce_isa_best());
    spin_ns = env_long("CCS_SPIN_US", 20) * 1000;
    timeout_s = ccs_timeout_env_s();
    w->ranks = aligned_alloc(64, (size_t)nranks * sizeof(*w->ranks));
    w->rings = calloc((size_t)nranks * nranks, sizeof(*w->rings));
    if (w->ranks == NULL || w->rings == NULL) {
        world_free(w);
        return CCS_ERR_NOMEM;
    }
    memset(w->ranks, 0, (size_t)nranks * sizeof(*w->ranks));
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
        x->sidx = calloc((size_t)nranks, sizeof(*x->sidx));
        x->ridx = calloc((size_t)nranks, sizeof(*x->ridx));
        if (x->sidx == NULL || x->ridx == NULL) {
            free(x->sidx);
            free(x->ridx);
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
