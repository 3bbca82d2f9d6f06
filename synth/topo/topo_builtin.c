/*
 * topo_builtin.c - built-in topology specs ("ring:8", "switch:16",
 * "torus:4x4", "fattree:4x4", "dgx-h100", "cluster:4x8,nic=50GB/s", ...).
 *
 * Grammar:  NAME[:D1[xD2[xD3]]][,KEY=VALUE]...
 *
 * Each built-in is described with the same builder calls the YAML loader
 * uses (tb_server_nodes / tb_add_cable), in the order documented in
 * docs/topology.md, so topologies/<name>.yaml loads to the same graph.
 *
 * Meaning of the spec's alpha: for switched built-ins it is the latency
 * GPU -> switch -> GPU, split evenly over the two links; for direct networks
 * (ring, torus, mesh, dgx1) it is the latency of one link.  The numbers
 * come from the papers: 150 ns and 16 GB/s per link per direction on the
 * torus and mesh (MultiTree's evaluation), 450 GB/s per GPU and 3 us on the
 * DGX H100 (StragglAR), 300 GB/s on the DGX A100, 25 GB/s per NVLink per
 * direction on the DGX-1 (V100).
 */
#include <stdlib.h>
#include <string.h>

#include "units.h"
#include "topo_internal.h"

enum {
    BI_ALPHA = 1u << 0,
    BI_BW = 1u << 1,
    BI_NVLINK = 1u << 2,
    BI_NIC = 1u << 3,
    BI_NETALPHA = 1u << 4,
    BI_NICS = 1u << 5,
    BI_NVLS = 1u << 6,
};

typedef struct bi_args {
    int32_t dim[3];
    int ndim;
    double alpha_s;          /* see the file comment for its meaning */
    double bw_Bps;           /* per GPU (switch) or per link (direct) */
    double nic_Bps;          /* cluster: NIC bandwidth */
    double net_alpha_s;      /* cluster: NIC -> switch -> NIC latency */
    int nics_per_gpu;        /* cluster: one NIC per GPU, not per server */
    int nvls;                /* switches reduce in the fabric (NVLS) */
} bi_args_t;

typedef ccs_status_t (*bi_build_fn)(topo_builder_t *b, const bi_args_t *a,
                                    ccs_err_t *err);

typedef struct bi_spec {
    const char *name;
    int min_dims, max_dims;
    unsigned opts;           /* BI_* keys it accepts */
    double alpha_s, bw_Bps;  /* defaults */
    const char *form;
    const char *desc;
    bi_build_fn build;
} bi_spec_t;

static const tb_loc_t NOLOC = { 0, 0 };

static ccs_status_t add_gpus(topo_builder_t *b, int32_t n, int32_t *first,
                             ccs_err_t *err)
{
    char name[32];
    ccs_status_t st;
    int32_t id;

    for (int32_t i = 0; i < n; i++) {
        snprintf(name, sizeof(name), "gpu%d", (int)i);
        st = tb_add_node(b, name, TOPO_NODE_GPU, 0, -1, NOLOC, &id, err);
        if (st != CCS_OK)
            return st;
        if (i == 0)
            *first = id;
    }
    return CCS_OK;
}

/* ring:N - GPUs i and i+1 (mod N) linked both ways; ring:2 is one cable. */
static ccs_status_t build_ring(topo_builder_t *b, const bi_args_t *a,
                               ccs_err_t *err)
{
    int32_t n = a->dim[0], g0 = 0;
    ccs_status_t st;

    b->gpus_forward = 1;
    st = add_gpus(b, n, &g0, err);
    for (int32_t i = 0; st == CCS_OK && n >= 2 && i < n; i++) {
        if (n == 2 && i == 1)
            break;
        st = tb_add_cable(b, g0 + i, g0 + (i + 1) % n, a->alpha_s,
                          a->bw_Bps, 1, 0, NOLOC, err);
    }
    return st;
}

/* torus:AxB / mesh:AxB - GPU r*B+c; per node in id order its cable to the
 * right (c+1), then down (r+1); the torus wraps a dimension longer than 2. */
