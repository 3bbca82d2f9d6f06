/*
 * auto.c - straggler "auto": the runtime finds the late rank and decides,
 * per call, whether the straggler-aware plan (relabelled for that rank)
 * or the plain plan runs.  docs/runtime.md, "Straggler auto", has the
 * argument; this comment has the mechanics.
 *
 * Measurement, clock-free.  A call ends at nearly the same moment on every
 * rank (its last steps depend on every rank), so a rank that arrived D
 * late spent about D less inside the call: lateness_q = max_j e_j - e_q,
 * e_q being rank q's elapsed time in the call.  No clock offsets are
 * needed (MPI ranks on different hosts have unrelated clocks), and the
 * error is the skew of the last step's completion, about one message
 * latency.  Each rank also reports how long its phase 0 took.
 *
 * Exchange, off the critical path.  Up to 16 ranks, at the end of call k
 * every rank posts one 16-byte message to every other rank, and the
 * matching receives, carrying its (elapsed, phase 0) pair as integer
 * nanoseconds -- and does not wait for them.  They complete inside the
 * first wait of the next run on the communicator (call k+1's first step:
 * a transport's wait completes everything posted since the last one),
 * beside that step's own messages; every peer posted its half when it
 * finished call k, before any delay ahead of call k+1, so nothing there
 * waits for a late rank.  At the end of call k+1 a wait that normally
 * finds nothing left makes sure of it, call k's vector enters the state,
 * and call k+1's messages are posted.  The price is one call of lag: call
 * k+2's decision is the first to see call k's arrivals.  A synchronous
 * round instead costs a synchronisation of all ranks per call (on an
 * oversubscribed host, a scheduler time slice whenever one rank is
 * descheduled), which is what "auto with nobody late" used to cost.
 * Above 16 ranks one exchange of R-1 messages per rank costs more than
 * Bruck's ceil(log2 R) rounds of one message, which run synchronously at
 * the end of the call (no lag).  The posted buffers belong to the state;
 * ccs_comm_destroy drains the transport (xport.h) before freeing them.
 *
 * Agreement by construction.  The state below changes only in
 * auto_update, from a gathered vector (the same bytes on every rank) with
 * integer arithmetic, at the same point of the same call on every rank;
 * the decision of a call is a function of the state and of the call's
 * arguments (which every rank must pass identically; exec.c's agreement
 * checks them).  By induction every rank holds the same state before
 * every call and takes the same decision.  A failed exchange fails the
 * call and breaks the communicator, like any failed run, so no rank goes
 * on with a state the others lack.
 */
#include <stdlib.h>
#include <string.h>

#include "auto.h"
#include "ccs_int.h"

/* The exchange's steps (AUTO_STEP + round): above every plan step (CCS_MAX_STEPS) and apart
 * from exec.c's agreement (0xffffff00) and small exchange (0xfffffe00),
 * so its messages never match theirs. */
#define AUTO_STEP 0xfffffc00u
/* Cost models kept per (plans, size), round robin. */
#define AUTO_KEYS 8
/* A plan not run for a while is run once to refresh its cost (a
 * one-sample estimate must not lock a choice in forever).  The aware
 * plan is probed only while some rank is late past the noise floor (see
 * decide), at least AUTO_REPROBE calls apart and rarely enough that the
 * probes' predicted loss is at most 1/AUTO_PROBE_SHARE of the calls'
 * time. */
#define AUTO_REPROBE 64
#define AUTO_PROBE_SHARE 50
/* Longest rent (calls late past the critical delay before the aware plan
 * is bought); beyond it the gain is too small to ever pay. */
#define AUTO_MAX_RENT 8
/* Shortest rent: the same rank late in two calls in a row before the
 * aware plan is bought for it.  One late call predicts nothing: with the
 * late rank changing every call (4 threads on 2 cores take turns being
 * descheduled, tens of us each, with no delay injected at all) a rent of
 * 1 bought the aware plan for the wrong rank on most calls, paying up to
 * D* each time; the price of 2 is one more rented call per episode. */
#define AUTO_MIN_RENT 2
/* A rank counts as late only past AUTO_NOISE_MULT times the arrival
 * noise (below).  With 4 MPI processes on 2 cores and nothing injected,
 * the latest rank's lateness has a median of about 2x the runner-up's
 * and a 99th percentile of about 5x, and the same process is often the
 * latest several calls in a row (it is descheduled, or its peers
 * finished the last call first); an injected straggler of 2 ms is 20x
 * the noise or more.  4 keeps nearly all of the first out of the streaks
 * and every straggler worth a plan change in them. */
#define AUTO_NOISE_MULT 4
/* While quiet -- the call ran the plain plan and nobody was late past the
 * floor, nor past the host's own skew, in the last measured call -- the
 * arrival times are exchanged after
 * fewer and fewer calls: the gap doubles with each quiet exchange, up to
 * AUTO_QUIET_MAX calls, and is 1 again as soon as anyone is late.  The
 * exchange is only R-1 small messages each way, but on an oversubscribed
 * host each costs its receiver a scheduling round: 4 MPI processes on 2
 * cores paid about 5% of a 50 us call with an exchange after every 8th
 * call, and 1% without.  The price is detection lag: a straggler that
 * appears after a long quiet stretch is seen up to AUTO_QUIET_MAX - 1
 * calls later, which lengthens the rent by as many calls (docs/runtime.md,
 * "Straggler auto").  Whether a call exchanges is a function of the
 * shared state, so every rank posts (or skips) the same messages. */
