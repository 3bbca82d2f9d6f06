/*
 * algo_multitree.c - MultiTree all-gather, reduce-scatter and allreduce
 * (Huang et al., ISCA'21, section III, Algorithm 1 lines 15-18; the trees
 * come from mtree.c: lines 1-14, III-C3 switched networks, VII-B wide
 * links).
 *
 * All-gather: tree r broadcasts rank r's block; a rank that joined tree r
 * at step t receives it from its parent in step t (T steps).
 * Reduce-scatter: the same trees reversed in time (the edge of all-gather
 * step t carries the child's partial sum up in transfer step T - t, 0-based)
 * with partial sums reduced on arrival.  Because the IR writes a chunk at
 * most once per step, partials that reach a rank together are merged over
 * the following steps, and where a rank must send before it could merge,
 * local-only merge steps (no link traffic) are inserted: T transfer steps
 * plus a few merge steps (torus 8x8: 17 + 6).  Allreduce is reduce-scatter
 * then all-gather: 2T transfer steps.
 *
 * Chunks: C = n * P (P = --pipeline, or --chunks / n); tree r carries
 * chunks [rP, rP + P), sub-chunk j moving j steps after sub-chunk 0.
 *
 * The trees come back in the report (algo_report_t.trees), for the caller
 * to draw as Graphviz DOT (mtree_write_dot) with the switches of each
 * route; a .ccs file keeps
 * only the steps, from which `ccsynth show --dot` reads the trees back
 * (mtree_sched.c relies on the layout described here).
 *
 * Alpha-beta cost (S bytes, n ranks, unit links of bandwidth 1/beta each
 * carrying at most one block per transfer step): all-gather and
 * reduce-scatter T * (alpha + S/n * beta), allreduce 2T * (alpha + S/n *
 * beta); T >= ceil((n - 1) / in-degree), e.g. T = 5 on a 4x4 torus and 17
 * on 8x8 against ring's n - 1.
 */
#include <stdlib.h>
#include <string.h>

#include "algo.h"
#include "mtree.h"

static ccs_status_t multitree_check(const topo_t *t, const algo_params_t *p,
                                    ccs_err_t *err)
{
    uint32_t n = (uint32_t)t->ngpus;

    if (p->nchunks > 0 && p->nchunks % n != 0)
        return ccs_err_set(err, CCS_ERR_UNSUPPORTED, "multitree: --chunks "
                           "%u is not a multiple of the %u ranks (one "
                           "block per tree)", p->nchunks, n);
    if (p->nchunks > 0 && p->pipeline > 1 && p->nchunks != n * p->pipeline)
        return ccs_err_set(err, CCS_ERR_UNSUPPORTED, "multitree: --chunks "
                           "%u disagrees with --pipeline %u (%u ranks)",
                           p->nchunks, p->pipeline, n);
    if ((uint64_t)n * (n - 1) > 64u * 1024u * 1024u)
        return ccs_err_set(err, CCS_ERR_UNSUPPORTED, "multitree: %u ranks "
                           "make %u trees of %u ranks: too many", n, n, n);
    return CCS_OK;
}

/* Emission state. */
typedef struct emit {
    ccs_sched_t *s;
    const mtree_t *m;
    uint32_t n, P, T;        /* ranks, sub-chunks per tree, tree steps */
    bool allreduce;
    /* [n] when not NULL: the ops are only counted per rank, nothing is
     * added (build_multitree reserves each rank's stream from the counts
     * before the real pass, which then never reallocates) */
    uint32_t *count;
} emit_t;

/* The schedule calls of the emission, or their op counts (emit_t.count). */
static ccs_status_t put_xfer(const emit_t *e, uint32_t step, uint32_t src,
                             ccs_buf_t sbuf, uint32_t schunk, uint32_t dst,
                             ccs_buf_t dbuf, uint32_t dchunk, bool reduce,
                             ccs_err_t *err)
{
    if (e->count != NULL) {
        e->count[src]++;
        e->count[dst]++;
        return CCS_OK;
    }
    return ccs_sched_xfer(e->s, step, src, sbuf, schunk, dst, dbuf, dchunk,
                          1, reduce, err);
}

static ccs_status_t put_xfer_reduce_from(const emit_t *e, uint32_t step,
                                         uint32_t src, ccs_buf_t sbuf,
                                         uint32_t schunk, uint32_t dst,
                                         ccs_buf_t dbuf, uint32_t dchunk,
                                         ccs_buf_t obuf, uint32_t ochunk,
                                         ccs_err_t *err)
{
    if (e->count != NULL) {
        e->count[src]++;
        e->count[dst]++;
        return CCS_OK;
    }
    return ccs_sched_xfer_reduce_from(e->s, step, src, sbuf, schunk, dst,
                                      dbuf, dchunk, obuf, ochunk, 1, err);
}

