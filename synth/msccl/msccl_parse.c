/*
 * msccl_parse.c - the first stage of the MSCCL importer (msccl_import.c):
 * error reporting, attribute readers, and parsing the XML document into
 * the thread-block program (gpus, thread blocks, steps) with the range and
 * executor-limit checks of check_program.
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

/* ---- errors ---- */

ccs_status_t msccl_fail(imp_t *m, ccs_status_t st, int line,
                         const char *fmt, ...)
{
    char msg[CCS_ERR_MSG_MAX];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (line > 0)
        return ccs_err_set(m->err, st, "%s:%d: %s", m->file, line, msg);
    return ccs_err_set(m->err, st, "%s: %s", m->file, msg);
}

/* "gpu 3 tb 2 step 5 (rrs)" */
void msccl_where(const imp_t *m, uint32_t si, char *buf, size_t len)
{
    const mstep_t *st = &m->steps[si];
    const mtb_t *tb = &m->tbs[st->tb];
    snprintf(buf, len, "gpu %u tb %d step %u (%s)", tb->gpu, tb->id,
             si - tb->first, msccl_type_str((msccl_type_t)st->type));
}

/* ---- attributes ---- */

static ccs_status_t check_elem(imp_t *m, xmlNodePtr n)
{
    int count = 0;
    for (xmlAttrPtr a = n->properties; a != NULL; a = a->next)
        count++;
    if (m->o->check_limits && count > MSCCL_MAX_ATTRS)
        return msccl_fail(m, CCS_ERR_UNSUPPORTED, (int)xmlGetLineNo(n),
                    "<%s> has %d attributes; the executor reads at most %d",
                    (const char *)n->name, count, MSCCL_MAX_ATTRS);
    return CCS_OK;
}

/* Copy attribute `name` into buf; *found false when absent. */
static ccs_status_t attr_str(imp_t *m, xmlNodePtr n, const char *name,
                             bool required, char *buf, size_t len,
                             bool *found)
{
    xmlChar *v = xmlGetProp(n, (const xmlChar *)name);
    int line = (int)xmlGetLineNo(n);

    *found = v != NULL;
    if (v == NULL) {
        if (required)
            return msccl_fail(m, CCS_ERR_PARSE, line,
                        "<%s> lacks the attribute '%s' (the executor "
                        "refuses the file)", (const char *)n->name, name);
        return CCS_OK;
    }
    size_t l = strlen((const char *)v);
    if (l > MSCCL_MAX_STR || l >= len) {
        xmlFree(v);
        return msccl_fail(m, CCS_ERR_UNSUPPORTED, line,
                          "<%s> attribute '%s' is %zu characters long; the "
                          "executor reads at most %d", (const char *)n->name,
                          name, l, MSCCL_MAX_STR);
    }
    memcpy(buf, v, l + 1);
    xmlFree(v);
    return CCS_OK;
}

static ccs_status_t attr_i64(imp_t *m, xmlNodePtr n, const char *name,
                             bool required, int64_t lo, int64_t hi,
                             int64_t *out, bool *found)
{
    char buf[MSCCL_MAX_STR + 1], *end;
    bool f;
    ccs_status_t st = attr_str(m, n, name, required, buf, sizeof(buf), &f);

    if (found != NULL)
        *found = f;
    if (st != CCS_OK || !f)
        return st;
    errno = 0;
    long long v = strtoll(buf, &end, 10);
    if (errno != 0 || end == buf || *end != '\0')
        return msccl_fail(m, CCS_ERR_PARSE, (int)xmlGetLineNo(n),
                          "<%s> %s=\"%s\" is not an integer",
                          (const char *)n->name, name, buf);
    if (v < lo || v > hi)
        return msccl_fail(m, CCS_ERR_PARSE, (int)xmlGetLineNo(n),
                          "<%s> %s=\"%lld\" is out of range %lld..%lld",
                          (const char *)n->name, name, v, (long long)lo,
                          (long long)hi);
    *out = v;
    return CCS_OK;
}