#define AUTO_QUIET_MAX 16

typedef struct auto_cost {
    uint64_t key;            /* (aware plan, plain plan, count, dtype) */
    /* The plain plan's time from the last arrival, learned apart in calls
     * where nobody was late past the noise floor (the price of a wrong
     * buy is measured against it) and in calls where someone was: after a late
     * arrival the waiting ranks must first be scheduled back, which on
     * an oversubscribed host makes the same plan 3x slower (164 against
     * 54 us, 4 MPI processes on 2 cores, 16 KiB).  One estimate fed by
     * both read the critical delay as 0, and auto bought the aware plan
     * on short streaks of noise. */
    int64_t plain_ns;        /* nobody late */
    int64_t plain_late_ns;   /* from a late arrival */
    int64_t rs_ns;           /* aware plan's phase 0 */
    int64_t after_ns;        /* aware plan's time after the arrival */
    bool plain_known, plain_late_known, aware_known;
    /* Runs of each plan seen (up to 1): a plan's first run under a key
     * is not learned from.  It pays one-time costs -- the first-call
     * agreement round, rings and buffers made on first use -- several
     * times a warm call's time, and T_plain, refreshed only by a probe
     * every AUTO_REPROBE calls, would keep that bias for hundreds of
     * calls: an inflated T_plain makes the aware plan look free (D* = 0)
     * and auto would run it with nobody late. */
    uint8_t seen_plain, seen_aware;
    /* Learned calls of this key since T_plain last learned (one with
     * nobody late).  With a straggler late on every call T_plain is never
     * refreshed, and past AUTO_REPROBE such calls the end-skew floor
     * stops trusting it (skew_floor). */
    uint32_t age_calm;
    uint32_t age_plain, age_aware; /* calls since each plan last ran,
                                      counted when a call is decided:
                                      its arrivals are learned a call
                                      later, and a probe decided from
                                      the ages must not be repeated by
                                      the call in between */
} auto_cost_t;

struct ccs_auto {
    uint32_t R;
    uint64_t calls;          /* auto calls completed */
    int64_t *lam;            /* [R] EWMA of each rank's lateness, ns */
    int64_t *vec;            /* [2R] gathered (elapsed, phase 0); up to
                                AUTO_DIRECT_MAX ranks the receive buffer
                                of the posted exchange */
    int64_t *tmp;            /* [2R] Bruck's rotated buffer; else [0..1]
                                the posted exchange's send buffer */
    /* The exchange posted at the end of the last call (AUTO_DIRECT_MAX
     * ranks at most), not yet folded into the state. */
    bool pending;
    uint64_t pend_key;       /* its cost model's key */
    int32_t pend_ran;        /* the straggler it ran, -1 plain */
    auto_cost_t cost[AUTO_KEYS];
    uint32_t cost_next;
    int32_t last_cost;       /* entry of the last call, -1 none */
    int32_t last;            /* straggler the last call ran, -1 plain */
    int32_t latest;          /* latest rank of the last call */
    int64_t late_ns;         /* its lateness */
    int64_t crit_ns;         /* last call's critical delay, -1 unknown */
    /* Arrival noise: an EWMA of each call's second-largest lateness.  The
     * latest rank's own lateness cannot tell noise from a straggler; the
     * runner-up's is the spread of the ranks that were not singled out,
     * which one straggler, however late, does not move.  -1 unknown (and
     * 0 for ever with 2 ranks, whose runner-up is the first arrival). */
    int64_t noise_ns;
    int64_t floor_ns;        /* lateness that counted as late in the last
                                learned call: max(D*, 4 x noise,
                                T_plain) */
    int32_t streak_rank;     /* rank late past floor_ns ... */
    uint32_t streak;         /* ... in this many calls in a row */
    /* The same with the floor of the noise alone, max(4 N, T_plain),
     * without D*: someone is late, whether or not the aware plan's
     * estimate says it would pay.  Only then is that estimate worth a
     * probe. */
    int32_t over_skew_rank;
    uint32_t over_skew;
    uint64_t exchanges;      /* calls whose arrival times were gathered */
    uint32_t quiet_gap;      /* calls between exchanges while quiet */
    uint32_t since_exchange; /* calls since the last exchange */
};

void ccs_auto_drain(ccs_comm_t *comm)
{
    ccs_err_t err;

    if (comm->autos == NULL || !comm->autos->pending || comm->broken)
        return;
    ccs_err_clear(&err);
    /* A failure here (a peer gone, the timeout) leaves nothing to do but
     * free: the transport cancelled or released what it could. */
    if (comm->xops->drain != NULL)
        comm->xops->drain(comm->x);
    else
        (void)comm->xops->wait(comm->x, &err);
    comm->autos->pending = false;
}

