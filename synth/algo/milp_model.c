/*
 * milp_model.c - the AdapCC synthesizer's MILP (AdapCC, Sec. IV-D,
 * eqs. 1-6) linearised for GLPK and solved with glp_intopt.
 *
 * Trees (allreduce, reduce, broadcast), per sub-collective m, on the GPU
 * overlay arcs a = (u, v) allowed for m (milp_arc_allowed):
 *   y[m,a]   binary   arc a is u's edge to its parent (reduce direction)
 *   f[m,a]   >= 0     single-commodity flow: every non-root GPU ships one
 *                     unit to the root (eq. 1 on the overlay)
 *   r[m,g]   binary   g is the root
 *   c[m]     integer  chunks of the sub (S_m), sum = C
 *   z[m,a]   >= 0     chunks on arc a = y * c (pinned by the ship/zy rows
 *                     for binary y; no McCormick envelope)
 *   w[m,k]   binary   piece size choice (C_m from the candidate set)
 *   p[m]     integer  pieces >= c / q_k for the chosen k (ceil, eq. 5)
 *   h[m,g], b[m,g]    ready times of a piece in the reduce / broadcast
 *                     (eq. 2 with aggregation at every GPU, big-M on y)
 *   E[m], G[m]        their maxima
 *   L        >= 0     busiest pipe: sum of chunk loads * bytes / bw (eq. 3)
 *   T                 objective: T >= L + E + G + alpha_hat * (p - 1)
 *                     - one piece on the slowest pipe
 * The search: root LP, a large-neighbourhood search of sub-MIPs from the
 * warm start (lns_run), then branch and bound from its incumbent; all
 * under milp_glpk_call, whose error hook keeps GLPK from aborting.
 * Alltoall: integer chunk counts per flow and path (direct or through a
 * relay GPU), two legs with loads L1 and L2.  docs/milp.md has the rows.
 *
 * Units in the model: microseconds and chunks, so that coefficients stay
 * within a few orders of magnitude of 1 (GLPK's tolerances are absolute).
 *
 * Files: this one has the options, the warm start's completion, decoding a
 * solution into a plan and the spec's checks; milp_lp.c the model builder,
 * milp_tree.c and milp_a2a.c the two models, milp_solve.c the search,
 * milp_glpk.c the trap around GLPK; milp_int.h what they share.
 */

#include <float.h>
#include <glpk.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "milp_int.h"

void milp_solve_opts_init(milp_solve_opts_t *o)
{
    memset(o, 0, sizeof(*o));
    o->time_limit_s = 10;
    o->mip_gap = 0.01;
    o->node_limit = 0;
    o->use_warm = true;
    o->glpk_heuristics = true;
    o->lns = true;
}

const char *milp_outcome_str(milp_outcome_t o)
{
    switch (o) {
    case MILP_OUT_OPTIMAL: return "optimal";
    case MILP_OUT_LIMIT: return "limit";
    case MILP_OUT_NOSOL: return "no-solution";
    default: return "?";
    }
}

double milp_now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Fill the max-type columns (L, L2, T) of a warm vector from the rows,
 * then check every row; false when the vector is infeasible (the plan
 * uses an arc or piece size the model does not have). */
bool milp_warm_finish(mb_t *b, const tmap_t *mp, double *x)
{
    int nr = glp_get_num_rows(b->lp);
    int fill[3] = { mp->L, mp->L2, mp->T };

    /* L and L2 first (they appear in T's rows), T last. */
    for (int pass = 0; pass < 3; pass++) {
        int col = fill[pass];

        if (col <= 0)
            continue;
        x[col] = 0;
        for (int i = 1; i <= nr; i++) {
            int len = glp_get_mat_row(b->lp, i, b->ind, b->val);
            double act = 0, cc = 0;

            for (int k = 1; k <= len; k++) {
                if (b->ind[k] == col)
                    cc = b->val[k];
                else
                    act += b->val[k] * x[b->ind[k]];
            }
            if (cc > 0 && glp_get_row_type(b->lp, i) == GLP_LO)
                x[col] = fmax(x[col], (glp_get_row_lb(b->lp, i) - act) / cc);
        }
    }
    for (int i = 1; i <= nr; i++) {
        int len = glp_get_mat_row(b->lp, i, b->ind, b->val);
        int type = glp_get_row_type(b->lp, i);
        double act = 0, lo = glp_get_row_lb(b->lp, i);
        double hi = glp_get_row_ub(b->lp, i);
        double tol = 1e-6 * (1 + fabs(lo) + fabs(hi));

        for (int k = 1; k <= len; k++)
            act += b->val[k] * x[b->ind[k]];
        if ((type == GLP_LO || type == GLP_DB || type == GLP_FX) &&
            act < lo - tol)
            return false;
        if ((type == GLP_UP || type == GLP_DB || type == GLP_FX) &&
            act > hi + tol)
            return false;
    }
    for (int j = 1; j <= b->ncols; j++) {
        int type = glp_get_col_type(b->lp, j);
        double lo = glp_get_col_lb(b->lp, j), hi = glp_get_col_ub(b->lp, j);

        if (type != GLP_FR && type != GLP_UP && x[j] < lo - 1e-9)
            return false;
        if ((type == GLP_DB || type == GLP_FX || type == GLP_UP) &&
            x[j] > hi + 1e-9)
            return false;
    }
    return true;
}

