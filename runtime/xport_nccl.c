/*
 * xport_nccl.c - the nccl transport: the caller's ncclComm_t and stream,
 * one process (or thread) per GPU, as in an existing NCCL job (PyTorch's
 * process group, for example).
 *
 * Each step of the plan is one NCCL group: group_begin is ncclGroupStart,
 * every RECV / SEND of the step is an ncclRecv / ncclSend of bytes
 * (ncclUint8) on the run's stream, group_end is ncclGroupEnd, which
 * launches the step's point-to-point kernel.  Between the two the
 * executor may enqueue copies that pack a send: CUDA calls are not
 * deferred by the group, so they precede the NCCL kernel on the stream,
 * as they must.  wait() has nothing to do: whatever the executor enqueues
 * afterwards (unpacking, our reduction kernels, the final division) runs
 * after the step's transfers in stream order, and NCCL's own ordering on
 * the stream keeps send buffers alive until the transfers are done.
 *
 * The communicator stays the caller's: we never destroy, split or abort
 * it.  Our traffic uses the same ranks as the caller's; NCCL orders
 * operations on a communicator by issue order, so the caller must not
 * issue NCCL calls on that communicator from another thread while
 * ccs_run is in progress (the same rule as for NCCL itself), and must not
 * call ccs_run between its own ncclGroupStart and ncclGroupEnd (the steps
 * would merge into one group and lose their order).
 *
 * Non-blocking communicators (ncclConfig_t blocking = 0) are handled:
 * ncclInProgress from a call is polled to completion with
 * ncclCommGetAsyncError.
 */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>

/* nccl.h declares `ncclGroupStart()` without a prototype, which our C11
 * warnings reject; the header is not ours to fix. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <nccl.h>
#pragma GCC diagnostic pop

#include "xport_gpu.h"

struct ccs_xport {
    ccs_gpu_base_t base;     /* first: the shared hooks cast to it */
    ncclComm_t nc;           /* the caller's; never destroyed here */
    int in_group;            /* between ncclGroupStart and ncclGroupEnd */
    uint32_t step;           /* of the open group, for messages */
};

static ccs_status_t nccl_fail(ccs_xport_t *x, ccs_err_t *err,
                              ncclResult_t r, const char *what)
{
    const char *last = x ? ncclGetLastError(x->nc) : NULL;

    return ccs_err_set(err, CCS_ERR_NCCL, "nccl transport: %s: %s%s%s",
                       what, ncclGetErrorString(r),
                       last && *last ? ": " : "", last ? last : "");
}

/* ncclInProgress (non-blocking communicators): poll until the operation
 * has settled. */
static ncclResult_t settle(ncclComm_t nc, ncclResult_t r)
{
    while (r == ncclInProgress) {
        sched_yield();
        if (ncclCommGetAsyncError(nc, &r) != ncclSuccess)
            return ncclInternalError;
    }
    return r;
}

static ccs_status_t nc_group_begin(ccs_xport_t *x, uint32_t step,
                                   ccs_err_t *err)
{
    ncclResult_t r = ncclGroupStart();

    if (r != ncclSuccess)
        return nccl_fail(x, err, r, "ncclGroupStart");
    x->in_group = 1;
    x->step = step;
    return CCS_OK;
}

static ccs_status_t nc_group_end(ccs_xport_t *x, ccs_err_t *err)
{
    ncclResult_t r;

    x->in_group = 0;
    r = settle(x->nc, ncclGroupEnd());
    if (r != ncclSuccess) {
        char what[64];
        snprintf(what, sizeof(what), "ncclGroupEnd of step %u", x->step);
        return nccl_fail(x, err, r, what);
    }
    return CCS_OK;
}

static ccs_status_t nc_recv(ccs_xport_t *x, uint32_t peer, void *buf,
                            size_t bytes, uint32_t step, uint32_t seq,
                            ccs_err_t *err)
{
    ncclResult_t r;

    (void)seq;
    r = ncclRecv(buf, bytes, ncclUint8, (int)peer, x->nc, x->base.stream);
    if (r != ncclSuccess && r != ncclInProgress) {
        char what[96];
        snprintf(what, sizeof(what), "step %u: ncclRecv of %zu bytes from "
                 "rank %u", step, bytes, peer);
        return nccl_fail(x, err, r, what);
    }
    return CCS_OK;
}

static ccs_status_t nc_send(ccs_xport_t *x, uint32_t peer, const void *buf,
                            size_t bytes, uint32_t step, uint32_t seq,
                            ccs_err_t *err)
{
    ncclResult_t r;

    (void)seq;
    r = ncclSend(buf, bytes, ncclUint8, (int)peer, x->nc, x->base.stream);
    if (r != ncclSuccess && r != ncclInProgress) {
        char what[96];
        snprintf(what, sizeof(what), "step %u: ncclSend of %zu bytes to "
                 "rank %u", step, bytes, peer);
        return nccl_fail(x, err, r, what);
    }
    return CCS_OK;
}

static ccs_status_t nc_run_begin(ccs_xport_t *x, void *stream,
                                 ccs_err_t *err)
{
    x->in_group = 0;
    return ccs_gpu_run_begin(&x->base, stream, err);
}

