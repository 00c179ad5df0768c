/* /api/catalog-items and /api/associated-items-pools: what recommendation
 * placements recommend (resource.h, README "Recommendation catalog").
 *
 * Inventory: admins and operators only. Both are keyed by the customer's
 * own catalog item ids as well as by our UUIDs: item_id is unique among
 * items, source_item_id among pools (409), and neither can change (409).
 * Rules (422):
 *   - an item id is 1..128 letters, digits or . _ : ~ -;
 *   - attributes is a flat map (what content_filter_rule compares): up to
 *     64 members, each a string of up to 256 bytes, a number, a boolean
 *     or an array of up to 32 such strings;
 *   - a pool's items are distinct and not its source; they are stored
 *     ranked by score, highest first.
 * Serving reads both (README "Recommendation"): their writes bump the
 * revision, and a change serves within a second. */
#include "api.h"

#include "resource.h"
#include "schema_catalog.h"

#include <stdlib.h>
#include <string.h>


static bool attribute_text(const cJSON *v)
{
    return cJSON_IsString(v) && strlen(v->valuestring) <= ADSERVE_ITEM_ATTR_TEXT_MAX;
}

/* NULL when v is a value content filters can compare, else why not */
static const char *attribute_bad(const cJSON *v)
{
    const cJSON *e;

    if (cJSON_IsNumber(v) || cJSON_IsBool(v) || attribute_text(v))
        return NULL;
    if (!cJSON_IsArray(v))
        return "a string of up to 256 bytes, a number, a boolean or an array of strings";
    if (cJSON_GetArraySize(v) > ADSERVE_ITEM_ATTR_VALUES_MAX)
        return "an array of up to 32 strings";
    cJSON_ArrayForEach(e, v) {
        if (!attribute_text(e))
            return "an array of strings of up to 256 bytes each";
    }
    return NULL;
}

static enum store_status item_check(struct resource_write *w)
{
    const cJSON *attrs = cJSON_GetObjectItemCaseSensitive(w->after, "attributes");
    const cJSON *a;
    const char *why;

    if (!adserve_item_id_ok(json_str_member(w->after, "item_id")))
        return resource_refuse(w, 422, "item_id: letters, digits and . _ : ~ - only");
    if (cJSON_GetArraySize(attrs) > ADSERVE_ITEM_ATTRIBUTES_MAX)
        return resource_refuse(w, 422, "attributes: up to %d members",
                               ADSERVE_ITEM_ATTRIBUTES_MAX);
    cJSON_ArrayForEach(a, attrs) {
        if ((why = attribute_bad(a)) != NULL)
            return resource_refuse(w, 422, "attributes.%s: %s", a->string, why);
    }
    return STORE_OK;
}

static const char *const item_immutable[] = { "item_id", NULL };
static const struct resource_unique item_uniques[] = {
    { ADSERVE_KEY_CATALOG_ITEM_IDS, false, { "item_id", NULL },
      "item_id: the catalog has an item with this id already", NULL },
    { NULL, false, { NULL }, NULL, NULL },
};
static const struct resource_filter item_filters[] = {
    { "item_id", "item_id", NULL, false },
    { "context", "contexts", NULL, false },
    { "q", "title", NULL, true },
    { NULL, NULL, NULL, false },
};

const struct resource resource_catalog_items = {
    .name = ADSERVE_RECORD_CATALOG_ITEM, .label = "catalog item",
    .hash = ADSERVE_KEY_CATALOG_ITEMS, .location = "/api/catalog-items",
    .schema = &schema_catalog_item, .list_query = &schema_catalog_item_list_query,
    .filters = item_filters, .serving = true, .owner = OWNER_NONE,
    .immutable = item_immutable, .uniques = item_uniques, .check = item_check,
};

RESOURCE_HANDLERS(catalog_items, resource_catalog_items)
RESOURCE_DOCS(catalog_items, "AssociatedItemsPool", schema_catalog_item, schema_catalog_item_patch,
              schema_catalog_item_list_query,
              "List catalog items, oldest first; filters: item_id, context, q (title substring)",
              "Add an item to the catalog; item_id is unique (409)",
              "Get a catalog item (advertisers: 404)",
              "Update a catalog item (item_id cannot change: 409)",
              "Delete a catalog item");

const struct route catalog_items_routes[] = {
    { "GET", "/api/catalog-items", catalog_items_list, INVENTORY_ROLES, BODY_NONE,
      &catalog_items_list_doc },
    { "POST", "/api/catalog-items", catalog_items_create, INVENTORY_ROLES, BODY_JSON,
      &catalog_items_create_doc },
    { "GET", "/api/catalog-items/{id}", catalog_items_get, ROLES_ANY, BODY_NONE,
      &catalog_items_get_doc },
    { "PATCH", "/api/catalog-items/{id}", catalog_items_update, ROLES_ANY, BODY_JSON,
      &catalog_items_update_doc },
    { "DELETE", "/api/catalog-items/{id}", catalog_items_delete, ROLES_ANY, BODY_NONE,
      &catalog_items_delete_doc },
};
const size_t catalog_items_routes_count =
    sizeof catalog_items_routes / sizeof catalog_items_routes[0];

