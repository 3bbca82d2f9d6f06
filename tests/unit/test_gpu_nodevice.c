/*
 * test_gpu_nodevice.c - the GPU transports and kernels fail cleanly where
 * there is no GPU (CI), and work on a machine that has one.
 *
 * The test finds out for itself whether a device is there (cudaGetDevice-
 * Count straight from the CUDA runtime, not through the code under test)
 * and checks the matching behaviour:
 *   built without CUDA  every GPU entry point says CCS_ERR_UNSUPPORTED;
 *   no device           CCS_ERR_NO_DEVICE with a message naming the
 *                       transport and cudaGetDeviceCount, outputs untouched,
 *                       no abort; kernels say CCS_ERR_NO_DEVICE too;
 *   a device            a tiny smoke run: 2 virtual ranks on device 0, a
 *                       ring allreduce, checked element by element (the
 *                       full GPU matrix is scripts/gpu-check.sh).
 * Argument errors give CCS_ERR_INVALID in every CUDA build.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "rt_fixtures.h"
#include "../../runtime/ccs_int.h"
#include "../../tools/ccs_check.h"

#ifdef CCS_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "../../runtime/reduce_cuda.h"
#endif

static int devices_present(void)
{
#ifdef CCS_HAVE_CUDA
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess)
        n = 0;
    (void)cudaGetLastError();
    return n;
#else
    return 0;
#endif
}

static ccs_comm_t *const SENTINEL = (ccs_comm_t *)(uintptr_t)0x5a5a;

#ifndef CCS_HAVE_CUDA

TEST(built_without_cuda)
{
    ccs_comm_t *c[2] = { SENTINEL, SENTINEL };
    char msg[256] = "";

    CHECK_STATUS(ccs_comm_init_cuda(2, NULL, c), CCS_ERR_UNSUPPORTED);
    CHECK_STATUS(ccs_comm_init_cuda_msg(2, NULL, c, msg, sizeof(msg)),
                 CCS_ERR_UNSUPPORTED);
    CHECK_STR_CONTAINS(msg, "without CUDA");
    CHECK_STATUS(ccs_comm_init_nccl_msg(NULL, c, msg, sizeof(msg)),
                 CCS_ERR_UNSUPPORTED);
    CHECK(c[0] == SENTINEL && c[1] == SENTINEL);
}

#else

/* Bad arguments are refused before any device query. */
TEST(invalid_arguments)
{
    ccs_comm_t *c[2] = { SENTINEL, SENTINEL };
    char msg[256] = "";
    int bad_dev[2] = { 0, -1 };

    CHECK_STATUS(ccs_comm_init_cuda(0, NULL, c), CCS_ERR_INVALID);
    CHECK_STATUS(ccs_comm_init_cuda(2, NULL, NULL), CCS_ERR_INVALID);
    CHECK_STATUS(ccs_comm_init_cuda_msg(-3, NULL, c, msg, sizeof(msg)),
                 CCS_ERR_INVALID);
    CHECK_STR_CONTAINS(msg, "cuda transport");
    CHECK_STATUS(ccs_comm_init_nccl_msg(NULL, c, msg, sizeof(msg)),
                 CCS_ERR_INVALID);
    CHECK_STR_CONTAINS(msg, "NULL ncclComm_t");
    CHECK_STATUS(ccs_comm_init_nccl(NULL, c), CCS_ERR_INVALID);
    /* A device that cannot exist: NO_DEVICE without GPU, else INVALID. */
    CHECK_STATUS(ccs_comm_init_cuda_msg(2, bad_dev, c, msg, sizeof(msg)),
                 devices_present() ? CCS_ERR_INVALID : CCS_ERR_NO_DEVICE);
    CHECK(c[0] == SENTINEL && c[1] == SENTINEL);
    /* Messages are truncated safely and msg may be NULL. */
    CHECK_STATUS(ccs_comm_init_cuda_msg(0, NULL, c, msg, 4),
                 CCS_ERR_INVALID);
    CHECK_EQ_INT(strlen(msg), 3);
    CHECK_STATUS(ccs_comm_init_cuda_msg(0, NULL, c, NULL, 0),
                 CCS_ERR_INVALID);
}

