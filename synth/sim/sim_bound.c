/*
 * sim_bound.c - lower bound on the time after a straggler's arrival
 * (sim_bound.h; derivation in docs/stragglar-topo.md).
 *
 * For a cut X (a set of nodes) the bound is alpha_X + s / bw_X: bw_X sums
 * the links leaving X, alpha_X is the smallest latency of a simulator route
 * between two GPUs that uses such a link (every byte that crosses pays at
 * least that before its bandwidth phase, and all crossing bytes share
 * bw_X).  Routes are those of topo_route, the simulator's default; where a
 * cut has more than BOUND_MAX_ROUTES source-destination pairs the latency
 * term falls back to the smallest alpha of a crossing link, which is lower
 * and still sound.  Cost: O(pairs x route) per cut.
 */
#include <stdlib.h>
#include <string.h>

#include "sim_bound.h"

#define BOUND_MAX_ROUTES 20000u

typedef struct bound_ctx {
    const topo_t *t;
    unsigned char *in;    /* owned; [nnodes] 1 = inside the cut */
    int32_t *route;       /* owned; [nnodes] route scratch */
    double bytes;
} bound_ctx_t;

/* Evaluate the cut ctx->in (crossing out of it); keep it in *best when it
 * binds harder.  A cut nothing crosses is skipped. */
static ccs_status_t eval_cut(bound_ctx_t *c, const char *name,
                             sim_bound_t *best, ccs_err_t *err)
{
    const topo_t *t = c->t;
    double bw = 0, amin = -1, link_amin = -1, T;
    uint64_t pairs = 0;
    ccs_status_t st = CCS_OK;

    for (int32_t i = 0; i < t->nlinks; i++) {
        const topo_link_t *k = &t->links[i];
        if (c->in[k->src] && !c->in[k->dst]) {
            bw += k->bw_Bps;
            if (link_amin < 0 || k->alpha_s < link_amin)
                link_amin = k->alpha_s;
        }
    }
    if (bw <= 0)
        return CCS_OK;
    for (int32_t a = 0; a < t->ngpus; a++)
        pairs += c->in[t->rank_node[a]] ? (uint64_t)t->ngpus - 1 : 0;
    if (pairs > BOUND_MAX_ROUTES) {
        amin = link_amin;
    } else {
        for (int32_t a = 0; a < t->ngpus && st == CCS_OK; a++) {
            if (!c->in[t->rank_node[a]])
                continue;
            for (int32_t b = 0; b < t->ngpus && st == CCS_OK; b++) {
                int32_t nh = 0;
                double al = 0;
                int crosses = 0;
                if (b == a)
                    continue;
                st = topo_route(t, t->rank_node[a], t->rank_node[b],
                                c->route, t->nnodes, &nh, err);
                for (int32_t h = 0; st == CCS_OK && h < nh; h++) {
                    const topo_link_t *k = &t->links[c->route[h]];
                    al += k->alpha_s;
                    crosses |= c->in[k->src] && !c->in[k->dst];
                }
                if (st == CCS_OK && crosses && (amin < 0 || al < amin))
                    amin = al;
            }
        }
        if (st != CCS_OK)
            return st;
        if (amin < 0)
            amin = link_amin;
    }
    T = amin + c->bytes / bw;
    if (T > best->time_s) {
        best->time_s = T;
        best->bw_Bps = bw;
        best->alpha_s = amin;
        snprintf(best->cut, sizeof(best->cut), "%s", name);
    }
    return CCS_OK;
}

ccs_status_t sim_straggler_bound(const topo_t *t, int32_t straggler,
                                 double bytes, sim_bound_t *out,
                                 ccs_err_t *err)
{
    bound_ctx_t c = { t, NULL, NULL, bytes };
    sim_bound_t best;
    int32_t snode, V;
    char name[64];
    ccs_status_t st = CCS_OK;

    if (t == NULL || out == NULL || straggler < 0 ||
        straggler >= t->ngpus || !(bytes >= 0))
        return ccs_err_set(err, CCS_ERR_INVALID,
                           "straggler bound: straggler %d out of range or "
                           "bad size", straggler);
    memset(&best, 0, sizeof(best));
    c.in = calloc((size_t)t->nnodes, 1);                    /* owned here */
    c.route = malloc((size_t)t->nnodes * sizeof(*c.route)); /* owned here */
    if (c.in == NULL || c.route == NULL) {
        st = ccs_err_set(err, CCS_ERR_NOMEM, "straggler bound: out of "
                         "memory");
        goto cleanup;
    }
    snode = t->rank_node[straggler];
    V = t->nodes[snode].server;

    /* Its contribution must leave the straggler. */
    c.in[snode] = 1;
    st = eval_cut(&c, "out of the straggler", &best, err);
    /* The others' sums must reach it. */
    for (int32_t v = 0; v < t->nnodes; v++)
        c.in[v] = v != snode;
    if (st == CCS_OK)
        st = eval_cut(&c, "into the straggler", &best, err);
    /* Its contribution must leave its server and enter every other. */
    for (int32_t w = 0; w < t->nservers && st == CCS_OK; w++) {
        if (w == V) {
            for (int32_t v = 0; v < t->nnodes; v++)
                c.in[v] = t->nodes[v].server == w;
            st = eval_cut(&c, "out of the straggler's server", &best, err);
        } else {
            for (int32_t v = 0; v < t->nnodes; v++)
                c.in[v] = t->nodes[v].server != w;
            snprintf(name, sizeof(name), "into server %d", w);
            st = eval_cut(&c, name, &best, err);
        }
    }
    if (st == CCS_OK)
        *out = best;
cleanup:
    free(c.in);
    free(c.route);
    return st;
}
