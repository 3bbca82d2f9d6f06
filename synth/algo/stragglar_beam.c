/*
 * stragglar_beam.c - the threaded beam search over matching runs that
 * gets odd n just below a power of 2 to LB + 1 rounds where single greedy
 * runs waste too many receives (StragglAR Appendix E; measurements in
 * docs/stragglar.md), with backtracking dives to finish the best states.
 * Threads only split the work: each writes its own slot, the beam takes
 * them in index order, so the plan does not depend on the machine.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#endif

#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "stragglar_int.h"

/* ---- Beam search over runs: W states per round, B matchings each. ----
 *
 * For odd n just below a power of 2 the counting argument leaves a run at
 * LB + 1 a budget of only 2^K - n + K wasted receives (K = ceil(log2 n);
 * n = 63: 7, n = 127: 8), and a single greedy run spends more than that
 * where the doubling ramp meets the steady state (rounds K..K+4: the
 * oldest chunk's holders outnumber the ranks that lack it, so pairs go one
 * way).  Random restarts almost never get through (n = 63: 0 of 200).
 * The beam keeps the W best states after every round instead, expands
 * each with B matchings (the first without noise, the others with seeded
 * noise on the chunk priorities and the kept random edges, as the restarts
 * use), and drops every child whose waste or slack rules T out
 * (stragglar_srch_round).  States are ranked by srch_score.  After the
 * window the best states are completed by diving (beam_dive).
 * Deterministic: seeds come from (n, round, state, child) and (n, round,
 * replay), so the same n gives the same plan. */

/* A run's state after some rounds (holdings and straggler rounds); the
 * plan rows live in the beam's level store.  Arrays owned by the
 * snapshot, except in snap_view's. */
typedef struct srch_snap {
    uint64_t *bits;      /* [n * words] */
    uint32_t *count;     /* [m] */
    uint32_t *nhave;     /* [n] */
    int32_t *xround;     /* [m] */
    int64_t score;
} srch_snap_t;

static void snap_free(srch_snap_t *x)
{
    free(x->bits);
    free(x->count);
    free(x->nhave);
    free(x->xround);
}

static bool snap_alloc(srch_snap_t *x, const srch_t *s)
{
    memset(x, 0, sizeof(*x));
    x->bits = malloc((size_t)s->n * s->h.words * sizeof(*x->bits));
    x->count = malloc(s->m * sizeof(*x->count));
    x->nhave = malloc(s->n * sizeof(*x->nhave));
    x->xround = malloc(s->m * sizeof(*x->xround));
    return x->bits && x->count && x->nhave && x->xround;
}

/* The live state of s seen as a snapshot (its arrays, not copies). */
static srch_snap_t snap_view(srch_t *s)
{
    return (srch_snap_t){ s->h.bits, s->h.count, s->h.nhave, s->xround, 0 };
}

/* dst = src (the arrays' contents; both sized for s). */
static void snap_copy(const srch_snap_t *dst, const srch_snap_t *src,
                      const srch_t *s)
{
    memcpy(dst->bits, src->bits,
           (size_t)s->n * s->h.words * sizeof(*dst->bits));
    memcpy(dst->count, src->count, s->m * sizeof(*dst->count));
    memcpy(dst->nhave, src->nhave, s->n * sizeof(*dst->nhave));
    memcpy(dst->xround, src->xround, s->m * sizeof(*dst->xround));
}

static void snap_save(srch_snap_t *x, srch_t *s)
{
    srch_snap_t v = snap_view(s);

    snap_copy(x, &v, s);
}

static void snap_load(const srch_snap_t *x, srch_t *s)
{
    srch_snap_t v = snap_view(s);

    snap_copy(&v, x, s);
}

/* Beam order of a state after round r - 1: the least rank slack first
 * (a rank at slack 0 must receive in every remaining round, and the
 * states that die are those where one rank ran out), then the least chunk
 * slack, then chunks held (the fewest receives wasted).  Slacks above 8
 * count as 8: far from the deadline they say nothing. */
