/*
 * mtree.c - MultiTree tree construction (paper section III, Algorithm 1,
 * lines 1-14; III-C3 for switched networks; VII-B for wide links).
 *
 * The deterministic rules (docs/multitree.md repeats them):
 *  1. Capacity: link l carries k_l = max(1, round(bw_l / min_bw)) unit
 *     transfers per step; every step starts from a fresh copy.
 *  2. Turn order inside a step: trees sorted once at the step's start,
 *     MTREE_ORDER_ROOT by root rank, MTREE_ORDER_HEIGHT by remaining height
 *     (largest GPU-hop distance from the root to a rank not yet in the tree)
 *     descending, then root rank.  Trees take turns in that order, one node
 *     per turn, in rounds, until a round adds nothing.  A tree that fails a
 *     turn is done for the step (capacity only shrinks within a step).
 *  3. Parent choice: the tree's ranks that joined in earlier steps, in
 *     join order (breadth-first: the paper's line 9), skipping ranks with
 *     no GPU neighbour left outside the tree and, under
 *     MTREE_CHILDREN_ONE, ranks that already got a child of this tree in
 *     this step.
 *  4. Child choice: the parent's direct GPU links in link-id order, then
 *     its switched candidates (III-C3): the ranks whose topo_route from
 *     the parent passes through switches and NICs only, by route length,
 *     then (c - p) mod n.  The edge takes exactly that route, because the
 *     simulator (like a network with deterministic ECMP) carries the
 *     transfer on it; a parallel link of the same pipe may stand in for a
 *     full one.  The first rank outside the tree whose route has capacity
 *     left on every hop is the child; every link of the path is charged.
 *     With topo_route's D-mod-k spreading, full-bisection fat-trees reach
 *     the bound n - 1 (fattree:4x4: 15; with every route through spine 0
 *     it was 25).
 *
 * Cost: per step and tree, one pass over its live parents (the ranks in
 * it with a GPU neighbour still outside), which also drops the full ones;
 * a parent with no out-link left this step costs one read, a probe one
 * pass over its GPU links (then, on switched networks, its candidate
 * list).  Roughly O(T * n * live * degree) on a torus and
 * O(T * n * live * n) on switched networks; the candidates cost n^2
 * topo_route calls once.  What a join writes is kept to a bit, a live
 * entry and the edge: with n trees of n ranks each further n x n array
 * touched per join is a cache miss per join from about 1000 ranks on.
 *
 * This file is the construction (rules 2-4), mtree_build_best and the DOT
 * drawing; the working state and its setup (rule 1, distances, switched
 * candidates) are mtree_prep.c.
 */
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "mtree.h"
#include "mtree_int.h"

const char *mtree_order_str(mtree_order_t o)
{
    switch (o) {
    case MTREE_ORDER_ROOT: return "root";
    case MTREE_ORDER_HEIGHT: return "height";
    default: return "?";
    }
}

void mtree_opts_init(mtree_opts_t *o)
{
    o->order = MTREE_ORDER_HEIGHT;
    o->children = MTREE_CHILDREN_ANY;
}

const char *mtree_children_str(mtree_children_t c)
{
    switch (c) {
    case MTREE_CHILDREN_ANY: return "any";
    case MTREE_CHILDREN_ONE: return "one";
    default: return "?";
    }
}

int32_t mtree_merge_step(int32_t held, int32_t arrivals)
{
    return arrivals >= held ? arrivals : (held + arrivals + 1) / 2;
}

void mtree_destroy(mtree_t *m)
{
    if (m == NULL)
        return;
    free(m->link_cap);
    free(m->edges);
    free(m->path_links);
    free(m->join_step);
    free(m->parent);
    free(m->height);
    free(m);
}

const mtree_edge_t *mtree_edge_to(const mtree_t *m, int32_t r, int32_t v)
{
    int32_t n = m->nranks;

    if (r < 0 || r >= n || v < 0 || v >= n || v == r)
        return NULL;
    for (int32_t i = 0; i < n - 1; i++) {
        const mtree_edge_t *e = &m->edges[(size_t)r * (size_t)(n - 1) + i];
        if (e->child == v)
            return e;
    }
    return NULL;
}

