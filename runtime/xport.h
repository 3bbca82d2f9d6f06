/*
 * xport.h - the transport interface: what the shared executor (exec.c)
 * needs from a transport.  Internal to the runtime.
 *
 * A transport is a table of functions (ccs_xport_ops_t) plus a private
 * state (struct ccs_xport, defined by each transport file), one per
 * communicator.  The executor never touches data memory itself: every
 * byte it moves, zeroes or reduces goes through these hooks, so a GPU
 * transport keeps all of it on the device and on the caller's stream.
 *
 * Call sequence for one ccs_run on one rank:
 *
 *   run_begin(stream)
 *   [copy / memset0: staging of input, padding of tail chunks]
 *   for each step in which this rank has ops:
 *       group_begin(step)
 *       recv(...) for each RECV / RECV_REDUCE, in op order
 *       send(...) for each SEND, in op order
 *       group_end()            NCCL: ncclGroupEnd; MPI/threads: nothing
 *       copy / reduce          local COPY and REDUCE_LOCAL ops
 *       wait()                 every recv/send of the step is complete
 *       copy / reduce          unpack, RECV_REDUCE (dst = src (+) staging)
 *
 * A transport that can read the peer's bytes where they lie (threads:
 * the peer's buffer is in our address space) offers recv_reduce: the
 * executor then posts RECV_REDUCE as one recv_reduce instead of a recv
 * into staging plus a reduce after wait, and the reduction happens inside
 * wait, straight from the peer's buffer into the destination.
 *   copy (tails back), div (avg)
 *   run_end()
 *
 * With an issue window above 1 (exec.c, run_flow; transports with ticket,
 * test and wait_any) the steps instead overlap: each op is posted when
 * its hazards clear, with a ticket taken just before, completed through
 * test and wait_any, and the run ends its steps with one wait.
 *
 * Completion semantics ("complete" in wait):
 *   CPU transports (threads, mpi): host-synchronous.  When wait returns,
 *   received bytes are in place and send buffers may be reused.
 *   Stream transports (cuda, nccl): wait may only *enqueue*; what it must
 *   guarantee is that every hook called afterwards on the run's stream
 *   observes the received data, and that later writes to send buffers are
 *   ordered after the sends.  run_end need not synchronise: ccs_run is
 *   then asynchronous like an NCCL call.  Scratch/staging memory is reused
 *   by the next run on the same communicator; stream order makes that
 *   safe when the caller uses one stream per communicator (documented).
 *
 * Matching: between one ordered pair of ranks, sends and receives match in
 * posting order (the executor posts in (step, op) order on both sides and
 * the plan guarantees the k-th send matches the k-th receive).  `step` and
 * `seq` (the op's index among this rank's ops to/from that peer in the
 * step) are given so a transport can tag messages (MPI) or assert.  Sizes
 * of matching send/recv are always equal and > 0.
 *
 * Memory: mem_alloc returns memory of the kind the user's buffers are
 * (device memory for GPU transports), at least 64-byte aligned; the
 * executor keeps one grow-only arena per communicator for scratch chunks,
 * receive staging, tail padding and input staging.
 *
 * Requests may also stay posted across runs: straggler auto (auto.c)
 * posts a small exchange at the end of a call without waiting, and the
 * next run's first wait completes it with that run's own transfers.  A
 * CPU transport's wait therefore completes every request posted since
 * the previous wait, whatever step it belongs to.
 *
 * Errors: every hook returns a status and writes a message into `err`
 * naming what failed (peer, step, bytes, the foreign error string).
 * `abort` is called when this rank fails in the middle of a run: the
 * transport should release peers blocked on this rank if it can (threads
 * does; MPI and NCCL cannot, as in NCCL).  After a failed run the
 * communicator must be destroyed.
 *
 * Timeouts: a CPU transport's wait gives up after the communicator's
 * timeout (set_timeout; default CCS_TIMEOUT_S, else CCS_TIMEOUT_DEFAULT_S)
 * with CCS_ERR_TIMEOUT and a message naming the step, the peer and the
 * transfer it was waiting for.
 */
