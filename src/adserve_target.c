/*
 * Line item targeting: compiled at snapshot build, evaluated per request.
 * See adserve_target.h for the semantics.
 */

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "adserve_target.h"
#include "adserve_contract.h"


/* an interned string: in the arena, NUL-terminated, shared by every rule */
struct adserve_tstr_s {
    const char     *s;
    uint32_t        len;
    uint32_t        hash;
};

/* where a comparison's key is looked up: the request's ext.kv, or the
 * catalog item a content filter judges */
enum { SRC_REQUEST = 0, SRC_ITEM, SRC_COUNT };

/* kv node types: and, or, not, then the comparisons */
enum {
    OP_AND = 0, OP_OR, OP_NOT,
    OP_EQ, OP_NE, OP_LT, OP_LE, OP_GT, OP_GE, OP_IN, OP_NIN, OP_INTERSECTS
};

/* One node of a kv Expr, in prefix order: the children of and / or / not
 * follow it, and end is the index past its whole subtree. */
typedef struct {
    uint8_t         op;
    uint8_t         src;              /* comparisons: SRC_REQUEST, SRC_ITEM */
    uint32_t        end;
    adserve_tstr_t  key;              /* comparisons: the key name */
    uint32_t        str_first, nstrs; /* rhs strings, sorted (len, bytes) */
    uint32_t        num_first, nnums; /* rhs numbers, sorted */
} tnode_t;

typedef struct {
    uint16_t        start, end;       /* minutes of the day, [start, end) */
} minutes_t;

struct adserve_target_s {
    uint16_t         types;           /* 1 << adserve_device_type_e; 0: any */
    uint16_t         oses;            /* 1 << adserve_os_e; 0: any */
    uint16_t         browsers;        /* 1 << adserve_browser_e; 0: any */
    uint8_t          genders;         /* M 1, F 2, O 4; 0: any */
    uint8_t          has_yob;
    uint8_t          has_dayparts;
    uint8_t          reads_request;   /* a content filter reads ext.kv */
    int16_t          yob_min, yob_max;
    uint16_t         day[8];          /* weekday d: ranges[day[d] .. day[d + 1]) */
    const minutes_t *ranges;
    const tnode_t   *kv;              /* NULL: no kv rule */
    const adserve_tstr_t *strs;
    const double    *nums;
    uint16_t         nseg_in;         /* segments.include: the user is in one */
    uint16_t         nseg_out;        /* segments.exclude: in none */
    const adserve_tstr_t *segs;       /* include, then exclude */
    const uint64_t  *seg_hashes;      /* adserve_hash of each */
};


/* scratch slots of the builder */
enum { S_NODES = 0, S_STRS, S_NUMS, S_RANGES };

typedef struct {
    uint8_t         day;
    uint16_t        start, end;
} day_range_t;


/* ---- the user agent ---------------------------------------------------- */

/* the substrings looked for, one bit each */
enum {
    T_SMARTTV, T_SMART_TV, T_CRKEY, T_ROKU, T_APPLETV, T_APPLE_TV, T_GOOGLETV,
    T_BRAVIA, T_HBBTV, T_WEB0S,
    T_IPAD, T_TABLET, T_KINDLE, T_SILK,
    T_MOBI, T_IPHONE, T_IPOD, T_ANDROID,
    T_WINDOWS_NT, T_WINDOWS, T_MACINTOSH, T_MAC_OS_X, T_X11, T_CROS, T_LINUX, T_TIZEN,
    T_EDG, T_OPR, T_OPERA, T_SAMSUNG, T_YABROWSER, T_UCBROWSER,
    T_FIREFOX, T_FXIOS, T_CHROME, T_CRIOS, T_CHROMIUM, T_SAFARI
};

#define TOK(t)  ((uint64_t) 1 << (t))

typedef struct {
    uint64_t        any;              /* one of these present, */
    uint64_t        none;             /* none of these present */
    uint8_t         value;
} ua_rule_t;

/* First matching rule wins; no rule: "other". The README copies these. */
static const ua_rule_t  type_rules[] = {
    { TOK(T_SMARTTV) | TOK(T_SMART_TV) | TOK(T_CRKEY) | TOK(T_ROKU) | TOK(T_APPLETV)
      | TOK(T_APPLE_TV) | TOK(T_GOOGLETV) | TOK(T_BRAVIA) | TOK(T_HBBTV) | TOK(T_WEB0S),
      0, ADSERVE_DEVICE_CTV },
    { TOK(T_IPAD) | TOK(T_TABLET) | TOK(T_KINDLE) | TOK(T_SILK), 0, ADSERVE_DEVICE_TABLET },
    { TOK(T_ANDROID), TOK(T_MOBI), ADSERVE_DEVICE_TABLET },
    { TOK(T_MOBI) | TOK(T_IPHONE) | TOK(T_IPOD) | TOK(T_ANDROID), 0, ADSERVE_DEVICE_MOBILE },
    { TOK(T_WINDOWS_NT) | TOK(T_MACINTOSH) | TOK(T_X11) | TOK(T_CROS), 0, ADSERVE_DEVICE_DESKTOP },
};

static const ua_rule_t  os_rules[] = {
    { TOK(T_IPHONE) | TOK(T_IPAD) | TOK(T_IPOD), 0, ADSERVE_OS_IOS },
    { TOK(T_ANDROID), 0, ADSERVE_OS_ANDROID },
    { TOK(T_WINDOWS), 0, ADSERVE_OS_WINDOWS },
    { TOK(T_MACINTOSH) | TOK(T_MAC_OS_X), 0, ADSERVE_OS_MACOS },
    { TOK(T_LINUX) | TOK(T_X11) | TOK(T_CROS) | TOK(T_TIZEN), 0, ADSERVE_OS_LINUX },
};

/* Edge and the other Chromium browsers name Chrome too, and nearly every
 * browser names Safari: the specific ones come first. */
static const ua_rule_t  browser_rules[] = {
    { TOK(T_EDG), 0, ADSERVE_BROWSER_EDGE },
    { TOK(T_OPR) | TOK(T_OPERA) | TOK(T_SAMSUNG) | TOK(T_YABROWSER) | TOK(T_UCBROWSER) | TOK(T_SILK),
      0, ADSERVE_BROWSER_OTHER },
    { TOK(T_FIREFOX) | TOK(T_FXIOS), 0, ADSERVE_BROWSER_FIREFOX },
    { TOK(T_CHROME) | TOK(T_CRIOS) | TOK(T_CHROMIUM), 0, ADSERVE_BROWSER_CHROME },
    { TOK(T_SAFARI), 0, ADSERVE_BROWSER_SAFARI },
};

static uint8_t
ua_rule(const ua_rule_t *r, size_t n, uint64_t found, uint8_t other)
{
    size_t  i;

    for (i = 0; i < n; i++) {
        if ((found & r[i].any) && !(found & r[i].none)) {
            return r[i].value;
        }
    }

    return other;
}


/* the bytes that start a substring of the switch below: the others are
 * skipped four instructions each (nearly every byte of a user agent) */
static const unsigned char  ua_starts[256] = {
    ['A'] = 1, ['B'] = 1, ['C'] = 1, ['E'] = 1, ['F'] = 1, ['G'] = 1, ['H'] = 1,
    ['K'] = 1, ['L'] = 1, ['M'] = 1, ['O'] = 1, ['R'] = 1, ['S'] = 1, ['T'] = 1,
    ['U'] = 1, ['W'] = 1, ['X'] = 1, ['Y'] = 1, ['i'] = 1,
};


