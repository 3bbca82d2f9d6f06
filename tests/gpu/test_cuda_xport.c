/*
 * test_cuda_xport.c - correctness of the CUDA kernels and of the cuda
 * transport on one GPU (virtual ranks on device 0; --devices below).
 * For a GPU: built by `make gpu-progs`, run by scripts/gpu-check.sh.  Also
 * built against a fake CUDA runtime, no GPU needed (end of this comment).
 *
 *   kernels_match_cpu   every dtype x op x n (1, 7, 4099, 1000003) x
 *                       pointer alignment (vector path, head/tail path,
 *                       scalar path) x aliasing (dst = a, dst = b, none):
 *                       the GPU result is compared BYTE FOR BYTE with the
 *                       CPU kernels of reduce.c on the same inputs (which
 *                       include rounding cases and integer wrap-around);
 *   div_matches_cpu     the final division of avg, same comparison;
 *   fixtures_cuda       every hand-built fixture plan (rt_fixtures.h),
 *                       R = 2, 3, 4, 8, x every dtype x op x counts 1, 7,
 *                       1000, in and out of place, on a caller stream
 *                       (inputs enqueued on it) and on the NULL stream
 *                       (inputs by plain cudaMemcpy / cudaMemset);
 *   registry_cuda       every registered algorithm's plan (milp too) for
 *                       every collective it declares, R = 2, 3, 4, 5, 8,
 *                       same matrix;
 *   large_odd_count     R = 4, fixtures and algorithms, every dtype x op at
 *                       count 1000003;
 *   straggler_cuda      one StragglAR-shaped plan serves every straggler;
 *                       the others leave phase 0 before it arrives (step
 *                       by step and with issue window 4);
 *   fake_cuda_counts    (fake runtime only) no stream deadlock, events
 *                       queried, work deferred, peer copies made.
 * Collective results are checked against tools/ccs_check.h's independent
 * reference (exact-by-construction inputs), counting wrong elements.
 * Issue windows: every plan of fixtures_cuda and registry_cuda (and of
 * large_odd_count, on fewer combinations) runs again with issue windows
 * 2, 4 and 8 (ccs_comm_set_issue_window: hazard-ordered issue on the
 * port streams of xport_cuda.c), and each rank's output must equal the
 * window-1 output BYTE FOR BYTE, besides matching the reference.
 *
 *   test_cuda_xport             run everything (exit 2 without a GPU)
 *   test_cuda_xport --probe     print the device and exit 0, or 2 if none
 *   test_cuda_xport --quick     skip the 1000003 sweep
 *   test_cuda_xport --small     a small subset, sized for `make test` on
 *                               the fake runtime (below; about 30 s
 *                               there): every fixture at R = 2, 3, 4, 5,
 *                               8; every algorithm's plans at R = 4 and
 *                               5, the short ones (ring, rhd, stragglar,
 *                               allpairs, multitree, dbtree) at R = 8;
 *                               windows 1, 2, 4, 8 on all of them; each
 *                               dtype x op pair once, counts 1, 7, 1000
 *                               in turn (not every pair at every count);
 *                               worlds on one device and on two (rank r
 *                               on device r % 2) in turn; the straggler
 *                               runs without their timing check (a
 *                               loaded machine may delay any rank); no
 *                               1000003 sweep
 *   test_cuda_xport --devices N every world of the full run spreads its
 *                               ranks over N devices (rank r on r % N;
 *                               default 1: all on device 0)
 * Wherever a world asks for more devices than the machine has, it runs
 * on as many as there are.
 *
 * Built by the Makefile a second time, with CCS_FAKE_CUDA, linked against
 * the fake CUDA runtime of tests/unit/fake_cuda.h:
 * build/tests/test_cuda_xport_fake, no GPU needed.  `make test` runs it
 * with --small (scripts/run-tests.sh), `make cuda-fake-full` without.
 * The fake is not a GPU: it checks the transport's stream and event
 * ordering (its streams run late and in a random interleaving), not the
 * kernels (there they are reduce.c's CPU code, so kernels_match_cpu and
 * div_matches_cpu are left out) nor anything a real device does.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

#include "harness.h"
#include "rt_fixtures.h"
#include "../../runtime/ccs_int.h"
#include "../../runtime/reduce.h"
#include "../../runtime/reduce_cuda.h"
#include "algo.h"
#include "../../tools/ccs_check.h"
#include "rt_world.h"
#ifdef CCS_FAKE_CUDA
#include "fake_cuda.h"
#endif

#define MAX_R 8
#define MAX_COMBOS 256

static size_t g_total_wrong, g_runs, g_window_runs;
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;

/* What this run covers (main's options). */
static bool g_small;       /* --small */
static int g_devices = 1;  /* --devices: devices of a full-run world */
static int g_ndev = 1;     /* devices the machine (or the fake) has */

