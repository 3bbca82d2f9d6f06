/*
 * test_format.c - the .ccs writer and reader (runtime/format.c), CRC-32C.
 *
 * Round trips of builder-made schedules compared field by field,
 * determinism, per-rank decoding, and a reader that must reject (without
 * crashing or reading out of bounds: run under ASAN too) truncated files,
 * flipped bits, wrong versions and checksums, absurd counts, bad offsets,
 * overlapping streams and trailing bytes, naming the field at fault.
 *
 *   test_format                      run the tests
 *   test_format --write-example F    write the tiny schedule of
 *                                    docs/format.md's worked example to F
 *   test_format --write NAME F       write the schedule NAME (sched_cases:
 *                                    ring4, phased, ...) to F
 */
#include <dirent.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../runtime/ccs_out.h"
#include "../../runtime/crc32c.h"
#include "../../runtime/format.h"
#include "../../runtime/sched.h"
#include "harness.h"

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif
#ifndef UNDER_ASAN
#define UNDER_ASAN 0
#endif

/* ---- little-endian access written independently of format.c ---- */

static uint64_t rd_le(const uint8_t *p, int width)
{
    uint64_t v = 0;
    for (int i = width - 1; i >= 0; i--)
        v = v * 256 + p[i];
    return v;
}

static void wr_le(uint8_t *p, int width, uint64_t v)
{
    for (int i = 0; i < width; i++, v /= 256)
        p[i] = (uint8_t)(v % 256);
}

/* Recompute the trailing CRC, so that a mutation reaches the structural
 * checks instead of stopping at the checksum. */
static void fix_crc(uint8_t *b, size_t len)
{
    wr_le(b + len - 4, 4, ccs_crc32c(0, b, len - 4));
}

/* Bitwise CRC-32C, the definition the table must agree with. */
static uint32_t crc32c_bitwise(const uint8_t *p, size_t n)
{
    uint32_t c = 0xffffffffu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++)
            c = (c & 1) ? (c >> 1) ^ 0x82f63b78u : c >> 1;
    }
    return ~c;
}

/* ---- schedules made with the builder ---- */

#define OK_OR_FAIL(expr)                                                    \
    do {                                                                    \
        if ((expr) != CCS_OK)                                               \
            goto fail;                                                      \
    } while (0)

/* Ring allreduce over n ranks, n chunks: n-1 reduce-scatter steps then n-1
 * allgather steps, the first reading IN and reducing IN into OUT. */
static ccs_sched_t *mk_ring(uint32_t n, const char *params,
                            uint64_t fingerprint)
{
    ccs_sched_t *s = NULL;
    uint32_t t;

    OK_OR_FAIL(ccs_sched_create(CCS_COLL_ALLREDUCE, n, n, "ring", &s, NULL));
    for (uint32_t k = 0; k + 1 < n; k++) {
        OK_OR_FAIL(ccs_sched_add_step(s, 0, &t, NULL));
        for (uint32_t r = 0; r < n; r++) {
            uint32_t c = (r + n - k) % n;
            OK_OR_FAIL(ccs_sched_xfer_reduce_from(
                s, t, r, k == 0 ? CCS_BUF_IN : CCS_BUF_OUT, c, (r + 1) % n,
                CCS_BUF_OUT, c, CCS_BUF_IN, c, 1, NULL));
        }
    }
    for (uint32_t k = 0; k + 1 < n; k++) {
        OK_OR_FAIL(ccs_sched_add_step(s, 0, &t, NULL));
        for (uint32_t r = 0; r < n; r++) {
            uint32_t c = (r + 1 + n - k) % n;
            OK_OR_FAIL(ccs_sched_xfer(s, t, r, CCS_BUF_OUT, c, (r + 1) % n,
                                      CCS_BUF_OUT, c, 1, false, NULL));
        }
    }
    OK_OR_FAIL(ccs_sched_set_params(s, params, NULL));
    s->topo_fingerprint = fingerprint;
    OK_OR_FAIL(ccs_sched_finalize(s, NULL));
    return s;
fail:
    ccs_sched_destroy(s);
    return NULL;
}

static ccs_sched_t *mk_ring4(void)
{
    return mk_ring(4, "algo=ring\ncoll=allreduce\ntopo=ring:4\n",
                   0x0123456789abcdefull);
}

/* The worked example of docs/format.md: ring allreduce on 2 ranks. */
static ccs_sched_t *mk_example(void)
{
    return mk_ring(2, "algo=ring\ntopo=ring:2\n", 0x0123456789abcdefull);
}

static ccs_sched_t *mk_reducescatter(void)
{
    ccs_sched_t *s = NULL;
    uint32_t t;

    OK_OR_FAIL(ccs_sched_create(CCS_COLL_REDUCESCATTER, 3, 6, "direct", &s,
                                NULL));
    OK_OR_FAIL(ccs_sched_add_step(s, 0, &t, NULL));
    for (uint32_t r = 0; r < 3; r++)
        for (uint32_t q = 0; q < 3; q++)
            if (q != r)
                OK_OR_FAIL(ccs_sched_xfer(s, t, r, CCS_BUF_IN, 2 * q, q,
                                          CCS_BUF_SCRATCH, 2 * r, 2, false,
                                          NULL));
    OK_OR_FAIL(ccs_sched_add_step(s, 0, &t, NULL));
    for (uint32_t r = 0; r < 3; r++) {
        OK_OR_FAIL(ccs_sched_local(s, t, r, CCS_BUF_OUT, 2 * r, CCS_BUF_IN,
                                   2 * r, 2, false, NULL));
        for (uint32_t q = 0; q < 3; q++)
            if (q != r)
                OK_OR_FAIL(ccs_sched_local(s, t + 0, r, CCS_BUF_SCRATCH,
                                           2 * q, CCS_BUF_IN, 2 * r, 2, true,
                                           NULL));
    }
    OK_OR_FAIL(ccs_sched_finalize(s, NULL));
    return s;
fail:
    ccs_sched_destroy(s);
    return NULL;
}

static ccs_sched_t *mk_allgather(void)
{
    ccs_sched_t *s = NULL;
    uint32_t t;

    OK_OR_FAIL(ccs_sched_create(CCS_COLL_ALLGATHER, 2, 4, "pairs", &s, NULL));
    OK_OR_FAIL(ccs_sched_add_step(s, 0, &t, NULL));
    OK_OR_FAIL(ccs_sched_local(s, t, 0, CCS_BUF_OUT, 0, CCS_BUF_IN, 0, 2,
                               false, NULL));
    OK_OR_FAIL(ccs_sched_local(s, t, 1, CCS_BUF_OUT, 2, CCS_BUF_IN, 2, 2,
                               false, NULL));
    OK_OR_FAIL(ccs_sched_xfer(s, t, 0, CCS_BUF_IN, 0, 1, CCS_BUF_OUT, 0, 2,
                              false, NULL));
    OK_OR_FAIL(ccs_sched_xfer(s, t, 1, CCS_BUF_IN, 2, 0, CCS_BUF_OUT, 2, 2,
                              false, NULL));
    OK_OR_FAIL(ccs_sched_set_params(s, "", NULL)); /* present but empty */
    OK_OR_FAIL(ccs_sched_finalize(s, NULL));
    return s;
fail:
    ccs_sched_destroy(s);
    return NULL;
}

/* Rooted collectives: the root field must survive. */
static ccs_sched_t *mk_rooted(ccs_coll_t coll, int32_t root)
{
    ccs_sched_t *s = NULL;
    uint32_t t;

    OK_OR_FAIL(ccs_sched_create(coll, 4, 2, "chain", &s, NULL));
    s->root = root;
    for (uint32_t k = 0; k < 3; k++) {
        uint32_t a = ((uint32_t)root + 1 + k) % 4, b = (a + 1) % 4;
        OK_OR_FAIL(ccs_sched_add_step(s, 0, &t, NULL));
        if (coll == CCS_COLL_BROADCAST)
            OK_OR_FAIL(ccs_sched_xfer(s, t, (uint32_t)root, CCS_BUF_IN, 0, a,
                                      CCS_BUF_OUT, 0, 2, false, NULL));
        else
            OK_OR_FAIL(ccs_sched_xfer_reduce_from(s, t, a, CCS_BUF_IN, 0, b,
                                                  CCS_BUF_SCRATCH, 0,
                                                  CCS_BUF_IN, 0, 2, NULL));
    }
    OK_OR_FAIL(ccs_sched_finalize(s, NULL));
    return s;
fail:
    ccs_sched_destroy(s);
    return NULL;
}

static ccs_sched_t *mk_reduce(void) { return mk_rooted(CCS_COLL_REDUCE, 2); }
static ccs_sched_t *mk_bcast(void) { return mk_rooted(CCS_COLL_BROADCAST, 1); }

static ccs_sched_t *mk_alltoall(void)
{
    ccs_sched_t *s = NULL;
    uint32_t t;

    OK_OR_FAIL(ccs_sched_create(CCS_COLL_ALLTOALL, 3, 3, "direct", &s, NULL));
    OK_OR_FAIL(ccs_sched_add_step(s, 0, &t, NULL));
    for (uint32_t r = 0; r < 3; r++) {
        OK_OR_FAIL(ccs_sched_local(s, t, r, CCS_BUF_OUT, r, CCS_BUF_IN, r, 1,
                                   false, NULL));
        for (uint32_t q = 0; q < 3; q++)
            if (q != r)
                OK_OR_FAIL(ccs_sched_xfer(s, t, r, CCS_BUF_IN, q, q,
                                          CCS_BUF_OUT, r, 1, false, NULL));
    }
    OK_OR_FAIL(ccs_sched_finalize(s, NULL));
    return s;
fail:
    ccs_sched_destroy(s);
    return NULL;
}

