/* sched.c - schedule IR lifetime, builder and collective semantics. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__unix__) || defined(__APPLE__)
#include <sys/mman.h>
#endif

#include "sched.h"

static const char *const op_kind_names[CCS_OP_KIND_COUNT] = {
    "send", "recv", "recv_reduce", "copy", "reduce_local",
};
static const char *const buf_names[CCS_BUF_COUNT] = { "in", "out", "scratch" };

const char *ccs_op_kind_str(ccs_op_kind_t kind)
{
    return ((unsigned)kind < CCS_OP_KIND_COUNT) ? op_kind_names[kind] : "?";
}

const char *ccs_buf_str(ccs_buf_t buf)
{
    return ((unsigned)buf < CCS_BUF_COUNT) ? buf_names[buf] : "?";
}

bool ccs_op_peer_problem(const ccs_op_t *op, uint32_t r, uint32_t nranks,
                         char *msg, size_t len)
{
    const char *kind = ccs_op_kind_str((ccs_op_kind_t)op->kind);
    const char *b = ccs_buf_str((ccs_buf_t)op->buf);
    const char *prep = op->kind == CCS_OP_SEND ? "of" : "into";
    const char *dir = op->kind == CCS_OP_SEND ? "to" : "from";
    char what[80];   /* "send of in[2]", "recv_reduce into out[4..5]" */

    if (op->peer >= 0 && (uint32_t)op->peer < nranks &&
        (uint32_t)op->peer != r)
        return false;
    if (op->nchunks <= 1)
        snprintf(what, sizeof(what), "%s %s %s[%u]", kind, prep, b,
                 op->chunk);
    else
        snprintf(what, sizeof(what), "%s %s %s[%u..%" PRIu64 "]", kind, prep,
                 b, op->chunk, (uint64_t)op->chunk + op->nchunks - 1);
    if ((uint32_t)op->peer == r)
        snprintf(msg, len, "%s %s itself", what, dir);
    else
        snprintf(msg, len, "%s %s peer %d out of range 0..%u", what, dir,
                 op->peer, nranks - 1);
    return true;
}

ccs_status_t ccs_sched_create(ccs_coll_t coll, uint32_t nranks,
                              uint32_t nchunks, const char *algo,
                              ccs_sched_t **out, ccs_err_t *err)
{
    ccs_sched_t *s = NULL;

    if (out == NULL || (unsigned)coll >= CCS_COLL_COUNT)
        return ccs_err_set(err, CCS_ERR_INVALID, "invalid collective");
    if (nranks < 1 || nranks > CCS_MAX_RANKS)
        return ccs_err_set(err, CCS_ERR_INVALID,
                           "rank count %u out of range 1..%u", nranks,
                           CCS_MAX_RANKS);
    if (nchunks < 1 || nchunks > CCS_MAX_CHUNKS)
        return ccs_err_set(err, CCS_ERR_INVALID,
                           "chunk count %u out of range 1..%u", nchunks,
                           CCS_MAX_CHUNKS);
    if (ccs_coll_blocked(coll) && nchunks % nranks != 0)
        return ccs_err_set(err, CCS_ERR_INVALID,
                           "%s needs a chunk count divisible by the rank "
                           "count (%u chunks, %u ranks)",
                           ccs_coll_str(coll), nchunks, nranks);

    /* Owned by the caller through *out; freed by ccs_sched_destroy. */
    s = calloc(1, sizeof(*s));
    if (s == NULL)
        goto nomem;
    s->coll = coll;
    s->nranks = nranks;
    s->nchunks = nchunks;
    s->nphases = 1;
    s->root = ccs_coll_rooted(coll) ? 0 : -1;
    s->straggler = -1;
    if (algo != NULL) {
        strncpy(s->algo, algo, sizeof(s->algo) - 1);
        s->algo[sizeof(s->algo) - 1] = '\0';
    }
    s->rank_nops = calloc(nranks, sizeof(*s->rank_nops));
    s->rank_cap = calloc(nranks, sizeof(*s->rank_cap));
    s->rank_ops = calloc(nranks, sizeof(*s->rank_ops));
    if (s->rank_nops == NULL || s->rank_cap == NULL || s->rank_ops == NULL)
        goto nomem;
    *out = s;
    return CCS_OK;

nomem:
    ccs_sched_destroy(s);
    return ccs_err_set(err, CCS_ERR_NOMEM, "out of memory creating schedule");
}

