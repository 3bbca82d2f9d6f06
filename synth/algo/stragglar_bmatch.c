/*
 * stragglar_bmatch.c - a cheap round planner for large n: pairs chosen as
 * a b-matching between classes of equal ranks (stragglar_class.c) instead
 * of one blossom over the ranks.
 *
 * Members of a class are interchangeable, so a round is a count of pairs
 * for each two classes.  Greedy first (heaviest class pair first, spread
 * over several sweeps so that equal weights are shared among many class
 * pairs), then the straggler's partner
 * (among the ranks that have not met it: the largest receiver bonus less
 * the weight of the pair it breaks, what the blossom's SRCH_BIG edge
 * decides), then local improvement of the total weight: alternating paths
 * of up to CLS_DEPTH broken pairs from a class with a free member
 * (best gain per class and depth, Bellman-Ford style), and exchanges of
 * partners between two pairs.  A round costs O(n + C^2 log C) plus the
 * improvement, against O(n E) for the blossom.  Not a maximum-weight
 * matching: on n = 300 its weight stays within a few receives of the
 * blossom's in most rounds, not all, and odd n do not get through the
 * transition after the ramp with it, so the search (stragglar_search.c)
 * uses it only as a first, cheap attempt for even n above SRCH_CLASS_N
 * and keeps the blossom's search behind it (docs/stragglar.md).
 * Deterministic: ties are broken by a hash of the pair, the round and
 * the run's salt.
 */
#include <stdlib.h>
#include <string.h>

#include "stragglar_int.h"

static uint32_t mix32(uint32_t x)
{
    x ^= x >> 16;
    x *= 0x7feb352dU;
    x ^= x >> 15;
    x *= 0x846ca68bU;
    x ^= x >> 16;
    return x;
}

/* The greedy's order: heavier first, then the hash, then the classes.
 * A total order ((i, j) is unique), so any correct sort gives the same
 * sequence. */
static inline bool cand_before(const struct cls_cand *x,
                               const struct cls_cand *y)
{
    if (x->w != y->w)
        return x->w > y->w;
    if (x->key != y->key)
        return x->key < y->key;
    if (x->i != y->i)
        return x->i < y->i;
    return x->j < y->j;
}

/* Sort a[0..len) by cand_before, tmp[len] scratch: insertion sort of runs
 * of 16, then bottom-up merges.  The comparator is inlined: qsort's call
 * per comparison was about a sixth of the class runs' time (n = 718:
 * thousands of class pairs sorted every round). */
static void cand_sort(struct cls_cand *a, struct cls_cand *tmp, uint32_t len)
{
    const uint32_t run = 16;
    struct cls_cand *src = a, *dst = tmp;

    for (uint32_t lo = 0; lo < len; lo += run) {
        uint32_t hi = lo + run < len ? lo + run : len;
        for (uint32_t i = lo + 1; i < hi; i++) {
            struct cls_cand x = a[i];
            uint32_t j = i;
            for (; j > lo && cand_before(&x, &a[j - 1]); j--)
                a[j] = a[j - 1];
            a[j] = x;
        }
    }
    for (uint32_t width = run; width < len; width *= 2) {
        for (uint32_t lo = 0; lo < len; lo += 2 * width) {
            uint32_t mid = lo + width < len ? lo + width : len;
            uint32_t hi = lo + 2 * width < len ? lo + 2 * width : len;
            uint32_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi)
                dst[k++] = cand_before(&src[j], &src[i]) ? src[j++]
                                                         : src[i++];
            while (i < mid)
                dst[k++] = src[i++];
            while (j < hi)
                dst[k++] = src[j++];
        }
        struct cls_cand *t = src;
        src = dst;
        dst = t;
    }
    if (src != a)
        memcpy(a, src, (size_t)len * sizeof(*a));
}

static int64_t cw(const srch_t *s, uint32_t i, uint32_t j)
{
    return s->w[(size_t)i * s->cls.C + j];
}

/* Add t pairs between classes i and j (t < 0 removes). */
static void cls_pair(srch_cls_t *c, uint32_t i, uint32_t j, int32_t t)
{
    size_t id = i < j ? (size_t)i * c->C + j : (size_t)j * c->C + i;

    if (c->cnt[id] == 0 && t > 0)
        c->pl[c->npl++] = (uint32_t)id;
    c->cnt[id] += t;
    c->rem[i] -= t;
    c->rem[j] -= t;
}

/* Drop the pair ids whose count fell to 0. */
static void cls_compact(srch_cls_t *c)
{
    uint32_t k = 0;

    for (uint32_t q = 0; q < c->npl; q++) {
        if (c->cnt[c->pl[q]] > 0)
            c->pl[k++] = c->pl[q];
    }
    c->npl = k;
}

