/* test_verify.c - the symbolic verifier: correct schedules of every
 * collective pass, one broken schedule per class of error is caught with
 * the right status and a message naming it, and the report is right. */
#include <stdlib.h>
#include <time.h>

#include "verify.h"
#include "harness.h"
#include "verify_fixture.h"

enum { I = CCS_BUF_IN, O = CCS_BUF_OUT, S = CCS_BUF_SCRATCH };

/* One line of a hand-written schedule.  Kinds:
 *   'x' transfer a:(ab,ac) -> b:(bb,bc), RECV
 *   'r' transfer with RECV_REDUCE into b:(bb,bc) (own destination)
 *   'R' transfer with RECV_REDUCE, local operand b:(ob,oc)
 *   'c' COPY on rank a: (bb,bc) = (ab,ac)
 *   'l' REDUCE_LOCAL on rank a: (bb,bc) (+)= (ab,ac)
 *   's' lone SEND on a to peer b of (ab,ac)
 *   'v' lone RECV on b from peer a into (bb,bc)
 * A line with k == 0 ends the list. */
typedef struct tline {
    char k;
    uint32_t t;
    uint32_t a, ab, ac;
    uint32_t b, bb, bc;
    uint32_t n;
    uint32_t ob, oc;
} tline_t;

#define X(t, a, ab, ac, b, bb, bc, n) { 'x', t, a, ab, ac, b, bb, bc, n, 0, 0 }
#define RR(t, a, ab, ac, b, bb, bc, n) { 'r', t, a, ab, ac, b, bb, bc, n, 0, 0 }
#define RF(t, a, ab, ac, b, bb, bc, ob, oc, n) \
    { 'R', t, a, ab, ac, b, bb, bc, n, ob, oc }
#define CP(t, r, sb, sc, db, dc, n) { 'c', t, r, sb, sc, 0, db, dc, n, 0, 0 }
#define RL(t, r, sb, sc, db, dc, n) { 'l', t, r, sb, sc, 0, db, dc, n, 0, 0 }
#define SND(t, a, ab, ac, b, n) { 's', t, a, ab, ac, b, 0, 0, n, 0, 0 }
#define RCV(t, a, b, bb, bc, n) { 'v', t, a, 0, 0, b, bb, bc, n, 0, 0 }
#define END { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 }

typedef struct tsched {
    const char *name;
    ccs_coll_t coll;
    uint32_t nranks, nchunks;
    int32_t root;           /* rooted collectives */
    uint32_t nsteps;
    const tline_t *lines;
    ccs_status_t want;      /* expected verify status */
    const char *msg[3];     /* substrings the message must contain */
} tsched_t;

static ccs_status_t build(const tsched_t *d, ccs_sched_t **out)
{
    ccs_sched_t *s = NULL;
    ccs_err_t err = { { 0 } };
    ccs_status_t st;
    uint32_t t;

    st = ccs_sched_create(d->coll, d->nranks, d->nchunks, "test", &s, &err);
    if (st != CCS_OK)
        goto fail;
    if (ccs_coll_rooted(d->coll))
        s->root = d->root;
    for (uint32_t i = 0; i < d->nsteps && st == CCS_OK; i++)
        st = ccs_sched_add_step(s, 0, &t, &err);
    for (const tline_t *l = d->lines; l->k != 0 && st == CCS_OK; l++) {
        ccs_op_t op = { .step = l->t, .nchunks = l->n };
        switch (l->k) {
        case 'x':
        case 'r':
            st = ccs_sched_xfer(s, l->t, l->a, l->ab, l->ac, l->b, l->bb,
                                l->bc, l->n, l->k == 'r', &err);
            break;
        case 'R':
            st = ccs_sched_xfer_reduce_from(s, l->t, l->a, l->ab, l->ac,
                                            l->b, l->bb, l->bc, l->ob, l->oc,
                                            l->n, &err);
            break;
        case 'c':
        case 'l':
            st = ccs_sched_local(s, l->t, l->a, l->bb, l->bc, l->ab, l->ac,
                                 l->n, l->k == 'l', &err);
            break;
        case 's':
            op.kind = CCS_OP_SEND;
            op.buf = (uint8_t)l->ab;
            op.chunk = l->ac;
            op.peer = (int32_t)l->b;
            st = ccs_sched_add_op(s, l->a, &op, &err);
            break;
        case 'v':
            op.kind = CCS_OP_RECV;
            op.buf = (uint8_t)l->bb;
            op.chunk = l->bc;
            op.peer = (int32_t)l->a;
            st = ccs_sched_add_op(s, l->b, &op, &err);
            break;
        default:
            st = CCS_ERR_INVALID;
        }
    }
    if (st == CCS_OK)
        st = ccs_sched_finalize(s, &err);
    if (st == CCS_OK) {
        *out = s;
        return CCS_OK;
    }
fail:
    fprintf(stderr, "build %s: %s\n", d->name, ccs_err_msg(&err, st));
    ccs_sched_destroy(s);
    return st;
}