static ccs_status_t build_grid(topo_builder_t *b, const bi_args_t *a,
                               int wrap, ccs_err_t *err)
{
    int32_t rows = a->dim[0], cols = a->dim[1], g0 = 0;
    ccs_status_t st;

    b->gpus_forward = 1;
    st = add_gpus(b, rows * cols, &g0, err);
    for (int32_t r = 0; r < rows && st == CCS_OK; r++) {
        for (int32_t c = 0; c < cols && st == CCS_OK; c++) {
            int32_t v = g0 + r * cols + c;

            if (c + 1 < cols)
                st = tb_add_cable(b, v, v + 1, a->alpha_s, a->bw_Bps, 1, 0,
                                  NOLOC, err);
            else if (wrap && cols > 2)
                st = tb_add_cable(b, v, g0 + r * cols, a->alpha_s,
                                  a->bw_Bps, 1, 0, NOLOC, err);
            if (st != CCS_OK)
                break;
            if (r + 1 < rows)
                st = tb_add_cable(b, v, v + cols, a->alpha_s, a->bw_Bps, 1,
                                  0, NOLOC, err);
            else if (wrap && rows > 2)
                st = tb_add_cable(b, v, g0 + c, a->alpha_s, a->bw_Bps, 1, 0,
                                  NOLOC, err);
        }
    }
    return st;
}

static ccs_status_t build_torus(topo_builder_t *b, const bi_args_t *a,
                                ccs_err_t *err)
{
    return build_grid(b, a, 1, err);
}

static ccs_status_t build_mesh(topo_builder_t *b, const bi_args_t *a,
                               ccs_err_t *err)
{
    return build_grid(b, a, 0, err);
}

/* One server "s0" of n GPUs on a switch; alpha split over the two hops. */
static ccs_status_t build_one_switch(topo_builder_t *b, int32_t n,
                                     const bi_args_t *a, ccs_err_t *err)
{
    tb_server_t s;
    ccs_status_t st;

    memset(&s, 0, sizeof(s));
    snprintf(s.name, sizeof(s.name), "s0");
    s.ngpus = n;
    s.has_switch = 1;
    s.intra_alpha_s = a->alpha_s / 2;
    s.intra_bw_Bps = a->bw_Bps;
    s.switch_nvls = a->nvls;
    st = tb_server_nodes(b, &s, 0, err);
    if (st == CCS_OK)
        st = tb_server_links(b, &s, -1, err);
    return st;
}

static ccs_status_t build_switch(topo_builder_t *b, const bi_args_t *a,
                                 ccs_err_t *err)
{
    return build_one_switch(b, a->dim[0], a, err);
}

static ccs_status_t build_dgx8(topo_builder_t *b, const bi_args_t *a,
                               ccs_err_t *err)
{
    return build_one_switch(b, 8, a, err);
}

/* DGX H100: the third-generation NVSwitch reduces and multicasts in the
 * switch (NVLink SHARP), which NCCL uses as its NVLS algorithm; the A100's
 * NVSwitch cannot, so dgx-a100 stays build_dgx8 without it. */
static ccs_status_t build_dgx_h100(topo_builder_t *b, const bi_args_t *a,
                                   ccs_err_t *err)
{
    bi_args_t h = *a;

    h.nvls = 1;
    return build_one_switch(b, 8, &h, err);
}

/* DGX-1 (V100) hybrid cube-mesh: two fully connected quads {0..3} and
 * {4..7} plus GPU i to GPU i+4; eight of the sixteen pairs carry two
 * NVLinks, so every GPU uses its six (NCCL's DGX-1V topology dump and
 * NVIDIA's DGX-1 V100 architecture paper agree on this wiring). */
static ccs_status_t build_dgx1(topo_builder_t *b, const bi_args_t *a,
                               ccs_err_t *err)
{
    static const int8_t pairs[16][3] = {
        { 0, 1, 1 }, { 0, 2, 1 }, { 0, 3, 2 }, { 0, 4, 2 },
        { 1, 2, 2 }, { 1, 3, 1 }, { 1, 5, 2 }, { 2, 3, 2 },
        { 2, 6, 1 }, { 3, 7, 1 }, { 4, 5, 1 }, { 4, 6, 1 },
        { 4, 7, 2 }, { 5, 6, 2 }, { 5, 7, 1 }, { 6, 7, 2 },
    };
    int32_t g0 = 0;
    ccs_status_t st;

    b->gpus_forward = 1;
    st = add_gpus(b, 8, &g0, err);
    for (int i = 0; i < 16 && st == CCS_OK; i++)
        st = tb_add_cable(b, g0 + pairs[i][0], g0 + pairs[i][1], a->alpha_s,
                          a->bw_Bps, pairs[i][2], 0, NOLOC, err);
    return st;
}

