/*
 * verify.c - symbolic verifier of schedules (DESIGN.md, "The verifier"; the
 * data model and step semantics are those of runtime/sched.h).
 *
 * Every (rank, buffer, chunk) of OUT and SCRATCH holds either "unwritten"
 * or a value: the origin chunk and the set of ranks whose contribution it
 * contains.  IN is read-only, so its values are implied (IN_r[c] = (c, {r})
 * where ccs_coll_in_valid says so, else unwritten) and never stored.
 *
 * Sends are paired with receives once, up front, by the IR's own rule
 * (ccs_sched_pair: the plan loader, the simulator and this verifier say
 * the same about the same file).  Then the schedule is executed one step
 * at a time:
 *   1. reads: every operand read must hold a value;
 *   2. hazards: no chunk of a rank is written twice, or read and written,
 *      in one step (ccs_sched_step_hazard, the loader's check too);
 *   3. writes: each destination cell is checked against the OUT range,
 *      then the new value is computed and stored at once.  Storing at once
 *      is sound: a cell written in this step was read by no other op of the
 *      step (pass 2), so every value computed in pass 3 is the pre-step one.
 * At the end the collective's postcondition is checked on every valid OUT
 * chunk.
 *
 * Cost: O(total ops x chunks per op x W) time with W = ceil(R / 64) words
 * per rank set; the final check visits only the cells that were written
 * (a rank x chunk table the schedule does not fill is never walked).
 * Memory: (8W + 4) bytes per OUT/SCRATCH cell, allocated zeroed per (rank,
 * buffer) at its first write (pages are touched only where cells are
 * written), capped at VERIFY_MEM_LIMIT, plus 4 bytes per written OUT cell.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "verify.h"

/* Cell state beyond this is refused rather than risking the OOM killer:
 * 1024 ranks x 1024 chunks need ~140 MiB; 8 GiB is far past any schedule
 * we synthesize. */
#define VERIFY_MEM_LIMIT (UINT64_C(8) << 30)
/* Rank lists in messages stop after this many. */
#define LISTED_RANKS 8

enum { VB_OUT = 0, VB_SCRATCH = 1, VB_COUNT = 2 };

/* The stored state of one (rank, buffer). */
typedef struct vcells {
    uint64_t *bits;    /* [ncells * W] contributing ranks; owns the block
                          that also holds origin1 */
    uint32_t *origin1; /* [ncells] 1 + origin chunk; 0 until written, so a
                          zeroed block is "all unwritten" */
    uint32_t *written; /* owned; OUT only: chunks in the order they were
                          first written, nwritten of them */
    uint32_t nwritten, wcap;
} vcells_t;

/* A value as read: a stored cell's set, or the singleton {single}. */
typedef struct vval {
    uint32_t origin;
    const uint64_t *bits; /* NULL: the set is {single} */
    uint32_t single;
} vval_t;

typedef struct vref {
    uint32_t rank, idx;   /* s->rank_ops[rank][idx] */
} vref_t;

typedef struct vctx {
    const ccs_sched_t *s;
    ccs_err_t *err;
    uint32_t W;           /* 64-bit words per rank set */
    uint64_t mem;         /* bytes of cell state allocated so far */
    vcells_t *cells;      /* [R * VB_COUNT], owned; arrays NULL until the
                             first write to that (rank, buffer) */
    vref_t *order;        /* [nops], owned: ops by (step, rank, op order) */
    uint32_t *step_start; /* [nsteps + 1], owned: step t is
                             order[step_start[t] .. step_start[t + 1]) */
    ccs_pairing_t pair;   /* owned: each receive's send */
} vctx_t;

/* ---- Messages ---- */

static const ccs_op_t *op_at(const vctx_t *v, uint32_t pos)
{
    return &v->s->rank_ops[v->order[pos].rank][v->order[pos].idx];
}

/* Fail with "step T, rank R: <op element i>: <problem>". */
static ccs_status_t op_fail(vctx_t *v, uint32_t t, uint32_t rank,
                            const ccs_op_t *op, uint32_t i, const char *fmt,
                            ...) CCS_PRINTF(6, 7);
