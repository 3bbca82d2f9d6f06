/*
 * sim.c - discrete-event alpha-beta simulator with link contention and
 * stragglers (DESIGN.md "The simulator"; the model in full is
 * docs/simulator.md).
 *
 * Model
 * -----
 * - Transfers.  Every SEND op is one transfer of nchunks * chunk_bytes
 *   bytes from the sender's GPU node to the receiver's; chunk_bytes is
 *   ceil(ceil(size / elem) / C) * elem, the runtime's padded chunk.
 * - Routes.  topo_route (or the caller's override): fewest hops, through
 *   switches and NICs, cached per (src node, dst node).
 * - Pipes.  All links from node u to node v (parallel links) form one pipe
 *   whose bandwidth is the sum of theirs; a route's link ids are mapped to
 *   pipes.  This is how NCCL drives parallel NVLinks (several channels), and
 *   it makes "k parallel links" and "one k-times-wider link" equal, as
 *   topo.h promises.
 * - Cost.  A transfer started at time T spends alpha(route) = the sum of its
 *   links' alphas, then enters a fluid bandwidth phase (cut-through: it
 *   occupies every pipe of its route at once).  Flows in the bandwidth
 *   phase share each pipe max-min fairly (progressive filling); a flow's
 *   rate is set by its most constrained pipe.  Rates are recomputed, only
 *   for the connected component of pipes and flows that changed, when a
 *   flow enters or leaves; a flow whose rate does not change keeps its
 *   finish time untouched (which keeps closed forms exact).  Alone on a
 *   route: alpha + bytes / bottleneck bandwidth.
 * - Local ops.  COPY and REDUCE_LOCAL cost their bytes / local_bw_Bps (free
 *   by default) and run concurrently with the step's transfers (all ops of a
 *   step read the state from the start of the step).  RECV_REDUCE's
 *   arithmetic is free (fused into the receive).
 * - Steps.  SIM_MODE_RANK (default) follows the executor: a rank runs its
 *   steps in order, posts all of a step's ops, waits for all of them, then
 *   moves to the next step in which it has ops; a transfer starts when both
 *   its sender and its receiver have reached its step.  SIM_MODE_BARRIER:
 *   step t starts when all of step t-1 has finished and every rank with ops
 *   in step t has arrived.
 * - Stragglers.  A rank does nothing before its arrival time; phase-0 steps
 *   that do not involve it run from time 0.  Total time is measured from 0.
 *
 * Implementation: one event heap (time, insertion order) for deterministic
 * order; all events of one timestamp are processed before rates are
 * recomputed once.  Pipe flow lists support O(1) removal (each flow knows
 * its position in each of its pipes' lists).
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "units.h"
#include "sim.h"

/* ---- prepared, size-independent data ---- */

typedef struct xfer {
    uint32_t src, dst;    /* ranks */
    uint32_t step;
    uint32_t nchunks;
    uint32_t route;       /* index into the route table */
} xfer_t;

typedef struct group {    /* one rank's ops in one step */
    uint32_t step;
    uint32_t rank;
    uint32_t out_off;     /* transfers sent: tr[out_off .. out_off+nout) */
    uint32_t nout;
    uint32_t in_off;      /* received: in_list[in_off .. in_off+nin) */
    uint32_t nin;
    uint64_t local_chunks; /* chunks moved by COPY / REDUCE_LOCAL */
} group_t;

typedef struct event {
    double t;             /* seconds */
    uint64_t seq;         /* insertion order: deterministic ties */
    uint32_t type;
    uint32_t a;           /* rank, step, transfer or slot */
    uint32_t v;           /* slot version (EV_DONE) */
} event_t;

enum {
    EV_ENTER,   /* rank mode: rank a enters its current group;
                   barrier mode: step a may start */
    EV_LOCAL,   /* local ops of rank a's group (rank) / step a (barrier) */
    EV_BW,      /* transfer a ends its alpha, enters the bandwidth phase */
    EV_ZDONE,   /* transfer a completes with no bandwidth phase */
    EV_DONE     /* flow slot a (version v) completes */
};

typedef struct flow {
    uint32_t xfer;
    uint32_t version;
    uint32_t mark;        /* component epoch */
    uint32_t frozen;      /* epoch in which its rate was fixed */
    double rem;           /* bytes left at `last` */
    double rate;          /* bytes/s */
    double last;          /* seconds */
    double newrate;
} flow_t;

typedef struct pent {     /* entry of a pipe's flow list */
    uint32_t slot;
    uint32_t hop;
} pent_t;

typedef struct pipe_st {
    pent_t *ent;          /* owned */
    uint32_t cnt, cap;
    uint32_t mark;        /* component epoch */
    uint32_t nunf;
    int dirty;
    double cap_rem;
    double bytes;         /* carried in this run */
} pipe_st_t;

struct sim {
    const ccs_sched_t *s;  /* borrowed */
    const topo_t *t;       /* borrowed */
    uint32_t n, nsteps, nphases;

    /* pipes */
    int32_t npipes;
    int32_t *link_pipe;    /* owned; [nlinks] */
    int32_t *pipe_link;    /* owned; [npipes] lowest link id of the pipe */
    double *pipe_bw;       /* owned; [npipes] bytes/s */

    /* routes */
    uint32_t nroutes, routes_cap;
    uint32_t *route_off;   /* owned; [routes_cap] into route_pipes */
    uint32_t *route_len;   /* owned; [routes_cap] hops */
    double *route_alpha;   /* owned; [routes_cap] seconds */
    uint8_t *route_hw;     /* owned; [routes_cap] SIM_HW_* (protocols) */
    int32_t *route_pipes;  /* owned; [rp_cap] */
    uint32_t rp_len, rp_cap;
    uint64_t *hkey;        /* owned; [hcap] (src node << 32 | dst node) + 1 */
    uint32_t *hval;        /* owned; [hcap] route index */
    uint32_t hcap;
    uint32_t maxhops;

    /* transfers and groups */
    uint32_t ntr;
    xfer_t *tr;            /* owned; [ntr] by (src, step, op order) */
    uint32_t *in_list;     /* owned; [ntr] transfer ids by (dst, step) */
    uint32_t *step_tr_start; /* owned; [nsteps+1] */
    uint32_t *step_tr;     /* owned; [ntr] transfer ids by step */
    uint32_t ngrp;
    group_t *grp;          /* owned; [ngrp] by (rank, step) */
    uint32_t *rank_grp;    /* owned; [n+1] */
    uint32_t *step_grp_start; /* owned; [nsteps+1] */
    uint32_t *step_grp;    /* owned; [ngrp] group ids by step */

