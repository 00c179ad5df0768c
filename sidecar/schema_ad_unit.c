/* The spec's "Resources and their fields": AdUnit and every shape inside
 * it, as schema.h tables. Defaults and bounds are the spec's; where it
 * leaves something open, the choice is written next to the row.
 *
 * A shape used both as "X" and as "X or null" is two structs with the
 * same name and fields: the OpenAPI document defines the component once
 * and adds the null at the nullable reference. */
#include "schemas.h"

#include <stddef.h>

#define N(a) (sizeof(a) / sizeof((a)[0]))
#define INT_ENUM(vals) .type = SCHEMA_INTEGER, .int_values = vals, .n_int_values = N(vals)
#define RANGE(lo, hi) .has_min = true, .min = (lo), .has_max = true, .max = (hi)
#define NON_NEGATIVE .has_min = true, .min = 0
#define STR(x) #x
#define XSTR(x) STR(x)

/* ---- scalars --------------------------------------------------------------- */

static const struct schema str = { .type = SCHEMA_STRING };
static const struct schema str_n = { .type = SCHEMA_STRING, .nullable = true };
static const struct schema uuid = { .type = SCHEMA_STRING, .format = SCHEMA_FORMAT_UUID };
static const struct schema uuid_n = { .type = SCHEMA_STRING, .format = SCHEMA_FORMAT_UUID,
                                      .nullable = true };
static const struct schema date_time_n = { .type = SCHEMA_STRING, .nullable = true,
                                           .format = SCHEMA_FORMAT_DATE_TIME };
/* Choice: public_url is where event trackers point, so it must be an
 * absolute http(s) URL. */
static const struct schema url_n = { .type = SCHEMA_STRING, .format = SCHEMA_FORMAT_URI,
                                     .nullable = true };
/* Choice: code and name are non-empty and at most 256 characters. */
static const struct schema label = { .type = SCHEMA_STRING, .min_length = 1, .max_length = 256 };
static const struct schema any = { .type = SCHEMA_ANY };        /* "any JSON or null" */
static const struct schema free_object = { .type = SCHEMA_FREE_OBJECT };
static const struct schema boolean_n = { .type = SCHEMA_BOOLEAN, .nullable = true };

static const struct schema integer = { .type = SCHEMA_INTEGER };
static const struct schema integer_n = { .type = SCHEMA_INTEGER, .nullable = true };
static const struct schema count = { .type = SCHEMA_INTEGER, NON_NEGATIVE };
static const struct schema count_n = { .type = SCHEMA_INTEGER, NON_NEGATIVE, .nullable = true };
static const struct schema u8_n = { .type = SCHEMA_INTEGER, RANGE(0, 255), .nullable = true };
static const struct schema u8 = { .type = SCHEMA_INTEGER, RANGE(0, 255) };
static const struct schema u16 = { .type = SCHEMA_INTEGER, RANGE(0, 65535) };
static const struct schema u16_n = { .type = SCHEMA_INTEGER, RANGE(0, 65535), .nullable = true };
/* Cost fields (the spec: "cost values must be non-negative"), up to what
 * serving honours (the contract's ADSERVE_COST_MAX). */
static const struct schema cost = { .type = SCHEMA_NUMBER, RANGE(0, ADSERVE_COST_MAX) };
static const struct schema cost_n = { .type = SCHEMA_NUMBER, NON_NEGATIVE, .nullable = true };
/* Choice: display w and h ("number or null", in `unit`) cannot be negative. */
static const struct schema length_n = { .type = SCHEMA_NUMBER, NON_NEGATIVE, .nullable = true };

static const int zero_one[] = { 0, 1 };
static const struct schema flag = { INT_ENUM(zero_one) };
static const struct schema flag_n = { INT_ENUM(zero_one), .nullable = true };
/* clktype: 0 none, 1 unknown, 2 embedded browser, 3 native browser */
static const int clktypes[] = { 0, 1, 2, 3 };
static const struct schema clktype = { INT_ENUM(clktypes) };
/* unit: 1 DIPS, 2 inches, 3 centimeters */
static const int units[] = { 1, 2, 3 };
static const struct schema unit = { INT_ENUM(units) };
static const struct schema unit_n = { INT_ENUM(units), .nullable = true };
/* video linear: 0 unknown, 1 linear, 2 non-linear */
static const int linears[] = { 0, 1, 2 };
static const struct schema linear = { INT_ENUM(linears) };
/* native video linearity: 1 linear, 2 non-linear */
static const int linearities[] = { 1, 2 };
static const struct schema linearity_n = { INT_ENUM(linearities), .nullable = true };

static const struct schema str_array = { .type = SCHEMA_ARRAY, .items = &str };
static const struct schema str_array_n = { .type = SCHEMA_ARRAY, .items = &str, .nullable = true };
static const struct schema integer_array = { .type = SCHEMA_ARRAY, .items = &integer };
static const struct schema u8_array_n = { .type = SCHEMA_ARRAY, .items = &u8, .nullable = true };
static const struct schema u16_array = { .type = SCHEMA_ARRAY, .items = &u16 };
static const struct schema u16_array_n = { .type = SCHEMA_ARRAY, .items = &u16, .nullable = true };
static const struct schema count_array_n = { .type = SCHEMA_ARRAY, .items = &count, .nullable = true };