/* Correct hand-written schedules, at least one per collective. */
static const tsched_t good[] = {
    { "allreduce 2 ranks: reduce-scatter then exchange", CCS_COLL_ALLREDUCE,
      2, 2, -1, 2, (const tline_t[]){
          RF(0, 0, I, 1, 1, O, 1, I, 1, 1), RF(0, 1, I, 0, 0, O, 0, I, 0, 1),
          X(1, 0, O, 0, 1, O, 0, 1), X(1, 1, O, 1, 0, O, 1, 1), END },
      CCS_OK, { NULL } },
    { "allreduce 3 ranks through scratch and reduce_local", CCS_COLL_ALLREDUCE,
      3, 1, -1, 4, (const tline_t[]){
          X(0, 1, I, 0, 0, S, 0, 1), X(0, 2, I, 0, 0, S, 1, 1),
          CP(0, 0, I, 0, O, 0, 1),
          RL(1, 0, S, 0, O, 0, 1),
          RL(2, 0, S, 1, O, 0, 1),
          X(3, 0, O, 0, 1, O, 0, 1), X(3, 0, O, 0, 2, O, 0, 1), END },
      CCS_OK, { NULL } },
    { "reducescatter 2 ranks", CCS_COLL_REDUCESCATTER, 2, 2, -1, 1,
      (const tline_t[]){
          RF(0, 0, I, 1, 1, O, 1, I, 1, 1), RF(0, 1, I, 0, 0, O, 0, I, 0, 1),
          END },
      CCS_OK, { NULL } },
    { "reducescatter 3 ranks x 2 chunks, scratch, copy, reduce_local",
      CCS_COLL_REDUCESCATTER, 3, 6, -1, 4, (const tline_t[]){
          X(0, 0, I, 2, 1, S, 0, 2), X(0, 0, I, 4, 2, S, 0, 2),
          X(0, 1, I, 0, 0, S, 2, 2), X(0, 1, I, 4, 2, S, 2, 2),
          X(0, 2, I, 0, 0, S, 4, 2), X(0, 2, I, 2, 1, S, 4, 2),
          CP(1, 0, I, 0, O, 0, 2), CP(1, 1, I, 2, O, 2, 2),
          CP(1, 2, I, 4, O, 4, 2),
          RL(2, 0, S, 2, O, 0, 2), RL(2, 1, S, 0, O, 2, 2),
          RL(2, 2, S, 0, O, 4, 2),
          RL(3, 0, S, 4, O, 0, 2), RL(3, 1, S, 4, O, 2, 2),
          RL(3, 2, S, 2, O, 4, 2), END },
      CCS_OK, { NULL } },
    { "allgather 3 ranks direct", CCS_COLL_ALLGATHER, 3, 3, -1, 1,
      (const tline_t[]){
          CP(0, 0, I, 0, O, 0, 1), CP(0, 1, I, 1, O, 1, 1),
          CP(0, 2, I, 2, O, 2, 1),
          X(0, 0, I, 0, 1, O, 0, 1), X(0, 0, I, 0, 2, O, 0, 1),
          X(0, 1, I, 1, 0, O, 1, 1), X(0, 1, I, 1, 2, O, 1, 1),
          X(0, 2, I, 2, 0, O, 2, 1), X(0, 2, I, 2, 1, O, 2, 1), END },
      CCS_OK, { NULL } },
    { "reduce 3 ranks to root 1 via scratch", CCS_COLL_REDUCE, 3, 2, 1, 2,
      (const tline_t[]){
          RF(0, 0, I, 0, 2, S, 0, I, 0, 2), RF(1, 2, S, 0, 1, O, 0, I, 0, 2),
          END },
      CCS_OK, { NULL } },
    { "broadcast 4 ranks from root 2, binomial", CCS_COLL_BROADCAST, 4, 2, 2,
      2, (const tline_t[]){
          CP(0, 2, I, 0, O, 0, 2), X(0, 2, I, 0, 3, O, 0, 2),
          X(1, 2, O, 0, 0, O, 0, 2), X(1, 3, O, 0, 1, O, 0, 2), END },
      CCS_OK, { NULL } },
    { "alltoall 3 ranks, 1 chunk per block", CCS_COLL_ALLTOALL, 3, 3, -1, 3,
      (const tline_t[]){
          CP(0, 0, I, 0, O, 0, 1), CP(0, 1, I, 1, O, 1, 1),
          CP(0, 2, I, 2, O, 2, 1),
          X(1, 0, I, 1, 1, O, 0, 1), X(1, 1, I, 2, 2, O, 1, 1),
          X(1, 2, I, 0, 0, O, 2, 1),
          X(2, 0, I, 2, 2, O, 0, 1), X(2, 1, I, 0, 0, O, 1, 1),
          X(2, 2, I, 1, 1, O, 2, 1), END },
      CCS_OK, { NULL } },
    { "alltoall 2 ranks, 2 chunks per block", CCS_COLL_ALLTOALL, 2, 4, -1, 1,
      (const tline_t[]){
          CP(0, 0, I, 0, O, 0, 2), CP(0, 1, I, 2, O, 2, 2),
          X(0, 0, I, 2, 1, O, 0, 2), X(0, 1, I, 0, 0, O, 2, 2), END },
      CCS_OK, { NULL } },
    { "two sends between one pair in a step match in op order",
      CCS_COLL_ALLGATHER, 2, 4, -1, 1, (const tline_t[]){
          CP(0, 0, I, 0, O, 0, 2), CP(0, 1, I, 2, O, 2, 2),
          X(0, 0, I, 1, 1, O, 1, 1), X(0, 0, I, 0, 1, O, 0, 1),
          X(0, 1, I, 3, 0, O, 3, 1), X(0, 1, I, 2, 0, O, 2, 1), END },
      CCS_OK, { NULL } },
};

