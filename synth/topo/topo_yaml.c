/*
 * topo_yaml.c - YAML topology files (schema: docs/topology.md).
 *
 * libyaml's document API gives a tree of untyped scalars with source
 * marks; this file adds what libyaml leaves out: every mapping is checked
 * for unknown and duplicate keys, every number is parsed strictly with its
 * unit, and every message starts with "file:line:col: " pointing at the
 * offending key or value.
 *
 * Node ids follow a fixed order whatever the order of the keys in the file:
 * first the `servers` entries (in file order; per server its GPUs, then its
 * switch, then its NICs), then the `nodes` entries.  Links follow: each
 * server's implied links (server order), then the `links` entries in file
 * order.  The built-ins use the same order, so a file written like a
 * built-in has the built-in's fingerprint.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "units.h"
#include "topo_internal.h"

#define YMAX_KEYS 12

typedef struct ycx {
    const char *file;
    yaml_document_t *doc;
    topo_builder_t *b;
    ccs_err_t *err;
    int have_alpha, have_bw;        /* `defaults` present */
    double alpha_s, bw_Bps;
} ycx_t;

/* A compact server and where its NICs go (resolved after all nodes). */
typedef struct ysrv {
    tb_server_t s;
    yaml_node_t *to;                /* scalar naming a node, or NULL */
} ysrv_t;

static tb_loc_t yloc(const yaml_node_t *n)
{
    return (tb_loc_t){ (int32_t)n->start_mark.line + 1,
                       (int32_t)n->start_mark.column + 1 };
}

static ccs_status_t yerr(ycx_t *cx, const yaml_node_t *n, ccs_status_t st,
                         const char *fmt, ...) CCS_PRINTF(4, 5);
static ccs_status_t yerr(ycx_t *cx, const yaml_node_t *n, ccs_status_t st,
                         const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    ccs_err_vset(cx->err, st, fmt, ap);
    va_end(ap);
    if (n != NULL)
        ccs_err_prefix(cx->err, "%s:%d:%d: ", cx->file,
                       (int)n->start_mark.line + 1,
                       (int)n->start_mark.column + 1);
    else
        ccs_err_prefix(cx->err, "%s: ", cx->file);
    return st;
}

static yaml_node_t *ynode(ycx_t *cx, int id)
{
    return yaml_document_get_node(cx->doc, id);
}

static const char *yscalar_text(const yaml_node_t *n)
{
    return (const char *)n->data.scalar.value;
}

/* Check that n is a mapping whose keys are all in keys[] (NULL-ended),
 * each at most once; vals[i] receives the value of keys[i] or NULL. */
static ccs_status_t ymap(ycx_t *cx, yaml_node_t *n, const char *what,
                         const char *const *keys, yaml_node_t **vals)
{
    yaml_node_t *seen[YMAX_KEYS] = { NULL };
    int nkeys = 0;

    while (keys[nkeys] != NULL)
        nkeys++;
    for (int i = 0; i < nkeys; i++)
        vals[i] = NULL;
    if (n->type != YAML_MAPPING_NODE)
        return yerr(cx, n, CCS_ERR_PARSE, "%s must be a mapping "
                    "(key: value)", what);
    for (yaml_node_pair_t *p = n->data.mapping.pairs.start;
         p < n->data.mapping.pairs.top; p++) {
        yaml_node_t *k = ynode(cx, p->key), *v = ynode(cx, p->value);
        const char *key;
        int idx = -1;

        if (k == NULL || v == NULL || k->type != YAML_SCALAR_NODE)
            return yerr(cx, k != NULL ? k : n, CCS_ERR_PARSE,
                        "keys of %s must be plain words", what);
        key = yscalar_text(k);
        if (strlen(key) != k->data.scalar.length)
            return yerr(cx, k, CCS_ERR_PARSE, "a key of %s contains a NUL "
                        "byte", what);
        for (int i = 0; i < nkeys; i++)
            if (strcmp(key, keys[i]) == 0)
                idx = i;
        if (idx < 0) {
            char list[256];
            size_t used = 0;

            list[0] = '\0';
            for (int i = 0; i < nkeys && used < sizeof(list); i++) {
                int w = snprintf(list + used, sizeof(list) - used, "%s%s",
                                 i ? ", " : "", keys[i]);
                used += w > 0 ? (size_t)w : 0;
            }
            return yerr(cx, k, CCS_ERR_PARSE, "unknown key '%s' in %s "
                        "(known: %s)", key, what, list);
        }
        if (seen[idx] != NULL)
            return yerr(cx, k, CCS_ERR_PARSE, "duplicate key '%s' in %s "
                        "(first at line %d)", key, what,
                        (int)seen[idx]->start_mark.line + 1);
        seen[idx] = k;
        vals[idx] = v;
    }
    return CCS_OK;
}

