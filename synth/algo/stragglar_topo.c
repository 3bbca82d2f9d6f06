/*
 * stragglar_topo.c - StragglAR beyond one switch: a straggler-aware
 * allreduce for clusters of servers (GPUs on an NVSwitch or an NVLink
 * mesh, NICs per server or per GPU, a network between the servers).
 *
 * The idea is StragglAR's (stragglar.txt, section 3): while the straggler
 * sigma is late the others do every piece of work that does not need its
 * data, and once it arrives as little as possible is left.  On one switch
 * that is Algorithm 1's rounds (algo_stragglar.c); across servers the cost
 * after arrival is set by cuts, not by rounds: sigma's s bytes must leave
 * it, must leave its server V through V's NICs and must enter every other
 * server through that server's NICs (docs/stragglar-topo.md derives the
 * bound; sim_bound.c computes it).  This builder is shaped to make every
 * such cut carry s bytes once, concurrently:
 *
 * Lanes.  V's G GPUs v_0..v_{G-1} are the lanes (sigma's own is lane ls).
 * Lane l owns 1/G of the buffer and leaves V through v_l's NIC (with one
 * NIC per server every lane shares it).  Within a lane, piece j is the part
 * bound for the other server W_j (R = servers - 1 pieces); each piece is
 * cut into blocks k = 0..K-1 for pipelining (small at both ends, growing
 * to full blocks: stopo_blocks), and
 * each unit into P = G-1 chunks, the sub-parts by which sigma's own lane
 * is spread over its G-1 peers.  The rail of lane l in server W is W's
 * GPU l mod |W|.
 *
 * Phase 0 (without sigma; it may run before sigma arrives):
 *   1. in every server, a ring reduce-scatter among its non-stragglers
 *      onto the chunks' owners: in V lane l goes to v_l and sigma's lane,
 *      sub-part p, to its p-th peer; elsewhere lane l goes to its rail.
 *      q-1 steps of about s/q on NVLink (q = GPUs in the server, minus
 *      sigma in V);
 *   2. across servers, rail to rail over the NICs, a ring reduce-scatter
 *      of every lane in one part per server, then every server hands its
 *      part to V: `servers` steps, (servers-1)/servers s over each
 *      server's NICs in the ring and into V's in the last step.
 *   Afterwards each chunk's owner in V holds it reduced over all n-1
 *   non-stragglers.
 * Phase 1 (needs sigma), software-pipelined over the blocks, step t:
 *   A (block t)   sigma sends its block of lane l to v_l, which reduces it
 *                 into the pre-reduced one; for lane ls the peers send
 *                 their sub-parts to sigma, which reduces: final blocks;
 *   B (block t-1) each final block goes from v_l to every other GPU of V
 *                 over NVLink (sigma's own as one sub-part per peer, which
 *                 the peers pass on in the next step: sigma's NVLink
 *                 already carries every other lane's block in A), and its
 *                 piece j over v_l's NIC to lane l's rail in W_j;
 *   C (block t-2) each rail sends its piece to its server's GPUs and to
 *                 lane l's rail in the other servers (NIC);
 *   D (block t-3) (R > 1) rails pass the other servers' pieces on to
 *                 their server's GPUs.
 *   K + 2 (R = 1) or K + 3 steps.
 *
 * Cost after arrival (a_n = GPU-NIC-net-NIC-GPU latency, b_V = bandwidth
 * of V's NICs, b_W the smallest other server's, b_nv sigma's NVLink): the
 * steps are paced by their NIC transfers, about
 *     (K + 2) a_n + s / min(b_V, b_W) + fill,
 * the fill being the first block's stage A and the last block's spread
 * inside the servers (about 0.8 of a block's NIC time each on a DGX-like
 * server, smaller with the small end blocks), against the bound
 * a_n + s / min(b_V, b_W, ...) (sim_bound.h): K trades the fill against one
 * latency per step.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "stragglar_topo.h"

/* Blocks per lane where the cost model has no figures to go on. */
#define STOPO_DEFAULT_BLOCKS 11u
#define STOPO_MAX_BLOCKS 64u
/* From this depth on, the ends ramp up linearly (stopo_blocks). */
/* Size the blocks are chosen for when the caller gives none. */
#define STOPO_REF_BYTES (512.0 * 1024 * 1024)
#define STOPO_RAMP_MIN 7u

