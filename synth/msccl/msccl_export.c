/*
 * msccl_export.c - schedule IR -> MSCCL algorithm XML.
 *
 * The IR is lock-step (every op of step t reads the state as it was when t
 * began); an MSCCL program is a set of thread blocks per GPU, each running
 * its steps in order, ordered between each other only by dependencies.  The
 * translation, per rank:
 *
 *  1. Channels.  The schedule is cut into `nblk` consecutive time blocks
 *     (so no thread block gets more steps than the executor runs); within
 *     block b peers fall into npg[b] groups by (rank + peer) % npg[b] (so no
 *     channel has more than 32 send or 32 receive thread blocks); the k-th
 *     message of a step between the same two ranks takes lane k (so the
 *     executor runs them in parallel, as the step does).  channel =
 *     (base[b] + group) * lanes + lane.  Both ends of a transfer compute
 *     the same channel.  Blocks run one after the other in time.
 *  2. Fusion.  A receive whose chunks are sent on unchanged by the rank's
 *     next send to some peer q (same chunks, same channel, no write to them
 *     in between) becomes one rcs (RECV), rrcs (RECV_REDUCE) or rrs
 *     (RECV_REDUCE into scratch nobody reads afterwards) step; the send
 *     then happens as soon as the data is there, which keeps q's FIFO order
 *     because no other send to q lies between the two.  Receive peer p is
 *     paired with the send peer q it forwards to most.
 *  3. Thread blocks: one per (send peer, receive peer, channel) after
 *     pairing, one per channel for local ops; steps in IR step order, sends
 *     of a step before its receives.
 *  4. Dependencies: a step waits for the last writer of every chunk it
 *     reads or writes and for the readers of every chunk it overwrites, in
 *     other thread blocks (in-place: input and output chunk g are one
 *     location), and a thread block that continues a connection of the
 *     previous time block waits for that one's end.  One dependency per
 *     step; more go on nop steps in front.
 *  5. Limits: steps per thread block, thread blocks per channel, XML
 *     elements per GPU, and thread blocks per GPU (all resident at once:
 *     max_tbs; when one per peer and direction is too many, a peer's sends
 *     and receives share one, then fewer lanes); those waited for are
 *     numbered first, as the executor's depid has 8 bits.
 *
 * Sends are assumed not to block (the executor sizes chunks to its FIFO),
 * as MSCCL's own generator assumes; a receive blocks until its data is in.
 * Every wait points to an earlier IR step or to an earlier send of the
 * same step, so the program cannot deadlock if the IR schedule is valid.
 *
 * Cost: O(ops * chunks per op) per attempt; at most 32 time-block counts
 * per pass, four passes (lanes x step order), and again with shared
 * per-peer thread blocks.
 *
 * Files: msccl_rank.c (one rank's program, 1-4), msccl_common.c (names
 * and the text buffer); this file holds the attempts, the XML writer and
 * the entry points.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "msccl.h"
#include "msccl_int.h"
#include "sim_proto.h"

/* In-place is right when no input chunk is read after its output chunk
 * (the same memory then) was first written, except by the op writing it
 * (rrc with src = dst) or by a send of that same step (sends go first). */
static bool inplace_safe(const ccs_sched_t *s, char *why, size_t len)
{
    uint32_t C = s->nchunks;
    uint32_t *first = malloc((size_t)C * sizeof(*first));
    bool ok = true;

    if (first == NULL)
        return false;
    for (uint32_t r = 0; r < s->nranks && ok; r++) {
        const ccs_op_t *ops = s->rank_ops[r];
        for (uint32_t c = 0; c < C; c++)
            first[c] = UINT32_MAX;
        for (uint32_t i = 0; i < s->rank_nops[r]; i++) {
            const ccs_op_t *o = &ops[i];
            if (o->kind != CCS_OP_SEND && o->buf == CCS_BUF_OUT)
                for (uint32_t c = 0; c < o->nchunks; c++)
                    if (first[o->chunk + c] == UINT32_MAX)
                        first[o->chunk + c] = o->step;
        }
        for (uint32_t i = 0; i < s->rank_nops[r] && ok; i++) {
            const ccs_op_t *o = &ops[i];
            uint32_t c0 = 0;
            bool rd_in = false;
            if (o->kind == CCS_OP_SEND && o->buf == CCS_BUF_IN) {
                c0 = o->chunk;
                rd_in = true;
            } else if (o->kind != CCS_OP_SEND && o->kind != CCS_OP_RECV &&
                       o->src_buf == CCS_BUF_IN) {
                c0 = o->src_chunk;
                rd_in = true;
            }
            if (!rd_in)
                continue;
            for (uint32_t c = 0; c < o->nchunks && ok; c++) {
                uint32_t f = first[c0 + c];
                bool self = o->kind != CCS_OP_SEND &&
                            o->buf == CCS_BUF_OUT && o->chunk == c0;
                if (f == UINT32_MAX || o->step < f ||
                    (o->step == f && (o->kind == CCS_OP_SEND || self)))
                    continue;
                snprintf(why, len, "rank %u reads input chunk %u in step %u "
                         "after writing output chunk %u in step %u", r,
                         c0 + c, o->step, c0 + c, f);
                ok = false;
            }
        }
    }
    free(first);
    return ok;
}

