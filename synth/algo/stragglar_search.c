/*
 * stragglar_search.c - StragglAR's phase 1 for n not a power of 2
 * (Appendix E): one maximum-weight matching per round, searched over
 * targets T = LB, LB + 1, ... with seeded restarts, the receiver-bonus
 * variants and, for odd n just below a power of 2, the beam
 * (stragglar_beam.c).  Deterministic: the same n gives the same plan.
 */
#include <stdlib.h>
#include <string.h>

#include "stragglar_int.h"

/* ---- Other n: one maximum-weight matching per round, searched. ---- */

/*
 * A run plans round after round for a target of T rounds.  Two kinds of
 * slack drive the weights:
 *   rank slack   rs = (T - r) - (chunks the rank still lacks): a rank with
 *                rs = 0 must receive (or meet the straggler) every round
 *                from now on;
 *   chunk slack  cs = (T - r) - (rounds a complete chunk needs to reach
 *                every rank if its holders doubled from now on; the
 *                straggler helps from round n-1): cs = 0 means every
 *                holder must send it this round.
 * The counting argument (docs/stragglar.md) says that for T = LB or LB + 1
 * almost every rank must receive something useful in almost every round,
 * so an edge is worth SRCH_WR per useful direction, plus a bonus when the
 * chunk or the receiver has (almost) no slack left.  Each direction sends
 * the sender's most urgent complete chunk the receiver lacks.  The
 * straggler is a vertex too: in rounds r < n-1 it has an edge of weight
 * SRCH_BIG to every rank whose chunk is not complete yet, so it is always
 * matched and the matching itself picks the partner whose absence costs
 * least; the ranks are renamed at the end so that round r's partner is
 * rank r (what stragglar_plan_check and the emitter expect).
 *
 * Speed: the weights depend only on bitsets over the few "active" chunks
 * (complete, not yet everywhere), and above SRCH_DENSE_N ranks each vertex
 * keeps only its SRCH_TOPK heaviest edges, so the blossom sees O(n) edges.
 * A run stops as soon as a slack goes negative (T is out of reach).
 *
 * Search: the first run per T has no noise; later runs add seeded noise to
 * the chunk and straggler priorities (xorshift, seed from n, T and the run
 * index: the same n always gives the same plan).  T starts at LB (skipped
 * where the counting argument rules it out), then LB + 1, ...; the first
 * run that reaches T wins.
 */

void stragglar_srch_free(srch_t *s)
{
    stragglar_hold_free(&s->h);
    free(s->xround);
    free(s->cprio);
    free(s->curg);
    free(s->act);
    free(s->abits);
    free(s->rprio);
    free(s->w);
    free(s->ch);
    free(s->wsig);
    free(s->kept);
    free(s->klo);
    free(s->khi);
    free(s->kstart);
    free(s->topk);
    free(s->thk);
    free(s->thr);
    free(s->edges);
    free(s->mate);
    free(s->got);
    free(s->sendc);
    stragglar_cls_free(&s->cls);
}

/* Scratch and state for n ranks, all owned by s (stragglar_srch_free);
 * on failure nothing is left allocated. */
ccs_status_t stragglar_srch_init(srch_t *s, uint32_t n, ccs_err_t *err)
{
    uint32_t m = n - 1;
    ccs_status_t st;

    memset(s, 0, sizeof(*s));
    st = stragglar_hold_init(&s->h, n, err);
    if (st != CCS_OK)
        return st;
    s->n = n;
    s->m = m;
    s->rpct = 100;
    s->xround = malloc(m * sizeof(*s->xround));
    s->cprio = malloc(m * sizeof(*s->cprio));
    s->curg = malloc(m * sizeof(*s->curg));
    s->act = malloc(m * sizeof(*s->act));
    s->abits = malloc((size_t)n * ((m + 63) / 64) * sizeof(*s->abits));
    s->rprio = malloc(n * sizeof(*s->rprio));
    s->w = malloc((size_t)n * n * sizeof(*s->w));
    s->ch = malloc((size_t)n * n * sizeof(*s->ch));
    s->kept = malloc((size_t)n * SRCH_KEEP * sizeof(*s->kept));
    s->klo = malloc((size_t)n * SRCH_KEEP * sizeof(*s->klo));
    s->khi = malloc((size_t)n * SRCH_KEEP * sizeof(*s->khi));
    s->kstart = malloc((n + 1) * sizeof(*s->kstart));
    s->topk = malloc(n * sizeof(*s->topk));
    s->thk = malloc(n * sizeof(*s->thk));
    s->thr = malloc(n * sizeof(*s->thr));
    s->edges = malloc((size_t)n * (n - 1) / 2 * sizeof(*s->edges));
    s->mate = malloc(n * sizeof(*s->mate));
    s->got = malloc(n * sizeof(*s->got));
    s->sendc = malloc(n * sizeof(*s->sendc));
    s->wsig = malloc(n * sizeof(*s->wsig));
    if (!s->sendc || !s->wsig || stragglar_cls_init(&s->cls, n) != CCS_OK ||
        !s->xround || !s->cprio || !s->curg || !s->act || !s->abits ||
        !s->rprio || !s->w || !s->ch || !s->kept || !s->klo ||
        !s->khi || !s->kstart || !s->topk || !s->thk || !s->thr ||
        !s->edges ||
        !s->mate || !s->got) {
        stragglar_srch_free(s);
        memset(s, 0, sizeof(*s));
        return ccs_err_set(err, CCS_ERR_NOMEM, "stragglar: out of memory");
    }
    return CCS_OK;
}

