/*
 * test_runtime_plan.c - plan loading and the checks made before any data
 * moves: format errors from the reader, unmatched or mis-sized transfers,
 * buffers outside the collective's valid ranges, plan/communicator/call
 * mismatches, and messages that say what is wrong.
 *
 *   test_runtime_plan                     the tests
 *   test_runtime_plan --bench-load F N    load plan file F N times: median
 *                                         wall and CPU MB/s of file, and
 *                                         reading F alone for reference
 *                                         (scripts/bench-runtime.sh)
 */
#include <pthread.h>
#include <sys/wait.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "rt_fixtures.h"
#include "../../runtime/ccs_int.h"
#include "../../runtime/crc32c.h"
#include "../../runtime/format.h"

TEST(load_mem_roundtrip_and_info)
{
    ccs_sched_t *s = fx_straggler(4, 3);
    uint8_t *buf = NULL;
    size_t len = 0;
    ccs_plan_t *p = NULL;
    ccs_plan_info_t in;

    CHECK(s != NULL);
    CHECK_STATUS(ccs_format_encode(s, &buf, &len, NULL), CCS_OK);
    CHECK_STATUS(ccs_plan_load_mem(buf, len, &p), CCS_OK);
    CHECK_STATUS(ccs_plan_get_info(p, &in), CCS_OK);
    CHECK_EQ_INT(in.coll, CCS_COLL_ALLREDUCE);
    CHECK_EQ_INT(in.nranks, 4);
    CHECK_EQ_INT(in.nchunks, 3);
    CHECK_EQ_INT(in.nphases, 2);
    CHECK_EQ_INT(in.straggler, 3);
    CHECK_EQ_INT(ccs_plan_straggler(p), 3);
    CHECK_EQ_INT(ccs_plan_nranks(p), 4);
    CHECK(strcmp(in.algo, "fx-straggler") == 0);
    ccs_plan_destroy(p);
    ccs_plan_destroy(NULL);
    free(buf);
    ccs_sched_destroy(s);
}

TEST(load_errors_have_messages)
{
    ccs_sched_t *s = fx_ring_allreduce(2, 1);
    uint8_t *buf = NULL;
    size_t len = 0;
    ccs_plan_t *p = NULL;
    char msg[512];

    CHECK_STATUS(ccs_format_encode(s, &buf, &len, NULL), CCS_OK);
    /* Flip a byte in the op streams: the checksum catches it. */
    buf[len - 20] ^= 0x40;
    CHECK(ccs_plan_load_mem_msg(buf, len, &p, msg, sizeof(msg)) != CCS_OK);
    CHECK(p == NULL);
    CHECK(msg[0] != '\0');
    buf[len - 20] ^= 0x40;
    /* A new major version is refused. */
    buf[8] = 9;
    CHECK_STATUS(ccs_plan_load_mem_msg(buf, len, &p, msg, sizeof(msg)),
                 CCS_ERR_VERSION);
    CHECK_STR_CONTAINS(msg, "format version 9.");
    CHECK_STR_CONTAINS(msg, "knows major 1 only");
    buf[8] = 1;
    CHECK_STATUS(ccs_plan_load_mem(buf, len / 2, &p), CCS_ERR_FORMAT);
    CHECK_STATUS(ccs_plan_load_file_msg("/nonexistent/x.ccs", &p, msg,
                                        sizeof(msg)), CCS_ERR_IO);
    CHECK_STR_CONTAINS(msg, "/nonexistent/x.ccs");
    CHECK_STATUS(ccs_plan_load_mem(NULL, 0, &p), CCS_ERR_INVALID);
    CHECK(p == NULL);
    free(buf);
    ccs_sched_destroy(s);
}

