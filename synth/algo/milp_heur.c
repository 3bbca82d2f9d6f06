/*
 * milp_heur.c - overlay, cost model and parallel-tree heuristic of the
 * AdapCC-style synthesizer (AdapCC, Sec. IV-D).  See milp_heur.h and
 * docs/milp.md.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "milp_heur.h"

/* ---- overlay ---- */

void milp_net_destroy(milp_net_t *net)
{
    if (net == NULL)
        return;
    free(net->srv);
    free(net->loc);
    free(net->srv_size);
    free(net->srv_first);
    free(net->srv_members);
    free(net->srv_egress_Bps);
    free(net->pipe_bw_Bps);
    free(net->route_off);
    free(net->route_pipe);
    free(net->route_alpha_s);
    free(net->route_next);
    free(net);
}

ccs_status_t milp_net_build(const topo_t *t, milp_net_t **out,
                            ccs_err_t *err)
{
    milp_net_t *net = NULL;
    int32_t *pipe_of = NULL;    /* owned here: [nlinks] pipe of link */
    int32_t *node_srv = NULL;   /* owned here: [nnodes] group of node */
    int32_t *path = NULL;       /* owned here: route buffer */
    int32_t *srv_map = NULL;    /* owned here: server index -> group */
    int32_t n = t->ngpus, cap = t->nlinks + 1, used = 0;
    int32_t nsrv_ids = t->nservers + 1;
    ccs_status_t st = CCS_OK;

    if (n < 2 || n > MILP_MAX_RANKS)
        return ccs_err_set(err, CCS_ERR_UNSUPPORTED,
                           "milp: %d GPUs; the model supports 2..%d", n,
                           MILP_MAX_RANKS);
    /* Owned by the caller on success (milp_net_destroy). */
    net = calloc(1, sizeof(*net));
    pipe_of = malloc((size_t)t->nlinks * sizeof(*pipe_of));
    node_srv = malloc((size_t)t->nnodes * sizeof(*node_srv));
    path = malloc((size_t)cap * sizeof(*path));
    srv_map = malloc((size_t)nsrv_ids * sizeof(*srv_map));
    if (net == NULL || pipe_of == NULL || node_srv == NULL || path == NULL ||
        srv_map == NULL) {
        st = ccs_err_set(err, CCS_ERR_NOMEM, "milp: out of memory");
        goto cleanup;
    }
    net->n = n;
    net->direct = topo_gpus_forward(t) != 0;
    net->srv = calloc((size_t)n, sizeof(int32_t));
    net->loc = calloc((size_t)n, sizeof(int32_t));
    net->srv_members = calloc((size_t)n, sizeof(int32_t));
    net->srv_size = calloc((size_t)nsrv_ids, sizeof(int32_t));
    net->srv_first = calloc((size_t)nsrv_ids + 1, sizeof(int32_t));
    net->srv_egress_Bps = calloc((size_t)nsrv_ids, sizeof(double));
    net->pipe_bw_Bps = calloc((size_t)t->nlinks + 1, sizeof(double));
    net->route_off = calloc((size_t)n * n + 1, sizeof(int32_t));
    net->route_alpha_s = calloc((size_t)n * n, sizeof(double));
    net->route_next = calloc((size_t)n * n, sizeof(int32_t));
    if (net->route_next == NULL ||
        net->srv == NULL || net->loc == NULL || net->srv_members == NULL ||
        net->srv_size == NULL || net->srv_first == NULL ||
        net->srv_egress_Bps == NULL || net->pipe_bw_Bps == NULL ||
        net->route_off == NULL || net->route_alpha_s == NULL) {
        st = ccs_err_set(err, CCS_ERR_NOMEM, "milp: out of memory");
        goto cleanup;
    }

    /* Groups: servers that hold GPUs, numbered by their first rank;
     * GPUs with server -1 form one more group. */
    for (int32_t i = 0; i < nsrv_ids; i++)
        srv_map[i] = -1;
    for (int32_t r = 0; r < n; r++) {
        int32_t s = t->nodes[t->rank_node[r]].server;
        int32_t id = (s >= 0 && s < t->nservers) ? s : t->nservers;

        if (srv_map[id] < 0)
            srv_map[id] = net->nsrv++;
        net->srv[r] = srv_map[id];
        net->loc[r] = net->srv_size[net->srv[r]]++;
    }
    for (int32_t g = 0; g < net->nsrv; g++)
        net->srv_first[g + 1] = net->srv_first[g] + net->srv_size[g];
    for (int32_t r = 0; r < n; r++)
        net->srv_members[net->srv_first[net->srv[r]] + net->loc[r]] = r;
    for (int32_t v = 0; v < t->nnodes; v++) {
        int32_t s = t->nodes[v].server;

        node_srv[v] = (s >= 0 && s < t->nservers) ? srv_map[s] : -1;
        if (t->nodes[v].kind == TOPO_NODE_GPU && t->nodes[v].rank >= 0)
            node_srv[v] = net->srv[t->nodes[v].rank];
    }

    /* Pipes: one per ordered node pair, numbered by the first link. */
    for (int32_t l = 0; l < t->nlinks; l++) {
        const topo_link_t *k = &t->links[l];
        int32_t p = -1;

        if (!(k->bw_Bps > 0) || !isfinite(k->bw_Bps) ||
            !(k->alpha_s >= 0) || !isfinite(k->alpha_s)) {
            st = ccs_err_set(err, CCS_ERR_TOPOLOGY,
                             "milp: link %d has bandwidth %g B/s and alpha "
                             "%g s; the model needs bandwidth > 0 and alpha "
                             ">= 0", l, k->bw_Bps, k->alpha_s);
            goto cleanup;
        }
        for (int32_t j = t->out_start[k->src]; j < t->out_start[k->src + 1];
             j++) {
            int32_t o = t->out_links[j];

            if (o < l && t->links[o].dst == k->dst) {
                p = pipe_of[o];
                break;
            }
        }
        if (p < 0)
            p = net->npipes++;
        pipe_of[l] = p;
        net->pipe_bw_Bps[p] += k->bw_Bps;
        if (node_srv[k->src] >= 0 && node_srv[k->src] != node_srv[k->dst])
            net->srv_egress_Bps[node_srv[k->src]] += k->bw_Bps;
    }

    /* Routes between every ordered pair of ranks. */
    net->route_pipe = malloc(((size_t)n * n * (size_t)cap + 1) *
                             sizeof(int32_t));
    if (net->route_pipe == NULL) {
        st = ccs_err_set(err, CCS_ERR_NOMEM, "milp: out of memory");
        goto cleanup;
    }
    for (int32_t u = 0; u < n; u++) {
        for (int32_t v = 0; v < n; v++) {
            int32_t idx = u * n + v, hops = 0;
            double a = 0;

            net->route_off[idx] = used;
            net->route_next[idx] = v;
            if (u != v) {
                st = topo_route(t, t->rank_node[u], t->rank_node[v], path,
                                cap, &hops, err);
                if (st != CCS_OK)
                    goto cleanup;
                if (hops > cap) {
                    st = ccs_err_set(err, CCS_ERR_INTERNAL,
                                     "milp: route %d->%d longer than the "
                                     "link count", u, v);
                    goto cleanup;
                }
                for (int32_t h = hops - 1; h >= 0; h--) {
                    const topo_node_t *nd = &t->nodes[t->links[path[h]].dst];

                    if (nd->kind == TOPO_NODE_GPU && nd->rank >= 0)
                        net->route_next[idx] = nd->rank;
                }
                for (int32_t h = 0; h < hops; h++) {
                    net->route_pipe[used++] = pipe_of[path[h]];
                    a += t->links[path[h]].alpha_s;
                }
            }
            net->route_alpha_s[idx] = a;
        }
    }
    net->route_off[n * n] = used;
    *out = net;
    net = NULL;

cleanup:
    milp_net_destroy(net);
    free(pipe_of);
    free(node_srv);
    free(path);
    free(srv_map);
    return st;
}

