/*
 * cmd_show.c - `ccsynth show`: print a .ccs schedule as text, JSON or DOT.
 *
 * Text: a header, then per step every transfer as
 *     r0 -> r1  out[3..4] => out[3..4] (reduce)
 * (sender's range => receiver's range) and every local copy or reduce.
 * A send is paired with its receive the way the runtime pairs them: the
 * k-th send from a to b in a step matches the k-th receive on b from a.
 * JSON: the whole IR; the schema is docs/json.md (names are stable).
 * DOT: ranks as nodes, one edge per transfer, coloured by phase; a
 * MultiTree schedule (without --rank) as its spanning trees, read back
 * from the transfers by mtree_from_sched.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "cli.h"
#include "json.h"
#include "commands.h"
#include "mtree.h"
#include "options.h"

static void show_usage(FILE *f)
{
    fprintf(f,
"usage: ccsynth show [--rank R] [--json | --dot] FILE.ccs\n"
"\n"
"Print a schedule file: a header (collective, algorithm, ranks, chunks,\n"
"scratch, steps, phases, straggler, root, topology fingerprint, synthesis\n"
"parameters), then per step each transfer as\n"
"    r0 -> r1  out[3..4] => out[3..4] (reduce)\n"
"(sender's chunks => receiver's chunks; ranges are inclusive) and each\n"
"local copy or reduce.  The file is fully validated first.\n"
"\n"
"  -r, --rank R   only what rank R does (its transfers and local ops)\n"
"  -j, --json     the whole schedule as JSON (schema: docs/json.md)\n"
"  -d, --dot      Graphviz DOT: ranks as nodes, one edge per transfer\n"
"                 labelled s<step>:c<chunk>, with +<n> when it carries\n"
"                 n > 1 chunks; <chunk> is the sender's first chunk;\n"
"                 colour = phase, bold = reducing receive\n"
"                 (e.g. ccsynth show --dot f.ccs | dot -Tsvg > f.svg);\n"
"                 a multitree schedule is drawn as its trees instead,\n"
"                 one cluster per tree, edges labelled with their\n"
"                 all-gather step (unless --rank is given)\n"
"  -q, --quiet    accepted everywhere; show prints only what is asked\n"
"  -h, --help     this text\n"
"\n"
"exit codes: 0 ok, 1 I/O or internal error, 2 usage, 3 bad file\n");
}

/* ---- walking the transfers of a schedule ---- */

typedef enum {
    EV_STEP,      /* a step begins (step header) */
    EV_XFER,      /* a send and the receive it matches */
    EV_SEND_ONLY, /* a send without a matching receive */
    EV_RECV_ONLY, /* a receive without a matching send */
    EV_LOCAL,     /* COPY or REDUCE_LOCAL */
    EV_STEP_END
} ev_kind_t;

typedef struct event {
    ev_kind_t kind;
    uint32_t step, phase;
    uint32_t src, dst;        /* transfer ranks; local op: both the rank */
    const ccs_op_t *send;     /* EV_XFER, EV_SEND_ONLY */
    const ccs_op_t *recv;     /* EV_XFER, EV_RECV_ONLY */
    const ccs_op_t *local;    /* EV_LOCAL */
} event_t;

typedef void (*event_fn)(const event_t *ev, void *ctx);

static bool is_recv(const ccs_op_t *op)
{
    return op->kind == CCS_OP_RECV || op->kind == CCS_OP_RECV_REDUCE;
}

/* Call fn for every event, step by step.  Per step: the transfers in
 * sender rank and op order, then receives nobody sends to, then local ops.
 * Only called on validated schedules (peers in range, ops sorted by step);
 * O(ops) plus, per send, a scan of its peer's ops in that step. */
