/*
 * fake_cuda.h - a fake CUDA runtime for testing the cuda transport on a
 * machine without a GPU.  It is NOT a GPU and does not model one; it
 * models the ordering rules of streams and events, which is what the
 * transport's host logic has to get right.
 *
 * tests/unit/fake_cuda.c defines the cuda* functions the cuda transport
 * and the tests call, and the kernels' entry points (ccs_reduce_cuda,
 * ccs_div_cuda, ccs_cuda_status).  A program linked with fake_cuda.o
 * before libccs.a gets those definitions instead of libcudart's and
 * reduce_cuda.cu's: the linker takes a symbol from an object it was given
 * before looking for it in a library.  Linked that way:
 *
 *   - "device" memory is host memory (cudaMalloc is posix_memalign), and
 *     there are FAKE_CUDA_NDEV devices, every pair of them peers;
 *   - streams are queues of deferred operations that run LATE and in a
 *     RANDOM interleaving: an operation runs only when some caller
 *     synchronises, when an event is queried (a device progresses while
 *     the host polls), or at random when another operation is enqueued;
 *     a stream whose head waits on an event record not yet reached is
 *     skipped, and among runnable streams one is picked at random;
 *   - each cudaEventRecord is its own record, as in CUDA: a wait or a
 *     query concerns the event's latest record at the time of the call;
 *   - the kernels are reduce.c's CPU code, deferred on the stream like a
 *     launch.
 *
 * So a missing cudaStreamWaitEvent, a copy issued on the wrong stream or
 * an event recorded too early shows up as wrong data, and a wait cycle
 * between streams as a deadlock (counted, and the synchronising call or
 * query fails).  What it cannot show: real device faults, memory that a
 * device cannot access, kernel code or speed, real concurrency between
 * copies, NCCL.  The real thing is scripts/gpu-check.sh.
 *
 * Only built in a CUDA build (the Makefile compiles fake_cuda.c with the
 * CUDA headers, which give it the types it fakes).  Its state is
 * process-global, like the real runtime's, and thread-safe.
 */
#ifndef CCS_FAKE_CUDA_H
#define CCS_FAKE_CUDA_H

#include <stddef.h>

/* cudaGetDeviceCount's answer. */
#define FAKE_CUDA_NDEV 2

/* What the fake has seen since the program started. */
typedef struct fake_cuda_stats {
    size_t ops_run;        /* deferred operations executed */
    size_t max_depth;      /* deepest stream queue seen */
    size_t queries;        /* cudaEventQuery calls */
    int deadlocks;         /* times no queued stream could run */
    int peer_copies;       /* cudaMemcpyPeerAsync calls */
    int peer_enables;      /* cudaDeviceEnablePeerAccess calls */
} fake_cuda_stats_t;

/* A consistent snapshot of the counters (taken under the fake's lock). */
void fake_cuda_stats(fake_cuda_stats_t *out);

#endif /* CCS_FAKE_CUDA_H */