/* Broken schedules and the message each must produce. */
TEST(plan_rejects_unrunnable_schedules)
{
    static const struct {
        int kind;
        const char *want;
    } cases[] = {
        { 0, "step 0, rank 0: send of in[0..1] to rank 1 has no matching "
             "receive" },
        { 1, "step 0, rank 1: recv from rank 0 into out[0] has no matching "
             "send" },
        { 2, "send of in[0..1] (2 chunks) to rank 1 is received by recv into "
             "out[0] (1 chunk): size mismatch" },
        { 3, "not part of this rank's output" },
        { 4, "holds no input" },
        /* The verifier's hazard rules, in the verifier's words. */
        { 5, "step 0, rank 0: copy of in[1] into out[1]: out[1] is written "
             "twice in this step" },
        { 6, "step 0, rank 0: copy of in[0] into out[0]: out[0] is read and "
             "written in the same step" },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        ccs_sched_t *s = NULL;
        ccs_plan_t *p = NULL;
        ccs_err_t e;
        uint32_t step;
        ccs_coll_t coll = cases[i].kind == 3 ? CCS_COLL_REDUCESCATTER
                        : cases[i].kind == 4 ? CCS_COLL_ALLGATHER
                                             : CCS_COLL_ALLREDUCE;
        ccs_op_t snd = { .kind = CCS_OP_SEND, .buf = CCS_BUF_IN, .peer = 1,
                         .nchunks = 2 };
        ccs_op_t rcv = { .kind = CCS_OP_RECV, .buf = CCS_BUF_OUT, .peer = 0,
                         .nchunks = 1 };

        ccs_err_clear(&e);
        CHECK_STATUS(ccs_sched_create(coll, 2, 2, "broken", &s, NULL),
                     CCS_OK);
        ccs_sched_add_step(s, 0, &step, NULL);
        switch (cases[i].kind) {
        case 0: ccs_sched_add_op(s, 0, &snd, NULL); break;
        case 1: ccs_sched_add_op(s, 1, &rcv, NULL); break;
        case 2:
            ccs_sched_add_op(s, 0, &snd, NULL);
            ccs_sched_add_op(s, 1, &rcv, NULL);
            break;
        case 3: /* rank 0 writes OUT chunk 1 (rank 1's block) */
            ccs_sched_local(s, step, 0, CCS_BUF_OUT, 1, CCS_BUF_IN, 1, 1,
                            false, NULL);
            break;
        case 4: /* rank 0 reads IN chunk 1 (rank 1's block) */
            ccs_sched_local(s, step, 0, CCS_BUF_OUT, 1, CCS_BUF_IN, 1, 1,
                            false, NULL);
            break;
        case 5: /* two copies into OUT[1] in one step */
            ccs_sched_local(s, step, 0, CCS_BUF_OUT, 0, CCS_BUF_IN, 0, 2,
                            false, NULL);
            ccs_sched_local(s, step, 0, CCS_BUF_OUT, 1, CCS_BUF_IN, 1, 1,
                            false, NULL);
            break;
        case 6: /* OUT[0..1] <- IN, and OUT[1] <- OUT[0] in the same step */
            ccs_sched_local(s, step, 0, CCS_BUF_OUT, 0, CCS_BUF_IN, 0, 2,
                            false, NULL);
            ccs_sched_local(s, step, 0, CCS_BUF_OUT, 1, CCS_BUF_OUT, 0, 1,
                            false, NULL);
            break;
        }
        CHECK_STATUS(ccs_plan_from_sched(s, &p, &e), CCS_ERR_FORMAT);
        CHECK(p == NULL);
        CHECK_STR_CONTAINS(e.msg, cases[i].want);
        ccs_sched_destroy(s);
    }
}

/* A 12 KB file that loaded before: 2 ranks, 2^24 chunks, one step in
 * which rank 0 posts 257 RECV_REDUCEs of all chunks from rank 1 (and rank 1
 * the 257 sends).  The staging sum wrapped in 32 bits (257 x 2^24 chunks)
 * and a run wrote about 4 GiB into a 16 MiB arena.  The loader now refuses
 * it with the verifier's hazard message, and would refuse the sum itself
 * were the writes disjoint; a run is never reached. */
TEST(plan_rejects_overlapping_reductions)
{
    ccs_sched_t *s = NULL;
    ccs_plan_t *p = NULL;
    ccs_err_t e;
    uint8_t *buf = NULL;
    size_t len = 0;
    uint32_t step;
    char msg[512];

    ccs_err_clear(&e);
    CHECK_STATUS(ccs_sched_create(CCS_COLL_ALLREDUCE, 2, CCS_MAX_CHUNKS,
                                  "overlap", &s, NULL), CCS_OK);
    CHECK_STATUS(ccs_sched_add_step(s, 0, &step, NULL), CCS_OK);
    for (int k = 0; k < 257; k++)
        CHECK_STATUS(ccs_sched_xfer(s, step, 1, CCS_BUF_IN, 0, 0,
                                    CCS_BUF_OUT, 0, CCS_MAX_CHUNKS, true,
                                    NULL), CCS_OK);
    CHECK_STATUS(ccs_format_encode(s, &buf, &len, NULL), CCS_OK);
    CHECK(len < 16384);
    CHECK_STATUS(ccs_plan_load_mem_msg(buf, len, &p, msg, sizeof(msg)),
                 CCS_ERR_FORMAT);
    CHECK(p == NULL);
    CHECK_STR_CONTAINS(msg, "step 0, rank 0: recv_reduce from rank 1 into "
                            "out[0]: out[0] is written twice in this step");
    free(buf);
    ccs_sched_destroy(s);
}

/* Transfers of one step that break no hazard rule but whose staging adds
 * up past 32 bits: rank 0 sends all 2^24 chunks to each of 257 peers.  The
 * sum is taken in 64 bits and refused, never wrapped. */
TEST(plan_rejects_staging_past_32_bits)
{
    ccs_sched_t *s = NULL;
    ccs_plan_t *p = NULL;
    ccs_err_t e;
    uint32_t step;

    ccs_err_clear(&e);
    CHECK_STATUS(ccs_sched_create(CCS_COLL_ALLREDUCE, 258, CCS_MAX_CHUNKS,
                                  "stage", &s, NULL), CCS_OK);
    CHECK_STATUS(ccs_sched_add_step(s, 0, &step, NULL), CCS_OK);
    for (uint32_t k = 1; k < 258; k++)
        CHECK_STATUS(ccs_sched_xfer(s, step, 0, CCS_BUF_IN, 0, k,
                                    CCS_BUF_OUT, 0, CCS_MAX_CHUNKS, false,
                                    NULL), CCS_OK);
    CHECK_STATUS(ccs_plan_from_sched(s, &p, &e), CCS_ERR_FORMAT);
    CHECK(p == NULL);
    CHECK_STR_CONTAINS(e.msg, "step 0, rank 0: 4311744512 chunks in "
                              "transfer in one step");
    ccs_sched_destroy(s);
}

