/*
 * stragglar_hole.c - StragglAR's phase 1 for odd n a little below a power
 * of 2 (489..511, 953..1023 among others): Algorithm 1's structure with
 * holes, then the matching search for the last rounds.
 *
 * Why this shape (docs/stragglar.md, "Odd n below a power of 2: the
 * hole"): at LB + 1 the counting budget of odd n is x - 1 + K wasted
 * receives (K = ceil(log2 n), x = 2^K + 1 - n), so nearly every round
 * must be at capacity.  Algorithm 1's chunk counts 2^(K-1), .., 2, 1 sum
 * to 2^K - 1, x - 1 more than the m = n - 1 non-stragglers.  A round
 * wastes nothing if the chunk that expires (every rank gets it) is
 * exactly x / 2 holders short: then its holders P (minus the straggler's
 * partner) are one fewer than the rest Q, every P-Q pair exchanges
 * usefully both ways (P sends the expiring chunk, Q its active one) and
 * one Q-rank idles, which the capacity already counts.  A chunk is born
 * with one holder and doubles every round until it expires, so a holder
 * that does not send its chunk t rounds before the expiry leaves it
 * 2^(t-1) short.  Two kinds of such holes keep every expiring chunk x / 2
 * short, x / 2 = 2^s + H:
 *   - the idle rank holds the chunk that expires s + 1 rounds later
 *     (2^s short each); it misses the expiring chunk (a "debt": a chunk
 *     it never forwards, so it can get it at the end);
 *   - H hosts (H even) hold two active chunks, the one expiring now and
 *     the next; they send the first and take the one after the next from
 *     a Q-rank, so they never send the second (1 short each).  They are
 *     made in pairs in the ramp's last round, by two holders of c_0 and
 *     c_1 exchanging, and are the last ranks to meet the straggler (that
 *     meeting ends their pattern, so the search takes over before).
 * With idles alone (H = 0) x / 2 must be a power of 2: one idle per round
 * means one hole per expiring chunk.  The ramp's last round has x - 1
 * more holders than chunk-less ranks: 2^(s-b) holders of c_b (b <= s)
 * and H more of c_0 idle, and H make the host pairs.  In the last K
 * rounds every rank must receive in every round, so a rank can carry at
 * most one debt there: the idle rank is always one without a debt, and
 * ranks without one are steered to hold the chunk of a coming idle slot.
 */
#include <stdlib.h>
#include <string.h>

#include "stragglar_int.h"

/* The structured prefix for idle shift s and H hosts: rounds 0..upto-1
 * appended to p, canonical labels (round r's straggler partner is rank
 * r).  *held false when the structure cannot go on (no rank without a
 * debt in the idle slot, or the counts off), which is "not this way",
 * not an error. */
