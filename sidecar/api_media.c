/* /api/media: the media library (README "Media library"; media_upload.h
 * takes the uploads, media_library.h keeps the files and records).
 *
 * Roles: what creatives take. Admins and operators upload for the house
 * (advertiser_id null: any advertiser's creative may use the item) or for
 * an advertiser; an advertiser's user uploads for, and sees, lists and
 * deletes, only its own advertiser's items (another's id answers 404, as
 * creatives do). Items are not edited: the bytes are the item, and a
 * different file is another upload. A creative names an item in media_id
 * (api_creatives.c); an item is deleted only while no creative does. */
#include "api.h"

#include "media_library.h"
#include "media_upload.h"
#include "resource.h"
#include "schema_rows.h"

static const struct schema name_n = { .type = SCHEMA_STRING, .max_length = MEDIA_NAME_MAX,
                                      .nullable = true };
static const struct schema kind = { .name = "MediaKind", .type = SCHEMA_STRING,
                                    .enum_values = media_kind_names };
static const struct schema mime = { .type = SCHEMA_STRING, .max_length = MEDIA_MIME_MAX };
static const struct schema sha256 = { .type = SCHEMA_STRING, .min_length = 64, .max_length = 64 };
static const struct schema count = { .type = SCHEMA_INTEGER, .has_min = true, .min = 0 };
static const struct schema pixels = { .type = SCHEMA_INTEGER, .has_min = true, .min = 1,
                                      .has_max = true, .max = MEDIA_SIZE_MAX };
static const struct schema seconds_n = { .type = SCHEMA_NUMBER, .has_min = true, .min = 0,
                                         .nullable = true };
static const struct schema url = { .type = SCHEMA_STRING, .format = SCHEMA_FORMAT_URI };

static const struct schema_field item_fields[] = {
    ID_ROW,
    { "advertiser_id", &schema_uuid_n, .required = true,
      .description = "the owner; null: the house's, for any advertiser's creatives" },
    { "name", &name_n, .required = true,
      .description = "the uploaded file's name, for display only (never a path)" },
    { "kind", &kind, .required = true },
    { "mime_type", &mime, .required = true, .description = "by the file's bytes" },
    { "sha256", &sha256, .required = true, .description = "of the bytes, hex: the stored name" },
    { "bytes", &count, .required = true },
    { "width", &pixels, .required = true },
    { "height", &pixels, .required = true },
    { "duration", &seconds_n, .required = true,
      .description = "a video's, in seconds, when its container says; null for images" },
    { "url", &url, .required = true,
      .description = "where nginx serves the file, cached for a year (the public URL of "
                     "the upload's time)" },
    META_ROWS,
    { NULL },
};
const struct schema schema_media_item = {
    .name = "MediaItem", .type = SCHEMA_OBJECT, .fields = item_fields,
    .description = "An image or a video of the media library.",
};

static const struct schema q = { .type = SCHEMA_STRING, .max_length = 256 };
static const struct schema_field query_fields[] = {
    SCHEMA_PAGING_FIELDS,
    { .name = "advertiser_id", .schema = &schema_uuid },
    { .name = "kind", .schema = &kind },
    { .name = "mime_type", .schema = &mime },
    { .name = "q", .schema = &q, .description = "name substring" },
    { NULL },
};
static const struct schema list_query = { .type = SCHEMA_OBJECT, .fields = query_fields };

static const struct resource_filter filters[] = {
    { "advertiser_id", "advertiser_id", NULL, false },
    { "kind", "kind", NULL, false },
    { "mime_type", "mime_type", NULL, false },
    { "q", "name", NULL, true },
    { NULL, NULL, NULL, false },
};

/* Lists and reads go through the generic resource layer; writes are the
 * upload's and the delete's own (media_library.c), which also keep the
 * files. */
const struct resource resource_media = {
    .name = ADSERVE_RECORD_MEDIA, .label = "media item", .hash = ADSERVE_KEY_MEDIA,
    .location = "/api/media", .schema = &schema_media_item, .list_query = &list_query,
    .filters = filters, .serving = false, .owner = OWNER_FIELD,
};

static void media_list(struct request *req, struct reply *rep)
{
    resource_list(&resource_media, req, rep);
}

static void media_get(struct request *req, struct reply *rep)
{
    resource_get(&resource_media, req, rep);
}

/* the stream answers; the handler is never reached */
static void streamed(struct request *req, struct reply *rep)
{
    (void)req;
    reply_error(rep, 500, "internal error");
}

static const int upload_errors[] = { 400, 401, 403, 409, 413, 415, 422, 500, 503, 0 };
static const int delete_errors[] = { 401, 404, 409, 503, 0 };

static const struct route_doc list_doc = {
    .tag = "Media Library", .response = &schema_media_item, .status = 200, .list = true,
    .query = &list_query, .errors = resource_list_errors,
    .summary = "List media items, oldest first; filters: advertiser_id, kind, mime_type, q "
               "(name substring); advertisers: their own",
};
static const struct route_doc upload_doc = {
    .tag = "Media Library", .response = &schema_media_item, .status = 201,
    .query = &schema_media_upload_query, .errors = upload_errors,
    .stream = &media_upload_stream,
    .summary = "Upload an image (PNG, JPEG, GIF, WebP) or a video (MP4, WebM): the file as "
               "the body, or as the part \"file\" of a multipart/form-data body. The type is "
               "the bytes' (another: 415), the size is bounded by kind (413); the same bytes "
               "again are the same item (200)",
};
static const struct route_doc get_doc = {
    .tag = "Media Library", .response = &schema_media_item, .status = 200,
    .errors = resource_get_errors, .summary = "Get a media item (another advertiser's: 404)",
};
static const struct route_doc delete_doc = {
    .tag = "Media Library", .status = 204, .errors = delete_errors,
    .summary = "Delete a media item no creative uses (else 409 with the creatives' ids in "
               "creative_ids); its file goes with the last item of those bytes",
};

const struct route media_routes[] = {
    { "GET", "/api/media", media_list, ROLES_ANY, BODY_NONE, &list_doc },
    { "POST", "/api/media", streamed, ROLES_ANY, BODY_STREAM, &upload_doc },
    { "GET", "/api/media/{id}", media_get, ROLES_ANY, BODY_NONE, &get_doc },
    { "DELETE", "/api/media/{id}", media_library_delete, ROLES_ANY, BODY_NONE, &delete_doc },
};
const size_t media_routes_count = sizeof media_routes / sizeof media_routes[0];
