/*
 * milp_heur.h - the plan the AdapCC-style MILP decides (AdapCC, Sec. IV-D),
 * the GPU overlay it is posed on, the linear cost model shared by the
 * solver and the heuristic, and the heuristic itself (parallel trees,
 * "star of stars": one tree per sub-collective rooted in a different
 * server, aggregating inside each server first).
 *
 * Files: milp_net.c (overlay, plans), milp_cost.c (cost model),
 * milp_heur.c (heuristic), milp_ham.c (Hamiltonian-cycle trees).
 *
 * Nothing here knows GLPK: milp_model.c turns a milp_net_t into a GLPK
 * problem and decodes the solution into a milp_plan_t; algo_milp.c turns a
 * plan into IR steps.  The model is documented variable by variable in
 * docs/milp.md.
 *
 * Ownership: milp_net_build's *out is freed by milp_net_destroy; a plan
 * from milp_plan_create / milp_heur_plan by milp_plan_destroy.  A net
 * borrows nothing (it copies what it needs from the topology).
 */
#ifndef CCS_MILP_HEUR_H
#define CCS_MILP_HEUR_H

#include <stdbool.h>
#include <stdint.h>

#include "ccs.h"
#include "err.h"
#include "sched.h"
#include "topo.h"

#define MILP_MAX_RANKS 64      /* overlay arcs grow as n^2 per sub */
#define MILP_MAX_M 64
#define MILP_MAX_CAND 8        /* candidate piece sizes */
#define MILP_MAX_RELAYS 6      /* alltoall: relay candidates per flow */

/* What the synthesizer asks for: the instance of the model. */
typedef struct milp_spec {
    ccs_coll_t coll;           /* allreduce, reduce, broadcast, alltoall */
    int32_t root;              /* reduce/broadcast root rank; else -1 */
    int32_t m;                 /* parallel sub-collectives M */
    uint32_t nchunks;          /* C: IR chunks of the whole buffer */
    double unit_bytes;         /* bytes of one IR chunk (size / C) */
    int32_t ncand;             /* candidate piece sizes */
    uint32_t cand[MILP_MAX_CAND]; /* in chunks, ascending, >= 1 */
    uint64_t seed;             /* rotates the gateway choice */
} milp_spec_t;

/* The GPU overlay and its costs, precomputed from the topology.
 * Ordered pair (u, v) of ranks: route_* describe topo_route from u's node
 * to v's node as a list of pipes (all links between one ordered node pair
 * form one pipe whose bandwidth is their sum, as the simulator does). */
typedef struct milp_net {
    int32_t n;                 /* ranks */
    bool direct;               /* GPUs forward (ring, torus, mesh, dgx1):
                                  overlay arcs inside a group are the
                                  physical links, so trees follow them */
    int32_t nsrv;              /* GPU groups (servers; GPUs in no server
                                  form one group) */
    int32_t *srv;              /* [n] group of rank */
    int32_t *loc;              /* [n] index of rank inside its group */
    int32_t *srv_size;         /* [nsrv] */
    int32_t *srv_first;        /* [nsrv] ranks of group g: srv_members */
    int32_t *srv_members;      /* [n] ranks grouped by group, rank order */
    double *srv_egress_Bps;    /* [nsrv] bandwidth of pipes leaving it */
    int32_t npipes;
    double *pipe_bw_Bps;       /* [npipes] */
    int32_t *route_off;        /* [n*n + 1] offsets into route_pipe */
    int32_t *route_pipe;       /* pipes of route u->v, path order */
    double *route_alpha_s;     /* [n*n] sum of link alphas of the route */
    int32_t *route_next;       /* [n*n] first GPU rank after u on the
                                  route u->v (v when only switches/NICs
                                  lie between) */
} milp_net_t;

ccs_status_t milp_net_build(const topo_t *t, milp_net_t **out,
                            ccs_err_t *err);
void milp_net_destroy(milp_net_t *net);   /* NULL is a no-op */

/* Gateway of group g in sub-collective m: the one GPU of the group that
 * talks to other groups in that sub (the root itself in its group for a
 * rooted collective).  Different subs use different gateways, so they
 * spread over the GPU-NIC links; it also breaks the symmetry between
 * GPUs of one server, which the solver would otherwise branch on. */
