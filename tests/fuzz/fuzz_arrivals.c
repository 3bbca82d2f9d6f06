/*
 * fuzz_arrivals.c - the simulator's arrivals file ("rank seconds" lines,
 * synth/sim/sim_input.c), read for an 8-rank schedule.  An accepted file
 * gives every rank a finite, non-negative arrival time.
 */
#include <math.h>

#include "sim.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    double *arr = NULL;
    ccs_err_t err;

    if (sim_read_arrivals(fuzz_file(data, size, ".txt"), 8, &arr, &err) ==
        CCS_OK) {
        for (int r = 0; r < 8; r++)
            if (!(isfinite(arr[r]) && arr[r] >= 0))
                abort();
        free(arr);
    }
    return 0;
}
