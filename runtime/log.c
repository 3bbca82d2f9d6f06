/*
 * log.c - CCS_DEBUG logging, in the manner of NCCL_DEBUG.
 *
 * CCS_DEBUG=WARN|INFO|TRACE (case-insensitive; unset or anything else:
 * quiet).  Lines go to stderr, one write each so lines of several threads
 * do not interleave.  The level is read where a plan or communicator is
 * created and kept in it; nothing here is global.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <sys/syscall.h>

#include "ccs_int.h"

int ccs_log_level_env(void)
{
    const char *v = getenv("CCS_DEBUG");

    if (v == NULL)
        return CCS_LOG_NONE;
    if (strcasecmp(v, "WARN") == 0)
        return CCS_LOG_WARN;
    if (strcasecmp(v, "INFO") == 0)
        return CCS_LOG_INFO;
    if (strcasecmp(v, "TRACE") == 0)
        return CCS_LOG_TRACE;
    return CCS_LOG_NONE;
}

void ccs_log_emit(int level, const char *subsys, int rank, const char *fmt,
                  ...)
{
    static const char *const names[] = { "NONE", "WARN", "INFO", "TRACE" };
    char host[64] = "?";
    char line[1024];
    char rk[24] = "";
    va_list ap;
    int n;

    gethostname(host, sizeof(host) - 1);
    host[sizeof(host) - 1] = '\0';
    if (rank >= 0)
        snprintf(rk, sizeof(rk), " [%d]", rank);
    n = snprintf(line, sizeof(line), "ccs %s:%d:%ld%s %s %s ", host,
                 (int)getpid(), (long)syscall(SYS_gettid), rk,
                 names[level < 0 || level > 3 ? 0 : level],
                 subsys ? subsys : "");
    if (n < 0 || (size_t)n >= sizeof(line))
        n = 0;
    va_start(ap, fmt);
    vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s\n", line);
}

double ccs_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
