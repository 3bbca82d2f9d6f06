/*
 * err.h - detailed error messages, carried next to a ccs_status_t.
 *
 * Internal to ccsynth (runtime and synthesizer).  A ccs_err_t is owned by
 * the caller, usually on its stack; functions that fail write one message
 * into it at the place where the failure starts.  Passing NULL is allowed
 * and discards the message.  No global state: the message lives here.
 */
#ifndef CCS_ERR_H
#define CCS_ERR_H

#include <stdarg.h>
#include <stddef.h>

#include "ccs.h"

#define CCS_ERR_MSG_MAX 512

typedef struct ccs_err {
    char msg[CCS_ERR_MSG_MAX];
} ccs_err_t;

#if defined(__GNUC__)
#define CCS_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define CCS_PRINTF(a, b)
#endif

/* Write a message (overwrites any earlier one) and return `status`, so that
 * call sites read `return ccs_err_set(err, CCS_ERR_FORMAT, "...", ...);`. */
ccs_status_t ccs_err_set(ccs_err_t *err, ccs_status_t status,
                         const char *fmt, ...) CCS_PRINTF(3, 4);
ccs_status_t ccs_err_vset(ccs_err_t *err, ccs_status_t status,
                          const char *fmt, va_list ap);
/* Prepend context ("file.ccs: ") to the current message. */
void ccs_err_prefix(ccs_err_t *err, const char *fmt, ...) CCS_PRINTF(2, 3);
/* Clear the message. */
void ccs_err_clear(ccs_err_t *err);
/* The message, or the status's generic string when no message was set. */
const char *ccs_err_msg(const ccs_err_t *err, ccs_status_t status);

#endif /* CCS_ERR_H */
