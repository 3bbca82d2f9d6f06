/* algo.c - the algorithm registry and the common synthesis driver. */
#include <string.h>

#include "algo.h"

extern const algo_desc_t algo_ring;
extern const algo_desc_t algo_rhd;
extern const algo_desc_t algo_allpairs;
extern const algo_desc_t algo_dbtree;
extern const algo_desc_t algo_stragglar;
extern const algo_desc_t algo_multitree;
extern const algo_desc_t algo_milp;

/* Order is the order of `ccsynth list`: baselines first. */
static const algo_desc_t *const registry[] = {
    &algo_ring, &algo_rhd, &algo_allpairs, &algo_dbtree,
    &algo_stragglar, &algo_multitree, &algo_milp,
};

void algo_params_init(algo_params_t *p)
{
    memset(p, 0, sizeof(*p));
    p->coll = CCS_COLL_ALLREDUCE;
    p->root = 0;
    p->straggler = -1;
    p->pipeline = 1;
    p->mip_gap = -1;
}

int algo_count(void)
{
    return (int)(sizeof(registry) / sizeof(registry[0]));
}

const algo_desc_t *algo_at(int i)
{
    return (i >= 0 && i < algo_count()) ? registry[i] : NULL;
}

const algo_desc_t *algo_find(const char *name)
{
    for (int i = 0; name != NULL && i < algo_count(); i++) {
        if (strcmp(registry[i]->name, name) == 0)
            return registry[i];
    }
    return NULL;
}

ccs_status_t algo_synthesize(const char *name, const topo_t *t,
                             const algo_params_t *p, ccs_sched_t **out,
                             ccs_err_t *err)
{
    const algo_desc_t *a = algo_find(name);
    ccs_sched_t *s = NULL;
    ccs_status_t st;

    if (a == NULL)
        return ccs_err_set(err, CCS_ERR_INVALID,
                           "unknown algorithm '%s' (see 'ccsynth list')",
                           name ? name : "(null)");
    if ((a->colls & ALGO_COLL_BIT(p->coll)) == 0)
        return ccs_err_set(err, CCS_ERR_UNSUPPORTED,
                           "algorithm '%s' does not implement %s", a->name,
                           ccs_coll_str(p->coll));
    if (t->ngpus < 2)
        return ccs_err_set(err, CCS_ERR_UNSUPPORTED,
                           "topology '%s' has %d GPU(s); collectives need 2 "
                           "or more", t->name, t->ngpus);
    if (ccs_coll_rooted(p->coll) && (p->root < 0 || p->root >= t->ngpus))
        return ccs_err_set(err, CCS_ERR_INVALID,
                           "root %d out of range 0..%d", p->root,
                           t->ngpus - 1);
    if (p->straggler < -1 || p->straggler >= t->ngpus)
        return ccs_err_set(err, CCS_ERR_INVALID,
                           "straggler %d out of range 0..%d", p->straggler,
                           t->ngpus - 1);
    if (a->check != NULL) {
        st = a->check(t, p, err);
        if (st != CCS_OK)
            return st;
    }
    st = a->build(t, p, &s, err);
    if (st != CCS_OK)
        return st;
    st = ccs_sched_finalize(s, err);
    if (st != CCS_OK) {
        ccs_sched_destroy(s);
        return st;
    }
    s->topo_fingerprint = t->fingerprint;
    *out = s;
    return CCS_OK;
}
