/*
 * xport_mpi.c - the MPI transport: one process per rank.
 *
 * Each SEND / RECV is one MPI_Isend / MPI_Irecv of bytes (split into
 * pieces of at most 1 GiB: MPI counts are int), all of a step's requests
 * complete in one MPI_Waitall.  The tag encodes (step, seq): seq is the
 * op's index among the step's transfers with the same peer in the same
 * direction, so a receive matches exactly the send the plan pairs it
 * with; tags wrap modulo MPI_TAG_UB + 1 for very long plans, which stays
 * exact because MPI never reorders messages between one pair with the
 * same tag and both sides post in plan order.
 *
 * The caller's communicator is duplicated (MPI_Comm_dup, collective) and
 * given MPI_ERRORS_RETURN, so our traffic never matches the caller's and
 * MPI failures come back as CCS_ERR_MPI with MPI's message instead of
 * aborting the job.
 *
 * Timeout: with a timeout set (ccs_comm_set_timeout, CCS_TIMEOUT_S,
 * default CCS_TIMEOUT_DEFAULT_S) wait polls MPI_Testall -- which drives
 * MPI's progress engine exactly as MPI_Waitall's own polling does -- and
 * reads the clock every 64 polls; past the timeout it names the first
 * unfinished transfer (step, peer, bytes, direction), cancels the
 * receives and fails with CCS_ERR_TIMEOUT.  A rank that exited, called
 * MPI_Finalize early or made another call thus ends its peers' runs
 * instead of hanging them.  Timeout 0 uses MPI_Waitall.
 *
 * Per request (an issue window above 1, exec.c): each op's pieces form one
 * ticket; test is MPI_Testall over them, wait_any polls the tickets it is
 * given (under the same timeout).  Tags keep the step, so ops of several
 * steps in flight between one pair still match exactly.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "ccs_int.h"
#include "reduce.h"

#define MPI_PIECE ((size_t)1 << 30)
#define SEQ_BITS 6

/* What a request is, for the timeout message. */
typedef struct mp_what {
    uint32_t step, peer;
    size_t bytes;
    bool is_send;
} mp_what_t;

struct ccs_xport {
    MPI_Comm comm;           /* our duplicate; freed in destroy */
    MPI_Request *reqs;       /* owned; posted this step */
    mp_what_t *what;         /* owned; [cap] one per request */
    int nreq, cap;
    /* Per-request completion (ticket, test, wait_any): ticket tbase + k
     * is the op whose MPI requests start at reqs[tstart[k]] (and end at
     * the next ticket's start, or nreq); its pieces complete together. */
    uint64_t tbase;
    int *tstart;             /* owned; [tcap] */
    int ntick, tcap;
    int tag_ub;
    uint64_t tag_mask;       /* tag_ub when tag_ub + 1 is a power of two
                                (Open MPI, MPICH): a mask instead of a
                                64-bit division per message; else 0 */
    double timeout_s;        /* 0: wait forever */
    /* The reduce kernels for this CPU, picked once at init rather than on
     * every reduce (a small call reduces R-1 times). */
    const ccs_reduce_kernels_t *kern;
};

static ccs_status_t mpi_fail(ccs_err_t *err, int rc, const char *what)
{
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;

    if (MPI_Error_string(rc, msg, &len) != MPI_SUCCESS)
        snprintf(msg, sizeof(msg), "MPI error %d", rc);
    return ccs_err_set(err, CCS_ERR_MPI, "%s: %s", what, msg);
}

static ccs_status_t grow(ccs_xport_t *x, int more, ccs_err_t *err)
{
    if (x->nreq + more > x->cap) {
        int cap = x->cap ? x->cap * 2 : 16;
        MPI_Request *n;
        while (cap < x->nreq + more)
            cap *= 2;
        mp_what_t *w;
        n = realloc(x->reqs, (size_t)cap * sizeof(*n));
        if (n == NULL)
            return ccs_err_set(err, CCS_ERR_NOMEM, "out of memory");
        x->reqs = n;
        w = realloc(x->what, (size_t)cap * sizeof(*w));
        if (w == NULL)
            return ccs_err_set(err, CCS_ERR_NOMEM, "out of memory");
        x->what = w;
        x->cap = cap;
    }
    return CCS_OK;
}

