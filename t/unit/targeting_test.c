/* targeting_test.c -- TAP tests for line item targeting at serving
 * (adserve_target.c): the compiled rule against requests parsed by the
 * real scanner, every kv op, and/or/not, absent and multi-valued keys,
 * numbers, the ext.kv parser (escapes, bounds, robustness), the user-agent
 * classifier on real user agents, yob and gender, dayparts, malformed
 * rules, and the decision of a snapshot with targeted line items.
 *
 * JSON is written with single quotes for readability; the helpers turn
 * every ' into " (a real quote in a value is written \u0022 or \'). */

#include "adserve_snapshot.h"
#include "adserve_pacing.h"
#include "adserve_target.h"
#include "tap.h"
#include "kept.h"

#include <cjson/cJSON.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NOW   1748736000LL        /* 2025-06-01T00:00:00Z, a Sunday */
#define DAY   86400LL
#define MON   (NOW + DAY)         /* 2025-06-02T00:00:00Z */
#define HM(h, m)  ((h) * 3600LL + (m) * 60LL)


/* ---- helpers ------------------------------------------------------------ */

/* a copy with ' turned into " (malloc'd, exactly len + 1 bytes) */
static char *dq(const char *s) {
    size_t i, len = strlen(s);
    char *q = malloc(len + 1);

    if (q == NULL) abort();
    for (i = 0; i <= len; i++) q[i] = s[i] == '\'' ? '"' : s[i];
    return q;
}

static adserve_arena_t          arena;
static adserve_target_builder_t builder;

/* Compiles a targeting object; *rc gets the compiler's answer. */
static const adserve_target_t *compile(const char *json, int *rc) {
    char *text = dq(json);
    cJSON *o = cJSON_Parse(text);
    const adserve_target_t *t = NULL;

    if (o == NULL) {
        diag("test bug: not JSON: %s", text);
        abort();
    }
    *rc = adserve_target_compile(&builder, o, &t);
    cJSON_Delete(o);
    free(text);
    return t;
}

/* A rule that must compile to something. */
static const adserve_target_t *rule(const char *json) {
    int rc;
    const adserve_target_t *t = compile(json, &rc);

    if (rc != 0 || t == NULL) {
        diag("test bug: rule %s: rc %d, %s", json, rc, t ? "a rule" : "no rule");
        abort();
    }
    return t;
}

/* Parses body with the request scanner (into a buffer of exactly its
 * size, so ASan sees any read past it) and matches t at now. */
static int match_at(const adserve_target_t *t, const char *body, int64_t now) {
    static adserve_req_ctx_t ctx;
    adserve_ad_request_t req;
    char *buf = dq(body);
    const char *err;
    size_t off;
    int r;

    if (adserve_json_parse_ad_request(buf, strlen(buf), &req, &err, &off) != 0) {
        diag("test bug: body %s: %s at %zu", body, err, off);
        abort();
    }
    adserve_req_ctx_init(&ctx, &req);
    r = adserve_target_match(t, &ctx, now);
    /* evaluated twice: the facts are computed once and stay right */
    if (adserve_target_match(t, &ctx, now) != r) r = -1;
    ctx.memo = NULL;
    if (adserve_target_match(t, &ctx, now) != r) r = -1;
    free(buf);
    return r;
}

static int match(const adserve_target_t *t, const char *body) {
    return match_at(t, body, NOW);
}

/* the request {ext: {kv: KV}} */
static const char *kvreq(const char *kv) {
    return fmt("{'ext':{'kv':%s}}", kv);
}

/* one comparison on key k */
static const adserve_target_t *cmp(const char *op, const char *rhs) {
    return rule(fmt("{'kv':{'type':'cmp','data':{'lhs':['k'],'op':'%s','rhs':%s}}}",
                    op, rhs));
}

static char *cmpj(const char *key, const char *op, const char *rhs) {
    return fmt("{'type':'cmp','data':{'lhs':['%s'],'op':'%s','rhs':%s}}", key, op, rhs);
}


/* ---- kv: every op ---------------------------------------------------------- */

typedef struct {
    const char *kv;       /* the request's ext.kv */
    int         want;
} kv_case_t;

static void op_cases(const char *op, const char *rhs, const kv_case_t *c, size_t n) {
    const adserve_target_t *t = cmp(op, rhs);
    size_t i;

    for (i = 0; i < n; i++) {
        is_int(match(t, kvreq(c[i].kv)), c[i].want, "%s %s vs kv %s: %s", op, rhs,
               c[i].kv, c[i].want ? "true" : "false");
    }
}

#define OP_CASES(op, rhs, ...) \
    op_cases(op, rhs, (const kv_case_t[]){ __VA_ARGS__ }, \
             sizeof((const kv_case_t[]){ __VA_ARGS__ }) / sizeof(kv_case_t))

static void test_ops(void) {
    OP_CASES("eq", "'a'",
        { "{'k':'a'}", 1 }, { "{'k':'b'}", 0 }, { "{'k':['b','a']}", 1 },
        { "{'k':['b','c']}", 0 }, { "{}", 0 }, { "{'other':'a'}", 0 },
        { "{'k':[]}", 0 }, { "{'k':'A'}", 0 }, { "{'k':'a '}", 0 }, { "{'k':''}", 0 });
    OP_CASES("eq", "''", { "{'k':''}", 1 }, { "{'k':'a'}", 0 });
    OP_CASES("eq", "5",
        { "{'k':5}", 1 }, { "{'k':5.0}", 1 }, { "{'k':'5'}", 1 }, { "{'k':'5.0'}", 1 },
        { "{'k':5e0}", 1 }, { "{'k':6}", 0 }, { "{'k':'x'}", 0 }, { "{'k':'05'}", 0 },
        { "{'k':' 5'}", 0 }, { "{'k':['x',5]}", 1 });
    OP_CASES("eq", "'5'",
        { "{'k':'5'}", 1 }, { "{'k':5}", 1 }, { "{'k':5.0}", 0 }, { "{'k':'5.0'}", 0 });
    OP_CASES("eq", "0.1", { "{'k':0.1}", 1 }, { "{'k':'0.1'}", 1 }, { "{'k':1e-1}", 1 },
        { "{'k':0.10000000000000001}", 1 }, { "{'k':0.2}", 0 });
    OP_CASES("eq", "-3", { "{'k':-3}", 1 }, { "{'k':'-3'}", 1 }, { "{'k':3}", 0 });

    OP_CASES("ne", "'a'",
        { "{'k':'b'}", 1 }, { "{'k':'a'}", 0 }, { "{'k':['b','a']}", 0 },
        { "{'k':['b','c']}", 1 }, { "{}", 0 }, { "{'k':[]}", 0 }, { "{'k':{}}", 0 });
    OP_CASES("ne", "7", { "{'k':7}", 0 }, { "{'k':'7'}", 0 }, { "{'k':8}", 1 },
        { "{'k':'seven'}", 1 });

    OP_CASES("lt", "10",
        { "{'k':5}", 1 }, { "{'k':10}", 0 }, { "{'k':11}", 0 }, { "{'k':'9.5'}", 1 },
        { "{'k':'abc'}", 0 }, { "{'k':['abc',3]}", 1 }, { "{'k':[20,30]}", 0 },
        { "{}", 0 }, { "{'k':-1e3}", 1 }, { "{'k':'1e1'}", 0 }, { "{'k':''}", 0 },
        { "{'k':true}", 0 }, { "{'k':'0x5'}", 0 });
    OP_CASES("le", "10", { "{'k':10}", 1 }, { "{'k':10.5}", 0 }, { "{'k':'10'}", 1 },
        { "{'k':-10}", 1 });
    OP_CASES("gt", "10", { "{'k':11}", 1 }, { "{'k':10}", 0 }, { "{'k':[1,2,3,100]}", 1 },
        { "{'k':'1e400'}", 1 }, { "{}", 0 });
    OP_CASES("ge", "10", { "{'k':10}", 1 }, { "{'k':9.999}", 0 }, { "{'k':'x'}", 0 });
    OP_CASES("ge", "-2.5", { "{'k':-2.5}", 1 }, { "{'k':-2.6}", 0 });

    OP_CASES("in", "['a','b',3]",
        { "{'k':'a'}", 1 }, { "{'k':'b'}", 1 }, { "{'k':'c'}", 0 }, { "{'k':3}", 1 },
        { "{'k':'3'}", 1 }, { "{'k':3.5}", 0 }, { "{'k':['c','b']}", 1 },
        { "{'k':['c','d']}", 0 }, { "{}", 0 });
    OP_CASES("nin", "['a','b']",
        { "{'k':'c'}", 1 }, { "{'k':'a'}", 0 }, { "{'k':['c','a']}", 0 },
        { "{'k':['c','d']}", 1 }, { "{}", 0 }, { "{'k':[]}", 0 });
    OP_CASES("intersects", "['a','b']",
        { "{'k':['x','b']}", 1 }, { "{'k':['x','y']}", 0 }, { "{'k':'a'}", 1 },
        { "{}", 0 });
    OP_CASES("intersects", "[1,2,'x']", { "{'k':[0,2]}", 1 }, { "{'k':['2']}", 1 },
        { "{'k':[0,'y']}", 0 }, { "{'k':'x'}", 1 });
}