/* ---- enumerations (the spec's table, exact values) -------------------------- */

static const struct schema ad_unit_status = {
    .name = "AdUnitStatus", .type = SCHEMA_STRING, .enum_values = adserve_unit_status_names,
    .description = "Operational status; only ACTIVE serves.",
};

static const char *const display_contexts[] = {
    "ContentCentric", "ArticleContent", "VideoContent", "AudioContent", "ImageContent",
    "UserGeneratedContent", "SocialCentric", "EmailContent", "ChatContent", "ProductContext",
    "AppStore", "ProductReviews", NULL,
};
static const struct schema display_context_n = {
    .name = "DisplayContext", .type = SCHEMA_STRING, .enum_values = display_contexts,
    .nullable = true,
};

static const char *const placement_positions[] = {
    "Unknown", "AboveTheFold", "Locked", "BelowTheFold", "Header", "Footer", "Sidebar",
    "FullScreen", NULL,
};
static const struct schema placement_position_n = {
    .name = "PlacementPosition", .type = SCHEMA_STRING, .enum_values = placement_positions,
    .nullable = true,
};

static const char *const display_placement_types[] = {
    "Feed", "AtomicUnit", "OutsideCore", "RecommendationWidget", NULL,
};
static const struct schema display_placement_types_n = {
    .name = "DisplayPlacementTypes", .type = SCHEMA_STRING,
    .enum_values = display_placement_types, .nullable = true,
};

static const char *const expandable_directions[] = {
    "Left", "Right", "Up", "Down", "FullScreen", "ResizeMinimize", NULL,
};
static const struct schema expandable_direction = {
    .name = "ExpandableDirection", .type = SCHEMA_STRING, .enum_values = expandable_directions,
};
static const struct schema expandable_direction_n = {
    .name = "ExpandableDirection", .type = SCHEMA_STRING, .enum_values = expandable_directions,
    .nullable = true,
};
static const struct schema expandable_direction_array_n = {
    .type = SCHEMA_ARRAY, .items = &expandable_direction, .nullable = true,
};

static const char *const companion_types[] = { "Static", "HTML", "IFrame", NULL };
static const struct schema companion_type = {
    .name = "CompanionType", .type = SCHEMA_STRING, .enum_values = companion_types,
};
static const struct schema companion_type_array_n = {
    .type = SCHEMA_ARRAY, .items = &companion_type, .nullable = true,
};

static const char *const delivery_methods[] = { "Streaming", "Progressive", "Download", NULL };
static const struct schema delivery_method = {
    .name = "DeliveryMethod", .type = SCHEMA_STRING, .enum_values = delivery_methods,
};
static const struct schema delivery_method_array_n = {
    .type = SCHEMA_ARRAY, .items = &delivery_method, .nullable = true,
};

static const char *const playback_cessation_modes[] = {
    "OnVideoCompletion", "OnLeavingViewport", "OnLeavingViewportContinuesAsAUnit", NULL,
};
static const struct schema playback_cessation_mode_n = {
    .name = "PlaybackCessationMode", .type = SCHEMA_STRING,
    .enum_values = playback_cessation_modes, .nullable = true,
};

static const int playback_methods[] = { 1, 2, 3, 4, 5, 6, 7 };
static const struct schema playback_method = {
    .name = "PlaybackMethod", INT_ENUM(playback_methods),
};
static const struct schema playback_method_array = {
    .type = SCHEMA_ARRAY, .items = &playback_method,
};

static const int event_tracking_methods[] = { 1, 2 };
static const struct schema event_tracking_method = {
    .name = "EventTrackingMethod", INT_ENUM(event_tracking_methods),
};
static const struct schema event_tracking_method_array_n = {
    .type = SCHEMA_ARRAY, .items = &event_tracking_method, .nullable = true,
};

static const int event_types[] = { 1, 2, 3, 4, 5 };
static const struct schema event_type = { .name = "EventType", INT_ENUM(event_types) };

static const struct schema ad_log_tracking_mode_n = {
    .name = "AdLogTrackingMode", .type = SCHEMA_STRING, .enum_values = adserve_tracking_names,
    .nullable = true,
    .description = "When an impression is recorded; missing or null means on_event_tracker.",
};

static const struct schema candidate_filtering_method = {
    .name = "CandidateFilteringMethod", .type = SCHEMA_STRING,
    .enum_values = adserve_filtering_names,
};

static const struct schema fallback_activation = {
    .name = "FallbackActivation", .type = SCHEMA_STRING,
    .enum_values = adserve_activation_names,
};

static const struct schema fallback_order = {
    .name = "FallbackOrder", .type = SCHEMA_STRING, .enum_values = adserve_order_names,
};

static const struct schema op = { .name = "Op", .type = SCHEMA_STRING,
                                  .enum_values = adserve_op_names };

