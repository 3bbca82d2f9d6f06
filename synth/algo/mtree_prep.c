/*
 * mtree_prep.c - the setup of one MultiTree construction (mtree.c): the
 * working state's arrays, rule 1's link capacities, the parallel-link
 * pipes, the GPU-hop distances and the switched candidates of III-C3
 * (docs/multitree.md), and freeing it all.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "mtree.h"
#include "mtree_int.h"

void mtree_build_free(build_t *b)
{
    free(b->cap);
    free(b->free_out);
    free(b->out_deg);
    free(b->link_src_rank);
    free(b->nmem);
    free(b->live);
    free(b->nlive);
    free(b->last_child);
    free(b->dist);
    free(b->far_cnt);
    free(b->far_top);
    free(b->switched);
    free(b->dlink_start);
    free(b->dlink);
    free(b->dlink_rank);
    free(b->stamp);
    free(b->pnext);
    free(b->cand_start);
    free(b->cand);
    free(b->cand_off);
    free(b->cand_len);
    free(b->cand_links);
    free(b->order);
    free(b->bucket);
    free(b->step_done);
    free(b->cursor);
    free(b->nparents);
    free(b->keep);
    free(b->member);
}

/* Rule 1: capacity units per link. */
static void link_capacities(const topo_t *t, int32_t *cap)
{
    double minbw = 0;

    for (int32_t l = 0; l < t->nlinks; l++) {
        double bw = t->links[l].bw_Bps;
        if (bw > 0 && (minbw == 0 || bw < minbw))
            minbw = bw;
    }
    for (int32_t l = 0; l < t->nlinks; l++) {
        double bw = t->links[l].bw_Bps;
        double k = (minbw > 0 && bw > 0) ? bw / minbw + 0.5 : 1.0;
        cap[l] = k < 1.0 ? 1 : (k > (double)INT32_MAX / 4 ? INT32_MAX / 4
                                                         : (int32_t)k);
    }
}

/* pnext: each link's next parallel link (same src and dst, id order,
 * cyclic).  last[] is [nnodes] scratch, returned zeroed. */
static void pipes(const topo_t *t, int32_t *pnext, int32_t *last)
{
    for (int32_t u = 0; u < t->nnodes; u++) {
        int32_t a = t->out_start[u], z = t->out_start[u + 1];

        for (int32_t i = a; i < z; i++)     /* last[v]: link u->v seen */
            last[t->links[t->out_links[i]].dst] = -1;
        for (int32_t i = a; i < z; i++) {
            int32_t l = t->out_links[i], v = t->links[l].dst;
            pnext[l] = l;
            if (last[v] >= 0) {             /* insert after the previous */
                pnext[l] = pnext[last[v]];
                pnext[last[v]] = l;
            }
            last[v] = l;
        }
        for (int32_t i = a; i < z; i++)
            last[t->links[t->out_links[i]].dst] = 0;
    }
}

/* Whether every node of a rank is reached from rank 0's node along
 * links (forward) and reaches it (against them): then every rank reaches
 * every other through rank 0.  q and seen are [nnodes] scratch. */
static bool ranks_connected(const build_t *b, int32_t *q, int32_t *seen)
{
    const topo_t *t = b->t;

    for (int32_t dir = 0; dir < 2; dir++) {
        const int32_t *start = dir == 0 ? t->out_start : t->in_start;
        const int32_t *adj = dir == 0 ? t->out_links : t->in_links;
        int32_t nq = 0;

        memset(seen, 0, sizeof(*seen) * (size_t)b->nnodes);
        seen[t->rank_node[0]] = 1;
        q[nq++] = t->rank_node[0];
        for (int32_t h = 0; h < nq; h++) {
            for (int32_t i = start[q[h]]; i < start[q[h] + 1]; i++) {
                const topo_link_t *l = &t->links[adj[i]];
                int32_t y = dir == 0 ? l->dst : l->src;
                if (!seen[y]) {
                    seen[y] = 1;
                    q[nq++] = y;
                }
            }
        }
        for (int32_t r = 0; r < b->n; r++)
            if (!seen[t->rank_node[r]])
                return false;
    }
    return true;
}

/* GPU-hop distances from every root (into b->dist when it is there): a
 * level-by-level BFS in which entering a GPU starts the next level and
 * entering a switch or NIC stays on the current one.  Also checks that
 * every rank reaches every other, naming the first pair that does not;
 * without b->dist, two searches from rank 0 settle the usual case. */
