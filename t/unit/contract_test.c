/* adserve_contract: the tables and parsers both programs share. */
#include <stdint.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>

#include "adserve_contract.h"
#include "adserve_experiment.h"
#include "tap.h"


static void test_kinds(void) {
    int k;

    for (k = 0; k < ADSERVE_KIND_ALL; k++) {
        ok(strncmp(adserve_kinds[k].key, ADSERVE_KEY_PREFIX, sizeof(ADSERVE_KEY_PREFIX) - 1) == 0
           && strcmp(adserve_kinds[k].key + sizeof(ADSERVE_KEY_PREFIX) - 1,
                     adserve_kinds[k].name) == 0,
           "kind %d: %s is named %s", k, adserve_kinds[k].key, adserve_kinds[k].name);
    }
    for (k = 0; k < ADSERVE_KIND_SERVING; k++) {
        is_int(adserve_kind_by_name(adserve_kinds[k].name, strlen(adserve_kinds[k].name)), k,
               "the change log's %s is serving's kind %d", adserve_kinds[k].name, k);
        is_int(adserve_kind_by_key(adserve_kinds[k].key), k, "%s is a serving hash",
               adserve_kinds[k].key);
    }
    is_int(adserve_kind_by_name("advertisers", 11), -1, "advertisers: not read by serving");
    is_int(adserve_kind_by_key(ADSERVE_KEY_ADVERTISERS), -1, "nor its key");
    is_int(adserve_kind_by_name("line_items_x", 10), ADSERVE_KIND_LINE_ITEMS,
           "a name is its first len bytes");
    is_int(adserve_kind_by_name("line_item", 9), -1, "a prefix of a name is not the name");
    is_int(adserve_kind_by_key("line_items"), -1, "a key without the prefix is not ours");
    is_int(adserve_kind_by_key(ADSERVE_KEY_REV), -1, "the revision is no kind");
    is_int(adserve_kind_by_key(NULL), -1, "NULL is no kind");
    ok(strcmp(adserve_kinds[ADSERVE_KIND_LINE_ITEMS].record, ADSERVE_RECORD_LINE_ITEM) == 0,
       "a kind's record type is the audit log's");
}