void ccs_auto_free(struct ccs_auto *a)
{
    if (a == NULL)
        return;
    free(a->lam);
    free(a->vec);
    free(a->tmp);
    free(a);
}

struct ccs_auto *ccs_auto_new(uint32_t R)
{
    /* Owned by the caller (ccs_auto_free). */
    struct ccs_auto *a = calloc(1, sizeof(*a));

    if (a == NULL)
        return NULL;
    a->R = R;
    a->lam = calloc(R, sizeof(int64_t));
    a->vec = calloc(2 * (size_t)R, sizeof(int64_t));
    a->tmp = calloc(2 * (size_t)R, sizeof(int64_t));
    if (a->lam == NULL || a->vec == NULL || a->tmp == NULL) {
        ccs_auto_free(a);
        return NULL;
    }
    a->last = -1;
    a->last_cost = -1;
    a->latest = -1;
    a->crit_ns = -1;
    a->noise_ns = -1;
    a->floor_ns = -1;
    a->streak_rank = -1;
    a->over_skew_rank = -1;
    a->quiet_gap = 1;
    return a;
}

static ccs_status_t auto_get(ccs_comm_t *comm, struct ccs_auto **out,
                             ccs_err_t *err)
{
    if (comm->autos == NULL) {
        /* Owned by comm (ccs_auto_free in ccs_comm_destroy). */
        comm->autos = ccs_auto_new((uint32_t)comm->nranks);
        if (comm->autos == NULL)
            return ccs_err_set(err, CCS_ERR_NOMEM, "out of memory for the "
                               "straggler auto state");
    }
    *out = comm->autos;
    return CCS_OK;
}

/* The slot of a key's cost model, or -1 (never made, or taken over
 * since). */
static int cost_slot(const struct ccs_auto *a, uint64_t key)
{
    for (int i = 0; i < AUTO_KEYS; i++)
        if (a->cost[i].key == key)
            return i;
    return -1;
}

static auto_cost_t *cost_find(struct ccs_auto *a, uint64_t key)
{
    int i = cost_slot(a, key);

    return i < 0 ? NULL : &a->cost[i];
}

/* The cost model of this call's plans and size: found, or a slot taken
 * round robin (the same slot on every rank: the calls are the same). */
static auto_cost_t *cost_entry(struct ccs_auto *a, uint64_t key)
{
    auto_cost_t *e;

    if ((e = cost_find(a, key)) != NULL)
        return e;
    e = &a->cost[a->cost_next];
    a->cost_next = (a->cost_next + 1) % AUTO_KEYS;
    memset(e, 0, sizeof(*e));
    e->key = key;
    return e;
}

/* The plain plan's time that a wrong buy is measured against: with nobody
 * late, or, until such a call was seen (a straggler late from the first
 * call on), after a late arrival; -1 unknown. */
static int64_t plain_base(const auto_cost_t *e)
{
    if (e->plain_known)
        return e->plain_ns;
    return e->plain_late_known ? e->plain_late_ns : -1;
}

/* The plain plan's time from a late arrival to the end (what the aware
 * plan's T_after is compared with); -1 unknown. */
static int64_t plain_after(const auto_cost_t *e)
{
    if (e->plain_late_known)
        return e->plain_late_ns;
    return e->plain_known ? e->plain_ns : -1;
}

/* Critical delay: the delay at which the aware plan starts to win,
 * D* = T_RS + T_after - T_plain (docs/stragglar-sim.md), T_plain with
 * nobody late; -1 unknown. */
static int64_t critical(const auto_cost_t *e)
{
    int64_t d, p = plain_base(e);

    if (p < 0 || !e->aware_known)
        return -1;
    d = e->rs_ns + e->after_ns - p;
    return d < 0 ? 0 : d;
}

static int64_t max64(int64_t a, int64_t b)
{
    return a > b ? a : b;
}

/* Lateness within AUTO_NOISE_MULT times the arrival noise is the host's,
 * not a straggler's: a call whose latest rank stays within it had nobody
 * late. */
static int64_t noise_floor(const struct ccs_auto *a)
{
    return a->noise_ns > 0 ? AUTO_NOISE_MULT * a->noise_ns : 0;
}

/* The lateness that the host alone can make: AUTO_NOISE_MULT times the
 * arrival noise, and up to the plain plan's time with nobody late (the
 * last call's end skew; see late_floor).  e may be NULL. */
static int64_t skew_floor(const struct ccs_auto *a, const auto_cost_t *e)
{
    int64_t f = noise_floor(a);

    if (e == NULL || !e->plain_known)
        return f;
    /* A T_plain not refreshed for AUTO_REPROBE learned calls is what it
     * read before a straggler came (4 MPI processes on 2 cores: 2.9 ms
     * from a warm-up spell, against 0.17 ms after a late arrival), and
     * as this term it hid a 2 ms straggler for the rest of the run; the
     * plain plan's time after a late arrival, learned on those very
     * calls, stands in for it. */
    return max64(f, e->age_calm < AUTO_REPROBE ? e->plain_ns
                                               : plain_after(e));
}

