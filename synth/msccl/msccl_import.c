/*
 * msccl_import.c - MSCCL algorithm XML -> schedule IR, with the checks the
 * executor does not make.
 *
 * 1. Parse (libxml2, one parser context per call) into gpus, thread blocks
 *    and steps, checking every attribute the executor requires, every range
 *    (peers, channels, offsets against i/o/s_chunks, dependencies) and the
 *    executor's limits (docs/msccl.md).
 * 2. Split each step into parts: R (its receive), S (its send), L (a local
 *    copy/reduce), N (a nop).  rcs/rrs/rrcs are R then S.  Match the k-th
 *    S on connection (a -> b, channel c) with the k-th R on b's thread block
 *    receiving from a on c (FIFO); different counts or cnt on the two sides
 *    are a GPU deadlock (or wrong data) and are reported as such.
 * 3. Order: a part comes after its thread block's previous part and after
 *    its dependency (depid/deps): one IR step later when the earlier part
 *    writes (its data lands at the end of an IR step), in the same step
 *    when it only sends and the later part does not overwrite what it sent
 *    (sends do not block: the executor sizes chunks to its FIFO).  Matched
 *    S and R are one node (one IR step).  A cycle with a "one step later"
 *    edge cannot be laid out in time: on the GPU every step in it waits for
 *    another one in it, i.e. a deadlock, reported with the steps involved.
 *    Levels are longest paths over the strongly connected components.
 * 4. Lay out level L as IR steps 2L (copies that materialise an in-place
 *    chunk before a local reduce into it) and 2L+1, empty steps dropped.
 *    Buffers: out-of-place, i -> IN, o -> OUT, s -> SCRATCH; in-place, i
 *    and o are one buffer (allgather: i is the rank's block of o;
 *    reducescatter: o is the rank's block of i) whose chunk reads IN until
 *    written and OUT after.  Writes where the IR has no OUT chunk (another
 *    rank's block of a reducescatter, a write to an out-of-place input) go
 *    to scratch shadows; rrs's forwarded sum goes to a scratch temporary.
 *
 * Not checked: races between thread blocks not ordered by any dependency
 * (the layout picks one order); the verifier then judges that order.
 *
 * Cost: O(steps * cnt) time and memory.
 *
 * Files: msccl_parse.c (1), msccl_order.c (2, 3), msccl_regroup.c (3,
 * regroup), msccl_layout.c (4); this file holds the entry points.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libxml/parser.h>
#include <libxml/tree.h>

#include "msccl.h"
#include "msccl_int.h"
#include "verify.h"

void msccl_import_opts_init(msccl_import_opts_t *o)
{
    o->max_tb_steps = MSCCL_MAX_TB_STEPS;
    o->max_tbs = MSCCL_RESIDENT_TBS;
    o->check_limits = true;
}

/* ---- entry points ---- */

static void imp_free(imp_t *m)
{
    free(m->gpus);
    free(m->tbs);
    free(m->steps);
    free(m->parts);
    free(m->edges);
    free(m->partner);
}

