/*
 * plan.c - loading a schedule into a runnable plan.
 *
 * A plan is a schedule that passed every check the executor relies on,
 * plus per-rank tables computed once at load time so that a run does no
 * searching:
 *   - structure (ccs_sched_validate) and the reader's format checks;
 *   - buffer validity per collective: a rank reads only IN chunks that
 *     hold input and touches only OUT chunks backed by the user's buffer
 *     (sched.h, ccs_coll_in_valid/out_valid), so no access ever falls
 *     outside what the user passed;
 *   - matching (the verifier's pairing rule, ccs_pair_stream_*): in every
 *     step, the k-th send from a to b has a k-th receive on b from a with
 *     the same chunk count, so no run can hang on an unmatched transfer or
 *     read past a message;
 *   - hazards within a step (ccs_sched_step_hazard, the verifier's rule
 *     and words): no chunk written twice or read and written, so the
 *     order in which a transport completes a step's ops cannot matter;
 *   - the number of steps of each rank (the executor finds each step's
 *     ops from the sorted ops: ccs_plan_group), the per-peer sequence
 *     number of each transfer (MPI tags; a table only for ranks where
 *     one is not 0), staging needs per step (summed in 64 bits and
 *     refused past what the executor's 32-bit count holds), and the
 *     in-place hazard (IN[c] read after OUT[c] was written).
 * Every check costs O(ops) or O(ops log ops) of the file, never ranks x
 * chunks: a loader that trusts nothing must not be made slow by a header
 * either.  All of it is one pass over each rank's ops while they are in
 * cache (scan_rank), run as the reader hands over each rank (plan_build:
 * on a helper thread for a large plan); a check that fails there is
 * worded by its own full function afterwards, in the order above, so a
 * bad file gets the same message it always got.
 */
#ifdef __linux__
#define _GNU_SOURCE   /* sched_getaffinity, CPU_COUNT */
#include <sched.h>
#endif
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ccs_int.h"
#include "format.h"

static bool has_src(unsigned kind)
{
    return kind == CCS_OP_RECV_REDUCE || kind == CCS_OP_COPY ||
           kind == CCS_OP_REDUCE_LOCAL;
}

void ccs_plan_destroy(ccs_plan_t *plan)
{
    if (plan == NULL)
        return;
    if (plan->seq != NULL) {
        for (uint32_t r = 0; r < plan->nseq; r++)
            if (plan->seq[r] != plan->seq_zero)
                free(plan->seq[r]);
    }
    free(plan->seq);
    free(plan->seq_zero);
    free(plan->ngroups);
    free(plan->stage_chunks);
    free(plan->scratch_chunks);
    free(plan->inplace_hazard);
    if (!plan->sched_borrowed)
        ccs_sched_destroy(plan->sched);
    free(plan);
}

/* First chunk of [c, c + n) outside [lo, hi), as an offset k < n; n when
 * the range lies inside. */
static uint32_t first_outside(uint32_t c, uint32_t n, uint32_t lo,
                              uint32_t hi)
{
    if (lo >= hi || c < lo || c >= hi)
        return 0;
    return (uint64_t)c + n <= hi ? n : hi - c;
}

/* Every IN read and OUT access of every rank stays where the collective
 * says the user's buffers have data.  O(ops): the valid chunks of a rank
 * form one span (ccs_coll_valid_span), so each op is one range test. */
static ccs_status_t check_buffers(const ccs_sched_t *s, ccs_err_t *err)
{
    for (uint32_t r = 0; r < s->nranks; r++) {
        uint32_t ilo, ihi, olo, ohi;

        ccs_coll_valid_span(s, r, false, &ilo, &ihi);
        ccs_coll_valid_span(s, r, true, &olo, &ohi);
        for (uint32_t i = 0; i < s->rank_nops[r]; i++) {
            const ccs_op_t *op = &s->rank_ops[r][i];
            bool src = has_src(op->kind);
            uint32_t n = op->nchunks;
            uint32_t kin = n, ksrc = n, kout = n, ksout = n, k;

            if (op->buf == CCS_BUF_IN)
                kin = first_outside(op->chunk, n, ilo, ihi);
            if (src && op->src_buf == CCS_BUF_IN)
                ksrc = first_outside(op->src_chunk, n, ilo, ihi);
            if (op->buf == CCS_BUF_OUT)
                kout = first_outside(op->chunk, n, olo, ohi);
            if (src && op->src_buf == CCS_BUF_OUT)
                ksout = first_outside(op->src_chunk, n, olo, ohi);
            k = kin < ksrc ? kin : ksrc;
            k = kout < k ? kout : k;
            k = ksout < k ? ksout : k;
            if (k == n)
                continue;
            if (k == kin || k == ksrc)
                return ccs_err_set(err, CCS_ERR_FORMAT,
                    "rank %u op %u (step %u): %s reads IN chunk %u, "
                    "which holds no input on this rank for %s", r, i,
                    op->step, ccs_op_kind_str(op->kind),
                    (k == kin ? op->chunk : op->src_chunk) + k,
                    ccs_coll_str(s->coll));
            return ccs_err_set(err, CCS_ERR_FORMAT,
                "rank %u op %u (step %u): %s uses OUT chunk %u, "
                "which is not part of this rank's output for %s "
                "(use SCRATCH)", r, i, op->step, ccs_op_kind_str(op->kind),
                (k == kout ? op->chunk : op->src_chunk) + k,
                ccs_coll_str(s->coll));
        }
    }
    return CCS_OK;
}

