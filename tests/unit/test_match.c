/* test_match.c - blossom matching against brute force, hand cases and
 * the reference matcher (match_ref.c). */
#include <stdint.h>
#include <stdlib.h>

#include "match.h"
#include "harness.h"
#include "match_ref.c"

#define MAXV 10

/* Deterministic generator (xorshift64*), so failures reproduce. */
static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * UINT64_C(2685821657736338717);
}

typedef struct best {
    int card;
    int64_t w;
} best_t;

/* Exhaustive optimum over all matchings of the heaviest-edge matrix. */
static void brute(int n, int64_t adj[MAXV][MAXV], const int has[MAXV][MAXV],
                  int v, int *used, int card, int64_t w, bool maxcard,
                  best_t *b)
{
    while (v < n && used[v])
        v++;
    if (v >= n) {
        bool better = maxcard ? (card > b->card ||
                                 (card == b->card && w > b->w))
                              : w > b->w;
        if (better) {
            b->card = card;
            b->w = w;
        }
        return;
    }
    used[v] = 1;
    brute(n, adj, has, v + 1, used, card, w, maxcard, b); /* v unmatched */
    for (int u = v + 1; u < n; u++) {
        if (used[u] || !has[v][u])
            continue;
        used[u] = 1;
        brute(n, adj, has, v + 1, used, card + 1, w + adj[v][u], maxcard, b);
        used[u] = 0;
    }
    used[v] = 0;
}

/* Check mate is a matching over existing edges; return its value. */
static bool eval_mate(int n, int64_t adj[MAXV][MAXV],
                      const int has[MAXV][MAXV], const int32_t *mate,
                      best_t *out)
{
    out->card = 0;
    out->w = 0;
    for (int v = 0; v < n; v++) {
        int u = mate[v];
        if (u == -1)
            continue;
        if (u < 0 || u >= n || u == v || mate[u] != v || !has[v][u])
            return false;
        if (u > v) {
            out->card++;
            out->w += adj[v][u];
        }
    }
    return true;
}

enum { W_RANDOM, W_TIED, W_NEGATIVE, W_KINDS };

static void random_case(uint64_t *rs, int n, int kind, bool maxcard,
                        int *fails)
{
    match_edge_t edges[MAXV * MAXV];
    int64_t adj[MAXV][MAXV];
    int has[MAXV][MAXV];
    int32_t mate[MAXV];
    int used[MAXV] = { 0 };
    int ne = 0;
    unsigned density = 20 + (unsigned)(rng_next(rs) % 81); /* percent */
    best_t want = { 0, 0 }, got = { 0, 0 };
    ccs_err_t err = { { 0 } };

    memset(has, 0, sizeof(has));
    memset(adj, 0, sizeof(adj));
    for (int u = 0; u < n; u++) {
        for (int v = u + 1; v < n; v++) {
            int64_t w;
            if (rng_next(rs) % 100 >= density)
                continue;
            if (kind == W_RANDOM)
                w = (int64_t)(rng_next(rs) % 100) + 1;
            else if (kind == W_TIED)
                w = (int64_t)(rng_next(rs) % 3) + 1;
            else
                w = (int64_t)(rng_next(rs) % 41) - 20;
            /* Sometimes a lighter parallel edge: the heavier one counts. */
            if (rng_next(rs) % 8 == 0)
                edges[ne++] = (match_edge_t){ v, u, w - 3 };
            edges[ne++] = (match_edge_t){ u, v, w };
            has[u][v] = has[v][u] = 1;
            adj[u][v] = adj[v][u] = w;
        }
    }
    want.card = maxcard ? -1 : 0;
    want.w = maxcard ? INT64_MIN : 0;
    brute(n, adj, has, 0, used, 0, 0, maxcard, &want);
    if (match_max_weight(n, edges, ne, maxcard, mate, &err) != CCS_OK ||
        !eval_mate(n, adj, has, mate, &got) || got.w != want.w ||
        (maxcard && got.card != want.card)) {
        if (*fails < 5)
            FAIL_AT("n=%d kind=%d maxcard=%d: got card %d w %lld, want "
                    "card %d w %lld (%s)", n, kind, (int)maxcard, got.card,
                    (long long)got.w, want.card, (long long)want.w,
                    err.msg);
        (*fails)++;
    }
}

