/*
 * sim_flow.c - the simulator's dataflow mode (SIM_MODE_DATAFLOW):
 * hazard-ordered issue of a schedule.
 *
 * A rank issues its groups (its ops of one step) in step order, at most
 * `window` groups from its oldest unfinished one on.  An issued op starts
 * once every earlier op of the same rank it conflicts with has finished:
 *
 * - it reads chunks an earlier op writes (read after write),
 * - it writes chunks an earlier op reads (write after read: a SEND reads
 *   its chunks until its transfer has finished),
 * - it writes chunks an earlier op writes (write after write, which also
 *   keeps reductions into one chunk in step order, so the floating-point
 *   result is that of the step order to the last bit).
 *
 * Only ops of earlier steps count: the ops of one step all read the state
 * from before the step (sched.h), so they never wait for each other.  A
 * transfer starts (its latency begins) when its SEND and its receive may
 * both start and the previous transfer between the same ordered pair of
 * ranks has started (transports match a pair's messages first in, first
 * out).  Its bytes flow once the earlier steps' transfers on the sender's
 * way out (the first link of its route) and on the receiver's way in (the
 * last) have finished: each port is an in-order stream, as a NCCL
 * connection is, where a message's latency overlaps the bytes of the one
 * before and its bytes follow them; the transfers of one step flow
 * together, as in the rank mode, and a rank's NVLink and NIC ports run
 * independently.  The streams matter: started as soon as their data are
 * ready, the blocks of a pipeline would share each link max-min fairly
 * and all finish late together, where a stream finishes them one after
 * another (on cluster:2x8,nics=gpu, stragglar at 256 MiB took 1084 us
 * after the arrival that way, against 818 in the rank mode and 751 with
 * the streams).  Local ops of one rank run one at a time (its copy
 * engine), in the order they become ready.
 *
 * Why the data are those of the step order, and why this cannot stall
 * where the step order does not: docs/simulator.md, "Dataflow".  With a
 * window of 1 every earlier group has finished before a group is issued,
 * which is exactly the rank mode.
 *
 * The dependencies are built once per sim_t (sim_flow_prepare): per rank,
 * the chunk ranges its ops touch are cut at every range end into
 * segments, and a walk over the ops in order keeps each segment's last
 * writer and its readers since; each op then waits for the last writer of
 * what it reads and writes and for the readers of what it writes.  Only
 * the nearest conflicts become edges: older ones are implied (a reader
 * waited for the writer before it, and so on).
 */
#include <stdlib.h>
#include <string.h>

#include "sim_int.h"

#define NONE SIM_NO_GROUP

/* ---- preparation ---- */

static int u32_cmp(const void *pa, const void *pb)
{
    uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
    return (a > b) - (a < b);
}