static ccs_status_t all_distances(build_t *b, ccs_err_t *err)
{
    const topo_t *t = b->t;
    int32_t n = b->n, N = b->nnodes;
    int32_t *q = malloc(sizeof(*q) * (size_t)N);    /* owned here */
    int32_t *nx = malloc(sizeof(*nx) * (size_t)N);  /* owned here */
    int32_t *nd = malloc(sizeof(*nd) * (size_t)N);  /* owned here */
    ccs_status_t st = CCS_OK;

    if (q == NULL || nx == NULL || nd == NULL) {
        st = ccs_err_set(err, CCS_ERR_NOMEM, "multitree: out of memory");
        goto cleanup;
    }
    b->maxd = 0;
    if (b->dist == NULL && ranks_connected(b, q, nd))
        goto cleanup;
    for (int32_t r = 0; r < n; r++) {
        int32_t nq = 0, nnx = 0;
        for (int32_t v = 0; v < N; v++)
            nd[v] = INT32_MAX;
        nd[t->rank_node[r]] = 0;
        q[nq++] = t->rank_node[r];
        for (int32_t d = 0; nq > 0; d++) {
            nnx = 0;
            for (int32_t h = 0; h < nq; h++) {   /* q grows while scanned */
                int32_t x = q[h];
                for (int32_t i = t->out_start[x]; i < t->out_start[x + 1];
                     i++) {
                    int32_t y = t->links[t->out_links[i]].dst;
                    int32_t w = mtree_is_gpu(t, y) ? d + 1 : d;
                    if (nd[y] <= w)
                        continue;
                    nd[y] = w;
                    if (w == d)
                        q[nq++] = y;
                    else
                        nx[nnx++] = y;
                }
            }
            memcpy(q, nx, sizeof(*q) * (size_t)nnx);
            nq = nnx;
        }
        for (int32_t v = 0; v < n; v++) {
            int32_t d = nd[t->rank_node[v]];
            if (d == INT32_MAX) {
                st = ccs_err_set(err, CCS_ERR_TOPOLOGY,
                                 "multitree: topology '%s': rank %d (node "
                                 "%s) cannot reach rank %d (node %s)",
                                 t->name, r,
                                 t->nodes[t->rank_node[r]].name, v,
                                 t->nodes[t->rank_node[v]].name);
                goto cleanup;
            }
            if (b->dist != NULL)
                b->dist[(size_t)r * n + v] = (uint16_t)d;
            if (d > b->maxd)
                b->maxd = d;
        }
    }

cleanup:
    free(q);
    free(nx);
    free(nd);
    return st;
}

typedef struct cand_sort {
    int32_t hops, rot, rank, off;   /* off: route in the scratch buffer */
} cand_sort_t;

static int cmp_cand(const void *x, const void *y)
{
    const cand_sort_t *a = x, *b = y;
    if (a->hops != b->hops)
        return a->hops < b->hops ? -1 : 1;
    return (a->rot > b->rot) - (a->rot < b->rot);
}

/* Grow *arr (int32_t) to hold `need` entries; *cap doubles. */
static bool grow_i32(int32_t **arr, int32_t *cap, int64_t need)
{
    int64_t ncap = *cap;
    int32_t *na;

    if (need <= *cap)
        return true;
    while (ncap < need)
        ncap = ncap * 2 + 64;
    if (ncap > INT32_MAX)
        return false;
    na = realloc(*arr, sizeof(int32_t) * (size_t)ncap);
    if (na == NULL)
        return false;
    *arr = na;
    *cap = (int32_t)ncap;
    return true;
}

/* Switched candidates (see build_t): for every rank p with a link to a
 * switch or NIC, every other rank c whose route topo_route(p, c) has 2 or
 * more links and passes through switches and NICs only.  That route is
 * the one the simulator (and a network with deterministic ECMP / D-mod-k
 * routing) carries the transfer on, so charging exactly its links keeps
 * the step accounting true to the simulated network.  Sorted by route
 * length, then by (c - p) mod n, so that ranks spread their first picks
 * round the ring instead of all asking for rank 0 (and, with D-mod-k
 * routes, a step of equal shifts p -> p + s has no spine conflict). */