int32_t milp_gateway(const milp_net_t *net, const milp_spec_t *sp, int32_t m,
                     int32_t g);
/* Overlay arc u -> v in sub m: same group (on a direct network: and one
 * link apart), or both the sub's gateways. */
bool milp_arc_allowed(const milp_net_t *net, const milp_spec_t *sp,
                      int32_t m, int32_t u, int32_t v);

/* A decided plan.  Trees (allreduce, reduce, broadcast): sub m reduces
 * towards root[m] along parent[] (broadcast runs the same arcs
 * backwards), on chunks [off_m, off_m + count[m]) where off_m is the sum
 * of the earlier counts, pipelined in pieces of piece[m] chunks.
 * Alltoall: a2a[(s*n + d)*n + w] chunks of the block s -> d go via relay
 * w (w == d: direct); they sum to C / n per flow. */
typedef struct milp_plan {
    ccs_coll_t coll;
    int32_t n;
    int32_t m;
    uint32_t nchunks;
    int32_t *root;             /* [m] */
    int32_t *parent;           /* [m*n], -1 at the root */
    uint32_t *count;           /* [m] chunks, sum = nchunks */
    uint32_t *piece;           /* [m] chunks per piece, >= 1 */
    uint32_t *a2a;             /* alltoall only: [n*n*n]; else NULL */
    double cost_us;            /* objective of the plan in the model */
} milp_plan_t;

ccs_status_t milp_plan_create(ccs_coll_t coll, int32_t n, int32_t m,
                              uint32_t nchunks, milp_plan_t **out,
                              ccs_err_t *err);
void milp_plan_destroy(milp_plan_t *p);   /* NULL is a no-op */

/* Structural check of a decoded plan: every tree spans all ranks and
 * reaches its root without cycles, arcs are allowed overlay arcs, counts
 * sum to C, alltoall counts sum per flow.  The message names sub and
 * rank.  (Flow conservation and aggregation consistency of a tree plan
 * reduce to this: each GPU has one outgoing arc except the root, and the
 * arcs form an in-tree, so every contribution reaches the root once.) */
ccs_status_t milp_plan_check(const milp_net_t *net, const milp_spec_t *sp,
                             const milp_plan_t *p, ccs_err_t *err);

/* ---- The linear cost model (units: microseconds, chunks) ---- */

/* Which directions of a tree the collective uses. */
bool milp_coll_up(ccs_coll_t coll);     /* reduce phase (allreduce, reduce) */
bool milp_coll_down(ccs_coll_t coll);   /* broadcast phase */

/* acc[pipe] += amount for every pipe on the route u -> v (milp_cost.c;
 * the heuristic's load scores use it too). */
void milp_add_route(const milp_net_t *net, double *acc, int32_t u,
                    int32_t v, double amount);

/* Concurrency estimate, one row of [npipes] per candidate piece size k
 * (>= 1): tree arcs (over subs and directions) of plan `ref` whose route
 * crosses the pipe, scaled by min(1, pieces_k / levels), the share of
 * steps in which the heuristic's pipeline is full (with fewer pieces than
 * tree levels, staggered siblings do not overlap).  The model charges a
 * piece on pipe q with W / bw(q): the paper's shared bandwidth 1/beta~
 * (eq. 3), frozen at the heuristic's loads so that the latency terms stay
 * linear.  *out: owned [ncand * npipes] array (free()). */
ccs_status_t milp_concurrency(const milp_net_t *net, const milp_spec_t *sp,
                              const milp_plan_t *ref, double **out,
                              ccs_err_t *err);

/* Per-hop time of a piece of k chunks on route u->v:
 * alpha(u,v) + k * unit * max over its pipes of W / bw. */
double milp_hop_us(const milp_net_t *net, const milp_spec_t *sp,
                   const double *conc, int32_t u, int32_t v, uint32_t k);
/* Time of a piece of k chunks on the slowest pipe: the part of the
 * pipeline fill that the load term L already counts (T ~ L (1 - 1/P) +
 * fill), subtracted once. */
double milp_piece_us(const milp_net_t *net, const milp_spec_t *sp,
                     const double *conc, uint32_t k);
