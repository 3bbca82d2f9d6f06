/*
 * milp_cost.c - the linear cost model the MILP and the heuristic share
 * (AdapCC Sec. IV-D, eqs. 2-5 in alpha-beta form): per-pipe concurrency,
 * the time of one hop and of one piece, the per-piece alpha, a tree's
 * fill, and a plan's cost
 *   T ~ L + H + (P - 1) alpha
 * with L the busiest pipe's bytes / bandwidth over all subs, H a piece's
 * latency up and down the deepest path and P the pieces per sub.
 */

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "milp_heur.h"

/* ---- cost model ---- */

bool milp_coll_up(ccs_coll_t coll)
{
    return coll == CCS_COLL_ALLREDUCE || coll == CCS_COLL_REDUCE;
}

bool milp_coll_down(ccs_coll_t coll)
{
    return coll == CCS_COLL_ALLREDUCE || coll == CCS_COLL_BROADCAST;
}

void milp_add_route(const milp_net_t *net, double *acc, int32_t u,
                    int32_t v, double amount)
{
    int32_t idx = u * net->n + v;

    for (int32_t i = net->route_off[idx]; i < net->route_off[idx + 1]; i++)
        acc[net->route_pipe[i]] += amount;
}

ccs_status_t milp_concurrency(const milp_net_t *net, const milp_spec_t *sp,
                              const milp_plan_t *ref, double **out,
                              ccs_err_t *err)
{
    int32_t n = net->n, np = net->npipes, lv = 1;
    /* Owned by the caller on success. */
    double *w = calloc((size_t)sp->ncand * (size_t)(np + 1), sizeof(double));

    if (w == NULL)
        return ccs_err_set(err, CCS_ERR_NOMEM, "milp: out of memory");
    for (int32_t m = 0; ref->coll != CCS_COLL_ALLTOALL && m < ref->m; m++) {
        int32_t kids[MILP_MAX_RANKS] = { 0 }, most = 0, deep = 0;

        for (int32_t u = 0; u < n; u++) {
            int32_t v = ref->parent[(size_t)m * n + u], d = 0;

            if (v < 0)
                continue;
            kids[v]++;
            if (milp_coll_up(ref->coll))
                milp_add_route(net, w, u, v, 1.0);
            if (milp_coll_down(ref->coll))
                milp_add_route(net, w, v, u, 1.0);
            for (int32_t x = u; x >= 0 && d <= n; x = ref->parent[
                     (size_t)m * n + x])
                d++;
            deep = d - 1 > deep ? d - 1 : deep;
        }
        for (int32_t u = 0; u < n; u++)
            most = kids[u] > most ? kids[u] : most;
        /* Steps before a piece has crossed the tree: staggered siblings
         * plus the way down. */
        if (most + deep > lv)
            lv = most + deep;
    }
    for (int32_t k = sp->ncand - 1; k >= 0; k--) {
        uint32_t cnt = ref->m > 0 && ref->count != NULL ? ref->count[0] : 1;
        double pieces = ceil((double)cnt / (double)sp->cand[k]);
        double full = pieces >= lv ? 1.0 : pieces / (double)lv;

        for (int32_t q = 0; q < np; q++) {
            double c = w[q] * full;

            w[(size_t)k * np + q] = c < 1 ? 1 : c;
        }
    }
    *out = w;
    return CCS_OK;
}

/* Row of the concurrency table for a piece of q chunks. */
static const double *conc_row(const milp_net_t *net, const milp_spec_t *sp,
                              const double *conc, uint32_t q)
{
    int32_t k = 0;

    if (conc == NULL)
        return NULL;
    for (int32_t i = 0; i < sp->ncand; i++)
        if (sp->cand[i] <= q)
            k = i;
    return conc + (size_t)k * net->npipes;
}

double milp_hop_us(const milp_net_t *net, const milp_spec_t *sp,
                   const double *conc, int32_t u, int32_t v, uint32_t k)
{
    int32_t idx = u * net->n + v;
    const double *row = conc_row(net, sp, conc, k);
    double worst = 0;

    for (int32_t i = net->route_off[idx]; i < net->route_off[idx + 1];
         i++) {
        int32_t q = net->route_pipe[i];
        double c = (row != NULL ? row[q] : 1.0) / net->pipe_bw_Bps[q];

        if (c > worst)
            worst = c;
    }
    return 1e6 * (net->route_alpha_s[idx] + (double)k * sp->unit_bytes *
                  worst);
}

double milp_piece_us(const milp_net_t *net, const milp_spec_t *sp,
                     const double *conc, uint32_t k)
{
    const double *row = conc_row(net, sp, conc, k);
    double worst = 0;

    for (int32_t q = 0; q < net->npipes; q++) {
        double c = (row != NULL ? row[q] : 1.0) / net->pipe_bw_Bps[q];

        if (c > worst)
            worst = c;
    }
    return 1e6 * (double)k * sp->unit_bytes * worst;
}

double milp_alpha_hat_us(const milp_net_t *net, const milp_spec_t *sp,
                         int32_t m)
{
    double a = 0;

    for (int32_t u = 0; u < net->n; u++)
        for (int32_t v = 0; v < net->n; v++)
            if (milp_arc_allowed(net, sp, m, u, v) &&
                net->route_alpha_s[u * net->n + v] > a)
                a = net->route_alpha_s[u * net->n + v];
    return 1e6 * a;
}

