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
 */
#include <float.h>
#include <glpk.h>
#include <limits.h>
#include <math.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "milp_model.h"

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

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- model builder: columns, and rows with duplicate terms merged ---- */

typedef struct mb {
    glp_prob *lp;
    int ncols;
    int cap;          /* capacity of the row buffers (columns + 1) */
    int *ind;         /* [cap] 1-based row buffer */
    double *val;      /* [cap] */
    double *dense;    /* [cap] coefficient per column of the open row */
    int *touched;     /* [cap] columns with a coefficient in the open row */
    int nt;
} mb_t;

static int mb_col(mb_t *b, const char *name, int kind, int type, double lo,
                  double hi)
{
    int j = glp_add_cols(b->lp, 1);

    glp_set_col_name(b->lp, j, name);
    glp_set_col_kind(b->lp, j, kind);
    if (kind == GLP_BV)
        return (b->ncols = j);
    if (type == GLP_DB && lo == hi)
        type = GLP_FX;  /* GLPK rejects a double bound with lo = hi */
    glp_set_col_bnds(b->lp, j, type, lo, hi);
    return (b->ncols = j);
}

static ccs_status_t mb_ready(mb_t *b, ccs_err_t *err)
{
    b->cap = b->ncols + 2;
    /* Owned by the builder, freed in mb_free. */
    b->ind = malloc((size_t)b->cap * sizeof(int));
    b->val = malloc((size_t)b->cap * sizeof(double));
    b->dense = calloc((size_t)b->cap, sizeof(double));
    b->touched = malloc((size_t)b->cap * sizeof(int));
    if (b->ind == NULL || b->val == NULL || b->dense == NULL ||
        b->touched == NULL)
        return ccs_err_set(err, CCS_ERR_NOMEM, "milp: out of memory");
    b->nt = 0;
    return CCS_OK;
}

static void mb_free(mb_t *b)
{
    free(b->ind);
    free(b->val);
    free(b->dense);
    free(b->touched);
    if (b->lp != NULL)
        glp_delete_prob(b->lp);
}

static void mb_add(mb_t *b, int col, double coef)
{
    if (coef == 0)
        return;         /* else DBL_MIN below would mark an untouched col */
    if (b->dense[col] == 0)
        b->touched[b->nt++] = col;
    b->dense[col] += coef;
    if (b->dense[col] == 0)
        b->dense[col] = DBL_MIN;   /* stays in the touched list once */
}

/* Close the open row: type GLP_FX/LO/UP with the bound(s); returns the row
 * index, or 0 when the row had no terms (nothing added). */
static int mb_row(mb_t *b, const char *name, int type, double lo, double hi)
{
    int len = 0, i;

    for (int t = 0; t < b->nt; t++) {
        int c = b->touched[t];

        if (b->dense[c] != DBL_MIN && b->dense[c] != 0) {
            len++;
            b->ind[len] = c;
            b->val[len] = b->dense[c];
        }
        b->dense[c] = 0;
    }
    b->nt = 0;
    if (len == 0)
        return 0;
    i = glp_add_rows(b->lp, 1);
    glp_set_row_name(b->lp, i, name);
    glp_set_row_bnds(b->lp, i, type, lo, hi);
    glp_set_mat_row(b->lp, i, len, b->ind, b->val);
    return i;
}

static bool route_has(const milp_net_t *net, int32_t u, int32_t v, int32_t q)
{
    int32_t idx = u * net->n + v;

    for (int32_t i = net->route_off[idx]; i < net->route_off[idx + 1]; i++)
        if (net->route_pipe[i] == q)
            return true;
    return false;
}

/* Column map of the tree model. */
typedef struct tmap {
    int32_t narcs;       /* over all subs */
    int32_t *arc_off;    /* [m + 1] */
    int32_t *arc_u;      /* [narcs] */
    int32_t *arc_v;
    int *y, *f, *z;      /* [narcs] column ids */
    int *r, *h, *bb;     /* [m * n] */
    int *sr;             /* [m * n] chunks absorbed at g (c at the root) */
    int *c, *p, *E, *G;  /* [m] */
    int *w;              /* [m * ncand] */
    int L, T;
    int *col_first;      /* [m + 1] sub m owns columns [col_first[m],
                            col_first[m + 1]) (tree model; NULL for
                            alltoall) */
    /* alltoall */
    int32_t npaths;      /* per flow: 1 + MILP_MAX_RELAYS slots */
    int32_t *path_w;     /* [n*n*npaths] relay rank (d: direct), -1 none */
    int *x;              /* [n*n*npaths] */
    int L2, U;
} tmap_t;

