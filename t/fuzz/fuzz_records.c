/* libFuzzer: one record as the snapshot build reads it from Redis, where
 * anything with access to Redis could have written it: the first byte
 * picks the kind, the rest is the record's text. Every kind's parse,
 * targeting rules, a video's VAST and a native creative's assets
 * included. */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "adserve_parsed.h"


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    adserve_parsed_t  *p;
    char              *text;

    if (size < 1) {
        return 0;
    }

    text = malloc(size - 1 ? size - 1 : 1);
    if (text == NULL) {
        return 0;
    }
    memcpy(text, data + 1, size - 1);

    p = adserve_parse((adserve_kind_e) (data[0] % ADSERVE_KIND_COUNT), text, size - 1);
    adserve_parsed_free(p);
    free(text);

    return 0;
}
