/*
 * algo_stragglar.c - StragglAR: straggler-aware allreduce (Devraj et al.,
 * "StragglAR", section 3 and Algorithm 1; Appendix D for the round count;
 * Appendix E for n that is not a power of 2).
 *
 * Phase 0: a ring reduce-scatter among the n-1 non-stragglers on n-1 chunk
 * blocks (it can run while the straggler is late): (n-2) alpha +
 * (n-2)/(n-1) s beta.  Afterwards non-straggler rank i holds chunk c_i
 * reduced over the non-stragglers (in OUT).
 * Phase 1: R rounds of disjoint pairs, each moving one block of s/(n-1)
 * bytes per direction: R alpha + R/(n-1) s beta, with R = n + log2 n - 2
 * for powers of 2 (Theorem 1); other n are planned by deadline-weighted
 * matchings and reach LB + 1 only for some n (see
 * docs/stragglar.md for the measured table).
 *
 * Canonical labels: the plan is built for straggler sigma = n-1 and
 * non-stragglers 0..n-2 (phase-0 ring order 0, 1, ..., n-2; chunk c_i on
 * rank i).  `--straggler R` is served by swapping ranks R and n-1 when the
 * ops are emitted; stragglar_relabel applies the same rule to a finished
 * schedule (what the runtime does to serve another straggler).
 *
 * Buffers.  In round r the straggler exchange is: rank r sends OUT[c_r]
 * (its partial) and sigma sends IN[c_r] (its contribution).  sigma reduces
 * into OUT[c_r] = IN[c_r] (+) received.  Rank r cannot reduce into OUT[c_r]
 * in the same step it sends from it (the IR forbids reading and writing one
 * chunk in one step), so it reduces into SCRATCH[0] = OUT[c_r] (+) received,
 * sends c_r from SCRATCH[0] from then on, and copies it to OUT[c_r] in the
 * next step.  Every other transfer is a plain copy of a complete chunk into
 * the receiver's OUT.  With --pipeline K every chunk index below stands for
 * K consecutive chunks and every op moves K chunks.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "algo.h"
#include "match.h"
#include "ring.h"
#include "stragglar.h"

#define PLAN_MAX_MATCHING_N 4096u
#define MVARIANT_ALL_N 64u

uint32_t stragglar_lower_bound(uint32_t n)
{
    uint32_t lg = 0;

    while ((1u << lg) < n)
        lg++;
    return n + lg - 2;
}

static bool is_pow2(uint32_t n)
{
    return n != 0 && (n & (n - 1)) == 0;
}

void stragglar_plan_destroy(stragglar_plan_t *p)
{
    if (p == NULL)
        return;
    free(p->peer);
    free(p->send);
    free(p);
}

/* Append an empty round (all -1); returns its index through *r. */
static ccs_status_t plan_add_round(stragglar_plan_t *p, uint32_t *r,
                                   ccs_err_t *err)
{
    size_t n = p->n;

    if (p->nrounds == p->cap) {
        uint32_t ncap = p->cap ? 2 * p->cap : 16;
        int32_t *np = realloc(p->peer, (size_t)ncap * n * sizeof(*np));
        int32_t *ns;
        if (np == NULL)
            return ccs_err_set(err, CCS_ERR_NOMEM, "stragglar: out of memory");
        p->peer = np; /* owned by the plan */
        ns = realloc(p->send, (size_t)ncap * n * sizeof(*ns));
        if (ns == NULL)
            return ccs_err_set(err, CCS_ERR_NOMEM, "stragglar: out of memory");
        p->send = ns;
        p->cap = ncap;
    }
    for (size_t g = 0; g < n; g++) {
        p->peer[(size_t)p->nrounds * n + g] = -1;
        p->send[(size_t)p->nrounds * n + g] = -1;
    }
    *r = p->nrounds++;
    return CCS_OK;
}

/* Pair u and v in round r; each sends the given chunk (-1: nothing). */
static void plan_pair(stragglar_plan_t *p, uint32_t r, int32_t u, int32_t cu,
                      int32_t v, int32_t cv)
{
    size_t base = (size_t)r * p->n;

    p->peer[base + (size_t)u] = v;
    p->peer[base + (size_t)v] = u;
    p->send[base + (size_t)u] = cu;
    p->send[base + (size_t)v] = cv;
}

/* ---- Holdings: which complete chunks each rank has (bitsets). ---- */

typedef struct holdings {
    uint32_t n, m, words;
    uint64_t *bits;      /* owned; [n * words] */
    uint32_t *count;     /* owned; [m] non-straggler holders per chunk */
    uint32_t *nhave;     /* owned; [n] chunks held per rank */
} holdings_t;

static void hold_free(holdings_t *h)
{
    free(h->bits);
    free(h->count);
    free(h->nhave);
}