static void test_big_lists(void) {
    char *rhs, *p;
    size_t cap = 32 * 2000, i;
    const adserve_target_t *t;

    /* 1000 strings and 1000 numbers, in no order: looked up by bisection */
    rhs = keep(malloc(cap));
    p = rhs;
    *p++ = '[';
    for (i = 0; i < 1000; i++) {
        p += sprintf(p, "%s'v%zu',%zu", i ? "," : "", (i * 7919) % 1000, (i * 104729) % 1000 * 3);
    }
    strcpy(p, "]");
    t = cmp("in", rhs);
    ok(match(t, kvreq("{'k':'v0'}")) == 1 && match(t, kvreq("{'k':'v999'}")) == 1
       && match(t, kvreq("{'k':'v500'}")) == 1,
       "in, 2000 values: every string found (first, last, middle)");
    ok(match(t, kvreq("{'k':'v1000'}")) == 0 && match(t, kvreq("{'k':'v'}")) == 0
       && match(t, kvreq("{'k':'w0'}")) == 0, "in, 2000 values: absent strings are not");
    ok(match(t, kvreq("{'k':0}")) == 1 && match(t, kvreq("{'k':2997}")) == 1
       && match(t, kvreq("{'k':'1500'}")) == 1, "in, 2000 values: numbers found");
    ok(match(t, kvreq("{'k':1}")) == 0 && match(t, kvreq("{'k':3000}")) == 0,
       "in, 2000 values: absent numbers are not");
    t = cmp("nin", rhs);
    ok(match(t, kvreq("{'k':'v1000'}")) == 1 && match(t, kvreq("{'k':'v3'}")) == 0,
       "nin, 2000 values");

    /* every string found whatever the list (sorting by length, then bytes) */
    t = cmp("in", "['zz', 'abcdef', 'b', '', 'abc', 'a', 'abcde', 'ab', 'abcd']");
    for (i = 0; i < 50; i++) {
        const char *req = fmt("{'k':'%.*s'}", (int) (i % 7), "abcdefg");
        if (match(t, kvreq(req)) != 1) break;
    }
    is_int((long long) i, 50, "in: prefixes of various lengths all found");
}

static void test_logic(void) {
    const adserve_target_t *t;

    t = rule(fmt("{'kv':{'type':'not','data':%s}}", cmpj("k", "eq", "'a'")));
    is_int(match(t, kvreq("{}")), 1, "not (eq) of an absent key: true");
    is_int(match(t, "{}"), 1, "not (eq) with no ext at all: true");
    is_int(match(t, kvreq("{'k':'a'}")), 0, "not (eq a) with a: false");
    is_int(match(t, kvreq("{'k':'b'}")), 1, "not (eq a) with b: true");

    t = rule(fmt("{'kv':{'type':'not','data':%s}}", cmpj("k", "ne", "'a'")));
    is_int(match(t, kvreq("{}")), 1, "not (ne) of an absent key: true too (ne is false)");

    t = rule(fmt("{'kv':{'type':'and','data':[%s,%s]}}", cmpj("section", "eq", "'sport'"),
                 cmpj("age", "ge", "18")));
    is_int(match(t, kvreq("{'section':'sport','age':30}")), 1, "and: both true");
    is_int(match(t, kvreq("{'section':'sport','age':17}")), 0, "and: one false");
    is_int(match(t, kvreq("{'section':'news','age':30}")), 0, "and: the other false");
    is_int(match(t, kvreq("{'section':'sport'}")), 0, "and: a key absent");

    t = rule(fmt("{'kv':{'type':'or','data':[%s,%s]}}", cmpj("section", "eq", "'sport'"),
                 cmpj("age", "ge", "18")));
    is_int(match(t, kvreq("{'section':'news','age':30}")), 1, "or: one true");
    is_int(match(t, kvreq("{'section':'news','age':3}")), 0, "or: none true");
    is_int(match(t, kvreq("{}")), 0, "or: both keys absent");

    /* (section in [sport, news] and not (tag eq nsfw)) or (vip eq 1) */
    t = rule(fmt("{'kv':{'type':'or','data':[{'type':'and','data':[%s,"
                 "{'type':'not','data':%s}]},%s]}}",
                 cmpj("section", "in", "['sport','news']"), cmpj("tag", "eq", "'nsfw'"),
                 cmpj("vip", "eq", "1")));
    is_int(match(t, kvreq("{'section':'news'}")), 1, "nested: and(in, not absent)");
    is_int(match(t, kvreq("{'section':'news','tag':['a','nsfw']}")), 0,
           "nested: not(eq) false on a multi-valued key holding the value");
    is_int(match(t, kvreq("{'section':'news','tag':['nsfw'],'vip':'1'}")), 1,
           "nested: the or's second branch");
    is_int(match(t, kvreq("{'section':'weather'}")), 0, "nested: nothing true");

    /* a deep chain of nots: 15 nots around a cmp, the contract's depth
     * limit (ADSERVE_KV_MAX_DEPTH) is 16 */
    {
        char *e = cmpj("k", "eq", "'a'");
        int i;

        for (i = 0; i < ADSERVE_KV_MAX_DEPTH - 1; i++) e = fmt("{'type':'not','data':%s}", e);
        t = rule(fmt("{'kv':%s}", e));
        is_int(match(t, kvreq("{'k':'a'}")), 0, "15 nots around eq (true): false");
        is_int(match(t, kvreq("{'k':'b'}")), 1, "15 nots around eq (false): true");
    }

    /* long and / or lists walk their children by subtree ends */
    {
        char *list = cmpj("k0", "eq", "0");
        int i;

        for (i = 1; i < 100; i++) {
            list = fmt("%s,{'type':'or','data':[%s,%s]}", list, cmpj(fmt("k%d", i), "eq", "1"),
                       cmpj(fmt("k%d", i), "eq", "2"));
        }
        t = rule(fmt("{'kv':{'type':'and','data':[%s]}}", list));
        {
            char *kv = fmt("{'k0':0");
            for (i = 1; i < 31; i++) kv = fmt("%s,'k%d':%d", kv, i, 1 + i % 2);
            is_int(match(t, kvreq(fmt("%s}", kv))), 0, "and of 100 with keys past 31 absent: false");
        }
        t = rule(fmt("{'kv':{'type':'or','data':[%s]}}", list));
        is_int(match(t, kvreq("{'k99':2}")), 1, "or of 100: the last one true");
        is_int(match(t, kvreq("{'k99':3}")), 0, "or of 100: none true");
    }
}


/* ---- the ext.kv parser ------------------------------------------------------ */

static adserve_kv_t kvp;

static void parse_kv(const char *json) {
    char *buf = keep(dq(json));
    adserve_kv_parse(buf, strlen(buf), &kvp);
}

static int kv_has(const char *key, size_t i, const char *text) {
    const adserve_kv_key_t *k = adserve_kv_find(&kvp, key, strlen(key));
    const adserve_kv_value_t *v;

    if (k == NULL || i >= k->n) return 0;
    v = &kvp.values[k->first + i];
    return v->len == strlen(text) && memcmp(kvp.base + v->off, text, v->len) == 0;
}

static double kv_num(const char *key, size_t i) {
    const adserve_kv_key_t *k = adserve_kv_find(&kvp, key, strlen(key));

    return k && i < k->n ? kvp.values[k->first + i].num : -12345;
}

static int kv_count(const char *key) {
    const adserve_kv_key_t *k = adserve_kv_find(&kvp, key, strlen(key));

    return k ? k->n : -1;
}

static void test_kv_parse(void) {
    const adserve_target_t *t;
    char *big;
    int i;

    parse_kv(" { 'a' : 'x' , 'b' : [ 'y' , 2 , -3.5e1 ] , 'c':[] , 'd':{'e':'f'},"
             " 'g':true, 'h':null, 'i':[[1],{'j':2},'k',false] } ");
    is_int(kvp.nkeys, 3, "kv: keys with values kept, keys without none");
    ok(kv_has("a", 0, "x"), "kv: a string value");
    ok(kv_has("b", 0, "y") && kv_has("b", 1, "2") && kv_has("b", 2, "-3.5e1"),
       "kv: an array of strings and numbers, numbers by their text");
    ok(kv_num("b", 1) == 2 && kv_num("b", 2) == -35 && isnan(kv_num("b", 0)),
       "kv: numbers have their value, strings that are no number NaN");
    is_int(kv_count("c"), -1, "kv: an empty array is an absent key");
    is_int(kv_count("d"), -1, "kv: an object value is ignored (absent key)");
    is_int(kv_count("g") + kv_count("h"), -2, "kv: true and null are ignored");
    ok(kv_count("i") == 1 && kv_has("i", 0, "k"),
       "kv: nested arrays, objects and literals inside an array are skipped");
    is_int(kv_count("e"), -1, "kv: keys of nested objects are not keys");

    /* escapes, unescaped in place */
    parse_kv("{'s\\u00e9ction':'sp\\u006frt','q\\'t':'a\\'b\\\\c\\/d\\n\\t','emoji':'\\ud83d\\ude00!',"
             "'n':'2\\u0035','m':'\\u0031\\u0032\\u0033\\u0034\\u0035\\u0036'}");
    ok(kv_has("s\xc3\xa9" "ction", 0, "sport"), "kv: \\u escapes in a key and a value");
    ok(kv_has("q\"t", 0, "a\"b\\c/d\n\t"), "kv: short escapes");
    ok(kv_has("emoji", 0, "\xf0\x9f\x98\x80!"), "kv: a surrogate pair is one 4-byte character");
    ok(kv_has("n", 0, "25") && kv_num("n", 0) == 25,
       "kv: an escaped number-like string reads as its decoded text only (25)");
    ok(kv_has("m", 0, "123456") && kv_num("m", 0) == 123456,
       "kv: a fully escaped string shrinks in place and stays exact");

    t = rule(fmt("{'kv':%s}", cmpj("s\\u00e9ction", "eq", "'sport'")));
    is_int(match(t, kvreq("{'s\\u00e9ction':'sp\\u006frt'}")), 1,
           "kv through the scanner: escaped key and value match the rule");
    is_int(match(t, kvreq("{'s\xc3\xa9" "ction':'sport'}")), 1,
           "kv through the scanner: the same in plain UTF-8");

    /* bounds: the first 32 keys with values, the first 16 values of each */
    big = fmt("{'empty':[]");
    for (i = 0; i < 40; i++) big = fmt("%s,'k%d':%d", big, i, i);
    big = fmt("%s,'many':[", big);
    for (i = 0; i < 20; i++) big = fmt("%s%s%d", big, i ? "," : "", i);
    big = fmt("%s]}", big);
    parse_kv(big);
    is_int(kvp.nkeys, 32, "kv bounds: 32 keys kept");
    ok(kv_has("k0", 0, "0") && kv_has("k31", 0, "31"), "kv bounds: keys 0 and 31 are there");
    ok(kv_count("k32") == -1 && kv_count("k39") == -1 && kv_count("many") == -1,
       "kv bounds: keys past the 32nd are ignored");
    big = fmt("{'many':[");
    for (i = 0; i < 20; i++) big = fmt("%s%s'v%d'", big, i ? "," : "", i);
    big = fmt("%s],'after':'x'}", big);
    parse_kv(big);
    ok(kv_count("many") == 16 && kv_has("many", 15, "v15") && kv_has("after", 0, "x"),
       "kv bounds: 16 values of a key kept, the parse goes on after it");
    t = cmp("eq", "'v16'");
    is_int(match(t, kvreq(fmt("{'k':['v0','v1','v2','v3','v4','v5','v6','v7','v8','v9',"
                             "'v10','v11','v12','v13','v14','v15','v16']}"))), 0,
           "kv bounds: a value past the 16th does not match");

    /* duplicate keys: the last one wins */
    parse_kv("{'a':'1','b':'x','a':['2','3']}");
    ok(kv_count("a") == 2 && kv_has("a", 0, "2"), "kv: the last of duplicate keys wins");
    t = cmp("eq", "'1'");
    is_int(match(t, kvreq("{'k':'1','k':'2'}")), 0, "duplicate kv keys: the first is not seen");

    /* no kv at all, or something else than an object */
    adserve_kv_parse(NULL, 0, &kvp);
    is_int(kvp.nkeys, 0, "kv: NULL span, no keys");
    parse_kv("[1,2]");
    is_int(kvp.nkeys, 0, "kv: not an object, no keys");
    parse_kv("{}");
    is_int(kvp.nkeys, 0, "kv: empty object, no keys");
}

