/*
 * test_nccl.c - the NCCL baselines (nccl-ring, nccl-tree, nvls), the
 * protocol model and the `nccl` baseline: they verify, they match closed
 * forms on uniform topologies, the 8-channel ring reaches the NIC-limited
 * bound on two rail-optimised servers, NVLS halves the link traffic, and
 * the baseline is never slower than the single ring on any built-in;
 * the per-channel caps make the channel count matter as NCCL's tuning
 * model says, and NCCL's default channel counts.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algo.h"
#include "baseline.h"
#include "sim.h"
#include "sim_proto.h"
#include "topo.h"
#include "verify.h"
#include "harness.h"

static topo_t *load(const char *spec)
{
    topo_t *t = NULL;
    ccs_err_t err = { { 0 } };
    ccs_status_t st = topo_load(spec, NULL, &t, &err);

    CHECK_MSG(st == CCS_OK, "topo_load(%s): %s", spec, ccs_err_msg(&err, st));
    return t;
}

/* Build, verify and simulate one algorithm; time in seconds, or -1 when
 * it cannot run (unsupported) or failed (a check failure is recorded). */
static double sim_algo(const topo_t *t, const char *algo, ccs_coll_t coll,
                       uint32_t channels, double bytes, sim_proto_t proto)
{
    algo_params_t p;
    sim_opts_t o;
    sim_result_t r;
    ccs_sched_t *s = NULL;
    ccs_err_t err = { { 0 } };
    ccs_status_t st;
    double time_s = -1;

    algo_params_init(&p);
    p.coll = coll;
    p.channels = channels;
    st = algo_synthesize(algo, t, &p, &s, &err);
    if (st == CCS_ERR_UNSUPPORTED)
        return -1;
    CHECK_MSG(st == CCS_OK, "%s on %s: %s", algo, t->name,
              ccs_err_msg(&err, st));
    if (st != CCS_OK)
        return -1;
    st = verify_sched(s, NULL, &err);
    CHECK_MSG(st == CCS_OK, "%s %s on %s does not verify: %s", algo,
              ccs_coll_str(coll), t->name, ccs_err_msg(&err, st));
    sim_opts_init(&o);
    o.proto = proto;
    if (st == CCS_OK)
        st = sim_run(s, t, bytes, &o, &r, &err);
    CHECK_MSG(st == CCS_OK, "sim %s on %s: %s", algo, t->name,
              ccs_err_msg(&err, st));
    if (st == CCS_OK) {
        time_s = r.time_s;
        sim_result_free(&r);
    }
    ccs_sched_destroy(s);
    return time_s;
}

/* Every NCCL algorithm verifies for every collective it implements, on
 * switched, direct and multi-server topologies. */
TEST(baselines_verify)
{
    static const char *const topos[] = {
        "dgx-h100", "dgx-a100", "dgx1", "switch:5", "torus:4x4",
        "cluster:2x8", "cluster:3x4,nics=server", "cluster:2x4,nvls=on",
        "fattree:4x4", "ring:6",
    };
    static const char *const algos[] = { "nccl-ring", "nccl-tree", "nvls" };
    static const ccs_coll_t colls[] = {
        CCS_COLL_ALLREDUCE, CCS_COLL_REDUCESCATTER, CCS_COLL_ALLGATHER,
    };

    for (size_t i = 0; i < sizeof(topos) / sizeof(topos[0]); i++) {
        topo_t *t = load(topos[i]);
        for (size_t a = 0; t != NULL && a < 3; a++) {
            const algo_desc_t *d = algo_find(algos[a]);
            CHECK(d != NULL);
            for (size_t c = 0; d != NULL && c < 3; c++) {
                if (!(d->colls & ALGO_COLL_BIT(colls[c])))
                    continue;
                for (uint32_t ch = 0; ch <= 3; ch += 3)
                    (void)sim_algo(t, algos[a], colls[c], ch, 1 << 20,
                                   SIM_PROTO_IDEAL);
            }
        }
        topo_destroy(t);
    }
}

/* On one switch every channel is the same cyclic ring: C channels take
 * exactly the single ring's time, 2(n-1) a + 2(n-1)/n s b. */
