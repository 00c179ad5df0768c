/* The demand model's shapes (schema_demand.h). API.md's "Resource fields
 * that clients rely on" fixes the fields; bounds and defaults beyond it
 * are choices, written next to their rows. Rules between fields or
 * records (flights, states, references) are the resources' own, in
 * resource.h tables and the api_*.c check hooks. */
#include "schema_demand.h"
#include "schema_native.h"
#include "schema_rows.h"

#include "targeting.h"

#include <stddef.h>

#define RANGE(lo, hi) .has_min = true, .min = (lo), .has_max = true, .max = (hi)

/* ---- scalars --------------------------------------------------------------------- */

const struct schema schema_uuid = { .type = SCHEMA_STRING, .format = SCHEMA_FORMAT_UUID };
const struct schema schema_uuid_n = { .type = SCHEMA_STRING, .format = SCHEMA_FORMAT_UUID,
                                      .nullable = true };
const struct schema schema_date_time = { .type = SCHEMA_STRING,
                                         .format = SCHEMA_FORMAT_DATE_TIME };
static const struct schema date_time_n = { .type = SCHEMA_STRING, .nullable = true,
                                           .format = SCHEMA_FORMAT_DATE_TIME };
/* Choice: names are non-empty and at most 256 characters, as ad units'. */
static const struct schema label = { .type = SCHEMA_STRING, .min_length = 1, .max_length = 256 };
static const struct schema text_n = { .type = SCHEMA_STRING, .max_length = 4096,
                                      .nullable = true };
/* Choice: a domain is a host name (RFC 1035's 253 characters), not a URL. */
static const struct schema domain_n = { .type = SCHEMA_STRING, .min_length = 1,
                                        .max_length = 253, .nullable = true };
static const struct schema url = { .type = SCHEMA_STRING, .format = SCHEMA_FORMAT_URI,
                                   .max_length = 2048 };
static const struct schema url_n = { .type = SCHEMA_STRING, .format = SCHEMA_FORMAT_URI,
                                     .max_length = 2048, .nullable = true };
/* Choice: markup up to 64 KiB; serving renders it once per creative. */
static const struct schema html_n = { .type = SCHEMA_STRING, .min_length = 1,
                                      .max_length = 65536, .nullable = true };
static const struct schema money = { .type = SCHEMA_NUMBER, .has_min = true, .min = 0 };
/* Choice: rates up to 999999 (per mille, click or action): serving treats
 * 1e9 or more as broken (README), and the bound prints exactly in the 422. */
static const struct schema rate = { .type = SCHEMA_NUMBER, RANGE(0, ADSERVE_COST_MAX) };
/* Choice: creative sizes are 1..10000 pixels; 0 would fit no ad unit. */
static const struct schema pixels = { .type = SCHEMA_INTEGER, RANGE(1, 10000) };
static const struct schema priority = {
    .type = SCHEMA_INTEGER, RANGE(1, 16),
    .description = "1 is the highest; default by type: SPONSORSHIP 4, STANDARD 8, "
                   "PRICE_PRIORITY 12, HOUSE 16",
};
static const struct schema weight = { .type = SCHEMA_INTEGER, RANGE(1, 1000000) };

/* Choice: categories are IAB content category codes ("IAB7", "IAB7-39")
 * as OpenRTB's cat and bcat carry them. The list is not closed here: ad
 * units' ext.bcat mixes IAB codes with other sensitive categories, and
 * serving compares codes (IAB7 blocks IAB7-39) without a table. */
static const struct schema category = { .type = SCHEMA_STRING, .min_length = 1,
                                        .max_length = 64 };
static const struct schema categories = { .type = SCHEMA_ARRAY, .items = &category,
                                          .max_items = 64 };
static const struct schema uuid_list = { .type = SCHEMA_ARRAY, .items = &schema_uuid,
                                         .max_items = 1000 };

static const struct schema q = { .type = SCHEMA_STRING, .min_length = 1, .max_length = 256,
                                 .description = "a substring of the name, any case" };

/* ---- advertisers -------------------------------------------------------------------- */

