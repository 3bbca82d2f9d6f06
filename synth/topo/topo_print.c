/*
 * topo_print.c - a topology for people: the text summary (`ccsynth topo`)
 * and Graphviz DOT (`--dot`), both onto a caller's stream.
 */
#include <igraph.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "topo.h"
#include "topo_internal.h"

/* ---- summary ---- */

static void fmt_bw(double bw, char *buf, size_t len)
{
    if (bw >= 1e9)
        snprintf(buf, len, "%g GB/s", bw / 1e9);
    else if (bw >= 1e6)
        snprintf(buf, len, "%g MB/s", bw / 1e6);
    else
        snprintf(buf, len, "%g B/s", bw);
}

static void fmt_time(double s, char *buf, size_t len)
{
    if (s == 0)
        snprintf(buf, len, "0");
    else if (s < 1e-6)
        snprintf(buf, len, "%g ns", s * 1e9);
    else if (s < 1e-3)
        snprintf(buf, len, "%g us", s * 1e6);
    else
        snprintf(buf, len, "%g ms", s * 1e3);
}

/* Hop counts from a topo_bfs result: queue[0..n) is the BFS order, so a
 * node's parent link starts at a node already counted.  hops[v] is -1
 * for a node not reached. */
static void bfs_hops(const topo_t *t, const int32_t *parent,
                     const int32_t *queue, int32_t n, int32_t *hops)
{
    for (int32_t v = 0; v < t->nnodes; v++)
        hops[v] = -1;
    for (int32_t i = 0; i < n; i++) {
        int32_t v = queue[i];

        hops[v] = parent[v] < 0 ? 0 : hops[t->links[parent[v]].src] + 1;
    }
}

/* How many BFS sources fit in the budget (each costs nodes + links),
 * at least 1, at most `of`. */
static int32_t summary_sources(const topo_t *t, int64_t budget, int32_t of)
{
    int64_t per = (int64_t)t->nnodes + t->nlinks, k = budget / (per + 1);

    if (k < 1)
        k = 1;
    return k >= of ? of : (int32_t)k;
}

ccs_status_t topo_print_summary(const topo_t *t, FILE *f, ccs_err_t *err)
{
    return topo_print_summary_opt(t, f, 0, err);
}

