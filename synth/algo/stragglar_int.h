/*
 * stragglar_int.h - what the StragglAR planner's files share: the
 * holdings bitsets, the plan's storage helpers and checker, and the
 * matching search's state, which the beam (stragglar_beam.c) drives round
 * by round with the search's own round planner (stragglar_search.c).
 * Internal to synth/algo: the public face is stragglar.h.
 */
#ifndef CCS_STRAGGLAR_INT_H
#define CCS_STRAGGLAR_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "match.h"
#include "stragglar.h"

/* Non-powers of 2 are planned by matchings up to this many ranks. */
#define PLAN_MAX_MATCHING_N 4096u

/* ceil(log2 n) for n >= 1: K in the round counts and the ramp. */
static inline uint32_t stragglar_ceil_log2(uint32_t n)
{
    uint32_t lg = 0;

    while ((UINT32_C(1) << lg) < n)
        lg++;
    return lg;
}

static inline bool stragglar_is_pow2(uint32_t n)
{
    return n != 0 && (n & (n - 1)) == 0;
}

/* ---- Holdings: which complete chunks each rank has (bitsets). ---- */

typedef struct holdings {
    uint32_t n, m, words;
    uint64_t *bits;      /* owned; [n * words] */
    uint32_t *count;     /* owned; [m] non-straggler holders per chunk */
    uint32_t *nhave;     /* owned; [n] chunks held per rank */
} holdings_t;

static inline bool stragglar_hold_has(const holdings_t *h, uint32_t g,
                                      uint32_t c)
{
    return (h->bits[(size_t)g * h->words + c / 64] >> (c % 64)) & 1u;
}

static inline void stragglar_hold_add(holdings_t *h, uint32_t g, uint32_t c)
{
    h->bits[(size_t)g * h->words + c / 64] |= UINT64_C(1) << (c % 64);
    h->nhave[g]++;
    if (g < h->m)
        h->count[c]++;
}

/* Free the bitsets (h itself is the caller's). */
void stragglar_hold_free(holdings_t *h);
/* Empty holdings for n ranks; h owns its arrays until
 * stragglar_hold_free. */
ccs_status_t stragglar_hold_init(holdings_t *h, uint32_t n, ccs_err_t *err);

/* Append an empty round (all -1); returns its index through *r. */
ccs_status_t stragglar_plan_add_round(stragglar_plan_t *p, uint32_t *r,
                                      ccs_err_t *err);

/* Pair u and v in round r; each sends the given chunk (-1: nothing). */
static inline void stragglar_plan_pair(stragglar_plan_t *p, uint32_t r,
                                       int32_t u, int32_t cu, int32_t v,
                                       int32_t cv)
{
    size_t base = (size_t)r * p->n;

    p->peer[base + (size_t)u] = v;
    p->peer[base + (size_t)v] = u;
    p->send[base + (size_t)u] = cu;
    p->send[base + (size_t)v] = cv;
}

/* Replay a plan on holdings and check it (stragglar_hold.c). */
ccs_status_t stragglar_plan_check(const stragglar_plan_t *p, ccs_err_t *err);

/* Phase 1 for n a power of 2: Algorithm 1 (stragglar_pow2.c). */
ccs_status_t stragglar_plan_pow2(uint32_t n, stragglar_plan_t *p,
                                 ccs_err_t *err);

/* Algorithm 1's round pieces (stragglar_pow2.c), shared with the hole's
 * structure (stragglar_hole.c), which is Algorithm 1 with holes.  K =
 * ceil(log2 n), m = p->n - 1 non-stragglers; used[] marks the ranks
 * already paired in round r, act[] each rank's active chunk (-1 none). */

/* Ramp round r < K, first part: recv_act[] (chunk each rank receives
 * this round, [p->n]) cleared, and rank r - 1 sends c_{r-1} to rank
 * r - 1 + K.  The hole pairs its hosts and idles ranks between this and
 * stragglar_ramp_close. */
void stragglar_ramp_open(stragglar_plan_t *p, uint32_t r, uint32_t K,
                         uint8_t *used, int32_t *recv_act);
/* Ramp round r < K, last part: every unpaired holder sends its active
 * chunk to the next chunk-less unpaired rank above 2(K - 1) (skipping the
 * ranks skip[] marks; skip may be NULL), the receivers take it as their
 * active chunk and rank r gets c_r.  false: no receiver left (act[] is
 * then half updated). */
