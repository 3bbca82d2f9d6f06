/*
 * sched_rules.c - the IR's rules that every consumer of a schedule applies
 * the same way (sched.h): the words of its messages, pairing each receive
 * with its send, and the hazards within one step.  The plan loader, the
 * verifier, the simulator and the MultiTree reader call these, so a file
 * is accepted or refused for the same reason everywhere.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched.h"

/* ---- The IR's rules: messages ---- */

void ccs_buf_range_str(char *buf, size_t len, unsigned b, uint32_t chunk,
                       uint32_t n)
{
    if (n <= 1)
        snprintf(buf, len, "%s[%u]", ccs_buf_str((ccs_buf_t)b), chunk);
    else
        snprintf(buf, len, "%s[%u..%" PRIu64 "]", ccs_buf_str((ccs_buf_t)b),
                 chunk, (uint64_t)chunk + n - 1);
}

void ccs_op_desc(char *buf, size_t len, const ccs_op_t *op, uint32_t i)
{
    char dst[48], src[48];
    const char *kind = ccs_op_kind_str((ccs_op_kind_t)op->kind);

    ccs_buf_range_str(dst, sizeof(dst), op->buf, op->chunk + i, 1);
    ccs_buf_range_str(src, sizeof(src), op->src_buf, op->src_chunk + i, 1);
    switch (op->kind) {
    case CCS_OP_SEND:
        snprintf(buf, len, "send of %s to rank %d", dst, op->peer);
        break;
    case CCS_OP_RECV:
        snprintf(buf, len, "recv from rank %d into %s", op->peer, dst);
        break;
    case CCS_OP_RECV_REDUCE:
        if (op->src_buf == op->buf && op->src_chunk == op->chunk)
            snprintf(buf, len, "recv_reduce from rank %d into %s", op->peer,
                     dst);
        else
            snprintf(buf, len, "recv_reduce from rank %d into %s (with %s)",
                     op->peer, dst, src);
        break;
    default:
        snprintf(buf, len, "%s of %s into %s", kind, src, dst);
        break;
    }
}

/* ---- The IR's rules: pairing ---- */

static bool kind_is_recv(unsigned kind)
{
    return kind == CCS_OP_RECV || kind == CCS_OP_RECV_REDUCE;
}

/* One transfer endpoint: the pairing key (step, dst, src) and its op. */
typedef struct xend {
    uint32_t step, dst, src, flat;
} xend_t;

/* The reporting order: (step, dst, src). */
static int xend_step_cmp(const xend_t *a, const xend_t *b)
{
    if (a->step != b->step)
        return a->step < b->step ? -1 : 1;
    if (a->dst != b->dst)
        return a->dst < b->dst ? -1 : 1;
    if (a->src != b->src)
        return a->src < b->src ? -1 : 1;
    return 0;
}

static const ccs_op_t *flat_op(const ccs_sched_t *s, const uint32_t *base,
                               uint32_t rank, uint32_t flat)
{
    return &s->rank_ops[rank][flat - base[rank]];
}

void ccs_pairing_free(ccs_pairing_t *p)
{
    if (p == NULL)
        return;
    free(p->base);
    free(p->mate);
    p->base = NULL;
    p->mate = NULL;
}

/* The rank r >= from whose ops hold flat index f (base[from] <= f <
 * base[nranks]): a galloping search, so that walking increasing indices
 * costs little more than the ranks passed. */
static uint32_t rank_of_flat(const uint32_t *base, uint32_t nranks,
                             uint32_t from, uint32_t f)
{
    uint32_t lo = from, hi = from + 1, step = 1;

    while (hi < nranks && base[hi] <= f) {
        lo = hi;
        hi = lo + step;
        step *= 2;
    }
    if (hi > nranks)
        hi = nranks;
    while (hi - lo > 1) {
        uint32_t m = lo + (hi - lo) / 2;
        if (base[m] <= f)
            lo = m;
        else
            hi = m;
    }
    return lo;
}

/* Stable sort of one rank's receive indices k[0..n) by their ops' peer:
 * two 8-bit counting passes (peers are below 2^16). */
static void sort_recvs_by_peer(const ccs_op_t *ops, uint32_t *k,
                               uint32_t *tmp, uint32_t n)
{
    uint32_t cnt[257];

    for (unsigned shift = 0; shift < 16; shift += 8) {
        memset(cnt, 0, sizeof(cnt));
        for (uint32_t i = 0; i < n; i++)
            cnt[(((uint32_t)ops[k[i]].peer >> shift) & 0xff) + 1]++;
        for (unsigned b = 0; b < 256; b++)
            cnt[b + 1] += cnt[b];
        for (uint32_t i = 0; i < n; i++)
            tmp[cnt[((uint32_t)ops[k[i]].peer >> shift) & 0xff]++] = k[i];
        memcpy(k, tmp, (size_t)n * sizeof(*k));
    }
}

