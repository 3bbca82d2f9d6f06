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
 * the same about the same file), and the within-step hazards are checked
 * by the IR's own check too (ccs_sched_step_hazard, once per rank and
 * step).  The data flow is then executed without ever holding the whole
 * rank x chunk x rank state:
 *   - the chunk axis is cut into segments that every op treats alike, so
 *     one chunk stands for each (verify_seg.c);
 *   - the ops' pieces fall into data-flow columns that never exchange
 *     data, and each column is executed step by step on its own, holding
 *     only its own cells (verify_col.c).
 * Each column stops at its first failure; the earliest over all columns
 * and the hazards, in (step, reads / hazards / writes, rank, op, chunk)
 * order, is the failure a step-by-step execution of the whole schedule
 * meets first, and is reported with the same words.  With no failure, the
 * collective's postcondition is checked on every valid OUT chunk: the
 * written cells column by column, the unwritten ones by count.
 *
 * Cost: O(ops x segments per op x ceil(R / 64)) time, plus a sort of the
 * cut points.  Memory besides the schedule: about 14 bytes per op (10
 * when the column lists are made through per-rank cursors), 20 per
 * piece, 8 per (rank, segment that holds state) and, for the largest
 * column only, 8 * ceil(R / 64) + 16 bytes per cell it writes (vseg_budget
 * has the formula; past VERIFY_MEM_LIMIT the verifier refuses up front).
 * A ring allreduce on R ranks and R chunks is one op per piece and one
 * column per chunk: 4R^2 ops, R^2 cells and R live cells of R bits.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "verify_int.h"

/* ---- Op index: rank of each op, step order, report ---- */

