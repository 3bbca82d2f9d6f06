/*
 * test_sim.c - the alpha-beta simulator: closed forms, max-min sharing,
 * step semantics, stragglers, errors.
 *
 * The first group of tests builds topologies and schedules by hand (a star
 * of GPUs around one switch, routed by the test itself) so the simulator
 * is checked against arithmetic done here, independent of the topology
 * module and the algorithms.  The second group uses topo_load and the
 * registered algorithms (switch:N closed forms, torus contention).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../runtime/sched.h"
#include "algo.h"
#include "sim.h"
#include "sim_queue.h"
#include "topo.h"
#include "verify.h"
#include "harness.h"

/* ---- hand-built topologies ---- */

/* A star: GPUs 0..n-1 (node i) around switch node n.  Link 2i is gpu i ->
 * switch, link 2i+1 is switch -> gpu i.  `extra` more parallel copies of
 * gpu 0 -> switch may be appended (ids 2n, 2n+1, ...). */
typedef struct star {
    topo_t t;
    topo_node_t nodes[70];
    topo_link_t links[150];
    int32_t rank_node[64];
} star_t;

static void star_init(star_t *st, int n, double alpha, double bw, int extra)
{
    memset(st, 0, sizeof(*st));
    snprintf(st->t.name, sizeof(st->t.name), "star:%d", n);
    for (int i = 0; i < n; i++) {
        st->nodes[i].kind = TOPO_NODE_GPU;
        st->nodes[i].rank = i;
        st->rank_node[i] = i;
        st->links[2 * i] = (topo_link_t){ i, n, alpha, bw };
        st->links[2 * i + 1] = (topo_link_t){ n, i, alpha, bw };
    }
    st->nodes[n].kind = TOPO_NODE_SWITCH;
    st->nodes[n].rank = -1;
    for (int k = 0; k < extra; k++)
        st->links[2 * n + k] = (topo_link_t){ 0, n, alpha, bw };
    st->t.nnodes = n + 1;
    st->t.nlinks = 2 * n + extra;
    st->t.ngpus = n;
    st->t.nservers = 1;
    st->t.nodes = st->nodes;
    st->t.links = st->links;
    st->t.rank_node = st->rank_node;
}

/* Route on a star: up the source's link, down the destination's. */
static ccs_status_t star_route(const topo_t *t, int32_t src, int32_t dst,
                               int32_t *links, int32_t cap, int32_t *nhops,
                               void *ctx, ccs_err_t *err)
{
    (void)ctx;
    if (cap < 2 || src == dst || src >= t->ngpus || dst >= t->ngpus)
        return ccs_err_set(err, CCS_ERR_TOPOLOGY, "star_route %d->%d", src,
                           dst);
    links[0] = 2 * src;
    links[1] = 2 * dst + 1;
    *nhops = 2;
    return CCS_OK;
}

static void star_opts(sim_opts_t *o)
{
    sim_opts_init(o);
    o->route = star_route;
}

/* ---- hand-built schedules ---- */

/* Ring allreduce over n ranks, n chunks: n-1 reduce-scatter steps, n-1
 * all-gather steps. */
static ccs_sched_t *make_ring(uint32_t n)
{
    ccs_sched_t *s = NULL;
    uint32_t step;

    if (ccs_sched_create(CCS_COLL_ALLREDUCE, n, n, "ring", &s, NULL) != CCS_OK)
        return NULL;
    for (uint32_t k = 0; k + 1 < n; k++) {
        ccs_sched_add_step(s, 0, &step, NULL);
        /* A local op in step 0 (for the local-cost test). */
        for (uint32_t r = 0; k == 0 && r < n; r++)
            ccs_sched_local(s, step, r, CCS_BUF_OUT, r, CCS_BUF_IN, r, 1,
                            false, NULL);
        for (uint32_t r = 0; r < n; r++) {
            uint32_t c = (r + n - k) % n, dst = (r + 1) % n;
            ccs_sched_xfer_reduce_from(s, step, r,
                                       k == 0 ? CCS_BUF_IN : CCS_BUF_OUT, c,
                                       dst, CCS_BUF_OUT, c, CCS_BUF_IN, c, 1,
                                       NULL);
        }
    }
    for (uint32_t k = 0; k + 1 < n; k++) {
        ccs_sched_add_step(s, 0, &step, NULL);
        for (uint32_t r = 0; r < n; r++) {
            uint32_t c = (r + 1 + n - k) % n, dst = (r + 1) % n;
            ccs_sched_xfer(s, step, r, CCS_BUF_OUT, c, dst, CCS_BUF_OUT, c,
                           1, false, NULL);
        }
    }
    if (ccs_sched_finalize(s, NULL) != CCS_OK) {
        ccs_sched_destroy(s);
        return NULL;
    }
    return s;
}

/* All-pairs allreduce: each rank sends chunk j to rank j (reduce), then
 * every rank j sends its reduced chunk to everyone. */
static ccs_sched_t *make_allpairs(uint32_t n)
{
    ccs_sched_t *s = NULL;
    uint32_t s0, s1;

    if (ccs_sched_create(CCS_COLL_ALLREDUCE, n, n, "allpairs", &s, NULL) !=
        CCS_OK)
        return NULL;
    ccs_sched_add_step(s, 0, &s0, NULL);
    ccs_sched_add_step(s, 0, &s1, NULL);
    for (uint32_t r = 0; r < n; r++)
        ccs_sched_local(s, s0, r, CCS_BUF_SCRATCH, 0, CCS_BUF_IN, r, 1, false,
                        NULL);
    for (uint32_t r = 0; r < n; r++)
        for (uint32_t j = 0; j < n; j++)
            if (j != r)
                ccs_sched_xfer(s, s0, r, CCS_BUF_IN, j, j, CCS_BUF_OUT, j, 1,
                               true, NULL);
    for (uint32_t r = 0; r < n; r++)
        for (uint32_t j = 0; j < n; j++)
            if (j != r)
                ccs_sched_xfer(s, s1, r, CCS_BUF_OUT, r, j, CCS_BUF_OUT, r, 1,
                               false, NULL);
    if (ccs_sched_finalize(s, NULL) != CCS_OK) {
        ccs_sched_destroy(s);
        return NULL;
    }
    return s;
}

