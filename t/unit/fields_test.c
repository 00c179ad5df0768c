/* adserve_fields: line items, creatives and LICAs read by the strict
 * scanner, whose parse must be the one cJSON's document gives
 * (adserve_parse_dom): the same records refused, the same values. Each
 * record below is parsed both ways and compared member by member
 * (parsed_same.h); each also says whether the scanner reads it or leaves it
 * to cJSON, so that both ways are seen to be taken. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adserve_fields.h"
#include "adserve_parsed.h"
#include "adserve_target.h"
#include "kept.h"
#include "parsed_same.h"
#include "tap.h"

enum { DOM = 0, SCAN = 1 };

static const char *kind_name(adserve_kind_e kind) {
    return kind == ADSERVE_KIND_LINE_ITEMS ? "line item"
           : kind == ADSERVE_KIND_CREATIVES ? "creative" : "LICA";
}

/* whether the scanner reads text (else the parse is cJSON's) */
static int scans(adserve_kind_e kind, const char *text, size_t len) {
    adserve_fields_t fl;
    char *sink = malloc(2 * len + 64);
    int rc;

    if (sink == NULL) abort();
    rc = adserve_fields_scan(&fl, kind, text, len, sink, 2 * len + 64);
    free(sink);
    return rc == 0;
}

/* parses text[0..len) both ways: the same parse, read by whom it says */
static void same_n(adserve_kind_e kind, const char *text, size_t len, int reader,
                   const char *what) {
    adserve_parsed_t *a = adserve_parse(kind, text, len);
    adserve_parsed_t *b = adserve_parse_dom(kind, text, len);
    const char *d = parsed_diff(a, b);

    if (!ok(a != NULL && d == NULL, "%s, %s: the same parse", kind_name(kind), what))
        diag("differs in %s: %.*s", d ? d : "memory", (int) (len > 300 ? 300 : len), text);
    is_int(scans(kind, text, len), reader, "%s, %s: %s", kind_name(kind), what,
           reader ? "read by the scanner" : "left to cJSON");
    adserve_parsed_free(a);
    adserve_parsed_free(b);
}

static void same(adserve_kind_e kind, const char *text, int reader, const char *what) {
    same_n(kind, text, strlen(text), reader, what);
}

/* the scanner's parse, for the values themselves */
static adserve_parsed_t *parse(adserve_kind_e kind, const char *text) {
    adserve_parsed_t *p = adserve_parse(kind, text, strlen(text));

    if (p == NULL) abort();
    return p;
}

#define LI      ADSERVE_KIND_LINE_ITEMS
#define CR      ADSERVE_KIND_CREATIVES
#define LICA    ADSERVE_KIND_LICAS

/* a line item that serves, with room for one more member */
#define LI_OK(more) \
    "{\"id\":\"li1\",\"type\":\"STANDARD\",\"status\":\"ACTIVE\",\"cost_type\":\"CPM\"," \
    "\"rate\":1.5,\"priority\":4,\"order_id\":\"o1\"," \
    "\"start_at\":\"2026-01-01T00:00:00Z\",\"end_at\":\"2027-01-01T00:00:00Z\"" more "}"

#define CR_OK(more) \
    "{\"id\":\"c1\",\"type\":\"IMAGE\",\"approval\":\"APPROVED\",\"w\":300,\"h\":250," \
    "\"image_url\":\"https://cdn.example/a.png\",\"landing_url\":\"https://x.example/\"" \
    more "}"