/* Does ops lie in s's op store (freed with it, never on its own)? */
static bool in_store(const ccs_sched_t *s, const ccs_op_t *ops)
{
    uintptr_t a = (uintptr_t)ops, lo = (uintptr_t)s->op_store;
    return s->op_store != NULL && a >= lo && a - lo < s->op_store_bytes;
}

void ccs_sched_destroy(ccs_sched_t *s)
{
    if (s == NULL)
        return;
    if (s->rank_ops != NULL) {
        for (uint32_t r = 0; r < s->nranks; r++)
            if (!in_store(s, s->rank_ops[r]))
                free(s->rank_ops[r]);
    }
#if defined(__unix__) || defined(__APPLE__)
    if (s->op_store_mapped)
        munmap(s->op_store, s->op_store_bytes);
    else
#endif
        free(s->op_store);
    free(s->rank_ops);
    free(s->rank_nops);
    free(s->rank_cap);
    free(s->step_phase);
    free(s->params);
    free(s);
}

ccs_status_t ccs_sched_add_step(ccs_sched_t *s, uint32_t phase,
                                uint32_t *step, ccs_err_t *err)
{
    uint8_t *grown;

    if (s == NULL || step == NULL)
        return ccs_err_set(err, CCS_ERR_INVALID, "NULL argument");
    if (phase >= CCS_MAX_PHASES)
        return ccs_err_set(err, CCS_ERR_INVALID, "phase %u too large", phase);
    if (s->nsteps >= CCS_MAX_STEPS)
        return ccs_err_set(err, CCS_ERR_INVALID, "too many steps");
    if (s->nsteps > 0 && phase < s->step_phase[s->nsteps - 1])
        return ccs_err_set(err, CCS_ERR_INVALID,
                           "step %u: phase %u after phase %u (phases must "
                           "not decrease)", s->nsteps, phase,
                           s->step_phase[s->nsteps - 1]);
    if (s->nsteps >= s->step_cap) {
        uint32_t cap = s->step_cap ? 2 * s->step_cap : 8;
        grown = realloc(s->step_phase, cap);
        if (grown == NULL)
            return ccs_err_set(err, CCS_ERR_NOMEM, "out of memory");
        s->step_phase = grown;
        s->step_cap = cap;
    }
    s->step_phase[s->nsteps] = (uint8_t)phase;
    if (phase + 1 > s->nphases)
        s->nphases = phase + 1;
    *step = s->nsteps++;
    return CCS_OK;
}

ccs_status_t ccs_sched_add_op(ccs_sched_t *s, uint32_t rank,
                              const ccs_op_t *op, ccs_err_t *err)
{
    if (s == NULL || op == NULL)
        return ccs_err_set(err, CCS_ERR_INVALID, "NULL argument");
    if (rank >= s->nranks)
        return ccs_err_set(err, CCS_ERR_INVALID, "rank %u out of range",
                           rank);
    if (op->step >= s->nsteps)
        return ccs_err_set(err, CCS_ERR_INVALID,
                           "rank %u: op in step %u but only %u steps exist",
                           rank, op->step, s->nsteps);
    if (s->rank_nops[rank] >= s->rank_cap[rank]) {
        uint32_t cap = s->rank_nops[rank] ? 2 * s->rank_nops[rank] : 16;
        ccs_op_t *grown;
        if (in_store(s, s->rank_ops[rank])) {
            grown = malloc(cap * sizeof(*grown));
            if (grown != NULL)
                memcpy(grown, s->rank_ops[rank],
                       (size_t)s->rank_nops[rank] * sizeof(*grown));
        } else {
            grown = realloc(s->rank_ops[rank], cap * sizeof(*grown));
        }
        if (grown == NULL)
            return ccs_err_set(err, CCS_ERR_NOMEM, "out of memory");
        s->rank_ops[rank] = grown;
        s->rank_cap[rank] = cap;
    }
    s->rank_ops[rank][s->rank_nops[rank]++] = *op;
    if (op->buf == CCS_BUF_SCRATCH && op->chunk + op->nchunks > s->nscratch)
        s->nscratch = op->chunk + op->nchunks;
    if ((op->kind == CCS_OP_RECV_REDUCE || op->kind == CCS_OP_COPY ||
         op->kind == CCS_OP_REDUCE_LOCAL) &&
        op->src_buf == CCS_BUF_SCRATCH &&
        op->src_chunk + op->nchunks > s->nscratch)
        s->nscratch = op->src_chunk + op->nchunks;
    return CCS_OK;
}

