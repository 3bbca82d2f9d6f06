/*
 * test_small.c - the one-step exchange for small allreduces (exec.c, on
 * by default below 4 KiB): every dtype x op, 2 to 5 ranks, out of place,
 * in place and with the input overlapping the output (shifted by one
 * element), checked by the independent reference of ccs_check.h; one step
 * taken below the threshold, the plan's steps above it, with the default,
 * CCS_SMALL_BYTES and ccs_comm_set_small_bytes; every rank gets the same
 * bits.
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

/* Where the input lies against the output. */
enum { IN_APART, IN_PLACE, IN_SHIFTED /* out + 1 element: overlapping */ };

static void *job_main(void *arg)
{
    job_t *j = arg;
    size_t es = ccs_dtype_size(j->dt);
    uint8_t *in = malloc(j->count * es);
    uint8_t *src = j->inplace == IN_PLACE     ? j->out
                   : j->inplace == IN_SHIFTED ? j->out + es
                                              : in;
    ccs_run_stats_t stats;
    ccs_run_opts_t o = CCS_RUN_OPTS_INIT;

    o.stats = &stats;
    memset(&stats, 0, sizeof(stats));
    chk_fill(CCS_COLL_ALLREDUCE, j->dt, j->op, j->rank, j->R, -1, j->count,
             src);
    j->st = ccs_run_ex(j->plan, j->comm, src, j->out, j->count, j->dt, j->op,
                       NULL, &o);
    j->wrong = chk_wrong(CCS_COLL_ALLREDUCE, j->dt, j->op, j->rank, j->R, -1,
                         j->count, j->out);
    j->steps = stats.steps_run;
    free(in);
    return NULL;
}

TEST(small_exchange_every_type_and_op)
{
    static const size_t counts[] = { 1, 7, 100 };
    for (int R = 2; R <= 5; R++) {
        ccs_plan_t *p = fx_plan_of(fx_ring_allreduce((uint32_t)R, 1));
        ccs_comm_t *c[8];
        CHECK(p != NULL);
        CHECK_STATUS(ccs_comm_init_threads(R, c), CCS_OK);
        for (int d = 0; d < CCS_DTYPE_COUNT; d++) {
            for (int o = 0; o < CCS_REDOP_COUNT; o++) {
                for (size_t k = 0; k < 3; k++) {
                    for (int ip = IN_APART; ip <= IN_SHIFTED; ip++) {
                        job_t j[8];
                        pthread_t th[8];
                        size_t es = ccs_dtype_size((ccs_dtype_t)d);
                        for (int r = 0; r < R; r++) {
                            j[r] = (job_t){ p, c[r], r, R, ip, counts[k],
                                            (ccs_dtype_t)d, (ccs_redop_t)o,
                                            CCS_OK, 0, 0,
                                            malloc((counts[k] + 1) * es) };
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
                                      counts[k],
                                      ip == IN_PLACE     ? " in place"
                                      : ip == IN_SHIFTED ? " input overlapping"
                                                           " the output"
                                                         : "",
                                      r, j[r].wrong);
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
}

#define MAX_R 18

/* Which calls take the exchange: the default threshold and its cap on
 * what a rank sends, the environment, the setter. */
TEST(threshold_decides_exchange_or_plan)
{
    static const struct {
        const char *env;     /* CCS_SMALL_BYTES, NULL: unset */
        long set;            /* ccs_comm_set_small_bytes, -1: not called */
        int R;
        size_t count;        /* float32 elements per rank */
        int exchange;        /* 1: one step; 0: the plan's steps */
    } cases[] = {
        { NULL, -1, 3, 2, 1 },       /* 8 B: default on */
        { NULL, -1, 3, 1024, 1 },    /* 4096 B: the threshold itself */
        { NULL, -1, 3, 1025, 0 },    /* 4100 B: above */
        { NULL, -1, 18, 900, 1 },    /* 17 x 3600 B <= 64 KiB */
        { NULL, -1, 18, 1024, 0 },   /* 17 x 4096 B > 64 KiB: the cap */
        { "64", -1, 3, 16, 1 },
        { "64", -1, 3, 17, 0 },
        { "4096", -1, 18, 1024, 1 }, /* set explicitly: no cap */
        { "0", -1, 3, 2, 0 },        /* off: replay */
        { NULL, 0, 3, 2, 0 },        /* off by the setter */
        { NULL, 8192, 3, 2048, 1 },
        { "4096", 0, 3, 2, 0 },      /* the setter wins over the env */
    };

    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        int R = cases[k].R;
        ccs_plan_t *p = fx_plan_of(fx_ring_allreduce((uint32_t)R, 1));
        ccs_comm_t *c[MAX_R];
        job_t j[MAX_R];
        pthread_t th[MAX_R];

        CHECK(p != NULL);
        if (p == NULL)
            continue;
        if (cases[k].env != NULL)
            setenv("CCS_SMALL_BYTES", cases[k].env, 1);
        CHECK_STATUS(ccs_comm_init_threads(R, c), CCS_OK);
        unsetenv("CCS_SMALL_BYTES");
        for (int r = 0; r < R; r++) {
            if (cases[k].set >= 0)
                CHECK_STATUS(ccs_comm_set_small_bytes(
                                 c[r], (size_t)cases[k].set), CCS_OK);
            j[r] = (job_t){ p, c[r], r, R, 0, cases[k].count, CCS_FLOAT32,
                            CCS_SUM, CCS_OK, 0, 0,
                            malloc(cases[k].count * 4) };
            pthread_create(&th[r], NULL, job_main, &j[r]);
        }
        for (int r = 0; r < R; r++)
            pthread_join(th[r], NULL);
        for (int r = 0; r < R; r++) {
            CHECK_STATUS(j[r].st, CCS_OK);
            CHECK_EQ_INT(j[r].wrong, 0);
            CHECK_MSG(j[r].steps == (cases[k].exchange ? 1 : p->ngroups[r]),
                      "case %zu rank %d: %u steps run, want %u", k, r,
                      j[r].steps, cases[k].exchange ? 1 : p->ngroups[r]);
            free(j[r].out);
            ccs_comm_destroy(c[r]);
        }
        ccs_plan_destroy(p);
    }
    CHECK_STATUS(ccs_comm_set_small_bytes(NULL, 0), CCS_ERR_INVALID);
}

int main(void)
{
    setenv("CCS_TIMEOUT_S", "30", 0);  /* a bug fails instead of hanging */
    RUN(small_exchange_every_type_and_op);
    RUN(threshold_decides_exchange_or_plan);
    return TEST_SUMMARY();
}