typedef struct stopo {
    const topo_t *t;
    ccs_sched_t *s;          /* borrowed: the schedule being built */
    uint32_t n, ns;          /* ranks, servers */
    uint32_t *off;           /* owned; [ns + 1] server w's ranks are */
    uint32_t *rk;            /*  rk[off[w] .. off[w+1]) (owned; [n]) */
    uint32_t *remote;        /* owned; [ns - 1] the other servers */
    uint32_t nr;             /* R = ns - 1 */
    uint32_t V, G, ls;       /* sigma's server, its size, sigma's lane */
    uint32_t sigma;          /* the straggler */
    uint32_t K;              /* blocks per lane (small end blocks included) */
    uint32_t U;              /* units per lane; block k is units
                                bst[k] .. bst[k+1] */
    uint32_t *bst;           /* owned; [K + 1] */
    uint32_t P;              /* chunks per piece: G - 1 sub-parts, so
                                that sigma's lane can be spread over its
                                peers (phase 1, stage B) */
} stopo_t;

static int32_t rank_server(const topo_t *t, uint32_t r)
{
    return t->nodes[t->rank_node[r]].server;
}

static uint32_t srv_size(const stopo_t *c, uint32_t w)
{
    return c->off[w + 1] - c->off[w];
}

static uint32_t vgpu(const stopo_t *c, uint32_t l)
{
    return c->rk[c->off[c->V] + l];
}

/* Lane l's rail in server w. */
static uint32_t rail(const stopo_t *c, uint32_t l, uint32_t w)
{
    return c->rk[c->off[w] + l % srv_size(c, w)];
}

/* Layout: lane l is R * U * P chunks; within it piece j (the part bound
 * for server W_j) is U * P chunks, and block k of piece j is its units
 * bst[k] .. bst[k+1], each unit P chunks (one per sub-part).  So a lane
 * is contiguous (phase 0 moves it in one op) and so is a block's piece
 * (one op per NIC transfer). */
static uint32_t chunk(const stopo_t *c, uint32_t l, uint32_t k, uint32_t j)
{
    return ((l * c->nr + j) * c->U + c->bst[k]) * c->P;
}

/* Chunks of block k's piece; of a lane. */
static uint32_t piece_len(const stopo_t *c, uint32_t k)
{
    return (c->bst[k + 1] - c->bst[k]) * c->P;
}

static uint32_t lane_len(const stopo_t *c)
{
    return c->nr * c->U * c->P;
}

static uint32_t sigma_of(const topo_t *t, int32_t straggler)
{
    return straggler >= 0 ? (uint32_t)straggler : (uint32_t)t->ngpus - 1;
}

bool stragglar_topo_applies(const topo_t *t, int32_t straggler)
{
    uint32_t sigma = sigma_of(t, straggler), mates = 0;
    int32_t v;

    if (t->nservers < 2 || topo_is_uniform_switch(t) ||
        sigma >= (uint32_t)t->ngpus)
        return false;
    v = rank_server(t, sigma);
    for (uint32_t r = 0; r < (uint32_t)t->ngpus; r++)
        mates += r != sigma && rank_server(t, r) == v;
    return mates >= 1;
}

/* sigma's bandwidth to its server peers: its links to anything but a
 * NIC (the NVSwitch, or the NVLink mesh). */