/* Value of column j: from `vals` ([ncols + 1]) when given, else GLPK's
 * MIP solution. */
static double colval(const mb_t *b, const double *vals, int j)
{
    return vals != NULL ? vals[j] : glp_mip_col_val(b->lp, j);
}

/* The plan of a solution: GLPK's incumbent (vals == NULL) or a vector of
 * column values (the LNS's incumbent). */
ccs_status_t milp_decode(const mb_t *b, const tmap_t *mp,
                         const milp_net_t *net, const milp_spec_t *sp,
                         const double *vals, milp_plan_t **out,
                         ccs_err_t *err)
{
    milp_plan_t *pl = NULL;
    int32_t n = net->n;
    ccs_status_t st;

    st = milp_plan_create(sp->coll, n, sp->m, sp->nchunks, &pl, err);
    if (st != CCS_OK)
        return st;
    if (sp->coll == CCS_COLL_ALLTOALL) {
        int32_t P = mp->npaths;

        for (int32_t s = 0; s < n; s++)
            for (int32_t d = 0; d < n; d++) {
                const int32_t *pw = mp->path_w + ((size_t)s * n + d) * P;
                const int *xc = mp->x + ((size_t)s * n + d) * P;

                for (int32_t i = 0; s != d && i < P && pw[i] >= 0; i++)
                    pl->a2a[((size_t)s * n + d) * n + pw[i]] =
                        (uint32_t)lround(colval(b, vals, xc[i]));
            }
    } else {
        for (int32_t m = 0; m < sp->m; m++) {
            double best = -1;

            pl->root[m] = -1;
            for (int32_t g = 0; g < n; g++) {
                pl->parent[(size_t)m * n + g] = -1;
                if (colval(b, vals, mp->r[m * n + g]) > 0.5)
                    pl->root[m] = g;
            }
            for (int32_t a = mp->arc_off[m]; a < mp->arc_off[m + 1]; a++)
                if (colval(b, vals, mp->y[a]) > 0.5)
                    pl->parent[(size_t)m * n + mp->arc_u[a]] = mp->arc_v[a];
            pl->count[m] = (uint32_t)lround(colval(b, vals, mp->c[m]));
            for (int32_t k = 0; k < sp->ncand; k++) {
                double v = colval(b, vals, mp->w[m * sp->ncand + k]);

                if (v > best) {
                    best = v;
                    pl->piece[m] = sp->cand[k];
                }
            }
        }
    }
    pl->cost_us = colval(b, vals, mp->T);
    st = milp_plan_check(net, sp, pl, err);
    if (st != CCS_OK) {
        ccs_err_prefix(err, "decoding the GLPK solution: ");
        milp_plan_destroy(pl);
        return st;
    }
    *out = pl;
    return CCS_OK;
}

ccs_status_t milp_validate_spec(const milp_net_t *net,
                                const milp_spec_t *sp,
                                const milp_solve_opts_t *o, ccs_err_t *err)
{
    if (sp->m < 1 || sp->m > MILP_MAX_M)
        return ccs_err_set(err, CCS_ERR_INVALID, "milp: M = %d (1..%d)",
                           sp->m, MILP_MAX_M);
    if (sp->ncand < 1 || sp->ncand > MILP_MAX_CAND)
        return ccs_err_set(err, CCS_ERR_INVALID,
                           "milp: %d candidate chunk sizes (1..%d)",
                           sp->ncand, MILP_MAX_CAND);
    for (int32_t k = 0; k < sp->ncand; k++)
        if (sp->cand[k] < 1 || (k > 0 && sp->cand[k] <= sp->cand[k - 1]))
            return ccs_err_set(err, CCS_ERR_INVALID,
                               "milp: candidate piece sizes must be "
                               "ascending and >= 1 chunk");
    if (sp->nchunks < 1 || sp->nchunks > (1u << 20) ||
        !(sp->unit_bytes > 0) || !isfinite(sp->unit_bytes))
        return ccs_err_set(err, CCS_ERR_INVALID,
                           "milp: %u chunks of %g bytes", sp->nchunks,
                           sp->unit_bytes);
    if (sp->coll == CCS_COLL_ALLTOALL && sp->nchunks % (uint32_t)net->n)
        return ccs_err_set(err, CCS_ERR_INVALID,
                           "milp: alltoall needs C %% n == 0");
    if (sp->root >= net->n)
        return ccs_err_set(err, CCS_ERR_INVALID, "milp: root %d", sp->root);
    if (!(o->time_limit_s > 0) || !(o->mip_gap >= 0))
        return ccs_err_set(err, CCS_ERR_INVALID,
                           "milp: time limit %g s, gap %g", o->time_limit_s,
                           o->mip_gap);
    return CCS_OK;
}

int milp_ms_left(double deadline)
{
    double ms = (deadline - milp_now_s()) * 1e3;

    if (ms < 1)
        return 1;
    return ms > (double)INT_MAX ? INT_MAX : (int)ms;
}
