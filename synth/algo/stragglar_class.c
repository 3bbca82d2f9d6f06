/*
 * stragglar_class.c - the weights of a StragglAR round, computed once per
 * class of equal ranks instead of once per pair of ranks.
 *
 * A pair's weight (stragglar_search.c) depends only on the two ranks'
 * holdings of the active chunks, their rank slack and, for the straggler
 * edge, whether they have met the straggler; the rank slack follows from
 * the holdings (every rank holds every chunk that is complete everywhere,
 * and none holds a chunk that does not exist yet).  So ranks with the same
 * active holdings are interchangeable for the weights, and in the steady
 * state there are few such classes (about 100 at n = 511, at most 142,
 * against 510 ranks: only about log2 n chunks are active at a time).
 * Weighing the C^2 class pairs replaces the n^2 / 2 calls of
 * stragglar_srch_pick per round; the weights, and so the matchings and
 * plans, are exactly those of the per-pair formula.
 */
#include <stdlib.h>
#include <string.h>

#include "stragglar_int.h"

void stragglar_cls_free(srch_cls_t *c)
{
    free(c->tab);
    free(c->of);
    free(c->rep);
    free(c->size);
    free(c->start);
    free(c->mem);
    free(c->rem);
    free(c->cnt);
    free(c->pl);
    free(c->cand);
    free(c->cand2);
    free(c->ev);
    free(c->pc);
    free(c->pi);
    free(c->org);
    free(c->adjs);
    free(c->adj);
    free(c->odd);
    free(c->oddx);
    free(c->oddo);
    memset(c, 0, sizeof(*c));
}

/* Scratch for n ranks; on failure nothing is left allocated. */
ccs_status_t stragglar_cls_init(srch_cls_t *c, uint32_t n)
{
    memset(c, 0, sizeof(*c));
    c->tabsz = 1;
    while (c->tabsz < 2 * n)
        c->tabsz *= 2;
    c->tab = malloc(c->tabsz * sizeof(*c->tab));
    c->of = malloc(n * sizeof(*c->of));
    c->rep = malloc(n * sizeof(*c->rep));
    if (!c->tab || !c->of || !c->rep) {
        stragglar_cls_free(c);
        return CCS_ERR_NOMEM;
    }
    if (n <= SRCH_CLASS_N)
        return CCS_OK;
    {
        size_t nn = (size_t)n * n, nd = (size_t)(CLS_DEPTH + 1) * n;
        c->size = malloc(n * sizeof(*c->size));
        c->start = malloc((n + 1) * sizeof(*c->start));
        c->mem = malloc(n * sizeof(*c->mem));
        c->rem = malloc(n * sizeof(*c->rem));
        c->cnt = calloc(nn, sizeof(*c->cnt));
        c->pl = malloc(nn * sizeof(*c->pl));
        c->cand = malloc(nn / 2 * sizeof(*c->cand));
        c->cand2 = malloc(nn / 2 * sizeof(*c->cand2));
        c->ev = malloc(nd * sizeof(*c->ev));
        c->pc = malloc(nd * sizeof(*c->pc));
        c->pi = malloc(nd * sizeof(*c->pi));
        c->org = malloc(nd * sizeof(*c->org));
        c->adjs = malloc((n + 1) * sizeof(*c->adjs));
        c->adj = malloc(2 * (size_t)n * sizeof(*c->adj));
        c->odd = malloc(n * sizeof(*c->odd));
        c->oddx = malloc(n * sizeof(*c->oddx));
        c->oddo = malloc(n * sizeof(*c->oddo));
    }
    if (!c->size || !c->start || !c->mem || !c->rem || !c->cnt || !c->pl ||
        !c->cand || !c->cand2 || !c->ev || !c->pc || !c->pi || !c->org ||
        !c->adjs || !c->adj || !c->odd || !c->oddx || !c->oddo) {
        stragglar_cls_free(c);
        return CCS_ERR_NOMEM;
    }
    return CCS_OK;
}

