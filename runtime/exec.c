/*
 * exec.c - the executor: replays a plan on one rank through a transport.
 * One implementation for every transport (xport.h); it decides where each
 * chunk lives and in what order things happen, the transport moves bytes.
 *
 * Chunk mapping.  The user's count elements (per rank block for blocked
 * collectives) are cut into chunks of cs = ceil(count / B) elements, B
 * being the chunks per block (C for unblocked collectives, C / R for
 * reducescatter, allgather, alltoall).  Chunks j < jfull = count / cs lie
 * in the user's buffer; the rest of a block (the short chunk, if any, and
 * empty ones) lives in a small padded "tail" area of the arena, TB = B -
 * jfull chunks per block.  Every chunk is therefore cs elements long and
 * contiguous, every transfer of n chunks carries exactly n * cs elements
 * on both sides whatever buffers the two ends use, and no transfer is
 * empty.  Before the steps the user's short chunk is copied into its tail
 * (the padding zeroed); after them the short chunk of each output block is
 * copied back.  The cost is O(cs + C) per block, not O(count).
 *
 * An op range [c, c+n) that stays inside the user part (or inside the
 * tail) of one block is one contiguous span and goes to the transport as
 * is; other ranges are packed to / unpacked from the step's staging area.
 *
 * In place.  IN is never written, but with sendbuff aliasing recvbuff a
 * schedule may write OUT[c] before it reads IN[c]; plan.c finds such ranks
 * (inplace_hazard).  When the only conflicts are receives into OUT[c] in
 * the step that also sends IN[c], those receives land in staging and are
 * written after the step's wait; otherwise the input is copied to the
 * arena first (inplace_analysis below).  Any other overlap of the two
 * buffers is staged the same way.
 *
 * RECV_REDUCE goes to the transport's recv_reduce when it has one (the
 * threads transport reduces straight from the peer's buffer), else it is
 * received into staging and reduced after the wait.
 *
 * Straggler relabeling.  For a plan written with straggler s0 and a call
 * with straggler s, pi swaps s and s0: physical rank p runs the plan's rank
 * pi(p), every peer q of the plan is physical rank pi(q), and the plan's
 * block b is the user's block pi(b).  pi is its own inverse.
 *
 * Phases need nothing special: ranks synchronise only through their own
 * transfers, so ranks with phase-0 ops run them while a straggler (which
 * has none) is still away.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ccs_int.h"

typedef struct bufmap {
    uint8_t *user;       /* the user's buffer (or the staged input copy) */
    uint8_t *tail;       /* padded tail chunks, TB per block slot */
    bool all_blocks;     /* holds all R blocks (else exactly one) */
    bool used;           /* this rank has data here */
} bufmap_t;

typedef struct run {
    const ccs_plan_t *plan;
    const ccs_sched_t *s;
    const ccs_xport_ops_t *xo;
    ccs_xport_t *x;
    ccs_err_t *err;
    uint32_t p, L;       /* physical and logical (plan) rank */
    int64_t sw_a, sw_b;  /* pi swaps these (equal: identity) */
    ccs_dtype_t dtype;
    ccs_redop_t op;
    size_t es;           /* element bytes */
    size_t count;        /* elements per block */
    size_t cs;           /* elements per chunk */
    size_t cbytes;       /* bytes per chunk */
    uint32_t B, jfull, TB;
    size_t rem;          /* elements of chunk jfull in the user's block */
    bufmap_t in, out;
    uint8_t *scratch;
    uint8_t *stage;
    size_t stage_used;   /* bytes handed out in the current step */
    uint64_t bytes_sent;
    const uint8_t *force_stage; /* in place: [op] receives that must land
                                   after the step's sends (NULL: none) */
    bool alias;          /* issue window, in place: IN[c] is OUT[c] */
} run_t;

/* An operand of a local computation: a chunk range of a buffer, or raw
 * contiguous memory (the staging slot of a received message). */
typedef struct operand {
    unsigned buf;
    uint32_t chunk;
    uint8_t *raw;
} operand_t;

static uint32_t pi(const run_t *r, uint32_t q)
{
    return ccs_relabel_rank(r->sw_a, r->sw_b, q);
}

static uint8_t *chunk_ptr(const run_t *r, unsigned buf, uint32_t c)
{
    const bufmap_t *bm;
    uint32_t b, j;

    if (buf == CCS_BUF_SCRATCH)
        return r->scratch + (size_t)c * r->cbytes;
    bm = buf == CCS_BUF_IN ? &r->in : &r->out;
    b = c / r->B;
    j = c % r->B;
    if (j < r->jfull) {
        size_t off = (bm->all_blocks ? (size_t)pi(r, b) * r->count : 0) +
                     (size_t)j * r->cs;
        return bm->user + off * r->es;
    }
    return bm->tail + ((size_t)(bm->all_blocks ? b : 0) * r->TB +
                       (j - r->jfull)) * r->cbytes;
}

/* True (and *ptr) when chunks [c, c+n) of buf are one contiguous span. */
static bool contig(const run_t *r, unsigned buf, uint32_t c, uint32_t n,
                   uint8_t **ptr)
{
    uint32_t b0, b1, j0, j1;

    if (buf != CCS_BUF_SCRATCH) {
        b0 = c / r->B;
        b1 = (c + n - 1) / r->B;
        j0 = c % r->B;
        j1 = (c + n - 1) % r->B;
        if (b0 == b1) {
            if (!(j1 < r->jfull || j0 >= r->jfull))
                return false;
        } else {
            const bufmap_t *bm = buf == CCS_BUF_IN ? &r->in : &r->out;
            if (r->TB != 0 || !bm->all_blocks)
                return false;
            for (uint32_t b = b0; b < b1; b++)
                if (pi(r, b + 1) != pi(r, b) + 1)
                    return false;
        }
    }
    *ptr = chunk_ptr(r, buf, c);
    return true;
}

static uint8_t *operand_ptr(const run_t *r, const operand_t *o, uint32_t k)
{
    return o->raw ? o->raw + (size_t)k * r->cbytes
                  : chunk_ptr(r, o->buf, o->chunk + k);
}

static bool operand_contig(const run_t *r, const operand_t *o, uint32_t n,
                           uint8_t **ptr)
{
    if (o->raw) {
        *ptr = o->raw;
        return true;
    }
    return contig(r, o->buf, o->chunk, n, ptr);
}