/* Index of v in the sorted, distinct cuts[0..n). */
static uint32_t cut_index(const uint32_t *cuts, uint32_t n, uint32_t v)
{
    uint32_t lo = 0, hi = n;

    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (cuts[mid] < v)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Dependency edges under construction: (pred, succ) pairs. */
typedef struct edges {
    uint32_t *pred, *succ;   /* owned */
    uint32_t n, cap_p, cap_s;
} edges_t;

static bool edge_add(edges_t *e, uint32_t pred, uint32_t succ)
{
    if (!sim_grow((void **)&e->pred, &e->cap_p, e->n + 1, sizeof(uint32_t)) ||
        !sim_grow((void **)&e->succ, &e->cap_s, e->n + 1, sizeof(uint32_t)))
        return false;
    e->pred[e->n] = pred;
    e->succ[e->n] = succ;
    e->n++;
    return true;
}

/* A segment's readers since its last write: a list in one pool. */
typedef struct rnode {
    uint32_t op, next;
} rnode_t;

/* Per-rank scratch for the hazard walk, reused from rank to rank. */
typedef struct walk {
    ccs_op_range_t *acc; /* [cap_acc] the rank's ranges, op by op */
    uint32_t *acc_off;   /* [cap_ops + 1] op i's are acc[off[i]..off[i+1]) */
    uint32_t *cuts[CCS_BUF_COUNT];  /* sorted distinct range ends */
    uint32_t ncut[CCS_BUF_COUNT];
    uint32_t *writer[CCS_BUF_COUNT];  /* [segment] last writer, NONE */
    uint32_t *readers[CCS_BUF_COUNT]; /* [segment] reader list head */
    uint32_t cap_acc, cap_ops, cap_cut[CCS_BUF_COUNT];
    uint32_t cap_w[CCS_BUF_COUNT], cap_r[CCS_BUF_COUNT];
    rnode_t *pool;
    uint32_t npool, cap_pool;
    uint32_t *stamp;     /* [nops] last op that took an edge from it */
} walk_t;

static void walk_free(walk_t *w)
{
    free(w->acc);
    free(w->acc_off);
    for (int b = 0; b < CCS_BUF_COUNT; b++) {
        free(w->cuts[b]);
        free(w->writer[b]);
        free(w->readers[b]);
    }
    free(w->pool);
    free(w->stamp);
}

/* Edge pred -> f (f = flat index base + i of step `step`) unless pred is
 * of the same step (never a hazard: see the top) or already taken. */
static bool dep(sim_t *sim, walk_t *w, edges_t *e, uint32_t pred, uint32_t f,
                uint32_t step)
{
    if (pred == NONE || w->stamp[pred] == f + 1)
        return true;
    if (sim->grp[sim->df_op_grp[pred]].step == step)
        return true;
    w->stamp[pred] = f + 1;
    return edge_add(e, pred, f);
}

/* The hazard edges of rank r's ops. */
static ccs_status_t rank_hazards(sim_t *sim, uint32_t r, walk_t *w,
                                 edges_t *e, ccs_err_t *err)
{
    const ccs_op_t *ops = sim->s->rank_ops[r];
    uint32_t nops = sim->s->rank_nops[r], base = sim->df_base[r];
    uint32_t na = 0;

    if (!sim_grow((void **)&w->acc, &w->cap_acc, 2 * nops + 1,
                  sizeof(ccs_op_range_t)) ||
        !sim_grow((void **)&w->acc_off, &w->cap_ops, nops + 1,
                  sizeof(uint32_t)))
        goto nomem;
    for (int b = 0; b < CCS_BUF_COUNT; b++)
        w->ncut[b] = 0;
    for (uint32_t i = 0; i < nops; i++) {
        w->acc_off[i] = na;
        na += ccs_op_ranges(&ops[i], &w->acc[na]);
    }
    w->acc_off[nops] = na;
    /* cut every buffer at every range end */
    for (uint32_t k = 0; k < na; k++) {
        uint32_t b = w->acc[k].buf;
        if (!sim_grow((void **)&w->cuts[b], &w->cap_cut[b], w->ncut[b] + 2,
                      sizeof(uint32_t)))
            goto nomem;
        w->cuts[b][w->ncut[b]++] = w->acc[k].lo;
        w->cuts[b][w->ncut[b]++] = w->acc[k].hi;
    }
    for (int b = 0; b < CCS_BUF_COUNT; b++) {
        uint32_t m = 0;
        if (w->ncut[b] == 0)
            continue;
        qsort(w->cuts[b], w->ncut[b], sizeof(uint32_t), u32_cmp);
        for (uint32_t k = 0; k < w->ncut[b]; k++)
            if (m == 0 || w->cuts[b][k] != w->cuts[b][m - 1])
                w->cuts[b][m++] = w->cuts[b][k];
        w->ncut[b] = m;
        if (!sim_grow((void **)&w->writer[b], &w->cap_w[b], m,
                      sizeof(uint32_t)) ||
            !sim_grow((void **)&w->readers[b], &w->cap_r[b], m,
                      sizeof(uint32_t)))
            goto nomem;
        for (uint32_t k = 0; k < m; k++)
            w->writer[b][k] = w->readers[b][k] = NONE;
    }
    w->npool = 0;
    for (uint32_t i = 0; i < nops; i++) {
        uint32_t f = base + i, step = ops[i].step;

        /* every access's waits first, against the state before the op */
        for (uint32_t k = w->acc_off[i]; k < w->acc_off[i + 1]; k++) {
            const ccs_op_range_t *a = &w->acc[k];
            uint32_t b = a->buf, n = w->ncut[b];
            uint32_t s0 = cut_index(w->cuts[b], n, a->lo);
            uint32_t s1 = cut_index(w->cuts[b], n, a->hi);
            for (uint32_t sg = s0; sg < s1; sg++) {
                if (!dep(sim, w, e, w->writer[b][sg], f, step))
                    goto nomem;
                if (!a->write)
                    continue;
                for (uint32_t q = w->readers[b][sg]; q != NONE;
                     q = w->pool[q].next)
                    if (!dep(sim, w, e, w->pool[q].op, f, step))
                        goto nomem;
            }
        }
        /* then what the op leaves: writes replace, reads join */
        for (uint32_t k = w->acc_off[i]; k < w->acc_off[i + 1]; k++) {
            const ccs_op_range_t *a = &w->acc[k];
            uint32_t b = a->buf, n = w->ncut[b];
            uint32_t s0 = cut_index(w->cuts[b], n, a->lo);
            uint32_t s1 = cut_index(w->cuts[b], n, a->hi);
            for (uint32_t sg = s0; sg < s1; sg++) {
                if (a->write) {
                    w->writer[b][sg] = f;
                    w->readers[b][sg] = NONE;
                    continue;
                }
                if (w->readers[b][sg] != NONE &&
                    w->pool[w->readers[b][sg]].op == f)
                    continue;
                if (!sim_grow((void **)&w->pool, &w->cap_pool, w->npool + 1,
                              sizeof(rnode_t)))
                    goto nomem;
                w->pool[w->npool] = (rnode_t){ f, w->readers[b][sg] };
                w->readers[b][sg] = w->npool++;
            }
        }
    }
    return CCS_OK;

nomem:
    return ccs_err_set(err, CCS_ERR_NOMEM, "out of memory (dataflow)");
}

/* Keys of the transfer orders below: (src, dst, x) puts each ordered
 * pair's transfers in program order, as ids are step-major and, within a
 * step, in the sender's op order; (queue, step, x) the port queues. */
typedef struct pairkey {
    uint32_t src, dst, x;
} pairkey_t;

/* Stable counting sort of a[0..n) by a[i].src (by_src) or a[i].dst, keys
 * below nkeys; tmp[n] and cnt[nkeys + 1] are scratch.  Fed in id order,
 * two passes give (src, dst, x) and one gives (queue, x), in O(n + keys)
 * where qsort took a third of a large run's preparation. */
static void sort_by(pairkey_t *a, pairkey_t *tmp, uint32_t n, bool by_src,
                    uint32_t nkeys, uint32_t *cnt)
{
    memset(cnt, 0, sizeof(uint32_t) * ((size_t)nkeys + 1));
    for (uint32_t i = 0; i < n; i++)
        cnt[(by_src ? a[i].src : a[i].dst) + 1]++;
    for (uint32_t k = 0; k < nkeys; k++)
        cnt[k + 1] += cnt[k];
    for (uint32_t i = 0; i < n; i++)
        tmp[cnt[by_src ? a[i].src : a[i].dst]++] = a[i];
    memcpy(a, tmp, sizeof(*a) * n);
}

/* The port queues: every transfer joins the sender's queue on the first
 * pipe of its route (its way out) and the receiver's on the last (its way
 * in), ordered by step; a transfer's bytes wait for the queue's previous
 * step to finish in both.  Only the rank's own earlier transfers are in
 * its queues, so with a window of 1 (all of them finished) nobody waits:
 * the rank mode. */
static ccs_status_t build_ports(sim_t *sim, ccs_err_t *err)
{
    pairkey_t *q = NULL;      /* owned here: (queue, step, x) */
    pairkey_t *tmp = NULL;    /* owned here */
    uint32_t *cnt = NULL;     /* owned here */
    uint32_t nq = 0, nkeys = 2 * (uint32_t)sim->npipes;
    ccs_status_t st = CCS_OK;

    q = malloc(sizeof(*q) * (2 * (size_t)sim->ntr + 1));
    tmp = malloc(sizeof(*tmp) * (2 * (size_t)sim->ntr + 1));
    cnt = malloc(sizeof(*cnt) * ((size_t)nkeys + 1));
    sim->df_q_x = malloc(sizeof(uint32_t) * (2 * (size_t)sim->ntr + 1));
    sim->df_q_nb = malloc(sizeof(uint32_t) * (2 * (size_t)sim->ntr + 1));
    sim->df_q_pipe = malloc(sizeof(uint32_t) * (2 * (size_t)sim->ntr + 1));
    sim->df_x_q = malloc(sizeof(uint32_t) * (2 * (size_t)sim->ntr + 1));
    if (q == NULL || tmp == NULL || cnt == NULL || sim->df_q_x == NULL ||
        sim->df_q_nb == NULL ||
        sim->df_q_pipe == NULL || sim->df_x_q == NULL) {
        st = ccs_err_set(err, CCS_ERR_NOMEM, "out of memory (dataflow)");
        goto cleanup;
    }
    for (uint32_t x = 0; x < sim->ntr; x++) {
        const sim_route_t *rt = &sim->route[sim->tr[x].route];
        uint32_t first, last;

        sim->df_x_q[2 * (size_t)x] = sim->df_x_q[2 * (size_t)x + 1] = NONE;
        sim->df_pwait0[x] = 0;
        if (rt->len == 0)
            continue;
        first = (uint32_t)sim->route_pipes[rt->off];
        last = (uint32_t)sim->route_pipes[rt->off + rt->len - 1];
        /* the way out holds only the sender's transfers, the way in only
         * the receiver's: a pipe that is the last of some routes and the
         * first of others (a GPU that forwards) is two queues */
        q[nq++] = (pairkey_t){ 2 * first, sim->tr[x].step, x };
        q[nq++] = (pairkey_t){ 2 * last + 1, sim->tr[x].step, x };
    }
    sort_by(q, tmp, nq, true, nkeys, cnt);
    sim->df_nq = nq;
    for (uint32_t k = 0; k < nq; k++) {
        uint32_t x = q[k].x, *slot = &sim->df_x_q[2 * (size_t)x];
        sim->df_q_x[k] = x;
        sim->df_q_pipe[k] = q[k].src;
        sim->df_q_nb[k] = NONE;
        slot[slot[0] == NONE ? 0 : 1] = k;
    }
    /* batches: runs of one (pipe, step); each entry points at the next
     * batch of its pipe, whose members wait for all of its own */
    for (uint32_t k = 0; k < nq;) {
        uint32_t e = k, nb;
        while (e < nq && q[e].src == q[k].src && q[e].dst == q[k].dst)
            e++;
        nb = e < nq && q[e].src == q[k].src ? e : NONE;
        for (uint32_t j = k; j < e; j++)
            sim->df_q_nb[j] = nb;
        if (nb != NONE) {
            for (uint32_t j = nb; j < nq && q[j].src == q[nb].src &&
                                  q[j].dst == q[nb].dst; j++)
                sim->df_pwait0[q[j].x] += e - k;
        }
        k = e;
    }

cleanup:
    free(q);
    free(tmp);
    free(cnt);
    return st;
}

ccs_status_t sim_flow_prepare(sim_t *sim, ccs_err_t *err)
{
    const ccs_sched_t *s = sim->s;
    ccs_pairing_t pr;             /* owned here */
    edges_t e;                    /* owned here */
    walk_t w;                     /* owned here */
    pairkey_t *pk = NULL;         /* owned here: [2 * ntr] keys, scratch */
    uint32_t *pcnt = NULL;        /* owned here: [n + 1] */
    uint64_t total = ccs_sched_total_ops(s);
    uint32_t n = sim->n, nops;
    ccs_status_t st = CCS_OK;

    if (sim->df_built)
        return CCS_OK;
    sim_flow_free(sim);   /* what a failed earlier attempt left */
    memset(&pr, 0, sizeof(pr));
    memset(&e, 0, sizeof(e));
    memset(&w, 0, sizeof(w));
    if (total >= UINT32_MAX)
        return ccs_err_set(err, CCS_ERR_UNSUPPORTED, "schedule too large "
                           "for the dataflow mode (%llu ops)",
                           (unsigned long long)total);
    nops = (uint32_t)total;
    st = ccs_sched_pair(s, CCS_ERR_VERIFY, &pr, err);
    if (st != CCS_OK)
        return st;
    sim->nops = nops;
    sim->df_base = malloc(sizeof(uint32_t) * ((size_t)n + 1));
    sim->df_op_xfer = malloc(sizeof(uint32_t) * ((size_t)nops + 1));
    sim->df_op_grp = malloc(sizeof(uint32_t) * ((size_t)nops + 1));
    sim->df_grp_op = malloc(sizeof(uint32_t) * ((size_t)sim->ngrp + 1));
    sim->df_grp_nops = calloc((size_t)sim->ngrp + 1, sizeof(uint32_t));
    sim->df_npred = calloc((size_t)nops + 1, sizeof(uint32_t));
    sim->df_succ_off = calloc((size_t)nops + 2, sizeof(uint32_t));
    sim->df_xfer_op = malloc(sizeof(uint32_t) * (2 * (size_t)sim->ntr + 1));
    sim->df_fifo_next = malloc(sizeof(uint32_t) * ((size_t)sim->ntr + 1));
    sim->df_pwait0 = malloc(sizeof(uint32_t) * ((size_t)sim->ntr + 1));
    sim->df_pwait = malloc(sizeof(uint32_t) * ((size_t)sim->ntr + 1));
    sim->df_wait = malloc(sizeof(uint32_t) * ((size_t)nops + 1));
    sim->df_left = malloc(sizeof(uint32_t) * ((size_t)sim->ngrp + 1));
    sim->df_old = malloc(sizeof(uint32_t) * ((size_t)n + 1));
    sim->df_next = malloc(sizeof(uint32_t) * ((size_t)n + 1));
    sim->df_inflight = malloc(sizeof(uint32_t) * ((size_t)n + 1));
    sim->df_local_free = malloc(sizeof(double) * ((size_t)n + 1));
    sim->df_stack = malloc(sizeof(uint32_t) * ((size_t)nops + 1));
    w.stamp = calloc((size_t)nops + 1, sizeof(uint32_t));
    pk = malloc(sizeof(*pk) * (2 * (size_t)sim->ntr + 1));
    pcnt = malloc(sizeof(*pcnt) * ((size_t)n + 1));
    if (sim->df_base == NULL || sim->df_op_xfer == NULL ||
        sim->df_op_grp == NULL || sim->df_grp_op == NULL ||
        sim->df_grp_nops == NULL || sim->df_npred == NULL ||
        sim->df_succ_off == NULL || sim->df_xfer_op == NULL ||
        sim->df_fifo_next == NULL ||
        sim->df_pwait0 == NULL || sim->df_pwait == NULL ||
        sim->df_wait == NULL ||
        sim->df_left == NULL || sim->df_old == NULL ||
        sim->df_next == NULL || sim->df_inflight == NULL ||
        sim->df_local_free == NULL || sim->df_stack == NULL ||
        w.stamp == NULL || pk == NULL || pcnt == NULL)
        goto nomem;
    memcpy(sim->df_base, pr.base, sizeof(uint32_t) * ((size_t)n + 1));

    /* Ops to groups and SENDs to transfers: a group's k-th SEND is
     * tr[out_off + k] (build_xfers lays them out so). */
    for (uint32_t r = 0; r < n; r++) {
        const ccs_op_t *ops = s->rank_ops[r];
        uint32_t g = sim->rank_first[r], k = 0;

        for (uint32_t i = 0; i < s->rank_nops[r]; i++) {
            uint32_t f = sim->df_base[r] + i;
            if (i > 0 && ops[i].step != ops[i - 1].step) {
                g = sim->grp[g].next;
                k = 0;
            }
            if (i == 0 || ops[i].step != ops[i - 1].step)
                sim->df_grp_op[g] = f;
            sim->df_op_grp[f] = g;
            sim->df_grp_nops[g]++;
            sim->df_op_xfer[f] = NONE;
            if (ops[i].kind == CCS_OP_SEND) {
                uint32_t x = sim->grp[g].out_off + k++;
                sim->df_op_xfer[f] = x;
                sim->df_xfer_op[2 * (size_t)x] = f;
            }
        }
    }
    /* receives to their SEND's transfer */
    for (uint32_t f = 0; f < nops; f++) {
        uint32_t m = pr.mate[f];
        if (m == CCS_NO_OP || sim->df_op_xfer[f] != NONE)
            continue;
        sim->df_op_xfer[f] = sim->df_op_xfer[m];
        sim->df_xfer_op[2 * (size_t)sim->df_op_xfer[m] + 1] = f;
    }

    /* hazard edges, then as lists of waiters per op */
    for (uint32_t r = 0; r < n && st == CCS_OK; r++)
        st = rank_hazards(sim, r, &w, &e, err);
    if (st != CCS_OK)
        goto cleanup;
    for (uint32_t k = 0; k < e.n; k++) {
        sim->df_succ_off[e.pred[k] + 1]++;
        sim->df_npred[e.succ[k]]++;
    }
    for (uint32_t f = 0; f < nops; f++)
        sim->df_succ_off[f + 1] += sim->df_succ_off[f];
    sim->df_succ = malloc(sizeof(uint32_t) * ((size_t)e.n + 1));
    if (sim->df_succ == NULL)
        goto nomem;
    /* fill by pred: the edges of one pred keep their order (succ order),
     * stamp[] reused as the fill position */
    for (uint32_t f = 0; f < nops; f++)
        w.stamp[f] = sim->df_succ_off[f];
    for (uint32_t k = 0; k < e.n; k++)
        sim->df_succ[w.stamp[e.pred[k]]++] = e.succ[k];

    /* first in, first out per ordered pair (the order of starts) */
    for (uint32_t x = 0; x < sim->ntr; x++)
        pk[x] = (pairkey_t){ sim->tr[x].src, sim->tr[x].dst, x };
    sort_by(pk, pk + sim->ntr, sim->ntr, false, n, pcnt);
    sort_by(pk, pk + sim->ntr, sim->ntr, true, n, pcnt);
    for (uint32_t k = 0; k < sim->ntr; k++) {
        bool same = k + 1 < sim->ntr && pk[k + 1].src == pk[k].src &&
                    pk[k + 1].dst == pk[k].dst;
        sim->df_fifo_next[pk[k].x] = same ? pk[k + 1].x : NONE;
    }
    st = build_ports(sim, err);
    if (st != CCS_OK)
        goto cleanup;
    sim->df_built = true;
    goto cleanup;

nomem:
    st = ccs_err_set(err, CCS_ERR_NOMEM, "out of memory (dataflow)");
cleanup:
    ccs_pairing_free(&pr);
    free(e.pred);
    free(e.succ);
    walk_free(&w);
    free(pk);
    free(pcnt);
    return st;
}

void sim_flow_free(sim_t *sim)
{
    uint32_t **arr[] = { &sim->df_base, &sim->df_op_xfer, &sim->df_op_grp,
                         &sim->df_grp_op, &sim->df_grp_nops, &sim->df_npred,
                         &sim->df_succ_off, &sim->df_succ, &sim->df_xfer_op,
                         &sim->df_fifo_next, &sim->df_q_x, &sim->df_q_nb,
                         &sim->df_q_pipe, &sim->df_x_q,
                         &sim->df_pwait0, &sim->df_pwait,
                         &sim->df_wait, &sim->df_left,
                         &sim->df_old, &sim->df_next, &sim->df_inflight,
                         &sim->df_stack };

    for (size_t i = 0; i < sizeof(arr) / sizeof(arr[0]); i++) {
        free(*arr[i]);
        *arr[i] = NULL;
    }
    free(sim->df_local_free);
    sim->df_local_free = NULL;
    sim->df_built = false;
}

/* ---- running ---- */

/* tr_ready bits in this mode: the SEND may start (1), the receive (2),
 * the pair's previous transfer has started (4); started (8); latency
 * over, waiting for the pair's earlier steps to finish (16). */
enum { TR_ALL = 7, TR_STARTED = 8, TR_HELD = 16 };

/* Start transfer x if both of its ops may start and the pair's previous
 * transfer has started; then the next ones on the pair that waited only
 * for that. */
static void xfer_go(sim_t *sim, uint32_t x, double now)
{
    while (x != NONE && sim->tr_ready[x] == TR_ALL) {
        uint32_t r = sim->tr[x].route;
        double a = sim->route[r].alpha * sim->pm.lat_scale[sim->route[r].hw];

        sim->tr_ready[x] |= TR_STARTED;
        if (a > 0)
            sim_push(sim, now + a, EV_BW, x, 0);
        else
            sim_flow_bw(sim, x, now);
        x = sim->df_fifo_next[x];
        if (x != NONE)
            sim->tr_ready[x] |= 4;
    }
}

void sim_flow_bw(sim_t *sim, uint32_t x, double now)
{
    if (sim->df_pwait[x] > 0)
        sim->tr_ready[x] |= TR_HELD;
    else
        sim_bw_start(sim, x, now);
}

/* Op f has nothing left to wait for: it starts. */
static void op_ready(sim_t *sim, uint32_t f, double now)
{
    uint32_t x = sim->df_op_xfer[f];
    uint32_t g = sim->df_op_grp[f], r = sim->grp[g].rank;
    const ccs_op_t *op = &sim->s->rank_ops[r][f - sim->df_base[r]];
    double c, t0;

    if (x != NONE) {
        sim->tr_ready[x] |= op->kind == CCS_OP_SEND ? 1 : 2;
        xfer_go(sim, x, now);
        return;
    }
    c = sim_local_cost(sim, op->nchunks);
    if (c <= 0) {
        sim->df_stack[sim->df_nstack++] = f;
        return;
    }
    t0 = sim->df_local_free[r] > now ? sim->df_local_free[r] : now;
    sim->df_local_free[r] = t0 + c;
    sim_push(sim, t0 + c, EV_LOCAL, f, 0);
}

/* Issue rank r's groups while its window has room. */
static void issue(sim_t *sim, uint32_t r, double now)
{
    while (sim->df_inflight[r] < sim->window && sim->df_next[r] != NONE) {
        uint32_t g = sim->df_next[r];
        uint32_t f0 = sim->df_grp_op[g], f1 = f0 + sim->df_grp_nops[g];

        sim->df_next[r] = sim->grp[g].next;
        sim->df_inflight[r]++;
        /* sends, receives, then local ops, each in the order in which
         * the rank mode posts them, so that a window of 1 is that mode
         * event for event (the order of events at one time decides the
         * last bits of the rates) */
        for (uint32_t k = 0; k < sim->grp[g].nout; k++) {
            uint32_t f = sim->df_xfer_op[2 * (size_t)(sim->grp[g].out_off + k)];
            if (--sim->df_wait[f] == 0)
                op_ready(sim, f, now);
        }
        for (uint32_t k = 0; k < sim->grp[g].nin; k++) {
            uint32_t x = sim->in_list[sim->grp[g].in_off + k];
            uint32_t f = sim->df_xfer_op[2 * (size_t)x + 1];
            if (--sim->df_wait[f] == 0)
                op_ready(sim, f, now);
        }
        for (uint32_t f = f0; f < f1; f++) {
            if (sim->df_op_xfer[f] == NONE && --sim->df_wait[f] == 0)
                op_ready(sim, f, now);
        }
    }
}

/* Propagate the finished ops on the stack: their waiters, their groups,
 * their ranks' windows. */
static void drain(sim_t *sim, double now)
{
    while (sim->df_nstack > 0) {
        uint32_t f = sim->df_stack[--sim->df_nstack];
        uint32_t g = sim->df_op_grp[f], r = sim->grp[g].rank;

        sim_note_step_end(sim, sim->grp[g].step, now);
        for (uint32_t k = sim->df_succ_off[f]; k < sim->df_succ_off[f + 1];
             k++) {
            uint32_t q = sim->df_succ[k];
            if (--sim->df_wait[q] == 0)
                op_ready(sim, q, now);
        }
        if (--sim->df_left[g] > 0 || g != sim->df_old[r])
            continue;
        while (sim->df_old[r] != sim->df_next[r] &&
               sim->df_left[sim->df_old[r]] == 0) {
            sim->df_old[r] = sim->grp[sim->df_old[r]].next;
            sim->df_inflight[r]--;
        }
        if (sim->df_old[r] == NONE) {
            sim->rank_finish[r] = now;
            sim->ranks_done++;
            continue;
        }
        issue(sim, r, now);
    }
}

void sim_flow_begin(sim_t *sim)
{
    for (uint32_t f = 0; f < sim->nops; f++)
        sim->df_wait[f] = sim->df_npred[f] + 1;
    memcpy(sim->df_left, sim->df_grp_nops, sizeof(uint32_t) * sim->ngrp);
    memcpy(sim->df_pwait, sim->df_pwait0, sizeof(uint32_t) * sim->ntr);
    /* a pair's first transfer waits for no earlier one to start */
    for (uint32_t x = 0; x < sim->ntr; x++)
        sim->tr_ready[x] |= 4;
    for (uint32_t x = 0; x < sim->ntr; x++)
        if (sim->df_fifo_next[x] != NONE)
            sim->tr_ready[sim->df_fifo_next[x]] &= (uint8_t)~4u;
    for (uint32_t r = 0; r < sim->n; r++) {
        sim->df_old[r] = sim->df_next[r] = sim->rank_first[r];
        sim->df_inflight[r] = 0;
        sim->df_local_free[r] = 0;
        sim_push(sim, sim->arrival[r], EV_ENTER, r, 0);
    }
    sim->df_nstack = 0;
}

void sim_flow_enter(sim_t *sim, uint32_t r, double now)
{
    if (sim->df_old[r] == NONE) {
        sim->rank_finish[r] = now;
        sim->ranks_done++;
        return;
    }
    issue(sim, r, now);
    drain(sim, now);
}

void sim_flow_local_done(sim_t *sim, uint32_t f, double now)
{
    sim->df_stack[sim->df_nstack++] = f;
    drain(sim, now);
}

void sim_flow_xfer_done(sim_t *sim, uint32_t x, double now)
{
    /* the next step of its ports' queues may flow once all of this one
     * has finished */
    for (int k = 0; k < 2; k++) {
        uint32_t e = sim->df_x_q[2 * (size_t)x + k], nb;

        if (e == NONE || (nb = sim->df_q_nb[e]) == NONE)
            continue;
        for (uint32_t j = nb; j < sim->df_nq &&
                              sim->df_q_pipe[j] == sim->df_q_pipe[nb] &&
                              sim->tr[sim->df_q_x[j]].step ==
                                  sim->tr[sim->df_q_x[nb]].step; j++) {
            uint32_t z = sim->df_q_x[j];
            if (--sim->df_pwait[z] == 0 && (sim->tr_ready[z] & TR_HELD)) {
                sim->tr_ready[z] &= (uint8_t)~TR_HELD;
                sim_bw_start(sim, z, now);
            }
        }
    }
    /* the receiver first: the stack is last in, first out, and the rank
     * mode finishes the sender's side first */
    sim->df_stack[sim->df_nstack++] = sim->df_xfer_op[2 * (size_t)x + 1];
    sim->df_stack[sim->df_nstack++] = sim->df_xfer_op[2 * (size_t)x];
    drain(sim, now);
}