ccs_status_t ccs_sched_reserve(ccs_sched_t *s, uint32_t rank, uint32_t nops,
                               ccs_err_t *err)
{
    ccs_op_t *grown;

    if (s == NULL)
        return ccs_err_set(err, CCS_ERR_INVALID, "NULL argument");
    if (rank >= s->nranks)
        return ccs_err_set(err, CCS_ERR_INVALID, "rank %u out of range",
                           rank);
    if (nops <= s->rank_cap[rank])
        return CCS_OK;
    grown = realloc(s->rank_ops[rank], (size_t)nops * sizeof(*grown));
    if (grown == NULL)
        return ccs_err_set(err, CCS_ERR_NOMEM, "out of memory");
    s->rank_ops[rank] = grown;
    s->rank_cap[rank] = nops;
    return CCS_OK;
}

ccs_status_t ccs_sched_xfer_reduce_from(ccs_sched_t *s, uint32_t step,
                                        uint32_t src, ccs_buf_t sbuf,
                                        uint32_t schunk, uint32_t dst,
                                        ccs_buf_t dbuf, uint32_t dchunk,
                                        ccs_buf_t obuf, uint32_t ochunk,
                                        uint32_t n, ccs_err_t *err)
{
    ccs_op_t send = { .step = step, .kind = CCS_OP_SEND, .buf = (uint8_t)sbuf,
                      .peer = (int32_t)dst, .chunk = schunk, .nchunks = n };
    ccs_op_t recv = { .step = step, .kind = CCS_OP_RECV_REDUCE,
                      .buf = (uint8_t)dbuf, .src_buf = (uint8_t)obuf,
                      .peer = (int32_t)src, .chunk = dchunk,
                      .src_chunk = ochunk, .nchunks = n };
    ccs_status_t st = ccs_sched_add_op(s, src, &send, err);
    if (st != CCS_OK)
        return st;
    return ccs_sched_add_op(s, dst, &recv, err);
}

ccs_status_t ccs_sched_xfer(ccs_sched_t *s, uint32_t step, uint32_t src,
                            ccs_buf_t sbuf, uint32_t schunk, uint32_t dst,
                            ccs_buf_t dbuf, uint32_t dchunk, uint32_t n,
                            bool reduce, ccs_err_t *err)
{
    ccs_op_t send = { .step = step, .kind = CCS_OP_SEND, .buf = (uint8_t)sbuf,
                      .peer = (int32_t)dst, .chunk = schunk, .nchunks = n };
    ccs_op_t recv = { .step = step, .kind = CCS_OP_RECV, .buf = (uint8_t)dbuf,
                      .peer = (int32_t)src, .chunk = dchunk, .nchunks = n };
    ccs_status_t st;

    if (reduce)
        return ccs_sched_xfer_reduce_from(s, step, src, sbuf, schunk, dst,
                                          dbuf, dchunk, dbuf, dchunk, n, err);
    st = ccs_sched_add_op(s, src, &send, err);
    if (st != CCS_OK)
        return st;
    return ccs_sched_add_op(s, dst, &recv, err);
}

ccs_status_t ccs_sched_local(ccs_sched_t *s, uint32_t step, uint32_t rank,
                             ccs_buf_t dbuf, uint32_t dchunk, ccs_buf_t sbuf,
                             uint32_t schunk, uint32_t n, bool reduce,
                             ccs_err_t *err)
{
    ccs_op_t op = { .step = step,
                    .kind = reduce ? CCS_OP_REDUCE_LOCAL : CCS_OP_COPY,
                    .buf = (uint8_t)dbuf, .src_buf = (uint8_t)sbuf,
                    .peer = -1, .chunk = dchunk, .src_chunk = schunk,
                    .nchunks = n };
    return ccs_sched_add_op(s, rank, &op, err);
}

ccs_status_t ccs_sched_set_params(ccs_sched_t *s, const char *params,
                                  ccs_err_t *err)
{
    char *copy = NULL;

    if (s == NULL)
        return ccs_err_set(err, CCS_ERR_INVALID, "NULL schedule");
    if (params != NULL) {
        copy = strdup(params); /* owned by s */
        if (copy == NULL)
            return ccs_err_set(err, CCS_ERR_NOMEM, "out of memory");
    }
    free(s->params);
    s->params = copy;
    return CCS_OK;
}