/* dst = a (+) b over n chunks (b NULL: dst = a, a copy). */
static ccs_status_t local_op(run_t *r, const operand_t *dst,
                             const operand_t *a, const operand_t *b,
                             uint32_t n)
{
    uint8_t *pd, *pa, *pb = NULL;
    ccs_status_t st = CCS_OK;

    if (operand_contig(r, dst, n, &pd) && operand_contig(r, a, n, &pa) &&
        (b == NULL || operand_contig(r, b, n, &pb))) {
        if (b == NULL)
            return pd == pa ? CCS_OK
                            : r->xo->copy(r->x, pd, pa, n * r->cbytes,
                                          r->err);
        return r->xo->reduce(r->x, pd, pa, pb, n * r->cs, r->dtype, r->op,
                             r->err);
    }
    for (uint32_t k = 0; k < n && st == CCS_OK; k++) {
        pd = operand_ptr(r, dst, k);
        pa = operand_ptr(r, a, k);
        if (b == NULL)
            st = pd == pa ? CCS_OK
                          : r->xo->copy(r->x, pd, pa, r->cbytes, r->err);
        else
            st = r->xo->reduce(r->x, pd, pa, operand_ptr(r, b, k), r->cs,
                               r->dtype, r->op, r->err);
    }
    return st;
}

static uint8_t *stage_take(run_t *r, uint32_t n)
{
    uint8_t *p = r->stage + r->stage_used;
    r->stage_used += (size_t)n * r->cbytes;
    return p;
}

/* Can this RECV_REDUCE go to the transport's recv_reduce (destination
 * and local operand contiguous; the transport reads the peer's bytes in
 * place)?  *pd and *pa are then the destination and local operand. */
static bool recv_reduce_direct(const run_t *r, const ccs_op_t *op,
                               uint32_t i, uint8_t **pd, uint8_t **pa)
{
    return r->xo->recv_reduce != NULL &&
           (r->force_stage == NULL || !r->force_stage[i]) &&
           contig(r, op->buf, op->chunk, op->nchunks, pd) &&
           contig(r, op->src_buf, op->src_chunk, op->nchunks, pa);
}

/* Does this receive land in staging?  Must give the same answer in the
 * posting pass and the completion pass. */
static bool recv_staged(const run_t *r, const ccs_op_t *op, uint32_t i,
                        uint8_t **ptr)
{
    uint8_t *pa;

    if (r->force_stage != NULL && r->force_stage[i])
        return true;
    if (op->kind == CCS_OP_RECV_REDUCE)
        return !recv_reduce_direct(r, op, i, ptr, &pa);
    return !contig(r, op->buf, op->chunk, op->nchunks, ptr);
}

static ccs_status_t run_group(run_t *r, const plan_group_t *g)
{
    const ccs_op_t *ops = r->s->rank_ops[r->L];
    const uint32_t *seq = r->plan->seq[r->L];
    const ccs_xport_ops_t *xo = r->xo;
    ccs_status_t st;
    uint8_t *ptr;

    r->stage_used = 0;
    if ((st = xo->group_begin(r->x, g->step, r->err)) != CCS_OK)
        return st;
    /* Receives first (MPI then never sees unexpected messages from a fast
     * peer), then sends; each in op order, which is the matching order. */
    for (uint32_t i = g->first; i < g->end; i++) {
        const ccs_op_t *op = &ops[i];
        uint8_t *pa;
        if (op->kind != CCS_OP_RECV && op->kind != CCS_OP_RECV_REDUCE)
            continue;
        if (op->kind == CCS_OP_RECV_REDUCE &&
            recv_reduce_direct(r, op, i, &ptr, &pa)) {
            st = xo->recv_reduce(r->x, pi(r, (uint32_t)op->peer), ptr, pa,
                                 (size_t)op->nchunks * r->cs, r->dtype,
                                 r->op, g->step, seq[i], r->err);
            if (st != CCS_OK)
                return st;
            continue;
        }
        if (recv_staged(r, op, i, &ptr))
            ptr = stage_take(r, op->nchunks);
        st = xo->recv(r->x, pi(r, (uint32_t)op->peer), ptr,
                      (size_t)op->nchunks * r->cbytes, g->step, seq[i],
                      r->err);
        if (st != CCS_OK)
            return st;
    }
    for (uint32_t i = g->first; i < g->end; i++) {
        const ccs_op_t *op = &ops[i];
        if (op->kind != CCS_OP_SEND)
            continue;
        if (!contig(r, op->buf, op->chunk, op->nchunks, &ptr)) {
            operand_t d = { 0, 0, stage_take(r, op->nchunks) };
            operand_t a = { op->buf, op->chunk, NULL };
            if ((st = local_op(r, &d, &a, NULL, op->nchunks)) != CCS_OK)
                return st;
            ptr = d.raw;
        }
        st = xo->send(r->x, pi(r, (uint32_t)op->peer), ptr,
                      (size_t)op->nchunks * r->cbytes, g->step, seq[i],
                      r->err);
        if (st != CCS_OK)
            return st;
        r->bytes_sent += (size_t)op->nchunks * r->cbytes;
    }
    if ((st = xo->group_end(r->x, r->err)) != CCS_OK)
        return st;
    /* Local ops touch no chunk the step's transfers touch (sched.h), so
     * they overlap with the transfers. */
    for (uint32_t i = g->first; i < g->end; i++) {
        const ccs_op_t *op = &ops[i];
        operand_t d = { op->buf, op->chunk, NULL };
        operand_t a = { op->src_buf, op->src_chunk, NULL };
        if (op->kind == CCS_OP_COPY)
            st = local_op(r, &d, &a, NULL, op->nchunks);
        else if (op->kind == CCS_OP_REDUCE_LOCAL)
            st = local_op(r, &d, &d, &a, op->nchunks);
        if (st != CCS_OK)
            return st;
    }
    if ((st = xo->wait(r->x, r->err)) != CCS_OK)
        return st;
    /* Completion pass: same staging walk as the posting pass. */
    r->stage_used = 0;
    for (uint32_t i = g->first; i < g->end; i++) {
        const ccs_op_t *op = &ops[i];
        operand_t d = { op->buf, op->chunk, NULL };
        if (op->kind != CCS_OP_RECV && op->kind != CCS_OP_RECV_REDUCE)
            continue;
        if (!recv_staged(r, op, i, &ptr))
            continue;
        operand_t rx = { 0, 0, stage_take(r, op->nchunks) };
        if (op->kind == CCS_OP_RECV) {
            st = local_op(r, &d, &rx, NULL, op->nchunks);
        } else {
            operand_t a = { op->src_buf, op->src_chunk, NULL };
            st = local_op(r, &d, &a, &rx, op->nchunks);
        }
        if (st != CCS_OK)
            return st;
    }
    return CCS_OK;
}