/* StragglAR-shaped: phase 0 without the straggler, phase 1 with it,
 * scratch, local reduces, ops appended out of step order. */
static ccs_sched_t *mk_phased(void)
{
    ccs_sched_t *s = NULL;
    uint32_t t0, t1, t2;

    OK_OR_FAIL(ccs_sched_create(CCS_COLL_ALLREDUCE, 4, 3, "stragglar", &s,
                                NULL));
    s->straggler = 3;
    OK_OR_FAIL(ccs_sched_add_step(s, 0, &t0, NULL));
    OK_OR_FAIL(ccs_sched_add_step(s, 1, &t1, NULL));
    OK_OR_FAIL(ccs_sched_add_step(s, 1, &t2, NULL));
    OK_OR_FAIL(ccs_sched_xfer(s, t2, 3, CCS_BUF_OUT, 0, 0, CCS_BUF_OUT, 0, 3,
                              false, NULL));
    OK_OR_FAIL(ccs_sched_xfer(s, t0, 0, CCS_BUF_IN, 1, 1, CCS_BUF_SCRATCH, 5,
                              1, true, NULL));
    OK_OR_FAIL(ccs_sched_xfer(s, t0, 2, CCS_BUF_IN, 2, 0, CCS_BUF_SCRATCH, 0,
                              1, false, NULL));
    OK_OR_FAIL(ccs_sched_local(s, t1, 0, CCS_BUF_OUT, 2, CCS_BUF_SCRATCH, 0,
                               1, true, NULL));
    OK_OR_FAIL(ccs_sched_xfer_reduce_from(s, t1, 3, CCS_BUF_IN, 0, 1,
                                          CCS_BUF_OUT, 0, CCS_BUF_SCRATCH, 5,
                                          1, NULL));
    OK_OR_FAIL(ccs_sched_set_params(
        s, "algo=stragglar\ncoll=allreduce\ntopo=dgx-h100\nstraggler=3\n"
           "phase0=ring\nnote=tab\there, quote \" and \\ backslash\n",
        NULL));
    s->topo_fingerprint = 0xdeadbeefcafef00dull;
    OK_OR_FAIL(ccs_sched_finalize(s, NULL));
    return s;
fail:
    ccs_sched_destroy(s);
    return NULL;
}

/* Ranks 2..4 run nothing. */
static ccs_sched_t *mk_empty_ranks(void)
{
    ccs_sched_t *s = NULL;
    uint32_t t;

    OK_OR_FAIL(ccs_sched_create(CCS_COLL_ALLREDUCE, 5, 1, "sparse", &s,
                                NULL));
    OK_OR_FAIL(ccs_sched_add_step(s, 0, &t, NULL));
    OK_OR_FAIL(ccs_sched_xfer(s, t, 1, CCS_BUF_IN, 0, 0, CCS_BUF_OUT, 0, 1,
                              false, NULL));
    OK_OR_FAIL(ccs_sched_finalize(s, NULL));
    return s;
fail:
    ccs_sched_destroy(s);
    return NULL;
}

/* No steps, no params (NULL), one rank, longest algorithm name. */
static ccs_sched_t *mk_no_steps(void)
{
    ccs_sched_t *s = NULL;
    OK_OR_FAIL(ccs_sched_create(CCS_COLL_ALLREDUCE, 1, 1,
                                "abcdefghijklmnopqrstuvwxyz01234", &s, NULL));
    return s;
fail:
    return NULL;
}

/* 64 ranks, enough to make the directory and streams non-trivial. */
static ccs_sched_t *mk_ring64(void)
{
    return mk_ring(64, "algo=ring\n", 1);
}

static const struct {
    const char *name;
    ccs_sched_t *(*make)(void);
} sched_cases[] = {
    { "ring4", mk_ring4 },         { "example", mk_example },
    { "reducescatter", mk_reducescatter },
    { "allgather", mk_allgather }, { "reduce", mk_reduce },
    { "broadcast", mk_bcast },     { "alltoall", mk_alltoall },
    { "phased", mk_phased },       { "empty_ranks", mk_empty_ranks },
    { "no_steps", mk_no_steps },   { "ring64", mk_ring64 },
};
#define NCASES (sizeof(sched_cases) / sizeof(sched_cases[0]))

/* Field-by-field comparison; `why` names the first difference.  With
 * only_rank >= 0, b must hold that rank's ops only. */
static bool sched_equal(const ccs_sched_t *a, const ccs_sched_t *b,
                        int64_t only_rank, char *why, size_t wlen)
{
#define DIFF(...) do { snprintf(why, wlen, __VA_ARGS__); return false; } \
    while (0)
    if (a->coll != b->coll) DIFF("coll %d vs %d", a->coll, b->coll);
    if (a->nranks != b->nranks) DIFF("nranks %u vs %u", a->nranks, b->nranks);
    if (a->nchunks != b->nchunks) DIFF("nchunks");
    if (a->nscratch != b->nscratch)
        DIFF("nscratch %u vs %u", a->nscratch, b->nscratch);
    if (a->nsteps != b->nsteps) DIFF("nsteps");
    if (a->nphases != b->nphases) DIFF("nphases");
    if (a->root != b->root) DIFF("root %d vs %d", a->root, b->root);
    if (a->straggler != b->straggler) DIFF("straggler");
    if (strcmp(a->algo, b->algo) != 0) DIFF("algo '%s' vs '%s'", a->algo,
                                            b->algo);
    if (a->topo_fingerprint != b->topo_fingerprint) DIFF("fingerprint");
    if ((a->params == NULL) != (b->params == NULL))
        DIFF("params %s vs %s", a->params ? "set" : "NULL",
             b->params ? "set" : "NULL");
    if (a->params != NULL && strcmp(a->params, b->params) != 0)
        DIFF("params text");
    if (a->nsteps > 0 && memcmp(a->step_phase, b->step_phase, a->nsteps) != 0)
        DIFF("step phases");
    for (uint32_t r = 0; r < a->nranks; r++) {
        uint32_t want = (only_rank < 0 || r == only_rank) ? a->rank_nops[r]
                                                         : 0;
        if (b->rank_nops[r] != want)
            DIFF("rank %u: %u ops vs %u", r, want, b->rank_nops[r]);
        for (uint32_t i = 0; i < want; i++) {
            const ccs_op_t *x = &a->rank_ops[r][i], *y = &b->rank_ops[r][i];
            if (x->step != y->step || x->kind != y->kind ||
                x->buf != y->buf || x->src_buf != y->src_buf ||
                x->reserved != y->reserved || x->peer != y->peer ||
                x->chunk != y->chunk || x->src_chunk != y->src_chunk ||
                x->nchunks != y->nchunks)
                DIFF("rank %u op %u differs", r, i);
        }
    }
#undef DIFF
    return true;
}

static bool encode_ok(const ccs_sched_t *s, uint8_t **buf, size_t *len)
{
    ccs_err_t err = { { 0 } };
    ccs_status_t st = ccs_format_encode(s, buf, len, &err);
    if (st != CCS_OK)
        fprintf(stderr, "encode failed: %s\n", ccs_err_msg(&err, st));
    return st == CCS_OK;
}

/* ---- CRC-32C ---- */

TEST(crc32c_check_value)
{
    static const struct {
        const char *what;
        uint8_t fill;   /* 0x00, 0xff, or 1 for 0, 1, 2, ... */
        size_t n;
        uint32_t want;
    } rfc3720[] = {   /* RFC 3720, B.4 */
        { "32 x 00", 0x00, 32, 0x8a9136aau },
        { "32 x ff", 0xff, 32, 0x62a8ab43u },
        { "00..1f", 1, 32, 0x46dd794eu },
    };
    uint8_t buf[32];

    CHECK_EQ_INT(ccs_crc32c(0, "123456789", 9), 0xe3069283u);
    CHECK_EQ_INT(ccs_crc32c(0, NULL, 0), 0);
    /* Incremental: any split gives the one-shot value. */
    for (size_t k = 0; k <= 9; k++)
        CHECK_EQ_INT(ccs_crc32c(ccs_crc32c(0, "123456789", k),
                                "123456789" + k, 9 - k), 0xe3069283u);
    for (size_t i = 0; i < sizeof(rfc3720) / sizeof(rfc3720[0]); i++) {
        for (size_t j = 0; j < rfc3720[i].n; j++)
            buf[j] = rfc3720[i].fill == 1 ? (uint8_t)j : rfc3720[i].fill;
        CHECK_MSG(ccs_crc32c(0, buf, rfc3720[i].n) == rfc3720[i].want,
                  "%s: 0x%08x", rfc3720[i].what,
                  ccs_crc32c(0, buf, rfc3720[i].n));
    }
}

TEST(crc32c_table_matches_bitwise)
{
    uint8_t buf[1000];
    uint32_t x = 12345;

    for (size_t i = 0; i < sizeof(buf); i++) {
        x = x * 1103515245u + 12345u;
        buf[i] = (uint8_t)(x >> 16);
    }
    for (size_t n = 0; n <= sizeof(buf); n += 37)
        CHECK_EQ_INT(ccs_crc32c(0, buf, n), crc32c_bitwise(buf, n));
    /* The SSE4.2 path (where the CPU has it) against the table, at every
     * alignment and tail length, and chained. */
    for (size_t off = 0; off < 8; off++)
        for (size_t n = 0; n + off <= 64; n++)
            CHECK_EQ_INT(ccs_crc32c(0, buf + off, n),
                         ccs_crc32c_sw(0, buf + off, n));
    CHECK_EQ_INT(ccs_crc32c(ccs_crc32c(0, buf, 333), buf + 333, 667),
                 ccs_crc32c_sw(0, buf, 1000));
}

