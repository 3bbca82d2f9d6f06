/*
 * harness.h - a tiny table-driven test harness (header only).
 *
 *   TEST(name) { CHECK(cond); CHECK_EQ_INT(a, b); CHECK_STATUS(st, CCS_OK); }
 *   int main(void) { RUN(name); ...; return TEST_SUMMARY(); }
 *
 * Every failed check prints file:line and both sides; the summary line is
 * "<prog>: N passed, N failed" (one per test function), which
 * scripts/run-tests.sh adds up.
 */
#ifndef CCS_TEST_HARNESS_H
#define CCS_TEST_HARNESS_H

#include <stdio.h>
#include <string.h>

static int harness_passed, harness_failed, harness_cur_failed;
static const char *harness_cur_name = "";

#define TEST(name) static void name(void)

#define RUN(name)                                                           \
    do {                                                                    \
        harness_cur_failed = 0;                                             \
        harness_cur_name = #name;                                           \
        name();                                                             \
        if (harness_cur_failed)                                             \
            harness_failed++;                                               \
        else                                                                \
            harness_passed++;                                               \
    } while (0)

#define FAIL_AT(...)                                                        \
    do {                                                                    \
        fprintf(stderr, "%s:%d: %s: ", __FILE__, __LINE__, harness_cur_name); \
        fprintf(stderr, __VA_ARGS__);                                       \
        fputc('\n', stderr);                                                \
        harness_cur_failed++;                                               \
    } while (0)

#define CHECK(cond)                                                         \
    do {                                                                    \
        if (!(cond))                                                        \
            FAIL_AT("CHECK(%s) failed", #cond);                             \
    } while (0)

#define CHECK_MSG(cond, ...)                                                \
    do {                                                                    \
        if (!(cond))                                                        \
            FAIL_AT(__VA_ARGS__);                                           \
    } while (0)

#define CHECK_EQ_INT(a, b)                                                  \
    do {                                                                    \
        long long a_ = (long long)(a), b_ = (long long)(b);                 \
        if (a_ != b_)                                                       \
            FAIL_AT("%s == %s failed: %lld != %lld", #a, #b, a_, b_);       \
    } while (0)

#define CHECK_NEAR(a, b, rel)                                               \
    do {                                                                    \
        double a_ = (double)(a), b_ = (double)(b);                          \
        double d_ = a_ > b_ ? a_ - b_ : b_ - a_;                            \
        double m_ = (a_ > 0 ? a_ : -a_) > (b_ > 0 ? b_ : -b_)               \
                        ? (a_ > 0 ? a_ : -a_) : (b_ > 0 ? b_ : -b_);        \
        if (d_ > (rel) * m_)                                                \
            FAIL_AT("%s ~= %s failed: %.12g vs %.12g (rel %.3g)", #a, #b,   \
                    a_, b_, m_ > 0 ? d_ / m_ : d_);                         \
    } while (0)

#define CHECK_STR_CONTAINS(hay, needle)                                     \
    do {                                                                    \
        const char *h_ = (hay), *n_ = (needle);                             \
        if (h_ == NULL || strstr(h_, n_) == NULL)                           \
            FAIL_AT("'%s' does not contain '%s'", h_ ? h_ : "(null)", n_);  \
    } while (0)

#define CHECK_STATUS(st, want)                                              \
    do {                                                                    \
        int s_ = (int)(st), w_ = (int)(want);                               \
        if (s_ != w_)                                                       \
            FAIL_AT("%s: status %d (%s), want %d (%s)", #st, s_,            \
                    ccs_status_name((ccs_status_t)s_), w_,                  \
                    ccs_status_name((ccs_status_t)w_));                     \
    } while (0)

#define TEST_SUMMARY()                                                      \
    (printf("%s: %d passed, %d failed\n", __FILE__, harness_passed,         \
            harness_failed),                                                \
     harness_failed ? 1 : 0)

#endif /* CCS_TEST_HARNESS_H */
