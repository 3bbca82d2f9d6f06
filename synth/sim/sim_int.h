/*
 * sim_int.h - the simulator's internal state, shared by its engine
 * (sim.c: events, flows, steps, running) and its preparation (sim_prep.c:
 * pipes, routes, transfers).  Not for use outside synth/sim/.
 */
#ifndef CCS_SIM_INT_H
#define CCS_SIM_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "sim.h"
#include "sim_queue.h"

/* ---- prepared, size-independent data ---- */

typedef struct xfer {
    uint32_t src, dst;    /* ranks */
    uint32_t step;
    uint32_t nchunks;
    uint32_t route;       /* index into the route table */
} xfer_t;

/* One route: what starting a transfer reads of it, in one 16-byte
 * record (four parallel arrays were up to four cache misses per transfer
 * once the route table outgrew the first-level cache). */
typedef struct sim_route {
    double alpha;         /* seconds: the sum of its links' alphas */
    uint32_t off;         /* its pipes: route_pipes[off .. off+len) */
    uint32_t len : 24;    /* hops (routes_reserve refuses longer routes) */
    uint32_t hw : 8;      /* SIM_HW_* (protocols) */
} sim_route_t;

_Static_assert(sizeof(sim_route_t) == 16, "a route is 16 bytes");

#define SIM_ROUTE_MAX_HOPS ((1u << 24) - 1)

typedef struct group {    /* one rank's ops in one step */
    uint32_t step;
    uint32_t rank;
    uint32_t out_off;     /* transfers sent: tr[out_off .. out_off+nout) */
    uint32_t nout;
    uint32_t in_off;      /* received: in_list[in_off .. in_off+nin) */
    uint32_t nin;
    uint32_t next;        /* the rank's next group; SIM_NO_GROUP after
                             its last */
    uint64_t local_chunks; /* chunks moved by COPY / REDUCE_LOCAL */
} group_t;

#define SIM_NO_GROUP UINT32_MAX

/* Rank mode: where a rank is.  Its current group's next group and step
 * are copied here on entry, so that finishing the group does not read
 * the group's record again (by then a cache miss at 1024 ranks). */
typedef struct rank_pos {
    uint32_t grp;         /* current group, SIM_NO_GROUP once done */
    uint32_t next;        /* grp's next group (SIM_NO_GROUP: none) */
    uint32_t step;        /* grp's step */
} rank_pos_t;

enum {
    EV_ENTER,   /* rank mode: rank a enters its current group;
                   barrier mode: step a may start */
    EV_LOCAL,   /* local ops of rank a's group (rank) / step a (barrier) */
    EV_BW,      /* transfer a ends its alpha, enters the bandwidth phase */
    EV_ZDONE,   /* transfer a completes with no bandwidth phase */
    EV_DONE     /* flow slot a (version v) completes */
};

typedef struct flow {
    uint32_t xfer;
    uint32_t version;
    uint32_t mark;        /* component epoch */
    uint32_t frozen;      /* epoch in which its rate was fixed */
    /* what the engine needs of its transfer and route, copied here: rate
     * recomputations walk the pipes of many flows and its finish needs
     * its size, and one cache line per flow is all they touch (a transfer
     * record read back at 1024 ranks was a miss) */
    uint32_t rp_off;      /* route_pipes[rp_off .. rp_off+nhops) */
    uint32_t nhops;
    uint32_t nchunks;     /* the transfer's */
    uint32_t hw;          /* its route's SIM_HW_* */
    double rem;           /* bytes left at `last` */
    double rate;          /* bytes/s */
    double last;          /* seconds */
    double newrate;
} flow_t;

_Static_assert(sizeof(flow_t) == 64, "a flow is one cache line");

typedef struct pent {     /* entry of a pipe's flow list */
    uint32_t slot;
    uint32_t hop;
} pent_t;

/* Flow-list entries held inside the pipe: most pipes carry a flow or two
 * at a time, and a separate allocation per pipe was one more cache line
 * per pipe touched.  With them a pipe's state is one 64-byte line (the
 * array is allocated line-aligned). */
