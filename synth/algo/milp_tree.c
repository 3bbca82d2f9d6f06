/*
 * milp_tree.c - the MILP's tree model (AdapCC Sec. IV-D, eqs. 1-6, for
 * allreduce, reduce and broadcast): per sub-collective a tree by
 * single-commodity flow, its root, chunk share and piece size, ready
 * times up and down the tree, the busiest pipe's load, and the fill
 * bounds and cuts (docs/milp.md, "Fill bounds"); and the warm start's
 * column values from a heuristic plan.
 *
 * Cost charged: T >= L + E + G + alpha_hat (p - 1) - one piece on the
 * slowest pipe, in microseconds (milp_model.c has the column list).
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

/* Hop distance of every GPU to root r along sub m's arcs (u -> v: u's
 * parent is v); the largest one, or -1 when some GPU cannot reach r. */
static int32_t sub_ecc(const tmap_t *mp, int32_t n, int32_t m, int32_t r)
{
    int32_t dist[MILP_MAX_RANKS], far = 0, seen = 1;

    for (int32_t g = 0; g < n; g++)
        dist[g] = -1;
    dist[r] = 0;
    for (int32_t d = 0; seen < n; d++) {
        int32_t grew = 0;

        for (int32_t a = mp->arc_off[m]; a < mp->arc_off[m + 1]; a++)
            if (dist[mp->arc_v[a]] == d && dist[mp->arc_u[a]] < 0) {
                dist[mp->arc_u[a]] = d + 1;
                far = d + 1;
                grew++;
            }
        if (grew == 0)
            return -1;
        seen += grew;
    }
    return far;
}

void milp_fill_data(const tmap_t *mp, const milp_net_t *net,
                    const milp_spec_t *sp, const double *conc, int32_t m,
                    fill_data_t *fd)
{
    int32_t a0 = mp->arc_off[m], a1 = mp->arc_off[m + 1];
    bool up = milp_coll_up(sp->coll), down = milp_coll_down(sp->coll);

    memset(fd, 0, sizeof(*fd));
    if (a1 == a0 || net->n < 2)
        return;
    fd->ahat = milp_alpha_hat_us(net, sp, m);
    for (int32_t k = 0; k < sp->ncand; k++) {
        fd->tup[k] = INFINITY;
        fd->tdn[k] = INFINITY;
        for (int32_t a = a0; a < a1; a++) {
            fd->tup[k] = fmin(fd->tup[k],
                              milp_hop_us(net, sp, conc, mp->arc_u[a],
                                          mp->arc_v[a], sp->cand[k]));
            fd->tdn[k] = fmin(fd->tdn[k],
                              milp_hop_us(net, sp, conc, mp->arc_v[a],
                                          mp->arc_u[a], sp->cand[k]));
        }
        fd->dk[k] = milp_piece_us(net, sp, conc, sp->cand[k]);
        fd->tup[k] = up ? fd->tup[k] : 0;
        fd->tdn[k] = down ? fd->tdn[k] : 0;
    }
    for (int32_t r = 0; r < net->n; r++) {
        int32_t e;

        if (sp->root >= 0 && r != sp->root)
            continue;
        e = sub_ecc(mp, net->n, m, r);
        if (e > 0 && (fd->depth == 0 || e < fd->depth))
            fd->depth = e;
    }
}

/* Least T - L of sub m with c chunks and a tree of depth >= d (the T_m
 * row with E >= d tup, G >= d tdn, p >= max(1, ceil(c / q_k))). */
double milp_fill_phi(const fill_data_t *fd, const milp_spec_t *sp,
                     int32_t d, int64_t c)
{
    double best = INFINITY;

    for (int32_t k = 0; k < sp->ncand; k++) {
        int64_t p = (c + sp->cand[k] - 1) / sp->cand[k];

        p = p < 1 ? 1 : p;
        best = fmin(best, (double)d * (fd->tup[k] + fd->tdn[k]) +
                              fd->ahat * (double)(p - 1) - fd->dk[k]);
    }
    return best;
}