/* A 65 KB file (4096 ranks, 2^24 chunks, no ops) took 17 s to load: the
 * in-place analysis reset a 2^24-entry table per rank.  Load cost now
 * follows the ops, not ranks x chunks. */
TEST(load_cost_is_bounded_by_the_file)
{
    static const uint32_t ranks[] = { 1, 4096 };

    for (size_t i = 0; i < sizeof(ranks) / sizeof(ranks[0]); i++) {
        ccs_sched_t *s = NULL;
        ccs_plan_t *p = NULL;
        uint8_t *buf = NULL;
        size_t len = 0;
        uint32_t t;

        CHECK_STATUS(ccs_sched_create(CCS_COLL_ALLREDUCE, ranks[i],
                                      CCS_MAX_CHUNKS, "x", &s, NULL), CCS_OK);
        if (s == NULL)
            continue;
        /* Every rank reads IN and writes OUT, so every rank is analysed. */
        CHECK_STATUS(ccs_sched_add_step(s, 0, &t, NULL), CCS_OK);
        for (uint32_t r = 0; r < ranks[i]; r++)
            CHECK_STATUS(ccs_sched_local(s, t, r, CCS_BUF_OUT, 0, CCS_BUF_IN,
                                         0, 1, false, NULL), CCS_OK);
        CHECK_STATUS(ccs_format_encode(s, &buf, &len, NULL), CCS_OK);
        /* No clock here: a loader whose cost followed the chunk count
         * (2^24 per rank) would run for minutes and hit the test's time
         * limit (TEST_TIMEOUT in scripts/run-tests.sh). */
        CHECK_STATUS(ccs_plan_load_mem(buf, len, &p), CCS_OK);
        CHECK(p != NULL);
        ccs_plan_destroy(p);
        free(buf);
        ccs_sched_destroy(s);
    }
}

/* A digest of every table of p the executor reads (0 for NULL). */
static uint64_t plan_digest(const ccs_plan_t *p)
{
    uint64_t digest = 0;

    for (uint32_t r = 0; p != NULL && r < p->sched->nranks; r++) {
        digest = digest * 1000003u + p->ngroups[r];
        digest = digest * 1000003u + p->stage_chunks[r];
        digest = digest * 1000003u + p->inplace_hazard[r];
        for (uint32_t i = 0; i < p->sched->rank_nops[r]; i++)
            digest = digest * 1000003u + p->seq[r][i] + 1;
    }
    return digest;
}

/* One load of buf with CCS_LOAD_THREADS set to `threads`: status,
 * message and, for a plan, a digest of every table the executor reads. */
static ccs_status_t load_digest(const uint8_t *buf, size_t len,
                                const char *threads, char *msg, size_t cap,
                                uint64_t *digest)
{
    ccs_plan_t *p = NULL;
    ccs_status_t st;

    setenv("CCS_LOAD_THREADS", threads, 1);
    st = ccs_plan_load_mem_msg(buf, len, &p, msg, cap);
    *digest = plan_digest(p);
    ccs_plan_destroy(p);
    return st;
}

/* One damaged op byte in an encoded plan: xor 0 leaves it intact. */
typedef struct op_damage {
    uint32_t op;      /* op record (from the end of the op section) */
    uint32_t byte;    /* byte in it */
    uint8_t xor;
} op_damage_t;

/* Flip d's byte of the encoded plan buf[0..len) and fix the checksum, so
 * that the damage gets past the reader's CRC to the checks behind it.
 * Flipping the same d again restores the plan. */
static void op_damage_flip(uint8_t *buf, size_t len, const op_damage_t *d)
{
    size_t at = len - CCS_FORMAT_TRAILER_SIZE -
                (size_t)(d->op + 1) * CCS_FORMAT_OP_SIZE + d->byte;
    uint32_t crc;

    buf[at] ^= d->xor;
    crc = ccs_crc32c(0, buf, len - 4);
    for (int i = 0; i < 4; i++)
        buf[len - 4 + i] = (uint8_t)(crc >> (8 * i));
}

/* The variable as a test found it (owned by the caller, NULL when
 * unset), put back by env_restore, which frees it. */
static char *env_save(const char *name)
{
    const char *v = getenv(name);

    return v != NULL ? strdup(v) : NULL;
}

static void env_restore(const char *name, char *saved)
{
    if (saved != NULL)
        setenv(name, saved, 1);
    else
        unsetenv(name);
    free(saved);
}

/* Large plans are checked on a helper thread behind the reader: for every
 * fixture, intact and with op bytes damaged (checksum fixed, so the
 * damage reaches the per-op checks, the pairing, the hazards), the same
 * status, message and tables with the thread as without it. */
