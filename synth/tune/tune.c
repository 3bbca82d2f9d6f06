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
 * This file is the search and its result; the table, CSV, JSON and plan
 * set writers are tune_write.c.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "format.h"
#include "planset.h"
#include "algo.h"
#include "baseline.h"
#include "sim_cost.h"
#include "tune.h"
#include "verify.h"

/* Algorithms left out of the default list because one synthesis may take
 * long (a solver run); they are tuned when named in opts.algos. */
static const char *const tune_slow_algos[] = { "milp" };

#define NONE UINT32_MAX

enum { PH_1, PH_2, PH_3, PH_REF };

typedef struct tcand {          /* one point of an algorithm's axis */
    uint32_t pipeline;
    uint32_t chunks_param;      /* 0: chunk count from the pipeline */
    uint64_t eff;               /* chunk count it stands for (ordering) */
    int state;                  /* 0 not built, 1 ready, 2 cannot run */
    ccs_sched_t *s;             /* owned */
    sim_t *sim;                 /* owned; borrows s */
    double *t;                  /* owned, [nsizes]: < 0 not simulated,
                                   INFINITY cannot run */
    uint8_t *proto;             /* owned, [nsizes]: protocol of t[i] */
} tcand_t;

typedef struct talgo {
    const algo_desc_t *desc;
    bool runs;                  /* its default configuration was built */
    uint32_t ncand;
    uint32_t def;               /* index of pipeline 1, chunks 0 */
    tcand_t *cand;              /* owned, [ncand] ascending eff */
    uint32_t *best;             /* owned, [nsizes] refined optimum at the
                                   coarse sizes it was kept at, else NONE */
    uint8_t *keep;              /* owned, [nsizes] kept after phase 2 */
} talgo_t;

typedef struct tctx {
    const topo_t *t;
    const tune_opts_t *o;
    algo_params_t base;
    sim_opts_t so;
    double *sizes;              /* owned, ascending, unique */
    uint32_t nsizes;
    uint8_t *coarse;            /* owned, [nsizes] */
    talgo_t *algos;             /* owned, [nalgos] */
    uint32_t nalgos;
    tune_stats_t st;
    int phase;
    ccs_err_t *err;
} tctx_t;

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

static void note(const tctx_t *c, const char *fmt, ...) CCS_PRINTF(2, 3);

