/*
 * algo_dbtree.c - NCCL's double binary tree allreduce (Sanders, Speck and
 * Traeff 2009, as shipped in NCCL 2.4; the DBTree baseline of the
 * MultiTree paper, Sec. II and Fig. 4b), plus single-tree pipelined reduce
 * and broadcast.
 *
 * Trees (synth/tree.c): NCCL's binary tree on positions 0..n-1 (position 0
 * is the root with one child; odd positions are the leaves, even ones
 * interior).  Tree 0 puts position p on rank p; tree 1 on rank n-1-p when
 * n is even (mirror) and on rank (p+1) mod n when n is odd (shift).  For
 * even n every rank is a leaf in one tree and interior in the other; for
 * odd n all but one rank are.
 *
 * allreduce  the buffer is split in halves, one per tree, each of K chunks.
 *            In each tree chunk c is reduced up to the root and broadcast
 *            back down, one level per step, chunk c+1 one step behind
 *            chunk c, so all levels of both trees work at once.  The IR
 *            forbids two receives reducing into one chunk in one step, so
 *            the two children of a rank deliver a chunk in different steps
 *            and the up phase takes up to 2 steps per level:
 *            steps = K + about 3 log2(n) (exact: tree_steps).
 *            Cost on a uniform switch, K chunks per half: each step moves
 *            chunks of s/(2K) bytes and a rank sends at most 4 and
 *            receives at most 4 of them per step (1 up + 2 down in the tree
 *            where it is interior, 1 up as a leaf in the other), 2s in and
 *            2s out in all, like the ring:
 *            T ~ (K + 3 log2 n) a + 2 s b (1 + O(log2(n) / K)).
 *            (Simulated, dgx-h100, 4 GiB, barrier mode: 23.9 ms at K = 8,
 *            19.8 ms at K = 128; 2 s b is 19.1 ms.)
 * reduce     one tree rooted at --root (positions rotated by the root):
 *            chunks pipelined up; partial sums in SCRATCH because only the
 *            root's OUT is backed.  About K + 2 log2(n) steps,
 *            T ~ (K + 2 log2 n) a + 2 s b (1 + O(log2(n)/K)) (an inner
 *            rank receives two chunks per step).
 * broadcast  the same tree, root's IN pipelined down.  About K + log2(n)
 *            steps, T ~ (K + log2 n) a + 2 s b (1 + log2(n)/K) (an inner
 *            rank sends each chunk to two children).
 * (a = alpha, b = beta, s = buffer bytes, n ranks.)
 *
 * Chunks: K = 8 x --pipeline per tree by default (8 is NCCL-like pipeline
 * depth: enough chunks for the levels to overlap); --chunks C sets the
 * total (allreduce: C even, K = C/2).  Topology-oblivious: runs on any
 * topology with n >= 2 GPUs; not one-port.
 */
#include <stdlib.h>

#include "algo.h"
#include "tree.h"

/* Default chunks per tree at --pipeline 1. */
#define DBTREE_CHUNKS_PER_TREE 8u

#define DBTREE_COLLS                                                       \
    (ALGO_COLL_BIT(CCS_COLL_ALLREDUCE) | ALGO_COLL_BIT(CCS_COLL_REDUCE) |  \
     ALGO_COLL_BIT(CCS_COLL_BROADCAST))

/* Chunks per tree. */
static ccs_status_t dbtree_per_tree(const algo_params_t *p, uint32_t *k,
                                    ccs_err_t *err)
{
    uint32_t trees = p->coll == CCS_COLL_ALLREDUCE ? 2 : 1;
    uint64_t per = (uint64_t)DBTREE_CHUNKS_PER_TREE *
                   (p->pipeline < 1 ? 1 : p->pipeline);

    if (p->nchunks > 0) {
        if (p->nchunks % trees != 0)
            return ccs_err_set(err, CCS_ERR_UNSUPPORTED,
                               "dbtree: --chunks %u must be even (one half "
                               "per tree)", p->nchunks);
        per = p->nchunks / trees;
    }
    if (per * trees > CCS_MAX_CHUNKS)
        return ccs_err_set(err, CCS_ERR_UNSUPPORTED,
                           "dbtree: %llu chunks exceeds %u",
                           (unsigned long long)(per * trees), CCS_MAX_CHUNKS);
    *k = (uint32_t)per;
    return CCS_OK;
}