bool stragglar_ramp_close(stragglar_plan_t *p, uint32_t r, uint32_t K,
                          int32_t *act, uint8_t *used, const uint8_t *skip,
                          int32_t *recv_act);
/* Steady round r >= K, the critical window: each unpaired P-rank l (of
 * pl[0..np)) with r < l <= r + K, l < m, must end the round with c_{l-K}
 * or older, so it is paired first, in pl's order, with the unpaired
 * Q-rank (of ql[0..nq)) holding the oldest active chunk no newer than
 * c_{l-K}.  Returns the first window rank left without such a partner,
 * -1 when every one got one. */
int32_t stragglar_window_pairs(stragglar_plan_t *p, uint32_t r, uint32_t K,
                               const int32_t *pl, uint32_t np,
                               const int32_t *ql, uint32_t nq,
                               const int32_t *act, uint8_t *used);
/* Steady round r, the rest: each unpaired P-rank exchanges active chunks
 * with the next unpaired Q-rank, both in list order.  false: the Q-ranks
 * ran out. */
bool stragglar_pair_rest(stragglar_plan_t *p, uint32_t r,
                         const int32_t *pl, uint32_t np, const int32_t *ql,
                         uint32_t nq, const int32_t *act, uint8_t *used);
/* Phase 1 for other n, by searched matchings (stragglar_search.c). */
ccs_status_t stragglar_plan_search(uint32_t n, stragglar_plan_t *p,
                                   ccs_err_t *err);

/* ---- The matching search (stragglar_search.c) ---- */

#define SRCH_WR (INT64_C(1) << 16)   /* one useful receive */
#define SRCH_BIG (INT64_C(1) << 34)  /* the straggler exchange */
#define SRCH_TOPK 4u
#define SRCH_DENSE_N 48u
/* Edges kept per rank, at most: its own 2 SRCH_TOPK and the
 * straggler's. */
#define SRCH_KEEP (2 * SRCH_TOPK + 1)
/* One rank's two kept-edge lists while a round's pairs are scanned
 * (srch_match_dense): the SRCH_TOPK largest weight keys and the SRCH_TOPK
 * largest hashes seen, each in descending order with their ranks. */
typedef struct srch_topk {
    int64_t hk[SRCH_TOPK], rk[SRCH_TOPK];
    uint32_t hvx[SRCH_TOPK], rvx[SRCH_TOPK];
    uint32_t nh, nr;
} srch_topk_t;

/* Beam (stragglar_srch_beam) for odd n the runs leave at LB + 2: width,
 * children per state in the first SRCH_BEAM_ROUNDS rounds after the ramp,
 * and the largest n.  Then the best SRCH_DIVE_STATES states are completed with
 * backtracking (beam_dive): after a stop, replay from SRCH_DIVE_BACK
 * rounds before the furthest stop so far, the restart point moving another
 * SRCH_DIVE_BACK back after every SRCH_DIVE_WIDEN failed replays in a row;
 * at most SRCH_DIVE_TRIES replays per state, and a state that
 * SRCH_DIVE_STUCK replays in a row got no further is given up (the dives
 * that won needed at most 29 in a row on n = 241..255).  Timings and what
 * was tried: docs/stragglar.md ("Diving"). */
#define SRCH_BEAM_W 12u
#define SRCH_BEAM_B 2u
#define SRCH_BEAM_ROUNDS 20u
#define SRCH_BEAM_MAX_N 256u
#define SRCH_BEAM_THREADS 4u  /* at most; the plan does not depend on it */
#define SRCH_DIVE_STATES 2u
#define SRCH_DIVE_TRIES 200u
#define SRCH_DIVE_BACK 4u
#define SRCH_DIVE_WIDEN 8u
#define SRCH_DIVE_STUCK 32u
/* Steered beam (srch_second_chance): the bonus, the n above which the
 * beam is steered first, and its width (8: 12 gave the same n, slower).
 * One, two or four receives reach the same n (235, 239); a quarter
 * receive is too weak (235 stays at LB + 2), and five outweigh a
 * chunk-less receiver's bonus, so holders pair with each other instead of
 * feeding the empty ranks (n = 243: 112 receives wasted in round K). */
#define SRCH_STEER (2 * SRCH_WR)
#define SRCH_STEER_ABOVE_N 233u
#define SRCH_STEER_W 8u

/* One beam search: width, children per state, branching window after the
 * ramp, and the steering bonus (0: off). */
