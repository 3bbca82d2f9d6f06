/*
 * algo_nvls.c - NCCL's NVLS allreduce (NVLink SHARP): the switch reduces
 * and multicasts, the third member of the `nccl` baseline on H100-class
 * NVSwitch systems.
 *
 * What NCCL does (src/transport/nvls.cc, src/device/all_reduce.h; NVIDIA's
 * NVLink SHARP material): every GPU maps a multicast object that spans
 * the GPUs of the switch.  For its 1/n share of the buffer a GPU issues a
 * multimem load-reduce: the switch reads that share from every GPU, sums
 * it in the switch and returns one reduced stream; the GPU then issues a
 * multimem store and the switch replicates it to every GPU.  So each link
 * carries about s per direction instead of the ring's 2(n-1)/n s, and the
 * two halves are pipelined over the buffer.  NCCL runs NVLS with the
 * Simple protocol only and only where the switch supports it (Hopper and
 * later NVSwitch; not A100).
 *
 * The IR has no switch op, so the schedule states the semantics with
 * point-to-point ops that the verifier checks, and marks itself nvls=1 in
 * its params so the simulator times the switch's work (sim_proto.h):
 * - piece t, step t: every GPU i sends IN[t, j] to GPU j (j != i); j
 *   receives the first into OUT[t, j] reduced with its own IN[t, j] and
 *   the others into SCRATCH.  The simulator lets these n-1 transfers,
 *   which converge on j through the NVLS switch, cross the switch -> j
 *   link once (the switch sums them);
 * - steps t+1 .. t+L, L = ceil(log2(n-1)): j folds the SCRATCH copies
 *   into OUT[t, j] pairwise (local work, free unless --local-bw);
 * - step t+L+1: j sends OUT[t, j] to every other GPU; the simulator lets
 *   them cross the j -> switch link once (the switch multicasts).
 * Replayed by libccs (which has no multimem path) it runs as ordinary
 * point-to-point copies: correct, not fast.
 *
 * Cost on one server (a = alpha, b = beta at the GPU's link, s bytes,
 * P pieces): each
 * step moves s / (n P) per transfer; a GPU's uplink carries (n-1) reduce
 * sends and one multicast, its downlink one reduced stream and (n-1)
 * multicast copies: s / P per step each way, so
 * T ~ (P + L + 1) a + (P + L + 1) / P s b, against the ring's
 * 2(n-1)/n s b (1.75x the traffic at n = 8).  P = 32 x --pipeline: the
 * pipeline fill costs (L + 1)/P, 12% at n = 8.
 * With NCCL's protocol model the per-step latency is replaced by NVLS's
 * single 25 us figure (docs/simulator.md).
 *
 * Across servers NCCL runs NVLS inside each server and trees between them
 * (its NVLS_TREE algorithm): after the in-switch reduction GPU j of every
 * server holds its server's sum of block j, and the S GPUs with local
 * index j (one per server, each through its own NIC) allreduce that block
 * over NCCL's double binary tree of the servers (tree.h: tree 0 carries
 * the block's first S - S/2 chunks, tree 1 the rest; partial sums go up
 * into OUT, a server's two children in different steps, then the result
 * comes down) before the multicast.  At S = 2 the two trees are one edge
 * each way, the same steps and traffic as a ring between the two servers
 * (NCCL's model doubles NVLS_TREE's inter-node bandwidth at two nodes for
 * that reason); beyond, about 2 log2 S steps instead of a ring's 2(S-1),
 * but an interior server's NIC carries 2 blocks per direction where a
 * ring's carries 2(S-1)/S, so at large sizes it is slower than a rail
 * ring would be (NCCL has no rail ring after NVLS across nodes).
 *
 * Runs where every server has the same number of GPUs (2 or more) on a
 * switch with NVLS (dgx-h100, nvls=on, or a YAML switch with
 * `nvls: true`).
 */
#include <stdlib.h>
#include <string.h>