/* Latency charged per extra piece in sub m: the largest route alpha over
 * the sub's allowed arcs. */
double milp_alpha_hat_us(const milp_net_t *net, const milp_spec_t *sp,
                         int32_t m);

/* Objective of a fixed plan in the model (the value the MILP gives the
 * same decisions); also fills per-pipe load times when loads != NULL
 * ([npipes], us). */
double milp_plan_cost(const milp_net_t *net, const milp_spec_t *sp,
                      const double *conc, const milp_plan_t *p,
                      double *loads);

/* ---- The heuristic ---- */

/* AdapCC-style parallel trees: sub m's root is the gateway of the group
 * with the (m mod groups)-th largest egress bandwidth (the collective's
 * root when rooted); each non-root gateway sends to the root.  Inside a
 * group, six shapes are tried: every GPU to the gateway (star), a chain
 * in rank order rotated to start at the gateway, the shortest-path
 * tree (each GPU to the first GPU on its route to the gateway; on direct
 * networks such as rings and tori this follows the links), and k-ary
 * heaps (k = 2, 3, 4) whose inner nodes are the GPUs with the fewest tree
 * arcs in the earlier subs (on one group with a free root, the root is
 * the least loaded GPU too): shallow, load-balanced trees.  Equal split;
 * one piece size for all subs; the shape and piece size with the lowest
 * model cost (each shape with its own concurrency) win.  Alltoall: every
 * flow direct.  *out owned by the caller. */
ccs_status_t milp_heur_plan(const milp_net_t *net, const milp_spec_t *sp,
                            milp_plan_t **out, ccs_err_t *err);

/* Trees built elsewhere (MultiTree's, one per root on direct networks),
 * offered to the heuristic as one more candidate: tree i is rooted at
 * root[i] with parent[i * n + v] (-1 at the root).  Borrowed. */
typedef struct milp_trees {
    int32_t ntrees;
    const int32_t *root;       /* [ntrees] */
    const int32_t *parent;     /* [ntrees * n] */
} milp_trees_t;

/* Trees from two edge-disjoint Hamiltonian cycles of the overlay of sub
 * 0 (both directions of an arc allowed), found by a depth-first search
 * with a step limit (deterministic): per cycle and root, the cycle less
 * the edge opposite the root, a tree of two arms of depth <= n/2.  Each
 * link then carries at most two subs' trees when M / 2 subs use each
 * cycle.  *root ([ntrees]) and *parent ([ntrees * n]) are owned by the
 * caller; *ntrees = 0 (both NULL) when no cycle was found.  On a torus
 * R x C these are the load-balanced alternative to MultiTree's trees
 * (docs/milp.md, "Hamiltonian trees"). */
ccs_status_t milp_ham_trees(const milp_net_t *net, const milp_spec_t *sp,
                            int32_t **root, int32_t **parent,
                            int32_t *ntrees, ccs_err_t *err);

/* The plan on the external trees alone: M distinct trees with the lowest
 * busiest pipe, then the lowest sum of squared pipe times (every subset
 * when there are at most 5000, else picked greedily one sub at a time),
 * or the tree rooted at the collective's root in every sub, with the
 * piece size of least model cost.  *out (owned by the caller) is NULL
 * unless every arc is an overlay arc and the plan costs less than
 * beat_us - 1e-9 (the built-in shapes' cost, from milp_heur_plan;
 * INFINITY: any plan the trees make); also NULL for alltoall and when ext
 * is NULL or empty. */
ccs_status_t milp_heur_plan_trees(const milp_net_t *net,
                                  const milp_spec_t *sp,
                                  const milp_trees_t *ext, double beat_us,
                                  milp_plan_t **out, ccs_err_t *err);

/* ---- IR emission (algo_milp.c) ---- */

/* The schedule of a plan (docs/milp.md, "IR emission"): trees pipelined
 * piece by piece, alltoall in one or two steps.  `root` is the
 * collective's root for reduce/broadcast.  Not verified here (the
 * synthesizer verifies before writing).  *out owned by the caller. */
ccs_status_t milp_emit(const topo_t *t, const milp_plan_t *pl, int32_t root,
                       ccs_sched_t **out, ccs_err_t *err);

#endif /* CCS_MILP_HEUR_H */