static ccs_status_t op_fail(vctx_t *v, uint32_t t, uint32_t rank,
                            const ccs_op_t *op, uint32_t i, const char *fmt,
                            ...)
{
    char what[160], problem[320];
    va_list ap;

    ccs_op_desc(what, sizeof(what), op, i);
    va_start(ap, fmt);
    vsnprintf(problem, sizeof(problem), fmt, ap);
    va_end(ap);
    return ccs_err_set(v->err, CCS_ERR_VERIFY, "step %u, rank %u: %s: %s", t,
                       rank, what, problem);
}

/* Append "0, 3, 7" (at most LISTED_RANKS, then "... (N in all)") of the
 * ranks set in a & ~b (b may be NULL) to buf. */
static void fmt_ranks(char *buf, size_t len, const uint64_t *a,
                      const uint64_t *b, uint32_t W, uint32_t nranks)
{
    size_t used = strlen(buf);
    uint32_t listed = 0, total = 0;

    for (uint32_t w = 0; w < W; w++) {
        uint64_t x = a[w] & (b != NULL ? ~b[w] : ~UINT64_C(0));
        while (x != 0) {
            uint32_t r = w * 64 + (uint32_t)__builtin_ctzll(x);
            x &= x - 1;
            if (r >= nranks)
                continue;
            total++;
            if (listed < LISTED_RANKS && used < len) {
                int k = snprintf(buf + used, len - used, "%s%u",
                                 listed ? ", " : "", r);
                used += k > 0 ? (size_t)k : 0;
                listed++;
            }
        }
    }
    if (total > listed && used < len)
        snprintf(buf + used, len - used, ", ... (%u in all)", total);
}

/* ---- Cell state ---- */

static vcells_t *cells_of(vctx_t *v, uint32_t rank, unsigned b)
{
    return &v->cells[(size_t)rank * VB_COUNT +
                     (b == CCS_BUF_OUT ? VB_OUT : VB_SCRATCH)];
}

static uint32_t buf_len(const ccs_sched_t *s, unsigned b)
{
    return b == CCS_BUF_SCRATCH ? s->nscratch : s->nchunks;
}

/* Allocate (rank, b)'s cells on first use: all unwritten, no stamps. */
static ccs_status_t cells_alloc(vctx_t *v, uint32_t rank, unsigned b,
                                vcells_t **out)
{
    vcells_t *c = cells_of(v, rank, b);
    uint64_t n = buf_len(v->s, b);
    uint64_t bytes = n * ((uint64_t)v->W * 8 + sizeof(uint32_t));

    if (c->bits == NULL) {
        if (v->mem + bytes > VERIFY_MEM_LIMIT)
            return ccs_err_set(v->err, CCS_ERR_NOMEM,
                               "verifier state would exceed %llu MiB (%u "
                               "ranks, %u chunks, %u scratch chunks)",
                               (unsigned long long)(VERIFY_MEM_LIMIT >> 20),
                               v->s->nranks, v->s->nchunks, v->s->nscratch);
        /* One block owned by c->bits: the sets first (8-byte aligned),
         * then origin1.  calloc leaves the pages untouched until a cell is
         * written. */
        c->bits = calloc(1, (size_t)bytes);
        if (c->bits == NULL)
            return ccs_err_set(v->err, CCS_ERR_NOMEM,
                               "out of memory for verifier state (%llu "
                               "bytes for rank %u %s)",
                               (unsigned long long)bytes, rank,
                               ccs_buf_str((ccs_buf_t)b));
        c->origin1 = (uint32_t *)(c->bits + n * v->W);
        v->mem += bytes;
    }
    *out = c;
    return CCS_OK;
}

/* The value of (rank, b, chunk); false when it was never written. */
static bool val_get(const vctx_t *v, uint32_t rank, unsigned b,
                    uint32_t chunk, vval_t *out)
{
    const vcells_t *c;

    if (b == CCS_BUF_IN) {
        if (!ccs_coll_in_valid(v->s, rank, chunk))
            return false;
        out->origin = chunk;
        out->bits = NULL;
        out->single = rank;
        return true;
    }
    c = &v->cells[(size_t)rank * VB_COUNT +
                  (b == CCS_BUF_OUT ? VB_OUT : VB_SCRATCH)];
    if (c->bits == NULL || c->origin1[chunk] == 0)
        return false;
    out->origin = c->origin1[chunk] - 1;
    out->bits = c->bits + (size_t)chunk * v->W;
    out->single = 0;
    return true;
}

