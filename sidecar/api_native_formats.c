/* /api/native-formats: the kinds of native ad, each naming the assets it
 * requires (resource.h, README "Native").
 *
 * Inventory: admins and operators only. assets are AssetRequests as in a
 * NativePlacement, at least one, with distinct ids (422). A creative that
 * names a format carries its required assets (api_creatives.c); a format
 * that creatives or styles name cannot be deleted (409). Serving does not
 * read formats: a creative is checked against its format when written. */
#include "api.h"

#include "resource.h"
#include "schema_native.h"


static const char *const format_watch[] = { ADSERVE_KEY_NATIVE_STYLES, ADSERVE_KEY_CREATIVES,
                                            NULL };
static const struct resource_dependent format_dependents[] = {
    { ADSERVE_KEY_NATIVE_FORMAT_STYLES, false, "native styles" },
    { ADSERVE_KEY_NATIVE_FORMAT_CREATIVES, false, "creatives" },
    { NULL, false, NULL },
};
static const struct resource_filter format_filters[] = {
    { "q", "name", NULL, true },
    { NULL, NULL, NULL, false },
};

/* OpenRTB: asset ids are unique within the request (the response names
 * them back) */
static enum store_status format_check(struct resource_write *w)
{
    const cJSON *assets = cJSON_GetObjectItemCaseSensitive(w->after, "assets");
    const cJSON *a, *b;
    int i = 0;

    if (cJSON_GetArraySize(assets) == 0)
        return resource_refuse(w, 422, "assets: at least one");
    cJSON_ArrayForEach(a, assets) {
        double id = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(a, "id"));

        for (b = a->next; b != NULL; b = b->next)
            if (cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(b, "id")) == id)
                return resource_refuse(w, 422, "assets[%d].id: %g is used twice", i, id);
        i++;
    }
    return STORE_OK;
}

const struct resource resource_native_formats = {
    .name = ADSERVE_RECORD_NATIVE_FORMAT, .label = "native format",
    .hash = ADSERVE_KEY_NATIVE_FORMATS, .location = "/api/native-formats",
    .schema = &schema_native_format, .list_query = &schema_native_format_list_query,
    .filters = format_filters, .serving = false, .owner = OWNER_NONE, .watch = format_watch,
    .dependents = format_dependents, .check = format_check,
};

RESOURCE_HANDLERS(native_formats, resource_native_formats)
RESOURCE_DOCS(native_formats, "Native Format", schema_native_format, schema_native_format_patch,
              schema_native_format_list_query,
              "List native formats, oldest first; filter: q (name substring)",
              "Create a native format; asset ids are distinct (422)",
              "Get a native format (advertisers: 404)",
              "Update a native format (advertisers: 404)",
              "Delete a native format no creative or style names (else 409)");

const struct route native_formats_routes[] = {
    { "GET", "/api/native-formats", native_formats_list, INVENTORY_ROLES, BODY_NONE,
      &native_formats_list_doc },
    { "POST", "/api/native-formats", native_formats_create, INVENTORY_ROLES, BODY_JSON,
      &native_formats_create_doc },
    { "GET", "/api/native-formats/{id}", native_formats_get, ROLES_ANY, BODY_NONE,
      &native_formats_get_doc },
    { "PATCH", "/api/native-formats/{id}", native_formats_update, ROLES_ANY, BODY_JSON,
      &native_formats_update_doc },
    { "DELETE", "/api/native-formats/{id}", native_formats_delete, ROLES_ANY, BODY_NONE,
      &native_formats_delete_doc },
};
const size_t native_formats_routes_count =
    sizeof native_formats_routes / sizeof native_formats_routes[0];