typedef struct beam_cfg {
    uint32_t W, B, rounds;
    int64_t steer;
} beam_cfg_t;

/* Above this many ranks the search first tries runs whose rounds after
 * the ramp are planned by the class b-matching (stragglar_bmatch.c). */
#define SRCH_CLASS_N 256u
/* The b-matching: its longest improving path, in pairs broken (1 and 4
 * reached LB + 1 for fewer of the sampled even n than 2), and its greedy
 * spread: sweeps, and the share of the smaller class a pair of classes
 * may take per sweep (1: whole classes, 2: half; 4 reached LB + 1 on all
 * 9 even n retried in 350..1000, 2 missed 450 and 500). */
#define CLS_DEPTH 2u
#define CLS_SWEEPS 8u
#define CLS_SPREAD 4u

/* A useful pair of classes for the b-matching's greedy pass. */
struct cls_cand {
    int64_t w;
    uint32_t key;   /* tie-break */
    uint32_t i, j;  /* classes, i < j */
};

/* Classes of ranks with equal weights this round (stragglar_class.c) and
 * the b-matching's scratch (only above SRCH_CLASS_N ranks; NULL below);
 * arrays owned (stragglar_cls_free). */
typedef struct srch_cls {
    uint32_t C;           /* classes this round */
    uint32_t tabsz;       /* hash table slots, a power of 2 >= 2n */
    int32_t *tab;         /* [tabsz] class id or -1 */
    uint32_t *of;         /* [n] class of each rank in a class */
    uint32_t *rep;        /* [n] a member of each class */
    uint32_t *size;       /* [n] members */
    uint32_t *start;      /* [n + 1] members by class: mem[start[c]..] */
    uint32_t *mem;        /* [n] */
    /* b-matching */
    int32_t *rem;         /* [n] members not yet paired */
    int32_t *cnt;         /* [n * n] pairs between classes i < j */
    uint32_t *pl;         /* [n * n] pair ids i * C + j with cnt > 0 */
    uint32_t npl;
    struct cls_cand *cand;/* [n * (n - 1) / 2] useful class pairs */
    struct cls_cand *cand2;/* [n * (n - 1) / 2] the sort's scratch */
    int64_t *ev;          /* [(CLS_DEPTH + 1) * n] best path gains */
    uint32_t *pc, *pi;    /* [(CLS_DEPTH + 1) * n] their last steps */
    uint32_t *org;        /* [(CLS_DEPTH + 1) * n] start of each path */
    uint32_t *adjs, *adj; /* [n + 1], [2n] partners of each class */
    int64_t *odd;         /* [n] best gain arriving at a class */
    uint32_t *oddx;       /* [n] the class it came from */
    uint32_t *oddo;       /* [n] the class its path started at */
} srch_cls_t;

ccs_status_t stragglar_cls_init(srch_cls_t *c, uint32_t n);
void stragglar_cls_free(srch_cls_t *c);

typedef struct srch {
    uint32_t n, m, T, aw, na;
    uint64_t rng;         /* xorshift state; 0: no noise */
    int64_t noise;        /* noise amplitude */
    int64_t wrel;         /* receiver bonus at the least rank slack */
    int64_t rpct;         /* receiver bonus scale, percent (100: as is) */
    uint32_t salt;        /* varies the random edges kept between runs */
    int64_t steer;        /* last-ramp-round bonus (stragglar_srch_round),
                             0: off */
    holdings_t h;
    int32_t *xround;      /* [m] round rank u met the straggler, -1 not yet */
    int64_t *cprio;       /* [m] priority of sending the chunk this round */
    int64_t *curg;        /* [m] its urgency (cprio without the noise) */
    uint32_t *act;        /* [m] active chunks, by priority, largest first */
    uint64_t *abits;      /* [n * aw] holdings over act */
    int64_t *rprio;       /* [n] receiver bonus */
    int64_t *w;           /* [C * C] class pair weights (0: no edge) */
    int32_t *ch;          /* [C * C] chunk class i sends class j */
    int64_t *wsig;        /* [m] straggler edge weights while it is busy */
    uint32_t *klo, *khi;  /* [n * SRCH_KEEP] kept edges, lower end first */
    uint32_t *kept;       /* [n * SRCH_KEEP] their upper ends by lower end */
    uint32_t *kstart;     /* [n + 1] where each lower end's run starts */
    srch_topk_t *topk;    /* [n] each rank's lists while scanning */
    int64_t *thk, *thr;   /* [n] the key and the hash a rank's full
                             lists need to exceed, -1 while not full */
    match_edge_t *edges;  /* [n * (n - 1) / 2] */
    int32_t *mate;        /* [n] */
    int32_t *sendc;       /* [n] chunk each rank sends its mate, -1 none */
    int32_t *got;         /* [n] */
    int32_t cmax;         /* steering target this round, -1 none */
    bool classes;         /* rounds after the ramp by the class
                             b-matching (stragglar_bmatch.c) */
    srch_cls_t cls;
} srch_t;

