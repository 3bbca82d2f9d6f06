/*
 * sched.h - the schedule IR: the contract between the algorithms, the
 * verifier, the simulator, the binary format and the executor.
 *
 * Internal to ccsynth: the synthesizer builds a ccs_sched_t, the format
 * module (format.c) serialises it, the runtime reads it back and replays it.
 * runtime/ owns this definition so there is exactly one; synth/ includes it.
 *
 * Data model
 * ----------
 * One collective over R ranks.  The user's buffer is split into C equal
 * chunks (the runtime pads the tail).  Each rank has three buffers, all
 * addressed in chunk units:
 *   IN       C chunks, read-only (never written by a schedule),
 *   OUT      C chunks,
 *   SCRATCH  `nscratch` chunks, private to the rank.
 * IN and OUT are indexed by *global* chunk index in [0, C) for every
 * collective; which indices a rank may touch depends on the collective (see
 * ccs_coll_in_valid / ccs_coll_out_valid below).  With B = C / R (C % R == 0
 * is required for reducescatter, allgather and alltoall):
 *   allreduce      IN_r[c] = contribution (r,c) for all c.
 *                  After: OUT_r[c] = sum over all ranks of (.,c), every r, c.
 *   reducescatter  IN_r[c] for all c; OUT_r valid on [rB, (r+1)B) only.
 *                  After: OUT_r[c] = sum of (.,c) for c in rank r's block.
 *   allgather      IN_r valid on [rB, (r+1)B) only; OUT_r all C chunks.
 *                  After: OUT_r[c] = (owner(c), c) for all c.
 *   reduce         IN_r[c] for all c; OUT valid at the root only.
 *                  After: OUT_root[c] = sum of (.,c).
 *   broadcast      IN valid at the root only; OUT_r all chunks.
 *                  After: OUT_r[c] = (root, c).
 *   alltoall       IN_r[c] for all c; OUT_r all chunks.
 *                  After: OUT_r[sB + j] = (s, rB + j) for every s, j.
 *
 * Steps and ops
 * -------------
 * A schedule is a sequence of steps; each step belongs to a phase (phases
 * are non-decreasing over steps).  In a step every rank runs a set of
 * concurrent ops.  All ops of a step read the state as it was when the step
 * began and their writes land when the step ends; a step may therefore not
 * read and write, or write twice, the same (rank, buffer, chunk) -- except
 * RECV_REDUCE / REDUCE_LOCAL reading their own destination.
 *   SEND(peer, buf, chunk, n)            send chunks [chunk, chunk+n) of buf
 *   RECV(peer, buf, chunk, n)            receive, overwriting buf chunks
 *   RECV_REDUCE(peer, buf, chunk, n, src_buf, src_chunk)
 *                                        buf[chunk..] = src_buf[src_chunk..]
 *                                                       (+) received
 *                                        (src may equal the destination)
 *   COPY(buf, chunk, n, src_buf, src_chunk)          buf = src
 *   REDUCE_LOCAL(buf, chunk, n, src_buf, src_chunk)  buf = buf (+) src
 * Every SEND matches exactly one RECV/RECV_REDUCE on its peer in the same
 * step with the same n.  Between one (sender, receiver) pair in one step,
 * the k-th send matches the k-th receive in op order.
 *
 * Ownership: a ccs_sched_t and everything it points to is owned by whoever
 * created it (ccs_sched_create or a reader) and freed by ccs_sched_destroy.
 */
#ifndef CCS_SCHED_H
#define CCS_SCHED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ccs.h"
#include "err.h"

/* Op kinds.  Stored in .ccs files: never renumber. */
typedef enum {
    CCS_OP_SEND = 0,
    CCS_OP_RECV = 1,
    CCS_OP_RECV_REDUCE = 2,
    CCS_OP_COPY = 3,
    CCS_OP_REDUCE_LOCAL = 4,
    CCS_OP_KIND_COUNT
} ccs_op_kind_t;