static ccs_status_t index_ops(vctx_t *v, verify_report_t *rep)
{
    const ccs_sched_t *s = v->s;
    /* Below UINT32_MAX: verify_sched refuses larger schedules first. */
    uint64_t total = ccs_sched_total_ops(s);

    v->nops = (uint32_t)total;
    /* All owned by v, freed by vctx_free. */
    /* The step order as a permutation (4 bytes per op) only where walking
     * every rank in every step would cost more than a few passes over
     * the ops: dense schedules (a ring's every rank works in every step)
     * are walked through per-rank cursors instead (list_by_order). */
    v->use_order = (uint64_t)s->nsteps * s->nranks > VERIFY_CURSOR_WALK *
                                                      total;
    if (v->use_order) {
        v->step_start = calloc((size_t)s->nsteps + 1, sizeof(uint32_t));
        v->order = malloc((size_t)(total ? total : 1) * sizeof(uint32_t));
    }
    v->rank_of = malloc((size_t)(total ? total : 1) * sizeof(uint16_t));
    v->xsend = malloc((size_t)(total ? total : 1) * sizeof(uint32_t));
    if ((v->use_order && (v->step_start == NULL || v->order == NULL)) ||
        v->rank_of == NULL || v->xsend == NULL)
        return ccs_err_set(v->err, CCS_ERR_NOMEM,
                           "out of memory indexing %llu ops",
                           (unsigned long long)total);

    rep->one_port = true;
    for (uint32_t r = 0, f = 0; r < s->nranks; r++) {
        const ccs_op_t *ops = s->rank_ops[r];
        uint32_t n = s->rank_nops[r], sends = 0, recvs = 0;

        for (uint32_t i = 0; i < n; i++, f++) {
            /* CCS_MAX_RANKS is 65536: every rank fits 16 bits. */
            v->rank_of[f] = (uint16_t)r;
            if (i > 0 && ops[i].step != ops[i - 1].step)
                sends = recvs = 0;
            if (v->use_order)
                v->step_start[ops[i].step + 1]++;
            if (ops[i].kind == CCS_OP_SEND) {
                /* ccs_sched_validate bounds chunks by CCS_MAX_CHUNKS
                 * (2^24) and buffers by 3. */
                v->xsend[v->pair.mate[f]] = ops[i].chunk << 2 |
                                            (ops[i].buf & 3u);
                v->xsend[f] = 0;
                sends++;
                rep->chunk_transfers += ops[i].nchunks;
            } else if (ops[i].kind == CCS_OP_RECV ||
                       ops[i].kind == CCS_OP_RECV_REDUCE) {
                recvs++;
            } else {
                /* Receives get theirs from their sends. */
                v->xsend[f] = 0;
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
    if (!v->use_order)
        return CCS_OK;

    /* Counting sort by step; flat order within a step is (rank, op
     * order), the order ops of a step are checked in. */
    for (uint32_t t = 0; t < s->nsteps; t++)
        v->step_start[t + 1] += v->step_start[t];
    for (uint32_t r = 0, f = 0; r < s->nranks; r++) {
        for (uint32_t i = 0; i < s->rank_nops[r]; i++, f++)
            v->order[v->step_start[s->rank_ops[r][i].step]++] = f;
    }
    for (uint32_t t = s->nsteps; t > 0; t--)
        v->step_start[t] = v->step_start[t - 1];
    v->step_start[0] = 0;
    return CCS_OK;
}

/* ---- Hazards: the same for every column, checked once ---- */

/* The first hazard in (step, rank) order into v->hazard.  Runs of one
 * rank's ops in one step are contiguous (ops are sorted by step).  Fails
 * only when the check itself cannot run (out of memory). */
static ccs_status_t find_hazard(vctx_t *v)
{
    const ccs_sched_t *s = v->s;

    v->hazard_step = VNONE;
    for (uint32_t r = 0; r < s->nranks; r++) {
        const ccs_op_t *ops = s->rank_ops[r];
        uint32_t n = s->rank_nops[r], i = 0;

        while (i < n && ops[i].step < v->hazard_step) {
            uint32_t j = i;
            ccs_err_t e;
            ccs_status_t st;
            while (j < n && ops[j].step == ops[i].step)
                j++;
            e.msg[0] = '\0';
            st = ccs_sched_step_hazard(ops + i, j - i, ops[i].step, r,
                                       CCS_ERR_VERIFY, &e);
            if (st != CCS_OK && st != CCS_ERR_VERIFY)
                return ccs_err_set(v->err, st, "%s", e.msg);
            if (st == CCS_ERR_VERIFY) {
                /* Ranks come in order: an earlier step is the only way
                 * a later rank's hazard comes first. */
                v->hazard_step = ops[i].step;
                v->hazard.set = true;
                v->hazard.key = (vkey_t){ ops[i].step, 2, 0, 0, 0 };
                v->hazard.st = CCS_ERR_VERIFY;
                memcpy(v->hazard.msg, e.msg, sizeof(e.msg));
                break;
            }
            i = j;
        }
    }
    return CCS_OK;
}

/* ---- Entry point ---- */

static void vctx_free(vctx_t *v)
{
    free(v->rank_of);
    free(v->order);
    free(v->step_start);
    free(v->xsend);
    for (unsigned sp = 0; sp < VS_COUNT; sp++)
        free(v->sp[sp].b);
    free(v->segmap);
    free(v->tcol);
    free(v->tseg);
    free(v->grp);
    free(v->piece_base);
    free(v->comp);
    free(v->comp_start);
    free(v->ent);
    free(v->lw);
    free(v->slot);
    free(v->bits);
    free(v->sorigin);
    free(v->scell);
    free(v->swriter);
    free(v->final);
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
    /* Pairing first: its scratch (4 bytes per send) is gone before the
     * verifier's own indexes are made, which keeps the peak lower. */
    if (ccs_sched_total_ops(s) >= UINT32_MAX) {
        st = ccs_err_set(err, CCS_ERR_UNSUPPORTED,
                         "%llu ops: too many for the verifier",
                         (unsigned long long)ccs_sched_total_ops(s));
        goto cleanup;
    }
    st = ccs_sched_pair(s, CCS_ERR_VERIFY, &v.pair, err);
    if (st == CCS_OK)
        st = index_ops(&v, &r);
    if (st != CCS_OK)
        goto cleanup;
    st = find_hazard(&v);
    if (st == CCS_OK)
        st = vseg_build(&v);
    if (st == CCS_OK)
        st = vcol_run_all(&v);
    if (st == CCS_OK)
        st = vcol_verdict(&v);
    if (st == CCS_OK && rep != NULL)
        *rep = r;

cleanup:
    vctx_free(&v);
    return st;
}
