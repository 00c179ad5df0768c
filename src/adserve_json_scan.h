/* adserve_json_scan.h -- the strict scanner's core, shared by the documents
 * it reads (adserve_json.c: ad requests; adserve_rtb.c: OpenRTB bid
 * responses; adserve_fields.c: the records of the hot kinds). Internal to
 * those files: not an API of the engine.
 *
 * The core validates any RFC 8259 document whose top-level value is an
 * object, in one pass, without allocating, its recursion bounded by
 * ADSERVE_JSON_MAX_DEPTH. What a document means is its grammar's: which
 * keys of which objects it knows (a field each), and what to do with a
 * known field's value. Every other member is validated and skipped. */
#ifndef ADSERVE_JSON_SCAN_H
#define ADSERVE_JSON_SCAN_H

#include <stddef.h>

#include "adserve_json.h"

#define ADSERVE_JS_OK    0
#define ADSERVE_JS_ERR  -1

/* Object kinds and fields are the grammar's own small integers; 0 is
 * "an object no key of which is known" and "a value nothing reads". */
#define ADSERVE_JS_OTHER  0
#define ADSERVE_JS_NONE   0

/* Keys are decoded into a buffer this big: a longer key is not a known
 * one. Holds the longest name of every grammar ("frequency_caps"), and
 * one byte more: a key that ends at a NUL is told from a longer one. */
#define ADSERVE_JS_KEY_MAX  16

typedef struct adserve_js_scanner_s  adserve_js_scanner_t;

typedef struct {
    int          in;                /* the object kind it belongs to */
    const char  *name;
    size_t       len;
    int          f;                 /* its field */
} adserve_js_key_t;

typedef struct {
    const adserve_js_key_t  *keys;
    size_t                   nkeys;
    /* a known key seen again: clear what its earlier value set ("the
     * last one wins"), whatever the new value's type */
    void  (*reset)(adserve_js_scanner_t *s, int f);
    /* a string value of a known field, s->pos on its opening quote; it
     * must scan it (adserve_js_string_in_place, adserve_js_skip_string) */
    int   (*string)(adserve_js_scanner_t *s, int f);
    /* a number of a known field, validated: buf[start..s->pos); ival its
     * value when a plain non-negative integer (saturating), else -1 */
    void  (*number)(adserve_js_scanner_t *s, int f, size_t start, long ival);
    /* the kind of the object a field's value opens; may also make room for
     * what it will hold (a bid); ADSERVE_JS_OTHER to skip it */
    int   (*object)(adserve_js_scanner_t *s, int f);
    /* that object read whole, from start (NULL: nothing to do) */
    void  (*object_done)(adserve_js_scanner_t *s, int f, size_t start);
    /* the field of each element of an array a field holds (NULL: none) */
    int   (*element)(int f);
    /* NULL, or what decides the field of each key of an object of a known
     * kind instead of keys and reset: key holds the first min(len,
     * ADSERVE_JS_KEY_MAX) bytes of the decoded key, len its full length;
     * s->pos is on the value */
    int   (*key)(adserve_js_scanner_t *s, int in, const char *key, size_t len);
    /* NULL, or told of a true, false or null ('t', 'f', 'n') that a known
     * field holds */
    void  (*literal)(adserve_js_scanner_t *s, int f, int c);
    /* a number longer than this many bytes, anywhere, fails the scan (0:
     * no limit): cJSON refuses those, and a reader that must agree with it
     * does too */
    size_t       number_max;
} adserve_js_grammar_t;

struct adserve_js_scanner_s {
    char                        *buf;
    size_t                       len;
    size_t                       pos;
    const adserve_js_grammar_t  *g;
    void                        *out;       /* what the grammar fills */
    int                          slot;      /* the grammar's: a container's
                                             * index, or -1 when full */
    const char                  *err;
    size_t                       err_off;
};

/* Scans buf[0..len) as one document of grammar g filling out: 0, or -1
 * with s->err and s->err_off set (a static message, the fault's offset). */
int adserve_js_scan(adserve_js_scanner_t *s, char *buf, size_t len,
    const adserve_js_grammar_t *g, void *out);

/* A whole document read into out (size bytes, zeroed first): 0, or -1 with
 * out zeroed again and *err (when not NULL) the static message; on success
 * *err is NULL. What the readers of a document from outside share. */
int adserve_js_read(char *buf, size_t len, const adserve_js_grammar_t *g, void *out,
    size_t size, const char **err);

/* The string under s->pos, unescaped in place, kept in *out when at most
 * max bytes long (else left as it was). */
int adserve_js_string_in_place(adserve_js_scanner_t *s, adserve_str_t *out, size_t max);

/* The string under s->pos decoded into dst (cap bytes kept), its full
 * length in *len; dst NULL validates only. */
int adserve_js_string(adserve_js_scanner_t *s, char *dst, size_t cap, size_t *len);

#endif
