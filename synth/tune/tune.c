/*
 * tune.c - TuCCL-style configuration tuning (tune.h, docs/tuning.md).
 *
 * TuCCL (tuccl.txt) tunes a communication library's configuration per
 * (collective, buffer size, topology) into a lookup table, and finds each
 * entry with MRACO (Sec. III-D, Algorithm 1): many configurations scored
 * cheaply, the weak ones dropped early, the budget moved to the survivors.
 * Here a configuration is an algorithm of the registry (algo.h) and its
 * chunking (pipeline factor or chunk count), a score is one simulation of
 * a verified schedule at one size (sim_exec), and the "resource" that
 * grows from phase to phase is the set of sizes an algorithm is scored
 * at: a coarse subset first, every size in its competitive region last.
 *
 * The chunk-count axis.  For every algorithm of the registry a pipeline
 * factor p and a forced chunk count C0 * p give the same schedule (C0 the
 * default count), so the chunkings of an algorithm form one axis ordered
 * by chunk count: the explicit counts below C0 (fewer, larger chunks:
 * fewer steps, e.g. dbtree's pipeline depth) and then C0 * p.  Along it
 * the simulated time is in practice unimodal (latency grows with the
 * chunk count, pipelining gain falls), which is what makes a hill climb
 * enough, and the best point moves right as the size grows, which is what
 * lets phase 3 look only between the two neighbouring optima.
 *
 * This file is the search and tune_run; the candidates (building and
 * scoring a configuration) are tune_cand.c, the result (winners, plans,
 * the nccl baseline column) tune_result.c, and the table, CSV, JSON and
 * plan set writers tune_write.c.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "planset.h"
#include "algo.h"
#include "baseline.h"
#include "sim_cost.h"
#include "tune.h"
#include "tune_int.h"

/* Algorithms left out of the default list because one synthesis may take
 * long (a solver run); they are tuned when named in opts.algos. */
