/*
 * milp_heur.c - the parallel-tree heuristic of the AdapCC-style
 * synthesizer (AdapCC, Sec. IV-D): "star of stars" trees, one per
 * sub-collective rooted in a different server, aggregating inside each
 * server first, scored by the cost model (milp_cost.c); also a plan on
 * given (external) trees.  It is the MILP's warm start and its fallback.
 * See milp_heur.h and docs/milp.md.
 */

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "milp_heur.h"

/* ---- heuristic ---- */

/* In-group shapes: star, chain, shortest paths, then k-ary heaps. */
#define HEUR_HEAP_FIRST 3
#define HEUR_NHEAP 3            /* arities 2, 3, 4 */
#define HEUR_NSHAPE (HEUR_HEAP_FIRST + HEUR_NHEAP)

/* Members of group g other than `first`, in rank order rotated to start
 * after `first`, stably sorted by xload ascending (the GPUs that carry
 * the least so far come first and become the heap's inner nodes).
 * Returns the count. */
static int32_t heap_order(const milp_net_t *net, int32_t g, int32_t first,
                          const int32_t *xload, int32_t *order)
{
    int32_t size = net->srv_size[g], cnt = 0;

    for (int32_t i = 1; i < size; i++)
        order[cnt++] = net->srv_members[net->srv_first[g] +
                                        (net->loc[first] + i) % size];
    for (int32_t i = 1; i < cnt; i++) {
        int32_t u = order[i], j = i;

        while (j > 0 && xload[order[j - 1]] > xload[u]) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = u;
    }
    return cnt;
}

/* Sub m's tree inside group g as a k-ary heap: position 0 is `top` (the
 * gateway, or the root), position i > 0 the (i-1)-th of heap_order, with
 * parent at position (i - 1) / k.  Over subs, the inner positions go to
 * GPUs that have sent and received least so far: load-balanced shallow
 * trees (on a uniform switch each GPU's traffic over all subs is then
 * close to ring's 2 (n-1)/n S). */
static void heap_group(const milp_net_t *net, int32_t g, int32_t top,
                       int32_t k, const int32_t *xload, int32_t *par)
{
    int32_t order[MILP_MAX_RANKS + 1];
    int32_t cnt = heap_order(net, g, top, xload, order + 1);

    order[0] = top;
    for (int32_t i = 1; i <= cnt; i++)
        par[order[i]] = order[(i - 1) / k];
}

/* Trees of in-group shape `shape % HEUR_NSHAPE` (0 star, 1 chain, 2
 * shortest paths, HEUR_HEAP_FIRST + j: heap of arity j + 2); gateways to
 * the root (a chain of groups when shape >= HEUR_NSHAPE).  order: groups
 * by egress, largest first. */
