/*
 * rt_world.h - run a plan on a threads world, one thread per rank, over a
 * list of calls (dtype x op x count x placement), each checked element by
 * element against the independent reference of tools/ccs_check.h.  Shared
 * by the executor tests (test_runtime_exec.c, test_dataflow_exec.c).
 * Include after harness.h.
 */
#ifndef RT_WORLD_H
#define RT_WORLD_H

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ccs.h"
#include "algo.h"
#include "../../tools/ccs_check.h"

typedef struct rt_combo {
    ccs_dtype_t dt;
    ccs_redop_t op;
    size_t count;
    bool inplace;
} rt_combo_t;

#define RT_MAX_COMBOS 256
#define RT_MAX_R 8

typedef struct rt_job {
    const ccs_plan_t *plan;
    ccs_comm_t *comm;
    int rank, R;
    const rt_combo_t *combos;
    int ncombos;
    int straggler;            /* -1: the plan's own */
    int delay_rank;           /* sleeps delay_us before each run, or -1 */
    unsigned delay_us;
    bool keep_out;            /* keep each call's output bytes in out[] */
    /* results */
    ccs_status_t st[RT_MAX_COMBOS];
    size_t wrong[RT_MAX_COMBOS];
    uint8_t *out[RT_MAX_COMBOS];  /* owned when keep_out; rt_free_outputs */
    size_t out_len[RT_MAX_COMBOS];
    ccs_run_stats_t stats[RT_MAX_COMBOS];
    char msg[256];
} rt_job_t;

/* What a test does to each rank's communicator before the threads start
 * (a window, a wrapping transport); NULL: nothing. */
typedef void (*rt_setup_fn)(ccs_comm_t *comm, int rank, void *arg);

static inline void *rt_rank_main(void *arg)
{
    rt_job_t *j = arg;
    ccs_coll_t coll = ccs_plan_coll(j->plan);
    int root = ccs_plan_root(j->plan);

    for (int k = 0; k < j->ncombos; k++) {
        const rt_combo_t *c = &j->combos[k];
        size_t es = ccs_dtype_size(c->dt);
        size_t in_n = chk_in_elems(coll, j->R, c->count);
        size_t out_n = chk_out_elems(coll, j->R, c->count);
        size_t big = in_n > out_n ? in_n : out_n;
        uint8_t *a = malloc(big * es + 1), *b = NULL;
        uint8_t *send, *recv;
        ccs_run_opts_t o = CCS_RUN_OPTS_INIT;

        if (c->inplace) {
            send = recv = a;
            if (coll == CCS_COLL_REDUCESCATTER)
                recv = a + (size_t)j->rank * c->count * es;
            if (coll == CCS_COLL_ALLGATHER)
                send = a + (size_t)j->rank * c->count * es;
        } else {
            b = malloc(out_n * es + 1);
            send = a;
            recv = b;
        }
        memset(a, 0xA5, big * es);
        if (b)
            memset(b, 0x5A, out_n * es);
        chk_fill(coll, c->dt, c->op, j->rank, j->R, root, c->count, send);
        o.straggler = j->straggler;
        o.stats = &j->stats[k];
        if (j->rank == j->delay_rank)
            usleep(j->delay_us);
        j->st[k] = ccs_run_ex(j->plan, j->comm, send, recv, c->count, c->dt,
                              c->op, NULL, &o);
        if (j->st[k] != CCS_OK) {
            snprintf(j->msg, sizeof(j->msg), "%s",
                     ccs_comm_last_error(j->comm));
            free(a);
            free(b);
            break;
        }
        j->wrong[k] = chk_wrong(coll, c->dt, c->op, j->rank, j->R, root,
                                c->count, recv);
        if (j->keep_out) {
            j->out_len[k] = out_n * es;
            j->out[k] = malloc(out_n * es + 1);
            if (j->out[k] != NULL)
                memcpy(j->out[k], recv, out_n * es);
        }
        free(a);
        free(b);
    }
    return NULL;
}

