/*
 * topo_build.c - building a topology: the builder both loaders describe
 * a topology through (nodes, cables, compact servers, the name index),
 * and finishing it (validation, overrides, rank numbering, CSR arrays,
 * the igraph graph and the fingerprint).  The model it builds, and the
 * routing rules: topo.c.
 *
 * Fingerprint.  FNV-1a 64 over a canonical text (see topo_fingerprint):
 * only integers, so it is the same on every platform; node names and the
 * topology's own name are left out, so a YAML file and the built-in it
 * describes share a fingerprint.
 */
#include <igraph.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "topo.h"
#include "topo_internal.h"

/* ---- error helpers ---- */

/* Set a message located in the builder's source: "file:line:col: ...",
 * "file: ..." without a location, "spec: ..." for built-ins. */
static ccs_status_t tb_err(const topo_builder_t *b, tb_loc_t loc,
                           ccs_err_t *err, ccs_status_t st,
                           const char *fmt, ...) CCS_PRINTF(5, 6);
static ccs_status_t tb_err(const topo_builder_t *b, tb_loc_t loc,
                           ccs_err_t *err, ccs_status_t st,
                           const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    ccs_err_vset(err, st, fmt, ap);
    va_end(ap);
    if (b->file != NULL && loc.line > 0)
        ccs_err_prefix(err, "%s:%d:%d: ", b->file, (int)loc.line,
                       (int)loc.col);
    else if (b->file != NULL)
        ccs_err_prefix(err, "%s: ", b->file);
    else
        ccs_err_prefix(err, "%s: ", b->name);
    return st;
}

ccs_status_t topo_ig_fail(ccs_err_t *err, igraph_error_t code,
                          const char *what)
{
    return ccs_err_set(err,
                       code == IGRAPH_ENOMEM ? CCS_ERR_NOMEM
                                             : CCS_ERR_INTERNAL,
                       "igraph %s failed: %s", what, igraph_strerror(code));
}

#define IG_CHECK(call, what)                                               \
    do {                                                                   \
        igraph_error_t ig_ = (call);                                       \
        if (ig_ != IGRAPH_SUCCESS) {                                       \
            st = topo_ig_fail(err, ig_, (what));                           \
            goto cleanup;                                                  \
        }                                                                  \
    } while (0)

/* ---- builder ---- */

void tb_init(topo_builder_t *b, const char *name, const char *file)
{
    memset(b, 0, sizeof(*b));
    snprintf(b->name, sizeof(b->name), "%s", name != NULL ? name : "");
    b->file = file;
}

void tb_free(topo_builder_t *b)
{
    if (b == NULL)
        return;
    free(b->nodes);
    free(b->fwd);
    free(b->node_loc);
    free(b->links);
    free(b->link_loc);
    free(b->by_name);
    memset(b, 0, sizeof(*b));
}

static ccs_status_t tb_grow_nodes(topo_builder_t *b, ccs_err_t *err)
{
    int32_t cap = b->cap_nodes ? b->cap_nodes * 2 : 16;
    topo_node_t *n;
    int8_t *f;
    tb_loc_t *l;

    if (b->nnodes >= TOPO_MAX_NODES)
        return tb_err(b, (tb_loc_t){ 0, 0 }, err, CCS_ERR_TOPOLOGY,
                      "more than %d nodes", TOPO_MAX_NODES);
    /* Each realloc keeps the old block valid on failure; the capacity is
     * raised only once all three have grown. */
    n = realloc(b->nodes, (size_t)cap * sizeof(*n));
    if (n == NULL)
        return ccs_err_set(err, CCS_ERR_NOMEM, "out of memory (nodes)");
    b->nodes = n;
    f = realloc(b->fwd, (size_t)cap * sizeof(*f));
    if (f == NULL)
        return ccs_err_set(err, CCS_ERR_NOMEM, "out of memory (nodes)");
    b->fwd = f;
    l = realloc(b->node_loc, (size_t)cap * sizeof(*l));
    if (l == NULL)
        return ccs_err_set(err, CCS_ERR_NOMEM, "out of memory (nodes)");
    b->node_loc = l;
    b->cap_nodes = cap;
    return CCS_OK;
}

