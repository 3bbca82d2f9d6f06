/*
 * fuzz_topo_yaml.c - the YAML topology loader (synth/topo/topo_yaml.c) and
 * the builder's validation behind it (topo_load on a .yaml file).
 */
#include "topo.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    topo_t *t = NULL;
    ccs_err_t err;

    if (size > 8192)
        return 0;   /* larger inputs only make bigger graphs */
    if (topo_load(fuzz_file(data, size, ".yaml"), NULL, &t, &err) ==
        CCS_OK)
        topo_destroy(t);
    return 0;
}
