/* adserve_records: a worker's records of one kind, by id. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adserve_records.h"
#include "tap.h"

static int has(adserve_input_t *in, const char *text) {
    size_t i;

    for (i = 0; i < in->nrecords[ADSERVE_KIND_ORDERS]; i++) {
        if (in->records[ADSERVE_KIND_ORDERS][i].len == strlen(text)
            && memcmp(in->records[ADSERVE_KIND_ORDERS][i].data, text, strlen(text)) == 0)
            return 1;
    }
    return 0;
}

/* ---- the parses a build keeps beside the texts ---- */

static adserve_records_t inv[ADSERVE_KIND_COUNT];

static void put(adserve_kind_e kind, const char *id, const char *text) {
    if (adserve_records_put(&inv[kind], id, strlen(id), text, strlen(text)) != 0) abort();
}

/* builds from inv; *li_parse: the line item's kept parse afterwards */
static adserve_snapshot_t *build_inv(adserve_parsed_t **li_parse) {
    adserve_input_t in;
    adserve_snapshot_t *s;
    char err[128];
    int k;

    adserve_input_init(&in);
    in.public_url = "http://ads.example";
    for (k = 0; k < ADSERVE_KIND_COUNT; k++) {
        if (adserve_records_export(&inv[k], &in, k) != 0) abort();
    }
    s = adserve_snapshot_build(&in, err, sizeof err);
    *li_parse = *in.records[ADSERVE_KIND_LINE_ITEMS][0].parsed;
    adserve_input_free(&in);
    return s;
}

static size_t ncands(const adserve_snapshot_t *s) {
    const adserve_unit_t *u = adserve_snapshot_unit(s, "u1", 2);
    return u ? u->ncands : 0;
}

#define LI(status, rate) \
    "{\"id\":\"l1\",\"order_id\":\"o1\",\"status\":\"" status "\",\"type\":\"STANDARD\"," \
    "\"cost_type\":\"CPM\",\"rate\":" rate ",\"targeting\":{\"ad_units\":{\"include\":[\"u1\"]}," \
    "\"kv\":{\"type\":\"cmp\",\"data\":{\"lhs\":[\"sec\"],\"op\":\"eq\",\"rhs\":\"news\"}}}}"

static void test_kept_parses(void) {
    adserve_snapshot_t *s1, *s2, *s3;
    adserve_parsed_t *p1, *p2, *p3;
    int k;

    for (k = 0; k < ADSERVE_KIND_COUNT; k++) adserve_records_init(&inv[k]);
    put(ADSERVE_KIND_AD_UNITS, "u1", "{\"id\":\"u1\",\"status\":\"ACTIVE\"}");
    put(ADSERVE_KIND_ORDERS, "o1", "{\"id\":\"o1\",\"status\":\"APPROVED\"}");
    put(ADSERVE_KIND_LINE_ITEMS, "l1", LI("ACTIVE", "2"));
    put(ADSERVE_KIND_CREATIVES, "c1", "{\"id\":\"c1\",\"type\":\"IMAGE\",\"w\":300,\"h\":250,"
        "\"image_url\":\"https://cdn.example/c1.png\",\"landing_url\":\"https://x.example/\","
        "\"approval\":\"APPROVED\"}");
    put(ADSERVE_KIND_LICAS, "a1", "{\"id\":\"a1\",\"line_item_id\":\"l1\",\"creative_id\":\"c1\","
        "\"status\":\"ACTIVE\"}");

    s1 = build_inv(&p1);
    ok(s1 != NULL && ncands(s1) == 1, "kept parses: the first build serves the line item");
    ok(p1 != NULL && p1->u.li.rule == ADSERVE_RULE_KEPT,
       "the line item's parse is kept, with its kv rule for each build to compile");
    s2 = build_inv(&p2);
    ok(s2 != NULL && p2 == p1 && ncands(s2) == 1, "a second build reuses the parse");
    ok(s2 && s1 && s2->lis[0].target != NULL && s2->lis[0].target != s1->lis[0].target,
       "and compiles the rule again, into its own snapshot");
    adserve_snapshot_free(s1);

    put(ADSERVE_KIND_LINE_ITEMS, "l1", LI("PAUSED", "2"));
    s3 = build_inv(&p3);
    ok(s3 != NULL && ncands(s3) == 0, "a new text is parsed again: PAUSED does not serve");
    ok(s2 && s2->lis[0].target != NULL && ncands(s2) == 1,
       "the snapshot before it is untouched");
    adserve_snapshot_free(s2);
    adserve_snapshot_free(s3);

    put(ADSERVE_KIND_LINE_ITEMS, "l1", LI("ACTIVE", "7"));
    s1 = build_inv(&p1);
    ok(s1 != NULL && ncands(s1) == 1 && s1->lis[0].target != NULL
       && adserve_snapshot_unit(s1, "u1", 2)->cands[0].bid == 7, "and ACTIVE again, at its new rate");
    adserve_snapshot_free(s1);

    adserve_records_del(&inv[ADSERVE_KIND_ORDERS], "o1", 2);
    s1 = build_inv(&p1);
    ok(s1 != NULL && ncands(s1) == 0 && p1->u.li.active,
       "references are the build's: the order gone, the kept line item does not serve");
    adserve_snapshot_free(s1);

    for (k = 0; k < ADSERVE_KIND_COUNT; k++) adserve_records_free(&inv[k]);
}