static void test_json_text(void) {
    /* strings: every escape, raw UTF-8, \u, surrogate pairs */
    same(LI, LI_OK(",\"order_id\":\"o\\\"\\\\\\/\\b\\f\\n\\r\\t\""), SCAN, "escapes");
    same(LI, "{\"id\":\"caf\\u00e9 \xc3\xa9 \\ud83d\\ude00 \xf0\x9f\x98\x80\",\"status\":\"ACTIVE\"}",
         SCAN, "unicode, escaped and raw");
    same(CR, CR_OK(",\"html\":\"<b>\\u003c/script\\u003e</b>\""), SCAN, "an escaped html");
    /* a NUL ends a C string: cJSON's values, and its names, stop there */
    same(LICA, "{\"id\":\"a\\u0000b\",\"line_item_id\":\"l\\u0000\",\"status\":\"ACTIVE\"}",
         SCAN, "a NUL in values");
    same(LICA, "{\"id\\u0000x\":\"a\",\"status\\u0000\":\"ACTIVE\",\"weight\":3}", SCAN,
         "a NUL in names");
    same(LI, LI_OK(",\"targeting\":{\"ad_units\\u0000\":{\"include\\u0000zz\":[\"u1\"]}}"),
         SCAN, "a NUL in nested names");
    same(LICA, "{\"id\":\"\\u0000\"}", SCAN, "an id that is a NUL");

    /* what the strict scanner refuses and cJSON takes: cJSON decides */
    same(LICA, "{\"id\":\"a\tb\",\"status\":\"ACTIVE\"}", DOM, "a raw tab in a string");
    same(LICA, "{\"id\":\"a\",\"x\":\"\xff\xfe\",\"status\":\"ACTIVE\"}", DOM,
         "invalid UTF-8 in a member nobody reads");
    same(LICA, "\xef\xbb\xbf{\"id\":\"a\",\"status\":\"ACTIVE\"}", DOM, "a byte order mark");
    same(LICA, "{\"id\":\"a\",\f\"status\":\"ACTIVE\"}", DOM, "a form feed between members");
    same(LICA, "{\"id\":\"\\u12zz\",\"status\":\"ACTIVE\"}", DOM, "a bad \\u escape");
    same_n(LICA, "{\"id\":\"a\"}\0", 11, DOM, "a NUL after the record");
    same_n(LICA, "{\"id\":\"a\",\0\"status\":\"ACTIVE\"}", 29, DOM, "a NUL between members");

    /* what both refuse: a record without an id */
    same(LICA, "{\"id\":\"\\ud800\"}", DOM, "a lone high surrogate");
    same(LICA, "{\"id\":\"\\udc00x\"}", DOM, "a lone low surrogate");
    same(LICA, "{\"id\":\"a\",}", DOM, "a trailing comma");
    same(LICA, "{\"id\":\"a\"} x", DOM, "data after the record");
    same(LICA, "{\"id\":\"a\"", DOM, "cut short");
    same(LICA, "", DOM, "empty");
    same(LICA, "[{\"id\":\"a\"}]", DOM, "an array");
    same(LICA, "\"a\"", DOM, "a string");
    same(LICA, "{\"id\":01}", DOM, "a leading zero");
    same(LICA, "{\"id\":\"a\"} \r\n\t", SCAN, "white space after the record");
    same(LICA, " \n{ \"id\" : \"a\" , \"weight\" : 2 } ", SCAN, "white space around tokens");

    /* deeper than the scanner goes: cJSON's */
    {
        char deep[512];
        int i, n = 0;

        n += sprintf(deep + n, "{\"id\":\"a\",\"x\":");
        for (i = 0; i < 40; i++) deep[n++] = '[';
        for (i = 0; i < 40; i++) deep[n++] = ']';
        deep[n++] = '}';
        deep[n] = '\0';
        same(LICA, deep, DOM, "nested 41 deep");
    }
}

static void test_numbers(void) {
    static const char *const nums[] = {
        "0", "-0", "1", "3.0", "2.5", "1e2", "1E+2", "-1e-2", "0.000001", "12345678901234",
        "123456789012345", "1234567890123456", "123456789012345678901", "9007199254740993",
        "1e308", "1e309", "-1e400", "1e-400", "4.9e-324", "1000001", "1e6"
    };
    size_t i;

    for (i = 0; i < sizeof(nums) / sizeof(nums[0]); i++) {
        same(LI, fmt(LI_OK(",\"priority\":%s,\"rate\":%s,\"goal\":{\"units\":%s,"
                           "\"type\":\"IMPRESSIONS\"}"), nums[i], nums[i], nums[i]),
             SCAN, fmt("the number %s", nums[i]));
        same(LICA, fmt("{\"id\":\"a\",\"status\":\"ACTIVE\",\"weight\":%s}", nums[i]), SCAN,
             fmt("a weight of %s", nums[i]));
        same(CR, fmt(CR_OK(",\"w\":%s,\"h\":%s"), nums[i], nums[i]), SCAN,
             fmt("a size of %s", nums[i]));
    }

    /* cJSON copies 63 bytes of a number: a longer one fails the record,
     * wherever it is */
    same(LICA, fmt("{\"id\":\"a\",\"weight\":1%s}", "00000000000000000000000000000000000000000000000000000000000000"),
         SCAN, "a number of 63 digits");
    same(LICA, fmt("{\"id\":\"a\",\"weight\":1%s}", "000000000000000000000000000000000000000000000000000000000000000"),
         DOM, "a number of 64 digits");
    same(LICA, fmt("{\"id\":\"a\",\"x\":[0.%s]}", "0000000000000000000000000000000000000000000000000000000000000001"),
         DOM, "a long number nobody reads");
}

