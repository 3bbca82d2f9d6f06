/* test_multitree.c - MultiTree trees (synth/algo/mtree.c) and schedules
 * (synth/algo/algo_multitree.c): spanning, links and switch paths, per-step link
 * capacity, step counts against the paper's, verifier on every collective.
 *
 * Topologies are filled in by hand here (tb_*), independent of topo.c, so
 * the tree rules are tested on known link orders; the built-in specs are
 * tested too when topo_load knows them. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "algo.h"
#include "format.h"
#include "mtree.h"
#include "sim.h"
#include "synth_out.h"
#include "topo_init.h"
#include "verify.h"
#include "harness.h"

/* ---- hand-built topologies ---- */

typedef struct tb {
    topo_t t;
    int32_t lcap;
} tb_t;

/* ngpu GPUs (node id == rank) then nsw switches. */
static tb_t *tb_new(const char *name, int32_t ngpu, int32_t nsw)
{
    tb_t *b = calloc(1, sizeof(*b));
    int32_t n = ngpu + nsw;

    snprintf(b->t.name, sizeof(b->t.name), "%s", name);
    b->t.nnodes = n;
    b->t.ngpus = ngpu;
    b->t.nservers = 1;
    b->t.nodes = calloc((size_t)n, sizeof(topo_node_t));
    b->t.rank_node = calloc((size_t)ngpu, sizeof(int32_t));
    for (int32_t v = 0; v < n; v++) {
        topo_node_t *nd = &b->t.nodes[v];
        nd->kind = v < ngpu ? TOPO_NODE_GPU : TOPO_NODE_SWITCH;
        nd->rank = v < ngpu ? v : -1;
        nd->server = 0;
        snprintf(nd->name, sizeof(nd->name), v < ngpu ? "gpu%d" : "sw%d",
                 v < ngpu ? v : v - ngpu);
        if (v < ngpu)
            b->t.rank_node[v] = v;
    }
    return b;
}

static void tb_arc(tb_t *b, int32_t u, int32_t v, double bw)
{
    if (b->t.nlinks == b->lcap) {
        b->lcap = b->lcap ? 2 * b->lcap : 64;
        b->t.links = realloc(b->t.links, sizeof(topo_link_t) *
                             (size_t)b->lcap);
    }
    b->t.links[b->t.nlinks++] = (topo_link_t){ u, v, 150e-9, bw };
}

/* A cable: one link each way. */
static void tb_cable(tb_t *b, int32_t u, int32_t v, double bw)
{
    tb_arc(b, u, v, bw);
    tb_arc(b, v, u, bw);
}

static void tb_finish(tb_t *b)
{
    topo_t *t = &b->t;
    int32_t n = t->nnodes, L = t->nlinks;
    int32_t *po = calloc((size_t)n + 1, sizeof(int32_t));
    int32_t *pi = calloc((size_t)n + 1, sizeof(int32_t));

    t->out_start = calloc((size_t)n + 1, sizeof(int32_t));
    t->in_start = calloc((size_t)n + 1, sizeof(int32_t));
    t->out_links = calloc((size_t)L + 1, sizeof(int32_t));
    t->in_links = calloc((size_t)L + 1, sizeof(int32_t));
    for (int32_t l = 0; l < L; l++) {
        t->out_start[t->links[l].src + 1]++;
        t->in_start[t->links[l].dst + 1]++;
    }
    for (int32_t v = 0; v < n; v++) {
        t->out_start[v + 1] += t->out_start[v];
        t->in_start[v + 1] += t->in_start[v];
    }
    memcpy(po, t->out_start, sizeof(int32_t) * (size_t)n);
    memcpy(pi, t->in_start, sizeof(int32_t) * (size_t)n);
    for (int32_t l = 0; l < L; l++) {
        t->out_links[po[t->links[l].src]++] = l;
        t->in_links[pi[t->links[l].dst]++] = l;
    }
    free(po);
    free(pi);
}

static void tb_free(tb_t *b)
{
    if (b == NULL)
        return;
    free(b->t.nodes);
    free(b->t.links);
    free(b->t.rank_node);
    free(b->t.out_start);
    free(b->t.out_links);
    free(b->t.in_start);
    free(b->t.in_links);
    free(b);
}

/* a x b torus (wrap) or mesh, rank = i * b + j. */
static tb_t *tb_grid(int32_t a, int32_t bb, bool wrap)
{
    char name[32];
    tb_t *b;

    snprintf(name, sizeof(name), "%s:%dx%d", wrap ? "torus" : "mesh", a, bb);
    b = tb_new(name, a * bb, 0);
    for (int32_t i = 0; i < a; i++) {
        for (int32_t j = 0; j < bb; j++) {
            int32_t v = i * bb + j;
            if (j + 1 < bb || (wrap && bb > 2))
                tb_cable(b, v, i * bb + (j + 1) % bb, 16e9);
            if (i + 1 < a || (wrap && a > 2))
                tb_cable(b, v, ((i + 1) % a) * bb + j, 16e9);
        }
    }
    tb_finish(b);
    return b;
}

static tb_t *tb_ring(int32_t n)
{
    tb_t *b = tb_new("ring", n, 0);
    for (int32_t i = 0; i < n; i++)
        tb_cable(b, i, (i + 1) % n, 16e9);
    tb_finish(b);
    return b;
}

static tb_t *tb_switch(int32_t n)
{
    tb_t *b = tb_new("switch", n, 1);
    for (int32_t i = 0; i < n; i++)
        tb_cable(b, i, n, 16e9);
    tb_finish(b);
    return b;
}

/* Two-level fat tree: `leaves` leaf switches with `per` GPUs each, every
 * leaf cabled to each of `spines` spine switches. */
static tb_t *tb_fattree(int32_t leaves, int32_t per, int32_t spines)
{
    int32_t n = leaves * per;
    tb_t *b = tb_new("fattree", n, leaves + spines);

    for (int32_t g = 0; g < n; g++)
        tb_cable(b, g, n + g / per, 16e9);
    for (int32_t l = 0; l < leaves; l++)
        for (int32_t s = 0; s < spines; s++)
            tb_cable(b, n + l, n + leaves + s, 16e9);
    tb_finish(b);
    return b;
}