static ccs_status_t hold_init(holdings_t *h, uint32_t n, ccs_err_t *err)
{
    memset(h, 0, sizeof(*h));
    h->n = n;
    h->m = n - 1;
    h->words = (h->m + 63) / 64;
    /* All three owned by h, freed by hold_free. */
    h->bits = calloc((size_t)n * h->words, sizeof(*h->bits));
    h->count = calloc(h->m, sizeof(*h->count));
    h->nhave = calloc(n, sizeof(*h->nhave));
    if (h->bits == NULL || h->count == NULL || h->nhave == NULL) {
        hold_free(h);
        return ccs_err_set(err, CCS_ERR_NOMEM, "stragglar: out of memory");
    }
    return CCS_OK;
}

static bool hold_has(const holdings_t *h, uint32_t g, uint32_t c)
{
    return (h->bits[(size_t)g * h->words + c / 64] >> (c % 64)) & 1u;
}

static void hold_add(holdings_t *h, uint32_t g, uint32_t c)
{
    h->bits[(size_t)g * h->words + c / 64] |= UINT64_C(1) << (c % 64);
    h->nhave[g]++;
    if (g < h->m)
        h->count[c]++;
}

/* Replay a plan on holdings and check it: pairs symmetric and disjoint,
 * the straggler exchange in rounds < n-1 with chunk = the partner's rank,
 * every other transfer sends a complete chunk the receiver lacks, and at
 * the end every rank holds every chunk.  This is the plan-level twin of
 * the verifier and runs on every plan. */
static ccs_status_t plan_check(const stragglar_plan_t *p, ccs_err_t *err)
{
    holdings_t h;
    uint32_t n = p->n, m = n - 1, sigma = n - 1;
    ccs_status_t st = hold_init(&h, n, err);
    int32_t *got = NULL;

    if (st != CCS_OK)
        return st;
    got = malloc(n * sizeof(*got)); /* owned here */
    if (got == NULL) {
        st = ccs_err_set(err, CCS_ERR_NOMEM, "stragglar: out of memory");
        goto cleanup;
    }
    for (uint32_t r = 0; r < p->nrounds; r++) {
        const int32_t *peer = &p->peer[(size_t)r * n];
        const int32_t *snd = &p->send[(size_t)r * n];
        for (uint32_t g = 0; g < n; g++) {
            int32_t q = peer[g];
            got[g] = -1;
            if (q < 0) {
                if (snd[g] >= 0)
                    goto bad_pair;
                continue;
            }
            if ((uint32_t)q >= n || (uint32_t)q == g || peer[q] != (int32_t)g)
                goto bad_pair;
        }
        for (uint32_t g = 0; g < n; g++) {
            int32_t q = peer[g], c = snd[g];
            bool exch = r < m && (g == sigma || (uint32_t)q == sigma);
            if (q < 0)
                continue;
            if (r < m && (g == sigma || (uint32_t)q == sigma) &&
                !(peer[sigma] == (int32_t)r && snd[sigma] == (int32_t)r &&
                  snd[r] == (int32_t)r))
                return ccs_err_set(err, CCS_ERR_INTERNAL,
                                   "stragglar plan: round %u: straggler "
                                   "exchange must be with rank %u on chunk "
                                   "%u", r, r, r);
            if (exch || c < 0)
                continue;
            if ((uint32_t)c >= m || !hold_has(&h, g, (uint32_t)c) ||
                hold_has(&h, (uint32_t)q, (uint32_t)c)) {
                st = ccs_err_set(err, CCS_ERR_INTERNAL,
                                 "stragglar plan: round %u: rank %u sends "
                                 "chunk %d to rank %d that %s", r, g, c, q,
                                 (uint32_t)c < m && hold_has(&h, g,
                                                             (uint32_t)c)
                                     ? "already has it"
                                     : "it does not hold complete");
                goto cleanup;
            }
            got[q] = c;
        }
        if (r < m) {
            hold_add(&h, r, r);
            hold_add(&h, sigma, r);
        }
        for (uint32_t g = 0; g < n; g++) {
            if (got[g] >= 0)
                hold_add(&h, g, (uint32_t)got[g]);
        }
    }
    for (uint32_t g = 0; g < n; g++) {
        if (h.nhave[g] != m) {
            st = ccs_err_set(err, CCS_ERR_INTERNAL,
                             "stragglar plan: rank %u ends with %u of %u "
                             "chunks", g, h.nhave[g], m);
            goto cleanup;
        }
    }
    goto cleanup;
bad_pair:
    st = ccs_err_set(err, CCS_ERR_INTERNAL,
                     "stragglar plan: round pairs are not symmetric");
cleanup:
    free(got);
    hold_free(&h);
    return st;
}

/* ---- Powers of 2: Algorithm 1. ---- */

