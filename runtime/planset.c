/*
 * planset.c - plan sets: the plans `ccsynth tune --emit DIR` chose per
 * buffer-size range, and the per-call pick by byte count.
 *
 * TuCCL (papers/tuccl.txt, Sec. III-A) splits tuning into an offline
 * search that fills a lookup table indexed by (collective, size, topology)
 * and a runtime phase that only looks the table up.  This file is the
 * runtime phase.  The table is DIR/tuning.json (docs/tuning.md): the index
 * is what defines the set, not the .ccs files that happen to lie in DIR,
 * because a second `tune --emit` into the same directory leaves the plans
 * of the first one behind.  tuning.json is written last by the tuner, so
 * every file it names exists when it exists.
 *
 * Only the fields the lookup needs are read (format, version, coll,
 * nranks, topo_fingerprint, elem_bytes, ranges[].min_bytes / max_bytes /
 * file); fields we do not know are skipped, as docs/tuning.md asks of
 * readers of a version 1 document.  The JSON reader below is a small
 * recursive-descent parser into a tree, with a nesting limit, enough for
 * what the tuner writes and strict about everything else.
 *
 * Cost: loading is O(file) plus loading each distinct plan once; a pick is
 * a binary search over the ranges, O(log ranges), no allocation.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ccs_int.h"
#include "planset.h"

#define PS_JSON_MAX_BYTES (16u << 20)   /* tuning.json is a few KiB */
#define PS_JSON_MAX_DEPTH 32
#define PS_MAX_RANGES 65536

typedef struct ps_range {
    uint64_t min_bytes;
    uint64_t max_bytes;      /* UINT64_MAX for the last range */
    uint32_t plan;           /* index into plans */
} ps_range_t;

struct ccs_planset {
    ccs_plan_t **plans;      /* owned, each too; [nplans] */
    char **files;            /* owned; [nplans] file name (for messages) */
    uint32_t nplans;
    ps_range_t *ranges;      /* owned; [nranges], sorted, contiguous */
    uint32_t nranges;
    ccs_coll_t coll;
    uint32_t nranks;
    uint64_t fingerprint;
    uint32_t elem_bytes;
    int log_level;
};

/* ---- the shared lookup rule ---- */

