/*
 * format.h - the .ccs binary schedule format: the one owner of its layout.
 *
 * The byte-for-byte specification is docs/format.md.  The synthesizer writes
 * through ccs_format_write_file; the runtime and `ccsynth verify/show` read
 * through ccs_format_read_*.  Readers validate every field and index before
 * use (ccs_sched_validate included) and never read out of bounds.  Writes
 * are deterministic (same schedule, same bytes) and atomic (temporary file in
 * the same directory, fsync, rename).
 *
 * Layout (version 1.0; all integers little-endian, written byte by byte):
 *   header      CCS_FORMAT_HEADER_SIZE bytes at offset 0 (fields below)
 *   params      params_len bytes of text, no NUL
 *   step table  nsteps bytes, the phase of each step
 *   directory   nranks entries of 16 bytes: u64 offset, u32 nops, u32 0
 *   op streams  rank 0's ops, rank 1's ops, ... (24 bytes per op)
 *   end marker  8 bytes "CCS-END\0"
 *   checksum    u32 CRC-32C of every byte before it
 * Every section follows the previous one without padding or gaps, so the
 * encoding of a schedule is unique.
 */
#ifndef CCS_FORMAT_H
#define CCS_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#include "ccs.h"
#include "err.h"
#include "sched.h"

/* Magic: 8 bytes at offset 0. */
#define CCS_FORMAT_MAGIC     "CCSYNTH"   /* plus its NUL: 8 bytes */
#define CCS_FORMAT_MAGIC_LEN 8
#define CCS_FORMAT_END       "CCS-END"   /* plus its NUL: 8 bytes */
#define CCS_FORMAT_END_LEN   8

/* Version this code writes.  A reader rejects any other major with
 * CCS_ERR_VERSION and accepts a newer minor (see docs/format.md: a minor
 * only appends header fields, counted by header_size). */
#define CCS_FORMAT_MAJOR 1
#define CCS_FORMAT_MINOR 0

/* Sizes in bytes. */
#define CCS_FORMAT_HEADER_SIZE  104u
#define CCS_FORMAT_DIR_ENTRY    16u
#define CCS_FORMAT_OP_SIZE      24u
#define CCS_FORMAT_TRAILER_SIZE 12u  /* end marker + checksum */
#define CCS_FORMAT_MIN_SIZE (CCS_FORMAT_HEADER_SIZE + CCS_FORMAT_TRAILER_SIZE)
#define CCS_FORMAT_MAX_PARAMS   (1u << 20)   /* params text limit */
#define CCS_FORMAT_MAX_HEADER   4096u        /* header_size limit */
#define CCS_FORMAT_MAX_FILE     (UINT64_C(1) << 32)

/* Header flags. */
#define CCS_FORMAT_FLAG_PARAMS  0x1u  /* params present (may be empty) */
#define CCS_FORMAT_FLAGS_KNOWN  0x1u

/* Header field offsets (docs/format.md, "Header"). */
enum {
    CCS_FOFF_MAGIC = 0,         /* u8[8] */
    CCS_FOFF_MAJOR = 8,         /* u16 */
    CCS_FOFF_MINOR = 10,        /* u16 */
    CCS_FOFF_HEADER_SIZE = 12,  /* u32 */
    CCS_FOFF_FLAGS = 16,        /* u32 */
    CCS_FOFF_COLL = 20,         /* u32 */
    CCS_FOFF_NRANKS = 24,       /* u32 */
    CCS_FOFF_NCHUNKS = 28,      /* u32 */
    CCS_FOFF_NSCRATCH = 32,     /* u32 */
    CCS_FOFF_NSTEPS = 36,       /* u32 */
    CCS_FOFF_NPHASES = 40,      /* u32 */
    CCS_FOFF_ROOT = 44,         /* i32 */
    CCS_FOFF_STRAGGLER = 48,    /* i32 */
    CCS_FOFF_PARAMS_LEN = 52,   /* u32 */
    CCS_FOFF_FINGERPRINT = 56,  /* u64 */
    CCS_FOFF_FILE_SIZE = 64,    /* u64 */
    CCS_FOFF_ALGO = 72          /* u8[32], NUL-padded */
};

