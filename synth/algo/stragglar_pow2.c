/*
 * stragglar_pow2.c - StragglAR's phase 1 for n a power of 2: Algorithm 1
 * of the paper (section 3; Appendix D for the round count), which reaches
 * R = n + log2 n - 2 rounds (Theorem 1), each moving one block of
 * s/(n-1) bytes per direction: R alpha + R/(n-1) s beta.
 */
#include <stdlib.h>
#include <string.h>

#include "stragglar_int.h"

/* ---- Algorithm 1's round pieces (also the hole's, stragglar_hole.c) ---- */

void stragglar_ramp_open(stragglar_plan_t *p, uint32_t r, uint32_t K,
                         uint8_t *used, int32_t *recv_act)
{
    for (uint32_t g = 0; g < p->n; g++)
        recv_act[g] = -1;
    if (r > 0) {
        uint32_t to = r - 1 + K;
        stragglar_plan_pair(p, r, (int32_t)(r - 1), (int32_t)(r - 1),
                            (int32_t)to, -1);
        used[r - 1] = used[to] = 1;
        recv_act[to] = (int32_t)(r - 1);
    }
}

bool stragglar_ramp_close(stragglar_plan_t *p, uint32_t r, uint32_t K,
                          int32_t *act, uint8_t *used, const uint8_t *skip,
                          int32_t *recv_act)
{
    uint32_t m = p->n - 1, next = 2 * (K - 1) + 1;

    for (uint32_t g = 0; g < m; g++) {
        if (used[g] || act[g] < 0)
            continue;
        while (next < m && (act[next] >= 0 || used[next] ||
                            (skip != NULL && skip[next])))
            next++;
        if (next >= m)
            return false;
        stragglar_plan_pair(p, r, (int32_t)g, act[g], (int32_t)next, -1);
        used[g] = used[next] = 1;
        recv_act[next] = act[g];
    }
    /* Receivers take the chunk as their active one. */
    for (uint32_t g = 0; g < m; g++) {
        if (recv_act[g] >= 0)
            act[g] = recv_act[g];
    }
    act[r] = (int32_t)r;
    return true;
}

int32_t stragglar_window_pairs(stragglar_plan_t *p, uint32_t r, uint32_t K,
                               const int32_t *pl, uint32_t np,
                               const int32_t *ql, uint32_t nq,
                               const int32_t *act, uint8_t *used)
{
    uint32_t m = p->n - 1;

    for (uint32_t i = 0; i < np; i++) {
        uint32_t l = (uint32_t)pl[i];
        int32_t best = -1;
        if (used[l] || l <= r || l > r + K || l >= m)
            continue;
        for (uint32_t k = 0; k < nq; k++) {
            int32_t q = ql[k];
            if (used[q] || act[q] > (int32_t)l - (int32_t)K)
                continue;
            if (best < 0 || act[q] < act[best])
                best = q;
        }
        if (best < 0)
            return (int32_t)l;
        stragglar_plan_pair(p, r, (int32_t)l, act[l], best, act[best]);
        used[l] = used[best] = 1;
    }
    return -1;
}

bool stragglar_pair_rest(stragglar_plan_t *p, uint32_t r,
                         const int32_t *pl, uint32_t np, const int32_t *ql,
                         uint32_t nq, const int32_t *act, uint8_t *used)
{
    uint32_t k = 0;

    for (uint32_t i = 0; i < np; i++) {
        int32_t u = pl[i];
        if (used[u])
            continue;
        while (k < nq && used[ql[k]])
            k++;
        if (k == nq)
            return false;
        stragglar_plan_pair(p, r, u, act[u], ql[k], act[ql[k]]);
        used[u] = used[ql[k]] = 1;
    }
    return true;
}

/* ---- Powers of 2: Algorithm 1. ---- */

/*
 * Every non-straggler holds exactly one "active" chunk (complete, not yet
 * everywhere) from round log n on.  act[g] is it (-1: none yet).  In round
 * r >= log n, P = holders of the oldest active chunk c_{r-log n}, Q = the
 * rest; rank r (in P) meets the straggler, P \ {r} and Q exchange their
 * active chunks, so c_{r-log n} completes and every other active chunk
 * doubles.  Critical window (Appendix D invariant): a P-rank l with
 * r < l <= r + log n must receive only c_j with j <= l - log n, so that
 * its active chunk at round l is c_{l-log n} and it can leave P for the
 * straggler.  Window ranks are matched first, in increasing l, to the
 * Q-rank with the oldest active chunk; the rest pair in rank order.
 */