uint32_t ccs_planset_pick_range(uint32_t nranges, double bytes,
                                ccs_range_start_fn start, const void *ctx)
{
    uint32_t lo = 0, hi = nranges;   /* answer in [lo, hi) */

    if (nranges == 0)
        return 0;
    /* Invariant: start(lo) <= bytes or lo == 0; start(hi) > bytes. */
    while (hi - lo > 1) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (start(ctx, mid) <= bytes)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

static double ps_start(const void *ctx, uint32_t k)
{
    return (double)((const ccs_planset_t *)ctx)->ranges[k].min_bytes;
}

/* ---- a small JSON reader ---- */

typedef enum { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ } jkind_t;

typedef struct jval {
    jkind_t kind;
    double num;
    char *str;               /* owned: J_STR's text; for members the key */
    struct jval *items;      /* owned; J_ARR elements / J_OBJ members */
    char **keys;             /* owned; J_OBJ: keys[i] names items[i] */
    size_t n, cap;
} jval_t;

typedef struct jparser {
    const char *p, *end, *start;
    ccs_err_t *err;
    const char *path;
} jparser_t;

static void jfree(jval_t *v)
{
    if (v == NULL)
        return;
    for (size_t i = 0; i < v->n; i++) {
        jfree(&v->items[i]);
        if (v->keys != NULL)
            free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
    free(v->str);
    memset(v, 0, sizeof(*v));
}

static ccs_status_t jfail(jparser_t *jp, const char *what)
{
    /* line:col of where the reader stopped, for a hand-edited index */
    int line = 1, col = 1;
    for (const char *q = jp->start; q < jp->p && q < jp->end; q++) {
        if (*q == '\n') {
            line++;
            col = 1;
        } else {
            col++;
        }
    }
    return ccs_err_set(jp->err, CCS_ERR_PARSE, "%s:%d:%d: %s", jp->path,
                       line, col, what);
}

static void jws(jparser_t *jp)
{
    while (jp->p < jp->end && (*jp->p == ' ' || *jp->p == '\t' ||
                               *jp->p == '\n' || *jp->p == '\r'))
        jp->p++;
}

static ccs_status_t jvalue(jparser_t *jp, jval_t *v, int depth);

static ccs_status_t jstring(jparser_t *jp, char **out)
{
    size_t cap = 16, n = 0;
    char *s;

    if (jp->p >= jp->end || *jp->p != '"')
        return jfail(jp, "expected a string");
    jp->p++;
    s = malloc(cap);          /* owned here until *out */
    if (s == NULL)
        return ccs_err_set(jp->err, CCS_ERR_NOMEM, "out of memory");
    while (jp->p < jp->end && *jp->p != '"') {
        char c = *jp->p++;
        if ((unsigned char)c < 0x20) {
            free(s);
            return jfail(jp, "control character in a string");
        }
        if (c == '\\') {
            if (jp->p >= jp->end)
                break;
            c = *jp->p++;
            switch (c) {
            case '"': case '\\': case '/': break;
            case 'b': c = '\b'; break;
            case 'f': c = '\f'; break;
            case 'n': c = '\n'; break;
            case 'r': c = '\r'; break;
            case 't': c = '\t'; break;
            default:
                /* \uXXXX never occurs in what the tuner writes for the
                 * fields we read (file names and keys are ASCII). */
                free(s);
                return jfail(jp, "unsupported escape in a string");
            }
        }
        if (n + 2 > cap) {
            char *t = realloc(s, cap * 2);
            if (t == NULL) {
                free(s);
                return ccs_err_set(jp->err, CCS_ERR_NOMEM, "out of memory");
            }
            s = t;
            cap *= 2;
        }
        s[n++] = c;
    }
    if (jp->p >= jp->end) {
        free(s);
        return jfail(jp, "unterminated string");
    }
    jp->p++;
    s[n] = '\0';
    *out = s;
    return CCS_OK;
}

static ccs_status_t jpush(jparser_t *jp, jval_t *v, jval_t *item, char *key)
{
    if (v->n == v->cap) {
        size_t cap = v->cap ? v->cap * 2 : 8;
        jval_t *it = realloc(v->items, cap * sizeof(*it));
        if (it == NULL)
            goto nomem;
        v->items = it;
        if (v->kind == J_OBJ) {
            char **k = realloc(v->keys, cap * sizeof(*k));
            if (k == NULL)
                goto nomem;
            v->keys = k;
        }
        v->cap = cap;
    }
    v->items[v->n] = *item;          /* ownership moves into v */
    if (v->kind == J_OBJ)
        v->keys[v->n] = key;
    v->n++;
    return CCS_OK;
nomem:
    jfree(item);
    free(key);
    return ccs_err_set(jp->err, CCS_ERR_NOMEM, "out of memory");
}

static ccs_status_t jcontainer(jparser_t *jp, jval_t *v, int depth)
{
    char close = *jp->p == '[' ? ']' : '}';
    ccs_status_t st;

    v->kind = close == ']' ? J_ARR : J_OBJ;
    jp->p++;
    jws(jp);
    if (jp->p < jp->end && *jp->p == close) {
        jp->p++;
        return CCS_OK;
    }
    for (;;) {
        jval_t item;
        char *key = NULL;

        memset(&item, 0, sizeof(item));
        jws(jp);
        if (v->kind == J_OBJ) {
            if ((st = jstring(jp, &key)) != CCS_OK)
                return st;
            jws(jp);
            if (jp->p >= jp->end || *jp->p != ':') {
                free(key);
                return jfail(jp, "expected ':' after a key");
            }
            jp->p++;
        }
        if ((st = jvalue(jp, &item, depth + 1)) != CCS_OK) {
            free(key);
            jfree(&item);
            return st;
        }
        if ((st = jpush(jp, v, &item, key)) != CCS_OK)
            return st;
        jws(jp);
        if (jp->p < jp->end && *jp->p == ',') {
            jp->p++;
            continue;
        }
        if (jp->p < jp->end && *jp->p == close) {
            jp->p++;
            return CCS_OK;
        }
        return jfail(jp, close == ']' ? "expected ',' or ']'"
                                      : "expected ',' or '}'");
    }
}

static ccs_status_t jvalue(jparser_t *jp, jval_t *v, int depth)
{
    memset(v, 0, sizeof(*v));
    if (depth > PS_JSON_MAX_DEPTH)
        return jfail(jp, "nested too deeply");
    jws(jp);
    if (jp->p >= jp->end)
        return jfail(jp, "unexpected end of file");
    switch (*jp->p) {
    case '{':
    case '[':
        return jcontainer(jp, v, depth);
    case '"':
        v->kind = J_STR;
        return jstring(jp, &v->str);
    case 't':
    case 'f':
    case 'n': {
        static const char *const words[] = { "true", "false", "null" };
        for (int w = 0; w < 3; w++) {
            size_t len = strlen(words[w]);
            if ((size_t)(jp->end - jp->p) >= len &&
                memcmp(jp->p, words[w], len) == 0) {
                v->kind = w == 2 ? J_NULL : J_BOOL;
                v->num = w == 0;
                jp->p += len;
                return CCS_OK;
            }
        }
        return jfail(jp, "unknown literal");
    }
    default: {
        char buf[64];
        size_t n = 0;
        char *endp;
        while (jp->p + n < jp->end && n < sizeof(buf) - 1 &&
               strchr("+-0123456789.eE", jp->p[n]) != NULL) {
            buf[n] = jp->p[n];
            n++;
        }
        buf[n] = '\0';
        if (n == 0)
            return jfail(jp, "unexpected character");
        errno = 0;
        v->num = strtod(buf, &endp);
        if (endp != buf + n || errno == ERANGE)
            return jfail(jp, "malformed number");
        v->kind = J_NUM;
        jp->p += n;
        return CCS_OK;
    }
    }
}

static const jval_t *jget(const jval_t *obj, const char *key)
{
    if (obj == NULL || obj->kind != J_OBJ)
        return NULL;
    for (size_t i = 0; i < obj->n; i++)
        if (strcmp(obj->keys[i], key) == 0)
            return &obj->items[i];
    return NULL;
}

/* A whole number in 0 .. 2^53 (exact in a double). */
static bool jint(const jval_t *v, uint64_t *out)
{
    if (v == NULL || v->kind != J_NUM || v->num < 0 ||
        v->num > 9007199254740992.0 || v->num != (double)(uint64_t)v->num)
        return false;
    *out = (uint64_t)v->num;
    return true;
}

/* ---- loading ---- */

void ccs_planset_destroy(ccs_planset_t *set)
{
    if (set == NULL)
        return;
    for (uint32_t i = 0; i < set->nplans; i++) {
        ccs_plan_destroy(set->plans[i]);
        free(set->files[i]);
    }
    free(set->plans);
    free(set->files);
    free(set->ranges);
    free(set);
}

static ccs_status_t read_text(const char *path, char **out, size_t *len,
                              ccs_err_t *err)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;          /* owned here until *out */
    size_t n = 0, cap = 4096;
    ccs_status_t st = CCS_OK;

    if (f == NULL)
        return ccs_err_set(err, CCS_ERR_IO, "%s: %s", path, strerror(errno));
    buf = malloc(cap);
    if (buf == NULL) {
        st = ccs_err_set(err, CCS_ERR_NOMEM, "out of memory");
        goto cleanup;
    }
    for (;;) {
        size_t got;
        if (n == cap) {
            char *t;
            if (cap >= PS_JSON_MAX_BYTES) {
                st = ccs_err_set(err, CCS_ERR_FORMAT, "%s: larger than %u "
                                 "bytes: not a tuning index", path,
                                 PS_JSON_MAX_BYTES);
                goto cleanup;
            }
            t = realloc(buf, cap * 2);
            if (t == NULL) {
                st = ccs_err_set(err, CCS_ERR_NOMEM, "out of memory");
                goto cleanup;
            }
            buf = t;
            cap *= 2;
        }
        got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0)
            break;
    }
    if (ferror(f)) {
        st = ccs_err_set(err, CCS_ERR_IO, "%s: read error", path);
        goto cleanup;
    }
    *out = buf;
    *len = n;
    buf = NULL;
cleanup:
    free(buf);
    fclose(f);
    return st;
}