TEST(load_with_helper_thread_is_the_same)
{
    static const uint32_t ranks[] = { 2, 5, 8 };
    static const op_damage_t damage[] = {
        { 0, 0, 0 },      /* intact */
        { 1, 20, 1 },     /* nchunks */
        { 2, 8, 1 },      /* peer */
        { 3, 0, 1 },      /* step */
        { 4, 12, 2 },     /* chunk */
        { 5, 4, 1 },      /* kind */
        { 7, 5, 1 },      /* buffer */
    };
    char *saved = env_save("CCS_LOAD_THREADS");

    for (size_t k = 0; k < sizeof(ranks) / sizeof(ranks[0]); k++) {
        fx_entry_t fx[16];
        int n = fx_all(ranks[k], fx, 16);

        CHECK(n > 0);
        for (int f = 0; f < n; f++) {
            uint8_t *buf = NULL;
            size_t len = 0;
            uint64_t total = ccs_sched_total_ops(fx[f].s);

            CHECK_STATUS(ccs_format_encode(fx[f].s, &buf, &len, NULL),
                         CCS_OK);
            if (buf == NULL)
                continue;
            for (size_t d = 0; d < sizeof(damage) / sizeof(damage[0]); d++) {
                char m0[256], m1[256];
                uint64_t g0, g1;
                ccs_status_t s0, s1;

                if (damage[d].op >= total)
                    continue;
                op_damage_flip(buf, len, &damage[d]);
                s0 = load_digest(buf, len, "0", m0, sizeof m0, &g0);
                s1 = load_digest(buf, len, "1", m1, sizeof m1, &g1);
                CHECK_MSG(s0 == s1 && strcmp(m0, m1) == 0 && g0 == g1,
                          "%s damage %zu: without the thread %d \"%s\", "
                          "with it %d \"%s\"", fx[f].name, d, (int)s0, m0,
                          (int)s1, m1);
                if (d == 0)
                    CHECK_STATUS(s1, CCS_OK);
                op_damage_flip(buf, len, &damage[d]);
            }
            free(buf);
        }
        fx_free(fx, n);
    }
    env_restore("CCS_LOAD_THREADS", saved);
}

/* A ring allreduce over `R` ranks (any count: the fixtures stop at 64). */
static ccs_sched_t *big_ring(uint32_t R)
{
    ccs_sched_t *s = NULL;
    uint32_t *rk = malloc((size_t)R * sizeof(*rk));   /* freed here */

    if (rk == NULL)
        return NULL;
    for (uint32_t i = 0; i < R; i++)
        rk[i] = i;
    if (ccs_sched_create(CCS_COLL_ALLREDUCE, R, R, "fx-ring-big", &s,
                         NULL) != CCS_OK ||
        !fx_ring_rs(s, rk, R, 1, 0) || !fx_ring_ag(s, rk, R, 1, 0)) {
        ccs_sched_destroy(s);
        s = NULL;
    }
    free(rk);
    return s != NULL ? fx_finish(s) : NULL;
}

/* A plan file large enough to be read while it is checked (about 15 MB:
 * the reader streams files above 8 MiB), intact and with op bytes damaged
 * in early, middle and late ranks (checksum fixed, so the damage reaches
 * the per-op checks, the pairing, the hazards, the buffer spans): loaded
 * from the file with and without the helper thread, the same status, the
 * same words after the path, and the same tables as from memory. */
TEST(load_file_streamed_is_the_same)
{
    static const op_damage_t damage[] = {
        { 0, 0, 0 },          /* intact */
        { 1, 20, 2 },         /* late rank: nchunks (pairing) */
        { 300001, 8, 1 },     /* middle rank: peer (pairing) */
        { 300002, 13, 0x10 }, /* middle rank: chunk past the end */
        { 400003, 4, 1 },     /* kind */
        { 500004, 0, 1 },     /* step */
        { 600005, 5, 1 },     /* buffer */
        { 600006, 16, 1 },    /* src_chunk */
    };
    static const char *threads[] = { "0", "1", NULL };
    ccs_sched_t *s = big_ring(400);
    char path[] = "/tmp/ccs-stream-XXXXXX";
    int fd = mkstemp(path);
    char *saved = env_save("CCS_LOAD_THREADS");
    uint8_t *buf = NULL;
    size_t len = 0;

    CHECK(s != NULL && fd >= 0);
    if (s != NULL)
        CHECK_STATUS(ccs_format_encode(s, &buf, &len, NULL), CCS_OK);
    for (size_t d = 0; buf != NULL && fd >= 0 &&
                       d < sizeof(damage) / sizeof(damage[0]); d++) {
        char m0[512], want[700];
        uint64_t g0;
        ccs_status_t s0;

        CHECK(damage[d].op < ccs_sched_total_ops(s));
        op_damage_flip(buf, len, &damage[d]);
        CHECK(pwrite(fd, buf, len, 0) == (ssize_t)len);
        s0 = load_digest(buf, len, "0", m0, sizeof m0, &g0);
        snprintf(want, sizeof want, "%s: %s", path, m0);
        if (d == 0)
            CHECK_STATUS(s0, CCS_OK);
        for (size_t k = 0; k < sizeof(threads) / sizeof(threads[0]); k++) {
            ccs_plan_t *p = NULL;
            char m1[512];
            ccs_status_t s1;

            if (threads[k] != NULL)
                setenv("CCS_LOAD_THREADS", threads[k], 1);
            else
                unsetenv("CCS_LOAD_THREADS");
            s1 = ccs_plan_load_file_msg(path, &p, m1, sizeof m1);
            CHECK_MSG(s0 == s1 && plan_digest(p) == g0 &&
                          (s0 == CCS_OK || strcmp(m1, want) == 0),
                      "damage %zu, threads %s: from memory %d \"%s\", from "
                      "the file %d \"%s\"", d,
                      threads[k] ? threads[k] : "(unset)", (int)s0, m0,
                      (int)s1, m1);
            ccs_plan_destroy(p);
        }
        op_damage_flip(buf, len, &damage[d]);
    }
    if (fd >= 0) {
        close(fd);
        unlink(path);
    }
    env_restore("CCS_LOAD_THREADS", saved);
    free(buf);
    ccs_sched_destroy(s);
}