TEST(ring_channels_equal_ring_on_switch)
{
    static const struct { const char *topo; uint32_t ch; } cases[] = {
        { "switch:8", 1 }, { "switch:8", 4 }, { "dgx-a100", 8 },
        { "switch:5", 3 },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        topo_t *t = load(cases[i].topo);
        double n, ring, nring, closed;

        if (t == NULL)
            continue;
        n = t->ngpus;
        ring = sim_algo(t, "ring", CCS_COLL_ALLREDUCE, 0, 1 << 30,
                        SIM_PROTO_IDEAL);
        nring = sim_algo(t, "nccl-ring", CCS_COLL_ALLREDUCE, cases[i].ch,
                         1 << 30, SIM_PROTO_IDEAL);
        closed = 2 * (n - 1) * t->links[0].alpha_s * 2 +
                 2 * (n - 1) / n * (double)(1 << 30) / t->links[0].bw_Bps;
        CHECK_NEAR(nring, ring, 1e-6);
        CHECK_NEAR(nring, closed, 1e-6);
        topo_destroy(t);
    }
}

/* Two servers of 8 GPUs with one 50 GB/s NIC per GPU: the 8-channel
 * ring's busbw at 1 GiB is within 10% of the NIC-limited bound (8 x
 * 50 GB/s), far above the one-NIC bound; with one NIC per server it is
 * held to that one NIC. */
TEST(rail_ring_reaches_nic_bound)
{
    topo_t *t = load("cluster:2x8");
    topo_t *t1 = load("cluster:2x8,nics=server");
    double s = (double)(1u << 30), n = 16, f = 2 * (n - 1) / n;
    double tm, tm1, busbw, busbw1;

    if (t == NULL || t1 == NULL)
        goto out;
    tm = sim_algo(t, "nccl-ring", CCS_COLL_ALLREDUCE, 8, s,
                  SIM_PROTO_IDEAL);
    busbw = s / tm * f;
    CHECK_MSG(busbw > 0.9 * 400e9 && busbw <= 400e9 * 1.0001,
              "8-channel ring busbw %.1f GB/s, NIC bound 400 GB/s",
              busbw / 1e9);
    tm1 = sim_algo(t1, "nccl-ring", CCS_COLL_ALLREDUCE, 8, s,
                   SIM_PROTO_IDEAL);
    busbw1 = s / tm1 * f;
    CHECK_MSG(busbw1 <= 50e9 * 1.0001 && busbw1 > 0.9 * 50e9,
              "one NIC per server: busbw %.1f GB/s, bound 50 GB/s",
              busbw1 / 1e9);
out:
    topo_destroy(t);
    topo_destroy(t1);
}

/* NVLS: the switch sums and multicasts, so each link carries about s per
 * direction instead of 2(n-1)/n s: at large sizes and deep pipelines the
 * time approaches s b (P + L + 1) / P.  Refused where the switch cannot
 * reduce (dgx-a100). */
TEST(nvls_halves_link_traffic)
{
    topo_t *h = load("dgx-h100"), *a = load("dgx-a100");
    algo_params_t p;
    ccs_sched_t *s = NULL;
    ccs_err_t err = { { 0 } };
    double bytes = (double)(1u << 30), ring, nvls, ideal;

    if (h == NULL || a == NULL)
        goto out;
    CHECK_EQ_INT(sim_algo(a, "nvls", CCS_COLL_ALLREDUCE, 0, bytes,
                          SIM_PROTO_IDEAL) < 0, 1);
    ring = sim_algo(h, "ring", CCS_COLL_ALLREDUCE, 0, bytes,
                    SIM_PROTO_IDEAL);
    algo_params_init(&p);
    p.pipeline = 4;      /* 128 pieces */
    CHECK_STATUS(algo_synthesize("nvls", h, &p, &s, &err), CCS_OK);
    if (s != NULL) {
        sim_result_t r;
        sim_opts_t o;
        sim_opts_init(&o);
        CHECK_STATUS(sim_run(s, h, bytes, &o, &r, &err), CCS_OK);
        nvls = r.time_s;
        sim_result_free(&r);
        /* every link carries s / P per step (the ring: 2(n-1)/n s in
         * all), over P + L + 1 steps of alpha each */
        ideal = (128.0 + 3 + 1) / 128 * bytes / 450e9 +
                (128 + 3 + 1) * 3e-6;
        CHECK_NEAR(nvls, ideal, 0.02);
        CHECK(nvls < 0.7 * ring);
    }
    ccs_sched_destroy(s);
out:
    topo_destroy(h);
    topo_destroy(a);
}

/* Across servers (cluster:2x8,nvls=on) the in-switch reduction leaves
 * each NIC half the rings' traffic: at 1 GiB nvls beats the 8-channel
 * ring, which sits at the NIC bound. */