ccs_status_t topo_print_summary_opt(const topo_t *t, FILE *f, int exact,
                                    ccs_err_t *err)
{
    ccs_status_t st = CCS_OK;
    int32_t nkind[TOPO_NODE_KIND_COUNT] = { 0 };
    int32_t dmin[TOPO_NODE_KIND_COUNT][2], dmax[TOPO_NODE_KIND_COUNT][2];
    double amin = INFINITY, amax = 0, bmin = INFINITY, bmax = 0;
    igraph_real_t diam = 0;
    int32_t *parent = NULL, *queue = NULL, *hops = NULL;
    uint8_t *all = NULL;
    int32_t rmax = 0, nsrc_gpu, nsrc_node;
    double rsum = 0, npairs = 0;
    char b1[32], b2[32];

    if (t == NULL || f == NULL)
        return ccs_err_set(err, CCS_ERR_INVALID, "topo_print_summary: NULL");
    for (int k = 0; k < TOPO_NODE_KIND_COUNT; k++) {
        dmin[k][0] = dmin[k][1] = INT32_MAX;
        dmax[k][0] = dmax[k][1] = 0;
    }
    for (int32_t v = 0; v < t->nnodes; v++) {
        int k = t->nodes[v].kind;
        int32_t dout = t->out_start[v + 1] - t->out_start[v];
        int32_t din = t->in_start[v + 1] - t->in_start[v];

        nkind[k]++;
        if (dout < dmin[k][0]) dmin[k][0] = dout;
        if (dout > dmax[k][0]) dmax[k][0] = dout;
        if (din < dmin[k][1]) dmin[k][1] = din;
        if (din > dmax[k][1]) dmax[k][1] = din;
    }
    for (int32_t l = 0; l < t->nlinks; l++) {
        amin = fmin(amin, t->links[l].alpha_s);
        amax = fmax(amax, t->links[l].alpha_s);
        bmin = fmin(bmin, t->links[l].bw_Bps);
        bmax = fmax(bmax, t->links[l].bw_Bps);
    }
    /* The diameter and the route statistics are all-pairs figures: one
     * BFS per source.  Past a budget of work they come from evenly spaced
     * sources and say so (a summary must stay instant at 65536 GPUs);
     * `exact` asks for every source whatever it costs. */
    nsrc_gpu = exact ? t->ngpus
                     : summary_sources(t, TOPO_SUMMARY_BUDGET, t->ngpus);
    nsrc_node = exact ? t->nnodes
                      : summary_sources(t, TOPO_SUMMARY_BUDGET, t->nnodes);
    /* ownership: all four local, freed at cleanup */
    parent = malloc((size_t)t->nnodes * sizeof(*parent));
    queue = malloc((size_t)t->nnodes * sizeof(*queue));
    hops = malloc((size_t)t->nnodes * sizeof(*hops));
    all = malloc((size_t)t->nnodes);
    if (parent == NULL || queue == NULL || hops == NULL || all == NULL) {
        st = ccs_err_set(err, CCS_ERR_NOMEM, "out of memory (summary)");
        goto cleanup;
    }
    if (nsrc_node == t->nnodes) {
        igraph_error_t ig = igraph_diameter(&t->graph->g, &diam, NULL, NULL,
                                            NULL, NULL, 1, 1);
        if (ig != IGRAPH_SUCCESS) {
            st = topo_ig_fail(err, ig, "diameter");
            goto cleanup;
        }
    } else {
        /* the largest eccentricity among the sampled nodes: a lower
         * bound, counted like igraph's (every node passes traffic) */
        memset(all, 1, (size_t)t->nnodes);
        for (int32_t i = 0; i < nsrc_node; i++) {
            int32_t v = (int32_t)((int64_t)i * t->nnodes / nsrc_node);
            int32_t n = topo_bfs(t, all, v, -1, parent, queue);

            bfs_hops(t, parent, queue, n, hops);
            if (hops[queue[n - 1]] > diam)
                diam = hops[queue[n - 1]];
        }
    }
    /* GPU-to-GPU routes, with the forwarding rule (the diameter above
     * ignores it and counts every node). */
    for (int32_t i = 0; i < nsrc_gpu; i++) {
        int32_t r = (int32_t)((int64_t)i * t->ngpus / nsrc_gpu);
        int32_t n = topo_bfs(t, t->graph->fwd, t->rank_node[r], -1, parent,
                             queue);

        bfs_hops(t, parent, queue, n, hops);
        for (int32_t q = 0; q < t->ngpus; q++) {
            int32_t h = hops[t->rank_node[q]];

            if (q == r || h < 0)
                continue;
            rsum += h;
            npairs += 1;
            if (h > rmax)
                rmax = h;
        }
    }

    fprintf(f, "topology %s\n", t->name);
    fprintf(f, "  nodes        %d: %d gpu, %d nic, %d switch\n",
            (int)t->nnodes, (int)nkind[TOPO_NODE_GPU],
            (int)nkind[TOPO_NODE_NIC], (int)nkind[TOPO_NODE_SWITCH]);
    fprintf(f, "  servers      %d\n", (int)t->nservers);
    fprintf(f, "  links        %d directed\n", (int)t->nlinks);
    for (int k = 0; k < TOPO_NODE_KIND_COUNT; k++) {
        if (nkind[k] == 0)
            continue;
        fprintf(f, "  degree %-6s out %d..%d, in %d..%d\n",
                topo_node_kind_str((topo_node_kind_t)k), (int)dmin[k][0],
                (int)dmax[k][0], (int)dmin[k][1], (int)dmax[k][1]);
    }
    if (nsrc_node == t->nnodes)
        fprintf(f, "  diameter     %.0f hops (all nodes, igraph)\n",
                (double)diam);
    else
        fprintf(f, "  diameter     >= %.0f hops (sampled: from %d of %d "
                "nodes; --exact for all)\n", (double)diam, (int)nsrc_node,
                (int)t->nnodes);
    fprintf(f, "  gpu routes   max %d hops, mean %.2f (GPUs %s)\n",
            (int)rmax, npairs > 0 ? rsum / npairs : 0.0,
            t->graph->gpus_forward ? "forward: direct network"
                                   : "do not forward");
    if (nsrc_gpu < t->ngpus)
        fprintf(f, "               sampled: routes from %d of %d GPUs "
                "(--exact for all)\n", (int)nsrc_gpu, (int)t->ngpus);
    if (t->nlinks > 0) {
        fmt_bw(bmin, b1, sizeof(b1));
        fmt_bw(bmax, b2, sizeof(b2));
        fprintf(f, "  bandwidth    %s .. %s per link\n", b1, b2);
        fmt_time(amin, b1, sizeof(b1));
        fmt_time(amax, b2, sizeof(b2));
        fprintf(f, "  alpha        %s .. %s per link\n", b1, b2);
    }
    fprintf(f, "  uniform switch %s\n", topo_is_uniform_switch(t) ? "yes"
                                                                   : "no");
    fprintf(f, "  fingerprint  %016" PRIx64 "\n", t->fingerprint);
    for (int32_t s = 0, r = 0; s < t->nservers; s++) {
        int32_t r0 = r;

        while (r < t->ngpus && t->nodes[t->rank_node[r]].server == s)
            r++;
        fprintf(f, "  server %-4d  ranks %d..%d (%d gpus)\n", (int)s,
                (int)r0, (int)r - 1, (int)(r - r0));
        if (s == 15 && t->nservers > 17) {
            fprintf(f, "  ... %d more servers\n", (int)(t->nservers - 16));
            break;
        }
    }
    if (ferror(f))
        st = ccs_err_set(err, CCS_ERR_IO, "write error (summary)");
cleanup:
    free(parent);
    free(queue);
    free(hops);
    free(all);
    return st;
}

