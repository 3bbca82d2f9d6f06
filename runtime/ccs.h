/*
 * ccs.h - the one public header of the ccsynth runtime library.
 *
 * The runtime loads schedule files (.ccs) written by the ccsynth synthesizer
 * and replays them on a transport (threads, MPI, CUDA, NCCL).  Every fallible
 * function returns a ccs_status_t (CCS_OK == 0, errors negative) and writes
 * its outputs through trailing pointers only on success.  The library never
 * aborts and never prints unless CCS_DEBUG asks for it.
 */
#ifndef CCS_H
#define CCS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CCS_VERSION_MAJOR 0
#define CCS_VERSION_MINOR 1
#define CCS_VERSION_PATCH 0
#define CCS_VERSION_CODE \
    (CCS_VERSION_MAJOR * 10000 + CCS_VERSION_MINOR * 100 + CCS_VERSION_PATCH)

#if defined(__GNUC__)
#define CCS_API __attribute__((visibility("default")))
#else
#define CCS_API
#endif

/* One list generates the enum, the names and the messages (libuv style). */
#define CCS_STATUS_LIST(X)                                                   \
    X(OK,            0, "success")                                           \
    X(ERR_INVALID,  -1, "invalid argument")                                  \
    X(ERR_NOMEM,    -2, "out of memory")                                     \
    X(ERR_IO,       -3, "I/O error")                                         \
    X(ERR_FORMAT,   -4, "malformed schedule file")                           \
    X(ERR_VERSION,  -5, "unsupported schedule format version")              \
    X(ERR_CHECKSUM, -6, "schedule file checksum mismatch")                   \
    X(ERR_UNSUPPORTED, -7, "operation not supported")                        \
    X(ERR_VERIFY,   -8, "schedule failed verification")                      \
    X(ERR_TOPOLOGY, -9, "invalid topology")                                  \
    X(ERR_PARSE,   -10, "parse error")                                       \
    X(ERR_MISMATCH, -11, "plan does not fit the communicator or call")       \
    X(ERR_TRANSPORT, -12, "transport failure")                               \
    X(ERR_NO_DEVICE, -13, "no GPU device available")                         \
    X(ERR_CUDA,    -14, "CUDA error")                                        \
    X(ERR_NCCL,    -15, "NCCL error")                                        \
    X(ERR_MPI,     -16, "MPI error")                                         \
    X(ERR_SOLVER,  -17, "solver failure")                                    \
    X(ERR_TIMEOUT, -18, "timed out")                                         \
    X(ERR_INTERNAL, -19, "internal error")

typedef enum {
#define CCS_X_ENUM(name, value, msg) CCS_##name = value,
    CCS_STATUS_LIST(CCS_X_ENUM)
#undef CCS_X_ENUM
} ccs_status_t;

/* Message for a status; never NULL, also for unknown values. */
CCS_API const char *ccs_strerror(ccs_status_t status);
/* Symbolic name ("CCS_ERR_FORMAT"); never NULL. */
CCS_API const char *ccs_status_name(ccs_status_t status);

/* Collectives.  Values are stored in .ccs files: never renumber. */
typedef enum {
    CCS_COLL_ALLREDUCE = 0,
    CCS_COLL_REDUCESCATTER = 1,
    CCS_COLL_ALLGATHER = 2,
    CCS_COLL_REDUCE = 3,
    CCS_COLL_BROADCAST = 4,
    CCS_COLL_ALLTOALL = 5,
    CCS_COLL_COUNT
} ccs_coll_t;

/* Element types (NCCL's set, minus fp8). */
typedef enum {
    CCS_FLOAT32 = 0,
    CCS_FLOAT64 = 1,
    CCS_FLOAT16 = 2,
    CCS_BFLOAT16 = 3,
    CCS_INT32 = 4,
    CCS_INT64 = 5,
    CCS_UINT8 = 6,
    CCS_DTYPE_COUNT
} ccs_dtype_t;

/* Reduction operators. */
typedef enum {
    CCS_SUM = 0,
    CCS_PROD = 1,
    CCS_MIN = 2,
    CCS_MAX = 3,
    CCS_AVG = 4,
    CCS_REDOP_COUNT
} ccs_redop_t;