/* A full load stores each record as its chunk's parse, never its text. */
static void test_put_parsed(void) {
    static const char *li = LI("ACTIVE", "3");
    adserve_records_item_t one;
    adserve_snapshot_t *s;
    adserve_parsed_t *p, *kept;
    adserve_input_t in;
    int k;

    for (k = 0; k < ADSERVE_KIND_COUNT; k++) adserve_records_init(&inv[k]);
    put(ADSERVE_KIND_AD_UNITS, "u1", "{\"id\":\"u1\",\"status\":\"ACTIVE\"}");
    put(ADSERVE_KIND_ORDERS, "o1", "{\"id\":\"o1\",\"status\":\"APPROVED\"}");
    put(ADSERVE_KIND_CREATIVES, "c1", "{\"id\":\"c1\",\"type\":\"IMAGE\",\"w\":300,\"h\":250,"
        "\"image_url\":\"https://cdn.example/c1.png\",\"landing_url\":\"https://x.example/\","
        "\"approval\":\"APPROVED\"}");
    put(ADSERVE_KIND_LICAS, "a1", "{\"id\":\"a1\",\"line_item_id\":\"l1\",\"creative_id\":\"c1\","
        "\"status\":\"ACTIVE\"}");

    p = adserve_parse(ADSERVE_KIND_LINE_ITEMS, li, strlen(li));
    one.id = "l1";
    one.id_len = 2;
    one.text = li;
    one.len = strlen(li);
    one.parsed = p;
    ok(p != NULL && adserve_records_put_batch(&inv[ADSERVE_KIND_LINE_ITEMS], &one, 1, 0) == 0
       && inv[ADSERVE_KIND_LINE_ITEMS].count == 1 && inv[ADSERVE_KIND_LINE_ITEMS].bytes == 0,
       "put_batch of one parse: one record, no text kept");

    adserve_input_init(&in);
    for (k = 0; k < ADSERVE_KIND_COUNT; k++) {
        if (adserve_records_export(&inv[k], &in, k) != 0) abort();
    }
    ok(in.records[ADSERVE_KIND_LINE_ITEMS][0].len == 0, "its export has no text");
    adserve_input_free(&in);

    s = build_inv(&kept);
    ok(s != NULL && kept == p && ncands(s) == 1
       && adserve_snapshot_unit(s, "u1", 2)->cands[0].bid == 3,
       "a build serves it from the parse it was given");
    adserve_snapshot_free(s);

    put(ADSERVE_KIND_LINE_ITEMS, "l1", LI("PAUSED", "3"));
    s = build_inv(&kept);
    ok(s != NULL && kept != NULL && !kept->u.li.active && ncands(s) == 0
       && inv[ADSERVE_KIND_LINE_ITEMS].count == 1,
       "a put of a new text replaces it (and frees the parse)");
    adserve_snapshot_free(s);

    for (k = 0; k < ADSERVE_KIND_COUNT; k++) adserve_records_free(&inv[k]);
}

