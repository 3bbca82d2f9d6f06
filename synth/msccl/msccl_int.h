/*
 * msccl_int.h - pieces shared by msccl_export.c and msccl_import.c: the
 * step types of the format and a growable text buffer.  Internal to
 * synth/msccl/.
 */
#ifndef CCS_MSCCL_INT_H
#define CCS_MSCCL_INT_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"

/* Step types (the `type` attribute). */
typedef enum {
    MSCCL_T_SEND = 0,   /* s */
    MSCCL_T_RECV,       /* r */
    MSCCL_T_RCS,        /* receive, copy to dst, forward */
    MSCCL_T_RRS,        /* receive, reduce with src, forward (not stored) */
    MSCCL_T_RRC,        /* receive, reduce with src, store to dst */
    MSCCL_T_RRCS,       /* receive, reduce with src, store and forward */
    MSCCL_T_CPY,        /* dst = src */
    MSCCL_T_RE,         /* dst = dst (+) src */
    MSCCL_T_NOP,        /* carries a dependency only */
    MSCCL_T_COUNT
} msccl_type_t;

const char *msccl_type_str(msccl_type_t t);
/* MSCCL_T_COUNT when unknown. */
msccl_type_t msccl_type_parse(const char *s);
int msccl_type_sends(msccl_type_t t);   /* s, rcs, rrs, rrcs */
int msccl_type_recvs(msccl_type_t t);   /* r, rcs, rrs, rrc, rrcs */

/* Buffers as the format names them. */
enum { MSCCL_BUF_I = 0, MSCCL_BUF_O = 1, MSCCL_BUF_S = 2, MSCCL_BUF_COUNT };

/* A growable NUL-terminated text buffer.  `data` owned; msccl_sb_free. */
typedef struct msccl_sb {
    char *data;
    size_t len, cap;
    int failed;         /* an allocation failed: the text is incomplete */
} msccl_sb_t;

void msccl_sb_printf(msccl_sb_t *b, const char *fmt, ...) CCS_PRINTF(2, 3);
void msccl_sb_free(msccl_sb_t *b);

#endif /* CCS_MSCCL_INT_H */