/* Chunk-by-chunk in-place analysis stops past this much work over the
 * whole plan: the ranks left get the conservative answer (stage the input),
 * which is always safe, so load time stays bounded by the file. */
#define INPLACE_EXACT_WORK (UINT64_C(1) << 26)

/* The in-place hazard of one rank, whose ops read IN and write OUT
 * (`work` chunks of them): exact while the plan's budget lasts, else the
 * safe answer (stage the input).  first_w / owner are shared by the ranks
 * (an owner stamp per chunk instead of clearing them), made on first use. */
typedef struct inplace {
    uint32_t *first_w;   /* [C] first step writing OUT[c]; owned */
    uint32_t *owner;     /* [C] 1 + the rank first_w[c] is for; owned */
    uint64_t budget;
} inplace_t;

static ccs_status_t inplace_rank(ccs_plan_t *p, uint32_t r, uint64_t work,
                                 inplace_t *ip, ccs_err_t *err)
{
    const ccs_sched_t *s = p->sched;
    const ccs_op_t *ops = s->rank_ops[r];
    uint32_t *first_w, *owner;

    if (work > ip->budget) {
        p->inplace_hazard[r] = 1;
        return CCS_OK;
    }
    ip->budget -= work;
    if (ip->first_w == NULL) {
        /* calloc: untouched pages cost nothing, so a plan that writes
         * few chunks of a large buffer pays for those only. */
        ip->first_w = malloc((size_t)s->nchunks * sizeof(*ip->first_w));
        ip->owner = calloc(s->nchunks, sizeof(*ip->owner));
        if (ip->first_w == NULL || ip->owner == NULL)
            return ccs_err_set(err, CCS_ERR_NOMEM, "out of memory");
    }
    first_w = ip->first_w;
    owner = ip->owner;
    for (uint32_t i = 0; i < s->rank_nops[r]; i++) {
        if (ops[i].kind == CCS_OP_SEND || ops[i].buf != CCS_BUF_OUT)
            continue;
        for (uint32_t k = 0; k < ops[i].nchunks; k++) {
            uint32_t c = ops[i].chunk + k;
            if (owner[c] != r + 1) {
                owner[c] = r + 1;
                first_w[c] = ops[i].step;
            }
        }
    }
    /* A read of IN[c] at step t is unsafe when sendbuff aliases
     * recvbuff and OUT[c] is written at a step <= t -- except by the
     * reading op itself, element by element (dst = IN (+) x). */
    for (uint32_t i = 0; i < s->rank_nops[r] && !p->inplace_hazard[r];
         i++) {
        const ccs_op_t *op = &ops[i];
        uint32_t c0;
        if (op->kind == CCS_OP_SEND && op->buf == CCS_BUF_IN)
            c0 = op->chunk;
        else if (has_src(op->kind) && op->src_buf == CCS_BUF_IN)
            c0 = op->src_chunk;
        else
            continue;
        for (uint32_t k = 0; k < op->nchunks; k++) {
            uint32_t c = c0 + k;
            uint32_t w = owner[c] == r + 1 ? first_w[c] : UINT32_MAX;
            bool self = op->kind != CCS_OP_SEND &&
                        op->buf == CCS_BUF_OUT && op->chunk == c0 &&
                        w == op->step;
            if (w <= op->step && !self) {
                p->inplace_hazard[r] = 1;
                break;
            }
        }
    }
    return CCS_OK;
}

/* Largest step that small_step_collides handles; larger ones go to the
 * full check. */
#define SMALL_STEP_OPS 8

