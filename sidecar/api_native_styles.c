/* /api/native-style-templates and /api/native-styles: how native ads look
 * in render_mode html (resource.h, README "Native").
 *
 * Inventory: admins and operators only. A template's or a style's html
 * and css pass the engine's own check (adserve_native_template_check):
 * known placeholders, each where escaping makes it inert (422 with the
 * reason and the byte offset). A style made with a template and no html
 * copies the template's html and css, so a later change to the template
 * leaves the styles made from it as they are. Serving reads styles (an ad
 * unit's, through /api/ad-unit-native-styles), so their writes bump the
 * revision; a style that an ad unit uses cannot be deleted (409). */
#include "api.h"

#include "adserve_native.h"
#include "resource.h"
#include "schema_native.h"


static enum store_status template_check(struct resource_write *w)
{
    const char *html = json_str_member(w->after, "html");
    const char *css = json_str_member(w->after, "css");
    size_t at;
    const char *why = adserve_native_template_check(html, css, &at);

    return why == NULL ? STORE_OK : resource_refuse(w, 422, "%s (at byte %zu)", why, at);
}

/* ---- templates ---------------------------------------------------------------------- */

static const struct resource_filter name_filters[] = {
    { "q", "name", NULL, true },
    { NULL, NULL, NULL, false },
};

const struct resource resource_native_style_templates = {
    .name = ADSERVE_RECORD_NATIVE_STYLE_TEMPLATE, .label = "native style template",
    .hash = ADSERVE_KEY_NATIVE_STYLE_TEMPLATES, .location = "/api/native-style-templates",
    .schema = &schema_native_style_template,
    .list_query = &schema_native_style_template_list_query, .filters = name_filters,
    .serving = false, .owner = OWNER_NONE, .check = template_check,
};

RESOURCE_HANDLERS(native_style_templates, resource_native_style_templates)
RESOURCE_DOCS(native_style_templates, "Native Style Template", schema_native_style_template,
              schema_native_style_template_patch, schema_native_style_template_list_query,
              "List native style templates, oldest first; filter: q (name substring)",
              "Create a native style template; html and css are checked (422)",
              "Get a native style template (advertisers: 404)",
              "Update a native style template; styles made from it keep their copy",
              "Delete a native style template (styles made from it keep their copy)");

const struct route native_style_templates_routes[] = {
    { "GET", "/api/native-style-templates", native_style_templates_list, INVENTORY_ROLES,
      BODY_NONE, &native_style_templates_list_doc },
    { "POST", "/api/native-style-templates", native_style_templates_create, INVENTORY_ROLES,
      BODY_JSON, &native_style_templates_create_doc },
    { "GET", "/api/native-style-templates/{id}", native_style_templates_get, ROLES_ANY,
      BODY_NONE, &native_style_templates_get_doc },
    { "PATCH", "/api/native-style-templates/{id}", native_style_templates_update, ROLES_ANY,
      BODY_JSON, &native_style_templates_update_doc },
    { "DELETE", "/api/native-style-templates/{id}", native_style_templates_delete, ROLES_ANY,
      BODY_NONE, &native_style_templates_delete_doc },
};
const size_t native_style_templates_routes_count =
    sizeof native_style_templates_routes / sizeof native_style_templates_routes[0];

/* ---- styles --------------------------------------------------------------------------- */

static const char *const style_watch[] = { ADSERVE_KEY_NATIVE_FORMATS,
                                           ADSERVE_KEY_NATIVE_STYLE_TEMPLATES,
                                           ADSERVE_KEY_AD_UNIT_NATIVE_STYLES, NULL };
static const struct resource_ref style_refs[] = {
    { "native_format_id", &resource_native_formats, false },
    { "native_style_template_id", &resource_native_style_templates, false },
    { NULL, NULL, false },
};
static const struct resource_index style_indexes[] = {
    { "native_format_id", ADSERVE_KEY_NATIVE_FORMAT_STYLES },
    { NULL, NULL },
};
static const struct resource_dependent style_dependents[] = {
    { ADSERVE_KEY_NATIVE_STYLE_LINKS, false, "ad units using it" },
    { NULL, false, NULL },
};
static const struct resource_filter style_filters[] = {
    { "native_format_id", "native_format_id", ADSERVE_KEY_NATIVE_FORMAT_STYLES, false },
    { "q", "name", NULL, true },
    { NULL, NULL, NULL, false },
};

/* a field of the template into the style */
static bool copy_member(cJSON *to, const cJSON *from, const char *name)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(from, name);
    cJSON *c = cJSON_Duplicate(v != NULL ? v : cJSON_GetObjectItemCaseSensitive(to, name), 1);

    if (c == NULL)
        return false;
    if (!cJSON_ReplaceItemInObjectCaseSensitive(to, name, c)) {
        cJSON_Delete(c);
        return false;
    }
    return true;
}

static enum store_status style_check(struct resource_write *w)
{
    const cJSON *tpl = resource_loaded(w, "native_style_template_id");

    if (!json_has(w->after, "html") && tpl != NULL) {
        if (!copy_member(w->after, tpl, "html") || !copy_member(w->after, tpl, "css"))
            return STORE_ERROR;
    }
    if (!json_has(w->after, "html"))
        return resource_refuse(w, 422, "html: required, or a native_style_template_id to "
                                       "copy it from");
    return template_check(w);
}

const struct resource resource_native_styles = {
    .name = ADSERVE_RECORD_NATIVE_STYLE, .label = "native style",
    .hash = ADSERVE_KEY_NATIVE_STYLES, .location = "/api/native-styles",
    .schema = &schema_native_style, .list_query = &schema_native_style_list_query,
    .filters = style_filters, .serving = true, .owner = OWNER_NONE, .watch = style_watch,
    .refs = style_refs, .indexes = style_indexes, .dependents = style_dependents,
    .check = style_check,
};

RESOURCE_HANDLERS(native_styles, resource_native_styles)
RESOURCE_DOCS(native_styles, "Native Style", schema_native_style, schema_native_style_patch,
              schema_native_style_list_query,
              "List native styles, oldest first; filters: native_format_id, q (name substring)",
              "Create a native style: its html (or a template's), checked (422)",
              "Get a native style (advertisers: 404)",
              "Update a native style; serving follows within a second",
              "Delete a native style no ad unit uses (else 409)");

const struct route native_styles_routes[] = {
    { "GET", "/api/native-styles", native_styles_list, INVENTORY_ROLES, BODY_NONE,
      &native_styles_list_doc },
    { "POST", "/api/native-styles", native_styles_create, INVENTORY_ROLES, BODY_JSON,
      &native_styles_create_doc },
    { "GET", "/api/native-styles/{id}", native_styles_get, ROLES_ANY, BODY_NONE,
      &native_styles_get_doc },
    { "PATCH", "/api/native-styles/{id}", native_styles_update, ROLES_ANY, BODY_JSON,
      &native_styles_update_doc },
    { "DELETE", "/api/native-styles/{id}", native_styles_delete, ROLES_ANY, BODY_NONE,
      &native_styles_delete_doc },
};
const size_t native_styles_routes_count =
    sizeof native_styles_routes / sizeof native_styles_routes[0];
