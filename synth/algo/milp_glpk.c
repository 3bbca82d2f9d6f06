/*
 * milp_glpk.c - GLPK behind a trap: every GLPK call of the MILP runs
 * under milp_glpk_call, so that GLPK's fatal errors (which abort the
 * process unless the error hook jumps away) come back as a status with
 * GLPK's own message.  Also the model as CPLEX LP text, and the LP
 * reader the tests use.
 */

#include <ctype.h>
#include <glpk.h>
#include <math.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "milp_int.h"

/* ---- GLPK's error hook ----
 *
 * GLPK reports a fatal error (a bad argument, an internal failure, no
 * memory) by printing a message and calling abort() unless its error hook
 * jumps away.  Every GLPK call of this module runs under milp_glpk_call:
 * the hook longjmps back to it, GLPK's message (captured through the
 * terminal hook, which GLPK switches on for it) becomes the status
 * message, and the GLPK environment is freed, as GLPK requires after such
 * a jump -- which frees every GLPK object of the thread, so the callee must
 * hold its GLPK objects where the caller can forget them (env_freed). */

typedef struct glpk_trap {
    jmp_buf jb;
    char msg[240];       /* GLPK's output while the error is reported */
    size_t len;
} glpk_trap_t;

static void trap_error(void *info)
{
    longjmp(((glpk_trap_t *)info)->jb, 1);
}

/* With terminal output off only an error reaches this hook (GLPK turns the
 * output on to report it).  Keep the text, print nothing. */
static int trap_term(void *info, const char *s)
{
    glpk_trap_t *tr = info;

    for (; *s != '\0' && tr->len + 1 < sizeof(tr->msg); s++)
        tr->msg[tr->len++] = *s == '\n' ? ' ' : *s;
    tr->msg[tr->len] = '\0';
    return 1;
}

ccs_status_t milp_glpk_call(milp_glpk_fn fn, void *arg, bool *env_freed,
                            ccs_err_t *err)
{
    /* On the heap: its value must survive the longjmp. */
    glpk_trap_t *tr = calloc(1, sizeof(*tr));    /* owned here */
    ccs_status_t st;
    int prev;

    *env_freed = false;
    if (tr == NULL)
        return ccs_err_set(err, CCS_ERR_NOMEM, "milp: out of memory");
    prev = glp_term_out(GLP_OFF);
    glp_term_hook(trap_term, tr);
    glp_error_hook(trap_error, tr);
    if (setjmp(tr->jb) == 0) {
        st = fn(arg, err);
        glp_error_hook(NULL, NULL);
        glp_term_hook(NULL, NULL);
    } else {
        /* GLPK's state is undefined now; its manual asks for this. */
        glp_free_env();
        *env_freed = true;
        while (tr->len > 0 && tr->msg[tr->len - 1] == ' ')
            tr->msg[--tr->len] = '\0';
        st = ccs_err_set(err, CCS_ERR_SOLVER, "milp: GLPK error: %s",
                         tr->msg);
    }
    glp_term_out(prev);
    free(tr);
    return st;
}

typedef struct read_lp_ctx {
    const char *path;
    glp_prob *lp;            /* owned, unless GLPK's environment was freed */
    int32_t rows, cols;
} read_lp_ctx_t;

static ccs_status_t read_lp_body(void *arg, ccs_err_t *err)
{
    read_lp_ctx_t *c = arg;

    c->lp = glp_create_prob();
    if (glp_read_lp(c->lp, NULL, c->path) != 0)
        return ccs_err_set(err, CCS_ERR_PARSE,
                           "milp: glp_read_lp could not read '%s'", c->path);
    c->rows = glp_get_num_rows(c->lp);
    c->cols = glp_get_num_cols(c->lp);
    return CCS_OK;
}

ccs_status_t milp_read_lp(const char *path, int32_t *rows, int32_t *cols,
                          ccs_err_t *err)
{
    read_lp_ctx_t c = { path, NULL, 0, 0 };
    bool freed = false;
    ccs_status_t st = milp_glpk_call(read_lp_body, &c, &freed, err);

    if (!freed && c.lp != NULL)
        glp_delete_prob(c.lp);
    if (st == CCS_OK) {
        *rows = c.rows;
        *cols = c.cols;
    }
    return st;
}

/* ---- the model as CPLEX LP text ----
 *
 * glp_write_lp only writes to a path; the model goes back to the caller
 * as text instead (the algorithm opens no files), written here in the
 * subset of CPLEX LP that glp_read_lp and glpsol read: one objective,
 * rows of type =, >= or <= (the only ones the models add), column bounds,
 * integer columns under Generals.  Names longer than GLPK's reader takes
 * (16 characters) or with characters it rejects become r_<i> / x_<j>, as
 * glp_write_lp does. */

#define LP_NAME_MAX 16
#define LP_TERMS_PER_LINE 4

