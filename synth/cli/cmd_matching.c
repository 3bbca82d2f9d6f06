/* cmd_matching.c - `ccsynth matching`: the blossom matcher (match.h) on a
 * graph read from standard input, so it can be checked from outside. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "match.h"
#include "options.h"

static void matching_usage(FILE *f)
{
    fprintf(f,
"usage: ccsynth matching [--max-cardinality] < EDGES\n"
"\n"
"Maximum-weight matching of a general graph (Edmonds' blossom algorithm).\n"
"Input: one edge per line, 'u v w' (vertex numbers >= 0, integer weight,\n"
"which may be negative); blank lines and '#' comments are ignored.  The\n"
"graph has vertices 0..max vertex seen.\n"
"\n"
"Output: one line 'v mate' per vertex in order (mate -1 when unmatched),\n"
"then 'weight W', the total weight of the matching.\n"
"\n"
"      --max-cardinality  maximum weight among maximum-cardinality matchings\n"
"  -q, --quiet            accepted as everywhere (errors only on stderr)\n"
"  -h, --help             this text\n");
}

/* Parse one line; returns 1 for an edge, 0 for blank/comment, -1 bad. */
static int parse_line(char *line, long long *u, long long *v, long long *w)
{
    char *p = line, *end;
    long long x[3];

    p[strcspn(p, "#\r\n")] = '\0';
    while (*p == ' ' || *p == '\t')
        p++;
    if (*p == '\0')
        return 0;
    for (int i = 0; i < 3; i++) {
        while (*p == ' ' || *p == '\t')
            p++;
        if (*p == '\0')
            return -1;
        x[i] = strtoll(p, &end, 10);
        if (end == p || (*end != '\0' && *end != ' ' && *end != '\t'))
            return -1;
        p = end;
    }
    while (*p == ' ' || *p == '\t')
        p++;
    if (*p != '\0')
        return -1;
    *u = x[0];
    *v = x[1];
    *w = x[2];
    return 1;
}

int cmd_matching(int argc, char **argv)
{
    static const opt_id_t ids[] = { OPT_MAX_CARD, OPT_QUIET, OPT_END };
    static const opt_cmd_t spec = { "matching", ids, matching_usage, 0 };
    cli_opts_t co;
    const char *cmd = "matching";
    bool maxcard = false;
    match_edge_t *edges = NULL;
    int32_t *mate = NULL;
    size_t ne = 0, cap = 0;
    char line[4096];
    long lineno = 0;
    int32_t nv = 0;
    int rc = CLI_EXIT_OK;
    ccs_err_t err = { { 0 } };
    ccs_status_t st;

    rc = opt_parse(&spec, argc, argv, &co);
    if (rc != CLI_EXIT_OK || co.help)
        return rc;
    maxcard = co.own[OPT_MAX_CARD] != NULL;

    while (fgets(line, sizeof(line), stdin) != NULL) {
        long long u, v, w;
        int k;
        lineno++;
        if (strchr(line, '\n') == NULL && !feof(stdin)) {
            rc = cli_fail(cmd, CLI_EXIT_INPUT, "stdin:%ld: line too long",
                          lineno);
            goto cleanup;
        }
        k = parse_line(line, &u, &v, &w);
        if (k == 0)
            continue;
        if (k < 0) {
            rc = cli_fail(cmd, CLI_EXIT_INPUT, "stdin:%ld: expected 'u v w'",
                          lineno);
            goto cleanup;
        }
        if (u < 0 || v < 0 || u >= (1 << 24) || v >= (1 << 24)) {
            rc = cli_fail(cmd, CLI_EXIT_INPUT,
                          "stdin:%ld: vertex out of range 0..%d", lineno,
                          (1 << 24) - 1);
            goto cleanup;
        }
        if (u == v) {
            rc = cli_fail(cmd, CLI_EXIT_INPUT, "stdin:%ld: self-loop on %lld",
                          lineno, u);
            goto cleanup;
        }
        if (w > MATCH_WEIGHT_MAX || w < -MATCH_WEIGHT_MAX) {
            rc = cli_fail(cmd, CLI_EXIT_INPUT,
                          "stdin:%ld: weight %lld out of range", lineno, w);
            goto cleanup;
        }
        if (ne == cap) {
            size_t ncap = cap ? 2 * cap : 64;
            match_edge_t *ne_ = realloc(edges, ncap * sizeof(*ne_));
            if (ne_ == NULL) {
                rc = cli_fail(cmd, CLI_EXIT_INTERNAL, "out of memory");
                goto cleanup;
            }
            edges = ne_; /* owned here, freed at cleanup */
            cap = ncap;
        }
        edges[ne++] = (match_edge_t){ (int32_t)u, (int32_t)v, (int64_t)w };
        if ((int32_t)u + 1 > nv)
            nv = (int32_t)u + 1;
        if ((int32_t)v + 1 > nv)
            nv = (int32_t)v + 1;
    }
    if (ferror(stdin)) {
        rc = cli_fail(cmd, CLI_EXIT_INTERNAL, "reading stdin failed");
        goto cleanup;
    }
    mate = malloc(((size_t)nv + 1) * sizeof(*mate)); /* owned here */
    if (mate == NULL) {
        rc = cli_fail(cmd, CLI_EXIT_INTERNAL, "out of memory");
        goto cleanup;
    }
    st = match_max_weight(nv, edges, (int32_t)ne, maxcard, mate, &err);
    if (st != CCS_OK) {
        rc = cli_fail_status(cmd, st, &err);
        goto cleanup;
    }
    for (int32_t v = 0; v < nv; v++)
        printf("%d %d\n", v, mate[v]);
    printf("weight %lld\n",
           (long long)match_weight(nv, edges, (int32_t)ne, mate));

cleanup:
    free(edges);
    free(mate);
    return rc;
}