static uint64_t srch_rand(srch_t *s)
{
    s->rng ^= s->rng << 13;
    s->rng ^= s->rng >> 7;
    s->rng ^= s->rng << 17;
    return s->rng;
}

static int64_t srch_noise(srch_t *s)
{
    if (s->rng == 0 || s->noise <= 0)
        return 0;
    return (int64_t)(srch_rand(s) % (uint64_t)s->noise);
}

/* Rounds a chunk held by h non-stragglers needs from round r on, if every
 * holder (and the straggler, once it is free at round m) sends it. */
uint32_t stragglar_srch_need(uint32_t h, uint32_t r, uint32_t m)
{
    uint32_t j = 0;

    while (h < m) {
        uint32_t senders = h + (r + j >= m ? 1u : 0u);
        h += senders < m - h ? senders : m - h;
        j++;
    }
    return j;
}

static int64_t srch_urgency(int64_t slack)
{
    if (slack <= 0)
        return 3 * SRCH_WR;
    if (slack == 1)
        return SRCH_WR / 2;
    if (slack == 2)
        return SRCH_WR / 8;
    return 0;
}

static int64_t srch_rurgency(int64_t slack)
{
    if (slack <= 0)
        return 3 * SRCH_WR;
    if (slack >= 12)
        return 0;
    return SRCH_WR >> (slack - 1);
}

/* Sending order: chunk a goes before chunk b when it is more urgent or,
 * at equal urgency, rarer (fewer non-straggler holders; ties: older
 * first).  Rarest first keeps the ranks' holdings diverse, so that more
 * pairs can exchange usefully in both directions later (oldest first
 * makes the holders of the old chunks alike: n = 3..256, sum of excess 834
 * -> about 240, see docs/stragglar.md). */
static bool srch_before(const srch_t *s, uint32_t a, uint32_t b)
{
    if (s->curg[a] != s->curg[b])
        return s->curg[a] > s->curg[b];
    if (s->h.count[a] != s->h.count[b])
        return s->h.count[a] < s->h.count[b];
    return s->cprio[a] > s->cprio[b];
}

/* Most useful receives any plan can make in round r (the capacity of the
 * counting argument, docs/stragglar.md): in round r < K = ceil(log2 n)
 * at most 2^r - 1 ranks hold a complete chunk (holders at most double,
 * plus the straggler's partner), so at most that many can send; while the
 * straggler is busy (r < m) n - 2 non-stragglers are free, so at most
 * 2 floor((n - 2) / 2) receive; after it, all m non-stragglers can. */
uint32_t stragglar_round_capacity(uint32_t n, uint32_t r)
{
    uint32_t m = n - 1, cap = r < m ? ((n - 2) & ~1u) : m;

    if (r < 32 && (UINT32_C(1) << r) - 1 < cap)
        cap = (UINT32_C(1) << r) - 1;
    return cap;
}

/* Capacity of rounds 0..r-1.  A plan of T rounds can waste
 * srch_capsum(n, T) - m (m - 1) receives; below zero T is out of reach. */
static int64_t srch_capsum(uint32_t n, uint32_t r)
{
    int64_t cap = 0;

    for (uint32_t q = 0; q < r; q++)
        cap += stragglar_round_capacity(n, q);
    return cap;
}

/* Insert (key, v) into the SRCH_TOPK largest keys seen, kept sorted in
 * descending order in key[0..*len) with their vertices in vx. */
static void topk_insert(int64_t *key, uint32_t *vx, uint32_t *len,
                        int64_t k, uint32_t v)
{
    uint32_t j;

    if (*len == SRCH_TOPK && k <= key[*len - 1])
        return;
    j = *len < SRCH_TOPK ? (*len)++ : *len - 1;
    for (; j > 0 && key[j - 1] < k; j--) {
        key[j] = key[j - 1];
        vx[j] = vx[j - 1];
    }
    key[j] = k;
    vx[j] = v;
}

/* The round's inputs: whether the run goes on, the active chunks in
 * sending order (s->act, s->abits), the chunk and receiver priorities and
 * the steering target (s->cmax).  *next = SRCH_GO when round r is to be
 * planned. */
