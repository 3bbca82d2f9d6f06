/* test_topo.c - topology model: built-ins, YAML files, routes, errors. */
#include <igraph.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "topo.h"
#include "topo_init.h"

static topo_t *load(const char *spec, const topo_opts_t *opts)
{
    ccs_err_t err = { { 0 } };
    topo_t *t = NULL;
    ccs_status_t st = topo_load(spec, opts, &t, &err);

    if (st != CCS_OK) {
        FAIL_AT("topo_load(%s): %s", spec, ccs_err_msg(&err, st));
        return NULL;
    }
    return t;
}

static int32_t gpu_out_degree(const topo_t *t, int32_t r)
{
    int32_t v = t->rank_node[r];
    return t->out_start[v + 1] - t->out_start[v];
}

/* ---- every built-in: counts, degrees, structure ---- */

static const struct {
    const char *spec;
    int32_t ngpus, nnodes, nlinks, nservers;
    int32_t deg_min, deg_max;    /* GPU out-degree */
    int uniform, forward;
} builtin_cases[] = {
    { "ring:8", 8, 8, 16, 1, 2, 2, 0, 1 },
    { "ring:2", 2, 2, 2, 1, 1, 1, 0, 1 },
    { "ring:1", 1, 1, 0, 1, 0, 0, 0, 1 },
    { "switch:16", 16, 17, 32, 1, 1, 1, 1, 0 },
    { "switch:1", 1, 2, 2, 1, 1, 1, 1, 0 },
    { "torus:4x4", 16, 16, 64, 1, 4, 4, 0, 1 },
    { "torus:8x8", 64, 64, 256, 1, 4, 4, 0, 1 },
    { "torus:2x2", 4, 4, 8, 1, 2, 2, 0, 1 },   /* no wrap on length 2 */
    { "torus:3x5", 15, 15, 60, 1, 4, 4, 0, 1 },
    { "mesh:4x4", 16, 16, 48, 1, 2, 4, 0, 1 },
    { "mesh:8x8", 64, 64, 224, 1, 2, 4, 0, 1 },
    { "mesh:1x5", 5, 5, 8, 1, 1, 2, 0, 1 },
    { "fattree:4x4", 16, 24, 64, 4, 1, 1, 0, 0 },
    { "fattree:2x4x2", 8, 12, 32, 2, 1, 1, 0, 0 },  /* 2 parallel uplinks */
    { "fattree:2x3x2", 6, 10, 20, 2, 1, 1, 0, 0 },  /* one wider uplink */
    { "fattree:1x4", 4, 5, 8, 1, 1, 1, 1, 0 },      /* no spines */
    { "dgx-h100", 8, 9, 16, 1, 1, 1, 1, 0 },
    { "dgx-a100", 8, 9, 16, 1, 1, 1, 1, 0 },
    { "dgx1", 8, 8, 48, 1, 6, 6, 0, 1 },
    { "cluster:2x8,nics=server", 16, 21, 40, 2, 1, 1, 0, 0 },
    { "cluster:4x8,nvlink=450GB/s,nic=50GB/s,nics=server", 32, 41, 80, 4, 1,
      1, 0, 0 },
    { "cluster:2x4,nics=gpu", 8, 19, 48, 2, 2, 2, 0, 0 },
};

TEST(test_builtin_counts)
{
    for (size_t i = 0; i < sizeof(builtin_cases) / sizeof(builtin_cases[0]);
         i++) {
        topo_t *t = load(builtin_cases[i].spec, NULL);
        int32_t dmin = INT32_MAX, dmax = 0;

        if (t == NULL)
            continue;
        CHECK_EQ_INT(t->ngpus, builtin_cases[i].ngpus);
        CHECK_EQ_INT(t->nnodes, builtin_cases[i].nnodes);
        CHECK_EQ_INT(t->nlinks, builtin_cases[i].nlinks);
        CHECK_EQ_INT(t->nservers, builtin_cases[i].nservers);
        for (int32_t r = 0; r < t->ngpus; r++) {
            int32_t d = gpu_out_degree(t, r);
            dmin = d < dmin ? d : dmin;
            dmax = d > dmax ? d : dmax;
        }
        CHECK_MSG(dmin == builtin_cases[i].deg_min &&
                      dmax == builtin_cases[i].deg_max,
                  "%s: GPU degree %d..%d, want %d..%d",
                  builtin_cases[i].spec, (int)dmin, (int)dmax,
                  (int)builtin_cases[i].deg_min,
                  (int)builtin_cases[i].deg_max);
        CHECK_MSG(topo_is_uniform_switch(t) == builtin_cases[i].uniform,
                  "%s: uniform switch %d", builtin_cases[i].spec,
                  topo_is_uniform_switch(t));
        CHECK_EQ_INT(topo_gpus_forward(t), builtin_cases[i].forward);
        topo_destroy(t);
    }
}

/* Structural invariants every loaded topology must satisfy. */
static void check_structure(const topo_t *t)
{
    int32_t prev_server = 0;

    for (int32_t r = 0; r < t->ngpus; r++) {
        const topo_node_t *n = &t->nodes[t->rank_node[r]];
        CHECK_MSG(n->kind == TOPO_NODE_GPU && n->rank == r,
                  "%s: rank %d maps to %s (rank %d)", t->name, (int)r,
                  n->name, (int)n->rank);
        CHECK_MSG(n->server >= prev_server, "%s: ranks not server by server",
                  t->name);
        prev_server = n->server;
    }
    CHECK_EQ_INT(t->out_start[t->nnodes], t->nlinks);
    CHECK_EQ_INT(t->in_start[t->nnodes], t->nlinks);
    for (int32_t v = 0; v < t->nnodes; v++) {
        if (t->nodes[v].kind != TOPO_NODE_GPU)
            CHECK_EQ_INT(t->nodes[v].rank, -1);
        for (int32_t k = t->out_start[v]; k < t->out_start[v + 1]; k++) {
            CHECK_EQ_INT(t->links[t->out_links[k]].src, v);
            if (k > t->out_start[v])
                CHECK(t->out_links[k] > t->out_links[k - 1]);
        }
        for (int32_t k = t->in_start[v]; k < t->in_start[v + 1]; k++) {
            CHECK_EQ_INT(t->links[t->in_links[k]].dst, v);
            if (k > t->in_start[v])
                CHECK(t->in_links[k] > t->in_links[k - 1]);
        }
    }
    for (int32_t l = 0; l < t->nlinks; l++) {
        CHECK(t->links[l].src != t->links[l].dst);
        CHECK(t->links[l].bw_Bps > 0 && t->links[l].alpha_s >= 0);
    }
}