static int64_t srch_score(const srch_t *s, uint32_t r)
{
    int64_t held = 0, rsmin = 8, csmin = 8;
    uint32_t left = s->T > r ? s->T - r : 0;

    for (uint32_t g = 0; g < s->m; g++) {
        int64_t rs = (int64_t)left - (int64_t)(s->m - s->h.nhave[g]);
        held += s->h.nhave[g];
        rsmin = rs < rsmin ? rs : rsmin;
    }
    for (uint32_t c = 0; c < s->m; c++) {
        int64_t cs;
        if (s->xround[c] < 0 || s->h.count[c] == s->m)
            continue;
        cs = (int64_t)left -
             (int64_t)stragglar_srch_need(s->h.count[c], r, s->m);
        csmin = cs < csmin ? cs : csmin;
    }
    return (rsmin * 16 + csmin) * (INT64_C(1) << 32) + held;
}

/* Rounds 0..r-1 of beam entry e of level r into p (p->nrounds = r):
 * the entry's row, then its parent's, back to round 0. */
static void beam_path(stragglar_plan_t *p, const int32_t *lpeer,
                      const int32_t *lsend, const uint32_t *par, uint32_t W,
                      uint32_t r, uint32_t e)
{
    size_t n = p->n, rowsz = (size_t)W * n;

    for (uint32_t q = r; q-- > 0;) {
        memcpy(&p->peer[(size_t)q * n], &lpeer[(size_t)q * rowsz + e * n],
               n * sizeof(*lpeer));
        memcpy(&p->send[(size_t)q * n], &lsend[(size_t)q * rowsz + e * n],
               n * sizeof(*lsend));
        e = par[(size_t)q * W + e];
    }
    p->nrounds = r;
}

/* One expansion (state b, child j) of a beam level: its outcome, and for
 * SRCH_GO the state and row it leads to. */
typedef struct beam_kid {
    srch_snap_t snap;        /* arrays owned */
    int32_t *peer, *send;    /* owned; [n] the child's round */
    srch_next_t next;
    bool won;                /* completion phase: finished within T */
} beam_kid_t;

/* A worker: its own search scratch and plan rows (the caller's for
 * worker 0), and the slice of the level it expands. */
typedef struct beam_worker {
    srch_t *s;
    stragglar_plan_t *p;     /* T + 1 rows */
    pthread_t tid;
    bool started;
    ccs_status_t st;
    ccs_err_t err;
    /* the job */
    const srch_snap_t *cur;
    beam_kid_t *kids;
    const int32_t *lpeer, *lsend;
    const uint32_t *par;
    uint32_t W, B, r, base, first, step, count, complete;
    atomic_uint *first_won;  /* lowest completed state that won so far */
    srch_snap_t *cps;        /* [T + 1] owned by stragglar_srch_beam, allocated
                                after the window for workers that dive:
                                beam_dive's state before every round */
} beam_worker_t;

static void beam_expand(beam_worker_t *w, uint32_t idx)
{
    srch_t *s = w->s;
    beam_kid_t *k = &w->kids[idx];
    uint32_t b = idx / w->B, j = idx % w->B, r = w->r, n = s->n;

    snap_load(&w->cur[b], s);
    w->p->nrounds = r;
    s->rng = j == 0 ? 0
                    : (UINT64_C(0x9E3779B97F4A7C15) ^ ((uint64_t)n << 40) ^
                       ((uint64_t)r << 24) ^ ((uint64_t)b << 12) ^ j);
    s->salt = (uint32_t)(s->rng >> 17);
    w->st = stragglar_srch_round(s, w->p, r, true, &k->next, &w->err);
    if (w->st != CCS_OK || k->next != SRCH_GO)
        return;
    k->snap.score = srch_score(s, r + 1);
    snap_save(&k->snap, s);
    memcpy(k->peer, &w->p->peer[(size_t)r * n], n * sizeof(*k->peer));
    memcpy(k->send, &w->p->send[(size_t)r * n], n * sizeof(*k->send));
}