/* ---------------- kernels against the CPU ---------------- */

/* On the fake runtime the kernels are the CPU code itself: nothing to
 * compare, so these tests are left out of that build. */
#ifndef CCS_FAKE_CUDA

static uint64_t lcg(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s >> 11;
}

/* Inputs that exercise rounding (float sums of values with different
 * exponents), signs, and integer wrap-around; no NaN (payloads may differ
 * between the CPU and GPU conversions by design). */
static void fill_random(ccs_dtype_t dt, void *buf, size_t n, uint64_t seed)
{
    for (size_t i = 0; i < n; i++) {
        uint64_t r = lcg(&seed);
        double f = ((double)(r % 20001) - 10000.0) /
                   (double)(1u << (r % 11));
        switch (dt) {
        case CCS_INT32: ((uint32_t *)buf)[i] = (uint32_t)r; break;
        case CCS_INT64: ((uint64_t *)buf)[i] = r * 0x9e3779b97f4a7c15ull;
            break;
        case CCS_UINT8: ((uint8_t *)buf)[i] = (uint8_t)r; break;
        case CCS_FLOAT16:
            ((uint16_t *)buf)[i] = ccs_float_to_half((float)(f / 16.0));
            break;
        case CCS_BFLOAT16:
            ((uint16_t *)buf)[i] = ccs_float_to_bf16((float)f);
            break;
        case CCS_FLOAT32: ((float *)buf)[i] = (float)f * 1.0001f; break;
        case CCS_FLOAT64: ((double *)buf)[i] = f * 1.0000001; break;
        default: break;
        }
    }
}

static bool cu_ok(cudaError_t e, const char *what)
{
    if (e != cudaSuccess) {
        FAIL_AT("%s: %s", what, cudaGetErrorString(e));
        return false;
    }
    return true;
}

TEST(kernels_match_cpu)
{
    static const size_t ns[] = { 1, 7, 4099, 1000003 };
    /* element offsets of dst, a, b from 256-byte aligned bases */
    static const size_t offs[][3] = { { 0, 0, 0 }, { 1, 1, 1 },
                                      { 3, 3, 3 }, { 0, 1, 2 } };
    const size_t maxn = 1000003 + 8;
    uint8_t *ha = malloc(maxn * 8), *hb = malloc(maxn * 8);
    uint8_t *want = malloc(maxn * 8), *got = malloc(maxn * 8);
    void *da = NULL, *db = NULL, *dd = NULL;
    size_t bad = 0, runs = 0;
    ccs_err_t e;

    if (!ha || !hb || !want || !got ||
        !cu_ok(cudaMalloc(&da, maxn * 8), "cudaMalloc") ||
        !cu_ok(cudaMalloc(&db, maxn * 8), "cudaMalloc") ||
        !cu_ok(cudaMalloc(&dd, maxn * 8), "cudaMalloc"))
        goto out;
    for (int d = 0; d < CCS_DTYPE_COUNT; d++) {
        ccs_dtype_t dt = (ccs_dtype_t)d;
        size_t es = ccs_dtype_size(dt);
        fill_random(dt, ha, maxn, 1 + (uint64_t)d);
        fill_random(dt, hb, maxn, 100 + (uint64_t)d);
        cudaMemcpy(da, ha, maxn * es, cudaMemcpyHostToDevice);
        cudaMemcpy(db, hb, maxn * es, cudaMemcpyHostToDevice);
        for (int o = 0; o < CCS_REDOP_COUNT; o++) {
            for (size_t ni = 0; ni < sizeof(ns) / sizeof(ns[0]); ni++) {
                for (size_t oi = 0; oi < sizeof(offs) / sizeof(offs[0]);
                     oi++) {
                    for (int alias = 0; alias < 3; alias++) {
                        size_t n = ns[ni];
                        const size_t *of = offs[oi];
                        uint8_t *pa = (uint8_t *)da + of[1] * es;
                        uint8_t *pb = (uint8_t *)db + of[2] * es;
                        uint8_t *pd = alias == 1 ? pa : alias == 2 ? pb
                                    : (uint8_t *)dd + of[0] * es;
                        ccs_status_t st;
                        ccs_reduce_cpu(want, ha + of[1] * es,
                                       hb + of[2] * es, n, dt,
                                       (ccs_redop_t)o);
                        /* aliasing overwrites an operand: restore after */
                        st = ccs_reduce_cuda(pd, pa, pb, n, dt,
                                             (ccs_redop_t)o, NULL, &e);
                        runs++;
                        if (st != CCS_OK) {
                            FAIL_AT("%s", e.msg);
                            goto out;
                        }
                        if (!cu_ok(cudaMemcpy(got, pd, n * es,
                                              cudaMemcpyDeviceToHost),
                                   "kernel result"))
                            goto out;
                        if (memcmp(got, want, n * es) != 0) {
                            size_t k = 0;
                            while (memcmp(got + k * es, want + k * es, es)
                                   == 0)
                                k++;
                            if (bad++ < 10)
                                FAIL_AT("%s %s n=%zu offsets %zu/%zu/%zu "
                                        "alias %d: first difference at "
                                        "element %zu", ccs_dtype_str(dt),
                                        ccs_redop_str((ccs_redop_t)o), n,
                                        of[0], of[1], of[2], alias, k);
                        }
                        if (alias == 1)
                            cudaMemcpy(da, ha, maxn * es,
                                       cudaMemcpyHostToDevice);
                        if (alias == 2)
                            cudaMemcpy(db, hb, maxn * es,
                                       cudaMemcpyHostToDevice);
                    }
                }
            }
        }
    }
    printf("kernels_match_cpu: %zu kernel calls, %zu differing\n", runs,
           bad);
out:
    cudaFree(da);
    cudaFree(db);
    cudaFree(dd);
    free(ha);
    free(hb);
    free(want);
    free(got);
}

