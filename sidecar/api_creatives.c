/* /api/creatives: the ads (resource.h).
 *
 * Rules (README "Demand"):
 *   - advertiser_id names an advertiser the caller sees (422) and cannot
 *     change (409);
 *   - IMAGE has image_url, HTML has html, VIDEO has video, NATIVE has
 *     native, and the others are null (422; changing type means sending
 *     the old one as null); the video and native rules are
 *     creative_formats.c's;
 *   - approval is a review: admins and operators set it (an advertiser
 *     sending it: 403). Made by an admin or operator, a creative is
 *     APPROVED unless they say otherwise; made by an advertiser, PENDING.
 *     An advertiser's change of anything shown (all but name) makes it
 *     PENDING again, so nothing unreviewed serves;
 *   - media_id names a media library item the caller sees (422), of the
 *     creative's advertiser or the house's (422), an image for IMAGE or a
 *     video for VIDEO (422); its URL is then image_url, or the one file of
 *     video.media_files, which the request leaves out or repeats (422
 *     otherwise), so serving reads the URL as ever. The item's index of
 *     creatives (its delete rule) moves with the field;
 *   - a new w x h must keep fitting the line items of its LICAs (409);
 *   - delete while any LICA exists: 409 (the spec). */
#include "api.h"

#include "creative_formats.h"
#include "media_library.h"
#include "resource.h"
#include "schema_demand.h"

#include <string.h>

static const char *const creative_watch[] = { ADSERVE_KEY_ADVERTISERS, ADSERVE_KEY_LICAS,
                                              ADSERVE_KEY_LINE_ITEMS,
                                              ADSERVE_KEY_NATIVE_FORMATS, ADSERVE_KEY_MEDIA,
                                              NULL };
static const char *const creative_immutable[] = { "advertiser_id", NULL };
static const struct resource_ref creative_refs[] = {
    { "advertiser_id", &resource_advertisers, false },
    { "native_format_id", &resource_native_formats, false },
    { "media_id", &resource_media, false },
    { NULL, NULL, false },
};
static const struct resource_index creative_indexes[] = {
    { "advertiser_id", ADSERVE_KEY_ADVERTISER_CREATIVES },
    { "native_format_id", ADSERVE_KEY_NATIVE_FORMAT_CREATIVES },
    { "media_id", ADSERVE_KEY_MEDIA_CREATIVES },
    { NULL, NULL },
};
static const struct resource_dependent creative_dependents[] = {
    { ADSERVE_KEY_CREATIVE_LICAS, false, "LICAs" },
    { NULL, false, NULL },
};
static const struct resource_filter creative_filters[] = {
    { "advertiser_id", "advertiser_id", ADSERVE_KEY_ADVERTISER_CREATIVES, false },
    { "approval", "approval", NULL, false },
    { "type", "type", NULL, false },
    { "q", "name", NULL, true },
    { NULL, NULL, NULL, false },
};

/* The content field of each type; the other types' must be null. */
static const char *const content_fields[ADSERVE_CREATIVE_TYPE_COUNT] = {
    [ADSERVE_CREATIVE_IMAGE] = "image_url",
    [ADSERVE_CREATIVE_HTML] = "html",
    [ADSERVE_CREATIVE_VIDEO] = "video",
    [ADSERVE_CREATIVE_NATIVE] = "native",
};
/* as the name is said: an HTML */
static const char *const articles[ADSERVE_CREATIVE_TYPE_COUNT] = {
    [ADSERVE_CREATIVE_IMAGE] = "an",
    [ADSERVE_CREATIVE_HTML] = "an",
    [ADSERVE_CREATIVE_VIDEO] = "a",
    [ADSERVE_CREATIVE_NATIVE] = "a",
};

static enum store_status check_content(struct resource_write *w)
{
    int type = adserve_vocab_str(adserve_creative_type_names,
                                 json_str_member(w->after, "type"));

    if (type < 0)       /* the schema checked the enum */
        return resource_refuse(w, 422, "type: unknown");
    const char *name = adserve_creative_type_names[type];
    const char *a = articles[type];

