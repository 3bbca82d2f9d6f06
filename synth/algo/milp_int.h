/*
 * milp_int.h - what the MILP's files share (milp_model.c, milp_lp.c,
 * milp_tree.c, milp_a2a.c, milp_solve.c, milp_glpk.c): the model builder,
 * the column map, the fill data, and the functions between them.  GLPK's
 * types appear here and nowhere outside synth/algo/milp_*.
 */
#ifndef CCS_MILP_INT_H
#define CCS_MILP_INT_H

#include <glpk.h>
#include <stdbool.h>
#include <stdint.h>

#include "milp_model.h"

/* The model builder: columns, and rows with duplicate terms merged. */
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

/* Add a column; returns its index. */
int milp_mb_col(mb_t *b, const char *name, int kind, int type, double lo,
                double hi);

/* Size the row buffers for the columns added so far. */
ccs_status_t milp_mb_ready(mb_t *b, ccs_err_t *err);

/* Free the buffers and the GLPK problem. */
void milp_mb_free(mb_t *b);

/* Add coef * column to the open row (terms on one column merge). */
void milp_mb_add(mb_t *b, int col, double coef);

/* Close the open row: type GLP_FX/LO/UP with the bound(s); returns the row
 * index, or 0 when the row had no terms (nothing added). */
int milp_mb_row(mb_t *b, const char *name, int type, double lo, double hi);

/* Does the route u -> v of the overlay use pipe q? */
bool milp_route_has(const milp_net_t *net, int32_t u, int32_t v, int32_t q);

void milp_tmap_free(tmap_t *t);

/* The fill data of sub m (see fill_data_t). */
void milp_fill_data(const tmap_t *mp, const milp_net_t *net,
                    const milp_spec_t *sp, const double *conc, int32_t m,
                    fill_data_t *fd);

/* Least T - L of sub m with c chunks and a tree of depth >= d (the T_m
 * row with E >= d tup, G >= d tdn, p >= max(1, ceil(c / q_k))). */
double milp_fill_phi(const fill_data_t *fd, const milp_spec_t *sp,
                     int32_t d, int64_t c);

/* The tree model (milp_tree.c) into b, its column map into mp. */
ccs_status_t milp_build_tree_model(mb_t *b, tmap_t *mp,
                                   const milp_net_t *net,
                                   const milp_spec_t *sp,
                                   const double *conc, ccs_err_t *err);

/* Warm-start values of the tree model for plan `pl` (x[1..ncols]). */
void milp_warm_tree(const tmap_t *mp, const milp_net_t *net,
                    const milp_spec_t *sp, const double *conc,
                    const milp_plan_t *pl, double *x);

/* The alltoall model (milp_a2a.c) into b, its column map into mp. */
ccs_status_t milp_build_a2a_model(mb_t *b, tmap_t *mp,
                                  const milp_net_t *net,
                                  const milp_spec_t *sp, ccs_err_t *err);

/* Warm-start values of the alltoall model for plan `pl`. */
void milp_warm_a2a(const tmap_t *mp, const milp_net_t *net,
                   const milp_plan_t *pl, double *x);

/* Fill the max-type columns (L, L2, T) of a warm vector from the rows,
 * then check every row; false when the vector is infeasible (the plan
 * uses an arc or piece size the model does not have). */
bool milp_warm_finish(mb_t *b, const tmap_t *mp, double *x);

/* The plan of a solution: GLPK's incumbent (vals == NULL) or a vector of
 * column values (the LNS's incumbent). */
ccs_status_t milp_decode(const mb_t *b, const tmap_t *mp,
                         const milp_net_t *net, const milp_spec_t *sp,
                         const double *vals, milp_plan_t **out,
                         ccs_err_t *err);

/* Reject a spec or options the model cannot take. */
ccs_status_t milp_validate_spec(const milp_net_t *net,
                                const milp_spec_t *sp,
                                const milp_solve_opts_t *o, ccs_err_t *err);

/* Milliseconds to the deadline, at least 1 (GLPK's tm_lim). */
int milp_ms_left(double deadline);

/* The model lp as CPLEX LP text that glp_read_lp reads back
 * (milp_glpk.c); *out owned by the caller (free).  Call under
 * milp_glpk_call. */
ccs_status_t milp_lp_text(glp_prob *lp, char **out, ccs_err_t *err);

#endif /* CCS_MILP_INT_H */