TEST(div_matches_cpu)
{
    static const size_t ns[] = { 1, 7, 4099, 1000003 };
    static const uint32_t divs[] = { 1, 3, 8, 7 };
    const size_t maxn = 1000003 + 4;
    uint8_t *h = malloc(maxn * 8), *want = malloc(maxn * 8);
    uint8_t *got = malloc(maxn * 8);
    void *dv = NULL;
    ccs_err_t e;

    if (!h || !want || !got || !cu_ok(cudaMalloc(&dv, maxn * 8), "malloc"))
        goto out;
    for (int d = 0; d < CCS_DTYPE_COUNT; d++) {
        ccs_dtype_t dt = (ccs_dtype_t)d;
        size_t es = ccs_dtype_size(dt);
        fill_random(dt, h, maxn, 7 + (uint64_t)d);
        for (size_t ni = 0; ni < 4; ni++) {
            for (size_t di = 0; di < 4; di++) {
                size_t n = ns[ni], off = ni % 2;   /* odd offsets too */
                uint8_t *p = (uint8_t *)dv + off * es;
                memcpy(want, h + off * es, n * es);
                ccs_reduce_div(want, n, dt, divs[di]);
                cudaMemcpy(dv, h, maxn * es, cudaMemcpyHostToDevice);
                if (ccs_div_cuda(p, n, dt, divs[di], NULL, &e) != CCS_OK) {
                    FAIL_AT("%s", e.msg);
                    goto out;
                }
                cudaMemcpy(got, p, n * es, cudaMemcpyDeviceToHost);
                CHECK_MSG(memcmp(got, want, n * es) == 0,
                          "div %s n=%zu by %u differs from the CPU",
                          ccs_dtype_str(dt), n, divs[di]);
            }
        }
    }
out:
    cudaFree(dv);
    free(h);
    free(want);
    free(got);
}

#endif /* !CCS_FAKE_CUDA */

/* ---------------- the transport ---------------- */

typedef struct combo {
    ccs_dtype_t dt;
    ccs_redop_t op;
    size_t count;
    bool inplace;
    bool null_stream;
} combo_t;

/* Outputs of the window-1 run of a plan, [rank][combo] (owned; freed by
 * refs_free), against which the runs with a window compare. */
static uint8_t *g_ref[MAX_R][MAX_COMBOS];
static size_t g_ref_len[MAX_R][MAX_COMBOS];

enum { REF_NONE, REF_RECORD, REF_COMPARE };

static void refs_free(void)
{
    for (int r = 0; r < MAX_R; r++)
        for (int k = 0; k < MAX_COMBOS; k++) {
            free(g_ref[r][k]);
            g_ref[r][k] = NULL;
            g_ref_len[r][k] = 0;
        }
}