static void test_vocab(void) {
    static const struct { const char *const *names; int count; } tables[] = {
        { adserve_unit_status_names, ADSERVE_UNIT_STATUS_COUNT },
        { adserve_order_status_names, ADSERVE_ORDER_STATUS_COUNT },
        { adserve_li_status_names, ADSERVE_LI_STATUS_COUNT },
        { adserve_lica_status_names, ADSERVE_LICA_STATUS_COUNT },
        { adserve_approval_names, ADSERVE_APPROVAL_COUNT },
        { adserve_tier_names, ADSERVE_TIER_COUNT },
        { adserve_cost_names, ADSERVE_COST_COUNT },
        { adserve_goal_names, ADSERVE_GOAL_COUNT },
        { adserve_delivery_names, ADSERVE_DELIVERY_COUNT },
        { adserve_creative_type_names, ADSERVE_CREATIVE_TYPE_COUNT },
        { adserve_key_type_names, ADSERVE_KEY_TYPE_COUNT },
        { adserve_tracking_names, ADSERVE_TRACKING_COUNT },
        { adserve_dim_names, ADSERVE_DIM_COUNT },
        { adserve_metric_names, ADSERVE_METRIC_COUNT },
        { adserve_device_type_names, ADSERVE_DEVICE_COUNT },
        { adserve_os_names, ADSERVE_OS_COUNT },
        { adserve_browser_names, ADSERVE_BROWSER_COUNT },
        { adserve_gender_names, ADSERVE_GENDER_COUNT },
        { adserve_weekday_names, ADSERVE_WEEKDAY_COUNT },
        { adserve_zone_names, ADSERVE_ZONE_COUNT },
        { adserve_expr_names, ADSERVE_EXPR_COUNT },
        { adserve_op_names, ADSERVE_OP_COUNT },
        { adserve_currency_names, ADSERVE_CURRENCY_COUNT },
    };
    size_t t;
    int i, good;

    for (t = 0; t < sizeof(tables) / sizeof(tables[0]); t++) {
        good = tables[t].names[tables[t].count] == NULL;
        for (i = 0; good && i < tables[t].count; i++) {
            good = tables[t].names[i] != NULL
                   && adserve_vocab_str(tables[t].names, tables[t].names[i]) == i;
        }
        ok(good, "table %zu: %d names, each found at its enum, NULL-ended", t, tables[t].count);
    }

    is_int(adserve_vocab_str(adserve_tier_names, "PRICE_PRIORITY"), ADSERVE_TIER_PRICE_PRIORITY,
           "a word is its enum");
    is_int(adserve_vocab_str(adserve_tier_names, "price_priority"), -1, "words are exact");
    is_int(adserve_vocab_str(adserve_tier_names, "HOUSE "), -1, "nothing after the word");
    is_int(adserve_vocab_str(adserve_tier_names, NULL), -1, "NULL is no word");
    is_int(adserve_vocab(adserve_cost_names, "CPMX", 3), ADSERVE_COST_CPM,
           "adserve_vocab reads len bytes");
    is_int(adserve_vocab(adserve_cost_names, "CP", 2), -1, "a prefix of a word is not the word");

    ok(adserve_tier_priority[ADSERVE_TIER_SPONSORSHIP] < adserve_tier_priority[ADSERVE_TIER_STANDARD]
       && adserve_tier_priority[ADSERVE_TIER_STANDARD]
          < adserve_tier_priority[ADSERVE_TIER_PRICE_PRIORITY]
       && adserve_tier_priority[ADSERVE_TIER_PRICE_PRIORITY]
          < adserve_tier_priority[ADSERVE_TIER_HOUSE]
       && adserve_tier_priority[ADSERVE_TIER_HOUSE] == ADSERVE_PRIORITY_MAX,
       "default priorities rank as the types do");
    ok(strcmp(adserve_metric_names[ADSERVE_METRIC_IMP + ADSERVE_EVENT_CONVERSION], "conv") == 0,
       "an event's metric is ADSERVE_METRIC_IMP + its type");
    ok(ADSERVE_METRIC_REPORTED == ADSERVE_METRIC_CONVVAL + 1, "the reports' metrics come first");

    for (i = 1, good = 1; i < ADSERVE_CURRENCY_COUNT; i++) {
        good = good && strlen(adserve_currency_names[i]) == 3
               && strcmp(adserve_currency_names[i - 1], adserve_currency_names[i]) < 0;
    }
    ok(good, "currencies: three letters each, sorted, none twice");
    ok(adserve_vocab_str(adserve_currency_names, ADSERVE_CURRENCY_DEFAULT) >= 0,
       "the default currency is one");
}


static void test_public_url(void) {
    static const struct { const char *url; int ok; } cases[] = {
        { "https://ads.example.com", 1 },
        { "http://127.0.0.1:8080", 1 },
        { "https://example.com/ads/v0", 1 },
        { "https://[::1]:8443", 1 },
        { "https://ads.example.com/", 0 },          /* a trailing slash */
        { "ftp://ads.example.com", 0 },
        { "https://", 0 },
        { "https:///path", 0 },
        { "//ads.example.com", 0 },
        { "https://ads.example.com/a b", 0 },
        { "https://ads.example.com/\"x", 0 },
        { "https://ads.example.com/'x", 0 },
        { "https://ads.example.com/<x>", 0 },
        { "https://ads.example.com/?a&b", 0 },
        { "https://ads.example.com/\\x", 0 },
        { "https://ads.example.com/\x7f", 0 },
        { "https://ads.example.com/\xc3\xa9", 0 },   /* IRIs: give their URI */
        { "https://ads.example.com/\n", 0 },
    };
    char   long_url[ADSERVE_PUBLIC_URL_MAX + 2];
    size_t i;

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        is_int(adserve_public_url_ok(cases[i].url, strlen(cases[i].url)), cases[i].ok,
               "public URL %zu is %s", i, cases[i].ok ? "one" : "refused");
    }
    is_int(adserve_public_url_ok("https://a.example/x", 17), 1, "len bytes are checked");

    memcpy(long_url, "https://", 8);
    memset(long_url + 8, 'a', sizeof(long_url) - 9);
    long_url[sizeof(long_url) - 1] = '\0';
    is_int(adserve_public_url_ok(long_url, ADSERVE_PUBLIC_URL_MAX), 1, "at the limit: one");
    is_int(adserve_public_url_ok(long_url, ADSERVE_PUBLIC_URL_MAX + 1), 0, "past it: refused");
}


