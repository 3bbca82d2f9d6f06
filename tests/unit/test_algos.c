/*
 * test_algos.c - the baselines (ring, rhd, allpairs, dbtree): every
 * algorithm x every collective it supports x n in a table of rank counts
 * (x roots for reduce/broadcast, x pipeline 1 and 3) must pass the
 * structural validator, an independent symbolic execution (symcheck.h)
 * with the collective's postcondition, and verify_sched; step counts must
 * equal the closed forms, ring and rhd must be one-port, and building twice
 * must give the same schedule.  Plus the binary tree shapes, --chunks
 * handling and the reasons `check` gives.
 */
#include <stdlib.h>
#include <string.h>

#include "algo.h"
#include "topo_init.h"
#include "tree.h"
#include "verify.h"
#include "harness.h"
#include "symcheck.h"

static const uint32_t rank_counts[] = { 2, 3, 4, 5, 6, 7, 8, 9, 12, 16,
                                        31, 32, 33, 64 };
#define NRANK_COUNTS (sizeof(rank_counts) / sizeof(rank_counts[0]))

static const char *const baselines[] = { "ring", "rhd", "allpairs",
                                         "dbtree" };

/* A topology of n GPUs: the built-in switch:N when topo_load can make it,
 * else a minimal hand-made one (these baselines only read ngpus). */
typedef struct test_topo {
    topo_t *loaded;
    topo_t local;
} test_topo_t;

static const topo_t *topo_for(test_topo_t *tt, uint32_t n)
{
    char spec[32];

    memset(tt, 0, sizeof(*tt));
    snprintf(spec, sizeof(spec), "switch:%u", n);
    if (topo_load(spec, NULL, &tt->loaded, NULL) == CCS_OK &&
        tt->loaded != NULL && tt->loaded->ngpus == (int32_t)n)
        return tt->loaded;
    topo_destroy(tt->loaded);
    tt->loaded = NULL;
    tt->local.ngpus = (int32_t)n;
    tt->local.nservers = 1;
    snprintf(tt->local.name, sizeof(tt->local.name), "hand:%u", n);
    return &tt->local;
}

static void topo_done(test_topo_t *tt)
{
    topo_destroy(tt->loaded);
    tt->loaded = NULL;
}

static uint32_t log2_floor(uint32_t n)
{
    uint32_t l = 0;

    while ((2u << l) <= n)
        l++;
    return l;
}

static uint32_t log2_ceil(uint32_t n)
{
    uint32_t l = 0;

    while ((1u << l) < n)
        l++;
    return l;
}

static bool same_sched(const ccs_sched_t *a, const ccs_sched_t *b)
{
    if (a->nranks != b->nranks || a->nchunks != b->nchunks ||
        a->nscratch != b->nscratch || a->nsteps != b->nsteps ||
        a->root != b->root)
        return false;
    for (uint32_t r = 0; r < a->nranks; r++) {
        if (a->rank_nops[r] != b->rank_nops[r] ||
            (a->rank_nops[r] > 0 &&
             memcmp(a->rank_ops[r], b->rank_ops[r],
                    a->rank_nops[r] * sizeof(ccs_op_t)) != 0))
            return false;
    }
    return true;
}

/* Expected step and chunk counts; returns false where no closed form is
 * checked exactly (dbtree: bounds instead). */
