/*
 * msccl_export.c - schedule IR -> MSCCL algorithm XML.
 *
 * The IR is lock-step (every op of step t reads the state as it was when t
 * began); an MSCCL program is a set of thread blocks per GPU, each running
 * its steps in order, ordered between each other only by dependencies.  The
 * translation, per rank:
 *
 *  1. Channels.  The schedule is cut into `nblk` consecutive time blocks
 *     (so no thread block gets more steps than the executor runs); within
 *     block b peers fall into npg[b] groups by (rank + peer) % npg[b] (so no
 *     channel has more than 32 send or 32 receive thread blocks); the k-th
 *     message of a step between the same two ranks takes lane k (so the
 *     executor runs them in parallel, as the step does).  channel =
 *     (base[b] + group) * lanes + lane.  Both ends of a transfer compute
 *     the same channel.  Blocks run one after the other in time.
 *  2. Fusion.  A receive whose chunks are sent on unchanged by the rank's
 *     next send to some peer q (same chunks, same channel, no write to them
 *     in between) becomes one rcs (RECV), rrcs (RECV_REDUCE) or rrs
 *     (RECV_REDUCE into scratch nobody reads afterwards) step; the send
 *     then happens as soon as the data is there, which keeps q's FIFO order
 *     because no other send to q lies between the two.  Receive peer p is
 *     paired with the send peer q it forwards to most.
 *  3. Thread blocks: one per (send peer, receive peer, channel) after
 *     pairing, one per channel for local ops; steps in IR step order, sends
 *     of a step before its receives.
 *  4. Dependencies: a step waits for the last writer of every chunk it
 *     reads or writes and for the readers of every chunk it overwrites, in
 *     other thread blocks (in-place: input and output chunk g are one
 *     location).  One dependency per step; more go on nop steps in front.
 *
 * Sends are assumed not to block (the executor sizes chunks to its FIFO),
 * as MSCCL's own generator assumes; a receive blocks until its data is in.
 * Every wait points to an earlier IR step or to an earlier send of the
 * same step, so the program cannot deadlock if the IR schedule is valid.
 *
 * Cost: O(ops * chunks per op) per attempt, at most 32 attempts.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "msccl.h"
#include "msccl_int.h"

/* ---- shared names and the text buffer ---- */

static const char *const type_names[MSCCL_T_COUNT] = {
    "s", "r", "rcs", "rrs", "rrc", "rrcs", "cpy", "re", "nop",
};

const char *msccl_type_str(msccl_type_t t)
{
    return (unsigned)t < MSCCL_T_COUNT ? type_names[t] : "?";
}

msccl_type_t msccl_type_parse(const char *s)
{
    for (int t = 0; t < MSCCL_T_COUNT; t++)
        if (strcmp(s, type_names[t]) == 0)
            return (msccl_type_t)t;
    return MSCCL_T_COUNT;
}

int msccl_type_sends(msccl_type_t t)
{
    return t == MSCCL_T_SEND || t == MSCCL_T_RCS || t == MSCCL_T_RRS ||
           t == MSCCL_T_RRCS;
}

int msccl_type_recvs(msccl_type_t t)
{
    return t == MSCCL_T_RECV || t == MSCCL_T_RCS || t == MSCCL_T_RRS ||
           t == MSCCL_T_RRC || t == MSCCL_T_RRCS;
}

static const char *const proto_names[MSCCL_PROTO_COUNT] = {
    "Simple", "LL", "LL128",
};

const char *msccl_proto_str(msccl_proto_t p)
{
    return (unsigned)p < MSCCL_PROTO_COUNT ? proto_names[p] : "?";
}

ccs_status_t msccl_proto_parse(const char *name, msccl_proto_t *out)
{
    for (int p = 0; p < MSCCL_PROTO_COUNT; p++)
        if (strcmp(name, proto_names[p]) == 0) {
            *out = (msccl_proto_t)p;
            return CCS_OK;
        }
    return CCS_ERR_INVALID;
}