typedef struct job {
    const ccs_plan_t *plan;
    ccs_comm_t *comm;
    int rank, R, device;
    const combo_t *combos;
    int ncombos;
    int straggler, delay_rank;
    unsigned delay_us;
    int ref_mode;            /* REF_* */
    ccs_status_t st[MAX_COMBOS];
    size_t wrong[MAX_COMBOS];
    size_t differ[MAX_COMBOS]; /* REF_COMPARE: 1 + first differing byte */
    ccs_run_stats_t stats[MAX_COMBOS];
    char msg[320];
} job_t;

static void *rank_main(void *arg)
{
    job_t *j = arg;
    ccs_coll_t coll = ccs_plan_coll(j->plan);
    int root = ccs_plan_root(j->plan);
    cudaStream_t stream = NULL;
    size_t maxb = 0;
    uint8_t *host = NULL, *da = NULL, *db = NULL;

    for (int k = 0; k < j->ncombos; k++) {
        const combo_t *c = &j->combos[k];
        size_t in_n = chk_in_elems(coll, j->R, c->count);
        size_t out_n = chk_out_elems(coll, j->R, c->count);
        size_t b = (in_n > out_n ? in_n : out_n) * ccs_dtype_size(c->dt);
        if (b > maxb)
            maxb = b;
        j->st[k] = CCS_ERR_INTERNAL;
    }
    if (cudaSetDevice(j->device) != cudaSuccess ||
        cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) !=
            cudaSuccess ||
        cudaMalloc((void **)&da, maxb + 64) != cudaSuccess ||
        cudaMalloc((void **)&db, maxb + 64) != cudaSuccess ||
        (host = malloc(maxb + 64)) == NULL) {
        snprintf(j->msg, sizeof(j->msg), "rank setup (CUDA) failed");
        goto out;
    }
    for (int k = 0; k < j->ncombos; k++) {
        const combo_t *c = &j->combos[k];
        size_t es = ccs_dtype_size(c->dt);
        size_t in_n = chk_in_elems(coll, j->R, c->count);
        size_t out_n = chk_out_elems(coll, j->R, c->count);
        size_t big = in_n > out_n ? in_n : out_n;
        uint8_t *send, *recv;
        cudaStream_t s = c->null_stream ? NULL : stream;
        ccs_run_opts_t o = CCS_RUN_OPTS_INIT;
        size_t in_off = 0;

        if (c->inplace) {
            send = recv = da;
            if (coll == CCS_COLL_REDUCESCATTER)
                recv = da + (size_t)j->rank * c->count * es;
            if (coll == CCS_COLL_ALLGATHER) {
                in_off = (size_t)j->rank * c->count * es;
                send = da + in_off;
            }
        } else {
            send = da;
            recv = db;
        }
        /* Poison, then the input: unwritten output shows up as wrong. */
        memset(host, 0xA5, big * es);
        chk_fill(coll, c->dt, c->op, j->rank, j->R, root, c->count,
                 host + in_off);
        /* A caller's stream: inputs enqueued on it, in stream order.  The
         * NULL stream: plain cudaMemcpy / cudaMemset, which go on the
         * default stream (and may still be in flight when they return);
         * the run must be ordered after them (xport_gpu.h). */
        if (s != NULL) {
            cudaMemcpyAsync(da, host, big * es, cudaMemcpyHostToDevice, s);
            if (!c->inplace)
                cudaMemsetAsync(db, 0x5A, out_n * es, s);
        } else {
            cudaMemcpy(da, host, big * es, cudaMemcpyHostToDevice);
            if (!c->inplace)
                cudaMemset(db, 0x5A, out_n * es);
        }
        o.straggler = j->straggler;
        o.stats = &j->stats[k];
        if (j->rank == j->delay_rank)
            usleep(j->delay_us);
        j->st[k] = ccs_run_ex(j->plan, j->comm, send, recv, c->count, c->dt,
                              c->op, (void *)s, &o);
        if (j->st[k] == CCS_OK && s != NULL &&
            cudaStreamSynchronize(s) != cudaSuccess) {
            j->st[k] = CCS_ERR_CUDA;
            snprintf(j->msg, sizeof(j->msg), "stream sync: %s",
                     cudaGetErrorString(cudaGetLastError()));
            break;
        }
        if (j->st[k] != CCS_OK) {
            snprintf(j->msg, sizeof(j->msg), "%s",
                     ccs_comm_last_error(j->comm));
            break;
        }
        if (cudaMemcpy(host, recv, out_n * es, cudaMemcpyDeviceToHost) !=
            cudaSuccess) {
            j->st[k] = CCS_ERR_CUDA;
            snprintf(j->msg, sizeof(j->msg), "copy back failed");
            break;
        }
        j->wrong[k] = chk_wrong(coll, c->dt, c->op, j->rank, j->R, root,
                                c->count, host);
        if (j->ref_mode == REF_RECORD) {
            /* owned by g_ref (refs_free) */
            g_ref[j->rank][k] = malloc(out_n * es);
            if (g_ref[j->rank][k] != NULL) {
                memcpy(g_ref[j->rank][k], host, out_n * es);
                g_ref_len[j->rank][k] = out_n * es;
            }
        } else if (j->ref_mode == REF_COMPARE) {
            const uint8_t *want = g_ref[j->rank][k];
            size_t n = out_n * es;
            if (want == NULL || g_ref_len[j->rank][k] != n) {
                j->differ[k] = 1;   /* no window-1 output to compare */
            } else {
                for (size_t b = 0; b < n && j->differ[k] == 0; b++)
                    if (host[b] != want[b])
                        j->differ[k] = b + 1;
            }
        }
    }