static void expect_counts(const char *algo, ccs_coll_t coll, uint32_t n,
                          uint32_t pipe, const ccs_sched_t *s,
                          const symcheck_t *sc)
{
    uint32_t lg = log2_floor(n), pw = 1u << lg;
    bool pow2 = pw == n;

    if (strcmp(algo, "ring") == 0) {
        CHECK_EQ_INT(s->nchunks, n * pipe);
        CHECK_EQ_INT(s->nsteps, coll == CCS_COLL_ALLREDUCE ? 2 * (n - 1)
                                                           : n - 1);
        CHECK_MSG(sc->max_sends == 1 && sc->max_recvs == 1,
                  "ring n=%u not one-port (%u sends, %u recvs)", n,
                  sc->max_sends, sc->max_recvs);
    } else if (strcmp(algo, "rhd") == 0) {
        CHECK_EQ_INT(s->nchunks, pw * pipe);
        CHECK_EQ_INT(s->nsteps, pow2 ? 2 * lg : 2 * lg + 2);
        CHECK_MSG(sc->max_sends == 1 && sc->max_recvs == 1,
                  "rhd n=%u not one-port (%u sends, %u recvs)", n,
                  sc->max_sends, sc->max_recvs);
    } else if (strcmp(algo, "allpairs") == 0) {
        uint32_t local = log2_ceil(n - 1);

        CHECK_EQ_INT(s->nchunks, n * pipe);
        CHECK_EQ_INT(sc->max_sends, n - 1);
        switch (coll) {
        case CCS_COLL_ALLREDUCE:
            CHECK_EQ_INT(sc->comm_steps, 2);
            CHECK_EQ_INT(s->nsteps, 2 + local);
            break;
        case CCS_COLL_REDUCESCATTER:
            CHECK_EQ_INT(sc->comm_steps, 1);
            CHECK_EQ_INT(s->nsteps, 1 + local);
            break;
        default:
            CHECK_EQ_INT(sc->comm_steps, 1);
            CHECK_EQ_INT(s->nsteps, 1);
            break;
        }
    } else {
        /* dbtree: K chunks per tree, at most 3 steps per level of the
         * (log2-deep) tree on top of the K-step pipeline. */
        uint32_t k = 8 * pipe, h = log2_floor(n) + 1;

        CHECK_EQ_INT(s->nchunks, coll == CCS_COLL_ALLREDUCE ? 2 * k : k);
        CHECK_MSG(s->nsteps >= k && s->nsteps <= k + 3 * h,
                  "dbtree %s n=%u: %u steps, want %u..%u",
                  ccs_coll_str(coll), n, s->nsteps, k, k + 3 * h);
        CHECK_MSG(sc->max_sends <= 4 && sc->max_recvs <= 4,
                  "dbtree n=%u: %u sends / %u recvs in a step", n,
                  sc->max_sends, sc->max_recvs);
    }
}

static void run_case(const char *algo, ccs_coll_t coll, uint32_t n,
                     uint32_t pipe, int32_t root, uint32_t *ncases)
{
    test_topo_t tt;
    const topo_t *t = topo_for(&tt, n);
    algo_params_t p;
    ccs_sched_t *s = NULL, *again = NULL;
    ccs_err_t err = { { 0 } };
    ccs_status_t st;
    symcheck_t sc = { 0 };
    char msg[512];
    verify_report_t rep;

    (*ncases)++;
    algo_params_init(&p);
    p.coll = coll;
    p.pipeline = pipe;
    p.root = root;
    st = algo_synthesize(algo, t, &p, &s, &err);
    CHECK_MSG(st == CCS_OK, "%s %s n=%u pipe=%u root=%d: %s", algo,
              ccs_coll_str(coll), n, pipe, root, ccs_err_msg(&err, st));
    if (st != CCS_OK)
        goto cleanup;
    st = ccs_sched_validate(s, &err);
    CHECK_MSG(st == CCS_OK, "%s %s n=%u: validate: %s", algo,
              ccs_coll_str(coll), n, ccs_err_msg(&err, st));
    if (st != CCS_OK)
        goto cleanup;
    if (ccs_coll_rooted(coll))
        CHECK_EQ_INT(s->root, root);
    CHECK_MSG(strcmp(s->algo, algo) == 0, "algo name '%s'", s->algo);
    CHECK_MSG(symcheck_run(s, &sc, msg, sizeof(msg)) == 0 &&
                  symcheck_post(s, &sc, msg, sizeof(msg)) == 0,
              "%s %s n=%u pipe=%u root=%d: %s", algo, ccs_coll_str(coll), n,
              pipe, root, msg);
    expect_counts(algo, coll, n, pipe, s, &sc);
    st = verify_sched(s, &rep, &err);
    CHECK_MSG(st == CCS_OK, "%s %s n=%u pipe=%u root=%d: verify_sched: %s",
              algo, ccs_coll_str(coll), n, pipe, root, ccs_err_msg(&err, st));
    if (st == CCS_OK) {
        CHECK_EQ_INT(rep.nsteps, s->nsteps);
        if (strcmp(algo, "ring") == 0 || strcmp(algo, "rhd") == 0)
            CHECK(rep.one_port);
    }
    /* Deterministic: the same inputs give the same ops. */
    st = algo_synthesize(algo, t, &p, &again, &err);
    CHECK_STATUS(st, CCS_OK);
    if (st == CCS_OK)
        CHECK_MSG(same_sched(s, again), "%s %s n=%u: two builds differ",
                  algo, ccs_coll_str(coll), n);

cleanup:
    symcheck_free(&sc);
    ccs_sched_destroy(s);
    ccs_sched_destroy(again);
    topo_done(&tt);
}