static void heur_trees(const milp_net_t *net, const milp_spec_t *sp,
                       const int32_t *order, int32_t shape, milp_plan_t *p)
{
    int32_t n = net->n, ns = net->nsrv;
    int32_t xload[MILP_MAX_RANKS] = { 0 };   /* arcs at each GPU so far */
    bool chain = shape >= HEUR_NSHAPE;   /* gateways in a chain */

    shape %= HEUR_NSHAPE;

    for (int32_t m = 0; m < sp->m; m++) {
        int32_t *par = p->parent + (size_t)m * n;
        int32_t rg = sp->root >= 0 ? net->srv[sp->root] : order[m % ns];
        int32_t root = milp_gateway(net, sp, m, rg);

        if (shape >= HEUR_HEAP_FIRST && ns == 1 && sp->root < 0) {
            /* One group, free root: the least loaded GPU, ties in rank
             * order from the gateway. */
            int32_t cand[MILP_MAX_RANKS];

            if (heap_order(net, rg, root, xload, cand) > 0 &&
                xload[cand[0]] < xload[root])
                root = cand[0];
        }
        p->root[m] = root;
        for (int32_t u = 0; u < n; u++) {
            int32_t g = net->srv[u], gw = milp_gateway(net, sp, m, g);
            int32_t size = net->srv_size[g];

            if (g == rg)
                gw = root;
            if (u == root) {
                par[u] = -1;
            } else if (u == gw && chain) {
                /* Chain of groups from the smallest egress to the root's
                 * group: order[] is largest first, so the next group
                 * towards the root is the previous one in order[] that is
                 * not the root's (the root's group comes last). */
                int32_t pos = 0, next = rg;

                while (order[pos] != g)
                    pos++;
                for (int32_t i = pos - 1; i >= 0; i--)
                    if (order[i] != rg) {
                        next = order[i];
                        break;
                    }
                par[u] = next == rg ? root : milp_gateway(net, sp, m, next);
            } else if (u == gw) {
                par[u] = root;
            } else if (shape >= HEUR_HEAP_FIRST) {
                continue;   /* heap_group below */
            } else if (shape == 1) {
                /* Chain: members in rank order, rotated to start at the
                 * gateway; each sends to the one before it. */
                int32_t pos = (net->loc[u] - net->loc[gw] + size) % size;

                par[u] = net->srv_members[net->srv_first[g] +
                                          (net->loc[gw] + pos - 1) % size];
            } else if (shape == 2) {
                int32_t nx = net->route_next[u * n + gw];

                par[u] = net->srv[nx] == g ? nx : gw;
            } else {
                par[u] = gw;
            }
        }
        for (int32_t g = 0; shape >= HEUR_HEAP_FIRST && g < ns; g++)
            heap_group(net, g, g == rg ? root : milp_gateway(net, sp, m, g),
                       shape - HEUR_HEAP_FIRST + 2, xload, par);
        for (int32_t u = 0; u < n; u++)
            if (par[u] >= 0) {
                xload[u]++;
                xload[par[u]]++;
            }
    }
}

/* Tree plan of the current shape in p, scored with its own concurrency
 * for every piece size (one for all subs); updates *best / *pick when
 * strictly better (ties: the earlier candidate, the smaller piece). */
static ccs_status_t heur_score(const milp_net_t *net, const milp_spec_t *sp,
                               milp_plan_t *p, double *best, uint32_t *pick,
                               bool *better, ccs_err_t *err)
{
    double *conc = NULL;        /* owned here */
    ccs_status_t st;

    *better = false;
    if (milp_plan_check(net, sp, p, NULL) != CCS_OK)
        return CCS_OK;   /* e.g. a star on a torus: not on the links */
    st = milp_concurrency(net, sp, p, &conc, err);
    if (st != CCS_OK)
        return st;
    for (int32_t k = 0; k < sp->ncand; k++) {
        double c;

        for (int32_t m = 0; m < sp->m; m++)
            p->piece[m] = sp->cand[k];
        c = milp_plan_cost(net, sp, conc, p, NULL);
        if (c < *best - 1e-9) {
            *best = c;
            *pick = sp->cand[k];
            *better = true;
        }
    }
    free(conc);
    return CCS_OK;
}

/* Pipe loads (tree arcs, both directions as the collective uses them) of
 * tree `par` added into acc. */
static void tree_load(const milp_net_t *net, ccs_coll_t coll,
                      const int32_t *par, double *acc)
{
    for (int32_t u = 0; u < net->n; u++) {
        if (par[u] < 0)
            continue;
        if (milp_coll_up(coll))
            milp_add_route(net, acc, u, par[u], 1.0);
        if (milp_coll_down(coll))
            milp_add_route(net, acc, par[u], u, 1.0);
    }
}

/* Busiest pipe time and sum of squared pipe times of the loads acc. */
static void load_score(const milp_net_t *net, const double *acc,
                       double *mx, double *sq)
{
    *mx = 0;
    *sq = 0;
    for (int32_t q = 0; q < net->npipes; q++) {
        double x = acc[q] / net->pipe_bw_Bps[q];

        *mx = x > *mx ? x : *mx;
        *sq += x * x;
    }
}

static bool score_less(double mx, double sq, double best_mx, double best_sq)
{
    return mx < best_mx * (1 - 1e-12) ||
           (mx <= best_mx * (1 + 1e-12) && sq < best_sq * (1 - 1e-12));
}

/* Subsets of M distinct trees out of this many are enumerated; above it
 * the trees are picked greedily. */
#define HEUR_EXT_SUBSETS 5000.0

