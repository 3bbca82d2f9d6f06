/*
 * symcheck.h - a small independent symbolic executor for schedules, used by
 * the algorithm tests (header only, test code).
 *
 * It is deliberately separate from synth/verify/verify.c: the baseline tests use
 * both, so a bug in one is caught by the other.  Limited to 64 ranks (a
 * value is an origin chunk plus a 64-bit set of contributing ranks).
 *
 *   symcheck_run(s, &st, msg, len)   execute; 0 on success, else -1 and a
 *                                    message naming step, rank and chunk
 *   symcheck_post(s, &st, msg, len)  the collective's postcondition
 *   symcheck_free(&st)
 *
 * Rules checked while running (runtime/sched.h): every SEND matches the
 * k-th receive of the same pair in the step with the same size; reads see
 * only written data (IN valid per ccs_coll_in_valid); no (rank, buf, chunk)
 * is written twice or read and written in one step, except by a
 * RECV_REDUCE / REDUCE_LOCAL reading its own destination; reductions
 * combine the same origin chunk and disjoint rank sets; OUT is written
 * only where ccs_coll_out_valid.
 */
#ifndef CCS_TEST_SYMCHECK_H
#define CCS_TEST_SYMCHECK_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../runtime/sched.h"

typedef struct symcheck_val {
    int64_t origin;    /* origin chunk; -1 when never written */
    uint64_t ranks;    /* contributing ranks */
} symcheck_val_t;

typedef struct symcheck {
    uint32_t n, c, k;               /* ranks, chunks, scratch chunks */
    symcheck_val_t *buf[CCS_BUF_COUNT]; /* [n * size] per buffer */
    uint32_t comm_steps;            /* steps with at least one SEND */
    uint32_t max_sends, max_recvs;  /* per rank per step */
} symcheck_t;

static inline void symcheck_free(symcheck_t *st)
{
    for (int b = 0; b < CCS_BUF_COUNT; b++) {
        free(st->buf[b]);
        st->buf[b] = NULL;
    }
}

static inline uint32_t symcheck_size(const symcheck_t *st, unsigned b)
{
    return b == CCS_BUF_SCRATCH ? st->k : st->c;
}

static inline symcheck_val_t *symcheck_at(symcheck_t *st, unsigned b,
                                          uint32_t r, uint32_t ch)
{
    return &st->buf[b][(size_t)r * symcheck_size(st, b) + ch];
}

static inline int symcheck_fail(char *msg, size_t len, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, len, fmt, ap);
    va_end(ap);
    return -1;
}

/* Per-step marks: which step last wrote / read a (rank, buf, chunk). */
typedef struct symcheck_marks {
    uint32_t *wr[CCS_BUF_COUNT], *rd[CCS_BUF_COUNT];
} symcheck_marks_t;

/* A pending write of one chunk. */
typedef struct symcheck_write {
    uint32_t rank, buf, chunk;
    symcheck_val_t val;
} symcheck_write_t;

static inline int symcheck_combine(symcheck_val_t a, symcheck_val_t b,
                                   symcheck_val_t *out)
{
    if (a.origin < 0 || b.origin < 0 || a.origin != b.origin ||
        (a.ranks & b.ranks) != 0)
        return -1;
    out->origin = a.origin;
    out->ranks = a.ranks | b.ranks;
    return 0;
}