/* Stable counting sort of one rank's ops by step: O(nops + nsteps). */
static ccs_status_t sort_rank_ops(ccs_sched_t *s, uint32_t r)
{
    uint32_t n = s->rank_nops[r];
    ccs_op_t *ops = s->rank_ops[r];
    ccs_op_t *sorted = NULL;
    uint32_t *start = NULL;
    bool ordered = true;

    for (uint32_t i = 1; i < n && ordered; i++)
        ordered = ops[i - 1].step <= ops[i].step;
    if (ordered)
        return CCS_OK;

    sorted = malloc((size_t)n * sizeof(*sorted));
    start = calloc((size_t)s->nsteps + 1, sizeof(*start));
    if (sorted == NULL || start == NULL) {
        free(sorted);
        free(start);
        return CCS_ERR_NOMEM;
    }
    for (uint32_t i = 0; i < n; i++)
        start[ops[i].step + 1]++;
    for (uint32_t t = 0; t < s->nsteps; t++)
        start[t + 1] += start[t];
    for (uint32_t i = 0; i < n; i++)
        sorted[start[ops[i].step]++] = ops[i];
    free(start);
    if (!in_store(s, ops))
        free(ops);
    s->rank_ops[r] = sorted;
    s->rank_cap[r] = n;
    return CCS_OK;
}

ccs_status_t ccs_sched_finalize(ccs_sched_t *s, ccs_err_t *err)
{
    if (s == NULL)
        return ccs_err_set(err, CCS_ERR_INVALID, "NULL schedule");
    for (uint32_t r = 0; r < s->nranks; r++) {
        if (sort_rank_ops(s, r) != CCS_OK)
            return ccs_err_set(err, CCS_ERR_NOMEM, "out of memory");
    }
    s->nphases = 1;
    for (uint32_t t = 0; t < s->nsteps; t++) {
        if ((uint32_t)s->step_phase[t] + 1 > s->nphases)
            s->nphases = (uint32_t)s->step_phase[t] + 1;
    }
    return CCS_OK;
}

ccs_status_t ccs_sched_clone(const ccs_sched_t *s, ccs_sched_t **out,
                             ccs_err_t *err)
{
    ccs_sched_t *c = NULL;
    ccs_status_t st;

    if (s == NULL || out == NULL)
        return ccs_err_set(err, CCS_ERR_INVALID, "NULL argument");
    st = ccs_sched_create(s->coll, s->nranks, s->nchunks, s->algo, &c, err);
    if (st != CCS_OK)
        return st;
    c->nscratch = s->nscratch;
    c->nsteps = s->nsteps;
    c->nphases = s->nphases;
    c->root = s->root;
    c->straggler = s->straggler;
    c->topo_fingerprint = s->topo_fingerprint;
    if (s->params != NULL && (c->params = strdup(s->params)) == NULL)
        goto nomem;
    if (s->nsteps > 0) {
        c->step_phase = malloc(s->nsteps);
        if (c->step_phase == NULL)
            goto nomem;
        memcpy(c->step_phase, s->step_phase, s->nsteps);
        c->step_cap = s->nsteps;
    }
    for (uint32_t r = 0; r < s->nranks; r++) {
        uint32_t n = s->rank_nops[r];
        if (n == 0)
            continue;
        c->rank_ops[r] = malloc((size_t)n * sizeof(ccs_op_t));
        if (c->rank_ops[r] == NULL)
            goto nomem;
        memcpy(c->rank_ops[r], s->rank_ops[r], (size_t)n * sizeof(ccs_op_t));
        c->rank_nops[r] = n;
        c->rank_cap[r] = n;
    }
    *out = c;
    return CCS_OK;

nomem:
    ccs_sched_destroy(c);
    return ccs_err_set(err, CCS_ERR_NOMEM, "out of memory cloning schedule");
}

uint64_t ccs_sched_total_ops(const ccs_sched_t *s)
{
    uint64_t total = 0;
    for (uint32_t r = 0; s != NULL && r < s->nranks; r++)
        total += s->rank_nops[r];
    return total;
}

bool ccs_coll_blocked(ccs_coll_t coll)
{
    return coll == CCS_COLL_REDUCESCATTER || coll == CCS_COLL_ALLGATHER ||
           coll == CCS_COLL_ALLTOALL;
}

