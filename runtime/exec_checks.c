/*
 * exec_checks.c - what the executor settles before a plan's first step:
 * that every rank makes the same call (the first-call agreement) and, for
 * an in-place call, whether the input must be staged (the in-place
 * analysis).  Both are computed once per communicator and cached.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ccs_int.h"
#include "crc32c.h"

/* ---- first-call agreement ----
 *
 * Ranks that make different calls (another plan, count, dtype, op or
 * straggler) would exchange mismatched messages or wait for ones that never
 * come.  So the first time a communicator sees a call, its ranks agree on
 * it before any data moves: each hashes (plan fingerprint, count, dtype,
 * op, straggler) into a key, and a dissemination exchange of (min, max) of
 * the keys -- ceil(log2 R) rounds of one 16-byte message, round k to rank
 * r + 2^k -- gives every rank the same min and max.  min != max is a
 * mismatch, reported on every rank.  A rank whose call is cached while
 * a peer's is not cannot tell; the peer sees garbage or a size mismatch
 * and aborts the communicator (threads), or the wait times out (mpi), so
 * every failure leaves the communicator unusable, as in NCCL.  Agreed keys
 * are cached per
 * communicator, so later calls cost a hash and a compare.  Host-memory
 * transports only (a GPU transport's messages live in device memory and
 * complete on a stream).  The exchange's steps lie above any plan step
 * (CCS_MAX_STEPS), so tags and matching never mix with the plan's. */
#define AGREE_STEP 0xffffff00u

uint64_t ccs_mix64(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    h ^= h >> 31;
    h *= 0xbf58476d1ce4e5b9ull;
    return h ^ (h >> 29);
}

/* A hash of everything in the schedule that the ranks must share. */
uint64_t ccs_plan_fingerprint(const ccs_plan_t *plan)
{
    uint64_t fp = atomic_load_explicit(&((ccs_plan_t *)(uintptr_t)plan)
                                            ->fingerprint,
                                       memory_order_relaxed);
    const ccs_sched_t *s = plan->sched;

    if (fp != 0)
        return fp;
    fp = ccs_mix64(0x63637366ull, (uint64_t)s->coll);
    fp = ccs_mix64(fp, s->nranks);
    fp = ccs_mix64(fp, s->nchunks);
    fp = ccs_mix64(fp, s->nscratch);
    fp = ccs_mix64(fp, s->nsteps);
    fp = ccs_mix64(fp, (uint64_t)(uint32_t)s->root);
    fp = ccs_mix64(fp, (uint64_t)(uint32_t)s->straggler);
    fp = ccs_mix64(fp, ccs_crc32c(0, s->algo, sizeof(s->algo)));
    fp = ccs_mix64(fp, ccs_crc32c(0, s->step_phase, s->nsteps));
    for (uint32_t r = 0; r < s->nranks; r++) {
        /* ccs_op_t has no padding (24 bytes of fixed-width fields). */
        fp = ccs_mix64(fp, s->rank_nops[r]);
        fp = ccs_mix64(fp, ccs_crc32c(0, s->rank_ops[r],
                                  (size_t)s->rank_nops[r] *
                                      sizeof(ccs_op_t)));
    }
    if (fp == 0)
        fp = 1;
    atomic_store_explicit(&((ccs_plan_t *)(uintptr_t)plan)->fingerprint,
                          fp, memory_order_relaxed);
    return fp;
}

ccs_status_t ccs_exec_agree(ccs_comm_t *comm, const ccs_plan_t *plan,
                            size_t count, ccs_dtype_t dtype, ccs_redop_t op,
                            int32_t straggler, int64_t before_step,
                            bool *disagreed, ccs_err_t *err)
{
    const ccs_xport_ops_t *xo = comm->xops;
    uint64_t fp, key, mine[2], theirs[2];
    uint32_t R = (uint32_t)comm->nranks, me = (uint32_t)comm->rank;
    ccs_status_t st = CCS_OK;
    bool known = false;

    if (R < 2 || xo->device_mem || comm->agree_off)
        return CCS_OK;
    /* A run of identical calls (the common case) is answered by the last
     * call, compared field by field, before any key hashing. */
    fp = ccs_plan_fingerprint(plan);
    if (comm->last_valid && comm->last_fp == fp &&
        comm->last_count == count && comm->last_dtype == dtype &&
        comm->last_op == op && comm->last_strag == straggler)
        return CCS_OK;
    key = ccs_mix64(fp, count);
    key = ccs_mix64(key, (uint64_t)dtype);
    key = ccs_mix64(key, (uint64_t)op);
    key = ccs_mix64(key, (uint64_t)(uint32_t)straggler);
    for (unsigned i = 0; i < 8 && !known; i++)
        known = comm->agreed[i] == key;
    if (known)
        goto remember;
    mine[0] = mine[1] = key;
    for (uint32_t k = 0, d = 1; d < R; k++, d = d > R / 2 ? R : 2 * d) {
        uint32_t to = (me + d) % R, from = (me + R - d) % R;
        if ((st = xo->group_begin(comm->x, AGREE_STEP + k, err)) != CCS_OK ||
            (st = xo->recv(comm->x, from, theirs, sizeof(theirs),
                           AGREE_STEP + k, 0, err)) != CCS_OK ||
            (st = xo->send(comm->x, to, mine, sizeof(mine), AGREE_STEP + k,
                           0, err)) != CCS_OK ||
            (st = xo->group_end(comm->x, err)) != CCS_OK ||
            (st = xo->wait(comm->x, err)) != CCS_OK)
            break;
        if (theirs[0] < mine[0])
            mine[0] = theirs[0];
        if (theirs[1] > mine[1])
            mine[1] = theirs[1];
    }
    if (st != CCS_OK) {
        if (before_step >= 0)
            ccs_err_prefix(err, "rank %u, before step %lld, agreeing on "
                           "the call with the other ranks: ", me,
                           (long long)before_step);
        else
            ccs_err_prefix(err, "rank %u, after its last step, agreeing on "
                           "the call with the other ranks: ", me);
        return st;
    }
    if (mine[0] != mine[1]) {
        *disagreed = true;
        return ccs_err_set(err, CCS_ERR_MISMATCH,
                           "rank %u: the ranks made different calls (plan, "
                           "count, dtype, op or straggler differ; this rank: "
                           "%s %s count %zu %s %s straggler %d); nothing "
                           "was moved", me, plan->sched->algo,
                           ccs_coll_str(plan->sched->coll), count,
                           ccs_dtype_str(dtype), ccs_redop_str(op),
                           straggler);
    }
    comm->agreed[comm->agreed_next++ % 8] = key;
remember:
    comm->last_valid = true;
    comm->last_fp = fp;
    comm->last_count = count;
    comm->last_dtype = dtype;
    comm->last_op = op;
    comm->last_strag = straggler;
    return CCS_OK;
}