/* ---- hazard-ordered issue (issue window W > 1) ----
 *
 * The rules are the simulator's dataflow mode (synth/sim/sim_flow.c,
 * docs/simulator.md), so that `ccsynth sim --mode dataflow --window W`
 * models this loop:
 *   - the rank issues its groups (its ops of one step) in step order, at
 *     most W of them from its oldest unfinished one on;
 *   - an issued op starts once every earlier op of the rank that it
 *     conflicts with (read after write, write after read, write after
 *     write on a chunk range of IN, OUT or SCRATCH) has completed; ops of
 *     one step never conflict (sched.h), so they never wait for each
 *     other;
 *   - a transfer is posted only after every earlier transfer of the rank
 *     to (or from) the same peer: transports match a pair's messages in
 *     posting order, which must stay the plan's order.
 * Every write to a chunk is then ordered against every other access of
 * it as in the step order, so the results are bit for bit the same.  It
 * cannot deadlock where the step order does not: the unfinished op of the
 * smallest step always has its hazards clear and its peer's op issued.
 * That needs completion per request (xport.h: ticket, test, wait_any):
 * the loop blocks only until one of its pending requests completes, never
 * on one chosen request or on all it posted.
 *
 * Staging: one slot of stage_chunks per group in the window (group k uses
 * slot k mod W; group k + W is issued only after group k finished), each
 * op's ranges at the offsets the step order's walk gives them.
 *
 * Local ops run when they start (on this thread), so they complete at
 * once; a staged receive completes after its unpack.  On a stream
 * transport (cuda) "run" means enqueued on the run's stream, and the
 * transport keeps that sound: its test reports a transfer complete only
 * once the device finished it, and it orders each transfer after what
 * the run's stream holds when the transfer is posted (xport_cuda.c). */

enum { FL_WAIT = 0, FL_RUN, FL_DONE };

struct ccs_flow_op {
    uint64_t ticket;     /* transport request (FL_RUN transfers) */
    uint8_t *stage;      /* staging of this op, or NULL */
    uint8_t state;       /* FL_* */
};

typedef struct flow_grp {
    uint32_t first, end; /* ops of the group */
    uint32_t step, phase;
    uint32_t left;       /* ops not yet complete */
} flow_grp_t;

static bool flow_conflict(const ccs_op_t *x, const ccs_op_t *y, bool alias)
{
    ccs_op_range_t a[2], b[2];
    uint32_t na = ccs_op_ranges(x, a), nb = ccs_op_ranges(y, b);

    if (alias) {
        for (uint32_t i = 0; i < na; i++)
            if (a[i].buf == CCS_BUF_IN)
                a[i].buf = CCS_BUF_OUT;
        for (uint32_t j = 0; j < nb; j++)
            if (b[j].buf == CCS_BUF_IN)
                b[j].buf = CCS_BUF_OUT;
    }
    for (uint32_t i = 0; i < na; i++)
        for (uint32_t j = 0; j < nb; j++)
            if ((a[i].write || b[j].write) && a[i].buf == b[j].buf &&
                a[i].lo < b[j].hi && b[j].lo < a[i].hi)
                return true;
    return false;
}

static bool is_transfer(const ccs_op_t *op)
{
    return op->kind == CCS_OP_SEND || op->kind == CCS_OP_RECV ||
           op->kind == CCS_OP_RECV_REDUCE;
}

/* Assign group g's staging (slot base) in the order run_group takes it:
 * receives, then sends, in op order. */
static void flow_issue(run_t *r, struct ccs_flow_op *fo, const flow_grp_t *g,
                       uint8_t *base)
{
    const ccs_op_t *ops = r->s->rank_ops[r->L];
    uint8_t *ptr;

    r->stage = base;
    r->stage_used = 0;
    for (uint32_t i = g->first; i < g->end; i++) {
        const ccs_op_t *op = &ops[i];
        fo[i].state = FL_WAIT;
        fo[i].stage = NULL;
        if ((op->kind == CCS_OP_RECV || op->kind == CCS_OP_RECV_REDUCE) &&
            recv_staged(r, op, i, &ptr))
            fo[i].stage = stage_take(r, op->nchunks);
    }
    for (uint32_t i = g->first; i < g->end; i++) {
        const ccs_op_t *op = &ops[i];
        if (op->kind == CCS_OP_SEND &&
            !contig(r, op->buf, op->chunk, op->nchunks, &ptr))
            fo[i].stage = stage_take(r, op->nchunks);
    }
}

/* Start op i (its hazards are clear); local ops complete here. */
static ccs_status_t flow_start(run_t *r, struct ccs_flow_op *f, uint32_t i,
                               uint32_t step)
{
    const ccs_op_t *op = &r->s->rank_ops[r->L][i];
    uint32_t seq = r->plan->seq[r->L][i];
    const ccs_xport_ops_t *xo = r->xo;
    uint32_t peer = op->peer >= 0 ? pi(r, (uint32_t)op->peer) : 0;
    operand_t d = { op->buf, op->chunk, NULL };
    operand_t a = { op->src_buf, op->src_chunk, NULL };
    ccs_status_t st;
    uint8_t *ptr, *pa;

    switch (op->kind) {
    case CCS_OP_COPY:
        f->state = FL_DONE;
        return local_op(r, &d, &a, NULL, op->nchunks);
    case CCS_OP_REDUCE_LOCAL:
        f->state = FL_DONE;
        return local_op(r, &d, &d, &a, op->nchunks);
    case CCS_OP_SEND:
        if (f->stage != NULL) {
            operand_t sd = { 0, 0, f->stage };
            if ((st = local_op(r, &sd, &d, NULL, op->nchunks)) != CCS_OK)
                return st;
            ptr = f->stage;
        } else {
            (void)contig(r, op->buf, op->chunk, op->nchunks, &ptr);
        }
        f->ticket = xo->ticket(r->x);
        f->state = FL_RUN;
        r->bytes_sent += (size_t)op->nchunks * r->cbytes;
        return xo->send(r->x, peer, ptr, (size_t)op->nchunks * r->cbytes,
                        step, seq, r->err);
    default:
        f->ticket = xo->ticket(r->x);
        f->state = FL_RUN;
        if (f->stage == NULL && op->kind == CCS_OP_RECV_REDUCE &&
            recv_reduce_direct(r, op, i, &ptr, &pa))
            return xo->recv_reduce(r->x, peer, ptr, pa,
                                   (size_t)op->nchunks * r->cs, r->dtype,
                                   r->op, step, seq, r->err);
        if (f->stage != NULL)
            ptr = f->stage;
        else
            (void)contig(r, op->buf, op->chunk, op->nchunks, &ptr);
        return xo->recv(r->x, peer, ptr, (size_t)op->nchunks * r->cbytes,
                        step, seq, r->err);
    }
}

