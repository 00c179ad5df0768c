/* /api/orders: an advertiser's orders (resource.h).
 *
 * Rules (README "Demand"):
 *   - advertiser_id names an advertiser the caller sees (422) and cannot
 *     change (409);
 *   - DRAFT (new) -> APPROVED <-> PAUSED, any -> ARCHIVED, nothing after
 *     ARCHIVED (409); APPROVED is a review, so only admins and operators
 *     set it (403 for advertisers, who may pause and archive theirs);
 *   - delete only in DRAFT, and only with no line items (409);
 *   - serving reads adserve:orders (an order serves when APPROVED), so
 *     every write bumps the revision. */
#include "api.h"

#include "resource.h"
#include "schema_demand.h"

static const char *const order_watch[] = { ADSERVE_KEY_ADVERTISERS, ADSERVE_KEY_LINE_ITEMS, NULL };
static const char *const order_immutable[] = { "advertiser_id", NULL };
static const struct resource_ref order_refs[] = {
    { "advertiser_id", &resource_advertisers, false },
    { NULL, NULL, false },
};
static const struct resource_index order_indexes[] = {
    { "advertiser_id", ADSERVE_KEY_ADVERTISER_ORDERS },
    { NULL, NULL },
};
static const struct resource_dependent order_dependents[] = {
    { ADSERVE_KEY_ORDER_LINE_ITEMS, false, "line items" },
    { NULL, false, NULL },
};
static const char *const order_initial[] = { ADSERVE_V_DRAFT, NULL };
static const char *const order_deletable[] = { ADSERVE_V_DRAFT, NULL };
static const struct resource_transition order_transitions[] = {
    { ADSERVE_V_DRAFT, ADSERVE_V_APPROVED, ROLE_ADMIN | ROLE_OPERATOR },
    { ADSERVE_V_APPROVED, ADSERVE_V_PAUSED, 0 },
    { ADSERVE_V_PAUSED, ADSERVE_V_APPROVED, ROLE_ADMIN | ROLE_OPERATOR },
    { NULL, ADSERVE_V_ARCHIVED, 0 },
    { NULL, NULL, 0 },
};
static const struct resource_states order_states = {
    .field = "status", .initial = order_initial, .transitions = order_transitions,
    .frozen = ADSERVE_V_ARCHIVED, .deletable = order_deletable,
};
static const struct resource_filter order_filters[] = {
    { "advertiser_id", "advertiser_id", ADSERVE_KEY_ADVERTISER_ORDERS, false },
    { "status", "status", NULL, false },
    { "q", "name", NULL, true },
    { NULL, NULL, NULL, false },
};

const struct resource resource_orders = {
    .name = ADSERVE_RECORD_ORDER, .label = "order", .hash = ADSERVE_KEY_ORDERS, .location = "/api/orders",
    .schema = &schema_order, .list_query = &schema_order_list_query, .filters = order_filters,
    .serving = true, .owner = OWNER_FIELD, .watch = order_watch, .immutable = order_immutable,
    .refs = order_refs, .indexes = order_indexes, .dependents = order_dependents,
    .states = &order_states,
};

RESOURCE_HANDLERS(orders, resource_orders)
RESOURCE_DOCS(orders, "Orders", schema_order, schema_order_patch, schema_order_list_query,
              "List orders, oldest first; filters: advertiser_id, status, q (name substring); "
              "advertisers: their own",
              "Create an order (DRAFT); advertiser_id must be an advertiser the caller sees "
              "(422)",
              "Get an order (another advertiser's: 404)",
              "Update an order; status: DRAFT -> APPROVED <-> PAUSED, any -> ARCHIVED (else "
              "409; APPROVED by admins and operators only: 403); nothing changes once ARCHIVED",
              "Delete an order: only in DRAFT and without line items (else 409)");

const struct route orders_routes[] = {
    { "GET", "/api/orders", orders_list, ROLES_ANY, BODY_NONE, &orders_list_doc },
    { "POST", "/api/orders", orders_create, ROLES_ANY, BODY_JSON, &orders_create_doc },
    { "GET", "/api/orders/{id}", orders_get, ROLES_ANY, BODY_NONE, &orders_get_doc },
    { "PATCH", "/api/orders/{id}", orders_update, ROLES_ANY, BODY_JSON, &orders_update_doc },
    { "DELETE", "/api/orders/{id}", orders_delete, ROLES_ANY, BODY_NONE, &orders_delete_doc },
};
const size_t orders_routes_count = sizeof orders_routes / sizeof orders_routes[0];
