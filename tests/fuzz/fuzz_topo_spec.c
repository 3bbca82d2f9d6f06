/*
 * fuzz_topo_spec.c - the built-in topology spec parser
 * (synth/topo/topo_builtin.c: "torus:4x4,alpha=2us", ...).  The spec is
 * parsed and its nodes and links built; the routing step (tb_finish) is
 * left to the YAML harness, so large but valid specs stay cheap.
 */
#include "topo_internal.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *spec;
    topo_builder_t b;
    ccs_err_t err;

    if (size > 256)
        return 0;
    spec = fuzz_cstr(data, size);
    tb_init(&b, spec, NULL);
    (void)topo_builtin_build(spec, &b, &err);
    tb_free(&b);
    free(spec);
    return 0;
}