void
adserve_ua_classify(const char *ua, size_t len, adserve_device_t *d)
{
    const char  *p, *end;
    uint64_t     found = 0;
    size_t       rest;

    /* the second byte first: it rules out nearly every other candidate */
#define TRY(lit, t)                                                          \
    if (rest >= sizeof(lit) - 1 && p[1] == (lit)[1]                          \
        && memcmp(p + 2, &(lit)[2], sizeof(lit) - 3) == 0)                   \
    {                                                                        \
        found |= TOK(t);                                                     \
    }

    /* one pass: each byte selects the few substrings that start with it */
    for (p = ua, end = ua ? ua + len : NULL; p < end; p++) {
        if (!ua_starts[(unsigned char) *p]) {
            continue;
        }

        rest = (size_t) (end - p);

        switch (*p) {
        case 'A': TRY("Android", T_ANDROID) TRY("AppleTV", T_APPLETV)
                  TRY("Apple TV", T_APPLE_TV) break;
        case 'B': TRY("BRAVIA", T_BRAVIA) break;
        case 'C': TRY("Chrome/", T_CHROME) TRY("CriOS/", T_CRIOS) TRY("CrKey", T_CRKEY)
                  TRY("CrOS", T_CROS) TRY("Chromium/", T_CHROMIUM) break;
        case 'E': TRY("Edg", T_EDG) break;
        case 'F': TRY("Firefox/", T_FIREFOX) TRY("FxiOS/", T_FXIOS) break;
        case 'G': TRY("GoogleTV", T_GOOGLETV) break;
        case 'H': TRY("HbbTV", T_HBBTV) break;
        case 'K': TRY("Kindle", T_KINDLE) break;
        case 'L': TRY("Linux", T_LINUX) break;
        case 'M': TRY("Mobi", T_MOBI) TRY("Macintosh", T_MACINTOSH)
                  TRY("Mac OS X", T_MAC_OS_X) break;
        case 'O': TRY("OPR/", T_OPR) TRY("Opera", T_OPERA) break;
        case 'R': TRY("Roku", T_ROKU) break;
        case 'S': TRY("Safari/", T_SAFARI) TRY("SmartTV", T_SMARTTV)
                  TRY("SMART-TV", T_SMART_TV) TRY("Silk", T_SILK)
                  TRY("SamsungBrowser/", T_SAMSUNG) break;
        case 'T': TRY("Tablet", T_TABLET) TRY("Tizen", T_TIZEN) break;
        case 'U': TRY("UCBrowser/", T_UCBROWSER) break;
        case 'W': TRY("Windows", T_WINDOWS) TRY("Windows NT", T_WINDOWS_NT)
                  TRY("Web0S", T_WEB0S) break;
        case 'X': TRY("X11", T_X11) break;
        case 'Y': TRY("YaBrowser/", T_YABROWSER) break;
        case 'i': TRY("iPhone", T_IPHONE) TRY("iPad", T_IPAD) TRY("iPod", T_IPOD) break;
        default: break;
        }
    }

#undef TRY

    d->type = ua_rule(type_rules, sizeof(type_rules) / sizeof(type_rules[0]), found,
                      ADSERVE_DEVICE_OTHER);
    d->os = ua_rule(os_rules, sizeof(os_rules) / sizeof(os_rules[0]), found,
                    ADSERVE_OS_OTHER);
    d->browser = ua_rule(browser_rules, sizeof(browser_rules) / sizeof(browser_rules[0]),
                         found, ADSERVE_BROWSER_OTHER);
}


/* ---- ext.kv -------------------------------------------------------------- */

typedef struct {
    char           *p;
    char           *end;
} cur_t;

static int
is_ws(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static int
is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static void
skip_ws(cur_t *c)
{
    while (c->p < c->end && is_ws(*c->p)) {
        c->p++;
    }
}


static int
hex4(const char *p)
{
    int  i, v = 0, h;

    for (i = 0; i < 4; i++) {
        h = p[i];
        h = (h >= '0' && h <= '9') ? h - '0'
            : (h >= 'a' && h <= 'f') ? h - 'a' + 10
            : (h >= 'A' && h <= 'F') ? h - 'A' + 10 : -1;
        if (h < 0) {
            return -1;
        }
        v = v << 4 | h;
    }

    return v;
}


static char *
put_utf8(char *w, unsigned long cp)
{
    if (cp < 0x80) {
        *w++ = (char) cp;
    } else if (cp < 0x800) {
        *w++ = (char) (0xC0 | (cp >> 6));
        *w++ = (char) (0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        *w++ = (char) (0xE0 | (cp >> 12));
        *w++ = (char) (0x80 | ((cp >> 6) & 0x3F));
        *w++ = (char) (0x80 | (cp & 0x3F));
    } else {
        *w++ = (char) (0xF0 | (cp >> 18));
        *w++ = (char) (0x80 | ((cp >> 12) & 0x3F));
        *w++ = (char) (0x80 | ((cp >> 6) & 0x3F));
        *w++ = (char) (0x80 | (cp & 0x3F));
    }

    return w;
}


/* The string at c->p (its opening quote), unescaped in place: *s, *len.
 * Its decoded form is never longer, and each byte is read before the
 * write position reaches it. -1 when it is not a well-formed string. */
static int
read_string(cur_t *c, char **s, uint32_t *len)
{
    char  *r, *w, *start;
    long   cp, lo;

    if (c->p >= c->end || *c->p != '"') {
        return -1;
    }

    start = c->p + 1;

    for (r = start; r < c->end && *r != '"' && *r != '\\'; r++) {
        /* the usual case: nothing to unescape, nothing written */
    }

    for (w = r; r < c->end && *r != '"'; ) {
        if (*r != '\\') {
            *w++ = *r++;
            continue;
        }

        if (c->end - r < 2) {
            return -1;
        }

        switch (r[1]) {
        case '"': case '\\': case '/': *w++ = r[1]; r += 2; continue;
        case 'b': *w++ = '\b'; r += 2; continue;
        case 'f': *w++ = '\f'; r += 2; continue;
        case 'n': *w++ = '\n'; r += 2; continue;
        case 'r': *w++ = '\r'; r += 2; continue;
        case 't': *w++ = '\t'; r += 2; continue;
        case 'u': break;
        default: return -1;
        }

        if (c->end - r < 6 || (cp = hex4(r + 2)) < 0) {
            return -1;
        }
        r += 6;

        if (cp >= 0xD800 && cp <= 0xDBFF) {
            if (c->end - r < 6 || r[0] != '\\' || r[1] != 'u'
                || (lo = hex4(r + 2)) < 0xDC00 || lo > 0xDFFF)
            {
                return -1;
            }
            r += 6;
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);

        } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
            return -1;
        }

        w = put_utf8(w, (unsigned long) cp);
    }

    if (r >= c->end) {
        return -1;
    }

    *s = start;
    *len = (uint32_t) (w - start);
    c->p = r + 1;

    return 0;
}


/* Skips a string without touching it. */
static int
skip_string(cur_t *c)
{
    char  *r;

    for (r = c->p + 1; r < c->end && *r != '"'; r++) {
        if (*r == '\\') {
            r++;
        }
    }

    if (r >= c->end) {
        return -1;
    }

    c->p = r + 1;

    return 0;
}


static int
is_delim(char ch)
{
    return is_ws(ch) || ch == ',' || ch == ':' || ch == ']' || ch == '}' || ch == '"'
           || ch == '[' || ch == '{';
}


/* Skips one value of any kind, without recursion. */
static int
skip_value(cur_t *c)
{
    unsigned  depth = 0;
    char      ch;

    for (;;) {
        skip_ws(c);
        if (c->p >= c->end) {
            return -1;
        }

        ch = *c->p;

        if (ch == '{' || ch == '[') {
            depth++;
            c->p++;
            continue;
        }

        if (ch == ',' || ch == ':') {
            if (depth == 0) {
                return -1;
            }
            c->p++;
            continue;
        }

        if (ch == '}' || ch == ']') {
            if (depth == 0) {
                return -1;
            }
            depth--;
            c->p++;

        } else if (ch == '"') {
            if (skip_string(c) != 0) {
                return -1;
            }

        } else {
            while (c->p < c->end && !is_delim(*c->p)) {
                c->p++;
            }
        }

        if (depth == 0) {
            return 0;
        }
    }
}