/* Buffers.  Stored in .ccs files: never renumber. */
typedef enum {
    CCS_BUF_IN = 0,
    CCS_BUF_OUT = 1,
    CCS_BUF_SCRATCH = 2,
    CCS_BUF_COUNT
} ccs_buf_t;

/* Limits the format and every consumer accept; readers reject more. */
#define CCS_MAX_RANKS   65536u
#define CCS_MAX_CHUNKS  (1u << 24)
#define CCS_MAX_STEPS   (1u << 24)
#define CCS_MAX_PHASES  255u
#define CCS_ALGO_NAME_MAX 32

typedef struct ccs_op {
    uint32_t step;      /* step index, < nsteps */
    uint8_t  kind;      /* ccs_op_kind_t */
    uint8_t  buf;       /* ccs_buf_t: read by SEND, written by all others */
    uint8_t  src_buf;   /* ccs_buf_t: local operand of RECV_REDUCE, COPY,
                           REDUCE_LOCAL; 0 and unused otherwise */
    uint8_t  reserved;  /* 0 */
    int32_t  peer;      /* SEND/RECV/RECV_REDUCE: peer rank; local ops: -1 */
    uint32_t chunk;     /* first chunk in buf */
    uint32_t src_chunk; /* first chunk in src_buf (same rule as src_buf) */
    uint32_t nchunks;   /* number of consecutive chunks, >= 1 */
} ccs_op_t;

typedef struct ccs_sched {
    ccs_coll_t coll;
    uint32_t nranks;
    uint32_t nchunks;    /* C: chunks of IN and OUT */
    uint32_t nscratch;   /* chunks of SCRATCH per rank */
    uint32_t nsteps;
    uint32_t nphases;    /* 1 + the largest phase used; >= 1 */
    int32_t  root;       /* reduce/broadcast root; -1 otherwise */
    int32_t  straggler;  /* rank written as the straggler; -1 for none */
    char     algo[CCS_ALGO_NAME_MAX]; /* NUL-terminated algorithm name */
    uint64_t topo_fingerprint; /* topology the schedule was made for; 0 none */
    char    *params;     /* owned; NUL-terminated "key=value\n" lines of the
                            synthesis parameters; may be NULL */
    uint8_t *step_phase; /* owned; [nsteps] phase of each step */
    uint32_t *rank_nops; /* owned; [nranks] ops per rank */
    ccs_op_t **rank_ops; /* owned; [nranks] arrays of rank_nops[r] ops,
                            sorted by step (stable: op order kept) */
    uint32_t *rank_cap;  /* owned; [nranks] capacity of rank_ops[r] (a reader
                            sets it to rank_nops[r]) */
    uint32_t step_cap;   /* capacity of step_phase (a reader: nsteps) */
    void    *op_store;   /* owned; NULL, or one block (a reader's) that
                            rank_ops arrays may point into: those are freed
                            with it, never one by one, and copied out of it
                            before they grow */
    size_t   op_store_bytes;
    bool     op_store_mapped; /* op_store is a private file mapping of
                                 op_store_bytes (munmap), not malloc's */
} ccs_sched_t;

/* ---- Names ---- */
const char *ccs_op_kind_str(ccs_op_kind_t kind);   /* "send", ... */
const char *ccs_buf_str(ccs_buf_t buf);            /* "in", "out", "scratch" */
/* A communicating op's peer, seen from rank r of nranks: false when it is
 * another rank in range; otherwise true with msg naming the op, its chunks
 * and the problem ("send of in[2] to peer 7 out of range 0..1",
 * "recv_reduce into out[4..5] from itself").  Shared by the validator and
 * the file reader so both say the same. */
bool ccs_op_peer_problem(const ccs_op_t *op, uint32_t r, uint32_t nranks,
                         char *msg, size_t len);

/* ---- Lifetime and building ---- */

/* Create an empty schedule (0 steps).  *out is owned by the caller and freed
 * with ccs_sched_destroy.  root/straggler may be -1. */