/* DGX-1 style hybrid cube-mesh: two quads fully connected inside, GPU i
 * linked to i+4; the cross links are twice as wide (two NVLinks). */
static tb_t *tb_cubemesh(void)
{
    tb_t *b = tb_new("cubemesh", 8, 0);
    for (int32_t q = 0; q < 2; q++)
        for (int32_t i = 0; i < 4; i++)
            for (int32_t j = i + 1; j < 4; j++)
                tb_cable(b, 4 * q + i, 4 * q + j, 25e9);
    for (int32_t i = 0; i < 4; i++)
        tb_cable(b, i, i + 4, 50e9);
    tb_finish(b);
    return b;
}

/* ---- independent checks of a set of trees ---- */

/* Every tree spans all ranks; each edge is a link path from the parent's
 * node to the child's node through switches only; the parent joined
 * earlier; no link is used beyond round(bw/min_bw) in one step; under
 * MTREE_CHILDREN_ONE no parent gets two children of a tree in one step. */
static void check_trees(const mtree_t *m, const topo_t *t)
{
    int32_t n = t->ngpus;
    double minbw = 1e300;
    int32_t *use = calloc((size_t)t->nlinks * (size_t)(m->nsteps + 1),
                          sizeof(int32_t));
    bool *seen = calloc((size_t)n, sizeof(bool));

    for (int32_t l = 0; l < t->nlinks; l++)
        if (t->links[l].bw_Bps < minbw)
            minbw = t->links[l].bw_Bps;
    CHECK_EQ_INT(m->nranks, n);
    for (int32_t r = 0; r < n; r++) {
        memset(seen, 0, sizeof(bool) * (size_t)n);
        seen[r] = true;
        CHECK_EQ_INT(m->join_step[r * n + r], 0);
        for (int32_t i = 0; i < n - 1; i++) {
            const mtree_edge_t *e = &m->edges[r * (n - 1) + i];
            int32_t at = t->rank_node[e->parent];
            CHECK_MSG(e->child >= 0 && e->child < n && !seen[e->child],
                      "tree %d: child %d twice or out of range", r, e->child);
            if (e->child < 0 || e->child >= n)
                continue;
            seen[e->child] = true;
            CHECK_MSG(e->step >= 1 && e->step <= m->nsteps,
                      "tree %d: step %d", r, e->step);
            CHECK_MSG(m->join_step[r * n + e->parent] < e->step,
                      "tree %d: parent %d joined at %d, child %d at %d", r,
                      e->parent, m->join_step[r * n + e->parent], e->child,
                      e->step);
            CHECK_EQ_INT(m->join_step[r * n + e->child], e->step);
            CHECK_EQ_INT(m->parent[r * n + e->child], e->parent);
            CHECK(e->path_len >= 1);
            for (int32_t k = 0; k < e->path_len; k++) {
                int32_t l = m->path_links[e->path_off + k];
                CHECK_MSG(t->links[l].src == at, "tree %d edge %d->%d: "
                          "path breaks at link %d", r, e->parent, e->child,
                          l);
                at = t->links[l].dst;
                if (k + 1 < e->path_len)
                    CHECK_MSG(t->nodes[at].kind != TOPO_NODE_GPU,
                              "tree %d: path through GPU %s", r,
                              t->nodes[at].name);
                use[(size_t)e->step * t->nlinks + l]++;
            }
            CHECK_EQ_INT(at, t->rank_node[e->child]);
            if (m->opts.children == MTREE_CHILDREN_ONE) {
                for (int32_t j = 0; j < i; j++) {
                    const mtree_edge_t *f = &m->edges[r * (n - 1) + j];
                    CHECK_MSG(!(f->parent == e->parent &&
                                f->step == e->step),
                              "tree %d: parent %d has two children in step "
                              "%d", r, e->parent, e->step);
                }
            }
        }
        for (int32_t v = 0; v < n; v++)
            CHECK_MSG(seen[v], "tree %d does not span rank %d", r, v);
    }
    for (int32_t s = 1; s <= m->nsteps; s++) {
        for (int32_t l = 0; l < t->nlinks; l++) {
            int32_t k = (int32_t)(t->links[l].bw_Bps / minbw + 0.5);
            int32_t u = use[(size_t)s * t->nlinks + l];
            CHECK_MSG(u <= (k < 1 ? 1 : k), "step %d: link %d (%s->%s) "
                      "used %d times, capacity %d", s, l,
                      t->nodes[t->links[l].src].name,
                      t->nodes[t->links[l].dst].name, u, k);
        }
    }
    free(use);
    free(seen);
}

/* ---- tests ---- */

typedef tb_t *(*tb_make_fn)(void);
static tb_t *mk_torus4(void) { return tb_grid(4, 4, true); }
static tb_t *mk_torus8(void) { return tb_grid(8, 8, true); }
static tb_t *mk_mesh4(void) { return tb_grid(4, 4, false); }
static tb_t *mk_mesh8(void) { return tb_grid(8, 8, false); }
static tb_t *mk_torus4x8(void) { return tb_grid(4, 8, true); }
static tb_t *mk_ring8(void) { return tb_ring(8); }
static tb_t *mk_ring2(void) { return tb_ring(2); }
static tb_t *mk_switch8(void) { return tb_switch(8); }
static tb_t *mk_fattree(void) { return tb_fattree(4, 4, 2); }
static tb_t *mk_cubemesh(void) { return tb_cubemesh(); }

static const struct {
    const char *name;
    tb_make_fn make;
} topos[] = {
    { "torus4x4", mk_torus4 },   { "torus8x8", mk_torus8 },
    { "mesh4x4", mk_mesh4 },     { "mesh8x8", mk_mesh8 },
    { "torus4x8", mk_torus4x8 }, { "ring8", mk_ring8 },
    { "ring2", mk_ring2 },       { "switch8", mk_switch8 },
    { "fattree", mk_fattree },   { "cubemesh", mk_cubemesh },
};
#define NTOPOS (sizeof(topos) / sizeof(topos[0]))