/* One op of a small step as the hazard rule sees it: what it writes and
 * what it reads that counts (the own-destination read of RECV_REDUCE /
 * REDUCE_LOCAL does not), each (buffer, [lo, hi)); buffer CCS_BUF_COUNT
 * when there is none. */
typedef struct sival {
    unsigned wb, rb;
    uint64_t wlo, whi, rlo, rhi;
} sival_t;

/* Could two ops of a small step collide?  The rule of
 * ccs_sched_step_hazard, pair by pair: a write meeting an earlier write,
 * or meeting any read (its own op's included).  Exact, so a "no" skips
 * the full check; a "yes" gets its words from it. */
static bool small_step_collides(const sival_t *v, uint32_t n)
{
    for (uint32_t j = 0; j < n; j++) {
        if (v[j].wb == CCS_BUF_COUNT)
            continue;
        for (uint32_t k = 0; k < n; k++) {
            if (k < j && v[k].wb == v[j].wb && v[k].wlo < v[j].whi &&
                v[k].whi > v[j].wlo)
                return true;
            if (v[k].rb == v[j].wb && v[k].rlo < v[j].whi &&
                v[k].rhi > v[j].wlo)
                return true;
        }
    }
    return false;
}

/* One pass over each rank's ops, while they are in cache: find its steps,
 * number each transfer per (step, peer, direction) (MPI tags), sum the
 * staging each step may need, find the first step with a hazard and the
 * first step past the staging limit, run the rank's in-place analysis and
 * feed the pairing check.  The failures are reported afterwards in the
 * order the checks were specified in (buffers, pairing, hazards,
 * staging), whatever rank they occur on, each worded by its own full
 * check.  A loader that reads the file rank by rank (format.c) runs the
 * pass on each rank as it arrives (plan_rank_hook). */
typedef struct scan {
    bool hazard;             /* a step with a hazard: rank, its ops */
    uint32_t hazard_r, hazard_first, hazard_end, hazard_step;
    bool too_big;            /* a step past 32 bits of staging */
    uint32_t big_r, big_step;
    uint64_t big_sum;
    bool outside;            /* some op leaves its valid spans: the words
                                come from check_buffers */
    uint32_t next;           /* ranks scanned */
    uint64_t group_id;
    uint64_t *stamp;         /* [2R] group stamp of each counter; owned */
    uint32_t *cnt;           /* [2R] sends to / recvs from peer; owned */
    uint32_t *seq;           /* [longest rank] one rank's numbers; owned */
    ccs_pair_stream_t *pairs;  /* owned */
    inplace_t ip;            /* owned arrays */
} scan_t;

static void scan_free(scan_t *sc)
{
    free(sc->stamp);
    free(sc->cnt);
    free(sc->seq);
    ccs_pair_stream_destroy(sc->pairs);
    free(sc->ip.first_w);
    free(sc->ip.owner);
    memset(sc, 0, sizeof(*sc));
}

/* The plan's per-rank tables and the scan's state, for plan p around a
 * schedule whose header and op counts are final. */
static ccs_status_t scan_begin(ccs_plan_t *p, scan_t *sc, ccs_err_t *err)
{
    const ccs_sched_t *s = p->sched;
    uint32_t R = s->nranks, most = 1;

    memset(sc, 0, sizeof(*sc));
    sc->ip.budget = INPLACE_EXACT_WORK;
    for (uint32_t r = 0; r < R; r++)
        most = s->rank_nops[r] > most ? s->rank_nops[r] : most;
    p->seq = calloc(R, sizeof(*p->seq));
    p->nseq = p->seq != NULL ? R : 0;
    p->ngroups = calloc(R, sizeof(*p->ngroups));
    p->stage_chunks = calloc(R, sizeof(*p->stage_chunks));
    p->scratch_chunks = calloc(R, sizeof(*p->scratch_chunks));
    p->inplace_hazard = calloc(R, 1);
    /* calloc: pages no rank reads beyond cost nothing. */
    p->seq_zero = calloc(most, sizeof(*p->seq_zero));
    sc->stamp = calloc(2 * (size_t)R, sizeof(*sc->stamp));
    sc->cnt = calloc(2 * (size_t)R, sizeof(*sc->cnt));
    sc->seq = malloc((size_t)most * sizeof(*sc->seq));
    if (p->seq == NULL || p->ngroups == NULL || p->stage_chunks == NULL ||
        p->scratch_chunks == NULL || p->inplace_hazard == NULL || p->seq_zero == NULL ||
        sc->stamp == NULL || sc->cnt == NULL || sc->seq == NULL ||
        ccs_pair_stream_create(R, &sc->pairs) != CCS_OK)
        return ccs_err_set(err, CCS_ERR_NOMEM, "out of memory indexing plan");
    return CCS_OK;
}