/* The lateness past which a rank counts for a streak: past the noise
 * floor, past the critical delay (below it the aware plan cannot win),
 * and past the plain plan's own time with nobody late.  Lateness is
 * measured from the ends of calls, and ranks leave a call up to its
 * length apart and arrive at the next one so: up to T_plain, a rank's
 * lateness is what the last call's end skew alone makes (4 MPI processes
 * on 2 cores, nothing injected: the same process 30-80 us late on most
 * calls, the others within 5-20 us, T_plain 75 us), and relabelling the
 * aware plan for it changes the skew it was predicted from.  (Not
 * T_plain,late in its stead while T_plain is fresh: on a busy host it can
 * read more than the delay of a straggler late from the first call on;
 * skew_floor has the stale case.)  e may be NULL (its slot taken over):
 * the noise floor alone. */
static int64_t late_floor(const struct ccs_auto *a, const auto_cost_t *e)
{
    return e == NULL ? noise_floor(a) : max64(skew_floor(a, e), critical(e));
}

/* The rank with the largest predicted lateness (lowest on ties), or -1
 * when nobody is predicted late at all. */
static int32_t predicted_rank(const struct ccs_auto *a)
{
    int32_t best = -1;
    int64_t bl = 0;

    for (uint32_t q = 0; q < a->R; q++)
        if (a->lam[q] > bl) {
            bl = a->lam[q];
            best = (int32_t)q;
        }
    return best;
}

/* The rent: what the aware plan saves on a call whose straggler is lam
 * late, both plans' times after a late arrival (negative: it loses). */
static int64_t rent_of(const auto_cost_t *e, int64_t lam)
{
    return plain_after(e) + lam - max64(lam, e->rs_ns) - e->after_ns;
}

/* Whether to run the aware plan once to refresh its estimate (which
 * decides what a straggler is bought for, or whether at all: an estimate
 * that read too slow while processes were descheduled must not keep the
 * plain plan for ever).  Only while a rank has been late past the host's
 * own skew twice in a row: with nobody late the estimate informs no
 * decision, and a probe would cost up to D* for nothing (on 4 threads
 * sharing 2 cores, a probe every 64 calls was a measurable share of
 * auto's cost with nobody late).  The probe runs for that rank, so its
 * predicted loss is what the aware plan loses at that rank's lateness
 * (nothing, when the rule only rents because the estimate is stale),
 * and probes are spaced so that it stays under 1/AUTO_PROBE_SHARE of
 * the calls' time. */
static bool probe_aware(const struct ccs_auto *a, const auto_cost_t *e)
{
    int64_t lam, loss;

    if (a->over_skew < AUTO_MIN_RENT || e->age_aware < AUTO_REPROBE)
        return false;
    lam = a->lam[a->over_skew_rank];
    loss = -rent_of(e, lam);
    return loss <= 0 || (int64_t)e->age_aware * (plain_after(e) + lam) >=
                            AUTO_PROBE_SHARE * loss;
}

/* The decision: the straggler to relabel the aware plan for, or -1 for
 * the plain plan.  s0 is the aware plan's own straggler. */
static int32_t decide(const struct ccs_auto *a, const auto_cost_t *e,
                      bool has_plain, int32_t s0)
{
    int32_t s = predicted_rank(a);
    int64_t crit, lam, gain, rent, base;

    if (!has_plain)
        return s >= 0 ? s : s0;
    /* Learn both plans' costs first: one plain call, one aware call. */
    base = plain_base(e);
    if (base < 0)
        return -1;
    if (!e->aware_known)
        return s >= 0 ? s : s0;
    crit = critical(e);
    if (probe_aware(a, e))
        return a->over_skew_rank;
    if (e->age_plain >= AUTO_REPROBE)
        return -1;
    if (a->streak_rank < 0)
        return -1;
    /* Ski rental: a call run plain while the straggler is late pays the
     * rent G (what the aware plan would have saved: both plans' times
     * after a late arrival); buying the aware plan risks the price D*
     * (what it loses on a call where the rank is not late after all,
     * against the plain plan with nobody late).  Rent while the rent paid
     * is below the price, then buy. */
    lam = a->lam[a->streak_rank];
    gain = rent_of(e, lam);
    if (gain <= 0)
        return -1;
    rent = (crit + gain - 1) / gain;
    if (rent < AUTO_MIN_RENT)
        rent = AUTO_MIN_RENT;
    if (rent > AUTO_MAX_RENT)
        return -1;
    return a->streak >= (uint64_t)rent ? a->streak_rank : -1;
}

int32_t ccs_auto_decide(struct ccs_auto *a, uint64_t key, bool has_plain,
                        int32_t s0)
{
    return decide(a, cost_entry(a, key), has_plain, s0);
}

void ccs_auto_ran(struct ccs_auto *a, uint64_t key, int32_t ran)
{
    auto_cost_t *e = cost_entry(a, key);

    if (ran < 0) {
        e->age_plain = 0;
        e->age_aware++;
    } else {
        e->age_aware = 0;
        e->age_plain++;
    }
}

/* EWMA of weight 1/4; a sample is first clamped to twice the estimate
 * (plus `slack`, so that an estimate of 0 can grow), so that one
 * descheduled rank (a busy host) cannot swing a decision. */
