/*
 * tree.c - binary trees over ranks and pipelined tree schedules (tree.h).
 *
 * Timing of a pipelined tree schedule (all offsets in steps from step0):
 *   up     rank v sends chunk c to its parent at step S(v) + c.  Leaves
 *          have S = 0; an inner rank has S = 1 + the largest S of its
 *          children, after making its children's S distinct (the later
 *          of two equal ones is delayed by one), because two receives may
 *          not reduce into one chunk in one step.  The first child to
 *          deliver chunk c reduces it with the receiver's IN, the second
 *          reduces in place.
 *   down   rank u sends chunk c to its children at step D(u) + c with
 *          D(root) = 0 for a broadcast, 1 + the largest S of the root's
 *          children for an allreduce, and D(child) = D(parent) + 1.
 * S grows strictly up the tree and every D exceeds every S, so in one step
 * a rank touches each chunk at most once: receives from its children land
 * on chunks t - S(child) (distinct), its up send reads t - S(v), its down
 * receive writes t - D(parent) and its down sends read t - D(v).
 */
#include <stdlib.h>
#include <string.h>

#include "tree.h"

void tree_destroy(tree_t *t)
{
    if (t == NULL)
        return;
    free(t->parent);
    free(t->child);
    free(t->nchild);
    t->parent = NULL;
    t->child = NULL;
    t->nchild = NULL;
}

void tree_dbtree_map(uint32_t n, int which, uint32_t *rank_of_pos)
{
    for (uint32_t p = 0; p < n; p++) {
        if (which == 0)
            rank_of_pos[p] = p;
        else if (n % 2 == 0)
            rank_of_pos[p] = n - 1 - p;
        else
            rank_of_pos[p] = (p + 1) % n;
    }
}

void tree_rotate_map(uint32_t n, uint32_t root, uint32_t *rank_of_pos)
{
    for (uint32_t p = 0; p < n; p++)
        rank_of_pos[p] = (uint32_t)(((uint64_t)p + root) % n);
}

/* Parent position of position p > 0 in NCCL's binary tree over n. */
static uint32_t btree_parent(uint32_t n, uint32_t p)
{
    uint32_t low = p & (~p + 1u);   /* lowest set bit */

    if (p & (low << 1))             /* ...11 0* -> ...10 0* */
        return p - low;
    /* ...01 0* -> ...10 0*, or ...00 0* when that is past the end */
    if ((uint64_t)p + low < n)
        return p + low;
    return p - low;
}

ccs_status_t tree_btree(uint32_t n, const uint32_t *rank_of_pos, tree_t *t,
                        ccs_err_t *err)
{
    tree_t nt = { 0 };
    ccs_status_t st = CCS_OK;

    if (t == NULL || n < 1)
        return ccs_err_set(err, CCS_ERR_INVALID, "tree: bad arguments");
    nt.n = n;
    /* Owned by nt, handed to *t on success. */
    nt.parent = malloc((size_t)n * sizeof(*nt.parent));
    nt.child = calloc((size_t)n * TREE_MAX_CHILDREN, sizeof(*nt.child));
    nt.nchild = calloc(n, sizeof(*nt.nchild));
    if (nt.parent == NULL || nt.child == NULL || nt.nchild == NULL) {
        st = ccs_err_set(err, CCS_ERR_NOMEM, "tree: out of memory");
        goto cleanup;
    }
    for (uint32_t r = 0; r < n; r++)
        nt.parent[r] = -2;          /* not placed yet */
    for (uint32_t p = 0; p < n; p++) {
        uint32_t r = rank_of_pos ? rank_of_pos[p] : p;

        if (r >= n || nt.parent[r] != -2) {
            st = ccs_err_set(err, CCS_ERR_INVALID,
                             "tree: position map is not a permutation of "
                             "0..%u (position %u -> rank %u)", n - 1, p, r);
            goto cleanup;
        }
        nt.parent[r] = -1;
    }
    nt.root = rank_of_pos ? rank_of_pos[0] : 0;
    /* Parents in position order, so children are listed in position
     * order: deterministic. */
    for (uint32_t p = 1; p < n; p++) {
        uint32_t r = rank_of_pos ? rank_of_pos[p] : p;
        uint32_t q = btree_parent(n, p);
        uint32_t pr = rank_of_pos ? rank_of_pos[q] : q;

        if (nt.nchild[pr] >= TREE_MAX_CHILDREN) {
            st = ccs_err_set(err, CCS_ERR_INTERNAL,
                             "tree: position %u would get a third child "
                             "(%u) with n = %u", q, p, n);
            goto cleanup;
        }
        nt.parent[r] = (int32_t)pr;
        nt.child[pr * TREE_MAX_CHILDREN + nt.nchild[pr]++] = r;
    }
    *t = nt;
    memset(&nt, 0, sizeof(nt));

cleanup:
    tree_destroy(&nt);
    return st;
}

