/*
 * match.h - maximum-weight matching in general graphs (Edmonds' blossom
 * algorithm, O(n^3) primal-dual form).
 *
 * igraph 0.10 has weighted matching only for bipartite graphs; StragglAR's
 * rounds for n that is not a power of 2 (paper, Appendix E) need it on
 * general graphs, so it lives here, shared by any algorithm that pairs
 * ranks.  Exposed on the command line as `ccsynth matching`.
 *
 * Semantics: a matching of maximum total weight.  Weights may be negative
 * or zero; such edges are never chosen unless `max_cardinality` asks for
 * the maximum-weight matching among those of maximum cardinality.  Parallel
 * edges are allowed (the heaviest one counts); self-loops are rejected.
 * All arithmetic is exact (64-bit integers).
 */
#ifndef CCS_MATCH_H
#define CCS_MATCH_H

#include <stdbool.h>
#include <stdint.h>

#include "ccs.h"
#include "err.h"

/* Edge weights must lie in [-MATCH_WEIGHT_MAX, MATCH_WEIGHT_MAX] so that
 * the dual variables (sums of a few weights, doubled) cannot overflow. */
#define MATCH_WEIGHT_MAX (INT64_C(1) << 40)

typedef struct match_edge {
    int32_t u, v;   /* vertices in [0, n), u != v */
    int64_t w;      /* weight */
} match_edge_t;

/* Maximum-weight matching of the graph on vertices [0, n) with `nedges`
 * edges.  On success mate[v] is v's partner or -1 (mate has n entries,
 * owned by the caller).  CCS_ERR_INVALID for a bad vertex, self-loop or
 * weight (the message names the edge index), CCS_ERR_NOMEM. */
ccs_status_t match_max_weight(int32_t n, const match_edge_t *edges,
                              int32_t nedges, bool max_cardinality,
                              int32_t *mate, ccs_err_t *err);

/* Total weight of a matching given as mate[] over the edges (the heaviest
 * edge between each matched pair). */
int64_t match_weight(int32_t n, const match_edge_t *edges, int32_t nedges,
                     const int32_t *mate);

#endif /* CCS_MATCH_H */
