/*
 * match.c - Edmonds' maximum-weight matching, O(n^3) primal-dual form.
 *
 * The method is the classical one (Edmonds 1965; Gabow 1976; Galil's 1986
 * survey "Efficient algorithms for finding maximum matching in graphs"):
 * grow alternating trees from every free vertex in stages, shrink
 * odd cycles of S-vertices into blossoms, and when no tight edge helps,
 * change the dual variables by the largest delta that keeps them feasible
 * (delta1: a vertex dual reaches 0; delta2: an S-to-free edge becomes
 * tight; delta3: an S-to-S edge becomes tight; delta4: a T-blossom's dual
 * reaches 0 and it is expanded).  Each stage ends with one augmentation, so
 * there are at most n/2 + 1 stages of O(n^2) work each.
 *
 * Representation.  Edge k has two endpoints, 2k (its u) and 2k+1 (its v);
 * p ^ 1 is the other end and p >> 1 the edge.  Vertices are 0..n-1,
 * non-trivial blossoms take ids n..2n-1 from a free list.  mate[v] holds
 * the *remote endpoint* of v's matched edge during the run.  Weights are
 * doubled on entry so that every dual variable stays an integer (the
 * S-to-S slack halved by delta3 is then always even).
 *
 * Speed, on StragglAR's rounds (sparse, many equal weights, n/2 stages
 * that mostly end after a few scans, blossoms nested dozens deep): the
 * work outside the trees' scans is kept proportional to what a stage
 * touched, not to n (lists of the ids set or labeled in the stage, free
 * roots expanded into their vertices only when reached, a vertex list per
 * blossom), in every case visiting ids in the order the plain form does,
 * so the matching returned is the same one (tests/unit/test_match.c
 * compares it with tests/unit/match_ref.c, the plain form).  Most stages
 * end without a dual step, so the free roots a stage scans before its
 * first tight edge are scanned again, with the same result, by the next
 * stage; a root known to have no tight edge since the last dual step is
 * skipped, and the least-slack edges its scan would have left are
 * replayed only when the stage does need a dual step (replay_prefix):
 * at n = 759 StragglAR's matchings then scan 6 300 vertices each
 * instead of 39 800.
 *
 * Memory: every array lives in one mw_t, allocated in match_max_weight and
 * freed at its cleanup label.  Variable-length lists (children of a
 * blossom, its best edges, the queue) grow on demand; an allocation failure
 * sets mw_t.oom, the algorithm stops at the next check and the call
 * returns CCS_ERR_NOMEM.
 */
#include <stdlib.h>
#include <string.h>

#include "match.h"

typedef struct ivec {
    int32_t *a;     /* owned */
    int32_t len;
    int32_t cap;
} ivec_t;

typedef struct mw {
    int32_t nv, ne;
    /* [ne] the edges (deduplicated): endpoints and twice the doubled
     * weight, side by side, since a slack reads all three (one cache line
     * instead of three in the scans' least-slack comparisons). */
    struct mw_edge {
        int32_t uv[2];      /* u, v: endpoint 2k + i is uv[i] */
        int64_t ww;         /* 4 w */
    } *ed;
    int32_t *nb_start;      /* [nv + 1] CSR of remote endpoints */
    int32_t *nb;            /* [2 ne] */
    int32_t *nbv;           /* [2 ne] the vertex at each nb endpoint */
    int64_t *nbw2;          /* [2 ne] twice its edge's (doubled) weight:
                               the scans read slack from the CSR alone */
    int32_t *mate;          /* [nv] remote endpoint or -1 */
    int32_t *label;         /* [2nv] 0 free, 1 S, 2 T, 5 scan mark, -1 */
    int32_t *labelend;      /* [2nv] endpoint that gave the label, or -1 */
    int32_t *inblossom;     /* [nv] top-level blossom of each vertex */
    int32_t *bparent;       /* [2nv] enclosing blossom or -1 */
    int32_t *bbase;         /* [2nv] base vertex, -1 for unused ids */
    int32_t *bestedge;      /* [2nv] least-slack edge (see below) or -1 */
    int64_t *dual;          /* [2nv] doubled dual variables */
    uint8_t *allow;         /* [ne] edge known tight this stage */
    uint8_t *has_best;      /* [2nv] bestlist valid */
    ivec_t *childs;         /* [2nv] sub-blossoms, base child first */
    ivec_t *endps;          /* [2nv] endps[i]: endpoint of childs[i] on the
                               edge to childs[i+1] */
    ivec_t *bestlist;       /* [2nv] least-slack edges to S-blossoms */
    ivec_t *leafv;          /* [2nv] a blossom's vertices, in leaf order */
    uint8_t *ldirty;        /* [2nv] leafv[b] is to be rebuilt */
    int32_t *unused;        /* [nv] free blossom ids */
    int32_t nunused;
    int32_t *bestto;        /* [2nv] scratch of add_blossom */
    int64_t *bestsl;        /* [2nv] slack of each bestto edge */
    uint64_t *tbits;        /* [2nv / 64] its entries set (add_blossom) */
    ivec_t queue;           /* S-vertices to scan */
    int32_t *roots;         /* [nv] this stage's free top-level blossoms,
                               their leaves not queued yet (grow_trees) */
    int32_t nroots;
    uint8_t *seen;          /* [2nv] bit 0: in besl, 1: tlist, 2: slist */
    ivec_t besl;            /* ids whose bestedge was set this stage */
    ivec_t tlist;           /* blossoms labeled T this stage */
    ivec_t slist;           /* blossoms labeled S this stage */
    int32_t *freev;         /* [nv] unmatched vertices, increasing */
    int32_t nfree;
    ivec_t path;            /* blossoms marked by scan_blossom */
    /* The stage's prefix (see grow_trees): the roots scanned before any
     * tight edge was met, and what replaying their scans needs. */
    int32_t stageno;        /* stages started in this call */
    int32_t epoch;          /* dual steps made in this call */
    int32_t *ntok;          /* [2nv] epoch in which root b was scanned
                               without meeting a tight edge, -1 none */
    int32_t *rst;           /* [2nv] stage in which bestedge was last
                               reset to -1 */
    bool inprefix;          /* no tight edge met yet in this stage */
    bool skipped;           /* a prefix root was skipped in this stage */
    bool ib0ok;             /* ib0 holds inblossom at the stage start */
    int32_t pcur;           /* prefix root being scanned, -1 none */
    ivec_t pfx;             /* prefix roots in the order popped */
    int32_t *ib0;           /* [nv] inblossom at the stage start, once a
                               blossom was formed in the stage */
    int32_t *pcand;         /* [2nv] the replay's least-slack edges */
    int64_t *pslack;        /* [2nv] their slack */
    ivec_t ptouch;          /* ids with a pcand */
    bool oom;
} mw_t;

