/* rtb_test.c -- TAP tests for the OpenRTB 2.6 BidResponse reader
 * (adserve_rtb.c): the fields an auction needs, prices as micros, the
 * bounds of what an answer from outside may hold, and malformed answers.
 *
 * Inputs are copied into exactly sized heap buffers (under ASan a read
 * past the end is caught), and kept while the response points into them. */

#include "adserve_contract.h"
#include "adserve_rtb.h"
#include "adserve_vast.h"
#include "tap.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *held;

/* json in an exactly sized buffer, held until the next */
static char *hold(const char *json, size_t *len) {
    *len = strlen(json);
    free(held);
    held = malloc(*len ? *len : 1);
    if (held == NULL) abort();
    memcpy(held, json, *len);
    return held;
}

static int parse(const char *json, adserve_rtb_response_t *r, const char **err) {
    size_t len;
    char *buf = hold(json, &len);

    return adserve_rtb_parse_response(buf, len, r, err);
}

static int is_s(adserve_str_t s, const char *want, const char *name) {
    if (want == NULL) return ok(s.data == NULL, "%s: absent", name);
    return is_mem(s.data, s.len, want, strlen(want), "%s", name);
}

static int why(const char *got, const char *want, const char *name) {
    return is_str(got ? got : "(usable)", want, "%s", name);
}

/* the micros of one bid's price written as text */
static long long price(const char *text) {
    char json[256];
    adserve_rtb_response_t r;

    snprintf(json, sizeof(json), "{\"seatbid\":[{\"bid\":[{\"impid\":\"1\",\"price\":%s}]}]}", text);
    if (parse(json, &r, NULL) != 0 || r.nbids != 1) return -2;
    return r.bids[0].price_micros;
}

static void test_reference_bidder(void) {
    adserve_rtb_response_t r;
    const char *err = "unset";

    /* what scripts/rtb-bidder answers, escapes and all */
    int rc = parse(
        "{\"id\":\"auction-1\",\"cur\":\"USD\",\"seatbid\":[{\"seat\":\"seat-a\",\"bid\":["
        "{\"id\":\"b1\",\"impid\":\"d\",\"price\":2.5,\"adm\":\"<div class=\\\"ad\\\">\\u00e9\\/x</div>\","
        "\"adomain\":[\"bidder.example\"],\"crid\":\"cr-1\",\"cat\":[\"IAB1\",\"IAB1-2\"],"
        "\"w\":728,\"h\":90,\"mtype\":1,\"nurl\":\"http://b.example/win?p=${AUCTION_PRICE}\","
        "\"burl\":\"http://b.example/bill\",\"lurl\":\"http://b.example/loss?r=${AUCTION_LOSS}\","
        "\"ext\":{\"id\":\"not the bid's\",\"price\":99}}]},"
        "{\"seat\":\"seat-b\",\"bid\":[{\"impid\":\"v\",\"price\":1,\"adm\":\"<VAST/>\",\"mtype\":2}]}]}",
        &r, &err);
    is_int(rc, 0, "a reference bidder's answer parses");
    ok(err == NULL, "... with no error");
    is_s(r.id, "auction-1", "id");
    is_s(r.cur, "USD", "cur");
    is_int(r.nbids, 2, "two bids, of two seatbids");
    is_int(r.nseatbids, 2, "... two seatbids");
    adserve_rtb_bid_t *b = &r.bids[0];
    is_s(b->id, "b1", "bid id");
    is_s(b->impid, "d", "impid");
    is_int(b->price_micros, 2500000, "price 2.5 -> 2,500,000 micros");
    is_s(b->adm, "<div class=\"ad\">\xc3\xa9/x</div>", "adm unescaped (quotes, \\u00e9, \\/)");
    is_int(b->nadomain, 1, "one adomain");
    is_s(b->adomain[0], "bidder.example", "adomain[0]");
    is_s(b->crid, "cr-1", "crid");
    is_int(b->ncat, 2, "two categories");
    is_s(b->cat[1], "IAB1-2", "cat[1]");
    is_int(b->w, 728, "w");
    is_int(b->h, 90, "h");
    is_int(b->mtype, 1, "mtype");
    is_s(b->nurl, "http://b.example/win?p=${AUCTION_PRICE}", "nurl, its macro left as it came");
    is_s(b->lurl, "http://b.example/loss?r=${AUCTION_LOSS}", "lurl");
    is_s(adserve_rtb_bid_seat(&r, b), "seat-a", "the first bid's seat");
    is_s(adserve_rtb_bid_seat(&r, &r.bids[1]), "seat-b", "the second bid's, its own seatbid's");
    ok(adserve_rtb_bid_unusable(b) == NULL, "the first bid is usable");
    is_int(r.bids[1].mtype, 2, "the second: a video (mtype 2)");
    is_s(r.bids[1].crid, NULL, "... without a crid");
}

static void test_prices(void) {
    is_int(price("2.5"), 2500000, "2.5");
    is_int(price("0.5"), 500000, "0.5");
    is_int(price("3"), 3000000, "3");
    is_int(price("0.0000005"), 1, "0.0000005: half a micro rounds up");
    is_int(price("0.00000049"), 0, "0.00000049: under half rounds down");
    is_int(price("1.2345674"), 1234567, "1.2345674");
    is_int(price("1.2345675"), 1234568, "1.2345675");
    is_int(price("25e-1"), 2500000, "25e-1");
    is_int(price("2.5E+2"), 250000000, "2.5E+2");
    is_int(price("0"), 0, "0");
    is_int(price("-0.0"), 0, "-0.0 is 0");
    is_int(price("-1.5"), -1, "a negative price: none");
    is_int(price("1e400"), -1, "1e400: over the bound, none");
    is_int(price("1000000"), 1000000000000LL, "a million (the bound) is still a price");
    is_int(price("1000000.000001"), -1, "... a micro more is not");
    is_int(price("1e-400"), 0, "1e-400: 0");
    is_int(price("123456789012345678901234"), -1, "24 digits: over the bound");
    is_int(price("0.000000000000000000000012345"), 0, "leading zeros of a tiny one do not overflow");
    is_int(price("\"2.5\""), -1, "a price as a string: none (the wrong type is absent)");
    is_int(price("null"), -1, "null: none");
}