TEST(trees_span_and_respect_links)
{
    for (size_t i = 0; i < NTOPOS; i++) {
        tb_t *b = topos[i].make();
        for (int o = 0; o < MTREE_ORDER_COUNT; o++) {
            for (int ch = 0; ch < MTREE_CHILDREN_COUNT; ch++) {
                mtree_opts_t opts = { (mtree_order_t)o,
                                      (mtree_children_t)ch };
                mtree_t *m = NULL;
                ccs_err_t err = { { 0 } };
                ccs_status_t st = mtree_build(&b->t, &opts, &m, &err);
                CHECK_MSG(st == CCS_OK, "%s: %s", topos[i].name, err.msg);
                if (st == CCS_OK) {
                    check_trees(m, &b->t);
                    CHECK_MSG(m->nsteps >= m->lower_bound,
                              "%s: T=%d below the bound %d", topos[i].name,
                              m->nsteps, m->lower_bound);
                }
                mtree_destroy(m);
            }
        }
        tb_free(b);
    }
}

/* The paper's model: at most 4 concurrent sends and 4 receives per node
 * and step.  Our model is per-link capacity; on these networks (degree <= 4,
 * one unit per link) it implies the paper's, and this checks it on the
 * trees themselves. */
static void check_four_ports(const mtree_t *m, const char *name)
{
    int32_t n = m->nranks;
    int32_t *snd = calloc((size_t)n * (size_t)(m->nsteps + 1),
                          sizeof(int32_t));
    int32_t *rcv = calloc((size_t)n * (size_t)(m->nsteps + 1),
                          sizeof(int32_t));
    int32_t worst_s = 0, worst_r = 0;

    for (int32_t i = 0; snd && rcv && i < n * (n - 1); i++) {
        const mtree_edge_t *e = &m->edges[i];
        int32_t a = ++snd[(size_t)e->step * n + e->parent];
        int32_t b = ++rcv[(size_t)e->step * n + e->child];
        worst_s = a > worst_s ? a : worst_s;
        worst_r = b > worst_r ? b : worst_r;
    }
    CHECK_MSG(snd && rcv && worst_s <= 4 && worst_r <= 4, "%s: a node sends "
              "%d or receives %d blocks in one step (paper's model: 4)",
              name, worst_s, worst_r);
    free(snd);
    free(rcv);
}

/* The paper's simulator (4 concurrent sends/receives per node and step)
 * gets these; ours must be no worse.  Lower bounds ceil((n-1)/in-degree). */
TEST(step_counts_meet_paper)
{
    static const struct {
        tb_make_fn make;
        const char *name;
        int32_t max_T, bound;
    } cases[] = {
        { mk_torus4, "torus 4x4", 5, 4 },
        { mk_torus8, "torus 8x8", 17, 16 },
        { mk_mesh4, "mesh 4x4", 10, 8 },
        { mk_mesh8, "mesh 8x8", 33, 32 },
        { mk_ring8, "ring 8", 4, 4 },      /* both ways: diameter 4 */
        { mk_switch8, "switch 8", 7, 7 },  /* one port each: n-1 */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        tb_t *b = cases[i].make();
        mtree_t *m = NULL;
        ccs_err_t err = { { 0 } };
        CHECK_STATUS(mtree_build_best(&b->t, MTREE_CHILDREN_ANY, &m, &err),
                     CCS_OK);
        if (m != NULL) {
            CHECK_MSG(m->nsteps <= cases[i].max_T, "%s: T=%d > %d",
                      cases[i].name, m->nsteps, cases[i].max_T);
            CHECK_EQ_INT(m->lower_bound, cases[i].bound);
            printf("  %-10s T=%d (lower bound %d, target %d)\n",
                   cases[i].name, m->nsteps, m->lower_bound, cases[i].max_T);
            check_four_ports(m, cases[i].name);
        }
        mtree_destroy(m);
        tb_free(b);
    }
}

/* VII-B: a link twice as wide counts twice. */
TEST(wide_links_count_as_parallel)
{
    tb_t *b = tb_new("ring-wide", 4, 0);
    mtree_t *m = NULL;

    for (int32_t i = 0; i < 4; i++)
        tb_cable(b, i, (i + 1) % 4, 32e9);
    tb_cable(b, 0, 2, 16e9);   /* one slow chord sets the unit */
    tb_finish(b);
    CHECK_STATUS(mtree_build(&b->t, NULL, &m, NULL), CCS_OK);
    if (m != NULL) {
        for (int32_t l = 0; l < b->t.nlinks; l++)
            CHECK_EQ_INT(m->link_cap[l], l < 8 ? 2 : 1);
        /* rank 1 receives through two 2-wide links: ceil(3/4) */
        CHECK_EQ_INT(m->lower_bound, 1);
        check_trees(m, &b->t);
    }
    mtree_destroy(m);
    tb_free(b);
}

TEST(deterministic)
{
    tb_t *b = mk_mesh8();
    mtree_t *m1 = NULL, *m2 = NULL;

    CHECK_STATUS(mtree_build(&b->t, NULL, &m1, NULL), CCS_OK);
    CHECK_STATUS(mtree_build(&b->t, NULL, &m2, NULL), CCS_OK);
    if (m1 && m2) {
        int32_t n = b->t.ngpus;
        CHECK_EQ_INT(m1->nsteps, m2->nsteps);
        CHECK(memcmp(m1->edges, m2->edges,
                     sizeof(mtree_edge_t) * (size_t)n * (n - 1)) == 0);
    }
    mtree_destroy(m1);
    mtree_destroy(m2);
    tb_free(b);
}

/* Switched paths: on a star every edge is gpu -> switch -> gpu; on the
 * fat tree a rank's first child shares its leaf switch (III-C3 step 2). */
TEST(switch_paths)
{
    tb_t *s = mk_switch8(), *f = mk_fattree();
    mtree_t *m = NULL;

    CHECK_STATUS(mtree_build(&s->t, NULL, &m, NULL), CCS_OK);
    if (m != NULL) {
        for (int32_t i = 0; i < 8 * 7; i++)
            CHECK_EQ_INT(m->edges[i].path_len, 2);
        CHECK_EQ_INT(m->nsteps, 7);
    }
    mtree_destroy(m);
    m = NULL;
    CHECK_STATUS(mtree_build(&f->t, NULL, &m, NULL), CCS_OK);
    if (m != NULL) {
        for (int32_t r = 0; r < 16; r++) {
            const mtree_edge_t *e = &m->edges[r * 15];
            CHECK_EQ_INT(e->step, 1);
            CHECK_EQ_INT(e->path_len, 2);
            CHECK_EQ_INT(e->child / 4, r / 4);
        }
    }
    mtree_destroy(m);
    tb_free(s);
    tb_free(f);
}

