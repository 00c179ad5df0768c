/* POST /api/line-items/batch, /api/licas/batch, /api/orders/batch, and
 * for bulk uploads of the recommendation catalog, /api/catalog-items/batch
 * and /api/associated-items-pools/batch (admins and operators).
 *
 * {"items": [{"op": "create" | "update" | "delete", "id"?, "data"?}]}, at
 * most BATCH_MAX_ITEMS (more: 422 for the whole batch). Items are applied
 * in order, one by one, each exactly as its own request would be (the
 * same resource.h path: rules, scoping, one transaction, one audit
 * record), so a failure stops nothing: the answer is 200 with one result
 * per item, in input order, {index, status, id?, detail?}, where status
 * is what that item alone would have answered. An item is independent of
 * the others' outcome, but sees their effects (an update after a create
 * of the same batch needs the id the create returned, so comes in a
 * later batch). A malformed item (not an object, unknown op, missing id
 * or data) is a 422 result of its own. The catalog's batches also take
 * op upsert: by item_id (source_item_id for pools), an update or a
 * create, so a customer uploads a whole catalog again without our ids. */
#include "api.h"

#include "resource.h"
#include "schema_demand.h"

#include <stdio.h>
#include <string.h>

/* upsert: by the resource's natural key (its one single-field, global
 * unique), an update of the record that has it, else a create. Two
 * uploads racing on one key: the later create is a 409 of its own. */
static void upsert(const struct resource *res, struct request *req, struct reply *rep,
                   const cJSON *data)
{
    const struct resource_unique *u = res->uniques;
    char id[UUID_STR_LEN];

    if (u == NULL || u->hash == NULL || u->per_parent || u->fields[1] != NULL) {
        reply_error(rep, 422, "op: upsert is for resources with a natural key");
        return;
    }
    const char *key = json_str_member(data, u->fields[0]);
    if (key == NULL) {
        reply_error(rep, 422, "data.%s: is required (op upsert)", u->fields[0]);
        return;
    }
    const char *argv[] = { "HGET", u->hash, key, NULL };
    enum store_status st = store_get_str(request_store(req), id, sizeof id, argv);

    if (st == STORE_NOT_FOUND)
        resource_create(res, req, rep, data);
    else if (st == STORE_OK)
        resource_update(res, req, rep, id, data);
    else
        reply_store_error(rep, st);
}

/* One item into rep, as its own request. */
static void apply_item(const struct resource *res, struct request *req, struct reply *rep,
                       const cJSON *raw)
{
    cJSON *item = json_apply_schema(&schema_batch_item, raw, SCHEMA_FULL, rep);

    if (item == NULL)
        return;
    const char *op = json_str_member(item, "op"), *id = json_str_member(item, "id");
    const cJSON *data = cJSON_GetObjectItemCaseSensitive(item, "data");
    bool create = strcmp(op, "create") == 0, del = strcmp(op, "delete") == 0;
    bool put = strcmp(op, "upsert") == 0;

    if ((create || put) && id != NULL)
        reply_error(rep, 422, "id: not for a %s (the server chooses it)", op);
    else if (put && data == NULL)
        reply_error(rep, 422, "data: is required (op upsert)");
    else if (put)
        upsert(res, req, rep, data);
    else if (!create && id == NULL)
        reply_error(rep, 422, "id: is required (op %s)", op);
    else if (!del && data == NULL)
        reply_error(rep, 422, "data: is required (op %s)", op);
    else if (del && data != NULL)
        reply_error(rep, 422, "data: not for a delete");
    else if (create)
        resource_create(res, req, rep, data);
    else if (del)
        resource_delete(res, req, rep, id);
    else
        resource_update(res, req, rep, id, data);
    cJSON_Delete(item);
}

