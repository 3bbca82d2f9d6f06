/*
 * test_faults.c - no silent hangs, and the threads transport's corners.
 *
 *   test_faults                 threads transport: ranks that disagree on
 *                               the count or the plan fail on every rank
 *                               before data moves; a rank that never calls
 *                               makes its peers time out naming the step
 *                               and peer; a size mismatch with the call
 *                               check off still fails instead of hanging;
 *                               more messages to one peer in one step than
 *                               the transport has slots; small and large
 *                               (pulled) messages; ccs_comm_set_timeout.
 *   mpirun -np 2 test_faults --mpi CASE
 *                               the same fault cases across processes
 *                               (tests/e2e/mpi_correct.sh): CASE is count,
 *                               plan, dead or cached; exit 0 when every
 *                               rank failed as it should, within bounds.
 */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mpi.h>

#include "harness.h"
#include "rt_fixtures.h"
#include "../../runtime/ccs_int.h"

static double now(void)
{
    return ccs_now_s();
}

typedef struct job {
    const ccs_plan_t *plan;
    ccs_comm_t *comm;
    size_t count;
    int skip;                 /* this rank never calls */
    int runs;                 /* calls to make (count each) */
    ccs_status_t st;
    double took_s;
    char msg[256];
    float *a, *b;
} job_t;

static void *job_main(void *arg)
{
    job_t *j = arg;
    double t0 = now();

    j->st = CCS_OK;
    if (!j->skip) {
        for (int i = 0; i < (j->runs ? j->runs : 1) && j->st == CCS_OK; i++)
            j->st = ccs_run(j->plan, j->comm, j->a, j->b, j->count,
                            CCS_FLOAT32, CCS_SUM, NULL);
    }
    j->took_s = now() - t0;
    snprintf(j->msg, sizeof(j->msg), "%s", ccs_comm_last_error(j->comm));
    return NULL;
}

/* Run R ranks of `plans[r]` with `counts[r]`; returns in jobs. */
static void run_world(int R, ccs_comm_t **c, const ccs_plan_t **plans,
                      const size_t *counts, const int *skip, job_t *j)
{
    pthread_t th[8];
    for (int r = 0; r < R; r++) {
        j[r].plan = plans[r];
        j[r].comm = c[r];
        j[r].count = counts[r];
        j[r].skip = skip ? skip[r] : 0;
        j[r].a = calloc(counts[r] + 64, sizeof(float));
        j[r].b = calloc(counts[r] + 64, sizeof(float));
        pthread_create(&th[r], NULL, job_main, &j[r]);
    }
    for (int r = 0; r < R; r++) {
        pthread_join(th[r], NULL);
        free(j[r].a);
        free(j[r].b);
    }
}

TEST(count_mismatch_fails_every_rank)
{
    ccs_plan_t *p = fx_plan_of(fx_ring_allreduce(3, 1));
    ccs_comm_t *c[3];
    const ccs_plan_t *plans[3] = { p, p, p };
    size_t counts[3] = { 30, 30, 31 };
    job_t j[3];

    memset(j, 0, sizeof(j));
    CHECK(p != NULL);
    CHECK_STATUS(ccs_comm_init_threads(3, c), CCS_OK);
    for (int r = 0; r < 3; r++)
        ccs_comm_set_timeout(c[r], 20);
    run_world(3, c, plans, counts, NULL, j);
    for (int r = 0; r < 3; r++) {
        CHECK_STATUS(j[r].st, CCS_ERR_MISMATCH);
        CHECK_STR_CONTAINS(j[r].msg, "different calls");
        CHECK_MSG(j[r].took_s < 5, "rank %d took %.2f s", r, j[r].took_s);
    }
    for (int r = 0; r < 3; r++)
        ccs_comm_destroy(c[r]);
    ccs_plan_destroy(p);
}