static inline void rt_free_outputs(rt_job_t *jobs, int R)
{
    for (int r = 0; r < R; r++)
        for (int k = 0; k < RT_MAX_COMBOS; k++) {
            free(jobs[r].out[k]);
            jobs[r].out[k] = NULL;
        }
}

/* Run combos on a threads world (jobs: RT_MAX_R entries, large: keep them
 * off the stack); returns the failures, each reported under `name`.  The
 * plans' steps run at every count: no small-message exchange (test_small
 * covers that). */
static inline int rt_run_world(const char *name, const ccs_plan_t *plan,
                               rt_setup_fn setup, void *setup_arg,
                               bool keep_out, const rt_combo_t *combos,
                               int ncombos, int straggler, int delay_rank,
                               unsigned delay_us, rt_job_t *jobs)
{
    int R = ccs_plan_nranks(plan), bad = 0;
    ccs_comm_t *comms[RT_MAX_R];
    pthread_t th[RT_MAX_R];

    if (R < 1 || R > RT_MAX_R || ncombos > RT_MAX_COMBOS ||
        ccs_comm_init_threads(R, comms) != CCS_OK) {
        FAIL_AT("%s: comm init failed", name);
        return 1;
    }
    for (int r = 0; r < R; r++) {
        ccs_comm_set_small_bytes(comms[r], 0);
        if (setup != NULL)
            setup(comms[r], r, setup_arg);
        memset(&jobs[r], 0, sizeof(jobs[r]));
        jobs[r].plan = plan;
        jobs[r].comm = comms[r];
        jobs[r].rank = r;
        jobs[r].R = R;
        jobs[r].combos = combos;
        jobs[r].ncombos = ncombos;
        jobs[r].straggler = straggler;
        jobs[r].delay_rank = delay_rank;
        jobs[r].delay_us = delay_us;
        jobs[r].keep_out = keep_out;
        for (int k = 0; k < ncombos; k++)
            jobs[r].st[k] = CCS_ERR_INTERNAL;
        pthread_create(&th[r], NULL, rt_rank_main, &jobs[r]);
    }
    for (int r = 0; r < R; r++)
        pthread_join(th[r], NULL);
    for (int r = 0; r < R; r++) {
        for (int k = 0; k < ncombos && bad < 5; k++) {
            const rt_combo_t *c = &combos[k];
            if (jobs[r].st[k] != CCS_OK || jobs[r].wrong[k] != 0) {
                FAIL_AT("%s rank %d: %s %s count %zu %s: status %s, %zu "
                        "wrong %s", name, r, ccs_dtype_str(c->dt),
                        ccs_redop_str(c->op), c->count,
                        c->inplace ? "in-place" : "out-of-place",
                        ccs_status_name(jobs[r].st[k]), jobs[r].wrong[k],
                        jobs[r].msg);
                bad++;
                break;
            }
        }
        ccs_comm_destroy(comms[r]);
    }
    return bad;
}

/* After a run of a two-phase plan with rank strag late: every other rank
 * left phase 0 (of its first call) before the late one entered ccs_run. */
static inline void rt_check_phase0_before(const char *name,
                                          const rt_job_t *jobs, uint32_t R,
                                          int strag)
{
    for (uint32_t r = 0; r < R; r++) {
        const ccs_run_stats_t *st = &jobs[r].stats[0];
        CHECK_EQ_INT(st->nphases, 2);
        if ((int)r == strag)
            continue;
        CHECK(st->phase_end_s[0] >= st->t_start_s);
        CHECK_MSG(st->phase_end_s[0] < jobs[strag].stats[0].t_start_s,
                  "%s: rank %u left phase 0 at %.6f, after the straggler "
                  "arrived at %.6f", name, r, st->phase_end_s[0],
                  jobs[strag].stats[0].t_start_s);
    }
}