/* Video enumerations the spec names in the VideoPlacement table. */
static const int pod_sequences[] = { -1, 0, 1 };
static const struct schema pod_sequence_n = {
    .name = "PodSequence", INT_ENUM(pod_sequences), .nullable = true,
    .description = "-1 last, 0 any, 1 first",
};
static const int slot_positions[] = { -1, 0, 1, 2 };
static const struct schema slot_position_in_pod_n = {
    .name = "SlotPositionInPod", INT_ENUM(slot_positions), .nullable = true,
    .description = "-1 last, 0 any, 1 first, 2 first or last",
};
static const int video_subtypes[] = { 1, 2, 3, 4, 5 };
static const struct schema placement_subtype_video = {
    .name = "PlacementSubtypeVideo", INT_ENUM(video_subtypes),
    .description = "1 in-stream, 2 in-banner, 3 in-article, 4 in-feed, 5 interstitial",
};

/* ---- AdUnitSize ----------------------------------------------------------------- */

static const struct schema_field ad_unit_size_fields[] = {
    { "w", &count, .required = true, .description = "width in pixels" },
    { "h", &count, .required = true, .description = "height in pixels" },
    { NULL },
};
static const struct schema ad_unit_size = {
    .name = "AdUnitSize", .type = SCHEMA_OBJECT, .fields = ad_unit_size_fields,
};
static const struct schema ad_unit_size_array_n = {
    .type = SCHEMA_ARRAY, .items = &ad_unit_size, .nullable = true,
};

/* ---- AdUnitExt ---------------------------------------------------------------- */

static const char *const approval_methods[] = { "admin", "delegate", NULL };
static const struct schema approval_method = {
    .type = SCHEMA_STRING, .enum_values = approval_methods,
};
static const struct schema metric_mode = { .type = SCHEMA_STRING,
                                           .enum_values = adserve_metric_mode_names };
static const char *const payouts[] = { "rates", "revenue_share", "none", NULL };
static const struct schema payout = { .type = SCHEMA_STRING, .enum_values = payouts };
static const char *const responsive_modes[] = { "fixed", "resized", NULL };
static const struct schema responsive = { .type = SCHEMA_STRING, .enum_values = responsive_modes };
static const struct schema render_mode = { .type = SCHEMA_STRING,
                                           .enum_values = adserve_render_names };

static const struct schema_field ad_unit_ext_native_fields[] = {
    { "enabled", &flag, .dflt = "0" },
    { "render_mode", &render_mode, .dflt = "\"html\"" },
    { NULL },
};
static const struct schema ad_unit_ext_native = {
    .name = "AdUnitExtNative", .type = SCHEMA_OBJECT, .fields = ad_unit_ext_native_fields,
};

static const struct schema_field implicit_app_inference_fields[] = {
    { .name = "android_bundle", .schema = &str_n },
    { .name = "app_name", .schema = &str_n },
    { .name = "cat", .schema = &str_array_n },
    { .name = "ios_bundle", .schema = &str_n },
    { "ua_keywords", &str_array, .dflt = "[]" },
    { NULL },
};
static const struct schema implicit_app_inference_n = {
    .name = "ImplicitAppInference", .type = SCHEMA_OBJECT, .nullable = true,
    .fields = implicit_app_inference_fields,
    .description = "Fallback mobile-app inference via user-agent keyword mapping.",
};

static const struct schema_field publisher_settings_fields[] = {
    { .name = "company", .schema = &str_n },
    { .name = "domain", .schema = &str_n },
    { .name = "ext", .schema = &any },
    { .name = "id", .schema = &str_n },
    { .name = "name", .schema = &str_n },
    { .name = "page", .schema = &str_n },
    { .name = "seller_id", .schema = &str_n },
    { NULL },
};
static const struct schema publisher_settings_n = {
    .name = "PublisherSettings", .type = SCHEMA_OBJECT, .nullable = true,
    .fields = publisher_settings_fields,
    .description = "Publisher identity sent on the OpenRTB site/app object.",
};

/* Every field optional; the defaults are the spec's table. The spec names
 * default_cpa and default_cpc as cost fields and leaves the rest open:
 * target_ecpm (a target effective cost per mille) is a cost as well, so it
 * is held to >= 0 too. */