/* ---- Graphviz ---- */

static void dot_escape(FILE *f, const char *s)
{
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fputc('\\', f);
        fputc(*s, f);
    }
}

static void dot_node(const topo_t *t, FILE *f, int32_t v, const char *ind)
{
    static const char *const shape[TOPO_NODE_KIND_COUNT] = {
        "box", "ellipse", "diamond"
    };
    const topo_node_t *n = &t->nodes[v];

    if (n->kind == TOPO_NODE_GPU)
        fprintf(f, "%sn%d [label=\"%s\\nrank %d\", shape=%s];\n", ind,
                (int)v, n->name, (int)n->rank, shape[n->kind]);
    else
        fprintf(f, "%sn%d [label=\"%s\", shape=%s];\n", ind, (int)v,
                n->name, shape[n->kind]);
}

/* Links sorted by (src, dst, alpha, bw, id): identical parallel links
 * become runs ("groups"), found with one sort instead of a scan of a
 * node's out-links per link, which is quadratic in a switch's degree. */
typedef struct dot_ent {
    int32_t src, dst, id;
    double alpha_s, bw_Bps;
} dot_ent_t;

typedef struct dot_group {
    int32_t start;              /* first entry in the sorted array */
    int32_t count;              /* parallel links in the group */
    int32_t first_id;           /* its lowest link id */
} dot_group_t;

static int dot_key_cmp(const dot_ent_t *a, const dot_ent_t *b)
{
    if (a->src != b->src)
        return a->src < b->src ? -1 : 1;
    if (a->dst != b->dst)
        return a->dst < b->dst ? -1 : 1;
    if (a->alpha_s != b->alpha_s)
        return a->alpha_s < b->alpha_s ? -1 : 1;
    if (a->bw_Bps != b->bw_Bps)
        return a->bw_Bps < b->bw_Bps ? -1 : 1;
    return 0;
}

static int dot_ent_cmp(const void *pa, const void *pb)
{
    const dot_ent_t *a = pa, *b = pb;
    int c = dot_key_cmp(a, b);

    return c != 0 ? c : (a->id > b->id) - (a->id < b->id);
}

/* Groups of one node in the order of their first link id: the order in
 * which a walk over the node's out-links meets them. */
static int dot_group_first_cmp(const void *pa, const void *pb)
{
    const dot_group_t *a = pa, *b = pb;

    return (a->first_id > b->first_id) - (a->first_id < b->first_id);
}

/* Count of the group u->v with the given alpha/bw, 0 when none. */
static int32_t dot_count(const dot_ent_t *ent, const dot_group_t *grp,
                         int32_t ngrp, int32_t u, int32_t v, double alpha,
                         double bw)
{
    dot_ent_t key = { u, v, 0, alpha, bw };
    int32_t lo = 0, hi = ngrp;

    while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2;
        int c = dot_key_cmp(&ent[grp[mid].start], &key);

        if (c == 0)
            return grp[mid].count;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return 0;
}

