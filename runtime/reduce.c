/*
 * reduce.c - CPU reduction kernels (see reduce.h).
 *
 * One plain loop per (type, op), instantiated once per instruction set
 * (portable, AVX2, AVX-512) through __attribute__((target)), picked with
 * __builtin_cpu_supports: per call by ccs_reduce_cpu, once by a caller that
 * keeps ccs_reduce_kernels' table.  Each loop exists in three aliasing
 * shapes -- dst distinct from both inputs, dst == a, dst == b -- all with
 * `restrict` pointers: without it GCC's cost model at -O2 refuses the
 * overlap check and emits scalar code (5-9 GB/s in cache against 20-30 with
 * the vector loop).  The Makefile compiles this file with the dynamic
 * vectoriser cost model so loops with a remainder are vectorised too.
 *
 * float16 goes through float in vector registers (F16C / AVX-512
 * conversions, round to nearest even like ccs_float_to_half); bfloat16
 * converts with integer shifts and a branch-free rounding that the
 * compiler vectorises; the portable build converts in blocks of HBLK
 * elements through the scalar converters.
 *
 * Operand order matters for min/max with NaN: MIN(x, y) = y < x ? y : x
 * yields x when either is NaN, which is exactly what x86 MINPS(y, x)
 * does, so the vector code and the scalar tails agree bit for bit.
 */
#include <stdatomic.h>
#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define CCS_X86_DISPATCH 1
#include <cpuid.h>
#include <immintrin.h>
#endif

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

typedef ccs_reduce_fn_t kern_t;

/* bfloat16 <-> float without branches (same results as the scalar
 * converters: NaN stays a quiet NaN, round to nearest even). */
static inline float bf_to_f(uint16_t h)
{
    return u2f((uint32_t)h << 16);
}

static inline uint16_t f_to_bf(float f)
{
    uint32_t u = f2u(f);
    uint32_t r = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
    uint32_t q = (u >> 16) | 0x40u;
    return (uint16_t)((u & 0x7fffffffu) > 0x7f800000u ? q : r);
}

/* The three aliasing shapes of one loop, plus the entry that picks one.
 * dst == a == b (x op x) takes the plain loop without restrict. */
#define DEF_LOOP(ATTR, name, T, OP)                                         \
    ATTR static void name##_o(T *restrict d, const T *restrict a,           \
                              const T *restrict b, size_t n)                \
    {                                                                       \
        _Pragma("GCC unroll 4")                                             \
        for (size_t i = 0; i < n; i++)                                      \
            d[i] = OP(a[i], b[i]);                                          \
    }                                                                       \
    ATTR static void name##_a(T *restrict d, const T *restrict b, size_t n) \
    {                                                                       \
        _Pragma("GCC unroll 4")                                             \
        for (size_t i = 0; i < n; i++)                                      \
            d[i] = OP(d[i], b[i]);                                          \
    }                                                                       \
    ATTR static void name##_b(T *restrict d, const T *restrict a, size_t n) \
    {                                                                       \
        _Pragma("GCC unroll 4")                                             \
        for (size_t i = 0; i < n; i++)                                      \
            d[i] = OP(a[i], d[i]);                                          \
    }                                                                       \
    ATTR static void name(void *d_, const void *a_, const void *b_,         \
                          size_t n)                                         \
    {                                                                       \
        T *d = d_;                                                          \
        const T *a = a_, *b = b_;                                           \
        if (d != a && d != b) {                                             \
            name##_o(d, a, b, n);                                           \
        } else if (d == a && d != b) {                                      \
            name##_a(d, b, n);                                              \
        } else if (d == b && d != a) {                                      \
            name##_b(d, a, n);                                              \
        } else {                                                            \
            for (size_t i = 0; i < n; i++)                                  \
                d[i] = OP(d[i], d[i]);                                      \
        }                                                                   \
    }

/* Sums and products of signed integers go through the unsigned type: wrap
 * around instead of undefined behaviour. */
