/* json_test.c -- TAP tests for the ad request JSON scanner (adserve_json.c).
 *
 * Every input is copied into an exactly sized heap buffer before parsing,
 * so that under AddressSanitizer any read or write past the end of the
 * body is caught, as it would be a bug in the nginx worker. */

#include "adserve_json.h"
#include "tap.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define SPEC_EXAMPLE \
    "{\"version\":\"0.1.0\",\"user\":{\"id\":\"u1\",\"yob\":1990,\"gender\":\"F\"}," \
    "\"device\":{\"ua\":\"Mozilla/5.0\"},\"ext\":{\"kv\":{\"section\":[\"sports\"]}}}"

/* The buffer of the last parse: req's strings point into it, so it lives
 * until the next parse. */
static char *held;

static int parse_mem(const char *json, size_t len, adserve_ad_request_t *req,
    const char **err, size_t *err_off)
{
    free(held);
    held = malloc(len);
    if (len) {
        if (held == NULL) abort();
        memcpy(held, json, len);
    }
    return adserve_json_parse_ad_request(held, len, req, err, err_off);
}

static int parse(const char *json, adserve_ad_request_t *req) {
    const char *err;
    size_t off;

    return parse_mem(json, strlen(json), req, &err, &off);
}

static int req_is_empty(const adserve_ad_request_t *r) {
    return r->version.data == NULL && r->version.len == 0 &&
           r->user_id.data == NULL && r->user_id.len == 0 &&
           r->ua.data == NULL && r->ua.len == 0 &&
           r->kv.data == NULL && r->kv.len == 0 &&
           r->yob == 0 && r->gender == 0;
}

/* Checks a string field; expected NULL means "absent". */
static int is_field(adserve_str_t got, const char *expected, const char *name) {
    return is_mem(got.data, got.len, expected, expected ? strlen(expected) : 0,
        "%s", name);
}

/* ----------------------------- Valid input ----------------------------- */

static void test_spec_example(void) {
    adserve_ad_request_t r;
    const char *err = "unset";
    size_t off = 99;
    const char *doc = SPEC_EXAMPLE;
    const char *kv = strstr(doc, "{\"section\"");

    is_int(parse_mem(doc, strlen(doc), &r, &err, &off), 0, "spec example parses");
    ok(err == NULL && off == 0, "success clears err and err_off");
    is_field(r.version, "0.1.0", "spec: version");
    is_field(r.user_id, "u1", "spec: user.id");
    is_int(r.yob, 1990, "spec: user.yob");
    is_int(r.gender, 'F', "spec: user.gender");
    is_field(r.ua, "Mozilla/5.0", "spec: device.ua");
    is_field(r.kv, "{\"section\":[\"sports\"]}", "spec: ext.kv raw span");
    ok(r.kv.data == held + (kv - doc), "spec: kv span points into the body");
    ok(r.version.data == held + 12, "spec: version points into the body");
}

static void test_minimal_and_whitespace(void) {
    adserve_ad_request_t r;

    is_int(parse("{}", &r), 0, "empty object parses");
    ok(req_is_empty(&r), "empty object: every field absent");
    is_int(parse(" \t\r\n{ \"version\" \r\n:\t\"1\" , \"x\" : [ ] } \n\t\r ", &r), 0,
        "whitespace (space, tab, CR, LF) around every token");
    is_field(r.version, "1", "whitespace: version");
    is_int(parse("{\"version\":\"\"}", &r), 0, "empty string value parses");
    ok(r.version.data != NULL && r.version.len == 0,
        "empty version is present (non-NULL data, len 0)");
    is_int(parse("{\"user\":{},\"device\":{},\"ext\":{}}", &r), 0,
        "empty known objects parse");
    ok(req_is_empty(&r), "empty known objects: every field absent");
}

static void test_unknown_members(void) {
    adserve_ad_request_t r;
    const char *doc =
        "{\"a\":[0,-0,1,-1,0.5,-0.25,1e5,1E+5,1e-5,2.5E-3,-0e0,"
        "123456789012345678901234567890,1.000000000000000000001],"
        "\"b\":{\"c\":{\"d\":[true,false,null,\"\",[],{},[[]],{\"e\":{}}]}},"
        "\"s\":\"\\u00e9\\n\",\"t\":true,\"f\":false,\"n\":null,"
        "\"version\":\"v\"}";

    is_int(parse(doc, &r), 0, "all value kinds in unknown members");
    is_field(r.version, "v", "unknown members: known field after them still read");
    ok(memcmp(held, doc, strlen(doc)) == 0,
        "unknown members: their bytes are not modified");
}

static void test_known_names_elsewhere(void) {
    adserve_ad_request_t r;

    is_int(parse("{\"id\":\"x\",\"yob\":1990,\"gender\":\"F\",\"ua\":\"u\","
        "\"kv\":{\"a\":1}}", &r), 0, "nested field names at top level parse");
    ok(req_is_empty(&r), "nested field names at top level are ignored");
    is_int(parse("{\"device\":{\"user\":{\"id\":\"x\"},\"id\":\"y\"},"
        "\"user\":{\"ua\":\"z\",\"version\":\"v\",\"kv\":{}}}", &r), 0,
        "field names in the wrong object parse");
    ok(req_is_empty(&r), "field names in the wrong object are ignored");
    is_int(parse("{\"a\":{\"version\":\"v\",\"user\":{\"id\":\"x\"}},"
        "\"b\":[{\"user\":{\"id\":\"x\"}}],\"ext\":{\"x\":{\"kv\":{}}}}", &r), 0,
        "known names nested in unknown members parse");
    ok(req_is_empty(&r), "known names nested in unknown members are ignored");
    is_int(parse("{\"Version\":\"v\",\"USER\":{\"id\":\"x\"},\"versionX\":\"v\","
        "\"version\\u0000\":\"v\",\"vers\":\"v\"}", &r), 0,
        "near-miss keys parse");
    ok(req_is_empty(&r), "keys match exactly and case-sensitively");
}