TEST(test_builtin_structure)
{
    for (size_t i = 0; i < sizeof(builtin_cases) / sizeof(builtin_cases[0]);
         i++) {
        topo_t *t = load(builtin_cases[i].spec, NULL);
        if (t == NULL)
            continue;
        check_structure(t);
        topo_destroy(t);
    }
}

/* Defaults from the papers, and the switch alpha split. */
TEST(test_builtin_parameters)
{
    static const struct {
        const char *spec;
        int32_t link;
        double alpha_s, bw_Bps;
    } cases[] = {
        { "dgx-h100", 0, 1.5e-6, 450e9 },      /* 3 us over two hops */
        { "dgx-a100", 0, 1.5e-6, 300e9 },
        { "dgx1", 0, 3e-6, 25e9 },
        { "torus:4x4", 0, 150e-9, 16e9 },
        { "mesh:4x4", 0, 150e-9, 16e9 },
        { "switch:16,alpha=4us,bw=100GB/s", 0, 2e-6, 100e9 },
        { "ring:4,alpha=1us,bw=100Gb/s", 0, 1e-6, 12.5e9 },
        { "fattree:2x3x2", 12, 1e-6, 75e9 },   /* leaf-spine: 3*50/2 */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        topo_t *t = load(cases[i].spec, NULL);
        if (t == NULL)
            continue;
        CHECK_NEAR(t->links[cases[i].link].alpha_s, cases[i].alpha_s, 1e-12);
        CHECK_NEAR(t->links[cases[i].link].bw_Bps, cases[i].bw_Bps, 1e-12);
        topo_destroy(t);
    }
}

/* DGX-1: the six NVLinks of every GPU and the doubled pairs. */
TEST(test_dgx1_wiring)
{
    static const int8_t nv[8][8] = {
        { 0, 1, 1, 2, 2, 0, 0, 0 }, { 1, 0, 2, 1, 0, 2, 0, 0 },
        { 1, 2, 0, 2, 0, 0, 1, 0 }, { 2, 1, 2, 0, 0, 0, 0, 1 },
        { 2, 0, 0, 0, 0, 1, 1, 2 }, { 0, 2, 0, 0, 1, 0, 2, 1 },
        { 0, 0, 1, 0, 1, 2, 0, 2 }, { 0, 0, 0, 1, 2, 1, 2, 0 },
    };
    topo_t *t = load("dgx1", NULL);
    int32_t ids[4];

    if (t == NULL)
        return;
    for (int i = 0; i < 8; i++) {
        int sum = 0;
        for (int j = 0; j < 8; j++) {
            int32_t n = topo_links_between(t, t->rank_node[i],
                                           t->rank_node[j], ids, 4);
            CHECK_MSG(n == nv[i][j], "dgx1 GPU%d-GPU%d: %d links, want %d",
                      i, j, (int)n, nv[i][j]);
            sum += nv[i][j];
        }
        CHECK_EQ_INT(sum, 6);
    }
    /* cap smaller than the count: the total is still returned */
    CHECK_EQ_INT(topo_links_between(t, t->rank_node[0], t->rank_node[3], ids,
                                    1), 2);
    CHECK_EQ_INT(topo_links_between(t, -1, 0, ids, 4), 0);
    topo_destroy(t);
}

/* ---- shipped YAML files ---- */

static const struct {
    const char *file;
    const char *spec;    /* built-in it must equal, or NULL */
} yaml_files[] = {
    { "topologies/ring-8.yaml", "ring:8" },
    { "topologies/switch-16.yaml", "switch:16" },
    { "topologies/torus-4x4.yaml", "torus:4x4" },
    { "topologies/torus-8x8.yaml", "torus:8x8" },
    { "topologies/mesh-4x4.yaml", "mesh:4x4" },
    { "topologies/mesh-8x8.yaml", "mesh:8x8" },
    { "topologies/fattree-4x4.yaml", "fattree:4x4" },
    { "topologies/dgx-h100.yaml", "dgx-h100" },
    { "topologies/dgx-a100.yaml", "dgx-a100" },
    { "topologies/dgx1.yaml", "dgx1" },
    { "topologies/cluster-2x8.yaml", "cluster:2x8,nics=server" },
    { "topologies/adapcc-hetero.yaml", NULL },
};

TEST(test_yaml_equals_builtin)
{
    for (size_t i = 0; i < sizeof(yaml_files) / sizeof(yaml_files[0]); i++) {
        topo_t *y = load(yaml_files[i].file, NULL), *b = NULL;

        if (y == NULL)
            continue;
        check_structure(y);
        if (yaml_files[i].spec != NULL)
            b = load(yaml_files[i].spec, NULL);
        if (b != NULL) {
            int same = y->nnodes == b->nnodes && y->nlinks == b->nlinks &&
                       y->ngpus == b->ngpus && y->nservers == b->nservers;
            for (int32_t v = 0; same && v < y->nnodes; v++)
                same = y->nodes[v].kind == b->nodes[v].kind &&
                       y->nodes[v].server == b->nodes[v].server &&
                       topo_node_forwards(y, v) == topo_node_forwards(b, v);
            for (int32_t l = 0; same && l < y->nlinks; l++)
                same = y->links[l].src == b->links[l].src &&
                       y->links[l].dst == b->links[l].dst &&
                       fabs(y->links[l].alpha_s - b->links[l].alpha_s) <
                           1e-15 &&
                       y->links[l].bw_Bps == b->links[l].bw_Bps;
            CHECK_MSG(same, "%s differs from %s", yaml_files[i].file,
                      yaml_files[i].spec);
            CHECK_MSG(y->fingerprint == b->fingerprint,
                      "%s: fingerprint %016llx != %s's %016llx",
                      yaml_files[i].file,
                      (unsigned long long)y->fingerprint,
                      yaml_files[i].spec,
                      (unsigned long long)b->fingerprint);
        }
        topo_destroy(b);
        topo_destroy(y);
    }
}