/*
 * Every non-straggler holds exactly one "active" chunk (complete, not yet
 * everywhere) from round log n on.  act[g] is it (-1: none yet).  In round
 * r >= log n, P = holders of the oldest active chunk c_{r-log n}, Q = the
 * rest; rank r (in P) meets the straggler, P \ {r} and Q exchange their
 * active chunks, so c_{r-log n} completes and every other active chunk
 * doubles.  Critical window (Appendix D invariant): a P-rank l with
 * r < l <= r + log n must receive only c_j with j <= l - log n, so that
 * its active chunk at round l is c_{l-log n} and it can leave P for the
 * straggler.  Window ranks are matched first, in increasing l, to the
 * Q-rank with the oldest active chunk; the rest pair in rank order.
 */
static ccs_status_t plan_pow2(uint32_t n, stragglar_plan_t *p, ccs_err_t *err)
{
    uint32_t m = n - 1, sigma = n - 1, lg = 0, total;
    int32_t *act = NULL, *pl = NULL, *ql = NULL;
    uint8_t *used = NULL;
    ccs_status_t st = CCS_OK;

    while ((1u << lg) < n)
        lg++;
    total = n + lg - 2;
    /* Owned here. */
    act = malloc(n * sizeof(*act));
    pl = malloc(n * sizeof(*pl));
    ql = malloc(n * sizeof(*ql));
    used = malloc(n);
    if (act == NULL || pl == NULL || ql == NULL || used == NULL) {
        st = ccs_err_set(err, CCS_ERR_NOMEM, "stragglar: out of memory");
        goto cleanup;
    }
    for (uint32_t g = 0; g < n; g++)
        act[g] = -1;
    act[sigma] = -1;

    for (uint32_t r = 0; r < total; r++) {
        uint32_t rr, np = 0, nq = 0;

        st = plan_add_round(p, &rr, err);
        if (st != CCS_OK)
            goto cleanup;
        memset(used, 0, n);
        if (r < m) {
            plan_pair(p, r, (int32_t)r, (int32_t)r, (int32_t)sigma,
                      (int32_t)r);
            used[r] = used[sigma] = 1;
        }
        if (r < lg) {
            /* Ramp-up: rank r-1 -> rank r-1+lg with c_{r-1}; every other
             * holder sends its chunk to the next chunk-less rank above
             * 2(lg-1).  Receivers take the chunk as their active one. */
            uint32_t next = 2 * (lg - 1) + 1;
            int32_t *recv_act = ql; /* scratch: chunk received per rank */
            for (uint32_t g = 0; g < n; g++)
                recv_act[g] = -1;
            if (r > 0) {
                uint32_t to = r - 1 + lg;
                plan_pair(p, r, (int32_t)(r - 1), (int32_t)(r - 1),
                          (int32_t)to, -1);
                used[r - 1] = used[to] = 1;
                recv_act[to] = (int32_t)(r - 1);
            }
            for (uint32_t g = 0; g < m; g++) {
                if (used[g] || act[g] < 0)
                    continue;
                while (next < m && (act[next] >= 0 || used[next]))
                    next++;
                if (next >= m) {
                    st = ccs_err_set(err, CCS_ERR_INTERNAL,
                                     "stragglar: n=%u round %u: no "
                                     "receiver left in the ramp-up", n, r);
                    goto cleanup;
                }
                plan_pair(p, r, (int32_t)g, act[g], (int32_t)next, -1);
                used[g] = used[next] = 1;
                recv_act[next] = act[g];
            }
            for (uint32_t g = 0; g < m; g++) {
                if (recv_act[g] >= 0)
                    act[g] = recv_act[g];
            }
            if (r < m)
                act[r] = (int32_t)r;
            continue;
        }

        /* Steady state.  The straggler joins Q after its last exchange,
         * holding (and only sending) the last chunk. */
        if (r >= m)
            act[sigma] = (int32_t)(m - 1);
        for (uint32_t g = 0; g < n; g++) {
            if (used[g])
                continue;
            if (g != sigma && act[g] == (int32_t)(r - lg))
                pl[np++] = (int32_t)g;
            else
                ql[nq++] = (int32_t)g;
        }
        if (np != nq || (r < m && act[r] != (int32_t)(r - lg))) {
            st = ccs_err_set(err, CCS_ERR_INTERNAL,
                             "stragglar: n=%u round %u: |P|=%u |Q|=%u, "
                             "rank r's active chunk %d (invariant broken)",
                             n, r, np, nq, r < m ? act[r] : -1);
            goto cleanup;
        }
        /* Critical window first. */
        for (uint32_t i = 0; i < np; i++) {
            uint32_t l = (uint32_t)pl[i];
            int32_t best = -1;
            if (l <= r || l > r + lg || l >= m)
                continue;
            for (uint32_t k = 0; k < nq; k++) {
                int32_t q = ql[k];
                if (used[q] || act[q] > (int32_t)l - (int32_t)lg)
                    continue;
                if (best < 0 || act[q] < act[best])
                    best = q;
            }
            if (best < 0) {
                st = ccs_err_set(err, CCS_ERR_INTERNAL,
                                 "stragglar: n=%u round %u: no partner for "
                                 "window rank %u", n, r, l);
                goto cleanup;
            }
            plan_pair(p, r, (int32_t)l, act[l], best, act[best]);
            used[l] = used[best] = 1;
        }
        {
            uint32_t k = 0;
            for (uint32_t i = 0; i < np; i++) {
                int32_t u = pl[i];
                if (used[u])
                    continue;
                while (k < nq && used[ql[k]])
                    k++;
                plan_pair(p, r, u, act[u], ql[k], act[ql[k]]);
                used[u] = used[ql[k]] = 1;
            }
        }
        /* P-ranks take their partner's chunk as the new active one; Q-ranks
         * got the expiring chunk and keep theirs. */
        for (uint32_t i = 0; i < np; i++) {
            int32_t u = pl[i];
            int32_t q = p->peer[(size_t)r * n + (size_t)u];
            act[u] = act[q];
        }
        if (p->send[(size_t)r * n + sigma] >= 0 && r >= m) {
            /* sigma has everything: it receives nothing. */
            int32_t q = p->peer[(size_t)r * n + sigma];
            p->send[(size_t)r * n + (size_t)q] = -1;
        }
        if (r < m)
            act[r] = (int32_t)r;
    }

cleanup:
    free(act);
    free(pl);
    free(ql);
    free(used);
    return st;
}