static bool is_member(const build_t *b, int32_t r, int32_t c)
{
    return mtree_test_bit(b->member, b->mwords, r, c);
}

/* Rank c joins tree r (bookkeeping shared by roots and children; the
 * edge, join step and parent are the caller's, the remaining height is
 * settled at the next step's start: settle_heights). */
static void join(build_t *b, int32_t r, int32_t c)
{
    mtree_set_bit(b->member, b->mwords, r, c);
    b->nmem[r]++;
    b->live[(size_t)r * b->n + b->nlive[r]++] = (uint16_t)c;
}

/* Append len links to m->path_links, growing it. */
static ccs_status_t path_append(build_t *b, mtree_t *m, const int32_t *links,
                                int32_t len, ccs_err_t *err)
{
    if (m->npath_links + len > b->path_cap) {
        int32_t ncap = b->path_cap * 2 + len + 16;
        int32_t *np = realloc(m->path_links, sizeof(int32_t) * (size_t)ncap);
        if (np == NULL)
            return ccs_err_set(err, CCS_ERR_NOMEM, "multitree: out of memory");
        m->path_links = np;
        b->path_cap = ncap;
    }
    memcpy(m->path_links + m->npath_links, links,
           sizeof(int32_t) * (size_t)len);
    m->npath_links += len;
    return CCS_OK;
}

/* Charge one unit of link l. */
static void take(build_t *b, int32_t l)
{
    if (--b->cap[l] == 0 && b->link_src_rank[l] >= 0 &&
        --b->free_out[b->link_src_rank[l]] == 0)
        b->senders--;
}

/* Rule 4 over direct links, with rule 3's fullness test in the same pass
 * (both read p's GPU out-links and tree r's membership row): the index in
 * dlink of p's first GPU out-link, in link-id order, with capacity left
 * and its far end outside tree r; -1 when there is none; -2 when p can no
 * longer parent in tree r (it is full: no switch or NIC link, every GPU
 * out-neighbour in the tree; fullness lasts). */
static int32_t direct_probe(const build_t *b, int32_t r, int32_t p)
{
    const uint64_t *row = &b->member[(size_t)r * (size_t)b->mwords];
    bool outside = b->switched[p];

    for (int32_t i = b->dlink_start[p]; i < b->dlink_start[p + 1]; i++) {
        int32_t c = b->dlink_rank[i];
        if ((row[c / 64] >> (c % 64)) & 1u)
            continue;
        outside = true;
        if (b->cap[b->dlink[i]] > 0)
            return i;
    }
    return outside ? -1 : -2;
}

/* Rule 4 over switched candidates: the first rank outside tree r among
 * p's candidates whose route has exactly `hops` links, each with
 * capacity left (a parallel link of the same pipe standing in for a full
 * one).  Writes the links to chosen[] and returns the rank; -1 when none. */
static int32_t switched_probe(const build_t *b, int32_t r, int32_t p,
                              int32_t hops, int32_t *chosen)
{
    for (int32_t i = b->cand_start[p]; i < b->cand_start[p + 1]; i++) {
        int32_t c = b->cand[i], off = b->cand_off[i], len = b->cand_len[i];
        bool ok = !is_member(b, r, c);

        if (len != hops) {
            if (len > hops)
                break;
            continue;
        }
        for (int32_t k = 0; ok && k < len; k++) {
            int32_t l0 = b->cand_links[off + k], l = l0;
            /* a parallel link of the same pipe serves as well (the
             * simulator sums them); topo_route's own pick first */
            chosen[k] = -1;
            do {
                if (b->cap[l] > 0) {
                    chosen[k] = l;
                    break;
                }
                l = b->pnext[l];
            } while (l != l0);
            ok = chosen[k] >= 0;
        }
        if (ok)
            return c;
    }
    return -1;
}

/* Rank c joins tree r from p over the links path[0, len): charges them,
 * records the edge and the path. */