static void test_raw_utf8(void) {
    adserve_ad_request_t r;
    /* 2, 3 and 4 byte sequences at the edges of the valid ranges, DEL. */
    const char *v = "\xC2\x80 \xDF\xBF \xE0\xA0\x80 \xED\x9F\xBF \xEE\x80\x80 "
        "\xEF\xBF\xBF \xF0\x90\x80\x80 \xF4\x8F\xBF\xBF \x7F \xC3\xA9\xE2\x82\xAC";
    char doc[128];

    snprintf(doc, sizeof(doc), "{\"version\":\"%s\"}", v);
    is_int(parse(doc, &r), 0, "valid raw UTF-8 at range edges and DEL accepted");
    is_field(r.version, v, "raw UTF-8 bytes kept as they are");
    is_int(parse("{\"\xE2\x82\xAC\":\"\xF0\x9F\x98\x80\"}", &r), 0,
        "raw UTF-8 in an unknown key and value accepted");
}

static void test_escapes(void) {
    adserve_ad_request_t r;

    is_int(parse("{\"version\":\"a\\\"b\\\\c\\/d\\be\\ff\\ng\\rh\\ti\"}", &r), 0,
        "all simple escapes parse");
    is_field(r.version, "a\"b\\c/d\be\ff\ng\rh\ti", "simple escapes decoded");
    ok(r.version.data == held + 12, "escapes decoded in place");
    is_int(parse("{\"version\":\"\\u0041\\u00e9\\u00E9\\u20AC\\u20ac\\uFFFF\"}", &r), 0,
        "\\u escapes of 1, 2 and 3 UTF-8 bytes parse");
    is_field(r.version, "A\xC3\xA9\xC3\xA9\xE2\x82\xAC\xE2\x82\xAC\xEF\xBF\xBF",
        "\\u escapes decoded to UTF-8, either hex case");
    is_int(parse("{\"version\":\"x\\uD83D\\uDE00y\\ud800\\udc00\\uDBFF\\uDFFF\"}", &r), 0,
        "surrogate pairs parse");
    is_field(r.version, "x\xF0\x9F\x98\x80y\xF0\x90\x80\x80\xF4\x8F\xBF\xBF",
        "surrogate pairs combined into 4-byte UTF-8");
    is_int(parse("{\"version\":\"a\\u0000b\"}", &r), 0, "\\u0000 accepted");
    is_mem(r.version.data, r.version.len, "a\0b", 3, "\\u0000 decodes to a NUL byte");
    is_int(parse("{\"version\":\"\\u007f\\u0080\\u07FF\\u0800\\uD7FF\\uE000\"}", &r), 0,
        "\\u escapes at UTF-8 length boundaries parse");
    is_field(r.version, "\x7F\xC2\x80\xDF\xBF\xE0\xA0\x80\xED\x9F\xBF\xEE\x80\x80",
        "\\u escapes at UTF-8 length boundaries decoded");
}

static void test_escaped_keys(void) {
    adserve_ad_request_t r;
    const char *doc =
        "{\"\\u0075ser\":{\"\\u0069d\":\"u\",\"y\\u006Fb\":2000,\"gender\":\"\\u004D\"},"
        "\"ver\\u0073ion\":\"v\",\"\\u0064evice\":{\"u\\u0061\":\"ua\"},"
        "\"ext\":{\"\\u006b\\u0076\":{\"k\":1}}}";

    is_int(parse(doc, &r), 0, "escaped keys parse");
    is_field(r.user_id, "u", "\\u0075ser / \\u0069d matched as user.id");
    is_int(r.yob, 2000, "y\\u006Fb matched as yob");
    is_int(r.gender, 'M', "escaped gender value \\u004D is M");
    is_field(r.version, "v", "ver\\u0073ion matched as version");
    is_field(r.ua, "ua", "escaped device and ua keys matched");
    is_field(r.kv, "{\"k\":1}", "escaped kv key matched");
    ok(memcmp(held, doc, strlen(doc)) == 0,
        "escaped keys and gender are decoded aside: body bytes unchanged");
}

static void test_kv(void) {
    adserve_ad_request_t r, r2;
    const char *kvtext =
        "{ \"s\\u0065ction\" : [\"sp\\u00f6rts\\n\", \"\\uD83D\\uDE00\"],"
        " \"n\": {\"deep\": [1, 2.5, {\"x\": null}]} }";
    char doc[256];
    size_t len;

    len = (size_t)snprintf(doc, sizeof(doc), "{\"ext\":{\"a\":1,\"kv\":%s,\"b\":2}}",
        kvtext);
    is_int(parse(doc, &r), 0, "kv with escapes and nesting parses");
    is_field(r.kv, kvtext, "kv raw span exact, braces and whitespace included");
    ok(memcmp(held, doc, len) == 0, "kv strings are not unescaped in place");
    is_int(adserve_json_parse_ad_request((char *)r.kv.data, r.kv.len, &r2, NULL, NULL), 0,
        "kv span re-parses as a JSON object");

    is_int(parse("{\"ext\":{\"kv\":{}}}", &r), 0, "empty kv parses");
    is_field(r.kv, "{}", "empty kv span is {}");
    parse("{\"ext\":{\"kv\":[1,2]}}", &r);
    is_field(r.kv, NULL, "kv as an array is ignored");
    parse("{\"ext\":{\"kv\":\"{}\"}}", &r);
    is_field(r.kv, NULL, "kv as a string is ignored");
    parse("{\"ext\":{\"kv\":null}}", &r);
    is_field(r.kv, NULL, "kv as null is ignored");
    parse("{\"ext\":[{\"kv\":{}}]}", &r);
    is_field(r.kv, NULL, "ext as an array is ignored");
}