/* Completions run side by side, and the lowest state that wins is taken:
 * once one has won, the states above it stop (they could not be taken),
 * so the plan is the same whatever the threads and their timing. */
static bool beam_outranked(const beam_worker_t *w, uint32_t b)
{
    return atomic_load_explicit(w->first_won, memory_order_relaxed) < b;
}

static void beam_won(beam_worker_t *w, uint32_t b, bool won)
{
    unsigned cur = atomic_load(w->first_won);

    w->kids[b].won = won;
    while (won && b < cur &&
           !atomic_compare_exchange_weak(w->first_won, &cur, b))
        ;
}

/* Run state b from round r to the end, with backtracking; k->won when it
 * finishes within T (the plan is then in w->p, the state in w->s).
 * A noise-free run that dies in the steady state usually dies in one
 * burst: after dozens of waste-free rounds one round can no longer pair
 * every rank usefully both ways (n = 243: at most 109 useful pairs of 120,
 * then 101), so the damage was done a few rounds before.  The dive keeps
 * the state before every round (w->cps); after a stop it replays from
 * SRCH_DIVE_BACK rounds before the furthest stop so far, with seeded noise
 * in the first replayed round only.  After every SRCH_DIVE_WIDEN replays
 * in a row that get no further, the restart point moves another
 * SRCH_DIVE_BACK rounds back.  Seeds come from (n, restart round, replay),
 * so the plan does not depend on timing or threads. */
static void beam_dive(beam_worker_t *w, uint32_t b)
{
    srch_t *s = w->s;
    beam_kid_t *k = &w->kids[b];
    uint32_t T = s->T, n = s->n, r0 = w->r, q = r0, far = r0;
    uint32_t dist = SRCH_DIVE_BACK, tries = 0, fails = 0;

    snap_load(&w->cur[b], s);
    beam_path(w->p, w->lpeer, w->lsend, w->par, w->W, r0, b);
    s->rng = 0;
    s->salt = 0;
    k->won = false;
    snap_save(&w->cps[q], s);
    while (!beam_outranked(w, b)) {
        srch_next_t next;
        uint32_t back;
        w->st = stragglar_srch_round(s, w->p, q, true, &next, &w->err);
        if (w->st != CCS_OK)
            return;
        if (next == SRCH_DONE) {
            beam_won(w, b, w->p->nrounds <= T);
            return;
        }
        if (next == SRCH_GO) {
            snap_save(&w->cps[++q], s);
            s->rng = 0;
            s->salt = 0;
            continue;
        }
        /* Stopped before round q (q = T: out of rounds, nothing to
         * replay). */
        if (q > far) {
            far = q;
            fails = 0;
            dist = SRCH_DIVE_BACK;
        } else if (++fails % SRCH_DIVE_WIDEN == 0) {
            dist += SRCH_DIVE_BACK;
        }
        if (tries == SRCH_DIVE_TRIES || fails == SRCH_DIVE_STUCK || q >= T)
            return;
        tries++;
        back = far > r0 + dist ? far - dist : r0;
        snap_load(&w->cps[back], s);
        w->p->nrounds = back;
        s->rng = UINT64_C(0x9E3779B97F4A7C15) ^ ((uint64_t)n << 40) ^
                 ((uint64_t)back << 20) ^ tries;
        s->salt = (uint32_t)(s->rng >> 17);
        q = back;
    }
}

static void *beam_work(void *arg)
{
    beam_worker_t *w = arg;

    for (uint32_t i = w->base + w->first; i < w->count && w->st == CCS_OK;
         i += w->step) {
        if (!w->complete)
            beam_expand(w, i);
        else
            beam_dive(w, i);
    }
    return NULL;
}

/* Run the job on every worker: workers 1.. on threads (inline when a
 * thread cannot be started), worker 0 in the caller.  Each item is done
 * by exactly one worker and written to its own slot, so the result does
 * not depend on the number of threads. */