/* ---- encoding ---- */

TEST(round_trip_table)
{
    for (size_t i = 0; i < NCASES; i++) {
        ccs_sched_t *s = sched_cases[i].make(), *d = NULL;
        uint8_t *b = NULL, *b2 = NULL;
        size_t len = 0, len2 = 0;
        ccs_err_t err = { { 0 } };
        char why[128] = "";

        CHECK_MSG(s != NULL, "%s: builder failed", sched_cases[i].name);
        if (s == NULL)
            continue;
        CHECK(encode_ok(s, &b, &len));
        /* The size a command checks up front is the size written. */
        {
            uint64_t size = 0;

            CHECK_STATUS(ccs_format_encoded_size(s, &size, &err), CCS_OK);
            CHECK_MSG(size == len, "%s: size %llu, encoded %zu",
                      sched_cases[i].name, (unsigned long long)size, len);
        }
        CHECK_STATUS(ccs_format_decode(b, len, &d, &err), CCS_OK);
        if (d != NULL) {
            CHECK_MSG(sched_equal(s, d, -1, why, sizeof(why)),
                      "%s: %s", sched_cases[i].name, why);
            /* Re-encoding the decoded schedule gives the same bytes. */
            CHECK(encode_ok(d, &b2, &len2));
            CHECK(len2 == len && memcmp(b, b2, len) == 0);
            /* A reader's schedule owns exact capacities. */
            CHECK_EQ_INT(d->step_cap, d->nsteps);
        } else {
            FAIL_AT("%s: %s", sched_cases[i].name, err.msg);
        }
        free(b);
        free(b2);
        ccs_sched_destroy(d);
        ccs_sched_destroy(s);
    }
}

/* Bytes on disk, checked against the spec (docs/format.md) rather than
 * against the encoder's own constants where it matters. */
TEST(layout_matches_spec)
{
    ccs_sched_t *s = mk_phased();
    uint8_t *b = NULL;
    size_t len = 0, plen;
    uint64_t dir, ops;

    CHECK(s != NULL && encode_ok(s, &b, &len));
    if (b == NULL) {
        ccs_sched_destroy(s);
        return;
    }
    plen = strlen(s->params);
    CHECK(memcmp(b, "CCSYNTH\0", 8) == 0);
    CHECK_EQ_INT(rd_le(b + 8, 2), 1);          /* major */
    CHECK_EQ_INT(rd_le(b + 10, 2), 0);         /* minor */
    CHECK_EQ_INT(rd_le(b + 12, 4), 104);       /* header size */
    CHECK_EQ_INT(rd_le(b + 16, 4), 1);         /* flags: params present */
    CHECK_EQ_INT(rd_le(b + 20, 4), 0);         /* allreduce */
    CHECK_EQ_INT(rd_le(b + 24, 4), 4);         /* nranks */
    CHECK_EQ_INT(rd_le(b + 28, 4), 3);         /* nchunks */
    CHECK_EQ_INT(rd_le(b + 32, 4), 6);         /* nscratch */
    CHECK_EQ_INT(rd_le(b + 36, 4), 3);         /* nsteps */
    CHECK_EQ_INT(rd_le(b + 40, 4), 2);         /* nphases */
    CHECK_EQ_INT(rd_le(b + 44, 4), 0xffffffffu); /* root -1 */
    CHECK_EQ_INT(rd_le(b + 48, 4), 3);         /* straggler */
    CHECK_EQ_INT(rd_le(b + 52, 4), plen);
    /* Fingerprint 0xdeadbeefcafef00d, least significant byte first. */
    CHECK(b[56] == 0x0d && b[57] == 0xf0 && b[58] == 0xfe &&
          b[59] == 0xca && b[63] == 0xde);
    CHECK_EQ_INT(rd_le(b + 64, 8), len);
    CHECK(memcmp(b + 72, "stragglar", 10) == 0);
    for (int i = 82; i < 104; i++)
        CHECK_EQ_INT(b[i], 0);
    CHECK(memcmp(b + 104, s->params, plen) == 0);
    CHECK(b[104 + plen] == 0 && b[105 + plen] == 1 && b[106 + plen] == 1);
    dir = 107 + plen;
    ops = dir + 4 * 16;
    CHECK_EQ_INT(rd_le(b + dir, 8), ops);      /* rank 0's stream */
    CHECK_EQ_INT(rd_le(b + dir + 8, 4), s->rank_nops[0]);
    CHECK_EQ_INT(rd_le(b + dir + 16, 8), ops + 24 * s->rank_nops[0]);
    /* Rank 0's first op: SEND in step 0 of IN[1] to rank 1. */
    CHECK_EQ_INT(rd_le(b + ops, 4), 0);
    CHECK(b[ops + 4] == CCS_OP_SEND && b[ops + 5] == CCS_BUF_IN);
    CHECK_EQ_INT(rd_le(b + ops + 8, 4), 1);
    CHECK_EQ_INT(rd_le(b + ops + 12, 4), 1);
    CHECK_EQ_INT(rd_le(b + ops + 20, 4), 1);
    CHECK(memcmp(b + len - 12, "CCS-END\0", 8) == 0);
    CHECK_EQ_INT(rd_le(b + len - 4, 4), crc32c_bitwise(b, len - 4));
    CHECK_EQ_INT(len, 107 + plen + 4 * 16 + 24 * ccs_sched_total_ops(s) + 12);
    free(b);
    ccs_sched_destroy(s);
}

TEST(deterministic)
{
    for (size_t i = 0; i < NCASES; i++) {
        ccs_sched_t *s = sched_cases[i].make(), *c = NULL;
        uint8_t *b1 = NULL, *b2 = NULL, *b3 = NULL;
        size_t l1 = 0, l2 = 0, l3 = 0;

        if (s == NULL)
            continue;
        CHECK(encode_ok(s, &b1, &l1) && encode_ok(s, &b2, &l2));
        CHECK(l1 == l2 && memcmp(b1, b2, l1) == 0);
        /* Same content, different capacities and junk after the name's
         * NUL: the bytes must not change. */
        CHECK_STATUS(ccs_sched_clone(s, &c, NULL), CCS_OK);
        if (c != NULL) {
            size_t n = strlen(c->algo);
            if (n + 2 < sizeof(c->algo))
                memset(c->algo + n + 1, 'j', sizeof(c->algo) - n - 1);
            c->algo[sizeof(c->algo) - 1] = '\0';
            CHECK(encode_ok(c, &b3, &l3));
            CHECK_MSG(l3 == l1 && memcmp(b1, b3, l1) == 0,
                      "%s: clone encodes differently", sched_cases[i].name);
        }
        free(b1);
        free(b2);
        free(b3);
        ccs_sched_destroy(c);
        ccs_sched_destroy(s);
    }
}

TEST(encode_rejects_invalid)
{
    ccs_sched_t *s = mk_ring4();
    uint8_t *b = NULL;
    size_t len = 0;
    ccs_err_t err = { { 0 } };
    int32_t peer;

    CHECK(s != NULL);
    if (s == NULL)
        return;
    peer = s->rank_ops[1][0].peer;
    s->rank_ops[1][0].peer = 1;   /* receive from itself */
    CHECK_STATUS(ccs_format_encode(s, &b, &len, &err), CCS_ERR_FORMAT);
    CHECK_STR_CONTAINS(err.msg, "itself");
    CHECK(b == NULL);
    s->rank_ops[1][0].peer = peer;
    CHECK_STATUS(ccs_format_encode(s, &b, &len, &err), CCS_OK);
    free(b);
    b = NULL;
    /* The writer refuses the algorithm names the reader refuses. */
    s->algo[1] = '\033';
    CHECK_STATUS(ccs_format_encode(s, &b, &len, &err), CCS_ERR_FORMAT);
    CHECK_STR_CONTAINS(err.msg, "not printable ASCII");
    CHECK(b == NULL);
    ccs_sched_destroy(s);
}

/* The up-front size check refuses what the encoder refuses, in the same
 * words, without a pass over the ops. */
TEST(encoded_size_limits)
{
    ccs_sched_t *s = mk_ring4();
    uint8_t *b = NULL;
    size_t len = 0;
    uint64_t size = 7;
    ccs_err_t err = { { 0 } }, err2 = { { 0 } };
    char *big = NULL;   /* owned here */

    CHECK(s != NULL);
    big = malloc(CCS_FORMAT_MAX_PARAMS + 2);
    CHECK(big != NULL);
    if (s == NULL || big == NULL)
        goto cleanup;
    memset(big, 'p', CCS_FORMAT_MAX_PARAMS + 1);
    big[CCS_FORMAT_MAX_PARAMS + 1] = '\0';
    CHECK_STATUS(ccs_sched_set_params(s, big, &err), CCS_OK);
    CHECK_STATUS(ccs_format_encoded_size(s, &size, &err), CCS_ERR_INVALID);
    CHECK_EQ_INT(size, 7);   /* untouched on failure */
    CHECK_STR_CONTAINS(err.msg, "more than the format's limit");
    CHECK_STATUS(ccs_format_encode(s, &b, &len, &err2), CCS_ERR_INVALID);
    CHECK(strcmp(err.msg, err2.msg) == 0);
    CHECK(b == NULL);
    CHECK_STATUS(ccs_format_encoded_size(NULL, &size, &err),
                 CCS_ERR_INVALID);
    CHECK_STATUS(ccs_format_encoded_size(s, NULL, &err), CCS_ERR_INVALID);
cleanup:
    free(big);
    ccs_sched_destroy(s);
}

