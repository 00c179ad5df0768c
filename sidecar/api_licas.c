/* /api/licas: line item to creative associations (resource.h).
 *
 * Rules (README "Demand"):
 *   - line_item_id and creative_id name records the caller sees (422) and
 *     cannot change (409): a LICA is the pair; advertiser_id is the line
 *     item's;
 *   - a line item that is ARCHIVED takes no new LICA (409);
 *   - the creative belongs to the line item's (the order's) advertiser
 *     and fits the line item's targeted sizes, when it targets sizes (409);
 *   - one LICA per pair (409), through the adserve:lica_pairs index;
 *   - status ACTIVE / PAUSED, freely; weight >= 1 (default 1). */
#include "api.h"

#include "resource.h"
#include "schema_demand.h"

#include <string.h>

static const char *const lica_watch[] = { ADSERVE_KEY_LINE_ITEMS, ADSERVE_KEY_CREATIVES, NULL };
static const char *const lica_immutable[] = { "line_item_id", "creative_id", NULL };
static const struct resource_ref lica_refs[] = {
    { "line_item_id", &resource_line_items, true },
    { "creative_id", &resource_creatives, false },
    { NULL, NULL, false },
};
static const struct resource_index lica_indexes[] = {
    { "line_item_id", ADSERVE_KEY_LINE_ITEM_LICAS },
    { "creative_id", ADSERVE_KEY_CREATIVE_LICAS },
    { NULL, NULL },
};
static const struct resource_unique lica_uniques[] = {
    { ADSERVE_KEY_LICA_PAIRS, false, { "line_item_id", "creative_id", NULL },
      "creative_id: the creative is already associated with this line item", NULL },
    { NULL, false, { NULL }, NULL, NULL },
};
static const struct resource_filter lica_filters[] = {
    { "line_item_id", "line_item_id", ADSERVE_KEY_LINE_ITEM_LICAS, false },
    { "creative_id", "creative_id", ADSERVE_KEY_CREATIVE_LICAS, false },
    { "advertiser_id", "advertiser_id", NULL, false },
    { "status", "status", NULL, false },
    { NULL, NULL, NULL, false },
};

/* The pair is set once, at creation (both refs are immutable). */
static enum store_status lica_check(struct resource_write *w)
{
    const cJSON *line_item = resource_loaded(w, "line_item_id");
    const cJSON *creative = resource_loaded(w, "creative_id");
    const char *owner = json_str_member(line_item, "advertiser_id");
    const char *theirs = json_str_member(creative, "advertiser_id");

    if (w->before != NULL)
        return STORE_OK;
    if (line_item == NULL || creative == NULL)
        return STORE_ERROR;
    if (owner == NULL || theirs == NULL || strcmp(owner, theirs) != 0)
        return resource_refuse(w, 409, "creative_id: the creative belongs to another advertiser "
                                       "than the line item's order");
    if (!demand_size_fits(line_item, creative))
        return resource_refuse(
            w, 409, "creative_id: the creative's size (%gx%g) is not one the line item targets",
            cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(creative, "w")),
            cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(creative, "h")));
    return STORE_OK;
}

const struct resource resource_licas = {
    .name = ADSERVE_RECORD_LICA, .label = "LICA", .hash = ADSERVE_KEY_LICAS, .location = "/api/licas",
    .schema = &schema_lica, .list_query = &schema_lica_list_query, .filters = lica_filters,
    .serving = true, .owner = OWNER_FIELD, .watch = lica_watch, .immutable = lica_immutable,
    .refs = lica_refs, .indexes = lica_indexes, .uniques = lica_uniques, .check = lica_check,
};

RESOURCE_HANDLERS(licas, resource_licas)
RESOURCE_DOCS(licas, "LICAs", schema_lica, schema_lica_patch, schema_lica_list_query,
              "List LICAs, oldest first; filters: line_item_id, creative_id, advertiser_id, "
              "status; advertisers: their own",
              "Associate a creative with a line item: same advertiser, a size the line item "
              "targets, once per pair (else 409)",
              "Get a LICA (another advertiser's: 404)",
              "Update a LICA's weight or status (ACTIVE, PAUSED)",
              "Delete a LICA");

const struct route licas_routes[] = {
    { "GET", "/api/licas", licas_list, ROLES_ANY, BODY_NONE, &licas_list_doc },
    { "POST", "/api/licas", licas_create, ROLES_ANY, BODY_JSON, &licas_create_doc },
    { "GET", "/api/licas/{id}", licas_get, ROLES_ANY, BODY_NONE, &licas_get_doc },
    { "PATCH", "/api/licas/{id}", licas_update, ROLES_ANY, BODY_JSON, &licas_update_doc },
    { "DELETE", "/api/licas/{id}", licas_delete, ROLES_ANY, BODY_NONE, &licas_delete_doc },
};
const size_t licas_routes_count = sizeof licas_routes / sizeof licas_routes[0];