/* Lower-case names ("allreduce", "bfloat16", "sum"); "?" when out of range. */
CCS_API const char *ccs_coll_str(ccs_coll_t coll);
CCS_API const char *ccs_dtype_str(ccs_dtype_t dtype);
CCS_API const char *ccs_redop_str(ccs_redop_t op);
/* Parse a name back; CCS_ERR_INVALID when unknown. */
CCS_API ccs_status_t ccs_coll_parse(const char *name, ccs_coll_t *out);
CCS_API ccs_status_t ccs_dtype_parse(const char *name, ccs_dtype_t *out);
CCS_API ccs_status_t ccs_redop_parse(const char *name, ccs_redop_t *out);
/* Size of one element in bytes; 0 when out of range. */
CCS_API size_t ccs_dtype_size(ccs_dtype_t dtype);

/* ---- Runtime API (plans, communicators, execution) follows below. ---- */

/*
 * Plans.  A plan is a validated schedule ready to run: load it once, run it
 * many times, on any communicator whose size matches.  A plan is immutable
 * after loading and may be shared by every rank (thread) of a process.
 */
typedef struct ccs_plan ccs_plan_t;

/* Load from a .ccs file / from the bytes of one.  *plan is owned by the
 * caller (ccs_plan_destroy).  Errors: CCS_ERR_IO, CCS_ERR_FORMAT,
 * CCS_ERR_VERSION, CCS_ERR_CHECKSUM, CCS_ERR_NOMEM; the _msg variants copy
 * the detailed message into msg (msglen bytes, may be NULL/0). */
CCS_API ccs_status_t ccs_plan_load_file(const char *path, ccs_plan_t **plan);
CCS_API ccs_status_t ccs_plan_load_mem(const void *buf, size_t len,
                                       ccs_plan_t **plan);
CCS_API ccs_status_t ccs_plan_load_file_msg(const char *path,
                                            ccs_plan_t **plan, char *msg,
                                            size_t msglen);
CCS_API ccs_status_t ccs_plan_load_mem_msg(const void *buf, size_t len,
                                           ccs_plan_t **plan, char *msg,
                                           size_t msglen);
CCS_API void ccs_plan_destroy(ccs_plan_t *plan); /* NULL is a no-op */

typedef struct ccs_plan_info {
    ccs_coll_t coll;
    uint32_t nranks;
    uint32_t nchunks;            /* C: chunks the user's buffer is cut in */
    uint32_t nscratch;           /* scratch chunks per rank */
    uint32_t nsteps;
    uint32_t nphases;
    int32_t root;                /* reduce/broadcast root, else -1 */
    int32_t straggler;           /* rank written as the straggler, or -1 */
    uint64_t topo_fingerprint;   /* topology the plan was made for, 0 none */
    char algo[32];               /* algorithm name */
} ccs_plan_info_t;

CCS_API ccs_status_t ccs_plan_get_info(const ccs_plan_t *plan,
                                       ccs_plan_info_t *info);
/* Shortcuts; -1 (or CCS_COLL_COUNT) for a NULL plan. */
CCS_API ccs_coll_t ccs_plan_coll(const ccs_plan_t *plan);
CCS_API int ccs_plan_nranks(const ccs_plan_t *plan);
CCS_API int ccs_plan_straggler(const ccs_plan_t *plan);
CCS_API int ccs_plan_root(const ccs_plan_t *plan);

/*
 * Communicators: one per rank, bound to a transport.  A communicator is
 * used by one thread at a time and holds the last error message.
 */
typedef struct ccs_comm ccs_comm_t;

/* Threads transport: creates `nranks` communicators sharing one in-process
 * world, comms[r] for rank r (like ncclCommInitAll); hand each to its own
 * thread.  Destroy each with ccs_comm_destroy (the world goes with the
 * last one). */
CCS_API ccs_status_t ccs_comm_init_threads(int nranks, ccs_comm_t **comms);

/* MPI transport: `mpi_comm` points to the caller's MPI_Comm (pass
 * `&comm`; a pointer works for every MPI ABI, whether MPI_Comm is a handle
 * pointer or an int, so this header needs no mpi.h).  Collective over that
 * communicator: it is duplicated, so the caller's traffic never mixes with
 * ours.  MPI must be initialised; destroy before MPI_Finalize. */
