/*
 * units.c - numbers with units, as topologies and options write them.
 *
 * One parser for every place a size, time or bandwidth is read (YAML
 * topologies, built-in specs, arrivals files, command-line options), so a
 * value means the same wherever it is written.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "units.h"

/* Length of the decimal number at the start of s: [+-]digits[.digits]
 * [e[+-]digits], at least one digit before the exponent; 0 if there is
 * none.  strtod alone would also take hex ("0x10"), "inf", "nan" and
 * leading blanks, which no topology or option means. */
static size_t decimal_len(const char *s)
{
    size_t i = 0, digits = 0;

    if (s[i] == '+' || s[i] == '-')
        i++;
    while (isdigit((unsigned char)s[i])) {
        i++;
        digits++;
    }
    if (s[i] == '.') {
        i++;
        while (isdigit((unsigned char)s[i])) {
            i++;
            digits++;
        }
    }
    if (digits == 0)
        return 0;
    if (s[i] == 'e' || s[i] == 'E') {
        size_t j = i + 1;

        if (s[j] == '+' || s[j] == '-')
            j++;
        if (isdigit((unsigned char)s[j])) {
            while (isdigit((unsigned char)s[j]))
                j++;
            i = j;
        }
    }
    return i;
}

bool units_parse_double(const char *s, double *out)
{
    char *end;
    double v;

    if (s == NULL || *s == '\0' || decimal_len(s) != strlen(s))
        return false;
    errno = 0;
    v = strtod(s, &end);
    if (errno != 0 || *end != '\0' || !isfinite(v))
        return false;
    *out = v;
    return true;
}

bool units_parse_int(const char *s, long lo, long hi, long *out)
{
    char *end;
    long v;

    if (s == NULL || *s == '\0')
        return false;
    errno = 0;
    v = strtol(s, &end, 10);
    if (errno != 0 || *end != '\0' || v < lo || v > hi)
        return false;
    *out = v;
    return true;
}

/* Split "12.5GB/s" into 12.5 and "GB/s". */
static bool split_number(const char *s, double *v, const char **unit)
{
    char *end;
    size_t len;

    /* Sizes, times and bandwidths are never negative, not even -0. */
    if (s == NULL || s[0] == '-' || (len = decimal_len(s)) == 0)
        return false;
    errno = 0;
    *v = strtod(s, &end);
    if (errno != 0 || end != s + len || !isfinite(*v) || *v < 0)
        return false;
    while (*end == ' ')
        end++;
    *unit = end;
    return true;
}

/* A unit a quantity may be written in and the factor it stands for. */
typedef struct unit_mult {
    const char *u;
    double mult;
} unit_mult_t;

/* "<number><unit>" with the unit one of units[0..n) (letter case ignored
 * when nocase): *out = the number times its factor, written whenever the
 * unit is known; true when that is finite. */
static bool parse_with_unit(const char *s, const unit_mult_t *units,
                            size_t n, bool nocase, double *out)
{
    double v;
    const char *unit;

    if (!split_number(s, &v, &unit))
        return false;
    for (size_t i = 0; i < n; i++) {
        if ((nocase ? strcasecmp(unit, units[i].u)
                    : strcmp(unit, units[i].u)) == 0) {
            *out = v * units[i].mult;
            return isfinite(*out);
        }
    }
    return false;
}

bool units_parse_size(const char *s, double *bytes)
{
    static const unit_mult_t units[] = {
        { "", 1 }, { "B", 1 },
        { "K", 1024.0 }, { "KB", 1024.0 }, { "KiB", 1024.0 },
        { "M", 1048576.0 }, { "MB", 1048576.0 }, { "MiB", 1048576.0 },
        { "G", 1073741824.0 }, { "GB", 1073741824.0 }, { "GiB", 1073741824.0 },
        { "T", 1099511627776.0 }, { "TB", 1099511627776.0 },
        { "TiB", 1099511627776.0 },
    };
    return parse_with_unit(s, units, sizeof(units) / sizeof(units[0]), true,
                           bytes);
}

bool units_parse_time(const char *s, double *seconds)
{
    static const unit_mult_t units[] = {
        { "", 1 }, { "s", 1 }, { "ms", 1e-3 }, { "us", 1e-6 },
        { "ns", 1e-9 },
    };
    return parse_with_unit(s, units, sizeof(units) / sizeof(units[0]), false,
                           seconds);
}

bool units_parse_time_strict(const char *s, double *seconds)
{
    double v;
    const char *unit;

    if (!split_number(s, &v, &unit))
        return false;
    if (*unit == '\0' && v != 0)
        return false;
    return units_parse_time(s, seconds);
}

bool units_parse_bw(const char *s, double *bytes_per_s)
{
    /* Decimal units, as link speeds are quoted: GB/s bytes, Gb/s bits. */
    static const unit_mult_t units[] = {
        { "", 1 }, { "B/s", 1 }, { "Bps", 1 },
        { "KB/s", 1e3 }, { "MB/s", 1e6 }, { "GB/s", 1e9 }, { "TB/s", 1e12 },
        { "KBps", 1e3 }, { "MBps", 1e6 }, { "GBps", 1e9 }, { "TBps", 1e12 },
        { "Kb/s", 1e3 / 8 }, { "Mb/s", 1e6 / 8 }, { "Gb/s", 1e9 / 8 },
        { "Tb/s", 1e12 / 8 }, { "Kbps", 1e3 / 8 }, { "Mbps", 1e6 / 8 },
        { "Gbps", 1e9 / 8 }, { "Tbps", 1e12 / 8 },
    };
    return parse_with_unit(s, units, sizeof(units) / sizeof(units[0]), false,
                           bytes_per_s) &&
           *bytes_per_s > 0;
}

void units_format_size(double bytes, char *buf, size_t len)
{
    static const char *const names[] = { "B", "KiB", "MiB", "GiB", "TiB" };
    int i = 0;

    while (bytes >= 1024.0 && i < 4 && fmod(bytes, 1024.0) == 0) {
        bytes /= 1024.0;
        i++;
    }
    snprintf(buf, len, "%.0f %s", bytes, names[i]);
}