out:
    cudaFree(da);
    cudaFree(db);
    if (stream != NULL)
        cudaStreamDestroy(stream);
    free(host);
    return NULL;
}

static job_t g_jobs[MAX_R];

/* window: the issue window of every rank (1: step by step); ref_mode:
 * record the outputs as the reference, or compare them with it; ndev:
 * rank r runs on device r % ndev (capped at the devices there are). */
static int run_world(const char *name, const ccs_plan_t *plan,
                     const combo_t *combos, int ncombos, int straggler,
                     int delay_rank, unsigned delay_us, unsigned window,
                     int ref_mode, int ndev)
{
    int R = ccs_plan_nranks(plan), bad = 0;
    ccs_comm_t *comms[MAX_R];
    int devs[MAX_R];
    pthread_t th[MAX_R];
    char msg[256];
    size_t wrong = 0;

    if (ndev > g_ndev)
        ndev = g_ndev;
    if (ndev < 1)
        ndev = 1;
    for (int r = 0; r < R; r++)
        devs[r] = r % ndev;
    if (ccs_comm_init_cuda_msg(R, devs, comms, msg, sizeof(msg)) !=
        CCS_OK) {
        FAIL_AT("%s: cuda comm init on %d device(s): %s", name, ndev, msg);
        return 1;
    }
    for (int r = 0; r < R; r++) {
        ccs_status_t st = ccs_comm_set_issue_window(comms[r], window);
        if (st != CCS_OK) {
            FAIL_AT("%s: issue window %u: %s", name, window,
                    ccs_status_name(st));
            for (int q = 0; q < R; q++)
                ccs_comm_destroy(comms[q]);
            return 1;
        }
    }
    for (int r = 0; r < R; r++) {
        memset(&g_jobs[r], 0, sizeof(g_jobs[r]));
        g_jobs[r].plan = plan;
        g_jobs[r].comm = comms[r];
        g_jobs[r].rank = r;
        g_jobs[r].device = devs[r];
        g_jobs[r].R = R;
        g_jobs[r].combos = combos;
        g_jobs[r].ncombos = ncombos;
        g_jobs[r].straggler = straggler;
        g_jobs[r].delay_rank = delay_rank;
        g_jobs[r].delay_us = delay_us;
        g_jobs[r].ref_mode = ref_mode;
        pthread_create(&th[r], NULL, rank_main, &g_jobs[r]);
    }
    for (int r = 0; r < R; r++)
        pthread_join(th[r], NULL);
    for (int r = 0; r < R; r++) {
        for (int k = 0; k < ncombos; k++) {
            const combo_t *c = &combos[k];
            wrong += g_jobs[r].wrong[k];
            if ((g_jobs[r].st[k] != CCS_OK || g_jobs[r].wrong[k] != 0 ||
                 g_jobs[r].differ[k] != 0) &&
                bad < 5) {
                FAIL_AT("%s window %u rank %d (device %d of %d): %s %s "
                        "count %zu %s %s stream: status %s, %zu wrong, "
                        "%s %zu %s", name, window, r, devs[r], ndev,
                        ccs_dtype_str(c->dt),
                        ccs_redop_str(c->op), c->count,
                        c->inplace ? "in-place" : "out-of-place",
                        c->null_stream ? "NULL" : "own",
                        ccs_status_name(g_jobs[r].st[k]), g_jobs[r].wrong[k],
                        g_jobs[r].differ[k] ? "first byte differing from "
                                              "window 1 (1-based):"
                                            : "bytes as window 1",
                        g_jobs[r].differ[k], g_jobs[r].msg);
                bad++;
                break;
            }
        }
        ccs_comm_destroy(comms[r]);
    }
    pthread_mutex_lock(&g_mu);
    g_total_wrong += wrong;
    g_runs += (size_t)ncombos * (size_t)R;
    if (window > 1)
        g_window_runs += (size_t)ncombos * (size_t)R;
    pthread_mutex_unlock(&g_mu);
    return bad;
}