static ccs_status_t check_dbtree(const topo_t *t, const algo_params_t *p,
                                 ccs_err_t *err)
{
    uint32_t k = 0;

    if (t->ngpus < 2)
        return ccs_err_set(err, CCS_ERR_UNSUPPORTED,
                           "dbtree: topology '%s' has %d GPU(s), needs 2 or "
                           "more", t->name, t->ngpus);
    return dbtree_per_tree(p, &k, err);
}

static ccs_status_t build_dbtree(const topo_t *t, const algo_params_t *p,
                                 ccs_sched_t **out, algo_report_t *rep,
                                 ccs_err_t *err)
{
    uint32_t n = (uint32_t)t->ngpus;
    uint32_t ntrees = p->coll == CCS_COLL_ALLREDUCE ? 2 : 1;
    tree_t trees[2] = { { 0 }, { 0 } };
    tree_mode_t mode;
    uint32_t *map = NULL;
    ccs_sched_t *s = NULL;
    uint32_t k = 0, steps = 0, step;
    ccs_status_t st;

    (void)rep;  /* nothing to report */

    switch (p->coll) {
    case CCS_COLL_ALLREDUCE: mode = TREE_ALLREDUCE; break;
    case CCS_COLL_REDUCE: mode = TREE_REDUCE; break;
    case CCS_COLL_BROADCAST: mode = TREE_BCAST; break;
    default:
        return ccs_err_set(err, CCS_ERR_UNSUPPORTED,
                           "dbtree does not implement %s",
                           ccs_coll_str(p->coll));
    }
    st = dbtree_per_tree(p, &k, err);
    if (st != CCS_OK)
        return st;
    /* Owned here, freed at cleanup: position -> rank map. */
    map = malloc((size_t)n * sizeof(*map));
    if (map == NULL)
        return ccs_err_set(err, CCS_ERR_NOMEM, "dbtree: out of memory");
    for (uint32_t i = 0; i < ntrees; i++) {
        uint32_t ts = 0;

        if (ntrees == 2)
            tree_dbtree_map(n, (int)i, map);
        else
            tree_rotate_map(n, (uint32_t)p->root, map);
        st = tree_btree(n, map, &trees[i], err);
        if (st != CCS_OK)
            goto cleanup;
        st = tree_steps(&trees[i], mode, k, &ts, err);
        if (st != CCS_OK)
            goto cleanup;
        if (ts > steps)
            steps = ts;
    }
    /* Owned by the caller through *out on success. */
    st = ccs_sched_create(p->coll, n, ntrees * k, "dbtree", &s, err);
    if (st != CCS_OK)
        goto cleanup;
    if (ccs_coll_rooted(p->coll))
        s->root = p->root;
    for (uint32_t i = 0; i < steps; i++) {
        if ((st = ccs_sched_add_step(s, 0, &step, err)) != CCS_OK)
            goto cleanup;
    }
    /* Both trees start at step 0 and run side by side on disjoint
     * halves of the buffer. */
    for (uint32_t i = 0; i < ntrees; i++) {
        st = tree_emit(s, &trees[i], mode, i * k, k, 0,
                       mode == TREE_REDUCE ? CCS_BUF_SCRATCH : CCS_BUF_OUT,
                       err);
        if (st != CCS_OK)
            goto cleanup;
    }
    st = ccs_sched_finalize(s, err);
    if (st != CCS_OK)
        goto cleanup;
    *out = s;
    s = NULL;

cleanup:
    ccs_sched_destroy(s);
    tree_destroy(&trees[0]);
    tree_destroy(&trees[1]);
    free(map);
    return st;
}

const algo_desc_t algo_dbtree = {
    .name = "dbtree",
    .desc = "NCCL double binary tree allreduce, pipelined; also tree "
            "reduce/broadcast",
    .colls = DBTREE_COLLS,
    .check = check_dbtree,
    .build = build_dbtree,
};
