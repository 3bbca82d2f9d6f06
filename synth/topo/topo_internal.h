/*
 * topo_internal.h - the topology builder shared by topo_build.c
 * (finishing, igraph), topo_builtin.c (built-in specs) and topo_yaml.c
 * (YAML files), and the few functions the topo_*.c files share.
 *
 * Both loaders describe a topology through the same few calls, in the same
 * order, so that a YAML file written like a built-in yields the very same
 * node ids, link ids and fingerprint.  Node ids are creation order; link ids
 * are creation order; a bidirectional "cable" of count k expands to
 * u->v, v->u repeated k times.
 *
 * Not part of the public interface: nothing outside synth/topo*.c includes
 * this file.
 */
#ifndef CCS_TOPO_INTERNAL_H
#define CCS_TOPO_INTERNAL_H

#include <igraph.h>
#include <stdint.h>

#include "topo.h"

#define TOPO_MAX_NODES (1 << 20)
#define TOPO_MAX_LINKS (1 << 22)
#define TOPO_MAX_GPUS 65536
#define TOPO_MAX_PARALLEL 1024      /* parallel links in one cable */

/* Where something was defined in a YAML file (1-based); 0 = unknown. */
typedef struct tb_loc {
    int32_t line;
    int32_t col;
} tb_loc_t;

typedef struct tb_name_ent {
    const char *name;        /* points into topo_builder.nodes[id].name */
    int32_t id;
} tb_name_ent_t;

typedef struct topo_builder {
    char name[64];
    const char *file;        /* YAML path for messages, NULL for built-ins */
    int gpus_forward;        /* default "forwards" of GPU nodes */
    /* nodes: each array has cap_nodes entries; ownership: this builder */
    topo_node_t *nodes;
    int8_t *fwd;             /* -1: default for the kind, 0/1: explicit */
    tb_loc_t *node_loc;
    int32_t nnodes;
    int32_t cap_nodes;
    /* links: each array has cap_links entries; ownership: this builder */
    topo_link_t *links;
    tb_loc_t *link_loc;
    int32_t nlinks;
    int32_t cap_links;
    /* name index for tb_find, sorted by name, built by tb_index */
    struct tb_name_ent *by_name;
    int32_t nindexed;
} topo_builder_t;

/* A server in compact form: GPUs, optionally a switch or a full mesh
 * among them, optionally NICs. */
enum { TB_NIC_NONE = 0, TB_NIC_SERVER = 1, TB_NIC_GPU = 2 };

typedef struct tb_server {
    char name[TOPO_NAME_MAX];  /* node-name prefix, e.g. "s0" */
    int32_t ngpus;
    int has_switch;            /* GPUs <-> "<name>.sw" */
    int has_mesh;              /* every GPU pair directly linked */
    int switch_nvls;           /* the switch reduces (topo_node_t.nvls) */
    double intra_alpha_s;      /* per GPU-switch or GPU-GPU link */
    double intra_bw_Bps;
    int nic_mode;              /* TB_NIC_* */
    double attach_alpha_s;     /* GPU/switch <-> NIC link */
    double nic_alpha_s;        /* NIC <-> `to` link */
    double nic_bw_Bps;         /* both NIC links */
    tb_loc_t loc;
    /* filled by tb_server_nodes */
    int32_t server;            /* server index */
    int32_t first_gpu;         /* node id of GPU 0 */
    int32_t sw;                /* switch node id or -1 */
    int32_t first_nic;         /* node id of the (first) NIC or -1 */
} tb_server_t;

void tb_init(topo_builder_t *b, const char *name, const char *file);
void tb_free(topo_builder_t *b);

/* Add a node.  fwd: -1 default (GPUs: b->gpus_forward; others: yes). */
ccs_status_t tb_add_node(topo_builder_t *b, const char *name,
                         topo_node_kind_t kind, int32_t server, int fwd,
                         tb_loc_t loc, int32_t *id, ccs_err_t *err);
/* Add `count` parallel links u->v (and v->u unless directed).  Rejects
 * self-loops, negative/non-finite latency, bandwidth <= 0. */
ccs_status_t tb_add_cable(topo_builder_t *b, int32_t u, int32_t v,
                          double alpha_s, double bw_Bps, int32_t count,
                          int directed, tb_loc_t loc, ccs_err_t *err);
/* Create the nodes of a compact server (GPUs, switch, NICs) with server
 * index `server`; then, later, its links (NICs go to node `to`, -1: none). */
ccs_status_t tb_server_nodes(topo_builder_t *b, tb_server_t *s,
                             int32_t server, ccs_err_t *err);
ccs_status_t tb_server_links(topo_builder_t *b, const tb_server_t *s,
                             int32_t to, ccs_err_t *err);

/* Sort node names for tb_find; call after the last tb_add_node.  Fails on
 * a duplicate name. */
ccs_status_t tb_index(topo_builder_t *b, ccs_err_t *err);
int32_t tb_find(const topo_builder_t *b, const char *name);

/* Validate, apply overrides, number ranks, build CSR, igraph and the
 * fingerprint.  The builder stays owned by the caller. */
ccs_status_t tb_finish(topo_builder_t *b, const topo_opts_t *opts,
                       topo_t **out, ccs_err_t *err);

/* Loaders (fill a builder that the caller initialised). */
ccs_status_t topo_yaml_build(const char *path, topo_builder_t *b,
                             ccs_err_t *err);
ccs_status_t topo_builtin_build(const char *spec, topo_builder_t *b,
                                ccs_err_t *err);

/* ---- shared by topo.c, topo_build.c and topo_print.c ---- */

/* The igraph side of a finished topology (topo_t.graph); owned by it. */
struct topo_graph {
    igraph_t g;                 /* directed multigraph, edge id == link id */
    igraph_vector_t alpha_s;    /* [nlinks] latency by edge id */
    igraph_vector_t bw_Bps;     /* [nlinks] bandwidth by edge id */
    uint8_t *fwd;               /* [nnodes] 1: routes may pass through */
    int gpus_forward;           /* the topology's default for GPUs */
    int have_g, have_alpha, have_bw;
};

/* An igraph failure as a status, with igraph's message. */
ccs_status_t topo_ig_fail(ccs_err_t *err, igraph_error_t code,
                          const char *what);

/* parent[v]: link that discovered v, -2 for src, -1 unreached.  Stops as
 * soon as `stop` (>= 0) is discovered.  Returns the number of nodes
 * reached.  queue and parent have nnodes entries.  (Used by the
 * summary and the finishing checks; routes use topo_dist_to.) */
int32_t topo_bfs(const topo_t *t, const uint8_t *fwd, int32_t src,
                 int32_t stop, int32_t *parent, int32_t *queue);

#endif /* CCS_TOPO_INTERNAL_H */
