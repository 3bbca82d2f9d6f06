/*
 * algo_nvls.c - NCCL's NVLS allreduce (NVLink SHARP): the switch reduces
 * and multicasts, the third member of the `nccl` baseline on H100-class
 * NVSwitch systems.
 *
 * What NCCL does (src/transport/nvls.cc, src/device/all_reduce.h; NVIDIA's
 * NVLink SHARP material): every GPU maps a multicast object that spans
 * the GPUs of the switch.  For its 1/n share of the buffer a GPU issues a
 * multimem load-reduce: the switch reads that share from every GPU, sums
 * it in the switch and returns one reduced stream; the GPU then issues a
 * multimem store and the switch replicates it to every GPU.  So each link
 * carries about s per direction instead of the ring's 2(n-1)/n s, and the
 * two halves are pipelined over the buffer.  NCCL runs NVLS with the
 * Simple protocol only and only where the switch supports it (Hopper and
 * later NVSwitch; not A100).
 *
 * The IR has no switch op, so the schedule states the semantics with
 * point-to-point ops that the verifier checks, and marks itself nvls=1 in
 * its params so the simulator times the switch's work (sim_proto.h):
 * - piece t, step t: every GPU i sends IN[t, j] to GPU j (j != i); j
 *   receives the first into OUT[t, j] reduced with its own IN[t, j] and
 *   the others into SCRATCH.  The simulator lets these n-1 transfers,
 *   which converge on j through the NVLS switch, cross the switch -> j
 *   link once (the switch sums them);
 * - steps t+1 .. t+L, L = ceil(log2(n-1)): j folds the SCRATCH copies
 *   into OUT[t, j] pairwise (local work, free unless --local-bw);
 * - step t+L+1: j sends OUT[t, j] to every other GPU; the simulator lets
 *   them cross the j -> switch link once (the switch multicasts).
 * Replayed by libccs (which has no multimem path) it runs as ordinary
 * point-to-point copies: correct, not fast.
 *
 * Cost on one server (a = alpha, b = beta at the GPU's link, s bytes,
 * P pieces): each
 * step moves s / (n P) per transfer; a GPU's uplink carries (n-1) reduce
 * sends and one multicast, its downlink one reduced stream and (n-1)
 * multicast copies: s / P per step each way, so
 * T ~ (P + L + 1) a + (P + L + 1) / P s b, against the ring's
 * 2(n-1)/n s b (1.75x the traffic at n = 8).  P = 32 x --pipeline: the
 * pipeline fill costs (L + 1)/P, 12% at n = 8.
 * With NCCL's protocol model the per-step latency is replaced by NVLS's
 * single 25 us figure (docs/simulator.md).
 *
 * Across servers NCCL runs NVLS inside each server and trees between them
 * (NVLS_TREE).  Here the middle part is a rail ring instead: after the
 * in-switch reduction GPU j of every server holds its server's sum of
 * block j, and the S GPUs with local index j (one per server, each
 * through its own NIC) allreduce that block with a ring (S-1
 * reduce-scatter and S-1 all-gather steps) before the multicast.  A NIC
 * then carries 2(S-1)/S of s/G per direction, against 2(n-1)/n of s/C
 * for NCCL's C-channel rings: at S = 2 half, which is the factor NCCL's
 * own model gives its NVLS tree on two nodes.  A tree between servers
 * would have log2(S) latency instead of the ring's S-1 steps; the ring is
 * the bandwidth-optimal choice and is what is modelled.
 *
 * Runs where every server has the same number of GPUs (2 or more) on a
 * switch with NVLS (dgx-h100, nvls=on, or a YAML switch with
 * `nvls: true`).
 */
#include <stdlib.h>

#include "algo.h"
#include "nccl.h"

#define NVLS_PIECES 32u

static ccs_status_t nvls_shape(const topo_t *t, const algo_params_t *p,
                               uint32_t *pieces, ccs_err_t *err)
{
    nccl_layout_t l;
    uint64_t np;
    ccs_status_t st = nccl_layout(t, &l, err);

    if (st != CCS_OK)
        return st;
    if (!l.nvls || l.direct)
        return ccs_err_set(err, CCS_ERR_UNSUPPORTED,
                           "nvls: the switch of topology '%s' does not "
                           "reduce (needs an NVLS switch: dgx-h100, "
                           "nvls=on, or 'nvls: true' in YAML)", t->name);
    if (l.per < 2)
        return ccs_err_set(err, CCS_ERR_UNSUPPORTED,
                           "nvls: needs servers of equal size, 2 or more "
                           "GPUs each, on topology '%s'", t->name);
    np = (uint64_t)NVLS_PIECES * (p->pipeline < 1 ? 1 : p->pipeline);
    if (p->nchunks > 0) {
        if (p->nchunks % l.n != 0 || p->nchunks == 0)
            return ccs_err_set(err, CCS_ERR_UNSUPPORTED,
                               "nvls: --chunks %u is not a multiple of the "
                               "%u ranks", p->nchunks, l.n);
        np = p->nchunks / l.n;
    }
    if (np * l.n > CCS_MAX_CHUNKS ||
        np * (l.per > 2 ? l.per - 2 : 1) * l.nservers > CCS_MAX_CHUNKS)
        return ccs_err_set(err, CCS_ERR_UNSUPPORTED,
                           "nvls: %llu pieces of %u blocks exceed %u chunks",
                           (unsigned long long)np, l.n, CCS_MAX_CHUNKS);
    *pieces = (uint32_t)np;
    return CCS_OK;
}

static ccs_status_t check_nvls(const topo_t *t, const algo_params_t *p,
                               ccs_err_t *err)
{
    uint32_t np;

    return nvls_shape(t, p, &np, err);
}