static void test_duplicates_and_types(void) {
    adserve_parsed_t *p;

    /* cJSON finds the first member of a name, whatever its type */
    same(LICA, "{\"id\":\"a\",\"id\":\"b\",\"status\":\"PAUSED\",\"status\":\"ACTIVE\"}", SCAN,
         "duplicate ids and statuses");
    p = parse(LICA, "{\"id\":\"a\",\"id\":\"b\",\"weight\":\"2\",\"weight\":5,\"status\":\"ACTIVE\"}");
    ok(strcmp(p->id, "a") == 0 && p->u.lica.weight == 1,
       "the first member wins, even of the wrong type (weight 1, the default)");
    adserve_parsed_free(p);
    same(LI, LI_OK(",\"targeting\":{\"ad_units\":{\"include\":[\"u1\"]},"
                   "\"ad_units\":{\"include\":[\"u2\"]}}"), SCAN, "duplicate ad_units");
    same(LI, LI_OK(",\"targeting\":{\"ad_units\":{\"include\":[\"u1\"],\"include\":[\"u2\"],"
                   "\"exclude\":[\"u3\"]}},\"targeting\":{\"placements\":[\"p\"]}"), SCAN,
         "duplicate include and targeting");
    p = parse(LI, LI_OK(",\"targeting\":{\"ad_units\":{\"include\":[\"u1\"],\"include\":[\"u2\"]}},"
                        "\"targeting\":{\"placements\":[\"p\"]}"));
    ok(p->u.li.include.n == 1 && strcmp(p->u.li.include.v[0], "u1") == 0
       && p->u.li.placements.n == 0, "the first include, of the first targeting");
    adserve_parsed_free(p);
    same(LI, LI_OK(",\"goal\":\"x\",\"goal\":{\"units\":5}"), SCAN, "a goal that is a string first");
    same(LI, LI_OK(",\"frequency_caps\":[{\"max\":2,\"max\":3,\"seconds\":60,\"seconds\":\"x\"}]"),
         SCAN, "duplicates in a cap");

    /* every member read, of every type */
    {
        static const char *const vals[] = {
            "null", "true", "false", "\"x\"", "\"\"", "1", "-1", "{}", "[]", "[\"a\",1,null]",
            "{\"a\":1}", "[[\"a\"]]", "[{\"x\":\"y\"}]"
        };
        static const char *const li_members[] = {
            "id", "type", "status", "approval", "priority", "cost_type", "rate", "goal",
            "delivery", "frequency_caps", "start_at", "end_at", "order_id", "targeting"
        };
        static const char *const cr_members[] = {
            "id", "type", "approval", "w", "h", "categories", "landing_url", "interstitial",
            "image_url", "html"
        };
        static const char *const lica_members[] = {
            "id", "status", "line_item_id", "creative_id", "weight"
        };
        size_t i, j;

        for (j = 0; j < sizeof(vals) / sizeof(vals[0]); j++) {
            for (i = 0; i < sizeof(li_members) / sizeof(li_members[0]); i++) {
                /* first, to be the one read */
                same(LI, fmt("{\"%s\":%s,%s", li_members[i], vals[j], LI_OK("") + 1), SCAN,
                     fmt("%s: %s", li_members[i], vals[j]));
            }
            for (i = 0; i < sizeof(cr_members) / sizeof(cr_members[0]); i++) {
                same(CR, fmt("{\"%s\":%s,%s", cr_members[i], vals[j], CR_OK("") + 1), SCAN,
                     fmt("%s: %s", cr_members[i], vals[j]));
            }
            for (i = 0; i < sizeof(lica_members) / sizeof(lica_members[0]); i++) {
                same(LICA, fmt("{\"%s\":%s,\"id\":\"l\",\"line_item_id\":\"x\","
                               "\"creative_id\":\"y\",\"status\":\"ACTIVE\",\"weight\":2}",
                               lica_members[i], vals[j]), SCAN,
                     fmt("%s: %s", lica_members[i], vals[j]));
            }
            /* nested members too */
            same(LI, fmt(LI_OK(",\"goal\":{\"units\":%s,\"type\":%s}"), vals[j], vals[j]), SCAN,
                 fmt("goal members: %s", vals[j]));
            same(LI, fmt(LI_OK(",\"frequency_caps\":[{\"max\":%s,\"seconds\":%s},%s]"),
                         vals[j], vals[j], vals[j]), SCAN, fmt("cap members: %s", vals[j]));
            same(LI, fmt(LI_OK(",\"targeting\":{\"ad_units\":{\"include\":%s,\"exclude\":%s},"
                               "\"placements\":%s}"), vals[j], vals[j], vals[j]), SCAN,
                 fmt("targeting lists: %s", vals[j]));
            same(LI, fmt(LI_OK(",\"targeting\":{\"ad_units\":%s}"), vals[j]), SCAN,
                 fmt("ad_units: %s", vals[j]));
        }
    }

    /* names: longer than the key buffer, or as long */
    same(LICA, "{\"id\":\"a\",\"line_item_id_and_more\":\"x\",\"line_item_id\":\"y\"}", SCAN,
         "a name longer than every known one");
    same(LICA, "{\"id\":\"a\",\"line_item_id\\u0000and more\":\"x\",\"line_item_id\":\"y\"}",
         SCAN, "a long name cut by a NUL");
    same(LI, LI_OK(",\"frequency_caps\\u0000\":[{\"max\":1,\"seconds\":10}]"), SCAN,
         "the longest name, cut by a NUL");
    same(LI, LI_OK(",\"frequency_capsX\":[{\"max\":1,\"seconds\":10}]"), SCAN,
         "a name one byte longer than the longest");
}

