/*
 * algo_nccl_tree.c - NCCL's tree allreduce, the tree half of the `nccl`
 * baseline.
 *
 * What NCCL does (src/graph/connect.cc, NCCL 2.4 release notes "double
 * binary trees"): inside a server the GPUs form a chain; across servers
 * the servers form two complementary binary trees (a server that is a
 * leaf in one is interior in the other), each tree carrying half of the
 * data.  Chunks are reduced up the chain and the tree to the root and
 * broadcast back down, pipelined so every level works at once.  NCCL
 * picks it over rings at scale (its latency grows with log2 of the server
 * count, the ring's with the rank count) and for mid sizes across servers.
 *
 * NCCL runs the pair of trees on every channel, and its search gives each
 * channel's trees their own NICs, so C channels cross servers through C
 * NICs at once.
 *
 * Here: channel c, tree k (0, 1) chains server s's GPUs from local c
 * upwards (k = 0) or downwards from local c-1 (k = 1), rotated by the
 * channel so channels use different GPUs (and NICs) at the chain ends;
 * the chain's head hangs under the tail of its parent
 * server in NCCL's binary tree over servers (tree_dbtree_map), and the
 * tail carries up to two child servers, so no GPU has more than two
 * children (through the NVSwitch every GPU of a server is equally near,
 * so attaching at the tail instead of the head costs the same).  A single
 * server is one chain.  K = 8 x --pipeline chunks per tree (--chunks 2CK);
 * C = --channels, by default one per NIC of a server (nccl.h).
 *
 * Cost (a = alpha, b = beta, s bytes, G GPUs per server, S servers): the
 * depth is d ~ (G-1) + log2(S) hops, each
 * taken twice (up and down), pipelined over K chunks per tree:
 * T ~ (K + 3 d) a + 2 s b (1 + O(d / K)) on a uniform network, with the
 * network hops limited by the NIC of the chain ends.
 */
#include <stdlib.h>

#include "algo.h"
#include "nccl.h"
#include "tree.h"

#define NTREE_CHUNKS_PER_TREE 8u

static ccs_status_t ntree_per_tree(const topo_t *t, const algo_params_t *p,
                                   nccl_layout_t *l, uint32_t *nchan,
                                   uint32_t *k, ccs_err_t *err)
{
    uint64_t per = (uint64_t)NTREE_CHUNKS_PER_TREE *
                   (p->pipeline < 1 ? 1 : p->pipeline);
    ccs_status_t st = nccl_layout(t, l, err);

    if (st != CCS_OK)
        return st;
    *nchan = p->channels > 0 ? p->channels : nccl_default_channels(l);
    if (*nchan > 64)
        return ccs_err_set(err, CCS_ERR_UNSUPPORTED, "nccl-tree: %u "
                           "channels; NCCL runs at most 64", *nchan);
    if (p->nchunks > 0) {
        if (p->nchunks % (2 * *nchan) != 0)
            return ccs_err_set(err, CCS_ERR_UNSUPPORTED,
                               "nccl-tree: --chunks %u is not a multiple of "
                               "2 trees x %u channels", p->nchunks, *nchan);
        per = p->nchunks / (2 * *nchan);
    }
    if (per * 2 * *nchan > CCS_MAX_CHUNKS)
        return ccs_err_set(err, CCS_ERR_UNSUPPORTED,
                           "nccl-tree: %llu chunks exceeds %u",
                           (unsigned long long)(per * 2 * *nchan),
                           CCS_MAX_CHUNKS);
    *k = (uint32_t)per;
    return CCS_OK;
}

static ccs_status_t check_ntree(const topo_t *t, const algo_params_t *p,
                                ccs_err_t *err)
{
    nccl_layout_t l;
    uint32_t c, k;

    return ntree_per_tree(t, p, &l, &c, &k, err);
}

static void add_child(tree_t *tr, uint32_t parent, uint32_t child)
{
    tr->parent[child] = (int32_t)parent;
    tr->child[parent * TREE_MAX_CHILDREN + tr->nchild[parent]++] = child;
}

/* Rank r moved by c places inside its server of g GPUs. */
static uint32_t rot(uint32_t r, uint32_t g, uint32_t c)
{
    return r - r % g + (r % g + c) % g;
}

/* Tree `which` of NCCL's layout: chains in servers, the servers' binary
 * tree between chain ends.  tr is filled (owned by the caller's tree_t). */