/* A transfer of op i completed: unpack a staged receive. */
static ccs_status_t flow_finish(run_t *r, struct ccs_flow_op *f, uint32_t i)
{
    const ccs_op_t *op = &r->s->rank_ops[r->L][i];
    operand_t d = { op->buf, op->chunk, NULL };
    operand_t a = { op->src_buf, op->src_chunk, NULL };
    operand_t rx = { 0, 0, f->stage };

    f->state = FL_DONE;
    if (op->kind == CCS_OP_SEND || f->stage == NULL)
        return CCS_OK;
    if (op->kind == CCS_OP_RECV)
        return local_op(r, &d, &rx, NULL, op->nchunks);
    return local_op(r, &d, &a, &rx, op->nchunks);
}

/* The steps with a window above 1.  agree: the first-call agreement runs
 * (once) when the window is empty, before the first group that needs it,
 * as in the step order (before phase 1 in phased plans). */
static ccs_status_t run_flow(run_t *r, ccs_comm_t *comm, uint8_t *stage,
                             size_t slot_bytes, ccs_run_stats_t *stats,
                             bool timed, size_t count, int32_t strag,
                             bool *disagreed)
{
    const ccs_sched_t *s = r->s;
    const ccs_op_t *ops = s->rank_ops[r->L];
    uint32_t nops = s->rank_nops[r->L], ng = r->plan->ngroups[r->L];
    uint32_t W = comm->issue_window, R = s->nranks;
    uint32_t g_lo = 0, g_hi = 0, next_first = 0, phase = 0, pass = 0;
    uint32_t nwait;
    flow_grp_t win[CCS_ISSUE_WINDOW_MAX];
    struct ccs_flow_op *fo;
    bool agreed = false;
    ccs_status_t st = CCS_OK;

    if (nops > comm->flow_cap) {
        /* both owned by comm */
        struct ccs_flow_op *n = realloc(comm->flow, (size_t)nops *
                                                        sizeof(*n));
        uint64_t *w;
        if (n == NULL)
            return ccs_err_set(r->err, CCS_ERR_NOMEM, "out of memory (%u "
                               "ops of issue state)", nops);
        comm->flow = n;
        w = realloc(comm->flow_wait, (size_t)nops * sizeof(*w));
        if (w == NULL)
            return ccs_err_set(r->err, CCS_ERR_NOMEM, "out of memory (%u "
                               "ops of issue state)", nops);
        comm->flow_wait = w;
        comm->flow_cap = nops;
    }
    if (comm->flow_pair == NULL) {
        /* owned by comm; one nranks for its life */
        comm->flow_pair = calloc(2 * (size_t)R, sizeof(*comm->flow_pair));
        if (comm->flow_pair == NULL)
            return ccs_err_set(r->err, CCS_ERR_NOMEM, "out of memory");
    }
    fo = comm->flow;
    for (uint32_t q = 0; q < 2 * R; q++)
        comm->flow_pair[q] = 0;

    while (g_lo < ng) {
        bool moved = false;
        /* Issue, within the window and after the agreement. */
        while (g_hi < ng && g_hi - g_lo < W) {
            plan_group_t pg = ccs_plan_group(r->plan, r->L, next_first);
            flow_grp_t *g = &win[g_hi % W];
            if (!agreed && (s->nphases <= 1 || pg.phase != 0)) {
                if (g_lo != g_hi)
                    break;   /* the agreement waits for an empty window */
                agreed = true;
                st = ccs_exec_agree(comm, r->plan, count, r->dtype, r->op,
                                    strag, pg.step, disagreed, r->err);
                if (st != CCS_OK)
                    return st;
            }
            g->first = pg.first;
            g->end = pg.end;
            g->step = pg.step;
            g->phase = pg.phase;
            g->left = pg.end - pg.first;
            flow_issue(r, fo, g, stage + (size_t)(g_hi % W) * slot_bytes);
            next_first = pg.end;
            g_hi++;
            moved = true;
        }
        /* Start what the hazards allow, oldest first. */
        pass++;
        for (uint32_t k = g_lo; k < g_hi; k++) {
            const flow_grp_t *g = &win[k % W];
            for (uint32_t i = g->first; i < g->end; i++) {
                const ccs_op_t *op = &ops[i];
                uint32_t *pair = NULL;
                bool held = false;
                if (fo[i].state != FL_WAIT)
                    continue;
                if (is_transfer(op)) {
                    pair = &comm->flow_pair[2 * (uint32_t)op->peer +
                                            (op->kind == CCS_OP_SEND)];
                    held = *pair == pass;
                }
                for (uint32_t j = win[g_lo % W].first;
                     !held && j < g->first; j++)
                    held = fo[j].state != FL_DONE &&
                           flow_conflict(op, &ops[j], r->alias);
                if (held) {
                    if (pair != NULL)
                        *pair = pass;
                    continue;
                }
                st = flow_start(r, &fo[i], i, g->step);
                if (st != CCS_OK)
                    return st;
                moved = true;
                if (fo[i].state == FL_DONE)
                    win[k % W].left--;
            }
        }
        /* Complete what the transport finished; list what it did not. */
        nwait = 0;
        for (uint32_t k = g_lo; k < g_hi; k++) {
            flow_grp_t *g = &win[k % W];
            for (uint32_t i = g->first; i < g->end && g->left > 0; i++) {
                bool done = false;
                if (fo[i].state != FL_RUN)
                    continue;
                if ((st = r->xo->test(r->x, fo[i].ticket, &done, r->err)) !=
                    CCS_OK) {
                    ccs_err_prefix(r->err, "step %u: ", g->step);
                    return st;
                }
                if (!done) {
                    comm->flow_wait[nwait++] = fo[i].ticket;
                    continue;
                }
                if ((st = flow_finish(r, &fo[i], i)) != CCS_OK)
                    return st;
                g->left--;
                moved = true;
            }
        }
        /* Retire finished groups from the oldest on. */
        while (g_lo < g_hi && win[g_lo % W].left == 0) {
            g_lo++;
            moved = true;
        }
        {
            uint32_t now = g_lo < g_hi ? win[g_lo % W].phase : s->nphases;
            for (; phase < now; phase++)
                if (timed && phase < CCS_STATS_MAX_PHASES)
                    stats->phase_end_s[phase] = ccs_now_s();
        }
        if (!moved && (st = r->xo->wait_any(r->x, comm->flow_wait, nwait,
                                            r->err)) != CCS_OK) {
            for (uint32_t i = win[g_lo % W].first; i < nops; i++)
                if (fo[i].state == FL_RUN) {
                    ccs_err_prefix(r->err, "step %u: ", ops[i].step);
                    break;
                }
            return st;
        }
    }
    if (!agreed &&
        (st = ccs_exec_agree(comm, r->plan, count, r->dtype, r->op, strag,
                             -1, disagreed, r->err)) != CCS_OK)
        return st;
    /* Everything of ours is complete; this also completes what was posted
     * before the run (straggler auto's exchange) and ends the tickets. */
    return r->xo->wait(r->x, r->err);
}