/* Fill cut of sub m (a valid inequality, docs/milp.md "Fill bounds").
 * Every tree of the sub has depth >= fd.depth = d, so with piece size q_k
 * E >= d tup(k) and G >= d tdn(k); with p >= max(1, ceil(c / q_k)) the
 * T_m row gives T - L >= phi_d(c_m).  phi is concave-like in c, so the
 * only useful edge of its lower convex hull over [clo, C] is the chord:
 * row `fill_m`, T - L - beta c_m >= alpha.  (E, G >= d tmin as rows of
 * their own moved GLPK's search on dgx1 to a worse plan: left out.) */
static void add_fill_cuts(mb_t *b, const tmap_t *mp, const milp_spec_t *sp,
                          const fill_data_t *fd, int32_t m, int32_t nsrv)
{
    int32_t d = fd->depth;
    int64_t clo = sp->nchunks >= (uint32_t)sp->m ? 1 : 0;
    int64_t C = (int64_t)sp->nchunks;
    double beta, alpha, lo = INFINITY;
    char nm[64];

    /* One group only: multi-server models have the ecut rows, and there
     * this row changed GLPK's search for the worse (docs/milp.md). */
    if (d < 1 || nsrv > 1 || C <= clo)
        return;
    /* The chord from clo to C, lowered until no integer c is below it. */
    beta = (milp_fill_phi(fd, sp, d, C) - milp_fill_phi(fd, sp, d, clo)) /
           (double)(C - clo);
    for (int64_t c = clo; c <= C; c++)
        lo = fmin(lo, milp_fill_phi(fd, sp, d, c) - beta * (double)c);
    alpha = lo - 1e-6 * (1 + fabs(lo));   /* rounding must not cut */
    milp_mb_add(b, mp->T, 1);
    milp_mb_add(b, mp->L, -1);
    milp_mb_add(b, mp->c[m], -beta);
    snprintf(nm, sizeof(nm), "fill_%d", m);
    milp_mb_row(b, nm, GLP_LO, alpha, 0);
}