static ccs_status_t put_local(const emit_t *e, uint32_t step, uint32_t rank,
                              ccs_buf_t dbuf, uint32_t dchunk, ccs_buf_t sbuf,
                              uint32_t schunk, uint32_t n, bool reduce,
                              ccs_err_t *err)
{
    if (e->count != NULL) {
        e->count[rank]++;
        return CCS_OK;
    }
    return ccs_sched_local(e->s, step, rank, dbuf, dchunk, sbuf, schunk, n,
                           reduce, err);
}

/* All-gather from step base: roots send their block (IN for allgather, OUT
 * after the reduce-scatter for allreduce); others forward from OUT. */
static ccs_status_t emit_allgather(const emit_t *e, uint32_t base,
                                   ccs_err_t *err)
{
    const mtree_t *m = e->m;
    ccs_status_t st;

    for (uint32_t r = 0; r < e->n; r++) {
        uint32_t c0 = r * e->P;
        if (!e->allreduce) {
            st = put_local(e, base, r, CCS_BUF_OUT, c0, CCS_BUF_IN, c0,
                           e->P, false, err);
            if (st != CCS_OK)
                return st;
        }
        for (uint32_t i = 0; i + 1 < e->n; i++) {
            const mtree_edge_t *ed = &m->edges[(size_t)r * (e->n - 1) + i];
            ccs_buf_t sb = (ed->parent == (int32_t)r && !e->allreduce)
                               ? CCS_BUF_IN : CCS_BUF_OUT;
            for (uint32_t j = 0; j < e->P; j++) {
                st = put_xfer(e, base + (uint32_t)ed->step - 1 + j,
                              (uint32_t)ed->parent, sb, c0 + j,
                              (uint32_t)ed->child, CCS_BUF_OUT, c0 + j,
                              false, err);
                if (st != CCS_OK)
                    return st;
            }
        }
    }
    return CCS_OK;
}

/* ---- reduce-scatter: the all-gather trees reversed ----
 *
 * The edge that carried block r to child c in all-gather step t carries
 * c's partial sum of block r back to its parent in transfer step T - t
 * (0-based).  A rank may get several partials of one block in one step
 * (the all-gather fans out); the IR writes a chunk once per step, so they
 * are merged over the following steps (mtree_merge_step): arrivals merge
 * into distinct held partials with RECV_REDUCE, held partials merge
 * pairwise with REDUCE_LOCAL, extra arrivals land in SCRATCH.  When some
 * rank must send (or a root must finish) while still holding several
 * partials, local-only "merge steps" are inserted before that transfer
 * step; each halves every pending count.  They move no data over links. */

typedef struct rs_plan {
    uint32_t *ir;       /* [T + 1] IR step of transfer step s; ir[T] = the
                           reduce-scatter's step count (one sub-chunk) */
    uint32_t nmerge;    /* merge-only steps inserted */
    uint32_t *by_s;     /* all edges, bucketed by transfer step */
    uint32_t *s_start;  /* [T + 1] bucket starts */
} rs_plan_t;

/* Leaves *pl empty, so a second call (the builder's cleanup after
 * rs_plan_make failed and freed) is harmless. */
static void rs_plan_free(rs_plan_t *pl)
{
    free(pl->ir);
    free(pl->by_s);
    free(pl->s_start);
    memset(pl, 0, sizeof(*pl));
}