static int64_t ewma_s(int64_t old, int64_t sample, bool known, int64_t slack)
{
    if (!known)
        return sample;
    if (sample > 2 * old + slack)
        sample = 2 * old + slack;
    return (3 * old + sample) / 4;
}

static int64_t ewma(int64_t old, int64_t sample, bool known)
{
    return ewma_s(old, sample, known, 0);
}

/* The same, but a sample below the estimate counts half: for the aware
 * plan's phases, learned only when it runs (a probe every 64 calls or
 * more while it is not bought).  Descheduling only ever makes a sample
 * slower, so a low one is the better evidence, and an estimate inflated
 * by a descheduled spell must not take many probes to come down: until
 * it does, the rent reads negative and the straggler is never bought for
 * (4 MPI processes on 2 cores: T_after 985 us against about 150 us,
 * and the aware plan on 34 of 622 calls with a 2 ms straggler). */
static int64_t ewma_down(int64_t old, int64_t sample, bool known)
{
    if (known && sample < old)
        return (old + sample) / 2;
    return ewma(old, sample, known);
}

/* Fold a gathered vector (a->vec) of a call that ran `ran` into the
 * state; e is that call's cost model, NULL when another key has taken
 * its slot since (then only the lateness estimates learn). */
static void auto_update(struct ccs_auto *a, auto_cost_t *e, int32_t ran)
{
    uint32_t R = a->R;
    int64_t emax = a->vec[0], emin = a->vec[0], l1 = 0, l2 = 0, floor, skew;
    int32_t latest = 0;
    bool calm;

    for (uint32_t q = 1; q < R; q++) {
        int64_t v = a->vec[2 * q];
        if (v > emax)
            emax = v;
        if (v < emin) {
            emin = v;
            latest = (int32_t)q;
        }
    }
    /* The two largest latenesses: the latest rank's, and the noise
     * sample (the runner-up's). */
    for (uint32_t q = 0; q < R; q++) {
        int64_t l = emax - a->vec[2 * q];
        if (l > l1) {
            l2 = l1;
            l1 = l;
        } else if (l > l2) {
            l2 = l;
        }
    }
    for (uint32_t q = 0; q < R; q++)
        a->lam[q] = (a->lam[q] + (emax - a->vec[2 * q])) / 2;
    /* Was anyone late (past the noise), and late enough for a streak?
     * Judged with what was known before this call. */
    calm = l1 <= noise_floor(a);
    floor = late_floor(a, e);
    skew = skew_floor(a, e);
    if (e != NULL && e->age_calm < UINT32_MAX)
        e->age_calm++;           /* reset below when T_plain learns */
    if (e == NULL) {
        /* nothing to learn about the plans */
    } else if (ran < 0 && !e->seen_plain) {
        e->seen_plain = 1;       /* cold: not learned (above) */
    } else if (ran >= 0 && !e->seen_aware) {
        e->seen_aware = 1;
    } else if (ran < 0 && calm) {
        /* The last rank to arrive waited for nobody: its time is the
         * plain plan's own. */
        e->plain_ns = ewma(e->plain_ns, emin, e->plain_known);
        e->plain_known = true;
        e->age_calm = 0;
    } else if (ran < 0) {
        e->plain_late_ns = ewma(e->plain_late_ns, emin,
                                e->plain_late_known);
        e->plain_late_known = true;
    } else {
        /* Phase 0 is the non-stragglers' work: the last of them to
         * arrive waited for nobody in it.  It ends (from the first
         * arrival) at m + rs, m that rank's lateness; phase 1 starts when
         * the straggler is there too, and the call ends at emax. */
        int64_t rs = -1, m = 0, start, after;
        int64_t ls = emax - a->vec[2 * (uint32_t)ran];
        for (uint32_t q = 0; q < R; q++) {
            if ((int32_t)q == ran)
                continue;
            if (rs < 0 || a->vec[2 * q + 1] < rs)
                rs = a->vec[2 * q + 1];
            m = max64(m, emax - a->vec[2 * q]);
        }
        if (rs < 0)
            rs = 0;
        start = max64(ls, m + rs);
        after = emax - start;
        if (after < 1)
            after = 1;
        e->rs_ns = ewma_down(e->rs_ns, rs, e->aware_known);
        e->after_ns = ewma_down(e->after_ns, after, e->aware_known);
        e->aware_known = true;
    }
    /* The noise learns from every call: the runner-up is not the
     * straggler, whoever that is.  1 us of slack lets an estimate of 0
     * grow. */
    a->noise_ns = ewma_s(a->noise_ns, l2, a->noise_ns >= 0, 1000);
    if (l1 > skew) {
        a->over_skew = a->over_skew_rank == latest ? a->over_skew + 1 : 1;
        a->over_skew_rank = latest;
    } else {
        a->over_skew_rank = -1;
        a->over_skew = 0;
    }
    if (e != NULL && critical(e) >= 0 && l1 > floor) {
        if (a->streak_rank == latest) {
            a->streak++;
        } else {
            a->streak_rank = latest;
            a->streak = 1;
        }
    } else {
        a->streak_rank = -1;
        a->streak = 0;
    }
    a->last_cost = e != NULL ? (int32_t)(e - a->cost) : -1;
    a->latest = latest;
    a->late_ns = l1;
    a->crit_ns = e != NULL ? critical(e) : -1;
    a->floor_ns = floor;
}