static void test_wrong_types(void) {
    adserve_ad_request_t r;
    static const char *docs[] = {
        "{\"version\":1}", "{\"version\":null}", "{\"version\":[\"1\"]}",
        "{\"version\":{}}", "{\"user\":[]}", "{\"user\":\"u1\"}", "{\"user\":null}",
        "{\"user\":{\"id\":1}}", "{\"user\":{\"id\":true}}", "{\"user\":{\"id\":[\"u\"]}}",
        "{\"user\":{\"id\":{\"v\":\"u\"}}}", "{\"device\":\"d\"}", "{\"device\":[{\"ua\":\"u\"}]}",
        "{\"device\":{\"ua\":1}}", "{\"device\":{\"ua\":{}}}", "{\"ext\":1}",
        "{\"ext\":\"kv\"}", "{\"user\":{\"gender\":1}}", "{\"user\":{\"gender\":null}}"
    };
    size_t i;

    for (i = 0; i < sizeof(docs) / sizeof(docs[0]); i++) {
        int rc = parse(docs[i], &r);
        ok(rc == 0 && req_is_empty(&r), "wrong type ignored: %s", docs[i]);
    }
}

static void test_yob(void) {
    static const struct { const char *v; int yob; } cases[] = {
        { "1990", 1990 }, { "1900", 1900 }, { "2100", 2100 },
        { "1899", 0 }, { "2101", 0 }, { "0", 0 }, { "-1990", 0 }, { "-0", 0 },
        { "1990.0", 0 }, { "1990.5", 0 }, { "1990e0", 0 }, { "1.99e3", 0 },
        { "19900", 0 }, { "99999999999999999999999999", 0 },
        { "\"1990\"", 0 }, { "null", 0 }, { "true", 0 }, { "[1990]", 0 }
    };
    adserve_ad_request_t r;
    char doc[96];
    size_t i;

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        snprintf(doc, sizeof(doc), "{\"user\":{\"yob\":%s}}", cases[i].v);
        ok(parse(doc, &r) == 0 && r.yob == cases[i].yob,
            "yob %s -> %d", cases[i].v, cases[i].yob);
    }
}

static void test_gender(void) {
    static const struct { const char *v; char g; } cases[] = {
        { "\"M\"", 'M' }, { "\"F\"", 'F' }, { "\"O\"", 'O' }, { "\"\\u004f\"", 'O' },
        { "\"m\"", 0 }, { "\"f\"", 0 }, { "\"X\"", 0 }, { "\"\"", 0 },
        { "\"MF\"", 0 }, { "\"M \"", 0 }, { "\"Male\"", 0 }, { "\"M\\u0000\"", 0 },
        { "\"\\u00c9\"", 0 }
    };
    adserve_ad_request_t r;
    char doc[96];
    size_t i;

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        snprintf(doc, sizeof(doc), "{\"user\":{\"gender\":%s}}", cases[i].v);
        ok(parse(doc, &r) == 0 && r.gender == cases[i].g,
            "gender %s -> %s", cases[i].v, cases[i].g ? "set" : "ignored");
    }
}

/* Builds {"<obj>":{"<key>":"<value>"}} with value n bytes of 'a', or n
 * "\u0061" escapes (6 bytes each, 1 once decoded). */
static char *field_doc(const char *obj, const char *key, size_t n, int escaped) {
    size_t cap = 64 + n * 6, i;
    char *doc = malloc(cap), *p;

    if (doc == NULL) abort();
    p = doc + sprintf(doc, "{\"%s\":{\"%s\":\"", obj, key);
    for (i = 0; i < n; i++) {
        if (escaped) p += sprintf(p, "\\u0061");
        else *p++ = 'a';
    }
    strcpy(p, "\"}}");
    return doc;
}

static void check_limit(const char *obj, const char *key, size_t max) {
    adserve_ad_request_t r;
    char *doc;

    doc = field_doc(obj, key, max, 0);
    ok(parse(doc, &r) == 0 && r.user_id.len + r.ua.len == max,
        "%s.%s of %zu bytes kept", obj, key, max);
    free(doc);
    doc = field_doc(obj, key, max + 1, 0);
    ok(parse(doc, &r) == 0 && req_is_empty(&r),
        "%s.%s of %zu bytes ignored", obj, key, max + 1);
    free(doc);
    doc = field_doc(obj, key, max, 1);
    ok(parse(doc, &r) == 0 && r.user_id.len + r.ua.len == max,
        "%s.%s limit counts unescaped bytes (%zu escapes kept)", obj, key, max);
    free(doc);
    doc = field_doc(obj, key, max + 1, 1);
    ok(parse(doc, &r) == 0 && req_is_empty(&r),
        "%s.%s of %zu escapes ignored", obj, key, max + 1);
    free(doc);
}