    /* run state, reused between runs (all owned) */
    double chunk_bytes;
    double local_bw;
    sim_mode_t mode;
    double *arrival;       /* [n] */
    uint8_t *tr_ready;     /* [ntr] bit 0 sender, bit 1 receiver */
    uint32_t *cur;         /* [n] rank mode: current group */
    uint32_t *pending;     /* [n] rank mode; [nsteps] barrier mode */
    double *rank_finish;   /* [n] */
    double *step_end;      /* [nsteps] */
    pipe_st_t *pipes;      /* [npipes] */
    uint32_t *dirty;       /* [npipes] dirty pipe ids */
    uint32_t ndirty;
    uint32_t *comp_pipes;  /* [npipes] */
    uint32_t *comp_flows;  /* [flows_cap] */
    flow_t *flows;         /* [flows_cap] */
    uint32_t *pos;         /* [flows_cap * maxhops] index in pipe list */
    uint32_t *free_slots;  /* [flows_cap] */
    uint32_t nfree, flows_used, flows_cap, pos_cap;
    uint32_t epoch;
    event_t *heap;
    uint32_t heap_len, heap_cap;
    uint64_t seq, nevents;
    uint32_t ranks_done;
    uint32_t barrier_step; /* barrier mode: the running step */
    sim_proto_model_t pm;  /* this run's protocol model (sim_proto.h) */
    bool failed;           /* out of memory inside the event loop */
};

/* ---- small helpers ---- */

const char *sim_mode_str(sim_mode_t m)
{
    switch (m) {
    case SIM_MODE_RANK: return "rank";
    case SIM_MODE_BARRIER: return "barrier";
    default: return "?";
    }
}

ccs_status_t sim_mode_parse(const char *name, sim_mode_t *out)
{
    if (name != NULL && strcmp(name, "rank") == 0) {
        *out = SIM_MODE_RANK;
        return CCS_OK;
    }
    if (name != NULL && strcmp(name, "barrier") == 0) {
        *out = SIM_MODE_BARRIER;
        return CCS_OK;
    }
    return CCS_ERR_INVALID;
}

void sim_opts_init(sim_opts_t *o)
{
    memset(o, 0, sizeof(*o));
    o->mode = SIM_MODE_RANK;
    o->straggler = -1;
}

void sim_result_free(sim_result_t *r)
{
    if (r == NULL)
        return;
    free(r->rank_finish_s);
    free(r->phase_end_s);
    r->rank_finish_s = NULL;
    r->phase_end_s = NULL;
}

double sim_busbw_factor(ccs_coll_t coll, uint32_t nranks)
{
    double n = (double)nranks;

    if (nranks == 0)
        return 0;
    switch (coll) {
    case CCS_COLL_ALLREDUCE:
        return 2.0 * (n - 1) / n;
    case CCS_COLL_REDUCESCATTER:
    case CCS_COLL_ALLGATHER:
    case CCS_COLL_ALLTOALL:
        return (n - 1) / n;
    case CCS_COLL_BROADCAST:
    case CCS_COLL_REDUCE:
        return 1.0;
    default:
        return 0;
    }
}