TEST(test_adapcc_hetero)
{
    topo_t *t = load("topologies/adapcc-hetero.yaml", NULL);
    int32_t ids[2];

    if (t == NULL)
        return;
    CHECK_EQ_INT(t->ngpus, 24);
    CHECK_EQ_INT(t->nservers, 6);
    CHECK_EQ_INT(t->nodes[t->rank_node[15]].server, 3);
    CHECK_EQ_INT(t->nodes[t->rank_node[16]].server, 4);
    CHECK_STR_CONTAINS(t->nodes[t->rank_node[16]].name, "v0.gpu0");
    /* A100 pairs at 100 GB/s, V100 pairs at 50 GB/s, NICs 100 and 50 Gb/s */
    CHECK_EQ_INT(topo_links_between(t, t->rank_node[0], t->rank_node[1], ids,
                                    2), 1);
    CHECK_NEAR(t->links[ids[0]].bw_Bps, 100e9, 1e-12);
    CHECK_EQ_INT(topo_links_between(t, t->rank_node[16], t->rank_node[17],
                                    ids, 2), 1);
    CHECK_NEAR(t->links[ids[0]].bw_Bps, 50e9, 1e-12);
    for (int32_t v = 0; v < t->nnodes; v++) {
        int32_t n;
        if (t->nodes[v].kind != TOPO_NODE_NIC)
            continue;
        n = topo_links_between(t, v, t->nnodes - 1, ids, 2);
        CHECK_EQ_INT(n, 1);
        CHECK_NEAR(t->links[ids[0]].bw_Bps,
                   t->nodes[v].server < 4 ? 12.5e9 : 6.25e9, 1e-12);
    }
    CHECK(!topo_is_uniform_switch(t));
    topo_destroy(t);
}

/* ---- routes ---- */

/* Walk a route and check it is a chain from src to dst whose inner nodes
 * forward; returns the hop count or -1. */
static int32_t route_checked(const topo_t *t, int32_t src, int32_t dst)
{
    int32_t links[256], h = -1;
    ccs_err_t err = { { 0 } };
    ccs_status_t st = topo_route(t, src, dst, links, 256, &h, &err);
    int32_t at = src;

    if (st != CCS_OK) {
        FAIL_AT("route %s -> %s: %s", t->nodes[src].name, t->nodes[dst].name,
                ccs_err_msg(&err, st));
        return -1;
    }
    for (int32_t k = 0; k < h; k++) {
        const topo_link_t *l = &t->links[links[k]];
        if (l->src != at) {
            FAIL_AT("route %s -> %s: hop %d does not chain", t->nodes[src].name,
                    t->nodes[dst].name, (int)k);
            return -1;
        }
        if (k > 0 && !topo_node_forwards(t, at)) {
            FAIL_AT("route %s -> %s passes through %s, which does not "
                    "forward", t->nodes[src].name, t->nodes[dst].name,
                    t->nodes[at].name);
            return -1;
        }
        if (k > 0 && !topo_gpus_forward(t) &&
            t->nodes[at].kind == TOPO_NODE_GPU) {
            FAIL_AT("route %s -> %s uses GPU %s as transit",
                    t->nodes[src].name, t->nodes[dst].name,
                    t->nodes[at].name);
            return -1;
        }
        at = l->dst;
    }
    if (at != dst) {
        FAIL_AT("route ends at %s, not %s", t->nodes[at].name,
                t->nodes[dst].name);
        return -1;
    }
    return h;
}

TEST(test_route_hops)
{
    static const struct {
        const char *spec;
        int32_t src, dst, hops;    /* ranks */
    } cases[] = {
        { "switch:16", 0, 15, 2 },
        { "dgx-h100", 3, 4, 2 },
        { "ring:8", 0, 4, 4 },
        { "ring:8", 0, 7, 1 },
        { "torus:8x8", 0, 36, 8 },
        { "torus:8x8", 0, 7, 1 },         /* wrap-around */
        { "mesh:8x8", 0, 63, 14 },
        { "mesh:8x8", 0, 7, 7 },
        { "dgx1", 0, 5, 2 },
        { "dgx1", 0, 3, 1 },
        { "fattree:4x4", 0, 1, 2 },       /* same leaf */
        { "fattree:4x4", 0, 4, 4 },       /* via a spine */
        { "cluster:2x8,nics=server", 0, 7, 2 },
        /* gpu sw nic net nic sw gpu */
        { "cluster:2x8,nics=server", 0, 8, 6 },
        { "cluster:2x4,nics=gpu", 0, 4, 4 },
        { "topologies/adapcc-hetero.yaml", 0, 1, 1 },
        { "topologies/adapcc-hetero.yaml", 0, 23, 4 },
        { "tests/data/topo/transit.yaml", 0, 2, 3 },  /* not via gpu1 */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        topo_t *t = load(cases[i].spec, NULL);
        int32_t h;

        if (t == NULL)
            continue;
        h = route_checked(t, t->rank_node[cases[i].src],
                          t->rank_node[cases[i].dst]);
        CHECK_MSG(h == cases[i].hops, "%s: %d -> %d in %d hops, want %d",
                  cases[i].spec, (int)cases[i].src, (int)cases[i].dst,
                  (int)h, (int)cases[i].hops);
        topo_destroy(t);
    }
}

/* All GPU pairs: routes valid, never through a non-forwarding GPU, and as
 * long as an independent formula says (or the given maximum). */