static ccs_status_t attr_i32(imp_t *m, xmlNodePtr n, const char *name,
                             int64_t lo, int64_t hi, int32_t *out)
{
    int64_t v;
    ccs_status_t st = attr_i64(m, n, name, true, lo, hi, &v, NULL);
    if (st == CCS_OK)
        *out = (int32_t)v;
    return st;
}

static ccs_status_t parse_buf(imp_t *m, xmlNodePtr n, const char *name,
                              uint8_t *out)
{
    char buf[MSCCL_MAX_STR + 1];
    bool f;
    ccs_status_t st = attr_str(m, n, name, true, buf, sizeof(buf), &f);

    if (st != CCS_OK)
        return st;
    if (strcmp(buf, "i") == 0 || strcmp(buf, "input") == 0)
        *out = MSCCL_BUF_I;
    else if (strcmp(buf, "o") == 0 || strcmp(buf, "output") == 0)
        *out = MSCCL_BUF_O;
    else if (strcmp(buf, "s") == 0 || strcmp(buf, "scratch") == 0)
        *out = MSCCL_BUF_S;
    else
        return msccl_fail(m, CCS_ERR_PARSE, (int)xmlGetLineNo(n),
                          "%s=\"%s\" is not a buffer (i, o or s)", name, buf);
    return CCS_OK;
}

/* ---- parsing ---- */

static bool is_elem(xmlNodePtr n)
{
    return n->type == XML_ELEMENT_NODE;
}

static ccs_status_t unexpected(imp_t *m, xmlNodePtr n, const char *want,
                               const char *in)
{
    return msccl_fail(m, CCS_ERR_PARSE, (int)xmlGetLineNo(n),
                      "unexpected element <%s> in <%s> (expected <%s>)",
                      (const char *)n->name, in, want);
}