/* M of the external trees (MultiTree's, Hamiltonian).  Unrooted: M
 * distinct trees whose summed pipe loads have the lowest busiest pipe,
 * then the lowest sum of squares (every subset when there are at most
 * HEUR_EXT_SUBSETS, ties: the first in lexicographic order; else
 * greedily, one sub at a time).  Rooted: the tree of the collective's
 * root in every sub.  false when no tree fits.  acc, tmp: [npipes]
 * scratch; idx, best_idx: [M] scratch. */
static bool pick_ext_trees(const milp_net_t *net, const milp_spec_t *sp,
                           const milp_trees_t *ext, double *acc,
                           double *tmp, int32_t *idx, int32_t *best_idx,
                           milp_plan_t *p)
{
    int32_t n = net->n, np = net->npipes, M = sp->m, nt = ext->ntrees;
    double subsets = 1, best_mx = INFINITY, best_sq = INFINITY;

    for (int32_t i = 0; i < nt; i++)
        if (ext->root[i] < 0 || ext->root[i] >= n)
            return false;
    if (sp->root >= 0) {
        int32_t i = 0;

        while (i < nt && ext->root[i] != sp->root)
            i++;
        if (i == nt)
            return false;
        for (int32_t m = 0; m < M; m++)
            best_idx[m] = i;
    } else if (M > nt) {
        return false;
    } else {
        for (int32_t k = 0; k < M; k++)
            subsets = subsets * (double)(nt - k) / (double)(k + 1);
        if (subsets <= HEUR_EXT_SUBSETS) {
            for (int32_t k = 0; k < M; k++)
                idx[k] = k;
            for (;;) {
                double mx, sq;
                int32_t k = M - 1;

                memset(acc, 0, (size_t)np * sizeof(double));
                for (int32_t m = 0; m < M; m++)
                    tree_load(net, sp->coll,
                              ext->parent + (size_t)idx[m] * n, acc);
                load_score(net, acc, &mx, &sq);
                if (score_less(mx, sq, best_mx, best_sq)) {
                    best_mx = mx;
                    best_sq = sq;
                    memcpy(best_idx, idx, (size_t)M * sizeof(int32_t));
                }
                while (k >= 0 && idx[k] == nt - M + k)
                    k--;
                if (k < 0)
                    break;
                idx[k]++;
                for (int32_t j = k + 1; j < M; j++)
                    idx[j] = idx[j - 1] + 1;
            }
        } else {
            memset(acc, 0, (size_t)np * sizeof(double));
            for (int32_t m = 0; m < M; m++) {
                best_idx[m] = -1;
                best_mx = INFINITY;
                best_sq = INFINITY;
                for (int32_t i = 0; i < nt; i++) {
                    double mx, sq;
                    bool taken = false;

                    for (int32_t j = 0; j < m; j++)
                        taken = taken || best_idx[j] == i;
                    if (taken)
                        continue;
                    memcpy(tmp, acc, (size_t)np * sizeof(double));
                    tree_load(net, sp->coll, ext->parent + (size_t)i * n,
                              tmp);
                    load_score(net, tmp, &mx, &sq);
                    if (score_less(mx, sq, best_mx, best_sq)) {
                        best_idx[m] = i;
                        best_mx = mx;
                        best_sq = sq;
                    }
                }
                tree_load(net, sp->coll,
                          ext->parent + (size_t)best_idx[m] * n, acc);
            }
        }
    }
    for (int32_t m = 0; m < M; m++) {
        memcpy(p->parent + (size_t)m * n,
               ext->parent + (size_t)best_idx[m] * n,
               (size_t)n * sizeof(int32_t));
        p->root[m] = ext->root[best_idx[m]];
    }
    return true;
}

/* A plan with the equal split and the first piece size, trees not set
 * yet (alltoall: every flow direct, costed).  *out owned by the caller. */
