/* adserve_json.c -- strict, allocation-free JSON scanner: its core
 * (adserve_json_scan.h), and the ad request's grammar.
 *
 * A single pass recursive descent parser. Recursion is bounded: every
 * container checks the depth before descending, so the C stack never holds
 * more than ADSERVE_JSON_MAX_DEPTH object/array frames whatever the input.
 *
 * While descending we carry two small pieces of context instead of a path
 * string: the kind of object we are in (for a request: root, user, device,
 * ext, or any other) and the field the current value is meant for. This is
 * enough to recognise the few members a grammar needs without allocating
 * anything. */

#include "adserve_contract.h"
#include "adserve_json.h"

#include <stdint.h>
#include <string.h>

#include "adserve_json_scan.h"

#define JS_OK   ADSERVE_JS_OK
#define JS_ERR  ADSERVE_JS_ERR

typedef adserve_js_scanner_t  scanner;

/* The ad request's grammar: the objects whose keys mean something... */
enum {
    OBJ_ROOT = ADSERVE_JS_OTHER + 1,
    OBJ_USER,
    OBJ_DEVICE,
    OBJ_EXT
};

/* ... and what each known member's value is for. */
enum {
    F_VERSION = ADSERVE_JS_NONE + 1,
    F_USER,
    F_DEVICE,
    F_EXT,
    F_USER_ID,
    F_YOB,
    F_GENDER,
    F_UA,
    F_KV,
    F_ITEM,
    F_CONTEXT
};

static const adserve_js_key_t known_keys[] = {
    { OBJ_ROOT,   "version", 7, F_VERSION },
    { OBJ_ROOT,   "user",    4, F_USER },
    { OBJ_ROOT,   "device",  6, F_DEVICE },
    { OBJ_ROOT,   "ext",     3, F_EXT },
    { OBJ_USER,   "id",      2, F_USER_ID },
    { OBJ_USER,   "yob",     3, F_YOB },
    { OBJ_USER,   "gender",  6, F_GENDER },
    { OBJ_DEVICE, "ua",      2, F_UA },
    { OBJ_EXT,    "kv",      2, F_KV },
    { OBJ_EXT,    "item_id", 7, F_ITEM },
    { OBJ_EXT,    "context", 7, F_CONTEXT }
};

static int parse_value(scanner *s, int depth, int f);

/* ----------------------------- Helpers --------------------------------- */

static int fail(scanner *s, size_t off, const char *msg) {
    s->err = msg;
    s->err_off = off;
    return JS_ERR;
}

/* A body cut short is reported the same way wherever it ends, at len. */
static int fail_eof(scanner *s) {
    return fail(s, s->len, "unexpected end of input");
}

/* Fails at the current byte, or as truncated when there is none. */
static int fail_here(scanner *s, const char *msg) {
    if (s->pos >= s->len) return fail_eof(s);
    return fail(s, s->pos, msg);
}

/* RFC 8259 whitespace only: no form feed, no vertical tab, no locale. */
static inline void skip_ws(scanner *s) {
    while (s->pos < s->len) {
        char c = s->buf[s->pos];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
        s->pos++;
    }
}

/* Returns the current byte, or -1 at end of input. */
static inline int peek(scanner *s) {
    return s->pos < s->len ? (unsigned char)s->buf[s->pos] : -1;
}

static int is_digit(int c) {
    return c >= '0' && c <= '9';
}