static ccs_status_t tb_grow_links(topo_builder_t *b, ccs_err_t *err)
{
    int32_t cap = b->cap_links ? b->cap_links * 2 : 32;
    topo_link_t *k;
    tb_loc_t *l;

    if (b->nlinks >= TOPO_MAX_LINKS)
        return tb_err(b, (tb_loc_t){ 0, 0 }, err, CCS_ERR_TOPOLOGY,
                      "more than %d links", TOPO_MAX_LINKS);
    k = realloc(b->links, (size_t)cap * sizeof(*k));
    if (k == NULL)
        return ccs_err_set(err, CCS_ERR_NOMEM, "out of memory (links)");
    b->links = k;
    l = realloc(b->link_loc, (size_t)cap * sizeof(*l));
    if (l == NULL)
        return ccs_err_set(err, CCS_ERR_NOMEM, "out of memory (links)");
    b->link_loc = l;
    b->cap_links = cap;
    return CCS_OK;
}

ccs_status_t tb_add_node(topo_builder_t *b, const char *name,
                         topo_node_kind_t kind, int32_t server, int fwd,
                         tb_loc_t loc, int32_t *id, ccs_err_t *err)
{
    ccs_status_t st;
    topo_node_t *n;

    if (name == NULL || name[0] == '\0')
        return tb_err(b, loc, err, CCS_ERR_TOPOLOGY, "empty node name");
    if (strlen(name) >= TOPO_NAME_MAX)
        return tb_err(b, loc, err, CCS_ERR_TOPOLOGY,
                      "node name '%s' is longer than %d characters", name,
                      TOPO_NAME_MAX - 1);
    for (const char *c = name; *c; c++) {
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
              (*c >= '0' && *c <= '9') || *c == '_' || *c == '.' ||
              *c == '-'))
            return tb_err(b, loc, err, CCS_ERR_TOPOLOGY,
                          "node name '%s' may only use letters, digits, "
                          "'_', '.' and '-'", name);
    }
    if ((int)kind < 0 || kind >= TOPO_NODE_KIND_COUNT)
        return tb_err(b, loc, err, CCS_ERR_TOPOLOGY, "bad node kind %d",
                      (int)kind);
    if (server < -1)
        return tb_err(b, loc, err, CCS_ERR_TOPOLOGY,
                      "negative server index %d", (int)server);
    if (kind == TOPO_NODE_GPU && server < 0)
        server = 0;
    if (b->nnodes == b->cap_nodes) {
        st = tb_grow_nodes(b, err);
        if (st != CCS_OK)
            return st;
    }
    n = &b->nodes[b->nnodes];
    memset(n, 0, sizeof(*n));
    n->kind = kind;
    n->server = server;
    n->rank = -1;
    snprintf(n->name, sizeof(n->name), "%s", name);
    b->fwd[b->nnodes] = (int8_t)(fwd < 0 ? -1 : fwd != 0);
    b->node_loc[b->nnodes] = loc;
    if (id != NULL)
        *id = b->nnodes;
    b->nnodes++;
    return CCS_OK;
}

static ccs_status_t tb_add_link(topo_builder_t *b, int32_t u, int32_t v,
                                double alpha_s, double bw_Bps, tb_loc_t loc,
                                ccs_err_t *err)
{
    ccs_status_t st;

    if (b->nlinks == b->cap_links) {
        st = tb_grow_links(b, err);
        if (st != CCS_OK)
            return st;
    }
    b->links[b->nlinks] = (topo_link_t){ u, v, alpha_s, bw_Bps };
    b->link_loc[b->nlinks] = loc;
    b->nlinks++;
    return CCS_OK;
}