static int32_t min32(int32_t a, int32_t b)
{
    return a < b ? a : b;
}

/* Partners of each class in the pairs made so far (CSR in adjs, adj). */
static void cls_adjacency(srch_cls_t *c)
{
    uint32_t C = c->C;

    cls_compact(c);
    for (uint32_t i = 0; i <= C; i++)
        c->adjs[i] = 0;
    for (uint32_t q = 0; q < c->npl; q++) {
        c->adjs[c->pl[q] / C + 1]++;
        c->adjs[c->pl[q] % C + 1]++;
    }
    for (uint32_t i = 0; i < C; i++)
        c->adjs[i + 1] += c->adjs[i];
    for (uint32_t q = 0; q < c->npl; q++) {
        uint32_t i = c->pl[q] / C, j = c->pl[q] % C;
        c->adj[c->adjs[i]++] = j;
        c->adj[c->adjs[j]++] = i;
    }
    for (uint32_t i = C; i > 0; i--) /* back to the starts */
        c->adjs[i] = c->adjs[i - 1];
    c->adjs[0] = 0;
}

/* Apply (dir 1) or undo (dir -1) the path ending at class x after d
 * broken pairs (and at free class bi, UINT32_MAX none).  Applying
 * returns false, undone, when a count would go negative. */
static bool cls_path_apply(srch_cls_t *c, uint32_t d, uint32_t x,
                           uint32_t bi, int32_t dir)
{
    uint32_t C = c->C, d0 = d, x0 = x;
    bool ok = true;

    if (bi != UINT32_MAX)
        cls_pair(c, x, bi, dir);
    while (d > 0) {
        size_t at = (size_t)d * C + x;
        uint32_t i = c->pi[at], prev = c->pc[at];
        cls_pair(c, i, x, -dir);
        cls_pair(c, prev, i, dir);
        x = prev;
        d--;
    }
    if (dir < 0)
        return true;
    for (uint32_t q = 0; q < c->npl && ok; q++)
        ok = c->cnt[c->pl[q]] >= 0;
    for (uint32_t a = 0; a < C && ok; a++)
        ok = c->rem[a] >= 0;
    if (!ok)
        cls_path_apply(c, d0, x0, bi, -1);
    return ok;
}

/* One improving alternating path, applied once; false when there is none
 * of at most CLS_DEPTH pairs broken.  A path starts at a class with a free
 * member a, pairs it with a class i (i's member leaves its partner j, of
 * a pair (i, j) made so far), then pairs j with a next class, and so on;
 * it ends at a class with a free member (augmenting: one pair more) or
 * after a broken pair (its last class gets the free member).  The best
 * gain per (class, pairs broken) is kept, Bellman-Ford style; a path that
 * would need a pair or a free member more often than there are is not
 * applied (it is undone). */
