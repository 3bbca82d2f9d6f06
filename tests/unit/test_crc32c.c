/*
 * test_crc32c.c - CRC-32C's two paths (runtime/crc32c.c: the SSE4.2
 * instruction and slicing-by-8) against the bitwise definition and the
 * known vectors, over lengths and misalignments that exercise every
 * head / body / tail split, and incremental use across them.
 *
 *   test_crc32c                 the tests
 *   test_crc32c --bench RUNS    GB/s of both paths and of the byte table
 *                               they replaced, on 64 MiB (medians)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness.h"
#include "../../runtime/crc32c.h"

static uint32_t crc_bitwise(uint32_t crc, const uint8_t *p, size_t n)
{
    uint32_t c = ~crc;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++)
            c = (c & 1) ? (c >> 1) ^ 0x82f63b78u : c >> 1;
    }
    return ~c;
}

TEST(known_vectors_both_paths)
{
    uint8_t buf[32];

    CHECK_EQ_INT(ccs_crc32c(0, "123456789", 9), 0xe3069283u);
    CHECK_EQ_INT(ccs_crc32c_sw(0, "123456789", 9), 0xe3069283u);
    CHECK_EQ_INT(ccs_crc32c(0, NULL, 0), 0);
    CHECK_EQ_INT(ccs_crc32c_sw(0, NULL, 0), 0);
    CHECK_EQ_INT(ccs_crc32c(0x1234, NULL, 0), 0x1234);
    memset(buf, 0, sizeof(buf));
    CHECK_EQ_INT(ccs_crc32c(0, buf, 32), 0x8a9136aau);   /* RFC 3720 B.4 */
    CHECK_EQ_INT(ccs_crc32c_sw(0, buf, 32), 0x8a9136aau);
    memset(buf, 0xff, sizeof(buf));
    CHECK_EQ_INT(ccs_crc32c(0, buf, 32), 0x62a8ab43u);
    CHECK_EQ_INT(ccs_crc32c_sw(0, buf, 32), 0x62a8ab43u);
    for (int i = 0; i < 32; i++)
        buf[i] = (uint8_t)i;
    CHECK_EQ_INT(ccs_crc32c(0, buf, 32), 0x46dd794eu);
    CHECK_EQ_INT(ccs_crc32c_sw(0, buf, 32), 0x46dd794eu);
}

TEST(paths_match_bitwise_every_split)
{
    enum { N = 300 };
    uint8_t buf[N + 16];
    uint32_t x = 12345;
    int bad = 0;

    for (size_t i = 0; i < sizeof(buf); i++) {
        x = x * 1103515245u + 12345u;
        buf[i] = (uint8_t)(x >> 16);
    }
    for (size_t off = 0; off < 9; off++) {
        for (size_t n = 0; n <= N; n++) {
            uint32_t want = crc_bitwise(0, buf + off, n);
            bad += ccs_crc32c(0, buf + off, n) != want;
            bad += ccs_crc32c_sw(0, buf + off, n) != want;
            /* incremental, split at k */
            for (size_t k = 0; k <= n; k += 7) {
                bad += ccs_crc32c(ccs_crc32c(0, buf + off, k),
                                  buf + off + k, n - k) != want;
                bad += ccs_crc32c_sw(ccs_crc32c_sw(0, buf + off, k),
                                     buf + off + k, n - k) != want;
            }
        }
    }
    CHECK_EQ_INT(bad, 0);
}

/* Buffers long enough for the three-stream loop (32 KiB streams), at
 * lengths around its block boundaries and every alignment, against the
 * table path (itself checked against the definition above). */
TEST(long_buffers_three_streams)
{
    enum { S = 32768, N = 7 * S + 64 };
    static const size_t lens[] = { 3 * S - 1, 3 * S, 3 * S + 1, 3 * S + 8,
                                   6 * S - 3, 6 * S, 6 * S + 13, 7 * S + 17 };
    uint8_t *buf = malloc(N + 16);
    uint32_t x = 987654321u;
    int bad = 0;

    CHECK(buf != NULL);
    if (buf == NULL)
        return;
    for (size_t i = 0; i < N + 16; i++) {
        x = x * 1103515245u + 12345u;
        buf[i] = (uint8_t)(x >> 16);
    }
    for (size_t off = 0; off < 9; off++) {
        for (size_t k = 0; k < sizeof(lens) / sizeof(lens[0]); k++) {
            uint32_t want = ccs_crc32c_sw(0x5a5a5a5au, buf + off, lens[k]);
            bad += ccs_crc32c(0x5a5a5a5au, buf + off, lens[k]) != want;
        }
    }
    /* One long buffer against the definition itself. */
    CHECK_EQ_INT(ccs_crc32c(0, buf + 3, N), crc_bitwise(0, buf + 3, N));
    CHECK_EQ_INT(bad, 0);
    free(buf);
}

/* ---- benchmark ---- */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static uint32_t byte_table[256];

static uint32_t crc_bytewise(uint32_t crc, const uint8_t *p, size_t n)
{
    crc = ~crc;
    for (size_t i = 0; i < n; i++)
        crc = byte_table[(crc ^ p[i]) & 0xffu] ^ (crc >> 8);
    return ~crc;
}

static int bench(int runs)
{
    size_t n = (size_t)64 << 20;
    uint8_t *buf = malloc(n);
    double hw[99], sw[99], bt[99];
    volatile uint32_t sink = 0;

    if (buf == NULL)
        return 1;
    if (runs < 1 || runs > 99)
        runs = 5;
    for (uint32_t i = 0; i < 256; i++)
        byte_table[i] = ~crc_bitwise(~0u, (const uint8_t *)&(uint8_t){
                                              (uint8_t)i }, 1);
    for (size_t i = 0; i < n; i++)
        buf[i] = (uint8_t)(i * 131);
    for (int r = 0; r < runs; r++) {
        double t0 = now_s();
        sink ^= ccs_crc32c(0, buf, n);
        double t1 = now_s();
        sink ^= ccs_crc32c_sw(0, buf, n);
        double t2 = now_s();
        sink ^= crc_bytewise(0, buf, n);
        double t3 = now_s();
        hw[r] = (double)n / (t1 - t0) / 1e9;
        sw[r] = (double)n / (t2 - t1) / 1e9;
        bt[r] = (double)n / (t3 - t2) / 1e9;
    }
    qsort(hw, (size_t)runs, sizeof(double), cmp_d);
    qsort(sw, (size_t)runs, sizeof(double), cmp_d);
    qsort(bt, (size_t)runs, sizeof(double), cmp_d);
    printf("  crc32c, 64 MiB: ccs_crc32c (%s) %.2f GB/s, slicing-by-8 "
           "%.2f GB/s, byte table %.2f GB/s: %.1fx the byte table "
           "(median of %d)\n", ccs_crc32c_hw_available() ? "sse4.2"
                                                         : "slicing-by-8",
           hw[runs / 2], sw[runs / 2], bt[runs / 2],
           hw[runs / 2] / bt[runs / 2], runs);
    free(buf);
    return (int)(sink & 0);
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--bench") == 0)
        return bench(atoi(argv[2]));
    RUN(known_vectors_both_paths);
    RUN(paths_match_bitwise_every_split);
    RUN(long_buffers_three_streams);
    return TEST_SUMMARY();
}
