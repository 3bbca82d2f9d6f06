/* test_sched.c - schedule builder, structural validation, names. */
#include "../../runtime/sched.h"
#include "harness.h"

TEST(builder_sorts_and_counts)
{
    ccs_sched_t *s = NULL;
    ccs_err_t err = { { 0 } };
    uint32_t t0, t1;

    CHECK_STATUS(ccs_sched_create(CCS_COLL_ALLREDUCE, 2, 2, "test", &s, &err),
                 CCS_OK);
    CHECK_STATUS(ccs_sched_add_step(s, 0, &t0, &err), CCS_OK);
    CHECK_STATUS(ccs_sched_add_step(s, 1, &t1, &err), CCS_OK);
    /* Append out of step order: finalize must sort stably. */
    CHECK_STATUS(ccs_sched_xfer(s, t1, 0, CCS_BUF_OUT, 1, 1, CCS_BUF_OUT, 1,
                                1, false, &err), CCS_OK);
    CHECK_STATUS(ccs_sched_xfer(s, t0, 0, CCS_BUF_IN, 0, 1, CCS_BUF_SCRATCH,
                                3, 1, true, &err), CCS_OK);
    CHECK_STATUS(ccs_sched_finalize(s, &err), CCS_OK);
    CHECK_EQ_INT(s->nphases, 2);
    CHECK_EQ_INT(s->nscratch, 4);
    CHECK_EQ_INT(s->rank_ops[0][0].step, t0);
    CHECK_EQ_INT(s->rank_ops[0][1].step, t1);
    CHECK_EQ_INT(ccs_sched_total_ops(s), 4);
    CHECK_STATUS(ccs_sched_validate(s, &err), CCS_OK);
    ccs_sched_destroy(s);
}

TEST(many_steps_grow)
{
    ccs_sched_t *s = NULL, *c = NULL;
    uint32_t t = 0;

    CHECK_STATUS(ccs_sched_create(CCS_COLL_ALLREDUCE, 2, 1, "x", &s, NULL),
                 CCS_OK);
    for (int i = 0; i < 1000; i++) {
        CHECK_STATUS(ccs_sched_add_step(s, 0, &t, NULL), CCS_OK);
        CHECK_STATUS(ccs_sched_xfer(s, t, (uint32_t)i % 2, CCS_BUF_IN, 0,
                                    (uint32_t)(i + 1) % 2, CCS_BUF_SCRATCH, 0,
                                    1, false, NULL), CCS_OK);
    }
    CHECK_STATUS(ccs_sched_clone(s, &c, NULL), CCS_OK);
    /* A clone is sized exactly; appending must still grow safely. */
    CHECK_STATUS(ccs_sched_add_step(c, 0, &t, NULL), CCS_OK);
    CHECK_STATUS(ccs_sched_xfer(c, t, 0, CCS_BUF_IN, 0, 1, CCS_BUF_SCRATCH, 0,
                                1, false, NULL), CCS_OK);
    CHECK_EQ_INT(c->nsteps, 1001);
    CHECK_EQ_INT(c->rank_nops[1], 1001);
    CHECK_STATUS(ccs_sched_validate(c, NULL), CCS_OK);
    ccs_sched_destroy(c);
    ccs_sched_destroy(s);
}

