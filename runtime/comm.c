/*
 * comm.c - communicators: the transport-independent half (creation around
 * a transport state, the arena, the last error, queries) and the hooks
 * shared by the CPU transports.
 */
#include <stdlib.h>
#include <string.h>

#include "ccs_int.h"
#include "reduce.h"

ccs_status_t ccs_comm_create(const ccs_xport_ops_t *ops, ccs_xport_t *x,
                             int rank, int nranks, ccs_comm_t **out,
                             ccs_err_t *err)
{
    /* Owned by the caller through *out; freed by ccs_comm_destroy. */
    ccs_comm_t *c = calloc(1, sizeof(*c));

    if (c == NULL) {
        ops->destroy(x);
        return ccs_err_set(err, CCS_ERR_NOMEM, "out of memory");
    }
    c->xops = ops;
    c->x = x;
    c->rank = rank;
    c->nranks = nranks;
    c->log_level = ccs_log_level_env();
    {
        const char *v = getenv("CCS_CHECK_CALLS");
        char *end;
        c->agree_off = v != NULL && strcmp(v, "0") == 0;
        /* Must be the same on every rank (all take the exchange or none):
         * set it job-wide. */
        c->small_bytes = CCS_SMALL_BYTES_DEFAULT;
        c->small_total = CCS_SMALL_TOTAL_DEFAULT;
        v = getenv("CCS_SMALL_BYTES");
        if (v != NULL && *v != '\0') {
            unsigned long long b = strtoull(v, &end, 10);
            if (*end == '\0' && b <= CCS_SMALL_BYTES_MAX) {
                c->small_bytes = (size_t)b;
                c->small_total = SIZE_MAX;
            }
        }
    }
    {
        /* A value we cannot read keeps the step order. */
        const char *v = getenv("CCS_ISSUE_WINDOW");
        char *end;
        unsigned long w = v != NULL ? strtoul(v, &end, 10) : 0;
        c->issue_window = 1;
        if (v != NULL && *v != '\0' && *end == '\0' && w >= 1 &&
            w <= CCS_ISSUE_WINDOW_MAX)
            c->issue_window = (uint32_t)w;
    }
    CCS_LOG(c->log_level, CCS_LOG_INFO, "INIT", rank,
            "communicator ready: %s transport, rank %d of %d", ops->name,
            rank, nranks);
    *out = c;
    return CCS_OK;
}

void ccs_comm_destroy(ccs_comm_t *comm)
{
    if (comm == NULL)
        return;
    ccs_auto_drain(comm);
    if (comm->arena != NULL)
        comm->xops->mem_free(comm->x, comm->arena);
    comm->xops->destroy(comm->x);
    free(comm->ip_force);
    free(comm->flow);
    free(comm->flow_wait);
    free(comm->flow_pair);
    ccs_auto_free(comm->autos);
    free(comm);
}

ccs_status_t ccs_comm_arena(ccs_comm_t *comm, size_t bytes, void **out,
                            ccs_err_t *err)
{
    void *p = NULL;
    ccs_status_t st;

    if (bytes <= comm->arena_bytes) {
        *out = comm->arena;
        return CCS_OK;
    }
    /* Grow by half again so that slowly growing counts do not realloc on
     * every call. */
    if (bytes < SIZE_MAX / 3 * 2 && bytes < comm->arena_bytes / 2 * 3)
        bytes = comm->arena_bytes / 2 * 3;
    st = comm->xops->mem_alloc(comm->x, bytes, &p, err);
    if (st != CCS_OK)
        return st;
    comm->xops->mem_free(comm->x, comm->arena);
    comm->arena = p;           /* owned by comm */
    comm->arena_bytes = bytes;
    *out = p;
    return CCS_OK;
}

double ccs_timeout_env_s(void)
{
    const char *v = getenv("CCS_TIMEOUT_S");
    char *end;
    double t;

    if (v == NULL || *v == '\0')
        return CCS_TIMEOUT_DEFAULT_S;
    t = strtod(v, &end);
    /* A value we cannot read keeps the default: better a bounded wait
     * than an unbounded one from a typo. */
    if (end == v || *end != '\0' || !(t >= 0) || t > 1e9)
        return CCS_TIMEOUT_DEFAULT_S;
    return t;
}

ccs_status_t ccs_comm_set_timeout(ccs_comm_t *comm, double seconds)
{
    if (comm == NULL || !(seconds >= 0))
        return CCS_ERR_INVALID;
    if (comm->xops->set_timeout == NULL)
        return CCS_ERR_UNSUPPORTED;
    comm->xops->set_timeout(comm->x, seconds > 1e9 ? 1e9 : seconds);
    return CCS_OK;
}