/* Sends go to buckets by receiver (their flat indices only: a bucket is
 * in (sender, op order), so its indices increase and each one's sender is
 * found by a short search), and each receiver's receives, stably sorted
 * by sender, are merged with its bucket.  Scratch: 4 bytes per send plus
 * one rank's receives, besides the pairing itself (a record of every
 * endpoint and a sorting copy of them cost about 24 bytes per op, the
 * largest part of a synthesis' peak memory). */
ccs_status_t ccs_sched_pair(const ccs_sched_t *s, ccs_status_t fail,
                            ccs_pairing_t *out, ccs_err_t *err)
{
    ccs_pairing_t p = { NULL, NULL };  /* handed to *out on success */
    uint32_t *pos = NULL;   /* [R + 1] bucket starts, then ends; freed */
    uint32_t *snd = NULL;   /* [ns] send flat indices by receiver; freed */
    uint32_t *rk = NULL, *tmp = NULL;  /* [most_recv] one rank's; freed */
    uint64_t total = ccs_sched_total_ops(s);
    uint32_t R, ns, most_recv = 0;
    xend_t worst = { 0, 0, 0, 0 }, worst_mate = { 0, 0, 0, 0 };
    int worst_kind = -1;   /* 0 size mismatch, 1 lone send, 2 lone recv */
    ccs_status_t st = CCS_OK;

    if (s == NULL || out == NULL)
        return ccs_err_set(err, CCS_ERR_INVALID, "NULL argument");
    if (total >= UINT32_MAX)
        return ccs_err_set(err, CCS_ERR_UNSUPPORTED,
                           "%" PRIu64 " ops: too many to pair", total);
    R = s->nranks;
    p.base = malloc(((size_t)R + 1) * sizeof(*p.base));
    p.mate = malloc((size_t)(total ? total : 1) * sizeof(*p.mate));
    pos = calloc((size_t)R + 1, sizeof(*pos));
    if (p.base == NULL || p.mate == NULL || pos == NULL)
        goto nomem;
    p.base[0] = 0;
    for (uint32_t r = 0; r < R; r++) {
        const ccs_op_t *ops = s->rank_ops[r];
        uint32_t nrecv = 0;
        p.base[r + 1] = p.base[r] + s->rank_nops[r];
        for (uint32_t k = 0; k < s->rank_nops[r]; k++) {
            p.mate[p.base[r] + k] = CCS_NO_OP;
            if (ops[k].kind == CCS_OP_SEND)
                pos[(uint32_t)ops[k].peer + 1]++;
            nrecv += kind_is_recv(ops[k].kind);
        }
        if (nrecv > most_recv)
            most_recv = nrecv;
    }
    for (uint32_t q = 0; q < R; q++)
        pos[q + 1] += pos[q];
    ns = pos[R];
    snd = malloc((size_t)(ns ? ns : 1) * sizeof(*snd));
    rk = malloc((size_t)(most_recv ? most_recv : 1) * sizeof(*rk));
    tmp = malloc((size_t)(most_recv ? most_recv : 1) * sizeof(*tmp));
    if (snd == NULL || rk == NULL || tmp == NULL)
        goto nomem;
    for (uint32_t r = 0; r < R; r++) {
        const ccs_op_t *ops = s->rank_ops[r];
        for (uint32_t k = 0; k < s->rank_nops[r]; k++)
            if (ops[k].kind == CCS_OP_SEND)
                snd[pos[ops[k].peer]++] = p.base[r] + k;
    }

    /* pos[q] is now the end of q's bucket, its start the end of q - 1's.
     * Both sides are in (sender, step, op order); the merge visits keys in
     * (receiver, sender, step) order and the k-th of a key on each side
     * pair up.  The error reported is the one a step-by-step reader meets
     * first: the earliest in (step, receiver, sender) order, so every
     * mismatch is looked at. */
    for (uint32_t q = 0; q < R; q++) {
        const ccs_op_t *qops = s->rank_ops[q];
        uint32_t i = q == 0 ? 0 : pos[q - 1], iend = pos[q];
        uint32_t n = 0, j = 0, src = 0;
        bool sorted = true;

        for (uint32_t k = 0; k < s->rank_nops[q]; k++) {
            if (!kind_is_recv(qops[k].kind))
                continue;
            rk[n] = k;
            sorted &= n == 0 || qops[rk[n - 1]].peer <= qops[k].peer;
            n++;
        }
        if (!sorted)
            sort_recvs_by_peer(qops, rk, tmp, n);
        while (i < iend || j < n) {
            xend_t se = { 0, q, 0, 0 }, re = { 0, q, 0, 0 };
            const ccs_op_t *so = NULL, *ro = NULL;
            int c;
            bool bad;

            if (i < iend) {
                src = rank_of_flat(p.base, R, src, snd[i]);
                so = flat_op(s, p.base, src, snd[i]);
                se = (xend_t){ so->step, q, src, snd[i] };
            }
            if (j < n) {
                ro = &qops[rk[j]];
                re = (xend_t){ ro->step, q, (uint32_t)ro->peer,
                               p.base[q] + rk[j] };
            }
            if (so == NULL)
                c = 1;
            else if (ro == NULL)
                c = -1;
            else if (se.src != re.src)
                c = se.src < re.src ? -1 : 1;
            else
                c = se.step == re.step ? 0 : se.step < re.step ? -1 : 1;
            bad = c != 0;
            if (c == 0) {
                bad = so->nchunks != ro->nchunks;
                p.mate[re.flat] = se.flat;
                p.mate[se.flat] = re.flat;
            }
            if (bad) {
                const xend_t *at = c > 0 ? &re : &se;
                if (worst_kind < 0 || xend_step_cmp(at, &worst) < 0) {
                    worst_kind = c == 0 ? 0 : c < 0 ? 1 : 2;
                    worst = *at;
                    if (c == 0)
                        worst_mate = re;
                }
            }
            i += c <= 0;
            j += c >= 0;
        }
    }
    if (worst_kind >= 0) {
        char sr[48], rr[48];
        if (worst_kind == 0) {
            const ccs_op_t *so = flat_op(s, p.base, worst.src, worst.flat);
            const ccs_op_t *ro = flat_op(s, p.base, worst_mate.dst,
                                         worst_mate.flat);
            ccs_buf_range_str(sr, sizeof(sr), so->buf, so->chunk,
                              so->nchunks);
            ccs_buf_range_str(rr, sizeof(rr), ro->buf, ro->chunk,
                              ro->nchunks);
            st = ccs_err_set(err, fail,
                             "step %u, rank %u: send of %s (%u chunk%s) "
                             "to rank %u is received by %s into %s (%u "
                             "chunk%s): size mismatch", worst.step,
                             worst.src, sr, so->nchunks,
                             so->nchunks == 1 ? "" : "s", worst.dst,
                             ccs_op_kind_str((ccs_op_kind_t)ro->kind),
                             rr, ro->nchunks, ro->nchunks == 1 ? "" : "s");
        } else if (worst_kind == 1) {
            const ccs_op_t *so = flat_op(s, p.base, worst.src, worst.flat);
            ccs_buf_range_str(sr, sizeof(sr), so->buf, so->chunk,
                              so->nchunks);
            st = ccs_err_set(err, fail,
                             "step %u, rank %u: send of %s to rank %u has "
                             "no matching receive", worst.step, worst.src,
                             sr, worst.dst);
        } else {
            const ccs_op_t *ro = flat_op(s, p.base, worst.dst, worst.flat);
            ccs_buf_range_str(rr, sizeof(rr), ro->buf, ro->chunk,
                              ro->nchunks);
            st = ccs_err_set(err, fail,
                             "step %u, rank %u: %s from rank %u into %s has "
                             "no matching send", worst.step, worst.dst,
                             ccs_op_kind_str((ccs_op_kind_t)ro->kind),
                             worst.src, rr);
        }
        goto cleanup;
    }
    *out = p;
    p.base = p.mate = NULL;
    goto cleanup;
nomem:
    st = ccs_err_set(err, CCS_ERR_NOMEM, "out of memory pairing %" PRIu64
                     " ops", total);
cleanup:
    ccs_pairing_free(&p);
    free(pos);
    free(snd);
    free(rk);
    free(tmp);
    return st;
}