/* Structural errors ccs_sched_validate must name. */
TEST(validate_rejects)
{
    static const struct {
        const char *what;
        ccs_op_t op;
        const char *msg;
    } cases[] = {
        { "self send", { .kind = CCS_OP_SEND, .peer = 0, .nchunks = 1 },
          "to itself" },
        { "peer range", { .kind = CCS_OP_SEND, .peer = 9, .nchunks = 1 },
          "out of range" },
        { "zero chunks", { .kind = CCS_OP_SEND, .peer = 1, .nchunks = 0 },
          "0 chunks" },
        { "past end", { .kind = CCS_OP_SEND, .peer = 1, .chunk = 3,
                        .nchunks = 2 }, "past the end" },
        { "write IN", { .kind = CCS_OP_RECV, .buf = CCS_BUF_IN, .peer = 1,
                        .nchunks = 1 }, "read-only" },
        { "bad kind", { .kind = 9, .peer = 1, .nchunks = 1 }, "unknown op" },
        { "local peer", { .kind = CCS_OP_COPY, .buf = CCS_BUF_OUT, .peer = 1,
                          .nchunks = 1 }, "must be -1" },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        ccs_sched_t *s = NULL;
        ccs_err_t err = { { 0 } };
        uint32_t t;
        CHECK_STATUS(ccs_sched_create(CCS_COLL_ALLREDUCE, 2, 4, "x", &s, NULL),
                     CCS_OK);
        CHECK_STATUS(ccs_sched_add_step(s, 0, &t, NULL), CCS_OK);
        CHECK_STATUS(ccs_sched_add_op(s, 0, &cases[i].op, NULL), CCS_OK);
        CHECK_STATUS(ccs_sched_validate(s, &err), CCS_ERR_FORMAT);
        CHECK_MSG(strstr(err.msg, cases[i].msg) != NULL,
                  "case '%s': message '%s' lacks '%s'", cases[i].what, err.msg,
                  cases[i].msg);
        ccs_sched_destroy(s);
    }
}

TEST(create_rejects_bad_shapes)
{
    ccs_sched_t *s = NULL;
    ccs_err_t err = { { 0 } };
    CHECK_STATUS(ccs_sched_create(CCS_COLL_ALLGATHER, 4, 6, "x", &s, &err),
                 CCS_ERR_INVALID);
    CHECK_STR_CONTAINS(err.msg, "divisible");
    CHECK_STATUS(ccs_sched_create(CCS_COLL_ALLREDUCE, 0, 6, "x", &s, &err),
                 CCS_ERR_INVALID);
    CHECK(s == NULL);
}

TEST(names_and_parsers)
{
    ccs_coll_t c;
    ccs_dtype_t d;
    CHECK_STATUS(ccs_coll_parse("alltoall", &c), CCS_OK);
    CHECK_EQ_INT(c, CCS_COLL_ALLTOALL);
    CHECK_STATUS(ccs_dtype_parse("bf16", &d), CCS_OK);
    CHECK_EQ_INT(d, CCS_BFLOAT16);
    CHECK_STATUS(ccs_coll_parse("allreduxe", &c), CCS_ERR_INVALID);
    CHECK(strcmp(ccs_strerror(CCS_ERR_CHECKSUM),
                 "schedule file checksum mismatch") == 0);
    CHECK(strcmp(ccs_strerror((ccs_status_t)-999), "unknown status") == 0);
    CHECK_EQ_INT(ccs_dtype_size(CCS_FLOAT16), 2);
    CHECK(strcmp(ccs_op_kind_str(CCS_OP_RECV_REDUCE), "recv_reduce") == 0);
}

/* The one pairing rule: every receive's mate is the k-th send of its pair
 * in its step; mismatches are reported earliest step first, whatever the
 * ranks, in the same words for every caller. */