static ccs_status_t rs_plan_make(const mtree_t *m, rs_plan_t *pl,
                                 ccs_err_t *err)
{
    uint32_t n = (uint32_t)m->nranks, T = (uint32_t)m->nsteps;
    size_t ne = (size_t)n * (n - 1), nn = (size_t)n * n;
    int32_t *h = malloc(sizeof(*h) * nn);         /* partials held */
    int32_t *cnt = calloc(nn, sizeof(*cnt));      /* arrivals this step */
    uint32_t *pend = malloc(sizeof(*pend) * nn);  /* pairs with h > 1 */
    bool *inpend = calloc(nn, sizeof(*inpend));
    uint32_t *touched = malloc(sizeof(*touched) * (ne ? ne : 1));
    uint32_t npend = 0, next = 0;                 /* all five owned here */
    ccs_status_t st = CCS_OK;

    memset(pl, 0, sizeof(*pl));
    pl->ir = calloc((size_t)T + 1, sizeof(*pl->ir));
    pl->by_s = malloc(sizeof(*pl->by_s) * (ne ? ne : 1));
    pl->s_start = calloc((size_t)T + 2, sizeof(*pl->s_start));
    if (!h || !cnt || !pend || !inpend || !touched || !pl->ir || !pl->by_s ||
        !pl->s_start) {
        st = ccs_err_set(err, CCS_ERR_NOMEM, "multitree: out of memory");
        goto cleanup;
    }
    for (size_t i = 0; i < nn; i++)
        h[i] = 1;
    /* Bucket edges by transfer step T - step (counting sort, stable). */
    for (size_t e = 0; e < ne; e++)
        pl->s_start[T - (uint32_t)m->edges[e].step + 1]++;
    for (uint32_t s = 0; s < T; s++)
        pl->s_start[s + 1] += pl->s_start[s];
    {
        uint32_t *pos = touched;   /* borrowed as a cursor array: T <= ne */
        memcpy(pos, pl->s_start, sizeof(*pos) * T);
        for (size_t e = 0; e < ne; e++)
            pl->by_s[pos[T - (uint32_t)m->edges[e].step]++] = (uint32_t)e;
    }
    for (uint32_t s = 0; s <= T; s++) {
        int32_t need = 1;
        uint32_t nt = 0;

        if (s < T) {
            for (uint32_t i = pl->s_start[s]; i < pl->s_start[s + 1]; i++) {
                uint32_t e = pl->by_s[i], r = e / (n - 1);
                int32_t v = h[(size_t)r * n + (uint32_t)m->edges[e].child];
                need = v > need ? v : need;
            }
        } else {
            for (uint32_t r = 0; r < n; r++)
                need = h[(size_t)r * n + r] > need ? h[(size_t)r * n + r]
                                                   : need;
        }
        while (need > 1) {          /* a merge-only step */
            uint32_t k = 0;
            need = (need + 1) / 2;
            next++;
            pl->nmerge++;
            for (uint32_t i = 0; i < npend; i++) {
                uint32_t x = pend[i];
                h[x] = mtree_merge_step(h[x], 0);
                if (h[x] > 1)
                    pend[k++] = x;
                else
                    inpend[x] = false;
            }
            npend = k;
        }
        if (s == T)
            break;
        pl->ir[s] = next++;
        for (uint32_t i = pl->s_start[s]; i < pl->s_start[s + 1]; i++) {
            uint32_t e = pl->by_s[i], r = e / (n - 1);
            uint32_t x = r * n + (uint32_t)m->edges[e].parent;
            if (cnt[x]++ == 0)
                touched[nt++] = x;
        }
        /* Held partials without arrivals merge pairwise in this step. */
        for (uint32_t i = 0; i < npend; i++) {
            uint32_t x = pend[i];
            if (cnt[x] == 0)
                h[x] = mtree_merge_step(h[x], 0);
        }
        for (uint32_t i = 0; i < nt; i++) {
            uint32_t x = touched[i];
            h[x] = mtree_merge_step(h[x], cnt[x]);
            cnt[x] = 0;
            if (h[x] > 1 && !inpend[x]) {
                inpend[x] = true;
                pend[npend++] = x;
            }
        }
        {
            uint32_t k = 0;
            for (uint32_t i = 0; i < npend; i++) {
                if (h[pend[i]] > 1)
                    pend[k++] = pend[i];
                else
                    inpend[pend[i]] = false;
            }
            npend = k;
        }
    }
    pl->ir[T] = next;

cleanup:
    free(h);
    free(cnt);
    free(pend);
    free(inpend);
    free(touched);
    if (st != CCS_OK)
        rs_plan_free(pl);
    return st;
}

/* A place holding a partial sum: buffer and first chunk (sub-chunk j is
 * at base + j). */
typedef struct loc {
    uint8_t buf;
    uint32_t base;
} loc_t;

/* OUT first (the root's result must end there), then SCRATCH, IN last (it
 * is read-only, so it is only ever a source). */
static int loc_rank(loc_t l)
{
    return l.buf == CCS_BUF_OUT ? 0 : l.buf == CCS_BUF_SCRATCH ? 1 : 2;
}