TEST(disconnected_is_an_error)
{
    tb_t *b = tb_new("split", 4, 0);
    mtree_t *m = NULL;
    ccs_err_t err = { { 0 } };

    tb_cable(b, 0, 1, 16e9);
    tb_cable(b, 2, 3, 16e9);
    tb_finish(b);
    /* Both orders name the same first pair (the root order, which keeps
     * no distances, checks reachability from rank 0 first). */
    for (int o = 0; o < MTREE_ORDER_COUNT; o++) {
        mtree_opts_t opts;

        mtree_opts_init(&opts);
        opts.order = (mtree_order_t)o;
        CHECK_STATUS(mtree_build(&b->t, &opts, &m, &err), CCS_ERR_TOPOLOGY);
        CHECK_STR_CONTAINS(err.msg, "rank 0 (node gpu0) cannot reach rank 2 "
                           "(node gpu2)");
        CHECK(m == NULL);
    }
    tb_free(b);
}

/* Steps in which some rank sends. */
static uint32_t transfer_steps(const ccs_sched_t *s)
{
    bool *has = calloc(s->nsteps + 1, sizeof(bool));
    uint32_t k = 0;

    for (uint32_t r = 0; r < s->nranks; r++)
        for (uint32_t i = 0; i < s->rank_nops[r]; i++)
            if (s->rank_ops[r][i].kind == CCS_OP_SEND)
                has[s->rank_ops[r][i].step] = true;
    for (uint32_t t = 0; t < s->nsteps; t++)
        k += has[t];
    free(has);
    return k;
}

static const ccs_coll_t colls[] = {
    CCS_COLL_ALLGATHER, CCS_COLL_REDUCESCATTER, CCS_COLL_ALLREDUCE,
};

/* Every collective on every topology, with and without pipelining, passes
 * the symbolic verifier and takes (T + P - 1) steps per phase. */
TEST(schedules_verify)
{
    for (size_t i = 0; i < NTOPOS; i++) {
        tb_t *b = topos[i].make();
        mtree_t *m = NULL;
        CHECK_STATUS(mtree_build_best(&b->t, MTREE_CHILDREN_ANY, &m, NULL),
                     CCS_OK);
        for (size_t c = 0; m != NULL && c < 3; c++) {
            for (uint32_t P = 1; P <= 3; P += 2) {
                algo_params_t p;
                ccs_sched_t *s = NULL;
                verify_report_t rep;
                ccs_err_t err = { { 0 } };
                ccs_status_t st;
                uint32_t span = (uint32_t)m->nsteps + P - 1;

                algo_params_init(&p);
                p.coll = colls[c];
                p.pipeline = P;
                st = algo_synthesize("multitree", &b->t, &p, &s, &err);
                CHECK_MSG(st == CCS_OK, "%s %s P=%u: %s", topos[i].name,
                          ccs_coll_str(colls[c]), P, err.msg);
                if (st != CCS_OK)
                    continue;
                CHECK_EQ_INT(s->nchunks, b->t.ngpus * P);
                /* All-gather: exactly T + P - 1; the reduce-scatter may add
                 * local merge steps (no transfers in them). */
                if (colls[c] == CCS_COLL_ALLGATHER)
                    CHECK_EQ_INT(s->nsteps, span);
                else
                    CHECK(s->nsteps >= (colls[c] == CCS_COLL_ALLREDUCE
                                            ? 2 * span : span));
                /* Unpipelined, transfers fill exactly T steps per
                 * phase. */
                if (P == 1)
                    CHECK_EQ_INT(transfer_steps(s), colls[c] ==
                                 CCS_COLL_ALLREDUCE ? 2 * span : span);
                st = verify_sched(s, &rep, &err);
                CHECK_MSG(st == CCS_OK, "%s %s P=%u: verify: %s",
                          topos[i].name, ccs_coll_str(colls[c]), P, err.msg);
                ccs_sched_destroy(s);
            }
        }
        mtree_destroy(m);
        tb_free(b);
    }
}

TEST(chunk_options)
{
    tb_t *b = mk_ring8();
    algo_params_t p;
    ccs_sched_t *s = NULL;
    ccs_err_t err = { { 0 } };

    algo_params_init(&p);
    p.nchunks = 12;
    CHECK_STATUS(algo_synthesize("multitree", &b->t, &p, &s, &err),
                 CCS_ERR_UNSUPPORTED);
    CHECK_STR_CONTAINS(err.msg, "multiple");
    p.nchunks = 16;
    CHECK_STATUS(algo_synthesize("multitree", &b->t, &p, &s, &err), CCS_OK);
    if (s != NULL)
        CHECK_EQ_INT(s->nchunks, 16);
    ccs_sched_destroy(s);
    s = NULL;
    p.coll = CCS_COLL_BROADCAST;
    CHECK_STATUS(algo_synthesize("multitree", &b->t, &p, &s, &err),
                 CCS_ERR_UNSUPPORTED);
    tb_free(b);
}

TEST(report_line)
{
    tb_t *b = mk_torus4();
    algo_params_t p;
    algo_report_t rep;          /* owned here */
    ccs_sched_t *s = NULL;
    char buf[256] = { 0 };
    FILE *f = fmemopen(buf, sizeof(buf) - 1, "w");

    algo_params_init(&p);
    algo_report_init(&rep);
    p.coll = CCS_COLL_ALLGATHER;
    CHECK_STATUS(algo_synthesize_report("multitree", &b->t, &p, &s, &rep,
                                        NULL), CCS_OK);
    algo_report_print(&rep, f);
    algo_report_free(&rep);
    fclose(f);
    CHECK_STR_CONTAINS(buf, "multitree: allgather T=");
    CHECK_STR_CONTAINS(buf, "(lower bound 4)");
    ccs_sched_destroy(s);
    tb_free(b);
}

