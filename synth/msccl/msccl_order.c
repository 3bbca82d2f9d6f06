/*
 * msccl_order.c - the middle stages of the MSCCL importer (msccl_import.c):
 * splitting steps into parts, matching sends and receives per connection,
 * the ordering edges between parts, and levels (longest paths over the
 * strongly connected components, with deadlock/cycle detection).
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "msccl.h"
#include "msccl_int.h"

/* ---- parts, matching, ordering ---- */

static ccs_status_t add_part(imp_t *m, uint32_t si, uint8_t kind,
                             int32_t *id)
{
    m->parts[m->nparts].step = si;
    m->parts[m->nparts].kind = kind;
    *id = (int32_t)m->nparts++;
    return CCS_OK;
}

static ccs_status_t add_edge(imp_t *m, uint32_t u, uint32_t v, uint8_t w,
                             uint8_t strict)
{
    if (m->nedges == m->edgecap) {
        uint32_t cap = m->edgecap ? m->edgecap * 2 : 1024;
        edge_t *p = realloc(m->edges, cap * sizeof(*p));
        if (p == NULL)
            return ccs_err_set(m->err, CCS_ERR_NOMEM, "out of memory");
        m->edges = p;
        m->edgecap = cap;
    }
    m->edges[m->nedges++] = (edge_t){ u, v, w, strict };
    return CCS_OK;
}

static crange_t canon_as(const imp_t *m, bool inplace, uint32_t gpu,
                         uint8_t buf, int32_t off, int32_t cnt)
{
    crange_t c = { 0, (uint32_t)off, (uint32_t)cnt };
    if (buf == MSCCL_BUF_S) {
        c.space = 2;
        return c;
    }
    if (buf == MSCCL_BUF_I) {
        c.space = 0;
        if (m->coll == CCS_COLL_ALLGATHER)
            c.lo += gpu * m->B;
        return c;
    }
    c.space = inplace ? 0 : 1;
    if (m->coll == CCS_COLL_REDUCESCATTER)
        c.lo += gpu * m->B;
    return c;
}

crange_t msccl_canon(const imp_t *m, uint32_t gpu, uint8_t buf, int32_t off,
                      int32_t cnt)
{
    return canon_as(m, m->as_inplace, gpu, buf, off, cnt);
}

static bool cr_overlap(crange_t a, crange_t b)
{
    return a.space == b.space && a.lo < b.lo + b.n && b.lo < a.lo + a.n;
}

/* What an R/L part writes (n = 0: nothing visible). */
static crange_t part_write(const imp_t *m, const part_t *p)
{
    const mstep_t *x = &m->steps[p->step];
    crange_t none = { 0, 0, 0 };
    if (p->kind == P_S || p->kind == P_N || x->type == MSCCL_T_RRS)
        return none;
    return msccl_canon(m, m->tbs[x->tb].gpu, x->dstbuf, x->dstoff, x->cnt);
}

/* What an S part reads (rrs: a private temporary, n = 0). */
crange_t msccl_part_sread(const imp_t *m, const part_t *p)
{
    const mstep_t *x = &m->steps[p->step];
    crange_t none = { 0, 0, 0 };
    if (x->type == MSCCL_T_SEND)
        return msccl_canon(m, m->tbs[x->tb].gpu, x->srcbuf, x->srcoff, x->cnt);
    if (x->type == MSCCL_T_RRS)
        return none;
    return msccl_canon(m, m->tbs[x->tb].gpu, x->dstbuf, x->dstoff, x->cnt);
}

static uint32_t first_part(const mstep_t *x)
{
    return (uint32_t)(x->rpart >= 0 ? x->rpart : x->spart);
}

static uint32_t last_part(const mstep_t *x)
{
    return (uint32_t)(x->spart >= 0 ? x->spart : x->rpart);
}

