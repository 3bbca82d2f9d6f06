/*
 * tune_int.h - what the files of the tune search share (not public: tune.h
 * is the layer's interface).
 *
 * tune.c runs the search, tune_cand.c builds, verifies and simulates the
 * candidates (one algorithm's configurations), tune_result.c turns the
 * scores into a tune_result_t.  The context below is theirs alone.
 */
#ifndef CCS_TUNE_INT_H
#define CCS_TUNE_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "algo.h"
#include "tune.h"

#define NONE UINT32_MAX

enum { PH_1, PH_2, PH_3, PH_REF };

typedef struct tcand {          /* one point of an algorithm's axis */
    uint32_t pipeline;
    uint32_t chunks_param;      /* 0: chunk count from the pipeline */
    uint64_t eff;               /* chunk count it stands for (ordering) */
    int state;                  /* 0 not built, 1 ready, 2 cannot run */
    ccs_sched_t *s;             /* owned */
    sim_t *sim;                 /* owned; borrows s */
    double *t;                  /* owned, [nsizes]: < 0 not simulated,
                                   INFINITY cannot run */
    uint8_t *proto;             /* owned, [nsizes]: protocol of t[i] */
    uint8_t *chan;              /* owned, [nsizes]: channels of t[i] (0:
                                   no per-channel cap applies) */
} tcand_t;

typedef struct talgo {
    const algo_desc_t *desc;
    bool runs;                  /* its default configuration was built */
    uint32_t ncand;
    uint32_t def;               /* index of pipeline 1, chunks 0 */
    tcand_t *cand;              /* owned, [ncand] ascending eff */
    uint32_t *best;             /* owned, [nsizes] refined optimum at the
                                   coarse sizes it was kept at, else NONE */
    uint8_t *keep;              /* owned, [nsizes] kept after phase 2 */
} talgo_t;

typedef struct tctx {
    const topo_t *t;
    const tune_opts_t *o;
    algo_params_t base;
    sim_opts_t so;
    double *sizes;              /* owned, ascending, unique */
    uint32_t nsizes;
    uint8_t *coarse;            /* owned, [nsizes] */
    talgo_t *algos;             /* owned, [nalgos] */
    uint32_t nalgos;
    tune_stats_t st;
    int phase;
    ccs_err_t *err;
} tctx_t;

/* tune_cand.c */
void tune_algo_free(talgo_t *a);
ccs_status_t tune_eval(tctx_t *c, talgo_t *a, uint32_t k, uint32_t i,
                       double *out);
ccs_status_t tune_algo_setup(tctx_t *c, talgo_t *a, const uint32_t *pipes,
                             uint32_t npipes);

/* tune_result.c */
ccs_status_t tune_assemble(tctx_t *c, tune_result_t *r);
ccs_status_t tune_nccl_column(tctx_t *c, tune_result_t *r);

#endif
