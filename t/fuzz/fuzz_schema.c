/* libFuzzer: the sidecar's schema engine on request bodies, as the API reads
 * them from the network: json_parse_object (the size bound, NUL escapes and
 * control characters), then schema_apply of one of the resource shapes
 * whose bodies carry the most rules (the ad unit with its placements and
 * ext, the line item with targeting, creatives with native and video
 * assets, native formats and styles, experiments), whole or as a PATCH,
 * and the normalised output printed. The first byte picks the shape and
 * the mode; the rest is the body. */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "json_util.h"
#include "schema.h"
#include "schemas.h"
#include "schema_demand.h"
#include "schema_experiment.h"
#include "schema_native.h"


static const struct schema *const  shapes[] = {
    &schema_ad_unit, &schema_developer_ad_unit_ext_request, &schema_line_item,
    &schema_creative, &schema_native_format, &schema_native_style_template,
    &schema_experiment, &schema_batch_request,
};

#define NSHAPES  (sizeof(shapes) / sizeof(shapes[0]))


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const struct schema  *shape;
    struct schema_error   err;
    struct reply          rep;
    enum schema_mode      mode;
    cJSON                *in, *out;
    char                 *buf, *text;

    if (size < 1) {
        return 0;
    }

    shape = shapes[data[0] % NSHAPES];
    mode = (data[0] / NSHAPES) & 1 ? SCHEMA_PARTIAL : SCHEMA_FULL;
    data++;
    size--;

    /* its own allocation, exactly the body's size: ASan sees a read past it */
    buf = malloc(size ? size : 1);
    if (buf == NULL) {
        return 0;
    }
    memcpy(buf, data, size);

    memset(&rep, 0, sizeof(rep));
    in = json_parse_object(buf, size, &rep);

    if (in != NULL) {
        out = schema_apply(shape, in, mode, &err);
        if (out != NULL) {
            text = cJSON_PrintUnformatted(out);
            free(text);
            cJSON_Delete(out);
        }
        cJSON_Delete(in);
    }

    reply_free(&rep);
    free(buf);

    return 0;
}
