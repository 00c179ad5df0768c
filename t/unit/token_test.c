/* token_test.c -- TAP tests for the ad_log token (adserve_token.c): the key
 * file parser, the encode/decode round trip, key rotation, and rejection of
 * every forged, altered, truncated or malformed token; each under both
 * ciphers (libsodium's AES-GCM where the CPU has AES-NI, OpenSSL's EVP),
 * and each opening the other's tokens.
 *
 * Token and decode buffers are exactly sized heap blocks, so that under
 * AddressSanitizer any write past ADSERVE_TOKEN_MAX / ADSERVE_TOKEN_BUF is
 * caught. */

#include "adserve_token.h"
#include "tap.h"

#include <sodium.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KEY_A  "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
#define KEY_B  "F0E1D2C3B4A5968778695A4B3C2D1E0FFFEEDDCCBBAA99887766554433221100"
#define KEY_C  "5555555555555555555555555555555555555555555555555555555555555555"

static const char b64[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

static int evp_only;            /* the fixtures' cipher: 1, OpenSSL's EVP */
static char *tokbuf;            /* ADSERVE_TOKEN_MAX bytes, exactly */
static unsigned char *decbuf;   /* ADSERVE_TOKEN_BUF bytes, exactly */


/* ---- helpers ------------------------------------------------------------ */

static int parse(adserve_tokens_t *t, const char *text, char *err, size_t errlen) {
    err[0] = '\0';
    return adserve_tokens_parse(t, text, strlen(text), err, errlen);
}

/* parses and starts a key set; aborts the run on failure (a fixture) */
static void keys(adserve_tokens_t *t, const char *text) {
    char err[128];

    if (parse(t, text, err, sizeof(err)) != 0) {
        diag("fixture key file failed: %s", err);
        abort();
    }

    t->evp_only = evp_only;
    if (adserve_tokens_start(t) != 0) {
        diag("fixture keys did not start");
        abort();
    }
}

static adserve_str_t str(const char *s) {
    adserve_str_t v;
    v.data = s;
    v.len = s ? strlen(s) : 0;
    return v;
}

static adserve_ad_log_t sample_log(void) {
    adserve_ad_log_t log;

    memset(&log, 0, sizeof(log));
    log.issued = 1748736000;
    log.price_micros = 2500000;
    log.cost_type = ADSERVE_COST_CPM;
    log.ad_unit = str("unit-1");
    log.line_item = str("li-42");
    log.creative = str("cr-7");
    log.user = str("user-abc");
    return log;
}

/* encodes into a NUL-terminated copy in out (ADSERVE_TOKEN_MAX + 1) */
static size_t encode(adserve_tokens_t *t, adserve_ad_log_t *log, char *out) {
    size_t n = adserve_token_encode(t, log, tokbuf);

    memcpy(out, tokbuf, n);
    out[n] = '\0';
    return n;
}

static int decode(adserve_tokens_t *t, const char *tok, size_t len, adserve_ad_log_t *log) {
    memset(log, 0, sizeof(*log));
    return adserve_token_decode(t, tok, len, log, decbuf);
}

static int str_eq(adserve_str_t a, adserve_str_t b) {
    return a.len == b.len && (a.len == 0 || memcmp(a.data, b.data, a.len) == 0);
}

static int same_log(const adserve_ad_log_t *a, const adserve_ad_log_t *b) {
    return memcmp(a->request_id, b->request_id, ADSERVE_TOKEN_NONCE) == 0
        && a->issued == b->issued && a->price_micros == b->price_micros
        && a->cost_type == b->cost_type && str_eq(a->ad_unit, b->ad_unit)
        && str_eq(a->line_item, b->line_item) && str_eq(a->creative, b->creative)
        && str_eq(a->user, b->user) && str_eq(a->variant, b->variant)
        && str_eq(a->source, b->source) && str_eq(a->burl, b->burl);
}

static int b64v(char c) {
    const char *p = c ? strchr(b64, c) : NULL;
    return p ? (int) (p - b64) : -1;
}

/* plain base64url without padding, for building tokens by hand */
static size_t b64enc(const unsigned char *in, size_t len, char *out) {
    size_t i, o = 0;
    uint32_t v;

    for (i = 0; i + 2 < len; i += 3) {
        v = (uint32_t) in[i] << 16 | (uint32_t) in[i + 1] << 8 | in[i + 2];
        out[o++] = b64[v >> 18]; out[o++] = b64[(v >> 12) & 63];
        out[o++] = b64[(v >> 6) & 63]; out[o++] = b64[v & 63];
    }
    if (len - i == 1) {
        v = (uint32_t) in[i] << 16;
        out[o++] = b64[v >> 18]; out[o++] = b64[(v >> 12) & 63];
    } else if (len - i == 2) {
        v = (uint32_t) in[i] << 16 | (uint32_t) in[i + 1] << 8;
        out[o++] = b64[v >> 18]; out[o++] = b64[(v >> 12) & 63];
        out[o++] = b64[(v >> 6) & 63];
    }
    out[o] = '\0';
    return o;
}

static size_t b64dec(const char *in, size_t len, unsigned char *out) {
    size_t i, o = 0;
    uint32_t v = 0;
    int bits = 0;

    for (i = 0; i < len; i++) {
        v = v << 6 | (uint32_t) b64v(in[i]);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[o++] = (unsigned char) (v >> bits);
        }
    }
    return o;
}