/* The pass over the next rank's ops (ranks in order). */
static ccs_status_t scan_rank(ccs_plan_t *p, scan_t *sc, ccs_err_t *err)
{
    const ccs_sched_t *s = p->sched;
    uint32_t r = sc->next++;
    const ccs_op_t *ops = s->rank_ops[r];
    uint32_t n = s->rank_nops[r];
    uint32_t *seq = sc->seq, *stamp_cnt = sc->cnt;
    uint64_t *stamp = sc->stamp;
    uint32_t ng = 0, ilo, ihi, olo, ohi, any_seq = 0;
    uint64_t most = 0, work = 0, group_id = sc->group_id, scratch_end = 0;
    bool reads_in = false, writes_out = false, outside = false;
    ccs_status_t st;

    ccs_coll_valid_span(s, r, false, &ilo, &ihi);
    ccs_coll_valid_span(s, r, true, &olo, &ohi);
    /* By buffer: IN, OUT, and SCRATCH, which always holds (the reader
     * bounded it). */
    const uint64_t span_lo[CCS_BUF_COUNT] = { ilo, olo, 0 };
    const uint64_t span_hi[CCS_BUF_COUNT] = { ihi, ohi, UINT64_MAX };

    for (uint32_t i = 0; i < n;) {
        uint32_t e = i + 1;
        uint64_t sum = 0;
        sival_t iv[SMALL_STEP_OPS];
        bool small;
        while (e < n && ops[e].step == ops[i].step)
            e++;
        small = e - i <= SMALL_STEP_OPS;
        group_id++;
        for (uint32_t k = i; k < e; k++) {
            const ccs_op_t *op = &ops[k];
            /* Kinds, buffers and ranges passed the reader's checks: the
             * tests below are plain arithmetic on them. */
            unsigned kind = op->kind, b = op->buf, sb = op->src_buf;
            uint64_t nch = op->nchunks;
            bool send = kind == CCS_OP_SEND;
            bool src = kind >= CCS_OP_RECV_REDUCE;
            bool rin = (send & (b == CCS_BUF_IN)) |
                       (src & (sb == CCS_BUF_IN));
            bool wout = !send & (b == CCS_BUF_OUT);
            outside |= (op->chunk < span_lo[b]) |
                       (op->chunk + nch > span_hi[b]);
            outside |= src & ((op->src_chunk < span_lo[sb]) |
                              (op->src_chunk + nch > span_hi[sb]));
            if (b == CCS_BUF_SCRATCH && op->chunk + nch > scratch_end)
                scratch_end = op->chunk + nch;
            if (src && sb == CCS_BUF_SCRATCH &&
                op->src_chunk + nch > scratch_end)
                scratch_end = op->src_chunk + nch;
            reads_in |= rin;
            writes_out |= wout;
            work += (rin | wout) ? nch : 0;
            if (small) {
                sival_t *v = &iv[k - i];
                bool own = sb == b && op->src_chunk == op->chunk;
                v->wb = send ? CCS_BUF_COUNT : b;
                v->wlo = op->chunk;
                v->whi = op->chunk + nch;
                if (send) {
                    v->rb = b;
                    v->rlo = op->chunk;
                } else if (kind == CCS_OP_RECV ||
                           (kind != CCS_OP_COPY && own)) {
                    v->rb = CCS_BUF_COUNT;
                    v->rlo = 0;
                } else {
                    v->rb = sb;
                    v->rlo = op->src_chunk;
                }
                v->rhi = v->rlo + nch;
            }
            seq[k] = 0;
            if (kind > CCS_OP_RECV_REDUCE)
                continue;
            sum += nch;
            if (small) {
                /* A small step counts its earlier transfers with the same
                 * peer and direction: no counter tables to touch. */
                for (uint32_t j = i; j < k; j++)
                    seq[k] += ops[j].peer == op->peer &&
                              ops[j].kind <= CCS_OP_RECV_REDUCE &&
                              (ops[j].kind == CCS_OP_SEND) == send;
            } else {
                size_t c = (size_t)op->peer * 2 + !send;
                if (stamp[c] != group_id) {
                    stamp[c] = group_id;
                    stamp_cnt[c] = 0;
                }
                seq[k] = stamp_cnt[c]++;
            }
            any_seq |= seq[k];
        }
        if (sum > most)
            most = sum;
        if (sum > UINT32_MAX && !sc->too_big) {
            sc->too_big = true;
            sc->big_r = r;
            sc->big_step = ops[i].step;
            sc->big_sum = sum;
        }
        if (!sc->hazard && e - i >= 2) {
            bool bad;
            if (small) {
                bad = small_step_collides(iv, e - i);
            } else {
                ccs_err_t scratch;
                ccs_err_clear(&scratch);
                bad = ccs_sched_step_hazard(&ops[i], e - i, ops[i].step, r,
                                            CCS_ERR_FORMAT, &scratch) !=
                      CCS_OK;
            }
            if (bad) {
                sc->hazard = true;
                sc->hazard_r = r;
                sc->hazard_first = i;
                sc->hazard_end = e;
                sc->hazard_step = ops[i].step;
            }
        }
        ng++;
        i = e;
    }
    sc->group_id = group_id;
    /* Only a rank with some number above 0 gets its own table. */
    if (any_seq != 0) {
        p->seq[r] = malloc((size_t)n * sizeof(*p->seq[r]));
        if (p->seq[r] == NULL)
            return ccs_err_set(err, CCS_ERR_NOMEM,
                               "out of memory indexing plan");
        memcpy(p->seq[r], seq, (size_t)n * sizeof(*seq));
    } else {
        p->seq[r] = p->seq_zero;
    }
    p->ngroups[r] = ng;
    p->stage_chunks[r] = most > UINT32_MAX ? UINT32_MAX : (uint32_t)most;
    /* The reader bounded every SCRATCH range by nscratch (< 2^24). */
    p->scratch_chunks[r] = (uint32_t)scratch_end;
    sc->outside |= outside;
    /* The in-place analysis and the pairing of this rank while its ops are
     * in cache. */
    if (reads_in && writes_out &&
        (st = inplace_rank(p, r, work, &sc->ip, err)) != CCS_OK)
        return st;
    if (ccs_pair_stream_rank(sc->pairs, ops, n) != CCS_OK)
        return ccs_err_set(err, CCS_ERR_NOMEM, "out of memory pairing ops");
    return CCS_OK;
}