static ccs_status_t walk_events(const ccs_sched_t *s, event_fn fn, void *ctx)
{
    uint32_t n = s->nranks;
    /* All four owned here, freed at cleanup. */
    uint32_t *pos = calloc(n, sizeof(*pos));     /* cursor per rank */
    uint32_t *begin = calloc(n, sizeof(*begin)); /* this step's ops */
    uint32_t *end = calloc(n, sizeof(*end));
    uint64_t *base = calloc(n, sizeof(*base));   /* rank's first flag */
    bool *matched = NULL;                        /* per op: was received */
    uint64_t total = 0;
    ccs_status_t st = CCS_OK;

    if (pos == NULL || begin == NULL || end == NULL || base == NULL) {
        st = CCS_ERR_NOMEM;
        goto cleanup;
    }
    for (uint32_t r = 0; r < n; r++) {
        base[r] = total;
        total += s->rank_nops[r];
    }
    matched = calloc(total ? total : 1, sizeof(*matched));
    if (matched == NULL) {
        st = CCS_ERR_NOMEM;
        goto cleanup;
    }
    for (uint32_t t = 0; t < s->nsteps; t++) {
        event_t ev = { EV_STEP, t, s->step_phase[t], 0, 0, NULL, NULL, NULL };

        fn(&ev, ctx);
        for (uint32_t r = 0; r < n; r++) {
            begin[r] = pos[r];
            while (pos[r] < s->rank_nops[r] &&
                   s->rank_ops[r][pos[r]].step == t)
                pos[r]++;
            end[r] = pos[r];
        }
        for (uint32_t r = 0; r < n; r++) {
            for (uint32_t i = begin[r]; i < end[r]; i++) {
                const ccs_op_t *op = &s->rank_ops[r][i];
                uint32_t p, k = 0;

                if (op->kind != CCS_OP_SEND)
                    continue;
                p = (uint32_t)op->peer;
                ev.kind = EV_SEND_ONLY;
                ev.src = r;
                ev.dst = p;
                ev.send = op;
                ev.recv = ev.local = NULL;
                for (uint32_t j = begin[r]; j < i; j++)
                    k += s->rank_ops[r][j].kind == CCS_OP_SEND &&
                         s->rank_ops[r][j].peer == op->peer;
                for (uint32_t j = begin[p]; j < end[p]; j++) {
                    const ccs_op_t *q = &s->rank_ops[p][j];
                    if (!is_recv(q) || (uint32_t)q->peer != r)
                        continue;
                    if (k-- == 0) {
                        ev.kind = EV_XFER;
                        ev.recv = q;
                        matched[base[p] + j] = true;
                        break;
                    }
                }
                fn(&ev, ctx);
            }
        }
        for (uint32_t r = 0; r < n; r++) {
            for (uint32_t i = begin[r]; i < end[r]; i++) {
                const ccs_op_t *op = &s->rank_ops[r][i];
                if (!is_recv(op) || matched[base[r] + i])
                    continue;
                ev.kind = EV_RECV_ONLY;
                ev.src = (uint32_t)op->peer;
                ev.dst = r;
                ev.send = ev.local = NULL;
                ev.recv = op;
                fn(&ev, ctx);
            }
        }
        for (uint32_t r = 0; r < n; r++) {
            for (uint32_t i = begin[r]; i < end[r]; i++) {
                const ccs_op_t *op = &s->rank_ops[r][i];
                if (op->kind != CCS_OP_COPY && op->kind != CCS_OP_REDUCE_LOCAL)
                    continue;
                ev.kind = EV_LOCAL;
                ev.src = ev.dst = r;
                ev.send = ev.recv = NULL;
                ev.local = op;
                fn(&ev, ctx);
            }
        }
        ev.kind = EV_STEP_END;
        ev.send = ev.recv = ev.local = NULL;
        fn(&ev, ctx);
    }

cleanup:
    free(pos);
    free(begin);
    free(end);
    free(base);
    free(matched);
    return st;
}

/* "out[3]" or "out[3..4]" (inclusive). */
static void fmt_range(char *buf, size_t len, unsigned b, uint32_t chunk,
                      uint32_t n)
{
    if (n == 1)
        snprintf(buf, len, "%s[%u]", ccs_buf_str((ccs_buf_t)b), chunk);
    else
        snprintf(buf, len, "%s[%u..%u]", ccs_buf_str((ccs_buf_t)b), chunk,
                 chunk + n - 1);
}

static bool ev_involves(const event_t *ev, int64_t rank)
{
    return rank < 0 || ev->src == rank || ev->dst == rank;
}