static ccs_status_t hole_prefix(uint32_t n, uint32_t s, uint32_t H,
                                uint32_t upto, stragglar_plan_t *p,
                                bool *held, ccs_err_t *err)
{
    uint32_t m = n - 1, sigma = n - 1, K = stragglar_ceil_log2(n);
    uint32_t lead = K - 1 - s; /* the idle holds c_{r - lead} */
    int32_t *act = NULL, *act2 = NULL, *pl = NULL, *ql = NULL;
    int32_t *recv_act = NULL;
    uint8_t *used = NULL, *debt = NULL, *host = NULL;
    uint32_t *cov = NULL, *bs = NULL, *be = NULL;
    int32_t *qs = NULL;
    ccs_status_t st = CCS_OK;

    *held = false;
    /* All owned here. */
    act = malloc(n * sizeof(*act));
    act2 = malloc(n * sizeof(*act2));
    host = calloc(n, 1);
    pl = malloc(n * sizeof(*pl));
    ql = malloc(n * sizeof(*ql));
    recv_act = malloc(n * sizeof(*recv_act));
    used = malloc(n);
    debt = calloc(n, 1);
    cov = calloc(n + K, sizeof(*cov));
    bs = malloc((K + 1) * sizeof(*bs));
    be = malloc((K + 1) * sizeof(*be));
    qs = malloc(n * sizeof(*qs));
    if (!act || !act2 || !host || !pl || !ql || !recv_act || !used ||
        !debt || !cov || !bs || !be || !qs) {
        st = ccs_err_set(err, CCS_ERR_NOMEM, "stragglar: out of memory");
        goto cleanup;
    }
    for (uint32_t g = 0; g < n; g++)
        act[g] = act2[g] = -1;
    /* Hosts: the top H labels (they meet the straggler last, after the
     * structured rounds); the first half gets c_0 in the ramp, the second
     * half c_1. */
    if (H > 0 && m < H + 2 * K)
        goto cleanup;
    for (uint32_t i = 0; i < H; i++)
        host[m - 1 - i] = 1;

    for (uint32_t r = 0; r < upto; r++) {
        uint32_t rr, np = 0, nq = 0;

        st = stragglar_plan_add_round(p, &rr, err);
        if (st != CCS_OK)
            goto cleanup;
        memset(used, 0, n);
        stragglar_plan_pair(p, r, (int32_t)r, (int32_t)r, (int32_t)sigma,
                            (int32_t)r);
        used[r] = used[sigma] = 1;
        if (r < K) {
            /* Algorithm 1's ramp, but the hosts get c_0 or c_1 early,
             * and in its last round the x - 1 holders too many for the
             * chunk-less ranks idle or pair as hosts (below). */
            uint32_t left;
            stragglar_ramp_open(p, r, K, used, recv_act);
            if (H > 0 && r + 1 < K) {
                /* Holders of c_0 and c_1 feed the hosts first. */
                for (uint32_t g = 0; g < m; g++) {
                    uint32_t lo, hi;
                    if (used[g] || (act[g] != 0 && act[g] != 1))
                        continue;
                    lo = act[g] == 0 ? m - H / 2 : m - H;
                    hi = act[g] == 0 ? m : m - H / 2;
                    for (uint32_t h = lo; h < hi; h++) {
                        if (!used[h] && act[h] < 0 && recv_act[h] < 0) {
                            stragglar_plan_pair(p, r, (int32_t)g, act[g],
                                                (int32_t)h, -1);
                            used[g] = used[h] = 1;
                            recv_act[h] = act[g];
                            break;
                        }
                    }
                }
            }
            if (r == K - 1) {
                /* 2^(s-b) holders of c_b idle, b = 0..s, and H more of
                 * c_0: each such hole has doubled to 2^s when c_b
                 * expires, and the hosts add H to each. */
                for (uint32_t b = 0; b <= s; b++) {
                    left = (UINT32_C(1) << (s - b)) + (b == 0 ? H : 0);
                    for (uint32_t g = m; g-- > 0 && left > 0;) {
                        if (!used[g] && !host[g] && act[g] == (int32_t)b) {
                            used[g] = 1;
                            left--;
                        }
                    }
                    if (left > 0)
                        goto cleanup;
                }
                /* Host pairs exchange c_0 and c_1: both hold both. */
                for (uint32_t i = 0; i < H / 2; i++) {
                    uint32_t a = m - 1 - i, b = m - 1 - H / 2 - i;
                    if (used[a] || used[b] || act[a] != 0 || act[b] != 1)
                        goto cleanup;
                    stragglar_plan_pair(p, r, (int32_t)a, 0, (int32_t)b, 1);
                    used[a] = used[b] = 1;
                    act2[a] = act2[b] = 1;
                    act[b] = 0;
                }
            }
            if (!stragglar_ramp_close(p, r, K, act, used, host, recv_act))
                goto cleanup;
            continue;
        }

        for (uint32_t g = 0; g < m; g++) {
            if (used[g])
                continue;
            if (act[g] == (int32_t)(r - K))
                pl[np++] = (int32_t)g;
            else
                ql[nq++] = (int32_t)g;
        }
        if (act[r] != (int32_t)(r - K) || np + 1 != nq)
            goto cleanup;
        /* The idle Q-rank: a holder of the chunk that expires s + 1
         * rounds from now, without a debt (the last such in rank
         * order). */
        {
            int32_t idle = -1;
            for (uint32_t k = nq; k-- > 0 && idle < 0;) {
                int32_t q = ql[k];
                if (act[q] == (int32_t)(r - lead) && !debt[q])
                    idle = q;
            }
            if (idle < 0)
                goto cleanup;
            used[idle] = 1;
            debt[idle] = 1;
        }
        /* Hosts hold c_{r-K} and c_{r+1-K}; each sends c_{r-K} and takes
         * c_{r+2-K}, so it never sends c_{r+1-K}: one hole in the
         * chunk that expires next round. */
        for (uint32_t i = 0; i < np; i++) {
            int32_t h = pl[i], best = -1;
            if (!host[h])
                continue;
            if (act2[h] != (int32_t)(r - K + 1))
                goto cleanup;
            for (uint32_t k = 0; k < nq && best < 0; k++) {
                int32_t q = ql[k];
                if (!used[q] && act[q] == (int32_t)(r - K + 2))
                    best = q;
            }
            if (best < 0)
                goto cleanup;
            stragglar_plan_pair(p, r, h, act[h], best, act[best]);
            used[h] = used[best] = 1;
        }
        /* Critical window (as Algorithm 1): a P-rank l with
         * r < l <= r + K must end with c_{l-K} or older, so that it
         * holds c_{l-K} when it meets the straggler. */
        if (stragglar_window_pairs(p, r, K, pl, np, ql, nq, act, used) >= 0)
            goto cleanup;
        /* Ranks without a debt: how many hold the chunk of each coming
         * idle slot (c_b's slot is round b + lead), then each free P-rank
         * without a debt takes the chunk whose slot has the fewest, the
         * nearest first, so that every slot finds one. */
        for (uint32_t b = r - lead + 1; b <= r; b++)
            cov[b] = 0;
        for (uint32_t g = 0; g < m; g++) {
            if (!debt[g] && !host[g] && act[g] > (int32_t)(r - lead))
                cov[act[g]]++;
        }
        if (!debt[r])
            cov[r]++;
        /* The free Q-ranks by chunk (bucket c_b - c_{r-K+1}), in rank
         * order within a bucket: each pick takes the first of the best
         * bucket, K buckets to look at instead of every Q-rank. */
        for (uint32_t k = 0; k <= K; k++)
            bs[k] = 0;
        for (uint32_t k = 0; k < nq; k++) {
            int32_t q = ql[k];
            if (used[q])
                continue;
            if (act[q] < (int32_t)(r - K + 1) || act[q] >= (int32_t)r)
                goto cleanup;
            bs[(uint32_t)act[q] - (r - K + 1) + 1]++;
        }
        for (uint32_t k = 1; k <= K; k++)
            bs[k] += bs[k - 1];
        for (uint32_t k = 0; k < K; k++)
            be[k] = bs[k];
        for (uint32_t k = 0; k < nq; k++) {
            int32_t q = ql[k];
            if (!used[q])
                qs[be[(uint32_t)act[q] - (r - K + 1)]++] = q;
        }
        for (uint32_t i = 0; i < np; i++) {
            int32_t u = pl[i], q;
            uint32_t bk = K;
            if (used[u] || debt[u])
                continue;
            /* Chunks c_{r-lead+1}..c_{r-1}: buckets K - lead..K - 2. */
            for (uint32_t k = K - lead; k + 1 < K; k++) {
                if (bs[k] < be[k] &&
                    (bk == K || cov[k + r - K + 1] < cov[bk + r - K + 1]))
                    bk = k;
            }
            if (bk == K)
                continue;
            q = qs[bs[bk]++];
            stragglar_plan_pair(p, r, u, act[u], q, act[q]);
            used[u] = used[q] = 1;
            cov[act[q]]++;
        }
        if (!stragglar_pair_rest(p, r, pl, np, ql, nq, act, used))
            goto cleanup;
        for (uint32_t i = 0; i < np; i++) {
            int32_t u = pl[i], got = act[p->peer[(size_t)r * n + (size_t)u]];
            if (host[u]) {
                act[u] = act2[u];
                act2[u] = got;
            } else {
                act[u] = got;
            }
        }
        act[r] = (int32_t)r;
    }
    *held = true;

cleanup:
    free(act);
    free(act2);
    free(host);
    free(pl);
    free(ql);
    free(recv_act);
    free(used);
    free(debt);
    free(cov);
    free(bs);
    free(be);
    free(qs);
    return st;
}

