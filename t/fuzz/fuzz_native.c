/* libFuzzer: native ads. The input is a native style's html, a NUL, its
 * css, a NUL, and a JSON object {"assets": [AssetRequest], "native":
 * {a creative's assets}}: the template check, the requests and assets
 * read, the match, and both renderings when the template passes. */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "adserve_arena.h"
#include "adserve_native.h"


static void *
arena_cb(void *ctx, size_t size)
{
    return adserve_arena_alloc(ctx, size);
}


/* the next NUL-terminated part of the input, copied; *rest moves past it */
static char *
part(const uint8_t **rest, size_t *left)
{
    const uint8_t  *nul = memchr(*rest, '\0', *left);
    size_t          n = nul ? (size_t) (nul - *rest) : *left;
    char           *s = malloc(n + 1);

    if (s != NULL) {
        memcpy(s, *rest, n);
        s[n] = '\0';
    }
    *rest += nul ? n + 1 : n;
    *left -= nul ? n + 1 : n;

    return s;
}


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    adserve_arena_t          arena;
    adserve_native_req_t    *reqs;
    adserve_native_asset_t  *assets;
    adserve_jsonw_t          w;
    uint32_t                 nreqs, nassets;
    uint8_t                  pick[ADSERVE_NATIVE_ASSETS_MAX];
    const char              *why;
    size_t                   at;
    char                    *html, *css;
    cJSON                   *o;

    html = part(&data, &size);
    css = part(&data, &size);
    o = cJSON_ParseWithLength((const char *) data, size);

    why = html && css ? adserve_native_template_check(html, css, &at) : "";

    adserve_arena_init(&arena, 4096);
    if (adserve_native_reqs_read(cJSON_GetObjectItemCaseSensitive(o, "assets"), arena_cb,
                                 &arena, &reqs, &nreqs) == 0
        && adserve_native_assets_read(cJSON_GetObjectItemCaseSensitive(o, "native"), arena_cb,
                                      &arena, &assets, &nassets) == 0)
    {
        (void) adserve_native_match(reqs, nreqs, assets, nassets, pick);

        adserve_jsonw_init(&w);
        (void) adserve_native_render_assets(&w, reqs, nreqs, assets, pick, "<VAST/>", 7, 0);
        if (why == NULL) {
            (void) adserve_native_render_html(&w, html, css, assets, nassets);
        }
        adserve_jsonw_free(&w);
    }

    adserve_arena_free(&arena);
    cJSON_Delete(o);
    free(html);
    free(css);

    return 0;
}