static void test_limits(void) {
    adserve_ad_request_t r;

    check_limit("user", "id", ADSERVE_USER_ID_MAX);
    check_limit("device", "ua", ADSERVE_UA_MAX);
    /* 255 ASCII + one 2-byte character: 257 bytes once decoded. */
    {
        char *doc = field_doc("user", "id", 255, 0);
        char *q = strstr(doc, "\"}}");
        char *tmp = malloc(strlen(doc) + 16);
        if (tmp == NULL) abort();
        *q = '\0';
        sprintf(tmp, "%s\\u00e9\"}}", doc);
        ok(parse(tmp, &r) == 0 && r.user_id.data == NULL,
            "user.id limit counts UTF-8 bytes, not characters");
        free(tmp);
        free(doc);
    }
}

static void test_duplicates(void) {
    adserve_ad_request_t r;
    const char *doc;

    parse("{\"version\":\"1\",\"version\":\"2\"}", &r);
    is_field(r.version, "2", "duplicate version: last wins");
    parse("{\"version\":\"1\",\"version\":2}", &r);
    is_field(r.version, NULL, "duplicate version with wrong type: absent");
    parse("{\"user\":{\"id\":\"a\",\"id\":\"b\"}}", &r);
    is_field(r.user_id, "b", "duplicate user.id: last wins");
    parse("{\"user\":{\"yob\":1990,\"yob\":1991}}", &r);
    is_int(r.yob, 1991, "duplicate yob: last wins");
    parse("{\"user\":{\"yob\":1990,\"yob\":1.5}}", &r);
    is_int(r.yob, 0, "duplicate yob with invalid value: ignored");
    parse("{\"user\":{\"gender\":\"M\",\"gender\":\"x\"}}", &r);
    is_int(r.gender, 0, "duplicate gender with invalid value: ignored");
    parse("{\"user\":{\"id\":\"a\",\"yob\":1990,\"gender\":\"M\"},\"user\":{\"yob\":2000}}", &r);
    ok(r.user_id.data == NULL && r.yob == 2000 && r.gender == 0,
        "duplicate user: the whole last object wins");
    parse("{\"user\":{\"id\":\"a\"},\"user\":null}", &r);
    ok(r.user_id.data == NULL, "duplicate user with wrong type: absent");
    parse("{\"device\":{\"ua\":\"a\"},\"device\":{\"ua\":\"b\"}}", &r);
    is_field(r.ua, "b", "duplicate device: last wins");
    parse("{\"device\":{\"ua\":\"a\",\"ua\":\"b\"}}", &r);
    is_field(r.ua, "b", "duplicate ua: last wins");
    doc = "{\"ext\":{\"kv\":{\"a\":1}},\"ext\":{\"kv\":{\"b\":2}}}";
    parse(doc, &r);
    is_field(r.kv, "{\"b\":2}", "duplicate ext: last wins");
    parse("{\"ext\":{\"kv\":{\"a\":1},\"kv\":{\"b\":2}}}", &r);
    is_field(r.kv, "{\"b\":2}", "duplicate kv: last wins");
    parse("{\"ext\":{\"kv\":{\"a\":1},\"kv\":[]}}", &r);
    is_field(r.kv, NULL, "duplicate kv with wrong type: absent");
}

/* ---------------------------- Invalid input ---------------------------- */

typedef struct {
    const char  *name;
    const char  *json;
    size_t       len;
} bad_case;

#define BAD(name, lit) { name, lit, sizeof(lit) - 1 }