/* ---- per-rank decoding ---- */

TEST(decode_rank_each)
{
    ccs_sched_t *s = mk_phased(), *d = NULL;
    uint8_t *b = NULL;
    size_t len = 0;
    ccs_err_t err = { { 0 } };
    char why[128] = "";

    CHECK(s != NULL && encode_ok(s, &b, &len));
    if (b == NULL) {
        ccs_sched_destroy(s);
        return;
    }
    for (uint32_t r = 0; r < s->nranks; r++) {
        d = NULL;
        CHECK_STATUS(ccs_format_decode_rank(b, len, r, &d, &err), CCS_OK);
        if (d != NULL)
            CHECK_MSG(sched_equal(s, d, r, why, sizeof(why)), "rank %u: %s",
                      r, why);
        ccs_sched_destroy(d);
    }
    d = NULL;
    CHECK_STATUS(ccs_format_decode_rank(b, len, 4, &d, &err),
                 CCS_ERR_MISMATCH);
    CHECK_STR_CONTAINS(err.msg, "4 ranks");
    CHECK(d == NULL);
    free(b);
    ccs_sched_destroy(s);
}

/* A rank reads the header, the directory and its own stream: damage in
 * another rank's stream does not stop it, but stops a full decode. */
TEST(decode_rank_ignores_other_streams)
{
    ccs_sched_t *s = mk_ring4(), *d = NULL;
    uint8_t *b = NULL;
    size_t len = 0;
    ccs_err_t err = { { 0 } };
    uint64_t dir, r1;

    CHECK(s != NULL && encode_ok(s, &b, &len));
    if (b == NULL) {
        ccs_sched_destroy(s);
        return;
    }
    dir = 104 + rd_le(b + 52, 4) + rd_le(b + 36, 4);
    r1 = rd_le(b + dir + 16, 8);
    b[r1 + 4] = 7;                 /* rank 1, op 0: kind 7 */
    fix_crc(b, len);
    CHECK_STATUS(ccs_format_decode(b, len, &d, &err), CCS_ERR_FORMAT);
    CHECK_STR_CONTAINS(err.msg, "rank 1 op 0");
    CHECK_STR_CONTAINS(err.msg, "field kind");
    CHECK_STATUS(ccs_format_decode_rank(b, len, 0, &d, &err), CCS_OK);
    ccs_sched_destroy(d);
    d = NULL;
    CHECK_STATUS(ccs_format_decode_rank(b, len, 1, &d, &err), CCS_ERR_FORMAT);
    CHECK(d == NULL);
    free(b);
    ccs_sched_destroy(s);
}

/* ---- corruption ---- */

TEST(truncated_every_length)
{
    ccs_sched_t *s = mk_ring4(), *d = NULL;
    uint8_t *b = NULL;
    size_t len = 0;
    ccs_err_t err = { { 0 } };

    CHECK(s != NULL && encode_ok(s, &b, &len));
    for (size_t n = 0; b != NULL && n < len; n++) {
        /* A fresh copy of exactly n bytes, so ASAN sees any overread. */
        uint8_t *cut = malloc(n ? n : 1);
        ccs_status_t st;
        memcpy(cut, b, n);
        st = ccs_format_decode(cut, n, &d, &err);
        CHECK_MSG(st != CCS_OK && d == NULL, "length %zu accepted", n);
        CHECK_MSG(err.msg[0] != '\0', "length %zu: no message", n);
        for (uint32_t r = 0; r < 4; r++)
            CHECK(ccs_format_decode_rank(cut, n, r, &d, NULL) != CCS_OK);
        free(cut);
    }
    free(b);
    ccs_sched_destroy(s);
}

TEST(every_bit_flip_detected)
{
    ccs_sched_t *s = mk_example(), *d = NULL;
    uint8_t *b = NULL;
    size_t len = 0;

    CHECK(s != NULL && encode_ok(s, &b, &len));
    for (size_t i = 0; b != NULL && i < len * 8; i++) {
        size_t at = i / 8;
        /* The envelope's own fields are named as such; every other
         * damaged byte is a checksum mismatch, however early or late the
         * reader's other checks would have caught it. */
        bool envelope = at < CCS_FOFF_MAJOR + 2 ||
                        (at >= CCS_FOFF_FILE_SIZE &&
                         at < CCS_FOFF_FILE_SIZE + 8) ||
                        (at >= len - CCS_FORMAT_TRAILER_SIZE &&
                         at < len - 4);
        ccs_status_t st;
        b[at] ^= (uint8_t)(1u << (i % 8));
        st = ccs_format_decode(b, len, &d, NULL);
        CHECK_MSG(st != CCS_OK && d == NULL, "flip of bit %zu accepted", i);
        CHECK_MSG(envelope || st == CCS_ERR_CHECKSUM,
                  "flip of bit %zu: status %d, not a checksum mismatch", i,
                  (int)st);
        b[at] ^= (uint8_t)(1u << (i % 8));
    }
    free(b);
    ccs_sched_destroy(s);
}

/* With the CRC recomputed after each change, the structural checks alone
 * stand between the reader and the bytes.  Every byte of the file gets
 * every single-bit flip and a full inversion.  Whatever the reader accepts
 * must be a valid schedule whose encoding is exactly those bytes (the
 * encoding is canonical), and a good share of the changes must be caught. */
TEST(flips_with_fixed_crc)
{
    ccs_sched_t *s = mk_ring4();
    uint8_t *b = NULL, *orig = NULL;
    size_t len = 0;
    uint64_t dir_end;
    unsigned tried = 0, rejected = 0, hdr_dir_rejected = 0, hdr_dir = 0;

    CHECK(s != NULL && encode_ok(s, &orig, &len));
    if (orig == NULL) {
        ccs_sched_destroy(s);
        return;
    }
    b = malloc(len);
    dir_end = 104 + rd_le(orig + 52, 4) + rd_le(orig + 36, 4) +
              16 * rd_le(orig + 24, 4);
    for (size_t i = 0; i < len - 4; i++) {
        for (int k = 0; k <= 8; k++) {
            ccs_sched_t *d = NULL;
            ccs_status_t st;
            memcpy(b, orig, len);
            b[i] ^= k < 8 ? (uint8_t)(1u << k) : 0xff;
            fix_crc(b, len);
            st = ccs_format_decode(b, len, &d, NULL);
            tried++;
            if (i < dir_end)
                hdr_dir++;
            if (st != CCS_OK) {
                rejected++;
                if (i < dir_end)
                    hdr_dir_rejected++;
                CHECK(d == NULL);
            } else {
                uint8_t *re = NULL;
                size_t rlen = 0;
                CHECK_STATUS(ccs_sched_validate(d, NULL), CCS_OK);
                CHECK(encode_ok(d, &re, &rlen));
                /* (A newer minor is read as 1.0 and re-encoded so.) */
                if (i != 10 && i != 11)
                    CHECK_MSG(rlen == len && memcmp(re, b, len) == 0,
                              "byte %zu ^ %d accepted but not canonical", i,
                              k);
                free(re);
            }
            ccs_sched_destroy(d);
        }
    }
    printf("flips_with_fixed_crc: %u of %u changes rejected (header and "
           "directory: %u of %u)\n", rejected, tried, hdr_dir_rejected,
           hdr_dir);
    /* Only the fingerprint, the params text, the algorithm name and a few
     * op fields may take other valid values. */
    CHECK(hdr_dir_rejected * 10 > hdr_dir * 6);
    free(b);
    free(orig);
    ccs_sched_destroy(s);
}

/* Several random bytes at once, CRC fixed: a cheap fuzzer, deterministic
 * (fixed LCG seed).  Same contract as above: reject cleanly, or accept a
 * valid schedule. */
TEST(random_mutations_fixed_crc)
{
    ccs_sched_t *s = mk_phased();
    uint8_t *b = NULL, *orig = NULL;
    size_t len = 0;
    uint32_t x = 2024;
    unsigned accepted = 0;

    CHECK(s != NULL && encode_ok(s, &orig, &len));
    if (orig == NULL) {
        ccs_sched_destroy(s);
        return;
    }
    b = malloc(len);
    for (int iter = 0; iter < 5000; iter++) {
        ccs_sched_t *d = NULL;
        ccs_status_t st;
        int nmut;

        memcpy(b, orig, len);
        x = x * 1103515245u + 12345u;
        nmut = 1 + (int)((x >> 16) % 4);
        for (int k = 0; k < nmut; k++) {
            x = x * 1103515245u + 12345u;
            size_t at = (x >> 8) % (len - 4);
            x = x * 1103515245u + 12345u;
            /* Half the time a small value, the other half any byte:
             * small values land in range more often. */
            b[at] = (uint8_t)((x >> 24) & 1 ? (x >> 16) & 0x07 : x >> 16);
        }
        fix_crc(b, len);
        st = ccs_format_decode(b, len, &d, NULL);
        CHECK((st == CCS_OK) == (d != NULL));
        if (st == CCS_OK) {
            accepted++;
            CHECK_STATUS(ccs_sched_validate(d, NULL), CCS_OK);
        }
        ccs_sched_destroy(d);
    }
    CHECK(accepted < 5000);
    free(b);
    free(orig);
    ccs_sched_destroy(s);
}

/* Where a mutation lands. */
enum { AT_HDR, AT_DIR, AT_OP, AT_STEPS, AT_END };

