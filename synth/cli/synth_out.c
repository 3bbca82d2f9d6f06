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
#include <unistd.h>

#include "synth_out.h"

ccs_status_t cli_write_trees_dot(const mtree_t *m, const topo_t *t,
                                 const char *path, ccs_err_t *err)
{
    char *tmp = NULL;           /* owned here */
    FILE *f = NULL;             /* owned here */
    ccs_status_t st = CCS_OK;
    size_t len;

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
    len = strlen(path) + 16;
    tmp = malloc(len);
    if (tmp == NULL)
        return ccs_err_set(err, CCS_ERR_NOMEM, "multitree: out of memory");
    snprintf(tmp, len, "%s.tmp%ld", path, (long)getpid());
    f = fopen(tmp, "w");
    if (f == NULL) {
        st = ccs_err_set(err, CCS_ERR_IO, "multitree: cannot write '%s': %s",
                         tmp, strerror(errno));
        goto cleanup;
    }
    st = mtree_write_dot(m, t, f);
    if (fclose(f) != 0 && st == CCS_OK)
        st = CCS_ERR_IO;
    f = NULL;
    if (st == CCS_OK && rename(tmp, path) != 0)
        st = CCS_ERR_IO;
    if (st != CCS_OK) {
        st = ccs_err_set(err, CCS_ERR_IO, "multitree: writing DOT to '%s' "
                         "failed: %s", path, strerror(errno));
        remove(tmp);
    }

cleanup:
    free(tmp);
    return st;
}

ccs_status_t cli_write_text(const char *path, const char *text,
                            const char *what, ccs_err_t *err)
{
    FILE *f = fopen(path, "w");     /* owned here */
    ccs_status_t st = CCS_OK;

    if (f == NULL)
        return ccs_err_set(err, CCS_ERR_IO, "milp: cannot write %s '%s': %s",
                           what, path, strerror(errno));
    if (fputs(text, f) == EOF)
        st = CCS_ERR_IO;
    if (fclose(f) != 0)
        st = CCS_ERR_IO;
    if (st != CCS_OK)
        return ccs_err_set(err, CCS_ERR_IO, "milp: cannot write %s '%s': %s",
                           what, path, strerror(errno));
    return CCS_OK;
}