/* One broken schedule per class of error. */
static const tsched_t bad[] = {
    { "unmatched send", CCS_COLL_ALLREDUCE, 2, 2, -1, 2, (const tline_t[]){
          RF(0, 0, I, 1, 1, O, 1, I, 1, 1), RF(0, 1, I, 0, 0, O, 0, I, 0, 1),
          X(1, 0, O, 0, 1, O, 0, 1), X(1, 1, O, 1, 0, O, 1, 1),
          SND(1, 0, I, 1, 1, 1), END },
      CCS_ERR_VERIFY, { "step 1, rank 0", "send of in[1] to rank 1",
                        "no matching receive" } },
    { "unmatched receive", CCS_COLL_ALLREDUCE, 2, 1, -1, 1, (const tline_t[]){
          RCV(0, 0, 1, S, 0, 1), END },
      CCS_ERR_VERIFY, { "step 0, rank 1", "recv from rank 0 into scratch[0]",
                        "no matching send" } },
    { "send/receive size mismatch", CCS_COLL_ALLREDUCE, 2, 2, -1, 1,
      (const tline_t[]){ SND(0, 0, I, 0, 1, 2), RCV(0, 0, 1, S, 0, 1), END },
      CCS_ERR_VERIFY, { "step 0, rank 0", "size mismatch", "2 chunks" } },
    { "contribution reduced twice", CCS_COLL_ALLREDUCE, 2, 2, -1, 2,
      (const tline_t[]){
          RF(0, 0, I, 1, 1, O, 1, I, 1, 1), RF(0, 1, I, 0, 0, O, 0, I, 0, 1),
          RR(1, 1, I, 0, 0, O, 0, 1), END },
      CCS_ERR_VERIFY, { "step 1, rank 0: recv_reduce from rank 1 into out[0]",
                        "contribution of rank 1 already present",
                        "reduced twice" } },
    { "reduce_local of a chunk with itself", CCS_COLL_ALLREDUCE, 2, 1, -1, 2,
      (const tline_t[]){ CP(0, 0, I, 0, O, 0, 1), RL(1, 0, O, 0, O, 0, 1),
                         END },
      CCS_ERR_VERIFY, { "step 1, rank 0", "reduced twice" } },
    { "read of IN outside its valid range", CCS_COLL_ALLGATHER, 2, 2, -1, 1,
      (const tline_t[]){ X(0, 0, I, 1, 1, O, 1, 1), END },
      CCS_ERR_VERIFY, { "step 0, rank 0: send of in[1] to rank 1",
                        "no input", "never written" } },
    { "read of scratch never written", CCS_COLL_ALLREDUCE, 2, 1, -1, 1,
      (const tline_t[]){ X(0, 0, S, 0, 1, O, 0, 1), END },
      CCS_ERR_VERIFY, { "step 0, rank 0", "reads scratch[0]",
                        "never written" } },
    { "reduce into a destination never written", CCS_COLL_ALLREDUCE, 2, 1,
      -1, 1, (const tline_t[]){ RR(0, 0, I, 0, 1, O, 0, 1), END },
      CCS_ERR_VERIFY, { "step 0, rank 1: recv_reduce from rank 0 into out[0]",
                        "reads out[0], which was never written" } },
    { "missing contribution at the end", CCS_COLL_ALLREDUCE, 3, 1, -1, 2,
      (const tline_t[]){
          RF(0, 1, I, 0, 0, O, 0, I, 0, 1),
          X(1, 0, O, 0, 1, O, 0, 1), X(1, 0, O, 0, 2, O, 0, 1), END },
      CCS_ERR_VERIFY, { "end: rank 0 out[0]",
                        "misses contributions of ranks 2",
                        "3 of 3 output chunks wrong" } },
    /* Wrong postcondition, one per collective. */
    { "allreduce: output never written", CCS_COLL_ALLREDUCE, 2, 2, -1, 1,
      (const tline_t[]){
          RF(0, 0, I, 1, 1, O, 1, I, 1, 1), RF(0, 1, I, 0, 0, O, 0, I, 0, 1),
          END },
      CCS_ERR_VERIFY, { "end: rank 0 out[1] was never written",
                        "allreduce" } },
    { "reducescatter: block lacks a rank", CCS_COLL_REDUCESCATTER, 2, 2, -1, 1,
      (const tline_t[]){ CP(0, 0, I, 0, O, 0, 1), CP(0, 1, I, 1, O, 1, 1),
                         END },
      CCS_ERR_VERIFY, { "end: rank 0 out[0] (reducescatter)",
                        "misses contributions of ranks 1" } },
    { "allgather: chunk never gathered", CCS_COLL_ALLGATHER, 2, 2, -1, 1,
      (const tline_t[]){ CP(0, 0, I, 0, O, 0, 1), CP(0, 1, I, 1, O, 1, 1),
                         X(0, 0, I, 0, 1, O, 0, 1), END },
      CCS_ERR_VERIFY, { "end: rank 0 out[1] was never written" } },
    { "allgather: chunk in the wrong place", CCS_COLL_ALLGATHER, 2, 2, -1, 1,
      (const tline_t[]){ CP(0, 0, I, 0, O, 1, 1), CP(0, 1, I, 1, O, 0, 1),
                         X(0, 0, I, 0, 1, O, 1, 1), X(0, 1, I, 1, 0, O, 0, 1),
                         END },
      CCS_ERR_VERIFY, { "end: rank 0 out[0] holds chunk 1, not chunk 0" } },
    { "reduce: root lacks a rank", CCS_COLL_REDUCE, 2, 1, 0, 1,
      (const tline_t[]){ CP(0, 0, I, 0, O, 0, 1), END },
      CCS_ERR_VERIFY, { "end: rank 0 out[0] (reduce)",
                        "misses contributions of ranks 1" } },
    { "broadcast: chunks swapped", CCS_COLL_BROADCAST, 2, 2, 0, 1,
      (const tline_t[]){ CP(0, 0, I, 0, O, 0, 2), X(0, 0, I, 1, 1, O, 0, 1),
                         X(0, 0, I, 0, 1, O, 1, 1), END },
      CCS_ERR_VERIFY, { "end: rank 1 out[0] holds chunk 1, not chunk 0",
                        "2 of 4 output chunks wrong" } },
    { "broadcast: a rank never receives", CCS_COLL_BROADCAST, 3, 1, 1, 1,
      (const tline_t[]){ CP(0, 1, I, 0, O, 0, 1), X(0, 1, I, 0, 2, O, 0, 1),
                         END },
      CCS_ERR_VERIFY, { "end: rank 0 out[0] was never written" } },
    { "alltoall: own block where the peer's belongs", CCS_COLL_ALLTOALL, 2, 2,
      -1, 1, (const tline_t[]){
          CP(0, 0, I, 0, O, 0, 1), CP(0, 1, I, 1, O, 1, 1),
          X(0, 1, I, 0, 0, O, 1, 1), CP(0, 1, I, 1, O, 0, 1), END },
      CCS_ERR_VERIFY, { "end: rank 1 out[0] (alltoall) misses contributions "
                        "of ranks 0; holds unexpected contributions of "
                        "ranks 1", NULL } },
    /* Structural errors come from ccs_sched_validate. */
    { "rank sends to itself", CCS_COLL_ALLREDUCE, 2, 1, -1, 1,
      (const tline_t[]){ SND(0, 1, I, 0, 1, 1), END },
      CCS_ERR_FORMAT, { "rank 1", "step 0", "send of in[0] to itself" } },
    { "peer out of range", CCS_COLL_ALLREDUCE, 2, 1, -1, 1,
      (const tline_t[]){ SND(0, 0, I, 0, 7, 1), END },
      CCS_ERR_FORMAT, { "rank 0", "step 0",
                        "send of in[0] to peer 7 out of range 0..1" } },
    { "rank receives from itself", CCS_COLL_ALLREDUCE, 3, 2, -1, 2,
      (const tline_t[]){ RCV(1, 2, 2, O, 1, 1), END },
      CCS_ERR_FORMAT, { "rank 2", "step 1", "recv into out[1] from itself" } },
    { "receive from a peer out of range", CCS_COLL_ALLREDUCE, 2, 4, -1, 1,
      (const tline_t[]){ RCV(0, 5, 0, O, 2, 2), END },
      CCS_ERR_FORMAT, { "rank 0", "step 0",
                        "recv into out[2..3] from peer 5 out of range" } },
    { "write to OUT outside the reducescatter block", CCS_COLL_REDUCESCATTER,
      2, 2, -1, 1, (const tline_t[]){ X(0, 0, I, 1, 1, O, 0, 1), END },
      CCS_ERR_VERIFY, { "step 0, rank 1: recv from rank 0 into out[0]",
                        "outside its block out[1..1]" } },
    { "write to OUT of a non-root in reduce", CCS_COLL_REDUCE, 2, 1, 0, 1,
      (const tline_t[]){ X(0, 0, I, 0, 1, O, 0, 1), END },
      CCS_ERR_VERIFY, { "step 0, rank 1", "outside its valid range",
                        "only the root, rank 0" } },
    { "read and write of one chunk in a step", CCS_COLL_ALLGATHER, 2, 2, -1, 2,
      (const tline_t[]){ CP(0, 0, I, 0, O, 0, 1),
                         X(1, 0, O, 0, 1, O, 0, 1), X(1, 1, I, 1, 0, O, 0, 1),
                         END },
      CCS_ERR_VERIFY, { "step 1, rank 0: recv from rank 1 into out[0]",
                        "read and written in the same step" } },
    { "copy onto itself", CCS_COLL_ALLREDUCE, 2, 1, -1, 2,
      (const tline_t[]){ CP(0, 0, I, 0, O, 0, 1), CP(1, 0, O, 0, O, 0, 1),
                         END },
      CCS_ERR_VERIFY, { "step 1, rank 0: copy of out[0] into out[0]",
                        "read and written" } },
    { "two writes to one chunk in a step", CCS_COLL_ALLGATHER, 2, 2, -1, 1,
      (const tline_t[]){ CP(0, 0, I, 0, O, 0, 1), X(0, 1, I, 1, 0, O, 0, 1),
                         END },
      CCS_ERR_VERIFY, { "step 0, rank 0: recv from rank 1 into out[0]",
                        "written twice in this step" } },
    { "reducing different origin chunks", CCS_COLL_ALLREDUCE, 2, 2, -1, 2,
      (const tline_t[]){ CP(0, 0, I, 0, O, 0, 1), RR(1, 1, I, 1, 0, O, 0, 1),
                         END },
      CCS_ERR_VERIFY, { "step 1, rank 0", "combines chunk 0 with chunk 1" } },
    { "reduction inside allgather", CCS_COLL_ALLGATHER, 2, 2, -1, 2,
      (const tline_t[]){ CP(0, 0, I, 0, O, 0, 1), RR(1, 1, I, 1, 0, O, 0, 1),
                         END },
      CCS_ERR_VERIFY, { "step 1, rank 0: recv_reduce",
                        "reduction in allgather" } },
    { "reduction inside broadcast", CCS_COLL_BROADCAST, 2, 1, 0, 2,
      (const tline_t[]){ CP(0, 0, I, 0, O, 0, 1), RL(1, 0, I, 0, O, 0, 1),
                         END },
      CCS_ERR_VERIFY, { "step 1, rank 0: reduce_local of in[0] into out[0]",
                        "reduction in broadcast" } },
    { "reduction inside alltoall", CCS_COLL_ALLTOALL, 2, 2, -1, 1,
      (const tline_t[]){ RF(0, 0, I, 1, 1, O, 0, I, 0, 1), END },
      CCS_ERR_VERIFY, { "reduction in alltoall" } },
};

