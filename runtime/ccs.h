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

#ifdef __cplusplus
}
#endif

#endif /* CCS_H */