/* The check alone, without the pairing, fed one rank at a time: every
 * ordered pair (a, q) of ranks must see the same sequence of (step, chunk
 * count) in a's sends to q (a's op order) and in q's receives from a (q's
 * op order) -- the k-th send of a step meets the k-th receive exactly when
 * the two sequences are equal.  Ranks come in order; a rank's transfers
 * with a lower-numbered peer are compared at once with what that peer left
 * waiting, and those with a higher-numbered peer wait, grouped by (peer,
 * direction), until the peer comes.  A waiting group is freed when it is
 * met, so memory follows the transfers in flight between ranks fed and
 * ranks to come (for a ring, one rank's sends), not the whole schedule,
 * and each rank's ops are looked at once, while they are in cache. */

/* What one rank left waiting for its higher-numbered peers. */
typedef struct pend {
    uint64_t *word;   /* owned; (step, chunks) of each transfer, by group */
    uint32_t *key;    /* [ngroup] 2 peer + direction, ascending; in word's
                         block */
    uint32_t *off;    /* [ngroup + 1] each group's first word; in word's
                         block */
    uint32_t ngroup, left;  /* groups, groups not met yet */
} pend_t;

struct ccs_pair_stream {
    uint32_t nranks, next;  /* ranks fed so far */
    bool bad;               /* two sequences differ: no further work */
    uint64_t waiting;       /* groups not met yet, over all ranks */
    pend_t *pend;           /* owned; [nranks] */
    uint32_t cap;           /* room in each scratch array below */
    /* Owned scratch for one rank's transfers as (key, word): its sends
     * (LIST_SEND), its receives (LIST_RECV), and room to sort either. */
    uint32_t *key[3];
    uint64_t *word[3];
};

