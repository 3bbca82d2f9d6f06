/*
 * sim_queue.c - the simulator's event queue, a radix heap on the bits of
 * the event times (sim_queue.h says why and how).
 */
#include <stdlib.h>
#include <string.h>

#include "sim_queue.h"

/* A time's ordering key: for doubles >= 0 the bit pattern orders like the
 * value; -0.0 (which compares equal to 0) is mapped onto +0.0's key. */
static uint64_t time_key(double t)
{
    uint64_t k;

    if (t == 0)
        return 0;
    memcpy(&k, &t, sizeof(k));
    return k;
}

/* The bucket of key k (>= min): 0 when equal, else 1 + the highest bit in
 * which the two differ. */
static unsigned bucket_of(uint64_t k, uint64_t min)
{
    return k == min ? 0 : 64u - (unsigned)__builtin_clzll(k ^ min);
}

static bool append(sim_queue_t *q, unsigned b, uint64_t k,
                   const event_t *e)
{
    if (q->len[b] == q->cap[b]) {
        uint32_t ncap = q->cap[b] ? q->cap[b] * 2 : 64;
        event_t *nb;
        if (ncap <= q->cap[b])
            return false;        /* 2^32 events in one bucket */
        nb = realloc(q->bucket[b], sizeof(event_t) * ncap);
        if (nb == NULL)
            return false;
        q->bucket[b] = nb;
        q->cap[b] = ncap;
    }
    if (q->len[b] == 0) {
        q->bucket_min[b] = k;
        q->bucket_max[b] = k;
    } else if (k < q->bucket_min[b]) {
        q->bucket_min[b] = k;
    } else if (k > q->bucket_max[b]) {
        q->bucket_max[b] = k;
    }
    q->bucket[b][q->len[b]++] = *e;
    if (b > 0)
        q->occupied |= 1ULL << (b - 1);
    return true;
}

void simq_reset(sim_queue_t *q)
{
    for (unsigned b = 0; b < SIMQ_BUCKETS; b++)
        q->len[b] = 0;
    q->head = 0;
    q->occupied = 0;
    q->min_key = 0;
    q->count = 0;
}

void simq_free(sim_queue_t *q)
{
    if (q == NULL)
        return;
    for (unsigned b = 0; b < SIMQ_BUCKETS; b++) {
        free(q->bucket[b]);
        q->bucket[b] = NULL;
        q->len[b] = q->cap[b] = 0;
    }
    q->count = 0;
}

simq_status_t simq_push(sim_queue_t *q, double t, uint32_t type, uint32_t a,
                        uint32_t v)
{
    event_t e;
    uint64_t k;

    if (!(t >= 0))
        return SIMQ_PAST;        /* negative or NaN */
    k = time_key(t);
    if (k < q->min_key)
        return SIMQ_PAST;
    e.t = t;
    e.type = type;
    e.a = a;
    e.v = v;
    if (!append(q, bucket_of(k, q->min_key), k, &e))
        return SIMQ_NOMEM;
    q->count++;
    return SIMQ_OK;
}

bool simq_peek(const sim_queue_t *q, double *t)
{
    uint64_t k;

    if (q->head < q->len[0]) {
        *t = q->bucket[0][q->head].t;
        return true;
    }
    if (q->occupied == 0)
        return false;
    /* the lowest non-empty bucket holds the earliest time */
    k = q->bucket_min[__builtin_ctzll(q->occupied) + 1];
    memcpy(t, &k, sizeof(*t));
    return true;
}

simq_status_t simq_pop(sim_queue_t *q, event_t *out)
{
    unsigned b;
    uint64_t min;
    uint32_t n;
    const event_t *src;

    if (q->head == q->len[0]) {
        /* Bucket 0 is spent: the lowest non-empty bucket's smallest time
         * becomes the queue's time and its events spread into lower
         * buckets, in their order (so equal times stay in insertion
         * order).  Every other bucket's events still differ from the new
         * time first at the same bit as from the old one. */
        q->len[0] = q->head = 0;
        b = (unsigned)__builtin_ctzll(q->occupied) + 1;
        src = q->bucket[b];
        n = q->len[b];
        min = q->bucket_min[b];
        q->min_key = min;
        q->occupied &= ~(1ULL << (b - 1));
        q->len[b] = 0;
        if (q->bucket_max[b] == min) {
            /* One time throughout (the common case: transfers of equal
             * size and speed finish together): the bucket becomes bucket
             * 0 as it stands, and the empty bucket 0 takes its place. */
            event_t *arr = q->bucket[0];
            uint32_t cap = q->cap[0];
            q->bucket[0] = q->bucket[b];
            q->cap[0] = q->cap[b];
            q->len[0] = n;
            q->bucket[b] = arr;
            q->cap[b] = cap;
            n = 0;
        }
        for (uint32_t i = 0; i < n; i++) {
            /* lower buckets only: bucket b's own array is not written */
            uint64_t k = time_key(src[i].t);
            if (!append(q, bucket_of(k, min), k, &src[i]))
                return SIMQ_NOMEM;
        }
    }
    q->count--;
    *out = q->bucket[0][q->head++];
    return SIMQ_OK;
}
