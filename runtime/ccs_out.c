/* ccs_out.c - atomic (or written-through) output files; see ccs_out.h. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ccs_out.h"

struct ccs_out {
    char *target;   /* owned; where the data ends up (a symlink resolved) */
    char *tmp;      /* owned; the temporary file; NULL when written through */
    FILE *f;        /* owned; the stream over the open file */
    bool through;   /* writing straight into a non-regular target */
};

static void out_free(ccs_out_t *o)
{
    if (o == NULL)
        return;
    if (o->f != NULL)
        fclose(o->f);
    if (o->tmp != NULL)
        unlink(o->tmp);
    free(o->tmp);
    free(o->target);
    free(o);
}

/* fsync the directory holding `path` so that the rename is durable.
 * Best effort: the new file is already in place and complete, and some file
 * systems refuse fsync on a directory. */
static void sync_parent_dir(const char *path)
{
    const char *slash = strrchr(path, '/');
    char *dir;
    size_t n;
    int fd;

    if (slash == NULL) {
        dir = strdup(".");
    } else {
        n = slash == path ? 1 : (size_t)(slash - path);
        dir = malloc(n + 1);
        if (dir != NULL) {
            memcpy(dir, path, n);
            dir[n] = '\0';
        }
    }
    if (dir == NULL)
        return;
    fd = open(dir, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
    free(dir);
}

ccs_status_t ccs_out_open(const char *path, ccs_out_t **out, ccs_err_t *err)
{
    static const char suffix[] = ".tmp.XXXXXX";
    ccs_out_t *o = NULL;   /* handed to *out on success */
    struct stat sb, lsb;
    ccs_status_t st = CCS_OK;
    int fd = -1;

    if (path == NULL || path[0] == '\0' || out == NULL)
        return ccs_err_set(err, CCS_ERR_INVALID, "no output path");
    o = calloc(1, sizeof(*o));
    if (o == NULL)
        return ccs_err_set(err, CCS_ERR_NOMEM, "out of memory");
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) {
        st = ccs_err_set(err, CCS_ERR_IO, "%s: is a directory", path);
        goto fail;
    }
    if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode)) {
        /* A device, FIFO or socket (or a link to one): write through. */
        o->through = true;
        o->target = strdup(path);
        if (o->target == NULL)
            goto nomem;
        fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0) {
            st = ccs_err_set(err, CCS_ERR_IO, "%s: cannot open for writing: "
                             "%s", path, strerror(errno));
            goto fail;
        }
    } else {
        if (lstat(path, &lsb) == 0 && S_ISLNK(lsb.st_mode)) {
            /* Replace the file the link names, not the link. */
            o->target = realpath(path, NULL);
        } else {
            o->target = strdup(path);
        }
        if (o->target == NULL)
            goto nomem;
        /* Same directory as the target, so that rename() is atomic. */
        o->tmp = malloc(strlen(o->target) + sizeof(suffix));
        if (o->tmp == NULL)
            goto nomem;
        strcpy(o->tmp, o->target);
        strcat(o->tmp, suffix);
        fd = mkstemp(o->tmp);
        if (fd < 0) {
            st = ccs_err_set(err, CCS_ERR_IO, "%s: cannot create a temporary "
                             "file beside it: %s", path, strerror(errno));
            free(o->tmp);
            o->tmp = NULL;   /* nothing was created: nothing to remove */
            goto fail;
        }
        /* mkstemp makes the file 0600; outputs are meant to be shared. */
        if (fchmod(fd, 0644) != 0) {
            st = ccs_err_set(err, CCS_ERR_IO, "%s: chmod failed: %s", o->tmp,
                             strerror(errno));
            close(fd);
            goto fail;
        }
    }
    o->f = fdopen(fd, "w");
    if (o->f == NULL) {
        st = ccs_err_set(err, CCS_ERR_IO, "%s: %s", path, strerror(errno));
        close(fd);
        goto fail;
    }
    *out = o;
    return CCS_OK;
nomem:
    st = ccs_err_set(err, CCS_ERR_NOMEM, "out of memory");
fail:
    out_free(o);
    return st;
}

FILE *ccs_out_stream(ccs_out_t *o)
{
    return o ? o->f : NULL;
}

const char *ccs_out_path(const ccs_out_t *o)
{
    if (o == NULL)
        return NULL;
    return o->through ? o->target : o->tmp;
}

ccs_status_t ccs_out_commit(ccs_out_t *o, ccs_err_t *err)
{
    ccs_status_t st = CCS_OK;
    const char *name;
    int e = 0;

    if (o == NULL)
        return ccs_err_set(err, CCS_ERR_INVALID, "no output file");
    name = o->target;
    if (fflush(o->f) != 0 || ferror(o->f))
        e = errno ? errno : EIO;
    /* Devices and pipes may refuse fsync; their data is already out. */
    if (e == 0 && !o->through && fsync(fileno(o->f)) != 0)
        e = errno;
    if (fclose(o->f) != 0 && e == 0)
        e = errno;
    o->f = NULL;
    if (e != 0) {
        st = ccs_err_set(err, CCS_ERR_IO, "%s: write failed: %s", name,
                         strerror(e));
        goto cleanup;
    }
    if (!o->through) {
        if (rename(o->tmp, o->target) != 0) {
            st = ccs_err_set(err, CCS_ERR_IO, "cannot rename %s to %s: %s",
                             o->tmp, o->target, strerror(errno));
            goto cleanup;
        }
        free(o->tmp);
        o->tmp = NULL;   /* renamed: nothing to remove */
        sync_parent_dir(o->target);
    }
cleanup:
    out_free(o);
    return st;
}

void ccs_out_abort(ccs_out_t *o)
{
    out_free(o);
}

ccs_status_t ccs_out_write_all(const char *path, const void *data,
                               size_t len, ccs_err_t *err)
{
    ccs_out_t *o = NULL;   /* committed or aborted here */
    ccs_status_t st;

    st = ccs_out_open(path, &o, err);
    if (st != CCS_OK)
        return st;
    if (len > 0 && fwrite(data, 1, len, ccs_out_stream(o)) != len) {
        st = ccs_err_set(err, CCS_ERR_IO, "%s: write failed: %s", path,
                         strerror(errno));
        ccs_out_abort(o);
        return st;
    }
    return ccs_out_commit(o, err);
}