static bool val_has(const vval_t *a, uint32_t rank)
{
    if (a->bits == NULL)
        return a->single == rank;
    return (a->bits[rank / 64] >> (rank % 64)) & 1u;
}

/* A rank in both sets, or -1 when they are disjoint. */
static int64_t val_overlap(const vval_t *a, const vval_t *b, uint32_t W)
{
    if (a->bits == NULL)
        return val_has(b, a->single) ? (int64_t)a->single : -1;
    if (b->bits == NULL)
        return val_has(a, b->single) ? (int64_t)b->single : -1;
    for (uint32_t w = 0; w < W; w++) {
        uint64_t x = a->bits[w] & b->bits[w];
        if (x != 0)
            return (int64_t)w * 64 + __builtin_ctzll(x);
    }
    return -1;
}

/* d = a's set (d may be a's own storage). */
static void set_store(uint64_t *d, const vval_t *a, uint32_t W)
{
    if (a->bits == NULL) {
        memset(d, 0, (size_t)W * sizeof(uint64_t));
        d[a->single / 64] |= UINT64_C(1) << (a->single % 64);
    } else if (a->bits != d) {
        memcpy(d, a->bits, (size_t)W * sizeof(uint64_t));
    }
}

static void set_or(uint64_t *d, const vval_t *b, uint32_t W)
{
    if (b->bits == NULL) {
        d[b->single / 64] |= UINT64_C(1) << (b->single % 64);
        return;
    }
    for (uint32_t w = 0; w < W; w++)
        d[w] |= b->bits[w];
}

/* ---- Pre-pass: ops by step, per-step counts for the report ---- */

static ccs_status_t index_ops(vctx_t *v, verify_report_t *rep)
{
    const ccs_sched_t *s = v->s;
    uint64_t total = ccs_sched_total_ops(s);

    if (total >= UINT32_MAX)
        return ccs_err_set(v->err, CCS_ERR_UNSUPPORTED,
                           "%llu ops: too many for the verifier",
                           (unsigned long long)total);
    /* All owned by v, freed by vctx_free. */
    v->step_start = calloc((size_t)s->nsteps + 1, sizeof(uint32_t));
    v->order = malloc((size_t)(total ? total : 1) * sizeof(vref_t));
    if (v->step_start == NULL || v->order == NULL)
        return ccs_err_set(v->err, CCS_ERR_NOMEM,
                           "out of memory indexing %llu ops",
                           (unsigned long long)total);

    rep->one_port = true;
    for (uint32_t r = 0; r < s->nranks; r++) {
        const ccs_op_t *ops = s->rank_ops[r];
        uint32_t n = s->rank_nops[r], sends = 0, recvs = 0;

        for (uint32_t i = 0; i < n; i++) {
            if (i > 0 && ops[i].step != ops[i - 1].step)
                sends = recvs = 0;
            v->step_start[ops[i].step + 1]++;
            if (ops[i].kind == CCS_OP_SEND) {
                sends++;
                rep->chunk_transfers += ops[i].nchunks;
            } else if (ops[i].kind == CCS_OP_RECV ||
                       ops[i].kind == CCS_OP_RECV_REDUCE) {
                recvs++;
            }
            if (sends > rep->max_sends_per_step)
                rep->max_sends_per_step = sends;
            if (recvs > rep->max_recvs_per_step)
                rep->max_recvs_per_step = recvs;
        }
    }
    rep->one_port = rep->max_sends_per_step <= 1 &&
                    rep->max_recvs_per_step <= 1;
    rep->nsteps = s->nsteps;
    rep->nops = total;

    /* Counting sort by step; ranks and their ops in order, so it is stable:
     * step t holds (rank, op order). */
    for (uint32_t t = 0; t < s->nsteps; t++)
        v->step_start[t + 1] += v->step_start[t];
    for (uint32_t r = 0; r < s->nranks; r++) {
        for (uint32_t i = 0; i < s->rank_nops[r]; i++) {
            uint32_t p = v->step_start[s->rank_ops[r][i].step]++;
            v->order[p].rank = r;
            v->order[p].idx = i;
        }
    }
    for (uint32_t t = s->nsteps; t > 0; t--)
        v->step_start[t] = v->step_start[t - 1];
    v->step_start[0] = 0;
    return CCS_OK;
}

