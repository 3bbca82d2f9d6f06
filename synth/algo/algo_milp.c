/*
 * algo_milp.c - AdapCC's synthesizer (Wang et al., "AdapCC: Making
 * Collective Communication in Distributed Machine Learning Adaptive",
 * ICDCS'24, Sec. IV-D, eqs. 1-6): M parallel sub-collectives, each with its
 * own communication tree, root, share S_m of the data and pipelining chunk
 * size C_m, decided by a MILP (milp_model.c, solved with GLPK's
 * glp_intopt, warm-started from the parallel-tree heuristic of
 * milp_heur.c, which is also the fallback when a limit leaves the solver
 * without an incumbent).  The model: docs/milp.md.
 *
 * IR emitted (trees; allreduce = reduce then broadcast on the same tree):
 * sub m owns chunks [off_m, off_m + c_m), cut into pieces of q_m chunks.
 * Every GPU aggregates (a_{m,g} = 1): a child c sends piece j to its parent
 * in step e_c + j; the children of one parent get distinct e (the IR lets
 * no two receives write one chunk in a step), and a parent sends after its
 * last child, e_u = max over children + 1 or later.  The root broadcasts
 * piece j in step R + j, a GPU at depth d forwards it in step R + j + d.
 * Alltoall: one step of direct sends (and first legs of relayed flows into
 * SCRATCH), a second step for the relays' second legs.
 *
 * Cost (alpha-beta, what the model charges): with L the busiest link's
 * bytes / bandwidth over all subs (link sharing), H the piece latency up
 * and down the deepest path and P pieces per sub,
 *   T ~ L + H + (P - 1) alpha.
 * On the heterogeneous cluster the plan keeps the reduction inside each
 * server (NVLink) and gives each 100 Gb/s server the root of one sub, so
 * every NIC carries about the same time's worth of bytes.
 */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "algo.h"
#include "milp_heur.h"
#include "milp_model.h"
#include "mtree.h"

#define MILP_DEFAULT_SIZE (256.0 * 1024 * 1024)
/* With M chosen by default, tree models above this many arcs are not
 * solved: the heuristic's plan is used.  On one switch M = n gives n^2
 * (n - 1) arcs, about 4.4 rows each.  Measured at M = n: switch:17 (4624
 * arcs, 20436 rows) solves in 4.0 s; switch:18 (5508) in 6.6 s and
 * switch:19 (6498) in 11.6 s, past the 10 s default time limit, both only
 * confirming the heuristic's plan (same simulated time); on switch:20
 * (7600) the root LP alone does not finish in 10 s, so the outcome would
 * depend on the machine's speed (docs/milp.md, "Uniform switch above
 * 17 GPUs"). */
#define MILP_DEFAULT_MAX_ARCS 5500
#define MILP_DEFAULT_CANDS "256K,1M,4M,16M,64M"
#define MILP_MAX_CHUNKS 4096u

#define MILP_COLLS                                                         \
    (ALGO_COLL_BIT(CCS_COLL_ALLREDUCE) | ALGO_COLL_BIT(CCS_COLL_REDUCE) |  \
     ALGO_COLL_BIT(CCS_COLL_BROADCAST) | ALGO_COLL_BIT(CCS_COLL_ALLTOALL))