static void test_bounds(void) {
    adserve_rtb_response_t r;
    char json[8192], *p = json;
    int i;

    p += sprintf(p, "{\"seatbid\":[{\"bid\":[");
    for (i = 0; i < ADSERVE_RTB_BIDS_MAX + 3; i++)
        p += sprintf(p, "%s{\"impid\":\"%d\",\"price\":1,\"adm\":\"x\"}", i ? "," : "", i);
    sprintf(p, "]}]}");
    is_int(parse(json, &r, NULL), 0, "more bids than kept parses");
    is_int(r.nbids, ADSERVE_RTB_BIDS_MAX, "... the first ADSERVE_RTB_BIDS_MAX kept");
    is_int(r.bids_over, 3, "... the rest counted");
    is_s(r.bids[ADSERVE_RTB_BIDS_MAX - 1].impid, "7", "... in order");

    parse("{\"seatbid\":[{\"bid\":[{\"impid\":\"1\",\"price\":1,\"adm\":\"x\","
          "\"adomain\":[\"a.example\",\"b.example\",\"c.example\",\"d.example\",\"evil.example\"]}]}]}",
          &r, NULL);
    ok(r.bids[0].adomain_over, "a fifth adomain: the list is not kept whole");
    why(adserve_rtb_bid_unusable(&r.bids[0]), "more adomains than can be checked",
         "... and the bid cannot be judged on a part of it");
    parse("{\"seatbid\":[{\"bid\":[{\"impid\":\"1\",\"price\":1,\"adm\":\"x\",\"adomain\":[\"a.example\",7]}]}]}",
          &r, NULL);
    ok(r.bids[0].adomain_over, "an adomain that is not a string: not whole either");
    parse("{\"seatbid\":[{\"bid\":[{\"impid\":\"1\",\"price\":1,\"adm\":\"x\",\"cat\":[\"IAB1\",\"IAB2\","
          "\"IAB3\",\"IAB4\",\"IAB5\",\"IAB6\",\"IAB7\",\"IAB8\",\"IAB9\"]}]}]}", &r, NULL);
    ok(r.bids[0].cat_over, "a ninth category: the categories are not kept whole");

    char *big = malloc(ADSERVE_RTB_ADM_MAX + 128);
    if (big == NULL) abort();
    p = big + sprintf(big, "{\"seatbid\":[{\"bid\":[{\"impid\":\"1\",\"price\":1,\"adm\":\"");
    memset(p, 'x', ADSERVE_RTB_ADM_MAX + 1);
    strcpy(p + ADSERVE_RTB_ADM_MAX + 1, "\"}]}]}");
    parse(big, &r, NULL);
    why(adserve_rtb_bid_unusable(&r.bids[0]), "no markup (adm)", "markup over 64 KiB is not kept");
    free(big);
    parse("{\"seatbid\":[{\"bid\":[{\"impid\":\"1\",\"price\":1,\"adm\":\"x\",\"w\":20000,\"h\":-5,\"mtype\":9}]}]}",
          &r, NULL);
    ok(r.bids[0].w == 0 && r.bids[0].h == 0 && r.bids[0].mtype == 0, "w, h and mtype out of range: absent");
}

static void test_unusable(void) {
    adserve_rtb_response_t r;

    parse("{\"seatbid\":[{\"bid\":[{\"price\":1,\"adm\":\"x\"},{\"impid\":\"1\",\"adm\":\"x\"},"
          "{\"impid\":\"1\",\"price\":0,\"adm\":\"x\"},{\"impid\":\"1\",\"price\":1}]}]}", &r, NULL);
    why(adserve_rtb_bid_unusable(&r.bids[0]), "no impid", "no impid");
    why(adserve_rtb_bid_unusable(&r.bids[1]), "no price above 0", "no price");
    why(adserve_rtb_bid_unusable(&r.bids[2]), "no price above 0", "a price of 0");
    why(adserve_rtb_bid_unusable(&r.bids[3]), "no markup (adm)", "no adm");
}

static void test_duplicates(void) {
    adserve_rtb_response_t r;

    parse("{\"seatbid\":[{\"bid\":[{\"impid\":\"1\",\"price\":1,\"price\":\"x\",\"adm\":\"a\",\"adm\":\"b\"}]}]}",
          &r, NULL);
    is_int(r.bids[0].price_micros, -1, "a duplicate key: the last wins, even of the wrong type");
    is_s(r.bids[0].adm, "b", "... adm too");
    parse("{\"seatbid\":[{\"bid\":[{\"impid\":\"1\"}]}],\"seatbid\":[{\"bid\":[{\"impid\":\"2\"}]}]}", &r, NULL);
    ok(r.nbids == 1 && r.nseatbids == 1, "seatbid twice: the last one's bids only");
    is_s(r.bids[0].impid, "2", "... its bid");
    parse("{\"seatbid\":[{\"bid\":[{\"impid\":\"1\"}]},{\"bid\":[{\"impid\":\"2\"}],\"bid\":[{\"impid\":\"3\"}]}]}",
          &r, NULL);
    ok(r.nbids == 2, "bid twice in a seatbid: that seatbid's last bids replace its first");
    is_s(r.bids[1].impid, "3", "... and the other seatbid keeps its own");
    parse("{\"seatbid\":[{\"bid\":[{\"impid\":\"1\",\"adomain\":[\"a\",\"b\"],\"adomain\":[\"c\"]}]}]}", &r, NULL);
    ok(r.bids[0].nadomain == 1, "adomain twice: the last list");
}