ccs_status_t milp_build_tree_model(mb_t *b, tmap_t *mp,
                                   const milp_net_t *net,
                                   const milp_spec_t *sp,
                                   const double *conc, ccs_err_t *err)
{
    int32_t n = net->n, M = sp->m, K = sp->ncand;
    double C = (double)sp->nchunks, big = 0;
    bool up = milp_coll_up(sp->coll), down = milp_coll_down(sp->coll);
    char nm[64];
    ccs_status_t st;

    mp->arc_off = calloc((size_t)M + 1, sizeof(int32_t));
    mp->arc_u = malloc((size_t)M * n * n * sizeof(int32_t));
    mp->arc_v = malloc((size_t)M * n * n * sizeof(int32_t));
    mp->r = malloc((size_t)M * n * sizeof(int));
    mp->h = malloc((size_t)M * n * sizeof(int));
    mp->bb = malloc((size_t)M * n * sizeof(int));
    mp->sr = malloc((size_t)M * n * sizeof(int));
    mp->c = malloc((size_t)M * sizeof(int));
    mp->p = malloc((size_t)M * sizeof(int));
    mp->E = malloc((size_t)M * sizeof(int));
    mp->G = malloc((size_t)M * sizeof(int));
    mp->w = malloc((size_t)M * K * sizeof(int));
    mp->col_first = malloc(((size_t)M + 1) * sizeof(int));
    if (mp->col_first == NULL || mp->arc_off == NULL || mp->arc_u == NULL ||
        mp->arc_v == NULL || mp->r == NULL || mp->h == NULL ||
        mp->bb == NULL || mp->sr == NULL || mp->c == NULL || mp->p == NULL ||
        mp->E == NULL || mp->G == NULL || mp->w == NULL)
        return ccs_err_set(err, CCS_ERR_NOMEM, "milp: out of memory");
    for (int32_t m = 0; m < M; m++) {
        mp->arc_off[m] = mp->narcs;
        for (int32_t u = 0; u < n; u++)
            for (int32_t v = 0; v < n; v++)
                if (milp_arc_allowed(net, sp, m, u, v)) {
                    mp->arc_u[mp->narcs] = u;
                    mp->arc_v[mp->narcs] = v;
                    mp->narcs++;
                }
    }
    mp->arc_off[M] = mp->narcs;
    mp->y = malloc((size_t)mp->narcs * sizeof(int));
    mp->f = malloc((size_t)mp->narcs * sizeof(int));
    mp->z = malloc((size_t)mp->narcs * sizeof(int));
    if (mp->y == NULL || mp->f == NULL || mp->z == NULL)
        return ccs_err_set(err, CCS_ERR_NOMEM, "milp: out of memory");

    /* Big-M of the ready times: no path is longer than n hops. */
    for (int32_t a = 0; a < mp->narcs; a++) {
        double t1 = milp_hop_us(net, sp, conc, mp->arc_u[a], mp->arc_v[a],
                                sp->cand[K - 1]);
        double t2 = milp_hop_us(net, sp, conc, mp->arc_v[a], mp->arc_u[a],
                                sp->cand[K - 1]);

        big = fmax(big, fmax(t1, t2));
    }
    big = (double)n * big + 1;

    /* Columns, sub by sub (the LNS fixes a sub's columns as a block). */
    for (int32_t m = 0; m < M; m++) {
        mp->col_first[m] = b->ncols + 1;
        for (int32_t a = mp->arc_off[m]; a < mp->arc_off[m + 1]; a++) {
            int32_t u = mp->arc_u[a], v = mp->arc_v[a];

            snprintf(nm, sizeof(nm), "y_%d_%d_%d", m, u, v);
            mp->y[a] = milp_mb_col(b, nm, GLP_BV, GLP_DB, 0, 1);
            snprintf(nm, sizeof(nm), "f_%d_%d_%d", m, u, v);
            mp->f[a] = milp_mb_col(b, nm, GLP_CV, GLP_DB, 0, (double)(n - 1));
            snprintf(nm, sizeof(nm), "z_%d_%d_%d", m, u, v);
            mp->z[a] = milp_mb_col(b, nm, GLP_CV, GLP_DB, 0, C);
        }
        for (int32_t g = 0; g < n; g++) {
            snprintf(nm, sizeof(nm), "r_%d_%d", m, g);
            mp->r[m * n + g] = milp_mb_col(b, nm, GLP_BV, GLP_DB, 0, 1);
            if (sp->root >= 0) {
                double v = g == sp->root ? 1 : 0;

                glp_set_col_bnds(b->lp, mp->r[m * n + g], GLP_FX, v, v);
            }
            snprintf(nm, sizeof(nm), "s_%d_%d", m, g);
            mp->sr[m * n + g] = milp_mb_col(b, nm, GLP_CV, GLP_DB, 0, C);
            snprintf(nm, sizeof(nm), "h_%d_%d", m, g);
            mp->h[m * n + g] = milp_mb_col(b, nm, GLP_CV, GLP_DB, 0, big);
            snprintf(nm, sizeof(nm), "b_%d_%d", m, g);
            mp->bb[m * n + g] = milp_mb_col(b, nm, GLP_CV, GLP_DB, 0, big);
        }
        snprintf(nm, sizeof(nm), "c_%d", m);
        mp->c[m] = milp_mb_col(b, nm, GLP_IV, GLP_DB,
                               sp->nchunks >= (uint32_t)M ? 1 : 0, C);
        snprintf(nm, sizeof(nm), "p_%d", m);
        mp->p[m] = milp_mb_col(b, nm, GLP_IV, GLP_DB, 1, C);
        for (int32_t k = 0; k < K; k++) {
            snprintf(nm, sizeof(nm), "w_%d_%d", m, k);
            mp->w[m * K + k] = milp_mb_col(b, nm, GLP_BV, GLP_DB, 0, 1);
        }
        snprintf(nm, sizeof(nm), "E_%d", m);
        mp->E[m] = milp_mb_col(b, nm, GLP_CV, GLP_LO, 0, 0);
        snprintf(nm, sizeof(nm), "G_%d", m);
        mp->G[m] = milp_mb_col(b, nm, GLP_CV, GLP_LO, 0, 0);
    }
    mp->col_first[M] = b->ncols + 1;
    mp->L = milp_mb_col(b, "L", GLP_CV, GLP_LO, 0, 0);
    mp->T = milp_mb_col(b, "T", GLP_CV, GLP_LO, 0, 0);
    glp_set_obj_dir(b->lp, GLP_MIN);
    glp_set_obj_coef(b->lp, mp->T, 1.0);
    st = milp_mb_ready(b, err);
    if (st != CCS_OK)
        return st;

    /* Rows. */
    for (int32_t m = 0; m < M; m++) {
        int32_t a0 = mp->arc_off[m], a1 = mp->arc_off[m + 1];
        double ahat = milp_alpha_hat_us(net, sp, m);
        fill_data_t fd;

        /* One root. */
        for (int32_t g = 0; g < n; g++)
            milp_mb_add(b, mp->r[m * n + g], 1);
        snprintf(nm, sizeof(nm), "root_%d", m);
        milp_mb_row(b, nm, GLP_FX, 1, 1);
        for (int32_t u = 0; u < n; u++) {
            /* One parent unless root; flow: supply 1, the root takes n-1. */
            for (int32_t a = a0; a < a1; a++)
                if (mp->arc_u[a] == u)
                    milp_mb_add(b, mp->y[a], 1);
            milp_mb_add(b, mp->r[m * n + u], 1);
            snprintf(nm, sizeof(nm), "out_%d_%d", m, u);
            milp_mb_row(b, nm, GLP_FX, 1, 1);
            /* ... and every GPU ships all c chunks on it, except the
             * root, which absorbs them (s = c * r, linear because the
             * two rows below pin it for binary r). */
            for (int32_t a = a0; a < a1; a++)
                if (mp->arc_u[a] == u)
                    milp_mb_add(b, mp->z[a], 1);
            milp_mb_add(b, mp->sr[m * n + u], 1);
            milp_mb_add(b, mp->c[m], -1);
            snprintf(nm, sizeof(nm), "ship_%d_%d", m, u);
            milp_mb_row(b, nm, GLP_FX, 0, 0);
            milp_mb_add(b, mp->sr[m * n + u], 1);
            milp_mb_add(b, mp->r[m * n + u], -C);
            snprintf(nm, sizeof(nm), "sroot_%d_%d", m, u);
            milp_mb_row(b, nm, GLP_UP, 0, 0);
            for (int32_t a = a0; a < a1; a++) {
                if (mp->arc_u[a] == u)
                    milp_mb_add(b, mp->f[a], 1);
                if (mp->arc_v[a] == u)
                    milp_mb_add(b, mp->f[a], -1);
            }
            milp_mb_add(b, mp->r[m * n + u], (double)n);
            snprintf(nm, sizeof(nm), "flow_%d_%d", m, u);
            milp_mb_row(b, nm, GLP_FX, 1, 1);
        }
        for (int32_t a = a0; a < a1; a++) {
            int32_t u = mp->arc_u[a], v = mp->arc_v[a];

            milp_mb_add(b, mp->f[a], 1);
            milp_mb_add(b, mp->y[a], -(double)(n - 1));
            snprintf(nm, sizeof(nm), "cap_%d_%d_%d", m, u, v);
            milp_mb_row(b, nm, GLP_UP, 0, 0);
            /* z = y * c: z lives only on the chosen arc ... */
            milp_mb_add(b, mp->z[a], 1);
            milp_mb_add(b, mp->y[a], -C);
            snprintf(nm, sizeof(nm), "zy_%d_%d_%d", m, u, v);
            milp_mb_row(b, nm, GLP_UP, 0, 0);
            /* Ready times (eq. 2, a = 1 everywhere: the max). */
            if (up) {
                milp_mb_add(b, mp->h[m * n + v], 1);
                milp_mb_add(b, mp->h[m * n + u], -1);
                for (int32_t k = 0; k < K; k++)
                    milp_mb_add(b, mp->w[m * K + k],
                                -milp_hop_us(net, sp, conc, u, v, sp->cand[k]));
                milp_mb_add(b, mp->y[a], -big);
                snprintf(nm, sizeof(nm), "hup_%d_%d_%d", m, u, v);
                milp_mb_row(b, nm, GLP_LO, -big, 0);
            }
            if (down) {
                milp_mb_add(b, mp->bb[m * n + u], 1);
                milp_mb_add(b, mp->bb[m * n + v], -1);
                for (int32_t k = 0; k < K; k++)
                    milp_mb_add(b, mp->w[m * K + k],
                                -milp_hop_us(net, sp, conc, v, u, sp->cand[k]));
                milp_mb_add(b, mp->y[a], -big);
                snprintf(nm, sizeof(nm), "hdn_%d_%d_%d", m, u, v);
                milp_mb_row(b, nm, GLP_LO, -big, 0);
            }
        }
        for (int32_t g = 0; g < n; g++)
            milp_mb_add(b, mp->sr[m * n + g], 1);
        milp_mb_add(b, mp->c[m], -1);
        snprintf(nm, sizeof(nm), "sall_%d", m);
        milp_mb_row(b, nm, GLP_FX, 0, 0);
        /* Valid inequalities that tighten the LP bound (docs/milp.md):
         * a group without the root sends at least one arc and all c
         * chunks out of it, and some piece crosses out of it (fill). */
        for (int32_t g = 0; g < net->nsrv && net->nsrv > 1; g++) {
            double tmin[MILP_MAX_CAND], tmax = 0;

            for (int32_t a = a0; a < a1; a++)
                if (net->srv[mp->arc_u[a]] == g &&
                    net->srv[mp->arc_v[a]] != g)
                    milp_mb_add(b, mp->z[a], 1);
            for (int32_t i = 0; i < net->srv_size[g]; i++)
                milp_mb_add(b, mp->sr[m * n +
                                 net->srv_members[net->srv_first[g] + i]], 1);
            milp_mb_add(b, mp->c[m], -1);
            snprintf(nm, sizeof(nm), "zcut_%d_%d", m, g);
            milp_mb_row(b, nm, GLP_LO, 0, 0);
            for (int32_t k = 0; k < K; k++) {
                tmin[k] = INFINITY;
                for (int32_t a = a0; a < a1; a++)
                    if (net->srv[mp->arc_u[a]] == g &&
                        net->srv[mp->arc_v[a]] != g)
                        tmin[k] = fmin(tmin[k],
                                       milp_hop_us(net, sp, conc,
                                                   mp->arc_u[a],
                                                   mp->arc_v[a],
                                                   sp->cand[k]));
                if (isfinite(tmin[k]))
                    tmax = fmax(tmax, tmin[k]);
            }
            if (!up || !(tmax > 0))
                continue;
            milp_mb_add(b, mp->E[m], 1);
            for (int32_t k = 0; k < K; k++)
                if (isfinite(tmin[k]))
                    milp_mb_add(b, mp->w[m * K + k], -tmin[k]);
            for (int32_t i = 0; i < net->srv_size[g]; i++)
                milp_mb_add(b, mp->r[m * n +
                                net->srv_members[net->srv_first[g] + i]],
                       tmax);
            snprintf(nm, sizeof(nm), "ecut_%d_%d", m, g);
            milp_mb_row(b, nm, GLP_LO, 0, 0);
        }
        /* Cut: a group without the root sends at least one arc out. */
        for (int32_t g = 0; g < net->nsrv && net->nsrv > 1; g++) {
            for (int32_t a = a0; a < a1; a++)
                if (net->srv[mp->arc_u[a]] == g &&
                    net->srv[mp->arc_v[a]] != g)
                    milp_mb_add(b, mp->y[a], 1);
            for (int32_t i = 0; i < net->srv_size[g]; i++)
                milp_mb_add(b, mp->r[m * n +
                                net->srv_members[net->srv_first[g] + i]], 1);
            snprintf(nm, sizeof(nm), "cut_%d_%d", m, g);
            milp_mb_row(b, nm, GLP_LO, 1, 0);
        }
        for (int32_t g = 0; g < n; g++) {
            if (up) {
                milp_mb_add(b, mp->E[m], 1);
                milp_mb_add(b, mp->h[m * n + g], -1);
                snprintf(nm, sizeof(nm), "E_%d_%d", m, g);
                milp_mb_row(b, nm, GLP_LO, 0, 0);
            }
            if (down) {
                milp_mb_add(b, mp->G[m], 1);
                milp_mb_add(b, mp->bb[m * n + g], -1);
                snprintf(nm, sizeof(nm), "G_%d_%d", m, g);
                milp_mb_row(b, nm, GLP_LO, 0, 0);
            }
        }
        for (int32_t k = 0; k < K; k++)
            milp_mb_add(b, mp->w[m * K + k], 1);
        snprintf(nm, sizeof(nm), "pick_%d", m);
        milp_mb_row(b, nm, GLP_FX, 1, 1);
        /* p >= c / q_k when w_k = 1. */
        for (int32_t k = 0; k < K; k++) {
            milp_mb_add(b, mp->p[m], 1);
            milp_mb_add(b, mp->c[m], -1.0 / (double)sp->cand[k]);
            milp_mb_add(b, mp->w[m * K + k], -C);
            snprintf(nm, sizeof(nm), "pieces_%d_%d", m, k);
            milp_mb_row(b, nm, GLP_LO, -C, 0);
        }
        /* Objective bound of this sub (eqs. 4-6). */
        milp_mb_add(b, mp->T, 1);
        milp_mb_add(b, mp->L, -1);
        if (up)
            milp_mb_add(b, mp->E[m], -1);
        if (down)
            milp_mb_add(b, mp->G[m], -1);
        milp_mb_add(b, mp->p[m], -ahat);
        for (int32_t k = 0; k < K; k++)
            milp_mb_add(b, mp->w[m * K + k],
                        milp_piece_us(net, sp, conc, sp->cand[k]));
        snprintf(nm, sizeof(nm), "T_%d", m);
        milp_mb_row(b, nm, GLP_LO, -ahat, 0);
        milp_fill_data(mp, net, sp, conc, m, &fd);
        add_fill_cuts(b, mp, sp, &fd, m, net->nsrv);
    }
    for (int32_t m = 0; m < M; m++)
        milp_mb_add(b, mp->c[m], 1);
    milp_mb_row(b, "split", GLP_FX, C, C);
    milp_mb_add(b, mp->T, 1);
    milp_mb_add(b, mp->L, -1);
    milp_mb_row(b, "T_load", GLP_LO, 0, 0);
    /* Link sharing (eq. 3 summed over subs): L >= load(q) / bw(q). */
    for (int32_t q = 0; q < net->npipes; q++) {
        double coef = 1e6 * sp->unit_bytes / net->pipe_bw_Bps[q];

        for (int32_t a = 0; a < mp->narcs; a++) {
            int32_t u = mp->arc_u[a], v = mp->arc_v[a];

            if (up && milp_route_has(net, u, v, q))
                milp_mb_add(b, mp->z[a], -coef);
            if (down && milp_route_has(net, v, u, q))
                milp_mb_add(b, mp->z[a], -coef);
        }
        if (b->nt == 0)
            continue;
        milp_mb_add(b, mp->L, 1);
        snprintf(nm, sizeof(nm), "load_%d", q);
        milp_mb_row(b, nm, GLP_LO, 0, 0);
    }
    return CCS_OK;
}