static double sigma_nvlink_bw(const topo_t *t, uint32_t sigma)
{
    int32_t v = t->rank_node[sigma];
    double bw = 0;

    for (int32_t i = t->out_start[v]; i < t->out_start[v + 1]; i++) {
        const topo_link_t *k = &t->links[t->out_links[i]];
        if (t->nodes[k->dst].kind != TOPO_NODE_NIC)
            bw += k->bw_Bps;
    }
    return bw;
}

/* Bandwidth of the links leaving server w's nodes (its NICs' uplinks). */
static double server_out_bw(const topo_t *t, int32_t w)
{
    double bw = 0;
    for (int32_t i = 0; i < t->nlinks; i++) {
        const topo_link_t *k = &t->links[i];
        if (t->nodes[k->src].server == w && t->nodes[k->dst].server != w)
            bw += k->bw_Bps;
    }
    return bw;
}

static double max_link_alpha_sum(const topo_t *t)
{
    double a = 0;
    for (int32_t i = 0; i < t->nlinks; i++)
        if (t->links[i].alpha_s > a)
            a = t->links[i].alpha_s;
    return 4 * a;   /* GPU-NIC-net-NIC-GPU: four hops at most this each */
}

uint32_t stragglar_topo_blocks(const topo_t *t, const algo_params_t *p)
{
    uint32_t sigma = sigma_of(t, p->straggler), g = 0;
    int32_t v;
    double bw, a, k, tnv, tnic, vout, size;

    if (p->pipeline > 1)
        return p->pipeline > STOPO_MAX_BLOCKS ? STOPO_MAX_BLOCKS
                                              : p->pipeline;
    if (sigma >= (uint32_t)t->ngpus)
        return STOPO_DEFAULT_BLOCKS;
    /* Without a size (compare builds one schedule for every size), the
     * model at STOPO_REF_BYTES, the middle of the sizes where waiting for
     * a straggler costs most. */
    size = p->size_bytes > 0 ? p->size_bytes : STOPO_REF_BYTES;
    /* Phase 1 costs about K a + T_nic + fill / K: one NIC latency a per
     * step, and the fill: the first block's stage A on sigma's NVLink,
     * T_nv / K with T_nv = (G-1)/G s / (sigma's NVLink bandwidth), and the
     * last block's stages after its NIC step: C, which with R > 1 other
     * servers is a NIC step of (R-1)/R of a block, (R-1)/R T_nic / K with
     * T_nic = s / (V's NIC bandwidth), and its spread in a server (about
     * T_nv / K again).  Small end blocks halve the NVLink parts, so
     * K = sqrt((T_nv + (R-1)/R T_nic) / a) full-block equivalents: 7 at
     * 256 MiB and 14 at 1 GiB on cluster:2x8,nics=gpu, 53 on adapcc-hetero
     * with the straggler on a V100 server; stopo_blocks turns it into
     * block sizes (docs/stragglar-topo.md has the measurements). */
    v = rank_server(t, sigma);
    for (uint32_t r = 0; r < (uint32_t)t->ngpus; r++)
        g += rank_server(t, r) == v;
    bw = sigma_nvlink_bw(t, sigma);
    a = max_link_alpha_sum(t);
    vout = server_out_bw(t, v);
    if (bw <= 0 || a <= 0 || g < 2 || vout <= 0)
        return STOPO_DEFAULT_BLOCKS;
    tnv = (double)(g - 1) / g * size / bw;
    tnic = (double)(t->nservers - 2) / (t->nservers - 1) * size / vout;
    k = sqrt((tnv + tnic) / a);
    if (k < 2)
        k = 2;
    if (k > STOPO_MAX_BLOCKS)
        k = STOPO_MAX_BLOCKS;
    return (uint32_t)lround(k);
}

