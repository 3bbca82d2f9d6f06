/*
 * verify_int.h - what the verifier's three files share (verify.c: entry
 * point, op index, report, hazards; verify_seg.c: chunk segments, pieces
 * and data-flow columns; verify_col.c: one column's symbolic execution,
 * its share of the postcondition, and the verdict).  Not part of the
 * verify layer's API.
 *
 * Terms:
 *   space    the chunk coordinates of IN and OUT (shared: IN[c] and OUT[c]
 *            are the same chunk of data) or of SCRATCH;
 *   segment  a run of chunks of one space that every op treats alike: the
 *            cut points are every op's range ends, the block ends of
 *            blocked collectives, and their images under every op that
 *            moves data between different positions (closed under those
 *            maps), so one representative chunk (the segment's first)
 *            stands for all of them;
 *   piece    the part of one op's range that lies in one segment (an op
 *            that spans k segments has k pieces);
 *   cell     (rank, stateful segment): OUT or SCRATCH of one rank over one
 *            segment; IN is implied and never stored;
 *   column   a set of pieces closed under data flow (a piece joins the
 *            pieces that last wrote what it reads).  Columns never
 *            exchange data, so each is executed alone and only its live
 *            cells are held.
 */
#ifndef CCS_VERIFY_INT_H
#define CCS_VERIFY_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "verify.h"

/* The verifier refuses up front (CCS_ERR_NOMEM, "verifier state would
 * exceed ...") rather than risk the OOM killer when its indexes and
 * tables would pass this.  The formula is in vseg_budget (verify_seg.c). */
#define VERIFY_MEM_LIMIT (UINT64_C(8) << 30)
#define VNONE UINT32_MAX
/* Words per column list entry (ent). */
#define VENT 3

enum { VS_IO = 0, VS_SCRATCH = 1, VS_COUNT = 2 };

/* Cut points of one space: b[0] = 0 < ... < b[nb - 1] = length.  Segment
 * k of the space is [b[k], b[k + 1]) and has global id first + k. */
typedef struct vspace {
    uint32_t *b;     /* owned */
    uint32_t nb, cap;
    uint32_t first;
} vspace_t;

/* Where a failure sits in the order a step-by-step execution finds it:
 * step, then pass (1 reads, 2 hazards, 3 writes), then op (flat index:
 * rank, then op order, which is the order of ops within a step), then
 * element, then which check of the element. */
typedef struct vkey {
    uint32_t step, pass, f, elem, sub;
} vkey_t;

typedef struct vfail {
    bool set;
    vkey_t key;
    ccs_status_t st;
    char msg[CCS_ERR_MSG_MAX];
} vfail_t;

/* One piece, looked up: its op, rank, segment and first element; for a
 * receive, its send's chunk << 2 | buffer. */
typedef struct vpiece {
    uint32_t pid, f, rank, g, e, xsend;
    const ccs_op_t *op;
} vpiece_t;

/* Listing the columns in step order walks every rank in every step
 * (steps x ranks) instead of keeping the step order of the ops (4 bytes
 * per op) when that is at most this many times the ops. */
#define VERIFY_CURSOR_WALK 4