static void test_hhmm(void) {
    static const struct { const char *s; int end, minutes; } cases[] = {
        { "00:00", 0, 0 }, { "23:59", 0, 1439 }, { "12:30", 1, 750 }, { "24:00", 1, 1440 },
        { "24:00", 0, -1 }, { "24:01", 1, -1 }, { "25:00", 1, -1 }, { "12:60", 0, -1 },
        { "1:00", 0, -1 }, { "01:0", 0, -1 }, { "01-00", 0, -1 }, { "+1:00", 0, -1 },
        { "01:+0", 0, -1 }, { "01:00 ", 0, -1 }, { "", 0, -1 }, { "ab:cd", 0, -1 },
    };
    size_t i;

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        is_int(adserve_parse_hhmm(cases[i].s, cases[i].end), cases[i].minutes,
               "hhmm \"%s\"%s", cases[i].s, cases[i].end ? " as an end" : "");
    }
    is_int(adserve_parse_hhmm(NULL, 1), -1, "hhmm NULL");
}


static void test_hash(void) {
    /* FNV-1a's published vectors */
    ok(adserve_hash("", 0) == 0xcbf29ce484222325ULL, "fnv1a(\"\")");
    ok(adserve_hash("a", 1) == 0xaf63dc4c8601ec8cULL, "fnv1a(\"a\")");
    ok(adserve_hash("foobar", 6) == 0x85944171f73967e8ULL, "fnv1a(\"foobar\")");
}


/* ---- adserve_parse_time ------------------------------------------------- */

