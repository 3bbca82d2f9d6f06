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
 * Cost (a = alpha, b = beta at the GPU's link, s bytes, P pieces): each
 * step moves s / (n P) per transfer; a GPU's uplink carries (n-1) reduce
 * sends and one multicast, its downlink one reduced stream and (n-1)
 * multicast copies: s / P per step each way, so
 * T ~ (P + L + 1) a + (P + L + 1) / P s b, against the ring's
 * 2(n-1)/n s b (1.75x the traffic at n = 8).  P = 32 x --pipeline: the
 * pipeline fill costs (L + 1)/P, 12% at n = 8.
 * With NCCL's protocol model the per-step latency is replaced by NVLS's
 * single 25 us figure (docs/simulator.md).
 *
 * Runs on one server whose switch has NVLS (dgx-h100, or a YAML switch
 * with `nvls: true`).
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
    if (l.nservers > 1)
        return ccs_err_set(err, CCS_ERR_UNSUPPORTED,
                           "nvls: runs inside one server; '%s' has %u "
                           "(NCCL's NVLS tree across servers is not "
                           "modelled)", t->name, l.nservers);
    np = (uint64_t)NVLS_PIECES * (p->pipeline < 1 ? 1 : p->pipeline);
    if (p->nchunks > 0) {
        if (p->nchunks % l.n != 0)
            return ccs_err_set(err, CCS_ERR_UNSUPPORTED,
                               "nvls: --chunks %u is not a multiple of the "
                               "%u ranks", p->nchunks, l.n);
        np = p->nchunks / l.n;
    }
    if (np * l.n > CCS_MAX_CHUNKS || np * (l.n > 2 ? l.n - 2 : 1) >
        CCS_MAX_CHUNKS)
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

static ccs_status_t build_nvls(const topo_t *t, const algo_params_t *p,
                               ccs_sched_t **out, algo_report_t *rep,
                               ccs_err_t *err)
{
    uint32_t n = (uint32_t)t->ngpus, np = 0, levels = 0, step;
    uint32_t m = n - 1;            /* values folded per block */
    ccs_sched_t *s = NULL;         /* owned until *out */
    ccs_status_t st;

    st = nvls_shape(t, p, &np, err);
    if (st != CCS_OK)
        return st;
    while ((1u << levels) < m)
        levels++;
    st = ccs_sched_create(p->coll, n, np * n, "nvls", &s, err);
    for (uint32_t i = 0; st == CCS_OK && i < np + levels + 1; i++)
        st = ccs_sched_add_step(s, 0, &step, err);
    for (uint32_t t0 = 0; st == CCS_OK && t0 < np; t0++) {
        for (uint32_t j = 0; st == CCS_OK && j < n; j++) {
            uint32_t ch = t0 * n + j;

            /* reduce: GPU j's block of piece t0 from every other GPU */
            for (uint32_t k = 0; st == CCS_OK && k < m; k++) {
                uint32_t i = (j + 1 + k) % n;

                if (k == 0)
                    st = ccs_sched_xfer_reduce_from(s, t0, i, CCS_BUF_IN, ch,
                                                    j, CCS_BUF_OUT, ch,
                                                    CCS_BUF_IN, ch, 1, err);
                else
                    st = ccs_sched_xfer(s, t0, i, CCS_BUF_IN, ch, j,
                                        CCS_BUF_SCRATCH,
                                        t0 * (n - 2) + k - 1, 1, false, err);
            }
            /* fold: value 0 is OUT, value k >= 1 is SCRATCH slot k-1 */
            for (uint32_t L = 0; st == CCS_OK && L < levels; L++) {
                uint32_t stride = 1u << L;

                for (uint32_t a = 0; st == CCS_OK && a + stride < m;
                     a += 2 * stride) {
                    uint32_t b = a + stride;
                    ccs_buf_t db = a == 0 ? CCS_BUF_OUT : CCS_BUF_SCRATCH;
                    uint32_t dc = a == 0 ? ch : t0 * (n - 2) + a - 1;

                    st = ccs_sched_local(s, t0 + 1 + L, j, db, dc,
                                         CCS_BUF_SCRATCH,
                                         t0 * (n - 2) + b - 1, 1, true, err);
                }
            }
            /* multicast the reduced block to every other GPU */
            for (uint32_t k = 0; st == CCS_OK && k < m; k++)
                st = ccs_sched_xfer(s, t0 + levels + 1, j, CCS_BUF_OUT, ch,
                                    (j + 1 + k) % n, CCS_BUF_OUT, ch, 1,
                                    false, err);
        }
    }
    if (st == CCS_OK)
        st = nccl_params_add(s, "nvls", 1, err);
    if (st != CCS_OK)
        goto cleanup;
    algo_report_addf(rep, "nvls: %u pieces, %u fold levels, %u steps", np,
                     levels, np + levels + 1);
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
