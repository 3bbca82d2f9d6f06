/*
 * milp_solve.c - solving the MILP: the root LP, a large-neighbourhood
 * search of sub-MIPs from the warm start (lns_run), then branch and bound
 * from its incumbent with a node limit sized by the model; the bounds
 * (GLPK's, the edge-load and fill bounds) and the statistics the report
 * prints.  Deterministic: node limits, not clocks, stop the search unless
 * the time limit is hit first.
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

/* Callback state. */
typedef struct cbinfo {
    const double *warm;   /* [ncols + 1] or NULL */
    bool warm_tried;
    bool warm_accepted;
    int32_t node_limit;
    bool node_hit;
    double bound;
    int32_t nodes;
    double deadline;      /* milp_now_s() at which to stop; 0: none */
    bool time_hit;        /* stopped here by the deadline */
    double fill_us;       /* a bound GLPK does not know (NAN: none) */
    double gap;           /* stop once the incumbent is this close to it */
    bool gap_hit;         /* stopped here: the incumbent is proven */
} cbinfo_t;

static void mip_cb(glp_tree *tree, void *info)
{
    cbinfo_t *ci = info;
    int a, nn, t, best, mst;
    glp_prob *P = glp_ios_get_prob(tree);

    if (glp_ios_reason(tree) == GLP_IHEUR && ci->warm != NULL &&
        !ci->warm_tried) {
        ci->warm_tried = true;
        ci->warm_accepted = glp_ios_heur_sol(tree, ci->warm) == 0;
    }
    best = glp_ios_best_node(tree);
    if (best != 0)
        ci->bound = glp_ios_node_bound(tree, best);
    glp_ios_tree_size(tree, &a, &nn, &t);
    ci->nodes = t;
    if (ci->node_limit > 0 && t > ci->node_limit && !ci->node_hit) {
        ci->node_hit = true;
        glp_ios_terminate(tree);
        return;
    }
    /* GLPK reads its clock between some phases only (a node's branching
     * choice can run for seconds past tm_lim): every callback checks. */
    if (ci->deadline > 0 && milp_now_s() >= ci->deadline && !ci->time_hit) {
        ci->time_hit = true;
        glp_ios_terminate(tree);
        return;
    }
    /* The fill bound may prove the incumbent within the gap when GLPK's
     * own LP bound cannot: then there is nothing left to search for. */
    mst = glp_mip_status(P);
    if (isfinite(ci->fill_us) && (mst == GLP_FEAS || mst == GLP_OPT) &&
        !ci->gap_hit) {
        double inc = glp_mip_obj_val(P);
        double lb = ci->fill_us > ci->bound ? ci->fill_us : ci->bound;

        if (inc > 0 && (inc - lb) / inc <= ci->gap) {
            ci->gap_hit = true;
            glp_ios_terminate(tree);
        }
    }
}

/* ---- solve ---- */

/* One solve; every pointer is released by solve_free, GLPK objects by
 * glp_free_env instead when a GLPK error freed the environment. */
typedef struct solve_ctx {
    const milp_net_t *net;        /* borrowed: inputs */
    const milp_spec_t *sp;
    const double *conc;
    const milp_plan_t *warm;
    const milp_solve_opts_t *o;
    mb_t b;                       /* owned: the model */
    tmap_t mp;
    glp_prob *sub;                /* owned: the LNS's sub-MIP, or NULL */
    double *x;                    /* owned: [ncols + 1] incumbent vector */
    double *y;                    /* owned: [ncols + 1] candidate vector */
    double *lpx;                  /* owned: [ncols + 1] root LP values */
    char *fix;                    /* owned: [ncols + 1] LNS fixing mask */
    double t0, deadline;
    milp_plan_t *out;             /* owned until milp_solve's *out */
    milp_stats_t s;
} solve_ctx_t;

/* Intopt parameters shared by the main search and the LNS's sub-MIPs:
 * the presolver stays off so that the callback sees the original
 * columns (glp_ios_heur_sol takes values for them). */