/* Block sizes, from k, the pipeline depth in full blocks the cost model
 * asks for (stragglar_topo_blocks).  The fill is the first block's NVLink
 * stage and the last block's spread inside the servers, so the end blocks
 * are small and grow step by step: a block's stage A on sigma's NVLink
 * takes about 0.8 of its NIC step, so the next block may be somewhat
 * larger than the one on the NICs without stalling them.
 *   k >= STOPO_RAMP_MIN: blocks of 1, 2, .., 6 units, k - 5 blocks of 8,
 *     then 6, .., 1 (the two ramps carry about five full blocks);
 *   smaller k (small buffers, where every step's latency counts): 1, 2,
 *     k blocks of 4, 2, 1.
 * On cluster:2x8,nics=gpu at 256 MiB the linear ramp gives 818-834 us
 * after arrival against 845 with the doubling ends and 870 without. */
static ccs_status_t stopo_blocks(stopo_t *c, uint32_t k, ccs_err_t *err)
{
    uint32_t ramp, full, unit, n = 0;

    if (k >= STOPO_RAMP_MIN) {
        ramp = 6;
        full = k - 5;
        unit = 8;
    } else {
        ramp = 2;
        full = k;
        unit = 4;
    }
    c->K = full + 2 * ramp;
    c->bst = malloc((c->K + 1) * sizeof(*c->bst));   /* owned by c */
    if (c->bst == NULL)
        return ccs_err_set(err, CCS_ERR_NOMEM, "stragglar: out of memory");
    c->bst[0] = 0;
    /* ramp up: 1, 2, .. (linear), or 1, 2 (doubling) for the short one */
    for (uint32_t i = 1; i <= ramp; i++, n++)
        c->bst[n + 1] = c->bst[n] + i;
    for (uint32_t i = 0; i < full; i++, n++)
        c->bst[n + 1] = c->bst[n] + unit;
    for (uint32_t i = ramp; i >= 1; i--, n++)
        c->bst[n + 1] = c->bst[n] + i;
    c->U = c->bst[c->K];
    return CCS_OK;
}

/* Group the ranks by server; find sigma's server and its lane; size the
 * blocks. */
static ccs_status_t stopo_init(stopo_t *c, const topo_t *t,
                               const algo_params_t *p, ccs_err_t *err)
{
    uint32_t n = (uint32_t)t->ngpus, ns = (uint32_t)t->nservers, j = 0;
    uint32_t *fill = NULL;
    ccs_status_t st = CCS_OK;

    memset(c, 0, sizeof(*c));
    c->t = t;
    c->n = n;
    c->ns = ns;
    c->nr = ns - 1;
    c->sigma = sigma_of(t, p->straggler);
    c->off = calloc(ns + 1, sizeof(*c->off));     /* owned by c */
    c->rk = malloc(n * sizeof(*c->rk));           /* owned by c */
    c->remote = malloc(ns * sizeof(*c->remote));  /* owned by c */
    fill = calloc(ns, sizeof(*fill));             /* owned here */
    if (c->off == NULL || c->rk == NULL || c->remote == NULL ||
        fill == NULL) {
        st = ccs_err_set(err, CCS_ERR_NOMEM, "stragglar: out of memory");
        goto cleanup;
    }
    for (uint32_t r = 0; r < n; r++) {
        int32_t w = rank_server(t, r);
        if (w < 0 || (uint32_t)w >= ns) {
            st = ccs_err_set(err, CCS_ERR_UNSUPPORTED,
                             "stragglar: rank %u is in no server", r);
            goto cleanup;
        }
        c->off[w + 1]++;
    }
    for (uint32_t w = 0; w < ns; w++)
        c->off[w + 1] += c->off[w];
    for (uint32_t r = 0; r < n; r++) {
        uint32_t w = (uint32_t)rank_server(t, r);
        c->rk[c->off[w] + fill[w]++] = r;
    }
    c->V = (uint32_t)rank_server(t, c->sigma);
    c->G = srv_size(c, c->V);
    for (uint32_t l = 0; l < c->G; l++)
        if (vgpu(c, l) == c->sigma)
            c->ls = l;
    for (uint32_t w = 0; w < ns; w++)
        if (w != c->V)
            c->remote[j++] = w;
    c->P = c->G - 1;
    st = stopo_blocks(c, stragglar_topo_blocks(t, p), err);
    if (st == CCS_OK && (uint64_t)c->G * lane_len(c) > CCS_MAX_CHUNKS)
        st = ccs_err_set(err, CCS_ERR_UNSUPPORTED,
                         "stragglar: %u lanes x %u units x %u servers x %u "
                         "sub-parts exceed %u chunks", c->G, c->U, c->nr,
                         c->P, CCS_MAX_CHUNKS);
cleanup:
    free(fill);
    return st;
}