int32_t milp_gateway(const milp_net_t *net, const milp_spec_t *sp, int32_t m,
                     int32_t g)
{
    int32_t size = net->srv_size[g];

    if (sp->root >= 0 && net->srv[sp->root] == g)
        return sp->root;
    return net->srv_members[net->srv_first[g] +
                            (int32_t)(((uint64_t)m + sp->seed) %
                                      (uint64_t)size)];
}

bool milp_arc_allowed(const milp_net_t *net, const milp_spec_t *sp,
                      int32_t m, int32_t u, int32_t v)
{
    if (u == v)
        return false;
    if (net->srv[u] == net->srv[v])
        return !net->direct || net->route_off[u * net->n + v + 1] -
                                       net->route_off[u * net->n + v] == 1;
    return milp_gateway(net, sp, m, net->srv[u]) == u &&
           milp_gateway(net, sp, m, net->srv[v]) == v;
}

/* ---- plans ---- */

void milp_plan_destroy(milp_plan_t *p)
{
    if (p == NULL)
        return;
    free(p->root);
    free(p->parent);
    free(p->count);
    free(p->piece);
    free(p->a2a);
    free(p);
}

ccs_status_t milp_plan_create(ccs_coll_t coll, int32_t n, int32_t m,
                              uint32_t nchunks, milp_plan_t **out,
                              ccs_err_t *err)
{
    /* Owned by the caller on success. */
    milp_plan_t *p = calloc(1, sizeof(*p));

    if (p == NULL)
        return ccs_err_set(err, CCS_ERR_NOMEM, "milp: out of memory");
    p->coll = coll;
    p->n = n;
    p->m = m;
    p->nchunks = nchunks;
    p->root = calloc((size_t)m, sizeof(int32_t));
    p->parent = calloc((size_t)m * (size_t)n, sizeof(int32_t));
    p->count = calloc((size_t)m, sizeof(uint32_t));
    p->piece = calloc((size_t)m, sizeof(uint32_t));
    if (coll == CCS_COLL_ALLTOALL)
        p->a2a = calloc((size_t)n * n * n, sizeof(uint32_t));
    if (p->root == NULL || p->parent == NULL || p->count == NULL ||
        p->piece == NULL || (coll == CCS_COLL_ALLTOALL && p->a2a == NULL)) {
        milp_plan_destroy(p);
        return ccs_err_set(err, CCS_ERR_NOMEM, "milp: out of memory");
    }
    *out = p;
    return CCS_OK;
}