static int make_tag(const ccs_xport_t *x, uint32_t step, uint32_t seq)
{
    uint64_t t = ((uint64_t)step << SEQ_BITS) |
                 (seq & ((1u << SEQ_BITS) - 1));
    if (x->tag_mask != 0)
        return (int)(t & x->tag_mask);
    return (int)(t % ((uint64_t)x->tag_ub + 1));
}

static ccs_status_t post(ccs_xport_t *x, bool is_send, uint32_t peer,
                         void *buf, size_t bytes, uint32_t step,
                         uint32_t seq, ccs_err_t *err)
{
    int tag = make_tag(x, step, seq);
    int pieces = (int)((bytes + MPI_PIECE - 1) / MPI_PIECE);
    ccs_status_t st = grow(x, pieces, err);

    if (st != CCS_OK)
        return st;
    if (x->ntick == x->tcap) {
        int cap = x->tcap ? 2 * x->tcap : 16;
        int *n = realloc(x->tstart, (size_t)cap * sizeof(*n));
        if (n == NULL)
            return ccs_err_set(err, CCS_ERR_NOMEM, "out of memory");
        x->tstart = n;
        x->tcap = cap;
    }
    x->tstart[x->ntick++] = x->nreq;
    for (size_t off = 0; off < bytes; off += MPI_PIECE) {
        int n = (int)(bytes - off < MPI_PIECE ? bytes - off : MPI_PIECE);
        int rc = is_send
                     ? MPI_Isend((char *)buf + off, n, MPI_BYTE, (int)peer,
                                 tag, x->comm, &x->reqs[x->nreq])
                     : MPI_Irecv((char *)buf + off, n, MPI_BYTE, (int)peer,
                                 tag, x->comm, &x->reqs[x->nreq]);
        if (rc != MPI_SUCCESS) {
            char what[96];
            snprintf(what, sizeof(what), "%s %zu bytes %s rank %u",
                     is_send ? "MPI_Isend of" : "MPI_Irecv of", bytes,
                     is_send ? "to" : "from", peer);
            return mpi_fail(err, rc, what);
        }
        x->what[x->nreq] = (mp_what_t){ step, peer, bytes, is_send };
        x->nreq++;
    }
    return CCS_OK;
}

static ccs_status_t mp_send(ccs_xport_t *x, uint32_t peer, const void *buf,
                            size_t bytes, uint32_t step, uint32_t seq,
                            ccs_err_t *err)
{
    return post(x, true, peer, (void *)(uintptr_t)buf, bytes, step, seq,
                err);
}

static ccs_status_t mp_recv(ccs_xport_t *x, uint32_t peer, void *buf,
                            size_t bytes, uint32_t step, uint32_t seq,
                            ccs_err_t *err)
{
    return post(x, false, peer, buf, bytes, step, seq, err);
}

/* Past the timeout: name the first unfinished transfer, then cancel the
 * receives and let go of the sends (the communicator is unusable now). */
static ccs_status_t timed_out(ccs_xport_t *x, int n, ccs_err_t *err)
{
    int first = -1;

    for (int i = 0; i < n; i++) {
        int flag = 1;
        if (x->reqs[i] == MPI_REQUEST_NULL)
            continue;
        MPI_Test(&x->reqs[i], &flag, MPI_STATUS_IGNORE);
        if (!flag && first < 0)
            first = i;
    }
    for (int i = 0; i < n; i++) {
        if (x->reqs[i] == MPI_REQUEST_NULL)
            continue;
        if (!x->what[i].is_send)
            MPI_Cancel(&x->reqs[i]);
        MPI_Request_free(&x->reqs[i]);
    }
    if (first < 0)
        first = 0;
    /* Steps above the plan's range are the executor's call check. */
    return ccs_err_set(err, CCS_ERR_TIMEOUT,
                       "%s of %zu bytes %s rank %u (%s %u) not finished "
                       "after %g s (CCS_TIMEOUT_S): the rank is gone, late, "
                       "or made a different call",
                       x->what[first].is_send ? "send" : "receive",
                       x->what[first].bytes,
                       x->what[first].is_send ? "to" : "from",
                       x->what[first].peer,
                       x->what[first].step < CCS_MAX_STEPS ? "step"
                                                           : "check round",
                       x->what[first].step < CCS_MAX_STEPS
                           ? x->what[first].step
                           : x->what[first].step & 0xffu,
                       x->timeout_s);
}