static const bad_case bad_cases[] = {
    /* Document level. */
    BAD("empty input", ""),
    BAD("whitespace only", " \t\r\n"),
    BAD("top-level array", "[]"),
    BAD("top-level string", "\"{}\""),
    BAD("top-level number", "1"),
    BAD("top-level true", "true"),
    BAD("top-level null", "null"),
    BAD("trailing garbage", "{} x"),
    BAD("two objects", "{}{}"),
    BAD("comma after top-level object", "{},"),
    BAD("NUL after top-level object", "{}\0"),
    BAD("byte order mark", "\xEF\xBB\xBF{}"),
    BAD("form feed as whitespace", "\f{}"),
    BAD("vertical tab as whitespace", "{\v}"),
    BAD("no-break space as whitespace", "{\xC2\xA0}"),
    /* Structure. */
    BAD("unterminated object", "{"),
    BAD("unterminated object after member", "{\"a\":1"),
    BAD("unterminated object after comma", "{\"a\":1,"),
    BAD("missing value", "{\"a\":}"),
    BAD("missing colon", "{\"a\" 1}"),
    BAD("double colon", "{\"a\"::1}"),
    BAD("key without value", "{\"a\"}"),
    BAD("trailing comma in object", "{\"a\":1,}"),
    BAD("trailing comma in array", "{\"a\":[1,]}"),
    BAD("leading comma in object", "{,\"a\":1}"),
    BAD("leading comma in array", "{\"a\":[,1]}"),
    BAD("double comma in object", "{\"a\":1,,\"b\":2}"),
    BAD("double comma in array", "{\"a\":[1,,2]}"),
    BAD("missing comma in object", "{\"a\":1 \"b\":2}"),
    BAD("missing comma in array", "{\"a\":[1 2]}"),
    BAD("unterminated array", "{\"a\":[1,2"),
    BAD("array closed by brace", "{\"a\":[}"),
    BAD("object closed by bracket", "{\"a\":{]}"),
    BAD("extra closing brace", "{}}"),
    BAD("unquoted key", "{a:1}"),
    BAD("number as key", "{1:2}"),
    BAD("null as key", "{null:1}"),
    BAD("single-quoted key", "{'a':1}"),
    BAD("single-quoted value", "{\"a\":'x'}"),
    BAD("line comment", "{\"a\":1 // c\n}"),
    BAD("block comment", "{/* c */\"a\":1}"),
    BAD("hash comment", "{# c\n\"a\":1}"),
    /* Numbers. */
    BAD("leading zero", "{\"a\":01}"),
    BAD("leading zero after minus", "{\"a\":-01}"),
    BAD("double zero", "{\"a\":00}"),
    BAD("plus sign", "{\"a\":+1}"),
    BAD("leading dot", "{\"a\":.5}"),
    BAD("trailing dot", "{\"a\":1.}"),
    BAD("dot before exponent", "{\"a\":1.e5}"),
    BAD("exponent without digits", "{\"a\":1e}"),
    BAD("exponent sign without digits", "{\"a\":1e+}"),
    BAD("double exponent sign", "{\"a\":1e+-1}"),
    BAD("minus alone", "{\"a\":-}"),
    BAD("double minus", "{\"a\":--1}"),
    BAD("minus before dot", "{\"a\":-.5}"),
    BAD("hexadecimal number", "{\"a\":0x10}"),
    BAD("NaN", "{\"a\":NaN}"),
    BAD("Infinity", "{\"a\":Infinity}"),
    BAD("minus Infinity", "{\"a\":-Infinity}"),
    BAD("truncated number at end", "{\"a\":1"),
    BAD("bad yob still rejected", "{\"user\":{\"yob\":01990}}"),
    /* Literals and bare words. */
    BAD("bare word", "{\"a\":undefined}"),
    BAD("capitalised True", "{\"a\":True}"),
    BAD("upper-case NULL", "{\"a\":NULL}"),
    BAD("truncated literal", "{\"a\":tru}"),
    BAD("truncated literal at end", "{\"a\":fals"),
    BAD("literal with suffix", "{\"a\":truex}"),
    BAD("nulll", "{\"a\":nulll}"),
    /* Strings. */
    BAD("unterminated string", "{\"a\":\"abc"),
    BAD("unterminated key", "{\"abc"),
    BAD("raw newline in string", "{\"a\":\"x\ny\"}"),
    BAD("raw tab in string", "{\"a\":\"x\ty\"}"),
    BAD("raw NUL in string", "{\"a\":\"x\0y\"}"),
    BAD("raw 0x1f in string", "{\"a\":\"x\x1fy\"}"),
    BAD("raw CR in key", "{\"a\r\":1}"),
    BAD("invalid escape \\x", "{\"a\":\"\\x41\"}"),
    BAD("invalid escape \\'", "{\"a\":\"\\'\"}"),
    BAD("invalid escape \\a", "{\"a\":\"\\a\"}"),
    BAD("invalid escape \\0", "{\"a\":\"\\0\"}"),
    BAD("escaped newline", "{\"a\":\"\\\n\"}"),
    BAD("upper-case \\U escape", "{\"a\":\"\\U0041\"}"),
    BAD("short \\u escape", "{\"a\":\"\\u12\"}"),
    BAD("non-hex \\u escape", "{\"a\":\"\\u12G4\"}"),
    BAD("\\u escape truncated at end", "{\"a\":\"\\u00"),
    BAD("backslash at end of input", "{\"a\":\"\\"),
    BAD("invalid escape in key", "{\"\\q\":1}"),
    BAD("invalid escape in version", "{\"version\":\"\\q\"}"),
    /* Surrogates in escapes. */
    BAD("lone high surrogate", "{\"a\":\"\\uD800\"}"),
    BAD("lone high surrogate at end of string", "{\"a\":\"x\\uDBFF\"}"),
    BAD("high surrogate then text", "{\"a\":\"\\uD800abcdef\"}"),
    BAD("high surrogate then BMP escape", "{\"a\":\"\\uD800\\u0041\"}"),
    BAD("high surrogate then high", "{\"a\":\"\\uD800\\uD800\"}"),
    BAD("high surrogate then simple escape", "{\"a\":\"\\uD800\\n\"}"),
    BAD("high surrogate then bad \\u escape", "{\"a\":\"\\uD800\\uDC0G\"}"),
    BAD("lone low surrogate", "{\"a\":\"\\uDC00\"}"),
    BAD("lone low surrogate DFFF", "{\"a\":\"\\uDFFF\"}"),
    BAD("reversed surrogate pair", "{\"a\":\"\\uDC00\\uD800\"}"),
    BAD("lone surrogate in key", "{\"\\uD800\":1}"),
    BAD("lone surrogate in user.id", "{\"user\":{\"id\":\"\\uDE00\"}}"),
    /* UTF-8. */
    BAD("stray continuation byte", "{\"a\":\"\x80\"}"),
    BAD("overlong 2-byte C0 80", "{\"a\":\"\xC0\x80\"}"),
    BAD("overlong 2-byte C1 BF", "{\"a\":\"\xC1\xBF\"}"),
    BAD("overlong 3-byte E0 80 AF", "{\"a\":\"\xE0\x80\xAF\"}"),
    BAD("overlong 3-byte E0 9F BF", "{\"a\":\"\xE0\x9F\xBF\"}"),
    BAD("overlong 4-byte F0 80 80 AF", "{\"a\":\"\xF0\x80\x80\xAF\"}"),
    BAD("overlong 4-byte F0 8F BF BF", "{\"a\":\"\xF0\x8F\xBF\xBF\"}"),
    BAD("UTF-8 encoded high surrogate", "{\"a\":\"\xED\xA0\x80\"}"),
    BAD("UTF-8 encoded low surrogate", "{\"a\":\"\xED\xBF\xBF\"}"),
    BAD("UTF-8 encoded surrogate pair", "{\"a\":\"\xED\xA0\xBD\xED\xB8\x80\"}"),
    BAD("code point above U+10FFFF", "{\"a\":\"\xF4\x90\x80\x80\"}"),
    BAD("lead byte F5", "{\"a\":\"\xF5\x80\x80\x80\"}"),
    BAD("lead byte FF", "{\"a\":\"\xFF\"}"),
    BAD("5-byte sequence", "{\"a\":\"\xF8\x88\x80\x80\x80\"}"),
    BAD("truncated 2-byte sequence", "{\"a\":\"\xC3\"}"),
    BAD("truncated 3-byte sequence", "{\"a\":\"\xE2\x82\"}"),
    BAD("truncated 4-byte sequence", "{\"a\":\"\xF0\x9F\x98\"}"),
    BAD("sequence cut by ASCII", "{\"a\":\"\xE2" "A" "\xAC\"}"),
    BAD("sequence truncated at end of input", "{\"a\":\"\xF0\x9F"),
    BAD("invalid UTF-8 in key", "{\"\xC3\x28\":1}"),
    BAD("invalid UTF-8 in user.id", "{\"user\":{\"id\":\"\xC0\xAF\"}}"),
    BAD("raw non-ASCII outside strings", "{\xC3\xA9:1}"),
    /* Validation does not stop at known or ignored members. */
    BAD("bad escape inside kv", "{\"ext\":{\"kv\":{\"a\":\"\\x\"}}}"),
    BAD("trailing comma inside kv", "{\"ext\":{\"kv\":{\"a\":1,}}}"),
    BAD("bad value inside ignored user", "{\"user\":[01]}"),
    BAD("error after all fields were read",
        "{\"version\":\"1\",\"user\":{\"id\":\"u\",\"yob\":1990},\"x\":}"),
};

