/* The shapes of native advertising (schema_native.h). The spec names the
 * groups and shows no fields: the choices are written next to the rows,
 * and the README's "Native" section says why. Rules between fields or
 * records (a style's template, a creative's format) are the resources'
 * own, in api_native_*.c. */
#include "schema_native.h"

#include "schema_rows.h"
#include "schemas.h"

#include <stddef.h>

#define RANGE(lo, hi) .has_min = true, .min = (lo), .has_max = true, .max = (hi)

static const struct schema label = { .type = SCHEMA_STRING, .min_length = 1, .max_length = 256 };
static const struct schema text_n = { .type = SCHEMA_STRING, .max_length = 4096,
                                      .nullable = true };
static const struct schema q = { .type = SCHEMA_STRING, .min_length = 1, .max_length = 256,
                                 .description = "a substring of the name, any case" };
static const struct schema url = { .type = SCHEMA_STRING, .format = SCHEMA_FORMAT_URI,
                                   .max_length = 2048 };
static const struct schema pixels0 = { .type = SCHEMA_INTEGER, RANGE(0, 10000) };
static const struct schema mime_n = { .type = SCHEMA_STRING, .min_length = 3, .max_length = 64,
                                      .nullable = true };

/* ---- a NATIVE creative's assets ------------------------------------------------------- */

/* Choice: texts are 1..1024 bytes; a placement's len bounds them further */
static const struct schema native_text = { .type = SCHEMA_STRING, .min_length = 1,
                                           .max_length = ADSERVE_NATIVE_TEXT_MAX };
static const struct schema native_text_n = { .type = SCHEMA_STRING, .min_length = 1,
                                             .max_length = ADSERVE_NATIVE_TEXT_MAX,
                                             .nullable = true };
static const struct schema image_type = {
    .name = "NativeImageType", .type = SCHEMA_STRING, .enum_values = adserve_image_type_names,
    .description = "OpenRTB Native image types: icon 1, main 3",
};
static const struct schema_field native_image_fields[] = {
    { "type", &image_type, .required = true },
    { "url", &url, .required = true, .description = "the image (absolute http(s))" },
    { "w", &pixels0, .required = true },
    { "h", &pixels0, .required = true },
    { "mime", &mime_n, .dflt = "null",
      .description = "e.g. image/png; a placement naming mimes takes only images with one" },
    { NULL },
};
static const struct schema native_image = {
    .name = "NativeImage", .type = SCHEMA_OBJECT, .fields = native_image_fields,
};
static const struct schema native_images = { .type = SCHEMA_ARRAY, .items = &native_image,
                                             .max_items = ADSERVE_NATIVE_IMAGES_MAX };
static const struct schema data_type = {
    .name = "NativeDataType", .type = SCHEMA_STRING, .enum_values = adserve_data_type_names,
    .description = "OpenRTB Native data asset types, 1 sponsored to 12 ctatext, in that order",
};
static const struct schema_field native_data_fields[] = {
    { "type", &data_type, .required = true },
    { "value", &native_text, .required = true },
    { NULL },
};
static const struct schema native_data = {
    .name = "NativeData", .type = SCHEMA_OBJECT, .fields = native_data_fields,
};
static const struct schema native_datas = { .type = SCHEMA_ARRAY, .items = &native_data,
                                            .max_items = ADSERVE_NATIVE_DATA_MAX };

static const struct schema_field native_creative_fields[] = {
    { "title", &native_text_n, .dflt = "null" },
    { "images", &native_images, .dflt = "[]" },
    { "data", &native_datas, .dflt = "[]",
      .description = "one of each type at most" },
    { "video", &schema_video_creative, .dflt = "null",
      .description = "a video asset: served as a VAST 4.2 tag (vasttag)" },
    { NULL },
};
const struct schema schema_native_creative = {
    .name = "NativeCreative", .type = SCHEMA_OBJECT, .fields = native_creative_fields,
    .nullable = true,
    .description = "NATIVE: the assets a native placement's requests are filled from "
                   "(OpenRTB Native 1.2)",
};

/* ---- native formats -------------------------------------------------------------------- */

