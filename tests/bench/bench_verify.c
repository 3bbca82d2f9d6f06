/*
 * bench_verify.c - times verify_sched on large generated schedules.
 *
 *   bench_verify KIND N REPS      KIND: ring (ring allreduce, N chunks,
 *                                 2(N-1) steps) or direct (one-step direct
 *                                 allgather, N(N-1) transfers)
 * Prints one line: the schedule's size, the median / min / max verification
 * time over REPS runs, and the process's peak RSS.  Built and run by
 * scripts/bench-verify.sh; not part of `make test`.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "verify.h"
#include "../unit/verify_fixture.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    ccs_sched_t *s = NULL;
    ccs_err_t err = { { 0 } };
    verify_report_t rep;
    double *times = NULL;
    double build_s;
    struct rusage ru;
    ccs_status_t st;
    long n, reps;
    int rc = 1;

    if (argc != 4 || (n = strtol(argv[2], NULL, 10)) < 2 || n > 65536 ||
        (reps = strtol(argv[3], NULL, 10)) < 1 || reps > 1000) {
        fprintf(stderr, "usage: bench_verify ring|direct N REPS\n");
        return 2;
    }
    build_s = now_s();
    if (strcmp(argv[1], "ring") == 0)
        st = fixture_ring_allreduce((uint32_t)n, &s, &err);
    else if (strcmp(argv[1], "direct") == 0)
        st = fixture_direct_allgather((uint32_t)n, &s, &err);
    else
        st = ccs_err_set(&err, CCS_ERR_INVALID, "unknown kind '%s'", argv[1]);
    build_s = now_s() - build_s;
    if (st != CCS_OK) {
        fprintf(stderr, "bench_verify: %s\n", ccs_err_msg(&err, st));
        goto cleanup;
    }
    times = malloc((size_t)reps * sizeof(double)); /* owned here */
    if (times == NULL)
        goto cleanup;
    for (long i = 0; i < reps; i++) {
        double t0 = now_s();
        st = verify_sched(s, &rep, &err);
        times[i] = now_s() - t0;
        if (st != CCS_OK) {
            fprintf(stderr, "bench_verify: %s\n", ccs_err_msg(&err, st));
            goto cleanup;
        }
    }
    qsort(times, (size_t)reps, sizeof(double), cmp_double);
    getrusage(RUSAGE_SELF, &ru);
    printf("%-6s n=%-5ld steps=%-5u ops=%-8llu verify median %.4f s "
           "(min %.4f, max %.4f, %ld runs), build %.3f s, peak RSS %.0f MiB\n",
           argv[1], n, rep.nsteps, (unsigned long long)rep.nops,
           times[reps / 2], times[0], times[reps - 1], reps, build_s,
           (double)ru.ru_maxrss / 1024.0);
    rc = 0;

cleanup:
    free(times);
    ccs_sched_destroy(s);
    return rc;
}
