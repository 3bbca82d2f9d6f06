/* json.c - the one JSON writer; see json.h. */
#include <math.h>
#include <string.h>

#include "json.h"

/* Length of the valid UTF-8 sequence at p (at most n bytes), or 0 when
 * p[0] does not start one (RFC 3629: no overlongs, no surrogates, at most
 * U+10FFFF). */
static size_t utf8_len(const unsigned char *p, size_t n)
{
    size_t len;
    unsigned cp;

    if (p[0] < 0xc2 || p[0] > 0xf4)
        return 0;
    len = p[0] < 0xe0 ? 2 : p[0] < 0xf0 ? 3 : 4;
    if (len > n)
        return 0;
    cp = p[0] & (0x7f >> len);
    for (size_t i = 1; i < len; i++) {
        if ((p[i] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (p[i] & 0x3f);
    }
    if ((len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
        (len == 4 && (cp < 0x10000 || cp > 0x10ffff)))
        return 0;
    return len;
}

void json_strn(FILE *f, const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)(s ? s : "");

    fputc('"', f);
    for (size_t i = 0; i < n;) {
        unsigned char ch = p[i];
        size_t u;
        switch (ch) {
        case '"':  fputs("\\\"", f); break;
        case '\\': fputs("\\\\", f); break;
        case '\b': fputs("\\b", f); break;
        case '\f': fputs("\\f", f); break;
        case '\n': fputs("\\n", f); break;
        case '\r': fputs("\\r", f); break;
        case '\t': fputs("\\t", f); break;
        default:
            if (ch >= 0x80 && (u = utf8_len(p + i, n - i)) > 0) {
                fwrite(p + i, 1, u, f);
                i += u;
                continue;
            }
            if (ch < 0x20 || ch >= 0x7f)
                fprintf(f, "\\u%04x", ch);
            else
                fputc(ch, f);
        }
        i++;
    }
    fputc('"', f);
}

void json_str(FILE *f, const char *s)
{
    json_strn(f, s, s ? strlen(s) : 0);
}

void json_num(FILE *f, const char *fmt, double v)
{
    if (!isfinite(v))
        fputs("null", f);
    else
        fprintf(f, fmt, v);
}

void json_w_init(json_w_t *w, FILE *f, int indent)
{
    memset(w, 0, sizeof(*w));
    w->f = f;
    w->indent = indent;
    w->first[0] = true;
}

static void newline(json_w_t *w)
{
    if (w->indent <= 0)
        return;
    fputc('\n', w->f);
    for (int i = 0; i < w->depth * w->indent; i++)
        fputc(' ', w->f);
}

/* Before any value: the comma and line break an array member needs (an
 * object member got them from its key). */
static void before_value(json_w_t *w)
{
    if (w->after_key) {
        w->after_key = false;
        return;
    }
    if (w->depth == 0)
        return;
    if (!w->first[w->depth])
        fputc(',', w->f);
    if (w->indent <= 0 && !w->first[w->depth])
        fputc(' ', w->f);
    w->first[w->depth] = false;
    newline(w);
}

static void open_level(json_w_t *w, char c)
{
    before_value(w);
    fputc(c, w->f);
    if (w->depth + 1 >= JSON_MAX_DEPTH) {
        w->overflow = true;
        return;
    }
    w->depth++;
    w->first[w->depth] = true;
}

static void close_level(json_w_t *w, char c)
{
    bool empty = w->first[w->depth];

    if (w->depth > 0)
        w->depth--;
    if (!empty)
        newline(w);
    fputc(c, w->f);
}

void json_w_begin_object(json_w_t *w) { open_level(w, '{'); }
void json_w_end_object(json_w_t *w) { close_level(w, '}'); }
void json_w_begin_array(json_w_t *w) { open_level(w, '['); }
void json_w_end_array(json_w_t *w) { close_level(w, ']'); }

void json_w_key(json_w_t *w, const char *key)
{
    before_value(w);
    json_str(w->f, key);
    fputs(": ", w->f);
    w->after_key = true;
}

void json_w_str(json_w_t *w, const char *s)
{
    before_value(w);
    json_str(w->f, s);
}

void json_w_num(json_w_t *w, const char *fmt, double v)
{
    before_value(w);
    json_num(w->f, fmt, v);
}

void json_w_int(json_w_t *w, long long v)
{
    before_value(w);
    fprintf(w->f, "%lld", v);
}

void json_w_bool(json_w_t *w, bool v)
{
    before_value(w);
    fputs(v ? "true" : "false", w->f);
}

void json_w_null(json_w_t *w)
{
    before_value(w);
    fputs("null", w->f);
}

bool json_w_ok(const json_w_t *w)
{
    return !w->overflow && !ferror(w->f);
}