/* Out of line: rare (the lists keep their capacity between stages). */
static void iv_grow_push(mw_t *m, ivec_t *v, int32_t x)
{
    int32_t ncap = v->cap ? 2 * v->cap : 8;
    int32_t *na = realloc(v->a, (size_t)ncap * sizeof(*na));

    if (na == NULL) {
        m->oom = true;
        return;
    }
    v->a = na;   /* owned by the ivec; freed in mw_free */
    v->cap = ncap;
    v->a[v->len++] = x;
}

static inline void iv_push(mw_t *m, ivec_t *v, int32_t x)
{
    if (v->len == v->cap)
        iv_grow_push(m, v, x);
    else
        v->a[v->len++] = x;
}

static void iv_reverse(int32_t *a, int32_t lo, int32_t hi) /* [lo, hi) */
{
    for (hi--; lo < hi; lo++, hi--) {
        int32_t t = a[lo];
        a[lo] = a[hi];
        a[hi] = t;
    }
}

static inline int32_t endpoint(const mw_t *m, int32_t p)
{
    return m->ed[p >> 1].uv[p & 1];
}

static inline int64_t slack(const mw_t *m, int32_t k)
{
    const struct mw_edge *e = &m->ed[k];

    return m->dual[e->uv[0]] + m->dual[e->uv[1]] - e->ww;
}

/* The delta step looks only at the ids whose bestedge was set, or that
 * were labeled T, in the current stage (scanning all 2n ids after every
 * tree growth cost a large share of a StragglAR round: a stage usually
 * ends after a few scans).  Both lists are reset at the stage start. */
static inline void set_best(mw_t *m, int32_t b, int32_t k)
{
    m->bestedge[b] = k;
    if (!(m->seen[b] & 1)) {
        m->seen[b] |= 1;
        iv_push(m, &m->besl, b);
    }
}

/* bestedge[b] back to none, remembering when (replay_prefix). */
static inline void reset_best(mw_t *m, int32_t b)
{
    m->bestedge[b] = -1;
    m->rst[b] = m->stageno;
}

static inline void mark_t(mw_t *m, int32_t b)
{
    if (b >= m->nv && !(m->seen[b] & 2)) {
        m->seen[b] |= 2;
        iv_push(m, &m->tlist, b);
    }
}

/* Likewise the blossoms labeled S, for the end of the stage. */
static inline void mark_s(mw_t *m, int32_t b)
{
    if (b >= m->nv && !(m->seen[b] & 4)) {
        m->seen[b] |= 4;
        iv_push(m, &m->slist, b);
    }
}

/* Python-style index into a blossom's cyclic child list. */
static int32_t wrap(int32_t j, int32_t len)
{
    j %= len;
    return j < 0 ? j + len : j;
}

static int32_t index_of(const ivec_t *v, int32_t x)
{
    for (int32_t i = 0; i < v->len; i++) {
        if (v->a[i] == x)
            return i;
    }
    return -1;
}

static void iv_append(mw_t *m, ivec_t *v, const int32_t *x, int32_t len)
{
    if (v->len + len > v->cap) {
        int32_t ncap = v->cap ? v->cap : 8;
        int32_t *na;
        while (ncap < v->len + len)
            ncap *= 2;
        na = realloc(v->a, (size_t)ncap * sizeof(*na));
        if (na == NULL) {
            m->oom = true;
            return;
        }
        v->a = na; /* owned by the ivec; freed in mw_free */
        v->cap = ncap;
    }
    memcpy(v->a + v->len, x, (size_t)len * sizeof(*x));
    v->len += len;
}

/* The vertices inside blossom b >= nv in leaf order (children in order,
 * each child's vertices in its own leaf order).  Blossoms nest deeply in
 * StragglAR's rounds (each new one often holds the previous one and two
 * more vertices), so walking the children recursively at every use cost
 * about a tenth of a round; the list is kept per blossom and rebuilt only
 * after augment_blossom rotated it or a sub-blossom (which marks it:
 * augmentations enter every enclosing blossom) or it is new.  On
 * allocation failure the list is short and m->oom is set. */
static const ivec_t *leafset(mw_t *m, int32_t b)
{
    ivec_t *l = &m->leafv[b];

    if (m->ldirty[b]) {
        const ivec_t *ch = &m->childs[b];
        l->len = 0;
        for (int32_t i = 0; i < ch->len && !m->oom; i++) {
            int32_t c = ch->a[i];
            if (c < m->nv) {
                iv_push(m, l, c);
            } else {
                const ivec_t *lc = leafset(m, c);
                iv_append(m, l, lc->a, lc->len);
            }
        }
        m->ldirty[b] = m->oom;
    }
    return l;
}

/* Append the vertices inside b (a vertex or a blossom) to out. */
static inline void leaves(mw_t *m, int32_t b, ivec_t *out)
{
    if (b < m->nv) {
        iv_push(m, out, b);
    } else {
        const ivec_t *l = leafset(m, b);
        iv_append(m, out, l->a, l->len);
    }
}

/* The vertices inside b without copying them: a vertex is returned in
 * *one.  Valid until b's own list is rebuilt (after an augmentation). */
static inline const int32_t *leaf_span(mw_t *m, int32_t b, int32_t *one,
                                       int32_t *len)
{
    const ivec_t *l;

    if (b < m->nv) {
        *one = b;
        *len = 1;
        return one;
    }
    l = leafset(m, b);
    *len = l->len;
    return l->a;
}