static void stopo_free(stopo_t *c)
{
    free(c->bst);
    free(c->off);
    free(c->rk);
    free(c->remote);
}

/* ---- Phase 0 ---- */

/* The i-th GPU of V other than sigma. */
static uint32_t vpeer(const stopo_t *c, uint32_t i)
{
    return vgpu(c, i < c->ls ? i : i + 1);
}

/* Who holds chunk ch's partial sum of server w at the end of phase 0: in
 * V, lane l's entry v_l, and for sigma's lane the peer of the chunk's
 * sub-part (so that sigma's lane is spread over all its peers, not piled
 * on one); elsewhere the lane's rail. */
static uint32_t owner(const stopo_t *c, uint32_t w, uint32_t ch)
{
    uint32_t l = ch / lane_len(c);

    if (w != c->V)
        return rail(c, l, w);
    return l == c->ls ? vpeer(c, ch % c->P) : vgpu(c, l);
}

/* Server w's non-stragglers in rank order into m[]; returns their count. */
static uint32_t members(const stopo_t *c, uint32_t w, uint32_t *m)
{
    uint32_t q = 0;

    for (uint32_t i = c->off[w]; i < c->off[w + 1]; i++)
        if (c->rk[i] != c->sigma)
            m[q++] = c->rk[i];
    return q;
}

/* Ring reduce-scatter in every server at once, the owners' chunks as the
 * segments: in step t member i sends what member i-t-1 owns to member i+1,
 * which adds its own IN; a segment reaches its owner after q-1 steps.
 * Ops cover maximal runs of chunks with the same owner. */
static ccs_status_t phase0_intra(stopo_t *c, uint32_t *m, ccs_err_t *err)
{
    uint32_t steps = 0, C = c->G * lane_len(c), base = c->s->nsteps;
    ccs_status_t st = CCS_OK;

    for (uint32_t w = 0; w < c->ns; w++) {
        uint32_t q = members(c, w, m);
        if (q > 1 && q - 1 > steps)
            steps = q - 1;
    }
    for (uint32_t t = 0; t < steps && st == CCS_OK; t++) {
        uint32_t step;
        st = ccs_sched_add_step(c->s, 0, &step, err);
    }
    for (uint32_t w = 0; w < c->ns && st == CCS_OK; w++) {
        uint32_t q = members(c, w, m);
        for (uint32_t t = 0; t + 1 < q && st == CCS_OK; t++) {
            for (uint32_t i = 0; i < q && st == CCS_OK; i++) {
                uint32_t seg = m[(i + 2 * q - t - 1) % q], a = 0;
                while (a < C && st == CCS_OK) {
                    uint32_t b = a;
                    if (owner(c, w, a) != seg) {
                        a++;
                        continue;
                    }
                    while (b < C && owner(c, w, b) == seg)
                        b++;
                    st = ccs_sched_xfer_reduce_from(
                        c->s, base + t, m[i], t == 0 ? CCS_BUF_IN
                                                     : CCS_BUF_OUT,
                        a, m[(i + 1) % q], CCS_BUF_OUT, a, CCS_BUF_IN, a,
                        b - a, err);
                    a = b;
                }
            }
        }
    }
    return st;
}

