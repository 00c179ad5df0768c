/* /api/allocations: which ad units send bid requests to which AdSource,
 * and with what share of their traffic (resource.h, README "External
 * demand"). The developer group's /api/developer/control/allocations is
 * the low-level view of the same records (api_developer_allocations.c).
 *
 * Inventory: admins and operators. Rules beyond the shape:
 *   - ad_source_id names an AdSource (422), target_id an ad unit (targets
 *     ad_unit and path) or a placement (target placement) (422);
 *   - one allocation per source and target_id (409): a unit allocated
 *     both alone and with its subtree to one source would be asked twice;
 *   - a placement with allocations cannot be deleted (409, the placement's
 *     rule); an ad unit can, as with the line items that target it: its
 *     allocations then send nothing, and stay listed until deleted.
 * Serving reads adserve:allocations: every write is in the change log. */
#include "api.h"

#include "allocations.h"
#include "resource.h"
#include "schema_external.h"

static const char *const allocation_watch[] = { ADSERVE_KEY_AD_SOURCES, ADSERVE_KEY_AD_UNITS,
                                                ADSERVE_KEY_PLACEMENTS, NULL };
static const struct resource_ref allocation_refs[] = {
    { "ad_source_id", &resource_ad_sources, false },
    { NULL, NULL, false },
};
static const struct resource_index allocation_indexes[] = {
    { "ad_source_id", ADSERVE_KEY_AD_SOURCE_ALLOCATIONS },
    { "target_id", ADSERVE_KEY_TARGET_ALLOCATIONS },
    { NULL, NULL },
};
static const struct resource_unique allocation_uniques[] = {
    { ADSERVE_KEY_ALLOCATION_PAIRS, false, { "ad_source_id", "target_id", NULL },
      "target_id: this ad source has an allocation for this target already", NULL },
    { NULL, false, { NULL }, NULL, NULL },
};
static const struct resource_filter allocation_filters[] = {
    { "ad_source_id", "ad_source_id", ADSERVE_KEY_AD_SOURCE_ALLOCATIONS, false },
    { "target_id", "target_id", ADSERVE_KEY_TARGET_ALLOCATIONS, false },
    { "target", "target", NULL, false },
    { NULL, NULL, NULL, false },
};

static enum store_status allocation_check(struct resource_write *w)
{
    const char *why;
    enum store_status st;

    if (w->before != NULL && !resource_changed(w, "target") && !resource_changed(w, "target_id"))
        return STORE_OK;
    st = allocation_target_check(w->c, w->after, &why);
    if (st == STORE_OK && why != NULL)
        return resource_refuse(w, 422, "target_id: %s", why);
    return st;
}

const struct resource resource_allocations = {
    .name = ADSERVE_RECORD_ALLOCATION, .label = "allocation", .hash = ADSERVE_KEY_ALLOCATIONS,
    .location = "/api/allocations", .schema = &schema_allocation,
    .list_query = &schema_allocation_list_query, .filters = allocation_filters, .serving = true,
    .owner = OWNER_NONE, .watch = allocation_watch, .refs = allocation_refs,
    .indexes = allocation_indexes, .uniques = allocation_uniques, .check = allocation_check,
};

RESOURCE_HANDLERS(allocations, resource_allocations)
RESOURCE_DOCS(allocations, "Allocations", schema_allocation, schema_allocation_patch,
              schema_allocation_list_query,
              "List allocations, oldest first; filters: ad_source_id, target_id, target",
              "Create an allocation: an existing ad source and target (422); one per source "
              "and target_id (409)",
              "Get an allocation (advertisers: 404)",
              "Update an allocation (advertisers: 404)",
              "Delete an allocation (advertisers: 404)");

const struct route allocations_routes[] = {
    { "GET", "/api/allocations", allocations_list, INVENTORY_ROLES, BODY_NONE,
      &allocations_list_doc },
    { "POST", "/api/allocations", allocations_create, INVENTORY_ROLES, BODY_JSON,
      &allocations_create_doc },
    { "GET", "/api/allocations/{id}", allocations_get, ROLES_ANY, BODY_NONE,
      &allocations_get_doc },
    { "PATCH", "/api/allocations/{id}", allocations_update, ROLES_ANY, BODY_JSON,
      &allocations_update_doc },
    { "DELETE", "/api/allocations/{id}", allocations_delete, ROLES_ANY, BODY_NONE,
      &allocations_delete_doc },
};
const size_t allocations_routes_count = sizeof allocations_routes / sizeof allocations_routes[0];
