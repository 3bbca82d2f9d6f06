/*
 * nccl.c - NCCL's topology decisions and the multi-channel ring emission
 * (contract in nccl.h).
 *
 * Why the ring orders look as they do.  NCCL's search (src/graph/search.cc)
 * builds each channel's ring inside a server along NVLink (through the
 * NVSwitch every order is as good) and, between servers, picks a NIC per
 * channel so that channels spread over the NICs; on rail-optimised
 * servers (one NIC per GPU) a ring enters and leaves a server through the
 * NIC of the GPU at that end.  Rotating the in-server order by the channel
 * index gives exactly that: channel c leaves every server from local GPU
 * c-1 and enters the next at local GPU c.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nccl.h"
#include "ring.h"

/* Hamiltonian-cycle search budget (node expansions) on direct networks. */
#define NCCL_HAM_BUDGET 200000u

ccs_status_t nccl_layout(const topo_t *t, nccl_layout_t *l, ccs_err_t *err)
{
    uint32_t n = (uint32_t)t->ngpus;
    uint32_t *cnt = NULL;   /* owned here: GPUs per server */
    int32_t prev = -1;
    int sw_all = 1, any_sw = 0;

    memset(l, 0, sizeof(*l));
    l->n = n;
    l->nservers = t->nservers > 0 ? (uint32_t)t->nservers : 1;
    l->direct = topo_gpus_forward(t);
    cnt = calloc(l->nservers, sizeof(*cnt));
    if (cnt == NULL)
        return ccs_err_set(err, CCS_ERR_NOMEM, "nccl: out of memory");
    l->per = 1;   /* cleared below when not uniform and contiguous */
    for (uint32_t r = 0; r < n; r++) {
        int32_t sv = t->nodes[t->rank_node[r]].server;

        if (sv < 0 || (uint32_t)sv >= l->nservers || sv < prev)
            l->per = 0;
        else
            cnt[sv]++;
        prev = sv;
    }
    for (uint32_t s = 0; l->per != 0 && s < l->nservers; s++) {
        if (cnt[s] == 0 || cnt[s] != cnt[0])
            l->per = 0;
    }
    if (l->per != 0)
        l->per = cnt[0];
    free(cnt);
    for (int32_t v = 0; v < t->nnodes; v++) {
        const topo_node_t *nd = &t->nodes[v];

        if (nd->kind == TOPO_NODE_NIC && nd->server == 0)
            l->nics++;
        if (nd->kind == TOPO_NODE_SWITCH && nd->server >= 0) {
            any_sw = 1;
            if (!nd->nvls)
                sw_all = 0;
        }
    }
    /* One server's GPUs on one switch node of their own (dgx-h100) count
     * too: such a switch has server 0 when built as a server. */
    l->nvls = any_sw && sw_all;
    if (n > 0) {
        int32_t v = t->rank_node[0];

        for (int32_t k = t->out_start[v]; k < t->out_start[v + 1]; k++) {
            const topo_link_t *lk = &t->links[t->out_links[k]];

            if (t->nodes[lk->dst].kind != TOPO_NODE_NIC)
                l->gpu_bw += lk->bw_Bps;
        }
    }
    return CCS_OK;
}

uint32_t nccl_default_channels(const nccl_layout_t *l)
{
    /* Hopper-class GPUs from 400 GB/s of NVLink, as the simulator's
     * per-channel caps (sim_proto.c) tell them apart. */
    double speed = l->gpu_bw >= 400e9 ? 60e9 : 40e9;
    double c;

    if (l->nservers > 1 && l->nics > 1 && l->per > 0)
        return l->nics < l->per ? l->nics : l->per;
    /* one NIC per server: one 48 GB/s channel fits it, duplicated */
    if (l->nservers > 1 && l->nics == 1)
        return 2;
    if (l->direct || !(l->gpu_bw > 0))
        return 2;
    c = floor(l->gpu_bw / speed);
    if (c < 1)
        c = 1;
    c *= 2;
    return c > 32 ? 32 : (uint32_t)c;
}

/* Depth-first search for a Hamiltonian cycle over direct GPU-GPU links,
 * from rank 0, neighbours in link order; gives up after the budget. */
static int ham_dfs(const topo_t *t, uint32_t *path, uint8_t *used,
                   uint32_t depth, uint32_t n, uint32_t *budget)
{
    int32_t v = t->rank_node[path[depth - 1]];

    if (depth == n) {
        int32_t first = t->rank_node[path[0]];
        for (int32_t k = t->out_start[v]; k < t->out_start[v + 1]; k++)
            if (t->links[t->out_links[k]].dst == first)
                return 1;
        return 0;
    }
    for (int32_t k = t->out_start[v]; k < t->out_start[v + 1]; k++) {
        const topo_node_t *w = &t->nodes[t->links[t->out_links[k]].dst];

        if (w->kind != TOPO_NODE_GPU || w->rank < 0 || used[w->rank])
            continue;
        if (*budget == 0)
            return 0;
        (*budget)--;
        used[w->rank] = 1;
        path[depth] = (uint32_t)w->rank;
        if (ham_dfs(t, path, used, depth + 1, n, budget))
            return 1;
        used[w->rank] = 0;
    }
    return 0;
}

