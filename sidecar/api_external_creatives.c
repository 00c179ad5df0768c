/* /api/external-creatives: the creatives that won from outside sources, as
 * the module records them (the contract's adserve:external_creatives), for
 * review; and their "block this" action.
 *
 *   GET  /api/external-creatives             list (filters: ad_source_id,
 *                                            adomain, crid), oldest first
 *   GET  /api/external-creatives/{id}
 *   POST /api/external-creatives/{id}/block  {kind, ad_unit_id, description}
 *
 * Read-only here: serving writes the records. The block action makes the
 * blocked creatives that stop the creative, through the blocked creatives
 * resource (its rules, its audit records, its change log): kind crid, one
 * block of its crid from its source; adomain or cat, one block of each of
 * its domains or categories from any source (a domain is the advertiser's
 * whoever brings it). Blocks that exist already are part of the answer,
 * not an error, so the action can be repeated: 201 when it made one, 200
 * when all were there. Inventory: admins and operators. */
#include "api.h"

#include "resource.h"
#include "schema_external.h"

#include <string.h>

static const struct resource_filter external_filters[] = {
    { "ad_source_id", "ad_source_id", NULL, false },
    { "adomain", "adomain", NULL, false },
    { "crid", "crid", NULL, false },
    { NULL, NULL, NULL, false },
};

const struct resource resource_external_creatives = {
    .name = ADSERVE_RECORD_EXTERNAL_CREATIVE, .label = "external creative",
    .hash = ADSERVE_KEY_EXTERNAL_CREATIVES, .location = "/api/external-creatives",
    .schema = &schema_external_creative, .list_query = &schema_external_creative_list_query,
    .filters = external_filters, .owner = OWNER_NONE,
};

static void external_list(struct request *req, struct reply *rep)
{
    resource_list(&resource_external_creatives, req, rep);
}

static void external_get(struct request *req, struct reply *rep)
{
    resource_get(&resource_external_creatives, req, rep);
}

/* One block of value: made, or found; false when rep holds the refusal. */
static bool block_value(struct request *req, struct reply *rep, cJSON *block, const char *value,
                        cJSON *items, bool *made)
{
    struct reply sub = { .status = 0 };
    cJSON *rec = NULL;

    cJSON_DeleteItemFromObjectCaseSensitive(block, "value");
    if (cJSON_AddStringToObject(block, "value", value) == NULL) {
        reply_error(rep, 500, "internal error");
        return false;
    }
    resource_create(&resource_blocked_creatives, req, &sub, block);
    if (sub.status == 201) {
        rec = sub.body;
        sub.body = NULL;
        *made = true;
    } else if (sub.status == 409) {
        /* the block that holds it, found as the create stored it */
        cJSON *norm = cJSON_Duplicate(block, 1);
        enum store_status st = STORE_ERROR;
        if (norm != NULL) {
            blocked_creative_normalise(norm);
            st = resource_find_unique(request_store(req), &resource_blocked_creatives, NULL, norm,
                                      &rec);
        }
        cJSON_Delete(norm);
        if (st != STORE_OK) {
            reply_free(&sub);
            reply_store_error(rep, st == STORE_NOT_FOUND ? STORE_CONFLICT : st);
            return false;
        }
    } else {
        *rep = sub;                     /* its refusal is ours */
        return false;
    }
    reply_free(&sub);
    if (!cJSON_AddItemToArray(items, rec)) {
        cJSON_Delete(rec);
        reply_error(rep, 500, "internal error");
        return false;
    }
    return true;
}

/* The values a block of kind takes from creative ext. */
static const cJSON *values_of(const cJSON *ext, int kind, cJSON **single)
{
    *single = NULL;
    if (kind == ADSERVE_BLOCK_CRID) {
        *single = cJSON_CreateArray();
        cJSON *crid = cJSON_CreateString(json_str_member(ext, "crid"));
        if (*single == NULL || crid == NULL || !cJSON_AddItemToArray(*single, crid)) {
            cJSON_Delete(crid);
            return NULL;
        }
        return *single;
    }
    return cJSON_GetObjectItemCaseSensitive(ext, kind == ADSERVE_BLOCK_ADOMAIN ? "adomain"
                                                                               : "cat");
}