void ccs_auto_learn(struct ccs_auto *a, uint64_t key, int32_t ran,
                    const int64_t *vec)
{
    memcpy(a->vec, vec, 2 * (size_t)a->R * sizeof(int64_t));
    auto_update(a, cost_find(a, key), ran);
}

void ccs_auto_view(const struct ccs_auto *a, uint64_t key,
                   ccs_auto_view_t *v)
{
    int i = cost_slot(a, key);
    const auto_cost_t *e = i < 0 ? NULL : &a->cost[i];

    v->noise_ns = a->noise_ns;
    v->floor_ns = late_floor(a, e);
    v->crit_ns = e != NULL ? critical(e) : -1;
    v->plain_ns = e != NULL && e->plain_known ? e->plain_ns : -1;
    v->plain_late_ns = e != NULL && e->plain_late_known ? e->plain_late_ns
                                                        : -1;
    v->rs_ns = e != NULL && e->aware_known ? e->rs_ns : -1;
    v->after_ns = e != NULL && e->aware_known ? e->after_ns : -1;
    v->streak_rank = a->streak_rank;
    v->streak = a->streak;
}

/* Up to this many ranks the exchange is R-1 messages each way, posted at
 * the end of a call and completed by the next one's waits (no
 * synchronisation point of its own); above it, Bruck's ceil(log2 R)
 * synchronous rounds, cheaper than R-1 messages per rank per call. */
#define AUTO_DIRECT_MAX 16

/* Up to AUTO_DIRECT_MAX ranks: post the allgather of two int64 per rank
 * into a->vec[2q .. 2q+1] (R-1 sends of a->tmp[0..1], R-1 receives) and
 * leave it in flight; the next wait on the communicator completes it. */
static ccs_status_t post_exchange(ccs_comm_t *comm, struct ccs_auto *a,
                                  const int64_t mine[2], ccs_err_t *err)
{
    const ccs_xport_ops_t *xo = comm->xops;
    uint32_t R = a->R, me = (uint32_t)comm->rank;
    ccs_status_t st;

    a->tmp[0] = a->vec[2 * (size_t)me] = mine[0];
    a->tmp[1] = a->vec[2 * (size_t)me + 1] = mine[1];
    if ((st = xo->group_begin(comm->x, AUTO_STEP, err)) != CCS_OK)
        return st;
    for (uint32_t q = 0; q < R && st == CCS_OK; q++)
        if (q != me)
            st = xo->recv(comm->x, q, a->vec + 2 * (size_t)q,
                          2 * sizeof(int64_t), AUTO_STEP, 0, err);
    for (uint32_t q = 0; q < R && st == CCS_OK; q++)
        if (q != me)
            st = xo->send(comm->x, q, a->tmp, 2 * sizeof(int64_t),
                          AUTO_STEP, 0, err);
    if (st == CCS_OK)
        st = xo->group_end(comm->x, err);
    return st;
}

/* Above AUTO_DIRECT_MAX ranks: Bruck's allgather of two int64 per rank
 * into a->vec[2q .. 2q+1], complete on return. */
static ccs_status_t gather_bruck(ccs_comm_t *comm, struct ccs_auto *a,
                                 const int64_t mine[2], ccs_err_t *err)
{
    const ccs_xport_ops_t *xo = comm->xops;
    uint32_t R = a->R, me = (uint32_t)comm->rank;
    ccs_status_t st = CCS_OK;

    /* tmp[j] holds rank (me + j) % R's pair. */
    a->tmp[0] = mine[0];
    a->tmp[1] = mine[1];
    for (uint32_t k = 0, d = 1; d < R; k++, d *= 2) {
        uint32_t cnt = d < R - d ? d : R - d;
        uint32_t to = (me + R - d) % R, from = (me + d) % R;
        size_t bytes = (size_t)cnt * 2 * sizeof(int64_t);
        if ((st = xo->group_begin(comm->x, AUTO_STEP + k, err)) != CCS_OK ||
            (st = xo->recv(comm->x, from, a->tmp + 2 * (size_t)d, bytes,
                           AUTO_STEP + k, 0, err)) != CCS_OK ||
            (st = xo->send(comm->x, to, a->tmp, bytes, AUTO_STEP + k, 0,
                           err)) != CCS_OK ||
            (st = xo->group_end(comm->x, err)) != CCS_OK ||
            (st = xo->wait(comm->x, err)) != CCS_OK)
            return st;
    }
    for (uint32_t j = 0; j < R; j++) {
        uint32_t q = (me + j) % R;
        a->vec[2 * q] = a->tmp[2 * j];
        a->vec[2 * q + 1] = a->tmp[2 * j + 1];
    }
    return CCS_OK;
}

/* A hash of everything a decision depends on: equal on every rank after
 * every call, or the ranks could decide differently.  Logged on each
 * TRACE line and returned by ccs_comm_auto_info, so that tests can compare
 * ranks call by call (threads and MPI alike). */