static ccs_status_t copy_to(const stopo_t *c, uint32_t step, uint32_t src,
                            uint32_t dst, uint32_t ch, uint32_t cnt,
                            ccs_err_t *err)
{
    return ccs_sched_xfer(c->s, step, src, CCS_BUF_OUT, ch, dst, CCS_BUF_OUT,
                          ch, cnt, false, err);
}

/* Part of the lane (0..ns-1) that chunk ch falls in, for the
 * reduce-scatter across servers. */
static uint32_t part(const stopo_t *c, uint32_t ch)
{
    uint64_t L = lane_len(c);
    return (uint32_t)((ch % L) * c->ns / L);
}

/* Across servers, rail to rail over the NICs: a ring reduce-scatter of
 * every lane in ns parts (server position i, V being position 0, ends
 * with part i reduced over all servers), then one step in which every
 * other server hands its part to V.  ns steps; each server's NICs send
 * s/ns per ring step, and V's receive (ns-1)/ns s in the last.
 * inout[i * ns + m]: position i's partial of part m is in OUT (an
 * intra-server reduce-scatter or an earlier reduce wrote it), not IN. */
static ccs_status_t phase0_inter(stopo_t *c, uint32_t *m, ccs_err_t *err)
{
    uint32_t C = c->G * lane_len(c), ns = c->ns, *srv = NULL;
    bool *inout = NULL;
    ccs_status_t st = CCS_OK;

    srv = malloc(ns * sizeof(*srv));               /* owned here */
    inout = calloc((size_t)ns * ns, sizeof(*inout)); /* owned here */
    if (srv == NULL || inout == NULL) {
        st = ccs_err_set(err, CCS_ERR_NOMEM, "stragglar: out of memory");
        goto cleanup;
    }
    srv[0] = c->V;
    for (uint32_t j = 0; j < c->nr; j++)
        srv[j + 1] = c->remote[j];
    for (uint32_t i = 0; i < ns; i++) {
        bool q2 = members(c, srv[i], m) > 1;
        for (uint32_t x = 0; x < ns; x++)
            inout[i * ns + x] = q2;
    }
    /* Ring reduce-scatter: in step t position i sends part i-t-1 to
     * position i+1, which reduces. */
    for (uint32_t t = 0; t + 1 < ns && st == CCS_OK; t++) {
        uint32_t step;
        st = ccs_sched_add_step(c->s, 0, &step, err);
        for (uint32_t i = 0; i < ns && st == CCS_OK; i++) {
            uint32_t to = (i + 1) % ns, pm = (i + 2 * ns - t - 1) % ns;
            uint32_t a = 0;
            while (a < C && st == CCS_OK) {
                uint32_t u, v, b = a;
                if (part(c, a) != pm) {
                    a++;
                    continue;
                }
                u = owner(c, srv[i], a);
                v = owner(c, srv[to], a);
                while (b < C && part(c, b) == pm &&
                       owner(c, srv[i], b) == u && owner(c, srv[to], b) == v)
                    b++;
                st = ccs_sched_xfer_reduce_from(
                    c->s, step, u,
                    inout[i * ns + pm] ? CCS_BUF_OUT : CCS_BUF_IN, a, v,
                    CCS_BUF_OUT, a,
                    inout[to * ns + pm] ? CCS_BUF_OUT : CCS_BUF_IN, a,
                    b - a, err);
                a = b;
            }
            inout[to * ns + pm] = true;
        }
    }
    /* Gather: position i's finished part i to its owners in V. */
    if (st == CCS_OK && ns > 1) {
        uint32_t step, a = 0;
        st = ccs_sched_add_step(c->s, 0, &step, err);
        while (a < C && st == CCS_OK) {
            uint32_t pm = part(c, a), u, v, b = a;
            if (pm == 0) {
                a++;
                continue;
            }
            u = owner(c, srv[pm], a);
            v = owner(c, c->V, a);
            while (b < C && part(c, b) == pm && owner(c, srv[pm], b) == u &&
                   owner(c, c->V, b) == v)
                b++;
            st = copy_to(c, step, u, v, a, b - a, err);
            a = b;
        }
    }
cleanup:
    free(srv);
    free(inout);
    return st;
}

