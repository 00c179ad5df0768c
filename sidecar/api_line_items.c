/* /api/line-items: what an order buys (resource.h).
 *
 * Rules (README "Demand"):
 *   - order_id names an order the caller sees (422), not ARCHIVED (409),
 *     and cannot change (409); advertiser_id is the order's;
 *   - DRAFT (new) -> ACTIVE <-> PAUSED, ACTIVE or PAUSED -> COMPLETED,
 *     any -> ARCHIVED, nothing after ARCHIVED (409);
 *   - activation (-> ACTIVE) needs an order that is not ARCHIVED and a
 *     flight that has not ended (409). The order need not be APPROVED
 *     yet: a line item can be readied before its order's review, and
 *     serving waits for both;
 *   - the flight: start_at before end_at (422); the goal fits the cost
 *     type: a CPM goal does not count CLICKS, a CPC one not IMPRESSIONS
 *     (422). A goal stays optional for every type (API.md): NONE;
 *   - priority defaults by type at creation: SPONSORSHIP 4, STANDARD 8,
 *     PRICE_PRIORITY 12, HOUSE 16 (as serving ranks them);
 *   - targeting: targeting_check (targeting.h) on every write that sends
 *     it, its references looked up for admins and operators only;
 *     targeted sizes must keep fitting the creatives of its LICAs (409);
 *   - approval: a review (resource_review), as creatives'; an advertiser's
 *     change of anything but name and status makes it PENDING again;
 *   - delete while it has LICAs: 409. */
#include "api.h"

#include "ad_units.h"
#include "resource.h"
#include "schema_demand.h"
#include "targeting.h"

#include <string.h>
#include <time.h>

static const char *const line_item_watch[] = {
    ADSERVE_KEY_ORDERS, ADSERVE_KEY_LICAS, ADSERVE_KEY_CREATIVES, ADSERVE_KEY_AD_UNITS, ADSERVE_KEY_PLACEMENTS, ADSERVE_KEY_TARGETING_KEYS,
    ADSERVE_KEY_TARGETING_KEY_NAMES, ADSERVE_KEY_SEGMENTS, NULL,
};
static const char *const line_item_immutable[] = { "order_id", NULL };
static const struct resource_ref line_item_refs[] = {
    { "order_id", &resource_orders, true },
    { NULL, NULL, false },
};
static const struct resource_index line_item_indexes[] = {
    { "order_id", ADSERVE_KEY_ORDER_LINE_ITEMS },
    { "targeting.placements", ADSERVE_KEY_PLACEMENT_LINE_ITEMS },
    { "targeting.segments.include", ADSERVE_KEY_SEGMENT_INCLUDERS },
    { "targeting.segments.exclude", ADSERVE_KEY_SEGMENT_EXCLUDERS },
    { NULL, NULL },
};
static const struct resource_dependent line_item_dependents[] = {
    { ADSERVE_KEY_LINE_ITEM_LICAS, false, "LICAs" },
    { NULL, false, NULL },
};
static const char *const line_item_initial[] = { ADSERVE_V_DRAFT, NULL };
static const struct resource_transition line_item_transitions[] = {
    { ADSERVE_V_DRAFT, ADSERVE_V_ACTIVE, 0 },
    { ADSERVE_V_ACTIVE, ADSERVE_V_PAUSED, 0 },
    { ADSERVE_V_PAUSED, ADSERVE_V_ACTIVE, 0 },
    { ADSERVE_V_ACTIVE, ADSERVE_V_COMPLETED, 0 },
    { ADSERVE_V_PAUSED, ADSERVE_V_COMPLETED, 0 },
    { NULL, ADSERVE_V_ARCHIVED, 0 },
    { NULL, NULL, 0 },
};
static const struct resource_states line_item_states = {
    .field = "status", .initial = line_item_initial, .transitions = line_item_transitions,
    .frozen = ADSERVE_V_ARCHIVED,
};
static const struct resource_filter line_item_filters[] = {
    { "order_id", "order_id", ADSERVE_KEY_ORDER_LINE_ITEMS, false },
    { "advertiser_id", "advertiser_id", NULL, false },
    { "status", "status", NULL, false },
    { "type", "type", NULL, false },
    { "approval", "approval", NULL, false },
    { "q", "name", NULL, true },
    { NULL, NULL, NULL, false },
};