TEST(dot_output)
{
    tb_t *b = mk_fattree();
    mtree_t *m = NULL;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    int clusters = 0;

    CHECK_STATUS(mtree_build(&b->t, NULL, &m, NULL), CCS_OK);
    if (m != NULL)
        CHECK_STATUS(mtree_write_dot(m, &b->t, f), CCS_OK);
    fclose(f);
    CHECK_STR_CONTAINS(buf, "digraph multitree");
    CHECK_STR_CONTAINS(buf, "/sw");   /* switch path labels */
    for (const char *q = buf; q && (q = strstr(q, "subgraph cluster_"));
         q++)
        clusters++;
    CHECK_EQ_INT(clusters, 16);
    free(buf);
    mtree_destroy(m);
    tb_free(b);
}

/* The built-in specs, when topo.c provides them. */
TEST(builtin_topologies)
{
    static const char *specs[] = {
        "torus:4x4", "torus:8x8", "mesh:4x4", "mesh:8x8", "ring:8",
        "switch:8", "dgx1", "fattree:4x4", "dgx-h100", "cluster:2x8",
    };
    int loaded = 0;

    for (size_t i = 0; i < sizeof(specs) / sizeof(specs[0]); i++) {
        topo_t *t = NULL;
        mtree_t *m = NULL;
        ccs_err_t err = { { 0 } };
        if (topo_load(specs[i], NULL, &t, &err) != CCS_OK)
            continue;
        loaded++;
        CHECK_STATUS(mtree_build_best(t, MTREE_CHILDREN_ANY, &m, &err),
                     CCS_OK);
        if (m != NULL) {
            check_trees(m, t);
            printf("  %-12s T=%d (lower bound %d)\n", specs[i], m->nsteps,
                   m->lower_bound);
        }
        for (size_t c = 0; m != NULL && c < 3; c++) {
            algo_params_t p;
            ccs_sched_t *s = NULL;
            algo_params_init(&p);
            p.coll = colls[c];
            CHECK_STATUS(algo_synthesize("multitree", t, &p, &s, &err),
                         CCS_OK);
            if (s != NULL)
                CHECK_MSG(verify_sched(s, NULL, &err) == CCS_OK,
                          "%s %s: %s", specs[i], ccs_coll_str(colls[c]),
                          err.msg);
            ccs_sched_destroy(s);
        }
        mtree_destroy(m);
        topo_destroy(t);
    }
    printf("  built-in topologies loaded: %d\n", loaded);
}

/* Every switched edge (path of 2 or more links) follows topo_route from
 * the parent's node to the child's, up to the choice among parallel links
 * (one pipe in the simulator): the link accounting of the trees is then
 * exactly what the simulator will load.  Hand-built (no igraph, GPUs do
 * not forward) and built-in topologies. */
static void check_routes(const mtree_t *m, const topo_t *t, const char *name)
{
    int32_t n = m->nranks, route[64], bad = 0;

    for (int32_t i = 0; i < n * (n - 1); i++) {
        const mtree_edge_t *e = &m->edges[i];
        int32_t h = 0;

        if (e->path_len < 2)
            continue;
        if (topo_route(t, t->rank_node[e->parent], t->rank_node[e->child],
                       route, 64, &h, NULL) != CCS_OK || h != e->path_len) {
            bad++;
            continue;
        }
        for (int32_t k = 0; k < h; k++) {
            const topo_link_t *a = &t->links[m->path_links[e->path_off + k]];
            const topo_link_t *b = &t->links[route[k]];
            if (a->src != b->src || a->dst != b->dst) {
                bad++;
                break;
            }
        }
    }
    CHECK_MSG(bad == 0, "%s: %d switched edges leave topo_route's path",
              name, (int)bad);
}

TEST(switched_edges_follow_routes)
{
    static const char *specs[] = {
        "fattree:4x4", "fattree:4x4x2", "fattree:8x8", "switch:8",
        "cluster:2x8", "cluster:2x4,nics=gpu",
    };
    tb_t *b = mk_fattree();
    mtree_t *m = NULL;

    CHECK_STATUS(mtree_build_best(&b->t, MTREE_CHILDREN_ANY, &m, NULL),
                 CCS_OK);
    if (m != NULL)
        check_routes(m, &b->t, "hand-built fattree");
    mtree_destroy(m);
    tb_free(b);
    for (size_t i = 0; i < sizeof(specs) / sizeof(specs[0]); i++) {
        topo_t *t = NULL;
        m = NULL;
        if (topo_load(specs[i], NULL, &t, NULL) != CCS_OK)
            continue;
        CHECK_STATUS(mtree_build_best(t, MTREE_CHILDREN_ANY, &m, NULL),
                     CCS_OK);
        if (m != NULL) {
            check_trees(m, t);
            check_routes(m, t, specs[i]);
        }
        mtree_destroy(m);
        topo_destroy(t);
    }
}

/* Full-bisection fat-trees: with D-mod-k routes the trees reach the
 * bound n - 1 (every GPU receives one block per step, as in ring), so the
 * allreduce moves ring's bytes in ring's 2(n - 1) steps; the simulator
 * must then find it no slower than ring for large buffers (with every
 * route through spine 0 it was 1.7-2x slower).
 * Also one switch (switch:16, dgx-h100) and two servers (cluster:2x8).
 * One chunk per tree, 64 MiB to 1 GiB, per-rank mode. */