/* The value of s[0..len) if it is a number in JSON's grammar, else NaN.
 * Short plain decimals are converted exactly here (one correctly rounded
 * division), so they equal what cJSON read for the rule; the rest go to
 * strtod (nginx never sets a locale, so the decimal point is '.'). A
 * number of 64 bytes or more is not one. */
static double
kv_number(const char *s, size_t len)
{
    static const double  pow10[] = {
        1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13,
        1e14, 1e15
    };
    size_t    i = 0;
    uint64_t  m = 0;
    unsigned  digits = 0, frac = 0;
    int       neg = 0, simple = 1;
    char      buf[64];
    double    v;

    if (i < len && s[i] == '-') {
        neg = 1;
        i++;
    }

    if (i < len && s[i] == '0') {
        i++;
        digits++;

    } else if (i < len && s[i] >= '1' && s[i] <= '9') {
        for (; i < len && is_digit(s[i]); i++, digits++) {
            m = digits < 19 ? m * 10 + (uint64_t) (s[i] - '0') : m;
        }

    } else {
        return NAN;
    }

    if (i < len && s[i] == '.') {
        if (++i >= len || !is_digit(s[i])) {
            return NAN;
        }
        for (; i < len && is_digit(s[i]); i++, digits++, frac++) {
            m = digits < 19 ? m * 10 + (uint64_t) (s[i] - '0') : m;
        }
    }

    if (i < len && (s[i] == 'e' || s[i] == 'E')) {
        simple = 0;
        if (++i < len && (s[i] == '+' || s[i] == '-')) {
            i++;
        }
        if (i >= len || !is_digit(s[i])) {
            return NAN;
        }
        while (i < len && is_digit(s[i])) {
            i++;
        }
    }

    if (i != len) {
        return NAN;
    }

    if (simple && digits <= 15) {
        v = frac ? (double) m / pow10[frac] : (double) m;
        return neg ? -v : v;
    }

    if (len >= sizeof(buf)) {
        return NAN;
    }

    memcpy(buf, s, len);
    buf[len] = '\0';

    return strtod(buf, NULL);
}


/* One value for key k (NULL: ignored); non-scalars are skipped. */
static int
kv_value(cur_t *c, adserve_kv_t *kv, adserve_kv_key_t *k)
{
    adserve_kv_value_t  *v;
    char                *s;
    uint32_t             len;

    if (k == NULL || k->n >= ADSERVE_KV_MAX_VALUES) {
        return skip_value(c);
    }

    if (c->p < c->end && *c->p == '"') {
        if (read_string(c, &s, &len) != 0) {
            return -1;
        }

    } else if (c->p < c->end && (*c->p == '-' || is_digit(*c->p))) {
        s = c->p;
        while (c->p < c->end && !is_delim(*c->p)) {
            c->p++;
        }
        len = (uint32_t) (c->p - s);

    } else {
        return skip_value(c);
    }

    v = &kv->values[k->first + k->n++];
    v->off = (uint32_t) (s - kv->base);
    v->len = len;
    v->num = kv_number(s, len);
    kv->nvalues++;

    return 0;
}


static int
kv_member(cur_t *c, adserve_kv_t *kv)
{
    adserve_kv_key_t  *k = NULL;
    char              *name;
    uint32_t           len;

    if (kv->nkeys < ADSERVE_KV_MAX_KEYS) {
        if (read_string(c, &name, &len) != 0) {
            return -1;
        }
        k = &kv->keys[kv->nkeys];
        k->off = (uint32_t) (name - kv->base);
        k->len = len;
        k->first = (uint16_t) kv->nvalues;
        k->n = 0;

    } else if (c->p >= c->end || *c->p != '"' || skip_string(c) != 0) {
        return -1;
    }

    skip_ws(c);
    if (c->p >= c->end || *c->p != ':') {
        return -1;
    }
    c->p++;
    skip_ws(c);

    if (c->p < c->end && *c->p == '[') {
        for (c->p++; ; ) {
            skip_ws(c);
            if (c->p >= c->end) {
                return -1;
            }
            if (*c->p == ']') {
                c->p++;
                break;
            }
            if (*c->p == ',') {
                c->p++;
                continue;
            }
            if (kv_value(c, kv, k) != 0) {
                return -1;
            }
        }

    } else if (kv_value(c, kv, k) != 0) {
        return -1;
    }

    /* a key with no usable value is as good as absent */
    if (k != NULL && k->n > 0) {
        kv->nkeys++;
    }

    return 0;
}


void
adserve_kv_parse(char *span, size_t len, adserve_kv_t *kv)
{
    cur_t  c;

    kv->base = span;
    kv->nkeys = 0;
    kv->nvalues = 0;

    /* offsets are 32-bit; a request is 16 KiB at most anyway */
    if (span == NULL || len > UINT32_MAX) {
        return;
    }

    c.p = span;
    c.end = span + len;

    skip_ws(&c);
    if (c.p >= c.end || *c.p != '{') {
        return;
    }
    c.p++;

    for (;;) {
        skip_ws(&c);
        if (c.p >= c.end || *c.p == '}') {
            return;
        }
        if (*c.p == ',') {
            c.p++;
            continue;
        }
        if (kv_member(&c, kv) != 0) {
            return;
        }
    }
}


/* The key name in a set of named values, or NULL; from the end: the last
 * of duplicate keys wins. */
static const adserve_kv_key_t *
attrs_find(const adserve_attrs_t *a, const char *name, size_t len)
{
    uint32_t  i;

    for (i = a->nkeys; i-- > 0; ) {
        if (a->keys[i].len == len && memcmp(a->base + a->keys[i].off, name, len) == 0) {
            return &a->keys[i];
        }
    }

    return NULL;
}


static adserve_attrs_t
kv_attrs(const adserve_kv_t *kv)
{
    return (adserve_attrs_t) { kv->base, kv->keys, kv->values, kv->nkeys };
}


const adserve_kv_key_t *
adserve_kv_find(const adserve_kv_t *kv, const char *name, size_t len)
{
    adserve_attrs_t  a = kv_attrs(kv);

    return attrs_find(&a, name, len);
}


/* ---- a catalog item's attributes ------------------------------------------ */

/* One value of an attribute: its text and its number (NaN: none). A
 * number's text is cJSON's printing of it; 0 when v is no usable value. */
static int
attr_value(const cJSON *v, char *num_text, size_t num_len, const char **text,
    size_t *len, double *num)
{
    *num = NAN;

    if (cJSON_IsString(v)) {
        *text = v->valuestring;
        *len = strnlen(v->valuestring, ADSERVE_ITEM_ATTR_TEXT_MAX + 1);
        if (*len > ADSERVE_ITEM_ATTR_TEXT_MAX) {
            return 0;
        }
        *num = kv_number(*text, *len);
        return 1;
    }

    if (cJSON_IsBool(v)) {
        *text = cJSON_IsTrue(v) ? "true" : "false";
        *len = strlen(*text);
        return 1;
    }

    if (cJSON_IsNumber(v) && isfinite(v->valuedouble)
        && cJSON_PrintPreallocated((cJSON *) v, num_text, (int) num_len, 0))
    {
        *text = num_text;
        *len = strlen(num_text);
        *num = v->valuedouble;
        return 1;
    }

    return 0;
}


