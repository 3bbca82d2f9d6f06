/*
 * test_small.c - the opt-in one-step exchange for small allreduces
 * (exec.c, CCS_SMALL_BYTES): every dtype x op, 2 to 5 ranks, out of place
 * and in place, checked by the independent reference of ccs_check.h; one
 * step taken below the threshold, the plan's steps above it; every rank
 * gets the same bits.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "rt_fixtures.h"
#include "../../runtime/ccs_int.h"
#include "../../tools/ccs_check.h"

typedef struct job {
    const ccs_plan_t *plan;
    ccs_comm_t *comm;
    int rank, R, inplace;
    size_t count;
    ccs_dtype_t dt;
    ccs_redop_t op;
    ccs_status_t st;
    size_t wrong;
    uint32_t steps;
    uint8_t *out;            /* owned by the test */
} job_t;

static void *job_main(void *arg)
{
    job_t *j = arg;
    size_t es = ccs_dtype_size(j->dt);
    uint8_t *in = malloc(j->count * es);
    ccs_run_stats_t stats;
    ccs_run_opts_t o = CCS_RUN_OPTS_INIT;

    o.stats = &stats;
    memset(&stats, 0, sizeof(stats));
    chk_fill(CCS_COLL_ALLREDUCE, j->dt, j->op, j->rank, j->R, -1, j->count,
             j->inplace ? j->out : in);
    j->st = ccs_run_ex(j->plan, j->comm, j->inplace ? j->out : in, j->out,
                       j->count, j->dt, j->op, NULL, &o);
    j->wrong = chk_wrong(CCS_COLL_ALLREDUCE, j->dt, j->op, j->rank, j->R, -1,
                         j->count, j->out);
    j->steps = stats.steps_run;
    free(in);
    return NULL;
}

static ccs_plan_t *plan_of(ccs_sched_t *s)
{
    ccs_plan_t *p = NULL;
    if (s == NULL || ccs_plan_from_sched(s, &p, NULL) != CCS_OK)
        p = NULL;
    ccs_sched_destroy(s);
    return p;
}

TEST(small_exchange_every_type_and_op)
{
    static const size_t counts[] = { 1, 7, 100 };
    setenv("CCS_SMALL_BYTES", "4096", 1);
    for (int R = 2; R <= 5; R++) {
        ccs_plan_t *p = plan_of(fx_ring_allreduce((uint32_t)R, 1));
        ccs_comm_t *c[8];
        CHECK(p != NULL);
        CHECK_STATUS(ccs_comm_init_threads(R, c), CCS_OK);
        for (int d = 0; d < CCS_DTYPE_COUNT; d++) {
            for (int o = 0; o < CCS_REDOP_COUNT; o++) {
                for (size_t k = 0; k < 3; k++) {
                    for (int ip = 0; ip < 2; ip++) {
                        job_t j[8];
                        pthread_t th[8];
                        size_t es = ccs_dtype_size((ccs_dtype_t)d);
                        for (int r = 0; r < R; r++) {
                            j[r] = (job_t){ p, c[r], r, R, ip, counts[k],
                                            (ccs_dtype_t)d, (ccs_redop_t)o,
                                            CCS_OK, 0, 0,
                                            malloc(counts[k] * es) };
                            pthread_create(&th[r], NULL, job_main, &j[r]);
                        }
                        for (int r = 0; r < R; r++)
                            pthread_join(th[r], NULL);
                        for (int r = 0; r < R; r++) {
                            CHECK_STATUS(j[r].st, CCS_OK);
                            CHECK_MSG(j[r].wrong == 0, "R %d %s %s count "
                                      "%zu%s rank %d: %zu wrong", R,
                                      ccs_dtype_str((ccs_dtype_t)d),
                                      ccs_redop_str((ccs_redop_t)o),
                                      counts[k], ip ? " in place" : "", r,
                                      j[r].wrong);
                            CHECK_EQ_INT(j[r].steps, 1);
                            CHECK(memcmp(j[r].out, j[0].out,
                                         counts[k] * es) == 0);
                        }
                        for (int r = 0; r < R; r++)
                            free(j[r].out);
                    }
                }
            }
        }
        for (int r = 0; r < R; r++)
            ccs_comm_destroy(c[r]);
        ccs_plan_destroy(p);
    }
    unsetenv("CCS_SMALL_BYTES");
}

/* Above the threshold (and by default) the plan runs step by step. */
TEST(plan_steps_above_threshold_and_by_default)
{
    ccs_plan_t *p = plan_of(fx_ring_allreduce(3, 1));
    for (int on = 0; on < 2; on++) {
        ccs_comm_t *c[3];
        job_t j[3];
        pthread_t th[3];
        if (on)
            setenv("CCS_SMALL_BYTES", "64", 1);
        CHECK_STATUS(ccs_comm_init_threads(3, c), CCS_OK);
        unsetenv("CCS_SMALL_BYTES");
        for (int r = 0; r < 3; r++) {
            j[r] = (job_t){ p, c[r], r, 3, 0, on ? 17 : 2, CCS_FLOAT32,
                            CCS_SUM, CCS_OK, 0, 0, malloc(17 * 4) };
            pthread_create(&th[r], NULL, job_main, &j[r]);
        }
        for (int r = 0; r < 3; r++)
            pthread_join(th[r], NULL);
        for (int r = 0; r < 3; r++) {
            CHECK_STATUS(j[r].st, CCS_OK);
            CHECK_EQ_INT(j[r].wrong, 0);
            CHECK_EQ_INT(j[r].steps, p->ngroups[r]);
            free(j[r].out);
            ccs_comm_destroy(c[r]);
        }
    }
    ccs_plan_destroy(p);
}

int main(void)
{
    setenv("CCS_TIMEOUT_S", "30", 0);  /* a bug fails instead of hanging */
    RUN(small_exchange_every_type_and_op);
    RUN(plan_steps_above_threshold_and_by_default);
    return TEST_SUMMARY();
}