/* After every rank's pass: the verdicts, in the specified order, each in
 * the words of its full check.  Matching (the shared pairing rule) and the
 * per-step hazards (the verifier's rule, same words): a plan that passes
 * cannot hang on an unmatched transfer, read past a message, or have two
 * ops of a step race on one chunk. */
static ccs_status_t scan_end(const ccs_plan_t *p, const scan_t *sc,
                             ccs_err_t *err)
{
    const ccs_sched_t *s = p->sched;
    ccs_status_t st;

    if (sc->outside && (st = check_buffers(s, err)) != CCS_OK)
        return st;
    if (!ccs_pair_stream_ok(sc->pairs))
        return ccs_sched_pair_fail(s, CCS_ERR_FORMAT, err);
    if (sc->hazard) {
        st = ccs_sched_step_hazard(&s->rank_ops[sc->hazard_r]
                                               [sc->hazard_first],
                                   sc->hazard_end - sc->hazard_first,
                                   sc->hazard_step, sc->hazard_r,
                                   CCS_ERR_FORMAT, err);
        if (st == CCS_OK)   /* cannot happen: one rule */
            st = ccs_err_set(err, CCS_ERR_FORMAT, "step %u, rank %u: "
                             "hazard", sc->hazard_step, sc->hazard_r);
        return st;
    }
    if (sc->too_big)
        return ccs_err_set(err, CCS_ERR_FORMAT,
            "step %u, rank %u: %llu chunks in transfer in one step, "
            "more than the runtime's staging can address (%u)",
            sc->big_step, sc->big_r, (unsigned long long)sc->big_sum,
            UINT32_MAX);
    return CCS_OK;
}

/* A plan built while the reader decodes, rank by rank (the reader's
 * per-rank hook), so that each rank's ops are looked at right after the
 * reader has brought them into cache.  A large plan is scanned on a
 * helper thread instead, rank by rank behind the reader, so that the
 * reading and checking of the file (read, checksum, per-op checks) and
 * the plan's own checks overlap; the thread lives only during the load
 * (joined before the loader returns, or before the reader destroys a
 * schedule it fails on) and touches nothing but this build.  No thread
 * is made for a small plan, with CCS_LOAD_THREADS=0, or when making one
 * fails, nor for a process that may run on one CPU only (a rank bound to
 * a core, where a second thread would only take turns with the first):
 * the scan then runs in the hook.  CCS_LOAD_THREADS=1 makes one for any
 * plan, for tests. */