/* A name in the index must stay inside DIR. */
static bool plain_name(const char *s)
{
    return s[0] != '\0' && s[0] != '.' && strchr(s, '/') == NULL;
}

static ccs_status_t set_alloc(uint32_t nplans, uint32_t nranges,
                              ccs_planset_t **out, ccs_err_t *err)
{
    ccs_planset_t *set = calloc(1, sizeof(*set));   /* to *out */

    if (set == NULL)
        return ccs_err_set(err, CCS_ERR_NOMEM, "out of memory");
    set->plans = calloc(nplans, sizeof(*set->plans));
    set->files = calloc(nplans, sizeof(*set->files));
    set->ranges = calloc(nranges, sizeof(*set->ranges));
    if (set->plans == NULL || set->files == NULL || set->ranges == NULL) {
        ccs_planset_destroy(set);
        return ccs_err_set(err, CCS_ERR_NOMEM, "out of memory");
    }
    set->nranges = nranges;
    *out = set;
    return CCS_OK;
}

static ccs_status_t load_one(const char *path, ccs_planset_t **out,
                             bool *logged, ccs_err_t *err)
{
    ccs_planset_t *set = NULL;     /* to *out */
    const ccs_sched_t *s;
    ccs_status_t st;
    const char *base = strrchr(path, '/');

    if ((st = set_alloc(1, 1, &set, err)) != CCS_OK)
        return st;
    st = ccs_plan_load_file_msg(path, &set->plans[0], err->msg,
                                sizeof(err->msg));
    if (st != CCS_OK) {
        *logged = true;       /* the plan loader logs its failures */
        goto cleanup;
    }
    set->nplans = 1;
    set->files[0] = strdup(base != NULL ? base + 1 : path);
    if (set->files[0] == NULL) {
        st = ccs_err_set(err, CCS_ERR_NOMEM, "out of memory");
        goto cleanup;
    }
    s = ccs_plan_sched(set->plans[0]);
    set->coll = s->coll;
    set->nranks = s->nranks;
    set->fingerprint = s->topo_fingerprint;
    set->ranges[0].min_bytes = 0;
    set->ranges[0].max_bytes = UINT64_MAX;
    set->ranges[0].plan = 0;
    *out = set;
    set = NULL;
cleanup:
    ccs_planset_destroy(set);
    return st;
}