static ccs_status_t beam_run(beam_worker_t *wk, uint32_t nw, ccs_err_t *err)
{
    ccs_status_t st = CCS_OK;

    for (uint32_t i = 0; i < nw; i++) {
        wk[i].st = CCS_OK;
        wk[i].first = i;
        wk[i].step = nw;
        wk[i].started = i > 0 && pthread_create(&wk[i].tid, NULL, beam_work,
                                                &wk[i]) == 0;
    }
    beam_work(&wk[0]);
    for (uint32_t i = 1; i < nw; i++) {
        if (wk[i].started)
            pthread_join(wk[i].tid, NULL);
        else
            beam_work(&wk[i]);
    }
    for (uint32_t i = 0; i < nw && st == CCS_OK; i++) {
        if (wk[i].st != CCS_OK) {
            st = wk[i].st;
            if (err != NULL)
                *err = wk[i].err;
        }
    }
    return st;
}

/* CPUs this process may run on: its affinity mask (a rank pinned to one
 * core by mpirun or taskset gets one worker, not one per core of the
 * node), else the online count. */
static uint32_t usable_cpus(void)
{
    long c;
#ifdef CPU_COUNT
    cpu_set_t set;

    if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0)
        return (uint32_t)CPU_COUNT(&set);
#endif
    c = sysconf(_SC_NPROCESSORS_ONLN);
    return c > 0 ? (uint32_t)c : 1;
}

/* Beam search for target s->T; *ok and p (canonical labels, s->xround of
 * the winning state) as stragglar_srch_run.  *died: every state was
 * dropped inside the branching window (a cheap failure; otherwise the
 * dives failed).
 * Children and dives run on up to SRCH_BEAM_THREADS threads; each writes
 * its own slot and the beam takes them in index order, so the plan is the
 * same on any machine. */