static const struct schema_field advertiser_fields[] = {
    ID_ROW,
    { "name", &label, .required = true },
    { "domain", &domain_n, .dflt = "null",
      .description = "its web domain (OpenRTB adomain), e.g. shop.example" },
    { "categories", &categories, .dflt = "[]",
      .description = "IAB content categories of its business, e.g. IAB22" },
    { "balance", &money, .dflt = "0",
      .description = "prepaid balance in the account currency (admins and operators set it; "
                     "the advertiser's users read it)" },
    { "manager_id", &schema_uuid_n, .dflt = "null",
      .description = "its account manager: a user with role admin or operator (the manager "
                     "group lists each manager's advertisers)" },
    META_ROWS,
    { NULL },
};
RESOURCE_SCHEMAS(advertiser, "Advertiser", advertiser_fields, "A buyer of campaigns.");

static const struct schema_field advertiser_query_fields[] = {
    SCHEMA_PAGING_FIELDS,
    { .name = "q", .schema = &q },
    { .name = "manager_id", .schema = &schema_uuid, .description = "the advertisers it manages" },
    { NULL },
};
LIST_QUERY(advertiser, advertiser_query_fields);

/* ---- placements ------------------------------------------------------------------------ */

static const struct schema_field placement_fields[] = {
    ID_ROW,
    { "name", &label, .required = true },
    { "description", &text_n, .dflt = "null" },
    { "ad_unit_ids", &uuid_list, .dflt = "[]",
      .description = "existing ad units (each with its descendants when targeted)" },
    META_ROWS,
    { NULL },
};
RESOURCE_SCHEMAS(placement, "Placement", placement_fields,
                 "A named group of ad units that line items can target.");

static const struct schema_field placement_query_fields[] = {
    SCHEMA_PAGING_FIELDS,
    { "ad_unit_id", &schema_uuid, .description = "placements holding this ad unit" },
    { .name = "q", .schema = &q },
    { NULL },
};
LIST_QUERY(placement, placement_query_fields);

/* ---- orders ------------------------------------------------------------------------------ */

static const struct schema order_status = {
    .name = "OrderStatus", .type = SCHEMA_STRING, .enum_values = adserve_order_status_names,
    .description = "DRAFT (new) -> APPROVED <-> PAUSED, any -> ARCHIVED; only APPROVED serves; "
                   "APPROVED is set by admins and operators",
};

static const struct schema_field order_fields[] = {
    ID_ROW,
    { "advertiser_id", &schema_uuid, .required = true, .description = "cannot change" },
    { "name", &label, .required = true },
    { "status", &order_status, .dflt = SCHEMA_JSON_STR(ADSERVE_V_DRAFT), .description = "a new order is DRAFT" },
    { "notes", &text_n, .dflt = "null" },
    META_ROWS,
    { NULL },
};
RESOURCE_SCHEMAS(order, "Order", order_fields,
                 "An advertiser's campaign: its line items deliver under it.");

static const struct schema_field order_query_fields[] = {
    SCHEMA_PAGING_FIELDS,
    { .name = "advertiser_id", .schema = &schema_uuid },
    { .name = "status", .schema = &order_status },
    { .name = "q", .schema = &q },
    { NULL },
};
LIST_QUERY(order, order_query_fields);

/* ---- line items ------------------------------------------------------------------------- */

static const struct schema line_item_type = {
    .name = "LineItemType", .type = SCHEMA_STRING, .enum_values = adserve_tier_names,
    .description = "ranks first in serving, in this order",
};
static const struct schema cost_type = {
    .name = "CostType", .type = SCHEMA_STRING, .enum_values = adserve_cost_names,
};
static const struct schema line_item_status = {
    .name = "LineItemStatus", .type = SCHEMA_STRING, .enum_values = adserve_li_status_names,
    .description = "DRAFT (new) -> ACTIVE <-> PAUSED, ACTIVE or PAUSED -> COMPLETED, "
                   "any -> ARCHIVED; only ACTIVE serves",
};
static const struct schema delivery = {
    .name = "Delivery", .type = SCHEMA_STRING, .enum_values = adserve_delivery_names,
    .description = "EVEN paces over the flight; ASAP as fast as traffic allows",
};

/* goal: a union on type, so units exist exactly when they count something. */
static const char *const tag_impressions[] = { ADSERVE_V_IMPRESSIONS, NULL },
                  *const tag_clicks[] = { ADSERVE_V_CLICKS, NULL },
                  *const tag_none[] = { ADSERVE_V_NONE, NULL };
static const struct schema type_impressions = { .type = SCHEMA_STRING,
                                                .enum_values = tag_impressions };