static void loc_sort(loc_t *l, uint32_t k)
{
    for (uint32_t i = 1; i < k; i++) {
        loc_t x = l[i];
        uint32_t j = i;
        while (j > 0 && (loc_rank(l[j - 1]) > loc_rank(x) ||
                         (loc_rank(l[j - 1]) == loc_rank(x) &&
                          l[j - 1].base > x.base))) {
            l[j] = l[j - 1];
            j--;
        }
        l[j] = x;
    }
}

/* Per-tree emission state; arrays owned by emit_reducescatter. */
typedef struct rs_tree {
    uint32_t *kids;      /* [n - 1] child edges grouped by parent */
    uint32_t *kstart;    /* [n + 1] */
    uint32_t *kpos;      /* [n] fill cursors */
    loc_t *fin;          /* [n] where each rank's final partial is */
    loc_t *held, *nheld; /* [n] partials held now / after the step */
    loc_t *freed, *avail;/* [n] scratch freed this step / reusable */
    uint32_t *nslot;     /* [n] scratch chunks used per rank (all trees) */
} rs_tree_t;

/* A fresh writable place for rank p's partial of tree r. */
static loc_t rs_fresh(const emit_t *e, rs_tree_t *w, uint32_t r, uint32_t p,
                      bool out_free, uint32_t *navail)
{
    loc_t l;

    if (out_free && (p == r || e->allreduce)) {
        l.buf = CCS_BUF_OUT;
        l.base = r * e->P;
    } else if (*navail > 0) {
        l = w->avail[--*navail];
    } else {
        l.buf = CCS_BUF_SCRATCH;
        l.base = w->nslot[p];
        w->nslot[p] += e->P;
    }
    return l;
}

/* Emit rank p's receives and merges for tree r; its children's final
 * places are in w->fin.  Leaves p's final place in w->fin[p]. */
static ccs_status_t rs_node(const emit_t *e, const rs_plan_t *pl,
                            rs_tree_t *w, uint32_t r, uint32_t p,
                            ccs_err_t *err)
{
    const mtree_t *m = e->m;
    uint32_t n = e->n, T = e->T, c0 = r * e->P;
    uint32_t a = w->kstart[p], aend = w->kstart[p + 1];
    uint32_t nh = 1, navail = 0, end, j;
    ccs_status_t st = CCS_OK;

    w->held[0] = (loc_t){ CCS_BUF_IN, c0 };
    if (a == aend) {                      /* leaf: sends its input */
        w->fin[p] = w->held[0];
        return CCS_OK;
    }
    end = p == r ? pl->ir[T]
                 : pl->ir[T - (uint32_t)m->join_step[(size_t)r * n + p]];
    j = pl->ir[T - (uint32_t)m->edges[w->kids[a]].step];
    while (j < end && (a < aend || nh > 1)) {
        uint32_t a0 = a, na, k, nn = 0, nf = 0;
        bool out_free = true;

        while (a < aend &&
               pl->ir[T - (uint32_t)m->edges[w->kids[a]].step] == j)
            a++;
        na = a - a0;
        if (na == 0 && nh == 1) {         /* nothing to do until next */
            j = pl->ir[T - (uint32_t)m->edges[w->kids[a]].step];
            continue;
        }
        for (uint32_t i = 0; i < nh; i++)
            out_free = out_free && w->held[i].buf != CCS_BUF_OUT;
        k = na < nh ? na : nh;
        for (uint32_t i = 0; i < na; i++) {
            const mtree_edge_t *ed = &m->edges[w->kids[a0 + i]];
            loc_t src = w->fin[ed->child], dst;
            bool from_in = false, reduce = true;

            if (i < k && w->held[i].buf != CCS_BUF_IN) {
                dst = w->held[i];
            } else {
                from_in = i < k;           /* merge with IN into new */
                reduce = from_in;
                dst = rs_fresh(e, w, r, p, out_free, &navail);
                out_free = out_free && dst.buf != CCS_BUF_OUT;
            }
            w->nheld[nn++] = dst;
            for (uint32_t jj = 0; jj < e->P; jj++) {
                if (from_in)
                    st = put_xfer_reduce_from(
                        e, j + jj, (uint32_t)ed->child, src.buf,
                        src.base + jj, p, dst.buf, dst.base + jj,
                        CCS_BUF_IN, c0 + jj, err);
                else
                    st = put_xfer(e, j + jj, (uint32_t)ed->child, src.buf,
                                  src.base + jj, p, dst.buf, dst.base + jj,
                                  reduce, err);
                if (st != CCS_OK)
                    return st;
            }
        }
        /* Held partials without an arrival merge pairwise; IN is last, so
         * it is never a destination. */
        for (uint32_t i = k; i < nh; i += 2) {
            if (i + 1 == nh) {
                w->nheld[nn++] = w->held[i];
                break;
            }
            for (uint32_t jj = 0; jj < e->P; jj++) {
                st = put_local(e, j + jj, p, w->held[i].buf,
                               w->held[i].base + jj, w->held[i + 1].buf,
                               w->held[i + 1].base + jj, 1, true, err);
                if (st != CCS_OK)
                    return st;
            }
            w->nheld[nn++] = w->held[i];
            if (w->held[i + 1].buf == CCS_BUF_SCRATCH)
                w->freed[nf++] = w->held[i + 1];
        }
        /* Freed places are reusable from the next step on. */
        for (uint32_t i = 0; i < nf; i++)
            w->avail[navail++] = w->freed[i];
        memcpy(w->held, w->nheld, sizeof(loc_t) * nn);
        nh = nn;
        loc_sort(w->held, nh);
        j++;
    }
    if (nh != 1 || a != aend || (p == r && w->held[0].buf != CCS_BUF_OUT))
        return ccs_err_set(err, CCS_ERR_INTERNAL, "multitree: tree %u rank "
                           "%u: %u partial sums left at its send step", r, p,
                           nh);
    w->fin[p] = w->held[0];
    return CCS_OK;
}