/* Label the top-level blossom of w with t (1 = S, 2 = T) through endpoint
 * p; a T-blossom's mate becomes S in turn. */
static void assign_label(mw_t *m, int32_t w, int32_t t, int32_t p)
{
    for (;;) {
        int32_t b = m->inblossom[w];
        m->label[w] = m->label[b] = t;
        m->labelend[w] = m->labelend[b] = p;
        reset_best(m, w);
        reset_best(m, b);
        if (t == 2)
            mark_t(m, b);
        if (t == 1) {
            mark_s(m, b);
            leaves(m, b, &m->queue);
            return;
        }
        p = m->mate[m->bbase[b]];
        w = endpoint(m, p);
        p ^= 1;
        t = 1;
    }
}

/* Trace back from S-vertices v and w towards their roots; return the base
 * of a new blossom, or -1 when the roots differ (augmenting path). */
static int32_t scan_blossom(mw_t *m, int32_t v, int32_t w)
{
    int32_t base = -1;

    m->path.len = 0;
    while (v != -1 || w != -1) {
        int32_t b = m->inblossom[v];
        if (m->label[b] & 4) {
            base = m->bbase[b];
            break;
        }
        iv_push(m, &m->path, b);
        m->label[b] = 5;
        if (m->labelend[b] == -1) {
            v = -1;
        } else {
            v = endpoint(m, m->labelend[b]);
            b = m->inblossom[v];
            v = endpoint(m, m->labelend[b]);
        }
        if (w != -1) {
            int32_t t = v;
            v = w;
            w = t;
        }
    }
    for (int32_t i = 0; i < m->path.len; i++)
        m->label[m->path.a[i]] = 1;
    return base;
}

/* Edge k, of slack ks, from blossom b to the vertex j (outside b or not):
 * keep it if it is the least-slack edge so far to j's S-blossom. */
static inline void consider_best(mw_t *m, int32_t b, int32_t k, int32_t j,
                                 int64_t ks)
{
    int32_t bj = m->inblossom[j];

    if (bj != b && m->label[bj] == 1 &&
        (m->bestto[bj] == -1 || ks < m->bestsl[bj])) {
        m->bestto[bj] = k;
        m->bestsl[bj] = ks;
        m->tbits[bj >> 6] |= UINT64_C(1) << (bj & 63);
    }
}

/* Shrink the cycle closed by edge k through base into a new S-blossom. */
static void add_blossom(mw_t *m, int32_t base, int32_t k)
{
    int32_t v = m->ed[k].uv[0], w = m->ed[k].uv[1];
    int32_t bb = m->inblossom[base];
    int32_t bv = m->inblossom[v], bw = m->inblossom[w];
    int32_t b = m->unused[--m->nunused];
    ivec_t *ch = &m->childs[b], *ep = &m->endps[b];

    if (m->skipped && !m->ib0ok) { /* replay_prefix may need it */
        memcpy(m->ib0, m->inblossom, (size_t)m->nv * sizeof(*m->ib0));
        m->ib0ok = true;
    }
    m->ntok[b] = -1;
    m->bbase[b] = base;
    m->bparent[b] = -1;
    m->bparent[bb] = b;
    ch->len = 0;
    ep->len = 0;
    while (bv != bb) {
        m->bparent[bv] = b;
        iv_push(m, ch, bv);
        iv_push(m, ep, m->labelend[bv]);
        v = endpoint(m, m->labelend[bv]);
        bv = m->inblossom[v];
    }
    iv_push(m, ch, bb);
    if (m->oom)
        return;
    iv_reverse(ch->a, 0, ch->len);
    iv_reverse(ep->a, 0, ep->len);
    iv_push(m, ep, 2 * k);
    while (bw != bb) {
        m->bparent[bw] = b;
        iv_push(m, ch, bw);
        iv_push(m, ep, m->labelend[bw] ^ 1);
        w = endpoint(m, m->labelend[bw]);
        bw = m->inblossom[w];
    }
    if (m->oom)
        return;
    m->label[b] = 1;
    mark_s(m, b);
    m->labelend[b] = m->labelend[bb];
    m->dual[b] = 0;
    m->ldirty[b] = 1;
    /* b's vertices, child by child (b's leaf order): each child is a
     * top-level blossom until now, so its label is that of every vertex
     * in it (read once per child, not per vertex: the new blossoms are
     * large, a few hundred vertices at n = 759). */
    (void)leafset(m, b);
    for (int32_t c = 0; c < ch->len && !m->oom; c++) {
        int32_t sub = ch->a[c], one, nl;
        bool wast = m->label[sub] == 2;
        const int32_t *lv = leaf_span(m, sub, &one, &nl);
        if (wast) /* former T-vertices become S */
            iv_append(m, &m->queue, lv, nl);
        for (int32_t i = 0; i < nl; i++)
            m->inblossom[lv[i]] = b;
    }
    /* Least-slack edges from the new blossom to each other S-blossom. */
    for (int32_t c = 0; c < ch->len && !m->oom; c++) {
        int32_t sub = ch->a[c];
        if (!m->has_best[sub]) {
            int32_t one, nl;
            const int32_t *lv = leaf_span(m, sub, &one, &nl);
            /* x is inside b: the far end of each edge is nbv. */
            for (int32_t i = 0; i < nl; i++) {
                int32_t x = lv[i];
                int64_t dx = m->dual[x];
                for (int32_t q = m->nb_start[x]; q < m->nb_start[x + 1];
                     q++) {
                    int32_t far = m->nbv[q];
                    consider_best(m, b, m->nb[q] >> 1, far,
                                  dx + m->dual[far] - m->nbw2[q]);
                }
            }
        } else {
            for (int32_t i = 0; i < m->bestlist[sub].len; i++) {
                int32_t e = m->bestlist[sub].a[i], j = m->ed[e].uv[1];
                if (m->inblossom[j] == b)
                    j = m->ed[e].uv[0];
                consider_best(m, b, e, j, slack(m, e));
            }
        }
        m->has_best[sub] = 0;
        m->bestlist[sub].len = 0;
        reset_best(m, sub);
    }
    m->bestlist[b].len = 0;
    m->has_best[b] = 1;
    reset_best(m, b);
    /* The blossoms consider_best touched, in increasing id, from the
     * bitset (a scan of all 2n bestto entries per new blossom cost about
     * a tenth of StragglAR's planning: hundreds of blossoms per matching). */
    {
        int64_t bsl = 0;
        for (int32_t wi = 0; wi < (2 * m->nv + 63) / 64; wi++) {
            uint64_t bits = m->tbits[wi];
            m->tbits[wi] = 0;
            while (bits) {
                int32_t x = wi * 64 + __builtin_ctzll(bits);
                int32_t e = m->bestto[x];
                bits &= bits - 1;
                m->bestto[x] = -1;
                iv_push(m, &m->bestlist[b], e);
                if (m->bestedge[b] == -1 || m->bestsl[x] < bsl) {
                    set_best(m, b, e);
                    bsl = m->bestsl[x];
                }
            }
        }
    }
}

