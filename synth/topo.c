/* PLACEHOLDER: replaced by the topology module. */
#include "topo.h"
#include "topo_init.h"

void topo_global_init(void) {}
const char *topo_node_kind_str(topo_node_kind_t kind) { (void)kind; return "?"; }
ccs_status_t topo_load(const char *spec, const topo_opts_t *opts,
                       topo_t **out, ccs_err_t *err)
{
    (void)spec; (void)opts; (void)out;
    return ccs_err_set(err, CCS_ERR_UNSUPPORTED, "topologies not built yet");
}
void topo_destroy(topo_t *t) { (void)t; }
void topo_list_builtins(FILE *f) { (void)f; }