static const struct schema type_clicks = { .type = SCHEMA_STRING, .enum_values = tag_clicks };
static const struct schema type_none = { .type = SCHEMA_STRING, .enum_values = tag_none };
static const struct schema units = { .type = SCHEMA_INTEGER, RANGE(1, 1e15) };
static const struct schema_field goal_impressions_fields[] = {
    { "type", &type_impressions, .required = true },
    { "units", &units, .required = true, .description = "impressions to deliver" },
    { NULL },
};
static const struct schema_field goal_clicks_fields[] = {
    { "type", &type_clicks, .required = true },
    { "units", &units, .required = true, .description = "clicks to deliver" },
    { NULL },
};
static const struct schema_field goal_none_fields[] = {
    { "type", &type_none, .required = true },
    { NULL },
};
static const struct schema goal_impressions = { .name = "GoalImpressions", .type = SCHEMA_OBJECT,
                                                .fields = goal_impressions_fields };
static const struct schema goal_clicks = { .name = "GoalClicks", .type = SCHEMA_OBJECT,
                                           .fields = goal_clicks_fields };
static const struct schema goal_none = { .name = "GoalNone", .type = SCHEMA_OBJECT,
                                         .fields = goal_none_fields };
static const struct schema_variant goal_variants[] = {
    { ADSERVE_V_IMPRESSIONS, &goal_impressions }, { ADSERVE_V_CLICKS, &goal_clicks },
    { ADSERVE_V_NONE, &goal_none },
    { NULL },
};
static const struct schema goal = {
    .name = "Goal", .type = SCHEMA_UNION, .discriminator = "type", .variants = goal_variants,
    .description = "what the line item delivers; a CPM line item's goal is not CLICKS, a CPC "
                   "one's not IMPRESSIONS",
};

/* Choice: a cap counts up to a million ads in up to a year, 8 caps at most. */
static const struct schema cap_max = { .type = SCHEMA_INTEGER, RANGE(1, 1000000) };
static const struct schema cap_seconds = { .type = SCHEMA_INTEGER, RANGE(1, 31536000) };
static const struct schema_field frequency_cap_fields[] = {
    { "max", &cap_max, .required = true, .description = "ads per user at most" },
    { "seconds", &cap_seconds, .required = true, .description = "in any window this long" },
    { NULL },
};
static const struct schema frequency_cap = { .name = "FrequencyCap", .type = SCHEMA_OBJECT,
                                             .fields = frequency_cap_fields };
static const struct schema frequency_caps = { .type = SCHEMA_ARRAY, .items = &frequency_cap,
                                              .max_items = 8 };

static const struct schema approval = {
    .name = "Approval", .type = SCHEMA_STRING, .enum_values = adserve_approval_names,
    .description = "a review, set by admins and operators (APPROVED by default when they make "
                   "the resource); what an advertiser makes or changes is PENDING; only "
                   "APPROVED serves",
};

static const struct schema_field line_item_fields[] = {
    ID_ROW,
    { "order_id", &schema_uuid, .required = true, .description = "cannot change" },
    { "advertiser_id", &schema_uuid, .required = true, .read_only = true,
      .description = "the order's advertiser" },
    { "name", &label, .required = true },
    { "type", &line_item_type, .required = true },
    { "cost_type", &cost_type, .required = true },
    { "rate", &rate, .required = true,
      .description = "the price per 1000 impressions (CPM), per click (CPC) or per action "
                     "(CPA), in the account currency" },
    { "status", &line_item_status, .dflt = SCHEMA_JSON_STR(ADSERVE_V_DRAFT),
      .description = "a new line item is DRAFT" },
    { .name = "priority", .schema = &priority },
    { "start_at", &date_time_n, .dflt = "null", .description = "null: from now on" },
    { "end_at", &date_time_n, .dflt = "null",
      .description = "after start_at (exclusive end); null: open-ended" },
    { "goal", &goal, .dflt = "{\"type\":\"NONE\"}" },
    { "delivery", &delivery, .dflt = SCHEMA_JSON_STR(ADSERVE_V_EVEN) },
    { "frequency_caps", &frequency_caps, .dflt = "[]" },
    { "targeting", &schema_targeting, .dflt = "{}",
      .description = "checked against what exists on every write that sends it (an "
                     "advertiser's is taken as written: ids they may not see are not looked "
                     "up, and the review decides)" },
    { .name = "approval", .schema = &approval },
    META_ROWS,
    { NULL },
};
RESOURCE_SCHEMAS(line_item, "LineItem", line_item_fields,
                 "What an order buys: a price, a flight, a goal and the targeting.");

