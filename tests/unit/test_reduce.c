/*
 * test_reduce.c - CPU reduction kernels and half-precision conversions
 * (runtime/reduce.c) against scalar references computed in double.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "../../runtime/reduce.h"
#include "../../tools/ccs_check.h"

TEST(half_conversion_table)
{
    static const struct { float f; uint16_t h; } t[] = {
        { 0.0f, 0x0000 }, { -0.0f, 0x8000 }, { 1.0f, 0x3c00 },
        { -2.0f, 0xc000 }, { 65504.0f, 0x7bff }, { 65520.0f, 0x7c00 },
        { 65519.0f, 0x7bff }, { 1e9f, 0x7c00 }, { -1e9f, 0xfc00 },
        { 5.9604645e-8f, 0x0001 },            /* 2^-24, smallest subnormal */
        { 2.9802322e-8f, 0x0000 },            /* 2^-25: tie, to even (0) */
        { 8.940697e-8f, 0x0002 },             /* 1.5 * 2^-24: tie, to 2 */
        { 6.097555e-5f, 0x03ff },             /* largest subnormal */
        { 6.1035156e-5f, 0x0400 },            /* 2^-14, smallest normal */
        { 1.00048828125f, 0x3c00 },           /* 1 + 2^-11: tie, to even */
        { 1.00146484375f, 0x3c02 },           /* 1 + 3*2^-11: tie, up */
        { 1.0009765625f, 0x3c01 },            /* 1 + 2^-10: exact */
    };
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        uint16_t h = ccs_float_to_half(t[i].f);
        CHECK_MSG(h == t[i].h, "half(%.9g) = 0x%04x, want 0x%04x",
                  (double)t[i].f, h, t[i].h);
    }
    CHECK(isnan(ccs_half_to_float(ccs_float_to_half(NAN))));
    CHECK(isinf(ccs_half_to_float(0x7c00)));
}

/* Every non-NaN half survives half -> float -> half, and the float value
 * equals the independent decoder of ccs_check.h. */
TEST(half_roundtrip_exhaustive)
{
    int bad = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0)
            continue;
        float f = ccs_half_to_float((uint16_t)h);
        if (ccs_float_to_half(f) != h || (double)f != chk_from_half(
                                                        (uint16_t)h))
            bad++;
    }
    CHECK_EQ_INT(bad, 0);
}

TEST(bf16_conversion)
{
    static const struct { float f; uint16_t h; } t[] = {
        { 1.0f, 0x3f80 }, { -1.0f, 0xbf80 }, { 0.0f, 0x0000 },
        { 1.00390625f, 0x3f80 },              /* 1 + 2^-8: tie, to even */
        { 1.01171875f, 0x3f82 },              /* 1 + 3*2^-8: tie, up */
        { 1.0078125f, 0x3f81 },               /* exact */
        { 3.4e38f, 0x7f80 },                  /* rounds up to infinity */
        { 3.3895314e38f, 0x7f7f },            /* largest finite */
    };
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        uint16_t h = ccs_float_to_bf16(t[i].f);
        CHECK_MSG(h == t[i].h, "bf16(%.9g) = 0x%04x, want 0x%04x",
                  (double)t[i].f, h, t[i].h);
    }
    CHECK(isnan(ccs_bf16_to_float(ccs_float_to_bf16(NAN))));
    for (uint32_t h = 0; h < 65536; h += 7) {
        if ((h & 0x7f80) == 0x7f80 && (h & 0x7f) != 0)
            continue;
        CHECK_EQ_INT(ccs_float_to_bf16(ccs_bf16_to_float((uint16_t)h)), h);
    }
}

static double ref_op(ccs_redop_t op, double a, double b)
{
    switch (op) {
    case CCS_PROD: return a * b;
    case CCS_MIN: return a < b ? a : b;
    case CCS_MAX: return a > b ? a : b;
    default: return a + b;
    }
}