ccs_status_t tb_add_cable(topo_builder_t *b, int32_t u, int32_t v,
                          double alpha_s, double bw_Bps, int32_t count,
                          int directed, tb_loc_t loc, ccs_err_t *err)
{
    ccs_status_t st;

    if (u < 0 || u >= b->nnodes || v < 0 || v >= b->nnodes)
        return tb_err(b, loc, err, CCS_ERR_INTERNAL,
                      "link between unknown node ids %d and %d", (int)u,
                      (int)v);
    if (u == v)
        return tb_err(b, loc, err, CCS_ERR_TOPOLOGY,
                      "self loop: link from '%s' to itself",
                      b->nodes[u].name);
    if (!isfinite(alpha_s) || alpha_s < 0)
        return tb_err(b, loc, err, CCS_ERR_TOPOLOGY,
                      "negative latency %g s on link %s-%s", alpha_s,
                      b->nodes[u].name, b->nodes[v].name);
    if (!isfinite(bw_Bps) || bw_Bps <= 0)
        return tb_err(b, loc, err, CCS_ERR_TOPOLOGY,
                      "bandwidth %g B/s on link %s-%s must be positive",
                      bw_Bps, b->nodes[u].name, b->nodes[v].name);
    if (count < 1 || count > TOPO_MAX_PARALLEL)
        return tb_err(b, loc, err, CCS_ERR_TOPOLOGY,
                      "link count %d is outside 1..%d", (int)count,
                      TOPO_MAX_PARALLEL);
    for (int32_t k = 0; k < count; k++) {
        st = tb_add_link(b, u, v, alpha_s, bw_Bps, loc, err);
        if (st == CCS_OK && !directed)
            st = tb_add_link(b, v, u, alpha_s, bw_Bps, loc, err);
        if (st != CCS_OK)
            return st;
    }
    return CCS_OK;
}

ccs_status_t tb_server_nodes(topo_builder_t *b, tb_server_t *s,
                             int32_t server, ccs_err_t *err)
{
    char name[TOPO_NAME_MAX + 32];
    ccs_status_t st;
    int32_t id;

    if (s->ngpus < 1)
        return tb_err(b, s->loc, err, CCS_ERR_TOPOLOGY,
                      "server '%s' has no GPU", s->name);
    if (s->has_switch && s->has_mesh)
        return tb_err(b, s->loc, err, CCS_ERR_TOPOLOGY,
                      "server '%s' has both 'switch' and 'mesh'", s->name);
    s->server = server;
    s->sw = -1;
    s->first_nic = -1;
    for (int32_t i = 0; i < s->ngpus; i++) {
        snprintf(name, sizeof(name), "%s.gpu%d", s->name, (int)i);
        st = tb_add_node(b, name, TOPO_NODE_GPU, server, -1, s->loc, &id,
                         err);
        if (st != CCS_OK)
            return st;
        if (i == 0)
            s->first_gpu = id;
    }
    if (s->has_switch) {
        snprintf(name, sizeof(name), "%s.sw", s->name);
        st = tb_add_node(b, name, TOPO_NODE_SWITCH, server, -1, s->loc,
                         &s->sw, err);
        if (st != CCS_OK)
            return st;
        b->nodes[s->sw].nvls = s->switch_nvls ? 1 : 0;
    }
    if (s->nic_mode == TB_NIC_SERVER) {
        snprintf(name, sizeof(name), "%s.nic", s->name);
        st = tb_add_node(b, name, TOPO_NODE_NIC, server, -1, s->loc,
                         &s->first_nic, err);
        if (st != CCS_OK)
            return st;
    } else if (s->nic_mode == TB_NIC_GPU) {
        for (int32_t i = 0; i < s->ngpus; i++) {
            snprintf(name, sizeof(name), "%s.nic%d", s->name, (int)i);
            st = tb_add_node(b, name, TOPO_NODE_NIC, server, -1, s->loc,
                             &id, err);
            if (st != CCS_OK)
                return st;
            if (i == 0)
                s->first_nic = id;
        }
    }
    return CCS_OK;
}

