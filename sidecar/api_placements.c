/* /api/placements: named groups of ad units that line items target
 * (resource.h).
 *
 * Inventory: admins and operators only (advertisers: 403 on the
 * collection, 404 on any id). Every ad unit id must exist (422). Serving
 * reads adserve:placements (id, ad_unit_ids), so writes bump the
 * revision. A placement that line items target cannot be deleted (409):
 * the placement_line_items index, kept by line item writes, tells; nor
 * one that allocations send to AdSources (target_allocations). */
#include "api.h"

#include "ad_units.h"
#include "resource.h"
#include "schema_demand.h"


/* Ad units as a reference target (api_ad_units.c owns them). */
const struct resource resource_ad_units_ref = {
    .name = ADSERVE_RECORD_AD_UNIT, .label = "ad unit", .hash = ADSERVE_KEY_AD_UNITS, .owner = OWNER_NONE,
};

static const char *const placement_watch[] = { ADSERVE_KEY_AD_UNITS, ADSERVE_KEY_LINE_ITEMS,
                                               ADSERVE_KEY_ALLOCATIONS, NULL };
static const struct resource_ref placement_refs[] = {
    { "ad_unit_ids", &resource_ad_units_ref, false },
    { NULL, NULL, false },
};
static const struct resource_dependent placement_dependents[] = {
    { ADSERVE_KEY_PLACEMENT_LINE_ITEMS, false, "line items targeting it" },
    { ADSERVE_KEY_TARGET_ALLOCATIONS, false, "allocations" },
    { NULL, false, NULL },
};
static const struct resource_filter placement_filters[] = {
    { "ad_unit_id", "ad_unit_ids", NULL, false },
    { "q", "name", NULL, true },
    { NULL, NULL, NULL, false },
};

const struct resource resource_placements = {
    .name = ADSERVE_RECORD_PLACEMENT, .label = "placement", .hash = ADSERVE_KEY_PLACEMENTS,
    .location = "/api/placements", .schema = &schema_placement,
    .list_query = &schema_placement_list_query, .filters = placement_filters, .serving = true,
    .owner = OWNER_NONE, .watch = placement_watch, .refs = placement_refs,
    .dependents = placement_dependents,
};

RESOURCE_HANDLERS(placements, resource_placements)
RESOURCE_DOCS(placements, "Placements", schema_placement, schema_placement_patch,
              schema_placement_list_query,
              "List placements, oldest first; filters: ad_unit_id (placements holding it), q "
              "(name substring)",
              "Create a placement; every ad unit id must exist (422)",
              "Get a placement (advertisers: 404)",
              "Update a placement (advertisers: 404)",
              "Delete a placement no line item targets and no allocation names (else 409) "
              "(advertisers: 404)");

const struct route placements_routes[] = {
    { "GET", "/api/placements", placements_list, INVENTORY_ROLES, BODY_NONE,
      &placements_list_doc },
    { "POST", "/api/placements", placements_create, INVENTORY_ROLES, BODY_JSON,
      &placements_create_doc },
    { "GET", "/api/placements/{id}", placements_get, ROLES_ANY, BODY_NONE, &placements_get_doc },
    { "PATCH", "/api/placements/{id}", placements_update, ROLES_ANY, BODY_JSON,
      &placements_update_doc },
    { "DELETE", "/api/placements/{id}", placements_delete, ROLES_ANY, BODY_NONE,
      &placements_delete_doc },
};
const size_t placements_routes_count = sizeof placements_routes / sizeof placements_routes[0];