/* A schedule from a list of transfers {step, phase, src, dst, nchunks}. */
typedef struct xf {
    uint32_t step, phase, src, dst, n;
} xf_t;

static ccs_sched_t *make_xfers(uint32_t nranks, uint32_t nchunks,
                               const xf_t *x, int nx)
{
    ccs_sched_t *s = NULL;
    uint32_t step;
    uint32_t maxstep = 0;

    if (ccs_sched_create(CCS_COLL_ALLREDUCE, nranks, nchunks, "hand", &s,
                         NULL) != CCS_OK)
        return NULL;
    for (int i = 0; i < nx; i++)
        if (x[i].step > maxstep)
            maxstep = x[i].step;
    for (uint32_t t = 0; t <= maxstep; t++) {
        uint32_t ph = 0;
        for (int i = 0; i < nx; i++)
            if (x[i].step == t)
                ph = x[i].phase;
        ccs_sched_add_step(s, ph, &step, NULL);
    }
    for (int i = 0; i < nx; i++)
        ccs_sched_xfer(s, x[i].step, x[i].src, CCS_BUF_IN, 0, x[i].dst,
                       CCS_BUF_SCRATCH, 0, x[i].n, false, NULL);
    if (ccs_sched_finalize(s, NULL) != CCS_OK) {
        ccs_sched_destroy(s);
        return NULL;
    }
    return s;
}

static double sim_time(const ccs_sched_t *s, const topo_t *t, double size,
                       const sim_opts_t *o)
{
    sim_result_t r;
    ccs_err_t err = { { 0 } };
    ccs_status_t st = sim_run(s, t, size, o, &r, &err);
    double v;

    if (st != CCS_OK) {
        fprintf(stderr, "sim_run: %s\n", ccs_err_msg(&err, st));
        return -1;
    }
    v = r.time_s;
    sim_result_free(&r);
    return v;
}

/* ---- tests on hand-built inputs ---- */

TEST(ring_closed_form_star)
{
    static const struct { uint32_t n; double size; } cases[] = {
        { 2, 1024 }, { 3, 3 * 1000.0 }, { 8, 1 << 20 }, { 16, 1 << 30 },
        { 64, 64.0 * 12345 },
    };
    const double la = 1.5e-6, bw = 50e9;

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        uint32_t n = cases[i].n;
        double s = cases[i].size, a = 2 * la, b = 1 / bw;
        double want = 2 * (n - 1) * a + 2.0 * (n - 1) / n * s * b;
        star_t st;
        sim_opts_t o;
        ccs_sched_t *sc = make_ring(n);

        CHECK(sc != NULL);
        if (sc == NULL)
            continue;
        star_init(&st, (int)n, la, bw, 0);
        star_opts(&o);
        CHECK_NEAR(sim_time(sc, &st.t, s, &o), want, 1e-9);
        o.mode = SIM_MODE_BARRIER;
        CHECK_NEAR(sim_time(sc, &st.t, s, &o), want, 1e-9);
        ccs_sched_destroy(sc);
    }
}

/* Each rank's n-1 concurrent sends share its one uplink. */
TEST(allpairs_shares_uplink)
{
    static const uint32_t ns[] = { 2, 4, 7, 32 };
    const double la = 1e-6, bw = 25e9;

    for (size_t i = 0; i < sizeof(ns) / sizeof(ns[0]); i++) {
        uint32_t n = ns[i];
        double s = 1048576.0 * n, a = 2 * la, b = 1 / bw;
        double want = 2 * a + 2.0 * (n - 1) / n * s * b;
        star_t st;
        sim_opts_t o;
        ccs_sched_t *sc = make_allpairs(n);

        CHECK(sc != NULL);
        if (sc == NULL)
            continue;
        star_init(&st, (int)n, la, bw, 0);
        star_opts(&o);
        CHECK_NEAR(sim_time(sc, &st.t, s, &o), want, 1e-9);
        ccs_sched_destroy(sc);
    }
}

/* Two sends over one uplink in a step take longer than two sends over
 * different links. */
TEST(contention_slows_step)
{
    static const xf_t shared[] = { { 0, 0, 0, 1, 1 }, { 0, 0, 0, 2, 1 } };
    static const xf_t apart[] = { { 0, 0, 0, 1, 1 }, { 0, 0, 3, 2, 1 } };
    const double la = 1e-6, bw = 10e9, size = 4e6;
    star_t st;
    sim_opts_t o;
    ccs_sched_t *a = make_xfers(4, 1, shared, 2);
    ccs_sched_t *b = make_xfers(4, 1, apart, 2);

    CHECK(a != NULL && b != NULL);
    star_init(&st, 4, la, bw, 0);
    star_opts(&o);
    if (a != NULL && b != NULL) {
        double ta = sim_time(a, &st.t, size, &o);
        double tb = sim_time(b, &st.t, size, &o);
        CHECK_NEAR(ta, 2 * la + 2 * size / bw, 1e-12);
        CHECK_NEAR(tb, 2 * la + size / bw, 1e-12);
        CHECK(ta > tb);
    }
    ccs_sched_destroy(a);
    ccs_sched_destroy(b);
}

/* Max-min fairness, not equal share: f1 0->1 is held to 0.25 by its
 * downlink, so f2 0->2 gets the 0.75 left on the shared uplink; f3 3->2 is
 * held by its own uplink (1.0) since gpu2's downlink is 2.0 wide. */