/* Mutated and cut spans: the parser stays inside them (ASan) and sane. */
static void test_kv_robust(void) {
    static const char *const seeds[] = {
        "{\"a\":\"x\",\"b\":[\"y\",2,-3.5e1],\"c\":{\"d\":[1,{\"e\":\"\\\"\"}]},\"f\":\"\\ud83d\\ude00\"}",
        "{\"s\\u00e9\":[\"\\\\\",\"\\/\",true,null,[[[]]]],\"n\":1e9}",
    };
    static const char alphabet[] = "{}[]\",:\\u0123456789abcdefe-+. \t";
    uint32_t x = 12345;
    size_t i, j, len, bad = 0;
    char *buf;

    for (i = 0; i < 100000; i++) {
        const char *seed = seeds[i % 2];

        len = strlen(seed);
        x = x * 1103515245u + 12345u;
        len = (x >> 8) % 4 == 0 ? (x >> 12) % (len + 1) : len;
        buf = malloc(len ? len : 1);
        if (buf == NULL) abort();
        memcpy(buf, seed, len);
        for (j = 0; j < 3 && len; j++) {
            x = x * 1103515245u + 12345u;
            buf[(x >> 8) % len] = alphabet[(x >> 20) % (sizeof(alphabet) - 1)];
        }
        adserve_kv_parse(buf, len, &kvp);
        if (kvp.nkeys > ADSERVE_KV_MAX_KEYS) bad++;
        for (j = 0; j < kvp.nkeys; j++) {
            const adserve_kv_key_t *k = &kvp.keys[j];
            if ((size_t) k->off + k->len > len || k->n == 0 || k->n > ADSERVE_KV_MAX_VALUES
                || (size_t) k->first + k->n > kvp.nvalues)
                bad++;
        }
        for (j = 0; j < kvp.nvalues; j++) {
            if ((size_t) kvp.values[j].off + kvp.values[j].len > len) bad++;
        }
        free(buf);
    }
    is_int((long long) bad, 0, "kv: 100,000 mutated and cut spans parsed within bounds");
}


/* ---- the user agent ---------------------------------------------------------- */

typedef struct {
    const char *ua;
    uint8_t     type, os, browser;
} ua_case_t;