static void test_bad_cases(void) {
    size_t i, n = sizeof(bad_cases) / sizeof(bad_cases[0]);

    for (i = 0; i < n; i++) {
        const bad_case *c = &bad_cases[i];
        adserve_ad_request_t r;
        const char *err = NULL;
        size_t off = (size_t)-1;
        int rc = parse_mem(c->json, c->len, &r, &err, &off);

        ok(rc == -1 && err != NULL && off <= c->len && req_is_empty(&r),
            "rejects %s (%s at %zu)", c->name, err ? err : "no error", off);
    }
}

/* ----------------------------- Error offsets --------------------------- */

static void offset_is(const char *json, size_t expected, const char *why) {
    adserve_ad_request_t r;
    const char *err = NULL;
    size_t off = 0;
    int rc = parse_mem(json, strlen(json), &r, &err, &off);

    ok(rc == -1 && off == expected, "err_off %zu for %s (%s, got %zu)",
        expected, why, err ? err : "accepted", off);
}

static void test_error_offsets(void) {
    adserve_ad_request_t r;
    const char *err;

    offset_is("", 0, "empty input");
    offset_is("  [1]", 2, "non-object top level: the value");
    offset_is("{\"a\":1,}", 7, "trailing comma: the closing brace");
    offset_is("{\"a\":01}", 6, "leading zero: the second digit");
    offset_is("{\"a\":1.}", 7, "trailing dot: the byte after the dot");
    offset_is("{\"a\":\"x\\q\"}", 7, "invalid escape: its backslash");
    offset_is("{\"a\":\"x\\uDC00\"}", 7, "lone low surrogate: its backslash");
    offset_is("{\"a\":\"x\\uD800!\"}", 7, "unpaired high surrogate: its backslash");
    offset_is("{\"a\":\"xy\xE0\x80\x80\"}", 8, "overlong UTF-8: the lead byte");
    offset_is("{\"a\":\"x\ny\"}", 7, "control character: that byte");
    offset_is("{\"a\":", 5, "truncated after colon: end of input");
    offset_is("{\"a\":\"abc", 9, "unterminated string: end of input");
    offset_is("{\"a\":\"\\uD83D\\uDE", 16, "truncated surrogate pair: end of input");
    offset_is("{\"a\":tr", 7, "truncated literal: end of input");
    offset_is("{} x", 3, "trailing data: its first byte");

    ok(adserve_json_parse_ad_request(NULL, 0, &r, &err, NULL) == -1 &&
       strcmp(err, "empty input") == 0, "NULL buffer is empty input, NULL err_off ok");
    ok(adserve_json_parse_ad_request(held, 0, &r, NULL, NULL) == -1,
        "NULL err and err_off accepted");
}

/* ------------------------------ Nesting -------------------------------- */

/* {"a": followed by n-1 nested containers (alternating arrays and
 * objects) so that the total depth, top-level object included, is n. */
static char *nested_doc(int n, size_t *len) {
    char *doc = malloc((size_t)n * 8 + 16), *p = doc;
    int i;

    if (doc == NULL) abort();
    p += sprintf(p, "{\"a\":");
    for (i = 1; i < n; i++) p += sprintf(p, i % 2 ? "[" : "{\"b\":");
    p += sprintf(p, "0");
    for (i = n - 1; i >= 1; i--) *p++ = i % 2 ? ']' : '}';
    *p++ = '}';
    *len = (size_t)(p - doc);
    return doc;
}