/* The default priority of a type (the contract's adserve_tier_priority). */
static int default_priority(const char *type)
{
    int tier = adserve_vocab_str(adserve_tier_names, type);

    return adserve_tier_priority[tier < 0 ? ADSERVE_TIER_STANDARD : tier];
}

static bool is(const char *value, const char *const *names, int word)
{
    return adserve_vocab_str(names, value) == word;
}

/* The flight, the goal against type and cost type: 422. */
static enum store_status check_terms(struct resource_write *w)
{
    const cJSON *li = w->after;
    const char *start = json_str_member(li, "start_at"), *end = json_str_member(li, "end_at");
    const char *cost = json_str_member(li, "cost_type");
    const char *goal = json_str_member(cJSON_GetObjectItemCaseSensitive(li, "goal"), "type");
    long long from, to;

    if (start != NULL && end != NULL && rfc3339_parse(start, &from) == 0 &&
        rfc3339_parse(end, &to) == 0 && from >= to)
        return resource_refuse(w, 422, "end_at: must be after start_at (%s)", start);
    if (is(cost, adserve_cost_names, ADSERVE_COST_CPM) &&
        is(goal, adserve_goal_names, ADSERVE_GOAL_CLICKS))
        return resource_refuse(w, 422, "goal.type: a CPM line item's goal counts IMPRESSIONS "
                                       "(or NONE)");
    if (is(cost, adserve_cost_names, ADSERVE_COST_CPC) &&
        is(goal, adserve_goal_names, ADSERVE_GOAL_IMPRESSIONS))
        return resource_refuse(w, 422, "goal.type: a CPC line item's goal counts CLICKS (or "
                                       "NONE)");
    return STORE_OK;
}

/* -> ACTIVE: the order is not ARCHIVED, the flight has not ended: 409. */
static enum store_status check_activation(struct resource_write *w)
{
    const char *end = json_str_member(w->after, "end_at");
    long long until;
    cJSON *order = NULL;

    if (!resource_changed(w, "status") || !is(json_str_member(w->after, "status"), adserve_li_status_names, ADSERVE_LI_ACTIVE))
        return STORE_OK;
    if (end != NULL && rfc3339_parse(end, &until) == 0 && until <= (long long)time(NULL))
        return resource_refuse(w, 409, "status: the flight ended at %s; change end_at first",
                               end);
    enum store_status st = resource_load(w->c, &resource_orders, NULL,
                                         json_str_member(w->after, "order_id"), &order);
    if (st == STORE_NOT_FOUND)      /* an order deleted around the API */
        st = resource_refuse(w, 409, "status: the line item's order no longer exists");
    else if (st == STORE_OK && is(json_str_member(order, "status"), adserve_order_status_names,
                                       ADSERVE_ORDER_ARCHIVED))
        st = resource_refuse(w, 409, "status: the order is ARCHIVED: its line items cannot "
                                     "be activated");
    cJSON_Delete(order);
    return st;
}

/* New targeted sizes keep fitting the creatives of the line item's LICAs. */
static enum store_status check_licas_fit(struct resource_write *w)
{
    cJSON **licas;
    size_t n;

    if (w->before == NULL || !resource_changed(w, "targeting"))
        return STORE_OK;
    enum store_status st = resource_load_indexed(w->c, &resource_licas, ADSERVE_KEY_LINE_ITEM_LICAS,
                                                 json_str_member(w->after, "id"), &licas, &n);
    for (size_t i = 0; st == STORE_OK && i < n; i++) {
        cJSON *creative;
        const char *cid = json_str_member(licas[i], "creative_id");
        st = cid != NULL ? resource_load(w->c, &resource_creatives, NULL, cid, &creative)
                         : STORE_NOT_FOUND;
        if (st == STORE_NOT_FOUND) {
            st = STORE_OK;
            continue;
        }
        if (st == STORE_OK && !demand_size_fits(w->after, creative))
            resource_refuse(w, 409, "targeting.sizes: creative %s of LICA %s would no longer "
                                    "fit (%gx%g)", cid, json_str_member(licas[i], "id"),
                            cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(creative, "w")),
                            cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(creative, "h")));
        cJSON_Delete(creative);
        if (w->rep->status != 0)
            break;
    }
    resource_free_records(licas, n);
    return st;
}