/* ---- text ---- */

typedef struct text_ctx {
    int64_t rank;   /* -1: all */
    bool any;       /* printed an event in the current step */
} text_ctx_t;

static void text_event(const event_t *ev, void *vctx)
{
    text_ctx_t *c = vctx;
    char a[64], b[64], o[64];

    switch (ev->kind) {
    case EV_STEP:
        printf("\nstep %u (phase %u)\n", ev->step, ev->phase);
        c->any = false;
        return;
    case EV_STEP_END:
        if (!c->any)
            printf("  (idle)\n");
        return;
    default:
        break;
    }
    if (!ev_involves(ev, c->rank))
        return;
    c->any = true;
    if (ev->kind == EV_LOCAL) {
        const ccs_op_t *op = ev->local;
        fmt_range(a, sizeof(a), op->src_buf, op->src_chunk, op->nchunks);
        fmt_range(b, sizeof(b), op->buf, op->chunk, op->nchunks);
        printf("  r%u local  %s => %s (%s)\n", ev->src, a, b,
               op->kind == CCS_OP_COPY ? "copy" : "reduce");
        return;
    }
    if (ev->send != NULL)
        fmt_range(a, sizeof(a), ev->send->buf, ev->send->chunk,
                  ev->send->nchunks);
    else
        snprintf(a, sizeof(a), "?");
    if (ev->recv != NULL)
        fmt_range(b, sizeof(b), ev->recv->buf, ev->recv->chunk,
                  ev->recv->nchunks);
    else
        snprintf(b, sizeof(b), "?");
    printf("  r%u -> r%u  %s => %s", ev->src, ev->dst, a, b);
    if (ev->kind == EV_SEND_ONLY) {
        printf(" (no matching receive)\n");
    } else if (ev->kind == EV_RECV_ONLY) {
        printf(" (no matching send)\n");
    } else if (ev->recv->kind == CCS_OP_RECV_REDUCE) {
        const ccs_op_t *r = ev->recv;
        if (r->src_buf == r->buf && r->src_chunk == r->chunk) {
            printf(" (reduce)\n");
        } else {
            fmt_range(o, sizeof(o), r->src_buf, r->src_chunk, r->nchunks);
            printf(" (reduce with %s)\n", o);
        }
    } else {
        printf("\n");
    }
    if (ev->kind == EV_XFER && ev->send->nchunks != ev->recv->nchunks)
        printf("           (size mismatch: %u chunks sent, %u received)\n",
               ev->send->nchunks, ev->recv->nchunks);
}

static ccs_status_t print_text(const ccs_sched_t *s, int64_t rank)
{
    text_ctx_t c = { rank, false };

    printf("collective   %s\n", ccs_coll_str(s->coll));
    printf("algorithm    %s\n", s->algo[0] ? s->algo : "(none)");
    printf("ranks        %u\n", s->nranks);
    printf("chunks       %u\n", s->nchunks);
    printf("scratch      %u chunk%s per rank\n", s->nscratch,
           s->nscratch == 1 ? "" : "s");
    printf("steps        %u\n", s->nsteps);
    printf("phases       %u\n", s->nphases);
    if (s->straggler >= 0)
        printf("straggler    r%d\n", s->straggler);
    else
        printf("straggler    none\n");
    if (s->root >= 0)
        printf("root         r%d\n", s->root);
    else
        printf("root         none\n");
    printf("fingerprint  0x%016" PRIx64 "%s\n", s->topo_fingerprint,
           s->topo_fingerprint == 0 ? " (none)" : "");
    printf("ops          %" PRIu64 "\n", ccs_sched_total_ops(s));
    if (s->params == NULL || s->params[0] == '\0') {
        printf("params       %s\n", s->params == NULL ? "(none)" : "(empty)");
    } else {
        const char *lead = "params       ";
        for (const char *p = s->params; *p != '\0';) {
            const char *nl = strchr(p, '\n');
            size_t n = nl ? (size_t)(nl - p) : strlen(p);

            /* The text comes from the file: control bytes are shown as
             * \xHH, never sent to the terminal. */
            fputs(lead, stdout);
            for (size_t i = 0; i < n; i++) {
                unsigned char ch = (unsigned char)p[i];
                if (ch < 0x20 || ch == 0x7f)
                    printf("\\x%02x", ch);
                else
                    putchar(ch);
            }
            putchar('\n');
            lead = "             ";
            p += n + (nl ? 1 : 0);
        }
    }
    if (rank >= 0)
        printf("showing      rank %" PRId64 " only\n", rank);
    return walk_events(s, text_event, &c);
}