static ccs_status_t yrequire(ycx_t *cx, yaml_node_t *map, yaml_node_t *val,
                             const char *key, const char *what)
{
    if (val == NULL)
        return yerr(cx, map, CCS_ERR_PARSE, "%s is missing required key "
                    "'%s'", what, key);
    return CCS_OK;
}

static ccs_status_t ystr(ycx_t *cx, yaml_node_t *n, const char *what,
                         const char **out)
{
    if (n->type != YAML_SCALAR_NODE)
        return yerr(cx, n, CCS_ERR_PARSE, "%s must be a single value, not "
                    "a %s", what, n->type == YAML_SEQUENCE_NODE ? "list"
                                                                : "mapping");
    /* "\0" in a quoted scalar: the C string would silently end there. */
    if (strlen(yscalar_text(n)) != n->data.scalar.length)
        return yerr(cx, n, CCS_ERR_PARSE, "%s contains a NUL byte", what);
    *out = yscalar_text(n);
    return CCS_OK;
}

static ccs_status_t yint(ycx_t *cx, yaml_node_t *n, const char *what,
                         long lo, long hi, int32_t *out)
{
    const char *s = "";
    long v;
    ccs_status_t st = ystr(cx, n, what, &s);

    if (st != CCS_OK)
        return st;
    if (!units_parse_int(s, LONG_MIN, LONG_MAX, &v))
        return yerr(cx, n, CCS_ERR_PARSE, "%s '%s' is not an integer",
                    what, s);
    if (v < lo || v > hi)
        return yerr(cx, n, CCS_ERR_PARSE, "%s %ld is outside %ld..%ld",
                    what, v, lo, hi);
    *out = (int32_t)v;
    return CCS_OK;
}

static ccs_status_t ybool(ycx_t *cx, yaml_node_t *n, const char *what,
                          int *out)
{
    const char *s = "";
    ccs_status_t st = ystr(cx, n, what, &s);

    if (st != CCS_OK)
        return st;
    if (strcmp(s, "true") == 0)
        *out = 1;
    else if (strcmp(s, "false") == 0)
        *out = 0;
    else
        return yerr(cx, n, CCS_ERR_PARSE, "%s '%s' is not true or false",
                    what, s);
    return CCS_OK;
}

static ccs_status_t ytime(ycx_t *cx, yaml_node_t *n, const char *what,
                          double *out)
{
    const char *s = "";
    ccs_status_t st = ystr(cx, n, what, &s);

    if (st != CCS_OK)
        return st;
    if (s[0] == '-')
        return yerr(cx, n, CCS_ERR_TOPOLOGY, "negative latency: %s is '%s'",
                    what, s);
    if (!units_parse_time(s, out))
        return yerr(cx, n, CCS_ERR_PARSE, "%s '%s' is not a time (write "
                    "e.g. 3us, 150ns, 1.5e-6)", what, s);
    return CCS_OK;
}

static ccs_status_t ybw(ycx_t *cx, yaml_node_t *n, const char *what,
                        double *out)
{
    const char *s = "";
    char *end;
    double v;
    ccs_status_t st = ystr(cx, n, what, &s);

    if (st != CCS_OK)
        return st;
    if (s[0] == '-')
        return yerr(cx, n, CCS_ERR_TOPOLOGY, "negative bandwidth: %s is "
                    "'%s'", what, s);
    if (units_parse_bw(s, out))
        return CCS_OK;
    v = strtod(s, &end);
    if (end != s && v == 0)
        return yerr(cx, n, CCS_ERR_TOPOLOGY, "%s '%s' must be positive",
                    what, s);
    if (end != s && strstr(s, "/s") == NULL && strstr(s, "ps") == NULL)
        return yerr(cx, n, CCS_ERR_PARSE, "%s '%s' has no '/s' (write e.g. "
                    "450GB/s, 100Gb/s, 16GBps)", what, s);
    return yerr(cx, n, CCS_ERR_PARSE, "%s '%s' is not a bandwidth (write "
                "e.g. 450GB/s, 100Gb/s, 16GBps)", what, s);
}