ccs_status_t milp_plan_check(const milp_net_t *net, const milp_spec_t *sp,
                             const milp_plan_t *p, ccs_err_t *err)
{
    int32_t n = net->n;
    uint64_t sum = 0;

    if (p->n != n || p->nchunks != sp->nchunks)
        return ccs_err_set(err, CCS_ERR_INTERNAL,
                           "milp plan: %d ranks / %u chunks, instance has "
                           "%d / %u", p->n, p->nchunks, n, sp->nchunks);
    if (p->coll == CCS_COLL_ALLTOALL) {
        uint32_t b = sp->nchunks / (uint32_t)n;

        for (int32_t s = 0; s < n; s++) {
            for (int32_t d = 0; d < n; d++) {
                uint64_t f = 0;

                for (int32_t w = 0; w < n && s != d; w++)
                    f += p->a2a[((size_t)s * n + d) * n + w];
                if (s != d && f != b)
                    return ccs_err_set(err, CCS_ERR_INTERNAL,
                                       "milp plan: flow %d->%d carries %llu "
                                       "chunks, block is %u", s, d,
                                       (unsigned long long)f, b);
                if (s != d && p->a2a[((size_t)s * n + d) * n + s] != 0)
                    return ccs_err_set(err, CCS_ERR_INTERNAL,
                                       "milp plan: flow %d->%d relayed "
                                       "through its source", s, d);
            }
        }
        return CCS_OK;
    }
    for (int32_t m = 0; m < p->m; m++) {
        const int32_t *par = p->parent + (size_t)m * n;
        int32_t root = p->root[m];

        sum += p->count[m];
        if (root < 0 || root >= n || par[root] != -1)
            return ccs_err_set(err, CCS_ERR_INTERNAL,
                               "milp plan: sub %d has a bad root %d", m, root);
        if (sp->root >= 0 && root != sp->root)
            return ccs_err_set(err, CCS_ERR_INTERNAL,
                               "milp plan: sub %d rooted at %d, collective "
                               "root is %d", m, root, sp->root);
        if (p->piece[m] < 1)
            return ccs_err_set(err, CCS_ERR_INTERNAL,
                               "milp plan: sub %d has piece size 0", m);
        for (int32_t u = 0; u < n; u++) {
            int32_t v = u, hops = 0;

            if (u == root)
                continue;
            if (par[u] < 0 || par[u] >= n ||
                !milp_arc_allowed(net, sp, m, u, par[u]))
                return ccs_err_set(err, CCS_ERR_INTERNAL,
                                   "milp plan: sub %d, rank %d: parent %d "
                                   "is not an overlay arc", m, u, par[u]);
            /* Following parents must reach the root within n hops. */
            while (v != root && hops <= n) {
                v = par[v];
                hops++;
            }
            if (v != root)
                return ccs_err_set(err, CCS_ERR_INTERNAL,
                                   "milp plan: sub %d, rank %d does not "
                                   "reach root %d (cycle)", m, u, root);
        }
    }
    if (sum != sp->nchunks)
        return ccs_err_set(err, CCS_ERR_INTERNAL,
                           "milp plan: chunk counts sum to %llu, not %u",
                           (unsigned long long)sum, sp->nchunks);
    return CCS_OK;
}

