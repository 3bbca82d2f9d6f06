/*
 * msccl_common.c - names shared by the MSCCL exporter and importer (step
 * types, protocols), the growable text buffer, and the export options'
 * defaults.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "msccl.h"
#include "msccl_int.h"

/* ---- shared names and the text buffer ---- */

static const char *const type_names[MSCCL_T_COUNT] = {
    "s", "r", "rcs", "rrs", "rrc", "rrcs", "cpy", "re", "nop",
};

const char *msccl_type_str(msccl_type_t t)
{
    return (unsigned)t < MSCCL_T_COUNT ? type_names[t] : "?";
}

msccl_type_t msccl_type_parse(const char *s)
{
    for (int t = 0; t < MSCCL_T_COUNT; t++)
        if (strcmp(s, type_names[t]) == 0)
            return (msccl_type_t)t;
    return MSCCL_T_COUNT;
}

int msccl_type_sends(msccl_type_t t)
{
    return t == MSCCL_T_SEND || t == MSCCL_T_RCS || t == MSCCL_T_RRS ||
           t == MSCCL_T_RRCS;
}

int msccl_type_recvs(msccl_type_t t)
{
    return t == MSCCL_T_RECV || t == MSCCL_T_RCS || t == MSCCL_T_RRS ||
           t == MSCCL_T_RRC || t == MSCCL_T_RRCS;
}

static const char *const proto_names[MSCCL_PROTO_COUNT] = {
    "Simple", "LL", "LL128",
};

const char *msccl_proto_str(msccl_proto_t p)
{
    return (unsigned)p < MSCCL_PROTO_COUNT ? proto_names[p] : "?";
}

ccs_status_t msccl_proto_parse(const char *name, msccl_proto_t *out)
{
    for (int p = 0; p < MSCCL_PROTO_COUNT; p++)
        if (strcmp(name, proto_names[p]) == 0) {
            *out = (msccl_proto_t)p;
            return CCS_OK;
        }
    return CCS_ERR_INVALID;
}

void msccl_sb_printf(msccl_sb_t *b, const char *fmt, ...)
{
    va_list ap;
    int n;

    if (b->failed)
        return;
    for (;;) {
        size_t room = b->cap - b->len;
        va_start(ap, fmt);
        n = vsnprintf(b->data ? b->data + b->len : NULL, room, fmt, ap);
        va_end(ap);
        if (n < 0) {
            b->failed = 1;
            return;
        }
        if ((size_t)n < room) {
            b->len += (size_t)n;
            return;
        }
        size_t cap = b->cap ? b->cap * 2 : 4096;
        while (cap - b->len <= (size_t)n)
            cap *= 2;
        char *p = realloc(b->data, cap);
        if (p == NULL) {
            b->failed = 1;
            return;
        }
        b->data = p;
        b->cap = cap;
    }
}

void msccl_sb_free(msccl_sb_t *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

void msccl_export_opts_init(msccl_export_opts_t *o)
{
    memset(o, 0, sizeof(*o));
    o->proto = MSCCL_PROTO_SIMPLE;
    o->inplace = -1;
    o->outofplace = 1;
    o->max_tb_steps = MSCCL_MAX_TB_STEPS;
    o->max_tbs = MSCCL_RESIDENT_TBS;
    o->order_steps = 1;
}