static void test_malformed(void) {
    static const char *const bad[] = {
        "", "[]", "{\"seatbid\":[{\"bid\":[{\"price\": \"lots\"", "{\"id\":\"x\"}trailing",
        "{\"seatbid\":[{\"bid\":[{\"price\":01}]}]}", "{\"adm\":\"\x01\"}", "{\"a\":\"\xff\"}",
        "{\"seatbid\":[,]}", NULL,
    };
    adserve_rtb_response_t r;
    const char *err;
    int i;

    for (i = 0; bad[i] != NULL; i++) {
        err = NULL;
        memset(&r, 0x5a, sizeof(r));
        ok(parse(bad[i], &r, &err) == -1 && err != NULL && r.nbids == 0,
           "malformed answer %d refused, with a reason (%s), and nothing kept", i, err ? err : "-");
    }
    char deep[200];
    memset(deep, '[', sizeof(deep));
    memcpy(deep, "{\"a\":", 5);
    deep[sizeof(deep) - 1] = '\0';
    ok(parse(deep, &r, &err) == -1, "nesting beyond 32 levels refused");
    ok(parse("{}", &r, NULL) == 0 && r.nbids == 0, "an empty object: a response without bids");
    ok(parse("{\"seatbid\":{\"bid\":[{\"impid\":\"1\"}]}}", &r, NULL) == 0 && r.nbids == 0,
       "seatbid not an array: no bids");
}

/* the imp rendered for a unit record (JSON text), closed and parsed back */
static cJSON *imp_of(const char *unit_json, unsigned formats) {
    cJSON *unit = cJSON_Parse(unit_json), *imp;
    size_t len = 0;
    char *text = adserve_rtb_render_imp(unit, formats, &len), *closed;

    cJSON_Delete(unit);
    if (text == NULL) return NULL;
    ok(len == strlen(text) && cJSON_Parse(text) == NULL,
       "the imp is left open for the source's bidfloor (not JSON until closed)");
    closed = malloc(len + 2);
    if (closed == NULL) abort();
    memcpy(closed, text, len);
    strcpy(closed + len, "}");
    imp = cJSON_Parse(closed);
    free(closed);
    free(text);
    return imp;
}

static const char *print(const cJSON *o) {
    static char buf[4096];
    char *t = cJSON_PrintUnformatted(o);

    snprintf(buf, sizeof(buf), "%s", t ? t : "(none)");
    free(t);
    return buf;
}

#define ALL ((1u << ADSERVE_FORMAT_DISPLAY) | (1u << ADSERVE_FORMAT_VIDEO) | (1u << ADSERVE_FORMAT_NATIVE))

static void test_imp(void) {
    cJSON *imp = imp_of(
        "{\"id\":\"u-1\",\"instl\":1,\"gpid\":\"/1234/home/top\","
        "\"ad_unit_sizes\":[{\"w\":300,\"h\":250},{\"w\":320,\"h\":50}],"
        "\"display\":{\"w\":300,\"h\":250,\"pos\":1,\"mime\":[\"image/png\"],\"unit\":2,\"priv\":0},"
        "\"video\":{\"mime\":[\"video/mp4\"],\"mindur\":5,\"maxdur\":30,\"w\":640,\"h\":360,"
        "\"ptype\":1,\"linear\":1,\"delay\":0,\"skip\":1,\"skipafter\":5,\"ctype\":[2,3,7],\"boxing\":1,"
        "\"playmethod\":[1],\"comp\":[{\"x\":1}],\"unit\":2},"
        "\"native\":{\"assets\":[{\"id\":1,\"req\":1,\"title\":{\"len\":90}}],\"plcmttype\":1}}", ALL);

    ok(imp != NULL, "an imp rendered for a unit of every format");
    is_str(cJSON_GetStringValue(cJSON_GetObjectItem(imp, "id")), "1", "imp.id");
    is_str(cJSON_GetStringValue(cJSON_GetObjectItem(imp, "tagid")), "u-1", "imp.tagid: the unit's id");
    is_int((long long)cJSON_GetNumberValue(cJSON_GetObjectItem(imp, "instl")), 1, "instl");
    is_str(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(imp, "ext"), "gpid")),
           "/1234/home/top", "ext.gpid");
    is_str(print(cJSON_GetObjectItem(imp, "banner")),
           "{\"w\":300,\"h\":250,\"pos\":1,\"mimes\":[\"image/png\"],"
           "\"format\":[{\"w\":300,\"h\":250},{\"w\":320,\"h\":50}]}",
           "banner: OpenRTB's names, the sizes as format, AdCOM's own members (unit, priv) left out");
    is_str(print(cJSON_GetObjectItem(imp, "video")),
           "{\"mimes\":[\"video/mp4\"],\"minduration\":5,\"maxduration\":30,\"startdelay\":0,"
           "\"protocols\":[2,3,7],\"w\":640,\"h\":360,\"plcmt\":1,\"linearity\":1,\"skip\":1,"
           "\"skipafter\":5,\"boxingallowed\":1,\"playbackmethod\":[1]}",
           "video: AdCOM's placement renamed (mime, mindur, delay, ctype, ptype, linear, boxing, playmethod)");
    cJSON *native = cJSON_GetObjectItem(imp, "native");
    is_str(cJSON_GetStringValue(cJSON_GetObjectItem(native, "ver")), "1.2", "native.ver");
    is_str(cJSON_GetStringValue(cJSON_GetObjectItem(native, "request")),
           "{\"assets\":[{\"id\":1,\"req\":1,\"title\":{\"len\":90}}],\"plcmttype\":1,\"ver\":\"1.2\"}",
           "native.request: the placement (Native 1.2's request) as a string");
    cJSON_Delete(imp);

    imp = imp_of("{\"id\":\"u-2\",\"display\":{\"w\":728,\"h\":90},\"video\":{\"linear\":0},\"gpid\":\"\"}",
                 1u << ADSERVE_FORMAT_DISPLAY);
    ok(cJSON_GetObjectItem(imp, "video") == NULL && cJSON_GetObjectItem(imp, "native") == NULL,
       "a display unit: a banner only");
    is_str(print(cJSON_GetObjectItem(imp, "banner")), "{\"w\":728,\"h\":90}", "... without sizes, no format");
    is_int((long long)cJSON_GetNumberValue(cJSON_GetObjectItem(imp, "instl")), 0, "... instl 0 by default");
    ok(cJSON_GetObjectItem(imp, "ext") == NULL, "... an empty gpid: no ext");
    cJSON_Delete(imp);

    imp = imp_of("{\"id\":\"u-3\",\"video\":{\"linear\":0,\"mime\":null}}", 1u << ADSERVE_FORMAT_VIDEO);
    is_str(print(cJSON_GetObjectItem(imp, "video")), "{}",
           "an unknown linearity (0) and nulls are left out");
    cJSON_Delete(imp);
}