static int full_matrix(combo_t *c, const size_t *counts, int ncounts)
{
    int n = 0;
    for (int ci = 0; ci < ncounts; ci++)
        for (int d = 0; d < CCS_DTYPE_COUNT; d++)
            for (int o = 0; o < CCS_REDOP_COUNT; o++) {
                c[n].dt = (ccs_dtype_t)d;
                c[n].op = (ccs_redop_t)o;
                c[n].count = counts[ci];
                c[n].inplace = ((d + o + ci) % 2) == 1;
                c[n].null_stream = ((d + 2 * o) % 3) == 0;
                n++;
            }
    return n;
}

/* Step by step, then issue windows 2, 4, 8 byte for byte against it
 * (window combinations: the first nwin of combos; 0: no window runs);
 * every world on ndev devices (run_world). */
static void check_sched_w(const char *name, const ccs_sched_t *s,
                          const combo_t *combos, int ncombos, int nwin,
                          int ndev)
{
    static const unsigned windows[] = { 2, 4, 8 };
    ccs_plan_t *plan = NULL;
    ccs_err_t e;
    ccs_status_t st = ccs_plan_from_sched(s, &plan, &e);

    if (st != CCS_OK) {
        FAIL_AT("%s: %s", name, ccs_err_msg(&e, st));
        return;
    }
    if (nwin == 0) {
        run_world(name, plan, combos, ncombos, -1, -1, 0, 1, REF_NONE,
                  ndev);
    } else {
        if (nwin < ncombos)
            run_world(name, plan, combos + nwin, ncombos - nwin, -1, -1, 0,
                      1, REF_NONE, ndev);
        if (run_world(name, plan, combos, nwin, -1, -1, 0, 1, REF_RECORD,
                      ndev) == 0) {
            for (size_t w = 0; w < sizeof(windows) / sizeof(windows[0]); w++)
                run_world(name, plan, combos, nwin, -1, -1, 0, windows[w],
                          REF_COMPARE, ndev);
        }
        refs_free();
    }
    ccs_plan_destroy(plan);
}

static void check_sched(const char *name, const ccs_sched_t *s,
                        const combo_t *combos, int ncombos, int ndev)
{
    check_sched_w(name, s, combos, ncombos, ncombos, ndev);
}

static const size_t small_counts[] = { 1, 7, 1000 };
static const size_t odd_counts[] = { 1000003 };
static combo_t g_combos[MAX_COMBOS];
/* combinations of the 1000003 sweep that also run with windows: the
 * window-1 outputs are kept on the host, up to 8 MB per rank each */
#define ODD_WINDOW_COMBOS 6

/* --small's combinations: every dtype x op pair once, each at one of the
 * counts 1, 7, 1000 in turn, in and out of place, on the caller's stream
 * and on the NULL stream (a third of full_matrix's). */
static int small_matrix(combo_t *c)
{
    int n = 0;
    for (int d = 0; d < CCS_DTYPE_COUNT; d++)
        for (int o = 0; o < CCS_REDOP_COUNT; o++) {
            c[n].dt = (ccs_dtype_t)d;
            c[n].op = (ccs_redop_t)o;
            c[n].count = small_counts[n % 3];
            c[n].inplace = ((d + o) % 2) == 1;
            c[n].null_stream = ((d + 2 * o) % 3) == 0;
            n++;
        }
    return n;
}

/* The combinations of fixtures_cuda and registry_cuda. */
static int transport_matrix(combo_t *c)
{
    return g_small ? small_matrix(c) : full_matrix(c, small_counts, 3);
}

/* Devices of a test's i-th world shape: --small has one and two in turn
 * (two: peer copies between devices next to copies within one); the full
 * run has --devices. */
static int world_devices(size_t i)
{
    return g_small ? 1 + (int)(i % 2) : g_devices;
}