#ifndef CCS_XPORT_H
#define CCS_XPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ccs.h"
#include "err.h"

typedef struct ccs_xport ccs_xport_t; /* private to each transport file */

typedef struct ccs_xport_ops {
    const char *name;                 /* "threads", "mpi", ... */
    bool device_mem;                  /* user buffers are device memory */

    /* -- memory -- */
    ccs_status_t (*mem_alloc)(ccs_xport_t *x, size_t bytes, void **out,
                              ccs_err_t *err);
    void (*mem_free)(ccs_xport_t *x, void *p);      /* NULL is a no-op */
    /* dst and src do not overlap, or are equal (then nothing to do). */
    ccs_status_t (*copy)(ccs_xport_t *x, void *dst, const void *src,
                         size_t bytes, ccs_err_t *err);
    ccs_status_t (*memset0)(ccs_xport_t *x, void *dst, size_t bytes,
                            ccs_err_t *err);
    /* dst[i] = a[i] (op) b[i]; dst may equal a or b (reduce.h rules). */
    ccs_status_t (*reduce)(ccs_xport_t *x, void *dst, const void *a,
                           const void *b, size_t n, ccs_dtype_t dtype,
                           ccs_redop_t op, ccs_err_t *err);
    /* buf[i] /= divisor (the end of CCS_AVG; reduce.h rules). */
    ccs_status_t (*div)(ccs_xport_t *x, void *buf, size_t n,
                        ccs_dtype_t dtype, uint32_t divisor,
                        ccs_err_t *err);

    /* -- one run -- */
    /* stream: the caller's cudaStream_t for GPU transports, else NULL
     * (a CPU transport rejects a non-NULL stream). */
    ccs_status_t (*run_begin)(ccs_xport_t *x, void *stream, ccs_err_t *err);
    ccs_status_t (*run_end)(ccs_xport_t *x, ccs_err_t *err);

    /* -- one step -- */
    ccs_status_t (*group_begin)(ccs_xport_t *x, uint32_t step,
                                ccs_err_t *err);
    ccs_status_t (*recv)(ccs_xport_t *x, uint32_t peer, void *buf,
                         size_t bytes, uint32_t step, uint32_t seq,
                         ccs_err_t *err);
    ccs_status_t (*send)(ccs_xport_t *x, uint32_t peer, const void *buf,
                         size_t bytes, uint32_t step, uint32_t seq,
                         ccs_err_t *err);
    ccs_status_t (*group_end)(ccs_xport_t *x, ccs_err_t *err);
    ccs_status_t (*wait)(ccs_xport_t *x, ccs_err_t *err);

    /* Optional (NULL: the executor stages RECV_REDUCE).  Receive n
     * elements from peer and complete, by wait(), dst[i] = a[i] (op)
     * received[i]; dst may equal a (reduce.h rules).  Matches the peer's
     * send like recv does (same order, same bytes). */
    ccs_status_t (*recv_reduce)(ccs_xport_t *x, uint32_t peer, void *dst,
                                const void *a, size_t n, ccs_dtype_t dtype,
                                ccs_redop_t op, uint32_t step, uint32_t seq,
                                ccs_err_t *err);
    /* Optional: complete whatever is still posted (straggler auto leaves
     * its exchange in flight between calls; auto.c) before the
     * communicator frees the buffers, bounded by the timeout; a transport
     * that cannot always wait (MPI after MPI_Finalize) says so here.
     * NULL: wait is used. */
    void (*drain)(ccs_xport_t *x);
    /* Optional: completion per request, which an issue window above 1
     * needs (exec.c, hazard-ordered issue): a rank that posts later steps'
     * transfers ahead must be able to wait for some of them, because
     * waiting for everything it posted can deadlock where the step order
     * does not (docs/simulator.md, "What an executor would need").  Every
     * recv, send and recv_reduce takes the next ticket, counting up by
     * one per post; ticket() is the one the next post takes.  test()
     * makes progress without blocking and sets *done when request t is
     * complete (host-synchronous, as wait: the data are in place, the
     * buffer may be reused); a size mismatch is an error, as in wait.
     * wait_any() blocks until one of the n requests t[] is complete (at
     * once when one already is), bounded by the timeout; then test says
     * which.  wait() keeps its meaning (completes everything posted)
     * and is still called at the end of a run that used tickets.  A
     * stream transport (cuda) reports completion once the device has
     * finished the transfer, and orders the run's stream after it.  All
     * three NULL (nccl): the window stays 1. */
    uint64_t (*ticket)(ccs_xport_t *x);
    ccs_status_t (*test)(ccs_xport_t *x, uint64_t t, bool *done,
                         ccs_err_t *err);
    ccs_status_t (*wait_any)(ccs_xport_t *x, const uint64_t *t, uint32_t n,
                             ccs_err_t *err);
    /* Optional: bound every wait to `seconds` (0: wait forever). */
    void (*set_timeout)(ccs_xport_t *x, double seconds);

    void (*abort)(ccs_xport_t *x);    /* may be NULL */
    void (*destroy)(ccs_xport_t *x);  /* frees x; NULL is a no-op */
} ccs_xport_ops_t;