static const struct schema_field ad_unit_ext_fields[] = {
    { "algorithm", &str, .dflt = "\"" ADSERVE_V_AXA0 "\"",
      .description = "a recommendation's own items: axa0, the associated items pool of the "
                     "item viewed; coview, the items users viewed after it; another name "
                     "gives none (the fallbacks still serve)" },
    { "approval_method", &approval_method, .dflt = "\"admin\"" },
    { "bcat", &str_array, .dflt = "[]",
      .description = "blocked advertiser categories (IAB taxonomy plus sensitive categories)" },
    { "default_cpa", &cost, .dflt = "0",
      .description = "CPA for CPA line items without their own target" },
    { "default_cpc", &cost, .dflt = "0",
      .description = "CPC for CPC line items without their own target" },
    { "display", &free_object, .dflt = "{\"enabled\":0}" },
    { .name = "external_raw_data", .schema = &any },
    { .name = "implicit_app_inference", .schema = &implicit_app_inference_n },
    { "metric_mode", &metric_mode, .dflt = "\"all\"" },
    { "native", &ad_unit_ext_native, .dflt = "{\"enabled\":0,\"render_mode\":\"html\"}" },
    { .name = "passback", .schema = &any,
      .description = "a map of passback ad tags (any JSON): serving answers a request nothing "
                     "fills with its \"display\" member, HTML markup of up to 16 KiB, as "
                     "ad.passback; other members are kept and not served" },
    { "payout", &payout, .dflt = "\"rates\"" },
    { "public_url", &url_n,
      .description = "overrides the global public URL of event tracker URLs" },
    { .name = "publisher", .schema = &publisher_settings_n },
    { "recommendation", &free_object, .dflt = "{\"enabled\":0}" },
    { "responsive", &responsive, .dflt = "\"fixed\"" },
    { "target_ecpm", &cost, .dflt = "0", .description = "target effective cost per mille" },
    { .name = "target_service", .schema = &str_n,
      .description = "an external recommender for a recommendation unit: the name (1 to 64 "
                     "letters, digits, _ or -) of the nginx location adserve_rec_services + "
                     "name that reaches it; it replaces the algorithm" },
    { "video", &free_object, .dflt = "{\"enabled\":0}" },
    { NULL },
};
const struct schema schema_ad_unit_ext = {
    .name = "AdUnitExt", .type = SCHEMA_OBJECT, .fields = ad_unit_ext_fields,
    .description = "Extension fields; unknown properties are rejected.",
};
static const struct schema developer_ad_unit_ext = {
    .name = "DeveloperAdUnitExt", .type = SCHEMA_OBJECT, .fields = ad_unit_ext_fields,
    .description = "AdUnitExt on input: omitted fields take their defaults.",
};
static const struct schema_field developer_ad_unit_ext_request_fields[] = {
    { "ext", &developer_ad_unit_ext, .required = true,
      .description = "replaces the whole stored ext" },
    { NULL },
};
const struct schema schema_developer_ad_unit_ext_request = {
    .name = "DeveloperAdUnitExtRequest", .type = SCHEMA_OBJECT,
    .fields = developer_ad_unit_ext_request_fields,
};

/* ---- DisplayPlacement ----------------------------------------------------------- */

static const struct schema_field display_format_fields[] = {
    { .name = "expdir", .schema = &expandable_direction_n },
    { .name = "ext", .schema = &any },
    { .name = "h", .schema = &count_n },
    { .name = "hratio", .schema = &count_n },
    { .name = "w", .schema = &count_n },
    { .name = "wratio", .schema = &count_n },
    { NULL },
};
static const struct schema display_format = {
    .name = "DisplayFormat", .type = SCHEMA_OBJECT, .fields = display_format_fields,
};
static const struct schema display_format_n = {
    .name = "DisplayFormat", .type = SCHEMA_OBJECT, .fields = display_format_fields,
    .nullable = true,
};

/* wjs and wpx: "integer, default 1"; the spec gives no bounds, so none. */
static const struct schema_field event_spec_fields[] = {
    { "type", &event_type, .required = true },
    { .name = "api", .schema = &u16_array_n },
    { .name = "ext", .schema = &any },
    { "jstrk", &str_array_n, .description = "script trackers" },
    { .name = "method", .schema = &event_tracking_method_array_n },
    { "pxtrk", &str_array_n, .description = "pixel trackers" },
    { "wjs", &integer, .dflt = "1" },
    { "wpx", &integer, .dflt = "1" },
    { NULL },
};
static const struct schema event_spec = {
    .name = "EventSpec", .type = SCHEMA_OBJECT, .fields = event_spec_fields,
};
static const struct schema event_spec_array_n = {
    .type = SCHEMA_ARRAY, .items = &event_spec, .nullable = true,
};

/* priv: "integer, default 0"; the Limits table bounds it 0..255. */
static const struct schema_field display_placement_fields[] = {
    { .name = "ampren", .schema = &u8_n },
    { .name = "api", .schema = &u16_array_n },
    { "clktype", &clktype, .dflt = "1",
      .description = "0 none, 1 unknown, 2 embedded browser, 3 native browser" },
    { .name = "context", .schema = &display_context_n },
    { .name = "ctype", .schema = &u8_array_n },
    { .name = "displayfmt", .schema = &display_format },
    { .name = "event", .schema = &event_spec_array_n },
    { .name = "ext", .schema = &any },
    { "h", &length_n, .dflt = "250", .description = "height in `unit`" },
    { "w", &length_n, .dflt = "300", .description = "width in `unit`" },
    { .name = "ifrbust", .schema = &str_array_n },
    { "mime", &str_array, .description = "supported MIME types" },
    { .name = "pos", .schema = &placement_position_n },
    { "priv", &u8, .dflt = "0", .description = "whether to show a privacy link" },
    { .name = "ptype", .schema = &display_placement_types_n },
    { .name = "topframe", .schema = &u8_n },
    { "unit", &unit, .dflt = "2", .description = "1 DIPS, 2 inches, 3 centimeters" },
    { NULL },
};
static const struct schema display_placement = {
    .name = "DisplayPlacement", .type = SCHEMA_OBJECT, .fields = display_placement_fields,
};

