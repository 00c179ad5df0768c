/* /api/advertisers: the buyers (resource.h).
 *
 * Admins and operators manage advertisers. An advertiser user reads its
 * own record (and so its balance), and nothing else of this collection:
 * the list and POST answer 403, another advertiser's id 404, and a
 * PATCH or DELETE of its own record 403. Serving does not read
 * advertisers, so their writes leave the revision alone. An advertiser
 * with orders or creatives cannot be deleted (409). */
#include "api.h"

#include "resource.h"
#include "schema_demand.h"

#include <sodium.h>

#define DEMAND_ROLES (ROLE_ADMIN | ROLE_OPERATOR)

static const char *const advertiser_watch[] = { ADSERVE_KEY_ORDERS, ADSERVE_KEY_CREATIVES, NULL };
static const struct resource_dependent advertiser_dependents[] = {
    { ADSERVE_KEY_ADVERTISER_ORDERS, false, "orders" },
    { ADSERVE_KEY_ADVERTISER_CREATIVES, false, "creatives" },
    { NULL, false, NULL },
};
static const struct resource_filter advertiser_filters[] = {
    { "q", "name", NULL, true },
    { "manager_id", "manager_id", ADSERVE_KEY_MANAGER_ADVERTISERS, false },
    { NULL, NULL, NULL, false },
};

static const struct resource_index advertiser_indexes[] = {
    { "manager_id", ADSERVE_KEY_MANAGER_ADVERTISERS },
    { NULL, NULL },
};

/* An account manager is a user who may manage demand: an admin or an
 * operator (users.c keeps one with advertisers from becoming anything
 * else, or from being deleted). */
static enum store_status check_manager(struct resource_write *w)
{
    const char *id = json_str_member(w->after, "manager_id");
    struct user u = { 0 };
    char key[USER_KEY_MAX];

    if (id == NULL || !resource_changed(w, "manager_id"))
        return STORE_OK;
    /* the user may change role in between: the write waits for it */
    enum store_status st = user_key(key, id) == 0
                               ? store_do(w->c, (const char *[]){ "WATCH", key, NULL })
                               : STORE_NOT_FOUND;
    if (st == STORE_OK)
        st = user_load(w->c, id, &u);
    sodium_memzero(u.password_hash, sizeof u.password_hash);
    if (st == STORE_NOT_FOUND || (st == STORE_OK && (role_from_name(u.role) & DEMAND_ROLES) == 0))
        return resource_refuse(w, 422, "manager_id: no admin or operator has this id");
    return st;
}

const struct resource resource_advertisers = {
    .name = ADSERVE_RECORD_ADVERTISER, .label = "advertiser", .hash = ADSERVE_KEY_ADVERTISERS,
    .location = "/api/advertisers", .schema = &schema_advertiser,
    .list_query = &schema_advertiser_list_query, .filters = advertiser_filters,
    .serving = false, .owner = OWNER_SELF, .watch = advertiser_watch,
    .dependents = advertiser_dependents, .indexes = advertiser_indexes, .check = check_manager,
};

RESOURCE_HANDLERS(advertisers, resource_advertisers)
RESOURCE_DOCS(advertisers, "Advertisers", schema_advertiser, schema_advertiser_patch,
              schema_advertiser_list_query,
              "List advertisers, oldest first; filter: q (name substring)",
              "Create an advertiser",
              "Get an advertiser (advertisers: their own only, else 404)",
              "Update an advertiser (advertisers: 403 on their own, 404 on others)",
              "Delete an advertiser without orders or creatives (else 409)");

const struct route advertisers_routes[] = {
    { "GET", "/api/advertisers", advertisers_list, DEMAND_ROLES, BODY_NONE,
      &advertisers_list_doc },
    { "POST", "/api/advertisers", advertisers_create, DEMAND_ROLES, BODY_JSON,
      &advertisers_create_doc },
    { "GET", "/api/advertisers/{id}", advertisers_get, ROLES_ANY, BODY_NONE,
      &advertisers_get_doc },
    { "PATCH", "/api/advertisers/{id}", advertisers_update, ROLES_ANY, BODY_JSON,
      &advertisers_update_doc },
    { "DELETE", "/api/advertisers/{id}", advertisers_delete, ROLES_ANY, BODY_NONE,
      &advertisers_delete_doc },
};
const size_t advertisers_routes_count = sizeof advertisers_routes / sizeof advertisers_routes[0];