/* Ranges a part reads (up to 2) and writes (up to 1); n = 0 unused. */
static void part_rw(const imp_t *m, const part_t *p, crange_t rd[2],
                    crange_t *wr)
{
    const mstep_t *x = &m->steps[p->step];
    uint32_t g = m->tbs[x->tb].gpu;
    msccl_type_t t = (msccl_type_t)x->type;
    crange_t none = { 0, 0, 0 };

    rd[0] = rd[1] = *wr = none;
    if (p->kind == P_S) {
        rd[0] = msccl_part_sread(m, p);
    } else if (p->kind == P_R) {
        *wr = part_write(m, p);
        if (t == MSCCL_T_RRC || t == MSCCL_T_RRCS || t == MSCCL_T_RRS)
            rd[0] = msccl_canon(m, g, x->srcbuf, x->srcoff, x->cnt);
    } else if (p->kind == P_L) {
        *wr = part_write(m, p);
        rd[0] = msccl_canon(m, g, x->srcbuf, x->srcoff, x->cnt);
        if (t == MSCCL_T_RE)
            rd[1] = *wr;
    }
}

/* Must q come a step after p (it reads what p writes, or writes what p
 * reads or writes)?  A nop may stand for any later step: always. */
static bool conflict(const imp_t *m, uint32_t p, uint32_t q)
{
    crange_t pr[2], pw, qr[2], qw;

    if (m->parts[q].kind == P_N)
        return true;
    part_rw(m, &m->parts[p], pr, &pw);
    part_rw(m, &m->parts[q], qr, &qw);
    return (pw.n && (cr_overlap(pw, qr[0]) || cr_overlap(pw, qr[1]) ||
                     cr_overlap(pw, qw))) ||
           (qw.n && (cr_overlap(pr[0], qw) || cr_overlap(pr[1], qw)));
}

/* Is send part p the forwarding half of an rcs/rrs/rrcs?  Waiting for
 * such a step is waiting for its receive (the forward is issued then). */
static bool fused_send(const imp_t *m, uint32_t p)
{
    return m->steps[m->parts[p].step].rpart >= 0;
}

/* Does succ overwrite what send part p reads only when input and output
 * are aliased (an in-place program laid out out-of-place)?  Such a
 * dependency keeps the in-place data safe; it does not order steps. */
static bool alias_war(const imp_t *m, uint32_t p, uint32_t succ)
{
    const mstep_t *x = &m->steps[m->parts[p].step];
    const mstep_t *y = &m->steps[m->parts[succ].step];
    uint32_t g = m->tbs[x->tb].gpu;
    crange_t rd, wr;

    if (!m->inplace || m->as_inplace || x->type != MSCCL_T_SEND ||
        m->parts[succ].kind == P_N || m->parts[succ].kind == P_S ||
        y->type == MSCCL_T_RRS)
        return false;
    rd = canon_as(m, true, g, x->srcbuf, x->srcoff, x->cnt);
    wr = canon_as(m, true, g, y->dstbuf, y->dstoff, y->cnt);
    return cr_overlap(rd, wr);
}

/* Edges for "pred runs before succ" in program order (thread-block order,
 * or a dependency when `dep`).  A send is issued when its thread block gets
 * there but its data is read in its receive's IR step (the layout puts
 * both in one step): a later step that overwrites the data must come after
 * the receive.  In strict mode (tried first) every step after a receive or
 * local op, and every step depending on a send, starts an IR step later,
 * which keeps the exporter's step order; in relaxed mode only conflicting
 * steps do.  Relaxed mode is what the GPU allows (sends do not wait for
 * their receive); it is used when strict order is impossible.
 * run: earlier parts of the thread block chained by 0-step edges. */
