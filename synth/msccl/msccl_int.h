/*
 * msccl_int.h - pieces shared by the files of synth/msccl/: the step types
 * of the format, a growable text buffer, the importer's program and the
 * functions its stages share (msccl_parse.c, msccl_order.c,
 * msccl_regroup.c, msccl_layout.c, msccl_import.c), and the exporter's
 * per-rank state (msccl_rank.c, msccl_export.c).  Internal to synth/msccl/.
 */
#ifndef CCS_MSCCL_INT_H
#define CCS_MSCCL_INT_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <libxml/tree.h>

#include "err.h"
#include "msccl.h"
#include "sched.h"

/* Step types (the `type` attribute). */
typedef enum {
    MSCCL_T_SEND = 0,   /* s */
    MSCCL_T_RECV,       /* r */
    MSCCL_T_RCS,        /* receive, copy to dst, forward */
    MSCCL_T_RRS,        /* receive, reduce with src, forward (not stored) */
    MSCCL_T_RRC,        /* receive, reduce with src, store to dst */
    MSCCL_T_RRCS,       /* receive, reduce with src, store and forward */
    MSCCL_T_CPY,        /* dst = src */
    MSCCL_T_RE,         /* dst = dst (+) src */
    MSCCL_T_NOP,        /* carries a dependency only */
    MSCCL_T_COUNT
} msccl_type_t;

const char *msccl_type_str(msccl_type_t t);
/* MSCCL_T_COUNT when unknown. */
msccl_type_t msccl_type_parse(const char *s);
int msccl_type_sends(msccl_type_t t);   /* s, rcs, rrs, rrcs */
int msccl_type_recvs(msccl_type_t t);   /* r, rcs, rrs, rrc, rrcs */

/* Buffers as the format names them. */
enum { MSCCL_BUF_I = 0, MSCCL_BUF_O = 1, MSCCL_BUF_S = 2, MSCCL_BUF_COUNT };

/* A growable NUL-terminated text buffer.  `data` owned; msccl_sb_free. */
typedef struct msccl_sb {
    char *data;
    size_t len, cap;
    int failed;         /* an allocation failed: the text is incomplete */
} msccl_sb_t;

void msccl_sb_printf(msccl_sb_t *b, const char *fmt, ...) CCS_PRINTF(2, 3);
void msccl_sb_free(msccl_sb_t *b);

/* ---- the importer (msccl_import.c and its stages) ---- */

typedef struct mstep {
    uint8_t type;           /* msccl_type_t */
    uint8_t srcbuf, dstbuf; /* MSCCL_BUF_* */
    uint8_t hasdep;
    int32_t srcoff, dstoff, cnt, depid, deps;
    int32_t line;
    uint32_t tb;            /* global tb index */
    int32_t rpart, spart;   /* part ids, -1 none (L and N parts: rpart) */
} mstep_t;

typedef struct mtb {
    int32_t id, send, recv, chan, line;
    uint32_t gpu;
    uint32_t first, n;      /* steps [first, first + n) */
} mtb_t;

typedef struct mgpu {
    int32_t ichunks, ochunks, schunks, line;
    uint32_t first_tb, ntb;
    bool seen;
} mgpu_t;

enum { P_R, P_S, P_L, P_N };

typedef struct part {
    uint32_t step;          /* mstep index */
    uint8_t kind;
} part_t;

/* u before v; w: IR steps between them (0 or 1); strict: v cannot start
 * before u has completed on the GPU (u receives or computes), so a cycle
 * through it is a deadlock even when it would fit in one IR step. */
typedef struct edge { uint32_t u, v; uint8_t w, strict; } edge_t;

typedef struct imp {
    const char *file;
    ccs_err_t *err;
    const msccl_import_opts_t *o;
    /* algo */
    ccs_coll_t coll;
    uint32_t R, C, B, nch;
    int32_t root;
    bool inplace, outofplace, as_inplace;
    bool strict;            /* layout mode, see order_edges */
    uint32_t nedges_base;   /* edges before build_order */
    msccl_import_info_t info;
    /* program; all owned */
    mgpu_t *gpus;
    mtb_t *tbs;
    uint32_t ntbs, tbcap;
    mstep_t *steps;
    uint32_t nsteps, stepcap;
    part_t *parts;
    uint32_t nparts;
    edge_t *edges;
    uint32_t nedges, edgecap;
    uint32_t *partner;      /* [nparts] matched R of an S and S of an R,
                               UINT32_MAX for L/N parts */
} imp_t;

/* A canonical chunk range: space 0 = in-place big buffer or out-of-place
 * input, 1 = out-of-place output, 2 = scratch; global chunk index. */
typedef struct crange { uint8_t space; uint32_t lo, n; } crange_t;

/* msccl_parse.c */
ccs_status_t msccl_fail(imp_t *m, ccs_status_t st, int line,
                        const char *fmt, ...) CCS_PRINTF(4, 5);
/* "gpu 3 tb 2 step 5 (rrs)" */
void msccl_where(const imp_t *m, uint32_t si, char *buf, size_t len);
ccs_status_t msccl_parse_algo(imp_t *m, xmlNodePtr root);
ccs_status_t msccl_check_program(imp_t *m);