static int hex_value(int c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Appends one decoded byte. Output beyond cap is counted but dropped: the
 * caller learns the full length and decides whether the value is usable.
 * dst == NULL means "validate only". */
static void put(char *dst, size_t cap, size_t *n, unsigned char c) {
    if (dst && *n < cap) dst[*n] = (char)c;
    (*n)++;
}

static void put_utf8(char *dst, size_t cap, size_t *n, unsigned long cp) {
    if (cp < 0x80) {
        put(dst, cap, n, (unsigned char)cp);
    } else if (cp < 0x800) {
        put(dst, cap, n, (unsigned char)(0xC0 | (cp >> 6)));
        put(dst, cap, n, (unsigned char)(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
        put(dst, cap, n, (unsigned char)(0xE0 | (cp >> 12)));
        put(dst, cap, n, (unsigned char)(0x80 | ((cp >> 6) & 0x3F)));
        put(dst, cap, n, (unsigned char)(0x80 | (cp & 0x3F)));
    } else {
        put(dst, cap, n, (unsigned char)(0xF0 | (cp >> 18)));
        put(dst, cap, n, (unsigned char)(0x80 | ((cp >> 12) & 0x3F)));
        put(dst, cap, n, (unsigned char)(0x80 | ((cp >> 6) & 0x3F)));
        put(dst, cap, n, (unsigned char)(0x80 | (cp & 0x3F)));
    }
}

/* ----------------------------- Strings --------------------------------- */

/* Reads "\uXXXX" at off. Returns the code unit, or -1 if it is not there
 * (wrong bytes or input too short). */
static long read_u_escape(scanner *s, size_t off) {
    long v = 0;
    size_t i;
    int h;

    if (s->len - off < 6) return -1;
    if (s->buf[off] != '\\' || s->buf[off + 1] != 'u') return -1;
    for (i = 2; i < 6; i++) {
        if ((h = hex_value((unsigned char)s->buf[off + i])) < 0) return -1;
        v = (v << 4) | h;
    }
    return v;
}

/* True when the input ends inside an otherwise well-formed "\uXXXX" at
 * off, so that the fault is reported as truncation, not as a bad escape. */
static int u_escape_truncated(scanner *s, size_t off) {
    size_t i, avail = s->len - off;

    if (avail >= 6) return 0;
    for (i = 0; i < avail; i++) {
        int c = (unsigned char)s->buf[off + i];
        if (i == 0 && c != '\\') return 0;
        if (i == 1 && c != 'u') return 0;
        if (i >= 2 && hex_value(c) < 0) return 0;
    }
    return 1;
}

/* \uXXXX, possibly the high half of a surrogate pair. Every input byte is
 * read before any output byte is written, and the output (at most 4 bytes
 * for 12 input bytes) is never longer, so in-place decoding is safe. */
static int scan_u_escape(scanner *s, char *dst, size_t cap, size_t *n) {
    size_t at = s->pos;
    long cp = read_u_escape(s, at), lo;

    if (cp < 0) {
        if (u_escape_truncated(s, at)) return fail_eof(s);
        return fail(s, at, "invalid \\u escape");
    }
    if (cp >= 0xDC00 && cp <= 0xDFFF)
        return fail(s, at, "lone low surrogate in \\u escape");
    if (cp < 0xD800 || cp > 0xDBFF) {
        put_utf8(dst, cap, n, (unsigned long)cp);
        s->pos = at + 6;
        return JS_OK;
    }

    /* High surrogate: a low one must follow right away. */
    lo = read_u_escape(s, at + 6);
    if (lo < 0 && u_escape_truncated(s, at + 6))
        return fail_eof(s);
    if (lo < 0 && s->len - at >= 8 &&
        s->buf[at + 6] == '\\' && s->buf[at + 7] == 'u')
        return fail(s, at + 6, "invalid \\u escape");
    if (lo < 0xDC00 || lo > 0xDFFF)
        return fail(s, at, "unpaired high surrogate in \\u escape");
    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
    put_utf8(dst, cap, n, (unsigned long)cp);
    s->pos = at + 12;
    return JS_OK;
}

static int scan_escape(scanner *s, char *dst, size_t cap, size_t *n) {
    unsigned char c;

    if (s->len - s->pos < 2) return fail_eof(s);
    switch (s->buf[s->pos + 1]) {
    case '"':  c = '"';  break;
    case '\\': c = '\\'; break;
    case '/':  c = '/';  break;
    case 'b':  c = '\b'; break;
    case 'f':  c = '\f'; break;
    case 'n':  c = '\n'; break;
    case 'r':  c = '\r'; break;
    case 't':  c = '\t'; break;
    case 'u':  return scan_u_escape(s, dst, cap, n);
    default:   return fail(s, s->pos, "invalid escape in string");
    }
    put(dst, cap, n, c);
    s->pos += 2;
    return JS_OK;
}

/* One multi-byte UTF-8 sequence, validated against the RFC 3629 table so
 * that overlongs, UTF-16 surrogates and code points above U+10FFFF are all
 * rejected. The second byte carries the extra restrictions. */
static int scan_utf8(scanner *s, char *dst, size_t cap, size_t *n) {
    const unsigned char *p = (const unsigned char *)s->buf + s->pos;
    size_t avail = s->len - s->pos, need, i;
    unsigned char lo = 0x80, hi = 0xBF;

    if (p[0] >= 0xC2 && p[0] <= 0xDF) {
        need = 1;
    } else if (p[0] >= 0xE0 && p[0] <= 0xEF) {
        need = 2;
        if (p[0] == 0xE0) lo = 0xA0;        /* overlong */
        else if (p[0] == 0xED) hi = 0x9F;   /* U+D800..U+DFFF */
    } else if (p[0] >= 0xF0 && p[0] <= 0xF4) {
        need = 3;
        if (p[0] == 0xF0) lo = 0x90;        /* overlong */
        else if (p[0] == 0xF4) hi = 0x8F;   /* above U+10FFFF */
    } else {
        return fail(s, s->pos, "invalid UTF-8 in string");
    }

    for (i = 1; i <= need; i++) {
        if (i >= avail) return fail_eof(s);
        if (p[i] < lo || p[i] > hi)
            return fail(s, s->pos, "invalid UTF-8 in string");
        lo = 0x80;
        hi = 0xBF;
    }
    /* Byte i is read before it is written, and the write position never
     * passes the read position, so this is safe in place too. */
    for (i = 0; i <= need; i++) put(dst, cap, n, p[i]);
    s->pos += need + 1;
    return JS_OK;
}

/* Printable ASCII but the quote and the backslash: the bytes that stand
 * for themselves, which is nearly every byte of a real request. A table,
 * since this test runs once per byte of every string. */
#define R16(v) v, v, v, v, v, v, v, v, v, v, v, v, v, v, v, v
static const unsigned char plain[256] = {
    R16(0), R16(0),                                     /* 0x00: controls */
    1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,     /* 0x20: '"' */
    R16(1), R16(1),                                     /* 0x30 - 0x4f */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1,     /* 0x50: '\\' */
    R16(1), R16(1),                                     /* 0x60 - 0x7f */
    R16(0), R16(0), R16(0), R16(0),                     /* 0x80: UTF-8, */
    R16(0), R16(0), R16(0), R16(0),                     /* checked apart */
};
#undef R16

static int is_plain(unsigned char c) {
    return plain[c];
}

/* Skips a run of plain bytes, eight at a time where words are little-endian
 * (else one at a time): a byte is not plain when it is below 0x20, 0x80 or
 * above, '"' or '\\'. The borrows of these word tests only ever mark bytes
 * above a marked one, so the lowest mark is the first byte not plain. Fewer
 * branches than a byte loop: a 160-byte request parses in a third less time. */
#define ONES  0x0101010101010101ULL
#define HIGH  0x8080808080808080ULL

static const unsigned char *skip_plain(const unsigned char *p, const unsigned char *end) {
#if defined(__GNUC__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    uint64_t v, q, b, m;

    while (end - p >= 8) {
        memcpy(&v, p, 8);
        q = v ^ (ONES * '"');
        b = v ^ (ONES * '\\');
        m = (((v - ONES * 0x20) & ~v) | ((q - ONES) & ~q) | ((b - ONES) & ~b) | v) & HIGH;
        if (m) {
            return p + (__builtin_ctzll(m) >> 3);
        }
        p += 8;
    }
#endif
    while (p < end && is_plain(*p)) p++;
    return p;
}

/* Copies a run of plain bytes at once. In place and before any escape, the
 * bytes are already where they belong, and nothing moves. */
static void put_run(char *dst, size_t cap, size_t *n, const char *src, size_t run) {
    size_t keep = *n < cap ? cap - *n : 0;

    if (keep > run) keep = run;
    if (dst && keep > 0 && dst + *n != src) memmove(dst + *n, src, keep);
    *n += run;
}

/* Scans the string starting at the opening quote under s->pos, decoding it
 * into dst (at most cap bytes kept, see put()). *len gets the full decoded
 * length. On return s->pos is past the closing quote. */
static int scan_string(scanner *s, char *dst, size_t cap, size_t *len) {
    size_t n = 0, start;

    s->pos++;
    for (;;) {
        const unsigned char *p = (const unsigned char *)s->buf + s->pos;
        const unsigned char *end = (const unsigned char *)s->buf + s->len;
        unsigned char c;

        /* local pointers: through s, every byte would reload s->pos */
        start = s->pos;
        p = skip_plain(p, end);
        s->pos = (size_t)(p - (const unsigned char *)s->buf);
        if (s->pos > start) put_run(dst, cap, &n, s->buf + start, s->pos - start);

        if (s->pos >= s->len) return fail_eof(s);
        c = (unsigned char)s->buf[s->pos];
        if (c == '"') break;
        if (c < 0x20) {
            return fail(s, s->pos, "unescaped control character in string");
        } else if (c == '\\') {
            if (scan_escape(s, dst, cap, &n) == JS_ERR) return JS_ERR;
        } else if (scan_utf8(s, dst, cap, &n) == JS_ERR) {
            return JS_ERR;
        }
    }
    s->pos++;
    *len = n;
    return JS_OK;
}

/* Unescapes a string value in place; it is kept in *out only when it is at
 * most max bytes long, otherwise the field stays absent. */
int adserve_js_string_in_place(scanner *s, adserve_str_t *out, size_t max) {
    char *start = s->buf + s->pos + 1;
    size_t n;

    if (scan_string(s, start, (size_t)-1, &n) == JS_ERR) return JS_ERR;
    if (n <= max) {
        out->data = start;
        out->len = n;
    }
    return JS_OK;
}

int adserve_js_string(scanner *s, char *dst, size_t cap, size_t *len) {
    return scan_string(s, dst, cap, len);
}

/* ----------------------------- Scalars --------------------------------- */

static int scan_digits(scanner *s) {
    if (!is_digit(peek(s))) return fail_here(s, "invalid number");
    while (is_digit(peek(s))) s->pos++;
    return JS_OK;
}

/* Scans an RFC 8259 number. *ival gets its value when it is a plain
 * non-negative integer (no sign, fraction or exponent), else -1. The value
 * saturates early, so huge integers cannot overflow: they are just "too
 * big to be a year of birth". */
static int scan_number(scanner *s, long *ival) {
    int plain = 1;
    long v = 0;

    if (peek(s) == '-') {
        plain = 0;
        s->pos++;
    }
    if (peek(s) == '0') {
        s->pos++;
        if (is_digit(peek(s))) return fail_here(s, "leading zero in number");
    } else {
        if (!is_digit(peek(s))) return fail_here(s, "invalid number");
        while (is_digit(peek(s))) {
            if (v < 100000) v = v * 10 + (s->buf[s->pos] - '0');
            s->pos++;
        }
    }
    if (peek(s) == '.') {
        plain = 0;
        s->pos++;
        if (scan_digits(s) == JS_ERR) return JS_ERR;
    }
    if (peek(s) == 'e' || peek(s) == 'E') {
        plain = 0;
        s->pos++;
        if (peek(s) == '+' || peek(s) == '-') s->pos++;
        if (scan_digits(s) == JS_ERR) return JS_ERR;
    }
    *ival = plain ? v : -1;
    return JS_OK;
}

static int scan_literal(scanner *s, const char *word, size_t len) {
    size_t i;

    for (i = 0; i < len; i++) {
        if (s->pos + i >= s->len) return fail_eof(s);
        if (s->buf[s->pos + i] != word[i]) return fail(s, s->pos, "invalid literal");
    }
    s->pos += len;
    return JS_OK;
}

/* ---------------------------- Containers ------------------------------- */

static int lookup_key(const adserve_js_grammar_t *g, int in, const char *key, size_t len) {
    size_t i;

    if (in == ADSERVE_JS_OTHER || len > ADSERVE_JS_KEY_MAX) return ADSERVE_JS_NONE;
    for (i = 0; i < g->nkeys; i++) {
        const adserve_js_key_t *k = &g->keys[i];
        if (k->in == in && k->len == len && memcmp(k->name, key, len) == 0)
            return k->f;
    }
    return ADSERVE_JS_NONE;
}

/* One "key": value member; s->pos is on the key's opening quote. */
static int parse_member(scanner *s, int depth, int in) {
    char buf[ADSERVE_JS_KEY_MAX];
    const char *key = s->buf + s->pos + 1;
    size_t klen, start = s->pos;
    int f;

    /* Validated where it stands. Only an escape makes a key's decoded
     * length differ from its bytes' (each one shortens it): without one,
     * which is nearly always, the key is its bytes, and nothing is copied.
     * With one, a key of a known object is decoded again, into buf. */
    if (scan_string(s, NULL, 0, &klen) == JS_ERR) return JS_ERR;
    if (in != ADSERVE_JS_OTHER && klen != s->pos - start - 2) {
        size_t end = s->pos;

        s->pos = start;
        (void)scan_string(s, buf, sizeof(buf), &klen);     /* valid: seen above */
        s->pos = end;
        key = buf;
    }
    skip_ws(s);
    if (peek(s) != ':') return fail_here(s, "expected ':' after object key");
    s->pos++;
    skip_ws(s);
    if (s->g->key != NULL) {
        f = in == ADSERVE_JS_OTHER ? ADSERVE_JS_NONE : s->g->key(s, in, key, klen);
    } else {
        f = lookup_key(s->g, in, key, klen);
        if (f != ADSERVE_JS_NONE) s->g->reset(s, f);
    }
    return parse_value(s, depth, f);
}

/* s->pos is on '{'; depth counts this object. */
static int parse_object(scanner *s, int depth, int in) {
    if (depth > ADSERVE_JSON_MAX_DEPTH) return fail(s, s->pos, "nesting too deep");
    s->pos++;
    skip_ws(s);
    if (peek(s) == '}') {
        s->pos++;
        return JS_OK;
    }
    for (;;) {
        /* Also rejects a trailing comma: a key must follow every ','. */
        if (peek(s) != '"') return fail_here(s, "expected string key");
        if (parse_member(s, depth, in) == JS_ERR) return JS_ERR;
        skip_ws(s);
        if (peek(s) == '}') break;
        if (peek(s) != ',') return fail_here(s, "expected ',' or '}' in object");
        s->pos++;
        skip_ws(s);
    }
    s->pos++;
    return JS_OK;
}

/* s->pos is on '['; depth counts this array; each element is for the
 * grammar's element field of f. */
static int parse_array(scanner *s, int depth, int f) {
    int elem = f != ADSERVE_JS_NONE && s->g->element ? s->g->element(f) : ADSERVE_JS_NONE;

    if (depth > ADSERVE_JSON_MAX_DEPTH) return fail(s, s->pos, "nesting too deep");
    s->pos++;
    skip_ws(s);
    if (peek(s) == ']') {
        s->pos++;
        return JS_OK;
    }
    for (;;) {
        if (parse_value(s, depth, elem) == JS_ERR) return JS_ERR;
        skip_ws(s);
        if (peek(s) == ']') break;
        if (peek(s) != ',') return fail_here(s, "expected ',' or ']' in array");
        s->pos++;
        skip_ws(s);
    }
    s->pos++;
    return JS_OK;
}

static int parse_object_value(scanner *s, int depth, int f) {
    size_t start = s->pos;
    int in = f != ADSERVE_JS_NONE ? s->g->object(s, f) : ADSERVE_JS_OTHER;

    if (parse_object(s, depth + 1, in) == JS_ERR) return JS_ERR;
    if (f != ADSERVE_JS_NONE && s->g->object_done) s->g->object_done(s, f, start);
    return JS_OK;
}

static int parse_number_value(scanner *s, int f) {
    size_t start = s->pos;
    long v = -1;    /* quiets a false maybe-uninitialized at -O1 */

    if (scan_number(s, &v) == JS_ERR) return JS_ERR;
    if (s->g->number_max != 0 && s->pos - start > s->g->number_max)
        return fail(s, start, "number too long");
    if (f != ADSERVE_JS_NONE) s->g->number(s, f, start, v);
    return JS_OK;
}

static int parse_literal_value(scanner *s, int f, const char *word, size_t len) {
    if (scan_literal(s, word, len) == JS_ERR) return JS_ERR;
    if (f != ADSERVE_JS_NONE && s->g->literal) s->g->literal(s, f, word[0]);
    return JS_OK;
}

static int parse_string_value(scanner *s, int f) {
    size_t n;

    return f != ADSERVE_JS_NONE ? s->g->string(s, f) : scan_string(s, NULL, 0, &n);
}

/* Any value; depth is that of the enclosing container. */
static int parse_value(scanner *s, int depth, int f) {
    switch (peek(s)) {
    case '{': return parse_object_value(s, depth, f);
    case '[': return parse_array(s, depth + 1, f);
    case '"': return parse_string_value(s, f);
    case 't': return parse_literal_value(s, f, "true", 4);
    case 'f': return parse_literal_value(s, f, "false", 5);
    case 'n': return parse_literal_value(s, f, "null", 4);
    case '-': case '0': case '1': case '2': case '3': case '4':
    case '5': case '6': case '7': case '8': case '9':
        return parse_number_value(s, f);
    default:
        return fail_here(s, "unexpected character, expected a value");
    }
}

int adserve_js_scan(scanner *s, char *buf, size_t len, const adserve_js_grammar_t *g,
    void *out)
{
    s->buf = buf;
    s->len = buf ? len : 0;
    s->pos = 0;
    s->g = g;
    s->out = out;
    s->slot = -1;
    s->err = NULL;
    s->err_off = 0;

    skip_ws(s);
    if (s->pos >= s->len) return fail(s, s->len, "empty input");
    if (peek(s) != '{') return fail(s, s->pos, "top-level value must be an object");
    if (parse_object(s, 1, g->object(s, ADSERVE_JS_NONE)) == JS_ERR) return JS_ERR;
    skip_ws(s);
    if (s->pos < s->len) return fail(s, s->pos, "unexpected data after top-level object");
    return JS_OK;
}

int adserve_js_read(char *buf, size_t len, const adserve_js_grammar_t *g, void *out,
    size_t size, const char **err)
{
    scanner s;

    memset(out, 0, size);
    if (adserve_js_scan(&s, buf, len, g, out) != JS_OK) {
        memset(out, 0, size);
        if (err != NULL) *err = s.err;
        return -1;
    }
    if (err != NULL) *err = NULL;
    return 0;
}

/* ------------------------- The ad request ------------------------------ */

/* Gender is decoded into a local buffer: we only need to know whether it
 * is exactly one of three letters, and the body need not change. */
static int scan_gender(scanner *s, adserve_ad_request_t *req) {
    char g[2];
    size_t n;

    if (scan_string(s, g, sizeof(g), &n) == JS_ERR) return JS_ERR;
    if (n == 1 && (g[0] == 'M' || g[0] == 'F' || g[0] == 'O'))
        req->gender = g[0];
    return JS_OK;
}

static int request_string(scanner *s, int f) {
    adserve_ad_request_t *req = s->out;
    size_t n;

    switch (f) {
    case F_VERSION: return adserve_js_string_in_place(s, &req->version, (size_t)-1);
    case F_USER_ID: return adserve_js_string_in_place(s, &req->user_id, ADSERVE_USER_ID_MAX);
    case F_UA:      return adserve_js_string_in_place(s, &req->ua, ADSERVE_UA_MAX);
    case F_ITEM:    return adserve_js_string_in_place(s, &req->item_id, ADSERVE_ITEM_ID_MAX);
    case F_CONTEXT: return adserve_js_string_in_place(s, &req->context, ADSERVE_CONTEXT_MAX);
    case F_GENDER:  return scan_gender(s, req);
    default:        return scan_string(s, NULL, 0, &n);
    }
}

static void request_number(scanner *s, int f, size_t start, long v) {
    adserve_ad_request_t *req = s->out;

    (void)start;
    if (f == F_YOB && v >= ADSERVE_YOB_MIN && v <= ADSERVE_YOB_MAX)
        req->yob = (int)v;
}

/* A duplicate key replaces the previous member entirely ("last one wins"),
 * so everything the member may have set is cleared before its new value
 * is scanned, whatever the new value's type. */
static void request_reset(scanner *s, int f) {
    static const adserve_str_t none = { NULL, 0 };
    adserve_ad_request_t *req = s->out;

    switch (f) {
    case F_VERSION: req->version = none; break;
    case F_USER:    req->user_id = none; req->yob = 0; req->gender = 0; break;
    case F_DEVICE:  req->ua = none; break;
    case F_EXT:     req->kv = none; req->item_id = none; req->context = none; break;
    case F_USER_ID: req->user_id = none; break;
    case F_YOB:     req->yob = 0; break;
    case F_GENDER:  req->gender = 0; break;
    case F_UA:      req->ua = none; break;
    case F_KV:      req->kv = none; break;
    case F_ITEM:    req->item_id = none; break;
    case F_CONTEXT: req->context = none; break;
    default:        break;
    }
}

static int request_object(scanner *s, int f) {
    (void)s;
    switch (f) {
    case ADSERVE_JS_NONE: return OBJ_ROOT;
    case F_USER:          return OBJ_USER;
    case F_DEVICE:        return OBJ_DEVICE;
    case F_EXT:           return OBJ_EXT;
    default:              return ADSERVE_JS_OTHER;
    }
}

/* kv only records its raw span (its strings are scanned without writes,
 * as for any unknown member, because the span is re-parsed later). */
static void request_object_done(scanner *s, int f, size_t start) {
    adserve_ad_request_t *req = s->out;

    if (f == F_KV) {
        req->kv.data = s->buf + start;
        req->kv.len = s->pos - start;
    }
}

static const adserve_js_grammar_t request_grammar = {
    known_keys, sizeof(known_keys) / sizeof(known_keys[0]),
    request_reset, request_string, request_number, request_object, request_object_done, NULL,
    NULL, NULL, 0
};

/* ------------------------------- API ----------------------------------- */

int adserve_json_parse_ad_request(char *buf, size_t len, adserve_ad_request_t *req,
    const char **err, size_t *err_off)
{
    scanner s;

    memset(req, 0, sizeof(*req));
    if (adserve_js_scan(&s, buf, len, &request_grammar, req) == JS_ERR) {
        /* Never hand out half a request. */
        memset(req, 0, sizeof(*req));
    }
    if (err) *err = s.err;
    if (err_off) *err_off = s.err_off;
    return s.err ? JS_ERR : JS_OK;
}