static ccs_status_t switched_candidates(build_t *b, ccs_err_t *err)
{
    const topo_t *t = b->t;
    int32_t n = b->n, nc = 0, nl = 0, ccap = 0, lcap = 0, ccap2 = 0;
    int32_t ccap3 = 0, scap = 0, rcap = b->nnodes > 0 ? b->nnodes : 1;
    int32_t *scratch = NULL;    /* owned here: routes of one p */
    cand_sort_t *cs = malloc(sizeof(*cs) * (size_t)n);   /* owned here */
    ccs_status_t st = CCS_OK;

    b->maxhops = 1;
    b->cand_start = calloc((size_t)n + 1, sizeof(int32_t));
    if (cs == NULL || b->cand_start == NULL) {
        st = ccs_err_set(err, CCS_ERR_NOMEM, "multitree: out of memory");
        goto cleanup;
    }
    for (int32_t p = 0; p < n; p++) {
        int32_t src = t->rank_node[p], k = 0, used = 0;
        bool switched = false;

        b->cand_start[p] = nc;
        for (int32_t i = t->out_start[src]; i < t->out_start[src + 1]; i++)
            switched = switched ||
                       !mtree_is_gpu(t, t->links[t->out_links[i]].dst);
        if (!switched)
            continue;
        for (int32_t c = 0; c < n; c++) {
            int32_t h = 0;
            bool through_gpu = false;

            if (c == p)
                continue;
            if (!grow_i32(&scratch, &scap, (int64_t)used + rcap)) {
                st = ccs_err_set(err, CCS_ERR_NOMEM,
                                 "multitree: out of memory");
                goto cleanup;
            }
            st = topo_route(t, src, t->rank_node[c], scratch + used, rcap,
                            &h, err);
            if (st == CCS_ERR_TOPOLOGY) {   /* all_distances names it */
                st = CCS_OK;
                continue;
            }
            if (st != CCS_OK)
                goto cleanup;
            if (h < 2 || h > rcap)
                continue;
            for (int32_t q = 0; q + 1 < h && !through_gpu; q++)
                through_gpu = mtree_is_gpu(t, t->links[scratch[used + q]].dst);
            if (through_gpu)
                continue;
            if (h >= 64) {
                st = ccs_err_set(err, CCS_ERR_UNSUPPORTED, "multitree: "
                                 "route of %d hops through switches", h);
                goto cleanup;
            }
            cs[k++] = (cand_sort_t){ h, (c - p + n) % n, c, used };
            used += h;
        }
        qsort(cs, (size_t)k, sizeof(*cs), cmp_cand);
        if (!grow_i32(&b->cand, &ccap, (int64_t)nc + k) ||
            !grow_i32(&b->cand_off, &ccap2, (int64_t)nc + k) ||
            !grow_i32(&b->cand_len, &ccap3, (int64_t)nc + k) ||
            !grow_i32(&b->cand_links, &lcap, (int64_t)nl + used)) {
            st = ccs_err_set(err, CCS_ERR_NOMEM, "multitree: out of memory");
            goto cleanup;
        }
        for (int32_t j = 0; j < k; j++) {
            int32_t h = cs[j].hops;
            b->cand[nc] = cs[j].rank;
            b->cand_off[nc] = nl;
            b->cand_len[nc] = h;
            memcpy(&b->cand_links[nl], &scratch[cs[j].off],
                   sizeof(int32_t) * (size_t)h);
            nl += h;
            nc++;
            b->has_hops[h] = true;
            if (h > b->maxhops)
                b->maxhops = h;
        }
    }
    b->cand_start[n] = nc;

cleanup:
    free(scratch);
    free(cs);
    return st;
}

/* Per rank, from its out-links: whether one leads to a switch or NIC
 * (switched), and the links to GPUs in out-link order with the rank at
 * their far end (dlink).  Two passes: count, then fill. */
static ccs_status_t rank_links(build_t *b, ccs_err_t *err)
{
    const topo_t *t = b->t;
    int32_t n = b->n;

    b->dlink_start = calloc((size_t)n + 1, sizeof(int32_t));
    b->switched = calloc((size_t)n, sizeof(bool));
    if (!b->dlink_start || !b->switched)
        return ccs_err_set(err, CCS_ERR_NOMEM, "multitree: out of memory");
    for (int32_t pass = 0; pass < 2; pass++) {
        int32_t nd = 0;
        for (int32_t p = 0; p < n; p++) {
            int32_t v = t->rank_node[p];
            b->dlink_start[p] = nd;
            for (int32_t i = t->out_start[v]; i < t->out_start[v + 1];
                 i++) {
                int32_t l = t->out_links[i], q = t->links[l].dst;
                if (!mtree_is_gpu(t, q)) {
                    b->switched[p] = true;
                    continue;
                }
                if (pass == 1) {
                    b->dlink[nd] = l;
                    b->dlink_rank[nd] = t->nodes[q].rank;
                }
                nd++;
            }
        }
        b->dlink_start[n] = nd;
        if (pass == 0) {
            b->dlink = malloc(sizeof(int32_t) * (size_t)(nd ? nd : 1));
            b->dlink_rank = malloc(sizeof(int32_t) * (size_t)(nd ? nd : 1));
            if (!b->dlink || !b->dlink_rank)
                return ccs_err_set(err, CCS_ERR_NOMEM,
                                   "multitree: out of memory");
        }
    }
    return CCS_OK;
}