/* Best chunk u can send v: the first active chunk (priority order) that u
 * holds and v lacks, -1 none. */
static inline int32_t stragglar_srch_pick(const srch_t *s, uint32_t u,
                                          uint32_t v)
{
    const uint64_t *pu = &s->abits[(size_t)u * s->aw];
    const uint64_t *pv = &s->abits[(size_t)v * s->aw];

    for (uint32_t k = 0; k < s->aw; k++) {
        uint64_t x = pu[k] & ~pv[k];
        if (x)
            return (int32_t)s->act[k * 64 + (uint32_t)__builtin_ctzll(x)];
    }
    return -1;
}


/* What a run does after a round: go on, stop with every chunk everywhere,
 * or give up (a slack went negative, or the target is passed). */
typedef enum { SRCH_GO, SRCH_DONE, SRCH_STOP } srch_next_t;

/* Search state for n ranks; owned by s until stragglar_srch_free. */
ccs_status_t stragglar_srch_init(srch_t *s, uint32_t n, ccs_err_t *err);
void stragglar_srch_free(srch_t *s);
/* Rounds a chunk held by h non-stragglers needs to reach all m of them
 * from round r on (the straggler helps from round m). */
uint32_t stragglar_srch_need(uint32_t h, uint32_t r, uint32_t m);
/* Classes of equal ranks this round and the weights between them
 * (stragglar_class.c): s->cls, and s->w, s->ch with stride s->cls.C. */
void stragglar_cls_weigh(srch_t *s, uint32_t r);
/* Round r's pairs by the class b-matching (stragglar_bmatch.c): s->mate
 * and s->sendc from the prepared state in s. */
ccs_status_t stragglar_srch_match_classes(srch_t *s, uint32_t r,
                                          ccs_err_t *err);
/* Plan round r of a run on the state in s and append it to p. */
ccs_status_t stragglar_srch_round(srch_t *s, stragglar_plan_t *p, uint32_t r,
                                  bool bounded, srch_next_t *next,
                                  ccs_err_t *err);
/* Reset s and p to the state before round 0 (phase 0 done). */
void stragglar_srch_reset(srch_t *s, stragglar_plan_t *p);
/* One run for target s->T; *ok when it finished (within T if bounded). */
ccs_status_t stragglar_srch_run(srch_t *s, stragglar_plan_t *p, bool bounded,
                                bool *ok, ccs_err_t *err);

/* ---- Odd n below a power of 2: the hole (stragglar_hole.c) ---- */

/* Whether the hole structure takes n: odd, x = 2^K + 1 - n with x / 2 =
 * 2^s + H (H even hosts), s <= K - 3, enough holders of c_0 and c_1 in
 * the ramp and, with s = 0, at most 2^(K-3) hosts (489..511, 953..1023
 * and 257 of the 384 odd n in 257..1023). */
bool stragglar_hole_fits(uint32_t n);
/* Runs for target T (noise-free, bounded): Algorithm 1's structure with
 * idle ranks and hosts as holes up to a few rounds before the hosts meet
 * the straggler, then the search's rounds; *ok with the plan in p (the
 * search's labels, not yet renamed, already accepted by
 * stragglar_plan_check once renamed) when one finished within T.  Sets
 * the run parameters of s (noise, bonus, salt) for its runs. */
ccs_status_t stragglar_srch_hole(srch_t *s, stragglar_plan_t *p, uint32_t T,
                                 bool *ok, ccs_err_t *err);

/* ---- The beam (stragglar_beam.c) ---- */

/* Beam search for target s->T (see stragglar_beam.c). */
ccs_status_t stragglar_srch_beam(srch_t *s, stragglar_plan_t *p,
                                 const beam_cfg_t *cfg, bool *ok, bool *died,
                                 ccs_err_t *err);

#endif /* CCS_STRAGGLAR_INT_H */