uint64_t ccs_auto_hash(const struct ccs_auto *a)
{
    uint64_t h = ccs_mix64(0x6175746full, a->calls);

    for (uint32_t q = 0; q < a->R; q++)
        h = ccs_mix64(h, (uint64_t)a->lam[q]);
    for (unsigned i = 0; i < AUTO_KEYS; i++) {
        const auto_cost_t *c = &a->cost[i];
        h = ccs_mix64(h, c->key);
        h = ccs_mix64(h, (uint64_t)c->plain_ns);
        h = ccs_mix64(h, (uint64_t)c->plain_late_ns);
        h = ccs_mix64(h, (uint64_t)c->rs_ns);
        h = ccs_mix64(h, (uint64_t)c->after_ns);
        h = ccs_mix64(h, (uint64_t)c->plain_known << 2 |
                             (uint64_t)c->plain_late_known << 1 |
                             c->aware_known);
        h = ccs_mix64(h, (uint64_t)c->seen_plain << 1 | c->seen_aware);
        h = ccs_mix64(h, (uint64_t)c->age_plain << 32 | c->age_aware);
        h = ccs_mix64(h, c->age_calm);
    }
    h = ccs_mix64(h, (uint64_t)a->pending << 32 |
                         (uint32_t)a->pend_ran);
    h = ccs_mix64(h, a->pend_key);
    h = ccs_mix64(h, (uint64_t)a->noise_ns);
    h = ccs_mix64(h, (uint64_t)(uint32_t)a->streak_rank);
    h = ccs_mix64(h, a->streak);
    h = ccs_mix64(h, (uint64_t)(uint32_t)a->over_skew_rank << 32 | a->over_skew);
    h = ccs_mix64(h, a->exchanges);
    h = ccs_mix64(h, (uint64_t)a->quiet_gap << 32 | a->since_exchange);
    return ccs_mix64(h, (uint64_t)(uint32_t)a->last);
}

/* Whether the call that just ran `pick` gathers its arrival times (see
 * AUTO_QUIET_MAX), and the gap's and the count's bookkeeping (a failed
 * exchange breaks the communicator, so "due" is "done").  Reads and writes only
 * state every rank shares. */
static bool exchange_due(struct ccs_auto *a, int32_t pick)
{
    bool quiet = pick < 0 && a->streak == 0 && a->over_skew == 0 &&
                 a->noise_ns >= 0;

    a->since_exchange++;
    if (!quiet)
        a->quiet_gap = 1;
    else if (a->since_exchange < a->quiet_gap)
        return false;
    else if (a->quiet_gap < AUTO_QUIET_MAX)
        a->quiet_gap *= 2;
    a->since_exchange = 0;
    a->exchanges++;
    return true;
}

static int64_t to_ns(double s)
{
    return s <= 0 ? 0 : (int64_t)(s * 1e9 + 0.5);
}