/* Parse the header fields of the index into set. */
static ccs_status_t index_header(const jval_t *root, const char *ipath,
                                 ccs_planset_t *set, ccs_err_t *err)
{
    const jval_t *v;
    uint64_t u;
    char *end;

    v = jget(root, "format");
    if (v == NULL || v->kind != J_STR ||
        strcmp(v->str, "ccsynth-tuning") != 0)
        return ccs_err_set(err, CCS_ERR_FORMAT, "%s: \"format\" is not "
                           "\"ccsynth-tuning\": not a tuning index", ipath);
    v = jget(root, "version");
    if (!jint(v, &u))
        return ccs_err_set(err, CCS_ERR_FORMAT, "%s: no integer "
                           "\"version\"", ipath);
    if (u != 1)
        return ccs_err_set(err, CCS_ERR_VERSION, "%s: tuning index version "
                           "%" PRIu64 "; this libccs reads version 1",
                           ipath, u);
    v = jget(root, "coll");
    if (v == NULL || v->kind != J_STR ||
        ccs_coll_parse(v->str, &set->coll) != CCS_OK)
        return ccs_err_set(err, CCS_ERR_FORMAT, "%s: \"coll\" is not a "
                           "collective name", ipath);
    v = jget(root, "nranks");
    if (!jint(v, &u) || u < 1 || u > 65536)
        return ccs_err_set(err, CCS_ERR_FORMAT, "%s: \"nranks\" is not a "
                           "rank count (1 .. 65536)", ipath);
    set->nranks = (uint32_t)u;
    v = jget(root, "elem_bytes");
    if (v != NULL && jint(v, &u) && u <= 64)
        set->elem_bytes = (uint32_t)u;
    v = jget(root, "topo_fingerprint");
    if (v != NULL && v->kind == J_STR) {
        errno = 0;
        set->fingerprint = strtoull(v->str, &end, 16);
        if (errno != 0 || end == v->str || *end != '\0')
            return ccs_err_set(err, CCS_ERR_FORMAT, "%s: "
                               "\"topo_fingerprint\" '%s' is not a hex "
                               "number", ipath, v->str);
    } else if (v != NULL && v->kind != J_NULL) {
        return ccs_err_set(err, CCS_ERR_FORMAT, "%s: \"topo_fingerprint\" "
                           "is not a string", ipath);
    }
    return CCS_OK;
}

