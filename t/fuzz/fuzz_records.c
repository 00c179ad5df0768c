/* libFuzzer: one record as the snapshot build reads it from Redis, where
 * anything with access to Redis could have written it: the first byte
 * picks the kind, the rest is the record's text. Every kind's parse,
 * targeting rules, a video's VAST and a native creative's assets
 * included; an experiment's variants are each applied to a unit, as the
 * build applies them. */

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

    static const char  unit[] = "{\"id\":\"u\",\"status\":\"ACTIVE\",\"ext\":{\"recommendation\":"
                                "{\"enabled\":1}},\"recommendation\":{\"topn\":5}}";
    adserve_parsed_t   *v;
    uint32_t            i;

    p = adserve_parse((adserve_kind_e) (data[0] % ADSERVE_KIND_COUNT), text, size - 1);

    for (i = 0; p != NULL && p->kind == ADSERVE_KIND_EXPERIMENTS
                && i < p->u.experiment.nvariants; i++)
    {
        v = adserve_parse_variant(unit, sizeof(unit) - 1, p->u.experiment.variants[i].overrides);
        adserve_parsed_free(v);
    }

    adserve_parsed_free(p);
    free(text);

    return 0;
}