ccs_status_t stragglar_srch_beam(srch_t *s, stragglar_plan_t *p,
                              const beam_cfg_t *cfg, bool *ok, bool *died,
                              ccs_err_t *err)
{
    uint32_t n = s->n, T = s->T, ncur = 1, nnext, r, nw = 1;
    uint32_t lg = stragglar_ceil_log2(n);
    uint32_t W = cfg->W, B = cfg->B;
    /* Branch only in the first cfg->rounds rounds after the ramp, where
     * the waste happens. */
    uint32_t win = lg + cfg->rounds < T ? lg + cfg->rounds : T;
    uint32_t nkids = W * B;
    size_t rowsz = (size_t)W * n;
    uint32_t cpus = usable_cpus();
    srch_snap_t *cur = calloc(W, sizeof(*cur)), *nxt = calloc(W, sizeof(*nxt));
    beam_kid_t *kids = calloc(nkids, sizeof(*kids));
    beam_worker_t wk[SRCH_BEAM_THREADS];
    atomic_uint first_won;
    srch_t ws[SRCH_BEAM_THREADS];
    stragglar_plan_t wp[SRCH_BEAM_THREADS];
    /* Level store for the window, all owned here: the row of round r of
     * beam entry i at [r * W * n + i * n], its parent entry at
     * par[r * W + i]. */
    int32_t *lpeer = malloc(win * rowsz * sizeof(*lpeer));
    int32_t *lsend = malloc(win * rowsz * sizeof(*lsend));
    uint32_t *par = malloc((size_t)win * W * sizeof(*par));
    ccs_status_t st = CCS_OK;

    *ok = false;
    *died = false;
    memset(wk, 0, sizeof(wk));
    memset(ws, 0, sizeof(ws));
    memset(wp, 0, sizeof(wp));
    if (cpus > 1)
        nw = cpus < SRCH_BEAM_THREADS ? cpus : SRCH_BEAM_THREADS;
    if (cur == NULL || nxt == NULL || kids == NULL || lpeer == NULL ||
        lsend == NULL || par == NULL) {
        st = ccs_err_set(err, CCS_ERR_NOMEM, "stragglar: out of memory");
        goto cleanup;
    }
    for (uint32_t i = 0; i < W; i++) {
        if (!snap_alloc(&cur[i], s) || !snap_alloc(&nxt[i], s)) {
            st = ccs_err_set(err, CCS_ERR_NOMEM, "stragglar: out of memory");
            goto cleanup;
        }
    }
    for (uint32_t i = 0; i < nkids; i++) {
        kids[i].peer = malloc(n * sizeof(*kids[i].peer));
        kids[i].send = malloc(n * sizeof(*kids[i].send));
        if (!snap_alloc(&kids[i].snap, s) || kids[i].peer == NULL ||
            kids[i].send == NULL) {
            st = ccs_err_set(err, CCS_ERR_NOMEM, "stragglar: out of memory");
            goto cleanup;
        }
    }
    /* Worker 0 is the caller's state and plan; the others get copies
     * (owned here: ws[i] and wp[i] for i >= 1). */
    for (uint32_t i = 0; i < nw; i++) {
        wk[i].s = i == 0 ? s : &ws[i];
        wk[i].p = i == 0 ? p : &wp[i];
        if (i > 0) {
            st = stragglar_srch_init(&ws[i], n, err);
            if (st != CCS_OK)
                goto cleanup;
            ws[i].T = T;
            wp[i].n = n;
        }
        wk[i].p->nrounds = 0;
        for (uint32_t q = 0; q <= T; q++) {
            uint32_t rr;
            st = stragglar_plan_add_round(wk[i].p, &rr, err);
            if (st != CCS_OK)
                goto cleanup;
        }
        wk[i].s->noise = (int64_t)(SRCH_WR / 2);
        wk[i].s->wrel = 4 * SRCH_WR;
        wk[i].s->rpct = 100;
        wk[i].s->steer = cfg->steer;
        wk[i].first_won = &first_won;
        wk[i].kids = kids;
        wk[i].lpeer = lpeer;
        wk[i].lsend = lsend;
        wk[i].par = par;
        wk[i].W = W;
        wk[i].B = B;
    }
    stragglar_srch_reset(s, p);
    snap_save(&cur[0], s);
    for (r = 0; r < win && ncur > 0 && !*ok; r++) {
        for (uint32_t i = 0; i < nw; i++) {
            wk[i].cur = cur;
            wk[i].r = r;
            wk[i].base = 0;
            wk[i].count = ncur * B;
            wk[i].complete = 0;
        }
        st = beam_run(wk, nw, err);
        if (st != CCS_OK)
            goto cleanup;
        nnext = 0;
        for (uint32_t idx = 0; idx < ncur * B; idx++) {
            beam_kid_t *k = &kids[idx];
            int64_t sc = k->snap.score;
            uint32_t at;
            if (k->next == SRCH_DONE) {
                /* Done before round r: state idx / B is complete. */
                snap_load(&cur[idx / B], s);
                beam_path(p, lpeer, lsend, par, W, r, idx / B);
                *ok = true;
                break;
            }
            if (k->next == SRCH_STOP)
                continue;
            if (nnext == W && sc <= nxt[W - 1].score)
                continue;
            at = nnext < W ? nnext++ : W - 1;
            {   /* keep nxt sorted by score, best first */
                srch_snap_t tmp = nxt[at];
                int32_t *rp = &lpeer[(size_t)r * rowsz];
                int32_t *rs = &lsend[(size_t)r * rowsz];
                uint32_t *pr = &par[(size_t)r * W];
                while (at > 0 && nxt[at - 1].score < sc) {
                    nxt[at] = nxt[at - 1];
                    memcpy(&rp[(size_t)at * n], &rp[(size_t)(at - 1) * n],
                           n * sizeof(*rp));
                    memcpy(&rs[(size_t)at * n], &rs[(size_t)(at - 1) * n],
                           n * sizeof(*rs));
                    pr[at] = pr[at - 1];
                    at--;
                }
                nxt[at] = tmp;
                memcpy(&rp[(size_t)at * n], k->peer, n * sizeof(*rp));
                memcpy(&rs[(size_t)at * n], k->send, n * sizeof(*rs));
                pr[at] = idx / B;
            }
            {   /* the child's arrays move into the beam, the slot's
                 * (free or dropped) to the child */
                srch_snap_t t = nxt[at];
                nxt[at] = k->snap;
                k->snap = t;
            }
            nxt[at].score = sc;
        }
        {
            srch_snap_t *t = cur;
            cur = nxt;
            nxt = t;
            ncur = nnext;
        }
    }
    *died = !*ok && ncur == 0;
    if (ncur > SRCH_DIVE_STATES)
        ncur = SRCH_DIVE_STATES;
    /* beam_dive's snapshots, T + 1 for each worker that dives (worker i
     * takes states i, i + nw, ...): none when the window ended it all. */
    for (uint32_t i = 0; !*ok && i < nw && i < ncur; i++) {
        wk[i].cps = calloc(T + 1, sizeof(*wk[i].cps));
        if (wk[i].cps == NULL) {
            st = ccs_err_set(err, CCS_ERR_NOMEM, "stragglar: out of memory");
            goto cleanup;
        }
        for (uint32_t q = 0; q <= T; q++) {
            if (!snap_alloc(&wk[i].cps[q], wk[i].s)) {
                st = ccs_err_set(err, CCS_ERR_NOMEM,
                                 "stragglar: out of memory");
                goto cleanup;
            }
        }
    }
    atomic_store(&first_won, UINT_MAX);
    /* After the window the beam would only rank noise-free runs, so the
     * best SRCH_DIVE_STATES states dive to the end, nw at a time in score
     * order; the best ranked one that finishes within T wins. */
    for (uint32_t b0 = 0; b0 < ncur && !*ok; b0 += nw) {
        uint32_t cnt = ncur - b0 < nw ? ncur - b0 : nw;
        for (uint32_t i = 0; i < nw; i++) { /* worker i: state b0 + i */
            wk[i].cur = cur;
            wk[i].r = r;
            wk[i].complete = 1;
            wk[i].base = b0;
            wk[i].count = b0 + cnt;
        }
        st = beam_run(wk, nw, err);
        if (st != CCS_OK)
            goto cleanup;
        for (uint32_t i = 0; i < cnt && !*ok; i++) {
            if (!kids[b0 + i].won)
                continue;
            *ok = true;
            if (i > 0) {
                /* Worker i's plan and state are the winners. */
                memcpy(p->peer, wk[i].p->peer,
                       (size_t)wk[i].p->nrounds * n * sizeof(*p->peer));
                memcpy(p->send, wk[i].p->send,
                       (size_t)wk[i].p->nrounds * n * sizeof(*p->send));
                p->nrounds = wk[i].p->nrounds;
                memcpy(s->xround, wk[i].s->xround,
                       s->m * sizeof(*s->xround));
            }
        }
    }
cleanup:
    s->steer = 0;
    for (uint32_t i = 0; i < W && cur && nxt; i++) {
        snap_free(&cur[i]);
        snap_free(&nxt[i]);
    }
    for (uint32_t i = 0; i < nkids && kids; i++) {
        snap_free(&kids[i].snap);
        free(kids[i].peer);
        free(kids[i].send);
    }
    for (uint32_t i = 0; i < SRCH_BEAM_THREADS; i++) {
        for (uint32_t q = 0; wk[i].cps != NULL && q <= T; q++)
            snap_free(&wk[i].cps[q]);
        free(wk[i].cps);
    }
    for (uint32_t i = 1; i < SRCH_BEAM_THREADS; i++) {
        stragglar_srch_free(&ws[i]);
        free(wp[i].peer);
        free(wp[i].send);
    }
    free(kids);
    free(cur);
    free(nxt);
    free(lpeer);
    free(lsend);
    free(par);
    return st;
}