bool ccs_coll_reduces(ccs_coll_t coll)
{
    return coll == CCS_COLL_ALLREDUCE || coll == CCS_COLL_REDUCESCATTER ||
           coll == CCS_COLL_REDUCE;
}

bool ccs_coll_rooted(ccs_coll_t coll)
{
    return coll == CCS_COLL_REDUCE || coll == CCS_COLL_BROADCAST;
}

uint32_t ccs_coll_block(ccs_coll_t coll, uint32_t nranks, uint32_t nchunks)
{
    if (ccs_coll_blocked(coll) && nranks > 0)
        return nchunks / nranks;
    return nchunks;
}

bool ccs_coll_in_valid(const ccs_sched_t *s, uint32_t rank, uint32_t chunk)
{
    uint32_t b = ccs_coll_block(s->coll, s->nranks, s->nchunks);

    if (rank >= s->nranks || chunk >= s->nchunks)
        return false;
    switch (s->coll) {
    case CCS_COLL_ALLGATHER:
        return chunk / b == rank;
    case CCS_COLL_BROADCAST:
        return (int32_t)rank == s->root;
    default:
        return true;
    }
}

bool ccs_coll_out_valid(const ccs_sched_t *s, uint32_t rank, uint32_t chunk)
{
    uint32_t b = ccs_coll_block(s->coll, s->nranks, s->nchunks);

    if (rank >= s->nranks || chunk >= s->nchunks)
        return false;
    switch (s->coll) {
    case CCS_COLL_REDUCESCATTER:
        return chunk / b == rank;
    case CCS_COLL_REDUCE:
        return (int32_t)rank == s->root;
    default:
        return true;
    }
}

static uint32_t buf_chunks(const ccs_sched_t *s, unsigned buf)
{
    return buf == CCS_BUF_SCRATCH ? s->nscratch : s->nchunks;
}

static bool op_has_src(unsigned kind)
{
    return kind == CCS_OP_RECV_REDUCE || kind == CCS_OP_COPY ||
           kind == CCS_OP_REDUCE_LOCAL;
}

static ccs_status_t validate_op(const ccs_sched_t *s, uint32_t r, uint32_t i,
                                const ccs_op_t *op, ccs_err_t *err)
{
    bool comm;

#define OP_FAIL(...)                                                        \
    do {                                                                    \
        char what_[256];                                                    \
        snprintf(what_, sizeof(what_), __VA_ARGS__);                        \
        return ccs_err_set(err, CCS_ERR_FORMAT, "rank %u op %u (step %u): %s", \
                           r, i, op->step, what_);                          \
    } while (0)

    if (op->step >= s->nsteps)
        OP_FAIL("step out of range (%u steps)", s->nsteps);
    if (op->kind >= CCS_OP_KIND_COUNT)
        OP_FAIL("unknown op kind %u", op->kind);
    if (op->buf >= CCS_BUF_COUNT)
        OP_FAIL("unknown buffer %u", op->buf);
    if (op->reserved != 0)
        OP_FAIL("reserved byte is %u, not 0", op->reserved);
    if (op->nchunks == 0)
        OP_FAIL("%s of 0 chunks", ccs_op_kind_str(op->kind));
    comm = op->kind == CCS_OP_SEND || op->kind == CCS_OP_RECV ||
           op->kind == CCS_OP_RECV_REDUCE;
    if (comm) {
        char what[160];

        /* The common case first: the full check formats names. */
        bool fine = op->peer >= 0 && (uint32_t)op->peer < s->nranks &&
                    (uint32_t)op->peer != r;
        if (!fine &&
            ccs_op_peer_problem(op, r, s->nranks, what, sizeof(what)))
            OP_FAIL("%s", what);
    } else if (op->peer != -1) {
        OP_FAIL("local %s has peer %d (must be -1)", ccs_op_kind_str(op->kind),
                op->peer);
    }
    if ((uint64_t)op->chunk + op->nchunks > buf_chunks(s, op->buf))
        OP_FAIL("%s chunks %u..%u past the end of %s (%u chunks)",
                ccs_op_kind_str(op->kind), op->chunk,
                op->chunk + op->nchunks - 1, ccs_buf_str(op->buf),
                buf_chunks(s, op->buf));
    if (op_has_src(op->kind)) {
        if (op->src_buf >= CCS_BUF_COUNT)
            OP_FAIL("unknown source buffer %u", op->src_buf);
        if ((uint64_t)op->src_chunk + op->nchunks > buf_chunks(s, op->src_buf))
            OP_FAIL("%s source chunks %u..%u past the end of %s (%u chunks)",
                    ccs_op_kind_str(op->kind), op->src_chunk,
                    op->src_chunk + op->nchunks - 1, ccs_buf_str(op->src_buf),
                    buf_chunks(s, op->src_buf));
    } else if (op->src_buf != 0 || op->src_chunk != 0) {
        OP_FAIL("%s has a source operand", ccs_op_kind_str(op->kind));
    }
    if (op->kind != CCS_OP_SEND && op->buf == CCS_BUF_IN)
        OP_FAIL("%s writes the read-only IN buffer",
                ccs_op_kind_str(op->kind));
#undef OP_FAIL
    return CCS_OK;
}

