/*
 * reduce_cuda.h - CUDA reduction kernels, callable from C (the cuda and
 * nccl transports, the GPU tests and the kernel benchmark).  Internal to
 * the runtime: not installed, no CUDA type in it (streams are void *).
 *
 * Same contract as the CPU kernels of reduce.h, so that a plan gives
 * bit-identical results on every transport:
 *   dst[i] = a[i] (op) b[i] for n elements; dst may equal a or b exactly
 *   (no partial overlap); CCS_AVG reduces as CCS_SUM and the division
 *   happens once at the end (ccs_div_cuda); integer sums and products
 *   wrap around; float16 and bfloat16 compute in float and round to
 *   nearest even; min(x, y) is y < x ? y : x (NaN behaviour as on the CPU,
 *   NaN payloads may differ).
 *
 * Both functions only enqueue work on `stream` (a cudaStream_t, NULL for
 * the legacy default stream) on the current device and return at once;
 * the pointers must be device memory (or memory the device can access) of
 * the current device.  n == 0 enqueues nothing.  Errors: CCS_ERR_NO_DEVICE
 * when there is no usable device, CCS_ERR_CUDA for any other CUDA failure
 * (launch configuration, sticky errors of earlier work), CCS_ERR_INVALID
 * for an unknown dtype or op; the CUDA error string goes into `err`.
 */
#ifndef CCS_REDUCE_CUDA_H
#define CCS_REDUCE_CUDA_H

#include <stddef.h>
#include <stdint.h>

#include "ccs.h"
#include "err.h"

#ifdef __cplusplus
extern "C" {
#endif

ccs_status_t ccs_reduce_cuda(void *dst, const void *a, const void *b,
                             size_t n, ccs_dtype_t dtype, ccs_redop_t op,
                             void *stream, ccs_err_t *err);

/* buf[i] /= divisor with the rounding of ccs_reduce_div (reduce.h);
 * divisor <= 1 enqueues nothing. */
ccs_status_t ccs_div_cuda(void *buf, size_t n, ccs_dtype_t dtype,
                          uint32_t divisor, void *stream, ccs_err_t *err);

/* Map a cudaError_t (as int) of a device query to a status: "no device"
 * class errors (no device, no/insufficient driver, ...) give
 * CCS_ERR_NO_DEVICE, the rest CCS_ERR_CUDA.  Shared by the transports. */
ccs_status_t ccs_cuda_status(int cuda_error);

#ifdef __cplusplus
}
#endif

#endif /* CCS_REDUCE_CUDA_H */
