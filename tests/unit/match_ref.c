/*
 * match_ref.c - the blossom matcher as it was before its speed changes
 * (the same primal-dual method as synth/algo/match.c, scanning every
 * vertex and blossom id at each step and walking the blossoms' children
 * for their leaves), kept as the reference that test_match compares the
 * current matcher against: both must return the same matching on every
 * graph (the StragglAR plans depend on which optimum is returned among
 * equal ones).  Included by test_match.c only; everything is static.
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
    int32_t *eu, *ev;       /* [ne] endpoints (deduplicated) */
    int64_t *ew;            /* [ne] doubled weights */
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
    int32_t *unused;        /* [nv] free blossom ids */
    int32_t nunused;
    int32_t *bestto;        /* [2nv] scratch of add_blossom */
    uint64_t *tbits;        /* [2nv / 64] its entries set (add_blossom) */
    ivec_t queue;           /* S-vertices to scan */
    ivec_t scratch;         /* leaves of one blossom */
    ivec_t path;            /* blossoms marked by scan_blossom */
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
    return (p & 1) ? m->ev[p >> 1] : m->eu[p >> 1];
}

static inline int64_t slack(const mw_t *m, int32_t k)
{
    return m->dual[m->eu[k]] + m->dual[m->ev[k]] - 2 * m->ew[k];
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

/* Append the vertices inside blossom b to out. */
static void leaves_blossom(mw_t *m, int32_t b, ivec_t *out);

/* A vertex (the common case) is pushed inline; blossoms recurse. */
static inline void leaves(mw_t *m, int32_t b, ivec_t *out)
{
    if (b < m->nv)
        iv_push(m, out, b);
    else
        leaves_blossom(m, b, out);
}

static void leaves_blossom(mw_t *m, int32_t b, ivec_t *out)
{
    if (b < m->nv) {
        iv_push(m, out, b);
        return;
    }
    for (int32_t i = 0; i < m->childs[b].len; i++)
        leaves(m, m->childs[b].a[i], out);
}

/* Label the top-level blossom of w with t (1 = S, 2 = T) through endpoint
 * p; a T-blossom's mate becomes S in turn. */
static void assign_label(mw_t *m, int32_t w, int32_t t, int32_t p)
{
    for (;;) {
        int32_t b = m->inblossom[w];
        m->label[w] = m->label[b] = t;
        m->labelend[w] = m->labelend[b] = p;
        m->bestedge[w] = m->bestedge[b] = -1;
        if (t == 1) {
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

static void consider_best(mw_t *m, int32_t b, int32_t k)
{
    int32_t i = m->eu[k], j = m->ev[k], bj;

    if (m->inblossom[j] == b) {
        j = i;
    }
    bj = m->inblossom[j];
    if (bj != b && m->label[bj] == 1 &&
        (m->bestto[bj] == -1 || slack(m, k) < slack(m, m->bestto[bj]))) {
        m->bestto[bj] = k;
        m->tbits[bj >> 6] |= UINT64_C(1) << (bj & 63);
    }
}

/* Shrink the cycle closed by edge k through base into a new S-blossom. */
static void add_blossom(mw_t *m, int32_t base, int32_t k)
{
    int32_t v = m->eu[k], w = m->ev[k];
    int32_t bb = m->inblossom[base];
    int32_t bv = m->inblossom[v], bw = m->inblossom[w];
    int32_t b = m->unused[--m->nunused];
    ivec_t *ch = &m->childs[b], *ep = &m->endps[b];

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
    m->labelend[b] = m->labelend[bb];
    m->dual[b] = 0;
    m->scratch.len = 0;
    leaves(m, b, &m->scratch);
    for (int32_t i = 0; i < m->scratch.len && !m->oom; i++) {
        int32_t x = m->scratch.a[i];
        if (m->label[m->inblossom[x]] == 2)
            iv_push(m, &m->queue, x); /* former T-vertices become S */
        m->inblossom[x] = b;
    }
    /* Least-slack edges from the new blossom to each other S-blossom. */
    for (int32_t c = 0; c < ch->len && !m->oom; c++) {
        int32_t sub = ch->a[c];
        if (!m->has_best[sub]) {
            m->scratch.len = 0;
            leaves(m, sub, &m->scratch);
            for (int32_t i = 0; i < m->scratch.len; i++) {
                int32_t x = m->scratch.a[i];
                for (int32_t q = m->nb_start[x]; q < m->nb_start[x + 1]; q++)
                    consider_best(m, b, m->nb[q] >> 1);
            }
        } else {
            for (int32_t i = 0; i < m->bestlist[sub].len; i++)
                consider_best(m, b, m->bestlist[sub].a[i]);
        }
        m->has_best[sub] = 0;
        m->bestlist[sub].len = 0;
        m->bestedge[sub] = -1;
    }
    m->bestlist[b].len = 0;
    m->has_best[b] = 1;
    m->bestedge[b] = -1;
    /* The blossoms consider_best touched, in increasing id, from the
     * bitset (a scan of all 2n bestto entries per new blossom cost about
     * a tenth of StragglAR's planning: hundreds of blossoms per matching). */
    for (int32_t wi = 0; wi < (2 * m->nv + 63) / 64; wi++) {
        uint64_t bits = m->tbits[wi];
        m->tbits[wi] = 0;
        while (bits) {
            int32_t x = wi * 64 + __builtin_ctzll(bits), e = m->bestto[x];
            bits &= bits - 1;
            m->bestto[x] = -1;
            iv_push(m, &m->bestlist[b], e);
            if (m->bestedge[b] == -1 ||
                slack(m, e) < slack(m, m->bestedge[b]))
                m->bestedge[b] = e;
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
            m->scratch.len = 0;
            leaves(m, s, &m->scratch);
            for (int32_t q = 0; q < m->scratch.len; q++)
                m->inblossom[m->scratch.a[q]] = s;
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
        m->labelend[endpoint(m, p ^ 1)] = m->labelend[bv] = p;
        m->bestedge[bv] = -1;
        j += jstep;
        /* Children on the odd path lose their labels unless reachable. */
        while (ch->a[wrap(j, len)] != entry) {
            int32_t found = -1;
            bv = ch->a[wrap(j, len)];
            if (m->label[bv] == 1) {
                j += jstep;
                continue;
            }
            m->scratch.len = 0;
            leaves(m, bv, &m->scratch);
            for (int32_t q = 0; q < m->scratch.len; q++) {
                if (m->label[m->scratch.a[q]] != 0) {
                    found = m->scratch.a[q];
                    break;
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
    m->bestedge[b] = -1;
    m->unused[m->nunused++] = b;
}

/* Swap matched and unmatched edges on the path inside b from vertex v to
 * the base, making v the new base. */
static void augment_blossom(mw_t *m, int32_t b, int32_t v)
{
    ivec_t *ch = &m->childs[b], *ep = &m->endps[b];
    int32_t t = v, i, j, jstep, trick, len = ch->len;

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
        int32_t s = side ? m->ev[k] : m->eu[k];
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

/* Scan the queue; returns true after an augmentation. */
static bool grow_trees(mw_t *m)
{
    while (m->queue.len > 0 && !m->oom) {
        int32_t v = m->queue.a[--m->queue.len];
        int64_t dv = m->dual[v]; /* duals change only between scans */
        for (int32_t q = m->nb_start[v]; q < m->nb_start[v + 1]; q++) {
            int32_t p = m->nb[q], k = p >> 1, w = m->nbv[q];
            int64_t ks = 0;
            if (m->inblossom[v] == m->inblossom[w])
                continue;
            if (!m->allow[k]) {
                ks = dv + m->dual[w] - m->nbw2[q];
                if (ks <= 0)
                    m->allow[k] = 1;
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
                    m->bestedge[b] = k;
            } else if (m->label[w] == 0) {
                if (m->bestedge[w] == -1 || ks < slack(m, m->bestedge[w]))
                    m->bestedge[w] = k;
            }
        }
    }
    return false;
}

/* Run the stages.  Returns false on allocation failure. */
static bool solve(mw_t *m, bool maxcard)
{
    int32_t nv = m->nv;

    for (int32_t stage = 0; stage < nv; stage++) {
        bool augmented = false;

        memset(m->label, 0, 2 * (size_t)nv * sizeof(*m->label));
        memset(m->bestedge, 0xff, 2 * (size_t)nv * sizeof(*m->bestedge));
        memset(m->has_best + nv, 0, (size_t)nv);
        for (int32_t b = nv; b < 2 * nv; b++)
            m->bestlist[b].len = 0;
        memset(m->allow, 0, (size_t)m->ne);
        m->queue.len = 0;
        for (int32_t v = 0; v < nv; v++) {
            if (m->mate[v] == -1 && m->label[m->inblossom[v]] == 0)
                assign_label(m, v, 1, -1);
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
            if (!maxcard) {
                type = 1;
                delta = m->dual[0];
                for (int32_t v = 1; v < nv; v++)
                    delta = m->dual[v] < delta ? m->dual[v] : delta;
            }
            for (int32_t v = 0; v < nv; v++) {
                if (m->label[m->inblossom[v]] == 0 && m->bestedge[v] != -1) {
                    int64_t d = slack(m, m->bestedge[v]);
                    if (type == -1 || d < delta) {
                        delta = d;
                        type = 2;
                        dedge = m->bestedge[v];
                    }
                }
            }
            for (int32_t b = 0; b < 2 * nv; b++) {
                if (m->bparent[b] == -1 && m->label[b] == 1 &&
                    m->bestedge[b] != -1) {
                    int64_t d = slack(m, m->bestedge[b]) / 2;
                    if (type == -1 || d < delta) {
                        delta = d;
                        type = 3;
                        dedge = m->bestedge[b];
                    }
                }
            }
            for (int32_t b = nv; b < 2 * nv; b++) {
                if (m->bbase[b] >= 0 && m->bparent[b] == -1 &&
                    m->label[b] == 2 && (type == -1 || m->dual[b] < delta)) {
                    delta = m->dual[b];
                    type = 4;
                    dblossom = b;
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
            if (type == 1) {
                break;
            } else if (type == 2 || type == 3) {
                int32_t i = m->eu[dedge];
                m->allow[dedge] = 1;
                if (m->label[m->inblossom[i]] != 1)
                    i = m->ev[dedge];
                iv_push(m, &m->queue, i);
            } else {
                expand_blossom(m, dblossom, false);
            }
            if (m->oom)
                return false;
        }
        if (!augmented)
            break;
        /* S-blossoms whose dual dropped to 0 are no longer needed. */
        for (int32_t b = nv; b < 2 * nv; b++) {
            if (m->bparent[b] == -1 && m->bbase[b] >= 0 &&
                m->label[b] == 1 && m->dual[b] == 0)
                expand_blossom(m, b, true);
        }
        if (m->oom)
            return false;
    }
    return true;
}

static void mw_free(mw_t *m)
{
    free(m->eu);
    free(m->ev);
    free(m->ew);
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
    }
    free(m->childs);
    free(m->endps);
    free(m->bestlist);
    free(m->unused);
    free(m->bestto);
    free(m->tbits);
    free(m->queue.a);
    free(m->scratch.a);
    free(m->path.a);
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

static ccs_status_t match_ref_max_weight(int32_t n,
                                         const match_edge_t *edges,
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
    qsort(e, (size_t)nedges, sizeof(*e), cmp_edge);
    for (int32_t k = 0; k < nedges; k++) {
        if (ne > 0 && e[ne - 1].u == e[k].u && e[ne - 1].v == e[k].v)
            continue;
        e[ne++] = e[k];
    }

    /* All owned by m, freed by mw_free at cleanup. */
    m.nv = n;
    m.ne = ne;
    n2 = 2 * (size_t)n;
    m.eu = malloc((size_t)ne * sizeof(*m.eu));
    m.ev = malloc((size_t)ne * sizeof(*m.ev));
    m.ew = malloc((size_t)ne * sizeof(*m.ew));
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
    m.unused = malloc((size_t)n * sizeof(*m.unused));
    m.bestto = malloc(n2 * sizeof(*m.bestto));
    m.tbits = calloc((n2 + 63) / 64, sizeof(*m.tbits));
    if (!m.eu || !m.ev || !m.ew || !m.nb_start || !m.nb || !m.nbv ||
        !m.nbw2 || !m.mate || !m.label || !m.labelend || !m.inblossom ||
        !m.bparent || !m.bbase || !m.bestedge || !m.dual || !m.allow ||
        !m.has_best || !m.childs || !m.endps || !m.bestlist || !m.unused ||
        !m.bestto || !m.tbits) {
        st = ccs_err_set(err, CCS_ERR_NOMEM, "match: out of memory");
        goto cleanup;
    }
    for (int32_t k = 0; k < ne; k++) {
        m.eu[k] = e[k].u;
        m.ev[k] = e[k].v;
        m.ew[k] = 2 * e[k].w;
        maxw = m.ew[k] > maxw ? m.ew[k] : maxw;
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
            int32_t a = cur[m.eu[k]]++, b = cur[m.ev[k]]++;
            m.nb[a] = 2 * k + 1;
            m.nbv[a] = m.ev[k];
            m.nbw2[a] = 2 * m.ew[k];
            m.nb[b] = 2 * k;
            m.nbv[b] = m.eu[k];
            m.nbw2[b] = 2 * m.ew[k];
        }
    }
    for (size_t b = 0; b < n2; b++) {
        m.labelend[b] = -1;
        m.bparent[b] = -1;
        m.bbase[b] = b < (size_t)n ? (int32_t)b : -1;
        m.bestedge[b] = -1;
        m.bestto[b] = -1;
        m.dual[b] = b < (size_t)n ? maxw : 0;
    }
    for (int32_t v = 0; v < n; v++) {
        m.mate[v] = -1;
        m.inblossom[v] = v;
        m.unused[v] = 2 * n - 1 - v;
    }
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