static void iocp_init(glp_iocp *io, double deadline, double gap,
                      cbinfo_t *ci, bool glpk_heur)
{
    glp_init_iocp(io);
    io->msg_lev = GLP_MSG_OFF;
    io->presolve = GLP_OFF;
    io->tm_lim = milp_ms_left(deadline);
    io->mip_gap = gap;
    io->cb_func = mip_cb;
    io->cb_info = ci;
    ci->deadline = deadline;
    ci->gap = gap;
    io->br_tech = GLP_BR_DTH;
    io->bt_tech = GLP_BT_BLB;
    io->sr_heur = glpk_heur ? GLP_ON : GLP_OFF;
    io->fp_heur = GLP_OFF;
    io->mir_cuts = GLP_OFF;
}

/* The LNS accepts a solution that is better by this much (relative). */
#define LNS_EPS 1e-6

/* One sub-MIP of the large-neighbourhood search: the model with every
 * column j where fix[j] != 0 fixed at the incumbent's value and the
 * objective cut off below the incumbent's, solved by glp_intopt with the
 * presolver (node limit `nodes`).  A better solution replaces the
 * incumbent after it has passed the check of every row of the full model
 * (milp_warm_finish). */
static void lns_try(solve_ctx_t *c, int32_t nodes, bool *better)
{
    glp_iocp io;
    cbinfo_t ci = { 0 };
    int nc = c->b.ncols, rc, mst, row, ind[2] = { 0, c->mp.T };
    double inc = c->x[c->mp.T], val[2] = { 0, 1 };

    *better = false;
    c->s.lns_tried++;
    c->sub = glp_create_prob();
    glp_copy_prob(c->sub, c->b.lp, GLP_OFF);
    for (int j = 1; j <= nc; j++) {
        if (c->fix[j]) {
            double v = round(c->x[j]);

            glp_set_col_bnds(c->sub, j, GLP_FX, v, v);
        }
    }
    /* Only a better solution is wanted: a cutoff row on T.  The
     * incumbent is then infeasible, so it is not offered; the presolver
     * removes the fixed columns and the rows they settle. */
    row = glp_add_rows(c->sub, 1);
    glp_set_row_name(c->sub, row, "lns_cutoff");
    glp_set_mat_row(c->sub, row, 1, ind, val);
    glp_set_row_bnds(c->sub, row, GLP_UP, 0, inc * (1 - LNS_EPS));
    ci.node_limit = nodes;
    ci.fill_us = NAN;           /* the cutoff row changes the model */
    iocp_init(&io, c->deadline, c->o->mip_gap, &ci, c->o->glpk_heuristics);
    io.presolve = GLP_ON;
    rc = glp_intopt(c->sub, &io);
    c->s.lns_nodes += ci.nodes;
    if (rc == GLP_ETMLIM || ci.time_hit)
        c->s.time_limit_hit = true;
    mst = glp_mip_status(c->sub);
    if ((mst != GLP_OPT && mst != GLP_FEAS) ||
        glp_mip_obj_val(c->sub) >= inc * (1 - LNS_EPS))
        goto done;
    for (int j = 1; j <= nc; j++) {
        c->y[j] = glp_mip_col_val(c->sub, j);
        if (glp_get_col_kind(c->b.lp, j) != GLP_CV)
            c->y[j] = round(c->y[j]);
    }
    if (milp_warm_finish(&c->b, &c->mp, c->y) &&
        c->y[c->mp.T] < inc * (1 - LNS_EPS)) {
        memcpy(c->x, c->y, ((size_t)nc + 1) * sizeof(double));
        *better = true;
    }

done:
    glp_delete_prob(c->sub);
    c->sub = NULL;
}

/* Large-neighbourhood search from the warm start, before branching
 * (RINS-style; GLPK has none): sub-MIPs of the same model that fix part
 * of the integer columns at the incumbent, in a fixed order, repeated
 * while one improves (at most LNS_PASSES passes; a neighbourhood is not
 * tried twice on one incumbent):
 *   split  every binary fixed (trees, roots, piece sizes): the exact
 *          split S_m and piece counts for the incumbent's trees;
 *   sub m  the binaries of every other sub fixed: sub m's tree, root and
 *          piece size re-optimised against the others' loads (M > 1);
 *   rins   every integer column whose root-LP value equals the
 *          incumbent's fixed (when that fixes at least a third of them).
 * Node limits, not time, bound each sub-MIP, and their number is at most
 * MILP_LNS_WORK / rows (at least 2): deterministic. */