static void block_all(struct request *req, struct reply *rep, const cJSON *ext, cJSON *block)
{
    int kind = adserve_vocab_str(adserve_block_kind_names, json_str_member(block, "kind"));
    cJSON *single, *body = cJSON_CreateObject();
    cJSON *items = body != NULL ? cJSON_AddArrayToObject(body, "items") : NULL;
    const cJSON *values = values_of(ext, kind, &single), *v;
    bool made = false, ok = items != NULL && values != NULL;

    if (ok && cJSON_GetArraySize(values) == 0) {
        reply_error(rep, 422, "kind: the external creative has no %s",
                    adserve_block_kind_names[kind]);
        ok = false;
    }
    const cJSON *each = ok ? values : NULL;
    cJSON_ArrayForEach(v, each)
        if (cJSON_IsString(v) && !(ok = block_value(req, rep, block, v->valuestring, items, &made)))
            break;
    if (ok)
        reply_json(rep, made ? 201 : 200, body);
    else
        cJSON_Delete(body);
    if (!ok && rep->status == 0)
        reply_error(rep, 500, "internal error");
    cJSON_Delete(single);
}

static void external_block(struct request *req, struct reply *rep)
{
    char id[UUID_STR_LEN];
    cJSON *ext = NULL;

    if (!request_uuid_param(req, "id", id)) {
        reply_error(rep, 404, "external creative not found");
        return;
    }
    /* the body first: a bad one is a 422 whatever the id */
    cJSON *block = json_apply_schema(&schema_block_request, req->json, SCHEMA_FULL, rep);
    if (block == NULL)
        return;
    enum store_status st = resource_load(request_store(req), &resource_external_creatives, NULL,
                                         id, &ext);
    if (st == STORE_NOT_FOUND) {
        reply_error(rep, 404, "external creative not found");
    } else if (st != STORE_OK) {
        reply_store_error(rep, st);
    } else {
        int kind = adserve_vocab_str(adserve_block_kind_names, json_str_member(block, "kind"));
        const char *src = json_str_member(ext, "ad_source_id");
        bool ok = cJSON_AddStringToObject(block, "external_creative_id", id) != NULL &&
                  (kind == ADSERVE_BLOCK_CRID && src != NULL
                       ? cJSON_AddStringToObject(block, "ad_source_id", src) != NULL
                       : cJSON_AddNullToObject(block, "ad_source_id") != NULL);
        if (ok)
            block_all(req, rep, ext, block);
        else
            reply_error(rep, 500, "internal error");
    }
    cJSON_Delete(ext);
    cJSON_Delete(block);
}

static const int list_errors[] = { 401, 403, 422, 503, 0 };
static const int get_errors[] = { 401, 404, 503, 0 };
static const int block_errors[] = { 400, 401, 403, 404, 409, 415, 422, 503, 0 };

static const struct route_doc list_doc = {
    .tag = "External Creative", .response = &schema_external_creative, .status = 200,
    .list = true, .query = &schema_external_creative_list_query, .errors = list_errors,
    .summary = "List the creatives that won from outside sources (recorded by serving); "
               "filters: ad_source_id, adomain, crid",
};
static const struct route_doc get_doc = {
    .tag = "External Creative", .response = &schema_external_creative, .status = 200,
    .errors = get_errors, .summary = "Get an external creative (advertisers: 404)",
};
static const struct route_doc block_doc = {
    .tag = "External Creative", .request = &schema_block_request,
    .response = &schema_block_response, .status = 201, .errors = block_errors,
    .summary = "Block this creative: its crid from its source, or its domains or categories "
               "from any source, for an ad unit or all (201 when a block was made, 200 when "
               "all were there)",
};

const struct route external_creatives_routes[] = {
    { "GET", "/api/external-creatives", external_list, INVENTORY_ROLES, BODY_NONE, &list_doc },
    { "GET", "/api/external-creatives/{id}", external_get, ROLES_ANY, BODY_NONE, &get_doc },
    { "POST", "/api/external-creatives/{id}/block", external_block, INVENTORY_ROLES, BODY_JSON,
      &block_doc },
};
const size_t external_creatives_routes_count =
    sizeof external_creatives_routes / sizeof external_creatives_routes[0];