ccs_status_t tb_server_links(topo_builder_t *b, const tb_server_t *s,
                             int32_t to, ccs_err_t *err)
{
    ccs_status_t st = CCS_OK;
    int32_t g0 = s->first_gpu, n = s->ngpus;

    /* Inside the server: a star on the switch, or a full mesh. */
    for (int32_t i = 0; i < n && st == CCS_OK; i++) {
        if (s->has_switch)
            st = tb_add_cable(b, g0 + i, s->sw, s->intra_alpha_s,
                              s->intra_bw_Bps, 1, 0, s->loc, err);
        else if (s->has_mesh)
            for (int32_t j = i + 1; j < n && st == CCS_OK; j++)
                st = tb_add_cable(b, g0 + i, g0 + j, s->intra_alpha_s,
                                  s->intra_bw_Bps, 1, 0, s->loc, err);
    }
    if (st != CCS_OK)
        return st;
    if (s->nic_mode == TB_NIC_SERVER) {
        /* The NIC hangs off the switch, or off every GPU without one. */
        if (s->has_switch)
            st = tb_add_cable(b, s->sw, s->first_nic, s->attach_alpha_s,
                              s->nic_bw_Bps, 1, 0, s->loc, err);
        for (int32_t i = 0; !s->has_switch && i < n && st == CCS_OK; i++)
            st = tb_add_cable(b, g0 + i, s->first_nic, s->attach_alpha_s,
                              s->nic_bw_Bps, 1, 0, s->loc, err);
        if (st == CCS_OK && to >= 0)
            st = tb_add_cable(b, s->first_nic, to, s->nic_alpha_s,
                              s->nic_bw_Bps, 1, 0, s->loc, err);
    } else if (s->nic_mode == TB_NIC_GPU) {
        for (int32_t i = 0; i < n && st == CCS_OK; i++) {
            st = tb_add_cable(b, g0 + i, s->first_nic + i,
                              s->attach_alpha_s, s->nic_bw_Bps, 1, 0,
                              s->loc, err);
            if (st == CCS_OK && to >= 0)
                st = tb_add_cable(b, s->first_nic + i, to, s->nic_alpha_s,
                                  s->nic_bw_Bps, 1, 0, s->loc, err);
        }
    }
    return st;
}

static int tb_name_cmp(const void *x, const void *y)
{
    const tb_name_ent_t *a = x, *b = y;
    int c = strcmp(a->name, b->name);

    if (c != 0)
        return c;
    return (a->id > b->id) - (a->id < b->id);
}

ccs_status_t tb_index(topo_builder_t *b, ccs_err_t *err)
{
    tb_name_ent_t *e;

    free(b->by_name);
    b->by_name = NULL;
    b->nindexed = 0;
    if (b->nnodes == 0)
        return CCS_OK;
    /* ownership: the builder (freed by tb_free or the next tb_index) */
    e = malloc((size_t)b->nnodes * sizeof(*e));
    if (e == NULL)
        return ccs_err_set(err, CCS_ERR_NOMEM, "out of memory (names)");
    for (int32_t i = 0; i < b->nnodes; i++)
        e[i] = (tb_name_ent_t){ b->nodes[i].name, i };
    qsort(e, (size_t)b->nnodes, sizeof(*e), tb_name_cmp);
    b->by_name = e;
    b->nindexed = b->nnodes;
    for (int32_t i = 1; i < b->nnodes; i++) {
        if (strcmp(e[i - 1].name, e[i].name) == 0) {
            int32_t first = e[i - 1].id, dup = e[i].id;
            tb_loc_t fl = b->node_loc[first];

            if (b->file != NULL && fl.line > 0)
                return tb_err(b, b->node_loc[dup], err, CCS_ERR_TOPOLOGY,
                              "duplicate node name '%s' (first defined at "
                              "%d:%d)", e[i].name, (int)fl.line,
                              (int)fl.col);
            return tb_err(b, b->node_loc[dup], err, CCS_ERR_TOPOLOGY,
                          "duplicate node name '%s'", e[i].name);
        }
    }
    return CCS_OK;
}