static ccs_status_t srch_prepare(srch_t *s, uint32_t r, bool bounded,
                                 srch_next_t *next, ccs_err_t *err)
{
    uint32_t n = s->n, m = s->m, sigma = n - 1, maxrounds = 4 * n + 64;
    uint32_t na = 0, left = s->T > r ? s->T - r : 0;
    int64_t rsmin;
    bool done = true;
    uint32_t cmax = 0;

    for (uint32_t g = 0; g < n && done; g++)
        done = s->h.nhave[g] == m;
    if (done) {
        *next = SRCH_DONE;
        return CCS_OK;
    }
    if (r >= maxrounds)
        return ccs_err_set(err, CCS_ERR_INTERNAL,
                           "stragglar: n=%u: no progress after %u "
                           "rounds", n, r);
    if (bounded && r >= s->T) {
        *next = SRCH_STOP;
        return CCS_OK;
    }
    {   /* Receives wasted so far: no later round can make up for them,
         * so past the budget T is out of reach. */
        int64_t got = 0;
        for (uint32_t g = 0; g < m; g++)
            got += (int64_t)s->h.nhave[g] - (s->xround[g] >= 0 ? 1 : 0);
        if (bounded && srch_capsum(n, r) - got >
                           srch_capsum(n, s->T) -
                               (int64_t)m * ((int64_t)m - 1)) {
            *next = SRCH_STOP;
            return CCS_OK;
        }
    }

    /* Active chunks, their slack and priority. */
    for (uint32_t c = 0; c < m; c++) {
        int64_t cs;
        if (s->xround[c] < 0 || s->h.count[c] == m)
            continue;
        cs = (int64_t)left - (int64_t)stragglar_srch_need(s->h.count[c], r, m);
        if (bounded && cs < 0) {
            *next = SRCH_STOP;
            return CCS_OK;
        }
        s->curg[c] = srch_urgency(cs);
        s->cprio[c] = s->curg[c] + srch_noise(s);
        s->act[na++] = c;
    }
    for (uint32_t i = 1; i < na; i++) { /* insertion sort, stable */
        uint32_t c = s->act[i], j = i;
        while (j > 0 && srch_before(s, c, s->act[j - 1])) {
            s->act[j] = s->act[j - 1];
            j--;
        }
        s->act[j] = c;
    }
    s->aw = (na + 63) / 64;
    if (s->aw == 0)
        s->aw = 1;
    memset(s->abits, 0, (size_t)n * s->aw * sizeof(*s->abits));
    for (uint32_t i = 0; i < na; i++) {
        for (uint32_t g = 0; g < n; g++) {
            if (stragglar_hold_has(&s->h, g, s->act[i]))
                s->abits[(size_t)g * s->aw + i / 64] |= UINT64_C(1)
                                                        << (i % 64);
        }
    }
    rsmin = INT64_MAX;
    for (uint32_t g = 0; g < m; g++) {
        int64_t rs = (int64_t)left - (int64_t)(m - s->h.nhave[g]);
        if (rs < rsmin)
            rsmin = rs;
    }
    for (uint32_t g = 0; g < m; g++) {
        int64_t rs = (int64_t)left - (int64_t)(m - s->h.nhave[g]);
        int64_t rel = rs - rsmin;
        s->rprio[g] = (srch_rurgency(rs) +
                       (rel < 20 ? (s->wrel >> rel) : 0)) *
                      s->rpct / 100;
        if (bounded && rs < 0) {
            *next = SRCH_STOP;
            return CCS_OK;
        }
    }
    s->rprio[sigma] = 0;

    /* Steering (s->steer, beam only): in the last ramp round (2^r < n <=
     * 2^(r+1)) the holders outnumber the chunk-less ranks, so some holders
     * must pair with each other and end up with two chunks.  The oldest
     * chunk cmax has just reached 2^(K-1) holders, more than half of the
     * non-stragglers, so in the next round some of its holders must pair
     * with each other, which is useful both ways only if both hold a
     * second chunk.  A bonus on holder pairs where exactly one end sends
     * cmax makes the second chunks land on cmax's holders (n = 243: round
     * K can then be waste-free, 240 of 240 receives, instead of 237 at
     * best). */
    s->cmax = -1;
    if (s->steer > 0 && r + 1 < 32 && (UINT32_C(1) << r) < n &&
        (UINT32_C(1) << (r + 1)) >= n) {
        for (uint32_t c = 0; c < m; c++) {
            if (s->h.count[c] < m && s->h.count[c] > s->h.count[cmax])
                cmax = c;
        }
        s->cmax = (int32_t)cmax;
    }
    *next = SRCH_GO;
    return CCS_OK;
}

/* Round r by one maximum-weight matching over every pair (sparsified
 * above SRCH_DENSE_N): s->mate and s->sendc. */