/* ---- Other n: one maximum-weight matching per round (Appendix E). ---- */

/*
 * Deadline-driven weights.  Chunk c is due (complete on every rank) by
 * round due[c] = min(c + life, T - 1), T the planned round count (LB or
 * LB + 1; life = ceil(log2 n) is Algorithm 1's pipeline depth).  A chunk
 * held by H ranks with k rounds left (this one included) can only finish
 * by doubling, so after this round it needs ceil(target / 2^(k-1))
 * holders; if it has fewer, its sends this round are "urgent".  An edge's
 * weight is the value of the best chunk in each direction: urgent sends
 * weigh more (scaled by the share of the chunk's free holders that must
 * send), any other useful send weighs Appendix E's 1, and a receiver that
 * has no idle round left gets a bonus.  Algorithm 1's critical window
 * carries over: a rank l about to meet the straggler should not receive a
 * chunk still spreading at round l (it could not forward it then).
 */
typedef struct mvariant {
    uint32_t extra;    /* deadlines planned for LB + extra rounds */
    uint32_t dlife;    /* life = ceil(log2 n) + dlife */
    int64_t w_urgent;  /* value of an urgent send (up to twice this) */
    int64_t w_useful;  /* value of any other useful send */
    int64_t w_rank;    /* bonus: receiver has no idle round left */
    int64_t w_window;  /* value of a send into the critical window */
    int64_t rslack;    /* receiver bonus starts this many rounds early */
    int64_t w_lqf;     /* bonus per complete chunk the receiver lacks */
} mvariant_t;

typedef struct mstate {
    uint32_t n, m, words, T;
    holdings_t h;
    uint32_t *order;     /* [m] chunks by value, largest first */
    uint32_t *pos;       /* [m] position of each chunk in order */
    int64_t *val;        /* [m] value of sending the chunk this round */
    uint32_t *due;       /* [m] round by which the chunk should complete */
    uint64_t *pbits;     /* [n * words] holdings permuted by order */
    int64_t *rbonus;     /* [n] receiver bonus this round */
    match_edge_t *edges; /* [n*(n-1)/2] */
    int32_t *mate;       /* [n] */
    int32_t *avail;      /* [n] */
    int32_t *got;        /* [n] */
} mstate_t;

static void mstate_free(mstate_t *s)
{
    hold_free(&s->h);
    free(s->order);
    free(s->pos);
    free(s->val);
    free(s->due);
    free(s->pbits);
    free(s->rbonus);
    free(s->edges);
    free(s->mate);
    free(s->avail);
    free(s->got);
}

static uint32_t ceil_log2(uint64_t x)
{
    uint32_t l = 0;
    while ((UINT64_C(1) << l) < x)
        l++;
    return l;
}

/* Value of sending chunk c in round r (0: nothing to gain). */
static int64_t chunk_value(const mstate_t *s, const mvariant_t *v, uint32_t r,
                           uint32_t c)
{
    uint32_t hns = s->h.count[c], m = s->m;
    bool sfree = r >= m;
    int64_t H = (int64_t)hns + (sfree ? 1 : 0);
    int64_t target = (int64_t)s->n - 1 + (sfree ? 1 : 0);
    int64_t k = (int64_t)s->due[c] - (int64_t)r + 1, need, avail;

    if (c >= r || hns == m)
        return 0; /* not complete yet, or everywhere already */
    if (k <= 0) {
        need = target - H;
    } else {
        int64_t after = k - 1 >= 40 ? 1 : (target + (INT64_C(1) << (k - 1))
                                           - 1) >> (k - 1);
        need = after - H;
    }
    avail = (int64_t)hns + (sfree ? 1 : 0) -
            ((r < m && hold_has(&s->h, r, c)) ? 1 : 0);
    if (need > 0 && avail > 0) {
        if (need > avail)
            need = avail;
        return v->w_urgent + v->w_urgent * need / avail +
               (int64_t)(m - c);
    }
    return v->w_useful + (int64_t)(m - c);
}