/* ---- key file ----------------------------------------------------------- */

static void test_parse(void) {
    adserve_tokens_t t;
    char err[128], text[2048];
    int rc, i;
    size_t n;

    rc = parse(&t, "# adserve ad_log keys\n\n   \n\t# rotated 2025-06\n"
                   "  2\t " KEY_B " \r\n# old key\n1 " KEY_A "\n", err, sizeof(err));
    is_int(rc, 0, "parse: comments, blank lines, CRLF and indentation");
    is_int(t.nkeys, 2, "parse: two keys");
    ok(t.keys[0].kid == 2 && t.keys[1].kid == 1, "parse: kids in file order (2, 1)");
    ok(t.keys[1].key[0] == 0x00 && t.keys[1].key[1] == 0x01 && t.keys[1].key[31] == 0x1f,
       "parse: lowercase hex key bytes");
    ok(t.keys[0].key[0] == 0xf0 && t.keys[0].key[1] == 0xe1 && t.keys[0].key[31] == 0x00,
       "parse: uppercase hex key bytes");
    ok(t.keys[0].enc == NULL && t.keys[0].dec == NULL, "parse: no cipher context before start");

    is_int(parse(&t, "7 " KEY_A, err, sizeof(err)), 0, "parse: one key without final newline");
    is_int(t.nkeys, 1, "parse: one key");
    is_int(parse(&t, "0 " KEY_A "\n255 " KEY_B "\n", err, sizeof(err)), 0,
           "parse: kid 0 and 255 are valid");
    is_int(parse(&t, "007 " KEY_A "\n", err, sizeof(err)), 0, "parse: kid with leading zeros");
    is_int(t.keys[0].kid, 7, "parse: kid 007 is 7");

    {
        static const char *const bad[] = {
            "256 " KEY_A, "1000 " KEY_A, "-1 " KEY_A, "x1 " KEY_A, "1x " KEY_A,
            "1" KEY_A, "1 ", "1", " " KEY_A,
            "1 000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1",   /* 63 */
            "1 " KEY_A "f",                                                         /* 65 */
            "1 000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1eg",
            "1 0x0102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f",
            "1 " KEY_A " x", "1 " KEY_A " # trailing comment", "1 " KEY_A " " KEY_B,
            "1,"  KEY_A, "1 00 01 02 03 04 05 06 07 08 09 0a 0b 0c 0d 0e 0f 10 11 12 13 14",
        };
        for (i = 0; i < (int) (sizeof(bad) / sizeof(bad[0])); i++) {
            is_int(parse(&t, bad[i], err, sizeof(err)), -1, "parse rejects line \"%s\"", bad[i]);
        }
    }
    is_int(parse(&t, "# c\n1 " KEY_A "\n\n2 zz\n", err, sizeof(err)), -1,
           "parse: a bad line after good ones fails the file");
    ok(strstr(err, "line 4") != NULL, "parse: the error names the line (%s)", err);

    is_int(parse(&t, "1 " KEY_A "\n1 " KEY_B "\n", err, sizeof(err)), -1,
           "parse: duplicate kid rejected");
    ok(strstr(err, "line 2") != NULL && strstr(err, "1") != NULL,
       "parse: duplicate kid error names line and kid (%s)", err);
    is_int(parse(&t, "9 " KEY_A "\n9 " KEY_A "\n", err, sizeof(err)), -1,
           "parse: duplicate kid with the same key rejected too");

    for (n = 0, i = 0; i < ADSERVE_TOKEN_KEYS; i++) {
        n += (size_t) snprintf(text + n, sizeof(text) - n, "%d %s\n", 10 + i, KEY_A);
    }
    is_int(parse(&t, text, err, sizeof(err)), 0, "parse: %d keys (the maximum)",
           ADSERVE_TOKEN_KEYS);
    is_int(t.nkeys, ADSERVE_TOKEN_KEYS, "parse: all keys kept");
    snprintf(text + n, sizeof(text) - n, "99 %s\n", KEY_B);
    is_int(parse(&t, text, err, sizeof(err)), -1, "parse: %d keys rejected",
           ADSERVE_TOKEN_KEYS + 1);
    ok(strstr(err, "more than") != NULL, "parse: too many keys message (%s)", err);
    snprintf(text + n, sizeof(text) - n, "# retired keys follow\n\n");
    is_int(parse(&t, text, err, sizeof(err)), 0,
           "parse: %d keys followed by a comment and a blank line", ADSERVE_TOKEN_KEYS);
    if (err[0]) diag("error was: %s", err);

    is_int(parse(&t, "", err, sizeof(err)), -1, "parse: empty file rejected");
    ok(strstr(err, "no key") != NULL, "parse: empty file says no key (%s)", err);
    is_int(parse(&t, "# nothing yet\n\n  \n", err, sizeof(err)), -1,
           "parse: comments only rejected");
    ok(strstr(err, "no key") != NULL, "parse: comments only says no key (%s)", err);

    /* embedded NUL and a length shorter than the text */
    is_int(adserve_tokens_parse(&t, "1 " KEY_A "\n2 " KEY_B, 2 + 64 + 1, err, sizeof(err)),
           0, "parse: honours len, not NUL");
    is_int(t.nkeys, 1, "parse: only the key inside len");
    is_int(adserve_tokens_parse(&t, "1 " KEY_A, 2 + 63, err, sizeof(err)), -1,
           "parse: a key cut by len is rejected");
}


