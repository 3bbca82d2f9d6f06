/*
 * msccl_rank.c - the MSCCL exporter's per-rank translation (msccl_export.c):
 * one rank's IR ops -> thread blocks and steps, with channels, fusion of
 * forwarded receives, and the dependencies between thread blocks.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "msccl.h"
#include "msccl_int.h"

/* ---- one rank's program ---- */

static uint32_t op_chan(const work_t *w, uint32_t rank, const ccs_op_t *op)
{
    const ccs_op_t *base = w->s->rank_ops[rank];
    uint32_t blk = (uint32_t)((uint64_t)op->step * w->nblk /
                              (w->s->nsteps ? w->s->nsteps : 1));
    uint32_t pg = op->peer >= 0
                      ? (rank + (uint32_t)op->peer) % w->blk_npg[blk] : 0;
    uint32_t lane = w->plan[op - base].lane % w->nlanes;
    return (w->blk_base[blk] + pg) * w->nlanes + lane;
}

static bool op_is_recv(const ccs_op_t *op)
{
    return op->kind == CCS_OP_RECV || op->kind == CCS_OP_RECV_REDUCE;
}

static bool ranges_overlap(uint8_t b1, uint32_t c1, uint32_t n1, uint8_t b2,
                           uint32_t c2, uint32_t n2)
{
    return b1 == b2 && c1 < c2 + n2 && c2 < c1 + n1;
}

/* Does op write buf[c..c+n)? (every kind but SEND writes op->buf) */
static bool op_writes(const ccs_op_t *op, uint8_t b, uint32_t c, uint32_t n)
{
    return op->kind != CCS_OP_SEND &&
           ranges_overlap(op->buf, op->chunk, op->nchunks, b, c, n);
}

static bool op_reads(const ccs_op_t *op, uint8_t b, uint32_t c, uint32_t n)
{
    if (op->kind == CCS_OP_SEND)
        return ranges_overlap(op->buf, op->chunk, op->nchunks, b, c, n);
    if (op->kind == CCS_OP_RECV)
        return false;
    if (op->kind == CCS_OP_REDUCE_LOCAL &&
        ranges_overlap(op->buf, op->chunk, op->nchunks, b, c, n))
        return true;
    return ranges_overlap(op->src_buf, op->src_chunk, op->nchunks, b, c, n);
}

/* How far ahead a receive looks for the send that forwards it: a
 * forwarding schedule sends on within a few steps. */
#define FUSE_WINDOW_OPS 512

/* The send that forwards receive i unchanged, or -1. */
static int32_t find_forward(const work_t *w, uint32_t rank, uint32_t i)
{
    const ccs_op_t *ops = w->s->rank_ops[rank];
    uint32_t n = w->s->rank_nops[rank];
    const ccs_op_t *r = &ops[i];
    uint32_t chan = op_chan(w, rank, r);

    for (uint32_t j = i + 1; j < n && j < i + FUSE_WINDOW_OPS; j++) {
        const ccs_op_t *o = &ops[j];
        if (o->step == r->step)
            continue;   /* lock-step: same-step ops do not see the data */
        if (o->kind == CCS_OP_SEND && o->buf == r->buf &&
            o->chunk == r->chunk && o->nchunks == r->nchunks) {
            if (op_chan(w, rank, o) != chan || w->plan[j].tb == -1)
                return -1;
            /* An earlier send to the same peer in between would be
             * overtaken by the fused one. */
            for (uint32_t k = i + 1; k < j; k++)
                if (ops[k].kind == CCS_OP_SEND && ops[k].peer == o->peer &&
                    ops[k].step > r->step)
                    return -1;
            return (int32_t)j;
        }
        if (op_writes(o, r->buf, r->chunk, r->nchunks))
            return -1;
    }
    return -1;
}

/* After fused send j of RECV_REDUCE i into scratch: is the value read
 * again before it is overwritten?  (If not, rrs need not store it.)
 * Unknown beyond the window counts as read. */
