/*
 * verify_col.c - executes one data-flow column at a time (verify_int.h)
 * and checks its share of the postcondition.
 *
 * A column's pieces run step by step, as the whole schedule would:
 *   1. reads: every operand read must hold a value;
 *   (2. hazards are the same for every column: verify.c checks them once)
 *   3. writes: each destination cell is checked against the OUT range,
 *      then the new value is computed and stored at once.  Storing at once
 *      is sound: a cell written in a step was read by no other op of the
 *      step (the hazard check), so every value computed is the pre-step
 *      one.
 * Only the column's cells are live: a slot (origin and rank set) per cell
 * it writes, found through a rank x stateful-segment table that is reset
 * cell by cell when the column is done.  Each column keeps its first
 * failure; the earliest over all columns (vkey_t order) is what a
 * step-by-step execution of the whole schedule would have stopped at.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "verify_int.h"

/* Rank lists in messages stop after this many. */
#define LISTED_RANKS 8

/* A value as read: a stored cell's set, or the singleton {single}.
 * origin: the origin chunk of the segment's first chunk. */
typedef struct vval {
    uint32_t origin;
    const uint64_t *bits; /* NULL: the set is {single} */
    uint32_t single;
} vval_t;

bool vkey_less(const vkey_t *a, const vkey_t *b)
{
    if (a->step != b->step)
        return a->step < b->step;
    if (a->pass != b->pass)
        return a->pass < b->pass;
    if (a->f != b->f)
        return a->f < b->f;
    if (a->elem != b->elem)
        return a->elem < b->elem;
    return a->sub < b->sub;
}

/* ---- Messages ---- */

/* Record "step T, rank R: <op element i>: <problem>" when it comes before
 * every failure seen so far; always returns CCS_ERR_VERIFY so the column
 * stops (its later failures come after this one). */
static ccs_status_t op_fail(vctx_t *v, vkey_t key, ccs_status_t status,
                            uint32_t rank, const ccs_op_t *op,
                            const char *fmt, ...) CCS_PRINTF(6, 7);
