/* Strings a unit test makes and keeps until its end: fmt() formats one,
 * keep() registers a malloc'd one, free_kept() frees them all. */
#ifndef KEPT_H
#define KEPT_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "tap.h"

static char  **kept_pool;
static size_t kept_n, kept_cap;

static char *keep(char *p) {
    if (p == NULL) abort();
    if (kept_n == kept_cap) {
        kept_cap = kept_cap ? kept_cap * 2 : 1024;
        kept_pool = realloc(kept_pool, kept_cap * sizeof(char *));
        if (kept_pool == NULL) abort();
    }
    kept_pool[kept_n++] = p;
    return p;
}

static char *fmt(const char *f, ...) TAP_PRINTF(1, 2);
static char *fmt(const char *f, ...) {
    va_list ap;
    int n;
    char *p;

    va_start(ap, f);
    n = vsnprintf(NULL, 0, f, ap);
    va_end(ap);
    p = keep(malloc((size_t) n + 1));
    va_start(ap, f);
    vsnprintf(p, (size_t) n + 1, f, ap);
    va_end(ap);
    return p;
}

static void free_kept(void) {
    while (kept_n) free(kept_pool[--kept_n]);
    free(kept_pool);
    kept_pool = NULL;
    kept_cap = 0;
}

#endif
