/*
 * format.c - the .ccs writer and reader (specification: docs/format.md).
 *
 * Every integer is written one byte at a time in little-endian order, so
 * files are independent of the host's endianness and alignment, and no
 * struct is ever dumped.  The reader trusts nothing: it checks the total
 * size, the end marker and the CRC-32C first, then every header field,
 * then that each section fits in what remains of the file *before* it
 * allocates anything sized by a count from the file, then every op field
 * (ccs_op_ok, and read_op's worded check for an op that fails it), and
 * finally the header rules of ccs_sched_validate.  Messages name the field,
 * its value and its byte offset.  That is the order failures are reported
 * in; a full decode computes the CRC on its way through the op records,
 * which then stay in cache for their checks (and for a hook: a plan
 * loader's per-rank work), and puts a checksum failure first whenever
 * there is one.
 *
 * Op records are laid out as ccs_op_t on a little-endian host (asserted
 * below): there they are copied into one block, or, in a file read into
 * a buffer placed so the op section is aligned, the schedule adopts the
 * buffer (op_store).  Big-endian hosts decode field by field.  A large
 * file is decoded while it is still being read into that buffer (feed_t),
 * so that reading it and checking it overlap.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#if defined(__unix__) || defined(__APPLE__)
#include <sys/mman.h>
#define CCS_CAN_MAP 1
#endif

#include "crc32c.h"
#include "format.h"
#include "ccs_out.h"

_Static_assert(sizeof(ccs_op_t) == CCS_FORMAT_OP_SIZE &&
               offsetof(ccs_op_t, kind) == 4 &&
               offsetof(ccs_op_t, buf) == 5 &&
               offsetof(ccs_op_t, src_buf) == 6 &&
               offsetof(ccs_op_t, reserved) == 7 &&
               offsetof(ccs_op_t, peer) == 8 &&
               offsetof(ccs_op_t, chunk) == 12 &&
               offsetof(ccs_op_t, src_chunk) == 16 &&
               offsetof(ccs_op_t, nchunks) == 20,
               "ccs_op_t is laid out as a .ccs op record");

static bool host_little_endian(void)
{
    const uint16_t one = 1;
    uint8_t low;
    memcpy(&low, &one, 1);
    return low == 1;
}

/* ---- little-endian primitives ---- */

static void put_u16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

static void put_u32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void put_u64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

/* Two's complement without relying on implementation-defined casts. */
static void put_i32(uint8_t *p, int32_t v)
{
    put_u32(p, v < 0 ? (uint32_t)((int64_t)v + 4294967296LL) : (uint32_t)v);
}

static uint16_t get_u16(const uint8_t *p)
{
    return (uint16_t)(p[0] | (p[1] << 8));
}

static uint32_t get_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
           ((uint32_t)p[3] << 24);
}

static uint64_t get_u64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

static int32_t get_i32(const uint8_t *p)
{
    uint32_t u = get_u32(p);
    return u <= (uint32_t)INT32_MAX ? (int32_t)u
                                    : (int32_t)((int64_t)u - 4294967296LL);
}

/* ---- encoder ---- */

/* Op record (24 bytes): docs/format.md, "Op record". */
static void put_op(uint8_t *p, const ccs_op_t *op)
{
    put_u32(p + 0, op->step);
    p[4] = op->kind;
    p[5] = op->buf;
    p[6] = op->src_buf;
    p[7] = op->reserved;
    put_i32(p + 8, op->peer);
    put_u32(p + 12, op->chunk);
    put_u32(p + 16, op->src_chunk);
    put_u32(p + 20, op->nchunks);
}

/* The length of the params text and of the whole encoding, and whether
 * the format can hold them. */
static ccs_status_t encode_size(const ccs_sched_t *s, uint64_t *params_len,
                                uint64_t *size, ccs_err_t *err)
{
    *params_len = 0;
    if (s->params != NULL) {
        *params_len = strlen(s->params);
        if (*params_len > CCS_FORMAT_MAX_PARAMS)
            return ccs_err_set(err, CCS_ERR_INVALID,
                               "params text is %" PRIu64 " bytes, more than "
                               "the format's limit of %u", *params_len,
                               CCS_FORMAT_MAX_PARAMS);
    }
    *size = (uint64_t)CCS_FORMAT_HEADER_SIZE + *params_len + s->nsteps +
            (uint64_t)CCS_FORMAT_DIR_ENTRY * s->nranks +
            (uint64_t)CCS_FORMAT_OP_SIZE * ccs_sched_total_ops(s) +
            CCS_FORMAT_TRAILER_SIZE;
    if (*size > CCS_FORMAT_MAX_FILE || *size > SIZE_MAX)
        return ccs_err_set(err, CCS_ERR_INVALID,
                           "encoding would be %" PRIu64 " bytes, more than "
                           "the format's limit of %" PRIu64, *size,
                           (uint64_t)CCS_FORMAT_MAX_FILE);
    return CCS_OK;
}

ccs_status_t ccs_format_encoded_size(const ccs_sched_t *s, uint64_t *size,
                                     ccs_err_t *err)
{
    uint64_t params_len, n;
    ccs_status_t st;

    if (s == NULL || size == NULL)
        return ccs_err_set(err, CCS_ERR_INVALID, "NULL argument");
    st = encode_size(s, &params_len, &n, err);
    if (st == CCS_OK)
        *size = n;
    return st;
}

/* What the encoder checks before it writes a byte, and what follows from
 * it: the length of the params text and of the whole encoding. */
static ccs_status_t encode_check(const ccs_sched_t *s, uint64_t *params_len,
                                 uint64_t *size, ccs_err_t *err)
{
    ccs_status_t st;

    /* Write only what every reader accepts. */
    st = ccs_sched_validate(s, err);
    if (st != CCS_OK) {
        ccs_err_prefix(err, "cannot encode an invalid schedule: ");
        return st;
    }
    return encode_size(s, params_len, size, err);
}

/* Bytes before the op records: header, params, step phases, directory. */
static uint64_t head_size(const ccs_sched_t *s, uint64_t params_len)
{
    return (uint64_t)CCS_FORMAT_HEADER_SIZE + params_len + s->nsteps +
           (uint64_t)CCS_FORMAT_DIR_ENTRY * s->nranks;
}

/* Write the head_size() bytes before the op records to out, which must be
 * zeroed: bytes after the algorithm name's NUL stay zero, so whatever
 * follows the NUL in s->algo cannot leak into the file, and equal
 * schedules encode alike. */
