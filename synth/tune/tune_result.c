/*
 * tune_result.c - the result of the tune search (tune.c): the winner at
 * every size, the configurations and their ranges, the winners' plans
 * with their "key=value" parameters, and the nccl baseline column.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "baseline.h"
#include "tune.h"
#include "tune_int.h"

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
    /* The channels it was tuned on, unless the algorithm recorded its
     * own (nccl-ring, nccl-tree: channels, lanes); what the algorithm
     * recorded (channels, nvls) travels too. */
    if (g->channels > 0 && (s->params == NULL ||
                            strstr(s->params, "channels=") == NULL))
        fprintf(f, "channels=%u\n", g->channels);
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

ccs_status_t tune_assemble(tctx_t *c, tune_result_t *r)
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
            if ((st = tune_eval(c, ring, ring->def, i, &t)) != CCS_OK)
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
                    c->algos[ca[i]].cand[ck[i]].proto[i] &&
                c->algos[ca[j]].cand[ck[j]].chan[j] ==
                    c->algos[ca[i]].cand[ck[i]].chan[i])
                g = r->points[j].config;
        if (g == NONE) {
            tcand_t *cd = &c->algos[ca[i]].cand[ck[i]];
            char chs[16];
            tune_config_t *cf = &r->configs[r->nconfigs];
            g = r->nconfigs++;
            snprintf(cf->algo, sizeof(cf->algo), "%s",
                     c->algos[ca[i]].desc->name);
            cf->pipeline = cd->pipeline;
            cf->chunks_param = cd->chunks_param;
            cf->nchunks = cd->s->nchunks;
            cf->nsteps = cd->s->nsteps;
            cf->proto = (sim_proto_t)cd->proto[i];
            cf->channels = cd->chan[i];
            snprintf(chs, sizeof(chs), "-ch%u", cf->channels);
            if (cd->chunks_param > 0)
                snprintf(cf->file, sizeof(cf->file),
                         "tune-%s-%s-c%u-%s%s.ccs",
                         ccs_coll_str(c->o->coll), cf->algo,
                         cd->chunks_param, sim_proto_str(cf->proto),
                         cf->channels > 0 ? chs : "");
            else
                snprintf(cf->file, sizeof(cf->file),
                         "tune-%s-%s-p%u-%s%s.ccs",
                         ccs_coll_str(c->o->coll), cf->algo, cd->pipeline,
                         sim_proto_str(cf->proto),
                         cf->channels > 0 ? chs : "");
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
ccs_status_t tune_nccl_column(tctx_t *c, tune_result_t *r)
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