#define LNS_PASSES 3

static void lns_run(solve_ctx_t *c, int32_t nodes)
{
    int nc = c->b.ncols, nint = 0, nfix;
    int32_t budget = MILP_LNS_WORK / (c->s.rows > 0 ? c->s.rows : 1);

    if (budget < 2)
        budget = 2;
    int32_t M = c->sp->coll == CCS_COLL_ALLTOALL ? 1 : c->sp->m;
    int32_t version = 0;
    int32_t tried_at[MILP_MAX_M + 2];   /* incumbent version of the last
                                           try, per neighbourhood */
    bool better;

    for (int32_t h = 0; h < M + 2; h++)
        tried_at[h] = -1;
    for (int j = 1; j <= nc; j++)
        nint += glp_get_col_kind(c->b.lp, j) != GLP_CV;
    for (int pass = 0; pass < LNS_PASSES; pass++) {
        for (int32_t hood = -1; hood <= M; hood++) {
            if (milp_now_s() >= c->deadline || c->s.lns_tried >= budget)
                return;
            if (hood >= 0 && hood < M && M == 1)
                continue;          /* one sub: that is the whole model */
            /* Same incumbent, same sub-MIP, same answer: skip. */
            if (tried_at[hood + 1] == version)
                continue;
            tried_at[hood + 1] = version;
            nfix = 0;
            for (int j = 1; j <= nc; j++) {
                int kind = glp_get_col_kind(c->b.lp, j);
                bool mine = hood >= 0 && hood < M &&
                            j >= c->mp.col_first[hood] &&
                            j < c->mp.col_first[hood + 1];

                if (hood == M)     /* rins */
                    c->fix[j] = kind != GLP_CV &&
                                fabs(c->lpx[j] - c->x[j]) < 1e-6;
                else               /* split, sub m */
                    c->fix[j] = kind == GLP_BV && !mine;
                nfix += c->fix[j];
            }
            if (hood == M && 3 * nfix < nint)
                continue;
            lns_try(c, nodes, &better);
            if (better) {
                c->s.lns_improved++;
                version++;
                tried_at[hood + 1] = version;
            }
        }
    }
}

/* Least busiest-pipe load L of an allreduce on a network whose overlay
 * arcs are single pipes of their own, in both directions (a torus, a
 * mesh, a ring: docs/milp.md, "Edge-count bound"); 0 where that does not
 * hold or M > EDGE_MAX_M.  A sub's tree uses n - 1 of the E overlay
 * edges, and an edge used by the subs in S carries sum over S of c_m
 * chunks each way.  Forgetting which edges form trees, the least maximum
 * over edges is a small MILP: N_S edges used by exactly the subs in S
 * (sum N_S <= E, sum over S containing m of N_S = n - 1), c >= 0 summing
 * to C in decreasing order (the relaxation is symmetric in the subs),
 * lam >= sum over S of c whenever N_S > 0.  L >= lam * the least
 * coefficient of those pipes.  Solved on c->sub (freed here). */
#define EDGE_MAX_M 6