TEST(max_min_fair_rates)
{
    static const xf_t x[] = {
        { 0, 0, 0, 1, 1 }, { 0, 0, 0, 2, 1 }, { 0, 0, 3, 2, 1 },
    };
    star_t st;
    sim_opts_t o;
    sim_result_t r;
    ccs_err_t err = { { 0 } };
    ccs_sched_t *s = make_xfers(4, 1, x, 3);

    CHECK(s != NULL);
    star_init(&st, 4, 0, 1.0, 0);
    st.links[2 * 1 + 1].bw_Bps = 0.25;  /* switch -> gpu1 */
    st.links[2 * 2 + 1].bw_Bps = 2.0;   /* switch -> gpu2 */
    star_opts(&o);
    CHECK_STATUS(sim_run(s, &st.t, 1.0, &o, &r, &err), CCS_OK);
    if (r.rank_finish_s != NULL) {
        CHECK_NEAR(r.rank_finish_s[3], 1.0, 1e-12);
        CHECK_NEAR(r.rank_finish_s[2], 1.0 / 0.75, 1e-12);
        CHECK_NEAR(r.rank_finish_s[1], 4.0, 1e-12);
        CHECK_NEAR(r.rank_finish_s[0], 4.0, 1e-12);
        CHECK_NEAR(r.time_s, 4.0, 1e-12);
        CHECK_EQ_INT(r.ntransfers, 3);
    }
    sim_result_free(&r);
    ccs_sched_destroy(s);
}

/* A flow speeds up when the flow it shared a link with finishes. */
TEST(rates_change_on_finish)
{
    static const xf_t x[] = { { 0, 0, 0, 1, 1 }, { 0, 0, 0, 2, 3 } };
    star_t st;
    sim_opts_t o;
    sim_result_t r;
    ccs_sched_t *s = make_xfers(3, 3, x, 2);

    CHECK(s != NULL);
    star_init(&st, 3, 0, 1.0, 0);
    star_opts(&o);
    /* chunk = 1 byte: f1 1 byte, f2 3 bytes; both at 0.5 until t = 2, then
     * f2's remaining 2 bytes at 1.0. */
    CHECK_STATUS(sim_run(s, &st.t, 3.0, &o, &r, NULL), CCS_OK);
    if (r.rank_finish_s != NULL) {
        CHECK_NEAR(r.rank_finish_s[1], 2.0, 1e-12);
        CHECK_NEAR(r.rank_finish_s[2], 4.0, 1e-12);
        CHECK(r.busiest_link == 0);        /* gpu0 -> switch */
        CHECK_NEAR(r.busiest_util, 1.0, 1e-12);
    }
    sim_result_free(&r);
    ccs_sched_destroy(s);
}

/* k parallel links between two nodes are one pipe k times as wide. */
TEST(parallel_links_one_pipe)
{
    static const xf_t x[] = { { 0, 0, 0, 1, 1 } };
    star_t st;
    sim_opts_t o;
    ccs_sched_t *s = make_xfers(2, 1, x, 1);
    const double bw = 1e9, size = 1e6;

    CHECK(s != NULL);
    /* Up link 0 has two extra copies (3 wide); the down link of gpu1 is made
     * 4 wide so the uplink is the bottleneck. */
    star_init(&st, 2, 0, bw, 2);
    st.links[3].bw_Bps = 4 * bw;
    star_opts(&o);
    CHECK_NEAR(sim_time(s, &st.t, size, &o), size / (3 * bw), 1e-12);
    ccs_sched_destroy(s);
}

/* Per-rank steps overlap independent work; a barrier serialises it. */
TEST(rank_vs_barrier)
{
    static const xf_t x[] = { { 0, 0, 0, 1, 4 }, { 1, 0, 2, 3, 1 } };
    star_t st;
    sim_opts_t o;
    ccs_sched_t *s = make_xfers(4, 4, x, 2);
    const double la = 1e-6, bw = 1e9, size = 4e6;
    double big = 2 * la + size / bw, small = 2 * la + size / 4 / bw;

    CHECK(s != NULL);
    star_init(&st, 4, la, bw, 0);
    star_opts(&o);
    CHECK_NEAR(sim_time(s, &st.t, size, &o), big, 1e-12);
    o.mode = SIM_MODE_BARRIER;
    CHECK_NEAR(sim_time(s, &st.t, size, &o), big + small, 1e-12);
    ccs_sched_destroy(s);
}

/* A straggler on ring allreduce delays the whole collective by exactly D,
 * in both step modes. */
TEST(straggler_adds_delay_ring)
{
    static const double delays[] = { 1e-6, 5e-3, 0.25 };
    const uint32_t n = 8;
    const double la = 2e-6, bw = 100e9, size = 256.0 * 1048576;
    star_t st;
    sim_opts_t o;
    ccs_sched_t *s = make_ring(n);

    CHECK(s != NULL);
    star_init(&st, (int)n, la, bw, 0);
    for (int mode = 0; mode < SIM_MODE_COUNT && s != NULL; mode++) {
        star_opts(&o);
        o.mode = (sim_mode_t)mode;
        double base = sim_time(s, &st.t, size, &o);
        for (size_t i = 0; i < sizeof(delays) / sizeof(delays[0]); i++) {
            for (int32_t r = 0; r < (int32_t)n; r += 3) {
                o.straggler = r;
                o.straggler_delay_s = delays[i];
                CHECK_NEAR(sim_time(s, &st.t, size, &o), base + delays[i],
                           1e-12);
            }
        }
    }
    ccs_sched_destroy(s);
}

/* Phase 0 without the straggler runs from time 0; the straggler's own
 * phase-1 ops start at its arrival. */
TEST(straggler_phase0_runs_early)
{
    static const xf_t x[] = {
        { 0, 0, 0, 1, 1 }, { 0, 0, 1, 0, 1 },   /* phase 0: ranks 0, 1 */
        { 1, 1, 2, 0, 1 }, { 1, 1, 0, 2, 1 },   /* phase 1 with rank 2 */
    };
    const double la = 1e-6, bw = 1e9, size = 1e6, d = 5e-3;
    double step = 2 * la + size / bw;
    star_t st;
    sim_opts_t o;
    sim_result_t r;
    ccs_sched_t *s = make_xfers(3, 1, x, 4);

    CHECK(s != NULL);
    star_init(&st, 3, la, bw, 0);
    for (int mode = 0; mode < SIM_MODE_COUNT && s != NULL; mode++) {
        star_opts(&o);
        o.mode = (sim_mode_t)mode;
        o.straggler = 2;
        o.straggler_delay_s = d;
        CHECK_STATUS(sim_run(s, &st.t, size, &o, &r, NULL), CCS_OK);
        if (r.phase_end_s == NULL)
            continue;
        CHECK_EQ_INT(r.nphases, 2);
        CHECK_NEAR(r.phase_end_s[0], step, 1e-12);
        CHECK_NEAR(r.phase_end_s[1], d + step, 1e-12);
        CHECK_NEAR(r.time_s, d + step, 1e-12);
        CHECK_NEAR(r.rank_finish_s[1], step, 1e-12);
        sim_result_free(&r);
    }
    ccs_sched_destroy(s);
}