static ccs_status_t srch_match_dense(srch_t *s, uint32_t r, ccs_err_t *err)
{
    uint32_t n = s->n, m = s->m, sigma = n - 1, C;
    const uint32_t *of = s->cls.of;
    bool busy = r < m; /* the straggler exchanges this round */
    int32_t ne = 0;
    ccs_status_t st;

    /* Weights of the pairs of classes (stragglar_class.c); the straggler
     * receives nothing.  While it is busy its edge to every rank that has
     * not met it weighs SRCH_BIG plus the rank's bonus and noise, drawn in
     * rank order. */
    stragglar_cls_weigh(s, r);
    C = s->cls.C;
    if (busy) {
        for (uint32_t u = 0; u < m; u++)
            s->wsig[u] = s->xround[u] < 0
                             ? SRCH_BIG + s->rprio[u] + srch_noise(s)
                             : 0;
    }
#define PAIR_W(u, v)                                                         \
    (busy && (v) == sigma ? s->wsig[u]                                       \
                          : s->w[(size_t)of[u] * C + of[v]])
    /* Sparsify: each vertex keeps its SRCH_TOPK heaviest edges (the
     * straggler keeps all); an edge stays if either end keeps it.  The
     * kept edges (klo, khi) are bucketed by their lower end (kept from
     * kstart[u]) and emitted in (u, v) order, the order of the blossom's
     * input that every plan depends on. */
    if (n <= SRCH_DENSE_N) {
        for (uint32_t u = 0; u < n; u++) {
            for (uint32_t v = u + 1; v < n; v++) {
                int64_t wt = PAIR_W(u, v);
                if (wt > 0)
                    s->edges[ne++] = (match_edge_t){ (int32_t)u,
                                                     (int32_t)v, wt };
            }
        }
    } else {
        uint32_t nk = 0;
        for (uint32_t u = 0; u < sigma; u++) { /* the straggler's edges */
            s->klo[nk] = u;
            s->khi[nk++] = sigma;
        }
        /* Two lists per rank: the SRCH_TOPK heaviest edges (key: the
         * weight to 1/16 of a receive, ties broken by a hash of the pair,
         * so that equal rows do not all pick the same few partners: hubs
         * leave most vertices unmatched) and SRCH_TOPK random ones (the
         * hash alone).  Key and hash are symmetric, so each pair is
         * computed once and offered to both ends' lists: a rank's lists
         * still see its partners in increasing order (the lower ones from
         * their own rows first), so they are what one row scan per rank
         * would give, equal keys included, at half the key computations
         * (the scan was about a quarter of a run at n = 759). */
        uint32_t hx = s->salt ^ r * 97u;
        const int64_t *w = s->w;
        for (uint32_t u = 0; u < n; u++) {
            s->topk[u].nh = 0;
            s->topk[u].nr = 0;
            s->thk[u] = -1;
            s->thr[u] = -1;
        }
        for (uint32_t u = 0; u < sigma; u++) {
            srch_topk_t *tu = &s->topk[u];
            const int64_t *wrow = &w[(size_t)of[u] * C];
            uint32_t vend = busy ? sigma : n, hu = u * 40503u;
            int64_t thk = s->thk[u], thr = s->thr[u];
            for (uint32_t v = u + 1; v < vend; v++) {
                int64_t wt = wrow[of[v]], key, hk2;
                uint32_t hv;
                if (wt <= 0)
                    continue;
                hv = ((hu + v) ^ hx) * 2654435761u;
                hk2 = (int64_t)(hv >> 8);
                key = ((wt >> 12) << 24) | hk2;
                /* Most keys lose to a full list: test before the call. */
                if (key > thk) {
                    topk_insert(tu->hk, tu->hvx, &tu->nh, key, v);
                    thk = tu->nh < SRCH_TOPK ? -1 : tu->hk[SRCH_TOPK - 1];
                }
                if (hk2 > thr) {
                    topk_insert(tu->rk, tu->rvx, &tu->nr, hk2, v);
                    thr = tu->nr < SRCH_TOPK ? -1 : tu->rk[SRCH_TOPK - 1];
                }
                if (key > s->thk[v]) {
                    srch_topk_t *tv = &s->topk[v];
                    topk_insert(tv->hk, tv->hvx, &tv->nh, key, u);
                    s->thk[v] = tv->nh < SRCH_TOPK ? -1
                                                   : tv->hk[SRCH_TOPK - 1];
                }
                if (hk2 > s->thr[v]) {
                    srch_topk_t *tv = &s->topk[v];
                    topk_insert(tv->rk, tv->rvx, &tv->nr, hk2, u);
                    s->thr[v] = tv->nr < SRCH_TOPK ? -1
                                                   : tv->rk[SRCH_TOPK - 1];
                }
            }
            if (busy && s->wsig[u] > 0) { /* the straggler, last */
                int64_t wt = s->wsig[u];
                uint32_t hv = ((hu + sigma) ^ hx) * 2654435761u;
                int64_t hk2 = (int64_t)(hv >> 8);
                int64_t key = ((wt >> 12) << 24) | hk2;
                if (key > thk)
                    topk_insert(tu->hk, tu->hvx, &tu->nh, key, sigma);
                if (hk2 > thr)
                    topk_insert(tu->rk, tu->rvx, &tu->nr, hk2, sigma);
            }
            for (uint32_t k = 0; k < tu->nh + tu->nr; k++) {
                uint32_t v = k < tu->nh ? tu->hvx[k] : tu->rvx[k - tu->nh];
                s->klo[nk] = u < v ? u : v;
                s->khi[nk++] = u < v ? v : u;
            }
        }
        for (uint32_t u = 0; u <= n; u++)
            s->kstart[u] = 0;
        for (uint32_t k = 0; k < nk; k++)
            s->kstart[s->klo[k] + 1]++;
        for (uint32_t u = 0; u < n; u++)
            s->kstart[u + 1] += s->kstart[u];
        for (uint32_t k = 0; k < nk; k++)
            s->kept[s->kstart[s->klo[k]]++] = s->khi[k];
        for (uint32_t u = n; u > 0; u--) /* back to the starts */
            s->kstart[u] = s->kstart[u - 1];
        s->kstart[0] = 0;
        for (uint32_t u = 0; u < n; u++) {
            uint32_t *row = &s->kept[s->kstart[u]];
            uint32_t len = s->kstart[u + 1] - s->kstart[u];
            for (uint32_t i = 1; i < len; i++) { /* insertion sort */
                uint32_t x = row[i], j = i;
                for (; j > 0 && row[j - 1] > x; j--)
                    row[j] = row[j - 1];
                row[j] = x;
            }
            for (uint32_t i = 0; i < len; i++) {
                int64_t wt;
                if (i > 0 && row[i] == row[i - 1])
                    continue;
                wt = PAIR_W(u, row[i]);
                if (wt > 0)
                    s->edges[ne++] = (match_edge_t){ (int32_t)u,
                                                     (int32_t)row[i], wt };
            }
        }
    }
#undef PAIR_W
    st = match_max_weight((int32_t)n, s->edges, ne, false, s->mate, err);
    if (st != CCS_OK)
        return st;
    for (uint32_t u = 0; u < n; u++) {
        int32_t v = s->mate[u];
        s->sendc[u] = v < 0 || (busy && (u == sigma || (uint32_t)v == sigma))
                          ? -1
                          : s->ch[(size_t)of[u] * C + of[v]];
    }
    return CCS_OK;
}