static void test_ua(void) {
    static const ua_case_t cases[] = {
        { "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
          "Chrome/120.0.0.0 Safari/537.36",
          ADSERVE_DEVICE_DESKTOP, ADSERVE_OS_WINDOWS, ADSERVE_BROWSER_CHROME },
        { "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
          "Chrome/120.0.0.0 Safari/537.36 Edg/120.0.2210.91",
          ADSERVE_DEVICE_DESKTOP, ADSERVE_OS_WINDOWS, ADSERVE_BROWSER_EDGE },
        { "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
          "Chrome/70.0.3538.102 Safari/537.36 Edge/18.19582",
          ADSERVE_DEVICE_DESKTOP, ADSERVE_OS_WINDOWS, ADSERVE_BROWSER_EDGE },
        { "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:121.0) Gecko/20100101 Firefox/121.0",
          ADSERVE_DEVICE_DESKTOP, ADSERVE_OS_WINDOWS, ADSERVE_BROWSER_FIREFOX },
        { "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
          "Chrome/120.0.0.0 Safari/537.36 OPR/106.0.0.0",
          ADSERVE_DEVICE_DESKTOP, ADSERVE_OS_WINDOWS, ADSERVE_BROWSER_OTHER },
        { "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like "
          "Gecko) Version/17.2 Safari/605.1.15",
          ADSERVE_DEVICE_DESKTOP, ADSERVE_OS_MACOS, ADSERVE_BROWSER_SAFARI },
        { "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like "
          "Gecko) Chrome/120.0.0.0 Safari/537.36",
          ADSERVE_DEVICE_DESKTOP, ADSERVE_OS_MACOS, ADSERVE_BROWSER_CHROME },
        { "Mozilla/5.0 (X11; Ubuntu; Linux x86_64; rv:121.0) Gecko/20100101 Firefox/121.0",
          ADSERVE_DEVICE_DESKTOP, ADSERVE_OS_LINUX, ADSERVE_BROWSER_FIREFOX },
        { "Mozilla/5.0 (X11; CrOS x86_64 14541.0.0) AppleWebKit/537.36 (KHTML, like Gecko) "
          "Chrome/120.0.0.0 Safari/537.36",
          ADSERVE_DEVICE_DESKTOP, ADSERVE_OS_LINUX, ADSERVE_BROWSER_CHROME },
        { "Mozilla/5.0 (iPhone; CPU iPhone OS 17_2 like Mac OS X) AppleWebKit/605.1.15 (KHTML, "
          "like Gecko) Version/17.2 Mobile/15E148 Safari/604.1",
          ADSERVE_DEVICE_MOBILE, ADSERVE_OS_IOS, ADSERVE_BROWSER_SAFARI },
        { "Mozilla/5.0 (iPhone; CPU iPhone OS 17_2 like Mac OS X) AppleWebKit/605.1.15 (KHTML, "
          "like Gecko) CriOS/120.0.6099.119 Mobile/15E148 Safari/604.1",
          ADSERVE_DEVICE_MOBILE, ADSERVE_OS_IOS, ADSERVE_BROWSER_CHROME },
        { "Mozilla/5.0 (iPhone; CPU iPhone OS 17_2 like Mac OS X) AppleWebKit/605.1.15 (KHTML, "
          "like Gecko) FxiOS/121.0 Mobile/15E148 Safari/605.1.15",
          ADSERVE_DEVICE_MOBILE, ADSERVE_OS_IOS, ADSERVE_BROWSER_FIREFOX },
        { "Mozilla/5.0 (iPhone; CPU iPhone OS 17_2 like Mac OS X) AppleWebKit/605.1.15 (KHTML, "
          "like Gecko) Version/17.0 EdgiOS/120.0.2210.126 Mobile/15E148 Safari/605.1.15",
          ADSERVE_DEVICE_MOBILE, ADSERVE_OS_IOS, ADSERVE_BROWSER_EDGE },
        { "Mozilla/5.0 (iPad; CPU OS 17_2 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like "
          "Gecko) Version/17.2 Mobile/15E148 Safari/604.1",
          ADSERVE_DEVICE_TABLET, ADSERVE_OS_IOS, ADSERVE_BROWSER_SAFARI },
        { "Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like Gecko) "
          "Chrome/120.0.0.0 Mobile Safari/537.36",
          ADSERVE_DEVICE_MOBILE, ADSERVE_OS_ANDROID, ADSERVE_BROWSER_CHROME },
        { "Mozilla/5.0 (Linux; Android 13; SM-X700) AppleWebKit/537.36 (KHTML, like Gecko) "
          "Chrome/120.0.0.0 Safari/537.36",
          ADSERVE_DEVICE_TABLET, ADSERVE_OS_ANDROID, ADSERVE_BROWSER_CHROME },
        { "Mozilla/5.0 (Linux; Android 13; SAMSUNG SM-S918B) AppleWebKit/537.36 (KHTML, like "
          "Gecko) SamsungBrowser/23.0 Chrome/115.0.0.0 Mobile Safari/537.36",
          ADSERVE_DEVICE_MOBILE, ADSERVE_OS_ANDROID, ADSERVE_BROWSER_OTHER },
        { "Mozilla/5.0 (Android 14; Mobile; rv:121.0) Gecko/121.0 Firefox/121.0",
          ADSERVE_DEVICE_MOBILE, ADSERVE_OS_ANDROID, ADSERVE_BROWSER_FIREFOX },
        { "Mozilla/5.0 (Android 14; Tablet; rv:121.0) Gecko/121.0 Firefox/121.0",
          ADSERVE_DEVICE_TABLET, ADSERVE_OS_ANDROID, ADSERVE_BROWSER_FIREFOX },
        { "Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like Gecko) "
          "Chrome/120.0.0.0 Mobile Safari/537.36 EdgA/120.0.2210.115",
          ADSERVE_DEVICE_MOBILE, ADSERVE_OS_ANDROID, ADSERVE_BROWSER_EDGE },
        { "Mozilla/5.0 (Linux; Android 9; KFTRWI) AppleWebKit/537.36 (KHTML, like Gecko) "
          "Silk/120.3.1 like Chrome/120.0.6099.230 Safari/537.36",
          ADSERVE_DEVICE_TABLET, ADSERVE_OS_ANDROID, ADSERVE_BROWSER_OTHER },
        { "Mozilla/5.0 (X11; Linux armv7l) AppleWebKit/537.36 (KHTML, like Gecko) "
          "Chrome/89.0.4389.114 Safari/537.36 CrKey/1.54.250320",
          ADSERVE_DEVICE_CTV, ADSERVE_OS_LINUX, ADSERVE_BROWSER_CHROME },
        { "Mozilla/5.0 (SMART-TV; LINUX; Tizen 6.0) AppleWebKit/537.36 (KHTML, like Gecko) "
          "76.0.3809.146/6.0 TV Safari/537.36",
          ADSERVE_DEVICE_CTV, ADSERVE_OS_LINUX, ADSERVE_BROWSER_SAFARI },
        { "Mozilla/5.0 (Web0S; Linux/SmartTV) AppleWebKit/537.36 (KHTML, like Gecko) "
          "Chrome/79.0.3945.79 Safari/537.36 WebAppManager",
          ADSERVE_DEVICE_CTV, ADSERVE_OS_LINUX, ADSERVE_BROWSER_CHROME },
        { "Roku/DVP-12.0 (12.0.0.4182-88)",
          ADSERVE_DEVICE_CTV, ADSERVE_OS_OTHER, ADSERVE_BROWSER_OTHER },
        { "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
          ADSERVE_DEVICE_OTHER, ADSERVE_OS_OTHER, ADSERVE_BROWSER_OTHER },
        { "curl/8.5.0", ADSERVE_DEVICE_OTHER, ADSERVE_OS_OTHER, ADSERVE_BROWSER_OTHER },
        { "", ADSERVE_DEVICE_OTHER, ADSERVE_OS_OTHER, ADSERVE_BROWSER_OTHER },
    };
    adserve_device_t d;
    size_t i, len;
    char *copy;

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        /* an exact-size copy: a read past the end is an ASan report */
        len = strlen(cases[i].ua);
        copy = malloc(len ? len : 1);
        if (copy == NULL) abort();
        memcpy(copy, cases[i].ua, len);
        adserve_ua_classify(copy, len, &d);
        free(copy);
        ok(d.type == cases[i].type && d.os == cases[i].os && d.browser == cases[i].browser,
           "ua %s/%s/%s: %.70s", adserve_device_type_names[cases[i].type],
           adserve_os_names[cases[i].os], adserve_browser_names[cases[i].browser],
           cases[i].ua);
        if (d.type != cases[i].type || d.os != cases[i].os || d.browser != cases[i].browser)
            diag("got %s/%s/%s", adserve_device_type_names[d.type], adserve_os_names[d.os],
                 adserve_browser_names[d.browser]);
    }

    /* every substring of the table, alone in a text */
    {
        static const ua_case_t tokens[] = {
            { "x SmartTV y", ADSERVE_DEVICE_CTV, ADSERVE_OS_OTHER, ADSERVE_BROWSER_OTHER },
            { "x SMART-TV y", ADSERVE_DEVICE_CTV, ADSERVE_OS_OTHER, ADSERVE_BROWSER_OTHER },
            { "CrKey", ADSERVE_DEVICE_CTV, ADSERVE_OS_OTHER, ADSERVE_BROWSER_OTHER },
            { "Roku", ADSERVE_DEVICE_CTV, ADSERVE_OS_OTHER, ADSERVE_BROWSER_OTHER },
            { "AppleTV5,3", ADSERVE_DEVICE_CTV, ADSERVE_OS_OTHER, ADSERVE_BROWSER_OTHER },
            { "(Apple TV)", ADSERVE_DEVICE_CTV, ADSERVE_OS_OTHER, ADSERVE_BROWSER_OTHER },
            { "GoogleTV", ADSERVE_DEVICE_CTV, ADSERVE_OS_OTHER, ADSERVE_BROWSER_OTHER },
            { "BRAVIA 4K", ADSERVE_DEVICE_CTV, ADSERVE_OS_OTHER, ADSERVE_BROWSER_OTHER },
            { "HbbTV/1.5.1", ADSERVE_DEVICE_CTV, ADSERVE_OS_OTHER, ADSERVE_BROWSER_OTHER },
            { "Web0S", ADSERVE_DEVICE_CTV, ADSERVE_OS_OTHER, ADSERVE_BROWSER_OTHER },
            { "iPad", ADSERVE_DEVICE_TABLET, ADSERVE_OS_IOS, ADSERVE_BROWSER_OTHER },
            { "Tablet", ADSERVE_DEVICE_TABLET, ADSERVE_OS_OTHER, ADSERVE_BROWSER_OTHER },
            { "Kindle/3.0", ADSERVE_DEVICE_TABLET, ADSERVE_OS_OTHER, ADSERVE_BROWSER_OTHER },
            { "Silk", ADSERVE_DEVICE_TABLET, ADSERVE_OS_OTHER, ADSERVE_BROWSER_OTHER },
            { "Android", ADSERVE_DEVICE_TABLET, ADSERVE_OS_ANDROID, ADSERVE_BROWSER_OTHER },
            { "Android Mobi", ADSERVE_DEVICE_MOBILE, ADSERVE_OS_ANDROID, ADSERVE_BROWSER_OTHER },
            { "Mobi", ADSERVE_DEVICE_MOBILE, ADSERVE_OS_OTHER, ADSERVE_BROWSER_OTHER },
            { "iPhone", ADSERVE_DEVICE_MOBILE, ADSERVE_OS_IOS, ADSERVE_BROWSER_OTHER },
            { "iPod", ADSERVE_DEVICE_MOBILE, ADSERVE_OS_IOS, ADSERVE_BROWSER_OTHER },
            { "Windows NT", ADSERVE_DEVICE_DESKTOP, ADSERVE_OS_WINDOWS, ADSERVE_BROWSER_OTHER },
            { "Windows", ADSERVE_DEVICE_OTHER, ADSERVE_OS_WINDOWS, ADSERVE_BROWSER_OTHER },
            { "Macintosh", ADSERVE_DEVICE_DESKTOP, ADSERVE_OS_MACOS, ADSERVE_BROWSER_OTHER },
            { "Mac OS X", ADSERVE_DEVICE_OTHER, ADSERVE_OS_MACOS, ADSERVE_BROWSER_OTHER },
            { "X11", ADSERVE_DEVICE_DESKTOP, ADSERVE_OS_LINUX, ADSERVE_BROWSER_OTHER },
            { "CrOS", ADSERVE_DEVICE_DESKTOP, ADSERVE_OS_LINUX, ADSERVE_BROWSER_OTHER },
            { "Linux", ADSERVE_DEVICE_OTHER, ADSERVE_OS_LINUX, ADSERVE_BROWSER_OTHER },
            { "Tizen", ADSERVE_DEVICE_OTHER, ADSERVE_OS_LINUX, ADSERVE_BROWSER_OTHER },
            { "Chrome/1 Edg/1", ADSERVE_DEVICE_OTHER, ADSERVE_OS_OTHER, ADSERVE_BROWSER_EDGE },
            { "Chrome/1 OPR/1", ADSERVE_DEVICE_OTHER, ADSERVE_OS_OTHER, ADSERVE_BROWSER_OTHER },
            { "Opera/9.80", ADSERVE_DEVICE_OTHER, ADSERVE_OS_OTHER, ADSERVE_BROWSER_OTHER },
            { "SamsungBrowser/2 Chrome/1", ADSERVE_DEVICE_OTHER, ADSERVE_OS_OTHER,
              ADSERVE_BROWSER_OTHER },
            { "YaBrowser/2 Chrome/1", ADSERVE_DEVICE_OTHER, ADSERVE_OS_OTHER, ADSERVE_BROWSER_OTHER },
            { "UCBrowser/2 Safari/1", ADSERVE_DEVICE_OTHER, ADSERVE_OS_OTHER, ADSERVE_BROWSER_OTHER },
            { "Firefox/1", ADSERVE_DEVICE_OTHER, ADSERVE_OS_OTHER, ADSERVE_BROWSER_FIREFOX },
            { "FxiOS/1 Safari/1", ADSERVE_DEVICE_OTHER, ADSERVE_OS_OTHER, ADSERVE_BROWSER_FIREFOX },
            { "Chrome/1 Safari/1", ADSERVE_DEVICE_OTHER, ADSERVE_OS_OTHER, ADSERVE_BROWSER_CHROME },
            { "CriOS/1 Safari/1", ADSERVE_DEVICE_OTHER, ADSERVE_OS_OTHER, ADSERVE_BROWSER_CHROME },
            { "Chromium/1", ADSERVE_DEVICE_OTHER, ADSERVE_OS_OTHER, ADSERVE_BROWSER_CHROME },
            { "Safari/1", ADSERVE_DEVICE_OTHER, ADSERVE_OS_OTHER, ADSERVE_BROWSER_SAFARI },
            { "android iphone ipad windows nt chrome/", ADSERVE_DEVICE_OTHER, ADSERVE_OS_OTHER,
              ADSERVE_BROWSER_OTHER },
        };
        int bad = 0;

        for (i = 0; i < sizeof(tokens) / sizeof(tokens[0]); i++) {
            adserve_ua_classify(tokens[i].ua, strlen(tokens[i].ua), &d);
            if (d.type != tokens[i].type || d.os != tokens[i].os
                || d.browser != tokens[i].browser)
            {
                diag("%s: got %s/%s/%s", tokens[i].ua, adserve_device_type_names[d.type],
                     adserve_os_names[d.os], adserve_browser_names[d.browser]);
                bad++;
            }
        }
        is_int(bad, 0, "ua: each of the table's %zu substrings alone, and lower case ones not",
               sizeof(tokens) / sizeof(tokens[0]));
    }

    adserve_ua_classify(NULL, 0, &d);
    ok(d.type == ADSERVE_DEVICE_OTHER && d.os == ADSERVE_OS_OTHER
       && d.browser == ADSERVE_BROWSER_OTHER, "ua: none is other/other/other");
    /* a token cut by the end of the text is not there */
    adserve_ua_classify("Mozilla/5.0 (iPho", 17, &d);
    is_int(d.os, ADSERVE_OS_OTHER, "ua: a token cut at the end does not count");
}