TEST(pairing_rule)
{
    static const struct {
        const char *what;
        /* transfers (step, src, dst, nchunks) and lone ops */
        uint32_t xf[6][4];
        int nxf;
        int lone_send_step, lone_recv_step;   /* -1: none */
        const char *want;                     /* NULL: pairs */
        uint32_t lone_recv_n;                 /* 0: 1 chunk */
    } cases[] = {
        { "two sends of a pair in one step keep their order",
          { { 0, 0, 1, 1 }, { 0, 0, 1, 2 }, { 1, 1, 0, 1 } }, 3, -1, -1,
          NULL, 0 },
        { "lone receive at step 0 beats a lone send at step 1",
          { { 0, 0, 1, 1 } }, 1, 1, 0,
          "step 0, rank 3: recv from rank 2 into out[0] has no matching "
          "send", 0 },
        { "lone send at step 0 beats a lone receive at step 1",
          { { 0, 0, 1, 1 } }, 1, 0, 1,
          "step 0, rank 2: send of in[0] to rank 3 has no matching "
          "receive", 0 },
        { "receives posted out of sender order still pair",
          { { 0, 2, 1, 1 }, { 0, 0, 1, 1 }, { 0, 3, 1, 2 }, { 1, 1, 0, 1 },
            { 1, 3, 0, 1 } }, 5, -1, -1, NULL, 0 },
        { "a lone send and a lone receive of one step pair",
          { { 0, 0, 1, 1 } }, 1, 1, 1, NULL, 0 },
        { "a lone send beside a pair of the same step",
          { { 0, 0, 1, 1 } }, 1, 0, -1,
          "step 0, rank 2: send of in[0] to rank 3 has no matching "
          "receive", 0 },
        { "chunk counts differ",
          { { 0, 0, 1, 1 } }, 1, 0, 0,
          "step 0, rank 2: send of in[0] (1 chunk) to rank 3 is received by "
          "recv into out[0..1] (2 chunks): size mismatch", 2 },
    };

    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        ccs_sched_t *s = NULL;
        ccs_pairing_t p = { NULL, NULL };
        ccs_err_t err = { { 0 } };
        uint32_t t;

        CHECK_STATUS(ccs_sched_create(CCS_COLL_ALLREDUCE, 4, 4, "p", &s,
                                      &err), CCS_OK);
        for (int k = 0; k < 2; k++)
            CHECK_STATUS(ccs_sched_add_step(s, 0, &t, &err), CCS_OK);
        for (int k = 0; k < cases[c].nxf; k++) {
            const uint32_t *x = cases[c].xf[k];
            CHECK_STATUS(ccs_sched_xfer(s, x[0], x[1], CCS_BUF_IN, 0, x[2],
                                        CCS_BUF_OUT, k, x[3], false, &err),
                         CCS_OK);
        }
        if (cases[c].lone_send_step >= 0) {
            ccs_op_t o = { .step = (uint32_t)cases[c].lone_send_step,
                           .kind = CCS_OP_SEND, .buf = CCS_BUF_IN,
                           .peer = 3, .nchunks = 1 };
            CHECK_STATUS(ccs_sched_add_op(s, 2, &o, &err), CCS_OK);
        }
        if (cases[c].lone_recv_step >= 0) {
            ccs_op_t o = { .step = (uint32_t)cases[c].lone_recv_step,
                           .kind = CCS_OP_RECV, .buf = CCS_BUF_OUT,
                           .peer = 2, .nchunks = cases[c].lone_recv_n
                                                     ? cases[c].lone_recv_n
                                                     : 1 };
            CHECK_STATUS(ccs_sched_add_op(s, 3, &o, &err), CCS_OK);
        }
        CHECK_STATUS(ccs_sched_finalize(s, &err), CCS_OK);
        /* The check without the pairing: same verdict, same words. */
        {
            ccs_err_t e2 = { { 0 } };
            CHECK_STATUS(ccs_sched_pair_check(s, CCS_ERR_FORMAT, &e2),
                         cases[c].want ? CCS_ERR_FORMAT : CCS_OK);
            if (cases[c].want != NULL)
                CHECK_STR_CONTAINS(e2.msg, cases[c].want);
        }
        if (cases[c].want != NULL) {
            CHECK_STATUS(ccs_sched_pair(s, CCS_ERR_VERIFY, &p, &err),
                         CCS_ERR_VERIFY);
            CHECK_STR_CONTAINS(err.msg, cases[c].want);
        } else {
            CHECK_STATUS(ccs_sched_pair(s, CCS_ERR_VERIFY, &p, &err),
                         CCS_OK);
            for (uint32_t r = 0; p.mate != NULL && r < 4; r++) {
                for (uint32_t i = 0; i < s->rank_nops[r]; i++) {
                    const ccs_op_t *o = &s->rank_ops[r][i];
                    uint32_t m = p.mate[p.base[r] + i], q, si;
                    const ccs_op_t *mo;
                    if (o->kind != CCS_OP_RECV)
                        continue;
                    q = (uint32_t)o->peer;
                    mo = &s->rank_ops[q][m - p.base[q]];
                    CHECK(mo->kind == CCS_OP_SEND && mo->step == o->step &&
                          mo->nchunks == o->nchunks &&
                          mo->peer == (int32_t)r);
                    /* The single-receive lookup agrees. */
                    CHECK(ccs_sched_recv_send(s, r, i, &si) &&
                          si == m - p.base[q]);
                }
            }
            ccs_pairing_free(&p);
        }
        ccs_sched_destroy(s);
    }
}