static char *place_of(const char *unit_json, int place) {
    cJSON *unit = cJSON_Parse(unit_json);
    size_t len = 0;
    char *text = adserve_rtb_render_place(unit, place, &len);

    cJSON_Delete(unit);
    if (text != NULL) ok(len == strlen(text), "a place's length");
    return text;
}

static void test_place(void) {
    static const char unit[] =
        "{\"id\":\"u\",\"ext\":{\"publisher\":{\"id\":null,\"seller_id\":\"pub-42\",\"company\":\"News Co\","
        "\"domain\":\"news.example\",\"page\":\"https://news.example/a\",\"ext\":{\"k\":1}},"
        "\"implicit_app_inference\":{\"android_bundle\":\"com.news.app\",\"ios_bundle\":\"123456\","
        "\"app_name\":\"News\",\"cat\":[\"IAB12\"],\"ua_keywords\":[\"NewsApp\"]}}}";
    char *t;

    t = place_of(unit, ADSERVE_RTB_SITE);
    is_str(t, "\"site\":{\"page\":\"https://news.example/a\",\"domain\":\"news.example\","
              "\"publisher\":{\"id\":\"pub-42\",\"name\":\"News Co\",\"domain\":\"news.example\",\"ext\":{\"k\":1}}}",
           "site: page, domain, the publisher (seller_id as its id, company as its name, ext)");
    free(t);
    t = place_of(unit, ADSERVE_RTB_OS_ANDROID);
    is_str(t, "\"app\":{\"bundle\":\"com.news.app\",\"name\":\"News\",\"cat\":[\"IAB12\"],"
              "\"publisher\":{\"id\":\"pub-42\",\"name\":\"News Co\",\"domain\":\"news.example\",\"ext\":{\"k\":1}}}",
           "app on Android: its bundle, name, cat, the same publisher");
    free(t);
    t = place_of(unit, ADSERVE_RTB_OS_IOS);
    ok(t != NULL && strstr(t, "\"bundle\":\"123456\"") != NULL, "app on iOS: the iOS bundle");
    free(t);
    ok(place_of("{\"ext\":{\"implicit_app_inference\":{\"android_bundle\":\"a.b\"}}}", ADSERVE_RTB_OS_IOS) == NULL,
       "no bundle for that OS: no app");
    t = place_of("{\"ext\":{}}", ADSERVE_RTB_SITE);
    is_str(t, "\"site\":{}", "no publisher settings: an empty site");
    free(t);

    adserve_str_t kw[] = { { "NewsApp", 7 }, { "FBAN", 4 } };
    const char *android = "Mozilla/5.0 (Linux; Android 14) newsapp/3.1";
    const char *iphone = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0) [FBAN/FBIOS]";
    const char *web = "Mozilla/5.0 (X11; Linux x86_64) Chrome/120";
    is_int(adserve_rtb_app_of(kw, 2, android, strlen(android)), ADSERVE_RTB_OS_ANDROID,
           "a keyword (any case) in an Android user agent: the Android app");
    is_int(adserve_rtb_app_of(kw, 2, iphone, strlen(iphone)), ADSERVE_RTB_OS_IOS, "... in an iPhone's: the iOS app");
    is_int(adserve_rtb_app_of(kw, 2, web, strlen(web)), ADSERVE_RTB_SITE, "no keyword: the site");
    const char *kw_only = "NewsApp/3.1 (Windows NT 10.0)";
    is_int(adserve_rtb_app_of(kw, 2, kw_only, strlen(kw_only)), ADSERVE_RTB_SITE,
           "a keyword but neither OS: the site (no bundle to name)");
    is_int(adserve_rtb_app_of(kw, 0, android, strlen(android)), ADSERVE_RTB_SITE, "no keywords: the site");
}

/* ---- blocks ------------------------------------------------------------ */

static adserve_str_t S(const char *s) {
    adserve_str_t v = { s, strlen(s) };
    return v;
}