static enum store_status line_item_check(struct resource_write *w)
{
    enum store_status st;

    if (cJSON_GetObjectItemCaseSensitive(w->after, "priority") == NULL &&
        cJSON_AddNumberToObject(w->after, "priority",
                                default_priority(json_str_member(w->after, "type"))) == NULL)
        return STORE_ERROR;
    /* the review: an advertiser pausing or renaming needs none */
    if ((st = resource_review(w, "line items", (const char *const[]){ "name", "status", NULL }))
            != STORE_OK || w->rep->status != 0 ||
        (st = check_terms(w)) != STORE_OK || w->rep->status != 0)
        return st;
    /* an advertiser's targeting is not looked up: whether an ad unit,
     * placement or key id exists would tell them what they may not see;
     * what does not exist never matches, and the review reads it */
    if (resource_changed(w, "targeting") &&
        targeting_check(w->c, cJSON_GetObjectItemCaseSensitive(w->after, "targeting"),
                        w->advertiser == NULL, w->rep) != 0)
        return STORE_OK;                /* answered: 422, or 503 / 500 */
    if ((st = check_activation(w)) != STORE_OK || w->rep->status != 0)
        return st;
    return check_licas_fit(w);
}

const struct resource resource_line_items = {
    .name = ADSERVE_RECORD_LINE_ITEM, .label = "line item", .hash = ADSERVE_KEY_LINE_ITEMS,
    .location = "/api/line-items", .schema = &schema_line_item,
    .list_query = &schema_line_item_list_query, .filters = line_item_filters, .serving = true,
    .owner = OWNER_FIELD, .watch = line_item_watch, .immutable = line_item_immutable,
    .refs = line_item_refs, .indexes = line_item_indexes, .dependents = line_item_dependents,
    .states = &line_item_states, .check = line_item_check,
};

RESOURCE_HANDLERS(line_items, resource_line_items)
RESOURCE_DOCS(line_items, "LineItems", schema_line_item, schema_line_item_patch,
              schema_line_item_list_query,
              "List line items, oldest first; filters: order_id, advertiser_id, status, type, "
              "approval (the review queue: PENDING), q (name substring); advertisers: their own",
              "Create a line item (DRAFT) under an order the caller sees (422) that is not "
              "ARCHIVED (409); flight, goal and targeting checked (422)",
              "Get a line item (another advertiser's: 404)",
              "Update a line item; status: DRAFT -> ACTIVE <-> PAUSED -> COMPLETED, any -> "
              "ARCHIVED (else 409); activation needs an order not ARCHIVED and a flight not "
              "ended (409); approval by admins and operators only (403); an advertiser's change "
              "of anything but name and status makes it PENDING again",
              "Delete a line item without LICAs (else 409)");

const struct route line_items_routes[] = {
    { "GET", "/api/line-items", line_items_list, ROLES_ANY, BODY_NONE, &line_items_list_doc },
    { "POST", "/api/line-items", line_items_create, ROLES_ANY, BODY_JSON,
      &line_items_create_doc },
    { "GET", "/api/line-items/{id}", line_items_get, ROLES_ANY, BODY_NONE, &line_items_get_doc },
    { "PATCH", "/api/line-items/{id}", line_items_update, ROLES_ANY, BODY_JSON,
      &line_items_update_doc },
    { "DELETE", "/api/line-items/{id}", line_items_delete, ROLES_ANY, BODY_NONE,
      &line_items_delete_doc },
};
const size_t line_items_routes_count = sizeof line_items_routes / sizeof line_items_routes[0];