/* ---- round trip --------------------------------------------------------- */

static void test_round_trip(void) {
    adserve_tokens_t t;
    adserve_ad_log_t in, out;
    char tok[ADSERVE_TOKEN_MAX + 1], user[ADSERVE_TOKEN_USER_MAX + 1];
    char id64[ADSERVE_TOKEN_ID_MAX + 2];
    size_t n;
    int i;

    keys(&t, "3 " KEY_A "\n");

    in = sample_log();
    n = encode(&t, &in, tok);
    ok(n > 0, "round trip: encode works (%zu chars)", n);
    ok(strspn(tok, b64) == n, "round trip: token is base64url only");
    is_int(decode(&t, tok, n, &out), 0, "round trip: decode works");
    ok(same_log(&in, &out), "round trip: every field survives");
    ok(memcmp(in.request_id, out.request_id, ADSERVE_TOKEN_NONCE) == 0,
       "round trip: request_id is the same after encode and decode");
    is_int(out.issued, 1748736000, "round trip: issued");
    is_int((long long) out.price_micros, 2500000, "round trip: price_micros");
    is_int(out.cost_type, ADSERVE_COST_CPM, "round trip: cost_type");
    is_mem(out.ad_unit.data, out.ad_unit.len, "unit-1", 6, "round trip: ad_unit");
    is_mem(out.line_item.data, out.line_item.len, "li-42", 5, "round trip: line_item");
    is_mem(out.creative.data, out.creative.len, "cr-7", 4, "round trip: creative");
    is_mem(out.user.data, out.user.len, "user-abc", 8, "round trip: user");
    ok((const unsigned char *) out.creative.data > decbuf
       && (const unsigned char *) out.creative.data < decbuf + ADSERVE_TOKEN_BUF,
       "round trip: decoded strings point into buf");
    {
        unsigned char raw[ADSERVE_TOKEN_BUF];
        b64dec(tok, n, raw);
        ok(raw[0] == 3 && memcmp(raw + 1, in.request_id, ADSERVE_TOKEN_NONCE) == 0,
           "round trip: token starts with kid and nonce = request_id");
    }

    /* empty user (absent and empty string) */
    in = sample_log();
    in.user.data = NULL;
    in.user.len = 0;
    n = encode(&t, &in, tok);
    ok(n > 0 && decode(&t, tok, n, &out) == 0 && out.user.len == 0 && same_log(&in, &out),
       "round trip: absent user decodes as empty");
    in.user = str("");
    n = encode(&t, &in, tok);
    ok(n > 0 && decode(&t, tok, n, &out) == 0 && out.user.len == 0,
       "round trip: empty user decodes as empty");

    /* 256-byte user of every byte value, extreme numbers, other cost types */
    for (i = 0; i < ADSERVE_TOKEN_USER_MAX; i++) user[i] = (char) (255 - i);
    in = sample_log();
    in.user.data = user;
    in.user.len = ADSERVE_TOKEN_USER_MAX;
    in.issued = -1;
    in.price_micros = UINT64_MAX;
    in.cost_type = ADSERVE_COST_CPA;
    n = encode(&t, &in, tok);
    ok(n > 0 && decode(&t, tok, n, &out) == 0 && same_log(&in, &out),
       "round trip: 256-byte binary user, issued -1, price UINT64_MAX, CPA");
    is_int((long long) out.user.len, ADSERVE_TOKEN_USER_MAX, "round trip: user length 256");
    in.user.len = ADSERVE_TOKEN_USER_MAX + 1;
    user[ADSERVE_TOKEN_USER_MAX] = 'x';
    is_int((long long) adserve_token_encode(&t, &in, tokbuf), 0,
           "encode: user of %d bytes returns 0", ADSERVE_TOKEN_USER_MAX + 1);

    /* id limits */
    memset(id64, 'i', sizeof(id64));
    id64[ADSERVE_TOKEN_ID_MAX] = '\0';
    in = sample_log();
    in.ad_unit = in.line_item = in.creative = str(id64);
    n = encode(&t, &in, tok);
    ok(n > 0 && decode(&t, tok, n, &out) == 0 && same_log(&in, &out),
       "round trip: three ids of ADSERVE_TOKEN_ID_MAX (%d) bytes", ADSERVE_TOKEN_ID_MAX);
    id64[ADSERVE_TOKEN_ID_MAX] = 'i';
    id64[ADSERVE_TOKEN_ID_MAX + 1] = '\0';
    in = sample_log();
    in.ad_unit = str(id64);
    is_int((long long) adserve_token_encode(&t, &in, tokbuf), 0, "encode: ad_unit over ID_MAX returns 0");
    in = sample_log();
    in.line_item = str(id64);
    is_int((long long) adserve_token_encode(&t, &in, tokbuf), 0, "encode: line_item over ID_MAX returns 0");
    in = sample_log();
    in.creative = str(id64);
    is_int((long long) adserve_token_encode(&t, &in, tokbuf), 0, "encode: creative over ID_MAX returns 0");

    adserve_tokens_stop(&t);
}