/* A full load's chunk: put_batch stores as puts of one record would, a record at a
 * time, whatever the batch's length next to its prefetch distance; an id
 * twice in a batch is the later one; a record that could not be parsed
 * (NULL: out of memory) is counted, not stored. */
static void test_put_batch(void) {
    static const char *texts[2] = { "{\"id\":\"x\",\"status\":\"APPROVED\"}",
                                    "{\"id\":\"x\",\"status\":\"PAUSED\"}" };
    static const size_t sizes[] = { 0, 1, 3, 4, 5, 8, 9, 17, 1000, 200 };
    adserve_records_item_t items[1001];
    adserve_records_t r;
    adserve_input_t in;
    char ids[1001][24];
    size_t z, i, n, failed;
    int right;

    for (z = 0; z < sizeof(sizes) / sizeof(sizes[0]); z++) {
        n = sizes[z];
        adserve_records_init(&r);
        if (z % 2 == 0 && adserve_records_reserve(&r, n) != 0) abort();
        for (i = 0; i < n; i++) {
            snprintf(ids[i], sizeof ids[i], "o-%zu", i);
            items[i].id = ids[i];
            items[i].id_len = strlen(ids[i]);
            items[i].text = texts[i % 2];
            items[i].len = strlen(texts[i % 2]);
            items[i].parsed = i % 97 == 50 ? NULL
                              : adserve_parse(ADSERVE_KIND_ORDERS, items[i].text, items[i].len);
            if (i % 97 != 50 && items[i].parsed == NULL) abort();
        }
        if (n == 1000) {                    /* the last one, again: replaced */
            items[n] = items[n - 1];
            items[n].text = texts[0];
            items[n].len = strlen(texts[0]);
            items[n].parsed = adserve_parse(ADSERVE_KIND_ORDERS, texts[0], items[n].len);
            if (items[n].parsed == NULL) abort();
            n++;
        }

        failed = adserve_records_put_batch(&r, items, n, z % 3 == 0);
        is_int((long long) failed, (long long) (sizes[z] > 50) * ((sizes[z] - 51) / 97 + 1),
               "put_batch of %zu: the unparsed ones counted", sizes[z]);
        is_int((long long) r.count, (long long) (sizes[z] - failed),
               "put_batch of %zu: the rest stored, each once", sizes[z]);
        is_int((long long) (r.bytes > 0), (long long) (z % 3 == 0 && r.count > 0),
               "put_batch of %zu: texts kept only when asked", sizes[z]);

        /* each stored record has the parse it was given (the first o-999
         * of the 1,000, replaced, is not among them) */
        adserve_input_init(&in);
        if (adserve_records_export(&r, &in, ADSERVE_KIND_ORDERS) != 0) abort();
        right = in.nrecords[ADSERVE_KIND_ORDERS] == r.count;
        for (i = 0; right && i < in.nrecords[ADSERVE_KIND_ORDERS]; i++) {
            const adserve_parsed_t *got = *in.records[ADSERVE_KIND_ORDERS][i].parsed;
            size_t k;

            for (k = 0; k < n && (items[k].parsed != got || (n == 1001 && k == 999)); k++) {}
            right = got != NULL && k < n;
        }
        adserve_input_free(&in);
        ok(right, "put_batch of %zu: each stored with its own parse", sizes[z]);

        if (n == 1001) {
            /* o-999 was PAUSED first, then APPROVED: the later one stays */
            adserve_input_init(&in);
            if (adserve_records_export(&r, &in, ADSERVE_KIND_ORDERS) != 0) abort();
            right = 0;
            for (i = 0; i < in.nrecords[ADSERVE_KIND_ORDERS]; i++) {
                right += *in.records[ADSERVE_KIND_ORDERS][i].parsed == items[1000].parsed;
            }
            adserve_input_free(&in);
            is_int(right, 1, "put_batch: an id twice in a batch is the later one");
        }

        /* each where a lookup of its id finds it */
        for (i = 0; i < n; i++) {
            adserve_records_del(&r, items[i].id, items[i].id_len);
        }
        is_int((long long) r.count, 0, "put_batch of %zu: each found by its id", sizes[z]);
        adserve_records_free(&r);
    }
}