/* ---- VideoPlacement --------------------------------------------------------------- */

/* A companion's display: the display fields, every one nullable, with
 * clktype, priv and unit as integers 0..255 defaulting to 1, 0 and 2.
 * Choice: those three are the only defaults the spec states here, so w and
 * h have none (a companion's size is its creative's). */
static const struct schema_field companion_display_fields[] = {
    { .name = "ampren", .schema = &u8_n },
    { .name = "api", .schema = &u16_array_n },
    { "clktype", &u8_n, .dflt = "1" },
    { .name = "context", .schema = &display_context_n },
    { .name = "ctype", .schema = &u8_array_n },
    { .name = "displayfmt", .schema = &display_format_n },
    { .name = "event", .schema = &event_spec_array_n },
    { .name = "ext", .schema = &any },
    { .name = "h", .schema = &length_n },
    { .name = "w", .schema = &length_n },
    { .name = "ifrbust", .schema = &str_array_n },
    { .name = "mime", .schema = &str_array_n },
    { .name = "pos", .schema = &placement_position_n },
    { "priv", &u8_n, .dflt = "0" },
    { .name = "ptype", .schema = &display_placement_types_n },
    { .name = "topframe", .schema = &u8_n },
    { "unit", &u8_n, .dflt = "2" },
    { NULL },
};
static const struct schema companion_display_n = {
    .name = "CompanionDisplayPlacement", .type = SCHEMA_OBJECT, .nullable = true,
    .fields = companion_display_fields,
};

/* Choice: "all optional" and every other member nullable, so display is too. */
static const struct schema_field companion_fields[] = {
    { .name = "display", .schema = &companion_display_n },
    { .name = "ext", .schema = &any },
    { .name = "id", .schema = &str_n },
    { .name = "vcm", .schema = &integer_n },
    { NULL },
};
static const struct schema companion = {
    .name = "Companion", .type = SCHEMA_OBJECT, .fields = companion_fields,
};
static const struct schema companion_array_n = {
    .type = SCHEMA_ARRAY, .items = &companion, .nullable = true,
};

/* Choices: sizes, durations and skip times are counts, so >= 0; delay
 * and maxext keep the spec's plain "integer" (OpenRTB uses negative
 * values there: -1 mid-roll, -2 post-roll, -1 unlimited extension);
 * mincpmpersec is a price, so >= 0 like every cost; skip is 0 or 1 as
 * the spec lists. */
static const struct schema_field video_placement_fields[] = {
    { .name = "api", .schema = &u16_array_n },
    { "boxing", &u8_n, .dflt = "1" },
    { "clktype", &clktype, .dflt = "1" },
    { .name = "comp", .schema = &companion_array_n },
    { .name = "comptype", .schema = &companion_type_array_n },
    { .name = "ctype", .schema = &integer_array },
    { "delay", &integer, .dflt = "0", .description = "ad start delay in seconds" },
    { .name = "delivery", .schema = &delivery_method_array_n },
    { .name = "expdir", .schema = &expandable_direction_array_n },
    { .name = "ext", .schema = &any },
    { "h", &count, .dflt = "300", .description = "height in px" },
    { "w", &count, .dflt = "480", .description = "width in px" },
    { "linear", &linear, .dflt = "0", .description = "0 unknown, 1 linear, 2 non-linear" },
    { .name = "maxbitr", .schema = &count_n },
    { .name = "minbitr", .schema = &count_n },
    { "maxdur", &count, .dflt = "0", .description = "seconds" },
    { "mindur", &count, .dflt = "0", .description = "seconds" },
    { "maxext", &integer_n, .dflt = "0" },
    { .name = "maxseq", .schema = &count_n },
    { .name = "mime", .schema = &str_array },
    { .name = "mincpmpersec", .schema = &cost_n },
    { .name = "overlayexpdir", .schema = &expandable_direction_array_n },
    { .name = "playend", .schema = &playback_cessation_mode_n },
    { .name = "playmethod", .schema = &playback_method_array },
    { .name = "poddur", .schema = &count_n },
    { .name = "podid", .schema = &count_n },
    { "podseq", &pod_sequence_n, .dflt = "0" },
    { .name = "pos", .schema = &placement_position_n },
    { "ptype", &placement_subtype_video, .dflt = "1" },
    { .name = "rqddurs", .schema = &count_array_n },
    { "skip", &flag, .dflt = "0", .description = "0 not skippable, 1 skippable" },
    { "skipafter", &count, .dflt = "0", .description = "seconds until the skip button appears" },
    { "skipmin", &count, .dflt = "0",
      .description = "minimum duration in seconds before the skip button" },
    { "slotinpod", &slot_position_in_pod_n, .dflt = "0" },
    { "unit", &unit_n, .dflt = "2" },
    { NULL },
};
static const struct schema video_placement = {
    .name = "VideoPlacement", .type = SCHEMA_OBJECT, .fields = video_placement_fields,
};

