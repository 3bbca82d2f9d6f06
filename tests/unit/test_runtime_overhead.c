/*
 * test_runtime_overhead.c - a 2-rank plan of many tiny steps (one 4-byte
 * exchange per rank per step) on the threads transport.
 *
 *   test_runtime_overhead            correctness of the many-step plan
 *   test_runtime_overhead --bench N  executor overhead per step: median of
 *                                    N runs, in microseconds per step
 *                                    (scripts/bench-runtime.sh)
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "../../runtime/ccs_int.h"

/* Step 0: the allreduce of 1 chunk; steps 1..n: exchange OUT[0] into a
 * scratch slot (the result stays final). */
static ccs_sched_t *tiny_steps(uint32_t nsteps)
{
    ccs_sched_t *s = NULL;
    uint32_t step;

    if (ccs_sched_create(CCS_COLL_ALLREDUCE, 2, 1, "tiny", &s, NULL))
        return NULL;
    ccs_sched_add_step(s, 0, &step, NULL);
    ccs_sched_xfer_reduce_from(s, step, 0, CCS_BUF_IN, 0, 1, CCS_BUF_OUT, 0,
                               CCS_BUF_IN, 0, 1, NULL);
    ccs_sched_xfer_reduce_from(s, step, 1, CCS_BUF_IN, 0, 0, CCS_BUF_OUT, 0,
                               CCS_BUF_IN, 0, 1, NULL);
    for (uint32_t k = 1; k <= nsteps; k++) {
        ccs_sched_add_step(s, 0, &step, NULL);
        for (uint32_t r = 0; r < 2; r++)
            ccs_sched_xfer(s, step, r, CCS_BUF_OUT, 0, 1 - r,
                           CCS_BUF_SCRATCH, k % 2, 1, false, NULL);
    }
    if (ccs_sched_finalize(s, NULL) != CCS_OK) {
        ccs_sched_destroy(s);
        return NULL;
    }
    return s;
}

typedef struct job {
    const ccs_plan_t *plan;
    ccs_comm_t *comm;
    pthread_barrier_t *bar;
    int rank, reps;
    double secs;
    float out;
    ccs_status_t st;
} job_t;

static void *rank_main(void *arg)
{
    job_t *j = arg;
    float in = (float)(j->rank + 1);
    double t0;

    j->st = ccs_run(j->plan, j->comm, &in, &j->out, 1, CCS_FLOAT32, CCS_SUM,
                    NULL);                              /* warm-up */
    pthread_barrier_wait(j->bar);
    t0 = ccs_now_s();
    for (int i = 0; i < j->reps && j->st == CCS_OK; i++)
        j->st = ccs_run(j->plan, j->comm, &in, &j->out, 1, CCS_FLOAT32,
                        CCS_SUM, NULL);
    j->secs = ccs_now_s() - t0;
    return NULL;
}

/* Seconds per run (slowest rank); -1 on failure. */
static double run_plan(const ccs_plan_t *plan, int reps, float *out0)
{
    ccs_comm_t *c[2];
    job_t j[2];
    pthread_t th[2];
    pthread_barrier_t bar;
    double worst = 0;

    if (ccs_comm_init_threads(2, c) != CCS_OK)
        return -1;
    pthread_barrier_init(&bar, NULL, 2);
    for (int r = 0; r < 2; r++) {
        /* The cost measured is the plan's steps: no small exchange. */
        ccs_comm_set_small_bytes(c[r], 0);
        j[r] = (job_t){ plan, c[r], &bar, r, reps, 0, 0, CCS_OK };
        pthread_create(&th[r], NULL, rank_main, &j[r]);
    }
    for (int r = 0; r < 2; r++) {
        pthread_join(th[r], NULL);
        ccs_comm_destroy(c[r]);
        if (j[r].st != CCS_OK)
            worst = -1;
        else if (worst >= 0 && j[r].secs > worst)
            worst = j[r].secs;
    }
    pthread_barrier_destroy(&bar);
    *out0 = j[0].out == j[1].out ? j[0].out : -1;
    return worst < 0 ? -1 : worst / reps;
}

TEST(many_tiny_steps_correct)
{
    ccs_sched_t *s = tiny_steps(500);
    ccs_plan_t *p = NULL;
    float out = 0;

    CHECK(s != NULL);
    CHECK_STATUS(ccs_plan_from_sched(s, &p, NULL), CCS_OK);
    CHECK(run_plan(p, 3, &out) > 0);
    CHECK(out == 3.0f);
    ccs_plan_destroy(p);
    ccs_sched_destroy(s);
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int bench(int runs)
{
    const uint32_t nsteps = 20000;
    ccs_sched_t *s = tiny_steps(nsteps);
    ccs_plan_t *p = NULL;
    double us[64];
    float out;

    if (runs < 1 || runs > 64 || s == NULL ||
        ccs_plan_from_sched(s, &p, NULL) != CCS_OK)
        return 1;
    for (int i = 0; i < runs; i++) {
        double t = run_plan(p, 3, &out);
        if (t < 0 || out != 3.0f)
            return 1;
        us[i] = t * 1e6 / (nsteps + 1);
    }
    qsort(us, (size_t)runs, sizeof(us[0]), cmp_d);
    printf("  %u steps x 3 runs, %d repetitions: us/step median %.3f "
           "(min %.3f, max %.3f); target <= 1 us: %s\n", nsteps + 1, runs,
           us[runs / 2], us[0], us[runs - 1],
           us[runs / 2] <= 1.0 ? "met" : "NOT met");
    ccs_plan_destroy(p);
    ccs_sched_destroy(s);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--bench") == 0)
        return bench(atoi(argv[2]));
    setenv("CCS_TIMEOUT_S", "20", 0);
    RUN(many_tiny_steps_correct);
    return TEST_SUMMARY();
}