typedef struct mut {
    const char *what;
    int at;             /* AT_* */
    uint32_t rank;      /* AT_DIR / AT_OP: which rank's entry or stream */
    uint32_t off;       /* byte offset inside the header/entry/op/table;
                           AT_END: bytes appended */
    int width;          /* 1, 2, 4, 8 bytes; 0: special: AT_HDR fills the
                           algorithm name, AT_DIR adds value to the u64 */
    uint64_t value;
    bool fix_crc;
    ccs_status_t want;
    const char *msg;    /* must appear in the message */
    const char *msg2;   /* and this, when not NULL */
} mut_t;

static const mut_t mutations[] = {
    { "magic", AT_HDR, 0, 0, 1, 'X', true, CCS_ERR_FORMAT, "magic", NULL },
    { "major 2", AT_HDR, 0, 8, 2, 2, true, CCS_ERR_VERSION, "version_major",
      "2.0" },
    { "major 0", AT_HDR, 0, 8, 2, 0, true, CCS_ERR_VERSION, "major", NULL },
    { "major 0xffff", AT_HDR, 0, 8, 2, 0xffff, false, CCS_ERR_VERSION,
      "65535", NULL },
    { "newer minor", AT_HDR, 0, 10, 2, 7, true, CCS_OK, NULL, NULL },
    { "header_size", AT_HDR, 0, 12, 4, 108, true, CCS_ERR_FORMAT,
      "header_size", "108" },
    { "flags", AT_HDR, 0, 16, 4, 6, true, CCS_ERR_FORMAT, "flags", "0x6" },
    { "no-params flag", AT_HDR, 0, 16, 4, 0, true, CCS_ERR_FORMAT,
      "params_len", NULL },
    { "collective", AT_HDR, 0, 20, 4, 6, true, CCS_ERR_FORMAT, "collective",
      NULL },
    { "nranks 2^31", AT_HDR, 0, 24, 4, 0x80000000u, true, CCS_ERR_FORMAT,
      "nranks", "2147483648" },
    { "nranks max", AT_HDR, 0, 24, 4, 65536, true, CCS_ERR_FORMAT, "nranks",
      "directory" },
    { "nranks 0", AT_HDR, 0, 24, 4, 0, true, CCS_ERR_FORMAT, "nranks", NULL },
    { "nchunks 0", AT_HDR, 0, 28, 4, 0, true, CCS_ERR_FORMAT, "nchunks",
      NULL },
    { "nchunks huge", AT_HDR, 0, 28, 4, 0xffffffffu, true, CCS_ERR_FORMAT,
      "nchunks", NULL },
    { "nscratch huge", AT_HDR, 0, 32, 4, 0xffffffffu, true, CCS_ERR_FORMAT,
      "nscratch", NULL },
    { "nsteps huge", AT_HDR, 0, 36, 4, 0xffffffffu, true, CCS_ERR_FORMAT,
      "nsteps", NULL },
    { "nsteps max", AT_HDR, 0, 36, 4, 1u << 24, true, CCS_ERR_FORMAT,
      "nsteps", "step table" },
    { "nphases 0", AT_HDR, 0, 40, 4, 0, true, CCS_ERR_FORMAT, "nphases",
      NULL },
    { "root on allreduce", AT_HDR, 0, 44, 4, 2, true, CCS_ERR_FORMAT, "root",
      NULL },
    { "straggler", AT_HDR, 0, 48, 4, 4, true, CCS_ERR_FORMAT, "straggler",
      NULL },
    { "params_len huge", AT_HDR, 0, 52, 4, 0xfffffff0u, true, CCS_ERR_FORMAT,
      "params_len", NULL },
    { "params_len past end", AT_HDR, 0, 52, 4, 100000, true, CCS_ERR_FORMAT,
      "params_len", "past the end" },
    { "file_size", AT_HDR, 0, 64, 8, 1u << 20, true, CCS_ERR_FORMAT,
      "file_size", "truncated" },
    { "algo not terminated", AT_HDR, 0, 0, 0, 1, true, CCS_ERR_FORMAT,
      "algorithm", NULL },
    { "algo control byte", AT_HDR, 0, 73, 1, 0x1b, true, CCS_ERR_FORMAT,
      "field algorithm", "offset 73 is 0x1b, not printable ASCII" },
    { "algo space", AT_HDR, 0, 72, 1, ' ', true, CCS_ERR_FORMAT,
      "field algorithm", "not printable ASCII" },
    { "algo padding", AT_HDR, 0, 100, 1, 'x', true, CCS_ERR_FORMAT,
      "field algorithm", "padding byte at offset 100" },
    { "phase >= nphases", AT_STEPS, 0, 1, 1, 5, true, CCS_ERR_FORMAT,
      "step 1: phase 5", NULL },
    { "dir nops huge", AT_DIR, 0, 8, 4, 0xffffffffu, true, CCS_ERR_FORMAT,
      "nops", "rank 0" },
    { "dir nops off by one", AT_DIR, 2, 8, 4, 13, true, CCS_ERR_FORMAT,
      "rank 3", "overlaps" },
    { "dir overlap", AT_DIR, 1, 0, 8, 0, true, CCS_ERR_FORMAT, "overlaps",
      "rank 1" },
    { "dir gap", AT_DIR, 1, 0, 0, 24, true, CCS_ERR_FORMAT, "gap", "rank 1" },
    { "dir offset past end", AT_DIR, 3, 0, 8, 1ull << 40, true,
      CCS_ERR_FORMAT, "past the end", "rank 3" },
    { "dir reserved", AT_DIR, 0, 12, 4, 1, true, CCS_ERR_FORMAT, "reserved",
      NULL },
    { "op kind", AT_OP, 2, 4, 1, 9, true, CCS_ERR_FORMAT, "field kind",
      "rank 2 op 0" },
    { "op buffer", AT_OP, 2, 5, 1, 3, true, CCS_ERR_FORMAT, "field buffer",
      NULL },
    { "op reserved", AT_OP, 0, 7, 1, 1, true, CCS_ERR_FORMAT, "reserved",
      NULL },
    { "op peer range", AT_OP, 1, 8, 4, 4, true, CCS_ERR_FORMAT, "field peer",
      "recv_reduce into out[0] from peer 4 out of range 0..3" },
    { "op peer self", AT_OP, 1, 8, 4, 1, true, CCS_ERR_FORMAT, "field peer",
      "recv_reduce into out[0] from itself" },
    { "op step", AT_OP, 0, 0, 4, 0x7fffffffu, true, CCS_ERR_FORMAT,
      "field step", NULL },
    { "op chunk", AT_OP, 0, 12, 4, 0xffffffffu, true, CCS_ERR_FORMAT,
      "field chunk", "past the end" },
    { "op nchunks 0", AT_OP, 0, 20, 4, 0, true, CCS_ERR_FORMAT,
      "field nchunks", NULL },
    { "op nchunks huge", AT_OP, 0, 20, 4, 0xffffffffu, true, CCS_ERR_FORMAT,
      "field chunk", NULL },
    { "send with source", AT_OP, 0, 16, 4, 1, true, CCS_ERR_FORMAT,
      "src_chunk", NULL },
    { "checksum", AT_END, 0, 0, 0, 0, false, CCS_ERR_CHECKSUM, "checksum",
      "offset" },
    { "end marker", AT_END, 0, 0, 0, 1, true, CCS_ERR_FORMAT, "end marker",
      NULL },
    { "trailing bytes", AT_END, 0, 5, 0, 0, false, CCS_ERR_FORMAT,
      "5 trailing bytes", NULL },
    { "trailing with size", AT_END, 0, 8, 0, 1, true, CCS_ERR_FORMAT,
      "end marker", NULL },
};

/* Apply m to a copy of the ring4 encoding; returns the new length. */
static size_t apply_mut(const mut_t *m, uint8_t *b, size_t len)
{
    uint64_t dir = 104 + rd_le(b + 52, 4) + rd_le(b + 36, 4);
    uint8_t *p = NULL;

    switch (m->at) {
    case AT_HDR:
        p = b + m->off;
        break;
    case AT_STEPS:
        p = b + 104 + rd_le(b + 52, 4) + m->off;
        break;
    case AT_DIR:
        p = b + dir + 16 * m->rank + m->off;
        break;
    case AT_OP:
        p = b + rd_le(b + dir + 16 * m->rank, 8) + m->off;
        break;
    case AT_END:
        if (m->off > 0) {           /* append m->off bytes */
            memset(b + len, 0x5a, m->off);
            len += m->off;
            if (m->value)           /* and claim them in file_size */
                wr_le(b + 64, 8, len);
        } else if (m->value) {      /* break the end marker */
            b[len - 12] ^= 0x20;
        } else {                    /* break the checksum */
            b[len - 1] ^= 0x01;
        }
        break;
    }
    if (m->width > 0)
        wr_le(p, m->width, m->value);
    else if (m->at == AT_HDR)       /* fill the algorithm name */
        memset(b + 72, 'a', 32);
    else if (m->at == AT_DIR)       /* move a stream offset */
        wr_le(p, 8, rd_le(p, 8) + m->value);
    if (m->fix_crc)
        fix_crc(b, len);
    return len;
}

