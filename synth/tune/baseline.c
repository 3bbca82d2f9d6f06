/*
 * baseline.c - the `nccl` baseline (baseline.h): the best of NCCL's
 * algorithms and protocols at each size.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "baseline.h"
#include "nccl.h"
#include "verify.h"

bool base_applies(ccs_coll_t coll)
{
    return coll == CCS_COLL_ALLREDUCE || coll == CCS_COLL_REDUCESCATTER ||
           coll == CCS_COLL_ALLGATHER;
}

typedef struct bcand {
    const char *algo;
    uint32_t pipeline;
    uint32_t coarse;            /* 1: the coarsest chunking (nccl-tree: one
                                   chunk per tree and channel; nvls: one
                                   piece); 0: the pipeline factor's */
    uint32_t channels;          /* 0: NCCL's channel count here */
} bcand_t;

/* NCCL sizes its pipeline to the buffer (one chunk per channel for small
 * ones, many for large): the best of these stands for that.  It also runs
 * small buffers on fewer channels than its search found (src/enqueue.cc
 * drops channels while a channel's share is below its thread threshold):
 * the ring on 1 and 2 channels stands for that. */
static const bcand_t cands[] = {
    { "nccl-ring", 1, 0, 0 }, { "nccl-ring", 1, 0, 1 },
    { "nccl-ring", 1, 0, 2 },
    { "nccl-tree", 1, 1, 0 }, { "nccl-tree", 1, 0, 0 },
    { "nccl-tree", 4, 0, 0 },
    { "nccl-tree", 16, 0, 0 },
    { "nvls", 1, 1, 0 }, { "nvls", 1, 0, 0 }, { "nvls", 4, 0, 0 },
    { "nvls", 16, 0, 0 },
};

ccs_status_t base_nccl(const topo_t *t, const algo_params_t *p,
                       const sim_opts_t *so, const double *sizes,
                       uint32_t nsizes, base_point_t *pts, ccs_err_t *err)
{
    static const sim_proto_t all[] = {
        SIM_PROTO_LL, SIM_PROTO_LL128, SIM_PROTO_SIMPLE,
    };
    const sim_proto_t *protos = all;
    uint32_t nprotos = 3;
    sim_opts_t o = *so;
    bool any = false;

    for (uint32_t i = 0; i < nsizes; i++) {
        pts[i].time_s = INFINITY;
        snprintf(pts[i].algo, sizeof(pts[i].algo), "-");
    }
    if (so->proto != SIM_PROTO_PLAN) {
        protos = &so->proto;
        nprotos = 1;
    }
    for (size_t c = 0; c < sizeof(cands) / sizeof(cands[0]); c++) {
        algo_params_t bp;
        ccs_sched_t *s = NULL;   /* owned in this iteration */
        sim_t *sim = NULL;       /* owned in this iteration */
        ccs_status_t st;

        algo_params_init(&bp);
        bp.coll = p->coll;
        bp.pipeline = cands[c].pipeline;
        bp.channels = cands[c].channels;
        if (cands[c].coarse) {
            nccl_layout_t l;
            if (nccl_layout(t, &l, err) != CCS_OK)
                return CCS_ERR_NOMEM;
            bp.nchunks = strcmp(cands[c].algo, "nvls") == 0
                             ? l.n : 2 * nccl_default_channels(&l);
        }
        st = algo_synthesize(cands[c].algo, t, &bp, &s, err);
        if (st == CCS_ERR_UNSUPPORTED)
            continue;           /* not NCCL's choice here */
        if (st == CCS_OK)
            st = verify_sched(s, NULL, err);
        if (st == CCS_OK)
            st = sim_create(s, t, &o, &sim, err);
        for (uint32_t k = 0; st == CCS_OK && k < nprotos; k++) {
            /* NCCL runs NVLS with Simple only. */
            if (strcmp(cands[c].algo, "nvls") == 0 &&
                protos[k] != SIM_PROTO_SIMPLE && nprotos > 1)
                continue;
            o.proto = protos[k];
            for (uint32_t i = 0; st == CCS_OK && i < nsizes; i++) {
                sim_result_t r;

                st = sim_exec(sim, sizes[i], &o, &r, err);
                if (st != CCS_OK)
                    break;
                if (r.time_s < pts[i].time_s) {
                    pts[i].time_s = r.time_s;
                    snprintf(pts[i].algo, sizeof(pts[i].algo), "%s/%s",
                             cands[c].algo, sim_proto_str(protos[k]));
                }
                sim_result_free(&r);
            }
        }
        sim_destroy(sim);
        ccs_sched_destroy(s);
        if (st != CCS_OK) {
            ccs_err_prefix(err, "nccl baseline, %s: ", cands[c].algo);
            return st;
        }
        any = true;
    }
    if (!any)
        return ccs_err_set(err, CCS_ERR_UNSUPPORTED, "no NCCL algorithm "
                           "runs %s on %s", ccs_coll_str(p->coll), t->name);
    return CCS_OK;
}

uint32_t base_channels(const topo_t *t)
{
    nccl_layout_t l;

    if (nccl_layout(t, &l, NULL) != CCS_OK)
        return 2;
    return nccl_default_channels(&l);
}

void base_assumptions(const topo_t *t, sim_proto_t proto, char *buf,
                      size_t len)
{
    int nics = 0, nvls = 0, sw = 0;

    for (int32_t v = 0; v < t->nnodes; v++) {
        if (t->nodes[v].kind == TOPO_NODE_NIC && t->nodes[v].server == 0)
            nics++;
        if (t->nodes[v].kind == TOPO_NODE_SWITCH && t->nodes[v].server >= 0) {
            sw++;
            nvls += t->nodes[v].nvls != 0;
        }
    }
    snprintf(buf, len, "assumes: %d server(s), %d NIC(s) per server; "
             "NVLS %s; protocols: %s (docs/simulator.md \"Protocols\": "
             "NCCL's tuning model, Simple at 0.80 of NVLink from "
             "nccl-tests A100 figures, NVLS 0.60 from H100 figures, network "
             "0.92 assumed); %u channels with NCCL's per-channel caps "
             "(docs/baselines.md \"Channels\")", t->nservers, nics,
             sw == 0 ? "n/a (no server switch)"
             : nvls == sw ? "on (switches reduce)" : "off",
             proto == SIM_PROTO_PLAN ? "each algorithm at its best of LL, "
                                       "LL128, Simple per size"
             : proto == SIM_PROTO_IDEAL ? "none (ideal alpha-beta)"
                                        : sim_proto_str(proto),
             base_channels(t));
}