TEST(fixtures_cuda)
{
    /* R = 5: ranks 0, 2, 4 share device 0 in --small's two-device world */
    static const uint32_t Rs[] = { 2, 3, 4, 8 };
    static const uint32_t small_Rs[] = { 2, 3, 4, 5, 8 };
    const uint32_t *rs = g_small ? small_Rs : Rs;
    size_t nr = g_small ? sizeof(small_Rs) / sizeof(small_Rs[0])
                        : sizeof(Rs) / sizeof(Rs[0]);
    int nc = transport_matrix(g_combos);

    for (size_t ri = 0; ri < nr; ri++) {
        fx_entry_t fx[16];
        int n = fx_all(rs[ri], fx, 16);
        CHECK(n > 0);
        for (int i = 0; i < n; i++)
            check_sched(fx[i].name, fx[i].s, g_combos, nc,
                        world_devices(ri));
        fx_free(fx, n < 0 ? 0 : n);
    }
}

/* What for_each_algo_plan hands to each registry plan. */
typedef struct plan_args {
    const combo_t *combos;
    int ncombos, nwin, ndev;
    const char *const *algos;   /* NULL-terminated; NULL: every one */
    int ran;                    /* plans replayed */
} plan_args_t;

static void check_registry_plan(const char *name, int algo, uint32_t R,
                                const ccs_sched_t *s, void *arg)
{
    plan_args_t *pa = arg;
    bool listed = pa->algos == NULL;

    (void)R;
    for (int i = 0; !listed && pa->algos[i] != NULL; i++)
        listed = strcmp(pa->algos[i], algo_at(algo)->name) == 0;
    if (!listed)
        return;
    check_sched_w(name, s, pa->combos, pa->ncombos, pa->nwin, pa->ndev);
    pa->ran++;
}

/* Replay the plans of the registered algorithms in `algos` (NULL: every
 * one, milp included) for every collective each declares at R ranks,
 * synthesized as the CPU tests do (rt_world.h); returns how many ran.  A
 * declared collective that does not synthesize is a failure. */
static int for_each_algo_plan(uint32_t R, const combo_t *combos,
                              int ncombos, int nwin, int ndev,
                              const char *const *algos)
{
    plan_args_t pa = { combos, ncombos, nwin, ndev, algos, 0 };
    int want = 0;

    rt_registry_scheds(R, check_registry_plan, &pa, &want);
    return pa.ran;
}

/* The registry's plans at each R: every algorithm (algos NULL), or those
 * listed. */
typedef struct registry_set {
    uint32_t R;
    const char *const *algos;
} registry_set_t;

TEST(registry_cuda)
{
    static const registry_set_t full[] = {
        { 2, NULL }, { 3, NULL }, { 4, NULL }, { 5, NULL }, { 8, NULL },
    };
    /* --small: every algorithm at R = 4 and 5; at R = 8 those whose plans
     * are short (the fake runs milp's, nvls's and the NCCL ones' many
     * chunks for seconds each there) */
    static const char *const short_plans[] = {
        "ring", "rhd", "stragglar", "allpairs", "multitree", "dbtree", NULL
    };
    static const registry_set_t small[] = {
        { 4, NULL }, { 5, NULL }, { 8, short_plans },
    };
    const registry_set_t *set = g_small ? small : full;
    size_t nset = g_small ? sizeof(small) / sizeof(small[0])
                          : sizeof(full) / sizeof(full[0]);
    int nc = transport_matrix(g_combos), ran = 0;

    for (size_t i = 0; i < nset; i++)
        ran += for_each_algo_plan(set[i].R, g_combos, nc, nc,
                                  world_devices(i), set[i].algos);
    CHECK(ran > 0);
    printf("registry_cuda: %d algorithm plans replayed\n", ran);
}

TEST(large_odd_count)
{
    int nc = full_matrix(g_combos, odd_counts, 1);
    fx_entry_t fx[16];
    int n = fx_all(4, fx, 16);

    CHECK(n > 0);
    for (int i = 0; i < n; i++)
        check_sched_w(fx[i].name, fx[i].s, g_combos, nc, ODD_WINDOW_COMBOS,
                      g_devices);
    fx_free(fx, n < 0 ? 0 : n);
    CHECK(for_each_algo_plan(4, g_combos, nc, ODD_WINDOW_COMBOS, g_devices,
                             NULL) > 0);
}

/* The straggler arrives 30 ms late; the others must leave phase 0 before
 * it arrives.  --small checks the results only: on a loaded machine
 * (make test) any rank may be delayed, so the timing is not checked. */