static void test_parse_time(void) {
    static const struct { const char *s; long long t; } good[] = {
        { "1970-01-01T00:00:00Z", 0 },
        { "2025-06-01T00:00:00Z", 1748736000 },
        { "2025-06-01T00:00:00z", 1748736000 },
        { "2024-02-29T12:00:00Z", 1709208000 },
        { "2000-02-29T00:00:00Z", 951782400 },
        { "2024-03-01T00:00:00Z", 1709251200 },
        { "2024-01-01T02:00:00+02:00", 1704067200 },
        { "2023-12-31T18:30:00-05:30", 1704067200 },
        { "2024-01-01T00:00:00+00:00", 1704067200 },
        { "2024-01-01T00:00:00-00:00", 1704067200 },
        { "2024-01-01T00:00:00.5Z", 1704067200 },
        { "2024-01-01T00:00:00.999999999Z", 1704067200 },
        { "2024-01-01T02:00:00.123+02:00", 1704067200 },
        { "2100-02-28T00:00:00Z", 4107456000LL },
        { "1969-12-31T23:00:00Z", -3600 },
        { "1969-12-31T23:59:59Z", -1 },       /* -1 is a time, not an error */
    };
    static const char *const bad[] = {
        "", "2024", "2024-01-01", "2024-01-01T00:00:00", "2024-01-01T00:00Z",
        "2024-01-01 00:00:00Z", "2024-01-01T00:00:00ZZ", "2024-01-01T00:00:00Z ",
        " 2024-01-01T00:00:00Z", "2024-1-01T00:00:00Z", "24-01-01T00:00:00Z",
        "2024-13-01T00:00:00Z", "2024-00-01T00:00:00Z", "2024-01-00T00:00:00Z",
        "2024-01-32T00:00:00Z", "2024-01-01T24:00:00Z", "2024-01-01T00:60:00Z",
        "2024-01-01T00:00:61Z", "2024-01-01T00:00:00+0200", "2024-01-01T00:00:00+02",
        "2024-01-01T00:00:00+24:00", "2024-01-01T00:00:00+02:60",
        "2024-01-01T00:00:00+02:00x", "2024-01-01T00:00:00UTC",
        "2024-01-01T00:00:00.Z", "2024-01-01T00:00:00.", "2024-01-01T00:00:00,5Z",
        "2023-02-29T00:00:00Z", "1900-02-29T00:00:00Z", "2024-04-31T00:00:00Z",
        "2024-02-30T00:00:00Z", "2024-01-01T-1:00:00Z", "2024-01-01T00:-1:00Z",
        "2024-01-01T00:00:-1Z", "2024-01-01T+1:00:00Z", "2024-01-01T00:00:00+-1:00",
        "2024-01-01T00:00:00+ 1:00", "tomorrow",
    };
    size_t i;
    int64_t t;

    for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        t = 12345;
        ok(adserve_parse_time(good[i].s, &t) == 0 && t == good[i].t,
           "parse_time %s = %lld (got %lld)", good[i].s, good[i].t, (long long) t);
    }
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        is_int(adserve_parse_time(bad[i], &t), -1, "parse_time rejects \"%s\"", bad[i]);
    }
    is_int(adserve_parse_time(NULL, &t), -1, "parse_time rejects NULL");
}


static void test_snapshot_path(void) {
    static const char *const good[] = { "picks.txt", "editors/picks-2024_11.txt", "a/b/c", "..a", "a..", NULL };
    static const char *const bad[] = { "", "/etc/passwd", "../x", "a/../b", "a/..", "./a", "a/./b", "a//b",
                                       "a/", "with space", "a\\b", "caf\xc3\xa9", NULL };
    char longest[ADSERVE_SNAPSHOT_PATH_MAX + 2];

    for (int i = 0; good[i] != NULL; i++)
        ok(adserve_snapshot_path_check(good[i]) == NULL, "snapshot path \"%s\": inside the folder", good[i]);
    for (int i = 0; bad[i] != NULL; i++)
        ok(adserve_snapshot_path_check(bad[i]) != NULL, "snapshot path \"%s\": refused", bad[i]);
    ok(adserve_snapshot_path_check(NULL) != NULL, "snapshot path NULL: refused");
    memset(longest, 'a', sizeof longest);
    longest[ADSERVE_SNAPSHOT_PATH_MAX] = '\0';
    ok(adserve_snapshot_path_check(longest) == NULL, "a snapshot path of 255 bytes");
    longest[ADSERVE_SNAPSHOT_PATH_MAX] = 'a';
    longest[ADSERVE_SNAPSHOT_PATH_MAX + 1] = '\0';
    ok(adserve_snapshot_path_check(longest) != NULL, "... of 256: refused");
}

static void test_service_name(void) {
    char longest[ADSERVE_SERVICE_MAX + 2];

    ok(adserve_service_name_ok("demo") && adserve_service_name_ok("recs_v2-EU"), "service names");
    ok(!adserve_service_name_ok("") && !adserve_service_name_ok(NULL) &&
       !adserve_service_name_ok("../admin") && !adserve_service_name_ok("a/b") &&
       !adserve_service_name_ok("a?b") && !adserve_service_name_ok("a b"),
       "a service name is one safe path segment");
    memset(longest, 'a', sizeof longest);
    longest[ADSERVE_SERVICE_MAX] = '\0';
    ok(adserve_service_name_ok(longest), "a service name of 64 bytes");
    longest[ADSERVE_SERVICE_MAX] = 'a';
    longest[ADSERVE_SERVICE_MAX + 1] = '\0';
    ok(!adserve_service_name_ok(longest), "... of 65: refused");
}

