/*
 * msccl.h - MSCCL algorithm XML <-> schedule IR (runtime/sched.h).
 *
 * MSCCL's executors (msccl-executor-nccl, RCCL) run a collective as one
 * program per GPU: thread blocks, each bound to at most one send peer and
 * one receive peer on one channel, run their steps in order; steps of
 * different thread blocks are ordered only by explicit dependencies
 * (depid/deps); messages on one (sender, receiver, channel) connection
 * match in FIFO order.  The format and the executor's limits are described
 * in docs/msccl.md.
 *
 * Export turns the IR's lock-step schedule into such programs: one thread
 * block per (send peer, receive peer, channel) with a receive fused to the
 * send that forwards it (rcs, rrcs, rrs), dependencies wherever a step
 * touches a chunk another thread block touched before it, split across
 * channels until the executor's limits hold.
 *
 * Import goes the other way: it parses the XML (libxml2), checks it against
 * the executor's rules and limits, matches sends to receives per connection
 * in FIFO order, orders every step after what it waits for (its thread
 * block's previous step, its dependency, the matching send) and lays the
 * program out as IR steps; a cycle in that order is a GPU deadlock and is
 * reported as one.  Whether the data is right is the verifier's job
 * (verify_sched) on the result.
 *
 * Ownership: every function writes its outputs only on success; returned
 * schedules and buffers are owned by the caller.  No global state (libxml2
 * is used through a parser context per call).
 */
#ifndef CCS_MSCCL_H
#define CCS_MSCCL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "sched.h"

/* The executor's limits (msccl-executor-nccl's src/include/msccl/). */
#define MSCCL_MAX_CHANNELS        32   /* chan 0..31 */
#define MSCCL_MAX_TB_PER_CHANNEL  32   /* send (and receive) thread blocks */
#define MSCCL_MAX_COUNT           72   /* cnt must stay below it */
#define MSCCL_MAX_TB_STEPS        64   /* steps per thread block (default
                                          build; 256 in older runtimes) */
#define MSCCL_MAX_ELEMS_PER_RANK  4096 /* XML nodes the parser holds per
                                          GPU (the algo element, every gpu
                                          element, the GPU's own tb and
                                          step elements); it fails on
                                          reaching this many */
#define MSCCL_MAX_TBS             1024 /* thread-block ids per GPU
                                          (MSCCL_MAX_NUM_THREAD_BLOCKS) */
#define MSCCL_MAX_WAITED_TB       127  /* a depid is stored in 8 bits
                                          (int8_t dependentBid): only
                                          thread blocks 0..127 can be
                                          waited for */
#define MSCCL_RESIDENT_TBS        108  /* default thread blocks per GPU:
                                          the kernel's blocks wait for
                                          each other, so all must be
                                          resident at once, one per SM
                                          (544-640 threads at up to 96
                                          registers each); 108 SMs on an
                                          A100, 132 on an H100 SXM */
#define MSCCL_MAX_ATTRS           16   /* attributes per element */
#define MSCCL_MAX_STR             255  /* names and values */

typedef enum {
    MSCCL_PROTO_SIMPLE = 0,
    MSCCL_PROTO_LL,
    MSCCL_PROTO_LL128,
    MSCCL_PROTO_COUNT
} msccl_proto_t;

const char *msccl_proto_str(msccl_proto_t p);           /* "Simple", ... */
ccs_status_t msccl_proto_parse(const char *name, msccl_proto_t *out);

/* ---- export ---- */

typedef struct msccl_export_opts {
    msccl_proto_t proto;     /* default Simple */
    uint32_t min_channels;   /* spread over at least this many channels
                                (0/1: as few as the limits allow) */
    uint64_t min_bytes;      /* size window of the calls that use it */
    uint64_t max_bytes;      /* 0: no upper bound */
    int inplace;             /* -1 auto (1 when the program is also right
                                with input and output aliased), 0, 1 */
    int outofplace;          /* 0 or 1 (default 1) */
    uint32_t max_tb_steps;   /* steps per thread block (default 64) */
    uint32_t max_tbs;        /* thread blocks per GPU (default
                                MSCCL_RESIDENT_TBS, at most MSCCL_MAX_TBS):
                                the SM count of the GPU it runs on */
    int order_steps;         /* 1 (default): also keep each rank's step
                                order (a step's ops wait for the rank's
                                previous step, as ccsynth's executor runs
                                them; falls back to 0 when the limits do
                                not allow it); 0: data dependencies only */
    const char *name;        /* algo name attribute; NULL: derived */
} msccl_export_opts_t;

void msccl_export_opts_init(msccl_export_opts_t *o);