CCS_API ccs_status_t ccs_comm_init_mpi(const void *mpi_comm,
                                       ccs_comm_t **comm);

/* CUDA transport (one process, rank r on CUDA device devices[r]; NULL puts
 * every rank on device 0 as virtual ranks) and NCCL transport (`nccl_comm`
 * is the caller's ncclComm_t, passed as the pointer it is).  Both fail with
 * CCS_ERR_NO_DEVICE where no GPU is present and CCS_ERR_UNSUPPORTED when
 * the library was built without CUDA. */
CCS_API ccs_status_t ccs_comm_init_cuda(int nranks, const int *devices,
                                        ccs_comm_t **comms);
CCS_API ccs_status_t ccs_comm_init_nccl(void *nccl_comm, ccs_comm_t **comm);

CCS_API void ccs_comm_destroy(ccs_comm_t *comm); /* NULL is a no-op */
CCS_API int ccs_comm_rank(const ccs_comm_t *comm);  /* -1 for NULL */
CCS_API int ccs_comm_size(const ccs_comm_t *comm);  /* -1 for NULL */
/* "threads", "mpi", "cuda", "nccl"; "?" for NULL. */
CCS_API const char *ccs_comm_transport(const ccs_comm_t *comm);
/* Message of the last failed call on this communicator ("" when none);
 * valid until the next call on it. */
CCS_API const char *ccs_comm_last_error(const ccs_comm_t *comm);
/* Bound every wait of the CPU transports (threads, mpi) on this
 * communicator to `seconds` (fractions allowed; 0 waits forever).  A wait
 * that runs out fails the run with CCS_ERR_TIMEOUT, naming the step and
 * the peer it waited for; the communicator is then unusable.  Default:
 * CCS_TIMEOUT_S from the environment when the communicator was made, else
 * 300 s.  CCS_ERR_UNSUPPORTED on transports without host waits (cuda,
 * nccl: CCS_TIMEOUT_S there), CCS_ERR_INVALID for NULL or a negative or
 * NaN value. */
CCS_API ccs_status_t ccs_comm_set_timeout(ccs_comm_t *comm, double seconds);

/* Allreduces of at most `bytes` of input per rank skip the plan's steps on
 * host-memory transports (threads, mpi): every rank sends its input to
 * every other in one exchange and reduces the inputs in rank order, one
 * latency instead of one per step.  0 replays every plan step by step (its
 * phases, staging and statistics), as a test of the plan wants.  Default:
 * CCS_SMALL_BYTES from the environment when the communicator was made,
 * else 4096 bytes while (ranks - 1) * input is at most 64 KiB.  Every rank
 * must use the same value.  CCS_ERR_INVALID for NULL or more than 1 MiB. */
CCS_API ccs_status_t ccs_comm_set_small_bytes(ccs_comm_t *comm,
                                              size_t bytes);

/* Hazard-ordered issue on the CPU transports (docs/runtime.md, "Issue
 * window").  With a window W > 1 a rank issues its steps in order but up
 * to W of them ahead of its oldest unfinished one, and starts each op as
 * soon as every earlier op it conflicts with (read after write, write
 * after read, write after write on a chunk range of IN, OUT or SCRATCH)
 * has completed; a pair's transfers still match in step order.  The
 * results are bit for bit those of the step order (W = 1, the default),
 * which `ccsynth sim --mode dataflow --window W` models.  Ranks may use
 * different windows.  Default: CCS_ISSUE_WINDOW from the environment when
 * the communicator was made (1..CCS_ISSUE_WINDOW_MAX), else 1.
 * CCS_ERR_INVALID for NULL, 0 or more than CCS_ISSUE_WINDOW_MAX;
 * CCS_ERR_UNSUPPORTED for W > 1 on a transport without per-request
 * completion (threads and mpi have it; cuda and nccl run step by step). */
#define CCS_ISSUE_WINDOW_MAX 64u
CCS_API ccs_status_t ccs_comm_set_issue_window(ccs_comm_t *comm,
                                               unsigned window);
/* The communicator's window (0 for NULL). */
CCS_API unsigned ccs_comm_issue_window(const ccs_comm_t *comm);