TEST(corruption_table)
{
    ccs_sched_t *s = mk_ring4();
    uint8_t *orig = NULL;
    size_t len = 0;

    CHECK(s != NULL && encode_ok(s, &orig, &len));
    for (size_t i = 0; orig != NULL &&
                       i < sizeof(mutations) / sizeof(mutations[0]); i++) {
        const mut_t *m = &mutations[i];
        uint8_t *b = malloc(len + 64);
        ccs_sched_t *d = NULL;
        ccs_err_t err = { { 0 } };
        ccs_status_t st;
        size_t n;
        uint8_t *exact;

        memcpy(b, orig, len);
        n = apply_mut(m, b, len);
        exact = malloc(n);          /* exact size: ASAN catches overreads */
        memcpy(exact, b, n);
        st = ccs_format_decode(exact, n, &d, &err);
        CHECK_MSG(st == m->want, "%s: status %s, want %s (%s)", m->what,
                  ccs_status_name(st), ccs_status_name(m->want), err.msg);
        if (m->msg != NULL)
            CHECK_MSG(strstr(err.msg, m->msg) != NULL,
                      "%s: message '%s' lacks '%s'", m->what, err.msg, m->msg);
        if (m->msg2 != NULL)
            CHECK_MSG(strstr(err.msg, m->msg2) != NULL,
                      "%s: message '%s' lacks '%s'", m->what, err.msg,
                      m->msg2);
        CHECK((st == CCS_OK) == (d != NULL));
        ccs_sched_destroy(d);
        free(exact);
        free(b);
    }
    free(orig);
    ccs_sched_destroy(s);
}

/* A newer minor version may append header fields: the reader skips them
 * using header_size. */
TEST(newer_minor_with_longer_header)
{
    ccs_sched_t *s = mk_ring4(), *d = NULL;
    uint8_t *b = NULL, *ext = NULL;
    size_t len = 0, xlen;
    ccs_err_t err = { { 0 } };
    char why[128] = "";
    uint64_t dir;
    const size_t extra = 8;

    CHECK(s != NULL && encode_ok(s, &b, &len));
    if (b == NULL) {
        ccs_sched_destroy(s);
        return;
    }
    xlen = len + extra;
    ext = malloc(xlen);
    memcpy(ext, b, 104);
    memset(ext + 104, 0xab, extra);
    memcpy(ext + 104 + extra, b + 104, len - 104);
    wr_le(ext + 10, 2, 3);                 /* minor 3 */
    wr_le(ext + 12, 4, 104 + extra);       /* header_size */
    wr_le(ext + 64, 8, xlen);              /* file_size */
    dir = 104 + extra + rd_le(ext + 52, 4) + rd_le(ext + 36, 4);
    for (uint32_t r = 0; r < 4; r++)
        wr_le(ext + dir + 16 * r, 8, rd_le(ext + dir + 16 * r, 8) + extra);
    fix_crc(ext, xlen);
    CHECK_STATUS(ccs_format_decode(ext, xlen, &d, &err), CCS_OK);
    if (d != NULL)
        CHECK_MSG(sched_equal(s, d, -1, why, sizeof(why)), "%s", why);
    ccs_sched_destroy(d);
    d = NULL;
    /* The same longer header under minor 0 is an error. */
    wr_le(ext + 10, 2, 0);
    fix_crc(ext, xlen);
    CHECK_STATUS(ccs_format_decode(ext, xlen, &d, &err), CCS_ERR_FORMAT);
    CHECK_STR_CONTAINS(err.msg, "header_size");
    free(ext);
    free(b);
    ccs_sched_destroy(s);
}

/* Absurd counts must be refused before any allocation sized by them.  In a
 * child process whose address space is capped at 256 MiB more than it
 * uses now, an allocation sized by nranks = 2^16 directory entries times
 * ops, or nops = 2^32 - 1 ops, would fail with CCS_ERR_NOMEM instead of
 * the CCS_ERR_FORMAT the reader owes.  (ASAN reserves terabytes of shadow
 * memory, so there the cap is skipped and only the statuses are checked.) */
TEST(absurd_counts_no_huge_alloc)
{
    static const struct { uint32_t at, rank, off; int width; uint64_t v; }
    cases[] = {
        { AT_HDR, 0, 24, 4, 65536 },          /* nranks: max */
        { AT_HDR, 0, 24, 4, 0x80000000u },    /* nranks: 2^31 */
        { AT_HDR, 0, 36, 4, 1u << 24 },       /* nsteps: max */
        { AT_HDR, 0, 52, 4, 1u << 20 },       /* params_len: max */
        { AT_DIR, 0, 8, 4, 0xffffffffu },     /* nops */
        { AT_DIR, 3, 8, 4, 0x10000000u },     /* nops */
    };
    ccs_sched_t *s = mk_ring4();
    uint8_t *orig = NULL;
    size_t len = 0;
    pid_t pid;
    int status = 0;

    CHECK(s != NULL && encode_ok(s, &orig, &len));
    if (orig == NULL) {
        ccs_sched_destroy(s);
        return;
    }
    fflush(NULL);
    pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        int bad = 0;
        if (!UNDER_ASAN) {
            /* Current size from /proc, plus 256 MiB. */
            unsigned long vm_kb = 0;
            char line[256];
            FILE *f = fopen("/proc/self/status", "r");
            while (f != NULL && fgets(line, sizeof(line), f) != NULL)
                if (sscanf(line, "VmSize: %lu kB", &vm_kb) == 1)
                    break;
            if (f != NULL)
                fclose(f);
            if (vm_kb > 0) {
                struct rlimit rl;
                rl.rlim_cur = rl.rlim_max =
                    (rlim_t)vm_kb * 1024 + (256ul << 20);
                setrlimit(RLIMIT_AS, &rl);
                /* The cap must bite, or this test proves nothing. */
                void *big = malloc((size_t)1 << 30);
                if (big != NULL) {
                    fprintf(stderr, "address-space cap not effective\n");
                    free(big);
                    bad++;
                }
            }
        }
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
            mut_t m = { "absurd", (int)cases[i].at, cases[i].rank,
                        cases[i].off, cases[i].width, cases[i].v, true,
                        CCS_ERR_FORMAT, NULL, NULL };
            uint8_t *b = malloc(len);
            ccs_sched_t *d = NULL;
            ccs_err_t err = { { 0 } };
            ccs_status_t st;
            memcpy(b, orig, len);
            apply_mut(&m, b, len);
            st = ccs_format_decode(b, len, &d, &err);
            if (st != CCS_ERR_FORMAT) {
                fprintf(stderr, "absurd case %zu: %s (%s)\n", i,
                        ccs_status_name(st), err.msg);
                bad++;
            }
            ccs_sched_destroy(d);
            free(b);
        }
        _exit(bad ? 1 : 0);
    }
    if (pid > 0) {
        CHECK(waitpid(pid, &status, 0) == pid);
        CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                  "child status 0x%x", status);
    }
    free(orig);
    ccs_sched_destroy(s);
}

/* ---- files ---- */

static char tmpdir[64];

static int count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;

    if (d == NULL)
        return -1;
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            n++;
    closedir(d);
    return n;
}

static bool file_equals(const char *path, const uint8_t *want, size_t len)
{
    uint8_t *got = NULL;
    size_t n = 0;
    bool same;

    if (ccs_format_load_file(path, &got, &n, NULL) != CCS_OK)
        return false;
    same = n == len && memcmp(got, want, len) == 0;
    free(got);
    return same;
}

TEST(write_read_file)
{
    ccs_sched_t *s = mk_phased(), *d = NULL;
    char path[128];
    uint8_t *b = NULL;
    size_t len = 0;
    ccs_err_t err = { { 0 } };
    struct stat sb;
    char why[128] = "";

    CHECK(s != NULL && encode_ok(s, &b, &len));
    snprintf(path, sizeof(path), "%s/a.ccs", tmpdir);
    CHECK_STATUS(ccs_format_write_file(s, path, &err), CCS_OK);
    CHECK(file_equals(path, b, len));
    CHECK(stat(path, &sb) == 0 && (sb.st_mode & 0777) == 0644);
    CHECK_STATUS(ccs_format_read_file(path, &d, &err), CCS_OK);
    if (d != NULL)
        CHECK_MSG(sched_equal(s, d, -1, why, sizeof(why)), "%s", why);
    CHECK_EQ_INT(count_entries(tmpdir), 1);  /* no temporary left */
    ccs_sched_destroy(d);
    unlink(path);
    free(b);
    ccs_sched_destroy(s);
}

/* A file whose op section lands 4-byte aligned is mapped, not read: its
 * schedule is the same, its ops can be written without reaching the file,
 * and a bad op in it gets the reader's words.  Other placements take the
 * read path.  The params length moves the op section byte by byte. */