/* Warm-start values of the tree model for plan `pl` (x[1..ncols]). */
void milp_warm_tree(const tmap_t *mp, const milp_net_t *net,
                    const milp_spec_t *sp, const double *conc,
                    const milp_plan_t *pl, double *x)
{
    int32_t n = net->n, K = sp->ncand;
    int32_t sub[MILP_MAX_RANKS];

    for (int32_t m = 0; m < sp->m; m++) {
        const int32_t *par = pl->parent + (size_t)m * n;
        double hv[MILP_MAX_RANKS], bv[MILP_MAX_RANKS];
        int32_t kk = 0, depth[MILP_MAX_RANKS];
        double E = 0, G = 0;

        for (int32_t k = 0; k < K; k++)
            if (sp->cand[k] == pl->piece[m])
                kk = k;
        for (int32_t u = 0; u < n; u++) {
            int32_t v = u;

            sub[u] = 0;
            depth[u] = 0;
            hv[u] = 0;
            bv[u] = 0;
            while (v != pl->root[m] && depth[u] <= n) {
                v = par[v];
                depth[u]++;
            }
        }
        for (int32_t u = 0; u < n; u++)
            for (int32_t v = u; v >= 0; v = par[v])
                sub[v]++;
        /* Ready times in depth order. */
        for (int32_t d = n; d >= 1; d--)
            for (int32_t u = 0; u < n; u++)
                if (depth[u] == d) {
                    double t = hv[u] + milp_hop_us(net, sp, conc, u, par[u],
                                                   sp->cand[kk]);

                    hv[par[u]] = fmax(hv[par[u]], t);
                }
        for (int32_t d = 1; d <= n; d++)
            for (int32_t u = 0; u < n; u++)
                if (depth[u] == d)
                    bv[u] = bv[par[u]] + milp_hop_us(net, sp, conc, par[u],
                                                     u, sp->cand[kk]);
        for (int32_t a = mp->arc_off[m]; a < mp->arc_off[m + 1]; a++) {
            int32_t u = mp->arc_u[a], v = mp->arc_v[a];
            bool on = par[u] == v;

            x[mp->y[a]] = on ? 1 : 0;
            x[mp->f[a]] = on ? (double)sub[u] : 0;
            x[mp->z[a]] = on ? (double)pl->count[m] : 0;
        }
        for (int32_t g = 0; g < n; g++) {
            x[mp->r[m * n + g]] = g == pl->root[m] ? 1 : 0;
            x[mp->sr[m * n + g]] = g == pl->root[m] ? (double)pl->count[m]
                                                     : 0;
            x[mp->h[m * n + g]] = hv[g];
            x[mp->bb[m * n + g]] = bv[g];
            E = fmax(E, hv[g]);
            G = fmax(G, bv[g]);
        }
        x[mp->c[m]] = (double)pl->count[m];
        x[mp->p[m]] = (double)((pl->count[m] + sp->cand[kk] - 1) /
                               sp->cand[kk]);
        if (x[mp->p[m]] < 1)
            x[mp->p[m]] = 1;
        for (int32_t k = 0; k < K; k++)
            x[mp->w[m * K + k]] = k == kk ? 1 : 0;
        x[mp->E[m]] = E;
        x[mp->G[m]] = G;
    }
}