static void tmap_free(tmap_t *t)
{
    free(t->arc_off);
    free(t->arc_u);
    free(t->arc_v);
    free(t->y);
    free(t->f);
    free(t->z);
    free(t->r);
    free(t->h);
    free(t->bb);
    free(t->sr);
    free(t->c);
    free(t->p);
    free(t->E);
    free(t->G);
    free(t->w);
    free(t->col_first);
    free(t->path_w);
    free(t->x);
}

/* Callback state. */
typedef struct cbinfo {
    const double *warm;   /* [ncols + 1] or NULL */
    bool warm_tried;
    bool warm_accepted;
    int32_t node_limit;
    bool node_hit;
    double bound;
    int32_t nodes;
} cbinfo_t;

static void mip_cb(glp_tree *tree, void *info)
{
    cbinfo_t *ci = info;
    int a, nn, t, best;

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
    }
}

/* ---- the tree model ---- */

/* What the fill of sub m costs at least (docs/milp.md, "Fill bounds"):
 * per piece size q_k the cheapest reduce and broadcast hop of the sub's
 * arcs, one piece on the slowest pipe (D_k), the per-piece alpha, and
 * the smallest depth any tree of the sub can have (the least
 * eccentricity of a possible root in the overlay). */
typedef struct fill_data {
    double tup[MILP_MAX_CAND];  /* us; 0 when the collective has no reduce */
    double tdn[MILP_MAX_CAND];  /* us; 0 when it has no broadcast */
    double dk[MILP_MAX_CAND];   /* us */
    double ahat;                /* us */
    int32_t depth;              /* >= 1; 0: no tree (n < 2 or no arcs) */
} fill_data_t;

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