int
adserve_attrs_read(const cJSON *attributes, adserve_attrs_alloc_pt alloc, void *ctx,
    adserve_attrs_t *out)
{
    adserve_kv_key_t    *keys;
    adserve_kv_value_t  *values;
    const cJSON         *m, *v;
    char                *base, num_text[64];
    const char          *text;
    size_t               bytes = 0, at = 0, len, nkeys = 0, nvalues = 0, n;
    double               num;
    int                  k;

    memset(out, 0, sizeof(adserve_attrs_t));

    /* first the room: the members and values the API's bounds keep */
    k = 0;
    cJSON_ArrayForEach(m, attributes) {
        if (k++ == ADSERVE_ITEM_ATTRIBUTES_MAX || m->string == NULL) {
            break;
        }
        bytes += strlen(m->string);
        n = 0;
        for (v = cJSON_IsArray(m) ? m->child : m; v != NULL && n < ADSERVE_ITEM_ATTR_VALUES_MAX;
             v = cJSON_IsArray(m) ? v->next : NULL)
        {
            if (attr_value(v, num_text, sizeof(num_text), &text, &len, &num)) {
                bytes += len;
                n++;
            }
        }
        nvalues += n;
        nkeys++;
    }

    if (nkeys == 0) {
        return 0;
    }

    keys = alloc(ctx, nkeys * sizeof(adserve_kv_key_t));
    values = alloc(ctx, nvalues * sizeof(adserve_kv_value_t));
    base = alloc(ctx, bytes + 1);
    if (keys == NULL || (nvalues && values == NULL) || base == NULL) {
        return -1;
    }

    out->base = base;
    out->keys = keys;
    out->values = values;

    k = 0;
    cJSON_ArrayForEach(m, attributes) {
        if (k++ == (int) nkeys) {
            break;
        }

        keys[out->nkeys].off = (uint32_t) at;
        keys[out->nkeys].len = (uint32_t) strlen(m->string);
        keys[out->nkeys].first = (uint16_t) (values - out->values);
        keys[out->nkeys].n = 0;
        memcpy(base + at, m->string, keys[out->nkeys].len);
        at += keys[out->nkeys].len;

        for (v = cJSON_IsArray(m) ? m->child : m; v != NULL;
             v = cJSON_IsArray(m) ? v->next : NULL)
        {
            if (keys[out->nkeys].n == ADSERVE_ITEM_ATTR_VALUES_MAX
                || !attr_value(v, num_text, sizeof(num_text), &text, &len, &num))
            {
                continue;
            }
            values->off = (uint32_t) at;
            values->len = (uint32_t) len;
            values->num = num;
            memcpy(base + at, text, len);
            at += len;
            values++;
            keys[out->nkeys].n++;
        }

        if (keys[out->nkeys].n > 0) {
            out->nkeys++;             /* a key left with no value is absent */
        }
    }

    return 0;
}


/* ---- evaluation ---------------------------------------------------------- */

static int
str_cmp(const adserve_tstr_t *a, const char *s, uint32_t len)
{
    if (a->len != len) {
        return a->len < len ? -1 : 1;
    }

    return memcmp(a->s, s, len);
}


static int
has_str(const adserve_tstr_t *v, uint32_t n, const char *s, uint32_t len)
{
    uint32_t  lo = 0, hi = n, mid;
    int       c;

    while (lo < hi) {
        mid = lo + (hi - lo) / 2;
        c = str_cmp(&v[mid], s, len);
        if (c == 0) {
            return 1;
        }
        if (c < 0) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }

    return 0;
}


static int
has_num(const double *v, uint32_t n, double x)
{
    uint32_t  lo = 0, hi = n, mid;

    while (lo < hi) {
        mid = lo + (hi - lo) / 2;
        if (v[mid] == x) {
            return 1;
        }
        if (v[mid] < x) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }

    return 0;
}


static int
eval_cmp(const adserve_target_t *t, const tnode_t *n, const adserve_attrs_t *src)
{
    const adserve_attrs_t     *kv = &src[n->src];
    const adserve_kv_key_t    *k;
    const adserve_kv_value_t  *v, *end;
    /* a rule without strings or without numbers has no table of them:
     * NULL plus an offset, even 0, is undefined */
    const adserve_tstr_t      *strs = t->strs ? t->strs + n->str_first : NULL;
    const double              *nums = t->nums ? t->nums + n->num_first : NULL;
    double                     rhs;
    int                        any = 0;

    k = attrs_find(kv, n->key.s, n->key.len);
    if (k == NULL) {
        return 0;                    /* an absent key: every cmp is false */
    }

    v = kv->values + k->first;
    end = v + k->n;

    if (n->op >= OP_LT && n->op <= OP_GE) {
        rhs = nums[0];

        /* NaN (not a number) compares false */
        for (; v < end; v++) {
            if ((n->op == OP_LT && v->num < rhs) || (n->op == OP_LE && v->num <= rhs)
                || (n->op == OP_GT && v->num > rhs) || (n->op == OP_GE && v->num >= rhs))
            {
                return 1;
            }
        }

        return 0;
    }

    for (; v < end && !any; v++) {
        any = (n->nstrs && has_str(strs, n->nstrs, kv->base + v->off, v->len))
              || (n->nnums && v->num == v->num && has_num(nums, n->nnums, v->num));
    }

    return (n->op == OP_NE || n->op == OP_NIN) ? !any : any;
}


/* depth is bounded by the compiler (ADSERVE_KV_MAX_DEPTH) */
static int
eval(const adserve_target_t *t, uint32_t i, const adserve_attrs_t *src)
{
    const tnode_t  *n = &t->kv[i];
    uint32_t        j;

    switch (n->op) {
    case OP_AND:
        for (j = i + 1; j < n->end; j = t->kv[j].end) {
            if (!eval(t, j, src)) {
                return 0;
            }
        }
        return 1;

    case OP_OR:
        for (j = i + 1; j < n->end; j = t->kv[j].end) {
            if (eval(t, j, src)) {
                return 1;
            }
        }
        return 0;

    case OP_NOT:
        return !eval(t, i + 1, src);

    default:
        return eval_cmp(t, n, src);
    }
}


/* the request's ext.kv, parsed when a rule first reads it */
static void
req_kv(adserve_req_ctx_t *ctx)
{
    const adserve_ad_request_t  *req = ctx->req;

    if (!(ctx->have & ADSERVE_HAVE_KV)) {
        /* the scanner's buffer is writable (adserve_req_ctx_init) */
        adserve_kv_parse(req ? (char *) req->kv.data : NULL, req ? req->kv.len : 0, &ctx->kv);
        ctx->have |= ADSERVE_HAVE_KV;
    }
}


/* Whether the user is in one of the n segments (their hashes). */
static int
in_segments(const adserve_req_ctx_t *ctx, const uint64_t *hashes, uint32_t n)
{
    uint32_t  i, j;

    for (i = 0; i < n; i++) {
        for (j = 0; j < ctx->nsegments; j++) {
            if (ctx->segments[j] == hashes[i]) {
                return 1;
            }
        }
    }

    return 0;
}


static int
match(const adserve_target_t *t, adserve_req_ctx_t *ctx, int64_t now)
{
    const adserve_ad_request_t  *req = ctx->req;
    adserve_attrs_t              src[SRC_COUNT] = { { NULL, NULL, NULL, 0 },
                                                    { NULL, NULL, NULL, 0 } };
    const minutes_t             *r, *end;
    int64_t                      days, sec;
    int                          yob = req ? req->yob : 0;
    char                         g = req ? req->gender : 0;

    /* cheapest first: the user, the clock, the user agent, then kv */
    if (t->has_yob && (yob == 0 || yob < t->yob_min || yob > t->yob_max)) {
        return 0;
    }

    if (t->genders
        && !(t->genders & (g == 'M' ? 1 : g == 'F' ? 2 : g == 'O' ? 4 : 0)))
    {
        return 0;
    }

    if (t->nseg_in + t->nseg_out) {
        /* membership unknown (not read in time): targeted demand waits */
        if (!ctx->segments_known
            || (t->nseg_in && !in_segments(ctx, t->seg_hashes, t->nseg_in))
            || (t->nseg_out && in_segments(ctx, t->seg_hashes + t->nseg_in, t->nseg_out)))
        {
            return 0;
        }
    }

    if (t->has_dayparts) {
        if (!(ctx->have & ADSERVE_HAVE_TIME) || ctx->time_of != now) {
            days = now / 86400;
            sec = now % 86400;
            if (sec < 0) {
                sec += 86400;
                days--;
            }
            /* 1970-01-01 was a Thursday (3, Monday being 0) */
            ctx->weekday = (uint8_t) ((days % 7 + 7 + 3) % 7);
            ctx->minute = (uint16_t) (sec / 60);
            ctx->time_of = now;
            ctx->have |= ADSERVE_HAVE_TIME;
        }

        r = t->ranges + t->day[ctx->weekday];
        end = t->ranges + t->day[ctx->weekday + 1];
        while (r < end && !(ctx->minute >= r->start && ctx->minute < r->end)) {
            r++;
        }
        if (r == end) {
            return 0;
        }
    }

    if (t->types | t->oses | t->browsers) {
        if (!(ctx->have & ADSERVE_HAVE_DEVICE)) {
            adserve_ua_classify(req ? req->ua.data : NULL, req ? req->ua.len : 0,
                                &ctx->device);
            ctx->have |= ADSERVE_HAVE_DEVICE;
        }

        if ((t->types && !(t->types & (1u << ctx->device.type)))
            || (t->oses && !(t->oses & (1u << ctx->device.os)))
            || (t->browsers && !(t->browsers & (1u << ctx->device.browser))))
        {
            return 0;
        }
    }

    if (t->kv) {
        req_kv(ctx);
        src[SRC_REQUEST] = kv_attrs(&ctx->kv);
        return eval(t, 0, src);
    }

    return 1;
}