#include "algo.h"
#include "nccl.h"
#include "tree.h"

#define NVLS_PIECES 32u

/* One of the two trees between servers (NCCL's double binary tree over
 * the servers, tree.h), with its step plan relative to the start of the
 * inter-server part: up[v] is the step in which server v sends its
 * partial to its parent (at the root: the step its sum is complete),
 * depth[v] its depth; the root sends down in step up[root], a server at
 * depth d forwards down in step up[root] + d.  The two children of a
 * server deliver in different steps (the same chunks are summed into its
 * OUT). */
typedef struct nvls_tree {
    tree_t t;
    uint32_t *up;       /* owned, [S] */
    uint32_t *depth;    /* owned, [S] */
    uint32_t len;       /* steps of the up and down phases */
} nvls_tree_t;

static uint32_t tree_plan_up(const tree_t *t, uint32_t v, uint32_t *up)
{
    uint32_t r[TREE_MAX_CHILDREN], c[TREE_MAX_CHILDREN], nc = t->nchild[v];

    for (uint32_t i = 0; i < nc; i++) {
        c[i] = t->child[v * TREE_MAX_CHILDREN + i];
        r[i] = tree_plan_up(t, c[i], up);
    }
    if (nc == 0) {
        up[v] = 0;
        return 0;
    }
    if (nc == 2 && r[1] < r[0]) {
        uint32_t x = r[0], y = c[0];
        r[0] = r[1];
        c[0] = c[1];
        r[1] = x;
        c[1] = y;
    }
    up[c[0]] = r[0];
    if (nc == 2)
        up[c[1]] = r[1] > r[0] ? r[1] : r[0] + 1;
    up[v] = up[c[nc - 1]] + 1;
    return up[v];
}

static void tree_plan_depth(const tree_t *t, uint32_t v, uint32_t d,
                            uint32_t *depth, uint32_t *maxd)
{
    depth[v] = d;
    if (d > *maxd)
        *maxd = d;
    for (uint32_t i = 0; i < t->nchild[v]; i++)
        tree_plan_depth(t, t->child[v * TREE_MAX_CHILDREN + i], d + 1,
                        depth, maxd);
}

static void nvls_tree_free(nvls_tree_t *nt)
{
    tree_destroy(&nt->t);
    free(nt->up);
    free(nt->depth);
}

/* Tree `which` (0, 1) of NCCL's double binary tree over S servers. */
static ccs_status_t nvls_tree_plan(uint32_t S, int which, nvls_tree_t *nt,
                                   ccs_err_t *err)
{
    uint32_t *map = malloc(sizeof(*map) * S);   /* owned here */
    uint32_t maxd = 0;
    ccs_status_t st;

    memset(nt, 0, sizeof(*nt));
    nt->up = calloc(S, sizeof(*nt->up));
    nt->depth = calloc(S, sizeof(*nt->depth));
    if (map == NULL || nt->up == NULL || nt->depth == NULL) {
        free(map);
        return ccs_err_set(err, CCS_ERR_NOMEM, "nvls: out of memory");
    }
    tree_dbtree_map(S, which, map);
    st = tree_btree(S, map, &nt->t, err);
    free(map);
    if (st != CCS_OK)
        return st;
    tree_plan_up(&nt->t, nt->t.root, nt->up);
    tree_plan_depth(&nt->t, nt->t.root, 0, nt->depth, &maxd);
    nt->len = nt->up[nt->t.root] + maxd;
    return CCS_OK;
}