static const struct schema_field line_item_query_fields[] = {
    SCHEMA_PAGING_FIELDS,
    { .name = "order_id", .schema = &schema_uuid },
    { .name = "advertiser_id", .schema = &schema_uuid },
    { .name = "status", .schema = &line_item_status },
    { .name = "type", .schema = &line_item_type },
    { .name = "approval", .schema = &approval },
    { .name = "q", .schema = &q },
    { NULL },
};
LIST_QUERY(line_item, line_item_query_fields);

/* ---- creatives -------------------------------------------------------------------------- */

static const struct schema creative_type = {
    .name = "CreativeType", .type = SCHEMA_STRING, .enum_values = adserve_creative_type_names,
    .description = "IMAGE has image_url, HTML has html, VIDEO has video, NATIVE has native "
                   "(the others are null)",
};

/* VIDEO: the spec shows no creative fields; the shape follows VAST 4.2's
 * Linear (README "Video"). */
static const struct schema mime = { .type = SCHEMA_STRING, .min_length = 3, .max_length = 64 };
static const struct schema pixels0 = { .type = SCHEMA_INTEGER, RANGE(0, 10000) };
static const struct schema kbps_n = { .type = SCHEMA_INTEGER, RANGE(0, 1000000), .nullable = true };
static const struct schema video_delivery = {
    .name = "VideoDelivery", .type = SCHEMA_STRING, .enum_values = adserve_video_delivery_names,
};
static const struct schema_field media_file_fields[] = {
    { "url", &url, .required = true, .description = "the file (absolute http(s))" },
    { "mime", &mime, .required = true, .description = "e.g. video/mp4" },
    { "w", &pixels0, .required = true },
    { "h", &pixels0, .required = true },
    { "bitrate", &kbps_n, .dflt = "null", .description = "kbit/s" },
    { "delivery", &video_delivery, .dflt = "\"progressive\"" },
    { NULL },
};
static const struct schema media_file = {
    .name = "MediaFile", .type = SCHEMA_OBJECT, .fields = media_file_fields,
};
static const struct schema media_files = { .type = SCHEMA_ARRAY, .items = &media_file,
                                           .max_items = ADSERVE_VIDEO_MEDIA_MAX };
static const struct schema_field companion_fields[] = {
    { "w", &pixels, .required = true },
    { "h", &pixels, .required = true },
    { "image_url", &url, .required = true, .description = "a static banner shown beside" },
    { NULL },
};
static const struct schema companion = {
    .name = "CompanionBanner", .type = SCHEMA_OBJECT, .fields = companion_fields,
};
static const struct schema companions = { .type = SCHEMA_ARRAY, .items = &companion,
                                          .max_items = ADSERVE_VIDEO_COMPANIONS_MAX };
static const struct schema duration = { .type = SCHEMA_INTEGER,
                                        RANGE(0, ADSERVE_VIDEO_DURATION_MAX) };
static const struct schema skip_offset = { .type = SCHEMA_INTEGER,
                                           RANGE(0, ADSERVE_VIDEO_DURATION_MAX),
                                           .nullable = true };
static const struct schema_field video_creative_fields[] = {
    { "duration", &duration, .required = true, .description = "seconds" },
    { "media_files", &media_files, .dflt = "[]",
      .description = "at least one, unless vast_tag_url wraps another ad server's VAST" },
    { "skip_offset", &skip_offset, .dflt = "null",
      .description = "seconds before the skip button; null: not skippable" },
    { "companions", &companions, .dflt = "[]" },
    { "vast_tag_url", &url_n, .dflt = "null",
      .description = "a third-party VAST tag: served as a VAST Wrapper (media_files empty)" },
    { NULL },
};
const struct schema schema_video_creative = {
    .name = "VideoCreative", .type = SCHEMA_OBJECT, .fields = video_creative_fields,
    .nullable = true, .description = "VIDEO: a linear video ad (VAST 4.2)",
};

static const struct schema boolean = { .type = SCHEMA_BOOLEAN };

