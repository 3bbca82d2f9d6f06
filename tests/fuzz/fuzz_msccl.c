/*
 * fuzz_msccl.c - the MSCCL XML importer (synth/msccl/msccl_import.c):
 * parse, check, match, order, lay out; every accepted file must give a
 * structurally valid schedule (what msccl_import_mem promises), which is
 * then verified as `ccsynth import` does.  Seeds: small exports of every
 * collective in corpus/msccl/.
 */
#include <stdlib.h>

#include "msccl.h"
#include "verify.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ccs_sched_t *s = NULL;
    ccs_err_t err;

    if (size > 65536)
        return 0;   /* larger files only make longer programs */
    if (msccl_import_mem((const char *)data, size, "fuzz.xml", NULL, &s,
                         NULL, &err) == CCS_OK) {
        if (ccs_sched_validate(s, &err) != CCS_OK)
            abort();
        (void)verify_sched(s, NULL, &err);
        ccs_sched_destroy(s);
    }
    return 0;
}