typedef struct plan_build {
    ccs_plan_t *p;    /* owned; its sched borrowed from the reader until
                         plan_adopt; NULL before the first rank */
    scan_t sc;        /* owned; the helper's alone while it runs */
    bool failed;      /* out of memory on the way (or the reader reset):
                         plan_adopt starts over and reports what it meets
                         itself */
    bool threaded;    /* a helper runs (or ran: joined) */
    bool joined;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    uint32_t ready;   /* ranks the reader has checked; under mu */
    bool stop;        /* no more ranks will come; under mu */
    bool sleeping;    /* the helper waits for ranks; under mu */
    bool helper_failed; /* the helper's own failure; read after the join */
} plan_build_t;

/* Plans with at least this many ops get a helper thread: below it, a
 * thread costs more than it saves. */
#define BUILD_THREAD_OPS (UINT64_C(1) << 20)
/* A waiting helper wakes when this many ranks are ready (or the reader is
 * done): fewer wake-ups than one per rank. */
#define BUILD_WAKE_RANKS 8u

static void *build_main(void *arg)
{
    plan_build_t *b = arg;
    uint32_t R = b->p->sched->nranks, r = 0;
    ccs_err_t scratch;

    ccs_err_clear(&scratch);
    while (r < R && !b->helper_failed) {
        uint32_t ready;
        pthread_mutex_lock(&b->mu);
        while (b->ready <= r && !b->stop) {
            b->sleeping = true;
            pthread_cond_wait(&b->cv, &b->mu);
        }
        b->sleeping = false;
        ready = b->ready;
        pthread_mutex_unlock(&b->mu);
        if (ready <= r)   /* stopped */
            break;
        for (; r < ready && !b->helper_failed; r++)
            b->helper_failed = scan_rank(b->p, &b->sc, &scratch) != CCS_OK;
    }
    return NULL;
}

/* No more ranks: let the helper finish what it was given and join it. */
static void build_join(plan_build_t *b)
{
    if (b == NULL || !b->threaded || b->joined)
        return;
    pthread_mutex_lock(&b->mu);
    b->stop = true;
    pthread_cond_signal(&b->cv);
    pthread_mutex_unlock(&b->mu);
    pthread_join(b->thread, NULL);
    pthread_mutex_destroy(&b->mu);
    pthread_cond_destroy(&b->cv);
    b->joined = true;
    if (b->helper_failed || b->sc.next != b->ready)
        b->failed = true;
}

/* ccs_plan_destroy for a plan whose schedule is not its own (yet). */
static void plan_drop_tables(ccs_plan_t *p)
{
    if (p == NULL)
        return;
    p->sched_borrowed = true;
    ccs_plan_destroy(p);
}

static void build_free(plan_build_t *b)
{
    if (b == NULL)
        return;
    build_join(b);
    plan_drop_tables(b->p);
    b->p = NULL;
    scan_free(&b->sc);
}

/* May this process run on more than one CPU? */
static bool several_cpus(void)
{
#ifdef __linux__
    cpu_set_t set;

    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof(set), &set) == 0)
        return CPU_COUNT(&set) > 1;
#endif
    return sysconf(_SC_NPROCESSORS_ONLN) > 1;
}

/* Start the helper for a large plan, unless told not to. */
static void build_start(plan_build_t *b)
{
    const ccs_sched_t *s = b->p->sched;
    const char *env = getenv("CCS_LOAD_THREADS");
    sigset_t all, old;
    bool made;

    /* CCS_LOAD_THREADS: 0 never, 1 for every plan (tests), else large
     * plans only. */
    if (env != NULL && strcmp(env, "0") == 0)
        return;
    if ((env == NULL || strcmp(env, "1") != 0) &&
        (ccs_sched_total_ops(s) < BUILD_THREAD_OPS || !several_cpus()))
        return;
    if (pthread_mutex_init(&b->mu, NULL) != 0)
        return;
    if (pthread_cond_init(&b->cv, NULL) != 0) {
        pthread_mutex_destroy(&b->mu);
        return;
    }
    b->ready = 0;
    b->stop = b->sleeping = b->helper_failed = false;
    /* The helper starts with every signal blocked, so that none of the
     * application's is delivered on a thread it does not know about. */
    sigfillset(&all);
    if (pthread_sigmask(SIG_SETMASK, &all, &old) != 0) {
        pthread_cond_destroy(&b->cv);
        pthread_mutex_destroy(&b->mu);
        return;
    }
    made = pthread_create(&b->thread, NULL, build_main, b) == 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (!made) {
        pthread_cond_destroy(&b->cv);
        pthread_mutex_destroy(&b->mu);
        return;
    }
    b->threaded = true;
}

