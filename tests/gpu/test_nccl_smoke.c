/*
 * test_nccl_smoke.c - the nccl transport on one GPU: an NCCL communicator
 * of one rank (ncclCommInitAll with one device) wrapped by
 * ccs_comm_init_nccl, then plans of one rank replayed on the caller's
 * stream and on the NULL stream.  NCCL refuses two ranks on one GPU and the
 * IR has no sends to oneself, so one rank exercises the wrapping, the
 * per-step ncclGroupStart/End, the stream handling and our kernels on the
 * NCCL stream, not the transfers; those need a machine with two GPUs
 * (docs/gpu.md).  GPU only: built by `make gpu-progs`, run by
 * scripts/gpu-check.sh.
 */
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <nccl.h>
#pragma GCC diagnostic pop

#include "harness.h"
#include "../../runtime/ccs_int.h"
#include "../../tools/ccs_check.h"

/* A one-rank "allreduce" with a COPY, a REDUCE_LOCAL and a second copy, in
 * three steps: OUT = IN + IN (the expected result is twice the input;
 * not a real collective, a replay check of the local ops on the stream). */
static ccs_sched_t *one_rank_plan(uint32_t C)
{
    ccs_sched_t *s = NULL;
    uint32_t step;

    if (ccs_sched_create(CCS_COLL_ALLREDUCE, 1, C, "nccl-smoke", &s, NULL) !=
            CCS_OK ||
        ccs_sched_add_step(s, 0, &step, NULL) != CCS_OK ||
        ccs_sched_local(s, step, 0, CCS_BUF_SCRATCH, 0, CCS_BUF_IN, 0, C,
                        false, NULL) != CCS_OK ||
        ccs_sched_add_step(s, 0, &step, NULL) != CCS_OK ||
        ccs_sched_local(s, step, 0, CCS_BUF_SCRATCH, 0, CCS_BUF_IN, 0, C,
                        true, NULL) != CCS_OK ||
        ccs_sched_add_step(s, 0, &step, NULL) != CCS_OK ||
        ccs_sched_local(s, step, 0, CCS_BUF_OUT, 0, CCS_BUF_SCRATCH, 0, C,
                        false, NULL) != CCS_OK ||
        ccs_sched_finalize(s, NULL) != CCS_OK) {
        ccs_sched_destroy(s);
        return NULL;
    }
    return s;
}

TEST(nccl_one_rank)
{
    static const size_t counts[] = { 1, 7, 1000003 };
    ncclComm_t nc = NULL;
    int devs[1] = { 0 };
    ccs_comm_t *comm = NULL;
    ccs_sched_t *s = one_rank_plan(3);
    ccs_plan_t *plan = NULL;
    cudaStream_t stream = NULL;
    char msg[256] = "";
    ncclResult_t r;
    float *d = NULL, *h = NULL;
    size_t maxn = 1000003;

    CHECK(s != NULL);
    CHECK_STATUS(ccs_plan_from_sched(s, &plan, NULL), CCS_OK);
    r = ncclCommInitAll(&nc, 1, devs);
    CHECK_MSG(r == ncclSuccess, "ncclCommInitAll: %s",
              ncclGetErrorString(r));
    if (r != ncclSuccess || plan == NULL)
        goto out;
    CHECK_STATUS(ccs_comm_init_nccl_msg(nc, &comm, msg, sizeof(msg)),
                 CCS_OK);
    if (comm == NULL) {
        FAIL_AT("ccs_comm_init_nccl: %s", msg);
        goto out;
    }
    CHECK_EQ_INT(ccs_comm_rank(comm), 0);
    CHECK_EQ_INT(ccs_comm_size(comm), 1);
    CHECK_STR_CONTAINS(ccs_comm_transport(comm), "nccl");
    cudaSetDevice(0);
    cudaStreamCreate(&stream);
    cudaMalloc((void **)&d, maxn * sizeof(float));
    h = malloc(maxn * sizeof(float));
    for (size_t ci = 0; ci < 3 && h != NULL && d != NULL; ci++) {
        for (int use_stream = 0; use_stream < 2; use_stream++) {
            size_t n = counts[ci], wrong = 0;
            ccs_status_t st;
            for (size_t i = 0; i < n; i++)
                h[i] = (float)((i * 7) % 101);
            cudaMemcpy(d, h, n * sizeof(float), cudaMemcpyHostToDevice);
            st = ccs_run(plan, comm, d, d, n, CCS_FLOAT32, CCS_SUM,
                         use_stream ? (void *)stream : NULL);
            CHECK_MSG(st == CCS_OK, "count %zu: %s", n,
                      ccs_comm_last_error(comm));
            if (st != CCS_OK)
                goto out;
            if (use_stream)
                cudaStreamSynchronize(stream);
            cudaMemcpy(h, d, n * sizeof(float), cudaMemcpyDeviceToHost);
            for (size_t i = 0; i < n; i++)
                wrong += h[i] != 2.0f * (float)((i * 7) % 101);
            CHECK_MSG(wrong == 0, "count %zu %s stream: %zu wrong", n,
                      use_stream ? "own" : "NULL", wrong);
        }
    }
    /* A plan for another rank count is refused before anything moves. */
    {
        ccs_sched_t *s2 = NULL;
        ccs_plan_t *p2 = NULL;
        uint32_t step;
        if (ccs_sched_create(CCS_COLL_ALLGATHER, 2, 2, "x", &s2, NULL) ==
                CCS_OK &&
            ccs_sched_add_step(s2, 0, &step, NULL) == CCS_OK &&
            ccs_sched_xfer(s2, step, 0, CCS_BUF_IN, 0, 1, CCS_BUF_OUT, 0, 1,
                           false, NULL) == CCS_OK &&
            ccs_sched_xfer(s2, step, 1, CCS_BUF_IN, 1, 0, CCS_BUF_OUT, 1, 1,
                           false, NULL) == CCS_OK &&
            ccs_plan_from_sched(s2, &p2, NULL) == CCS_OK)
            CHECK_STATUS(ccs_run(p2, comm, d, d, 1, CCS_FLOAT32, CCS_SUM,
                                 NULL), CCS_ERR_MISMATCH);
        ccs_plan_destroy(p2);
        ccs_sched_destroy(s2);
    }
out:
    ccs_comm_destroy(comm);
    if (nc != NULL)
        ncclCommDestroy(nc);
    if (stream != NULL)
        cudaStreamDestroy(stream);
    cudaFree(d);
    free(h);
    ccs_plan_destroy(plan);
    ccs_sched_destroy(s);
}

int main(void)
{
    int ndev = 0;

    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        fprintf(stderr, "test_nccl_smoke: no CUDA device\n");
        return 2;
    }
    RUN(nccl_one_rank);
    return TEST_SUMMARY();
}