static ccs_status_t emit_reducescatter(const emit_t *e, const rs_plan_t *pl,
                                       ccs_err_t *err)
{
    const mtree_t *m = e->m;
    uint32_t n = e->n;
    rs_tree_t w;
    ccs_status_t st = CCS_OK;

    w.kids = malloc(sizeof(*w.kids) * n);
    w.kstart = malloc(sizeof(*w.kstart) * (n + 1));
    w.kpos = malloc(sizeof(*w.kpos) * n);
    w.fin = malloc(sizeof(*w.fin) * n);
    w.held = malloc(sizeof(*w.held) * (n + 1));
    w.nheld = malloc(sizeof(*w.nheld) * (n + 1));
    w.freed = malloc(sizeof(*w.freed) * (n + 1));
    w.avail = malloc(sizeof(*w.avail) * (2 * n + 2));
    w.nslot = calloc(n, sizeof(*w.nslot));
    if (!w.kids || !w.kstart || !w.kpos || !w.fin || !w.held || !w.nheld ||
        !w.freed || !w.avail || !w.nslot) {
        st = ccs_err_set(err, CCS_ERR_NOMEM, "multitree: out of memory");
        goto cleanup;
    }
    for (uint32_t r = 0; r < n && st == CCS_OK; r++) {
        const mtree_edge_t *ed = &m->edges[(size_t)r * (n - 1)];
        /* Children grouped by parent, in reduce-scatter order (reverse
         * addition order = non-decreasing transfer step). */
        memset(w.kstart, 0, sizeof(*w.kstart) * (n + 1));
        for (uint32_t i = 0; i + 1 < n; i++)
            w.kstart[ed[i].parent + 1]++;
        for (uint32_t v = 0; v < n; v++)
            w.kstart[v + 1] += w.kstart[v];
        memcpy(w.kpos, w.kstart, sizeof(*w.kpos) * n);
        for (uint32_t i = n - 1; i-- > 0;)
            w.kids[w.kpos[ed[i].parent]++] = (uint32_t)r * (n - 1) + i;
        /* Deepest ranks first: reverse join order, the root last. */
        for (uint32_t i = n - 1; i-- > 0 && st == CCS_OK;)
            st = rs_node(e, pl, &w, r, (uint32_t)ed[i].child, err);
        if (st == CCS_OK)
            st = rs_node(e, pl, &w, r, r, err);
    }

cleanup:
    free(w.kids);
    free(w.kstart);
    free(w.kpos);
    free(w.fin);
    free(w.held);
    free(w.nheld);
    free(w.freed);
    free(w.avail);
    free(w.nslot);
    return st;
}

/* The collective's ops (or their counts, emit_t.count). */
static ccs_status_t emit_all(const emit_t *e, ccs_coll_t coll,
                             const rs_plan_t *pl, uint32_t rs_span,
                             ccs_err_t *err)
{
    ccs_status_t st;

    switch (coll) {
    case CCS_COLL_ALLGATHER:
        return emit_allgather(e, 0, err);
    case CCS_COLL_REDUCESCATTER:
        return emit_reducescatter(e, pl, err);
    case CCS_COLL_ALLREDUCE:
        st = emit_reducescatter(e, pl, err);
        if (st == CCS_OK)
            st = emit_allgather(e, rs_span, err);
        return st;
    default:
        return ccs_err_set(err, CCS_ERR_UNSUPPORTED, "multitree: %s is not "
                           "implemented", ccs_coll_str(coll));
    }
}

