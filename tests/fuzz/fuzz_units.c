/*
 * fuzz_units.c - the number and unit parsers (synth/util/units.c) and the
 * simulator's size lists built on them (sim_parse_sizes).  Besides not
 * crashing, an accepted value must be what the parsers promise: finite
 * and non-negative sizes, times and bandwidths, integers in range.
 */
#include <math.h>

#include "sim.h"
#include "units.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s;
    double v, *sizes = NULL;
    long l;
    uint32_t n = 0;
    ccs_err_t err;

    if (size > 512)
        return 0;
    s = fuzz_cstr(data, size);
    if (units_parse_size(s, &v) && !(isfinite(v) && v >= 0))
        abort();
    if (units_parse_time(s, &v) && !(isfinite(v) && v >= 0))
        abort();
    if (units_parse_bw(s, &v) && !(isfinite(v) && v > 0))
        abort();
    if (units_parse_int(s, -1000, 1000, &l) && (l < -1000 || l > 1000))
        abort();
    (void)units_parse_double(s, &v);
    if (sim_parse_sizes(s, &sizes, &n, &err) == CCS_OK) {
        if (n == 0 || n > SIM_MAX_SIZES)
            abort();
        free(sizes);
    }
    free(s);
    return 0;
}
