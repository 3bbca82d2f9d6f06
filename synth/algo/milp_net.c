/*
 * milp_net.c - the GPU overlay the AdapCC-style MILP is posed on (AdapCC,
 * Sec. IV-D): GPUs as vertices, one arc per ordered pair with its route
 * over the topology's pipes (links shared by routes share bandwidth), the
 * gateways of each server and which arcs a sub-collective may use; and
 * the plan (trees, roots, shares, piece sizes) with its checker.
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
