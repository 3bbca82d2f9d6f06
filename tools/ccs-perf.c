/*
 * ccs-perf - benchmark and checker of a plan on a transport, with the
 * command line and output of nccl-tests (all_reduce_perf and friends).
 *
 *   ccs-perf [options] PLAN.ccs          (or -P PLAN.ccs)
 *
 * nccl-tests' flags keep their meaning: -b -e -i -f sizes, -n -w -m
 * iterations, -c check iterations, -d type, -o op, -r root, -a how rank
 * times combine, -z blocking, -T timeout, -J JSON output, -t threads and
 * -g GPUs.  ccs-perf's own flags use letters nccl-tests does not: -X
 * transport (threads, mpi, cuda, nccl), -s straggler, -E straggler delay,
 * -K element counts, -B the MPI baseline side by side (mpi transport: MPI's
 * own collective timed in the same harness right after the plan, with a
 * ratio column).  Run `ccs-perf --help` for the list.
 *
 * Sizes are bytes of the larger buffer (nccl-tests' "size"); -K gives
 * element counts instead (count as ccs_run takes it).  threads and cuda
 * run the plan's ranks as threads of this process; mpi and nccl run under
 * mpirun with as many processes as the plan has ranks.  -c N checks every
 * size, type and op N times against an independent reference
 * (tools/ccs_check.h) and counts wrong elements over all ranks.
 *
 * A failed run is reported once per rank (its message), the remaining
 * sizes are skipped (the communicator is unusable after a failure, as in
 * NCCL) and the footer says FAILED.
 *
 * Exit status: 0 all correct, 1 wrong elements, 2 usage, 3 runtime error.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <mpi.h>

#ifdef CCS_HAVE_CUDA
#include <cuda_runtime_api.h>
/* nccl.h declares functions without prototypes, which our C11 warnings
 * reject; the header is not ours to fix. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <nccl.h>
#pragma GCC diagnostic pop
#endif

#include "../runtime/ccs.h"
#include "../runtime/sched.h"  /* ccs_busbw_factor */
#include "ccs_check.h"

#define MAX_SIZES 64
#define MAX_THREADS 256
/* Largest buffer ccs-perf allocates per rank and kind: far above what a
 * benchmark wants, far below what size arithmetic can overflow. */
#define MAX_BUF_BYTES ((size_t)1 << 40)

typedef enum { XP_THREADS, XP_MPI, XP_CUDA, XP_NCCL } xp_t;

/* Delay patterns (-A): the straggler's rank each call, or random delays
 * on every rank. */
enum { PAT_DEFAULT, PAT_PERSIST, PAT_ROTATE, PAT_RANDOM, PAT_NONE };

/* The plain plan of -s auto (--plain); loaded once, shared by the ranks. */
static ccs_plan_t *g_plain;
static const char *const xp_names[] = { "threads", "mpi", "cuda", "nccl" };

typedef struct opts {
    const char *plan_path;
    xp_t xp;
    size_t minb, maxb, stepb;
    double factor;
    int iters, warmup, agg, check, average, blocking;
    double timeout_s;          /* < 0: library default */
    int window;                /* issue window; 0: library default */
    const char *json_path;
    int ngpus, nthreads, root;
    int straggler;             /* CCS_STRAGGLER_AUTO with -s auto */
    unsigned delay_us;
    int pattern;               /* PAT_*: which rank is late, per call */
    int period;                /* rotating: calls per late rank */
    int late_rank;             /* persistent: the late rank, -1 default */
    const char *plain_path;    /* -s auto: the plain plan; --alternate:
                                  the plan alternated with */
    int alternate;             /* timed calls alternate blocks of this
                                  many calls of the run (auto or not) and
                                  of the -Q plan alone; 0 off */
    int ndt, nop;
    ccs_dtype_t dts[CCS_DTYPE_COUNT];
    ccs_redop_t ops[CCS_REDOP_COUNT];
    size_t counts[MAX_SIZES];
    int ncounts;
    int baseline;
} opts_t;

/* Rank-to-rank agreement: a barrier and reductions over ranks. */
typedef struct sync {
    int mpi;
    pthread_barrier_t bar;
    double dval[MAX_THREADS];
    long long ival[MAX_THREADS];
} sync_t;

typedef struct rank_ctx {
    const opts_t *o;
    const ccs_plan_t *plan;
    ccs_comm_t *comm;
    sync_t *sy;
    FILE *json;               /* rank 0 only; may be NULL */
    int json_rows;
    int rank, R;
    int rc;                   /* 0, 1 wrong, 3 error */
    long ncalls;              /* calls made: the delay pattern's clock */
    /* --alternate: the timed loop's call count and, per variant (0 the
     * run: auto or the plan, 1 the -Q plan alone), this rank's seconds
     * inside calls and calls. */
    long alt_k;
    int alt_timing;
    double alt_s[2];
    long alt_n[2];
    int failed;               /* this rank saw an error (reported once) */
    char errmsg[512];
} rank_ctx_t;

static void barrier(rank_ctx_t *c)
{
    if (c->sy->mpi)
        MPI_Barrier(MPI_COMM_WORLD);
    else
        pthread_barrier_wait(&c->sy->bar);
}

/* mode: 0 sum, 1 min, 2 max. */
static double reduce_d(rank_ctx_t *c, double v, int mode)
{
    double s = 0;
    if (c->sy->mpi) {
        MPI_Allreduce(&v, &s, 1, MPI_DOUBLE,
                      mode == 1 ? MPI_MIN : mode == 2 ? MPI_MAX : MPI_SUM,
                      MPI_COMM_WORLD);
        return s;
    }
    c->sy->dval[c->rank] = v;
    pthread_barrier_wait(&c->sy->bar);
    s = c->sy->dval[0];
    for (int r = 1; r < c->R; r++) {
        double x = c->sy->dval[r];
        s = mode == 1 ? fmin(s, x) : mode == 2 ? fmax(s, x) : s + x;
    }
    pthread_barrier_wait(&c->sy->bar);
    return s;
}