/* Load the plan `file` of DIR unless an earlier range named it; check it
 * agrees with the index. */
static ccs_status_t index_plan(ccs_planset_t *set, const char *dir,
                               const char *ipath, const char *file,
                               uint32_t *idx, bool *logged, ccs_err_t *err)
{
    const ccs_sched_t *s;
    char *path;
    ccs_status_t st;
    size_t len;
    uint32_t i = set->nplans;

    if (file == NULL)        /* a J_STR always has text; for the compiler */
        return ccs_err_set(err, CCS_ERR_FORMAT, "%s: plan file name "
                           "missing", ipath);
    for (uint32_t j = 0; j < set->nplans; j++)
        if (strcmp(set->files[j], file) == 0) {
            *idx = j;
            return CCS_OK;
        }
    if (!plain_name(file))
        return ccs_err_set(err, CCS_ERR_FORMAT, "%s: plan file '%s' is not "
                           "a plain name inside the directory", ipath, file);
    len = strlen(dir) + strlen(file) + 2;
    path = malloc(len);       /* owned here */
    if (path == NULL)
        return ccs_err_set(err, CCS_ERR_NOMEM, "out of memory");
    snprintf(path, len, "%s/%s", dir, file);
    set->files[i] = strdup(file);
    if (set->files[i] == NULL) {
        free(path);
        return ccs_err_set(err, CCS_ERR_NOMEM, "out of memory");
    }
    set->nplans++;          /* files[i] is the set's from here on */
    st = ccs_plan_load_file_msg(path, &set->plans[i], err->msg,
                                sizeof(err->msg));
    if (st != CCS_OK) {
        *logged = true;       /* the plan loader logs its failures */
        goto cleanup;
    }
    s = ccs_plan_sched(set->plans[i]);
    if (s->coll != set->coll || s->nranks != set->nranks) {
        st = ccs_err_set(err, CCS_ERR_MISMATCH, "%s: plan is for %s on %u "
                         "ranks, but %s says %s on %u ranks (plans of a set "
                         "must agree)", path, ccs_coll_str(s->coll),
                         s->nranks, ipath, ccs_coll_str(set->coll),
                         set->nranks);
        goto cleanup;
    }
    if (s->topo_fingerprint != 0 && set->fingerprint != 0 &&
        s->topo_fingerprint != set->fingerprint) {
        st = ccs_err_set(err, CCS_ERR_MISMATCH, "%s: plan is for topology "
                         "0x%016" PRIx64 ", %s says 0x%016" PRIx64, path,
                         s->topo_fingerprint, ipath, set->fingerprint);
        goto cleanup;
    }
    *idx = i;
cleanup:
    free(path);
    return st;
}

