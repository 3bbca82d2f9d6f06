/*
 * synth_out.c - the files `ccsynth synth` and `ccsynth trees` write
 * besides the schedule: the algorithm's trees as Graphviz DOT and the
 * MILP's model as CPLEX LP text.  The algorithms hand these back in their
 * report (algo_report_t); writing them is the command's job.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "outfile.h"
#include "synth_out.h"

/* mtree_write_dot in the shape of the shared output writer. */
typedef struct dot_job {
    const mtree_t *m;
    const topo_t *t;
} dot_job_t;

static ccs_status_t dot_writer(FILE *f, const void *ctx, ccs_err_t *err)
{
    const dot_job_t *j = ctx;
    ccs_status_t st = mtree_write_dot(j->m, j->t, f);

    return st == CCS_OK ? st : ccs_err_set(err, st, "%s", strerror(errno));
}

ccs_status_t cli_write_trees_dot(const mtree_t *m, const topo_t *t,
                                 const char *path, ccs_err_t *err)
{
    dot_job_t job = { m, t };
    ccs_status_t st;

    if (m == NULL || t == NULL || path == NULL || path[0] == '\0')
        return ccs_err_set(err, CCS_ERR_INVALID, "multitree: no DOT path");
    if (strcmp(path, "-") == 0) {
        st = mtree_write_dot(m, t, stdout);
        if (st == CCS_OK && fflush(stdout) != 0)
            st = CCS_ERR_IO;
        return st == CCS_OK ? CCS_OK : ccs_err_set(err, CCS_ERR_IO,
                                    "multitree: writing DOT to stdout "
                                    "failed: %s", strerror(errno));
    }
    st = outfile_write(path, dot_writer, &job, err);
    if (st != CCS_OK)
        ccs_err_prefix(err, "multitree: writing DOT: ");
    return st;
}

static ccs_status_t text_writer(FILE *f, const void *ctx, ccs_err_t *err)
{
    if (fputs((const char *)ctx, f) == EOF)
        return ccs_err_set(err, CCS_ERR_IO, "%s", strerror(errno));
    return CCS_OK;
}

ccs_status_t cli_write_text(const char *path, const char *text,
                            const char *what, ccs_err_t *err)
{
    ccs_status_t st = outfile_write(path, text_writer, text, err);

    if (st != CCS_OK)
        ccs_err_prefix(err, "milp: writing %s: ", what);
    return st;
}