static double edge_load_bound(solve_ctx_t *c)
{
    const milp_net_t *net = c->net;
    const milp_spec_t *sp = c->sp;
    int32_t n = net->n, M = sp->m, nS = (1 << M) - 1, E = 0;
    int32_t a0 = c->mp.arc_off[0], a1 = c->mp.arc_off[1];
    double C = (double)sp->nchunks, coef = INFINITY, lam = 0;
    int ind[1 + 2 * 64 + 8], colN, colZ, colC, colL, row;
    double val[1 + 2 * 64 + 8];
    glp_iocp io;

    if (sp->coll != CCS_COLL_ALLREDUCE || net->nsrv != 1 || M < 2 ||
        M > EDGE_MAX_M)
        return 0;
    /* Same arcs in every sub; each arc one pipe, used by no other arc;
     * its reverse an arc too. */
    for (int32_t m = 1; m < M; m++)
        if (c->mp.arc_off[m + 1] - c->mp.arc_off[m] != a1 - a0)
            return 0;
    for (int32_t a = a0; a < a1; a++) {
        int32_t u = c->mp.arc_u[a], v = c->mp.arc_v[a], idx = u * n + v;

        if (net->route_off[idx + 1] - net->route_off[idx] != 1 ||
            !milp_arc_allowed(net, sp, 0, v, u))
            return 0;
        for (int32_t b = a0; b < a; b++) {
            int32_t jdx = c->mp.arc_u[b] * n + c->mp.arc_v[b];

            if (net->route_pipe[net->route_off[jdx]] ==
                net->route_pipe[net->route_off[idx]])
                return 0;
        }
        coef = fmin(coef, 1e6 * sp->unit_bytes /
                              net->pipe_bw_Bps[net->route_pipe[
                                  net->route_off[idx]]]);
        E += u < v;
    }
    c->sub = glp_create_prob();
    glp_set_obj_dir(c->sub, GLP_MIN);
    colN = glp_add_cols(c->sub, nS);          /* N_S, S = 1..nS */
    colZ = glp_add_cols(c->sub, nS);          /* z_S: N_S > 0 */
    colC = glp_add_cols(c->sub, M);
    colL = glp_add_cols(c->sub, 1);
    for (int32_t s = 0; s < nS; s++) {
        glp_set_col_kind(c->sub, colN + s, GLP_IV);
        glp_set_col_bnds(c->sub, colN + s, GLP_DB, 0, E);
        glp_set_col_kind(c->sub, colZ + s, GLP_BV);
    }
    for (int32_t m = 0; m < M; m++)
        glp_set_col_bnds(c->sub, colC + m, GLP_DB, 0, C);
    glp_set_col_bnds(c->sub, colL, GLP_LO, 0, 0);
    glp_set_obj_coef(c->sub, colL, 1);
    row = glp_add_rows(c->sub, 1);            /* sum N_S <= E */
    for (int32_t s = 0; s < nS; s++) {
        ind[s + 1] = colN + s;
        val[s + 1] = 1;
    }
    glp_set_mat_row(c->sub, row, nS, ind, val);
    glp_set_row_bnds(c->sub, row, GLP_UP, 0, E);
    for (int32_t m = 0; m < M; m++) {         /* each tree n - 1 edges */
        int len = 0;

        for (int32_t s = 0; s < nS; s++)
            if ((s + 1) >> m & 1) {
                ind[++len] = colN + s;
                val[len] = 1;
            }
        row = glp_add_rows(c->sub, 1);
        glp_set_mat_row(c->sub, row, len, ind, val);
        glp_set_row_bnds(c->sub, row, GLP_FX, n - 1, n - 1);
    }
    for (int32_t s = 0; s < nS; s++) {
        int len = 0;

        /* N_S <= E z_S */
        ind[1] = colN + s;
        val[1] = 1;
        ind[2] = colZ + s;
        val[2] = -E;
        row = glp_add_rows(c->sub, 1);
        glp_set_mat_row(c->sub, row, 2, ind, val);
        glp_set_row_bnds(c->sub, row, GLP_UP, 0, 0);
        /* lam - sum_{m in S} c_m - 2C z_S >= -2C */
        ind[++len] = colL;
        val[len] = 1;
        ind[++len] = colZ + s;
        val[len] = -2 * C;
        for (int32_t m = 0; m < M; m++)
            if ((s + 1) >> m & 1) {
                ind[++len] = colC + m;
                val[len] = -1;
            }
        row = glp_add_rows(c->sub, 1);
        glp_set_mat_row(c->sub, row, len, ind, val);
        glp_set_row_bnds(c->sub, row, GLP_LO, -2 * C, 0);
    }
    for (int32_t m = 0; m <= M; m++) {        /* sum c = C; c decreasing */
        int len = 0;

        if (m == M) {
            for (int32_t k = 0; k < M; k++) {
                ind[++len] = colC + k;
                val[len] = 1;
            }
        } else if (m > 0) {
            ind[++len] = colC + m - 1;
            val[len] = 1;
            ind[++len] = colC + m;
            val[len] = -1;
        } else {
            continue;
        }
        row = glp_add_rows(c->sub, 1);
        glp_set_mat_row(c->sub, row, len, ind, val);
        if (m == M)
            glp_set_row_bnds(c->sub, row, GLP_FX, C, C);
        else
            glp_set_row_bnds(c->sub, row, GLP_LO, 0, 0);
    }
    glp_init_iocp(&io);
    io.msg_lev = GLP_MSG_OFF;
    io.presolve = GLP_ON;
    io.tm_lim = milp_ms_left(c->deadline);
    /* Only a proven optimum is a bound: anything else counts as 0. */
    if (glp_intopt(c->sub, &io) == 0 && glp_mip_status(c->sub) == GLP_OPT)
        lam = glp_mip_obj_val(c->sub);
    glp_delete_prob(c->sub);
    c->sub = NULL;
    return lam * coef * (1 - 1e-9);
}

