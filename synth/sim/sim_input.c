/*
 * sim_input.c - the simulator's inputs from the command line: the arrivals
 * file ("rank seconds" per line) and size lists (SIZE, LO:HI, LO:HI:FACTOR).
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "units.h"
#include "sim_int.h"


/* ---- arrivals file ---- */

ccs_status_t sim_read_arrivals(const char *path, uint32_t nranks,
                               double **out, ccs_err_t *err)
{
    FILE *f = NULL;          /* owned here */
    double *arr = NULL;      /* owned here until handed to *out */
    unsigned *seen = NULL;   /* owned here: line that set each rank, 0 */
    char *line = NULL;       /* owned here (getline) */
    size_t cap = 0;
    unsigned lineno = 0;
    struct stat sb;
    ccs_status_t st = CCS_OK;

    arr = calloc(nranks ? nranks : 1, sizeof(double));
    seen = calloc(nranks ? nranks : 1, sizeof(unsigned));
    if (arr == NULL || seen == NULL) {
        st = ccs_err_set(err, CCS_ERR_NOMEM, "out of memory (arrivals)");
        goto cleanup;
    }
    /* A missing, unreadable or wrong kind of file is bad input (the
     * caller's exit 3, like a topology or schedule file), not our failure:
     * CCS_ERR_PARSE, the status every other bad input here gets. */
    f = fopen(path, "r");
    if (f == NULL) {
        st = ccs_err_set(err, CCS_ERR_PARSE, "%s: cannot read the arrivals "
                         "file: %s", path, strerror(errno));
        goto cleanup;
    }
    if (fstat(fileno(f), &sb) == 0 && S_ISDIR(sb.st_mode)) {
        st = ccs_err_set(err, CCS_ERR_PARSE, "%s: is a directory, not an "
                         "arrivals file", path);
        goto cleanup;
    }
    errno = 0;
    while (getline(&line, &cap, f) != -1) {
        char *hash = strchr(line, '#'), *tok_r, *tok_t, *extra, *save = NULL;
        long rank;
        double secs;

        lineno++;
        if (hash != NULL)
            *hash = '\0';
        tok_r = strtok_r(line, " \t\r\n", &save);
        if (tok_r == NULL)
            continue;
        tok_t = strtok_r(NULL, " \t\r\n", &save);
        extra = strtok_r(NULL, " \t\r\n", &save);
        if (tok_t == NULL) {
            st = ccs_err_set(err, CCS_ERR_PARSE, "%s:%u: expected \"rank "
                             "seconds\", got only '%.40s'", path, lineno,
                             tok_r);
            goto cleanup;
        }
        if (!units_parse_int(tok_r, LONG_MIN, LONG_MAX, &rank)) {
            st = ccs_err_set(err, CCS_ERR_PARSE, "%s:%u: bad rank '%.40s' "
                             "(want an integer in 0..%u)", path, lineno,
                             tok_r, nranks - 1);
            goto cleanup;
        }
        if (rank < 0 || rank >= (long)nranks) {
            st = ccs_err_set(err, CCS_ERR_PARSE, "%s:%u: rank %ld out of "
                             "range 0..%u", path, lineno, rank, nranks - 1);
            goto cleanup;
        }
        if (!units_parse_time(tok_t, &secs)) {
            st = ccs_err_set(err, CCS_ERR_PARSE, "%s:%u: bad time '%.40s' "
                             "(want seconds >= 0, or a number with s, ms, "
                             "us or ns, e.g. 2ms)", path, lineno, tok_t);
            goto cleanup;
        }
        if (extra != NULL) {
            st = ccs_err_set(err, CCS_ERR_PARSE, "%s:%u: unexpected "
                             "'%.40s' after the time (one \"rank seconds\" "
                             "pair per line)", path, lineno, extra);
            goto cleanup;
        }
        if (seen[rank] != 0) {
            st = ccs_err_set(err, CCS_ERR_PARSE, "%s:%u: rank %ld listed "
                             "again (first on line %u)", path, lineno, rank,
                             seen[rank]);
            goto cleanup;
        }
        seen[rank] = lineno;
        arr[rank] = secs;
        errno = 0;           /* so a read error below reports its own */
    }
    if (ferror(f)) {
        st = ccs_err_set(err, CCS_ERR_IO, "%s: read error: %s", path,
                         strerror(errno ? errno : EIO));
        goto cleanup;
    }
    *out = arr;
    arr = NULL;

cleanup:
    if (f != NULL)
        fclose(f);
    free(line);
    free(seen);
    free(arr);
    return st;
}