int32_t tb_find(const topo_builder_t *b, const char *name)
{
    int32_t lo = 0, hi = b->nindexed - 1;

    while (lo <= hi) {
        int32_t mid = lo + (hi - lo) / 2;
        int c = strcmp(b->by_name[mid].name, name);

        if (c == 0)
            return b->by_name[mid].id;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return -1;
}

/* ---- fingerprint ---- */

typedef struct {
    uint64_t h;
} fnv_t;

static void fnv_text(fnv_t *f, const char *fmt, ...) CCS_PRINTF(2, 3);
static void fnv_text(fnv_t *f, const char *fmt, ...)
{
    char buf[160];
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    for (int i = 0; i < n && i < (int)sizeof(buf) - 1; i++) {
        f->h ^= (uint8_t)buf[i];
        f->h *= UINT64_C(0x100000001b3);
    }
}

/* Canonical text (documented in docs/topology.md):
 *   "ccsynth-topo 1\n"
 *   "nodes N links L\n"
 *   per node:  "n ID KIND SERVER RANK FORWARDS\n"
 *   per link:  "l ID SRC DST ALPHA_PS BW_BPS\n"
 * with alpha rounded to whole picoseconds and bandwidth to whole bytes/s,
 * so the text holds only integers and decimal formatting of doubles never
 * matters. */
static uint64_t topo_fingerprint(const topo_t *t)
{
    fnv_t f = { UINT64_C(0xcbf29ce484222325) };

    fnv_text(&f, "ccsynth-topo 1\n");
    fnv_text(&f, "nodes %d links %d\n", (int)t->nnodes, (int)t->nlinks);
    for (int32_t v = 0; v < t->nnodes; v++)
        fnv_text(&f, "n %d %s %d %d %d\n", (int)v,
                 topo_node_kind_str(t->nodes[v].kind),
                 (int)t->nodes[v].server, (int)t->nodes[v].rank,
                 (int)t->graph->fwd[v]);
    for (int32_t l = 0; l < t->nlinks; l++)
        fnv_text(&f, "l %d %d %d %lld %lld\n", (int)l, (int)t->links[l].src,
                 (int)t->links[l].dst, llround(t->links[l].alpha_s * 1e12),
                 llround(t->links[l].bw_Bps));
    return f.h;
}

/* ---- finishing: validation, arrays, igraph ---- */

void topo_destroy(topo_t *t)
{
    if (t == NULL)
        return;
    if (t->graph != NULL) {
        if (t->graph->have_g)
            igraph_destroy(&t->graph->g);
        if (t->graph->have_alpha)
            igraph_vector_destroy(&t->graph->alpha_s);
        if (t->graph->have_bw)
            igraph_vector_destroy(&t->graph->bw_Bps);
        free(t->graph->fwd);
        free(t->graph);
    }
    free(t->nodes);
    free(t->links);
    free(t->rank_node);
    free(t->out_start);
    free(t->out_links);
    free(t->in_start);
    free(t->in_links);
    free(t);
}

static void csr_build(int32_t nnodes, int32_t nlinks, const topo_link_t *lk,
                      int use_src, int32_t *start, int32_t *ids)
{
    for (int32_t v = 0; v <= nnodes; v++)
        start[v] = 0;
    for (int32_t l = 0; l < nlinks; l++)
        start[(use_src ? lk[l].src : lk[l].dst) + 1]++;
    for (int32_t v = 0; v < nnodes; v++)
        start[v + 1] += start[v];
    /* Filled in link-id order, so each node's slice is sorted by id;
     * start[] is shifted by one while filling and restored after. */
    for (int32_t l = 0; l < nlinks; l++) {
        int32_t v = use_src ? lk[l].src : lk[l].dst;
        ids[start[v]++] = l;
    }
    for (int32_t v = nnodes; v > 0; v--)
        start[v] = start[v - 1];
    start[0] = 0;
}

/* Every GPU must reach every other GPU through forwarding nodes. */
static ccs_status_t check_gpus_connected(const topo_builder_t *b,
                                         const topo_t *t, ccs_err_t *err)
{
    ccs_status_t st = CCS_OK;
    int32_t *parent = NULL, *queue = NULL;
    uint8_t *all = NULL;

    if (t->ngpus < 2)
        return CCS_OK;
    /* ownership: all three local, freed at cleanup */
    parent = malloc((size_t)t->nnodes * sizeof(*parent));
    queue = malloc((size_t)t->nnodes * sizeof(*queue));
    all = malloc((size_t)t->nnodes);
    if (parent == NULL || queue == NULL || all == NULL) {
        st = ccs_err_set(err, CCS_ERR_NOMEM, "out of memory (connectivity)");
        goto cleanup;
    }
    /* Through a hub that forwards, reachability is transitive: when
     * every GPU reaches the hub and the hub reaches every GPU (interior
     * nodes forwarding both ways), every pair is connected through it;
     * two BFS instead of one per GPU, which at 65536 GPUs is the
     * difference between milliseconds and minutes.  Candidate hubs:
     * rank 0's GPU where GPUs forward, the forwarding node of highest
     * degree (a network's core switch), the first forwarding node rank 0
     * links to (its switch).  When none serves, the per-GPU search
     * decides, and names the pair that is cut. */
    for (int c = 0; c < 3; c++) {
        int32_t hub = -1, src = t->rank_node[0], head = 0, tail = 0, ok = 1;
        const uint8_t *fwd = t->graph->fwd;

        if (c == 0 && fwd[src])
            hub = src;
        for (int32_t v = 0, best = -1; c == 1 && v < t->nnodes; v++) {
            int32_t deg = t->out_start[v + 1] - t->out_start[v];

            if (fwd[v] && deg > best) {
                best = deg;
                hub = v;
            }
        }
        for (int32_t k = t->out_start[src]; c == 2 && hub < 0 &&
             k < t->out_start[src + 1]; k++)
            if (fwd[t->links[t->out_links[k]].dst])
                hub = t->links[t->out_links[k]].dst;
        if (hub < 0)
            continue;
        topo_bfs(t, fwd, hub, -1, parent, queue);
        for (int32_t q = 0; q < t->ngpus; q++)
            ok &= parent[t->rank_node[q]] != -1 || t->rank_node[q] == hub;
        /* reverse BFS: all[u] when u reaches the hub; only a node that
         * forwards (or the hub) passes its label on */
        memset(all, 0, (size_t)t->nnodes);
        all[hub] = 1;
        queue[tail++] = hub;
        while (ok && head < tail) {
            int32_t v = queue[head++];

            if (v != hub && !fwd[v])
                continue;
            for (int32_t k = t->in_start[v]; k < t->in_start[v + 1]; k++) {
                int32_t u = t->links[t->in_links[k]].src;

                if (!all[u]) {
                    all[u] = 1;
                    queue[tail++] = u;
                }
            }
        }
        for (int32_t q = 0; ok && q < t->ngpus; q++)
            ok &= all[t->rank_node[q]];
        if (ok)
            goto cleanup;
    }
    for (int32_t r = 0; r < t->ngpus && st == CCS_OK; r++) {
        int32_t src = t->rank_node[r];

        topo_bfs(t, t->graph->fwd, src, -1, parent, queue);
        for (int32_t q = 0; q < t->ngpus; q++) {
            int32_t dst = t->rank_node[q];
            const char *hint = "";

            if (parent[dst] != -1)
                continue;
            /* Say so when only the no-forwarding rule cuts them apart. */
            memset(all, 1, (size_t)t->nnodes);
            topo_bfs(t, all, src, dst, parent, queue);
            if (parent[dst] != -1)
                hint = " (GPUs do not forward traffic in this topology; "
                       "set 'gpus_forward: true' for a direct network)";
            st = tb_err(b, b->node_loc[dst], err, CCS_ERR_TOPOLOGY,
                        "disconnected: GPU '%s' cannot be reached from "
                        "GPU '%s'%s", t->nodes[dst].name,
                        t->nodes[src].name, hint);
            break;
        }
    }
cleanup:
    free(parent);
    free(queue);
    free(all);
    return st;
}

ccs_status_t tb_finish(topo_builder_t *b, const topo_opts_t *opts,
                       topo_t **out, ccs_err_t *err)
{
    ccs_status_t st = CCS_OK;
    topo_t *t = NULL;
    struct topo_graph *g;
    igraph_vector_int_t edges, memb;
    int have_edges = 0, have_memb = 0;
    int32_t ngpus = 0, maxserver = -1;
    int32_t *server_gpus = NULL;
    tb_loc_t noloc = { 0, 0 };

    if (b->nnodes == 0)
        return tb_err(b, noloc, err, CCS_ERR_TOPOLOGY, "topology has no "
                      "nodes");
    for (int32_t v = 0; v < b->nnodes; v++) {
        if (b->nodes[v].kind == TOPO_NODE_GPU)
            ngpus++;
        if (b->nodes[v].server > maxserver)
            maxserver = b->nodes[v].server;
    }
    if (ngpus < 1)
        return tb_err(b, noloc, err, CCS_ERR_TOPOLOGY,
                      "topology has no GPU (at least 1 is needed)");
    if (ngpus > TOPO_MAX_GPUS)
        return tb_err(b, noloc, err, CCS_ERR_TOPOLOGY,
                      "%d GPUs is more than the %d supported", (int)ngpus,
                      TOPO_MAX_GPUS);
    st = tb_index(b, err);
    if (st != CCS_OK)
        return st;
    if (opts != NULL && (!isfinite(opts->alpha_s) || !isfinite(opts->bw_Bps)))
        return ccs_err_set(err, CCS_ERR_INVALID, "non-finite override");

    /* ownership: t and everything hung on it belong to *out on success,
     * destroyed at cleanup otherwise */
    t = calloc(1, sizeof(*t));
    if (t == NULL)
        return ccs_err_set(err, CCS_ERR_NOMEM, "out of memory (topology)");
    snprintf(t->name, sizeof(t->name), "%s", b->name);
    t->nnodes = b->nnodes;
    t->nlinks = b->nlinks;
    t->ngpus = ngpus;
    t->nservers = maxserver + 1;
    t->nodes = malloc((size_t)t->nnodes * sizeof(*t->nodes));
    t->links = malloc(((size_t)t->nlinks + 1) * sizeof(*t->links));
    t->rank_node = malloc((size_t)ngpus * sizeof(*t->rank_node));
    t->out_start = malloc(((size_t)t->nnodes + 1) * sizeof(int32_t));
    t->in_start = malloc(((size_t)t->nnodes + 1) * sizeof(int32_t));
    t->out_links = malloc(((size_t)t->nlinks + 1) * sizeof(int32_t));
    t->in_links = malloc(((size_t)t->nlinks + 1) * sizeof(int32_t));
    t->graph = g = calloc(1, sizeof(*g));
    server_gpus = calloc((size_t)t->nservers + 1, sizeof(*server_gpus));
    if (t->nodes == NULL || t->links == NULL || t->rank_node == NULL ||
        t->out_start == NULL || t->in_start == NULL || t->out_links == NULL ||
        t->in_links == NULL || g == NULL || server_gpus == NULL) {
        st = ccs_err_set(err, CCS_ERR_NOMEM, "out of memory (topology)");
        goto cleanup;
    }
    g->fwd = malloc((size_t)t->nnodes);
    if (g->fwd == NULL) {
        st = ccs_err_set(err, CCS_ERR_NOMEM, "out of memory (topology)");
        goto cleanup;
    }
    g->gpus_forward = b->gpus_forward;
    memcpy(t->nodes, b->nodes, (size_t)t->nnodes * sizeof(*t->nodes));
    if (t->nlinks > 0)
        memcpy(t->links, b->links, (size_t)t->nlinks * sizeof(*t->links));
    for (int32_t v = 0; v < t->nnodes; v++) {
        int8_t f = b->fwd[v];

        if (f < 0)
            f = t->nodes[v].kind == TOPO_NODE_GPU ? (b->gpus_forward != 0)
                                                  : 1;
        g->fwd[v] = (uint8_t)f;
    }

    /* Servers are numbered 0..nservers-1 and each holds a GPU. */
    for (int32_t v = 0; v < t->nnodes; v++)
        if (t->nodes[v].kind == TOPO_NODE_GPU)
            server_gpus[t->nodes[v].server]++;
    for (int32_t s = 0; s < t->nservers; s++) {
        if (server_gpus[s] == 0) {
            tb_loc_t loc = noloc;

            for (int32_t v = 0; v < t->nnodes; v++)
                if (t->nodes[v].server == s) {
                    loc = b->node_loc[v];
                    break;
                }
            st = tb_err(b, loc, err, CCS_ERR_TOPOLOGY,
                        "server %d has no GPU (servers are numbered "
                        "0..N-1 and each needs a GPU)", (int)s);
            goto cleanup;
        }
    }
    /* Ranks server by server, node-id order inside a server. */
    {
        int32_t acc = 0;

        for (int32_t s = 0; s < t->nservers; s++) {
            int32_t c = server_gpus[s];

            server_gpus[s] = acc;
            acc += c;
        }
        for (int32_t v = 0; v < t->nnodes; v++) {
            if (t->nodes[v].kind != TOPO_NODE_GPU)
                continue;
            int32_t r = server_gpus[t->nodes[v].server]++;
            t->nodes[v].rank = r;
            t->rank_node[r] = v;
        }
    }

    if (opts != NULL) {
        for (int32_t l = 0; l < t->nlinks; l++) {
            if (opts->alpha_s > 0)
                t->links[l].alpha_s = opts->alpha_s;
            if (opts->bw_Bps > 0)
                t->links[l].bw_Bps = opts->bw_Bps;
        }
    }
    csr_build(t->nnodes, t->nlinks, t->links, 1, t->out_start, t->out_links);
    csr_build(t->nnodes, t->nlinks, t->links, 0, t->in_start, t->in_links);

    /* igraph: edges added in link-id order, so edge id == link id. */
    IG_CHECK(igraph_empty(&g->g, t->nnodes, IGRAPH_DIRECTED), "empty");
    g->have_g = 1;
    IG_CHECK(igraph_vector_int_init(&edges, 2 * (igraph_integer_t)t->nlinks),
             "vector_int_init");
    have_edges = 1;
    for (int32_t l = 0; l < t->nlinks; l++) {
        VECTOR(edges)[2 * l] = t->links[l].src;
        VECTOR(edges)[2 * l + 1] = t->links[l].dst;
    }
    IG_CHECK(igraph_add_edges(&g->g, &edges, NULL), "add_edges");
    IG_CHECK(igraph_vector_init(&g->alpha_s, t->nlinks), "vector_init");
    g->have_alpha = 1;
    IG_CHECK(igraph_vector_init(&g->bw_Bps, t->nlinks), "vector_init");
    g->have_bw = 1;
    for (int32_t l = 0; l < t->nlinks; l++) {
        VECTOR(g->alpha_s)[l] = t->links[l].alpha_s;
        VECTOR(g->bw_Bps)[l] = t->links[l].bw_Bps;
    }
    if (igraph_ecount(&g->g) != t->nlinks) {
        st = ccs_err_set(err, CCS_ERR_INTERNAL, "igraph holds %" PRId64
                         " edges, want %d", (int64_t)igraph_ecount(&g->g),
                         (int)t->nlinks);
        goto cleanup;
    }

    /* Every node belongs to the GPUs' (weak) component ... */
    {
        igraph_integer_t ncomp = 0;

        IG_CHECK(igraph_vector_int_init(&memb, 0), "vector_int_init");
        have_memb = 1;
        IG_CHECK(igraph_connected_components(&g->g, &memb, NULL, &ncomp,
                                             IGRAPH_WEAK),
                 "connected_components");
        if (ncomp > 1) {
            igraph_integer_t c0 = VECTOR(memb)[t->rank_node[0]];

            for (int32_t v = 0; v < t->nnodes; v++) {
                if (VECTOR(memb)[v] == c0)
                    continue;
                st = tb_err(b, b->node_loc[v], err, CCS_ERR_TOPOLOGY,
                            "disconnected: %s '%s' is not connected to "
                            "GPU '%s'", topo_node_kind_str(t->nodes[v].kind),
                            t->nodes[v].name,
                            t->nodes[t->rank_node[0]].name);
                goto cleanup;
            }
        }
    }
    /* ... and every GPU reaches every GPU along directed, forwarding
     * paths. */
    st = check_gpus_connected(b, t, err);
    if (st != CCS_OK)
        goto cleanup;

    t->fingerprint = topo_fingerprint(t);
    *out = t;
    t = NULL;
cleanup:
    if (have_edges)
        igraph_vector_int_destroy(&edges);
    if (have_memb)
        igraph_vector_int_destroy(&memb);
    free(server_gpus);
    topo_destroy(t);
    return st;
}