static void test_line_items(void) {
    adserve_parsed_t *p;
    size_t i;
    char *caps;
    int n;

    same(LI, LI_OK(""), SCAN, "one that serves");
    same(LI, LI_OK(",\"approval\":\"PENDING\""), SCAN, "pending review");
    same(LI, LI_OK(",\"approval\":\"APPROVED\""), SCAN, "approved");
    same(LI, LI_OK(",\"approval\":null"), SCAN, "approval null");
    same(LI, LI_OK(",\"start_at\":\"2026-01-01T00:00:00.123456+02:00\""), SCAN, "a time with a fraction");
    same(LI, LI_OK(",\"start_at\":\"2028-01-01T00:00:00Z\""), SCAN, "a start after its end");
    same(LI, LI_OK(",\"end_at\":\"yesterday\""), SCAN, "a time that is not one");
    same(LI, fmt(LI_OK(",\"end_at\":\"2027-01-01T00:00:00.%sZ\""),
                 "123456789012345678901234567890123456789012345678901234567890"),
         SCAN, "a time with a fraction of 60 digits");
    same(LI, LI_OK(",\"delivery\":\"ASAP\",\"goal\":{\"units\":1000,\"type\":\"CLICKS\"}"), SCAN,
         "a goal, as soon as possible");
    same(LI, LI_OK(",\"goal\":{\"units\":0.5,\"type\":\"CLICKS\"}"), SCAN, "a goal below one");
    same(LI, LI_OK(",\"goal\":{\"units\":1e16}"), SCAN, "a goal past the API's");
    same(LI, LI_OK(",\"type\":\"NOPE\""), SCAN, "an unknown type");
    same(LI, LI_OK(",\"status\":\"PAUSED\""), SCAN, "paused");
    same(LI, LI_OK(",\"rate\":1e400"), SCAN, "an infinite rate");

    /* frequency caps: the API's bounds, 8 kept, 16 objects read */
    same(LI, LI_OK(",\"frequency_caps\":[{\"max\":0,\"seconds\":10},{\"max\":1e7,\"seconds\":10},"
                   "{\"max\":2,\"seconds\":31536001},{\"max\":3,\"seconds\":3600},1,\"x\","
                   "[{\"max\":1,\"seconds\":1}]]"), SCAN, "caps, some refused");
    for (n = 8; n <= 17; n += 9) {
        caps = fmt("%s", "");
        for (i = 0; i < (size_t) n; i++)
            caps = fmt("%s%s{\"max\":%zu,\"seconds\":%zu}", caps, i ? "," : "", i + 1, 60 * (i + 1));
        same(LI, fmt(LI_OK(",\"frequency_caps\":[%s,{\"max\":99,\"seconds\":99}]"), caps),
             n + 1 <= ADSERVE_FL_CAPS_MAX ? SCAN : DOM, fmt("%d caps", n + 1));
    }
    p = parse(LI, LI_OK(",\"frequency_caps\":[{\"max\":3,\"seconds\":3600},{\"max\":1,\"seconds\":60}]"));
    ok(p->u.li.ncaps == 2 && p->u.li.max_cap == 3600 && p->u.li.caps[1].max == 1, "caps read");
    adserve_parsed_free(p);

    /* the rule: ad_units and placements alone compile to nothing, any
     * other member is compiled from its own text */
    same(LI, LI_OK(",\"targeting\":{\"ad_units\":{\"include\":[\"u1\",\"u2\"],\"exclude\":[\"u3\"]},"
                   "\"placements\":[\"p1\"]}"), SCAN, "ad units and placements");
    same(LI, LI_OK(",\"targeting\":{}"), SCAN, "an empty targeting");
    same(LI, LI_OK(",\"targeting\":null"), SCAN, "targeting null");
    same(LI, LI_OK(",\"targeting\":{\"kv\":null}"), SCAN, "targeting with a null kv");
    same(LI, LI_OK(",\"targeting\":{\"device\":{\"types\":[\"mobile\"]},\"ad_units\":"
                   "{\"include\":[\"u1\"]},\"placements\":[\"p\"],\"ad_units\":{}}"), SCAN,
         "a device rule, kept");
    same(LI, LI_OK(",\"targeting\":{\"kv\":{\"section\":[\"sports\",\"news\"]},"
                   "\"user\":{\"yob_min\":1990}}"), SCAN, "kv and user rules, kept");
    same(LI, LI_OK(",\"targeting\":{\"device\":{\"types\":\"nope\"}}"), SCAN, "a malformed rule");
    same(LI, LI_OK(",\"targeting\":[1]"), SCAN, "a targeting that is an array");
    same(LI, LI_OK(",\"targeting\":\"x\""), SCAN, "a targeting that is a string");
    same(LI, LI_OK(",\"status\":\"PAUSED\",\"targeting\":{\"device\":{\"types\":[\"mobile\"]}}"),
         SCAN, "a rule of a line item that cannot serve");
    p = parse(LI, LI_OK(",\"targeting\":{\"device\":{\"types\":[\"mobile\"]},"
                        "\"ad_units\":{\"include\":[\"u1\"]}}"));
    ok(p->u.li.active && p->u.li.rule == ADSERVE_RULE_KEPT && p->u.li.targeting != NULL
       && cJSON_GetObjectItemCaseSensitive(p->u.li.targeting, "ad_units") == NULL
       && p->u.li.include.n == 1, "a kept rule, without its ad_units");
    adserve_parsed_free(p);
    p = parse(LI, LI_OK(",\"targeting\":[]"));
    ok(p->u.li.rule == ADSERVE_RULE_MALFORMED, "a targeting that is not an object never serves");
    adserve_parsed_free(p);

    /* the scanner's premise: the compiler reads neither ad_units nor
     * placements */
    {
        cJSON *tg = cJSON_Parse("{\"ad_units\":{\"include\":[\"u1\"],\"exclude\":[1]},"
                                "\"placements\":{\"x\":[]},\"ad_units\":7}");
        adserve_arena_t arena;
        adserve_target_builder_t tb;
        const adserve_target_t *t = (const adserve_target_t *) 1;

        adserve_arena_init(&arena, 1024);
        adserve_target_builder_init(&tb, &arena);
        ok(tg != NULL && adserve_target_compile(&tb, tg, &t) == 0 && t == NULL,
           "the targeting compiler finds nothing in ad_units and placements");
        adserve_target_builder_free(&tb);
        adserve_arena_free(&arena);
        cJSON_Delete(tg);
    }

    /* lists larger than the first scratch block: it grows */
    {
        char *big = fmt("%s", "\"\"");
        for (i = 0; i < 12; i++) big = fmt("%s,%s", big, big);
        same(LI, fmt(LI_OK(",\"targeting\":{\"ad_units\":{\"include\":[%s]}}"), big), SCAN,
             "4096 empty ad unit ids");
        p = parse(LI, fmt(LI_OK(",\"targeting\":{\"placements\":[%s]}"), big));
        is_int(p->u.li.placements.n, 4096, "4096 placements read");
        adserve_parsed_free(p);
    }

    /* a too long id: the record is its kind alone, both ways */
    {
        char *id = fmt("%s", "x");
        for (i = 0; i < 8; i++) id = fmt("%s%s", id, id);
        same(LI, fmt(LI_OK(",\"id\":\"%s\""), id), SCAN, "a duplicate id after a good one");
        same(LI, fmt("{\"id\":\"%s\",%s", id, LI_OK("") + 1), SCAN, "an id too long");
        p = parse(LI, fmt("{\"id\":\"%s\",%s", id, LI_OK("") + 1));
        ok(p->id == NULL && !p->u.li.active && p->u.li.order_id == NULL, "an id too long: nothing read");
        adserve_parsed_free(p);
    }
}