/* fattree:LxG[xS] - leaf i and its G GPUs form server "s<i>" (leaf node
 * "s<i>.sw"); S spine switches "spine<j>" (default G, or none with one
 * leaf).  Every leaf links to every spine with G/S parallel links of the
 * GPU bandwidth when S divides G, else one link of G*bw/S: either way a
 * leaf's uplink capacity equals its GPUs' (full bisection).  Every link
 * gets alpha/2: one switch costs alpha, leaf-spine-leaf 2*alpha. */
static ccs_status_t build_fattree(topo_builder_t *b, const bi_args_t *a,
                                  ccs_err_t *err)
{
    int32_t nleaf = a->dim[0], g = a->dim[1];
    int32_t nspine = a->ndim > 2 ? a->dim[2] : (nleaf > 1 ? g : 0);
    tb_server_t *sv = NULL;
    int32_t spine0 = -1, id;
    ccs_status_t st = CCS_OK;
    char name[32];

    /* ownership: local, freed below */
    sv = calloc((size_t)nleaf, sizeof(*sv));
    if (sv == NULL)
        return ccs_err_set(err, CCS_ERR_NOMEM, "out of memory (fattree)");
    for (int32_t i = 0; i < nleaf && st == CCS_OK; i++) {
        snprintf(sv[i].name, sizeof(sv[i].name), "s%d", (int)i);
        sv[i].ngpus = g;
        sv[i].has_switch = 1;
        sv[i].intra_alpha_s = a->alpha_s / 2;
        sv[i].intra_bw_Bps = a->bw_Bps;
        st = tb_server_nodes(b, &sv[i], i, err);
    }
    for (int32_t j = 0; j < nspine && st == CCS_OK; j++) {
        snprintf(name, sizeof(name), "spine%d", (int)j);
        st = tb_add_node(b, name, TOPO_NODE_SWITCH, -1, -1, NOLOC, &id, err);
        if (j == 0)
            spine0 = id;
    }
    for (int32_t i = 0; i < nleaf && st == CCS_OK; i++)
        st = tb_server_links(b, &sv[i], -1, err);
    for (int32_t i = 0; i < nleaf && st == CCS_OK; i++) {
        for (int32_t j = 0; j < nspine && st == CCS_OK; j++) {
            if (g % nspine == 0)
                st = tb_add_cable(b, sv[i].sw, spine0 + j, a->alpha_s / 2,
                                  a->bw_Bps, g / nspine, 0, NOLOC, err);
            else
                st = tb_add_cable(b, sv[i].sw, spine0 + j, a->alpha_s / 2,
                                  a->bw_Bps * g / nspine, 1, 0, NOLOC, err);
        }
    }
    free(sv);
    return st;
}

/* cluster:SxG - servers "s<i>" with G GPUs on an NVSwitch "s<i>.sw"
 * (alpha/2 and nvlink bandwidth per link), one NIC "s<i>.nic<k>" per GPU
 * (default; or one NIC "s<i>.nic" on the switch with nics=server), all
 * NICs on one
 * network switch "net" (netalpha/2 per NIC link).  GPU-to-GPU latency is
 * alpha inside a server and alpha + netalpha across servers. */
