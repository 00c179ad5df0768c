/* The spec's `developer/control/allocations` group: the low-level view of
 * the allocations (api_allocations.c), admins only.
 *
 *   GET /api/developer/control/allocations   {items: [Allocation]}, all,
 *                                            oldest first
 *   PUT /api/developer/control/allocations   {items: [...]}: the whole set
 *
 * A PUT replaces the set in one transaction, so serving never sees half of
 * it: an item with the id of an existing allocation replaces that one
 * (its created_at and created_by stay), an item without an id is a new
 * one, and every allocation the items do not name is deleted. Each item
 * meets the allocations resource's rules (an existing source and target:
 * 422 naming items[i]; one allocation per source and target: 422 within
 * the items, which are the whole set); each record that changes gets its
 * audit record, and one that does not is not written. 200 with the set
 * as stored. */
#include "api.h"

#include "allocations.h"
#include "resource.h"
#include "schema_external.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

#define PUT_ATTEMPTS 8

static void reply_view(struct reply *rep, cJSON **recs, size_t n)
{
    cJSON *view = cJSON_CreateObject(), *items = cJSON_AddArrayToObject(view, "items");

    qsort(recs, n, sizeof *recs, json_by_creation);
    for (size_t i = 0; items != NULL && i < n; i++) {
        cJSON *out = schema_output(&schema_allocation, recs[i]);
        if (out == NULL || !cJSON_AddItemToArray(items, out)) {
            cJSON_Delete(out);
            items = NULL;
        }
    }
    if (items == NULL) {
        cJSON_Delete(view);
        reply_error(rep, 500, "internal error");
        return;
    }
    reply_json(rep, 200, view);
}

static void api_developer_allocations_get(struct request *req, struct reply *rep)
{
    cJSON **recs;
    size_t n;
    enum store_status st = resource_load_all(request_store(req), &resource_allocations, &recs, &n);

    if (st != STORE_OK)
        reply_store_error(rep, st);
    else
        reply_view(rep, recs, n);
    resource_free_records(recs, n);
}

/* One item's refusal, or NULL: its sources, its target, its place in the set. */
static enum store_status item_check(struct store_conn *c, const cJSON *items, const cJSON *item,
                                    int i, struct reply *rep)
{
    const char *src = json_str_member(item, "ad_source_id");
    const char *target = json_str_member(item, "target_id");
    const char *why;
    cJSON *rec;
    int k = 0;

    for (const cJSON *e = items->child; e != item; e = e->next, k++)
        if (strcmp(json_str_member(e, "ad_source_id"), src) == 0 &&
            strcmp(json_str_member(e, "target_id"), target) == 0) {
            reply_error(rep, 422, "items[%d].target_id: the same ad source and target as "
                                  "items[%d]", i, k);
            return STORE_OK;
        }
    enum store_status st = resource_load(c, &resource_ad_sources, NULL, src, &rec);
    cJSON_Delete(rec);
    if (st == STORE_NOT_FOUND) {
        reply_error(rep, 422, "items[%d].ad_source_id: no such ad source", i);
        return STORE_OK;
    }
    if (st == STORE_OK && (st = allocation_target_check(c, item, &why)) == STORE_OK && why != NULL)
        reply_error(rep, 422, "items[%d].target_id: %s", i, why);
    return st;
}

/* The record item makes of before (NULL: a new one), in the table's order;
 * *changed says whether it differs from before. */
static cJSON *item_record(const cJSON *item, const cJSON *before, const struct user *actor,
                          const char *now, bool *changed)
{
    static const char *const fields[] = { "ad_source_id", "target", "target_id", "share", NULL };
    char id[UUID_STR_LEN];
    cJSON *rec = before != NULL ? cJSON_Duplicate(before, 1) : cJSON_CreateObject();
    bool ok = rec != NULL;

    if (ok && before == NULL) {
        uuid_v4(id);
        ok = cJSON_AddStringToObject(rec, "id", id) != NULL &&
             cJSON_AddStringToObject(rec, "created_at", now) != NULL &&
             cJSON_AddStringToObject(rec, "created_by", actor->id) != NULL;
    }
    for (const char *const *f = fields; ok && *f != NULL; f++) {
        cJSON *v = cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(item, *f), 1);
        cJSON_DeleteItemFromObjectCaseSensitive(rec, *f);
        ok = v != NULL && cJSON_AddItemToObject(rec, *f, v);
        if (!ok)
            cJSON_Delete(v);
    }
    *changed = before == NULL || !cJSON_Compare(before, rec, true);
    if (ok && *changed) {
        cJSON_DeleteItemFromObjectCaseSensitive(rec, "updated_at");
        ok = cJSON_AddStringToObject(rec, "updated_at", now) != NULL;
    }
    cJSON *ordered = ok ? schema_output(&schema_allocation, rec) : NULL;
    cJSON_Delete(rec);
    return ordered;
}

static cJSON *find(cJSON **recs, size_t n, const char *id, size_t *at)
{
    for (size_t j = 0; id != NULL && j < n; j++)
        if (strcmp(json_str_member(recs[j], "id"), id) == 0) {
            *at = j;
            return recs[j];
        }
    return NULL;
}

struct put {
    cJSON **recs;                       /* the stored set */
    size_t n;
    bool *kept;                         /* by recs' index */
    cJSON **after;                      /* by item */
    size_t nafter;
    struct txn t;
    bool writes;
};

/* Stages each item's record and its pair; refusals are answered in rep. */
static enum store_status stage_items(struct request *req, struct reply *rep, const cJSON *items,
                                     struct put *p, const char *now)
{
    struct store_conn *c = request_store(req);
    const cJSON *item;
    int i = 0;

