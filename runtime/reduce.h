/*
 * reduce.h - CPU reduction kernels and half-precision conversions.
 *
 * dst[i] = a[i] (op) b[i] for n elements of one datatype.  dst may alias a
 * or b exactly (the executor reduces into its own operand); partial
 * overlaps are not allowed.  CCS_AVG reduces as CCS_SUM: the division by
 * the rank count happens once at the end (ccs_reduce_div).  Integer sums
 * and products wrap around (two's complement), as on GPUs; float16 and
 * bfloat16 compute in float and round to nearest even.
 */
#ifndef CCS_REDUCE_H
#define CCS_REDUCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ccs.h"

/* Kernels on the best instruction set this CPU has (checked per call with
 * __builtin_cpu_supports: no global state of ours).  A caller that reduces
 * often keeps ccs_reduce_kernels(ccs_reduce_isa_best()) instead: the
 * check is about 24 instructions, a noticeable share of an 8-byte call. */
void ccs_reduce_cpu(void *dst, const void *a, const void *b, size_t n,
                    ccs_dtype_t dtype, ccs_redop_t op);

/* Instruction sets the kernels are built for.  Every one gives the same
 * bits as the portable one (also for NaN, inf, signed zeros and tails). */
typedef enum {
    CCS_ISA_GENERIC = 0,     /* portable C, vectorised by the compiler */
    CCS_ISA_AVX2 = 1,        /* x86-64 AVX2 + F16C + FMA */
    CCS_ISA_AVX512 = 2,      /* x86-64 AVX-512 F/BW/VL */
    CCS_ISA_COUNT
} ccs_isa_t;

/* Can this CPU run kernels of `isa`? */
bool ccs_reduce_isa_ok(ccs_isa_t isa);
ccs_isa_t ccs_reduce_isa_best(void);
const char *ccs_reduce_isa_str(ccs_isa_t isa);
/* ccs_reduce_cpu on a given instruction set (tests and benchmarks); an
 * isa the CPU cannot run falls back to the portable kernels. */
void ccs_reduce_cpu_isa(ccs_isa_t isa, void *dst, const void *a,
                        const void *b, size_t n, ccs_dtype_t dtype,
                        ccs_redop_t op);

/* One instruction set's kernels: fn[dtype][op] for sum, prod, min, max
 * (avg reduces as sum).  The tables are constants of reduce.c; a caller
 * holds a pointer to one, picked once. */
typedef void (*ccs_reduce_fn_t)(void *dst, const void *a, const void *b,
                                size_t n);
typedef struct {
    ccs_reduce_fn_t fn[CCS_DTYPE_COUNT][4];
} ccs_reduce_kernels_t;

/* The kernels of `isa`, or the portable ones when the CPU cannot run it.
 * Never NULL. */
const ccs_reduce_kernels_t *ccs_reduce_kernels(ccs_isa_t isa);

/* ccs_reduce_cpu through a table from ccs_reduce_kernels. */
static inline void ccs_reduce_with(const ccs_reduce_kernels_t *k, void *dst,
                                   const void *a, const void *b, size_t n,
                                   ccs_dtype_t dtype, ccs_redop_t op)
{
    unsigned o = (op == CCS_AVG || (unsigned)op >= CCS_REDOP_COUNT)
                     ? (unsigned)CCS_SUM : (unsigned)op;

    if ((unsigned)dtype >= CCS_DTYPE_COUNT || n == 0)
        return;
    k->fn[dtype][o](dst, a, b, n);
}

/* buf[i] /= divisor: in float for float16/bfloat16/float32, in double for
 * float64, integer division truncating toward zero for integer types. */
void ccs_reduce_div(void *buf, size_t n, ccs_dtype_t dtype,
                    uint32_t divisor);

/* IEEE binary16 and bfloat16 <-> float, round to nearest even; NaNs stay
 * NaNs (quiet), infinities and subnormals are exact. */
float ccs_half_to_float(uint16_t h);
uint16_t ccs_float_to_half(float f);
float ccs_bf16_to_float(uint16_t h);
uint16_t ccs_float_to_bf16(float f);

#endif /* CCS_REDUCE_H */
