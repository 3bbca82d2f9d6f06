/*
 * ring.c - ring reduce-scatter and all-gather over an ordered subset of
 * ranks (contract in ring.h).  Used by the ring baseline (algo_ring.c) on
 * all ranks and by StragglAR's phase 0 on the n-1 non-stragglers.
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

/* Check the arguments shared by both operations: a valid schedule, k >= 1
 * distinct in-range ranks, blocks inside IN/OUT. */
static ccs_status_t ring_check(const ccs_sched_t *s, const uint32_t *ranks,
                               uint32_t k, uint32_t chunk0, uint32_t per,
                               const char *what, ccs_err_t *err)
{
    uint8_t *seen = NULL;
    ccs_status_t st = CCS_OK;

    if (s == NULL || ranks == NULL)
        return ccs_err_set(err, CCS_ERR_INVALID, "%s: NULL argument", what);
    if (k < 1 || k > s->nranks)
        return ccs_err_set(err, CCS_ERR_INVALID,
                           "%s: %u ranks in the ring, schedule has %u", what,
                           k, s->nranks);
    if (per < 1)
        return ccs_err_set(err, CCS_ERR_INVALID, "%s: 0 chunks per block",
                           what);
    if ((uint64_t)chunk0 + (uint64_t)k * per > s->nchunks)
        return ccs_err_set(err, CCS_ERR_INVALID,
                           "%s: %u blocks of %u chunks from chunk %u pass "
                           "the end of the buffer (%u chunks)", what, k, per,
                           chunk0, s->nchunks);
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
    return st;
}

ccs_status_t ring_reduce_scatter_tmp(ccs_sched_t *s, const uint32_t *ranks,
                                     uint32_t k, uint32_t chunk0,
                                     uint32_t per, ccs_buf_t tmp_buf,
                                     uint32_t tmp_chunk0, uint32_t phase,
                                     ccs_err_t *err)
{
    ccs_status_t st;
    uint32_t step;

    st = ring_check(s, ranks, k, chunk0, per, "ring reduce-scatter", err);
    if (st != CCS_OK)
        return st;
    if (tmp_buf != CCS_BUF_OUT && tmp_buf != CCS_BUF_SCRATCH)
        return ccs_err_set(err, CCS_ERR_INVALID,
                           "ring reduce-scatter: partial sums cannot travel "
                           "in %s", ccs_buf_str(tmp_buf));
    if ((uint64_t)tmp_chunk0 + (uint64_t)k * per >
        (tmp_buf == CCS_BUF_OUT ? s->nchunks : CCS_MAX_CHUNKS))
        return ccs_err_set(err, CCS_ERR_INVALID,
                           "ring reduce-scatter: partial blocks from %s "
                           "chunk %u pass the end", ccs_buf_str(tmp_buf),
                           tmp_chunk0);

    if (k == 1) {
        /* A ring of one: the reduction of one contribution is itself. */
        st = ccs_sched_add_step(s, phase, &step, err);
        if (st != CCS_OK)
            return st;
        return ccs_sched_local(s, step, ranks[0], CCS_BUF_OUT, chunk0,
                               CCS_BUF_IN, chunk0, per, false, err);
    }
    for (uint32_t t = 0; t + 1 < k; t++) {
        bool last = t + 2 == k;

        st = ccs_sched_add_step(s, phase, &step, err);
        if (st != CCS_OK)
            return st;
        for (uint32_t i = 0; i < k; i++) {
            uint32_t j = (i + 1) % k;
            uint32_t b = (i + 2 * k - 1 - t) % k;    /* (i-1-t) mod k */
            ccs_buf_t sbuf = t == 0 ? CCS_BUF_IN : tmp_buf;
            uint32_t schunk = (t == 0 ? chunk0 : tmp_chunk0) + b * per;
            ccs_buf_t dbuf = last ? CCS_BUF_OUT : tmp_buf;
            uint32_t dchunk = (last ? chunk0 : tmp_chunk0) + b * per;

            /* Receiver: dst = its own IN block (+) the partial. */
            st = ccs_sched_xfer_reduce_from(s, step, ranks[i], sbuf, schunk,
                                            ranks[j], dbuf, dchunk,
                                            CCS_BUF_IN, chunk0 + b * per,
                                            per, err);
            if (st != CCS_OK)
                return st;
        }
    }
    return CCS_OK;
}

ccs_status_t ring_reduce_scatter(ccs_sched_t *s, const uint32_t *ranks,
                                 uint32_t k, uint32_t chunk0, uint32_t per,
                                 uint32_t phase, ccs_err_t *err)
{
    return ring_reduce_scatter_tmp(s, ranks, k, chunk0, per, CCS_BUF_OUT,
                                   chunk0, phase, err);
}

/* All-gather; `from_in`: the own block starts in IN (copied to OUT in the
 * first step) instead of OUT. */
static ccs_status_t ring_ag(ccs_sched_t *s, const uint32_t *ranks,
                            uint32_t k, uint32_t chunk0, uint32_t per,
                            uint32_t phase, bool from_in, ccs_err_t *err)
{
    ccs_status_t st;
    uint32_t step;

    st = ring_check(s, ranks, k, chunk0, per, "ring all-gather", err);
    if (st != CCS_OK)
        return st;
    if (k == 1 && from_in) {
        st = ccs_sched_add_step(s, phase, &step, err);
        if (st != CCS_OK)
            return st;
        return ccs_sched_local(s, step, ranks[0], CCS_BUF_OUT, chunk0,
                               CCS_BUF_IN, chunk0, per, false, err);
    }
    for (uint32_t t = 0; t + 1 < k; t++) {
        st = ccs_sched_add_step(s, phase, &step, err);
        if (st != CCS_OK)
            return st;
        for (uint32_t i = 0; i < k; i++) {
            uint32_t j = (i + 1) % k;
            uint32_t c = chunk0 + ((i + k - t) % k) * per; /* (i-t) mod k */
            ccs_buf_t sbuf = (t == 0 && from_in) ? CCS_BUF_IN : CCS_BUF_OUT;

            st = ccs_sched_xfer(s, step, ranks[i], sbuf, c, ranks[j],
                                CCS_BUF_OUT, c, per, false, err);
            if (st != CCS_OK)
                return st;
            /* The own block also lands in the own OUT; in step 0 that
             * rank writes only block i-1 otherwise, so no conflict. */
            if (t == 0 && from_in) {
                st = ccs_sched_local(s, step, ranks[i], CCS_BUF_OUT, c,
                                     CCS_BUF_IN, c, per, false, err);
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
    return ring_ag(s, ranks, k, chunk0, per, phase, false, err);
}

ccs_status_t ring_all_gather_from_in(ccs_sched_t *s, const uint32_t *ranks,
                                     uint32_t k, uint32_t chunk0,
                                     uint32_t per, uint32_t phase,
                                     ccs_err_t *err)
{
    return ring_ag(s, ranks, k, chunk0, per, phase, true, err);
}
