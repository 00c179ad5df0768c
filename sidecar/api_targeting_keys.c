/* /api/custom-targeting/keys and /api/custom-targeting/keys/{key_id}/values:
 * the custom key-values that line items' targeting.kv names (resource.h).
 *
 * The Redis layout is the one targeting.c reads: keys in
 * adserve:targeting_keys with the name index adserve:targeting_key_names;
 * a key's values in adserve:targeting_values:{key_id} with the name index
 * adserve:targeting_value_names:{key_id}.
 *
 * Rules:
 *   - key names are unique, value names unique within their key (409);
 *   - a key's name and type, and a value's name, cannot change (409): kv
 *     rules name them, so a rename would silently change what a saved
 *     rule means, and a type change could make saved rules invalid;
 *   - a key with values cannot be deleted (409: delete the values first).
 *     A deleted value or key that a saved rule names is refused the next
 *     time that line item's targeting is written;
 *   - inventory: admins and operators (advertisers: 403 on collections,
 *     404 on ids). Serving does not read these, so no revision bump. */
#include "api.h"

#include "resource.h"
#include "schema_demand.h"


/* ---- keys ---------------------------------------------------------------------------- */

static const char *const key_immutable[] = { "name", "type", NULL };
static const struct resource_unique key_uniques[] = {
    { ADSERVE_KEY_TARGETING_KEY_NAMES, false, { "name", NULL }, "name: a key with this name exists", NULL },
    { NULL, false, { NULL }, NULL, NULL },
};
static const struct resource_dependent key_dependents[] = {
    { ADSERVE_KEY_TARGETING_VALUES, true, "values" },
    { NULL, false, NULL },
};
static const struct resource_filter key_filters[] = {
    { "type", "type", NULL, false },
    { "q", "name", NULL, true },
    { NULL, NULL, NULL, false },
};

const struct resource resource_targeting_keys = {
    .name = ADSERVE_RECORD_TARGETING_KEY, .label = "custom targeting key", .hash = ADSERVE_KEY_TARGETING_KEYS,
    .location = "/api/custom-targeting/keys", .schema = &schema_targeting_key,
    .list_query = &schema_targeting_key_list_query, .filters = key_filters, .serving = false,
    .owner = OWNER_NONE, .immutable = key_immutable, .dependents = key_dependents,
    .uniques = key_uniques,
};

RESOURCE_HANDLERS(keys, resource_targeting_keys)
RESOURCE_DOCS(keys, "Custom Targeting Key", schema_targeting_key, schema_targeting_key_patch,
              schema_targeting_key_list_query,
              "List custom targeting keys, oldest first; filters: type, q (name substring)",
              "Create a key (name unique: 409)",
              "Get a key (advertisers: 404)",
              "Update a key's description (name and type cannot change: 409)",
              "Delete a key without values (else 409)");

/* ---- values -------------------------------------------------------------------------- */

static const char *const value_watch[] = { ADSERVE_KEY_TARGETING_KEYS, NULL };
static const char *const value_immutable[] = { "name", NULL };
static const struct resource_unique value_uniques[] = {
    { ADSERVE_KEY_TARGETING_VALUE_NAMES, true, { "name", NULL },
      "name: the key has a value with this name", NULL },
    { NULL, false, { NULL }, NULL, NULL },
};
static const struct resource_filter value_filters[] = {
    { "q", "name", NULL, true },
    { NULL, NULL, NULL, false },
};

const struct resource resource_targeting_values = {
    .name = ADSERVE_RECORD_TARGETING_VALUE, .label = "custom targeting value",
    .hash = ADSERVE_KEY_TARGETING_VALUES, .location = "/api/custom-targeting/keys/{key_id}/values",
    .schema = &schema_targeting_value, .list_query = &schema_targeting_value_list_query,
    .filters = value_filters, .serving = false, .owner = OWNER_NONE, .parent_param = "key_id",
    .parent = &resource_targeting_keys, .watch = value_watch, .immutable = value_immutable,
    .uniques = value_uniques,
};

RESOURCE_HANDLERS(values, resource_targeting_values)

/* The nested routes also answer 404 for an unknown key. */
static const int nested_list_errors[] = { 401, 403, 404, 422, 503, 0 };
static const int nested_create_errors[] = { 400, 401, 403, 404, 409, 415, 422, 503, 0 };
static const struct route_doc values_list_doc = {
    .tag = "Custom Targeting Value", .response = &schema_targeting_value, .status = 200,
    .list = true, .query = &schema_targeting_value_list_query, .errors = nested_list_errors,
    .summary = "List a key's values, oldest first; filter: q (name substring); unknown key: 404",
};
static const struct route_doc values_create_doc = {
    .tag = "Custom Targeting Value", .request = &schema_targeting_value,
    .response = &schema_targeting_value, .status = 201, .errors = nested_create_errors,
    .summary = "Create a value of a key (name unique within the key: 409; unknown key: 404)",
};
static const struct route_doc values_get_doc = {
    .tag = "Custom Targeting Value", .response = &schema_targeting_value, .status = 200,
    .errors = resource_get_errors, .summary = "Get a value (advertisers: 404)",
};
static const struct route_doc values_update_doc = {
    .tag = "Custom Targeting Value", .request = &schema_targeting_value_patch,
    .response = &schema_targeting_value, .status = 200, .errors = resource_update_errors,
    .summary = "Update a value's description (the name cannot change: 409)",
};
static const struct route_doc values_delete_doc = {
    .tag = "Custom Targeting Value", .status = 204, .errors = resource_delete_errors,
    .summary = "Delete a value",
};

const struct route targeting_keys_routes[] = {
    { "GET", "/api/custom-targeting/keys", keys_list, INVENTORY_ROLES, BODY_NONE,
      &keys_list_doc },
    { "POST", "/api/custom-targeting/keys", keys_create, INVENTORY_ROLES, BODY_JSON,
      &keys_create_doc },
    { "GET", "/api/custom-targeting/keys/{id}", keys_get, ROLES_ANY, BODY_NONE, &keys_get_doc },
    { "PATCH", "/api/custom-targeting/keys/{id}", keys_update, ROLES_ANY, BODY_JSON,
      &keys_update_doc },
    { "DELETE", "/api/custom-targeting/keys/{id}", keys_delete, ROLES_ANY, BODY_NONE,
      &keys_delete_doc },
    { "GET", "/api/custom-targeting/keys/{key_id}/values", values_list, INVENTORY_ROLES,
      BODY_NONE, &values_list_doc },
    { "POST", "/api/custom-targeting/keys/{key_id}/values", values_create, INVENTORY_ROLES,
      BODY_JSON, &values_create_doc },
    { "GET", "/api/custom-targeting/keys/{key_id}/values/{id}", values_get, ROLES_ANY,
      BODY_NONE, &values_get_doc },
    { "PATCH", "/api/custom-targeting/keys/{key_id}/values/{id}", values_update, ROLES_ANY,
      BODY_JSON, &values_update_doc },
    { "DELETE", "/api/custom-targeting/keys/{key_id}/values/{id}", values_delete, ROLES_ANY,
      BODY_NONE, &values_delete_doc },
};
const size_t targeting_keys_routes_count =
    sizeof targeting_keys_routes / sizeof targeting_keys_routes[0];