static bool read_later(const work_t *w, uint32_t rank, uint32_t i,
                       uint32_t j)
{
    const ccs_op_t *ops = w->s->rank_ops[rank];
    uint32_t n = w->s->rank_nops[rank];
    const ccs_op_t *r = &ops[i];

    /* From the receive on: ops of the send's own step may precede it. */
    for (uint32_t k = i + 1; k < n; k++) {
        if (k == j || ops[k].step == r->step)
            continue;
        if (k >= j + FUSE_WINDOW_OPS)
            return true;
        if (op_reads(&ops[k], r->buf, r->chunk, r->nchunks))
            return true;
        if (op_writes(&ops[k], r->buf, r->chunk, r->nchunks)) {
            /* A partial overwrite leaves other chunks live. */
            return !(ops[k].chunk <= r->chunk &&
                     ops[k].chunk + ops[k].nchunks >=
                         r->chunk + r->nchunks) ||
                   ops[k].kind == CCS_OP_REDUCE_LOCAL ||
                   (ops[k].kind == CCS_OP_RECV_REDUCE &&
                    op_reads(&ops[k], r->buf, r->chunk, r->nchunks));
        }
    }
    /* Scratch dies at the end; OUT would be part of the result. */
    return r->buf != CCS_BUF_SCRATCH;
}

static ccs_status_t tb_new(xrank_t *xr, int32_t send, int32_t recv,
                           uint32_t chan, int32_t *id, ccs_err_t *err)
{
    xtb_t *p = realloc(xr->tbs, (xr->ntbs + 1) * sizeof(*p));
    if (p == NULL)
        return ccs_err_set(err, CCS_ERR_NOMEM, "msccl export: out of memory");
    xr->tbs = p;
    memset(&p[xr->ntbs], 0, sizeof(p[0]));
    p[xr->ntbs].send = send;
    p[xr->ntbs].recv = recv;
    p[xr->ntbs].chan = chan;
    p[xr->ntbs].pred[0] = p[xr->ntbs].pred[1] = -1;
    *id = (int32_t)xr->ntbs++;
    return CCS_OK;
}

static ccs_status_t tb_push(xtb_t *tb, const xstep_t *st, ccs_err_t *err)
{
    if (tb->nsteps == tb->cap) {
        uint32_t cap = tb->cap ? tb->cap * 2 : 16;
        xstep_t *p = realloc(tb->steps, cap * sizeof(*p));
        if (p == NULL)
            return ccs_err_set(err, CCS_ERR_NOMEM,
                               "msccl export: out of memory");
        tb->steps = p;
        tb->cap = cap;
    }
    tb->steps[tb->nsteps++] = *st;
    return CCS_OK;
}

void msccl_xrank_free(xrank_t *xr)
{
    for (uint32_t t = 0; t < xr->ntbs; t++)
        free(xr->tbs[t].steps);
    free(xr->tbs);
    xr->tbs = NULL;
    xr->ntbs = 0;
}

/* Location index of (buf, chunk) for hazard tracking. */
static uint32_t loc_of(const work_t *w, uint8_t buf, uint32_t chunk)
{
    uint32_t C = w->s->nchunks;
    if (buf == CCS_BUF_IN)
        return w->alias ? C + chunk : chunk;
    if (buf == CCS_BUF_OUT)
        return C + chunk;
    return 2 * C + chunk;
}

/* MSCCL buffer and offset of an IR (buf, chunk) on `rank`: blocked
 * collectives keep only the rank's block of IN (allgather) or OUT
 * (reducescatter). */