/* ---- cost model ---- */

bool milp_coll_up(ccs_coll_t coll)
{
    return coll == CCS_COLL_ALLREDUCE || coll == CCS_COLL_REDUCE;
}

bool milp_coll_down(ccs_coll_t coll)
{
    return coll == CCS_COLL_ALLREDUCE || coll == CCS_COLL_BROADCAST;
}

static void add_route(const milp_net_t *net, double *acc, int32_t u,
                      int32_t v, double amount)
{
    int32_t idx = u * net->n + v;

    for (int32_t i = net->route_off[idx]; i < net->route_off[idx + 1]; i++)
        acc[net->route_pipe[i]] += amount;
}

ccs_status_t milp_concurrency(const milp_net_t *net, const milp_spec_t *sp,
                              const milp_plan_t *ref, double **out,
                              ccs_err_t *err)
{
    int32_t n = net->n, np = net->npipes, lv = 1;
    /* Owned by the caller on success. */
    double *w = calloc((size_t)sp->ncand * (size_t)(np + 1), sizeof(double));

    if (w == NULL)
        return ccs_err_set(err, CCS_ERR_NOMEM, "milp: out of memory");
    for (int32_t m = 0; ref->coll != CCS_COLL_ALLTOALL && m < ref->m; m++) {
        int32_t kids[MILP_MAX_RANKS] = { 0 }, most = 0, deep = 0;

        for (int32_t u = 0; u < n; u++) {
            int32_t v = ref->parent[(size_t)m * n + u], d = 0;

            if (v < 0)
                continue;
            kids[v]++;
            if (milp_coll_up(ref->coll))
                add_route(net, w, u, v, 1.0);
            if (milp_coll_down(ref->coll))
                add_route(net, w, v, u, 1.0);
            for (int32_t x = u; x >= 0 && d <= n; x = ref->parent[
                     (size_t)m * n + x])
                d++;
            deep = d - 1 > deep ? d - 1 : deep;
        }
        for (int32_t u = 0; u < n; u++)
            most = kids[u] > most ? kids[u] : most;
        /* Steps before a piece has crossed the tree: staggered siblings
         * plus the way down. */
        if (most + deep > lv)
            lv = most + deep;
    }
    for (int32_t k = sp->ncand - 1; k >= 0; k--) {
        uint32_t cnt = ref->m > 0 && ref->count != NULL ? ref->count[0] : 1;
        double pieces = ceil((double)cnt / (double)sp->cand[k]);
        double full = pieces >= lv ? 1.0 : pieces / (double)lv;

        for (int32_t q = 0; q < np; q++) {
            double c = w[q] * full;

            w[(size_t)k * np + q] = c < 1 ? 1 : c;
        }
    }
    *out = w;
    return CCS_OK;
}

/* Row of the concurrency table for a piece of q chunks. */
static const double *conc_row(const milp_net_t *net, const milp_spec_t *sp,
                              const double *conc, uint32_t q)
{
    int32_t k = 0;

    if (conc == NULL)
        return NULL;
    for (int32_t i = 0; i < sp->ncand; i++)
        if (sp->cand[i] <= q)
            k = i;
    return conc + (size_t)k * net->npipes;
}

