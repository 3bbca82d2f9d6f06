/*
 * milp_a2a.c - the MILP's alltoall model: integer chunk counts per flow
 * and path (direct, or through one relay GPU), two legs with loads L1 and
 * L2 (the second leg waits for the first), and the warm start's column
 * values from a heuristic plan.  Rows: docs/milp.md.
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

ccs_status_t milp_build_a2a_model(mb_t *b, tmap_t *mp,
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
                    milp_mb_col(b, nm, GLP_IV, GLP_DB, 0, B);
            }
        }
    }
    mp->U = milp_mb_col(b, "u", GLP_BV, GLP_DB, 0, 1);
    mp->L = milp_mb_col(b, "L1", GLP_CV, GLP_LO, 0, 0);
    mp->L2 = milp_mb_col(b, "L2", GLP_CV, GLP_LO, 0, 0);
    mp->T = milp_mb_col(b, "T", GLP_CV, GLP_LO, 0, 0);
    glp_set_obj_dir(b->lp, GLP_MIN);
    glp_set_obj_coef(b->lp, mp->T, 1.0);
    st = milp_mb_ready(b, err);
    if (st != CCS_OK)
        return st;
    for (int32_t s = 0; s < n; s++) {
        for (int32_t d = 0; d < n; d++) {
            const int32_t *pw = mp->path_w + ((size_t)s * n + d) * P;
            const int *xc = mp->x + ((size_t)s * n + d) * P;

            if (s == d)
                continue;
            for (int32_t i = 0; i < P && pw[i] >= 0; i++)
                milp_mb_add(b, xc[i], 1);
            snprintf(nm, sizeof(nm), "flow_%d_%d", s, d);
            milp_mb_row(b, nm, GLP_FX, B, B);
            for (int32_t i = 1; i < P && pw[i] >= 0; i++) {
                milp_mb_add(b, xc[i], 1);
                milp_mb_add(b, mp->U, -B);
                snprintf(nm, sizeof(nm), "relay_%d_%d_%d", s, d, pw[i]);
                milp_mb_row(b, nm, GLP_UP, 0, 0);
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
                        bool hit =
                            leg == 0 ? milp_route_has(net, s, pw[i], q)
                                     : (i > 0 &&
                                        milp_route_has(net, pw[i], d, q));

                        if (hit)
                            milp_mb_add(b, xc[i], -coef);
                    }
                }
            }
            if (b->nt == 0)
                continue;
            milp_mb_add(b, leg == 0 ? mp->L : mp->L2, 1);
            snprintf(nm, sizeof(nm), "load%d_%d", leg + 1, q);
            milp_mb_row(b, nm, GLP_LO, 0, 0);
        }
    }
    milp_mb_add(b, mp->T, 1);
    milp_mb_add(b, mp->L, -1);
    milp_mb_add(b, mp->L2, -1);
    milp_mb_add(b, mp->U, -ahat);
    milp_mb_row(b, "T", GLP_LO, ahat, 0);
    return CCS_OK;
}

void milp_warm_a2a(const tmap_t *mp, const milp_net_t *net,
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