static ccs_status_t order_edges(imp_t *m, uint32_t pred, uint32_t succ,
                                const uint32_t *run, uint32_t nrun, bool dep,
                                uint8_t *w_out)
{
    const part_t *pp = &m->parts[pred];
    ccs_status_t st;
    uint8_t w = 0;

    if (pp->kind == P_N) {
        st = add_edge(m, pred, succ, 0, 0);
    } else if (pp->kind == P_L && m->parts[succ].kind == P_L) {
        /* Local ops of one rank share its local thread block, so ops of
         * one IR step follow each other there; only a conflict orders
         * them into different steps. */
        w = conflict(m, pred, succ);
        st = add_edge(m, pred, succ, w, 1);
    } else if (pp->kind != P_S) {
        w = m->strict || conflict(m, pred, succ);
        st = add_edge(m, pred, succ, w, 1);
    } else if ((dep && m->strict && !fused_send(m, pred) &&
                !alias_war(m, pred, succ)) ||
               conflict(m, pred, succ)) {
        w = 1;
        st = add_edge(m, m->partner[pred], succ, 1, 1);
    } else {
        st = add_edge(m, pred, succ, 0, 0);
    }
    for (uint32_t k = 0; k < nrun && st == CCS_OK; k++) {
        uint32_t r = run[k];
        if (!conflict(m, r, succ))
            continue;
        if (m->parts[r].kind == P_S)
            st = add_edge(m, m->partner[r], succ, 1, 1);
        else
            st = add_edge(m, r, succ, 1, 1);
    }
    if (w_out != NULL)
        *w_out = w;
    return st;
}

ccs_status_t msccl_build_parts(imp_t *m)
{
    ccs_status_t st;

    m->parts = calloc(2 * (size_t)m->nsteps + 1, sizeof(*m->parts));
    if (m->parts == NULL)
        return ccs_err_set(m->err, CCS_ERR_NOMEM, "out of memory");
    for (uint32_t si = 0; si < m->nsteps; si++) {
        mstep_t *x = &m->steps[si];
        msccl_type_t t = (msccl_type_t)x->type;
        if (t == MSCCL_T_NOP)
            add_part(m, si, P_N, &x->rpart);
        else if (t == MSCCL_T_CPY || t == MSCCL_T_RE)
            add_part(m, si, P_L, &x->rpart);
        else {
            if (msccl_type_recvs(t))
                add_part(m, si, P_R, &x->rpart);
            if (msccl_type_sends(t))
                add_part(m, si, P_S, &x->spart);
            if (x->rpart >= 0 && x->spart >= 0) {
                st = add_edge(m, (uint32_t)x->rpart, (uint32_t)x->spart, 1, 1);
                if (st != CCS_OK)
                    return st;
            }
        }
    }
    return CCS_OK;
}

/* The real step a dependency of step x (in tb) waits for, or -1: a nop
 * target stands for the last real step before it in its thread block. */
static int32_t dep_target(const imp_t *m, const mstep_t *x, const mtb_t *tb)
{
    if (x->depid < 0 || x->depid == tb->id)
        return -1;
    const mtb_t *dt = &m->tbs[m->gpus[tb->gpu].first_tb + (uint32_t)x->depid];
    for (int32_t k = x->deps; k >= 0; k--)
        if (m->steps[dt->first + (uint32_t)k].type != MSCCL_T_NOP)
            return (int32_t)(dt->first + (uint32_t)k);
    return -1;
}

/* Is y the next piece of x (same non-fused type, operands continuing
 * where x's end, no dependency of its own, adjacent in the tb)?  Only a
 * full piece (cnt at the executor's limit) has a next piece: that is how a
 * long op is cut (the exporter's rule: pieces of MSCCL_MAX_COUNT - 1, the
 * last shorter).  Two short transfers of consecutive chunks are two
 * transfers: a tree's leaf sends chunk 0 in one step and chunk 1 in the
 * next, and laying them out as one would move the second a step earlier
 * than its sender's order says. */