int main(void) {
    adserve_records_t r;
    adserve_input_t in;
    char id[32], text[64];
    int i, ok_all;

    adserve_records_init(&r);
    adserve_records_del(&r, "nothing", 7);
    is_int((long long) r.count, 0, "deleting from an empty store is harmless");

    ok(adserve_records_put(&r, "o1", 2, "{\"id\":\"o1\"}", 11) == 0, "put");
    ok(adserve_records_put(&r, "o2", 2, "{\"id\":\"o2\"}", 11) == 0, "put another");
    is_int((long long) r.count, 2, "two records");
    ok(adserve_records_put(&r, "o1", 2, "{\"id\":\"o1\",\"v\":2}", 17) == 0, "put the same id again");
    is_int((long long) r.count, 2, "a put of a known id replaces it");
    is_int((long long) r.bytes, 28, "bytes follow the texts");

    adserve_input_init(&in);
    ok(adserve_records_export(&r, &in, ADSERVE_KIND_ORDERS) == 0, "export");
    is_int((long long) in.nrecords[ADSERVE_KIND_ORDERS], 2, "export gives every record once");
    ok(has(&in, "{\"id\":\"o1\",\"v\":2}") && has(&in, "{\"id\":\"o2\"}"), "the latest texts");
    adserve_input_free(&in);

    adserve_records_del(&r, "o1", 2);
    adserve_records_del(&r, "o1", 2);
    is_int((long long) r.count, 1, "delete, twice: gone once");
    is_int((long long) r.bytes, 11, "... and its bytes");

    /* growth: many records, each findable and replaceable afterwards */
    for (i = 0; i < 20000; i++) {
        snprintf(id, sizeof id, "id-%d", i);
        snprintf(text, sizeof text, "{\"n\":%d}", i);
        if (adserve_records_put(&r, id, strlen(id), text, strlen(text)) != 0) abort();
    }
    is_int((long long) r.count, 20001, "20,000 more records");
    for (i = 0; i < 20000; i += 2) {
        snprintf(id, sizeof id, "id-%d", i);
        adserve_records_del(&r, id, strlen(id));
    }
    is_int((long long) r.count, 10001, "every other one deleted");
    adserve_input_init(&in);
    ok(adserve_records_export(&r, &in, ADSERVE_KIND_ORDERS) == 0, "export after growth");
    ok_all = in.nrecords[ADSERVE_KIND_ORDERS] == 10001;
    for (i = 1; ok_all && i < 20000; i += 1000) {
        snprintf(text, sizeof text, "{\"n\":%d}", i);
        ok_all = has(&in, text);
    }
    ok(ok_all, "the odd ones are all there");
    adserve_input_free(&in);

    adserve_records_free(&r);
    is_int((long long) r.count, 0, "free empties it");

    /* a full load reserves what HLEN said: no rehash while it fills */
    ok(adserve_records_reserve(&r, 3000) == 0 && r.nbuckets == 4096, "reserve 3,000: 4,096 buckets");
    for (i = 0; i < 3000; i++) {
        snprintf(id, sizeof id, "r-%d", i);
        if (adserve_records_put(&r, id, strlen(id), "{}", 2) != 0) abort();
    }
    ok(r.count == 3000 && r.nbuckets == 4096, "3,000 records, and the table never grew");
    ok(adserve_records_reserve(&r, 10) == 0 && r.nbuckets == 4096, "a smaller reserve keeps it");
    ok(adserve_records_reserve(&r, 5000) == 0 && r.nbuckets == 8192 && r.count == 3000,
       "a larger one rehashes what is there");
    adserve_records_free(&r);
    ok(adserve_records_put(&r, "again", 5, "{}", 2) == 0 && r.count == 1, "and it is usable again");
    adserve_records_free(&r);

    test_kept_parses();
    test_put_parsed();
    test_put_batch();

    return done_testing();
}