/* Plan round r of a run on the state in s (holdings, straggler rounds)
 * and append it to p. */
ccs_status_t stragglar_srch_round(srch_t *s, stragglar_plan_t *p, uint32_t r,
                                  bool bounded, srch_next_t *next,
                                  ccs_err_t *err)
{
    uint32_t n = s->n, m = s->m, sigma = n - 1, rr;
    ccs_status_t st = srch_prepare(s, r, bounded, next, err);

    if (st != CCS_OK || *next != SRCH_GO)
        return st;
    st = s->classes && r >= stragglar_ceil_log2(n)
             ? stragglar_srch_match_classes(s, r, err)
             : srch_match_dense(s, r, err);
    if (st != CCS_OK)
        return st;
    st = stragglar_plan_add_round(p, &rr, err);
    if (st != CCS_OK)
        return st;
    for (uint32_t g = 0; g < n; g++)
        s->got[g] = -1;
    for (uint32_t u = 0; u < n; u++) {
        int32_t v = s->mate[u], cu, cv;
        if (v < 0 || (uint32_t)v < u)
            continue;
        if ((uint32_t)v == sigma && r < m) {
            stragglar_plan_pair(p, r, (int32_t)u, (int32_t)u, (int32_t)sigma,
                      (int32_t)u);
            s->xround[u] = (int32_t)r;
            continue;
        }
        cu = s->sendc[u];
        cv = s->sendc[v];
        stragglar_plan_pair(p, r, (int32_t)u, cu, v, cv);
        if (cu >= 0)
            s->got[v] = cu;
        if (cv >= 0)
            s->got[u] = cv;
    }
    for (uint32_t u = 0; u < m; u++) {
        if (s->xround[u] == (int32_t)r) {
            stragglar_hold_add(&s->h, u, u);
            stragglar_hold_add(&s->h, sigma, u);
        }
    }
    for (uint32_t g = 0; g < n; g++) {
        if (s->got[g] >= 0)
            stragglar_hold_add(&s->h, g, (uint32_t)s->got[g]);
    }
    *next = SRCH_GO;
    return CCS_OK;
}

/* Empty holdings, nobody has met the straggler, no rounds. */
void stragglar_srch_reset(srch_t *s, stragglar_plan_t *p)
{
    memset(s->h.bits, 0, (size_t)s->n * s->h.words * sizeof(*s->h.bits));
    memset(s->h.count, 0, s->m * sizeof(*s->h.count));
    memset(s->h.nhave, 0, s->n * sizeof(*s->h.nhave));
    for (uint32_t u = 0; u < s->m; u++)
        s->xround[u] = -1;
    p->nrounds = 0;
}

/* One run for target T.  Returns CCS_OK with *ok = true and the plan in p
 * (canonical ranks, not yet renamed) when it finished within T rounds;
 * *ok = false when it gave up (with `bounded`) or needed more. */
ccs_status_t stragglar_srch_run(srch_t *s, stragglar_plan_t *p, bool bounded,
                             bool *ok, ccs_err_t *err)
{
    *ok = false;
    stragglar_srch_reset(s, p);
    for (uint32_t r = 0;; r++) {
        srch_next_t next;
        ccs_status_t st = stragglar_srch_round(s, p, r, bounded, &next, err);
        if (st != CCS_OK)
            return st;
        if (next == SRCH_STOP)
            return CCS_OK;
        if (next == SRCH_DONE)
            break;
    }
    *ok = !bounded || p->nrounds <= s->T;
    return CCS_OK;
}

/* Rename ranks (and their chunks) so that round r's straggler partner is
 * rank r: src (canonical run labels) -> dst. */