static ccs_status_t add_edge(build_t *b, mtree_t *m, int32_t r, int32_t p,
                             int32_t c, const int32_t *path, int32_t len,
                             int32_t step, int32_t *nedges, ccs_err_t *err)
{
    mtree_edge_t *e = &m->edges[(size_t)r * (size_t)(b->n - 1) +
                                (size_t)nedges[r]++];
    ccs_status_t st;

    e->parent = p;
    e->child = c;
    e->step = step;
    e->path_off = m->npath_links;
    e->path_len = len;
    st = path_append(b, m, path, len, err);
    if (st != CCS_OK)
        return st;
    for (int32_t k = 0; k < len; k++)
        take(b, path[k]);
    join(b, r, c);
    if (b->last_child != NULL)
        b->last_child[(size_t)r * (size_t)b->n + p] = step;
    return CCS_OK;
}

/* The end of tree r's scan of its parents for direct links in this step:
 * the kept parents are now live[0, keep), the ones it did not reach
 * (when the step ends early) follow them, and behind those the ranks
 * that joined in this step (not parents before the next). */
static void close_live(build_t *b, int32_t r)
{
    size_t rn = (size_t)r * b->n;
    int32_t *read = &b->cursor[(size_t)r * (size_t)(b->maxhops + 1) + 1];
    int32_t np = b->nparents[r], k = b->keep[r];
    int32_t tail = b->nlive[r] - *read;

    memmove(&b->live[rn + k], &b->live[rn + *read],
            sizeof(uint16_t) * (size_t)tail);
    b->nparents[r] = k + (np - *read);
    b->nlive[r] = k + tail;
    *read = b->nparents[r];
    b->keep[r] = -1;
}

/* Rule 3 and one turn of tree r in `step`: true when a rank joined. */
static bool turn(build_t *b, mtree_t *m, int32_t r, int32_t step,
                 int32_t *nedges, ccs_err_t *err, ccs_status_t *st)
{
    size_t rn = (size_t)r * b->n;
    int32_t *cur = &b->cursor[(size_t)r * (size_t)(b->maxhops + 1)];
    int32_t chosen[64];     /* route lengths are < 64 (candidates) */

    /* No rank has an out-link left: every probe would fail, so the scans
     * that remain in this step are skipped (same choices). */
    if (b->senders == 0) {
        if (b->keep[r] >= 0)
            close_live(b, r);
        return false;
    }
    /* Nearest first over all parents (a multi-source BFS by route
     * length), parents in join order within one length; each length's
     * scan resumes at its cursor (build_t).  The scan for direct links,
     * which every step finishes before any longer one starts, also drops
     * the parents it finds full (they stay full): the live list is
     * compacted as it is read. */
    for (int32_t hops = 1; hops <= b->maxhops; hops++) {
        if (hops > 1 && !b->has_hops[hops])
            continue;
        for (int32_t i = cur[hops]; i < b->nparents[r]; cur[hops] = ++i) {
            int32_t p = b->live[rn + i], c = -1, k;

            /* Every route from p starts on one of its out-links: with
             * none left this step it cannot parent.  Tested first
             * because free_out stays in cache and the per-tree rows
             * do not (a pure filter: same choices).  A parent that
             * is skipped stays in the list. */
            if (b->free_out[p] > 0 &&
                (b->last_child == NULL || b->last_child[rn + p] != step)) {
                if (hops == 1) {
                    k = direct_probe(b, r, p);
                    if (k == -2)
                        continue;       /* full: dropped */
                    if (k >= 0) {
                        c = b->dlink_rank[k];
                        *st = add_edge(b, m, r, p, c, &b->dlink[k], 1,
                                       step, nedges, err);
                    }
                } else {
                    c = switched_probe(b, r, p, hops, chosen);
                    if (c >= 0)
                        *st = add_edge(b, m, r, p, c, chosen, hops, step,
                                       nedges, err);
                }
                if (*st != CCS_OK)
                    return false;
                if (c >= 0)     /* p is tried again at the next turn */
                    return true;
            }
            if (hops == 1)
                b->live[rn + b->keep[r]++] = (uint16_t)p;
        }
        if (hops == 1 && b->keep[r] >= 0)
            close_live(b, r);
    }
    return false;
}