/* ---- Pass 1: reads ---- */

/* Check that (rank, b, chunk) holds a value. */
static ccs_status_t read_cell(vctx_t *v, uint32_t t, uint32_t rank,
                              const ccs_op_t *op, uint32_t i, unsigned b,
                              uint32_t chunk)
{
    vval_t val;

    if (!val_get(v, rank, b, chunk, &val)) {
        if (b == CCS_BUF_IN)
            return op_fail(v, t, rank, op, i,
                           "reads in[%u], which holds no input on this rank "
                           "in %s (never written)", chunk,
                           ccs_coll_str(v->s->coll));
        return op_fail(v, t, rank, op, i,
                       "reads %s[%u], which was never written",
                       ccs_buf_str((ccs_buf_t)b), chunk);
    }
    return CCS_OK;
}

static ccs_status_t read_step(vctx_t *v, uint32_t t)
{
    bool reduces = ccs_coll_reduces(v->s->coll);
    ccs_status_t st;

    for (uint32_t p = v->step_start[t]; p < v->step_start[t + 1]; p++) {
        const ccs_op_t *op = op_at(v, p);
        uint32_t rank = v->order[p].rank;

        if ((op->kind == CCS_OP_RECV_REDUCE ||
             op->kind == CCS_OP_REDUCE_LOCAL) && !reduces)
            return op_fail(v, t, rank, op, 0,
                           "reduction in %s, which does not reduce",
                           ccs_coll_str(v->s->coll));
        for (uint32_t i = 0; i < op->nchunks; i++) {
            switch (op->kind) {
            case CCS_OP_SEND:
                st = read_cell(v, t, rank, op, i, op->buf, op->chunk + i);
                break;
            case CCS_OP_RECV_REDUCE:
            case CCS_OP_COPY:
                st = read_cell(v, t, rank, op, i, op->src_buf,
                               op->src_chunk + i);
                break;
            case CCS_OP_REDUCE_LOCAL:
                /* Reducing a cell with itself is left to the data check,
                 * which reports it as reduced twice. */
                st = read_cell(v, t, rank, op, i, op->buf, op->chunk + i);
                if (st == CCS_OK)
                    st = read_cell(v, t, rank, op, i, op->src_buf,
                                   op->src_chunk + i);
                break;
            default: /* RECV reads only the wire */
                st = CCS_OK;
                break;
            }
            if (st != CCS_OK)
                return st;
        }
    }
    return CCS_OK;
}

/* ---- Pass 2: hazards ---- */

/* Every rank's ops of step t, one rank at a time (order[] holds them in
 * (rank, op order), and a rank's ops of one step are contiguous). */
static ccs_status_t hazard_step(vctx_t *v, uint32_t t)
{
    uint32_t p = v->step_start[t], end = v->step_start[t + 1];

    while (p < end) {
        uint32_t rank = v->order[p].rank, q = p;
        ccs_status_t st;
        while (q < end && v->order[q].rank == rank)
            q++;
        st = ccs_sched_step_hazard(op_at(v, p), q - p, t, rank,
                                   CCS_ERR_VERIFY, v->err);
        if (st != CCS_OK)
            return st;
        p = q;
    }
    return CCS_OK;
}

/* ---- Pass 3: writes ---- */