/* The classification of CUDA errors the transports rely on. */
TEST(cuda_status_mapping)
{
    static const struct {
        int e;
        ccs_status_t want;
    } table[] = {
        { cudaSuccess, CCS_OK },
        { cudaErrorNoDevice, CCS_ERR_NO_DEVICE },
        { cudaErrorInsufficientDriver, CCS_ERR_NO_DEVICE },
        { cudaErrorStubLibrary, CCS_ERR_NO_DEVICE },
        { cudaErrorMemoryAllocation, CCS_ERR_CUDA },
        { cudaErrorInvalidValue, CCS_ERR_CUDA },
        { cudaErrorLaunchFailure, CCS_ERR_CUDA },
    };
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
        CHECK_STATUS(ccs_cuda_status(table[i].e), table[i].want);
}

/* Where no GPU is present: clean statuses and messages, nothing aborts. */
TEST(no_device_fails_cleanly)
{
    ccs_comm_t *c[3] = { SENTINEL, SENTINEL, SENTINEL };
    char msg[256] = "";
    int fake_nccl = 0;
    ccs_err_t e;

    CHECK_STATUS(ccs_comm_init_cuda(3, NULL, c), CCS_ERR_NO_DEVICE);
    CHECK_STATUS(ccs_comm_init_cuda_msg(3, NULL, c, msg, sizeof(msg)),
                 CCS_ERR_NO_DEVICE);
    CHECK_STR_CONTAINS(msg, "cuda transport: no CUDA device");
    CHECK_STR_CONTAINS(msg, "cudaGetDeviceCount");
    CHECK(c[0] == SENTINEL && c[1] == SENTINEL && c[2] == SENTINEL);

    /* Without a device NCCL is never asked about the communicator, so a
     * pointer that is not one is safe here (and only here). */
    CHECK_STATUS(ccs_comm_init_nccl_msg(&fake_nccl, c, msg, sizeof(msg)),
                 CCS_ERR_NO_DEVICE);
    CHECK_STR_CONTAINS(msg, "nccl transport: no CUDA device");
    CHECK(c[0] == SENTINEL);

    /* Kernels: nothing to do is fine, work is refused with the reason. */
    ccs_err_clear(&e);
    CHECK_STATUS(ccs_reduce_cuda(NULL, NULL, NULL, 0, CCS_FLOAT32, CCS_SUM,
                                 NULL, &e), CCS_OK);
    CHECK_STATUS(ccs_reduce_cuda(NULL, NULL, NULL, 16, CCS_BFLOAT16,
                                 CCS_MAX, NULL, &e), CCS_ERR_NO_DEVICE);
    CHECK_STR_CONTAINS(e.msg, "reduce kernel");
    CHECK_STR_CONTAINS(e.msg, "bfloat16 max");
    CHECK_STATUS(ccs_div_cuda(NULL, 16, CCS_FLOAT16, 4, NULL, &e),
                 CCS_ERR_NO_DEVICE);
    CHECK_STR_CONTAINS(e.msg, "div kernel");
    CHECK_STATUS(ccs_div_cuda(NULL, 16, CCS_FLOAT16, 1, NULL, &e), CCS_OK);
    CHECK_STATUS(ccs_reduce_cuda(NULL, NULL, NULL, 16, CCS_DTYPE_COUNT,
                                 CCS_SUM, NULL, &e), CCS_ERR_INVALID);
    CHECK_STATUS(ccs_reduce_cuda(NULL, NULL, NULL, 16, CCS_INT32,
                                 CCS_REDOP_COUNT, NULL, &e), CCS_ERR_INVALID);
    CHECK(strlen(ccs_strerror(CCS_ERR_NO_DEVICE)) > 0);
}

/* ---- with a GPU: a tiny smoke run ---- */

typedef struct smoke_job {
    const ccs_plan_t *plan;
    ccs_comm_t *comm;
    int rank, R;
    size_t count;
    ccs_dtype_t dt;
    ccs_redop_t op;
    ccs_status_t st;
    size_t wrong;
    char msg[256];
} smoke_job_t;

