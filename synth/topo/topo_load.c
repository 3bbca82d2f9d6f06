/*
 * topo_load.c - a topology from a spec: a YAML file (topo_yaml.c) when
 * the spec names a regular file or ends in .yaml/.yml, else a built-in
 * (topo_builtin.c); then the builder's finishing (topo_build.c).
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "topo.h"
#include "topo_internal.h"

/* ---- loading ---- */

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

ccs_status_t topo_load(const char *spec, const topo_opts_t *opts,
                       topo_t **out, ccs_err_t *err)
{
    topo_builder_t b;
    struct stat sb;
    ccs_status_t st;
    topo_t *t = NULL;

    if (out == NULL)
        return ccs_err_set(err, CCS_ERR_INVALID, "topo_load: out is NULL");
    if (spec == NULL || spec[0] == '\0')
        return ccs_err_set(err, CCS_ERR_TOPOLOGY, "empty topology spec");
    if (stat(spec, &sb) == 0 && S_ISDIR(sb.st_mode))
        return ccs_err_set(err, CCS_ERR_TOPOLOGY, "%s: is a directory, not "
                           "a topology file", spec);
    tb_init(&b, spec, NULL);
    if ((stat(spec, &sb) == 0 && S_ISREG(sb.st_mode)) ||
        ends_with(spec, ".yaml") || ends_with(spec, ".yml")) {
        b.file = spec;
        st = topo_yaml_build(spec, &b, err);
    } else {
        st = topo_builtin_build(spec, &b, err);
    }
    if (st == CCS_OK)
        st = tb_finish(&b, opts, &t, err);
    tb_free(&b);
    if (st == CCS_OK)
        *out = t;
    return st;
}