/* Chunk segments: one chunk stands for a run of chunks every op treats
 * alike, so these check that runs are cut where ops partly overlap, that
 * data moved to another position carries its cuts along, and that a
 * failure inside a large run is named by its real first chunk and counted
 * chunk by chunk. */
static const tsched_t segments[] = {
    { "ranges that partly overlap across steps", CCS_COLL_ALLGATHER, 2, 8,
      -1, 2, (const tline_t[]){
          CP(0, 0, I, 0, O, 0, 4), CP(0, 1, I, 4, O, 4, 4),
          X(0, 0, I, 0, 1, O, 0, 3), X(0, 1, I, 4, 0, O, 4, 4),
          X(1, 0, I, 1, 1, O, 1, 3), END },
      CCS_OK, { NULL } },
    { "a partly overlapping range lands one chunk off", CCS_COLL_ALLGATHER,
      2, 8, -1, 2, (const tline_t[]){
          CP(0, 0, I, 0, O, 0, 4), CP(0, 1, I, 4, O, 4, 4),
          X(0, 0, I, 0, 1, O, 0, 3), X(0, 1, I, 4, 0, O, 4, 4),
          X(1, 0, I, 1, 1, O, 2, 3), END },
      CCS_ERR_VERIFY, { "end: rank 1 out[2] holds chunk 1, not chunk 2 "
                        "(allgather) (3 of 16 output chunks wrong)" } },
    { "a run in the middle of a large range misses a rank",
      CCS_COLL_ALLREDUCE, 2, 1000, -1, 1, (const tline_t[]){
          RF(0, 1, I, 0, 0, O, 0, I, 0, 400),
          RF(0, 1, I, 600, 0, O, 600, I, 600, 400),
          CP(0, 0, I, 400, O, 400, 200),
          RF(0, 0, I, 0, 1, O, 0, I, 0, 1000), END },
      CCS_ERR_VERIFY, { "end: rank 0 out[400] (allreduce) misses "
                        "contributions of ranks 1 (200 of 2000 output "
                        "chunks wrong)" } },
    { "a send reads past what was written, inside one op",
      CCS_COLL_ALLREDUCE, 2, 10, -1, 2, (const tline_t[]){
          CP(0, 0, I, 0, O, 0, 6), X(1, 0, O, 3, 1, O, 3, 5), END },
      CCS_ERR_VERIFY, { "step 1, rank 0: send of out[6] to rank 1: reads "
                        "out[6], which was never written" } },
    { "a hazard on one chunk of two multi-chunk ops", CCS_COLL_ALLGATHER, 2,
      4, -1, 1, (const tline_t[]){
          CP(0, 0, I, 0, O, 0, 2), X(0, 1, I, 2, 0, O, 1, 2), END },
      CCS_ERR_VERIFY, { "step 0, rank 0", "out[1] is written twice in this "
                        "step" } },
    { "a contribution reduced twice in one run of a range",
      CCS_COLL_ALLREDUCE, 2, 6, -1, 2, (const tline_t[]){
          RF(0, 1, I, 0, 0, O, 0, I, 0, 6), RF(0, 0, I, 0, 1, O, 0, I, 0, 6),
          RR(1, 1, I, 2, 0, O, 2, 2), END },
      CCS_ERR_VERIFY, { "step 1, rank 0: recv_reduce from rank 1 into "
                        "out[2]: contribution of rank 1 already present" } },
    { "staging through scratch at another offset", CCS_COLL_ALLGATHER, 2, 4,
      -1, 2, (const tline_t[]){
          CP(0, 0, I, 0, O, 0, 2), X(0, 0, I, 0, 1, S, 1, 2),
          CP(0, 1, I, 2, O, 2, 2), X(0, 1, I, 2, 0, O, 2, 2),
          CP(1, 1, S, 1, O, 0, 2), END },
      CCS_OK, { NULL } },
    { "staging through scratch, halves swapped on the way out",
      CCS_COLL_ALLGATHER, 2, 4, -1, 2, (const tline_t[]){
          CP(0, 0, I, 0, O, 0, 2), X(0, 0, I, 0, 1, S, 1, 2),
          CP(0, 1, I, 2, O, 2, 2), X(0, 1, I, 2, 0, O, 2, 2),
          CP(1, 1, S, 2, O, 0, 1), CP(1, 1, S, 1, O, 1, 1), END },
      CCS_ERR_VERIFY, { "end: rank 1 out[0] holds chunk 1, not chunk 0 "
                        "(allgather) (2 of 8 output chunks wrong)" } },
    { "one scratch chunk reused by two chunks in turn", CCS_COLL_ALLREDUCE,
      2, 2, -1, 5, (const tline_t[]){
          X(0, 0, I, 0, 1, S, 0, 1), CP(0, 1, I, 0, O, 0, 1),
          CP(0, 1, I, 1, O, 1, 1), RL(1, 1, S, 0, O, 0, 1),
          X(2, 0, I, 1, 1, S, 0, 1), RL(3, 1, S, 0, O, 1, 1),
          X(4, 1, O, 0, 0, O, 0, 2), END },
      CCS_OK, { NULL } },
    { "the reused scratch chunk brings the old chunk again",
      CCS_COLL_ALLREDUCE, 2, 2, -1, 5, (const tline_t[]){
          X(0, 0, I, 0, 1, S, 0, 1), CP(0, 1, I, 0, O, 0, 1),
          CP(0, 1, I, 1, O, 1, 1), RL(1, 1, S, 0, O, 0, 1),
          X(2, 0, I, 0, 1, S, 0, 1), RL(3, 1, S, 0, O, 1, 1),
          X(4, 1, O, 0, 0, O, 0, 2), END },
      CCS_ERR_VERIFY, { "step 3, rank 1: reduce_local of scratch[0] into "
                        "out[1]: combines chunk 1 with chunk 0" } },
};