/* Which block drops one bid of json's, by the order of the table. */
static int blocked_by(const char *json, const adserve_rtb_block_t *blocks, size_t n) {
    adserve_rtb_response_t r;
    const adserve_rtb_block_t *k;
    const char *err;

    if (parse(json, &r, &err) != 0 || r.nbids != 1) return -2;
    k = adserve_rtb_blocked(&r.bids[0], blocks, n);
    return k ? (int) (k - blocks) : -1;
}

static void test_blocks(void) {
    adserve_rtb_block_t blocks[] = {
        { ADSERVE_BLOCK_ADOMAIN, { "spam.example", 12 } },
        { ADSERVE_BLOCK_CRID, { "cr-9", 4 } },
        { ADSERVE_BLOCK_CAT, { "IAB7", 4 } },
    };
    const char *bid = "{\"id\":\"r\",\"seatbid\":[{\"bid\":[{\"impid\":\"1\",\"price\":1,"
                      "\"adm\":\"x\",\"crid\":\"%s\",\"adomain\":[%s],\"cat\":[%s]}]}]}";
    char json[512];
    size_t len;
    char *text;

#define BID(crid, adomain, cat) (snprintf(json, sizeof(json), bid, crid, adomain, cat), json)
    is_int(blocked_by(BID("cr-1", "\"good.example\"", "\"IAB1\""), blocks, 3), -1,
           "blocks: an unrelated bid passes");
    is_int(blocked_by(BID("cr-1", "\"good.example\",\"spam.example\"", ""), blocks, 3), 0,
           "blocks: its second adomain is blocked");
    is_int(blocked_by(BID("cr-1", "\"Ads.SPAM.example\"", ""), blocks, 3), 0,
           "blocks: a subdomain, in any case");
    is_int(blocked_by(BID("cr-1", "\"notspam.example\"", ""), blocks, 3), -1,
           "blocks: a domain that only ends alike passes");
    is_int(blocked_by(BID("cr-1", "\"example\"", ""), blocks, 3), -1,
           "blocks: a parent domain passes");
    is_int(blocked_by(BID("cr-9", "", ""), blocks, 3), 1, "blocks: the crid, exactly");
    is_int(blocked_by(BID("cr-90", "", ""), blocks, 3), -1, "blocks: a longer crid passes");
    is_int(blocked_by(BID("cr-1", "", "\"IAB7-39\""), blocks, 3), 2,
           "blocks: a subcategory of a blocked category");
    is_int(blocked_by(BID("cr-1", "", "\"IAB7\""), blocks, 3), 2, "blocks: the category itself");
    is_int(blocked_by(BID("cr-1", "", "\"IAB70\""), blocks, 3), -1,
           "blocks: IAB70 is not under IAB7");
    is_int(blocked_by(BID("cr-9", "", ""), blocks, 0), -1, "blocks: none, nothing dropped");
#undef BID

    text = adserve_rtb_render_blocks(blocks, 3, &len);
    is_str(text, ",\"bcat\":[\"IAB7\"],\"badv\":[\"spam.example\"]",
           "blocks: bcat and badv, crids not told");
    is_int((long long) len, (long long) strlen(text ? text : ""), "blocks: the length");
    free(text);
    text = adserve_rtb_render_blocks(blocks + 1, 1, &len);
    is_str(text, "", "blocks: a crid alone renders nothing");
    free(text);
    blocks[0].value = S("q\"uote.example");
    text = adserve_rtb_render_blocks(blocks, 1, &len);
    is_str(text, ",\"badv\":[\"q\\\"uote.example\"]", "blocks: values are escaped");
    free(text);
}


/* ---- notices ----------------------------------------------------------- */

static const char *expand(const char *s, const adserve_rtb_macros_t *m, int url, size_t cap) {
    static char out[512];
    size_t n = adserve_rtb_expand(out, cap, s, strlen(s), m, url);

    if (n == (size_t) -1) return "(too long)";
    out[n] = '\0';
    return out;
}

static void test_macros(void) {
    adserve_rtb_macros_t m = {
        .auction_id = { "a1", 2 }, .bid_id = { "b 2", 3 }, .imp_id = { "1", 1 },
        .seat_id = { "s&x", 3 }, .currency = { "USD", 3 }, .price_micros = 1250000,
        .loss = ADSERVE_RTB_LOSS_HIGHER_BID,
    };
    char buf[24];

    is_str(expand("http://b/win?p=${AUCTION_PRICE}&c=${AUCTION_CURRENCY}", &m, 1, 511),
           "http://b/win?p=1.25&c=USD", "macros: price and currency");
    is_str(expand("?i=${AUCTION_ID}&b=${AUCTION_BID_ID}&m=${AUCTION_IMP_ID}&s=${AUCTION_SEAT_ID}",
                  &m, 1, 511), "?i=a1&b=b%202&m=1&s=s%26x", "macros: ids, %%-escaped in a URL");
    is_str(expand("<img src=\"x?s=${AUCTION_SEAT_ID}\">", &m, 0, 511), "<img src=\"x?s=s&x\">",
           "macros: as they are in markup");
    is_str(expand("?l=${AUCTION_LOSS}&a=${AUCTION_AD_ID}&w=${AUCTION_MIN_TO_WIN}&r=${AUCTION_MBR}",
                  &m, 1, 511), "?l=102&a=&w=&r=", "macros: the loss, and unknown ones emptied");
    is_str(expand("${AUCTION_PRICE", &m, 1, 511), "${AUCTION_PRICE", "macros: unclosed, kept");
    is_str(expand("${OTHER}$${AUCTION_PRICE}$", &m, 1, 511), "${OTHER}$1.25$",
           "macros: another name kept, a $ before a macro");
    is_str(expand("p=${AUCTION_PRICE}", &m, 1, 5), "(too long)", "macros: one byte short, refused");
    is_str(expand("p=${AUCTION_PRICE}", &m, 1, 6), "p=1.25", "macros: exactly the room");
    is_str(expand("${AUCTION_SEAT_ID}", &m, 1, 3), "(too long)",
           "macros: an escape that does not fit whole, refused");

    adserve_rtb_price(buf, 3000000);
    is_str(buf, "3", "price: whole");
    adserve_rtb_price(buf, 1);
    is_str(buf, "0.000001", "price: a micro");
    adserve_rtb_price(buf, 0);
    is_str(buf, "0", "price: zero");
    adserve_rtb_price(buf, -5);
    is_str(buf, "0", "price: negative as zero");
    adserve_rtb_price(buf, ADSERVE_RTB_PRICE_MAX_MICROS);
    is_str(buf, "1000000", "price: the largest");
}