static ccs_status_t mp_wait(ccs_xport_t *x, ccs_err_t *err)
{
    int rc, n = x->nreq, flag = 0;
    double t0 = -1;

    x->tbase += (uint64_t)x->ntick;
    x->ntick = 0;
    if (n == 0)
        return CCS_OK;
    x->nreq = 0;
    if (x->timeout_s <= 0) {
        rc = MPI_Waitall(n, x->reqs, MPI_STATUSES_IGNORE);
        if (rc != MPI_SUCCESS)
            return mpi_fail(err, rc, "MPI_Waitall");
        return CCS_OK;
    }
    for (unsigned i = 0;; i++) {
        rc = MPI_Testall(n, x->reqs, &flag, MPI_STATUSES_IGNORE);
        if (rc != MPI_SUCCESS)
            return mpi_fail(err, rc, "MPI_Testall");
        if (flag)
            return CCS_OK;
        if ((i & 63) == 63) {
            double now = ccs_now_s();
            if (t0 < 0)
                t0 = now;
            else if (now - t0 >= x->timeout_s)
                return timed_out(x, n, err);
        }
    }
}

static uint64_t mp_ticket(ccs_xport_t *x)
{
    return x->tbase + (uint64_t)x->ntick;
}

/* MPI_Testall over ticket t's pieces (completed ones are
 * MPI_REQUEST_NULL, which Testall takes as done). */
static ccs_status_t test1(ccs_xport_t *x, uint64_t t, bool *done,
                          ccs_err_t *err)
{
    uint64_t k = t - x->tbase;
    int a, b, rc, flag = 0;

    if (t < x->tbase || k >= (uint64_t)x->ntick)
        return ccs_err_set(err, CCS_ERR_INTERNAL, "ticket %llu is not "
                           "pending", (unsigned long long)t);
    a = x->tstart[k];
    b = k + 1 < (uint64_t)x->ntick ? x->tstart[k + 1] : x->nreq;
    rc = MPI_Testall(b - a, x->reqs + a, &flag, MPI_STATUSES_IGNORE);
    if (rc != MPI_SUCCESS)
        return mpi_fail(err, rc, "MPI_Testall");
    *done = flag != 0;
    return CCS_OK;
}

static ccs_status_t mp_test(ccs_xport_t *x, uint64_t t, bool *done,
                            ccs_err_t *err)
{
    return test1(x, t, done, err);
}

/* Poll the tickets (each poll drives MPI's progress) until one is done;
 * under a timeout the clock is read every 64 rounds, as in wait. */
static ccs_status_t mp_wait_any(ccs_xport_t *x, const uint64_t *t,
                                uint32_t n, ccs_err_t *err)
{
    double t0 = -1;

    for (unsigned i = 0; n > 0; i++) {
        for (uint32_t j = 0; j < n; j++) {
            bool done = false;
            ccs_status_t st = test1(x, t[j], &done, err);
            if (st != CCS_OK || done)
                return st;
        }
        if (x->timeout_s > 0 && (i & 63) == 63) {
            double now = ccs_now_s();
            if (t0 < 0) {
                t0 = now;
            } else if (now - t0 >= x->timeout_s) {
                int m = x->nreq;
                x->nreq = 0;
                x->tbase += (uint64_t)x->ntick;
                x->ntick = 0;
                return timed_out(x, m, err);
            }
        }
    }
    return CCS_OK;
}

static void mp_set_timeout(ccs_xport_t *x, double seconds)
{
    x->timeout_s = seconds > 0 ? seconds : 0;
}

static void mp_drain(ccs_xport_t *x)
{
    ccs_err_t err;
    int fin = 0;

    ccs_err_clear(&err);
    MPI_Finalized(&fin);
    if (fin)
        x->nreq = 0;          /* MPI is gone, and the requests with it */
    else
        (void)mp_wait(x, &err);
}

