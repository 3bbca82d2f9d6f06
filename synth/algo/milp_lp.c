/*
 * milp_lp.c - the MILP's model builder over GLPK: columns, rows whose
 * duplicate terms are merged before they reach GLPK (glp_set_mat_row
 * rejects repeated columns), the overlay's route test, and the column
 * map's storage.  The models themselves: milp_tree.c and milp_a2a.c.
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

int milp_mb_col(mb_t *b, const char *name, int kind, int type, double lo,
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

ccs_status_t milp_mb_ready(mb_t *b, ccs_err_t *err)
{
    b->cap = b->ncols + 2;
    /* Owned by the builder, freed in milp_mb_free. */
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

void milp_mb_free(mb_t *b)
{
    free(b->ind);
    free(b->val);
    free(b->dense);
    free(b->touched);
    if (b->lp != NULL)
        glp_delete_prob(b->lp);
}

void milp_mb_add(mb_t *b, int col, double coef)
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
int milp_mb_row(mb_t *b, const char *name, int type, double lo, double hi)
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

bool milp_route_has(const milp_net_t *net, int32_t u, int32_t v, int32_t q)
{
    int32_t idx = u * net->n + v;

    for (int32_t i = net->route_off[idx]; i < net->route_off[idx + 1]; i++)
        if (net->route_pipe[i] == q)
            return true;
    return false;
}

void milp_tmap_free(tmap_t *t)
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