ccs_status_t ccs_comm_set_small_bytes(ccs_comm_t *comm, size_t bytes)
{
    if (comm == NULL || bytes > CCS_SMALL_BYTES_MAX)
        return CCS_ERR_INVALID;
    comm->small_bytes = bytes;
    comm->small_total = SIZE_MAX;
    return CCS_OK;
}

ccs_status_t ccs_comm_set_issue_window(ccs_comm_t *comm, unsigned window)
{
    if (comm == NULL || window < 1 || window > CCS_ISSUE_WINDOW_MAX)
        return CCS_ERR_INVALID;
    if (window > 1 && comm->xops->wait_any == NULL)
        return CCS_ERR_UNSUPPORTED;
    comm->issue_window = window;
    return CCS_OK;
}

unsigned ccs_comm_issue_window(const ccs_comm_t *comm)
{
    return comm ? comm->issue_window : 0;
}

int ccs_comm_rank(const ccs_comm_t *comm)
{
    return comm ? comm->rank : -1;
}

int ccs_comm_size(const ccs_comm_t *comm)
{
    return comm ? comm->nranks : -1;
}

const char *ccs_comm_transport(const ccs_comm_t *comm)
{
    return comm ? comm->xops->name : "?";
}

const char *ccs_comm_last_error(const ccs_comm_t *comm)
{
    return comm ? comm->err.msg : "NULL communicator";
}

/* ---- CPU hooks ---- */

ccs_status_t ccs_cpu_mem_alloc(ccs_xport_t *x, size_t bytes, void **out,
                               ccs_err_t *err)
{
    void *p = NULL;

    (void)x;
    if (posix_memalign(&p, 64, bytes ? bytes : 64) != 0)
        return ccs_err_set(err, CCS_ERR_NOMEM,
                           "out of memory allocating %zu bytes of scratch",
                           bytes);
    *out = p;
    return CCS_OK;
}

void ccs_cpu_mem_free(ccs_xport_t *x, void *p)
{
    (void)x;
    free(p);
}

ccs_status_t ccs_cpu_copy(ccs_xport_t *x, void *dst, const void *src,
                          size_t bytes, ccs_err_t *err)
{
    (void)x;
    (void)err;
    if (dst != src)
        memcpy(dst, src, bytes);
    return CCS_OK;
}

ccs_status_t ccs_cpu_memset0(ccs_xport_t *x, void *dst, size_t bytes,
                             ccs_err_t *err)
{
    (void)x;
    (void)err;
    memset(dst, 0, bytes);
    return CCS_OK;
}

ccs_status_t ccs_cpu_div(ccs_xport_t *x, void *buf, size_t n,
                         ccs_dtype_t dtype, uint32_t divisor, ccs_err_t *err)
{
    (void)x;
    (void)err;
    ccs_reduce_div(buf, n, dtype, divisor);
    return CCS_OK;
}

ccs_status_t ccs_cpu_run_begin(ccs_xport_t *x, void *stream, ccs_err_t *err)
{
    (void)x;
    if (stream != NULL)
        return ccs_err_set(err, CCS_ERR_INVALID,
                           "CPU transport given a stream");
    return CCS_OK;
}

ccs_status_t ccs_cpu_nop(ccs_xport_t *x, ccs_err_t *err)
{
    (void)x;
    (void)err;
    return CCS_OK;
}

ccs_status_t ccs_cpu_group_begin(ccs_xport_t *x, uint32_t step,
                                 ccs_err_t *err)
{
    (void)x;
    (void)step;
    (void)err;
    return CCS_OK;
}

/* Without MPI (MPI=0, or no mpi.h) the entry point exists, so programs
 * link the same way everywhere, and says it cannot work. */
#ifndef CCS_HAVE_MPI
ccs_status_t ccs_comm_init_mpi(const void *mpi_comm, ccs_comm_t **comm)
{
    (void)mpi_comm;
    (void)comm;
    return CCS_ERR_UNSUPPORTED;
}
#endif

/* Without CUDA the GPU entry points exist and say why they cannot work.
 * With CUDA they are defined by xport_cuda.c and xport_nccl.c. */
#ifndef CCS_HAVE_CUDA
ccs_status_t ccs_comm_init_cuda(int nranks, const int *devices,
                                ccs_comm_t **comms)
{
    (void)nranks;
    (void)devices;
    (void)comms;
    return CCS_ERR_UNSUPPORTED;
}

ccs_status_t ccs_comm_init_nccl(void *nccl_comm, ccs_comm_t **comm)
{
    (void)nccl_comm;
    (void)comm;
    return CCS_ERR_UNSUPPORTED;
}
#endif
