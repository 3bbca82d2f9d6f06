/*
 * ccs-perf - nccl-tests-style benchmark and checker of a plan on a
 * transport.
 *
 *   ccs-perf -p PLAN.ccs [-t threads|mpi] [-b 8] [-e 128M] [-f 2]
 *            [-n 20] [-w 5] [-d float32|...|all] [-o sum|...|all]
 *            [-c 0|1] [-s straggler] [-D delay_us] [-N c1,c2,...] [-B]
 *
 * Sizes are bytes of the larger buffer (nccl-tests' "size"); -N gives
 * element counts instead (count as ccs_run takes it).  With -t threads
 * the plan's ranks are threads of this process; with -t mpi run it under
 * mpirun with as many processes as the plan has ranks.  -B (mpi only)
 * times Open MPI's own collective instead of the plan, same harness: the
 * baseline of scripts/bench-runtime.sh.  -c 1 checks every size, type and
 * op against an independent reference (tools/ccs_check.h) and counts wrong
 * elements over all ranks.
 *
 * Exit status: 0 all correct, 1 wrong elements, 2 usage, 3 runtime error.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <mpi.h>

#include "../runtime/ccs.h"
#include "../runtime/sched.h"  /* ccs_busbw_factor */
#include "ccs_check.h"

#define MAX_SIZES 64
#define MAX_THREADS 256

typedef struct opts {
    const char *plan_path;
    const char *transport;
    size_t minb, maxb;
    double factor;
    int iters, warmup, check;
    int straggler;
    unsigned delay_us;
    int ndt, nop;
    ccs_dtype_t dts[CCS_DTYPE_COUNT];
    ccs_redop_t ops[CCS_REDOP_COUNT];
    size_t counts[MAX_SIZES];
    int ncounts;
    int baseline;
} opts_t;

/* Rank-to-rank agreement: a barrier and sums over ranks. */
typedef struct sync {
    int mpi;
    pthread_barrier_t bar;
    double dsum[MAX_THREADS];
    long long isum[MAX_THREADS];
} sync_t;

typedef struct rank_ctx {
    const opts_t *o;
    const ccs_plan_t *plan;
    ccs_comm_t *comm;
    sync_t *sy;
    int rank, R;
    int rc;                   /* 0, 1 wrong, 3 error */
} rank_ctx_t;

static void barrier(rank_ctx_t *c)
{
    if (c->sy->mpi)
        MPI_Barrier(MPI_COMM_WORLD);
    else
        pthread_barrier_wait(&c->sy->bar);
}