/* Every dtype x op at each count, placements alternating; at most cap. */
static inline int rt_full_matrix(rt_combo_t *c, int cap,
                                 const size_t *counts, int ncounts)
{
    int n = 0;
    for (int ci = 0; ci < ncounts; ci++)
        for (int d = 0; d < CCS_DTYPE_COUNT; d++)
            for (int o = 0; o < CCS_REDOP_COUNT; o++) {
                if (n == cap)
                    return n;
                c[n].dt = (ccs_dtype_t)d;
                c[n].op = (ccs_redop_t)o;
                c[n].count = counts[ci];
                c[n].inplace = ((d + o + ci) % 2) == 1;
                n++;
            }
    return n;
}

/* What a test does with one registry plan: `name` is "algo/coll/rR",
 * `algo` the algorithm's index in the registry. */
typedef void (*rt_sched_fn)(const char *name, int algo, uint32_t R,
                            const ccs_sched_t *s, void *arg);

/* Every registered algorithm x every collective it declares, synthesized
 * on switch:R with NVLS on (the in-switch algorithm runs too; the others
 * ignore it), handed to fn.  A declared collective that does not
 * synthesize is a failure, not a skip.  Adds the declared plans to *want
 * and returns how many fn got. */
static inline int rt_registry_scheds(uint32_t R, rt_sched_fn fn, void *arg,
                                     int *want)
{
    char spec[32];
    topo_t *t = NULL;
    int ran = 0;

    snprintf(spec, sizeof(spec), "switch:%u,nvls=on", R);
    CHECK_STATUS(topo_load(spec, NULL, &t, NULL), CCS_OK);
    if (t == NULL)
        return 0;
    for (int a = 0; a < algo_count(); a++) {
        const algo_desc_t *d = algo_at(a);
        for (int coll = 0; coll < CCS_COLL_COUNT; coll++) {
            algo_params_t p;
            ccs_sched_t *s = NULL;
            ccs_status_t st;
            ccs_err_t e;
            char name[96];

            if ((d->colls & ALGO_COLL_BIT(coll)) == 0)
                continue;
            (*want)++;
            algo_params_init(&p);
            p.coll = (ccs_coll_t)coll;
            if (strcmp(d->name, "stragglar") == 0)
                p.straggler = (int32_t)R - 1;
            snprintf(name, sizeof(name), "%s/%s/r%u", d->name,
                     ccs_coll_str((ccs_coll_t)coll), R);
            ccs_err_clear(&e);
            st = algo_synthesize(d->name, t, &p, &s, &e);
            if (st != CCS_OK) {
                FAIL_AT("%s: declared but not synthesized: %s", name,
                        ccs_err_msg(&e, st));
                ccs_sched_destroy(s);
                continue;
            }
            fn(name, a, R, s, arg);
            ccs_sched_destroy(s);
            ran++;
        }
    }
    topo_destroy(t);
    return ran;
}

/* StragglAR's allreduce plan for switch:R with rank R-1 as the straggler
 * (the caller owns it), or NULL after a failed check. */
static inline ccs_plan_t *rt_stragglar_plan(uint32_t R)
{
    char spec[32];
    topo_t *t = NULL;
    algo_params_t p;
    ccs_sched_t *s = NULL;
    ccs_plan_t *plan = NULL;

    snprintf(spec, sizeof(spec), "switch:%u", R);
    CHECK_STATUS(topo_load(spec, NULL, &t, NULL), CCS_OK);
    algo_params_init(&p);
    p.straggler = (int32_t)R - 1;
    if (t != NULL)
        CHECK_STATUS(algo_synthesize("stragglar", t, &p, &s, NULL), CCS_OK);
    if (s != NULL)
        CHECK_STATUS(ccs_plan_from_sched(s, &plan, NULL), CCS_OK);
    ccs_sched_destroy(s);
    topo_destroy(t);
    return plan;
}

#endif /* RT_WORLD_H */
