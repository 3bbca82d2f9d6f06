/*
 * stragglar_class.c - StragglAR's round planner for large n: pairs chosen
 * over classes of ranks with equal holdings instead of one blossom over
 * the ranks.
 *
 * Why classes: a pair's weight (stragglar_search.c) depends only on the
 * two ranks' holdings of the active chunks, their rank slack and whether
 * they have met the straggler, and the rank slack follows from the
 * holdings (every rank holds every chunk that is complete everywhere, and
 * no rank holds a chunk that does not exist yet).  Ranks with the same
 * active holdings and straggler status are therefore interchangeable, and
 * in the steady state there are few such classes (about 100 at n = 511,
 * at most 142, against 510 ranks), since only about log2 n chunks are
 * active at a time.  A round is then a b-matching between classes: how
 * many pairs each two classes form.  It costs O(n) to build the classes
 * and O(C^2 log C) to weigh and sort the class pairs, instead of O(n^2)
 * weights and an O(n E) blossom per round.
 *
 * The b-matching is greedy (heaviest class pair first, as many pairs as
 * both classes have free members) followed by local improvement of the
 * total weight: augmenting paths of one and three edges between free
 * members, moving a free member into a pair in place of a lighter
 * partner, and exchanging partners between two pairs.  The straggler's
 * partner is chosen after the greedy pass, among the ranks that have not
 * met it, for the largest receiver bonus less the weight of the pair it
 * breaks (what the blossom's SRCH_BIG edge does).  Not a maximum-weight
 * matching in general; measured in docs/stragglar.md.
 * Deterministic: ties are broken by a hash of the pair, the round and
 * the run's salt.
 */
#include <stdlib.h>
#include <string.h>
#include <stdio.h>

#include "stragglar_int.h"

struct cls_cand {
    int64_t w;
    uint32_t key;   /* tie-break */
    uint32_t i, j;  /* classes, i < j */
};

void stragglar_cls_free(srch_cls_t *c)
{
    free(c->tab);
    free(c->of);
    free(c->rep);
    free(c->size);
    free(c->rem);
    free(c->start);
    free(c->mem);
    free(c->cnt);
    free(c->pl);
    free(c->cand);
    free(c->ev);
    free(c->pc);
    free(c->pi);
    free(c->adjs);
    free(c->adj);
    free(c->odd);
    free(c->oddx);
    free(c->oddo);
    free(c->org);
    memset(c, 0, sizeof(*c));
}

/* Scratch for n ranks; on failure nothing is left allocated. */
ccs_status_t stragglar_cls_init(srch_cls_t *c, uint32_t n)
{
    size_t nn = (size_t)n * n;

    memset(c, 0, sizeof(*c));
    if (n <= SRCH_CLASS_N)
        return CCS_OK; /* the blossom plans these */
    c->tabsz = 1;
    while (c->tabsz < 2 * n)
        c->tabsz *= 2;
    c->tab = malloc(c->tabsz * sizeof(*c->tab));
    c->of = malloc(n * sizeof(*c->of));
    c->rep = malloc(n * sizeof(*c->rep));
    c->size = malloc(n * sizeof(*c->size));
    c->rem = malloc(n * sizeof(*c->rem));
    c->start = malloc((n + 1) * sizeof(*c->start));
    c->mem = malloc(n * sizeof(*c->mem));
    c->cnt = calloc(nn, sizeof(*c->cnt));
    c->pl = malloc(nn * sizeof(*c->pl));
    c->cand = malloc(nn / 2 * sizeof(*c->cand));
    c->ev = malloc((size_t)(CLS_DEPTH + 1) * n * sizeof(*c->ev));
    c->pc = malloc((size_t)(CLS_DEPTH + 1) * n * sizeof(*c->pc));
    c->pi = malloc((size_t)(CLS_DEPTH + 1) * n * sizeof(*c->pi));
    c->adjs = malloc((n + 1) * sizeof(*c->adjs));
    c->adj = malloc(2 * (size_t)n * sizeof(*c->adj));
    c->odd = malloc(n * sizeof(*c->odd));
    c->oddo = malloc(n * sizeof(*c->oddo));
    c->org = malloc((size_t)(CLS_DEPTH + 1) * n * sizeof(*c->org));
    c->oddx = malloc(n * sizeof(*c->oddx));
    if (!c->odd || !c->oddx || !c->oddo || !c->org ||
        !c->ev || !c->pc || !c->pi || !c->adjs || !c->adj ||
        !c->tab || !c->of || !c->rep || !c->size || !c->rem || !c->start ||
        !c->mem || !c->cnt || !c->pl || !c->cand) {
        stragglar_cls_free(c);
        return CCS_ERR_NOMEM;
    }
    return CCS_OK;
}

static uint32_t mix32(uint32_t x)
{
    x ^= x >> 16;
    x *= 0x7feb352dU;
    x ^= x >> 15;
    x *= 0x846ca68bU;
    x ^= x >> 16;
    return x;
}

/* Class of every rank that pairs this round: non-stragglers by their
 * active holdings and whether they have met the straggler, and the
 * straggler in a class of its own once it is free (r >= m). */
