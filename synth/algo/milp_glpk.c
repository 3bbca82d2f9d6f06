/*
 * milp_glpk.c - GLPK behind a trap: every GLPK call of the MILP runs
 * under milp_glpk_call, so that GLPK's fatal errors (which abort the
 * process unless the error hook jumps away) come back as a status with
 * GLPK's own message.  Also the LP reader the tests use.
 */

#include <glpk.h>
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