static ccs_status_t ntree_build(const nccl_layout_t *l, int which,
                                uint32_t chan, tree_t *tr, ccs_err_t *err)
{
    uint32_t n = l->n;
    uint32_t ns = l->per > 0 ? l->nservers : 1;
    uint32_t g = l->per > 0 ? l->per : n;
    uint32_t *map = NULL;     /* owned here */
    tree_t st_tree = { 0 };   /* owned here: the tree over servers */
    ccs_status_t st = CCS_OK;

    tr->n = n;
    tr->parent = malloc(sizeof(*tr->parent) * n);
    tr->child = calloc((size_t)n * TREE_MAX_CHILDREN, sizeof(*tr->child));
    tr->nchild = calloc(n, sizeof(*tr->nchild));
    map = malloc(sizeof(*map) * ns);
    if (tr->parent == NULL || tr->child == NULL || tr->nchild == NULL ||
        map == NULL) {
        st = ccs_err_set(err, CCS_ERR_NOMEM, "nccl-tree: out of memory");
        goto cleanup;
    }
    for (uint32_t r = 0; r < n; r++)
        tr->parent[r] = -1;
    tree_dbtree_map(ns, which, map);
    st = tree_btree(ns, map, &st_tree, err);
    if (st != CCS_OK)
        goto cleanup;
    for (uint32_t s = 0; s < ns; s++) {
        /* chain: position j of server s, rotated by the channel */
        for (uint32_t j = 1; j < g; j++) {
            uint32_t a = s * g + (which ? g - j : j - 1);
            uint32_t b = s * g + (which ? g - 1 - j : j);
            add_child(tr, rot(a, g, chan), rot(b, g, chan));
        }
    }
    for (uint32_t s = 0; s < ns; s++) {
        uint32_t head = rot(s * g + (which ? g - 1 : 0), g, chan);
        int32_t ps = st_tree.parent[s];

        if (ps < 0) {
            tr->root = head;
            continue;
        }
        add_child(tr, rot((uint32_t)ps * g + (which ? 0 : g - 1), g, chan),
                  head);
    }

cleanup:
    tree_destroy(&st_tree);
    free(map);
    return st;
}

static ccs_status_t build_ntree(const topo_t *t, const algo_params_t *p,
                                ccs_sched_t **out, algo_report_t *rep,
                                ccs_err_t *err)
{
    nccl_layout_t l;
    tree_t *trees = NULL;                 /* owned here: [2 * nchan] */
    ccs_sched_t *s = NULL;                /* owned until *out */
    uint32_t k = 0, nchan = 0, steps = 0, step;
    ccs_status_t st;

    st = ntree_per_tree(t, p, &l, &nchan, &k, err);
    if (st != CCS_OK)
        return st;
    trees = calloc(2 * (size_t)nchan, sizeof(*trees));
    if (trees == NULL)
        return ccs_err_set(err, CCS_ERR_NOMEM, "nccl-tree: out of memory");
    for (uint32_t i = 0; st == CCS_OK && i < 2 * nchan; i++) {
        uint32_t ts = 0;

        st = ntree_build(&l, (int)(i % 2), i / 2, &trees[i], err);
        if (st == CCS_OK)
            st = tree_steps(&trees[i], TREE_ALLREDUCE, k, &ts, err);
        if (ts > steps)
            steps = ts;
    }
    if (st == CCS_OK)
        st = ccs_sched_create(p->coll, l.n, 2 * nchan * k, "nccl-tree", &s,
                              err);
    for (uint32_t i = 0; st == CCS_OK && i < steps; i++)
        st = ccs_sched_add_step(s, 0, &step, err);
    /* Every tree starts at step 0 on its own part of the buffer. */
    for (uint32_t i = 0; st == CCS_OK && i < 2 * nchan; i++)
        st = tree_emit(s, &trees[i], TREE_ALLREDUCE, i * k, k, 0,
                       CCS_BUF_OUT, err);
    if (st == CCS_OK)
        st = nccl_params_add(s, "channels", nchan, err);
    /* each transfer is one channel's: capped at one channel's rate, by
     * NCCL's caps for its tree (sim_proto.h) */
    if (st == CCS_OK)
        st = nccl_params_add(s, "lanes", 1, err);
    if (st == CCS_OK)
        st = nccl_params_add_str(s, "caps", "tree", err);
    if (st != CCS_OK)
        goto cleanup;
    algo_report_addf(rep, "nccl-tree: %u channel(s), %u server(s), chains "
                     "of %u, %u chunks per tree, %u steps", nchan,
                     l.per > 0 ? l.nservers : 1, l.per > 0 ? l.per : l.n,
                     k, steps);
    *out = s;
    s = NULL;

cleanup:
    ccs_sched_destroy(s);
    for (uint32_t i = 0; trees != NULL && i < 2 * nchan; i++)
        tree_destroy(&trees[i]);
    free(trees);
    return st;
}

const algo_desc_t algo_nccl_tree = {
    .name = "nccl-tree",
    .desc = "NCCL's tree: chain per server, double binary tree across "
            "(baseline)",
    .colls = ALGO_COLL_BIT(CCS_COLL_ALLREDUCE),
    .check = check_ntree,
    .build = build_ntree,
};