/* Many ranks: receivers hear from several senders in one step, posted in
 * descending sender order (both bytes of the sender sort), senders far
 * apart in rank order, and one pair with two transfers in a step.  Every
 * receive's mate must agree with the single-receive lookup, and a size
 * mismatch at a high rank is worded as the check words it. */
TEST(pairing_many_ranks)
{
    enum { R = 600, T = 3 };
    static const uint32_t off[] = { 599, 300, 1 };  /* sender = dst + off */
    ccs_sched_t *s = NULL;
    ccs_pairing_t p = { NULL, NULL };
    ccs_err_t err = { { 0 } }, e2 = { { 0 } };
    uint32_t t, bad_dst = 577, bad_i = UINT32_MAX;

    CHECK_STATUS(ccs_sched_create(CCS_COLL_ALLREDUCE, R, 4, "p", &s, &err),
                 CCS_OK);
    for (int k = 0; k < T; k++)
        CHECK_STATUS(ccs_sched_add_step(s, 0, &t, &err), CCS_OK);
    for (uint32_t st = 0; st < T; st++) {
        for (uint32_t d = 0; d < R; d++) {
            for (size_t k = 0; k < sizeof(off) / sizeof(off[0]); k++) {
                uint32_t src = (d + off[k]) % R;
                /* the nearest sender sends twice: 1 chunk, then 2 */
                for (uint32_t n = 1; n <= (off[k] == 1 ? 2u : 1u); n++)
                    CHECK_STATUS(ccs_sched_xfer(s, st, src, CCS_BUF_IN, 0, d,
                                                CCS_BUF_OUT, n, n, false,
                                                &err), CCS_OK);
            }
        }
    }
    CHECK_STATUS(ccs_sched_finalize(s, &err), CCS_OK);
    CHECK_STATUS(ccs_sched_pair_check(s, CCS_ERR_FORMAT, &e2), CCS_OK);
    CHECK_STATUS(ccs_sched_pair(s, CCS_ERR_VERIFY, &p, &err), CCS_OK);
    for (uint32_t r = 0; p.mate != NULL && r < R; r++) {
        for (uint32_t i = 0; i < s->rank_nops[r]; i++) {
            const ccs_op_t *o = &s->rank_ops[r][i];
            uint32_t m = p.mate[p.base[r] + i], q, si;
            if (o->kind != CCS_OP_RECV)
                continue;
            q = (uint32_t)o->peer;
            CHECK(m >= p.base[q] && m < p.base[q + 1]);
            CHECK(s->rank_ops[q][m - p.base[q]].nchunks == o->nchunks);
            CHECK(ccs_sched_recv_send(s, r, i, &si) && si == m - p.base[q]);
            if (r == bad_dst && o->step == 1 && bad_i == UINT32_MAX)
                bad_i = i;
        }
    }
    ccs_pairing_free(&p);
    /* One receive of step 1 at rank 577 now wants one chunk more. */
    CHECK(bad_i != UINT32_MAX);
    if (bad_i != UINT32_MAX) {
        s->rank_ops[bad_dst][bad_i].nchunks++;
        CHECK_STATUS(ccs_sched_pair_check(s, CCS_ERR_FORMAT, &e2),
                     CCS_ERR_FORMAT);
        CHECK_STATUS(ccs_sched_pair(s, CCS_ERR_VERIFY, &p, &err),
                     CCS_ERR_VERIFY);
        CHECK(strcmp(err.msg, e2.msg) == 0);
        CHECK_STR_CONTAINS(err.msg, "step 1, rank ");
        CHECK_STR_CONTAINS(err.msg, "size mismatch");
        ccs_pairing_free(&p);
    }
    ccs_sched_destroy(s);
}