TEST(fattree_no_slower_than_ring)
{
    static const struct {
        const char *spec;
        int32_t T;
    } cases[] = {
        { "fattree:4x4", 15 }, { "fattree:8x8", 63 },
        { "fattree:4x4x2", 15 }, { "switch:16", 15 }, { "dgx-h100", 7 },
        { "cluster:2x8", -1 },   /* T above the bound: NVLink vs NIC */
    };
    static const double sizes[] = { 64.0 * 1048576, 256.0 * 1048576,
                                    1073741824.0 };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        topo_t *t = NULL;
        mtree_t *m = NULL;
        ccs_sched_t *ring = NULL, *mt = NULL;
        sim_result_t rr, rm;
        algo_params_t p;
        ccs_err_t err = { { 0 } };

        memset(&rr, 0, sizeof(rr));
        memset(&rm, 0, sizeof(rm));
        if (topo_load(cases[i].spec, NULL, &t, NULL) != CCS_OK)
            continue;
        CHECK_STATUS(mtree_build_best(t, MTREE_CHILDREN_ANY, &m, NULL),
                     CCS_OK);
        if (m != NULL && cases[i].T > 0)
            CHECK_MSG(m->nsteps == cases[i].T && m->lower_bound ==
                      cases[i].T, "%s: T=%d (bound %d), want %d",
                      cases[i].spec, m->nsteps, m->lower_bound,
                      cases[i].T);
        algo_params_init(&p);
        p.coll = CCS_COLL_ALLREDUCE;
        CHECK_STATUS(algo_synthesize("ring", t, &p, &ring, &err), CCS_OK);
        CHECK_STATUS(algo_synthesize("multitree", t, &p, &mt, &err),
                     CCS_OK);
        for (size_t k = 0; ring != NULL && mt != NULL &&
                           k < sizeof(sizes) / sizeof(sizes[0]); k++) {
            CHECK_STATUS(sim_run(ring, t, sizes[k], NULL, &rr, &err),
                         CCS_OK);
            CHECK_STATUS(sim_run(mt, t, sizes[k], NULL, &rm, &err), CCS_OK);
            CHECK_MSG(rm.time_s <= rr.time_s * (1 + 1e-9), "%s %.0f B: "
                      "multitree %.1f us, ring %.1f us", cases[i].spec,
                      sizes[k], rm.time_s * 1e6, rr.time_s * 1e6);
            printf("  %-14s %5.0f MiB allreduce: multitree %.1f us, ring "
                   "%.1f us\n", cases[i].spec, sizes[k] / 1048576,
                   rm.time_s * 1e6, rr.time_s * 1e6);
            sim_result_free(&rr);
            sim_result_free(&rm);
        }
        ccs_sched_destroy(ring);
        ccs_sched_destroy(mt);
        mtree_destroy(m);
        topo_destroy(t);
    }
}

/* `ccsynth show --dot` draws the trees of a .ccs file by reading them back
 * from its transfers: on every topology, collective and pipelining factor
 * that gives exactly the trees mtree_build_best made (parents and steps). */
TEST(trees_read_back_from_schedules)
{
    for (size_t i = 0; i < NTOPOS; i++) {
        tb_t *b = topos[i].make();
        mtree_t *m = NULL;
        int32_t n = b->t.ngpus;

        CHECK_STATUS(mtree_build_best(&b->t, MTREE_CHILDREN_ANY, &m, NULL),
                     CCS_OK);
        for (size_t c = 0; m != NULL && c < 3; c++) {
            for (uint32_t P = 1; P <= 3; P += 2) {
                algo_params_t p;
                ccs_sched_t *s = NULL;
                mtree_t *back = NULL;
                ccs_err_t err = { { 0 } };
                ccs_status_t st;
                int32_t bad = 0;

                algo_params_init(&p);
                p.coll = colls[c];
                p.pipeline = P;
                CHECK_STATUS(algo_synthesize("multitree", &b->t, &p, &s,
                                             NULL), CCS_OK);
                if (s == NULL)
                    continue;
                st = mtree_from_sched(s, &back, &err);
                CHECK_MSG(st == CCS_OK, "%s %s P=%u: %s", topos[i].name,
                          ccs_coll_str(colls[c]), P, err.msg);
                if (back != NULL) {
                    CHECK_EQ_INT(back->nranks, n);
                    CHECK_EQ_INT(back->nsteps, m->nsteps);
                    for (int32_t k = 0; k < n * n; k++)
                        bad += back->parent[k] != m->parent[k] ||
                               back->join_step[k] != m->join_step[k];
                    for (int32_t r = 0; r < n; r++)
                        bad += back->height[r] != m->height[r];
                    CHECK_MSG(bad == 0, "%s %s P=%u: %d parents, steps or "
                              "heights differ from the built trees",
                              topos[i].name, ccs_coll_str(colls[c]), P,
                              (int)bad);
                }
                mtree_destroy(back);
                ccs_sched_destroy(s);
            }
        }
        mtree_destroy(m);
        tb_free(b);
    }
}

/* Schedules that are not MultiTree's trees are refused with a message. */
TEST(trees_read_back_refuses)
{
    static const struct {
        const char *algo;
        ccs_coll_t coll;
        bool corrupt;          /* send another tree's block once */
        ccs_status_t want;
        const char *msg;
    } cases[] = {
        { "ring", CCS_COLL_ALLREDUCE, false, CCS_ERR_VERIFY, "tree" },
        { "multitree", CCS_COLL_ALLGATHER, true, CCS_ERR_VERIFY, "step" },
        { "dbtree", CCS_COLL_BROADCAST, false, CCS_ERR_UNSUPPORTED,
          "broadcast" },
    };
    tb_t *b = mk_torus4();

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        algo_params_t p;
        ccs_sched_t *s = NULL;
        mtree_t *m = NULL;
        ccs_err_t err = { { 0 } };

        algo_params_init(&p);
        p.coll = cases[i].coll;
        CHECK_STATUS(algo_synthesize(cases[i].algo, &b->t, &p, &s, &err),
                     CCS_OK);
        if (s == NULL)
            continue;
        if (cases[i].corrupt) {
            /* rank 5's first send of step 1 carries block +1 instead */
            for (uint32_t j = 0; j < s->rank_nops[5]; j++) {
                ccs_op_t *op = &s->rank_ops[5][j];
                if (op->step == 1 && op->kind == CCS_OP_SEND) {
                    op->chunk = (op->chunk + 1) % s->nchunks;
                    break;
                }
            }
        }
        CHECK_STATUS(mtree_from_sched(s, &m, &err), cases[i].want);
        CHECK_STR_CONTAINS(err.msg, cases[i].msg);
        CHECK(m == NULL);
        printf("  %s %s: %s\n", cases[i].algo, ccs_coll_str(cases[i].coll),
               err.msg);
        ccs_sched_destroy(s);
    }
    tb_free(b);
}

/* The emitted schedules, not only the trees: route every transfer of
 * every step with topo_route (as the simulator does) and count the blocks
 * each directed pipe (the links from one node to the next, which the
 * simulator merges) carries; no pipe may carry more than its capacity in
 * units, k = max(1, round(bw / min_bw)) per link -- once per step for
 * the unit links of a torus or mesh.  Allreduce (the reduce-scatter's
 * reversed edges and the all-gather), one chunk per tree. */