static void cls_build(srch_t *s, uint32_t r)
{
    srch_cls_t *c = &s->cls;
    uint32_t n = s->n, m = s->m, aw = s->aw, nr = r < m ? m : n;

    for (uint32_t i = 0; i < c->tabsz; i++)
        c->tab[i] = -1;
    c->C = 0;
    for (uint32_t u = 0; u < nr; u++) {
        const uint64_t *row = &s->abits[(size_t)u * aw];
        uint32_t flag = u == n - 1 ? 2u : (s->xround[u] < 0 ? 1u : 0u);
        uint64_t h = flag + 1;
        uint32_t slot;
        for (uint32_t k = 0; k < aw; k++)
            h = (h ^ row[k]) * UINT64_C(0x100000001B3);
        slot = (uint32_t)(h ^ (h >> 29)) & (c->tabsz - 1);
        for (;; slot = (slot + 1) & (c->tabsz - 1)) {
            int32_t id = c->tab[slot];
            uint32_t v;
            if (id < 0) {
                c->tab[slot] = (int32_t)c->C;
                c->rep[c->C] = u;
                c->size[c->C] = 0;
                c->of[u] = c->C++;
                break;
            }
            v = c->rep[id];
            if ((v == n - 1 ? 2u : (s->xround[v] < 0 ? 1u : 0u)) == flag &&
                memcmp(&s->abits[(size_t)v * aw], row,
                       aw * sizeof(*row)) == 0) {
                c->of[u] = (uint32_t)id;
                break;
            }
        }
        c->size[c->of[u]]++;
    }
    c->start[0] = 0;
    for (uint32_t i = 0; i < c->C; i++)
        c->start[i + 1] = c->start[i] + c->size[i];
    for (uint32_t i = 0; i < c->C; i++)
        c->rem[i] = 0; /* fill cursor for now */
    for (uint32_t u = 0; u < nr; u++) {
        uint32_t i = c->of[u];
        c->mem[c->start[i] + (uint32_t)c->rem[i]++] = u;
    }
}

static int cand_cmp(const void *a, const void *b)
{
    const struct cls_cand *x = a, *y = b;

    if (x->w != y->w)
        return x->w > y->w ? -1 : 1;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    if (x->i != y->i)
        return x->i < y->i ? -1 : 1;
    return x->j < y->j ? -1 : (x->j > y->j);
}

/* Weight of a pair of classes (0: no useful transfer) and the chunks each
 * sends (s->w and s->ch with stride C), the same formula as the blossom's
 * edges; the useful pairs go to c->cand, heaviest first. */