static void run_table(const tsched_t *tab, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        ccs_sched_t *s = NULL;
        ccs_err_t err = { { 0 } };
        verify_report_t rep;
        ccs_status_t st;

        if (build(&tab[i], &s) != CCS_OK) {
            FAIL_AT("%s: could not build", tab[i].name);
            continue;
        }
        memset(&rep, 0xa5, sizeof(rep));
        st = verify_sched(s, &rep, &err);
        if (getenv("TEST_VERBOSE") != NULL)
            printf("%-50s -> %s\n", tab[i].name, ccs_err_msg(&err, st));
        if (st != tab[i].want)
            FAIL_AT("%s: status %s, want %s: %s", tab[i].name,
                    ccs_status_name(st), ccs_status_name(tab[i].want),
                    ccs_err_msg(&err, st));
        for (int k = 0; k < 3 && tab[i].msg[k] != NULL; k++) {
            if (strstr(err.msg, tab[i].msg[k]) == NULL)
                FAIL_AT("%s: message '%s' lacks '%s'", tab[i].name, err.msg,
                        tab[i].msg[k]);
        }
        if (st == CCS_OK) {
            CHECK_EQ_INT(rep.nsteps, s->nsteps);
            CHECK_EQ_INT(rep.nops, ccs_sched_total_ops(s));
        } else {
            /* Outputs are written only on success. */
            CHECK_EQ_INT(rep.nsteps, 0xa5a5a5a5u);
        }
        ccs_sched_destroy(s);
    }
}

