/*
 * topo.c - the topology model: process-wide set-up, routes and the
 * queries on a finished topology.  Building and finishing one:
 * topo_build.c; loading a spec: topo_load.c; the summary and Graphviz
 * output: topo_print.c.
 *
 * The graph lives in igraph (a directed multigraph whose edge id is the link
 * index, with alpha and bandwidth in igraph vectors indexed by edge id); the
 * rest of ccsynth reads the plain arrays of topo_t.  igraph is used for what
 * it does well and cheaply (connected components, diameter); routes are our
 * own BFS because their tie-break must be specified exactly and because
 * GPUs may not forward traffic (below).
 *
 * Forwarding.  Every node has a "forwards" flag: whether a route may pass
 * *through* it.  Switches and NICs always may.  GPUs may only on direct
 * networks (ring, torus, mesh, dgx1: GPUs are the routers there), which a
 * topology says with gpus_forward (YAML) or its built-in kind; elsewhere a
 * GPU is only ever the first or last node of a route.
 *
 * Routes: fewest hops; equal-cost choice by destination at switches
 * (D-mod-k), lowest link id at GPUs.  topo_route first labels every node
 * with its hop distance to dst (a BFS over the reversed links that never
 * passes through a node that does not forward), then walks from src.  At
 * each node the *equal-cost next links* are its out-links, in link-id
 * order, to a node one hop nearer to dst that is dst or forwards.
 *  - At a switch or NIC with c of them, the route takes number (key mod c)
 *    and continues with key = key / c, starting from key = dst's GPU rank
 *    (its node id when dst is not a GPU).  The switch choices are thus the
 *    mixed-radix digits of the destination: D-mod-k routing on a fat-tree
 *    (Zahavi et al., as InfiniBand subnet managers and ECMP tables spread
 *    traffic).  On fattree:LxG traffic to the GPU of local index j climbs
 *    to spine j (or, when spines have parallel uplinks, to uplink j).
 *  - At a GPU (direct networks, where GPUs are the routers) it takes the
 *    first, lowest link id: with the builders' link order that is
 *    dimension-order routing on torus and mesh, as such networks do, and
 *    the lexicographically smallest link sequence among the fewest-hop
 *    routes, as before D-mod-k was added.
 * Consequences the schedules rely on: routes are deterministic and depend
 * only on (src, dst) and the topology; routes to one destination form a
 * tree; different destinations spread over a fat-tree's spines, and a
 * shift permutation (rank i sends to rank i + s mod n) loads every
 * fat-tree link at most once; where one fewest-hop route exists (switch:N,
 * dgx-*, cluster) or every choice is made at a GPU (ring, torus, mesh,
 * dgx1) the routes are those of the lexicographic rule.
 */
#include <igraph.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "topo.h"
#include "topo_init.h"
#include "topo_internal.h"

/* ---- process-wide set-up (main() and tests only) ---- */

/* igraph calls this instead of abort(); the failing igraph function then
 * returns its error code, which every call site in this file checks.  The
 * handler must release igraph's FINALLY stack, as the built-in
 * non-aborting handlers do. */
static void topo_igraph_error(const char *reason, const char *file, int line,
                              igraph_error_t code)
{
    (void)reason;
    (void)file;
    (void)line;
    (void)code;
    IGRAPH_FINALLY_FREE();
}

static void topo_igraph_warning(const char *reason, const char *file,
                                int line)
{
    (void)reason;
    (void)file;
    (void)line;
}

void topo_global_init(void)
{
    igraph_set_error_handler(topo_igraph_error);
    igraph_set_warning_handler(topo_igraph_warning);
}

const char *topo_node_kind_str(topo_node_kind_t kind)
{
    switch (kind) {
    case TOPO_NODE_GPU:
        return "gpu";
    case TOPO_NODE_NIC:
        return "nic";
    case TOPO_NODE_SWITCH:
        return "switch";
    default:
        return "?";
    }
}

/* ---- BFS over the CSR arrays, honouring the forwarding flags ---- */

/* parent[v]: link that discovered v, -2 for src, -1 unreached.  Stops as
 * soon as `stop` (>= 0) is discovered.  Returns the number of nodes
 * reached.  queue and parent have nnodes entries.  (Used by the summary;
 * routes use topo_dist_to below.) */