static size_t align64(size_t v)
{
    return (v + 63) & ~(size_t)63;
}

static bool mul_ok(size_t a, size_t b, size_t *out)
{
    return !__builtin_mul_overflow(a, b, out);
}

static bool overlap(const void *a, size_t alen, const void *b, size_t blen)
{
    uintptr_t pa = (uintptr_t)a, pb = (uintptr_t)b;
    return alen > 0 && blen > 0 && pa < pb + blen && pb < pa + alen;
}

/* Copy the short chunk of each used block into its tail, zero-padded. */
static ccs_status_t tails_in(run_t *r, uint32_t nblk)
{
    ccs_status_t st = CCS_OK;

    for (uint32_t s = 0; s < nblk && st == CCS_OK; s++) {
        uint8_t *t = r->in.tail + (size_t)s * r->TB * r->cbytes;
        size_t ub = r->in.all_blocks ? (size_t)pi(r, s) * r->count : 0;
        st = r->xo->memset0(r->x, t, (size_t)r->TB * r->cbytes, r->err);
        if (st == CCS_OK && r->rem > 0)
            st = r->xo->copy(r->x, t,
                             r->in.user + (ub + (size_t)r->jfull * r->cs) *
                                              r->es,
                             r->rem * r->es, r->err);
    }
    return st;
}

static ccs_status_t tails_out(run_t *r, uint32_t nblk)
{
    ccs_status_t st = CCS_OK;

    for (uint32_t s = 0; s < nblk && st == CCS_OK && r->rem > 0; s++) {
        uint8_t *t = r->out.tail + (size_t)s * r->TB * r->cbytes;
        size_t ub = r->out.all_blocks ? (size_t)pi(r, s) * r->count : 0;
        st = r->xo->copy(r->x,
                         r->out.user + (ub + (size_t)r->jfull * r->cs) * r->es,
                         t, r->rem * r->es, r->err);
    }
    return st;
}

/* The small-message exchange's step: above any plan step (CCS_MAX_STEPS)
 * and apart from the agreement's (exec_checks.c), so tags and matching
 * never mix with the plan's. */
#define SMALL_STEP 0xfffffe00u

#define FAIL(code, ...) (st = ccs_err_set(err, (code), __VA_ARGS__))

ccs_status_t ccs_run_ex(const ccs_plan_t *plan, ccs_comm_t *comm,
                        const void *sendbuff, void *recvbuff, size_t count,
                        ccs_dtype_t dtype, ccs_redop_t op, void *stream,
                        const ccs_run_opts_t *opts)
{
    if (opts != NULL && opts->straggler == CCS_STRAGGLER_AUTO)
        return ccs_auto_run(plan, comm, sendbuff, recvbuff, count, dtype, op,
                            stream, opts);
    return ccs_run_fixed(plan, comm, sendbuff, recvbuff, count, dtype, op,
                         stream, opts);
}