TEST(cross_product)
{
    static const uint32_t pipes[] = { 1, 3 };
    uint32_t ncases = 0;

    for (size_t a = 0; a < sizeof(baselines) / sizeof(baselines[0]); a++) {
        const algo_desc_t *d = algo_find(baselines[a]);

        CHECK_MSG(d != NULL && d->colls != 0, "%s not registered",
                  baselines[a]);
        if (d == NULL)
            continue;
        for (int c = 0; c < CCS_COLL_COUNT; c++) {
            if ((d->colls & ALGO_COLL_BIT(c)) == 0)
                continue;
            for (size_t i = 0; i < NRANK_COUNTS; i++) {
                uint32_t n = rank_counts[i];
                int32_t roots[3] = { 0, (int32_t)n / 2, (int32_t)n - 1 };
                int nroots = ccs_coll_rooted((ccs_coll_t)c) ? 3 : 1;

                for (size_t pi = 0; pi < 2; pi++) {
                    for (int ri = 0; ri < nroots; ri++) {
                        if (ri > 0 && roots[ri] == roots[ri - 1])
                            continue;
                        run_case(d->name, (ccs_coll_t)c, n, pipes[pi],
                                 roots[ri], &ncases);
                    }
                }
            }
        }
    }
    /* 4 allreduce + 2 ring + 3 allpairs collectives, 2 rooted dbtree ones
     * with up to 3 roots (fewer where n is small). */
    CHECK(ncases >= 2 * NRANK_COUNTS * 9 + 2 * 2 * (NRANK_COUNTS * 3 - 3));
    printf("cross_product: %u schedules built and checked\n", ncases);
}

/* The collectives each baseline promises (the CLI, README and e2e tests
 * rely on these). */
TEST(supported_collectives)
{
    static const struct {
        const char *algo;
        unsigned colls;
    } want[] = {
        { "ring", ALGO_COLL_BIT(CCS_COLL_ALLREDUCE) |
                  ALGO_COLL_BIT(CCS_COLL_REDUCESCATTER) |
                  ALGO_COLL_BIT(CCS_COLL_ALLGATHER) },
        { "rhd", ALGO_COLL_BIT(CCS_COLL_ALLREDUCE) },
        { "allpairs", ALGO_COLL_BIT(CCS_COLL_ALLREDUCE) |
                      ALGO_COLL_BIT(CCS_COLL_REDUCESCATTER) |
                      ALGO_COLL_BIT(CCS_COLL_ALLGATHER) |
                      ALGO_COLL_BIT(CCS_COLL_ALLTOALL) },
        { "dbtree", ALGO_COLL_BIT(CCS_COLL_ALLREDUCE) |
                    ALGO_COLL_BIT(CCS_COLL_REDUCE) |
                    ALGO_COLL_BIT(CCS_COLL_BROADCAST) },
    };

    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        const algo_desc_t *d = algo_find(want[i].algo);
        test_topo_t tt;
        const topo_t *t = topo_for(&tt, 4);

        CHECK(d != NULL);
        if (d == NULL) {
            topo_done(&tt);
            continue;
        }
        CHECK_EQ_INT(d->colls, want[i].colls);
        CHECK(d->desc != NULL && strlen(d->desc) > 10);
        for (int c = 0; c < CCS_COLL_COUNT; c++) {
            algo_params_t p;
            ccs_sched_t *s = NULL;
            ccs_err_t err = { { 0 } };

            if (d->colls & ALGO_COLL_BIT(c))
                continue;
            algo_params_init(&p);
            p.coll = (ccs_coll_t)c;
            CHECK_STATUS(algo_synthesize(d->name, t, &p, &s, &err),
                         CCS_ERR_UNSUPPORTED);
            CHECK_STR_CONTAINS(err.msg, "does not implement");
            CHECK(s == NULL);
        }
        topo_done(&tt);
    }
}

