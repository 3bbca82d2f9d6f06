/* PLACEHOLDER: replaced by the verifier. */
#include "verify.h"

ccs_status_t verify_sched(const ccs_sched_t *s, verify_report_t *rep,
                          ccs_err_t *err)
{
    (void)s; (void)rep;
    return ccs_err_set(err, CCS_ERR_UNSUPPORTED, "verifier not built yet");
}
