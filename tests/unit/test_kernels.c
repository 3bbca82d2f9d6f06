/*
 * test_kernels.c - every reduction kernel on every instruction set this
 * CPU has (runtime/reduce.c) against a scalar reference written here, bit
 * for bit: every dtype x op, NaN / inf / signed zeros / subnormals,
 * lengths around the vector widths, unaligned starts and the three
 * aliasing shapes (dst distinct, dst == a, dst == b).
 *
 *   test_kernels                  the tests
 *   test_kernels --bench RUNS     float32 sum throughput in cache and at
 *                                 64 MiB against a memcpy-speed streaming
 *                                 loop, medians (scripts/bench-runtime.sh)
 *   test_kernels --memcpy MIB RUNS  memcpy GB/s (bytes copied) on MIB MiB,
 *                                 median: the transports' reference
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness.h"
#include "../../runtime/reduce.h"

/* ---- scalar reference ---- */

static float ref_f(ccs_redop_t op, float x, float y)
{
    switch (op) {
    case CCS_PROD: return x * y;
    case CCS_MIN: return y < x ? y : x;
    case CCS_MAX: return y > x ? y : x;
    default: return x + y;
    }
}

static double ref_d(ccs_redop_t op, double x, double y)
{
    switch (op) {
    case CCS_PROD: return x * y;
    case CCS_MIN: return y < x ? y : x;
    case CCS_MAX: return y > x ? y : x;
    default: return x + y;
    }
}

#define REF_INT(name, T, U)                                                 \
    static T name(ccs_redop_t op, T x, T y)                                 \
    {                                                                       \
        switch (op) {                                                       \
        case CCS_PROD: return (T)((U)x * (U)y);                             \
        case CCS_MIN: return y < x ? y : x;                                 \
        case CCS_MAX: return y > x ? y : x;                                 \
        default: return (T)((U)x + (U)y);                                   \
        }                                                                   \
    }
REF_INT(ref_i32, int32_t, uint32_t)
REF_INT(ref_i64, int64_t, uint64_t)
REF_INT(ref_u8, uint8_t, uint32_t)

static void ref_reduce(void *d, const void *a, const void *b, size_t i,
                       ccs_dtype_t dt, ccs_redop_t op)
{
    if (op == CCS_AVG)
        op = CCS_SUM;
    switch (dt) {
    case CCS_FLOAT32:
        ((float *)d)[i] = ref_f(op, ((const float *)a)[i],
                                ((const float *)b)[i]);
        break;
    case CCS_FLOAT64:
        ((double *)d)[i] = ref_d(op, ((const double *)a)[i],
                                 ((const double *)b)[i]);
        break;
    case CCS_FLOAT16:
        ((uint16_t *)d)[i] = ccs_float_to_half(
            ref_f(op, ccs_half_to_float(((const uint16_t *)a)[i]),
                  ccs_half_to_float(((const uint16_t *)b)[i])));
        break;
    case CCS_BFLOAT16:
        ((uint16_t *)d)[i] = ccs_float_to_bf16(
            ref_f(op, ccs_bf16_to_float(((const uint16_t *)a)[i]),
                  ccs_bf16_to_float(((const uint16_t *)b)[i])));
        break;
    case CCS_INT32:
        ((int32_t *)d)[i] = ref_i32(op, ((const int32_t *)a)[i],
                                    ((const int32_t *)b)[i]);
        break;
    case CCS_INT64:
        ((int64_t *)d)[i] = ref_i64(op, ((const int64_t *)a)[i],
                                    ((const int64_t *)b)[i]);
        break;
    case CCS_UINT8:
        ((uint8_t *)d)[i] = ref_u8(op, ((const uint8_t *)a)[i],
                                   ((const uint8_t *)b)[i]);
        break;
    default:
        break;
    }
}

/* Same bits, or both NaN (NaN payloads may differ between the hardware's
 * choice of operand and ours). */