/* Grow *p (elements of `size` bytes) to hold at least `need`. */
static bool grow(void **p, uint32_t *cap, uint32_t need, size_t size)
{
    uint32_t ncap;
    void *np;

    if (need <= *cap)
        return true;
    ncap = *cap ? *cap : 16;
    while (ncap < need)
        ncap = ncap > UINT32_MAX / 2 ? UINT32_MAX : ncap * 2;
    np = realloc(*p, (size_t)ncap * size);
    if (np == NULL)
        return false;
    *p = np;
    *cap = ncap;
    return true;
}

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
    if (!grow((void **)&sim->route_pipes, &sim->rp_cap,
              sim->rp_len + (uint32_t)nh, sizeof(int32_t)))
        return ccs_err_set(err, CCS_ERR_NOMEM, "out of memory (routes)");
    if (sim->nroutes == sim->routes_cap) {
        uint32_t c1 = sim->routes_cap, c2 = sim->routes_cap,
                 c3 = sim->routes_cap, c4 = sim->routes_cap;
        if (!grow((void **)&sim->route_off, &c1, sim->nroutes + 1,
                  sizeof(uint32_t)) ||
            !grow((void **)&sim->route_len, &c2, sim->nroutes + 1,
                  sizeof(uint32_t)) ||
            !grow((void **)&sim->route_alpha, &c3, sim->nroutes + 1,
                  sizeof(double)) ||
            !grow((void **)&sim->route_hw, &c4, sim->nroutes + 1,
                  sizeof(uint8_t)))
            return ccs_err_set(err, CCS_ERR_NOMEM, "out of memory (routes)");
        /* identical growth; never differs */
        if (c1 != c2 || c2 != c3 || c3 != c4)
            return ccs_err_set(err, CCS_ERR_INTERNAL, "route table growth");
        sim->routes_cap = c1;
    }
    for (int32_t h = 0; h < nh; h++) {
        int32_t l = buf[h];
        if (l < 0 || l >= sim->t->nlinks)
            return ccs_err_set(err, CCS_ERR_INTERNAL,
                               "route %d -> %d: bad link id %d", u, v, l);
        alpha += sim->t->links[l].alpha_s;
        sim->route_pipes[sim->rp_len + (uint32_t)h] = sim->link_pipe[l];
    }
    sim->route_off[sim->nroutes] = sim->rp_len;
    sim->route_len[sim->nroutes] = (uint32_t)nh;
    sim->route_alpha[sim->nroutes] = alpha;
    sim->route_hw[sim->nroutes] = (uint8_t)sim_route_hw(sim->t, buf, nh);
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
    uint32_t *cnt = NULL;     /* owned here: counting-sort buckets */
    uint32_t *nrecv = NULL;   /* owned here: [ngrp] receive ops */
    int32_t *rbuf = NULL;     /* owned here: route buffer */
    ccs_status_t st = CCS_OK;
    uint64_t nsend = 0, ngrp = 0;
    uint32_t x = 0, g = 0;

    for (uint32_t r = 0; r < n; r++) {
        const ccs_op_t *ops = s->rank_ops[r];
        for (uint32_t i = 0; i < s->rank_nops[r]; i++) {
            if (ops[i].kind == CCS_OP_SEND)
                nsend++;
            if (i == 0 || ops[i].step != ops[i - 1].step)
                ngrp++;
        }
    }
    if (nsend >= UINT32_MAX || ngrp >= UINT32_MAX)
        return ccs_err_set(err, CCS_ERR_UNSUPPORTED,
                           "schedule too large to simulate (%llu sends)",
                           (unsigned long long)nsend);
    sim->ntr = (uint32_t)nsend;
    sim->ngrp = (uint32_t)ngrp;
    sim->tr = malloc(sizeof(xfer_t) * (nsend + 1));
    sim->in_list = malloc(sizeof(uint32_t) * (nsend + 1));
    sim->step_tr = malloc(sizeof(uint32_t) * (nsend + 1));
    sim->step_tr_start = calloc((size_t)ns + 2, sizeof(uint32_t));
    sim->grp = malloc(sizeof(group_t) * (ngrp + 1));
    sim->rank_grp = malloc(sizeof(uint32_t) * ((size_t)n + 1));
    sim->step_grp = malloc(sizeof(uint32_t) * (ngrp + 1));
    sim->step_grp_start = calloc((size_t)ns + 2, sizeof(uint32_t));
    nrecv = calloc(ngrp + 1, sizeof(uint32_t));
    cnt = calloc((size_t)(ns > n ? ns : n) + 2, sizeof(uint32_t));
    rbuf = malloc(sizeof(int32_t) * ((size_t)sim->t->nnodes + 1));
    sim->hcap = 64;
    while (sim->hcap < 2 * (uint32_t)(n < 1u << 20 ? n : 1u << 20) + 64)
        sim->hcap *= 2;
    sim->hkey = calloc(sim->hcap, sizeof(uint64_t));
    sim->hval = calloc(sim->hcap, sizeof(uint32_t));
    if (sim->tr == NULL || sim->in_list == NULL || sim->step_tr == NULL ||
        sim->step_tr_start == NULL || sim->grp == NULL ||
        sim->rank_grp == NULL || sim->step_grp == NULL ||
        sim->step_grp_start == NULL || nrecv == NULL || cnt == NULL ||
        rbuf == NULL || sim->hkey == NULL || sim->hval == NULL) {
        st = ccs_err_set(err, CCS_ERR_NOMEM, "out of memory (transfers)");
        goto cleanup;
    }

    /* Transfers in (src, step, op order); groups in (rank, step). */
    for (uint32_t r = 0; r < n; r++) {
        const ccs_op_t *ops = s->rank_ops[r];
        sim->rank_grp[r] = g;
        for (uint32_t i = 0; i < s->rank_nops[r]; i++) {
            const ccs_op_t *op = &ops[i];
            if (i == 0 || op->step != ops[i - 1].step) {
                group_t *gp = &sim->grp[g++];
                memset(gp, 0, sizeof(*gp));
                gp->step = op->step;
                gp->rank = r;
                gp->out_off = x;
            }
            if (op->kind == CCS_OP_SEND) {
                xfer_t *xt = &sim->tr[x++];
                xt->src = r;
                xt->dst = (uint32_t)op->peer;
                xt->step = op->step;
                xt->nchunks = op->nchunks;
                st = route_get(sim, o, sim->t->rank_node[r],
                               sim->t->rank_node[op->peer], rbuf, &xt->route,
                               err);
                if (st != CCS_OK)
                    goto cleanup;
                sim->grp[g - 1].nout++;
            } else if (is_recv(op->kind)) {
                nrecv[g - 1]++;
            } else {
                sim->grp[g - 1].local_chunks += op->nchunks;
            }
        }
    }
    sim->rank_grp[n] = g;

    /* Counting sort by step, then a stable one by destination. */
    for (x = 0; x < sim->ntr; x++)
        sim->step_tr_start[sim->tr[x].step + 1]++;
    for (uint32_t t = 0; t < ns; t++)
        sim->step_tr_start[t + 1] += sim->step_tr_start[t];
    memcpy(cnt, sim->step_tr_start, sizeof(uint32_t) * ((size_t)ns + 1));
    for (x = 0; x < sim->ntr; x++)
        sim->step_tr[cnt[sim->tr[x].step]++] = x;
    memset(cnt, 0, sizeof(uint32_t) * ((size_t)n + 1));
    for (x = 0; x < sim->ntr; x++)
        cnt[sim->tr[x].dst + 1]++;
    for (uint32_t r = 0; r < n; r++)
        cnt[r + 1] += cnt[r];
    for (uint32_t i = 0; i < sim->ntr; i++) {
        uint32_t id = sim->step_tr[i];
        sim->in_list[cnt[sim->tr[id].dst]++] = id;
    }
    /* Now cnt[r] is the end of rank r's incoming list (start: cnt[r-1]). */
    for (uint32_t r = 0; r < n; r++) {
        uint32_t cur = r == 0 ? 0 : cnt[r - 1], end = cnt[r];
        for (g = sim->rank_grp[r]; g < sim->rank_grp[r + 1]; g++) {
            group_t *gp = &sim->grp[g];
            if (cur < end && sim->tr[sim->in_list[cur]].step < gp->step) {
                const xfer_t *xt = &sim->tr[sim->in_list[cur]];
                st = ccs_err_set(err, CCS_ERR_VERIFY,
                                 "step %u: rank %u sends to rank %u, which "
                                 "has no op in that step", xt->step, xt->src,
                                 r);
                goto cleanup;
            }
            gp->in_off = cur;
            while (cur < end && sim->tr[sim->in_list[cur]].step == gp->step)
                cur++;
            gp->nin = cur - gp->in_off;
            if (gp->nin != nrecv[g]) {
                st = ccs_err_set(err, CCS_ERR_VERIFY,
                                 "step %u: rank %u posts %u receive(s) but "
                                 "%u send(s) target it", gp->step, r,
                                 nrecv[g], gp->nin);
                goto cleanup;
            }
        }
        if (cur < end) {
            const xfer_t *xt = &sim->tr[sim->in_list[cur]];
            st = ccs_err_set(err, CCS_ERR_VERIFY,
                             "step %u: rank %u sends to rank %u, which has "
                             "no op in that step", xt->step, xt->src, r);
            goto cleanup;
        }
    }
    /* Groups by step (barrier mode). */
    for (g = 0; g < sim->ngrp; g++)
        sim->step_grp_start[sim->grp[g].step + 1]++;
    for (uint32_t t = 0; t < ns; t++)
        sim->step_grp_start[t + 1] += sim->step_grp_start[t];
    memcpy(cnt, sim->step_grp_start, sizeof(uint32_t) * ((size_t)ns + 1));
    for (g = 0; g < sim->ngrp; g++)
        sim->step_grp[cnt[sim->grp[g].step]++] = g;

cleanup:
    free(cnt);
    free(nrecv);
    free(rbuf);
    return st;
}

/* Append route r's hops [off, off+len) as a new route (not cached: only
 * the NVLS pass asks) with r's full latency and class. */
static ccs_status_t route_sub(sim_t *sim, uint32_t r, uint32_t off,
                              uint32_t len, uint32_t *out, ccs_err_t *err)
{
    uint32_t c1 = sim->routes_cap, c2 = sim->routes_cap,
             c3 = sim->routes_cap, c4 = sim->routes_cap;

    if (!grow((void **)&sim->route_pipes, &sim->rp_cap, sim->rp_len + len,
              sizeof(int32_t)) ||
        !grow((void **)&sim->route_off, &c1, sim->nroutes + 1,
              sizeof(uint32_t)) ||
        !grow((void **)&sim->route_len, &c2, sim->nroutes + 1,
              sizeof(uint32_t)) ||
        !grow((void **)&sim->route_alpha, &c3, sim->nroutes + 1,
              sizeof(double)) ||
        !grow((void **)&sim->route_hw, &c4, sim->nroutes + 1,
              sizeof(uint8_t)))
        return ccs_err_set(err, CCS_ERR_NOMEM, "out of memory (routes)");
    if (c1 != c2 || c2 != c3 || c3 != c4)
        return ccs_err_set(err, CCS_ERR_INTERNAL, "route table growth");
    sim->routes_cap = c1;
    memmove(&sim->route_pipes[sim->rp_len],
            &sim->route_pipes[sim->route_off[r] + off],
            sizeof(int32_t) * len);
    sim->route_off[sim->nroutes] = sim->rp_len;
    sim->route_len[sim->nroutes] = len;
    sim->route_alpha[sim->nroutes] = sim->route_alpha[r];
    sim->route_hw[sim->nroutes] = sim->route_hw[r];
    sim->rp_len += len;
    *out = sim->nroutes++;
    return CCS_OK;
}

