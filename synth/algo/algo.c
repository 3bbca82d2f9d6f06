/* algo.c - the algorithm registry, the common synthesis driver and the
 * build report. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "algo.h"
#include "mtree.h"

extern const algo_desc_t algo_ring;
extern const algo_desc_t algo_rhd;
extern const algo_desc_t algo_allpairs;
extern const algo_desc_t algo_dbtree;
extern const algo_desc_t algo_stragglar;
extern const algo_desc_t algo_multitree;
extern const algo_desc_t algo_milp;
extern const algo_desc_t algo_nccl_ring;
extern const algo_desc_t algo_nccl_tree;
extern const algo_desc_t algo_nvls;

/* Order is the order of `ccsynth list`: baselines first. */
static const algo_desc_t *const registry[] = {
    &algo_ring, &algo_rhd, &algo_allpairs, &algo_dbtree,
    &algo_stragglar, &algo_multitree, &algo_milp,
    &algo_nccl_ring, &algo_nccl_tree, &algo_nvls,
};

void algo_params_init(algo_params_t *p)
{
    memset(p, 0, sizeof(*p));
    p->coll = CCS_COLL_ALLREDUCE;
    p->root = 0;
    p->straggler = -1;
    p->pipeline = 1;
    p->milp.mip_gap = -1;
}

void algo_report_init(algo_report_t *r)
{
    memset(r, 0, sizeof(*r));
}

void algo_report_free(algo_report_t *r)
{
    if (r == NULL)
        return;
    for (int32_t i = 0; i < r->nlines; i++)
        free(r->lines[i]);
    free(r->lines);
    mtree_destroy(r->trees);
    free(r->lp);
    memset(r, 0, sizeof(*r));
}

void algo_report_addf(algo_report_t *r, const char *fmt, ...)
{
    va_list ap;
    char *line = NULL;          /* owned here until stored in r->lines */
    int len;

    if (r == NULL)
        return;
    va_start(ap, fmt);
    len = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (len < 0)
        goto lost;
    if (r->nlines == r->cap) {
        int32_t ncap = r->cap ? 2 * r->cap : 8;
        char **nl = realloc(r->lines, (size_t)ncap * sizeof(*nl));

        if (nl == NULL)
            goto lost;
        r->lines = nl;          /* owned by r */
        r->cap = ncap;
    }
    line = malloc((size_t)len + 1);
    if (line == NULL)
        goto lost;
    va_start(ap, fmt);
    vsnprintf(line, (size_t)len + 1, fmt, ap);
    va_end(ap);
    r->lines[r->nlines++] = line;
    return;

lost:
    /* A report line is information, not the result: losing one must not
     * fail a build that succeeded, but the caller can tell. */
    r->lost = true;
}

void algo_report_print(const algo_report_t *r, FILE *f)
{
    for (int32_t i = 0; r != NULL && i < r->nlines; i++)
        fprintf(f, "%s\n", r->lines[i]);
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
    return algo_synthesize_report(name, t, p, out, NULL, err);
}

ccs_status_t algo_synthesize_report(const char *name, const topo_t *t,
                                    const algo_params_t *p, ccs_sched_t **out,
                                    algo_report_t *rep, ccs_err_t *err)
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
    st = a->build(t, p, &s, rep, err);
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
