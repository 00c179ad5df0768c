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
    ok(adserve_records_put(&r, "again", 5, "{}", 2) == 0 && r.count == 1, "and it is usable again");
    adserve_records_free(&r);

    return done_testing();
}