typedef struct mm_job {
    const ccs_plan_t *plan;
    ccs_comm_t *comm;
    size_t count;
    ccs_status_t st;
} mm_job_t;

static void *mm_main(void *arg)
{
    mm_job_t *j = arg;
    float buf[64] = { 0 }, out[64];
    j->st = ccs_run(j->plan, j->comm, buf, out, j->count, CCS_FLOAT32,
                    CCS_SUM, NULL);
    return NULL;
}

/* Calls that cannot work fail before moving data, with a message. */
TEST(run_validation)
{
    ccs_sched_t *s4 = fx_ring_allreduce(4, 1), *s2 = fx_ring_allreduce(2, 1);
    ccs_sched_t *sg = fx_straggler(2, 1);
    ccs_plan_t *p4 = NULL, *p2 = NULL, *pg = NULL;
    ccs_comm_t *c[2];
    float a[8] = { 0 }, b[8];
    const uint32_t poison = 0x7fc0dead;   /* a NaN no run would write */
    ccs_run_opts_t o = CCS_RUN_OPTS_INIT;
    int dummy_stream;

    for (int i = 0; i < 8; i++)
        memcpy(&b[i], &poison, sizeof(float));

    CHECK_STATUS(ccs_plan_from_sched(s4, &p4, NULL), CCS_OK);
    CHECK_STATUS(ccs_plan_from_sched(s2, &p2, NULL), CCS_OK);
    CHECK_STATUS(ccs_plan_from_sched(sg, &pg, NULL), CCS_OK);
    CHECK_STATUS(ccs_comm_init_threads(2, c), CCS_OK);
    CHECK_EQ_INT(ccs_comm_rank(c[1]), 1);
    CHECK_EQ_INT(ccs_comm_size(c[0]), 2);
    CHECK(strcmp(ccs_comm_transport(c[0]), "threads") == 0);

    CHECK_STATUS(ccs_run(p4, c[0], a, b, 8, CCS_FLOAT32, CCS_SUM, NULL),
                 CCS_ERR_MISMATCH);
    CHECK_STR_CONTAINS(ccs_comm_last_error(c[0]), "4 ranks");
    CHECK_STATUS(ccs_allgather(p2, c[0], a, b, 8, CCS_FLOAT32, NULL),
                 CCS_ERR_MISMATCH);
    CHECK_STR_CONTAINS(ccs_comm_last_error(c[0]), "called as allgather");
    CHECK_STATUS(ccs_run(p2, c[0], a, b, 8, (ccs_dtype_t)42, CCS_SUM, NULL),
                 CCS_ERR_INVALID);
    CHECK_STATUS(ccs_run(p2, c[0], a, b, 8, CCS_FLOAT32, (ccs_redop_t)9,
                         NULL), CCS_ERR_INVALID);
    CHECK_STATUS(ccs_run(p2, c[0], a, b, 8, CCS_FLOAT32, CCS_SUM,
                         &dummy_stream), CCS_ERR_INVALID);
    CHECK_STR_CONTAINS(ccs_comm_last_error(c[0]), "stream");
    CHECK_STATUS(ccs_run(p2, c[0], NULL, b, 8, CCS_FLOAT32, CCS_SUM, NULL),
                 CCS_ERR_INVALID);
    CHECK_STR_CONTAINS(ccs_comm_last_error(c[0]), "NULL sendbuff");
    o.straggler = 1;
    CHECK_STATUS(ccs_run_ex(p2, c[0], a, b, 8, CCS_FLOAT32, CCS_SUM, NULL,
                            &o), CCS_ERR_MISMATCH);
    CHECK_STR_CONTAINS(ccs_comm_last_error(c[0]), "no straggler role");
    o.straggler = 5;
    CHECK_STATUS(ccs_run_ex(pg, c[0], a, b, 8, CCS_FLOAT32, CCS_SUM, NULL,
                            &o), CCS_ERR_INVALID);
    CHECK_STR_CONTAINS(ccs_comm_last_error(c[0]), "out of range");
    /* None of the refused calls above touched the receive buffer. */
    for (int i = 0; i < 8; i++)
        CHECK_MSG(memcmp(&b[i], &poison, sizeof(float)) == 0,
                  "recvbuff[%d] was written by a refused call", i);
    /* count 0 is a no-op that succeeds, like NCCL */
    CHECK_STATUS(ccs_run(p2, c[0], a, b, 0, CCS_FLOAT32, CCS_SUM, NULL),
                 CCS_OK);
    CHECK_STATUS(ccs_run(p2, NULL, a, b, 8, CCS_FLOAT32, CCS_SUM, NULL),
                 CCS_ERR_INVALID);

    /* Ranks that disagree on the count get an error, not a hang. */
    {
        mm_job_t j[2] = { { p2, c[0], 7, CCS_OK }, { p2, c[1], 9, CCS_OK } };
        pthread_t th[2];
        for (int r = 0; r < 2; r++)
            pthread_create(&th[r], NULL, mm_main, &j[r]);
        for (int r = 0; r < 2; r++)
            pthread_join(th[r], NULL);
        CHECK(j[0].st != CCS_OK || j[1].st != CCS_OK);
        CHECK(j[0].st == CCS_ERR_MISMATCH || j[1].st == CCS_ERR_MISMATCH);
        /* the world is now unusable, and says so */
        CHECK_STATUS(ccs_run(p2, c[0], a, b, 8, CCS_FLOAT32, CCS_SUM, NULL),
                     CCS_ERR_TRANSPORT);
    }
    ccs_comm_destroy(c[0]);
    ccs_comm_destroy(c[1]);
    ccs_comm_destroy(NULL);
    CHECK_STATUS(ccs_comm_init_threads(0, c), CCS_ERR_INVALID);
    ccs_plan_destroy(p4);
    ccs_plan_destroy(p2);
    ccs_plan_destroy(pg);
    ccs_sched_destroy(s4);
    ccs_sched_destroy(s2);
    ccs_sched_destroy(sg);
}

