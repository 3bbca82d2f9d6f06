/*
 * tree.h - binary trees over ranks and pipelined tree schedules, shared by
 * the tree baselines (algo_dbtree.c: NCCL's double binary tree allreduce,
 * single-tree reduce and broadcast).
 *
 * A tree_t is a rooted tree on ranks 0..n-1 in which every rank has at most
 * two children.  tree_btree builds NCCL's binary tree shape on positions
 * 0..n-1 (below) and places position p on rank rank_of_pos[p].
 *
 * Ownership: tree_btree's *t fields are owned by t and freed by
 * tree_destroy (a zeroed tree_t is safe to destroy).
 */
#ifndef CCS_TREE_H
#define CCS_TREE_H

#include <stdint.h>

#include "sched.h"

#define TREE_MAX_CHILDREN 2

typedef struct tree {
    uint32_t n;            /* ranks */
    uint32_t root;         /* root rank */
    int32_t *parent;       /* [n] parent rank; -1 at the root */
    uint32_t *child;       /* [n * TREE_MAX_CHILDREN] children of r at
                              child[r * TREE_MAX_CHILDREN + i], i < nchild */
    uint8_t *nchild;       /* [n] number of children */
} tree_t;

/* NCCL's binary tree on positions 0..n-1 (n >= 1): position 0 is the root
 * and has one child, the largest power of two below n; for p > 0 with
 * lowest set bit L, the children are p - L/2 and p + L/2 (or, when that is
 * >= n, the largest p + L' < n with L' < L/2).  Odd positions are exactly
 * the leaves.  rank_of_pos must be a permutation of 0..n-1; NULL means the
 * identity.  CCS_ERR_INVALID when it is not a permutation. */
ccs_status_t tree_btree(uint32_t n, const uint32_t *rank_of_pos, tree_t *t,
                        ccs_err_t *err);

/* The position -> rank map of NCCL's double binary tree, tree `which`
 * (0 or 1): tree 0 is the identity; tree 1 mirrors (rank n-1-p) when n is
 * even and shifts (rank (p+1) mod n) when n is odd, so that the leaves of
 * one tree (odd positions) are interior ranks of the other.  rank_of_pos
 * has n entries. */
void tree_dbtree_map(uint32_t n, int which, uint32_t *rank_of_pos);

/* Rotation map: position p on rank (p + root) mod n, so position 0 (the
 * root) is `root`. */
void tree_rotate_map(uint32_t n, uint32_t root, uint32_t *rank_of_pos);

void tree_destroy(tree_t *t);

/* Height of the tree (edges on the longest root-to-leaf path). */
uint32_t tree_height(const tree_t *t);

/* What a pipelined tree schedule does with each chunk. */
typedef enum {
    TREE_REDUCE = 0,    /* reduce up to the root's OUT */
    TREE_BCAST = 1,     /* broadcast the root's IN down to every OUT */
    TREE_ALLREDUCE = 2, /* reduce up, then broadcast the result down */
    TREE_MODE_COUNT
} tree_mode_t;

/* Steps tree_emit uses for k chunks (>= 1), through *steps. */
ccs_status_t tree_steps(const tree_t *t, tree_mode_t mode, uint32_t k,
                        uint32_t *steps, ccs_err_t *err);

/* Append the ops of a pipelined tree schedule for chunks [chunk0,
 * chunk0 + k) into existing steps [step0, step0 + tree_steps()).  Chunk c
 * moves one tree level per step and chunk c+1 follows one step behind, so
 * the levels work concurrently.  Partial sums at non-root ranks live in
 * part_buf (OUT, or SCRATCH at the same chunk index when OUT is not
 * backed there, as for reduce).  Within a step no rank writes a chunk
 * twice or reads a chunk it writes: the two children of a rank deliver
 * the same chunk in different steps (the one that sends later is delayed
 * by one step when both subtrees would be ready together). */
ccs_status_t tree_emit(ccs_sched_t *s, const tree_t *t, tree_mode_t mode,
                       uint32_t chunk0, uint32_t k, uint32_t step0,
                       ccs_buf_t part_buf, ccs_err_t *err);

#endif /* CCS_TREE_H */