#define SIM_PIPE_INLINE 2

typedef struct pipe_st {
    union {
        pent_t inl[SIM_PIPE_INLINE];  /* while cap == SIM_PIPE_INLINE */
        pent_t *heap;     /* owned, once the list outgrew inl */
    } list;               /* pipe_list() picks the one in use */
    uint32_t cnt, cap;
    uint32_t mark;        /* component epoch */
    uint32_t nunf;
    double bw;            /* pipe_bw[] beside the state that uses it */
    double cap_rem;
    double bytes;         /* carried in this run */
    int dirty;
} pipe_st_t;

_Static_assert(sizeof(pipe_st_t) == 64, "a pipe's state is one cache line");

static inline pent_t *pipe_list(pipe_st_t *p)
{
    return p->cap > SIM_PIPE_INLINE ? p->list.heap : p->list.inl;
}

struct sim {
    const ccs_sched_t *s;  /* borrowed */
    const topo_t *t;       /* borrowed */
    uint32_t n, nsteps, nphases;

    /* pipes */
    int32_t npipes;
    int32_t *link_pipe;    /* owned; [nlinks] */
    int32_t *pipe_link;    /* owned; [npipes] lowest link id of the pipe */
    double *pipe_bw;       /* owned; [npipes] bytes/s */

    /* routes */
    uint32_t nroutes, routes_cap;
    sim_route_t *route;    /* owned; [routes_cap] */
    int32_t *route_pipes;  /* owned; [rp_cap] */
    uint32_t rp_len, rp_cap;
    uint64_t *hkey;        /* owned; [hcap] (src node << 32 | dst node) + 1 */
    uint32_t *hval;        /* owned; [hcap] route index */
    uint32_t hcap;
    uint32_t maxhops;

    /* transfers and groups, stored step-major: the ranks progress through
     * the steps together, so the events of one moment touch one
     * contiguous stretch of each array instead of one cache line (and one
     * page) per rank, which is what made large schedules slow per event */
    uint32_t ntr;
    xfer_t *tr;            /* owned; [ntr] by (step, src, op order) */
    uint32_t *in_list;     /* owned; [ntr] transfer ids by (step, dst,
                              src, op order) */
    uint32_t *step_tr_start; /* owned; [nsteps+1]: step t's transfers are
                                tr[step_tr_start[t] .. step_tr_start[t+1]) */
    uint32_t ngrp;
    group_t *grp;          /* owned; [ngrp] by (step, rank) */
    uint32_t *rank_first;  /* owned; [n] rank's first group, SIM_NO_GROUP */
    uint32_t *step_grp_start; /* owned; [nsteps+1] as step_tr_start */

    /* run state, reused between runs (all owned) */
    double chunk_bytes;
    double local_bw;
    sim_mode_t mode;
    double *arrival;       /* [n] */
    uint8_t *tr_ready;     /* [ntr] bit 0 sender, bit 1 receiver */
    rank_pos_t *cur;       /* [n] rank mode: where each rank is */
    uint32_t *pending;     /* [n] rank mode; [nsteps] barrier mode */
    double *rank_finish;   /* [n] */
    double *step_end;      /* [nsteps] */
    pipe_st_t *pipes;      /* [npipes] */
    uint32_t *dirty;       /* [npipes] dirty pipe ids */
    uint32_t ndirty;
    uint32_t *comp_pipes;  /* [npipes] */
    uint32_t *comp_flows;  /* [flows_cap] */
    flow_t *flows;         /* [flows_cap], line-aligned (flows_grow) */
    uint32_t *pos;         /* [flows_cap * maxhops] index in pipe list */
    uint32_t *free_slots;  /* [flows_cap] */
    uint32_t nfree, flows_used, flows_cap, pos_cap;
    uint32_t epoch;
    sim_queue_t queue;     /* pending events (sim_queue.h) */
    uint64_t nevents;
    bool time_reversed;    /* failed: an event was due before the current
                              time (an engine bug, not out of memory) */
    uint32_t ranks_done;
    uint32_t barrier_step; /* barrier mode: the running step */
    sim_proto_model_t pm;  /* this run's protocol model (sim_proto.h) */
    double peak_rate[SIM_HW_COUNT]; /* fastest transfer of the run, bytes/s
                                       on the wire, per route class */
    bool failed;           /* out of memory inside the event loop */