/* `check` names the reason a baseline cannot run. */
TEST(check_reasons)
{
    static const struct {
        const char *algo;
        ccs_coll_t coll;
        uint32_t n, nchunks;
        const char *msg;      /* NULL: must pass */
    } cases[] = {
        { "ring", CCS_COLL_ALLREDUCE, 1, 0, "1 GPU" },
        { "rhd", CCS_COLL_ALLREDUCE, 1, 0, "1 GPU" },
        { "allpairs", CCS_COLL_ALLREDUCE, 1, 0, "1 GPU" },
        { "dbtree", CCS_COLL_ALLREDUCE, 1, 0, "1 GPU" },
        { "ring", CCS_COLL_ALLREDUCE, 4, 6, "not a multiple" },
        { "ring", CCS_COLL_ALLREDUCE, 4, 8, NULL },
        { "allpairs", CCS_COLL_ALLTOALL, 3, 7, "not a multiple" },
        { "rhd", CCS_COLL_ALLREDUCE, 12, 7, "fewer than the 8" },
        { "rhd", CCS_COLL_ALLREDUCE, 12, 8, NULL },
        { "dbtree", CCS_COLL_ALLREDUCE, 5, 7, "must be even" },
        { "dbtree", CCS_COLL_REDUCE, 5, 7, NULL },
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const algo_desc_t *d = algo_find(cases[i].algo);
        topo_t t;
        algo_params_t p;
        ccs_err_t err = { { 0 } };
        ccs_status_t st;

        memset(&t, 0, sizeof(t));
        t.ngpus = (int32_t)cases[i].n;
        snprintf(t.name, sizeof(t.name), "hand:%u", cases[i].n);
        algo_params_init(&p);
        p.coll = cases[i].coll;
        p.nchunks = cases[i].nchunks;
        CHECK(d != NULL && d->check != NULL);
        if (d == NULL || d->check == NULL)
            continue;
        st = d->check(&t, &p, &err);
        if (cases[i].msg == NULL) {
            CHECK_MSG(st == CCS_OK, "case %zu: %s", i, err.msg);
        } else {
            CHECK_STATUS(st, CCS_ERR_UNSUPPORTED);
            CHECK_STR_CONTAINS(err.msg, cases[i].msg);
            CHECK_STR_CONTAINS(err.msg, cases[i].algo);
        }
    }
}

/* --chunks: the chunk count is honoured and the schedules stay correct,
 * including rhd's uneven halving. */
TEST(forced_chunks)
{
    static const struct {
        const char *algo;
        ccs_coll_t coll;
        uint32_t n, nchunks;
    } cases[] = {
        { "ring", CCS_COLL_ALLREDUCE, 6, 18 },
        { "ring", CCS_COLL_REDUCESCATTER, 5, 10 },
        { "rhd", CCS_COLL_ALLREDUCE, 8, 11 },
        { "rhd", CCS_COLL_ALLREDUCE, 12, 13 },
        { "rhd", CCS_COLL_ALLREDUCE, 7, 4 },
        { "allpairs", CCS_COLL_ALLREDUCE, 5, 15 },
        { "dbtree", CCS_COLL_ALLREDUCE, 9, 2 },
        { "dbtree", CCS_COLL_ALLREDUCE, 6, 30 },
        { "dbtree", CCS_COLL_BROADCAST, 6, 1 },
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        test_topo_t tt;
        const topo_t *t = topo_for(&tt, cases[i].n);
        algo_params_t p;
        ccs_sched_t *s = NULL;
        ccs_err_t err = { { 0 } };
        symcheck_t sc = { 0 };
        char msg[512];
        ccs_status_t st;

        algo_params_init(&p);
        p.coll = cases[i].coll;
        p.nchunks = cases[i].nchunks;
        st = algo_synthesize(cases[i].algo, t, &p, &s, &err);
        CHECK_MSG(st == CCS_OK, "case %zu: %s", i, ccs_err_msg(&err, st));
        if (st == CCS_OK) {
            CHECK_EQ_INT(s->nchunks, cases[i].nchunks);
            CHECK_STATUS(ccs_sched_validate(s, &err), CCS_OK);
            CHECK_MSG(symcheck_run(s, &sc, msg, sizeof(msg)) == 0 &&
                          symcheck_post(s, &sc, msg, sizeof(msg)) == 0,
                      "case %zu: %s", i, msg);
            CHECK_STATUS(verify_sched(s, NULL, &err), CCS_OK);
        }
        symcheck_free(&sc);
        ccs_sched_destroy(s);
        topo_done(&tt);
    }
}