void msccl_sb_printf(msccl_sb_t *b, const char *fmt, ...)
{
    va_list ap;
    int n;

    if (b->failed)
        return;
    for (;;) {
        size_t room = b->cap - b->len;
        va_start(ap, fmt);
        n = vsnprintf(b->data ? b->data + b->len : NULL, room, fmt, ap);
        va_end(ap);
        if (n < 0) {
            b->failed = 1;
            return;
        }
        if ((size_t)n < room) {
            b->len += (size_t)n;
            return;
        }
        size_t cap = b->cap ? b->cap * 2 : 4096;
        while (cap - b->len <= (size_t)n)
            cap *= 2;
        char *p = realloc(b->data, cap);
        if (p == NULL) {
            b->failed = 1;
            return;
        }
        b->data = p;
        b->cap = cap;
    }
}

void msccl_sb_free(msccl_sb_t *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

void msccl_export_opts_init(msccl_export_opts_t *o)
{
    memset(o, 0, sizeof(*o));
    o->proto = MSCCL_PROTO_SIMPLE;
    o->inplace = -1;
    o->outofplace = 1;
    o->max_tb_steps = MSCCL_MAX_TB_STEPS;
    o->order_steps = 1;
}

/* ---- one rank's program ---- */

typedef struct xstep {
    uint8_t type;           /* msccl_type_t */
    uint8_t srcbuf, dstbuf; /* MSCCL_BUF_* */
    uint8_t hasdep;
    int32_t srcoff, dstoff; /* -1 for nop */
    int32_t cnt;
    int32_t depid, deps;
} xstep_t;

typedef struct xtb {
    int32_t send, recv;     /* peers, -1 none */
    uint32_t chan;
    xstep_t *steps;         /* owned */
    uint32_t nsteps, cap;
} xtb_t;

typedef struct xrank {
    xtb_t *tbs;             /* owned */
    uint32_t ntbs;
} xrank_t;

/* Per-op plan of a rank, filled before the dependency pass. */
typedef struct opplan {
    uint32_t lane;          /* index among the rank's ops of its step with
                               the same peer and direction */
    int32_t tb;             /* thread block; -1: folded into a fused step */
    int32_t fused;          /* index of the send it forwards to, or -1 */
    uint8_t type;           /* msccl_type_t of the step it becomes */
} opplan_t;

/* Scratch shared by every rank of one attempt (sized for the largest). */
typedef struct work {
    const ccs_sched_t *s;
    uint32_t nblk, nlanes, nch, max_tb_steps;
    uint32_t blk_npg[MSCCL_MAX_CHANNELS];  /* peer groups of a time block */
    uint32_t blk_base[MSCCL_MAX_CHANNELS]; /* its first group's index */
    bool step_order;        /* also keep each rank's step order */
    int32_t *prevk;         /* [ntb] last step of a tb in the rank's
                               previous IR step, -1 */
    int32_t *curk;          /* [ntb] same for the current IR step */
    bool alias;             /* in-place: IN g and OUT g are one location */
    opplan_t *plan;         /* [max ops per rank] */
    uint32_t *order;        /* [max ops per rank] processing order */
    int32_t *send_tb;       /* [nch * nranks] tb of (chan, send peer) */
    int32_t *recv_tb;       /* [nch * nranks] tb of (chan, recv peer) */
    int32_t *local_tb;      /* [nch] */
    int32_t *pair_send;     /* [nranks] send peer paired with recv peer */
    int32_t *pair_recv;     /* [nranks] recv peer paired with send peer */
    uint32_t *cand;         /* fusion candidates (p, q): sparse list */
    uint32_t ncand, candcap;
    /* hazard state per location (buf, chunk) of the rank */
    int64_t *writer;        /* [nloc] (tb << 32 | step) or -1 */
    uint32_t **readers;     /* [nloc] arrays of (tb << 16 ... ) packed */
    uint32_t *nreaders, *capreaders;
    int32_t *known;         /* [ntb * ntb] step of tb x that tb t waited
                               for, -1 none */
    uint32_t knowncap;
    int32_t *depmax;        /* [ntb] deps of the step being placed */
    uint32_t nloc;
} work_t;

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

static void xrank_free(xrank_t *xr)
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

static ccs_status_t build_rank(work_t *w, uint32_t rank, xrank_t *xr,
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
    /* 2. fuse where the pairing allows */
    for (uint32_t i = 0; i < n; i++) {
        if (!op_is_recv(&ops[i]) || w->plan[i].tb == -1)
            continue;
        int32_t j = find_forward(w, rank, i);
        if (j < 0 || w->pair_send[ops[i].peer] != ops[j].peer ||
            w->plan[j].fused >= 0)
            continue;
        w->plan[i].fused = j;
        w->plan[j].tb = -1;
    }

    /* 3. thread blocks */
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

/* In-place is right when no input chunk is read after its output chunk
 * (the same memory then) was first written, except by the op writing it
 * (rrc with src = dst) or by a send of that same step (sends go first). */
static bool inplace_safe(const ccs_sched_t *s, char *why, size_t len)
{
    uint32_t C = s->nchunks;
    uint32_t *first = malloc((size_t)C * sizeof(*first));
    bool ok = true;

    if (first == NULL)
        return false;
    for (uint32_t r = 0; r < s->nranks && ok; r++) {
        const ccs_op_t *ops = s->rank_ops[r];
        for (uint32_t c = 0; c < C; c++)
            first[c] = UINT32_MAX;
        for (uint32_t i = 0; i < s->rank_nops[r]; i++) {
            const ccs_op_t *o = &ops[i];
            if (o->kind != CCS_OP_SEND && o->buf == CCS_BUF_OUT)
                for (uint32_t c = 0; c < o->nchunks; c++)
                    if (first[o->chunk + c] == UINT32_MAX)
                        first[o->chunk + c] = o->step;
        }
        for (uint32_t i = 0; i < s->rank_nops[r] && ok; i++) {
            const ccs_op_t *o = &ops[i];
            uint32_t c0 = 0;
            bool rd_in = false;
            if (o->kind == CCS_OP_SEND && o->buf == CCS_BUF_IN) {
                c0 = o->chunk;
                rd_in = true;
            } else if (o->kind != CCS_OP_SEND && o->kind != CCS_OP_RECV &&
                       o->src_buf == CCS_BUF_IN) {
                c0 = o->src_chunk;
                rd_in = true;
            }
            if (!rd_in)
                continue;
            for (uint32_t c = 0; c < o->nchunks && ok; c++) {
                uint32_t f = first[c0 + c];
                bool self = o->kind != CCS_OP_SEND &&
                            o->buf == CCS_BUF_OUT && o->chunk == c0;
                if (f == UINT32_MAX || o->step < f ||
                    (o->step == f && (o->kind == CCS_OP_SEND || self)))
                    continue;
                snprintf(why, len, "rank %u reads input chunk %u in step %u "
                         "after writing output chunk %u in step %u", r,
                         c0 + c, o->step, c0 + c, f);
                ok = false;
            }
        }
    }
    free(first);
    return ok;
}

static void write_xml(msccl_sb_t *b, const ccs_sched_t *s,
                      const msccl_export_opts_t *o, const char *name,
                      const xrank_t *xr, uint32_t nch, bool inplace)
{
    static const char bufc[] = { 'i', 'o', 's' };
    uint32_t B = ccs_coll_block(s->coll, s->nranks, s->nchunks);
    uint32_t ich = s->coll == CCS_COLL_ALLGATHER ? B : s->nchunks;
    uint32_t och = s->coll == CCS_COLL_REDUCESCATTER ? B : s->nchunks;

    msccl_sb_printf(b, "<algo name=\"%s\" proto=\"%s\" nchannels=\"%u\" "
                    "nchunksperloop=\"%u\" ngpus=\"%u\" coll=\"%s\" "
                    "inplace=\"%d\" outofplace=\"%d\" minBytes=\"%" PRIu64
                    "\" maxBytes=\"%" PRIu64 "\"",
                    name, msccl_proto_str(o->proto), nch, s->nchunks,
                    s->nranks, ccs_coll_str(s->coll), inplace ? 1 : 0,
                    o->outofplace, o->min_bytes, o->max_bytes);
    /* The executor ignores attributes it does not look up: the root keeps
     * a rooted schedule importable as what it is. */
    if (ccs_coll_rooted(s->coll))
        msccl_sb_printf(b, " root=\"%d\"", s->root);
    msccl_sb_printf(b, ">\n");
    for (uint32_t r = 0; r < s->nranks; r++) {
        msccl_sb_printf(b, "  <gpu id=\"%u\" i_chunks=\"%u\" o_chunks=\"%u\" "
                        "s_chunks=\"%u\">\n", r, ich, och, s->nscratch);
        for (uint32_t t = 0; t < xr[r].ntbs; t++) {
            const xtb_t *tb = &xr[r].tbs[t];
            msccl_sb_printf(b, "    <tb id=\"%u\" send=\"%d\" recv=\"%d\" "
                            "chan=\"%u\">\n", t, tb->send, tb->recv,
                            tb->chan);
            for (uint32_t k = 0; k < tb->nsteps; k++) {
                const xstep_t *x = &tb->steps[k];
                msccl_sb_printf(b, "      <step s=\"%u\" type=\"%s\" "
                                "srcbuf=\"%c\" srcoff=\"%d\" dstbuf=\"%c\" "
                                "dstoff=\"%d\" cnt=\"%d\" depid=\"%d\" "
                                "deps=\"%d\" hasdep=\"%u\"/>\n", k,
                                msccl_type_str((msccl_type_t)x->type),
                                bufc[x->srcbuf], x->srcoff, bufc[x->dstbuf],
                                x->dstoff, x->cnt, x->depid, x->deps,
                                x->hasdep);
            }
            msccl_sb_printf(b, "    </tb>\n");
        }
        msccl_sb_printf(b, "  </gpu>\n");
    }
    msccl_sb_printf(b, "</algo>\n");
}

/* Check one attempt against the limits; CCS_OK or a message. */
static ccs_status_t check_limits(const work_t *w, const xrank_t *xr,
                                 uint32_t rank, msccl_export_info_t *info,
                                 char *why, size_t len)
{
    uint32_t nsend[MSCCL_MAX_CHANNELS] = { 0 }, nrecv[MSCCL_MAX_CHANNELS] = {
        0 };
    uint32_t elems = 1 + xr->ntbs;

    for (uint32_t t = 0; t < xr->ntbs; t++) {
        const xtb_t *tb = &xr->tbs[t];
        elems += tb->nsteps;
        if (tb->nsteps > info->max_tb_steps)
            info->max_tb_steps = tb->nsteps;
        if (tb->nsteps > w->max_tb_steps) {
            snprintf(why, len, "rank %u thread block %u (send %d, recv %d, "
                     "channel %u) needs %u steps, more than the %u steps "
                     "per thread block the executor runs", rank, t,
                     tb->send, tb->recv, tb->chan, tb->nsteps,
                     w->max_tb_steps);
            return CCS_ERR_UNSUPPORTED;
        }
        if (tb->send >= 0 && ++nsend[tb->chan] > MSCCL_MAX_TB_PER_CHANNEL) {
            snprintf(why, len, "rank %u has more than %u sending thread "
                     "blocks on channel %u", rank, MSCCL_MAX_TB_PER_CHANNEL,
                     tb->chan);
            return CCS_ERR_UNSUPPORTED;
        }
        if (tb->recv >= 0 && ++nrecv[tb->chan] > MSCCL_MAX_TB_PER_CHANNEL) {
            snprintf(why, len, "rank %u has more than %u receiving thread "
                     "blocks on channel %u", rank, MSCCL_MAX_TB_PER_CHANNEL,
                     tb->chan);
            return CCS_ERR_UNSUPPORTED;
        }
    }
    if (xr->ntbs > info->max_tbs_per_rank)
        info->max_tbs_per_rank = xr->ntbs;
    if (elems > info->max_elems_per_rank)
        info->max_elems_per_rank = elems;
    if (elems > MSCCL_MAX_ELEMS_PER_RANK) {
        snprintf(why, len, "rank %u needs %u XML elements, more than the "
                 "%u the executor reads per GPU", rank, elems,
                 MSCCL_MAX_ELEMS_PER_RANK);
        return CCS_ERR_UNSUPPORTED;
    }
    return CCS_OK;
}

static void work_free(work_t *w)
{
    free(w->plan);
    free(w->order);
    free(w->send_tb);
    free(w->recv_tb);
    free(w->local_tb);
    free(w->pair_send);
    free(w->pair_recv);
    free(w->writer);
    if (w->readers != NULL)
        for (uint32_t l = 0; l < w->nloc; l++)
            free(w->readers[l]);
    free(w->readers);
    free(w->nreaders);
    free(w->capreaders);
    free(w->known);
    free(w->depmax);
    free(w->prevk);
    free(w->curk);
}

/* The most ops one rank has in one step with one peer in one direction:
 * that many lanes (channels) let them run in parallel. */
static uint32_t max_lanes(const ccs_sched_t *s)
{
    uint32_t best = 1;
    for (uint32_t r = 0; r < s->nranks; r++) {
        const ccs_op_t *ops = s->rank_ops[r];
        uint32_t n = s->rank_nops[r];
        for (uint32_t i = 0; i < n; i++) {
            uint32_t k = 1;
            if (ops[i].peer < 0)
                continue;
            for (uint32_t j = i; j-- > 0 && ops[j].step == ops[i].step;)
                if (ops[j].peer == ops[i].peer &&
                    (ops[j].kind == CCS_OP_SEND) ==
                        (ops[i].kind == CCS_OP_SEND))
                    k++;
            if (k > best)
                best = k;
        }
    }
    return best;
}

/* The smallest number of peer groups that keeps every rank's distinct
 * send (and receive) peers of a group within MSCCL_MAX_TB_PER_CHANNEL,
 * counting only the ops of time block b of nblk. */
static uint32_t peer_groups(const ccs_sched_t *s, uint8_t *seen,
                            uint32_t nblk, uint32_t b)
{
    uint32_t R = s->nranks, ns = s->nsteps ? s->nsteps : 1;
    for (uint32_t npg = 1; npg < MSCCL_MAX_CHANNELS; npg++) {
        bool ok = true;
        for (uint32_t r = 0; r < R && ok; r++) {
            uint32_t cnt[2][MSCCL_MAX_CHANNELS] = { { 0 } };
            memset(seen, 0, 2 * (size_t)R);
            for (uint32_t i = 0; i < s->rank_nops[r]; i++) {
                const ccs_op_t *o = &s->rank_ops[r][i];
                if (o->peer < 0 ||
                    (uint64_t)o->step * nblk / ns != b)
                    continue;
                int d = o->kind == CCS_OP_SEND ? 0 : 1;
                uint8_t *sn = &seen[(size_t)d * R + (uint32_t)o->peer];
                if (*sn)
                    continue;
                *sn = 1;
                if (++cnt[d][(r + (uint32_t)o->peer) % npg] >
                    MSCCL_MAX_TB_PER_CHANNEL)
                    ok = false;
            }
        }
        if (ok)
            return npg;
    }
    return MSCCL_MAX_CHANNELS;
}

ccs_status_t msccl_export(const ccs_sched_t *s, const msccl_export_opts_t *opt,
                          char **xml, size_t *len, msccl_export_info_t *info,
                          ccs_err_t *err)
{
    msccl_export_opts_t defo;
    msccl_export_info_t inf;
    work_t w;
    xrank_t *xr = NULL;     /* owned: [nranks] */
    uint8_t *seen = NULL;   /* owned */
    msccl_sb_t b = { NULL, 0, 0, 0 };
    char name[MSCCL_MAX_STR + 1], why[256] = "";
    uint32_t maxops = 0;
    bool inplace;
    ccs_status_t st;

    memset(&w, 0, sizeof(w));
    if (opt == NULL) {
        msccl_export_opts_init(&defo);
        opt = &defo;
    }
    st = ccs_sched_validate(s, err);
    if (st != CCS_OK)
        return st;
    if (opt->outofplace != 0 && opt->outofplace != 1)
        return ccs_err_set(err, CCS_ERR_INVALID,
                           "msccl export: outofplace must be 0 or 1");
    if (opt->max_bytes != 0 && opt->max_bytes < opt->min_bytes)
        return ccs_err_set(err, CCS_ERR_INVALID,
                           "msccl export: maxBytes %" PRIu64 " is below "
                           "minBytes %" PRIu64, opt->max_bytes,
                           opt->min_bytes);
    if (opt->name != NULL)
        snprintf(name, sizeof(name), "%s", opt->name);
    else
        snprintf(name, sizeof(name), "ccsynth_%s_%s_%u",
                 s->algo[0] ? s->algo : "sched", ccs_coll_str(s->coll),
                 s->nranks);
    for (char *p = name; *p; p++)
        if (*p == '"' || *p == '<' || *p == '&' || *p == '>' ||
            (unsigned char)*p < 0x20)
            return ccs_err_set(err, CCS_ERR_INVALID,
                               "msccl export: name '%s' has a character "
                               "XML would need escaped ('%c')", name, *p);
    inplace = false;
    if (opt->inplace != 0) {
        bool safe = inplace_safe(s, why, sizeof(why));
        if (opt->inplace == 1 && !safe)
            return ccs_err_set(err, CCS_ERR_UNSUPPORTED,
                               "msccl export: inplace=1 asked, but the "
                               "schedule is wrong with input and output "
                               "aliased: %s; export out-of-place only "
                               "(--inplace 0)", why);
        inplace = safe;
    }
    if (!inplace && opt->outofplace == 0)
        return ccs_err_set(err, CCS_ERR_INVALID,
                           "msccl export: neither in-place nor out-of-place: "
                           "the executor would never use it");

    for (uint32_t r = 0; r < s->nranks; r++)
        if (s->rank_nops[r] > maxops)
            maxops = s->rank_nops[r];
    w.s = s;
    w.alias = inplace;
    w.max_tb_steps = opt->max_tb_steps ? opt->max_tb_steps
                                       : MSCCL_MAX_TB_STEPS;
    w.nloc = 2 * s->nchunks + s->nscratch;
    w.plan = calloc(maxops + 1, sizeof(*w.plan));
    w.order = calloc(maxops + 1, sizeof(*w.order));
    w.pair_send = calloc(s->nranks, sizeof(*w.pair_send));
    w.pair_recv = calloc(s->nranks, sizeof(*w.pair_recv));
    w.writer = calloc(w.nloc, sizeof(*w.writer));
    w.readers = calloc(w.nloc, sizeof(*w.readers));
    w.nreaders = calloc(w.nloc, sizeof(*w.nreaders));
    w.capreaders = calloc(w.nloc, sizeof(*w.capreaders));
    w.local_tb = calloc(MSCCL_MAX_CHANNELS, sizeof(*w.local_tb));
    xr = calloc(s->nranks, sizeof(*xr));
    seen = calloc(2 * (size_t)s->nranks, 1);
    if (w.plan == NULL || w.order == NULL || w.pair_send == NULL ||
        w.pair_recv == NULL || w.writer == NULL || w.readers == NULL ||
        w.nreaders == NULL || w.capreaders == NULL || w.local_tb == NULL ||
        xr == NULL || seen == NULL) {
        st = ccs_err_set(err, CCS_ERR_NOMEM, "msccl export: out of memory");
        goto cleanup;
    }
    w.send_tb = calloc((size_t)MSCCL_MAX_CHANNELS * s->nranks,
                       sizeof(*w.send_tb));
    w.recv_tb = calloc((size_t)MSCCL_MAX_CHANNELS * s->nranks,
                       sizeof(*w.recv_tb));
    if (w.send_tb == NULL || w.recv_tb == NULL) {
        st = ccs_err_set(err, CCS_ERR_NOMEM, "msccl export: out of memory");
        goto cleanup;
    }
    uint32_t want = opt->min_channels > 1 ? opt->min_channels : 1;
    uint32_t maxlanes = max_lanes(s);
    st = CCS_ERR_UNSUPPORTED;
    snprintf(why, sizeof(why), "%u channels asked", want);
    /* Keep the schedule's per-rank step order if the limits allow it,
     * else only the data dependencies (what the GPU needs). */
    for (int pass = opt->order_steps ? 0 : 1; pass < 2; pass++) {
        w.step_order = pass == 0;
        for (uint32_t nblk = want; nblk <= MSCCL_MAX_CHANNELS; nblk++) {
            uint32_t groups = 0;
            for (uint32_t bk = 0; bk < nblk && groups <= MSCCL_MAX_CHANNELS;
                 bk++) {
                w.blk_base[bk] = groups;
                w.blk_npg[bk] = peer_groups(s, seen, nblk, bk);
                groups += w.blk_npg[bk];
            }
            if (groups > MSCCL_MAX_CHANNELS) {
                snprintf(why, sizeof(why), "cut into %u time blocks the "
                         "schedule needs %u channels to keep at most %u "
                         "peers per channel", nblk, groups,
                         MSCCL_MAX_TB_PER_CHANNEL);
                continue;
            }
            w.nblk = nblk;
            w.nlanes = MSCCL_MAX_CHANNELS / groups;
            if (w.nlanes > maxlanes)
                w.nlanes = maxlanes;
            w.nch = groups * w.nlanes;
            memset(&inf, 0, sizeof(inf));
            for (uint32_t r = 0; r < s->nranks; r++)
                xrank_free(&xr[r]);
            st = CCS_OK;
            for (uint32_t r = 0; r < s->nranks && st == CCS_OK; r++) {
                st = build_rank(&w, r, &xr[r], &inf, err);
                if (st == CCS_OK)
                    st = check_limits(&w, &xr[r], r, &inf, why,
                                      sizeof(why));
            }
            if (st != CCS_ERR_UNSUPPORTED)
                break;
        }
        if (st != CCS_ERR_UNSUPPORTED)
            break;
    }
    inf.step_order = w.step_order;
    if (st == CCS_ERR_UNSUPPORTED) {
        bool steps = strstr(why, "steps per thread block") != NULL;
        st = ccs_err_set(err, CCS_ERR_UNSUPPORTED,
                         "msccl export: %s, even spread over %u channels "
                         "(the executor's most); way out: fewer chunks "
                         "(synthesize with a smaller --pipeline or "
                         "--chunks)%s", why, MSCCL_MAX_CHANNELS,
                         steps ? ", or --max-steps 256 for MSCCL runtimes "
                                 "built with MSCCL_MAX_NUM_STEPS 256 (RCCL, "
                                 "the older microsoft/msccl)" : "");
        goto cleanup;
    }
    if (st != CCS_OK)
        goto cleanup;
    /* nchannels is 1 + the largest channel used. */
    uint32_t nch = 1;
    for (uint32_t r = 0; r < s->nranks; r++)
        for (uint32_t t = 0; t < xr[r].ntbs; t++)
            if (xr[r].tbs[t].chan + 1 > nch)
                nch = xr[r].tbs[t].chan + 1;
    for (uint32_t r = 0; r < s->nranks; r++)
        for (uint32_t t = 0; t < xr[r].ntbs; t++)
            inf.nsteps += xr[r].tbs[t].nsteps;
    inf.nchannels = nch;
    inf.inplace = inplace;
    inf.outofplace = opt->outofplace == 1;
    write_xml(&b, s, opt, name, xr, nch, inplace);
    if (b.failed) {
        st = ccs_err_set(err, CCS_ERR_NOMEM, "msccl export: out of memory");
        goto cleanup;
    }
    *xml = b.data;  /* ownership moves to the caller */
    *len = b.len;
    b.data = NULL;
    if (info != NULL)
        *info = inf;

cleanup:
    msccl_sb_free(&b);
    if (xr != NULL)
        for (uint32_t r = 0; r < s->nranks; r++)
            xrank_free(&xr[r]);
    free(xr);
    free(seen);
    work_free(&w);
    return st;
}

ccs_status_t msccl_export_file(const ccs_sched_t *s,
                               const msccl_export_opts_t *o, const char *path,
                               msccl_export_info_t *info, ccs_err_t *err)
{
    char *xml = NULL;   /* owned */
    char *tmp = NULL;   /* owned */
    size_t len = 0;
    FILE *f = NULL;
    ccs_status_t st = msccl_export(s, o, &xml, &len, info, err);

    if (st != CCS_OK)
        return st;
    size_t tl = strlen(path) + 32;
    tmp = malloc(tl);
    if (tmp == NULL) {
        st = ccs_err_set(err, CCS_ERR_NOMEM, "msccl export: out of memory");
        goto cleanup;
    }
    snprintf(tmp, tl, "%s.tmp.%ld", path, (long)getpid());
    f = fopen(tmp, "wb");
    if (f == NULL) {
        st = ccs_err_set(err, CCS_ERR_IO, "%s: cannot create: %s", tmp,
                         strerror(errno));
        goto cleanup;
    }
    if (fwrite(xml, 1, len, f) != len || fflush(f) != 0) {
        st = ccs_err_set(err, CCS_ERR_IO, "%s: write failed: %s", tmp,
                         strerror(errno));
        goto cleanup;
    }
    if (fclose(f) != 0) {
        f = NULL;
        st = ccs_err_set(err, CCS_ERR_IO, "%s: write failed: %s", tmp,
                         strerror(errno));
        goto cleanup;
    }
    f = NULL;
    if (rename(tmp, path) != 0) {
        st = ccs_err_set(err, CCS_ERR_IO, "%s: cannot rename to %s: %s", tmp,
                         path, strerror(errno));
        goto cleanup;
    }
    free(tmp);
    tmp = NULL;

cleanup:
    if (f != NULL)
        fclose(f);
    if (tmp != NULL)
        remove(tmp);
    free(tmp);
    free(xml);
    return st;
}

ccs_status_t msccl_write_algo_dir(const char *dir,
                                  const msccl_dir_entry_t *entries, size_t n,
                                  const msccl_export_opts_t *base,
                                  ccs_err_t *err)
{
    msccl_export_opts_t o;
    char path[4096], name[MSCCL_MAX_STR + 1];
    ccs_status_t st;

    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
        return ccs_err_set(err, CCS_ERR_IO, "%s: cannot create directory: %s",
                           dir, strerror(errno));
    for (size_t i = 0; i < n; i++) {
        const ccs_sched_t *s = entries[i].sched;
        if (base != NULL)
            o = *base;
        else
            msccl_export_opts_init(&o);
        o.min_bytes = entries[i].min_bytes;
        o.max_bytes = entries[i].max_bytes;
        snprintf(name, sizeof(name), "ccsynth_%02zu_%s_%s_%u", i,
                 s->algo[0] ? s->algo : "sched", ccs_coll_str(s->coll),
                 s->nranks);
        o.name = name;
        snprintf(path, sizeof(path), "%s/%02zu-%s-%s-%u.xml", dir, i,
                 s->algo[0] ? s->algo : "sched", ccs_coll_str(s->coll),
                 s->nranks);
        st = msccl_export_file(s, &o, path, NULL, err);
        if (st != CCS_OK) {
            ccs_err_prefix(err, "plan %zu (%" PRIu64 "..%" PRIu64 " bytes): ",
                           i, entries[i].min_bytes, entries[i].max_bytes);
            return st;
        }
    }
    return CCS_OK;
}