/* Serialise to memory.  *buf is malloc'd, owned by the caller.  The
 * schedule must pass ccs_sched_validate. */
ccs_status_t ccs_format_encode(const ccs_sched_t *s, uint8_t **buf,
                               size_t *len, ccs_err_t *err);
/* The encoding's length in bytes, without encoding: CCS_ERR_INVALID
 * (the same words the encoder uses) when it would pass
 * CCS_FORMAT_MAX_FILE or the params text its limit.  Cheap (no pass over
 * the ops), so a command can refuse a schedule the format cannot hold
 * before it spends minutes verifying it. */
ccs_status_t ccs_format_encoded_size(const ccs_sched_t *s, uint64_t *size,
                                     ccs_err_t *err);
/* Parse and validate.  *out owned by the caller (ccs_sched_destroy). */
ccs_status_t ccs_format_decode(const uint8_t *buf, size_t len,
                               ccs_sched_t **out, ccs_err_t *err);
/* Like ccs_format_decode, but fills only `rank`'s op stream; every other
 * rank has 0 ops.  Validates the header, the whole directory, the checksum
 * and that rank's ops (not the other ranks' ops).  CCS_ERR_MISMATCH when
 * rank >= the file's rank count.  *out owned by the caller. */
ccs_status_t ccs_format_decode_rank(const uint8_t *buf, size_t len,
                                    uint32_t rank, ccs_sched_t **out,
                                    ccs_err_t *err);
/* Called by the *_hook readers for every rank, in rank order, right after
 * the rank's ops passed the reader's per-op checks (and are in cache):
 * s->rank_ops[rank] holds rank_nops[rank] ops.  The header fields and
 * every rank's op count are final by then, but the checksum is only
 * known once the whole file has been read: whatever the hook makes of a
 * rank is the caller's to throw away when the reader fails.  s stays the
 * reader's until it returns CCS_OK; a hook may keep reading the ranks it
 * was given (from another thread, say) until then, or until RESET. */
typedef void (*ccs_format_rank_hook_t)(void *ctx, ccs_sched_t *s,
                                       uint32_t rank);
/* The rank a hook is called with (s NULL) when the reader fails after
 * feeding it some ranks, before it destroys the schedule: the hook must
 * let go of s before it returns. */
#define CCS_FORMAT_HOOK_RESET UINT32_MAX
/* ccs_format_decode and ccs_format_read_file with the hook. */
ccs_status_t ccs_format_decode_hook(const uint8_t *buf, size_t len,
                                    ccs_format_rank_hook_t hook, void *ctx,
                                    ccs_sched_t **out, ccs_err_t *err);
ccs_status_t ccs_format_read_file_hook(const char *path,
                                       ccs_format_rank_hook_t hook,
                                       void *ctx, ccs_sched_t **out,
                                       ccs_err_t *err);
/* Write the encoding to `path` by outfile.h's rules: atomic for a regular
 * file (on failure `path` is untouched and no temporary file is left
 * behind; a new file gets mode 0644), written through for a device, FIFO
 * or /dev/stdout, which are never replaced. */
ccs_status_t ccs_format_write_file(const ccs_sched_t *s, const char *path,
                                   ccs_err_t *err);
/* Read and decode a file; messages are prefixed with the path. */
ccs_status_t ccs_format_read_file(const char *path, ccs_sched_t **out,
                                  ccs_err_t *err);
/* Read a whole file into memory (regular files up to CCS_FORMAT_MAX_FILE).
 * *buf is malloc'd, owned by the caller.  Messages name the path. */
ccs_status_t ccs_format_load_file(const char *path, uint8_t **buf,
                                  size_t *len, ccs_err_t *err);

#endif /* CCS_FORMAT_H */