static bool continues(const mstep_t *x, const mstep_t *y, bool adjacent)
{
    msccl_type_t t = (msccl_type_t)x->type;
    if (!adjacent || x->cnt != MSCCL_MAX_COUNT - 1 || y->type != x->type ||
        y->depid >= 0 ||
        t == MSCCL_T_RCS || t == MSCCL_T_RRS || t == MSCCL_T_RRCS ||
        t == MSCCL_T_NOP || y->srcbuf != x->srcbuf ||
        y->dstbuf != x->dstbuf)
        return false;
    bool src = t != MSCCL_T_RECV, dst = t != MSCCL_T_SEND;
    return (!src || y->srcoff == x->srcoff + x->cnt) &&
           (!dst || y->dstoff == x->dstoff + x->cnt);
}

/* Thread-block order and dependencies (after matching: edges out of a send
 * may start at its matched receive). */
ccs_status_t msccl_build_order(imp_t *m)
{
    uint32_t *run = NULL;     /* owned: sends issued back to back */
    uint32_t nrun = 0, runcap = 0;
    ccs_status_t st = CCS_OK;

    m->nedges = m->nedges_base;
    for (uint32_t t = 0; t < m->ntbs && st == CCS_OK; t++) {
        const mtb_t *tb = &m->tbs[t];
        int32_t prev = -1;      /* last real step of the tb */
        nrun = 0;
        /* The executor attaches the dependencies of nop steps to the next
         * real step of the thread block: so do we. */
        uint32_t pend0 = 0;
        for (uint32_t k = 0; k < tb->n && st == CCS_OK; k++) {
            const mstep_t *x = &m->steps[tb->first + k];
            if (x->type == MSCCL_T_NOP)
                continue;
            uint32_t fp = first_part(x);
            if (prev >= 0) {
                uint32_t lp = last_part(&m->steps[tb->first +
                                                  (uint32_t)prev]);
                uint8_t w;
                if (continues(&m->steps[tb->first + (uint32_t)prev], x,
                              (uint32_t)prev + 1 == k)) {
                    /* a piece of one transfer cut for cnt < 72: same IR
                     * step, matched in order */
                    st = add_edge(m, lp, fp, 0, 1);
                    w = 0;
                } else {
                    st = order_edges(m, lp, fp, run, nrun, false, &w);
                }
                /* Receives and local ops a step behind drop out of the
                 * run; sends stay (their receive may be far ahead). */
                if (w) {
                    uint32_t keep = 0;
                    for (uint32_t j = 0; j < nrun; j++)
                        if (m->parts[run[j]].kind == P_S)
                            run[keep++] = run[j];
                    nrun = keep;
                }
                if (st == CCS_OK && (w == 0 || m->parts[lp].kind == P_S)) {
                    if (nrun == runcap) {
                        uint32_t cap = runcap ? 2 * runcap : 16;
                        uint32_t *p = realloc(run, cap * sizeof(*p));
                        if (p == NULL) {
                            st = ccs_err_set(m->err, CCS_ERR_NOMEM,
                                             "out of memory");
                            break;
                        }
                        run = p;
                        runcap = cap;
                    }
                    run[nrun++] = lp;
                }
            }
            for (uint32_t j = pend0; j <= k && st == CCS_OK; j++) {
                int32_t tgt = dep_target(m, &m->steps[tb->first + j], tb);
                if (tgt >= 0)
                    st = order_edges(m, last_part(&m->steps[tgt]), fp, NULL,
                                     0, true, NULL);
            }
            pend0 = k + 1;
            prev = (int32_t)k;
        }
    }
    free(run);
    return st;
}