/* A lower bound on T by case analysis (docs/milp.md, "Fill bounds"),
 * valid for every integer solution of the tree model; NAN for alltoall.
 * Some sub m has c_m >= c* = ceil(C / M).  T >= L (T_load) and T >= L +
 * phi_d(c_m) (the T_m row) for a tree of depth >= d, and L >= L_lp, the
 * least L of the LP relaxation.  A tree is a star (depth 1), or has depth
 * >= max(2, least eccentricity); a star at r loads each pipe q with c_m
 * times the number of its arcs' routes through q.  So T is at least the
 * least over subs of min(star case, deep case).  The LP for L_lp runs on
 * a copy of the model (c->sub) so that the root LP's basis stays as it
 * was for glp_intopt. */
static double fill_bound(solve_ctx_t *c)
{
    const milp_net_t *net = c->net;
    const milp_spec_t *sp = c->sp;
    int32_t n = net->n, M = sp->m;
    int64_t cs = ((int64_t)sp->nchunks + M - 1) / M;
    bool up = milp_coll_up(sp->coll), down = milp_coll_down(sp->coll);
    double lbl = 0, best = INFINITY;
    glp_smcp sm;

    if (sp->coll == CCS_COLL_ALLTOALL || n < 2)
        return NAN;
    c->sub = glp_create_prob();
    glp_copy_prob(c->sub, c->b.lp, GLP_OFF);
    glp_set_obj_coef(c->sub, c->mp.T, 0);
    glp_set_obj_coef(c->sub, c->mp.L, 1);
    glp_init_smcp(&sm);
    sm.msg_lev = GLP_MSG_OFF;
    sm.tm_lim = milp_ms_left(c->deadline);
    if (glp_simplex(c->sub, &sm) == 0 && glp_get_status(c->sub) == GLP_OPT)
        lbl = fmax(0, glp_get_obj_val(c->sub));
    glp_delete_prob(c->sub);
    c->sub = NULL;
    lbl = fmax(lbl, edge_load_bound(c));
    for (int32_t m = 0; m < M; m++) {
        fill_data_t fd;
        double deep, star = INFINITY;
        int32_t d;

        milp_fill_data(&c->mp, net, sp, c->conc, m, &fd);
        if (fd.depth < 1)
            return NAN;
        d = fd.depth < 2 ? 2 : fd.depth;
        deep = lbl + fmax(0, milp_fill_phi(&fd, sp, d, cs));
        for (int32_t r = 0; r < n && fd.depth == 1; r++) {
            double lstar = 0;
            int32_t arcs = 0;

            if (sp->root >= 0 && r != sp->root)
                continue;
            for (int32_t a = c->mp.arc_off[m]; a < c->mp.arc_off[m + 1]; a++)
                arcs += c->mp.arc_v[a] == r;
            if (arcs < n - 1)
                continue;              /* no star at r in this overlay */
            for (int32_t q = 0; q < net->npipes; q++) {
                int32_t cnt = 0;

                for (int32_t u = 0; u < n; u++) {
                    if (u == r)
                        continue;
                    cnt += up && milp_route_has(net, u, r, q);
                    cnt += down && milp_route_has(net, r, u, q);
                }
                lstar = fmax(lstar, 1e6 * sp->unit_bytes /
                                        net->pipe_bw_Bps[q] * (double)cs *
                                        cnt);
            }
            star = fmin(star, fmax(lbl, lstar) +
                                  fmax(0, milp_fill_phi(&fd, sp, 1, cs)));
        }
        best = fmin(best, fmin(deep, star));
    }
    return best;
}

