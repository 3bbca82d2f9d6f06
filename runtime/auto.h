/*
 * auto.h - straggler auto's rule apart from the communicator (auto.c).
 * ccs_auto_run drives it with the gathered arrival vectors of real calls;
 * unit tests drive it with made-up vectors, to check which plan each call
 * of a sequence picks.  Every function is a pure function of the state
 * and its arguments (integers only), which is what keeps the decision
 * identical on every rank.
 */
#ifndef CCS_AUTO_H
#define CCS_AUTO_H

#include <stdbool.h>
#include <stdint.h>

struct ccs_auto;

/* A fresh state for R ranks (R >= 1), or NULL when out of memory.  The
 * caller owns it and frees it with ccs_auto_free (ccs_int.h). */
struct ccs_auto *ccs_auto_new(uint32_t R);

/* The decision for a call whose cost key (aware plan, plain plan, count,
 * dtype; never 0) is `key`: the straggler to relabel the aware plan for,
 * or -1 to run the plain plan.  has_plain: a plain plan was given; s0:
 * the aware plan's own straggler.  Makes the key's cost model if it has
 * none (round robin over a few). */
int32_t ccs_auto_decide(struct ccs_auto *a, uint64_t key, bool has_plain,
                        int32_t s0);

/* A call of `key` ran `ran` (a straggler, or -1 plain) and will be learned
 * from: counts the calls since each plan last ran, which trigger the
 * probes. */
void ccs_auto_ran(struct ccs_auto *a, uint64_t key, int32_t ran);

/* Folds in one call's gathered vector: vec[2q] is rank q's elapsed time
 * in the call, vec[2q + 1] its phase 0's (integer ns); the call's key is
 * `key` and it ran `ran`.  Copies vec. */
void ccs_auto_learn(struct ccs_auto *a, uint64_t key, int32_t ran,
                    const int64_t *vec);

/* A hash of everything a decision depends on. */
uint64_t ccs_auto_hash(const struct ccs_auto *a);

/* What the rule knows about `key` (all -1 where unknown). */
typedef struct ccs_auto_view {
    int64_t noise_ns;        /* arrival noise: the second-latest rank's
                                lateness, smoothed */
    int64_t floor_ns;        /* lateness a rank needs to count as late */
    int64_t crit_ns;         /* critical delay D* */
    int64_t plain_ns;        /* plain plan's time with nobody late */
    int64_t plain_late_ns;   /* ... from a late arrival to the end */
    int64_t rs_ns, after_ns; /* aware plan's phase 0, and after the
                                arrival */
    int32_t streak_rank;     /* -1: no streak */
    uint32_t streak;
} ccs_auto_view_t;

void ccs_auto_view(const struct ccs_auto *a, uint64_t key,
                   ccs_auto_view_t *v);

#endif