/* A line into opts.report (NULL: quiet). */
static void note(const tctx_t *c, const char *fmt, ...)
{
    va_list ap;

    if (c->o->report == NULL)
        return;
    va_start(ap, fmt);
    vfprintf(c->o->report, fmt, ap);
    va_end(ap);
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

/* ---- candidates ---- */

/* Pass a callee's message on to the caller's ccs_err_t (which may be
 * NULL, as err.h allows). */
static void keep_err(const tctx_t *c, const ccs_err_t *e)
{
    if (c->err != NULL)
        *c->err = *e;
}

static void cand_free(tcand_t *k)
{
    sim_destroy(k->sim);        /* before the schedule it borrows */
    ccs_sched_destroy(k->s);
    free(k->t);
    free(k->proto);
}

static void algo_free(talgo_t *a)
{
    for (uint32_t k = 0; a->cand != NULL && k < a->ncand; k++)
        cand_free(&a->cand[k]);
    free(a->cand);
    free(a->best);
    free(a->keep);
}

static void cand_params(const tctx_t *c, const tcand_t *k, algo_params_t *p)
{
    *p = c->base;
    p->pipeline = k->pipeline;
    p->nchunks = k->chunks_param;
}

/* Synthesize, verify and prepare one candidate.  A candidate the
 * algorithm refuses, or whose schedule fails verification, is marked as
 * unable to run (with a note) and is never chosen. */
static ccs_status_t cand_build(tctx_t *c, talgo_t *a, tcand_t *k)
{
    algo_params_t p;
    ccs_err_t e = { { 0 } };
    ccs_status_t st;
    char what[96];

    cand_params(c, k, &p);
    snprintf(what, sizeof(what), "%s (pipeline %u, chunks %u)",
             a->desc->name, k->pipeline, k->chunks_param);
    st = algo_synthesize(a->desc->name, c->t, &p, &k->s, &e);
    if (st == CCS_ERR_UNSUPPORTED) {
        note(c, "note: %s left out: %s\n", what, ccs_err_msg(&e, st));
        k->state = 2;
        return CCS_OK;
    }
    if (st != CCS_OK) {
        ccs_err_prefix(&e, "%s: ", what);
        keep_err(c, &e);
        return st;
    }
    c->st.built++;
    st = verify_sched(k->s, NULL, &e);
    if (st != CCS_OK) {
        note(c, "note: %s left out: failed verification: %s\n", what,
             ccs_err_msg(&e, st));
        ccs_sched_destroy(k->s);
        k->s = NULL;
        k->state = 2;
        return CCS_OK;
    }
    st = sim_create(k->s, c->t, &c->so, &k->sim, &e);
    if (st != CCS_OK) {
        ccs_err_prefix(&e, "%s: ", what);
        keep_err(c, &e);
        return st;
    }
    k->state = 1;
    return CCS_OK;
}

/* Simulated time of candidate k of a at size i (cached).  INFINITY for a
 * candidate that cannot run. */
static ccs_status_t eval(tctx_t *c, talgo_t *a, uint32_t k, uint32_t i,
                         double *out)
{
    tcand_t *cd = &a->cand[k];
    sim_result_t res;
    ccs_err_t e = { { 0 } };
    ccs_status_t st;

    if (cd->t[i] >= 0) {
        *out = cd->t[i];
        return CCS_OK;
    }
    if (cd->state == 0) {
        st = cand_build(c, a, cd);
        if (st != CCS_OK)
            return st;
    }
    if (cd->state == 2) {
        cd->t[i] = INFINITY;
        *out = INFINITY;
        return CCS_OK;
    }
    /* The protocol axis: each configuration at its best protocol here
     * (or the one protocol asked for). */
    cd->t[i] = INFINITY;
    for (int pr = SIM_PROTO_LL; pr <= SIM_PROTO_SIMPLE; pr++) {
        sim_opts_t so = c->so;

        so.proto = c->o->proto == SIM_PROTO_PLAN ? (sim_proto_t)pr
                                                 : c->o->proto;
        st = sim_exec(cd->sim, c->sizes[i], &so, &res, &e);
        if (st != CCS_OK) {
            ccs_err_prefix(&e, "%s at %.0f bytes: ", a->desc->name,
                           c->sizes[i]);
            keep_err(c, &e);
            return st;
        }
        if (res.time_s < cd->t[i]) {
            cd->t[i] = res.time_s;
            cd->proto[i] = (uint8_t)so.proto;
        }
        sim_result_free(&res);
        if (c->o->proto != SIM_PROTO_PLAN)
            break;
    }
    if (c->phase == PH_REF) {
        c->st.ref_evals++;
    } else {
        c->st.evals++;
        c->st.evals_phase[c->phase]++;
    }
    *out = cd->t[i];
    return CCS_OK;
}

/* Whether the algorithm accepts candidate k (its check, no synthesis). */
static ccs_status_t cand_feasible(const tctx_t *c, const talgo_t *a,
                                  const tcand_t *k, bool *ok)
{
    algo_params_t p;
    ccs_err_t e = { { 0 } };
    ccs_status_t st = CCS_OK;

    cand_params(c, k, &p);
    if (a->desc->check != NULL)
        st = a->desc->check(c->t, &p, &e);
    *ok = st == CCS_OK;
    if (st == CCS_ERR_UNSUPPORTED)
        st = CCS_OK;
    else if (st != CCS_OK)
        keep_err(c, &e);
    return st;
}

static ccs_status_t cand_init(tctx_t *c, tcand_t *k, uint32_t pipeline,
                              uint32_t chunks_param, uint64_t eff)
{
    memset(k, 0, sizeof(*k));
    k->pipeline = pipeline;
    k->chunks_param = chunks_param;
    k->eff = eff;
    k->t = malloc(c->nsizes * sizeof(*k->t));   /* owned by k */
    k->proto = calloc(c->nsizes, sizeof(*k->proto));   /* owned by k */
    if (k->t == NULL || k->proto == NULL)
        return ccs_err_set(c->err, CCS_ERR_NOMEM, "tune: out of memory");
    for (uint32_t i = 0; i < c->nsizes; i++)
        k->t[i] = -1;
    return CCS_OK;
}

/* Build the default configuration and lay out the algorithm's axis. */
static ccs_status_t algo_setup(tctx_t *c, talgo_t *a, const uint32_t *pipes,
                               uint32_t npipes)
{
    const tune_opts_t *o = c->o;
    uint32_t maxc = npipes + o->nchunks + 3, n = 0, c0;
    tcand_t def;
    ccs_status_t st;
    bool ok;

    a->best = malloc(c->nsizes * sizeof(*a->best));   /* owned by a */
    a->keep = calloc(c->nsizes, 1);                   /* owned by a */
    if (a->best == NULL || a->keep == NULL)
        return ccs_err_set(c->err, CCS_ERR_NOMEM, "tune: out of memory");
    for (uint32_t i = 0; i < c->nsizes; i++)
        a->best[i] = NONE;
    if ((a->desc->colls & ALGO_COLL_BIT(o->coll)) == 0) {
        note(c, "note: %s left out: it does not implement %s\n",
             a->desc->name, ccs_coll_str(o->coll));
        return CCS_OK;
    }
    st = cand_init(c, &def, 1, 0, 0);
    if (st != CCS_OK)
        return st;
    /* The default is built in both modes: its chunk count C0 places the
     * other chunkings on the axis. */
    st = cand_build(c, a, &def);
    if (st != CCS_OK || def.state != 1) {
        cand_free(&def);
        return st;
    }
    c0 = def.s->nchunks;
    def.eff = c0;
    a->cand = calloc(maxc, sizeof(*a->cand));   /* owned by a */
    if (a->cand == NULL) {
        cand_free(&def);
        return ccs_err_set(c->err, CCS_ERR_NOMEM, "tune: out of memory");
    }
    a->cand[n++] = def;   /* ownership moves into the axis */
    for (uint32_t j = 0; j < npipes; j++) {
        if (pipes[j] == 1)
            continue;
        st = cand_init(c, &a->cand[n], pipes[j], 0, (uint64_t)c0 * pipes[j]);
        if (st == CCS_OK)
            st = cand_feasible(c, a, &a->cand[n], &ok);
        if (st != CCS_OK) {
            a->ncand = n + 1;
            return st;
        }
        if (ok)
            n++;
        else
            cand_free(&a->cand[n]);
    }
    for (uint32_t j = 0; j < o->nchunks + 3; j++) {
        uint32_t cc, div;
        bool dup = false;

        if (j < o->nchunks) {
            cc = o->chunks[j];
        } else {
            div = 2u << (j - o->nchunks);   /* C0/2, C0/4, C0/8 */
            if (!o->chunks_auto || c0 % div != 0)
                continue;
            cc = c0 / div;
        }
        for (uint32_t q = 0; q < n && !dup; q++)
            dup = a->cand[q].eff == cc;
        if (dup || cc == 0)
            continue;
        st = cand_init(c, &a->cand[n], 1, cc, cc);
        if (st == CCS_OK)
            st = cand_feasible(c, a, &a->cand[n], &ok);
        if (st != CCS_OK) {
            a->ncand = n + 1;
            return st;
        }
        if (ok)
            n++;
        else
            cand_free(&a->cand[n]);
    }
    /* Insertion sort by chunk count; a pipeline beats an explicit count
     * for the same count (dropped above), so the order is total. */
    for (uint32_t i = 1; i < n; i++) {
        tcand_t x = a->cand[i];
        uint32_t j = i;
        while (j > 0 && a->cand[j - 1].eff > x.eff) {
            a->cand[j] = a->cand[j - 1];
            j--;
        }
        a->cand[j] = x;
    }
    a->ncand = n;
    for (uint32_t k = 0; k < n; k++)
        if (a->cand[k].pipeline == 1 && a->cand[k].chunks_param == 0)
            a->def = k;
    a->runs = true;
    return CCS_OK;
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
        if ((st = eval(c, a, k + (uint32_t)dir, i, &tn)) != CCS_OK)
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

    if ((st = eval(c, a, start, i, &tc)) != CCS_OK)
        return st;
    if (start > 0 && (st = eval(c, a, start - 1, i, &tl)) != CCS_OK)
        return st;
    if (start + 1 < a->ncand &&
        (st = eval(c, a, start + 1, i, &tr)) != CCS_OK)
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
                if ((st = eval(c, &c->algos[a], k, i, &t)) != CCS_OK)
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
            if ((st = eval(c, al, al->def, i, &t)) != CCS_OK)
                return st;
            best = fmin(best, t);
            if ((st = eval(c, al, 0, i, &t)) != CCS_OK)
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
                if ((st = eval(c, al, prev, i, &t)) != CCS_OK)
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
                if ((st = eval(c, al, k, i, &t)) != CCS_OK)
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

/* ---- result ---- */

void tune_result_destroy(tune_result_t *r)
{
    if (r == NULL)
        return;
    for (uint32_t i = 0; r->plans != NULL && i < r->nconfigs; i++)
        ccs_sched_destroy(r->plans[i]);
    for (uint32_t i = 0; r->pruned != NULL && i < r->stats.nalgos_pruned;
         i++)
        free(r->pruned[i]);
    free(r->pruned);
    free(r->plans);
    free(r->configs);
    free(r->points);
    free(r->ranges);
    free(r);
}

/* "key=value" lines of a plan: how to regenerate it and what it won. */
static ccs_status_t plan_params(const tctx_t *c, const tune_result_t *r,
                                uint32_t cfg, ccs_sched_t *s, ccs_err_t *err)
{
    const tune_config_t *g = &r->configs[cfg];
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);   /* text owned here */
    bool first = true;
    ccs_status_t st;

    if (f == NULL)
        return ccs_err_set(err, CCS_ERR_NOMEM, "tune: out of memory");
    fprintf(f, "algo=%s\ncoll=%s\ntopo=%s\n", g->algo,
            ccs_coll_str(r->coll),
            c->o->topo_spec != NULL ? c->o->topo_spec : c->t->name);
    if (ccs_coll_rooted(r->coll))
        fprintf(f, "root=%d\n", c->o->root);
    if (c->o->straggler >= 0)
        fprintf(f, "straggler=%d\n", c->o->straggler);
    if (g->pipeline > 1)
        fprintf(f, "pipeline=%u\n", g->pipeline);
    if (g->chunks_param > 0)
        fprintf(f, "chunks=%u\n", g->chunks_param);
    if (g->proto != SIM_PROTO_PLAN && g->proto != SIM_PROTO_IDEAL)
        fprintf(f, "proto=%s\n", sim_proto_str(g->proto));
    /* What the algorithm recorded (channels, nvls) travels too. */
    if (s->params != NULL)
        fprintf(f, "%s", s->params);
    fprintf(f, "tuned=");
    for (uint32_t k = 0; k < r->nranges; k++) {
        if (r->ranges[k].config != cfg)
            continue;
        fprintf(f, "%s%.0f-%.0f", first ? "" : ",",
                r->points[r->ranges[k].first].size_bytes,
                r->points[r->ranges[k].last].size_bytes);
        first = false;
    }
    fprintf(f, "\n");
    if (fclose(f) != 0 || text == NULL) {
        free(text);
        return ccs_err_set(err, CCS_ERR_NOMEM, "tune: out of memory");
    }
    st = ccs_sched_set_params(s, text, err);
    free(text);
    return st;
}

static ccs_status_t assemble(tctx_t *c, tune_result_t *r)
{
    uint32_t *ca = NULL, *ck = NULL;   /* owned here: winner per size */
    ccs_status_t st = CCS_OK;
    talgo_t *ring = NULL;
    double t;

    r->points = calloc(c->nsizes, sizeof(*r->points));
    r->configs = calloc(c->nsizes, sizeof(*r->configs));
    r->plans = calloc(c->nsizes, sizeof(*r->plans));
    r->ranges = calloc(c->nsizes, sizeof(*r->ranges));
    r->pruned = calloc(c->nalgos, sizeof(*r->pruned));
    ca = malloc(c->nsizes * sizeof(*ca));
    ck = malloc(c->nsizes * sizeof(*ck));
    if (r->points == NULL || r->configs == NULL || r->plans == NULL ||
        r->ranges == NULL || r->pruned == NULL || ca == NULL || ck == NULL) {
        st = ccs_err_set(c->err, CCS_ERR_NOMEM, "tune: out of memory");
        goto cleanup;
    }
    r->npoints = c->nsizes;
    for (uint32_t a = 0; a < c->nalgos; a++)
        if (c->algos[a].runs && strcmp(c->algos[a].desc->name, "ring") == 0)
            ring = &c->algos[a];
    c->phase = PH_REF;
    for (uint32_t i = 0; i < c->nsizes; i++) {
        double bt = INFINITY;
        ca[i] = ck[i] = NONE;
        /* Strictly faster wins: ties go to the earlier algorithm in the
         * list, then the fewer chunks. */
        for (uint32_t a = 0; a < c->nalgos; a++)
            for (uint32_t k = 0; k < c->algos[a].ncand; k++) {
                t = c->algos[a].cand[k].t[i];
                if (t >= 0 && t < bt) {
                    bt = t;
                    ca[i] = a;
                    ck[i] = k;
                }
            }
        if (ca[i] == NONE) {
            st = ccs_err_set(c->err, CCS_ERR_INTERNAL, "no candidate "
                             "ran at %.0f bytes", c->sizes[i]);
            goto cleanup;
        }
        r->points[i].size_bytes = c->sizes[i];
        r->points[i].time_s = bt;
        if (ring != NULL) {
            if ((st = eval(c, ring, ring->def, i, &t)) != CCS_OK)
                goto cleanup;
            r->points[i].ring_time_s = t;
        }
    }
    /* Distinct winners in first-win order, then ranges. */
    for (uint32_t i = 0; i < c->nsizes; i++) {
        uint32_t g = NONE;
        for (uint32_t j = 0; j < i && g == NONE; j++)
            if (ca[j] == ca[i] && ck[j] == ck[i] &&
                c->algos[ca[j]].cand[ck[j]].proto[j] ==
                    c->algos[ca[i]].cand[ck[i]].proto[i])
                g = r->points[j].config;
        if (g == NONE) {
            tcand_t *cd = &c->algos[ca[i]].cand[ck[i]];
            tune_config_t *cf = &r->configs[r->nconfigs];
            g = r->nconfigs++;
            snprintf(cf->algo, sizeof(cf->algo), "%s",
                     c->algos[ca[i]].desc->name);
            cf->pipeline = cd->pipeline;
            cf->chunks_param = cd->chunks_param;
            cf->nchunks = cd->s->nchunks;
            cf->nsteps = cd->s->nsteps;
            cf->proto = (sim_proto_t)cd->proto[i];
            if (cd->chunks_param > 0)
                snprintf(cf->file, sizeof(cf->file), "tune-%s-%s-c%u-%s.ccs",
                         ccs_coll_str(c->o->coll), cf->algo,
                         cd->chunks_param, sim_proto_str(cf->proto));
            else
                snprintf(cf->file, sizeof(cf->file), "tune-%s-%s-p%u-%s.ccs",
                         ccs_coll_str(c->o->coll), cf->algo, cd->pipeline,
                         sim_proto_str(cf->proto));
        }
        r->points[i].config = g;
        if (i == 0 || r->points[i - 1].config != g) {
            r->ranges[r->nranges].first = i;
            r->ranges[r->nranges].config = g;
            r->nranges++;
        }
        r->ranges[r->nranges - 1].last = i;
        r->points[i].range = r->nranges - 1;
    }
    /* The winners' schedules are copied into the result: one schedule
     * may win under two protocols, which are two plans. */
    for (uint32_t i = 0; i < c->nsizes; i++) {
        tcand_t *cd = &c->algos[ca[i]].cand[ck[i]];
        uint32_t g = r->points[i].config;
        if (r->plans[g] != NULL)
            continue;
        if ((st = ccs_sched_clone(cd->s, &r->plans[g], c->err)) != CCS_OK)
            goto cleanup;
        if ((st = plan_params(c, r, g, r->plans[g], c->err)) != CCS_OK)
            goto cleanup;
    }
    for (uint32_t a = 0; a < c->nalgos; a++) {
        bool kept = c->o->full_grid;
        if (!c->algos[a].runs)
            continue;
        for (uint32_t i = 0; i < c->nsizes && !kept; i++)
            kept = c->algos[a].keep[i];
        if (kept)
            continue;
        r->pruned[r->stats.nalgos_pruned] = strdup(c->algos[a].desc->name);
        if (r->pruned[r->stats.nalgos_pruned] == NULL) {
            st = ccs_err_set(c->err, CCS_ERR_NOMEM, "tune: out of memory");
            goto cleanup;
        }
        r->stats.nalgos_pruned++;
    }

cleanup:
    free(ca);
    free(ck);
    return st;
}

/* The nccl baseline at every size (baseline.h), same straggler and
 * protocol rule as the search; absent (0) where NCCL has no algorithm. */
static ccs_status_t nccl_column(tctx_t *c, tune_result_t *r)
{
    base_point_t *b = NULL;     /* owned here */
    sim_opts_t so = c->so;
    ccs_status_t st;

    if (!base_applies(c->o->coll))
        return CCS_OK;
    b = calloc(c->nsizes, sizeof(*b));
    if (b == NULL)
        return ccs_err_set(c->err, CCS_ERR_NOMEM, "tune: out of memory");
    so.proto = c->o->proto;
    st = base_nccl(c->t, &c->base, &so, c->sizes, c->nsizes, b, c->err);
    if (st == CCS_ERR_UNSUPPORTED)
        st = CCS_OK;
    for (uint32_t i = 0; st == CCS_OK && i < c->nsizes; i++) {
        r->points[i].nccl_time_s = isfinite(b[i].time_s) ? b[i].time_s : 0;
        snprintf(r->points[i].nccl_algo, sizeof(r->points[i].nccl_algo),
                 "%s", b[i].algo);
    }
    free(b);
    return st;
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
        if ((st = algo_setup(&c, &c.algos[a], pipes, npipes)) != CCS_OK)
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
    st = assemble(&c, r);
    if (st != CCS_OK)
        goto cleanup;
    st = nccl_column(&c, r);
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
        algo_free(&c.algos[a]);
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