static ccs_status_t srch_rename(const srch_t *s, const stragglar_plan_t *src,
                                stragglar_plan_t *dst, ccs_err_t *err)
{
    uint32_t n = s->n, sigma = n - 1;

    dst->nrounds = 0;
    for (uint32_t r = 0; r < src->nrounds; r++) {
        uint32_t rr;
        ccs_status_t st = stragglar_plan_add_round(dst, &rr, err);
        if (st != CCS_OK)
            return st;
        for (uint32_t g = 0; g < n; g++) {
            int32_t q = src->peer[(size_t)r * n + g];
            int32_t c = src->send[(size_t)r * n + g];
            uint32_t pg = g == sigma ? sigma : (uint32_t)s->xround[g];
            dst->peer[(size_t)r * n + pg] =
                q < 0 ? -1
                      : ((uint32_t)q == sigma ? (int32_t)sigma
                                              : s->xround[q]);
            dst->send[(size_t)r * n + pg] = c < 0 ? -1 : s->xround[c];
        }
    }
    return CCS_OK;
}

/* Runs per target (the first is noise-free).  A run costs about n^3
 * (rounds times pairs); the budget keeps n = 254 near a second on one
 * core and small n cheap.  A fixed count, not a clock: the same n always
 * gives the same plan. */
static uint32_t srch_runs(uint32_t n)
{
    uint64_t budget = UINT64_C(40000000) / ((uint64_t)n * n * n + 1);
    if (budget < 2)
        budget = 2;
    if (budget > 12)
        budget = 12;
    return (uint32_t)budget;
}

/* The variants reached LB + 1 only up to n = 225 in the sweep of n =
 * 3..256; above, the beam does it, and the two runs cost about 0.3 s.
 * Above SRCH_BEAM_MAX_N (no beam) odd n get the first variant only: x2
 * at LB + 1 reaches it for 387, 675, 739, 771 and 835 of the odd n
 * sampled in 259..1023 (step 32), where the two runs at LB + 1 die in
 * rounds 12..60; where it fails it dies as early (rounds 17..54), and
 * where it succeeds its run replaces the LB + 2 run, so it costs about
 * nothing.  The second variant never finished within LB + 1 there (451,
 * 483, 803, 867, 899: LB + 2, a full run more), and other scales at
 * LB + 1 (x1/4, x1/2, x1.5, x3, x4, x8) died in the same rounds on 451,
 * 483, 499, 511 and 803. */
#define SRCH_VARIANTS_MAX_N 225u

/* Second chance at LB + 1 for odd n where the runs above failed (just
 * below a power of 2: one rank idles every round while the straggler is
 * busy, so at LB + 1 almost any further round without a receive is
 * fatal).  Scaling the receiver bonus changes which rank idles and which
 * pairs go one way.  Noise-free runs; one aims at T itself, one at T + 1
 * (its slacks are looser, and the plan counts only if it still finishes
 * within T).  From the sweep of n = 3..256: x2 at T gives 101, 181, 225;
 * x1/2 at T + 1 gives 203, 209, 221, 223; nothing else tried (x1/4..x4,
 * either target) gave more.  Runs the first nvar variants, in this
 * order. */
static ccs_status_t srch_variants(srch_t *s, stragglar_plan_t *tmp,
                                  uint32_t T, size_t nvar, bool *ok,
                                  ccs_err_t *err)
{
    static const struct { int64_t rpct; uint32_t slack; } var[] = {
        { 200, 0 }, { 50, 1 },
    };
    uint32_t T0 = s->T;
    ccs_status_t st = CCS_OK;

    if (nvar > sizeof(var) / sizeof(var[0]))
        nvar = sizeof(var) / sizeof(var[0]);
    for (size_t i = 0; i < nvar && !*ok; i++) {
        s->T = T + var[i].slack;
        s->rng = 0;
        s->noise = 0;
        s->wrel = 4 * SRCH_WR;
        s->rpct = var[i].rpct;
        s->salt = 0;
        st = stragglar_srch_run(s, tmp, true, ok, err);
        if (st != CCS_OK)
            break;
        *ok = *ok && tmp->nrounds <= T;
    }
    s->rpct = 100;
    s->T = T0;
    return st;
}

/* Odd n whose runs missed target T (or skipped it, first_target): first
 * Algorithm 1's structure with holes where it applies and hole is set
 * (false when the caller has tried it already) (stragglar_hole.c:
 * every odd n it takes in 257..1023 reaches LB + 1 that way, the 43 just
 * below 512 and 1024 that were at LB + 2 among them, and every odd n in
 * 201..255, where the beam took 1.2-2 s, in under 0.3 s; docs/stragglar.md,
 * "the hole"), then the variants (both up to SRCH_VARIANTS_MAX_N, the
 * first above SRCH_BEAM_MAX_N), then the beam (n <= SRCH_BEAM_MAX_N), all
 * aiming at T.
 * Above SRCH_BEAM_MAX_N, after the variant, a single dive (beam_dive's
 * backtracking completion of the noise-free ramp, no beam): the runs
 * there die in the transition after the ramp (rounds 12..60), and the
 * dive's replays, each a few rounds long while it is stuck there, get
 * through it where a fresh seeded run does not (451, 483, 803, 867, 899,
 * 931 reach LB + 1 that way; 499, 511 and 963 do not, and then cost a
 * full run or two more before the LB + 2 run; docs/stragglar.md,
 * "Odd n above 256: the single dive").  The full beam there costs about
 * W times as much (docs/stragglar.md, "The beam above 256").
 * Above SRCH_STEER_ABOVE_N the beam is steered first (stragglar_srch_round's
 * last-ramp-round bonus): measured on the beam's odd n (59, 63, 111..127,
 * 213, 217, 227..255), it reaches LB + 1 for 235 and 239, which the plain
 * beam does not, keeps the others that reach it, but loses 237,
 * where the steered states all die inside the window (round 18, a cheap
 * failure); so the plain beam follows only such a failure (measured
 * before the dives; with them every odd n above 233 reaches LB + 1, 237
 * included).  At or below SRCH_STEER_ABOVE_N the plain beam alone
 * (steering lost time there: n = 233 1.48 -> 1.89 s). */