/* Relabeling that would move a reduce root is refused. */
TEST(relabel_keeps_root)
{
    ccs_sched_t *s = fx_chain_reduce(3, 2, 2);
    ccs_plan_t *p = NULL;
    ccs_comm_t *c[3];
    float a[4] = { 0 }, b[4];
    ccs_run_opts_t o = CCS_RUN_OPTS_INIT;

    s->straggler = 0;
    CHECK_STATUS(ccs_plan_from_sched(s, &p, NULL), CCS_OK);
    CHECK_STATUS(ccs_comm_init_threads(3, c), CCS_OK);
    o.straggler = 2;  /* swaps ranks 2 (the root) and 0 */
    CHECK_STATUS(ccs_run_ex(p, c[0], a, b, 4, CCS_FLOAT32, CCS_SUM, NULL,
                            &o), CCS_ERR_MISMATCH);
    CHECK_STR_CONTAINS(ccs_comm_last_error(c[0]), "root");
    for (int r = 0; r < 3; r++)
        ccs_comm_destroy(c[r]);
    ccs_plan_destroy(p);
    ccs_sched_destroy(s);
}

/* What the library writes to stdout and stderr while it loads a broken
 * plan, creates a threads world, refuses a mismatched call, runs a good
 * one and fails mid-run (ranks disagreeing on the count): nothing unless
 * CCS_DEBUG asks, and then one line per event at the level asked for. */
static void debug_scenario(char *out, size_t outlen)
{
    ccs_sched_t *s2 = fx_ring_allreduce(2, 1), *s4 = fx_ring_allreduce(4, 1);
    ccs_plan_t *p2 = NULL, *p4 = NULL, *bad = NULL;
    ccs_comm_t *c[2] = { NULL, NULL };
    uint8_t *buf = NULL, junk[16] = "not a plan";
    size_t len = 0, n;
    float a[8] = { 0 }, b[8];
    char path[] = "/tmp/ccs-debug-XXXXXX";
    int fd = mkstemp(path), save1 = dup(1), save2 = dup(2);
    FILE *f;

    out[0] = '\0';
    if (fd < 0 || save1 < 0 || save2 < 0) {
        FAIL_AT("cannot capture stdout/stderr");
        return;
    }
    ccs_format_encode(s2, &buf, &len, NULL);
    fflush(stdout);
    fflush(stderr);
    dup2(fd, 1);
    dup2(fd, 2);
    /* ---- captured ---- */
    ccs_plan_load_mem(junk, sizeof(junk), &bad);           /* WARN PLAN */
    ccs_plan_load_file("/nonexistent/x.ccs", &bad);        /* WARN PLAN */
    ccs_plan_load_mem(buf, len, &p2);                      /* INFO PLAN */
    ccs_plan_from_sched(s4, &p4, NULL);
    ccs_comm_init_threads(2, c);                           /* INFO INIT */
    if (c[0] != NULL && p2 != NULL && p4 != NULL) {
        /* The TRACE lines counted are the plan's steps: replay them. */
        ccs_comm_set_small_bytes(c[0], 0);
        ccs_comm_set_small_bytes(c[1], 0);
        /* The count mismatch below meets a rank that cached the call: it
         * ends at the timeout (docs/runtime.md), which need not be long. */
        ccs_comm_set_timeout(c[0], 1.0);
        ccs_comm_set_timeout(c[1], 1.0);
        mm_job_t j[2] = { { p2, c[0], 8, CCS_OK }, { p2, c[1], 8, CCS_OK } };
        pthread_t th[2];
        ccs_run(p4, c[0], a, b, 8, CCS_FLOAT32, CCS_SUM, NULL); /* WARN */
        for (int r = 0; r < 2; r++)                        /* 2 TRACE */
            pthread_create(&th[r], NULL, mm_main, &j[r]);
        for (int r = 0; r < 2; r++)
            pthread_join(th[r], NULL);
        j[1].count = 9;                  /* 2 TRACE, then 2 WARN EXEC */
        for (int r = 0; r < 2; r++)
            pthread_create(&th[r], NULL, mm_main, &j[r]);
        for (int r = 0; r < 2; r++)
            pthread_join(th[r], NULL);
    }
    fflush(stdout);
    fflush(stderr);
    /* ---- end of capture ---- */
    dup2(save1, 1);
    dup2(save2, 2);
    close(save1);
    close(save2);
    ccs_comm_destroy(c[0]);
    ccs_comm_destroy(c[1]);
    ccs_plan_destroy(p2);
    ccs_plan_destroy(p4);
    ccs_plan_destroy(bad);
    ccs_sched_destroy(s2);
    ccs_sched_destroy(s4);
    free(buf);
    f = fdopen(fd, "r");
    if (f == NULL) {
        close(fd);
        unlink(path);
        return;
    }
    rewind(f);
    n = fread(out, 1, outlen - 1, f);
    out[n] = '\0';
    fclose(f);
    unlink(path);
}