    /* the pairs are the set's: written whole, since one item's new pair may
     * be another's old one */
    txn_cmd(&p->t, "DEL", ADSERVE_KEY_ALLOCATION_PAIRS, NULL);
    cJSON_ArrayForEach(item, items) {
        const char *id = json_str_member(item, "id");
        size_t at = 0;
        bool changed;
        cJSON *before = find(p->recs, p->n, id, &at);

        if (id != NULL && (before == NULL || p->kept[at])) {
            reply_error(rep, 422, "items[%d].id: %s", i,
                        before == NULL ? "no such allocation" : "named twice");
            return STORE_OK;
        }
        enum store_status st = item_check(c, items, item, i, rep);
        if (st != STORE_OK || rep->status != 0)
            return st;
        cJSON *after = item_record(item, before, req->user, now, &changed);
        if (after == NULL)
            return STORE_ERROR;
        p->after[p->nafter++] = after;
        if (before != NULL)
            p->kept[at] = true;
        if (changed) {
            resource_stage(&resource_allocations, &p->t, req->user,
                           before != NULL ? "update" : "create", before, after);
            p->writes = true;
        }
        char pair[2 * UUID_STR_LEN + 2];
        snprintf(pair, sizeof pair, "%s:%s", json_str_member(after, "ad_source_id"),
                 json_str_member(after, "target_id"));
        txn_cmd(&p->t, "HSET", ADSERVE_KEY_ALLOCATION_PAIRS, pair, json_str_member(after, "id"),
                NULL);
        i++;
    }
    for (size_t j = 0; j < p->n; j++)
        if (!p->kept[j]) {
            resource_stage(&resource_allocations, &p->t, req->user, "delete", p->recs[j], NULL);
            p->writes = true;
        }
    return STORE_OK;
}

static enum store_status put_attempt(struct request *req, struct reply *rep, const cJSON *items,
                                     struct put *p)
{
    struct store_conn *c = request_store(req);
    char now[RFC3339_LEN];
    enum store_status st = store_do(c, (const char *[]){
        "WATCH", ADSERVE_KEY_ALLOCATIONS, ADSERVE_KEY_AD_SOURCES, ADSERVE_KEY_AD_UNITS,
        ADSERVE_KEY_PLACEMENTS, ADSERVE_KEY_ALLOCATION_PAIRS, NULL });

    if (st == STORE_OK)
        st = resource_load_all(c, &resource_allocations, &p->recs, &p->n);
    if (st != STORE_OK)
        return st;
    p->kept = calloc(p->n + 1, sizeof *p->kept);
    p->after = calloc((size_t)cJSON_GetArraySize(items) + 1, sizeof *p->after);
    if (p->kept == NULL || p->after == NULL || now_rfc3339(now) != 0)
        return STORE_ERROR;
    st = stage_items(req, rep, items, p, now);
    if (st != STORE_OK || rep->status != 0 || !p->writes) {
        (void)store_do(c, (const char *[]){ "UNWATCH", NULL });
        if (st == STORE_OK && rep->status == 0)
            reply_view(rep, p->after, p->nafter);
        return st;
    }
    st = txn_exec(&p->t, c);
    if (st == STORE_OK)
        reply_view(rep, p->after, p->nafter);
    return st;
}

static void put_free(struct put *p)
{
    resource_free_records(p->recs, p->n);
    resource_free_records(p->after, p->nafter);
    free(p->kept);
    txn_free(&p->t);
    memset(p, 0, sizeof *p);
}

static void api_developer_allocations_put(struct request *req, struct reply *rep)
{
    cJSON *body = json_apply_schema(&schema_allocations_put, req->json, SCHEMA_FULL, rep);

    if (body == NULL)
        return;
    const cJSON *items = cJSON_GetObjectItemCaseSensitive(body, "items");
    enum store_status st = STORE_CONFLICT;
    for (int i = 0; i < PUT_ATTEMPTS && st == STORE_CONFLICT && rep->status == 0; i++) {
        struct put p = { 0 };
        txn_init(&p.t);
        st = put_attempt(req, rep, items, &p);
        put_free(&p);
    }
    if (st == STORE_CONFLICT && rep->status == 0)
        reply_error(rep, 409, "concurrent modification of allocations, retry");
    else if (st != STORE_OK && st != STORE_CONFLICT && rep->status == 0)
        reply_store_error(rep, st);
    cJSON_Delete(body);
}

static const int get_errors[] = { 401, 403, 503, 0 };
static const int put_errors[] = { 400, 401, 403, 409, 415, 422, 503, 0 };

static const struct route_doc get_doc = {
    .tag = "developer/control/allocations", .response = &schema_allocations_view, .status = 200,
    .errors = get_errors,
    .summary = "Every allocation, oldest first (admins only): the low-level view of "
               "/api/allocations",
};
static const struct route_doc put_doc = {
    .tag = "developer/control/allocations", .request = &schema_allocations_put,
    .response = &schema_allocations_view, .status = 200, .errors = put_errors,
    .summary = "Replace the whole set of allocations in one transaction (admins only): items "
               "with an id replace that allocation, items without are new, allocations not "
               "named are deleted",
};

const struct route developer_allocations_routes[] = {
    { "GET", "/api/developer/control/allocations", api_developer_allocations_get, ROLE_ADMIN,
      BODY_NONE, &get_doc },
    { "PUT", "/api/developer/control/allocations", api_developer_allocations_put, ROLE_ADMIN,
      BODY_JSON, &put_doc },
};
const size_t developer_allocations_routes_count =
    sizeof developer_allocations_routes / sizeof developer_allocations_routes[0];