static void test_device(void) {
    const char *iphone = "{'device':{'ua':'Mozilla/5.0 (iPhone; CPU iPhone OS 17_2 like Mac OS X) "
                         "AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.2 Mobile/15E148 "
                         "Safari/604.1'}}";
    const char *win = "{'device':{'ua':'Mozilla/5.0 (Windows NT 10.0; Win64; x64) "
                      "AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36'}}";
    const adserve_target_t *t;

    t = rule("{'device':{'types':['mobile','tablet']}}");
    is_int(match(t, iphone), 1, "device types [mobile, tablet]: an iPhone matches");
    is_int(match(t, win), 0, "device types [mobile, tablet]: a Windows desktop does not");
    is_int(match(t, "{}"), 0, "device types: no user agent is 'other', no match");

    t = rule("{'device':{'os':['ios'],'browsers':['safari']}}");
    is_int(match(t, iphone), 1, "device os [ios] and browsers [safari]: iPhone Safari");
    t = rule("{'device':{'os':['ios'],'browsers':['chrome']}}");
    is_int(match(t, iphone), 0, "device os [ios] and browsers [chrome]: not iPhone Safari");
    t = rule("{'device':{'types':['desktop'],'os':['windows','macos'],'browsers':['chrome','edge']}}");
    is_int(match(t, win), 1, "device: all three lists true");
    t = rule("{'device':{'types':['other'],'os':['other'],'browsers':['other']}}");
    is_int(match(t, "{'device':{}}"), 1, "device [other]x3: a request without a user agent");
    is_int(match(t, win), 0, "device [other]x3: not a known desktop");
    t = rule("{'device':{'types':[],'os':['linux'],'browsers':[]}}");
    is_int(match(t, win), 0, "device: empty lists are any, the os still counts");
}


/* ---- user -------------------------------------------------------------------- */

static void test_user(void) {
    const adserve_target_t *t;

    t = rule("{'user':{'yob_min':1980,'yob_max':1999}}");
    is_int(match(t, "{'user':{'yob':1980}}"), 1, "yob 1980..1999: 1980 (inclusive)");
    is_int(match(t, "{'user':{'yob':1999}}"), 1, "yob 1980..1999: 1999 (inclusive)");
    is_int(match(t, "{'user':{'yob':1979}}"), 0, "yob 1980..1999: 1979");
    is_int(match(t, "{'user':{'yob':2000}}"), 0, "yob 1980..1999: 2000");
    is_int(match(t, "{'user':{'id':'u1'}}"), 0, "yob 1980..1999: no yob fails");
    is_int(match(t, "{'user':{'yob':1850}}"), 0, "yob 1980..1999: an ignored yob (1850) fails");
    t = rule("{'user':{'yob_min':1990,'yob_max':null}}");
    is_int(match(t, "{'user':{'yob':2100}}"), 1, "yob_min only: later years match");
    is_int(match(t, "{'user':{'yob':1989}}"), 0, "yob_min only: earlier years do not");
    is_int(match(t, "{}"), 0, "yob_min only: no yob fails");
    t = rule("{'user':{'yob_max':1970}}");
    is_int(match(t, "{'user':{'yob':1900}}"), 1, "yob_max only: 1900");
    is_int(match(t, "{'user':{'yob':1971}}"), 0, "yob_max only: 1971");

    t = rule("{'user':{'genders':['F','O']}}");
    is_int(match(t, "{'user':{'gender':'F'}}"), 1, "genders [F, O]: F");
    is_int(match(t, "{'user':{'gender':'O'}}"), 1, "genders [F, O]: O");
    is_int(match(t, "{'user':{'gender':'M'}}"), 0, "genders [F, O]: M");
    is_int(match(t, "{'user':{}}"), 0, "genders [F, O]: no gender fails");
    is_int(match(t, "{'user':{'gender':'f'}}"), 0, "genders [F, O]: an ignored gender fails");

    t = rule("{'user':{'yob_min':1980,'genders':['M']}}");
    is_int(match(t, "{'user':{'yob':1990,'gender':'M'}}"), 1, "yob and gender: both");
    is_int(match(t, "{'user':{'yob':1990,'gender':'F'}}"), 0, "yob and gender: gender wrong");
    is_int(match(t, "{'user':{'yob':1970,'gender':'M'}}"), 0, "yob and gender: yob wrong");
}


/* ---- segments ------------------------------------------------------------------ */

/* t for a request whose user's segments are the ids listed (NULL: not
 * known), with no other facts */
static int match_segments(const adserve_target_t *t, const char *const *ids) {
    adserve_req_ctx_t ctx;
    uint64_t h[8];
    uint32_t n = 0;

    adserve_req_ctx_init(&ctx, NULL);
    if (ids != NULL) {
        for (n = 0; ids[n] != NULL; n++) h[n] = adserve_hash(ids[n], strlen(ids[n]));
        adserve_req_ctx_segments(&ctx, h, n);
    }
    return adserve_target_match(t, &ctx, NOW);
}

static void test_segments(void) {
    static const char *const none[] = { NULL }, *const sports[] = { "sports", NULL },
        *const both[] = { "sports", "churned", NULL }, *const news[] = { "news", NULL };
    const adserve_target_t *t;
    adserve_str_t id;
    uint64_t h;

    t = rule("{'segments':{'include':['sports','travel']}}");
    is_int(match_segments(t, sports), 1, "include [sports, travel]: a sports fan");
    is_int(match_segments(t, news), 0, "... not a news reader");
    is_int(match_segments(t, none), 0, "... not a user in no segment (or with no id)");
    is_int(match_segments(t, NULL), 0, "... nor one whose segments are unknown");
    t = rule("{'segments':{'exclude':['churned']}}");
    is_int(match_segments(t, sports), 1, "exclude [churned]: a sports fan");
    is_int(match_segments(t, both), 0, "... not one who also churned");
    is_int(match_segments(t, none), 1, "... a user in no segment");
    is_int(match_segments(t, NULL), 0, "... not one whose segments are unknown: the safe outcome");
    t = rule("{'segments':{'include':['sports'],'exclude':['churned']},'user':{'genders':['F']}}");
    is_int(match_segments(t, sports), 0, "segments and a gender: both must hold");
    is_int(adserve_target_nsegments(t), 2, "the rule names two segments");
    adserve_target_segment(t, 1, &id, &h);
    ok(id.len == 7 && memcmp(id.data, "churned", 7) == 0 && h == adserve_hash("churned", 7),
       "... exclude's after include's, with their hashes");
    is_int(adserve_target_nsegments(NULL), 0, "no rule names none");

    int rc;
    ok(compile("{'segments':{'include':[],'exclude':null}}", &rc) == NULL && rc == 0,
       "empty segment lists decide nothing");
}


/* ---- dayparts ---------------------------------------------------------------- */

static void test_dayparts(void) {
    const adserve_target_t *t;
    int64_t fri = MON + 4 * DAY, sat = MON + 5 * DAY, thu = MON + 3 * DAY;
    int d, bad;

    /* late Friday into Saturday morning: two dayparts */
    t = rule("{'dayparts':[{'days':['fri'],'start':'22:00','end':'24:00','tz':'UTC'},"
             "{'days':['sat'],'start':'00:00','end':'02:00'}]}");
    is_int(match_at(t, "{}", fri + HM(21, 59) + 59), 0, "fri 22-24 + sat 0-2: fri 21:59:59");
    is_int(match_at(t, "{}", fri + HM(22, 0)), 1, "fri 22-24 + sat 0-2: fri 22:00:00");
    is_int(match_at(t, "{}", fri + HM(23, 59) + 59), 1, "fri 22-24 + sat 0-2: fri 23:59:59");
    is_int(match_at(t, "{}", sat), 1, "fri 22-24 + sat 0-2: sat 00:00:00");
    is_int(match_at(t, "{}", sat + HM(1, 59) + 59), 1, "fri 22-24 + sat 0-2: sat 01:59:59");
    is_int(match_at(t, "{}", sat + HM(2, 0)), 0, "fri 22-24 + sat 0-2: sat 02:00 (end excluded)");
    is_int(match_at(t, "{}", thu + HM(23, 0)), 0, "fri 22-24 + sat 0-2: thu 23:00");
    is_int(match_at(t, "{}", sat + HM(22, 30)), 0, "fri 22-24 + sat 0-2: sat 22:30");
    is_int(match_at(t, "{}", sat + 7 * DAY + HM(1, 0)), 1, "fri 22-24 + sat 0-2: next sat 01:00");

    /* office hours on weekdays */
    t = rule("{'dayparts':[{'days':['mon','tue','wed','thu','fri'],'start':'09:00','end':'17:00'}]}");
    is_int(match_at(t, "{}", MON + HM(8, 59) + 59), 0, "weekdays 9-17: mon 08:59:59");
    is_int(match_at(t, "{}", MON + HM(9, 0)), 1, "weekdays 9-17: mon 09:00");
    is_int(match_at(t, "{}", MON + HM(16, 59) + 59), 1, "weekdays 9-17: mon 16:59:59 (last minute)");
    is_int(match_at(t, "{}", MON + HM(17, 0)), 0, "weekdays 9-17: mon 17:00 (end excluded)");
    is_int(match_at(t, "{}", NOW + HM(12, 0)), 0, "weekdays 9-17: sunday noon");
    for (d = 0, bad = 0; d < 7; d++) {
        if (match_at(t, "{}", MON + d * DAY + HM(12, 0)) != (d < 5)) bad++;
    }
    is_int(bad, 0, "weekdays 9-17: noon of each day of a week");

    /* overlapping and touching dayparts merge */
    t = rule("{'dayparts':[{'days':['sun'],'start':'09:00','end':'12:00'},"
             "{'days':['sun'],'start':'11:00','end':'14:00'},"
             "{'days':['sun'],'start':'14:00','end':'15:00'},"
             "{'days':['sun'],'start':'20:00','end':'20:01'}]}");
    is_int(match_at(t, "{}", NOW + HM(13, 59)), 1, "overlapping dayparts: 13:59");
    is_int(match_at(t, "{}", NOW + HM(14, 30)), 1, "touching dayparts: 14:30");
    is_int(match_at(t, "{}", NOW + HM(15, 0)), 0, "merged dayparts: 15:00");
    is_int(match_at(t, "{}", NOW + HM(20, 0) + 59), 1, "a one-minute daypart: 20:00:59");
    is_int(match_at(t, "{}", NOW + HM(20, 1)), 0, "a one-minute daypart: 20:01");

    /* the whole week, and before 1970 (weekday of negative times) */
    t = rule("{'dayparts':[{'days':['wed'],'start':'23:59','end':'24:00'}]}");
    is_int(match_at(t, "{}", -1), 1, "1969-12-31 23:59:59 is a Wednesday, last minute");
    is_int(match_at(t, "{}", -61), 0, "1969-12-31 23:58:59 is not in 23:59-24:00");
    is_int(match_at(t, "{}", 0), 0, "1970-01-01 00:00 is a Thursday");

    /* a ctx reused at another time: the clock facts follow */
    {
        static adserve_req_ctx_t ctx;

        t = rule("{'dayparts':[{'days':['mon'],'start':'00:00','end':'12:00'}]}");
        adserve_req_ctx_init(&ctx, NULL);
        ok(adserve_target_match(t, &ctx, MON + HM(11, 0)) == 1
           && adserve_target_match(t, &ctx, MON + HM(13, 0)) == 0
           && adserve_target_match(t, &ctx, MON + HM(1, 0)) == 1,
           "one ctx, three times: the daypart follows the clock");
    }
}