static int same(const void *x, const void *y, size_t i, ccs_dtype_t dt)
{
    switch (dt) {
    case CCS_FLOAT32: {
        float p = ((const float *)x)[i], q = ((const float *)y)[i];
        return (isnan(p) && isnan(q)) || memcmp(&p, &q, 4) == 0;
    }
    case CCS_FLOAT64: {
        double p = ((const double *)x)[i], q = ((const double *)y)[i];
        return (isnan(p) && isnan(q)) || memcmp(&p, &q, 8) == 0;
    }
    case CCS_FLOAT16: {
        uint16_t p = ((const uint16_t *)x)[i], q = ((const uint16_t *)y)[i];
        int np = (p & 0x7c00) == 0x7c00 && (p & 0x3ff);
        int nq = (q & 0x7c00) == 0x7c00 && (q & 0x3ff);
        return (np && nq) || p == q;
    }
    case CCS_BFLOAT16: {
        uint16_t p = ((const uint16_t *)x)[i], q = ((const uint16_t *)y)[i];
        int np = (p & 0x7f80) == 0x7f80 && (p & 0x7f);
        int nq = (q & 0x7f80) == 0x7f80 && (q & 0x7f);
        return (np && nq) || p == q;
    }
    default: {
        size_t es = ccs_dtype_size(dt);
        return memcmp((const uint8_t *)x + i * es, (const uint8_t *)y + i * es,
                      es) == 0;
    }
    }
}

/* Deterministic values with specials mixed in for the float types. */
static uint64_t rng = 88172645463325252ull;
static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static void fill(void *p, size_t n, ccs_dtype_t dt)
{
    static const float fs[] = { NAN, -NAN, INFINITY, -INFINITY, 0.0f, -0.0f,
                                1e-40f, -3e38f, 3e38f, 1.5f, -2.25f };
    static const uint16_t hs[] = { 0x7e00, 0x7c01, 0x7c00, 0xfc00, 0x0000,
                                   0x8000, 0x0001, 0x03ff, 0x7bff, 0xfbff };
    static const uint16_t bs[] = { 0x7fc0, 0x7f81, 0x7f80, 0xff80, 0x0000,
                                   0x8000, 0x0001, 0x7f7f, 0xff7f };
    for (size_t i = 0; i < n; i++) {
        uint64_t r = next();
        int special = (r & 7) == 0;
        switch (dt) {
        case CCS_FLOAT32:
            ((float *)p)[i] = special ? fs[(r >> 8) % 11]
                                      : (float)((int64_t)(r >> 40) % 2001) /
                                            16.0f;
            break;
        case CCS_FLOAT64:
            ((double *)p)[i] = special ? (double)fs[(r >> 8) % 11]
                                       : (double)((int64_t)(r >> 40) % 2001) /
                                             7.0;
            break;
        case CCS_FLOAT16:
            ((uint16_t *)p)[i] = special ? hs[(r >> 8) % 10]
                                         : (uint16_t)(r >> 20);
            break;
        case CCS_BFLOAT16:
            ((uint16_t *)p)[i] = special ? bs[(r >> 8) % 9]
                                         : (uint16_t)(r >> 20);
            break;
        default: {
            size_t es = ccs_dtype_size(dt);
            memcpy((uint8_t *)p + i * es, &r, es);
            break;
        }
        }
    }
}