static void mp_destroy(ccs_xport_t *x)
{
    int fin = 0;

    if (x == NULL)
        return;
    MPI_Finalized(&fin);
    if (!fin && x->comm != MPI_COMM_NULL)
        MPI_Comm_free(&x->comm);
    free(x->reqs);
    free(x->what);
    free(x->tstart);
    free(x);
}

static ccs_status_t mp_reduce(ccs_xport_t *x, void *dst, const void *a,
                              const void *b, size_t n, ccs_dtype_t dtype,
                              ccs_redop_t op, ccs_err_t *err)
{
    (void)err;
    ccs_reduce_with(x->kern, dst, a, b, n, dtype, op);
    return CCS_OK;
}

static const ccs_xport_ops_t mpi_ops = {
    .name = "mpi",
    .device_mem = false,
    .mem_alloc = ccs_cpu_mem_alloc,
    .mem_free = ccs_cpu_mem_free,
    .copy = ccs_cpu_copy,
    .memset0 = ccs_cpu_memset0,
    .reduce = mp_reduce,
    .div = ccs_cpu_div,
    .run_begin = ccs_cpu_run_begin,
    .run_end = ccs_cpu_nop,
    .group_begin = ccs_cpu_group_begin,
    .recv = mp_recv,
    .send = mp_send,
    .group_end = ccs_cpu_nop,
    .wait = mp_wait,
    .ticket = mp_ticket,
    .test = mp_test,
    .wait_any = mp_wait_any,
    .drain = mp_drain,
    .set_timeout = mp_set_timeout,
    .abort = NULL,
    .destroy = mp_destroy,
};

ccs_status_t ccs_comm_init_mpi(const void *mpi_comm, ccs_comm_t **comm)
{
    ccs_xport_t *x = NULL;   /* handed to the comm */
    int inited = 0, fin = 0, rank = 0, size = 0, flag = 0, rc;
    int *ub = NULL;
    ccs_err_t e;
    ccs_status_t st;

    ccs_err_clear(&e);
    if (mpi_comm == NULL || comm == NULL)
        return CCS_ERR_INVALID;
    MPI_Initialized(&inited);
    MPI_Finalized(&fin);
    if (!inited || fin) {
        CCS_LOG(ccs_log_level_env(), CCS_LOG_WARN, "INIT", -1,
                "ccs_comm_init_mpi: MPI is %s",
                fin ? "finalized" : "not initialized");
        return CCS_ERR_MPI;
    }
    x = calloc(1, sizeof(*x));
    if (x == NULL)
        return CCS_ERR_NOMEM;
    x->comm = MPI_COMM_NULL;
    x->timeout_s = ccs_timeout_env_s();
    x->kern = ccs_reduce_kernels(ccs_reduce_isa_best());
    rc = MPI_Comm_dup(*(const MPI_Comm *)mpi_comm, &x->comm);
    if (rc != MPI_SUCCESS) {
        st = mpi_fail(&e, rc, "MPI_Comm_dup");
        goto fail;
    }
    MPI_Comm_set_errhandler(x->comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(x->comm, &rank);
    MPI_Comm_size(x->comm, &size);
    x->tag_ub = 32767;        /* the standard's guaranteed minimum */
    if (MPI_Comm_get_attr(x->comm, MPI_TAG_UB, &ub, &flag) == MPI_SUCCESS &&
        flag && ub != NULL && *ub > 0)
        x->tag_ub = *ub;
    if ((((uint64_t)x->tag_ub + 1) & (uint64_t)x->tag_ub) == 0)
        x->tag_mask = (uint64_t)x->tag_ub;
    return ccs_comm_create(&mpi_ops, x, rank, size, comm, &e);
fail:
    CCS_LOG(ccs_log_level_env(), CCS_LOG_WARN, "INIT", -1, "%s",
            ccs_err_msg(&e, st));
    mp_destroy(x);
    return st;
}

ccs_status_t ccs_comm_init_mpi_world(ccs_comm_t **comm)
{
    MPI_Comm world = MPI_COMM_WORLD;

    return ccs_comm_init_mpi(&world, comm);
}
