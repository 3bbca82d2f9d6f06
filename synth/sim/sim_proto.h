/*
 * sim_proto.h - NCCL's protocols (LL, LL128, Simple) and NVLink SHARP
 * (in-switch reduction) as a cost model beside the alpha-beta engine.
 *
 * The engine (sim.c) stays an alpha-beta fluid simulator; this module
 * gives it, per run, three numbers for each route class (NVLink-only or
 * through a NIC): a latency scale applied to the route's alpha, a
 * bandwidth efficiency (the share of the wire that carries data), and a
 * fixed latency per collective.  The ideal protocol (1, 1, 0) is the old
 * pure alpha-beta model, so closed forms and existing results keep
 * holding where no protocol is asked for.  The table, its sources and the
 * calibration are in docs/simulator.md ("Protocols").
 *
 * A schedule says which protocol and channel count it was made for in its
 * params text (proto=ll128, channels=8); "nvls=1" marks a schedule whose
 * reductions and broadcasts go through an NVLS-capable switch
 * (topo_node_t.nvls), which the engine then times as NCCL's NVLS does:
 * converging reduce transfers are summed in the switch and cross the link
 * to the receiver once; a broadcast crosses the sender's link once and is
 * multicast by the switch (sim_nvls_trim).
 */
#ifndef CCS_SIM_PROTO_H
#define CCS_SIM_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sched.h"
#include "topo.h"

typedef enum {
    SIM_PROTO_PLAN = 0,  /* the schedule's params (proto=...); else ideal */
    SIM_PROTO_IDEAL,     /* pure alpha-beta, no protocol overhead */
    SIM_PROTO_LL,        /* NCCL LL: 8-byte lines, 4 of data + 4 of flag */
    SIM_PROTO_LL128,     /* NCCL LL128: 128-byte lines, 120 of data */
    SIM_PROTO_SIMPLE,    /* NCCL Simple: bulk copies and fences */
    SIM_PROTO_COUNT
} sim_proto_t;

const char *sim_proto_str(sim_proto_t p);  /* "plan", "ideal", "ll", ... */
/* Accepts the names above, case-insensitive ("LL128", "simple"). */
ccs_status_t sim_proto_parse(const char *name, sim_proto_t *out,
                             ccs_err_t *err);

/* Route classes: hwLat and efficiency differ between NVLink and network. */
enum { SIM_HW_NVLINK = 0, SIM_HW_NET = 1, SIM_HW_COUNT };

typedef struct sim_proto_model {
    double base_s;                  /* once per collective, seconds */
    double lat_scale[SIM_HW_COUNT]; /* times the route's alpha */
    double eff[SIM_HW_COUNT];       /* data share of the link bandwidth */
    /* Channels (sim_proto_channels).  lane_cap: the wire rate (bytes/s,
     * data / eff) one channel can drive on a route of that class; 0 where
     * the protocol has no per-channel cap (ideal, NVLS).  xfer_cap: the
     * cap of one transfer in this run, lanes x lane_cap; 0 uncapped. */
    double lane_cap[SIM_HW_COUNT];
    double xfer_cap[SIM_HW_COUNT];
} sim_proto_model_t;

/* The model of protocol p (not PLAN) for an ordinary schedule, or for an
 * NVLS schedule (nvls true: NCCL runs NVLS with Simple only and its
 * latency is one figure for the whole collective). */
void sim_proto_model(sim_proto_t p, bool nvls, sim_proto_model_t *m);

/* Per-channel throughput caps (NCCL's tuning model, docs/simulator.md
 * "Channels").  In NCCL a channel is one thread block per peer, and its
 * model credits a channel with at most a fixed bandwidth per protocol, so
 * C channels move at most C times that, up to the link's limit.  Fills
 * m->lane_cap and m->xfer_cap for protocol p (not PLAN) on topology t:
 * the figures are Hopper's where a GPU's NVLink bandwidth is 400 GB/s or
 * more, else Ampere's; a schedule with params caps=tree (nccl-tree) gets
 * NCCL's tree caps, which depend on the server count.  A transfer of schedule s runs on `lanes` channels:
 * the schedule's lanes= param where it lays its channels out as separate
 * transfers (nccl-ring, nccl-tree: lanes=1), else `channels` (the run's
 * option) or, when that is 0, the schedule's channels= param; with none
 * of them, or for an NVLS schedule (calibrated as a whole), the transfer
 * is uncapped (xfer_cap 0).  m must hold p's model already. */
void sim_proto_channels(sim_proto_t p, const topo_t *t, const ccs_sched_t *s,
                        uint32_t channels, sim_proto_model_t *m);

/* Whether the GPUs of t are taken to be Hopper-class (a GPU's links to
 * switches and GPUs add up to 400 GB/s or more per direction). */
bool sim_topo_hopper(const topo_t *t);

/* The protocol a run uses: opt unless PLAN; then the schedule's
 * proto= param; else IDEAL. */
sim_proto_t sim_proto_resolve(sim_proto_t opt, const ccs_sched_t *s);

/* Value of `key` in a params text ("key=value\n" lines) into val (NUL
 * terminated, truncated to len); false when absent. */
bool sim_params_get(const char *params, const char *key, char *val,
                    size_t len);

/* The schedule asks for in-switch reduction (params nvls=1). */
bool sim_sched_nvls(const ccs_sched_t *s);

/* Route class: SIM_HW_NET when a node on the route is a NIC. */
int sim_route_hw(const topo_t *t, const int32_t *links, int32_t nhops);

/* Index of the hop whose link enters an NVLS-capable switch, -1 when the
 * route passes none. */
int32_t sim_nvls_hop(const topo_t *t, const int32_t *links, int32_t nhops);

/* One transfer as the NVLS pass sees it (sender-side view). */
typedef struct sim_nvls_xfer {
    uint32_t step, src, dst;
    uint32_t chunk;             /* first chunk read by the send */
    uint8_t buf;                /* buffer read by the send */
    int32_t sw_hop;             /* sim_nvls_hop of its route, -1 none */
    uint32_t nhops;             /* hops of its full route */
} sim_nvls_xfer_t;

/* Which part of each transfer's route carries its bytes once the switch
 * reduces and multicasts.  Transfers of one step into the same receiver
 * and chunk (a reduction) through an NVLS switch: the first keeps its full
 * route, the others stop at the switch (off 0, len sw_hop + 1).  Transfers
 * of one step from the same sender, buffer and chunk (a broadcast): the
 * first keeps its route, the others start at the switch (off sw_hop + 1).
 * Every other transfer keeps [0, nhops).  off/len are [n], the caller's. */
ccs_status_t sim_nvls_trim(const sim_nvls_xfer_t *x, uint32_t n,
                           uint32_t *off, uint32_t *len, ccs_err_t *err);

#endif /* CCS_SIM_PROTO_H */
