/* libFuzzer: a line item's targeting, the grammar both the API (every
 * write) and the snapshot build (every record read from Redis) compile:
 * the check, then the compiled rule evaluated against a fixed request;
 * then the same bytes as a recommendation's content_filter_rule, judging
 * an item whose attributes are that document. */

#include <stdint.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "adserve_arena.h"
#include "adserve_json.h"
#include "adserve_target.h"

static char  body[] = "{\"version\":\"0.1.0\",\"user\":{\"id\":\"u1\",\"yob\":1990,"
                      "\"gender\":\"F\"},\"device\":{\"ua\":\"Mozilla/5.0 (iPhone; CPU "
                      "iPhone OS 17_0 like Mac OS X) Mobile/15E148 Safari/604.1\"},"
                      "\"ext\":{\"kv\":{\"section\":[\"sports\",\"news\"],\"age\":34}}}";


static void *
arena_alloc(void *arena, size_t size)
{
    return adserve_arena_alloc(arena, size);
}


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    adserve_target_builder_t   tb;
    adserve_target_err_t       err;
    adserve_arena_t            arena;
    adserve_ad_request_t       req;
    adserve_req_ctx_t          ctx;
    const adserve_target_t    *t = NULL;
    adserve_attrs_t            attrs;
    const char                *why;
    size_t                     off;
    char                       buf[sizeof(body)];
    cJSON                     *tg;

    tg = cJSON_ParseWithLength((const char *) data, size);
    if (tg == NULL) {
        return 0;
    }

    (void) adserve_target_check(tg, &err);

    adserve_arena_init(&arena, 1024);
    adserve_target_builder_init(&tb, &arena);

    if (adserve_target_compile(&tb, tg, &t) == 0 && t != NULL) {
        memcpy(buf, body, sizeof(body));
        if (adserve_json_parse_ad_request(buf, sizeof(body) - 1, &req, &why, &off) == 0) {
            adserve_req_ctx_init(&ctx, &req);
            (void) adserve_target_match(t, &ctx, 1764000000);
        }
    }

    /* the same bytes as a content filter, judging an item whose
     * attributes are the same document */
    (void) adserve_target_check_filter(tg, &err);

    if (adserve_target_compile_filter(&tb, tg, &t) == 0 && t != NULL
        && adserve_attrs_read(tg, arena_alloc, &arena, &attrs) == 0)
    {
        memcpy(buf, body, sizeof(body));
        if (adserve_json_parse_ad_request(buf, sizeof(body) - 1, &req, &why, &off) == 0) {
            adserve_req_ctx_init(&ctx, &req);
            (void) adserve_target_filter(t, &ctx, &attrs);
        }
    }

    adserve_target_builder_free(&tb);
    adserve_arena_free(&arena);
    cJSON_Delete(tg);

    return 0;
}