static void encode_head(const ccs_sched_t *s, uint64_t params_len,
                        uint64_t size, uint8_t *out)
{
    size_t pos, algo_len;
    uint64_t stream;

    memcpy(out + CCS_FOFF_MAGIC, CCS_FORMAT_MAGIC, CCS_FORMAT_MAGIC_LEN);
    put_u16(out + CCS_FOFF_MAJOR, CCS_FORMAT_MAJOR);
    put_u16(out + CCS_FOFF_MINOR, CCS_FORMAT_MINOR);
    put_u32(out + CCS_FOFF_HEADER_SIZE, CCS_FORMAT_HEADER_SIZE);
    put_u32(out + CCS_FOFF_FLAGS,
            s->params != NULL ? CCS_FORMAT_FLAG_PARAMS : 0);
    put_u32(out + CCS_FOFF_COLL, (uint32_t)s->coll);
    put_u32(out + CCS_FOFF_NRANKS, s->nranks);
    put_u32(out + CCS_FOFF_NCHUNKS, s->nchunks);
    put_u32(out + CCS_FOFF_NSCRATCH, s->nscratch);
    put_u32(out + CCS_FOFF_NSTEPS, s->nsteps);
    put_u32(out + CCS_FOFF_NPHASES, s->nphases);
    put_i32(out + CCS_FOFF_ROOT, s->root);
    put_i32(out + CCS_FOFF_STRAGGLER, s->straggler);
    put_u32(out + CCS_FOFF_PARAMS_LEN, (uint32_t)params_len);
    put_u64(out + CCS_FOFF_FINGERPRINT, s->topo_fingerprint);
    put_u64(out + CCS_FOFF_FILE_SIZE, size);
    algo_len = strnlen(s->algo, sizeof(s->algo));
    memcpy(out + CCS_FOFF_ALGO, s->algo, algo_len);
    pos = CCS_FORMAT_HEADER_SIZE;

    if (params_len > 0)
        memcpy(out + pos, s->params, (size_t)params_len);
    pos += (size_t)params_len;
    if (s->nsteps > 0)
        memcpy(out + pos, s->step_phase, s->nsteps);
    pos += s->nsteps;

    stream = (uint64_t)pos + (uint64_t)CCS_FORMAT_DIR_ENTRY * s->nranks;
    for (uint32_t r = 0; r < s->nranks; r++) {
        put_u64(out + pos, stream);
        put_u32(out + pos + 8, s->rank_nops[r]);
        put_u32(out + pos + 12, 0);
        pos += CCS_FORMAT_DIR_ENTRY;
        stream += (uint64_t)CCS_FORMAT_OP_SIZE * s->rank_nops[r];
    }
}

ccs_status_t ccs_format_encode(const ccs_sched_t *s, uint8_t **buf,
                               size_t *len, ccs_err_t *err)
{
    uint8_t *out = NULL;
    uint64_t size, params_len;
    size_t pos;
    ccs_status_t st;

    if (s == NULL || buf == NULL || len == NULL)
        return ccs_err_set(err, CCS_ERR_INVALID, "NULL argument");
    st = encode_check(s, &params_len, &size, err);
    if (st != CCS_OK)
        return st;

    /* Owned by the caller through *buf on success; freed here otherwise.
     * Zeroed: encode_head relies on it. */
    out = calloc(1, (size_t)size);
    if (out == NULL)
        return ccs_err_set(err, CCS_ERR_NOMEM,
                           "out of memory for a %" PRIu64 "-byte encoding",
                           size);
    encode_head(s, params_len, size, out);
    pos = (size_t)head_size(s, params_len);
    for (uint32_t r = 0; r < s->nranks; r++) {
        for (uint32_t i = 0; i < s->rank_nops[r]; i++) {
            put_op(out + pos, &s->rank_ops[r][i]);
            pos += CCS_FORMAT_OP_SIZE;
        }
    }
    memcpy(out + pos, CCS_FORMAT_END, CCS_FORMAT_END_LEN);
    pos += CCS_FORMAT_END_LEN;
    put_u32(out + pos, ccs_crc32c(0, out, pos));
    pos += 4;
    if (pos != size) {
        free(out);
        return ccs_err_set(err, CCS_ERR_INTERNAL,
                           "encoder wrote %zu bytes, planned %" PRIu64, pos,
                           size);
    }
    *buf = out;
    *len = (size_t)size;
    return CCS_OK;
}

/* ---- decoder ---- */

/* What the header says, after its own checks. */
typedef struct hdr {
    uint32_t major, minor, header_size, flags;
    uint32_t coll, nranks, nchunks, nscratch, nsteps, nphases, params_len;
    int32_t root, straggler;
    uint64_t fingerprint;
    uint64_t params_off, steps_off, dir_off, ops_off, body_end;
} hdr_t;

#define FMT_FAIL(...) ccs_err_set(err, CCS_ERR_FORMAT, __VA_ARGS__)

/* The checksum failure's words, wherever the CRC was computed. */
static ccs_status_t checksum_fail(const uint8_t *b, size_t len,
                                  uint32_t computed, ccs_err_t *err)
{
    return ccs_err_set(err, CCS_ERR_CHECKSUM,
                       "checksum mismatch: stored CRC-32C 0x%08x at "
                       "offset %zu, computed 0x%08x over bytes 0..%zu",
                       get_u32(b + len - 4), len - 4, computed, len - 5);
}

/* Size, magic, version, end marker and checksum: everything that can be
 * checked without trusting a single count from the header.  With `crc`
 * false, everything but the checksum, which the caller then computes on
 * its way through the file (decode). */
static ccs_status_t check_envelope(const uint8_t *b, size_t len, hdr_t *h,
                                   bool crc, ccs_err_t *err)
{
    uint64_t file_size;
    uint32_t computed;
    size_t end_off;

    if (len < CCS_FOFF_HEADER_SIZE)
        return FMT_FAIL("file is %zu bytes: too short for the magic and "
                        "version (%u bytes)", len, CCS_FOFF_HEADER_SIZE);
    if (memcmp(b, CCS_FORMAT_MAGIC, CCS_FORMAT_MAGIC_LEN) != 0)
        return FMT_FAIL("not a .ccs file: bad magic at offset 0 (found "
                        "%02x %02x %02x %02x %02x %02x %02x %02x, expected "
                        "\"CCSYNTH\\0\")", b[0], b[1], b[2], b[3], b[4], b[5],
                        b[6], b[7]);
    h->major = get_u16(b + CCS_FOFF_MAJOR);
    h->minor = get_u16(b + CCS_FOFF_MINOR);
    if (h->major != CCS_FORMAT_MAJOR)
        return ccs_err_set(err, CCS_ERR_VERSION,
                           "format version %u.%u (field version_major at "
                           "offset %u = %u): this reader knows major %u only",
                           h->major, h->minor, CCS_FOFF_MAJOR, h->major,
                           CCS_FORMAT_MAJOR);
    if (len < CCS_FORMAT_MIN_SIZE)
        return FMT_FAIL("file is %zu bytes: truncated (a version %u file has "
                        "at least %u bytes: header, end marker, checksum)",
                        len, CCS_FORMAT_MAJOR, CCS_FORMAT_MIN_SIZE);
    file_size = get_u64(b + CCS_FOFF_FILE_SIZE);
    if (file_size > len)
        return FMT_FAIL("truncated: file is %zu bytes but field file_size "
                        "(offset %u) says %" PRIu64, len, CCS_FOFF_FILE_SIZE,
                        file_size);
    if (file_size < len)
        return FMT_FAIL("%" PRIu64 " trailing bytes after the end of the "
                        "schedule: field file_size (offset %u) says %" PRIu64
                        " bytes, the file has %zu",
                        (uint64_t)len - file_size, CCS_FOFF_FILE_SIZE,
                        file_size, len);
    end_off = len - CCS_FORMAT_TRAILER_SIZE;
    if (memcmp(b + end_off, CCS_FORMAT_END, CCS_FORMAT_END_LEN) != 0)
        return FMT_FAIL("end marker missing at offset %zu (0x%zx): found "
                        "%02x %02x %02x %02x %02x %02x %02x %02x, expected "
                        "\"CCS-END\\0\"", end_off, end_off, b[end_off],
                        b[end_off + 1], b[end_off + 2], b[end_off + 3],
                        b[end_off + 4], b[end_off + 5], b[end_off + 6],
                        b[end_off + 7]);
    h->body_end = end_off;
    if (crc && (computed = ccs_crc32c(0, b, len - 4)) != get_u32(b + len - 4))
        return checksum_fail(b, len, computed, err);
    return CCS_OK;
}

