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
 *   - matching (ccs_sched_pair_check, the verifier's rule): in every
 *     step, the k-th send from a to b has a k-th receive on b from a with
 *     the same chunk count, so no run can hang on an unmatched transfer or
 *     read past a message;
 *   - hazards within a step (ccs_sched_step_hazard, the verifier's rule
 *     and words): no chunk written twice or read and written, so the
 *     order in which a transport completes a step's ops cannot matter;
 *   - groups of each rank's ops by step, the per-peer sequence number of
 *     each transfer (MPI tags), staging needs per step (summed in 64 bits
 *     and refused past what the executor's 32-bit count holds), and the
 *     in-place hazard (IN[c] read after OUT[c] was written).
 * Every check costs O(ops) or O(ops log ops) of the file, never ranks x
 * chunks: a loader that trusts nothing must not be made slow by a header
 * either.  The buffer spans, the grouping, the numbering, the staging sums
 * and the hazards of small steps are one pass over each rank's ops while
 * they are in cache (index_ops); a check that fails there is worded by its
 * own full function afterwards, in the order above, so a bad file gets the
 * same message it always got.  The tables of all ranks are one block each.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ccs_int.h"
#include "format.h"

static bool is_xfer(unsigned kind)
{
    return kind == CCS_OP_SEND || kind == CCS_OP_RECV ||
           kind == CCS_OP_RECV_REDUCE;
}

static bool has_src(unsigned kind)
{
    return kind == CCS_OP_RECV_REDUCE || kind == CCS_OP_COPY ||
           kind == CCS_OP_REDUCE_LOCAL;
}

void ccs_plan_destroy(ccs_plan_t *plan)
{
    if (plan == NULL)
        return;
    free(plan->seq_store);
    free(plan->group_store);
    free(plan->seq);
    free(plan->groups);
    free(plan->ngroups);
    free(plan->stage_chunks);
    free(plan->inplace_hazard);
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

/* Does [c, c + n) of buffer b lie where the rank's IN (ilo..ihi) or OUT
 * (olo..ohi) holds data?  SCRATCH always does (the reader bounded it). */
static bool span_holds(unsigned b, uint32_t c, uint32_t n, uint32_t ilo,
                       uint32_t ihi, uint32_t olo, uint32_t ohi)
{
    if (b == CCS_BUF_IN)
        return c >= ilo && (uint64_t)c + n <= ihi;
    if (b == CCS_BUF_OUT)
        return c >= olo && (uint64_t)c + n <= ohi;
    return true;
}

/* Could two ops of a small step collide?  The rule of
 * ccs_sched_step_hazard, pair by pair: a write meeting an earlier write,
 * or meeting any read (its own op's included), except the read of
 * RECV_REDUCE / REDUCE_LOCAL of exactly its destination.  Exact, so a
 * "no" skips the full check; a "yes" gets its words from it. */
static bool small_step_collides(const ccs_op_t *ops, uint32_t n)
{
    for (uint32_t j = 0; j < n; j++) {
        const ccs_op_t *w = &ops[j];
        uint64_t wlo = w->chunk, whi = wlo + w->nchunks;
        if (w->kind == CCS_OP_SEND)
            continue;
        for (uint32_t k = 0; k < n; k++) {
            const ccs_op_t *o = &ops[k];
            unsigned rb;
            uint64_t lo;
            if (k < j && o->kind != CCS_OP_SEND && o->buf == w->buf &&
                o->chunk < whi && o->chunk + (uint64_t)o->nchunks > wlo)
                return true;
            if (o->kind == CCS_OP_SEND) {
                rb = o->buf;
                lo = o->chunk;
            } else if (o->kind == CCS_OP_RECV ||
                       (o->kind != CCS_OP_COPY && o->src_buf == o->buf &&
                        o->src_chunk == o->chunk)) {
                continue;
            } else {
                rb = o->src_buf;
                lo = o->src_chunk;
            }
            if (rb == w->buf && lo < whi && lo + o->nchunks > wlo)
                return true;
        }
    }
    return false;
}

/* Largest step that small_step_collides handles; larger ones go to the
 * full check. */
#define SMALL_STEP_OPS 8

/* One pass over each rank's ops, while they are in cache: group them by
 * step, number each transfer per (step, peer, direction) (MPI tags), sum
 * the staging each step may need, find the first step with a hazard and
 * the first step past the staging limit, and run the rank's in-place
 * analysis.  The seq and group arrays of
 * all ranks are one allocation each.  The failures are reported in the
 * order the checks were specified in (buffers, pairing, hazards,
 * staging), whatever rank they occur on. */
typedef struct scan {
    bool hazard;             /* a step with a hazard: first_r, first_g */
    uint32_t hazard_r, hazard_g;
    bool too_big;            /* a step past 32 bits of staging */
    uint32_t big_r, big_g;
    uint64_t big_sum;
    bool outside;            /* some op leaves its valid spans: the words
                                come from check_buffers */
} scan_t;

static ccs_status_t index_ops(ccs_plan_t *p, scan_t *sc, ccs_err_t *err)
{
    const ccs_sched_t *s = p->sched;
    uint32_t R = s->nranks;
    uint64_t *stamp = NULL;   /* [2R] group stamp of each counter, freed */
    uint32_t *cnt = NULL;     /* [2R] sends to / recvs from peer, freed */
    uint64_t group_id = 0, total = ccs_sched_total_ops(s), at = 0, gat = 0;
    plan_group_t *shrunk;
    inplace_t ip = { NULL, NULL, INPLACE_EXACT_WORK };
    ccs_status_t st = CCS_OK;

    stamp = calloc(2 * (size_t)R, sizeof(*stamp));
    cnt = calloc(2 * (size_t)R, sizeof(*cnt));
    /* Groups: at most one per op; the pages never written cost nothing,
     * and the block is cut to size below. */
    p->seq_store = malloc((size_t)(total ? total : 1) * sizeof(uint32_t));
    p->group_store = malloc((size_t)(total ? total : 1) *
                            sizeof(plan_group_t));
    if (stamp == NULL || cnt == NULL || p->seq_store == NULL ||
        p->group_store == NULL)
        goto nomem;
    p->max_seq = 1;
    for (uint32_t r = 0; r < R; r++) {
        const ccs_op_t *ops = s->rank_ops[r];
        uint32_t n = s->rank_nops[r];
        uint32_t *seq = p->seq_store + at;
        plan_group_t *grp = p->group_store + gat;
        uint32_t ng = 0, ilo, ihi, olo, ohi;
        uint64_t most = 0, work = 0;
        bool reads_in = false, writes_out = false, outside = false;

        ccs_coll_valid_span(s, r, false, &ilo, &ihi);
        ccs_coll_valid_span(s, r, true, &olo, &ohi);

        for (uint32_t i = 0; i < n;) {
            plan_group_t *g = &grp[ng];
            uint32_t e = i + 1;
            uint64_t sum = 0;
            while (e < n && ops[e].step == ops[i].step)
                e++;
            g->step = ops[i].step;
            g->first = i;
            g->end = e;
            g->phase = s->step_phase[ops[i].step];
            group_id++;
            for (uint32_t k = i; k < e; k++) {
                const ccs_op_t *op = &ops[k];
                bool src = has_src(op->kind);
                bool rin = (op->kind == CCS_OP_SEND &&
                            op->buf == CCS_BUF_IN) ||
                           (src && op->src_buf == CCS_BUF_IN);
                bool wout = op->kind != CCS_OP_SEND && op->buf == CCS_BUF_OUT;
                size_t c;
                outside |= !span_holds(op->buf, op->chunk, op->nchunks, ilo,
                                       ihi, olo, ohi);
                outside |= src && !span_holds(op->src_buf, op->src_chunk,
                                              op->nchunks, ilo, ihi, olo,
                                              ohi);
                reads_in |= rin;
                writes_out |= wout;
                work += (rin || wout) ? op->nchunks : 0;
                seq[k] = 0;
                if (!is_xfer(op->kind))
                    continue;
                sum += op->nchunks;
                c = (size_t)op->peer * 2 + (op->kind != CCS_OP_SEND);
                if (stamp[c] != group_id) {
                    stamp[c] = group_id;
                    cnt[c] = 0;
                }
                seq[k] = cnt[c]++;
                if (cnt[c] > p->max_seq)
                    p->max_seq = cnt[c];
            }
            if (sum > most)
                most = sum;
            if (sum > UINT32_MAX && !sc->too_big) {
                sc->too_big = true;
                sc->big_r = r;
                sc->big_g = ng;
                sc->big_sum = sum;
            }
            if (!sc->hazard && e - i >= 2) {
                bool bad;
                if (e - i <= SMALL_STEP_OPS) {
                    bad = small_step_collides(&ops[i], e - i);
                } else {
                    ccs_err_t scratch;
                    ccs_err_clear(&scratch);
                    bad = ccs_sched_step_hazard(&ops[i], e - i, g->step, r,
                                                CCS_ERR_FORMAT, &scratch) !=
                          CCS_OK;
                }
                if (bad) {
                    sc->hazard = true;
                    sc->hazard_r = r;
                    sc->hazard_g = ng;
                }
            }
            ng++;
            i = e;
        }
        p->seq[r] = seq;
        p->groups[r] = grp;
        p->ngroups[r] = ng;
        p->stage_chunks[r] = most > UINT32_MAX ? UINT32_MAX : (uint32_t)most;
        sc->outside |= outside;
        /* The in-place analysis of this rank while its ops are in cache. */
        if (reads_in && writes_out &&
            (st = inplace_rank(p, r, work, &ip, err)) != CCS_OK)
            goto cleanup;
        at += n;
        gat += ng;
    }
    /* Give back what the groups did not use. */
    shrunk = realloc(p->group_store, (size_t)(gat ? gat : 1) *
                                         sizeof(plan_group_t));
    if (shrunk != NULL) {
        /* Re-point from the counts: the old block's addresses are dead. */
        uint64_t off = 0;
        for (uint32_t r = 0; r < R; r++) {
            p->groups[r] = shrunk + off;
            off += p->ngroups[r];
        }
        p->group_store = shrunk;
    }
    goto cleanup;
nomem:
    st = ccs_err_set(err, CCS_ERR_NOMEM, "out of memory indexing plan");
cleanup:
    free(stamp);
    free(cnt);
    free(ip.first_w);
    free(ip.owner);
    return st;
}

/* Matching (the shared pairing rule) and the per-step hazards (the
 * verifier's rule, same words): a plan that passes cannot hang on an
 * unmatched transfer, read past a message, or have two ops of a step race
 * on one chunk. */
static ccs_status_t check_steps(const ccs_plan_t *p, const scan_t *sc,
                                ccs_err_t *err)
{
    const ccs_sched_t *s = p->sched;
    ccs_status_t st;

    st = ccs_sched_pair_check(s, CCS_ERR_FORMAT, err);
    if (st != CCS_OK)
        return st;
    if (sc->hazard) {
        const plan_group_t *gr = &p->groups[sc->hazard_r][sc->hazard_g];
        st = ccs_sched_step_hazard(&s->rank_ops[sc->hazard_r][gr->first],
                                   gr->end - gr->first, gr->step,
                                   sc->hazard_r, CCS_ERR_FORMAT, err);
        if (st == CCS_OK)   /* cannot happen: one rule */
            st = ccs_err_set(err, CCS_ERR_FORMAT, "step %u, rank %u: "
                             "hazard", gr->step, sc->hazard_r);
        return st;
    }
    if (sc->too_big)
        return ccs_err_set(err, CCS_ERR_FORMAT,
            "step %u, rank %u: %llu chunks in transfer in one step, "
            "more than the runtime's staging can address (%u)",
            p->groups[sc->big_r][sc->big_g].step, sc->big_r,
            (unsigned long long)sc->big_sum, UINT32_MAX);
    return CCS_OK;
}

/* Build the plan around `sched`, which it takes over (freed on failure
 * too) and which passed ccs_sched_validate: the load paths hand over what
 * the reader decoded and validated instead of copying it. */
static ccs_status_t plan_adopt(ccs_sched_t *sched, ccs_plan_t **out,
                               ccs_err_t *err)
{
    ccs_plan_t *p = NULL;     /* handed to *out on success */
    const ccs_sched_t *s = sched;
    scan_t scan;
    ccs_status_t st;
    uint32_t R;

    p = calloc(1, sizeof(*p));
    if (p == NULL) {
        ccs_sched_destroy(sched);
        return ccs_err_set(err, CCS_ERR_NOMEM, "out of memory");
    }
    memset(&scan, 0, sizeof(scan));
    p->log_level = ccs_log_level_env();
    p->sched = sched;         /* owned by the plan from here on */
    R = s->nranks;
    p->seq = calloc(R, sizeof(*p->seq));
    p->groups = calloc(R, sizeof(*p->groups));
    p->ngroups = calloc(R, sizeof(*p->ngroups));
    p->stage_chunks = calloc(R, sizeof(*p->stage_chunks));
    p->inplace_hazard = calloc(R, 1);
    if (p->seq == NULL || p->groups == NULL || p->ngroups == NULL ||
        p->stage_chunks == NULL || p->inplace_hazard == NULL) {
        st = ccs_err_set(err, CCS_ERR_NOMEM, "out of memory");
        goto cleanup;
    }
    if ((st = index_ops(p, &scan, err)) != CCS_OK ||
        (scan.outside && (st = check_buffers(p->sched, err)) != CCS_OK) ||
        (st = check_steps(p, &scan, err)) != CCS_OK)
        goto cleanup;
    CCS_LOG(p->log_level, CCS_LOG_INFO, "PLAN", -1,
            "loaded %s %s plan: %u ranks, %u chunks, %u scratch, %u steps, "
            "%u phases, straggler %d", s->algo, ccs_coll_str(s->coll), R,
            s->nchunks, s->nscratch, s->nsteps, s->nphases, s->straggler);
    *out = p;
    p = NULL;
cleanup:
    if (st != CCS_OK)
        CCS_LOG(p ? p->log_level : ccs_log_level_env(), CCS_LOG_WARN,
                "PLAN", -1, "%s", ccs_err_msg(err, st));
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
    return plan_adopt(copy, out, err);
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

ccs_status_t ccs_plan_load_mem_msg(const void *buf, size_t len,
                                   ccs_plan_t **plan, char *msg,
                                   size_t msglen)
{
    ccs_err_t e;
    ccs_sched_t *s = NULL;    /* freed here unless the plan took it */
    ccs_status_t st;

    ccs_err_clear(&e);
    if (buf == NULL || plan == NULL) {
        st = ccs_err_set(&e, CCS_ERR_INVALID, "NULL argument");
        log_load_failure(&e, st);
    } else if ((st = ccs_format_decode(buf, len, &s, &e)) == CCS_OK) {
        st = plan_adopt(s, plan, &e);    /* takes s; logs its failures */
        s = NULL;
    } else {
        log_load_failure(&e, st);
    }
    ccs_sched_destroy(s);
    copy_msg(&e, st, msg, msglen);
    return st;
}

ccs_status_t ccs_plan_load_file_msg(const char *path, ccs_plan_t **plan,
                                    char *msg, size_t msglen)
{
    ccs_err_t e;
    ccs_sched_t *s = NULL;    /* freed here unless the plan took it */
    ccs_status_t st;

    ccs_err_clear(&e);
    if (path == NULL || plan == NULL) {
        st = ccs_err_set(&e, CCS_ERR_INVALID, "NULL argument");
        log_load_failure(&e, st);
    } else if ((st = ccs_format_read_file(path, &s, &e)) == CCS_OK) {
        st = plan_adopt(s, plan, &e);    /* takes s; logs its failures */
        s = NULL;
        if (st != CCS_OK)
            ccs_err_prefix(&e, "%s: ", path);
    } else {
        log_load_failure(&e, st);
    }
    ccs_sched_destroy(s);
    copy_msg(&e, st, msg, msglen);
    return st;
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