/* An experiment's variant rides as a trailer: a token without one is the
 * same bytes as before experiments, and still decodes. */
static void test_variant(void) {
    adserve_tokens_t t;
    adserve_ad_log_t in, out;
    char tok[ADSERVE_TOKEN_MAX + 1], var[ADSERVE_TOKEN_VARIANT_MAX + 2];
    size_t n, plain;

    keys(&t, "3 " KEY_A "\n");

    in = sample_log();
    plain = encode(&t, &in, tok);
    in.variant = str("8a6e0804-2bd0-4b5a-9c5e-6e1a9d1b4a57/short");
    n = encode(&t, &in, tok);
    ok(n > plain && decode(&t, tok, n, &out) == 0 && same_log(&in, &out),
       "variant: it survives the round trip");
    is_mem(out.variant.data, out.variant.len, in.variant.data, in.variant.len, "variant: its id");
    in = sample_log();
    n = encode(&t, &in, tok);
    ok(n == plain && decode(&t, tok, n, &out) == 0 && out.variant.len == 0,
       "variant: none, no trailer, and an empty one decoded");

    memset(var, 'v', sizeof(var));
    var[ADSERVE_TOKEN_VARIANT_MAX] = '\0';
    in.variant = str(var);
    n = encode(&t, &in, tok);
    ok(n > 0 && decode(&t, tok, n, &out) == 0 && same_log(&in, &out),
       "variant: ADSERVE_TOKEN_VARIANT_MAX (%d) bytes", ADSERVE_TOKEN_VARIANT_MAX);
    var[ADSERVE_TOKEN_VARIANT_MAX] = 'v';
    var[ADSERVE_TOKEN_VARIANT_MAX + 1] = '\0';
    in.variant = str(var);
    is_int((long long) adserve_token_encode(&t, &in, tokbuf), 0, "encode: a longer variant returns 0");

    adserve_tokens_stop(&t);
}


/* An external win's source and burl are trailers after the variant:
 * each combination survives, and the variant may be empty before them. */