/* Header fields, each against its range; then that every section fits in
 * the file.  Nothing is allocated yet. */
static ccs_status_t check_header(const uint8_t *b, hdr_t *h, ccs_err_t *err)
{
    const uint8_t *algo = b + CCS_FOFF_ALGO;
    const uint8_t *nul;
    uint64_t pos;

    h->header_size = get_u32(b + CCS_FOFF_HEADER_SIZE);
    if (h->minor <= CCS_FORMAT_MINOR
            ? h->header_size != CCS_FORMAT_HEADER_SIZE
            : (h->header_size < CCS_FORMAT_HEADER_SIZE ||
               h->header_size > CCS_FORMAT_MAX_HEADER))
        return FMT_FAIL("field header_size (offset %u) = %u: version %u.%u "
                        "needs %s%u", CCS_FOFF_HEADER_SIZE, h->header_size,
                        h->major, h->minor,
                        h->minor <= CCS_FORMAT_MINOR ? "exactly " : "at least ",
                        CCS_FORMAT_HEADER_SIZE);
    if (h->header_size > h->body_end)
        return FMT_FAIL("field header_size (offset %u) = %u: past the end "
                        "marker at offset %" PRIu64, CCS_FOFF_HEADER_SIZE,
                        h->header_size, h->body_end);
    h->flags = get_u32(b + CCS_FOFF_FLAGS);
    if (h->flags & ~CCS_FORMAT_FLAGS_KNOWN)
        return FMT_FAIL("field flags (offset %u) = 0x%x: unknown bits 0x%x",
                        CCS_FOFF_FLAGS, h->flags,
                        h->flags & ~CCS_FORMAT_FLAGS_KNOWN);
    h->coll = get_u32(b + CCS_FOFF_COLL);
    if (h->coll >= CCS_COLL_COUNT)
        return FMT_FAIL("field collective (offset %u) = %u: unknown "
                        "collective (0..%u)", CCS_FOFF_COLL, h->coll,
                        CCS_COLL_COUNT - 1);
    h->nranks = get_u32(b + CCS_FOFF_NRANKS);
    if (h->nranks < 1 || h->nranks > CCS_MAX_RANKS)
        return FMT_FAIL("field nranks (offset %u) = %u: out of range 1..%u",
                        CCS_FOFF_NRANKS, h->nranks, CCS_MAX_RANKS);
    h->nchunks = get_u32(b + CCS_FOFF_NCHUNKS);
    if (h->nchunks < 1 || h->nchunks > CCS_MAX_CHUNKS)
        return FMT_FAIL("field nchunks (offset %u) = %u: out of range 1..%u",
                        CCS_FOFF_NCHUNKS, h->nchunks, CCS_MAX_CHUNKS);
    if (ccs_coll_blocked((ccs_coll_t)h->coll) && h->nchunks % h->nranks != 0)
        return FMT_FAIL("field nchunks (offset %u) = %u: %s needs a multiple "
                        "of nranks = %u", CCS_FOFF_NCHUNKS, h->nchunks,
                        ccs_coll_str((ccs_coll_t)h->coll), h->nranks);
    h->nscratch = get_u32(b + CCS_FOFF_NSCRATCH);
    if (h->nscratch > CCS_MAX_CHUNKS)
        return FMT_FAIL("field nscratch (offset %u) = %u: more than %u",
                        CCS_FOFF_NSCRATCH, h->nscratch, CCS_MAX_CHUNKS);
    h->nsteps = get_u32(b + CCS_FOFF_NSTEPS);
    if (h->nsteps > CCS_MAX_STEPS)
        return FMT_FAIL("field nsteps (offset %u) = %u: more than %u",
                        CCS_FOFF_NSTEPS, h->nsteps, CCS_MAX_STEPS);
    h->nphases = get_u32(b + CCS_FOFF_NPHASES);
    if (h->nphases < 1 || h->nphases > CCS_MAX_PHASES)
        return FMT_FAIL("field nphases (offset %u) = %u: out of range 1..%u",
                        CCS_FOFF_NPHASES, h->nphases, CCS_MAX_PHASES);
    h->root = get_i32(b + CCS_FOFF_ROOT);
    if (ccs_coll_rooted((ccs_coll_t)h->coll)
            ? (h->root < 0 || (uint32_t)h->root >= h->nranks)
            : h->root != -1)
        return FMT_FAIL("field root (offset %u) = %d: %s needs %s",
                        CCS_FOFF_ROOT, h->root,
                        ccs_coll_str((ccs_coll_t)h->coll),
                        ccs_coll_rooted((ccs_coll_t)h->coll)
                            ? "a rank in 0..nranks-1" : "-1 (no root)");
    h->straggler = get_i32(b + CCS_FOFF_STRAGGLER);
    if (h->straggler < -1 || h->straggler >= (int64_t)h->nranks)
        return FMT_FAIL("field straggler (offset %u) = %d: out of range "
                        "-1..%u", CCS_FOFF_STRAGGLER, h->straggler,
                        h->nranks - 1);
    h->params_len = get_u32(b + CCS_FOFF_PARAMS_LEN);
    if (!(h->flags & CCS_FORMAT_FLAG_PARAMS) && h->params_len != 0)
        return FMT_FAIL("field params_len (offset %u) = %u but flags say "
                        "there are no params", CCS_FOFF_PARAMS_LEN,
                        h->params_len);
    if (h->params_len > CCS_FORMAT_MAX_PARAMS)
        return FMT_FAIL("field params_len (offset %u) = %u: more than %u",
                        CCS_FOFF_PARAMS_LEN, h->params_len,
                        CCS_FORMAT_MAX_PARAMS);
    h->fingerprint = get_u64(b + CCS_FOFF_FINGERPRINT);
    nul = memchr(algo, '\0', CCS_ALGO_NAME_MAX);
    if (nul == NULL)
        return FMT_FAIL("field algorithm (offset %u): %u bytes without a NUL",
                        CCS_FOFF_ALGO, CCS_ALGO_NAME_MAX);
    for (const uint8_t *p = nul; p < algo + CCS_ALGO_NAME_MAX; p++) {
        if (*p != 0)
            return FMT_FAIL("field algorithm (offset %u): padding byte at "
                            "offset %td is 0x%02x, not 0", CCS_FOFF_ALGO,
                            p - b, *p);
    }
    for (const uint8_t *p = algo; p < nul; p++) {
        if (*p < 0x21 || *p > 0x7e)
            return FMT_FAIL("field algorithm (offset %u): byte at offset "
                            "%td is 0x%02x, not printable ASCII",
                            CCS_FOFF_ALGO, p - b, *p);
    }

    /* Sections, in file order; each must fit before the end marker.  All
     * arithmetic in 64 bits: counts are at most 2^24, sizes at most 2^32. */
    pos = h->header_size;
    h->params_off = pos;
    if (h->params_len > h->body_end - pos)
        return FMT_FAIL("field params_len (offset %u) = %u: params at offset "
                        "%" PRIu64 " would run past the end marker at offset "
                        "%" PRIu64, CCS_FOFF_PARAMS_LEN, h->params_len, pos,
                        h->body_end);
    if (memchr(b + pos, '\0', h->params_len) != NULL)
        return FMT_FAIL("params text (offset %" PRIu64 ", %u bytes) contains "
                        "a NUL byte at offset %td", pos, h->params_len,
                        (const uint8_t *)memchr(b + pos, '\0',
                                                h->params_len) - b);
    pos += h->params_len;
    h->steps_off = pos;
    if (h->nsteps > h->body_end - pos)
        return FMT_FAIL("field nsteps (offset %u) = %u: the step table at "
                        "offset %" PRIu64 " would run past the end marker at "
                        "offset %" PRIu64, CCS_FOFF_NSTEPS, h->nsteps, pos,
                        h->body_end);
    pos += h->nsteps;
    h->dir_off = pos;
    if ((uint64_t)h->nranks * CCS_FORMAT_DIR_ENTRY > h->body_end - pos)
        return FMT_FAIL("field nranks (offset %u) = %u: the rank directory "
                        "(%" PRIu64 " bytes at offset %" PRIu64 ") would run "
                        "past the end marker at offset %" PRIu64,
                        CCS_FOFF_NRANKS, h->nranks,
                        (uint64_t)h->nranks * CCS_FORMAT_DIR_ENTRY, pos,
                        h->body_end);
    pos += (uint64_t)h->nranks * CCS_FORMAT_DIR_ENTRY;
    h->ops_off = pos;
    return CCS_OK;
}