/* Per-rank arrivals: the latest arrival bounds the ring from below, and an
 * arrivals file parses into the same array. */
TEST(arrivals_file)
{
    char path[] = "/tmp/test_sim_arrXXXXXX";
    int fd = mkstemp(path);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    double *arr = NULL;
    ccs_err_t err = { { 0 } };

    CHECK(f != NULL);
    if (f == NULL)
        return;
    fprintf(f, "# rank seconds\n0 0\n3 2ms\n\n5 0.001 # late\n");
    fclose(f);
    CHECK_STATUS(sim_read_arrivals(path, 8, &arr, &err), CCS_OK);
    if (arr != NULL) {
        CHECK_NEAR(arr[3], 2e-3, 1e-15);
        CHECK_NEAR(arr[5], 1e-3, 1e-15);
        CHECK(arr[1] == 0 && arr[7] == 0);
        star_t st;
        sim_opts_t o;
        ccs_sched_t *s = make_ring(8);
        star_init(&st, 8, 1e-6, 1e9, 0);
        star_opts(&o);
        double base = sim_time(s, &st.t, 1 << 20, &o);
        o.arrival_s = arr;
        /* rank 3 arrives last: its 14 steps run after 2 ms at least. */
        CHECK_NEAR(sim_time(s, &st.t, 1 << 20, &o), base + 2e-3, 1e-12);
        ccs_sched_destroy(s);
    }
    free(arr);
    arr = NULL;
    unlink(path);
}

/* Bad arrivals files: each gives CCS_ERR_PARSE naming file:line and what
 * is wrong, and no array; a comment longer than any line buffer is fine. */
TEST(arrivals_errors)
{
    static const struct {
        const char *text;
        ccs_status_t want;
        const char *msg;       /* after "<path>" */
    } cases[] = {
        { "9 1\n", CCS_ERR_PARSE, ":1: rank 9 out of range 0..7" },
        { "-1 1\n", CCS_ERR_PARSE, ":1: rank -1 out of range" },
        { "0 0\nx 1\n", CCS_ERR_PARSE, ":2: bad rank 'x'" },
        { "1.5 1\n", CCS_ERR_PARSE, ":1: bad rank '1.5'" },
        { "\n# c\n3\n", CCS_ERR_PARSE, ":3: expected \"rank seconds\"" },
        { "3 abc\n", CCS_ERR_PARSE, ":1: bad time 'abc'" },
        { "3 -1ms\n", CCS_ERR_PARSE, ":1: bad time '-1ms'" },
        { "3 1xs\n", CCS_ERR_PARSE, ":1: bad time '1xs'" },
        { "3 nan\n", CCS_ERR_PARSE, ":1: bad time 'nan'" },
        { "3 1ms 4\n", CCS_ERR_PARSE, ":1: unexpected '4' after the time" },
        { "3 1ms\n4 0\n3 2ms\n", CCS_ERR_PARSE,
          ":3: rank 3 listed again (first on line 1)" },
        { NULL, CCS_OK, "" },  /* a 400-character comment, then "3 1ms" */
    };
    char path[] = "/tmp/test_sim_arrbadXXXXXX";
    int fd = mkstemp(path);

    CHECK(fd >= 0);
    if (fd < 0)
        return;
    close(fd);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        FILE *f = fopen(path, "w");
        double *arr = NULL;
        ccs_err_t err = { { 0 } };
        char want[256];

        CHECK(f != NULL);
        if (f == NULL)
            break;
        if (cases[i].text != NULL) {
            fputs(cases[i].text, f);
        } else {
            fputc('#', f);
            for (int k = 0; k < 400; k++)
                fputc('x', f);
            fputs("\n3 1ms\n", f);
        }
        fclose(f);
        CHECK_STATUS(sim_read_arrivals(path, 8, &arr, &err), cases[i].want);
        if (cases[i].want != CCS_OK) {
            snprintf(want, sizeof(want), "%s%s", path, cases[i].msg);
            CHECK_STR_CONTAINS(err.msg, want);
            CHECK(arr == NULL);
        } else if (arr != NULL) {
            CHECK_NEAR(arr[3], 1e-3, 1e-15);
        }
        free(arr);
    }
    unlink(path);
    /* A missing file or a directory is bad input (exit 3 in the CLI), with
     * a message that says which, not an internal I/O failure. */
    {
        ccs_err_t err = { { 0 } };
        topo_t *t = NULL;
        CHECK_STATUS(sim_read_arrivals("/nonexistent/arrivals.txt", 8, NULL,
                                       &err), CCS_ERR_PARSE);
        CHECK_STR_CONTAINS(err.msg, "/nonexistent/arrivals.txt: cannot read "
                                    "the arrivals file: No such file");
        CHECK_STATUS(sim_read_arrivals("/tmp", 8, NULL, &err),
                     CCS_ERR_PARSE);
        CHECK_STR_CONTAINS(err.msg, "/tmp: is a directory, not an arrivals "
                                    "file");
        /* The same for a directory given as a topology. */
        CHECK_STATUS(topo_load("/tmp/", NULL, &t, &err), CCS_ERR_TOPOLOGY);
        CHECK_STR_CONTAINS(err.msg, "/tmp/: is a directory, not a topology "
                                    "file");
        CHECK(t == NULL);
    }
}