/* A small deterministic generator for the schedules below. */
static uint32_t lcg_next(uint64_t *x)
{
    *x = *x * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(*x >> 33);
}

/* The pairing check, fed rank by rank (ccs_sched_pair_check), against the
 * full pairing (ccs_sched_pair): the same verdict and the same words on
 * schedules of every shape the streaming has paths for -- ranks that send
 * to and receive from peers above and below them, waiting groups met many
 * ranks later (rank 0 and the last rank), lists already sorted by peer
 * and not, a few peers and more than the short sort's table holds -- and
 * after each kind of damage a transfer can take. */
TEST(pair_stream_matches_full_pairing)
{
    enum { INTACT, DROP_SEND, DROP_RECV, RESIZE, RETARGET, SWAP };
    static const struct {
        uint32_t nranks, nsteps;
        int pattern;   /* 0 ring, 1 random peers, 2 all to all */
        int damage;
    } cases[] = {
        { 2, 3, 0, INTACT }, { 7, 12, 0, INTACT }, { 7, 12, 0, DROP_SEND },
        { 7, 12, 0, DROP_RECV }, { 7, 12, 0, RESIZE }, { 7, 12, 0, RETARGET },
        { 9, 10, 1, INTACT }, { 9, 10, 1, DROP_SEND }, { 9, 10, 1, DROP_RECV },
        { 9, 10, 1, RESIZE }, { 9, 10, 1, RETARGET }, { 9, 10, 1, SWAP },
        { 13, 2, 2, INTACT }, { 13, 2, 2, DROP_SEND }, { 13, 2, 2, RESIZE },
        { 13, 2, 2, RETARGET }, { 13, 2, 2, SWAP }, { 33, 4, 1, INTACT },
        { 33, 4, 1, DROP_RECV }, { 33, 4, 1, SWAP },
    };

    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        for (uint64_t seed = 1; seed <= 4; seed++) {
            uint32_t R = cases[c].nranks, t;
            uint64_t x = seed * 977 + c;
            ccs_sched_t *s = NULL;
            ccs_pairing_t p = { NULL, NULL };
            ccs_err_t e1 = { { 0 } }, e2 = { { 0 } };
            ccs_status_t st1, st2;

            CHECK_STATUS(ccs_sched_create(CCS_COLL_ALLREDUCE, R, 64, "p", &s,
                                          NULL), CCS_OK);
            for (uint32_t k = 0; k < cases[c].nsteps; k++)
                CHECK_STATUS(ccs_sched_add_step(s, 0, &t, NULL), CCS_OK);
            for (uint32_t k = 0; k < cases[c].nsteps; k++) {
                for (uint32_t a = 0; a < R; a++) {
                    uint32_t nq = cases[c].pattern == 2 ? R - 1 : 1;
                    for (uint32_t j = 0; j < nq; j++) {
                        uint32_t q = cases[c].pattern == 0 ? (a + 1) % R
                                   : cases[c].pattern == 2 ? (a + 1 + j) % R
                                   : (a + 1 + lcg_next(&x) % (R - 1)) % R;
                        uint32_t n = 1 + lcg_next(&x) % 3;
                        CHECK_STATUS(ccs_sched_xfer(s, k, a, CCS_BUF_IN, 0, q,
                                                    CCS_BUF_SCRATCH, 0, n,
                                                    false, NULL), CCS_OK);
                    }
                }
            }
            CHECK_STATUS(ccs_sched_finalize(s, NULL), CCS_OK);
            s->nscratch = 64;   /* room for a resized receive */
            {
                /* Damage one op of a rank picked by the seed. */
                uint32_t r = lcg_next(&x) % R, nops = s->rank_nops[r];
                uint32_t i = lcg_next(&x) % nops;
                ccs_op_t *ops = s->rank_ops[r];
                bool want_send = cases[c].damage == DROP_SEND ||
                                 cases[c].damage == RETARGET;
                while (cases[c].damage != INTACT &&
                       (ops[i].kind == CCS_OP_SEND) != want_send)
                    i = (i + 1) % nops;
                switch (cases[c].damage) {
                case DROP_SEND:
                case DROP_RECV:
                    memmove(&ops[i], &ops[i + 1],
                            (size_t)(nops - i - 1) * sizeof(*ops));
                    s->rank_nops[r]--;
                    break;
                case RESIZE:
                    ops[i].nchunks++;
                    break;
                case RETARGET:   /* to the next rank that is not r */
                    ops[i].peer = (ops[i].peer + 1) % (int32_t)R;
                    if (ops[i].peer == (int32_t)r)
                        ops[i].peer = (ops[i].peer + 1) % (int32_t)R;
                    break;
                case SWAP:
                    /* Two receives of one step swap places. */
                    for (uint32_t j = 0; j + 1 < nops; j++) {
                        if (ops[j].kind != CCS_OP_SEND &&
                            ops[j + 1].kind != CCS_OP_SEND &&
                            ops[j].step == ops[j + 1].step) {
                            ccs_op_t tmp = ops[j];
                            ops[j] = ops[j + 1];
                            ops[j + 1] = tmp;
                            break;
                        }
                    }
                    break;
                default:
                    break;
                }
            }
            CHECK_STATUS(ccs_sched_validate(s, NULL), CCS_OK);
            st1 = ccs_sched_pair_check(s, CCS_ERR_FORMAT, &e1);
            st2 = ccs_sched_pair(s, CCS_ERR_FORMAT, &p, &e2);
            CHECK_MSG(st1 == st2, "case %zu seed %llu: stream %d, full %d",
                      c, (unsigned long long)seed, (int)st1, (int)st2);
            if (st1 != CCS_OK && st2 != CCS_OK)
                CHECK_MSG(strcmp(e1.msg, e2.msg) == 0,
                          "case %zu: \"%s\" vs \"%s\"", c, e1.msg, e2.msg);
            if (cases[c].damage == INTACT)
                CHECK_STATUS(st1, CCS_OK);
            if (cases[c].damage == DROP_SEND ||
                cases[c].damage == DROP_RECV || cases[c].damage == RESIZE)
                CHECK_STATUS(st1, CCS_ERR_FORMAT);
            ccs_pairing_free(&p);
            ccs_sched_destroy(s);
        }
    }
}

