/*
 * tune_cand.c - the candidates of the tune search (tune.c): one
 * algorithm's axis of configurations laid out, and each configuration
 * built (synthesized, verified, prepared for the simulator) and scored
 * at a size on demand, with the score cached.
 */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "algo.h"
#include "tune.h"
#include "tune_int.h"
#include "verify.h"

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
    free(k->chan);
}

void tune_algo_free(talgo_t *a)
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

/* One run of candidate cd at `bytes` under so's protocol, with the
 * channel axis: a schedule that lays out its own channels (lanes= param:
 * nccl-ring, nccl-tree) runs at those; with --channels the plan runs on
 * that many; otherwise on the fewest channels under which no transfer is
 * slowed (the uncapped run's peak_channels, rounded up, sim.h), at most
 * TUNE_MAX_CHANNELS: more channels cost nothing in the model but take
 * thread blocks (SMs) from the application.  *ch is 0 where no
 * per-channel cap applies (ideal protocol, NVLS). */
static ccs_status_t eval_channels(const tctx_t *c, const tcand_t *cd,
                                  double bytes, sim_opts_t *so, double *tm,
                                  uint32_t *ch, ccs_err_t *e)
{
    sim_result_t res;
    char v[16];
    ccs_status_t st;
    bool own = sim_params_get(cd->s->params, "lanes", v, sizeof(v));
    double need;

    so->channels = own ? 0 : c->o->channels;
    st = sim_exec(cd->sim, bytes, so, &res, e);
    if (st != CCS_OK)
        return st;
    *tm = res.time_s;
    need = ceil(res.peak_channels - 1e-9);
    sim_result_free(&res);
    *ch = 0;
    if (need <= 0)
        return CCS_OK;          /* no cap applies */
    if (own) {
        *ch = sim_params_get(cd->s->params, "channels", v, sizeof(v))
                  ? (uint32_t)strtoul(v, NULL, 10) : 1;
        return CCS_OK;
    }
    if (c->o->channels > 0) {
        *ch = c->o->channels;
        return CCS_OK;
    }
    if (need <= TUNE_MAX_CHANNELS) {
        *ch = (uint32_t)need;   /* caps never bind: the same time */
        return CCS_OK;
    }
    so->channels = TUNE_MAX_CHANNELS;
    st = sim_exec(cd->sim, bytes, so, &res, e);
    if (st != CCS_OK)
        return st;
    *tm = res.time_s;
    *ch = TUNE_MAX_CHANNELS;
    sim_result_free(&res);
    return CCS_OK;
}

/* Simulated time of candidate k of a at size i (cached).  INFINITY for a
 * candidate that cannot run. */
ccs_status_t tune_eval(tctx_t *c, talgo_t *a, uint32_t k, uint32_t i,
                       double *out)
{
    tcand_t *cd = &a->cand[k];
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
     * (or the one protocol asked for), and at its channel count. */
    cd->t[i] = INFINITY;
    for (int pr = SIM_PROTO_LL; pr <= SIM_PROTO_SIMPLE; pr++) {
        sim_opts_t so = c->so;
        uint32_t ch = 0;
        double tm;

        so.proto = c->o->proto == SIM_PROTO_PLAN ? (sim_proto_t)pr
                                                 : c->o->proto;
        st = eval_channels(c, cd, c->sizes[i], &so, &tm, &ch, &e);
        if (st != CCS_OK) {
            ccs_err_prefix(&e, "%s at %.0f bytes: ", a->desc->name,
                           c->sizes[i]);
            keep_err(c, &e);
            return st;
        }
        if (tm < cd->t[i]) {
            cd->t[i] = tm;
            cd->proto[i] = (uint8_t)so.proto;
            cd->chan[i] = (uint8_t)ch;
        }
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
    k->chan = calloc(c->nsizes, sizeof(*k->chan));     /* owned by k */
    if (k->t == NULL || k->proto == NULL || k->chan == NULL)
        return ccs_err_set(c->err, CCS_ERR_NOMEM, "tune: out of memory");
    for (uint32_t i = 0; i < c->nsizes; i++)
        k->t[i] = -1;
    return CCS_OK;
}

/* Try one more configuration as a->cand[*n]: kept (*n grows) when it is
 * feasible, freed when not.  On an error the slot stays counted in
 * a->ncand so that tune_algo_free releases what it holds. */
static ccs_status_t cand_add(tctx_t *c, talgo_t *a, uint32_t *n,
                             uint32_t pipeline, uint32_t chunks_param,
                             uint64_t eff)
{
    ccs_status_t st;
    bool ok;

    st = cand_init(c, &a->cand[*n], pipeline, chunks_param, eff);
    if (st == CCS_OK)
        st = cand_feasible(c, a, &a->cand[*n], &ok);
    if (st != CCS_OK) {
        a->ncand = *n + 1;
        return st;
    }
    if (ok)
        (*n)++;
    else
        cand_free(&a->cand[*n]);
    return CCS_OK;
}

/* Build the default configuration and lay out the algorithm's axis. */
ccs_status_t tune_algo_setup(tctx_t *c, talgo_t *a, const uint32_t *pipes,
                             uint32_t npipes)
{
    const tune_opts_t *o = c->o;
    uint32_t maxc = npipes + o->nchunks + 3, n = 0, c0;
    tcand_t def;
    ccs_status_t st;

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
        st = cand_add(c, a, &n, pipes[j], 0, (uint64_t)c0 * pipes[j]);
        if (st != CCS_OK)
            return st;
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
        st = cand_add(c, a, &n, 1, cc, cc);
        if (st != CCS_OK)
            return st;
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