TEST(nvls_across_servers)
{
    topo_t *t = load("cluster:2x8,nvls=on");
    double nv, ring;

    if (t == NULL)
        return;
    nv = sim_algo(t, "nvls", CCS_COLL_ALLREDUCE, 0, 1 << 30,
                  SIM_PROTO_IDEAL);
    ring = sim_algo(t, "nccl-ring", CCS_COLL_ALLREDUCE, 8, 1 << 30,
                    SIM_PROTO_IDEAL);
    CHECK_MSG(nv > 0 && nv < 0.7 * ring, "nvls %.1f us, ring %.1f us",
              nv * 1e6, ring * 1e6);
    topo_destroy(t);
}

/* NVLS across servers is NCCL's NVLS tree: a double binary tree over the
 * servers between the in-switch reduction and the multicast.  Its part
 * between servers takes up + down steps of the trees: 2 at two servers
 * (the same as a ring between them), at most 2 (ceil(log2 S) + 1) beyond,
 * against a ring's 2(S-1); every case verifies (sim_algo). */
TEST(nvls_tree_steps)
{
    static const struct { const char *topo; uint32_t S; } cases[] = {
        { "cluster:2x4,nvls=on", 2 }, { "cluster:3x4,nvls=on", 3 },
        { "cluster:4x4,nvls=on", 4 }, { "cluster:5x4,nvls=on", 5 },
        { "cluster:8x4,nvls=on", 8 },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        topo_t *t = load(cases[i].topo);
        algo_params_t p;
        ccs_sched_t *s = NULL;
        ccs_err_t err = { { 0 } };
        uint32_t S = cases[i].S, lg = 0, inter;

        if (t == NULL)
            continue;
        CHECK(sim_algo(t, "nvls", CCS_COLL_ALLREDUCE, 0, 1 << 20,
                       SIM_PROTO_SIMPLE) > 0);
        algo_params_init(&p);
        CHECK_STATUS(algo_synthesize("nvls", t, &p, &s, &err), CCS_OK);
        while ((1u << lg) < S)
            lg++;
        /* 32 pieces, 2 fold levels (3 values per block), the multicast */
        inter = s != NULL ? s->nsteps - 32 - 2 - 1 : 0;
        if (S == 2)
            CHECK_EQ_INT(inter, 2);
        CHECK_MSG(inter <= 2 * (lg + 1) && (S < 4 || inter < 2 * (S - 1)),
                  "%s: %u steps between servers", cases[i].topo, inter);
        ccs_sched_destroy(s);
        topo_destroy(t);
    }
}

/* Protocols: ideal is the old model; LL is faster than Simple when the
 * latency dominates and slower when the bandwidth does. */
TEST(protocols_order)
{
    topo_t *t = load("dgx-h100");
    double ideal, ll_s, simple_s, ll_b, simple_b;

    if (t == NULL)
        return;
    ideal = sim_algo(t, "ring", CCS_COLL_ALLREDUCE, 0, 1024,
                     SIM_PROTO_IDEAL);
    CHECK_NEAR(ideal, sim_algo(t, "ring", CCS_COLL_ALLREDUCE, 0, 1024,
                               SIM_PROTO_PLAN), 1e-12);
    ll_s = sim_algo(t, "ring", CCS_COLL_ALLREDUCE, 0, 1024, SIM_PROTO_LL);
    simple_s = sim_algo(t, "ring", CCS_COLL_ALLREDUCE, 0, 1024,
                        SIM_PROTO_SIMPLE);
    ll_b = sim_algo(t, "ring", CCS_COLL_ALLREDUCE, 0, 1 << 30,
                    SIM_PROTO_LL);
    simple_b = sim_algo(t, "ring", CCS_COLL_ALLREDUCE, 0, 1 << 30,
                        SIM_PROTO_SIMPLE);
    CHECK(ll_s < simple_s);
    CHECK(simple_b < ll_b);
    /* Simple at 0.8 of the link: 1/0.8 of the ideal bandwidth term */
    CHECK_NEAR(simple_b - 8.4e-6 - 14 * 3e-6,
               (1 << 30) * 2.0 * 7 / 8 / 450e9 / 0.8, 1e-6);
    topo_destroy(t);
}

/* The nccl baseline is never slower than the single ring, at any size,
 * on any built-in, under every protocol rule. */
