/*
 * ccs_check.h - input generation and result checking for collectives, in
 * the manner of nccl-tests, shared by ccs-perf and the runtime tests.
 *
 * Inputs are small integers chosen per reduction op so that the exact
 * result does not depend on the order of the reduction, in every datatype
 * (sums <= 3 * nranks, products of 1s and a few 2s, min/max below 101).
 * The expected value of each output element is computed here, in double,
 * from the formula that generated the inputs -- independently of the
 * runtime's reduction code -- and each output element is decoded to double
 * and compared: exactly, except CCS_AVG on floating types, whose final
 * division rounds (relative tolerance of the type).  Valid up to 64 ranks
 * (products in float16 up to 15).
 */
#ifndef CCS_CHECK_H
#define CCS_CHECK_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "../runtime/ccs.h"

static inline double chk_val(ccs_coll_t coll, ccs_redop_t op, int r, size_t i)
{
    if (coll == CCS_COLL_ALLGATHER || coll == CCS_COLL_BROADCAST ||
        coll == CCS_COLL_ALLTOALL)
        return (double)(((size_t)r * 13 + i * 7) % 97);
    switch (op) {
    case CCS_PROD:
        return ((size_t)r + i) % 4 == 0 ? 2.0 : 1.0;
    case CCS_MIN:
    case CCS_MAX:
        return (double)(((size_t)r * 37 + i * 11) % 101);
    default:
        return (double)(((size_t)r * 3 + i * 5) % 4);
    }
}

/* Elements of the send / receive buffer for count (NCCL's meaning). */
static inline size_t chk_in_elems(ccs_coll_t coll, int nranks, size_t count)
{
    return (coll == CCS_COLL_REDUCESCATTER || coll == CCS_COLL_ALLTOALL)
               ? count * (size_t)nranks : count;
}

static inline size_t chk_out_elems(ccs_coll_t coll, int nranks, size_t count)
{
    return (coll == CCS_COLL_ALLGATHER || coll == CCS_COLL_ALLTOALL)
               ? count * (size_t)nranks : count;
}

/* float <-> binary16 / bfloat16, written independently of reduce.c. */
static inline uint16_t chk_to_half(double d)
{
    float f = (float)d;
    uint32_t u, sign, e;
    int exp;
    double m;

    memcpy(&u, &f, 4);
    sign = (u >> 16) & 0x8000u;
    if (f == 0.0f)
        return (uint16_t)sign;
    m = frexp(fabs(d), &exp);          /* d = m * 2^exp, m in [0.5, 1) */
    if (exp > 16)
        return (uint16_t)(sign | 0x7c00u);
    if (exp < -13) {                   /* subnormal: units of 2^-24 */
        double q = nearbyint(fabs(d) * 16777216.0);
        return (uint16_t)(sign | (uint32_t)q);
    }
    e = (uint32_t)(exp + 14);          /* biased exponent of 2^(exp-1) */
    {
        double q = nearbyint((m * 2.0 - 1.0) * 1024.0);
        uint32_t h = (e << 10) + (uint32_t)q; /* carry is correct */
        return (uint16_t)(sign | h);
    }
}

static inline double chk_from_half(uint16_t h)
{
    int e = (h >> 10) & 0x1f, m = h & 0x3ff;
    double v;

    if (e == 0x1f)
        v = m ? NAN : INFINITY;
    else if (e == 0)
        v = ldexp((double)m, -24);
    else
        v = ldexp(1.0 + (double)m / 1024.0, e - 15);
    return (h & 0x8000) ? -v : v;
}