/* MTREE_ORDER_HEIGHT: count out of far_cnt the ranks that joined each
 * incomplete tree in the last step (behind its parents in the live list,
 * close_live) and lower its remaining height.  Done here, in one pass per
 * tree, rather than at each join: the distance rows do not stay in cache
 * between turns, and these loads do not wait on one another. */
static void settle_heights(build_t *b)
{
    int32_t n = b->n;

    for (int32_t r = 0; r < n; r++) {
        size_t rn = (size_t)r * (size_t)n;
        int32_t *fc = &b->far_cnt[(size_t)r * (b->maxd + 1)];

        if (b->nmem[r] == n)
            continue;
        for (int32_t i = b->nparents[r]; i < b->nlive[r]; i++)
            fc[b->dist[rn + b->live[rn + i]]]--;
        while (b->far_top[r] > 0 && fc[b->far_top[r]] == 0)
            b->far_top[r]--;
    }
}

/* Rule 2: the turn order for this step (incomplete trees only). */
static int32_t turn_order(build_t *b)
{
    int32_t n = b->n, k = 0;

    if (b->opts.order == MTREE_ORDER_ROOT) {
        for (int32_t r = 0; r < n; r++)
            if (b->nmem[r] < n)
                b->order[k++] = r;
        return k;
    }
    settle_heights(b);
    /* A counting sort by remaining height, larger first; ranks ascending
     * within one height (the scan below is in rank order, and stable). */
    memset(b->bucket, 0, sizeof(int32_t) * (size_t)(b->maxd + 1));
    for (int32_t r = 0; r < n; r++)
        if (b->nmem[r] < n)
            b->bucket[b->far_top[r]]++;
    for (int32_t h = b->maxd; h >= 0; h--) {
        int32_t c = b->bucket[h];
        b->bucket[h] = k;
        k += c;
    }
    for (int32_t r = 0; r < n; r++)
        if (b->nmem[r] < n)
            b->order[b->bucket[b->far_top[r]]++] = r;
    return k;
}