TEST(straggler_cuda)
{
    static const combo_t c[] = {
        { CCS_FLOAT32, CCS_SUM, 1001, false, true },
        { CCS_BFLOAT16, CCS_AVG, 7, true, false },
    };
    const int R = 4;
    ccs_sched_t *s = fx_straggler((uint32_t)R, (uint32_t)(R - 1));
    ccs_plan_t *plan = NULL;

    CHECK(s != NULL);
    CHECK_STATUS(ccs_plan_from_sched(s, &plan, NULL), CCS_OK);
    for (int k = 0; plan != NULL && k < 2 * R; k++) {
        int strag = k % R;
        unsigned window = k < R ? 1 : 4;
        char name[48];
        snprintf(name, sizeof(name), "straggler=%d window=%u", strag, window);
        CHECK_EQ_INT(run_world(name, plan, c, 2, strag, strag, 30000, window,
                               REF_NONE, world_devices((size_t)k)), 0);
        for (int r = 0; r < R && !g_small; r++) {
            const ccs_run_stats_t *st = &g_jobs[r].stats[0];
            if (r != strag)
                CHECK_MSG(st->phase_end_s[0] <
                              g_jobs[strag].stats[0].t_start_s,
                          "rank %d left phase 0 at %.6f, after straggler "
                          "%d arrived at %.6f", r, st->phase_end_s[0], strag,
                          g_jobs[strag].stats[0].t_start_s);
        }
    }
    ccs_plan_destroy(plan);
    ccs_sched_destroy(s);
}

#ifdef CCS_FAKE_CUDA
/* What the fake saw: no wait cycle between streams, ever; the window
 * runs completed their requests by querying events; worlds on two
 * devices made peer copies. */
TEST(fake_cuda_counts)
{
    fake_cuda_stats_t fs;

    fake_cuda_stats(&fs);
    printf("fake CUDA runtime: %zu deferred operations run, deepest stream "
           "queue %zu, %zu event queries, %d peer copies, %d deadlocks\n",
           fs.ops_run, fs.max_depth, fs.queries, fs.peer_copies,
           fs.deadlocks);
    CHECK_EQ_INT(fs.deadlocks, 0);
    CHECK(fs.queries > 0);
    CHECK(fs.max_depth > 4);   /* work really was deferred */
    if (g_small || g_devices > 1)
        CHECK(fs.peer_copies > 0);
}
#endif

static int usage(void)
{
    fprintf(stderr, "usage: test_cuda_xport [--probe | [--quick] [--small] "
                    "[--devices N]]\n");
    return 1;
}

int main(int argc, char **argv)
{
    int ndev = 0;
    bool quick = false, probe = false;
    cudaError_t e;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--probe") == 0) {
            probe = true;
        } else if (strcmp(argv[i], "--quick") == 0) {
            quick = true;
        } else if (strcmp(argv[i], "--small") == 0) {
            g_small = true;
        } else if (strcmp(argv[i], "--devices") == 0 && i + 1 < argc) {
            char *end = NULL;
            long v = strtol(argv[++i], &end, 10);
            if (end == argv[i] || *end != '\0' || v < 1 || v > MAX_R)
                return usage();
            g_devices = (int)v;
        } else {
            return usage();
        }
    }
    e = cudaGetDeviceCount(&ndev);
    if (e != cudaSuccess || ndev == 0) {
        fprintf(stderr, "test_cuda_xport: no CUDA device (%s)\n",
                e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
        return 2;
    }
    g_ndev = ndev;
    if (probe) {
        struct cudaDeviceProp p;
        if (cudaGetDeviceProperties(&p, 0) == cudaSuccess)
            printf("device 0: %s, sm_%d%d, %d SMs, %.1f GiB, %d device(s)\n",
                   p.name, p.major, p.minor, p.multiProcessorCount,
                   (double)p.totalGlobalMem / (1u << 30), ndev);
        return 0;
    }
    setenv("CCS_TIMEOUT_S", "60", 0);  /* a bug fails instead of hanging */
#ifndef CCS_FAKE_CUDA
    RUN(kernels_match_cpu);
    RUN(div_matches_cpu);
#endif
    RUN(fixtures_cuda);
    RUN(registry_cuda);
    if (!quick && !g_small)
        RUN(large_odd_count);
    RUN(straggler_cuda);
#ifdef CCS_FAKE_CUDA
    RUN(fake_cuda_counts);
#endif
    printf("test_cuda_xport: %zu rank-runs checked (%zu with an issue window "
           "above 1, compared byte for byte with window 1), %zu wrong "
           "elements\n", g_runs, g_window_runs, g_total_wrong);
    return TEST_SUMMARY();
}
