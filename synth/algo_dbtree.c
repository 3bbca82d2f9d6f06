/* PLACEHOLDER: replaced by the real algorithm module. */
#include "algo.h"

static ccs_status_t build_dbtree(const topo_t *t, const algo_params_t *p,
                          ccs_sched_t **out, ccs_err_t *err)
{
    (void)t; (void)p; (void)out;
    return ccs_err_set(err, CCS_ERR_UNSUPPORTED, "dbtree: not built yet");
}

const algo_desc_t algo_dbtree = {
    .name = "dbtree", .desc = "(not built yet)", .colls = 0,
    .check = NULL, .build = build_dbtree,
};
