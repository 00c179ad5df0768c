/* /api/custom-targeting/segments: audiences, as sets of user ids
 * (resource.h, and segment_upload.h for their members).
 *
 * Inventory: admins and operators. A segment is {name, description,
 * membership_expiration_days}; its members are uploaded in bulk, one user
 * id a line (POST .../members adds, DELETE .../members with the same body
 * removes), each membership ending membership_expiration_days after its
 * upload (an upload again renews it). Line items target segments in
 * targeting.segments (include, exclude); a segment a line item targets
 * cannot be deleted (409). Serving never reads the records: it reads each
 * user's memberships (README "Segments"). */
#include "api.h"

#include "resource.h"
#include "schema_rows.h"
#include "segment_upload.h"

static const struct schema name = { .type = SCHEMA_STRING, .min_length = 1, .max_length = 256 };
static const struct schema text = { .type = SCHEMA_STRING, .max_length = 1024 };
static const struct schema days = {
    .type = SCHEMA_INTEGER, .has_min = true, .min = 1, .has_max = true,
    .max = ADSERVE_SEGMENT_EXPIRATION_DAYS_MAX,
};
static const struct schema_field segment_fields[] = {
    ID_ROW,
    { "name", &name, .required = true },
    { "description", &text, .dflt = "\"\"" },
    { "membership_expiration_days", &days, .dflt = "30",
      .description = "how long a membership lasts after the upload that made (or renewed) it" },
    META_ROWS,
    { NULL },
};
RESOURCE_SCHEMAS(segment, "CustomTargetingSegment", segment_fields,
                 "An audience: user ids uploaded in bulk, targeted by line items.");
static const struct schema q = { .type = SCHEMA_STRING, .max_length = 256 };
static const struct schema_field segment_query_fields[] = {
    SCHEMA_PAGING_FIELDS,
    { .name = "q", .schema = &q, .description = "name substring" },
    { NULL },
};
LIST_QUERY(segment, segment_query_fields);

static const char *const segment_watch[] = { ADSERVE_KEY_LINE_ITEMS, NULL };
static const struct resource_dependent segment_dependents[] = {
    { ADSERVE_KEY_SEGMENT_INCLUDERS, false, "line items targeting it" },
    { ADSERVE_KEY_SEGMENT_EXCLUDERS, false, "line items excluding it" },
    { NULL, false, NULL },
};
static const struct resource_filter segment_filters[] = {
    { "q", "name", NULL, true },
    { NULL, NULL, NULL, false },
};

const struct resource resource_segments = {
    .name = ADSERVE_RECORD_SEGMENT, .label = "segment", .hash = ADSERVE_KEY_SEGMENTS,
    .location = "/api/custom-targeting/segments", .schema = &schema_segment,
    .list_query = &schema_segment_list_query, .filters = segment_filters, .serving = false,
    .owner = OWNER_NONE, .watch = segment_watch, .dependents = segment_dependents,
};

RESOURCE_HANDLERS(segments, resource_segments)
RESOURCE_DOCS(segments, "Custom Targeting Segment", schema_segment, schema_segment_patch,
              schema_segment_list_query, "List segments, oldest first; filter: q (name substring)",
              "Create a segment", "Get a segment", "Update a segment",
              "Delete a segment no line item targets (else 409); its memberships end with "
              "their expiration");

static const struct schema count = { .type = SCHEMA_INTEGER, .has_min = true, .min = 0 };
static const struct schema dt = { .type = SCHEMA_STRING, .format = SCHEMA_FORMAT_DATE_TIME };
static const struct schema_field error_fields[] = {
    { "line", &count, .required = true, .description = "from 1" },
    { "reason", &text, .required = true },
    { NULL },
};
static const struct schema error_row = {
    .name = "SegmentUploadError", .type = SCHEMA_OBJECT, .fields = error_fields,
};
static const struct schema error_list = {
    .type = SCHEMA_ARRAY, .items = &error_row, .max_items = SEGMENT_UPLOAD_ERRORS_MAX,
};
static const struct schema_field upload_fields[] = {
    { "segment_id", &schema_uuid, .required = true },
    { "lines", &count, .required = true },
    { "members", &count, .description = "an add: user ids written (blank lines aside)" },
    { "removed", &count, .description = "a remove: user ids taken out" },
    { "malformed", &count, .required = true, .description = "lines skipped" },
    { "errors", &error_list, .required = true,
      .description = "the first malformed lines, with why" },
    { "expires_at", &dt, .description = "an add: when these memberships end" },
    { NULL },
};
static const struct schema upload_report = {
    .name = "SegmentUploadReport", .type = SCHEMA_OBJECT, .fields = upload_fields,
};
static const int upload_errors[] = { 401, 403, 404, 413, 415, 500, 503, 0 };
static const struct route_doc add_doc = {
    .tag = "Custom Targeting Segment", .response = &upload_report, .status = 200,
    .errors = upload_errors, .stream = &segment_members_add,
    .summary = "Add members: a text/plain body, one user id a line (1 to 256 bytes of UTF-8, "
               "no control characters), streamed; malformed lines are reported and skipped",
};
static const struct route_doc remove_doc = {
    .tag = "Custom Targeting Segment", .response = &upload_report, .status = 200,
    .errors = upload_errors, .stream = &segment_members_remove,
    .summary = "Remove members: the same body as an add",
};

/* the stream answers; the handler is never reached */
static void streamed(struct request *req, struct reply *rep)
{
    (void)req;
    reply_error(rep, 500, "internal error");
}

const struct route segments_routes[] = {
    { "GET", "/api/custom-targeting/segments", segments_list, INVENTORY_ROLES, BODY_NONE,
      &segments_list_doc },
    { "POST", "/api/custom-targeting/segments", segments_create, INVENTORY_ROLES, BODY_JSON,
      &segments_create_doc },
    { "GET", "/api/custom-targeting/segments/{id}", segments_get, INVENTORY_ROLES, BODY_NONE,
      &segments_get_doc },
    { "PATCH", "/api/custom-targeting/segments/{id}", segments_update, INVENTORY_ROLES,
      BODY_JSON, &segments_update_doc },
    { "DELETE", "/api/custom-targeting/segments/{id}", segments_delete, INVENTORY_ROLES,
      BODY_NONE, &segments_delete_doc },
    { "POST", "/api/custom-targeting/segments/{id}/members", streamed, INVENTORY_ROLES,
      BODY_STREAM, &add_doc },
    { "DELETE", "/api/custom-targeting/segments/{id}/members", streamed, INVENTORY_ROLES,
      BODY_STREAM, &remove_doc },
};
const size_t segments_routes_count = sizeof segments_routes / sizeof segments_routes[0];
