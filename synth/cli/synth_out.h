/* synth_out.h - writing what an algorithm's report carries (synth_out.c). */
#ifndef CCS_SYNTH_OUT_H
#define CCS_SYNTH_OUT_H

#include "err.h"
#include "mtree.h"
#include "topo.h"

/* mtree_write_dot into the file `path`, atomically (a temporary file in
 * the same directory, renamed over path once complete); "-" writes to
 * stdout.  CCS_ERR_IO naming the path when it cannot be written. */
ccs_status_t cli_write_trees_dot(const mtree_t *m, const topo_t *t,
                                 const char *path, ccs_err_t *err);

/* text into the file `path` (`what` names it in the error: "LP file").
 * CCS_ERR_IO naming the path when it cannot be written. */
ccs_status_t cli_write_text(const char *path, const char *text,
                            const char *what, ccs_err_t *err);

#endif /* CCS_SYNTH_OUT_H */