/* In-switch reduction and multicast (sim_proto.h): transfers that the
 * switch merges keep only their side of it.  Transfers are numbered as
 * build_xfers numbers them: SENDs in (rank, op) order. */
static ccs_status_t nvls_routes(sim_t *sim, ccs_err_t *err)
{
    const ccs_sched_t *s = sim->s;
    sim_nvls_xfer_t *nx = NULL;   /* owned here */
    uint32_t *off = NULL, *len = NULL;  /* owned here */
    int32_t *links = NULL;        /* owned here: one route's links */
    ccs_status_t st = CCS_OK;
    uint32_t x = 0;

    nx = malloc(sizeof(*nx) * ((size_t)sim->ntr + 1));
    off = malloc(sizeof(*off) * ((size_t)sim->ntr + 1));
    len = malloc(sizeof(*len) * ((size_t)sim->ntr + 1));
    links = malloc(sizeof(*links) * ((size_t)sim->maxhops + 1));
    if (nx == NULL || off == NULL || len == NULL || links == NULL) {
        st = ccs_err_set(err, CCS_ERR_NOMEM, "out of memory (nvls)");
        goto cleanup;
    }
    for (uint32_t r = 0; r < sim->n; r++) {
        for (uint32_t i = 0; i < s->rank_nops[r]; i++) {
            const ccs_op_t *op = &s->rank_ops[r][i];
            const xfer_t *xt;
            uint32_t rt, nh;

            if (op->kind != CCS_OP_SEND)
                continue;
            xt = &sim->tr[x];
            rt = xt->route;
            nh = sim->route_len[rt];
            for (uint32_t h = 0; h < nh; h++)
                links[h] = sim->pipe_link[sim->route_pipes[sim->route_off[rt]
                                                           + h]];
            nx[x] = (sim_nvls_xfer_t){ xt->step, xt->src, xt->dst,
                                       op->chunk, op->buf,
                                       sim_nvls_hop(sim->t, links,
                                                    (int32_t)nh), nh };
            x++;
        }
    }
    st = sim_nvls_trim(nx, sim->ntr, off, len, err);
    for (x = 0; st == CCS_OK && x < sim->ntr; x++) {
        if (len[x] != nx[x].nhops)
            st = route_sub(sim, sim->tr[x].route, off[x], len[x],
                           &sim->tr[x].route, err);
    }

cleanup:
    free(nx);
    free(off);
    free(len);
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
    sim->cur = calloc(n, sizeof(uint32_t));
    sim->pending = calloc(pend, sizeof(uint32_t));
    sim->rank_finish = calloc(n, sizeof(double));
    sim->step_end = calloc(ns, sizeof(double));
    sim->pipes = calloc(np, sizeof(pipe_st_t));
    sim->dirty = calloc(np, sizeof(uint32_t));
    sim->comp_pipes = calloc(np, sizeof(uint32_t));
    if (sim->arrival == NULL || sim->tr_ready == NULL || sim->cur == NULL ||
        sim->pending == NULL || sim->rank_finish == NULL ||
        sim->step_end == NULL || sim->pipes == NULL || sim->dirty == NULL ||
        sim->comp_pipes == NULL)
        return ccs_err_set(err, CCS_ERR_NOMEM, "out of memory (sim state)");
    return CCS_OK;
}