/* The phase table: each phase below nphases, never decreasing. */
static ccs_status_t check_steps(const uint8_t *b, const hdr_t *h,
                                ccs_err_t *err)
{
    for (uint32_t t = 0; t < h->nsteps; t++) {
        uint8_t ph = b[h->steps_off + t];
        if (ph >= h->nphases)
            return FMT_FAIL("step %u: phase %u (offset %" PRIu64 ") >= "
                            "nphases = %u", t, ph, h->steps_off + t,
                            h->nphases);
        if (t > 0 && ph < b[h->steps_off + t - 1])
            return FMT_FAIL("step %u: phase %u (offset %" PRIu64 ") after "
                            "phase %u: phases must not decrease", t, ph,
                            h->steps_off + t, b[h->steps_off + t - 1]);
    }
    return CCS_OK;
}

/* The directory: streams in rank order, back to back, from the end of the
 * directory to the end marker, each op count within the bytes left.  This
 * rules out overlapping streams, gaps and offsets past the end before any
 * op array is allocated. */
static ccs_status_t check_directory(const uint8_t *b, const hdr_t *h,
                                    uint64_t *offs, ccs_err_t *err)
{
    uint64_t expect = h->ops_off;

    for (uint32_t r = 0; r < h->nranks; r++) {
        uint64_t e = h->dir_off + (uint64_t)r * CCS_FORMAT_DIR_ENTRY;
        uint64_t off = get_u64(b + e);
        uint32_t nops = get_u32(b + e + 8);
        uint32_t rsv = get_u32(b + e + 12);

        if (rsv != 0)
            return FMT_FAIL("rank %u directory entry (offset %" PRIu64 "): "
                            "reserved field (offset %" PRIu64 ") = %u, not 0",
                            r, e, e + 12, rsv);
        if (off > h->body_end)
            return FMT_FAIL("rank %u directory entry (offset %" PRIu64 "): "
                            "stream offset %" PRIu64 " is past the end "
                            "marker at offset %" PRIu64, r, e, off,
                            h->body_end);
        if (off < expect)
            return FMT_FAIL("rank %u directory entry (offset %" PRIu64 "): "
                            "stream offset %" PRIu64 " overlaps %s, which "
                            "ends at offset %" PRIu64, r, e, off,
                            r == 0 ? "the rank directory"
                                   : "the previous rank's stream",
                            expect);
        if (off > expect)
            return FMT_FAIL("rank %u directory entry (offset %" PRIu64 "): "
                            "stream offset %" PRIu64 " leaves a gap of %"
                            PRIu64 " bytes after offset %" PRIu64, r, e, off,
                            off - expect, expect);
        if (nops > (h->body_end - off) / CCS_FORMAT_OP_SIZE)
            return FMT_FAIL("rank %u directory entry (offset %" PRIu64 "): "
                            "field nops (offset %" PRIu64 ") = %u: %" PRIu64
                            " bytes of ops at offset %" PRIu64 " would run "
                            "past the end marker at offset %" PRIu64, r, e,
                            e + 8, nops, (uint64_t)nops * CCS_FORMAT_OP_SIZE,
                            off, h->body_end);
        offs[r] = off;
        expect = off + (uint64_t)nops * CCS_FORMAT_OP_SIZE;
    }
    if (expect != h->body_end)
        return FMT_FAIL("op streams end at offset %" PRIu64 " but the end "
                        "marker is at offset %" PRIu64 " (%" PRIu64
                        " bytes belong to no rank)", expect, h->body_end,
                        h->body_end - expect);
    return CCS_OK;
}

static uint32_t buf_size(const hdr_t *h, unsigned buf)
{
    return buf == CCS_BUF_SCRATCH ? h->nscratch : h->nchunks;
}

/* One op record at offset `o`: decode it and check every field.  The same
 * rules as ccs_sched_validate, stated here again so that the message can
 * point at the byte. */