TEST(test_route_all_pairs)
{
    static const struct {
        const char *spec;
        int32_t max_hops;
        int grid;   /* 1 torus, 2 mesh: check every pair by formula */
        int32_t rows, cols;
    } cases[] = {
        { "switch:16", 2, 0, 0, 0 },
        { "torus:8x8", 8, 1, 8, 8 },
        { "torus:3x5", 3, 1, 3, 5 },
        { "mesh:8x8", 14, 2, 8, 8 },
        { "dgx1", 2, 0, 0, 0 },
        { "fattree:4x4", 4, 0, 0, 0 },
        { "cluster:2x8,nics=server", 6, 0, 0, 0 },
        { "topologies/adapcc-hetero.yaml", 4, 0, 0, 0 },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        topo_t *t = load(cases[i].spec, NULL);
        int32_t maxh = 0;

        if (t == NULL)
            continue;
        for (int32_t a = 0; a < t->ngpus; a++) {
            for (int32_t b = 0; b < t->ngpus; b++) {
                int32_t h = route_checked(t, t->rank_node[a],
                                          t->rank_node[b]);
                if (h > maxh)
                    maxh = h;
                if (cases[i].grid) {
                    int32_t dr = abs(a / cases[i].cols - b / cases[i].cols);
                    int32_t dc = abs(a % cases[i].cols - b % cases[i].cols);
                    if (cases[i].grid == 1) {
                        if (cases[i].rows - dr < dr)
                            dr = cases[i].rows - dr;
                        if (cases[i].cols - dc < dc)
                            dc = cases[i].cols - dc;
                    }
                    CHECK_MSG(h == dr + dc, "%s: %d -> %d in %d hops, "
                              "want %d", cases[i].spec, (int)a, (int)b,
                              (int)h, (int)(dr + dc));
                }
            }
        }
        CHECK_MSG(maxh == cases[i].max_hops, "%s: max %d hops, want %d",
                  cases[i].spec, (int)maxh, (int)cases[i].max_hops);
        topo_destroy(t);
    }
}

/* At GPU routers (direct networks) ties go to the lowest link id, i.e.
 * the lexicographically smallest sequence of link ids. */
TEST(test_route_tie_break)
{
    topo_t *t = load("torus:4x4", NULL), *t2 = load("torus:4x4", NULL);
    int32_t a[8], b[8], ha = 0, hb = 0;

    if (t == NULL || t2 == NULL)
        goto done;
    /* 0 -> 5: via 1 (link 0, the 0-1 cable comes first) or via 4 */
    CHECK_STATUS(topo_route(t, 0, 5, a, 8, &ha, NULL), CCS_OK);
    CHECK_EQ_INT(ha, 2);
    CHECK_EQ_INT(a[0], 0);
    CHECK_EQ_INT(t->links[a[0]].dst, 1);
    /* same answer from another load of the same topology */
    CHECK_STATUS(topo_route(t2, 0, 5, b, 8, &hb, NULL), CCS_OK);
    CHECK_EQ_INT(hb, ha);
    CHECK(memcmp(a, b, sizeof(int32_t) * (size_t)ha) == 0);
    /* src == dst, and a short buffer still reports the full count */
    CHECK_STATUS(topo_route(t, 3, 3, a, 8, &ha, NULL), CCS_OK);
    CHECK_EQ_INT(ha, 0);
    a[1] = -7;
    CHECK_STATUS(topo_route(t, 0, 10, a, 1, &ha, NULL), CCS_OK);
    CHECK_EQ_INT(ha, 4);
    CHECK_EQ_INT(a[1], -7);
    CHECK_STATUS(topo_route(t, 0, 99, a, 8, &ha, NULL), CCS_ERR_INVALID);
done:
    topo_destroy(t);
    topo_destroy(t2);
}

/* The spine a route from rank a to rank b climbs to (-1: none). */
static int32_t route_spine(const topo_t *t, int32_t a, int32_t b)
{
    int32_t links[16], h = 0;

    if (topo_route(t, t->rank_node[a], t->rank_node[b], links, 16, &h,
                   NULL) != CCS_OK)
        return -1;
    for (int32_t k = 0; k < h && k < 16; k++) {
        const char *nm = t->nodes[t->links[links[k]].dst].name;
        if (strncmp(nm, "spine", 5) == 0)
            return atoi(nm + 5);
    }
    return -1;
}

/* Fat-trees: D-mod-k.  Traffic to the GPU of local index j climbs to
 * spine j / (G / S) (S spines, G GPUs per leaf); so every spine is used,
 * all routes to one GPU share a spine, and a shift permutation (rank i
 * to rank i + s) loads no directed link beyond its parallel count, which
 * is what lets ring-like and MultiTree steps run without spine conflicts.
 * Determinism: a second load routes identically. */
