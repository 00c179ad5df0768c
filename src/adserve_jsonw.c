#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adserve_jsonw.h"


void
adserve_jsonw_init(adserve_jsonw_t *w)
{
    memset(w, 0, sizeof(adserve_jsonw_t));
}


/* Room for n more bytes and the NUL; 0, or -1 (and oom for good). */
static int
reserve(adserve_jsonw_t *w, size_t n)
{
    size_t   cap;
    char    *p;

    if (w->oom) {
        return -1;
    }

    if (w->cap - w->len > n) {
        return 0;
    }

    cap = w->cap ? w->cap : 256;
    while (cap - w->len <= n) {
        if (cap > SIZE_MAX / 2) {
            w->oom = 1;
            return -1;
        }
        cap *= 2;
    }

    p = realloc(w->data, cap);
    if (p == NULL) {
        w->oom = 1;
        return -1;
    }

    w->data = p;
    w->cap = cap;

    return 0;
}


void
adserve_jsonw_raw(adserve_jsonw_t *w, const char *s, size_t len)
{
    if (reserve(w, len) == 0) {
        memcpy(w->data + w->len, s, len);
        w->len += len;
        w->data[w->len] = '\0';
    }
}


void
adserve_jsonw_esc(adserve_jsonw_t *w, const char *s, size_t n, int keep)
{
    static const char   hex[] = "0123456789abcdef";
    const unsigned char *p, *end;
    char                *o;

    /* at most 6 bytes a byte (\u00XX) */
    if (n > SIZE_MAX / 6 - 1 || reserve(w, n * 6) != 0) {
        w->oom = 1;
        return;
    }

    o = w->data + w->len;

    for (p = (const unsigned char *) s, end = p + n; p < end; p++) {
        if (keep && *p == keep && p + 1 < end) {
            *o++ = (char) *p++;         /* a splice: its kind byte follows */
            *o++ = (char) *p;
            continue;
        }

        switch (*p) {
        case '"':  *o++ = '\\'; *o++ = '"'; break;
        case '\\': *o++ = '\\'; *o++ = '\\'; break;
        case '\b': *o++ = '\\'; *o++ = 'b'; break;
        case '\f': *o++ = '\\'; *o++ = 'f'; break;
        case '\n': *o++ = '\\'; *o++ = 'n'; break;
        case '\r': *o++ = '\\'; *o++ = 'r'; break;
        case '\t': *o++ = '\\'; *o++ = 't'; break;
        default:
            if (*p < 32) {
                memcpy(o, "\\u00", 4);
                o[4] = hex[*p >> 4];
                o[5] = hex[*p & 15];
                o += 6;
            } else {
                *o++ = (char) *p;
            }
        }
    }

    w->len = (size_t) (o - w->data);
    w->data[w->len] = '\0';
}


void
adserve_jsonw_str(adserve_jsonw_t *w, const char *s)
{
    if (s == NULL) {
        adserve_jsonw_lit(w, "null");
        return;
    }

    adserve_jsonw_lit(w, "\"");
    adserve_jsonw_esc(w, s, strlen(s), 0);
    adserve_jsonw_lit(w, "\"");
}


/* v's decimal digits into buf (room for 21), NUL-terminated; the length */
static int
fmt_int(char *buf, int64_t v)
{
    char      tmp[20];
    uint64_t  u = v < 0 ? (uint64_t) 0 - (uint64_t) v : (uint64_t) v;
    int       n = 0, len = 0;

    do {
        tmp[n++] = (char) ('0' + u % 10);
        u /= 10;
    } while (u != 0);

    if (v < 0) {
        buf[len++] = '-';
    }

    while (n > 0) {
        buf[len++] = tmp[--n];
    }

    buf[len] = '\0';

    return len;
}


void
adserve_jsonw_num(adserve_jsonw_t *w, double v)
{
    char    buf[32];
    double  back;
    int     n;

    if (isnan(v) || isinf(v)) {
        n = snprintf(buf, sizeof(buf), "null");

    } else if (fabs(v) < 1e15 && v == (double) (int64_t) v && !(v == 0 && signbit(v))) {
        /* the bound first: casting a double out of int64_t's range is
         * undefined (a record's "w": 6.4e116 found it) */
        /* what %1.15g prints of an integer under 10^15, without printf's
         * floating point (a creative's w and h, at 200,000 creatives) */
        n = fmt_int(buf, (int64_t) v);

    } else {
        n = snprintf(buf, sizeof(buf), "%1.15g", v);
        /* cJSON keeps 15 digits when they read back within an epsilon
         * (its compare_double), not only when exactly */
        if (sscanf(buf, "%lg", &back) != 1
            || fabs(back - v) > fmax(fabs(back), fabs(v)) * DBL_EPSILON)
        {
            n = snprintf(buf, sizeof(buf), "%1.17g", v);
        }
    }

    if (n > 0 && (size_t) n < sizeof(buf)) {
        adserve_jsonw_raw(w, buf, (size_t) n);

    } else {
        w->oom = 1;
    }
}


void
adserve_jsonw_free(adserve_jsonw_t *w)
{
    free(w->data);
    adserve_jsonw_init(w);
}
