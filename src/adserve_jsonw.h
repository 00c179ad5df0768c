/*
 * adserve_jsonw: JSON text written by the snapshot build, the ad objects of
 * the responses it renders once per creative.
 *
 * Strings are escaped exactly as cJSON prints them (the quote, the
 * backslash, \b \f \n \r \t, other control characters as \u00XX, every
 * other byte as is), and numbers printed as cJSON does, so the bytes a
 * client sees do not depend on which of the two wrote them. No cJSON tree
 * is made: rendering 200,000 creatives is one pass over their fields.
 *
 * Plain C, no nginx types. A writer that runs out of memory stays failed
 * (oom) and ignores what follows: check once, at the end.
 */

#ifndef ADSERVE_JSONW_H
#define ADSERVE_JSONW_H

#include <stddef.h>

typedef struct {
    char        *data;                /* malloc'd; NUL-terminated when !oom */
    size_t       len, cap;
    int          oom;
} adserve_jsonw_t;

void adserve_jsonw_init(adserve_jsonw_t *w);
/* bytes as they are: punctuation and member names the caller spells */
void adserve_jsonw_raw(adserve_jsonw_t *w, const char *s, size_t len);
/* n bytes escaped as in a JSON string, without the quotes; a byte keep
 * (not 0) and the byte after it are written as they are (the build's
 * splices, adserve_vast.h) */
void adserve_jsonw_esc(adserve_jsonw_t *w, const char *s, size_t n, int keep);
/* a JSON string, quoted and escaped; NULL writes null */
void adserve_jsonw_str(adserve_jsonw_t *w, const char *s);
/* a number as cJSON 1.7 prints it: %1.15g, or %1.17g when that is needed
 * to read it back the same (300 is 300, 1e15 is 1e+15, -0 is -0); NaN and
 * infinity as null */
void adserve_jsonw_num(adserve_jsonw_t *w, double v);
void adserve_jsonw_free(adserve_jsonw_t *w);

/* s must be a literal: "" s fails to compile for a pointer, whose sizeof
 * is not its length */
#define adserve_jsonw_lit(w, s)  adserve_jsonw_raw(w, "" s, sizeof(s) - 1)

#endif