static uint32_t cls_weigh(srch_t *s, uint32_t r)
{
    srch_cls_t *c = &s->cls;
    uint32_t C = c->C, sigma = s->n - 1, ncand = 0;

    for (uint32_t i = 0; i < C; i++) {
        uint32_t a = c->rep[i];
        s->w[(size_t)i * C + i] = 0;
        for (uint32_t j = i + 1; j < C; j++) {
            uint32_t b = c->rep[j];
            int32_t ca = b == sigma ? -1 : stragglar_srch_pick(s, a, b);
            int32_t cb = a == sigma ? -1 : stragglar_srch_pick(s, b, a);
            int64_t wt = 0;
            if (ca >= 0)
                wt += SRCH_WR + s->cprio[ca] + s->rprio[b];
            if (cb >= 0)
                wt += SRCH_WR + s->cprio[cb] + s->rprio[a];
            if (s->cmax >= 0 && ca >= 0 && cb >= 0 &&
                (ca == s->cmax) != (cb == s->cmax))
                wt += s->steer;
            s->w[(size_t)i * C + j] = s->w[(size_t)j * C + i] = wt;
            s->ch[(size_t)i * C + j] = ca;
            s->ch[(size_t)j * C + i] = cb;
            if (wt > 0)
                c->cand[ncand++] = (struct cls_cand){
                    wt, mix32(a * 40503u + b * 977u + s->salt + r * 97u),
                    i, j };
        }
    }
    qsort(c->cand, ncand, sizeof(*c->cand), cand_cmp);
    return ncand;
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
            for (uint32_t i = 0; i < C; i++) {
                int64_t wxi = cw(s, x, i);
                if (wxi > 0 && e + wxi > c->odd[i]) {
                    c->odd[i] = e + wxi;
                    c->oddx[i] = x;
                    c->oddo[i] = c->org[(size_t)d * C + x];
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
        if (!cls_path_apply(c, bd, bc, bi, 1)) {
            if (getenv("SSCALE_DIAG2")) fprintf(stderr, "PATH depth %u bd %u bc %u bi %d gain %.2f copies %u\n", depth, bd, bc, (int)bi, (double)best / SRCH_WR, copies);
            return copies > 0;
        }
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
    cls_build(s, r);
    C = c->C;
    ncand = cls_weigh(s, r);
    for (uint32_t i = 0; i < C; i++)
        c->rem[i] = (int32_t)c->size[i];
    c->npl = 0;
    for (uint32_t q = 0; q < ncand; q++) {
        uint32_t i = c->cand[q].i, j = c->cand[q].j;
        int32_t t = min32(c->rem[i], c->rem[j]);
        if (t > 0)
            cls_pair(c, i, j, t);
    }
    if (r < m)
        sc = cls_straggler(s, r);
    if (getenv("SSCALE_DIAG")) { int32_t f = 0; for (uint32_t i = 0; i < C; i++) f += c->rem[i]; fprintf(stderr, "IMP r=%u free before %d\n", r, f); }
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

    if (getenv("SSCALE_DIAG")) { int32_t f = 0; for (uint32_t i = 0; i < C; i++) f += c->rem[i]; fprintf(stderr, "IMP r=%u free after %d\n", r, f); }
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
    if (getenv("SSCALE_DIAG") && (r < 40 || r % 16 == 0)) { /* TEMP */
        int64_t mine = 0, opt = 0; int32_t ne = 0;
        int32_t *mt = malloc(n * sizeof(int32_t));
        for (uint32_t u = 0; u < n; u++) {
            int32_t v = s->mate[u];
            if (v > (int32_t)u) mine += (uint32_t)v == sigma && r < m ? SRCH_BIG + s->rprio[u] : cw(s, c->of[u], c->of[v]);
        }
        for (uint32_t u = 0; u < n; u++) for (uint32_t v = u + 1; v < n; v++) {
            int64_t wt;
            if (v == sigma && r < m) wt = s->xround[u] < 0 ? SRCH_BIG + s->rprio[u] : 0;
            else if (v == sigma || u == sigma) wt = cw(s, c->of[u], c->of[v]);
            else wt = cw(s, c->of[u], c->of[v]);
            if (wt > 0) s->edges[ne++] = (match_edge_t){(int32_t)u, (int32_t)v, wt};
        }
        match_max_weight((int32_t)n, s->edges, ne, false, mt, err);
        for (uint32_t u = 0; u < n; u++) { int32_t v = mt[u]; if (v > (int32_t)u) { for (int32_t e = 0; e < ne; e++) if (s->edges[e].u == (int32_t)u && s->edges[e].v == v) { opt += s->edges[e].w; break; } } }
        { uint32_t fm = 0, fo = 0, w1m = 0, w1o = 0, strm = 0, stro = 0;
          for (uint32_t u = 0; u < n; u++) { if (s->mate[u] < 0) fm++; if (mt[u] < 0) fo++; }
          for (uint32_t u = 0; u < n; u++) { int32_t v = s->mate[u]; if (v > (int32_t)u && !((uint32_t)v == sigma && r < m) && cw(s, c->of[u], c->of[v]) < 2 * SRCH_WR) w1m++; if ((uint32_t)v == sigma) strm = u; }
          for (uint32_t u = 0; u < n; u++) { int32_t v = mt[u]; if (v > (int32_t)u && !((uint32_t)v == sigma && r < m) && cw(s, c->of[u], c->of[v]) < 2 * SRCH_WR) w1o++; if ((uint32_t)v == sigma) stro = u; }
          fprintf(stderr, "DIAG2 free %u/%u oneway %u/%u strag rprio %lld/%lld class %u/%u\n", fm, fo, w1m, w1o, (long long)s->rprio[strm], (long long)s->rprio[stro], c->of[strm], c->of[stro]); }
        if ((double)(opt - mine) / SRCH_WR > 40) {
            fprintf(stderr, "DUMP r=%u\n", r);
            for (uint32_t i = 0; i < C; i++) { fprintf(stderr, " class %u size %u rprio %lld met %d:", i, c->size[i], (long long)s->rprio[c->rep[i]], c->rep[i] < m ? s->xround[c->rep[i]] >= 0 : 2);
              for (uint32_t j = 0; j < C; j++) { if (cw(s,i,j) > 0) fprintf(stderr, " %u:%.2f", j, (double)cw(s,i,j)/SRCH_WR); }
              fprintf(stderr, "\n"); }
            int32_t *A = calloc((size_t)C*C, 4), *B = calloc((size_t)C*C, 4);
            for (uint32_t u = 0; u < n; u++) { int32_t v = s->mate[u]; if (v > (int32_t)u && (uint32_t)v != sigma) A[c->of[u]*C + c->of[v]]++; v = mt[u]; if (v > (int32_t)u && (uint32_t)v != sigma) B[c->of[u]*C + c->of[v]]++; }
            for (uint32_t i = 0; i < C; i++) for (uint32_t j = 0; j < C; j++) { int32_t a = A[i*C+j] + (i!=j ? A[j*C+i] : 0), b = B[i*C+j] + (i != j ? B[j*C+i] : 0); if (i <= j && (a || b) && a != b) fprintf(stderr, " pair %u-%u mine %d opt %d w %.2f\n", i, j, a, b, (double)cw(s,i,j)/SRCH_WR); }
            free(A); free(B);
        }
        fprintf(stderr, "DIAG r=%u C=%u mine=%lld opt=%lld gap=%.3f\n", r, C, (long long)mine, (long long)opt, (double)(opt - mine) / SRCH_WR);
        free(mt);
    }
    return CCS_OK;
}