TEST(correct_schedules_pass)
{
    run_table(good, sizeof(good) / sizeof(good[0]));
}

TEST(broken_schedules_are_caught)
{
    run_table(bad, sizeof(bad) / sizeof(bad[0]));
}

TEST(segment_boundaries)
{
    run_table(segments, sizeof(segments) / sizeof(segments[0]));
}

TEST(ring_allreduce_passes_and_reports_one_port)
{
    static const uint32_t sizes[] = { 2, 3, 4, 7, 64, 65, 130 };
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        uint32_t n = sizes[i];
        ccs_sched_t *s = NULL;
        ccs_err_t err = { { 0 } };
        verify_report_t rep;

        CHECK_STATUS(fixture_ring_allreduce(n, &s, &err), CCS_OK);
        if (s == NULL)
            continue;
        CHECK_STATUS(verify_sched(s, &rep, &err), CCS_OK);
        CHECK_MSG(err.msg[0] == '\0', "n=%u: %s", n, err.msg);
        CHECK(rep.one_port);
        CHECK_EQ_INT(rep.nsteps, 2 * (n - 1));
        CHECK_EQ_INT(rep.nops, 4ull * (n - 1) * n);
        CHECK_EQ_INT(rep.chunk_transfers, 2ull * (n - 1) * n);
        CHECK_EQ_INT(rep.max_sends_per_step, 1);
        CHECK_EQ_INT(rep.max_recvs_per_step, 1);
        ccs_sched_destroy(s);
    }
}

