/*
 * mtree_sched.c - read MultiTree's spanning trees back from a schedule, so
 * that `ccsynth show --dot` can draw the trees of a .ccs file, which keeps
 * only the steps (Algorithm 1 lines 15-18 run backwards).
 *
 * What algo_multitree.c emits, and what this relies on (each point is
 * checked, and a schedule that breaks one is refused with a message):
 *  - C = n * P chunks; tree r carries chunks [rP, rP + P), sub-chunk 0
 *    first; only sub-chunk 0's transfers are read (the others repeat them
 *    later).  Every transfer moves one chunk (local copies may move more).
 *  - All-gather (allgather, second half of allreduce): tree edge p -> c is
 *    a plain RECV into OUT on c from p.  Every other transfer belongs to the
 *    reduce-scatter: the edge p -> c carried backwards, c -> p, a RECV or
 *    RECV_REDUCE into OUT or SCRATCH.
 *  - Which block a sender's SCRATCH chunk holds is tracked through the
 *    steps: a receive into SCRATCH takes the block the sender sent, a COPY
 *    its source's, a REDUCE_LOCAL keeps its own.  IN and OUT chunk c hold
 *    block c.  All ops of a step read the state from the start of the step.
 *  - Every non-root rank joins each tree exactly once, from a parent that
 *    joined earlier, and tree r's root is rank r.
 * Steps: all-gather edges are numbered from the phase's first transfer
 * step (1-based), as mtree_build numbers them.  Reduce-scatter edges of
 * all-gather step t move in the (T - t + 1)-th of the T distinct steps with
 * reduce-scatter transfers (merge-only steps have none), so they are
 * numbered back by that rule.  An allreduce must give the same trees, with
 * the same steps, from both halves.
 *
 * Ownership: *out is the caller's (mtree_destroy).  It has no topology
 * part: nlinks 0, link_cap and path_links NULL, every path_len 0,
 * lower_bound 0 (unknown), opts left at their defaults.
 */
#include <stdlib.h>
#include <string.h>

#include "mtree.h"

/* Working state; every pointer owned here and freed at cleanup. */
typedef struct rb {
    const ccs_sched_t *s;
    int32_t n, P;
    uint32_t *pos;      /* [n] first op of the current step per rank */
    uint32_t *end;      /* [n] one past it */
    int32_t *held;      /* [n * nscratch] block in SCRATCH chunk; -1 */
    int32_t *wr_rank, *wr_chunk, *wr_val;   /* pending SCRATCH writes */
    uint64_t nwr;
    int32_t *bpar, *bstep;   /* [n * n] all-gather parent and IR step */
    int32_t *rpar, *rstep;   /* [n * n] reduce-scatter parent and IR step */
    int64_t nb, nr;          /* edges of each kind */
} rb_t;

/* Block (global chunk) that (rank, buf, chunk) holds; -1 when unknown. */
static int32_t block_of(const rb_t *b, uint32_t rank, uint8_t buf,
                        uint32_t chunk)
{
    if (buf != CCS_BUF_SCRATCH)
        return (int32_t)chunk;
    return b->held[(size_t)rank * b->s->nscratch + chunk];
}

static void pending(rb_t *b, uint32_t rank, uint32_t chunk, int32_t val)
{
    b->wr_rank[b->nwr] = (int32_t)rank;
    b->wr_chunk[b->nwr] = (int32_t)chunk;
    b->wr_val[b->nwr] = val;
    b->nwr++;
}

/* The SEND on `a` that the receive `rcv` of rank `dst` matches: the k-th
 * send from a to dst in this step for the k-th receive from a. */
static const ccs_op_t *matching_send(const rb_t *b, uint32_t dst,
                                     const ccs_op_t *rcv)
{
    uint32_t si;

    if (!ccs_sched_recv_send(b->s, dst,
                             (uint32_t)(rcv - b->s->rank_ops[dst]), &si))
        return NULL;
    return &b->s->rank_ops[rcv->peer][si];
}