/* Undo blossom b.  Mid-stage (endstage false) a T-blossom's children are
 * relabeled so that the alternating tree stays consistent. */
static void expand_blossom(mw_t *m, int32_t b, bool endstage)
{
    ivec_t *ch = &m->childs[b], *ep = &m->endps[b];

    for (int32_t i = 0; i < ch->len && !m->oom; i++) {
        int32_t s = ch->a[i];
        m->bparent[s] = -1;
        if (s < m->nv) {
            m->inblossom[s] = s;
        } else if (endstage && m->dual[s] == 0) {
            expand_blossom(m, s, endstage);
        } else {
            int32_t one, nl;
            const int32_t *lv = leaf_span(m, s, &one, &nl);
            for (int32_t q = 0; q < nl; q++)
                m->inblossom[lv[q]] = s;
        }
    }
    if (m->oom)
        return;
    if (!endstage && m->label[b] == 2) {
        int32_t len = ch->len;
        int32_t entry = m->inblossom[endpoint(m, m->labelend[b] ^ 1)];
        int32_t j = index_of(ch, entry), jstep, trick, p, bv;

        if (j & 1) {
            j -= len;
            jstep = 1;
            trick = 0;
        } else {
            jstep = -1;
            trick = 1;
        }
        /* Relabel the even-length path from the entry child to the base. */
        p = m->labelend[b];
        while (j != 0) {
            int32_t q = ep->a[wrap(j - trick, len)];
            m->label[endpoint(m, p ^ 1)] = 0;
            m->label[endpoint(m, q ^ trick ^ 1)] = 0;
            assign_label(m, endpoint(m, p ^ 1), 2, p);
            m->allow[q >> 1] = 1;
            j += jstep;
            p = ep->a[wrap(j - trick, len)] ^ trick;
            m->allow[p >> 1] = 1;
            j += jstep;
        }
        bv = ch->a[wrap(j, len)];
        m->label[endpoint(m, p ^ 1)] = m->label[bv] = 2;
        mark_t(m, bv);
        m->labelend[endpoint(m, p ^ 1)] = m->labelend[bv] = p;
        reset_best(m, bv);
        j += jstep;
        /* Children on the odd path lose their labels unless reachable. */
        while (ch->a[wrap(j, len)] != entry) {
            int32_t found = -1;
            bv = ch->a[wrap(j, len)];
            if (m->label[bv] == 1) {
                j += jstep;
                continue;
            }
            {
                int32_t one, nl;
                const int32_t *lv = leaf_span(m, bv, &one, &nl);
                for (int32_t q = 0; q < nl; q++) {
                    if (m->label[lv[q]] != 0) {
                        found = lv[q];
                        break;
                    }
                }
            }
            if (found >= 0) {
                m->label[found] = 0;
                m->label[endpoint(m, m->mate[m->bbase[bv]])] = 0;
                assign_label(m, found, 2, m->labelend[found]);
            }
            j += jstep;
        }
    }
    m->label[b] = m->labelend[b] = -1;
    ch->len = 0;
    ep->len = 0;
    m->bbase[b] = -1;
    m->has_best[b] = 0;
    m->bestlist[b].len = 0;
    reset_best(m, b);
    m->ntok[b] = -1;
    m->unused[m->nunused++] = b;
}

/* Swap matched and unmatched edges on the path inside b from vertex v to
 * the base, making v the new base. */
static void augment_blossom(mw_t *m, int32_t b, int32_t v)
{
    ivec_t *ch = &m->childs[b], *ep = &m->endps[b];
    int32_t t = v, i, j, jstep, trick, len = ch->len;

    m->ldirty[b] = 1; /* its children rotate, and maybe theirs */

    while (m->bparent[t] != b)
        t = m->bparent[t];
    if (t >= m->nv)
        augment_blossom(m, t, v);
    i = j = index_of(ch, t);
    if (i & 1) {
        j -= len;
        jstep = 1;
        trick = 0;
    } else {
        jstep = -1;
        trick = 1;
    }
    while (j != 0) {
        int32_t p;
        j += jstep;
        t = ch->a[wrap(j, len)];
        p = ep->a[wrap(j - trick, len)] ^ trick;
        if (t >= m->nv)
            augment_blossom(m, t, endpoint(m, p));
        j += jstep;
        t = ch->a[wrap(j, len)];
        if (t >= m->nv)
            augment_blossom(m, t, endpoint(m, p ^ 1));
        m->mate[endpoint(m, p)] = p ^ 1;
        m->mate[endpoint(m, p ^ 1)] = p;
    }
    /* Rotate so that the child holding v comes first. */
    iv_reverse(ch->a, 0, i);
    iv_reverse(ch->a, i, len);
    iv_reverse(ch->a, 0, len);
    iv_reverse(ep->a, 0, i);
    iv_reverse(ep->a, i, len);
    iv_reverse(ep->a, 0, len);
    m->bbase[b] = m->bbase[ch->a[0]];
}