/* {index, status, id?, detail?} of an item's answer. */
static cJSON *result_of(int index, const struct reply *r, const cJSON *raw)
{
    cJSON *res = cJSON_CreateObject();
    const char *id = r->status < 300 ? json_str_member(r->body, "id") : NULL;
    const char *detail = r->status >= 300 ? json_str_member(r->body, "detail") : NULL;

    /* the id the item named, when its answer has none (a delete, a failure) */
    if (id == NULL && cJSON_IsObject(raw))
        id = json_str_member(raw, "id");
    if (res == NULL || cJSON_AddNumberToObject(res, "index", index) == NULL ||
        cJSON_AddNumberToObject(res, "status", r->status != 0 ? r->status : 500) == NULL ||
        (id != NULL && is_uuid(id) && cJSON_AddStringToObject(res, "id", id) == NULL) ||
        (r->status >= 300 &&
         cJSON_AddStringToObject(res, "detail", detail != NULL ? detail : "internal error") ==
             NULL)) {
        cJSON_Delete(res);
        return NULL;
    }
    return res;
}

static void run_batch(const struct resource *res, struct request *req, struct reply *rep)
{
    cJSON *batch = json_apply_schema(&schema_batch_envelope, req->json, SCHEMA_FULL, rep);
    cJSON *body = batch != NULL ? cJSON_CreateObject() : NULL;
    cJSON *results = body != NULL ? cJSON_AddArrayToObject(body, "results") : NULL;
    const cJSON *raw;
    int index = 0;

    if (batch == NULL)
        return;
    cJSON_ArrayForEach(raw, cJSON_GetObjectItemCaseSensitive(batch, "items")) {
        struct reply r = { .status = 0 };
        if (results == NULL)
            break;
        apply_item(res, req, &r, raw);
        cJSON *result = result_of(index++, &r, raw);
        reply_free(&r);
        if (result == NULL || !cJSON_AddItemToArray(results, result)) {
            cJSON_Delete(result);
            results = NULL;
        }
    }
    if (results == NULL) {
        cJSON_Delete(body);
        body = NULL;
    }
    reply_json(rep, 200, body);
    cJSON_Delete(batch);
}

static void batch_line_items(struct request *req, struct reply *rep)
{
    run_batch(&resource_line_items, req, rep);
}

static void batch_licas(struct request *req, struct reply *rep)
{
    run_batch(&resource_licas, req, rep);
}

static void batch_orders(struct request *req, struct reply *rep)
{
    run_batch(&resource_orders, req, rep);
}

static void batch_catalog_items(struct request *req, struct reply *rep)
{
    run_batch(&resource_catalog_items, req, rep);
}

static void batch_item_pools(struct request *req, struct reply *rep)
{
    run_batch(&resource_item_pools, req, rep);
}

static const int batch_errors[] = { 400, 401, 415, 422, 503, 0 };
#define BATCH_DOC(var, tag_, what)                                                            \
    static const struct route_doc var = {                                                     \
        .tag = tag_, .request = &schema_batch_request, .response = &schema_batch_response,   \
        .status = 200, .errors = batch_errors,                                                \
        .summary = "Create, update (status changes too), delete (or, for the catalog, upsert) " \
                   "up to 100 " what " in one "                                                 \
                   "request, one by one: a result per item, in order, with the status that "  \
                   "item alone would have had (partial failure allowed; more items: 422)",    \
    }
BATCH_DOC(line_items_batch_doc, "LineItems", "line items");
BATCH_DOC(licas_batch_doc, "LICAs", "LICAs");
BATCH_DOC(orders_batch_doc, "Orders", "orders");
BATCH_DOC(catalog_items_batch_doc, "AssociatedItemsPool", "catalog items");
BATCH_DOC(item_pools_batch_doc, "AssociatedItemsPool", "associated items pools");

const struct route batch_routes[] = {
    { "POST", "/api/line-items/batch", batch_line_items, ROLES_ANY, BODY_JSON,
      &line_items_batch_doc },
    { "POST", "/api/licas/batch", batch_licas, ROLES_ANY, BODY_JSON, &licas_batch_doc },
    { "POST", "/api/orders/batch", batch_orders, ROLES_ANY, BODY_JSON, &orders_batch_doc },
    { "POST", "/api/catalog-items/batch", batch_catalog_items, ROLE_ADMIN | ROLE_OPERATOR,
      BODY_JSON, &catalog_items_batch_doc },
    { "POST", "/api/associated-items-pools/batch", batch_item_pools,
      ROLE_ADMIN | ROLE_OPERATOR, BODY_JSON, &item_pools_batch_doc },
};
const size_t batch_routes_count = sizeof batch_routes / sizeof batch_routes[0];