static const struct schema_field native_format_fields[] = {
    ID_ROW,
    { "name", &label, .required = true },
    { "description", &text_n, .dflt = "null" },
    { "assets", &schema_asset_requests, .required = true,
      .description = "AssetRequests as in a NativePlacement; a creative of this format "
                     "carries every one marked required: 1" },
    META_ROWS,
    { NULL },
};
RESOURCE_SCHEMAS(native_format, "NativeFormat", native_format_fields,
                 "A kind of native ad: the assets it requires.");

static const struct schema_field name_query_fields[] = {
    SCHEMA_PAGING_FIELDS,
    { .name = "q", .schema = &q },
    { NULL },
};
LIST_QUERY(native_format, name_query_fields);
LIST_QUERY(native_style_template, name_query_fields);

/* ---- native style templates and styles ---------------------------------------------------- */

static const struct schema html = { .type = SCHEMA_STRING, .min_length = 1,
                                    .max_length = ADSERVE_NATIVE_TEMPLATE_MAX };
static const struct schema html_n = { .type = SCHEMA_STRING, .min_length = 1,
                                      .max_length = ADSERVE_NATIVE_TEMPLATE_MAX,
                                      .nullable = true };
static const struct schema css_n = { .type = SCHEMA_STRING,
                                     .max_length = ADSERVE_NATIVE_TEMPLATE_MAX,
                                     .nullable = true };

#define TEMPLATE_DOC                                                                        \
    "HTML with placeholders: {{title}} and {{data.<type>}} between tags, {{img.icon}}, "    \
    "{{img.main}} and {{click_url}} in quoted attribute values; none in <script> or "       \
    "<style>. Every value is HTML-escaped."

static const struct schema_field native_style_template_fields[] = {
    ID_ROW,
    { "name", &label, .required = true },
    { "description", &text_n, .dflt = "null" },
    { "html", &html, .required = true, .description = TEMPLATE_DOC },
    { "css", &css_n, .dflt = "null", .description = "goes in a <style> element before html" },
    META_ROWS,
    { NULL },
};
RESOURCE_SCHEMAS(native_style_template, "NativeStyleTemplate", native_style_template_fields,
                 "A starting point for native styles: a style made from it copies its html "
                 "and css.");

static const struct schema_field native_style_fields[] = {
    ID_ROW,
    { "name", &label, .required = true },
    { "native_format_id", &schema_uuid_n, .dflt = "null",
      .description = "the format it is drawn for" },
    { "native_style_template_id", &schema_uuid_n, .dflt = "null",
      .description = "on create without html: its html and css are copied" },
    { "html", &html_n, .dflt = "null",
      .description = TEMPLATE_DOC " Required, unless a template gives it." },
    { "css", &css_n, .dflt = "null", .description = "goes in a <style> element before html" },
    META_ROWS,
    { NULL },
};
RESOURCE_SCHEMAS(native_style, "NativeStyle", native_style_fields,
                 "How a native ad looks in render_mode html: an HTML/CSS template.");

static const struct schema_field native_style_query_fields[] = {
    SCHEMA_PAGING_FIELDS,
    { .name = "native_format_id", .schema = &schema_uuid },
    { .name = "q", .schema = &q },
    { NULL },
};
LIST_QUERY(native_style, native_style_query_fields);

/* ---- ad unit native styles --------------------------------------------------------------- */

static const struct schema_field ad_unit_native_style_fields[] = {
    ID_ROW,
    { "ad_unit_id", &schema_uuid, .required = true,
      .description = "one style per ad unit; cannot change" },
    { "native_style_id", &schema_uuid, .required = true },
    META_ROWS,
    { NULL },
};
RESOURCE_SCHEMAS(ad_unit_native_style, "AdUnitNativeStyle", ad_unit_native_style_fields,
                 "The native style an ad unit renders its native ads with (render_mode "
                 "html).");

static const struct schema_field ad_unit_native_style_query_fields[] = {
    SCHEMA_PAGING_FIELDS,
    { .name = "ad_unit_id", .schema = &schema_uuid },
    { .name = "native_style_id", .schema = &schema_uuid },
    { NULL },
};
LIST_QUERY(ad_unit_native_style, ad_unit_native_style_query_fields);