/* NCCL's binary tree: a tree, at most 2 children, root with one child, odd
 * positions are the leaves, height <= floor(log2(n-1)) + 1; the double
 * tree's two trees are complementary. */
TEST(btree_shapes)
{
    for (uint32_t n = 1; n <= 300; n++) {
        tree_t tr[2] = { { 0 }, { 0 } };
        uint32_t *map = malloc(n * sizeof(*map));
        ccs_err_t err = { { 0 } };
        uint32_t both_leaf = 0, both_inner = 0;

        CHECK(map != NULL);
        if (map == NULL)
            return;
        for (int w = 0; w < 2; w++) {
            tree_dbtree_map(n, w, map);
            CHECK_STATUS(tree_btree(n, map, &tr[w], &err), CCS_OK);
            if (tr[w].parent == NULL)
                continue;
            CHECK_EQ_INT(tr[w].root, map[0]);
            CHECK_EQ_INT(tr[w].parent[tr[w].root], -1);
            if (n >= 2)
                CHECK_EQ_INT(tr[w].nchild[tr[w].root], 1);
            for (uint32_t pos = 1; pos < n; pos++) {
                uint32_t r = map[pos];
                CHECK(tr[w].parent[r] >= 0);
                CHECK(tr[w].nchild[r] <= 2);
                CHECK_EQ_INT(tr[w].nchild[r] == 0, pos % 2 == 1);
            }
            if (n >= 2)
                CHECK_MSG(tree_height(&tr[w]) <= log2_floor(n - 1) + 1,
                          "n=%u tree %d height %u", n, w,
                          tree_height(&tr[w]));
        }
        for (uint32_t r = 0; r < n && tr[0].nchild && tr[1].nchild; r++) {
            bool l0 = tr[0].nchild[r] == 0, l1 = tr[1].nchild[r] == 0;
            both_leaf += l0 && l1;
            both_inner += !l0 && !l1;
        }
        /* Even n: each rank is a leaf in exactly one tree.  Odd n: one
         * rank (rank 0) is interior in both. */
        if (n >= 2)
            CHECK_EQ_INT(both_leaf, 0);
        if (n >= 2)
            CHECK_MSG(both_inner == n % 2, "n=%u: %u ranks interior in "
                      "both trees", n, both_inner);
        tree_destroy(&tr[0]);
        tree_destroy(&tr[1]);
        free(map);
    }
    /* Not a permutation. */
    {
        uint32_t bad[3] = { 0, 2, 2 };
        tree_t t = { 0 };
        ccs_err_t err = { { 0 } };

        CHECK_STATUS(tree_btree(3, bad, &t, &err), CCS_ERR_INVALID);
        CHECK_STR_CONTAINS(err.msg, "permutation");
        tree_destroy(&t);
    }
}