ccs_status_t ccs_sched_validate_header(const ccs_sched_t *s, ccs_err_t *err)
{
    if (s == NULL)
        return ccs_err_set(err, CCS_ERR_INVALID, "NULL schedule");
    if ((unsigned)s->coll >= CCS_COLL_COUNT)
        return ccs_err_set(err, CCS_ERR_FORMAT, "unknown collective %d",
                           (int)s->coll);
    if (s->nranks < 1 || s->nranks > CCS_MAX_RANKS)
        return ccs_err_set(err, CCS_ERR_FORMAT, "rank count %u out of range",
                           s->nranks);
    if (s->nchunks < 1 || s->nchunks > CCS_MAX_CHUNKS ||
        s->nscratch > CCS_MAX_CHUNKS)
        return ccs_err_set(err, CCS_ERR_FORMAT,
                           "chunk counts out of range (%u chunks, %u scratch)",
                           s->nchunks, s->nscratch);
    if (ccs_coll_blocked(s->coll) && s->nchunks % s->nranks != 0)
        return ccs_err_set(err, CCS_ERR_FORMAT,
                           "%s with %u chunks over %u ranks (must divide)",
                           ccs_coll_str(s->coll), s->nchunks, s->nranks);
    if (s->nsteps > CCS_MAX_STEPS)
        return ccs_err_set(err, CCS_ERR_FORMAT, "step count %u out of range",
                           s->nsteps);
    if (ccs_coll_rooted(s->coll)) {
        if (s->root < 0 || (uint32_t)s->root >= s->nranks)
            return ccs_err_set(err, CCS_ERR_FORMAT,
                               "root %d out of range 0..%u", s->root,
                               s->nranks - 1);
    } else if (s->root != -1) {
        return ccs_err_set(err, CCS_ERR_FORMAT,
                           "%s has root %d (must be -1)",
                           ccs_coll_str(s->coll), s->root);
    }
    if (s->straggler < -1 || s->straggler >= (int64_t)s->nranks)
        return ccs_err_set(err, CCS_ERR_FORMAT,
                           "straggler %d out of range -1..%u", s->straggler,
                           s->nranks - 1);
    if (s->nphases < 1 || s->nphases > CCS_MAX_PHASES)
        return ccs_err_set(err, CCS_ERR_FORMAT, "phase count %u out of range",
                           s->nphases);
    for (uint32_t t = 0; t < s->nsteps; t++) {
        if (s->step_phase[t] >= s->nphases)
            return ccs_err_set(err, CCS_ERR_FORMAT,
                               "step %u: phase %u >= phase count %u", t,
                               s->step_phase[t], s->nphases);
        if (t > 0 && s->step_phase[t] < s->step_phase[t - 1])
            return ccs_err_set(err, CCS_ERR_FORMAT,
                               "step %u: phase %u after phase %u", t,
                               s->step_phase[t], s->step_phase[t - 1]);
    }
    if (memchr(s->algo, '\0', sizeof(s->algo)) == NULL)
        return ccs_err_set(err, CCS_ERR_FORMAT,
                           "algorithm name not terminated");
    for (const char *p = s->algo; *p != '\0'; p++) {
        if ((unsigned char)*p < 0x21 || (unsigned char)*p > 0x7e)
            return ccs_err_set(err, CCS_ERR_FORMAT,
                               "algorithm name: byte %td is 0x%02x, not "
                               "printable ASCII", p - s->algo,
                               (unsigned char)*p);
    }
    for (uint32_t r = 0; r < s->nranks; r++) {
        if (s->rank_nops[r] > 0 && s->rank_ops[r] == NULL)
            return ccs_err_set(err, CCS_ERR_FORMAT, "rank %u: ops missing", r);
    }
    return CCS_OK;
}