/* Chunks are padded as the runtime pads them; local ops cost bytes / bw. */
TEST(padding_and_local_cost)
{
    static const xf_t x[] = { { 0, 0, 0, 1, 1 } };
    star_t st;
    sim_opts_t o;
    sim_result_t r;
    ccs_sched_t *s = make_xfers(2, 4, x, 1);
    ccs_sched_t *ring = make_ring(4);

    CHECK(s != NULL && ring != NULL);
    star_init(&st, 4, 0, 1.0, 0);
    st.t.ngpus = 2;
    star_opts(&o);
    CHECK_STATUS(sim_run(s, &st.t, 10, &o, &r, NULL), CCS_OK);
    CHECK_NEAR(r.chunk_bytes, 3, 0);           /* ceil(10 / 4) */
    CHECK_NEAR(r.time_s, 3, 1e-12);
    sim_result_free(&r);
    o.elem_bytes = 4;                          /* 3 elements -> 1 each */
    CHECK_STATUS(sim_run(s, &st.t, 10, &o, &r, NULL), CCS_OK);
    CHECK_NEAR(r.chunk_bytes, 4, 0);
    sim_result_free(&r);
    /* Zero bytes: only the alphas remain. */
    star_init(&st, 4, 1e-6, 1.0, 0);
    star_opts(&o);
    CHECK_NEAR(sim_time(ring, &st.t, 0, &o), 6 * 2e-6, 1e-12);
    /* Ring's step-0 COPY of one chunk at 1 byte/s: 4-byte chunks add 4 s
     * to step 0 (it overlaps the transfers of that step: 8 us of alpha). */
    star_init(&st, 4, 0, 1e9, 0);
    star_opts(&o);
    double t0 = sim_time(ring, &st.t, 16, &o);
    o.local_bw_Bps = 1.0;
    CHECK_NEAR(sim_time(ring, &st.t, 16, &o), t0 + 4.0 - 4 / 1e9, 1e-9);
    ccs_sched_destroy(s);
    ccs_sched_destroy(ring);
}

TEST(errors_are_named)
{
    star_t st;
    sim_opts_t o;
    sim_result_t r;
    ccs_err_t err = { { 0 } };
    ccs_sched_t *s = make_ring(4);
    ccs_sched_t *lone = NULL;
    ccs_op_t send = { 0, CCS_OP_SEND, CCS_BUF_IN, 0, 0, 1, 0, 0, 1 };
    uint32_t step;

    star_init(&st, 5, 1e-6, 1e9, 0);
    star_opts(&o);
    CHECK_STATUS(sim_run(s, &st.t, 1024, &o, &r, &err), CCS_ERR_MISMATCH);
    CHECK_STR_CONTAINS(err.msg, "4 ranks");
    star_init(&st, 4, 1e-6, 1e9, 0);
    o.straggler = 4;
    CHECK_STATUS(sim_run(s, &st.t, 1024, &o, &r, &err), CCS_ERR_INVALID);
    star_opts(&o);
    CHECK_STATUS(sim_run(s, &st.t, -1, &o, &r, &err), CCS_ERR_INVALID);
    st.links[3].bw_Bps = 0;
    CHECK_STATUS(sim_run(s, &st.t, 1024, &o, &r, &err), CCS_ERR_TOPOLOGY);
    CHECK_STR_CONTAINS(err.msg, "link 3");
    /* A send nobody receives. */
    star_init(&st, 2, 1e-6, 1e9, 0);
    CHECK_STATUS(ccs_sched_create(CCS_COLL_ALLREDUCE, 2, 1, "x", &lone, NULL),
                 CCS_OK);
    CHECK_STATUS(ccs_sched_add_step(lone, 0, &step, NULL), CCS_OK);
    CHECK_STATUS(ccs_sched_add_op(lone, 0, &send, NULL), CCS_OK);
    CHECK_STATUS(sim_run(lone, &st.t, 1024, &o, &r, &err), CCS_ERR_VERIFY);
    CHECK_STR_CONTAINS(err.msg, "step 0");
    ccs_sched_destroy(lone);
    ccs_sched_destroy(s);
}

/* One prepared simulation serves many sizes with the same answers as
 * one-shot runs, and runs are repeatable bit for bit. */
TEST(prepared_reuse_deterministic)
{
    star_t st;
    sim_opts_t o;
    sim_t *sim = NULL;
    ccs_sched_t *s = make_allpairs(6);
    static const double sizes[] = { 0, 6, 6e3, 6e6, 6e3 };

    star_init(&st, 6, 1e-6, 1e9, 0);
    star_opts(&o);
    CHECK_STATUS(sim_create(s, &st.t, &o, &sim, NULL), CCS_OK);
    for (size_t i = 0; sim != NULL && i < sizeof(sizes) / sizeof(sizes[0]);
         i++) {
        sim_result_t r;
        CHECK_STATUS(sim_exec(sim, sizes[i], &o, &r, NULL), CCS_OK);
        CHECK(r.time_s == sim_time(s, &st.t, sizes[i], &o));
        sim_result_free(&r);
    }
    sim_destroy(sim);
    ccs_sched_destroy(s);
}

/* --sizes: what each spec expands to, and what each bad one says. */
TEST(size_lists)
{
    static const struct {
        const char *spec;
        uint32_t n;
        double first, last;
    } good[] = {
        { "1K:4G", 23, 1024, 4294967296.0 },          /* doubling */
        { "1K:1M:4", 6, 1024, 1048576 },
        { "1K:1M:3", 7, 1024, 746496 },               /* stops below HI */
        { "64M", 1, 67108864, 67108864 },
        { "8M,1G,17", 3, 8388608, 17 },
        { "0:1K", 1, 0, 0 },                          /* 0 once */
        { "1K:2K:1.5", 2, 1024, 1536 },
        { "1.5K", 1, 1536, 1536 },
        { "8T", 1, 8796093022208.0, 8796093022208.0 },
    };
    static const struct { const char *spec, *msg; } bad[] = {
        { "", "empty size list" },
        { "4G:1K", "4294967296 > 1024" },
        { "1K:4G:1", "FACTOR > 1" },
        { "1K:4G:0.5", "FACTOR > 1" },
        { "1K:4G:x", "bad size list '1K:4G:x'" },
        { "1X", "bad size list '1X'" },
        { "-1K", "bad size list '-1K'" },
        { "1K:", "bad size list '1K:'" },
        { ":1K", "bad size list ':1K'" },
        { "1e20", "more than 2^53" },
        { "1:1e9:1.0001", "more than 4096 sizes" },
    };
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        double *v = NULL;
        uint32_t n = 0;
        ccs_err_t err = { { 0 } };
        CHECK_STATUS(sim_parse_sizes(good[i].spec, &v, &n, &err), CCS_OK);
        CHECK_MSG(n == good[i].n, "'%s': %u sizes, want %u", good[i].spec,
                  n, good[i].n);
        if (v != NULL && n > 0) {
            CHECK_NEAR(v[0], good[i].first, 0);
            CHECK_NEAR(v[n - 1], good[i].last, 0);
        }
        free(v);
    }
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        double *v = NULL;
        uint32_t n = 0;
        ccs_err_t err = { { 0 } };
        CHECK_STATUS(sim_parse_sizes(bad[i].spec, &v, &n, &err),
                     CCS_ERR_INVALID);
        CHECK_STR_CONTAINS(err.msg, bad[i].msg);
        CHECK(v == NULL);
    }
}