static ccs_status_t load_index(const char *dir, const char *ipath,
                               ccs_planset_t **out, bool *logged,
                               ccs_err_t *err)
{
    char *text = NULL;            /* owned here */
    size_t len = 0;
    jval_t root;
    jparser_t jp;
    const jval_t *ranges;
    ccs_planset_t *set = NULL;    /* to *out */
    ccs_planset_t hdr;
    ccs_status_t st;

    memset(&root, 0, sizeof(root));
    memset(&hdr, 0, sizeof(hdr));
    if ((st = read_text(ipath, &text, &len, err)) != CCS_OK)
        goto cleanup;
    jp.p = jp.start = text;
    jp.end = text + len;
    jp.err = err;
    jp.path = ipath;
    if ((st = jvalue(&jp, &root, 0)) != CCS_OK)
        goto cleanup;
    jws(&jp);
    if (jp.p != jp.end) {
        st = jfail(&jp, "text after the JSON document");
        goto cleanup;
    }
    if (root.kind != J_OBJ) {
        st = ccs_err_set(err, CCS_ERR_FORMAT, "%s: not a JSON object",
                         ipath);
        goto cleanup;
    }
    if ((st = index_header(&root, ipath, &hdr, err)) != CCS_OK)
        goto cleanup;
    ranges = jget(&root, "ranges");
    if (ranges == NULL || ranges->kind != J_ARR) {
        st = ccs_err_set(err, CCS_ERR_FORMAT, "%s: no \"ranges\" array",
                         ipath);
        goto cleanup;
    }
    if (ranges->n == 0) {
        st = ccs_err_set(err, CCS_ERR_FORMAT, "%s: no plans (\"ranges\" is "
                         "empty)", ipath);
        goto cleanup;
    }
    if (ranges->n > PS_MAX_RANGES) {
        st = ccs_err_set(err, CCS_ERR_FORMAT, "%s: %zu ranges, at most %d",
                         ipath, ranges->n, PS_MAX_RANGES);
        goto cleanup;
    }
    if ((st = set_alloc((uint32_t)ranges->n, (uint32_t)ranges->n, &set,
                        err)) != CCS_OK)
        goto cleanup;
    set->coll = hdr.coll;
    set->nranks = hdr.nranks;
    set->fingerprint = hdr.fingerprint;
    set->elem_bytes = hdr.elem_bytes;
    for (size_t k = 0; k < ranges->n; k++) {
        const jval_t *g = &ranges->items[k];
        const jval_t *f = jget(g, "file"), *mx = jget(g, "max_bytes");
        ps_range_t *r = &set->ranges[k];
        uint64_t lo, hi = UINT64_MAX;

        if (!jint(jget(g, "min_bytes"), &lo) || f == NULL ||
            f->kind != J_STR || mx == NULL ||
            (mx->kind != J_NULL && !jint(mx, &hi))) {
            st = ccs_err_set(err, CCS_ERR_FORMAT, "%s: range %zu needs "
                             "integer \"min_bytes\", integer or null "
                             "\"max_bytes\" and a \"file\"", ipath, k);
            goto cleanup;
        }
        /* Contiguous cover of every byte count: the lookup rule then
         * needs only the starts, and nothing falls between ranges. */
        if ((k == 0 && lo != 0) ||
            (k > 0 && lo != set->ranges[k - 1].max_bytes + 1) ||
            (k + 1 < ranges->n) != (mx->kind != J_NULL) || hi < lo) {
            st = ccs_err_set(err, CCS_ERR_FORMAT, "%s: range %zu "
                             "starting at %" PRIu64 " does not continue the "
                             "ranges before it (the first starts at 0, each "
                             "at the previous max_bytes + 1, only the last "
                             "has max_bytes null)", ipath, k, lo);
            goto cleanup;
        }
        r->min_bytes = lo;
        r->max_bytes = hi;
        st = index_plan(set, dir, ipath, f->str, &r->plan, logged, err);
        if (st != CCS_OK)
            goto cleanup;
    }
    *out = set;
    set = NULL;
cleanup:
    ccs_planset_destroy(set);
    jfree(&root);
    free(text);
    return st;
}