static bool cls_improve_paths(srch_t *s, uint32_t depth)
{
    srch_cls_t *c = &s->cls;
    uint32_t C = c->C, bd = 0, bc = 0, bi = UINT32_MAX;
    int64_t best = 0, *ev = c->ev;
    bool any = false;

    for (uint32_t a = 0; a < C && !any; a++)
        any = c->rem[a] > 0;
    if (!any)
        return false;
    cls_adjacency(c);
    for (size_t k = 0; k < (size_t)(CLS_DEPTH + 1) * C; k++)
        ev[k] = INT64_MIN;
    for (uint32_t a = 0; a < C; a++) {
        if (c->rem[a] > 0) {
            ev[a] = 0;
            c->org[a] = a;
        }
    }
    for (uint32_t d = 0; d <= depth; d++) {
        /* Best arrival at each class i over a new pair (x, i). */
        for (uint32_t i = 0; i < C; i++) {
            c->odd[i] = INT64_MIN;
            c->oddx[i] = UINT32_MAX;
        }
        for (uint32_t x = 0; x < C; x++) {
            int64_t e = ev[(size_t)d * C + x];
            if (e == INT64_MIN)
                continue;
            if (d > 0 && e > best) {
                best = e;
                bd = d, bc = x, bi = UINT32_MAX;
            }
            if (d == depth)
                continue; /* the last level: the columns below */
            {   /* Locals: the stores below could otherwise alias C
                 * and the arrays' pointers, reloaded every step (this
                 * loop was about a seventh of n = 718's time). */
                const int64_t *wrow = &s->w[(size_t)x * C];
                int64_t *odd = c->odd;
                uint32_t *oddx = c->oddx, *oddo = c->oddo;
                uint32_t o = c->org[(size_t)d * C + x];
                for (uint32_t i = 0; i < C; i++) {
                    int64_t wxi = wrow[i];
                    if (wxi > 0 && e + wxi > odd[i]) {
                        odd[i] = e + wxi;
                        oddx[i] = x;
                        oddo[i] = o;
                    }
                }
            }
        }
        if (d == depth) {
            /* At the last level a path can only end at a class with a
             * free member (rem > 0: about one class in 80 at n = 718),
             * so only their arrivals are computed: each one's column,
             * x in the same increasing order as the rows above (the
             * rows over every class were about half of this function's
             * time). */
            for (uint32_t i = 0; i < C; i++) {
                if (c->rem[i] <= 0)
                    continue;
                for (uint32_t x = 0; x < C; x++) {
                    int64_t e = ev[(size_t)d * C + x];
                    int64_t wxi = s->w[(size_t)x * C + i];
                    if (e != INT64_MIN && wxi > 0 && e + wxi > c->odd[i]) {
                        c->odd[i] = e + wxi;
                        c->oddx[i] = x;
                        c->oddo[i] = c->org[(size_t)d * C + x];
                    }
                }
            }
        }
        for (uint32_t i = 0; i < C; i++) {
            int64_t val = c->odd[i];
            if (val == INT64_MIN)
                continue;
            /* The free member at the end must not be the one the path
             * started from. */
            if (c->rem[i] > (c->oddo[i] == i ? 1 : 0) && val > best) {
                best = val;
                bd = d, bc = c->oddx[i], bi = i;
            }
            if (d == depth)
                continue;
            for (uint32_t k = c->adjs[i]; k < c->adjs[i + 1]; k++) {
                uint32_t j = c->adj[k];
                int64_t v2 = val - cw(s, i, j);
                size_t at = (size_t)(d + 1) * C + j;
                if (v2 > ev[at]) {
                    ev[at] = v2;
                    c->pc[at] = c->oddx[i];
                    c->pi[at] = i;
                    c->org[at] = c->oddo[i];
                }
            }
        }
    }
    if (best <= 0)
        return false;
    /* Apply as many copies as the counts allow (a path may use a pair or
     * a free member more than once): after each copy check the counts, and
     * undo the copy that broke them. */
    for (uint32_t copies = 0;; copies++) {
        if (!cls_path_apply(c, bd, bc, bi, 1))
            return copies > 0;
    }
}

/* One pass exchanging partners between two pairs where that is heavier:
 * (i, j), (k, l) -> (i, k), (j, l) or (i, l), (j, k).  True when some
 * exchange was made. */
static bool cls_improve_swap(srch_t *s)
{
    srch_cls_t *c = &s->cls;
    uint32_t C = c->C;
    bool any = false;

    cls_compact(c);
    for (uint32_t q = 0; q < c->npl; q++) {
        for (uint32_t q2 = q + 1; q2 < c->npl; q2++) {
            uint32_t i = c->pl[q] / C, j = c->pl[q] % C;
            uint32_t k = c->pl[q2] / C, l = c->pl[q2] % C;
            int32_t t = min32(c->cnt[c->pl[q]], c->cnt[c->pl[q2]]);
            int64_t now = cw(s, i, j) + cw(s, k, l);
            int64_t g1 = cw(s, i, k) + cw(s, j, l) - now;
            int64_t g2 = cw(s, i, l) + cw(s, j, k) - now;
            if (t <= 0 || (g1 <= 0 && g2 <= 0))
                continue;
            cls_pair(c, i, j, -t);
            cls_pair(c, k, l, -t);
            if (g1 >= g2) {
                cls_pair(c, i, k, t);
                cls_pair(c, j, l, t);
            } else {
                cls_pair(c, i, l, t);
                cls_pair(c, j, k, t);
            }
            any = true;
        }
    }
    return any;
}

/* The straggler's partner class (r < m): the largest receiver bonus (and
 * tie-break) less the weight of the pair its member leaves, among the
 * classes that have not met the straggler.  Takes that member out. */