static void test_history_entry(void) {
    adserve_history_entry_t e = { 0x0123456789abcdefULL, 1795651200, ADSERVE_HISTORY_VIEWED }, back;
    unsigned char out[ADSERVE_HISTORY_ENTRY];
    /* 0x6789abcdef (the hash's low 40 bits), 1 (viewed), minute 29927520
     * mod 2^23 (0x48a860), little-endian */
    static const unsigned char want[ADSERVE_HISTORY_ENTRY] = {
        0xef, 0xcd, 0xab, 0x89, 0x67, 0xc1, 0x50, 0x91 };
    const int64_t wrap = (INT64_C(1) << ADSERVE_HISTORY_MINUTE_BITS) * 60;

    memset(out, 0xff, sizeof out);
    adserve_history_put(out, &e);
    ok(memcmp(out, want, sizeof want) == 0, "a history entry: hash, kind, minute, little-endian");
    adserve_history_get(out, e.at, &back);
    ok(back.hash == 0x6789abcdefULL && back.hash == adserve_history_hash(e.hash)
       && back.at == e.at && back.kind == e.kind, "... read back: the hash's kept bits");
    adserve_history_get(out, e.at + 7 * 86400 + 59, &back);
    ok(back.at == e.at, "... read 7 days later: the same minute");
    adserve_history_get(out, e.at - 300, &back);
    ok(back.at == e.at, "... read by a clock 5 minutes behind: ahead of it, not 16 years back");
    adserve_history_get(out, e.at + wrap / 2 - 60, &back);
    ok(back.at == e.at, "... read 8 years less a minute later: still that minute");
    adserve_history_get(out, e.at + wrap, &back);
    ok(back.at == e.at + wrap, "... a whole wrap (16 years) later: read as now (the contract's bound)");
    e.at += 59;
    e.kind = ADSERVE_HISTORY_SHOWN;
    adserve_history_put(out, &e);
    adserve_history_get(out, e.at, &back);
    ok(back.at == e.at - 59 && back.kind == ADSERVE_HISTORY_SHOWN, "a time within a minute: its first second; shown");
    e.at = -5;
    adserve_history_put(out, &e);
    adserve_history_get(out, 0, &back);
    ok(back.at == 0, "a time before 1970 is 0");
}

/* What both programs share of experiments: how a variant overrides its
 * unit, and how users are drawn. */