/* Best chunk u can send w this round (-1: none) and its value. */
static int32_t best_send(const mstate_t *s, const mvariant_t *v, uint32_t r,
                         uint32_t u, uint32_t w, int64_t *value)
{
    const uint64_t *pu = &s->pbits[(size_t)u * s->words];
    const uint64_t *pw = &s->pbits[(size_t)w * s->words];
    bool win = v->w_window >= 0 && w > r && w < s->m;
    int32_t first = -1;

    *value = 0;
    for (uint32_t k = 0; k < s->words; k++) {
        uint64_t x = pu[k] & ~pw[k];
        while (x) {
            uint32_t i = k * 64 + (uint32_t)__builtin_ctzll(x);
            uint32_t c = s->order[i];
            x &= x - 1;
            if (s->val[c] <= 0)
                return first;
            if (!win || s->due[c] <= w) {
                if (first < 0 || s->val[c] > *value) {
                    *value = s->val[c];
                    first = (int32_t)c;
                }
                return first;
            }
            if (first < 0) {
                /* Into the window: keep as a fallback, look on. */
                first = (int32_t)c;
                *value = v->w_window;
            }
        }
    }
    return first;
}

static ccs_status_t plan_matching(uint32_t n, const mvariant_t *v,
                                  stragglar_plan_t *p, ccs_err_t *err)
{
    mstate_t s;
    uint32_t m = n - 1, sigma = n - 1, maxrounds = 4 * n + 64;
    uint32_t life = ceil_log2(n) + v->dlife;
    ccs_status_t st;

    memset(&s, 0, sizeof(s));
    st = hold_init(&s.h, n, err);
    if (st != CCS_OK)
        return st;
    s.n = n;
    s.m = m;
    s.words = s.h.words;
    s.T = stragglar_lower_bound(n) + v->extra;
    /* All owned by s, freed by mstate_free. */
    s.order = malloc(m * sizeof(*s.order));
    s.pos = malloc(m * sizeof(*s.pos));
    s.val = malloc(m * sizeof(*s.val));
    s.due = malloc(m * sizeof(*s.due));
    s.pbits = calloc((size_t)n * s.words, sizeof(*s.pbits));
    s.rbonus = malloc(n * sizeof(*s.rbonus));
    s.edges = malloc((size_t)n * (n - 1) / 2 * sizeof(*s.edges));
    s.mate = malloc(n * sizeof(*s.mate));
    s.avail = malloc(n * sizeof(*s.avail));
    s.got = malloc(n * sizeof(*s.got));
    if (!s.order || !s.pos || !s.val || !s.due || !s.pbits || !s.rbonus ||
        !s.edges || !s.mate || !s.avail || !s.got) {
        st = ccs_err_set(err, CCS_ERR_NOMEM, "stragglar: out of memory");
        goto cleanup;
    }
    for (uint32_t c = 0; c < m; c++)
        s.due[c] = c + life < s.T - 1 ? c + life : s.T - 1;

    for (uint32_t r = 0;; r++) {
        uint32_t rr, na = 0;
        int32_t ne = 0;
        bool done = true;

        for (uint32_t g = 0; g < n && done; g++)
            done = s.h.nhave[g] == m;
        if (done)
            break;
        if (r >= maxrounds) {
            st = ccs_err_set(err, CCS_ERR_INTERNAL,
                             "stragglar: n=%u: no progress after %u rounds",
                             n, r);
            goto cleanup;
        }
        st = plan_add_round(p, &rr, err);
        if (st != CCS_OK)
            goto cleanup;
        if (r < m)
            plan_pair(p, r, (int32_t)r, (int32_t)r, (int32_t)sigma,
                      (int32_t)r);

        /* Chunk values, order (largest first) and permuted holdings. */
        for (uint32_t c = 0; c < m; c++) {
            s.order[c] = c;
            s.val[c] = chunk_value(&s, v, r, c);
        }
        for (uint32_t i = 1; i < m; i++) { /* insertion sort, stable */
            uint32_t c = s.order[i], j = i;
            while (j > 0 && s.val[s.order[j - 1]] < s.val[c]) {
                s.order[j] = s.order[j - 1];
                j--;
            }
            s.order[j] = c;
        }
        for (uint32_t i = 0; i < m; i++)
            s.pos[s.order[i]] = i;
        memset(s.pbits, 0, (size_t)n * s.words * sizeof(*s.pbits));
        for (uint32_t g = 0; g < n; g++) {
            for (uint32_t c = 0; c < m; c++) {
                if (hold_has(&s.h, g, c)) {
                    uint32_t i = s.pos[c];
                    s.pbits[(size_t)g * s.words + i / 64] |=
                        UINT64_C(1) << (i % 64);
                }
            }
        }
        for (uint32_t g = 0; g < n; g++) {
            uint32_t miss = m - s.h.nhave[g];
            uint32_t left = s.T > r ? s.T - r : 0;
            if (g > r && g < m && left > 0)
                left--; /* its own straggler round */
            s.rbonus[g] = (g != sigma && (int64_t)miss + v->rslack >=
                                          (int64_t)left)
                              ? v->w_rank * ((int64_t)miss + v->rslack + 1 -
                                             (int64_t)left)
                              : 0;
            if (g != sigma)
                s.rbonus[g] += v->w_lqf * (int64_t)((r < m ? r : m) -
                                                    s.h.nhave[g]);
        }

        for (uint32_t g = 0; g < n; g++) {
            if (r < m && (g == r || g == sigma))
                continue;
            s.avail[na++] = (int32_t)g;
        }
        /* Every pair of free ranks with something useful to move. */
        for (uint32_t a = 0; a < na; a++) {
            for (uint32_t b = a + 1; b < na; b++) {
                uint32_t u = (uint32_t)s.avail[a], w = (uint32_t)s.avail[b];
                int64_t vu = 0, vw = 0, wt = 0;
                if (w != sigma && best_send(&s, v, r, u, w, &vu) >= 0)
                    wt += vu + s.rbonus[w];
                if (u != sigma && best_send(&s, v, r, w, u, &vw) >= 0)
                    wt += vw + s.rbonus[u];
                if (wt > 0)
                    s.edges[ne++] = (match_edge_t){ (int32_t)u, (int32_t)w,
                                                    wt };
            }
        }
        st = match_max_weight((int32_t)n, s.edges, ne, false, s.mate, err);
        if (st != CCS_OK)
            goto cleanup;
        for (uint32_t g = 0; g < n; g++)
            s.got[g] = -1;
        for (uint32_t u = 0; u < n; u++) {
            int32_t w = s.mate[u], cu = -1, cw = -1;
            int64_t dummy;
            if (w < 0 || (uint32_t)w < u)
                continue;
            if ((uint32_t)w != sigma)
                cu = best_send(&s, v, r, u, (uint32_t)w, &dummy);
            if (u != sigma)
                cw = best_send(&s, v, r, (uint32_t)w, u, &dummy);
            plan_pair(p, r, (int32_t)u, cu, w, cw);
            if (cu >= 0)
                s.got[w] = cu;
            if (cw >= 0)
                s.got[u] = cw;
        }
        if (r < m) {
            hold_add(&s.h, r, r);
            hold_add(&s.h, sigma, r);
        }
        for (uint32_t g = 0; g < n; g++) {
            if (s.got[g] >= 0)
                hold_add(&s.h, g, (uint32_t)s.got[g]);
        }
    }

cleanup:
    mstate_free(&s);
    return st;
}