/* ---- a video bid's VAST ------------------------------------------------ */

static long at(const char *vast) {
    return adserve_vast_impression_at(vast, strlen(vast));
}

static void test_vast_impression(void) {
    is_int(at("<VAST version=\"4.2\"><Ad id=\"1\"><InLine><AdSystem>x</AdSystem></InLine></Ad></VAST>"),
           (long) strlen("<VAST version=\"4.2\"><Ad id=\"1\"><InLine>"), "vast: just after <InLine>");
    is_int(at("<VAST><Ad><InLine\n  >x</InLine></Ad></VAST>"), (long) strlen("<VAST><Ad><InLine\n  >"),
           "vast: an opening tag with white space");
    is_int(at("<VAST><Ad><Wrapper><VASTAdTagURI>u</VASTAdTagURI></Wrapper></Ad></VAST>"),
           (long) strlen("<VAST><Ad><Wrapper>"), "vast: or a Wrapper");
    is_int(at("<VAST><Ad><InLineX>x</InLineX><InLine>y</InLine></Ad></VAST>"),
           (long) strlen("<VAST><Ad><InLineX>x</InLineX><InLine>"), "vast: another element's name skipped");
    is_int(at("<VAST><Ad><InLine/></Ad></VAST>"), -1, "vast: a self-closed InLine holds nothing");
    is_int(at("<VAST version=\"4.2\"/>"), -1, "vast: an empty VAST: none");
    is_int(at("<div>banner</div>"), -1, "vast: not a VAST");
    is_int(at("<InLine"), -1, "vast: cut short");
    is_int(at(""), -1, "vast: nothing");
}


/* ---- a native bid's markup (adserve_rtb_native.c) ------------------------- */

static int parse_native(const char *json, adserve_rtb_native_t *n, const char **err) {
    size_t len;
    char *buf = hold(json, &len);

    return adserve_rtb_parse_native(buf, len, n, err);
}

