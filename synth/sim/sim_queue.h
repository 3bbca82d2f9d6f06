/*
 * sim_queue.h - the simulator's event queue: events leave in (time,
 * insertion order), exactly as a binary heap on that pair would hand them
 * out, at a cost that does not grow with the number of waiting events.
 *
 * The engine only ever schedules an event at or after the time of the last
 * event it took out (time never runs backwards), which is what a radix
 * heap needs: non-negative doubles order like their bit patterns, so an
 * event waits in bucket b, the position of the highest bit in which its
 * time differs from the current minimum's.  Taking out the next event
 * empties the lowest non-empty bucket into lower ones, so each event moves
 * a few times at most, instead of log2(waiting) heap levels per push and
 * per pop (the heap's depth was most of the per-event cost at 1024 ranks).
 * Buckets keep insertion order, so events with equal times leave in the
 * order they were scheduled.
 *
 * Ownership: a sim_queue_t owns its buckets (simq_free).  Not for use
 * outside synth/sim/.
 */
#ifndef CCS_SIM_QUEUE_H
#define CCS_SIM_QUEUE_H

#include <stdbool.h>
#include <stdint.h>

/* No insertion number is stored: buckets keep insertion order, which is
 * what breaks ties (24 bytes an event instead of 32). */
typedef struct event {
    double t;             /* seconds, >= 0 */
    uint32_t type;
    uint32_t a;           /* rank, step, transfer or slot */
    uint32_t v;           /* slot version (EV_DONE) */
} event_t;

/* Bucket 0 holds events at the time of the last event taken out; bucket
 * b (1..64) those whose time's bits first differ from it at bit b - 1. */
#define SIMQ_BUCKETS 65

typedef struct sim_queue {
    event_t *bucket[SIMQ_BUCKETS];   /* owned */
    uint32_t len[SIMQ_BUCKETS], cap[SIMQ_BUCKETS];
    uint32_t head;        /* bucket 0's next event */
    uint64_t occupied;    /* bit b - 1 set: bucket b (1..64) not empty */
    uint64_t min_key;     /* the last event taken out: its time's bits */
    uint64_t bucket_min[SIMQ_BUCKETS];  /* smallest key in each bucket */
    uint64_t bucket_max[SIMQ_BUCKETS];  /* largest key in each bucket */
    uint64_t count;       /* events waiting */
} sim_queue_t;

typedef enum {
    SIMQ_OK = 0,
    SIMQ_NOMEM,           /* a bucket could not grow */
    SIMQ_PAST             /* time before the current minimum, or not >= 0 */
} simq_status_t;

/* Empty the queue (keeping its memory) and restart time and numbering. */
void simq_reset(sim_queue_t *q);
void simq_free(sim_queue_t *q);      /* the buckets; NULL-safe */

simq_status_t simq_push(sim_queue_t *q, double t, uint32_t type, uint32_t a,
                        uint32_t v);

/* The earliest waiting event's time into *t; false when none waits.
 * Looking does not move the queue's time: events may still be pushed at
 * any time from the last one taken out on. */
bool simq_peek(const sim_queue_t *q, double *t);

/* Take the earliest event out (the queue must not be empty).  SIMQ_NOMEM
 * when moving events between buckets failed, after which the queue has
 * lost events and must be reset before reuse. */
simq_status_t simq_pop(sim_queue_t *q, event_t *out);

#endif /* CCS_SIM_QUEUE_H */