/* The best proven lower bound on the model's optimum: GLPK's (root LP,
 * raised by the branch and bound) or the fill bound, which is valid for
 * every integer solution of the model (docs/milp.md, "Fill bounds") and
 * so counts as well; NAN fill bounds are ignored. */
static double best_bound(double glpk_bound, double fill_us)
{
    return isfinite(fill_us) && fill_us > glpk_bound ? fill_us : glpk_bound;
}

/* The gap target is met against the best proven bound (a limit stopped
 * GLPK, but the fill bound closes the gap). */
static bool gap_met(const milp_stats_t *s, const milp_solve_opts_t *o)
{
    return s->gap <= o->mip_gap;
}

/* Whether the incumbent in c->x already lies within the gap target of
 * the best proven bound: then neither the LNS nor branch and bound can
 * pay for themselves, and the solve ends with it (decoded from c->x as
 * when GLPK returns the offered warm start unimproved). */
static bool proven_early(solve_ctx_t *c)
{
    milp_stats_t *s = &c->s;
    double inc = c->x[c->mp.T];
    double lb = best_bound(s->lp_us, s->fill_us);

    return s->warm_offered && inc > 0 && (inc - lb) / inc <= c->o->mip_gap;
}

static ccs_status_t finish_early(solve_ctx_t *c, ccs_err_t *err)
{
    milp_stats_t *s = &c->s;

    s->obj_us = c->x[c->mp.T];
    s->bound_us = fmin(best_bound(s->lp_us, s->fill_us), s->obj_us);
    s->glpk_bound_us = fmin(s->lp_us, s->obj_us);
    s->gap = s->obj_us > 0 ? (s->obj_us - s->bound_us) / s->obj_us : 0;
    s->outcome = MILP_OUT_OPTIMAL;
    s->proven_early = true;
    return milp_decode(&c->b, &c->mp, c->net, c->sp, c->x, &c->out, err);
}

