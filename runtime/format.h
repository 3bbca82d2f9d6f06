/*
 * format.h - the .ccs binary schedule format: the one owner of its layout.
 *
 * The byte-for-byte specification is docs/format.md.  The synthesizer writes
 * through ccs_format_write_file; the runtime and `ccsynth verify/show` read
 * through ccs_format_read_*.  Readers validate every field and index before
 * use (ccs_sched_validate included) and never read out of bounds.  Writes
 * are deterministic (same schedule, same bytes) and atomic (temporary file in
 * the same directory, fsync, rename).
 */
#ifndef CCS_FORMAT_H
#define CCS_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#include "ccs.h"
#include "err.h"
#include "sched.h"

/* Serialise to memory.  *buf is malloc'd, owned by the caller. */
ccs_status_t ccs_format_encode(const ccs_sched_t *s, uint8_t **buf,
                               size_t *len, ccs_err_t *err);
/* Parse and validate.  *out owned by the caller (ccs_sched_destroy). */
ccs_status_t ccs_format_decode(const uint8_t *buf, size_t len,
                               ccs_sched_t **out, ccs_err_t *err);
/* Atomic write of the encoding to `path`. */
ccs_status_t ccs_format_write_file(const ccs_sched_t *s, const char *path,
                                   ccs_err_t *err);
/* Read and decode a file; messages are prefixed with the path. */
ccs_status_t ccs_format_read_file(const char *path, ccs_sched_t **out,
                                  ccs_err_t *err);

#endif /* CCS_FORMAT_H */