/* Load the state after plan p's rounds (canonical labels) into s. */
static void hole_load(srch_t *s, const stragglar_plan_t *p)
{
    uint32_t n = s->n, m = s->m, sigma = n - 1;

    memset(s->h.bits, 0, (size_t)n * s->h.words * sizeof(*s->h.bits));
    memset(s->h.count, 0, m * sizeof(*s->h.count));
    memset(s->h.nhave, 0, n * sizeof(*s->h.nhave));
    for (uint32_t u = 0; u < m; u++)
        s->xround[u] = -1;
    for (uint32_t r = 0; r < p->nrounds; r++) {
        const int32_t *peer = &p->peer[(size_t)r * n];
        const int32_t *snd = &p->send[(size_t)r * n];
        for (uint32_t g = 0; g < n; g++)
            s->got[g] = -1;
        for (uint32_t g = 0; g < n; g++) {
            int32_t q = peer[g];
            if (q < 0 || snd[g] < 0 || (r < m && (g == sigma ||
                                                  (uint32_t)q == sigma)))
                continue;
            s->got[q] = snd[g];
        }
        if (r < m) {
            s->xround[r] = (int32_t)r;
            stragglar_hold_add(&s->h, r, r);
            stragglar_hold_add(&s->h, sigma, r);
        }
        for (uint32_t g = 0; g < n; g++) {
            if (s->got[g] >= 0)
                stragglar_hold_add(&s->h, g, (uint32_t)s->got[g]);
        }
    }
}

