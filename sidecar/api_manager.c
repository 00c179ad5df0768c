/* The manager group: account managers and their book of advertisers.
 *
 *   GET /api/manager/advertisers   (admin, operator)
 *   GET /api/manager/managers      (admin)
 *
 * An advertiser's manager_id names its account manager, an admin or an
 * operator (api_advertisers.c checks it and keeps the index of each
 * manager's advertisers; api_users.c keeps a manager from being deleted
 * or demoted while it has advertisers). The first route is an operator's
 * scoped view: the caller's own advertisers, by name, each with how many
 * orders and creatives it has; an admin may name any manager with
 * ?manager_id=. The second lists every admin and operator with the size
 * of its book. */
#include "api.h"

#include "resource.h"
#include "schema_auth.h"
#include "schema_demand.h"
#include "schema_rows.h"

#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KEY_MAX 128

static int by_name(const void *a, const void *b)
{
    const char *x = json_str_member(*(cJSON *const *)a, "name");
    const char *y = json_str_member(*(cJSON *const *)b, "name");
    int c = strcmp(x != NULL ? x : "", y != NULL ? y : "");

    return c != 0 ? c : json_by_creation(a, b);
}

/* The sizes of the sets prefixes[j] + ids[i], into sizes[i * np + j]: one
 * SCARD each, in one pipeline. */
static enum store_status set_sizes(struct store_conn *c, const char *const *prefixes, size_t np,
                                   const char *const *ids, size_t nids, long long *sizes)
{
    size_t n = np * nids;
    char (*keys)[KEY_MAX] = calloc(n + 1, sizeof *keys);
    const char *(*argv)[3] = calloc(n + 1, sizeof *argv);
    const char *const **cmds = calloc(n + 1, sizeof *cmds);
    redisReply **replies = calloc(n + 1, sizeof *replies);
    enum store_status st = keys && argv && cmds && replies ? STORE_OK : STORE_ERROR;

    for (size_t i = 0; st == STORE_OK && i < n; i++) {
        snprintf(keys[i], KEY_MAX, "%s%s", prefixes[i % np], ids[i / np]);
        argv[i][0] = "SCARD";
        argv[i][1] = keys[i];
        cmds[i] = argv[i];
    }
    if (st == STORE_OK && n > 0)
        st = store_pipeline(c, cmds, n, replies);
    for (size_t i = 0; i < n && replies != NULL; i++) {
        if (st == STORE_OK)
            sizes[i] = replies[i]->type == REDIS_REPLY_INTEGER ? replies[i]->integer : 0;
        freeReplyObject(replies[i]);
    }
    free(keys);
    free(argv);
    free(cmds);
    free(replies);
    return st;
}

/* The page's items as {advertiser, orders, creatives}: a new array (the
 * advertisers move into it), or NULL out of memory. */
static cJSON *wrap_rows(cJSON *items, const long long *counts)
{
    cJSON *rows = cJSON_CreateArray(), *adv;

    for (size_t i = 0; rows != NULL && (adv = cJSON_DetachItemFromArray(items, 0)) != NULL; i++) {
        cJSON *row = cJSON_CreateObject();
        if (row == NULL || !cJSON_AddItemToObject(row, "advertiser", adv)) {
            cJSON_Delete(adv);
            cJSON_Delete(row);
            cJSON_Delete(rows);
            return NULL;
        }
        if (!cJSON_AddItemToArray(rows, row) ||
            cJSON_AddNumberToObject(row, "orders", (double)counts[2 * i]) == NULL ||
            cJSON_AddNumberToObject(row, "creatives", (double)counts[2 * i + 1]) == NULL) {
            cJSON_Delete(rows);
            return NULL;
        }
    }
    return rows;
}

/* {advertiser, orders, creatives} for each advertiser of the page */
static enum store_status with_counts(struct store_conn *c, cJSON *page)
{
    static const char *const indexes[] = { ADSERVE_KEY_ADVERTISER_ORDERS,
                                           ADSERVE_KEY_ADVERTISER_CREATIVES };
    cJSON *items = cJSON_GetObjectItemCaseSensitive(page, "items"), *adv;
    size_t n = (size_t)cJSON_GetArraySize(items), i = 0;
    const char **ids = calloc(n + 1, sizeof *ids);
    long long *counts = calloc(2 * n + 1, sizeof *counts);
    enum store_status st = ids != NULL && counts != NULL ? STORE_OK : STORE_ERROR;