ccs_status_t ccs_auto_run(const ccs_plan_t *plan, ccs_comm_t *comm,
                          const void *sendbuff, void *recvbuff, size_t count,
                          ccs_dtype_t dtype, ccs_redop_t op, void *stream,
                          const ccs_run_opts_t *opts)
{
    ccs_err_t *err = &comm->err;
    const ccs_plan_t *plain = opts->plain;
    const ccs_sched_t *s;
    struct ccs_auto *a = NULL;
    ccs_auto_view_t v;
    ccs_run_opts_t ro = *opts;
    ccs_run_stats_t stats;
    ccs_status_t st;
    uint64_t key;
    int64_t mine[2];
    int32_t pick;

    ccs_err_clear(err);
    if (plan == NULL) {
        st = ccs_err_set(err, CCS_ERR_INVALID, "NULL plan");
        goto fail;
    }
    s = plan->sched;
    if (s->straggler < 0) {
        st = ccs_err_set(err, CCS_ERR_MISMATCH, "straggler auto needs a "
                         "plan with a straggler role; this plan (%s) has "
                         "none (pass it as opts.plain, with a StragglAR "
                         "plan as the plan)", s->algo);
        goto fail;
    }
    if (comm->xops->device_mem) {
        st = ccs_err_set(err, CCS_ERR_UNSUPPORTED, "straggler auto on the "
                         "%s transport: it times calls on the host, which "
                         "only the CPU transports can (threads, mpi)",
                         comm->xops->name);
        goto fail;
    }
    if ((uint32_t)comm->nranks != s->nranks)
        return ccs_run_fixed(plan, comm, sendbuff, recvbuff, count, dtype,
                             op, stream, opts);   /* its message */
    if (plain == plan) {
        st = ccs_err_set(err, CCS_ERR_INVALID, "opts.plain is the "
                         "straggler-aware plan itself; pass a plan of "
                         "another algorithm (or NULL)");
        goto fail;
    }
    if (plain != NULL && (plain->sched->coll != s->coll ||
                          plain->sched->nranks != s->nranks)) {
        st = ccs_err_set(err, CCS_ERR_MISMATCH, "opts.plain (%s %s, %u "
                         "ranks) does not match the plan (%s %s, %u ranks)",
                         plain->sched->algo,
                         ccs_coll_str(plain->sched->coll),
                         plain->sched->nranks, s->algo, ccs_coll_str(s->coll),
                         s->nranks);
        goto fail;
    }
    if ((st = auto_get(comm, &a, err)) != CCS_OK)
        goto fail;
    key = ccs_mix64(ccs_plan_fingerprint(plan),
                    plain ? ccs_plan_fingerprint(plain) : 0);
    key = ccs_mix64(ccs_mix64(key, count), (uint64_t)dtype);
    key |= 1;                        /* never 0, an empty slot's */
    pick = ccs_auto_decide(a, key, plain != NULL, s->straggler);

    memset(&stats, 0, sizeof(stats));
    ro.straggler = pick >= 0 ? pick : -1;
    ro.stats = &stats;
    ro.plain = NULL;
    st = ccs_run_fixed(pick >= 0 ? plan : plain, comm, sendbuff, recvbuff,
                       count, dtype, op, stream, &ro);
    if (st != CCS_OK)
        return st;                   /* run_fixed logged and set it */
    stats.auto_plain = pick < 0;
    if (count > 0 && comm->nranks > 1) {
        /* Every rank has the same count (agreed), so all or none
         * exchange. */
        ccs_auto_ran(a, key, pick);
        mine[0] = to_ns(stats.t_end_s - stats.t_start_s);
        mine[1] = to_ns((stats.nphases > 0 ? stats.phase_end_s[0]
                                           : stats.t_end_s) -
                        stats.t_start_s);
        if (a->R <= AUTO_DIRECT_MAX) {
            /* The last call's exchange: complete already (this call's
             * first wait took it) unless this call never waited. */
            if (a->pending &&
                (st = comm->xops->wait(comm->x, err)) != CCS_OK)
                goto broken;
            if (a->pending)
                auto_update(a, cost_find(a, a->pend_key), a->pend_ran);
            a->pending = false;
            if (exchange_due(a, pick)) {
                if ((st = post_exchange(comm, a, mine, err)) != CCS_OK)
                    goto broken;
                a->pending = true;
                a->pend_key = key;
                a->pend_ran = pick;
            }
        } else if (exchange_due(a, pick)) {
            if ((st = gather_bruck(comm, a, mine, err)) != CCS_OK)
                goto broken;
            auto_update(a, cost_find(a, key), pick);
        }
        a->last = pick;
        a->calls++;
        if (comm->log_level >= CCS_LOG_TRACE) {
            ccs_auto_view(a, key, &v);
            CCS_LOG(comm->log_level, CCS_LOG_TRACE, "AUTO", comm->rank,
                    "call %llu ran %d; latest %d late %lld ns; plain %lld "
                    "plain_late %lld rs %lld after %lld critical %lld ns; "
                    "noise %lld floor %lld ns; streak %u; exchanges %llu; "
                    "state %016llx",
                    (unsigned long long)a->calls, pick, a->latest,
                    (long long)a->late_ns, (long long)v.plain_ns,
                    (long long)v.plain_late_ns, (long long)v.rs_ns,
                    (long long)v.after_ns, (long long)a->crit_ns,
                    (long long)a->noise_ns, (long long)a->floor_ns, a->streak,
                    (unsigned long long)a->exchanges,
                    (unsigned long long)ccs_auto_hash(a));
        }
    }
    if (opts->stats != NULL)
        *opts->stats = stats;
    return CCS_OK;
broken:
    ccs_err_prefix(err, "rank %d, straggler auto, exchanging arrival "
                   "times: ", comm->rank);
    comm->broken = true;
    if (comm->xops->abort != NULL)
        comm->xops->abort(comm->x);
fail:
    CCS_LOG(comm->log_level, CCS_LOG_WARN, "EXEC", comm->rank, "%s",
            ccs_err_msg(err, st));
    return st;
}

ccs_status_t ccs_comm_auto_info(const ccs_comm_t *comm,
                                ccs_auto_info_t *info)
{
    const struct ccs_auto *a;
    const auto_cost_t *e = NULL;
    uint64_t h;

    if (comm == NULL || info == NULL)
        return CCS_ERR_INVALID;
    memset(info, 0, sizeof(*info));
    info->last = -1;
    info->latest = -1;
    info->critical_s = -1;
    a = comm->autos;
    if (a == NULL)
        return CCS_OK;
    if (a->last_cost >= 0)
        e = &a->cost[a->last_cost];
    h = ccs_auto_hash(a);
    info->calls = a->calls;
    info->last = a->last;
    info->latest = a->latest;
    info->lateness_s = (double)a->late_ns * 1e-9;
    info->critical_s = a->crit_ns < 0 ? -1 : (double)a->crit_ns * 1e-9;
    if (e != NULL) {
        info->plain_s = (double)e->plain_ns * 1e-9;
        info->rs_s = (double)e->rs_ns * 1e-9;
        info->after_s = (double)e->after_ns * 1e-9;
    }
    info->streak = a->streak;
    info->exchanges = a->exchanges;
    info->state_hash = h;
    return CCS_OK;
}
