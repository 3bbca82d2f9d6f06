/*
 * msccl_layout.c - the last stage of the MSCCL importer (msccl_import.c):
 * lays the levelled parts out as IR steps and ops (buffers, in-place
 * aliasing, scratch shadows and rrs temporaries).
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "msccl.h"
#include "msccl_int.h"

/* ---- layout as IR steps ---- */

typedef struct loc { uint8_t buf; uint32_t chunk; } loc_t;

typedef struct iop { uint32_t rank; uint32_t seq; ccs_op_t op; } iop_t;

typedef struct lay {
    imp_t *m;
    ccs_sched_t *s;          /* borrowed: the schedule being filled */
    uint8_t *written;        /* owned: [R * C] space-0 chunk written */
    uint32_t *ntemp;         /* owned: [R] rrs temporaries in use */
    int32_t *temp_of;        /* owned: [nsteps] first temp of an rrs */
    uint32_t smax;           /* largest s_chunks */
    iop_t *ops;              /* owned */
    size_t nops, cap;
    uint32_t *pend;          /* owned: (rank, chunk) marks of this level */
    size_t npend, pendcap;
} lay_t;

static loc_t read_loc(const lay_t *l, uint32_t r, crange_t c, uint32_t k)
{
    const imp_t *m = l->m;
    uint32_t g = c.lo + k;
    if (c.space == 2)
        return (loc_t){ CCS_BUF_SCRATCH, g };
    if (c.space == 0 && !l->written[(size_t)r * m->C + g])
        return (loc_t){ CCS_BUF_IN, g };
    if (c.space == 0 && !m->as_inplace)
        return (loc_t){ CCS_BUF_SCRATCH, l->smax + g };
    if (ccs_coll_out_valid(l->s, r, g))
        return (loc_t){ CCS_BUF_OUT, g };
    return (loc_t){ CCS_BUF_SCRATCH, l->smax + m->C + g };
}

static loc_t write_loc(const lay_t *l, uint32_t r, crange_t c, uint32_t k)
{
    const imp_t *m = l->m;
    uint32_t g = c.lo + k;
    if (c.space == 2)
        return (loc_t){ CCS_BUF_SCRATCH, g };
    if (c.space == 0 && !m->as_inplace)
        return (loc_t){ CCS_BUF_SCRATCH, l->smax + g };
    if (ccs_coll_out_valid(l->s, r, g))
        return (loc_t){ CCS_BUF_OUT, g };
    return (loc_t){ CCS_BUF_SCRATCH, l->smax + m->C + g };
}

static bool loc_next(loc_t a, loc_t b)
{
    return a.buf == b.buf && b.chunk == a.chunk + 1;
}

static ccs_status_t emit(lay_t *l, uint32_t rank, uint32_t step, uint8_t kind,
                         loc_t dst, loc_t src, int32_t peer, uint32_t n)
{
    if (l->nops == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 4096;
        iop_t *p = realloc(l->ops, cap * sizeof(*p));
        if (p == NULL)
            return ccs_err_set(l->m->err, CCS_ERR_NOMEM, "out of memory");
        l->ops = p;
        l->cap = cap;
    }
    ccs_op_t op;
    memset(&op, 0, sizeof(op));
    op.step = step;
    op.kind = kind;
    op.buf = dst.buf;
    op.chunk = dst.chunk;
    op.peer = peer;
    op.nchunks = n;
    if (kind == CCS_OP_RECV_REDUCE || kind == CCS_OP_COPY ||
        kind == CCS_OP_REDUCE_LOCAL) {
        op.src_buf = src.buf;
        op.src_chunk = src.chunk;
    }
    l->ops[l->nops] = (iop_t){ rank, (uint32_t)l->nops, op };
    l->nops++;
    return CCS_OK;
}

static ccs_status_t mark(lay_t *l, uint32_t r, crange_t c)
{
    if (c.space != 0)
        return CCS_OK;
    for (uint32_t k = 0; k < c.n; k++) {
        if (l->npend == l->pendcap) {
            size_t cap = l->pendcap ? 2 * l->pendcap : 256;
            uint32_t *p = realloc(l->pend, 2 * cap * sizeof(*p));
            if (p == NULL)
                return ccs_err_set(l->m->err, CCS_ERR_NOMEM,
                                   "out of memory");
            l->pend = p;
            l->pendcap = cap;
        }
        l->pend[2 * l->npend] = r;
        l->pend[2 * l->npend + 1] = c.lo + k;
        l->npend++;
    }
    return CCS_OK;
}