/* ---- Phase 1 ---- */


/* Send chunk ch from `from` to every other GPU of server w. */
static ccs_status_t to_server(const stopo_t *c, uint32_t step, uint32_t from,
                              uint32_t w, uint32_t ch, uint32_t cnt,
                              ccs_err_t *err)
{
    ccs_status_t st = CCS_OK;
    for (uint32_t i = c->off[w]; i < c->off[w + 1] && st == CCS_OK; i++)
        if (c->rk[i] != from)
            st = copy_to(c, step, from, c->rk[i], ch, cnt, err);
    return st;
}

/* Sub-part p of sigma's block k: chunk p of each of its units. */
static ccs_status_t subpart(const stopo_t *c, uint32_t step, uint32_t src,
                            uint32_t dst, uint32_t k, uint32_t p,
                            ccs_err_t *err)
{
    ccs_status_t st = CCS_OK;
    for (uint32_t j = 0; j < c->nr && st == CCS_OK; j++)
        for (uint32_t u = 0; u < piece_len(c, k) && st == CCS_OK; u += c->P)
            st = copy_to(c, step, src, dst, chunk(c, c->ls, k, j) + u + p,
                         1, err);
    return st;
}

static ccs_status_t phase1_step(const stopo_t *c, uint32_t step, uint32_t t,
                                ccs_err_t *err)
{
    uint32_t K = c->K, R = c->nr, P = c->P;
    ccs_status_t st = CCS_OK;

    for (uint32_t l = 0; l < c->G && st == CCS_OK; l++) {
        /* A: sigma's block t meets the pre-reduced one. */
        for (uint32_t j = 0; t < K && j < R && st == CCS_OK; j++) {
            uint32_t c0 = chunk(c, l, t, j), len = piece_len(c, t);
            if (l == c->ls)
                /* Each peer hands its sub-part of the pre-reduced block. */
                for (uint32_t x = 0; x < len && st == CCS_OK; x++)
                    st = ccs_sched_xfer_reduce_from(
                        c->s, step, vpeer(c, (c0 + x) % c->P), CCS_BUF_OUT,
                        c0 + x, c->sigma, CCS_BUF_OUT, c0 + x, CCS_BUF_IN,
                        c0 + x, 1, err);
            else
                st = ccs_sched_xfer_reduce_from(c->s, step, c->sigma,
                                                CCS_BUF_IN, c0, vgpu(c, l),
                                                CCS_BUF_OUT, c0, CCS_BUF_OUT,
                                                c0, len, err);
        }
        /* B: the final block t-1 to the rest of V, its pieces to the
         * rails.  sigma already sends every other lane's block over
         * NVLink in A, so its own goes out in G-1 sub-parts, one per peer,
         * which pass them on in the next step (B2). */
        if (st == CCS_OK && t >= 1 && t - 1 < K) {
            uint32_t g = l == c->ls ? c->sigma : vgpu(c, l);
            uint32_t len = piece_len(c, t - 1);
            if (l == c->ls)
                for (uint32_t i = 0; i < P && st == CCS_OK; i++)
                    st = subpart(c, step, g, vpeer(c, i), t - 1, i, err);
            else
                for (uint32_t j = 0; j < R && st == CCS_OK; j++)
                    st = to_server(c, step, g, c->V, chunk(c, l, t - 1, j),
                                   len, err);
            for (uint32_t j = 0; j < R && st == CCS_OK; j++)
                st = copy_to(c, step, g, rail(c, l, c->remote[j]),
                             chunk(c, l, t - 1, j), len, err);
        }
        if (st == CCS_OK && l == c->ls && t >= 2 && t - 2 < K)
            for (uint32_t i = 0; i < P && st == CCS_OK; i++)
                for (uint32_t x = 0; x < P && st == CCS_OK; x++)
                    if (x != i)
                        st = subpart(c, step, vpeer(c, i), vpeer(c, x),
                                     t - 2, i, err);
        /* C: each rail to its server and to the other servers' rails. */
        if (st == CCS_OK && t >= 2 && t - 2 < K) {
            uint32_t len = piece_len(c, t - 2);
            for (uint32_t j = 0; j < R && st == CCS_OK; j++) {
                uint32_t u = rail(c, l, c->remote[j]);
                uint32_t ch = chunk(c, l, t - 2, j);
                st = to_server(c, step, u, c->remote[j], ch, len, err);
                for (uint32_t i = 0; i < R && st == CCS_OK; i++)
                    if (i != j)
                        st = copy_to(c, step, u, rail(c, l, c->remote[i]),
                                     ch, len, err);
            }
        }
        /* D: pieces from other servers' rails to the rest of the server. */
        if (st == CCS_OK && R > 1 && t >= 3 && t - 3 < K) {
            uint32_t len = piece_len(c, t - 3);
            for (uint32_t i = 0; i < R && st == CCS_OK; i++) {
                uint32_t u = rail(c, l, c->remote[i]);
                for (uint32_t j = 0; j < R && st == CCS_OK; j++)
                    if (j != i)
                        st = to_server(c, step, u, c->remote[i],
                                       chunk(c, l, t - 3, j), len, err);
            }
        }
    }
    return st;
}

