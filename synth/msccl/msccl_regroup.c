/*
 * msccl_regroup.c - the MSCCL importer's regrouping pass (msccl_import.c):
 * moves parts to later levels, never past what waits for them, so that a
 * rank's transfers of one step in the file stay one lock-step IR step.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "msccl.h"
#include "msccl_int.h"

/* Levels are the earliest IR step each part can take.  The lock-step
 * model (ccsynth's executor and simulator) posts a rank's ops of one step
 * together and waits for all of them.  Earliest placement can split what
 * the file runs together: a rank's transfers that wait for the rank's
 * previous step land one step early when both their ranks were idle in
 * between, while the others of that step wait for a busier peer; the
 * step becomes two, run one after the other.  msccl_regroup() moves parts
 * later, never past what waits for them (every edge still holds):
 *   - sends, nops and local ops as late as their successors allow: a send
 *     and a nop are laid out nowhere (a transfer sits at its receive's
 *     level) and local ops cost nothing in the model's step, so this only
 *     frees the transfers before them;
 *   - then, latest levels first, a rank's transfers of one level together
 *     to the later level that leaves the fewest (rank, level) groups of
 *     transfers over the ranks they touch, when that is fewer than now
 *     or as many (then the earliest such level, so that the next group
 *     can join it);
 * and again while something moves. */
typedef struct rg {
    imp_t *m;
    uint32_t *level;
    uint32_t *off, *adj;     /* out-edges per part (CSR) */
    uint32_t *occ;           /* [R * L] transfers per (rank, level) */
    uint32_t *cnt;           /* [R] scratch: group members per rank */
    uint8_t *mark;           /* [P] scratch: in the group being moved */
    size_t L;
} rg_t;

typedef struct rg_ent { uint32_t rank, part; } rg_ent_t;

static int rg_ent_cmp(const void *a, const void *b)
{
    const rg_ent_t *x = a, *y = b;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    return x->part < y->part ? -1 : x->part > y->part;
}

/* The rank of a part (end 0), or of a receive's sender (end 1). */
static uint32_t rg_rank(const rg_t *g, uint32_t p, int end)
{
    const imp_t *m = g->m;
    uint32_t q = end == 0 || m->parts[p].kind != P_R ? p : m->partner[p];
    return m->tbs[m->steps[m->parts[q].step].tb].gpu;
}

/* Latest level p may take (the last level when nothing waits for it);
 * edges to marked parts (moving along at the same level) do not bind. */
static uint32_t rg_bound(const rg_t *g, uint32_t p)
{
    uint32_t b = (uint32_t)g->L - 1;
    for (uint32_t k = g->off[p]; k < g->off[p + 1]; k++) {
        const edge_t *ed = &g->m->edges[g->adj[k]];
        if (g->mark[ed->v] && ed->w == 0)
            continue;
        uint32_t lim = g->level[ed->v] - ed->w;
        if (lim < b)
            b = lim;
    }
    return b;
}

/* Change in the number of (rank, level) groups of transfers when the
 * marked members (cnt[x] of them touch rank x, for the nx ranks in xs)
 * go from level l to v. */
static int rg_delta(const rg_t *g, const uint32_t *xs, uint32_t nx,
                    uint32_t l, uint32_t v)
{
    int d = 0;
    for (uint32_t i = 0; i < nx; i++) {
        uint32_t x = xs[i], k = g->cnt[x];
        uint32_t at = g->occ[(size_t)x * g->L + l];
        uint32_t to = g->occ[(size_t)x * g->L + v];
        d += (at > k) - 1 + (to == 0);
    }
    return d;
}

/* Sends, nops and local ops as late as their successors allow, latest
 * first (by = the parts sorted by level, descending). */
static bool rg_sink_free(rg_t *g, const uint32_t *by, uint32_t n)
{
    bool moved = false;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t p = by[i];
        if (g->m->parts[p].kind == P_R)
            continue;
        uint32_t b = rg_bound(g, p);
        if (b != UINT32_MAX && b > g->level[p]) {
            g->level[p] = b;
            moved = true;
        }
    }
    return moved;
}