    for (int k = 0; k < ADSERVE_CREATIVE_TYPE_COUNT; k++) {
        bool need = k == type;

        if (need && !json_has(w->after, content_fields[k]))
            return resource_refuse(w, 422, "%s: required for %s %s creative", content_fields[k],
                                   a, name);
        if (!need && json_has(w->after, content_fields[k]))
            return resource_refuse(w, 422, "%s: must be null for %s %s creative",
                                   content_fields[k], a, name);
    }
    if (type != ADSERVE_CREATIVE_NATIVE && json_has(w->after, "native_format_id"))
        return resource_refuse(w, 422, "native_format_id: must be null for %s %s creative", a,
                               name);
    return type == ADSERVE_CREATIVE_VIDEO
               ? creative_video_check(w, cJSON_GetObjectItemCaseSensitive(w->after, "video"),
                                      "video")
           : type == ADSERVE_CREATIVE_NATIVE ? creative_native_check(w)
                                             : STORE_OK;
}

/* A new size keeps fitting the line items of the creative's LICAs. */
static enum store_status check_licas_fit(struct resource_write *w)
{
    cJSON **licas;
    size_t n;

    if (w->before == NULL || (!resource_changed(w, "w") && !resource_changed(w, "h")))
        return STORE_OK;
    enum store_status st = resource_load_indexed(w->c, &resource_licas, ADSERVE_KEY_CREATIVE_LICAS,
                                                 json_str_member(w->after, "id"), &licas, &n);
    for (size_t i = 0; st == STORE_OK && w->rep->status == 0 && i < n; i++) {
        cJSON *line_item;
        const char *lid = json_str_member(licas[i], "line_item_id");
        st = lid != NULL ? resource_load(w->c, &resource_line_items, NULL, lid, &line_item)
                         : STORE_NOT_FOUND;
        if (st == STORE_NOT_FOUND) {
            st = STORE_OK;
            continue;
        }
        if (st == STORE_OK && !demand_size_fits(line_item, w->after))
            resource_refuse(w, 409, "w, h: would no longer fit the sizes that line item %s of "
                                    "LICA %s targets", lid, json_str_member(licas[i], "id"));
        cJSON_Delete(line_item);
    }
    resource_free_records(licas, n);
    return st;
}

/* Sets member name of o to v (taken); false when out of memory. */
static bool put(cJSON *o, const char *name, cJSON *v)
{
    if (v == NULL)
        return false;
    cJSON_DeleteItemFromObjectCaseSensitive(o, name);
    if (!cJSON_AddItemToObject(o, name, v)) {
        cJSON_Delete(v);
        return false;
    }
    return true;
}

/* The one file of video.media_files that a video item makes. */
static cJSON *media_file_of(const cJSON *item)
{
    cJSON *files = cJSON_CreateArray(), *f = cJSON_CreateObject();

    if (files == NULL || f == NULL || !cJSON_AddItemToArray(files, f)) {
        cJSON_Delete(files);
        cJSON_Delete(f);
        return NULL;
    }
    if (!put(f, "url", cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(item, "url"), 1)) ||
        !put(f, "mime", cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(item, "mime_type"), 1)) ||
        !put(f, "w", cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(item, "width"), 1)) ||
        !put(f, "h", cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(item, "height"), 1)) ||
        !put(f, "bitrate", cJSON_CreateNull()) ||
        !put(f, "delivery",
             cJSON_CreateString(adserve_video_delivery_names[ADSERVE_VIDEO_PROGRESSIVE]))) {
        cJSON_Delete(files);
        return NULL;
    }
    return files;
}

static const cJSON *member(const cJSON *o, const char *name)
{
    return cJSON_GetObjectItemCaseSensitive(o, name);
}

/* The item's URL into the creative: image_url, or video.media_files. The
 * request may leave that out (an empty media_files too) or repeat it. */
static enum store_status set_media(struct resource_write *w, const cJSON *item, bool image)
{
    cJSON *video = cJSON_GetObjectItemCaseSensitive(w->after, "video");
    const cJSON *sent = image ? member(w->changes, "image_url")
                              : member(member(w->changes, "video"), "media_files");

    if (!image && !cJSON_IsObject(video))
        return STORE_OK;            /* check_content: video is required */
    cJSON *made = image ? cJSON_Duplicate(member(item, "url"), 1) : media_file_of(item);
    if (made == NULL)
        return STORE_ERROR;
    if (sent != NULL && !cJSON_IsNull(sent) && !cJSON_Compare(sent, made, true) &&
        !(cJSON_IsArray(sent) && cJSON_GetArraySize(sent) == 0)) {
        cJSON_Delete(made);
        return resource_refuse(w, 422, "%s: set by media_id (leave it out)",
                               image ? "image_url" : "video.media_files");
    }
    return put(image ? w->after : video, image ? "image_url" : "media_files", made)
               ? STORE_OK : STORE_ERROR;
}