static void write_xml(msccl_sb_t *b, const ccs_sched_t *s,
                      const msccl_export_opts_t *o, const char *name,
                      const xrank_t *xr, uint32_t nch, bool inplace)
{
    static const char bufc[] = { 'i', 'o', 's' };
    uint32_t B = ccs_coll_block(s->coll, s->nranks, s->nchunks);
    uint32_t ich = s->coll == CCS_COLL_ALLGATHER ? B : s->nchunks;
    uint32_t och = s->coll == CCS_COLL_REDUCESCATTER ? B : s->nchunks;

    msccl_sb_printf(b, "<algo name=\"%s\" proto=\"%s\" nchannels=\"%u\" "
                    "nchunksperloop=\"%u\" ngpus=\"%u\" coll=\"%s\" "
                    "inplace=\"%d\" outofplace=\"%d\" minBytes=\"%" PRIu64
                    "\" maxBytes=\"%" PRIu64 "\"",
                    name, msccl_proto_str(o->proto), nch, s->nchunks,
                    s->nranks, ccs_coll_str(s->coll), inplace ? 1 : 0,
                    o->outofplace, o->min_bytes, o->max_bytes);
    /* The executor ignores attributes it does not look up: the root keeps
     * a rooted schedule importable as what it is. */
    if (ccs_coll_rooted(s->coll))
        msccl_sb_printf(b, " root=\"%d\"", s->root);
    msccl_sb_printf(b, ">\n");
    for (uint32_t r = 0; r < s->nranks; r++) {
        msccl_sb_printf(b, "  <gpu id=\"%u\" i_chunks=\"%u\" o_chunks=\"%u\" "
                        "s_chunks=\"%u\">\n", r, ich, och, s->nscratch);
        for (uint32_t t = 0; t < xr[r].ntbs; t++) {
            const xtb_t *tb = &xr[r].tbs[t];
            msccl_sb_printf(b, "    <tb id=\"%u\" send=\"%d\" recv=\"%d\" "
                            "chan=\"%u\">\n", t, tb->send, tb->recv,
                            tb->chan);
            for (uint32_t k = 0; k < tb->nsteps; k++) {
                const xstep_t *x = &tb->steps[k];
                msccl_sb_printf(b, "      <step s=\"%u\" type=\"%s\" "
                                "srcbuf=\"%c\" srcoff=\"%d\" dstbuf=\"%c\" "
                                "dstoff=\"%d\" cnt=\"%d\" depid=\"%d\" "
                                "deps=\"%d\" hasdep=\"%u\"/>\n", k,
                                msccl_type_str((msccl_type_t)x->type),
                                bufc[x->srcbuf], x->srcoff, bufc[x->dstbuf],
                                x->dstoff, x->cnt, x->depid, x->deps,
                                x->hasdep);
            }
            msccl_sb_printf(b, "    </tb>\n");
        }
        msccl_sb_printf(b, "  </gpu>\n");
    }
    msccl_sb_printf(b, "</algo>\n");
}

/* The executor keeps a step's depid in 8 bits, so only thread blocks
 * 0..MSCCL_MAX_WAITED_TB can be waited for: number those that are waited
 * for first (a no-op unless a waited-for one is past that). */