TEST(baseline_never_slower_than_ring)
{
    static const char *const topos[] = {
        "dgx-h100", "dgx-a100", "dgx1", "switch:16", "torus:4x4",
        "mesh:4x4", "ring:8", "fattree:4x4", "cluster:2x8",
        "cluster:2x8,nics=server", "cluster:4x4",
    };
    static const sim_proto_t protos[] = { SIM_PROTO_PLAN, SIM_PROTO_IDEAL };
    double sizes[14];

    for (int i = 0; i < 14; i++)
        sizes[i] = ldexp(1.0, 8 + 2 * i);     /* 256 B .. 8 GiB */
    for (size_t i = 0; i < sizeof(topos) / sizeof(topos[0]); i++) {
        topo_t *t = load(topos[i]);
        base_point_t pts[14];
        algo_params_t p;
        ccs_sched_t *s = NULL;
        sim_t *sim = NULL;
        ccs_err_t err = { { 0 } };

        if (t == NULL)
            continue;
        algo_params_init(&p);
        CHECK_STATUS(algo_synthesize("ring", t, &p, &s, &err), CCS_OK);
        for (size_t k = 0; s != NULL && k < 2; k++) {
            sim_opts_t o;
            sim_opts_init(&o);
            o.proto = protos[k];
            CHECK_STATUS(base_nccl(t, &p, &o, sizes, 14, pts, &err), CCS_OK);
            CHECK_STATUS(sim_create(s, t, &o, &sim, &err), CCS_OK);
            for (int j = 0; sim != NULL && j < 14; j++) {
                double best = INFINITY;
                for (int pr = SIM_PROTO_IDEAL; pr <= SIM_PROTO_SIMPLE; pr++) {
                    sim_result_t r;
                    sim_opts_t q = o;
                    if (protos[k] == SIM_PROTO_IDEAL &&
                        pr != SIM_PROTO_IDEAL)
                        break;
                    if (protos[k] == SIM_PROTO_PLAN && pr == SIM_PROTO_IDEAL)
                        continue;
                    q.proto = (sim_proto_t)pr;
                    CHECK_STATUS(sim_exec(sim, sizes[j], &q, &r, &err),
                                 CCS_OK);
                    if (r.time_s < best)
                        best = r.time_s;
                    sim_result_free(&r);
                }
                /* NCCL's channel count changes the chunk count, and
                 * each chunk pads up to a whole element: at most
                 * 2 x 14 channels x 16 ranks x 4 B more on a link, 0.2 us
                 * at the slowest built-in link (16 GB/s) */
                CHECK_MSG(pts[j].time_s <= best * (1 + 1e-9) + 0.2e-6,
                          "%s at %.0f B (%s): nccl %s %.3f us > ring %.3f us",
                          topos[i], sizes[j], sim_proto_str(protos[k]),
                          pts[j].algo, pts[j].time_s * 1e6, best * 1e6);
            }
            sim_destroy(sim);
            sim = NULL;
        }
        ccs_sched_destroy(s);
        topo_destroy(t);
    }
}

/* The switch attribute: dgx-h100 and nvls=on say the switch reduces,
 * dgx-a100 and the default cluster do not; cluster defaults to a NIC per
 * GPU. */
TEST(nvls_attribute_and_nic_default)
{
    static const struct { const char *spec; int nvls; int nics; } cases[] = {
        { "dgx-h100", 1, 0 }, { "dgx-a100", 0, 0 },
        { "topologies/dgx-h100.yaml", 1, 0 },
        { "cluster:2x8", 0, 16 }, { "cluster:2x8,nics=server", 0, 2 },
        { "cluster:2x4,nvls=on", 1, 8 },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        topo_t *t = load(cases[i].spec);
        int sw = 0, nv = 0, nics = 0;
        if (t == NULL)
            continue;
        for (int32_t v = 0; v < t->nnodes; v++) {
            if (t->nodes[v].kind == TOPO_NODE_NIC)
                nics++;
            if (t->nodes[v].kind == TOPO_NODE_SWITCH &&
                t->nodes[v].server >= 0) {
                sw++;
                nv += t->nodes[v].nvls;
            }
        }
        CHECK_MSG((sw > 0 && nv == sw) == (cases[i].nvls != 0),
                  "%s: %d of %d switches reduce", cases[i].spec, nv, sw);
        CHECK_EQ_INT(nics, cases[i].nics);
        topo_destroy(t);
    }
}

/* Per-channel caps (sim_proto_channels): C channels of the ring move at
 * most C times one channel's rate, up to the link's (Simple at 0.80 of
 * NVLink, LL128 at 0.92 of that).  One channel: 40 GB/s on A100-class
 * GPUs, 60 on H100-class (Simple), 36.7 (LL128, Hopper).  The ring's
 * busbw at 4 GiB is within 2% of min(C x cap, link rate). */