static int count_lines(const char *text, const char *needle)
{
    int n = 0;
    for (const char *p = strstr(text, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

TEST(quiet_unless_ccs_debug)
{
    static const struct {
        const char *env;       /* NULL: unset */
        int warn, info, trace; /* lines of each level expected */
    } cases[] = {
        { NULL, 0, 0, 0 },
        { "", 0, 0, 0 },
        { "nonsense", 0, 0, 0 },
        { "WARN", 5, 0, 0 },   /* 2 bad loads, mismatch, 2 ranks mid-run */
        { "info", 5, 4, 0 },   /* + 2 plan loads, 2 communicators */
        { "TRACE", 5, 4, 4 },  /* + each rank's start of the 2 runs */
    };
    static char out[16384];
    char *saved = env_save("CCS_DEBUG");

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int total;
        if (cases[i].env)
            setenv("CCS_DEBUG", cases[i].env, 1);
        else
            unsetenv("CCS_DEBUG");
        debug_scenario(out, sizeof(out));
        total = count_lines(out, "\n");
        CHECK_MSG(count_lines(out, " WARN ") == cases[i].warn &&
                  count_lines(out, " INFO ") == cases[i].info &&
                  count_lines(out, " TRACE ") == cases[i].trace &&
                  total == cases[i].warn + cases[i].info + cases[i].trace,
                  "CCS_DEBUG=%s: want %d WARN, %d INFO, %d TRACE lines, "
                  "got:\n%s", cases[i].env ? cases[i].env : "(unset)",
                  cases[i].warn, cases[i].info, cases[i].trace, out);
        if (cases[i].warn > 0) {
            CHECK_STR_CONTAINS(out, "WARN PLAN");
            CHECK_STR_CONTAINS(out, "WARN EXEC");
        }
    }
    env_restore("CCS_DEBUG", saved);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double cpu_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* CPU time of the calling thread alone: the loader's reading thread (the
 * helper's share is the process's time less this). */
static double thread_cpu_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double median_of(double *v, int n)
{
    qsort(v, (size_t)n, sizeof v[0], cmp_double);
    return v[n / 2];
}

/* What one bench_load measurement times, each in a process of its own
 * (a job loads its plan once per process, and a second load in the same
 * process reuses pages the first one paid for). */
enum { BL_READ, BL_MEM, BL_FILE };

/* One measurement of `what` on path: wall, CPU and the calling thread's
 * CPU seconds into t[0], t[1], t[2] (BL_READ: the read alone, wall
 * twice; BL_MEM: the file read untimed, then ccs_plan_load_mem timed),
 * the file's size into *bytes. */
static int measure(int what, const char *path, double t[3], size_t *bytes)
{
    ccs_plan_t *p = NULL;
    uint8_t *buf = NULL;
    size_t len = 0;
    ccs_err_t e;
    char msg[256];
    double t0, c0, tc0;
    ccs_status_t st;

    ccs_err_clear(&e);
    t0 = ccs_now_s();
    c0 = cpu_now_s();
    tc0 = thread_cpu_now_s();
    if (what != BL_FILE &&
        (st = ccs_format_load_file(path, &buf, &len, &e)) != CCS_OK) {
        fprintf(stderr, "%s: %s\n", path, ccs_err_msg(&e, st));
        return 1;
    }
    if (what == BL_MEM) {
        t0 = ccs_now_s();
        c0 = cpu_now_s();
        tc0 = thread_cpu_now_s();
        st = ccs_plan_load_mem_msg(buf, len, &p, msg, sizeof msg);
    } else if (what == BL_FILE) {
        st = ccs_plan_load_file_msg(path, &p, msg, sizeof msg);
        len = p != NULL ? (size_t)ccs_sched_total_ops(ccs_plan_sched(p)) : 0;
    } else {
        st = CCS_OK;
    }
    t[0] = ccs_now_s() - t0;
    t[1] = cpu_now_s() - c0;
    t[2] = thread_cpu_now_s() - tc0;
    if (st != CCS_OK) {
        fprintf(stderr, "%s: %s\n", path, msg);
        free(buf);
        return 1;
    }
    *bytes = len;
    ccs_plan_destroy(p);
    free(buf);
    return 0;
}

/* measure() in a child process; its figures come back through a pipe. */
static int measure_apart(int what, const char *path, double t[3],
                         size_t *bytes)
{
    int fd[2], status = 0;
    struct { double t[3]; size_t bytes; int rc; } res = { { 0, 0, 0 }, 0,
                                                          1 };
    pid_t pid;

    if (pipe(fd) != 0)
        return 1;
    pid = fork();
    if (pid < 0) {
        close(fd[0]);
        close(fd[1]);
        return 1;
    }
    if (pid == 0) {
        close(fd[0]);
        res.rc = measure(what, path, res.t, &res.bytes);
        if (write(fd[1], &res, sizeof res) != (ssize_t)sizeof res)
            _exit(1);
        _exit(0);
    }
    close(fd[1]);
    if (read(fd[0], &res, sizeof res) != (ssize_t)sizeof res)
        res.rc = 1;
    close(fd[0]);
    waitpid(pid, &status, 0);
    t[0] = res.t[0];
    t[1] = res.t[1];
    t[2] = res.t[2];
    *bytes = res.bytes;
    return res.rc != 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0;
}

/* Times ccs_plan_load_file (what a job calls: read, CRC, every check,
 * indexing), ccs_plan_load_mem from a buffer already read (the loader
 * without the read), and, as the reference, reading the same file into
 * memory alone: wall and CPU seconds, medians, and the reading thread's
 * CPU seconds of the load from the file (the helper thread's are the
 * rest: on two free cores the load takes about as long as the busier of
 * the two).  Each measurement runs in a fresh process, the three
 * interleaved run by run. */
static int bench_load(const char *path, int runs)
{
    double wall[64], cpu[64], tcpu[64], hcpu[64], mwall[64], mcpu[64];
    double rd[64], t[3];
    double mb = 0;
    size_t bytes = 0, ops = 0;

    if (runs < 1 || runs > 64)
        return 1;
    for (int i = 0; i < runs; i++) {
        if (measure_apart(BL_READ, path, t, &bytes) != 0)
            return 1;
        rd[i] = t[0];
        mb = (double)bytes / 1e6;
        if (measure_apart(BL_MEM, path, t, &bytes) != 0)
            return 1;
        mwall[i] = t[0];
        mcpu[i] = t[1];
        if (measure_apart(BL_FILE, path, t, &ops) != 0)
            return 1;
        wall[i] = t[0];
        cpu[i] = t[1];
        tcpu[i] = t[2];
        hcpu[i] = t[1] - t[2];
    }
    double w = median_of(wall, runs), c = median_of(cpu, runs);
    double tc = median_of(tcpu, runs), hc = median_of(hcpu, runs);
    double mw = median_of(mwall, runs), mc = median_of(mcpu, runs);
    double r = median_of(rd, runs);
    printf("  plan load, %.0f MB file (%zu ops), medians of %d, each load "
           "in a fresh process:\n"
           "    from the file   %.3f s wall (%5.0f MB/s), %.3f s cpu "
           "(%5.0f MB/s); target >= 1000 MB/s: %s\n"
           "      (cpu: reading thread %.3f s, helper thread %.3f s)\n"
           "    from memory     %.3f s wall (%5.0f MB/s), %.3f s cpu "
           "(%5.0f MB/s)\n"
           "    ref: read alone %.3f s wall (%5.0f MB/s)\n"
           "    raw %.1f %.4f %.4f %.4f %.4f %.4f %.4f\n",
           mb, ops, runs, w, mb / w, c, mb / c,
           mb / w >= 1000 ? "met" : "NOT met", tc, hc, mw, mb / mw, mc,
           mb / mc, r, mb / r, mb, w, c, mw, mc, r, tc);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[1], "--bench-load") == 0)
        return bench_load(argv[2], atoi(argv[3]));
    setenv("CCS_TIMEOUT_S", "20", 0);
    RUN(load_mem_roundtrip_and_info);
    RUN(load_errors_have_messages);
    RUN(plan_rejects_unrunnable_schedules);
    RUN(plan_rejects_overlapping_reductions);
    RUN(plan_rejects_staging_past_32_bits);
    RUN(load_cost_is_bounded_by_the_file);
    RUN(load_with_helper_thread_is_the_same);
    RUN(load_file_streamed_is_the_same);
    RUN(run_validation);
    RUN(relabel_keeps_root);
    RUN(quiet_unless_ccs_debug);
    return TEST_SUMMARY();
}