/* Breadth-first order from the root into order[n]; false when some rank
 * is not reachable (not a tree). */
static bool tree_bfs(const tree_t *t, uint32_t *order)
{
    uint32_t head = 0, tail = 0;

    order[tail++] = t->root;
    while (head < tail) {
        uint32_t u = order[head++];

        for (uint32_t i = 0; i < t->nchild[u]; i++) {
            if (tail >= t->n)
                return false;
            order[tail++] = t->child[u * TREE_MAX_CHILDREN + i];
        }
    }
    return tail == t->n;
}

uint32_t tree_height(const tree_t *t)
{
    uint32_t h = 0;

    for (uint32_t r = 0; r < t->n; r++) {
        uint32_t d = 0;

        for (int32_t v = (int32_t)r; t->parent[v] >= 0 && d <= t->n;
             v = t->parent[v])
            d++;
        if (d > h)
            h = d;
    }
    return h;
}

/* The step offsets S (up) and D (down) of every rank, and the number of
 * steps.  sup/sdown/order have n entries, owned by the caller. */
static ccs_status_t tree_plan(const tree_t *t, tree_mode_t mode, uint32_t k,
                              uint32_t *sup, uint32_t *sdown,
                              uint32_t *order, uint32_t *steps,
                              ccs_err_t *err)
{
    uint64_t last = 0;

    if ((unsigned)mode >= TREE_MODE_COUNT || k < 1)
        return ccs_err_set(err, CCS_ERR_INVALID, "tree: bad mode or 0 "
                           "chunks");
    if (!tree_bfs(t, order))
        return ccs_err_set(err, CCS_ERR_INTERNAL,
                           "tree: not every rank is reachable from root %u",
                           t->root);
    /* Up offsets, leaves first. */
    for (uint32_t i = t->n; i-- > 0;) {
        uint32_t v = order[i];
        const uint32_t *ch = &t->child[v * TREE_MAX_CHILDREN];

        sup[v] = 0;
        if (t->nchild[v] == 2 && sup[ch[0]] == sup[ch[1]])
            sup[ch[1]]++;
        for (uint32_t j = 0; j < t->nchild[v]; j++) {
            if (sup[ch[j]] + 1 > sup[v])
                sup[v] = sup[ch[j]] + 1;
        }
    }
    /* Down offsets, root first. */
    for (uint32_t i = 0; i < t->n; i++) {
        uint32_t u = order[i];

        if (u == t->root)
            sdown[u] = mode == TREE_BCAST ? 0 : sup[u];
        else
            sdown[u] = sdown[t->parent[u]] + 1;
    }
    for (uint32_t v = 0; v < t->n; v++) {
        if (mode != TREE_BCAST && v != t->root && sup[v] + (uint64_t)k > last)
            last = sup[v] + (uint64_t)k;
        if (mode != TREE_REDUCE && t->nchild[v] > 0 &&
            sdown[v] + (uint64_t)k > last)
            last = sdown[v] + (uint64_t)k;
    }
    if (last < 1)
        last = 1;                   /* a broadcast's local copy */
    if (last > CCS_MAX_STEPS)
        return ccs_err_set(err, CCS_ERR_UNSUPPORTED,
                           "tree: %llu steps exceed %u",
                           (unsigned long long)last, CCS_MAX_STEPS);
    *steps = (uint32_t)last;
    return CCS_OK;
}

ccs_status_t tree_steps(const tree_t *t, tree_mode_t mode, uint32_t k,
                        uint32_t *steps, ccs_err_t *err)
{
    uint32_t *buf = NULL;
    ccs_status_t st;

    if (t == NULL || steps == NULL)
        return ccs_err_set(err, CCS_ERR_INVALID, "tree: NULL argument");
    /* Owned here: sup, sdown, order, 3n entries. */
    buf = malloc((size_t)3 * t->n * sizeof(*buf));
    if (buf == NULL)
        return ccs_err_set(err, CCS_ERR_NOMEM, "tree: out of memory");
    st = tree_plan(t, mode, k, buf, buf + t->n, buf + 2 * (size_t)t->n,
                   steps, err);
    free(buf);
    return st;
}