int
adserve_target_match(const adserve_target_t *t, adserve_req_ctx_t *ctx, int64_t now)
{
    /* the candidates of a line item are neighbours in a ranked list, and
     * adserve_decide looks at a group twice: one rule, one evaluation */
    if (ctx->memo != t || ctx->memo_now != now) {
        ctx->memo_match = match(t, ctx, now);
        ctx->memo = t;
        ctx->memo_now = now;
    }

    return ctx->memo_match;
}


int
adserve_target_filter(const adserve_target_t *t, adserve_req_ctx_t *ctx,
    const adserve_attrs_t *item)
{
    adserve_attrs_t  src[SRC_COUNT];

    src[SRC_ITEM] = *item;
    src[SRC_REQUEST] = (adserve_attrs_t) { NULL, NULL, NULL, 0 };

    if (t->reads_request) {
        req_kv(ctx);
        src[SRC_REQUEST] = kv_attrs(&ctx->kv);
    }

    return eval(t, 0, src);
}


/* ---- the build ----------------------------------------------------------- */

void
adserve_target_builder_init(adserve_target_builder_t *b, adserve_arena_t *arena)
{
    memset(b, 0, sizeof(adserve_target_builder_t));
    b->arena = arena;
}


void
adserve_target_builder_free(adserve_target_builder_t *b)
{
    size_t  i;

    free(b->interned);

    for (i = 0; i < sizeof(b->scratch) / sizeof(b->scratch[0]); i++) {
        free(b->scratch[i]);
    }

    memset(b, 0, sizeof(adserve_target_builder_t));
}


/* Makes room for n elements of size in scratch slot k; NULL when out of memory. */
static void *
scratch(adserve_target_builder_t *b, int k, size_t n, size_t size)
{
    size_t   cap;
    void    *p;

    if (n > b->scratch_cap[k]) {
        cap = b->scratch_cap[k] ? b->scratch_cap[k] : 64;
        while (cap < n) {
            cap *= 2;
        }
        p = realloc(b->scratch[k], cap * size);
        if (p == NULL) {
            return NULL;
        }
        b->scratch[k] = p;
        b->scratch_cap[k] = cap;
    }

    return b->scratch[k];
}


/* The arena's copy of s, shared by every rule that names it. */
static int
intern(adserve_target_builder_t *b, const char *s, adserve_tstr_t *out)
{
    adserve_tstr_t  *t, *old;
    uint32_t         i, j, size, oldsize, h;
    size_t           len = strlen(s);

    if (len > UINT32_MAX) {
        return -1;
    }

    h = (uint32_t) adserve_hash(s, len);

    if (b->interned == NULL || (b->ninterned + 1) * 2 > b->mask + 1) {
        old = b->interned;
        oldsize = old ? b->mask + 1 : 0;
        size = oldsize ? oldsize * 2 : 256;

        t = calloc(size, sizeof(adserve_tstr_t));
        if (t == NULL) {
            return -1;
        }

        for (i = 0; i < oldsize; i++) {
            if (old[i].s) {
                for (j = old[i].hash & (size - 1); t[j].s; j = (j + 1) & (size - 1)) {
                    /* probe */
                }
                t[j] = old[i];
            }
        }

        free(old);
        b->interned = t;
        b->mask = size - 1;
    }

    for (i = h & b->mask; b->interned[i].s; i = (i + 1) & b->mask) {
        t = &b->interned[i];
        if (t->hash == h && t->len == len && memcmp(t->s, s, len) == 0) {
            *out = *t;
            return 0;
        }
    }

    t = &b->interned[i];
    t->s = adserve_arena_memdup(b->arena, s, len);
    if (t->s == NULL) {
        return -1;
    }
    t->len = (uint32_t) len;
    t->hash = h;
    b->ninterned++;
    *out = *t;

    return 0;
}


static const cJSON *
member(const cJSON *o, const char *name)
{
    return cJSON_GetObjectItemCaseSensitive(o, name);
}


static int
absent(const cJSON *v)
{
    return v == NULL || cJSON_IsNull(v);
}


static int
name_index(const char *const *names, const char *s)
{
    int  i;

    for (i = 0; s != NULL && names[i]; i++) {
        if (strcmp(names[i], s) == 0) {
            return i;
        }
    }

    return -1;
}


/* ---- refusals: where and why, when the caller asked (b->err) ---- */

/* Appends to the path below targeting; the old length, for path_pop. */
static size_t
path_push(adserve_target_builder_t *b, const char *fmt, ...)
{
    size_t   old, room;
    va_list  ap;
    int      n;

    if (b->err == NULL) {
        return 0;
    }

    old = strlen(b->err->path);
    room = sizeof(b->err->path) - old;

    va_start(ap, fmt);
    n = vsnprintf(b->err->path + old, room, fmt, ap);
    va_end(ap);

    if (n < 0) {
        b->err->path[old] = '\0';
    }

    return old;
}


static void
path_pop(adserve_target_builder_t *b, size_t old)
{
    if (b->err != NULL) {
        b->err->path[old] = '\0';
    }
}


/* The reason a rule is refused; always 1, so callers can return it. */
static int
refuse(adserve_target_builder_t *b, const char *fmt, ...)
{
    va_list  ap;

    if (b->err != NULL) {
        va_start(ap, fmt);
        (void) vsnprintf(b->err->reason, sizeof(b->err->reason), fmt, ap);
        va_end(ap);
    }

    return 1;
}


/* "must be one of a, b, c" */
static int
refuse_names(adserve_target_builder_t *b, const char *const *names)
{
    char    list[256];
    size_t  len = 0;
    int     i, n;

    list[0] = '\0';

    for (i = 0; names[i] != NULL && len < sizeof(list); i++) {
        n = snprintf(list + len, sizeof(list) - len, "%s%s", i ? ", " : "", names[i]);
        if (n < 0) {
            break;
        }
        len += (size_t) n;
    }

    return refuse(b, "must be one of %s", list);
}


/* A list of enum names (the member field of o) as a bit mask, 0 when absent
 * or empty; -1 when malformed, refused at its path. */
static int
name_mask(adserve_target_builder_t *b, const cJSON *o, const char *field,
    const char *const *names)
{
    const cJSON  *e, *list = member(o, field);
    int           mask = 0, i, k = 0;

    if (absent(list)) {
        return 0;
    }

    if (!cJSON_IsArray(list)) {
        path_push(b, ".%s", field);
        return -refuse(b, "must be an array");
    }

    cJSON_ArrayForEach(e, list) {
        i = name_index(names, cJSON_GetStringValue(e));
        if (i < 0) {
            path_push(b, ".%s[%d]", field, k);
            return -refuse_names(b, names);
        }
        mask |= 1 << i;
        k++;
    }

    return mask;
}


