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
    o->check_limits = true;
}

typedef struct mstep {
    uint8_t type;           /* msccl_type_t */
    uint8_t srcbuf, dstbuf; /* MSCCL_BUF_* */
    uint8_t hasdep;
    int32_t srcoff, dstoff, cnt, depid, deps;
    int32_t line;
    uint32_t tb;            /* global tb index */
    int32_t rpart, spart;   /* part ids, -1 none (L and N parts: rpart) */
} mstep_t;

typedef struct mtb {
    int32_t id, send, recv, chan, line;
    uint32_t gpu;
    uint32_t first, n;      /* steps [first, first + n) */
} mtb_t;

typedef struct mgpu {
    int32_t ichunks, ochunks, schunks, line;
    uint32_t first_tb, ntb;
    bool seen;
} mgpu_t;

enum { P_R, P_S, P_L, P_N };

typedef struct part {
    uint32_t step;          /* mstep index */
    uint8_t kind;
} part_t;

/* u before v; w: IR steps between them (0 or 1); strict: v cannot start
 * before u has completed on the GPU (u receives or computes), so a cycle
 * through it is a deadlock even when it would fit in one IR step. */
typedef struct edge { uint32_t u, v; uint8_t w, strict; } edge_t;

typedef struct imp {
    const char *file;
    ccs_err_t *err;
    const msccl_import_opts_t *o;
    /* algo */
    ccs_coll_t coll;
    uint32_t R, C, B, nch;
    int32_t root;
    bool inplace, outofplace, as_inplace;
    bool strict;            /* layout mode, see order_edges */
    uint32_t nedges_base;   /* edges before build_order */
    msccl_import_info_t info;
    /* program; all owned */
    mgpu_t *gpus;
    mtb_t *tbs;
    uint32_t ntbs, tbcap;
    mstep_t *steps;
    uint32_t nsteps, stepcap;
    part_t *parts;
    uint32_t nparts;
    edge_t *edges;
    uint32_t nedges, edgecap;
    uint32_t *partner;      /* [nparts] matched R of an S and S of an R,
                               UINT32_MAX for L/N parts */
} imp_t;

/* ---- errors ---- */

static ccs_status_t fail(imp_t *m, ccs_status_t st, int line,
                         const char *fmt, ...) CCS_PRINTF(4, 5);
