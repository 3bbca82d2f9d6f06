/*
 * stragglar_hold.c - a StragglAR plan's storage and its checker: rounds
 * appended to a plan, the holdings bitsets (which complete chunks each
 * rank has), and the replay that checks every plan before it is used
 * (the plan-level twin of the verifier: every transfer useful, nothing
 * received twice, every chunk everywhere at the end).
 */
#include <stdlib.h>
#include <string.h>

#include "stragglar_int.h"

void stragglar_plan_destroy(stragglar_plan_t *p)
{
    if (p == NULL)
        return;
    free(p->peer);
    free(p->send);
    free(p);
}

/* Append an empty round (all -1); returns its index through *r. */
ccs_status_t stragglar_plan_add_round(stragglar_plan_t *p, uint32_t *r,
                                   ccs_err_t *err)
{
    size_t n = p->n;

    if (p->nrounds == p->cap) {
        uint32_t ncap = p->cap ? 2 * p->cap : 16;
        int32_t *np = realloc(p->peer, (size_t)ncap * n * sizeof(*np));
        int32_t *ns;
        if (np == NULL)
            return ccs_err_set(err, CCS_ERR_NOMEM, "stragglar: out of memory");
        p->peer = np; /* owned by the plan */
        ns = realloc(p->send, (size_t)ncap * n * sizeof(*ns));
        if (ns == NULL)
            return ccs_err_set(err, CCS_ERR_NOMEM, "stragglar: out of memory");
        p->send = ns;
        p->cap = ncap;
    }
    for (size_t g = 0; g < n; g++) {
        p->peer[(size_t)p->nrounds * n + g] = -1;
        p->send[(size_t)p->nrounds * n + g] = -1;
    }
    *r = p->nrounds++;
    return CCS_OK;
}

void stragglar_hold_free(holdings_t *h)
{
    free(h->bits);
    free(h->count);
    free(h->nhave);
}

ccs_status_t stragglar_hold_init(holdings_t *h, uint32_t n, ccs_err_t *err)
{
    memset(h, 0, sizeof(*h));
    h->n = n;
    h->m = n - 1;
    h->words = (h->m + 63) / 64;
    /* All three owned by h, freed by stragglar_hold_free. */
    h->bits = calloc((size_t)n * h->words, sizeof(*h->bits));
    h->count = calloc(h->m, sizeof(*h->count));
    h->nhave = calloc(n, sizeof(*h->nhave));
    if (h->bits == NULL || h->count == NULL || h->nhave == NULL) {
        stragglar_hold_free(h);
        return ccs_err_set(err, CCS_ERR_NOMEM, "stragglar: out of memory");
    }
    return CCS_OK;
}

/* Replay a plan on holdings and check it: pairs symmetric and disjoint,
 * the straggler exchange in rounds < n-1 with chunk = the partner's rank,
 * every other transfer sends a complete chunk the receiver lacks, and at
 * the end every rank holds every chunk.  This is the plan-level twin of
 * the verifier and runs on every plan. */
ccs_status_t stragglar_plan_check(const stragglar_plan_t *p, ccs_err_t *err)
{
    holdings_t h;
    uint32_t n = p->n, m = n - 1, sigma = n - 1;
    ccs_status_t st = stragglar_hold_init(&h, n, err);
    int32_t *got = NULL;

    if (st != CCS_OK)
        return st;
    got = malloc(n * sizeof(*got)); /* owned here */
    if (got == NULL) {
        st = ccs_err_set(err, CCS_ERR_NOMEM, "stragglar: out of memory");
        goto cleanup;
    }
    for (uint32_t r = 0; r < p->nrounds; r++) {
        const int32_t *peer = &p->peer[(size_t)r * n];
        const int32_t *snd = &p->send[(size_t)r * n];
        for (uint32_t g = 0; g < n; g++) {
            int32_t q = peer[g];
            got[g] = -1;
            if (q < 0) {
                if (snd[g] >= 0)
                    goto bad_pair;
                continue;
            }
            if ((uint32_t)q >= n || (uint32_t)q == g || peer[q] != (int32_t)g)
                goto bad_pair;
        }
        for (uint32_t g = 0; g < n; g++) {
            int32_t q = peer[g], c = snd[g];
            bool exch = r < m && (g == sigma || (uint32_t)q == sigma);
            if (q < 0)
                continue;
            if (r < m && (g == sigma || (uint32_t)q == sigma) &&
                !(peer[sigma] == (int32_t)r && snd[sigma] == (int32_t)r &&
                  snd[r] == (int32_t)r))
                return ccs_err_set(err, CCS_ERR_INTERNAL,
                                   "stragglar plan: round %u: straggler "
                                   "exchange must be with rank %u on chunk "
                                   "%u", r, r, r);
            if (exch || c < 0)
                continue;
            if ((uint32_t)c >= m || !stragglar_hold_has(&h, g, (uint32_t)c) ||
                stragglar_hold_has(&h, (uint32_t)q, (uint32_t)c)) {
                st = ccs_err_set(err, CCS_ERR_INTERNAL,
                                 "stragglar plan: round %u: rank %u sends "
                                 "chunk %d to rank %d that %s", r, g, c, q,
                                 (uint32_t)c < m && stragglar_hold_has(&h, g,
                                                             (uint32_t)c)
                                     ? "already has it"
                                     : "it does not hold complete");
                goto cleanup;
            }
            got[q] = c;
        }
        if (r < m) {
            stragglar_hold_add(&h, r, r);
            stragglar_hold_add(&h, sigma, r);
        }
        for (uint32_t g = 0; g < n; g++) {
            if (got[g] >= 0)
                stragglar_hold_add(&h, g, (uint32_t)got[g]);
        }
    }
    for (uint32_t g = 0; g < n; g++) {
        if (h.nhave[g] != m) {
            st = ccs_err_set(err, CCS_ERR_INTERNAL,
                             "stragglar plan: rank %u ends with %u of %u "
                             "chunks", g, h.nhave[g], m);
            goto cleanup;
        }
    }
    goto cleanup;
bad_pair:
    st = ccs_err_set(err, CCS_ERR_INTERNAL,
                     "stragglar plan: round pairs are not symmetric");
cleanup:
    free(got);
    stragglar_hold_free(&h);
    return st;
}