static ccs_status_t waited_first(xrank_t *xr, uint32_t rank, char *why,
                                 size_t len, ccs_err_t *err)
{
    uint32_t n = xr->ntbs, nwaited = 0, last = 0;
    int32_t *newid = NULL;      /* owned: [n] */
    xtb_t *tbs = NULL;          /* owned until it replaces xr->tbs */
    bool *waited = NULL;        /* owned: [n] */

    if (n <= MSCCL_MAX_WAITED_TB + 1)
        return CCS_OK;
    waited = calloc(n, sizeof(*waited));
    newid = malloc(n * sizeof(*newid));
    tbs = malloc(n * sizeof(*tbs));
    if (waited == NULL || newid == NULL || tbs == NULL) {
        free(waited);
        free(newid);
        free(tbs);
        return ccs_err_set(err, CCS_ERR_NOMEM, "msccl export: out of "
                           "memory");
    }
    for (uint32_t t = 0; t < n; t++)
        for (uint32_t k = 0; k < xr->tbs[t].nsteps && !waited[t]; k++)
            waited[t] = xr->tbs[t].steps[k].hasdep != 0;
    for (uint32_t t = 0; t < n; t++)
        if (waited[t]) {
            nwaited++;
            last = t;
        }
    if (nwaited > MSCCL_MAX_WAITED_TB + 1) {
        snprintf(why, len, "rank %u has %u thread blocks that others wait "
                 "for, and the executor keeps the thread block of a "
                 "dependency in 8 bits (depid 0..%d)", rank, nwaited,
                 MSCCL_MAX_WAITED_TB);
        free(waited);
        free(newid);
        free(tbs);
        return CCS_ERR_UNSUPPORTED;
    }
    if (last > MSCCL_MAX_WAITED_TB) {
        uint32_t k = 0;
        for (int pass = 0; pass < 2; pass++)
            for (uint32_t t = 0; t < n; t++)
                if (waited[t] == (pass == 0)) {
                    newid[t] = (int32_t)k;
                    tbs[k++] = xr->tbs[t];
                }
        for (uint32_t t = 0; t < n; t++)
            for (uint32_t j = 0; j < tbs[t].nsteps; j++)
                if (tbs[t].steps[j].depid >= 0)
                    tbs[t].steps[j].depid = newid[tbs[t].steps[j].depid];
        free(xr->tbs);
        xr->tbs = tbs;      /* ownership moves to xr */
        tbs = NULL;
    }
    free(waited);
    free(newid);
    free(tbs);
    return CCS_OK;
}

/* Check one attempt against the limits; CCS_OK or a message. */
static ccs_status_t check_limits(work_t *w, xrank_t *xr, uint32_t rank,
                                 msccl_export_info_t *info, char *why,
                                 size_t len, ccs_err_t *err)
{
    uint32_t nsend[MSCCL_MAX_CHANNELS] = { 0 }, nrecv[MSCCL_MAX_CHANNELS] = {
        0 };
    uint32_t elems = 1 + w->s->nranks + xr->ntbs;
    ccs_status_t st;

    if (xr->ntbs > info->max_tbs_per_rank)
        info->max_tbs_per_rank = xr->ntbs;
    if (xr->ntbs > w->max_tbs) {
        if (!w->tbs_over || xr->ntbs < w->tbs_min) {
            w->tbs_min = xr->ntbs;
            w->tbs_min_rank = rank;
        }
        w->tbs_over = true;
        w->over_tbs_now = true;
        snprintf(why, len, "rank %u needs %u thread blocks", rank,
                 xr->ntbs);
        return CCS_ERR_UNSUPPORTED;
    }
    st = waited_first(xr, rank, why, len, err);
    if (st != CCS_OK)
        return st;
    for (uint32_t t = 0; t < xr->ntbs; t++) {
        const xtb_t *tb = &xr->tbs[t];
        elems += tb->nsteps;
        if (tb->nsteps > info->max_tb_steps)
            info->max_tb_steps = tb->nsteps;
        if (tb->nsteps > w->max_tb_steps) {
            snprintf(why, len, "rank %u thread block %u (send %d, recv %d, "
                     "channel %u) needs %u steps, more than the %u steps "
                     "per thread block the executor runs", rank, t,
                     tb->send, tb->recv, tb->chan, tb->nsteps,
                     w->max_tb_steps);
            return CCS_ERR_UNSUPPORTED;
        }
        if (tb->send >= 0 && ++nsend[tb->chan] > MSCCL_MAX_TB_PER_CHANNEL) {
            snprintf(why, len, "rank %u has more than %u sending thread "
                     "blocks on channel %u", rank, MSCCL_MAX_TB_PER_CHANNEL,
                     tb->chan);
            return CCS_ERR_UNSUPPORTED;
        }
        if (tb->recv >= 0 && ++nrecv[tb->chan] > MSCCL_MAX_TB_PER_CHANNEL) {
            snprintf(why, len, "rank %u has more than %u receiving thread "
                     "blocks on channel %u", rank, MSCCL_MAX_TB_PER_CHANNEL,
                     tb->chan);
            return CCS_ERR_UNSUPPORTED;
        }
    }
    if (elems > info->max_elems_per_rank)
        info->max_elems_per_rank = elems;
    if (elems >= MSCCL_MAX_ELEMS_PER_RANK) {
        snprintf(why, len, "rank %u needs %u XML elements (the algo, %u "
                 "gpu, its tb and step elements), and the executor's "
                 "parser holds fewer than %u", rank, elems,
                 w->s->nranks, MSCCL_MAX_ELEMS_PER_RANK);
        return CCS_ERR_UNSUPPORTED;
    }
    return CCS_OK;
}