TEST(busbw_factors)
{
    static const struct { ccs_coll_t c; uint32_t n; double f; } cases[] = {
        { CCS_COLL_ALLREDUCE, 8, 1.75 },
        { CCS_COLL_REDUCESCATTER, 4, 0.75 },
        { CCS_COLL_ALLGATHER, 2, 0.5 },
        { CCS_COLL_ALLTOALL, 16, 15.0 / 16 },
        { CCS_COLL_BROADCAST, 8, 1 },
        { CCS_COLL_REDUCE, 3, 1 },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        CHECK_NEAR(sim_busbw_factor(cases[i].c, cases[i].n), cases[i].f,
                   1e-15);
}

/* ---- tests on the real topologies and algorithms ---- */

/* Synthesize + verify; NULL (and a note) when the pieces are missing. */
static ccs_sched_t *synth(const char *algo, const topo_t *t, ccs_coll_t coll)
{
    algo_params_t p;
    ccs_sched_t *s = NULL;
    ccs_err_t err = { { 0 } };
    ccs_status_t st;

    algo_params_init(&p);
    p.coll = coll;
    st = algo_synthesize(algo, t, &p, &s, &err);
    if (st != CCS_OK) {
        FAIL_AT("synthesize %s on %s: %s", algo, t->name,
                ccs_err_msg(&err, st));
        return NULL;
    }
    st = verify_sched(s, NULL, &err);
    if (st != CCS_OK) {
        FAIL_AT("verify %s on %s: %s", algo, t->name, ccs_err_msg(&err, st));
        ccs_sched_destroy(s);
        return NULL;
    }
    return s;
}

static topo_t *load(const char *spec)
{
    topo_t *t = NULL;
    ccs_err_t err = { { 0 } };
    ccs_status_t st = topo_load(spec, NULL, &t, &err);

    if (st != CCS_OK) {
        FAIL_AT("topo_load %s: %s", spec, ccs_err_msg(&err, st));
        return NULL;
    }
    return t;
}

/* Route alpha and bottleneck beta between ranks 0 and 1. */
static bool pair_ab(const topo_t *t, double *a, double *b)
{
    int32_t links[64], nh = 0;
    double bw = 0;

    if (topo_route(t, t->rank_node[0], t->rank_node[1], links, 64, &nh,
                   NULL) != CCS_OK)
        return false;
    *a = 0;
    for (int32_t h = 0; h < nh; h++) {
        const topo_link_t *l = &t->links[links[h]];
        int32_t k = topo_links_between(t, l->src, l->dst, NULL, 0);
        *a += l->alpha_s;
        if (bw == 0 || l->bw_Bps * k < bw)
            bw = l->bw_Bps * k;
    }
    *b = 1 / bw;
    return nh > 0;
}

TEST(closed_forms_switch)
{
    static const uint32_t ns[] = { 2, 4, 8, 16, 64 };
    static const double sizes[] = { 4096, 1048576, 1073741824.0 };

    for (size_t i = 0; i < sizeof(ns) / sizeof(ns[0]); i++) {
        char spec[32];
        uint32_t n = ns[i];
        double a = 0, b = 0, lg = log2((double)n);
        topo_t *t;
        static const char *const algos[] = { "ring", "rhd", "allpairs" };

        snprintf(spec, sizeof(spec), "switch:%u", n);
        t = load(spec);
        if (t == NULL)
            continue;
        CHECK(pair_ab(t, &a, &b));
        for (size_t k = 0; k < 3; k++) {
            ccs_sched_t *s = synth(algos[k], t, CCS_COLL_ALLREDUCE);
            if (s == NULL)
                continue;
            for (size_t j = 0; j < sizeof(sizes) / sizeof(sizes[0]); j++) {
                double sz = sizes[j], bwt = 2.0 * (n - 1) / n * sz * b;
                double want = k == 0 ? 2 * (n - 1) * a + bwt
                            : k == 1 ? 2 * lg * a + bwt
                                     : 2 * a + bwt;
                sim_opts_t o;
                sim_opts_init(&o);
                double got = sim_time(s, t, sz, &o);
                CHECK_NEAR(got, want, 1e-9);
                if (fabs(got - want) > 1e-9 * want)
                    fprintf(stderr, "  (%s n=%u size=%.0f)\n", algos[k], n,
                            sz);
            }
            ccs_sched_destroy(s);
        }
        topo_destroy(t);
    }
}

/* MultiTree's observation: the topology-oblivious double binary tree is
 * slower than ring on a torus for large buffers (its tree edges share
 * links); ring wins there. */
TEST(torus_dbtree_slower_than_ring)
{
    topo_t *t = load("torus:8x8");
    ccs_sched_t *ring = NULL, *tree = NULL;

    if (t == NULL)
        return;
    ring = synth("ring", t, CCS_COLL_ALLREDUCE);
    tree = synth("dbtree", t, CCS_COLL_ALLREDUCE);
    if (ring != NULL && tree != NULL) {
        sim_opts_t o;
        sim_opts_init(&o);
        double tr = sim_time(ring, t, 1073741824.0, &o);
        double tt = sim_time(tree, t, 1073741824.0, &o);
        CHECK_MSG(tt > tr, "dbtree %.6g s, ring %.6g s at 1 GiB", tt, tr);
    }
    ccs_sched_destroy(ring);
    ccs_sched_destroy(tree);
    topo_destroy(t);
}

/* A NIC shared by the GPUs of a server is a shared link: two GPUs of
 * server 0 sending to server 1 in one step split their NIC's bandwidth
 * (cluster:2x4, one NIC per server), and do not when each GPU has its own
 * NIC (nics=gpu).  Route alpha and bottleneck from topo_route. */
TEST(nic_shared_by_gpus)
{
    static const struct { const char *spec; double k; } cases[] = {
        { "cluster:2x4,nics=server", 2 }, { "cluster:2x4,nics=gpu", 1 },
    };
    static const xf_t one[] = { { 0, 0, 0, 4, 1 } };
    static const xf_t two[] = { { 0, 0, 0, 4, 1 }, { 0, 0, 1, 5, 1 } };
    const double size = 64.0 * 1048576;

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        topo_t *t = load(cases[i].spec);
        ccs_sched_t *s1 = make_xfers(8, 1, one, 1);
        ccs_sched_t *s2 = make_xfers(8, 1, two, 2);
        int32_t links[64], nh = 0;
        double a = 0, bw = 0;
        bool nic = false;
        sim_opts_t o;

        CHECK(t != NULL && s1 != NULL && s2 != NULL);
        if (t == NULL || s1 == NULL || s2 == NULL)
            goto next;
        CHECK_STATUS(topo_route(t, t->rank_node[0], t->rank_node[4], links,
                                64, &nh, NULL), CCS_OK);
        for (int32_t h = 0; h < nh; h++) {
            const topo_link_t *l = &t->links[links[h]];
            int32_t k = topo_links_between(t, l->src, l->dst, NULL, 0);
            a += l->alpha_s;
            if (bw == 0 || l->bw_Bps * k < bw)
                bw = l->bw_Bps * k;
            nic |= t->nodes[l->src].kind == TOPO_NODE_NIC;
        }
        CHECK(nic);
        sim_opts_init(&o);
        CHECK_NEAR(sim_time(s1, t, size, &o), a + size / bw, 1e-9);
        CHECK_NEAR(sim_time(s2, t, size, &o), a + cases[i].k * size / bw,
                   1e-9);
    next:
        ccs_sched_destroy(s1);
        ccs_sched_destroy(s2);
        topo_destroy(t);
    }
}

