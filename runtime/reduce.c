/*
 * reduce.c - CPU reduction kernels (see reduce.h).
 *
 * One plain loop per (type, op), written so that GCC/Clang vectorise it at
 * -O2/-O3: no calls, no branches the compiler cannot turn into selects.
 * The pointers may alias exactly (dst == a), so no `restrict`; compilers
 * add a runtime overlap check and still take the vector path.
 */
#include <string.h>

#include "reduce.h"

/* ---- half precision ---- */

static uint32_t f2u(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof(u));
    return u;
}

static float u2f(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof(f));
    return f;
}

float ccs_half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t man = h & 0x3ffu;

    if (exp == 0x1f)                       /* inf / NaN */
        return u2f(sign | 0x7f800000u | (man << 13) | (man ? 0x400000u : 0));
    if (exp != 0)                          /* normal */
        return u2f(sign | ((exp + 112) << 23) | (man << 13));
    if (man == 0)
        return u2f(sign);
    /* Subnormal: man * 2^-24, exact in float. */
    {
        float v = (float)man * u2f(0x33800000u); /* 2^-24 */
        return (sign != 0) ? -v : v;
    }
}

uint16_t ccs_float_to_half(float f)
{
    uint32_t u = f2u(f);
    uint32_t sign = (u >> 16) & 0x8000u;
    uint32_t abs = u & 0x7fffffffu;

    if (abs >= 0x7f800000u)                /* inf / NaN */
        return (uint16_t)(sign | 0x7c00u |
                          (abs > 0x7f800000u ? 0x200u | ((abs >> 13) & 0x3ffu)
                                             : 0));
    if (abs >= 0x477ff000u)                /* rounds to >= 65536: inf */
        return (uint16_t)(sign | 0x7c00u);
    if (abs >= 0x38800000u) {              /* normal half (>= 2^-14) */
        uint32_t mant = abs & 0x7fffffu;
        uint32_t exp = (abs >> 23) - 112;
        uint32_t h = (exp << 10) | (mant >> 13);
        uint32_t rest = mant & 0x1fffu;
        /* round to nearest, ties to even; a carry into the exponent is
         * the correct result (also up to infinity). */
        if (rest > 0x1000u || (rest == 0x1000u && (h & 1u)))
            h++;
        return (uint16_t)(sign | h);
    }
    if (abs < 0x33000000u)                 /* < 2^-25: rounds to 0 */
        return (uint16_t)sign;
    {
        /* Subnormal half: value / 2^-24 rounded to an integer, ties even. */
        uint32_t e = abs >> 23;            /* 102 .. 112 */
        uint32_t mant = (abs & 0x7fffffu) | 0x800000u;
        uint32_t shift = 126 - e;          /* 14 .. 24 */
        uint32_t h = mant >> shift;
        uint32_t rest = mant & ((1u << shift) - 1);
        uint32_t half = 1u << (shift - 1);
        if (rest > half || (rest == half && (h & 1u)))
            h++;
        return (uint16_t)(sign | h);
    }
}

float ccs_bf16_to_float(uint16_t h)
{
    return u2f((uint32_t)h << 16);
}