static long long sum_i(rank_ctx_t *c, long long v)
{
    long long s = 0;
    if (c->sy->mpi) {
        MPI_Allreduce(&v, &s, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
        return s;
    }
    c->sy->ival[c->rank] = v;
    pthread_barrier_wait(&c->sy->bar);
    for (int r = 0; r < c->R; r++)
        s += c->sy->ival[r];
    pthread_barrier_wait(&c->sy->bar);
    return s;
}

/* Per-rank times combined as -a says: rank 0, average, min, max. */
static double combine_time(rank_ctx_t *c, double t)
{
    switch (c->o->average) {
    case 0: return reduce_d(c, c->rank == 0 ? t : 0.0, 0);
    case 2: return reduce_d(c, t, 1);
    case 3: return reduce_d(c, t, 2);
    default: return reduce_d(c, t, 0) / c->R;
    }
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int mpi_dtype(ccs_dtype_t dt, MPI_Datatype *out)
{
    switch (dt) {
    case CCS_FLOAT32: *out = MPI_FLOAT; return 1;
    case CCS_FLOAT64: *out = MPI_DOUBLE; return 1;
    case CCS_INT32: *out = MPI_INT32_T; return 1;
    case CCS_INT64: *out = MPI_INT64_T; return 1;
    case CCS_UINT8: *out = MPI_UINT8_T; return 1;
    default: return 0;
    }
}

static int mpi_op(ccs_redop_t op, MPI_Op *out)
{
    switch (op) {
    case CCS_SUM: *out = MPI_SUM; return 1;
    case CCS_PROD: *out = MPI_PROD; return 1;
    case CCS_MIN: *out = MPI_MIN; return 1;
    case CCS_MAX: *out = MPI_MAX; return 1;
    default: return 0;
    }
}

/* ---- memory of the transport's kind (device memory for cuda/nccl) ---- */

static int dev_mem(const opts_t *o)
{
    return o->xp == XP_CUDA || o->xp == XP_NCCL;
}

static void *buf_alloc(const opts_t *o, size_t bytes)
{
#ifdef CCS_HAVE_CUDA
    if (dev_mem(o)) {
        void *p = NULL;
        return cudaMalloc(&p, bytes ? bytes : 1) == cudaSuccess ? p : NULL;
    }
#endif
    (void)o;
    return malloc(bytes ? bytes : 1);
}

static void buf_free(const opts_t *o, void *p)
{
#ifdef CCS_HAVE_CUDA
    if (dev_mem(o)) {
        if (p != NULL)
            cudaFree(p);
        return;
    }
#endif
    (void)o;
    free(p);
}

/* dir 0: host -> buffer, 1: buffer -> host.  CPU transports: the buffer
 * is host memory and the copy is skipped when both are the same. */
static int buf_copy(const opts_t *o, void *dst, const void *src,
                    size_t bytes, int dir)
{
#ifdef CCS_HAVE_CUDA
    if (dev_mem(o))
        return cudaMemcpy(dst, src, bytes,
                          dir == 0 ? cudaMemcpyHostToDevice
                                   : cudaMemcpyDeviceToHost) == cudaSuccess;
#endif
    (void)o;
    (void)dir;
    if (dst != src)
        memcpy(dst, src, bytes);
    return 1;
}

static int buf_sync(const opts_t *o)
{
#ifdef CCS_HAVE_CUDA
    if (dev_mem(o))
        return cudaDeviceSynchronize() == cudaSuccess;
#endif
    (void)o;
    return 1;
}

/* This call's delay for this rank under the -A pattern (the same
 * function of (call, rank) on every rank). */
static unsigned delay_us_of(rank_ctx_t *c)
{
    const opts_t *o = c->o;
    long k = c->ncalls++;
    int late = o->late_rank;
    uint64_t x;

    if (o->delay_us == 0 || o->pattern == PAT_NONE)
        return 0;
    if (late < 0)
        late = o->straggler >= 0 ? o->straggler : ccs_plan_straggler(c->plan);
    if (late < 0)
        late = c->R - 1;
    switch (o->pattern) {
    case PAT_ROTATE:
        return c->rank == (int)((k / o->period) % c->R) ? o->delay_us : 0;
    case PAT_RANDOM:
        x = (uint64_t)k * 0x9e3779b97f4a7c15ull + (uint64_t)c->rank;
        x ^= x >> 29;
        x *= 0xbf58476d1ce4e5b9ull;
        x ^= x >> 32;
        return (unsigned)(x % ((uint64_t)o->delay_us + 1));
    default:
        return c->rank == late ? o->delay_us : 0;
    }
}

/* --alternate's name for the run it alternates with the -Q plan: the
 * same plan against itself measures the pairing's own spread. */
static const char *alt_name(const opts_t *o)
{
    return o->straggler == CCS_STRAGGLER_AUTO ? "auto" : "plan";
}

/* One call of the collective: the plan, or MPI's own (baseline). */
static ccs_status_t one_call(rank_ctx_t *c, int mpi_base, const void *send,
                             void *recv, size_t count, ccs_dtype_t dt,
                             ccs_redop_t op, int inplace)
{
    ccs_coll_t coll = ccs_plan_coll(c->plan);
    int root = ccs_plan_root(c->plan), rc = MPI_SUCCESS, n = (int)count;
    MPI_Datatype t;
    MPI_Op mo = MPI_SUM;

    if (!mpi_base) {
        ccs_run_opts_t ro = CCS_RUN_OPTS_INIT;
        ccs_status_t st;
        unsigned d = delay_us_of(c);
        /* --alternate: odd blocks run the -Q plan by itself, so that
         * both variants share the run (and its scheduling luck). */
        int plain_only = c->alt_timing &&
                         (c->alt_k++ / c->o->alternate) % 2 == 1;
        double t0 = 0;
        ro.straggler = plain_only ? -1 : c->o->straggler;
        ro.plain = plain_only || c->o->straggler != CCS_STRAGGLER_AUTO
                       ? NULL
                       : g_plain;
        if (d > 0)
            usleep(d);
        if (c->alt_timing)
            t0 = now_s();
        st = ccs_run_ex(plain_only ? g_plain : c->plan, c->comm, send, recv,
                        count, dt, op, NULL, &ro);
        if (c->alt_timing) {
            c->alt_s[plain_only] += now_s() - t0 + (double)d * 1e-6;
            c->alt_n[plain_only]++;
        }
        if (st == CCS_OK && c->o->blocking && !buf_sync(c->o))
            st = CCS_ERR_CUDA;
        return st;
    }
    if (!mpi_dtype(dt, &t) || count > INT_MAX)
        return CCS_ERR_UNSUPPORTED;
    if ((coll == CCS_COLL_ALLREDUCE || coll == CCS_COLL_REDUCESCATTER ||
         coll == CCS_COLL_REDUCE) && !mpi_op(op, &mo))
        return CCS_ERR_UNSUPPORTED;
    switch (coll) {
    case CCS_COLL_ALLREDUCE:
        rc = MPI_Allreduce(inplace ? MPI_IN_PLACE : send, recv, n, t, mo,
                           MPI_COMM_WORLD);
        break;
    case CCS_COLL_REDUCESCATTER:
        rc = MPI_Reduce_scatter_block(inplace ? MPI_IN_PLACE : send,
                                      inplace ? (void *)(uintptr_t)send
                                              : recv, n, t, mo,
                                      MPI_COMM_WORLD);
        if (inplace && rc == MPI_SUCCESS && c->rank != 0)
            memmove(recv, send, count * ccs_dtype_size(dt));
        break;
    case CCS_COLL_ALLGATHER:
        rc = MPI_Allgather(inplace ? MPI_IN_PLACE : send, n, t, recv, n, t,
                           MPI_COMM_WORLD);
        break;
    case CCS_COLL_REDUCE:
        rc = MPI_Reduce(inplace && c->rank == root ? MPI_IN_PLACE : send,
                        recv, n, t, mo, root, MPI_COMM_WORLD);
        break;
    case CCS_COLL_BROADCAST:
        if (c->rank == root && send != recv)
            memcpy(recv, send, count * ccs_dtype_size(dt));
        rc = MPI_Bcast(recv, n, t, root, MPI_COMM_WORLD);
        break;
    case CCS_COLL_ALLTOALL:
        rc = MPI_Alltoall(inplace ? MPI_IN_PLACE : send, n, t, recv, n, t,
                          MPI_COMM_WORLD);
        break;
    default:
        return CCS_ERR_UNSUPPORTED;
    }
    return rc == MPI_SUCCESS ? CCS_OK : CCS_ERR_MPI;
}

typedef struct result {
    double time_us;           /* < 0: not run (baseline unsupported) */
    double alt_us[2];         /* --alternate: mean per call of the run's
                                 and the -Q plan's calls (delays
                                 included) */
    long long wrong;          /* -1: not checked */
    int failed;
} result_t;

/* Keep this rank's first error; later ones are consequences of it. */
static void note_error(rank_ctx_t *c, ccs_status_t st, const char *what)
{
    if (c->failed)
        return;
    c->failed = 1;
    snprintf(c->errmsg, sizeof(c->errmsg), "%s: %s", ccs_status_name(st),
             what);
}

static void measure(rank_ctx_t *c, int mpi_base, size_t count,
                    ccs_dtype_t dt, ccs_redop_t op, int inplace,
                    result_t *res)
{
    const opts_t *o = c->o;
    ccs_coll_t coll = ccs_plan_coll(c->plan);
    int root = ccs_plan_root(c->plan);
    size_t es = ccs_dtype_size(dt);
    size_t in_n = chk_in_elems(coll, c->R, count);
    size_t out_n = chk_out_elems(coll, c->R, count);
    size_t big = in_n > out_n ? in_n : out_n;
    /* Host copies for filling and checking; the run's buffers are of the
     * transport's kind (the baseline always runs on host memory). */
    int dev = dev_mem(o) && !mpi_base;
    opts_t host_o = *o;
    const opts_t *bo = dev ? o : &host_o;
    uint8_t *ha = malloc(big * es + 64), *hb = malloc(out_n * es + 64);
    uint8_t *a = NULL, *b = NULL, *send = NULL, *recv = NULL;
    uint8_t *hsend = NULL, *hrecv = NULL;
    ccs_status_t st = CCS_OK;
    double t0, t1;

    host_o.xp = XP_THREADS;
    res->wrong = -1;
    res->time_us = -1;
    if (ha == NULL || hb == NULL) {
        st = CCS_ERR_NOMEM;
        note_error(c, st, "out of memory for the buffers");
        goto out;
    }
    a = dev ? buf_alloc(bo, big * es + 64) : ha;
    b = inplace ? NULL : dev ? buf_alloc(bo, out_n * es + 64) : hb;
    if (a == NULL || (!inplace && b == NULL)) {
        st = CCS_ERR_NOMEM;
        note_error(c, st, "out of memory for the buffers");
        goto out;
    }
    /* Buffers as nccl-tests lays them out for in-place calls. */
    send = recv = a;
    hsend = hrecv = ha;
    if (inplace && coll == CCS_COLL_REDUCESCATTER) {
        recv = a + (size_t)c->rank * count * es;
        hrecv = ha + (size_t)c->rank * count * es;
    }
    if (inplace && coll == CCS_COLL_ALLGATHER) {
        send = a + (size_t)c->rank * count * es;
        hsend = ha + (size_t)c->rank * count * es;
    }
    if (!inplace) {
        recv = b;
        hrecv = hb;
    }
    memset(ha, 0, big * es);
    memset(hb, 0, out_n * es);
    if (!buf_copy(bo, a, ha, big * es, 0) ||
        (!inplace && !buf_copy(bo, b, hb, out_n * es, 0))) {
        st = CCS_ERR_CUDA;
        note_error(c, st, "copying to the device failed");
        goto out;
    }
    for (int k = 0; k < o->check && st == CCS_OK; k++) {
        chk_fill(coll, dt, op, c->rank, c->R, root, count, hsend);
        if (!buf_copy(bo, a, ha, big * es, 0)) {
            st = CCS_ERR_CUDA;
            note_error(c, st, "copying to the device failed");
            break;
        }
        st = one_call(c, mpi_base, send, recv, count, dt, op, inplace);
        if (st != CCS_OK)
            break;
        if (!buf_copy(bo, inplace ? ha : hb, inplace ? a : b,
                      (inplace ? big : out_n) * es, 1)) {
            st = CCS_ERR_CUDA;
            note_error(c, st, "copying from the device failed");
            break;
        }
        res->wrong = (res->wrong < 0 ? 0 : res->wrong) +
                     (long long)chk_wrong(coll, dt, op, c->rank, c->R, root,
                                          count, hrecv);
    }
    for (int i = 0; i < o->warmup && st == CCS_OK; i++)
        st = one_call(c, mpi_base, send, recv, count, dt, op, inplace);
out:
    if (st != CCS_OK && !c->failed)
        note_error(c, st, mpi_base ? "MPI collective failed"
                                   : ccs_comm_last_error(c->comm));
    if (sum_i(c, st != CCS_OK) > 0) {
        res->failed = 1;
        goto free;
    }
    barrier(c);
    c->alt_timing = o->alternate > 0 && !mpi_base;
    c->alt_k = 0;
    c->alt_s[0] = c->alt_s[1] = 0;
    c->alt_n[0] = c->alt_n[1] = 0;
    t0 = now_s();
    for (int i = 0; i < o->iters && st == CCS_OK; i++)
        for (int j = 0; j < o->agg && st == CCS_OK; j++)
            st = one_call(c, mpi_base, send, recv, count, dt, op, inplace);
    if (st == CCS_OK && !buf_sync(bo))
        st = CCS_ERR_CUDA;
    t1 = now_s();
    if (c->alt_timing) {
        c->alt_timing = 0;
        for (int v = 0; v < 2; v++)
            res->alt_us[v] = combine_time(c, c->alt_n[v] > 0
                                                 ? c->alt_s[v] * 1e6 /
                                                       (double)c->alt_n[v]
                                                 : 0);
    }
    if (st != CCS_OK)
        note_error(c, st, mpi_base ? "MPI collective failed"
                                   : ccs_comm_last_error(c->comm));
    res->failed = sum_i(c, st != CCS_OK) > 0;
    res->time_us = combine_time(c, (t1 - t0) * 1e6 /
                                       (o->iters * o->agg > 0
                                            ? o->iters * o->agg : 1));
    if (res->wrong >= 0)
        res->wrong = sum_i(c, res->wrong);
free:
    if (dev) {
        buf_free(bo, a);
        buf_free(bo, b);
    }
    free(ha);
    free(hb);
}

static void print_res(const result_t *r, double bytes, double bf)
{
    double algbw = r->time_us > 0 ? bytes / r->time_us / 1e3 : 0;
    char wrong[32];

    if (r->failed) {
        printf("  %8s %7s %7s %6s", "error", "-", "-", "-");
        return;
    }
    if (r->wrong < 0)
        snprintf(wrong, sizeof(wrong), "N/A");
    else
        snprintf(wrong, sizeof(wrong), "%lld", r->wrong);
    printf("  %8.2f %7.2f %7.2f %6s", r->time_us, algbw, algbw * bf, wrong);
}

/* The baseline's time and the plan's time over it. */
static void print_base(const result_t *plan, const result_t *base)
{
    if (base->failed || base->time_us < 0) {
        printf("  %8s %6s", base->failed ? "error" : "n/a", "-");
        return;
    }
    if (plan->failed || plan->time_us <= 0 || base->time_us <= 0)
        printf("  %8.2f %6s", base->time_us, "-");
    else
        printf("  %8.2f %6.3f", base->time_us,
               plan->time_us / base->time_us);
}

static void json_res(FILE *f, const char *key, const result_t *r,
                     double bytes, double bf)
{
    double algbw = r->time_us > 0 ? bytes / r->time_us / 1e3 : 0;
    if (r->failed || r->time_us < 0) {
        fprintf(f, ", \"%s\": null", key);
        return;
    }
    fprintf(f, ", \"%s\": {\"time_us\": %.3f, \"algbw_gbs\": %.4f, "
               "\"busbw_gbs\": %.4f, \"wrong\": %lld}", key, r->time_us,
            algbw, algbw * bf, r->wrong);
}

/* Counts for the sizes of -b/-e/-i/-f (or -K). */
static int size_list(const rank_ctx_t *c, size_t per, size_t *list)
{
    const opts_t *o = c->o;
    int n = 0;

    if (o->ncounts > 0) {
        memcpy(list, o->counts, sizeof(size_t) * (size_t)o->ncounts);
        return o->ncounts;
    }
    for (size_t sz = o->minb; sz <= o->maxb && n < MAX_SIZES;) {
        size_t next;
        if (sz / per > 0 && (n == 0 || list[n - 1] != sz / per))
            list[n++] = sz / per;
        if (o->factor > 1) {
            double d = (double)sz * o->factor;
            next = d >= (double)SIZE_MAX ? SIZE_MAX : (size_t)d;
        } else if (__builtin_add_overflow(sz, o->stepb, &next)) {
            next = SIZE_MAX;
        }
        if (next <= sz)
            break;               /* 0 * factor, or a step of 0 */
        sz = next;
    }
    return n;
}

static void run_rank(rank_ctx_t *c)
{
    const opts_t *o = c->o;
    ccs_coll_t coll = ccs_plan_coll(c->plan);
    bool reduces = coll == CCS_COLL_ALLREDUCE ||
                   coll == CCS_COLL_REDUCESCATTER || coll == CCS_COLL_REDUCE;
    int nop = reduces ? o->nop : 1;
    double bf = ccs_busbw_factor(coll, (uint32_t)c->R), bwsum = 0;
    long long wrong = 0;
    int nbw = 0, errors = 0;

    for (int d = 0; d < o->ndt && !errors; d++) {
        for (int k = 0; k < nop && !errors; k++) {
            ccs_dtype_t dt = o->dts[d];
            ccs_redop_t op = reduces ? o->ops[k] : CCS_SUM;
            size_t es = ccs_dtype_size(dt);
            size_t per = es * (chk_in_elems(coll, c->R, 1) >
                                       chk_out_elems(coll, c->R, 1)
                                   ? chk_in_elems(coll, c->R, 1)
                                   : chk_out_elems(coll, c->R, 1));
            size_t list[MAX_SIZES];
            int n = size_list(c, per, list);
            int base_ok = o->baseline && mpi_dtype(dt, &(MPI_Datatype){0}) &&
                          (!reduces || mpi_op(op, &(MPI_Op){0}));
            for (int i = 0; i < n && !errors; i++) {
                result_t ro = { .wrong = -1 }, ri = { .wrong = -1 };
                result_t bo = { .time_us = -1, .wrong = -1 };
                result_t bi = { .time_us = -1, .wrong = -1 };
                size_t cnt = list[i], bytes = cnt * per;
                measure(c, 0, cnt, dt, op, 0, &ro);
                if (!ro.failed)
                    measure(c, 0, cnt, dt, op, 1, &ri);
                else
                    ri.failed = 1;
                if (base_ok && !ro.failed && !ri.failed) {
                    measure(c, 1, cnt, dt, op, 0, &bo);
                    if (!bo.failed)
                        measure(c, 1, cnt, dt, op, 1, &bi);
                }
                if (c->rank == 0) {
                    printf("%12zu  %12zu  %8s  %6s  %6d", bytes,
                           bytes / es, ccs_dtype_str(dt),
                           reduces ? ccs_redop_str(op) : "none",
                           ccs_plan_root(c->plan));
                    print_res(&ro, (double)bytes, bf);
                    if (o->baseline)
                        print_base(&ro, &bo);
                    print_res(&ri, (double)bytes, bf);
                    if (o->baseline)
                        print_base(&ri, &bi);
                    printf("\n");
                    if (o->alternate > 0 && !ro.failed && !ri.failed)
                        printf("# alternating every %d calls, out of place "
                               "/ in place: %s %.2f / %.2f us, plain "
                               "%.2f / %.2f us, %s/plain %.3f / %.3f\n",
                               o->alternate, alt_name(o), ro.alt_us[0],
                               ri.alt_us[0],
                               ro.alt_us[1], ri.alt_us[1], alt_name(o),
                               ro.alt_us[1] > 0 ? ro.alt_us[0] / ro.alt_us[1]
                                                : 0,
                               ri.alt_us[1] > 0 ? ri.alt_us[0] / ri.alt_us[1]
                                                : 0);
                    fflush(stdout);
                    if (c->json != NULL) {
                        fprintf(c->json, "%s    {\"size\": %zu, \"count\": "
                                "%zu, \"type\": \"%s\", \"redop\": \"%s\", "
                                "\"root\": %d", c->json_rows++ ? ",\n" : "",
                                bytes, bytes / es, ccs_dtype_str(dt),
                                reduces ? ccs_redop_str(op) : "none",
                                ccs_plan_root(c->plan));
                        json_res(c->json, "out_of_place", &ro,
                                 (double)bytes, bf);
                        json_res(c->json, "in_place", &ri, (double)bytes,
                                 bf);
                        if (o->baseline) {
                            json_res(c->json, "mpi_out_of_place", &bo,
                                     (double)bytes, bf);
                            json_res(c->json, "mpi_in_place", &bi,
                                     (double)bytes, bf);
                        }
                        fprintf(c->json, "}");
                    }
                }
                errors += ro.failed + ri.failed + bo.failed + bi.failed;
                wrong += (ro.wrong > 0 ? ro.wrong : 0) +
                         (ri.wrong > 0 ? ri.wrong : 0) +
                         (bo.wrong > 0 ? bo.wrong : 0) +
                         (bi.wrong > 0 ? bi.wrong : 0);
                if (!ro.failed && ro.time_us > 0) {
                    bwsum += (double)bytes / ro.time_us / 1e3 * bf;
                    nbw++;
                }
            }
        }
    }
    /* One line per failing rank, in rank order, before the footer. */
    for (int r = 0; r < c->R; r++) {
        if (c->sy->mpi)
            MPI_Barrier(MPI_COMM_WORLD);
        else
            pthread_barrier_wait(&c->sy->bar);
        if (r == c->rank && c->failed) {
            fprintf(stderr, "ccs-perf: rank %d: %s\n", c->rank, c->errmsg);
            fflush(stderr);
        }
    }
    barrier(c);
    if (c->rank == 0) {
        printf("# Out of bounds values : %lld %s\n", wrong,
               wrong || errors ? "FAILED" : "OK");
        printf("# Avg bus bandwidth    : %g\n", nbw ? bwsum / nbw : 0.0);
        if (errors)
            printf("# Errors               : a run failed (messages on stderr); "
                   "later sizes skipped: FAILED\n");
        printf("#\n");
    }
    c->rc = errors ? 3 : wrong ? 1 : 0;
}

static void *thread_main(void *arg)
{
    rank_ctx_t *c = arg;
#ifdef CCS_HAVE_CUDA
    if (c->o->xp == XP_CUDA && c->o->ngpus > 0)
        cudaSetDevice(c->rank % c->o->ngpus);
#endif
    run_rank(c);
    return NULL;
}

/* ---- arguments ---- */

/* Bytes with an optional K/M/G suffix (powers of 1024) and B; whole
 * numbers only, no overflow. */
static int parse_size(const char *s, size_t *out)
{
    char *end;
    unsigned long long v;
    unsigned shift = 0;

    if (s[0] == '-' || s[0] == '\0')
        return 0;
    errno = 0;
    v = strtoull(s, &end, 10);
    if (end == s || errno == ERANGE)
        return 0;
    switch (*end) {
    case 'K': case 'k': shift = 10; end++; break;
    case 'M': case 'm': shift = 20; end++; break;
    case 'G': case 'g': shift = 30; end++; break;
    case 'T': case 't': shift = 40; end++; break;
    default: break;
    }
    if (*end == 'B' || *end == 'b')
        end++;
    if (*end != '\0' || (shift > 0 && v > (SIZE_MAX >> shift)))
        return 0;
    *out = (size_t)(v << shift);
    return 1;
}

static int parse_int(const char *s, long lo, long hi, int *out)
{
    char *end;
    long v;

    errno = 0;
    v = strtol(s, &end, 10);
    if (end == s || *end != '\0' || errno == ERANGE || v < lo || v > hi)
        return 0;
    *out = (int)v;
    return 1;
}

static void usage(FILE *f)
{
    fprintf(f,
"usage: ccs-perf [options] PLAN.ccs\n"
"Benchmark and check a ccsynth plan, nccl-tests style.\n"
"\n"
"nccl-tests options (same meaning):\n"
"  -b, --minbytes SIZE        smallest size (default 32M; K/M/G suffixes)\n"
"  -e, --maxbytes SIZE        largest size (default 32M)\n"
"  -i, --stepbytes SIZE       size increment when -f is not given (1M)\n"
"  -f, --stepfactor X         size multiplication factor (> 1)\n"
"  -n, --iters N              timed iterations (20)\n"
"  -w, --warmup_iters N       warm-up iterations (5)\n"
"  -m, --agg_iters N          calls per timed iteration (1)\n"
"  -c, --check N              check iterations per size (1; 0: none)\n"
"  -d, --datatype TYPE|all    float32 float64 float16 bfloat16 int32 int64\n"
"                             uint8 (default float32)\n"
"  -o, --op OP|all            sum prod min max avg (default sum)\n"
"  -r, --root R               root of reduce/broadcast (the plan's)\n"
"  -a, --average 0|1|2|3      rank time reported: rank 0, avg, min, max (1)\n"
"  -z, --blocking 0|1         wait for each call's completion (GPU)\n"
"  -T, --timeout SECONDS      fail a wait after this long (0: never)\n"
"  -J, --output_file F.json   also write the results as JSON\n"
"  -t, --nthreads N           threads: must equal the plan's ranks\n"
"  -g, --ngpus N              cuda: GPUs the ranks use (rank %% N);\n"
"                             nccl: GPUs per node (local rank %% N)\n"
"ccs-perf options:\n"
"  -P, --plan FILE            the plan (or as the last argument)\n"
"  -X, --transport NAME       threads (default), mpi, cuda, nccl\n"
"  -B, --baseline             mpi: time MPI's own collective after the\n"
"                             plan, side by side, with plan / MPI ratios\n"
"  -s, --straggler R|auto     run with rank R as the straggler; auto: the\n"
"                             library finds it (CCS_STRAGGLER_AUTO)\n"
"  -Q, --plain FILE           -s auto: the plan to run when nobody is late\n"
"  -Y, --alternate N          timed calls alternate N calls of the run (-s\n"
"                             auto, or the plan) and N calls of the -Q plan\n"
"                             alone, and a line after each row gives each\n"
"                             one's mean per call (both see the same run's\n"
"                             scheduling; -Q the plan itself: the spread of\n"
"                             the pairing alone)\n"
"  -E, --delay US             the straggler arrives US microseconds late\n"
"  -A, --pattern P            who is late: persistent (default: -L, else\n"
"                             -s, else the plan's straggler), rotating:N\n"
"                             (rank (call/N) %% R), random (every rank,\n"
"                             uniform 0..US), none; needs -E\n"
"  -L, --late R               persistent: the late rank\n"
"  -K, --counts C1,C2,...     element counts instead of -b/-e\n"
"  -W, --window W             issue window (hazard-ordered issue, 1..64;\n"
"                             1: step by step; default CCS_ISSUE_WINDOW,\n"
"                             else 1); threads, mpi\n"
"  -h, --help                 this text\n"
"Exit status: 0 correct, 1 wrong elements, 2 usage, 3 runtime error.\n");
}

static int bad(const char *flag, const char *val, const char *want)
{
    fprintf(stderr, "ccs-perf: %s '%s': %s\n", flag, val, want);
    return 0;
}

static int parse_counts(opts_t *o, const char *arg)
{
    const char *p = arg;

    o->ncounts = 0;
    while (*p != '\0') {
        char *end;
        unsigned long long v;
        if (o->ncounts == MAX_SIZES)
            return bad("-K", arg, "at most 64 counts");
        if (*p < '0' || *p > '9')
            return bad("-K", arg, "want counts like 1,7,1000");
        errno = 0;
        v = strtoull(p, &end, 10);
        if (errno == ERANGE || v == 0 || v > SIZE_MAX ||
            (*end != ',' && *end != '\0'))
            return bad("-K", arg, "want counts >= 1 like 1,7,1000");
        o->counts[o->ncounts++] = (size_t)v;
        p = *end == ',' ? end + 1 : end;
    }
    return o->ncounts > 0 ? 1 : bad("-K", arg, "no count");
}

static int parse_xp(const char *s, xp_t *out)
{
    for (int i = 0; i < 4; i++) {
        if (strcmp(s, xp_names[i]) == 0) {
            *out = (xp_t)i;
            return 1;
        }
    }
    return 0;
}

static int parse_args(int argc, char **argv, opts_t *o)
{
    static const struct option longs[] = {
        { "minbytes", required_argument, NULL, 'b' },
        { "maxbytes", required_argument, NULL, 'e' },
        { "stepbytes", required_argument, NULL, 'i' },
        { "stepfactor", required_argument, NULL, 'f' },
        { "iters", required_argument, NULL, 'n' },
        { "warmup_iters", required_argument, NULL, 'w' },
        { "agg_iters", required_argument, NULL, 'm' },
        { "check", required_argument, NULL, 'c' },
        { "datatype", required_argument, NULL, 'd' },
        { "op", required_argument, NULL, 'o' },
        { "root", required_argument, NULL, 'r' },
        { "average", required_argument, NULL, 'a' },
        { "blocking", required_argument, NULL, 'z' },
        { "timeout", required_argument, NULL, 'T' },
        { "output_file", required_argument, NULL, 'J' },
        { "nthreads", required_argument, NULL, 't' },
        { "ngpus", required_argument, NULL, 'g' },
        { "plan", required_argument, NULL, 'P' },
        { "transport", required_argument, NULL, 'X' },
        { "baseline", no_argument, NULL, 'B' },
        { "straggler", required_argument, NULL, 's' },
        { "delay", required_argument, NULL, 'E' },
        { "pattern", required_argument, NULL, 'A' },
        { "late", required_argument, NULL, 'L' },
        { "plain", required_argument, NULL, 'Q' },
        { "alternate", required_argument, NULL, 'Y' },
        { "counts", required_argument, NULL, 'K' },
        { "window", required_argument, NULL, 'W' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    int ch, step_given = 0, factor_given = 0;
    char *end;

    memset(o, 0, sizeof(*o));
    o->xp = XP_THREADS;
    o->minb = 32 * 1024 * 1024;
    o->maxb = 32 * 1024 * 1024;
    o->stepb = 1024 * 1024;
    o->factor = 1;
    o->iters = 20;
    o->warmup = 5;
    o->agg = 1;
    o->check = 1;
    o->average = 1;
    o->timeout_s = -1;
    o->root = -1;
    o->straggler = -1;
    o->late_rank = -1;
    o->ndt = 1;
    o->dts[0] = CCS_FLOAT32;
    o->nop = 1;
    o->ops[0] = CCS_SUM;
    opterr = 0;
    while ((ch = getopt_long(argc, argv,
                             ":b:e:i:f:n:w:m:c:d:o:r:a:z:T:J:t:g:P:X:Bs:E:"
                             "K:hp:N:D:A:L:Q:W:Y:", longs, NULL)) != -1) {
        switch (ch) {
        case 'b':
            if (!parse_size(optarg, &o->minb))
                return bad("-b", optarg, "want a size like 8, 1K or 64M");
            break;
        case 'e':
            if (!parse_size(optarg, &o->maxb))
                return bad("-e", optarg, "want a size like 8, 1K or 64M");
            break;
        case 'i':
            if (!parse_size(optarg, &o->stepb))
                return bad("-i", optarg, "want a size like 1M");
            step_given = 1;
            break;
        case 'f':
            errno = 0;
            o->factor = strtod(optarg, &end);
            if (end == optarg || *end != '\0' || errno == ERANGE ||
                !(o->factor > 1) || o->factor > 1e6)
                return bad("-f", optarg, "want a factor > 1, like 2");
            factor_given = 1;
            break;
        case 'n':
            if (!parse_int(optarg, 0, 100000000, &o->iters))
                return bad("-n", optarg, "want iterations >= 0");
            break;
        case 'w':
            if (!parse_int(optarg, 0, 100000000, &o->warmup))
                return bad("-w", optarg, "want iterations >= 0");
            break;
        case 'm':
            if (!parse_int(optarg, 1, 1000000, &o->agg))
                return bad("-m", optarg, "want a count >= 1");
            break;
        case 'c':
            if (!parse_int(optarg, 0, 1000000, &o->check))
                return bad("-c", optarg, "want check iterations >= 0");
            break;
        case 'a':
            if (!parse_int(optarg, 0, 3, &o->average))
                return bad("-a", optarg, "want 0, 1, 2 or 3");
            break;
        case 'z':
            if (!parse_int(optarg, 0, 1, &o->blocking))
                return bad("-z", optarg, "want 0 or 1");
            break;
        case 'r':
            if (!parse_int(optarg, 0, 65535, &o->root))
                return bad("-r", optarg, "want a rank");
            break;
        case 'T':
            errno = 0;
            o->timeout_s = strtod(optarg, &end);
            if (end == optarg || *end != '\0' || errno == ERANGE ||
                !(o->timeout_s >= 0) || o->timeout_s > 1e9)
                return bad("-T", optarg, "want seconds >= 0");
            break;
        case 'W':
            if (!parse_int(optarg, 1, CCS_ISSUE_WINDOW_MAX, &o->window))
                return bad("-W", optarg, "want a window of 1..64 steps");
            break;
        case 'J': o->json_path = optarg; break;
        case 't':
            /* nccl-tests' thread count; a name is the old transport flag */
            if (parse_xp(optarg, &o->xp))
                break;
            if (!parse_int(optarg, 1, MAX_THREADS, &o->nthreads))
                return bad("-t", optarg, "want threads per process, 1 to "
                           "256 (the transport is -X)");
            break;
        case 'g':
            if (!parse_int(optarg, 1, 1024, &o->ngpus))
                return bad("-g", optarg, "want GPUs >= 1");
            break;
        case 'p':
            /* nccl-tests' -p is parallel_init 0/1 (nothing to do here);
             * anything else is the old plan flag. */
            if (strcmp(optarg, "0") != 0 && strcmp(optarg, "1") != 0)
                o->plan_path = optarg;
            break;
        case 'P': o->plan_path = optarg; break;
        case 'X':
            if (!parse_xp(optarg, &o->xp))
                return bad("-X", optarg, "want threads, mpi, cuda or nccl");
            break;
        case 'B': o->baseline = 1; break;
        case 's':
            if (strcmp(optarg, "auto") == 0)
                o->straggler = CCS_STRAGGLER_AUTO;
            else if (!parse_int(optarg, 0, 65535, &o->straggler))
                return bad("-s", optarg, "want a rank or auto");
            break;
        case 'Q': o->plain_path = optarg; break;
        case 'Y':
            if (!parse_int(optarg, 1, 100000000, &o->alternate))
                return bad("--alternate", optarg, "want calls per block "
                           "(1 or more)");
            break;
        case 'L':
            if (!parse_int(optarg, 0, 65535, &o->late_rank))
                return bad("-L", optarg, "want a rank");
            break;
        case 'A':
            if (strcmp(optarg, "persistent") == 0) {
                o->pattern = PAT_PERSIST;
            } else if (strcmp(optarg, "random") == 0) {
                o->pattern = PAT_RANDOM;
            } else if (strcmp(optarg, "none") == 0) {
                o->pattern = PAT_NONE;
            } else if (strncmp(optarg, "rotating", 8) == 0) {
                o->pattern = PAT_ROTATE;
                o->period = 1;
                if (optarg[8] == ':' &&
                    !parse_int(optarg + 9, 1, 1000000, &o->period))
                    return bad("-A", optarg, "rotating:N wants N >= 1 "
                               "calls per late rank");
                if (optarg[8] != ':' && optarg[8] != '\0')
                    return bad("-A", optarg, "want persistent, rotating[:N], "
                               "random or none");
            } else {
                return bad("-A", optarg, "want persistent, rotating[:N], "
                           "random or none");
            }
            break;
        case 'E': {
            int us;
            if (!parse_int(optarg, 0, 100000000, &us))
                return bad("-E", optarg, "want microseconds >= 0");
            o->delay_us = (unsigned)us;
            break;
        }
        case 'K':
            if (!parse_counts(o, optarg))
                return 0;
            break;
        case 'N':
            return bad("-N", optarg, "is nccl-tests' run_cycles; element "
                       "counts are -K (--counts)");
        case 'D':
            return bad("-D", optarg, "the straggler delay is -E (--delay)");
        case 'd':
            if (strcmp(optarg, "all") == 0) {
                o->ndt = CCS_DTYPE_COUNT;
                for (int i = 0; i < CCS_DTYPE_COUNT; i++)
                    o->dts[i] = (ccs_dtype_t)i;
            } else if (ccs_dtype_parse(optarg, &o->dts[0]) != CCS_OK) {
                fprintf(stderr, "ccs-perf: unknown type '%s'\n", optarg);
                return 0;
            }
            break;
        case 'o':
            if (strcmp(optarg, "all") == 0) {
                o->nop = CCS_REDOP_COUNT;
                for (int i = 0; i < CCS_REDOP_COUNT; i++)
                    o->ops[i] = (ccs_redop_t)i;
            } else if (ccs_redop_parse(optarg, &o->ops[0]) != CCS_OK) {
                fprintf(stderr, "ccs-perf: unknown op '%s'\n", optarg);
                return 0;
            }
            break;
        case 'h': usage(stdout); exit(0);
        case ':':
            fprintf(stderr, "ccs-perf: %s needs a value\n",
                    argv[optind - 1]);
            return 0;
        default:
            fprintf(stderr, "ccs-perf: unknown option '%s'\n",
                    argv[optind - 1]);
            return 0;
        }
    }
    if (optind == argc - 1 && o->plan_path == NULL)
        o->plan_path = argv[optind++];
    if (o->plan_path == NULL) {
        fprintf(stderr, "ccs-perf: no plan given\n");
        return 0;
    }
    if (optind != argc) {
        fprintf(stderr, "ccs-perf: unexpected argument '%s'\n", argv[optind]);
        return 0;
    }
    if (step_given && factor_given) {
        fprintf(stderr, "ccs-perf: -i and -f both given: pick one\n");
        return 0;
    }
    if (o->ncounts == 0 && o->minb > o->maxb) {
        fprintf(stderr, "ccs-perf: -b %zu is above -e %zu\n", o->minb,
                o->maxb);
        return 0;
    }
    if (o->baseline && o->xp != XP_MPI) {
        fprintf(stderr, "ccs-perf: -B needs -X mpi\n");
        return 0;
    }
    if ((o->xp == XP_CUDA || o->xp == XP_NCCL) && o->ngpus == 0)
        o->ngpus = 1;
    return 1;
}

/* Checks that need the plan: sizes, root, threads. */
static int check_with_plan(const opts_t *o, const ccs_plan_t *plan, int R)
{
    ccs_coll_t coll = ccs_plan_coll(plan);
    size_t per = (chk_in_elems(coll, R, 1) > chk_out_elems(coll, R, 1)
                      ? chk_in_elems(coll, R, 1) : chk_out_elems(coll, R, 1));
    size_t maxes = 8, bytes;   /* the largest element size */

    if (o->pattern != PAT_DEFAULT && o->pattern != PAT_NONE &&
        o->delay_us == 0) {
        fprintf(stderr, "ccs-perf: -A: a delay pattern needs a delay (-E "
                "US > 0)\n");
        return 0;
    }
    /* -s out of range is the library's to refuse (its message). */
    if (o->late_rank >= R) {
        fprintf(stderr, "ccs-perf: -L %d: the plan has ranks 0..%d\n",
                o->late_rank, R - 1);
        return 0;
    }
    if (o->alternate > 0 && o->plain_path == NULL) {
        fprintf(stderr, "ccs-perf: --alternate: needs -Q (the plan it "
                "alternates with)\n");
        return 0;
    }
    if (o->plain_path != NULL && o->straggler != CCS_STRAGGLER_AUTO &&
        o->alternate == 0) {
        fprintf(stderr, "ccs-perf: -Q: a plain plan is for -s auto or "
                "--alternate\n");
        return 0;
    }
    if (o->plain_path != NULL && g_plain == NULL) {
        char msg[512];
        if (ccs_plan_load_file_msg(o->plain_path, &g_plain, msg,
                                   sizeof(msg)) != CCS_OK) {
            fprintf(stderr, "ccs-perf: -Q: %s\n", msg);
            return 0;
        }
    }
    if (o->root >= 0 && o->root != ccs_plan_root(plan)) {
        fprintf(stderr, "ccs-perf: -r %d: the plan's root is %d (a plan is "
                "made for one root)\n", o->root, ccs_plan_root(plan));
        return 0;
    }
    if (o->nthreads > 0 && o->xp != XP_MPI && o->xp != XP_NCCL &&
        o->nthreads != R) {
        fprintf(stderr, "ccs-perf: -t %d: the plan has %d ranks, each a "
                "thread\n", o->nthreads, R);
        return 0;
    }
    if (o->nthreads > 1 && (o->xp == XP_MPI || o->xp == XP_NCCL)) {
        fprintf(stderr, "ccs-perf: -t %d: one thread per process with -X "
                "%s\n", o->nthreads, xp_names[o->xp]);
        return 0;
    }
    for (int i = 0; i < o->ncounts; i++) {
        if (__builtin_mul_overflow(o->counts[i], per * maxes, &bytes) ||
            bytes > MAX_BUF_BYTES) {
            fprintf(stderr, "ccs-perf: -K %zu: buffers of that count would "
                    "exceed %zu bytes\n", o->counts[i], MAX_BUF_BYTES);
            return 0;
        }
    }
    if (o->ncounts == 0) {
        if (o->maxb > MAX_BUF_BYTES) {
            fprintf(stderr, "ccs-perf: -e %zu: above %zu bytes\n", o->maxb,
                    MAX_BUF_BYTES);
            return 0;
        }
        if (o->maxb < per) {
            fprintf(stderr, "ccs-perf: -e %zu: smaller than one element "
                    "per rank\n", o->maxb);
            return 0;
        }
    }
    return 1;
}

static void header(const opts_t *o, const ccs_plan_t *plan)
{
    ccs_plan_info_t in;

    ccs_plan_get_info(plan, &in);
    printf("# ccs-perf: %s %s plan %s: %u ranks, %u chunks, %u steps, "
           "%u phase(s), straggler %d; transport %s%s\n", in.algo,
           ccs_coll_str(in.coll), o->plan_path, in.nranks, in.nchunks,
           in.nsteps, in.nphases, in.straggler, xp_names[o->xp],
           o->baseline ? "; baseline: MPI's own collective (mpi time, "
                         "ratio = plan / MPI)" : "");
    printf("# iters %d, agg %d, warmup %d, check %d, average %d%s",
           o->iters, o->agg, o->warmup, o->check, o->average,
           o->straggler >= 0 ? ", straggler relabeled" : "");
    if (o->window > 0)
        printf(", issue window %d", o->window);
    printf("\n#\n");
    if (o->baseline) {
        printf("# %58s %52s\n", "out-of-place", "in-place");
        printf("# %10s  %12s  %8s  %6s  %6s  %8s %7s %7s %6s  %8s %6s  %8s "
               "%7s %7s %6s  %8s %6s\n", "size", "count", "type", "redop",
               "root", "time", "algbw", "busbw", "#wrong", "mpi", "ratio",
               "time", "algbw", "busbw", "#wrong", "mpi", "ratio");
        printf("# %10s  %12s  %8s  %6s  %6s  %8s %7s %7s %6s  %8s %6s  %8s "
               "%7s %7s %6s  %8s %6s\n", "(B)", "(elements)", "", "", "",
               "(us)", "(GB/s)", "(GB/s)", "", "(us)", "", "(us)",
               "(GB/s)", "(GB/s)", "", "(us)", "");
        return;
    }
    printf("# %58s %36s\n", "out-of-place", "in-place");
    printf("# %10s  %12s  %8s  %6s  %6s  %8s %7s %7s %6s  %8s %7s %7s "
           "%6s\n", "size", "count", "type", "redop", "root", "time",
           "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong");
    printf("# %10s  %12s  %8s  %6s  %6s  %8s %7s %7s %6s  %8s %7s %7s "
           "%6s\n", "(B)", "(elements)", "", "", "", "(us)", "(GB/s)",
           "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
}

static FILE *json_open(const opts_t *o, const ccs_plan_t *plan, int R)
{
    FILE *f;
    ccs_plan_info_t in;

    if (o->json_path == NULL)
        return NULL;
    f = fopen(o->json_path, "w");
    if (f == NULL) {
        fprintf(stderr, "ccs-perf: -J %s: %s\n", o->json_path,
                strerror(errno));
        return NULL;
    }
    ccs_plan_get_info(plan, &in);
    fprintf(f, "{\n  \"plan\": \"%s\", \"algo\": \"%s\", \"coll\": \"%s\", "
               "\"nranks\": %d, \"transport\": \"%s\",\n  \"iters\": %d, "
               "\"agg_iters\": %d, \"warmup\": %d, \"check\": %d,\n  "
               "\"results\": [\n", o->plan_path, in.algo,
            ccs_coll_str(in.coll), R, xp_names[o->xp], o->iters, o->agg,
            o->warmup, o->check);
    return f;
}

static void json_close(FILE *f, int rc)
{
    if (f == NULL)
        return;
    fprintf(f, "\n  ],\n  \"status\": \"%s\"\n}\n", rc ? "FAILED" : "OK");
    fclose(f);
}

static int set_timeout(const opts_t *o, ccs_comm_t *comm, int rank)
{
    ccs_status_t st;
    if (o->window > 0 &&
        (st = ccs_comm_set_issue_window(comm, (unsigned)o->window)) !=
            CCS_OK) {
        fprintf(stderr, "ccs-perf: rank %d: -W %d: %s (the %s transport "
                "runs step by step)\n", rank, o->window, ccs_strerror(st),
                ccs_comm_transport(comm));
        return 0;
    }
    if (o->timeout_s < 0)
        return 1;
    st = ccs_comm_set_timeout(comm, o->timeout_s);
    if (st != CCS_OK && st != CCS_ERR_UNSUPPORTED) {
        fprintf(stderr, "ccs-perf: rank %d: -T: %s\n", rank,
                ccs_strerror(st));
        return 0;
    }
    return 1;
}

/* mpi and nccl: one process per rank. */
static int main_mpi(opts_t *o, int *argc, char ***argv)
{
    int rank = 0, size = 0, worst = 0, rc = 0;
    ccs_plan_t *plan = NULL;
    rank_ctx_t c;
    sync_t sy;
    char msg[512];
    ccs_status_t st;
    MPI_Comm world = MPI_COMM_WORLD;
#ifdef CCS_HAVE_CUDA
    ncclComm_t nc = NULL;
#endif

    memset(&sy, 0, sizeof(sy));
    memset(&c, 0, sizeof(c));
    MPI_Init(argc, argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    sy.mpi = 1;
    st = ccs_plan_load_file_msg(o->plan_path, &plan, msg, sizeof(msg));
    if (st != CCS_OK) {
        if (rank == 0)
            fprintf(stderr, "ccs-perf: %s\n", msg);
        MPI_Finalize();
        return 3;
    }
    if (size != ccs_plan_nranks(plan)) {
        if (rank == 0)
            fprintf(stderr, "ccs-perf: plan has %d ranks, mpirun started %d "
                    "processes\n", ccs_plan_nranks(plan), size);
        ccs_plan_destroy(plan);
        MPI_Finalize();
        return 3;
    }
    if (!check_with_plan(o, plan, size)) {
        ccs_plan_destroy(plan);
        MPI_Finalize();
        return 2;
    }
    c.o = o;
    c.plan = plan;
    c.sy = &sy;
    c.rank = rank;
    c.R = size;
    if (o->xp == XP_NCCL) {
#ifdef CCS_HAVE_CUDA
        ncclUniqueId id;
        if (rank == 0)
            ncclGetUniqueId(&id);
        MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD);
        cudaSetDevice(rank % o->ngpus);
        if (ncclCommInitRank(&nc, size, id, rank) != ncclSuccess) {
            fprintf(stderr, "ccs-perf: rank %d: ncclCommInitRank failed\n",
                    rank);
            rc = 3;
        } else {
            st = ccs_comm_init_nccl_msg(nc, &c.comm, msg, sizeof(msg));
            if (st != CCS_OK) {
                fprintf(stderr, "ccs-perf: rank %d: %s\n", rank, msg);
                rc = 3;
            }
        }
#else
        if (rank == 0)
            fprintf(stderr, "ccs-perf: -X nccl: built without CUDA (make "
                    "CUDA=1)\n");
        rc = 3;
#endif
    } else {
        st = ccs_comm_init_mpi(&world, &c.comm);
        if (st != CCS_OK) {
            fprintf(stderr, "ccs-perf: rank %d: MPI communicator: %s\n",
                    rank, ccs_strerror(st));
            rc = 3;
        }
    }
    MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (worst == 0 && !set_timeout(o, c.comm, rank))
        rc = 2;
    MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (worst == 0) {
        if (rank == 0) {
            header(o, plan);
            c.json = json_open(o, plan, size);
        }
        run_rank(&c);
        rc = c.rc;
        if (rank == 0)
            json_close(c.json, rc);
    }
    ccs_comm_destroy(c.comm);
#ifdef CCS_HAVE_CUDA
    if (nc != NULL)
        ncclCommDestroy(nc);
#endif
    MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    ccs_plan_destroy(plan);
    ccs_plan_destroy(g_plain);
    MPI_Finalize();
    return worst;
}

int main(int argc, char **argv)
{
    opts_t o;
    ccs_plan_t *plan = NULL;
    char msg[512];
    ccs_status_t st;
    sync_t *sy = NULL;        /* large: on the heap */
    int rc = 0, R;
    ccs_comm_t **comms = NULL;
    rank_ctx_t *ctx = NULL;
    pthread_t *th = NULL;

    if (!parse_args(argc, argv, &o)) {
        fprintf(stderr, "usage: ccs-perf [options] PLAN.ccs  (ccs-perf "
                "--help for the options)\n");
        return 2;
    }
    if (o.xp == XP_MPI || o.xp == XP_NCCL)
        return main_mpi(&o, &argc, &argv);

    st = ccs_plan_load_file_msg(o.plan_path, &plan, msg, sizeof(msg));
    if (st != CCS_OK) {
        fprintf(stderr, "ccs-perf: %s\n", msg);
        return 3;
    }
    R = ccs_plan_nranks(plan);
    if (R > MAX_THREADS) {
        fprintf(stderr, "ccs-perf: %d ranks: at most %d threads\n", R,
                MAX_THREADS);
        ccs_plan_destroy(plan);
        return 3;
    }
    if (!check_with_plan(&o, plan, R)) {
        ccs_plan_destroy(plan);
        return 2;
    }
    sy = calloc(1, sizeof(*sy));
    comms = calloc((size_t)R, sizeof(*comms));
    ctx = calloc((size_t)R, sizeof(*ctx));
    th = calloc((size_t)R, sizeof(*th));
    if (sy == NULL || comms == NULL || ctx == NULL || th == NULL) {
        fprintf(stderr, "ccs-perf: out of memory\n");
        rc = 3;
        goto out;
    }
    if (o.xp == XP_CUDA) {
#ifdef CCS_HAVE_CUDA
        int *dev = calloc((size_t)R, sizeof(int));
        if (dev == NULL) {
            rc = 3;
            goto out;
        }
        for (int r = 0; r < R; r++)
            dev[r] = r % o.ngpus;
        st = ccs_comm_init_cuda_msg(R, dev, comms, msg, sizeof(msg));
        free(dev);
        if (st != CCS_OK) {
            fprintf(stderr, "ccs-perf: cuda transport: %s\n", msg);
            rc = 3;
            goto out;
        }
#else
        fprintf(stderr, "ccs-perf: -X cuda: built without CUDA (make "
                "CUDA=1)\n");
        rc = 3;
        goto out;
#endif
    } else {
        st = ccs_comm_init_threads(R, comms);
        if (st != CCS_OK) {
            fprintf(stderr, "ccs-perf: threads world: %s\n",
                    ccs_strerror(st));
            rc = 3;
            goto out;
        }
    }
    for (int r = 0; r < R; r++) {
        if (!set_timeout(&o, comms[r], r)) {
            rc = 2;
            goto destroy;
        }
    }
    pthread_barrier_init(&sy->bar, NULL, (unsigned)R);
    header(&o, plan);
    for (int r = 0; r < R; r++) {
        ctx[r].o = &o;
        ctx[r].plan = plan;
        ctx[r].comm = comms[r];
        ctx[r].sy = sy;
        ctx[r].rank = r;
        ctx[r].R = R;
    }
    ctx[0].json = json_open(&o, plan, R);
    for (int r = 0; r < R; r++)
        pthread_create(&th[r], NULL, thread_main, &ctx[r]);
    for (int r = 0; r < R; r++) {
        pthread_join(th[r], NULL);
        if (ctx[r].rc > rc)
            rc = ctx[r].rc;
    }
    json_close(ctx[0].json, rc);
    pthread_barrier_destroy(&sy->bar);
destroy:
    for (int r = 0; r < R; r++)
        ccs_comm_destroy(comms[r]);
out:
    free(th);
    free(ctx);
    free(comms);
    free(sy);
    ccs_plan_destroy(plan);
    ccs_plan_destroy(g_plain);
    return rc;
}