ccs_status_t mtree_build(const topo_t *t, const mtree_opts_t *opts,
                         mtree_t **out, ccs_err_t *err)
{
    mtree_opts_t o;
    build_t b;
    mtree_t *m = NULL;          /* owned until handed to *out */
    int32_t *nedges = NULL;     /* [n] owned here */
    int32_t n, done = 0, step = 0, mincap = INT32_MAX;
    size_t nn;
    ccs_status_t st = CCS_OK;

    memset(&b, 0, sizeof(b));
    if (opts == NULL)
        mtree_opts_init(&o);
    else
        o = *opts;
    if (t == NULL || t->ngpus < 2)
        return ccs_err_set(err, CCS_ERR_INVALID, "multitree: needs 2 or more "
                           "GPUs");
    n = t->ngpus;
    nn = (size_t)n * (size_t)n;
    m = calloc(1, sizeof(*m));
    if (m == NULL)
        return ccs_err_set(err, CCS_ERR_NOMEM, "multitree: out of memory");
    m->nranks = n;
    m->nlinks = t->nlinks;
    m->opts = o;
    m->link_cap = malloc(sizeof(int32_t) * (size_t)(t->nlinks ? t->nlinks
                                                               : 1));
    m->edges = calloc((size_t)n * (size_t)(n - 1), sizeof(mtree_edge_t));
    m->join_step = malloc(sizeof(int32_t) * nn);
    m->parent = malloc(sizeof(int32_t) * nn);
    m->height = calloc((size_t)n, sizeof(int32_t));
    nedges = calloc((size_t)n, sizeof(int32_t));
    if (!m->link_cap || !m->edges || !m->join_step || !m->parent ||
        !m->height || !nedges) {
        st = ccs_err_set(err, CCS_ERR_NOMEM, "multitree: out of memory");
        goto cleanup;
    }
    st = mtree_build_init(&b, t, &o, m->link_cap, err);
    if (st != CCS_OK)
        goto cleanup;

    /* Lower bound: each rank must receive n-1 blocks through its in-links. */
    for (int32_t r = 0; r < n; r++) {
        int32_t v = t->rank_node[r], c = 0;
        for (int32_t i = t->in_start[v]; i < t->in_start[v + 1]; i++)
            c += m->link_cap[t->in_links[i]];
        if (c < mincap)
            mincap = c;
    }
    m->lower_bound = mincap > 0 ? (n - 1 + mincap - 1) / mincap : 0;

    /* Algorithm 1 lines 1-3: every rank roots its own tree. */
    for (int32_t r = 0; r < n; r++)
        join(&b, r, r);

    while (done < n) {             /* lines 4-14 */
        int32_t norder, added = 0;
        bool progress = true;

        step++;
        memcpy(b.cap, m->link_cap, sizeof(int32_t) * (size_t)t->nlinks);
        memcpy(b.free_out, b.out_deg, sizeof(int32_t) * (size_t)n);
        b.senders = b.senders0;
        norder = turn_order(&b);
        for (int32_t i = 0; i < norder; i++) {
            b.step_done[b.order[i]] = false;
            b.nparents[b.order[i]] = b.nlive[b.order[i]];
            b.keep[b.order[i]] = 0;
            memset(&b.cursor[(size_t)b.order[i] * (size_t)(b.maxhops + 1)],
                   0, sizeof(int32_t) * (size_t)(b.maxhops + 1));
        }
        while (progress) {
            progress = false;
            for (int32_t i = 0; i < norder; i++) {
                int32_t r = b.order[i];
                if (b.step_done[r])
                    continue;
                /* The next tree's rows (its live list where its scan
                 * resumes, its membership row, its next edge) are out of
                 * cache from about 4000 ranks on: ask for them while this
                 * turn runs. */
                if (i + 1 < norder) {
                    int32_t q = b.order[i + 1];
                    size_t qn = (size_t)q * (size_t)n;
                    __builtin_prefetch(&b.live[qn + (size_t)b.cursor[
                        (size_t)q * (size_t)(b.maxhops + 1) + 1]]);
                    __builtin_prefetch(&b.member[(size_t)q * b.mwords]);
                    __builtin_prefetch(&m->edges[(size_t)q * (size_t)(n - 1) +
                                                 (size_t)nedges[q]], 1);
                }
                if (turn(&b, m, r, step, nedges, err, &st)) {
                    progress = true;
                    added++;
                    if (b.nmem[r] == n) {
                        b.step_done[r] = true;
                        m->height[r] = step;
                        done++;
                    }
                } else {
                    if (st != CCS_OK)
                        goto cleanup;
                    b.step_done[r] = true;
                }
            }
        }
        if (added == 0) {
            st = ccs_err_set(err, CCS_ERR_TOPOLOGY, "multitree: topology "
                             "'%s': no tree can grow in step %d (%d of %d "
                             "trees complete)", t->name, step, done, n);
            goto cleanup;
        }
    }
    m->nsteps = step;
    /* Join steps and parents from the edges, one tree row at a time (in
     * cache, where writing them at each join would miss twice). */
    for (int32_t r = 0; r < n; r++) {
        size_t rn = (size_t)r * (size_t)n;
        const mtree_edge_t *e = &m->edges[(size_t)r * (size_t)(n - 1)];
        m->join_step[rn + r] = 0;
        m->parent[rn + r] = -1;
        for (int32_t i = 0; i < n - 1; i++) {
            m->join_step[rn + e[i].child] = e[i].step;
            m->parent[rn + e[i].child] = e[i].parent;
        }
    }

cleanup:
    mtree_build_free(&b);
    free(nedges);
    if (st != CCS_OK) {
        mtree_destroy(m);
        return st;
    }
    *out = m;
    return CCS_OK;
}

/* One construction on its own thread (mtree_build_best). */
typedef struct best_job {
    const topo_t *t;
    mtree_opts_t opts;
    mtree_t *m;                 /* owned by the job until taken */
    ccs_err_t err;
    ccs_status_t st;
} best_job_t;

static void *best_work(void *arg)
{
    best_job_t *j = arg;

    j->st = mtree_build(j->t, &j->opts, &j->m, &j->err);
    return NULL;
}