/* One transfer a -> dst of block c in IR step t. */
static ccs_status_t record(rb_t *b, uint32_t t, uint32_t a, uint32_t dst,
                           const ccs_op_t *rcv, int32_t c, ccs_err_t *err)
{
    int32_t n = b->n, r = c / b->P, parent, child;
    bool gather = rcv->kind == CCS_OP_RECV && rcv->buf == CCS_BUF_OUT;
    int32_t *par = gather ? b->bpar : b->rpar;
    int32_t *stp = gather ? b->bstep : b->rstep;

    if (c % b->P != 0)
        return CCS_OK;
    parent = gather ? (int32_t)a : (int32_t)dst;
    child = gather ? (int32_t)dst : (int32_t)a;
    if (child == r)
        return ccs_err_set(err, CCS_ERR_VERIFY, "multitree trees: step %u: "
                           "the %s of tree %d runs into its root, rank %d", t,
                           gather ? "all-gather" : "reduce-scatter", r, r);
    if (par[(size_t)r * n + child] >= 0)
        return ccs_err_set(err, CCS_ERR_VERIFY, "multitree trees: step %u: "
                           "rank %d joins the %s tree %d a second time "
                           "(first in step %d)", t,
                           child, gather ? "all-gather" : "reduce-scatter",
                           r, stp[(size_t)r * n + child]);
    par[(size_t)r * n + child] = parent;
    stp[(size_t)r * n + child] = (int32_t)t;
    if (gather)
        b->nb++;
    else
        b->nr++;
    return CCS_OK;
}

/* The ops of IR step t. */
static ccs_status_t read_step(rb_t *b, uint32_t t, ccs_err_t *err)
{
    const ccs_sched_t *s = b->s;
    ccs_status_t st;

    for (int32_t r = 0; r < b->n; r++) {
        uint32_t e = b->pos[r];
        while (e < s->rank_nops[r] && s->rank_ops[r][e].step == t)
            e++;
        b->end[r] = e;
    }
    b->nwr = 0;
    for (uint32_t r = 0; r < (uint32_t)b->n; r++) {
        for (uint32_t i = b->pos[r]; i < b->end[r]; i++) {
            const ccs_op_t *o = &s->rank_ops[r][i];
            const ccs_op_t *snd;
            int32_t c;

            if (o->kind == CCS_OP_SEND)
                continue;
            if (o->kind == CCS_OP_COPY || o->kind == CCS_OP_REDUCE_LOCAL) {
                for (uint32_t k = 0; o->buf == CCS_BUF_SCRATCH &&
                                     k < o->nchunks; k++) {
                    c = block_of(b, r, o->src_buf, o->src_chunk + k);
                    if (o->kind == CCS_OP_REDUCE_LOCAL &&
                        block_of(b, r, o->buf, o->chunk + k) >= 0)
                        c = block_of(b, r, o->buf, o->chunk + k);
                    pending(b, r, o->chunk + k, c);
                }
                continue;
            }
            if (o->nchunks != 1)
                return ccs_err_set(err, CCS_ERR_VERIFY, "multitree trees: "
                                   "step %u: rank %u receives %u chunks "
                                   "in one transfer "
                                   "(MultiTree moves one)", t, r,
                                   o->nchunks);
            snd = matching_send(b, r, o);
            if (snd == NULL)
                return ccs_err_set(err, CCS_ERR_VERIFY, "multitree trees: "
                                   "step %u: rank %u receives from rank "
                                   "%d, which sends it "
                                   "nothing to match", t, r, o->peer);
            c = block_of(b, (uint32_t)o->peer, snd->buf, snd->chunk);
            if (c < 0)
                return ccs_err_set(err, CCS_ERR_VERIFY, "multitree trees: "
                                   "step %u: rank %d sends scratch[%u], "
                                   "which holds no block "
                                   "yet", t, o->peer, snd->chunk);
            if (o->buf == CCS_BUF_SCRATCH)
                pending(b, r, o->chunk, c);
            st = record(b, t, (uint32_t)o->peer, r, o, c, err);
            if (st != CCS_OK)
                return st;
        }
    }
    for (uint64_t w = 0; w < b->nwr; w++)
        b->held[(size_t)b->wr_rank[w] * s->nscratch + b->wr_chunk[w]] =
            b->wr_val[w];
    for (int32_t r = 0; r < b->n; r++)
        b->pos[r] = b->end[r];
    return CCS_OK;
}

static int cmp_i32(const void *x, const void *y)
{
    int32_t a = *(const int32_t *)x, b = *(const int32_t *)y;
    return (a > b) - (a < b);
}

/* Turn IR steps into tree steps in place: all-gather edges count from
 * base (the first all-gather transfer step, tree step 1); reduce-scatter
 * edges by the rank of their IR step among the `nrs` distinct ones,
 * reversed.  `steps` is scratch space of n * n. */