ccs_status_t topo_write_dot(const topo_t *t, FILE *f, ccs_err_t *err)
{
    ccs_status_t st = CCS_OK;
    dot_ent_t *ent = NULL;      /* ownership: these three local, freed */
    dot_group_t *grp = NULL, *mine = NULL;
    int32_t ngrp = 0;

    if (t == NULL || f == NULL)
        return ccs_err_set(err, CCS_ERR_INVALID, "topo_write_dot: NULL");
    fprintf(f, "digraph \"");
    dot_escape(f, t->name);
    fprintf(f, "\" {\n  node [fontsize=10];\n  edge [fontsize=8];\n");
    for (int32_t s = 0; s < t->nservers; s++) {
        fprintf(f, "  subgraph cluster_s%d {\n    label=\"server %d\";\n",
                (int)s, (int)s);
        for (int32_t v = 0; v < t->nnodes; v++)
            if (t->nodes[v].server == s)
                dot_node(t, f, v, "    ");
        fprintf(f, "  }\n");
    }
    for (int32_t v = 0; v < t->nnodes; v++)
        if (t->nodes[v].server < 0)
            dot_node(t, f, v, "  ");
    /* One edge per group of identical parallel links, in the order a
     * walk over each node's out-links meets them; a group whose mirror
     * group (v->u, same count, alpha and bw) exists is drawn once with
     * dir=both from the lower node id. */
    ent = malloc(((size_t)t->nlinks + 1) * sizeof(*ent));
    grp = malloc(((size_t)t->nlinks + 1) * sizeof(*grp));
    mine = malloc(((size_t)t->nlinks + 1) * sizeof(*mine));
    if (ent == NULL || grp == NULL || mine == NULL) {
        st = ccs_err_set(err, CCS_ERR_NOMEM, "out of memory (dot)");
        goto cleanup;
    }
    for (int32_t l = 0; l < t->nlinks; l++) {
        ent[l].src = t->links[l].src;
        ent[l].dst = t->links[l].dst;
        ent[l].id = l;
        ent[l].alpha_s = t->links[l].alpha_s;
        ent[l].bw_Bps = t->links[l].bw_Bps;
    }
    qsort(ent, (size_t)t->nlinks, sizeof(*ent), dot_ent_cmp);
    for (int32_t i = 0; i < t->nlinks; i++) {
        if (ngrp > 0 && dot_key_cmp(&ent[grp[ngrp - 1].start], &ent[i]) == 0) {
            grp[ngrp - 1].count++;
            continue;
        }
        grp[ngrp].start = i;
        grp[ngrp].count = 1;
        grp[ngrp].first_id = ent[i].id;
        ngrp++;
    }
    for (int32_t g0 = 0, g1; g0 < ngrp; g0 = g1) {
        int32_t u = ent[grp[g0].start].src, nmine;

        for (g1 = g0; g1 < ngrp && ent[grp[g1].start].src == u; g1++)
            ;
        nmine = g1 - g0;
        memcpy(mine, grp + g0, (size_t)nmine * sizeof(*mine));
        qsort(mine, (size_t)nmine, sizeof(*mine), dot_group_first_cmp);
        for (int32_t i = 0; i < nmine; i++) {
            const dot_ent_t *l = &ent[mine[i].start];
            int32_t v = l->dst, n = mine[i].count, back;
            char b1[32], b2[32];

            back = dot_count(ent, grp, ngrp, v, u, l->alpha_s, l->bw_Bps);
            if (back == n && v < u)
                continue;
            fmt_bw(l->bw_Bps, b1, sizeof(b1));
            fmt_time(l->alpha_s, b2, sizeof(b2));
            if (n > 1)
                fprintf(f, "  n%d -> n%d [label=\"%d x %s, %s\"%s];\n",
                        (int)u, (int)v, (int)n, b1, b2,
                        back == n ? ", dir=both" : "");
            else
                fprintf(f, "  n%d -> n%d [label=\"%s, %s\"%s];\n", (int)u,
                        (int)v, b1, b2, back == n ? ", dir=both" : "");
        }
    }
    fprintf(f, "}\n");
    if (ferror(f))
        st = ccs_err_set(err, CCS_ERR_IO, "write error (dot)");
cleanup:
    free(ent);
    free(grp);
    free(mine);
    return st;
}