enum { LIST_SEND = 0, LIST_RECV = 1, LIST_TMP = 2 };

static uint64_t pair_word(const ccs_op_t *op)
{
    return (uint64_t)op->step << 32 | op->nchunks;
}

ccs_status_t ccs_pair_stream_create(uint32_t nranks, ccs_pair_stream_t **out)
{
    ccs_pair_stream_t *ps = calloc(1, sizeof(*ps));  /* to *out */

    if (ps == NULL || (ps->pend = calloc(nranks ? nranks : 1,
                                         sizeof(*ps->pend))) == NULL) {
        free(ps);
        return CCS_ERR_NOMEM;
    }
    ps->nranks = nranks;
    *out = ps;
    return CCS_OK;
}

void ccs_pair_stream_destroy(ccs_pair_stream_t *ps)
{
    if (ps == NULL)
        return;
    for (uint32_t r = 0; r < ps->nranks; r++)
        free(ps->pend[r].word);
    free(ps->pend);
    for (int l = 0; l < 3; l++) {
        free(ps->key[l]);
        free(ps->word[l]);
    }
    free(ps);
}

/* The sorted list is in the scratch arrays: make them list l's. */
static void take_tmp(ccs_pair_stream_t *ps, int l)
{
    uint32_t *k = ps->key[l];
    uint64_t *w = ps->word[l];

    ps->key[l] = ps->key[LIST_TMP];
    ps->word[l] = ps->word[LIST_TMP];
    ps->key[LIST_TMP] = k;
    ps->word[LIST_TMP] = w;
}

/* Stable sort of list l (n transfers) by key: two 9-bit counting passes
 * (keys are below 2^17 since ranks are at most 2^16). */
static void sort_by_key(ccs_pair_stream_t *ps, int l, uint32_t n)
{
    uint32_t cnt[513];

    for (unsigned shift = 0; shift < 18; shift += 9) {
        const uint32_t *key = ps->key[l];
        const uint64_t *word = ps->word[l];
        memset(cnt, 0, sizeof(cnt));
        for (uint32_t i = 0; i < n; i++)
            cnt[((key[i] >> shift) & 0x1ff) + 1]++;
        for (unsigned k = 0; k < 512; k++)
            cnt[k + 1] += cnt[k];
        for (uint32_t i = 0; i < n; i++) {
            uint32_t at = cnt[(key[i] >> shift) & 0x1ff]++;
            ps->key[LIST_TMP][at] = key[i];
            ps->word[LIST_TMP][at] = word[i];
        }
        take_tmp(ps, l);
    }
}

/* Most distinct keys a list may have for the short sort below; more take
 * sort_by_key. */
#define FEW_KEYS 8

/* Stable sort of list l (n transfers) by key when it has at most FEW_KEYS
 * distinct keys: one pass to number the keys with a table that small, one
 * to scatter; false, with nothing moved, when it has more. */