TEST(test_route_dmodk_fattree)
{
    static const struct {
        const char *spec;
        int32_t leaves, per, spines;
    } cases[] = {
        { "fattree:4x4", 4, 4, 4 },
        { "fattree:8x8", 8, 8, 8 },
        { "fattree:4x4x2", 4, 4, 2 },
        { "fattree:2x8x4", 2, 8, 4 },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        topo_t *t = load(cases[i].spec, NULL), *t2 = load(cases[i].spec,
                                                          NULL);
        int32_t n, G = cases[i].per, S = cases[i].spines;
        int32_t *use = NULL;
        bool *spine_seen = NULL;

        if (t == NULL || t2 == NULL)
            goto next;
        n = t->ngpus;
        CHECK_EQ_INT(n, cases[i].leaves * G);
        use = calloc((size_t)t->nlinks, sizeof(int32_t));
        spine_seen = calloc((size_t)S, sizeof(bool));
        for (int32_t a = 0; a < n; a++) {
            for (int32_t b = 0; b < n; b++) {
                int32_t la[16], lb[16], ha = 0, hb = 0;
                int32_t sp = route_spine(t, a, b);

                if (a == b)
                    continue;
                CHECK_STATUS(topo_route(t, t->rank_node[a], t->rank_node[b],
                                        la, 16, &ha, NULL), CCS_OK);
                CHECK_STATUS(topo_route(t2, t2->rank_node[a],
                                        t2->rank_node[b], lb, 16, &hb, NULL),
                             CCS_OK);
                CHECK_MSG(ha == hb && memcmp(la, lb, sizeof(int32_t) *
                                             (size_t)ha) == 0,
                          "%s: %d -> %d differs between loads",
                          cases[i].spec, (int)a, (int)b);
                if (a / G == b / G) {
                    CHECK_MSG(sp == -1 && ha == 2, "%s: %d -> %d leaves "
                              "its leaf", cases[i].spec, (int)a, (int)b);
                    continue;
                }
                CHECK_MSG(sp == (b % G) / (G / S), "%s: %d -> %d via spine "
                          "%d, want %d", cases[i].spec, (int)a, (int)b,
                          (int)sp, (int)((b % G) / (G / S)));
                if (sp >= 0 && sp < S)
                    spine_seen[sp] = true;
            }
        }
        for (int32_t j = 0; j < S; j++)
            CHECK_MSG(spine_seen[j], "%s: spine %d unused", cases[i].spec,
                      (int)j);
        /* shift permutations: per directed node pair, uses <= links */
        for (int32_t sh = 1; sh < n; sh++) {
            int32_t worst = 0;

            memset(use, 0, sizeof(int32_t) * (size_t)t->nlinks);
            for (int32_t a = 0; a < n; a++) {
                int32_t l[16], h = 0;
                topo_route(t, t->rank_node[a], t->rank_node[(a + sh) % n],
                           l, 16, &h, NULL);
                for (int32_t k = 0; k < h && k < 16; k++) {
                    /* count on the pipe's first link */
                    int32_t ids[64];
                    topo_links_between(t, t->links[l[k]].src,
                                       t->links[l[k]].dst, ids, 64);
                    use[ids[0]]++;
                }
            }
            for (int32_t l = 0; l < t->nlinks; l++) {
                int32_t par = topo_links_between(t, t->links[l].src,
                                                 t->links[l].dst, NULL, 0);
                if (use[l] > par && use[l] - par > worst)
                    worst = use[l] - par;
            }
            CHECK_MSG(worst == 0, "%s: shift %d overloads a link by %d",
                      cases[i].spec, (int)sh, (int)worst);
        }
next:
        free(use);
        free(spine_seen);
        topo_destroy(t);
        topo_destroy(t2);
    }
}

/* One switch: a single fewest-hop route, gpu -> switch -> gpu, whatever
 * the destination digits say. */
TEST(test_route_single_switch)
{
    topo_t *t = load("switch:16", NULL);

    if (t == NULL)
        return;
    for (int32_t a = 0; a < t->ngpus; a++) {
        for (int32_t b = 0; b < t->ngpus; b++) {
            int32_t l[4], h = 0;
            if (a == b)
                continue;
            CHECK_STATUS(topo_route(t, t->rank_node[a], t->rank_node[b], l,
                                    4, &h, NULL), CCS_OK);
            CHECK_EQ_INT(h, 2);
            CHECK_EQ_INT(t->links[l[0]].src, t->rank_node[a]);
            CHECK_EQ_INT(t->links[l[1]].dst, t->rank_node[b]);
            CHECK_EQ_INT(t->links[l[0]].dst, t->links[l[1]].src);
        }
    }
    topo_destroy(t);
}

/* A directed link toward a node that cannot answer: no route back. */
TEST(test_route_unreachable)
{
    topo_t *t = load("tests/data/topo/transit.yaml", NULL);
    ccs_err_t err = { { 0 } };
    int32_t l[8], h = -1, sw0;

    if (t == NULL)
        return;
    /* sw0 -> gpu1 exists, but gpu1 does not forward, so sw0 reaches
     * gpu2 only through sw1: 2 hops */
    sw0 = t->ngpus;
    CHECK_STATUS(topo_route(t, sw0, t->rank_node[2], l, 8, &h, &err),
                 CCS_OK);
    CHECK_EQ_INT(h, 2);
    topo_destroy(t);
}

/* ---- YAML errors ---- */