/* alpha and bw of a link-like mapping, falling back to `defaults`. */
static ccs_status_t yalpha_bw(ycx_t *cx, yaml_node_t *map, yaml_node_t *va,
                              yaml_node_t *vb, const char *what,
                              double *alpha, double *bw)
{
    char w[64];
    ccs_status_t st;

    snprintf(w, sizeof(w), "%s alpha", what);
    if (va != NULL) {
        st = ytime(cx, va, w, alpha);
        if (st != CCS_OK)
            return st;
    } else if (cx->have_alpha) {
        *alpha = cx->alpha_s;
    } else {
        return yerr(cx, map, CCS_ERR_PARSE, "a %s is missing required "
                    "key 'alpha' (and 'defaults' gives none)", what);
    }
    snprintf(w, sizeof(w), "%s bandwidth", what);
    if (vb != NULL) {
        st = ybw(cx, vb, w, bw);
        if (st != CCS_OK)
            return st;
    } else if (cx->have_bw) {
        *bw = cx->bw_Bps;
    } else {
        return yerr(cx, map, CCS_ERR_PARSE, "a %s is missing required "
                    "key 'bw' (and 'defaults' gives none)", what);
    }
    return CCS_OK;
}

static ccs_status_t ysequence(ycx_t *cx, yaml_node_t *n, const char *what)
{
    if (n->type != YAML_SEQUENCE_NODE)
        return yerr(cx, n, CCS_ERR_PARSE, "'%s' must be a list (entries "
                    "starting with '- ')", what);
    return CCS_OK;
}

/* ---- servers ---- */

static ccs_status_t yserver(ycx_t *cx, yaml_node_t *n, int32_t *nserver,
                            ysrv_t **sv, int32_t *nsv, int32_t *capsv)
{
    static const char *const keys[] = { "name", "count", "gpus", "switch",
                                        "mesh", "nic", NULL };
    static const char *const ab[] = { "alpha", "bw", "nvls", NULL };
    static const char *const nic_keys[] = { "alpha", "bw", "attach_alpha",
                                            "per_gpu", "to", NULL };
    yaml_node_t *v[YMAX_KEYS], *iv[YMAX_KEYS], *nv[YMAX_KEYS];
    tb_server_t proto;
    yaml_node_t *to = NULL;
    const char *name = NULL;
    int32_t count = 1;
    ccs_status_t st;

    memset(&proto, 0, sizeof(proto));
    st = ymap(cx, n, "a server", keys, v);
    if (st == CCS_OK)
        st = yrequire(cx, n, v[2], "gpus", "a server");
    if (st == CCS_OK && v[0] != NULL)
        st = ystr(cx, v[0], "server name", &name);
    if (st == CCS_OK && v[1] != NULL)
        st = yint(cx, v[1], "server count", 1, TOPO_MAX_GPUS, &count);
    if (st == CCS_OK)
        st = yint(cx, v[2], "gpus", 1, TOPO_MAX_GPUS, &proto.ngpus);
    if (st == CCS_OK && v[3] != NULL && v[4] != NULL)
        st = yerr(cx, v[4], CCS_ERR_TOPOLOGY, "a server has either "
                  "'switch' or 'mesh', not both");
    for (int k = 3; k <= 4 && st == CCS_OK; k++) {
        if (v[k] == NULL)
            continue;
        st = ymap(cx, v[k], k == 3 ? "a server's switch" : "a server's mesh",
                  ab, iv);
        if (st == CCS_OK)
            st = yalpha_bw(cx, v[k], iv[0], iv[1], k == 3 ? "switch" : "mesh",
                           &proto.intra_alpha_s, &proto.intra_bw_Bps);
        if (st == CCS_OK && iv[2] != NULL && k == 4)
            st = yerr(cx, iv[2], CCS_ERR_TOPOLOGY, "'nvls' belongs to a "
                      "switch, not a mesh");
        if (st == CCS_OK && iv[2] != NULL)
            st = ybool(cx, iv[2], "switch nvls", &proto.switch_nvls);
        proto.has_switch = k == 3;
        proto.has_mesh = k == 4;
    }
    if (st == CCS_OK && v[5] != NULL) {
        int per_gpu = 0;

        st = ymap(cx, v[5], "a server's nic", nic_keys, nv);
        if (st == CCS_OK)
            st = yalpha_bw(cx, v[5], nv[0], nv[1], "nic",
                           &proto.nic_alpha_s, &proto.nic_bw_Bps);
        if (st == CCS_OK && nv[2] != NULL)
            st = ytime(cx, nv[2], "nic attach_alpha", &proto.attach_alpha_s);
        if (st == CCS_OK && nv[3] != NULL)
            st = ybool(cx, nv[3], "nic per_gpu", &per_gpu);
        if (st == CCS_OK && nv[4] != NULL) {
            const char *dummy;
            st = ystr(cx, nv[4], "nic to", &dummy);
            to = nv[4];
        }
        proto.nic_mode = per_gpu ? TB_NIC_GPU : TB_NIC_SERVER;
    }
    proto.loc = yloc(n);
    for (int32_t i = 0; i < count && st == CCS_OK; i++) {
        ysrv_t *e;

        if (*nsv == *capsv) {
            int32_t cap = *capsv ? *capsv * 2 : 8;
            ysrv_t *grown = realloc(*sv, (size_t)cap * sizeof(**sv));

            if (grown == NULL)
                return ccs_err_set(cx->err, CCS_ERR_NOMEM, "out of memory");
            *sv = grown;
            *capsv = cap;
        }
        e = &(*sv)[(*nsv)++];
        e->s = proto;
        e->to = to;
        if (name == NULL)
            snprintf(e->s.name, sizeof(e->s.name), "s%d", (int)*nserver);
        else if (count > 1)
            snprintf(e->s.name, sizeof(e->s.name), "%.30s%d", name, (int)i);
        else
            snprintf(e->s.name, sizeof(e->s.name), "%.40s", name);
        st = tb_server_nodes(cx->b, &e->s, (*nserver)++, cx->err);
    }
    return st;
}