/* Class of every rank that pairs this round: non-stragglers by their
 * active holdings and whether they have met the straggler, and the
 * straggler in a class of its own once it is free (r >= m). */
static void cls_build(srch_t *s, uint32_t r)
{
    srch_cls_t *c = &s->cls;
    uint32_t n = s->n, m = s->m, aw = s->aw, nr = r < m ? m : n;

    for (uint32_t i = 0; i < c->tabsz; i++)
        c->tab[i] = -1;
    c->C = 0;
    for (uint32_t u = 0; u < nr; u++) {
        const uint64_t *row = &s->abits[(size_t)u * aw];
        uint32_t flag = u == n - 1 ? 2u : (s->xround[u] < 0 ? 1u : 0u);
        uint64_t h = flag + 1;
        uint32_t slot;
        for (uint32_t k = 0; k < aw; k++)
            h = (h ^ row[k]) * UINT64_C(0x100000001B3);
        slot = (uint32_t)(h ^ (h >> 29)) & (c->tabsz - 1);
        for (;; slot = (slot + 1) & (c->tabsz - 1)) {
            int32_t id = c->tab[slot];
            uint32_t v;
            if (id < 0) {
                c->tab[slot] = (int32_t)c->C;
                c->rep[c->C] = u;
                if (c->size != NULL)
                    c->size[c->C] = 0;
                c->of[u] = c->C++;
                break;
            }
            v = c->rep[id];
            if ((v == n - 1 ? 2u : (s->xround[v] < 0 ? 1u : 0u)) == flag &&
                memcmp(&s->abits[(size_t)v * aw], row,
                       aw * sizeof(*row)) == 0) {
                c->of[u] = (uint32_t)id;
                break;
            }
        }
        if (c->size != NULL)
            c->size[c->of[u]]++;
    }
    if (c->size == NULL)
        return;
    /* Members by class (the b-matching picks ranks from these). */
    c->start[0] = 0;
    for (uint32_t i = 0; i < c->C; i++)
        c->start[i + 1] = c->start[i] + c->size[i];
    for (uint32_t i = 0; i < c->C; i++)
        c->rem[i] = 0; /* fill cursor */
    for (uint32_t u = 0; u < nr; u++) {
        uint32_t i = c->of[u];
        c->mem[c->start[i] + (uint32_t)c->rem[i]++] = u;
    }
}

/* Classes of this round (s->cls) and the weight of every pair of
 * classes with the chunk each sends (s->w and s->ch, stride C; 0 and -1
 * for no useful transfer): the per-pair formula of stragglar_srch_round
 * evaluated on one member of each class.  The straggler's own edges in
 * rounds r < m (the exchange) are not here: it is not in a class then. */
void stragglar_cls_weigh(srch_t *s, uint32_t r)
{
    srch_cls_t *c = &s->cls;
    uint32_t C, sigma = s->n - 1;

    cls_build(s, r);
    C = c->C;
    for (uint32_t i = 0; i < C; i++) {
        uint32_t a = c->rep[i];
        s->w[(size_t)i * C + i] = 0;
        s->ch[(size_t)i * C + i] = -1;
        for (uint32_t j = i + 1; j < C; j++) {
            uint32_t b = c->rep[j];
            int32_t ca = b == sigma ? -1 : stragglar_srch_pick(s, a, b);
            int32_t cb = a == sigma ? -1 : stragglar_srch_pick(s, b, a);
            int64_t wt = 0;
            if (ca >= 0)
                wt += SRCH_WR + s->cprio[ca] + s->rprio[b];
            if (cb >= 0)
                wt += SRCH_WR + s->cprio[cb] + s->rprio[a];
            if (s->cmax >= 0 && ca >= 0 && cb >= 0 &&
                (ca == s->cmax) != (cb == s->cmax))
                wt += s->steer;
            s->w[(size_t)i * C + j] = s->w[(size_t)j * C + i] = wt;
            s->ch[(size_t)i * C + j] = ca;
            s->ch[(size_t)j * C + i] = cb;
        }
    }
}