static int
compile_device(adserve_target_builder_t *b, const cJSON *d, adserve_target_t *t)
{
    int  types, oses = -1, browsers = -1;

    if (absent(d)) {
        return 0;
    }

    path_push(b, "device");

    if (!cJSON_IsObject(d)) {
        return refuse(b, "must be an object");
    }

    if ((types = name_mask(b, d, "types", adserve_device_type_names)) < 0
        || (oses = name_mask(b, d, "os", adserve_os_names)) < 0
        || (browsers = name_mask(b, d, "browsers", adserve_browser_names)) < 0)
    {
        return 1;
    }

    path_pop(b, 0);

    t->types = (uint16_t) types;
    t->oses = (uint16_t) oses;
    t->browsers = (uint16_t) browsers;

    return 0;
}


/* a year bound: absent (*set 0), or an integer in the scanner's range */
static int
yob_bound(adserve_target_builder_t *b, const cJSON *u, const char *field, int *year,
    int *set)
{
    const cJSON  *v = member(u, field);

    *set = 0;

    if (absent(v)) {
        return 0;
    }

    if (!cJSON_IsNumber(v) || !(v->valuedouble >= ADSERVE_YOB_MIN)
        || !(v->valuedouble <= ADSERVE_YOB_MAX) || v->valuedouble != (int) v->valuedouble)
    {
        path_push(b, ".%s", field);
        return refuse(b, "must be between %d and %d", ADSERVE_YOB_MIN, ADSERVE_YOB_MAX);
    }

    *year = (int) v->valuedouble;
    *set = 1;

    return 0;
}


static int
compile_user(adserve_target_builder_t *b, const cJSON *u, adserve_target_t *t)
{
    int  lo = ADSERVE_YOB_MIN, hi = ADSERVE_YOB_MAX, has_lo, has_hi, g;

    if (absent(u)) {
        return 0;
    }

    path_push(b, "user");

    if (!cJSON_IsObject(u)) {
        return refuse(b, "must be an object");
    }

    if (yob_bound(b, u, "yob_min", &lo, &has_lo) != 0
        || yob_bound(b, u, "yob_max", &hi, &has_hi) != 0)
    {
        return 1;
    }

    if (lo > hi) {
        path_push(b, ".yob_max");
        return refuse(b, "must be >= yob_min (%d)", lo);
    }

    if ((g = name_mask(b, u, "genders", adserve_gender_names)) < 0) {
        return 1;
    }

    path_pop(b, 0);

    t->has_yob = (uint8_t) (has_lo || has_hi);
    t->yob_min = (int16_t) lo;
    t->yob_max = (int16_t) hi;
    t->genders = (uint8_t) g;

    return 0;
}


static int
range_cmp(const void *pa, const void *pb)
{
    const day_range_t  *a = pa, *b = pb;

    if (a->day != b->day) {
        return a->day < b->day ? -1 : 1;
    }

    return a->start < b->start ? -1 : a->start > b->start;
}


/* one daypart: its days as a mask and its minutes [from, to) */
static int
compile_daypart(adserve_target_builder_t *b, const cJSON *d, int *mask, int *from,
    int *to)
{
    const char  *start = cJSON_GetStringValue(member(d, "start"));
    const cJSON *tz = member(d, "tz");

    if ((*mask = name_mask(b, d, "days", adserve_weekday_names)) < 0) {
        return 1;
    }

    if (*mask == 0) {
        path_push(b, ".days");
        return refuse(b, "must name at least one day");
    }

    *from = adserve_parse_hhmm(start, 0);
    if (*from < 0) {
        path_push(b, ".start");
        return refuse(b, "must be a time HH:MM from 00:00 to 23:59");
    }

    *to = adserve_parse_hhmm(cJSON_GetStringValue(member(d, "end")), 1);
    if (*to < 0) {
        path_push(b, ".end");
        return refuse(b, "must be a time HH:MM from 00:00 to 24:00");
    }

    if (*to <= *from) {
        path_push(b, ".end");
        return refuse(b, "must be after start (%s); past midnight, use two dayparts", start);
    }

    if (!absent(tz) && adserve_vocab_str(adserve_zone_names, cJSON_GetStringValue(tz)) < 0) {
        path_push(b, ".tz");
        return refuse_names(b, adserve_zone_names);
    }

    return 0;
}


static int
compile_dayparts(adserve_target_builder_t *b, const cJSON *list, adserve_target_t *t)
{
    const cJSON              *d;
    day_range_t              *r;
    minutes_t                *out;
    size_t                    n = 0, i, k, at;
    int                       mask = 0, from = 0, to = 0, day, rc;

    if (absent(list)) {
        return 0;
    }

    path_push(b, "dayparts");

    if (!cJSON_IsArray(list)) {
        return refuse(b, "must be an array");
    }

    i = 0;

    cJSON_ArrayForEach(d, list) {
        at = path_push(b, "[%zu]", i++);

        if (!cJSON_IsObject(d)) {
            return refuse(b, "must be an object");
        }

        if ((rc = compile_daypart(b, d, &mask, &from, &to)) != 0) {
            return rc;
        }

        path_pop(b, at);

        for (day = 0; day < 7; day++) {
            if (mask & (1 << day)) {
                r = scratch(b, S_RANGES, n + 1, sizeof(day_range_t));
                if (r == NULL) {
                    return -1;
                }
                r[n].day = (uint8_t) day;
                r[n].start = (uint16_t) from;
                r[n].end = (uint16_t) to;
                n++;
            }
        }
    }

    path_pop(b, 0);

    if (n == 0) {
        return 0;                    /* an empty list: always */
    }

    r = b->scratch[S_RANGES];
    qsort(r, n, sizeof(day_range_t), range_cmp);

    /* merge overlapping and touching ranges: at most 720 a day remain */
    for (i = 0, k = 0; i < n; i++) {
        if (k > 0 && r[k - 1].day == r[i].day && r[i].start <= r[k - 1].end) {
            if (r[i].end > r[k - 1].end) {
                r[k - 1].end = r[i].end;
            }
        } else {
            r[k++] = r[i];
        }
    }

    out = adserve_arena_alloc(b->arena, k * sizeof(minutes_t));
    if (out == NULL) {
        return -1;
    }

    for (day = 0, i = 0; day < 7; day++) {
        t->day[day] = (uint16_t) i;
        for (; i < k && r[i].day == day; i++) {
            out[i].start = r[i].start;
            out[i].end = r[i].end;
        }
    }
    t->day[7] = (uint16_t) k;

    t->ranges = out;
    t->has_dayparts = 1;

    return 0;
}


/* ---- kv ---- */

typedef struct {
    adserve_target_builder_t *b;
    uint32_t                  nnodes, nstrs, nnums, ncmps;
    const char               *root;   /* the rule's path: "kv", or a
                                       * content filter's field */
    unsigned                  filter:1;         /* a content filter */
    unsigned                  reads_request:1;  /* it reads ext.kv */
} kvc_t;



static int
str_sort(const void *pa, const void *pb)
{
    const adserve_tstr_t  *a = pa, *b = pb;

    return str_cmp(a, b->s, b->len);
}


static int
num_sort(const void *pa, const void *pb)
{
    double  a = *(const double *) pa, b = *(const double *) pb;

    return a < b ? -1 : a > b;
}


/* one rhs value: a string or a finite number; 2 when it is neither (the
 * caller says why) */