static inline int symcheck_run(const ccs_sched_t *s, symcheck_t *st,
                               char *msg, size_t len)
{
    symcheck_marks_t mk = { { 0 }, { 0 } };
    symcheck_write_t *wq = NULL;
    uint32_t *cur = NULL, *end = NULL, *nsend = NULL, *nrecv = NULL;
    size_t wcap = 0, nw;
    int rc = -1;

    memset(st, 0, sizeof(*st));
    if (len > 0)
        msg[0] = '\0';
    if (s->nranks > 64)
        return symcheck_fail(msg, len, "symcheck: more than 64 ranks");
    st->n = s->nranks;
    st->c = s->nchunks;
    st->k = s->nscratch;
    for (int b = 0; b < CCS_BUF_COUNT; b++) {
        size_t sz = (size_t)st->n * symcheck_size(st, (unsigned)b) + 1;

        st->buf[b] = malloc(sz * sizeof(symcheck_val_t));
        mk.wr[b] = calloc(sz, sizeof(uint32_t));
        mk.rd[b] = calloc(sz, sizeof(uint32_t));
        if (st->buf[b] == NULL || mk.wr[b] == NULL || mk.rd[b] == NULL)
            goto out;
        for (size_t i = 0; i < sz; i++)
            st->buf[b][i].origin = -1, st->buf[b][i].ranks = 0;
    }
    for (uint32_t r = 0; r < st->n; r++) {
        for (uint32_t ch = 0; ch < st->c; ch++) {
            if (ccs_coll_in_valid(s, r, ch)) {
                symcheck_at(st, CCS_BUF_IN, r, ch)->origin = ch;
                symcheck_at(st, CCS_BUF_IN, r, ch)->ranks = 1ull << r;
            }
        }
    }
    cur = calloc(st->n, sizeof(*cur));
    end = calloc(st->n, sizeof(*end));
    nsend = calloc(st->n, sizeof(*nsend));
    nrecv = calloc(st->n, sizeof(*nrecv));
    if (cur == NULL || end == NULL || nsend == NULL || nrecv == NULL)
        goto out;

    for (uint32_t t = 0; t < s->nsteps; t++) {
        uint32_t mark = t + 1;
        bool comm = false;

        nw = 0;
        for (uint32_t r = 0; r < st->n; r++) {
            end[r] = cur[r];
            while (end[r] < s->rank_nops[r] && s->rank_ops[r][end[r]].step == t)
                end[r]++;
            nsend[r] = nrecv[r] = 0;
        }
        for (uint32_t r = 0; r < st->n; r++) {
            for (uint32_t i = cur[r]; i < end[r]; i++) {
                const ccs_op_t *op = &s->rank_ops[r][i];
                const ccs_op_t *snd = NULL;
                uint32_t nth = 0, seen = 0;

                if (op->kind == CCS_OP_SEND) {
                    nsend[r]++;
                    comm = true;
                    /* reads are marked below with the other reads */
                }
                if (op->kind == CCS_OP_RECV ||
                    op->kind == CCS_OP_RECV_REDUCE) {
                    uint32_t p = (uint32_t)op->peer;

                    nrecv[r]++;
                    for (uint32_t j = cur[r]; j < i; j++) {
                        const ccs_op_t *o = &s->rank_ops[r][j];
                        if ((o->kind == CCS_OP_RECV ||
                             o->kind == CCS_OP_RECV_REDUCE) &&
                            (uint32_t)o->peer == p)
                            nth++;
                    }
                    for (uint32_t j = cur[p]; j < end[p]; j++) {
                        const ccs_op_t *o = &s->rank_ops[p][j];
                        if (o->kind == CCS_OP_SEND && (uint32_t)o->peer == r &&
                            seen++ == nth) {
                            snd = o;
                            break;
                        }
                    }
                    if (snd == NULL) {
                        symcheck_fail(msg, len, "step %u rank %u: receive "
                                      "#%u from %u has no matching send",
                                      t, r, nth, p);
                        goto out;
                    }
                    if (snd->nchunks != op->nchunks) {
                        symcheck_fail(msg, len, "step %u rank %u: receives "
                                      "%u chunks from %u, which sends %u",
                                      t, r, op->nchunks, p, snd->nchunks);
                        goto out;
                    }
                }
                /* Values and writes, from the pre-step state. */
                for (uint32_t x = 0; x < op->nchunks; x++) {
                    symcheck_val_t v = { -1, 0 }, a, b;
                    bool writes = op->kind != CCS_OP_SEND;
                    uint32_t dch = op->chunk + x;

                    if (op->kind == CCS_OP_SEND) {
                        a = *symcheck_at(st, op->buf, r, dch);
                        if (a.origin < 0) {
                            symcheck_fail(msg, len, "step %u rank %u: sends "
                                          "unwritten %s chunk %u", t, r,
                                          ccs_buf_str(op->buf), dch);
                            goto out;
                        }
                        mk.rd[op->buf][(size_t)r * symcheck_size(st, op->buf)
                                       + dch] = mark;
                        continue;
                    }
                    if (op->kind == CCS_OP_RECV ||
                        op->kind == CCS_OP_RECV_REDUCE)
                        b = *symcheck_at(st, snd->buf, (uint32_t)op->peer,
                                         snd->chunk + x);
                    else
                        b = *symcheck_at(st, op->src_buf, r,
                                         op->src_chunk + x);
                    if (op->kind == CCS_OP_RECV) {
                        v = b;
                    } else if (op->kind == CCS_OP_COPY) {
                        v = b;
                    } else {
                        a = op->kind == CCS_OP_RECV_REDUCE
                                ? *symcheck_at(st, op->src_buf, r,
                                               op->src_chunk + x)
                                : *symcheck_at(st, op->buf, r, dch);
                        if (symcheck_combine(a, b, &v) != 0) {
                            symcheck_fail(msg, len, "step %u rank %u: %s "
                                          "into %s chunk %u combines origin "
                                          "%lld ranks %llx with origin %lld "
                                          "ranks %llx", t, r,
                                          ccs_op_kind_str(op->kind),
                                          ccs_buf_str(op->buf), dch,
                                          (long long)a.origin,
                                          (unsigned long long)a.ranks,
                                          (long long)b.origin,
                                          (unsigned long long)b.ranks);
                            goto out;
                        }
                    }
                    if (v.origin < 0) {
                        symcheck_fail(msg, len, "step %u rank %u: %s reads "
                                      "unwritten data for %s chunk %u", t, r,
                                      ccs_op_kind_str(op->kind),
                                      ccs_buf_str(op->buf), dch);
                        goto out;
                    }
                    /* Local source reads (not the own destination). */
                    if (op->kind == CCS_OP_COPY ||
                        op->kind == CCS_OP_REDUCE_LOCAL ||
                        (op->kind == CCS_OP_RECV_REDUCE &&
                         !(op->src_buf == op->buf &&
                           op->src_chunk == op->chunk)))
                        mk.rd[op->src_buf][(size_t)r *
                                           symcheck_size(st, op->src_buf) +
                                           op->src_chunk + x] = mark;
                    if (writes) {
                        if (op->buf == CCS_BUF_OUT &&
                            !ccs_coll_out_valid(s, r, dch)) {
                            symcheck_fail(msg, len, "step %u rank %u: "
                                          "writes OUT chunk %u, not backed "
                                          "for %s", t, r, dch,
                                          ccs_coll_str(s->coll));
                            goto out;
                        }
                        if (nw == wcap) {
                            size_t nc = wcap ? 2 * wcap : 256;
                            symcheck_write_t *g =
                                realloc(wq, nc * sizeof(*g));
                            if (g == NULL)
                                goto out;
                            wq = g;
                            wcap = nc;
                        }
                        wq[nw].rank = r;
                        wq[nw].buf = op->buf;
                        wq[nw].chunk = dch;
                        wq[nw].val = v;
                        nw++;
                    }
                }
            }
        }
        /* Sends without a receive. */
        for (uint32_t r = 0; r < st->n; r++) {
            for (uint32_t i = cur[r]; i < end[r]; i++) {
                const ccs_op_t *op = &s->rank_ops[r][i];
                uint32_t ns = 0, nr = 0, p = (uint32_t)op->peer;

                if (op->kind != CCS_OP_SEND)
                    continue;
                for (uint32_t j = cur[r]; j < end[r]; j++)
                    ns += s->rank_ops[r][j].kind == CCS_OP_SEND &&
                          (uint32_t)s->rank_ops[r][j].peer == p;
                for (uint32_t j = cur[p]; j < end[p]; j++)
                    nr += (s->rank_ops[p][j].kind == CCS_OP_RECV ||
                           s->rank_ops[p][j].kind == CCS_OP_RECV_REDUCE) &&
                          (uint32_t)s->rank_ops[p][j].peer == r;
                if (ns != nr) {
                    symcheck_fail(msg, len, "step %u: rank %u sends %u "
                                  "transfers to %u, which receives %u", t, r,
                                  ns, p, nr);
                    goto out;
                }
            }
        }
        /* Write conflicts, then apply. */
        for (size_t i = 0; i < nw; i++) {
            size_t idx = (size_t)wq[i].rank *
                         symcheck_size(st, wq[i].buf) + wq[i].chunk;
            if (mk.wr[wq[i].buf][idx] == mark) {
                symcheck_fail(msg, len, "step %u rank %u: %s chunk %u "
                              "written twice", t, wq[i].rank,
                              ccs_buf_str(wq[i].buf), wq[i].chunk);
                goto out;
            }
            if (mk.rd[wq[i].buf][idx] == mark) {
                symcheck_fail(msg, len, "step %u rank %u: %s chunk %u read "
                              "and written in one step", t, wq[i].rank,
                              ccs_buf_str(wq[i].buf), wq[i].chunk);
                goto out;
            }
            mk.wr[wq[i].buf][idx] = mark;
        }
        for (size_t i = 0; i < nw; i++)
            *symcheck_at(st, wq[i].buf, wq[i].rank, wq[i].chunk) = wq[i].val;
        for (uint32_t r = 0; r < st->n; r++) {
            if (nsend[r] > st->max_sends)
                st->max_sends = nsend[r];
            if (nrecv[r] > st->max_recvs)
                st->max_recvs = nrecv[r];
            cur[r] = end[r];
        }
        st->comm_steps += comm;
    }
    rc = 0;
out:
    if (rc != 0 && msg[0] == '\0')
        symcheck_fail(msg, len, "symcheck: out of memory");
    for (int b = 0; b < CCS_BUF_COUNT; b++) {
        free(mk.wr[b]);
        free(mk.rd[b]);
    }
    free(wq);
    free(cur);
    free(end);
    free(nsend);
    free(nrecv);
    return rc;
}

