/* /api/ad-sources: outside demand, one OpenRTB 2.6 bidder each (resource.h,
 * README "External demand").
 *
 * Inventory: admins and operators (advertisers: 403 on the collection, 404
 * on any id). Rules beyond the shape:
 *   - endpoint_url passes the contract's check (adserve_endpoint_url_ok:
 *     no user info, no fragment), which serving applies again (422);
 *   - formats: at least one, each once (422);
 *   - names are unique (409);
 *   - a source with allocations cannot be deleted (409): deleting them,
 *     or disabling the source, is a decision about revenue that a
 *     delete should not make silently.
 * Serving reads adserve:ad_sources, so every write is in the change log. */
#include "api.h"

#include "resource.h"
#include "schema_external.h"

#include <string.h>

static const char *const ad_source_watch[] = { ADSERVE_KEY_AD_SOURCES, NULL };
static const struct resource_unique ad_source_uniques[] = {
    { ADSERVE_KEY_AD_SOURCE_NAMES, false, { "name", NULL }, "name: an ad source with this name exists", NULL },
    { NULL, false, { NULL }, NULL, NULL },
};
static const struct resource_dependent ad_source_dependents[] = {
    { ADSERVE_KEY_AD_SOURCE_ALLOCATIONS, false, "allocations" },
    { NULL, false, NULL },
};
static const struct resource_filter ad_source_filters[] = {
    { "q", "name", NULL, true },
    { NULL, NULL, NULL, false },
};

static enum store_status ad_source_check(struct resource_write *w)
{
    const char *url = json_str_member(w->after, "endpoint_url");
    const cJSON *formats = cJSON_GetObjectItemCaseSensitive(w->after, "formats"), *f, *g;
    int i = 0;

    if (url == NULL || !adserve_endpoint_url_ok(url, strlen(url)))
        return resource_refuse(w, 422, "endpoint_url: an absolute http or https URL without "
                                       "user info or fragment");
    if (cJSON_GetArraySize(formats) == 0)
        return resource_refuse(w, 422, "formats: at least one");
    cJSON_ArrayForEach(f, formats) {
        for (g = formats->child; g != f; g = g->next)
            if (strcmp(g->valuestring, f->valuestring) == 0)
                return resource_refuse(w, 422, "formats[%d]: \"%s\" twice", i, f->valuestring);
        i++;
    }
    return STORE_OK;
}

const struct resource resource_ad_sources = {
    .name = ADSERVE_RECORD_AD_SOURCE, .label = "ad source", .hash = ADSERVE_KEY_AD_SOURCES,
    .location = "/api/ad-sources", .schema = &schema_ad_source,
    .list_query = &schema_ad_source_list_query, .filters = ad_source_filters, .serving = true,
    .owner = OWNER_NONE, .watch = ad_source_watch, .uniques = ad_source_uniques,
    .dependents = ad_source_dependents, .check = ad_source_check,
};

RESOURCE_HANDLERS(ad_sources, resource_ad_sources)
RESOURCE_DOCS(ad_sources, "AdSource", schema_ad_source, schema_ad_source_patch,
              schema_ad_source_list_query,
              "List ad sources, oldest first; filter: q (name substring)",
              "Create an ad source (an OpenRTB 2.6 bidder); a name in use: 409",
              "Get an ad source (advertisers: 404)",
              "Update an ad source (advertisers: 404)",
              "Delete an ad source without allocations (else 409: delete them first) "
              "(advertisers: 404)");

const struct route ad_sources_routes[] = {
    { "GET", "/api/ad-sources", ad_sources_list, INVENTORY_ROLES, BODY_NONE,
      &ad_sources_list_doc },
    { "POST", "/api/ad-sources", ad_sources_create, INVENTORY_ROLES, BODY_JSON,
      &ad_sources_create_doc },
    { "GET", "/api/ad-sources/{id}", ad_sources_get, ROLES_ANY, BODY_NONE, &ad_sources_get_doc },
    { "PATCH", "/api/ad-sources/{id}", ad_sources_update, ROLES_ANY, BODY_JSON,
      &ad_sources_update_doc },
    { "DELETE", "/api/ad-sources/{id}", ad_sources_delete, ROLES_ANY, BODY_NONE,
      &ad_sources_delete_doc },
};
const size_t ad_sources_routes_count = sizeof ad_sources_routes / sizeof ad_sources_routes[0];