/* Variants tried for non-powers of 2; the plan with the fewest rounds wins
 * (ties: the earlier variant). */
static const mvariant_t mvariants[] = {
    { 0, 1, 4000, 1000, 300, 500, 6, 0 },
    { 0, 1, 4000, 1000, 0, 500, 0, 300 },
    { 1, 1, 4000, 1000, 0, 500, 0, 300 },
};

ccs_status_t stragglar_plan(uint32_t n, stragglar_plan_t **out,
                            ccs_err_t *err)
{
    stragglar_plan_t *best = NULL, *p = NULL;
    ccs_status_t st = CCS_OK;
    /* Every variant costs a full plan (O(n^3) per round): above
     * MVARIANT_ALL_N ranks only the first, which is the best single one
     * in our table (docs/stragglar.md). */
    size_t nv = is_pow2(n) || n > MVARIANT_ALL_N
                    ? 1
                    : sizeof(mvariants) / sizeof(mvariants[0]);

    if (n < 2 || n > CCS_MAX_RANKS)
        return ccs_err_set(err, CCS_ERR_INVALID,
                           "stragglar: %u ranks out of range 2..%u", n,
                           CCS_MAX_RANKS);
    if (!is_pow2(n) && n > PLAN_MAX_MATCHING_N)
        return ccs_err_set(err, CCS_ERR_UNSUPPORTED,
                           "stragglar: %u ranks: non-powers of 2 are "
                           "planned by matchings up to %u ranks", n,
                           PLAN_MAX_MATCHING_N);
    for (size_t i = 0; i < nv; i++) {
        p = calloc(1, sizeof(*p)); /* owned here until kept as best */
        if (p == NULL) {
            st = ccs_err_set(err, CCS_ERR_NOMEM, "stragglar: out of memory");
            goto cleanup;
        }
        p->n = n;
        if (is_pow2(n)) {
            st = plan_pow2(n, p, err);
        } else {
            st = plan_matching(n, &mvariants[i], p, err);
        }
        if (st == CCS_OK)
            st = plan_check(p, err);
        if (st != CCS_OK)
            goto cleanup;
        if (best == NULL || p->nrounds < best->nrounds) {
            stragglar_plan_destroy(best);
            best = p;
        } else {
            stragglar_plan_destroy(p);
        }
        p = NULL;
    }
    *out = best;
    best = NULL;
cleanup:
    stragglar_plan_destroy(p);
    stragglar_plan_destroy(best);
    return st;
}