TEST(plan_mismatch_fails_every_rank)
{
    ccs_plan_t *p1 = fx_plan_of(fx_ring_allreduce(2, 1));
    ccs_plan_t *p2 = fx_plan_of(fx_ring_allreduce(2, 2));
    ccs_comm_t *c[2];
    const ccs_plan_t *plans[2] = { p1, p2 };
    size_t counts[2] = { 64, 64 };
    job_t j[2];

    memset(j, 0, sizeof(j));
    CHECK(p1 != NULL && p2 != NULL);
    CHECK_STATUS(ccs_comm_init_threads(2, c), CCS_OK);
    run_world(2, c, plans, counts, NULL, j);
    for (int r = 0; r < 2; r++) {
        CHECK_STATUS(j[r].st, CCS_ERR_MISMATCH);
        CHECK_MSG(j[r].took_s < 5, "rank %d took %.2f s", r, j[r].took_s);
    }
    for (int r = 0; r < 2; r++)
        ccs_comm_destroy(c[r]);
    ccs_plan_destroy(p1);
    ccs_plan_destroy(p2);
}

/* Rank 2 never calls: the others fail within the timeout, naming it. */
TEST(absent_rank_times_out_naming_peer)
{
    ccs_plan_t *p = fx_plan_of(fx_ring_allreduce(3, 1));
    ccs_comm_t *c[3];
    const ccs_plan_t *plans[3] = { p, p, p };
    size_t counts[3] = { 30, 30, 30 };
    int skip[3] = { 0, 0, 1 };
    job_t j[3];

    memset(j, 0, sizeof(j));
    CHECK_STATUS(ccs_comm_init_threads(3, c), CCS_OK);
    for (int r = 0; r < 3; r++)
        CHECK_STATUS(ccs_comm_set_timeout(c[r], 0.3), CCS_OK);
    run_world(3, c, plans, counts, skip, j);
    /* Ranks 0 and 1 both wait for rank 2 in the exchange: the first to
     * time out names rank 2 and the step; the other times out too or sees
     * the world aborted by it. */
    {
        int t = j[0].st == CCS_ERR_TIMEOUT ? 0 : 1;
        CHECK_STATUS(j[t].st, CCS_ERR_TIMEOUT);
        CHECK_STR_CONTAINS(j[t].msg, "rank 2 not matched");
        CHECK_STR_CONTAINS(j[t].msg, "before step 0");
        CHECK(j[1 - t].st == CCS_ERR_TIMEOUT ||
              j[1 - t].st == CCS_ERR_TRANSPORT);
    }
    for (int r = 0; r < 2; r++)
        CHECK_MSG(j[r].took_s < 3, "rank %d took %.2f s", r, j[r].took_s);
    for (int r = 0; r < 3; r++)
        ccs_comm_destroy(c[r]);
    ccs_plan_destroy(p);
}

/* With the call check off, a size mismatch is caught by the transport:
 * small messages, large ones (moved in pieces), one of each, and sends
 * that travel inline in their slot (at most 16 bytes: complete at once on
 * the sender, so the receiver is the one to notice) against an inline one
 * and against a large one. */
TEST(size_mismatch_without_call_check)
{
    ccs_plan_t *p = fx_plan_of(fx_ring_allreduce(2, 1));
    const ccs_plan_t *plans[2] = { p, p };
    static const size_t pairs[][2] = { { 64, 128 },
                                       { 1 << 20, (1 << 20) + 64 },
                                       { 64, 1 << 20 },
                                       { 2, 3 },
                                       { 2, 1 << 20 } };

    for (size_t k = 0; k < sizeof(pairs) / sizeof(pairs[0]); k++) {
        ccs_comm_t *c[2];
        size_t counts[2] = { pairs[k][0], pairs[k][1] };
        job_t j[2];
        memset(j, 0, sizeof(j));
        setenv("CCS_CHECK_CALLS", "0", 1);
        CHECK_STATUS(ccs_comm_init_threads(2, c), CCS_OK);
        unsetenv("CCS_CHECK_CALLS");
        for (int r = 0; r < 2; r++)
            ccs_comm_set_timeout(c[r], 10);
        run_world(2, c, plans, counts, NULL, j);
        CHECK(j[0].st != CCS_OK && j[1].st != CCS_OK);
        CHECK(j[0].st == CCS_ERR_MISMATCH || j[1].st == CCS_ERR_MISMATCH);
        for (int r = 0; r < 2; r++)
            CHECK_MSG(j[r].took_s < 5, "counts %zu/%zu: rank %d took "
                      "%.2f s", counts[0], counts[1], r, j[r].took_s);
        for (int r = 0; r < 2; r++)
            ccs_comm_destroy(c[r]);
    }
    ccs_plan_destroy(p);
}

