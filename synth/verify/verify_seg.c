/*
 * verify_seg.c - the verifier's chunk segments, op pieces and data-flow
 * columns (terms in verify_int.h).
 *
 * Segments: every op range end and (blocked collectives) every block end
 * is a cut point; an op that moves chunk a + i of one space to chunk
 * b + i (a != b, or another space) carries every cut inside its range to
 * the other side, repeated until nothing new appears.  Then every chunk of
 * a segment is read, written, reduced and checked exactly like its first
 * chunk, with origins shifted alike, so the first chunk stands for all.
 *
 * Columns: one sweep in step order joins each piece with the pieces that
 * last wrote the cells it reads (union-find), and a receive with its send.
 * A column's pieces then see exactly the values the whole schedule would
 * give them, so columns are executed one at a time (verify_col.c).
 */
#include <stdlib.h>
#include <string.h>

#include "verify_int.h"

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* Direct chunk -> segment maps and bitmap sorts are used when the
 * buffers are no larger than this many chunks, or than 4 per op: their
 * cost then follows the file. */
#define DENSE_CHUNKS (UINT64_C(1) << 20)

static bool dense_ok(const vctx_t *v)
{
    uint64_t len = (uint64_t)v->s->nchunks + v->s->nscratch;
    return len <= DENSE_CHUNKS || len <= 4 * (uint64_t)v->nops;
}

uint32_t vseg_find(const vctx_t *v, unsigned space, uint32_t pos)
{
    const vspace_t *sp = &v->sp[space];
    uint32_t lo = 0, hi = sp->nb - 1;  /* b[lo] <= pos < b[hi] */

    if (v->segmap != NULL)
        return v->segmap[(space == VS_SCRATCH ? v->s->nchunks : 0) + pos];
    while (hi - lo > 1) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (sp->b[mid] <= pos)
            lo = mid;
        else
            hi = mid;
    }
    return sp->first + lo;
}

static const vspace_t *space_of_seg(const vctx_t *v, uint32_t g)
{
    return g >= v->sp[VS_SCRATCH].first ? &v->sp[VS_SCRATCH]
                                        : &v->sp[VS_IO];
}

uint32_t vseg_lo(const vctx_t *v, uint32_t g)
{
    const vspace_t *sp = space_of_seg(v, g);
    return sp->b[g - sp->first];
}

uint32_t vseg_hi(const vctx_t *v, uint32_t g)
{
    const vspace_t *sp = space_of_seg(v, g);
    return sp->b[g - sp->first + 1];
}