static ccs_status_t build_cluster(topo_builder_t *b, const bi_args_t *a,
                                  ccs_err_t *err)
{
    int32_t ns = a->dim[0], g = a->dim[1], net = -1;
    tb_server_t *sv = NULL;
    ccs_status_t st = CCS_OK;

    /* ownership: local, freed below */
    sv = calloc((size_t)ns, sizeof(*sv));
    if (sv == NULL)
        return ccs_err_set(err, CCS_ERR_NOMEM, "out of memory (cluster)");
    for (int32_t i = 0; i < ns && st == CCS_OK; i++) {
        snprintf(sv[i].name, sizeof(sv[i].name), "s%d", (int)i);
        sv[i].ngpus = g;
        sv[i].has_switch = 1;
        sv[i].intra_alpha_s = a->alpha_s / 2;
        sv[i].intra_bw_Bps = a->bw_Bps;
        sv[i].switch_nvls = a->nvls;
        sv[i].nic_mode = a->nics_per_gpu ? TB_NIC_GPU : TB_NIC_SERVER;
        /* Per-GPU NICs skip the switch, so their attach link takes the
         * switch hop's latency; a per-server NIC sits on the switch. */
        sv[i].attach_alpha_s = a->nics_per_gpu ? a->alpha_s / 2 : 0;
        sv[i].nic_alpha_s = a->net_alpha_s / 2;
        sv[i].nic_bw_Bps = a->nic_Bps;
        st = tb_server_nodes(b, &sv[i], i, err);
    }
    if (st == CCS_OK)
        st = tb_add_node(b, "net", TOPO_NODE_SWITCH, -1, -1, NOLOC, &net,
                         err);
    for (int32_t i = 0; i < ns && st == CCS_OK; i++)
        st = tb_server_links(b, &sv[i], net, err);
    free(sv);
    return st;
}

static const bi_spec_t builtins[] = {
    { "ring", 1, 1, BI_ALPHA | BI_BW, 150e-9, 16e9, "ring:N",
      "N GPUs in a bidirectional ring; GPUs forward (150 ns, 16 GB/s "
      "per link per direction)", build_ring },
    { "switch", 1, 1, BI_ALPHA | BI_BW | BI_NVLS, 3e-6, 450e9, "switch:N",
      "N GPUs on one non-blocking switch (3 us GPU-switch-GPU, "
      "450 GB/s per GPU per direction; nvls=on: it reduces)",
      build_switch },
    { "torus", 2, 2, BI_ALPHA | BI_BW, 150e-9, 16e9, "torus:AxB",
      "2D torus of AxB GPUs; GPUs forward (150 ns, 16 GB/s per link per "
      "direction, MultiTree)", build_torus },
    { "mesh", 2, 2, BI_ALPHA | BI_BW, 150e-9, 16e9, "mesh:AxB",
      "2D mesh of AxB GPUs; GPUs forward (150 ns, 16 GB/s per link)",
      build_mesh },
    { "fattree", 2, 3, BI_ALPHA | BI_BW, 2e-6, 50e9, "fattree:LxG[xS]",
      "2-level fat-tree: L leaf switches of G GPUs, S spines (default G), "
      "full bisection (2 us per switch, 50 GB/s per GPU)", build_fattree },
    { "dgx-h100", 0, 0, BI_ALPHA | BI_BW, 3e-6, 450e9, "dgx-h100",
      "8 H100 on NVSwitch, 450 GB/s per GPU per direction, 3 us "
      "(StragglAR); NVSwitch reduces (NVLS)", build_dgx_h100 },
    { "dgx-a100", 0, 0, BI_ALPHA | BI_BW, 3e-6, 300e9, "dgx-a100",
      "8 A100 on NVSwitch, 300 GB/s per GPU per direction, 3 us; no "
      "in-switch reduction",
      build_dgx8 },
    { "dgx1", 0, 0, BI_ALPHA | BI_BW, 3e-6, 25e9, "dgx1",
      "8 V100, hybrid cube-mesh NVLink, 25 GB/s per NVLink per direction; "
      "GPUs forward", build_dgx1 },
    { "cluster", 2, 2,
      BI_ALPHA | BI_BW | BI_NVLINK | BI_NIC | BI_NETALPHA | BI_NICS |
      BI_NVLS, 3e-6, 450e9, "cluster:SxG",
      "S servers of G GPUs on an NVSwitch (nvlink=450GB/s, alpha=3us), one "
      "NIC per GPU (nic=50GB/s, netalpha=5us; nics=server for one per "
      "server) on one network switch; nvls=on: the NVSwitches reduce",
      build_cluster },
};

#define NBUILTINS ((int)(sizeof(builtins) / sizeof(builtins[0])))