static void work_free(work_t *w)
{
    free(w->plan);
    free(w->order);
    free(w->send_tb);
    free(w->recv_tb);
    free(w->local_tb);
    free(w->chain_send);
    free(w->chain_recv);
    free(w->pair_send);
    free(w->pair_recv);
    free(w->writer);
    if (w->readers != NULL)
        for (uint32_t l = 0; l < w->nloc; l++)
            free(w->readers[l]);
    free(w->readers);
    free(w->nreaders);
    free(w->capreaders);
    free(w->known);
    free(w->depmax);
    free(w->prevk);
    free(w->curk);
}

/* The most ops one rank has in one step with one peer in one direction:
 * that many lanes (channels) let them run in parallel. */
static uint32_t max_lanes(const ccs_sched_t *s)
{
    uint32_t best = 1;
    for (uint32_t r = 0; r < s->nranks; r++) {
        const ccs_op_t *ops = s->rank_ops[r];
        uint32_t n = s->rank_nops[r];
        for (uint32_t i = 0; i < n; i++) {
            uint32_t k = 1;
            if (ops[i].peer < 0)
                continue;
            for (uint32_t j = i; j-- > 0 && ops[j].step == ops[i].step;)
                if (ops[j].peer == ops[i].peer &&
                    (ops[j].kind == CCS_OP_SEND) ==
                        (ops[i].kind == CCS_OP_SEND))
                    k++;
            if (k > best)
                best = k;
        }
    }
    return best;
}

/* The smallest number of peer groups that keeps every rank's distinct
 * send (and receive) peers of a group within MSCCL_MAX_TB_PER_CHANNEL,
 * counting only the ops of time block b of nblk. */
static uint32_t peer_groups(const ccs_sched_t *s, uint8_t *seen,
                            uint32_t nblk, uint32_t b)
{
    uint32_t R = s->nranks, ns = s->nsteps ? s->nsteps : 1;
    for (uint32_t npg = 1; npg < MSCCL_MAX_CHANNELS; npg++) {
        bool ok = true;
        for (uint32_t r = 0; r < R && ok; r++) {
            uint32_t cnt[2][MSCCL_MAX_CHANNELS] = { { 0 } };
            memset(seen, 0, 2 * (size_t)R);
            for (uint32_t i = 0; i < s->rank_nops[r]; i++) {
                const ccs_op_t *o = &s->rank_ops[r][i];
                if (o->peer < 0 ||
                    (uint64_t)o->step * nblk / ns != b)
                    continue;
                int d = o->kind == CCS_OP_SEND ? 0 : 1;
                uint8_t *sn = &seen[(size_t)d * R + (uint32_t)o->peer];
                if (*sn)
                    continue;
                *sn = 1;
                if (++cnt[d][(r + (uint32_t)o->peer) % npg] >
                    MSCCL_MAX_TB_PER_CHANNEL)
                    ok = false;
            }
        }
        if (ok)
            return npg;
    }
    return MSCCL_MAX_CHANNELS;
}

/* Try the ways to lay the schedule out, best first; CCS_OK with xr and
 * inf filled, or CCS_ERR_UNSUPPORTED with the last limit missed in why. */
