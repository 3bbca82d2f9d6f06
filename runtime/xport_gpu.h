/*
 * xport_gpu.h - what the two GPU transports (xport_cuda.c, xport_nccl.c)
 * share: the per-rank device/stream state and the hooks that act on the
 * run's stream (memory, copies, kernels).  Internal; only compiled with
 * CUDA (CCS_HAVE_CUDA).
 *
 * Each GPU transport's `struct ccs_xport` starts with a ccs_gpu_base_t,
 * so the shared hooks (defined in xport_cuda.c) can take the ccs_xport_t
 * the executor hands them.
 *
 * Streams: a run on a non-NULL stream is only enqueued (ccs_run returns
 * before the data has moved, as an NCCL call does).  A run given a NULL
 * stream uses the rank's own internal stream, ordered after the work
 * already enqueued on the default stream (an event recorded on
 * cudaStreamLegacy, which also covers the blocking streams, waited on by
 * the internal stream), and run_end synchronises it: ccs_run(..., NULL)
 * sees inputs written by cudaMemcpy / cudaMemset / kernels on stream 0, as
 * an NCCL call on stream 0 would, and returns when the result is there.
 * The current device is set to the rank's device for the run and the
 * caller's current device is restored at run_end.
 */
#ifndef CCS_XPORT_GPU_H
#define CCS_XPORT_GPU_H

#include <stdbool.h>

#include <cuda_runtime_api.h>

#include "ccs_int.h"

typedef struct ccs_gpu_base {
    int device;              /* CUDA device of this rank */
    int prev_device;         /* caller's device during a run, restored */
    cudaStream_t own;        /* created at init, destroyed by the owner */
    cudaStream_t stream;     /* the current run's stream */
    cudaEvent_t dflt_ev;     /* orders a NULL-stream run after the default
                                stream; made at the first such run, owned,
                                freed by ccs_gpu_base_fini */
    bool sync_at_end;        /* run given NULL: run_end synchronises */
    const char *who;         /* "cuda transport", "nccl transport" */
} ccs_gpu_base_t;

/* Hooks of xport.h for device memory on the run's stream. */
ccs_status_t ccs_gpu_mem_alloc(ccs_xport_t *x, size_t bytes, void **out,
                               ccs_err_t *err);
void ccs_gpu_mem_free(ccs_xport_t *x, void *p);
ccs_status_t ccs_gpu_copy(ccs_xport_t *x, void *dst, const void *src,
                          size_t bytes, ccs_err_t *err);
ccs_status_t ccs_gpu_memset0(ccs_xport_t *x, void *dst, size_t bytes,
                             ccs_err_t *err);
ccs_status_t ccs_gpu_reduce(ccs_xport_t *x, void *dst, const void *a,
                            const void *b, size_t n, ccs_dtype_t dtype,
                            ccs_redop_t op, ccs_err_t *err);
ccs_status_t ccs_gpu_div(ccs_xport_t *x, void *buf, size_t n,
                         ccs_dtype_t dtype, uint32_t divisor,
                         ccs_err_t *err);

/* run_begin / run_end halves: device switch, stream choice, final sync. */
ccs_status_t ccs_gpu_run_begin(ccs_gpu_base_t *b, void *stream,
                               ccs_err_t *err);
ccs_status_t ccs_gpu_run_end(ccs_gpu_base_t *b, ccs_err_t *err);
/* Free what the base owns apart from `own` (whose owner varies). */
void ccs_gpu_base_fini(ccs_gpu_base_t *b);

/* Number of CUDA devices; CCS_ERR_NO_DEVICE with a message naming `who`
 * when the runtime finds none or no usable driver. */
ccs_status_t ccs_gpu_device_count(const char *who, int *out, ccs_err_t *err);

/* Status and message for a failed CUDA call. */
ccs_status_t ccs_gpu_fail(ccs_err_t *err, cudaError_t e, const char *fmt,
                          ...) CCS_PRINTF(3, 4);

/* Copy the message of err (or of st) into a caller's buffer (msglen may
 * be 0, msg NULL). */
void ccs_gpu_copy_msg(const ccs_err_t *err, ccs_status_t st, char *msg,
                      size_t msglen);

#endif /* CCS_XPORT_GPU_H */