static void fill_data(const tmap_t *mp, const milp_net_t *net,
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
static double fill_phi(const fill_data_t *fd, const milp_spec_t *sp,
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
    beta = (fill_phi(fd, sp, d, C) - fill_phi(fd, sp, d, clo)) /
           (double)(C - clo);
    for (int64_t c = clo; c <= C; c++)
        lo = fmin(lo, fill_phi(fd, sp, d, c) - beta * (double)c);
    alpha = lo - 1e-6 * (1 + fabs(lo));   /* rounding must not cut */
    mb_add(b, mp->T, 1);
    mb_add(b, mp->L, -1);
    mb_add(b, mp->c[m], -beta);
    snprintf(nm, sizeof(nm), "fill_%d", m);
    mb_row(b, nm, GLP_LO, alpha, 0);
}


static ccs_status_t build_tree_model(mb_t *b, tmap_t *mp,
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
            mp->y[a] = mb_col(b, nm, GLP_BV, GLP_DB, 0, 1);
            snprintf(nm, sizeof(nm), "f_%d_%d_%d", m, u, v);
            mp->f[a] = mb_col(b, nm, GLP_CV, GLP_DB, 0, (double)(n - 1));
            snprintf(nm, sizeof(nm), "z_%d_%d_%d", m, u, v);
            mp->z[a] = mb_col(b, nm, GLP_CV, GLP_DB, 0, C);
        }
        for (int32_t g = 0; g < n; g++) {
            snprintf(nm, sizeof(nm), "r_%d_%d", m, g);
            mp->r[m * n + g] = mb_col(b, nm, GLP_BV, GLP_DB, 0, 1);
            if (sp->root >= 0) {
                double v = g == sp->root ? 1 : 0;

                glp_set_col_bnds(b->lp, mp->r[m * n + g], GLP_FX, v, v);
            }
            snprintf(nm, sizeof(nm), "s_%d_%d", m, g);
            mp->sr[m * n + g] = mb_col(b, nm, GLP_CV, GLP_DB, 0, C);
            snprintf(nm, sizeof(nm), "h_%d_%d", m, g);
            mp->h[m * n + g] = mb_col(b, nm, GLP_CV, GLP_DB, 0, big);
            snprintf(nm, sizeof(nm), "b_%d_%d", m, g);
            mp->bb[m * n + g] = mb_col(b, nm, GLP_CV, GLP_DB, 0, big);
        }
        snprintf(nm, sizeof(nm), "c_%d", m);
        mp->c[m] = mb_col(b, nm, GLP_IV, GLP_DB,
                          sp->nchunks >= (uint32_t)M ? 1 : 0, C);
        snprintf(nm, sizeof(nm), "p_%d", m);
        mp->p[m] = mb_col(b, nm, GLP_IV, GLP_DB, 1, C);
        for (int32_t k = 0; k < K; k++) {
            snprintf(nm, sizeof(nm), "w_%d_%d", m, k);
            mp->w[m * K + k] = mb_col(b, nm, GLP_BV, GLP_DB, 0, 1);
        }
        snprintf(nm, sizeof(nm), "E_%d", m);
        mp->E[m] = mb_col(b, nm, GLP_CV, GLP_LO, 0, 0);
        snprintf(nm, sizeof(nm), "G_%d", m);
        mp->G[m] = mb_col(b, nm, GLP_CV, GLP_LO, 0, 0);
    }
    mp->col_first[M] = b->ncols + 1;
    mp->L = mb_col(b, "L", GLP_CV, GLP_LO, 0, 0);
    mp->T = mb_col(b, "T", GLP_CV, GLP_LO, 0, 0);
    glp_set_obj_dir(b->lp, GLP_MIN);
    glp_set_obj_coef(b->lp, mp->T, 1.0);
    st = mb_ready(b, err);
    if (st != CCS_OK)
        return st;

    /* Rows. */
    for (int32_t m = 0; m < M; m++) {
        int32_t a0 = mp->arc_off[m], a1 = mp->arc_off[m + 1];
        double ahat = milp_alpha_hat_us(net, sp, m);
        fill_data_t fd;

        /* One root. */
        for (int32_t g = 0; g < n; g++)
            mb_add(b, mp->r[m * n + g], 1);
        snprintf(nm, sizeof(nm), "root_%d", m);
        mb_row(b, nm, GLP_FX, 1, 1);
        for (int32_t u = 0; u < n; u++) {
            /* One parent unless root; flow: supply 1, the root takes n-1. */
            for (int32_t a = a0; a < a1; a++)
                if (mp->arc_u[a] == u)
                    mb_add(b, mp->y[a], 1);
            mb_add(b, mp->r[m * n + u], 1);
            snprintf(nm, sizeof(nm), "out_%d_%d", m, u);
            mb_row(b, nm, GLP_FX, 1, 1);
            /* ... and every GPU ships all c chunks on it, except the
             * root, which absorbs them (s = c * r, linear because the
             * two rows below pin it for binary r). */
            for (int32_t a = a0; a < a1; a++)
                if (mp->arc_u[a] == u)
                    mb_add(b, mp->z[a], 1);
            mb_add(b, mp->sr[m * n + u], 1);
            mb_add(b, mp->c[m], -1);
            snprintf(nm, sizeof(nm), "ship_%d_%d", m, u);
            mb_row(b, nm, GLP_FX, 0, 0);
            mb_add(b, mp->sr[m * n + u], 1);
            mb_add(b, mp->r[m * n + u], -C);
            snprintf(nm, sizeof(nm), "sroot_%d_%d", m, u);
            mb_row(b, nm, GLP_UP, 0, 0);
            for (int32_t a = a0; a < a1; a++) {
                if (mp->arc_u[a] == u)
                    mb_add(b, mp->f[a], 1);
                if (mp->arc_v[a] == u)
                    mb_add(b, mp->f[a], -1);
            }
            mb_add(b, mp->r[m * n + u], (double)n);
            snprintf(nm, sizeof(nm), "flow_%d_%d", m, u);
            mb_row(b, nm, GLP_FX, 1, 1);
        }
        for (int32_t a = a0; a < a1; a++) {
            int32_t u = mp->arc_u[a], v = mp->arc_v[a];

            mb_add(b, mp->f[a], 1);
            mb_add(b, mp->y[a], -(double)(n - 1));
            snprintf(nm, sizeof(nm), "cap_%d_%d_%d", m, u, v);
            mb_row(b, nm, GLP_UP, 0, 0);
            /* z = y * c: z lives only on the chosen arc ... */
            mb_add(b, mp->z[a], 1);
            mb_add(b, mp->y[a], -C);
            snprintf(nm, sizeof(nm), "zy_%d_%d_%d", m, u, v);
            mb_row(b, nm, GLP_UP, 0, 0);
            /* Ready times (eq. 2, a = 1 everywhere: the max). */
            if (up) {
                mb_add(b, mp->h[m * n + v], 1);
                mb_add(b, mp->h[m * n + u], -1);
                for (int32_t k = 0; k < K; k++)
                    mb_add(b, mp->w[m * K + k],
                           -milp_hop_us(net, sp, conc, u, v, sp->cand[k]));
                mb_add(b, mp->y[a], -big);
                snprintf(nm, sizeof(nm), "hup_%d_%d_%d", m, u, v);
                mb_row(b, nm, GLP_LO, -big, 0);
            }
            if (down) {
                mb_add(b, mp->bb[m * n + u], 1);
                mb_add(b, mp->bb[m * n + v], -1);
                for (int32_t k = 0; k < K; k++)
                    mb_add(b, mp->w[m * K + k],
                           -milp_hop_us(net, sp, conc, v, u, sp->cand[k]));
                mb_add(b, mp->y[a], -big);
                snprintf(nm, sizeof(nm), "hdn_%d_%d_%d", m, u, v);
                mb_row(b, nm, GLP_LO, -big, 0);
            }
        }
        for (int32_t g = 0; g < n; g++)
            mb_add(b, mp->sr[m * n + g], 1);
        mb_add(b, mp->c[m], -1);
        snprintf(nm, sizeof(nm), "sall_%d", m);
        mb_row(b, nm, GLP_FX, 0, 0);
        /* Valid inequalities that tighten the LP bound (docs/milp.md):
         * a group without the root sends at least one arc and all c
         * chunks out of it, and some piece crosses out of it (fill). */
        for (int32_t g = 0; g < net->nsrv && net->nsrv > 1; g++) {
            double tmin[MILP_MAX_CAND], tmax = 0;

            for (int32_t a = a0; a < a1; a++)
                if (net->srv[mp->arc_u[a]] == g &&
                    net->srv[mp->arc_v[a]] != g)
                    mb_add(b, mp->z[a], 1);
            for (int32_t i = 0; i < net->srv_size[g]; i++)
                mb_add(b, mp->sr[m * n +
                                 net->srv_members[net->srv_first[g] + i]], 1);
            mb_add(b, mp->c[m], -1);
            snprintf(nm, sizeof(nm), "zcut_%d_%d", m, g);
            mb_row(b, nm, GLP_LO, 0, 0);
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
            mb_add(b, mp->E[m], 1);
            for (int32_t k = 0; k < K; k++)
                if (isfinite(tmin[k]))
                    mb_add(b, mp->w[m * K + k], -tmin[k]);
            for (int32_t i = 0; i < net->srv_size[g]; i++)
                mb_add(b, mp->r[m * n +
                                net->srv_members[net->srv_first[g] + i]],
                       tmax);
            snprintf(nm, sizeof(nm), "ecut_%d_%d", m, g);
            mb_row(b, nm, GLP_LO, 0, 0);
        }
        /* Cut: a group without the root sends at least one arc out. */
        for (int32_t g = 0; g < net->nsrv && net->nsrv > 1; g++) {
            for (int32_t a = a0; a < a1; a++)
                if (net->srv[mp->arc_u[a]] == g &&
                    net->srv[mp->arc_v[a]] != g)
                    mb_add(b, mp->y[a], 1);
            for (int32_t i = 0; i < net->srv_size[g]; i++)
                mb_add(b, mp->r[m * n +
                                net->srv_members[net->srv_first[g] + i]], 1);
            snprintf(nm, sizeof(nm), "cut_%d_%d", m, g);
            mb_row(b, nm, GLP_LO, 1, 0);
        }
        for (int32_t g = 0; g < n; g++) {
            if (up) {
                mb_add(b, mp->E[m], 1);
                mb_add(b, mp->h[m * n + g], -1);
                snprintf(nm, sizeof(nm), "E_%d_%d", m, g);
                mb_row(b, nm, GLP_LO, 0, 0);
            }
            if (down) {
                mb_add(b, mp->G[m], 1);
                mb_add(b, mp->bb[m * n + g], -1);
                snprintf(nm, sizeof(nm), "G_%d_%d", m, g);
                mb_row(b, nm, GLP_LO, 0, 0);
            }
        }
        for (int32_t k = 0; k < K; k++)
            mb_add(b, mp->w[m * K + k], 1);
        snprintf(nm, sizeof(nm), "pick_%d", m);
        mb_row(b, nm, GLP_FX, 1, 1);
        /* p >= c / q_k when w_k = 1. */
        for (int32_t k = 0; k < K; k++) {
            mb_add(b, mp->p[m], 1);
            mb_add(b, mp->c[m], -1.0 / (double)sp->cand[k]);
            mb_add(b, mp->w[m * K + k], -C);
            snprintf(nm, sizeof(nm), "pieces_%d_%d", m, k);
            mb_row(b, nm, GLP_LO, -C, 0);
        }
        /* Objective bound of this sub (eqs. 4-6). */
        mb_add(b, mp->T, 1);
        mb_add(b, mp->L, -1);
        if (up)
            mb_add(b, mp->E[m], -1);
        if (down)
            mb_add(b, mp->G[m], -1);
        mb_add(b, mp->p[m], -ahat);
        for (int32_t k = 0; k < K; k++)
            mb_add(b, mp->w[m * K + k],
                   milp_piece_us(net, sp, conc, sp->cand[k]));
        snprintf(nm, sizeof(nm), "T_%d", m);
        mb_row(b, nm, GLP_LO, -ahat, 0);
        fill_data(mp, net, sp, conc, m, &fd);
        add_fill_cuts(b, mp, sp, &fd, m, net->nsrv);
    }
    for (int32_t m = 0; m < M; m++)
        mb_add(b, mp->c[m], 1);
    mb_row(b, "split", GLP_FX, C, C);
    mb_add(b, mp->T, 1);
    mb_add(b, mp->L, -1);
    mb_row(b, "T_load", GLP_LO, 0, 0);
    /* Link sharing (eq. 3 summed over subs): L >= load(q) / bw(q). */
    for (int32_t q = 0; q < net->npipes; q++) {
        double coef = 1e6 * sp->unit_bytes / net->pipe_bw_Bps[q];

        for (int32_t a = 0; a < mp->narcs; a++) {
            int32_t u = mp->arc_u[a], v = mp->arc_v[a];

            if (up && route_has(net, u, v, q))
                mb_add(b, mp->z[a], -coef);
            if (down && route_has(net, v, u, q))
                mb_add(b, mp->z[a], -coef);
        }
        if (b->nt == 0)
            continue;
        mb_add(b, mp->L, 1);
        snprintf(nm, sizeof(nm), "load_%d", q);
        mb_row(b, nm, GLP_LO, 0, 0);
    }
    return CCS_OK;
}