static ccs_status_t search(work_t *w, const msccl_export_opts_t *opt,
                           xrank_t *xr, msccl_export_info_t *inf_out,
                           uint8_t *seen, uint32_t want, char *why,
                           size_t len, ccs_err_t *err)
{
    const ccs_sched_t *s = w->s;
    uint32_t maxlanes = max_lanes(s);
    msccl_export_info_t inf;
    ccs_status_t st = CCS_ERR_UNSUPPORTED;

    memset(&inf, 0, sizeof(inf));
    snprintf(why, len, "%u channels asked", want);
    /* Attempts, best first: every pipelined transfer of a step on its own
     * lane (fewer lanes serialise them in one thread block, which costs
     * more than any reordering), then the schedule's per-rank step order
     * (its nops lengthen thread blocks, so it may need more time blocks
     * and thus leave fewer channels for lanes), else only the data
     * dependencies (what the GPU needs). */
    /* With fewer lanes allowed, the lane cap halves while thread blocks
     * are what is over: each lane is a thread block per peer. */
    uint32_t cap = maxlanes;
    int last_pass = -1;
    for (int pass = opt->order_steps ? 0 : 1; pass < 4; pass++) {
        bool full_lanes = pass < 2;
        w->step_order = pass % 2 == 0;
        if (w->step_order && !opt->order_steps)
            continue;
        if (pass != last_pass)
            cap = maxlanes;
        last_pass = pass;
        bool over_before = w->tbs_over;
        w->tbs_over = false;
        for (uint32_t nblk = want; nblk <= MSCCL_MAX_CHANNELS; nblk++) {
            uint32_t groups = 0;
            for (uint32_t bk = 0; bk < nblk && groups <= MSCCL_MAX_CHANNELS;
                 bk++) {
                w->blk_base[bk] = groups;
                w->blk_npg[bk] = peer_groups(s, seen, nblk, bk);
                groups += w->blk_npg[bk];
            }
            if (groups > MSCCL_MAX_CHANNELS) {
                snprintf(why, len, "cut into %u time blocks the "
                         "schedule needs %u channels to keep at most %u "
                         "peers per channel", nblk, groups,
                         MSCCL_MAX_TB_PER_CHANNEL);
                continue;
            }
            w->nblk = nblk;
            w->nlanes = MSCCL_MAX_CHANNELS / groups;
            if (w->nlanes > (full_lanes ? maxlanes : cap))
                w->nlanes = full_lanes ? maxlanes : cap;
            if (full_lanes && w->nlanes < maxlanes) {
                snprintf(why, len, "cut into %u time blocks the "
                         "schedule leaves %u channels for the %u "
                         "transfers a step sends between one pair of "
                         "ranks", nblk, w->nlanes, maxlanes);
                break;  /* more time blocks leave fewer lanes still */
            }
            w->nch = groups * w->nlanes;
            memset(&inf, 0, sizeof(inf));
            for (uint32_t r = 0; r < s->nranks; r++)
                msccl_xrank_free(&xr[r]);
            st = CCS_OK;
            w->over_tbs_now = false;
            for (uint32_t r = 0; r < s->nranks && st == CCS_OK; r++) {
                st = msccl_build_rank(w, r, &xr[r], &inf, err);
                if (st == CCS_OK)
                    st = check_limits(w, &xr[r], r, &inf, why, len, err);
            }
            if (st == CCS_ERR_UNSUPPORTED && !w->over_tbs_now) {
                w->other_seen = true;
                snprintf(w->other_why, sizeof(w->other_why), "%s", why);
            }
            if (st != CCS_ERR_UNSUPPORTED)
                break;
        }
        bool over_now = w->tbs_over;
        w->tbs_over = over_before || over_now;
        if (st != CCS_ERR_UNSUPPORTED)
            break;
        if (!full_lanes && over_now && cap > 1) {
            cap /= 2;
            pass--;     /* the same pass with fewer lanes */
        }
    }
    *inf_out = inf;
    return st;
}