static double sum_d(rank_ctx_t *c, double v)
{
    double s = 0;
    if (c->sy->mpi) {
        MPI_Allreduce(&v, &s, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        return s;
    }
    c->sy->dsum[c->rank] = v;
    pthread_barrier_wait(&c->sy->bar);
    for (int r = 0; r < c->R; r++)
        s += c->sy->dsum[r];
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
    c->sy->isum[c->rank] = v;
    pthread_barrier_wait(&c->sy->bar);
    for (int r = 0; r < c->R; r++)
        s += c->sy->isum[r];
    pthread_barrier_wait(&c->sy->bar);
    return s;
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

/* One call of the collective: the plan, or MPI's own (-B). */
static ccs_status_t one_call(rank_ctx_t *c, const void *send, void *recv,
                             size_t count, ccs_dtype_t dt, ccs_redop_t op,
                             int inplace)
{
    ccs_coll_t coll = ccs_plan_coll(c->plan);
    int root = ccs_plan_root(c->plan), rc = MPI_SUCCESS, n = (int)count;
    MPI_Datatype t;
    MPI_Op mo = MPI_SUM;

    if (!c->o->baseline) {
        ccs_run_opts_t ro = CCS_RUN_OPTS_INIT;
        ro.straggler = c->o->straggler;
        if (c->o->delay_us > 0 && c->rank == (c->o->straggler >= 0
                                                  ? c->o->straggler
                                                  : ccs_plan_straggler(
                                                        c->plan)))
            usleep(c->o->delay_us);
        return ccs_run_ex(c->plan, c->comm, send, recv, count, dt, op, NULL,
                          &ro);
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
    double time_us;
    long long wrong;          /* -1: not checked */
    int failed;
} result_t;

static void measure(rank_ctx_t *c, size_t count, ccs_dtype_t dt,
                    ccs_redop_t op, int inplace, result_t *res)
{
    ccs_coll_t coll = ccs_plan_coll(c->plan);
    int root = ccs_plan_root(c->plan);
    size_t es = ccs_dtype_size(dt);
    size_t in_n = chk_in_elems(coll, c->R, count);
    size_t out_n = chk_out_elems(coll, c->R, count);
    size_t big = in_n > out_n ? in_n : out_n;
    uint8_t *a = malloc(big * es + 64), *b = NULL;
    uint8_t *send = NULL, *recv = NULL;
    ccs_status_t st = CCS_OK;
    long long fails;
    double t0, t1;

    if (!inplace)
        b = malloc(out_n * es + 64);
    if (a == NULL || (!inplace && b == NULL)) {
        st = CCS_ERR_NOMEM;
        goto out;
    }
    send = recv = a;
    if (inplace && coll == CCS_COLL_REDUCESCATTER)
        recv = a + (size_t)c->rank * count * es;
    if (inplace && coll == CCS_COLL_ALLGATHER)
        send = a + (size_t)c->rank * count * es;
    if (!inplace)
        recv = b;
    memset(a, 0, big * es);
    if (b)
        memset(b, 0, out_n * es);
    res->wrong = -1;
    if (c->o->check) {
        chk_fill(coll, dt, op, c->rank, c->R, root, count, send);
        st = one_call(c, send, recv, count, dt, op, inplace);
        if (st == CCS_OK)
            res->wrong = (long long)chk_wrong(coll, dt, op, c->rank, c->R,
                                              root, count, recv);
    }
    for (int i = 0; i < c->o->warmup && st == CCS_OK; i++)
        st = one_call(c, send, recv, count, dt, op, inplace);
out:
    fails = sum_i(c, st != CCS_OK);
    if (fails > 0) {
        if (st != CCS_OK)
            fprintf(stderr, "ccs-perf: rank %d: %s: %s\n", c->rank,
                    ccs_status_name(st),
                    c->o->baseline ? "MPI collective failed or unsupported"
                                   : ccs_comm_last_error(c->comm));
        res->failed = 1;
        free(a);
        free(b);
        return;
    }
    barrier(c);
    t0 = now_s();
    for (int i = 0; i < c->o->iters && st == CCS_OK; i++)
        st = one_call(c, send, recv, count, dt, op, inplace);
    t1 = now_s();
    if (st != CCS_OK)
        fprintf(stderr, "ccs-perf: rank %d: %s\n", c->rank,
                ccs_comm_last_error(c->comm));
    res->failed = sum_i(c, st != CCS_OK) > 0;
    res->time_us = sum_d(c, (t1 - t0) * 1e6 / (c->o->iters > 0
                                                   ? c->o->iters : 1)) /
                   c->R;
    if (res->wrong >= 0)
        res->wrong = sum_i(c, res->wrong);
    free(a);
    free(b);
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
    printf("  %8.1f %7.2f %7.2f %6s", r->time_us, algbw, algbw * bf, wrong);
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

    for (int d = 0; d < o->ndt; d++) {
        for (int k = 0; k < nop; k++) {
            ccs_dtype_t dt = o->dts[d];
            ccs_redop_t op = reduces ? o->ops[k] : CCS_SUM;
            size_t es = ccs_dtype_size(dt);
            size_t list[MAX_SIZES];
            int n = 0;
            if (o->ncounts > 0) {
                memcpy(list, o->counts, sizeof(size_t) * (size_t)o->ncounts);
                n = o->ncounts;
            } else {
                size_t per = es * (size_t)(chk_in_elems(coll, c->R, 1) >
                                                   chk_out_elems(coll, c->R, 1)
                                               ? chk_in_elems(coll, c->R, 1)
                                               : chk_out_elems(coll, c->R,
                                                               1));
                for (double sz = (double)o->minb;
                     sz <= (double)o->maxb && n < MAX_SIZES;
                     sz = o->factor > 1 ? sz * o->factor : sz + 1e300) {
                    size_t cnt = (size_t)sz / per;
                    if (cnt > 0)
                        list[n++] = cnt;
                }
            }
            for (int i = 0; i < n; i++) {
                result_t ro = { 0, -1, 0 }, ri = { 0, -1, 0 };
                size_t big = chk_in_elems(coll, c->R, list[i]);
                size_t outn = chk_out_elems(coll, c->R, list[i]);
                if (outn > big)
                    big = outn;
                if (o->baseline && (!mpi_dtype(dt, &(MPI_Datatype){0}) ||
                                    (reduces &&
                                     !mpi_op(op, &(MPI_Op){0}))))
                    continue;
                measure(c, list[i], dt, op, 0, &ro);
                measure(c, list[i], dt, op, 1, &ri);
                if (c->rank == 0) {
                    printf("%12zu  %12zu  %8s  %6s  %6d", big * es, big,
                           ccs_dtype_str(dt),
                           reduces ? ccs_redop_str(op) : "none",
                           ccs_plan_root(c->plan));
                    print_res(&ro, (double)(big * es), bf);
                    print_res(&ri, (double)(big * es), bf);
                    printf("\n");
                    fflush(stdout);
                }
                errors += ro.failed + ri.failed;
                wrong += (ro.wrong > 0 ? ro.wrong : 0) +
                         (ri.wrong > 0 ? ri.wrong : 0);
                if (!ro.failed && ro.time_us > 0) {
                    bwsum += (double)(big * es) / ro.time_us / 1e3 * bf;
                    nbw++;
                }
            }
        }
    }
    if (c->rank == 0) {
        printf("# Out of bounds values : %lld %s\n", wrong,
               wrong ? "FAILED" : "OK");
        printf("# Avg bus bandwidth    : %g\n", nbw ? bwsum / nbw : 0.0);
        if (errors)
            printf("# Errors               : %d\n", errors);
    }
    c->rc = errors ? 3 : wrong ? 1 : 0;
}

static void *thread_main(void *arg)
{
    run_rank(arg);
    return NULL;
}

static int parse_size(const char *s, size_t *out)
{
    char *end;
    double v = strtod(s, &end);
    double m = 1;

    if (end == s || v < 0)
        return 0;
    switch (*end) {
    case 'K': case 'k': m = 1024.0; end++; break;
    case 'M': case 'm': m = 1048576.0; end++; break;
    case 'G': case 'g': m = 1073741824.0; end++; break;
    default: break;
    }
    if (*end == 'B' || *end == 'b')
        end++;
    if (*end != '\0')
        return 0;
    *out = (size_t)(v * m);
    return 1;
}

static void usage(FILE *f)
{
    fprintf(f,
        "usage: ccs-perf -p PLAN.ccs [-t threads|mpi] [-b MINBYTES] "
        "[-e MAXBYTES] [-f FACTOR]\n"
        "                [-n ITERS] [-w WARMUP] [-d TYPE|all] [-o OP|all] "
        "[-c 0|1]\n"
        "                [-s STRAGGLER] [-D DELAY_US] [-N COUNT,...] [-B]\n"
        "  sizes take K/M/G suffixes; -N gives element counts instead;\n"
        "  -B (mpi) times MPI's own collective as a baseline.\n");
}

static int parse_args(int argc, char **argv, opts_t *o)
{
    int ch;

    memset(o, 0, sizeof(*o));
    o->transport = "threads";
    o->minb = 32 * 1024 * 1024;
    o->maxb = 32 * 1024 * 1024;
    o->factor = 2;
    o->iters = 20;
    o->warmup = 5;
    o->check = 1;
    o->straggler = -1;
    o->ndt = 1;
    o->dts[0] = CCS_FLOAT32;
    o->nop = 1;
    o->ops[0] = CCS_SUM;
    while ((ch = getopt(argc, argv, "p:t:b:e:f:n:w:d:o:c:s:D:N:Bh")) != -1) {
        switch (ch) {
        case 'p': o->plan_path = optarg; break;
        case 't': o->transport = optarg; break;
        case 'b': if (!parse_size(optarg, &o->minb)) return 0; break;
        case 'e': if (!parse_size(optarg, &o->maxb)) return 0; break;
        case 'f': o->factor = atof(optarg); break;
        case 'n': o->iters = atoi(optarg); break;
        case 'w': o->warmup = atoi(optarg); break;
        case 'c': o->check = atoi(optarg); break;
        case 's': o->straggler = atoi(optarg); break;
        case 'D': o->delay_us = (unsigned)atoi(optarg); break;
        case 'B': o->baseline = 1; break;
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
        case 'N': {
            char *dup = strdup(optarg), *save = NULL;
            for (char *t = strtok_r(dup, ",", &save);
                 t != NULL && o->ncounts < MAX_SIZES;
                 t = strtok_r(NULL, ",", &save))
                o->counts[o->ncounts++] = (size_t)strtoull(t, NULL, 10);
            free(dup);
            break;
        }
        case 'h': usage(stdout); exit(0);
        default: return 0;
        }
    }
    if (o->plan_path == NULL || optind != argc || o->iters < 0 ||
        o->warmup < 0 || (strcmp(o->transport, "threads") != 0 &&
                          strcmp(o->transport, "mpi") != 0))
        return 0;
    if (o->baseline && strcmp(o->transport, "mpi") != 0) {
        fprintf(stderr, "ccs-perf: -B needs -t mpi\n");
        return 0;
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
           in.nsteps, in.nphases, in.straggler, o->transport,
           o->baseline ? " (baseline: MPI's own collective)" : "");
    printf("# iters %d, warmup %d, check %d%s\n#\n", o->iters, o->warmup,
           o->check, o->straggler >= 0 ? ", straggler relabeled" : "");
    printf("# %58s %36s\n", "out-of-place", "in-place");
    printf("# %10s  %12s  %8s  %6s  %6s  %8s %7s %7s %6s  %8s %7s %7s "
           "%6s\n", "size", "count", "type", "redop", "root", "time",
           "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong");
    printf("# %10s  %12s  %8s  %6s  %6s  %8s %7s %7s %6s  %8s %7s %7s "
           "%6s\n", "(B)", "(elements)", "", "", "", "(us)", "(GB/s)",
           "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
}

int main(int argc, char **argv)
{
    opts_t o;
    ccs_plan_t *plan = NULL;
    char msg[512];
    ccs_status_t st;
    sync_t sy;
    int rc = 0;

    if (!parse_args(argc, argv, &o)) {
        usage(stderr);
        return 2;
    }
    memset(&sy, 0, sizeof(sy));
    if (strcmp(o.transport, "mpi") == 0) {
        int rank = 0, size = 0, worst = 0;
        rank_ctx_t c;
        MPI_Init(&argc, &argv);
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        MPI_Comm_size(MPI_COMM_WORLD, &size);
        sy.mpi = 1;
        st = ccs_plan_load_file_msg(o.plan_path, &plan, msg, sizeof(msg));
        if (st != CCS_OK) {
            if (rank == 0)
                fprintf(stderr, "ccs-perf: %s\n", msg);
            MPI_Finalize();
            return 3;
        }
        memset(&c, 0, sizeof(c));
        c.o = &o;
        c.plan = plan;
        c.sy = &sy;
        c.rank = rank;
        c.R = size;
        if (size != ccs_plan_nranks(plan)) {
            if (rank == 0)
                fprintf(stderr, "ccs-perf: plan has %d ranks, mpirun "
                        "started %d processes\n", ccs_plan_nranks(plan),
                        size);
            ccs_plan_destroy(plan);
            MPI_Finalize();
            return 3;
        }
        MPI_Comm world = MPI_COMM_WORLD;
        st = ccs_comm_init_mpi(&world, &c.comm);
        if (st != CCS_OK) {
            fprintf(stderr, "ccs-perf: rank %d: MPI communicator: %s\n",
                    rank, ccs_strerror(st));
            rc = 3;
        } else {
            if (rank == 0)
                header(&o, plan);
            run_rank(&c);
            rc = c.rc;
            ccs_comm_destroy(c.comm);
        }
        MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        ccs_plan_destroy(plan);
        MPI_Finalize();
        return worst;
    }

    st = ccs_plan_load_file_msg(o.plan_path, &plan, msg, sizeof(msg));
    if (st != CCS_OK) {
        fprintf(stderr, "ccs-perf: %s\n", msg);
        return 3;
    }
    {
        int R = ccs_plan_nranks(plan);
        ccs_comm_t *comms[MAX_THREADS];
        rank_ctx_t ctx[MAX_THREADS];
        pthread_t th[MAX_THREADS];

        if (R > MAX_THREADS) {
            fprintf(stderr, "ccs-perf: %d ranks: at most %d threads\n", R,
                    MAX_THREADS);
            ccs_plan_destroy(plan);
            return 3;
        }
        st = ccs_comm_init_threads(R, comms);
        if (st != CCS_OK) {
            fprintf(stderr, "ccs-perf: threads world: %s\n",
                    ccs_strerror(st));
            ccs_plan_destroy(plan);
            return 3;
        }
        pthread_barrier_init(&sy.bar, NULL, (unsigned)R);
        header(&o, plan);
        for (int r = 0; r < R; r++) {
            memset(&ctx[r], 0, sizeof(ctx[r]));
            ctx[r].o = &o;
            ctx[r].plan = plan;
            ctx[r].comm = comms[r];
            ctx[r].sy = &sy;
            ctx[r].rank = r;
            ctx[r].R = R;
            pthread_create(&th[r], NULL, thread_main, &ctx[r]);
        }
        for (int r = 0; r < R; r++) {
            pthread_join(th[r], NULL);
            if (ctx[r].rc > rc)
                rc = ctx[r].rc;
            ccs_comm_destroy(comms[r]);
        }
        pthread_barrier_destroy(&sy.bar);
    }
    ccs_plan_destroy(plan);
    return rc;
}
