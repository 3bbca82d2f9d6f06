/*
 * mtree_int.h - what the files of the MultiTree construction share (not
 * public: mtree.h is the layer's interface).
 *
 * mtree_prep.c sets up a construction's working state (capacities,
 * distances, switched candidates, bit matrices); mtree.c builds the trees
 * with it, picks the best order and draws the result.
 */
#ifndef CCS_MTREE_INT_H
#define CCS_MTREE_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mtree.h"

/* Working state of one construction; every pointer owned here and freed by
 * mtree_build_free. */
typedef struct build {
    const topo_t *t;
    mtree_opts_t opts;
    int32_t n, nnodes, nlinks;
    int32_t *cap;          /* [nlinks] residual capacity this step */
    int32_t *members;      /* [n*n] per tree, ranks in join order */
    int32_t *nmem;         /* [n] */
    int32_t *live;         /* [n*n] per tree, members that may still parent */
    int32_t *nlive;        /* [n] */
    int32_t *missing;      /* [n*n] GPU out-neighbours not in the tree; -1 if
                              the rank reaches switches (no pruning) */
    int32_t *last_child;   /* [n*n] step of the last child added (rule 3) */
    int32_t *dist;         /* [n*n] GPU-hop distance root -> rank */
    int32_t *far_cnt;      /* [n*(maxd+1)] non-members per distance */
    int32_t *far_top;      /* [n] current remaining height */
    int32_t maxd;
    int32_t *nbr_start;    /* [n+1] distinct direct GPU in-neighbours */
    int32_t *nbr;
    int32_t *stamp;        /* [nnodes] BFS visit stamps */
    int32_t *pnext;        /* [nlinks] next parallel link u->v (cyclic):
                              one pipe in the simulator */
    int32_t cur_stamp;
    /* Switched candidates of each rank p (III-C3): the ranks whose
     * topo_route from p passes through switches and NICs only, nearest
     * first, each with that fixed route (switched_candidates). */
    int32_t *cand_start;   /* [n+1] */
    int32_t *cand;         /* rank */
    int32_t *cand_off;     /* into cand_links */
    int32_t *cand_len;
    int32_t *cand_links;
    int32_t maxhops;       /* longest candidate route (>= 1) */
    bool has_hops[64];     /* route lengths that occur (capped) */
    int32_t *order;        /* [n] turn order */
    int64_t *keys;         /* [n] sort keys */
    bool *step_done;       /* [n] */
    /* cursor[r * (maxhops + 1) + h]: where tree r's scan of its live
     * parents for routes of h links resumes in this step.  Within a step
     * a failed probe stays failed (capacity only shrinks, members only
     * join, `missing` only falls), so a turn need not rescan the parents
     * before the last winner: the same choices at O(live) per tree and
     * step instead of O(live) per turn. */
    int32_t *cursor;
    /* member[r * mwords + c / 64] bit c % 64: rank c is in tree r (as
     * join_step >= 0), n^2 / 8 bytes: the membership test of every probe
     * stays in cache, where join_step's 4 n^2 bytes do not. */
    uint64_t *member;
    /* full: the same layout, bit p set when missing[r][p] == 0 (p has no
     * GPU neighbour left outside tree r), tested where missing would be */
    uint64_t *full;
    int32_t mwords;
    int32_t *nparents;     /* [n] live members at the step's start: those
                              after them joined in this step and may not
                              parent yet (the live list is in join order) */
    int32_t path_cap;
} build_t;

static inline bool mtree_is_gpu(const topo_t *t, int32_t v)
{
    return t->nodes[v].kind == TOPO_NODE_GPU && t->nodes[v].rank >= 0;
}

/* Bit c of row r in an n x words bit matrix. */
static inline bool mtree_test_bit(const uint64_t *bits, int32_t words,
                                  int32_t r, int32_t c)
{
    return (bits[(size_t)r * (size_t)words + (size_t)c / 64] >> (c % 64)) &
           1u;
}

static inline void mtree_set_bit(uint64_t *bits, int32_t words, int32_t r,
                                 int32_t c)
{
    bits[(size_t)r * (size_t)words + (size_t)c / 64] |= UINT64_C(1)
                                                         << (c % 64);
}

/* mtree_prep.c */
ccs_status_t mtree_build_init(build_t *b, const topo_t *t,
                              const mtree_opts_t *opts, int32_t *link_cap,
                              ccs_err_t *err);
void mtree_build_free(build_t *b);

#endif