/* ---- JSON (docs/json.md) ---- */

/* "key=value\n" lines as a JSON object; a line without '=' is a key with
 * an empty value; empty lines are skipped. */
static void json_params(FILE *f, const char *params)
{
    bool first = true;

    fputc('{', f);
    for (const char *p = params; p != NULL && *p != '\0';) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        const char *eq = memchr(p, '=', n);
        if (n > 0) {
            size_t klen = eq ? (size_t)(eq - p) : n;
            fputs(first ? "" : ", ", f);
            json_strn(f, p, klen);
            fputs(": ", f);
            if (eq != NULL)
                json_strn(f, eq + 1, n - klen - 1);
            else
                json_strn(f, "", 0);
            first = false;
        }
        p += n + (nl ? 1 : 0);
    }
    fputc('}', f);
}

static void json_op(FILE *f, uint32_t rank, const ccs_op_t *op)
{
    fprintf(f, "{\"rank\": %u, \"kind\": \"%s\", \"peer\": %d, "
            "\"buffer\": \"%s\", \"chunk\": %u, \"nchunks\": %u", rank,
            ccs_op_kind_str((ccs_op_kind_t)op->kind), op->peer,
            ccs_buf_str((ccs_buf_t)op->buf), op->chunk, op->nchunks);
    if (op->kind == CCS_OP_RECV_REDUCE || op->kind == CCS_OP_COPY ||
        op->kind == CCS_OP_REDUCE_LOCAL)
        fprintf(f, ", \"src_buffer\": \"%s\", \"src_chunk\": %u",
                ccs_buf_str((ccs_buf_t)op->src_buf), op->src_chunk);
    fputc('}', f);
}

static ccs_status_t print_json(const ccs_sched_t *s, int64_t rank)
{
    FILE *f = stdout;
    uint32_t *pos = calloc(s->nranks, sizeof(*pos)); /* freed below */

    if (pos == NULL)
        return CCS_ERR_NOMEM;
    fprintf(f, "{\n  \"format\": \"ccsynth-schedule\",\n");
    fprintf(f, "  \"collective\": \"%s\",\n", ccs_coll_str(s->coll));
    fprintf(f, "  \"algorithm\": ");
    json_strn(f, s->algo, strlen(s->algo));
    fprintf(f, ",\n  \"nranks\": %u,\n  \"nchunks\": %u,\n"
            "  \"nscratch\": %u,\n  \"nsteps\": %u,\n  \"nphases\": %u,\n"
            "  \"straggler\": %d,\n  \"root\": %d,\n"
            "  \"fingerprint\": \"0x%016" PRIx64 "\",\n"
            "  \"nops\": %" PRIu64 ",\n",
            s->nranks, s->nchunks, s->nscratch, s->nsteps, s->nphases,
            s->straggler, s->root, s->topo_fingerprint,
            ccs_sched_total_ops(s));
    if (rank >= 0)
        fprintf(f, "  \"only_rank\": %" PRId64 ",\n", rank);
    fprintf(f, "  \"params\": ");
    json_params(f, s->params);
    fprintf(f, ",\n  \"params_text\": ");
    if (s->params != NULL)
        json_strn(f, s->params, strlen(s->params));
    else
        fputs("null", f);
    fprintf(f, ",\n  \"steps\": [");
    for (uint32_t t = 0; t < s->nsteps; t++) {
        bool first = true;
        fprintf(f, "%s\n    {\"step\": %u, \"phase\": %u, \"ops\": [",
                t ? "," : "", t, s->step_phase[t]);
        for (uint32_t r = 0; r < s->nranks; r++) {
            for (; pos[r] < s->rank_nops[r] &&
                   s->rank_ops[r][pos[r]].step == t; pos[r]++) {
                if (rank >= 0 && r != rank)
                    continue;
                fputs(first ? "\n      " : ",\n      ", f);
                json_op(f, r, &s->rank_ops[r][pos[r]]);
                first = false;
            }
        }
        fputs(first ? "]}" : "\n    ]}", f);
    }
    fprintf(f, "%s]\n}\n", s->nsteps ? "\n  " : "");
    free(pos);
    return CCS_OK;
}