static const struct {
    const char *file;
    ccs_status_t status;
    const char *where;      /* "file:line:col" or "file:" */
    const char *phrase;
} yaml_errors[] = {
    { "dup_key.yaml", CCS_ERR_PARSE, "dup_key.yaml:6:3:",
      "duplicate key 'alpha'" },
    { "no_per_s.yaml", CCS_ERR_PARSE, "no_per_s.yaml:8:9:",
      "link bandwidth '10GB' has no '/s'" },
    { "not_a_number.yaml", CCS_ERR_PARSE, "not_a_number.yaml:4:31:",
      "'fast' is not a time" },
    { "unknown_key.yaml", CCS_ERR_PARSE, "unknown_key.yaml:5:24:",
      "unknown key 'latency'" },
    { "unknown_node.yaml", CCS_ERR_TOPOLOGY, "unknown_node.yaml:7:18:",
      "unknown node 'gpu9'" },
    { "missing_field.yaml", CCS_ERR_PARSE, "missing_field.yaml:6:5:",
      "missing required key 'b'" },
    { "missing_bw.yaml", CCS_ERR_PARSE, "missing_bw.yaml:4:5:",
      "a link is missing required key 'bw'" },
    { "negative_bw.yaml", CCS_ERR_TOPOLOGY, "negative_bw.yaml:5:11:",
      "negative bandwidth: switch bandwidth is '-5GB/s'" },
    { "negative_latency.yaml", CCS_ERR_TOPOLOGY,
      "negative_latency.yaml:2:10:", "negative latency: default alpha is '-1us'" },
    { "zero_bw.yaml", CCS_ERR_TOPOLOGY, "zero_bw.yaml:1:28:",
      "must be positive" },
    { "self_loop.yaml", CCS_ERR_TOPOLOGY, "self_loop.yaml:7:5:",
      "self loop" },
    { "disconnected.yaml", CCS_ERR_TOPOLOGY, "disconnected.yaml:5:5:",
      "disconnected: switch 'sw1' is not connected to GPU 'gpu0'" },
    { "one_way.yaml", CCS_ERR_TOPOLOGY, "one_way.yaml:5:5:",
      "GPU 'gpu1' cannot be reached from GPU 'gpu0'" },
    { "no_forward.yaml", CCS_ERR_TOPOLOGY, "no_forward.yaml:4:5:",
      "gpus_forward: true" },
    { "dup_node.yaml", CCS_ERR_TOPOLOGY, "dup_node.yaml:5:5:",
      "duplicate node name 'gpu0' (first defined at 3:5)" },
    { "no_gpu.yaml", CCS_ERR_TOPOLOGY, "no_gpu.yaml: ", "no GPU" },
    { "bad_kind.yaml", CCS_ERR_PARSE, "bad_kind.yaml:2:22:",
      "node kind 'tpu' is not gpu, nic or switch" },
    { "syntax.yaml", CCS_ERR_PARSE, "syntax.yaml:3:", "YAML syntax error" },
    { "bad_count.yaml", CCS_ERR_PARSE, "bad_count.yaml:5:31:",
      "link count 0 is outside 1..1024" },
    { "bad_bool.yaml", CCS_ERR_PARSE, "bad_bool.yaml:5:34:",
      "directed 'maybe' is not true or false" },
    { "not_mapping.yaml", CCS_ERR_PARSE, "not_mapping.yaml:1:1:",
      "must be a mapping" },
    { "empty.yaml", CCS_ERR_PARSE, "empty.yaml:1:1:",
      "empty topology file" },
    { "server_gap.yaml", CCS_ERR_TOPOLOGY, "server_gap.yaml:",
      "server 1 has no GPU" },
    { "two_docs.yaml", CCS_ERR_PARSE, "two_docs.yaml:3:",
      "more than one YAML document" },
    { "nic_to_unknown.yaml", CCS_ERR_TOPOLOGY, "nic_to_unknown.yaml:6:40:",
      "unknown node 'netx'" },
    { "does_not_exist.yaml", CCS_ERR_TOPOLOGY, "does_not_exist.yaml: ",
      "cannot open" },
    { "hex_number.yaml", CCS_ERR_PARSE, "hex_number.yaml:1:19:",
      "default alpha '0x10' is not a time" },
    { "huge_bw.yaml", CCS_ERR_PARSE, "huge_bw.yaml:4:40:",
      "link bandwidth '1e308TB/s' is not a bandwidth" },
    { "nul_byte.yaml", CCS_ERR_PARSE, "nul_byte.yaml:2:12:",
      "node name contains a NUL byte" },
};

TEST(test_yaml_errors)
{
    for (size_t i = 0; i < sizeof(yaml_errors) / sizeof(yaml_errors[0]);
         i++) {
        char path[256];
        ccs_err_t err = { { 0 } };
        topo_t *t = NULL;
        ccs_status_t st;

        snprintf(path, sizeof(path), "tests/data/topo/%s",
                 yaml_errors[i].file);
        st = topo_load(path, NULL, &t, &err);
        CHECK_MSG(st == yaml_errors[i].status, "%s: status %s, want %s (%s)",
                  path, ccs_status_name(st),
                  ccs_status_name(yaml_errors[i].status),
                  ccs_err_msg(&err, st));
        CHECK(t == NULL);
        CHECK_STR_CONTAINS(err.msg, yaml_errors[i].where);
        CHECK_STR_CONTAINS(err.msg, yaml_errors[i].phrase);
        topo_destroy(t);
    }
}

/* ---- spec errors ---- */

TEST(test_spec_errors)
{
    static const struct {
        const char *spec;
        const char *phrase;
    } cases[] = {
        { "nope", "unknown topology 'nope'" },
        { "torus:0x3", "outside 1.." },
        { "torus:4", "bad size, expected torus:AxB" },
        { "ring", "missing size" },
        { "ring:4x", "bad size" },
        { "ring:-3", "bad size" },
        { "dgx-h100:8", "takes no size" },
        { "switch:8,foo=1", "unknown option 'foo' for switch" },
        { "switch:8,nic=1GB/s", "unknown option 'nic' for switch" },
        { "switch:8,alpha=fast", "bad value 'fast' for 'alpha'" },
        { "switch:8,bw=10GB", "bad value '10GB' for 'bw'" },
        { "switch:8,bw", "not KEY=VALUE" },
        { "cluster:2x4,nics=rack", "bad value 'rack' for 'nics'" },
        { "torus:300x300", "more than 65536 GPUs" },
        { "no/such/dir/topo", "no such topology file" },
        { "", "empty topology spec" },
        { "switch:8,", "empty option" },
        { "switch:8,,alpha=1us", "empty option" },
        { "switch:8,alpha=1us,alpha=2us", "option 'alpha' given twice" },
        { "cluster:2x4,bw=1GB/s,nvlink=2GB/s", "given twice" },
        { "switch:8,alpha=0x10", "bad value '0x10' for 'alpha'" },
        { "switch:8,bw=1e308TB/s", "bad value '1e308TB/s' for 'bw'" },
        { "switch:8,alpha=-0", "bad value '-0' for 'alpha'" },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        ccs_err_t err = { { 0 } };
        topo_t *t = NULL;
        ccs_status_t st = topo_load(cases[i].spec, NULL, &t, &err);

        CHECK_MSG(st == CCS_ERR_TOPOLOGY, "'%s': status %s", cases[i].spec,
                  ccs_status_name(st));
        CHECK(t == NULL);
        CHECK_STR_CONTAINS(err.msg, cases[i].phrase);
    }
}

/* ---- overrides ---- */