static void renumber(rb_t *b, bool gather, int32_t *steps)
{
    int32_t n = b->n, *par = gather ? b->bpar : b->rpar;
    int32_t *stp = gather ? b->bstep : b->rstep, base = INT32_MAX, k = 0;
    size_t nn = (size_t)n * n;

    for (size_t i = 0; i < nn; i++)
        if (par[i] >= 0 && stp[i] < base)
            base = stp[i];
    if (gather) {
        for (size_t i = 0; i < nn; i++)
            if (par[i] >= 0)
                stp[i] = stp[i] - base + 1;
        return;
    }
    /* the distinct IR steps, ascending */
    for (size_t i = 0; i < nn; i++)
        if (par[i] >= 0)
            steps[k++] = stp[i];
    qsort(steps, (size_t)k, sizeof(int32_t), cmp_i32);
    {
        int32_t d = 0;
        for (int32_t i = 0; i < k; i++)
            if (i == 0 || steps[i] != steps[i - 1])
                steps[d++] = steps[i];
        for (size_t i = 0; i < nn; i++) {
            int32_t lo = 0, hi = d - 1;
            if (par[i] < 0)
                continue;
            while (lo < hi) {              /* steps[lo] == stp[i] */
                int32_t mid = (lo + hi) / 2;
                if (steps[mid] < stp[i])
                    lo = mid + 1;
                else
                    hi = mid;
            }
            stp[i] = d - lo;
        }
    }
}

static int cmp_edge(const void *x, const void *y)
{
    const mtree_edge_t *a = x, *b = y;
    if (a->step != b->step)
        return (a->step > b->step) - (a->step < b->step);
    return (a->child > b->child) - (a->child < b->child);
}

