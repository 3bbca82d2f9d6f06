/*
 * milp_ham.c - trees from two edge-disjoint Hamiltonian cycles of the
 * overlay, one more warm start for the MILP where they beat the built-in
 * shapes in the cost model (torus:4x4): a bounded depth-first search
 * (HAM_STEPS extensions in all), so it gives up rather than run long.
 */

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "milp_heur.h"

/* ---- Hamiltonian-cycle trees ---- */

#define HAM_STEPS 2000000L   /* DFS extensions, both cycles together */

typedef struct ham {
    int32_t n;
    const uint8_t *adj;      /* [n * n] undirected overlay edges */
    uint8_t *used;           /* [n * n] edges of the first cycle */
    int32_t path[MILP_MAX_RANKS];
    bool on[MILP_MAX_RANKS];
    long steps;
} ham_t;

static bool ham_edge(const ham_t *h, int32_t u, int32_t v)
{
    return h->adj[u * h->n + v] && !h->used[u * h->n + v];
}

/* Extend h->path[0..len) to a Hamiltonian cycle avoiding h->used; with
 * `second`, every cycle found is tried as the first of a pair (its
 * edges marked, a second cycle searched from scratch).  Returns true when
 * done (pair found, or one cycle when !second), path[] holding the last
 * cycle found; `first` receives the first cycle of the pair. */
static bool ham_dfs(ham_t *h, int32_t len, bool second, int32_t *first)
{
    int32_t n = h->n, u = h->path[len - 1];

    if (h->steps++ > HAM_STEPS)
        return false;
    if (len == n) {
        ham_t h2;
        uint8_t mark = 1;

        if (!ham_edge(h, u, h->path[0]))
            return false;
        if (!second)
            return true;
        for (int32_t i = 0; i < n; i++) {
            int32_t a = h->path[i], b = h->path[(i + 1) % n];

            h->used[a * n + b] = mark;
            h->used[b * n + a] = mark;
        }
        memcpy(first, h->path, (size_t)n * sizeof(int32_t));
        h2 = *h;
        memset(h2.on, 0, sizeof(h2.on));
        h2.path[0] = 0;
        h2.on[0] = true;
        if (ham_dfs(&h2, 1, false, NULL)) {
            memcpy(h->path, h2.path, sizeof(h->path));
            return true;
        }
        h->steps = h2.steps;
        memset(h->used, 0, (size_t)n * n);
        return false;
    }
    for (int32_t v = 0; v < n; v++) {
        if (h->on[v] || !ham_edge(h, u, v))
            continue;
        h->on[v] = true;
        h->path[len] = v;
        if (ham_dfs(h, len + 1, second, first))
            return true;
        h->on[v] = false;
        if (h->steps > HAM_STEPS)
            return false;
    }
    return false;
}

ccs_status_t milp_ham_trees(const milp_net_t *net, const milp_spec_t *sp,
                            int32_t **root, int32_t **parent,
                            int32_t *ntrees, ccs_err_t *err)
{
    int32_t n = net->n, ncyc = 0, half = n / 2;
    int32_t cyc[2][MILP_MAX_RANKS];
    uint8_t *adj = NULL, *used = NULL;    /* owned here */
    int32_t *r = NULL, *par = NULL;       /* owned here until the outputs */
    ham_t h;
    ccs_status_t st = CCS_OK;

    *root = NULL;
    *parent = NULL;
    *ntrees = 0;
    if (n < 3 || n > MILP_MAX_RANKS)
        return CCS_OK;
    adj = calloc((size_t)n * n, 1);
    used = calloc((size_t)n * n, 1);
    if (adj == NULL || used == NULL) {
        st = ccs_err_set(err, CCS_ERR_NOMEM, "milp: out of memory");
        goto cleanup;
    }
    for (int32_t u = 0; u < n; u++)
        for (int32_t v = 0; v < n; v++)
            adj[u * n + v] = u != v && milp_arc_allowed(net, sp, 0, u, v) &&
                             milp_arc_allowed(net, sp, 0, v, u);
    memset(&h, 0, sizeof(h));
    h.n = n;
    h.adj = adj;
    h.used = used;
    h.path[0] = 0;
    h.on[0] = true;
    if (ham_dfs(&h, 1, true, cyc[0])) {
        memcpy(cyc[1], h.path, (size_t)n * sizeof(int32_t));
        ncyc = 2;
    } else {
        /* No disjoint pair within the step limit: one cycle, if any. */
        memset(used, 0, (size_t)n * n);
        memset(h.on, 0, sizeof(h.on));
        h.on[0] = true;
        h.steps = 0;
        if (ham_dfs(&h, 1, false, NULL)) {
            memcpy(cyc[0], h.path, (size_t)n * sizeof(int32_t));
            ncyc = 1;
        }
    }
    if (ncyc == 0)
        goto cleanup;
    r = malloc((size_t)ncyc * n * sizeof(int32_t));
    par = malloc((size_t)ncyc * n * n * sizeof(int32_t));
    if (r == NULL || par == NULL) {
        st = ccs_err_set(err, CCS_ERR_NOMEM, "milp: out of memory");
        goto cleanup;
    }
    /* Tree (c, i): root cyc[c][i]; offsets 1..half hang towards the root
     * one way round, offsets half+1..n-1 the other way. */
    for (int32_t c = 0; c < ncyc; c++)
        for (int32_t i = 0; i < n; i++) {
            int32_t t = c * n + i, *pp = par + (size_t)t * n;

            r[t] = cyc[c][i];
            pp[cyc[c][i]] = -1;
            for (int32_t j = 1; j < n; j++)
                pp[cyc[c][(i + j) % n]] =
                    cyc[c][(i + (j <= half ? j - 1 : j + 1)) % n];
        }
    *root = r;
    *parent = par;
    *ntrees = ncyc * n;
    r = NULL;
    par = NULL;

cleanup:
    free(adj);
    free(used);
    free(r);
    free(par);
    return st;
}