TEST(schedule_steps_use_each_link_once)
{
    static const char *specs[] = {
        "torus:4x4", "torus:8x8", "mesh:4x4", "mesh:8x8", "dgx1",
        "fattree:4x4", "switch:8", "cluster:2x8",
    };
    for (size_t i = 0; i < sizeof(specs) / sizeof(specs[0]); i++) {
        topo_t *t = NULL;
        ccs_sched_t *s = NULL;
        algo_params_t p;
        ccs_err_t err = { { 0 } };
        int32_t *cap = NULL, *use = NULL, route[64], over = 0, maxuse = 0;
        double minbw = 1e300;

        if (topo_load(specs[i], NULL, &t, NULL) != CCS_OK)
            continue;
        algo_params_init(&p);
        p.coll = CCS_COLL_ALLREDUCE;
        CHECK_STATUS(algo_synthesize("multitree", t, &p, &s, &err), CCS_OK);
        cap = calloc((size_t)t->nlinks, sizeof(int32_t));
        use = calloc((size_t)t->nlinks, sizeof(int32_t));
        if (s == NULL || cap == NULL || use == NULL)
            goto next;
        for (int32_t l = 0; l < t->nlinks; l++)
            if (t->links[l].bw_Bps < minbw)
                minbw = t->links[l].bw_Bps;
        /* a pipe's capacity, kept on its lowest link id */
        for (int32_t l = 0; l < t->nlinks; l++) {
            int32_t ids[64], k = (int32_t)(t->links[l].bw_Bps / minbw + 0.5);
            topo_links_between(t, t->links[l].src, t->links[l].dst, ids, 64);
            cap[ids[0]] += k < 1 ? 1 : k;
        }
        for (uint32_t step = 0; step < s->nsteps; step++) {
            memset(use, 0, sizeof(int32_t) * (size_t)t->nlinks);
            for (uint32_t r = 0; r < s->nranks; r++) {
                for (uint32_t j = 0; j < s->rank_nops[r]; j++) {
                    const ccs_op_t *op = &s->rank_ops[r][j];
                    int32_t h = 0;
                    if (op->step != step || op->kind != CCS_OP_SEND)
                        continue;
                    CHECK_STATUS(topo_route(t, t->rank_node[r],
                                            t->rank_node[op->peer], route,
                                            64, &h, NULL), CCS_OK);
                    for (int32_t k = 0; k < h; k++) {
                        const topo_link_t *l = &t->links[route[k]];
                        int32_t ids[64];
                        topo_links_between(t, l->src, l->dst, ids, 64);
                        if (++use[ids[0]] > cap[ids[0]])
                            over++;
                        if (use[ids[0]] > maxuse)
                            maxuse = use[ids[0]];
                    }
                }
            }
        }
        CHECK_MSG(over == 0, "%s: %d times a pipe carried more blocks in "
                  "one step than its capacity", specs[i], (int)over);
        printf("  %-12s most blocks on one pipe in one step: %d\n", specs[i],
               (int)maxuse);
    next:
        free(cap);
        free(use);
        ccs_sched_destroy(s);
        topo_destroy(t);
    }
}

/* The simulation target, with the paper's torus parameters (the
 * built-in torus:8x8: 16 GB/s links, 150 ns): MultiTree's allreduce is
 * faster than ring and than double binary tree at every size from 32 KiB
 * to 64 MiB, and at least 2x faster than ring at 64 MiB (the paper: 2.2-2.3x
 * in BookSim). */
TEST(torus8x8_beats_ring_and_dbtree)
{
    static const char *algos[] = { "multitree", "ring", "dbtree" };
    topo_t *t = NULL;
    ccs_sched_t *s[3] = { NULL, NULL, NULL };
    sim_t *sim[3] = { NULL, NULL, NULL };
    double last[3] = { 0, 0, 0 };

    if (topo_load("torus:8x8", NULL, &t, NULL) != CCS_OK) {
        FAIL_AT("torus:8x8 does not load");
        return;
    }
    CHECK_NEAR(t->links[0].bw_Bps, 16e9, 1e-12);
    CHECK_NEAR(t->links[0].alpha_s, 150e-9, 1e-12);
    for (int a = 0; a < 3; a++) {
        algo_params_t p;
        ccs_err_t err = { { 0 } };
        algo_params_init(&p);
        p.coll = CCS_COLL_ALLREDUCE;
        CHECK_STATUS(algo_synthesize(algos[a], t, &p, &s[a], &err), CCS_OK);
        if (s[a] != NULL)
            CHECK_STATUS(sim_create(s[a], t, NULL, &sim[a], &err), CCS_OK);
    }
    for (double size = 32768; sim[0] && sim[1] && sim[2] &&
                              size <= 64.0 * 1048576; size *= 2) {
        for (int a = 0; a < 3; a++) {
            sim_result_t r;
            CHECK_STATUS(sim_exec(sim[a], size, NULL, &r, NULL), CCS_OK);
            last[a] = r.time_s;
            sim_result_free(&r);
        }
        CHECK_MSG(last[0] < last[1] && last[0] < last[2], "%.0f B: "
                  "multitree %.2f us, ring %.2f us, dbtree %.2f us", size,
                  last[0] * 1e6, last[1] * 1e6, last[2] * 1e6);
    }
    CHECK_MSG(last[1] >= 2 * last[0], "64 MiB: ring %.1f us is not 2x "
              "multitree's %.1f us", last[1] * 1e6, last[0] * 1e6);
    printf("  torus:8x8 64 MiB allreduce: multitree %.1f us, ring %.1f us "
           "(%.2fx), dbtree %.1f us\n", last[0] * 1e6, last[1] * 1e6,
           last[1] / last[0], last[2] * 1e6);
    for (int a = 0; a < 3; a++) {
        sim_destroy(sim[a]);
        ccs_sched_destroy(s[a]);
    }
    topo_destroy(t);
}

/* The trees come back in the report, for the caller to draw; an
 * unwritable DOT path is the writer's I/O error, naming the path. */