static void test_native(void) {
    adserve_rtb_native_t  n;
    const char           *err;
    char                  doc[8192], *p;
    int                   i;

    /* Native 1.2: the members at the top level */
    is_int(parse_native("{\"ver\":\"1.2\",\"assets\":["
                        "{\"id\":1,\"required\":1,\"title\":{\"text\":\"Crisp \\\"salads\\\"\"}},"
                        "{\"id\":2,\"img\":{\"url\":\"https://cdn.example/m.png\",\"w\":1200,\"h\":627,\"type\":3}},"
                        "{\"id\":3,\"data\":{\"type\":2,\"value\":\"Fresh, daily\"},\"link\":{\"url\":\"https://x\"}},"
                        "{\"id\":4,\"video\":{\"vasttag\":\"<VAST version=\\\"4.2\\\"/>\"}}],"
                        "\"link\":{\"url\":\"https://shop.example/?a=1&b=2\",\"clicktrackers\":[\"https://t.example/c\"]},"
                        "\"imptrackers\":[\"https://t.example/i\"],"
                        "\"eventtrackers\":[{\"event\":1,\"method\":1,\"url\":\"https://t.example/e\"},"
                        "{\"url\":\"https://t.example/js\",\"method\":2,\"event\":1}],"
                        "\"jstracker\":\"<script>x</script>\",\"privacy\":\"https://p.example\"}", &n, &err),
           0, "native: a 1.2 response read");
    is_int(n.nassets, 4, "native: its four assets");
    ok(n.assets[0].id == 1 && n.assets[0].required && n.assets[0].kind == ADSERVE_ASSET_TITLE,
       "native: a required title, by its request's id");
    is_s(n.assets[0].value, "Crisp \"salads\"", "native: its text, unescaped");
    ok(n.assets[1].kind == ADSERVE_ASSET_IMG && n.assets[1].w == 1200 && n.assets[1].h == 627
       && n.assets[1].type == 3 && !n.assets[1].required, "native: an image, its size and type");
    is_s(n.assets[1].value, "https://cdn.example/m.png", "native: its url");
    ok(n.assets[2].kind == ADSERVE_ASSET_DATA && n.assets[2].type == 2, "native: a data asset (its own link skipped)");
    is_s(n.assets[2].value, "Fresh, daily", "native: its value");
    ok(n.assets[3].kind == ADSERVE_ASSET_VIDEO, "native: a video asset");
    is_s(n.assets[3].value, "<VAST version=\"4.2\"/>", "native: its vasttag");
    is_s(n.link, "https://shop.example/?a=1&b=2", "native: link.url");
    ok(n.nclicktrackers == 1 && n.nimptrackers == 1 && n.nevents == 2 && !n.trackers_over,
       "native: a click tracker, an impression tracker, two event trackers");
    is_s(n.clicktrackers[0], "https://t.example/c", "native: the click tracker");
    is_s(n.imptrackers[0], "https://t.example/i", "native: the impression tracker");
    ok(n.events[0].event == 1 && n.events[0].method == 1 && n.events[1].method == 2 && n.events[1].event == 1,
       "native: each event tracker's event and method, in any order");
    is_s(n.events[1].url, "https://t.example/js", "native: its url");

    /* Native 1.0's wrapper */
    is_int(parse_native("{\"native\":{\"assets\":[{\"id\":7,\"title\":{\"text\":\"T\"}}],"
                        "\"link\":{\"url\":\"https://l\"}}}", &n, &err), 0, "native: a 1.0 response, wrapped");
    ok(n.nassets == 1 && n.assets[0].id == 7, "native: its asset");
    is_s(n.link, "https://l", "native: its link");

    /* wrong types and odd values are absent, not errors */
    is_int(parse_native("{\"assets\":[{\"id\":-1,\"required\":2,\"title\":{\"text\":5}},"
                        "{\"id\":\"3\",\"img\":{\"w\":0,\"h\":99999,\"url\":null}},7,\"x\",[]],"
                        "\"link\":\"https://l\",\"imptrackers\":[1,\"https://i\"]}", &n, &err),
           0, "native: members of the wrong type");
    ok(n.nassets == 2 && n.assets[0].id == -1 && !n.assets[0].required
       && n.assets[0].kind == ADSERVE_ASSET_COUNT && n.assets[0].value.data == NULL,
       "native: a negative id, required 2, a number for text: none kept");
    ok(n.assets[1].id == -1 && n.assets[1].w == 0 && n.assets[1].h == 0
       && n.assets[1].kind == ADSERVE_ASSET_COUNT, "native: an id as a string, sizes out of bounds, no url");
    ok(n.link.data == NULL && n.nimptrackers == 1, "native: a link that is no object; a tracker that is no string");

    /* the last key wins, everywhere */
    is_int(parse_native("{\"assets\":[{\"id\":1,\"id\":2,\"title\":{\"text\":\"a\"},"
                        "\"title\":{\"text\":\"b\"}}],\"assets\":[{\"id\":3,\"img\":{\"url\":\"u\"}}],"
                        "\"link\":{\"url\":\"one\",\"url\":\"two\"}}", &n, &err), 0, "native: duplicates");
    ok(n.nassets == 1 && n.assets[0].id == 3 && n.assets[0].kind == ADSERVE_ASSET_IMG,
       "native: the last assets array, whole");
    is_s(n.link, "two", "native: the last link.url");
    is_int(parse_native("{\"assets\":[{\"id\":1,\"title\":{\"text\":\"a\"},\"title\":{}}]}", &n, &err),
           0, "native: a title given again, empty");
    ok(n.assets[0].kind == ADSERVE_ASSET_COUNT && n.assets[0].value.data == NULL,
       "native: ... holds nothing: the earlier text is gone");

    /* bounds: assets and trackers beyond what is kept are said */
    p = doc;
    p += sprintf(p, "{\"assets\":[");
    for (i = 0; i < ADSERVE_RTB_NATIVE_ASSETS_MAX + 2; i++) {
        p += sprintf(p, "%s{\"id\":%d,\"title\":{\"text\":\"t\"}}", i ? "," : "", i);
    }
    p += sprintf(p, "],\"eventtrackers\":[");
    for (i = 0; i < ADSERVE_RTB_NATIVE_TRACKERS_MAX + 1; i++) {
        p += sprintf(p, "%s{\"event\":1,\"method\":1,\"url\":\"https://e/%d\"}", i ? "," : "", i);
    }
    sprintf(p, "]}");
    is_int(parse_native(doc, &n, &err), 0, "native: too many assets and trackers");
    ok(n.nassets == ADSERVE_RTB_NATIVE_ASSETS_MAX && n.assets_over, "native: the assets kept, and said not whole");
    ok(n.nevents == ADSERVE_RTB_NATIVE_TRACKERS_MAX && n.trackers_over, "native: the trackers kept, and said not whole");
    is_int(n.assets[ADSERVE_RTB_NATIVE_ASSETS_MAX - 1].id, ADSERVE_RTB_NATIVE_ASSETS_MAX - 1,
           "native: the last kept is the last that fit");

    p = doc;
    p += sprintf(p, "{\"link\":{\"url\":\"");
    memset(p, 'a', ADSERVE_RTB_URL_MAX + 1);
    p += ADSERVE_RTB_URL_MAX + 1;
    sprintf(p, "\",\"clicktrackers\":[\"https://c\"]}}");
    is_int(parse_native(doc, &n, &err), 0, "native: a link url too long");
    ok(n.link.data == NULL && n.nclicktrackers == 1, "native: ... is absent; the rest read");

    /* malformed: refused whole */
    is_int(parse_native("{\"assets\":[{\"id\":1,}]}", &n, &err), -1, "native: a trailing comma");
    ok(err != NULL && n.nassets == 0, "native: ... refused with why, nothing kept");
    is_int(parse_native("[{\"assets\":[]}]", &n, &err), -1, "native: not an object");
    is_int(parse_native("", &n, &err), -1, "native: nothing");
    is_int(parse_native("{\"assets\":[{\"title\":{\"text\":\"\\ud800\"}}]}", &n, &err), -1,
           "native: a lone surrogate");
}


/* the requests of a unit in asset mode: a required title, an optional
 * main image, a required sponsor (data 1), an optional video */