ccs_status_t ccs_planset_load(const char *path, ccs_planset_t **set,
                              char *msg, size_t msglen)
{
    ccs_err_t e;
    struct stat sb;
    char *dir = NULL, *ipath = NULL;   /* owned here */
    ccs_status_t st;
    size_t len;
    bool logged = false;      /* a plan load failed and said so */

    ccs_err_clear(&e);
    if (path == NULL || set == NULL) {
        st = ccs_err_set(&e, CCS_ERR_INVALID, "ccs_planset_load: NULL %s",
                         path == NULL ? "path" : "set pointer");
        goto done;
    }
    if (stat(path, &sb) != 0) {
        st = ccs_err_set(&e, CCS_ERR_IO, "%s: %s", path, strerror(errno));
        goto done;
    }
    len = strlen(path);
    if (S_ISDIR(sb.st_mode)) {
        dir = strdup(path);
        ipath = malloc(len + sizeof("/tuning.json"));
        if (dir == NULL || ipath == NULL) {
            st = ccs_err_set(&e, CCS_ERR_NOMEM, "out of memory");
            goto done;
        }
        snprintf(ipath, len + sizeof("/tuning.json"), "%s/tuning.json",
                 path);
        if (stat(ipath, &sb) != 0) {
            st = ccs_err_set(&e, CCS_ERR_IO, "%s: no tuning.json in it (%s):"
                             " not a plan set written by `ccsynth tune "
                             "--emit DIR`; a single plan loads from its "
                             ".ccs file", path, strerror(errno));
            goto done;
        }
        st = load_index(dir, ipath, set, &logged, &e);
    } else if (len >= 5 && strcmp(path + len - 5, ".json") == 0) {
        const char *slash = strrchr(path, '/');
        dir = slash == NULL ? strdup(".") : strndup(path, (size_t)(slash -
                                                                   path));
        if (dir == NULL) {
            st = ccs_err_set(&e, CCS_ERR_NOMEM, "out of memory");
            goto done;
        }
        st = load_index(dir, path, set, &logged, &e);
    } else {
        st = load_one(path, set, &logged, &e);
    }
    if (st == CCS_OK) {
        (*set)->log_level = ccs_log_level_env();
        CCS_LOG((*set)->log_level, CCS_LOG_INFO, "PLAN", -1, "plan set %s: "
                "%s, %u ranks, %u plans over %u size ranges", path,
                ccs_coll_str((*set)->coll), (*set)->nranks, (*set)->nplans,
                (*set)->nranges);
    }
done:
    free(dir);
    free(ipath);
    if (st != CCS_OK) {
        if (!logged)
            CCS_LOG(ccs_log_level_env(), CCS_LOG_WARN, "PLAN", -1, "%s",
                    ccs_err_msg(&e, st));
        if (msg != NULL && msglen > 0)
            snprintf(msg, msglen, "%s", ccs_err_msg(&e, st));
    } else if (msg != NULL && msglen > 0) {
        msg[0] = '\0';
    }
    return st;
}

/* ---- queries ---- */

ccs_status_t ccs_planset_get_info(const ccs_planset_t *set,
                                  ccs_planset_info_t *info)
{
    if (set == NULL || info == NULL)
        return CCS_ERR_INVALID;
    memset(info, 0, sizeof(*info));
    info->coll = set->coll;
    info->nranks = set->nranks;
    info->nplans = set->nplans;
    info->nranges = set->nranges;
    info->topo_fingerprint = set->fingerprint;
    info->elem_bytes = set->elem_bytes;
    return CCS_OK;
}

const ccs_plan_t *ccs_planset_plan(const ccs_planset_t *set, uint32_t i)
{
    if (set == NULL || i >= set->nplans)
        return NULL;
    return set->plans[i];
}

ccs_status_t ccs_planset_range(const ccs_planset_t *set, uint32_t k,
                               uint64_t *min_bytes, uint64_t *max_bytes,
                               uint32_t *plan_index)
{
    if (set == NULL || k >= set->nranges)
        return CCS_ERR_INVALID;
    if (min_bytes != NULL)
        *min_bytes = set->ranges[k].min_bytes;
    if (max_bytes != NULL)
        *max_bytes = set->ranges[k].max_bytes;
    if (plan_index != NULL)
        *plan_index = set->ranges[k].plan;
    return CCS_OK;
}