    cJSON_ArrayForEach(adv, items) {
        const char *id = json_str_member(adv, "id");
        if (ids != NULL)
            ids[i++] = id != NULL ? id : "";
    }
    if (st == STORE_OK)
        st = set_sizes(c, indexes, 2, ids, n, counts);
    cJSON *rows = st == STORE_OK ? wrap_rows(items, counts) : NULL;
    if (st == STORE_OK &&
        (rows == NULL || !cJSON_ReplaceItemInObjectCaseSensitive(page, "items", rows))) {
        cJSON_Delete(rows);
        st = STORE_ERROR;
    }
    free(ids);
    free(counts);
    return st;
}

static cJSON *manager_json(const struct user *u)
{
    cJSON *o = cJSON_CreateObject();

    if (o == NULL || cJSON_AddStringToObject(o, "id", u->id) == NULL ||
        cJSON_AddStringToObject(o, "email", u->email) == NULL ||
        cJSON_AddStringToObject(o, "role", u->role) == NULL) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

/* The manager a request names: the caller, or (an admin asking) the
 * ?manager_id= user. False with the answer in rep. */
static bool named_manager(struct request *req, struct reply *rep, const cJSON *q, struct user *u)
{
    const char *id = json_str_member(q, "manager_id");

    if (id == NULL || strcmp(id, req->user->id) == 0) {
        *u = *req->user;
        return true;
    }
    if (resource_role(req) != ROLE_ADMIN) {
        reply_error(rep, 403, "operators see their own advertisers");
        return false;
    }
    enum store_status st = user_load(request_store(req), id, u);
    sodium_memzero(u->password_hash, sizeof u->password_hash);
    if (st == STORE_NOT_FOUND || (st == STORE_OK && (role_from_name(u->role) & INVENTORY_ROLES) == 0)) {
        reply_error(rep, 404, "no admin or operator has this id");
        return false;
    }
    if (st != STORE_OK)
        reply_store_error(rep, st);
    return st == STORE_OK;
}

static const struct schema_field book_query_fields[] = {
    SCHEMA_PAGING_FIELDS,
    { "manager_id", &schema_uuid, .description = "another manager's book (admins only)" },
    { NULL },
};
static const struct schema book_query = {
    .name = "ManagerAdvertisersQuery", .type = SCHEMA_OBJECT, .fields = book_query_fields,
};

static void api_manager_advertisers(struct request *req, struct reply *rep)
{
    cJSON *q = request_query_object(req, rep, &book_query), **recs = NULL, *page = NULL;
    size_t n = 0;
    struct user m;

    if (q == NULL || !named_manager(req, rep, q, &m)) {
        cJSON_Delete(q);
        return;
    }
    enum store_status st = resource_load_indexed(request_store(req), &resource_advertisers,
                                                 ADSERVE_KEY_MANAGER_ADVERTISERS, m.id, &recs, &n);
    if (st == STORE_OK) {
        qsort(recs, n, sizeof *recs, by_name);
        page = json_page(&schema_advertiser, recs, n, q);
        st = page == NULL ? STORE_ERROR
                          : with_counts(request_store(req), page);
    }
    cJSON *who = st == STORE_OK ? manager_json(&m) : NULL;
    if (who != NULL && cJSON_AddItemToObject(page, "manager", who))
        reply_json(rep, 200, page);
    else {
        cJSON_Delete(who);
        cJSON_Delete(page);
        reply_store_error(rep, st == STORE_OK ? STORE_ERROR : st);
    }
    resource_free_records(recs, n);
    sodium_memzero(&m, sizeof m);
    cJSON_Delete(q);
}

/* every admin and operator, with the size of its book */
static cJSON *managers(struct store_conn *c, const struct user *users, size_t n)
{
    static const char *const book[] = { ADSERVE_KEY_MANAGER_ADVERTISERS };
    const struct user **m = calloc(n + 1, sizeof *m);
    const char **ids = calloc(n + 1, sizeof *ids);
    long long *sizes = calloc(n + 1, sizeof *sizes);
    cJSON *items = m && ids && sizes ? cJSON_CreateArray() : NULL;
    size_t k = 0;

    for (size_t i = 0; items != NULL && i < n; i++)
        if ((role_from_name(users[i].role) & INVENTORY_ROLES) != 0) {
            m[k] = &users[i];
            ids[k++] = users[i].id;
        }
    if (items != NULL && set_sizes(c, book, 1, ids, k, sizes) != STORE_OK) {
        cJSON_Delete(items);
        items = NULL;
    }
    for (size_t i = 0; items != NULL && i < k; i++) {
        cJSON *o = manager_json(m[i]);
        if (o == NULL || cJSON_AddNumberToObject(o, "advertisers", (double)sizes[i]) == NULL ||
            !cJSON_AddItemToArray(items, o)) {
            cJSON_Delete(o);
            cJSON_Delete(items);
            items = NULL;
        }
    }
    free(m);
    free(ids);
    free(sizes);
    return items;
}

static void api_manager_managers(struct request *req, struct reply *rep)
{
    struct user *users = NULL;
    size_t n = 0;
    enum store_status st = users_load_all(request_store(req), &users, &n);
    cJSON *items = st == STORE_OK ? managers(request_store(req), users, n) : NULL;
    cJSON *body = items != NULL ? cJSON_CreateObject() : NULL;

    if (users != NULL) {
        sodium_memzero(users, n * sizeof *users);
        free(users);
    }
    if (body != NULL && cJSON_AddItemToObject(body, "items", items) &&
        cJSON_AddNumberToObject(body, "total", cJSON_GetArraySize(items)) != NULL) {
        reply_json(rep, 200, body);
        return;
    }
    if (body == NULL)
        cJSON_Delete(items);
    cJSON_Delete(body);
    reply_store_error(rep, st == STORE_OK ? STORE_ERROR : st);
}

static const struct schema whole = { .type = SCHEMA_INTEGER, .min = 0, .has_min = true };
static const struct schema text = { .type = SCHEMA_STRING };
static const struct schema_field manager_fields[] = {
    { "id", &schema_uuid, .required = true },
    { "email", &text, .required = true },
    { "role", &text, .required = true, .description = "admin or operator" },
    { "advertisers", &whole, .description = "the size of its book (the managers list only)" },
    { NULL },
};
static const struct schema manager_schema = {
    .name = "Manager", .type = SCHEMA_OBJECT, .fields = manager_fields,
};
static const struct schema manager_list = { .type = SCHEMA_ARRAY, .items = &manager_schema };
static const struct schema_field managed_fields[] = {
    { "advertiser", &schema_advertiser, .required = true },
    { "orders", &whole, .required = true },
    { "creatives", &whole, .required = true },
    { NULL },
};
static const struct schema managed_schema = {
    .name = "ManagedAdvertiser", .type = SCHEMA_OBJECT, .fields = managed_fields,
};
static const struct schema managed_list = { .type = SCHEMA_ARRAY, .items = &managed_schema };
static const struct schema_field book_fields[] = {
    { "manager", &manager_schema, .required = true },
    { "items", &managed_list, .required = true, .description = "by advertiser name" },
    { "total", &whole, .required = true },
    { NULL },
};
static const struct schema book_schema = {
    .name = "ManagerBook", .type = SCHEMA_OBJECT, .fields = book_fields,
};
static const struct schema_field managers_fields[] = {
    { "items", &manager_list, .required = true },
    { "total", &whole, .required = true },
    { NULL },
};
static const struct schema managers_schema = {
    .name = "Managers", .type = SCHEMA_OBJECT, .fields = managers_fields,
};

static const int book_errors[] = { 401, 403, 404, 422, 503, 0 };
static const struct route_doc book_doc = {
    .tag = "manager", .query = &book_query, .response = &book_schema, .status = 200,
    .errors = book_errors,
    .summary = "A manager's advertisers (the caller's; admins: ?manager_id=), with their orders "
               "and creatives counted",
};
static const int managers_errors[] = { 401, 403, 503, 0 };
static const struct route_doc managers_doc = {
    .tag = "manager", .response = &managers_schema, .status = 200, .errors = managers_errors,
    .summary = "Every admin and operator, with how many advertisers each manages",
};

const struct route manager_routes[] = {
    { "GET", "/api/manager/advertisers", api_manager_advertisers, INVENTORY_ROLES, BODY_NONE,
      &book_doc },
    { "GET", "/api/manager/managers", api_manager_managers, ROLE_ADMIN, BODY_NONE, &managers_doc },
};
const size_t manager_routes_count = sizeof manager_routes / sizeof manager_routes[0];