TEST(channel_count_follows_cap)
{
    static const struct {
        const char *topo;
        uint32_t ch;
        sim_proto_t proto;
        double busbw_GBps;
    } cases[] = {
        { "dgx-a100", 1, SIM_PROTO_SIMPLE, 40.0 },
        { "dgx-a100", 2, SIM_PROTO_SIMPLE, 80.0 },
        { "dgx-a100", 4, SIM_PROTO_SIMPLE, 160.0 },
        { "dgx-a100", 8, SIM_PROTO_SIMPLE, 240.0 },   /* 0.8 x 300 */
        { "dgx-h100", 1, SIM_PROTO_SIMPLE, 60.0 },
        { "dgx-h100", 4, SIM_PROTO_SIMPLE, 240.0 },
        { "dgx-h100", 8, SIM_PROTO_SIMPLE, 360.0 },   /* 0.8 x 450 */
        { "dgx-h100", 1, SIM_PROTO_LL128, 36.7 },
        { "dgx-h100", 8, SIM_PROTO_LL128, 293.6 },
        { "dgx-h100", 16, SIM_PROTO_LL128, 331.2 },   /* 0.92 x 360 */
        { "dgx-h100", 16, SIM_PROTO_IDEAL, 450.0 },   /* no caps */
    };
    const double bytes = 4.0 * (1u << 30);

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        topo_t *t = load(cases[i].topo);
        double tm, busbw;

        if (t == NULL)
            continue;
        tm = sim_algo(t, "nccl-ring", CCS_COLL_ALLREDUCE, cases[i].ch, bytes,
                      cases[i].proto);
        busbw = bytes / tm * 2.0 * (t->ngpus - 1) / t->ngpus / 1e9;
        CHECK_MSG(fabs(busbw / cases[i].busbw_GBps - 1) < 0.02,
                  "%s, %u channel(s), %s: busbw %.1f GB/s, expected %.1f",
                  cases[i].topo, cases[i].ch, sim_proto_str(cases[i].proto),
                  busbw, cases[i].busbw_GBps);
        topo_destroy(t);
    }
}

/* Our algorithms: a transfer on C channels is capped at C caps.  The
 * uncapped run reports the channels its fastest transfer needs
 * (peak_channels); on that many (rounded up) the time is the uncapped
 * one exactly, on fewer it is slower. */
TEST(peak_channels_is_enough)
{
    topo_t *t = load("dgx-h100");
    algo_params_t p;
    ccs_sched_t *s = NULL;
    sim_t *sim = NULL;
    ccs_err_t err = { { 0 } };
    sim_opts_t o;
    sim_result_t r;
    double free_t = 0, need = 0, tm[3] = { 0, 0, 0 };

    if (t == NULL)
        return;
    algo_params_init(&p);
    CHECK_STATUS(algo_synthesize("ring", t, &p, &s, &err), CCS_OK);
    sim_opts_init(&o);
    o.proto = SIM_PROTO_SIMPLE;
    CHECK_STATUS(sim_create(s, t, &o, &sim, &err), CCS_OK);
    if (sim != NULL &&
        sim_exec(sim, 1 << 30, &o, &r, &err) == CCS_OK) {
        free_t = r.time_s;
        need = ceil(r.peak_channels - 1e-9);
        sim_result_free(&r);
    }
    /* the ring's link share, 0.8 x 450 GB/s, over 60 GB/s per channel */
    CHECK_MSG(need == 6, "ring on dgx-h100 needs %.0f channels, not 6",
              need);
    for (int k = 0; sim != NULL && k < 3; k++) {
        o.channels = (uint32_t)need - 1 + (uint32_t)k;   /* 5, 6, 7 */
        CHECK_STATUS(sim_exec(sim, 1 << 30, &o, &r, &err), CCS_OK);
        tm[k] = r.time_s;
        sim_result_free(&r);
    }
    CHECK_MSG(tm[0] > free_t * 1.05, "5 channels %.1f us, uncapped %.1f us",
              tm[0] * 1e6, free_t * 1e6);
    CHECK_MSG(tm[1] == free_t && tm[2] == free_t,
              "6 and 7 channels %.3f, %.3f us, uncapped %.3f us",
              tm[1] * 1e6, tm[2] * 1e6, free_t * 1e6);
    sim_destroy(sim);
    ccs_sched_destroy(s);
    topo_destroy(t);
}