static void plan_rank_hook(void *ctx, ccs_sched_t *s, uint32_t r)
{
    plan_build_t *b = ctx;
    ccs_err_t scratch;

    if (r == CCS_FORMAT_HOOK_RESET) {
        /* The reader is about to destroy s: the helper lets go first. */
        build_join(b);
        b->failed = true;
        return;
    }
    if (b->failed)
        return;
    ccs_err_clear(&scratch);
    if (r == 0 && b->p == NULL) {
        b->p = calloc(1, sizeof(*b->p));
        if (b->p == NULL) {
            b->failed = true;
            return;
        }
        b->p->sched = s;
        b->p->sched_borrowed = true;
        if (scan_begin(b->p, &b->sc, &scratch) != CCS_OK) {
            b->failed = true;
            return;
        }
        build_start(b);
    }
    if (b->p == NULL || b->p->sched != s) {
        b->failed = true;
    } else if (b->threaded) {
        pthread_mutex_lock(&b->mu);
        b->ready = r + 1;
        if (b->sleeping && (b->ready % BUILD_WAKE_RANKS == 0 ||
                            b->ready == s->nranks))
            pthread_cond_signal(&b->cv);
        pthread_mutex_unlock(&b->mu);
    } else if (b->sc.next != r || scan_rank(b->p, &b->sc, &scratch) !=
                                      CCS_OK) {
        b->failed = true;
    }
}

/* Build the plan around `sched`, which it takes over (freed on failure
 * too) and which passed ccs_sched_validate: the load paths hand over what
 * the reader decoded and validated instead of copying it.  `b`: NULL, or
 * what the reader's hook built on the way (taken over and freed). */
static ccs_status_t plan_adopt(ccs_sched_t *sched, plan_build_t *b,
                               ccs_plan_t **out, ccs_err_t *err)
{
    ccs_plan_t *p = NULL;     /* handed to *out on success */
    const ccs_sched_t *s = sched;
    scan_t scan;
    ccs_status_t st = CCS_OK;

    memset(&scan, 0, sizeof(scan));
    build_join(b);
    if (b != NULL && b->p != NULL && !b->failed && b->p->sched == sched &&
        b->sc.next == sched->nranks) {
        p = b->p;
        scan = b->sc;
        memset(&b->sc, 0, sizeof(b->sc));
        b->p = NULL;
        p->sched_borrowed = false;   /* owned by the plan from here on */
    } else {
        build_free(b);
        p = calloc(1, sizeof(*p));
        if (p == NULL) {
            ccs_sched_destroy(sched);
            return ccs_err_set(err, CCS_ERR_NOMEM, "out of memory");
        }
        p->sched = sched;         /* owned by the plan from here on */
        if ((st = scan_begin(p, &scan, err)) != CCS_OK)
            goto cleanup;
        for (uint32_t r = 0; r < s->nranks; r++)
            if ((st = scan_rank(p, &scan, err)) != CCS_OK)
                goto cleanup;
    }
    p->log_level = ccs_log_level_env();
    if ((st = scan_end(p, &scan, err)) != CCS_OK)
        goto cleanup;
    CCS_LOG(p->log_level, CCS_LOG_INFO, "PLAN", -1,
            "loaded %s %s plan: %u ranks, %u chunks, %u scratch, %u steps, "
            "%u phases, straggler %d", s->algo, ccs_coll_str(s->coll),
            s->nranks, s->nchunks, s->nscratch, s->nsteps, s->nphases,
            s->straggler);
    *out = p;
    p = NULL;
cleanup:
    if (st != CCS_OK)
        CCS_LOG(p ? p->log_level : ccs_log_level_env(), CCS_LOG_WARN,
                "PLAN", -1, "%s", ccs_err_msg(err, st));
    scan_free(&scan);
    ccs_plan_destroy(p);
    return st;
}

ccs_status_t ccs_plan_from_sched(const ccs_sched_t *s, ccs_plan_t **out,
                                 ccs_err_t *err)
{
    ccs_sched_t *copy = NULL;   /* handed to plan_adopt */
    ccs_status_t st;

    if (s == NULL || out == NULL)
        return ccs_err_set(err, CCS_ERR_INVALID, "NULL argument");
    st = ccs_sched_validate(s, err);
    if (st != CCS_OK)
        return st;
    st = ccs_sched_clone(s, &copy, err);
    if (st != CCS_OK)
        return st;
    return plan_adopt(copy, NULL, out, err);
}

const ccs_sched_t *ccs_plan_sched(const ccs_plan_t *plan)
{
    return plan ? plan->sched : NULL;
}

