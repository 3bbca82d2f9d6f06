/*
 * sim_proto.c - NCCL's protocols and NVLS as a cost model (sim_proto.h).
 *
 * Where the numbers come from (docs/simulator.md, "Protocols", has the
 * table with links):
 * - Latency.  NCCL's tuning model (src/graph/tuning.cc, hwLatencies, ring
 *   row) charges per step 0.6 / 1.9 / 3.4 us on NVLink and 2.7 / 4.0 /
 *   14 us on the network for LL / LL128 / Simple, plus a base latency per
 *   collective of 6.6 / 14.0 / 8.4 us.  A topology's alpha is taken to be
 *   the Simple figure (dgx-h100's 3 us is StragglAR's measurement of
 *   NCCL's Simple send/recv), so LL and LL128 scale it by NCCL's ratios.
 * - Bandwidth.  NCCL models LL at 1/2 and LL128 at 0.92 (120/128) of the
 *   Simple bandwidth.  Simple itself reaches about 0.8 of the NVLink rate
 *   in nccl-tests (8 x A100 all_reduce busbw 230-250 GB/s on 300 GB/s
 *   links, where NCCL runs rings); on the network 0.92 is an assumption
 *   (no calibration point in this repository).
 * - NVLS.  NCCL runs it with Simple only; its model's latency is one
 *   25 us figure for the whole collective (hwLatencies NVLS, NVLink) and
 *   nothing per step.  Its efficiency 0.60 is calibrated so that the
 *   simulated dgx-h100 NVLS allreduce lands at the 460-480 GB/s busbw
 *   nccl-tests reports for 8 x H100 (the switch-reduced traffic is about
 *   s per link direction, so busbw = 2 (n-1)/n * eff * 450 GB/s).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "sim_proto.h"

static const char *const proto_names[SIM_PROTO_COUNT] = {
    "plan", "ideal", "ll", "ll128", "simple",
};

/* [proto][hw]; PLAN and IDEAL rows are the ideal model. */
static const double proto_lat_scale[SIM_PROTO_COUNT][SIM_HW_COUNT] = {
    { 1, 1 }, { 1, 1 },
    { 0.6 / 3.4, 2.7 / 14.0 },      /* LL */
    { 1.9 / 3.4, 4.0 / 14.0 },      /* LL128 */
    { 1, 1 },                       /* Simple */
};
#define SIMPLE_EFF_NVLINK 0.80
#define SIMPLE_EFF_NET 0.92
static const double proto_eff[SIM_PROTO_COUNT][SIM_HW_COUNT] = {
    { 1, 1 }, { 1, 1 },
    { 0.5 * SIMPLE_EFF_NVLINK, 0.5 * SIMPLE_EFF_NET },    /* LL */
    { 0.92 * SIMPLE_EFF_NVLINK, 0.92 * SIMPLE_EFF_NET },  /* LL128 */
    { SIMPLE_EFF_NVLINK, SIMPLE_EFF_NET },                /* Simple */
};
static const double proto_base_s[SIM_PROTO_COUNT] = {
    0, 0, 6.6e-6, 14.0e-6, 8.4e-6,
};
/* Per-channel data rate caps, GB/s, [class][proto][hw] (class 0
 * Ampere, 1 Hopper; proto LL, LL128, Simple):
 * - Simple: the fastest per-channel bandwidth NCCL's ring search ever
 *   gives a channel, the first entry of its speed arrays
 *   (src/graph/search.cc: speedArrayIntra 40, sm90SpeedArrayIntra 60,
 *   speedArrayInter and sm90SpeedArrayInter 48 GB/s);
 * - LL128: tuning.cc's perChMaxRingLL128Bws (20.0 Ampere, 36.7 Hopper);
 * - LL: tuning.cc models LL as half of Simple's bandwidth (busBw * .5);
 *   its overall llMaxBws cap is not modelled. */
static const double chan_cap_GBps[2][3][SIM_HW_COUNT] = {
    { { 20.0, 24.0 }, { 20.0, 20.0 }, { 40.0, 48.0 } },
    { { 30.0, 24.0 }, { 36.7, 36.7 }, { 60.0, 48.0 } },
};
/* NCCL's tree: tuning.cc caps it per channel on its own, by node count
 * (1, 2, 3+): perChMaxTreeBws (Simple), perChMaxTreeLL128Bws (LL128);
 * its LL is the tree's bandwidth over 3.8 (busBw * 1.0 / 3.8), so one
 * channel moves the Simple cap / 3.8.  [class][proto][nodes], GB/s. */