static ccs_status_t read_op(const uint8_t *b, const hdr_t *h, uint32_t r,
                            uint32_t i, uint64_t o, uint32_t prev_step,
                            ccs_op_t *op, ccs_err_t *err)
{
    bool comm, has_src;

#define OP_FAIL(field, foff, ...)                                          \
    do {                                                                   \
        char what_[200];                                                   \
        snprintf(what_, sizeof(what_), __VA_ARGS__);                       \
        return FMT_FAIL("rank %u op %u (step %u) at offset %" PRIu64       \
                        ": field %s (offset %" PRIu64 "): %s", r, i,       \
                        op->step, o, field, o + (foff), what_);            \
    } while (0)

    op->step = get_u32(b + o);
    op->kind = b[o + 4];
    op->buf = b[o + 5];
    op->src_buf = b[o + 6];
    op->reserved = b[o + 7];
    op->peer = get_i32(b + o + 8);
    op->chunk = get_u32(b + o + 12);
    op->src_chunk = get_u32(b + o + 16);
    op->nchunks = get_u32(b + o + 20);

    if (op->step >= h->nsteps)
        OP_FAIL("step", 0, "step %u out of range (%u steps)", op->step,
                h->nsteps);
    if (i > 0 && op->step < prev_step)
        OP_FAIL("step", 0, "step %u after step %u (ops must be sorted by "
                "step)", op->step, prev_step);
    if (op->kind >= CCS_OP_KIND_COUNT)
        OP_FAIL("kind", 4, "unknown op kind %u", op->kind);
    if (op->buf >= CCS_BUF_COUNT)
        OP_FAIL("buffer", 5, "unknown buffer %u", op->buf);
    if (op->reserved != 0)
        OP_FAIL("reserved", 7, "%u, not 0", op->reserved);
    if (op->nchunks == 0)
        OP_FAIL("nchunks", 20, "0 chunks");
    comm = op->kind == CCS_OP_SEND || op->kind == CCS_OP_RECV ||
           op->kind == CCS_OP_RECV_REDUCE;
    has_src = op->kind == CCS_OP_RECV_REDUCE || op->kind == CCS_OP_COPY ||
              op->kind == CCS_OP_REDUCE_LOCAL;
    if (comm) {
        char what[160];

        if (ccs_op_peer_problem(op, r, h->nranks, what, sizeof(what)))
            OP_FAIL("peer", 8, "%s", what);
    }
    if (!comm && op->peer != -1)
        OP_FAIL("peer", 8, "local %s has peer %d (must be -1)",
                ccs_op_kind_str((ccs_op_kind_t)op->kind), op->peer);
    if ((uint64_t)op->chunk + op->nchunks > buf_size(h, op->buf))
        OP_FAIL("chunk", 12, "chunks %u..%" PRIu64 " past the end of %s "
                "(%u chunks)", op->chunk,
                (uint64_t)op->chunk + op->nchunks - 1,
                ccs_buf_str((ccs_buf_t)op->buf), buf_size(h, op->buf));
    if (has_src) {
        if (op->src_buf >= CCS_BUF_COUNT)
            OP_FAIL("src_buffer", 6, "unknown buffer %u", op->src_buf);
        if ((uint64_t)op->src_chunk + op->nchunks > buf_size(h, op->src_buf))
            OP_FAIL("src_chunk", 16, "chunks %u..%" PRIu64 " past the end "
                    "of %s (%u chunks)", op->src_chunk,
                    (uint64_t)op->src_chunk + op->nchunks - 1,
                    ccs_buf_str((ccs_buf_t)op->src_buf),
                    buf_size(h, op->src_buf));
    } else if (op->src_buf != 0) {
        OP_FAIL("src_buffer", 6, "%u on a %s (must be 0)", op->src_buf,
                ccs_op_kind_str((ccs_op_kind_t)op->kind));
    } else if (op->src_chunk != 0) {
        OP_FAIL("src_chunk", 16, "%u on a %s (must be 0)", op->src_chunk,
                ccs_op_kind_str((ccs_op_kind_t)op->kind));
    }
    if (op->kind != CCS_OP_SEND && op->buf == CCS_BUF_IN)
        OP_FAIL("buffer", 5, "%s writes the read-only IN buffer",
                ccs_op_kind_str((ccs_op_kind_t)op->kind));
#undef OP_FAIL
    return CCS_OK;
}

/* Rank r's op records at b + off, already in ops (or decoded into it,
 * field by field, when `decode_fields`): every op checked; the worded
 * check (read_op) only for an op that fails the fast one. */
static ccs_status_t take_ops(const uint8_t *b, const hdr_t *h, uint32_t r,
                             uint64_t off, uint32_t nops, bool decode_fields,
                             ccs_op_t *ops, ccs_err_t *err)
{
    uint32_t prev = 0;

    for (uint32_t i = 0; i < nops; i++) {
        uint64_t o = off + (uint64_t)i * CCS_FORMAT_OP_SIZE;
        ccs_status_t st;
        if (!decode_fields &&
            ccs_op_ok(&ops[i], r, h->nranks, h->nsteps, h->nchunks,
                      h->nscratch) && ops[i].step >= prev) {
            prev = ops[i].step;
            continue;
        }
        st = read_op(b, h, r, i, o, prev, &ops[i], err);
        if (st != CCS_OK)
            return st;
        prev = ops[i].step;
    }
    return CCS_OK;
}

/* Give back what load_file made: a mapping of map_len bytes, or (map_len
 * 0) a malloc block. */
static void release_file(uint8_t *base, size_t map_len)
{
#ifdef CCS_CAN_MAP
    if (base != NULL && map_len > 0) {
        munmap(base, map_len);
        return;
    }
#endif
    free(base);
}

/* A file being read into its buffer while decode works on what has
 * arrived: the read of a large file and its checks overlap (and a plan
 * loader's helper thread starts on the first ranks while the rest is still
 * being read), instead of the whole read coming first.  The file is still
 * read once, front to back, into the buffer the schedule adopts; only its
 * last CCS_FORMAT_TRAILER_SIZE bytes (end marker and checksum, which the
 * envelope check needs first) are read ahead of the rest. */
typedef struct feed {
    int fd;              /* open for reading; closed by feed_close */
    const char *path;    /* borrowed, for messages */
    uint8_t *dst;        /* where the file's byte 0 goes; borrowed */
    size_t size;         /* the file's size when opened */
    size_t got;          /* bytes [0, got) are in dst */
    size_t body;         /* sequential reads stop here: the bytes from
                            body on were read ahead (body == size when
                            nothing was) */
    bool failed;         /* a read failed: err holds its words, path
                            included */
} feed_t;

/* Bytes per read() while streaming: small enough that the checks start
 * early and the bytes just read are still in cache when decode looks at
 * them, large enough that system calls cost nothing next to the copy. */
#define FEED_BLOCK ((size_t)1 << 20)

/* Give the whole pages of [p, p + n) their memory in one call before a
 * read fills them: the kernel then sets up a block's fresh pages without
 * taking a fault on each of them (about a fifth of the read's CPU time
 * for a large file).  Only a hint: where the kernel does not know the
 * call (before Linux 5.14), read() faults the pages in as it always
 * did. */
static void prefault(uint8_t *p, size_t n)
{
#if defined(CCS_CAN_MAP) && defined(MADV_POPULATE_WRITE)
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t lo = ((uintptr_t)p + page - 1) & ~(page - 1);
    uintptr_t hi = ((uintptr_t)p + n) & ~(page - 1);

    if (page > 0 && (page & (page - 1)) == 0 && hi > lo)
        (void)madvise((void *)lo, hi - lo, MADV_POPULATE_WRITE);
#else
    (void)p;
    (void)n;
#endif
}

/* Read on until bytes [0, upto) are in the buffer (upto clipped to the
 * file).  The messages are load_file's, so a failing read reads the same
 * whether it happens before decode starts or while it runs. */
static ccs_status_t need(feed_t *f, uint64_t upto, ccs_err_t *err)
{
    size_t want;

    if (f == NULL || f->failed || upto <= f->got)
        return f != NULL && f->failed ? CCS_ERR_IO : CCS_OK;
    want = upto > f->body ? f->body : (size_t)upto;
    /* At least a block at a time, up to what the next reads would ask. */
    if (want < f->got + FEED_BLOCK)
        want = f->body - f->got < FEED_BLOCK ? f->body : f->got + FEED_BLOCK;
    prefault(f->dst + f->got, want - f->got);
    while (f->got < want) {
        ssize_t n = read(f->fd, f->dst + f->got, want - f->got);
        if (n < 0 && errno == EINTR)
            continue;
        f->failed = n <= 0;
        if (n < 0)
            return ccs_err_set(err, CCS_ERR_IO, "%s: read failed at offset "
                               "%zu: %s", f->path, f->got, strerror(errno));
        if (n == 0)
            return ccs_err_set(err, CCS_ERR_IO, "%s: file shrank while "
                               "being read (%zu of %zu bytes)", f->path,
                               f->got, f->size);
        f->got += (size_t)n;
    }
    return CCS_OK;
}

/* Where streaming starts: the trailer read ahead and the first block read
 * for a file of at least FEED_STREAM_MIN bytes, or the whole file for a
 * smaller one.  When the trailer cannot be read ahead (the file shrank
 * since fstat), everything is read in order instead, so the failure is
 * reported where it always was. */
#define FEED_STREAM_MIN ((size_t)8 << 20)

