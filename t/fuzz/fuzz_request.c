/* libFuzzer: the serving request's body, as every nginx worker reads it
 * from the network: the strict JSON scanner, then what a rule reads of it
 * (ext.kv unescaped in place, the user agent classified). */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "adserve_json.h"
#include "adserve_target.h"


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    adserve_ad_request_t  req;
    adserve_kv_t          kv;
    adserve_device_t      dev;
    const char           *err;
    size_t                off;
    char                 *buf;

    /* its own allocation, exactly the input's size: ASan sees a read past it */
    buf = malloc(size ? size : 1);
    if (buf == NULL) {
        return 0;
    }
    memcpy(buf, data, size);

    if (adserve_json_parse_ad_request(buf, size, &req, &err, &off) == 0) {
        if (req.ua.data != NULL) {
            adserve_ua_classify(req.ua.data, req.ua.len, &dev);
        }
        if (req.kv.data != NULL) {
            memset(&kv, 0, sizeof(kv));
            adserve_kv_parse((char *) req.kv.data, req.kv.len, &kv);
        }
    }

    free(buf);
    return 0;
}
