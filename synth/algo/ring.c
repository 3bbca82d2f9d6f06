/*
 * ring.c - ring reduce-scatter and all-gather over an ordered subset of
 * ranks (contract in ring.h).  Used by the ring baseline (algo_ring.c) on
 * all ranks, by StragglAR's phase 0 on the n-1 non-stragglers, and by
 * NCCL's multi-channel ring (nccl.c), one call per channel on shared
 * steps with blocks strided over the channels.
 *
 * Positions, not rank ids: position i is ranks[i], its successor is
 * position (i+1) mod k, and position i owns block i.
 *
 * Reduce-scatter, step t = 0..k-2: position i sends block (i-1-t) mod k to
 * i+1, which reduces it with its own IN copy of that block.  At t = 0 the
 * block comes straight from IN; later it is the partial sum received in
 * step t-1.  At the last step t = k-2 the block travelling to i+1 is block
 * i+1 itself, so the receiver lands its final sum in OUT.  Within one step
 * a rank reads block (i-1-t) and writes block (i-2-t): different blocks
 * for k >= 2, as the IR requires.
 *
 * All-gather, step t = 0..k-2: position i forwards block (i-t) mod k (its
 * own block at t = 0, then the one it received in step t-1) to i+1.
 *
 * Per step every position sends one and receives one transfer of `per`
 * chunks (one-port); cost on a uniform switch, s bytes over the k blocks:
 * (k-1) a + (k-1)/k s b for each of the two.
 */
#include <stdlib.h>

#include "ring.h"

/* Chunk of the block owned by ring position i (before the offset of a
 * temporary buffer). */
static uint32_t ring_block(const ring_shape_t *sh, const uint32_t *ranks,
                           uint32_t i)
{
    return sh->by_rank ? ranks[i] : i;
}

/* Check the arguments shared by both operations: a valid schedule, k >= 1
 * distinct in-range ranks, blocks inside IN/OUT, steps that exist. */
static ccs_status_t ring_check(const ccs_sched_t *s, const uint32_t *ranks,
                               uint32_t k, const ring_shape_t *sh,
                               const char *what, ccs_err_t *err)
{
    uint8_t *seen = NULL;
    ccs_status_t st = CCS_OK;
    uint64_t last;

    if (s == NULL || ranks == NULL || sh == NULL)
        return ccs_err_set(err, CCS_ERR_INVALID, "%s: NULL argument", what);
    if (k < 1 || k > s->nranks)
        return ccs_err_set(err, CCS_ERR_INVALID,
                           "%s: %u ranks in the ring, schedule has %u", what,
                           k, s->nranks);
    if (sh->per < 1 || sh->stride < sh->per)
        return ccs_err_set(err, CCS_ERR_INVALID, "%s: %u chunks per block "
                           "at a stride of %u", what, sh->per, sh->stride);
    if (sh->step0 != RING_APPEND &&
        (uint64_t)sh->step0 + (k > 1 ? k - 1 : 1) > s->nsteps)
        return ccs_err_set(err, CCS_ERR_INVALID, "%s: steps from %u pass "
                           "the schedule's %u", what, sh->step0, s->nsteps);
    /* Owned here, freed before return: one flag per rank. */
    seen = calloc(s->nranks, 1);
    if (seen == NULL)
        return ccs_err_set(err, CCS_ERR_NOMEM, "%s: out of memory", what);
    for (uint32_t i = 0; i < k; i++) {
        if (ranks[i] >= s->nranks) {
            st = ccs_err_set(err, CCS_ERR_INVALID,
                             "%s: ring position %u is rank %u, out of range "
                             "0..%u", what, i, ranks[i], s->nranks - 1);
            break;
        }
        if (seen[ranks[i]]) {
            st = ccs_err_set(err, CCS_ERR_INVALID,
                             "%s: rank %u appears twice in the ring", what,
                             ranks[i]);
            break;
        }
        seen[ranks[i]] = 1;
    }
    free(seen);
    if (st != CCS_OK)
        return st;
    last = sh->by_rank ? s->nranks - 1 : k - 1;
    if ((uint64_t)sh->chunk0 + last * sh->stride + sh->per > s->nchunks)
        return ccs_err_set(err, CCS_ERR_INVALID,
                           "%s: %u blocks of %u chunks from chunk %u pass "
                           "the end of the buffer (%u chunks)", what, k,
                           sh->per, sh->chunk0, s->nchunks);
    return CCS_OK;
}