static void map_buf(const ccs_sched_t *s, uint32_t rank, uint8_t buf,
                    uint32_t chunk, uint8_t *mbuf, int32_t *off)
{
    uint32_t B = ccs_coll_block(s->coll, s->nranks, s->nchunks);
    if (buf == CCS_BUF_IN) {
        *mbuf = MSCCL_BUF_I;
        *off = (int32_t)(s->coll == CCS_COLL_ALLGATHER ? chunk - rank * B
                                                       : chunk);
    } else if (buf == CCS_BUF_OUT) {
        *mbuf = MSCCL_BUF_O;
        *off = (int32_t)(s->coll == CCS_COLL_REDUCESCATTER ? chunk - rank * B
                                                           : chunk);
    } else {
        *mbuf = MSCCL_BUF_S;
        *off = (int32_t)chunk;
    }
}

static ccs_status_t reader_add(work_t *w, uint32_t loc, uint32_t tb,
                               uint32_t k, ccs_err_t *err)
{
    if (w->nreaders[loc] == w->capreaders[loc]) {
        uint32_t cap = w->capreaders[loc] ? w->capreaders[loc] * 2 : 4;
        uint32_t *p = realloc(w->readers[loc], 2 * cap * sizeof(*p));
        if (p == NULL)
            return ccs_err_set(err, CCS_ERR_NOMEM,
                               "msccl export: out of memory");
        w->readers[loc] = p;
        w->capreaders[loc] = cap;
    }
    w->readers[loc][2 * w->nreaders[loc]] = tb;
    w->readers[loc][2 * w->nreaders[loc] + 1] = k;
    w->nreaders[loc]++;
    return CCS_OK;
}

static void need(work_t *w, uint32_t self, int64_t who)
{
    if (who < 0)
        return;
    uint32_t tb = (uint32_t)(who >> 32);
    int32_t k = (int32_t)(who & 0xffffffff);
    if (tb != self && k > w->depmax[tb])
        w->depmax[tb] = k;
}

/* Add dependencies of an op reading/writing the given ranges, placed in tb
 * `t` of xr; then append its steps.  reads/writes: up to 2 ranges each. */
typedef struct range { uint8_t buf; uint32_t chunk, n; } range_t;

static ccs_status_t place(work_t *w, xrank_t *xr, uint32_t t,
                          const range_t *rd, int nrd, const range_t *wr,
                          int nwr, xstep_t *steps, uint32_t nsteps,
                          msccl_export_info_t *info, ccs_err_t *err)
{
    xtb_t *tb = &xr->tbs[t];
    ccs_status_t st;

    for (uint32_t x = 0; x < xr->ntbs; x++)
        w->depmax[x] = -1;
    if (w->step_order)
        for (uint32_t x = 0; x < xr->ntbs; x++)
            if (w->prevk[x] >= 0)
                need(w, t, ((int64_t)x << 32) | (uint32_t)w->prevk[x]);
    /* A thread block continuing a connection of the previous time block
     * starts after it, as if the connection had stayed in one thread
     * block: otherwise later pieces of a pipeline would start at once on
     * their own channel and compete with the earlier ones for the link. */
    if (tb->nsteps == 0)
        for (int side = 0; side < 2; side++) {
            int32_t p = tb->pred[side];
            if (p >= 0 && xr->tbs[p].nsteps > 0)
                need(w, t, ((int64_t)p << 32) | (xr->tbs[p].nsteps - 1));
        }
    for (int i = 0; i < nrd; i++)
        for (uint32_t c = 0; c < rd[i].n; c++)
            need(w, t, w->writer[loc_of(w, rd[i].buf, rd[i].chunk + c)]);
    for (int i = 0; i < nwr; i++)
        for (uint32_t c = 0; c < wr[i].n; c++) {
            uint32_t l = loc_of(w, wr[i].buf, wr[i].chunk + c);
            need(w, t, w->writer[l]);
            for (uint32_t k = 0; k < w->nreaders[l]; k++)
                need(w, t, ((int64_t)w->readers[l][2 * k] << 32) |
                               w->readers[l][2 * k + 1]);
        }
    /* Drop what this tb already waited for; the rest become nops, the
     * last one rides on the op's first step. */
    int32_t lastx = -1;
    for (uint32_t x = 0; x < xr->ntbs; x++) {
        int32_t *kn = &w->known[(size_t)t * xr->ntbs + x];
        if (w->depmax[x] < 0 || w->depmax[x] <= *kn)
            continue;
        *kn = w->depmax[x];
        xr->tbs[x].steps[w->depmax[x]].hasdep = 1;
        info->ndeps++;
        if (lastx >= 0) {
            xstep_t nop = { MSCCL_T_NOP, MSCCL_BUF_I, MSCCL_BUF_O, 0, -1, -1,
                            0, lastx, w->depmax[lastx] };
            st = tb_push(tb, &nop, err);
            if (st != CCS_OK)
                return st;
            info->nnops++;
        }
        lastx = (int32_t)x;
    }
    if (lastx >= 0) {
        steps[0].depid = lastx;
        steps[0].deps = w->depmax[lastx];
    }
    for (uint32_t i = 0; i < nsteps; i++) {
        st = tb_push(tb, &steps[i], err);
        if (st != CCS_OK)
            return st;
    }
    uint32_t k = tb->nsteps - 1;
    w->curk[t] = (int32_t)k;
    for (int i = 0; i < nrd; i++)
        for (uint32_t c = 0; c < rd[i].n; c++) {
            st = reader_add(w, loc_of(w, rd[i].buf, rd[i].chunk + c), t, k,
                            err);
            if (st != CCS_OK)
                return st;
        }
    for (int i = 0; i < nwr; i++)
        for (uint32_t c = 0; c < wr[i].n; c++) {
            uint32_t l = loc_of(w, wr[i].buf, wr[i].chunk + c);
            w->writer[l] = ((int64_t)t << 32) | k;
            w->nreaders[l] = 0;
        }
    return CCS_OK;
}