/* Match sends and receives per connection, FIFO. */
ccs_status_t msccl_match(imp_t *m)
{
    char a[96], b[96];

    m->partner = malloc((size_t)m->nparts * sizeof(*m->partner) + 1);
    if (m->partner == NULL)
        return ccs_err_set(m->err, CCS_ERR_NOMEM, "out of memory");
    for (uint32_t p = 0; p < m->nparts; p++)
        m->partner[p] = UINT32_MAX;
    for (uint32_t t = 0; t < m->ntbs; t++) {
        const mtb_t *st = &m->tbs[t];
        if (st->send < 0)
            continue;
        /* the receiving thread block on the peer */
        const mgpu_t *pg = &m->gpus[st->send];
        const mtb_t *rt = NULL;
        for (uint32_t u = pg->first_tb; u < pg->first_tb + pg->ntb; u++)
            if (m->tbs[u].recv == (int32_t)st->gpu &&
                m->tbs[u].chan == st->chan)
                rt = &m->tbs[u];
        uint32_t ks = 0, kr = 0, nmsg = 0;
        for (;;) {
            while (ks < st->n &&
                   !msccl_type_sends((msccl_type_t)m->steps[st->first + ks]
                                         .type))
                ks++;
            while (rt != NULL && kr < rt->n &&
                   !msccl_type_recvs((msccl_type_t)m->steps[rt->first + kr]
                                         .type))
                kr++;
            bool hs = ks < st->n, hr = rt != NULL && kr < rt->n;
            if (!hs && !hr)
                break;
            if (hs && !hr) {
                uint32_t si = st->first + ks;
                msccl_where(m, si, a, sizeof(a));
                if (rt == NULL)
                    return msccl_fail(m, CCS_ERR_VERIFY, m->steps[si].line,
                                "deadlock: %s sends to gpu %d on channel %d, "
                                "but no thread block of gpu %d receives from "
                                "gpu %u on channel %d", a, st->send,
                                st->chan, st->send, st->gpu, st->chan);
                return msccl_fail(m, CCS_ERR_VERIFY, m->steps[si].line,
                            "deadlock: %s is message %u from gpu %u to gpu "
                            "%d on channel %d, but gpu %d tb %d receives "
                            "only %u on that connection", a, nmsg + 1,
                            st->gpu, st->send, st->chan, st->send, rt->id,
                            nmsg);
            }
            if (!hs) {
                uint32_t ri = rt->first + kr;
                msccl_where(m, ri, b, sizeof(b));
                return msccl_fail(m, CCS_ERR_VERIFY, m->steps[ri].line,
                            "deadlock: %s waits for message %u from gpu %u "
                            "on channel %d, but gpu %u tb %d sends only %u "
                            "on that connection", b, nmsg + 1, st->gpu,
                            st->chan, st->gpu, st->id, nmsg);
            }
            uint32_t si = st->first + ks, ri = rt->first + kr;
            if (m->steps[si].cnt != m->steps[ri].cnt) {
                msccl_where(m, si, a, sizeof(a));
                msccl_where(m, ri, b, sizeof(b));
                return msccl_fail(m, CCS_ERR_VERIFY, m->steps[si].line,
                            "message %u from gpu %u to gpu %d on channel %d: "
                            "%s sends cnt=%d but %s (line %d) receives "
                            "cnt=%d: sends and receives are in different "
                            "orders (a hang or wrong data on the GPU)",
                            nmsg + 1, st->gpu, st->send, st->chan, a,
                            m->steps[si].cnt, b, m->steps[ri].line,
                            m->steps[ri].cnt);
            }
            /* The receive completes no earlier than the send is issued;
             * the layout runs both in the receive's step. */
            uint32_t x = (uint32_t)m->steps[si].spart;
            uint32_t y = (uint32_t)m->steps[ri].rpart;
            m->partner[x] = y;
            m->partner[y] = x;
            ccs_status_t est = add_edge(m, x, y, 0, 0);
            if (est != CCS_OK)
                return est;
            ks++;
            kr++;
            nmsg++;
        }
    }
    /* receivers with no sending thread block at all */
    for (uint32_t t = 0; t < m->ntbs; t++) {
        const mtb_t *rt = &m->tbs[t];
        if (rt->recv < 0)
            continue;
        const mgpu_t *pg = &m->gpus[rt->recv];
        bool found = false;
        for (uint32_t u = pg->first_tb; u < pg->first_tb + pg->ntb; u++)
            if (m->tbs[u].send == (int32_t)rt->gpu &&
                m->tbs[u].chan == rt->chan)
                found = true;
        for (uint32_t k = 0; k < rt->n && !found; k++) {
            uint32_t ri = rt->first + k;
            if (!msccl_type_recvs((msccl_type_t)m->steps[ri].type))
                continue;
            msccl_where(m, ri, b, sizeof(b));
            return msccl_fail(m, CCS_ERR_VERIFY, m->steps[ri].line,
                        "deadlock: %s "
                        "receives from gpu %d on channel %d, but no thread "
                        "block of gpu %d sends to gpu %u on channel %d", b,
                        rt->recv, rt->chan, rt->recv, rt->gpu, rt->chan);
        }
    }
    return CCS_OK;
}