ccs_status_t msccl_export(const ccs_sched_t *s, const msccl_export_opts_t *opt,
                          char **xml, size_t *len, msccl_export_info_t *info,
                          ccs_err_t *err)
{
    msccl_export_opts_t defo;
    msccl_export_info_t inf;
    work_t w;
    xrank_t *xr = NULL;     /* owned: [nranks] */
    uint8_t *seen = NULL;   /* owned */
    msccl_sb_t b = { NULL, 0, 0, 0 };
    char name[MSCCL_MAX_STR + 1], why[256] = "";
    uint32_t maxops = 0;
    bool inplace;
    ccs_status_t st;

    memset(&w, 0, sizeof(w));
    if (opt == NULL) {
        msccl_export_opts_init(&defo);
        opt = &defo;
    }
    st = ccs_sched_validate(s, err);
    if (st != CCS_OK)
        return st;
    /* The IR spells an in-switch reduction as point-to-point ops (what the
     * verifier checks); written out, the executor would run exactly those
     * copies, at about twice the NVLS time.  NCCL runs NVLS itself, so the
     * honest file is none: the calls fall back to NCCL. */
    if (sim_sched_nvls(s))
        return ccs_err_set(err, CCS_ERR_UNSUPPORTED,
                           "msccl export: the schedule reduces in the "
                           "NVSwitch (nvls=1, NVLink SHARP) and MSCCL's XML "
                           "has no in-switch reduction: the executor would "
                           "run the point-to-point copies the schedule "
                           "spells, about twice as slow; way out: write no "
                           "XML for these sizes (calls no XML covers fall "
                           "back to NCCL, which runs NVLS itself), or "
                           "export a point-to-point algorithm");
    if (opt->outofplace != 0 && opt->outofplace != 1)
        return ccs_err_set(err, CCS_ERR_INVALID,
                           "msccl export: outofplace must be 0 or 1");
    if (opt->max_bytes != 0 && opt->max_bytes < opt->min_bytes)
        return ccs_err_set(err, CCS_ERR_INVALID,
                           "msccl export: maxBytes %" PRIu64 " is below "
                           "minBytes %" PRIu64, opt->max_bytes,
                           opt->min_bytes);
    if (opt->name != NULL)
        snprintf(name, sizeof(name), "%s", opt->name);
    else
        snprintf(name, sizeof(name), "ccsynth_%s_%s_%u",
                 s->algo[0] ? s->algo : "sched", ccs_coll_str(s->coll),
                 s->nranks);
    for (char *p = name; *p; p++)
        if (*p == '"' || *p == '<' || *p == '&' || *p == '>' ||
            (unsigned char)*p < 0x20)
            return ccs_err_set(err, CCS_ERR_INVALID,
                               "msccl export: name '%s' has a character "
                               "XML would need escaped ('%c')", name, *p);
    inplace = false;
    if (opt->inplace != 0) {
        bool safe = inplace_safe(s, why, sizeof(why));
        if (opt->inplace == 1 && !safe)
            return ccs_err_set(err, CCS_ERR_UNSUPPORTED,
                               "msccl export: inplace=1 asked, but the "
                               "schedule is wrong with input and output "
                               "aliased: %s; export out-of-place only "
                               "(--inplace 0)", why);
        inplace = safe;
    }
    if (!inplace && opt->outofplace == 0)
        return ccs_err_set(err, CCS_ERR_INVALID,
                           "msccl export: neither in-place nor out-of-place: "
                           "the executor would never use it");

    for (uint32_t r = 0; r < s->nranks; r++)
        if (s->rank_nops[r] > maxops)
            maxops = s->rank_nops[r];
    w.s = s;
    w.alias = inplace;
    w.max_tb_steps = opt->max_tb_steps ? opt->max_tb_steps
                                       : MSCCL_MAX_TB_STEPS;
    w.max_tbs = opt->max_tbs ? opt->max_tbs : MSCCL_RESIDENT_TBS;
    if (w.max_tbs > MSCCL_MAX_TBS)
        return ccs_err_set(err, CCS_ERR_INVALID, "msccl export: %u thread "
                           "blocks per GPU asked; the executor has ids for "
                           "%u", w.max_tbs, MSCCL_MAX_TBS);
    w.nloc = 2 * s->nchunks + s->nscratch;
    w.plan = calloc(maxops + 1, sizeof(*w.plan));
    w.order = calloc(maxops + 1, sizeof(*w.order));
    w.pair_send = calloc(s->nranks, sizeof(*w.pair_send));
    w.pair_recv = calloc(s->nranks, sizeof(*w.pair_recv));
    w.writer = calloc(w.nloc, sizeof(*w.writer));
    w.readers = calloc(w.nloc, sizeof(*w.readers));
    w.nreaders = calloc(w.nloc, sizeof(*w.nreaders));
    w.capreaders = calloc(w.nloc, sizeof(*w.capreaders));
    w.local_tb = calloc(MSCCL_MAX_CHANNELS, sizeof(*w.local_tb));
    xr = calloc(s->nranks, sizeof(*xr));
    seen = calloc(2 * (size_t)s->nranks, 1);
    if (w.plan == NULL || w.order == NULL || w.pair_send == NULL ||
        w.pair_recv == NULL || w.writer == NULL || w.readers == NULL ||
        w.nreaders == NULL || w.capreaders == NULL || w.local_tb == NULL ||
        xr == NULL || seen == NULL) {
        st = ccs_err_set(err, CCS_ERR_NOMEM, "msccl export: out of memory");
        goto cleanup;
    }
    w.send_tb = calloc((size_t)MSCCL_MAX_CHANNELS * s->nranks,
                       sizeof(*w.send_tb));
    w.recv_tb = calloc((size_t)MSCCL_MAX_CHANNELS * s->nranks,
                       sizeof(*w.recv_tb));
    w.chain_send = calloc((size_t)MSCCL_MAX_CHANNELS * s->nranks,
                          sizeof(*w.chain_send));
    w.chain_recv = calloc((size_t)MSCCL_MAX_CHANNELS * s->nranks,
                          sizeof(*w.chain_recv));
    if (w.send_tb == NULL || w.recv_tb == NULL || w.chain_send == NULL ||
        w.chain_recv == NULL) {
        st = ccs_err_set(err, CCS_ERR_NOMEM, "msccl export: out of memory");
        goto cleanup;
    }
    uint32_t want = opt->min_channels > 1 ? opt->min_channels : 1;
    st = search(&w, opt, xr, &inf, seen, want, why, sizeof(why), err);
    if (st == CCS_ERR_UNSUPPORTED && w.tbs_over) {
        /* A thread block per peer and direction is too many: one per
         * peer, sending and receiving, halves them (its sends and
         * receives then take turns). */
        w.pair_same = true;
        w.tbs_over = false;
        w.other_seen = false;
        st = search(&w, opt, xr, &inf, seen, want, why, sizeof(why), err);
    }
    inf.step_order = w.step_order;
    /* Name the thread-block limit when it is all that stood in the way
     * (no layout needs fewer than the smallest count met), else the last
     * other limit missed. */
    if (st == CCS_ERR_UNSUPPORTED && w.other_seen)
        snprintf(why, sizeof(why), "%s", w.other_why);
    else if (st == CCS_ERR_UNSUPPORTED && w.tbs_over)
        snprintf(why, sizeof(why), "rank %u needs at least %u thread blocks "
                 "(one per peer it exchanges with%s, per channel), more than "
                 "the %u that can be resident at once (the executor's "
                 "blocks wait for each other, one per SM)", w.tbs_min_rank,
                 w.tbs_min, w.pair_same ? "" : " and direction", w.max_tbs);
    if (st == CCS_ERR_UNSUPPORTED &&
        ((w.tbs_over && !w.other_seen) || strstr(why, "8 bits") != NULL)) {
        st = ccs_err_set(err, CCS_ERR_UNSUPPORTED,
                         "msccl export: %s; way out: --max-tbs N up to the "
                         "SM count of the GPU it runs on (132 on an H100 "
                         "SXM; past %d only if at most %d of them are waited "
                         "for), fewer ranks per MSCCL algorithm, or an "
                         "algorithm that talks to fewer peers per rank "
                         "(ring)", why, MSCCL_MAX_WAITED_TB + 1,
                         MSCCL_MAX_WAITED_TB + 1);
        goto cleanup;
    }
    if (st == CCS_ERR_UNSUPPORTED) {
        bool steps = strstr(why, "steps per thread block") != NULL;
        st = ccs_err_set(err, CCS_ERR_UNSUPPORTED,
                         "msccl export: %s, even spread over %u channels "
                         "(the executor's most); way out: fewer chunks "
                         "(synthesize with a smaller --pipeline or "
                         "--chunks)%s", why, MSCCL_MAX_CHANNELS,
                         steps ? ", or --max-steps 256 for MSCCL runtimes "
                                 "built with MSCCL_MAX_NUM_STEPS 256 (RCCL, "
                                 "the older microsoft/msccl)" : "");
        goto cleanup;
    }
    if (st != CCS_OK)
        goto cleanup;
    /* nchannels is 1 + the largest channel used. */
    uint32_t nch = 1;
    for (uint32_t r = 0; r < s->nranks; r++)
        for (uint32_t t = 0; t < xr[r].ntbs; t++)
            if (xr[r].tbs[t].chan + 1 > nch)
                nch = xr[r].tbs[t].chan + 1;
    for (uint32_t r = 0; r < s->nranks; r++)
        for (uint32_t t = 0; t < xr[r].ntbs; t++)
            inf.nsteps += xr[r].tbs[t].nsteps;
    inf.nchannels = nch;
    inf.inplace = inplace;
    inf.outofplace = opt->outofplace == 1;
    write_xml(&b, s, opt, name, xr, nch, inplace);
    if (b.failed) {
        st = ccs_err_set(err, CCS_ERR_NOMEM, "msccl export: out of memory");
        goto cleanup;
    }
    *xml = b.data;  /* ownership moves to the caller */
    *len = b.len;
    b.data = NULL;
    if (info != NULL)
        *info = inf;

cleanup:
    msccl_sb_free(&b);
    if (xr != NULL)
        for (uint32_t r = 0; r < s->nranks; r++)
            msccl_xrank_free(&xr[r]);
    free(xr);
    free(seen);
    work_free(&w);
    return st;
}