ccs_status_t ccs_sched_create(ccs_coll_t coll, uint32_t nranks,
                              uint32_t nchunks, const char *algo,
                              ccs_sched_t **out, ccs_err_t *err);
void ccs_sched_destroy(ccs_sched_t *s); /* NULL is a no-op */

/* Append a step in `phase` (>= the previous step's phase); returns its index
 * through *step. */
ccs_status_t ccs_sched_add_step(ccs_sched_t *s, uint32_t phase,
                                uint32_t *step, ccs_err_t *err);

/* Append one op to `rank`'s stream.  Ops of a rank must be appended in
 * non-decreasing step order, or ccs_sched_finalize must be called. */
ccs_status_t ccs_sched_add_op(ccs_sched_t *s, uint32_t rank,
                              const ccs_op_t *op, ccs_err_t *err);
/* Room for `nops` ops in all in `rank`'s stream, so that appending up to
 * that many never reallocates (for builders that count their ops first:
 * no copies while growing, no capacity beyond the count). */
ccs_status_t ccs_sched_reserve(ccs_sched_t *s, uint32_t rank, uint32_t nops,
                               ccs_err_t *err);

/* Convenience: a transfer src -> dst in `step`: SEND on src from
 * (sbuf, schunk) and, on dst, RECV into (dbuf, dchunk) or, when `reduce`,
 * RECV_REDUCE with dbuf[dchunk..] = dbuf[dchunk..] (+) received.  Grows
 * nscratch when a SCRATCH chunk beyond it is used. */
ccs_status_t ccs_sched_xfer(ccs_sched_t *s, uint32_t step, uint32_t src,
                            ccs_buf_t sbuf, uint32_t schunk, uint32_t dst,
                            ccs_buf_t dbuf, uint32_t dchunk, uint32_t n,
                            bool reduce, ccs_err_t *err);
/* Like ccs_sched_xfer with reduce, but the receiver's local operand is
 * (obuf, ochunk): dbuf[dchunk..] = obuf[ochunk..] (+) received. */
ccs_status_t ccs_sched_xfer_reduce_from(ccs_sched_t *s, uint32_t step,
                                        uint32_t src, ccs_buf_t sbuf,
                                        uint32_t schunk, uint32_t dst,
                                        ccs_buf_t dbuf, uint32_t dchunk,
                                        ccs_buf_t obuf, uint32_t ochunk,
                                        uint32_t n, ccs_err_t *err);
/* Local COPY (reduce=false) or REDUCE_LOCAL (reduce=true) on one rank. */
ccs_status_t ccs_sched_local(ccs_sched_t *s, uint32_t step, uint32_t rank,
                             ccs_buf_t dbuf, uint32_t dchunk, ccs_buf_t sbuf,
                             uint32_t schunk, uint32_t n, bool reduce,
                             ccs_err_t *err);

/* Set the params text (copied). */
ccs_status_t ccs_sched_set_params(ccs_sched_t *s, const char *params,
                                  ccs_err_t *err);

/* Stable-sort each rank's ops by step, recompute nphases, trim capacity. */
ccs_status_t ccs_sched_finalize(ccs_sched_t *s, ccs_err_t *err);

/* Deep copy.  *out owned by the caller. */
ccs_status_t ccs_sched_clone(const ccs_sched_t *s, ccs_sched_t **out,
                             ccs_err_t *err);

/* Total number of ops over all ranks. */
uint64_t ccs_sched_total_ops(const ccs_sched_t *s);

/* Structural validation, shared by the reader, the verifier and the
 * runtime: every field and index in range (collective, counts, root,
 * straggler, phases non-decreasing, op kinds, buffers, peers in range and not
 * self, local ops with peer -1, chunk ranges inside their buffers, reserved
 * bytes zero, ops sorted by step).  Says nothing about data flow: that is
 * the verifier's job.  The message names the rank, op index and step. */
ccs_status_t ccs_sched_validate(const ccs_sched_t *s, ccs_err_t *err);
/* ccs_sched_validate without the per-op rules: for a reader that applies
 * ccs_op_ok (and, on a failure, its own worded check) to every op as it
 * reads it, so that a large file is not checked twice. */