size_t ccs_planset_call_bytes(const ccs_planset_t *set, size_t count,
                              ccs_dtype_t dtype)
{
    size_t es = ccs_dtype_size(dtype), blocks = 1, b;

    if (set != NULL && ccs_coll_blocked(set->coll))
        blocks = set->nranks;
    if (es == 0)
        return 0;
    if (count > SIZE_MAX / es)
        return SIZE_MAX;
    b = count * es;
    return b > SIZE_MAX / blocks ? SIZE_MAX : b * blocks;
}

ccs_status_t ccs_planset_pick(const ccs_planset_t *set, size_t bytes,
                              uint32_t *plan_index)
{
    if (set == NULL || plan_index == NULL)
        return CCS_ERR_INVALID;
    *plan_index = set->ranges[ccs_planset_pick_range(set->nranges,
                                                     (double)bytes, ps_start,
                                                     set)].plan;
    return CCS_OK;
}

/* ---- running ---- */

ccs_status_t ccs_planset_run(const ccs_planset_t *set, ccs_comm_t *comm,
                             const void *sendbuff, void *recvbuff,
                             size_t count, ccs_dtype_t dtype, ccs_redop_t op,
                             void *stream, const ccs_planset_opts_t *opts)
{
    static const ccs_planset_opts_t defaults = CCS_PLANSET_OPTS_INIT;
    ccs_run_opts_t ro = CCS_RUN_OPTS_INIT;
    ccs_err_t *err;
    ccs_status_t st;
    uint32_t idx;

    if (comm == NULL)
        return CCS_ERR_INVALID;
    err = &comm->err;
    ccs_err_clear(err);
    if (opts == NULL)
        opts = &defaults;
    /* The set-level checks, with ccs_run's statuses; what the picked plan
     * checks (broken comm, op, straggler, stream, buffers, counts) is left
     * to ccs_run_ex so that the messages are the same. */
    if (set == NULL) {
        st = ccs_err_set(err, CCS_ERR_INVALID, "NULL plan set");
        goto fail;
    }
    if ((unsigned)dtype >= CCS_DTYPE_COUNT) {
        st = ccs_err_set(err, CCS_ERR_INVALID, "unknown datatype %d",
                         (int)dtype);
        goto fail;
    }
    if ((uint32_t)comm->nranks != set->nranks) {
        st = ccs_err_set(err, CCS_ERR_MISMATCH, "plan set (%s) is for %u "
                         "ranks, the communicator has %d",
                         ccs_coll_str(set->coll), set->nranks, comm->nranks);
        goto fail;
    }
    if (opts->expect_coll != CCS_COLL_COUNT &&
        opts->expect_coll != set->coll) {
        st = ccs_err_set(err, CCS_ERR_MISMATCH, "plan set is for %s, called "
                         "as %s", ccs_coll_str(set->coll),
                         ccs_coll_str(opts->expect_coll));
        goto fail;
    }
    if (opts->topo_fingerprint != 0 && set->fingerprint != 0 &&
        opts->topo_fingerprint != set->fingerprint) {
        st = ccs_err_set(err, CCS_ERR_MISMATCH, "plan set was tuned for "
                         "topology 0x%016" PRIx64 ", the job runs on "
                         "0x%016" PRIx64 " (re-run ccsynth tune for it)",
                         set->fingerprint, opts->topo_fingerprint);
        goto fail;
    }
    (void)ccs_planset_pick(set, ccs_planset_call_bytes(set, count, dtype),
                           &idx);
    if (opts->plan_index != NULL)
        *opts->plan_index = idx;
    CCS_LOG(set->log_level, CCS_LOG_TRACE, "EXEC", comm->rank, "plan set: "
            "count %zu %s -> plan %u (%s)", count, ccs_dtype_str(dtype), idx,
            set->files[idx]);
    ro.straggler = opts->straggler;
    ro.expect_coll = opts->expect_coll;
    ro.stats = opts->stats;
    ro.plain = opts->plain;
    return ccs_run_ex(set->plans[idx], comm, sendbuff, recvbuff, count,
                      dtype, op, stream, &ro);
fail:
    CCS_LOG(comm->log_level, CCS_LOG_WARN, "EXEC", comm->rank, "%s",
            ccs_err_msg(err, st));
    return st;
}