static ccs_status_t srch_second_chance(srch_t *s, stragglar_plan_t *tmp,
                                       uint32_t T, bool hole, bool *ok,
                                       ccs_err_t *err)
{
    static const beam_cfg_t plain = { SRCH_BEAM_W, SRCH_BEAM_B,
                                      SRCH_BEAM_ROUNDS, 0 };
    static const beam_cfg_t steered = { SRCH_STEER_W, SRCH_BEAM_B,
                                        SRCH_BEAM_ROUNDS, SRCH_STEER };
    /* One noise-free state through the ramp, no branching: only the
     * dive (its backtracking) after it. */
    static const beam_cfg_t dive = { 1, 1, 0, 0 };
    uint32_t T0 = s->T;
    bool died = true;
    ccs_status_t st = CCS_OK;

    if (hole && stragglar_hole_fits(s->n))
        st = stragglar_srch_hole(s, tmp, T, ok, err);
    if (st == CCS_OK && !*ok && s->n <= SRCH_VARIANTS_MAX_N)
        st = srch_variants(s, tmp, T, 2, ok, err);
    else if (st == CCS_OK && !*ok && s->n > SRCH_BEAM_MAX_N)
        st = srch_variants(s, tmp, T, 1, ok, err);
    if (st == CCS_OK && !*ok && s->n > SRCH_BEAM_MAX_N) {
        s->T = T;
        st = stragglar_srch_beam(s, tmp, &dive, ok, &died, err);
        s->T = T0;
    }

    if (st == CCS_OK && !*ok && s->n <= SRCH_BEAM_MAX_N) {
        s->T = T;
        if (s->n > SRCH_STEER_ABOVE_N)
            st = stragglar_srch_beam(s, tmp, &steered, ok, &died, err);
        if (st == CCS_OK && !*ok && died)
            st = stragglar_srch_beam(s, tmp, &plain, ok, &died, err);
        s->T = T0;
    }
    return st;
}

/* Runs whose rounds after the ramp are planned by the class b-matching
 * (stragglar_bmatch.c), aiming at T: a noise-free one, then seeded ones
 * (the search tries one at LB, where a failing run stops early on its
 * slack, then SRCH_CLASS_RUNS at LB + 1).
 * A run costs a fraction of a blossom run (n = 1000: about 0.5 s against
 * 10-20 s CPU) but reaches LB + 1 less often: in the samples of
 * docs/stragglar.md for even n only, so odd n do not try them. */
#define SRCH_CLASS_RUNS 2u

static ccs_status_t srch_class_runs(srch_t *s, stragglar_plan_t *tmp,
                                    uint32_t T, uint32_t runs, bool *ok,
                                    ccs_err_t *err)
{
    uint32_t T0 = s->T;
    ccs_status_t st = CCS_OK;

    s->classes = true;
    s->T = T;
    for (uint32_t i = 0; i < runs && !*ok && st == CCS_OK; i++) {
        s->rng = i == 0 ? 0
                        : (UINT64_C(0xC2B2AE3D27D4EB4F) ^
                           ((uint64_t)s->n << 32) ^ ((uint64_t)T << 16) ^ i);
        s->noise = (int64_t)(SRCH_WR / 2);
        s->wrel = 4 * SRCH_WR;
        s->salt = (uint32_t)(s->rng >> 17);
        st = stragglar_srch_run(s, tmp, true, ok, err);
    }
    s->classes = false;
    s->T = T0;
    return st;
}

