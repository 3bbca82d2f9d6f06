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
 *   in step t has arrived.  SIM_MODE_DATAFLOW (sim_flow.c): ops start
 *   as their hazards on the rank clear, within a window of steps.
 * - Stragglers.  A rank does nothing before its arrival time; phase-0 steps
 *   that do not involve it run from time 0.  Total time is measured from 0.
 *
 * Implementation: one event queue ordered by (time, insertion order) for
 * deterministic order (sim_queue.h: a radix heap, as time never runs
 * backwards); all events of one timestamp are processed before rates are
 * recomputed once.  Pipe flow lists support O(1) removal (each flow knows
 * its position in each of its pipes' lists).
 *
 * Files: this one is the engine (events, flows, steps, running);
 * sim_prep.c the size-independent preparation (pipes, routes, transfers,
 * sim_create); sim_input.c the arrivals file and size lists; sim_int.h the
 * state they share.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "units.h"
#include "sim_int.h"

/* ---- small helpers ---- */

const char *sim_mode_str(sim_mode_t m)
{
    switch (m) {
    case SIM_MODE_RANK: return "rank";
    case SIM_MODE_BARRIER: return "barrier";
    case SIM_MODE_DATAFLOW: return "dataflow";
    default: return "?";
    }
}

const char *sim_mode_note(sim_mode_t m)
{
    return m == SIM_MODE_DATAFLOW
               ? "threads, MPI and cuda executors, not NCCL: they issue ops "
                 "by hazards with an issue window (CCS_ISSUE_WINDOW; the "
                 "cuda transport's has not yet run on a GPU); the NCCL "
                 "executor runs steps in order"
               : NULL;
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
    if (name != NULL && strcmp(name, "dataflow") == 0) {
        *out = SIM_MODE_DATAFLOW;
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
    return ccs_busbw_factor(coll, nranks);
}

bool sim_grow(void **p, uint32_t *cap, uint32_t need, size_t size)
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

/* ---- events ---- */

void sim_push(sim_t *sim, double t, uint32_t type, uint32_t a, uint32_t v)
{
    simq_status_t qs = simq_push(&sim->queue, t, type, a, v);

    if (qs != SIMQ_OK) {
        sim->failed = true;
        sim->time_reversed = qs == SIMQ_PAST;
    }
}

/* ---- flows ---- */

static void mark_dirty(sim_t *sim, uint32_t p)
{
    if (!sim->pipes[p].dirty) {
        sim->pipes[p].dirty = 1;
        sim->dirty[sim->ndirty++] = p;
    }
}

/* Grow the flow array to hold at least `need` flows, *cap being its
 * size, keeping it aligned to the cache line (realloc would not) so that
 * each flow is one line. */
static bool flows_grow(sim_t *sim, uint32_t *cap, uint32_t need)
{
    uint32_t ncap = *cap ? *cap : 16;
    flow_t *nf;   /* becomes sim->flows */

    if (need <= *cap)
        return true;
    while (ncap < need)
        ncap = ncap > UINT32_MAX / 2 ? UINT32_MAX : ncap * 2;
    nf = aligned_alloc(64, (size_t)ncap * sizeof(flow_t));
    if (nf == NULL)
        return false;
    if (*cap > 0)
        memcpy(nf, sim->flows, (size_t)*cap * sizeof(flow_t));
    free(sim->flows);
    sim->flows = nf;
    *cap = ncap;
    return true;
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
        if (!flows_grow(sim, &c1, need) ||
            !sim_grow((void **)&sim->comp_flows, &c2, need, sizeof(uint32_t)) ||
            !sim_grow((void **)&sim->free_slots, &c3, need, sizeof(uint32_t)) ||
            !sim_grow((void **)&sim->pos, &sim->pos_cap, c1 * sim->maxhops + 1,
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

/* Room for one more entry in pipe p's flow list. */
static bool pipe_reserve(pipe_st_t *p)
{
    pent_t *ne;
    uint32_t ncap;

    if (p->cnt < p->cap)
        return true;
    if (p->cap > UINT32_MAX / 2)
        return false;
    ncap = p->cap * 2;
    if (p->cap == SIM_PIPE_INLINE) {
        ne = malloc(sizeof(pent_t) * ncap);
        if (ne != NULL)
            memcpy(ne, p->list.inl, sizeof(p->list.inl));
    } else {
        ne = realloc(p->list.heap, sizeof(pent_t) * ncap);
    }
    if (ne == NULL)
        return false;
    p->list.heap = ne;
    p->cap = ncap;
    return true;
}

/* Transfer x enters its bandwidth phase at time `now`. */
void sim_bw_start(sim_t *sim, uint32_t x, double now)
{
    const xfer_t *xt = &sim->tr[x];
    uint32_t len = sim->route[xt->route].len;
    const int32_t *rp = &sim->route_pipes[sim->route[xt->route].off];
    /* A protocol's overhead (flags, line headers, fences) is carried as
     * extra bytes on the wire: bytes / efficiency. */
    double bytes = (double)xt->nchunks * sim->chunk_bytes /
                   sim->pm.eff[sim->route[xt->route].hw];
    uint32_t slot;
    flow_t *f;

    if (bytes <= 0 || len == 0) {
        sim_push(sim, now, EV_ZDONE, x, 0);
        return;
    }
    if (!flow_slot(sim, &slot)) {
        sim->failed = true;
        return;
    }
    f = &sim->flows[slot];
    f->xfer = x;
    f->version++;
    f->rp_off = sim->route[xt->route].off;
    f->nhops = len;
    f->nchunks = xt->nchunks;
    f->hw = sim->route[xt->route].hw;
    f->rem = bytes;
    f->rate = 0;
    f->last = now;
    for (uint32_t h = 0; h < len; h++) {
        pipe_st_t *p = &sim->pipes[rp[h]];
        if (!pipe_reserve(p)) {
            sim->failed = true;
            return;
        }
        pipe_list(p)[p->cnt].slot = slot;
        pipe_list(p)[p->cnt].hop = h;
        sim->pos[(size_t)slot * sim->maxhops + h] = p->cnt;
        p->cnt++;
        mark_dirty(sim, (uint32_t)rp[h]);
    }
}

void sim_xfer_start(sim_t *sim, uint32_t x, double now)
{
    uint32_t r = sim->tr[x].route;
    double a = sim->route[r].alpha * sim->pm.lat_scale[sim->route[r].hw];

    if (a > 0)
        sim_push(sim, now + a, EV_BW, x, 0);
    else
        sim_bw_start(sim, x, now);
}

/* The flow in `slot` has finished: off its pipes' lists, and its
 * transfer's `bytes` counted on them. */
static void flow_remove(sim_t *sim, uint32_t slot, double bytes)
{
    const flow_t *f = &sim->flows[slot];
    uint32_t len = f->nhops;
    const int32_t *rp = &sim->route_pipes[f->rp_off];

    for (uint32_t h = 0; h < len; h++) {
        pipe_st_t *p = &sim->pipes[rp[h]];
        uint32_t i = sim->pos[(size_t)slot * sim->maxhops + h];
        pent_t *ent = pipe_list(p);
        pent_t moved = ent[--p->cnt];

        p->bytes += bytes;
        if (i != p->cnt) {
            ent[i] = moved;
            sim->pos[(size_t)moved.slot * sim->maxhops + moved.hop] = i;
        }
        mark_dirty(sim, (uint32_t)rp[h]);
    }
    sim->free_slots[sim->nfree++] = slot;
}

/* Fix every unfrozen flow of the route class with the lowest channel cap
 * at that cap when the cap is below `share` (the smallest fair share of
 * any pipe); true when some flow was fixed. */
static bool cap_class(sim_t *sim, uint32_t ncf, double share, uint32_t ep)
{
    int order[SIM_HW_COUNT] = { 0, 1 };

    if (sim->pm.xfer_cap[1] < sim->pm.xfer_cap[0]) {
        order[0] = 1;
        order[1] = 0;
    }
    for (int k = 0; k < SIM_HW_COUNT; k++) {
        int cls = order[k];
        double cap = sim->pm.xfer_cap[cls];
        bool any = false;

        if (!(cap > 0 && cap < share))
            continue;
        for (uint32_t i = 0; i < ncf; i++) {
            flow_t *f = &sim->flows[sim->comp_flows[i]];
            const int32_t *rp;

            if (f->frozen == ep || f->hw != (uint32_t)cls)
                continue;
            f->frozen = ep;
            f->newrate = cap;
            any = true;
            rp = &sim->route_pipes[f->rp_off];
            for (uint32_t h = 0; h < f->nhops; h++) {
                pipe_st_t *q = &sim->pipes[rp[h]];
                q->cap_rem -= cap;
                q->nunf--;
            }
        }
        if (any)
            return true;
    }
    return false;
}

/* Max-min fair rates by progressive filling over one component. */
static void fill_component(sim_t *sim, uint32_t ncp, uint32_t ncf,
                           double now)
{
    uint32_t ep = sim->epoch;

    for (uint32_t i = 0; i < ncp; i++) {
        pipe_st_t *p = &sim->pipes[sim->comp_pipes[i]];
        p->cap_rem = p->bw;
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
        /* Channel caps (sim_proto_channels): flows of a route class whose
         * cap is below every pipe's fair share are fixed at the cap first,
         * as progressive filling would reach it before any pipe fills. */
        if (sim->pm.xfer_cap[0] > 0 || sim->pm.xfer_cap[1] > 0) {
            if (cap_class(sim, ncf, share, ep))
                continue;
        }
        bp = &sim->pipes[best];
        for (uint32_t k = 0; k < bp->cnt; k++) {
            uint32_t slot = pipe_list(bp)[k].slot;
            flow_t *f = &sim->flows[slot];
            const int32_t *rp;
            if (f->frozen == ep)
                continue;
            f->frozen = ep;
            f->newrate = share;
            rp = &sim->route_pipes[f->rp_off];
            for (uint32_t h = 0; h < f->nhops; h++) {
                pipe_st_t *q = &sim->pipes[rp[h]];
                q->cap_rem -= share;
                q->nunf--;
            }
        }
    }
    for (uint32_t i = 0; i < ncf; i++) {
        uint32_t slot = sim->comp_flows[i];
        flow_t *f = &sim->flows[slot];
        if (f->newrate > sim->peak_rate[f->hw])
            sim->peak_rate[f->hw] = f->newrate;
        if (f->newrate == f->rate)
            continue;   /* finish time unchanged: keep it exact */
        f->rem -= f->rate * (now - f->last);
        if (f->rem < 0)
            f->rem = 0;
        f->last = now;
        f->rate = f->newrate;
        f->version++;
        if (f->rate > 0)
            sim_push(sim, now + f->rem / f->rate, EV_DONE, slot, f->version);
    }
}

static void recompute(sim_t *sim, double now)
{
    /* Components found in this call get epochs above ep0, so a dirty pipe
     * already swept into an earlier component is skipped. */
    uint32_t ep0 = sim->epoch;

    for (uint32_t d = 0; d < sim->ndirty; d++) {
        uint32_t p0 = sim->dirty[d], ncp = 0, ncf = 0;
        /* Cleared here, while the pipe's line is at hand: nothing below
         * marks a pipe dirty, and a second pass over the list after the
         * sweeps found every line evicted at 1024 ranks. */
        sim->pipes[p0].dirty = 0;
        /* an emptied pipe (its flows finished) is a component with no
         * rates to set: common, as flows leave an alpha before the next
         * ones enter */
        if (sim->pipes[p0].mark > ep0 || sim->pipes[p0].cnt == 0)
            continue;
        sim->epoch++;
        sim->pipes[p0].mark = sim->epoch;
        sim->comp_pipes[ncp++] = p0;
        for (uint32_t i = 0; i < ncp; i++) {
            pipe_st_t *p = &sim->pipes[sim->comp_pipes[i]];
            const pent_t *ent = pipe_list(p);
            for (uint32_t k = 0; k < p->cnt; k++) {
                uint32_t slot = ent[k].slot;
                flow_t *f = &sim->flows[slot];
                const int32_t *rp;
                if (f->mark == sim->epoch)
                    continue;
                f->mark = sim->epoch;
                sim->comp_flows[ncf++] = slot;
                rp = &sim->route_pipes[f->rp_off];
                for (uint32_t h = 0; h < f->nhops; h++) {
                    if (sim->pipes[rp[h]].mark != sim->epoch) {
                        sim->pipes[rp[h]].mark = sim->epoch;
                        sim->comp_pipes[ncp++] = (uint32_t)rp[h];
                    }
                }
            }
        }
        fill_component(sim, ncp, ncf, now);
    }
    sim->ndirty = 0;
}

/* ---- step progress ---- */

double sim_local_cost(const sim_t *sim, uint64_t chunks)
{
    if (sim->local_bw <= 0 || chunks == 0)
        return 0;
    return (double)chunks * sim->chunk_bytes / sim->local_bw;
}

void sim_note_step_end(sim_t *sim, uint32_t step, double now)
{
    if (now > sim->step_end[step])
        sim->step_end[step] = now;
}

/* Rank mode: rank r enters its current group (and the following ones
 * while they complete instantly).
 *
 * At 1024 ranks a group's record and its transfers' have left every cache
 * by the time the rank gets to them (each step's stretch of the arrays is
 * read once per run), and a rank's groups were a chain of misses: the
 * current group's record to find the next one, then the next one's to
 * find its transfers, then each transfer's in turn.  So the rank's
 * position keeps what finishing a group needs (rank_pos_t), the next
 * group's record is asked for while the current one's items finish, and a
 * group's transfer records are asked for all at once on entry.
 * Prefetches change no state, hence no result. */
static void rank_enter(sim_t *sim, uint32_t r, double now)
{
    rank_pos_t *rp = &sim->cur[r];

    while (rp->grp != SIM_NO_GROUP) {
        const group_t *g = &sim->grp[rp->grp];
        double lc = sim_local_cost(sim, g->local_chunks);

        rp->next = g->next;
        rp->step = g->step;
        if (g->next != SIM_NO_GROUP)
            __builtin_prefetch(&sim->grp[g->next]);
        for (uint32_t i = 0; i < g->nout; i++)
            __builtin_prefetch(&sim->tr[g->out_off + i]);
        for (uint32_t i = 0; i < g->nin; i++)
            __builtin_prefetch(&sim->tr[sim->in_list[g->in_off + i]]);

        sim->pending[r] = g->nout + g->nin + (lc > 0 ? 1 : 0);
        for (uint32_t i = 0; i < g->nout; i++) {
            uint32_t x = g->out_off + i;
            sim->tr_ready[x] |= 1;
            if (sim->tr_ready[x] == 3)
                sim_xfer_start(sim, x, now);
        }
        for (uint32_t i = 0; i < g->nin; i++) {
            uint32_t x = sim->in_list[g->in_off + i];
            sim->tr_ready[x] |= 2;
            if (sim->tr_ready[x] == 3)
                sim_xfer_start(sim, x, now);
        }
        if (lc > 0)
            sim_push(sim, now + lc, EV_LOCAL, r, 0);
        if (sim->pending[r] > 0)
            return;
        sim_note_step_end(sim, g->step, now);
        rp->grp = g->next;
    }
    sim->rank_finish[r] = now;
    sim->ranks_done++;
}

static void rank_item_done(sim_t *sim, uint32_t r, double now)
{
    rank_pos_t *rp = &sim->cur[r];

    if (--sim->pending[r] > 0) {
        if (rp->next != SIM_NO_GROUP)
            __builtin_prefetch(&sim->grp[rp->next]);
        return;
    }
    sim_note_step_end(sim, rp->step, now);
    rp->grp = rp->next;
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
            uint32_t r = sim->grp[i].rank;
            if (sim->arrival[r] > amax)
                amax = sim->arrival[r];
        }
        if (amax > now) {
            sim_push(sim, amax, EV_ENTER, t, 0);
            return;
        }
        sim->barrier_step = t;
        pend = sim->step_tr_start[t + 1] - sim->step_tr_start[t];
        for (uint32_t i = sim->step_grp_start[t];
             i < sim->step_grp_start[t + 1]; i++) {
            double lc = sim_local_cost(sim, sim->grp[i].local_chunks);
            if (lc > 0) {
                pend++;
                sim_push(sim, now + lc, EV_LOCAL, t, 0);
                if (lc > lc_any)
                    lc_any = lc;
            }
        }
        sim->pending[t] = pend;
        for (uint32_t i = sim->step_tr_start[t]; i < sim->step_tr_start[t + 1];
             i++)
            sim_xfer_start(sim, i, now);
        if (pend > 0)
            return;
        sim_note_step_end(sim, t, now);
        for (uint32_t i = sim->step_grp_start[t];
             i < sim->step_grp_start[t + 1]; i++)
            sim->rank_finish[sim->grp[i].rank] = now;
        t++;
    }
    sim->barrier_step = sim->nsteps;
}

static void step_item_done(sim_t *sim, uint32_t t, double now)
{
    if (--sim->pending[t] > 0)
        return;
    sim_note_step_end(sim, t, now);
    for (uint32_t i = sim->step_grp_start[t]; i < sim->step_grp_start[t + 1];
         i++)
        sim->rank_finish[sim->grp[i].rank] = now;
    step_start(sim, t + 1, now);
}

/* The bytes transfer x carried, counted on its pipes (flow_remove does
 * this for a transfer that had a bandwidth phase). */
static void xfer_bytes(sim_t *sim, uint32_t x)
{
    const xfer_t *xt = &sim->tr[x];
    double bytes = (double)xt->nchunks * sim->chunk_bytes;
    const int32_t *rp = &sim->route_pipes[sim->route[xt->route].off];

    for (uint32_t h = 0; h < sim->route[xt->route].len; h++)
        sim->pipes[rp[h]].bytes += bytes;
}

static void xfer_done(sim_t *sim, uint32_t x, double now)
{
    const xfer_t *xt = &sim->tr[x];

    if (sim->mode == SIM_MODE_BARRIER) {
        step_item_done(sim, xt->step, now);
    } else if (sim->mode == SIM_MODE_DATAFLOW) {
        sim_flow_xfer_done(sim, x, now);
    } else {
        sim_note_step_end(sim, xt->step, now);
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
        else if (sim->mode == SIM_MODE_DATAFLOW)
            sim_flow_enter(sim, e->a, e->t);
        else
            rank_enter(sim, e->a, e->t);
        break;
    case EV_LOCAL:
        if (sim->mode == SIM_MODE_BARRIER)
            step_item_done(sim, e->a, e->t);
        else if (sim->mode == SIM_MODE_DATAFLOW)
            sim_flow_local_done(sim, e->a, e->t);
        else
            rank_item_done(sim, e->a, e->t);
        break;
    case EV_BW:
        if (sim->mode == SIM_MODE_DATAFLOW)
            sim_flow_bw(sim, e->a, e->t);
        else
            sim_bw_start(sim, e->a, e->t);
        break;
    case EV_ZDONE:
        xfer_bytes(sim, e->a);
        xfer_done(sim, e->a, e->t);
        break;
    case EV_DONE: {
        flow_t *f = &sim->flows[e->a];
        uint32_t x = f->xfer;
        if (f->version != e->v)
            break;      /* superseded by a rate change */
        f->version++;   /* the slot's pending events are all stale now */
        flow_remove(sim, e->a, (double)f->nchunks * sim->chunk_bytes);
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
    simq_reset(&sim->queue);
    sim->nevents = 0;
    sim->ranks_done = 0;
    sim->barrier_step = 0;
    sim->failed = false;
    sim->time_reversed = false;
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
    sim_proto_t proto;
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
    proto = sim_proto_resolve(o->proto, sim->s);
    sim_proto_model(proto, sim_sched_nvls(sim->s), &sim->pm);
    sim_proto_channels(proto, sim->t, sim->s, o->channels, &sim->pm);
    sim->peak_rate[0] = sim->peak_rate[1] = 0;
    /* The protocol's fixed latency delays every rank's start. */
    for (uint32_t i = 0; i < sim->n; i++)
        sim->arrival[i] += sim->pm.base_s;
    elem = o->elem_bytes ? (double)o->elem_bytes : 1.0;
    count = ceil(size_bytes / elem);
    per = ceil(count / (double)sim->s->nchunks);
    sim->chunk_bytes = per * elem;
    sim->local_bw = o->local_bw_Bps;
    sim->mode = o->mode;
    sim->window = o->window ? o->window : SIM_DATAFLOW_WINDOW;
    if (sim->mode == SIM_MODE_DATAFLOW) {
        ccs_status_t st = sim_flow_prepare(sim, err);
        if (st != CCS_OK)
            return st;
    }
    reset_run(sim);

    if (sim->mode == SIM_MODE_BARRIER) {
        for (uint32_t i = 0; i < sim->n; i++)
            sim->rank_finish[i] = sim->arrival[i];
        sim_push(sim, 0, EV_ENTER, 0, 0);
    } else if (sim->mode == SIM_MODE_DATAFLOW) {
        sim_flow_begin(sim);
    } else {
        for (uint32_t i = 0; i < sim->n; i++) {
            sim->cur[i].grp = sim->rank_first[i];
            sim_push(sim, sim->arrival[i], EV_ENTER, i, 0);
        }
    }
    while (!sim->failed) {
        /* One batch: events within a relative 1e-13 of the first are
         * rounding twins (flows that share a finish time up to the last
         * bits); each is handled at its own time, then rates are
         * recomputed once, at the latest of them. */
        double now, lim, next;

        if (!simq_peek(&sim->queue, &now))
            break;
        lim = now + fabs(now) * 1e-13;
        while (!sim->failed && simq_peek(&sim->queue, &next) &&
               next <= lim) {
            event_t e;
            if (simq_pop(&sim->queue, &e) != SIMQ_OK) {
                sim->failed = true;
                break;
            }
            sim->nevents++;
            now = e.t;
            handle(sim, &e);
        }
        /* After a failed allocation a flow may be registered on only
         * part of its route: rates are not computed from such a state. */
        if (sim->ndirty > 0 && !sim->failed)
            recompute(sim, now);
    }
    if (sim->time_reversed)
        return ccs_err_set(err, CCS_ERR_INTERNAL,
                           "simulation: an event was due before the "
                           "current time");
    if (sim->failed)
        return ccs_err_set(err, CCS_ERR_NOMEM,
                           "out of memory while simulating");
    if (sim->mode != SIM_MODE_BARRIER ? sim->ranks_done != sim->n
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
    for (int h = 0; h < SIM_HW_COUNT; h++) {
        if (sim->pm.lane_cap[h] > 0 &&
            sim->peak_rate[h] / sim->pm.lane_cap[h] > r.peak_channels)
            r.peak_channels = sim->peak_rate[h] / sim->pm.lane_cap[h];
    }
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

