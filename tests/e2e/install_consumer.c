/*
 * install_consumer.c - a program outside the tree, built by
 * tests/e2e/install_pc.sh against an installed libccs through pkg-config
 * only (`#include <ccs.h>`, `pkg-config --cflags --libs ccs`).
 *
 *   install_consumer PLAN.ccs
 *
 * Loads the plan from the file and, separately, from its bytes in memory,
 * then replays an allreduce on the threads transport (one thread per rank
 * of the plan) for a table of counts, datatypes, ops and placements; every
 * element is compared with the sum / max computed here.  Prints one line
 * per case and exits 0 only when every element of every case is right.
 */
#include <ccs.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_R 16

typedef struct tcase {
    size_t count;
    ccs_dtype_t dtype;        /* CCS_FLOAT32 or CCS_INT32 */
    ccs_redop_t op;           /* CCS_SUM or CCS_MAX */
    int inplace;
    int from_mem;             /* use the plan loaded from memory */
} tcase_t;

static const tcase_t cases[] = {
    { 1, CCS_FLOAT32, CCS_SUM, 0, 0 },
    { 7, CCS_INT32, CCS_MAX, 1, 1 },
    { 1000003, CCS_FLOAT32, CCS_SUM, 1, 0 },
    { 1000003, CCS_INT32, CCS_MAX, 0, 1 },
};

typedef struct job {
    const ccs_plan_t *plan;
    ccs_comm_t *comm;
    const tcase_t *tc;
    int rank, R;
    ccs_status_t st;
    long wrong;
} job_t;

/* Input of rank r at element i: small integers, exact in float. */
static int val(int r, size_t i) { return (int)((r * 3 + i * 5) % 7); }

static void *rank_main(void *arg)
{
    job_t *j = arg;
    size_t n = j->tc->count;
    int32_t *in = malloc(n * 4), *out = j->tc->inplace ? in : malloc(n * 4);

    j->st = CCS_ERR_NOMEM;
    if (in == NULL || out == NULL)
        goto out;
    for (size_t i = 0; i < n; i++) {
        if (j->tc->dtype == CCS_FLOAT32)
            ((float *)in)[i] = (float)val(j->rank, i);
        else
            in[i] = val(j->rank, i);
    }
    j->st = ccs_allreduce(j->plan, j->comm, in, out, n, j->tc->dtype,
                          j->tc->op, NULL);
    if (j->st != CCS_OK)
        goto out;
    for (size_t i = 0; i < n; i++) {
        long want = 0, got;
        for (int q = 0; q < j->R; q++) {
            long v = val(q, i);
            want = j->tc->op == CCS_SUM ? want + v : (v > want ? v : want);
        }
        got = j->tc->dtype == CCS_FLOAT32 ? (long)((float *)out)[i] : out[i];
        j->wrong += got != want;
    }
out:
    if (out != in)
        free(out);
    free(in);
    return NULL;
}

static long read_file(const char *path, void **buf)
{
    FILE *f = fopen(path, "rb");
    long len = -1;

    *buf = NULL;
    if (f == NULL)
        return -1;
    if (fseek(f, 0, SEEK_END) == 0 && (len = ftell(f)) > 0 &&
        fseek(f, 0, SEEK_SET) == 0 && (*buf = malloc((size_t)len)) != NULL &&
        fread(*buf, 1, (size_t)len, f) != (size_t)len)
        len = -1;
    fclose(f);
    return len;
}

int main(int argc, char **argv)
{
    ccs_plan_t *pfile = NULL, *pmem = NULL;
    ccs_comm_t *comms[MAX_R];
    job_t jobs[MAX_R];
    pthread_t th[MAX_R];
    char msg[256];
    void *bytes = NULL;
    long len;
    int R, bad = 0;
    ccs_status_t st;

    if (argc != 2) {
        fprintf(stderr, "usage: install_consumer PLAN.ccs\n");
        return 2;
    }
    st = ccs_plan_load_file_msg(argv[1], &pfile, msg, sizeof(msg));
    if (st != CCS_OK) {
        fprintf(stderr, "load %s: %s: %s\n", argv[1], ccs_strerror(st), msg);
        return 1;
    }
    len = read_file(argv[1], &bytes);
    st = len > 0 ? ccs_plan_load_mem(bytes, (size_t)len, &pmem)
                 : CCS_ERR_IO;
    free(bytes);
    R = ccs_plan_nranks(pfile);
    if (st != CCS_OK || R < 2 || R > MAX_R ||
        ccs_comm_init_threads(R, comms) != CCS_OK) {
        fprintf(stderr, "setup failed: %s\n", ccs_strerror(st));
        ccs_plan_destroy(pfile);
        ccs_plan_destroy(pmem);
        return 1;
    }
    printf("libccs %d (header %d): %d ranks, %s\n", ccs_version(),
           CCS_VERSION_CODE, R, ccs_strerror(CCS_ERR_MISMATCH));
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        long wrong = 0;
        for (int r = 0; r < R; r++) {
            memset(&jobs[r], 0, sizeof(jobs[r]));
            jobs[r].plan = cases[c].from_mem ? pmem : pfile;
            jobs[r].comm = comms[r];
            jobs[r].tc = &cases[c];
            jobs[r].rank = r;
            jobs[r].R = R;
            pthread_create(&th[r], NULL, rank_main, &jobs[r]);
        }
        for (int r = 0; r < R; r++)
            pthread_join(th[r], NULL);
        for (int r = 0; r < R; r++) {
            if (jobs[r].st != CCS_OK) {
                fprintf(stderr, "rank %d: %s\n", r,
                        ccs_comm_last_error(comms[r]));
                bad = 1;
            }
            wrong += jobs[r].wrong;
        }
        printf("count %zu %s %s %s plan from %s: %ld wrong\n",
               cases[c].count, ccs_dtype_str(cases[c].dtype),
               ccs_redop_str(cases[c].op),
               cases[c].inplace ? "in-place" : "out-of-place",
               cases[c].from_mem ? "memory" : "file", wrong);
        bad |= wrong != 0;
        if (bad)
            break;   /* a failed run leaves the world unusable */
    }
    for (int r = 0; r < R; r++)
        ccs_comm_destroy(comms[r]);
    ccs_plan_destroy(pfile);
    ccs_plan_destroy(pmem);
    return bad;
}