static inline uint16_t chk_to_bf16(double d)
{
    float f = (float)d;
    uint32_t u;
    memcpy(&u, &f, 4);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

static inline double chk_from_bf16(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static inline void chk_store(ccs_dtype_t dt, void *buf, size_t i, double v)
{
    switch (dt) {
    case CCS_FLOAT32: ((float *)buf)[i] = (float)v; break;
    case CCS_FLOAT64: ((double *)buf)[i] = v; break;
    case CCS_FLOAT16: ((uint16_t *)buf)[i] = chk_to_half(v); break;
    case CCS_BFLOAT16: ((uint16_t *)buf)[i] = chk_to_bf16(v); break;
    case CCS_INT32: ((int32_t *)buf)[i] = (int32_t)v; break;
    case CCS_INT64: ((int64_t *)buf)[i] = (int64_t)v; break;
    case CCS_UINT8: ((uint8_t *)buf)[i] = (uint8_t)v; break;
    default: break;
    }
}

static inline double chk_load(ccs_dtype_t dt, const void *buf, size_t i)
{
    switch (dt) {
    case CCS_FLOAT32: return ((const float *)buf)[i];
    case CCS_FLOAT64: return ((const double *)buf)[i];
    case CCS_FLOAT16: return chk_from_half(((const uint16_t *)buf)[i]);
    case CCS_BFLOAT16: return chk_from_bf16(((const uint16_t *)buf)[i]);
    case CCS_INT32: return ((const int32_t *)buf)[i];
    case CCS_INT64: return (double)((const int64_t *)buf)[i];
    case CCS_UINT8: return ((const uint8_t *)buf)[i];
    default: return NAN;
    }
}

/* Fill rank's send buffer (nothing off the broadcast root). */
static inline void chk_fill(ccs_coll_t coll, ccs_dtype_t dt, ccs_redop_t op,
                     int rank, int nranks, int root, size_t count,
                     void *sendbuff)
{
    size_t n = chk_in_elems(coll, nranks, count);
    size_t base = coll == CCS_COLL_ALLGATHER ? (size_t)rank * count : 0;

    if (coll == CCS_COLL_BROADCAST && rank != root)
        return;
    for (size_t i = 0; i < n; i++)
        chk_store(dt, sendbuff, i, chk_val(coll, op, rank, base + i));
}

/* Expected value of output element i on rank. */
static inline double chk_expect(ccs_coll_t coll, ccs_dtype_t dt,
                                ccs_redop_t op,
                         int rank, int nranks, int root, size_t count,
                         size_t i)
{
    size_t gi = coll == CCS_COLL_REDUCESCATTER ? (size_t)rank * count + i
                                               : i;
    double acc;

    switch (coll) {
    case CCS_COLL_ALLGATHER:
        return chk_val(coll, op, (int)(i / count), i);
    case CCS_COLL_BROADCAST:
        return chk_val(coll, op, root, i);
    case CCS_COLL_ALLTOALL:
        return chk_val(coll, op, (int)(i / count),
                       (size_t)rank * count + i % count);
    default:
        break;
    }
    acc = chk_val(coll, op, 0, gi);
    for (int q = 1; q < nranks; q++) {
        double v = chk_val(coll, op, q, gi);
        switch (op) {
        case CCS_PROD: acc *= v; break;
        case CCS_MIN: acc = v < acc ? v : acc; break;
        case CCS_MAX: acc = v > acc ? v : acc; break;
        default: acc += v; break;
        }
    }
    if (dt == CCS_UINT8)
        acc = fmod(acc, 256.0);      /* integer wrap-around */
    if (op == CCS_AVG) {
        if (dt == CCS_INT32 || dt == CCS_INT64 || dt == CCS_UINT8)
            acc = trunc(acc / nranks);
        else
            acc = acc / nranks;
    }
    return acc;
}

/* Wrong elements of rank's output (0 off the reduce root). */
static inline size_t chk_wrong(ccs_coll_t coll, ccs_dtype_t dt, ccs_redop_t op,
                        int rank, int nranks, int root, size_t count,
                        const void *recvbuff)
{
    size_t n = chk_out_elems(coll, nranks, count), wrong = 0;
    bool avgf = op == CCS_AVG && ccs_dtype_size(dt) != 1 &&
                dt != CCS_INT32 && dt != CCS_INT64 &&
                coll != CCS_COLL_ALLGATHER && coll != CCS_COLL_BROADCAST &&
                coll != CCS_COLL_ALLTOALL;
    double tol = dt == CCS_FLOAT16 ? 1e-3 : dt == CCS_BFLOAT16 ? 8e-3
               : dt == CCS_FLOAT32 ? 1e-6 : 1e-12;

    if (coll == CCS_COLL_REDUCE && rank != root)
        return 0;
    for (size_t i = 0; i < n; i++) {
        double want = chk_expect(coll, dt, op, rank, nranks, root, count, i);
        double got = chk_load(dt, recvbuff, i);
        bool ok = avgf ? fabs(got - want) <= tol * fmax(1.0, fabs(want))
                       : got == want;
        wrong += !ok;
    }
    return wrong;
}

#endif /* CCS_CHECK_H */