/* Step t of the ring: the caller's step0 + t, or a new one. */
static ccs_status_t ring_step(ccs_sched_t *s, const ring_shape_t *sh,
                              uint32_t t, uint32_t phase, uint32_t *step,
                              ccs_err_t *err)
{
    if (sh->step0 != RING_APPEND) {
        *step = sh->step0 + t;
        return CCS_OK;
    }
    return ccs_sched_add_step(s, phase, step, err);
}

void ring_shape_init(ring_shape_t *sh, uint32_t chunk0, uint32_t per)
{
    sh->chunk0 = chunk0;
    sh->per = per;
    sh->stride = per;
    sh->by_rank = false;
    sh->step0 = RING_APPEND;
}

ccs_status_t ring_reduce_scatter_shaped(ccs_sched_t *s,
                                        const uint32_t *ranks, uint32_t k,
                                        const ring_shape_t *sh,
                                        ccs_buf_t tmp_buf,
                                        uint32_t tmp_chunk0, uint32_t phase,
                                        ccs_err_t *err)
{
    ccs_status_t st;
    uint32_t step;

    st = ring_check(s, ranks, k, sh, "ring reduce-scatter", err);
    if (st != CCS_OK)
        return st;
    if (tmp_buf != CCS_BUF_OUT && tmp_buf != CCS_BUF_SCRATCH)
        return ccs_err_set(err, CCS_ERR_INVALID,
                           "ring reduce-scatter: partial sums cannot travel "
                           "in %s", ccs_buf_str(tmp_buf));
    if ((uint64_t)tmp_chunk0 +
            (uint64_t)((sh->by_rank ? s->nranks : k) - 1) * sh->stride +
            sh->per > (tmp_buf == CCS_BUF_OUT ? s->nchunks
                                              : CCS_MAX_CHUNKS))
        return ccs_err_set(err, CCS_ERR_INVALID,
                           "ring reduce-scatter: partial blocks from %s "
                           "chunk %u pass the end", ccs_buf_str(tmp_buf),
                           tmp_chunk0);

    if (k == 1) {
        /* A ring of one: the reduction of one contribution is itself. */
        uint32_t c = sh->chunk0 + ring_block(sh, ranks, 0) * sh->stride;

        st = ring_step(s, sh, 0, phase, &step, err);
        if (st != CCS_OK)
            return st;
        return ccs_sched_local(s, step, ranks[0], CCS_BUF_OUT, c,
                               CCS_BUF_IN, c, sh->per, false, err);
    }
    for (uint32_t t = 0; t + 1 < k; t++) {
        bool last = t + 2 == k;

        st = ring_step(s, sh, t, phase, &step, err);
        if (st != CCS_OK)
            return st;
        for (uint32_t i = 0; i < k; i++) {
            uint32_t j = (i + 1) % k;
            /* block of position (i-1-t) mod k */
            uint32_t b = ring_block(sh, ranks, (i + 2 * k - 1 - t) % k);
            uint32_t off = b * sh->stride;
            ccs_buf_t sbuf = t == 0 ? CCS_BUF_IN : tmp_buf;
            uint32_t schunk = (t == 0 ? sh->chunk0 : tmp_chunk0) + off;
            ccs_buf_t dbuf = last ? CCS_BUF_OUT : tmp_buf;
            uint32_t dchunk = (last ? sh->chunk0 : tmp_chunk0) + off;

            /* Receiver: dst = its own IN block (+) the partial. */
            st = ccs_sched_xfer_reduce_from(s, step, ranks[i], sbuf, schunk,
                                            ranks[j], dbuf, dchunk,
                                            CCS_BUF_IN, sh->chunk0 + off,
                                            sh->per, err);
            if (st != CCS_OK)
                return st;
        }
    }
    return CCS_OK;
}