/* ---- compile: nothing, and malformed ------------------------------------------ */

static void test_compile(void) {
    static const char *const nothing[] = {
        "{}",
        "{'ad_units':{'include':['u1']},'placements':[],'sizes':[{'w':300,'h':250}]}",
        "{'device':{'types':[],'os':[],'browsers':[]},'user':{'yob_min':null,'yob_max':null,"
        "'genders':[]},'dayparts':[],'kv':null}",
        "{'device':null,'user':null,'dayparts':null}",
    };
    static const char *const malformed[] = {
        "'x'",
        "[]",
        "{'device':'mobile'}",
        "{'device':{'types':'mobile'}}",
        "{'device':{'types':['phone']}}",
        "{'device':{'os':['ios',1]}}",
        "{'device':{'browsers':['opera']}}",
        "{'user':[]}",
        "{'user':{'yob_min':1800}}",
        "{'user':{'yob_max':2101}}",
        "{'user':{'yob_min':'1990'}}",
        "{'user':{'yob_min':1990.5}}",
        "{'user':{'yob_min':2000,'yob_max':1990}}",
        "{'user':{'genders':['X']}}",
        "{'user':{'genders':'F'}}",
        "{'dayparts':{}}",
        "{'dayparts':['mon']}",
        "{'dayparts':[{'days':[],'start':'09:00','end':'10:00'}]}",
        "{'dayparts':[{'days':['monday'],'start':'09:00','end':'10:00'}]}",
        "{'dayparts':[{'start':'09:00','end':'10:00'}]}",
        "{'dayparts':[{'days':['mon'],'start':'9:00','end':'10:00'}]}",
        "{'dayparts':[{'days':['mon'],'start':'09:60','end':'10:00'}]}",
        "{'dayparts':[{'days':['mon'],'start':'24:00','end':'24:00'}]}",
        "{'dayparts':[{'days':['mon'],'start':'09:00','end':'24:01'}]}",
        "{'dayparts':[{'days':['mon'],'start':'10:00','end':'10:00'}]}",
        "{'dayparts':[{'days':['mon'],'start':'22:00','end':'02:00'}]}",
        "{'dayparts':[{'days':['mon'],'start':'09:00'}]}",
        "{'dayparts':[{'days':['mon'],'start':'09:00','end':'10:00','tz':'CET'}]}",
        "{'kv':'x'}",
        "{'kv':{}}",
        "{'kv':{'type':'xor','data':[]}}",
        "{'kv':{'type':'and','data':[]}}",
        "{'kv':{'type':'or','data':{}}}",
        "{'kv':{'type':'not'}}",
        "{'kv':{'type':'cmp','data':{'lhs':['k'],'op':'like','rhs':'a'}}}",
        "{'kv':{'type':'cmp','data':{'lhs':[],'op':'eq','rhs':'a'}}}",
        "{'kv':{'type':'cmp','data':{'lhs':['k','l'],'op':'eq','rhs':'a'}}}",
        "{'kv':{'type':'cmp','data':{'lhs':'k','op':'eq','rhs':'a'}}}",
        "{'kv':{'type':'cmp','data':{'lhs':[1],'op':'eq','rhs':'a'}}}",
        "{'kv':{'type':'cmp','data':{'lhs':['k'],'rhs':'a'}}}",
        "{'kv':{'type':'cmp','data':{'lhs':['k'],'op':'eq'}}}",
        "{'kv':{'type':'cmp','data':{'lhs':['k'],'op':'eq','rhs':{}}}}",
        "{'kv':{'type':'cmp','data':{'lhs':['k'],'op':'eq','rhs':['a']}}}",
        "{'kv':{'type':'cmp','data':{'lhs':['k'],'op':'lt','rhs':'5'}}}",
        "{'kv':{'type':'cmp','data':{'lhs':['k'],'op':'ge','rhs':null}}}",
        "{'kv':{'type':'cmp','data':{'lhs':['k'],'op':'in','rhs':'a'}}}",
        "{'kv':{'type':'cmp','data':{'lhs':['k'],'op':'nin','rhs':[]}}}",
        "{'kv':{'type':'cmp','data':{'lhs':['k'],'op':'intersects','rhs':['a',true]}}}",
        "{'kv':{'type':'cmp','data':{'lhs':['k'],'op':'eq','rhs':1e999}}}",
        "{'kv':{'type':'and','data':[{'type':'cmp','data':{'lhs':['k'],'op':'eq','rhs':'a'}},"
        "{'type':'cmp','data':{'lhs':['k'],'op':'bad','rhs':'a'}}]}}",
    };
    const adserve_target_t *t;
    size_t i;
    int rc;
    char *e;

    for (i = 0; i < sizeof(nothing) / sizeof(nothing[0]); i++) {
        t = compile(nothing[i], &rc);
        ok(rc == 0 && t == NULL, "nothing to decide per request, no rule: %s", nothing[i]);
    }
    t = compile("{}", &rc);
    ok(adserve_target_compile(&builder, NULL, &t) == 0 && t == NULL, "no targeting: no rule");

    for (i = 0; i < sizeof(malformed) / sizeof(malformed[0]); i++) {
        t = compile(malformed[i], &rc);
        ok(rc == 1 && t == NULL, "malformed: %s", malformed[i]);
    }

    /* the depth limit: the contract's 16 levels compile, 17 do not */
    e = cmpj("k", "eq", "'a'");
    for (i = 0; i < ADSERVE_KV_MAX_DEPTH - 1; i++) e = fmt("{'type':'not','data':%s}", e);
    t = compile(fmt("{'kv':%s}", e), &rc);
    ok(rc == 0 && t != NULL, "kv nested 16 levels compiles");
    t = compile(fmt("{'kv':{'type':'not','data':%s}}", e), &rc);
    ok(rc == 1, "kv nested 17 levels is malformed");
}


/* ---- adserve_target_check: where and why, as the API answers ---------------------- */