/* A matched send part (on gpu a) and receive part (on gpu b) at `lev`. */
static ccs_status_t lay_pair(lay_t *l, uint32_t sp, uint32_t rp, uint32_t lev)
{
    imp_t *m = l->m;
    const mstep_t *xs = &m->steps[m->parts[sp].step];
    const mstep_t *xr = &m->steps[m->parts[rp].step];
    uint32_t a = m->tbs[xs->tb].gpu, b = m->tbs[xr->tb].gpu;
    uint32_t n = (uint32_t)xs->cnt, step = 2 * lev + 1;
    msccl_type_t rt = (msccl_type_t)xr->type;
    bool reduce = rt == MSCCL_T_RRC || rt == MSCCL_T_RRCS ||
                  rt == MSCCL_T_RRS;
    crange_t sr, dr, orr = { 0, 0, 0 };
    ccs_status_t st;

    if (xs->type == MSCCL_T_RRS)
        sr = (crange_t){ 2, (uint32_t)l->temp_of[m->parts[sp].step], n };
    else
        sr = msccl_part_sread(m, &m->parts[sp]);
    if (rt == MSCCL_T_RRS) {
        uint32_t t0 = l->smax + 2 * m->C + l->ntemp[b];
        l->ntemp[b] += n;
        l->temp_of[m->parts[rp].step] = (int32_t)t0;
        dr = (crange_t){ 2, t0, n };
    } else {
        dr = msccl_canon(m, b, xr->dstbuf, xr->dstoff, xr->cnt);
    }
    if (reduce)
        orr = msccl_canon(m, b, xr->srcbuf, xr->srcoff, xr->cnt);
    /* one op per run where every side stays contiguous */
    uint32_t k0 = 0;
    while (k0 < n) {
        loc_t s0 = read_loc(l, a, sr, k0), d0 = write_loc(l, b, dr, k0);
        loc_t o0 = reduce ? read_loc(l, b, orr, k0) : d0;
        uint32_t k1 = k0 + 1;
        while (k1 < n) {
            loc_t s1 = read_loc(l, a, sr, k1), d1 = write_loc(l, b, dr, k1);
            loc_t o1 = reduce ? read_loc(l, b, orr, k1) : d1;
            if (!loc_next(read_loc(l, a, sr, k1 - 1), s1) ||
                !loc_next(write_loc(l, b, dr, k1 - 1), d1) ||
                !loc_next(reduce ? read_loc(l, b, orr, k1 - 1)
                                 : write_loc(l, b, dr, k1 - 1), o1))
                break;
            k1++;
        }
        st = emit(l, a, step, CCS_OP_SEND, s0, s0, (int32_t)b, k1 - k0);
        if (st == CCS_OK)
            st = emit(l, b, step, reduce ? CCS_OP_RECV_REDUCE : CCS_OP_RECV,
                      d0, o0, (int32_t)a, k1 - k0);
        if (st != CCS_OK)
            return st;
        k0 = k1;
    }
    return mark(l, b, dr);
}

/* A local cpy/re part at `lev`. */
static ccs_status_t lay_local(lay_t *l, uint32_t p, uint32_t lev)
{
    imp_t *m = l->m;
    const mstep_t *x = &m->steps[m->parts[p].step];
    uint32_t r = m->tbs[x->tb].gpu, n = (uint32_t)x->cnt;
    bool re = x->type == MSCCL_T_RE;
    crange_t sr = msccl_canon(m, r, x->srcbuf, x->srcoff, x->cnt);
    crange_t dr = msccl_canon(m, r, x->dstbuf, x->dstoff, x->cnt);
    ccs_status_t st;

    for (uint32_t k0 = 0; k0 < n;) {
        loc_t s0 = read_loc(l, r, sr, k0), d0 = write_loc(l, r, dr, k0);
        loc_t c0 = read_loc(l, r, dr, k0);
        uint32_t k1 = k0 + 1;
        while (k1 < n && loc_next(read_loc(l, r, sr, k1 - 1),
                                  read_loc(l, r, sr, k1)) &&
               loc_next(write_loc(l, r, dr, k1 - 1), write_loc(l, r, dr, k1)) &&
               loc_next(read_loc(l, r, dr, k1 - 1), read_loc(l, r, dr, k1)))
            k1++;
        if (re && (c0.buf != d0.buf || c0.chunk != d0.chunk)) {
            /* dst's value is still the input: bring it over first */
            st = emit(l, r, 2 * lev, CCS_OP_COPY, d0, c0, -1, k1 - k0);
            if (st != CCS_OK)
                return st;
        }
        st = emit(l, r, 2 * lev + 1, re ? CCS_OP_REDUCE_LOCAL : CCS_OP_COPY,
                  d0, s0, -1, k1 - k0);
        if (st != CCS_OK)
            return st;
        k0 = k1;
    }
    return mark(l, r, dr);
}