TEST(direct_allgather_is_not_one_port)
{
    ccs_sched_t *s = NULL;
    ccs_err_t err = { { 0 } };
    verify_report_t rep;

    /* 200 ranks: one step of 39800 sends, the counting-sort path. */
    CHECK_STATUS(fixture_direct_allgather(200, &s, &err), CCS_OK);
    CHECK_STATUS(verify_sched(s, &rep, &err), CCS_OK);
    CHECK(!rep.one_port);
    CHECK_EQ_INT(rep.max_sends_per_step, 199);
    CHECK_EQ_INT(rep.max_recvs_per_step, 199);
    CHECK_EQ_INT(rep.chunk_transfers, 200 * 199);
    ccs_sched_destroy(s);
    /* 3 ranks: the small-step (qsort) path; NULL report allowed. */
    CHECK_STATUS(fixture_direct_allgather(3, &s, &err), CCS_OK);
    CHECK_STATUS(verify_sched(s, NULL, &err), CCS_OK);
    ccs_sched_destroy(s);
}

/* Every single-op corruption of a correct ring must be rejected: the
 * verifier is not merely accepting what builders produce. */
TEST(every_ring_mutation_is_caught)
{
    const uint32_t n = 4;
    ccs_sched_t *ring = NULL;
    ccs_err_t err = { { 0 } };
    uint32_t tried = 0, caught = 0;

    CHECK_STATUS(fixture_ring_allreduce(n, &ring, &err), CCS_OK);
    if (ring == NULL)
        return;
    for (uint32_t r = 0; r < n; r++) {
        for (uint32_t i = 0; i < ring->rank_nops[r]; i++) {
            for (int m = 0; m < 4; m++) {
                ccs_sched_t *s = NULL;
                ccs_op_t *op;
                ccs_status_t st;

                CHECK_STATUS(ccs_sched_clone(ring, &s, &err), CCS_OK);
                if (s == NULL)
                    return;
                op = &s->rank_ops[r][i];
                switch (m) {
                case 0: /* another chunk */
                    op->chunk = (op->chunk + 1) % n;
                    break;
                case 1: /* reduce <-> overwrite */
                    if (op->kind == CCS_OP_RECV_REDUCE) {
                        op->kind = CCS_OP_RECV;
                        op->src_buf = 0;
                        op->src_chunk = 0;
                    } else if (op->kind == CCS_OP_RECV) {
                        op->kind = CCS_OP_RECV_REDUCE;
                        op->src_buf = op->buf;
                        op->src_chunk = op->chunk;
                    } else {
                        op->peer = (op->peer + 1) % (int32_t)n;
                        if ((uint32_t)op->peer == r)
                            op->peer = (op->peer + 1) % (int32_t)n;
                    }
                    break;
                case 2: /* another peer */
                    op->peer = (op->peer + 2) % (int32_t)n;
                    if ((uint32_t)op->peer == r)
                        op->peer = (op->peer + 1) % (int32_t)n;
                    break;
                default: /* drop the op */
                    memmove(op, op + 1, (s->rank_nops[r] - i - 1) *
                            sizeof(*op));
                    s->rank_nops[r]--;
                    break;
                }
                st = verify_sched(s, NULL, &err);
                tried++;
                if (st != CCS_OK)
                    caught++;
                else
                    FAIL_AT("mutation %d of rank %u op %u passed", m, r, i);
                ccs_sched_destroy(s);
            }
        }
    }
    CHECK_EQ_INT(caught, tried);
    CHECK(tried > 100);
    ccs_sched_destroy(ring);
}

TEST(null_and_empty)
{
    ccs_err_t err = { { 0 } };
    ccs_sched_t *s = NULL;

    CHECK_STATUS(verify_sched(NULL, NULL, &err), CCS_ERR_INVALID);
    /* No steps at all: the postcondition fails on the first chunk. */
    CHECK_STATUS(ccs_sched_create(CCS_COLL_ALLREDUCE, 2, 1, "x", &s, &err),
                 CCS_OK);
    CHECK_STATUS(verify_sched(s, NULL, &err), CCS_ERR_VERIFY);
    CHECK_STR_CONTAINS(err.msg, "end: rank 0 out[0] was never written");
    ccs_sched_destroy(s);
    /* One rank: a local copy is the whole allreduce. */
    CHECK_STATUS(ccs_sched_create(CCS_COLL_ALLREDUCE, 1, 3, "x", &s, &err),
                 CCS_OK);
    uint32_t t;
    CHECK_STATUS(ccs_sched_add_step(s, 0, &t, &err), CCS_OK);
    CHECK_STATUS(ccs_sched_local(s, t, 0, CCS_BUF_OUT, 0, CCS_BUF_IN, 0, 3,
                                 false, &err), CCS_OK);
    CHECK_STATUS(verify_sched(s, NULL, &err), CCS_OK);
    ccs_sched_destroy(s);
}

/* Rank lists in messages are cut short for large rank counts. */
TEST(long_rank_lists_are_truncated)
{
    ccs_sched_t *s = NULL;
    ccs_err_t err = { { 0 } };
    uint32_t t;

    CHECK_STATUS(ccs_sched_create(CCS_COLL_REDUCE, 100, 1, "x", &s, &err),
                 CCS_OK);
    CHECK_STATUS(ccs_sched_add_step(s, 0, &t, &err), CCS_OK);
    CHECK_STATUS(ccs_sched_local(s, t, 0, CCS_BUF_OUT, 0, CCS_BUF_IN, 0, 1,
                                 false, &err), CCS_OK);
    CHECK_STATUS(verify_sched(s, NULL, &err), CCS_ERR_VERIFY);
    CHECK_STR_CONTAINS(err.msg, "misses contributions of ranks 1, 2, 3, 4, "
                                "5, 6, 7, 8, ... (99 in all)");
    ccs_sched_destroy(s);
}