/* msccl_order.c */
crange_t msccl_canon(const imp_t *m, uint32_t gpu, uint8_t buf, int32_t off,
                     int32_t cnt);
crange_t msccl_part_sread(const imp_t *m, const part_t *p);
ccs_status_t msccl_build_parts(imp_t *m);
ccs_status_t msccl_match(imp_t *m);
ccs_status_t msccl_build_order(imp_t *m);
ccs_status_t msccl_levels(imp_t *m, uint32_t **level_out);

/* msccl_regroup.c */
ccs_status_t msccl_regroup(imp_t *m, uint32_t *level);

/* msccl_layout.c */
ccs_status_t msccl_layout(imp_t *m, const uint32_t *level, ccs_sched_t *s);

/* ---- the exporter (msccl_export.c, msccl_rank.c) ---- */

typedef struct xstep {
    uint8_t type;           /* msccl_type_t */
    uint8_t srcbuf, dstbuf; /* MSCCL_BUF_* */
    uint8_t hasdep;
    int32_t srcoff, dstoff; /* -1 for nop */
    int32_t cnt;
    int32_t depid, deps;
} xstep_t;

typedef struct xtb {
    int32_t send, recv;     /* peers, -1 none */
    uint32_t chan;
    int32_t pred[2];        /* the thread blocks that carried this one's
                               send resp. receive connection (same peer
                               and lane) in the previous time block, -1 */
    xstep_t *steps;         /* owned */
    uint32_t nsteps, cap;
} xtb_t;

typedef struct xrank {
    xtb_t *tbs;             /* owned */
    uint32_t ntbs;
} xrank_t;

/* Per-op plan of a rank, filled before the dependency pass. */
typedef struct opplan {
    uint32_t lane;          /* index among the rank's ops of its step with
                               the same peer and direction */
    int32_t tb;             /* thread block; -1: folded into a fused step */
    int32_t fused;          /* index of the send it forwards to, or -1 */
    uint8_t type;           /* msccl_type_t of the step it becomes */
} opplan_t;

/* Scratch shared by every rank of one attempt (sized for the largest). */
typedef struct work {
    const ccs_sched_t *s;
    uint32_t nblk, nlanes, nch, max_tb_steps;
    uint32_t blk_npg[MSCCL_MAX_CHANNELS];  /* peer groups of a time block */
    uint32_t blk_base[MSCCL_MAX_CHANNELS]; /* its first group's index */
    bool step_order;        /* also keep each rank's step order */
    uint32_t max_tbs;       /* thread blocks per GPU */
    bool pair_same;         /* a peer's sends and receives share a thread
                               block when no forwarding pairs them */
    bool tbs_over;          /* an attempt had more than max_tbs */
    uint32_t tbs_min;       /* the fewest thread blocks such an attempt
                               needed on its first rank over, and that */
    uint32_t tbs_min_rank;  /* rank */
    bool over_tbs_now;      /* the last attempt failed on max_tbs */
    bool other_seen;        /* an attempt failed on another limit, */
    char other_why[256];    /* the last such */
    int32_t *prevk;         /* [ntb] last step of a tb in the rank's
                               previous IR step, -1 */
    int32_t *curk;          /* [ntb] same for the current IR step */
    bool alias;             /* in-place: IN g and OUT g are one location */
    opplan_t *plan;         /* [max ops per rank] */
    uint32_t *order;        /* [max ops per rank] processing order */
    int32_t *send_tb;       /* [nch * nranks] tb of (chan, send peer) */
    int32_t *recv_tb;       /* [nch * nranks] tb of (chan, recv peer) */
    int32_t *local_tb;      /* [nch] */
    int32_t *chain_send;    /* [nranks * MSCCL_MAX_CHANNELS] latest tb
                               sending to (peer, lane), -1 */
    int32_t *chain_recv;    /* same for receiving */
    int32_t *pair_send;     /* [nranks] send peer paired with recv peer */
    int32_t *pair_recv;     /* [nranks] recv peer paired with send peer */
    uint32_t *cand;         /* fusion candidates (p, q): sparse list */
    uint32_t ncand, candcap;
    /* hazard state per location (buf, chunk) of the rank */
    int64_t *writer;        /* [nloc] (tb << 32 | step) or -1 */
    uint32_t **readers;     /* [nloc] arrays of (tb << 16 ... ) packed */
    uint32_t *nreaders, *capreaders;
    int32_t *known;         /* [ntb * ntb] step of tb x that tb t waited
                               for, -1 none */
    uint32_t knowncap;
    int32_t *depmax;        /* [ntb] deps of the step being placed */
    uint32_t nloc;
} work_t;

/* msccl_rank.c */
ccs_status_t msccl_build_rank(work_t *w, uint32_t rank, xrank_t *xr,
                              msccl_export_info_t *info, ccs_err_t *err);
void msccl_xrank_free(xrank_t *xr);

#endif /* CCS_MSCCL_INT_H */
