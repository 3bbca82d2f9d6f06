/*
 * outfile.h - writing ccsynth's output files (plans, tuning.json, DOT,
 * plots): every one goes through runtime/ccs_out.h's writer, which is
 * atomic for a regular file, writes through a device, FIFO or /dev/stdout
 * without replacing it, and reports every write error with the target
 * left as it was.  This adds the shape the synthesizer's writers have: a
 * function that prints into a stream.
 */
#ifndef CCS_UTIL_OUTFILE_H
#define CCS_UTIL_OUTFILE_H

#include <stdio.h>

#include "ccs_out.h"

/* Prints the whole output into f; CCS_OK or an error (a stream error is
 * also caught by outfile_write itself). */
typedef ccs_status_t (*outfile_writer_fn)(FILE *f, const void *ctx,
                                          ccs_err_t *err);

/* Open `path`, run writer(f, ctx), commit.  On any failure the target is
 * as it was and the message names the path. */
ccs_status_t outfile_write(const char *path, outfile_writer_fn writer,
                           const void *ctx, ccs_err_t *err);

#endif /* CCS_UTIL_OUTFILE_H */