TEST(read_file_mapped_or_read)
{
    static const char *pads[] = { "", "x", "xx", "xxx" };
    bool le = (union { uint16_t u; uint8_t b[2]; }){ 1 }.b[0] == 1;
    int mapped = 0;

    setenv("CCS_PLAN_MMAP", "1", 1);

    for (size_t k = 0; k < sizeof(pads) / sizeof(pads[0]); k++) {
        char params[64], path[128], why[128] = "";
        ccs_sched_t *s, *d = NULL;
        uint8_t *b = NULL;
        size_t len = 0, ops_off;
        ccs_err_t err = { { 0 } };
        FILE *f;

        snprintf(params, sizeof(params), "pad=%s\n", pads[k]);
        s = mk_ring(4, params, 0);
        CHECK(s != NULL && encode_ok(s, &b, &len));
        if (s == NULL || b == NULL) {
            ccs_sched_destroy(s);
            free(b);
            continue;
        }
        ops_off = CCS_FORMAT_HEADER_SIZE + strlen(params) + s->nsteps +
                  (size_t)s->nranks * CCS_FORMAT_DIR_ENTRY;
        snprintf(path, sizeof(path), "%s/m%zu.ccs", tmpdir, k);
        CHECK_STATUS(ccs_format_write_file(s, path, &err), CCS_OK);
        CHECK_STATUS(ccs_format_read_file(path, &d, &err), CCS_OK);
        if (d != NULL) {
            CHECK_MSG(sched_equal(s, d, -1, why, sizeof(why)), "%s", why);
            CHECK_MSG(d->op_store_mapped == (le && ops_off % 4 == 0),
                      "pad %zu: op section at %zu, mapped %d", k, ops_off,
                      (int)d->op_store_mapped);
            mapped += d->op_store_mapped;
            d->rank_ops[1][0].chunk ^= 1;   /* private: the file keeps it */
            CHECK(file_equals(path, b, len));
            ccs_sched_destroy(d);
            d = NULL;
        }
        /* A nonzero reserved byte in the first op, checksum fixed. */
        b[ops_off + 7] = 1;
        fix_crc(b, len);
        f = fopen(path, "wb");
        CHECK(f != NULL);
        if (f != NULL) {
            CHECK(fwrite(b, 1, len, f) == len);
            fclose(f);
        }
        CHECK_STATUS(ccs_format_read_file(path, &d, &err), CCS_ERR_FORMAT);
        CHECK_STR_CONTAINS(err.msg, "reserved");
        CHECK(d == NULL);
        unlink(path);
        free(b);
        ccs_sched_destroy(s);
    }
    CHECK(!le || mapped == 1);

    /* Without the opt-in the file is read, whatever its layout. */
    unsetenv("CCS_PLAN_MMAP");
    {
        ccs_sched_t *s = NULL, *d = NULL;
        ccs_err_t err = { { 0 } };
        char path[128];

        snprintf(path, sizeof(path), "%s/unmapped.ccs", tmpdir);
        s = mk_ring(4, "", 0);
        CHECK(s != NULL);
        if (s != NULL) {
            CHECK_STATUS(ccs_format_write_file(s, path, &err), CCS_OK);
            CHECK_STATUS(ccs_format_read_file(path, &d, &err), CCS_OK);
            CHECK(d != NULL && !d->op_store_mapped);
            ccs_sched_destroy(d);
            ccs_sched_destroy(s);
            unlink(path);
        }
    }
}

TEST(write_is_atomic)
{
    ccs_sched_t *a = mk_ring4(), *bad = mk_ring4(), *c = mk_alltoall();
    char path[128], missing[160];
    uint8_t *ba = NULL, *bc = NULL;
    size_t la = 0, lc = 0;
    ccs_err_t err = { { 0 } };

    CHECK(a && bad && c && encode_ok(a, &ba, &la) && encode_ok(c, &bc, &lc));
    if (ba == NULL || bc == NULL)
        goto done;
    snprintf(path, sizeof(path), "%s/sched.ccs", tmpdir);
    snprintf(missing, sizeof(missing), "%s/no/such/dir/x.ccs", tmpdir);

    /* A missing directory: a clean I/O error naming the path, no debris. */
    CHECK_STATUS(ccs_format_write_file(a, missing, &err), CCS_ERR_IO);
    CHECK_STR_CONTAINS(err.msg, missing);
    CHECK_EQ_INT(count_entries(tmpdir), 0);

    CHECK_STATUS(ccs_format_write_file(a, path, &err), CCS_OK);
    /* A schedule that cannot be encoded leaves the old file untouched. */
    bad->rank_ops[0][0].nchunks = 0;
    CHECK_STATUS(ccs_format_write_file(bad, path, &err), CCS_ERR_FORMAT);
    CHECK_STR_CONTAINS(err.msg, path);
    CHECK(file_equals(path, ba, la));
    CHECK_EQ_INT(count_entries(tmpdir), 1);
    /* A target that is a directory: refused, nothing created. */
    {
        char sub[160];
        snprintf(sub, sizeof(sub), "%s/adir", tmpdir);
        CHECK(mkdir(sub, 0755) == 0);
        CHECK_STATUS(ccs_format_write_file(a, sub, &err), CCS_ERR_IO);
        CHECK_STR_CONTAINS(err.msg, "is a directory");
        CHECK_EQ_INT(count_entries(tmpdir), 2);
        rmdir(sub);
    }
    /* A good write replaces it completely. */
    CHECK_STATUS(ccs_format_write_file(c, path, &err), CCS_OK);
    CHECK(file_equals(path, bc, lc));
    CHECK_EQ_INT(count_entries(tmpdir), 1);
    unlink(path);
done:
    free(ba);
    free(bc);
    ccs_sched_destroy(a);
    ccs_sched_destroy(bad);
    ccs_sched_destroy(c);
}

/* The one output writer (runtime/ccs_out.h): what each kind of target
 * becomes.  Non-regular targets are written through and stay what they
 * were; a write that fails leaves a regular target as it was. */
TEST(output_targets)
{
    static const uint8_t data[] = "CCSYNTH schedule bytes\n";
    char path[160], link[160], dev[160], fifo[160];
    struct stat sb;
    ccs_err_t err = { { 0 } };
    pid_t pid;
    int status = -1;

    snprintf(path, sizeof(path), "%s/plain", tmpdir);
    snprintf(link, sizeof(link), "%s/link", tmpdir);
    snprintf(dev, sizeof(dev), "%s/null", tmpdir);
    snprintf(fifo, sizeof(fifo), "%s/fifo", tmpdir);

    /* Regular: new, then replaced; mode 0644; no temporary left. */
    CHECK_STATUS(ccs_out_write_all(path, "old", 3, &err), CCS_OK);
    CHECK_STATUS(ccs_out_write_all(path, data, sizeof(data), &err), CCS_OK);
    CHECK(file_equals(path, data, sizeof(data)));
    CHECK(stat(path, &sb) == 0 && (sb.st_mode & 0777) == 0644);
    CHECK_EQ_INT(count_entries(tmpdir), 1);

    /* A symlink to a regular file: the file is replaced, the link kept. */
    CHECK(symlink(path, link) == 0);
    CHECK_STATUS(ccs_out_write_all(link, "new", 3, &err), CCS_OK);
    CHECK(lstat(link, &sb) == 0 && S_ISLNK(sb.st_mode));
    CHECK(file_equals(path, (const uint8_t *)"new", 3));
    unlink(link);

    /* A copy of /dev/null (mknod needs root; /dev/null itself otherwise,
     * which an unprivileged rename could not replace anyway). */
    if (mknod(dev, S_IFCHR | 0666, makedev(1, 3)) != 0)
        snprintf(dev, sizeof(dev), "/dev/null");
    CHECK_STATUS(ccs_out_write_all(dev, data, sizeof(data), &err), CCS_OK);
    CHECK(stat(dev, &sb) == 0 && S_ISCHR(sb.st_mode));
    if (strncmp(dev, tmpdir, strlen(tmpdir)) == 0)
        unlink(dev);

    /* A FIFO: a child reads it; every byte arrives, the FIFO stays. */
    CHECK(mkfifo(fifo, 0600) == 0);
    pid = fork();
    if (pid == 0) {
        char got[256];
        FILE *f = fopen(fifo, "r");
        size_t n = f ? fread(got, 1, sizeof(got), f) : 0;
        _exit(n == sizeof(data) && memcmp(got, data, n) == 0 ? 0 : 1);
    }
    CHECK_STATUS(ccs_out_write_all(fifo, data, sizeof(data), &err), CCS_OK);
    CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
          WEXITSTATUS(status) == 0);
    CHECK(stat(fifo, &sb) == 0 && S_ISFIFO(sb.st_mode));
    unlink(fifo);

    /* A full device: an I/O error naming it. */
    CHECK_STATUS(ccs_out_write_all("/dev/full", data, sizeof(data), &err),
                 CCS_ERR_IO);
    CHECK_STR_CONTAINS(err.msg, "/dev/full");
    CHECK_STR_CONTAINS(err.msg, "No space left");

    /* A writer that gives up: the regular target keeps its old bytes. */
    {
        ccs_out_t *o = NULL;
        CHECK_STATUS(ccs_out_open(path, &o, &err), CCS_OK);
        fputs("half a fi", ccs_out_stream(o));
        ccs_out_abort(o);
        CHECK(file_equals(path, (const uint8_t *)"new", 3));
        CHECK_EQ_INT(count_entries(tmpdir), 1);
    }
    unlink(path);
}

TEST(read_file_errors)
{
    ccs_sched_t *s = mk_ring4(), *d = NULL;
    char path[128];
    ccs_err_t err = { { 0 } };
    FILE *f;

    snprintf(path, sizeof(path), "%s/none.ccs", tmpdir);
    CHECK_STATUS(ccs_format_read_file(path, &d, &err), CCS_ERR_IO);
    CHECK_STR_CONTAINS(err.msg, path);
    CHECK_STATUS(ccs_format_read_file(tmpdir, &d, &err), CCS_ERR_IO);
    CHECK_STR_CONTAINS(err.msg, "not a regular file");
    /* Empty and damaged files: the message starts with the path. */
    f = fopen(path, "wb");
    CHECK(f != NULL);
    if (f != NULL)
        fclose(f);
    CHECK_STATUS(ccs_format_read_file(path, &d, &err), CCS_ERR_FORMAT);
    CHECK(strncmp(err.msg, path, strlen(path)) == 0);
    CHECK_STATUS(ccs_format_write_file(s, path, &err), CCS_OK);
    f = fopen(path, "r+b");
    if (f != NULL) {
        fseek(f, 200, SEEK_SET);
        fputc(0x42, f);
        fclose(f);
    }
    CHECK_STATUS(ccs_format_read_file(path, &d, &err), CCS_ERR_CHECKSUM);
    CHECK(strncmp(err.msg, path, strlen(path)) == 0);
    CHECK(d == NULL);
    unlink(path);
    ccs_sched_destroy(s);
}

/* ---- a file read while it is decoded ---- */

/* A ring of this many ranks encodes to about 15 MB: a file large enough
 * that the reader streams it (docs/format.md, "Reading"), many reads of
 * it behind the first. */