static bool sort_few_keys(ccs_pair_stream_t *ps, int l, uint32_t n)
{
    uint32_t key[FEW_KEYS], cnt[FEW_KEYS], at[FEW_KEYS], order[FEW_KEYS];
    uint32_t nk = 0, j = 0, sum = 0, *slot = ps->key[LIST_TMP];
    const uint32_t *in = ps->key[l];
    const uint64_t *word = ps->word[l];

    for (uint32_t i = 0; i < n; i++) {
        uint32_t k = in[i];
        if (nk == 0 || key[j] != k) {
            for (j = 0; j < nk && key[j] != k; j++)
                ;
            if (j == nk) {
                if (nk == FEW_KEYS)
                    return false;
                key[nk] = k;
                cnt[nk++] = 0;
            }
        }
        cnt[j]++;
        slot[i] = j;
    }
    /* Slots in key order (insertion sort of at most FEW_KEYS). */
    for (uint32_t a = 0; a < nk; a++) {
        uint32_t b = a;
        for (; b > 0 && key[order[b - 1]] > key[a]; b--)
            order[b] = order[b - 1];
        order[b] = a;
    }
    for (uint32_t a = 0; a < nk; a++) {
        at[order[a]] = sum;
        sum += cnt[order[a]];
    }
    for (uint32_t i = 0; i < n; i++)
        ps->word[LIST_TMP][at[slot[i]]++] = word[i];
    /* The keys follow from the counts, in list l's own array. */
    for (uint32_t a = 0, i = 0; a < nk; a++)
        for (uint32_t c = 0; c < cnt[order[a]]; c++)
            ps->key[l][i++] = key[order[a]];
    /* Only the words moved to the scratch array: swap those. */
    {
        uint64_t *w = ps->word[l];
        ps->word[l] = ps->word[LIST_TMP];
        ps->word[LIST_TMP] = w;
    }
    return true;
}

/* Meet the group of rank x's transfers with key k (a peer below x),
 * words[0..n), with what the peer left waiting; false when they differ. */
static bool meet(ccs_pair_stream_t *ps, uint32_t x, uint32_t k,
                 const uint64_t *words, uint32_t n)
{
    pend_t *pd = &ps->pend[k >> 1];
    uint32_t want = x * 2 + ((k & 1) ^ 1), a = 0, b = pd->ngroup;

    while (a < b) {
        uint32_t m = a + (b - a) / 2;
        if (pd->key[m] < want)
            a = m + 1;
        else
            b = m;
    }
    if (a == pd->ngroup || pd->key[a] != want ||
        pd->off[a + 1] - pd->off[a] != n ||
        memcmp(pd->word + pd->off[a], words,
               (size_t)n * sizeof(uint64_t)) != 0)
        return false;
    ps->waiting--;
    if (--pd->left == 0) {
        free(pd->word);
        memset(pd, 0, sizeof(*pd));
    }
    return true;
}

/* End of the group of list l that starts at i (n transfers). */
static uint32_t group_end(const ccs_pair_stream_t *ps, int l, uint32_t i,
                          uint32_t n)
{
    const uint32_t *key = ps->key[l];
    uint32_t e = i + 1;

    while (e < n && key[e] == key[i])
        e++;
    return e;
}