/* The parts by level, latest first (counting sort). */
static void rg_order(const rg_t *g, uint32_t *by, uint32_t *cnt)
{
    uint32_t P = g->m->nparts;
    memset(cnt, 0, (g->L + 1) * sizeof(*cnt));
    for (uint32_t p = 0; p < P; p++)
        cnt[g->L - 1 - g->level[p] + 1]++;
    for (size_t v = 0; v < g->L; v++)
        cnt[v + 1] += cnt[v];
    for (uint32_t p = 0; p < P; p++)
        by[cnt[g->L - 1 - g->level[p]]++] = p;
}

static uint32_t uf_find(uint32_t *uf, uint32_t x)
{
    while (uf[x] != x) {
        uf[x] = uf[uf[x]];
        x = uf[x];
    }
    return x;
}

/* Move the ng transfers grp[] (all at level lv) together to the later
 * level within their successors' bound that leaves the fewest groups,
 * when that is no more than now; xs is scratch for R ranks. */
static bool rg_move(rg_t *g, const uint32_t *grp, uint32_t ng, uint32_t lv,
                    uint32_t maxl, uint32_t *xs)
{
    uint32_t nx = 0, b = UINT32_MAX, best = lv;
    int bestd = 1;

    for (uint32_t r = 0; r < ng; r++)
        g->mark[grp[r]] = 1;
    for (uint32_t r = 0; r < ng; r++) {
        uint32_t br = rg_bound(g, grp[r]);
        if (br < b)
            b = br;
        for (int e = 0; e < 2; e++) {
            uint32_t x = rg_rank(g, grp[r], e);
            if (g->cnt[x]++ == 0)
                xs[nx++] = x;
        }
    }
    if (b != UINT32_MAX && b > lv)
        for (uint32_t v = lv + 1; v <= b && v <= maxl; v++) {
            int d = rg_delta(g, xs, nx, lv, v);
            if (d < bestd) {
                bestd = d;
                best = v;
            }
        }
    bool moved = best != lv && bestd <= 0;
    if (moved) {
        for (uint32_t r = 0; r < nx; r++) {
            g->occ[(size_t)xs[r] * g->L + lv] -= g->cnt[xs[r]];
            g->occ[(size_t)xs[r] * g->L + best] += g->cnt[xs[r]];
        }
        for (uint32_t r = 0; r < ng; r++)
            g->level[grp[r]] = best;
    }
    for (uint32_t r = 0; r < nx; r++)
        g->cnt[xs[r]] = 0;
    for (uint32_t r = 0; r < ng; r++)
        g->mark[grp[r]] = 0;
    return moved;
}