static ccs_status_t feed_start(feed_t *f, bool stream, ccs_err_t *err)
{
    f->got = 0;
    f->body = f->size;
    f->failed = false;
    if (stream && f->size >= FEED_STREAM_MIN) {
        size_t at = f->size - CCS_FORMAT_TRAILER_SIZE;
        ssize_t n;
        do
            n = pread(f->fd, f->dst + at, CCS_FORMAT_TRAILER_SIZE, (off_t)at);
        while (n < 0 && errno == EINTR);
        if (n == (ssize_t)CCS_FORMAT_TRAILER_SIZE)
            f->body = at;
        return need(f, f->body < f->size ? FEED_BLOCK : f->size, err);
    }
    return need(f, f->size, err);
}

/* only_rank < 0: every rank; otherwise that rank alone.  own: NULL, or
 * the allocation holding b, which decode takes over (the schedule adopts
 * it as its op store, or it is released); own_map_len > 0 when own is a
 * private mapping of that many bytes rather than a malloc block.  hook:
 * NULL, or called for every rank after its ops (ccs_format_rank_hook_t).
 * feed: NULL when all len bytes are in b, or the file still being read
 * into own (b's bytes are looked at only once need() has them there; a
 * failing read is reported before anything decode found, as it was when
 * the whole file was read first).
 *
 * Reading every rank, decode makes one pass over the file: the checksum
 * is computed section by section as the ops are copied and checked, so
 * each byte is brought into cache once.  The checks still report in
 * their specified order: when a check after the checksum fails, the
 * checksum over the whole file is computed first, and a mismatch is
 * what gets reported. */
static ccs_status_t decode(const uint8_t *b, size_t len, int64_t only_rank,
                           uint8_t *own, size_t own_map_len, feed_t *feed,
                           ccs_format_rank_hook_t hook, void *ctx,
                           ccs_sched_t **out, ccs_err_t *err)
{
    hdr_t h;
    uint64_t *offs = NULL;  /* [nranks], freed at cleanup */
    ccs_sched_t *s = NULL;  /* handed to *out on success */
    ccs_op_t *store = NULL; /* every rank's ops, owned by s once made */
    uint64_t total = 0;
    bool le = host_little_endian(), adopt;
    bool defer = only_rank < 0;   /* the checksum on the way */
    bool hooked = false;          /* the hook has seen s */
    uint32_t crc = 0;
    char algo[CCS_ALGO_NAME_MAX];
    ccs_status_t st, st2;

    if ((b == NULL && len > 0) || out == NULL) {
        release_file(own, own_map_len);
        return ccs_err_set(err, CCS_ERR_INVALID, "NULL argument");
    }
    memset(&h, 0, sizeof(h));
    /* Its failures come before the checksum's: reported as they are. */
    st = check_envelope(b, len, &h, !defer, err);
    if (st != CCS_OK)
        goto cleanup;
    /* Everything before the op records, by the header's own (unchecked)
     * counts: check_header refuses any section that would not lie
     * inside it. */
    if (feed != NULL &&
        (st = need(feed, (uint64_t)get_u32(b + CCS_FOFF_HEADER_SIZE) +
                             get_u32(b + CCS_FOFF_PARAMS_LEN) +
                             get_u32(b + CCS_FOFF_NSTEPS) +
                             (uint64_t)get_u32(b + CCS_FOFF_NRANKS) *
                                 CCS_FORMAT_DIR_ENTRY, err)) != CCS_OK)
        goto cleanup;
    st = check_header(b, &h, err);
    if (st != CCS_OK)
        goto checksum_first;
    if (only_rank >= (int64_t)h.nranks) {
        st = ccs_err_set(err, CCS_ERR_MISMATCH,
                         "rank %" PRId64 " asked for, but the schedule "
                         "has %u ranks", only_rank, h.nranks);
        goto cleanup;
    }
    st = check_steps(b, &h, err);
    if (st != CCS_OK)
        goto checksum_first;
    /* nranks * 16 bytes fit in the file: this allocation is bounded. */
    offs = malloc((size_t)h.nranks * sizeof(*offs));
    if (offs == NULL) {
        st = ccs_err_set(err, CCS_ERR_NOMEM, "out of memory");
        goto cleanup;
    }
    st = check_directory(b, &h, offs, err);
    if (st != CCS_OK)
        goto checksum_first;
    if (defer)
        crc = ccs_crc32c(0, b, (size_t)h.ops_off);

    memcpy(algo, b + CCS_FOFF_ALGO, sizeof(algo));
    st = ccs_sched_create((ccs_coll_t)h.coll, h.nranks, h.nchunks, algo, &s,
                          err);
    if (st != CCS_OK)
        goto cleanup;
    s->nscratch = h.nscratch;
    s->nphases = h.nphases;
    s->root = h.root;
    s->straggler = h.straggler;
    s->topo_fingerprint = h.fingerprint;
    if (h.flags & CCS_FORMAT_FLAG_PARAMS) {
        s->params = malloc((size_t)h.params_len + 1);
        if (s->params == NULL)
            goto nomem;
        memcpy(s->params, b + h.params_off, h.params_len);
        s->params[h.params_len] = '\0';
    }
    if (h.nsteps > 0) {
        s->step_phase = malloc(h.nsteps);
        if (s->step_phase == NULL)
            goto nomem;
        memcpy(s->step_phase, b + h.steps_off, h.nsteps);
    }
    s->nsteps = h.nsteps;
    s->step_cap = h.nsteps;
    /* One block for every rank's ops (check_directory bounded the total
     * by the file), or the file's own buffer when its op section is
     * aligned and the host reads the records as they are. */
    for (uint32_t r = 0; r < h.nranks; r++)
        if (only_rank < 0 || r == only_rank)
            total += get_u32(b + h.dir_off +
                             (uint64_t)r * CCS_FORMAT_DIR_ENTRY + 8);
    adopt = own != NULL && le && only_rank < 0 &&
            (uintptr_t)(b + h.ops_off) % _Alignof(ccs_op_t) == 0;
    if (adopt) {
        s->op_store = own;
        s->op_store_bytes = own_map_len > 0 ? own_map_len
                                            : (size_t)(b - own) + len;
        s->op_store_mapped = own_map_len > 0;
        own = NULL;
    } else if (total > 0) {
        store = malloc((size_t)total * sizeof(ccs_op_t));
        if (store == NULL)
            goto nomem;
        s->op_store = store;
        s->op_store_bytes = (size_t)total * sizeof(ccs_op_t);
    }
    /* A hook sees every rank's op count from the start. */
    for (uint32_t r = 0; hook != NULL && only_rank < 0 && r < h.nranks; r++)
        s->rank_nops[r] = get_u32(b + h.dir_off +
                                  (uint64_t)r * CCS_FORMAT_DIR_ENTRY + 8);
    for (uint32_t r = 0; r < h.nranks; r++) {
        uint32_t nops = get_u32(b + h.dir_off +
                                (uint64_t)r * CCS_FORMAT_DIR_ENTRY + 8);
        size_t bytes = (size_t)nops * CCS_FORMAT_OP_SIZE;
        ccs_op_t *ops;

        if (only_rank >= 0 && r != only_rank)
            continue;
        if ((st = need(feed, offs[r] + bytes, err)) != CCS_OK)
            goto cleanup;
        if (nops > 0) {
            if (adopt) {
                ops = (ccs_op_t *)(uintptr_t)(b + offs[r]);
            } else {
                ops = store;
                store += nops;
                if (le)
                    memcpy(ops, b + offs[r], bytes);
            }
            if (defer)
                crc = ccs_crc32c(crc, b + offs[r], bytes);
            s->rank_ops[r] = ops;
            s->rank_cap[r] = nops;
            st = take_ops(b, &h, r, offs[r], nops, !le, ops, err);
            if (st != CCS_OK)
                goto checksum_first;
            /* (A hook's schedule has its counts already: not written
             * again while the hook may be reading them.) */
            if (hook == NULL)
                s->rank_nops[r] = nops;
        }
        if (hook != NULL) {
            hook(ctx, s, r);
            hooked = true;
        }
    }
    /* (Every byte is in by now: the streams end at the end marker.) */
    if ((st = need(feed, len, err)) != CCS_OK)
        goto cleanup;
    if (defer) {
        crc = ccs_crc32c(crc, b + h.body_end, CCS_FORMAT_END_LEN);
        if (crc != get_u32(b + len - 4)) {
            st = checksum_fail(b, len, crc, err);
            goto cleanup;
        }
    }
    /* The shared structural rules, as every consumer sees them (the
     * per-op ones were applied above, op by op). */
    st = ccs_sched_validate_header(s, err);
    if (st != CCS_OK) {
        ccs_err_prefix(err, "schedule fails validation: ");
        goto cleanup;
    }
    *out = s;
    s = NULL;
    st = CCS_OK;
    goto cleanup;

checksum_first:
    /* A check after the checksum failed: the checksum speaks first. */
    if ((st2 = need(feed, len, err)) != CCS_OK) {
        st = st2;
        goto cleanup;
    }
    if (defer) {
        uint32_t whole = ccs_crc32c(0, b, len - 4);
        if (whole != get_u32(b + len - 4))
            st = checksum_fail(b, len, whole, err);
    }
    goto cleanup;
nomem:
    st = ccs_err_set(err, CCS_ERR_NOMEM, "out of memory decoding schedule");
cleanup:
    /* A read that fails speaks before anything decode found. */
    if (st != CCS_OK && (st2 = need(feed, len, err)) != CCS_OK)
        st = st2;
    if (hooked && s != NULL)
        hook(ctx, NULL, CCS_FORMAT_HOOK_RESET);
    ccs_sched_destroy(s);
    free(offs);
    release_file(own, own_map_len);
    return st;
}