/* ---- nodes ---- */

static ccs_status_t ynode_entry(ycx_t *cx, yaml_node_t *n)
{
    static const char *const keys[] = { "name", "kind", "server", "count",
                                        "forwards", "nvls", NULL };
    yaml_node_t *v[YMAX_KEYS];
    const char *name = NULL, *kind_s = NULL;
    topo_node_kind_t kind = TOPO_NODE_GPU;
    int32_t server = -1, count = 1;
    int fwd = -1, nvls = 0;
    int32_t id = -1;
    ccs_status_t st;

    st = ymap(cx, n, "a node", keys, v);
    if (st == CCS_OK)
        st = yrequire(cx, n, v[0], "name", "a node");
    if (st == CCS_OK)
        st = yrequire(cx, n, v[1], "kind", "a node");
    if (st == CCS_OK)
        st = ystr(cx, v[0], "node name", &name);
    if (st == CCS_OK)
        st = ystr(cx, v[1], "node kind", &kind_s);
    if (st == CCS_OK) {
        if (strcmp(kind_s, "gpu") == 0)
            kind = TOPO_NODE_GPU;
        else if (strcmp(kind_s, "nic") == 0)
            kind = TOPO_NODE_NIC;
        else if (strcmp(kind_s, "switch") == 0)
            kind = TOPO_NODE_SWITCH;
        else
            st = yerr(cx, v[1], CCS_ERR_PARSE, "node kind '%s' is not gpu, "
                      "nic or switch", kind_s);
    }
    if (st == CCS_OK && v[2] != NULL)
        st = yint(cx, v[2], "server", 0, TOPO_MAX_GPUS - 1, &server);
    if (st == CCS_OK && v[3] != NULL)
        st = yint(cx, v[3], "node count", 1, TOPO_MAX_GPUS, &count);
    if (st == CCS_OK && v[4] != NULL)
        st = ybool(cx, v[4], "forwards", &fwd);
    if (st == CCS_OK && v[5] != NULL) {
        st = ybool(cx, v[5], "nvls", &nvls);
        if (st == CCS_OK && nvls && kind != TOPO_NODE_SWITCH)
            st = yerr(cx, v[5], CCS_ERR_TOPOLOGY, "'nvls: true' is for "
                      "switches (in-switch reduction), not a %s",
                      topo_node_kind_str(kind));
    }
    for (int32_t i = 0; i < count && st == CCS_OK; i++) {
        char nm[TOPO_NAME_MAX + 16];

        if (v[3] != NULL)
            snprintf(nm, sizeof(nm), "%s%d", name, (int)i);
        else
            snprintf(nm, sizeof(nm), "%s", name);
        st = tb_add_node(cx->b, nm, kind, server, fwd, yloc(n), &id,
                         cx->err);
        if (st == CCS_OK)
            cx->b->nodes[id].nvls = (uint8_t)(nvls != 0);
    }
    return st;
}