typedef struct vctx {
    const ccs_sched_t *s;
    ccs_err_t *err;
    uint32_t W;             /* 64-bit words per rank set */
    uint32_t nops;
    ccs_pairing_t pair;     /* owned: each receive's send */
    uint16_t *rank_of;      /* owned; [nops] rank of flat op f (freed once
                               the columns are built) */
    bool use_order;         /* order is built (else: per-rank cursors) */
    uint32_t *order;        /* owned; [nops] flat ops by step (freed once
                               the columns are built); NULL when not
                               use_order */
    uint32_t *step_start;   /* owned; [nsteps + 1] into order */
    uint32_t *xsend;        /* owned; [nops] for a receive: its send's
                               chunk << 2 | buffer (chunks are below 2^24),
                               filled from the sends in one streaming pass
                               so that no receive reads its send's op on
                               another rank's array (freed, like the
                               pairing's mates, once the columns are
                               listed: the entries carry it) */

    vspace_t sp[VS_COUNT];  /* owned arrays */
    uint32_t nseg;
    uint32_t *segmap;       /* owned; [nchunks + nscratch] segment of each
                               chunk (IO, then SCRATCH), or NULL: when the
                               buffers are large next to the ops, found by
                               binary search instead */
    uint32_t *tcol;         /* owned; [nseg] column of a stateful segment in
                               the cell tables, VNONE when no op keeps
                               state there */
    uint32_t T;             /* stateful segments */
    uint32_t *tseg;         /* owned; [T] segment of each table column */

    uint32_t *piece_base;   /* owned; [nops + 1] first piece of each op, or
                               NULL when every op is one piece (id = f) */
    uint32_t npieces;
    uint32_t *comp;         /* owned; [npieces] union-find parent, then the
                               column of each piece */
    uint32_t ncomp;
    uint32_t *comp_start;   /* owned; [ncomp + 1] into ent */
    uint32_t *ent;          /* owned; [VENT * npieces] pieces by column,
                               each column's in step order: (piece, its
                               rank, xsend of its op) triples, so a column
                               run looks up neither a rank nor a send */

    uint32_t *lw;           /* owned; [nranks * T] piece that last wrote the
                               cell, rank-major (after the sweep: the final
                               writer) */
    uint64_t *final;        /* owned; [npieces / 64 + 1] bit set for each
                               piece that is the final writer of its cell */
    uint32_t *slot;         /* owned; [T * nranks] 1 + live slot of the cell
                               in the current column, 0 when unwritten;
                               segment-major, so a column's cells are near */
    uint64_t *bits;         /* owned; [slotcap * W] slot sets */
    uint32_t *sorigin;      /* owned; [slotcap] origin of the segment's
                               first chunk */
    uint32_t *scell;        /* owned; [slotcap] slot-table index of each */
    uint32_t *swriter;      /* owned; [slotcap] the column's last writer */
    uint32_t nslots, slotcap;
    vpiece_t *grp;          /* owned; [grpcap] one step of a column */
    uint32_t grpcap;

    uint32_t hazard_step;   /* first step with a hazard, VNONE for none */
    vfail_t hazard;
    vfail_t step_fail;      /* earliest data failure over all columns */
    /* Postcondition over the columns done so far. */
    uint64_t end_wrong;     /* written OUT chunks that are wrong */
    uint64_t written_out;   /* OUT chunks whose final value was checked */
    bool end_set;
    uint32_t end_rank, end_chunk;
    char end_msg[CCS_ERR_MSG_MAX];
} vctx_t;

static inline unsigned vspace_of(unsigned buf)
{
    return buf == CCS_BUF_SCRATCH ? VS_SCRATCH : VS_IO;
}

static inline uint32_t vsend_chunk(uint32_t xsend)
{
    return xsend >> 2;
}

static inline unsigned vsend_buf(uint32_t xsend)
{
    return xsend & 3u;
}

static inline bool vstateful(unsigned buf)
{
    return buf != CCS_BUF_IN;
}

/* The segment of `space` holding chunk `pos` (global id). */
uint32_t vseg_find(const vctx_t *v, unsigned space, uint32_t pos);
/* First chunk and end of global segment g. */
uint32_t vseg_lo(const vctx_t *v, uint32_t g);
uint32_t vseg_hi(const vctx_t *v, uint32_t g);

static inline const ccs_op_t *vop_at(const vctx_t *v, uint32_t r,
                                     uint32_t f)
{
    return &v->s->rank_ops[r][f - v->pair.base[r]];
}

/* Before the columns are built only (rank_of is freed then). */
static inline const ccs_op_t *vop(const vctx_t *v, uint32_t f)
{
    return vop_at(v, v->rank_of[f], f);
}

static inline uint32_t vpiece_first(const vctx_t *v, uint32_t f)
{
    return v->piece_base != NULL ? v->piece_base[f] : f;
}

/* The op a piece belongs to. */
uint32_t vpiece_op(const vctx_t *v, uint32_t pid);

bool vkey_less(const vkey_t *a, const vkey_t *b);

/* verify_seg.c: segments, pieces, columns; CCS_NOMEM past the budget. */
ccs_status_t vseg_build(vctx_t *v);
/* verify_col.c: execute every column, check its part of the end state. */
ccs_status_t vcol_run_all(vctx_t *v);
/* verify_col.c: the unwritten OUT chunks and the final verdict. */
ccs_status_t vcol_verdict(vctx_t *v);

#endif /* CCS_VERIFY_INT_H */