ccs_status_t ccs_pair_stream_rank(ccs_pair_stream_t *ps, const ccs_op_t *ops,
                                  uint32_t n)
{
    uint32_t x = ps->next++, cnt[2] = { 0, 0 }, high[2], nhigh = 0;
    uint32_t ghigh = 0;
    bool sorted[2] = { true, true };
    pend_t *pd;

    if (ps->bad || n == 0)
        return CCS_OK;
    if (n > ps->cap) {
        bool ok = true;
        for (int l = 0; l < 3; l++) {
            uint32_t *k = realloc(ps->key[l], (size_t)n * sizeof(*k));
            uint64_t *w;
            if (k != NULL)
                ps->key[l] = k;
            w = realloc(ps->word[l], (size_t)n * sizeof(*w));
            if (w != NULL)
                ps->word[l] = w;
            ok &= k != NULL && w != NULL;
        }
        if (!ok)
            return CCS_ERR_NOMEM;
        ps->cap = n;
    }
    /* Sends and receives apart: each is often sorted by peer already (a
     * ring sends to one peer and receives from one).  The two lists'
     * arrays, counts and last keys are locals, so that the loop (a third
     * of the pairing check's time) keeps them in registers instead of
     * going through ps and cnt[] for every op. */
    {
        uint32_t *key_s = ps->key[LIST_SEND], *key_r = ps->key[LIST_RECV];
        uint64_t *word_s = ps->word[LIST_SEND];
        uint64_t *word_r = ps->word[LIST_RECV];
        uint32_t ns = 0, nr = 0, last_s = 0, last_r = 0;
        bool sorted_s = true, sorted_r = true;

        for (uint32_t i = 0; i < n; i++) {
            unsigned kind = ops[i].kind;
            /* (Meaningless for a local op, whose peer is -1: unused.) */
            uint32_t key = (uint32_t)ops[i].peer * 2;

            if (kind == CCS_OP_SEND) {
                sorted_s &= key >= last_s;
                last_s = key;
                key_s[ns] = key;
                word_s[ns++] = pair_word(&ops[i]);
            } else if (kind <= CCS_OP_RECV_REDUCE) {
                key += LIST_RECV;
                sorted_r &= key >= last_r;
                last_r = key;
                key_r[nr] = key;
                word_r[nr++] = pair_word(&ops[i]);
            }
        }
        cnt[LIST_SEND] = ns;
        cnt[LIST_RECV] = nr;
        sorted[LIST_SEND] = sorted_s;
        sorted[LIST_RECV] = sorted_r;
    }
    for (int l = 0; l < 2; l++) {
        if (!sorted[l] && !sort_few_keys(ps, l, cnt[l]))
            sort_by_key(ps, l, cnt[l]);
        /* Groups with lower-numbered peers: met now. */
        high[l] = cnt[l];
        for (uint32_t lo = 0; lo < cnt[l];) {
            uint32_t k = ps->key[l][lo], hi = group_end(ps, l, lo, cnt[l]);
            if ((k >> 1) > x) {
                high[l] = lo;
                break;
            }
            if (!meet(ps, x, k, ps->word[l] + lo, hi - lo)) {
                ps->bad = true;
                return CCS_OK;
            }
            lo = hi;
        }
        for (uint32_t i = high[l]; i < cnt[l]; i++)
            ghigh += i == high[l] || ps->key[l][i] != ps->key[l][i - 1];
        nhigh += cnt[l] - high[l];
    }
    if (ghigh == 0)
        return CCS_OK;
    /* The rest waits: one block of words, then keys and group offsets,
     * the groups of both lists merged by key; freed when the last group
     * is met (meet) or with the stream. */
    pd = &ps->pend[x];
    pd->word = malloc((size_t)nhigh * sizeof(uint64_t) +
                      ((size_t)2 * ghigh + 1) * sizeof(uint32_t));
    if (pd->word == NULL)
        return CCS_ERR_NOMEM;
    pd->key = (uint32_t *)(pd->word + nhigh);
    pd->off = pd->key + ghigh;
    pd->ngroup = 0;
    {
        uint32_t at[2] = { high[0], high[1] }, w = 0;
        while (at[0] < cnt[0] || at[1] < cnt[1]) {
            int l = at[0] == cnt[0] ? 1
                  : at[1] == cnt[1] ? 0
                  : ps->key[0][at[0]] < ps->key[1][at[1]] ? 0 : 1;
            uint32_t e = group_end(ps, l, at[l], cnt[l]);
            pd->key[pd->ngroup] = ps->key[l][at[l]];
            pd->off[pd->ngroup++] = w;
            memcpy(pd->word + w, ps->word[l] + at[l],
                   (size_t)(e - at[l]) * sizeof(uint64_t));
            w += e - at[l];
            at[l] = e;
        }
        pd->off[pd->ngroup] = w;
    }
    pd->left = pd->ngroup;
    ps->waiting += pd->ngroup;
    return CCS_OK;
}

bool ccs_pair_stream_ok(const ccs_pair_stream_t *ps)
{
    return !ps->bad && ps->next == ps->nranks && ps->waiting == 0;
}

ccs_status_t ccs_sched_pair_fail(const ccs_sched_t *s, ccs_status_t fail,
                                 ccs_err_t *err)
{
    ccs_pairing_t p = { NULL, NULL };
    ccs_status_t st = ccs_sched_pair(s, fail, &p, err);

    ccs_pairing_free(&p);
    if (st == CCS_OK)   /* cannot happen: both apply one rule */
        st = ccs_err_set(err, fail, "transfers do not pair");
    return st;
}

ccs_status_t ccs_sched_pair_check(const ccs_sched_t *s, ccs_status_t fail,
                                  ccs_err_t *err)
{
    ccs_pair_stream_t *ps = NULL;   /* freed here */
    ccs_status_t st;
    bool ok;

    if (s == NULL)
        return ccs_err_set(err, CCS_ERR_INVALID, "NULL argument");
    if (ccs_pair_stream_create(s->nranks, &ps) != CCS_OK)
        return ccs_err_set(err, CCS_ERR_NOMEM, "out of memory pairing ops");
    for (uint32_t r = 0; r < s->nranks; r++) {
        if (ccs_pair_stream_rank(ps, s->rank_ops[r], s->rank_nops[r]) !=
            CCS_OK) {
            ccs_pair_stream_destroy(ps);
            return ccs_err_set(err, CCS_ERR_NOMEM,
                               "out of memory pairing ops");
        }
    }
    ok = ccs_pair_stream_ok(ps);
    ccs_pair_stream_destroy(ps);
    if (ok)
        return CCS_OK;
    /* A mismatch: the full pairing finds the first one and words it. */
    st = ccs_sched_pair_fail(s, fail, err);
    return st;
}