static ccs_status_t heur_plan_init(const milp_net_t *net,
                                   const milp_spec_t *sp, milp_plan_t **out,
                                   ccs_err_t *err)
{
    int32_t n = net->n;
    milp_plan_t *p = NULL;
    ccs_status_t st = milp_plan_create(sp->coll, n, sp->m, sp->nchunks, &p,
                                       err);

    if (st != CCS_OK)
        return st;
    if (sp->coll == CCS_COLL_ALLTOALL) {
        uint32_t b = sp->nchunks / (uint32_t)n;

        for (int32_t s = 0; s < n; s++)
            for (int32_t d = 0; d < n; d++)
                if (s != d)
                    p->a2a[((size_t)s * n + d) * n + d] = b;
        p->cost_us = milp_plan_cost(net, sp, NULL, p, NULL);
    } else {
        for (int32_t m = 0; m < sp->m; m++) {
            p->count[m] = sp->nchunks / (uint32_t)sp->m +
                          ((uint32_t)m < sp->nchunks % (uint32_t)sp->m ? 1
                                                                       : 0);
            p->piece[m] = sp->cand[0];
        }
    }
    *out = p;
    return CCS_OK;
}

ccs_status_t milp_heur_plan(const milp_net_t *net, const milp_spec_t *sp,
                            milp_plan_t **out, ccs_err_t *err)
{
    milp_plan_t *p = NULL;
    int32_t order[MILP_MAX_RANKS];
    int32_t ns = net->nsrv;
    int32_t nshapes = ns > 2 ? 2 * HEUR_NSHAPE : HEUR_NSHAPE;
    double best = INFINITY;
    int32_t best_shape = 2;
    uint32_t pick = sp->cand[0];
    bool better;
    ccs_status_t st;

    st = heur_plan_init(net, sp, &p, err);
    if (st != CCS_OK || sp->coll == CCS_COLL_ALLTOALL) {
        *out = p;
        return st;
    }
    /* Groups by egress bandwidth, largest first (stable: group index). */
    for (int32_t g = 0; g < ns; g++)
        order[g] = g;
    for (int32_t i = 1; i < ns; i++) {
        int32_t g = order[i], j = i;

        while (j > 0 && net->srv_egress_Bps[order[j - 1]] <
                            net->srv_egress_Bps[g]) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = g;
    }
    for (int32_t shape = 0; shape < nshapes; shape++) {
        heur_trees(net, sp, order, shape, p);
        st = heur_score(net, sp, p, &best, &pick, &better, err);
        if (st != CCS_OK) {
            milp_plan_destroy(p);
            return st;
        }
        if (better)
            best_shape = shape;
    }
    heur_trees(net, sp, order, best_shape, p);
    for (int32_t m = 0; m < sp->m; m++)
        p->piece[m] = pick;
    p->cost_us = best;
    *out = p;
    return CCS_OK;
}

ccs_status_t milp_heur_plan_trees(const milp_net_t *net,
                                  const milp_spec_t *sp,
                                  const milp_trees_t *ext, double beat_us,
                                  milp_plan_t **out, ccs_err_t *err)
{
    milp_plan_t *p = NULL;
    double *acc = NULL;         /* owned here: tree picking */
    int32_t *idx = NULL;        /* owned here: [2 M] */
    double best = beat_us;
    uint32_t pick = sp->cand[0];
    bool better = false;
    ccs_status_t st;

    *out = NULL;
    if (sp->coll == CCS_COLL_ALLTOALL || ext == NULL || ext->ntrees <= 0)
        return CCS_OK;
    st = heur_plan_init(net, sp, &p, err);
    if (st != CCS_OK)
        return st;
    acc = calloc(2 * ((size_t)net->npipes + 1), sizeof(double));
    idx = calloc(2 * (size_t)sp->m, sizeof(int32_t));
    if (acc == NULL || idx == NULL) {
        st = ccs_err_set(err, CCS_ERR_NOMEM, "milp: out of memory");
        goto cleanup;
    }
    if (pick_ext_trees(net, sp, ext, acc, acc + net->npipes + 1, idx,
                       idx + sp->m, p)) {
        st = heur_score(net, sp, p, &best, &pick, &better, err);
        if (st != CCS_OK)
            goto cleanup;
    }
    if (better) {
        for (int32_t m = 0; m < sp->m; m++)
            p->piece[m] = pick;
        p->cost_us = best;
        *out = p;
        p = NULL;
    }

cleanup:
    free(acc);
    free(idx);
    milp_plan_destroy(p);
    return st;
}