/* ---- NativePlacement ---------------------------------------------------------------- */

static const struct schema_field native_title_fields[] = {
    { "len", &count, .required = true },
    { .name = "ext", .schema = &any },
    { NULL },
};
static const struct schema native_title_n = {
    .name = "NativeTitleRequest", .type = SCHEMA_OBJECT, .fields = native_title_fields,
    .nullable = true,
};

static const struct schema_field native_image_fields[] = {
    { .name = "type", .schema = &u16_n },
    { .name = "w", .schema = &count_n },
    { .name = "h", .schema = &count_n },
    { .name = "wmin", .schema = &count_n },
    { .name = "hmin", .schema = &count_n },
    { .name = "mimes", .schema = &str_array_n },
    { .name = "ext", .schema = &any },
    { NULL },
};
static const struct schema native_image_n = {
    .name = "NativeImageRequest", .type = SCHEMA_OBJECT, .fields = native_image_fields,
    .nullable = true,
};

static const struct schema_field native_video_fields[] = {
    { "minduration", &count, .required = true },
    { "maxduration", &count, .required = true },
    { "mimes", &str_array, .required = true },
    { "protocols", &u16_array, .required = true },
    { .name = "linearity", .schema = &linearity_n },
    { .name = "ext", .schema = &any },
    { NULL },
};
static const struct schema native_video_n = {
    .name = "NativeVideoRequest", .type = SCHEMA_OBJECT, .fields = native_video_fields,
    .nullable = true,
};

static const struct schema_field native_data_fields[] = {
    { "type", &u16, .required = true },
    { .name = "len", .schema = &count_n },
    { .name = "ext", .schema = &any },
    { NULL },
};
static const struct schema native_data_n = {
    .name = "NativeDataRequest", .type = SCHEMA_OBJECT, .fields = native_data_fields,
    .nullable = true,
};

/* Choice: the asset id is a non-negative integer (OpenRTB's asset ids
 * are indexes); "present" means present and not null. */
static const struct schema_field asset_request_fields[] = {
    { "id", &count, .required = true },
    { .name = "required", .schema = &flag_n },
    { .name = "ext", .schema = &any },
    { .name = "title", .schema = &native_title_n },
    { .name = "img", .schema = &native_image_n },
    { .name = "video", .schema = &native_video_n },
    { .name = "data", .schema = &native_data_n },
    { NULL },
};
static const struct schema asset_request = {
    .name = "AssetRequest", .type = SCHEMA_OBJECT, .fields = asset_request_fields,
    .require_one_of = adserve_asset_names,
    .description = "At least one of title, img, video, data is present and not null.",
};
const struct schema schema_asset_requests = { .type = SCHEMA_ARRAY, .items = &asset_request,
                                              .max_items = ADSERVE_NATIVE_ASSETS_MAX };

static const struct schema plcmtcnt_n = { .type = SCHEMA_INTEGER, RANGE(1, 255), .nullable = true };
static const struct schema_field native_placement_fields[] = {
    { "assets", &schema_asset_requests, .dflt = "[]" },
    { "context", &u16_n,
      .description = "1 content-centric, 2 social-centric, 3 product context" },
    { .name = "contextsubtype", .schema = &u16_n },
    { .name = "ext", .schema = &any },
    { .name = "plcmtcnt", .schema = &plcmtcnt_n },
    { "plcmttype", &u16_n,
      .description = "1 feed, 2 atomic unit, 3 outside of content, 4 recommendation widget" },
    { NULL },
};
static const struct schema native_placement = {
    .name = "NativePlacement", .type = SCHEMA_OBJECT, .fields = native_placement_fields,
    .description = "Based on the OpenRTB Native Ads 1.2 request object.",
};

/* ---- RecommendationPlacement: Expr ----------------------------------------------- */

/* Expr refers to itself: declared here, defined below. */
static const struct schema expr;
static const struct schema expr_array = { .type = SCHEMA_ARRAY, .items = &expr };

static const struct schema_field compare_fields[] = {
    { "lhs", &str_array, .required = true },
    { "op", &op, .required = true },
    { "rhs", &any, .required = true },
    { NULL },
};
static const struct schema compare = {
    .name = "Compare", .type = SCHEMA_OBJECT, .fields = compare_fields,
};

static const char *const tag_cmp[] = { ADSERVE_V_EXPR_CMP, NULL },
                  *const tag_and[] = { ADSERVE_V_EXPR_AND, NULL },
                  *const tag_or[] = { ADSERVE_V_EXPR_OR, NULL },
                  *const tag_not[] = { ADSERVE_V_EXPR_NOT, NULL };
static const struct schema type_cmp = { .type = SCHEMA_STRING, .enum_values = tag_cmp };
static const struct schema type_and = { .type = SCHEMA_STRING, .enum_values = tag_and };
static const struct schema type_or = { .type = SCHEMA_STRING, .enum_values = tag_or };
static const struct schema type_not = { .type = SCHEMA_STRING, .enum_values = tag_not };