/* Tarjan's SCC (iterative) over representatives; then longest paths.
 * level[] is indexed by representative. */
ccs_status_t msccl_levels(imp_t *m, uint32_t **level_out)
{
    uint32_t P = m->nparts, E = m->nedges;
    ccs_status_t st = CCS_OK;
    uint32_t *off = calloc((size_t)P + 1, sizeof(uint32_t));
    uint32_t *adj = malloc(((size_t)E + 1) * sizeof(uint32_t)); /* edge ids */
    uint32_t *idx = malloc(((size_t)P + 1) * sizeof(uint32_t));
    uint32_t *low = malloc(((size_t)P + 1) * sizeof(uint32_t));
    uint32_t *comp = malloc(((size_t)P + 1) * sizeof(uint32_t));
    uint32_t *stk = malloc(((size_t)P + 1) * sizeof(uint32_t));
    uint32_t *cs = malloc(((size_t)P + 1) * sizeof(uint32_t));
    uint32_t *ci = malloc(((size_t)P + 1) * sizeof(uint32_t));
    uint32_t *order = malloc(((size_t)P + 1) * sizeof(uint32_t));
    uint32_t *level = calloc((size_t)P + 1, sizeof(uint32_t));
    uint8_t *on = calloc((size_t)P + 1, 1);
    uint32_t ncomp = 0, nidx = 0, sp = 0, no = 0;

    if (off == NULL || adj == NULL || idx == NULL || low == NULL ||
        comp == NULL || stk == NULL || cs == NULL || ci == NULL ||
        order == NULL || level == NULL || on == NULL) {
        st = ccs_err_set(m->err, CCS_ERR_NOMEM, "out of memory");
        goto cleanup;
    }
    for (uint32_t e = 0; e < E; e++)
        off[m->edges[e].u + 1]++;
    for (uint32_t p = 0; p < P; p++)
        off[p + 1] += off[p];
    {
        uint32_t *fill = malloc(((size_t)P + 1) * sizeof(uint32_t));
        if (fill == NULL) {
            st = ccs_err_set(m->err, CCS_ERR_NOMEM, "out of memory");
            goto cleanup;
        }
        memcpy(fill, off, P * sizeof(uint32_t));
        for (uint32_t e = 0; e < E; e++)
            adj[fill[m->edges[e].u]++] = e;
        free(fill);
    }
    for (uint32_t p = 0; p < P; p++)
        idx[p] = UINT32_MAX;
    for (uint32_t r = 0; r < P; r++) {
        if (idx[r] != UINT32_MAX)
            continue;
        /* iterative DFS: cs = call stack of nodes, ci = next edge */
        uint32_t depth = 0;
        cs[depth] = r;
        ci[depth] = off[r];
        idx[r] = low[r] = nidx++;
        stk[sp++] = r;
        on[r] = 1;
        while (depth != UINT32_MAX) {
            uint32_t v = cs[depth];
            if (ci[depth] < off[v + 1]) {
                uint32_t w = m->edges[adj[ci[depth]++]].v;
                if (idx[w] == UINT32_MAX) {
                    idx[w] = low[w] = nidx++;
                    stk[sp++] = w;
                    on[w] = 1;
                    depth++;
                    cs[depth] = w;
                    ci[depth] = off[w];
                } else if (on[w] && idx[w] < low[v]) {
                    low[v] = idx[w];
                }
                continue;
            }
            if (low[v] == idx[v]) {
                uint32_t w;
                do {
                    w = stk[--sp];
                    on[w] = 0;
                    comp[w] = ncomp;
                    order[no++] = w;
                } while (w != v);
                ncomp++;
            }
            depth = depth == 0 ? UINT32_MAX : depth - 1;
            if (depth != UINT32_MAX && low[v] < low[cs[depth]])
                low[cs[depth]] = low[v];
        }
    }
    /* A one-step-later edge inside a component: a cycle no schedule can
     * lay out in time, i.e. the GPU waits forever.  Name the cycle: the
     * edge u -> v plus a path v -> u inside the component (BFS). */
    for (uint32_t e = 0; e < E; e++) {
        const edge_t *ed = &m->edges[e];
        if ((ed->w == 0 && !ed->strict) || comp[ed->u] != comp[ed->v])
            continue;
        uint32_t c = comp[ed->u], *par = idx, *q = stk, qh = 0, qt = 0;
        char a[96], path[400] = "";
        size_t pl = 0;
        for (uint32_t p = 0; p < P; p++)
            par[p] = UINT32_MAX;
        par[ed->v] = ed->v;
        q[qt++] = ed->v;
        while (qh < qt && par[ed->u] == UINT32_MAX) {
            uint32_t x = q[qh++];
            for (uint32_t k = off[x]; k < off[x + 1]; k++) {
                uint32_t y = m->edges[adj[k]].v;
                if (comp[y] == c && par[y] == UINT32_MAX) {
                    par[y] = x;
                    q[qt++] = y;
                }
            }
        }
        /* walk back from u to v: the cycle in reverse */
        uint32_t cyc[8], nc = 0, x = ed->u;
        while (nc < 8) {
            cyc[nc++] = x;
            if (x == ed->v || par[x] == UINT32_MAX)
                break;
            x = par[x];
        }
        for (uint32_t i = nc; i-- > 0;) {
            uint32_t si = m->parts[cyc[i]].step;
            msccl_where(m, si, a, sizeof(a));
            int k = snprintf(path + pl, sizeof(path) - pl, "%s%s (line %d)",
                             i + 1 < nc ? " -> " : "", a, m->steps[si].line);
            if (k > 0 && (size_t)k < sizeof(path) - pl)
                pl += (size_t)k;
        }
        msccl_where(m, m->parts[ed->v].step, a, sizeof(a));
        st = msccl_fail(m, CCS_ERR_VERIFY, m->steps[m->parts[ed->v].step].line,
                  "deadlock: dependency cycle through thread-block order, "
                  "depid/deps and matched send/receive: %s%s waits for %s",
                  path, x == ed->v ? "" : " -> ...", a);
        goto cleanup;
    }
    /* Tarjan numbers components sinks first, so decreasing component ids
     * are a topological order; `order` lists nodes grouped that way. */
    {
        uint32_t *cl = calloc(ncomp + 1, sizeof(uint32_t));
        if (cl == NULL) {
            st = ccs_err_set(m->err, CCS_ERR_NOMEM, "out of memory");
            goto cleanup;
        }
        for (uint32_t i = no; i-- > 0;) {
            uint32_t v = order[i];
            for (uint32_t k = off[v]; k < off[v + 1]; k++) {
                const edge_t *ed = &m->edges[adj[k]];
                uint32_t d = comp[ed->v];
                if (d != comp[v] && cl[comp[v]] + ed->w > cl[d])
                    cl[d] = cl[comp[v]] + ed->w;
            }
        }
        for (uint32_t p = 0; p < P; p++)
            level[p] = cl[comp[p]];
        free(cl);
    }
    *level_out = level;
    level = NULL;

cleanup:
    free(off);
    free(adj);
    free(idx);
    free(low);
    free(comp);
    free(stk);
    free(cs);
    free(ci);
    free(order);
    free(level);
    free(on);
    return st;
}