void topo_list_builtins(FILE *f)
{
    for (int i = 0; i < NBUILTINS; i++)
        fprintf(f, "  %-18s %s\n", builtins[i].form, builtins[i].desc);
    fprintf(f, "  %-18s %s\n", "FILE.yaml", "a YAML topology "
            "(docs/topology.md)");
    fprintf(f, "  options: append ,alpha=T ,bw=BW (e.g. switch:16,alpha=3us,"
            "bw=450GB/s); switch also takes ,nvls=off|on;\n"
            "  cluster also takes ,nvlink=BW ,nic=BW ,netalpha=T "
            ",nics=gpu|server ,nvls=off|on\n");
}

static ccs_status_t parse_dims(const char *spec, const char *s,
                               const bi_spec_t *bi, bi_args_t *a,
                               ccs_err_t *err)
{
    int64_t prod = 1;

    a->ndim = 0;
    while (*s) {
        char *end;
        long v;

        if (a->ndim == 3 || *s < '0' || *s > '9')
            break;
        v = strtol(s, &end, 10);
        if (v < 1 || v > TOPO_MAX_GPUS)
            return ccs_err_set(err, CCS_ERR_TOPOLOGY, "%s: dimension %ld "
                               "is outside 1..%d", spec, v, TOPO_MAX_GPUS);
        a->dim[a->ndim++] = (int32_t)v;
        prod *= v;
        s = end;
        if ((*s == 'x' || *s == 'X') && s[1] >= '0' && s[1] <= '9')
            s++;
        else
            break;
    }
    if (*s != '\0' || a->ndim < bi->min_dims || a->ndim > bi->max_dims)
        return ccs_err_set(err, CCS_ERR_TOPOLOGY, "%s: bad size, expected "
                           "%s", spec, bi->form);
    if (prod > TOPO_MAX_GPUS)
        return ccs_err_set(err, CCS_ERR_TOPOLOGY, "%s: more than %d GPUs",
                           spec, TOPO_MAX_GPUS);
    return CCS_OK;
}

/* Parse one KEY=VALUE into a; *which gets the option's bit. */
static ccs_status_t parse_option(const char *spec, const bi_spec_t *bi,
                                 const char *kv, bi_args_t *a,
                                 unsigned *which, ccs_err_t *err)
{
    static const struct { const char *key; unsigned bit; } keys[] = {
        { "alpha", BI_ALPHA }, { "bw", BI_BW }, { "nvlink", BI_NVLINK },
        { "nic", BI_NIC }, { "netalpha", BI_NETALPHA }, { "nics", BI_NICS },
        { "nvls", BI_NVLS },
    };
    const char *eq = strchr(kv, '=');
    unsigned bit = 0;
    size_t klen;
    const char *val;
    int ok = 1;

    if (eq == NULL)
        return ccs_err_set(err, CCS_ERR_TOPOLOGY, "%s: option '%s' is not "
                           "KEY=VALUE", spec, kv);
    klen = (size_t)(eq - kv);
    val = eq + 1;
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
        if (strlen(keys[i].key) == klen && strncmp(kv, keys[i].key, klen) == 0)
            bit = keys[i].bit;
    if (bit == 0 || !(bi->opts & bit))
        return ccs_err_set(err, CCS_ERR_TOPOLOGY, "%s: unknown option "
                           "'%.*s' for %s", spec, (int)klen, kv, bi->name);
    *which = bit;
    switch (bit) {
    case BI_ALPHA:
        ok = units_parse_time(val, &a->alpha_s);
        break;
    case BI_NETALPHA:
        ok = units_parse_time(val, &a->net_alpha_s);
        break;
    case BI_BW:
    case BI_NVLINK:
        ok = units_parse_bw(val, &a->bw_Bps);
        break;
    case BI_NIC:
        ok = units_parse_bw(val, &a->nic_Bps);
        break;
    case BI_NICS:
        if (strcmp(val, "gpu") == 0)
            a->nics_per_gpu = 1;
        else if (strcmp(val, "server") == 0)
            a->nics_per_gpu = 0;
        else
            ok = 0;
        break;
    case BI_NVLS:
        if (strcmp(val, "on") == 0)
            a->nvls = 1;
        else if (strcmp(val, "off") == 0)
            a->nvls = 0;
        else
            ok = 0;
        break;
    }
    if (!ok)
        return ccs_err_set(err, CCS_ERR_TOPOLOGY, "%s: bad value '%s' for "
                           "'%.*s'%s", spec, val, (int)klen, kv,
                           bit == BI_NICS ? " (server or gpu)"
                           : bit == BI_NVLS ? " (on or off)"
                           : (bit == BI_ALPHA || bit == BI_NETALPHA)
                               ? " (a time such as 3us or 150ns)"
                               : " (a bandwidth such as 450GB/s or "
                                 "100Gb/s)");
    return CCS_OK;
}

