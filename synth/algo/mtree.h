/*
 * mtree.h - MultiTree spanning-tree construction (Huang et al., "Communication
 * Algorithm-Architecture Co-Design for Distributed Deep Learning", ISCA'21,
 * section III, Algorithm 1; III-C3 switched networks; VII-B heterogeneous
 * links).  Kept apart from the IR emission (algo_multitree.c) so that tests
 * and drawings can inspect the trees.
 *
 * One all-gather (broadcast) tree per GPU rank r, rooted at r.  Trees grow
 * top-down, all together, one time step at a time.  A node c joins tree r
 * at step t (it receives rank r's block from its parent during step t);
 * its parent joined at a step < t.  An edge parent -> child is either one
 * topology link between two GPUs or a path whose interior nodes are all
 * switches or NICs (III-C3): topo_route's route between the two, the one
 * the simulator uses (up to the choice among parallel links); every link
 * on it is charged one unit of the step's capacity.  See docs/multitree.md
 * for every tie-breaking rule.
 *
 * Link capacity per step (VII-B): a link k times wider than the slowest
 * link of the topology counts as k parallel unit links,
 * k = max(1, round(bw / min_bw)); parallel links each have their own k.
 *
 * Ownership: mtree_build's *out is owned by the caller and freed by
 * mtree_destroy.  The trees keep no pointer to the topology.
 */
#ifndef CCS_MTREE_H
#define CCS_MTREE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "err.h"
#include "sched.h"
#include "topo.h"

/* Which tree takes its turn first in each step. */
typedef enum {
    MTREE_ORDER_ROOT = 0,   /* ascending root rank (the paper's default) */
    MTREE_ORDER_HEIGHT = 1, /* larger remaining height first, then root
                               rank (the paper's advice for irregular
                               networks) */
    MTREE_ORDER_COUNT
} mtree_order_t;

const char *mtree_order_str(mtree_order_t o); /* "root", "height" */

/* How many children a parent may take in one tree and one step.  The
 * all-gather gains from fan-out (a root feeds all its links in step 1);
 * the reduce-scatter replays the trees in reverse, and since the schedule
 * IR writes a chunk at most once per step, partial sums that arrive
 * together are merged by extra local steps (algo_multitree.c).
 * MTREE_CHILDREN_ONE avoids those at the price of more transfer steps
 * (torus 8x8: 19 instead of 17). */
typedef enum {
    MTREE_CHILDREN_ANY = 0,       /* no limit (Algorithm 1 as published) */
    MTREE_CHILDREN_ONE = 1,       /* at most one per (tree, parent, step) */
    MTREE_CHILDREN_COUNT
} mtree_children_t;

const char *mtree_children_str(mtree_children_t c); /* "any", ... */

typedef struct mtree_opts {
    mtree_order_t order;
    mtree_children_t children;
} mtree_opts_t;

/* Default options: MTREE_ORDER_HEIGHT, MTREE_CHILDREN_ANY. */
void mtree_opts_init(mtree_opts_t *o);

typedef struct mtree_edge {
    int32_t parent;    /* rank */
    int32_t child;     /* rank */
    int32_t step;      /* 1-based step in which child receives, >= 1 */
    int32_t path_off;  /* first link of the path in mtree_t.path_links */
    int32_t path_len;  /* links from parent's node to child's node, >= 1;
                          0 when read back from a schedule (no route) */
} mtree_edge_t;

typedef struct mtree {
    int32_t nranks;       /* n == number of trees == nodes per tree */
    int32_t nsteps;       /* T: steps of the all-gather */
    int32_t lower_bound;  /* ceil((n - 1) / min over GPUs of in-capacity) */
    int32_t nlinks;       /* of the topology it was built on */
    mtree_opts_t opts;    /* options that built it */
    int32_t *link_cap;    /* [nlinks] capacity units per step (VII-B) */
    /* Tree r's edges are edges[r * (n - 1) .. (r + 1) * (n - 1)) in the
     * order they were added (steps non-decreasing). */
    mtree_edge_t *edges;  /* [n * (n - 1)] */
    int32_t *path_links;  /* link ids of all edge paths */
    int32_t npath_links;
    /* Per tree r and rank v, index r * n + v: */
    int32_t *join_step;   /* step v joined tree r (0 for the root) */
    int32_t *parent;      /* parent rank of v in tree r, -1 for the root */
    int32_t *height;      /* [n] height of tree r (its last join step) */
} mtree_t;

/* Build the trees with the given options (NULL: defaults).
 * CCS_ERR_TOPOLOGY when some GPU cannot reach another through links. */
ccs_status_t mtree_build(const topo_t *t, const mtree_opts_t *opts,
                         mtree_t **out, ccs_err_t *err);

/* Build with every tree order (`children` fixed as given) and keep the
 * trees with the fewest steps; ties keep the lower mtree_order_t. */
ccs_status_t mtree_build_best(const topo_t *t, mtree_children_t children,
                              mtree_t **out, ccs_err_t *err);

/* Partial sums a rank holds after one reduce-scatter step in which
 * `arrivals` partials reach it while it holds `held`: arrivals merge into
 * distinct held partials (RECV_REDUCE), the remaining held partials merge
 * pairwise (REDUCE_LOCAL), extra arrivals land in fresh chunks (RECV):
 * max(arrivals, ceil((held + arrivals) / 2)). */
int32_t mtree_merge_step(int32_t held, int32_t arrivals);

void mtree_destroy(mtree_t *m);  /* NULL is a no-op */

/* Edge of tree r by which v joined (NULL for the root). */
const mtree_edge_t *mtree_edge_to(const mtree_t *m, int32_t r, int32_t v);

/* Read the trees back from a schedule that --algo multitree wrote
 * (allgather, reducescatter or allreduce, any pipelining factor): the
 * all-gather's edges where it has them, else the reduce-scatter's reversed,
 * with the steps of mtree_build (an allreduce must give the same trees from
 * both halves).  The result has no topology part (nlinks 0, path_len 0,
 * lower_bound 0).  CCS_ERR_UNSUPPORTED for another collective or chunk
 * count, CCS_ERR_VERIFY naming the step, rank and tree when the transfers
 * do not form one spanning tree per rank rooted at it.  *out is the
 * caller's (mtree_destroy).  See mtree_sched.c for the exact rules. */
ccs_status_t mtree_from_sched(const ccs_sched_t *s, mtree_t **out,
                              ccs_err_t *err);

/* Graphviz DOT of the trees: one cluster per tree, nodes "t<root>_<rank>"
 * labelled with the rank (root drawn double), edges labelled with their
 * step and, for a path through switches, the switch names (t supplies the
 * names; it must be the topology the trees were built on).  t may be NULL
 * for trees read back from a schedule (mtree_from_sched): no switch names,
 * and neither bound nor options in the header.  CCS_ERR_IO when writing
 * fails. */
ccs_status_t mtree_write_dot(const mtree_t *m, const topo_t *t, FILE *f);

#endif /* CCS_MTREE_H */
