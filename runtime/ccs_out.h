/*
 * ccs_out.h - the one way ccsynth and libccs write an output file.
 *
 * Internal (runtime and synthesizer; synth/util/outfile.h builds on it).
 *
 * A regular target (or a path that does not exist yet) is written to a
 * temporary file beside it, flushed, fsynced and renamed over it, so a
 * reader sees the old file or the new one, never half of one, and a
 * failed write leaves the old file as it was.  A target that exists and is
 * not a regular file -- a character device (/dev/null, a copy of it made
 * with mknod), a FIFO, /dev/stdout, or a symlink to one of these -- is
 * written through, never replaced: renaming over it would turn a device
 * into a plain file.  A symlink to a regular file keeps the link: the file
 * it points to is replaced.  Every write error (a full device, a closed
 * pipe) is reported; nothing here prints or exits.
 *
 * Ownership: ccs_out_open returns an object the caller owns until it hands
 * it to ccs_out_commit or ccs_out_abort, which both free it.
 */
#ifndef CCS_OUT_H
#define CCS_OUT_H

#include <stdio.h>

#include "ccs.h"
#include "err.h"

typedef struct ccs_out ccs_out_t;

/* Start writing `path` (mode 0644 when a new file is made). */
ccs_status_t ccs_out_open(const char *path, ccs_out_t **out,
                          ccs_err_t *err);
/* The stream to write to (owned by o; do not fclose). */
FILE *ccs_out_stream(ccs_out_t *o);
/* The path an external program should write to instead of the stream
 * (the temporary file, or the target itself when written through). */
const char *ccs_out_path(const ccs_out_t *o);
/* Flush and close; for a regular target fsync, rename into place and
 * fsync the directory.  Frees o.  On failure nothing is renamed and the
 * temporary file is removed: the target is as it was. */
ccs_status_t ccs_out_commit(ccs_out_t *o, ccs_err_t *err);
/* Give up: remove the temporary file, free o.  NULL is a no-op. */
void ccs_out_abort(ccs_out_t *o);

/* The whole of data[0..len) to path, by the rules above. */
ccs_status_t ccs_out_write_all(const char *path, const void *data,
                               size_t len, ccs_err_t *err);

#endif /* CCS_OUT_H */