int32_t topo_bfs(const topo_t *t, const uint8_t *fwd, int32_t src,
                 int32_t stop, int32_t *parent, int32_t *queue)
{
    int32_t head = 0, tail = 0;

    for (int32_t v = 0; v < t->nnodes; v++)
        parent[v] = -1;
    parent[src] = -2;
    queue[tail++] = src;
    while (head < tail) {
        int32_t u = queue[head++];

        if (u != src && !fwd[u])
            continue;           /* reached, but traffic may not pass */
        for (int32_t k = t->out_start[u]; k < t->out_start[u + 1]; k++) {
            int32_t l = t->out_links[k], v = t->links[l].dst;

            if (parent[v] != -1)
                continue;
            parent[v] = l;
            queue[tail++] = v;
            if (v == stop)
                return tail;
        }
    }
    return tail;
}

/* ---- routes: fewest hops, equal-cost choice by destination digits ---- */

/* Whether v may be passed through.  fwd is the topology's flags; a
 * topo_t assembled by hand (tests) has no graph and gets the switched
 * default: switches and NICs forward, GPUs do not. */
static int route_fwd(const topo_t *t, const uint8_t *fwd, int32_t v)
{
    return fwd != NULL ? fwd[v] : t->nodes[v].kind != TOPO_NODE_GPU;
}

/* Reverse BFS from dst over in-links: dist[v] = fewest links of a route
 * from v to dst whose interior nodes forward, -1 when there is none (or
 * when v lies beyond src: the search stops once src is labelled, since a
 * route from src only visits nodes nearer to dst).  A node's in-links are
 * followed only if it is dst or forwards, so a non-forwarding node is only
 * ever a route's first node.  queue and dist have nnodes entries. */
static void topo_dist_to(const topo_t *t, const uint8_t *fwd, int32_t src,
                         int32_t dst, int32_t *dist, int32_t *queue)
{
    int32_t head = 0, tail = 0;

    for (int32_t v = 0; v < t->nnodes; v++)
        dist[v] = -1;
    dist[dst] = 0;
    queue[tail++] = dst;
    while (head < tail) {
        int32_t u = queue[head++];

        if (u != dst && !route_fwd(t, fwd, u))
            continue;           /* reached, but traffic may not pass */
        for (int32_t k = t->in_start[u]; k < t->in_start[u + 1]; k++) {
            int32_t w = t->links[t->in_links[k]].src;

            if (dist[w] != -1)
                continue;
            dist[w] = dist[u] + 1;
            if (w == src)
                return;
            queue[tail++] = w;
        }
    }
}

/* The destination key whose mixed-radix digits pick the equal-cost
 * branches: a GPU's rank, any other node's id. */
static uint32_t route_key(const topo_t *t, int32_t dst)
{
    int32_t r = t->nodes[dst].rank;

    return (uint32_t)(r >= 0 ? r : dst);
}

/* Whether link l is an equal-cost next link toward dst: its head is
 * `want` links from dst and is dst or forwards. */
static int route_next(const topo_t *t, const uint8_t *fwd,
                      const int32_t *dist, int32_t l, int32_t dst,
                      int32_t want)
{
    int32_t v = t->links[l].dst;

    return dist[v] == want && (v == dst || route_fwd(t, fwd, v));
}