/* Augment along the path through edge k between two S-trees. */
static void augment_matching(mw_t *m, int32_t k)
{
    for (int side = 0; side < 2; side++) {
        int32_t s = m->ed[k].uv[side];
        int32_t p = side ? 2 * k : 2 * k + 1;
        for (;;) {
            int32_t bs = m->inblossom[s], t, bt, j;
            if (bs >= m->nv)
                augment_blossom(m, bs, s);
            m->mate[s] = p;
            if (m->labelend[bs] == -1)
                break;
            t = endpoint(m, m->labelend[bs]);
            bt = m->inblossom[t];
            s = endpoint(m, m->labelend[bt]);
            j = endpoint(m, m->labelend[bt] ^ 1);
            if (bt >= m->nv)
                augment_blossom(m, bt, j);
            m->mate[j] = m->labelend[bt];
            p = m->labelend[bt] ^ 1;
        }
    }
}

/* Scan the queue; returns true after an augmentation.  The stage's free
 * roots sit below the queue: the leaves of the next one (highest vertex
 * first) are queued only when the queue runs dry, which is the order of
 * queueing them all at the stage start, since a root's blossom cannot
 * change before its own vertices are scanned (an edge into it from
 * another tree augments).  Most stages augment after a few scans, so
 * most roots are never expanded into leaves. */
static bool grow_trees(mw_t *m)
{
    while (!m->oom) {
        int32_t v;
        if (m->queue.len == 0) {
            int32_t b;
            if (m->pcur >= 0) { /* scanned whole, nothing tight */
                m->ntok[m->pcur] = m->epoch;
                m->pcur = -1;
            }
            if (m->nroots == 0)
                break;
            b = m->roots[--m->nroots];
            if (m->inprefix) {
                iv_push(m, &m->pfx, b);
                if (m->ntok[b] == m->epoch) {
                    m->skipped = true;
                    continue;
                }
                m->pcur = b;
            }
            leaves(m, b, &m->queue);
            continue;
        }
        v = m->queue.a[--m->queue.len];
        int64_t dv = m->dual[v]; /* duals change only between scans */
        for (int32_t q = m->nb_start[v]; q < m->nb_start[v + 1]; q++) {
            int32_t p = m->nb[q], k = p >> 1, w = m->nbv[q];
            int64_t ks = 0;
            if (m->inblossom[v] == m->inblossom[w])
                continue;
            if (!m->allow[k]) {
                ks = dv + m->dual[w] - m->nbw2[q];
                if (ks <= 0) {
                    m->allow[k] = 1;
                    if (m->inprefix) {
                        /* The prefix ends inside this root's scan: the
                         * root is not replayed (its scan goes on with
                         * the tree growth, as in the plain form). */
                        m->inprefix = false;
                        if (m->pcur >= 0)
                            m->pfx.len--;
                        m->pcur = -1;
                    }
                }
            }
            if (m->allow[k]) {
                int32_t lw = m->label[m->inblossom[w]];
                if (lw == 0) {
                    assign_label(m, w, 2, p ^ 1);
                } else if (lw == 1) {
                    int32_t base = scan_blossom(m, v, w);
                    if (base >= 0) {
                        add_blossom(m, base, k);
                        if (m->oom)
                            return false;
                    } else {
                        augment_matching(m, k);
                        return true;
                    }
                } else if (m->label[w] == 0) {
                    /* w inside a T-blossom: remember how it was reached. */
                    m->label[w] = 2;
                    m->labelend[w] = p ^ 1;
                }
            } else if (m->label[m->inblossom[w]] == 1) {
                int32_t b = m->inblossom[v];
                if (m->bestedge[b] == -1 || ks < slack(m, m->bestedge[b]))
                    set_best(m, b, k);
            } else if (m->label[w] == 0) {
                if (m->bestedge[w] == -1 || ks < slack(m, m->bestedge[w]))
                    set_best(m, w, k);
            }
        }
    }
    return false;
}

/* Before the first dual step of a stage whose prefix skipped roots: the
 * least-slack edges the skipped scans would have left.  The prefix (the
 * roots scanned, highest first, before any tight edge) is replayed in
 * its order with the stage start's blossoms and labels (roots S,
 * everything else unlabeled, nothing allowed) into pcand, first least
 * slack wins as in grow_trees; then each id takes its prefix edge unless
 * its bestedge was reset since (which drops every earlier edge) or a
 * later edge has strictly less slack (an equal one came after).  The
 * duals have not changed since the prefix, so the slacks compare as
 * they did then. */
static void replay_prefix(mw_t *m)
{
    const int32_t *ib = m->ib0ok ? m->ib0 : m->inblossom;

    m->ptouch.len = 0;
    for (int32_t i = 0; i < m->pfx.len && !m->oom; i++) {
        int32_t r = m->pfx.a[i], one, nl;
        const int32_t *lv = leaf_span(m, r, &one, &nl);
        for (int32_t li = nl - 1; li >= 0; li--) { /* queue order */
            int32_t v = lv[li];
            int64_t dv = m->dual[v];
            for (int32_t q = m->nb_start[v]; q < m->nb_start[v + 1]; q++) {
                int32_t w = m->nbv[q], bw = ib[w], x;
                int64_t ks;
                if (bw == r)
                    continue;
                ks = dv + m->dual[w] - m->nbw2[q];
                /* S at the stage start: the free top-level blossoms. */
                x = m->mate[m->bbase[bw]] == -1 ? r : w;
                if (m->pcand[x] == -1) {
                    iv_push(m, &m->ptouch, x);
                } else if (ks >= m->pslack[x]) {
                    continue;
                }
                m->pcand[x] = m->nb[q] >> 1;
                m->pslack[x] = ks;
            }
        }
    }
    for (int32_t i = 0; i < m->ptouch.len; i++) {
        int32_t x = m->ptouch.a[i];
        if (m->rst[x] != m->stageno &&
            (m->bestedge[x] == -1 ||
             m->pslack[x] <= slack(m, m->bestedge[x])))
            set_best(m, x, m->pcand[x]);
        m->pcand[x] = -1;
    }
}

