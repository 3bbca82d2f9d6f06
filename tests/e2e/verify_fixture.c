/*
 * verify_fixture.c - writes the .ccs files tests/e2e/verify_cli.sh feeds to
 * `ccsynth verify`, built from the IR builder so the test does not depend
 * on any algorithm module.  Built by `make e2e-progs`.
 *
 *   verify_fixture DIR   writes DIR/ring4.ccs, DIR/direct3.ccs,
 *                        DIR/wide8.ccs (correct; wide8: 8 ranks, 2^24
 *                        chunks, each op moving 2^21 of them),
 *                        DIR/missing.ccs, DIR/unmatched.ccs,
 *                        DIR/wide8_gap.ccs (broken)
 * Exit 0 on success, 1 on any failure (the message on stderr).
 */
#include <stdio.h>
#include <string.h>

#include "format.h"
#include "verify_fixture.h"

static int write_one(const ccs_sched_t *s, const char *dir, const char *name)
{
    char path[4096];
    ccs_err_t err = { { 0 } };
    ccs_status_t st;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    st = ccs_format_write_file(s, path, &err);
    if (st != CCS_OK) {
        fprintf(stderr, "verify_fixture: %s: %s\n", path,
                ccs_err_msg(&err, st));
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    ccs_sched_t *ring = NULL, *direct = NULL, *bad = NULL, *wide = NULL;
    ccs_err_t err = { { 0 } };
    int rc = 1;

    if (argc != 2) {
        fprintf(stderr, "usage: verify_fixture DIR\n");
        return 2;
    }
    if (fixture_ring_allreduce(4, &ring, &err) != CCS_OK ||
        fixture_direct_allgather(3, &direct, &err) != CCS_OK) {
        fprintf(stderr, "verify_fixture: %s\n", err.msg);
        goto cleanup;
    }
    if ((rc = write_one(ring, argv[1], "ring4.ccs")) != 0 ||
        (rc = write_one(direct, argv[1], "direct3.ccs")) != 0)
        goto cleanup;

    /* Rank 1's first op is the RECV_REDUCE of step 0: make it a plain
     * RECV, and rank 1's own contribution to chunk 0 is lost. */
    rc = 1;
    if (ccs_sched_clone(ring, &bad, &err) != CCS_OK)
        goto cleanup;
    for (uint32_t i = 0; i < bad->rank_nops[1]; i++) {
        ccs_op_t *op = &bad->rank_ops[1][i];
        if (op->kind == CCS_OP_RECV_REDUCE) {
            op->kind = CCS_OP_RECV;
            op->src_buf = 0;
            op->src_chunk = 0;
            break;
        }
    }
    if ((rc = write_one(bad, argv[1], "missing.ccs")) != 0)
        goto cleanup;
    ccs_sched_destroy(bad);
    bad = NULL;

    /* Drop rank 0's first op (its step-0 SEND): rank 1's receive is left
     * unmatched. */
    rc = 1;
    if (ccs_sched_clone(ring, &bad, &err) != CCS_OK)
        goto cleanup;
    memmove(bad->rank_ops[0], bad->rank_ops[0] + 1,
            (bad->rank_nops[0] - 1) * sizeof(ccs_op_t));
    bad->rank_nops[0]--;
    if ((rc = write_one(bad, argv[1], "unmatched.ccs")) != 0)
        goto cleanup;

    /* A tiny plan over the largest chunk count; then the same with rank
     * 2's step-0 send to rank 3 (block 2) started one chunk late on both
     * sides, so rank 3's out[2 * 2^21] is never written. */
    rc = 1;
    if (fixture_ring_allreduce_wide(8, CCS_MAX_CHUNKS / 8, &wide, &err) !=
        CCS_OK) {
        fprintf(stderr, "verify_fixture: %s\n", err.msg);
        goto cleanup;
    }
    if ((rc = write_one(wide, argv[1], "wide8.ccs")) != 0)
        goto cleanup;
    rc = 1;
    for (uint32_t r = 2; r <= 3; r++) {
        ccs_op_t *op = &wide->rank_ops[r][0];
        if (op->chunk != 2 * (CCS_MAX_CHUNKS / 8))
            op++;
        op->chunk++;
        op->nchunks--;
        if (op->kind == CCS_OP_RECV_REDUCE)
            op->src_chunk++;
    }
    rc = write_one(wide, argv[1], "wide8_gap.ccs");

cleanup:
    ccs_sched_destroy(wide);
    ccs_sched_destroy(bad);
    ccs_sched_destroy(direct);
    ccs_sched_destroy(ring);
    return rc;
}