static uint32_t cls_straggler(srch_t *s, uint32_t r)
{
    srch_cls_t *c = &s->cls;
    uint32_t C = c->C, best = UINT32_MAX, bpart = UINT32_MAX;
    int64_t bval = INT64_MIN;

    for (uint32_t i = 0; i < C; i++) {
        uint32_t u = c->rep[i], part = UINT32_MAX;
        int64_t loss = 0, val;
        if (s->xround[u] >= 0)
            continue;
        if (c->rem[i] <= 0) {
            loss = INT64_MAX;
            for (uint32_t q = 0; q < c->npl; q++) {
                uint32_t a = c->pl[q] / C, b = c->pl[q] % C;
                if (c->cnt[c->pl[q]] <= 0 || (a != i && b != i))
                    continue;
                if (cw(s, a, b) < loss) {
                    loss = cw(s, a, b);
                    part = a == i ? b : a;
                }
            }
        }
        val = s->rprio[u] - loss;
        if (s->rng != 0)
            val += (int64_t)(mix32(i * 131u + r + s->salt) % (SRCH_WR / 2));
        if (val > bval) {
            bval = val;
            best = i;
            bpart = part;
        }
    }
    if (best == UINT32_MAX) /* everyone has met it: not for r < m */
        return best;
    if (bpart != UINT32_MAX)
        cls_pair(c, best, bpart, -1);
    c->rem[best]--;
    return best;
}

ccs_status_t stragglar_srch_match_classes(srch_t *s, uint32_t r,
                                          ccs_err_t *err)
{
    srch_cls_t *c = &s->cls;
    uint32_t n = s->n, m = s->m, sigma = n - 1, C, ncand;
    uint32_t sc = UINT32_MAX;

    (void)err;
    stragglar_cls_weigh(s, r);
    C = c->C;
    ncand = 0;
    for (uint32_t i = 0; i < C; i++) {
        for (uint32_t j = i + 1; j < C; j++) {
            int64_t wt = s->w[(size_t)i * C + j];
            if (wt > 0)
                c->cand[ncand++] = (struct cls_cand){
                    wt, mix32(c->rep[i] * 40503u + c->rep[j] * 977u +
                              s->salt + r * 97u),
                    i, j };
        }
    }
    cand_sort(c->cand, c->cand2, ncand);
    for (uint32_t i = 0; i < C; i++)
        c->rem[i] = (int32_t)c->size[i];
    c->npl = 0;
    /* Greedy, spread: in each sweep down the sorted class pairs a pair
     * of classes takes at most 1/CLS_SPREAD of the smaller class, so that
     * equal weights are shared among many class pairs (the last sweep
     * takes what is left).  Pairing whole classes with each other (one
     * sweep, no cap) makes their members' holdings alike afterwards, and
     * members of one class cannot exchange anything: 6 of 13 even n
     * sampled in 300..1000 then died at LB + 1, with the spread all of
     * those retried reached it (docs/stragglar.md). */
    for (uint32_t sweep = 0; sweep < CLS_SWEEPS; sweep++) {
        bool any = false;
        for (uint32_t q = 0; q < ncand; q++) {
            uint32_t i = c->cand[q].i, j = c->cand[q].j;
            int32_t t = min32(c->rem[i], c->rem[j]);
            int32_t cap = ((int32_t)(c->size[i] < c->size[j] ? c->size[i]
                                                               : c->size[j]) +
                           (int32_t)CLS_SPREAD - 1) /
                          (int32_t)CLS_SPREAD;
            if (sweep + 1 < CLS_SWEEPS && t > cap)
                t = cap;
            if (t > 0) {
                cls_pair(c, i, j, t);
                any = true;
            }
        }
        if (!any)
            break;
    }
    if (r < m)
        sc = cls_straggler(s, r);
    for (int pass = 0; pass < 4; pass++) {
        uint32_t moves = 0;
        for (uint32_t depth = CLS_DEPTH; depth > 0 && moves < 4 * C;) {
            if (cls_improve_paths(s, depth))
                moves++;
            else
                depth--;
        }
        if (!cls_improve_swap(s))
            break;
    }

    /* Ranks: any members will do, a class's members are alike. */
    for (uint32_t g = 0; g < n; g++) {
        s->mate[g] = -1;
        s->sendc[g] = -1;
    }
    for (uint32_t i = 0; i < C; i++)
        c->rem[i] = (int32_t)c->start[i]; /* take cursor */
    if (sc != UINT32_MAX) {
        uint32_t u = c->mem[c->rem[sc]++];
        s->mate[u] = (int32_t)sigma;
        s->mate[sigma] = (int32_t)u;
    }
    cls_compact(c);
    for (uint32_t q = 0; q < c->npl; q++) {
        uint32_t i = c->pl[q] / C, j = c->pl[q] % C;
        for (int32_t t = 0; t < c->cnt[c->pl[q]]; t++) {
            uint32_t u = c->mem[c->rem[i]++], v = c->mem[c->rem[j]++];
            s->mate[u] = (int32_t)v;
            s->mate[v] = (int32_t)u;
            s->sendc[u] = s->ch[(size_t)i * C + j];
            s->sendc[v] = s->ch[(size_t)j * C + i];
        }
        c->cnt[c->pl[q]] = 0;
    }
    c->npl = 0;
    return CCS_OK;
}