/*
 * Running a plan.
 *
 * count is in elements, with NCCL's meaning per collective:
 *   allreduce, reduce, broadcast  count elements in sendbuff and recvbuff;
 *   reducescatter  recvcount: sendbuff holds nranks * count elements;
 *   allgather      sendcount: recvbuff holds nranks * count elements;
 *   alltoall       count per peer: both buffers hold nranks * count.
 * In place: sendbuff == recvbuff, and for reducescatter
 * recvbuff == sendbuff + rank * count, for allgather
 * sendbuff == recvbuff + rank * count (elements).  Other overlaps are
 * handled too, by copying the input first.  Buffers a rank does not use
 * (sendbuff off the broadcast root, recvbuff off the reduce root) may be
 * NULL.  `op` is ignored by the collectives that do not reduce.  `stream`
 * is a cudaStream_t for GPU transports and must be NULL for CPU ones.
 * Every rank must make the same call (same plan, count, dtype, op,
 * straggler).  CPU transports return when the rank's part is complete; GPU
 * transports when it is enqueued on `stream`.
 */
#define CCS_STATS_MAX_PHASES 8

typedef struct ccs_run_stats {
    double t_start_s;            /* CLOCK_MONOTONIC at entry, seconds */
    double t_end_s;              /* ... when this rank finished */
    double phase_end_s[CCS_STATS_MAX_PHASES]; /* this rank left phase p */
    uint32_t nphases;            /* phases of the plan (entries above) */
    uint32_t steps_run;          /* steps in which this rank had ops */
    uint64_t bytes_sent;         /* by this rank */
    uint32_t logical_rank;       /* rank of the plan this rank executed */
    int staged_input;            /* 1 when the input was copied first */
    int32_t straggler;           /* rank that ran the plan's straggler
                                    role (after relabelling), -1: the
                                    plan has none (or auto ran plain) */
    int auto_plain;              /* 1: straggler auto ran opts.plain */
} ccs_run_stats_t;

/* Straggler "auto" (ccs_run_opts_t.straggler, ccs_planset_opts_t
 * .straggler): the library measures how late each rank arrives, predicts
 * the next call's straggler and delay from the calls before, and runs the
 * plan relabelled for that rank, or opts.plain when no rank is late enough
 * to pay for the straggler-aware plan (its critical delay).  Every rank
 * takes the same decision by construction: it is a function of data the
 * ranks exchanged in earlier auto calls.  Costs 16 bytes to every other
 * rank per exchanged call, posted at the end of a call and completed with
 * the next call's own transfers (no extra round up to 16 ranks; above,
 * Bruck's allgather at the end of the call); while nobody is late only
 * every 2nd, 4th, 8th and then 16th call exchanges.  CPU transports
 * (threads, mpi); docs/runtime.md, "Straggler auto". */
#define CCS_STRAGGLER_AUTO (-2)

typedef struct ccs_run_opts {
    /* Straggler for this call, or -1 for the plan's own.  For a plan
     * written with straggler s0, straggler s swaps the roles of ranks s and
     * s0 (rank p runs the plan's rank pi(p), pi swapping s and s0), so one
     * plan serves any straggler.  Needs a plan with a straggler.
     * CCS_STRAGGLER_AUTO: the library picks per call (above). */
    int32_t straggler;
    /* Check that the plan is for this collective (CCS_COLL_COUNT: any). */
    ccs_coll_t expect_coll;
    ccs_run_stats_t *stats;      /* filled on success when not NULL */
    /* Straggler auto only: the plan to run when no rank is late enough
     * (same collective and rank count, any algorithm, e.g. a ring); NULL:
     * auto only chooses which rank the straggler-aware plan is relabelled
     * for.  Ignored otherwise. */
    const ccs_plan_t *plain;
} ccs_run_opts_t;

#define CCS_RUN_OPTS_INIT { -1, CCS_COLL_COUNT, NULL, NULL }

CCS_API ccs_status_t ccs_run(const ccs_plan_t *plan, ccs_comm_t *comm,
                             const void *sendbuff, void *recvbuff,
                             size_t count, ccs_dtype_t dtype, ccs_redop_t op,
                             void *stream);
CCS_API ccs_status_t ccs_run_ex(const ccs_plan_t *plan, ccs_comm_t *comm,
                                const void *sendbuff, void *recvbuff,
                                size_t count, ccs_dtype_t dtype,
                                ccs_redop_t op, void *stream,
                                const ccs_run_opts_t *opts);