static const double tree_cap_GBps[2][3][3] = {
    { { 24.0 / 3.8, 23.6 / 3.8, 17.8 / 3.8 }, { 20.0, 20.0, 20.0 },
      { 24.0, 23.6, 17.8 } },
    { { 38.7 / 3.8, 41.4 / 3.8, 36.0 / 3.8 }, { 36.7, 36.7, 29.0 },
      { 38.7, 41.4, 36.0 } },
};
#define HOPPER_GPU_BW 400e9
#define NVLS_BASE_S 25e-6
#define NVLS_EFF 0.60

const char *sim_proto_str(sim_proto_t p)
{
    return (unsigned)p < SIM_PROTO_COUNT ? proto_names[p] : "?";
}

ccs_status_t sim_proto_parse(const char *name, sim_proto_t *out,
                             ccs_err_t *err)
{
    for (int i = 0; name != NULL && i < SIM_PROTO_COUNT; i++) {
        if (strcasecmp(name, proto_names[i]) == 0) {
            *out = (sim_proto_t)i;
            return CCS_OK;
        }
    }
    return ccs_err_set(err, CCS_ERR_INVALID, "unknown protocol '%s' (ll, "
                       "ll128, simple, ideal or plan)",
                       name ? name : "(null)");
}

void sim_proto_model(sim_proto_t p, bool nvls, sim_proto_model_t *m)
{
    if ((unsigned)p >= SIM_PROTO_COUNT)
        p = SIM_PROTO_IDEAL;
    for (int h = 0; h < SIM_HW_COUNT; h++) {
        m->lat_scale[h] = proto_lat_scale[p][h];
        m->eff[h] = proto_eff[p][h];
    }
    m->base_s = proto_base_s[p];
    for (int h = 0; h < SIM_HW_COUNT; h++)
        m->lane_cap[h] = m->xfer_cap[h] = 0;
    if (nvls && p != SIM_PROTO_IDEAL && p != SIM_PROTO_PLAN) {
        /* NVLS is Simple on the wire with one latency for the whole
         * in-switch pipeline; network hops (NVLS tree) stay Simple's. */
        m->base_s = NVLS_BASE_S;
        m->lat_scale[SIM_HW_NVLINK] = 0;
        m->eff[SIM_HW_NVLINK] = NVLS_EFF;
        m->lat_scale[SIM_HW_NET] = proto_lat_scale[SIM_PROTO_SIMPLE]
                                                  [SIM_HW_NET];
        m->eff[SIM_HW_NET] = SIMPLE_EFF_NET;
    }
}

bool sim_topo_hopper(const topo_t *t)
{
    double bw = 0;
    int32_t v;

    if (t == NULL || t->ngpus < 1)
        return false;
    v = t->rank_node[0];
    /* a scan of the link array: topologies built by hand may lack the
     * adjacency index */
    for (int32_t k = 0; k < t->nlinks; k++) {
        const topo_link_t *l = &t->links[k];

        if (l->src == v && t->nodes[l->dst].kind != TOPO_NODE_NIC)
            bw += l->bw_Bps;
    }
    return bw >= HOPPER_GPU_BW;
}

/* A positive integer param, 0 when absent or not a number. */
static uint32_t params_u32(const ccs_sched_t *s, const char *key)
{
    char v[16];
    unsigned long x;
    char *end;

    if (s == NULL || !sim_params_get(s->params, key, v, sizeof(v)))
        return 0;
    x = strtoul(v, &end, 10);
    return *end == '\0' && x <= 1024 ? (uint32_t)x : 0;
}

void sim_proto_channels(sim_proto_t p, const topo_t *t, const ccs_sched_t *s,
                        uint32_t channels, sim_proto_model_t *m)
{
    int cls;
    int row = p == SIM_PROTO_LL ? 0 : p == SIM_PROTO_LL128 ? 1 : 2;
    bool capped = p == SIM_PROTO_LL || p == SIM_PROTO_LL128 ||
                  p == SIM_PROTO_SIMPLE;
    uint32_t lanes = params_u32(s, "lanes");
    bool tree;
    int nodes;
    char v[8];

    if (lanes == 0)
        lanes = channels > 0 ? channels : params_u32(s, "channels");
    if (sim_sched_nvls(s))
        capped = false;
    cls = capped && sim_topo_hopper(t) ? 1 : 0;
    tree = s != NULL && sim_params_get(s->params, "caps", v, sizeof(v)) &&
           strcmp(v, "tree") == 0;
    nodes = t == NULL || t->nservers <= 1 ? 0 : t->nservers == 2 ? 1 : 2;
    for (int h = 0; h < SIM_HW_COUNT; h++) {
        double gbps = tree ? tree_cap_GBps[cls][row][nodes]
                           : chan_cap_GBps[cls][row][h];

        m->lane_cap[h] = capped && m->eff[h] > 0 ? gbps * 1e9 / m->eff[h]
                                                 : 0;
        m->xfer_cap[h] = m->lane_cap[h] * lanes;
    }
}