static void test_experiment(void) {
    cJSON *unit = cJSON_Parse("{\"id\":\"u\",\"ext\":{\"algorithm\":\"axa0\",\"bcat\":[\"IAB7\"]},"
                              "\"recommendation\":{\"topn\":5,\"fallback\":[]}}");
    cJSON *variant = cJSON_Parse("{\"id\":\"v\",\"weight\":1,\"ext\":{\"algorithm\":\"coview\"},"
                                 "\"recommendation\":{\"topn\":2}}");
    cJSON *bare = cJSON_Parse("{\"id\":\"u\"}");
    char *text;
    uint32_t w[3] = { 1, 2, 1 };
    uint64_t upto[3];
    unsigned counts[3] = { 0, 0, 0 }, i, k, same = 0;
    char user[32];

    is_int(adserve_variant_apply(unit, variant), 0, "apply: 0");
    text = cJSON_PrintUnformatted(unit);
    is_str(text, "{\"id\":\"u\",\"ext\":{\"bcat\":[\"IAB7\"],\"algorithm\":\"coview\"},"
                 "\"recommendation\":{\"fallback\":[],\"topn\":2}}",
           "apply: the variant's members replace the unit's, the others stay");
    free(text);
    is_int(adserve_variant_apply(bare, variant), 0, "apply to a unit without ext: 0");
    text = cJSON_PrintUnformatted(bare);
    is_str(text, "{\"id\":\"u\",\"ext\":{\"algorithm\":\"coview\"},\"recommendation\":{\"topn\":2}}",
           "apply: the objects are made");
    free(text);
    is_int(adserve_variant_apply(NULL, variant), -1, "apply to no unit: -1");

    is_int(adserve_experiment_bounds(w, 3, upto), 0, "bounds of 1:2:1");
    ok(upto[0] == 1ULL << 30 && upto[1] == 3ULL << 30 && upto[2] == 1ULL << 32,
       "bounds: a quarter, three quarters, all");
    w[1] = 0;
    is_int(adserve_experiment_bounds(w, 3, upto), -1, "bounds: a weight of 0 is refused");
    w[1] = ADSERVE_VARIANT_WEIGHT_MAX + 1;
    is_int(adserve_experiment_bounds(w, 3, upto), -1, "bounds: a weight over the maximum too");
    w[1] = 2;
    (void) adserve_experiment_bounds(w, 3, upto);

    for (i = 0; i < 40000; i++) {
        snprintf(user, sizeof(user), "u%u", i);
        uint32_t d = adserve_experiment_draw(7, user, strlen(user));
        for (k = 0; k < 2 && d >= upto[k]; k++) { /* void */ }
        counts[k]++;
        same += (adserve_experiment_draw(8, user, strlen(user)) >= upto[0]) == (k >= 1);
    }
    ok(counts[0] > 9500 && counts[0] < 10500 && counts[1] > 19500 && counts[1] < 20500,
       "draws of 40,000 users split 1:2:1 (%u, %u, %u)", counts[0], counts[1], counts[2]);
    ok(same > 40000 * 0.55 && same < 40000 * 0.70,
       "another experiment draws independently: %u of 40,000 agree (0.625 expected)", same);
    is_int(adserve_experiment_draw(7, "u1", 2), adserve_experiment_draw(7, "u1", 2),
           "a user draws the same every time");

    ok(adserve_variant_id_ok("control") && adserve_variant_id_ok("a-b_9")
       && !adserve_variant_id_ok("a b") && !adserve_variant_id_ok("") && !adserve_variant_id_ok(NULL)
       && !adserve_variant_id_ok("abcdefghijklmnopqrstuvwxy"), "variant ids: 1..24 of [A-Za-z0-9_-]");

    cJSON_Delete(unit);
    cJSON_Delete(variant);
    cJSON_Delete(bare);
}

/* The names a recommendation's source ids end in: per algorithm, or a
 * fallback's. */
static void test_rec_counted_source(void) {
    int a;

    is_int(adserve_rec_counted_source("coview", 6, &a), ADSERVE_SOURCE_ALGORITHM,
           "coview: the algorithm source");
    is_int(a, ADSERVE_ALGORITHM_COVIEW, "... its algorithm coview");
    ok(adserve_rec_counted_source("target_service", 14, &a) == ADSERVE_SOURCE_ALGORITHM
       && a == ADSERVE_ALGORITHM_SERVICE, "target_service: the algorithm source, the service");
    ok(adserve_rec_counted_source("algorithm", 9, &a) == ADSERVE_SOURCE_ALGORITHM && a == -1,
       "algorithm (as counted before): the source, no algorithm");
    ok(adserve_rec_counted_source("preset", 6, &a) == ADSERVE_SOURCE_PRESET && a == -1,
       "preset: a fallback");
    is_int(adserve_rec_counted_source("other", 5, &a), -1, "another name: no source");
}