double milp_hop_us(const milp_net_t *net, const milp_spec_t *sp,
                   const double *conc, int32_t u, int32_t v, uint32_t k)
{
    int32_t idx = u * net->n + v;
    const double *row = conc_row(net, sp, conc, k);
    double worst = 0;

    for (int32_t i = net->route_off[idx]; i < net->route_off[idx + 1];
         i++) {
        int32_t q = net->route_pipe[i];
        double c = (row != NULL ? row[q] : 1.0) / net->pipe_bw_Bps[q];

        if (c > worst)
            worst = c;
    }
    return 1e6 * (net->route_alpha_s[idx] + (double)k * sp->unit_bytes *
                  worst);
}

double milp_piece_us(const milp_net_t *net, const milp_spec_t *sp,
                     const double *conc, uint32_t k)
{
    const double *row = conc_row(net, sp, conc, k);
    double worst = 0;

    for (int32_t q = 0; q < net->npipes; q++) {
        double c = (row != NULL ? row[q] : 1.0) / net->pipe_bw_Bps[q];

        if (c > worst)
            worst = c;
    }
    return 1e6 * (double)k * sp->unit_bytes * worst;
}

double milp_alpha_hat_us(const milp_net_t *net, const milp_spec_t *sp,
                         int32_t m)
{
    double a = 0;

    for (int32_t u = 0; u < net->n; u++)
        for (int32_t v = 0; v < net->n; v++)
            if (milp_arc_allowed(net, sp, m, u, v) &&
                net->route_alpha_s[u * net->n + v] > a)
                a = net->route_alpha_s[u * net->n + v];
    return 1e6 * a;
}

/* Longest reduce-direction path (h) and broadcast depth (g) of tree m,
 * with pieces of k chunks.  O(n^2): fine for n <= MILP_MAX_RANKS. */
static void tree_fill(const milp_net_t *net, const milp_spec_t *sp,
                      const double *conc, const int32_t *par, int32_t root,
                      uint32_t k, double *up_us, double *down_us)
{
    double h[MILP_MAX_RANKS], b[MILP_MAX_RANKS];
    int32_t depth[MILP_MAX_RANKS], order[MILP_MAX_RANKS];
    int32_t n = net->n, cnt = 0;

    for (int32_t u = 0; u < n; u++) {
        int32_t v = u;

        depth[u] = 0;
        while (v != root && depth[u] <= n) {
            v = par[v];
            depth[u]++;
        }
        h[u] = 0;
        b[u] = 0;
    }
    /* Order ranks by depth: parents before children. */
    for (int32_t d = 0; d <= n && cnt < n; d++)
        for (int32_t u = 0; u < n; u++)
            if (depth[u] == d)
                order[cnt++] = u;
    *up_us = 0;
    *down_us = 0;
    for (int32_t i = cnt - 1; i >= 0; i--) {     /* leaves first */
        int32_t u = order[i], v = par[u];

        if (v >= 0) {
            double t = h[u] + milp_hop_us(net, sp, conc, u, v, k);

            if (t > h[v])
                h[v] = t;
        }
    }
    for (int32_t i = 0; i < cnt; i++) {          /* root first */
        int32_t u = order[i], v = par[u];

        if (v >= 0)
            b[u] = b[v] + milp_hop_us(net, sp, conc, v, u, k);
        if (h[u] > *up_us)
            *up_us = h[u];
        if (b[u] > *down_us)
            *down_us = b[u];
    }
}