bool sim_params_get(const char *params, const char *key, char *val,
                    size_t len)
{
    size_t klen = strlen(key);

    for (const char *l = params; l != NULL && *l != '\0';) {
        const char *end = strchr(l, '\n');
        size_t ll = end ? (size_t)(end - l) : strlen(l);

        if (ll > klen && strncmp(l, key, klen) == 0 && l[klen] == '=') {
            size_t vl = ll - klen - 1;
            if (len > 0) {
                if (vl >= len)
                    vl = len - 1;
                memcpy(val, l + klen + 1, vl);
                val[vl] = '\0';
            }
            return true;
        }
        l = end ? end + 1 : NULL;
    }
    return false;
}

sim_proto_t sim_proto_resolve(sim_proto_t opt, const ccs_sched_t *s)
{
    char v[16];
    sim_proto_t p;

    if (opt != SIM_PROTO_PLAN && (unsigned)opt < SIM_PROTO_COUNT)
        return opt;
    if (s != NULL && sim_params_get(s->params, "proto", v, sizeof(v)) &&
        sim_proto_parse(v, &p, NULL) == CCS_OK && p != SIM_PROTO_PLAN)
        return p;
    return SIM_PROTO_IDEAL;
}

bool sim_sched_nvls(const ccs_sched_t *s)
{
    char v[8];

    return s != NULL && sim_params_get(s->params, "nvls", v, sizeof(v)) &&
           strcmp(v, "1") == 0;
}

int sim_route_hw(const topo_t *t, const int32_t *links, int32_t nhops)
{
    for (int32_t h = 0; h < nhops; h++) {
        if (t->nodes[t->links[links[h]].dst].kind == TOPO_NODE_NIC ||
            t->nodes[t->links[links[h]].src].kind == TOPO_NODE_NIC)
            return SIM_HW_NET;
    }
    return SIM_HW_NVLINK;
}

int32_t sim_nvls_hop(const topo_t *t, const int32_t *links, int32_t nhops)
{
    for (int32_t h = 0; h + 1 < nhops; h++) {
        const topo_node_t *v = &t->nodes[t->links[links[h]].dst];
        if (v->kind == TOPO_NODE_SWITCH && v->nvls)
            return h;
    }
    return -1;
}

/* Sort context: qsort has none, so the keys are copied beside the ids. */
typedef struct nkey {
    uint32_t k[4];
    uint32_t id;
} nkey_t;

static int nkey_cmp(const void *a, const void *b)
{
    const nkey_t *x = a, *y = b;

    for (int i = 0; i < 4; i++) {
        if (x->k[i] != y->k[i])
            return x->k[i] < y->k[i] ? -1 : 1;
    }
    return x->id < y->id ? -1 : x->id > y->id;
}

/* Group transfers by a key; in every group of two or more that pass an
 * NVLS switch, all but the first get the part of the route on one side of
 * the switch (before: up to and including the link into it). */
static void trim_groups(const sim_nvls_xfer_t *x, nkey_t *keys, uint32_t n,
                        bool reduce, uint32_t *off, uint32_t *len)
{
    uint32_t m = 0;

    for (uint32_t i = 0; i < n; i++) {
        if (x[i].sw_hop < 0)
            continue;
        keys[m].k[0] = x[i].step;
        keys[m].k[1] = reduce ? x[i].dst : x[i].src;
        keys[m].k[2] = reduce ? 0 : x[i].buf;
        keys[m].k[3] = x[i].chunk;
        keys[m].id = i;
        m++;
    }
    qsort(keys, m, sizeof(*keys), nkey_cmp);
    for (uint32_t i = 1; i < m; i++) {
        const nkey_t *a = &keys[i - 1], *b = &keys[i];
        uint32_t id = b->id, h;

        if (memcmp(a->k, b->k, sizeof(a->k)) != 0)
            continue;
        /* b follows a member of its group: it is not the first. */
        h = (uint32_t)x[id].sw_hop;
        if (reduce) {
            off[id] = 0;
            len[id] = h + 1;
        } else {
            off[id] = h + 1;
            len[id] = x[id].nhops - (h + 1);
        }
    }
}

ccs_status_t sim_nvls_trim(const sim_nvls_xfer_t *x, uint32_t n,
                           uint32_t *off, uint32_t *len, ccs_err_t *err)
{
    nkey_t *keys = NULL;   /* owned here, freed before return */

    for (uint32_t i = 0; i < n; i++) {
        off[i] = 0;
        len[i] = x[i].nhops;
    }
    keys = malloc(sizeof(*keys) * ((size_t)n + 1));
    if (keys == NULL)
        return ccs_err_set(err, CCS_ERR_NOMEM, "out of memory (nvls)");
    trim_groups(x, keys, n, true, off, len);
    trim_groups(x, keys, n, false, off, len);
    free(keys);
    return CCS_OK;
}