/* ---- Graphviz ---- */

/* Colour-blind-friendly enough and distinct on white; phase p uses
 * palette[p % 8]. */
static const struct { const char *rgb, *name; } palette[8] = {
    { "#1f77b4", "blue" },   { "#d62728", "red" },
    { "#2ca02c", "green" },  { "#9467bd", "purple" },
    { "#ff7f0e", "orange" }, { "#8c564b", "brown" },
    { "#e377c2", "pink" },   { "#17becf", "cyan" },
};

/* Inside a DOT double-quoted string: the algorithm name comes from the
 * file and may hold any byte but NUL. */
static void dot_str(const char *s)
{
    for (; *s != '\0'; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            printf("\\%c", ch);
        else if (ch < 0x20 || ch >= 0x7f)
            putchar('?');
        else
            putchar(ch);
    }
}

typedef struct dot_ctx {
    int64_t rank;
    uint64_t edges;
} dot_ctx_t;

static void dot_event(const event_t *ev, void *vctx)
{
    dot_ctx_t *c = vctx;
    const ccs_op_t *x;
    const char *col;

    if (ev->kind != EV_XFER && ev->kind != EV_SEND_ONLY &&
        ev->kind != EV_RECV_ONLY)
        return;
    if (!ev_involves(ev, c->rank))
        return;
    x = ev->send != NULL ? ev->send : ev->recv;
    col = palette[ev->phase % 8].rgb;
    printf("  r%u -> r%u [label=\"s%u:c%u", ev->src, ev->dst, ev->step,
           x->chunk);
    if (x->nchunks > 1)
        printf("+%u", x->nchunks);
    printf("\", color=\"%s\", fontcolor=\"%s\"", col, col);
    if (ev->recv != NULL && ev->recv->kind == CCS_OP_RECV_REDUCE)
        printf(", style=bold");
    if (ev->kind != EV_XFER)
        printf(", style=dashed, xlabel=\"unmatched\"");
    printf("];\n");
    c->edges++;
}

/* A MultiTree schedule drawn as its trees (mtree_from_sched): true when
 * they were drawn; otherwise a comment says why and the caller draws the
 * transfers. */
static bool print_trees(const ccs_sched_t *s, ccs_status_t *st)
{
    mtree_t *m = NULL;          /* owned here */
    ccs_err_t err = { { 0 } };

    *st = mtree_from_sched(s, &m, &err);
    if (*st != CCS_OK) {
        printf("// trees not drawn (%s); one edge per transfer instead\n",
               ccs_err_msg(&err, *st));
        *st = CCS_OK;
        return false;
    }
    printf("// ccsynth show --dot: multitree %s, %u ranks, %u steps: one "
           "tree per rank, read back from the transfers; edge label = "
           "all-gather step t (the reduce-scatter sends child to parent in "
           "its transfer step T - t + 1)\n", ccs_coll_str(s->coll),
           s->nranks, s->nsteps);
    *st = mtree_write_dot(m, NULL, stdout);
    mtree_destroy(m);
    return true;
}