    /* dataflow mode (sim_flow.c): the size-independent part is built on
     * the first dataflow run (df_built) and kept; all owned */
    bool df_built;
    uint32_t nops;         /* ops of all ranks; flat op f of rank r is
                              df_base[r] + its index in rank_ops[r] */
    uint32_t *df_base;     /* [n+1] */
    uint32_t *df_op_xfer;  /* [nops] a SEND's / receive's transfer;
                              SIM_NO_GROUP for a local op */
    uint32_t *df_op_grp;   /* [nops] the op's group */
    uint32_t *df_grp_op;   /* [ngrp] flat index of the group's first op */
    uint32_t *df_grp_nops; /* [ngrp] */
    uint32_t *df_npred;    /* [nops] earlier ops it must wait for */
    uint32_t *df_succ_off; /* [nops+1] its waiters: df_succ[off[f]..off[f+1]) */
    uint32_t *df_succ;     /* [edges] */
    uint32_t *df_xfer_op;  /* [2 * ntr] a transfer's SEND, then receive */
    uint32_t *df_fifo_next; /* [ntr] the next transfer between the same
                               ordered pair, SIM_NO_GROUP after the last */
    /* port queues (sim_flow.c build_ports): entries sorted by (queue,
     * step, transfer), two per transfer: queue 2p is the way out over
     * pipe p, 2p+1 the way in */
    uint32_t df_nq;
    uint32_t *df_q_x;      /* [nq] the entry's transfer */
    uint32_t *df_q_pipe;   /* [nq] its queue */
    uint32_t *df_q_nb;     /* [nq] first entry of the pipe's next step */
    uint32_t *df_x_q;      /* [2 * ntr] a transfer's entries, or none */
    uint32_t *df_pwait0;   /* [ntr] transfers of its queues' previous
                              steps, which must finish before its bytes
                              flow */
    /* its run state */
    uint32_t window;       /* steps in flight per rank */
    uint32_t *df_wait;     /* [nops] predecessors left (+1 until issued) */
    uint32_t *df_pwait;    /* [ntr] df_pwait0 left */
    uint32_t *df_left;     /* [ngrp] ops of the group not finished */
    uint32_t *df_old;      /* [n] oldest unfinished group, SIM_NO_GROUP */
    uint32_t *df_next;     /* [n] next group to issue */
    uint32_t *df_inflight; /* [n] groups issued from df_old on */
    double *df_local_free; /* [n] when the rank's local engine is free */
    uint32_t *df_stack;    /* [nops] ops finished, not yet propagated */
    uint32_t df_nstack;
};

/* Grow *p (elements of `size` bytes) to hold at least `need`. */
bool sim_grow(void **p, uint32_t *cap, uint32_t need, size_t size);

/* The engine's pieces the dataflow mode shares (sim.c). */
void sim_push(sim_t *sim, double t, uint32_t type, uint32_t a, uint32_t v);
void sim_xfer_start(sim_t *sim, uint32_t x, double now);
void sim_bw_start(sim_t *sim, uint32_t x, double now);
void sim_note_step_end(sim_t *sim, uint32_t step, double now);
double sim_local_cost(const sim_t *sim, uint64_t chunks);

/* Dataflow mode (sim_flow.c). */
ccs_status_t sim_flow_prepare(sim_t *sim, ccs_err_t *err); /* once */
void sim_flow_begin(sim_t *sim);         /* start a run: push arrivals */
void sim_flow_enter(sim_t *sim, uint32_t r, double now);  /* r arrives */
void sim_flow_local_done(sim_t *sim, uint32_t f, double now);
void sim_flow_xfer_done(sim_t *sim, uint32_t x, double now);
void sim_flow_bw(sim_t *sim, uint32_t x, double now);  /* latency over */
void sim_flow_free(sim_t *sim);

#endif /* CCS_SIM_INT_H */