static const adserve_rtb_native_req_t  reqs[] = {
    { 1, ADSERVE_ASSET_TITLE, 1 },
    { 2, ADSERVE_ASSET_IMG, 0 },
    { 5, ADSERVE_ASSET_DATA, 1 },
    { 6, ADSERVE_ASSET_VIDEO, 0 },
};
#define NREQS  (sizeof(reqs) / sizeof(reqs[0]))

/* doc's assets (a JSON array's members) with a link and trackers: why it
 * does not fit reqs, or NULL */
static const char *unfit(const char *assets, const char *rest, uint8_t *pick) {
    adserve_rtb_native_t n;
    const char *err;
    char doc[4096];

    snprintf(doc, sizeof(doc), "{\"assets\":[%s],%s}", assets, rest);
    if (parse_native(doc, &n, &err) != 0) {
        return "(not read)";
    }
    return adserve_rtb_native_unfit(&n, reqs, NREQS, pick);
}

static void test_native_fit(void) {
    static const char  link[] = "\"link\":{\"url\":\"https://shop.example/p#top\"}";
    static const char  both[] = "{\"id\":5,\"data\":{\"type\":1,\"value\":\"Greens\"}},"
                                "{\"id\":1,\"title\":{\"text\":\"Salads\"}}";
    uint8_t            pick[NREQS];
    char               rest[512];

    ok(unfit(both, link, pick) == NULL, "fit: the required title and data, in any order");
    ok(pick[0] == 1 && pick[1] == ADSERVE_RTB_NATIVE_UNFILLED && pick[2] == 0
       && pick[3] == ADSERVE_RTB_NATIVE_UNFILLED, "fit: each request's asset, the optional ones unfilled");

    ok(unfit("{\"id\":1,\"title\":{\"text\":\"x\"}},{\"id\":2,\"img\":{\"url\":\"https://i.example/m.png\"}},"
             "{\"id\":5,\"data\":{\"value\":\"v\"}},{\"id\":6,\"video\":{\"vasttag\":\"<VAST/>\"}},"
             "{\"id\":9,\"title\":{\"text\":\"not asked\"}}", link, pick) == NULL, "fit: every request filled");
    ok(pick[1] == 1 && pick[3] == 3, "fit: ... the image and the video too; an asset asked for by no request is left");

    why(unfit("{\"id\":1,\"title\":{\"text\":\"x\"}}", link, pick), "a required asset is not given",
        "fit: a required data asset missing");
    why(unfit("{\"id\":5,\"title\":{\"text\":\"x\"}},{\"id\":1,\"title\":{\"text\":\"x\"}}", link, pick),
        "a required asset is not given", "fit: the right id of the wrong kind does not fill it");
    why(unfit("{\"id\":5,\"data\":{\"value\":5}},{\"id\":1,\"title\":{\"text\":\"x\"}}", link, pick),
        "a required asset is not given", "fit: an asset without a value does not fill it");
    why(adserve_rtb_native_unfit(&(adserve_rtb_native_t) { .nassets = 0,
                                                           .link = { "https://l", 9 } },
                                 reqs + 1, 1, pick),
        "no asset answers a request", "fit: nothing filled, nothing required: refused");

    why(unfit(both, "\"link\":{\"url\":\"javascript:alert(1)\"}", pick),
        "its link.url is not an http(s) URL", "fit: a javascript: link");
    why(unfit(both, "\"imptrackers\":[\"https://t\"]", pick), "its link.url is not an http(s) URL",
        "fit: no link");
    snprintf(rest, sizeof(rest), "%s,\"imptrackers\":[\"data:x\"]", link);
    why(unfit(both, rest, pick), "a tracker is not an http(s) URL", "fit: a data: impression tracker");
    snprintf(rest, sizeof(rest), "\"link\":{\"url\":\"https://l\",\"clicktrackers\":[\"//t.example/c\"]}");
    why(unfit(both, rest, pick), "a tracker is not an http(s) URL", "fit: a relative click tracker");
    snprintf(rest, sizeof(rest), "%s,\"eventtrackers\":[{\"event\":1,\"url\":\"https://t\"}]", link);
    why(unfit(both, rest, pick), "an event tracker lacks its event or method", "fit: an event tracker without its method");
    snprintf(rest, sizeof(rest), "%s,\"eventtrackers\":[{\"event\":1,\"method\":1,\"url\":\"ftp://t\"}]", link);
    why(unfit(both, rest, pick), "an event tracker is not an http(s) URL", "fit: an ftp event tracker");
    snprintf(rest, sizeof(rest), "\"link\":{\"url\":\"https://l/?p=${AUCTION_PRICE}\"}");
    why(unfit(both, rest, pick), "its link.url is not an http(s) URL",
        "fit: a macro left unfilled (the auction fills them first) is refused by its braces");
    snprintf(rest, sizeof(rest), "%s,\"imptrackers\":[\"https://t/i?p=${PUBLISHER_ID}\"]", link);
    why(unfit(both, rest, pick), "a tracker is not an http(s) URL", "fit: ... in a tracker too");
    why(unfit("{\"id\":2,\"img\":{\"url\":\"javascript:x\"}},{\"id\":5,\"data\":{\"value\":\"v\"}},"
              "{\"id\":1,\"title\":{\"text\":\"x\"}}", link, pick),
        "an image's url is not an http(s) URL", "fit: an image that is not an http(s) URL");
}


int main(void) {
    test_reference_bidder();
    test_prices();
    test_bounds();
    test_unusable();
    test_duplicates();
    test_malformed();
    test_imp();
    test_place();
    test_blocks();
    test_macros();
    test_vast_impression();
    test_native();
    test_native_fit();
    free(held);
    return done_testing();
}
