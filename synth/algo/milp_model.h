/*
 * milp_model.h - the AdapCC-style MILP (AdapCC, Sec. IV-D, eqs. 1-6,
 * linearised) posed in GLPK and solved with glp_intopt.  GLPK types stay
 * inside milp_model.c; this interface speaks milp_net_t / milp_plan_t.
 * The model, variable by variable: docs/milp.md.
 */
#ifndef CCS_MILP_MODEL_H
#define CCS_MILP_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "milp_heur.h"

typedef struct milp_solve_opts {
    double time_limit_s;     /* whole solve (LP + branch and cut), > 0 */
    double mip_gap;          /* relative gap at which to stop, >= 0 */
    int32_t node_limit;      /* stop after this many subproblems (0: no
                                limit; -1: MILP_NODE_WORK / rows, clamped
                                to [60, 1000]; lower for big models,
                                MILP_BIG_ROWS); deterministic, unlike
                                time */
    char **lp_out;           /* when not NULL: *lp_out gets the model in
                                CPLEX LP form (owned by the caller, free);
                                set only when the model is built */
    bool use_warm;           /* offer `warm` through glp_ios_heur_sol */
    bool glpk_heuristics;    /* GLPK's own rounding heuristic */
    bool lns;                /* improve the warm start by sub-MIPs before
                                branching (large-neighbourhood search,
                                docs/milp.md); each sub-MIP has the same
                                node limit as the main search */
    int32_t max_arcs;        /* a tree model with more arcs (three columns
                                and about four rows each) is neither built
                                nor solved: stats.too_large, outcome
                                MILP_OUT_NOSOL; 0: no limit */
    double deadline_s;       /* absolute end (milp_now_s's clock) shared
                                with the caller's other phases; 0: start
                                + time_limit_s.  The earlier of the two
                                stops the solve */
} milp_solve_opts_t;

void milp_solve_opts_init(milp_solve_opts_t *o);

/* Monotonic clock, seconds: the clock of milp_solve_opts_t.deadline_s. */
double milp_now_s(void);

/* Automatic node limit: about this many rows x nodes of work (a few
 * seconds of GLPK on one core for the instances in the bench). */
#define MILP_NODE_WORK 120000
/* Above this many rows the node limit is at most
 * 60 (MILP_BIG_ROWS / rows)^2 (at least 1): a node's LP costs ~rows^2. */
#define MILP_BIG_ROWS 4000.0
/* The LNS solves at most this many rows x sub-MIPs (at least 2 sub-MIPs):
 * each is presolved and node-limited, about one root LP's work. */
#define MILP_LNS_WORK 40000

typedef enum {
    MILP_OUT_OPTIMAL = 0,    /* search finished (within mip_gap) */
    MILP_OUT_LIMIT = 1,      /* a limit stopped it; incumbent kept */
    MILP_OUT_NOSOL = 2,      /* a limit stopped it with no incumbent:
                                the caller falls back to the heuristic */
    MILP_OUT_COUNT
} milp_outcome_t;

const char *milp_outcome_str(milp_outcome_t o); /* "optimal", ... */

typedef struct milp_stats {
    milp_outcome_t outcome;
    bool time_limit_hit;     /* stopped by tm_lim (not deterministic) */
    bool node_limit_hit;
    bool warm_offered;       /* the heuristic solution was feasible and
                                offered */
    bool warm_accepted;      /* GLPK took it as an incumbent */
    double warm_us;          /* objective of the warm start in the model;
                                NAN when not offered */
    double lns_us;           /* incumbent after the LNS (= warm_us when it
                                found nothing better); NAN without one */
    int32_t lns_tried;       /* sub-MIPs solved */
    int32_t lns_improved;    /* ... that improved the incumbent */
    int32_t lns_nodes;       /* their subproblems, in all */
    double obj_us;           /* incumbent objective; NAN without one */
    double bound_us;         /* best proven bound on the optimum: the
                                larger of GLPK's and fill_us */
    double glpk_bound_us;    /* GLPK's bound alone (root LP, raised by the
                                branch and bound) */
    double lp_us;            /* root LP relaxation */
    double fill_us;          /* lower bound by the fill case analysis
                                (fill_bound, docs/milp.md); NAN when
                                not computed */
    double gap;              /* (obj - bound) / obj; NAN without one */
    double time_s;           /* wall time of the solve */
    int32_t nodes;           /* subproblems generated */
    int32_t node_limit;      /* the limit used (0: none) */
    int32_t rows, cols, ints;
    int32_t arcs;            /* tree model: arcs over all subs */
    bool too_large;          /* arcs above opts.max_arcs: not solved */
    bool proven_early;       /* the bounds proved the warm start (or the
                                LNS's incumbent) within the gap: no
                                branch and bound */
} milp_stats_t;

/* Build the model for (net, sp) with per-pipe concurrency `conc` (see
 * milp_concurrency), solve it, decode.  `warm` (may be NULL) is the
 * heuristic plan offered as a first incumbent.  On CCS_OK: *stats filled;
 * *out is the decoded plan (owned by the caller), or NULL when the
 * outcome is MILP_OUT_NOSOL.  CCS_ERR_SOLVER when GLPK fails, CCS_ERR_IO
 * when the LP file cannot be written. */
ccs_status_t milp_solve(const milp_net_t *net, const milp_spec_t *sp,
                        const double *conc, const milp_plan_t *warm,
                        const milp_solve_opts_t *o, milp_plan_t **out,
                        milp_stats_t *stats, ccs_err_t *err);

/* Run fn(arg, err) with GLPK's error hook and terminal hook set, so that
 * a fatal GLPK error (which would otherwise abort the process) returns
 * CCS_ERR_SOLVER with GLPK's message.  After such an error GLPK's
 * environment has been freed, and with it every GLPK object of the
 * thread: *env_freed says so, and fn's GLPK objects must then be
 * forgotten, not deleted.  GLPK's terminal output is off during fn. */
typedef ccs_status_t (*milp_glpk_fn)(void *arg, ccs_err_t *err);
ccs_status_t milp_glpk_call(milp_glpk_fn fn, void *arg, bool *env_freed,
                            ccs_err_t *err);

/* Read a CPLEX LP file back with glp_read_lp (the tests check --write-lp
 * with it); returns the row and column counts read.  CCS_ERR_PARSE on
 * failure. */
ccs_status_t milp_read_lp(const char *path, int32_t *rows, int32_t *cols,
                          ccs_err_t *err);

#endif /* CCS_MILP_MODEL_H */
