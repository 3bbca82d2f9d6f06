/* PLACEHOLDER: replaced by the format module. */
#include "format.h"

ccs_status_t ccs_format_write_file(const ccs_sched_t *s, const char *path,
                                   ccs_err_t *err)
{
    (void)s; (void)path;
    return ccs_err_set(err, CCS_ERR_UNSUPPORTED, "format not built yet");
}
ccs_status_t ccs_format_read_file(const char *path, ccs_sched_t **out,
                                  ccs_err_t *err)
{
    (void)path; (void)out;
    return ccs_err_set(err, CCS_ERR_UNSUPPORTED, "format not built yet");
}