/* Rank of local GPU g on server sv. */
static uint32_t nvls_rank(uint32_t g, uint32_t sv, uint32_t G)
{
    return sv * G + g;
}

static ccs_status_t build_nvls(const topo_t *t, const algo_params_t *p,
                               ccs_sched_t **out, algo_report_t *rep,
                               ccs_err_t *err)
{
    nccl_layout_t l;
    uint32_t n = (uint32_t)t->ngpus, np = 0, levels = 0, step, nsteps;
    uint32_t G, S, m;
    ccs_sched_t *s = NULL;         /* owned until *out */
    ccs_status_t st;

    st = nvls_shape(t, p, &np, err);
    if (st == CCS_OK)
        st = nccl_layout(t, &l, err);
    if (st != CCS_OK)
        return st;
    S = l.nservers;
    G = l.per;
    m = G - 1;                     /* values folded per block */
    while ((1u << levels) < m)
        levels++;
    /* per piece: 1 reduce step, the folds, 2(S-1) rail-ring steps, the
     * multicast */
    nsteps = np + levels + 2 * (S - 1) + 1;
    st = ccs_sched_create(p->coll, n, np * n, "nvls", &s, err);
    for (uint32_t i = 0; st == CCS_OK && i < nsteps; i++)
        st = ccs_sched_add_step(s, 0, &step, err);
    for (uint32_t t0 = 0; st == CCS_OK && t0 < np; t0++) {
        for (uint32_t sv = 0; st == CCS_OK && sv < S; sv++) {
            for (uint32_t j = 0; st == CCS_OK && j < G; j++) {
                /* block j of piece t0: S chunks, one per rail position */
                uint32_t ch = (t0 * G + j) * S;
                uint32_t rj = nvls_rank(j, sv, G);
                uint32_t sc = t0 * (G > 2 ? G - 2 : 0) * S;
                uint32_t base = t0 + 1 + levels;

                /* reduce in the switch: block j from every local GPU */
                for (uint32_t k = 0; st == CCS_OK && k < m; k++) {
                    uint32_t ri = nvls_rank((j + 1 + k) % G, sv, G);

                    if (k == 0)
                        st = ccs_sched_xfer_reduce_from(
                            s, t0, ri, CCS_BUF_IN, ch, rj, CCS_BUF_OUT, ch,
                            CCS_BUF_IN, ch, S, err);
                    else
                        st = ccs_sched_xfer(s, t0, ri, CCS_BUF_IN, ch, rj,
                                            CCS_BUF_SCRATCH,
                                            sc + (k - 1) * S, S, false, err);
                }
                /* fold: value 0 is OUT, value k >= 1 SCRATCH slot k-1 */
                for (uint32_t L = 0; st == CCS_OK && L < levels; L++) {
                    uint32_t stride = 1u << L;

                    for (uint32_t a = 0; st == CCS_OK && a + stride < m;
                         a += 2 * stride) {
                        uint32_t b = a + stride;
                        ccs_buf_t db = a == 0 ? CCS_BUF_OUT
                                              : CCS_BUF_SCRATCH;
                        uint32_t dc = a == 0 ? ch : sc + (a - 1) * S;

                        st = ccs_sched_local(s, t0 + 1 + L, rj, db, dc,
                                             CCS_BUF_SCRATCH,
                                             sc + (b - 1) * S, S, true, err);
                    }
                }
                /* rail ring between servers on block j (GPU j of every
                 * server, through its own NIC): reduce-scatter of the S
                 * chunks, then all-gather; position = server */
                for (uint32_t u = 0; st == CCS_OK && S > 1 && u + 1 < S;
                     u++) {
                    uint32_t b = (sv + 2 * S - 1 - u) % S;
                    uint32_t to = nvls_rank(j, (sv + 1) % S, G);

                    st = ccs_sched_xfer_reduce_from(
                        s, base + u, rj, CCS_BUF_OUT, ch + b, to,
                        CCS_BUF_OUT, ch + b, CCS_BUF_OUT, ch + b, 1, err);
                }
                for (uint32_t u = 0; st == CCS_OK && S > 1 && u + 1 < S;
                     u++) {
                    uint32_t b = (sv + S - u) % S;
                    uint32_t to = nvls_rank(j, (sv + 1) % S, G);

                    st = ccs_sched_xfer(s, base + S - 1 + u, rj,
                                        CCS_BUF_OUT, ch + b, to, CCS_BUF_OUT,
                                        ch + b, 1, false, err);
                }
                /* multicast the reduced block to every other local GPU */
                for (uint32_t k = 0; st == CCS_OK && k < m; k++)
                    st = ccs_sched_xfer(s, base + 2 * (S - 1), rj,
                                        CCS_BUF_OUT, ch,
                                        nvls_rank((j + 1 + k) % G, sv, G),
                                        CCS_BUF_OUT, ch, S, false, err);
            }
        }
    }
    if (st == CCS_OK)
        st = nccl_params_add(s, "nvls", 1, err);
    if (st != CCS_OK)
        goto cleanup;
    algo_report_addf(rep, "nvls: %u server(s) of %u, %u pieces, %u fold "
                     "levels, %u steps", S, G, np, levels, nsteps);
    *out = s;
    s = NULL;

cleanup:
    ccs_sched_destroy(s);
    return st;
}

const algo_desc_t algo_nvls = {
    .name = "nvls",
    .desc = "NCCL's NVLS: in-switch reduce + multicast (H100 NVSwitch; "
            "baseline)",
    .colls = ALGO_COLL_BIT(CCS_COLL_ALLREDUCE),
    .check = check_nvls,
    .build = build_nvls,
};