ccs_status_t ccs_run_fixed(const ccs_plan_t *plan, ccs_comm_t *comm,
                           const void *sendbuff, void *recvbuff,
                           size_t count, ccs_dtype_t dtype, ccs_redop_t op,
                           void *stream, const ccs_run_opts_t *opts)
{
    static const ccs_run_opts_t defaults = CCS_RUN_OPTS_INIT;
    ccs_err_t *err;
    const ccs_sched_t *s;
    ccs_run_stats_t stats;
    run_t r;
    ccs_status_t st = CCS_OK;
    bool started = false, stage_in = false, timed, disagreed = false;
    bool flow;
    size_t in_elems, out_elems, in_bytes = 0, out_bytes = 0, small_sent;
    size_t sz_scratch, sz_stage, sz_in_tail, sz_out_tail, sz_in_copy, total;
    uint32_t R, nblk_in, nblk_out;
    uint8_t *arena;
    int32_t strag;

    if (comm == NULL)
        return CCS_ERR_INVALID;
    err = &comm->err;
    ccs_err_clear(err);
    if (opts == NULL)
        opts = &defaults;
    memset(&r, 0, sizeof(r));
    memset(&stats, 0, sizeof(stats));
    /* Clock reads only for a caller that wants the times: they are a
     * noticeable share of a small call. */
    timed = opts->stats != NULL;
    if (timed)
        stats.t_start_s = ccs_now_s();

    /* ---- validation: nothing has moved yet ---- */
    if (plan == NULL) {
        FAIL(CCS_ERR_INVALID, "NULL plan");
        goto done;
    }
    s = plan->sched;
    R = s->nranks;
    if (comm->broken) {
        FAIL(CCS_ERR_TRANSPORT, "communicator unusable after an earlier "
             "failed run; destroy it");
        goto done;
    }
    if ((unsigned)dtype >= CCS_DTYPE_COUNT) {
        FAIL(CCS_ERR_INVALID, "unknown datatype %d", (int)dtype);
        goto done;
    }
    if ((unsigned)op >= CCS_REDOP_COUNT) {
        FAIL(CCS_ERR_INVALID, "unknown reduction op %d", (int)op);
        goto done;
    }
    if ((uint32_t)comm->nranks != R) {
        FAIL(CCS_ERR_MISMATCH, "plan (%s %s) is for %u ranks, the "
             "communicator has %d", s->algo, ccs_coll_str(s->coll), R,
             comm->nranks);
        goto done;
    }
    if (opts->expect_coll != CCS_COLL_COUNT && opts->expect_coll != s->coll) {
        FAIL(CCS_ERR_MISMATCH, "plan is for %s, called as %s",
             ccs_coll_str(s->coll), ccs_coll_str(opts->expect_coll));
        goto done;
    }
    strag = opts->straggler;
    r.sw_a = r.sw_b = -1;
    if (strag != -1) {
        if (strag < 0 || (uint32_t)strag >= R) {
            FAIL(CCS_ERR_INVALID, "straggler %d out of range 0..%u", strag,
                 R - 1);
            goto done;
        }
        if (s->straggler < 0) {
            FAIL(CCS_ERR_MISMATCH, "straggler %d asked for, but the plan "
                 "(%s) has no straggler role to relabel", strag, s->algo);
            goto done;
        }
        r.sw_a = strag;
        r.sw_b = s->straggler;
        if (ccs_coll_rooted(s->coll) && pi(&r, (uint32_t)s->root) !=
                                            (uint32_t)s->root) {
            FAIL(CCS_ERR_MISMATCH, "straggler %d would move the %s root "
                 "(rank %d)", strag, ccs_coll_str(s->coll), s->root);
            goto done;
        }
    }
    if (stream != NULL && !comm->xops->device_mem) {
        FAIL(CCS_ERR_INVALID, "a stream was given to the %s transport, "
             "which has none (pass NULL)", comm->xops->name);
        goto done;
    }
    flow = comm->issue_window > 1;
    if (flow && comm->xops->wait_any == NULL) {
        /* (CCS_ISSUE_WINDOW set for a transport that runs step by step) */
        FAIL(CCS_ERR_UNSUPPORTED, "issue window %u: the %s transport has "
             "no per-request completion and runs step by step (window 1)",
             comm->issue_window, comm->xops->name);
        goto done;
    }

    r.plan = plan;
    r.s = s;
    r.xo = comm->xops;
    r.x = comm->x;
    r.err = err;
    r.p = (uint32_t)comm->rank;
    r.L = pi(&r, r.p);
    r.dtype = dtype;
    r.op = op;
    r.es = ccs_dtype_size(dtype);
    stats.logical_rank = r.L;
    stats.nphases = s->nphases;
    stats.straggler = s->straggler < 0 ? -1
                                       : (int32_t)pi(&r, (uint32_t)s->straggler);
    if (count == 0)
        goto done;                  /* nothing to move, like NCCL */
    /* ---- small allreduce: one exchange instead of the plan's steps ----
     * Below comm->small_bytes of input a plan's steps cost one latency
     * each; every rank instead sends its input to every other rank in one
     * step and reduces the R inputs in rank order (the same order on every
     * rank, so every rank gets the same bits).  Host-memory transports;
     * the threshold and its default cap: xport.h.  Decided before the
     * plan's chunk mapping, none of which it needs: at a few bytes the
     * call's fixed costs are its latency. */
    if (s->coll == CCS_COLL_ALLREDUCE && R > 1 && !comm->xops->device_mem &&
        mul_ok(count, r.es, &in_bytes) && in_bytes <= comm->small_bytes &&
        mul_ok(in_bytes, (size_t)R - 1, &small_sent) &&
        small_sent <= comm->small_total) {
        size_t slot = align64(in_bytes);
        uint8_t *ar;
        const uint8_t *mine = sendbuff;
        if (sendbuff == NULL) {
            FAIL(CCS_ERR_INVALID, "rank %u: NULL sendbuff, but it holds %s "
                 "input", r.p, ccs_coll_str(s->coll));
            goto done;
        }
        if (recvbuff == NULL) {
            FAIL(CCS_ERR_INVALID, "rank %u: NULL recvbuff, but it receives "
                 "%s output", r.p, ccs_coll_str(s->coll));
            goto done;
        }
        if ((st = ccs_comm_arena(comm, slot * R, (void **)&ar, err)) !=
            CCS_OK)
            goto done;
        if ((st = r.xo->run_begin(r.x, stream, err)) != CCS_OK)
            goto done;
        started = true;
        if ((st = ccs_exec_agree(comm, plan, count, dtype, op, strag, 0,
                                 &disagreed, err)) != CCS_OK)
            goto done;
        /* Our input is sent and reduced where it lies, unless recvbuff
         * could overwrite it before its turn in the rank-order reduction
         * below: the first reduction reads inputs 0 and 1 as it writes
         * (dst may equal an operand), later ones read input q after
         * recvbuff was written.  Then a copy in our arena slot. */
        if (overlap(sendbuff, in_bytes, recvbuff, in_bytes) &&
            (sendbuff != recvbuff || r.p >= 2)) {
            uint8_t *cp = ar + (size_t)r.p * slot;
            if ((st = r.xo->copy(r.x, cp, sendbuff, in_bytes, err)) !=
                CCS_OK)
                goto done;
            mine = cp;
        }
        /* Sends first: a peer already waiting gets our input one
         * cross-core transfer sooner than if we first fetched its. */
        if ((st = r.xo->group_begin(r.x, SMALL_STEP, err)) != CCS_OK)
            goto done;
        for (uint32_t q = 0; q < R && st == CCS_OK; q++)
            if (q != r.p)
                st = r.xo->send(r.x, q, mine, in_bytes, SMALL_STEP, 0, err);
        for (uint32_t q = 0; q < R && st == CCS_OK; q++)
            if (q != r.p)
                st = r.xo->recv(r.x, q, ar + (size_t)q * slot, in_bytes,
                                SMALL_STEP, 0, err);
        if (st != CCS_OK ||
            (st = r.xo->group_end(r.x, err)) != CCS_OK ||
            (st = r.xo->wait(r.x, err)) != CCS_OK) {
            ccs_err_prefix(err, "rank %u, small-message exchange: ", r.p);
            goto done;
        }
        /* input q: our own (mine) or the arena slot it was received in */
#define SMALL_IN(q) ((q) == r.p ? mine : ar + (size_t)(q) * slot)
        st = r.xo->reduce(r.x, recvbuff, SMALL_IN(0u), SMALL_IN(1u), count,
                          dtype, op, err);
        for (uint32_t q = 2; q < R && st == CCS_OK; q++)
            st = r.xo->reduce(r.x, recvbuff, recvbuff, SMALL_IN(q), count,
                              dtype, op, err);
#undef SMALL_IN
        if (st == CCS_OK && op == CCS_AVG)
            st = r.xo->div(r.x, recvbuff, count, dtype, R, err);
        stats.steps_run = 1;
        r.bytes_sent = (uint64_t)(R - 1) * in_bytes;
        goto done;
    }

    r.B = ccs_coll_block(s->coll, R, s->nchunks);
    r.count = count;
    r.cs = (count - 1) / r.B + 1;
    r.jfull = (uint32_t)(count / r.cs);
    if (r.jfull > r.B)
        r.jfull = r.B;
    r.rem = count - (size_t)r.jfull * r.cs;
    r.TB = r.B - r.jfull;
    r.in.all_blocks = s->coll == CCS_COLL_REDUCESCATTER ||
                      s->coll == CCS_COLL_ALLTOALL;
    r.out.all_blocks = s->coll == CCS_COLL_ALLGATHER ||
                       s->coll == CCS_COLL_ALLTOALL;
    r.in.used = !(s->coll == CCS_COLL_BROADCAST &&
                  (int32_t)r.L != s->root);
    r.out.used = !(s->coll == CCS_COLL_REDUCE && (int32_t)r.L != s->root);
    nblk_in = r.in.all_blocks ? R : 1;
    nblk_out = r.out.all_blocks ? R : 1;
    if (!mul_ok(r.cs, r.es, &r.cbytes) ||
        !mul_ok(count, nblk_in, &in_elems) ||
        !mul_ok(in_elems, r.es, &in_bytes) ||
        !mul_ok(count, nblk_out, &out_elems) ||
        !mul_ok(out_elems, r.es, &out_bytes) ||
        r.cbytes > SIZE_MAX / ((size_t)s->nchunks + s->nscratch + 1) / 4) {
        FAIL(CCS_ERR_INVALID, "count %zu too large", count);
        goto done;
    }
    if (r.in.used && sendbuff == NULL) {
        FAIL(CCS_ERR_INVALID, "rank %u: NULL sendbuff, but it holds %s "
             "input", r.p, ccs_coll_str(s->coll));
        goto done;
    }
    if (r.out.used && recvbuff == NULL) {
        FAIL(CCS_ERR_INVALID, "rank %u: NULL recvbuff, but it receives %s "
             "output", r.p, ccs_coll_str(s->coll));
        goto done;
    }
    r.in.user = (uint8_t *)(uintptr_t)sendbuff;
    r.out.user = recvbuff;
    if (r.in.used && r.out.used &&
        overlap(sendbuff, in_bytes, recvbuff, out_bytes)) {
        const uint8_t *sb = sendbuff, *rb = recvbuff;
        size_t blk = count * r.es;
        bool exact;
        if (s->coll == CCS_COLL_REDUCESCATTER)
            exact = rb == sb + (size_t)r.p * blk;
        else if (s->coll == CCS_COLL_ALLGATHER)
            exact = sb == rb + (size_t)r.p * blk;
        else
            exact = sb == rb;
        stage_in = !exact;
        /* With a window, IN and OUT are one buffer for the conflicts
         * (the simulator's rule): a receive into OUT[c] then waits for an
         * earlier send of IN[c].  That needs IN[c] and OUT[c] to be the
         * same memory (not so for reducescatter and allgather, whose
         * blocks differ) and the plan to read no IN[c] after writing
         * OUT[c] (the staging of receives that the step order uses then
         * relies on the step order); otherwise the input is copied. */
        if (exact && flow) {
            if (plan->inplace_hazard[r.L] ||
                s->coll == CCS_COLL_REDUCESCATTER ||
                s->coll == CCS_COLL_ALLGATHER)
                stage_in = true;
            else
                r.alias = true;
        } else if (exact && plan->inplace_hazard[r.L]) {
            st = ccs_exec_inplace(comm, plan, r.L, &stage_in,
                                  &r.force_stage, err);
            if (st != CCS_OK)
                goto done;
        }
    }

    /* ---- arena: scratch | staging | tails | input copy ---- */
    sz_scratch = align64((size_t)plan->scratch_chunks[r.L] * r.cbytes);
    sz_stage = align64((size_t)plan->stage_chunks[r.L] * r.cbytes);
    if (flow)
        sz_stage *= comm->issue_window; /* one slot per group in flight */
    sz_in_tail = r.in.used ? align64((size_t)nblk_in * r.TB * r.cbytes) : 0;
    sz_out_tail = r.out.used ? align64((size_t)nblk_out * r.TB * r.cbytes)
                             : 0;
    sz_in_copy = stage_in ? align64(in_bytes) : 0;
    total = sz_scratch + sz_stage + sz_in_tail + sz_out_tail + sz_in_copy;
    if ((st = ccs_comm_arena(comm, total, (void **)&arena, err)) != CCS_OK)
        goto done;
    r.scratch = arena;
    r.stage = arena + sz_scratch;
    r.in.tail = r.stage + sz_stage;
    r.out.tail = r.in.tail + sz_in_tail;

    if ((st = r.xo->run_begin(r.x, stream, err)) != CCS_OK)
        goto done;
    started = true;
    CCS_LOG(comm->log_level, CCS_LOG_TRACE, "EXEC", comm->rank,
            "run %s %s count %zu %s %s: logical rank %u, %zu elements per "
            "chunk, %u tail chunk(s) per block%s", s->algo,
            ccs_coll_str(s->coll), count, ccs_dtype_str(dtype),
            ccs_redop_str(op), r.L, r.cs, r.TB,
            stage_in ? ", input staged (in place)" : "");
    if (stage_in) {
        uint8_t *copy = r.out.tail + sz_out_tail;
        if ((st = r.xo->copy(r.x, copy, sendbuff, in_bytes, err)) != CCS_OK)
            goto done;
        r.in.user = copy;
        stats.staged_input = 1;
    }
    if (r.in.used && r.TB > 0 && (st = tails_in(&r, nblk_in)) != CCS_OK)
        goto done;

    /* ---- the steps ---- */
    if (flow) {
        st = run_flow(&r, comm, arena + sz_scratch,
                      sz_stage / comm->issue_window, &stats, timed, count,
                      strag, &disagreed);
        if (st != CCS_OK) {
            ccs_err_prefix(err, "rank %u (plan rank %u), issue window %u: ",
                           r.p, r.L, comm->issue_window);
            goto done;
        }
        stats.steps_run = plan->ngroups[r.L];
    } else {
        uint32_t ng = plan->ngroups[r.L];
        uint32_t phase = 0, first = 0;
        bool agreed = false;
        for (uint32_t g = 0; g < ng; g++) {
            plan_group_t grp = ccs_plan_group(plan, r.L, first);
            first = grp.end;
            while (phase < grp.phase) {
                if (timed && phase < CCS_STATS_MAX_PHASES)
                    stats.phase_end_s[phase] = ccs_now_s();
                phase++;
            }
            /* The agreement runs before the first step of phase 1 in
             * phased plans, so that phase 0 still runs while a straggler
             * is away. */
            if (!agreed && (s->nphases <= 1 || grp.phase != 0)) {
                agreed = true;
                if ((st = ccs_exec_agree(comm, plan, count, dtype, op,
                                         strag, grp.step, &disagreed,
                                         err)) != CCS_OK)
                    goto done;
            }
            st = run_group(&r, &grp);
            if (st != CCS_OK) {
                ccs_err_prefix(err, "rank %u (plan rank %u) step %u: ",
                               r.p, r.L, grp.step);
                goto done;
            }
        }
        stats.steps_run = ng;
        for (; phase < s->nphases; phase++)
            if (timed && phase < CCS_STATS_MAX_PHASES)
                stats.phase_end_s[phase] = ccs_now_s();
        if (!agreed &&
            (st = ccs_exec_agree(comm, plan, count, dtype, op, strag, -1,
                                 &disagreed, err)) != CCS_OK)
            goto done;
    }

    if (r.out.used && r.TB > 0 && (st = tails_out(&r, nblk_out)) != CCS_OK)
        goto done;
    if (op == CCS_AVG && ccs_coll_reduces(s->coll) && r.out.used &&
        (st = r.xo->div(r.x, recvbuff, out_elems, dtype, R, err)) != CCS_OK)
        goto done;

done:
    if (started) {
        ccs_status_t st2 = r.xo->run_end(r.x, st == CCS_OK ? err : NULL);
        if (st == CCS_OK)
            st = st2;
    }
    if (st != CCS_OK) {
        if (started) {
            /* Data was moving: peers may wait on us forever otherwise.
             * Not after the agreement's verdict: every rank reaches it by
             * itself, and a peer may still need our last agreement
             * message (a send of a few bytes completes before the peer
             * takes it, on the threads transport too), which an abort
             * would keep from it. */
            comm->broken = true;
            if (!disagreed && comm->xops->abort != NULL)
                comm->xops->abort(comm->x);
        }
        CCS_LOG(comm->log_level, CCS_LOG_WARN, "EXEC", comm->rank, "%s",
                ccs_err_msg(err, st));
        if (err->msg[0] == '\0')
            ccs_err_set(err, st, "%s", ccs_strerror(st));
        return st;
    }
    if (timed) {
        stats.t_end_s = ccs_now_s();
        stats.bytes_sent = r.bytes_sent;
        *opts->stats = stats;
    }
    return CCS_OK;
}