/* [*lo, *hi): the ops of rank r in step t (ops sorted by step). */
static void step_range(const ccs_sched_t *s, uint32_t r, uint32_t t,
                       uint32_t *lo, uint32_t *hi)
{
    const ccs_op_t *ops = s->rank_ops[r];
    uint32_t a = 0, b = s->rank_nops[r];

    while (a < b) {
        uint32_t m = a + (b - a) / 2;
        if (ops[m].step < t)
            a = m + 1;
        else
            b = m;
    }
    *lo = a;
    b = a;
    while (b < s->rank_nops[r] && ops[b].step == t)
        b++;
    *hi = b;
}

bool ccs_sched_recv_send(const ccs_sched_t *s, uint32_t dst, uint32_t ri,
                         uint32_t *send_idx)
{
    const ccs_op_t *rcv, *ops;
    uint32_t lo, hi, k = 0, a;

    if (s == NULL || dst >= s->nranks || ri >= s->rank_nops[dst])
        return false;
    rcv = &s->rank_ops[dst][ri];
    if (!kind_is_recv(rcv->kind) || rcv->peer < 0 ||
        (uint32_t)rcv->peer >= s->nranks)
        return false;
    a = (uint32_t)rcv->peer;
    step_range(s, dst, rcv->step, &lo, &hi);
    for (uint32_t i = lo; i < ri; i++)
        k += kind_is_recv(s->rank_ops[dst][i].kind) &&
             s->rank_ops[dst][i].peer == rcv->peer;
    step_range(s, a, rcv->step, &lo, &hi);
    ops = s->rank_ops[a];
    for (uint32_t i = lo; i < hi; i++) {
        if (ops[i].kind == CCS_OP_SEND && ops[i].peer == (int32_t)dst &&
            k-- == 0) {
            *send_idx = i;
            return true;
        }
    }
    return false;
}

/* ---- The IR's rules: hazards within a step ---- */

/* A chunk interval of one buffer; `op` is its op's index in the step. */
typedef struct ival {
    uint32_t buf, op;
    uint64_t lo, hi;
} ival_t;

static int ival_cmp(const void *pa, const void *pb)
{
    const ival_t *a = pa, *b = pb;
    if (a->buf != b->buf)
        return a->buf < b->buf ? -1 : 1;
    if (a->lo != b->lo)
        return a->lo < b->lo ? -1 : 1;
    return 0;
}

/* The interval op reads that counts as a read in hazard terms (the own-
 * destination read of RECV_REDUCE / REDUCE_LOCAL does not); false when
 * none. */
static bool hazard_read(const ccs_op_t *op, ival_t *iv)
{
    bool own = op->src_buf == op->buf && op->src_chunk == op->chunk;

    switch (op->kind) {
    case CCS_OP_SEND:
        iv->buf = op->buf;
        iv->lo = op->chunk;
        break;
    case CCS_OP_COPY:
        iv->buf = op->src_buf;
        iv->lo = op->src_chunk;
        break;
    case CCS_OP_RECV_REDUCE:
    case CCS_OP_REDUCE_LOCAL:
        if (own)
            return false;
        iv->buf = op->src_buf;
        iv->lo = op->src_chunk;
        break;
    default:
        return false;
    }
    iv->hi = iv->lo + op->nchunks;
    return true;
}

/* Smallest chunk of w also in x (same buffer), or UINT64_MAX. */
static uint64_t ival_meet(const ival_t *w, const ival_t *x)
{
    if (w->buf != x->buf || x->lo >= w->hi || x->hi <= w->lo)
        return UINT64_MAX;
    return x->lo > w->lo ? x->lo : w->lo;
}

/* Do writes[0..m) (in op order) overlap anywhere?  Sorts a copy in tmp. */
static bool writes_overlap(const ival_t *w, uint32_t m, ival_t *tmp)
{
    memcpy(tmp, w, (size_t)m * sizeof(*tmp));
    qsort(tmp, m, sizeof(*tmp), ival_cmp);
    for (uint32_t i = 1; i < m; i++) {
        if (tmp[i].buf == tmp[i - 1].buf && tmp[i].lo < tmp[i - 1].hi)
            return true;
        if (tmp[i].buf == tmp[i - 1].buf && tmp[i].hi < tmp[i - 1].hi)
            tmp[i].hi = tmp[i - 1].hi;   /* carry the reach forward */
    }
    return false;
}

/* Below this many ops a step is checked pair by pair. */
#define HAZARD_SMALL 32