/* Record that tb carries the connection whose latest thread block is in
 * *slot (side 0 sends, 1 receives). */
static void chain(xrank_t *xr, int32_t *slot, int32_t tb, int side)
{
    if (*slot >= 0 && *slot != tb && xr->tbs[tb].pred[side] < 0)
        xr->tbs[tb].pred[side] = *slot;
    *slot = tb;
}

/* Pair receive peers with the send peers they forward to (greedy by
 * count of forwarding candidates). */
static int cand_cmp(const void *a, const void *b)
{
    const uint32_t *x = a, *y = b;
    if (x[2] != y[2])
        return x[2] > y[2] ? -1 : 1;
    if (x[0] != y[0])
        return x[0] < y[0] ? -1 : 1;
    return x[1] < y[1] ? -1 : x[1] > y[1];
}

ccs_status_t msccl_build_rank(work_t *w, uint32_t rank, xrank_t *xr,
                               msccl_export_info_t *info, ccs_err_t *err)
{
    const ccs_sched_t *s = w->s;
    const ccs_op_t *ops = s->rank_ops[rank];
    uint32_t n = s->rank_nops[rank], R = s->nranks;
    ccs_status_t st = CCS_OK;
    uint32_t *cand = NULL;      /* owned: (p, q, count) triples */
    uint32_t ncand = 0;

    for (uint32_t i = 0; i < n; i++) {
        w->plan[i].tb = 0;
        w->plan[i].fused = -1;
        w->plan[i].lane = 0;
        if (ops[i].peer < 0)
            continue;
        /* Same step, same peer, same direction: a different lane, so the
         * executor runs them in parallel thread blocks as the step does. */
        for (uint32_t j = i; j-- > 0 && ops[j].step == ops[i].step;)
            if (ops[j].peer == ops[i].peer &&
                (ops[j].kind == CCS_OP_SEND) == (ops[i].kind == CCS_OP_SEND)) {
                w->plan[i].lane = w->plan[j].lane + 1;
                break;
            }
    }
    for (uint32_t p = 0; p < R; p++)
        w->pair_send[p] = w->pair_recv[p] = -1;

    /* 1. forwarding candidates and pairing */
    cand = calloc((size_t)n * 3 + 3, sizeof(*cand));
    if (cand == NULL) {
        st = ccs_err_set(err, CCS_ERR_NOMEM, "msccl export: out of memory");
        goto cleanup;
    }
    for (uint32_t i = 0; i < n; i++) {
        if (!op_is_recv(&ops[i]))
            continue;
        int32_t j = find_forward(w, rank, i);
        if (j < 0)
            continue;
        uint32_t p = (uint32_t)ops[i].peer, q = (uint32_t)ops[j].peer;
        uint32_t k;
        for (k = 0; k < ncand; k++)
            if (cand[3 * k] == p && cand[3 * k + 1] == q)
                break;
        if (k == ncand) {
            cand[3 * k] = p;
            cand[3 * k + 1] = q;
            cand[3 * k + 2] = 0;
            ncand++;
        }
        cand[3 * k + 2]++;
    }
    qsort(cand, ncand, 3 * sizeof(*cand), cand_cmp);
    for (uint32_t k = 0; k < ncand; k++) {
        uint32_t p = cand[3 * k], q = cand[3 * k + 1];
        if (w->pair_send[p] < 0 && w->pair_recv[q] < 0 && p != q) {
            w->pair_send[p] = (int32_t)q;
            w->pair_recv[q] = (int32_t)p;
        }
    }
    if (w->pair_same)
        for (uint32_t p = 0; p < R; p++)
            if (w->pair_send[p] < 0 && w->pair_recv[p] < 0)
                w->pair_send[p] = w->pair_recv[p] = (int32_t)p;
    /* 2. fuse where the pairing allows */
    for (uint32_t i = 0; i < n; i++) {
        if (!op_is_recv(&ops[i]) || w->plan[i].tb == -1)
            continue;
        int32_t j = find_forward(w, rank, i);
        if (j < 0 || w->pair_send[ops[i].peer] != ops[j].peer ||
            ops[j].peer == ops[i].peer || w->plan[j].fused >= 0)
            continue;
        w->plan[i].fused = j;
        w->plan[j].tb = -1;
    }

    /* 3. thread blocks */
    for (uint32_t k = 0; k < R * MSCCL_MAX_CHANNELS; k++)
        w->chain_send[k] = w->chain_recv[k] = -1;
    for (uint32_t c = 0; c < w->nch; c++) {
        w->local_tb[c] = -1;
        for (uint32_t p = 0; p < R; p++)
            w->send_tb[c * R + p] = w->recv_tb[c * R + p] = -1;
    }
    for (uint32_t i = 0; i < n; i++) {
        const ccs_op_t *o = &ops[i];
        uint32_t c = op_chan(w, rank, o);
        int32_t *ss = NULL, *rs = NULL, sp = -1, rp = -1, tb;

        if (w->plan[i].tb == -1)
            continue;
        /* A paired (recv p, send q) shares one thread block per channel:
         * both slots point to it, so a connection has one owner. */
        if (o->kind == CCS_OP_SEND) {
            sp = o->peer;
            ss = &w->send_tb[c * R + (uint32_t)sp];
            if (w->pair_recv[sp] >= 0)
                rs = &w->recv_tb[c * R + (uint32_t)w->pair_recv[sp]];
        } else if (op_is_recv(o)) {
            rp = o->peer;
            rs = &w->recv_tb[c * R + (uint32_t)rp];
            if (w->pair_send[rp] >= 0)
                ss = &w->send_tb[c * R + (uint32_t)w->pair_send[rp]];
            if (w->plan[i].fused >= 0)
                sp = ops[w->plan[i].fused].peer;
        }
        if (ss == NULL && rs == NULL) {
            if (w->local_tb[c] < 0) {
                st = tb_new(xr, -1, -1, c, &w->local_tb[c], err);
                if (st != CCS_OK)
                    goto cleanup;
            }
            w->plan[i].tb = w->local_tb[c];
            continue;
        }
        tb = ss != NULL && *ss >= 0 ? *ss : rs != NULL && *rs >= 0 ? *rs : -1;
        if (tb < 0) {
            st = tb_new(xr, -1, -1, c, &tb, err);
            if (st != CCS_OK)
                goto cleanup;
        }
        if (ss != NULL)
            *ss = tb;
        if (rs != NULL)
            *rs = tb;
        if (sp >= 0)
            xr->tbs[tb].send = sp;
        if (rp >= 0)
            xr->tbs[tb].recv = rp;
        w->plan[i].tb = tb;
        uint32_t lane = w->plan[i].lane % w->nlanes;
        if (sp >= 0)
            chain(xr, &w->chain_send[(uint32_t)sp * MSCCL_MAX_CHANNELS + lane],
                  tb, 0);
        if (rp >= 0)
            chain(xr, &w->chain_recv[(uint32_t)rp * MSCCL_MAX_CHANNELS + lane],
                  tb, 1);
    }

    /* 4. steps and dependencies, in IR step order, sends first */
    if ((size_t)xr->ntbs * xr->ntbs > w->knowncap) {
        int32_t *p = realloc(w->known, (size_t)xr->ntbs * xr->ntbs *
                                           sizeof(*p));
        int32_t *d = realloc(w->depmax, (size_t)xr->ntbs * sizeof(*d));
        int32_t *pk = realloc(w->prevk, (size_t)xr->ntbs * sizeof(*pk));
        int32_t *ck = realloc(w->curk, (size_t)xr->ntbs * sizeof(*ck));
        if (p != NULL)
            w->known = p;
        if (d != NULL)
            w->depmax = d;
        if (pk != NULL)
            w->prevk = pk;
        if (ck != NULL)
            w->curk = ck;
        if (p == NULL || d == NULL || pk == NULL || ck == NULL) {
            st = ccs_err_set(err, CCS_ERR_NOMEM,
                             "msccl export: out of memory");
            goto cleanup;
        }
        w->knowncap = xr->ntbs * xr->ntbs;
    }
    for (size_t k = 0; k < (size_t)xr->ntbs * xr->ntbs; k++)
        w->known[k] = -1;
    for (uint32_t x = 0; x < xr->ntbs; x++)
        w->prevk[x] = w->curk[x] = -1;
    for (uint32_t l = 0; l < w->nloc; l++) {
        w->writer[l] = -1;
        w->nreaders[l] = 0;
    }
    {
        uint32_t no = 0;
        for (uint32_t a = 0; a < n;) {
            uint32_t b = a;
            while (b < n && ops[b].step == ops[a].step)
                b++;
            for (uint32_t i = a; i < b; i++)
                if (ops[i].kind == CCS_OP_SEND)
                    w->order[no++] = i;
            for (uint32_t i = a; i < b; i++)
                if (ops[i].kind != CCS_OP_SEND)
                    w->order[no++] = i;
            a = b;
        }
    }
    for (uint32_t oi = 0; oi < n; oi++) {
        uint32_t i = w->order[oi];
        const ccs_op_t *o = &ops[i];
        /* A new IR step: what ran in the previous one is waited for. */
        if (oi > 0 && ops[w->order[oi - 1]].step != o->step)
            for (uint32_t x = 0; x < xr->ntbs; x++) {
                if (w->curk[x] >= 0)
                    w->prevk[x] = w->curk[x];
                else
                    w->prevk[x] = -1;
                w->curk[x] = -1;
            }
        range_t rd[2] = { { 0, 0, 0 }, { 0, 0, 0 } }, wr[1] = { { 0, 0, 0 } };
        int nrd = 0, nwr = 0;
        msccl_type_t type;
        uint8_t sb = 0, db = 0;
        int32_t so = -1, dof = -1;

        if (w->plan[i].tb < 0)
            continue;
        switch (o->kind) {
        case CCS_OP_SEND:
            type = MSCCL_T_SEND;
            map_buf(s, rank, o->buf, o->chunk, &sb, &so);
            db = sb;
            dof = so;
            rd[nrd++] = (range_t){ o->buf, o->chunk, o->nchunks };
            break;
        case CCS_OP_RECV:
            type = w->plan[i].fused >= 0 ? MSCCL_T_RCS : MSCCL_T_RECV;
            map_buf(s, rank, o->buf, o->chunk, &db, &dof);
            sb = db;
            so = dof;
            wr[nwr++] = (range_t){ o->buf, o->chunk, o->nchunks };
            break;
        case CCS_OP_RECV_REDUCE:
            map_buf(s, rank, o->src_buf, o->src_chunk, &sb, &so);
            map_buf(s, rank, o->buf, o->chunk, &db, &dof);
            rd[nrd++] = (range_t){ o->src_buf, o->src_chunk, o->nchunks };
            if (w->plan[i].fused >= 0 &&
                !read_later(w, rank, i, (uint32_t)w->plan[i].fused)) {
                type = MSCCL_T_RRS;
                db = sb;
                dof = so;
            } else {
                type = w->plan[i].fused >= 0 ? MSCCL_T_RRCS : MSCCL_T_RRC;
                wr[nwr++] = (range_t){ o->buf, o->chunk, o->nchunks };
            }
            break;
        case CCS_OP_COPY:
            type = MSCCL_T_CPY;
            map_buf(s, rank, o->src_buf, o->src_chunk, &sb, &so);
            map_buf(s, rank, o->buf, o->chunk, &db, &dof);
            rd[nrd++] = (range_t){ o->src_buf, o->src_chunk, o->nchunks };
            wr[nwr++] = (range_t){ o->buf, o->chunk, o->nchunks };
            break;
        default: /* CCS_OP_REDUCE_LOCAL */
            type = MSCCL_T_RE;
            map_buf(s, rank, o->src_buf, o->src_chunk, &sb, &so);
            map_buf(s, rank, o->buf, o->chunk, &db, &dof);
            rd[nrd++] = (range_t){ o->src_buf, o->src_chunk, o->nchunks };
            rd[nrd++] = (range_t){ o->buf, o->chunk, o->nchunks };
            wr[nwr++] = (range_t){ o->buf, o->chunk, o->nchunks };
            break;
        }
        if (type == MSCCL_T_RCS || type == MSCCL_T_RRCS ||
            type == MSCCL_T_RRS)
            info->nfused++;
        /* cnt stays below the executor's MSCCL_MAX_COUNT: longer ops
         * become several steps; the peer splits its side the same way. */
        uint32_t npieces = (o->nchunks + MSCCL_MAX_COUNT - 2) /
                           (MSCCL_MAX_COUNT - 1);
        xstep_t *steps = calloc(npieces, sizeof(*steps));
        if (steps == NULL) {
            st = ccs_err_set(err, CCS_ERR_NOMEM,
                             "msccl export: out of memory");
            goto cleanup;
        }
        for (uint32_t p = 0; p < npieces; p++) {
            uint32_t at = p * (MSCCL_MAX_COUNT - 1);
            uint32_t cnt = o->nchunks - at < MSCCL_MAX_COUNT - 1
                               ? o->nchunks - at : MSCCL_MAX_COUNT - 1;
            steps[p] = (xstep_t){ (uint8_t)type, sb, db, 0,
                                  so + (int32_t)at, dof + (int32_t)at,
                                  (int32_t)cnt, -1, -1 };
        }
        st = place(w, xr, (uint32_t)w->plan[i].tb, rd, nrd, wr, nwr, steps,
                   npieces, info, err);
        free(steps);
        if (st != CCS_OK)
            goto cleanup;
    }

cleanup:
    free(cand);
    return st;
}