ccs_status_t msccl_export_file(const ccs_sched_t *s,
                               const msccl_export_opts_t *o, const char *path,
                               msccl_export_info_t *info, ccs_err_t *err)
{
    char *xml = NULL;   /* owned */
    char *tmp = NULL;   /* owned */
    size_t len = 0;
    FILE *f = NULL;
    ccs_status_t st = msccl_export(s, o, &xml, &len, info, err);

    if (st != CCS_OK)
        return st;
    size_t tl = strlen(path) + 32;
    tmp = malloc(tl);
    if (tmp == NULL) {
        st = ccs_err_set(err, CCS_ERR_NOMEM, "msccl export: out of memory");
        goto cleanup;
    }
    snprintf(tmp, tl, "%s.tmp.%ld", path, (long)getpid());
    f = fopen(tmp, "wb");
    if (f == NULL) {
        st = ccs_err_set(err, CCS_ERR_IO, "%s: cannot create: %s", tmp,
                         strerror(errno));
        goto cleanup;
    }
    if (fwrite(xml, 1, len, f) != len || fflush(f) != 0) {
        st = ccs_err_set(err, CCS_ERR_IO, "%s: write failed: %s", tmp,
                         strerror(errno));
        goto cleanup;
    }
    if (fclose(f) != 0) {
        f = NULL;
        st = ccs_err_set(err, CCS_ERR_IO, "%s: write failed: %s", tmp,
                         strerror(errno));
        goto cleanup;
    }
    f = NULL;
    if (rename(tmp, path) != 0) {
        st = ccs_err_set(err, CCS_ERR_IO, "%s: cannot rename to %s: %s", tmp,
                         path, strerror(errno));
        goto cleanup;
    }
    free(tmp);
    tmp = NULL;

cleanup:
    if (f != NULL)
        fclose(f);
    if (tmp != NULL)
        remove(tmp);
    free(tmp);
    free(xml);
    return st;
}