static ccs_status_t parse_step(imp_t *m, xmlNodePtr n, uint32_t tbi,
                               uint32_t pos)
{
    const mtb_t *tb = &m->tbs[tbi];
    const mgpu_t *g = &m->gpus[tb->gpu];
    char tbuf[MSCCL_MAX_STR + 1];
    int line = (int)xmlGetLineNo(n);
    int32_t s;
    bool f;
    ccs_status_t st;

    if (m->nsteps == m->stepcap) {
        uint32_t cap = m->stepcap ? m->stepcap * 2 : 256;
        mstep_t *p = realloc(m->steps, cap * sizeof(*p));
        if (p == NULL)
            return ccs_err_set(m->err, CCS_ERR_NOMEM, "out of memory");
        m->steps = p;
        m->stepcap = cap;
    }
    mstep_t *x = &m->steps[m->nsteps];
    memset(x, 0, sizeof(*x));
    x->line = line;
    x->tb = tbi;
    x->rpart = x->spart = -1;
    if ((st = check_elem(m, n)) != CCS_OK ||
        (st = attr_i32(m, n, "s", INT32_MIN, INT32_MAX, &s)) != CCS_OK ||
        (st = attr_str(m, n, "type", true, tbuf, sizeof(tbuf), &f)) !=
            CCS_OK ||
        (st = parse_buf(m, n, "srcbuf", &x->srcbuf)) != CCS_OK ||
        (st = parse_buf(m, n, "dstbuf", &x->dstbuf)) != CCS_OK ||
        (st = attr_i32(m, n, "srcoff", INT32_MIN, INT32_MAX, &x->srcoff)) !=
            CCS_OK ||
        (st = attr_i32(m, n, "dstoff", INT32_MIN, INT32_MAX, &x->dstoff)) !=
            CCS_OK ||
        (st = attr_i32(m, n, "cnt", INT32_MIN, INT32_MAX, &x->cnt)) !=
            CCS_OK ||
        (st = attr_i32(m, n, "depid", INT32_MIN, INT32_MAX, &x->depid)) !=
            CCS_OK ||
        (st = attr_i32(m, n, "deps", INT32_MIN, INT32_MAX, &x->deps)) !=
            CCS_OK)
        return st;
    int32_t hd;
    if ((st = attr_i32(m, n, "hasdep", 0, 1, &hd)) != CCS_OK)
        return st;
    x->hasdep = (uint8_t)hd;
    msccl_type_t t = msccl_type_parse(tbuf);
    if (t == MSCCL_T_COUNT)
        return msccl_fail(m, CCS_ERR_PARSE, line,
                    "gpu %u tb %d step %d: unknown "
                    "type \"%s\" (s, r, rcs, rrs, rrc, rrcs, cpy, re, nop)",
                    tb->gpu, tb->id, s, tbuf);
    x->type = (uint8_t)t;
    if (s != (int32_t)pos)
        return msccl_fail(m, CCS_ERR_PARSE, line,
                          "gpu %u tb %d: step s=\"%d\" "
                          "is the tb's step number %u; steps must be numbered "
                          "0, 1, ... in order", tb->gpu, tb->id, s, pos);
    if (m->o->check_limits && m->o->max_tb_steps > 0 &&
        pos >= m->o->max_tb_steps)
        return msccl_fail(m, CCS_ERR_UNSUPPORTED, line,
                    "gpu %u tb %d step %d: "
                    "more than %u steps in one thread block (the executor's "
                    "MSCCL_MAX_NUM_STEPS; --max-steps 256 for runtimes "
                    "built with 256)", tb->gpu, tb->id, s,
                    m->o->max_tb_steps);
    if (msccl_type_sends(t) && tb->send < 0)
        return msccl_fail(m, CCS_ERR_PARSE, line,
                    "gpu %u tb %d step %d: %s sends "
                    "but the thread block has send=\"-1\"", tb->gpu, tb->id,
                    s, tbuf);
    if (msccl_type_recvs(t) && tb->recv < 0)
        return msccl_fail(m, CCS_ERR_PARSE, line, "gpu %u tb %d step %d: %s "
                          "receives but the thread block has recv=\"-1\"",
                          tb->gpu, tb->id, s, tbuf);
    if (t != MSCCL_T_NOP) {
        if (x->cnt < 1 || (m->o->check_limits && x->cnt >= MSCCL_MAX_COUNT))
            return msccl_fail(m,
                              x->cnt < 1 ? CCS_ERR_PARSE : CCS_ERR_UNSUPPORTED,
                              line, "gpu %u tb %d step %d: cnt=\"%d\" must be "
                              "1..%d", tb->gpu, tb->id, s, x->cnt,
                              MSCCL_MAX_COUNT - 1);
        /* The operands each type uses, as the executor reads them. */
        bool use_src = t == MSCCL_T_SEND || t == MSCCL_T_RRS ||
                       t == MSCCL_T_RRC || t == MSCCL_T_RRCS ||
                       t == MSCCL_T_CPY || t == MSCCL_T_RE;
        bool use_dst = t == MSCCL_T_RECV || t == MSCCL_T_RCS ||
                       t == MSCCL_T_RRC || t == MSCCL_T_RRCS ||
                       t == MSCCL_T_CPY || t == MSCCL_T_RE;
        int32_t size[3] = { g->ichunks, g->ochunks, g->schunks };
        static const char *const bn[3] = { "i", "o", "s" };
        static const char *const bc[3] = { "i_chunks", "o_chunks",
                                           "s_chunks" };
        if (use_src && (x->srcoff < 0 ||
                        (int64_t)x->srcoff + x->cnt > size[x->srcbuf]))
            return msccl_fail(m, CCS_ERR_PARSE, line,
                        "gpu %u tb %d step %d (%s): "
                        "source %s[%d..%d] is outside the buffer (%s=%d)",
                        tb->gpu, tb->id, s, tbuf, bn[x->srcbuf], x->srcoff,
                        x->srcoff + x->cnt - 1, bc[x->srcbuf],
                        size[x->srcbuf]);
        if (use_dst && (x->dstoff < 0 ||
                        (int64_t)x->dstoff + x->cnt > size[x->dstbuf]))
            return msccl_fail(m, CCS_ERR_PARSE, line,
                        "gpu %u tb %d step %d (%s): "
                        "destination %s[%d..%d] is outside the buffer "
                        "(%s=%d)", tb->gpu, tb->id, s, tbuf, bn[x->dstbuf],
                        x->dstoff, x->dstoff + x->cnt - 1, bc[x->dstbuf],
                        size[x->dstbuf]);
    }
    if (x->depid < -1 || (x->depid >= 0 && x->deps < 0))
        return msccl_fail(m, CCS_ERR_PARSE, line, "gpu %u tb %d step %d: "
                    "depid=\"%d\" deps=\"%d\" is not a dependency (-1 -1 "
                    "for none)", tb->gpu, tb->id, s, x->depid, x->deps);
    m->nsteps++;
    return CCS_OK;
}