static void test_external(void) {
    static char burl[ADSERVE_TOKEN_BURL_MAX + 2];
    adserve_tokens_t t;
    adserve_ad_log_t in, out;
    char tok[ADSERVE_TOKEN_MAX + 1];
    size_t n, plain;

    keys(&t, "3 " KEY_A "\n");

    in = sample_log();
    in.line_item = str("");
    plain = encode(&t, &in, tok);
    in.source = str("7d1c3a5e-0000-4000-8000-00000000abcd");
    n = encode(&t, &in, tok);
    ok(n > plain && decode(&t, tok, n, &out) == 0 && same_log(&in, &out)
       && out.variant.len == 0 && out.burl.len == 0,
       "external: a source alone, no variant before it");
    in.burl = str("https://bidder.example/bill?p=1.25&id=a%20b");
    n = encode(&t, &in, tok);
    ok(n > 0 && decode(&t, tok, n, &out) == 0 && same_log(&in, &out),
       "external: source and burl");
    is_mem(out.burl.data, out.burl.len, in.burl.data, in.burl.len, "external: the burl's bytes");
    in.variant = str("exp/v1");
    n = encode(&t, &in, tok);
    ok(n > 0 && decode(&t, tok, n, &out) == 0 && same_log(&in, &out),
       "external: variant, source and burl");
    in.source = str("");
    n = encode(&t, &in, tok);
    ok(n > 0 && decode(&t, tok, n, &out) == 0 && same_log(&in, &out) && out.source.len == 0,
       "external: a burl after an empty source");

    memset(burl, 'b', sizeof(burl));
    burl[ADSERVE_TOKEN_BURL_MAX] = '\0';
    in.burl = str(burl);
    n = encode(&t, &in, tok);
    ok(n > 0 && n <= ADSERVE_TOKEN_MAX && decode(&t, tok, n, &out) == 0 && same_log(&in, &out),
       "external: a burl of ADSERVE_TOKEN_BURL_MAX (%d) bytes", ADSERVE_TOKEN_BURL_MAX);
    burl[ADSERVE_TOKEN_BURL_MAX] = 'b';
    burl[ADSERVE_TOKEN_BURL_MAX + 1] = '\0';
    in.burl = str(burl);
    is_int((long long) adserve_token_encode(&t, &in, tokbuf), 0, "encode: a longer burl returns 0");

    adserve_tokens_stop(&t);
}


/* ---- rotation, kids ----------------------------------------------------- */

static void test_rotation(void) {
    adserve_tokens_t a, ba, b_only, a_as_9;
    adserve_ad_log_t in, out;
    char tok[ADSERVE_TOKEN_MAX + 1], forged[ADSERVE_TOKEN_MAX + 1];
    unsigned char raw[ADSERVE_TOKEN_BUF];
    size_t n, rn;

    keys(&a, "1 " KEY_A "\n");
    keys(&ba, "2 " KEY_B "\n1 " KEY_A "\n");
    keys(&b_only, "2 " KEY_B "\n");
    keys(&a_as_9, "9 " KEY_A "\n");

    in = sample_log();
    n = encode(&a, &in, tok);
    ok(n > 0 && decode(&ba, tok, n, &out) == 0 && same_log(&in, &out),
       "rotation: token under A decodes with \"B first, A second\"");
    is_int(decode(&b_only, tok, n, &out), -1, "rotation: token under A does not decode with B only");
    is_int(decode(&a_as_9, tok, n, &out), -1,
           "wrong kid: same key material under another kid rejects");

    in = sample_log();
    n = encode(&ba, &in, tok);
    b64dec(tok, n, raw);
    is_int(raw[0], 2, "rotation: the first key (B) encrypts");
    ok(decode(&ba, tok, n, &out) == 0 && same_log(&in, &out), "rotation: token under B decodes with B,A");
    ok(decode(&b_only, tok, n, &out) == 0 && same_log(&in, &out), "rotation: token under B decodes with B");
    is_int(decode(&a, tok, n, &out), -1, "rotation: token under B does not decode with only A");

    /* the kid is authenticated: re-labelling a token of kid 1 as kid 9
     * (same key material) must fail */
    in = sample_log();
    n = encode(&a, &in, tok);
    rn = b64dec(tok, n, raw);
    raw[0] = 9;
    b64enc(raw, rn, forged);
    is_int(decode(&a_as_9, forged, n, &out), -1, "wrong kid: kid byte swapped to another key's kid rejects");
    raw[0] = 200;
    b64enc(raw, rn, forged);
    is_int(decode(&a, forged, n, &out), -1, "wrong kid: unknown kid rejects");

    adserve_tokens_stop(&a);
    adserve_tokens_stop(&ba);
    adserve_tokens_stop(&b_only);
    adserve_tokens_stop(&a_as_9);
}


/* ---- tampering ---------------------------------------------------------- */