uint32_t vpiece_op(const vctx_t *v, uint32_t pid)
{
    uint32_t lo = 0, hi = v->nops;  /* piece_base[lo] <= pid < [hi] */

    if (v->piece_base == NULL)
        return pid;
    while (hi - lo > 1) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (v->piece_base[mid] <= pid)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

/* ---- Cut points ---- */

static ccs_status_t cut(vctx_t *v, unsigned space, uint32_t pos)
{
    vspace_t *sp = &v->sp[space];

    if (sp->nb == sp->cap) {
        uint32_t ncap = sp->cap ? 2 * sp->cap : 64;
        uint32_t *nb = realloc(sp->b, (size_t)ncap * sizeof(*nb));
        if (nb == NULL)
            return ccs_err_set(v->err, CCS_ERR_NOMEM,
                               "out of memory for verifier segments");
        sp->b = nb;
        sp->cap = ncap;
    }
    sp->b[sp->nb++] = pos;
    return CCS_OK;
}

/* Sort and deduplicate the cut points of a space of `len` chunks: through
 * a bitmap of len + 1 bits when `dense` (linear), else qsort. */
static void sort_unique(vspace_t *sp, uint32_t len, bool dense)
{
    uint32_t k = 0;
    uint64_t *bm = dense ? calloc((size_t)len / 64 + 1, sizeof(uint64_t))
                         : NULL;  /* owned here */

    if (bm != NULL) {
        for (uint32_t i = 0; i < sp->nb; i++)
            bm[sp->b[i] / 64] |= UINT64_C(1) << (sp->b[i] % 64);
        for (uint32_t w = 0; w <= len / 64; w++) {
            uint64_t x = bm[w];
            while (x != 0) {
                sp->b[k++] = w * 64 + (uint32_t)__builtin_ctzll(x);
                x &= x - 1;
            }
        }
        sp->nb = k;
        free(bm);
        return;
    }
    qsort(sp->b, sp->nb, sizeof(uint32_t), cmp_u32);
    for (uint32_t i = 0; i < sp->nb; i++) {
        if (k == 0 || sp->b[i] != sp->b[k - 1])
            sp->b[k++] = sp->b[i];
    }
    sp->nb = k;
}

/* Index k of the sorted b[0..n) with b[k] <= pos < b[k + 1]. */
static uint32_t prefix_find(const uint32_t *b, uint32_t n, uint32_t pos)
{
    uint32_t lo = 0, hi = n - 1;

    while (hi - lo > 1) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (b[mid] <= pos)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

/* One data move of n chunks: space sa from a <-> space sb from b. */
typedef struct vedge {
    uint32_t a, b, n;
    uint8_t sa, sb;
} vedge_t;

/* The moves that shift chunks (a != b or another space), into *out. */
static ccs_status_t shifting_edges(vctx_t *v, vedge_t **out, size_t *nout)
{
    vedge_t *e = NULL;
    size_t n = 0, cap = 0;

    for (uint32_t f = 0; f < v->nops; f++) {
        const ccs_op_t *op = vop(v, f);
        vedge_t cand[2];
        int k = 0;

        if (op->kind == CCS_OP_RECV || op->kind == CCS_OP_RECV_REDUCE) {
            cand[k++] = (vedge_t){ op->chunk, vsend_chunk(v->xsend[f]),
                                   op->nchunks,
                                   (uint8_t)vspace_of(op->buf),
                                   (uint8_t)vspace_of(vsend_buf(v->xsend[f])) };
        }
        if (op->kind == CCS_OP_RECV_REDUCE || op->kind == CCS_OP_COPY ||
            op->kind == CCS_OP_REDUCE_LOCAL)
            cand[k++] = (vedge_t){ op->chunk, op->src_chunk, op->nchunks,
                                   (uint8_t)vspace_of(op->buf),
                                   (uint8_t)vspace_of(op->src_buf) };
        for (int i = 0; i < k; i++) {
            if (cand[i].sa == cand[i].sb && cand[i].a == cand[i].b)
                continue;
            if (n == cap) {
                size_t ncap = cap ? 2 * cap : 64;
                vedge_t *ne = realloc(e, ncap * sizeof(*ne));
                if (ne == NULL) {
                    free(e);
                    return ccs_err_set(v->err, CCS_ERR_NOMEM,
                                       "out of memory for verifier "
                                       "segments");
                }
                e = ne;
                cap = ncap;
            }
            e[n++] = cand[i];
        }
    }
    *out = e;
    *nout = n;
    return CCS_OK;
}

/* Carry the cuts inside each shifting move to its other side until no
 * new cut appears.  Terminates: cuts only grow, within [0, length].  A
 * schedule's moves rarely chain, so one or two passes do; a file built to
 * chain them (each pass moving a cut one move further) is refused once the
 * passes have cost CLOSE_WORK_MAX move visits, rather than run for hours. */
#define CLOSE_WORK_MAX (UINT64_C(1) << 30)

static ccs_status_t close_cuts(vctx_t *v)
{
    vedge_t *e = NULL;
    size_t ne = 0;
    bool grew = true;
    uint64_t work = 0;
    ccs_status_t st = shifting_edges(v, &e, &ne);

    while (st == CCS_OK && grew) {
        uint32_t before[VS_COUNT] = { v->sp[0].nb, v->sp[1].nb };
        work += ne;
        for (size_t i = 0; i < ne && st == CCS_OK; i++) {
            if (work > CLOSE_WORK_MAX) {
                st = ccs_err_set(v->err, CCS_ERR_NOMEM,
                                 "verifier work would exceed its budget "
                                 "(%u ranks, %u chunks, %u scratch chunks: "
                                 "%zu moves between chunk positions cut "
                                 "the chunks into more than %u segments)",
                                 v->s->nranks, v->s->nchunks,
                                 v->s->nscratch, ne,
                                 v->sp[0].nb + v->sp[1].nb);
                break;
            }
            for (int dir = 0; dir < 2 && st == CCS_OK; dir++) {
                unsigned sa = dir ? e[i].sb : e[i].sa;
                unsigned sb = dir ? e[i].sa : e[i].sb;
                uint32_t a = dir ? e[i].b : e[i].a;
                uint32_t b = dir ? e[i].a : e[i].b;
                /* Cuts strictly inside (a, a + n), from the sorted
                 * prefixes; new ones go past them (cut may move b). */
                uint32_t k = prefix_find(v->sp[sa].b, before[sa], a) + 1;
                for (; k < before[sa] && v->sp[sa].b[k] < a + e[i].n &&
                       st == CCS_OK; k++) {
                    uint32_t q = b + (v->sp[sa].b[k] - a);
                    uint32_t j = prefix_find(v->sp[sb].b, before[sb], q);
                    work++;
                    if (v->sp[sb].b[j] != q)
                        st = cut(v, sb, q);
                }
            }
        }
        grew = false;
        for (unsigned sp = 0; sp < VS_COUNT; sp++) {
            /* New cuts were appended past the sorted prefix: re-sort. */
            if (v->sp[sp].nb != before[sp]) {
                sort_unique(&v->sp[sp], sp == VS_IO ? v->s->nchunks
                                                    : v->s->nscratch,
                            dense_ok(v));
                grew = grew || v->sp[sp].nb != before[sp];
            }
        }
    }
    free(e);
    return st;
}

/* A cut point: a bit of bm[space] when the space is mapped densely (no
 * sort needed then), else appended to the space's list. */
static ccs_status_t add_cut(vctx_t *v, uint64_t *const *bm, unsigned space,
                            uint32_t pos)
{
    if (bm[space] != NULL) {
        bm[space][pos / 64] |= UINT64_C(1) << (pos % 64);
        return CCS_OK;
    }
    return cut(v, space, pos);
}

/* The set bits of bm (len + 1 of them) as the space's sorted cut list. */
static ccs_status_t cuts_from_bitmap(vctx_t *v, unsigned space,
                                     const uint64_t *bm, uint32_t len)
{
    vspace_t *sp = &v->sp[space];
    uint32_t n = 0, k = 0;

    for (uint32_t w = 0; w <= len / 64; w++)
        n += (uint32_t)__builtin_popcountll(bm[w]);
    if (n > sp->cap) {
        uint32_t *nb = realloc(sp->b, (size_t)n * sizeof(*nb));
        if (nb == NULL)
            return ccs_err_set(v->err, CCS_ERR_NOMEM,
                               "out of memory for verifier segments");
        sp->b = nb;
        sp->cap = n;
    }
    for (uint32_t w = 0; w <= len / 64; w++) {
        uint64_t x = bm[w];
        while (x != 0) {
            sp->b[k++] = w * 64 + (uint32_t)__builtin_ctzll(x);
            x &= x - 1;
        }
    }
    sp->nb = n;
    return CCS_OK;
}

static ccs_status_t build_cuts(vctx_t *v)
{
    const ccs_sched_t *s = v->s;
    uint32_t len[VS_COUNT] = { s->nchunks, s->nscratch };
    uint64_t *bm[VS_COUNT] = { NULL, NULL };  /* owned here */
    ccs_status_t st = CCS_OK;

    /* Dense buffers: a bitmap per space takes the cuts (2 to 4 per op)
     * straight away, instead of a list of them to grow and sort. */
    for (unsigned sp = 0; sp < VS_COUNT && dense_ok(v); sp++) {
        bm[sp] = calloc((size_t)len[sp] / 64 + 1, sizeof(uint64_t));
        if (bm[sp] == NULL)
            st = ccs_err_set(v->err, CCS_ERR_NOMEM,
                             "out of memory for verifier segments");
    }
    for (unsigned sp = 0; sp < VS_COUNT && st == CCS_OK; sp++) {
        st = add_cut(v, bm, sp, 0);
        if (st == CCS_OK)
            st = add_cut(v, bm, sp, len[sp]);
    }
    /* Block ends: valid spans and expected values change only there. */
    if (ccs_coll_blocked(s->coll)) {
        uint32_t b = ccs_coll_block(s->coll, s->nranks, s->nchunks);
        for (uint32_t r = 1; r < s->nranks && b > 0 && st == CCS_OK; r++)
            st = add_cut(v, bm, VS_IO, r * b);
    }
    for (uint32_t r = 0; r < s->nranks && st == CCS_OK; r++) {
        const ccs_op_t *ops = s->rank_ops[r];
        for (uint32_t i = 0; i < s->rank_nops[r] && st == CCS_OK; i++) {
            const ccs_op_t *op = &ops[i];
            unsigned sp = vspace_of(op->buf);
            st = add_cut(v, bm, sp, op->chunk);
            if (st == CCS_OK)
                st = add_cut(v, bm, sp, op->chunk + op->nchunks);
            if (st == CCS_OK && (op->kind == CCS_OP_RECV_REDUCE ||
                                 op->kind == CCS_OP_COPY ||
                                 op->kind == CCS_OP_REDUCE_LOCAL)) {
                sp = vspace_of(op->src_buf);
                st = add_cut(v, bm, sp, op->src_chunk);
                if (st == CCS_OK)
                    st = add_cut(v, bm, sp, op->src_chunk + op->nchunks);
            }
        }
    }
    for (unsigned sp = 0; sp < VS_COUNT && st == CCS_OK; sp++) {
        if (bm[sp] != NULL)
            st = cuts_from_bitmap(v, sp, bm[sp], len[sp]);
        else
            sort_unique(&v->sp[sp], len[sp], false);
    }
    free(bm[0]);
    free(bm[1]);
    if (st != CCS_OK)
        return st;
    v->sp[VS_IO].first = 0;
    v->sp[VS_SCRATCH].first = v->sp[VS_IO].nb - 1;
    st = close_cuts(v);
    if (st != CCS_OK)
        return st;
    v->sp[VS_SCRATCH].first = v->sp[VS_IO].nb - 1;
    v->nseg = v->sp[VS_IO].nb - 1 + v->sp[VS_SCRATCH].nb - 1;
    if (dense_ok(v)) {
        uint64_t total = (uint64_t)s->nchunks + s->nscratch;
        /* Owned by v; a failed malloc leaves the binary search. */
        uint32_t *map = malloc((size_t)(total ? total : 1) * sizeof(uint32_t));
        for (uint32_t g = 0; map != NULL && g < v->nseg; g++) {
            uint32_t off = g >= v->sp[VS_SCRATCH].first ? s->nchunks : 0;
            for (uint32_t c = vseg_lo(v, g); c < vseg_hi(v, g); c++)
                map[off + c] = g;
        }
        v->segmap = map;
    }
    return CCS_OK;
}

/* ---- Stateful segments and pieces ---- */

static void mark_range(vctx_t *v, unsigned buf, uint32_t chunk, uint32_t n)
{
    uint32_t g, last;

    if (!vstateful(buf))
        return;
    g = vseg_find(v, vspace_of(buf), chunk);
    last = vseg_find(v, vspace_of(buf), chunk + n - 1);
    for (; g <= last; g++)
        v->tcol[g] = 0;
}

static ccs_status_t index_pieces(vctx_t *v)
{
    uint64_t total = 0;
    bool one_each = true;

    v->tcol = malloc((size_t)(v->nseg ? v->nseg : 1) * sizeof(uint32_t));
    if (v->tcol == NULL)
        return ccs_err_set(v->err, CCS_ERR_NOMEM, "out of memory");
    for (uint32_t g = 0; g < v->nseg; g++)
        v->tcol[g] = VNONE;
    for (uint32_t f = 0; f < v->nops; f++) {
        const ccs_op_t *op = vop(v, f);
        unsigned sp = vspace_of(op->buf);
        uint32_t g0 = vseg_find(v, sp, op->chunk);
        uint32_t g1 = vseg_find(v, sp, op->chunk + op->nchunks - 1);
        total += g1 - g0 + 1;
        one_each = one_each && g1 == g0;
        mark_range(v, op->buf, op->chunk, op->nchunks);
        if (op->kind == CCS_OP_RECV_REDUCE || op->kind == CCS_OP_COPY ||
            op->kind == CCS_OP_REDUCE_LOCAL)
            mark_range(v, op->src_buf, op->src_chunk, op->nchunks);
    }
    if (total >= UINT32_MAX)
        return ccs_err_set(v->err, CCS_ERR_UNSUPPORTED,
                           "%llu op pieces: too many for the verifier",
                           (unsigned long long)total);
    v->npieces = (uint32_t)total;
    v->T = 0;
    for (uint32_t g = 0; g < v->nseg; g++) {
        if (v->tcol[g] != VNONE)
            v->tcol[g] = v->T++;
    }
    v->tseg = malloc((size_t)(v->T ? v->T : 1) * sizeof(uint32_t));
    if (v->tseg == NULL)
        return ccs_err_set(v->err, CCS_ERR_NOMEM, "out of memory");
    for (uint32_t g = 0; g < v->nseg; g++) {
        if (v->tcol[g] != VNONE)
            v->tseg[v->tcol[g]] = g;
    }
    if (one_each)
        return CCS_OK;
    v->piece_base = malloc(((size_t)v->nops + 1) * sizeof(uint32_t));
    if (v->piece_base == NULL)
        return ccs_err_set(v->err, CCS_ERR_NOMEM, "out of memory");
    total = 0;
    for (uint32_t f = 0; f < v->nops; f++) {
        const ccs_op_t *op = vop(v, f);
        unsigned sp = vspace_of(op->buf);
        v->piece_base[f] = (uint32_t)total;
        total += vseg_find(v, sp, op->chunk + op->nchunks - 1) -
                 vseg_find(v, sp, op->chunk) + 1;
    }
    v->piece_base[v->nops] = (uint32_t)total;
    return CCS_OK;
}

/* The verifier's memory besides the schedule: per op the rank, step order,
 * pairing and each receive's send position (14 bytes; 10 without the
 * step-order permutation, VERIFY_CURSOR_WALK) and the piece index
 * (4, when ops span several segments); per piece its column, its (piece,
 * rank, send position) entry in the column lists and at most one fill
 * cursor (20); the last-writer and live-slot
 * tables (8 bytes per rank per stateful segment); per live cell of the
 * largest column 8 * ceil(R / 64) + 16 bytes (checked as the column
 * grows).  Refused up front past VERIFY_MEM_LIMIT.  The pairing's own
 * scratch (ccs_sched_pair, 4 bytes per send) is gone by then. */
static ccs_status_t vseg_budget(vctx_t *v)
{
    const ccs_sched_t *s = v->s;
    uint64_t bytes = (uint64_t)v->nops * ((v->use_order ? 14 : 10) +
                                          (v->piece_base ? 4 : 0)) +
                     (uint64_t)v->npieces * 20 +
                     (uint64_t)s->nranks * v->T * 8 + (uint64_t)v->nseg * 8;

    if (bytes <= VERIFY_MEM_LIMIT)
        return CCS_OK;
    return ccs_err_set(v->err, CCS_ERR_NOMEM,
                       "verifier state would exceed %llu MiB (%u ranks, %u "
                       "chunks, %u scratch chunks: %llu MiB for %u ops in "
                       "%u pieces and %u ranks x %u chunk segments)",
                       (unsigned long long)(VERIFY_MEM_LIMIT >> 20),
                       s->nranks, s->nchunks, s->nscratch,
                       (unsigned long long)(bytes >> 20), v->nops,
                       v->npieces, s->nranks, v->T);
}

/* ---- Columns ---- */

static uint32_t uf_find(uint32_t *p, uint32_t x)
{
    while (p[x] != x) {
        p[x] = p[p[x]];
        x = p[x];
    }
    return x;
}

/* The smaller root stays: every piece's root is the least piece of its
 * column, which renumbering relies on. */
static void uf_unite(uint32_t *p, uint32_t a, uint32_t b)
{
    a = uf_find(p, a);
    b = uf_find(p, b);
    if (a < b)
        p[b] = a;
    else if (b < a)
        p[a] = b;
}

static uint32_t *cell_lw(vctx_t *v, uint32_t rank, uint32_t g)
{
    return &v->lw[(size_t)rank * v->T + v->tcol[g]];
}

/* Join piece pid with the last writer of (rank, buf at pos). */
static void join_reader(vctx_t *v, uint32_t pid, uint32_t rank,
                        unsigned buf, uint32_t pos)
{
    uint32_t w;

    if (!vstateful(buf))
        return;
    w = *cell_lw(v, rank, vseg_find(v, vspace_of(buf), pos));
    if (w != VNONE)
        uf_unite(v->comp, pid, w);
}

/* Join piece pid of op (rank r, flat f) with what it reads (pass 0), or
 * record it as the last writer of its cell (pass 1). */
static void sweep_piece(vctx_t *v, uint32_t f, uint32_t r, const ccs_op_t *op,
                        uint32_t pid, uint32_t g, int pass)
{
    uint32_t e = vseg_lo(v, g) - op->chunk;

    if (pass == 1) {
        if (op->kind != CCS_OP_SEND)
            *cell_lw(v, r, g) = pid;
        return;
    }
    switch (op->kind) {
    case CCS_OP_SEND:
        join_reader(v, pid, r, op->buf, op->chunk + e);
        break;
    case CCS_OP_REDUCE_LOCAL:
        join_reader(v, pid, r, op->buf, op->chunk + e);
        join_reader(v, pid, r, op->src_buf, op->src_chunk + e);
        break;
    case CCS_OP_COPY:
        join_reader(v, pid, r, op->src_buf, op->src_chunk + e);
        break;
    default: { /* RECV, RECV_REDUCE: and their send */
        uint32_t fs = v->pair.mate[f], sj = 0;
        /* With one piece per op the send's piece is the send itself (and
         * its op, on another rank's array, need not be read). */
        if (v->piece_base != NULL) {
            unsigned ss = vspace_of(vsend_buf(v->xsend[f]));
            sj = vseg_find(v, ss, vsend_chunk(v->xsend[f]) + e) -
                 vseg_find(v, ss, vsend_chunk(v->xsend[f]));
        }
        uf_unite(v->comp, pid, vpiece_first(v, fs) + sj);
        if (op->kind == CCS_OP_RECV_REDUCE)
            join_reader(v, pid, r, op->src_buf, op->src_chunk + e);
        break;
    }
    }
}

/* A rank's cells are read and written by its own ops only (a receive
 * joins its send directly), so the sweep goes rank by rank through each
 * rank's ops in step order: in each step, join the reads with the
 * writers before the step, then record the step's writes (they land when
 * the step ends). */
#define SWEEP_AHEAD 16

static void sweep_dataflow(vctx_t *v)
{
    const ccs_sched_t *s = v->s;

    for (uint32_t r = 0; r < s->nranks; r++) {
        const ccs_op_t *ops = s->rank_ops[r];
        uint32_t n = s->rank_nops[r], i = 0;

        while (i < n) {
            uint32_t j = i;
            while (j < n && ops[j].step == ops[i].step)
                j++;
            /* The sends that receives ahead join lie anywhere: fetch
             * their union-find entries early. */
            for (uint32_t q = i + SWEEP_AHEAD; q < j + SWEEP_AHEAD &&
                                                q < n; q++) {
                uint32_t fm = v->pair.mate[v->pair.base[r] + q];
                if (ops[q].kind == CCS_OP_RECV ||
                    ops[q].kind == CCS_OP_RECV_REDUCE)
                    __builtin_prefetch(v->piece_base != NULL
                                           ? &v->piece_base[fm]
                                           : &v->comp[fm]);
            }
            for (int pass = 0; pass < 2; pass++) {
                for (uint32_t q = i; q < j; q++) {
                    const ccs_op_t *op = &ops[q];
                    uint32_t f = v->pair.base[r] + q;
                    unsigned sp = vspace_of(op->buf);
                    uint32_t g = vseg_find(v, sp, op->chunk);
                    uint32_t last = vseg_find(v, sp, op->chunk +
                                                     op->nchunks - 1);
                    uint32_t pid = vpiece_first(v, f);
                    for (; g <= last; g++, pid++)
                        sweep_piece(v, f, r, op, pid, g, pass);
                }
            }
            i = j;
        }
    }
}

/* Append op f (rank r) to its columns' lists. */
static void list_op(vctx_t *v, uint32_t *fill, uint32_t f, uint32_t r)
{
    uint32_t a = vpiece_first(v, f);
    uint32_t b = v->piece_base ? v->piece_base[f + 1] : f + 1;

    for (uint32_t pid = a; pid < b; pid++) {
        uint32_t *e = &v->ent[VENT * (size_t)fill[v->comp[pid]]++];
        e[0] = pid;
        e[1] = r;
        e[2] = v->xsend[f];
    }
}

#define LIST_AHEAD 16

/* In step order without the permutation: each step visits every rank
 * and lists the ops at its cursor that belong to the step.  The ranks
 * ahead keep their ops on other arrays, so their next op and its column
 * are fetched early.  *cur: [nranks] scratch. */
static void list_by_cursor(vctx_t *v, uint32_t *fill, uint32_t *cur)
{
    const ccs_sched_t *s = v->s;
    uint32_t R = s->nranks;

    memset(cur, 0, (size_t)R * sizeof(*cur));
    for (uint32_t t = 0; t < s->nsteps; t++) {
        for (uint32_t r = 0; r < R; r++) {
            const ccs_op_t *ops = s->rank_ops[r];
            uint32_t i = cur[r], n = s->rank_nops[r];
            if (r + LIST_AHEAD < R) {
                uint32_t ra = r + LIST_AHEAD, ia = cur[ra];
                if (ia < s->rank_nops[ra]) {
                    uint32_t fa = v->pair.base[ra] + ia;
                    __builtin_prefetch(&s->rank_ops[ra][ia]);
                    __builtin_prefetch(&v->comp[vpiece_first(v, fa)]);
                    __builtin_prefetch(&v->xsend[fa]);
                }
            }
            for (; i < n && ops[i].step == t; i++)
                list_op(v, fill, v->pair.base[r] + i, r);
            cur[r] = i;
        }
    }
}

/* In step order; the ops ahead lie on other ranks' arrays, so their
 * columns and ranks are fetched early. */
static void list_by_order(vctx_t *v, uint32_t *fill)
{
    for (uint32_t p = 0; p < v->nops; p++) {
        if (p + LIST_AHEAD < v->nops) {
            uint32_t fa = v->order[p + LIST_AHEAD];
            __builtin_prefetch(&v->comp[vpiece_first(v, fa)]);
            __builtin_prefetch(&v->rank_of[fa]);
            __builtin_prefetch(&v->xsend[fa]);
        }
        list_op(v, fill, v->order[p], v->rank_of[v->order[p]]);
    }
}

/* Number the columns 0..ncomp-1 and list their pieces in step order. */
static ccs_status_t list_columns(vctx_t *v)
{
    uint32_t *fill = NULL;  /* owned here */
    uint32_t *cur = NULL;   /* owned here: per-rank cursors */
    uint32_t n = 0;

    for (uint32_t pid = 0; pid < v->npieces; pid++)
        v->comp[pid] = uf_find(v->comp, pid);
    for (uint32_t pid = 0; pid < v->npieces; pid++) {
        uint32_t root = v->comp[pid];
        /* root <= pid and was numbered first (high bit marks done). */
        if (root == pid)
            v->comp[pid] = n++ | UINT32_C(0x80000000);
        else
            v->comp[pid] = v->comp[root];
    }
    for (uint32_t pid = 0; pid < v->npieces; pid++)
        v->comp[pid] &= UINT32_C(0x7fffffff);
    v->ncomp = n;
    v->comp_start = calloc((size_t)n + 1, sizeof(uint32_t));
    v->ent = malloc((size_t)(v->npieces ? v->npieces : 1) * VENT *
                    sizeof(uint32_t));
    fill = malloc((size_t)(n ? n : 1) * sizeof(uint32_t));
    if (!v->use_order)
        cur = malloc(((size_t)v->s->nranks + 1) * sizeof(uint32_t));
    if (v->comp_start == NULL || v->ent == NULL || fill == NULL ||
        (!v->use_order && cur == NULL)) {
        free(fill);
        free(cur);
        return ccs_err_set(v->err, CCS_ERR_NOMEM, "out of memory");
    }
    for (uint32_t pid = 0; pid < v->npieces; pid++)
        v->comp_start[v->comp[pid] + 1]++;
    for (uint32_t k = 0; k < n; k++) {
        v->comp_start[k + 1] += v->comp_start[k];
        fill[k] = v->comp_start[k];
    }
    if (v->use_order)
        list_by_order(v, fill);
    else
        list_by_cursor(v, fill, cur);
    free(fill);
    free(cur);
    return CCS_OK;
}

ccs_status_t vseg_build(vctx_t *v)
{
    const ccs_sched_t *s = v->s;
    ccs_status_t st;
    size_t cells;

    st = build_cuts(v);
    if (st == CCS_OK)
        st = index_pieces(v);
    if (st == CCS_OK)
        st = vseg_budget(v);
    if (st != CCS_OK)
        return st;
    cells = (size_t)s->nranks * v->T;
    v->comp = malloc((size_t)(v->npieces ? v->npieces : 1) *
                     sizeof(uint32_t));
    v->lw = malloc((cells ? cells : 1) * sizeof(uint32_t));
    if (v->comp == NULL || v->lw == NULL)
        return ccs_err_set(v->err, CCS_ERR_NOMEM,
                           "out of memory for verifier state");
    for (uint32_t pid = 0; pid < v->npieces; pid++)
        v->comp[pid] = pid;
    memset(v->lw, 0xff, cells * sizeof(uint32_t));
    sweep_dataflow(v);
    /* The sends are found through xsend from here on. */
    free(v->pair.mate);
    v->pair.mate = NULL;
    v->final = calloc((size_t)v->npieces / 64 + 1, sizeof(uint64_t));
    if (v->final == NULL)
        return ccs_err_set(v->err, CCS_ERR_NOMEM,
                           "out of memory for verifier state");
    for (size_t c = 0; c < cells; c++) {
        if (v->lw[c] != VNONE)
            v->final[v->lw[c] / 64] |= UINT64_C(1) << (v->lw[c] % 64);
    }
    /* Listing through per-rank cursors knows each op's rank: the ranks
     * go before the column lists, the peak's largest part, are made. */
    if (!v->use_order) {
        free(v->rank_of);
        v->rank_of = NULL;
    }
    st = list_columns(v);
    /* What only the sweep and the listing needed. */
    free(v->order);
    v->order = NULL;
    free(v->rank_of);
    v->rank_of = NULL;
    free(v->xsend);
    v->xsend = NULL;
    free(v->comp);
    v->comp = NULL;
    return st;
}