/* Hundreds of random graphs for every size 1..10, every weight kind, both
 * modes, against exhaustive search. */
TEST(random_against_brute_force)
{
    uint64_t rs = UINT64_C(0x9E3779B97F4A7C15);
    int fails = 0, cases = 0;

    for (int n = 1; n <= MAXV; n++) {
        for (int kind = 0; kind < W_KINDS; kind++) {
            for (int mc = 0; mc < 2; mc++) {
                int reps = n <= 8 ? 300 : 120;
                for (int i = 0; i < reps; i++, cases++)
                    random_case(&rs, n, kind, mc != 0, &fails);
            }
        }
    }
    CHECK_EQ_INT(fails, 0);
    CHECK(cases > 10000);
}

/* Hand-made graphs whose optimum needs blossoms. */
TEST(hand_cases)
{
    static const struct {
        const char *what;
        int n;
        bool maxcard;
        int ne;
        match_edge_t e[16];
        int64_t want_w;
        int want_card;
    } cases[] = {
        { "single edge", 2, false, 1, { { 0, 1, 5 } }, 5, 1 },
        { "triangle takes heaviest", 3, false, 3,
          { { 0, 1, 1 }, { 1, 2, 3 }, { 0, 2, 2 } }, 3, 1 },
        { "path prefers two light over one heavy", 4, false, 3,
          { { 0, 1, 5 }, { 1, 2, 9 }, { 2, 3, 5 } }, 10, 2 },
        { "path prefers heavy middle", 4, false, 3,
          { { 0, 1, 4 }, { 1, 2, 9 }, { 2, 3, 4 } }, 9, 1 },
        { "negative never chosen", 2, false, 1, { { 0, 1, -3 } }, 0, 0 },
        { "max-cardinality forces negative", 2, true, 1, { { 0, 1, -3 } },
          -3, 1 },
        { "max-cardinality beats weight", 4, true, 3,
          { { 0, 1, 1 }, { 1, 2, 10 }, { 2, 3, 1 } }, 2, 2 },
        /* A 5-cycle with a pendant: the augmenting path runs through a
         * blossom. */
        { "odd cycle with stem", 6, false, 6,
          { { 0, 1, 8 }, { 1, 2, 9 }, { 2, 3, 8 }, { 3, 4, 9 }, { 4, 0, 8 },
            { 4, 5, 10 } }, 26, 3 },
        /* Two triangles sharing a connector: nested blossoms. */
        { "nested blossoms", 8, false, 10,
          { { 0, 1, 10 }, { 1, 2, 10 }, { 2, 0, 10 }, { 2, 3, 7 },
            { 3, 4, 10 }, { 4, 5, 10 }, { 5, 3, 10 }, { 5, 6, 3 },
            { 0, 7, 4 }, { 6, 7, 9 } }, 36, 4 },
        /* T-blossom expansion (classic test shape). */
        { "expand T-blossom", 9, false, 10,
          { { 1, 2, 40 }, { 1, 3, 40 }, { 2, 3, 60 }, { 2, 4, 55 },
            { 3, 5, 55 }, { 4, 5, 50 }, { 1, 8, 15 }, { 5, 7, 30 },
            { 7, 6, 10 }, { 8, 6, 10 } }, 135, 4 },
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int32_t mate[16];
        int card = 0;
        ccs_err_t err = { { 0 } };
        ccs_status_t st = match_max_weight(cases[i].n, cases[i].e,
                                           cases[i].ne, cases[i].maxcard,
                                           mate, &err);
        int64_t adj[MAXV][MAXV];
        int has[MAXV][MAXV], used[MAXV] = { 0 };
        best_t bf = { cases[i].maxcard ? -1 : 0,
                      cases[i].maxcard ? INT64_MIN : 0 };

        /* The hand-computed optimum must agree with exhaustive search. */
        memset(has, 0, sizeof(has));
        for (int k = 0; k < cases[i].ne; k++) {
            const match_edge_t *x = &cases[i].e[k];
            has[x->u][x->v] = has[x->v][x->u] = 1;
            adj[x->u][x->v] = adj[x->v][x->u] = x->w;
        }
        brute(cases[i].n, adj, has, 0, used, 0, 0, cases[i].maxcard, &bf);
        CHECK_MSG(bf.w == cases[i].want_w && bf.card == cases[i].want_card,
                  "%s: brute force says w %lld card %d", cases[i].what,
                  (long long)bf.w, bf.card);
        CHECK_MSG(st == CCS_OK, "%s: %s", cases[i].what, err.msg);
        for (int v = 0; v < cases[i].n; v++) {
            CHECK_MSG(mate[v] == -1 || mate[mate[v]] == v, "%s: mate[%d]",
                      cases[i].what, v);
            card += mate[v] > v;
        }
        CHECK_MSG(match_weight(cases[i].n, cases[i].e, cases[i].ne, mate) ==
                      cases[i].want_w, "%s: weight %lld, want %lld",
                  cases[i].what,
                  (long long)match_weight(cases[i].n, cases[i].e,
                                          cases[i].ne, mate),
                  (long long)cases[i].want_w);
        CHECK_MSG(card == cases[i].want_card, "%s: %d pairs, want %d",
                  cases[i].what, card, cases[i].want_card);
    }
}