/* Every isa x dtype x op x length x offset x aliasing shape. */
TEST(kernels_match_scalar_reference)
{
    /* 600011: a length far beyond the caches (out of place only). */
    static const size_t lens[] = { 1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 33, 63,
                                   64, 65, 127, 255, 256, 257, 1000, 4099,
                                   600011 };
    enum { MAXN = 600011 + 8 };
    int isas = 0;

    for (int isa = 0; isa < CCS_ISA_COUNT; isa++) {
        if (!ccs_reduce_isa_ok((ccs_isa_t)isa))
            continue;
        isas++;
        for (int d = 0; d < CCS_DTYPE_COUNT; d++) {
            ccs_dtype_t dt = (ccs_dtype_t)d;
            size_t es = ccs_dtype_size(dt);
            uint8_t *a = malloc(MAXN * es + 64), *b = malloc(MAXN * es + 64);
            uint8_t *dst = malloc(MAXN * es + 64);
            uint8_t *want = malloc(MAXN * es + 64);
            for (int o = 0; o < CCS_REDOP_COUNT; o++) {
                ccs_redop_t op = (ccs_redop_t)o;
                size_t wrong = 0, first = 0;
                for (size_t li = 0; li < sizeof(lens) / sizeof(lens[0]);
                     li++) {
                    size_t n = lens[li];
                    /* Element offset 1 unaligns every vector load. */
                    for (size_t off = 0; off < 2; off++) {
                        uint8_t *pa = a + off * es, *pb = b + off * es;
                        uint8_t *pd = dst + off * es;
                        for (int shape = 0; shape < 3; shape++) {
                            /* the long one only out of place, aligned */
                            if (n > 5000 && (off > 0 || shape > 0))
                                continue;
                            fill(pa, n, dt);
                            fill(pb, n, dt);
                            for (size_t i = 0; i < n; i++)
                                ref_reduce(want, pa, pb, i, dt, op);
                            if (shape == 0) {
                                ccs_reduce_cpu_isa((ccs_isa_t)isa, pd, pa,
                                                   pb, n, dt, op);
                            } else if (shape == 1) {
                                memcpy(pd, pa, n * es);
                                ccs_reduce_cpu_isa((ccs_isa_t)isa, pd, pd,
                                                   pb, n, dt, op);
                            } else {
                                memcpy(pd, pb, n * es);
                                ccs_reduce_cpu_isa((ccs_isa_t)isa, pd, pa,
                                                   pd, n, dt, op);
                            }
                            for (size_t i = 0; i < n; i++) {
                                if (!same(pd, want, i, dt)) {
                                    if (wrong++ == 0)
                                        first = n * 1000 + i * 10 +
                                                (size_t)shape;
                                }
                            }
                        }
                    }
                }
                CHECK_MSG(wrong == 0, "%s %s %s: %zu wrong (first: n %zu "
                          "i %zu shape %zu)", ccs_reduce_isa_str(
                              (ccs_isa_t)isa), ccs_dtype_str(dt),
                          ccs_redop_str(op), wrong, first / 1000,
                          first % 1000 / 10, first % 10);
            }
            free(a);
            free(b);
            free(dst);
            free(want);
        }
    }
    CHECK(isas >= 1);
    CHECK(ccs_reduce_isa_ok(ccs_reduce_isa_best()));
}

/* dst == a == b: x (op) x. */
TEST(kernels_self_alias)
{
    float f[37];
    for (int i = 0; i < 37; i++)
        f[i] = (float)i;
    ccs_reduce_cpu(f, f, f, 37, CCS_FLOAT32, CCS_SUM);
    for (int i = 0; i < 37; i++)
        CHECK(f[i] == 2.0f * (float)i);
}

/* ---- benchmark ---- */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_d(const void *x, const void *y)
{
    double p = *(const double *)x, q = *(const double *)y;
    return p < q ? -1 : p > q;
}

/* A plain streaming loop at memcpy speed: the reference of the kernels
 * (the same read-read-write traffic as dst = a + b, no arithmetic). */
static void __attribute__((noinline)) stream_copy(float *restrict d,
                                                  const float *restrict a,
                                                  const float *restrict b,
                                                  size_t n)
{
    memcpy(d, a, n * sizeof(float));
    (void)b;
}