/* ---- command-line helpers ---- */

ccs_status_t sim_parse_sizes(const char *spec, double **out, uint32_t *n,
                             ccs_err_t *err)
{
    char *copy = NULL;       /* owned here: strtok_r works on it */
    double *v = NULL;        /* owned here until handed to *out */
    uint32_t cnt = 0, cap = 0;
    ccs_status_t st = CCS_OK;
    char *save = NULL, *item;

    if (spec == NULL || *spec == '\0')
        return ccs_err_set(err, CCS_ERR_INVALID, "empty size list");
    copy = strdup(spec);
    if (copy == NULL)
        return ccs_err_set(err, CCS_ERR_NOMEM, "out of memory (sizes)");
    for (item = strtok_r(copy, ",", &save); item != NULL;
         item = strtok_r(NULL, ",", &save)) {
        char *c1 = strchr(item, ':'), *c2 = NULL;
        double lo, hi, factor = 2;

        if (c1 != NULL) {
            *c1++ = '\0';
            c2 = strchr(c1, ':');
            if (c2 != NULL)
                *c2++ = '\0';
        }
        if (!units_parse_size(item, &lo) ||
            (c1 != NULL && !units_parse_size(c1, &hi)) ||
            (c2 != NULL && (!units_parse_double(c2, &factor) || !(factor > 1)))) {
            st = ccs_err_set(err, CCS_ERR_INVALID,
                             "bad size list '%s' (want SIZE, LO:HI or "
                             "LO:HI:FACTOR with FACTOR > 1, e.g. 1K:4G)",
                             spec);
            goto cleanup;
        }
        if (c1 == NULL)
            hi = lo;
        if (hi > SIM_MAX_SIZE_BYTES) {
            st = ccs_err_set(err, CCS_ERR_INVALID, "bad size list '%s': "
                             "%.0f bytes is more than 2^53 (8 PiB), the "
                             "largest exact byte count", spec, hi);
            goto cleanup;
        }
        if (hi < lo) {
            st = ccs_err_set(err, CCS_ERR_INVALID,
                             "bad size range in '%s': %.0f > %.0f", spec, lo,
                             hi);
            goto cleanup;
        }
        /* The 1e-9 slack keeps HI itself when FACTOR^k lands on it. */
        for (double x = lo; x <= hi * (1 + 1e-9); x *= factor) {
            if (cnt == SIM_MAX_SIZES) {
                st = ccs_err_set(err, CCS_ERR_INVALID,
                                 "size list '%s' has more than %u sizes",
                                 spec, SIM_MAX_SIZES);
                goto cleanup;
            }
            if (!sim_grow((void **)&v, &cap, cnt + 1, sizeof(double))) {
                st = ccs_err_set(err, CCS_ERR_NOMEM, "out of memory (sizes)");
                goto cleanup;
            }
            v[cnt++] = round(x);
            if (x == 0)
                break;
        }
    }
    if (cnt == 0) {
        st = ccs_err_set(err, CCS_ERR_INVALID, "empty size list '%s'", spec);
        goto cleanup;
    }
    *out = v;
    *n = cnt;
    v = NULL;

cleanup:
    free(copy);
    free(v);
    return st;
}