ccs_status_t ccs_sched_step_hazard(const ccs_op_t *ops, uint32_t n,
                                   uint32_t step, uint32_t rank,
                                   ccs_status_t fail, ccs_err_t *err)
{
    /* Small steps (nearly all) use the stack; larger ones own heap arrays
     * freed at cleanup. */
    ival_t sw[HAZARD_SMALL], srd[HAZARD_SMALL];
    ival_t *w = sw, *rd = srd, *tmp = NULL;
    uint32_t nw = 0, nrd = 0, jw = UINT32_MAX, jfirst = UINT32_MAX;
    uint64_t xfirst = UINT64_MAX;
    bool twice = false;
    ccs_status_t st = CCS_OK;

    if (n < 2 && (n == 0 || ops[0].kind == CCS_OP_SEND ||
                  ops[0].kind == CCS_OP_RECV))
        return CCS_OK;   /* nothing can collide */
    if (n > HAZARD_SMALL) {
        w = malloc((size_t)n * sizeof(*w));
        rd = malloc((size_t)n * sizeof(*rd));
        tmp = malloc((size_t)n * sizeof(*tmp));
        if (w == NULL || rd == NULL || tmp == NULL) {
            st = ccs_err_set(err, CCS_ERR_NOMEM, "out of memory");
            goto cleanup;
        }
    }
    for (uint32_t i = 0; i < n; i++) {
        if (ops[i].kind != CCS_OP_SEND)
            w[nw++] = (ival_t){ ops[i].buf, i, ops[i].chunk,
                                (uint64_t)ops[i].chunk + ops[i].nchunks };
        if (hazard_read(&ops[i], &rd[nrd]))
            rd[nrd].op = i, nrd++;
    }
    if (n <= HAZARD_SMALL) {
        for (uint32_t j = 0; j < nw && jfirst == UINT32_MAX; j++) {
            uint64_t xw = UINT64_MAX, xr = UINT64_MAX, x;
            for (uint32_t k = 0; k < j; k++) {
                x = ival_meet(&w[j], &w[k]);
                xw = x < xw ? x : xw;
            }
            for (uint32_t k = 0; k < nrd; k++) {
                x = ival_meet(&w[j], &rd[k]);
                xr = x < xr ? x : xr;
            }
            if (xw != UINT64_MAX || xr != UINT64_MAX) {
                jfirst = j;
                twice = xw <= xr;
                xfirst = twice ? xw : xr;
            }
        }
    } else {
        /* Reads as a sorted union; the first write that meets it. */
        qsort(rd, nrd, sizeof(*rd), ival_cmp);
        uint32_t nu = 0;
        for (uint32_t k = 0; k < nrd; k++) {
            if (nu > 0 && rd[nu - 1].buf == rd[k].buf &&
                rd[k].lo <= rd[nu - 1].hi) {
                if (rd[k].hi > rd[nu - 1].hi)
                    rd[nu - 1].hi = rd[k].hi;
            } else {
                rd[nu++] = rd[k];
            }
        }
        /* The first write that overlaps an earlier one: "writes 0..m
         * overlap" only turns true as m grows, so search for it. */
        if (writes_overlap(w, nw, tmp)) {
            uint32_t a = 1, b = nw - 1;   /* answer in [a, b] */
            while (a < b) {
                uint32_t m = a + (b - a) / 2;
                if (writes_overlap(w, m + 1, tmp))
                    b = m;
                else
                    a = m + 1;
            }
            jw = a;
        }
        for (uint32_t j = 0; j < nw && j <= jw; j++) {
            uint64_t xr = UINT64_MAX, xw = UINT64_MAX;
            uint32_t lo = 0, hi = nu;
            while (lo < hi) {  /* first read span of w's buffer ending
                                  past w's start */
                uint32_t m = lo + (hi - lo) / 2;
                if (rd[m].buf < w[j].buf ||
                    (rd[m].buf == w[j].buf && rd[m].hi <= w[j].lo))
                    lo = m + 1;
                else
                    hi = m;
            }
            if (lo < nu)
                xr = ival_meet(&w[j], &rd[lo]);
            if (j == jw) {
                for (uint32_t k = 0; k < j; k++) {
                    uint64_t x = ival_meet(&w[j], &w[k]);
                    xw = x < xw ? x : xw;
                }
            }
            if (xw != UINT64_MAX || xr != UINT64_MAX) {
                jfirst = j;
                twice = xw <= xr;
                xfirst = twice ? xw : xr;
                break;
            }
        }
    }
    if (jfirst != UINT32_MAX) {
        const ccs_op_t *op = &ops[w[jfirst].op];
        char what[160];
        ccs_op_desc(what, sizeof(what), op,
                    (uint32_t)(xfirst - op->chunk));
        st = ccs_err_set(err, fail, "step %u, rank %u: %s: %s[%" PRIu64
                         "] is %s", step, rank, what,
                         ccs_buf_str((ccs_buf_t)op->buf), xfirst,
                         twice ? "written twice in this step"
                               : "read and written in the same step");
    }
cleanup:
    if (w != sw)
        free(w);
    if (rd != srd)
        free(rd);
    free(tmp);
    return st;
}