/* ---- links ---- */

static ccs_status_t yendpoint(ycx_t *cx, yaml_node_t *n, const char *what,
                              int32_t *id)
{
    const char *name = "";
    ccs_status_t st = ystr(cx, n, what, &name);

    if (st != CCS_OK)
        return st;
    *id = tb_find(cx->b, name);
    if (*id < 0)
        return yerr(cx, n, CCS_ERR_TOPOLOGY, "unknown node '%s'", name);
    return CCS_OK;
}

static ccs_status_t ylink(ycx_t *cx, yaml_node_t *n)
{
    static const char *const keys[] = { "a", "b", "alpha", "bw", "count",
                                        "directed", NULL };
    yaml_node_t *v[YMAX_KEYS];
    int32_t a = -1, b = -1, count = 1;
    double alpha = 0, bw = 0;
    int directed = 0;
    ccs_status_t st;

    st = ymap(cx, n, "a link", keys, v);
    if (st == CCS_OK)
        st = yrequire(cx, n, v[0], "a", "a link");
    if (st == CCS_OK)
        st = yrequire(cx, n, v[1], "b", "a link");
    if (st == CCS_OK)
        st = yendpoint(cx, v[0], "link end 'a'", &a);
    if (st == CCS_OK)
        st = yendpoint(cx, v[1], "link end 'b'", &b);
    if (st == CCS_OK)
        st = yalpha_bw(cx, n, v[2], v[3], "link", &alpha, &bw);
    if (st == CCS_OK && v[4] != NULL)
        st = yint(cx, v[4], "link count", 1, TOPO_MAX_PARALLEL, &count);
    if (st == CCS_OK && v[5] != NULL)
        st = ybool(cx, v[5], "directed", &directed);
    if (st == CCS_OK && a == b)
        st = yerr(cx, n, CCS_ERR_TOPOLOGY, "self loop: link from '%s' to "
                  "itself", cx->b->nodes[a].name);
    if (st == CCS_OK)
        st = tb_add_cable(cx->b, a, b, alpha, bw, count, directed, yloc(n),
                          cx->err);
    return st;
}

/* ---- the document ---- */

static ccs_status_t ydocument(ycx_t *cx, yaml_node_t *root)
{
    static const char *const keys[] = { "name", "description",
                                        "gpus_forward", "defaults",
                                        "servers", "nodes", "links", NULL };
    static const char *const ab[] = { "alpha", "bw", NULL };
    yaml_node_t *v[YMAX_KEYS], *dv[YMAX_KEYS];
    ysrv_t *sv = NULL;
    int32_t nsv = 0, capsv = 0, nserver = 0;
    const char *s = "";
    ccs_status_t st;

    st = ymap(cx, root, "the topology", keys, v);
    if (st == CCS_OK && v[0] != NULL)
        st = ystr(cx, v[0], "name", &s);
    if (st == CCS_OK && v[1] != NULL)
        st = ystr(cx, v[1], "description", &s);
    if (st == CCS_OK && v[2] != NULL)
        st = ybool(cx, v[2], "gpus_forward", &cx->b->gpus_forward);
    if (st == CCS_OK && v[3] != NULL) {
        st = ymap(cx, v[3], "defaults", ab, dv);
        if (st == CCS_OK && dv[0] != NULL) {
            st = ytime(cx, dv[0], "default alpha", &cx->alpha_s);
            cx->have_alpha = 1;
        }
        if (st == CCS_OK && dv[1] != NULL) {
            st = ybw(cx, dv[1], "default bandwidth", &cx->bw_Bps);
            cx->have_bw = 1;
        }
    }
    if (st != CCS_OK)
        return st;
    if (v[4] == NULL && v[5] == NULL)
        return yerr(cx, root, CCS_ERR_PARSE, "the topology is missing "
                    "required key 'servers' or 'nodes'");

    /* Nodes: servers first, then explicit nodes. */
    if (v[4] != NULL) {
        st = ysequence(cx, v[4], "servers");
        for (yaml_node_item_t *it = v[4]->data.sequence.items.start;
             st == CCS_OK && it < v[4]->data.sequence.items.top; it++)
            st = yserver(cx, ynode(cx, *it), &nserver, &sv, &nsv, &capsv);
    }
    if (st == CCS_OK && v[5] != NULL) {
        st = ysequence(cx, v[5], "nodes");
        for (yaml_node_item_t *it = v[5]->data.sequence.items.start;
             st == CCS_OK && it < v[5]->data.sequence.items.top; it++)
            st = ynode_entry(cx, ynode(cx, *it));
    }
    if (st == CCS_OK)
        st = tb_index(cx->b, cx->err);

    /* Links: each server's, then the explicit ones. */
    for (int32_t i = 0; i < nsv && st == CCS_OK; i++) {
        int32_t to = -1;

        if (sv[i].to != NULL)
            st = yendpoint(cx, sv[i].to, "nic to", &to);
        if (st == CCS_OK)
            st = tb_server_links(cx->b, &sv[i].s, to, cx->err);
    }
    if (st == CCS_OK && v[6] != NULL) {
        st = ysequence(cx, v[6], "links");
        for (yaml_node_item_t *it = v[6]->data.sequence.items.start;
             st == CCS_OK && it < v[6]->data.sequence.items.top; it++)
            st = ylink(cx, ynode(cx, *it));
    }
    free(sv);
    return st;
}

