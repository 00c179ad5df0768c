/* libFuzzer: a line item, creative or LICA as the snapshot build reads it
 * from Redis, parsed by the strict scanner (adserve_parse, adserve_fields)
 * and through cJSON's document (adserve_parse_dom): the two parses must say
 * the same, member by member (t/unit/parsed_same.h), or the harness aborts.
 * The first byte picks the kind, the rest is the record's text. */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adserve_parsed.h"
#include "../unit/parsed_same.h"


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const adserve_kind_e  kinds[] = {
        ADSERVE_KIND_LINE_ITEMS, ADSERVE_KIND_CREATIVES, ADSERVE_KIND_LICAS
    };
    adserve_parsed_t  *a, *b;
    const char        *d;
    char              *text;

    if (size < 1) {
        return 0;
    }

    /* a copy of its own: a read past the text is ASan's to see */
    text = malloc(size - 1 ? size - 1 : 1);
    if (text == NULL) {
        return 0;
    }
    memcpy(text, data + 1, size - 1);

    a = adserve_parse(kinds[data[0] % 3], text, size - 1);
    b = adserve_parse_dom(kinds[data[0] % 3], text, size - 1);

    d = parsed_diff(a, b);
    if (d != NULL) {
        fprintf(stderr, "the scanner's parse differs from cJSON's in %s\n", d);
        abort();
    }

    adserve_parsed_free(a);
    adserve_parsed_free(b);
    free(text);

    return 0;
}