static void test_nesting(void) {
    adserve_ad_request_t r;
    const char *err = NULL;
    size_t len, off, i;
    char *doc;

    doc = nested_doc(ADSERVE_JSON_MAX_DEPTH, &len);
    is_int(parse_mem(doc, len, &r, &err, &off), 0, "nesting depth 32 accepted");
    free(doc);

    doc = nested_doc(ADSERVE_JSON_MAX_DEPTH + 1, &len);
    ok(parse_mem(doc, len, &r, &err, &off) == -1 &&
       strcmp(err, "nesting too deep") == 0, "nesting depth 33 rejected");
    is_int(off < len ? doc[off] : -1, '{', "depth error points at the 33rd container's opening brace");
    free(doc);

    /* Arrays only, and far beyond the limit: must fail fast, not crash. */
    doc = malloc(100000);
    if (doc == NULL) abort();
    doc[0] = '{'; doc[1] = '"'; doc[2] = 'a'; doc[3] = '"'; doc[4] = ':';
    for (i = 5; i < 100000; i++) doc[i] = '[';
    ok(parse_mem(doc, 100000, &r, &err, &off) == -1 && off == 5 + 31,
        "100000 open brackets rejected at depth 33");
    free(doc);

    /* kv counts towards the depth like any other object. */
    {
        char buf[256], *p = buf;
        int d;
        p += sprintf(p, "{\"ext\":{\"kv\":");
        for (d = 3; d <= ADSERVE_JSON_MAX_DEPTH; d++) *p++ = '[';
        for (d = 3; d <= ADSERVE_JSON_MAX_DEPTH; d++) *p++ = ']';
        strcpy(p, "}}");
        ok(parse(buf, &r) == 0 && r.kv.data == NULL,
            "array at depth 3..32 under kv parses (kv not an object: ignored)");
        p = buf + sprintf(buf, "{\"ext\":{\"kv\":{\"x\":");
        for (d = 4; d <= ADSERVE_JSON_MAX_DEPTH + 1; d++) *p++ = '[';
        for (d = 4; d <= ADSERVE_JSON_MAX_DEPTH + 1; d++) *p++ = ']';
        strcpy(p, "}}}");
        ok(parse(buf, &r) == -1, "depth 33 inside kv rejected");
    }
}

/* -------------------------------- Fuzz --------------------------------- */

static uint64_t rng_state = 0x9E3779B97F4A7C15ULL;

static uint32_t rnd(uint32_t n) {
    /* xorshift64*: deterministic across platforms, good enough here. */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return (uint32_t)((rng_state * 0x2545F4914F6CDD1DULL) >> 32) % n;
}

