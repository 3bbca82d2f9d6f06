/*
 * fuzz_ccs.c - the .ccs reader and plan loader (runtime/format.c,
 * runtime/plan.c), and the executor behind them: every file the loader
 * accepts is run on the threads transport, each rank on its own thread,
 * with a few small element counts, under ASan and UBSan.  The loader's
 * promise is that no accepted file can make a run read or write outside
 * its buffers, hang on an unmatched transfer or overrun its staging.
 *
 * Every input gets its checksum recomputed first, so that mutations reach
 * the decoder, the validator and the executor instead of stopping at a CRC
 * mismatch (test_format flips every bit of files to test the checksum).
 */
#include <pthread.h>

#include "../../runtime/ccs.h"
#include "../../runtime/crc32c.h"
#include "fuzz_common.h"

/* Plans wider than this are loaded but not run (threads cost). */
#define RUN_MAX_RANKS 16

typedef struct job {
    const ccs_plan_t *plan;
    ccs_comm_t *comm;
    const float *in;
    float *out;
    size_t count;
} job_t;

static void *run_rank(void *arg)
{
    job_t *j = arg;
    /* The op is ignored by the collectives that do not reduce. */
    (void)ccs_run(j->plan, j->comm, j->in, j->out, j->count, CCS_FLOAT32,
                  CCS_SUM, NULL);
    return NULL;
}

static void run_plan(const ccs_plan_t *plan, size_t count)
{
    int R = ccs_plan_nranks(plan);
    ccs_comm_t *comms[RUN_MAX_RANKS] = { 0 };
    pthread_t th[RUN_MAX_RANKS];
    job_t jobs[RUN_MAX_RANKS];
    size_t n = (size_t)R * count + 1;   /* room for every collective */

    if (ccs_comm_init_threads(R, comms) != CCS_OK)
        return;
    for (int r = 0; r < R; r++) {
        float *in = calloc(n, sizeof(float)), *out = calloc(n, sizeof(float));
        if (in == NULL || out == NULL)
            abort();
        for (size_t i = 0; i < n; i++)
            in[i] = (float)(r + 1);
        jobs[r] = (job_t){ plan, comms[r], in, out, count };
    }
    for (int r = 0; r < R; r++)
        if (pthread_create(&th[r], NULL, run_rank, &jobs[r]) != 0)
            abort();
    for (int r = 0; r < R; r++) {
        pthread_join(th[r], NULL);
        free((void *)jobs[r].in);
        free(jobs[r].out);
        ccs_comm_destroy(comms[r]);
    }
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    /* An accepted plan never hangs; if one did, fail fast, not at
     * libFuzzer's timeout. */
    setenv("CCS_TIMEOUT_S", "5", 1);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ccs_plan_t *plan = NULL;
    uint8_t *buf;
    char msg[512];
    ccs_status_t st;

    buf = malloc(size ? size : 1);
    if (buf == NULL)
        abort();
    memcpy(buf, data, size);
    if (size >= 16) {
        uint32_t crc = ccs_crc32c(0, buf, size - 4);
        for (int i = 0; i < 4; i++)
            buf[size - 4 + i] = (uint8_t)(crc >> (8 * i));
    }
    st = ccs_plan_load_mem_msg(buf, size, &plan, msg, sizeof(msg));
    free(buf);
    if (st != CCS_OK)
        return 0;
    if (ccs_plan_nranks(plan) <= RUN_MAX_RANKS) {
        static const size_t counts[] = { 1, 7, 64 };
        for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++)
            run_plan(plan, counts[i]);
    }
    ccs_plan_destroy(plan);
    return 0;
}