ccs_status_t ccs_format_decode(const uint8_t *buf, size_t len,
                               ccs_sched_t **out, ccs_err_t *err)
{
    return decode(buf, len, -1, NULL, 0, NULL, NULL, NULL, out, err);
}

ccs_status_t ccs_format_decode_hook(const uint8_t *buf, size_t len,
                                    ccs_format_rank_hook_t hook, void *ctx,
                                    ccs_sched_t **out, ccs_err_t *err)
{
    return decode(buf, len, -1, NULL, 0, NULL, hook, ctx, out, err);
}

ccs_status_t ccs_format_decode_rank(const uint8_t *buf, size_t len,
                                    uint32_t rank, ccs_sched_t **out,
                                    ccs_err_t *err)
{
    return decode(buf, len, (int64_t)rank, NULL, 0, NULL, NULL, NULL, out,
                  err);
}

/* ---- files ---- */

/* Where the op section of the file open on fd would start, modulo 8,
 * from its header alone (0 when the header cannot be read): the reader
 * places the file so that the section is aligned.  Only a placement hint:
 * decode checks the header for real. */
static size_t ops_misalignment(int fd, size_t size)
{
    uint8_t hd[CCS_FORMAT_HEADER_SIZE];
    uint64_t off;

    if (size < sizeof(hd) ||
        pread(fd, hd, sizeof(hd), 0) != (ssize_t)sizeof(hd))
        return 0;
    off = (uint64_t)get_u32(hd + CCS_FOFF_HEADER_SIZE) +
          get_u32(hd + CCS_FOFF_NSTEPS) +
          (uint64_t)get_u32(hd + CCS_FOFF_NRANKS) * CCS_FORMAT_DIR_ENTRY;
    if (get_u32(hd + CCS_FOFF_FLAGS) & CCS_FORMAT_FLAG_PARAMS)
        off += get_u32(hd + CCS_FOFF_PARAMS_LEN);
    return (size_t)(off % 8);
}

/* Map the file of `size` bytes open on fd privately, so that the schedule
 * can keep its op records where the page cache has them: no copy, and no
 * fresh pages to fault in and clear.  The mapping is writable and private
 * (a write copies that page only), so the schedule behaves like one in a
 * malloc block.  NULL when the host cannot map files or the kernel says
 * no: the caller reads the file instead. */
static uint8_t *map_file(int fd, size_t size)
{
#ifdef CCS_CAN_MAP
    void *m;
    int flags = MAP_PRIVATE;

#ifdef MAP_POPULATE
    /* Read-only first: populating a writable private mapping would copy
     * every page. */
    flags |= MAP_POPULATE;
#endif
    m = mmap(NULL, size, PROT_READ, flags, fd, 0);
    if (m == MAP_FAILED)
        return NULL;
    if (mprotect(m, size, PROT_READ | PROT_WRITE) != 0) {
        munmap(m, size);
        return NULL;
    }
    return m;
#else
    (void)fd;
    (void)size;
    return NULL;
#endif
}

/* The whole file as bytes: *base + *shift is its first byte.  With
 * `in_place` (a reader that keeps the op records where they are), a
 * mapping when its op section lands aligned (*map_len = the mapping's
 * length), else a new allocation placed so that the section is 8-byte
 * aligned (*map_len = 0).  With `feed` (in_place only), an allocation is
 * left being read: the feed holds the open file (feed_close) and what has
 * arrived, and decode reads the rest as it goes; feed->fd is -1 when
 * there is nothing left to read (a mapping). */
static ccs_status_t load_file(const char *path, bool in_place,
                              feed_t *feed, uint8_t **base, size_t *shift,
                              size_t *len, size_t *map_len, ccs_err_t *err)
{
    struct stat sb;
    uint8_t *data = NULL;   /* handed to *base on success */
    size_t size, at = 0;
    feed_t whole;           /* the read when there is no feed */
    feed_t *f = feed != NULL ? feed : &whole;
    ccs_status_t st = CCS_OK;
    int fd;

    if (feed != NULL)
        feed->fd = -1;
    if (path == NULL || base == NULL || len == NULL)
        return ccs_err_set(err, CCS_ERR_INVALID, "NULL argument");
    *map_len = 0;
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return ccs_err_set(err, CCS_ERR_IO, "%s: cannot open: %s", path,
                           strerror(errno));
    if (fstat(fd, &sb) != 0) {
        st = ccs_err_set(err, CCS_ERR_IO, "%s: cannot stat: %s", path,
                         strerror(errno));
        goto cleanup;
    }
    if (!S_ISREG(sb.st_mode)) {
        st = ccs_err_set(err, CCS_ERR_IO, "%s: not a regular file", path);
        goto cleanup;
    }
    if ((uint64_t)sb.st_size > CCS_FORMAT_MAX_FILE ||
        (uint64_t)sb.st_size > SIZE_MAX - 8) {
        st = ccs_err_set(err, CCS_ERR_FORMAT,
                         "%s: %lld bytes, more than the format's limit of %"
                         PRIu64, path, (long long)sb.st_size,
                         (uint64_t)CCS_FORMAT_MAX_FILE);
        goto cleanup;
    }
    size = (size_t)sb.st_size;
    if (in_place) {
        size_t mis = ops_misalignment(fd, size);
        const char *opt_in = getenv("CCS_PLAN_MMAP");
        /* A mapping starts on a page: the section is aligned there when
         * its offset is. */
        /* Only on request: the records of a mapped file are checked once,
         * and a file rewritten in place afterwards would reach the executor
         * unchecked (or a truncated one kill the process with SIGBUS). */
        if (opt_in != NULL && strcmp(opt_in, "1") == 0 && size > 0 &&
            mis % _Alignof(ccs_op_t) == 0 && host_little_endian()) {
            data = map_file(fd, size);
            if (data != NULL) {
                *base = data;
                *shift = 0;
                *len = size;
                *map_len = size;
                data = NULL;
                goto cleanup;
            }
        }
        at = (8 - mis) % 8;
    }
    data = malloc(size + at + 1);  /* +1: malloc(0) may return NULL */
    if (data == NULL) {
        st = ccs_err_set(err, CCS_ERR_NOMEM, "%s: out of memory for %zu "
                         "bytes", path, size);
        goto cleanup;
    }
    f->fd = fd;
    f->path = path;
    f->dst = data + at;
    f->size = size;
    st = feed_start(f, feed != NULL, err);
    if (st != CCS_OK) {
        f->fd = -1;   /* closed below */
        goto cleanup;
    }
    *base = data;
    *shift = at;
    *len = size;
    data = NULL;
    if (feed != NULL)
        fd = -1;      /* the feed's now */
cleanup:
    free(data);
    if (fd >= 0)
        close(fd);
    return st;
}

