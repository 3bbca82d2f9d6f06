/*
 * json.h - the one JSON writer of ccsynth (docs/json.md): every command's
 * --json output, tuning.json and the simulator's reports go through it.
 *
 * Strings follow RFC 8259: '"' and '\' escaped; \b \f \n \r \t in their
 * short forms; every other byte below 0x20, and 0x7f, as \u00XX.  Valid
 * UTF-8 passes through unchanged; a byte that is not part of valid UTF-8
 * (a params text or a path is not promised to be UTF-8) is written as
 * \u00XX, i.e. read as Latin-1, so the output always parses.
 *
 * Numbers: finite values as printf would print them; NaN and infinities,
 * which JSON cannot carry, as null.
 *
 * Nesting: json_w_t tracks objects and arrays so that commas, colons and
 * indentation come out right; the existing hand-laid outputs use only the
 * string and number functions, which keeps them byte for byte.
 */
#ifndef CCS_UTIL_JSON_H
#define CCS_UTIL_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* A JSON string literal of s (NULL writes ""), or of its first n bytes. */
void json_str(FILE *f, const char *s);
void json_strn(FILE *f, const char *s, size_t n);
/* A number with printf format `fmt` (one double conversion, e.g. "%.6f"),
 * or null when v is not finite. */
void json_num(FILE *f, const char *fmt, double v);

#define JSON_MAX_DEPTH 32

/* A streaming writer.  Caller-owned (on the stack); no allocation. */
typedef struct json_w {
    FILE *f;
    int indent;                    /* spaces per level; 0: one line */
    int depth;
    bool first[JSON_MAX_DEPTH];    /* no member written yet at this level */
    bool after_key;                /* a key was written, its value is next */
    bool overflow;                 /* nested past JSON_MAX_DEPTH */
} json_w_t;

void json_w_init(json_w_t *w, FILE *f, int indent);
void json_w_begin_object(json_w_t *w);
void json_w_end_object(json_w_t *w);
void json_w_begin_array(json_w_t *w);
void json_w_end_array(json_w_t *w);
/* A member name inside an object; the next call writes its value. */
void json_w_key(json_w_t *w, const char *key);
void json_w_str(json_w_t *w, const char *s);
void json_w_num(json_w_t *w, const char *fmt, double v);
void json_w_int(json_w_t *w, long long v);
void json_w_bool(json_w_t *w, bool v);
void json_w_null(json_w_t *w);
/* False when the nesting went past JSON_MAX_DEPTH or the stream failed. */
bool json_w_ok(const json_w_t *w);

#endif /* CCS_UTIL_JSON_H */