TEST(test_overrides)
{
    topo_opts_t o = { 1e-6, 100e9 }, only_bw = { 0, 25e9 };
    topo_t *plain = load("switch:8", NULL), *t = load("switch:8", &o);
    topo_t *b = load("dgx1", &only_bw);
    topo_t *c = load("cluster:2x4,nvlink=100GB/s,nic=100Gb/s,netalpha=10us,"
                     "nics=server",
                     NULL);

    if (plain == NULL || t == NULL || b == NULL || c == NULL)
        goto done;
    for (int32_t l = 0; l < t->nlinks; l++) {
        CHECK_NEAR(t->links[l].alpha_s, 1e-6, 1e-12);
        CHECK_NEAR(t->links[l].bw_Bps, 100e9, 1e-12);
    }
    CHECK(t->fingerprint != plain->fingerprint);
    for (int32_t l = 0; l < b->nlinks; l++) {
        CHECK_NEAR(b->links[l].alpha_s, 3e-6, 1e-12);   /* kept */
        CHECK_NEAR(b->links[l].bw_Bps, 25e9, 1e-12);
    }
    /* cluster options: NVSwitch links, NIC links with half of netalpha */
    for (int32_t l = 0; l < c->nlinks; l++) {
        const topo_link_t *k = &c->links[l];
        topo_node_kind_t ks = c->nodes[k->src].kind;
        topo_node_kind_t kd = c->nodes[k->dst].kind;

        if (ks == TOPO_NODE_GPU || kd == TOPO_NODE_GPU) {
            CHECK_NEAR(k->bw_Bps, 100e9, 1e-12);
            CHECK_NEAR(k->alpha_s, 1.5e-6, 1e-12);
        } else {
            CHECK_NEAR(k->bw_Bps, 12.5e9, 1e-12);
            if (ks == TOPO_NODE_NIC && kd == TOPO_NODE_SWITCH &&
                strcmp(c->nodes[k->dst].name, "net") == 0)
                CHECK_NEAR(k->alpha_s, 5e-6, 1e-12);
        }
    }
done:
    topo_destroy(plain);
    topo_destroy(t);
    topo_destroy(b);
    topo_destroy(c);
}

/* ---- fingerprints ---- */

static uint64_t fnv1a(const char *s)
{
    uint64_t h = UINT64_C(0xcbf29ce484222325);
    for (; *s; s++) {
        h ^= (uint8_t)*s;
        h *= UINT64_C(0x100000001b3);
    }
    return h;
}

TEST(test_fingerprints)
{
    static const char *const specs[] = {
        "ring:8", "switch:16", "torus:4x4", "torus:8x8", "mesh:4x4",
        "mesh:8x8", "fattree:4x4", "dgx-h100", "dgx-a100", "dgx1",
        "cluster:2x8,nics=server", "cluster:2x8,nics=gpu", "switch:8,alpha=1us",
        "topologies/adapcc-hetero.yaml",
    };
    enum { N = sizeof(specs) / sizeof(specs[0]) };
    uint64_t fp[N];
    topo_t *t;

    for (int i = 0; i < N; i++) {
        t = load(specs[i], NULL);
        fp[i] = t ? t->fingerprint : (uint64_t)i;
        topo_destroy(t);
        t = load(specs[i], NULL);         /* stable across loads */
        if (t != NULL)
            CHECK(t->fingerprint == fp[i]);
        topo_destroy(t);
    }
    for (int i = 0; i < N; i++)
        for (int j = i + 1; j < N; j++)
            CHECK_MSG(fp[i] != fp[j], "%s and %s share a fingerprint",
                      specs[i], specs[j]);
    /* dgx-h100 is switch:8 with its defaults: the same graph */
    {
        topo_t *a = load("dgx-h100", NULL), *b = load("switch:8", NULL);
        if (a != NULL && b != NULL)
            CHECK(a->fingerprint == b->fingerprint);
        topo_destroy(a);
        topo_destroy(b);
    }
    /* the documented canonical text, recomputed here */
    t = load("ring:2", NULL);
    if (t != NULL) {
        uint64_t want = fnv1a("ccsynth-topo 1\n"
                              "nodes 2 links 2\n"
                              "n 0 gpu 0 0 1\n"
                              "n 1 gpu 0 1 1\n"
                              "l 0 0 1 150000 16000000000\n"
                              "l 1 1 0 150000 16000000000\n");
        CHECK_MSG(t->fingerprint == want, "ring:2 fingerprint %016llx, "
                  "want %016llx", (unsigned long long)t->fingerprint,
                  (unsigned long long)want);
    }
    topo_destroy(t);
}

/* ---- summary, DOT, list ---- */

static char *capture(const topo_t *t, int dot)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ccs_err_t err = { { 0 } };
    ccs_status_t st;

    if (f == NULL)
        return NULL;
    st = dot ? topo_write_dot(t, f, &err) : topo_print_summary(t, f, &err);
    fclose(f);
    CHECK_STATUS(st, CCS_OK);
    return buf;
}

static char *capture_exact(const topo_t *t, int exact)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ccs_err_t err = { { 0 } };
    ccs_status_t st;

    if (f == NULL)
        return NULL;
    st = topo_print_summary_opt(t, f, exact, &err);
    fclose(f);
    CHECK_STATUS(st, CCS_OK);
    return buf;
}

/* Large topologies: the summary samples its sources and says so, and on
 * vertex-transitive ones (every source alike) the sampled route figures
 * are the exact ones. */
TEST(test_summary_sampled)
{
    static const struct {
        const char *spec;
        const char *has;        /* in the default (sampled) summary */
        int check_exact;        /* compare with --exact (cheap enough) */
    } rows[] = {
        { "switch:4096", "max 2 hops, mean 2.00", 1 },
        { "torus:48x48", "max 48 hops, mean 24.01", 1 },
        { "ring:8192", "max 4096 hops", 0 },
        { "fattree:64x64", "max 4 hops", 0 },
        { "cluster:1024x8,nics=gpu", "max 4 hops", 0 },
    };

    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        topo_t *t = load(rows[i].spec, NULL);
        char *s = NULL, *x = NULL;

        if (t == NULL)
            continue;
        s = capture_exact(t, 0);
        CHECK_STR_CONTAINS(s, "sampled: routes from");
        CHECK_STR_CONTAINS(s, "--exact for all");
        CHECK_STR_CONTAINS(s, rows[i].has);
        if (rows[i].check_exact) {
            x = capture_exact(t, 1);
            CHECK_STR_CONTAINS(x, rows[i].has);
            CHECK_STR_CONTAINS(x, "(all nodes, igraph)");
            CHECK_MSG(x == NULL || strstr(x, "sampled") == NULL,
                      "%s: exact summary says sampled", rows[i].spec);
        }
        free(s);
        free(x);
        topo_destroy(t);
    }
}