static ccs_status_t parse_tb(imp_t *m, xmlNodePtr n, uint32_t gpu)
{
    int line = (int)xmlGetLineNo(n);
    ccs_status_t st;

    if (m->ntbs == m->tbcap) {
        uint32_t cap = m->tbcap ? m->tbcap * 2 : 64;
        mtb_t *p = realloc(m->tbs, cap * sizeof(*p));
        if (p == NULL)
            return ccs_err_set(m->err, CCS_ERR_NOMEM, "out of memory");
        m->tbs = p;
        m->tbcap = cap;
    }
    mtb_t *tb = &m->tbs[m->ntbs];
    memset(tb, 0, sizeof(*tb));
    tb->gpu = gpu;
    tb->line = line;
    if ((st = check_elem(m, n)) != CCS_OK ||
        (st = attr_i32(m, n, "id", 0, INT32_MAX, &tb->id)) != CCS_OK ||
        (st = attr_i32(m, n, "send", INT32_MIN, INT32_MAX, &tb->send)) !=
            CCS_OK ||
        (st = attr_i32(m, n, "recv", INT32_MIN, INT32_MAX, &tb->recv)) !=
            CCS_OK ||
        (st = attr_i32(m, n, "chan", INT32_MIN, INT32_MAX, &tb->chan)) !=
            CCS_OK)
        return st;
    if (tb->send < -1 || tb->send >= (int32_t)m->R || tb->recv < -1 ||
        tb->recv >= (int32_t)m->R)
        return msccl_fail(m, CCS_ERR_PARSE, line,
                    "gpu %u tb %d: peer send=\"%d\" "
                    "recv=\"%d\" out of range (-1 or 0..%u)", gpu, tb->id,
                    tb->send, tb->recv, m->R - 1);
    if (tb->send == (int32_t)gpu || tb->recv == (int32_t)gpu)
        return msccl_fail(m, CCS_ERR_PARSE, line,
                          "gpu %u tb %d: a thread block "
                          "cannot send to or receive from its own gpu", gpu,
                          tb->id);
    if (tb->chan < 0 || tb->chan >= (int32_t)m->nch)
        return msccl_fail(m, CCS_ERR_PARSE, line, "gpu %u tb %d: chan=\"%d\" "
                          "outside 0..%u (nchannels=\"%u\")", gpu, tb->id,
                          tb->chan, m->nch - 1, m->nch);
    uint32_t tbi = m->ntbs++;
    m->tbs[tbi].first = m->nsteps;
    uint32_t pos = 0;
    for (xmlNodePtr c = n->children; c != NULL; c = c->next) {
        if (!is_elem(c))
            continue;
        if (strcmp((const char *)c->name, "step") != 0)
            return unexpected(m, c, "step", "tb");
        st = parse_step(m, c, tbi, pos++);
        if (st != CCS_OK)
            return st;
    }
    m->tbs[tbi].n = pos;
    return CCS_OK;
}