/* ---- Relabeling ---- */

ccs_status_t stragglar_relabel(const ccs_sched_t *s, int32_t straggler,
                               ccs_sched_t **out, ccs_err_t *err)
{
    ccs_sched_t *c = NULL;
    int32_t a, b = straggler;
    ccs_status_t st;

    if (s == NULL || out == NULL)
        return ccs_err_set(err, CCS_ERR_INVALID, "stragglar: NULL argument");
    a = s->straggler;
    if (a < 0 || (uint32_t)a >= s->nranks)
        return ccs_err_set(err, CCS_ERR_INVALID,
                           "stragglar: schedule has no straggler to swap");
    if (b < 0 || (uint32_t)b >= s->nranks)
        return ccs_err_set(err, CCS_ERR_INVALID,
                           "stragglar: straggler %d out of range 0..%u", b,
                           s->nranks - 1);
    st = ccs_sched_clone(s, &c, err);
    if (st != CCS_OK)
        return st;
    if (a != b) {
        ccs_op_t *ops = c->rank_ops[a];
        uint32_t nops = c->rank_nops[a], cap = c->rank_cap[a];
        c->rank_ops[a] = c->rank_ops[b];
        c->rank_nops[a] = c->rank_nops[b];
        c->rank_cap[a] = c->rank_cap[b];
        c->rank_ops[b] = ops;
        c->rank_nops[b] = nops;
        c->rank_cap[b] = cap;
        for (uint32_t r = 0; r < c->nranks; r++) {
            for (uint32_t i = 0; i < c->rank_nops[r]; i++) {
                ccs_op_t *op = &c->rank_ops[r][i];
                if (op->peer == a)
                    op->peer = b;
                else if (op->peer == b)
                    op->peer = a;
            }
        }
    }
    c->straggler = b;
    *out = c;
    return CCS_OK;
}

/* ---- Emitting the schedule ---- */

typedef struct emit {
    ccs_sched_t *s;
    uint32_t n, m, per, sigma_out; /* sigma_out: the written straggler */
} emit_t;

/* Canonical rank -> written rank: swap n-1 and the requested straggler. */
static uint32_t emap(const emit_t *e, uint32_t g)
{
    if (g == e->n - 1)
        return e->sigma_out;
    if (g == e->sigma_out)
        return e->n - 1;
    return g;
}