TEST(rejects_bad_input)
{
    static const struct {
        match_edge_t e;
        const char *msg;
    } bad[] = {
        { { 0, 0, 1 }, "self-loop" },
        { { 0, 5, 1 }, "out of range" },
        { { -1, 1, 1 }, "out of range" },
        { { 0, 1, MATCH_WEIGHT_MAX + 1 }, "weight" },
    };
    int32_t mate[4];

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        ccs_err_t err = { { 0 } };
        CHECK_STATUS(match_max_weight(4, &bad[i].e, 1, false, mate, &err),
                     CCS_ERR_INVALID);
        CHECK_STR_CONTAINS(err.msg, bad[i].msg);
    }
    /* No edges: everything unmatched. */
    CHECK_STATUS(match_max_weight(4, NULL, 0, false, mate, NULL), CCS_OK);
    for (int v = 0; v < 4; v++)
        CHECK_EQ_INT(mate[v], -1);
}

/* A larger dense graph completes and is a valid perfect matching when
 * weights are all positive and max-cardinality is asked. */
TEST(dense_graph_perfect)
{
    enum { N = 120 };
    static match_edge_t e[N * (N - 1) / 2];
    int32_t mate[N];
    uint64_t rs = 12345;
    int ne = 0;

    for (int u = 0; u < N; u++)
        for (int v = u + 1; v < N; v++)
            e[ne++] = (match_edge_t){ u, v,
                                      (int64_t)(rng_next(&rs) % 1000) };
    CHECK_STATUS(match_max_weight(N, e, ne, true, mate, NULL), CCS_OK);
    for (int v = 0; v < N; v++)
        CHECK(mate[v] >= 0 && mate[mate[v]] == v);
}

/* Larger graphs than brute force can check (blossom ids past the first
 * 64-bit word of add_blossom's bitset, many nested blossoms): the optimum
 * weight must not depend on the vertex numbering or the edge order, so
 * each graph is solved again with its vertices permuted and its edges
 * reversed, and both matchings must be valid and of equal weight.  An
 * order-dependent suboptimal answer shows up as a difference (checked:
 * with add_blossom reading only the first word of its bitset, 13 of these
 * graphs differ). */