ccs_status_t msccl_import_mem(const char *buf, size_t len, const char *name,
                              const msccl_import_opts_t *o,
                              ccs_sched_t **out, msccl_import_info_t *info,
                              ccs_err_t *err)
{
    msccl_import_opts_t defo;
    imp_t m;
    xmlParserCtxtPtr ctx = NULL;  /* owned */
    xmlDocPtr doc = NULL;         /* owned */
    ccs_sched_t *s = NULL;        /* owned until handed out */
    uint32_t *level = NULL;       /* owned */
    ccs_status_t st;

    memset(&m, 0, sizeof(m));
    if (o == NULL) {
        msccl_import_opts_init(&defo);
        o = &defo;
    }
    m.file = name != NULL ? name : "(memory)";
    m.err = err;
    m.o = o;
    if (len > INT_MAX)
        return msccl_fail(&m, CCS_ERR_UNSUPPORTED, 0, "%zu bytes: too large",
                          len);
    ctx = xmlNewParserCtxt();
    if (ctx == NULL)
        return ccs_err_set(err, CCS_ERR_NOMEM, "out of memory");
    /* No network, no entity substitution, no messages on stderr: errors
     * come back through the context. */
    doc = xmlCtxtReadMemory(ctx, buf, (int)len, m.file, NULL,
                            XML_PARSE_NONET | XML_PARSE_NOERROR |
                                XML_PARSE_NOWARNING | XML_PARSE_BIG_LINES);
    if (doc == NULL) {
        xmlErrorPtr e = xmlCtxtGetLastError(ctx);
        char msg[256] = "unreadable";
        if (e != NULL && e->message != NULL) {
            snprintf(msg, sizeof(msg), "%s", e->message);
            size_t ml = strlen(msg);
            while (ml > 0 && (msg[ml - 1] == '\n' || msg[ml - 1] == ' '))
                msg[--ml] = '\0';
        }
        st = msccl_fail(&m, CCS_ERR_PARSE, e != NULL ? e->line : 0,
                        "malformed XML: %s", msg);
        goto cleanup;
    }
    xmlNodePtr root = xmlDocGetRootElement(doc);
    if (root == NULL) {
        st = msccl_fail(&m, CCS_ERR_PARSE, 0, "no root element");
        goto cleanup;
    }
    st = msccl_parse_algo(&m, root);
    if (st == CCS_OK)
        st = msccl_check_program(&m);
    if (st == CCS_OK)
        st = msccl_build_parts(&m);
    if (st == CCS_OK)
        st = msccl_match(&m);
    m.nedges_base = m.nedges;
    m.strict = true;
    if (st == CCS_OK)
        st = msccl_build_order(&m);
    bool laid = false;
    if (st == CCS_OK) {
        st = msccl_levels(&m, &level);
        laid = true;
    }
    if (st == CCS_ERR_VERIFY && laid) {
        /* Lock-step order does not fit (e.g. an in-place alltoall's
         * receives wait for the rank's own sends): the GPU only needs
         * sends issued before their receives complete. */
        m.strict = false;
        st = msccl_build_order(&m);
        if (st == CCS_OK)
            st = msccl_levels(&m, &level);
    }
    if (st == CCS_OK)
        st = msccl_regroup(&m, level);
    if (st != CCS_OK)
        goto cleanup;
    st = ccs_sched_create(m.coll, m.R, m.C, "msccl", &s, err);
    if (st != CCS_OK)
        goto cleanup;
    s->root = m.root;
    st = msccl_layout(&m, level, s);
    if (st != CCS_OK)
        goto cleanup;
    {
        char params[3 * MSCCL_MAX_STR + 256], nm[MSCCL_MAX_STR + 1];
        snprintf(nm, sizeof(nm), "%s", m.info.name);
        for (char *p = nm; *p; p++)
            if ((unsigned char)*p < 0x20 || *p == 0x7f)
                *p = '_';
        snprintf(params, sizeof(params), "algo=msccl\ncoll=%s\n"
                 "msccl_name=%s\nproto=%s\nnchannels=%u\n"
                 "inplace=%d\noutofplace=%d\nminBytes=%" PRIu64 "\n"
                 "maxBytes=%" PRIu64 "\n", ccs_coll_str(m.coll), nm,
                 msccl_proto_str(m.info.proto), m.nch, m.inplace ? 1 : 0,
                 m.outofplace ? 1 : 0, m.info.min_bytes, m.info.max_bytes);
        st = ccs_sched_set_params(s, params, err);
    }
    if (st == CCS_OK)
        st = ccs_sched_finalize(s, err);
    if (st == CCS_OK)
        st = ccs_sched_validate(s, err);
    if (st != CCS_OK) {
        ccs_err_prefix(err, "%s: ", m.file);
        goto cleanup;
    }
    if (info != NULL) {
        m.info.nchannels = m.nch;
        m.info.ngpus = m.R;
        m.info.nchunksperloop = m.C;
        m.info.inplace = m.inplace;
        m.info.outofplace = m.outofplace;
        m.info.nsteps = m.nsteps;
        m.info.ntbs = m.ntbs;
        for (uint32_t t = 0; t < m.ntbs; t++)
            if (m.tbs[t].n > m.info.max_tb_steps)
                m.info.max_tb_steps = m.tbs[t].n;
        *info = m.info;
    }
    *out = s;   /* ownership moves to the caller */
    s = NULL;

cleanup:
    ccs_sched_destroy(s);
    free(level);
    imp_free(&m);
    if (doc != NULL)
        xmlFreeDoc(doc);
    xmlFreeParserCtxt(ctx);
    return st;
}

ccs_status_t msccl_import_file(const char *path, const msccl_import_opts_t *o,
                               ccs_sched_t **out, msccl_import_info_t *info,
                               ccs_err_t *err)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;   /* owned */
    size_t len = 0, cap = 0;
    ccs_status_t st;

    if (f == NULL)
        return ccs_err_set(err, CCS_ERR_IO, "%s: cannot open: %s", path,
                           strerror(errno));
    for (;;) {
        if (cap - len < 65536) {
            size_t nc = cap ? 2 * cap : 65536;
            char *p = realloc(buf, nc);
            if (p == NULL) {
                fclose(f);
                free(buf);
                return ccs_err_set(err, CCS_ERR_NOMEM, "out of memory");
            }
            buf = p;
            cap = nc;
        }
        size_t k = fread(buf + len, 1, cap - len, f);
        len += k;
        if (k == 0)
            break;
    }
    if (ferror(f)) {
        fclose(f);
        free(buf);
        return ccs_err_set(err, CCS_ERR_IO, "%s: read error", path);
    }
    fclose(f);
    st = msccl_import_mem(buf, len, path, o, out, info, err);
    free(buf);
    return st;
}

int msccl_fuzz_one(const uint8_t *data, size_t size)
{
    ccs_sched_t *s = NULL;
    ccs_err_t err;
    msccl_import_opts_t o;

    msccl_import_opts_init(&o);
    if (msccl_import_mem((const char *)data, size, "fuzz", &o, &s, NULL,
                         &err) == CCS_OK)
        (void)verify_sched(s, NULL, &err);
    ccs_sched_destroy(s);
    return 0;
}