static ccs_status_t solve_body(void *arg, ccs_err_t *err)
{
    solve_ctx_t *c = arg;
    const milp_solve_opts_t *o = c->o;
    milp_stats_t *s = &c->s;
    cbinfo_t ci = { 0 };
    glp_smcp sm;
    glp_iocp io;
    int rc, mst;
    size_t nvec;
    ccs_status_t st;

    c->b.lp = glp_create_prob();
    glp_set_prob_name(c->b.lp, "ccsynth_milp");
    if (c->sp->coll == CCS_COLL_ALLTOALL)
        st = milp_build_a2a_model(&c->b, &c->mp, c->net, c->sp, err);
    else
        st = milp_build_tree_model(&c->b, &c->mp, c->net, c->sp, c->conc, err);
    if (st != CCS_OK)
        return st;
    s->rows = glp_get_num_rows(c->b.lp);
    s->arcs = c->sp->coll == CCS_COLL_ALLTOALL ? 0 : c->mp.narcs;
    s->cols = glp_get_num_cols(c->b.lp);
    s->ints = glp_get_num_int(c->b.lp);
    if (o->lp_out != NULL) {
        st = milp_lp_text(c->b.lp, o->lp_out, err);
        if (st != CCS_OK)
            return st;
    }

    nvec = (size_t)c->b.ncols + 1;
    c->x = calloc(nvec, sizeof(double));
    c->y = calloc(nvec, sizeof(double));
    c->lpx = calloc(nvec, sizeof(double));
    c->fix = calloc(nvec, 1);
    if (c->x == NULL || c->y == NULL || c->lpx == NULL || c->fix == NULL)
        return ccs_err_set(err, CCS_ERR_NOMEM, "milp: out of memory");
    if (c->warm != NULL && o->use_warm) {
        if (c->sp->coll == CCS_COLL_ALLTOALL)
            milp_warm_a2a(&c->mp, c->net, c->warm, c->x);
        else
            milp_warm_tree(&c->mp, c->net, c->sp, c->conc, c->warm, c->x);
        s->warm_offered = milp_warm_finish(&c->b, &c->mp, c->x);
        if (s->warm_offered)
            s->warm_us = c->x[c->mp.T];
    }

    /* Building the model takes a while on big instances: past the
     * deadline there is no time for the LP. */
    if (milp_now_s() >= c->deadline) {
        s->time_limit_hit = true;
        s->outcome = MILP_OUT_NOSOL;
        return CCS_OK;
    }

    /* Root LP.  Chunk counts, big-M ready times and piece counts differ
     * by orders of magnitude: let GLPK scale rows and columns (as glpsol
     * does). */
    glp_scale_prob(c->b.lp, GLP_SF_AUTO);
    glp_init_smcp(&sm);
    sm.msg_lev = GLP_MSG_OFF;
    sm.tm_lim = milp_ms_left(c->deadline);
    rc = glp_simplex(c->b.lp, &sm);
    if (rc == GLP_ETMLIM ||
        (rc == 0 && glp_get_status(c->b.lp) != GLP_OPT &&
         milp_now_s() >= c->deadline)) {
        s->time_limit_hit = true;
        s->outcome = MILP_OUT_NOSOL;
        return CCS_OK;
    }
    if (rc != 0 || glp_get_status(c->b.lp) != GLP_OPT)
        return ccs_err_set(err, CCS_ERR_SOLVER,
                           "milp: root LP failed (glp_simplex %d, status %d)",
                           rc, glp_get_status(c->b.lp));
    s->lp_us = glp_get_obj_val(c->b.lp);
    s->fill_us = fill_bound(c);
    for (int j = 1; j <= c->b.ncols; j++)
        c->lpx[j] = glp_get_col_prim(c->b.lp, j);
    ci.node_limit = o->node_limit;
    if (ci.node_limit < 0) {
        double r = s->rows > 0 ? (double)s->rows : 1;

        if (r <= MILP_BIG_ROWS) {
            int32_t lim = (int32_t)(MILP_NODE_WORK / r);

            ci.node_limit = lim < 60 ? 60 : (lim > 1000 ? 1000 : lim);
        } else {
            /* A node's LP grows about as rows^2: 60 (MILP_BIG_ROWS /
             * rows)^2, at least 1 (17074 rows: 3 nodes, 7334 rows: 17). */
            int32_t lim = (int32_t)(60 * (MILP_BIG_ROWS / r) *
                                    (MILP_BIG_ROWS / r));

            ci.node_limit = lim < 1 ? 1 : lim;
        }
    }
    s->node_limit = ci.node_limit;

    /* Improve the warm start by sub-MIPs, then branch from it, unless
     * the bounds already prove it (or, after the LNS, its result). */
    s->lns_us = s->warm_us;
    if (proven_early(c))
        return finish_early(c, err);
    if (s->warm_offered && o->lns) {
        lns_run(c, ci.node_limit);
        s->lns_us = c->x[c->mp.T];
        if (proven_early(c))
            return finish_early(c, err);
    }

    ci.bound = s->lp_us;
    ci.fill_us = s->fill_us;
    ci.warm = s->warm_offered ? c->x : NULL;
    iocp_init(&io, c->deadline, o->mip_gap, &ci, o->glpk_heuristics);
    rc = glp_intopt(c->b.lp, &io);
    s->nodes = ci.nodes;
    s->node_limit_hit = ci.node_hit;
    s->warm_accepted = ci.warm_accepted;
    if (rc == GLP_ETMLIM || ci.time_hit)
        s->time_limit_hit = true;
    else if (rc != 0 && rc != GLP_ESTOP && rc != GLP_EMIPGAP)
        return ccs_err_set(err, CCS_ERR_SOLVER,
                           "milp: glp_intopt failed with code %d", rc);
    mst = glp_mip_status(c->b.lp);
    if (mst == GLP_NOFEAS)
        return ccs_err_set(err, CCS_ERR_SOLVER,
                           "milp: GLPK reports the model infeasible");
    if (mst != GLP_OPT && mst != GLP_FEAS) {
        /* A limit before the incumbent was offered: an improved LNS
         * incumbent is still a solution, the bare heuristic is not. */
        if (s->lns_improved == 0) {
            s->outcome = MILP_OUT_NOSOL;
            return CCS_OK;
        }
        s->obj_us = c->x[c->mp.T];
        s->glpk_bound_us = fmin(ci.bound, s->obj_us);
        s->bound_us = fmin(best_bound(ci.bound, s->fill_us), s->obj_us);
        s->gap = s->obj_us > 0 ? (s->obj_us - s->bound_us) / s->obj_us : 0;
        s->outcome = gap_met(s, c->o) ? MILP_OUT_OPTIMAL : MILP_OUT_LIMIT;
        return milp_decode(&c->b, &c->mp, c->net, c->sp, c->x, &c->out, err);
    }
    s->obj_us = glp_mip_obj_val(c->b.lp);
    if (rc == 0 && mst == GLP_OPT)
        s->bound_us = s->obj_us;     /* the search closed the tree */
    else
        s->bound_us = fmin(best_bound(ci.bound, s->fill_us), s->obj_us);
    s->glpk_bound_us = rc == 0 && mst == GLP_OPT ? s->obj_us
                                                 : fmin(ci.bound, s->obj_us);
    s->gap = s->obj_us > 0 ? (s->obj_us - s->bound_us) / s->obj_us : 0;
    if (rc == GLP_EMIPGAP || (rc == 0 && mst == GLP_OPT) || gap_met(s, c->o))
        s->outcome = MILP_OUT_OPTIMAL;
    else
        s->outcome = MILP_OUT_LIMIT;
    return milp_decode(&c->b, &c->mp, c->net, c->sp, NULL, &c->out, err);
}