/* Longest reduce-direction path (h) and broadcast depth (g) of tree m,
 * with pieces of k chunks.  O(n^2): fine for n <= MILP_MAX_RANKS. */
static void tree_fill(const milp_net_t *net, const milp_spec_t *sp,
                      const double *conc, const int32_t *par, int32_t root,
                      uint32_t k, double *up_us, double *down_us)
{
    double h[MILP_MAX_RANKS], b[MILP_MAX_RANKS];
    int32_t depth[MILP_MAX_RANKS], order[MILP_MAX_RANKS];
    int32_t n = net->n, cnt = 0;

    for (int32_t u = 0; u < n; u++) {
        int32_t v = u;

        depth[u] = 0;
        while (v != root && depth[u] <= n) {
            v = par[v];
            depth[u]++;
        }
        h[u] = 0;
        b[u] = 0;
    }
    /* Order ranks by depth: parents before children. */
    for (int32_t d = 0; d <= n && cnt < n; d++)
        for (int32_t u = 0; u < n; u++)
            if (depth[u] == d)
                order[cnt++] = u;
    *up_us = 0;
    *down_us = 0;
    for (int32_t i = cnt - 1; i >= 0; i--) {     /* leaves first */
        int32_t u = order[i], v = par[u];

        if (v >= 0) {
            double t = h[u] + milp_hop_us(net, sp, conc, u, v, k);

            if (t > h[v])
                h[v] = t;
        }
    }
    for (int32_t i = 0; i < cnt; i++) {          /* root first */
        int32_t u = order[i], v = par[u];

        if (v >= 0)
            b[u] = b[v] + milp_hop_us(net, sp, conc, v, u, k);
        if (h[u] > *up_us)
            *up_us = h[u];
        if (b[u] > *down_us)
            *down_us = b[u];
    }
}

double milp_plan_cost(const milp_net_t *net, const milp_spec_t *sp,
                      const double *conc, const milp_plan_t *p,
                      double *loads)
{
    double *acc = loads;   /* owned here when loads == NULL */
    double lam = 0, worst = 0, lam2 = 0;
    int32_t n = net->n;
    bool relay = false;

    if (acc == NULL)
        acc = calloc((size_t)net->npipes * 2 + 2, sizeof(double));
    else
        memset(acc, 0, (size_t)net->npipes * sizeof(double));
    if (acc == NULL)
        return INFINITY;
    if (p->coll == CCS_COLL_ALLTOALL) {
        /* Two legs: first hops (direct flows included), then relays. */
        double *acc2 = calloc((size_t)net->npipes + 1, sizeof(double));
        double ahat = 0;

        if (acc2 == NULL) {
            if (acc != loads)
                free(acc);
            return INFINITY;
        }
        for (int32_t s = 0; s < n; s++) {
            for (int32_t d = 0; d < n; d++) {
                if (s == d)
                    continue;
                if (net->route_alpha_s[s * n + d] * 1e6 > ahat)
                    ahat = net->route_alpha_s[s * n + d] * 1e6;
                for (int32_t w = 0; w < n; w++) {
                    uint32_t x = p->a2a[((size_t)s * n + d) * n + w];

                    if (x == 0)
                        continue;
                    milp_add_route(net, acc, s, w, (double)x);
                    if (w != d) {
                        milp_add_route(net, acc2, w, d, (double)x);
                        relay = true;
                    }
                }
            }
        }
        for (int32_t q = 0; q < net->npipes; q++) {
            acc[q] *= 1e6 * sp->unit_bytes / net->pipe_bw_Bps[q];
            acc2[q] *= 1e6 * sp->unit_bytes / net->pipe_bw_Bps[q];
            if (acc[q] > lam)
                lam = acc[q];
            if (acc2[q] > lam2)
                lam2 = acc2[q];
        }
        free(acc2);
        if (acc != loads)
            free(acc);
        return lam + lam2 + ahat * (relay ? 2 : 1);
    }
    for (int32_t m = 0; m < p->m; m++) {
        for (int32_t u = 0; u < n; u++) {
            int32_t v = p->parent[(size_t)m * n + u];

            if (v < 0)
                continue;
            if (milp_coll_up(p->coll))
                milp_add_route(net, acc, u, v, (double)p->count[m]);
            if (milp_coll_down(p->coll))
                milp_add_route(net, acc, v, u, (double)p->count[m]);
        }
    }
    for (int32_t q = 0; q < net->npipes; q++) {
        acc[q] *= 1e6 * sp->unit_bytes / net->pipe_bw_Bps[q];
        if (acc[q] > lam)
            lam = acc[q];
    }
    for (int32_t m = 0; m < p->m; m++) {
        double up, down, t;
        uint32_t pieces = (p->count[m] + p->piece[m] - 1) / p->piece[m];

        tree_fill(net, sp, conc, p->parent + (size_t)m * n, p->root[m],
                  p->piece[m], &up, &down);
        t = lam + (milp_coll_up(p->coll) ? up : 0) +
            (milp_coll_down(p->coll) ? down : 0) -
            milp_piece_us(net, sp, conc, p->piece[m]) +
            milp_alpha_hat_us(net, sp, m) *
                (pieces > 0 ? (double)(pieces - 1) : 0);
        t = fmax(t, lam);
        if (t > worst)
            worst = t;
    }
    if (acc != loads)
        free(acc);
    return worst;
}
