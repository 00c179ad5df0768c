/* The rules of video and native creatives (creative_formats.h). */
#include "creative_formats.h"

#include "adserve_arena.h"
#include "adserve_native.h"
#include "json_util.h"

#include <string.h>

enum store_status creative_video_check(struct resource_write *w, const cJSON *video,
                                       const char *path)
{
    const cJSON *files = cJSON_GetObjectItemCaseSensitive(video, "media_files");
    bool tag = json_has(video, "vast_tag_url");
    int n = cJSON_GetArraySize(files);

    if (!tag && n == 0)
        return resource_refuse(w, 422, "%s.media_files: at least one, or a vast_tag_url", path);
    if (tag && n > 0)
        return resource_refuse(w, 422, "%s.media_files: must be empty with a vast_tag_url",
                               path);
    return STORE_OK;
}

static void *arena_alloc(void *ctx, size_t size)
{
    return adserve_arena_alloc(ctx, size);
}

/* The creative against its format: the same match serving makes against a
 * placement. */
static enum store_status check_format(struct resource_write *w, const cJSON *format)
{
    adserve_arena_t arena;
    adserve_native_req_t *reqs;
    adserve_native_asset_t *assets;
    uint32_t nreqs, nassets;
    uint8_t pick[ADSERVE_NATIVE_ASSETS_MAX];
    enum store_status st = STORE_OK;
    int m;

    adserve_arena_init(&arena, 4096);
    if (adserve_native_reqs_read(cJSON_GetObjectItemCaseSensitive(format, "assets"),
                                 arena_alloc, &arena, &reqs, &nreqs) != 0 ||
        adserve_native_assets_read(cJSON_GetObjectItemCaseSensitive(w->after, "native"),
                                   arena_alloc, &arena, &assets, &nassets) != 0) {
        adserve_arena_free(&arena);
        return STORE_ERROR;
    }
    m = adserve_native_match(reqs, nreqs, assets, nassets, pick);
    if (m >= 0 && (uint32_t)m < nreqs)
        st = resource_refuse(w, 422, "native: lacks the %s asset (id %u) that its native format "
                                     "requires, or it is out of that request's bounds",
                             adserve_asset_names[reqs[m].kind], reqs[m].id);
    else if (m >= 0)
        st = resource_refuse(w, 422, "native: fills none of its native format's assets");
    adserve_arena_free(&arena);
    return st;
}

enum store_status creative_native_check(struct resource_write *w)
{
    const cJSON *native = cJSON_GetObjectItemCaseSensitive(w->after, "native");
    const cJSON *data = cJSON_GetObjectItemCaseSensitive(native, "data");
    const cJSON *video = cJSON_GetObjectItemCaseSensitive(native, "video");
    const char *format_id = json_str_member(w->after, "native_format_id");
    const cJSON *a, *b;
    cJSON *format = NULL;
    enum store_status st;

    if (!json_has(native, "title") && cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(
                                     native, "images")) == 0 &&
        cJSON_GetArraySize(data) == 0 && !json_has(native, "video"))
        return resource_refuse(w, 422, "native: a title, an image, a data asset or a video "
                                       "at least");
    cJSON_ArrayForEach(a, data) {
        const char *type = json_str_member(a, "type");

        for (b = a->next; b != NULL; b = b->next)
            if (type != NULL && strcmp(type, json_str_member(b, "type")) == 0)
                return resource_refuse(w, 422, "native.data: one %s at most", type);
    }
    if (json_has(native, "video") &&
        ((st = creative_video_check(w, video, "native.video")) != STORE_OK ||
         w->rep->status != 0))
        return st;
    if (format_id == NULL)
        return STORE_OK;

    /* loaded by the ref row when it changed; read here when the assets did */
    const cJSON *loaded = resource_loaded(w, "native_format_id");
    if (loaded == NULL) {
        st = resource_load(w->c, &resource_native_formats, NULL, format_id, &format);
        if (st == STORE_NOT_FOUND)
            return resource_refuse(w, 422, "native_format_id: no such native format");
        if (st != STORE_OK)
            return st;
        loaded = format;
    }
    st = check_format(w, loaded);
    cJSON_Delete(format);
    return st;
}
