/* rtb_test.c -- TAP tests for the OpenRTB 2.6 BidResponse reader
 * (adserve_rtb.c): the fields an auction needs, prices as micros, the
 * bounds of what an answer from outside may hold, and malformed answers.
 *
 * Inputs are copied into exactly sized heap buffers (under ASan a read
 * past the end is caught), and kept while the response points into them. */

#include "adserve_rtb.h"
#include "tap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *held;

static int parse(const char *json, adserve_rtb_response_t *r, const char **err) {
    size_t len = strlen(json);

    free(held);
    held = malloc(len ? len : 1);
    if (held == NULL) abort();
    memcpy(held, json, len);
    return adserve_rtb_parse_response(held, len, r, err);
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

int main(void) {
    test_reference_bidder();
    test_prices();
    test_bounds();
    test_unusable();
    test_duplicates();
    test_malformed();
    free(held);
    return done_testing();
}