/* "256K,1M" -> bytes (binary suffixes K, M, G; optional trailing B). */
static ccs_status_t parse_sizes(const char *list, double *out, int32_t *n,
                                ccs_err_t *err)
{
    const char *s = list;

    *n = 0;
    while (*s != '\0') {
        char *end;
        double v = strtod(s, &end);

        if (end == s || !(v > 0) || !isfinite(v))
            return ccs_err_set(err, CCS_ERR_INVALID,
                               "milp: bad chunk size list '%s'", list);
        switch (toupper((unsigned char)*end)) {
        case 'K': v *= 1024; end++; break;
        case 'M': v *= 1024 * 1024; end++; break;
        case 'G': v *= 1024.0 * 1024 * 1024; end++; break;
        default: break;
        }
        if (toupper((unsigned char)*end) == 'B')
            end++;
        if (*end != ',' && *end != '\0')
            return ccs_err_set(err, CCS_ERR_INVALID,
                               "milp: bad chunk size list '%s'", list);
        if (*n >= MILP_MAX_CAND)
            return ccs_err_set(err, CCS_ERR_INVALID,
                               "milp: at most %d candidate chunk sizes",
                               MILP_MAX_CAND);
        out[(*n)++] = v;
        s = *end == ',' ? end + 1 : end;
    }
    if (*n == 0)
        return ccs_err_set(err, CCS_ERR_INVALID,
                           "milp: empty chunk size list");
    return CCS_OK;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

/* The instance: M, chunking and candidate piece sizes from the options. */
static ccs_status_t make_spec(const milp_net_t *net, const algo_params_t *p,
                              milp_spec_t *sp, ccs_err_t *err)
{
    double cands[MILP_MAX_CAND];
    double size = p->size_bytes > 0 ? p->size_bytes : MILP_DEFAULT_SIZE;
    double unit;
    int32_t nc = 0, n = net->n;
    uint64_t c;
    ccs_status_t st;

    memset(sp, 0, sizeof(*sp));
    sp->coll = p->coll;
    sp->root = ccs_coll_rooted(p->coll) ? p->root : -1;
    sp->seed = p->seed;
    if (p->milp.m > 0)
        sp->m = (int32_t)p->milp.m;
    else if (net->nsrv > 1)
        /* One sub rooted in each server: inter-server traffic balanced
         * as by rotated roots on one switch (docs/milp.md, "Default M
         * across servers").  Was min(servers, 4): 8% slower than ring on
         * cluster:6x4, 10% on cluster:16x4; the hetero cluster loses
         * 0.1% (M = 6 against the best M = 4, its four fast servers). */
        sp->m = net->nsrv;
    else if (!net->direct)
        sp->m = n;   /* one switch: rotated roots (n <= MILP_MAX_M) */
    else
        sp->m = n <= 8 ? n : 4;   /* direct network: rotated roots */
    if (p->coll == CCS_COLL_ALLTOALL) {
        if (p->milp.m > 1)
            return ccs_err_set(err, CCS_ERR_INVALID,
                               "milp: alltoall is one sub-collective (its "
                               "model routes each block); M = %u",
                               p->milp.m);
        sp->m = 1;
    }
    if (sp->m > MILP_MAX_M)
        return ccs_err_set(err, CCS_ERR_INVALID, "milp: M = %d (1..%d)",
                           sp->m, MILP_MAX_M);
    st = parse_sizes(p->milp.chunk_sizes != NULL ? p->milp.chunk_sizes
                                            : MILP_DEFAULT_CANDS,
                     cands, &nc, err);
    if (st != CCS_OK)
        return st;
    qsort(cands, (size_t)nc, sizeof(cands[0]), cmp_double);
    /* One IR chunk: the smallest candidate, coarser when that would make
     * more than MILP_MAX_CHUNKS chunks. */
    unit = fmax(cands[0], size / MILP_MAX_CHUNKS);
    c = (uint64_t)ceil(size / unit - 1e-9);
    if (c < (uint64_t)sp->m)
        c = (uint64_t)sp->m;
    if (p->coll == CCS_COLL_ALLTOALL)
        c = (c + (uint64_t)n - 1) / (uint64_t)n * (uint64_t)n;
    if (c > MILP_MAX_CHUNKS * 2u)
        return ccs_err_set(err, CCS_ERR_INVALID,
                           "milp: %llu chunks is too many",
                           (unsigned long long)c);
    sp->nchunks = (uint32_t)c;
    sp->unit_bytes = size / (double)c;
    for (int32_t k = 0; k < nc; k++) {
        double q = floor(cands[k] / sp->unit_bytes + 0.5);
        uint32_t qc = q < 1 ? 1 : (q > (double)c ? (uint32_t)c : (uint32_t)q);

        if (sp->ncand == 0 || qc > sp->cand[sp->ncand - 1])
            sp->cand[sp->ncand++] = qc;
    }
    return CCS_OK;
}

static ccs_status_t check_milp(const topo_t *t, const algo_params_t *p,
                               ccs_err_t *err)
{
    (void)p;
    if (t->ngpus > MILP_MAX_RANKS)
        return ccs_err_set(err, CCS_ERR_UNSUPPORTED,
                           "milp: %d GPUs; the model is built for up to %d "
                           "(overlay arcs grow as n^2 per sub-collective)",
                           t->ngpus, MILP_MAX_RANKS);
    return CCS_OK;
}

/* ---- emission ---- */

typedef struct tree_steps {
    int32_t e[MILP_MAX_RANKS];      /* step of piece 0 to the parent */
    int32_t depth[MILP_MAX_RANKS];  /* hops from the root */
    int32_t first[MILP_MAX_RANKS];  /* child whose arrival reads IN */
    int32_t ready;                  /* root's broadcast step of piece 0 */
} tree_steps_t;

/* Send steps: children of a parent in distinct steps, ordered by when
 * they are ready (then by rank); a parent is ready one step after its
 * last child has sent. */
static void tree_schedule(int32_t n, const int32_t *par, int32_t root,
                          bool up, tree_steps_t *ts)
{
    int32_t ready[MILP_MAX_RANKS], order[MILP_MAX_RANKS], cnt = 0;

    for (int32_t u = 0; u < n; u++) {
        int32_t v = u;

        ts->depth[u] = 0;
        while (v != root && ts->depth[u] <= n) {
            v = par[v];
            ts->depth[u]++;
        }
        ready[u] = 0;
        ts->e[u] = -1;
        ts->first[u] = -1;
    }
    for (int32_t d = n; d >= 0; d--)        /* deepest first */
        for (int32_t u = 0; u < n; u++)
            if (ts->depth[u] == d)
                order[cnt++] = u;
    for (int32_t i = 0; i < cnt; i++) {
        int32_t u = order[i], last = -1;

        /* u's children are all deeper, so already ready.  Assign them in
         * (ready, rank) order. */
        for (;;) {
            int32_t pick = -1;

            /* Ties: rank order rotated to start after u, so that the
             * parents of different trees draw on different children in
             * a step (pairwise exchange rather than one rank sending to
             * all parents at once). */
            for (int32_t k = 1; k < n; k++) {
                int32_t c = (u + k) % n;

                if (par[c] == u && ts->e[c] < 0 &&
                    (pick < 0 || ready[c] < ready[pick]))
                    pick = c;
            }
            if (pick < 0)
                break;
            ts->e[pick] = ready[pick] > last + 1 ? ready[pick] : last + 1;
            if (last < 0)
                ts->first[u] = pick;
            last = ts->e[pick];
        }
        ready[u] = last >= 0 ? last + 1 : 0;
    }
    ts->ready = up ? ready[root] : 0;
}

static int32_t max_depth(int32_t n, const tree_steps_t *ts)
{
    int32_t d = 0;

    for (int32_t u = 0; u < n; u++)
        if (ts->depth[u] > d)
            d = ts->depth[u];
    return d;
}

static ccs_status_t ensure_steps(ccs_sched_t *s, uint32_t need,
                                 ccs_err_t *err)
{
    while (s->nsteps < need) {
        uint32_t t;
        ccs_status_t st = ccs_sched_add_step(s, 0, &t, err);

        if (st != CCS_OK)
            return st;
    }
    return CCS_OK;
}

static ccs_status_t emit_trees(const milp_plan_t *pl, ccs_sched_t *s,
                               ccs_err_t *err)
{
    int32_t n = pl->n;
    bool up = milp_coll_up(pl->coll), down = milp_coll_down(pl->coll);
    uint32_t off = 0;
    ccs_status_t st = CCS_OK;

    for (int32_t m = 0; m < pl->m; off += pl->count[m], m++) {
        const int32_t *par = pl->parent + (size_t)m * n;
        int32_t root = pl->root[m];
        uint32_t q = pl->piece[m], cnt = pl->count[m];
        uint32_t pieces = (cnt + q - 1) / q;
        tree_steps_t ts;

        if (cnt == 0)
            continue;
        tree_schedule(n, par, root, up, &ts);
        /* Last step: the deepest GPU receives the last piece. */
        st = ensure_steps(s, (uint32_t)(ts.ready +
                                        (down ? max_depth(n, &ts) : 0)) +
                                 pieces - 1, err);
        if (st != CCS_OK)
            return st;
        for (uint32_t j = 0; j < pieces; j++) {
            uint32_t ch = off + j * q;
            uint32_t len = cnt - j * q < q ? cnt - j * q : q;

            for (int32_t u = 0; up && u < n; u++) {
                int32_t v = par[u];
                bool leaf = true;
                ccs_buf_t sbuf, dbuf;

                if (v < 0)
                    continue;
                for (int32_t c = 0; c < n && leaf; c++)
                    leaf = par[c] != u;
                /* Partial sums live in OUT, except for a reduce, whose
                 * OUT exists only at the root. */
                sbuf = leaf ? CCS_BUF_IN
                            : (pl->coll == CCS_COLL_REDUCE ? CCS_BUF_SCRATCH
                                                           : CCS_BUF_OUT);
                dbuf = (pl->coll == CCS_COLL_REDUCE && v != root)
                           ? CCS_BUF_SCRATCH : CCS_BUF_OUT;
                if (ts.first[v] == u)
                    st = ccs_sched_xfer_reduce_from(
                        s, (uint32_t)ts.e[u] + j, (uint32_t)u, sbuf, ch,
                        (uint32_t)v, dbuf, ch, CCS_BUF_IN, ch, len, err);
                else
                    st = ccs_sched_xfer(s, (uint32_t)ts.e[u] + j,
                                        (uint32_t)u, sbuf, ch, (uint32_t)v,
                                        dbuf, ch, len, true, err);
                if (st != CCS_OK)
                    return st;
            }
            if (!down)
                continue;
            if (!up && j == 0) {
                /* Broadcast: the root's own OUT is a copy of its IN. */
                st = ccs_sched_local(s, 0, (uint32_t)root, CCS_BUF_OUT, off,
                                     CCS_BUF_IN, off, cnt, false, err);
                if (st != CCS_OK)
                    return st;
            }
            for (int32_t u = 0; u < n; u++) {
                int32_t v = par[u];
                ccs_buf_t sbuf = (v == root && !up) ? CCS_BUF_IN
                                                    : CCS_BUF_OUT;

                if (v < 0)
                    continue;
                st = ccs_sched_xfer(s, (uint32_t)(ts.ready + ts.depth[u] -
                                                  1) + j,
                                    (uint32_t)v, sbuf, ch, (uint32_t)u,
                                    CCS_BUF_OUT, ch, len, false, err);
                if (st != CCS_OK)
                    return st;
            }
        }
    }
    return CCS_OK;
}

static ccs_status_t emit_a2a(const milp_plan_t *pl, ccs_sched_t *s,
                             ccs_err_t *err)
{
    int32_t n = pl->n;
    uint32_t b = pl->nchunks / (uint32_t)n;
    uint32_t *slot = calloc((size_t)n, sizeof(uint32_t)); /* owned here */
    ccs_status_t st = CCS_OK;

    if (slot == NULL)
        return ccs_err_set(err, CCS_ERR_NOMEM, "milp: out of memory");
    st = ensure_steps(s, 1, err);
    for (int32_t r = 0; r < n && st == CCS_OK; r++)
        st = ccs_sched_local(s, 0, (uint32_t)r, CCS_BUF_OUT, (uint32_t)r * b,
                             CCS_BUF_IN, (uint32_t)r * b, b, false, err);
    for (int32_t sr = 0; sr < n && st == CCS_OK; sr++) {
        for (int32_t d = 0; d < n && st == CCS_OK; d++) {
            uint32_t done = 0;

            if (sr == d)
                continue;
            /* Direct part first, then relays in rank order. */
            for (int32_t i = -1; i < n && st == CCS_OK; i++) {
                int32_t w = i < 0 ? d : i;
                uint32_t x = pl->a2a[((size_t)sr * n + d) * n + w];
                uint32_t src = (uint32_t)d * b + done;
                uint32_t dst = (uint32_t)sr * b + done;

                if (x == 0 || (i >= 0 && w == d))
                    continue;
                if (w == d) {
                    st = ccs_sched_xfer(s, 0, (uint32_t)sr, CCS_BUF_IN, src,
                                        (uint32_t)d, CCS_BUF_OUT, dst, x,
                                        false, err);
                } else {
                    st = ensure_steps(s, 2, err);
                    if (st == CCS_OK)
                        st = ccs_sched_xfer(s, 0, (uint32_t)sr, CCS_BUF_IN,
                                            src, (uint32_t)w,
                                            CCS_BUF_SCRATCH, slot[w], x,
                                            false, err);
                    if (st == CCS_OK)
                        st = ccs_sched_xfer(s, 1, (uint32_t)w,
                                            CCS_BUF_SCRATCH, slot[w],
                                            (uint32_t)d, CCS_BUF_OUT, dst, x,
                                            false, err);
                    slot[w] += x;
                }
                done += x;
            }
        }
    }
    free(slot);
    return st;
}

static void report_plan(algo_report_t *rep, const milp_plan_t *pl)
{
    int32_t n = pl->n;

    if (pl->coll == CCS_COLL_ALLTOALL) {
        uint64_t relayed = 0;

        for (int32_t s = 0; s < n; s++)
            for (int32_t d = 0; d < n; d++)
                for (int32_t w = 0; w < n; w++)
                    if (w != d && s != d)
                        relayed += pl->a2a[((size_t)s * n + d) * n + w];
        algo_report_addf(rep, "milp: alltoall: %llu chunks relayed",
                         (unsigned long long)relayed);
        return;
    }
    for (int32_t m = 0; m < pl->m; m++) {
        tree_steps_t ts;
        /* n <= MILP_MAX_RANKS parents of at most 3 digits and a sign. */
        char parents[MILP_MAX_RANKS * 5 + 1];
        size_t used = 0;

        tree_schedule(n, pl->parent + (size_t)m * n, pl->root[m], true, &ts);
        parents[0] = '\0';
        for (int32_t u = 0; u < n && used < sizeof(parents); u++) {
            int k = snprintf(parents + used, sizeof(parents) - used, " %d",
                             pl->parent[(size_t)m * n + u]);
            used += k > 0 ? (size_t)k : 0;
        }
        algo_report_addf(rep, "milp: sub %d: root %d, %u chunks, pieces of "
                         "%u, depth %d, parents%s", m, pl->root[m],
                         pl->count[m], pl->piece[m], max_depth(n, &ts),
                         parents);
    }
}

ccs_status_t milp_emit(const topo_t *t, const milp_plan_t *pl, int32_t root,
                       ccs_sched_t **out, ccs_err_t *err)
{
    ccs_sched_t *s = NULL;      /* owned here until *out */
    ccs_status_t st;

    if (pl->n != t->ngpus)
        return ccs_err_set(err, CCS_ERR_INVALID,
                           "milp: plan for %d ranks, topology has %d",
                           pl->n, t->ngpus);
    st = ccs_sched_create(pl->coll, (uint32_t)t->ngpus, pl->nchunks, "milp",
                          &s, err);
    if (st != CCS_OK)
        return st;
    if (ccs_coll_rooted(pl->coll))
        s->root = root;
    st = pl->coll == CCS_COLL_ALLTOALL ? emit_a2a(pl, s, err)
                                       : emit_trees(pl, s, err);
    if (st == CCS_OK)
        st = ccs_sched_finalize(s, err);
    if (st != CCS_OK) {
        ccs_sched_destroy(s);
        return st;
    }
    *out = s;
    return CCS_OK;
}

/* The model's fill term is an estimate (docs/milp.md): on a uniform switch
 * it overrates large pieces, on the heterogeneous cluster it is close.  So
 * the decoded trees and split are kept and the piece size is checked with
 * the caller's cost (the simulator, for the synth command and the tuner):
 * the model's choice first, then every candidate applied to all subs; the
 * cheapest wins (ties: the earlier).  Deterministic. */
static ccs_status_t refine_pieces(const topo_t *t, const algo_params_t *p,
                                  const milp_spec_t *sp, milp_plan_t *pl,
                                  double size, double deadline,
                                  double *t_model_s, double *t_best_s,
                                  ccs_err_t *err)
{
    uint32_t keep[MILP_MAX_M], best[MILP_MAX_M];
    double best_t = INFINITY;
    ccs_status_t st = CCS_OK;

    memcpy(keep, pl->piece, (size_t)pl->m * sizeof(uint32_t));
    memcpy(best, keep, sizeof(best));
    for (int32_t k = -1; k < sp->ncand; k++) {
        ccs_sched_t *s = NULL;
        double time_s = 0;

        for (int32_t m = 0; m < pl->m; m++)
            pl->piece[m] = k < 0 ? keep[m] : sp->cand[k];
        st = milp_emit(t, pl, p->root, &s, err);
        if (st == CCS_OK)
            st = p->milp.cost(p->milp.cost_ctx, t, s, size, &time_s, err);
        ccs_sched_destroy(s);
        if (st != CCS_OK)
            return st;
        if (k < 0)
            *t_model_s = time_s;
        if (time_s < best_t * (1 - 1e-12)) {
            best_t = time_s;
            memcpy(best, pl->piece, (size_t)pl->m * sizeof(uint32_t));
        }
        /* The time limit covers this check too: past it, the model's
         * own piece sizes (or the best tried) stand. */
        if (milp_now_s() >= deadline)
            break;
    }
    memcpy(pl->piece, best, (size_t)pl->m * sizeof(uint32_t));
    *t_best_s = best_t;
    return CCS_OK;
}

/* The heuristic plan from the built-in shapes (*out), and one on
 * external trees as one more candidate (*out_ext; NULL unless they win):
 * MultiTree's (one per root, built top-down and link-balanced: mtree.c)
 * or those of two edge-disjoint Hamiltonian cycles, whichever costs less
 * in the model.  Only on a single group of GPUs (a torus, a mesh, dgx1,
 * one switch), where their arcs are overlay arcs.  Both owned by the
 * caller. */
static ccs_status_t heur_plans(const topo_t *t, const milp_net_t *net,
                               const milp_spec_t *sp, milp_plan_t **out,
                               milp_plan_t **out_ext, ccs_err_t *err)
{
    mtree_t *mt = NULL;         /* owned here */
    int32_t *roots = NULL;      /* owned here */
    milp_plan_t *ext_plan = NULL; /* owned here until *out_ext */
    milp_plan_t *ham_plan = NULL; /* owned here */
    int32_t *hroot = NULL, *hpar = NULL; /* owned here: Hamiltonian trees */
    milp_trees_t ext = { 0, NULL, NULL };
    double beat;
    ccs_status_t st;

    *out_ext = NULL;
    st = milp_heur_plan(net, sp, out, err);
    if (st != CCS_OK || net->nsrv != 1 || sp->coll == CCS_COLL_ALLTOALL)
        return st;
    beat = (*out)->cost_us;
    st = mtree_build(t, NULL, &mt, err);
    if (st != CCS_OK)
        goto cleanup;
    roots = malloc((size_t)mt->nranks * sizeof(*roots));
    if (roots == NULL) {
        st = ccs_err_set(err, CCS_ERR_NOMEM, "milp: out of memory");
        goto cleanup;
    }
    for (int32_t r = 0; r < mt->nranks; r++)
        roots[r] = r;
    ext.ntrees = mt->nranks;
    ext.root = roots;
    ext.parent = mt->parent;
    st = milp_heur_plan_trees(net, sp, &ext, beat, &ext_plan, err);
    if (st != CCS_OK)
        goto cleanup;
    /* Trees from two edge-disjoint Hamiltonian cycles, instead of
     * MultiTree's when cheaper in the model (torus:4x4). */
    st = milp_ham_trees(net, sp, &hroot, &hpar, &ext.ntrees, err);
    if (st != CCS_OK)
        goto cleanup;
    if (ext.ntrees > 0) {
        ext.root = hroot;
        ext.parent = hpar;
        st = milp_heur_plan_trees(net, sp, &ext, beat, &ham_plan, err);
        if (st != CCS_OK)
            goto cleanup;
        /* A missing plan did not beat the built-in shapes: it stands for
         * their cost. */
        if (ham_plan != NULL &&
            ham_plan->cost_us <
                (ext_plan != NULL ? ext_plan->cost_us : beat) * (1 - 1e-9)) {
            milp_plan_t *tmp = ext_plan;

            ext_plan = ham_plan;
            ham_plan = tmp;
        }
    }
    if (ext_plan != NULL && ext_plan->cost_us < beat * (1 - 1e-9)) {
        *out_ext = ext_plan;
        ext_plan = NULL;
    }

cleanup:
    if (st != CCS_OK) {
        milp_plan_destroy(*out);
        *out = NULL;
    }
    milp_plan_destroy(ext_plan);
    milp_plan_destroy(ham_plan);
    free(hroot);
    free(hpar);
    free(roots);
    mtree_destroy(mt);
    return st;
}

/* One solve from one warm start, and the piece-size check of its plan. */
typedef struct milp_run {
    milp_plan_t *heur;          /* owned: the warm start */
    milp_plan_t *sol;           /* owned: the solver's plan, or NULL */
    double *conc;               /* owned: concurrency frozen at heur */
    milp_stats_t stats;
    double t_model_s, t_best_s; /* simulated before / after the check */
} milp_run_t;

static void run_free(milp_run_t *r)
{
    milp_plan_destroy(r->heur);
    milp_plan_destroy(r->sol);
    free(r->conc);
    memset(r, 0, sizeof(*r));
}

static milp_plan_t *run_plan(const milp_run_t *r)
{
    return r->sol != NULL ? r->sol : r->heur;
}

/* Solve from r->heur (owned by r already); fills the rest of r. */
static ccs_status_t run_solve(const topo_t *t, const algo_params_t *p,
                              const milp_net_t *net, const milp_spec_t *sp,
                              const milp_solve_opts_t *so, double size,
                              milp_run_t *r, ccs_err_t *err)
{
    ccs_status_t st = milp_concurrency(net, sp, r->heur, &r->conc, err);

    if (st != CCS_OK)
        return st;
    r->heur->cost_us = milp_plan_cost(net, sp, r->conc, r->heur, NULL);
    st = milp_solve(net, sp, r->conc, r->heur, so, &r->sol, &r->stats, err);
    if (st != CCS_OK || p->coll == CCS_COLL_ALLTOALL ||
        p->milp.cost == NULL)
        return st;
    return refine_pieces(t, p, sp, run_plan(r), size, so->deadline_s,
                         &r->t_model_s, &r->t_best_s, err);
}

static ccs_status_t build_milp(const topo_t *t, const algo_params_t *p,
                               ccs_sched_t **out, algo_report_t *rep,
                               ccs_err_t *err)
{
    milp_net_t *net = NULL;     /* owned here */
    milp_run_t run = { 0 };     /* owned here */
    milp_run_t alt = { 0 };     /* owned here: from the external trees */
    ccs_sched_t *s = NULL;      /* owned here until *out */
    milp_plan_t *use;
    milp_spec_t sp;
    milp_solve_opts_t so;
    const milp_stats_t *stats;
    double size = p->size_bytes > 0 ? p->size_bytes : MILP_DEFAULT_SIZE;
    ccs_status_t st;

    double t0 = milp_now_s();   /* every phase counts against the limit */

    st = milp_net_build(t, &net, err);
    if (st != CCS_OK)
        goto cleanup;
    st = make_spec(net, p, &sp, err);
    if (st != CCS_OK)
        goto cleanup;
    st = heur_plans(t, net, &sp, &run.heur, &alt.heur, err);
    if (st != CCS_OK)
        goto cleanup;
    milp_solve_opts_init(&so);
    if (p->milp.time_limit_s > 0)
        so.time_limit_s = p->milp.time_limit_s;
    if (p->milp.mip_gap >= 0)          /* 0 asks for a proven optimum */
        so.mip_gap = p->milp.mip_gap;
    so.deadline_s = t0 + so.time_limit_s;
    /* Deterministic, sized by the model, unless asked otherwise. */
    so.node_limit = p->milp.nodes == 0 ? -1
                                       : (p->milp.nodes < 0 ? 0
                                                            : p->milp.nodes);
    if (p->milp.want_lp && rep != NULL) {
        free(rep->lp);          /* a report used twice keeps the last */
        rep->lp = NULL;
        so.lp_out = &rep->lp;
    }
    /* A model the user asked for (--milp-m, --write-lp) is always built. */
    so.max_arcs = p->milp.m == 0 && !p->milp.want_lp
                      ? MILP_DEFAULT_MAX_ARCS : 0;
    st = run_solve(t, p, net, &sp, &so, size, &run, err);
    if (st != CCS_OK)
        goto cleanup;
    if (alt.heur != NULL && milp_now_s() >= so.deadline_s) {
        /* No time left for the second solve: the first one stands. */
        run_free(&alt);
        if (rep != NULL)
            algo_report_addf(rep, "milp: time limit reached after the "
                             "first solve: the second warm start was not "
                             "tried");
    }
    if (alt.heur != NULL) {
        /* A second solve from the external trees (a different frozen
         * concurrency, so a different model): the LNS ends in different
         * places from the two starts (torus:4x4: MultiTree's far better;
         * dgx1: the built-in shapes').  The simulator picks; ties keep
         * the first.  The time limit covers both (so.deadline_s). */
        milp_solve_opts_t so2 = so;

        so2.time_limit_s = fmax(so.deadline_s - milp_now_s(), 1e-3);
        so2.lp_out = NULL;
        st = run_solve(t, p, net, &sp, &so2, size, &alt, err);
        if (st != CCS_OK)
            goto cleanup;
        if (alt.t_best_s < run.t_best_s * (1 - 1e-12)) {
            milp_run_t tmp = run;

            run = alt;
            alt = tmp;
        }
    }
    use = run_plan(&run);
    stats = &run.stats;
    if (rep != NULL) {
        if (alt.heur != NULL && p->milp.cost == NULL)
            algo_report_addf(rep, "milp: two warm starts; kept the first "
                             "(no cost function to compare them)");
        else if (alt.heur != NULL)
            algo_report_addf(rep,
                    "milp: two warm starts (built-in shapes, MultiTree's "
                    "or Hamiltonian trees); kept the one simulated at "
                    "%.1f us, not %.1f us",
                    1e6 * run.t_best_s, 1e6 * alt.t_best_s);
        if (stats->too_large) {
            algo_report_addf(rep,
                    "milp: %s, M=%d, C=%u chunks of %.0f B, %d piece "
                    "sizes; model not built: %d arcs, above %d for a "
                    "default M (GLPK would need more than the time "
                    "limit); using the heuristic (--milp-m M builds and "
                    "solves it)",
                    ccs_coll_str(sp.coll), sp.m, sp.nchunks, sp.unit_bytes,
                    sp.ncand, stats->arcs, so.max_arcs);
        } else {
            algo_report_addf(rep,
                    "milp: %s, M=%d, C=%u chunks of %.0f B, %d piece "
                    "sizes; model %d rows, %d cols (%d integer); time "
                    "limit %g s, gap target %g%%, node limit %d",
                    ccs_coll_str(sp.coll), sp.m, sp.nchunks, sp.unit_bytes,
                    sp.ncand, stats->rows, stats->cols, stats->ints,
                    so.time_limit_s, 100 * so.mip_gap, stats->node_limit);
            algo_report_addf(rep,
                    "milp: %s%s%s; objective %.1f us, bound %.1f us, gap "
                    "%.2f%% (GLPK's LP bound %.1f us, gap %.2f%%, root LP "
                    "%.1f us; fill bound %.1f us), "
                    "%d nodes, %.2f s; warm start %s; heuristic %.1f us%s",
                    milp_outcome_str(stats->outcome),
                    stats->time_limit_hit ? " (time limit)" : "",
                    stats->node_limit_hit ? " (node limit)" : "",
                    stats->obj_us, stats->bound_us, 100 * stats->gap,
                    stats->glpk_bound_us,
                    fmax(0, 100 * (stats->obj_us - stats->glpk_bound_us) /
                                stats->obj_us),
                    stats->lp_us, stats->fill_us,
                    stats->nodes, stats->time_s,
                    stats->proven_early
                        ? "proven within the gap by the bounds (no branch "
                          "and bound)"
                        : stats->warm_accepted
                        ? "accepted"
                        : (stats->warm_offered ? "offered" : "not offered"),
                    run.heur->cost_us,
                    run.sol == NULL ? "; no incumbent: using the heuristic"
                                    : "");
        }
        if (stats->warm_offered)
            algo_report_addf(rep,
                    "milp: incumbents: heuristic %.1f us, after the LNS "
                    "%.1f us (%d of %d sub-MIPs improved it, %d nodes), "
                    "after branch and bound %.1f us",
                    stats->warm_us, stats->lns_us, stats->lns_improved,
                    stats->lns_tried, stats->lns_nodes, stats->obj_us);
        if (p->coll != CCS_COLL_ALLTOALL && p->milp.cost == NULL)
            algo_report_addf(rep, "milp: the model's piece sizes (no cost "
                             "function to check them)");
        else if (p->coll != CCS_COLL_ALLTOALL)
            algo_report_addf(rep,
                    "milp: simulated at %.0f B: %.1f us with the model's "
                    "piece sizes, %.1f us after the piece-size check",
                    size, 1e6 * run.t_model_s, 1e6 * run.t_best_s);
        report_plan(rep, use);
    }
    st = milp_emit(t, use, p->root, &s, err);
    if (st != CCS_OK)
        goto cleanup;
    *out = s;
    s = NULL;

cleanup:
    ccs_sched_destroy(s);
    run_free(&run);
    run_free(&alt);
    milp_net_destroy(net);
    return st;
}

const algo_desc_t algo_milp = {
    .name = "milp",
    .desc = "AdapCC MILP (GLPK): parallel trees, roots, splits, chunking",
    .colls = MILP_COLLS,
    .check = check_milp,
    .build = build_milp,
};