/* On switch:8 a straggler delays the ring allreduce by exactly D. */
TEST(straggler_ring_switch)
{
    topo_t *t = load("switch:8");
    ccs_sched_t *ring = t ? synth("ring", t, CCS_COLL_ALLREDUCE) : NULL;

    if (ring != NULL) {
        sim_opts_t o;
        sim_opts_init(&o);
        double base = sim_time(ring, t, 1 << 28, &o);
        o.straggler = 5;
        o.straggler_delay_s = 3e-3;
        CHECK_NEAR(sim_time(ring, t, 1 << 28, &o), base + 3e-3, 1e-12);
    }
    ccs_sched_destroy(ring);
    topo_destroy(t);
}

/* StragglAR on switch:N: phase 0 (the others' reduce-scatter) runs while
 * the straggler is late; once it arrives at D, phase 1 takes the paper's
 * (n + log2 n - 2) a + (n + log2 n - 2) / (n - 1) s b. */
TEST(stragglar_closed_form_after_delay)
{
    static const uint32_t ns[] = { 4, 8, 16 };
    const double size = 1 << 28, d = 0.05;

    for (size_t i = 0; i < sizeof(ns) / sizeof(ns[0]); i++) {
        char spec[32];
        uint32_t n = ns[i];
        double a = 0, b = 0, k = n + log2((double)n) - 2;
        topo_t *t;
        ccs_sched_t *s;
        algo_params_t p;
        sim_opts_t o;
        sim_result_t r;

        snprintf(spec, sizeof(spec), "switch:%u", n);
        t = load(spec);
        if (t == NULL)
            continue;
        algo_params_init(&p);
        p.straggler = (int32_t)n - 1;
        s = NULL;
        CHECK_STATUS(algo_synthesize("stragglar", t, &p, &s, NULL), CCS_OK);
        CHECK(pair_ab(t, &a, &b));
        if (s != NULL) {
            CHECK_STATUS(verify_sched(s, NULL, NULL), CCS_OK);
            sim_opts_init(&o);
            o.straggler = p.straggler;
            o.straggler_delay_s = d;
            CHECK_STATUS(sim_run(s, t, size, &o, &r, NULL), CCS_OK);
            if (r.phase_end_s != NULL) {
                CHECK_EQ_INT(r.nphases, 2);
                CHECK(r.phase_end_s[0] < d);
                CHECK_NEAR(r.time_s, d + k * a + k / (n - 1) * size * b,
                           1e-9);
            }
            sim_result_free(&r);
        }
        ccs_sched_destroy(s);
        topo_destroy(t);
    }
}

/* ---- the event queue ---- */

/* The queue must hand events out in (time, insertion order), as a binary
 * heap on that pair would.  The reference here is a plain array scanned
 * for its minimum.  Each case is a script: a number >= 0 pushes an event
 * at that time; POP takes one out and checks it against the reference. */
#define POP (-1.0)

typedef struct ref_ev {
    double t;
    uint64_t seq;
    bool gone;
} ref_ev_t;

static int ref_min(const ref_ev_t *r, int n)
{
    int best = -1;

    for (int i = 0; i < n; i++) {
        if (r[i].gone)
            continue;
        if (best < 0 || r[i].t < r[best].t ||
            (r[i].t == r[best].t && r[i].seq < r[best].seq))
            best = i;
    }
    return best;
}