/* Run the stages.  Returns false on allocation failure. */
static bool solve(mw_t *m, bool maxcard)
{
    int32_t nv = m->nv;

    for (int32_t stage = 0; stage < nv; stage++) {
        bool augmented = false;

        memset(m->label, 0, 2 * (size_t)nv * sizeof(*m->label));
        memset(m->bestedge, 0xff, 2 * (size_t)nv * sizeof(*m->bestedge));
        /* (bestlist[b] is read only while has_best[b] is set.) */
        memset(m->has_best + nv, 0, (size_t)nv);
        memset(m->allow, 0, (size_t)m->ne);
        for (int32_t i = 0; i < m->besl.len; i++)
            m->seen[m->besl.a[i]] = 0;
        for (int32_t i = 0; i < m->tlist.len; i++)
            m->seen[m->tlist.a[i]] = 0;
        for (int32_t i = 0; i < m->slist.len; i++)
            m->seen[m->slist.a[i]] = 0;
        m->besl.len = 0;
        m->tlist.len = 0;
        m->slist.len = 0;
        m->queue.len = 0;
        m->nroots = 0;
        m->stageno++;
        m->inprefix = true;
        m->skipped = false;
        m->ib0ok = false;
        m->pcur = -1;
        m->pfx.len = 0;
        /* Label the free roots S (what assign_label does, less queueing
         * their leaves: see grow_trees), in increasing vertex order; the
         * unmatched vertices only shrink, so their list is compacted. */
        {
            int32_t nf = 0;
            for (int32_t i = 0; i < m->nfree; i++) {
                int32_t v = m->freev[i], b;
                if (m->mate[v] != -1)
                    continue;
                m->freev[nf++] = v;
                b = m->inblossom[v];
                if (m->label[b] == 0) {
                    m->label[v] = m->label[b] = 1;
                    m->labelend[v] = m->labelend[b] = -1;
                    m->roots[m->nroots++] = b;
                    mark_s(m, b);
                }
            }
            m->nfree = nf;
        }
        for (;;) {
            int type = -1;
            int64_t delta = 0;
            int32_t dedge = -1, dblossom = -1;

            augmented = grow_trees(m);
            if (m->oom)
                return false;
            if (augmented)
                break;
            if (m->skipped) {
                replay_prefix(m);
                m->skipped = false;
                if (m->oom)
                    return false;
            }
            m->inprefix = false;
            m->pcur = -1;
            if (!maxcard) {
                type = 1;
                delta = m->dual[0];
                for (int32_t v = 1; v < nv; v++)
                    delta = m->dual[v] < delta ? m->dual[v] : delta;
            }
            /* Each candidate kind in the lists (see set_best): the least
             * value, the lowest id among equal ones, replacing the kind
             * before only if strictly less (the order of scanning every
             * id in increasing order, kind by kind). */
            {
                int32_t b2 = -1, b3 = -1, b4 = -1;
                int64_t d2 = 0, d3 = 0, d4 = 0;
                for (int32_t i = 0; i < m->besl.len; i++) {
                    int32_t b = m->besl.a[i];
                    int64_t d;
                    if (m->bestedge[b] == -1)
                        continue;
                    if (b < nv && m->label[m->inblossom[b]] == 0) {
                        d = slack(m, m->bestedge[b]);
                        if (b2 == -1 || d < d2 || (d == d2 && b < b2)) {
                            d2 = d;
                            b2 = b;
                        }
                    }
                    if (m->bparent[b] == -1 && m->label[b] == 1) {
                        d = slack(m, m->bestedge[b]) / 2;
                        if (b3 == -1 || d < d3 || (d == d3 && b < b3)) {
                            d3 = d;
                            b3 = b;
                        }
                    }
                }
                for (int32_t i = 0; i < m->tlist.len; i++) {
                    int32_t b = m->tlist.a[i];
                    if (m->bbase[b] >= 0 && m->bparent[b] == -1 &&
                        m->label[b] == 2 &&
                        (b4 == -1 || m->dual[b] < d4 ||
                         (m->dual[b] == d4 && b < b4))) {
                        d4 = m->dual[b];
                        b4 = b;
                    }
                }
                if (b2 != -1 && (type == -1 || d2 < delta)) {
                    delta = d2;
                    type = 2;
                    dedge = m->bestedge[b2];
                }
                if (b3 != -1 && (type == -1 || d3 < delta)) {
                    delta = d3;
                    type = 3;
                    dedge = m->bestedge[b3];
                }
                if (b4 != -1 && (type == -1 || d4 < delta)) {
                    delta = d4;
                    type = 4;
                    dblossom = b4;
                }
            }
            if (type == -1) {
                /* Max-cardinality mode and nothing left to grow. */
                type = 1;
                delta = m->dual[0];
                for (int32_t v = 1; v < nv; v++)
                    delta = m->dual[v] < delta ? m->dual[v] : delta;
                delta = delta > 0 ? delta : 0;
            }
            for (int32_t v = 0; v < nv; v++) {
                int32_t l = m->label[m->inblossom[v]];
                if (l == 1)
                    m->dual[v] -= delta;
                else if (l == 2)
                    m->dual[v] += delta;
            }
            for (int32_t b = nv; b < 2 * nv; b++) {
                if (m->bbase[b] >= 0 && m->bparent[b] == -1) {
                    if (m->label[b] == 1)
                        m->dual[b] += delta;
                    else if (m->label[b] == 2)
                        m->dual[b] -= delta;
                }
            }
            m->epoch++;
            if (type == 1) {
                break;
            } else if (type == 2 || type == 3) {
                int32_t i = m->ed[dedge].uv[0];
                m->allow[dedge] = 1;
                if (m->label[m->inblossom[i]] != 1)
                    i = m->ed[dedge].uv[1];
                iv_push(m, &m->queue, i);
            } else {
                expand_blossom(m, dblossom, false);
            }
            if (m->oom)
                return false;
        }
        if (!augmented)
            break;
        /* S-blossoms whose dual dropped to 0 are no longer needed: the
         * top-level ones among those labeled S this stage, in increasing
         * id (the order in which their ids return to the free list).
         * Expanding one does not make another qualify (its children of
         * dual 0 are expanded with it). */
        {
            int32_t nc = 0, *c = m->slist.a;
            for (int32_t i = 0; i < m->slist.len; i++) {
                int32_t b = c[i];
                if (m->bparent[b] == -1 && m->bbase[b] >= 0 &&
                    m->label[b] == 1 && m->dual[b] == 0)
                    c[nc++] = b;
                else
                    m->seen[b] &= (uint8_t)~4u;
            }
            for (int32_t i = 1; i < nc; i++) { /* insertion sort: few */
                int32_t x = c[i], j = i;
                for (; j > 0 && c[j - 1] > x; j--)
                    c[j] = c[j - 1];
                c[j] = x;
            }
            m->slist.len = nc;
            for (int32_t i = 0; i < nc && !m->oom; i++) {
                int32_t b = c[i];
                if (m->bparent[b] == -1 && m->bbase[b] >= 0 &&
                    m->label[b] == 1 && m->dual[b] == 0)
                    expand_blossom(m, b, true);
            }
        }
        if (m->oom)
            return false;
    }
    return true;
}