/* NCCL-named entry points: ccs_run plus a check of the plan's collective
 * (CCS_ERR_MISMATCH when the plan is for another one). */
CCS_API ccs_status_t ccs_allreduce(const ccs_plan_t *plan, ccs_comm_t *comm,
                                   const void *sendbuff, void *recvbuff,
                                   size_t count, ccs_dtype_t dtype,
                                   ccs_redop_t op, void *stream);
CCS_API ccs_status_t ccs_reducescatter(const ccs_plan_t *plan,
                                       ccs_comm_t *comm,
                                       const void *sendbuff, void *recvbuff,
                                       size_t recvcount, ccs_dtype_t dtype,
                                       ccs_redop_t op, void *stream);
CCS_API ccs_status_t ccs_allgather(const ccs_plan_t *plan, ccs_comm_t *comm,
                                   const void *sendbuff, void *recvbuff,
                                   size_t sendcount, ccs_dtype_t dtype,
                                   void *stream);

/*
 * Plan sets: the plans `ccsynth tune --emit DIR` chose per buffer-size
 * range, picked per call by the call's byte count (docs/runtime.md, "Plan
 * sets").  Every plan of a set is for the same collective, rank count and
 * topology (checked at load).  Immutable after loading; share it like a
 * plan.
 */
typedef struct ccs_planset ccs_planset_t;

/* Load a plan set from `path`: a directory written by
 * `ccsynth tune --emit DIR` (its tuning.json names the plans and their
 * ranges), that tuning.json file itself, or a single .ccs file (a set of
 * one plan serving every size).  *set is owned by the caller
 * (ccs_planset_destroy).  Errors: CCS_ERR_IO (missing, unreadable, a
 * directory without tuning.json), CCS_ERR_PARSE (tuning.json not JSON),
 * CCS_ERR_FORMAT (fields missing or wrong, no plans, ranges not
 * contiguous), CCS_ERR_VERSION, CCS_ERR_MISMATCH (plans that disagree with
 * the index or each other on collective, rank count or topology), and a
 * plan file's own load errors; the message (msg, msglen bytes; may be
 * NULL/0) names the file and what is wrong. */
CCS_API ccs_status_t ccs_planset_load(const char *path, ccs_planset_t **set,
                                      char *msg, size_t msglen);
CCS_API void ccs_planset_destroy(ccs_planset_t *set); /* NULL: no-op */

typedef struct ccs_planset_info {
    ccs_coll_t coll;
    uint32_t nranks;
    uint32_t nplans;             /* distinct plans */
    uint32_t nranges;            /* size ranges (>= nplans) */
    uint64_t topo_fingerprint;   /* 0: not known */
    uint32_t elem_bytes;         /* element size the tuner assumed; 0 for
                                    a single .ccs */
} ccs_planset_info_t;

CCS_API ccs_status_t ccs_planset_get_info(const ccs_planset_t *set,
                                          ccs_planset_info_t *info);
/* Plan i (0 .. nplans-1), borrowed: valid while the set lives. */
CCS_API const ccs_plan_t *ccs_planset_plan(const ccs_planset_t *set,
                                           uint32_t i);
/* Range k: bytes min_bytes .. max_bytes (UINT64_MAX for the last) served
 * by plan *plan_index. */
CCS_API ccs_status_t ccs_planset_range(const ccs_planset_t *set, uint32_t k,
                                       uint64_t *min_bytes,
                                       uint64_t *max_bytes,
                                       uint32_t *plan_index);
/* The byte count a call is looked up by: the whole buffer, as nccl-tests
 * and `ccsynth tune` count it: count * size of dtype, times nranks for
 * reducescatter, allgather and alltoall (their count is per rank).
 * Saturates at SIZE_MAX; 0 for an unknown dtype. */
CCS_API size_t ccs_planset_call_bytes(const ccs_planset_t *set, size_t count,
                                      ccs_dtype_t dtype);
/* The plan index for a buffer of `bytes` (the lookup rule: the last range
 * whose min_bytes <= bytes). */
CCS_API ccs_status_t ccs_planset_pick(const ccs_planset_t *set, size_t bytes,
                                      uint32_t *plan_index);