TEST(relabel_invariant_large)
{
    enum { NMAX = 400, EMAX = NMAX * 12 };
    static const int64_t wmax[] = { 1000, 3, INT64_C(1) << 20 };
    static match_edge_t e[EMAX], f[EMAX];
    static int32_t mate[NMAX], mate2[NMAX], perm[NMAX];
    uint64_t rs = UINT64_C(0xD1B54A32D192ED03);
    int fails = 0, cases = 0;

    for (int i = 0; i < 200; i++, cases++) {
        int n = 100 + (int)(rng_next(&rs) % (NMAX - 99)), ne = 0, bad = 0;
        int deg = 2 + (int)(rng_next(&rs) % 10);
        int64_t wm = wmax[i % 3];
        bool maxcard = i % 4 == 3;
        for (int u = 0; u < n && ne < EMAX; u++) {
            for (int v = u + 1; v < n && ne < EMAX; v++) {
                if ((int)(rng_next(&rs) % (uint64_t)n) >= deg)
                    continue;
                e[ne++] = (match_edge_t){
                    u, v, (int64_t)(rng_next(&rs) % (uint64_t)wm) + 1 };
            }
        }
        for (int v = 0; v < n; v++)
            perm[v] = v;
        for (int v = n - 1; v > 0; v--) {
            int j = (int)(rng_next(&rs) % (uint64_t)(v + 1)), t = perm[v];
            perm[v] = perm[j];
            perm[j] = t;
        }
        for (int k = 0; k < ne; k++)
            f[ne - 1 - k] = (match_edge_t){ perm[e[k].v], perm[e[k].u],
                                            e[k].w };
        if (match_max_weight(n, e, ne, maxcard, mate, NULL) != CCS_OK ||
            match_max_weight(n, f, ne, maxcard, mate2, NULL) != CCS_OK) {
            fails++;
            continue;
        }
        for (int v = 0; v < n; v++) {
            bad += mate[v] >= 0 && mate[mate[v]] != v;
            bad += mate2[v] >= 0 && mate2[mate2[v]] != v;
        }
        if (bad > 0 || match_weight(n, e, ne, mate) !=
                           match_weight(n, f, ne, mate2)) {
            if (fails < 5)
                FAIL_AT("graph %d (n=%d, %d edges): weight %lld, permuted "
                        "%lld, %d bad mates", i, n, ne,
                        (long long)match_weight(n, e, ne, mate),
                        (long long)match_weight(n, f, ne, mate2), bad);
            fails++;
        }
    }
    CHECK_EQ_INT(fails, 0);
    CHECK_EQ_INT(cases, 200);
}

/* The matcher against the reference (the matcher before its speed
 * changes) on random graphs: the same status and the same partner for
 * every vertex, not only the same weight, since StragglAR's plans depend
 * on which of several optimal matchings comes back.  Sizes up to 700
 * vertices; weights with many ties (1..3, and StragglAR-like: a few
 * multiples of 2^16 plus small bonuses), wide (1..2^20), with negative
 * ones, or zero; both modes; edges in sorted order (the matcher then
 * skips its sort), shuffled, or with parallel copies. */
TEST(same_matching_as_reference)
{
    enum { NMAX = 700, EMAX = NMAX * 16 };
    static match_edge_t e[EMAX];
    static int32_t mate[NMAX], mref[NMAX];
    uint64_t rs = UINT64_C(0x7A3C5E1F90B2D468);
    int fails = 0, cases = 0, differ = 0;

    for (int i = 0; i < 3000; i++, cases++) {
        int n = i % 10 == 9 ? 400 + (int)(rng_next(&rs) % (NMAX - 399))
                            : 2 + (int)(rng_next(&rs) % 199);
        int deg = 1 + (int)(rng_next(&rs) % 12), kind = i % 5, ne = 0;
        int order = (i / 5) % 3;
        bool maxcard = (i / 15) % 2 == 1;
        ccs_status_t s1, s2;
        for (int u = 0; u < n && ne < EMAX; u++) {
            for (int v = u + 1; v < n && ne < EMAX; v++) {
                uint64_t x;
                int64_t w;
                if ((int)(rng_next(&rs) % (uint64_t)n) >= deg)
                    continue;
                x = rng_next(&rs);
                switch (kind) {
                case 0: w = 1 + (int64_t)(x % 3); break;
                case 1: w = (int64_t)(1 + x % 3) * 65536 +
                            (int64_t)((x >> 8) % 4) * 16384; break;
                case 2: w = 1 + (int64_t)(x % (UINT64_C(1) << 20)); break;
                case 3: w = (int64_t)(x % 101) - 50; break;
                default: w = (int64_t)(x % 2); break;
                }
                e[ne++] = (match_edge_t){ u, v, w };
                if (order == 2 && ne < EMAX && x % 7 == 0)
                    e[ne++] = (match_edge_t){ v, u, w / 2 };
            }
        }
        if (order == 1) {
            for (int k = ne - 1; k > 0; k--) {
                int j = (int)(rng_next(&rs) % (uint64_t)(k + 1));
                match_edge_t t = e[k];
                e[k] = e[j];
                e[j] = t;
            }
        }
        s1 = match_max_weight(n, e, ne, maxcard, mate, NULL);
        s2 = match_ref_max_weight(n, e, ne, maxcard, mref, NULL);
        differ = s1 != s2;
        for (int v = 0; v < n && !differ; v++)
            differ = mate[v] != mref[v];
        if (differ) {
            if (fails < 5)
                FAIL_AT("graph %d (n=%d, %d edges, kind %d, order %d, "
                        "maxcard %d): weight %lld, reference %lld", i, n,
                        ne, kind, order, (int)maxcard,
                        (long long)match_weight(n, e, ne, mate),
                        (long long)match_weight(n, e, ne, mref));
            fails++;
        }
    }
    CHECK_EQ_INT(fails, 0);
    CHECK_EQ_INT(cases, 3000);
}

