/*
 * sim_prep.c - the simulator's size-independent preparation: pipes (the
 * parallel links between two nodes as one), routes (cached per node pair),
 * the transfers of the schedule (paired by the IR's rule) and the groups
 * of ops per rank and step; sim_create / sim_destroy.  The model is in
 * sim.c's header and docs/simulator.md.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "units.h"
#include "sim_int.h"


/* ---- pipes ---- */

typedef struct link_key {
    int32_t src, dst, id;
} link_key_t;

static int link_key_cmp(const void *a, const void *b)
{
    const link_key_t *x = a, *y = b;

    if (x->src != y->src)
        return x->src < y->src ? -1 : 1;
    if (x->dst != y->dst)
        return x->dst < y->dst ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

static ccs_status_t build_pipes(sim_t *sim, ccs_err_t *err)
{
    const topo_t *t = sim->t;
    link_key_t *keys = NULL;   /* owned here; freed below */
    ccs_status_t st = CCS_OK;
    int32_t np = 0;
    size_t nl;

    if (t->nlinks < 0 || t->nnodes < 0)
        return ccs_err_set(err, CCS_ERR_TOPOLOGY, "%s: negative counts",
                           t->name);
    nl = (size_t)t->nlinks + 1;
    for (int32_t l = 0; l < t->nlinks; l++) {
        const topo_link_t *k = &t->links[l];
        if (!(k->bw_Bps > 0) || !isfinite(k->bw_Bps) || !(k->alpha_s >= 0) ||
            !isfinite(k->alpha_s))
            return ccs_err_set(err, CCS_ERR_TOPOLOGY,
                               "%s: link %d (%d -> %d) has alpha %g s and "
                               "bandwidth %g B/s; need alpha >= 0, bw > 0",
                               t->name, l, k->src, k->dst, k->alpha_s,
                               k->bw_Bps);
    }
    keys = malloc(sizeof(*keys) * nl);
    sim->link_pipe = malloc(sizeof(int32_t) * nl);
    sim->pipe_link = malloc(sizeof(int32_t) * nl);
    sim->pipe_bw = malloc(sizeof(double) * nl);
    if (keys == NULL || sim->link_pipe == NULL || sim->pipe_link == NULL ||
        sim->pipe_bw == NULL) {
        st = ccs_err_set(err, CCS_ERR_NOMEM, "out of memory (pipes)");
        goto cleanup;
    }
    for (int32_t l = 0; l < t->nlinks; l++) {
        keys[l].src = t->links[l].src;
        keys[l].dst = t->links[l].dst;
        keys[l].id = l;
    }
    qsort(keys, (size_t)t->nlinks, sizeof(*keys), link_key_cmp);
    for (int32_t i = 0; i < t->nlinks; i++) {
        if (i == 0 || keys[i].src != keys[i - 1].src ||
            keys[i].dst != keys[i - 1].dst) {
            sim->pipe_link[np] = keys[i].id;
            sim->pipe_bw[np] = 0;
            np++;
        }
        sim->link_pipe[keys[i].id] = np - 1;
        sim->pipe_bw[np - 1] += t->links[keys[i].id].bw_Bps;
    }
    sim->npipes = np;

cleanup:
    free(keys);
    return st;
}

/* ---- routes ---- */

static uint64_t hash64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

static ccs_status_t default_route(const topo_t *t, int32_t src, int32_t dst,
                                  int32_t *links, int32_t cap, int32_t *nhops,
                                  void *ctx, ccs_err_t *err)
{
    (void)ctx;
    return topo_route(t, src, dst, links, cap, nhops, err);
}

/* Double the route hash table. */
static bool hash_grow(sim_t *sim)
{
    uint32_t ncap = sim->hcap * 2, mask = ncap - 1;
    uint64_t *nk = calloc(ncap, sizeof(uint64_t));   /* becomes sim's */
    uint32_t *nv = calloc(ncap, sizeof(uint32_t));   /* becomes sim's */

    if (nk == NULL || nv == NULL) {
        free(nk);
        free(nv);
        return false;
    }
    for (uint32_t i = 0; i < sim->hcap; i++) {
        uint32_t j;
        if (sim->hkey[i] == 0)
            continue;
        for (j = (uint32_t)hash64(sim->hkey[i]) & mask; nk[j] != 0;
             j = (j + 1) & mask)
            ;
        nk[j] = sim->hkey[i];
        nv[j] = sim->hval[i];
    }
    free(sim->hkey);
    free(sim->hval);
    sim->hkey = nk;
    sim->hval = nv;
    sim->hcap = ncap;
    return true;
}

/* Room for one more route of `hops` hops: the hop list and the route
 * records. */
static ccs_status_t routes_reserve(sim_t *sim, uint32_t hops, ccs_err_t *err)
{
    if (hops > SIM_ROUTE_MAX_HOPS)
        return ccs_err_set(err, CCS_ERR_UNSUPPORTED,
                           "route of %u hops: the simulator takes at most %u",
                           hops, SIM_ROUTE_MAX_HOPS);
    if (!sim_grow((void **)&sim->route_pipes, &sim->rp_cap,
                  sim->rp_len + hops, sizeof(int32_t)) ||
        !sim_grow((void **)&sim->route, &sim->routes_cap, sim->nroutes + 1,
                  sizeof(sim_route_t)))
        return ccs_err_set(err, CCS_ERR_NOMEM, "out of memory (routes)");
    return CCS_OK;
}

/* Route index for node pair (u, v), computed on first use. */
static ccs_status_t route_get(sim_t *sim, const sim_opts_t *o, int32_t u,
                              int32_t v, int32_t *buf, uint32_t *out,
                              ccs_err_t *err)
{
    uint64_t key = (((uint64_t)(uint32_t)u << 32) | (uint32_t)v) + 1;
    uint32_t mask, i;
    sim_route_fn fn = (o != NULL && o->route != NULL) ? o->route
                                                     : default_route;
    void *ctx = (o != NULL) ? o->route_ctx : NULL;
    int32_t nh = 0;
    ccs_status_t st;
    double alpha = 0;

    if ((uint64_t)(sim->nroutes + 1) * 2 > sim->hcap && !hash_grow(sim))
        return ccs_err_set(err, CCS_ERR_NOMEM, "out of memory (routes)");
    mask = sim->hcap - 1;
    for (i = (uint32_t)hash64(key) & mask; sim->hkey[i] != 0;
         i = (i + 1) & mask) {
        if (sim->hkey[i] == key) {
            *out = sim->hval[i];
            return CCS_OK;
        }
    }
    st = fn(sim->t, u, v, buf, sim->t->nnodes, &nh, ctx, err);
    if (st != CCS_OK) {
        ccs_err_prefix(err, "routing node %d -> %d: ", u, v);
        return st;
    }
    if (nh < 0 || nh > sim->t->nnodes)
        return ccs_err_set(err, CCS_ERR_INTERNAL,
                           "route %d -> %d: bad hop count %d", u, v, nh);
    st = routes_reserve(sim, (uint32_t)nh, err);
    if (st != CCS_OK)
        return st;
    for (int32_t h = 0; h < nh; h++) {
        int32_t l = buf[h];
        if (l < 0 || l >= sim->t->nlinks)
            return ccs_err_set(err, CCS_ERR_INTERNAL,
                               "route %d -> %d: bad link id %d", u, v, l);
        alpha += sim->t->links[l].alpha_s;
        sim->route_pipes[sim->rp_len + (uint32_t)h] = sim->link_pipe[l];
    }
    sim->route[sim->nroutes].off = sim->rp_len;
    sim->route[sim->nroutes].len = (uint32_t)nh;
    sim->route[sim->nroutes].alpha = alpha;
    sim->route[sim->nroutes].hw = (uint32_t)sim_route_hw(sim->t, buf, nh);
    sim->rp_len += (uint32_t)nh;
    if ((uint32_t)nh > sim->maxhops)
        sim->maxhops = (uint32_t)nh;
    sim->hkey[i] = key;
    sim->hval[i] = sim->nroutes;
    *out = sim->nroutes++;
    return CCS_OK;
}

/* ---- preparation ---- */

static bool is_recv(uint8_t kind)
{
    return kind == CCS_OP_RECV || kind == CCS_OP_RECV_REDUCE;
}

static ccs_status_t build_xfers(sim_t *sim, const sim_opts_t *o,
                                ccs_err_t *err)
{
    const ccs_sched_t *s = sim->s;
    uint32_t n = sim->n, ns = sim->nsteps;
    uint32_t *xnext = NULL;   /* owned here: [ns] next transfer slot */
    uint32_t *gnext = NULL;   /* owned here: [ns] next group slot */
    uint32_t *rank_at = NULL; /* owned here: [n] rank's group in a step */
    uint32_t *nrecv = NULL;   /* owned here: [ngrp] receive ops */
    uint32_t *recv_grp = NULL; /* owned here: [ntr] receiving group */
    int32_t *rbuf = NULL;     /* owned here: route buffer */
    ccs_status_t st = CCS_OK;
    uint64_t nsend = 0, ngrp = 0;

    /* The IR's pairing rule decides whether the transfers match; past it,
     * each receiver's incoming sends per step are exactly its receives. */
    st = ccs_sched_pair_check(s, CCS_ERR_VERIFY, err);
    if (st != CCS_OK)
        return st;
    sim->step_tr_start = calloc((size_t)ns + 2, sizeof(uint32_t));
    sim->step_grp_start = calloc((size_t)ns + 2, sizeof(uint32_t));
    if (sim->step_tr_start == NULL || sim->step_grp_start == NULL)
        return ccs_err_set(err, CCS_ERR_NOMEM, "out of memory (transfers)");
    /* Counts per step first: they place every transfer and group. */
    for (uint32_t r = 0; r < n; r++) {
        const ccs_op_t *ops = s->rank_ops[r];
        for (uint32_t i = 0; i < s->rank_nops[r]; i++) {
            if (ops[i].kind == CCS_OP_SEND) {
                nsend++;
                sim->step_tr_start[ops[i].step + 1]++;
            }
            if (i == 0 || ops[i].step != ops[i - 1].step) {
                ngrp++;
                sim->step_grp_start[ops[i].step + 1]++;
            }
        }
    }
    if (nsend >= UINT32_MAX || ngrp >= UINT32_MAX)
        return ccs_err_set(err, CCS_ERR_UNSUPPORTED,
                           "schedule too large to simulate (%llu sends)",
                           (unsigned long long)nsend);
    for (uint32_t t = 0; t < ns; t++) {
        sim->step_tr_start[t + 1] += sim->step_tr_start[t];
        sim->step_grp_start[t + 1] += sim->step_grp_start[t];
    }
    sim->ntr = (uint32_t)nsend;
    sim->ngrp = (uint32_t)ngrp;
    sim->tr = malloc(sizeof(xfer_t) * (nsend + 1));
    sim->in_list = malloc(sizeof(uint32_t) * (nsend + 1));
    sim->grp = calloc(ngrp + 1, sizeof(group_t));
    sim->rank_first = malloc(sizeof(uint32_t) * ((size_t)n + 1));
    xnext = malloc(sizeof(uint32_t) * ((size_t)ns + 1));
    gnext = malloc(sizeof(uint32_t) * ((size_t)ns + 1));
    rank_at = malloc(sizeof(uint32_t) * ((size_t)n + 1));
    nrecv = calloc(ngrp + 1, sizeof(uint32_t));
    recv_grp = malloc(sizeof(uint32_t) * (nsend + 1));
    rbuf = malloc(sizeof(int32_t) * ((size_t)sim->t->nnodes + 1));
    sim->hcap = 64;
    while (sim->hcap < 2 * (uint32_t)(n < 1u << 20 ? n : 1u << 20) + 64)
        sim->hcap *= 2;
    sim->hkey = calloc(sim->hcap, sizeof(uint64_t));
    sim->hval = calloc(sim->hcap, sizeof(uint32_t));
    if (sim->tr == NULL || sim->in_list == NULL || sim->grp == NULL ||
        sim->rank_first == NULL || xnext == NULL || gnext == NULL ||
        rank_at == NULL || nrecv == NULL || recv_grp == NULL ||
        rbuf == NULL || sim->hkey == NULL || sim->hval == NULL) {
        st = ccs_err_set(err, CCS_ERR_NOMEM, "out of memory (transfers)");
        goto cleanup;
    }
    memcpy(xnext, sim->step_tr_start, sizeof(uint32_t) * ((size_t)ns + 1));
    memcpy(gnext, sim->step_grp_start, sizeof(uint32_t) * ((size_t)ns + 1));

    /* Walk the ops in (rank, op) order, as the routes and the NVLS pass
     * number them, and drop each transfer and group into its step's
     * stretch: within a step they stay in (rank, op) order. */
    for (uint32_t r = 0; r < n; r++) {
        const ccs_op_t *ops = s->rank_ops[r];
        uint32_t g = SIM_NO_GROUP;

        sim->rank_first[r] = SIM_NO_GROUP;
        for (uint32_t i = 0; i < s->rank_nops[r]; i++) {
            const ccs_op_t *op = &ops[i];
            if (i == 0 || op->step != ops[i - 1].step) {
                uint32_t ng = gnext[op->step]++;
                group_t *gp = &sim->grp[ng];
                if (g == SIM_NO_GROUP)
                    sim->rank_first[r] = ng;
                else
                    sim->grp[g].next = ng;
                g = ng;
                gp->step = op->step;
                gp->rank = r;
                gp->out_off = xnext[op->step];
                gp->next = SIM_NO_GROUP;
            }
            if (op->kind == CCS_OP_SEND) {
                xfer_t *xt = &sim->tr[xnext[op->step]++];
                xt->src = r;
                xt->dst = (uint32_t)op->peer;
                xt->step = op->step;
                xt->nchunks = op->nchunks;
                st = route_get(sim, o, sim->t->rank_node[r],
                               sim->t->rank_node[op->peer], rbuf, &xt->route,
                               err);
                if (st != CCS_OK)
                    goto cleanup;
                sim->grp[g].nout++;
            } else if (is_recv(op->kind)) {
                nrecv[g]++;
            } else {
                sim->grp[g].local_chunks += op->nchunks;
            }
        }
    }

    /* Each transfer's receiving group: the receiver's group in its step. */
    for (uint32_t r = 0; r < n; r++)
        rank_at[r] = SIM_NO_GROUP;
    for (uint32_t t = 0; t < ns; t++) {
        for (uint32_t g = sim->step_grp_start[t];
             g < sim->step_grp_start[t + 1]; g++)
            rank_at[sim->grp[g].rank] = g;
        for (uint32_t x = sim->step_tr_start[t];
             x < sim->step_tr_start[t + 1]; x++) {
            uint32_t g = rank_at[sim->tr[x].dst];
            if (g == SIM_NO_GROUP || sim->grp[g].step != t) {
                st = ccs_err_set(err, CCS_ERR_INTERNAL, "sim: step %u: "
                                 "paired send without a receive", t);
                goto cleanup;
            }
            recv_grp[x] = g;
            sim->grp[g].nin++;
        }
    }
    /* Incoming lists in group order (step, dst), each in transfer order
     * (src, op): a counting sort by receiving group. */
    for (uint32_t g = 0, off = 0; g < sim->ngrp; g++) {
        group_t *gp = &sim->grp[g];
        if (gp->nin != nrecv[g]) {
            st = ccs_err_set(err, CCS_ERR_INTERNAL, "sim: step %u: "
                             "rank %u: %u receive(s), %u paired send(s)",
                             gp->step, gp->rank, nrecv[g], gp->nin);
            goto cleanup;
        }
        gp->in_off = off;
        off += gp->nin;
        nrecv[g] = gp->in_off;   /* from here on: the next free place */
    }
    for (uint32_t x = 0; x < sim->ntr; x++)
        sim->in_list[nrecv[recv_grp[x]]++] = x;

cleanup:
    free(xnext);
    free(gnext);
    free(rank_at);
    free(nrecv);
    free(recv_grp);
    free(rbuf);
    return st;
}

/* Append route r's hops [off, off+len) as a new route (not cached: only
 * the NVLS pass asks) with r's full latency and class. */
static ccs_status_t route_sub(sim_t *sim, uint32_t r, uint32_t off,
                              uint32_t len, uint32_t *out, ccs_err_t *err)
{
    ccs_status_t st = routes_reserve(sim, len, err);

    if (st != CCS_OK)
        return st;
    memmove(&sim->route_pipes[sim->rp_len],
            &sim->route_pipes[sim->route[r].off + off],
            sizeof(int32_t) * len);
    sim->route[sim->nroutes] = sim->route[r];
    sim->route[sim->nroutes].off = sim->rp_len;
    sim->route[sim->nroutes].len = len;
    sim->rp_len += len;
    *out = sim->nroutes++;
    return CCS_OK;
}

/* In-switch reduction and multicast (sim_proto.h): transfers that the
 * switch merges keep only their side of it.  sim_nvls_trim sees the SENDs
 * in (rank, op) order (which of two merged transfers is "first" depends on
 * it); by_op maps that order to the step-major transfer ids. */
static ccs_status_t nvls_routes(sim_t *sim, ccs_err_t *err)
{
    const ccs_sched_t *s = sim->s;
    sim_nvls_xfer_t *nx = NULL;   /* owned here */
    uint32_t *off = NULL, *len = NULL;  /* owned here */
    uint32_t *by_op = NULL;       /* owned here: [ntr] transfer ids */
    int32_t *links = NULL;        /* owned here: one route's links */
    ccs_status_t st = CCS_OK;
    uint32_t j = 0;

    nx = malloc(sizeof(*nx) * ((size_t)sim->ntr + 1));
    off = malloc(sizeof(*off) * ((size_t)sim->ntr + 1));
    len = malloc(sizeof(*len) * ((size_t)sim->ntr + 1));
    by_op = malloc(sizeof(*by_op) * ((size_t)sim->ntr + 1));
    links = malloc(sizeof(*links) * ((size_t)sim->maxhops + 1));
    if (nx == NULL || off == NULL || len == NULL || by_op == NULL ||
        links == NULL) {
        st = ccs_err_set(err, CCS_ERR_NOMEM, "out of memory (nvls)");
        goto cleanup;
    }
    for (uint32_t r = 0; r < sim->n; r++) {
        uint32_t g = sim->rank_first[r], k = 0;

        for (uint32_t i = 0; i < s->rank_nops[r]; i++) {
            const ccs_op_t *op = &s->rank_ops[r][i];
            const xfer_t *xt;
            uint32_t rt, nh, x;

            if (op->kind != CCS_OP_SEND)
                continue;
            /* the rank's sends, group after group */
            while (k == sim->grp[g].nout) {
                g = sim->grp[g].next;
                k = 0;
            }
            x = sim->grp[g].out_off + k++;
            by_op[j] = x;
            xt = &sim->tr[x];
            rt = xt->route;
            nh = sim->route[rt].len;
            for (uint32_t h = 0; h < nh; h++)
                links[h] = sim->pipe_link[sim->route_pipes[sim->route[rt].off
                                                           + h]];
            nx[j] = (sim_nvls_xfer_t){ xt->step, xt->src, xt->dst,
                                       op->chunk, op->buf,
                                       sim_nvls_hop(sim->t, links,
                                                    (int32_t)nh), nh };
            j++;
        }
    }
    st = sim_nvls_trim(nx, sim->ntr, off, len, err);
    for (j = 0; st == CCS_OK && j < sim->ntr; j++) {
        xfer_t *xt = &sim->tr[by_op[j]];
        if (len[j] != nx[j].nhops)
            st = route_sub(sim, xt->route, off[j], len[j], &xt->route, err);
    }

cleanup:
    free(nx);
    free(off);
    free(len);
    free(by_op);
    free(links);
    return st;
}

static ccs_status_t alloc_run_state(sim_t *sim, ccs_err_t *err)
{
    size_t n = sim->n, ns = sim->nsteps ? sim->nsteps : 1;
    size_t np = sim->npipes ? (size_t)sim->npipes : 1;
    size_t pend = n > ns ? n : ns;

    sim->arrival = calloc(n, sizeof(double));
    sim->tr_ready = calloc((size_t)sim->ntr + 1, 1);
    sim->cur = calloc(n, sizeof(rank_pos_t));
    sim->pending = calloc(pend, sizeof(uint32_t));
    sim->rank_finish = calloc(n, sizeof(double));
    sim->step_end = calloc(ns, sizeof(double));
    /* line-aligned, so that each pipe's state is one cache line */
    sim->pipes = aligned_alloc(64, np * sizeof(pipe_st_t));
    if (sim->pipes != NULL)
        memset(sim->pipes, 0, np * sizeof(pipe_st_t));
    sim->dirty = calloc(np, sizeof(uint32_t));
    sim->comp_pipes = calloc(np, sizeof(uint32_t));
    if (sim->arrival == NULL || sim->tr_ready == NULL || sim->cur == NULL ||
        sim->pending == NULL || sim->rank_finish == NULL ||
        sim->step_end == NULL || sim->pipes == NULL || sim->dirty == NULL ||
        sim->comp_pipes == NULL)
        return ccs_err_set(err, CCS_ERR_NOMEM, "out of memory (sim state)");
    for (int32_t p = 0; p < sim->npipes; p++) {
        sim->pipes[p].bw = sim->pipe_bw[p];
        sim->pipes[p].cap = SIM_PIPE_INLINE;
    }
    return CCS_OK;
}

void sim_destroy(sim_t *sim)
{
    if (sim == NULL)
        return;
    free(sim->link_pipe);
    free(sim->pipe_link);
    free(sim->pipe_bw);
    free(sim->route);
    free(sim->route_pipes);
    free(sim->hkey);
    free(sim->hval);
    free(sim->tr);
    free(sim->in_list);
    free(sim->step_tr_start);
    free(sim->grp);
    free(sim->rank_first);
    free(sim->step_grp_start);
    free(sim->arrival);
    free(sim->tr_ready);
    free(sim->cur);
    free(sim->pending);
    free(sim->rank_finish);
    free(sim->step_end);
    if (sim->pipes != NULL) {
        for (int32_t p = 0; p < sim->npipes; p++)
            if (sim->pipes[p].cap > SIM_PIPE_INLINE)
                free(sim->pipes[p].list.heap);
    }
    free(sim->pipes);
    free(sim->dirty);
    free(sim->comp_pipes);
    free(sim->comp_flows);
    free(sim->flows);
    free(sim->pos);
    free(sim->free_slots);
    simq_free(&sim->queue);
    sim_flow_free(sim);
    free(sim);
}

ccs_status_t sim_create(const ccs_sched_t *s, const topo_t *t,
                        const sim_opts_t *o, sim_t **out, ccs_err_t *err)
{
    sim_t *sim = NULL;   /* owned here until handed to *out */
    ccs_status_t st;

    if (s == NULL || t == NULL || out == NULL)
        return ccs_err_set(err, CCS_ERR_INVALID, "sim_create: NULL argument");
    st = ccs_sched_validate(s, err);
    if (st != CCS_OK)
        return st;
    if (t->ngpus < 0 || (uint32_t)t->ngpus != s->nranks)
        return ccs_err_set(err, CCS_ERR_MISMATCH,
                           "schedule has %u ranks but topology '%s' has %d "
                           "GPUs", s->nranks, t->name, t->ngpus);
    sim = calloc(1, sizeof(*sim));
    if (sim == NULL)
        return ccs_err_set(err, CCS_ERR_NOMEM, "out of memory (sim)");
    sim->s = s;
    sim->t = t;
    sim->n = s->nranks;
    sim->nsteps = s->nsteps;
    sim->nphases = s->nphases ? s->nphases : 1;
    st = build_pipes(sim, err);
    if (st != CCS_OK)
        goto cleanup;
    st = build_xfers(sim, o, err);
    if (st != CCS_OK)
        goto cleanup;
    if (sim_sched_nvls(s)) {
        st = nvls_routes(sim, err);
        if (st != CCS_OK)
            goto cleanup;
    }
    st = alloc_run_state(sim, err);
    if (st != CCS_OK)
        goto cleanup;
    *out = sim;
    sim = NULL;

cleanup:
    sim_destroy(sim);
    return st;
}