static ccs_status_t op_fail(vctx_t *v, vkey_t key, ccs_status_t status,
                            uint32_t rank, const ccs_op_t *op,
                            const char *fmt, ...)
{
    char what[160], problem[320];
    va_list ap;

    if (v->step_fail.set && !vkey_less(&key, &v->step_fail.key))
        return CCS_ERR_VERIFY;
    ccs_op_desc(what, sizeof(what), op, key.elem);
    va_start(ap, fmt);
    vsnprintf(problem, sizeof(problem), fmt, ap);
    va_end(ap);
    snprintf(v->step_fail.msg, sizeof(v->step_fail.msg),
             "step %u, rank %u: %s: %s", key.step, rank, what, problem);
    v->step_fail.set = true;
    v->step_fail.key = key;
    v->step_fail.st = status;
    return CCS_ERR_VERIFY;
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

/* ---- Cells ---- */

/* (rank, g) in the slot table, segment-major. */
static size_t cell_of(const vctx_t *v, uint32_t rank, uint32_t g)
{
    return (size_t)v->tcol[g] * v->s->nranks + rank;
}

/* The value of (rank, b) over segment g; false when it was never written
 * (in this column, which is the same: see verify_seg.c). */
static bool val_get(const vctx_t *v, uint32_t rank, unsigned b, uint32_t g,
                    vval_t *out)
{
    uint32_t sl;

    if (b == CCS_BUF_IN) {
        uint32_t c = vseg_lo(v, g);
        if (!ccs_coll_in_valid(v->s, rank, c))
            return false;
        out->origin = c;
        out->bits = NULL;
        out->single = rank;
        return true;
    }
    if (v->tcol[g] == VNONE)
        return false;
    sl = v->slot[cell_of(v, rank, g)];
    if (sl == 0)
        return false;
    out->origin = v->sorigin[sl - 1];
    out->bits = v->bits + (size_t)(sl - 1) * v->W;
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

/* The slot of (rank, g), made on first write (unwritten: origin 0 is set
 * by the caller with the value). */
static ccs_status_t slot_for_write(vctx_t *v, uint32_t rank, uint32_t g,
                                   uint32_t *out)
{
    size_t cell = cell_of(v, rank, g);

    if (v->slot[cell] == 0) {
        if (v->nslots == v->slotcap) {
            uint32_t ncap = v->slotcap ? 2 * v->slotcap : 256;
            uint64_t bytes = (uint64_t)ncap * ((uint64_t)v->W * 8 + 16);
            uint64_t *nb;
            uint32_t *no, *nc, *nw;
            if (bytes > VERIFY_MEM_LIMIT)
                return ccs_err_set(v->err, CCS_ERR_NOMEM,
                                   "verifier state would exceed %llu MiB "
                                   "(%u ranks, %u chunks, %u scratch "
                                   "chunks: one data-flow column holds %u "
                                   "cells of %u bytes)",
                                   (unsigned long long)(VERIFY_MEM_LIMIT >>
                                                        20),
                                   v->s->nranks, v->s->nchunks,
                                   v->s->nscratch, v->nslots,
                                   v->W * 8 + 16);
            nb = realloc(v->bits, (size_t)ncap * v->W * sizeof(uint64_t));
            if (nb != NULL)
                v->bits = nb;
            no = realloc(v->sorigin, (size_t)ncap * sizeof(uint32_t));
            if (no != NULL)
                v->sorigin = no;
            nc = realloc(v->scell, (size_t)ncap * sizeof(uint32_t));
            if (nc != NULL)
                v->scell = nc;
            nw = realloc(v->swriter, (size_t)ncap * sizeof(uint32_t));
            if (nw != NULL)
                v->swriter = nw;
            if (nb == NULL || no == NULL || nc == NULL || nw == NULL)
                return ccs_err_set(v->err, CCS_ERR_NOMEM,
                                   "out of memory for verifier state "
                                   "(%llu bytes)", (unsigned long long)bytes);
            v->slotcap = ncap;
        }
        v->scell[v->nslots] = (uint32_t)cell;
        v->slot[cell] = ++v->nslots;
    }
    *out = v->slot[cell] - 1;
    return CCS_OK;
}

/* ---- One piece ---- */

/* Entry i of the column lists, looked up. */
static void piece_of(const vctx_t *v, size_t i, vpiece_t *p)
{
    const uint32_t *e = &v->ent[VENT * i];
    uint32_t pid = e[0], f = vpiece_op(v, pid);

    p->pid = pid;
    p->f = f;
    p->rank = e[1];
    p->xsend = e[2];
    p->op = vop_at(v, p->rank, f);
    p->g = vseg_find(v, vspace_of(p->op->buf), p->op->chunk) +
           (pid - vpiece_first(v, f));
    p->e = vseg_lo(v, p->g) - p->op->chunk;
}

static vkey_t key_of(const vpiece_t *p, uint32_t pass, uint32_t sub)
{
    vkey_t k = { p->op->step, pass, p->f, p->e, sub };
    return k;
}

/* The segment of (buf at chunk + e) on the op's other side. */
static uint32_t seg_at(const vctx_t *v, unsigned buf, uint32_t chunk)
{
    return vseg_find(v, vspace_of(buf), chunk);
}

static ccs_status_t read_cell(vctx_t *v, const vpiece_t *p, unsigned b,
                              uint32_t chunk)
{
    vval_t val;

    if (val_get(v, p->rank, b, seg_at(v, b, chunk), &val))
        return CCS_OK;
    if (b == CCS_BUF_IN)
        return op_fail(v, key_of(p, 1, 1), CCS_ERR_VERIFY, p->rank, p->op,
                       "reads in[%u], which holds no input on this rank "
                       "in %s (never written)", chunk,
                       ccs_coll_str(v->s->coll));
    return op_fail(v, key_of(p, 1, 1), CCS_ERR_VERIFY, p->rank, p->op,
                   "reads %s[%u], which was never written",
                   ccs_buf_str((ccs_buf_t)b), chunk);
}

static ccs_status_t read_piece(vctx_t *v, const vpiece_t *p)
{
    const ccs_op_t *op = p->op;
    ccs_status_t st;

    if ((op->kind == CCS_OP_RECV_REDUCE ||
         op->kind == CCS_OP_REDUCE_LOCAL) && !ccs_coll_reduces(v->s->coll)) {
        vkey_t k = { op->step, 1, p->f, 0, 0 };
        return op_fail(v, k, CCS_ERR_VERIFY, p->rank, op,
                       "reduction in %s, which does not reduce",
                       ccs_coll_str(v->s->coll));
    }
    switch (op->kind) {
    case CCS_OP_SEND:
        return read_cell(v, p, op->buf, op->chunk + p->e);
    case CCS_OP_RECV_REDUCE:
    case CCS_OP_COPY:
        return read_cell(v, p, op->src_buf, op->src_chunk + p->e);
    case CCS_OP_REDUCE_LOCAL:
        /* Reducing a cell with itself is left to the data check, which
         * reports it as reduced twice. */
        st = read_cell(v, p, op->buf, op->chunk + p->e);
        if (st == CCS_OK)
            st = read_cell(v, p, op->src_buf, op->src_chunk + p->e);
        return st;
    default: /* RECV reads only the wire */
        return CCS_OK;
    }
}

static ccs_status_t out_range_fail(vctx_t *v, const vpiece_t *p)
{
    const ccs_sched_t *s = v->s;
    uint32_t chunk = p->op->chunk + p->e;
    vkey_t k = key_of(p, 3, 0);

    if (s->coll == CCS_COLL_REDUCESCATTER) {
        uint32_t b = ccs_coll_block(s->coll, s->nranks, s->nchunks);
        return op_fail(v, k, CCS_ERR_VERIFY, p->rank, p->op,
                       "writes out[%u] outside its block out[%u..%u]", chunk,
                       p->rank * b, p->rank * b + b - 1);
    }
    if (s->coll == CCS_COLL_REDUCE)
        return op_fail(v, k, CCS_ERR_VERIFY, p->rank, p->op,
                       "writes out[%u] outside its valid range (only the "
                       "root, rank %d, has OUT in reduce)", chunk, s->root);
    return op_fail(v, k, CCS_ERR_VERIFY, p->rank, p->op,
                   "writes out[%u] outside its valid range", chunk);
}

static ccs_status_t write_piece(vctx_t *v, const vpiece_t *p)
{
    const ccs_op_t *op = p->op;
    uint32_t rank = p->rank, e = p->e, sl = 0;
    vval_t a, x;
    uint64_t *d;
    ccs_status_t st;

    if (op->buf == CCS_BUF_OUT &&
        !ccs_coll_out_valid(v->s, rank, op->chunk + e))
        return out_range_fail(v, p);
    /* The slot first: making it may move every stored set. */
    st = slot_for_write(v, rank, p->g, &sl);
    if (st != CCS_OK)
        return st;
    v->swriter[sl] = p->pid;

    /* x: the incoming operand; a: the local one when the op reduces.  Both
     * were checked readable in pass 1 (sends by their own piece, which is
     * in this column). */
    switch (op->kind) {
    case CCS_OP_RECV:
    case CCS_OP_RECV_REDUCE: {
        unsigned sb = vsend_buf(p->xsend);
        if (!val_get(v, (uint32_t)op->peer, sb,
                     seg_at(v, sb, vsend_chunk(p->xsend) + e), &x))
            return op_fail(v, key_of(p, 3, 1), CCS_ERR_INTERNAL, rank, op,
                           "matched send not readable");
        if (op->kind == CCS_OP_RECV_REDUCE &&
            !val_get(v, rank, op->src_buf,
                     seg_at(v, op->src_buf, op->src_chunk + e), &a))
            return op_fail(v, key_of(p, 3, 1), CCS_ERR_INTERNAL, rank, op,
                           "operand not readable");
        break;
    }
    case CCS_OP_COPY:
        if (!val_get(v, rank, op->src_buf,
                     seg_at(v, op->src_buf, op->src_chunk + e), &x))
            return op_fail(v, key_of(p, 3, 1), CCS_ERR_INTERNAL, rank, op,
                           "operand not readable");
        break;
    default: /* REDUCE_LOCAL: buf = buf (+) src */
        if (!val_get(v, rank, op->buf, p->g, &a) ||
            !val_get(v, rank, op->src_buf,
                     seg_at(v, op->src_buf, op->src_chunk + e), &x))
            return op_fail(v, key_of(p, 3, 1), CCS_ERR_INTERNAL, rank, op,
                           "operand not readable");
        break;
    }

    d = v->bits + (size_t)sl * v->W;
    if (op->kind == CCS_OP_RECV || op->kind == CCS_OP_COPY) {
        set_store(d, &x, v->W);
        v->sorigin[sl] = x.origin;
    } else {
        int64_t dup;
        if (a.origin != x.origin)
            return op_fail(v, key_of(p, 3, 1), CCS_ERR_VERIFY, rank, op,
                           "combines chunk %u with chunk %u", a.origin,
                           x.origin);
        dup = val_overlap(&a, &x, v->W);
        if (dup >= 0)
            return op_fail(v, key_of(p, 3, 1), CCS_ERR_VERIFY, rank, op,
                           "contribution of rank %lld already present "
                           "(reduced twice)", (long long)dup);
        /* d is a's storage or a cell no operand lives in (hazard check). */
        set_store(d, &a, v->W);
        set_or(d, &x, v->W);
        v->sorigin[sl] = a.origin;
    }
    return CCS_OK;
}

/* How many pieces (or slots) ahead a column run fetches what they need. */
#define RUN_AHEAD 16

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

/* Describe what is wrong with OUT_r[c], which holds val, into buf; false
 * when it is right.  want: W words of room. */
static bool check_out(const vctx_t *v, uint32_t r, uint32_t c,
                      const vval_t *val, uint64_t *want, char *buf,
                      size_t len)
{
    const ccs_sched_t *s = v->s;
    uint32_t W = v->W, origin;
    int64_t single;
    const uint64_t *have = val->bits;
    bool missing = false, extra = false;

    expected(s, r, c, &origin, &single);
    if (val->origin != origin) {
        snprintf(buf, len, "end: rank %u out[%u] holds chunk %u, not chunk "
                 "%u (%s)", r, c, val->origin, origin,
                 ccs_coll_str(s->coll));
        return true;
    }
    memset(want, 0, (size_t)W * sizeof(uint64_t));
    if (single < 0) {
        for (uint32_t q = 0; q < s->nranks / 64; q++)
            want[q] = ~UINT64_C(0);
        if (s->nranks % 64)
            want[s->nranks / 64] = (UINT64_C(1) << (s->nranks % 64)) - 1;
    } else {
        want[single / 64] |= UINT64_C(1) << (single % 64);
    }
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

static bool end_before(const vctx_t *v, uint32_t r, uint32_t c)
{
    return !v->end_set || r < v->end_rank ||
           (r == v->end_rank && c < v->end_chunk);
}

/* The OUT cells whose final value this column wrote: count them, check
 * them, keep the first wrong one in (rank, chunk) order. */
static void check_column_end(vctx_t *v, uint32_t k, uint64_t *want)
{
    char tmp[CCS_ERR_MSG_MAX];

    for (uint32_t i = 0; i < v->nslots; i++) {
        uint32_t w = v->swriter[i];
        uint32_t rank = v->scell[i] % v->s->nranks;
        /* The writers are pieces from anywhere in the schedule. */
        if (i + RUN_AHEAD < v->nslots)
            __builtin_prefetch(&v->final[v->swriter[i + RUN_AHEAD] / 64]);
        uint32_t g = v->tseg[v->scell[i] / v->s->nranks];
        vval_t val;
        /* The column's last write to the cell is the final one when no
         * other column writes it later. */
        if (!((v->final[w / 64] >> (w % 64)) & 1u))
            continue;
        if (g >= v->sp[VS_SCRATCH].first)
            continue;
        v->written_out += vseg_hi(v, g) - vseg_lo(v, g);
        val.origin = v->sorigin[i];
        val.bits = v->bits + (size_t)i * v->W;
        val.single = 0;
        if (!check_out(v, rank, vseg_lo(v, g), &val, want, tmp,
                       sizeof(tmp)))
            continue;
        v->end_wrong += vseg_hi(v, g) - vseg_lo(v, g);
        if (end_before(v, rank, vseg_lo(v, g))) {
            v->end_set = true;
            v->end_rank = rank;
            v->end_chunk = vseg_lo(v, g);
            memcpy(v->end_msg, tmp, sizeof(tmp));
        }
    }
}

/* ---- Columns ---- */

static uint32_t stop_step(const vctx_t *v)
{
    uint32_t t = v->hazard_step;
    if (v->step_fail.set && v->step_fail.key.step < t)
        t = v->step_fail.key.step;
    return t;
}

/* Run column k's pieces step by step until its first failure.  A step's
 * pieces are looked up once for both passes (into v->grp), and the ops
 * ahead are prefetched: a column's ops lie on many ranks' arrays. */
static ccs_status_t run_column(vctx_t *v, uint32_t k, bool *failed)
{
    uint32_t a = v->comp_start[k], end = v->comp_start[k + 1];
    ccs_status_t st = CCS_OK;

    *failed = false;
    while (a < end && st == CCS_OK) {
        uint32_t t, n = 0, b;
        for (b = a; b < end; b++, n++) {
            /* The op ahead, in this column or the next ones (columns
             * can be a couple of pieces): a column's ops lie on many
             * ranks' arrays. */
            if (b + RUN_AHEAD < v->npieces) {
                const uint32_t *e = &v->ent[VENT * (size_t)(b + RUN_AHEAD)];
                __builtin_prefetch(vop_at(v, e[1], vpiece_op(v, e[0])));
            }
            if (n == v->grpcap) {
                uint32_t ncap = v->grpcap ? 2 * v->grpcap : 64;
                vpiece_t *ng = realloc(v->grp, ncap * sizeof(*ng));
                if (ng == NULL)
                    return ccs_err_set(v->err, CCS_ERR_NOMEM,
                                       "out of memory");
                v->grp = ng;
                v->grpcap = ncap;
            }
            piece_of(v, b, &v->grp[n]);
            if (v->grp[n].op->step != v->grp[0].op->step)
                break;
        }
        t = v->grp[0].op->step;
        if (t > stop_step(v))
            break;
        for (uint32_t i = 0; i < n && st == CCS_OK; i++)
            st = read_piece(v, &v->grp[i]);
        if (st != CCS_OK || t == v->hazard_step)
            break;
        for (uint32_t i = 0; i < n && st == CCS_OK; i++) {
            if (v->grp[i].op->kind != CCS_OP_SEND)
                st = write_piece(v, &v->grp[i]);
        }
        a = b;
    }
    if (st == CCS_ERR_VERIFY) {
        *failed = true;
        st = CCS_OK;
    }
    return st;
}

ccs_status_t vcol_run_all(vctx_t *v)
{
    size_t cells = (size_t)v->s->nranks * v->T;
    uint64_t *want = NULL;  /* owned here: one rank set of room */
    ccs_status_t st = CCS_OK;

    v->slot = calloc(cells ? cells : 1, sizeof(uint32_t));
    want = calloc(v->W ? v->W : 1, sizeof(uint64_t));
    if (v->slot == NULL || want == NULL) {
        free(want);
        return ccs_err_set(v->err, CCS_ERR_NOMEM,
                           "out of memory for verifier state");
    }
    for (uint32_t k = 0; k < v->ncomp && st == CCS_OK; k++) {
        bool failed;
        st = run_column(v, k, &failed);
        /* The end state matters only when no step fails anywhere. */
        if (st == CCS_OK && !failed && !v->step_fail.set &&
            v->hazard_step == VNONE)
            check_column_end(v, k, want);
        for (uint32_t i = 0; i < v->nslots; i++)
            v->slot[v->scell[i]] = 0;
        v->nslots = 0;
    }
    free(want);
    return st;
}

/* Rank r's first valid OUT chunk that no op wrote, or false. */
static bool first_unwritten(const vctx_t *v, uint32_t r, uint32_t *chunk)
{
    uint32_t lo, hi, g, last;

    ccs_coll_valid_span(v->s, r, true, &lo, &hi);
    if (lo >= hi)
        return false;
    g = vseg_find(v, VS_IO, lo);
    last = vseg_find(v, VS_IO, hi - 1);
    for (; g <= last; g++) {
        if (v->tcol[g] == VNONE ||
            v->lw[(size_t)r * v->T + v->tcol[g]] == VNONE) {
            *chunk = vseg_lo(v, g);
            return true;
        }
    }
    return false;
}

ccs_status_t vcol_verdict(vctx_t *v)
{
    const ccs_sched_t *s = v->s;
    uint64_t valid = 0, unwritten, wrong;

    if (v->hazard_step != VNONE &&
        (!v->step_fail.set || vkey_less(&v->hazard.key, &v->step_fail.key)))
        return ccs_err_set(v->err, v->hazard.st, "%s", v->hazard.msg);
    if (v->step_fail.set)
        return ccs_err_set(v->err, v->step_fail.st, "%s", v->step_fail.msg);
    for (uint32_t r = 0; r < s->nranks; r++) {
        uint32_t lo, hi;
        ccs_coll_valid_span(s, r, true, &lo, &hi);
        valid += hi > lo ? hi - lo : 0;
    }
    /* Every written OUT cell is valid (the writes pass refuses others), so
     * what was not checked was never written. */
    unwritten = valid - v->written_out;
    for (uint32_t r = 0; unwritten > 0 && r < s->nranks; r++) {
        uint32_t c;
        if (!end_before(v, r, 0))
            break;
        if (!first_unwritten(v, r, &c))
            continue;
        if (end_before(v, r, c)) {
            v->end_set = true;
            v->end_rank = r;
            v->end_chunk = c;
            snprintf(v->end_msg, sizeof(v->end_msg),
                     "end: rank %u out[%u] was never written (%s needs it)",
                     r, c, ccs_coll_str(s->coll));
        }
        break;
    }
    wrong = v->end_wrong + unwritten;
    if (wrong == 0)
        return CCS_OK;
    if (wrong > 1)
        return ccs_err_set(v->err, CCS_ERR_VERIFY,
                           "%s (%llu of %llu output chunks wrong)",
                           v->end_msg, (unsigned long long)wrong,
                           (unsigned long long)valid);
    return ccs_err_set(v->err, CCS_ERR_VERIFY, "%s", v->end_msg);
}