static ccs_status_t nvls_shape(const topo_t *t, const algo_params_t *p,
                               uint32_t *pieces, ccs_err_t *err)
{
    nccl_layout_t l;
    uint64_t np;
    ccs_status_t st = nccl_layout(t, &l, err);

    if (st != CCS_OK)
        return st;
    if (!l.nvls || l.direct)
        return ccs_err_set(err, CCS_ERR_UNSUPPORTED,
                           "nvls: the switch of topology '%s' does not "
                           "reduce (needs an NVLS switch: dgx-h100, "
                           "nvls=on, or 'nvls: true' in YAML)", t->name);
    if (l.per < 2)
        return ccs_err_set(err, CCS_ERR_UNSUPPORTED,
                           "nvls: needs servers of equal size, 2 or more "
                           "GPUs each, on topology '%s'", t->name);
    np = (uint64_t)NVLS_PIECES * (p->pipeline < 1 ? 1 : p->pipeline);
    if (p->nchunks > 0) {
        if (p->nchunks % l.n != 0 || p->nchunks == 0)
            return ccs_err_set(err, CCS_ERR_UNSUPPORTED,
                               "nvls: --chunks %u is not a multiple of the "
                               "%u ranks", p->nchunks, l.n);
        np = p->nchunks / l.n;
    }
    if (np * l.n > CCS_MAX_CHUNKS ||
        np * (l.per > 2 ? l.per - 2 : 1) * l.nservers > CCS_MAX_CHUNKS)
        return ccs_err_set(err, CCS_ERR_UNSUPPORTED,
                           "nvls: %llu pieces of %u blocks exceed %u chunks",
                           (unsigned long long)np, l.n, CCS_MAX_CHUNKS);
    *pieces = (uint32_t)np;
    return CCS_OK;
}

static ccs_status_t check_nvls(const topo_t *t, const algo_params_t *p,
                               ccs_err_t *err)
{
    uint32_t np;

    return nvls_shape(t, p, &np, err);
}

/* Rank of local GPU g on server sv. */
static uint32_t nvls_rank(uint32_t g, uint32_t sv, uint32_t G)
{
    return sv * G + g;
}