TEST(event_queue_order)
{
    static const struct {
        const char *what;
        double script[16];
        int len;
    } cases[] = {
        { "ties leave in insertion order",
          { 5, 5, 5, 1, 5, POP, POP, POP, POP, POP }, 10 },
        { "-0 and 0 are one time",
          { 0, -0.0, 0, POP, POP, POP }, 6 },
        { "pushes between pops, at the current time and later",
          { 3, 1, 2, POP, 1, 4, POP, POP, 2, POP, POP, POP }, 12 },
        { "times far apart and close together",
          { 1e-9, 1e3, 1e-9 * (1 + 1e-15), 7.5, 1e-300, POP, POP, POP,
            POP, POP }, 10 },
        /* peeking at 9 must not move the queue's time: 4 is still fine */
        { "push below a peeked time",
          { 2, 9, POP, 4, POP, POP }, 6 },
    };

    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        sim_queue_t q;
        ref_ev_t ref[16];
        int nref = 0;

        memset(&q, 0, sizeof(q));
        simq_reset(&q);
        for (int i = 0; i < cases[c].len; i++) {
            double t = cases[c].script[i];
            if (t != POP) {
                double peek;
                CHECK_EQ_INT(simq_push(&q, t, 0, (uint32_t)nref, 0), SIMQ_OK);
                ref[nref] = (ref_ev_t){ t, (uint64_t)nref, false };
                nref++;
                CHECK(simq_peek(&q, &peek));
            } else {
                int want = ref_min(ref, nref);
                double peek = -1;
                event_t e;
                CHECK_MSG(simq_peek(&q, &peek) && peek == ref[want].t,
                          "%s: step %d: peek %g, want %g", cases[c].what, i,
                          peek, ref[want].t);
                CHECK_EQ_INT(simq_pop(&q, &e), SIMQ_OK);
                CHECK_MSG(e.a == (uint32_t)want,
                          "%s: step %d: got event %u, want %d",
                          cases[c].what, i, e.a, want);
                ref[want].gone = true;
            }
        }
        CHECK_MSG(ref_min(ref, nref) < 0, "%s: script leaves events",
                  cases[c].what);
        simq_free(&q);
    }
}

TEST(event_queue_random_against_reference)
{
    enum { N = 5000 };
    ref_ev_t *ref = calloc(N, sizeof(*ref));
    sim_queue_t q;
    uint64_t x = 88172645463325252ULL;   /* xorshift state */
    double now = 0;
    int n = 0, bad = 0;

    CHECK(ref != NULL);
    if (ref == NULL)
        return;
    memset(&q, 0, sizeof(q));
    simq_reset(&q);
    /* Event-loop shaped: after each pop, 0..3 pushes at the popped time
     * plus a delay drawn from a few values (ties) or a continuum. */
    for (int i = 0; i < 64; i++) {
        ref[n] = (ref_ev_t){ (double)(i % 7) * 1e-6, (uint64_t)n, false };
        CHECK_EQ_INT(simq_push(&q, ref[n].t, 0, (uint32_t)n, 0), SIMQ_OK);
        n++;
    }
    while (q.count > 0 && !bad) {
        int want = ref_min(ref, n);
        event_t e;
        int k;

        if (simq_pop(&q, &e) != SIMQ_OK || e.a != (uint32_t)want) {
            bad = 1;
            break;
        }
        ref[want].gone = true;
        now = e.t;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        for (k = 0; k < (int)(x % 4) && n < N; k++) {
            double d = (x >> 8) % 4 == 0 ? 0
                       : (x >> 8) % 4 == 1 ? 3e-6
                       : (double)((x >> 16) % 100000) * 1e-11;
            ref[n] = (ref_ev_t){ now + d, (uint64_t)n, false };
            if (simq_push(&q, now + d, 0, (uint32_t)n, 0) != SIMQ_OK)
                bad = 1;
            n++;
            x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        }
    }
    CHECK_MSG(!bad, "queue order differs from the reference after %d "
              "events", n);
    CHECK(q.count == 0 && ref_min(ref, n) < 0);
    CHECK(n > 1000);
    simq_free(&q);
    free(ref);
}

TEST(event_queue_refuses_the_past)
{
    sim_queue_t q;
    event_t e;

    memset(&q, 0, sizeof(q));
    simq_reset(&q);
    CHECK_EQ_INT(simq_push(&q, -1e-9, 0, 0, 0), SIMQ_PAST);
    CHECK_EQ_INT(simq_push(&q, NAN, 0, 0, 0), SIMQ_PAST);
    CHECK_EQ_INT(simq_push(&q, 2.0, 0, 0, 0), SIMQ_OK);
    CHECK_EQ_INT(simq_pop(&q, &e), SIMQ_OK);
    CHECK_EQ_INT(simq_push(&q, 1.0, 0, 1, 0), SIMQ_PAST);
    CHECK_EQ_INT(simq_push(&q, 2.0, 0, 2, 0), SIMQ_OK);
    CHECK(q.count == 1);
    simq_reset(&q);   /* a new run starts from time 0 again */
    CHECK(q.count == 0);
    CHECK_EQ_INT(simq_push(&q, 1.0, 0, 3, 0), SIMQ_OK);
    simq_free(&q);
}

int main(int argc, char **argv)
{
    /* `test_sim hand` runs only the hand-built group (no topology module). */
    bool hand_only = argc > 1 && strcmp(argv[1], "hand") == 0;

    RUN(ring_closed_form_star);
    RUN(allpairs_shares_uplink);
    RUN(contention_slows_step);
    RUN(max_min_fair_rates);
    RUN(rates_change_on_finish);
    RUN(parallel_links_one_pipe);
    RUN(rank_vs_barrier);
    RUN(straggler_adds_delay_ring);
    RUN(straggler_phase0_runs_early);
    RUN(arrivals_file);
    RUN(arrivals_errors);
    RUN(padding_and_local_cost);
    RUN(errors_are_named);
    RUN(prepared_reuse_deterministic);
    RUN(size_lists);
    RUN(busbw_factors);
    RUN(event_queue_order);
    RUN(event_queue_random_against_reference);
    RUN(event_queue_refuses_the_past);
    if (!hand_only) {
        RUN(closed_forms_switch);
        RUN(torus_dbtree_slower_than_ring);
        RUN(straggler_ring_switch);
        RUN(nic_shared_by_gpus);
        RUN(stragglar_closed_form_after_delay);
    }
    return TEST_SUMMARY();
}