/* The structure's shape for n: x = 2^K + 1 - n non-stragglers short of
 * Algorithm 1's 2^K - 1, so each expiring chunk must be x / 2 holders
 * short: 2^s from the idle ranks (one per round, s + 1 rounds ahead) and
 * H from the hosts (one each per round, one round ahead), H even since
 * hosts come in pairs.  x / 2 a power of 2: s = log2(x / 2), no hosts;
 * x / 2 odd: s = 0, H = x / 2 - 1; otherwise the largest power of 2
 * below x / 2 and H the rest.  false: not for this n (even n, s too
 * large for the ramp: s = K - 2, n = 2^(K-1) + 1 such as 257 and 513,
 * did not get through; or more idle ranks and hosts than the chunks they
 * need have holders). */
static bool hole_params(uint32_t n, uint32_t *s, uint32_t *H)
{
    uint32_t K = stragglar_ceil_log2(n), x = (UINT32_C(1) << K) + 1 - n;
    uint32_t h = x / 2;

    if (n < 3 || n % 2 == 0 || h < 1)
        return false;
    *s = 0;
    while ((UINT32_C(2) << *s) <= h)
        (*s)++;
    if (h % 2 == 1 && !stragglar_is_pow2(h))
        *s = 0;
    *H = h - (UINT32_C(1) << *s);
    if (*s + 3 > K)
        return false;
    /* The ramp's last round idles 2^s + H holders of c_0 and 2^(s-1) of
     * c_1, and the hosts take H / 2 of each: c_0 has 2^(K-2) holders
     * then, c_1 2^(K-3).  With s = 0 (x / 2 odd, H = x / 2 - 1 can be
     * large) every round each host takes the chunk that expires two
     * rounds later from one of its 2^(K-3) holders (n = 383, 64 hosts,
     * gets through; 739, 142 hosts, does not); with s > 0, H < 2^s is
     * small. */
    return (UINT32_C(1) << *s) + *H + *H / 2 <= (UINT32_C(1) << (K - 2)) &&
           (*s ? UINT32_C(1) << (*s - 1) : 0) + *H / 2 <=
               (UINT32_C(1) << (K - 3)) &&
           (*s > 0 || *H <= (UINT32_C(1) << (K - 3)));
}

bool stragglar_hole_fits(uint32_t n)
{
    uint32_t sh, H;

    return hole_params(n, &sh, &H);
}

/* One hole run: the structured prefix for rounds 0..upto-1, then the
 * search's rounds, noise-free and bounded by s->T. */