static void test_tampering(void) {
    adserve_tokens_t t;
    adserve_ad_log_t in, out;
    char tok[ADSERVE_TOKEN_MAX + 1], bad[ADSERVE_TOKEN_MAX + 2];
    unsigned char raw[ADSERVE_TOKEN_BUF], raw2[ADSERVE_TOKEN_BUF];
    size_t n, rn, i, j, tried = 0, accepted = 0, differ = 0;
    int k, v;

    keys(&t, "4 " KEY_C "\n");
    in = sample_log();
    n = encode(&t, &in, tok);
    ok(n > 0 && decode(&t, tok, n, &out) == 0, "tamper: pristine token decodes");

    /* every position, every other base64url character */
    for (i = 0; i < n; i++) {
        for (k = 0; k < 64; k++) {
            if (b64[k] == tok[i]) continue;
            memcpy(bad, tok, n);
            bad[i] = b64[k];
            tried++;
            if (decode(&t, bad, n, &out) == 0) {
                accepted++;
                if (!same_log(&in, &out)) differ++;
            }
        }
    }
    ok(accepted == 0 && differ == 0,
       "tamper: every single-character substitution rejected (%zu tried, %zu accepted, %zu altered)",
       tried, accepted, differ);

    /* every position, every bit of the character (mostly non-base64 results) */
    accepted = 0;
    for (i = 0; i < n; i++) {
        for (k = 0; k < 8; k++) {
            memcpy(bad, tok, n);
            bad[i] = (char) (bad[i] ^ (1 << k));
            accepted += decode(&t, bad, n, &out) == 0;
        }
    }
    is_int((long long) accepted, 0, "tamper: every bit flip of every text byte rejected");

    /* every bit of the raw token, re-encoded canonically */
    rn = b64dec(tok, n, raw);
    accepted = 0;
    for (i = 0; i < rn; i++) {
        for (k = 0; k < 8; k++) {
            memcpy(raw2, raw, rn);
            raw2[i] ^= (unsigned char) (1 << k);
            b64enc(raw2, rn, bad);
            accepted += decode(&t, bad, n, &out) == 0;
        }
    }
    is_int((long long) accepted, 0, "tamper: every bit flip of the raw token rejected (%zu bits)",
           rn * 8);

    /* truncation and extension */
    accepted = 0;
    for (i = 0; i < n; i++) {
        memcpy(bad, tok, i);
        accepted += decode(&t, bad, i, &out) == 0;
    }
    is_int((long long) accepted, 0, "truncation: every proper prefix rejected (lengths 0..%zu)", n - 1);
    rn = b64dec(tok, n, raw);
    accepted = 0;
    for (i = 1; i <= ADSERVE_TOKEN_TAG; i++) {
        b64enc(raw, rn - i, bad);
        accepted += decode(&t, bad, strlen(bad), &out) == 0;
    }
    is_int((long long) accepted, 0, "truncation: dropping 1..16 raw bytes (the tag) rejected");
    accepted = 0;
    for (k = 0; k < 64; k++) {
        memcpy(bad, tok, n);
        bad[n] = b64[k];
        accepted += decode(&t, bad, n + 1, &out) == 0;
    }
    is_int((long long) accepted, 0, "extension: one more character rejected");
    raw[rn] = 0;
    b64enc(raw, rn + 1, bad);
    is_int(decode(&t, bad, strlen(bad), &out), -1, "extension: one more raw byte rejected");

    /* non-base64 characters */
    {
        static const char inject[] = { '=', '+', '/', ' ', '\0', '.', '\n', '\x80', '\xff', '~' };
        accepted = 0;
        for (j = 0; j < sizeof(inject); j++) {
            for (i = 0; i < n; i += 7) {
                memcpy(bad, tok, n);
                bad[i] = inject[j];
                accepted += decode(&t, bad, n, &out) == 0;
            }
        }
        is_int((long long) accepted, 0, "non-base64: = + / space NUL . LF 0x80 0xff ~ rejected");
        memcpy(bad, tok, n);
        bad[n] = '=';
        is_int(decode(&t, bad, n + 1, &out), -1, "non-base64: '=' padding rejected");
    }

    /* over-long tokens */
    {
        char *longtok = malloc(ADSERVE_TOKEN_MAX * 2);
        if (longtok == NULL) abort();
        memset(longtok, 'A', ADSERVE_TOKEN_MAX * 2);
        is_int(decode(&t, longtok, ADSERVE_TOKEN_MAX + 1, &out), -1,
               "over-long: ADSERVE_TOKEN_MAX + 1 characters rejected");
        is_int(decode(&t, longtok, ADSERVE_TOKEN_MAX * 2, &out), -1,
               "over-long: 2 x ADSERVE_TOKEN_MAX characters rejected");
        memcpy(longtok, tok, n);
        is_int(decode(&t, longtok, ADSERVE_TOKEN_MAX, &out), -1,
               "over-long: a valid token padded to ADSERVE_TOKEN_MAX rejected");
        is_int(decode(&t, longtok, ADSERVE_TOKEN_MAX + 1, &out), -1,
               "over-long: a valid token padded past ADSERVE_TOKEN_MAX rejected");
        memset(longtok, 'x', ADSERVE_TOKEN_MAX);
        longtok[0] = 'B';   /* raw byte 0 = 1 << 2 | 0 = kid 4 */
        longtok[1] = 'A';
        is_int(decode(&t, longtok, ADSERVE_TOKEN_MAX, &out), -1,
               "over-long: ADSERVE_TOKEN_MAX characters of garbage with a known kid rejected");
        free(longtok);
    }

    /* non-canonical trailing bits: a token whose raw length is not a
     * multiple of 3 has spare low bits in its last character */
    {
        int cases = 0, rejected = 0;
        size_t ulen;
        char user[8] = "uuuuuuu";

        for (ulen = 0; ulen < 3; ulen++) {
            in = sample_log();
            in.user.data = user;
            in.user.len = ulen;
            n = encode(&t, &in, tok);
            if (n % 4 == 0) continue;
            if (decode(&t, tok, n, &out) != 0) continue;
            v = b64v(tok[n - 1]);
            for (k = 1; k < (n % 4 == 2 ? 16 : 4); k++) {
                memcpy(bad, tok, n);
                bad[n - 1] = b64[v | k];
                cases++;
                rejected += decode(&t, bad, n, &out) == -1;
            }
        }
        ok(cases == 15 + 3, "non-canonical: both 2- and 3-character tails exercised (%d cases)", cases);
        is_int(rejected, cases, "non-canonical: set unused low bits rejected");
        memcpy(bad, tok, n);
        bad[n] = 'A';
        is_int(decode(&t, bad, (n / 4) * 4 + 1, &out), -1,
               "non-canonical: length %% 4 == 1 rejected");
    }

    adserve_tokens_stop(&t);
}