ccs_status_t mtree_from_sched(const ccs_sched_t *s, mtree_t **out,
                              ccs_err_t *err)
{
    rb_t b;
    mtree_t *m = NULL;          /* owned until handed to *out */
    int32_t *par, *stp, *sortbuf = NULL;   /* sortbuf owned here */
    int32_t n;
    size_t nn;
    uint64_t nops;
    ccs_status_t st = CCS_OK;
    bool gather;

    memset(&b, 0, sizeof(b));
    if (s == NULL || s->nranks < 2)
        return ccs_err_set(err, CCS_ERR_INVALID, "multitree trees: a "
                           "schedule of 2 or more ranks is needed");
    if (s->coll != CCS_COLL_ALLGATHER && s->coll != CCS_COLL_REDUCESCATTER &&
        s->coll != CCS_COLL_ALLREDUCE)
        return ccs_err_set(err, CCS_ERR_UNSUPPORTED, "multitree trees: %s "
                           "is not built from spanning trees (allgather, "
                           "reducescatter and allreduce are)",
                           ccs_coll_str(s->coll));
    if (s->nchunks % s->nranks != 0 || s->nranks > 8192)
        return ccs_err_set(err, CCS_ERR_UNSUPPORTED, "multitree trees: %u "
                           "chunks over %u ranks is not one block per tree",
                           s->nchunks, s->nranks);
    n = (int32_t)s->nranks;
    nn = (size_t)n * (size_t)n;
    nops = 0;                   /* SCRATCH chunks written, all steps */
    for (uint32_t r = 0; r < s->nranks; r++)
        for (uint32_t i = 0; i < s->rank_nops[r]; i++)
            if (s->rank_ops[r][i].kind != CCS_OP_SEND &&
                s->rank_ops[r][i].buf == CCS_BUF_SCRATCH)
                nops += s->rank_ops[r][i].nchunks;
    b.s = s;
    b.n = n;
    b.P = (int32_t)(s->nchunks / s->nranks);
    b.pos = calloc((size_t)n, sizeof(uint32_t));
    b.end = calloc((size_t)n, sizeof(uint32_t));
    b.held = malloc(sizeof(int32_t) * ((size_t)n * s->nscratch + 1));
    b.wr_rank = malloc(sizeof(int32_t) * (size_t)(nops + 1));
    b.wr_chunk = malloc(sizeof(int32_t) * (size_t)(nops + 1));
    b.wr_val = malloc(sizeof(int32_t) * (size_t)(nops + 1));
    b.bpar = malloc(sizeof(int32_t) * nn);
    b.bstep = malloc(sizeof(int32_t) * nn);
    b.rpar = malloc(sizeof(int32_t) * nn);
    b.rstep = malloc(sizeof(int32_t) * nn);
    sortbuf = malloc(sizeof(int32_t) * nn);
    if (!b.pos || !b.end || !b.held || !b.wr_rank || !b.wr_chunk ||
        !b.wr_val || !b.bpar || !b.bstep || !b.rpar || !b.rstep ||
        !sortbuf) {
        st = ccs_err_set(err, CCS_ERR_NOMEM, "multitree trees: out of "
                         "memory");
        goto cleanup;
    }
    for (size_t i = 0; i < (size_t)n * s->nscratch; i++)
        b.held[i] = -1;
    for (size_t i = 0; i < nn; i++)
        b.bpar[i] = b.rpar[i] = b.bstep[i] = b.rstep[i] = -1;
    for (uint32_t t = 0; t < s->nsteps; t++) {
        st = read_step(&b, t, err);
        if (st != CCS_OK)
            goto cleanup;
    }

    /* Which trees to draw: the all-gather's when there is one. */
    gather = b.nb > 0;
    if ((gather ? b.nb : b.nr) != (int64_t)n * (n - 1)) {
        st = ccs_err_set(err, CCS_ERR_VERIFY, "multitree trees: %lld %s "
                         "edges, %lld expected (n - 1 per tree)",
                         (long long)(gather ? b.nb : b.nr),
                         gather ? "all-gather" : "reduce-scatter",
                         (long long)n * (n - 1));
        goto cleanup;
    }
    renumber(&b, true, sortbuf);
    renumber(&b, false, sortbuf);
    par = gather ? b.bpar : b.rpar;
    stp = gather ? b.bstep : b.rstep;
    if (gather && b.nr > 0) {
        /* allreduce: the reduce-scatter runs the same trees backwards */
        for (size_t i = 0; i < nn; i++) {
            if (b.rpar[i] != b.bpar[i] || b.rstep[i] != b.bstep[i]) {
                st = ccs_err_set(err, CCS_ERR_VERIFY, "multitree trees: "
                                 "tree %d: rank %d hangs off rank %d at "
                                 "step %d in the all-gather but off rank "
                                 "%d at step %d in the reduce-scatter",
                                 (int)(i / (size_t)n), (int)(i % (size_t)n),
                                 b.bpar[i], b.bstep[i], b.rpar[i],
                                 b.rstep[i]);
                goto cleanup;
            }
        }
    }

    m = calloc(1, sizeof(*m));
    if (m == NULL) {
        st = ccs_err_set(err, CCS_ERR_NOMEM, "multitree trees: out of "
                         "memory");
        goto cleanup;
    }
    m->nranks = n;
    mtree_opts_init(&m->opts);
    m->edges = calloc((size_t)n * (size_t)(n - 1), sizeof(mtree_edge_t));
    m->join_step = malloc(sizeof(int32_t) * nn);
    m->parent = malloc(sizeof(int32_t) * nn);
    m->height = calloc((size_t)n, sizeof(int32_t));
    if (!m->edges || !m->join_step || !m->parent || !m->height) {
        st = ccs_err_set(err, CCS_ERR_NOMEM, "multitree trees: out of "
                         "memory");
        goto cleanup;
    }
    for (int32_t r = 0; r < n; r++) {
        mtree_edge_t *e = &m->edges[(size_t)r * (size_t)(n - 1)];
        int32_t k = 0;
        for (int32_t v = 0; v < n; v++) {
            size_t i = (size_t)r * n + v;
            m->parent[i] = v == r ? -1 : par[i];
            m->join_step[i] = v == r ? 0 : stp[i];
            if (v == r)
                continue;
            e[k].parent = par[i];
            e[k].child = v;
            e[k].step = stp[i];
            k++;
            if (stp[i] > m->height[r])
                m->height[r] = stp[i];
        }
        if (m->height[r] > m->nsteps)
            m->nsteps = m->height[r];
        qsort(e, (size_t)(n - 1), sizeof(*e), cmp_edge);
    }
    /* Each parent joined before its child: the edges form one tree rooted
     * at r (a cycle would need some parent to join no earlier). */
    for (int32_t r = 0; r < n; r++) {
        for (int32_t v = 0; v < n; v++) {
            size_t i = (size_t)r * n + v;
            int32_t p = m->parent[i];
            if (v == r)
                continue;
            if (m->join_step[(size_t)r * n + p] >= m->join_step[i]) {
                st = ccs_err_set(err, CCS_ERR_VERIFY, "multitree trees: "
                                 "tree %d: rank %d joins at step %d from "
                                 "rank %d, which joins at step %d", r, v,
                                 m->join_step[i], p,
                                 m->join_step[(size_t)r * n + p]);
                goto cleanup;
            }
        }
    }
    *out = m;
    m = NULL;

cleanup:
    mtree_destroy(m);
    free(b.pos);
    free(b.end);
    free(b.held);
    free(b.wr_rank);
    free(b.wr_chunk);
    free(b.wr_val);
    free(b.bpar);
    free(b.bstep);
    free(b.rpar);
    free(b.rstep);
    free(sortbuf);
    return st;
}
