/* sim_cost.c - the simulator as a cost function (see sim_cost.h). */
#include "sim.h"
#include "sim_cost.h"

ccs_status_t sim_cost_time(void *ctx, const topo_t *t, const ccs_sched_t *s,
                           double bytes, double *time_s, ccs_err_t *err)
{
    sim_opts_t so;
    sim_result_t res;
    ccs_status_t st;

    (void)ctx;
    sim_opts_init(&so);
    st = sim_run(s, t, bytes, &so, &res, err);
    if (st != CCS_OK)
        return st;
    *time_s = res.time_s;
    sim_result_free(&res);
    return CCS_OK;
}
