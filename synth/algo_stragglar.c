/* PLACEHOLDER: replaced by the real algorithm module. */
#include "algo.h"

static ccs_status_t build_stragglar(const topo_t *t, const algo_params_t *p,
                          ccs_sched_t **out, ccs_err_t *err)
{
    (void)t; (void)p; (void)out;
    return ccs_err_set(err, CCS_ERR_UNSUPPORTED, "stragglar: not built yet");
}

const algo_desc_t algo_stragglar = {
    .name = "stragglar", .desc = "(not built yet)", .colls = 0,
    .check = NULL, .build = build_stragglar,
};