static void test_creatives(void) {
    adserve_parsed_t *p;

    same(CR, CR_OK(""), SCAN, "an image");
    same(CR, CR_OK(",\"categories\":[\"IAB1\",2,null,\"IAB\\u00e9\"],\"interstitial\":true"), SCAN,
         "categories, interstitial");
    same(CR, CR_OK(",\"interstitial\":1"), SCAN, "interstitial 1");
    same(CR, CR_OK(",\"type\":\"HTML\",\"html\":\"<div class=\\\"a\\\">\\u2028\\u0001</div>\""),
         SCAN, "html");
    same(CR, CR_OK(",\"type\":\"HTML\""), SCAN, "html without its markup");
    same(CR, "{\"id\":\"c\",\"type\":\"IMAGE\",\"approval\":\"APPROVED\"}", SCAN, "an image without its url");
    same(CR, CR_OK(",\"approval\":\"PENDING\""), SCAN, "pending");
    same(CR, CR_OK(",\"type\":\"NOPE\""), SCAN, "an unknown type");
    same(CR, CR_OK(",\"type\":\"VIDEO\",\"approval\":\"REJECTED\""), SCAN, "a rejected video");
    same(CR, CR_OK(",\"type\":\"VIDEO\",\"video\":{\"duration\":15,\"skip_offset\":5,\"media_files\":"
                   "[{\"url\":\"https://v.example/a.mp4\",\"mime\":\"video/mp4\",\"w\":640,\"h\":360}]}"),
         SCAN, "an approved video (cJSON renders its VAST)");
    same(CR, CR_OK(",\"type\":\"NATIVE\",\"native\":{\"title\":\"t\",\"image_url\":\"https://i.example/a.png\"}"),
         SCAN, "an approved native (cJSON reads its assets)");
    p = parse(CR, CR_OK(""));
    ok(p->u.creative.approved && p->u.creative.ad_json != NULL
       && strstr(p->u.creative.ad_json, "\"img\":\"https://cdn.example/a.png\"") != NULL,
       "an image renders");
    adserve_parsed_free(p);
}