/* The collective's postcondition on OUT (runtime/sched.h). */
static inline int symcheck_post(const ccs_sched_t *s, symcheck_t *st,
                                char *msg, size_t len)
{
    uint64_t all = st->n == 64 ? ~0ull : (1ull << st->n) - 1;
    uint32_t bl = ccs_coll_block(s->coll, s->nranks, s->nchunks);

    for (uint32_t r = 0; r < st->n; r++) {
        for (uint32_t ch = 0; ch < st->c; ch++) {
            symcheck_val_t got = *symcheck_at(st, CCS_BUF_OUT, r, ch);
            symcheck_val_t want = { ch, all };

            switch (s->coll) {
            case CCS_COLL_ALLREDUCE:
                break;
            case CCS_COLL_REDUCESCATTER:
                if (ch / bl != r)
                    continue;
                break;
            case CCS_COLL_ALLGATHER:
                want.ranks = 1ull << (ch / bl);
                break;
            case CCS_COLL_REDUCE:
                if ((int32_t)r != s->root)
                    continue;
                break;
            case CCS_COLL_BROADCAST:
                want.ranks = 1ull << s->root;
                break;
            case CCS_COLL_ALLTOALL:
                want.origin = (int64_t)r * bl + ch % bl;
                want.ranks = 1ull << (ch / bl);
                break;
            default:
                return symcheck_fail(msg, len, "unknown collective");
            }
            if (got.origin != want.origin || got.ranks != want.ranks)
                return symcheck_fail(msg, len, "%s: rank %u OUT chunk %u "
                                     "holds origin %lld ranks %llx, want "
                                     "origin %lld ranks %llx",
                                     ccs_coll_str(s->coll), r, ch,
                                     (long long)got.origin,
                                     (unsigned long long)got.ranks,
                                     (long long)want.origin,
                                     (unsigned long long)want.ranks);
        }
    }
    return 0;
}

#endif /* CCS_TEST_SYMCHECK_H */