ccs_status_t nccl_ring_order(const topo_t *t, const nccl_layout_t *l,
                             uint32_t c, uint32_t *order, ccs_err_t *err)
{
    uint32_t n = l->n;

    if (l->direct) {
        uint8_t *used = calloc(n, 1);   /* owned here */
        uint32_t budget = NCCL_HAM_BUDGET;
        int found;

        if (used == NULL)
            return ccs_err_set(err, CCS_ERR_NOMEM, "nccl: out of memory");
        order[0] = 0;
        used[0] = 1;
        found = n <= 64 && ham_dfs(t, order, used, 1, n, &budget);
        free(used);
        if (!found) {
            for (uint32_t i = 0; i < n; i++)
                order[i] = i;
        }
        if (c % 2 == 1) {
            for (uint32_t i = 1, j = n - 1; i < j; i++, j--) {
                uint32_t x = order[i];
                order[i] = order[j];
                order[j] = x;
            }
        }
        return CCS_OK;
    }
    if (l->per == 0) {
        for (uint32_t i = 0; i < n; i++)
            order[i] = i;
        return CCS_OK;
    }
    for (uint32_t s = 0, i = 0; s < l->nservers; s++)
        for (uint32_t j = 0; j < l->per; j++)
            order[i++] = s * l->per + (c + j) % l->per;
    return CCS_OK;
}

ccs_status_t nccl_ring_emit(ccs_sched_t *s, ccs_coll_t coll,
                            const uint32_t *order, uint32_t n,
                            uint32_t nchan, uint32_t per, uint32_t phase,
                            ccs_err_t *err)
{
    bool rs = coll == CCS_COLL_ALLREDUCE || coll == CCS_COLL_REDUCESCATTER;
    bool ag = coll == CCS_COLL_ALLREDUCE || coll == CCS_COLL_ALLGATHER;
    /* Reducescatter: partial sums travel in SCRATCH, since a rank's OUT
     * is backed only on its own block. */
    ccs_buf_t tmp = coll == CCS_COLL_REDUCESCATTER ? CCS_BUF_SCRATCH
                                                   : CCS_BUF_OUT;
    ccs_status_t st = CCS_OK;
    uint32_t step, first = s->nsteps;

    if (n < 2)
        return ccs_err_set(err, CCS_ERR_UNSUPPORTED,
                           "nccl ring: needs 2 or more ranks");
    /* All channels run in the same steps: n-1 per half. */
    for (uint32_t t = 0; t < (rs ? n - 1 : 0) + (ag ? n - 1 : 0); t++) {
        if ((st = ccs_sched_add_step(s, phase, &step, err)) != CCS_OK)
            return st;
    }
    /* Channel c's block of rank b: chunks from (b * nchan + c) * per. */
    for (uint32_t c = 0; st == CCS_OK && c < nchan; c++) {
        const uint32_t *o = &order[(size_t)c * n];
        ring_shape_t sh;

        ring_shape_init(&sh, c * per, per);
        sh.stride = nchan * per;
        sh.by_rank = true;
        sh.step0 = first;
        if (rs)
            st = ring_reduce_scatter_shaped(s, o, n, &sh, tmp, c * per,
                                            phase, err);
        sh.step0 = first + (rs ? n - 1 : 0);
        if (st == CCS_OK && ag)
            st = ring_all_gather_shaped(s, o, n, &sh,
                                        coll == CCS_COLL_ALLGATHER, phase,
                                        err);
    }
    return st;
}

ccs_status_t nccl_params_add_str(ccs_sched_t *s, const char *key,
                                 const char *v, ccs_err_t *err)
{
    size_t old = s->params ? strlen(s->params) : 0;
    size_t len = old + strlen(key) + strlen(v) + 3;
    char *text = malloc(len);   /* owned here; copied by set_params */
    ccs_status_t st;

    if (text == NULL)
        return ccs_err_set(err, CCS_ERR_NOMEM, "nccl: out of memory");
    snprintf(text, len, "%s%s=%s\n", s->params ? s->params : "", key, v);
    st = ccs_sched_set_params(s, text, err);
    free(text);
    return st;
}

ccs_status_t nccl_params_add(ccs_sched_t *s, const char *key, uint32_t v,
                             ccs_err_t *err)
{
    char num[16];

    snprintf(num, sizeof(num), "%u", v);
    return nccl_params_add_str(s, key, num, err);
}