static void test_endpoint_url(void) {
    static const struct { const char *url; int ok; } cases[] = {
        { "https://bidder.example/openrtb2/auction", 1 },
        { "http://127.0.0.1:9000/bid?pub=1&x=2", 1 },      /* a query: fine */
        { "https://[::1]:8443/", 1 },
        { "HTTPS://bidder.example", 1 },
        { "https://user:pw@bidder.example/", 0 },           /* credentials */
        { "https://bidder.example/#x", 0 },                 /* a fragment */
        { "ftp://bidder.example/", 0 },
        { "https://", 0 },
        { "https:///bid", 0 },
        { "https://:80/bid", 0 },
        { "https://bidder.example/a b", 0 },
        { "https://bidder.example/\"", 0 },
        { "https://bidder.example/'", 0 },
        { "https://bidder.example/<b>", 0 },
        { "https://bidder.example/a\\b", 0 },
        { "https://bidder.example/?a={x}", 0 },
        { "https://bidder.example/a|b", 0 },
        { "https://bidder.example/a^b", 0 },
        { "https://bidder.example/a`b", 0 },
        { "https://bidder.example/a\x7f", 0 },
        { "https://bidder.example/?a=~b_c-d.e%20&f=!*()[]:@,;+$", 1 },
        { "https://bidder.example/\xc3\xa9", 0 },
    };
    char   id[ADSERVE_UUID_LEN + 1], again[ADSERVE_UUID_LEN + 1], other[ADSERVE_UUID_LEN + 1];
    size_t i;

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        is_int(adserve_endpoint_url_ok(cases[i].url, strlen(cases[i].url)), cases[i].ok,
               "endpoint %s is %s", cases[i].url, cases[i].ok ? "one" : "refused");
    }

    ok(adserve_link_url_ok("https://shop.example/p?x=1#top", 30), "a landing page may end in a fragment");
    ok(!adserve_link_url_ok("https://a@shop.example/", 23), "... but has no user info");
    ok(!adserve_link_url_ok("javascript:alert(1)//https://", 29), "... and is http(s)");
    ok(!adserve_link_url_ok("https://#x", 10), "... with a host");

    adserve_external_creative_id("src-1", 5, "cr-9", 4, id);
    adserve_external_creative_id("src-1", 5, "cr-9", 4, again);
    adserve_external_creative_id("src-1", 5, "cr-8", 4, other);
    is_int((int) strlen(id), ADSERVE_UUID_LEN, "an external creative id is a UUID's length");
    ok(id[8] == '-' && id[13] == '-' && id[18] == '-' && id[23] == '-', "... with its dashes");
    ok(id[14] == '8' && strchr("89ab", id[19]) != NULL, "... version 8, RFC variant");
    ok(strcmp(id, again) == 0, "the same source and crid: the same id on every node");
    ok(strcmp(id, other) != 0, "another crid: another id");
    adserve_external_creative_id("src-1c", 6, "r-9", 3, other);
    ok(strcmp(id, other) != 0, "the separator keeps source/crid pairs apart");
}


static void test_demand_vocab(void) {
    is_int(adserve_vocab_str(adserve_alloc_target_names, "path"), ADSERVE_ALLOC_PATH,
           "allocation targets");
    is_int(adserve_vocab_str(adserve_block_kind_names, "cat"), ADSERVE_BLOCK_CAT, "block kinds");
    is_int(adserve_vocab_str(adserve_metric_mode_names, "external_only"),
           ADSERVE_METRIC_MODE_EXTERNAL_ONLY, "metric modes");
    ok(ADSERVE_KIND_BLOCKED_CREATIVES < ADSERVE_KIND_SERVING
       && ADSERVE_KIND_EXTERNAL_CREATIVES >= ADSERVE_KIND_SERVING,
       "sources, allocations and blocks are serving's; external creatives are not");
}


int main(void) {
    test_kinds();
    test_vocab();
    test_public_url();
    test_hhmm();
    test_hash();
    test_parse_time();
    test_snapshot_path();
    test_service_name();
    test_history_entry();
    test_experiment();
    test_rec_counted_source();
    test_endpoint_url();
    test_demand_vocab();
    return done_testing();
}