/* Up transfers of chunk c from v to its parent. */
static ccs_status_t emit_up(ccs_sched_t *s, const tree_t *t,
                            const uint32_t *sup, uint32_t v, uint32_t c,
                            uint32_t step, ccs_buf_t part_buf, ccs_err_t *err)
{
    uint32_t p = (uint32_t)t->parent[v];
    const uint32_t *ch = &t->child[p * TREE_MAX_CHILDREN];
    bool first = true;
    ccs_buf_t sbuf = t->nchild[v] == 0 ? CCS_BUF_IN : part_buf;
    ccs_buf_t dbuf = p == t->root ? CCS_BUF_OUT : part_buf;

    for (uint32_t j = 0; j < t->nchild[p]; j++) {
        if (ch[j] != v && sup[ch[j]] < sup[v])
            first = false;
    }
    /* The first child to deliver c starts the sum from the parent's own
     * input; the second adds to it in place. */
    return ccs_sched_xfer_reduce_from(s, step, v, sbuf, c, p, dbuf, c,
                                      first ? CCS_BUF_IN : dbuf, c, 1, err);
}

ccs_status_t tree_emit(ccs_sched_t *s, const tree_t *t, tree_mode_t mode,
                       uint32_t chunk0, uint32_t k, uint32_t step0,
                       ccs_buf_t part_buf, ccs_err_t *err)
{
    uint32_t *buf = NULL, *sup, *sdown, *order;
    uint32_t steps;
    ccs_status_t st;

    if (s == NULL || t == NULL || t->n != s->nranks)
        return ccs_err_set(err, CCS_ERR_INVALID,
                           "tree: tree and schedule rank counts differ");
    if ((uint64_t)chunk0 + k > s->nchunks)
        return ccs_err_set(err, CCS_ERR_INVALID,
                           "tree: chunks %u..%u past the end (%u chunks)",
                           chunk0, chunk0 + k - 1, s->nchunks);
    if (part_buf != CCS_BUF_OUT && part_buf != CCS_BUF_SCRATCH)
        return ccs_err_set(err, CCS_ERR_INVALID,
                           "tree: partial sums cannot live in %s",
                           ccs_buf_str(part_buf));
    /* Owned here, freed at cleanup: sup, sdown, order. */
    buf = malloc((size_t)3 * t->n * sizeof(*buf));
    if (buf == NULL)
        return ccs_err_set(err, CCS_ERR_NOMEM, "tree: out of memory");
    sup = buf;
    sdown = buf + t->n;
    order = buf + 2 * (size_t)t->n;
    st = tree_plan(t, mode, k, sup, sdown, order, &steps, err);
    if (st != CCS_OK)
        goto cleanup;
    if ((uint64_t)step0 + steps > s->nsteps) {
        st = ccs_err_set(err, CCS_ERR_INVALID,
                         "tree: needs steps %u..%u, schedule has %u", step0,
                         step0 + steps - 1, s->nsteps);
        goto cleanup;
    }
    if (mode == TREE_BCAST) {
        st = ccs_sched_local(s, step0, t->root, CCS_BUF_OUT, chunk0,
                             CCS_BUF_IN, chunk0, k, false, err);
        if (st != CCS_OK)
            goto cleanup;
    }
    /* Rank by rank, chunk by chunk: each rank's ops come out in step order
     * within one tree; the caller finalizes. */
    for (uint32_t i = 0; i < t->n; i++) {
        uint32_t v = order[i];

        for (uint32_t c = 0; c < k; c++) {
            if (mode != TREE_BCAST && v != t->root) {
                st = emit_up(s, t, sup, v, chunk0 + c, step0 + sup[v] + c,
                             part_buf, err);
                if (st != CCS_OK)
                    goto cleanup;
            }
            if (mode == TREE_REDUCE)
                continue;
            for (uint32_t j = 0; j < t->nchild[v]; j++) {
                ccs_buf_t sbuf = (mode == TREE_BCAST && v == t->root)
                                     ? CCS_BUF_IN : CCS_BUF_OUT;

                st = ccs_sched_xfer(s, step0 + sdown[v] + c, v, sbuf,
                                    chunk0 + c,
                                    t->child[v * TREE_MAX_CHILDREN + j],
                                    CCS_BUF_OUT, chunk0 + c, 1, false, err);
                if (st != CCS_OK)
                    goto cleanup;
            }
        }
    }

cleanup:
    free(buf);
    return st;
}