static ccs_status_t emit_round(const emit_t *e, const stragglar_plan_t *pl,
                               uint32_t r, uint32_t step, ccs_err_t *err)
{
    uint32_t n = e->n, m = e->m, sigma = n - 1, per = e->per;
    const int32_t *peer = &pl->peer[(size_t)r * n];
    const int32_t *snd = &pl->send[(size_t)r * n];
    ccs_status_t st = CCS_OK;

    /* Rank r-1 finished its exchange last round: publish it in OUT. */
    if (n > 2 && r >= 1 && r - 1 < m) {
        st = ccs_sched_local(e->s, step, emap(e, r - 1), CCS_BUF_OUT,
                             (r - 1) * per, CCS_BUF_SCRATCH, 0, per, false,
                             err);
        if (st != CCS_OK)
            return st;
    }
    for (uint32_t g = 0; g < n && st == CCS_OK; g++) {
        int32_t q = peer[g], c = snd[g];
        uint32_t cc;
        ccs_buf_t sbuf;
        uint32_t schunk;

        if (q < 0 || c < 0)
            continue;
        cc = (uint32_t)c * per;
        if (r < m && (g == sigma || (uint32_t)q == sigma)) {
            /* Straggler exchange on chunk r. */
            if (n == 2)
                st = ccs_sched_xfer_reduce_from(e->s, step, emap(e, g),
                                                CCS_BUF_IN, cc,
                                                emap(e, (uint32_t)q),
                                                CCS_BUF_OUT, cc, CCS_BUF_IN,
                                                cc, per, err);
            else if (g == sigma)
                st = ccs_sched_xfer_reduce_from(e->s, step, emap(e, g),
                                                CCS_BUF_IN, cc,
                                                emap(e, (uint32_t)q),
                                                CCS_BUF_SCRATCH, 0,
                                                CCS_BUF_OUT, cc, per, err);
            else
                st = ccs_sched_xfer_reduce_from(e->s, step, emap(e, g),
                                                CCS_BUF_OUT, cc,
                                                emap(e, (uint32_t)q),
                                                CCS_BUF_OUT, cc, CCS_BUF_IN,
                                                cc, per, err);
            continue;
        }
        /* A complete chunk; a rank's own chunk is sent from SCRATCH. */
        sbuf = CCS_BUF_OUT;
        schunk = cc;
        if (g == (uint32_t)c && g != sigma && n > 2) {
            sbuf = CCS_BUF_SCRATCH;
            schunk = 0;
        }
        st = ccs_sched_xfer(e->s, step, emap(e, g), sbuf, schunk,
                            emap(e, (uint32_t)q), CCS_BUF_OUT, cc, per, false,
                            err);
    }
    return st;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static ccs_status_t check_stragglar(const topo_t *t, const algo_params_t *p,
                                    ccs_err_t *err)
{
    uint32_t n = (uint32_t)t->ngpus;

    if (p->sub_algo != NULL && strcmp(p->sub_algo, "ring") != 0)
        return ccs_err_set(err, CCS_ERR_UNSUPPORTED,
                           "stragglar: phase-0 algorithm '%s' not supported "
                           "(only 'ring')", p->sub_algo);
    if (!is_pow2(n) && n > PLAN_MAX_MATCHING_N)
        return ccs_err_set(err, CCS_ERR_UNSUPPORTED,
                           "stragglar: %u ranks: non-powers of 2 are "
                           "planned by matchings up to %u ranks", n,
                           PLAN_MAX_MATCHING_N);
    if (p->nchunks > 0 && p->nchunks != (n - 1) * p->pipeline)
        return ccs_err_set(err, CCS_ERR_UNSUPPORTED,
                           "stragglar: uses n-1 = %u chunks times "
                           "--pipeline; --chunks %u does not fit", n - 1,
                           p->nchunks);
    return CCS_OK;
}

static ccs_status_t build_stragglar(const topo_t *t, const algo_params_t *p,
                                    ccs_sched_t **out, ccs_err_t *err)
{
    uint32_t n = (uint32_t)t->ngpus, m = n - 1;
    uint32_t per = p->pipeline ? p->pipeline : 1, phase0 = 0;
    stragglar_plan_t *pl = NULL;
    uint32_t *ranks = NULL;
    ccs_sched_t *s = NULL;
    emit_t e;
    double t0 = now_ms(), t1;
    ccs_status_t st;

    st = check_stragglar(t, p, err);
    if (st != CCS_OK)
        return st;
    st = stragglar_plan(n, &pl, err);
    if (st != CCS_OK)
        goto cleanup;
    t1 = now_ms();
    st = ccs_sched_create(CCS_COLL_ALLREDUCE, n, m * per, "stragglar", &s,
                          err);
    if (st != CCS_OK)
        goto cleanup;
    e.s = s;
    e.n = n;
    e.m = m;
    e.per = per;
    e.sigma_out = p->straggler >= 0 ? (uint32_t)p->straggler : n - 1;
    s->straggler = (int32_t)e.sigma_out;

    if (m >= 2) {
        ranks = malloc(m * sizeof(*ranks)); /* owned here */
        if (ranks == NULL) {
            st = ccs_err_set(err, CCS_ERR_NOMEM, "stragglar: out of memory");
            goto cleanup;
        }
        for (uint32_t i = 0; i < m; i++)
            ranks[i] = emap(&e, i);
        phase0 = s->nsteps;
        st = ring_reduce_scatter(s, ranks, m, 0, per, 0, err);
        if (st != CCS_OK)
            goto cleanup;
        phase0 = s->nsteps - phase0;
    }
    for (uint32_t r = 0; r < pl->nrounds; r++) {
        uint32_t step;
        st = ccs_sched_add_step(s, 1, &step, err);
        if (st == CCS_OK)
            st = emit_round(&e, pl, r, step, err);
        if (st != CCS_OK)
            goto cleanup;
    }
    if (p->report != NULL) {
        fprintf(p->report,
                "stragglar: n=%u, phase 0: %u steps, phase 1: %u rounds "
                "(LB %u)\n", n, phase0, pl->nrounds,
                stragglar_lower_bound(n));
        fprintf(p->report, "stragglar: planned in %.3f ms\n", t1 - t0);
    }
    *out = s;
    s = NULL;
cleanup:
    free(ranks);
    stragglar_plan_destroy(pl);
    ccs_sched_destroy(s);
    return st;
}

const algo_desc_t algo_stragglar = {
    .name = "stragglar",
    .desc = "straggler-aware allreduce: reduce-scatter, then matching rounds",
    .colls = ALGO_COLL_BIT(CCS_COLL_ALLREDUCE),
    .check = check_stragglar,
    .build = build_stragglar,
};