/* Default bound of a CPU transport's wait, in seconds, when neither
 * CCS_TIMEOUT_S nor ccs_comm_set_timeout says otherwise: long enough for
 * any step of a healthy job (and a straggler's delay), short enough that
 * a job with a dead or mismatched rank ends instead of hanging. */
#define CCS_TIMEOUT_DEFAULT_S 300.0

/* Allreduce inputs up to this many bytes per rank take the executor's
 * one-step exchange instead of the plan's steps on host-memory transports
 * (exec.c): below it every step of a plan costs a latency and moves
 * almost nothing, so one exchange with every peer beats any multi-step
 * plan.  By default the exchange is also capped at CCS_SMALL_TOTAL_DEFAULT
 * bytes sent per rank ((R - 1) * input), so that a large world, where R - 1
 * messages cost more than a plan's log R steps, keeps its plan.
 * CCS_SMALL_BYTES (up to 1 MiB, no cap) or ccs_comm_set_small_bytes set
 * the threshold; 0 replays every plan as written. */
#define CCS_SMALL_BYTES_DEFAULT 4096
#define CCS_SMALL_TOTAL_DEFAULT (64 * 1024)
#define CCS_SMALL_BYTES_MAX ((size_t)1 << 20)

/* The timeout a new communicator starts with: CCS_TIMEOUT_S (seconds,
 * may be fractional, 0 disables) or the default (comm.c). */
double ccs_timeout_env_s(void);

/* Hooks shared by the CPU transports (host memory, ccs_reduce_cpu),
 * defined in comm.c. */
ccs_status_t ccs_cpu_mem_alloc(ccs_xport_t *x, size_t bytes, void **out,
                               ccs_err_t *err);
void ccs_cpu_mem_free(ccs_xport_t *x, void *p);
ccs_status_t ccs_cpu_copy(ccs_xport_t *x, void *dst, const void *src,
                          size_t bytes, ccs_err_t *err);
ccs_status_t ccs_cpu_memset0(ccs_xport_t *x, void *dst, size_t bytes,
                             ccs_err_t *err);
ccs_status_t ccs_cpu_div(ccs_xport_t *x, void *buf, size_t n,
                         ccs_dtype_t dtype, uint32_t divisor,
                         ccs_err_t *err);
ccs_status_t ccs_cpu_run_begin(ccs_xport_t *x, void *stream,
                               ccs_err_t *err);
ccs_status_t ccs_cpu_nop(ccs_xport_t *x, ccs_err_t *err);
ccs_status_t ccs_cpu_group_begin(ccs_xport_t *x, uint32_t step,
                                 ccs_err_t *err);

/* Wrap a transport state into a new communicator (comm.c).  On success
 * the communicator owns x; on failure x is destroyed through ops. */
ccs_status_t ccs_comm_create(const ccs_xport_ops_t *ops, ccs_xport_t *x,
                             int rank, int nranks, struct ccs_comm **out,
                             ccs_err_t *err);

#endif /* CCS_XPORT_H */