ccs_status_t topo_builtin_build(const char *spec, topo_builder_t *b,
                                ccs_err_t *err)
{
    char buf[256], *name, *dims, *opts, *next;
    unsigned seen = 0;
    const bi_spec_t *bi = NULL;
    bi_args_t a;
    ccs_status_t st;

    if (strlen(spec) >= sizeof(buf))
        return ccs_err_set(err, CCS_ERR_TOPOLOGY, "topology spec is too "
                           "long");
    snprintf(buf, sizeof(buf), "%s", spec);
    opts = strchr(buf, ',');
    if (opts != NULL)
        *opts++ = '\0';
    name = buf;
    dims = strchr(buf, ':');
    if (dims != NULL)
        *dims++ = '\0';
    for (int i = 0; i < NBUILTINS; i++)
        if (strcmp(builtins[i].name, name) == 0)
            bi = &builtins[i];
    if (bi == NULL) {
        if (strchr(spec, '/') != NULL)
            return ccs_err_set(err, CCS_ERR_TOPOLOGY, "%s: no such "
                               "topology file", spec);
        return ccs_err_set(err, CCS_ERR_TOPOLOGY, "unknown topology '%s': "
                           "not a file and not a built-in (ring:N, "
                           "switch:N, torus:AxB, mesh:AxB, fattree:LxG[xS], "
                           "dgx-h100, dgx-a100, dgx1, cluster:SxG)", spec);
    }
    memset(&a, 0, sizeof(a));
    a.alpha_s = bi->alpha_s;
    a.bw_Bps = bi->bw_Bps;
    a.nic_Bps = 50e9;           /* 400 Gb/s, one NDR port */
    a.net_alpha_s = 5e-6;
    /* DGX/HGX servers have one NIC per GPU (rail-optimised), and NCCL's
     * rings leave each server through a different one: the per-server NIC
     * is the exception, asked for with nics=server. */
    a.nics_per_gpu = 1;
    if (bi->max_dims == 0) {
        if (dims != NULL)
            return ccs_err_set(err, CCS_ERR_TOPOLOGY, "%s: %s takes no size",
                               spec, bi->name);
    } else {
        if (dims == NULL)
            return ccs_err_set(err, CCS_ERR_TOPOLOGY, "%s: missing size, "
                               "expected %s", spec, bi->form);
        st = parse_dims(spec, dims, bi, &a, err);
        if (st != CCS_OK)
            return st;
    }
    /* KEY=VALUE options, each at most once; an empty one ("switch:8,",
     * "a,,b") is an error rather than silently skipped. */
    for (char *kv = opts; kv != NULL; kv = next) {
        unsigned bit = 0;

        next = strchr(kv, ',');
        if (next != NULL)
            *next++ = '\0';
        if (*kv == '\0')
            return ccs_err_set(err, CCS_ERR_TOPOLOGY, "%s: empty option "
                               "(stray ',')", spec);
        st = parse_option(spec, bi, kv, &a, &bit, err);
        if (st != CCS_OK)
            return st;
        /* bw and nvlink name the same value */
        if (bit == BI_NVLINK)
            bit = BI_BW;
        if (seen & bit)
            return ccs_err_set(err, CCS_ERR_TOPOLOGY, "%s: option '%.*s' "
                               "given twice%s", spec,
                               (int)(strchr(kv, '=') - kv), kv,
                               bit == BI_BW && (bi->opts & BI_NVLINK)
                                   ? " (bw and nvlink are one option)" : "");
        seen |= bit;
    }
    return bi->build(b, &a, err);
}