ccs_status_t ccs_sched_validate_header(const ccs_sched_t *s, ccs_err_t *err);

/* A chunk range an op touches, read or written: what orders two ops of
 * one rank when they run out of step order (the simulator's dataflow
 * mode, the executor's issue window). */
typedef struct ccs_op_range {
    uint32_t lo, hi;     /* chunks [lo, hi) of buf */
    uint8_t buf;         /* ccs_buf_t */
    bool write;
} ccs_op_range_t;

/* The ranges op touches (at most 2); returns how many.  A RECV_REDUCE or
 * REDUCE_LOCAL reading its own destination counts only as writing it: the
 * write already orders it against everything the read would. */
static inline uint32_t ccs_op_ranges(const ccs_op_t *op, ccs_op_range_t *a)
{
    uint32_t k = 0;
    bool own = op->src_buf == op->buf && op->src_chunk == op->chunk;

    switch (op->kind) {
    case CCS_OP_SEND:
    case CCS_OP_RECV:
        a[k++] = (ccs_op_range_t){ op->chunk, op->chunk + op->nchunks,
                                   op->buf, op->kind == CCS_OP_RECV };
        break;
    case CCS_OP_RECV_REDUCE:
    case CCS_OP_COPY:
    case CCS_OP_REDUCE_LOCAL:
        a[k++] = (ccs_op_range_t){ op->chunk, op->chunk + op->nchunks,
                                   op->buf, true };
        /* REDUCE_LOCAL reads its destination too (dst = dst + src): the
         * write covers it */
        if (op->kind == CCS_OP_COPY || !own)
            a[k++] = (ccs_op_range_t){ op->src_chunk,
                                       op->src_chunk + op->nchunks,
                                       op->src_buf, false };
        break;
    default:
        break;
    }
    return k;
}

/* The per-op rules of ccs_sched_validate as one branch-light test, for the
 * loops over millions of ops: true when op (of rank r) is fine.  A false
 * answer is then worded by the caller's full check. */
static inline bool ccs_op_ok(const ccs_op_t *op, uint32_t r, uint32_t nranks,
                             uint32_t nsteps, uint32_t nchunks,
                             uint32_t nscratch)
{
    unsigned k = op->kind;
    bool comm = k <= CCS_OP_RECV_REDUCE;
    bool src = k >= CCS_OP_RECV_REDUCE && k < CCS_OP_KIND_COUNT;
    uint64_t size = op->buf == CCS_BUF_SCRATCH ? nscratch : nchunks;
    uint64_t ssize = op->src_buf == CCS_BUF_SCRATCH ? nscratch : nchunks;
    bool peer_ok = comm ? (op->peer >= 0 && (uint32_t)op->peer < nranks &&
                           (uint32_t)op->peer != r)
                        : op->peer == -1;
    bool src_ok = src ? (op->src_buf < CCS_BUF_COUNT &&
                         (uint64_t)op->src_chunk + op->nchunks <= ssize)
                      : (op->src_buf == 0 && op->src_chunk == 0);

    return op->step < nsteps && k < CCS_OP_KIND_COUNT &&
           op->buf < CCS_BUF_COUNT && op->reserved == 0 &&
           op->nchunks != 0 && peer_ok &&
           (uint64_t)op->chunk + op->nchunks <= size && src_ok &&
           !(k != CCS_OP_SEND && op->buf == CCS_BUF_IN);
}

/* ---- Collective semantics (shared by verifier and runtime) ---- */

/* Chunks per rank block for blocked collectives (C / R), or C when the
 * collective is not blocked. */