static ccs_status_t out_range_fail(vctx_t *v, uint32_t t, uint32_t rank,
                                   const ccs_op_t *op, uint32_t i)
{
    const ccs_sched_t *s = v->s;
    uint32_t chunk = op->chunk + i;

    if (s->coll == CCS_COLL_REDUCESCATTER) {
        uint32_t b = ccs_coll_block(s->coll, s->nranks, s->nchunks);
        return op_fail(v, t, rank, op, i,
                       "writes out[%u] outside its block out[%u..%u]", chunk,
                       rank * b, rank * b + b - 1);
    }
    if (s->coll == CCS_COLL_REDUCE)
        return op_fail(v, t, rank, op, i,
                       "writes out[%u] outside its valid range (only the "
                       "root, rank %d, has OUT in reduce)", chunk, s->root);
    return op_fail(v, t, rank, op, i, "writes out[%u] outside its valid range",
                   chunk);
}

static ccs_status_t write_elem(vctx_t *v, uint32_t t, uint32_t p,
                               const ccs_op_t *op, uint32_t i)
{
    uint32_t rank = v->order[p].rank;
    uint32_t dc = op->chunk + i;
    vcells_t *c = NULL;
    vval_t a, x;
    uint64_t *d;
    ccs_status_t st;

    if (op->buf == CCS_BUF_OUT && !ccs_coll_out_valid(v->s, rank, dc))
        return out_range_fail(v, t, rank, op, i);
    st = cells_alloc(v, rank, op->buf, &c);
    if (st != CCS_OK)
        return st;
    if (c->origin1[dc] == 0 && op->buf == CCS_BUF_OUT) {
        if (c->nwritten == c->wcap) {
            uint32_t ncap = c->wcap ? 2 * c->wcap : 64;
            uint32_t *nw = realloc(c->written, (size_t)ncap * sizeof(*nw));
            if (nw == NULL)
                return ccs_err_set(v->err, CCS_ERR_NOMEM, "out of memory");
            c->written = nw;
            c->wcap = ncap;
        }
        c->written[c->nwritten++] = dc;
    }

    /* x: the incoming operand; a: the local one when the op reduces.  Both
     * were checked readable in pass 2 (sends by their own op). */
    switch (op->kind) {
    case CCS_OP_RECV:
    case CCS_OP_RECV_REDUCE: {
        uint32_t peer = (uint32_t)op->peer;
        uint32_t mate = v->pair.mate[v->pair.base[rank] + v->order[p].idx];
        const ccs_op_t *so =
            &v->s->rank_ops[peer][mate - v->pair.base[peer]];
        if (!val_get(v, peer, so->buf, so->chunk + i, &x))
            return ccs_err_set(v->err, CCS_ERR_INTERNAL,
                               "step %u: matched send not readable", t);
        if (op->kind == CCS_OP_RECV_REDUCE &&
            !val_get(v, rank, op->src_buf, op->src_chunk + i, &a))
            return ccs_err_set(v->err, CCS_ERR_INTERNAL,
                               "step %u: operand not readable", t);
        break;
    }
    case CCS_OP_COPY:
        if (!val_get(v, rank, op->src_buf, op->src_chunk + i, &x))
            return ccs_err_set(v->err, CCS_ERR_INTERNAL,
                               "step %u: operand not readable", t);
        break;
    default: /* REDUCE_LOCAL: buf = buf (+) src */
        if (!val_get(v, rank, op->buf, dc, &a) ||
            !val_get(v, rank, op->src_buf, op->src_chunk + i, &x))
            return ccs_err_set(v->err, CCS_ERR_INTERNAL,
                               "step %u: operand not readable", t);
        break;
    }

    d = c->bits + (size_t)dc * v->W;
    if (op->kind == CCS_OP_RECV || op->kind == CCS_OP_COPY) {
        set_store(d, &x, v->W);
        c->origin1[dc] = x.origin + 1;
    } else {
        int64_t dup;
        if (a.origin != x.origin)
            return op_fail(v, t, rank, op, i,
                           "combines chunk %u with chunk %u", a.origin,
                           x.origin);
        dup = val_overlap(&a, &x, v->W);
        if (dup >= 0)
            return op_fail(v, t, rank, op, i,
                           "contribution of rank %lld already present "
                           "(reduced twice)", (long long)dup);
        /* d is a's storage or a cell no operand lives in (pass 3 order). */
        set_store(d, &a, v->W);
        set_or(d, &x, v->W);
        c->origin1[dc] = a.origin + 1;
    }
    return CCS_OK;
}