/* ---- in place ----
 *
 * With sendbuff == recvbuff, OUT[c] and IN[c] are the same bytes.  plan.c
 * flags the ranks that read IN[c] at or after a write of OUT[c].  Two
 * cases differ in cost:
 *   - the write comes from a receive in the same step as the read (a
 *     SEND of IN[c] beside a RECV_REDUCE into OUT[c]: StragglAR's
 *     straggler): landing that receive in staging and writing OUT[c]
 *     after the step's wait -- when every send of the step has completed
 *     -- is enough; nothing is copied up front;
 *   - anything else (the read in a later step, or a local op writing in
 *     the same step): the input is copied to the arena before the steps.
 * The analysis is O(ops of the rank + C), done once per (communicator,
 * plan) and cached. */
ccs_status_t ccs_exec_inplace(ccs_comm_t *comm, const ccs_plan_t *plan,
                              uint32_t L, bool *need_copy,
                              const uint8_t **force, ccs_err_t *err)
{
    const ccs_sched_t *s = plan->sched;
    const ccs_op_t *ops = s->rank_ops[L];
    uint32_t n = s->rank_nops[L], C = s->nchunks;
    uint64_t fp = ccs_plan_fingerprint(plan);
    uint32_t *w = NULL;        /* [C] first step writing OUT[c]; freed */
    uint32_t *wop = NULL;      /* [C] the op that writes it; freed */
    uint8_t *f;
    bool copy = false, any = false;

    if (comm->ip_plan == plan && comm->ip_fp == fp && comm->ip_rank == L) {
        *need_copy = comm->ip_copy;
        *force = comm->ip_any ? comm->ip_force : NULL;
        return CCS_OK;
    }
    if (comm->ip_cap < n + 1) {
        f = realloc(comm->ip_force, n + 1);
        if (f == NULL)
            return ccs_err_set(err, CCS_ERR_NOMEM, "out of memory");
        comm->ip_force = f;         /* owned by comm */
        comm->ip_cap = n + 1;
    }
    f = comm->ip_force;
    memset(f, 0, n + 1);
    comm->ip_plan = NULL;           /* invalid until filled */
    w = malloc((size_t)C * sizeof(*w));
    wop = malloc((size_t)C * sizeof(*wop));
    if (w == NULL || wop == NULL) {
        free(w);
        free(wop);
        return ccs_err_set(err, CCS_ERR_NOMEM, "out of memory");
    }
    for (uint32_t c = 0; c < C; c++)
        w[c] = UINT32_MAX;
    for (uint32_t i = 0; i < n; i++) {
        if (ops[i].kind == CCS_OP_SEND || ops[i].buf != CCS_BUF_OUT)
            continue;
        for (uint32_t k = 0; k < ops[i].nchunks; k++) {
            if (w[ops[i].chunk + k] == UINT32_MAX) {
                w[ops[i].chunk + k] = ops[i].step;
                wop[ops[i].chunk + k] = i;
            }
        }
    }
    for (uint32_t i = 0; i < n && !copy; i++) {
        const ccs_op_t *op = &ops[i];
        uint32_t c0;
        if (op->kind == CCS_OP_SEND && op->buf == CCS_BUF_IN)
            c0 = op->chunk;
        else if (op->kind != CCS_OP_SEND && op->kind != CCS_OP_RECV &&
                 op->src_buf == CCS_BUF_IN)
            c0 = op->src_chunk;
        else
            continue;
        for (uint32_t k = 0; k < op->nchunks; k++) {
            uint32_t c = c0 + k, wk;
            bool self = op->kind != CCS_OP_SEND && op->buf == CCS_BUF_OUT &&
                        op->chunk == c0 && w[c] == op->step;
            if (w[c] > op->step || self)
                continue;
            wk = ops[wop[c]].kind;
            if (w[c] < op->step ||
                (wk != CCS_OP_RECV && wk != CCS_OP_RECV_REDUCE)) {
                copy = true;
                break;
            }
            f[wop[c]] = 1;
            any = true;
        }
    }
    free(w);
    free(wop);
    comm->ip_plan = plan;
    comm->ip_fp = fp;
    comm->ip_rank = L;
    comm->ip_copy = copy;
    comm->ip_any = any && !copy;
    *need_copy = copy;
    *force = comm->ip_any ? f : NULL;
    return CCS_OK;
}