ccs_status_t mtree_build_best(const topo_t *t, mtree_children_t children,
                              mtree_t **out, ccs_err_t *err)
{
    best_job_t job[MTREE_ORDER_COUNT];
    pthread_t tid[MTREE_ORDER_COUNT];
    bool started[MTREE_ORDER_COUNT] = { false };
    mtree_t *best = NULL;       /* owned until handed to *out */
    ccs_status_t st = CCS_OK;

    /* The orders are independent constructions: each but the first runs
     * on a thread of its own (the first on this one), and the best is
     * taken in order, fewest steps, the earlier order on a tie: the same
     * choice as one after the other. */
    for (int o = 0; o < MTREE_ORDER_COUNT; o++) {
        memset(&job[o], 0, sizeof(job[o]));
        job[o].t = t;
        job[o].opts.order = (mtree_order_t)o;
        job[o].opts.children = children;
        if (o > 0)
            started[o] = pthread_create(&tid[o], NULL, best_work,
                                        &job[o]) == 0;
    }
    best_work(&job[0]);
    for (int o = 1; o < MTREE_ORDER_COUNT; o++) {
        if (started[o])
            pthread_join(tid[o], NULL);
        else
            best_work(&job[o]);
    }
    for (int o = 0; o < MTREE_ORDER_COUNT; o++) {
        if (st == CCS_OK && job[o].st != CCS_OK) {
            st = job[o].st;
            if (err != NULL)
                *err = job[o].err;
        }
        if (st != CCS_OK || job[o].m == NULL)
            continue;
        if (best == NULL || job[o].m->nsteps < best->nsteps) {
            mtree_destroy(best);
            best = job[o].m;
            job[o].m = NULL;
        }
    }
    for (int o = 0; o < MTREE_ORDER_COUNT; o++)
        mtree_destroy(job[o].m);
    if (st != CCS_OK) {
        mtree_destroy(best);
        return st;
    }
    *out = best;
    return CCS_OK;
}

ccs_status_t mtree_write_dot(const mtree_t *m, const topo_t *t, FILE *f)
{
    int32_t n = m->nranks;

    if (t != NULL)
        fprintf(f, "// ccsynth multitree: %d trees, T=%d steps (lower bound "
                "%d), order=%s, children=%s\n", n, m->nsteps,
                m->lower_bound, mtree_order_str(m->opts.order),
                mtree_children_str(m->opts.children));
    else
        fprintf(f, "// ccsynth multitree: %d trees, T=%d steps, read back "
                "from a schedule\n", n, m->nsteps);
    fprintf(f, "digraph multitree {\n"
            "  graph [rankdir=TB, fontname=\"Helvetica\", labelloc=t, "
            "label=\"MultiTree on %s: %d trees, T=%d (edge label: step"
            "%s)\"];\n"
            "  node [shape=circle, fontname=\"Helvetica\", fontsize=10];\n"
            "  edge [fontname=\"Helvetica\", fontsize=8, arrowsize=0.6];\n",
            t != NULL ? t->name : "a schedule", n, m->nsteps,
            t != NULL ? "[/via switches]" : "");
    for (int32_t r = 0; r < n; r++) {
        fprintf(f, "  subgraph cluster_t%d {\n    label=\"tree %d (height "
                "%d)\";\n", r, r, m->height[r]);
        fprintf(f, "    t%d_%d [label=\"%d\", shape=doublecircle];\n", r, r,
                r);
        for (int32_t v = 0; v < n; v++) {
            if (v != r)
                fprintf(f, "    t%d_%d [label=\"%d\"];\n", r, v, v);
        }
        for (int32_t i = 0; i < n - 1; i++) {
            const mtree_edge_t *e = &m->edges[(size_t)r * (n - 1) + i];
            fprintf(f, "    t%d_%d -> t%d_%d [label=\"%d", r, e->parent, r,
                    e->child, e->step);
            for (int32_t k = 0; t != NULL && k + 1 < e->path_len; k++) {
                int32_t l = m->path_links[e->path_off + k];
                fprintf(f, "%s%s", k ? "," : "/", t->nodes[t->links[l].dst]
                                                      .name);
            }
            fprintf(f, "\"];\n");
        }
        fprintf(f, "  }\n");
    }
    fprintf(f, "}\n");
    return ferror(f) ? CCS_ERR_IO : CCS_OK;
}
