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

ccs_status_t topo_print_summary(const topo_t *t, FILE *f, ccs_err_t *err)
{
    ccs_status_t st = CCS_OK;
    int32_t nkind[TOPO_NODE_KIND_COUNT] = { 0 };
    int32_t dmin[TOPO_NODE_KIND_COUNT][2], dmax[TOPO_NODE_KIND_COUNT][2];
    double amin = INFINITY, amax = 0, bmin = INFINITY, bmax = 0;
    igraph_real_t diam = 0;
    int32_t *parent = NULL, *queue = NULL;
    int32_t rmax = 0;
    double rsum = 0;
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
    {
        igraph_error_t ig = igraph_diameter(&t->graph->g, &diam, NULL, NULL,
                                            NULL, NULL, 1, 1);
        if (ig != IGRAPH_SUCCESS)
            return topo_ig_fail(err, ig, "diameter");
    }
    /* GPU-to-GPU routes, with the forwarding rule (igraph's diameter
     * above ignores it and counts every node). */
    parent = malloc((size_t)t->nnodes * sizeof(*parent));
    queue = malloc((size_t)t->nnodes * sizeof(*queue));
    if (parent == NULL || queue == NULL) {
        st = ccs_err_set(err, CCS_ERR_NOMEM, "out of memory (summary)");
        goto cleanup;
    }
    for (int32_t r = 0; r < t->ngpus; r++) {
        topo_bfs(t, t->graph->fwd, t->rank_node[r], -1, parent, queue);
        for (int32_t q = 0; q < t->ngpus; q++) {
            int32_t h = 0, v = t->rank_node[q];

            if (q == r)
                continue;
            for (; parent[v] >= 0; v = t->links[parent[v]].src)
                h++;
            rsum += h;
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
    fprintf(f, "  diameter     %.0f hops (all nodes, igraph)\n", (double)diam);
    fprintf(f, "  gpu routes   max %d hops, mean %.2f (GPUs %s)\n",
            (int)rmax, t->ngpus > 1 ? rsum / ((double)t->ngpus *
                                              (t->ngpus - 1)) : 0.0,
            t->graph->gpus_forward ? "forward: direct network"
                                   : "do not forward");
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

/* Count links u->v with the given alpha/bw. */
static int32_t count_same(const topo_t *t, int32_t u, int32_t v,
                          double alpha, double bw)
{
    int32_t n = 0;

    for (int32_t k = t->out_start[u]; k < t->out_start[u + 1]; k++) {
        const topo_link_t *l = &t->links[t->out_links[k]];
        if (l->dst == v && l->alpha_s == alpha && l->bw_Bps == bw)
            n++;
    }
    return n;
}

ccs_status_t topo_write_dot(const topo_t *t, FILE *f, ccs_err_t *err)
{
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
    /* One edge per group of identical parallel links; a group whose mirror
     * group (v->u, same count, alpha and bw) exists is drawn once with
     * dir=both from the lower node id. */
    for (int32_t u = 0; u < t->nnodes; u++) {
        for (int32_t k = t->out_start[u]; k < t->out_start[u + 1]; k++) {
            const topo_link_t *l = &t->links[t->out_links[k]];
            int32_t v = l->dst, n, back, first = 1;
            char b1[32], b2[32];

            /* skip if an earlier link of u already stood for this group */
            for (int32_t j = t->out_start[u]; j < k; j++) {
                const topo_link_t *e = &t->links[t->out_links[j]];
                if (e->dst == v && e->alpha_s == l->alpha_s &&
                    e->bw_Bps == l->bw_Bps) {
                    first = 0;
                    break;
                }
            }
            if (!first)
                continue;
            n = count_same(t, u, v, l->alpha_s, l->bw_Bps);
            back = count_same(t, v, u, l->alpha_s, l->bw_Bps);
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
        return ccs_err_set(err, CCS_ERR_IO, "write error (dot)");
    return CCS_OK;
}