static int iop_cmp(const void *a, const void *b)
{
    const iop_t *x = a, *y = b;
    if (x->op.step != y->op.step)
        return x->op.step < y->op.step ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

ccs_status_t msccl_layout(imp_t *m, const uint32_t *level, ccs_sched_t *s)
{
    lay_t l;
    uint32_t P = m->nparts, maxl = 0;
    uint32_t *bylev = NULL, *lstart = NULL, *newstep = NULL;
    ccs_status_t st = CCS_OK;

    memset(&l, 0, sizeof(l));
    l.m = m;
    l.s = s;
    for (uint32_t r = 0; r < m->R; r++)
        if ((uint32_t)m->gpus[r].schunks > l.smax)
            l.smax = (uint32_t)m->gpus[r].schunks;
    for (uint32_t p = 0; p < P; p++)
        if (level[p] > maxl)
            maxl = level[p];
    l.written = calloc((size_t)m->R * m->C, 1);
    l.ntemp = calloc(m->R, sizeof(*l.ntemp));
    l.temp_of = calloc((size_t)m->nsteps + 1, sizeof(*l.temp_of));
    bylev = malloc(((size_t)P + 1) * sizeof(*bylev));
    lstart = calloc((size_t)maxl + 2, sizeof(*lstart));
    newstep = calloc(2 * (size_t)maxl + 4, sizeof(*newstep));
    if (l.written == NULL || l.ntemp == NULL || l.temp_of == NULL ||
        bylev == NULL || lstart == NULL ||
        newstep == NULL) {
        st = ccs_err_set(m->err, CCS_ERR_NOMEM, "out of memory");
        goto cleanup;
    }
    /* parts by level (counting sort keeps id order) */
    for (uint32_t p = 0; p < P; p++)
        lstart[level[p] + 1]++;
    for (uint32_t v = 0; v <= maxl; v++)
        lstart[v + 1] += lstart[v];
    {
        uint32_t *fill = malloc(((size_t)maxl + 2) * sizeof(*fill));
        if (fill == NULL) {
            st = ccs_err_set(m->err, CCS_ERR_NOMEM, "out of memory");
            goto cleanup;
        }
        memcpy(fill, lstart, ((size_t)maxl + 2) * sizeof(*fill));
        for (uint32_t p = 0; p < P; p++)
            bylev[fill[level[p]]++] = p;
        free(fill);
    }
    for (uint32_t v = 0; v <= maxl; v++) {
        l.npend = 0;
        for (uint32_t i = lstart[v]; i < lstart[v + 1]; i++) {
            uint32_t p = bylev[i];
            /* a transfer is laid out in its receive's step */
            if (m->parts[p].kind == P_R) {
                st = lay_pair(&l, m->partner[p], p, v);
            } else if (m->parts[p].kind == P_L) {
                st = lay_local(&l, p, v);
            }
            if (st != CCS_OK)
                goto cleanup;
        }
        /* writes land at the end of the level */
        for (size_t k = 0; k < l.npend; k++)
            l.written[(size_t)l.pend[2 * k] * m->C + l.pend[2 * k + 1]] = 1;
    }
    /* In place, a chunk the program never writes still holds the input
     * (allgather's own block): the IR's separate OUT gets it by a copy. */
    if (m->as_inplace)
        for (uint32_t r = 0; r < m->R; r++)
            for (uint32_t g = 0; g < m->C; g++) {
                if (l.written[(size_t)r * m->C + g] ||
                    !ccs_coll_out_valid(s, r, g) ||
                    !ccs_coll_in_valid(s, r, g))
                    continue;
                loc_t d = { CCS_BUF_OUT, g }, src = { CCS_BUF_IN, g };
                st = emit(&l, r, 2 * maxl + 3, CCS_OP_COPY, d, src, -1, 1);
                if (st != CCS_OK)
                    goto cleanup;
            }
    qsort(l.ops, l.nops, sizeof(*l.ops), iop_cmp);
    for (size_t k = 0; k < l.nops; k++)
        newstep[l.ops[k].op.step] = 1;
    uint32_t ns = 0;
    for (uint32_t t = 0; t < 2 * maxl + 4; t++) {
        uint32_t used = newstep[t];
        newstep[t] = ns;
        if (used) {
            uint32_t id;
            st = ccs_sched_add_step(s, 0, &id, m->err);
            if (st != CCS_OK)
                goto cleanup;
            ns++;
        }
    }
    for (size_t k = 0; k < l.nops; k++) {
        l.ops[k].op.step = newstep[l.ops[k].op.step];
        st = ccs_sched_add_op(s, l.ops[k].rank, &l.ops[k].op, m->err);
        if (st != CCS_OK)
            goto cleanup;
    }

cleanup:
    free(l.written);
    free(l.ntemp);
    free(l.temp_of);
    free(l.ops);
    free(l.pend);
    free(bylev);
    free(lstart);
    free(newstep);
    return st;
}