static const char *lp_name(const char *name, char prefix, int i, char *buf,
                           size_t len)
{
    bool ok = name != NULL && name[0] != '\0' && strlen(name) <= LP_NAME_MAX &&
              !isdigit((unsigned char)name[0]) && name[0] != '.';

    for (const char *s = name; ok && *s != '\0'; s++)
        ok = isalnum((unsigned char)*s) ||
             strchr("!\"#$%&()/,.;?@_`'{}|~", *s) != NULL;
    if (ok)
        return name;
    snprintf(buf, len, "%c_%d", prefix, i);
    return buf;
}

static void lp_term(FILE *f, double coef, const char *name, int k)
{
    if (k > 0 && k % LP_TERMS_PER_LINE == 0)
        fputs("\n   ", f);
    fprintf(f, " %c %.15g %s", coef < 0 ? '-' : '+', fabs(coef), name);
}

static const char *col_name(glp_prob *lp, int j, char *buf, size_t len)
{
    return lp_name(glp_get_col_name(lp, j), 'x', j, buf, len);
}

ccs_status_t milp_lp_text(glp_prob *lp, char **out, ccs_err_t *err)
{
    char *text = NULL;          /* owned here until *out */
    size_t len = 0;
    FILE *f = open_memstream(&text, &len); /* owned here: a memory stream */
    int nr = glp_get_num_rows(lp), nc = glp_get_num_cols(lp), k = 0;
    int *ind = NULL;            /* owned here */
    double *val = NULL;         /* owned here */
    char nb[32];
    ccs_status_t st = CCS_OK;

    if (f == NULL)
        return ccs_err_set(err, CCS_ERR_NOMEM, "milp: out of memory");
    ind = malloc(((size_t)nc + 1) * sizeof(*ind));
    val = malloc(((size_t)nc + 1) * sizeof(*val));
    if (ind == NULL || val == NULL) {
        st = ccs_err_set(err, CCS_ERR_NOMEM, "milp: out of memory");
        goto cleanup;
    }
    fprintf(f, "\\* Problem: %s *\\\n\n%s\n obj:",
            glp_get_prob_name(lp) ? glp_get_prob_name(lp) : "milp",
            glp_get_obj_dir(lp) == GLP_MAX ? "Maximize" : "Minimize");
    for (int j = 1; j <= nc; j++) {
        double c = glp_get_obj_coef(lp, j);

        if (c != 0)
            lp_term(f, c, col_name(lp, j, nb, sizeof(nb)), k++);
    }
    if (k == 0 && nc > 0)
        fprintf(f, " 0 %s", col_name(lp, 1, nb, sizeof(nb)));
    fputs("\n\nSubject To\n", f);
    for (int i = 1; i <= nr; i++) {
        int n = glp_get_mat_row(lp, i, ind, val), type = glp_get_row_type(lp, i);
        char rb[32];

        if (type != GLP_FX && type != GLP_LO && type != GLP_UP) {
            st = ccs_err_set(err, CCS_ERR_INTERNAL,
                             "milp: row %d has a type the LP text does not "
                             "write", i);
            goto cleanup;
        }
        fprintf(f, " %s:", lp_name(glp_get_row_name(lp, i), 'r', i, rb,
                                   sizeof(rb)));
        for (int t = 1; t <= n; t++)
            lp_term(f, val[t], col_name(lp, ind[t], nb, sizeof(nb)), t - 1);
        fprintf(f, " %s %.15g\n",
                type == GLP_FX ? "=" : (type == GLP_LO ? ">=" : "<="),
                type == GLP_UP ? glp_get_row_ub(lp, i)
                               : glp_get_row_lb(lp, i));
    }
    /* LP's default bounds are 0 <= x < +inf. */
    fputs("\nBounds\n", f);
    for (int j = 1; j <= nc; j++) {
        const char *nm = col_name(lp, j, nb, sizeof(nb));
        double lo = glp_get_col_lb(lp, j), hi = glp_get_col_ub(lp, j);

        switch (glp_get_col_type(lp, j)) {
        case GLP_FR: fprintf(f, " %s free\n", nm); break;
        case GLP_LO:
            if (lo != 0)
                fprintf(f, " %s >= %.15g\n", nm, lo);
            break;
        case GLP_UP: fprintf(f, " -inf <= %s <= %.15g\n", nm, hi); break;
        case GLP_DB:
            fprintf(f, " %.15g <= %s <= %.15g\n", lo, nm, hi);
            break;
        default: fprintf(f, " %s = %.15g\n", nm, lo); break;
        }
    }
    if (glp_get_num_int(lp) > 0) {
        fputs("\nGenerals\n", f);
        for (int j = 1; j <= nc; j++)
            if (glp_get_col_kind(lp, j) != GLP_CV)
                fprintf(f, " %s\n", col_name(lp, j, nb, sizeof(nb)));
    }
    fputs("\nEnd\n", f);

cleanup:
    free(ind);
    free(val);
    if (fclose(f) != 0 && st == CCS_OK)
        st = ccs_err_set(err, CCS_ERR_NOMEM, "milp: out of memory");
    if (st != CCS_OK) {
        free(text);
        return st;
    }
    *out = text;
    return CCS_OK;
}