/* The same comparison on ranks whose ops mix every kind: local COPY and
 * REDUCE_LOCAL ops (no peer; the pairing check must pass over them)
 * between sends, plain receives and reducing receives, with peers above
 * and below; intact, then with a transfer's size or peer changed, or a
 * local op turned into nothing the pairing sees. */
TEST(pair_stream_passes_over_local_ops)
{
    enum { INTACT, RESIZE_SEND, RESIZE_RECV, RETARGET_RECV };
    static const uint32_t ranks[] = { 2, 5, 11 };

    for (size_t c = 0; c < sizeof(ranks) / sizeof(ranks[0]); c++) {
        for (int damage = INTACT; damage <= RETARGET_RECV; damage++) {
            for (uint64_t seed = 1; seed <= 3; seed++) {
                uint32_t R = ranks[c], nsteps = 6, t;
                uint64_t x = seed * 131 + c * 7 + (uint64_t)damage;
                ccs_sched_t *s = NULL;
                ccs_pairing_t p = { NULL, NULL };
                ccs_err_t e1 = { { 0 } }, e2 = { { 0 } };
                ccs_status_t st1, st2;

                CHECK_STATUS(ccs_sched_create(CCS_COLL_ALLREDUCE, R, 64, "l",
                                              &s, NULL), CCS_OK);
                for (uint32_t k = 0; k < nsteps; k++)
                    CHECK_STATUS(ccs_sched_add_step(s, 0, &t, NULL), CCS_OK);
                for (uint32_t k = 0; k < nsteps; k++) {
                    for (uint32_t a = 0; a < R; a++) {
                        uint32_t q = (a + 1 + lcg_next(&x) % (R - 1)) % R;
                        uint32_t n = 1 + lcg_next(&x) % 3;
                        bool reduce = lcg_next(&x) % 2 == 0;
                        /* A local op before and after the transfer. */
                        CHECK_STATUS(ccs_sched_local(s, k, a, CCS_BUF_SCRATCH,
                                                     40, CCS_BUF_IN, 8, 2,
                                                     false, NULL), CCS_OK);
                        CHECK_STATUS(ccs_sched_xfer(s, k, a, CCS_BUF_IN, 0, q,
                                                    CCS_BUF_SCRATCH, 0, n,
                                                    reduce, NULL), CCS_OK);
                        CHECK_STATUS(ccs_sched_local(s, k, a, CCS_BUF_SCRATCH,
                                                     50, CCS_BUF_IN, 16, 2,
                                                     true, NULL), CCS_OK);
                    }
                }
                CHECK_STATUS(ccs_sched_finalize(s, NULL), CCS_OK);
                s->nscratch = 64;
                if (damage != INTACT) {
                    uint32_t r = lcg_next(&x) % R, nops = s->rank_nops[r];
                    uint32_t i = lcg_next(&x) % nops;
                    ccs_op_t *ops = s->rank_ops[r];
                    bool want_send = damage == RESIZE_SEND;
                    while (ops[i].kind > CCS_OP_RECV_REDUCE ||
                           (ops[i].kind == CCS_OP_SEND) != want_send)
                        i = (i + 1) % nops;
                    if (damage == RETARGET_RECV) {
                        ops[i].peer = (ops[i].peer + 1) % (int32_t)R;
                        if (ops[i].peer == (int32_t)r)
                            ops[i].peer = (ops[i].peer + 1) % (int32_t)R;
                    } else {
                        ops[i].nchunks++;
                    }
                }
                CHECK_STATUS(ccs_sched_validate(s, NULL), CCS_OK);
                st1 = ccs_sched_pair_check(s, CCS_ERR_FORMAT, &e1);
                st2 = ccs_sched_pair(s, CCS_ERR_FORMAT, &p, &e2);
                CHECK_MSG(st1 == st2, "%u ranks, damage %d, seed %llu: "
                          "stream %d, full %d", R, damage,
                          (unsigned long long)seed, (int)st1, (int)st2);
                if (st1 != CCS_OK && st2 != CCS_OK)
                    CHECK_MSG(strcmp(e1.msg, e2.msg) == 0, "\"%s\" vs \"%s\"",
                              e1.msg, e2.msg);
                /* Intact pairs; a resized transfer cannot (R = 2 has no
                 * other peer to retarget to). */
                if (damage == INTACT || (damage == RETARGET_RECV && R == 2))
                    CHECK_STATUS(st1, CCS_OK);
                else if (damage != RETARGET_RECV)
                    CHECK_STATUS(st1, CCS_ERR_FORMAT);
                ccs_pairing_free(&p);
                ccs_sched_destroy(s);
            }
        }
    }
}

int main(void)
{
    RUN(builder_sorts_and_counts);
    RUN(many_steps_grow);
    RUN(validate_rejects);
    RUN(create_rejects_bad_shapes);
    RUN(names_and_parsers);
    RUN(pairing_rule);
    RUN(pairing_many_ranks);
    RUN(pair_stream_matches_full_pairing);
    RUN(pair_stream_passes_over_local_ops);
    return TEST_SUMMARY();
}