static ccs_status_t build_nvls(const topo_t *t, const algo_params_t *p,
                               ccs_sched_t **out, algo_report_t *rep,
                               ccs_err_t *err)
{
    nccl_layout_t l;
    uint32_t n = (uint32_t)t->ngpus, np = 0, levels = 0, step, nsteps;
    uint32_t G, S, m, tree_len = 0;
    ccs_sched_t *s = NULL;         /* owned until *out */
    nvls_tree_t tr[2];             /* owned: the trees between servers */
    ccs_status_t st;

    memset(tr, 0, sizeof(tr));

    st = nvls_shape(t, p, &np, err);
    if (st == CCS_OK)
        st = nccl_layout(t, &l, err);
    if (st != CCS_OK)
        return st;
    S = l.nservers;
    G = l.per;
    m = G - 1;                     /* values folded per block */
    while ((1u << levels) < m)
        levels++;
    for (int w = 0; S > 1 && w < 2 && st == CCS_OK; w++) {
        st = nvls_tree_plan(S, w, &tr[w], err);
        if (st == CCS_OK && tr[w].len > tree_len)
            tree_len = tr[w].len;
    }
    if (st != CCS_OK)
        goto cleanup;
    /* per piece: 1 reduce step, the folds, the trees between servers,
     * the multicast */
    nsteps = np + levels + tree_len + 1;
    st = ccs_sched_create(p->coll, n, np * n, "nvls", &s, err);
    for (uint32_t i = 0; st == CCS_OK && i < nsteps; i++)
        st = ccs_sched_add_step(s, 0, &step, err);
    for (uint32_t t0 = 0; st == CCS_OK && t0 < np; t0++) {
        for (uint32_t sv = 0; st == CCS_OK && sv < S; sv++) {
            for (uint32_t j = 0; st == CCS_OK && j < G; j++) {
                /* block j of piece t0: S chunks, one per rail position */
                uint32_t ch = (t0 * G + j) * S;
                uint32_t rj = nvls_rank(j, sv, G);
                uint32_t sc = t0 * (G > 2 ? G - 2 : 0) * S;
                uint32_t base = t0 + 1 + levels;

                /* reduce in the switch: block j from every local GPU */
                for (uint32_t k = 0; st == CCS_OK && k < m; k++) {
                    uint32_t ri = nvls_rank((j + 1 + k) % G, sv, G);

                    if (k == 0)
                        st = ccs_sched_xfer_reduce_from(
                            s, t0, ri, CCS_BUF_IN, ch, rj, CCS_BUF_OUT, ch,
                            CCS_BUF_IN, ch, S, err);
                    else
                        st = ccs_sched_xfer(s, t0, ri, CCS_BUF_IN, ch, rj,
                                            CCS_BUF_SCRATCH,
                                            sc + (k - 1) * S, S, false, err);
                }
                /* fold: value 0 is OUT, value k >= 1 SCRATCH slot k-1 */
                for (uint32_t L = 0; st == CCS_OK && L < levels; L++) {
                    uint32_t stride = 1u << L;

                    for (uint32_t a = 0; st == CCS_OK && a + stride < m;
                         a += 2 * stride) {
                        uint32_t b = a + stride;
                        ccs_buf_t db = a == 0 ? CCS_BUF_OUT
                                              : CCS_BUF_SCRATCH;
                        uint32_t dc = a == 0 ? ch : sc + (a - 1) * S;

                        st = ccs_sched_local(s, t0 + 1 + L, rj, db, dc,
                                             CCS_BUF_SCRATCH,
                                             sc + (b - 1) * S, S, true, err);
                    }
                }
                /* double binary tree between servers on block j (GPU j
                 * of every server, through its own NIC): tree 0 carries
                 * the block's first S - S/2 chunks, tree 1 the rest; up
                 * the tree summed into OUT, then down */
                for (int w = 0; st == CCS_OK && S > 1 && w < 2; w++) {
                    const nvls_tree_t *nt = &tr[w];
                    uint32_t c0 = w == 0 ? ch : ch + S - S / 2;
                    uint32_t nc = w == 0 ? S - S / 2 : S / 2;
                    uint32_t root = nt->t.root;

                    if (nt->t.parent[sv] >= 0)
                        st = ccs_sched_xfer_reduce_from(
                            s, base + nt->up[sv], rj, CCS_BUF_OUT, c0,
                            nvls_rank(j, (uint32_t)nt->t.parent[sv], G),
                            CCS_BUF_OUT, c0, CCS_BUF_OUT, c0, nc, err);
                    for (uint32_t k = 0; st == CCS_OK &&
                         k < nt->t.nchild[sv]; k++)
                        st = ccs_sched_xfer(
                            s, base + nt->up[root] + nt->depth[sv], rj,
                            CCS_BUF_OUT, c0,
                            nvls_rank(j, nt->t.child[sv * TREE_MAX_CHILDREN
                                                     + k], G),
                            CCS_BUF_OUT, c0, nc, false, err);
                }
                /* multicast the reduced block to every other local GPU */
                for (uint32_t k = 0; st == CCS_OK && k < m; k++)
                    st = ccs_sched_xfer(s, base + tree_len, rj,
                                        CCS_BUF_OUT, ch,
                                        nvls_rank((j + 1 + k) % G, sv, G),
                                        CCS_BUF_OUT, ch, S, false, err);
            }
        }
    }
    if (st == CCS_OK)
        st = nccl_params_add(s, "nvls", 1, err);
    if (st != CCS_OK)
        goto cleanup;
    algo_report_addf(rep, "nvls: %u server(s) of %u, %u pieces, %u fold "
                     "levels, %u steps", S, G, np, levels, nsteps);
    *out = s;
    s = NULL;

cleanup:
    ccs_sched_destroy(s);
    nvls_tree_free(&tr[0]);
    nvls_tree_free(&tr[1]);
    return st;
}

const algo_desc_t algo_nvls = {
    .name = "nvls",
    .desc = "NCCL's NVLS: in-switch reduce + multicast (H100 NVSwitch; "
            "baseline)",
    .colls = ALGO_COLL_BIT(CCS_COLL_ALLREDUCE),
    .check = check_nvls,
    .build = build_nvls,
};