/* Warm-start values of the tree model for plan `pl` (x[1..ncols]). */
static void warm_tree(const tmap_t *mp, const milp_net_t *net,
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

/* ---- the alltoall model ---- */

static ccs_status_t build_a2a_model(mb_t *b, tmap_t *mp,
                                    const milp_net_t *net,
                                    const milp_spec_t *sp, ccs_err_t *err)
{
    int32_t n = net->n, P = 1 + MILP_MAX_RELAYS;
    double B = (double)(sp->nchunks / (uint32_t)n), ahat = 0;
    char nm[64];
    ccs_status_t st;

    mp->npaths = P;
    mp->path_w = malloc((size_t)n * n * P * sizeof(int32_t));
    mp->x = malloc((size_t)n * n * P * sizeof(int));
    if (mp->path_w == NULL || mp->x == NULL)
        return ccs_err_set(err, CCS_ERR_NOMEM, "milp: out of memory");
    for (int32_t s = 0; s < n; s++) {
        for (int32_t d = 0; d < n; d++) {
            int32_t *pw = mp->path_w + ((size_t)s * n + d) * P, np = 0;

            for (int32_t i = 0; i < P; i++)
                pw[i] = -1;
            if (s == d)
                continue;
            ahat = fmax(ahat, 1e6 * net->route_alpha_s[s * n + d]);
            pw[np++] = d;
            /* Relays: GPUs of the source's and the destination's group. */
            for (int32_t w = 0; w < n && np < P; w++)
                if (w != s && w != d &&
                    (net->srv[w] == net->srv[s] ||
                     net->srv[w] == net->srv[d]))
                    pw[np++] = w;
            for (int32_t i = 0; i < np; i++) {
                snprintf(nm, sizeof(nm), "x_%d_%d_%d", s, d, pw[i]);
                mp->x[((size_t)s * n + d) * P + i] =
                    mb_col(b, nm, GLP_IV, GLP_DB, 0, B);
            }
        }
    }
    mp->U = mb_col(b, "u", GLP_BV, GLP_DB, 0, 1);
    mp->L = mb_col(b, "L1", GLP_CV, GLP_LO, 0, 0);
    mp->L2 = mb_col(b, "L2", GLP_CV, GLP_LO, 0, 0);
    mp->T = mb_col(b, "T", GLP_CV, GLP_LO, 0, 0);
    glp_set_obj_dir(b->lp, GLP_MIN);
    glp_set_obj_coef(b->lp, mp->T, 1.0);
    st = mb_ready(b, err);
    if (st != CCS_OK)
        return st;
    for (int32_t s = 0; s < n; s++) {
        for (int32_t d = 0; d < n; d++) {
            const int32_t *pw = mp->path_w + ((size_t)s * n + d) * P;
            const int *xc = mp->x + ((size_t)s * n + d) * P;

            if (s == d)
                continue;
            for (int32_t i = 0; i < P && pw[i] >= 0; i++)
                mb_add(b, xc[i], 1);
            snprintf(nm, sizeof(nm), "flow_%d_%d", s, d);
            mb_row(b, nm, GLP_FX, B, B);
            for (int32_t i = 1; i < P && pw[i] >= 0; i++) {
                mb_add(b, xc[i], 1);
                mb_add(b, mp->U, -B);
                snprintf(nm, sizeof(nm), "relay_%d_%d_%d", s, d, pw[i]);
                mb_row(b, nm, GLP_UP, 0, 0);
            }
        }
    }
    for (int32_t leg = 0; leg < 2; leg++) {
        for (int32_t q = 0; q < net->npipes; q++) {
            double coef = 1e6 * sp->unit_bytes / net->pipe_bw_Bps[q];

            for (int32_t s = 0; s < n; s++) {
                for (int32_t d = 0; d < n; d++) {
                    const int32_t *pw = mp->path_w + ((size_t)s * n + d) * P;
                    const int *xc = mp->x + ((size_t)s * n + d) * P;

                    for (int32_t i = 0; s != d && i < P && pw[i] >= 0; i++) {
                        bool hit = leg == 0 ? route_has(net, s, pw[i], q)
                                            : (i > 0 &&
                                               route_has(net, pw[i], d, q));

                        if (hit)
                            mb_add(b, xc[i], -coef);
                    }
                }
            }
            if (b->nt == 0)
                continue;
            mb_add(b, leg == 0 ? mp->L : mp->L2, 1);
            snprintf(nm, sizeof(nm), "load%d_%d", leg + 1, q);
            mb_row(b, nm, GLP_LO, 0, 0);
        }
    }
    mb_add(b, mp->T, 1);
    mb_add(b, mp->L, -1);
    mb_add(b, mp->L2, -1);
    mb_add(b, mp->U, -ahat);
    mb_row(b, "T", GLP_LO, ahat, 0);
    return CCS_OK;
}

static void warm_a2a(const tmap_t *mp, const milp_net_t *net,
                     const milp_plan_t *pl, double *x)
{
    int32_t n = net->n, P = mp->npaths;
    bool relay = false;

    for (int32_t s = 0; s < n; s++) {
        for (int32_t d = 0; d < n; d++) {
            const int32_t *pw = mp->path_w + ((size_t)s * n + d) * P;
            const int *xc = mp->x + ((size_t)s * n + d) * P;

            for (int32_t i = 0; s != d && i < P && pw[i] >= 0; i++) {
                x[xc[i]] = (double)pl->a2a[((size_t)s * n + d) * n + pw[i]];
                if (i > 0 && x[xc[i]] > 0)
                    relay = true;
            }
        }
    }
    x[mp->U] = relay ? 1 : 0;
}

/* Fill the max-type columns (L, L2, T) of a warm vector from the rows,
 * then check every row; false when the vector is infeasible (the plan
 * uses an arc or piece size the model does not have). */
static bool warm_finish(mb_t *b, const tmap_t *mp, double *x)
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
static ccs_status_t decode(const mb_t *b, const tmap_t *mp,
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

static ccs_status_t validate_spec(const milp_net_t *net,
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

static int ms_left(double deadline)
{
    double ms = (deadline - now_s()) * 1e3;

    if (ms < 1)
        return 1;
    return ms > (double)INT_MAX ? INT_MAX : (int)ms;
}

/* ---- GLPK's error hook ----
 *
 * GLPK reports a fatal error (a bad argument, an internal failure, no
 * memory) by printing a message and calling abort() unless its error hook
 * jumps away.  Every GLPK call of this module runs under milp_glpk_call:
 * the hook longjmps back to it, GLPK's message (captured through the
 * terminal hook, which GLPK switches on for it) becomes the status
 * message, and the GLPK environment is freed, as GLPK requires after such
 * a jump -- which frees every GLPK object of the thread, so the callee must
 * hold its GLPK objects where the caller can forget them (env_freed). */

typedef struct glpk_trap {
    jmp_buf jb;
    char msg[240];       /* GLPK's output while the error is reported */
    size_t len;
} glpk_trap_t;

static void trap_error(void *info)
{
    longjmp(((glpk_trap_t *)info)->jb, 1);
}

/* With terminal output off only an error reaches this hook (GLPK turns the
 * output on to report it).  Keep the text, print nothing. */
static int trap_term(void *info, const char *s)
{
    glpk_trap_t *tr = info;

    for (; *s != '\0' && tr->len + 1 < sizeof(tr->msg); s++)
        tr->msg[tr->len++] = *s == '\n' ? ' ' : *s;
    tr->msg[tr->len] = '\0';
    return 1;
}

ccs_status_t milp_glpk_call(milp_glpk_fn fn, void *arg, bool *env_freed,
                            ccs_err_t *err)
{
    /* On the heap: its value must survive the longjmp. */
    glpk_trap_t *tr = calloc(1, sizeof(*tr));    /* owned here */
    ccs_status_t st;
    int prev;

    *env_freed = false;
    if (tr == NULL)
        return ccs_err_set(err, CCS_ERR_NOMEM, "milp: out of memory");
    prev = glp_term_out(GLP_OFF);
    glp_term_hook(trap_term, tr);
    glp_error_hook(trap_error, tr);
    if (setjmp(tr->jb) == 0) {
        st = fn(arg, err);
        glp_error_hook(NULL, NULL);
        glp_term_hook(NULL, NULL);
    } else {
        /* GLPK's state is undefined now; its manual asks for this. */
        glp_free_env();
        *env_freed = true;
        while (tr->len > 0 && tr->msg[tr->len - 1] == ' ')
            tr->msg[--tr->len] = '\0';
        st = ccs_err_set(err, CCS_ERR_SOLVER, "milp: GLPK error: %s",
                         tr->msg);
    }
    glp_term_out(prev);
    free(tr);
    return st;
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
    io->tm_lim = ms_left(deadline);
    io->mip_gap = gap;
    io->cb_func = mip_cb;
    io->cb_info = ci;
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
 * (warm_finish). */
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
    iocp_init(&io, c->deadline, c->o->mip_gap, &ci, c->o->glpk_heuristics);
    io.presolve = GLP_ON;
    rc = glp_intopt(c->sub, &io);
    c->s.lns_nodes += ci.nodes;
    if (rc == GLP_ETMLIM)
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
    if (warm_finish(&c->b, &c->mp, c->y) &&
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
            if (now_s() >= c->deadline || c->s.lns_tried >= budget)
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
    io.tm_lim = ms_left(c->deadline);
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
    sm.tm_lim = ms_left(c->deadline);
    if (glp_simplex(c->sub, &sm) == 0 && glp_get_status(c->sub) == GLP_OPT)
        lbl = fmax(0, glp_get_obj_val(c->sub));
    glp_delete_prob(c->sub);
    c->sub = NULL;
    lbl = fmax(lbl, edge_load_bound(c));
    for (int32_t m = 0; m < M; m++) {
        fill_data_t fd;
        double deep, star = INFINITY;
        int32_t d;

        fill_data(&c->mp, net, sp, c->conc, m, &fd);
        if (fd.depth < 1)
            return NAN;
        d = fd.depth < 2 ? 2 : fd.depth;
        deep = lbl + fmax(0, fill_phi(&fd, sp, d, cs));
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
                    cnt += up && route_has(net, u, r, q);
                    cnt += down && route_has(net, r, u, q);
                }
                lstar = fmax(lstar, 1e6 * sp->unit_bytes /
                                        net->pipe_bw_Bps[q] * (double)cs *
                                        cnt);
            }
            star = fmin(star, fmax(lbl, lstar) +
                                  fmax(0, fill_phi(&fd, sp, 1, cs)));
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
        st = build_a2a_model(&c->b, &c->mp, c->net, c->sp, err);
    else
        st = build_tree_model(&c->b, &c->mp, c->net, c->sp, c->conc, err);
    if (st != CCS_OK)
        return st;
    s->rows = glp_get_num_rows(c->b.lp);
    s->arcs = c->sp->coll == CCS_COLL_ALLTOALL ? 0 : c->mp.narcs;
    s->cols = glp_get_num_cols(c->b.lp);
    s->ints = glp_get_num_int(c->b.lp);
    if (o->write_lp != NULL && glp_write_lp(c->b.lp, NULL, o->write_lp) != 0)
        return ccs_err_set(err, CCS_ERR_IO, "milp: cannot write LP file '%s'",
                           o->write_lp);

    nvec = (size_t)c->b.ncols + 1;
    c->x = calloc(nvec, sizeof(double));
    c->y = calloc(nvec, sizeof(double));
    c->lpx = calloc(nvec, sizeof(double));
    c->fix = calloc(nvec, 1);
    if (c->x == NULL || c->y == NULL || c->lpx == NULL || c->fix == NULL)
        return ccs_err_set(err, CCS_ERR_NOMEM, "milp: out of memory");
    if (c->warm != NULL && o->use_warm) {
        if (c->sp->coll == CCS_COLL_ALLTOALL)
            warm_a2a(&c->mp, c->net, c->warm, c->x);
        else
            warm_tree(&c->mp, c->net, c->sp, c->conc, c->warm, c->x);
        s->warm_offered = warm_finish(&c->b, &c->mp, c->x);
        if (s->warm_offered)
            s->warm_us = c->x[c->mp.T];
    }

    /* Root LP.  Chunk counts, big-M ready times and piece counts differ
     * by orders of magnitude: let GLPK scale rows and columns (as glpsol
     * does). */
    glp_scale_prob(c->b.lp, GLP_SF_AUTO);
    glp_init_smcp(&sm);
    sm.msg_lev = GLP_MSG_OFF;
    sm.tm_lim = ms_left(c->deadline);
    rc = glp_simplex(c->b.lp, &sm);
    if (rc == GLP_ETMLIM ||
        (rc == 0 && glp_get_status(c->b.lp) != GLP_OPT &&
         now_s() >= c->deadline)) {
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

    /* Improve the warm start by sub-MIPs, then branch from it. */
    s->lns_us = s->warm_us;
    if (s->warm_offered && o->lns) {
        lns_run(c, ci.node_limit);
        s->lns_us = c->x[c->mp.T];
    }

    ci.bound = s->lp_us;
    ci.warm = s->warm_offered ? c->x : NULL;
    iocp_init(&io, c->deadline, o->mip_gap, &ci, o->glpk_heuristics);
    rc = glp_intopt(c->b.lp, &io);
    s->nodes = ci.nodes;
    s->node_limit_hit = ci.node_hit;
    s->warm_accepted = ci.warm_accepted;
    if (rc == GLP_ETMLIM)
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
        return decode(&c->b, &c->mp, c->net, c->sp, c->x, &c->out, err);
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
    return decode(&c->b, &c->mp, c->net, c->sp, NULL, &c->out, err);
}

ccs_status_t milp_solve(const milp_net_t *net, const milp_spec_t *sp,
                        const double *conc, const milp_plan_t *warm,
                        const milp_solve_opts_t *o, milp_plan_t **out,
                        milp_stats_t *stats, ccs_err_t *err)
{
    solve_ctx_t c;
    bool freed = false;
    ccs_status_t st;

    st = validate_spec(net, sp, o, err);
    if (st != CCS_OK)
        return st;
    memset(&c, 0, sizeof(c));
    c.net = net;
    c.sp = sp;
    c.conc = conc;
    c.warm = warm;
    c.o = o;
    c.t0 = now_s();
    c.deadline = c.t0 + o->time_limit_s;
    c.s.obj_us = NAN;
    c.s.gap = NAN;
    c.s.bound_us = NAN;
    c.s.glpk_bound_us = NAN;
    c.s.lp_us = NAN;
    c.s.fill_us = NAN;
    c.s.warm_us = NAN;
    c.s.lns_us = NAN;
    if (sp->coll != CCS_COLL_ALLTOALL && o->max_arcs > 0) {
        /* Counted the way build_tree_model enumerates them, before any
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
        c.s.time_s = now_s() - c.t0;
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
    tmap_free(&c.mp);
    mb_free(&c.b);
    return st;
}

typedef struct read_lp_ctx {
    const char *path;
    glp_prob *lp;            /* owned, unless GLPK's environment was freed */
    int32_t rows, cols;
} read_lp_ctx_t;

static ccs_status_t read_lp_body(void *arg, ccs_err_t *err)
{
    read_lp_ctx_t *c = arg;

    c->lp = glp_create_prob();
    if (glp_read_lp(c->lp, NULL, c->path) != 0)
        return ccs_err_set(err, CCS_ERR_PARSE,
                           "milp: glp_read_lp could not read '%s'", c->path);
    c->rows = glp_get_num_rows(c->lp);
    c->cols = glp_get_num_cols(c->lp);
    return CCS_OK;
}

ccs_status_t milp_read_lp(const char *path, int32_t *rows, int32_t *cols,
                          ccs_err_t *err)
{
    read_lp_ctx_t c = { path, NULL, 0, 0 };
    bool freed = false;
    ccs_status_t st = milp_glpk_call(read_lp_body, &c, &freed, err);

    if (!freed && c.lp != NULL)
        glp_delete_prob(c.lp);
    if (st == CCS_OK) {
        *rows = c.rows;
        *cols = c.cols;
    }
    return st;
}
