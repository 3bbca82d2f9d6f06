/*
 * verify.h - symbolic verifier of schedules (DESIGN.md, "The verifier").
 *
 * Each (rank, buffer, chunk) holds the set of original contributions it
 * contains (an origin chunk and a set of ranks).  SEND/RECV copy sets,
 * RECV_REDUCE and REDUCE_LOCAL union them and must be disjoint (nothing is
 * counted twice), nothing is read before it was written, and at the end the
 * collective's postcondition (runtime/sched.h) must hold.  Send/receive
 * matching per step is checked too.  Every schedule ccsynth writes passes.
 */
#ifndef CCS_VERIFY_H
#define CCS_VERIFY_H

#include <stdbool.h>
#include <stdint.h>

#include "sched.h"

/* Properties reported for a schedule that passes. */
typedef struct verify_report {
    uint32_t nsteps;
    uint64_t nops;
    uint64_t chunk_transfers;    /* sum of nchunks over all SENDs */
    uint32_t max_sends_per_step; /* over ranks and steps */
    uint32_t max_recvs_per_step;
    bool one_port;               /* at most one send and one receive per
                                    rank per step */
} verify_report_t;

/* CCS_OK when the schedule is correct, CCS_ERR_VERIFY (or CCS_ERR_FORMAT for
 * a structurally broken one) with a message naming step, rank, chunk and the
 * problem.  CCS_ERR_NOMEM ("verifier state would exceed ...") when its
 * indexes would pass its memory budget, checked up front by the formula in
 * docs/verifier.md: that says nothing about the schedule.  Time and memory
 * follow the ops, not ranks x chunks x ranks.  rep may be NULL. */
ccs_status_t verify_sched(const ccs_sched_t *s, verify_report_t *rep,
                          ccs_err_t *err);

#endif /* CCS_VERIFY_H */