static const struct schema_field expr_cmp_fields[] = {
    { "type", &type_cmp, .required = true },
    { "data", &compare, .required = true },
    { NULL },
};
static const struct schema_field expr_and_fields[] = {
    { "type", &type_and, .required = true },
    { "data", &expr_array, .required = true },
    { NULL },
};
static const struct schema_field expr_or_fields[] = {
    { "type", &type_or, .required = true },
    { "data", &expr_array, .required = true },
    { NULL },
};
static const struct schema_field expr_not_fields[] = {
    { "type", &type_not, .required = true },
    { "data", &expr, .required = true },
    { NULL },
};
static const struct schema expr_cmp = { .name = "ExprCmp", .type = SCHEMA_OBJECT,
                                        .fields = expr_cmp_fields };
static const struct schema expr_and = { .name = "ExprAnd", .type = SCHEMA_OBJECT,
                                        .fields = expr_and_fields };
static const struct schema expr_or = { .name = "ExprOr", .type = SCHEMA_OBJECT,
                                       .fields = expr_or_fields };
static const struct schema expr_not = { .name = "ExprNot", .type = SCHEMA_OBJECT,
                                        .fields = expr_not_fields };
static const struct schema_variant expr_variants[] = {
    { ADSERVE_V_EXPR_CMP, &expr_cmp }, { ADSERVE_V_EXPR_AND, &expr_and },
    { ADSERVE_V_EXPR_OR, &expr_or }, { ADSERVE_V_EXPR_NOT, &expr_not },
    { NULL },
};
static const struct schema expr = {
    .name = "Expr", .type = SCHEMA_UNION, .discriminator = "type", .variants = expr_variants,
};
/* Exported (schemas.h): a line item's targeting.kv is the same Expr. */
const struct schema schema_expr_n = {
    .name = "Expr", .type = SCHEMA_UNION, .discriminator = "type", .variants = expr_variants,
    .nullable = true,
};

/* ---- RecommendationPlacement: fallbacks ---------------------------------------- */

static const struct schema_field fallback_item_fields[] = {
    { "id", &str, .required = true, .description = "a catalog item id" },
    { "expire", &date_time_n, .description = "absent means never" },
    { NULL },
};
static const struct schema fallback_item = {
    .name = "FallbackItem", .type = SCHEMA_OBJECT, .fields = fallback_item_fields,
};
static const struct schema fallback_item_array = { .type = SCHEMA_ARRAY, .items = &fallback_item,
                                                   .max_items = ADSERVE_PRESET_ITEMS_MAX };

static const char *const tag_popular[] = { ADSERVE_V_POPULAR, NULL },
                  *const tag_preset[] = { ADSERVE_V_PRESET, NULL },
                  *const tag_snapshot[] = { ADSERVE_V_SNAPSHOT, NULL };
static const struct schema type_popular = { .type = SCHEMA_STRING, .enum_values = tag_popular };
static const struct schema type_preset = { .type = SCHEMA_STRING, .enum_values = tag_preset };
static const struct schema type_snapshot = { .type = SCHEMA_STRING, .enum_values = tag_snapshot };

static const struct schema_field fallback_popular_fields[] = {
    { "type", &type_popular, .required = true },
    { "activation", &fallback_activation, .dflt = SCHEMA_JSON_STR(ADSERVE_V_EXCEPT_TIMEOUT) },
    { "serving_context", &str, .dflt = "\"all\"",
      .description = "the context queried within the popularity pool" },
    { NULL },
};
static const struct schema_field fallback_preset_fields[] = {
    { "type", &type_preset, .required = true },
    { "activation", &fallback_activation, .dflt = SCHEMA_JSON_STR(ADSERVE_V_ALWAYS) },
    { "order", &fallback_order, .dflt = SCHEMA_JSON_STR(ADSERVE_V_SEQUENTIAL) },
    { "items", &fallback_item_array, .dflt = "[]" },
    { NULL },
};
static const struct schema_field fallback_snapshot_fields[] = {
    { "type", &type_snapshot, .required = true },
    { "path", &str, .required = true,
      .description = "its file of catalog item ids, one per line, relative to the folder the "
                     "module's adserve_rec_snapshots names; a path that could leave that "
                     "folder is refused" },
    { "activation", &fallback_activation, .dflt = SCHEMA_JSON_STR(ADSERVE_V_ALWAYS) },
    { "order", &fallback_order, .dflt = SCHEMA_JSON_STR(ADSERVE_V_SEQUENTIAL) },
    { NULL },
};
static const struct schema fallback_popular = { .name = "FallbackPopular", .type = SCHEMA_OBJECT,
                                                .fields = fallback_popular_fields };
static const struct schema fallback_preset = { .name = "FallbackPreset", .type = SCHEMA_OBJECT,
                                               .fields = fallback_preset_fields };
static const struct schema fallback_snapshot = { .name = "FallbackSnapshot", .type = SCHEMA_OBJECT,
                                                 .fields = fallback_snapshot_fields };