static int
rhs_value(kvc_t *c, const cJSON *v, int numbers_only)
{
    adserve_tstr_t  *s;
    double          *d;

    if (cJSON_IsString(v) && !numbers_only) {
        s = scratch(c->b, S_STRS, c->nstrs + 1, sizeof(adserve_tstr_t));
        if (s == NULL || intern(c->b, v->valuestring, &s[c->nstrs]) != 0) {
            return -1;
        }
        c->nstrs++;
        return 0;
    }

    /* a content filter compares a boolean attribute by its text */
    if (cJSON_IsBool(v) && c->filter && !numbers_only) {
        s = scratch(c->b, S_STRS, c->nstrs + 1, sizeof(adserve_tstr_t));
        if (s == NULL || intern(c->b, cJSON_IsTrue(v) ? "true" : "false", &s[c->nstrs]) != 0) {
            return -1;
        }
        c->nstrs++;
        return 0;
    }

    if (cJSON_IsNumber(v) && isfinite(v->valuedouble)) {
        d = scratch(c->b, S_NUMS, c->nnums + 1, sizeof(double));
        if (d == NULL) {
            return -1;
        }
        d[c->nnums++] = v->valuedouble;
        return 0;
    }

    return 2;
}


/* rhs, as op takes it: one value (eq, ne), a number (lt .. ge) or a list
 * (in, nin, intersects); the path is the cmp's */
static int
compile_rhs(kvc_t *c, int op, const cJSON *rhs)
{
    const char  *name = adserve_op_names[op - OP_EQ];
    const cJSON *e;
    int          rc, k = 0;

    path_push(c->b, ".rhs");

    if (op == OP_IN || op == OP_NIN || op == OP_INTERSECTS) {
        if (!cJSON_IsArray(rhs)) {
            return refuse(c->b, "must be an array for op %s", name);
        }
        if (rhs->child == NULL) {
            return refuse(c->b, "must not be empty");
        }
        cJSON_ArrayForEach(e, rhs) {
            if ((rc = rhs_value(c, e, 0)) != 0) {
                if (rc < 0) {
                    return rc;
                }
                path_push(c->b, "[%d]", k);
                return refuse(c->b, "must be a string or a finite number");
            }
            k++;
        }

    } else if ((rc = rhs_value(c, rhs, op != OP_EQ && op != OP_NE)) != 0) {
        return rc < 0 ? rc
               : op == OP_EQ || op == OP_NE
               ? refuse(c->b, "must be a string or a finite number for op %s", name)
               : refuse(c->b, "must be a finite number for op %s", name);
    }

    return 0;
}


/* a bound of the whole kv rule: refused at "kv" */
static int
refuse_kv(kvc_t *c, const char *what, int max)
{
    path_pop(c->b, 0);
    path_push(c->b, "%s", c->root);

    return refuse(c->b, "more than %d %s", max, what);
}


/* The key a comparison's lhs names, and where it is looked up; NULL when
 * the lhs names none. A line item's rule reads the request's ext.kv,
 * [key]; a content filter the item's attributes, [name], or the request's
 * ext.kv, [ADSERVE_FILTER_KV, key]. */
static const char *
lhs_key(kvc_t *c, const cJSON *lhs, int *src)
{
    const char  *first = cJSON_GetStringValue(cJSON_GetArrayItem(lhs, 0));
    const char  *second = cJSON_GetStringValue(cJSON_GetArrayItem(lhs, 1));
    int          n = cJSON_GetArraySize(lhs);

    *src = SRC_REQUEST;

    if (n == 1 && first != NULL) {
        *src = c->filter ? SRC_ITEM : SRC_REQUEST;
        return first;
    }

    if (n == 2 && c->filter && first != NULL && second != NULL
        && strcmp(first, ADSERVE_FILTER_KV) == 0)
    {
        c->reads_request = 1;
        return second;
    }

    return NULL;
}


static int
compile_cmp(kvc_t *c, uint32_t i, const cJSON *cmp)
{
    const cJSON  *lhs;
    const char   *key;
    tnode_t      *n;
    uint32_t      str_first = c->nstrs, num_first = c->nnums;
    const char   *opname = cJSON_GetStringValue(member(cmp, "op"));
    size_t        at;
    int           op, rc, src;

    if (!cJSON_IsObject(cmp) || opname == NULL) {
        return refuse(c->b, "must be a comparison");
    }

    if (++c->ncmps > ADSERVE_KV_MAX_CMPS) {
        return refuse_kv(c, "comparisons", ADSERVE_KV_MAX_CMPS);
    }

    /* the contract's ops, in the order of the comparison nodes */
    op = adserve_vocab_str(adserve_op_names, opname);
    if (op < 0) {
        path_push(c->b, ".op");
        return refuse_names(c->b, adserve_op_names);
    }
    op += OP_EQ;

    lhs = member(cmp, "lhs");
    key = lhs_key(c, lhs, &src);
    if (key == NULL) {
        path_push(c->b, ".lhs");
        return refuse(c->b, c->filter ? "must name an item attribute, [name], or a key "
                                        "of the request's ext.kv, [\"" ADSERVE_FILTER_KV
                                        "\", key]"
                                      : "must name exactly one key");
    }

    at = path_push(c->b, "");
    if ((rc = compile_rhs(c, op, member(cmp, "rhs"))) != 0) {
        return rc;
    }
    path_pop(c->b, at);

    if (c->nstrs + c->nnums > ADSERVE_KV_MAX_RHS) {
        return refuse_kv(c, "rhs values in all", ADSERVE_KV_MAX_RHS);
    }

    n = (tnode_t *) c->b->scratch[S_NODES] + i;
    n->op = (uint8_t) op;
    n->src = (uint8_t) src;
    n->str_first = str_first;
    n->nstrs = c->nstrs - str_first;
    n->num_first = num_first;
    n->nnums = c->nnums - num_first;

    if (n->nstrs > 1) {
        qsort((adserve_tstr_t *) c->b->scratch[S_STRS] + str_first, n->nstrs,
              sizeof(adserve_tstr_t), str_sort);
    }
    if (n->nnums > 1) {
        qsort((double *) c->b->scratch[S_NUMS] + num_first, n->nnums, sizeof(double),
              num_sort);
    }

    return intern(c->b, key, &n->key) != 0 ? -1 : 0;
}


/* One Expr node at the path so far, and its children. */
static int
compile_expr(kvc_t *c, const cJSON *e, int depth)
{
    const cJSON  *data = member(e, "data"), *it;
    const char   *name = cJSON_GetStringValue(member(e, "type"));
    int           type = adserve_vocab_str(adserve_expr_names, name);
    tnode_t      *nodes;
    uint32_t      i = c->nnodes;
    size_t        at;
    int           rc = 0, k = 0;

    if (depth > ADSERVE_KV_MAX_DEPTH) {
        return refuse(c->b, "nested more than %d levels deep", ADSERVE_KV_MAX_DEPTH);
    }

    if (!cJSON_IsObject(e) || name == NULL || data == NULL) {
        return refuse(c->b, "must be an expression");
    }

    if (type < 0) {
        path_push(c->b, ".type");
        return refuse_names(c->b, adserve_expr_names);
    }

    nodes = scratch(c->b, S_NODES, c->nnodes + 1, sizeof(tnode_t));
    if (nodes == NULL) {
        return -1;
    }
    memset(&nodes[i], 0, sizeof(tnode_t));
    c->nnodes++;

    path_push(c->b, ".data");

    if (type == ADSERVE_EXPR_AND || type == ADSERVE_EXPR_OR) {
        nodes[i].op = type == ADSERVE_EXPR_AND ? OP_AND : OP_OR;
        if (!cJSON_IsArray(data) || data->child == NULL) {
            return refuse(c->b, "must hold at least one expression");
        }
        cJSON_ArrayForEach(it, data) {
            at = path_push(c->b, "[%d]", k++);
            if ((rc = compile_expr(c, it, depth + 1)) != 0) {
                return rc;
            }
            path_pop(c->b, at);
        }

    } else if (type == ADSERVE_EXPR_NOT) {
        nodes[i].op = OP_NOT;
        rc = compile_expr(c, data, depth + 1);

    } else {
        rc = compile_cmp(c, i, data);
    }

    if (rc == 0) {
        /* the array may have moved while the children were added */
        ((tnode_t *) c->b->scratch[S_NODES])[i].end = c->nnodes;
    }

    return rc;
}