static ccs_status_t build_multitree(const topo_t *t, const algo_params_t *p,
                                    ccs_sched_t **out, algo_report_t *rep,
                                    ccs_err_t *err)
{
    mtree_t *m = NULL;          /* owned here */
    ccs_sched_t *s = NULL;      /* owned until handed to *out */
    rs_plan_t pl;               /* arrays owned here */
    uint32_t n = (uint32_t)t->ngpus, P, T, ag_span, rs_span = 0, nsteps;
    uint32_t step;
    bool rs = p->coll != CCS_COLL_ALLGATHER;
    emit_t e;
    ccs_status_t st;

    memset(&pl, 0, sizeof(pl));
    P = p->pipeline > 0 ? p->pipeline : 1;
    if (p->nchunks > 0)
        P = p->nchunks / n;
    st = mtree_build_best(t, MTREE_CHILDREN_ANY, &m, err);
    if (st != CCS_OK)
        goto cleanup;
    T = (uint32_t)m->nsteps;
    if ((uint64_t)n * P > CCS_MAX_CHUNKS) {
        st = ccs_err_set(err, CCS_ERR_UNSUPPORTED, "multitree: %u ranks x "
                         "%u sub-chunks exceed %u chunks", n, P,
                         CCS_MAX_CHUNKS);
        goto cleanup;
    }
    if (rs) {
        st = rs_plan_make(m, &pl, err);
        if (st != CCS_OK)
            goto cleanup;
        rs_span = pl.ir[T] + P - 1;
    }
    ag_span = T + P - 1;
    algo_report_addf(rep, "multitree: allgather T=%u steps (lower bound "
                     "%d); tree order %s, %u chunk%s per tree", T,
                     m->lower_bound, mtree_order_str(m->opts.order), P,
                     P == 1 ? "" : "s");
    if (rs)
        algo_report_addf(rep, "multitree: reducescatter %u transfer steps "
                         "+ %u local merge steps", T, pl.nmerge);
    st = ccs_sched_create(p->coll, n, n * P, "multitree", &s, err);
    if (st != CCS_OK)
        goto cleanup;
    nsteps = p->coll == CCS_COLL_ALLREDUCE ? rs_span + ag_span
             : rs ? rs_span : ag_span;
    for (uint32_t i = 0; i < nsteps; i++) {
        st = ccs_sched_add_step(s, 0, &step, err);
        if (st != CCS_OK)
            goto cleanup;
    }
    e.s = s;
    e.m = m;
    e.n = n;
    e.P = P;
    e.T = T;
    e.allreduce = p->coll == CCS_COLL_ALLREDUCE;
    /* Count each rank's ops, reserve, then emit: the streams of thousands
     * of ranks grow together, and growing them by doubling copies them
     * and leaves up to half their room unused. */
    e.count = calloc(n, sizeof(*e.count));
    if (e.count == NULL) {
        st = ccs_err_set(err, CCS_ERR_NOMEM, "multitree: out of memory");
        goto cleanup;
    }
    st = emit_all(&e, p->coll, &pl, rs_span, err);
    for (uint32_t r = 0; st == CCS_OK && r < n; r++)
        st = ccs_sched_reserve(s, r, e.count[r], err);
    free(e.count);
    e.count = NULL;
    if (st == CCS_OK)
        st = emit_all(&e, p->coll, &pl, rs_span, err);

cleanup:
    rs_plan_free(&pl);
    /* The trees go to the report (the caller may draw them). */
    if (st == CCS_OK && rep != NULL && rep->trees == NULL) {
        rep->trees = m;
        m = NULL;
    }
    mtree_destroy(m);
    if (st != CCS_OK) {
        ccs_sched_destroy(s);
        return st;
    }
    *out = s;
    return CCS_OK;
}

const algo_desc_t algo_multitree = {
    .name = "multitree",
    .desc = "topology-aware spanning trees, one per rank, built step by "
            "step on free links (MultiTree, ISCA'21)",
    .colls = ALGO_COLL_BIT(CCS_COLL_ALLREDUCE) |
             ALGO_COLL_BIT(CCS_COLL_REDUCESCATTER) |
             ALGO_COLL_BIT(CCS_COLL_ALLGATHER),
    .check = multitree_check,
    .build = build_multitree,
};