static ccs_status_t nc_run_end(ccs_xport_t *x, ccs_err_t *err)
{
    ccs_status_t st = CCS_OK, st2;
    ncclResult_t r, async = ncclSuccess;

    /* A run that failed inside a step leaves a group open; an open group
     * would swallow the caller's next NCCL calls on this thread, so close
     * it (the communicator is broken for us anyway). */
    if (x->in_group) {
        x->in_group = 0;
        (void)settle(x->nc, ncclGroupEnd());
    }
    r = ncclCommGetAsyncError(x->nc, &async);
    if (r != ncclSuccess)
        st = nccl_fail(x, err, r, "ncclCommGetAsyncError");
    else if (async != ncclSuccess && async != ncclInProgress)
        st = nccl_fail(x, err, async, "asynchronous error on the "
                       "communicator");
    st2 = ccs_gpu_run_end(&x->base, st == CCS_OK ? err : NULL);
    return st != CCS_OK ? st : st2;
}

static void nc_destroy(ccs_xport_t *x)
{
    int prev = 0;

    if (x == NULL)
        return;
    ccs_gpu_base_fini(&x->base);
    if (x->base.own != NULL && cudaGetDevice(&prev) == cudaSuccess) {
        (void)cudaSetDevice(x->base.device);
        (void)cudaStreamDestroy(x->base.own);
        (void)cudaSetDevice(prev);
    }
    (void)cudaGetLastError();
    free(x);
}

static const ccs_xport_ops_t nccl_ops = {
    .name = "nccl",
    .device_mem = true,
    .mem_alloc = ccs_gpu_mem_alloc,
    .mem_free = ccs_gpu_mem_free,
    .copy = ccs_gpu_copy,
    .memset0 = ccs_gpu_memset0,
    .reduce = ccs_gpu_reduce,
    .div = ccs_gpu_div,
    .run_begin = nc_run_begin,
    .run_end = nc_run_end,
    .group_begin = nc_group_begin,
    .recv = nc_recv,
    .send = nc_send,
    .group_end = nc_group_end,
    .wait = ccs_cpu_nop,       /* stream order does it (top comment) */
    .abort = NULL,             /* NCCL cannot release peers; as in NCCL */
    .destroy = nc_destroy,
};

ccs_status_t ccs_comm_init_nccl_msg(void *nccl_comm, ccs_comm_t **comm,
                                    char *msg, size_t msglen)
{
    ccs_xport_t *x = NULL;   /* handed to the comm */
    ccs_status_t st;
    ccs_err_t e;
    ncclResult_t r;
    cudaError_t ce;
    int ndev = 0, nranks = 0, rank = 0, dev = 0, prev = 0;

    ccs_err_clear(&e);
    if (nccl_comm == NULL || comm == NULL) {
        st = ccs_err_set(&e, CCS_ERR_INVALID, "nccl transport: NULL %s",
                         nccl_comm == NULL ? "ncclComm_t" : "comm pointer");
        goto fail;
    }
    /* No device, no NCCL communicator: say so before NCCL touches it. */
    if ((st = ccs_gpu_device_count("nccl transport", &ndev, &e)) != CCS_OK)
        goto fail;
    x = calloc(1, sizeof(*x));
    if (x == NULL) {
        st = ccs_err_set(&e, CCS_ERR_NOMEM, "out of memory");
        goto fail;
    }
    x->nc = (ncclComm_t)nccl_comm;
    if ((r = ncclCommCount(x->nc, &nranks)) != ncclSuccess) {
        st = nccl_fail(x, &e, r, "ncclCommCount");
        goto fail;
    }
    if ((r = ncclCommUserRank(x->nc, &rank)) != ncclSuccess) {
        st = nccl_fail(x, &e, r, "ncclCommUserRank");
        goto fail;
    }
    if ((r = ncclCommCuDevice(x->nc, &dev)) != ncclSuccess) {
        st = nccl_fail(x, &e, r, "ncclCommCuDevice");
        goto fail;
    }
    x->base.device = dev;
    x->base.prev_device = dev;
    x->base.who = "nccl transport";
    if ((ce = cudaGetDevice(&prev)) != cudaSuccess) {
        st = ccs_gpu_fail(&e, ce, "nccl transport: cudaGetDevice");
        goto fail;
    }
    ce = cudaSetDevice(dev);
    if (ce == cudaSuccess)
        ce = cudaStreamCreateWithFlags(&x->base.own, cudaStreamNonBlocking);
    (void)cudaSetDevice(prev);
    if (ce != cudaSuccess) {
        x->base.own = NULL;
        st = ccs_gpu_fail(&e, ce, "nccl transport: creating a stream on "
                          "device %d", dev);
        goto fail;
    }
    x->base.stream = x->base.own;
    /* On failure ccs_comm_create destroys x. */
    st = ccs_comm_create(&nccl_ops, x, rank, nranks, comm, &e);
    x = NULL;
    if (st != CCS_OK)
        goto fail;
    return CCS_OK;
fail:
    nc_destroy(x);
    CCS_LOG(ccs_log_level_env(), CCS_LOG_WARN, "INIT", -1, "%s",
            ccs_err_msg(&e, st));
    ccs_gpu_copy_msg(&e, st, msg, msglen);
    return st;
}

ccs_status_t ccs_comm_init_nccl(void *nccl_comm, ccs_comm_t **comm)
{
    return ccs_comm_init_nccl_msg(nccl_comm, comm, NULL, 0);
}