/* An Expr at root into t->kv: a line item's targeting.kv, or a content
 * filter. */
static int
compile_rule(adserve_target_builder_t *b, const cJSON *rule, adserve_target_t *t,
    const char *root, int filter)
{
    kvc_t   c = { b, 0, 0, 0, 0, root, filter ? 1 : 0, 0 };
    void   *p;
    int     rc;

    if (absent(rule)) {
        return 0;
    }

    path_push(b, "%s", root);

    rc = compile_expr(&c, rule, 1);
    if (rc != 0) {
        return rc;
    }

    path_pop(b, 0);

    p = adserve_arena_alloc(b->arena, c.nnodes * sizeof(tnode_t));
    if (p == NULL) {
        return -1;
    }
    t->kv = memcpy(p, b->scratch[S_NODES], c.nnodes * sizeof(tnode_t));
    t->reads_request = c.reads_request;

    if (c.nstrs) {
        p = adserve_arena_alloc(b->arena, c.nstrs * sizeof(adserve_tstr_t));
        if (p == NULL) {
            return -1;
        }
        t->strs = memcpy(p, b->scratch[S_STRS], c.nstrs * sizeof(adserve_tstr_t));
    }

    if (c.nnums) {
        p = adserve_arena_alloc(b->arena, c.nnums * sizeof(double));
        if (p == NULL) {
            return -1;
        }
        t->nums = memcpy(p, b->scratch[S_NUMS], c.nnums * sizeof(double));
    }

    return 0;
}


/* One list of segment ids into ids[at ..): strings of 1 to
 * ADSERVE_SEGMENT_ID_MAX bytes, at most ADSERVE_SEGMENTS_MAX; n, or -1
 * refused. */
static int
segment_list(adserve_target_builder_t *b, const cJSON *list, const char *field,
    const char **ids, int at)
{
    const cJSON  *e;
    const char   *id;
    int           n = 0;

    if (absent(list)) {
        return 0;
    }

    if (!cJSON_IsArray(list)) {
        path_push(b, ".%s", field);
        return -refuse(b, "must be an array");
    }

    if (cJSON_GetArraySize(list) > ADSERVE_SEGMENTS_MAX) {
        path_push(b, ".%s", field);
        return -refuse(b, "at most %d segments", ADSERVE_SEGMENTS_MAX);
    }

    cJSON_ArrayForEach(e, list) {
        id = cJSON_GetStringValue(e);
        if (id == NULL || id[0] == '\0' || strlen(id) > ADSERVE_SEGMENT_ID_MAX) {
            path_push(b, ".%s[%d]", field, n);
            return -refuse(b, "must be a segment id (1 to %d bytes)", ADSERVE_SEGMENT_ID_MAX);
        }
        ids[at + n++] = id;
    }

    return n;
}


/* segments: {include: [ids], exclude: [ids]}: the user must be in one of
 * include and in none of exclude (read per request, README "Segments"). */
static int
compile_segments(adserve_target_builder_t *b, const cJSON *sg, adserve_target_t *t)
{
    const char        *ids[2 * ADSERVE_SEGMENTS_MAX];
    adserve_tstr_t    *strs;
    uint64_t          *hashes;
    int                nin, nout, i, j;

    if (absent(sg)) {
        return 0;
    }

    path_push(b, "segments");

    if (!cJSON_IsObject(sg)) {
        return refuse(b, "must be an object");
    }

    if ((nin = segment_list(b, member(sg, "include"), "include", ids, 0)) < 0
        || (nout = segment_list(b, member(sg, "exclude"), "exclude", ids, nin)) < 0)
    {
        return 1;
    }

    for (i = 0; i < nin; i++) {
        for (j = nin; j < nin + nout; j++) {
            if (strcmp(ids[i], ids[j]) == 0) {
                path_push(b, ".exclude[%d]", j - nin);
                return refuse(b, "segment %s is also included", ids[i]);
            }
        }
    }

    path_pop(b, 0);

    if (nin + nout == 0) {
        return 0;
    }

    strs = adserve_arena_alloc(b->arena, (nin + nout) * sizeof(adserve_tstr_t));
    hashes = adserve_arena_alloc(b->arena, (nin + nout) * sizeof(uint64_t));
    if (strs == NULL || hashes == NULL) {
        return -1;
    }

    for (i = 0; i < nin + nout; i++) {
        if (intern(b, ids[i], &strs[i]) != 0) {
            return -1;
        }
        hashes[i] = adserve_hash(strs[i].s, strs[i].len);
    }

    t->segs = strs;
    t->seg_hashes = hashes;
    t->nseg_in = (uint16_t) nin;
    t->nseg_out = (uint16_t) nout;

    return 0;
}


uint32_t
adserve_target_nsegments(const adserve_target_t *t)
{
    return t != NULL ? (uint32_t) t->nseg_in + t->nseg_out : 0;
}


void
adserve_target_segment(const adserve_target_t *t, uint32_t i, adserve_str_t *id,
    uint64_t *hash)
{
    id->data = t->segs[i].s;
    id->len = t->segs[i].len;
    *hash = t->seg_hashes[i];
}


int
adserve_target_compile(adserve_target_builder_t *b, const cJSON *tg,
    const adserve_target_t **out)
{
    adserve_target_t   t, *p;
    int                rc;

    *out = NULL;

    if (absent(tg)) {
        return 0;
    }

    if (!cJSON_IsObject(tg)) {
        return refuse(b, "must be an object");
    }

    memset(&t, 0, sizeof(adserve_target_t));

    if ((rc = compile_device(b, member(tg, "device"), &t)) != 0
        || (rc = compile_user(b, member(tg, "user"), &t)) != 0
        || (rc = compile_dayparts(b, member(tg, "dayparts"), &t)) != 0
        || (rc = compile_rule(b, member(tg, "kv"), &t, "kv", 0)) != 0
        || (rc = compile_segments(b, member(tg, "segments"), &t)) != 0)
    {
        return rc;
    }

    if (!(t.types | t.oses | t.browsers | t.genders | t.has_yob | t.has_dayparts)
        && t.kv == NULL && t.nseg_in + t.nseg_out == 0)
    {
        return 0;                    /* nothing to decide per request */
    }

    p = adserve_arena_alloc(b->arena, sizeof(adserve_target_t));
    if (p == NULL) {
        return -1;
    }

    *p = t;
    *out = p;

    return 0;
}


int
adserve_target_compile_filter(adserve_target_builder_t *b, const cJSON *rule,
    const adserve_target_t **out)
{
    adserve_target_t   t, *p;
    int                rc;

    *out = NULL;
    memset(&t, 0, sizeof(adserve_target_t));

    rc = compile_rule(b, rule, &t, "content_filter_rule", 1);
    if (rc != 0 || t.kv == NULL) {
        return rc;
    }

    p = adserve_arena_alloc(b->arena, sizeof(adserve_target_t));
    if (p == NULL) {
        return -1;
    }

    *p = t;
    *out = p;

    return 0;
}


/* Compiles with compile into a throwaway arena: the grammar's judgement. */
static int
check(const cJSON *rule, adserve_target_err_t *err,
    int (*compile)(adserve_target_builder_t *, const cJSON *, const adserve_target_t **))
{
    adserve_arena_t            arena;
    adserve_target_builder_t   b;
    const adserve_target_t    *t;
    int                        rc;

    err->path[0] = '\0';
    err->reason[0] = '\0';

    adserve_arena_init(&arena, 4096);
    adserve_target_builder_init(&b, &arena);
    b.err = err;

    rc = compile(&b, rule, &t);

    adserve_target_builder_free(&b);
    adserve_arena_free(&arena);

    return rc;
}


int
adserve_target_check(const cJSON *targeting, adserve_target_err_t *err)
{
    return check(targeting, err, adserve_target_compile);
}


int
adserve_target_check_filter(const cJSON *rule, adserve_target_err_t *err)
{
    return check(rule, err, adserve_target_compile_filter);
}