typedef struct ccs_planset_opts {
    int32_t straggler;           /* as in ccs_run_opts_t; the picked plan
                                    must have a straggler role */
    ccs_coll_t expect_coll;      /* CCS_COLL_COUNT: any */
    uint64_t topo_fingerprint;   /* the job's topology (`ccsynth topo`
                                    prints it); 0: not checked.  Refused
                                    when the set has one and it differs */
    ccs_run_stats_t *stats;      /* filled on success when not NULL */
    uint32_t *plan_index;        /* when not NULL: the plan picked (also
                                    written when the run then fails) */
    const ccs_plan_t *plain;     /* as in ccs_run_opts_t (auto only) */
} ccs_planset_opts_t;

#define CCS_PLANSET_OPTS_INIT { -1, CCS_COLL_COUNT, 0, NULL, NULL, NULL }

/* ccs_run_ex with the plan the set holds for this call's byte count.
 * The set's rank count, collective and topology are checked first
 * (CCS_ERR_MISMATCH), then everything ccs_run checks, with its messages
 * (ccs_comm_last_error). */
CCS_API ccs_status_t ccs_planset_run(const ccs_planset_t *set,
                                     ccs_comm_t *comm, const void *sendbuff,
                                     void *recvbuff, size_t count,
                                     ccs_dtype_t dtype, ccs_redop_t op,
                                     void *stream,
                                     const ccs_planset_opts_t *opts);

/* What straggler auto knows on this communicator (docs/runtime.md,
 * "Straggler auto").  Identical on every rank after every call: a test
 * compares them. */
typedef struct ccs_auto_info {
    uint64_t calls;              /* auto calls completed */
    int32_t last;                /* last call's choice: the straggler it
                                    was relabelled for, -1 plain/none */
    int32_t latest;              /* latest rank of the last measured
                                    call (up to 16 ranks: the call before
                                    the last, whose arrival times travel
                                    with the last call's messages) */
    double lateness_s;           /* its lateness (clock-free estimate) */
    double critical_s;           /* critical delay of the last measured
                                    call's plan pair and size; < 0 not
                                    known yet */
    double plain_s;              /* plain plan's time, no delay; 0 unknown */
    double rs_s;                 /* aware plan's phase 0 */
    double after_s;              /* aware plan's time after the arrival */
    uint32_t streak;             /* calls in a row `latest` was late past
                                    the floor: the critical delay, 4x the
                                    arrival noise and the plain plan's
                                    time (docs/runtime.md) */
    uint64_t state_hash;         /* hash of the whole decision state */
    uint64_t exchanges;          /* calls whose arrival times were
                                    gathered: every call, except while
                                    nothing is late (then 1 in 2, 4, ...
                                    up to 1 in 16) */
} ccs_auto_info_t;

/* CCS_ERR_INVALID for NULL arguments; all zeros (last = -1) before the
 * first auto call. */
CCS_API ccs_status_t ccs_comm_auto_info(const ccs_comm_t *comm,
                                        ccs_auto_info_t *info);

/* ccs_comm_init_mpi on MPI_COMM_WORLD, for callers that cannot name it
 * (bindings: its handle is a symbol address in Open MPI, an int in
 * MPICH). */
CCS_API ccs_status_t ccs_comm_init_mpi_world(ccs_comm_t **comm);

/* Library version as CCS_VERSION_CODE. */
CCS_API int ccs_version(void);

/* ---- GPU transports: init with the detailed message ----
 * Like ccs_comm_init_cuda / ccs_comm_init_nccl, plus the reason for a
 * failure copied into msg (msglen bytes; msg may be NULL, msglen 0), e.g.
 * "cuda transport: no CUDA device (cudaGetDeviceCount: ...)".  Runs given
 * a NULL stream use the rank's internal stream and return when done; see
 * docs/gpu.md.  Never include ccs_run inside ncclGroupStart/End. */
CCS_API ccs_status_t ccs_comm_init_cuda_msg(int nranks, const int *devices,
                                            ccs_comm_t **comms, char *msg,
                                            size_t msglen);
CCS_API ccs_status_t ccs_comm_init_nccl_msg(void *nccl_comm,
                                            ccs_comm_t **comm, char *msg,
                                            size_t msglen);
/* ---- end of GPU transport block ---- */

#ifdef __cplusplus
}
#endif

#endif /* CCS_H */