/* NCCL's ring channel counts (nccl.h): one per NIC on rail-optimised
 * servers, 2 (duplicated) through one NIC or on direct networks, and
 * floor(NVLink / per-channel speed) doubled on one NVSwitch server. */
TEST(default_channels_as_nccl)
{
    static const struct { const char *topo; uint32_t ch; } cases[] = {
        { "dgx-h100", 14 }, { "dgx-a100", 14 }, { "cluster:2x8", 8 },
        { "cluster:2x8,nics=server", 2 }, { "torus:4x4", 2 },
        { "dgx1", 2 }, { "fattree:4x4", 2 },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        topo_t *t = load(cases[i].topo);

        if (t == NULL)
            continue;
        CHECK_MSG(base_channels(t) == cases[i].ch, "%s: %u channels, "
                  "expected %u", cases[i].topo, base_channels(t),
                  cases[i].ch);
        topo_destroy(t);
    }
}

/* Which per-channel cap a transfer gets (sim_proto_channels): the ring's
 * by GPU class and route, NCCL's tree caps by server count for caps=tree,
 * lanes= before the run's channel count, nothing for NVLS or ideal. */
TEST(channel_cap_selection)
{
    static const struct {
        const char *topo, *params;
        sim_proto_t proto;
        uint32_t channels;
        double nvlink_GBps;     /* data rate of one transfer, 0: uncapped */
    } cases[] = {
        { "dgx-h100", "", SIM_PROTO_SIMPLE, 2, 120.0 },
        { "dgx-a100", "", SIM_PROTO_SIMPLE, 2, 80.0 },
        { "dgx-h100", "channels=3\n", SIM_PROTO_LL128, 0, 110.1 },
        { "dgx-h100", "channels=8\nlanes=1\n", SIM_PROTO_SIMPLE, 4, 60.0 },
        { "dgx-h100", "", SIM_PROTO_SIMPLE, 0, 0 },
        { "dgx-h100", "lanes=1\ncaps=tree\n", SIM_PROTO_SIMPLE, 0, 38.7 },
        { "cluster:2x8", "lanes=1\ncaps=tree\n", SIM_PROTO_SIMPLE, 0, 41.4 },
        { "cluster:4x4", "lanes=1\ncaps=tree\n", SIM_PROTO_LL128, 0, 29.0 },
        { "dgx-a100", "lanes=1\ncaps=tree\n", SIM_PROTO_LL, 0, 24.0 / 3.8 },
        { "dgx-h100", "nvls=1\nlanes=1\n", SIM_PROTO_SIMPLE, 0, 0 },
        { "dgx-h100", "lanes=1\n", SIM_PROTO_IDEAL, 0, 0 },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        topo_t *t = load(cases[i].topo);
        ccs_sched_t *s = NULL;
        ccs_err_t err = { { 0 } };
        sim_proto_model_t m;
        double got;

        if (t == NULL)
            continue;
        CHECK_STATUS(ccs_sched_create(CCS_COLL_ALLREDUCE, 2, 2, "x", &s,
                                      &err), CCS_OK);
        if (s != NULL && cases[i].params[0] != '\0')
            CHECK_STATUS(ccs_sched_set_params(s, cases[i].params, &err),
                         CCS_OK);
        sim_proto_model(cases[i].proto, sim_sched_nvls(s), &m);
        sim_proto_channels(cases[i].proto, t, s, cases[i].channels, &m);
        got = m.xfer_cap[SIM_HW_NVLINK] * m.eff[SIM_HW_NVLINK] / 1e9;
        CHECK_MSG(fabs(got - cases[i].nvlink_GBps) < 1e-9 * (1 + got),
                  "case %zu (%s, %s): %.3f GB/s per transfer, expected "
                  "%.3f", i, cases[i].topo, sim_proto_str(cases[i].proto),
                  got, cases[i].nvlink_GBps);
        ccs_sched_destroy(s);
        topo_destroy(t);
    }
}

int main(void)
{
    RUN(baselines_verify);
    RUN(ring_channels_equal_ring_on_switch);
    RUN(rail_ring_reaches_nic_bound);
    RUN(nvls_halves_link_traffic);
    RUN(nvls_across_servers);
    RUN(nvls_tree_steps);
    RUN(protocols_order);
    RUN(baseline_never_slower_than_ring);
    RUN(nvls_attribute_and_nic_default);
    RUN(channel_count_follows_cap);
    RUN(peak_channels_is_enough);
    RUN(default_channels_as_nccl);
    RUN(channel_cap_selection);
    return TEST_SUMMARY();
}