ccs_status_t ccs_run(const ccs_plan_t *plan, ccs_comm_t *comm,
                     const void *sendbuff, void *recvbuff, size_t count,
                     ccs_dtype_t dtype, ccs_redop_t op, void *stream)
{
    return ccs_run_ex(plan, comm, sendbuff, recvbuff, count, dtype, op,
                      stream, NULL);
}

static ccs_status_t run_coll(ccs_coll_t coll, const ccs_plan_t *plan,
                             ccs_comm_t *comm, const void *sendbuff,
                             void *recvbuff, size_t count, ccs_dtype_t dtype,
                             ccs_redop_t op, void *stream)
{
    ccs_run_opts_t o = CCS_RUN_OPTS_INIT;
    o.expect_coll = coll;
    return ccs_run_ex(plan, comm, sendbuff, recvbuff, count, dtype, op,
                      stream, &o);
}

ccs_status_t ccs_allreduce(const ccs_plan_t *plan, ccs_comm_t *comm,
                           const void *sendbuff, void *recvbuff,
                           size_t count, ccs_dtype_t dtype, ccs_redop_t op,
                           void *stream)
{
    return run_coll(CCS_COLL_ALLREDUCE, plan, comm, sendbuff, recvbuff,
                    count, dtype, op, stream);
}

ccs_status_t ccs_reducescatter(const ccs_plan_t *plan, ccs_comm_t *comm,
                               const void *sendbuff, void *recvbuff,
                               size_t recvcount, ccs_dtype_t dtype,
                               ccs_redop_t op, void *stream)
{
    return run_coll(CCS_COLL_REDUCESCATTER, plan, comm, sendbuff, recvbuff,
                    recvcount, dtype, op, stream);
}

ccs_status_t ccs_allgather(const ccs_plan_t *plan, ccs_comm_t *comm,
                           const void *sendbuff, void *recvbuff,
                           size_t sendcount, ccs_dtype_t dtype, void *stream)
{
    return run_coll(CCS_COLL_ALLGATHER, plan, comm, sendbuff, recvbuff,
                    sendcount, dtype, CCS_SUM, stream);
}