/* media_id: an item the creative may use, of its type (see the top). */
static enum store_status apply_media(struct resource_write *w)
{
    const char *id = json_str_member(w->after, "media_id");
    const char *type = json_str_member(w->after, "type");
    cJSON *read = NULL;
    enum store_status st;

    if (id == NULL)
        return STORE_OK;
    /* loaded by the ref row when it changed; read here when it did not */
    const cJSON *item = resource_loaded(w, "media_id");
    if (item == NULL) {
        st = resource_load(w->c, &resource_media, NULL, id, &read);
        if (st == STORE_NOT_FOUND)
            return resource_refuse(w, 422, "media_id: no such media item");
        if (st != STORE_OK)
            return st;
        item = read;
    }
    const char *owner = json_str_member(item, "advertiser_id");
    const char *kind = json_str_member(item, "kind");
    int t = adserve_vocab_str(adserve_creative_type_names, type);
    bool image = t == ADSERVE_CREATIVE_IMAGE;
    const char *want = media_kind_names[image ? MEDIA_IMAGE : MEDIA_VIDEO];

    const char *advertiser = json_str_member(w->after, "advertiser_id");

    if (owner != NULL && (advertiser == NULL || strcmp(owner, advertiser) != 0))
        st = resource_refuse(w, 422, "media_id: the media item is another advertiser's");
    else if (!image && t != ADSERVE_CREATIVE_VIDEO)
        st = resource_refuse(w, 422, "media_id: only an IMAGE or a VIDEO creative takes one");
    else if (kind == NULL || strcmp(kind, want) != 0)
        st = resource_refuse(w, 422, "media_id: %s %s creative takes %s %s item, not %s",
                             image ? "an" : "a", type, image ? "an" : "a", want,
                             kind ? kind : "this one");
    else
        st = set_media(w, item, image);
    cJSON_Delete(read);
    return st;
}

static enum store_status creative_check(struct resource_write *w)
{
    enum store_status st;

    if ((st = resource_review(w, "creatives", (const char *const[]){ "name", NULL })) != STORE_OK ||
        w->rep->status != 0 ||
        (st = apply_media(w)) != STORE_OK || w->rep->status != 0 ||
        (st = check_content(w)) != STORE_OK || w->rep->status != 0)
        return st;
    return check_licas_fit(w);
}

const struct resource resource_creatives = {
    .name = ADSERVE_RECORD_CREATIVE, .label = "creative", .hash = ADSERVE_KEY_CREATIVES,
    .location = "/api/creatives", .schema = &schema_creative,
    .list_query = &schema_creative_list_query, .filters = creative_filters, .serving = true,
    .owner = OWNER_FIELD, .watch = creative_watch, .immutable = creative_immutable,
    .refs = creative_refs, .indexes = creative_indexes, .dependents = creative_dependents,
    .check = creative_check,
};

RESOURCE_HANDLERS(creatives, resource_creatives)
RESOURCE_DOCS(creatives, "Creatives", schema_creative, schema_creative_patch,
              schema_creative_list_query,
              "List creatives, oldest first; filters: advertiser_id, approval, type, q (name "
              "substring); advertisers: their own",
              "Create a creative: APPROVED when an admin or operator makes it, PENDING when an "
              "advertiser does",
              "Get a creative (another advertiser's: 404)",
              "Update a creative; approval ({\"approval\": ...}) by admins and operators only "
              "(403); an advertiser's change of anything but name makes it PENDING",
              "Delete a creative without LICAs (else 409)");

const struct route creatives_routes[] = {
    { "GET", "/api/creatives", creatives_list, ROLES_ANY, BODY_NONE, &creatives_list_doc },
    { "POST", "/api/creatives", creatives_create, ROLES_ANY, BODY_JSON, &creatives_create_doc },
    { "GET", "/api/creatives/{id}", creatives_get, ROLES_ANY, BODY_NONE, &creatives_get_doc },
    { "PATCH", "/api/creatives/{id}", creatives_update, ROLES_ANY, BODY_JSON,
      &creatives_update_doc },
    { "DELETE", "/api/creatives/{id}", creatives_delete, ROLES_ANY, BODY_NONE,
      &creatives_delete_doc },
};
const size_t creatives_routes_count = sizeof creatives_routes / sizeof creatives_routes[0];