/* ---- nonces and size ---------------------------------------------------- */

static int cmp_nonce(const void *a, const void *b) {
    return memcmp(a, b, ADSERVE_TOKEN_NONCE);
}

static void test_nonces_and_size(void) {
    adserve_tokens_t t;
    adserve_ad_log_t in, out;
    enum { N = 10000 };
    unsigned char (*nonces)[ADSERVE_TOKEN_NONCE] = malloc(N * ADSERVE_TOKEN_NONCE);
    unsigned char prefix[8], raw[ADSERVE_TOKEN_BUF];
    char tok[ADSERVE_TOKEN_MAX + 1], user[ADSERVE_TOKEN_USER_MAX], id[ADSERVE_TOKEN_ID_MAX];
    char var[ADSERVE_TOKEN_VARIANT_MAX];
    static char burl[ADSERVE_TOKEN_BURL_MAX];
    size_t n, maxlen = 0;
    int i, fail = 0, dups = 0;

    if (nonces == NULL) abort();
    keys(&t, "5 " KEY_B "\n");
    in = sample_log();
    for (i = 0; i < N; i++) {
        if (adserve_token_encode(&t, &in, tokbuf) == 0) fail++;
        memcpy(nonces[i], in.request_id, ADSERVE_TOKEN_NONCE);
    }
    qsort(nonces, N, ADSERVE_TOKEN_NONCE, cmp_nonce);
    for (i = 1; i < N; i++) dups += memcmp(nonces[i - 1], nonces[i], ADSERVE_TOKEN_NONCE) == 0;
    ok(fail == 0 && dups == 0, "nonces: %d consecutive tokens, all distinct (%d failed, %d dups)",
       N, fail, dups);

    /* the counter wraps into a fresh prefix, never a repeated nonce */
    t.counter = UINT32_MAX - 1;
    n = encode(&t, &in, tok);
    memcpy(prefix, in.request_id, 8);
    ok(n > 0 && in.request_id[8] == 0xff && in.request_id[11] == 0xff,
       "nonces: counter reaches 0xffffffff");
    n = encode(&t, &in, tok);
    ok(n > 0 && memcmp(prefix, in.request_id, 8) != 0 && in.request_id[11] == 1
       && in.request_id[8] == 0, "nonces: at wrap the prefix is drawn again, counter restarts");
    ok(decode(&t, tok, n, &out) == 0 && same_log(&in, &out), "nonces: token after wrap decodes");

    /* the largest token fits ADSERVE_TOKEN_MAX and decodes into ADSERVE_TOKEN_BUF
     * (an external win's: a burl could not ride on a recommendation's) */
    memset(user, 0xff, sizeof(user));
    memset(id, 'z', sizeof(id));
    in = sample_log();
    in.user.data = user;
    in.user.len = sizeof(user);
    in.ad_unit.data = in.line_item.data = in.creative.data = id;
    in.ad_unit.len = in.line_item.len = in.creative.len = sizeof(id);
    memset(var, 'v', sizeof(var));
    in.variant.data = var;
    in.variant.len = sizeof(var);
    in.source.data = id;
    in.source.len = sizeof(id);
    memset(burl, 'b', sizeof(burl));
    in.burl.data = burl;
    in.burl.len = sizeof(burl);
    in.price_micros = UINT64_MAX;
    in.issued = INT64_MIN;
    for (i = 0; i < 100; i++) {
        n = adserve_token_encode(&t, &in, tokbuf);   /* exact-size heap buffer */
        if (n > maxlen) maxlen = n;
    }
    ok(maxlen > 0 && maxlen <= ADSERVE_TOKEN_MAX, "size: maximal token %zu <= ADSERVE_TOKEN_MAX %d",
       maxlen, ADSERVE_TOKEN_MAX);
    is_int((long long) b64dec(tokbuf, n, raw), ADSERVE_TOKEN_RAW_MAX,
           "size: maximal token is ADSERVE_TOKEN_RAW_MAX raw bytes");
    ok(ADSERVE_TOKEN_BUF >= ADSERVE_TOKEN_RAW_MAX, "size: ADSERVE_TOKEN_BUF holds a raw token");
    ok(decode(&t, tokbuf, n, &out) == 0 && same_log(&in, &out),
       "size: maximal token decodes into an exact ADSERVE_TOKEN_BUF buffer");

    adserve_tokens_stop(&t);
    free(nonces);
}