static ccs_status_t write_step(vctx_t *v, uint32_t t)
{
    ccs_status_t st;

    for (uint32_t p = v->step_start[t]; p < v->step_start[t + 1]; p++) {
        const ccs_op_t *op = op_at(v, p);
        if (op->kind == CCS_OP_SEND)
            continue;
        for (uint32_t i = 0; i < op->nchunks; i++) {
            st = write_elem(v, t, p, op, i);
            if (st != CCS_OK)
                return st;
        }
    }
    return CCS_OK;
}

/* ---- Postcondition ---- */

/* What OUT_r[c] must hold: origin *origin and the set of all ranks
 * (*single == -1) or {*single}. */
static void expected(const ccs_sched_t *s, uint32_t r, uint32_t c,
                     uint32_t *origin, int64_t *single)
{
    uint32_t b = ccs_coll_block(s->coll, s->nranks, s->nchunks);

    *origin = c;
    *single = -1;
    switch (s->coll) {
    case CCS_COLL_ALLGATHER:
        *single = c / b;
        break;
    case CCS_COLL_BROADCAST:
        *single = s->root;
        break;
    case CCS_COLL_ALLTOALL:
        *single = c / b;
        *origin = r * b + c % b;
        break;
    default: /* allreduce, reducescatter, reduce: everything */
        break;
    }
}

/* Describe what is wrong with OUT_r[c] into buf; false when it is right.
 * all: the set of every rank; want: W words of room. */
static bool check_out(vctx_t *v, uint32_t r, uint32_t c,
                      const uint64_t *all, uint64_t *want, char *buf,
                      size_t len)
{
    const ccs_sched_t *s = v->s;
    uint32_t W = v->W, origin;
    int64_t single;
    vval_t val;
    const uint64_t *have;
    bool missing = false, extra = false;

    expected(s, r, c, &origin, &single);
    if (!val_get(v, r, CCS_BUF_OUT, c, &val)) {
        snprintf(buf, len, "end: rank %u out[%u] was never written "
                 "(%s needs it)", r, c, ccs_coll_str(s->coll));
        return true;
    }
    if (val.origin != origin) {
        snprintf(buf, len, "end: rank %u out[%u] holds chunk %u, not chunk "
                 "%u (%s)", r, c, val.origin, origin, ccs_coll_str(s->coll));
        return true;
    }
    /* want = expected set; have = the stored one (never a singleton view:
     * OUT cells are stored). */
    if (single < 0) {
        memcpy(want, all, (size_t)W * sizeof(uint64_t));
    } else {
        memset(want, 0, (size_t)W * sizeof(uint64_t));
        want[single / 64] |= UINT64_C(1) << (single % 64);
    }
    have = val.bits;
    for (uint32_t w = 0; w < W; w++) {
        missing |= (want[w] & ~have[w]) != 0;
        extra |= (have[w] & ~want[w]) != 0;
    }
    if (!missing && !extra)
        return false;
    snprintf(buf, len, "end: rank %u out[%u] (%s)", r, c,
             ccs_coll_str(s->coll));
    if (missing) {
        strncat(buf, " misses contributions of ranks ",
                len - strlen(buf) - 1);
        fmt_ranks(buf, len, want, have, W, s->nranks);
    }
    if (extra) {
        strncat(buf, missing ? "; holds unexpected contributions of ranks "
                             : " holds unexpected contributions of ranks ",
                len - strlen(buf) - 1);
        fmt_ranks(buf, len, have, want, W, s->nranks);
    }
    return true;
}

/* Rank r's OUT: how many valid chunks are wrong (*wrong) and, when any
 * is, the message for the first in chunk order (into msg).  Visits only
 * cells that were written: an unwritten valid chunk is wrong by count,
 * and the first one is found by walking up from the span's start over
 * written cells only. */