static void mw_free(mw_t *m)
{
    free(m->ed);
    free(m->nb_start);
    free(m->nb);
    free(m->nbv);
    free(m->nbw2);
    free(m->mate);
    free(m->label);
    free(m->labelend);
    free(m->inblossom);
    free(m->bparent);
    free(m->bbase);
    free(m->bestedge);
    free(m->dual);
    free(m->allow);
    free(m->has_best);
    /* The three per-blossom arrays are allocated separately: any of them
     * may be missing after a failed allocation. */
    for (int32_t b = 0; b < 2 * m->nv; b++) {
        if (m->childs != NULL)
            free(m->childs[b].a);
        if (m->endps != NULL)
            free(m->endps[b].a);
        if (m->bestlist != NULL)
            free(m->bestlist[b].a);
        if (m->leafv != NULL)
            free(m->leafv[b].a);
    }
    free(m->leafv);
    free(m->ldirty);
    free(m->childs);
    free(m->endps);
    free(m->bestlist);
    free(m->unused);
    free(m->bestto);
    free(m->bestsl);
    free(m->tbits);
    free(m->queue.a);
    free(m->roots);
    free(m->seen);
    free(m->besl.a);
    free(m->tlist.a);
    free(m->slist.a);
    free(m->freev);
    free(m->path.a);
    free(m->ntok);
    free(m->rst);
    free(m->pfx.a);
    free(m->ib0);
    free(m->pcand);
    free(m->pslack);
    free(m->ptouch.a);
}

static int cmp_edge(const void *a, const void *b)
{
    const match_edge_t *x = a, *y = b;
    if (x->u != y->u)
        return x->u < y->u ? -1 : 1;
    if (x->v != y->v)
        return x->v < y->v ? -1 : 1;
    if (x->w != y->w)
        return x->w > y->w ? -1 : 1; /* heaviest first */
    return 0;
}