/* Every dtype x op, lengths around the vector widths, dst aliasing a. */
TEST(kernels_all_types_ops)
{
    static const size_t lens[] = { 0, 1, 3, 15, 16, 17, 255, 256, 1001 };
    for (int d = 0; d < CCS_DTYPE_COUNT; d++) {
        ccs_dtype_t dt = (ccs_dtype_t)d;
        size_t es = ccs_dtype_size(dt);
        for (int o = 0; o < CCS_REDOP_COUNT; o++) {
            ccs_redop_t op = (ccs_redop_t)o;
            for (size_t li = 0; li < sizeof(lens) / sizeof(lens[0]); li++) {
                size_t n = lens[li], wrong = 0;
                uint8_t *a = malloc(n * es + 1), *b = malloc(n * es + 1);
                uint8_t *dst = malloc(n * es + 1);
                for (size_t i = 0; i < n; i++) {
                    /* small signed values; uint8 non-negative */
                    double va = (double)((int)((i * 7) % 9) -
                                         (dt == CCS_UINT8 ? 0 : 4));
                    double vb = (double)((int)((i * 5 + 3) % 11) -
                                         (dt == CCS_UINT8 ? 0 : 5));
                    chk_store(dt, a, i, va);
                    chk_store(dt, b, i, vb);
                }
                ccs_reduce_cpu(dst, a, b, n, dt, op);
                for (size_t i = 0; i < n; i++) {
                    double want = ref_op(op, chk_load(dt, a, i),
                                         chk_load(dt, b, i));
                    if (dt == CCS_UINT8)
                        want = fmod(want, 256.0);
                    wrong += chk_load(dt, dst, i) != want;
                }
                /* aliasing: a = a (op) b */
                memcpy(dst, a, n * es);
                ccs_reduce_cpu(dst, dst, b, n, dt, op);
                for (size_t i = 0; i < n; i++) {
                    double want = ref_op(op, chk_load(dt, a, i),
                                         chk_load(dt, b, i));
                    if (dt == CCS_UINT8)
                        want = fmod(want, 256.0);
                    wrong += chk_load(dt, dst, i) != want;
                }
                CHECK_MSG(wrong == 0, "%s %s n=%zu: %zu wrong",
                          ccs_dtype_str(dt), ccs_redop_str(op), n, wrong);
                free(a);
                free(b);
                free(dst);
            }
        }
    }
}

/* Integer sums wrap like two's complement instead of trapping. */
TEST(integer_wraparound)
{
    int32_t a = INT32_MAX, b = 1, d;
    uint8_t ua = 250, ub = 10, ud;
    ccs_reduce_cpu(&d, &a, &b, 1, CCS_INT32, CCS_SUM);
    CHECK_EQ_INT(d, INT32_MIN);
    ccs_reduce_cpu(&ud, &ua, &ub, 1, CCS_UINT8, CCS_SUM);
    CHECK_EQ_INT(ud, 4);
}

/* avg's final division: truncation toward zero for integers, rounding in
 * float for the half types. */
TEST(avg_division)
{
    int32_t i32[] = { 7, -7, 8, -1 };
    int64_t i64[] = { 9, -9 };
    uint8_t u8[] = { 255, 3 };
    float f32[] = { 1.0f, 5.0f };
    uint16_t h[] = { ccs_float_to_half(1.0f), ccs_float_to_bf16(5.0f) };

    ccs_reduce_div(i32, 4, CCS_INT32, 2);
    CHECK_EQ_INT(i32[0], 3);
    CHECK_EQ_INT(i32[1], -3);
    CHECK_EQ_INT(i32[2], 4);
    CHECK_EQ_INT(i32[3], 0);
    ccs_reduce_div(i64, 2, CCS_INT64, 4);
    CHECK_EQ_INT(i64[0], 2);
    CHECK_EQ_INT(i64[1], -2);
    ccs_reduce_div(u8, 2, CCS_UINT8, 4);
    CHECK_EQ_INT(u8[0], 63);
    CHECK_EQ_INT(u8[1], 0);
    ccs_reduce_div(f32, 2, CCS_FLOAT32, 3);
    CHECK(f32[0] == 1.0f / 3.0f && f32[1] == 5.0f / 3.0f);
    ccs_reduce_div(&h[0], 1, CCS_FLOAT16, 3);
    CHECK_EQ_INT(h[0], ccs_float_to_half(1.0f / 3.0f));
    ccs_reduce_div(&h[1], 1, CCS_BFLOAT16, 3);
    CHECK_EQ_INT(h[1], ccs_float_to_bf16(5.0f / 3.0f));
}

int main(void)
{
    RUN(half_conversion_table);
    RUN(half_roundtrip_exhaustive);
    RUN(bf16_conversion);
    RUN(kernels_all_types_ops);
    RUN(integer_wraparound);
    RUN(avg_division);
    return TEST_SUMMARY();
}