/* GB/s counted as bytes of the three streams (a, b read, d written). */
static double gbps(int kind, float *d, float *a, float *b, size_t n,
                   int reps)
{
    double t0 = now_s();
    for (int i = 0; i < reps; i++) {
        if (kind == 0)
            ccs_reduce_cpu(d, a, b, n, CCS_FLOAT32, CCS_SUM);
        else if (kind == 1)
            stream_copy(d, a, b, n);
        else
            ccs_reduce_cpu_isa(CCS_ISA_GENERIC, d, a, b, n, CCS_FLOAT32,
                               CCS_SUM);
    }
    return (double)n * 4 * (kind == 1 ? 2 : 3) * reps / (now_s() - t0) / 1e9;
}

static int bench(int runs)
{
    static const struct { const char *what; size_t n; int reps; } cases[] = {
        { "in L1 (8 KiB per buffer)", 2048, 40000 },
        { "64 MiB per buffer", (size_t)16 << 20, 3 },
    };
    if (runs < 1 || runs > 99)
        runs = 5;
    printf("  kernels: %s (best this CPU runs)\n",
           ccs_reduce_isa_str(ccs_reduce_isa_best()));
    for (size_t c = 0; c < 2; c++) {
        size_t n = cases[c].n;
        float *a = aligned_alloc(64, n * 4), *b = aligned_alloc(64, n * 4);
        float *d = aligned_alloc(64, n * 4);
        double k[99], m[99], g[99], ratio[99];
        if (a == NULL || b == NULL || d == NULL)
            return 1;
        for (size_t i = 0; i < n; i++) {
            a[i] = (float)i;
            b[i] = 1.0f;
            d[i] = 0.0f;
        }
        gbps(0, d, a, b, n, 1);
        for (int r = 0; r < runs; r++) {
            k[r] = gbps(0, d, a, b, n, cases[c].reps);
            m[r] = gbps(1, d, a, b, n, cases[c].reps);
            g[r] = gbps(2, d, a, b, n, cases[c].reps);
            ratio[r] = k[r] / m[r];
        }
        qsort(k, (size_t)runs, sizeof(double), cmp_d);
        qsort(m, (size_t)runs, sizeof(double), cmp_d);
        qsort(g, (size_t)runs, sizeof(double), cmp_d);
        qsort(ratio, (size_t)runs, sizeof(double), cmp_d);
        printf("  sum float32, %s: kernel %.1f GB/s, portable kernel "
               "%.1f GB/s, memcpy stream %.1f GB/s; kernel / memcpy %.2f "
               "(median of %d)%s\n", cases[c].what, k[runs / 2],
               g[runs / 2], m[runs / 2], ratio[runs / 2], runs,
               c == 0 ? (ratio[runs / 2] >= 0.8 ? "; target >= 0.8: met"
                                                : "; target >= 0.8: NOT met")
                      : (ratio[runs / 2] >= 0.9 ? "; target >= 0.9: met"
                                                : "; target >= 0.9: NOT met"));
        free(a);
        free(b);
        free(d);
    }
    return 0;
}

/* memcpy bandwidth (bytes copied per second), median of runs, on two
 * buffers of `bytes`: the reference of the transports' bandwidth. */
static int memcpy_bw(size_t bytes, int runs)
{
    char *a = malloc(bytes), *b = malloc(bytes);
    double r[99];

    if (a == NULL || b == NULL || runs < 1 || runs > 99)
        return 1;
    memset(a, 1, bytes);
    memset(b, 2, bytes);
    for (int i = 0; i < runs; i++) {
        double t0 = now_s();
        memcpy(b, a, bytes);
        memcpy(a, b, bytes);
        r[i] = 2.0 * (double)bytes / (now_s() - t0) / 1e9;
    }
    qsort(r, (size_t)runs, sizeof(double), cmp_d);
    printf("%.3f\n", r[runs / 2]);
    free(a);
    free(b);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--bench") == 0)
        return bench(atoi(argv[2]));
    if (argc == 4 && strcmp(argv[1], "--memcpy") == 0)
        return memcpy_bw((size_t)strtoull(argv[2], NULL, 10) << 20,
                         atoi(argv[3]));
    RUN(kernels_match_scalar_reference);
    RUN(kernels_self_alias);
    return TEST_SUMMARY();
}
