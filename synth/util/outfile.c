/* outfile.c - ccsynth's output files, on runtime/ccs_out.c; see outfile.h. */
#include "outfile.h"

ccs_status_t outfile_write(const char *path, outfile_writer_fn writer,
                           const void *ctx, ccs_err_t *err)
{
    ccs_out_t *o = NULL;   /* committed or aborted here */
    ccs_status_t st;

    st = ccs_out_open(path, &o, err);
    if (st != CCS_OK)
        return st;
    st = writer(ccs_out_stream(o), ctx, err);
    if (st != CCS_OK) {
        ccs_err_prefix(err, "%s: ", path);
        ccs_out_abort(o);
        return st;
    }
    return ccs_out_commit(o, err);
}
