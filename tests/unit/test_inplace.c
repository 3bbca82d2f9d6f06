/*
 * test_inplace.c - in-place runs stage only what is at risk (exec.c):
 * a rank whose only conflict is a receive into OUT[c] in the step that
 * sends IN[c] (StragglAR's straggler) copies nothing up front and still
 * gets the right result; a rank that reads IN[c] after OUT[c] was written
 * copies its input first.  Every transfer size path of the threads
 * transport (direct reduce, pulled, staged) is covered by the counts.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "rt_fixtures.h"
#include "../../runtime/ccs_int.h"

/* One step: every rank sends all of IN to the next rank and reduces what
 * it receives into OUT (OUT = IN + received): allreduce for R = 2. */
static ccs_sched_t *exchange(uint32_t C)
{
    ccs_sched_t *s = NULL;
    uint32_t step;

    FX_TRY(ccs_sched_create(CCS_COLL_ALLREDUCE, 2, C, "fx-exchange", &s,
                            NULL));
    FX_TRY(ccs_sched_add_step(s, 0, &step, NULL));
    for (uint32_t r = 0; r < 2; r++)
        FX_TRY(ccs_sched_xfer_reduce_from(s, step, r, CCS_BUF_IN, 0, 1 - r,
                                          CCS_BUF_OUT, 0, CCS_BUF_IN, 0, C,
                                          NULL));
    return fx_finish(s);
fail:
    ccs_sched_destroy(s);
    return NULL;
}

typedef struct job {
    const ccs_plan_t *plan;
    ccs_comm_t *comm;
    float *buf;
    size_t n;
    int rank;
    ccs_status_t st;
    ccs_run_stats_t stats;
} job_t;

static void *job_main(void *arg)
{
    job_t *j = arg;
    ccs_run_opts_t o = CCS_RUN_OPTS_INIT;
    o.stats = &j->stats;
    j->st = CCS_OK;
    for (int it = 0; it < 2 && j->st == CCS_OK; it++) {
        for (size_t i = 0; i < j->n; i++)
            j->buf[i] = (float)(i % 100) + (float)j->rank;
        j->st = ccs_run_ex(j->plan, j->comm, j->buf, j->buf, j->n,
                           CCS_FLOAT32, CCS_SUM, NULL, &o);
    }
    return NULL;
}

/* Runs plan in place on R threads; returns wrong elements (sum of inputs
 * expected) and each rank's staged_input in staged[]. */
static size_t run_inplace(const ccs_plan_t *plan, int R, size_t n,
                          int *staged)
{
    ccs_comm_t *c[8];
    job_t j[8];
    pthread_t th[8];
    size_t wrong = 0;
    float add = 0;

    for (int r = 0; r < R; r++)
        add += (float)r;
    if (ccs_comm_init_threads(R, c) != CCS_OK)
        return (size_t)-1;
    for (int r = 0; r < R; r++) {
        ccs_comm_set_small_bytes(c[r], 0);   /* the plan's staging, replayed */
        memset(&j[r], 0, sizeof(j[r]));
        j[r].plan = plan;
        j[r].comm = c[r];
        j[r].buf = malloc(n * sizeof(float));
        j[r].n = n;
        j[r].rank = r;
        pthread_create(&th[r], NULL, job_main, &j[r]);
    }
    for (int r = 0; r < R; r++)
        pthread_join(th[r], NULL);
    for (int r = 0; r < R; r++) {
        if (j[r].st != CCS_OK) {
            fprintf(stderr, "rank %d: %s\n", r, ccs_comm_last_error(c[r]));
            wrong++;
        }
        for (size_t i = 0; i < n; i++)
            wrong += j[r].buf[i] != (float)R * (float)(i % 100) + add;
        staged[r] = j[r].stats.staged_input;
        free(j[r].buf);
        ccs_comm_destroy(c[r]);
    }
    return wrong;
}

TEST(same_step_conflict_stages_receives_not_input)
{
    ccs_plan_t *p = fx_plan_of(exchange(4));
    static const size_t counts[] = { 1, 7, 1000, 40003, 1 << 20 };
    int staged[8];

    CHECK(p != NULL);
    CHECK(p->inplace_hazard[0] && p->inplace_hazard[1]);
    for (size_t k = 0; k < sizeof(counts) / sizeof(counts[0]); k++) {
        size_t wrong = run_inplace(p, 2, counts[k], staged);
        CHECK_MSG(wrong == 0, "count %zu: %zu wrong", counts[k], wrong);
        CHECK_EQ_INT(staged[0], 0);
        CHECK_EQ_INT(staged[1], 0);
    }
    ccs_plan_destroy(p);
}

TEST(later_read_copies_input)
{
    ccs_plan_t *p = fx_plan_of(fx_direct_hazard(2, 3));
    int staged[8];

    CHECK(p != NULL);
    CHECK_EQ_INT(run_inplace(p, 2, 1001, staged), 0);
    CHECK_EQ_INT(staged[0], 1);
    CHECK_EQ_INT(staged[1], 1);
    ccs_plan_destroy(p);
}

TEST(straggler_fixture_in_place)
{
    for (uint32_t R = 3; R <= 5; R++) {
        ccs_plan_t *p = fx_plan_of(fx_straggler(R, R - 1));
        int staged[8];
        CHECK(p != NULL);
        CHECK_EQ_INT(run_inplace(p, (int)R, 30011, staged), 0);
        ccs_plan_destroy(p);
    }
}

int main(void)
{
    setenv("CCS_TIMEOUT_S", "30", 0);  /* a bug fails instead of hanging */
    RUN(same_step_conflict_stages_receives_not_input);
    RUN(later_read_copies_input);
    RUN(straggler_fixture_in_place);
    return TEST_SUMMARY();
}