static void test_licas(void) {
    static const char *const weights[] = { "0.5", "1", "2.7", "1e7", "\"3\"", "null", "-1" };
    adserve_parsed_t *p;
    size_t i;

    for (i = 0; i < sizeof(weights) / sizeof(weights[0]); i++) {
        same(LICA, fmt("{\"id\":\"l\",\"line_item_id\":\"x\",\"creative_id\":\"y\","
                       "\"status\":\"ACTIVE\",\"weight\":%s}", weights[i]), SCAN,
             fmt("weight %s", weights[i]));
    }
    same(LICA, "{\"id\":\"l\",\"line_item_id\":\"x\",\"creative_id\":\"y\",\"status\":\"PAUSED\"}",
         SCAN, "paused");
    p = parse(LICA, "{\"id\":\"l\",\"line_item_id\":\"x\",\"creative_id\":\"y\",\"status\":\"ACTIVE\"}");
    ok(p->u.lica.weight == 1 && strcmp(p->u.lica.creative_id, "y") == 0
       && p->u.lica.creative_hash == adserve_hash("y", 1), "a LICA read");
    adserve_parsed_free(p);
    /* the other kinds are cJSON's */
    ok(!adserve_fields_kind(ADSERVE_KIND_AD_UNITS) && !adserve_fields_kind(ADSERVE_KIND_ORDERS),
       "ad units and orders are not scanned");
}

int main(void) {
    test_json_text();
    test_numbers();
    test_duplicates_and_types();
    test_line_items();
    test_creatives();
    test_licas();
    free_kept();
    return done_testing();
}