TEST(trees_in_report)
{
    tb_t *b = mk_torus4();
    algo_params_t p;
    algo_report_t rep;          /* owned here */
    ccs_sched_t *s = NULL;
    ccs_err_t err = { { 0 } };
    char *buf = NULL;           /* owned here: the drawing */
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);

    algo_params_init(&p);
    algo_report_init(&rep);
    p.coll = CCS_COLL_ALLREDUCE;
    CHECK_STATUS(algo_synthesize_report("multitree", &b->t, &p, &s, &rep,
                                        &err), CCS_OK);
    CHECK(rep.trees != NULL);
    if (rep.trees != NULL && f != NULL) {
        CHECK_STATUS(mtree_write_dot(rep.trees, &b->t, f), CCS_OK);
        fflush(f);
        CHECK_STR_CONTAINS(buf, "T=5 steps");
        CHECK_STR_CONTAINS(buf, "digraph multitree");
        CHECK_STATUS(cli_write_trees_dot(rep.trees, &b->t,
                                         "/nonexistent-dir/trees.dot", &err),
                     CCS_ERR_IO);
        CHECK_STR_CONTAINS(err.msg, "/nonexistent-dir/trees.dot");
    }
    if (f != NULL)
        fclose(f);
    free(buf);
    algo_report_free(&rep);
    algo_report_free(NULL);
    ccs_sched_destroy(s);
    tb_free(b);
}

/* The emission counts each rank's ops before emitting them and reserves
 * exactly that room: after the build (before ccs_sched_finalize may sort
 * and reallocate), every stream's capacity equals its op count.  A count
 * that is short would have made the stream grow by doubling, one that is
 * long would leave room unused. */
TEST(emission_reserves_exact_counts)
{
    static const char *specs[] = { "torus:4x4", "mesh:4x4", "fattree:4x4",
                                   "cluster:2x8" };
    static const uint32_t pipes[] = { 1, 3 };
    const algo_desc_t *a = algo_find("multitree");

    CHECK(a != NULL);
    for (size_t i = 0; a != NULL && i < sizeof(specs) / sizeof(*specs); i++) {
        topo_t *t = NULL;
        ccs_err_t err = { { 0 } };

        CHECK_STATUS(topo_load(specs[i], NULL, &t, &err), CCS_OK);
        for (size_t c = 0; t != NULL && c < 3; c++) {
            for (size_t k = 0; k < 2; k++) {
                algo_params_t p;
                ccs_sched_t *s = NULL;
                uint32_t bad = 0;

                algo_params_init(&p);
                p.coll = colls[c];
                p.pipeline = pipes[k];
                CHECK_STATUS(a->build(t, &p, &s, NULL, &err), CCS_OK);
                for (uint32_t r = 0; s != NULL && r < s->nranks; r++)
                    bad += s->rank_cap[r] != s->rank_nops[r];
                CHECK_MSG(s != NULL && bad == 0, "%s %s P=%u: %u ranks with "
                          "room for other than their ops", specs[i],
                          ccs_coll_str(colls[c]), pipes[k], bad);
                ccs_sched_destroy(s);
            }
        }
        topo_destroy(t);
    }
}

/* ccs_format_write_file streams the encoding a block of op records at a
 * time: the file holds exactly ccs_format_encode's bytes, for a schedule
 * of a few blocks (torus:16x16 allreduce, about 260 000 ops) and one of
 * less than a block. */
TEST(written_file_is_the_encoding)
{
    static const char *specs[] = { "torus:4x4", "torus:16x16" };
    char dir[] = "/tmp/ccs_test_multitree_XXXXXX";
    char path[64];

    CHECK(mkdtemp(dir) != NULL);
    snprintf(path, sizeof(path), "%s/plan.ccs", dir);
    for (size_t i = 0; i < sizeof(specs) / sizeof(*specs); i++) {
        topo_t *t = NULL;
        ccs_sched_t *s = NULL;
        ccs_err_t err = { { 0 } };
        algo_params_t p;
        uint8_t *enc = NULL, *file = NULL;     /* both owned here */
        size_t len = 0, flen = 0;
        FILE *f;

        CHECK_STATUS(topo_load(specs[i], NULL, &t, &err), CCS_OK);
        algo_params_init(&p);
        p.coll = CCS_COLL_ALLREDUCE;
        if (t != NULL)
            CHECK_STATUS(algo_synthesize("multitree", t, &p, &s, &err),
                         CCS_OK);
        if (s == NULL) {
            topo_destroy(t);
            continue;
        }
        CHECK_STATUS(ccs_format_encode(s, &enc, &len, &err), CCS_OK);
        CHECK_STATUS(ccs_format_write_file(s, path, &err), CCS_OK);
        f = fopen(path, "rb");
        CHECK(f != NULL);
        if (f != NULL) {
            file = malloc(len + 1);
            flen = file != NULL ? fread(file, 1, len + 1, f) : 0;
            fclose(f);
        }
        CHECK_MSG(enc != NULL && file != NULL && flen == len &&
                  memcmp(enc, file, len) == 0, "%s: the file (%zu bytes) "
                  "is not the encoding (%zu bytes)", specs[i], flen, len);
        /* nothing is left behind where the file cannot be written */
        CHECK_STATUS(ccs_format_write_file(s, "/nonexistent-dir/plan.ccs",
                                           &err), CCS_ERR_IO);
        CHECK_STR_CONTAINS(err.msg, "/nonexistent-dir/plan.ccs");
        free(enc);
        free(file);
        ccs_sched_destroy(s);
        topo_destroy(t);
    }
    unlink(path);
    rmdir(dir);
}

int main(void)
{
    topo_global_init();
    RUN(trees_span_and_respect_links);
    RUN(step_counts_meet_paper);
    RUN(wide_links_count_as_parallel);
    RUN(deterministic);
    RUN(switch_paths);
    RUN(disconnected_is_an_error);
    RUN(schedules_verify);
    RUN(chunk_options);
    RUN(report_line);
    RUN(dot_output);
    RUN(builtin_topologies);
    RUN(switched_edges_follow_routes);
    RUN(fattree_no_slower_than_ring);
    RUN(trees_in_report);
    RUN(schedule_steps_use_each_link_once);
    RUN(trees_read_back_from_schedules);
    RUN(trees_read_back_refuses);
    RUN(torus8x8_beats_ring_and_dbtree);
    RUN(emission_reserves_exact_counts);
    RUN(written_file_is_the_encoding);
    return TEST_SUMMARY();
}