ccs_status_t stragglar_topo_build(const topo_t *t, const algo_params_t *p,
                                  ccs_sched_t **out, algo_report_t *rep,
                                  ccs_err_t *err)
{
    stopo_t c;
    uint32_t *m = NULL, p0 = 0, p1;
    ccs_sched_t *s = NULL;
    ccs_status_t st;

    st = stopo_init(&c, t, p, err);
    if (st != CCS_OK)
        goto cleanup;
    m = malloc(c.n * sizeof(*m));        /* owned here */
    if (m == NULL) {
        st = ccs_err_set(err, CCS_ERR_NOMEM, "stragglar: out of memory");
        goto cleanup;
    }
    st = ccs_sched_create(CCS_COLL_ALLREDUCE, c.n, c.G * lane_len(&c),
                          "stragglar", &s, err);
    if (st != CCS_OK)
        goto cleanup;
    s->straggler = (int32_t)c.sigma;
    c.s = s;
    st = phase0_intra(&c, m, err);
    if (st == CCS_OK)
        st = phase0_inter(&c, m, err);
    if (st != CCS_OK)
        goto cleanup;
    p0 = s->nsteps;
    p1 = c.K + 2 + (c.nr > 1);
    for (uint32_t i = 0; i < p1 && st == CCS_OK; i++) {
        uint32_t step;
        st = ccs_sched_add_step(s, 1, &step, err);
        if (st == CCS_OK)
            st = phase1_step(&c, step, i, err);
    }
    if (st != CCS_OK)
        goto cleanup;
    algo_report_addf(rep, "stragglar: topology-aware: %u servers, "
                     "straggler %u on a server of %u GPUs (lanes), %u "
                     "blocks per lane, %u chunks", c.ns, c.sigma, c.G, c.K,
                     c.G * lane_len(&c));
    algo_report_addf(rep, "stragglar: phase 0: %u steps (reduce-scatter in "
                     "each server, then a reduce-scatter across the servers "
                     "and a gather to the straggler's), phase "
                     "1: %u steps", p0, p1);
    *out = s;
    s = NULL;
cleanup:
    free(m);
    stopo_free(&c);
    ccs_sched_destroy(s);
    return st;
}