void sim_destroy(sim_t *sim)
{
    if (sim == NULL)
        return;
    free(sim->link_pipe);
    free(sim->pipe_link);
    free(sim->pipe_bw);
    free(sim->route_off);
    free(sim->route_len);
    free(sim->route_alpha);
    free(sim->route_hw);
    free(sim->route_pipes);
    free(sim->hkey);
    free(sim->hval);
    free(sim->tr);
    free(sim->in_list);
    free(sim->step_tr_start);
    free(sim->step_tr);
    free(sim->grp);
    free(sim->rank_grp);
    free(sim->step_grp_start);
    free(sim->step_grp);
    free(sim->arrival);
    free(sim->tr_ready);
    free(sim->cur);
    free(sim->pending);
    free(sim->rank_finish);
    free(sim->step_end);
    if (sim->pipes != NULL) {
        for (int32_t p = 0; p < sim->npipes; p++)
            free(sim->pipes[p].ent);
    }
    free(sim->pipes);
    free(sim->dirty);
    free(sim->comp_pipes);
    free(sim->comp_flows);
    free(sim->flows);
    free(sim->pos);
    free(sim->free_slots);
    free(sim->heap);
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

/* ---- event heap ---- */

static bool ev_less(const event_t *a, const event_t *b)
{
    if (a->t != b->t)
        return a->t < b->t;
    return a->seq < b->seq;
}

static void push(sim_t *sim, double t, uint32_t type, uint32_t a, uint32_t v)
{
    event_t e;
    uint32_t i;

    if (!grow((void **)&sim->heap, &sim->heap_cap, sim->heap_len + 1,
              sizeof(event_t))) {
        sim->failed = true;
        return;
    }
    e.t = t;
    e.seq = sim->seq++;
    e.type = type;
    e.a = a;
    e.v = v;
    i = sim->heap_len++;
    while (i > 0) {
        uint32_t p = (i - 1) / 2;
        if (!ev_less(&e, &sim->heap[p]))
            break;
        sim->heap[i] = sim->heap[p];
        i = p;
    }
    sim->heap[i] = e;
}

static event_t pop(sim_t *sim)
{
    event_t top = sim->heap[0], last = sim->heap[--sim->heap_len];
    uint32_t i = 0, n = sim->heap_len;

    while (2 * i + 1 < n) {
        uint32_t c = 2 * i + 1;
        if (c + 1 < n && ev_less(&sim->heap[c + 1], &sim->heap[c]))
            c++;
        if (!ev_less(&sim->heap[c], &last))
            break;
        sim->heap[i] = sim->heap[c];
        i = c;
    }
    if (n > 0)
        sim->heap[i] = last;
    return top;
}

/* ---- flows ---- */

static void mark_dirty(sim_t *sim, uint32_t p)
{
    if (!sim->pipes[p].dirty) {
        sim->pipes[p].dirty = 1;
        sim->dirty[sim->ndirty++] = p;
    }
}

static bool flow_slot(sim_t *sim, uint32_t *slot)
{
    if (sim->nfree > 0) {
        *slot = sim->free_slots[--sim->nfree];
        return true;
    }
    if (sim->flows_used == sim->flows_cap) {
        uint32_t c1 = sim->flows_cap, c2 = sim->flows_cap,
                 c3 = sim->flows_cap;
        uint32_t need = sim->flows_used + 1;
        if (!grow((void **)&sim->flows, &c1, need, sizeof(flow_t)) ||
            !grow((void **)&sim->comp_flows, &c2, need, sizeof(uint32_t)) ||
            !grow((void **)&sim->free_slots, &c3, need, sizeof(uint32_t)) ||
            !grow((void **)&sim->pos, &sim->pos_cap, c1 * sim->maxhops + 1,
                  sizeof(uint32_t)))
            return false;
        /* New slots start at version 0 (older versions never existed). */
        memset(sim->flows + sim->flows_cap, 0,
               sizeof(flow_t) * (c1 - sim->flows_cap));
        sim->flows_cap = c1;
    }
    *slot = sim->flows_used++;
    return true;
}

/* Transfer x enters its bandwidth phase at time `now`. */
static void bw_start(sim_t *sim, uint32_t x, double now)
{
    const xfer_t *xt = &sim->tr[x];
    uint32_t len = sim->route_len[xt->route];
    const int32_t *rp = &sim->route_pipes[sim->route_off[xt->route]];
    /* A protocol's overhead (flags, line headers, fences) is carried as
     * extra bytes on the wire: bytes / efficiency. */
    double bytes = (double)xt->nchunks * sim->chunk_bytes /
                   sim->pm.eff[sim->route_hw[xt->route]];
    uint32_t slot;
    flow_t *f;

    if (bytes <= 0 || len == 0) {
        push(sim, now, EV_ZDONE, x, 0);
        return;
    }
    if (!flow_slot(sim, &slot)) {
        sim->failed = true;
        return;
    }
    f = &sim->flows[slot];
    f->xfer = x;
    f->version++;
    f->rem = bytes;
    f->rate = 0;
    f->last = now;
    for (uint32_t h = 0; h < len; h++) {
        pipe_st_t *p = &sim->pipes[rp[h]];
        if (!grow((void **)&p->ent, &p->cap, p->cnt + 1, sizeof(pent_t))) {
            sim->failed = true;
            return;
        }
        p->ent[p->cnt].slot = slot;
        p->ent[p->cnt].hop = h;
        sim->pos[(size_t)slot * sim->maxhops + h] = p->cnt;
        p->cnt++;
        mark_dirty(sim, (uint32_t)rp[h]);
    }
}

static void xfer_start(sim_t *sim, uint32_t x, double now)
{
    uint32_t r = sim->tr[x].route;
    double a = sim->route_alpha[r] * sim->pm.lat_scale[sim->route_hw[r]];

    if (a > 0)
        push(sim, now + a, EV_BW, x, 0);
    else
        bw_start(sim, x, now);
}

static void flow_remove(sim_t *sim, uint32_t slot)
{
    const flow_t *f = &sim->flows[slot];
    const xfer_t *xt = &sim->tr[f->xfer];
    uint32_t len = sim->route_len[xt->route];
    const int32_t *rp = &sim->route_pipes[sim->route_off[xt->route]];

    for (uint32_t h = 0; h < len; h++) {
        pipe_st_t *p = &sim->pipes[rp[h]];
        uint32_t i = sim->pos[(size_t)slot * sim->maxhops + h];
        pent_t moved = p->ent[--p->cnt];
        if (i != p->cnt) {
            p->ent[i] = moved;
            sim->pos[(size_t)moved.slot * sim->maxhops + moved.hop] = i;
        }
        mark_dirty(sim, (uint32_t)rp[h]);
    }
    sim->free_slots[sim->nfree++] = slot;
}

/* Max-min fair rates by progressive filling over one component. */
static void fill_component(sim_t *sim, uint32_t ncp, uint32_t ncf,
                           double now)
{
    uint32_t ep = sim->epoch;

    for (uint32_t i = 0; i < ncp; i++) {
        pipe_st_t *p = &sim->pipes[sim->comp_pipes[i]];
        p->cap_rem = sim->pipe_bw[sim->comp_pipes[i]];
        p->nunf = p->cnt;
    }
    for (;;) {
        uint32_t best = UINT32_MAX;
        double share = 0;
        pipe_st_t *bp;

        for (uint32_t i = 0; i < ncp; i++) {
            const pipe_st_t *p = &sim->pipes[sim->comp_pipes[i]];
            if (p->nunf > 0) {
                double sh = p->cap_rem / p->nunf;
                if (best == UINT32_MAX || sh < share) {
                    best = sim->comp_pipes[i];
                    share = sh;
                }
            }
        }
        if (best == UINT32_MAX)
            break;
        if (share < 0)
            share = 0;
        bp = &sim->pipes[best];
        for (uint32_t k = 0; k < bp->cnt; k++) {
            uint32_t slot = bp->ent[k].slot;
            flow_t *f = &sim->flows[slot];
            const xfer_t *xt;
            const int32_t *rp;
            if (f->frozen == ep)
                continue;
            f->frozen = ep;
            f->newrate = share;
            xt = &sim->tr[f->xfer];
            rp = &sim->route_pipes[sim->route_off[xt->route]];
            for (uint32_t h = 0; h < sim->route_len[xt->route]; h++) {
                pipe_st_t *q = &sim->pipes[rp[h]];
                q->cap_rem -= share;
                q->nunf--;
            }
        }
    }
    for (uint32_t i = 0; i < ncf; i++) {
        uint32_t slot = sim->comp_flows[i];
        flow_t *f = &sim->flows[slot];
        if (f->newrate == f->rate)
            continue;   /* finish time unchanged: keep it exact */
        f->rem -= f->rate * (now - f->last);
        if (f->rem < 0)
            f->rem = 0;
        f->last = now;
        f->rate = f->newrate;
        f->version++;
        if (f->rate > 0)
            push(sim, now + f->rem / f->rate, EV_DONE, slot, f->version);
    }
}

static void recompute(sim_t *sim, double now)
{
    /* Components found in this call get epochs above ep0, so a dirty pipe
     * already swept into an earlier component is skipped. */
    uint32_t ep0 = sim->epoch;

    for (uint32_t d = 0; d < sim->ndirty; d++) {
        uint32_t p0 = sim->dirty[d], ncp = 0, ncf = 0;
        if (sim->pipes[p0].mark > ep0)
            continue;
        sim->epoch++;
        sim->pipes[p0].mark = sim->epoch;
        sim->comp_pipes[ncp++] = p0;
        for (uint32_t i = 0; i < ncp; i++) {
            const pipe_st_t *p = &sim->pipes[sim->comp_pipes[i]];
            for (uint32_t k = 0; k < p->cnt; k++) {
                uint32_t slot = p->ent[k].slot;
                flow_t *f = &sim->flows[slot];
                const xfer_t *xt;
                const int32_t *rp;
                if (f->mark == sim->epoch)
                    continue;
                f->mark = sim->epoch;
                sim->comp_flows[ncf++] = slot;
                xt = &sim->tr[f->xfer];
                rp = &sim->route_pipes[sim->route_off[xt->route]];
                for (uint32_t h = 0; h < sim->route_len[xt->route]; h++) {
                    if (sim->pipes[rp[h]].mark != sim->epoch) {
                        sim->pipes[rp[h]].mark = sim->epoch;
                        sim->comp_pipes[ncp++] = (uint32_t)rp[h];
                    }
                }
            }
        }
        fill_component(sim, ncp, ncf, now);
    }
    for (uint32_t d = 0; d < sim->ndirty; d++)
        sim->pipes[sim->dirty[d]].dirty = 0;
    sim->ndirty = 0;
}

/* ---- step progress ---- */

static double local_cost(const sim_t *sim, uint64_t chunks)
{
    if (sim->local_bw <= 0 || chunks == 0)
        return 0;
    return (double)chunks * sim->chunk_bytes / sim->local_bw;
}

static void note_step_end(sim_t *sim, uint32_t step, double now)
{
    if (now > sim->step_end[step])
        sim->step_end[step] = now;
}

/* Rank mode: rank r enters its current group (and the following ones
 * while they complete instantly). */
static void rank_enter(sim_t *sim, uint32_t r, double now)
{
    while (sim->cur[r] < sim->rank_grp[r + 1]) {
        const group_t *g = &sim->grp[sim->cur[r]];
        double lc = local_cost(sim, g->local_chunks);

        sim->pending[r] = g->nout + g->nin + (lc > 0 ? 1 : 0);
        for (uint32_t i = 0; i < g->nout; i++) {
            uint32_t x = g->out_off + i;
            sim->tr_ready[x] |= 1;
            if (sim->tr_ready[x] == 3)
                xfer_start(sim, x, now);
        }
        for (uint32_t i = 0; i < g->nin; i++) {
            uint32_t x = sim->in_list[g->in_off + i];
            sim->tr_ready[x] |= 2;
            if (sim->tr_ready[x] == 3)
                xfer_start(sim, x, now);
        }
        if (lc > 0)
            push(sim, now + lc, EV_LOCAL, r, 0);
        if (sim->pending[r] > 0)
            return;
        note_step_end(sim, g->step, now);
        sim->cur[r]++;
    }
    sim->rank_finish[r] = now;
    sim->ranks_done++;
}

static void rank_item_done(sim_t *sim, uint32_t r, double now)
{
    if (--sim->pending[r] > 0)
        return;
    note_step_end(sim, sim->grp[sim->cur[r]].step, now);
    sim->cur[r]++;
    rank_enter(sim, r, now);
}

/* Barrier mode: start step t (and following empty steps) at `now`. */
static void step_start(sim_t *sim, uint32_t t, double now)
{
    while (t < sim->nsteps) {
        double amax = now, lc_any = 0;
        uint32_t pend;

        for (uint32_t i = sim->step_grp_start[t];
             i < sim->step_grp_start[t + 1]; i++) {
            uint32_t r = sim->grp[sim->step_grp[i]].rank;
            if (sim->arrival[r] > amax)
                amax = sim->arrival[r];
        }
        if (amax > now) {
            push(sim, amax, EV_ENTER, t, 0);
            return;
        }
        sim->barrier_step = t;
        pend = sim->step_tr_start[t + 1] - sim->step_tr_start[t];
        for (uint32_t i = sim->step_grp_start[t];
             i < sim->step_grp_start[t + 1]; i++) {
            double lc = local_cost(sim, sim->grp[sim->step_grp[i]].local_chunks);
            if (lc > 0) {
                pend++;
                push(sim, now + lc, EV_LOCAL, t, 0);
                if (lc > lc_any)
                    lc_any = lc;
            }
        }
        sim->pending[t] = pend;
        for (uint32_t i = sim->step_tr_start[t]; i < sim->step_tr_start[t + 1];
             i++)
            xfer_start(sim, sim->step_tr[i], now);
        if (pend > 0)
            return;
        note_step_end(sim, t, now);
        for (uint32_t i = sim->step_grp_start[t];
             i < sim->step_grp_start[t + 1]; i++)
            sim->rank_finish[sim->grp[sim->step_grp[i]].rank] = now;
        t++;
    }
    sim->barrier_step = sim->nsteps;
}

static void step_item_done(sim_t *sim, uint32_t t, double now)
{
    if (--sim->pending[t] > 0)
        return;
    note_step_end(sim, t, now);
    for (uint32_t i = sim->step_grp_start[t]; i < sim->step_grp_start[t + 1];
         i++)
        sim->rank_finish[sim->grp[sim->step_grp[i]].rank] = now;
    step_start(sim, t + 1, now);
}

static void xfer_done(sim_t *sim, uint32_t x, double now)
{
    const xfer_t *xt = &sim->tr[x];
    double bytes = (double)xt->nchunks * sim->chunk_bytes;
    const int32_t *rp = &sim->route_pipes[sim->route_off[xt->route]];

    for (uint32_t h = 0; h < sim->route_len[xt->route]; h++)
        sim->pipes[rp[h]].bytes += bytes;
    if (sim->mode == SIM_MODE_BARRIER) {
        step_item_done(sim, xt->step, now);
    } else {
        note_step_end(sim, xt->step, now);
        rank_item_done(sim, xt->src, now);
        rank_item_done(sim, xt->dst, now);
    }
}

static void handle(sim_t *sim, const event_t *e)
{
    switch (e->type) {
    case EV_ENTER:
        if (sim->mode == SIM_MODE_BARRIER)
            step_start(sim, e->a, e->t);
        else
            rank_enter(sim, e->a, e->t);
        break;
    case EV_LOCAL:
        if (sim->mode == SIM_MODE_BARRIER)
            step_item_done(sim, e->a, e->t);
        else
            rank_item_done(sim, e->a, e->t);
        break;
    case EV_BW:
        bw_start(sim, e->a, e->t);
        break;
    case EV_ZDONE:
        xfer_done(sim, e->a, e->t);
        break;
    case EV_DONE: {
        flow_t *f = &sim->flows[e->a];
        uint32_t x = f->xfer;
        if (f->version != e->v)
            break;      /* superseded by a rate change */
        f->version++;   /* the slot's pending events are all stale now */
        flow_remove(sim, e->a);
        xfer_done(sim, x, e->t);
        break;
    }
    default:
        break;
    }
}

/* ---- running ---- */

static void reset_run(sim_t *sim)
{
    memset(sim->tr_ready, 0, (size_t)sim->ntr + 1);
    memset(sim->rank_finish, 0, sizeof(double) * sim->n);
    memset(sim->step_end, 0, sizeof(double) * (sim->nsteps ? sim->nsteps : 1));
    for (int32_t p = 0; p < sim->npipes; p++) {
        sim->pipes[p].cnt = 0;
        sim->pipes[p].bytes = 0;
        sim->pipes[p].dirty = 0;
        sim->pipes[p].mark = 0;
    }
    sim->ndirty = 0;
    sim->nfree = 0;
    sim->flows_used = 0;
    sim->heap_len = 0;
    sim->seq = 0;
    sim->nevents = 0;
    sim->ranks_done = 0;
    sim->barrier_step = 0;
    sim->failed = false;
    /* Slot versions keep counting across runs; epochs restart. */
    for (uint32_t i = 0; i < sim->flows_cap; i++) {
        sim->flows[i].mark = 0;
        sim->flows[i].frozen = 0;
    }
    sim->epoch = 0;
}

ccs_status_t sim_exec(sim_t *sim, double size_bytes, const sim_opts_t *o,
                      sim_result_t *res, ccs_err_t *err)
{
    sim_opts_t def;
    sim_result_t r;
    double elem, count, per;
    double tmax = 0;

    if (sim == NULL || res == NULL)
        return ccs_err_set(err, CCS_ERR_INVALID, "sim_exec: NULL argument");
    if (o == NULL) {
        sim_opts_init(&def);
        o = &def;
    }
    if (!(size_bytes >= 0) || !isfinite(size_bytes))
        return ccs_err_set(err, CCS_ERR_INVALID, "bad buffer size %g",
                           size_bytes);
    if ((unsigned)o->mode >= SIM_MODE_COUNT)
        return ccs_err_set(err, CCS_ERR_INVALID, "bad simulation mode %d",
                           (int)o->mode);
    if (o->straggler >= 0 && (uint32_t)o->straggler >= sim->n)
        return ccs_err_set(err, CCS_ERR_INVALID,
                           "straggler %d out of range 0..%u", o->straggler,
                           sim->n - 1);
    if (!(o->straggler_delay_s >= 0) || !isfinite(o->straggler_delay_s) ||
        !(o->local_bw_Bps >= 0))
        return ccs_err_set(err, CCS_ERR_INVALID,
                           "bad straggler delay %g s or local bandwidth %g",
                           o->straggler_delay_s, o->local_bw_Bps);
    for (uint32_t i = 0; i < sim->n; i++) {
        double a = o->arrival_s != NULL ? o->arrival_s[i] : 0;
        if (!(a >= 0) || !isfinite(a))
            return ccs_err_set(err, CCS_ERR_INVALID,
                               "rank %u: bad arrival time %g s", i, a);
        if ((int32_t)i == o->straggler && o->straggler_delay_s > a)
            a = o->straggler_delay_s;
        sim->arrival[i] = a;
    }
    if ((unsigned)o->proto >= SIM_PROTO_COUNT)
        return ccs_err_set(err, CCS_ERR_INVALID, "bad protocol %d",
                           (int)o->proto);
    sim_proto_model(sim_proto_resolve(o->proto, sim->s),
                    sim_sched_nvls(sim->s), &sim->pm);
    /* The protocol's fixed latency delays every rank's start. */
    for (uint32_t i = 0; i < sim->n; i++)
        sim->arrival[i] += sim->pm.base_s;
    elem = o->elem_bytes ? (double)o->elem_bytes : 1.0;
    count = ceil(size_bytes / elem);
    per = ceil(count / (double)sim->s->nchunks);
    sim->chunk_bytes = per * elem;
    sim->local_bw = o->local_bw_Bps;
    sim->mode = o->mode;
    reset_run(sim);

    if (sim->mode == SIM_MODE_BARRIER) {
        for (uint32_t i = 0; i < sim->n; i++)
            sim->rank_finish[i] = sim->arrival[i];
        push(sim, 0, EV_ENTER, 0, 0);
    } else {
        for (uint32_t i = 0; i < sim->n; i++) {
            sim->cur[i] = sim->rank_grp[i];
            push(sim, sim->arrival[i], EV_ENTER, i, 0);
        }
    }
    while (sim->heap_len > 0 && !sim->failed) {
        /* One batch: events within a relative 1e-13 of the first are
         * rounding twins (flows that share a finish time up to the last
         * bits); each is handled at its own time, then rates are
         * recomputed once, at the latest of them. */
        double now = sim->heap[0].t, lim = now + fabs(now) * 1e-13;
        while (sim->heap_len > 0 && sim->heap[0].t <= lim && !sim->failed) {
            event_t e = pop(sim);
            sim->nevents++;
            now = e.t;
            handle(sim, &e);
        }
        /* After a failed allocation a flow may be registered on only
         * part of its route: rates are not computed from such a state. */
        if (sim->ndirty > 0 && !sim->failed)
            recompute(sim, now);
    }
    if (sim->failed)
        return ccs_err_set(err, CCS_ERR_NOMEM,
                           "out of memory while simulating");
    if (sim->mode == SIM_MODE_RANK ? sim->ranks_done != sim->n
                                   : sim->barrier_step != sim->nsteps)
        return ccs_err_set(err, CCS_ERR_INTERNAL,
                           "simulation stalled (%u of %u ranks finished)",
                           sim->ranks_done, sim->n);

    memset(&r, 0, sizeof(r));
    r.nranks = sim->n;
    r.nphases = sim->nphases;
    r.chunk_bytes = sim->chunk_bytes;
    r.ntransfers = sim->ntr;
    r.nevents = sim->nevents;
    r.rank_finish_s = malloc(sizeof(double) * sim->n);
    r.phase_end_s = calloc(sim->nphases, sizeof(double));
    if (r.rank_finish_s == NULL || r.phase_end_s == NULL) {
        sim_result_free(&r);
        return ccs_err_set(err, CCS_ERR_NOMEM, "out of memory (result)");
    }
    for (uint32_t i = 0; i < sim->n; i++) {
        r.rank_finish_s[i] = sim->rank_finish[i];
        if (sim->rank_finish[i] > tmax)
            tmax = sim->rank_finish[i];
    }
    for (uint32_t t = 0; t < sim->nsteps; t++) {
        uint32_t ph = sim->s->step_phase[t];
        if (ph < sim->nphases && sim->step_end[t] > r.phase_end_s[ph])
            r.phase_end_s[ph] = sim->step_end[t];
    }
    r.time_s = tmax;
    r.busiest_link = -1;
    for (int32_t p = 0; p < sim->npipes; p++) {
        double u = tmax > 0 ? sim->pipes[p].bytes / (sim->pipe_bw[p] * tmax)
                            : 0;
        if (sim->pipes[p].bytes > 0 && (r.busiest_link < 0 ||
                                        u > r.busiest_util)) {
            r.busiest_link = sim->pipe_link[p];
            r.busiest_util = u;
        }
    }
    *res = r;
    return CCS_OK;
}

ccs_status_t sim_run(const ccs_sched_t *s, const topo_t *t,
                     double size_bytes, const sim_opts_t *o,
                     sim_result_t *res, ccs_err_t *err)
{
    sim_t *sim = NULL;   /* owned here */
    ccs_status_t st = sim_create(s, t, o, &sim, err);

    if (st == CCS_OK)
        st = sim_exec(sim, size_bytes, o, res, err);
    sim_destroy(sim);
    return st;
}

/* ---- arrivals file ---- */

ccs_status_t sim_read_arrivals(const char *path, uint32_t nranks,
                               double **out, ccs_err_t *err)
{
    FILE *f = NULL;          /* owned here */
    double *arr = NULL;      /* owned here until handed to *out */
    unsigned *seen = NULL;   /* owned here: line that set each rank, 0 */
    char *line = NULL;       /* owned here (getline) */
    size_t cap = 0;
    unsigned lineno = 0;
    ccs_status_t st = CCS_OK;

    arr = calloc(nranks ? nranks : 1, sizeof(double));
    seen = calloc(nranks ? nranks : 1, sizeof(unsigned));
    if (arr == NULL || seen == NULL) {
        st = ccs_err_set(err, CCS_ERR_NOMEM, "out of memory (arrivals)");
        goto cleanup;
    }
    f = fopen(path, "r");
    if (f == NULL) {
        st = ccs_err_set(err, CCS_ERR_IO, "%s: %s", path, strerror(errno));
        goto cleanup;
    }
    errno = 0;
    while (getline(&line, &cap, f) != -1) {
        char *hash = strchr(line, '#'), *tok_r, *tok_t, *extra, *save = NULL;
        long rank;
        double secs;

        lineno++;
        if (hash != NULL)
            *hash = '\0';
        tok_r = strtok_r(line, " \t\r\n", &save);
        if (tok_r == NULL)
            continue;
        tok_t = strtok_r(NULL, " \t\r\n", &save);
        extra = strtok_r(NULL, " \t\r\n", &save);
        if (tok_t == NULL) {
            st = ccs_err_set(err, CCS_ERR_PARSE, "%s:%u: expected \"rank "
                             "seconds\", got only '%.40s'", path, lineno,
                             tok_r);
            goto cleanup;
        }
        if (!units_parse_int(tok_r, LONG_MIN, LONG_MAX, &rank)) {
            st = ccs_err_set(err, CCS_ERR_PARSE, "%s:%u: bad rank '%.40s' "
                             "(want an integer in 0..%u)", path, lineno,
                             tok_r, nranks - 1);
            goto cleanup;
        }
        if (rank < 0 || rank >= (long)nranks) {
            st = ccs_err_set(err, CCS_ERR_PARSE, "%s:%u: rank %ld out of "
                             "range 0..%u", path, lineno, rank, nranks - 1);
            goto cleanup;
        }
        if (!units_parse_time(tok_t, &secs)) {
            st = ccs_err_set(err, CCS_ERR_PARSE, "%s:%u: bad time '%.40s' "
                             "(want seconds >= 0, or a number with s, ms, "
                             "us or ns, e.g. 2ms)", path, lineno, tok_t);
            goto cleanup;
        }
        if (extra != NULL) {
            st = ccs_err_set(err, CCS_ERR_PARSE, "%s:%u: unexpected "
                             "'%.40s' after the time (one \"rank seconds\" "
                             "pair per line)", path, lineno, extra);
            goto cleanup;
        }
        if (seen[rank] != 0) {
            st = ccs_err_set(err, CCS_ERR_PARSE, "%s:%u: rank %ld listed "
                             "again (first on line %u)", path, lineno, rank,
                             seen[rank]);
            goto cleanup;
        }
        seen[rank] = lineno;
        arr[rank] = secs;
        errno = 0;           /* so a read error below reports its own */
    }
    if (ferror(f)) {
        st = ccs_err_set(err, CCS_ERR_IO, "%s: read error: %s", path,
                         strerror(errno ? errno : EIO));
        goto cleanup;
    }
    *out = arr;
    arr = NULL;

cleanup:
    if (f != NULL)
        fclose(f);
    free(line);
    free(seen);
    free(arr);
    return st;
}

/* ---- command-line helpers ---- */

ccs_status_t sim_parse_sizes(const char *spec, double **out, uint32_t *n,
                             ccs_err_t *err)
{
    char *copy = NULL;       /* owned here: strtok_r works on it */
    double *v = NULL;        /* owned here until handed to *out */
    uint32_t cnt = 0, cap = 0;
    ccs_status_t st = CCS_OK;
    char *save = NULL, *item;

    if (spec == NULL || *spec == '\0')
        return ccs_err_set(err, CCS_ERR_INVALID, "empty size list");
    copy = strdup(spec);
    if (copy == NULL)
        return ccs_err_set(err, CCS_ERR_NOMEM, "out of memory (sizes)");
    for (item = strtok_r(copy, ",", &save); item != NULL;
         item = strtok_r(NULL, ",", &save)) {
        char *c1 = strchr(item, ':'), *c2 = NULL;
        double lo, hi, factor = 2;

        if (c1 != NULL) {
            *c1++ = '\0';
            c2 = strchr(c1, ':');
            if (c2 != NULL)
                *c2++ = '\0';
        }
        if (!units_parse_size(item, &lo) ||
            (c1 != NULL && !units_parse_size(c1, &hi)) ||
            (c2 != NULL && (!units_parse_double(c2, &factor) || !(factor > 1)))) {
            st = ccs_err_set(err, CCS_ERR_INVALID,
                             "bad size list '%s' (want SIZE, LO:HI or "
                             "LO:HI:FACTOR with FACTOR > 1, e.g. 1K:4G)",
                             spec);
            goto cleanup;
        }
        if (c1 == NULL)
            hi = lo;
        if (hi > SIM_MAX_SIZE_BYTES) {
            st = ccs_err_set(err, CCS_ERR_INVALID, "bad size list '%s': "
                             "%.0f bytes is more than 2^53 (8 PiB), the "
                             "largest exact byte count", spec, hi);
            goto cleanup;
        }
        if (hi < lo) {
            st = ccs_err_set(err, CCS_ERR_INVALID,
                             "bad size range in '%s': %.0f > %.0f", spec, lo,
                             hi);
            goto cleanup;
        }
        /* The 1e-9 slack keeps HI itself when FACTOR^k lands on it. */
        for (double x = lo; x <= hi * (1 + 1e-9); x *= factor) {
            if (cnt == SIM_MAX_SIZES) {
                st = ccs_err_set(err, CCS_ERR_INVALID,
                                 "size list '%s' has more than %u sizes",
                                 spec, SIM_MAX_SIZES);
                goto cleanup;
            }
            if (!grow((void **)&v, &cap, cnt + 1, sizeof(double))) {
                st = ccs_err_set(err, CCS_ERR_NOMEM, "out of memory (sizes)");
                goto cleanup;
            }
            v[cnt++] = round(x);
            if (x == 0)
                break;
        }
    }
    if (cnt == 0) {
        st = ccs_err_set(err, CCS_ERR_INVALID, "empty size list '%s'", spec);
        goto cleanup;
    }
    *out = v;
    *n = cnt;
    v = NULL;

cleanup:
    free(copy);
    free(v);
    return st;
}

void sim_json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)(s ? s : "");
         *p != '\0'; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p < 0x20)
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}