static const struct schema_variant fallback_variants[] = {
    { ADSERVE_V_POPULAR, &fallback_popular }, { ADSERVE_V_PRESET, &fallback_preset },
    { ADSERVE_V_SNAPSHOT, &fallback_snapshot }, { NULL },
};
static const struct schema recommendation_fallback = {
    .name = "RecommendationFallback", .type = SCHEMA_UNION, .discriminator = "type",
    .variants = fallback_variants,
};
static const struct schema recommendation_fallback_array_n = {
    .type = SCHEMA_ARRAY, .items = &recommendation_fallback, .nullable = true,
    .max_items = ADSERVE_FALLBACKS_MAX,
    .description = "a chain tried in order until every slot is filled",
};

/* ---- RecommendationPlacement ------------------------------------------------------ */

static const struct schema_field candidate_filtering_fields[] = {
    { "method", &candidate_filtering_method, .dflt = "\"" ADSERVE_V_NO_FILTER "\"" },
    { NULL },
};
static const struct schema candidate_filtering_n = {
    .name = "CandidateFiltering", .type = SCHEMA_OBJECT, .fields = candidate_filtering_fields,
    .nullable = true,
};

static const struct schema topn = { .type = SCHEMA_INTEGER, RANGE(0, 99) };
static const struct schema_field recommendation_placement_fields[] = {
    { "topn", &topn, .dflt = "10", .description = "number of items to recommend" },
    { "ext", &free_object, .dflt = "{}" },
    { .name = "ad_log_tracking_mode", .schema = &ad_log_tracking_mode_n },
    { .name = "candidate_filtering", .schema = &candidate_filtering_n },
    { .name = "content_filter_rule", .schema = &schema_expr_n },
    { .name = "fallback", .schema = &recommendation_fallback_array_n },
    { NULL },
};
const struct schema schema_recommendation_placement = {
    .name = "RecommendationPlacement", .type = SCHEMA_OBJECT,
    .fields = recommendation_placement_fields,
};

/* ---- AdUnit -------------------------------------------------------------------------- */

/* Choices beyond the spec's table:
 *   - parent_id (API.md): the parent ad unit, null for a root; serving
 *     reads it for targeting through ancestors;
 *   - is_active is read-only and set by the server to status == ACTIVE, so
 *     the two can never disagree ("superseded by status");
 *   - created_at and updated_at are set by the server on every write, so
 *     they are never null in practice;
 *   - no is a client's free integer (its meaning is not shown). */
static const struct schema_field ad_unit_fields[] = {
    { "id", &uuid, .required = true, .read_only = true,
      .description = "id of the ad unit" },
    { "code", &label, .required = true, .description = "ad unit code identifier (unique)" },
    { "created_by", &uuid, .required = true, .read_only = true,
      .description = "id of the creating user" },
    { "name", &label, .required = true },
    { "path", &str, .required = true, .read_only = true,
      .description = "the parent's path, a slash and the own id; a root's path is its id" },
    { "parent_id", &uuid_n, .dflt = "null",
      .description = "the parent ad unit; changing it moves the unit and its subtree" },
    { "ad_unit_sizes", &ad_unit_size_array_n,
      .description = "targeting sizes; display/video w and h govern rendering" },
    { "created_at", &date_time_n, .read_only = true },
    { "updated_at", &date_time_n, .read_only = true },
    { .name = "description", .schema = &str_n },
    { .name = "display", .schema = &display_placement },
    { .name = "ext", .schema = &schema_ad_unit_ext },
    { "gpid", &str_n, .description = "canonical placement id for OpenRTB imp.ext.gpid" },
    { "instl", &flag, .dflt = "0", .description = "1: interstitial placement" },
    { "is_active", &boolean_n, .read_only = true, .description = "status == ACTIVE" },
    { "native", &native_placement, .dflt = "{\"assets\":[]}" },
    { .name = "no", .schema = &integer_n },
    { "recommendation", &schema_recommendation_placement, .dflt = "{\"ext\":{},\"topn\":10}" },
    { "status", &ad_unit_status, .dflt = SCHEMA_JSON_STR(ADSERVE_V_INACTIVE) },
    { .name = "video", .schema = &video_placement },
    { NULL },
};


const struct schema schema_ad_unit = {
    .name = "AdUnit", .type = SCHEMA_OBJECT, .fields = ad_unit_fields,
};
const struct schema schema_ad_unit_patch = {
    .name = "AdUnitPatch", .type = SCHEMA_OBJECT, .fields = ad_unit_fields, .doc_partial = true,
    .description = "Only the fields sent change; a nested object sent replaces the stored one "
                   "whole (its omitted fields take their defaults).",
};

/* ---- GET /api/ad-units query ----------------------------------------------------- */

static const struct schema q = { .type = SCHEMA_STRING, .min_length = 1, .max_length = 256 };
static const struct schema_field ad_unit_list_query_fields[] = {
    SCHEMA_PAGING_FIELDS,
    { .name = "status", .schema = &ad_unit_status },
    { .name = "parent_id", .schema = &uuid },
    { "q", &q, .description = "a substring of the name or the code" },
    { NULL },
};
const struct schema schema_ad_unit_list_query = {
    .type = SCHEMA_OBJECT, .fields = ad_unit_list_query_fields,
};