static ccs_status_t fail(imp_t *m, ccs_status_t st, int line,
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
static void where(const imp_t *m, uint32_t si, char *buf, size_t len)
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
        return fail(m, CCS_ERR_UNSUPPORTED, (int)xmlGetLineNo(n),
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
            return fail(m, CCS_ERR_PARSE, line,
                        "<%s> lacks the attribute '%s' (the executor "
                        "refuses the file)", (const char *)n->name, name);
        return CCS_OK;
    }
    size_t l = strlen((const char *)v);
    if (l > MSCCL_MAX_STR || l >= len) {
        xmlFree(v);
        return fail(m, CCS_ERR_UNSUPPORTED, line,
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
        return fail(m, CCS_ERR_PARSE, (int)xmlGetLineNo(n),
                    "<%s> %s=\"%s\" is not an integer",
                    (const char *)n->name, name, buf);
    if (v < lo || v > hi)
        return fail(m, CCS_ERR_PARSE, (int)xmlGetLineNo(n),
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
        return fail(m, CCS_ERR_PARSE, (int)xmlGetLineNo(n),
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
    return fail(m, CCS_ERR_PARSE, (int)xmlGetLineNo(n),
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
        return fail(m, CCS_ERR_PARSE, line, "gpu %u tb %d step %d: unknown "
                    "type \"%s\" (s, r, rcs, rrs, rrc, rrcs, cpy, re, nop)",
                    tb->gpu, tb->id, s, tbuf);
    x->type = (uint8_t)t;
    if (s != (int32_t)pos)
        return fail(m, CCS_ERR_PARSE, line, "gpu %u tb %d: step s=\"%d\" "
                    "is the tb's step number %u; steps must be numbered "
                    "0, 1, ... in order", tb->gpu, tb->id, s, pos);
    if (m->o->check_limits && m->o->max_tb_steps > 0 &&
        pos >= m->o->max_tb_steps)
        return fail(m, CCS_ERR_UNSUPPORTED, line, "gpu %u tb %d step %d: "
                    "more than %u steps in one thread block (the executor's "
                    "MSCCL_MAX_NUM_STEPS; --max-steps 256 for runtimes "
                    "built with 256)", tb->gpu, tb->id, s,
                    m->o->max_tb_steps);
    if (msccl_type_sends(t) && tb->send < 0)
        return fail(m, CCS_ERR_PARSE, line, "gpu %u tb %d step %d: %s sends "
                    "but the thread block has send=\"-1\"", tb->gpu, tb->id,
                    s, tbuf);
    if (msccl_type_recvs(t) && tb->recv < 0)
        return fail(m, CCS_ERR_PARSE, line, "gpu %u tb %d step %d: %s "
                    "receives but the thread block has recv=\"-1\"",
                    tb->gpu, tb->id, s, tbuf);
    if (t != MSCCL_T_NOP) {
        if (x->cnt < 1 || (m->o->check_limits && x->cnt >= MSCCL_MAX_COUNT))
            return fail(m, x->cnt < 1 ? CCS_ERR_PARSE : CCS_ERR_UNSUPPORTED,
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
            return fail(m, CCS_ERR_PARSE, line, "gpu %u tb %d step %d (%s): "
                        "source %s[%d..%d] is outside the buffer (%s=%d)",
                        tb->gpu, tb->id, s, tbuf, bn[x->srcbuf], x->srcoff,
                        x->srcoff + x->cnt - 1, bc[x->srcbuf],
                        size[x->srcbuf]);
        if (use_dst && (x->dstoff < 0 ||
                        (int64_t)x->dstoff + x->cnt > size[x->dstbuf]))
            return fail(m, CCS_ERR_PARSE, line, "gpu %u tb %d step %d (%s): "
                        "destination %s[%d..%d] is outside the buffer "
                        "(%s=%d)", tb->gpu, tb->id, s, tbuf, bn[x->dstbuf],
                        x->dstoff, x->dstoff + x->cnt - 1, bc[x->dstbuf],
                        size[x->dstbuf]);
    }
    if (x->depid < -1 || (x->depid >= 0 && x->deps < 0))
        return fail(m, CCS_ERR_PARSE, line, "gpu %u tb %d step %d: "
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
        return fail(m, CCS_ERR_PARSE, line, "gpu %u tb %d: peer send=\"%d\" "
                    "recv=\"%d\" out of range (-1 or 0..%u)", gpu, tb->id,
                    tb->send, tb->recv, m->R - 1);
    if (tb->send == (int32_t)gpu || tb->recv == (int32_t)gpu)
        return fail(m, CCS_ERR_PARSE, line, "gpu %u tb %d: a thread block "
                    "cannot send to or receive from its own gpu", gpu,
                    tb->id);
    if (tb->chan < 0 || tb->chan >= (int32_t)m->nch)
        return fail(m, CCS_ERR_PARSE, line, "gpu %u tb %d: chan=\"%d\" "
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
        return fail(m, CCS_ERR_PARSE, line, "gpu id=\"%d\" out of range "
                    "0..%u (ngpus=\"%u\")", id, m->R - 1, m->R);
    mgpu_t *g = &m->gpus[id];
    if (g->seen)
        return fail(m, CCS_ERR_PARSE, line, "gpu %d appears twice (first "
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
    uint32_t elems = 1 + (m->ntbs - first_tb) + (m->nsteps - first_step);
    if (m->o->check_limits && elems > MSCCL_MAX_ELEMS_PER_RANK)
        return fail(m, CCS_ERR_UNSUPPORTED, line, "gpu %d has %u XML "
                    "elements; the executor reads at most %d per gpu", id,
                    elems, MSCCL_MAX_ELEMS_PER_RANK);
    g->first_tb = first_tb;
    g->ntb = m->ntbs - first_tb;
    return CCS_OK;
}

static ccs_status_t parse_algo(imp_t *m, xmlNodePtr root)
{
    char buf[MSCCL_MAX_STR + 1];
    int line = (int)xmlGetLineNo(root);
    int64_t v;
    bool f;
    ccs_status_t st;

    if (strcmp((const char *)root->name, "algo") != 0)
        return fail(m, CCS_ERR_PARSE, line, "the root element is <%s>, not "
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
        return fail(m, CCS_ERR_PARSE, line, "proto=\"%s\" is not Simple, LL "
                    "or LL128", buf);
    if ((st = attr_str(m, root, "coll", true, buf, sizeof(buf), &f)) !=
        CCS_OK)
        return st;
    if (ccs_coll_parse(buf, &m->coll) != CCS_OK)
        return fail(m, CCS_ERR_UNSUPPORTED, line, "coll=\"%s\": ccsynth "
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
        return fail(m, CCS_ERR_PARSE, line, "inplace=\"0\" and "
                    "outofplace=\"0\": no call would ever use it");
    if (ccs_coll_blocked(m->coll) && m->C % m->R != 0)
        return fail(m, CCS_ERR_PARSE, line, "nchunksperloop=\"%u\" is not a "
                    "multiple of ngpus=\"%u\", which a %s needs (each gpu "
                    "owns nchunksperloop/ngpus chunks)", m->C, m->R,
                    ccs_coll_str(m->coll));
    if (m->info.max_bytes != 0 && m->info.max_bytes < m->info.min_bytes)
        return fail(m, CCS_ERR_PARSE, line, "maxBytes=\"%" PRIu64 "\" is "
                    "below minBytes=\"%" PRIu64 "\": no call fits",
                    m->info.max_bytes, m->info.min_bytes);
    /* The layout keeps a flag per (gpu, chunk): bound it. */
    if ((uint64_t)m->R * m->C > (1u << 26))
        return fail(m, CCS_ERR_UNSUPPORTED, line, "ngpus=\"%u\" x "
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
            return fail(m, CCS_ERR_PARSE, line, "ngpus=\"%u\" but gpu %u "
                        "has no <gpu> element", m->R, r);
    return CCS_OK;
}

/* Thread-block ids, connections, dependencies, per-channel limits. */
static ccs_status_t check_program(imp_t *m)
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
            return fail(m, CCS_ERR_PARSE, tb->line, "gpu %u: thread block "
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
                    st = fail(m, CCS_ERR_PARSE, tb->line, "gpu %u tb %d "
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
                    st = fail(m, CCS_ERR_UNSUPPORTED, tb->line, "gpu %u: "
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
                    if ((uint32_t)x->depid >= g->ntb) {
                        st = fail(m, CCS_ERR_PARSE, x->line, "gpu %u tb %d "
                                  "step %u: depid=\"%d\" names no thread "
                                  "block (the gpu has %u)", r, tb->id, k,
                                  x->depid, g->ntb);
                        goto cleanup;
                    }
                    const mtb_t *dt = &m->tbs[g->first_tb + (uint32_t)x->depid];
                    if ((uint32_t)x->deps >= dt->n) {
                        st = fail(m, CCS_ERR_PARSE, x->line, "gpu %u tb %d "
                                  "step %u: deps=\"%d\" but tb %d has %u "
                                  "steps", r, tb->id, k, x->deps, x->depid,
                                  dt->n);
                        goto cleanup;
                    }
                    const mstep_t *ds = &m->steps[dt->first +
                                                  (uint32_t)x->deps];
                    if (x->depid == tb->id && (uint32_t)x->deps >= k) {
                        st = fail(m, CCS_ERR_VERIFY, x->line, "deadlock: "
                                  "gpu %u tb %d step %u waits for step %d "
                                  "of its own thread block, which runs "
                                  "after it", r, tb->id, k, x->deps);
                        goto cleanup;
                    }
                    if (!ds->hasdep && x->depid != tb->id) {
                        st = fail(m, CCS_ERR_VERIFY, x->line, "deadlock: "
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
                        st = fail(m, CCS_ERR_UNSUPPORTED, x->line, "gpu %u "
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

/* ---- parts, matching, ordering ---- */

static ccs_status_t add_part(imp_t *m, uint32_t si, uint8_t kind,
                             int32_t *id)
{
    m->parts[m->nparts].step = si;
    m->parts[m->nparts].kind = kind;
    *id = (int32_t)m->nparts++;
    return CCS_OK;
}

static ccs_status_t add_edge(imp_t *m, uint32_t u, uint32_t v, uint8_t w,
                             uint8_t strict)
{
    if (m->nedges == m->edgecap) {
        uint32_t cap = m->edgecap ? m->edgecap * 2 : 1024;
        edge_t *p = realloc(m->edges, cap * sizeof(*p));
        if (p == NULL)
            return ccs_err_set(m->err, CCS_ERR_NOMEM, "out of memory");
        m->edges = p;
        m->edgecap = cap;
    }
    m->edges[m->nedges++] = (edge_t){ u, v, w, strict };
    return CCS_OK;
}

/* A canonical chunk range: space 0 = in-place big buffer or out-of-place
 * input, 1 = out-of-place output, 2 = scratch; global chunk index. */
typedef struct crange { uint8_t space; uint32_t lo, n; } crange_t;

static crange_t canon_as(const imp_t *m, bool inplace, uint32_t gpu,
                         uint8_t buf, int32_t off, int32_t cnt)
{
    crange_t c = { 0, (uint32_t)off, (uint32_t)cnt };
    if (buf == MSCCL_BUF_S) {
        c.space = 2;
        return c;
    }
    if (buf == MSCCL_BUF_I) {
        c.space = 0;
        if (m->coll == CCS_COLL_ALLGATHER)
            c.lo += gpu * m->B;
        return c;
    }
    c.space = inplace ? 0 : 1;
    if (m->coll == CCS_COLL_REDUCESCATTER)
        c.lo += gpu * m->B;
    return c;
}

static crange_t canon(const imp_t *m, uint32_t gpu, uint8_t buf, int32_t off,
                      int32_t cnt)
{
    return canon_as(m, m->as_inplace, gpu, buf, off, cnt);
}

static bool cr_overlap(crange_t a, crange_t b)
{
    return a.space == b.space && a.lo < b.lo + b.n && b.lo < a.lo + a.n;
}

/* What an R/L part writes (n = 0: nothing visible). */
static crange_t part_write(const imp_t *m, const part_t *p)
{
    const mstep_t *x = &m->steps[p->step];
    crange_t none = { 0, 0, 0 };
    if (p->kind == P_S || p->kind == P_N || x->type == MSCCL_T_RRS)
        return none;
    return canon(m, m->tbs[x->tb].gpu, x->dstbuf, x->dstoff, x->cnt);
}

/* What an S part reads (rrs: a private temporary, n = 0). */
static crange_t part_sread(const imp_t *m, const part_t *p)
{
    const mstep_t *x = &m->steps[p->step];
    crange_t none = { 0, 0, 0 };
    if (x->type == MSCCL_T_SEND)
        return canon(m, m->tbs[x->tb].gpu, x->srcbuf, x->srcoff, x->cnt);
    if (x->type == MSCCL_T_RRS)
        return none;
    return canon(m, m->tbs[x->tb].gpu, x->dstbuf, x->dstoff, x->cnt);
}

static uint32_t first_part(const mstep_t *x)
{
    return (uint32_t)(x->rpart >= 0 ? x->rpart : x->spart);
}

static uint32_t last_part(const mstep_t *x)
{
    return (uint32_t)(x->spart >= 0 ? x->spart : x->rpart);
}

/* Ranges a part reads (up to 2) and writes (up to 1); n = 0 unused. */
static void part_rw(const imp_t *m, const part_t *p, crange_t rd[2],
                    crange_t *wr)
{
    const mstep_t *x = &m->steps[p->step];
    uint32_t g = m->tbs[x->tb].gpu;
    msccl_type_t t = (msccl_type_t)x->type;
    crange_t none = { 0, 0, 0 };

    rd[0] = rd[1] = *wr = none;
    if (p->kind == P_S) {
        rd[0] = part_sread(m, p);
    } else if (p->kind == P_R) {
        *wr = part_write(m, p);
        if (t == MSCCL_T_RRC || t == MSCCL_T_RRCS || t == MSCCL_T_RRS)
            rd[0] = canon(m, g, x->srcbuf, x->srcoff, x->cnt);
    } else if (p->kind == P_L) {
        *wr = part_write(m, p);
        rd[0] = canon(m, g, x->srcbuf, x->srcoff, x->cnt);
        if (t == MSCCL_T_RE)
            rd[1] = *wr;
    }
}

/* Must q come a step after p (it reads what p writes, or writes what p
 * reads or writes)?  A nop may stand for any later step: always. */
static bool conflict(const imp_t *m, uint32_t p, uint32_t q)
{
    crange_t pr[2], pw, qr[2], qw;

    if (m->parts[q].kind == P_N)
        return true;
    part_rw(m, &m->parts[p], pr, &pw);
    part_rw(m, &m->parts[q], qr, &qw);
    return (pw.n && (cr_overlap(pw, qr[0]) || cr_overlap(pw, qr[1]) ||
                     cr_overlap(pw, qw))) ||
           (qw.n && (cr_overlap(pr[0], qw) || cr_overlap(pr[1], qw)));
}

/* Is send part p the forwarding half of an rcs/rrs/rrcs?  Waiting for
 * such a step is waiting for its receive (the forward is issued then). */
static bool fused_send(const imp_t *m, uint32_t p)
{
    return m->steps[m->parts[p].step].rpart >= 0;
}

/* Does succ overwrite what send part p reads only when input and output
 * are aliased (an in-place program laid out out-of-place)?  Such a
 * dependency keeps the in-place data safe; it does not order steps. */
static bool alias_war(const imp_t *m, uint32_t p, uint32_t succ)
{
    const mstep_t *x = &m->steps[m->parts[p].step];
    const mstep_t *y = &m->steps[m->parts[succ].step];
    uint32_t g = m->tbs[x->tb].gpu;
    crange_t rd, wr;

    if (!m->inplace || m->as_inplace || x->type != MSCCL_T_SEND ||
        m->parts[succ].kind == P_N || m->parts[succ].kind == P_S ||
        y->type == MSCCL_T_RRS)
        return false;
    rd = canon_as(m, true, g, x->srcbuf, x->srcoff, x->cnt);
    wr = canon_as(m, true, g, y->dstbuf, y->dstoff, y->cnt);
    return cr_overlap(rd, wr);
}

/* Edges for "pred runs before succ" in program order (thread-block order,
 * or a dependency when `dep`).  A send is issued when its thread block gets
 * there but its data is read in its receive's IR step (the layout puts
 * both in one step): a later step that overwrites the data must come after
 * the receive.  In strict mode (tried first) every step after a receive or
 * local op, and every step depending on a send, starts an IR step later,
 * which keeps the exporter's step order; in relaxed mode only conflicting
 * steps do.  Relaxed mode is what the GPU allows (sends do not wait for
 * their receive); it is used when strict order is impossible.
 * run: earlier parts of the thread block chained by 0-step edges. */
static ccs_status_t order_edges(imp_t *m, uint32_t pred, uint32_t succ,
                                const uint32_t *run, uint32_t nrun, bool dep,
                                uint8_t *w_out)
{
    const part_t *pp = &m->parts[pred];
    ccs_status_t st;
    uint8_t w = 0;

    if (pp->kind == P_N) {
        st = add_edge(m, pred, succ, 0, 0);
    } else if (pp->kind == P_L && m->parts[succ].kind == P_L) {
        /* Local ops of one rank share its local thread block, so ops of
         * one IR step follow each other there; only a conflict orders
         * them into different steps. */
        w = conflict(m, pred, succ);
        st = add_edge(m, pred, succ, w, 1);
    } else if (pp->kind != P_S) {
        w = m->strict || conflict(m, pred, succ);
        st = add_edge(m, pred, succ, w, 1);
    } else if ((dep && m->strict && !fused_send(m, pred) &&
                !alias_war(m, pred, succ)) ||
               conflict(m, pred, succ)) {
        w = 1;
        st = add_edge(m, m->partner[pred], succ, 1, 1);
    } else {
        st = add_edge(m, pred, succ, 0, 0);
    }
    for (uint32_t k = 0; k < nrun && st == CCS_OK; k++) {
        uint32_t r = run[k];
        if (!conflict(m, r, succ))
            continue;
        if (m->parts[r].kind == P_S)
            st = add_edge(m, m->partner[r], succ, 1, 1);
        else
            st = add_edge(m, r, succ, 1, 1);
    }
    if (w_out != NULL)
        *w_out = w;
    return st;
}

static ccs_status_t build_parts(imp_t *m)
{
    ccs_status_t st;

    m->parts = calloc(2 * (size_t)m->nsteps + 1, sizeof(*m->parts));
    if (m->parts == NULL)
        return ccs_err_set(m->err, CCS_ERR_NOMEM, "out of memory");
    for (uint32_t si = 0; si < m->nsteps; si++) {
        mstep_t *x = &m->steps[si];
        msccl_type_t t = (msccl_type_t)x->type;
        if (t == MSCCL_T_NOP)
            add_part(m, si, P_N, &x->rpart);
        else if (t == MSCCL_T_CPY || t == MSCCL_T_RE)
            add_part(m, si, P_L, &x->rpart);
        else {
            if (msccl_type_recvs(t))
                add_part(m, si, P_R, &x->rpart);
            if (msccl_type_sends(t))
                add_part(m, si, P_S, &x->spart);
            if (x->rpart >= 0 && x->spart >= 0) {
                st = add_edge(m, (uint32_t)x->rpart, (uint32_t)x->spart, 1, 1);
                if (st != CCS_OK)
                    return st;
            }
        }
    }
    return CCS_OK;
}

/* The real step a dependency of step x (in tb) waits for, or -1: a nop
 * target stands for the last real step before it in its thread block. */
static int32_t dep_target(const imp_t *m, const mstep_t *x, const mtb_t *tb)
{
    if (x->depid < 0 || x->depid == tb->id)
        return -1;
    const mtb_t *dt = &m->tbs[m->gpus[tb->gpu].first_tb + (uint32_t)x->depid];
    for (int32_t k = x->deps; k >= 0; k--)
        if (m->steps[dt->first + (uint32_t)k].type != MSCCL_T_NOP)
            return (int32_t)(dt->first + (uint32_t)k);
    return -1;
}

/* Is y the next piece of x (same non-fused type, operands continuing
 * where x's end, no dependency of its own, adjacent in the tb)?  Only a
 * full piece (cnt at the executor's limit) has a next piece: that is how a
 * long op is cut (the exporter's rule: pieces of MSCCL_MAX_COUNT - 1, the
 * last shorter).  Two short transfers of consecutive chunks are two
 * transfers: a tree's leaf sends chunk 0 in one step and chunk 1 in the
 * next, and laying them out as one would move the second a step earlier
 * than its sender's order says. */
static bool continues(const mstep_t *x, const mstep_t *y, bool adjacent)
{
    msccl_type_t t = (msccl_type_t)x->type;
    if (!adjacent || x->cnt != MSCCL_MAX_COUNT - 1 || y->type != x->type ||
        y->depid >= 0 ||
        t == MSCCL_T_RCS || t == MSCCL_T_RRS || t == MSCCL_T_RRCS ||
        t == MSCCL_T_NOP || y->srcbuf != x->srcbuf ||
        y->dstbuf != x->dstbuf)
        return false;
    bool src = t != MSCCL_T_RECV, dst = t != MSCCL_T_SEND;
    return (!src || y->srcoff == x->srcoff + x->cnt) &&
           (!dst || y->dstoff == x->dstoff + x->cnt);
}

/* Thread-block order and dependencies (after matching: edges out of a send
 * may start at its matched receive). */
static ccs_status_t build_order(imp_t *m)
{
    uint32_t *run = NULL;     /* owned: sends issued back to back */
    uint32_t nrun = 0, runcap = 0;
    ccs_status_t st = CCS_OK;

    m->nedges = m->nedges_base;
    for (uint32_t t = 0; t < m->ntbs && st == CCS_OK; t++) {
        const mtb_t *tb = &m->tbs[t];
        int32_t prev = -1;      /* last real step of the tb */
        nrun = 0;
        /* The executor attaches the dependencies of nop steps to the next
         * real step of the thread block: so do we. */
        uint32_t pend0 = 0;
        for (uint32_t k = 0; k < tb->n && st == CCS_OK; k++) {
            const mstep_t *x = &m->steps[tb->first + k];
            if (x->type == MSCCL_T_NOP)
                continue;
            uint32_t fp = first_part(x);
            if (prev >= 0) {
                uint32_t lp = last_part(&m->steps[tb->first +
                                                  (uint32_t)prev]);
                uint8_t w;
                if (continues(&m->steps[tb->first + (uint32_t)prev], x,
                              (uint32_t)prev + 1 == k)) {
                    /* a piece of one transfer cut for cnt < 72: same IR
                     * step, matched in order */
                    st = add_edge(m, lp, fp, 0, 1);
                    w = 0;
                } else {
                    st = order_edges(m, lp, fp, run, nrun, false, &w);
                }
                /* Receives and local ops a step behind drop out of the
                 * run; sends stay (their receive may be far ahead). */
                if (w) {
                    uint32_t keep = 0;
                    for (uint32_t j = 0; j < nrun; j++)
                        if (m->parts[run[j]].kind == P_S)
                            run[keep++] = run[j];
                    nrun = keep;
                }
                if (st == CCS_OK && (w == 0 || m->parts[lp].kind == P_S)) {
                    if (nrun == runcap) {
                        uint32_t cap = runcap ? 2 * runcap : 16;
                        uint32_t *p = realloc(run, cap * sizeof(*p));
                        if (p == NULL) {
                            st = ccs_err_set(m->err, CCS_ERR_NOMEM,
                                             "out of memory");
                            break;
                        }
                        run = p;
                        runcap = cap;
                    }
                    run[nrun++] = lp;
                }
            }
            for (uint32_t j = pend0; j <= k && st == CCS_OK; j++) {
                int32_t tgt = dep_target(m, &m->steps[tb->first + j], tb);
                if (tgt >= 0)
                    st = order_edges(m, last_part(&m->steps[tgt]), fp, NULL,
                                     0, true, NULL);
            }
            pend0 = k + 1;
            prev = (int32_t)k;
        }
    }
    free(run);
    return st;
}

/* Match sends and receives per connection, FIFO. */
static ccs_status_t match(imp_t *m)
{
    char a[96], b[96];

    m->partner = malloc((size_t)m->nparts * sizeof(*m->partner) + 1);
    if (m->partner == NULL)
        return ccs_err_set(m->err, CCS_ERR_NOMEM, "out of memory");
    for (uint32_t p = 0; p < m->nparts; p++)
        m->partner[p] = UINT32_MAX;
    for (uint32_t t = 0; t < m->ntbs; t++) {
        const mtb_t *st = &m->tbs[t];
        if (st->send < 0)
            continue;
        /* the receiving thread block on the peer */
        const mgpu_t *pg = &m->gpus[st->send];
        const mtb_t *rt = NULL;
        for (uint32_t u = pg->first_tb; u < pg->first_tb + pg->ntb; u++)
            if (m->tbs[u].recv == (int32_t)st->gpu &&
                m->tbs[u].chan == st->chan)
                rt = &m->tbs[u];
        uint32_t ks = 0, kr = 0, nmsg = 0;
        for (;;) {
            while (ks < st->n &&
                   !msccl_type_sends((msccl_type_t)m->steps[st->first + ks]
                                         .type))
                ks++;
            while (rt != NULL && kr < rt->n &&
                   !msccl_type_recvs((msccl_type_t)m->steps[rt->first + kr]
                                         .type))
                kr++;
            bool hs = ks < st->n, hr = rt != NULL && kr < rt->n;
            if (!hs && !hr)
                break;
            if (hs && !hr) {
                uint32_t si = st->first + ks;
                where(m, si, a, sizeof(a));
                if (rt == NULL)
                    return fail(m, CCS_ERR_VERIFY, m->steps[si].line,
                                "deadlock: %s sends to gpu %d on channel %d, "
                                "but no thread block of gpu %d receives from "
                                "gpu %u on channel %d", a, st->send,
                                st->chan, st->send, st->gpu, st->chan);
                return fail(m, CCS_ERR_VERIFY, m->steps[si].line,
                            "deadlock: %s is message %u from gpu %u to gpu "
                            "%d on channel %d, but gpu %d tb %d receives "
                            "only %u on that connection", a, nmsg + 1,
                            st->gpu, st->send, st->chan, st->send, rt->id,
                            nmsg);
            }
            if (!hs) {
                uint32_t ri = rt->first + kr;
                where(m, ri, b, sizeof(b));
                return fail(m, CCS_ERR_VERIFY, m->steps[ri].line,
                            "deadlock: %s waits for message %u from gpu %u "
                            "on channel %d, but gpu %u tb %d sends only %u "
                            "on that connection", b, nmsg + 1, st->gpu,
                            st->chan, st->gpu, st->id, nmsg);
            }
            uint32_t si = st->first + ks, ri = rt->first + kr;
            if (m->steps[si].cnt != m->steps[ri].cnt) {
                where(m, si, a, sizeof(a));
                where(m, ri, b, sizeof(b));
                return fail(m, CCS_ERR_VERIFY, m->steps[si].line,
                            "message %u from gpu %u to gpu %d on channel %d: "
                            "%s sends cnt=%d but %s (line %d) receives "
                            "cnt=%d: sends and receives are in different "
                            "orders (a hang or wrong data on the GPU)",
                            nmsg + 1, st->gpu, st->send, st->chan, a,
                            m->steps[si].cnt, b, m->steps[ri].line,
                            m->steps[ri].cnt);
            }
            /* The receive completes no earlier than the send is issued;
             * the layout runs both in the receive's step. */
            uint32_t x = (uint32_t)m->steps[si].spart;
            uint32_t y = (uint32_t)m->steps[ri].rpart;
            m->partner[x] = y;
            m->partner[y] = x;
            ccs_status_t est = add_edge(m, x, y, 0, 0);
            if (est != CCS_OK)
                return est;
            ks++;
            kr++;
            nmsg++;
        }
    }
    /* receivers with no sending thread block at all */
    for (uint32_t t = 0; t < m->ntbs; t++) {
        const mtb_t *rt = &m->tbs[t];
        if (rt->recv < 0)
            continue;
        const mgpu_t *pg = &m->gpus[rt->recv];
        bool found = false;
        for (uint32_t u = pg->first_tb; u < pg->first_tb + pg->ntb; u++)
            if (m->tbs[u].send == (int32_t)rt->gpu &&
                m->tbs[u].chan == rt->chan)
                found = true;
        for (uint32_t k = 0; k < rt->n && !found; k++) {
            uint32_t ri = rt->first + k;
            if (!msccl_type_recvs((msccl_type_t)m->steps[ri].type))
                continue;
            where(m, ri, b, sizeof(b));
            return fail(m, CCS_ERR_VERIFY, m->steps[ri].line, "deadlock: %s "
                        "receives from gpu %d on channel %d, but no thread "
                        "block of gpu %d sends to gpu %u on channel %d", b,
                        rt->recv, rt->chan, rt->recv, rt->gpu, rt->chan);
        }
    }
    return CCS_OK;
}

/* Tarjan's SCC (iterative) over representatives; then longest paths.
 * level[] is indexed by representative. */
static ccs_status_t levels(imp_t *m, uint32_t **level_out)
{
    uint32_t P = m->nparts, E = m->nedges;
    ccs_status_t st = CCS_OK;
    uint32_t *off = calloc((size_t)P + 1, sizeof(uint32_t));
    uint32_t *adj = malloc(((size_t)E + 1) * sizeof(uint32_t)); /* edge ids */
    uint32_t *idx = malloc(((size_t)P + 1) * sizeof(uint32_t));
    uint32_t *low = malloc(((size_t)P + 1) * sizeof(uint32_t));
    uint32_t *comp = malloc(((size_t)P + 1) * sizeof(uint32_t));
    uint32_t *stk = malloc(((size_t)P + 1) * sizeof(uint32_t));
    uint32_t *cs = malloc(((size_t)P + 1) * sizeof(uint32_t));
    uint32_t *ci = malloc(((size_t)P + 1) * sizeof(uint32_t));
    uint32_t *order = malloc(((size_t)P + 1) * sizeof(uint32_t));
    uint32_t *level = calloc((size_t)P + 1, sizeof(uint32_t));
    uint8_t *on = calloc((size_t)P + 1, 1);
    uint32_t ncomp = 0, nidx = 0, sp = 0, no = 0;

    if (off == NULL || adj == NULL || idx == NULL || low == NULL ||
        comp == NULL || stk == NULL || cs == NULL || ci == NULL ||
        order == NULL || level == NULL || on == NULL) {
        st = ccs_err_set(m->err, CCS_ERR_NOMEM, "out of memory");
        goto cleanup;
    }
    for (uint32_t e = 0; e < E; e++)
        off[m->edges[e].u + 1]++;
    for (uint32_t p = 0; p < P; p++)
        off[p + 1] += off[p];
    {
        uint32_t *fill = malloc(((size_t)P + 1) * sizeof(uint32_t));
        if (fill == NULL) {
            st = ccs_err_set(m->err, CCS_ERR_NOMEM, "out of memory");
            goto cleanup;
        }
        memcpy(fill, off, P * sizeof(uint32_t));
        for (uint32_t e = 0; e < E; e++)
            adj[fill[m->edges[e].u]++] = e;
        free(fill);
    }
    for (uint32_t p = 0; p < P; p++)
        idx[p] = UINT32_MAX;
    for (uint32_t r = 0; r < P; r++) {
        if (idx[r] != UINT32_MAX)
            continue;
        /* iterative DFS: cs = call stack of nodes, ci = next edge */
        uint32_t depth = 0;
        cs[depth] = r;
        ci[depth] = off[r];
        idx[r] = low[r] = nidx++;
        stk[sp++] = r;
        on[r] = 1;
        while (depth != UINT32_MAX) {
            uint32_t v = cs[depth];
            if (ci[depth] < off[v + 1]) {
                uint32_t w = m->edges[adj[ci[depth]++]].v;
                if (idx[w] == UINT32_MAX) {
                    idx[w] = low[w] = nidx++;
                    stk[sp++] = w;
                    on[w] = 1;
                    depth++;
                    cs[depth] = w;
                    ci[depth] = off[w];
                } else if (on[w] && idx[w] < low[v]) {
                    low[v] = idx[w];
                }
                continue;
            }
            if (low[v] == idx[v]) {
                uint32_t w;
                do {
                    w = stk[--sp];
                    on[w] = 0;
                    comp[w] = ncomp;
                    order[no++] = w;
                } while (w != v);
                ncomp++;
            }
            depth = depth == 0 ? UINT32_MAX : depth - 1;
            if (depth != UINT32_MAX && low[v] < low[cs[depth]])
                low[cs[depth]] = low[v];
        }
    }
    /* A one-step-later edge inside a component: a cycle no schedule can
     * lay out in time, i.e. the GPU waits forever.  Name the cycle: the
     * edge u -> v plus a path v -> u inside the component (BFS). */
    for (uint32_t e = 0; e < E; e++) {
        const edge_t *ed = &m->edges[e];
        if ((ed->w == 0 && !ed->strict) || comp[ed->u] != comp[ed->v])
            continue;
        uint32_t c = comp[ed->u], *par = idx, *q = stk, qh = 0, qt = 0;
        char a[96], path[400] = "";
        size_t pl = 0;
        for (uint32_t p = 0; p < P; p++)
            par[p] = UINT32_MAX;
        par[ed->v] = ed->v;
        q[qt++] = ed->v;
        while (qh < qt && par[ed->u] == UINT32_MAX) {
            uint32_t x = q[qh++];
            for (uint32_t k = off[x]; k < off[x + 1]; k++) {
                uint32_t y = m->edges[adj[k]].v;
                if (comp[y] == c && par[y] == UINT32_MAX) {
                    par[y] = x;
                    q[qt++] = y;
                }
            }
        }
        /* walk back from u to v: the cycle in reverse */
        uint32_t cyc[8], nc = 0, x = ed->u;
        while (nc < 8) {
            cyc[nc++] = x;
            if (x == ed->v || par[x] == UINT32_MAX)
                break;
            x = par[x];
        }
        for (uint32_t i = nc; i-- > 0;) {
            uint32_t si = m->parts[cyc[i]].step;
            where(m, si, a, sizeof(a));
            int k = snprintf(path + pl, sizeof(path) - pl, "%s%s (line %d)",
                             i + 1 < nc ? " -> " : "", a, m->steps[si].line);
            if (k > 0 && (size_t)k < sizeof(path) - pl)
                pl += (size_t)k;
        }
        where(m, m->parts[ed->v].step, a, sizeof(a));
        st = fail(m, CCS_ERR_VERIFY, m->steps[m->parts[ed->v].step].line,
                  "deadlock: dependency cycle through thread-block order, "
                  "depid/deps and matched send/receive: %s%s waits for %s",
                  path, x == ed->v ? "" : " -> ...", a);
        goto cleanup;
    }
    /* Tarjan numbers components sinks first, so decreasing component ids
     * are a topological order; `order` lists nodes grouped that way. */
    {
        uint32_t *cl = calloc(ncomp + 1, sizeof(uint32_t));
        if (cl == NULL) {
            st = ccs_err_set(m->err, CCS_ERR_NOMEM, "out of memory");
            goto cleanup;
        }
        for (uint32_t i = no; i-- > 0;) {
            uint32_t v = order[i];
            for (uint32_t k = off[v]; k < off[v + 1]; k++) {
                const edge_t *ed = &m->edges[adj[k]];
                uint32_t d = comp[ed->v];
                if (d != comp[v] && cl[comp[v]] + ed->w > cl[d])
                    cl[d] = cl[comp[v]] + ed->w;
            }
        }
        for (uint32_t p = 0; p < P; p++)
            level[p] = cl[comp[p]];
        free(cl);
    }
    *level_out = level;
    level = NULL;

cleanup:
    free(off);
    free(adj);
    free(idx);
    free(low);
    free(comp);
    free(stk);
    free(cs);
    free(ci);
    free(order);
    free(level);
    free(on);
    return st;
}

/* Levels are the earliest IR step each part can take.  The lock-step
 * model (ccsynth's executor and simulator) posts a rank's ops of one step
 * together and waits for all of them.  Earliest placement can split what
 * the file runs together: a rank's transfers that wait for the rank's
 * previous step land one step early when both their ranks were idle in
 * between, while the others of that step wait for a busier peer; the
 * step becomes two, run one after the other.  regroup() moves parts later,
 * never past what waits for them (every edge still holds):
 *   - sends, nops and local ops as late as their successors allow: a send
 *     and a nop are laid out nowhere (a transfer sits at its receive's
 *     level) and local ops cost nothing in the model's step, so this only
 *     frees the transfers before them;
 *   - then, latest levels first, a rank's transfers of one level together
 *     to the later level that leaves the fewest (rank, level) groups of
 *     transfers over the ranks they touch, when that is fewer than now
 *     or as many (then the earliest such level, so that the next group
 *     can join it);
 * and again while something moves. */
typedef struct rg {
    imp_t *m;
    uint32_t *level;
    uint32_t *off, *adj;     /* out-edges per part (CSR) */
    uint32_t *occ;           /* [R * L] transfers per (rank, level) */
    uint32_t *cnt;           /* [R] scratch: group members per rank */
    uint8_t *mark;           /* [P] scratch: in the group being moved */
    size_t L;
} rg_t;

typedef struct rg_ent { uint32_t rank, part; } rg_ent_t;

static int rg_ent_cmp(const void *a, const void *b)
{
    const rg_ent_t *x = a, *y = b;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    return x->part < y->part ? -1 : x->part > y->part;
}

/* The rank of a part (end 0), or of a receive's sender (end 1). */
static uint32_t rg_rank(const rg_t *g, uint32_t p, int end)
{
    const imp_t *m = g->m;
    uint32_t q = end == 0 || m->parts[p].kind != P_R ? p : m->partner[p];
    return m->tbs[m->steps[m->parts[q].step].tb].gpu;
}

/* Latest level p may take (the last level when nothing waits for it);
 * edges to marked parts (moving along at the same level) do not bind. */
static uint32_t rg_bound(const rg_t *g, uint32_t p)
{
    uint32_t b = (uint32_t)g->L - 1;
    for (uint32_t k = g->off[p]; k < g->off[p + 1]; k++) {
        const edge_t *ed = &g->m->edges[g->adj[k]];
        if (g->mark[ed->v] && ed->w == 0)
            continue;
        uint32_t lim = g->level[ed->v] - ed->w;
        if (lim < b)
            b = lim;
    }
    return b;
}

/* Change in the number of (rank, level) groups of transfers when the
 * marked members (cnt[x] of them touch rank x, for the nx ranks in xs)
 * go from level l to v. */
static int rg_delta(const rg_t *g, const uint32_t *xs, uint32_t nx,
                    uint32_t l, uint32_t v)
{
    int d = 0;
    for (uint32_t i = 0; i < nx; i++) {
        uint32_t x = xs[i], k = g->cnt[x];
        uint32_t at = g->occ[(size_t)x * g->L + l];
        uint32_t to = g->occ[(size_t)x * g->L + v];
        d += (at > k) - 1 + (to == 0);
    }
    return d;
}

/* Sends, nops and local ops as late as their successors allow, latest
 * first (by = the parts sorted by level, descending). */
static bool rg_sink_free(rg_t *g, const uint32_t *by, uint32_t n)
{
    bool moved = false;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t p = by[i];
        if (g->m->parts[p].kind == P_R)
            continue;
        uint32_t b = rg_bound(g, p);
        if (b != UINT32_MAX && b > g->level[p]) {
            g->level[p] = b;
            moved = true;
        }
    }
    return moved;
}

/* The parts by level, latest first (counting sort). */
static void rg_order(const rg_t *g, uint32_t *by, uint32_t *cnt)
{
    uint32_t P = g->m->nparts;
    memset(cnt, 0, (g->L + 1) * sizeof(*cnt));
    for (uint32_t p = 0; p < P; p++)
        cnt[g->L - 1 - g->level[p] + 1]++;
    for (size_t v = 0; v < g->L; v++)
        cnt[v + 1] += cnt[v];
    for (uint32_t p = 0; p < P; p++)
        by[cnt[g->L - 1 - g->level[p]]++] = p;
}

static uint32_t uf_find(uint32_t *uf, uint32_t x)
{
    while (uf[x] != x) {
        uf[x] = uf[uf[x]];
        x = uf[x];
    }
    return x;
}

/* Move the ng transfers grp[] (all at level lv) together to the later
 * level within their successors' bound that leaves the fewest groups,
 * when that is no more than now; xs is scratch for R ranks. */
static bool rg_move(rg_t *g, const uint32_t *grp, uint32_t ng, uint32_t lv,
                    uint32_t maxl, uint32_t *xs)
{
    uint32_t nx = 0, b = UINT32_MAX, best = lv;
    int bestd = 1;

    for (uint32_t r = 0; r < ng; r++)
        g->mark[grp[r]] = 1;
    for (uint32_t r = 0; r < ng; r++) {
        uint32_t br = rg_bound(g, grp[r]);
        if (br < b)
            b = br;
        for (int e = 0; e < 2; e++) {
            uint32_t x = rg_rank(g, grp[r], e);
            if (g->cnt[x]++ == 0)
                xs[nx++] = x;
        }
    }
    if (b != UINT32_MAX && b > lv)
        for (uint32_t v = lv + 1; v <= b && v <= maxl; v++) {
            int d = rg_delta(g, xs, nx, lv, v);
            if (d < bestd) {
                bestd = d;
                best = v;
            }
        }
    bool moved = best != lv && bestd <= 0;
    if (moved) {
        for (uint32_t r = 0; r < nx; r++) {
            g->occ[(size_t)xs[r] * g->L + lv] -= g->cnt[xs[r]];
            g->occ[(size_t)xs[r] * g->L + best] += g->cnt[xs[r]];
        }
        for (uint32_t r = 0; r < ng; r++)
            g->level[grp[r]] = best;
    }
    for (uint32_t r = 0; r < nx; r++)
        g->cnt[xs[r]] = 0;
    for (uint32_t r = 0; r < ng; r++)
        g->mark[grp[r]] = 0;
    return moved;
}

static ccs_status_t regroup(imp_t *m, uint32_t *level)
{
    uint32_t P = m->nparts, E = m->nedges, maxl = 0;
    uint32_t *by = NULL, *lcnt = NULL, *xs = NULL, *grp = NULL, *uf = NULL;
    rg_ent_t *ent = NULL;    /* (rank, part) of the transfers at a level */
    ccs_status_t st = CCS_OK;
    rg_t g;

    memset(&g, 0, sizeof(g));
    g.m = m;
    g.level = level;
    for (uint32_t p = 0; p < P; p++)
        if (level[p] > maxl)
            maxl = level[p];
    g.L = (size_t)maxl + 1;
    /* The (rank, level) table is R x L counters.  A program too large for
     * it (a fuzzed file naming thousands of GPUs over a long chain) keeps
     * its earliest layout, which is as valid, only less like the lock-step
     * schedule it may have come from. */
    if ((size_t)m->R * g.L > ((size_t)1 << 26))
        return CCS_OK;
    g.off = calloc((size_t)P + 2, sizeof(uint32_t));
    g.adj = malloc(((size_t)E + 1) * sizeof(uint32_t));
    g.occ = calloc((size_t)m->R * g.L + 1, sizeof(uint32_t));
    g.cnt = calloc((size_t)m->R + 1, sizeof(uint32_t));
    g.mark = calloc((size_t)P + 1, 1);
    by = malloc(((size_t)P + 1) * sizeof(uint32_t));
    lcnt = malloc((g.L + 2) * sizeof(uint32_t));
    ent = malloc((2 * (size_t)P + 1) * sizeof(*ent));
    xs = malloc(((size_t)m->R + 1) * sizeof(uint32_t));
    grp = malloc(((size_t)P + 1) * sizeof(uint32_t));
    uf = malloc(((size_t)m->R + 1) * sizeof(uint32_t));
    if (uf != NULL)
        for (uint32_t r = 0; r < m->R; r++)
            uf[r] = UINT32_MAX;
    if (uf == NULL || g.off == NULL || g.adj == NULL || g.occ == NULL ||
        g.cnt == NULL || g.mark == NULL || by == NULL || lcnt == NULL ||
        ent == NULL || xs == NULL || grp == NULL) {
        st = ccs_err_set(m->err, CCS_ERR_NOMEM, "out of memory");
        goto cleanup;
    }
    for (uint32_t e = 0; e < E; e++)
        g.off[m->edges[e].u + 1]++;
    for (uint32_t p = 0; p < P; p++)
        g.off[p + 1] += g.off[p];
    {
        uint32_t *fill = malloc(((size_t)P + 1) * sizeof(uint32_t));
        if (fill == NULL) {
            st = ccs_err_set(m->err, CCS_ERR_NOMEM, "out of memory");
            goto cleanup;
        }
        memcpy(fill, g.off, P * sizeof(uint32_t));
        for (uint32_t e = 0; e < E; e++)
            g.adj[fill[m->edges[e].u]++] = e;
        free(fill);
    }
    for (uint32_t p = 0; p < P; p++)
        if (m->parts[p].kind == P_R) {
            g.occ[(size_t)rg_rank(&g, p, 0) * g.L + level[p]]++;
            g.occ[(size_t)rg_rank(&g, p, 1) * g.L + level[p]]++;
        }
    /* Every move raises a level within [0, maxl]: this ends.  The cap
     * bounds the time on large programs, where the first passes do
     * nearly all of it. */
    for (int pass = 0; pass < 32; pass++) {
        bool moved = false;
        rg_order(&g, by, lcnt);
        while (rg_sink_free(&g, by, P)) {
            moved = true;
            rg_order(&g, by, lcnt);
        }
        /* by[] lists latest levels first: walk it level by level */
        for (uint32_t i = 0; i < P;) {
            uint32_t lv = level[by[i]], j = i;
            while (j < P && level[by[j]] == lv)
                j++;
            /* whole connected sets of ranks first (a rank that waits at
             * this level for a neighbour that waits for another ...),
             * then each rank's transfers */
            for (int kind = 0; kind < 2; kind++) {
                uint32_t n = 0;
                for (uint32_t k = i; k < j; k++)
                    if (m->parts[by[k]].kind == P_R && level[by[k]] == lv) {
                        uint32_t x = rg_rank(&g, by[k], 0);
                        uint32_t y = rg_rank(&g, by[k], 1);
                        if (kind == 0) {
                            uf[x] = uf[x] == UINT32_MAX ? x : uf[x];
                            uf[y] = uf[y] == UINT32_MAX ? y : uf[y];
                            x = uf_find(uf, x);
                            y = uf_find(uf, y);
                            if (x != y)
                                uf[x] = y;
                        } else {
                            ent[n++] = (rg_ent_t){ x, by[k] };
                            ent[n++] = (rg_ent_t){ y, by[k] };
                        }
                    }
                if (kind == 0) {
                    for (uint32_t k = i; k < j; k++)
                        if (m->parts[by[k]].kind == P_R &&
                            level[by[k]] == lv)
                            ent[n++] = (rg_ent_t){
                                uf_find(uf, rg_rank(&g, by[k], 0)), by[k] };
                    for (uint32_t k = i; k < j; k++)
                        if (m->parts[by[k]].kind == P_R) {
                            uf[rg_rank(&g, by[k], 0)] = UINT32_MAX;
                            uf[rg_rank(&g, by[k], 1)] = UINT32_MAX;
                        }
                }
                qsort(ent, n, sizeof(*ent), rg_ent_cmp);
                for (uint32_t k = 0; k < n;) {
                    uint32_t q = k, ng = 0;
                    while (q < n && ent[q].rank == ent[k].rank)
                        q++;
                    /* members an earlier group of this level moved are
                     * gone already */
                    for (uint32_t r = k; r < q; r++)
                        if (level[ent[r].part] == lv)
                            grp[ng++] = ent[r].part;
                    if (ng > 0 && rg_move(&g, grp, ng, lv, maxl, xs))
                        moved = true;
                    k = q;
                }
            }
            i = j;
        }
        if (!moved)
            break;
    }

cleanup:
    free(g.off);
    free(g.adj);
    free(g.occ);
    free(g.cnt);
    free(g.mark);
    free(by);
    free(lcnt);
    free(ent);
    free(xs);
    free(grp);
    free(uf);
    return st;
}

/* ---- layout as IR steps ---- */

typedef struct loc { uint8_t buf; uint32_t chunk; } loc_t;

typedef struct iop { uint32_t rank; uint32_t seq; ccs_op_t op; } iop_t;

typedef struct lay {
    imp_t *m;
    ccs_sched_t *s;          /* borrowed: the schedule being filled */
    uint8_t *written;        /* owned: [R * C] space-0 chunk written */
    uint32_t *ntemp;         /* owned: [R] rrs temporaries in use */
    int32_t *temp_of;        /* owned: [nsteps] first temp of an rrs */
    uint32_t smax;           /* largest s_chunks */
    iop_t *ops;              /* owned */
    size_t nops, cap;
    uint32_t *pend;          /* owned: (rank, chunk) marks of this level */
    size_t npend, pendcap;
} lay_t;

static loc_t read_loc(const lay_t *l, uint32_t r, crange_t c, uint32_t k)
{
    const imp_t *m = l->m;
    uint32_t g = c.lo + k;
    if (c.space == 2)
        return (loc_t){ CCS_BUF_SCRATCH, g };
    if (c.space == 0 && !l->written[(size_t)r * m->C + g])
        return (loc_t){ CCS_BUF_IN, g };
    if (c.space == 0 && !m->as_inplace)
        return (loc_t){ CCS_BUF_SCRATCH, l->smax + g };
    if (ccs_coll_out_valid(l->s, r, g))
        return (loc_t){ CCS_BUF_OUT, g };
    return (loc_t){ CCS_BUF_SCRATCH, l->smax + m->C + g };
}

static loc_t write_loc(const lay_t *l, uint32_t r, crange_t c, uint32_t k)
{
    const imp_t *m = l->m;
    uint32_t g = c.lo + k;
    if (c.space == 2)
        return (loc_t){ CCS_BUF_SCRATCH, g };
    if (c.space == 0 && !m->as_inplace)
        return (loc_t){ CCS_BUF_SCRATCH, l->smax + g };
    if (ccs_coll_out_valid(l->s, r, g))
        return (loc_t){ CCS_BUF_OUT, g };
    return (loc_t){ CCS_BUF_SCRATCH, l->smax + m->C + g };
}

static bool loc_next(loc_t a, loc_t b)
{
    return a.buf == b.buf && b.chunk == a.chunk + 1;
}

static ccs_status_t emit(lay_t *l, uint32_t rank, uint32_t step, uint8_t kind,
                         loc_t dst, loc_t src, int32_t peer, uint32_t n)
{
    if (l->nops == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 4096;
        iop_t *p = realloc(l->ops, cap * sizeof(*p));
        if (p == NULL)
            return ccs_err_set(l->m->err, CCS_ERR_NOMEM, "out of memory");
        l->ops = p;
        l->cap = cap;
    }
    ccs_op_t op;
    memset(&op, 0, sizeof(op));
    op.step = step;
    op.kind = kind;
    op.buf = dst.buf;
    op.chunk = dst.chunk;
    op.peer = peer;
    op.nchunks = n;
    if (kind == CCS_OP_RECV_REDUCE || kind == CCS_OP_COPY ||
        kind == CCS_OP_REDUCE_LOCAL) {
        op.src_buf = src.buf;
        op.src_chunk = src.chunk;
    }
    l->ops[l->nops] = (iop_t){ rank, (uint32_t)l->nops, op };
    l->nops++;
    return CCS_OK;
}

static ccs_status_t mark(lay_t *l, uint32_t r, crange_t c)
{
    if (c.space != 0)
        return CCS_OK;
    for (uint32_t k = 0; k < c.n; k++) {
        if (l->npend == l->pendcap) {
            size_t cap = l->pendcap ? 2 * l->pendcap : 256;
            uint32_t *p = realloc(l->pend, 2 * cap * sizeof(*p));
            if (p == NULL)
                return ccs_err_set(l->m->err, CCS_ERR_NOMEM,
                                   "out of memory");
            l->pend = p;
            l->pendcap = cap;
        }
        l->pend[2 * l->npend] = r;
        l->pend[2 * l->npend + 1] = c.lo + k;
        l->npend++;
    }
    return CCS_OK;
}

/* A matched send part (on gpu a) and receive part (on gpu b) at `lev`. */
static ccs_status_t lay_pair(lay_t *l, uint32_t sp, uint32_t rp, uint32_t lev)
{
    imp_t *m = l->m;
    const mstep_t *xs = &m->steps[m->parts[sp].step];
    const mstep_t *xr = &m->steps[m->parts[rp].step];
    uint32_t a = m->tbs[xs->tb].gpu, b = m->tbs[xr->tb].gpu;
    uint32_t n = (uint32_t)xs->cnt, step = 2 * lev + 1;
    msccl_type_t rt = (msccl_type_t)xr->type;
    bool reduce = rt == MSCCL_T_RRC || rt == MSCCL_T_RRCS ||
                  rt == MSCCL_T_RRS;
    crange_t sr, dr, orr = { 0, 0, 0 };
    ccs_status_t st;

    if (xs->type == MSCCL_T_RRS)
        sr = (crange_t){ 2, (uint32_t)l->temp_of[m->parts[sp].step], n };
    else
        sr = part_sread(m, &m->parts[sp]);
    if (rt == MSCCL_T_RRS) {
        uint32_t t0 = l->smax + 2 * m->C + l->ntemp[b];
        l->ntemp[b] += n;
        l->temp_of[m->parts[rp].step] = (int32_t)t0;
        dr = (crange_t){ 2, t0, n };
    } else {
        dr = canon(m, b, xr->dstbuf, xr->dstoff, xr->cnt);
    }
    if (reduce)
        orr = canon(m, b, xr->srcbuf, xr->srcoff, xr->cnt);
    /* one op per run where every side stays contiguous */
    uint32_t k0 = 0;
    while (k0 < n) {
        loc_t s0 = read_loc(l, a, sr, k0), d0 = write_loc(l, b, dr, k0);
        loc_t o0 = reduce ? read_loc(l, b, orr, k0) : d0;
        uint32_t k1 = k0 + 1;
        while (k1 < n) {
            loc_t s1 = read_loc(l, a, sr, k1), d1 = write_loc(l, b, dr, k1);
            loc_t o1 = reduce ? read_loc(l, b, orr, k1) : d1;
            if (!loc_next(read_loc(l, a, sr, k1 - 1), s1) ||
                !loc_next(write_loc(l, b, dr, k1 - 1), d1) ||
                !loc_next(reduce ? read_loc(l, b, orr, k1 - 1)
                                 : write_loc(l, b, dr, k1 - 1), o1))
                break;
            k1++;
        }
        st = emit(l, a, step, CCS_OP_SEND, s0, s0, (int32_t)b, k1 - k0);
        if (st == CCS_OK)
            st = emit(l, b, step, reduce ? CCS_OP_RECV_REDUCE : CCS_OP_RECV,
                      d0, o0, (int32_t)a, k1 - k0);
        if (st != CCS_OK)
            return st;
        k0 = k1;
    }
    return mark(l, b, dr);
}

/* A local cpy/re part at `lev`. */
static ccs_status_t lay_local(lay_t *l, uint32_t p, uint32_t lev)
{
    imp_t *m = l->m;
    const mstep_t *x = &m->steps[m->parts[p].step];
    uint32_t r = m->tbs[x->tb].gpu, n = (uint32_t)x->cnt;
    bool re = x->type == MSCCL_T_RE;
    crange_t sr = canon(m, r, x->srcbuf, x->srcoff, x->cnt);
    crange_t dr = canon(m, r, x->dstbuf, x->dstoff, x->cnt);
    ccs_status_t st;

    for (uint32_t k0 = 0; k0 < n;) {
        loc_t s0 = read_loc(l, r, sr, k0), d0 = write_loc(l, r, dr, k0);
        loc_t c0 = read_loc(l, r, dr, k0);
        uint32_t k1 = k0 + 1;
        while (k1 < n && loc_next(read_loc(l, r, sr, k1 - 1),
                                  read_loc(l, r, sr, k1)) &&
               loc_next(write_loc(l, r, dr, k1 - 1), write_loc(l, r, dr, k1)) &&
               loc_next(read_loc(l, r, dr, k1 - 1), read_loc(l, r, dr, k1)))
            k1++;
        if (re && (c0.buf != d0.buf || c0.chunk != d0.chunk)) {
            /* dst's value is still the input: bring it over first */
            st = emit(l, r, 2 * lev, CCS_OP_COPY, d0, c0, -1, k1 - k0);
            if (st != CCS_OK)
                return st;
        }
        st = emit(l, r, 2 * lev + 1, re ? CCS_OP_REDUCE_LOCAL : CCS_OP_COPY,
                  d0, s0, -1, k1 - k0);
        if (st != CCS_OK)
            return st;
        k0 = k1;
    }
    return mark(l, r, dr);
}

static int iop_cmp(const void *a, const void *b)
{
    const iop_t *x = a, *y = b;
    if (x->op.step != y->op.step)
        return x->op.step < y->op.step ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static ccs_status_t layout(imp_t *m, const uint32_t *level, ccs_sched_t *s)
{
    lay_t l;
    uint32_t P = m->nparts, maxl = 0;
    uint32_t *bylev = NULL, *lstart = NULL, *newstep = NULL;
    ccs_status_t st = CCS_OK;

    memset(&l, 0, sizeof(l));
    l.m = m;
    l.s = s;
    for (uint32_t r = 0; r < m->R; r++)
        if ((uint32_t)m->gpus[r].schunks > l.smax)
            l.smax = (uint32_t)m->gpus[r].schunks;
    for (uint32_t p = 0; p < P; p++)
        if (level[p] > maxl)
            maxl = level[p];
    l.written = calloc((size_t)m->R * m->C, 1);
    l.ntemp = calloc(m->R, sizeof(*l.ntemp));
    l.temp_of = calloc((size_t)m->nsteps + 1, sizeof(*l.temp_of));
    bylev = malloc(((size_t)P + 1) * sizeof(*bylev));
    lstart = calloc((size_t)maxl + 2, sizeof(*lstart));
    newstep = calloc(2 * (size_t)maxl + 4, sizeof(*newstep));
    if (l.written == NULL || l.ntemp == NULL || l.temp_of == NULL ||
        bylev == NULL || lstart == NULL ||
        newstep == NULL) {
        st = ccs_err_set(m->err, CCS_ERR_NOMEM, "out of memory");
        goto cleanup;
    }
    /* parts by level (counting sort keeps id order) */
    for (uint32_t p = 0; p < P; p++)
        lstart[level[p] + 1]++;
    for (uint32_t v = 0; v <= maxl; v++)
        lstart[v + 1] += lstart[v];
    {
        uint32_t *fill = malloc(((size_t)maxl + 2) * sizeof(*fill));
        if (fill == NULL) {
            st = ccs_err_set(m->err, CCS_ERR_NOMEM, "out of memory");
            goto cleanup;
        }
        memcpy(fill, lstart, ((size_t)maxl + 2) * sizeof(*fill));
        for (uint32_t p = 0; p < P; p++)
            bylev[fill[level[p]]++] = p;
        free(fill);
    }
    for (uint32_t v = 0; v <= maxl; v++) {
        l.npend = 0;
        for (uint32_t i = lstart[v]; i < lstart[v + 1]; i++) {
            uint32_t p = bylev[i];
            /* a transfer is laid out in its receive's step */
            if (m->parts[p].kind == P_R) {
                st = lay_pair(&l, m->partner[p], p, v);
            } else if (m->parts[p].kind == P_L) {
                st = lay_local(&l, p, v);
            }
            if (st != CCS_OK)
                goto cleanup;
        }
        /* writes land at the end of the level */
        for (size_t k = 0; k < l.npend; k++)
            l.written[(size_t)l.pend[2 * k] * m->C + l.pend[2 * k + 1]] = 1;
    }
    /* In place, a chunk the program never writes still holds the input
     * (allgather's own block): the IR's separate OUT gets it by a copy. */
    if (m->as_inplace)
        for (uint32_t r = 0; r < m->R; r++)
            for (uint32_t g = 0; g < m->C; g++) {
                if (l.written[(size_t)r * m->C + g] ||
                    !ccs_coll_out_valid(s, r, g) ||
                    !ccs_coll_in_valid(s, r, g))
                    continue;
                loc_t d = { CCS_BUF_OUT, g }, src = { CCS_BUF_IN, g };
                st = emit(&l, r, 2 * maxl + 3, CCS_OP_COPY, d, src, -1, 1);
                if (st != CCS_OK)
                    goto cleanup;
            }
    qsort(l.ops, l.nops, sizeof(*l.ops), iop_cmp);
    for (size_t k = 0; k < l.nops; k++)
        newstep[l.ops[k].op.step] = 1;
    uint32_t ns = 0;
    for (uint32_t t = 0; t < 2 * maxl + 4; t++) {
        uint32_t used = newstep[t];
        newstep[t] = ns;
        if (used) {
            uint32_t id;
            st = ccs_sched_add_step(s, 0, &id, m->err);
            if (st != CCS_OK)
                goto cleanup;
            ns++;
        }
    }
    for (size_t k = 0; k < l.nops; k++) {
        l.ops[k].op.step = newstep[l.ops[k].op.step];
        st = ccs_sched_add_op(s, l.ops[k].rank, &l.ops[k].op, m->err);
        if (st != CCS_OK)
            goto cleanup;
    }

cleanup:
    free(l.written);
    free(l.ntemp);
    free(l.temp_of);
    free(l.ops);
    free(l.pend);
    free(bylev);
    free(lstart);
    free(newstep);
    return st;
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
        return fail(&m, CCS_ERR_UNSUPPORTED, 0, "%zu bytes: too large",
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
        st = fail(&m, CCS_ERR_PARSE, e != NULL ? e->line : 0,
                  "malformed XML: %s", msg);
        goto cleanup;
    }
    xmlNodePtr root = xmlDocGetRootElement(doc);
    if (root == NULL) {
        st = fail(&m, CCS_ERR_PARSE, 0, "no root element");
        goto cleanup;
    }
    st = parse_algo(&m, root);
    if (st == CCS_OK)
        st = check_program(&m);
    if (st == CCS_OK)
        st = build_parts(&m);
    if (st == CCS_OK)
        st = match(&m);
    m.nedges_base = m.nedges;
    m.strict = true;
    if (st == CCS_OK)
        st = build_order(&m);
    bool laid = false;
    if (st == CCS_OK) {
        st = levels(&m, &level);
        laid = true;
    }
    if (st == CCS_ERR_VERIFY && laid) {
        /* Lock-step order does not fit (e.g. an in-place alltoall's
         * receives wait for the rank's own sends): the GPU only needs
         * sends issued before their receives complete. */
        m.strict = false;
        st = build_order(&m);
        if (st == CCS_OK)
            st = levels(&m, &level);
    }
    if (st == CCS_OK)
        st = regroup(&m, level);
    if (st != CCS_OK)
        goto cleanup;
    st = ccs_sched_create(m.coll, m.R, m.C, "msccl", &s, err);
    if (st != CCS_OK)
        goto cleanup;
    s->root = m.root;
    st = layout(&m, level, s);
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