ccs_status_t ccs_sched_validate(const ccs_sched_t *s, ccs_err_t *err)
{
    ccs_status_t st = ccs_sched_validate_header(s, err);

    if (st != CCS_OK)
        return st;
    for (uint32_t r = 0; r < s->nranks; r++) {
        const ccs_op_t *ops = s->rank_ops[r];
        uint32_t prev = 0;
        for (uint32_t i = 0; i < s->rank_nops[r]; i++) {
            /* The fast test for the millions of fine ops; the worded
             * checks below for the one that is not. */
            if (ccs_op_ok(&ops[i], r, s->nranks, s->nsteps, s->nchunks,
                          s->nscratch) && ops[i].step >= prev) {
                prev = ops[i].step;
                continue;
            }
            st = validate_op(s, r, i, &ops[i], err);
            if (st != CCS_OK)
                return st;
            if (i > 0 && ops[i].step < ops[i - 1].step)
                return ccs_err_set(err, CCS_ERR_FORMAT,
                                   "rank %u op %u: step %u after step %u "
                                   "(ops must be sorted by step)",
                                   r, i, ops[i].step, ops[i - 1].step);
            prev = ops[i].step;
        }
    }
    return CCS_OK;
}

/* ---- The IR's rules: valid spans, relabeling, bus bandwidth ---- */

void ccs_coll_valid_span(const ccs_sched_t *s, uint32_t rank, bool out,
                         uint32_t *lo, uint32_t *hi)
{
    uint32_t b = ccs_coll_block(s->coll, s->nranks, s->nchunks);
    bool all = true;

    *lo = 0;
    *hi = s->nchunks;
    if (rank >= s->nranks) {
        *hi = 0;
        return;
    }
    if (!out && s->coll == CCS_COLL_ALLGATHER)
        all = false;
    if (out && s->coll == CCS_COLL_REDUCESCATTER)
        all = false;
    if (!all) {
        *lo = rank * b;
        *hi = rank * b + b;
        return;
    }
    if ((!out && s->coll == CCS_COLL_BROADCAST) ||
        (out && s->coll == CCS_COLL_REDUCE)) {
        if ((int32_t)rank != s->root)
            *hi = 0;
    }
}

ccs_status_t ccs_sched_relabel(const ccs_sched_t *s, int32_t straggler,
                               ccs_sched_t **out, ccs_err_t *err)
{
    ccs_sched_t *c = NULL;
    int32_t a, b = straggler;
    ccs_status_t st;

    if (s == NULL || out == NULL)
        return ccs_err_set(err, CCS_ERR_INVALID, "relabel: NULL argument");
    a = s->straggler;
    if (a < 0 || (uint32_t)a >= s->nranks)
        return ccs_err_set(err, CCS_ERR_INVALID,
                           "relabel: schedule has no straggler to swap");
    if (b < 0 || (uint32_t)b >= s->nranks)
        return ccs_err_set(err, CCS_ERR_INVALID,
                           "relabel: straggler %d out of range 0..%u", b,
                           s->nranks - 1);
    st = ccs_sched_clone(s, &c, err);
    if (st != CCS_OK)
        return st;
    if (a != b) {
        ccs_op_t *ops = c->rank_ops[a];
        uint32_t nops = c->rank_nops[a], cap = c->rank_cap[a];
        c->rank_ops[a] = c->rank_ops[b];
        c->rank_nops[a] = c->rank_nops[b];
        c->rank_cap[a] = c->rank_cap[b];
        c->rank_ops[b] = ops;
        c->rank_nops[b] = nops;
        c->rank_cap[b] = cap;
        for (uint32_t r = 0; r < c->nranks; r++)
            for (uint32_t i = 0; i < c->rank_nops[r]; i++)
                if (c->rank_ops[r][i].peer >= 0)
                    c->rank_ops[r][i].peer = (int32_t)ccs_relabel_rank(
                        a, b, (uint32_t)c->rank_ops[r][i].peer);
    }
    c->straggler = b;
    *out = c;    /* ownership to the caller */
    return CCS_OK;
}

double ccs_busbw_factor(ccs_coll_t coll, uint32_t nranks)
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