TEST(test_summary_and_dot)
{
    topo_t *tor = load("torus:8x8", NULL);
    topo_t *cl = load("cluster:2x8,nics=server", NULL);
    topo_t *d1 = load("dgx1", NULL);
    char *s = NULL, *d = NULL, *e = NULL, *lst = NULL;
    size_t len = 0;
    FILE *f;

    if (tor == NULL || cl == NULL || d1 == NULL)
        goto done;
    s = capture(tor, 0);
    CHECK_STR_CONTAINS(s, "64: 64 gpu, 0 nic, 0 switch");
    CHECK_STR_CONTAINS(s, "diameter     8 hops");
    CHECK_STR_CONTAINS(s, "max 8 hops");
    CHECK_STR_CONTAINS(s, "out 4..4, in 4..4");
    CHECK_STR_CONTAINS(s, "16 GB/s .. 16 GB/s");
    CHECK_STR_CONTAINS(s, "150 ns .. 150 ns");
    free(s);
    s = capture(cl, 0);
    CHECK_STR_CONTAINS(s, "21: 16 gpu, 2 nic, 3 switch");
    CHECK_STR_CONTAINS(s, "servers      2");
    CHECK_STR_CONTAINS(s, "server 1     ranks 8..15 (8 gpus)");
    CHECK_STR_CONTAINS(s, "uniform switch no");
    d = capture(cl, 1);
    CHECK_STR_CONTAINS(d, "subgraph cluster_s1");
    CHECK_STR_CONTAINS(d, "shape=diamond");
    CHECK_STR_CONTAINS(d, "shape=ellipse");
    CHECK_STR_CONTAINS(d, "shape=box");
    CHECK_STR_CONTAINS(d, "dir=both");
    e = capture(d1, 1);
    CHECK_STR_CONTAINS(e, "2 x 25 GB/s");     /* doubled NVLinks, once */
    {
        /* 16 GPU pairs drawn once each */
        int n = 0;
        for (const char *p = e; (p = strstr(p, " -> ")) != NULL; p++)
            n++;
        CHECK_EQ_INT(n, 16);
    }
    f = open_memstream(&lst, &len);
    if (f != NULL) {
        topo_list_builtins(f);
        fclose(f);
        CHECK_STR_CONTAINS(lst, "torus:AxB");
        CHECK_STR_CONTAINS(lst, "fattree:LxG[xS]");
        CHECK_STR_CONTAINS(lst, "cluster:SxG");
        CHECK_STR_CONTAINS(lst, "dgx1");
    }
done:
    free(s);
    free(d);
    free(e);
    free(lst);
    topo_destroy(tor);
    topo_destroy(cl);
    topo_destroy(d1);
}

TEST(test_misc)
{
    CHECK(strcmp(topo_node_kind_str(TOPO_NODE_GPU), "gpu") == 0);
    CHECK(strcmp(topo_node_kind_str(TOPO_NODE_NIC), "nic") == 0);
    CHECK(strcmp(topo_node_kind_str(TOPO_NODE_SWITCH), "switch") == 0);
    topo_destroy(NULL);
    CHECK_STATUS(topo_load("ring:4", NULL, NULL, NULL), CCS_ERR_INVALID);
}

/* topo_global_init (called first in main) replaced igraph's default error
 * handler, which aborts the process: a failing igraph call must return its
 * error code instead.  With the default handler this test never returns. */
TEST(test_igraph_errors_return)
{
    igraph_t g;
    igraph_vector_int_t edges;
    igraph_error_t e;

    e = igraph_empty(&g, -1, IGRAPH_DIRECTED);   /* negative vertex count */
    CHECK_MSG(e == IGRAPH_EINVAL, "igraph_empty(-1): %d (%s)", (int)e,
              igraph_strerror(e));
    /* An edge to a vertex that does not exist: igraph cleans up its own
     * FINALLY stack through our handler; g stays usable. */
    CHECK_EQ_INT(igraph_empty(&g, 2, IGRAPH_DIRECTED), IGRAPH_SUCCESS);
    CHECK_EQ_INT(igraph_vector_int_init_int(&edges, 2, 0, 5),
                 IGRAPH_SUCCESS);
    e = igraph_add_edges(&g, &edges, NULL);
    CHECK_MSG(e != IGRAPH_SUCCESS, "add_edges to vertex 5 of 2 succeeded");
    CHECK_EQ_INT(igraph_ecount(&g), 0);
    igraph_vector_int_destroy(&edges);
    igraph_destroy(&g);
}

int main(void)
{
    topo_global_init();
    RUN(test_igraph_errors_return);
    RUN(test_builtin_counts);
    RUN(test_builtin_structure);
    RUN(test_builtin_parameters);
    RUN(test_dgx1_wiring);
    RUN(test_yaml_equals_builtin);
    RUN(test_adapcc_hetero);
    RUN(test_route_hops);
    RUN(test_route_all_pairs);
    RUN(test_route_tie_break);
    RUN(test_route_unreachable);
    RUN(test_route_dmodk_fattree);
    RUN(test_route_single_switch);
    RUN(test_yaml_errors);
    RUN(test_spec_errors);
    RUN(test_overrides);
    RUN(test_fingerprints);
    RUN(test_summary_and_dot);
    RUN(test_summary_sampled);
    RUN(test_misc);
    return TEST_SUMMARY();
}
