/* The shapes of native advertising (schema.h tables): a NATIVE creative's
 * assets, and the resources native formats, native style templates,
 * native styles and ad unit native styles, with their list queries
 * (README "Native"). */
#ifndef ADSERVE_SCHEMA_NATIVE_H
#define ADSERVE_SCHEMA_NATIVE_H

#include "schema.h"

/* a creative's "native" object, or null */
extern const struct schema schema_native_creative;
/* a creative's "video" object, or null: a native ad's video asset too */
extern const struct schema schema_video_creative;

extern const struct schema schema_native_format, schema_native_format_patch,
    schema_native_format_list_query;
extern const struct schema schema_native_style_template, schema_native_style_template_patch,
    schema_native_style_template_list_query;
extern const struct schema schema_native_style, schema_native_style_patch,
    schema_native_style_list_query;
extern const struct schema schema_ad_unit_native_style, schema_ad_unit_native_style_patch,
    schema_ad_unit_native_style_list_query;

#endif