/* One step in which each of 2 ranks sends C single-chunk messages to the
 * other and reduces each into OUT: more messages than slots per pair. */
static ccs_sched_t *many_messages(uint32_t C)
{
    ccs_sched_t *s = NULL;
    uint32_t step;

    FX_TRY(ccs_sched_create(CCS_COLL_ALLREDUCE, 2, C, "fx-many", &s, NULL));
    FX_TRY(ccs_sched_add_step(s, 0, &step, NULL));
    for (uint32_t r = 0; r < 2; r++)
        for (uint32_t k = 0; k < C; k++)
            FX_TRY(ccs_sched_xfer_reduce_from(s, step, r, CCS_BUF_IN, k,
                                              1 - r, CCS_BUF_OUT, k,
                                              CCS_BUF_IN, k, 1, NULL));
    return fx_finish(s);
fail:
    ccs_sched_destroy(s);
    return NULL;
}

TEST(more_messages_than_slots_small_and_large)
{
    ccs_plan_t *p = fx_plan_of(many_messages(40));
    ccs_comm_t *c[2];
    /* 40 elements: 4-byte messages (sent inline in the slot, a send
     * complete at once, placed later when its slot is still busy);
     * 40 * 8192: 32 KiB messages (pulled by the receiver). */
    static const size_t counts[] = { 40, 40 * 8192, 40 * 8192 + 3 };

    CHECK(p != NULL);
    CHECK_STATUS(ccs_comm_init_threads(2, c), CCS_OK);
    /* the plan as written: 40 elements would take the small exchange */
    for (int r = 0; r < 2; r++)
        CHECK_STATUS(ccs_comm_set_small_bytes(c[r], 0), CCS_OK);
    for (size_t k = 0; k < sizeof(counts) / sizeof(counts[0]); k++) {
        size_t n = counts[k], wrong = 0;
        job_t j[2];
        pthread_t th[2];
        memset(j, 0, sizeof(j));
        for (int r = 0; r < 2; r++) {
            j[r].plan = p;
            j[r].comm = c[r];
            j[r].count = n;
            j[r].runs = 3;
            j[r].a = malloc(n * sizeof(float));
            j[r].b = malloc(n * sizeof(float));
            for (size_t i = 0; i < n; i++)
                j[r].a[i] = (float)(i % 1000) + (float)r * 1000.0f;
            pthread_create(&th[r], NULL, job_main, &j[r]);
        }
        for (int r = 0; r < 2; r++)
            pthread_join(th[r], NULL);
        for (int r = 0; r < 2; r++) {
            CHECK_STATUS(j[r].st, CCS_OK);
            for (size_t i = 0; i < n; i++)
                wrong += j[r].b[i] != 2.0f * (float)(i % 1000) + 1000.0f;
            free(j[r].a);
            free(j[r].b);
        }
        CHECK_MSG(wrong == 0, "count %zu: %zu wrong", n, wrong);
    }
    for (int r = 0; r < 2; r++)
        ccs_comm_destroy(c[r]);
    ccs_plan_destroy(p);
}

TEST(set_timeout_arguments)
{
    ccs_comm_t *c[1];
    CHECK_STATUS(ccs_comm_set_timeout(NULL, 1), CCS_ERR_INVALID);
    CHECK_STATUS(ccs_comm_init_threads(1, c), CCS_OK);
    CHECK_STATUS(ccs_comm_set_timeout(c[0], -1), CCS_ERR_INVALID);
    CHECK_STATUS(ccs_comm_set_timeout(c[0], NAN), CCS_ERR_INVALID);
    CHECK_STATUS(ccs_comm_set_timeout(c[0], 0), CCS_OK);
    CHECK_STATUS(ccs_comm_set_timeout(c[0], 1e12), CCS_OK);
    ccs_comm_destroy(c[0]);
}