ccs_status_t msccl_regroup(imp_t *m, uint32_t *level)
{
    uint32_t P = m->nparts, E = m->nedges, maxl = 0;
    uint32_t *by = NULL, *lcnt = NULL, *xs = NULL, *grp = NULL, *uf = NULL;
    rg_ent_t *ent = NULL;    /* (rank, part) of the transfers at a level */
    ccs_status_t st = CCS_OK;
    rg_t g;

    memset(&g, 0, sizeof(g));
    g.m = m;
    g.level = level;
    for (uint32_t p = 0; p < P; p++)
        if (level[p] > maxl)
            maxl = level[p];
    g.L = (size_t)maxl + 1;
    /* The (rank, level) table is R x L counters.  A program too large for
     * it (a fuzzed file naming thousands of GPUs over a long chain) keeps
     * its earliest layout, which is as valid, only less like the lock-step
     * schedule it may have come from. */
    if ((size_t)m->R * g.L > ((size_t)1 << 26))
        return CCS_OK;
    g.off = calloc((size_t)P + 2, sizeof(uint32_t));
    g.adj = malloc(((size_t)E + 1) * sizeof(uint32_t));
    g.occ = calloc((size_t)m->R * g.L + 1, sizeof(uint32_t));
    g.cnt = calloc((size_t)m->R + 1, sizeof(uint32_t));
    g.mark = calloc((size_t)P + 1, 1);
    by = malloc(((size_t)P + 1) * sizeof(uint32_t));
    lcnt = malloc((g.L + 2) * sizeof(uint32_t));
    ent = malloc((2 * (size_t)P + 1) * sizeof(*ent));
    xs = malloc(((size_t)m->R + 1) * sizeof(uint32_t));
    grp = malloc(((size_t)P + 1) * sizeof(uint32_t));
    uf = malloc(((size_t)m->R + 1) * sizeof(uint32_t));
    if (uf != NULL)
        for (uint32_t r = 0; r < m->R; r++)
            uf[r] = UINT32_MAX;
    if (uf == NULL || g.off == NULL || g.adj == NULL || g.occ == NULL ||
        g.cnt == NULL || g.mark == NULL || by == NULL || lcnt == NULL ||
        ent == NULL || xs == NULL || grp == NULL) {
        st = ccs_err_set(m->err, CCS_ERR_NOMEM, "out of memory");
        goto cleanup;
    }
    for (uint32_t e = 0; e < E; e++)
        g.off[m->edges[e].u + 1]++;
    for (uint32_t p = 0; p < P; p++)
        g.off[p + 1] += g.off[p];
    {
        uint32_t *fill = malloc(((size_t)P + 1) * sizeof(uint32_t));
        if (fill == NULL) {
            st = ccs_err_set(m->err, CCS_ERR_NOMEM, "out of memory");
            goto cleanup;
        }
        memcpy(fill, g.off, P * sizeof(uint32_t));
        for (uint32_t e = 0; e < E; e++)
            g.adj[fill[m->edges[e].u]++] = e;
        free(fill);
    }
    for (uint32_t p = 0; p < P; p++)
        if (m->parts[p].kind == P_R) {
            g.occ[(size_t)rg_rank(&g, p, 0) * g.L + level[p]]++;
            g.occ[(size_t)rg_rank(&g, p, 1) * g.L + level[p]]++;
        }
    /* Every move raises a level within [0, maxl]: this ends.  The cap
     * bounds the time on large programs, where the first passes do
     * nearly all of it. */
    for (int pass = 0; pass < 32; pass++) {
        bool moved = false;
        rg_order(&g, by, lcnt);
        while (rg_sink_free(&g, by, P)) {
            moved = true;
            rg_order(&g, by, lcnt);
        }
        /* by[] lists latest levels first: walk it level by level */
        for (uint32_t i = 0; i < P;) {
            uint32_t lv = level[by[i]], j = i;
            while (j < P && level[by[j]] == lv)
                j++;
            /* whole connected sets of ranks first (a rank that waits at
             * this level for a neighbour that waits for another ...),
             * then each rank's transfers */
            for (int kind = 0; kind < 2; kind++) {
                uint32_t n = 0;
                for (uint32_t k = i; k < j; k++)
                    if (m->parts[by[k]].kind == P_R && level[by[k]] == lv) {
                        uint32_t x = rg_rank(&g, by[k], 0);
                        uint32_t y = rg_rank(&g, by[k], 1);
                        if (kind == 0) {
                            uf[x] = uf[x] == UINT32_MAX ? x : uf[x];
                            uf[y] = uf[y] == UINT32_MAX ? y : uf[y];
                            x = uf_find(uf, x);
                            y = uf_find(uf, y);
                            if (x != y)
                                uf[x] = y;
                        } else {
                            ent[n++] = (rg_ent_t){ x, by[k] };
                            ent[n++] = (rg_ent_t){ y, by[k] };
                        }
                    }
                if (kind == 0) {
                    for (uint32_t k = i; k < j; k++)
                        if (m->parts[by[k]].kind == P_R &&
                            level[by[k]] == lv)
                            ent[n++] = (rg_ent_t){
                                uf_find(uf, rg_rank(&g, by[k], 0)), by[k] };
                    for (uint32_t k = i; k < j; k++)
                        if (m->parts[by[k]].kind == P_R) {
                            uf[rg_rank(&g, by[k], 0)] = UINT32_MAX;
                            uf[rg_rank(&g, by[k], 1)] = UINT32_MAX;
                        }
                }
                qsort(ent, n, sizeof(*ent), rg_ent_cmp);
                for (uint32_t k = 0; k < n;) {
                    uint32_t q = k, ng = 0;
                    while (q < n && ent[q].rank == ent[k].rank)
                        q++;
                    /* members an earlier group of this level moved are
                     * gone already */
                    for (uint32_t r = k; r < q; r++)
                        if (level[ent[r].part] == lv)
                            grp[ng++] = ent[r].part;
                    if (ng > 0 && rg_move(&g, grp, ng, lv, maxl, xs))
                        moved = true;
                    k = q;
                }
            }
            i = j;
        }
        if (!moved)
            break;
    }

cleanup:
    free(g.off);
    free(g.adj);
    free(g.occ);
    free(g.cnt);
    free(g.mark);
    free(by);
    free(lcnt);
    free(ent);
    free(xs);
    free(grp);
    free(uf);
    return st;
}