static int tb_cmp(const void *a, const void *b)
{
    const mtb_t *x = a, *y = b;
    if (x->gpu != y->gpu)
        return x->gpu < y->gpu ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

static ccs_status_t parse_gpu(imp_t *m, xmlNodePtr n)
{
    int line = (int)xmlGetLineNo(n);
    int32_t id;
    ccs_status_t st;

    if ((st = check_elem(m, n)) != CCS_OK ||
        (st = attr_i32(m, n, "id", INT32_MIN, INT32_MAX, &id)) != CCS_OK)
        return st;
    if (id < 0 || id >= (int32_t)m->R)
        return msccl_fail(m, CCS_ERR_PARSE, line, "gpu id=\"%d\" out of range "
                          "0..%u (ngpus=\"%u\")", id, m->R - 1, m->R);
    mgpu_t *g = &m->gpus[id];
    if (g->seen)
        return msccl_fail(m, CCS_ERR_PARSE, line,
                          "gpu %d appears twice (first "
                          "at line %d)", id, g->line);
    g->seen = true;
    g->line = line;
    /* What each buffer can hold: a blocked collective's per-rank side is
     * one block. */
    uint32_t imax = m->coll == CCS_COLL_ALLGATHER ? m->B : m->C;
    uint32_t omax = m->coll == CCS_COLL_REDUCESCATTER ? m->B : m->C;
    if ((st = attr_i32(m, n, "i_chunks", 0, imax, &g->ichunks)) != CCS_OK ||
        (st = attr_i32(m, n, "o_chunks", 0, omax, &g->ochunks)) != CCS_OK ||
        (st = attr_i32(m, n, "s_chunks", 0, CCS_MAX_CHUNKS, &g->schunks)) !=
            CCS_OK) {
        ccs_err_prefix(m->err, "(a %s of %u chunks per loop on %u gpus "
                       "holds %u input and %u output chunks per gpu) ",
                       ccs_coll_str(m->coll), m->C, m->R, imax, omax);
        return st;
    }
    uint32_t first_tb = m->ntbs, first_step = m->nsteps;
    for (xmlNodePtr c = n->children; c != NULL; c = c->next) {
        if (!is_elem(c))
            continue;
        if (strcmp((const char *)c->name, "tb") != 0)
            return unexpected(m, c, "tb", "gpu");
        st = parse_tb(m, c, (uint32_t)id);
        if (st != CCS_OK)
            return st;
    }
    /* The executor's parser holds the algo element, every gpu element
     * and this gpu's tb and step elements, and fails on reaching
     * MSCCL_MAX_ELEMS_PER_RANK. */
    uint32_t elems = 1 + m->R + (m->ntbs - first_tb) +
                     (m->nsteps - first_step);
    if (m->o->check_limits && elems >= MSCCL_MAX_ELEMS_PER_RANK)
        return msccl_fail(m, CCS_ERR_UNSUPPORTED, line, "gpu %d needs %u XML "
                    "elements (the algo, %u gpu, its tb and step elements); "
                    "the executor's parser holds fewer than %d", id, elems,
                    m->R, MSCCL_MAX_ELEMS_PER_RANK);
    uint32_t ntb = m->ntbs - first_tb;
    if (m->o->check_limits && m->o->max_tbs > 0 && ntb > m->o->max_tbs)
        return msccl_fail(m, CCS_ERR_UNSUPPORTED, line, "gpu %d has %u thread "
                    "blocks, more than the %u that can be resident at once "
                    "(the executor's blocks wait for each other, one per "
                    "SM); --max-tbs N for a GPU with N SMs", id, ntb,
                    m->o->max_tbs);
    g->first_tb = first_tb;
    g->ntb = m->ntbs - first_tb;
    return CCS_OK;
}

ccs_status_t msccl_parse_algo(imp_t *m, xmlNodePtr root)
{
    char buf[MSCCL_MAX_STR + 1];
    int line = (int)xmlGetLineNo(root);
    int64_t v;
    bool f;
    ccs_status_t st;

    if (strcmp((const char *)root->name, "algo") != 0)
        return msccl_fail(m, CCS_ERR_PARSE, line,
                          "the root element is <%s>, not "
                          "<algo>", (const char *)root->name);
    if ((st = check_elem(m, root)) != CCS_OK)
        return st;
    st = attr_str(m, root, "name", false, m->info.name, sizeof(m->info.name),
                  &f);
    if (st != CCS_OK)
        return st;
    if ((st = attr_str(m, root, "proto", true, buf, sizeof(buf), &f)) !=
        CCS_OK)
        return st;
    if (msccl_proto_parse(buf, &m->info.proto) != CCS_OK)
        return msccl_fail(m, CCS_ERR_PARSE, line,
                          "proto=\"%s\" is not Simple, LL "
                          "or LL128", buf);
    if ((st = attr_str(m, root, "coll", true, buf, sizeof(buf), &f)) !=
        CCS_OK)
        return st;
    if (ccs_coll_parse(buf, &m->coll) != CCS_OK)
        return msccl_fail(m, CCS_ERR_UNSUPPORTED, line, "coll=\"%s\": ccsynth "
                    "models allreduce, reducescatter, allgather, reduce, "
                    "broadcast and alltoall", buf);
    if ((st = attr_i64(m, root, "ngpus", true, 1, CCS_MAX_RANKS, &v,
                       NULL)) != CCS_OK)
        return st;
    m->R = (uint32_t)v;
    if ((st = attr_i64(m, root, "nchunksperloop", true, 1, CCS_MAX_CHUNKS,
                       &v, NULL)) != CCS_OK)
        return st;
    m->C = (uint32_t)v;
    if ((st = attr_i64(m, root, "nchannels", true, 1, MSCCL_MAX_CHANNELS,
                       &v, NULL)) != CCS_OK)
        return st;
    m->nch = (uint32_t)v;
    if ((st = attr_i64(m, root, "inplace", true, 0, 1, &v, NULL)) != CCS_OK)
        return st;
    m->inplace = v == 1;
    if ((st = attr_i64(m, root, "outofplace", true, 0, 1, &v, NULL)) !=
        CCS_OK)
        return st;
    m->outofplace = v == 1;
    if ((st = attr_i64(m, root, "minBytes", true, 0, INT64_MAX, &v, NULL)) !=
        CCS_OK)
        return st;
    m->info.min_bytes = (uint64_t)v;
    if ((st = attr_i64(m, root, "maxBytes", true, 0, INT64_MAX, &v, NULL)) !=
        CCS_OK)
        return st;
    m->info.max_bytes = (uint64_t)v;
    m->root = -1;
    if (ccs_coll_rooted(m->coll)) {
        m->root = 0;
        if ((st = attr_i64(m, root, "root", false, 0, m->R - 1, &v, &f)) !=
            CCS_OK)
            return st;
        if (f)
            m->root = (int32_t)v;
    }
    if (!m->inplace && !m->outofplace)
        return msccl_fail(m, CCS_ERR_PARSE, line, "inplace=\"0\" and "
                          "outofplace=\"0\": no call would ever use it");
    if (ccs_coll_blocked(m->coll) && m->C % m->R != 0)
        return msccl_fail(m, CCS_ERR_PARSE, line,
                    "nchunksperloop=\"%u\" is not a "
                    "multiple of ngpus=\"%u\", which a %s needs (each gpu "
                    "owns nchunksperloop/ngpus chunks)", m->C, m->R,
                    ccs_coll_str(m->coll));
    if (m->info.max_bytes != 0 && m->info.max_bytes < m->info.min_bytes)
        return msccl_fail(m, CCS_ERR_PARSE, line,
                          "maxBytes=\"%" PRIu64 "\" is "
                          "below minBytes=\"%" PRIu64 "\": no call fits",
                          m->info.max_bytes, m->info.min_bytes);
    /* The layout keeps a flag per (gpu, chunk): bound it. */
    if ((uint64_t)m->R * m->C > (1u << 26))
        return msccl_fail(m, CCS_ERR_UNSUPPORTED, line, "ngpus=\"%u\" x "
                    "nchunksperloop=\"%u\" chunks: more than ccsynth lays "
                    "out (%u)", m->R, m->C, 1u << 26);
    m->B = ccs_coll_block(m->coll, m->R, m->C);
    /* Out-of-place when the file allows it: it has distinct i and o. */
    m->as_inplace = !m->outofplace;
    m->gpus = calloc(m->R, sizeof(*m->gpus));
    if (m->gpus == NULL)
        return ccs_err_set(m->err, CCS_ERR_NOMEM, "out of memory");
    for (xmlNodePtr c = root->children; c != NULL; c = c->next) {
        if (!is_elem(c))
            continue;
        if (strcmp((const char *)c->name, "gpu") != 0)
            return unexpected(m, c, "gpu", "algo");
        st = parse_gpu(m, c);
        if (st != CCS_OK)
            return st;
    }
    for (uint32_t r = 0; r < m->R; r++)
        if (!m->gpus[r].seen)
            return msccl_fail(m, CCS_ERR_PARSE, line,
                              "ngpus=\"%u\" but gpu %u "
                              "has no <gpu> element", m->R, r);
    return CCS_OK;
}

/* Thread-block ids, connections, dependencies, per-channel limits. */
ccs_status_t msccl_check_program(imp_t *m)
{
    ccs_status_t st = CCS_OK;
    int32_t *own = NULL;     /* owned: [2 * nch * R] tb owning a connection */

    /* tbs are stored gpu by gpu in file order; sort each gpu's by id and
     * fix the step back-pointers. */
    qsort(m->tbs, m->ntbs, sizeof(*m->tbs), tb_cmp);
    for (uint32_t t = 0; t < m->ntbs; t++)
        for (uint32_t k = 0; k < m->tbs[t].n; k++)
            m->steps[m->tbs[t].first + k].tb = t;
    for (uint32_t t = 0; t < m->ntbs; t++) {
        mtb_t *tb = &m->tbs[t];
        if (t == 0 || m->tbs[t - 1].gpu != tb->gpu)
            m->gpus[tb->gpu].first_tb = t;
        int32_t want = (int32_t)(t - m->gpus[tb->gpu].first_tb);
        if (tb->id != want)
            return msccl_fail(m, CCS_ERR_PARSE, tb->line,
                        "gpu %u: thread block "
                        "id=\"%d\" where %d was expected: ids must be 0..%u "
                        "with no gap or repeat", tb->gpu, tb->id, want,
                        m->gpus[tb->gpu].ntb - 1);
    }
    own = malloc(2 * (size_t)m->nch * m->R * sizeof(*own));
    if (own == NULL)
        return ccs_err_set(m->err, CCS_ERR_NOMEM, "out of memory");
    for (uint32_t r = 0; r < m->R; r++) {
        const mgpu_t *g = &m->gpus[r];
        uint32_t nsend[MSCCL_MAX_CHANNELS] = { 0 };
        uint32_t nrecv[MSCCL_MAX_CHANNELS] = { 0 };
        for (size_t k = 0; k < 2 * (size_t)m->nch * m->R; k++)
            own[k] = -1;
        for (uint32_t t = g->first_tb; t < g->first_tb + g->ntb; t++) {
            const mtb_t *tb = &m->tbs[t];
            for (int d = 0; d < 2; d++) {
                int32_t peer = d == 0 ? tb->send : tb->recv;
                if (peer < 0)
                    continue;
                int32_t *o = &own[((size_t)d * m->nch + (uint32_t)tb->chan) *
                                      m->R + (uint32_t)peer];
                if (*o >= 0) {
                    st = msccl_fail(m, CCS_ERR_PARSE, tb->line, "gpu %u tb %d "
                              "%s gpu %d on channel %d, which tb %d already "
                              "does: a connection belongs to one thread "
                              "block", r, tb->id,
                              d == 0 ? "sends to" : "receives from", peer,
                              tb->chan, m->tbs[*o].id);
                    goto cleanup;
                }
                *o = (int32_t)t;
                uint32_t *cnt = d == 0 ? nsend : nrecv;
                if (m->o->check_limits &&
                    ++cnt[tb->chan] > MSCCL_MAX_TB_PER_CHANNEL) {
                    st = msccl_fail(m, CCS_ERR_UNSUPPORTED, tb->line,
                              "gpu %u: "
                              "more than %d %s thread blocks on channel %d "
                              "(the executor's limit)", r,
                              MSCCL_MAX_TB_PER_CHANNEL,
                              d == 0 ? "sending" : "receiving", tb->chan);
                    goto cleanup;
                }
            }
            /* dependencies */
            bool pending = false;
            for (uint32_t k = 0; k < tb->n; k++) {
                mstep_t *x = &m->steps[tb->first + k];
                if (x->depid >= 0) {
                    if (m->o->check_limits &&
                        x->depid > MSCCL_MAX_WAITED_TB) {
                        st = msccl_fail(m, CCS_ERR_UNSUPPORTED, x->line,
                                  "gpu %u tb %d step %u: depid=\"%d\": the "
                                  "executor keeps it in 8 bits, so only "
                                  "thread blocks 0..%d can be waited for",
                                  r, tb->id, k, x->depid,
                                  MSCCL_MAX_WAITED_TB);
                        goto cleanup;
                    }
                    if ((uint32_t)x->depid >= g->ntb) {
                        st = msccl_fail(m, CCS_ERR_PARSE, x->line,
                                  "gpu %u tb %d "
                                  "step %u: depid=\"%d\" names no thread "
                                  "block (the gpu has %u)", r, tb->id, k,
                                  x->depid, g->ntb);
                        goto cleanup;
                    }
                    const mtb_t *dt = &m->tbs[g->first_tb + (uint32_t)x->depid];
                    if ((uint32_t)x->deps >= dt->n) {
                        st = msccl_fail(m, CCS_ERR_PARSE, x->line,
                                  "gpu %u tb %d "
                                  "step %u: deps=\"%d\" but tb %d has %u "
                                  "steps", r, tb->id, k, x->deps, x->depid,
                                  dt->n);
                        goto cleanup;
                    }
                    const mstep_t *ds = &m->steps[dt->first +
                                                  (uint32_t)x->deps];
                    if (x->depid == tb->id && (uint32_t)x->deps >= k) {
                        st = msccl_fail(m, CCS_ERR_VERIFY, x->line,
                                  "deadlock: "
                                  "gpu %u tb %d step %u waits for step %d "
                                  "of its own thread block, which runs "
                                  "after it", r, tb->id, k, x->deps);
                        goto cleanup;
                    }
                    if (!ds->hasdep && x->depid != tb->id) {
                        st = msccl_fail(m, CCS_ERR_VERIFY, x->line,
                                        "deadlock: "
                                        "gpu %u tb %d step %u waits for tb %d "
                                        "step %d (line %d), which has "
                                        "hasdep=\"0\": the executor publishes "
                                        "completion only for steps with "
                                        "hasdep=\"1\", so the wait never ends",
                                        r, tb->id, k, x->depid, x->deps,
                                        ds->line);
                        goto cleanup;
                    }
                }
                if (x->type == MSCCL_T_NOP) {
                    pending = pending || x->depid >= 0;
                } else {
                    if (pending && x->depid < 0 && m->o->check_limits) {
                        st = msccl_fail(m, CCS_ERR_UNSUPPORTED, x->line,
                                  "gpu %u "
                                  "tb %d step %u follows nop steps with "
                                  "dependencies but has none itself: the "
                                  "executor refuses that (the last "
                                  "dependency of a chain must be on the "
                                  "step itself)", r, tb->id, k);
                        goto cleanup;
                    }
                    pending = false;
                }
            }
        }
    }

cleanup:
    free(own);
    return st;
}