/* ---- associated items pools ------------------------------------------------------------- */

static double score_of(const cJSON *item)
{
    return cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(item, "score"));
}

/* highest score first; equal scores keep the order sent (the index) */
struct ranked {
    cJSON *item;
    int index;
};

static int by_score(const void *pa, const void *pb)
{
    const struct ranked *a = pa, *b = pb;
    double sa = score_of(a->item), sb = score_of(b->item);

    return sa > sb ? -1 : sa < sb ? 1 : a->index - b->index;
}

/* items re-linked into the array in rank order */
static bool rank(cJSON *items)
{
    int n = cJSON_GetArraySize(items), i = 0;
    struct ranked *v = n > 0 ? calloc((size_t)n, sizeof *v) : NULL;
    cJSON *it;

    if (n > 0 && v == NULL)
        return false;
    while ((it = cJSON_DetachItemFromArray(items, 0)) != NULL) {
        v[i].item = it;
        v[i].index = i;
        i++;
    }
    if (n > 1)
        qsort(v, (size_t)n, sizeof *v, by_score);
    for (i = 0; i < n; i++)
        cJSON_AddItemToArray(items, v[i].item);
    free(v);
    return true;
}

static enum store_status pool_check(struct resource_write *w)
{
    const char *source = json_str_member(w->after, "source_item_id");
    cJSON *items = cJSON_GetObjectItemCaseSensitive(w->after, "items");
    const cJSON *a, *b;
    int i = 0;

    if (!adserve_item_id_ok(source))
        return resource_refuse(w, 422, "source_item_id: letters, digits and . _ : ~ - only");
    cJSON_ArrayForEach(a, items) {
        const char *id = json_str_member(a, "item_id");

        if (!adserve_item_id_ok(id))
            return resource_refuse(w, 422, "items[%d].item_id: letters, digits and . _ : ~ - "
                                           "only", i);
        if (strcmp(id, source) == 0)
            return resource_refuse(w, 422, "items[%d].item_id: the source item itself", i);
        for (b = a->next; b != NULL; b = b->next)
            if (strcmp(id, json_str_member(b, "item_id")) == 0)
                return resource_refuse(w, 422, "items[%d].item_id: %s is listed twice", i, id);
        i++;
    }
    return rank(items) ? STORE_OK : STORE_ERROR;
}

static const char *const pool_immutable[] = { "source_item_id", NULL };
static const struct resource_unique pool_uniques[] = {
    { ADSERVE_KEY_POOL_SOURCES, false, { "source_item_id", NULL },
      "source_item_id: this item has a pool already (change its items)", NULL },
    { NULL, false, { NULL }, NULL, NULL },
};
static const struct resource_filter pool_filters[] = {
    { "source_item_id", "source_item_id", NULL, false },
    { NULL, NULL, NULL, false },
};

const struct resource resource_item_pools = {
    .name = ADSERVE_RECORD_ITEM_POOL, .label = "associated items pool",
    .hash = ADSERVE_KEY_ITEM_POOLS, .location = "/api/associated-items-pools",
    .schema = &schema_item_pool, .list_query = &schema_item_pool_list_query,
    .filters = pool_filters, .serving = true, .owner = OWNER_NONE,
    .immutable = pool_immutable, .uniques = pool_uniques, .check = pool_check,
};

RESOURCE_HANDLERS(item_pools, resource_item_pools)
RESOURCE_DOCS(item_pools, "AssociatedItemsPool", schema_item_pool, schema_item_pool_patch,
              schema_item_pool_list_query,
              "List associated items pools, oldest first; filter: source_item_id",
              "Give a source item its ranked associated items (one pool per item: 409)",
              "Get an associated items pool (advertisers: 404)",
              "Update a pool's items (source_item_id cannot change: 409)",
              "Delete an associated items pool");

const struct route item_pools_routes[] = {
    { "GET", "/api/associated-items-pools", item_pools_list, INVENTORY_ROLES, BODY_NONE,
      &item_pools_list_doc },
    { "POST", "/api/associated-items-pools", item_pools_create, INVENTORY_ROLES, BODY_JSON,
      &item_pools_create_doc },
    { "GET", "/api/associated-items-pools/{id}", item_pools_get, ROLES_ANY, BODY_NONE,
      &item_pools_get_doc },
    { "PATCH", "/api/associated-items-pools/{id}", item_pools_update, ROLES_ANY, BODY_JSON,
      &item_pools_update_doc },
    { "DELETE", "/api/associated-items-pools/{id}", item_pools_delete, ROLES_ANY, BODY_NONE,
      &item_pools_delete_doc },
};
const size_t item_pools_routes_count = sizeof item_pools_routes / sizeof item_pools_routes[0];