ccs_status_t milp_solve(const milp_net_t *net, const milp_spec_t *sp,
                        const double *conc, const milp_plan_t *warm,
                        const milp_solve_opts_t *o, milp_plan_t **out,
                        milp_stats_t *stats, ccs_err_t *err)
{
    solve_ctx_t c;
    bool freed = false;
    ccs_status_t st;

    st = milp_validate_spec(net, sp, o, err);
    if (st != CCS_OK)
        return st;
    memset(&c, 0, sizeof(c));
    c.net = net;
    c.sp = sp;
    c.conc = conc;
    c.warm = warm;
    c.o = o;
    c.t0 = milp_now_s();
    c.deadline = c.t0 + o->time_limit_s;
    if (o->deadline_s > 0 && o->deadline_s < c.deadline)
        c.deadline = o->deadline_s;
    c.s.obj_us = NAN;
    c.s.gap = NAN;
    c.s.bound_us = NAN;
    c.s.glpk_bound_us = NAN;
    c.s.lp_us = NAN;
    c.s.fill_us = NAN;
    c.s.warm_us = NAN;
    c.s.lns_us = NAN;
    if (sp->coll != CCS_COLL_ALLTOALL && o->max_arcs > 0) {
        /* Counted the way milp_build_tree_model enumerates them, before any
         * of the model is built (nothing is allocated yet). */
        for (int32_t m = 0; m < sp->m; m++)
            for (int32_t u = 0; u < net->n; u++)
                for (int32_t v = 0; v < net->n; v++)
                    c.s.arcs += milp_arc_allowed(net, sp, m, u, v) ? 1 : 0;
        if (c.s.arcs > o->max_arcs) {
            c.s.outcome = MILP_OUT_NOSOL;
            c.s.too_large = true;
            *stats = c.s;
            *out = NULL;
            return CCS_OK;
        }
    }
    st = milp_glpk_call(solve_body, &c, &freed, err);
    if (freed) {
        c.b.lp = NULL;       /* freed with GLPK's environment */
        c.sub = NULL;
    }
    if (st == CCS_OK) {
        c.s.time_s = milp_now_s() - c.t0;
        *stats = c.s;
        *out = c.out;
        c.out = NULL;
    }
    milp_plan_destroy(c.out);
    if (c.sub != NULL)
        glp_delete_prob(c.sub);
    free(c.x);
    free(c.y);
    free(c.lpx);
    free(c.fix);
    milp_tmap_free(&c.mp);
    milp_mb_free(&c.b);
    return st;
}