static void test_check(void) {
    static const struct { const char *rule, *path, *reason; } refused[] = {
        { "'x'", "", "must be an object" },
        { "{'device':{'types':['watch']}}", "device.types[0]",
          "must be one of desktop, mobile, tablet, ctv, other" },
        { "{'device':{'os':'ios'}}", "device.os", "must be an array" },
        { "{'user':{'yob_min':1899}}", "user.yob_min", "must be between 1900 and 2100" },
        { "{'user':{'yob_min':1990,'yob_max':1989}}", "user.yob_max", "must be >= yob_min (1990)" },
        { "{'user':{'genders':['F','X']}}", "user.genders[1]", "must be one of M, F, O" },
        { "{'dayparts':[{'days':['mon'],'start':'09:00','end':'10:00'},{'days':[],'start':'09:00',"
          "'end':'10:00'}]}", "dayparts[1].days", "must name at least one day" },
        { "{'dayparts':[{'days':['mon','monday'],'start':'09:00','end':'10:00'}]}",
          "dayparts[0].days[1]", "must be one of mon, tue, wed, thu, fri, sat, sun" },
        { "{'dayparts':[{'days':['mon'],'start':'24:00','end':'24:00'}]}", "dayparts[0].start",
          "must be a time HH:MM from 00:00 to 23:59" },
        { "{'dayparts':[{'days':['mon'],'start':'09:00','end':'24:01'}]}", "dayparts[0].end",
          "must be a time HH:MM from 00:00 to 24:00" },
        { "{'dayparts':[{'days':['mon'],'start':'22:00','end':'02:00'}]}", "dayparts[0].end",
          "must be after start (22:00); past midnight, use two dayparts" },
        { "{'dayparts':[{'days':['mon'],'start':'09:00','end':'10:00','tz':'CET'}]}",
          "dayparts[0].tz", "must be one of UTC" },
        { "{'segments':['a']}", "segments", "must be an object" },
        { "{'segments':{'include':'a'}}", "segments.include", "must be an array" },
        { "{'segments':{'exclude':['a',7]}}", "segments.exclude[1]",
          "must be a segment id (1 to 64 bytes)" },
        { "{'segments':{'include':['']}}", "segments.include[0]",
          "must be a segment id (1 to 64 bytes)" },
        { "{'segments':{'include':['a','b'],'exclude':['c','b']}}", "segments.exclude[1]",
          "segment b is also included" },
        { "{'kv':{'type':'xor','data':[]}}", "kv.type", "must be one of cmp, and, or, not" },
        { "{'kv':{'type':'and','data':[]}}", "kv.data", "must hold at least one expression" },
        { "{'kv':{'type':'or','data':[{'type':'cmp','data':{'lhs':['k'],'op':'eq','rhs':'a'}},"
          "{'type':'not','data':{'type':'and','data':[]}}]}}", "kv.data[1].data.data",
          "must hold at least one expression" },
        { "{'kv':{'type':'not'}}", "kv", "must be an expression" },
        { "{'kv':{'type':'cmp','data':{'lhs':['k'],'op':'like','rhs':'a'}}}", "kv.data.op",
          "must be one of eq, ne, lt, le, gt, ge, in, nin, intersects" },
        { "{'kv':{'type':'cmp','data':{'lhs':['k','l'],'op':'eq','rhs':'a'}}}", "kv.data.lhs",
          "must name exactly one key" },
        { "{'kv':{'type':'cmp','data':{'lhs':['k'],'op':'eq','rhs':true}}}", "kv.data.rhs",
          "must be a string or a finite number for op eq" },
        { "{'kv':{'type':'cmp','data':{'lhs':['k'],'op':'ge','rhs':'5'}}}", "kv.data.rhs",
          "must be a finite number for op ge" },
        { "{'kv':{'type':'cmp','data':{'lhs':['k'],'op':'in','rhs':'x'}}}", "kv.data.rhs",
          "must be an array for op in" },
        { "{'kv':{'type':'cmp','data':{'lhs':['k'],'op':'nin','rhs':[]}}}", "kv.data.rhs",
          "must not be empty" },
        { "{'kv':{'type':'cmp','data':{'lhs':['k'],'op':'intersects','rhs':['x',{}]}}}",
          "kv.data.rhs[1]", "must be a string or a finite number" },
        { "{'kv':{'type':'cmp','data':{'lhs':['k'],'rhs':'x'}}}", "kv.data",
          "must be a comparison" },
    };
    adserve_target_err_t err;
    size_t i;
    char *e;
    int k;

    for (i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
        char *text = dq(refused[i].rule);
        cJSON *o = cJSON_Parse(text);
        int rc = adserve_target_check(o, &err);

        if (!ok(rc == 1 && strcmp(err.path, refused[i].path) == 0
                && strcmp(err.reason, refused[i].reason) == 0,
                "check refuses %s: %s: %s", refused[i].rule, refused[i].path,
                refused[i].reason))
        {
            diag("got %d, %s: %s", rc, err.path, err.reason);
        }
        cJSON_Delete(o);
        free(text);
    }

    /* the bounds, named at kv */
    e = cmpj("k", "eq", "'a'");
    for (k = 0; k < ADSERVE_KV_MAX_DEPTH; k++) e = fmt("{'type':'not','data':%s}", e);
    {
        char *text = dq(fmt("{'kv':%s}", e));
        cJSON *o = cJSON_Parse(text);

        ok(adserve_target_check(o, &err) == 1
           && strcmp(err.reason, "nested more than 16 levels deep") == 0
           && strncmp(err.path, "kv.data.data.data", 17) == 0,
           "17 levels: refused where the 17th begins (%s)", err.path);
        cJSON_Delete(o);
        free(text);
    }
    e = cmpj("k", "eq", "'v'");
    for (k = 0; k < ADSERVE_KV_MAX_CMPS; k++) e = fmt("%s,%s", e, cmpj("k", "eq", "'v'"));
    {
        char *text = dq(fmt("{'kv':{'type':'or','data':[%s]}}", e));
        cJSON *o = cJSON_Parse(text);

        ok(adserve_target_check(o, &err) == 1 && strcmp(err.path, "kv") == 0
           && strcmp(err.reason, "more than 256 comparisons") == 0,
           "257 comparisons: %s: %s", err.path, err.reason);
        cJSON_Delete(o);
        free(text);
    }

    /* what compiles is not refused, and says nothing */
    {
        char *text = dq("{'device':{'types':['mobile']},'user':{'yob_min':1970,'yob_max':1970},"
                        "'dayparts':[{'days':['sat'],'start':'00:00','end':'24:00','tz':'UTC'}],"
                        "'kv':{'type':'and','data':[{'type':'cmp','data':{'lhs':['s'],'op':'in',"
                        "'rhs':['a',3]}},{'type':'not','data':{'type':'cmp','data':{'lhs':['q'],"
                        "'op':'ge','rhs':2.5}}}]}}");
        cJSON *o = cJSON_Parse(text);

        ok(adserve_target_check(o, &err) == 0 && err.path[0] == '\0' && err.reason[0] == '\0',
           "a whole rule compiles");
        ok(adserve_target_check(NULL, &err) == 0, "no targeting compiles");
        cJSON_Delete(o);
        free(text);
    }
}


/* ---- in a snapshot --------------------------------------------------------------- */

typedef struct {
    adserve_kind_e kind;
    const char    *json;
} rec_t;

static adserve_snapshot_t *build(const rec_t *r, size_t n) {
    adserve_input_t in;
    adserve_snapshot_t *s;
    char err[256] = "";
    size_t i;

    adserve_input_init(&in);
    for (i = 0; i < n; i++) {
        char *q = keep(dq(r[i].json));
        if (adserve_input_ref(&in, r[i].kind, q, strlen(q)) != 0) abort();
    }
    s = adserve_snapshot_build(&in, err, sizeof(err));
    if (s == NULL) diag("build failed: %s", err);
    adserve_input_free(&in);
    return s;
}

#define BUILD(...) build((const rec_t[]){ __VA_ARGS__ }, \
                         sizeof((const rec_t[]){ __VA_ARGS__ }) / sizeof(rec_t))

static const char *li(const char *id, const char *type, int prio, const char *unit,
    const char *extra)
{
    return fmt("{'id':'%s','order_id':'o1','status':'ACTIVE','type':'%s','priority':%d,"
               "'cost_type':'CPM','rate':1,'targeting':{'ad_units':{'include':['%s']}%s%s}}",
               id, type, prio, unit, extra ? "," : "", extra ? extra : "");
}

static const char *cr(const char *id) {
    return fmt("{'id':'%s','approval':'APPROVED','type':'IMAGE','w':300,'h':250,"
               "'image_url':'https://cdn.example/%s.png'}", id, id);
}

static const char *lica(const char *id, const char *l, const char *c) {
    return fmt("{'id':'%s','line_item_id':'%s','creative_id':'%s','status':'ACTIVE'}", id, l, c);
}

/* the creative served on unit for body at now with rnd, or NULL */
static const char *serve(adserve_snapshot_t *s, const char *unit, const char *body,
    int64_t now, uint32_t rnd)
{
    static adserve_req_ctx_t ctx;
    static char id[64];
    const adserve_unit_t *u = adserve_snapshot_unit(s, unit, strlen(unit));
    const adserve_cand_t *c;
    adserve_decision_t d;
    adserve_ad_request_t req;
    char *buf = dq(body);

    if (adserve_json_parse_ad_request(buf, strlen(buf), &req, NULL, NULL) != 0) abort();
    adserve_req_ctx_init(&ctx, &req);
    /* no frequency caps here: a user whose history is known and empty */
    memset(&d, 0, sizeof(d));
    d.now = now;
    d.rnd = rnd;
    d.facts = &ctx;
    d.caps_known = 1;
    d.paces = adserve_paces_new(s, NULL, NULL);     /* nothing here is paced */
    if (d.paces == NULL) abort();
    c = u ? adserve_decide(s, u, &d) : NULL;
    if (c) snprintf(id, sizeof(id), "%s", c->creative_id.data);
    free(d.paces);
    free(buf);
    return c ? id : NULL;
}

#define UA_MOBILE  "Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like Gecko) " \
                   "Chrome/120.0.0.0 Mobile Safari/537.36"
#define UA_DESKTOP "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like " \
                   "Gecko) Chrome/120.0.0.0 Safari/537.36"