ccs_status_t ring_reduce_scatter_tmp(ccs_sched_t *s, const uint32_t *ranks,
                                     uint32_t k, uint32_t chunk0,
                                     uint32_t per, ccs_buf_t tmp_buf,
                                     uint32_t tmp_chunk0, uint32_t phase,
                                     ccs_err_t *err)
{
    ring_shape_t sh;

    ring_shape_init(&sh, chunk0, per);
    return ring_reduce_scatter_shaped(s, ranks, k, &sh, tmp_buf, tmp_chunk0,
                                      phase, err);
}

ccs_status_t ring_reduce_scatter(ccs_sched_t *s, const uint32_t *ranks,
                                 uint32_t k, uint32_t chunk0, uint32_t per,
                                 uint32_t phase, ccs_err_t *err)
{
    return ring_reduce_scatter_tmp(s, ranks, k, chunk0, per, CCS_BUF_OUT,
                                   chunk0, phase, err);
}

ccs_status_t ring_all_gather_shaped(ccs_sched_t *s, const uint32_t *ranks,
                                    uint32_t k, const ring_shape_t *sh,
                                    bool from_in, uint32_t phase,
                                    ccs_err_t *err)
{
    ccs_status_t st;
    uint32_t step;

    st = ring_check(s, ranks, k, sh, "ring all-gather", err);
    if (st != CCS_OK)
        return st;
    if (k == 1 && from_in) {
        uint32_t c = sh->chunk0 + ring_block(sh, ranks, 0) * sh->stride;

        st = ring_step(s, sh, 0, phase, &step, err);
        if (st != CCS_OK)
            return st;
        return ccs_sched_local(s, step, ranks[0], CCS_BUF_OUT, c,
                               CCS_BUF_IN, c, sh->per, false, err);
    }
    for (uint32_t t = 0; t + 1 < k; t++) {
        st = ring_step(s, sh, t, phase, &step, err);
        if (st != CCS_OK)
            return st;
        for (uint32_t i = 0; i < k; i++) {
            uint32_t j = (i + 1) % k;
            /* block of position (i-t) mod k */
            uint32_t c = sh->chunk0 +
                         ring_block(sh, ranks, (i + k - t) % k) * sh->stride;
            ccs_buf_t sbuf = (t == 0 && from_in) ? CCS_BUF_IN : CCS_BUF_OUT;

            st = ccs_sched_xfer(s, step, ranks[i], sbuf, c, ranks[j],
                                CCS_BUF_OUT, c, sh->per, false, err);
            if (st != CCS_OK)
                return st;
            /* The own block also lands in the own OUT; in step 0 that
             * rank writes only block i-1 otherwise, so no conflict. */
            if (t == 0 && from_in) {
                st = ccs_sched_local(s, step, ranks[i], CCS_BUF_OUT, c,
                                     CCS_BUF_IN, c, sh->per, false, err);
                if (st != CCS_OK)
                    return st;
            }
        }
    }
    return CCS_OK;
}

ccs_status_t ring_all_gather(ccs_sched_t *s, const uint32_t *ranks,
                             uint32_t k, uint32_t chunk0, uint32_t per,
                             uint32_t phase, ccs_err_t *err)
{
    ring_shape_t sh;

    ring_shape_init(&sh, chunk0, per);
    return ring_all_gather_shaped(s, ranks, k, &sh, false, phase, err);
}

ccs_status_t ring_all_gather_from_in(ccs_sched_t *s, const uint32_t *ranks,
                                     uint32_t k, uint32_t chunk0,
                                     uint32_t per, uint32_t phase,
                                     ccs_err_t *err)
{
    ring_shape_t sh;

    ring_shape_init(&sh, chunk0, per);
    return ring_all_gather_shaped(s, ranks, k, &sh, true, phase, err);
}