ccs_status_t mtree_build_init(build_t *b, const topo_t *t,
                              const mtree_opts_t *opts, int32_t *link_cap,
                              ccs_err_t *err)
{
    int32_t n = t->ngpus, N = t->nnodes, L = t->nlinks;
    size_t nn = (size_t)n * (size_t)n;
    ccs_status_t st;

    memset(b, 0, sizeof(*b));
    b->t = t;
    b->opts = *opts;
    b->n = n;
    b->nnodes = N;
    b->nlinks = L;
    /* dist holds GPU-hop distances, at most n - 1, and live ranks */
    if (n > UINT16_MAX)
        return ccs_err_set(err, CCS_ERR_UNSUPPORTED, "multitree: %d ranks, "
                           "more than %d", n, UINT16_MAX);
    b->cap = malloc(sizeof(int32_t) * (size_t)(L ? L : 1));
    b->free_out = malloc(sizeof(int32_t) * (size_t)n);
    b->out_deg = malloc(sizeof(int32_t) * (size_t)n);
    b->link_src_rank = malloc(sizeof(int32_t) * (size_t)(L ? L : 1));
    b->nmem = calloc((size_t)n, sizeof(int32_t));
    b->live = malloc(sizeof(uint16_t) * nn);
    b->nlive = calloc((size_t)n, sizeof(int32_t));
    b->far_top = calloc((size_t)n, sizeof(int32_t));
    b->stamp = calloc((size_t)N, sizeof(int32_t));
    b->pnext = malloc(sizeof(int32_t) * (size_t)(L ? L : 1));
    b->order = malloc(sizeof(int32_t) * (size_t)n);
    b->step_done = calloc((size_t)n, sizeof(bool));
    if (!b->cap || !b->free_out || !b->out_deg || !b->link_src_rank ||
        !b->nmem || !b->live || !b->nlive || !b->far_top ||
        !b->stamp || !b->pnext || !b->order || !b->step_done)
        return ccs_err_set(err, CCS_ERR_NOMEM, "multitree: out of memory "
                           "for %d trees", n);
    if (opts->children == MTREE_CHILDREN_ONE) {
        b->last_child = malloc(sizeof(int32_t) * nn);
        if (b->last_child == NULL)
            return ccs_err_set(err, CCS_ERR_NOMEM, "multitree: out of "
                               "memory for %d trees", n);
        for (size_t i = 0; i < nn; i++)
            b->last_child[i] = -1;
    }
    if (opts->order == MTREE_ORDER_HEIGHT) {
        b->dist = malloc(sizeof(uint16_t) * nn);
        if (b->dist == NULL)
            return ccs_err_set(err, CCS_ERR_NOMEM, "multitree: out of "
                               "memory for %d trees", n);
    }
    for (int32_t r = 0; r < n; r++) {
        int32_t v = t->rank_node[r];
        if (v < 0 || v >= N || !mtree_is_gpu(t, v) || t->nodes[v].rank != r)
            return ccs_err_set(err, CCS_ERR_TOPOLOGY, "multitree: rank %d "
                               "maps to node %d, which is not GPU rank %d",
                               r, v, r);
    }
    link_capacities(t, link_cap);
    for (int32_t l = 0; l < L; l++) {
        int32_t u = t->links[l].src;
        b->link_src_rank[l] = mtree_is_gpu(t, u) ? t->nodes[u].rank : -1;
    }
    for (int32_t p = 0; p < n; p++) {
        int32_t v = t->rank_node[p];
        b->out_deg[p] = t->out_start[v + 1] - t->out_start[v];
        b->senders0 += b->out_deg[p] > 0;
    }
    pipes(t, b->pnext, b->stamp);
    st = rank_links(b, err);
    if (st == CCS_OK)
        st = all_distances(b, err);
    if (st == CCS_OK)
        st = switched_candidates(b, err);
    if (st != CCS_OK)
        return st;
    if (b->dist != NULL) {
        b->far_cnt = calloc((size_t)n * (size_t)(b->maxd + 1),
                            sizeof(int32_t));
        b->bucket = calloc((size_t)b->maxd + 1, sizeof(int32_t));
        if (b->far_cnt == NULL || b->bucket == NULL)
            return ccs_err_set(err, CCS_ERR_NOMEM,
                               "multitree: out of memory");
        for (int32_t r = 0; r < n; r++) {
            for (int32_t v = 0; v < n; v++)
                b->far_cnt[(size_t)r * (b->maxd + 1) +
                           b->dist[(size_t)r * n + v]]++;
            b->far_top[r] = b->maxd;
        }
    }
    b->cursor = calloc((size_t)n * (size_t)(b->maxhops + 1),
                       sizeof(int32_t));
    b->nparents = calloc((size_t)n, sizeof(int32_t));
    b->keep = calloc((size_t)n, sizeof(int32_t));
    b->mwords = (n + 63) / 64;
    b->member = calloc((size_t)n * (size_t)b->mwords, sizeof(uint64_t));
    if (b->cursor == NULL || b->nparents == NULL || b->keep == NULL ||
        b->member == NULL)
        return ccs_err_set(err, CCS_ERR_NOMEM, "multitree: out of memory");
    return CCS_OK;
}