static int valid_utf8(const unsigned char *p, size_t len) {
    size_t i = 0, need, k;

    while (i < len) {
        unsigned char c = p[i];
        unsigned long cp;
        if (c < 0x80) { i++; continue; }
        if (c >= 0xC2 && c <= 0xDF) { need = 1; cp = c & 0x1F; }
        else if (c >= 0xE0 && c <= 0xEF) { need = 2; cp = c & 0x0F; }
        else if (c >= 0xF0 && c <= 0xF4) { need = 3; cp = c & 0x07; }
        else return 0;
        if (len - i <= need) return 0;
        for (k = 1; k <= need; k++) {
            if ((p[i + k] & 0xC0) != 0x80) return 0;
            cp = (cp << 6) | (p[i + k] & 0x3F);
        }
        if ((need == 2 && cp < 0x800) || (need == 3 && cp < 0x10000) ||
            (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) return 0;
        i += need + 1;
    }
    return 1;
}

static int str_ok(adserve_str_t s, const char *buf, size_t len, size_t max) {
    if (s.data == NULL) return s.len == 0;
    return s.data >= buf && s.len <= max && (size_t)(s.data - buf) <= len - s.len &&
           valid_utf8((const unsigned char *)s.data, s.len);
}

/* Everything a successful parse promises; returns 0 on a violation. */
static int result_ok(const adserve_ad_request_t *r, const char *buf, size_t len) {
    adserve_ad_request_t sub;
    char *copy;
    int rc;

    if (!str_ok(r->version, buf, len, len) || !str_ok(r->user_id, buf, len, 256) ||
        !str_ok(r->ua, buf, len, 2048) || !str_ok(r->kv, buf, len, len))
        return 0;
    if (r->yob != 0 && (r->yob < 1900 || r->yob > 2100)) return 0;
    if (r->gender != 0 && r->gender != 'M' && r->gender != 'F' && r->gender != 'O')
        return 0;
    if (r->kv.data == NULL) return 1;
    if (r->kv.len < 2 || r->kv.data[0] != '{' || r->kv.data[r->kv.len - 1] != '}')
        return 0;
    /* The kv span must itself be a valid object for the later re-parse. */
    copy = malloc(r->kv.len);
    if (copy == NULL) abort();
    memcpy(copy, r->kv.data, r->kv.len);
    rc = adserve_json_parse_ad_request(copy, r->kv.len, &sub, NULL, NULL);
    free(copy);
    return rc == 0;
}

static const char fuzz_alphabet[] =
    "{}[]\":,\\/ \t\n-+.0123456789eEtrufalsnuxDC"
    "\x00\x01\x1f\x7f\x80\xbf\xc0\xc2\xdf\xe0\xed\xef\xf0\xf4\xf5\xff";

static size_t mutate(char *d, size_t len, size_t cap) {
    size_t at = len ? rnd((uint32_t)len) : 0, n;
    char c = fuzz_alphabet[rnd(sizeof(fuzz_alphabet) - 1)];

    switch (rnd(8)) {
    case 0: if (len) d[at] ^= (char)(1 << rnd(8)); break;
    case 1: if (len) d[at] = (char)rnd(256); break;
    case 2: if (len) d[at] = c; break;
    case 3:
        if (len < cap) {
            memmove(d + at + 1, d + at, len - at);
            d[at] = c;
            len++;
        }
        break;
    case 4:
        if (len) {
            memmove(d + at, d + at + 1, len - at - 1);
            len--;
        }
        break;
    case 5: len = len ? rnd((uint32_t)len + 1) : 0; break;
    case 6:
        /* Duplicate a chunk: grows nesting and repeats keys. */
        n = len ? rnd((uint32_t)(len - at)) + 1 : 0;
        if (n > 64) n = 64;
        if (len + n <= cap) {
            memmove(d + at + n, d + at, len - at);
            len += n;
        }
        break;
    default:
        /* Swap two bytes. */
        if (len) {
            size_t b = rnd((uint32_t)len);
            char t = d[at];
            d[at] = d[b];
            d[b] = t;
        }
        break;
    }
    return len;
}

static void test_fuzz(void) {
    static const char *seeds[] = {
        SPEC_EXAMPLE,
        "{\"version\":\"\\u00e9\\uD83D\\uDE00 \xC3\xA9\xF0\x9F\x98\x80\",\"user\":{\"id\":"
        "\"a\\\"b\\\\c\",\"yob\":2000,\"gender\":\"\\u004F\"},\"device\":{\"ua\":"
        "\"Mozilla\\/5.0 (X11)\"},\"ext\":{\"kv\":{\"k\":[1,-2.5e3,true,false,null,"
        "{\"x\":{}}],\"s\":\"\\t\"}}}",
        "{\"n\":[0,-0,1.5,-1e10,2E-3,123456789012345678901234567890],\"user\":{\"yob\":1900}}",
        " { \"user\" : { \"id\" : \"x\" , \"gender\" : \"M\" } , \"ext\" : { \"kv\" : { } } } ",
        "{\"a\":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[0]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}",
        "{\"\\u0075ser\":{\"\\u0069d\":\"\\uDBFF\\uDFFF\"},\"version\":\"1\",\"version\":2}"
    };
    enum { ITERATIONS = 200000, CAP = 1024 };
    char work[CAP];
    size_t nseeds = sizeof(seeds) / sizeof(seeds[0]);
    unsigned long accepted = 0, bad_err = 0, bad_result = 0;
    long it;

    for (it = 0; it < ITERATIONS; it++) {
        const char *seed = seeds[rnd((uint32_t)nseeds)];
        size_t len = strlen(seed), rounds = 1 + rnd(4), k;
        adserve_ad_request_t r;
        const char *err = NULL;
        size_t off = 0;
        char *buf;

        memcpy(work, seed, len);
        for (k = 0; k < rounds; k++) len = mutate(work, len, CAP);
        buf = malloc(len);
        if (len && buf == NULL) abort();
        if (len) memcpy(buf, work, len);
        if (adserve_json_parse_ad_request(buf, len, &r, &err, &off) == 0) {
            accepted++;
            if (err != NULL || !result_ok(&r, buf, len)) bad_result++;
        } else if (err == NULL || off > len || !req_is_empty(&r)) {
            bad_err++;
        }
        free(buf);
    }
    ok(bad_result == 0, "fuzz: every accepted mutation gives a sane request "
        "(%lu of %d accepted, %lu violations)", accepted, ITERATIONS, bad_result);
    ok(bad_err == 0, "fuzz: every rejected mutation reports an error in range "
        "(%lu violations)", bad_err);
    ok(accepted > 0 && accepted < ITERATIONS, "fuzz: both outcomes exercised");
}

/* A recommendation's facts: ext.item_id and ext.context, strings within
 * their bounds; anything else ignored, a duplicate ext clears them. */
static void test_recommendation_fields(void) {
    adserve_ad_request_t r;
    char long_id[300];

    is_int(parse("{\"ext\":{\"item_id\":\"art:a\",\"context\":\"blog\",\"kv\":{}}}", &r), 0,
           "ext.item_id and ext.context parse");
    is_field(r.item_id, "art:a", "ext.item_id");
    is_field(r.context, "blog", "ext.context");
    is_int(parse("{\"ext\":{\"item_id\":7,\"context\":null}}", &r), 0, "of the wrong types");
    ok(r.item_id.data == NULL && r.context.data == NULL, "... ignored");
    snprintf(long_id, sizeof(long_id), "{\"ext\":{\"item_id\":\"%0129d\"}}", 0);
    is_int(parse(long_id, &r), 0, "an item_id of 129 bytes");
    ok(r.item_id.data == NULL, "... ignored (128 at most)");
    is_int(parse("{\"ext\":{\"item_id\":\"a\"},\"ext\":{\"context\":\"c\"}}", &r), 0,
           "ext twice");
    ok(r.item_id.data == NULL, "... the last one wins whole");
    is_field(r.context, "c", "... with its own context");
    is_int(parse("{\"user\":{\"item_id\":\"a\"}}", &r), 0, "item_id outside ext");
    ok(r.item_id.data == NULL, "... is not the item");
}

int main(void) {
    test_recommendation_fields();
    test_spec_example();
    test_minimal_and_whitespace();
    test_unknown_members();
    test_known_names_elsewhere();
    test_raw_utf8();
    test_escapes();
    test_escaped_keys();
    test_kv();
    test_wrong_types();
    test_yob();
    test_gender();
    test_limits();
    test_duplicates();
    test_bad_cases();
    test_error_offsets();
    test_nesting();
    test_fuzz();
    free(held);
    return done_testing();
}