uint32_t ccs_coll_block(ccs_coll_t coll, uint32_t nranks, uint32_t nchunks);
/* True when the collective needs C % R == 0. */
bool ccs_coll_blocked(ccs_coll_t coll);
/* True when the collective reduces (allreduce, reducescatter, reduce). */
bool ccs_coll_reduces(ccs_coll_t coll);
/* True when the collective has a root (reduce, broadcast). */
bool ccs_coll_rooted(ccs_coll_t coll);
/* May `rank` read IN chunk `chunk` (it holds input data)? */
bool ccs_coll_in_valid(const ccs_sched_t *s, uint32_t rank, uint32_t chunk);
/* May `rank` write OUT chunk `chunk` (it is backed by the user's buffer)? */
bool ccs_coll_out_valid(const ccs_sched_t *s, uint32_t rank, uint32_t chunk);

/* ---- The IR's rules, once: pairing, hazards, relabeling, bus bandwidth ----
 * The plan loader, the verifier, the simulator and the MultiTree reader
 * all pair sends with receives and check steps through these, so a file is
 * accepted or refused for the same reason everywhere, with the same words. */

/* "out[3]" or "out[3..5]" (n chunks from chunk). */
void ccs_buf_range_str(char *buf, size_t len, unsigned b, uint32_t chunk,
                       uint32_t n);
/* What element i of an op does, for messages: "send of out[3] to rank 2",
 * "recv_reduce from rank 1 into out[4]", "copy of in[2] into scratch[0]". */
void ccs_op_desc(char *buf, size_t len, const ccs_op_t *op, uint32_t i);

#define CCS_NO_OP UINT32_MAX

/* Send/receive pairing of a whole schedule.  Ops are numbered flat, rank
 * by rank: rank r's op i is base[r] + i. */
typedef struct ccs_pairing {
    uint32_t *base;  /* owned; [nranks + 1] flat index of each rank's op 0 */
    uint32_t *mate;  /* owned; [total ops] flat index of the op a transfer
                        pairs with (a receive's send, a send's receive);
                        CCS_NO_OP for COPY and REDUCE_LOCAL */
} ccs_pairing_t;

/* Pair every receive with its send: between one (sender, receiver) pair in
 * one step the k-th send matches the k-th receive in op order, with the
 * same chunk count.  `s` must pass ccs_sched_validate (peers in range, ops
 * sorted by step).  The sends are scattered by receiver and each
 * receiver's receives sorted by sender (counting passes), and each send's
 * sender is found by a galloping search: O(ops + ranks) when a receiver
 * hears from few senders, O(ops log ranks) at worst; scratch 4 bytes per
 * send besides the result.  On a mismatch returns `fail` (the caller's status:
 * CCS_ERR_VERIFY, CCS_ERR_FORMAT) with the first one in (step, receiver,
 * sender) order:
 *   "step 3, rank 1: send of out[2] to rank 0 has no matching receive",
 *   "step 3, rank 0: recv from rank 1 into out[2] has no matching send",
 *   "step 3, rank 1: send of out[2] (1 chunk) to rank 0 is received by recv
 *    into out[2..3] (2 chunks): size mismatch".
 * On success *out holds owned arrays (ccs_pairing_free). */
ccs_status_t ccs_sched_pair(const ccs_sched_t *s, ccs_status_t fail,
                            ccs_pairing_t *out, ccs_err_t *err);
void ccs_pairing_free(ccs_pairing_t *p);    /* NULL-safe; zeroes *p */
/* The same check and, on a mismatch, the same status and message as
 * ccs_sched_pair, without building the pairing: for a caller that needs
 * the verdict only.  One pass over the ops (ccs_pair_stream_*), memory for
 * the transfers in flight between ranks only. */
ccs_status_t ccs_sched_pair_check(const ccs_sched_t *s, ccs_status_t fail,
                                  ccs_err_t *err);

/* ccs_sched_pair_check fed one rank at a time, for a caller that walks
 * the ranks anyway (the plan loader, while each rank's ops are in cache).
 * Feed every rank, in order 0 .. nranks-1, its ops (sorted by step, peers
 * in range: what ccs_sched_validate guarantees); then ccs_pair_stream_ok
 * says whether every transfer pairs.  Memory: the transfers waiting for a
 * rank not fed yet (a ring: one rank's sends).  A false verdict gets its
 * words from ccs_sched_pair_fail.  create and rank return CCS_ERR_NOMEM
 * (and set no message) when memory runs out. */