static const struct schema_field creative_fields[] = {
    ID_ROW,
    { "advertiser_id", &schema_uuid, .required = true, .description = "cannot change" },
    { "name", &label, .required = true },
    { "type", &creative_type, .required = true },
    { "w", &pixels, .required = true, .description = "width in pixels" },
    { "h", &pixels, .required = true, .description = "height in pixels" },
    { "image_url", &url_n, .dflt = "null", .description = "IMAGE: the image (absolute http(s))" },
    { "html", &html_n, .dflt = "null", .description = "HTML: the markup" },
    { "video", &schema_video_creative, .dflt = "null", .description = "VIDEO: the video ad" },
    { "native", &schema_native_creative, .dflt = "null",
      .description = "NATIVE: the assets of a native ad" },
    { "native_format_id", &schema_uuid_n, .dflt = "null",
      .description = "NATIVE: a native format whose required assets it must carry" },
    { "media_id", &schema_uuid_n, .dflt = "null",
      .description = "IMAGE or VIDEO: an item of the media library, of the creative's "
                     "advertiser or the house's, whose URL becomes image_url (IMAGE) or the "
                     "one video.media_files (VIDEO)" },
    { "interstitial", &boolean, .dflt = "false",
      .description = "made to fill a screen: only these serve on an interstitial ad unit "
                     "(instl 1), at its size" },
    { "landing_url", &url, .required = true,
      .description = "where a click goes (absolute http(s))" },
    { "categories", &categories, .dflt = "[]",
      .description = "IAB content categories of the ad (ad units' ext.bcat blocks them)" },
    { .name = "approval", .schema = &approval },
    META_ROWS,
    { NULL },
};
RESOURCE_SCHEMAS(creative, "Creative", creative_fields, "An ad an advertiser shows.");

static const struct schema_field creative_query_fields[] = {
    SCHEMA_PAGING_FIELDS,
    { .name = "advertiser_id", .schema = &schema_uuid },
    { .name = "approval", .schema = &approval },
    { .name = "type", .schema = &creative_type },
    { .name = "q", .schema = &q },
    { NULL },
};
LIST_QUERY(creative, creative_query_fields);

/* ---- LICAs -------------------------------------------------------------------------------- */

static const struct schema lica_status = {
    .name = "LicaStatus", .type = SCHEMA_STRING, .enum_values = adserve_lica_status_names,
};

static const struct schema_field lica_fields[] = {
    ID_ROW,
    { "line_item_id", &schema_uuid, .required = true, .description = "cannot change" },
    { "creative_id", &schema_uuid, .required = true,
      .description = "of the order's advertiser, fitting the line item's targeted sizes; "
                     "cannot change" },
    { "advertiser_id", &schema_uuid, .required = true, .read_only = true,
      .description = "the line item's advertiser" },
    { "weight", &weight, .dflt = "1",
      .description = "share of rotation among the line item's creatives" },
    { "status", &lica_status, .dflt = SCHEMA_JSON_STR(ADSERVE_V_ACTIVE) },
    META_ROWS,
    { NULL },
};
RESOURCE_SCHEMAS(lica, "Lica", lica_fields,
                 "A line item to creative association: the creative serves for the line item.");

static const struct schema_field lica_query_fields[] = {
    SCHEMA_PAGING_FIELDS,
    { .name = "line_item_id", .schema = &schema_uuid },
    { .name = "creative_id", .schema = &schema_uuid },
    { .name = "advertiser_id", .schema = &schema_uuid },
    { .name = "status", .schema = &lica_status },
    { NULL },
};
LIST_QUERY(lica, lica_query_fields);

/* ---- custom targeting keys and values -------------------------------------------------------- */

static const struct schema key_type = {
    .name = "TargetingKeyType", .type = SCHEMA_STRING, .enum_values = adserve_key_type_names,
    .description = "PREDEFINED: rules name its values; FREEFORM: any string or number",
};
/* Choice: key and value names are 1..64 and 1..256 characters, and cannot
 * change: kv rules name them, and a rename would change what they mean. */
static const struct schema key_name = { .type = SCHEMA_STRING, .min_length = 1, .max_length = 64 };

static const struct schema_field targeting_key_fields[] = {
    ID_ROW,
    { "name", &key_name, .required = true,
      .description = "unique; what kv rules and requests' ext.kv name; cannot change" },
    { "type", &key_type, .dflt = SCHEMA_JSON_STR(ADSERVE_V_FREEFORM), .description = "cannot change" },
    { "description", &text_n, .dflt = "null" },
    META_ROWS,
    { NULL },
};
RESOURCE_SCHEMAS(targeting_key, "TargetingKey", targeting_key_fields, "A custom targeting key.");