double milp_plan_cost(const milp_net_t *net, const milp_spec_t *sp,
                      const double *conc, const milp_plan_t *p,
                      double *loads)
{
    double *acc = loads;   /* owned here when loads == NULL */
    double lam = 0, worst = 0, lam2 = 0;
    int32_t n = net->n;
    bool relay = false;

    if (acc == NULL)
        acc = calloc((size_t)net->npipes * 2 + 2, sizeof(double));
    else
        memset(acc, 0, (size_t)net->npipes * sizeof(double));
    if (acc == NULL)
        return INFINITY;
    if (p->coll == CCS_COLL_ALLTOALL) {
        /* Two legs: first hops (direct flows included), then relays. */
        double *acc2 = calloc((size_t)net->npipes + 1, sizeof(double));
        double ahat = 0;

        if (acc2 == NULL) {
            if (acc != loads)
                free(acc);
            return INFINITY;
        }
        for (int32_t s = 0; s < n; s++) {
            for (int32_t d = 0; d < n; d++) {
                if (s == d)
                    continue;
                if (net->route_alpha_s[s * n + d] * 1e6 > ahat)
                    ahat = net->route_alpha_s[s * n + d] * 1e6;
                for (int32_t w = 0; w < n; w++) {
                    uint32_t x = p->a2a[((size_t)s * n + d) * n + w];

                    if (x == 0)
                        continue;
                    add_route(net, acc, s, w, (double)x);
                    if (w != d) {
                        add_route(net, acc2, w, d, (double)x);
                        relay = true;
                    }
                }
            }
        }
        for (int32_t q = 0; q < net->npipes; q++) {
            acc[q] *= 1e6 * sp->unit_bytes / net->pipe_bw_Bps[q];
            acc2[q] *= 1e6 * sp->unit_bytes / net->pipe_bw_Bps[q];
            if (acc[q] > lam)
                lam = acc[q];
            if (acc2[q] > lam2)
                lam2 = acc2[q];
        }
        free(acc2);
        if (acc != loads)
            free(acc);
        return lam + lam2 + ahat * (relay ? 2 : 1);
    }
    for (int32_t m = 0; m < p->m; m++) {
        for (int32_t u = 0; u < n; u++) {
            int32_t v = p->parent[(size_t)m * n + u];

            if (v < 0)
                continue;
            if (milp_coll_up(p->coll))
                add_route(net, acc, u, v, (double)p->count[m]);
            if (milp_coll_down(p->coll))
                add_route(net, acc, v, u, (double)p->count[m]);
        }
    }
    for (int32_t q = 0; q < net->npipes; q++) {
        acc[q] *= 1e6 * sp->unit_bytes / net->pipe_bw_Bps[q];
        if (acc[q] > lam)
            lam = acc[q];
    }
    for (int32_t m = 0; m < p->m; m++) {
        double up, down, t;
        uint32_t pieces = (p->count[m] + p->piece[m] - 1) / p->piece[m];

        tree_fill(net, sp, conc, p->parent + (size_t)m * n, p->root[m],
                  p->piece[m], &up, &down);
        t = lam + (milp_coll_up(p->coll) ? up : 0) +
            (milp_coll_down(p->coll) ? down : 0) -
            milp_piece_us(net, sp, conc, p->piece[m]) +
            milp_alpha_hat_us(net, sp, m) *
                (pieces > 0 ? (double)(pieces - 1) : 0);
        t = fmax(t, lam);
        if (t > worst)
            worst = t;
    }
    if (acc != loads)
        free(acc);
    return worst;
}

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
            add_route(net, acc, u, par[u], 1.0);
        if (milp_coll_down(coll))
            add_route(net, acc, par[u], u, 1.0);
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

/* ---- Hamiltonian-cycle trees ---- */

#define HAM_STEPS 2000000L   /* DFS extensions, both cycles together */

typedef struct ham {
    int32_t n;
    const uint8_t *adj;      /* [n * n] undirected overlay edges */
    uint8_t *used;           /* [n * n] edges of the first cycle */
    int32_t path[MILP_MAX_RANKS];
    bool on[MILP_MAX_RANKS];
    long steps;
} ham_t;

static bool ham_edge(const ham_t *h, int32_t u, int32_t v)
{
    return h->adj[u * h->n + v] && !h->used[u * h->n + v];
}

/* Extend h->path[0..len) to a Hamiltonian cycle avoiding h->used; with
 * `second`, every cycle found is tried as the first of a pair (its
 * edges marked, a second cycle searched from scratch).  Returns true when
 * done (pair found, or one cycle when !second), path[] holding the last
 * cycle found; `first` receives the first cycle of the pair. */