static void feed_close(feed_t *f)
{
    if (f->fd >= 0)
        close(f->fd);
    f->fd = -1;
}

ccs_status_t ccs_format_load_file(const char *path, uint8_t **buf,
                                  size_t *len, ccs_err_t *err)
{
    size_t shift, map_len;

    if (buf == NULL)
        return ccs_err_set(err, CCS_ERR_INVALID, "NULL argument");
    return load_file(path, false, NULL, buf, &shift, len, &map_len, err);
}

ccs_status_t ccs_format_read_file_hook(const char *path,
                                       ccs_format_rank_hook_t hook,
                                       void *ctx, ccs_sched_t **out,
                                       ccs_err_t *err)
{
    uint8_t *data = NULL;  /* taken by decode */
    size_t len = 0, shift = 0, map_len = 0;
    feed_t feed;           /* closed here */
    ccs_status_t st;

    st = load_file(path, true, &feed, &data, &shift, &len, &map_len, err);
    if (st != CCS_OK)
        return st;
    st = decode(data + shift, len, -1, data, map_len,
                feed.fd >= 0 ? &feed : NULL, hook, ctx, out, err);
    /* (A failed read's words name the path already.) */
    if (st != CCS_OK && !(feed.fd >= 0 && feed.failed))
        ccs_err_prefix(err, "%s: ", path);
    feed_close(&feed);
    return st;
}

ccs_status_t ccs_format_read_file(const char *path, ccs_sched_t **out,
                                  ccs_err_t *err)
{
    return ccs_format_read_file_hook(path, NULL, NULL, out, err);
}

/* Op records per write in ccs_format_write_file: 1 MiB or so. */
#define WRITE_BLOCK_OPS 43690u

/* Write len bytes to the output, adding them to the running checksum. */
static ccs_status_t put_bytes(ccs_out_t *o, const char *path,
                              const uint8_t *p, size_t len, uint32_t *crc,
                              uint64_t *done, ccs_err_t *err)
{
    *crc = ccs_crc32c(*crc, p, len);
    *done += len;
    if (len > 0 && fwrite(p, 1, len, ccs_out_stream(o)) != len)
        return ccs_err_set(err, CCS_ERR_IO, "%s: write failed: %s", path,
                           strerror(errno));
    return CCS_OK;
}

ccs_status_t ccs_format_write_file(const ccs_sched_t *s, const char *path,
                                   ccs_err_t *err)
{
    /* The same bytes as ccs_format_encode, streamed: the head, then the op
     * records a block at a time, then the trailer, so that the file never
     * sits whole in memory beside the schedule (a plan of thousands of
     * ranks is gigabytes). */
    uint8_t *head = NULL;      /* owned here */
    uint8_t *block = NULL;     /* owned here */
    uint8_t trailer[CCS_FORMAT_TRAILER_SIZE];
    uint64_t size, params_len, hsize, done = 0;
    uint32_t crc = 0, nb = 0;
    ccs_out_t *o = NULL;       /* committed or aborted here */
    ccs_status_t st;

    if (s == NULL || path == NULL || path[0] == '\0')
        return ccs_err_set(err, CCS_ERR_INVALID, "NULL or empty argument");
    /* Checked first: a schedule that cannot be encoded touches no file. */
    st = encode_check(s, &params_len, &size, err);
    if (st != CCS_OK) {
        ccs_err_prefix(err, "%s: ", path);
        return st;
    }
    hsize = head_size(s, params_len);
    head = calloc(1, (size_t)hsize);
    block = malloc((size_t)WRITE_BLOCK_OPS * CCS_FORMAT_OP_SIZE);
    if (head == NULL || block == NULL) {
        st = ccs_err_set(err, CCS_ERR_NOMEM, "%s: out of memory", path);
        goto cleanup;
    }
    encode_head(s, params_len, size, head);
    /* Atomic for a regular file, written through for a device or FIFO. */
    st = ccs_out_open(path, &o, err);
    if (st != CCS_OK)
        goto cleanup;
    st = put_bytes(o, path, head, (size_t)hsize, &crc, &done, err);
    for (uint32_t r = 0; st == CCS_OK && r < s->nranks; r++) {
        for (uint32_t i = 0; st == CCS_OK && i < s->rank_nops[r]; i++) {
            put_op(block + (size_t)nb * CCS_FORMAT_OP_SIZE,
                   &s->rank_ops[r][i]);
            if (++nb == WRITE_BLOCK_OPS) {
                st = put_bytes(o, path, block, (size_t)nb * CCS_FORMAT_OP_SIZE,
                               &crc, &done, err);
                nb = 0;
            }
        }
    }
    if (st == CCS_OK)
        st = put_bytes(o, path, block, (size_t)nb * CCS_FORMAT_OP_SIZE, &crc,
                       &done, err);
    if (st == CCS_OK) {
        memcpy(trailer, CCS_FORMAT_END, CCS_FORMAT_END_LEN);
        crc = ccs_crc32c(crc, trailer, CCS_FORMAT_END_LEN);
        put_u32(trailer + CCS_FORMAT_END_LEN, crc);
        done += CCS_FORMAT_TRAILER_SIZE;
        if (fwrite(trailer, 1, sizeof(trailer), ccs_out_stream(o)) !=
            sizeof(trailer))
            st = ccs_err_set(err, CCS_ERR_IO, "%s: write failed: %s", path,
                             strerror(errno));
    }
    if (st == CCS_OK && done != size)
        st = ccs_err_set(err, CCS_ERR_INTERNAL, "%s: encoder wrote %" PRIu64
                         " bytes, planned %" PRIu64, path, done, size);
    if (st == CCS_OK)
        st = ccs_out_commit(o, err);
    else
        ccs_out_abort(o);
    o = NULL;

cleanup:
    free(head);
    free(block);
    return st;
}