#define DEF_ALL(ATTR, S)                                                    \
    DEF_LOOP(ATTR, sum_f32_##S, float, SUM)                                 \
    DEF_LOOP(ATTR, prod_f32_##S, float, PROD)                               \
    DEF_LOOP(ATTR, min_f32_##S, float, MIN)                                 \
    DEF_LOOP(ATTR, max_f32_##S, float, MAX)                                 \
    DEF_LOOP(ATTR, sum_f64_##S, double, SUM)                                \
    DEF_LOOP(ATTR, prod_f64_##S, double, PROD)                              \
    DEF_LOOP(ATTR, min_f64_##S, double, MIN)                                \
    DEF_LOOP(ATTR, max_f64_##S, double, MAX)                                \
    DEF_LOOP(ATTR, sum_i32_##S, uint32_t, SUM)                              \
    DEF_LOOP(ATTR, prod_i32_##S, uint32_t, PROD)                            \
    DEF_LOOP(ATTR, min_i32_##S, int32_t, MIN)                               \
    DEF_LOOP(ATTR, max_i32_##S, int32_t, MAX)                               \
    DEF_LOOP(ATTR, sum_i64_##S, uint64_t, SUM)                              \
    DEF_LOOP(ATTR, prod_i64_##S, uint64_t, PROD)                            \
    DEF_LOOP(ATTR, min_i64_##S, int64_t, MIN)                               \
    DEF_LOOP(ATTR, max_i64_##S, int64_t, MAX)                               \
    DEF_LOOP(ATTR, sum_u8_##S, uint8_t, SUM)                                \
    DEF_LOOP(ATTR, prod_u8_##S, uint8_t, PROD)                              \
    DEF_LOOP(ATTR, min_u8_##S, uint8_t, MIN)                                \
    DEF_LOOP(ATTR, max_u8_##S, uint8_t, MAX)                                \
    DEF_BF16(ATTR, sum, SUM, S)                                             \
    DEF_BF16(ATTR, prod, PROD, S)                                           \
    DEF_BF16(ATTR, min, MIN, S)                                             \
    DEF_BF16(ATTR, max, MAX, S)

/* bfloat16: one fused loop per block (loads, converts, operates, rounds);
 * dst may alias a or b exactly, so each block is read into float
 * temporaries before anything is stored. */
#define HBLK 256
#define DEF_BF16(ATTR, opn, OP, S)                                          \
    ATTR static void opn##_bf16_##S(void *d_, const void *a_,               \
                                    const void *b_, size_t n)               \
    {                                                                       \
        uint16_t *d = d_;                                                   \
        const uint16_t *a = a_, *b = b_;                                    \
        float fa[HBLK], fb[HBLK];                                           \
        for (size_t base = 0; base < n; base += HBLK) {                     \
            size_t m = n - base < HBLK ? n - base : HBLK;                   \
            for (size_t i = 0; i < m; i++) {                                \
                fa[i] = bf_to_f(a[base + i]);                               \
                fb[i] = bf_to_f(b[base + i]);                               \
            }                                                               \
            for (size_t i = 0; i < m; i++)                                  \
                d[base + i] = f_to_bf(OP(fa[i], fb[i]));                    \
        }                                                                   \
    }

DEF_ALL(, gen)

/* float16, portable: convert a block to float, reduce, convert back. */
static void reduce_half_gen(uint16_t *dst, const uint16_t *a,
                            const uint16_t *b, size_t n, unsigned op)
{
    float fa[HBLK], fb[HBLK];

    for (size_t base = 0; base < n; base += HBLK) {
        size_t m = n - base < HBLK ? n - base : HBLK;
        for (size_t i = 0; i < m; i++) {
            fa[i] = ccs_half_to_float(a[base + i]);
            fb[i] = ccs_half_to_float(b[base + i]);
        }
        switch (op) {
        case CCS_PROD: prod_f32_gen_a(fa, fb, m); break;
        case CCS_MIN:  min_f32_gen_a(fa, fb, m); break;
        case CCS_MAX:  max_f32_gen_a(fa, fb, m); break;
        default:       sum_f32_gen_a(fa, fb, m); break;
        }
        for (size_t i = 0; i < m; i++)
            dst[base + i] = ccs_float_to_half(fa[i]);
    }
}

#define DEF_HALF_GEN(opn, O)                                                \
    static void opn##_f16_gen(void *d, const void *a, const void *b,        \
                              size_t n)                                     \
    {                                                                       \
        reduce_half_gen(d, a, b, n, O);                                     \
    }
DEF_HALF_GEN(sum, CCS_SUM)
DEF_HALF_GEN(prod, CCS_PROD)
DEF_HALF_GEN(min, CCS_MIN)
DEF_HALF_GEN(max, CCS_MAX)

/* Scalar float16 for the vector kernels' tails: same rounding as F16C. */
static inline void half_tail(uint16_t *d, const uint16_t *a,
                             const uint16_t *b, size_t n, unsigned op)
{
    for (size_t i = 0; i < n; i++) {
        float x = ccs_half_to_float(a[i]), y = ccs_half_to_float(b[i]), r;
        switch (op) {
        case CCS_PROD: r = PROD(x, y); break;
        case CCS_MIN:  r = MIN(x, y); break;
        case CCS_MAX:  r = MAX(x, y); break;
        default:       r = SUM(x, y); break;
        }
        d[i] = ccs_float_to_half(r);
    }
}

#define TABLE(S)                                                            \
    {                                                                       \
        [CCS_FLOAT32] = { sum_f32_##S, prod_f32_##S, min_f32_##S,           \
                          max_f32_##S },                                    \
        [CCS_FLOAT64] = { sum_f64_##S, prod_f64_##S, min_f64_##S,           \
                          max_f64_##S },                                    \
        [CCS_FLOAT16] = { sum_f16_##S, prod_f16_##S, min_f16_##S,           \
                          max_f16_##S },                                    \
        [CCS_BFLOAT16] = { sum_bf16_##S, prod_bf16_##S, min_bf16_##S,       \
                           max_bf16_##S },                                  \
        [CCS_INT32] = { sum_i32_##S, prod_i32_##S, min_i32_##S,             \
                        max_i32_##S },                                      \
        [CCS_INT64] = { sum_i64_##S, prod_i64_##S, min_i64_##S,             \
                        max_i64_##S },                                      \
        [CCS_UINT8] = { sum_u8_##S, prod_u8_##S, min_u8_##S, max_u8_##S },  \
    }

static const ccs_reduce_kernels_t tab_gen = { TABLE(gen) };

#ifdef CCS_X86_DISPATCH
#define ATTR_AVX2 __attribute__((target("avx2,f16c,fma")))
#define ATTR_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx2,f16c")))

DEF_ALL(ATTR_AVX2, avx2)
DEF_ALL(ATTR_AVX512, avx512)

/* float16 with F16C: 8 lanes per step.  _mm256_min_ps(y, x) is
 * y < x ? y : x, the scalar MIN(x, y) (same for max). */
#define DEF_HALF_AVX2(opn, O, VOP)                                          \
    ATTR_AVX2 static void opn##_f16_avx2(void *d_, const void *a_,          \
                                         const void *b_, size_t n)          \
    {                                                                       \
        uint16_t *d = d_;                                                   \
        const uint16_t *a = a_, *b = b_;                                    \
        size_t i = 0;                                                       \
        for (; i + 8 <= n; i += 8) {                                        \
            __m256 x = _mm256_cvtph_ps(                                     \
                _mm_loadu_si128((const __m128i *)(a + i)));                 \
            __m256 y = _mm256_cvtph_ps(                                     \
                _mm_loadu_si128((const __m128i *)(b + i)));                 \
            _mm_storeu_si128((__m128i *)(d + i),                            \
                             _mm256_cvtps_ph(VOP, _MM_FROUND_TO_NEAREST_INT)); \
        }                                                                   \
        half_tail(d + i, a + i, b + i, n - i, O);                           \
    }
DEF_HALF_AVX2(sum, CCS_SUM, _mm256_add_ps(x, y))
DEF_HALF_AVX2(prod, CCS_PROD, _mm256_mul_ps(x, y))
DEF_HALF_AVX2(min, CCS_MIN, _mm256_min_ps(y, x))
DEF_HALF_AVX2(max, CCS_MAX, _mm256_max_ps(y, x))

#define DEF_HALF_AVX512(opn, O, VOP)                                        \
    ATTR_AVX512 static void opn##_f16_avx512(void *d_, const void *a_,      \
                                             const void *b_, size_t n)      \
    {                                                                       \
        uint16_t *d = d_;                                                   \
        const uint16_t *a = a_, *b = b_;                                    \
        size_t i = 0;                                                       \
        for (; i + 16 <= n; i += 16) {                                      \
            __m512 x = _mm512_cvtph_ps(                                     \
                _mm256_loadu_si256((const __m256i *)(a + i)));              \
            __m512 y = _mm512_cvtph_ps(                                     \
                _mm256_loadu_si256((const __m256i *)(b + i)));              \
            _mm256_storeu_si256((__m256i *)(d + i),                         \
                                _mm512_cvtps_ph(VOP,                        \
                                    _MM_FROUND_TO_NEAREST_INT |             \
                                    _MM_FROUND_NO_EXC));                    \
        }                                                                   \
        half_tail(d + i, a + i, b + i, n - i, O);                           \
    }
DEF_HALF_AVX512(sum, CCS_SUM, _mm512_add_ps(x, y))
DEF_HALF_AVX512(prod, CCS_PROD, _mm512_mul_ps(x, y))
DEF_HALF_AVX512(min, CCS_MIN, _mm512_min_ps(y, x))
DEF_HALF_AVX512(max, CCS_MAX, _mm512_max_ps(y, x))

static const ccs_reduce_kernels_t tab_avx2 = { TABLE(avx2) };
static const ccs_reduce_kernels_t tab_avx512 = { TABLE(avx512) };
#endif

#ifdef CCS_X86_DISPATCH
/* F16C from CPUID leaf 1 (ECX bit 29): clang's __builtin_cpu_supports has
 * no "f16c" before clang 15, gcc's does; CPUID answers for both.  CPUID is
 * slow (a trap to the hypervisor in a VM, tens of microseconds) and the
 * answer never changes, so it is asked once per process and kept, as
 * __builtin_cpu_supports keeps its own answers: 0 not asked yet, 1 no,
 * 2 yes.  Racing first callers store the same value. */
static bool cpu_has_f16c(void)
{
    static atomic_int known;
    int k = atomic_load_explicit(&known, memory_order_relaxed);
    unsigned a, b, c, d;

    if (k == 0) {
        k = __get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 29)) != 0 ? 2 : 1;
        atomic_store_explicit(&known, k, memory_order_relaxed);
    }
    return k == 2;
}
#endif

bool ccs_reduce_isa_ok(ccs_isa_t isa)
{
    switch (isa) {
    case CCS_ISA_GENERIC:
        return true;
#ifdef CCS_X86_DISPATCH
    case CCS_ISA_AVX2:
        return __builtin_cpu_supports("avx2") && cpu_has_f16c() &&
               __builtin_cpu_supports("fma");
    case CCS_ISA_AVX512:
        return __builtin_cpu_supports("avx512f") &&
               __builtin_cpu_supports("avx512bw") &&
               __builtin_cpu_supports("avx512vl") &&
               ccs_reduce_isa_ok(CCS_ISA_AVX2);
#endif
    default:
        return false;
    }
}

const char *ccs_reduce_isa_str(ccs_isa_t isa)
{
    static const char *const names[CCS_ISA_COUNT] = { "generic", "avx2",
                                                      "avx512" };
    return (unsigned)isa < CCS_ISA_COUNT ? names[isa] : "?";
}

ccs_isa_t ccs_reduce_isa_best(void)
{
#ifdef CCS_X86_DISPATCH
    /* AVX-512 on Intel only: AMD's Zen 4 splits 512-bit stores, and its
     * AVX-512 loops ran 0.85x the AVX2 ones in L1 (test_kernels --bench). */
    if (ccs_reduce_isa_ok(CCS_ISA_AVX512) && !__builtin_cpu_is("amd"))
        return CCS_ISA_AVX512;
#endif
    if (ccs_reduce_isa_ok(CCS_ISA_AVX2))
        return CCS_ISA_AVX2;
    return CCS_ISA_GENERIC;
}

const ccs_reduce_kernels_t *ccs_reduce_kernels(ccs_isa_t isa)
{
#ifdef CCS_X86_DISPATCH
    if (isa == CCS_ISA_AVX512 && ccs_reduce_isa_ok(CCS_ISA_AVX512))
        return &tab_avx512;
    if (isa == CCS_ISA_AVX2 && ccs_reduce_isa_ok(CCS_ISA_AVX2))
        return &tab_avx2;
#else
    (void)isa;
#endif
    return &tab_gen;
}

void ccs_reduce_cpu_isa(ccs_isa_t isa, void *dst, const void *a,
                        const void *b, size_t n, ccs_dtype_t dtype,
                        ccs_redop_t op)
{
    ccs_reduce_with(ccs_reduce_kernels(isa), dst, a, b, n, dtype, op);
}

void ccs_reduce_cpu(void *dst, const void *a, const void *b, size_t n,
                    ccs_dtype_t dtype, ccs_redop_t op)
{
    ccs_reduce_with(ccs_reduce_kernels(ccs_reduce_isa_best()), dst, a, b, n,
                    dtype, op);
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