/* The checker used above is not vacuous: it rejects broken schedules. */
TEST(symcheck_catches)
{
    static const struct {
        const char *what;
        int drop;            /* drop rank 1's op with this index, or -1 */
        int dup;             /* add a second write of rank 1's OUT 3 */
        const char *msg;
    } cases[] = {
        { "missing receive", 0, 0, "which receives 0" },
        { "double write", -1, 1, "written twice" },
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        test_topo_t tt;
        const topo_t *t = topo_for(&tt, 4);
        algo_params_t p;
        ccs_sched_t *s = NULL;
        symcheck_t sc = { 0 };
        char msg[512];
        int rc;

        algo_params_init(&p);
        CHECK_STATUS(algo_synthesize("ring", t, &p, &s, NULL), CCS_OK);
        if (s == NULL) {
            topo_done(&tt);
            continue;
        }
        if (cases[i].drop >= 0) {
            uint32_t r = 1, d = (uint32_t)cases[i].drop;
            memmove(&s->rank_ops[r][d], &s->rank_ops[r][d + 1],
                    (s->rank_nops[r] - d - 1) * sizeof(ccs_op_t));
            s->rank_nops[r]--;
        }
        if (cases[i].dup) {
            CHECK_STATUS(ccs_sched_xfer(s, 0, 0, CCS_BUF_IN, 3, 1,
                                        CCS_BUF_OUT, 3, 1, false, NULL),
                         CCS_OK);
            CHECK_STATUS(ccs_sched_finalize(s, NULL), CCS_OK);
        }
        rc = symcheck_run(s, &sc, msg, sizeof(msg));
        if (rc == 0)
            rc = symcheck_post(s, &sc, msg, sizeof(msg));
        CHECK_MSG(rc != 0, "%s not caught", cases[i].what);
        CHECK_STR_CONTAINS(msg, "step 0");
        CHECK_STR_CONTAINS(msg, cases[i].msg);
        symcheck_free(&sc);
        ccs_sched_destroy(s);
        topo_done(&tt);
    }
}

/* Every op of every baseline is needed: dropping any one of them must be
 * caught by both symcheck and verify_sched (so neither checker passes
 * these schedules vacuously, and the baselines carry no dead ops). */
TEST(every_op_matters)
{
    uint32_t dropped = 0;

    for (size_t a = 0; a < sizeof(baselines) / sizeof(baselines[0]); a++) {
        const algo_desc_t *d = algo_find(baselines[a]);

        for (int c = 0; d != NULL && c < CCS_COLL_COUNT; c++) {
            test_topo_t tt;
            const topo_t *t;
            algo_params_t p;
            ccs_sched_t *s = NULL;

            if ((d->colls & ALGO_COLL_BIT(c)) == 0)
                continue;
            t = topo_for(&tt, 5);
            algo_params_init(&p);
            p.coll = (ccs_coll_t)c;
            p.root = 3;
            p.nchunks = c == CCS_COLL_ALLREDUCE && a == 3 ? 4 : 0;
            CHECK_STATUS(algo_synthesize(d->name, t, &p, &s, NULL), CCS_OK);
            for (uint32_t r = 0; s != NULL && r < s->nranks; r++) {
                for (uint32_t i = 0; i < s->rank_nops[r]; i++) {
                    ccs_sched_t *m = NULL;
                    symcheck_t sc = { 0 };
                    char msg[512];
                    int rc;

                    CHECK_STATUS(ccs_sched_clone(s, &m, NULL), CCS_OK);
                    if (m == NULL)
                        continue;
                    memmove(&m->rank_ops[r][i], &m->rank_ops[r][i + 1],
                            (m->rank_nops[r] - i - 1) * sizeof(ccs_op_t));
                    m->rank_nops[r]--;
                    rc = symcheck_run(m, &sc, msg, sizeof(msg));
                    if (rc == 0)
                        rc = symcheck_post(m, &sc, msg, sizeof(msg));
                    CHECK_MSG(rc != 0, "%s %s: dropping rank %u op %u not "
                              "caught by symcheck", d->name,
                              ccs_coll_str((ccs_coll_t)c), r, i);
                    CHECK_MSG(verify_sched(m, NULL, NULL) != CCS_OK,
                              "%s %s: dropping rank %u op %u not caught by "
                              "verify_sched", d->name,
                              ccs_coll_str((ccs_coll_t)c), r, i);
                    dropped++;
                    symcheck_free(&sc);
                    ccs_sched_destroy(m);
                }
            }
            ccs_sched_destroy(s);
            topo_done(&tt);
        }
    }
    CHECK(dropped > 500);
    printf("every_op_matters: %u single-op deletions caught\n", dropped);
}

int main(void)
{
    topo_global_init();
    RUN(cross_product);
    RUN(supported_collectives);
    RUN(check_reasons);
    RUN(forced_chunks);
    RUN(btree_shapes);
    RUN(symcheck_catches);
    RUN(every_op_matters);
    return TEST_SUMMARY();
}
