/*
 * stragglar.h - StragglAR's round planner and rank relabeling, shared by
 * algo_stragglar.c, its tests and its benchmark.
 *
 * A plan is the abstract phase-1 schedule for the canonical straggler
 * sigma = n - 1 (non-stragglers 0..n-2, chunk c_i partially reduced on
 * rank i after phase 0): in round r every rank g has a partner
 * peer[r*n + g] (or -1) and sends chunk send[r*n + g] to it (or -1: it only
 * receives).  Pairs are disjoint (one-port).  In rounds r < n - 1 the pair
 * (r', sigma) that contains the straggler is the straggler exchange: both
 * send chunk r' and both reduce, after which c_r' is complete on both.
 */
#ifndef CCS_STRAGGLAR_H
#define CCS_STRAGGLAR_H

#include <stdint.h>

#include "sched.h"

typedef struct stragglar_plan {
    uint32_t n;          /* ranks, >= 2 */
    uint32_t nrounds;    /* phase-1 rounds */
    int32_t *peer;       /* owned; [nrounds * n] */
    int32_t *send;       /* owned; [nrounds * n] chunk sent, -1 none */
    uint32_t cap;        /* rounds allocated */
} stragglar_plan_t;

/* LB(n) = n + ceil(log2 n) - 2: n - 1 straggler rounds, then the last
 * chunk, held by two ranks, needs ceil(log2 n) - 1 doublings. */
uint32_t stragglar_lower_bound(uint32_t n);

/* Upper bound on the useful receives (complete chunks a non-straggler
 * lacked) of phase-1 round r in any plan for n ranks: 2^r - 1 in the
 * doubling ramp, 2 floor((n-2)/2) while the straggler is busy (r < n-1),
 * n - 1 after.  The search drops a run once the receives it has wasted
 * against these bounds exceed what T rounds can spare. */
uint32_t stragglar_round_capacity(uint32_t n, uint32_t r);

/* Plan phase 1 for n ranks (2 <= n <= CCS_MAX_RANKS; non-powers of 2 are
 * planned by matchings and limited to n <= 4096).  The plan is checked
 * (every transfer useful, nothing received twice, everything complete at
 * the end) before it is returned.  *out owned by the caller, freed with
 * stragglar_plan_destroy. */
ccs_status_t stragglar_plan(uint32_t n, stragglar_plan_t **out,
                            ccs_err_t *err);
void stragglar_plan_destroy(stragglar_plan_t *p); /* NULL is a no-op */

#endif /* CCS_STRAGGLAR_H */