ccs_status_t match_max_weight(int32_t n, const match_edge_t *edges,
                              int32_t nedges, bool max_cardinality,
                              int32_t *mate, ccs_err_t *err)
{
    mw_t m;
    match_edge_t *e = NULL;
    ccs_status_t st = CCS_OK;
    int32_t ne = 0;
    int64_t maxw = 0;
    size_t n2;

    memset(&m, 0, sizeof(m));
    if (n < 0 || nedges < 0 || (nedges > 0 && edges == NULL) ||
        (n > 0 && mate == NULL))
        return ccs_err_set(err, CCS_ERR_INVALID, "match: bad arguments");
    if (n > (1 << 28) || nedges > (1 << 28))
        return ccs_err_set(err, CCS_ERR_INVALID, "match: graph too large");
    for (int32_t k = 0; k < nedges; k++) {
        const match_edge_t *x = &edges[k];
        if (x->u < 0 || x->u >= n || x->v < 0 || x->v >= n)
            return ccs_err_set(err, CCS_ERR_INVALID,
                               "match: edge %d (%d, %d): vertex out of range "
                               "0..%d", k, x->u, x->v, n - 1);
        if (x->u == x->v)
            return ccs_err_set(err, CCS_ERR_INVALID,
                               "match: edge %d is a self-loop on %d", k, x->u);
        if (x->w > MATCH_WEIGHT_MAX || x->w < -MATCH_WEIGHT_MAX)
            return ccs_err_set(err, CCS_ERR_INVALID,
                               "match: edge %d weight %lld out of range", k,
                               (long long)x->w);
    }
    for (int32_t v = 0; v < n; v++)
        mate[v] = -1;
    if (n == 0 || nedges == 0)
        return CCS_OK;

    /* Owned here: a sorted copy, parallel edges reduced to the heaviest. */
    e = malloc((size_t)nedges * sizeof(*e));
    if (e == NULL) {
        st = ccs_err_set(err, CCS_ERR_NOMEM, "match: out of memory");
        goto cleanup;
    }
    for (int32_t k = 0; k < nedges; k++) {
        e[k] = edges[k];
        if (e[k].u > e[k].v) {
            int32_t t = e[k].u;
            e[k].u = e[k].v;
            e[k].v = t;
        }
    }
    {
        /* Callers often pass the edges in order already (StragglAR's
         * rounds do): then the sort is skipped. */
        bool sorted = true;
        for (int32_t k = 1; k < nedges && sorted; k++)
            sorted = cmp_edge(&e[k - 1], &e[k]) <= 0;
        if (!sorted)
            qsort(e, (size_t)nedges, sizeof(*e), cmp_edge);
    }
    for (int32_t k = 0; k < nedges; k++) {
        if (ne > 0 && e[ne - 1].u == e[k].u && e[ne - 1].v == e[k].v)
            continue;
        e[ne++] = e[k];
    }

    /* All owned by m, freed by mw_free at cleanup. */
    m.nv = n;
    m.ne = ne;
    n2 = 2 * (size_t)n;
    m.ed = malloc((size_t)ne * sizeof(*m.ed));
    m.nb_start = calloc((size_t)n + 1, sizeof(*m.nb_start));
    m.nb = malloc(2 * (size_t)ne * sizeof(*m.nb));
    m.nbv = malloc(2 * (size_t)ne * sizeof(*m.nbv));
    m.nbw2 = malloc(2 * (size_t)ne * sizeof(*m.nbw2));
    m.mate = malloc((size_t)n * sizeof(*m.mate));
    m.label = calloc(n2, sizeof(*m.label));
    m.labelend = malloc(n2 * sizeof(*m.labelend));
    m.inblossom = malloc((size_t)n * sizeof(*m.inblossom));
    m.bparent = malloc(n2 * sizeof(*m.bparent));
    m.bbase = malloc(n2 * sizeof(*m.bbase));
    m.bestedge = malloc(n2 * sizeof(*m.bestedge));
    m.dual = calloc(n2, sizeof(*m.dual));
    m.allow = calloc((size_t)ne, 1);
    m.has_best = calloc(n2, 1);
    m.childs = calloc(n2, sizeof(*m.childs));
    m.endps = calloc(n2, sizeof(*m.endps));
    m.bestlist = calloc(n2, sizeof(*m.bestlist));
    m.leafv = calloc(n2, sizeof(*m.leafv));
    m.ldirty = calloc(n2, 1);
    m.unused = malloc((size_t)n * sizeof(*m.unused));
    m.bestto = malloc(n2 * sizeof(*m.bestto));
    m.bestsl = malloc(n2 * sizeof(*m.bestsl));
    m.tbits = calloc((n2 + 63) / 64, sizeof(*m.tbits));
    m.roots = malloc((size_t)n * sizeof(*m.roots));
    m.seen = calloc(n2, 1);
    m.freev = malloc((size_t)n * sizeof(*m.freev));
    m.ntok = malloc(n2 * sizeof(*m.ntok));
    m.rst = calloc(n2, sizeof(*m.rst));
    m.ib0 = malloc((size_t)n * sizeof(*m.ib0));
    m.pcand = malloc(n2 * sizeof(*m.pcand));
    m.pslack = malloc(n2 * sizeof(*m.pslack));
    if (!m.ed || !m.nb_start || !m.nb || !m.nbv ||
        !m.nbw2 || !m.mate || !m.label || !m.labelend || !m.inblossom ||
        !m.bparent || !m.bbase || !m.bestedge || !m.dual || !m.allow ||
        !m.has_best || !m.childs || !m.endps || !m.bestlist || !m.unused ||
        !m.bestto || !m.bestsl || !m.tbits || !m.roots || !m.seen ||
        !m.freev || !m.leafv || !m.ldirty || !m.ntok || !m.rst || !m.ib0 ||
        !m.pcand || !m.pslack) {
        st = ccs_err_set(err, CCS_ERR_NOMEM, "match: out of memory");
        goto cleanup;
    }
    for (int32_t k = 0; k < ne; k++) {
        m.ed[k].uv[0] = e[k].u;
        m.ed[k].uv[1] = e[k].v;
        m.ed[k].ww = 4 * e[k].w;
        maxw = 2 * e[k].w > maxw ? 2 * e[k].w : maxw;
        m.nb_start[e[k].u + 1]++;
        m.nb_start[e[k].v + 1]++;
    }
    for (int32_t v = 0; v < n; v++)
        m.nb_start[v + 1] += m.nb_start[v];
    {
        /* Fill the CSR with a moving cursor per vertex (reuses bestto). */
        int32_t *cur = m.bestto;
        for (int32_t v = 0; v < n; v++)
            cur[v] = m.nb_start[v];
        for (int32_t k = 0; k < ne; k++) {
            int32_t a = cur[e[k].u]++, b = cur[e[k].v]++;
            m.nb[a] = 2 * k + 1;
            m.nbv[a] = e[k].v;
            m.nbw2[a] = m.ed[k].ww;
            m.nb[b] = 2 * k;
            m.nbv[b] = e[k].u;
            m.nbw2[b] = m.ed[k].ww;
        }
    }
    for (size_t b = 0; b < n2; b++) {
        m.labelend[b] = -1;
        m.bparent[b] = -1;
        m.bbase[b] = b < (size_t)n ? (int32_t)b : -1;
        m.bestedge[b] = -1;
        m.bestto[b] = -1;
        m.ntok[b] = -1;
        m.pcand[b] = -1;
        m.dual[b] = b < (size_t)n ? maxw : 0;
    }
    for (int32_t v = 0; v < n; v++) {
        m.mate[v] = -1;
        m.inblossom[v] = v;
        m.unused[v] = 2 * n - 1 - v;
        m.freev[v] = v;
    }
    m.nfree = n;
    m.nunused = n;

    if (!solve(&m, max_cardinality)) {
        st = ccs_err_set(err, CCS_ERR_NOMEM, "match: out of memory");
        goto cleanup;
    }
    for (int32_t v = 0; v < n; v++)
        mate[v] = m.mate[v] >= 0 ? endpoint(&m, m.mate[v]) : -1;

cleanup:
    mw_free(&m);
    free(e);
    return st;
}

int64_t match_weight(int32_t n, const match_edge_t *edges, int32_t nedges,
                     const int32_t *mate)
{
    int64_t total = 0;

    /* For each matched pair, the heaviest edge between the two counts. */
    for (int32_t v = 0; v < n; v++) {
        int32_t u = mate[v];
        bool found = false;
        int64_t best = 0;
        if (u < 0 || u < v)
            continue;
        for (int32_t k = 0; k < nedges; k++) {
            if ((edges[k].u == v && edges[k].v == u) ||
                (edges[k].u == u && edges[k].v == v)) {
                if (!found || edges[k].w > best)
                    best = edges[k].w;
                found = true;
            }
        }
        total += best;
    }
    return total;
}