static void copy_msg(const ccs_err_t *e, ccs_status_t st, char *msg,
                     size_t msglen)
{
    if (msg == NULL || msglen == 0)
        return;
    if (st == CCS_OK)
        msg[0] = '\0';
    else
        snprintf(msg, msglen, "%s", ccs_err_msg(e, st));
}

/* The reader's failures (I/O, format, version, checksum) are logged here,
 * once: the reader itself does not log. */
static void log_load_failure(const ccs_err_t *e, ccs_status_t st)
{
    CCS_LOG(ccs_log_level_env(), CCS_LOG_WARN, "PLAN", -1, "%s",
            ccs_err_msg(e, st));
}

/* Load a plan from the file at path or, path NULL, from buf[0..len): the
 * reader checks each rank's ops as it hands them over (plan_rank_hook),
 * then the plan adopts the schedule. */
static ccs_status_t plan_load(const char *path, const void *buf, size_t len,
                              ccs_plan_t **plan, char *msg, size_t msglen)
{
    ccs_err_t e;
    ccs_sched_t *s = NULL;    /* freed here unless the plan took it */
    plan_build_t b;           /* freed here */
    ccs_status_t st;

    ccs_err_clear(&e);
    memset(&b, 0, sizeof(b));
    if ((path == NULL && buf == NULL) || plan == NULL) {
        st = ccs_err_set(&e, CCS_ERR_INVALID, "NULL argument");
        log_load_failure(&e, st);
    } else if ((st = path != NULL
                         ? ccs_format_read_file_hook(path, plan_rank_hook, &b,
                                                     &s, &e)
                         : ccs_format_decode_hook(buf, len, plan_rank_hook,
                                                  &b, &s, &e)) == CCS_OK) {
        st = plan_adopt(s, &b, plan, &e);  /* takes s; logs its failures */
        s = NULL;
        /* The reader names the file in its own failures; the plan's
         * checks do not. */
        if (st != CCS_OK && path != NULL)
            ccs_err_prefix(&e, "%s: ", path);
    } else {
        log_load_failure(&e, st);
    }
    build_free(&b);
    ccs_sched_destroy(s);
    copy_msg(&e, st, msg, msglen);
    return st;
}

ccs_status_t ccs_plan_load_mem_msg(const void *buf, size_t len,
                                   ccs_plan_t **plan, char *msg,
                                   size_t msglen)
{
    return plan_load(NULL, buf, len, plan, msg, msglen);
}

ccs_status_t ccs_plan_load_file_msg(const char *path, ccs_plan_t **plan,
                                    char *msg, size_t msglen)
{
    /* A NULL path with a NULL buffer: refused as a NULL argument. */
    return plan_load(path, NULL, 0, plan, msg, msglen);
}

ccs_status_t ccs_plan_load_mem(const void *buf, size_t len,
                               ccs_plan_t **plan)
{
    return ccs_plan_load_mem_msg(buf, len, plan, NULL, 0);
}

ccs_status_t ccs_plan_load_file(const char *path, ccs_plan_t **plan)
{
    return ccs_plan_load_file_msg(path, plan, NULL, 0);
}

ccs_status_t ccs_plan_get_info(const ccs_plan_t *plan, ccs_plan_info_t *info)
{
    const ccs_sched_t *s;

    if (plan == NULL || info == NULL)
        return CCS_ERR_INVALID;
    s = plan->sched;
    memset(info, 0, sizeof(*info));
    info->coll = s->coll;
    info->nranks = s->nranks;
    info->nchunks = s->nchunks;
    info->nscratch = s->nscratch;
    info->nsteps = s->nsteps;
    info->nphases = s->nphases;
    info->root = s->root;
    info->straggler = s->straggler;
    info->topo_fingerprint = s->topo_fingerprint;
    memcpy(info->algo, s->algo, sizeof(info->algo) < sizeof(s->algo)
                                    ? sizeof(info->algo) : sizeof(s->algo));
    info->algo[sizeof(info->algo) - 1] = '\0';
    return CCS_OK;
}

ccs_coll_t ccs_plan_coll(const ccs_plan_t *plan)
{
    return plan ? plan->sched->coll : CCS_COLL_COUNT;
}

int ccs_plan_nranks(const ccs_plan_t *plan)
{
    return plan ? (int)plan->sched->nranks : -1;
}

int ccs_plan_straggler(const ccs_plan_t *plan)
{
    return plan ? plan->sched->straggler : -1;
}

int ccs_plan_root(const ccs_plan_t *plan)
{
    return plan ? plan->sched->root : -1;
}

int ccs_version(void)
{
    return CCS_VERSION_CODE;
}