uint16_t ccs_float_to_bf16(float f)
{
    uint32_t u = f2u(f);

    if ((u & 0x7fffffffu) > 0x7f800000u)   /* NaN: keep it a quiet NaN */
        return (uint16_t)((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u);       /* round to nearest even */
    return (uint16_t)(u >> 16);
}

/* ---- kernels ---- */

#define SUM(x, y) ((x) + (y))
#define PROD(x, y) ((x) * (y))
#define MIN(x, y) ((y) < (x) ? (y) : (x))
#define MAX(x, y) ((y) > (x) ? (y) : (x))

#define DEF_LOOP(name, T, OP)                                               \
    static void name(void *dst_, const void *a_, const void *b_, size_t n)  \
    {                                                                       \
        T *dst = dst_;                                                      \
        const T *a = a_, *b = b_;                                           \
        for (size_t i = 0; i < n; i++)                                      \
            dst[i] = OP(a[i], b[i]);                                        \
    }

/* Sums and products of signed integers go through the unsigned type: wrap
 * around instead of undefined behaviour. */
#define DEF_INT(sfx, T, U)                                                  \
    DEF_LOOP(sum_##sfx, U, SUM)                                             \
    DEF_LOOP(prod_##sfx, U, PROD)                                           \
    DEF_LOOP(min_##sfx, T, MIN)                                             \
    DEF_LOOP(max_##sfx, T, MAX)

#define DEF_FLT(sfx, T)                                                     \
    DEF_LOOP(sum_##sfx, T, SUM)                                             \
    DEF_LOOP(prod_##sfx, T, PROD)                                           \
    DEF_LOOP(min_##sfx, T, MIN)                                             \
    DEF_LOOP(max_##sfx, T, MAX)

DEF_FLT(f32, float)
DEF_FLT(f64, double)
DEF_INT(i32, int32_t, uint32_t)
DEF_INT(i64, int64_t, uint64_t)
DEF_INT(u8, uint8_t, uint8_t)

/* Half types: convert a block to float, reduce, convert back.  Blocks keep
 * the temporaries in L1 and let the float loop vectorise. */
#define HBLK 256

typedef float (*to_f_t)(uint16_t);
typedef uint16_t (*from_f_t)(float);

static void reduce_half(uint16_t *dst, const uint16_t *a, const uint16_t *b,
                        size_t n, ccs_redop_t op, to_f_t to, from_f_t from)
{
    float fa[HBLK], fb[HBLK];

    for (size_t base = 0; base < n; base += HBLK) {
        size_t m = n - base < HBLK ? n - base : HBLK;
        for (size_t i = 0; i < m; i++) {
            fa[i] = to(a[base + i]);
            fb[i] = to(b[base + i]);
        }
        switch (op) {
        case CCS_PROD: prod_f32(fa, fa, fb, m); break;
        case CCS_MIN:  min_f32(fa, fa, fb, m); break;
        case CCS_MAX:  max_f32(fa, fa, fb, m); break;
        default:       sum_f32(fa, fa, fb, m); break;
        }
        for (size_t i = 0; i < m; i++)
            dst[base + i] = from(fa[i]);
    }
}

typedef void (*kern_t)(void *, const void *, const void *, size_t);

void ccs_reduce_cpu(void *dst, const void *a, const void *b, size_t n,
                    ccs_dtype_t dtype, ccs_redop_t op)
{
    /* [dtype][op] for the non-half types; avg reduces as sum. */
    static const kern_t table[CCS_DTYPE_COUNT][4] = {
        [CCS_FLOAT32] = { sum_f32, prod_f32, min_f32, max_f32 },
        [CCS_FLOAT64] = { sum_f64, prod_f64, min_f64, max_f64 },
        [CCS_INT32] = { sum_i32, prod_i32, min_i32, max_i32 },
        [CCS_INT64] = { sum_i64, prod_i64, min_i64, max_i64 },
        [CCS_UINT8] = { sum_u8, prod_u8, min_u8, max_u8 },
    };
    unsigned o = (op == CCS_AVG || (unsigned)op >= CCS_REDOP_COUNT)
                     ? (unsigned)CCS_SUM : (unsigned)op;

    switch (dtype) {
    case CCS_FLOAT16:
        reduce_half(dst, a, b, n, (ccs_redop_t)o, ccs_half_to_float,
                    ccs_float_to_half);
        return;
    case CCS_BFLOAT16:
        reduce_half(dst, a, b, n, (ccs_redop_t)o, ccs_bf16_to_float,
                    ccs_float_to_bf16);
        return;
    default:
        if ((unsigned)dtype < CCS_DTYPE_COUNT && table[dtype][o] != NULL)
            table[dtype][o](dst, a, b, n);
        return;
    }
}

void ccs_reduce_div(void *buf, size_t n, ccs_dtype_t dtype, uint32_t divisor)
{
    if (divisor <= 1)
        return;
    switch (dtype) {
    case CCS_FLOAT32: {
        float *p = buf, d = (float)divisor;
        for (size_t i = 0; i < n; i++)
            p[i] = p[i] / d;
        break;
    }
    case CCS_FLOAT64: {
        double *p = buf, d = (double)divisor;
        for (size_t i = 0; i < n; i++)
            p[i] = p[i] / d;
        break;
    }
    case CCS_FLOAT16: {
        uint16_t *p = buf;
        for (size_t i = 0; i < n; i++)
            p[i] = ccs_float_to_half(ccs_half_to_float(p[i]) /
                                     (float)divisor);
        break;
    }
    case CCS_BFLOAT16: {
        uint16_t *p = buf;
        for (size_t i = 0; i < n; i++)
            p[i] = ccs_float_to_bf16(ccs_bf16_to_float(p[i]) /
                                     (float)divisor);
        break;
    }
    case CCS_INT32: {
        int32_t *p = buf;
        for (size_t i = 0; i < n; i++)
            p[i] = (int32_t)(p[i] / (int64_t)divisor);
        break;
    }
    case CCS_INT64: {
        int64_t *p = buf;
        for (size_t i = 0; i < n; i++)
            p[i] = p[i] / (int64_t)divisor;
        break;
    }
    case CCS_UINT8: {
        uint8_t *p = buf;
        for (size_t i = 0; i < n; i++)
            p[i] = (uint8_t)(p[i] / divisor);
        break;
    }
    default:
        break;
    }
}