ccs_status_t msccl_write_algo_dir(const char *dir,
                                  const msccl_dir_entry_t *entries, size_t n,
                                  const msccl_export_opts_t *base,
                                  ccs_err_t *err)
{
    msccl_export_opts_t o;
    char path[4096], name[MSCCL_MAX_STR + 1];
    ccs_status_t st;

    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
        return ccs_err_set(err, CCS_ERR_IO, "%s: cannot create directory: %s",
                           dir, strerror(errno));
    for (size_t i = 0; i < n; i++) {
        const ccs_sched_t *s = entries[i].sched;
        /* No XML can say what NVLS does (msccl_export refuses it); leaving
         * the window uncovered lets NCCL run NVLS there itself. */
        if (sim_sched_nvls(s))
            continue;
        if (base != NULL)
            o = *base;
        else
            msccl_export_opts_init(&o);
        o.min_bytes = entries[i].min_bytes;
        o.max_bytes = entries[i].max_bytes;
        if (entries[i].has_proto)
            o.proto = entries[i].proto;
        snprintf(name, sizeof(name), "ccsynth_%02zu_%s_%s_%u", i,
                 s->algo[0] ? s->algo : "sched", ccs_coll_str(s->coll),
                 s->nranks);
        o.name = name;
        snprintf(path, sizeof(path), "%s/%02zu-%s-%s-%u.xml", dir, i,
                 s->algo[0] ? s->algo : "sched", ccs_coll_str(s->coll),
                 s->nranks);
        st = msccl_export_file(s, &o, path, NULL, err);
        if (st != CCS_OK) {
            ccs_err_prefix(err, "plan %zu (%" PRIu64 "..%" PRIu64 " bytes): ",
                           i, entries[i].min_bytes, entries[i].max_bytes);
            return st;
        }
    }
    return CCS_OK;
}
