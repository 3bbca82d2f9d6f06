/* status.c - status strings, enum names and parsers, error messages. */
#include <stdio.h>
#include <string.h>

#include "ccs.h"
#include "err.h"

const char *ccs_strerror(ccs_status_t status)
{
    switch (status) {
#define CCS_X_MSG(name, value, msg) case CCS_##name: return msg;
        CCS_STATUS_LIST(CCS_X_MSG)
#undef CCS_X_MSG
    }
    return "unknown status";
}

const char *ccs_status_name(ccs_status_t status)
{
    switch (status) {
#define CCS_X_NAME(name, value, msg) case CCS_##name: return "CCS_" #name;
        CCS_STATUS_LIST(CCS_X_NAME)
#undef CCS_X_NAME
    }
    return "CCS_UNKNOWN";
}

static const char *const coll_names[CCS_COLL_COUNT] = {
    "allreduce", "reducescatter", "allgather", "reduce", "broadcast", "alltoall",
};
static const char *const dtype_names[CCS_DTYPE_COUNT] = {
    "float32", "float64", "float16", "bfloat16", "int32", "int64", "uint8",
};
static const size_t dtype_sizes[CCS_DTYPE_COUNT] = { 4, 8, 2, 2, 4, 8, 1 };
static const char *const redop_names[CCS_REDOP_COUNT] = {
    "sum", "prod", "min", "max", "avg",
};

const char *ccs_coll_str(ccs_coll_t coll)
{
    return ((unsigned)coll < CCS_COLL_COUNT) ? coll_names[coll] : "?";
}

const char *ccs_dtype_str(ccs_dtype_t dtype)
{
    return ((unsigned)dtype < CCS_DTYPE_COUNT) ? dtype_names[dtype] : "?";
}

const char *ccs_redop_str(ccs_redop_t op)
{
    return ((unsigned)op < CCS_REDOP_COUNT) ? redop_names[op] : "?";
}

size_t ccs_dtype_size(ccs_dtype_t dtype)
{
    return ((unsigned)dtype < CCS_DTYPE_COUNT) ? dtype_sizes[dtype] : 0;
}

static ccs_status_t parse_name(const char *name, const char *const *names,
                               int count, int *out)
{
    if (name == NULL || out == NULL)
        return CCS_ERR_INVALID;
    for (int i = 0; i < count; i++) {
        if (strcmp(name, names[i]) == 0) {
            *out = i;
            return CCS_OK;
        }
    }
    return CCS_ERR_INVALID;
}

ccs_status_t ccs_coll_parse(const char *name, ccs_coll_t *out)
{
    int v;
    ccs_status_t st = parse_name(name, coll_names, CCS_COLL_COUNT, &v);
    if (st == CCS_OK)
        *out = (ccs_coll_t)v;
    return st;
}

ccs_status_t ccs_dtype_parse(const char *name, ccs_dtype_t *out)
{
    int v;
    /* Accept the common aliases users type from NCCL / PyTorch habits. */
    static const struct { const char *alias; ccs_dtype_t t; } aliases[] = {
        { "float", CCS_FLOAT32 }, { "fp32", CCS_FLOAT32 },
        { "double", CCS_FLOAT64 }, { "fp64", CCS_FLOAT64 },
        { "half", CCS_FLOAT16 }, { "fp16", CCS_FLOAT16 },
        { "bf16", CCS_BFLOAT16 }, { "int", CCS_INT32 },
    };
    ccs_status_t st = parse_name(name, dtype_names, CCS_DTYPE_COUNT, &v);
    if (st == CCS_OK) {
        *out = (ccs_dtype_t)v;
        return CCS_OK;
    }
    if (name == NULL || out == NULL)
        return CCS_ERR_INVALID;
    for (size_t i = 0; i < sizeof(aliases) / sizeof(aliases[0]); i++) {
        if (strcmp(name, aliases[i].alias) == 0) {
            *out = aliases[i].t;
            return CCS_OK;
        }
    }
    return CCS_ERR_INVALID;
}

ccs_status_t ccs_redop_parse(const char *name, ccs_redop_t *out)
{
    int v;
    ccs_status_t st = parse_name(name, redop_names, CCS_REDOP_COUNT, &v);
    if (st == CCS_OK)
        *out = (ccs_redop_t)v;
    return st;
}

ccs_status_t ccs_err_vset(ccs_err_t *err, ccs_status_t status,
                          const char *fmt, va_list ap)
{
    if (err != NULL)
        vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
    return status;
}

ccs_status_t ccs_err_set(ccs_err_t *err, ccs_status_t status,
                         const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    ccs_err_vset(err, status, fmt, ap);
    va_end(ap);
    return status;
}

void ccs_err_prefix(ccs_err_t *err, const char *fmt, ...)
{
    char prefix[CCS_ERR_MSG_MAX];
    char old[CCS_ERR_MSG_MAX];
    va_list ap;

    if (err == NULL)
        return;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof(prefix), fmt, ap);
    va_end(ap);
    memcpy(old, err->msg, sizeof(old));
    /* Truncation is acceptable: the message is advisory. */
    size_t plen = strnlen(prefix, sizeof(err->msg) - 1);
    memcpy(err->msg, prefix, plen);
    size_t olen = strnlen(old, sizeof(err->msg) - 1 - plen);
    memcpy(err->msg + plen, old, olen);
    err->msg[plen + olen] = '\0';
}

void ccs_err_clear(ccs_err_t *err)
{
    if (err != NULL)
        err->msg[0] = '\0';
}

const char *ccs_err_msg(const ccs_err_t *err, ccs_status_t status)
{
    if (err != NULL && err->msg[0] != '\0')
        return err->msg;
    return ccs_strerror(status);
}
