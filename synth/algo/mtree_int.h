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
 * mtree_build_free.  Per-tree state is kept to what every join must touch
 * (a membership bit, the live list, the edge): with n trees of n ranks,
 * each further n x n array read or written per join is a cache miss per
 * join on thousands of ranks. */
typedef struct build {
    const topo_t *t;
    mtree_opts_t opts;
    int32_t n, nnodes, nlinks;
    int32_t *cap;          /* [nlinks] residual capacity this step */
    /* Out-links of each rank with capacity left this step (every link has
     * some at the step's start: out_deg), kept as links fill: whether a
     * rank can still send is one read. */
    int32_t *free_out;     /* [n] */
    int32_t *out_deg;      /* [n] */
    int32_t senders;       /* ranks with free_out > 0 now: at 0 no route
                              can start, and the step is over for all */
    int32_t senders0;      /* ranks with out_deg > 0 */
    int32_t *link_src_rank;/* [nlinks] rank at the link's source, or -1 */
    int32_t *nmem;         /* [n] ranks in each tree */
    uint16_t *live;        /* [n*n] per tree, members that may still parent,
                              in join order (ranks < 65536: mtree_build_init;
                              half the bytes of the rows every step scans) */
    int32_t *nlive;        /* [n] */
    int32_t *last_child;   /* [n*n] step of the last child added (rule 3);
                              MTREE_CHILDREN_ONE only, else NULL */
    /* MTREE_ORDER_HEIGHT only (NULL otherwise): GPU-hop distance root ->
     * rank, and per tree the non-members at each distance, whose largest
     * nonzero index is the remaining height. */
    uint16_t *dist;        /* [n*n] */
    int32_t *far_cnt;      /* [n*(maxd+1)] */
    int32_t *far_top;      /* [n] current remaining height */
    int32_t maxd;
    /* Whether each rank has a link to a switch or NIC.  A rank that has
     * none and whose GPU out-neighbours are all in tree r can no longer
     * parent in tree r (mtree.c, direct_probe). */
    bool *switched;        /* [n] */
    /* Each rank's out-links to GPUs, in the topology's out-link order, and
     * the rank each reaches (rule 4's direct links and the fullness test,
     * without touching the node table). */
    int32_t *dlink_start;  /* [n+1] */
    int32_t *dlink;        /* link id */
    int32_t *dlink_rank;   /* rank at its far end */
    int32_t *stamp;        /* [nnodes] scratch of mtree_prep.c's pipes() */
    int32_t *pnext;        /* [nlinks] next parallel link u->v (cyclic):
                              one pipe in the simulator */
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
    int32_t *bucket;       /* [maxd + 1] counting sort of the turn order by
                              remaining height (MTREE_ORDER_HEIGHT) */
    bool *step_done;       /* [n] */
    /* cursor[r * (maxhops + 1) + h]: where tree r's scan of its live
     * parents for routes of h links resumes in this step.  Within a step
     * a failed probe stays failed (capacity only shrinks, members only
     * join), so a turn need not rescan the parents before the last
     * winner: the same choices at O(live) per tree and step instead of
     * O(live) per turn. */
    int32_t *cursor;
    /* member[r * mwords + c / 64] bit c % 64: rank c is in tree r, n^2 / 8
     * bytes: the membership test of every probe stays in cache. */
    uint64_t *member;
    int32_t mwords;
    int32_t *nparents;     /* [n] live members at the step's start: those
                              after them joined in this step and may not
                              parent yet (the live list is in join order) */
    int32_t *keep;         /* [n] where the direct-link scan writes the next
                              parent it keeps; -1 once it has ended in this
                              step (mtree.c, close_live) */
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