static void test_snapshot(void) {
    adserve_snapshot_t *s;
    int i, na = 0, na2 = 0, nb = 0, other = 0;
    const char *got;

    s = BUILD(
        { ADSERVE_KIND_AD_UNITS, "{'id':'u1','status':'ACTIVE'}" },
        { ADSERVE_KIND_AD_UNITS, "{'id':'u2','status':'ACTIVE'}" },
        { ADSERVE_KIND_ORDERS, "{'id':'o1','status':'APPROVED'}" },
        /* sponsorship on kv; a malformed one above it */
        { ADSERVE_KIND_LINE_ITEMS, li("l-bad", "SPONSORSHIP", 1, "u1",
              "'kv':{'type':'cmp','data':{'lhs':['section'],'op':'like','rhs':'sport'}}") },
        { ADSERVE_KIND_LINE_ITEMS, li("l-sp", "SPONSORSHIP", 4, "u1",
              "'kv':{'type':'cmp','data':{'lhs':['section'],'op':'in','rhs':['sport','news']}}") },
        /* two standard line items of one rank: one on mobile, one open */
        { ADSERVE_KIND_LINE_ITEMS, li("l-a", "STANDARD", 8, "u1",
              "'device':{'types':['mobile']}") },
        { ADSERVE_KIND_LINE_ITEMS, li("l-b", "STANDARD", 8, "u1",
              "'device':{'types':[],'os':[],'browsers':[]},'user':{'yob_min':null,"
              "'yob_max':null,'genders':[]},'dayparts':[],'kv':null") },
        /* u2: a user-targeted sponsorship over an untargeted house line */
        { ADSERVE_KIND_LINE_ITEMS, li("l-user", "SPONSORSHIP", 4, "u2",
              "'user':{'yob_min':1980,'yob_max':1999,'genders':['F']}") },
        { ADSERVE_KIND_LINE_ITEMS, li("l-house", "HOUSE", 16, "u2", NULL) },
        { ADSERVE_KIND_CREATIVES, cr("c-bad") }, { ADSERVE_KIND_CREATIVES, cr("c-sp") },
        { ADSERVE_KIND_CREATIVES, cr("c-a") }, { ADSERVE_KIND_CREATIVES, cr("c-a2") },
        { ADSERVE_KIND_CREATIVES, cr("c-b") }, { ADSERVE_KIND_CREATIVES, cr("c-user") },
        { ADSERVE_KIND_CREATIVES, cr("c-house") },
        { ADSERVE_KIND_LICAS, lica("a1", "l-bad", "c-bad") },
        { ADSERVE_KIND_LICAS, lica("a2", "l-sp", "c-sp") },
        { ADSERVE_KIND_LICAS, lica("a3", "l-a", "c-a") },
        { ADSERVE_KIND_LICAS, lica("a4", "l-a", "c-a2") },
        { ADSERVE_KIND_LICAS, lica("a5", "l-b", "c-b") },
        { ADSERVE_KIND_LICAS, lica("a6", "l-user", "c-user") },
        { ADSERVE_KIND_LICAS, lica("a7", "l-house", "c-house") });
    if (s == NULL) return;

    is_int((long long) s->stats.skipped, 1, "snapshot: the malformed rule counted in skipped");
    is_int((long long) s->stats.candidates, 6, "snapshot: its line item has no candidate");

    is_str(serve(s, "u1", "{'ext':{'kv':{'section':'sport'}}}", NOW, 0), "c-sp",
           "snapshot: kv matches, the sponsorship serves");
    is_str(serve(s, "u1", "{'ext':{'kv':{'section':['weather','news']}}}", NOW, 0), "c-sp",
           "snapshot: kv multi-valued matches");

    /* l-a and l-b rank equal (same group, same eCPM): a line item is
     * drawn at random first, then its creative by LICA weight. (Before
     * per-request eCPM the LICA weights were pooled across the group, and
     * l-a's two creatives took 2/3 of the requests: no longer so.) */
    for (i = 0; i < 300; i++) {
        got = serve(s, "u1", "{'device':{'ua':'" UA_MOBILE "'},'ext':{'kv':{'section':'x'}}}",
                    NOW, (uint32_t) i * 2654435761u);
        if (got && strcmp(got, "c-a") == 0) na++;
        else if (got && strcmp(got, "c-a2") == 0) na2++;
        else if (got && strcmp(got, "c-b") == 0) nb++;
        else other++;
    }
    ok(other == 0 && na + na2 >= 120 && na + na2 <= 180 && nb >= 120 && nb <= 180,
       "snapshot: kv fails, mobile: the standard group splits about evenly between "
       "l-a and l-b (%d / %d)", na + na2, nb);
    ok(na >= 45 && na2 >= 45, "snapshot: l-a rotates over its two creatives (%d / %d)",
       na, na2);

    for (i = 0, nb = 0; i < 300; i++) {
        got = serve(s, "u1", "{'device':{'ua':'" UA_DESKTOP "'}}", NOW, (uint32_t) i);
        nb += got && strcmp(got, "c-b") == 0;
    }
    is_int(nb, 300, "snapshot: desktop: l-a skipped inside its group, l-b always");
    is_str(serve(s, "u1", "{}", NOW, 7), "c-b", "snapshot: no facts at all: the open line item");

    is_str(serve(s, "u2", "{'user':{'yob':1990,'gender':'F'}}", NOW, 0), "c-user",
           "snapshot: user matches, the sponsorship serves");
    is_str(serve(s, "u2", "{'user':{'yob':1990,'gender':'M'}}", NOW, 0), "c-house",
           "snapshot: user does not match: the house line item below");
    is_str(serve(s, "u2", "{'user':{'gender':'F'}}", NOW, 0), "c-house",
           "snapshot: no yob: the house line item");
    adserve_snapshot_free(s);

    /* only targeted demand that does not match: no ad */
    s = BUILD(
        { ADSERVE_KIND_AD_UNITS, "{'id':'u1','status':'ACTIVE'}" },
        { ADSERVE_KIND_ORDERS, "{'id':'o1','status':'APPROVED'}" },
        { ADSERVE_KIND_LINE_ITEMS, li("l1", "STANDARD", 8, "u1",
              "'dayparts':[{'days':['mon'],'start':'09:00','end':'17:00'}]") },
        { ADSERVE_KIND_CREATIVES, cr("c1") },
        { ADSERVE_KIND_LICAS, lica("a1", "l1", "c1") });
    if (s == NULL) return;
    is_str(serve(s, "u1", "{}", MON + HM(10, 0), 0), "c1", "snapshot: daypart open: served");
    is_str(serve(s, "u1", "{}", MON + HM(18, 0), 0), NULL, "snapshot: daypart closed: no ad");
    adserve_snapshot_free(s);
}


/* ---- content filters: a catalog item's attributes --------------------------- */

static void *arena_cb(void *a, size_t size) {
    return adserve_arena_alloc(a, size);
}

/* the item with these attributes passes the content filter rule, for body */
static int passes(const char *rule_json, const char *attrs_json, const char *body) {
    static adserve_req_ctx_t ctx;
    adserve_ad_request_t req;
    const adserve_target_t *t = NULL;
    adserve_attrs_t attrs;
    char *rt = dq(rule_json), *at = dq(attrs_json), *buf = dq(body);
    cJSON *r = cJSON_Parse(rt), *a = cJSON_Parse(at);
    const char *err;
    size_t off;
    int rc;

    if (r == NULL || a == NULL || adserve_target_compile_filter(&builder, r, &t) != 0
        || t == NULL || adserve_attrs_read(a, arena_cb, &arena, &attrs) != 0
        || adserve_json_parse_ad_request(buf, strlen(buf), &req, &err, &off) != 0)
    {
        diag("test bug: %s over %s", rule_json, attrs_json);
        abort();
    }
    adserve_req_ctx_init(&ctx, &req);
    rc = adserve_target_filter(t, &ctx, &attrs);
    cJSON_Delete(r);
    cJSON_Delete(a);
    free(rt);
    free(at);
    free(buf);
    return rc;
}

static const char *filter_refusal(const char *rule_json) {
    static adserve_target_err_t err;
    static char out[600];
    char *text = dq(rule_json);
    cJSON *r = cJSON_Parse(text);
    int rc = adserve_target_check_filter(r, &err);

    cJSON_Delete(r);
    free(text);
    if (rc == 0) return "ok";
    snprintf(out, sizeof out, "%s: %s", err.path, err.reason);
    return out;
}

static void test_filter(void) {
    const char *item = "{'section':'sport','premium':false,'words':300,'tags':['uk','football'],"
                       "'n':'7','skip':null,'deep':{'a':1}}";
    const char *none = "{}";

    ok(passes("{'type':'cmp','data':{'lhs':['section'],'op':'eq','rhs':'sport'}}", item, none) == 1,
       "filter: a string attribute eq");
    ok(passes("{'type':'cmp','data':{'lhs':['premium'],'op':'eq','rhs':false}}", item, none) == 1,
       "filter: a boolean attribute eq false");
    ok(passes("{'type':'cmp','data':{'lhs':['premium'],'op':'eq','rhs':true}}", item, none) == 0,
       "filter: ... not true");
    ok(passes("{'type':'cmp','data':{'lhs':['premium'],'op':'eq','rhs':'false'}}", item, none) == 1,
       "filter: a boolean is the text false too");
    ok(passes("{'type':'cmp','data':{'lhs':['words'],'op':'gt','rhs':299.5}}", item, none) == 1,
       "filter: a number attribute gt");
    ok(passes("{'type':'cmp','data':{'lhs':['words'],'op':'eq','rhs':'300'}}", item, none) == 1,
       "filter: a number attribute by its text");
    ok(passes("{'type':'cmp','data':{'lhs':['n'],'op':'le','rhs':7}}", item, none) == 1,
       "filter: a string that reads as a number compares as one");
    ok(passes("{'type':'cmp','data':{'lhs':['tags'],'op':'intersects','rhs':['fr','uk']}}", item,
              none) == 1, "filter: an array attribute intersects");
    ok(passes("{'type':'cmp','data':{'lhs':['skip'],'op':'ne','rhs':'x'}}", item, none) == 0,
       "filter: a null attribute is absent: even ne is false");
    ok(passes("{'type':'cmp','data':{'lhs':['deep'],'op':'ne','rhs':'x'}}", item, none) == 0,
       "filter: an object attribute is absent");
    ok(passes("{'type':'not','data':{'type':'cmp','data':{'lhs':['missing'],'op':'eq','rhs':1}}}",
              item, none) == 1, "filter: not of an absent attribute");
    ok(passes("{'type':'cmp','data':{'lhs':['kv','section'],'op':'eq','rhs':'sport'}}", none,
              "{'ext':{'kv':{'section':'sport'}}}") == 1, "filter: [kv, key] reads the request");
    ok(passes("{'type':'cmp','data':{'lhs':['kv','section'],'op':'eq','rhs':'sport'}}", item,
              none) == 0, "filter: ... not the item's attribute of that name");
    is_str(filter_refusal("{'type':'cmp','data':{'lhs':['a','b','c'],'op':'eq','rhs':'x'}}"),
           "content_filter_rule.data.lhs: must name an item attribute, [name], or a key of the "
           "request's ext.kv, [\"kv\", key]", "filter: three lhs names refused");
    is_str(filter_refusal("{'type':'cmp','data':{'lhs':['item','x'],'op':'eq','rhs':'x'}}"),
           "content_filter_rule.data.lhs: must name an item attribute, [name], or a key of the "
           "request's ext.kv, [\"kv\", key]", "filter: two names not beginning with kv refused");
    is_str(filter_refusal("{'type':'cmp','data':{'lhs':['w'],'op':'lt','rhs':true}}"),
           "content_filter_rule.data.rhs: must be a finite number for op lt",
           "filter: lt true refused");
    is_str(filter_refusal("{'type':'cmp','data':{'lhs':['w'],'op':'in','rhs':[true,'a',2]}}"),
           "ok", "filter: in a list of a boolean, a string and a number");
    is_str(filter_refusal("null"), "ok", "filter: none at all");

    is_str(filter_refusal("{'type':'cmp','data':{'lhs':['w'],'op':'eq','rhs':{'a':1}}}"),
           "content_filter_rule.data.rhs: must be a string or a finite number for op eq",
           "filter: an object rhs refused");
}


int main(void) {
    alarm(600);
    adserve_arena_init(&arena, 64 * 1024);
    adserve_target_builder_init(&builder, &arena);

    test_ops();
    test_big_lists();
    test_logic();
    test_kv_parse();
    test_kv_robust();
    test_ua();
    test_device();
    test_user();
    test_segments();
    test_dayparts();
    test_compile();
    test_check();
    test_filter();
    test_snapshot();

    adserve_target_builder_free(&builder);
    adserve_arena_free(&arena);
    free_kept();
    return done_testing();
}