ccs_status_t stragglar_plan_pow2(uint32_t n, stragglar_plan_t *p,
                                 ccs_err_t *err)
{
    uint32_t m = n - 1, sigma = n - 1, lg = stragglar_ceil_log2(n), total;
    int32_t *act = NULL, *pl = NULL, *ql = NULL;
    uint8_t *used = NULL;
    ccs_status_t st = CCS_OK;

    total = n + lg - 2;
    /* Owned here. */
    act = malloc(n * sizeof(*act));
    pl = malloc(n * sizeof(*pl));
    ql = malloc(n * sizeof(*ql));
    used = malloc(n);
    if (act == NULL || pl == NULL || ql == NULL || used == NULL) {
        st = ccs_err_set(err, CCS_ERR_NOMEM, "stragglar: out of memory");
        goto cleanup;
    }
    for (uint32_t g = 0; g < n; g++)
        act[g] = -1;
    act[sigma] = -1;

    for (uint32_t r = 0; r < total; r++) {
        uint32_t rr, np = 0, nq = 0;

        st = stragglar_plan_add_round(p, &rr, err);
        if (st != CCS_OK)
            goto cleanup;
        memset(used, 0, n);
        if (r < m) {
            stragglar_plan_pair(p, r, (int32_t)r, (int32_t)r, (int32_t)sigma,
                      (int32_t)r);
            used[r] = used[sigma] = 1;
        }
        if (r < lg) {
            /* Ramp-up: rank r-1 -> rank r-1+lg with c_{r-1}; every other
             * holder sends its chunk to the next chunk-less rank above
             * 2(lg-1). */
            int32_t *recv_act = ql; /* scratch: chunk received per rank */
            stragglar_ramp_open(p, r, lg, used, recv_act);
            if (!stragglar_ramp_close(p, r, lg, act, used, NULL, recv_act)) {
                st = ccs_err_set(err, CCS_ERR_INTERNAL,
                                 "stragglar: n=%u round %u: no "
                                 "receiver left in the ramp-up", n, r);
                goto cleanup;
            }
            continue;
        }

        /* Steady state.  The straggler joins Q after its last exchange,
         * holding (and only sending) the last chunk. */
        if (r >= m)
            act[sigma] = (int32_t)(m - 1);
        for (uint32_t g = 0; g < n; g++) {
            if (used[g])
                continue;
            if (g != sigma && act[g] == (int32_t)(r - lg))
                pl[np++] = (int32_t)g;
            else
                ql[nq++] = (int32_t)g;
        }
        if (np != nq || (r < m && act[r] != (int32_t)(r - lg))) {
            st = ccs_err_set(err, CCS_ERR_INTERNAL,
                             "stragglar: n=%u round %u: |P|=%u |Q|=%u, "
                             "rank r's active chunk %d (invariant broken)",
                             n, r, np, nq, r < m ? act[r] : -1);
            goto cleanup;
        }
        /* Critical window first. */
        {
            int32_t l = stragglar_window_pairs(p, r, lg, pl, np, ql, nq, act,
                                               used);
            if (l >= 0) {
                st = ccs_err_set(err, CCS_ERR_INTERNAL,
                                 "stragglar: n=%u round %u: no partner for "
                                 "window rank %d", n, r, l);
                goto cleanup;
            }
        }
        /* np == nq, so every P-rank finds a Q-rank. */
        if (!stragglar_pair_rest(p, r, pl, np, ql, nq, act, used)) {
            st = ccs_err_set(err, CCS_ERR_INTERNAL,
                             "stragglar: n=%u round %u: a P-rank left "
                             "without a partner", n, r);
            goto cleanup;
        }
        /* P-ranks take their partner's chunk as the new active one; Q-ranks
         * got the expiring chunk and keep theirs. */
        for (uint32_t i = 0; i < np; i++) {
            int32_t u = pl[i];
            int32_t q = p->peer[(size_t)r * n + (size_t)u];
            act[u] = act[q];
        }
        if (p->send[(size_t)r * n + sigma] >= 0 && r >= m) {
            /* sigma has everything: it receives nothing. */
            int32_t q = p->peer[(size_t)r * n + sigma];
            p->send[(size_t)r * n + (size_t)q] = -1;
        }
        if (r < m)
            act[r] = (int32_t)r;
    }

cleanup:
    free(act);
    free(pl);
    free(ql);
    free(used);
    return st;
}