ccs_status_t topo_route(const topo_t *t, int32_t src, int32_t dst,
                        int32_t *links, int32_t cap, int32_t *nhops,
                        ccs_err_t *err)
{
    ccs_status_t st = CCS_OK;
    int32_t *dist = NULL, *queue = NULL;
    const uint8_t *fwd;
    uint32_t key;
    int32_t at, h;

    if (t == NULL || nhops == NULL || (cap > 0 && links == NULL))
        return ccs_err_set(err, CCS_ERR_INVALID, "topo_route: bad argument");
    if (src < 0 || src >= t->nnodes || dst < 0 || dst >= t->nnodes)
        return ccs_err_set(err, CCS_ERR_INVALID,
                           "topo_route: node %d or %d out of range 0..%d",
                           (int)src, (int)dst, (int)t->nnodes - 1);
    if (src == dst) {
        *nhops = 0;
        return CCS_OK;
    }
    /* ownership: both local, freed at cleanup */
    dist = malloc((size_t)t->nnodes * sizeof(*dist));
    queue = malloc((size_t)t->nnodes * sizeof(*queue));
    if (dist == NULL || queue == NULL) {
        st = ccs_err_set(err, CCS_ERR_NOMEM, "out of memory (route)");
        goto cleanup;
    }
    fwd = t->graph != NULL ? t->graph->fwd : NULL;
    topo_dist_to(t, fwd, src, dst, dist, queue);
    if (dist[src] == -1) {
        st = ccs_err_set(err, CCS_ERR_TOPOLOGY, "%s: no route from '%s' "
                         "to '%s'", t->name, t->nodes[src].name,
                         t->nodes[dst].name);
        goto cleanup;
    }
    /* Walk forward.  At node `at` the equal-cost next links are its
     * out-links (id order) to a node one hop nearer to dst that is dst or
     * forwards; a GPU takes the first, a switch or NIC with c of them
     * takes number key mod c and continues with key / c (the top
     * comment). */
    key = route_key(t, dst);
    at = src;
    h = dist[src];
    for (int32_t k = 0; k < h; k++) {
        int32_t c = 0, pick, chosen = -1;

        for (int32_t i = t->out_start[at]; i < t->out_start[at + 1]; i++)
            c += route_next(t, fwd, dist, t->out_links[i], dst, h - k - 1);
        if (c < 1) {            /* cannot happen: dist came from a link */
            st = ccs_err_set(err, CCS_ERR_INTERNAL, "topo_route: lost the "
                             "route at '%s'", t->nodes[at].name);
            goto cleanup;
        }
        if (t->nodes[at].kind == TOPO_NODE_GPU) {
            pick = 0;           /* a GPU router: lowest link id */
        } else {
            pick = (int32_t)(key % (uint32_t)c);
            key /= (uint32_t)c;
        }
        for (int32_t i = t->out_start[at]; chosen < 0 &&
             i < t->out_start[at + 1]; i++) {
            if (route_next(t, fwd, dist, t->out_links[i], dst, h - k - 1) &&
                pick-- == 0)
                chosen = t->out_links[i];
        }
        if (k < cap)
            links[k] = chosen;
        at = t->links[chosen].dst;
    }
    *nhops = h;
cleanup:
    free(dist);
    free(queue);
    return st;
}

int32_t topo_links_between(const topo_t *t, int32_t u, int32_t v,
                           int32_t *ids, int32_t cap)
{
    int32_t n = 0;

    if (t == NULL || u < 0 || u >= t->nnodes || v < 0 || v >= t->nnodes)
        return 0;
    for (int32_t k = t->out_start[u]; k < t->out_start[u + 1]; k++) {
        int32_t l = t->out_links[k];

        if (t->links[l].dst != v)
            continue;
        if (n < cap && ids != NULL)
            ids[n] = l;
        n++;
    }
    return n;
}

int topo_node_forwards(const topo_t *t, int32_t node)
{
    if (t == NULL || node < 0 || node >= t->nnodes)
        return 0;
    return t->graph->fwd[node];
}

int topo_gpus_forward(const topo_t *t)
{
    return t != NULL && t->graph->gpus_forward;
}

int topo_is_uniform_switch(const topo_t *t)
{
    int32_t sw = -1, per_gpu = -1;
    double alpha = 0, bw = 0;

    if (t == NULL || t->ngpus < 1)
        return 0;
    for (int32_t r = 0; r < t->ngpus; r++) {
        int32_t g = t->rank_node[r];
        int32_t nout = t->out_start[g + 1] - t->out_start[g];
        int32_t nin = t->in_start[g + 1] - t->in_start[g];

        if (nout < 1 || nout != nin || (per_gpu >= 0 && nout != per_gpu))
            return 0;
        per_gpu = nout;
        for (int32_t k = t->out_start[g]; k < t->out_start[g + 1]; k++) {
            const topo_link_t *l = &t->links[t->out_links[k]];

            if (sw < 0) {
                sw = l->dst;
                alpha = l->alpha_s;
                bw = l->bw_Bps;
                if (t->nodes[sw].kind != TOPO_NODE_SWITCH)
                    return 0;
            }
            if (l->dst != sw || l->alpha_s != alpha || l->bw_Bps != bw)
                return 0;
        }
        for (int32_t k = t->in_start[g]; k < t->in_start[g + 1]; k++) {
            const topo_link_t *l = &t->links[t->in_links[k]];

            if (l->src != sw || l->alpha_s != alpha || l->bw_Bps != bw)
                return 0;
        }
    }
    return 1;
}