static const struct schema_field targeting_key_query_fields[] = {
    SCHEMA_PAGING_FIELDS,
    { .name = "type", .schema = &key_type },
    { .name = "q", .schema = &q },
    { NULL },
};
LIST_QUERY(targeting_key, targeting_key_query_fields);

static const struct schema_field targeting_value_fields[] = {
    ID_ROW,
    { "key_id", &schema_uuid, .required = true, .read_only = true, .description = "its key (the path's)" },
    { "name", &label, .required = true,
      .description = "unique within its key; what kv rules name; cannot change" },
    { "description", &text_n, .dflt = "null" },
    META_ROWS,
    { NULL },
};
RESOURCE_SCHEMAS(targeting_value, "TargetingValue", targeting_value_fields,
                 "A value of a custom targeting key.");

static const struct schema_field targeting_value_query_fields[] = {
    SCHEMA_PAGING_FIELDS,
    { .name = "q", .schema = &q },
    { NULL },
};
LIST_QUERY(targeting_value, targeting_value_query_fields);

/* ---- batches -------------------------------------------------------------------------------- */

static const char *const batch_ops[] = { "create", "update", "delete", "upsert", NULL };
static const struct schema batch_op = { .type = SCHEMA_STRING, .enum_values = batch_ops };
static const struct schema free_object = { .type = SCHEMA_FREE_OBJECT };
static const struct schema any = { .type = SCHEMA_ANY };

static const struct schema_field batch_item_fields[] = {
    { "op", &batch_op, .required = true,
      .description = "upsert: catalog items and pools only, by item_id / source_item_id" },
    { "id", &schema_uuid, .description = "update, delete: the resource's id" },
    { "data", &free_object,
      .description = "create: the POST body; update: the PATCH body (a status change is "
                     "{\"status\": ...}); delete: none" },
    { NULL },
};
const struct schema schema_batch_item = {
    .name = "BatchItem", .type = SCHEMA_OBJECT, .fields = batch_item_fields,
};
static const struct schema batch_items = { .type = SCHEMA_ARRAY, .items = &schema_batch_item,
                                           .max_items = BATCH_MAX_ITEMS };
static const struct schema_field batch_request_fields[] = {
    { "items", &batch_items, .required = true, .description = "applied in order, one by one" },
    { NULL },
};
const struct schema schema_batch_request = {
    .name = "BatchRequest", .type = SCHEMA_OBJECT, .fields = batch_request_fields,
};

static const struct schema any_items = { .type = SCHEMA_ARRAY, .items = &any,
                                         .max_items = BATCH_MAX_ITEMS };
static const struct schema_field batch_envelope_fields[] = {
    { "items", &any_items, .required = true },
    { NULL },
};
const struct schema schema_batch_envelope = {
    .type = SCHEMA_OBJECT, .fields = batch_envelope_fields,
};

static const struct schema index_s = { .type = SCHEMA_INTEGER, RANGE(0, BATCH_MAX_ITEMS - 1) };
static const struct schema http_status = { .type = SCHEMA_INTEGER, RANGE(100, 599) };
static const struct schema detail = { .type = SCHEMA_STRING };
static const struct schema_field batch_result_fields[] = {
    { "index", &index_s, .required = true, .description = "the item's place in items" },
    { "status", &http_status, .required = true,
      .description = "what the item alone would have answered: 201, 200, 204, 403, 404, 409, "
                     "422" },
    { "id", &schema_uuid, .description = "the resource's id (a new one for a create)" },
    { "detail", &detail, .description = "why the item failed" },
    { NULL },
};
static const struct schema batch_result = {
    .name = "BatchResult", .type = SCHEMA_OBJECT, .fields = batch_result_fields,
};
static const struct schema batch_results = { .type = SCHEMA_ARRAY, .items = &batch_result };
static const struct schema_field batch_response_fields[] = {
    { "results", &batch_results, .required = true, .description = "one per item, in order" },
    { NULL },
};
const struct schema schema_batch_response = {
    .name = "BatchResponse", .type = SCHEMA_OBJECT, .fields = batch_response_fields,
};
