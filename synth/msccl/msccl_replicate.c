/*
 * msccl_replicate.c - run an exported program on C channels at once.
 *
 * NCCL moves a collective over C channels, each a thread block per peer
 * carrying 1/C of the data; an MSCCL thread block is bound to one channel,
 * so a program laid out once moves every transfer at one channel's rate.
 * A plan tuned for C channels is therefore written as C replicas of its
 * program: replica k has its own copy of every thread block (on channels
 * k * nch .. k * nch + nch - 1) and moves its own share of every chunk.
 *
 * The chunk count per loop grows C times.  Each buffer is seen as blocks
 * (the rank blocks of allgather's output, reducescatter's input and both
 * sides of alltoall; elsewhere the whole buffer is one block): chunk j of
 * block b becomes chunk b * bs * C + k * bs + j in replica k, so a rank's
 * block stays contiguous (what the executor expects of those collectives)
 * and each op's range stays contiguous within its replica.  Replicas share
 * no chunk, hence no dependency: depid points into the waiting step's own
 * replica.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "msccl.h"
#include "msccl_int.h"

/* Block size of buffer `buf` (MSCCL_BUF_*) of schedule s, in chunks. */
static uint32_t block_size(const ccs_sched_t *s, uint8_t buf)
{
    uint32_t B = s->nchunks / s->nranks;

    if (buf == MSCCL_BUF_S)
        return s->nscratch ? s->nscratch : 1;
    switch (s->coll) {
    case CCS_COLL_ALLGATHER:
    case CCS_COLL_REDUCESCATTER:
    case CCS_COLL_ALLTOALL:
        return B ? B : 1;
    default:
        return s->nchunks;
    }
}

static int32_t map_off(uint32_t bs, uint32_t C, uint32_t k, int32_t off)
{
    uint32_t b = (uint32_t)off / bs, j = (uint32_t)off % bs;

    if (off < 0)
        return off;
    return (int32_t)(b * bs * C + k * bs + j);
}

static bool crosses(uint32_t bs, int32_t off, int32_t cnt)
{
    return off >= 0 && cnt > 0 &&
           (uint32_t)off / bs != (uint32_t)(off + cnt - 1) / bs;
}

/* The largest replica count <= want that the limits allow; why names
 * the limit that stopped the next one (unchanged when want fits). */
static uint32_t fit(const ccs_sched_t *s, const xrank_t *xr, uint32_t nch,
                    uint32_t want, uint32_t max_tbs, char *why, size_t len)
{
    uint32_t C = want;

    for (uint32_t r = 0; r < s->nranks && C > 1; r++) {
        uint32_t steps = 0, last_waited = 0;
        bool any_waited = false;

        for (uint32_t t = 0; t < xr[r].ntbs; t++) {
            const xtb_t *tb = &xr[r].tbs[t];
            steps += tb->nsteps;
            for (uint32_t i = 0; i < tb->nsteps; i++) {
                const xstep_t *x = &tb->steps[i];
                if (x->hasdep) {
                    any_waited = true;
                    last_waited = t;
                }
                if (x->type == MSCCL_T_NOP)
                    continue;
                if (crosses(block_size(s, x->srcbuf), x->srcoff, x->cnt) ||
                    crosses(block_size(s, x->dstbuf), x->dstoff, x->cnt)) {
                    snprintf(why, len, "rank %u thread block %u step %u "
                             "moves chunks of two rank blocks at once, "
                             "which replicas cannot split contiguously",
                             r, t, i);
                    return 1;
                }
            }
        }
        while (C > 1 && nch * C > MSCCL_MAX_CHANNELS) {
            snprintf(why, len, "%u channels (%u per replica) exceed the "
                     "executor's %u", nch * C, nch, MSCCL_MAX_CHANNELS);
            C--;
        }
        while (C > 1 && xr[r].ntbs * C > max_tbs) {
            snprintf(why, len, "rank %u would need %u thread blocks, more "
                     "than the %u that can be resident at once (--max-tbs)",
                     r, xr[r].ntbs * C, max_tbs);
            C--;
        }
        while (C > 1 && 1 + s->nranks + C * (xr[r].ntbs + steps) >=
                            MSCCL_MAX_ELEMS_PER_RANK) {
            snprintf(why, len, "rank %u would need %u XML elements, and "
                     "the executor's parser holds fewer than %u", r,
                     1 + s->nranks + C * (xr[r].ntbs + steps),
                     MSCCL_MAX_ELEMS_PER_RANK);
            C--;
        }
        while (C > 1 && any_waited &&
               last_waited * C + C - 1 > MSCCL_MAX_WAITED_TB) {
            snprintf(why, len, "rank %u would wait for thread block %u, "
                     "and the executor keeps a depid in 8 bits (0..%d)", r,
                     last_waited * C + C - 1, MSCCL_MAX_WAITED_TB);
            C--;
        }
    }
    return C;
}

ccs_status_t msccl_replicate(const ccs_sched_t *s, xrank_t *xr,
                             uint32_t nch, uint32_t want, uint32_t max_tbs,
                             uint32_t *got, char *why, size_t len,
                             ccs_err_t *err)
{
    uint32_t C = want > 1 ? fit(s, xr, nch, want, max_tbs, why, len) : 1;

    *got = C;
    if (C <= 1)
        return CCS_OK;
    for (uint32_t r = 0; r < s->nranks; r++) {
        uint32_t n = xr[r].ntbs;
        xtb_t *tbs = calloc((size_t)n * C, sizeof(*tbs)); /* owned here */

        if (tbs == NULL)
            return ccs_err_set(err, CCS_ERR_NOMEM, "msccl export: out of "
                               "memory");
        /* Replica k of thread block t gets id t * C + k: the thread
         * blocks others wait for keep the lowest ids, as the 8-bit depid
         * needs. */
        for (uint32_t t = 0; t < n && tbs != NULL; t++)
            for (uint32_t k = 0; k < C; k++) {
                const xtb_t *src = &xr[r].tbs[t];
                xtb_t *d = &tbs[t * C + k];
                *d = *src;
                d->chan = k * nch + src->chan;
                d->cap = src->nsteps ? src->nsteps : 1;
                d->steps = malloc(d->cap * sizeof(*d->steps));
                if (d->steps == NULL) {
                    for (uint32_t i = 0; i < t * C + k; i++)
                        free(tbs[i].steps);
                    free(tbs);
                    tbs = NULL;
                    break;
                }
                for (uint32_t i = 0; i < src->nsteps; i++) {
                    xstep_t x = src->steps[i];
                    if (x.type != MSCCL_T_NOP) {
                        x.srcoff = map_off(block_size(s, x.srcbuf), C, k,
                                           x.srcoff);
                        x.dstoff = map_off(block_size(s, x.dstbuf), C, k,
                                           x.dstoff);
                    }
                    if (x.depid >= 0)
                        x.depid = x.depid * (int32_t)C + (int32_t)k;
                    d->steps[i] = x;
                }
            }
        if (tbs == NULL)
            return ccs_err_set(err, CCS_ERR_NOMEM, "msccl export: out of "
                               "memory");
        msccl_xrank_free(&xr[r]);
        xr[r].tbs = tbs;    /* ownership moves to xr */
        xr[r].ntbs = n * C;
    }
    return CCS_OK;
}