static void check_rank_out(vctx_t *v, uint32_t r, const uint64_t *all,
                           uint64_t *want, char *msg, size_t len,
                           uint64_t *wrong, uint64_t *valid)
{
    const vcells_t *c = cells_of(v, r, CCS_BUF_OUT);
    uint32_t lo, hi, first = UINT32_MAX, nvalid;
    char tmp[CCS_ERR_MSG_MAX];

    ccs_coll_valid_span(v->s, r, true, &lo, &hi);
    nvalid = hi > lo ? hi - lo : 0;
    *valid = nvalid;
    *wrong = 0;
    if (nvalid == 0)
        return;
    /* Every written OUT cell is valid (pass 3 refuses the others). */
    *wrong = nvalid - (c->bits ? c->nwritten : 0);
    if (*wrong > 0) {
        first = lo;
        while (c->bits != NULL && c->origin1[first] != 0)
            first++;
    }
    for (uint32_t k = 0; c->bits != NULL && k < c->nwritten; k++) {
        uint32_t ch = c->written[k];
        if (check_out(v, r, ch, all, want, tmp, sizeof(tmp))) {
            (*wrong)++;
            if (ch < first)
                first = ch;
        }
    }
    if (*wrong > 0)
        check_out(v, r, first, all, want, msg, len);
}

static ccs_status_t check_end(vctx_t *v)
{
    const ccs_sched_t *s = v->s;
    char first[CCS_ERR_MSG_MAX], msg[CCS_ERR_MSG_MAX];
    /* Owned here: all = every rank's bit, want = room for one set. */
    uint64_t *all = calloc(2 * (size_t)v->W, sizeof(uint64_t));
    uint64_t *want = all + v->W;
    uint64_t wrong = 0, valid = 0;

    if (all == NULL)
        return ccs_err_set(v->err, CCS_ERR_NOMEM, "out of memory");
    for (uint32_t q = 0; q < s->nranks; q++)
        all[q / 64] |= UINT64_C(1) << (q % 64);
    first[0] = '\0';
    for (uint32_t r = 0; r < s->nranks; r++) {
        uint64_t w, n;
        check_rank_out(v, r, all, want, wrong ? msg : first, sizeof(first),
                       &w, &n);
        wrong += w;
        valid += n;
    }
    free(all);
    if (wrong == 0)
        return CCS_OK;
    if (wrong > 1)
        return ccs_err_set(v->err, CCS_ERR_VERIFY,
                           "%s (%llu of %llu output chunks wrong)", first,
                           (unsigned long long)wrong,
                           (unsigned long long)valid);
    return ccs_err_set(v->err, CCS_ERR_VERIFY, "%s", first);
}

/* ---- Entry point ---- */

static void vctx_free(vctx_t *v)
{
    if (v->cells != NULL) {
        for (size_t i = 0; i < (size_t)v->s->nranks * VB_COUNT; i++) {
            free(v->cells[i].bits);
            free(v->cells[i].written);
        }
    }
    free(v->cells);
    free(v->order);
    free(v->step_start);
    ccs_pairing_free(&v->pair);
}

ccs_status_t verify_sched(const ccs_sched_t *s, verify_report_t *rep,
                          ccs_err_t *err)
{
    vctx_t v;
    verify_report_t r;
    ccs_status_t st;

    st = ccs_sched_validate(s, err);
    if (st != CCS_OK)
        return st;
    memset(&v, 0, sizeof(v));
    memset(&r, 0, sizeof(r));
    v.s = s;
    v.err = err;
    v.W = (s->nranks + 63) / 64;
    /* Owned by v; each entry's arrays are allocated on first write. */
    v.cells = calloc((size_t)s->nranks * VB_COUNT, sizeof(vcells_t));
    if (v.cells == NULL) {
        st = ccs_err_set(err, CCS_ERR_NOMEM, "out of memory");
        goto cleanup;
    }
    st = index_ops(&v, &r);
    if (st == CCS_OK)
        st = ccs_sched_pair(s, CCS_ERR_VERIFY, &v.pair, err);
    if (st != CCS_OK)
        goto cleanup;
    for (uint32_t t = 0; t < s->nsteps; t++) {
        st = read_step(&v, t);
        if (st == CCS_OK)
            st = hazard_step(&v, t);
        if (st == CCS_OK)
            st = write_step(&v, t);
        if (st != CCS_OK)
            goto cleanup;
    }
    st = check_end(&v);
    if (st == CCS_OK && rep != NULL)
        *rep = r;

cleanup:
    vctx_free(&v);
    return st;
}
