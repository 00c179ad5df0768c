/* tap.h -- a tiny TAP producer for the project's C unit tests.
 *
 * Header only (static inline functions), so a test is one .c file plus the
 * code under test, and prove(1) can run the resulting binary directly:
 *
 *     #include "tap.h"
 *     int main(void) {
 *         ok(1 + 1 == 2, "addition works");
 *         is_int(strlen("ab"), 2, "strlen of %s", "\"ab\"");
 *         return done_testing();
 *     }
 *
 * plan(n) is optional: without it done_testing() prints the "1..N" plan
 * at the end. done_testing()'s result is the exit status: 0 when every
 * test passed and the plan (if any) was met, non-zero otherwise. Test
 * output goes to stdout, diagnostics to stderr, as Test::More does. */

#ifndef ADSERVE_TAP_H
#define ADSERVE_TAP_H

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#if defined(__GNUC__)
#define TAP_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define TAP_PRINTF(f, a)
#endif

static int tap_run = 0;
static int tap_failed = 0;
static int tap_planned = -1;

static inline void plan(int n) {
    tap_planned = n;
    printf("1..%d\n", n);
    fflush(stdout);
}

TAP_PRINTF(1, 2) static inline void diag(const char *fmt, ...) {
    va_list ap;

    fflush(stdout);
    fputs("# ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fflush(stderr);
}

/* Core of every assertion; returns cond so callers can add diagnostics. */
static inline int tap_vok(int cond, const char *fmt, va_list ap) {
    tap_run++;
    if (!cond) tap_failed++;
    printf("%sok %d - ", cond ? "" : "not ", tap_run);
    vprintf(fmt, ap);
    putchar('\n');
    fflush(stdout);
    return cond;
}

TAP_PRINTF(2, 3) static inline int ok(int cond, const char *fmt, ...) {
    va_list ap;
    int r;

    va_start(ap, fmt);
    r = tap_vok(cond, fmt, ap);
    va_end(ap);
    return r;
}

TAP_PRINTF(3, 4)
static inline int is_int(long long got, long long expected, const char *fmt, ...) {
    va_list ap;
    int r;

    va_start(ap, fmt);
    r = tap_vok(got == expected, fmt, ap);
    va_end(ap);
    if (!r) diag("     got: %lld\n#     expected: %lld", got, expected);
    return r;
}

/* Prints len bytes of p for a diagnostic, escaping what is not printable. */
static inline void tap_dump(const char *label, const char *p, size_t len) {
    size_t i;

    fprintf(stderr, "# %10s: ", label);
    if (p == NULL) {
        fputs("NULL\n", stderr);
        return;
    }
    fputc('"', stderr);
    for (i = 0; i < len; i++) {
        unsigned char c = (unsigned char)p[i];
        if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') fputc(c, stderr);
        else fprintf(stderr, "\\x%02x", c);
    }
    fputs("\"\n", stderr);
}

/* Compares two byte ranges; NULL only equals NULL. */
static inline int tap_vis_mem(const char *got, size_t got_len, const char *expected,
    size_t exp_len, const char *fmt, va_list ap)
{
    int same;

    if (got == NULL || expected == NULL)
        same = got == expected;
    else
        same = got_len == exp_len && memcmp(got, expected, got_len) == 0;
    if (!tap_vok(same, fmt, ap)) {
        fflush(stdout);
        tap_dump("got", got, got_len);
        tap_dump("expected", expected, exp_len);
        return 0;
    }
    return 1;
}

TAP_PRINTF(5, 6)
static inline int is_mem(const char *got, size_t got_len, const char *expected,
    size_t exp_len, const char *fmt, ...)
{
    va_list ap;
    int r;

    va_start(ap, fmt);
    r = tap_vis_mem(got, got_len, expected, exp_len, fmt, ap);
    va_end(ap);
    return r;
}

TAP_PRINTF(3, 4)
static inline int is_str(const char *got, const char *expected, const char *fmt, ...) {
    va_list ap;
    int r;

    va_start(ap, fmt);
    r = tap_vis_mem(got, got ? strlen(got) : 0,
        expected, expected ? strlen(expected) : 0, fmt, ap);
    va_end(ap);
    return r;
}

/* Ends the run: prints the plan if none was given and returns the exit
 * status (number of failures, capped like Test::More; 255 on a bad plan). */
static inline int done_testing(void) {
    if (tap_planned < 0) {
        printf("1..%d\n", tap_run);
    } else if (tap_planned != tap_run) {
        diag("planned %d tests but ran %d", tap_planned, tap_run);
        return 255;
    }
    fflush(stdout);
    if (tap_failed) diag("failed %d of %d tests", tap_failed, tap_run);
    return tap_failed > 254 ? 254 : tap_failed;
}

#endif