static const char *const tune_slow_algos[] = { "milp" };

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void tune_opts_init(tune_opts_t *o)
{
    memset(o, 0, sizeof(*o));
    o->coll = CCS_COLL_ALLREDUCE;
    o->root = 0;
    o->chunks_auto = true;
    o->prune = 0.25;
    o->coarse_stride = 3;
    o->straggler = -1;
    o->elem_bytes = 4;
    o->mode = SIM_MODE_RANK;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* ---- the search ---- */

/* From axis point k (already evaluated at size i), step in direction dir
 * while the time improves; *out (may be NULL) = where it stopped. */
static ccs_status_t walk(tctx_t *c, talgo_t *a, uint32_t i, uint32_t k,
                         int dir, uint32_t *out)
{
    double tc = a->cand[k].t[i], tn;
    ccs_status_t st;

    while ((dir < 0 && k > 0) || (dir > 0 && k + 1 < a->ncand)) {
        if ((st = tune_eval(c, a, k + (uint32_t)dir, i, &tn)) != CCS_OK)
            return st;
        if (!(tn < tc))
            break;
        k += (uint32_t)dir;
        tc = tn;
    }
    if (out != NULL)
        *out = k;
    return CCS_OK;
}

/* Hill climb along a's axis at size i from `start`: look at both
 * neighbours, then walk towards the better one while it improves.
 * *out = the best index found. */
static ccs_status_t climb(tctx_t *c, talgo_t *a, uint32_t i, uint32_t start,
                          uint32_t *out)
{
    double tc, tl = INFINITY, tr = INFINITY;
    ccs_status_t st;

    if ((st = tune_eval(c, a, start, i, &tc)) != CCS_OK)
        return st;
    if (start > 0 && (st = tune_eval(c, a, start - 1, i, &tl)) != CCS_OK)
        return st;
    if (start + 1 < a->ncand &&
        (st = tune_eval(c, a, start + 1, i, &tr)) != CCS_OK)
        return st;
    if (tl < tc && tl <= tr)
        return walk(c, a, i, start - 1, -1, out);
    if (tr < tc)
        return walk(c, a, i, start + 1, 1, out);
    *out = start;
    return CCS_OK;
}

static ccs_status_t search_full(tctx_t *c)
{
    double t;
    ccs_status_t st;

    c->phase = PH_1;
    for (uint32_t a = 0; a < c->nalgos; a++)
        for (uint32_t k = 0; c->algos[a].runs && k < c->algos[a].ncand; k++)
            for (uint32_t i = 0; i < c->nsizes; i++)
                if ((st = tune_eval(c, &c->algos[a], k, i, &t)) != CCS_OK)
                    return st;
    return CCS_OK;
}

static ccs_status_t search_pruned(tctx_t *c)
{
    const double keep_f = 1.0 + c->o->prune;
    double t, best;
    ccs_status_t st;

    /* Phase 1: each algorithm at its default and at its coarsest
     * chunking (axis point 0: fewest steps, the one small sizes favour;
     * the same point for most algorithms) on the coarse sizes; keep what
     * is close to the best there. */
    c->phase = PH_1;
    for (uint32_t i = 0; i < c->nsizes; i++) {
        if (!c->coarse[i])
            continue;
        best = INFINITY;
        for (uint32_t a = 0; a < c->nalgos; a++) {
            talgo_t *al = &c->algos[a];
            if (!al->runs)
                continue;
            if ((st = tune_eval(c, al, al->def, i, &t)) != CCS_OK)
                return st;
            best = fmin(best, t);
            if ((st = tune_eval(c, al, 0, i, &t)) != CCS_OK)
                return st;
            best = fmin(best, t);
        }
        for (uint32_t a = 0; a < c->nalgos; a++) {
            talgo_t *al = &c->algos[a];
            if (al->runs && fmin(al->cand[al->def].t[i], al->cand[0].t[i]) <=
                                keep_f * best)
                al->keep[i] = 1;
        }
    }
    /* Phase 2: refine the kept ones' chunking at the coarse sizes by a
     * hill climb from the best of the screened points and the previous
     * coarse size's optimum; then prune again on the refined times. */
    c->phase = PH_2;
    for (uint32_t a = 0; a < c->nalgos; a++) {
        talgo_t *al = &c->algos[a];
        uint32_t prev = NONE, start;
        for (uint32_t i = 0; al->runs && i < c->nsizes; i++) {
            if (!c->coarse[i] || !al->keep[i])
                continue;
            start = al->cand[0].t[i] < al->cand[al->def].t[i] ? 0 : al->def;
            if (prev != NONE) {
                if ((st = tune_eval(c, al, prev, i, &t)) != CCS_OK)
                    return st;
                if (t < al->cand[start].t[i])
                    start = prev;
            }
            if ((st = climb(c, al, i, start, &al->best[i])) != CCS_OK)
                return st;
            prev = al->best[i];
        }
    }
    for (uint32_t i = 0; i < c->nsizes; i++) {
        if (!c->coarse[i])
            continue;
        best = INFINITY;
        for (uint32_t a = 0; a < c->nalgos; a++) {
            talgo_t *al = &c->algos[a];
            if (al->runs && al->best[i] != NONE)
                best = fmin(best, al->cand[al->best[i]].t[i]);
        }
        for (uint32_t a = 0; a < c->nalgos; a++) {
            talgo_t *al = &c->algos[a];
            al->keep[i] = al->runs && al->best[i] != NONE &&
                          al->cand[al->best[i]].t[i] <= keep_f * best;
        }
    }
    /* Phase 3: the sizes between coarse ones, survivors only, chunkings
     * between the neighbours' optima. */
    c->phase = PH_3;
    for (uint32_t i = 0, cl = 0; i < c->nsizes; i++) {
        uint32_t cr = i;

        if (c->coarse[i]) {
            cl = i;
            continue;
        }
        while (!c->coarse[cr])
            cr++;   /* the last size is coarse */
        for (uint32_t a = 0; a < c->nalgos; a++) {
            talgo_t *al = &c->algos[a];
            uint32_t lo = NONE, hi = 0;
            if (al->keep[cl])
                lo = hi = al->best[cl];
            if (al->keep[cr]) {
                uint32_t b = al->best[cr];
                lo = lo == NONE || b < lo ? b : lo;
                hi = b > hi ? b : hi;
            }
            if (lo == NONE)
                continue;
            for (uint32_t k = lo; k <= hi; k++)
                if ((st = tune_eval(c, al, k, i, &t)) != CCS_OK)
                    return st;
            /* Known on one side only: the optimum moves towards fewer
             * chunks for smaller sizes, so walk from that side's optimum
             * in that direction while it improves. */
            if (al->keep[cl] != al->keep[cr]) {
                st = walk(c, al, i, lo, al->keep[cr] ? -1 : 1, NULL);
                if (st != CCS_OK)
                    return st;
            }
        }
    }
    return CCS_OK;
}


/* Sizes sorted, duplicates dropped; pipelines with 1, sorted, unique. */
static ccs_status_t ctx_init(tctx_t *c, const tune_opts_t *o,
                             uint32_t *pipes, uint32_t *npipes)
{
    static const uint32_t def_pipes[] = { 1, 2, 4, 8 };
    const uint32_t *src = o->npipelines ? o->pipelines : def_pipes;
    uint32_t ns = o->npipelines ? o->npipelines : 4, n = 0;

    if (o->nsizes == 0 || o->sizes == NULL)
        return ccs_err_set(c->err, CCS_ERR_INVALID, "no sizes");
    if (!(o->prune >= 0) || o->coarse_stride == 0)
        return ccs_err_set(c->err, CCS_ERR_INVALID, "the pruning "
                           "threshold must be >= 0 and the coarse stride "
                           ">= 1");
    if (ns + 1 > TUNE_MAX_PIPELINES || o->nchunks > TUNE_MAX_CHUNKS)
        return ccs_err_set(c->err, CCS_ERR_INVALID, "at most %d "
                           "pipeline factors and %d chunk counts",
                           TUNE_MAX_PIPELINES - 1, TUNE_MAX_CHUNKS);
    pipes[n++] = 1;
    for (uint32_t j = 0; j < ns; j++) {
        if (src[j] == 0)
            return ccs_err_set(c->err, CCS_ERR_INVALID,
                               "pipeline factor 0");
        pipes[n++] = src[j];
    }
    qsort(pipes, n, sizeof(*pipes), cmp_u32);
    *npipes = 0;
    for (uint32_t j = 0; j < n; j++)
        if (j == 0 || pipes[j] != pipes[j - 1])
            pipes[(*npipes)++] = pipes[j];
    c->sizes = malloc(o->nsizes * sizeof(*c->sizes));   /* owned by c */
    c->coarse = calloc(o->nsizes, 1);                   /* owned by c */
    if (c->sizes == NULL || c->coarse == NULL)
        return ccs_err_set(c->err, CCS_ERR_NOMEM, "tune: out of memory");
    for (uint32_t i = 0; i < o->nsizes; i++)
        if (!(o->sizes[i] > 0) || !isfinite(o->sizes[i]))
            return ccs_err_set(c->err, CCS_ERR_INVALID, "size %g is "
                               "not a positive number", o->sizes[i]);
    memcpy(c->sizes, o->sizes, o->nsizes * sizeof(*c->sizes));
    qsort(c->sizes, o->nsizes, sizeof(*c->sizes), cmp_double);
    for (uint32_t i = 0; i < o->nsizes; i++) {
        if (i == 0 || c->sizes[i] != c->sizes[c->nsizes - 1])
            c->sizes[c->nsizes++] = c->sizes[i];
    }
    for (uint32_t i = 0; i < c->nsizes; i += o->coarse_stride)
        c->coarse[i] = 1;
    c->coarse[c->nsizes - 1] = 1;
    return CCS_OK;
}

ccs_status_t tune_run(const topo_t *t, const tune_opts_t *o,
                      tune_result_t **out, ccs_err_t *err)
{
    tctx_t c;
    tune_result_t *r = NULL;
    uint32_t pipes[TUNE_MAX_PIPELINES], npipes = 0;
    double t0 = now_s();
    ccs_status_t st;

    memset(&c, 0, sizeof(c));
    c.t = t;
    c.o = o;
    c.err = err;
    st = ctx_init(&c, o, pipes, &npipes);
    if (st != CCS_OK)
        goto cleanup;
    algo_params_init(&c.base);
    c.base.milp.cost = sim_cost_time;  /* the MILP's piece-size check */
    c.base.coll = o->coll;
    c.base.root = o->root;
    c.base.straggler = o->straggler;
    sim_opts_init(&c.so);
    c.so.mode = o->mode;
    c.so.straggler = o->straggler;
    c.so.straggler_delay_s = o->straggler >= 0 ? o->straggler_delay_s : 0;
    c.so.elem_bytes = o->elem_bytes;
    c.so.local_bw_Bps = o->local_bw_Bps;

    /* The algorithm list: as given, or the registry minus slow ones. */
    c.algos = calloc(TUNE_MAX_ALGOS, sizeof(*c.algos));  /* owned by c */
    if (c.algos == NULL) {
        st = ccs_err_set(err, CCS_ERR_NOMEM, "tune: out of memory");
        goto cleanup;
    }
    if (o->nalgos > TUNE_MAX_ALGOS) {
        st = ccs_err_set(err, CCS_ERR_INVALID, "more than %d "
                         "algorithms", TUNE_MAX_ALGOS);
        goto cleanup;
    }
    for (uint32_t j = 0; j < o->nalgos; j++) {
        const algo_desc_t *d = algo_find(o->algos[j]);
        if (d == NULL) {
            st = ccs_err_set(err, CCS_ERR_INVALID, "unknown algorithm "
                             "'%s' (see 'ccsynth list')", o->algos[j]);
            goto cleanup;
        }
        for (uint32_t q = 0; q < c.nalgos; q++)
            if (c.algos[q].desc == d) {
                st = ccs_err_set(err, CCS_ERR_INVALID, "algorithm "
                                 "'%s' listed twice", d->name);
                goto cleanup;
            }
        c.algos[c.nalgos++].desc = d;
    }
    for (int j = 0; o->nalgos == 0 && j < algo_count() &&
                    c.nalgos < TUNE_MAX_ALGOS; j++) {
        bool slow = false;
        for (size_t q = 0; q < sizeof(tune_slow_algos) / sizeof(char *); q++)
            slow = slow || strcmp(algo_at(j)->name, tune_slow_algos[q]) == 0;
        /* NCCL's own algorithms are the baseline the result is measured
         * against, not candidates (name them to tune them). */
        slow = slow || strncmp(algo_at(j)->name, "nccl-", 5) == 0 ||
               strcmp(algo_at(j)->name, "nvls") == 0;
        if (!slow)
            c.algos[c.nalgos++].desc = algo_at(j);
    }
    c.st.nalgos = c.nalgos;
    for (uint32_t a = 0; a < c.nalgos; a++) {
        if ((st = tune_algo_setup(&c, &c.algos[a], pipes, npipes)) != CCS_OK)
            goto cleanup;
        if (c.algos[a].runs) {
            c.st.nalgos_run++;
            c.st.grid_configs += c.algos[a].ncand;
        }
    }
    if (c.st.nalgos_run == 0) {
        st = ccs_err_set(err, CCS_ERR_UNSUPPORTED, "none of the %u "
                         "algorithm(s) can run %s on %s", c.nalgos,
                         ccs_coll_str(o->coll), t->name);
        goto cleanup;
    }
    c.st.grid_evals = c.st.grid_configs * c.nsizes;
    st = o->full_grid ? search_full(&c) : search_pruned(&c);
    if (st != CCS_OK)
        goto cleanup;

    r = calloc(1, sizeof(*r));   /* owned by the caller on success */
    if (r == NULL) {
        st = ccs_err_set(err, CCS_ERR_NOMEM, "tune: out of memory");
        goto cleanup;
    }
    r->coll = o->coll;
    r->nranks = (uint32_t)t->ngpus;
    snprintf(r->topo, sizeof(r->topo), "%s",
             o->topo_spec != NULL ? o->topo_spec : t->name);
    r->topo_fingerprint = t->fingerprint;
    r->elem_bytes = o->elem_bytes ? o->elem_bytes : 1;
    r->mode = o->mode;
    r->straggler = o->straggler;
    r->straggler_delay_s = c.so.straggler_delay_s;
    r->prune = o->prune;
    r->coarse_stride = o->coarse_stride;
    r->full_grid = o->full_grid;
    st = tune_assemble(&c, r);
    if (st != CCS_OK)
        goto cleanup;
    st = tune_nccl_column(&c, r);
    if (st != CCS_OK)
        goto cleanup;
    base_assumptions(t, o->proto, r->assumptions, sizeof(r->assumptions));
    r->stats.nalgos = c.st.nalgos;
    r->stats.nalgos_run = c.st.nalgos_run;
    r->stats.grid_configs = c.st.grid_configs;
    r->stats.grid_evals = c.st.grid_evals;
    r->stats.evals = c.st.evals;
    memcpy(r->stats.evals_phase, c.st.evals_phase,
           sizeof(r->stats.evals_phase));
    r->stats.ref_evals = c.st.ref_evals;
    r->stats.built = c.st.built;
    r->stats.wall_s = now_s() - t0;
    *out = r;
    r = NULL;

cleanup:
    tune_result_destroy(r);
    for (uint32_t a = 0; c.algos != NULL && a < c.nalgos; a++)
        tune_algo_free(&c.algos[a]);
    free(c.algos);
    free(c.sizes);
    free(c.coarse);
    return st;
}

/* Start of range k: the first tuned size it won (what tuning.json's
 * min_bytes says, but for range 0, whose start the rule makes moot). */
static double tune_range_start(const void *ctx, uint32_t k)
{
    const tune_result_t *r = ctx;

    return r->points[r->ranges[k].first].size_bytes;
}

/* The runtime's rule, so that the table and libccs's pick agree. */
uint32_t tune_lookup(const tune_result_t *r, double bytes)
{
    return ccs_planset_pick_range(r->nranges, bytes, tune_range_start, r);
}