static ccs_status_t hole_run(srch_t *s, stragglar_plan_t *p, uint32_t upto,
                             bool *ok, ccs_err_t *err)
{
    ccs_status_t st;
    uint32_t sh, H;
    bool held;

    *ok = false;
    p->nrounds = 0;
    if (!hole_params(s->n, &sh, &H))
        return CCS_OK;
    st = hole_prefix(s->n, sh, H, upto, p, &held, err);
    if (st != CCS_OK || !held)
        return st;
    hole_load(s, p);
    s->rng = 0;
    s->noise = 0;
    s->wrel = 4 * SRCH_WR;
    s->rpct = 100;
    s->salt = 0;
    for (uint32_t r = upto;; r++) {
        srch_next_t next;
        st = stragglar_srch_round(s, p, r, true, &next, err);
        if (st != CCS_OK || next == SRCH_STOP)
            return st;
        if (next == SRCH_DONE)
            break;
    }
    *ok = p->nrounds <= s->T;
    return CCS_OK;
}

/* Check a finished hole plan (search labels) as stragglar_plan will
 * after the renaming: renamed into scratch, replayed by
 * stragglar_plan_check.  *good false when the checker rejects it, so the
 * search goes on without it instead of failing the synthesis. */
static ccs_status_t hole_check(const srch_t *s, const stragglar_plan_t *src,
                               bool *good, ccs_err_t *err)
{
    uint32_t n = s->n, sigma = n - 1;
    stragglar_plan_t dst = { .n = n };  /* arrays owned here */
    ccs_err_t cerr;
    ccs_status_t st = CCS_OK;

    *good = false;
    for (uint32_t u = 0; u < s->m; u++) {
        if (s->xround[u] < 0)
            return CCS_OK;
    }
    for (uint32_t r = 0; r < src->nrounds; r++) {
        uint32_t rr;
        st = stragglar_plan_add_round(&dst, &rr, err);
        if (st != CCS_OK)
            goto cleanup;
        for (uint32_t g = 0; g < n; g++) {
            int32_t q = src->peer[(size_t)r * n + g];
            int32_t c = src->send[(size_t)r * n + g];
            uint32_t pg = g == sigma ? sigma : (uint32_t)s->xround[g];
            dst.peer[(size_t)r * n + pg] =
                q < 0 ? -1
                      : ((uint32_t)q == sigma ? (int32_t)sigma
                                              : s->xround[q]);
            dst.send[(size_t)r * n + pg] = c < 0 ? -1 : s->xround[c];
        }
    }
    st = stragglar_plan_check(&dst, &cerr);
    if (st == CCS_ERR_NOMEM)
        ccs_err_set(err, st, "stragglar: out of memory");
    else {
        *good = st == CCS_OK;
        st = CCS_OK;
    }
cleanup:
    free(dst.peer);
    free(dst.send);
    return st;
}

ccs_status_t stragglar_srch_hole(srch_t *s, stragglar_plan_t *p, uint32_t T,
                                 bool *ok, ccs_err_t *err)
{
    /* Rounds before the straggler's last exchange at which the search
     * takes over.  The search's greedy rounds sometimes end one round
     * late (n = 1021, 1017, 993 from m; 511 from m - 2), from another
     * handover they do not: every n of this form in 258..1023 reached
     * LB + 1 from one of these (docs/stragglar.md). */
    static const uint32_t back[] = { 0, 2, 4, 8, 14, 20, 30 };
    uint32_t T0 = s->T, m = s->m, sh, H;
    ccs_status_t st = CCS_OK;

    *ok = false;
    if (!hole_params(s->n, &sh, &H))
        return CCS_OK;
    s->T = T;
    for (size_t i = 0; i < sizeof(back) / sizeof(back[0]) && !*ok; i++) {
        /* The hosts meet the straggler in the last H rounds before m,
         * which ends their pattern: the search takes over before. */
        if (H + back[i] + stragglar_ceil_log2(s->n) >= m)
            break;
        st = hole_run(s, p, m - H - back[i], ok, err);
        if (st == CCS_OK && *ok)
            st = hole_check(s, p, ok, err);
        if (st != CCS_OK)
            break;
    }
    s->T = T0;
    return st;
}