/* The matcher against the reference on graphs shaped like StragglAR's
 * rounds at the sizes where its planning time matters (the random graphs
 * above stop at 700 vertices and have no hub): 500-1000 vertices, a hub joined to most of them by edges far heavier
 * than the rest (the straggler), every other vertex with a few edges of
 * one or two receives (multiples of 2^16) plus bonuses from a short list,
 * so that slacks tie often; edges in sorted order, as the planner passes
 * them.  The same partner for every vertex. */
TEST(same_matching_as_reference_rounds)
{
    enum { NMAX = 1000, EMAX = NMAX * 10 };
    static const int64_t bonus[] = { 0, 0, 4096, 8192, 16384, 65536,
                                     3 * 65536 };
    static match_edge_t e[EMAX];
    static int32_t mate[NMAX], mref[NMAX];
    static uint8_t adj[NMAX];
    uint64_t rs = UINT64_C(0x5DEECE66D1234567);
    int fails = 0, cases = 0;

    for (int i = 0; i < 24; i++, cases++) {
        int n = 500 + (int)(rng_next(&rs) % (NMAX - 499)), ne = 0;
        int hub = n - 1, deg = 3 + i % 6;
        bool differ;
        for (int u = 0; u < hub && ne < EMAX; u++) {
            for (int v = 0; v < n; v++)
                adj[v] = 0;
            /* A few partners above u (the lists of the rows below u
             * add theirs), then the hub. */
            for (int k = 0; k < deg; k++) {
                int v = u + 1 + (int)(rng_next(&rs) % (uint64_t)(n - u));
                if (v < hub)
                    adj[v] = 1;
            }
            for (int v = u + 1; v < hub && ne < EMAX; v++) {
                uint64_t x;
                if (!adj[v])
                    continue;
                x = rng_next(&rs);
                e[ne++] = (match_edge_t){
                    u, v, (int64_t)(1 + x % 2) * 65536 +
                              bonus[(x >> 8) % 7] + bonus[(x >> 16) % 7] };
            }
            if (ne < EMAX && rng_next(&rs) % 8 != 0)
                e[ne++] = (match_edge_t){
                    u, hub, (INT64_C(1) << 34) +
                                bonus[rng_next(&rs) % 7] };
        }
        if (match_max_weight(n, e, ne, false, mate, NULL) != CCS_OK ||
            match_ref_max_weight(n, e, ne, false, mref, NULL) != CCS_OK) {
            fails++;
            continue;
        }
        differ = false;
        for (int v = 0; v < n && !differ; v++)
            differ = mate[v] != mref[v];
        if (differ) {
            if (fails < 5)
                FAIL_AT("round graph %d (n=%d, %d edges): weight %lld, "
                        "reference %lld", i, n, ne,
                        (long long)match_weight(n, e, ne, mate),
                        (long long)match_weight(n, e, ne, mref));
            fails++;
        }
    }
    CHECK_EQ_INT(fails, 0);
    CHECK_EQ_INT(cases, 24);
}

int main(void)
{
    RUN(random_against_brute_force);
    RUN(hand_cases);
    RUN(rejects_bad_input);
    RUN(dense_graph_perfect);
    RUN(relabel_invariant_large);
    RUN(same_matching_as_reference);
    RUN(same_matching_as_reference_rounds);
    return TEST_SUMMARY();
}