/* ---- the two ciphers ---------------------------------------------------- */

/* Each opens the other's tokens, and refuses the other's altered ones;
 * the fast one is the one used where the CPU has AES-NI. */
static void test_ciphers(void) {
    adserve_tokens_t fast, evp;
    adserve_ad_log_t in, out;
    char tok[ADSERVE_TOKEN_MAX + 1];
    size_t n;
    int aesni, i, both = 1;

    aesni = sodium_init() >= 0 && crypto_aead_aes256gcm_is_available();
    evp_only = 0;
    keys(&fast, "3 " KEY_B "\n");
    evp_only = 1;
    keys(&evp, "3 " KEY_B "\n");
    evp_only = 0;

    diag("this CPU %s AES-NI", aesni ? "has" : "has no");
    is_int(fast.keys[0].gcm != NULL, aesni, "ciphers: libsodium's AES-GCM where the CPU has AES-NI");
    ok(evp.keys[0].gcm == NULL && evp.keys[0].enc != NULL, "ciphers: EVP when asked for");

    for (i = 0; i < 200; i++) {
        in = sample_log();
        in.price_micros = (uint64_t) i * 7919;
        n = encode(&fast, &in, tok);
        both &= n > 0 && decode(&evp, tok, n, &out) == 0 && same_log(&in, &out);
        n = encode(&evp, &in, tok);
        both &= n > 0 && decode(&fast, tok, n, &out) == 0 && same_log(&in, &out);
    }
    ok(both, "ciphers: 200 tokens of each open with the other");

    n = encode(&fast, &in, tok);
    tok[n / 2] = tok[n / 2] == 'A' ? 'B' : 'A';
    ok(decode(&evp, tok, n, &out) == -1 && decode(&fast, tok, n, &out) == -1,
       "ciphers: an altered token is refused by both");

    adserve_tokens_stop(&fast);
    adserve_tokens_stop(&evp);
    ok(fast.keys[0].gcm == NULL && evp.keys[0].enc == NULL, "ciphers: stop frees the states");
}


/* every test under the cipher of the CPU, then under EVP */
static void all(void) {
    test_parse();
    test_round_trip();
    test_variant();
    test_external();
    test_rotation();
    test_tampering();
    test_nonces_and_size();
}


int main(void) {
    tokbuf = malloc(ADSERVE_TOKEN_MAX);
    decbuf = malloc(ADSERVE_TOKEN_BUF);
    if (tokbuf == NULL || decbuf == NULL) abort();

    all();
    evp_only = 1;
    all();
    evp_only = 0;
    test_ciphers();

    free(tokbuf);
    free(decbuf);
    return done_testing();
}