static ccs_status_t print_dot(const ccs_sched_t *s, int64_t rank)
{
    dot_ctx_t c = { rank, 0 };
    ccs_status_t st;

    if (rank < 0 && strcmp(s->algo, "multitree") == 0 &&
        print_trees(s, &st))
        return st;

    printf("// ccsynth show --dot: ");
    dot_str(s->algo);
    printf(" %s, %u ranks, %u steps, %u phase%s\n", ccs_coll_str(s->coll),
           s->nranks, s->nsteps, s->nphases, s->nphases == 1 ? "" : "s");
    if (s->nranks > 16)
        printf("// large: %u ranks and one edge per transfer make a dense "
               "drawing; 'ccsynth show --dot --rank R' draws one rank's "
               "transfers\n", s->nranks);
    printf("digraph ccs {\n");
    /* circo puts the ranks on a circle: rings and trees read well and
     * parallel edges between a pair stay apart. */
    printf("  graph [layout=circo, fontname=\"Helvetica\", labelloc=t, "
           "mindist=2.2, label=\"");
    dot_str(s->algo);
    printf(" %s: %u ranks, %u steps", ccs_coll_str(s->coll), s->nranks,
           s->nsteps);
    if (rank >= 0)
        printf(", rank %" PRId64 " only", rank);
    printf("\\nedge label s<step>:c<chunk>[+nchunks]; bold = reducing "
           "receive; colour = phase:");
    for (uint32_t p = 0; p < s->nphases && p < 8; p++)
        printf(" %u %s", p, palette[p].name);
    if (s->nphases > 8)
        printf(" (colours repeat)");
    printf("\"];\n");
    printf("  node [shape=circle, style=filled, fillcolor=\"#f2f2f2\", "
           "fontname=\"Helvetica\"];\n");
    printf("  edge [fontname=\"Helvetica\", fontsize=9, arrowsize=0.6];\n");
    for (uint32_t r = 0; r < s->nranks; r++) {
        bool strag = s->straggler == (int32_t)r, root = s->root == (int32_t)r;
        printf("  r%u [label=\"r%u%s%s\"", r, r,
               strag ? "\\nstraggler" : "", root ? "\\nroot" : "");
        if (strag)
            printf(", fillcolor=\"#ffd27f\"");
        if (root)
            printf(", shape=doublecircle");
        printf("];\n");
    }
    st = walk_events(s, dot_event, &c);
    printf("  // %" PRIu64 " transfer%s drawn\n}\n", c.edges,
           c.edges == 1 ? "" : "s");
    return st;
}

/* ---- command ---- */

int cmd_show(int argc, char **argv)
{
    static const opt_id_t ids[] = {
        OPT_JSON, OPT_DOT, OPT_QUIET, OPT_RANK, OPT_END
    };
    static const opt_cmd_t spec = { "show", ids, show_usage, 1 };
    const char *cmd = "show";
    cli_opts_t co;
    ccs_sched_t *s = NULL;
    ccs_status_t st;
    bool json, dot;
    int64_t rank = -1;
    long v;
    int rc;

    rc = opt_parse(&spec, argc, argv, &co);
    if (rc != CLI_EXIT_OK || co.help)
        return rc;
    json = co.out.fmt == OPT_FMT_JSON;
    dot = co.out.fmt == OPT_FMT_DOT;
    if (co.own[OPT_RANK] != NULL) {
        if (!units_parse_int(co.own[OPT_RANK], 0, CCS_MAX_RANKS - 1, &v))
            return cli_fail(cmd, CLI_EXIT_USAGE, "bad --rank '%s' (a rank "
                            ">= 0)", co.own[OPT_RANK]);
        rank = v;
    }
    if (co.nargs < 1)
        return cli_fail(cmd, CLI_EXIT_USAGE, "a .ccs file is required "
                        "(ccsynth show --help)");
    rc = cli_read_sched(cmd, co.args[0], &s);
    if (rc != CLI_EXIT_OK)
        return rc;
    if (rank >= (int64_t)s->nranks) {
        rc = cli_fail(cmd, CLI_EXIT_USAGE, "--rank %" PRId64 " out of range: "
                      "%s has %u ranks", rank, co.args[0], s->nranks);
        goto cleanup;
    }
    if (json)
        st = print_json(s, rank);
    else if (dot)
        st = print_dot(s, rank);
    else
        st = print_text(s, rank);
    if (st != CCS_OK) {
        rc = cli_fail(cmd, CLI_EXIT_INTERNAL, "%s", ccs_strerror(st));
        goto cleanup;
    }
    if (fflush(stdout) != 0 || ferror(stdout))
        rc = cli_fail(cmd, CLI_EXIT_INTERNAL, "error writing the output");

cleanup:
    ccs_sched_destroy(s);
    return rc;
}