static void *smoke_rank(void *arg)
{
    smoke_job_t *j = arg;
    size_t bytes = j->count * ccs_dtype_size(j->dt);
    uint8_t *host = malloc(bytes);
    void *dev = NULL;

    j->st = CCS_ERR_INTERNAL;
    if (host == NULL || cudaSetDevice(0) != cudaSuccess ||
        cudaMalloc(&dev, bytes) != cudaSuccess) {
        snprintf(j->msg, sizeof(j->msg), "setup failed");
        goto out;
    }
    chk_fill(CCS_COLL_ALLREDUCE, j->dt, j->op, j->rank, j->R, -1, j->count,
             host);
    cudaMemcpy(dev, host, bytes, cudaMemcpyHostToDevice);
    /* In place, NULL stream: blocking. */
    j->st = ccs_run(j->plan, j->comm, dev, dev, j->count, j->dt, j->op,
                    NULL);
    if (j->st != CCS_OK) {
        snprintf(j->msg, sizeof(j->msg), "%s",
                 ccs_comm_last_error(j->comm));
        goto out;
    }
    if (cudaMemcpy(host, dev, bytes, cudaMemcpyDeviceToHost) != cudaSuccess)
        j->st = CCS_ERR_CUDA;
    j->wrong = chk_wrong(CCS_COLL_ALLREDUCE, j->dt, j->op, j->rank, j->R, -1,
                         j->count, host);
out:
    cudaFree(dev);
    free(host);
    return NULL;
}

TEST(device_smoke)
{
    const int R = 2;
    ccs_sched_t *s = fx_ring_allreduce((uint32_t)R, 2);
    ccs_plan_t *plan = NULL;
    ccs_comm_t *c[2] = { NULL, NULL };
    smoke_job_t jobs[2];
    pthread_t th[2];
    char msg[256] = "";
    static const struct {
        ccs_dtype_t dt;
        ccs_redop_t op;
        size_t count;
    } cases[] = { { CCS_FLOAT32, CCS_SUM, 1000 },
                  { CCS_BFLOAT16, CCS_AVG, 7 },
                  { CCS_INT64, CCS_MAX, 1 } };

    CHECK(s != NULL);
    CHECK_STATUS(ccs_plan_from_sched(s, &plan, NULL), CCS_OK);
    CHECK_STATUS(ccs_comm_init_cuda_msg(R, NULL, c, msg, sizeof(msg)),
                 CCS_OK);
    if (plan == NULL || c[0] == NULL) {
        FAIL_AT("setup: %s", msg);
        goto out;
    }
    CHECK_STR_CONTAINS(ccs_comm_transport(c[0]), "cuda");
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        for (int r = 0; r < R; r++) {
            memset(&jobs[r], 0, sizeof(jobs[r]));
            jobs[r].plan = plan;
            jobs[r].comm = c[r];
            jobs[r].rank = r;
            jobs[r].R = R;
            jobs[r].count = cases[k].count;
            jobs[r].dt = cases[k].dt;
            jobs[r].op = cases[k].op;
            pthread_create(&th[r], NULL, smoke_rank, &jobs[r]);
        }
        for (int r = 0; r < R; r++)
            pthread_join(th[r], NULL);
        for (int r = 0; r < R; r++)
            CHECK_MSG(jobs[r].st == CCS_OK && jobs[r].wrong == 0,
                      "%s %s count %zu rank %d: %s, %zu wrong: %s",
                      ccs_dtype_str(cases[k].dt), ccs_redop_str(cases[k].op),
                      cases[k].count, r, ccs_status_name(jobs[r].st),
                      jobs[r].wrong, jobs[r].msg);
    }
out:
    ccs_comm_destroy(c[0]);
    ccs_comm_destroy(c[1]);
    ccs_plan_destroy(plan);
    ccs_sched_destroy(s);
}

#endif /* CCS_HAVE_CUDA */

int main(void)
{
    int ndev = devices_present();

    setenv("CCS_TIMEOUT_S", "60", 0);
#ifndef CCS_HAVE_CUDA
    (void)ndev;
    RUN(built_without_cuda);
#else
    RUN(invalid_arguments);
    RUN(cuda_status_mapping);
    if (ndev == 0) {
        RUN(no_device_fails_cleanly);
    } else {
        printf("test_gpu_nodevice: %d CUDA device(s) found: running the "
               "smoke test instead of the no-device checks\n", ndev);
        RUN(device_smoke);
    }
#endif
    return TEST_SUMMARY();
}