/* ---- the MPI cases ---- */

static int mpi_case(const char *name)
{
    int rank = 0, size = 0, ok, all = 0;
    ccs_plan_t *p1 = NULL, *p2 = NULL;
    const ccs_plan_t *plan;
    ccs_comm_t *comm = NULL;
    MPI_Comm world = MPI_COMM_WORLD;
    ccs_status_t st = CCS_OK, want;
    size_t count = 64;
    float a[256], b[256];
    double t0, took, limit;

    MPI_Init(NULL, NULL);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    memset(a, 0, sizeof(a));
    p1 = fx_plan_of(fx_ring_allreduce((uint32_t)size, 1));
    p2 = fx_plan_of(fx_ring_allreduce((uint32_t)size, 2));
    if (p1 == NULL || p2 == NULL ||
        ccs_comm_init_mpi(&world, &comm) != CCS_OK) {
        fprintf(stderr, "rank %d: set-up failed\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    ccs_comm_set_timeout(comm, 2);
    plan = p1;
    want = CCS_ERR_MISMATCH;
    limit = 1.5;
    if (strcmp(name, "count") == 0) {
        count = rank == size - 1 ? 65 : 64;
    } else if (strcmp(name, "plan") == 0) {
        plan = rank == size - 1 ? p2 : p1;
    } else if (strcmp(name, "dead") == 0 || strcmp(name, "cached") == 0) {
        want = CCS_ERR_TIMEOUT;
        limit = 4;
        if (strcmp(name, "cached") == 0) {
            /* Agreed once; then the last rank changes its count while the
             * others' call is cached: they time out, it does too or sees
             * the mismatch. */
            st = ccs_run(plan, comm, a, b, count, CCS_FLOAT32, CCS_SUM,
                         NULL);
            if (rank == size - 1)
                count = 65;
        } else if (rank == size - 1) {
            /* Dies: leaves the job without ever calling. */
            ccs_comm_destroy(comm);
            MPI_Finalize();
            printf("rank %d: left without calling\n", rank);
            return 0;
        }
    } else {
        fprintf(stderr, "unknown case %s\n", name);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    t0 = now();
    if (st == CCS_OK)
        st = ccs_run(plan, comm, a, b, count, CCS_FLOAT32, CCS_SUM, NULL);
    took = now() - t0;
    ok = (st == want || (strcmp(name, "cached") == 0 &&
                         st == CCS_ERR_MISMATCH)) && took < limit;
    printf("rank %d: %s after %.2f s: %s (%s)\n", rank, ccs_status_name(st),
           took, ccs_comm_last_error(comm), ok ? "as expected" : "WRONG");
    fflush(stdout);
    ccs_comm_destroy(comm);
    ccs_plan_destroy(p1);
    ccs_plan_destroy(p2);
    if (strcmp(name, "dead") == 0 || strcmp(name, "cached") == 0) {
        /* Peers are gone or out of step: no collective finalisation; wait
         * for the other survivors to report before mpirun sees us leave
         * (it then stops the job). */
        sleep(2);
        _exit(ok ? 0 : 1);
    }
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    MPI_Finalize();
    return all ? 0 : 1;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--mpi") == 0)
        return mpi_case(argv[2]);
    setenv("CCS_TIMEOUT_S", "30", 0);  /* a bug fails instead of hanging */
    RUN(count_mismatch_fails_every_rank);
    RUN(plan_mismatch_fails_every_rank);
    RUN(absent_rank_times_out_naming_peer);
    RUN(size_mismatch_without_call_check);
    RUN(more_messages_than_slots_small_and_large);
    RUN(set_timeout_arguments);
    return TEST_SUMMARY();
}
