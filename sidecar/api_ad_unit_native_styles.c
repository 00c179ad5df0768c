/* /api/ad-unit-native-styles: which native style an ad unit renders its
 * native ads with in render_mode html (resource.h, README "Native").
 *
 * Inventory: admins and operators only. One link per ad unit (409 on a
 * second), through the adserve:ad_unit_style_links index; ad_unit_id
 * cannot change (409), native_style_id can. Serving reads the links, so
 * their writes bump the revision. */
#include "api.h"

#include "resource.h"
#include "schema_native.h"


static const char *const link_watch[] = { ADSERVE_KEY_AD_UNITS, ADSERVE_KEY_NATIVE_STYLES, NULL };
static const char *const link_immutable[] = { "ad_unit_id", NULL };
static const struct resource_ref link_refs[] = {
    { "ad_unit_id", &resource_ad_units_ref, false },
    { "native_style_id", &resource_native_styles, false },
    { NULL, NULL, false },
};
static const struct resource_index link_indexes[] = {
    { "native_style_id", ADSERVE_KEY_NATIVE_STYLE_LINKS },
    { NULL, NULL },
};
static const struct resource_unique link_uniques[] = {
    { ADSERVE_KEY_AD_UNIT_STYLE_LINKS, false, { "ad_unit_id", NULL },
      "ad_unit_id: the ad unit has a native style already (change its native_style_id)", NULL },
    { NULL, false, { NULL }, NULL, NULL },
};
static const struct resource_filter link_filters[] = {
    { "ad_unit_id", "ad_unit_id", NULL, false },
    { "native_style_id", "native_style_id", ADSERVE_KEY_NATIVE_STYLE_LINKS, false },
    { NULL, NULL, NULL, false },
};

const struct resource resource_ad_unit_native_styles = {
    .name = ADSERVE_RECORD_AD_UNIT_NATIVE_STYLE, .label = "ad unit native style",
    .hash = ADSERVE_KEY_AD_UNIT_NATIVE_STYLES, .location = "/api/ad-unit-native-styles",
    .schema = &schema_ad_unit_native_style,
    .list_query = &schema_ad_unit_native_style_list_query, .filters = link_filters,
    .serving = true, .owner = OWNER_NONE, .watch = link_watch, .immutable = link_immutable,
    .refs = link_refs, .indexes = link_indexes, .uniques = link_uniques,
};

RESOURCE_HANDLERS(ad_unit_native_styles, resource_ad_unit_native_styles)
RESOURCE_DOCS(ad_unit_native_styles, "Ad Unit Native Style", schema_ad_unit_native_style,
              schema_ad_unit_native_style_patch, schema_ad_unit_native_style_list_query,
              "List ad unit native styles, oldest first; filters: ad_unit_id, native_style_id",
              "Give an ad unit its native style (one per ad unit, else 409)",
              "Get an ad unit native style (advertisers: 404)",
              "Change an ad unit's native style (ad_unit_id cannot change: 409)",
              "Delete an ad unit native style (its native ads in html mode stop serving)");

const struct route ad_unit_native_styles_routes[] = {
    { "GET", "/api/ad-unit-native-styles", ad_unit_native_styles_list, INVENTORY_ROLES,
      BODY_NONE, &ad_unit_native_styles_list_doc },
    { "POST", "/api/ad-unit-native-styles", ad_unit_native_styles_create, INVENTORY_ROLES,
      BODY_JSON, &ad_unit_native_styles_create_doc },
    { "GET", "/api/ad-unit-native-styles/{id}", ad_unit_native_styles_get, ROLES_ANY,
      BODY_NONE, &ad_unit_native_styles_get_doc },
    { "PATCH", "/api/ad-unit-native-styles/{id}", ad_unit_native_styles_update, ROLES_ANY,
      BODY_JSON, &ad_unit_native_styles_update_doc },
    { "DELETE", "/api/ad-unit-native-styles/{id}", ad_unit_native_styles_delete, ROLES_ANY,
      BODY_NONE, &ad_unit_native_styles_delete_doc },
};
const size_t ad_unit_native_styles_routes_count =
    sizeof ad_unit_native_styles_routes / sizeof ad_unit_native_styles_routes[0];