ccs_status_t stragglar_plan_search(uint32_t n, stragglar_plan_t *p,
                                   ccs_err_t *err)
{
    srch_t s;
    stragglar_plan_t *tmp = NULL;
    uint32_t m = n - 1, lb = stragglar_lower_bound(n);
    uint32_t lg = stragglar_ceil_log2(n);
    ccs_status_t st;
    bool ok = false, hole = true;

    st = stragglar_srch_init(&s, n, err);
    if (st != CCS_OK)
        return st;
    tmp = calloc(1, sizeof(*tmp)); /* owned here: the run's scratch plan */
    if (tmp == NULL) {
        st = ccs_err_set(err, CCS_ERR_NOMEM, "stragglar: out of memory");
        goto cleanup;
    }
    tmp->n = n;
    {
        /* Capacity minus demand at LB rounds (docs/stragglar.md): below
         * zero, LB is out of reach and the search starts at LB + 1. */
        int64_t e = (int64_t)(1u << lg) - (int64_t)n;
        if (n % 2 == 1)
            e -= (int64_t)m - (int64_t)lg;
        s.T = e < 0 ? lb + 1 : lb;
        /* The first target worth a run, from the sweep of n = 3..255
         * (scripts/bench-stragglar.sh): no run below it succeeded for any
         * n of that parity in its range (plans may still finish below
         * their target).  A run's seed depends only on (n, T, i), so
         * skipping those runs changes no plan; it keeps every n <= 256
         * well under 2 s.  Odd n above 256 have a larger waste budget
         * at LB + 1 (2^K - n + K, K = ceil(log2 n): 118 at n = 403)
         * and their runs at LB + 1 do succeed there (403, 691, 787: the
         * first run), so the skip stops at 256; a run that fails there
         * dies within a few dozen rounds (docs/stragglar.md). */
        static const struct { uint32_t above_n, upto_n, parity, extra; }
            first_target[] = {
                { 224, 256, 1, 2 }, { 192, UINT32_MAX, 0, 1 },
            };
        for (size_t i = 0; i < sizeof(first_target) / sizeof(first_target[0]);
             i++) {
            if (n > first_target[i].above_n && n <= first_target[i].upto_n &&
                n % 2 == first_target[i].parity) {
                if (s.T < lb + first_target[i].extra)
                    s.T = lb + first_target[i].extra;
                break;
            }
        }
    }
    /* Even n above SRCH_CLASS_N: first the cheap class runs at LB + 1;
     * the blossom's search below only when they fail.  Their plan is
     * checked here, and any failure of theirs other than running out of
     * memory (an error, a plan the checker rejects) sends the search on
     * to the blossom's runs instead of failing the synthesis. */
    if (n > SRCH_CLASS_N && n % 2 == 0) {
        st = srch_class_runs(&s, tmp, lb, 1, &ok, err);
        if (st == CCS_OK && !ok)
            st = srch_class_runs(&s, tmp, lb + 1, SRCH_CLASS_RUNS, &ok, err);
        if (st == CCS_OK && ok) {
            st = srch_rename(&s, tmp, p, err);
            if (st == CCS_OK)
                st = stragglar_plan_check(p, err);
            if (st == CCS_OK)
                goto cleanup; /* p holds the plan */
        }
        if (st == CCS_ERR_NOMEM)
            goto cleanup;
        st = CCS_OK;
        ok = false;
        p->nrounds = 0;
    }
    /* Odd n above SRCH_BEAM_MAX_N that the hole structure takes and
     * whose LB is out of reach: the structure first, before any run.  It
     * reaches LB + 1 for every such n in 257..1023 in at most 2.9 s CPU
     * (the whole synth), where a first run at LB + 1 that succeeds costs
     * a full blossom run (787: 6.7 s) and one that fails costs runs
     * before the structure is tried (791); docs/stragglar.md, "The
     * structure first above 256".  The condition on s.T keeps n whose
     * search aims at LB out (none of them fits today).  Where it fails
     * the search goes on as before, without trying it again. */
    if (n > SRCH_BEAM_MAX_N && n % 2 == 1 && s.T == lb + 1 &&
        stragglar_hole_fits(n)) {
        st = stragglar_srch_hole(&s, tmp, lb + 1, &ok, err);
        if (st != CCS_OK)
            goto cleanup;
        hole = false;
    }
    /* Targets from LB + 2 on (first_target): the second chance (variants,
     * beam) still tries LB + 1 first. */
    if (!ok && s.T > lb + 1 && n % 2 == 1) {
        st = srch_second_chance(&s, tmp, lb + 1, hole, &ok, err);
        if (st != CCS_OK)
            goto cleanup;
    }
    for (; !ok; s.T++) {
        /* LB itself rarely works beyond small n: a quarter of the runs. */
        uint32_t runs = s.T == lb ? (srch_runs(n) + 3) / 4
                                  : (s.T == lb + 1 ? srch_runs(n) : 1);
        /* Past LB + 1: one run per T; from LB + 8 on, unbounded (it
         * finishes, however long). */
        bool bounded = s.T < lb + 8;
        for (uint32_t i = 0; i < runs && !ok; i++) {
            s.rng = i == 0 ? 0
                           : (UINT64_C(0x9E3779B97F4A7C15) ^
                              ((uint64_t)n << 32) ^ ((uint64_t)s.T << 16) ^
                              i);
            s.noise = (int64_t)(SRCH_WR / 2);
            s.wrel = 4 * SRCH_WR;
            s.salt = (uint32_t)(s.rng >> 17);
            st = stragglar_srch_run(&s, tmp, bounded, &ok, err);
            if (st != CCS_OK)
                goto cleanup;
        }
        if (!ok && s.T == lb + 1 && n % 2 == 1) {
            st = srch_second_chance(&s, tmp, lb + 1, hole, &ok, err);
            if (st != CCS_OK)
                goto cleanup;
        }
    }
    st = srch_rename(&s, tmp, p, err);
cleanup:
    stragglar_plan_destroy(tmp);
    stragglar_srch_free(&s);
    return st;
}