ccs_status_t topo_yaml_build(const char *path, topo_builder_t *b,
                             ccs_err_t *err)
{
    yaml_parser_t parser;
    yaml_document_t doc, extra;
    int have_parser = 0, have_doc = 0;
    FILE *fp = NULL;
    ccs_status_t st = CCS_OK;
    ycx_t cx;
    yaml_node_t *root;

    memset(&cx, 0, sizeof(cx));
    cx.file = path;
    cx.doc = &doc;
    cx.b = b;
    cx.err = err;
    /* ownership: fp, parser and doc are local, released at cleanup */
    fp = fopen(path, "rb");
    if (fp == NULL)
        return ccs_err_set(err, CCS_ERR_TOPOLOGY, "%s: cannot open topology "
                           "file: %s", path, strerror(errno));
    if (!yaml_parser_initialize(&parser)) {
        st = ccs_err_set(err, CCS_ERR_NOMEM, "%s: cannot initialise the "
                         "YAML parser", path);
        goto cleanup;
    }
    have_parser = 1;
    yaml_parser_set_input_file(&parser, fp);
    if (!yaml_parser_load(&parser, &doc)) {
        const char *what = parser.problem ? parser.problem : "syntax error";

        if (parser.error == YAML_MEMORY_ERROR)
            st = ccs_err_set(err, CCS_ERR_NOMEM, "%s: out of memory", path);
        else if (parser.error == YAML_READER_ERROR)
            st = ccs_err_set(err, CCS_ERR_PARSE, "%s: byte %zu: YAML %s",
                             path, parser.problem_offset, what);
        else if (parser.context != NULL)
            st = ccs_err_set(err, CCS_ERR_PARSE, "%s:%d:%d: YAML syntax "
                             "error: %s %s (line %d)", path,
                             (int)parser.problem_mark.line + 1,
                             (int)parser.problem_mark.column + 1, what,
                             parser.context,
                             (int)parser.context_mark.line + 1);
        else
            st = ccs_err_set(err, CCS_ERR_PARSE, "%s:%d:%d: YAML syntax "
                             "error: %s", path,
                             (int)parser.problem_mark.line + 1,
                             (int)parser.problem_mark.column + 1, what);
        goto cleanup;
    }
    have_doc = 1;
    root = yaml_document_get_root_node(&doc);
    if (root == NULL) {
        st = ccs_err_set(err, CCS_ERR_PARSE, "%s:1:1: empty topology file",
                         path);
        goto cleanup;
    }
    st = ydocument(&cx, root);
    if (st != CCS_OK)
        goto cleanup;
    /* One document per file: a second would be silently ignored. */
    if (!yaml_parser_load(&parser, &extra)) {
        st = ccs_err_set(err, CCS_ERR_PARSE, "%s:%d:%d: YAML syntax error "
                         "after the first document", path,
                         (int)parser.problem_mark.line + 1,
                         (int)parser.problem_mark.column + 1);
        goto cleanup;
    }
    if (yaml_document_get_root_node(&extra) != NULL) {
        st = ccs_err_set(err, CCS_ERR_PARSE, "%s:%d:%d: more than one YAML "
                         "document", path, (int)extra.start_mark.line + 1,
                         (int)extra.start_mark.column + 1);
    }
    yaml_document_delete(&extra);
cleanup:
    if (have_doc)
        yaml_document_delete(&doc);
    if (have_parser)
        yaml_parser_delete(&parser);
    fclose(fp);
    return st;
}
