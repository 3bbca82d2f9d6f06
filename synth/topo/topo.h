/*
 * topo.h - cluster topology model.
 *
 * A topology is a directed multigraph of nodes (GPUs, NICs, switches) and
 * links.  Each link has a latency alpha (seconds) and a bandwidth (bytes per
 * second; beta = 1 / bandwidth).  Parallel links between the same two nodes
 * are allowed: a link k times wider may be modelled as k links.  A
 * bidirectional cable is two links, one per direction.
 *
 * GPUs are the ranks of a collective: rank r is node rank_node[r].  Ranks
 * are numbered server by server (server 0's GPUs first), in file order for
 * YAML topologies.
 *
 * The graph is held in igraph inside topo.c (edge id == link index, weights
 * in vectors indexed by edge id); the rest of ccsynth sees only the plain
 * arrays below, which are read-only after topo_load.
 *
 * Ownership: topo_load's *out is owned by the caller, freed by topo_destroy.
 */
#ifndef CCS_TOPO_H
#define CCS_TOPO_H

#include <stdint.h>
#include <stdio.h>

#include "ccs.h"
#include "err.h"

typedef enum {
    TOPO_NODE_GPU = 0,
    TOPO_NODE_NIC = 1,
    TOPO_NODE_SWITCH = 2,
    TOPO_NODE_KIND_COUNT
} topo_node_kind_t;

const char *topo_node_kind_str(topo_node_kind_t kind); /* "gpu", ... */

#define TOPO_NAME_MAX 48

typedef struct topo_node {
    topo_node_kind_t kind;
    int32_t server;              /* server index; -1 when in no server */
    int32_t rank;                /* GPU rank; -1 for NICs and switches */
    /* Switches only: the switch reduces and multicasts in the fabric
     * (NVLink SHARP, "NVLS", on H100 NVSwitch).  Not part of the
     * fingerprint: it changes which algorithms pay off, not the graph or
     * its routes, and a schedule made for it still runs (point to point)
     * where the switch cannot reduce. */
    uint8_t nvls;
    char name[TOPO_NAME_MAX];    /* unique, e.g. "gpu3", "s1.nic0", "sw0" */
} topo_node_t;

typedef struct topo_link {
    int32_t src;                 /* node id */
    int32_t dst;                 /* node id */
    double alpha_s;              /* latency, seconds */
    double bw_Bps;               /* bandwidth, bytes per second */
} topo_link_t;

struct topo_graph;               /* private to topo.c (igraph) */

typedef struct topo {
    char name[64];               /* spec or file name it was loaded from */
    int32_t nnodes;
    int32_t nlinks;
    int32_t ngpus;               /* == number of ranks */
    int32_t nservers;            /* >= 1 */
    topo_node_t *nodes;          /* [nnodes] */
    topo_link_t *links;          /* [nlinks], link id == igraph edge id */
    int32_t *rank_node;          /* [ngpus] node id of rank r */
    /* CSR adjacency in link-id order: links leaving node v are
     * out_links[out_start[v] .. out_start[v+1]), entering likewise. */
    int32_t *out_start;          /* [nnodes + 1] */
    int32_t *out_links;          /* [nlinks] */
    int32_t *in_start;           /* [nnodes + 1] */
    int32_t *in_links;           /* [nlinks] */
    uint64_t fingerprint;        /* FNV-1a of the canonical description */
    struct topo_graph *graph;    /* private */
} topo_t;

/* Overrides applied after loading: a value <= 0 keeps the file's. */
typedef struct topo_opts {
    double alpha_s;              /* set every link's alpha */
    double bw_Bps;               /* set every link's bandwidth */
} topo_opts_t;

/* Load a topology from a built-in spec ("ring:8", "switch:16",
 * "torus:4x4", "mesh:8x8", "fattree:...", "dgx-h100", "dgx-a100", "dgx1",
 * "cluster:...") or a YAML file (any argument naming an existing file, or
 * ending in .yaml/.yml).  opts may be NULL. */
ccs_status_t topo_load(const char *spec, const topo_opts_t *opts,
                       topo_t **out, ccs_err_t *err);
void topo_destroy(topo_t *t);    /* NULL is a no-op */

/* Print the built-in spec forms, one per line with a description. */
void topo_list_builtins(FILE *f);

/* Shortest route from node src to node dst, counted in hops, ties broken
 * deterministically (documented in topo.c).  Writes up to `cap` link ids
 * in path order to links[] and the hop count to *nhops.  src == dst gives
 * 0 hops.  CCS_ERR_TOPOLOGY when dst is unreachable. */
ccs_status_t topo_route(const topo_t *t, int32_t src, int32_t dst,
                        int32_t *links, int32_t cap, int32_t *nhops,
                        ccs_err_t *err);

/* Link ids from node u to node v (parallel links), in id order: writes up
 * to cap ids, returns the total count. */
int32_t topo_links_between(const topo_t *t, int32_t u, int32_t v,
                           int32_t *ids, int32_t cap);

/* Human summary: nodes by kind, links, degrees, diameter, bandwidths.
 * The diameter and GPU route statistics take one BFS per source; beyond
 * TOPO_SUMMARY_BUDGET node+link visits they are computed from evenly
 * spaced sources and labelled "sampled" (the diameter is then a lower
 * bound), unless `exact` asks for all pairs.  topo_print_summary is
 * topo_print_summary_opt with exact = 0. */
#define TOPO_SUMMARY_BUDGET ((int64_t)1 << 24)
ccs_status_t topo_print_summary(const topo_t *t, FILE *f, ccs_err_t *err);
ccs_status_t topo_print_summary_opt(const topo_t *t, FILE *f, int exact,
                                    ccs_err_t *err);
/* Graphviz DOT of the topology. */
ccs_status_t topo_write_dot(const topo_t *t, FILE *f, ccs_err_t *err);

/* True when every GPU reaches every other GPU through one switch node
 * with uniform links (switch:N, dgx-*): closed forms apply there. */
int topo_is_uniform_switch(const topo_t *t);

/* Added by the topology module.  Whether routes may pass *through* node
 * `node` (switches and NICs: always; GPUs: only on direct networks such as
 * ring, torus, mesh and dgx1, where the GPUs are the routers). */
int topo_node_forwards(const topo_t *t, int32_t node);
/* True when the topology is a direct network (its GPUs forward). */
int topo_gpus_forward(const topo_t *t);

#endif /* CCS_TOPO_H */