#define STREAM_RANKS 400u

static bool write_bytes(const char *path, const uint8_t *b, size_t len)
{
    FILE *f = fopen(path, "wb");
    bool ok = f != NULL && fwrite(b, 1, len, f) == len;

    if (f != NULL)
        ok &= fclose(f) == 0;
    return ok;
}

/* What the hook saw: ranks in order, and whether it was told to let go. */
typedef struct seen {
    uint32_t next;
    bool in_order, reset;
    const char *shrink_path;  /* truncate this file at rank 1 ... */
    off_t shrink_to;          /* ... to this many bytes */
} seen_t;

static void seen_hook(void *ctx, ccs_sched_t *s, uint32_t rank)
{
    seen_t *v = ctx;

    if (rank == CCS_FORMAT_HOOK_RESET) {
        v->reset = s == NULL;
        return;
    }
    v->in_order &= rank == v->next;
    v->next = rank + 1;
    if (rank == 1 && v->shrink_path != NULL &&
        truncate(v->shrink_path, v->shrink_to) != 0)
        v->in_order = false;
}

/* A large file, intact and damaged in each section (checksum fixed or
 * not), and cut short: reading it from the file gives the status and
 * words (after the path) that decoding the same bytes from memory gives,
 * the same schedule when it is intact, and a hook that sees every rank in
 * order and is told to let go whenever the reader fails after feeding it. */
TEST(streamed_read_same_as_decode)
{
    ccs_sched_t *s = mk_ring(STREAM_RANKS, "", 0);
    uint8_t *b = NULL;
    size_t len = 0;
    uint64_t ops_off, dir_off, steps_off;
    char path[128];
    /* Offsets from the start (from_end false) or from the end of the
     * file; 0 xor: no change. */
    static const struct {
        const char *what;
        bool from_end;
        uint64_t off;     /* in the section named below, or from the end */
        int section;      /* 0 header, 1 step table, 2 directory, 3 ops */
        uint8_t xor;
        bool fix;         /* recompute the checksum */
        size_t cut;       /* bytes cut off the end of the file */
    } table[] = {
        { "intact", false, 0, 0, 0, false, 0 },
        { "op byte, checksum stale", false, 24 * 300000 + 20, 3, 1, false, 0 },
        { "first op reserved", false, 7, 3, 1, true, 0 },
        { "op in the middle: nchunks", false, 24 * 320000 + 20, 3, 1, true, 0 },
        { "last op: peer", true, 12 + 24 - 8, 0, 2, true, 0 },
        { "last op: step", true, 12 + 24, 0, 1, true, 0 },
        { "end marker", true, 12, 0, 0x20, true, 0 },
        { "stored checksum", true, 1, 0, 0x80, false, 0 },
        { "step table", false, 5, 1, 0x7f, true, 0 },
        { "directory reserved", false, 16 * 200 + 12, 2, 1, true, 0 },
        { "header nsteps", false, 36, 0, 1, true, 0 },
        { "one byte short", false, 0, 0, 0, false, 1 },
        { "half the file", false, 0, 0, 0, false, 7500000 },
    };

    CHECK(s != NULL && encode_ok(s, &b, &len));
    if (s == NULL || b == NULL) {
        ccs_sched_destroy(s);
        free(b);
        return;
    }
    CHECK(len > 2 * 7500000);
    steps_off = rd_le(b + 12, 4) + rd_le(b + 52, 4);
    dir_off = steps_off + rd_le(b + 36, 4);
    ops_off = dir_off + rd_le(b + 24, 4) * CCS_FORMAT_DIR_ENTRY;
    snprintf(path, sizeof(path), "%s/stream.ccs", tmpdir);
    for (size_t t = 0; t < sizeof(table) / sizeof(table[0]); t++) {
        const uint64_t base[] = { 0, steps_off, dir_off, ops_off };
        uint64_t at = table[t].from_end ? len - table[t].off
                                        : base[table[t].section] +
                                              table[t].off;
        size_t n = len - table[t].cut;
        uint32_t crc = (uint32_t)rd_le(b + len - 4, 4);
        ccs_sched_t *dm = NULL, *df = NULL;
        ccs_err_t em = { { 0 } }, ef = { { 0 } };
        char want[CCS_ERR_MSG_MAX + 160];
        seen_t v = { 0, true, false, NULL, 0 };
        ccs_status_t sm, sf;

        b[at] ^= table[t].xor;
        if (table[t].fix)
            fix_crc(b, len);
        CHECK(write_bytes(path, b, n));
        sm = ccs_format_decode(b, n, &dm, &em);
        sf = ccs_format_read_file_hook(path, seen_hook, &v, &df, &ef);
        snprintf(want, sizeof(want), "%s: %s", path, ccs_err_msg(&em, sm));
        CHECK_MSG(sm == sf && (sm == CCS_OK || strcmp(ef.msg, want) == 0),
                  "%s: from memory %d \"%s\", from the file %d \"%s\"",
                  table[t].what, (int)sm, em.msg, (int)sf, ef.msg);
        CHECK_MSG(v.in_order && (sf == CCS_OK
                                     ? v.next == STREAM_RANKS && !v.reset
                                     : v.reset == (v.next > 0)),
                  "%s: hook saw %u ranks, in order %d, reset %d",
                  table[t].what, v.next, (int)v.in_order, (int)v.reset);
        if (t == 0) {
            char why[128] = "";
            CHECK_STATUS(sf, CCS_OK);
            if (df != NULL)
                CHECK_MSG(sched_equal(s, df, -1, why, sizeof(why)), "%s",
                          why);
        } else {
            CHECK_MSG((sf == CCS_OK) == (df != NULL) &&
                          (sf != CCS_OK || table[t].fix),
                      "%s: status %d", table[t].what, (int)sf);
        }
        ccs_sched_destroy(dm);
        ccs_sched_destroy(df);
        b[at] ^= table[t].xor;
        wr_le(b + len - 4, 4, crc);
    }
    unlink(path);
    free(b);
    ccs_sched_destroy(s);
}

/* A file that shrinks while it is being read (here: cut by the hook after
 * the reader has handed over rank 1) fails with the read's own words --
 * how far it got and how long the file was -- not with whatever the
 * checks of the part read would say, and the hook is told to let go. */
TEST(streamed_read_file_shrinks)
{
    ccs_sched_t *s = mk_ring(STREAM_RANKS, "", 0), *d = NULL;
    uint8_t *b = NULL;
    size_t len = 0;
    char path[128], want[320];
    ccs_err_t err = { { 0 } };
    seen_t v = { 0, true, false, NULL, 0 };

    CHECK(s != NULL && encode_ok(s, &b, &len));
    if (s == NULL || b == NULL) {
        ccs_sched_destroy(s);
        free(b);
        return;
    }
    snprintf(path, sizeof(path), "%s/shrinks.ccs", tmpdir);
    CHECK(write_bytes(path, b, len));
    v.shrink_path = path;
    v.shrink_to = (off_t)(len - 1000);
    CHECK_STATUS(ccs_format_read_file_hook(path, seen_hook, &v, &d, &err),
                 CCS_ERR_IO);
    snprintf(want, sizeof(want), "%s: file shrank while being read (%zu of "
             "%zu bytes)", path, len - 1000, len);
    CHECK_MSG(strcmp(err.msg, want) == 0, "got \"%s\", want \"%s\"",
              err.msg, want);
    CHECK(d == NULL && v.in_order && v.reset && v.next >= 2);
    unlink(path);
    free(b);
    ccs_sched_destroy(s);
}

/* `--write NAME FILE`: write one of sched_cases to FILE (for
 * tests/e2e/show_cli.sh and the worked example of docs/format.md). */
static int write_case(const char *name, const char *path)
{
    for (size_t i = 0; i < NCASES; i++) {
        if (strcmp(sched_cases[i].name, name) == 0) {
            ccs_sched_t *s = sched_cases[i].make();
            ccs_err_t err = { { 0 } };
            ccs_status_t st = s ? ccs_format_write_file(s, path, &err)
                                : CCS_ERR_INTERNAL;
            ccs_sched_destroy(s);
            if (st != CCS_OK)
                fprintf(stderr, "%s\n", ccs_err_msg(&err, st));
            return st == CCS_OK ? 0 : 1;
        }
    }
    fprintf(stderr, "unknown schedule '%s'\n", name);
    return 2;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--write-example") == 0)
        return write_case("example", argv[2]);
    if (argc == 4 && strcmp(argv[1], "--write") == 0)
        return write_case(argv[2], argv[3]);
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/ccs_test_format_XXXXXX");
    if (mkdtemp(tmpdir) == NULL) {
        perror("mkdtemp");
        return 1;
    }
    RUN(crc32c_check_value);
    RUN(crc32c_table_matches_bitwise);
    RUN(round_trip_table);
    RUN(layout_matches_spec);
    RUN(deterministic);
    RUN(encode_rejects_invalid);
    RUN(encoded_size_limits);
    RUN(decode_rank_each);
    RUN(decode_rank_ignores_other_streams);
    RUN(truncated_every_length);
    RUN(every_bit_flip_detected);
    RUN(flips_with_fixed_crc);
    RUN(random_mutations_fixed_crc);
    RUN(corruption_table);
    RUN(newer_minor_with_longer_header);
    RUN(absurd_counts_no_huge_alloc);
    RUN(write_read_file);
    RUN(read_file_mapped_or_read);
    RUN(write_is_atomic);
    RUN(output_targets);
    RUN(read_file_errors);
    RUN(streamed_read_same_as_decode);
    RUN(streamed_read_file_shrinks);
    rmdir(tmpdir);
    return TEST_SUMMARY();
}