typedef struct ccs_pair_stream ccs_pair_stream_t;
ccs_status_t ccs_pair_stream_create(uint32_t nranks,
                                    ccs_pair_stream_t **out);
ccs_status_t ccs_pair_stream_rank(ccs_pair_stream_t *ps, const ccs_op_t *ops,
                                  uint32_t n);
bool ccs_pair_stream_ok(const ccs_pair_stream_t *ps);
void ccs_pair_stream_destroy(ccs_pair_stream_t *ps);   /* NULL: no-op */
/* The first mismatch of a schedule that does not pair, as ccs_sched_pair
 * words it, with status `fail`. */
ccs_status_t ccs_sched_pair_fail(const ccs_sched_t *s, ccs_status_t fail,
                                 ccs_err_t *err);

/* The send that receive `ri` of rank `dst` pairs with, by the same rule,
 * without building a whole pairing: its index in rank_ops[peer] through
 * *send_idx; false when there is none.  O(ops of the two ranks in that
 * step) plus a binary search: for callers that look up a few receives. */
bool ccs_sched_recv_send(const ccs_sched_t *s, uint32_t dst, uint32_t ri,
                         uint32_t *send_idx);

/* Hazards within one step on one rank.  ops[0..n) are `rank`'s ops of step
 * `step` in op order.  All ops of a step read the state from before the
 * step, so no (buffer, chunk) may be written twice, or read and written,
 * in one step -- except a RECV_REDUCE / REDUCE_LOCAL reading exactly its
 * own destination.  Returns `fail` with the first hazard in op order, then
 * chunk order: "step 2, rank 0: recv_reduce from rank 1 into out[5]:
 * out[5] is written twice in this step" (or "is read and written in the
 * same step").  O(n log^2 n) for a large step, O(n^2) for a small one;
 * never per chunk, so a step of huge ranges costs what its ops cost. */
ccs_status_t ccs_sched_step_hazard(const ccs_op_t *ops, uint32_t n,
                                   uint32_t step, uint32_t rank,
                                   ccs_status_t fail, ccs_err_t *err);

/* The valid chunk span [*lo, *hi) of IN (out = false) or OUT (out = true)
 * of `rank`: where ccs_coll_in_valid / ccs_coll_out_valid hold (they hold
 * on one interval, possibly empty), so range checks cost O(1). */
void ccs_coll_valid_span(const ccs_sched_t *s, uint32_t rank, bool out,
                         uint32_t *lo, uint32_t *hi);

/* Straggler relabeling: a plan written with straggler `a`, run with
 * straggler `b`, swaps ranks a and b (a transposition, its own inverse);
 * a == b, or either negative, is the identity. */
static inline uint32_t ccs_relabel_rank(int64_t a, int64_t b, uint32_t q)
{
    if (a < 0 || b < 0)
        return q;
    if ((int64_t)q == a)
        return (uint32_t)b;
    if ((int64_t)q == b)
        return (uint32_t)a;
    return q;
}
/* The schedule `s` relabeled for straggler `straggler` (ranks s->straggler
 * and `straggler` swapped in every op stream and peer field; `straggler`
 * recorded): what the executor runs when called with that straggler.  Any
 * rank permutation of a correct schedule is correct, so one file serves
 * every straggler.  *out owned by the caller (ccs_sched_destroy). */
ccs_status_t ccs_sched_relabel(const ccs_sched_t *s, int32_t straggler,
                               ccs_sched_t **out, ccs_err_t *err);

/* nccl-tests' bus bandwidth factor (busbw = algbw * factor): allreduce
 * 2(n-1)/n; reducescatter, allgather, alltoall (n-1)/n; reduce, broadcast
 * 1; 0 for an unknown collective or no ranks. */
double ccs_busbw_factor(ccs_coll_t coll, uint32_t nranks);

#endif /* CCS_SCHED_H */