static bool ham_dfs(ham_t *h, int32_t len, bool second, int32_t *first)
{
    int32_t n = h->n, u = h->path[len - 1];

    if (h->steps++ > HAM_STEPS)
        return false;
    if (len == n) {
        ham_t h2;
        uint8_t mark = 1;

        if (!ham_edge(h, u, h->path[0]))
            return false;
        if (!second)
            return true;
        for (int32_t i = 0; i < n; i++) {
            int32_t a = h->path[i], b = h->path[(i + 1) % n];

            h->used[a * n + b] = mark;
            h->used[b * n + a] = mark;
        }
        memcpy(first, h->path, (size_t)n * sizeof(int32_t));
        h2 = *h;
        memset(h2.on, 0, sizeof(h2.on));
        h2.path[0] = 0;
        h2.on[0] = true;
        if (ham_dfs(&h2, 1, false, NULL)) {
            memcpy(h->path, h2.path, sizeof(h->path));
            return true;
        }
        h->steps = h2.steps;
        memset(h->used, 0, (size_t)n * n);
        return false;
    }
    for (int32_t v = 0; v < n; v++) {
        if (h->on[v] || !ham_edge(h, u, v))
            continue;
        h->on[v] = true;
        h->path[len] = v;
        if (ham_dfs(h, len + 1, second, first))
            return true;
        h->on[v] = false;
        if (h->steps > HAM_STEPS)
            return false;
    }
    return false;
}

ccs_status_t milp_ham_trees(const milp_net_t *net, const milp_spec_t *sp,
                            int32_t **root, int32_t **parent,
                            int32_t *ntrees, ccs_err_t *err)
{
    int32_t n = net->n, ncyc = 0, half = n / 2;
    int32_t cyc[2][MILP_MAX_RANKS];
    uint8_t *adj = NULL, *used = NULL;    /* owned here */
    int32_t *r = NULL, *par = NULL;       /* owned here until the outputs */
    ham_t h;
    ccs_status_t st = CCS_OK;

    *root = NULL;
    *parent = NULL;
    *ntrees = 0;
    if (n < 3 || n > MILP_MAX_RANKS)
        return CCS_OK;
    adj = calloc((size_t)n * n, 1);
    used = calloc((size_t)n * n, 1);
    if (adj == NULL || used == NULL) {
        st = ccs_err_set(err, CCS_ERR_NOMEM, "milp: out of memory");
        goto cleanup;
    }
    for (int32_t u = 0; u < n; u++)
        for (int32_t v = 0; v < n; v++)
            adj[u * n + v] = u != v && milp_arc_allowed(net, sp, 0, u, v) &&
                             milp_arc_allowed(net, sp, 0, v, u);
    memset(&h, 0, sizeof(h));
    h.n = n;
    h.adj = adj;
    h.used = used;
    h.path[0] = 0;
    h.on[0] = true;
    if (ham_dfs(&h, 1, true, cyc[0])) {
        memcpy(cyc[1], h.path, (size_t)n * sizeof(int32_t));
        ncyc = 2;
    } else {
        /* No disjoint pair within the step limit: one cycle, if any. */
        memset(used, 0, (size_t)n * n);
        memset(h.on, 0, sizeof(h.on));
        h.on[0] = true;
        h.steps = 0;
        if (ham_dfs(&h, 1, false, NULL)) {
            memcpy(cyc[0], h.path, (size_t)n * sizeof(int32_t));
            ncyc = 1;
        }
    }
    if (ncyc == 0)
        goto cleanup;
    r = malloc((size_t)ncyc * n * sizeof(int32_t));
    par = malloc((size_t)ncyc * n * n * sizeof(int32_t));
    if (r == NULL || par == NULL) {
        st = ccs_err_set(err, CCS_ERR_NOMEM, "milp: out of memory");
        goto cleanup;
    }
    /* Tree (c, i): root cyc[c][i]; offsets 1..half hang towards the root
     * one way round, offsets half+1..n-1 the other way. */
    for (int32_t c = 0; c < ncyc; c++)
        for (int32_t i = 0; i < n; i++) {
            int32_t t = c * n + i, *pp = par + (size_t)t * n;

            r[t] = cyc[c][i];
            pp[cyc[c][i]] = -1;
            for (int32_t j = 1; j < n; j++)
                pp[cyc[c][(i + j) % n]] =
                    cyc[c][(i + (j <= half ? j - 1 : j + 1)) % n];
        }
    *root = r;
    *parent = par;
    *ntrees = ncyc * n;
    r = NULL;
    par = NULL;

cleanup:
    free(adj);
    free(used);
    free(r);
    free(par);
    return st;
}