/* A plan of 224 ops over 2^24 chunks: its cost follows the ops, and a
 * failure deep inside one op's range is named by its exact chunk. */
TEST(many_chunk_plan)
{
    const uint32_t n = 8, w = CCS_MAX_CHUNKS / 8;
    ccs_sched_t *ring = NULL, *cut = NULL;
    ccs_err_t err = { { 0 } };
    verify_report_t rep;

    CHECK_STATUS(fixture_ring_allreduce_wide(n, w, &ring, &err), CCS_OK);
    if (ring == NULL)
        return;
    CHECK_STATUS(verify_sched(ring, &rep, &err), CCS_OK);
    CHECK_EQ_INT(rep.nops, 4ull * (n - 1) * n);
    CHECK_EQ_INT(rep.chunk_transfers, 2ull * (n - 1) * n * w);
    CHECK(rep.one_port);

    /* Rank 2 -> 3 in step 0 moves block 2 (chunks 2w..3w): start it one
     * chunk later on both sides, so rank 3's out[2w] stays unwritten and
     * its step-1 send of the block reads it. */
    CHECK_STATUS(ccs_sched_clone(ring, &cut, &err), CCS_OK);
    if (cut == NULL) {
        ccs_sched_destroy(ring);
        return;
    }
    for (uint32_t r = 2; r <= 3; r++) {
        ccs_op_t *op = &cut->rank_ops[r][0];
        if (op->chunk != 2 * w)
            op++;
        CHECK_EQ_INT(op->step, 0);
        CHECK_EQ_INT(op->chunk, 2 * w);
        op->chunk++;
        op->nchunks--;
        if (op->kind == CCS_OP_RECV_REDUCE)
            op->src_chunk++;
    }
    CHECK_STATUS(verify_sched(cut, NULL, &err), CCS_ERR_VERIFY);
    CHECK_STR_CONTAINS(err.msg, "step 1, rank 3: send of out[4194304] to "
                                "rank 4: reads out[4194304], which was "
                                "never written");
    ccs_sched_destroy(cut);
    ccs_sched_destroy(ring);
}

/* Tiny files that declare a huge rank x chunk table and fill almost none
 * of it.  The final check used to visit (and format a message for) every
 * cell: 5 s for 1 rank x 2^24 chunks, hours for 4096 ranks.  Now it costs
 * what the ops wrote; the message and the count are the same.  No clock
 * here: a return to the cell-by-cell walk would not finish, and the
 * per-program limit of scripts/run-tests.sh turns that into a failure. */
TEST(cost_is_bounded_by_what_is_written)
{
    static const struct {
        ccs_coll_t coll;
        uint32_t nranks;
        bool one_copy;      /* rank 0 copies IN[0] -> OUT[0] */
        const char *want;
    } cases[] = {
        { CCS_COLL_ALLREDUCE, 1, false,
          "end: rank 0 out[0] was never written (allreduce needs it) "
          "(16777216 of 16777216 output chunks wrong)" },
        { CCS_COLL_ALLREDUCE, 4096, false,
          "(68719476736 of 68719476736 output chunks wrong)" },
        { CCS_COLL_ALLREDUCE, 64, true,
          "end: rank 0 out[0] (allreduce) misses contributions of ranks 1, "
          "2, 3" },
        { CCS_COLL_ALLREDUCE, 1, true,
          "end: rank 0 out[1] was never written (allreduce needs it) "
          "(16777215 of 16777216 output chunks wrong)" },
        { CCS_COLL_REDUCESCATTER, 4096, false,
          "end: rank 0 out[0] was never written (reducescatter needs it) "
          "(16777216 of 16777216 output chunks wrong)" },
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        ccs_sched_t *s = NULL;
        ccs_err_t err = { { 0 } };
        uint32_t t;

        CHECK_STATUS(ccs_sched_create(cases[i].coll, cases[i].nranks,
                                      CCS_MAX_CHUNKS, "x", &s, &err), CCS_OK);
        if (s == NULL)
            continue;
        if (cases[i].one_copy) {
            CHECK_STATUS(ccs_sched_add_step(s, 0, &t, &err), CCS_OK);
            CHECK_STATUS(ccs_sched_local(s, t, 0, CCS_BUF_OUT, 0, CCS_BUF_IN,
                                         0, 1, false, &err), CCS_OK);
        }
        CHECK_STATUS(verify_sched(s, NULL, &err), CCS_ERR_VERIFY);
        CHECK_STR_CONTAINS(err.msg, cases[i].want);
        ccs_sched_destroy(s);
    }
}

int main(void)
{
    RUN(correct_schedules_pass);
    RUN(broken_schedules_are_caught);
    RUN(segment_boundaries);
    RUN(many_chunk_plan);
    RUN(ring_allreduce_passes_and_reports_one_port);
    RUN(direct_allgather_is_not_one_port);
    RUN(every_ring_mutation_is_caught);
    RUN(null_and_empty);
    RUN(long_rank_lists_are_truncated);
    RUN(cost_is_bounded_by_what_is_written);
    return TEST_SUMMARY();
}