/* What an export produced, for reports and tests. */
typedef struct msccl_export_info {
    uint32_t nchannels;
    uint32_t max_tbs_per_rank;
    uint32_t max_tb_steps;      /* longest thread block, nops included */
    uint32_t max_elems_per_rank;
    uint64_t nsteps;            /* MSCCL steps over all ranks */
    uint64_t nfused;            /* rcs/rrcs/rrs steps */
    uint64_t nnops;             /* nop steps carrying extra dependencies */
    uint64_t ndeps;             /* cross-thread-block dependencies */
    bool inplace;
    bool outofplace;
    bool step_order;            /* the rank's step order was kept */
} msccl_export_info_t;

/* Export s as MSCCL XML into a NUL-terminated buffer *xml (owned by the
 * caller, free()) of *len bytes.  CCS_ERR_UNSUPPORTED when the executor's
 * limits cannot be met (the message names the limit and the way out),
 * inplace=1 was asked of a program that is wrong with aliased buffers, or
 * the schedule reduces in the switch (nvls=1: the XML has no such step).
 * info may be NULL. */
ccs_status_t msccl_export(const ccs_sched_t *s, const msccl_export_opts_t *o,
                          char **xml, size_t *len, msccl_export_info_t *info,
                          ccs_err_t *err);

/* Export to a file, written to a temporary name and renamed. */
ccs_status_t msccl_export_file(const ccs_sched_t *s,
                               const msccl_export_opts_t *o, const char *path,
                               msccl_export_info_t *info, ccs_err_t *err);

/* One plan of an algorithm directory: a schedule and the call sizes it is
 * for ([min_bytes, max_bytes], max_bytes 0 = no upper bound).  Borrowed. */
typedef struct msccl_dir_entry {
    const ccs_sched_t *sched;
    uint64_t min_bytes;
    uint64_t max_bytes;
    bool has_proto;          /* proto below, not base's (a plan tuned for
                                a protocol runs with it) */
    msccl_proto_t proto;
} msccl_dir_entry_t;

/* Write an algorithm directory usable as MSCCL_ALGO_DIR: one XML per entry,
 * named "<NN>-<algo>-<coll>-<nranks>.xml" (NN the entry's index), with the
 * entry's window and the other settings of `base` (NULL: defaults).  dir is
 * created if missing; XML files already in it are left alone.  An entry
 * whose schedule reduces in the switch (nvls) gets no file: its window
 * falls back to NCCL, which runs NVLS itself. */
ccs_status_t msccl_write_algo_dir(const char *dir,
                                  const msccl_dir_entry_t *entries,
                                  size_t n, const msccl_export_opts_t *base,
                                  ccs_err_t *err);

/* ---- import ---- */

typedef struct msccl_import_opts {
    uint32_t max_tb_steps;   /* steps per thread block (default 64; 256 for
                                the older runtime); 0: no limit */
    uint32_t max_tbs;        /* thread blocks per GPU (default
                                MSCCL_RESIDENT_TBS, at most MSCCL_MAX_TBS) */
    bool check_limits;       /* enforce the executor's limits (default) */
} msccl_import_opts_t;

void msccl_import_opts_init(msccl_import_opts_t *o);

typedef struct msccl_import_info {
    char name[MSCCL_MAX_STR + 1];  /* algo name attribute */
    msccl_proto_t proto;
    uint32_t nchannels;
    uint32_t ngpus;
    uint32_t nchunksperloop;
    bool inplace;
    bool outofplace;
    uint64_t min_bytes, max_bytes;
    uint64_t nsteps;               /* MSCCL steps over all ranks */
    uint32_t ntbs;                 /* thread blocks over all ranks */
    uint32_t max_tb_steps;
} msccl_import_info_t;

/* Parse and translate an MSCCL XML held in memory.  `name` is used in
 * messages as the file name.  *out (owned by the caller) is structurally
 * valid (ccs_sched_validate) but not verified.  Errors are CCS_ERR_PARSE
 * (malformed XML, missing or bad attributes, out-of-range values),
 * CCS_ERR_UNSUPPORTED (executor limits), CCS_ERR_VERIFY (unmatched or
 * mismatched transfers, dependency cycles: what deadlocks on a GPU), each
 * naming the file, the XML line, the gpu/thread block/step and what is
 * wrong.  info may be NULL. */
ccs_status_t msccl_import_mem(const char *buf, size_t len, const char *name,
                              const msccl_import_opts_t *o,
                              ccs_sched_t **out, msccl_import_info_t *info,
                              ccs_err_t *err);

/* Same, reading the file at path. */
ccs_status_t msccl_import_file(const char *path, const msccl_import_opts_t *o,
                               ccs_sched_t **out, msccl_import_info_t *info,
                               ccs_err_t *err);

/* Entry point for a libFuzzer harness (LLVMFuzzerTestOneInput calls it):
 * import the bytes, verify the result when it imports; always returns 0.
 * Any input must leave no leak and no crash. */
int msccl_fuzz_one(const uint8_t *data, size_t size);

#endif /* CCS_MSCCL_H */
