/* The spec's endpoint 1, in the `developer` group (low-level operational
 * endpoints):
 *
 *   PATCH /api/developer/control/ad-units/{ad_unit_id}/ext   (admin only)
 *
 * The body is exactly {"ext": AdUnitExt}; the submitted ext, normalised
 * with every default of the AdUnitExt table, replaces the stored one
 * whole, so {"ext": {}} resets it. 200 with the whole ad unit. */
#include "api.h"

#include "ad_units.h"
#include "schemas.h"

struct ext_update {
    char id[UUID_STR_LEN];
    const cJSON *ext;            /* normalised */
};

static enum store_status replace_ext(struct request *req, struct reply *rep, const cJSON *before,
                                     const struct ext_update *u)
{
    cJSON *after = cJSON_Duplicate(before, 1), *ext = cJSON_Duplicate(u->ext, 1);
    struct txn t;

    if (after != NULL)
        cJSON_DeleteItemFromObjectCaseSensitive(after, "ext");
    if (after == NULL || ext == NULL || !cJSON_AddItemToObject(after, "ext", ext)) {
        cJSON_Delete(ext);
        cJSON_Delete(after);
        return STORE_ERROR;
    }
    if ((after = ad_unit_finish(after)) == NULL)
        return STORE_ERROR;
    if (!ad_unit_fits(after, rep)) {
        cJSON_Delete(after);
        return STORE_OK;
    }
    txn_init(&t);
    ad_unit_txn_put(&t, req->user, "update", before, after);
    /* ext.bcat is read by serving. */
    txn_bump_revision(&t);
    enum store_status st = txn_exec(&t, request_store(req));
    txn_free(&t);
    if (st == STORE_OK)
        reply_json(rep, 200, after);
    else
        cJSON_Delete(after);
    return st;
}

static enum store_status ext_attempt(struct request *req, struct reply *rep, void *arg)
{
    const struct ext_update *u = arg;
    cJSON *before;
    enum store_status st = ad_unit_load(request_store(req), u->id, &before);

    if (st == STORE_NOT_FOUND) {
        reply_error(rep, 404, "ad unit not found");
        return STORE_OK;
    }
    if (st != STORE_OK)
        return st;
    st = replace_ext(req, rep, before, u);
    cJSON_Delete(before);
    return st;
}

static void api_developer_ad_unit_ext(struct request *req, struct reply *rep)
{
    struct ext_update u;
    struct schema_error err;

    if (!ad_unit_path_id(req, rep, "ad_unit_id", u.id))
        return;
    /* The body is checked before the ad unit is looked up: a bad request
     * is a 422 whether or not the id exists. */
    cJSON *body = schema_apply(&schema_developer_ad_unit_ext_request, req->json, SCHEMA_FULL, &err);
    if (body == NULL) {
        reply_invalid(rep, &err);
        return;
    }
    u.ext = cJSON_GetObjectItemCaseSensitive(body, "ext");
    ad_unit_write(req, rep, ext_attempt, &u);
    cJSON_Delete(body);
}

static const int ext_errors[] = { 400, 401, 403, 404, 415, 422, 503, 0 };

static const struct route_doc ext_doc = {
    .tag = "developer", .request = &schema_developer_ad_unit_ext_request,
    .response = &schema_ad_unit, .status = 200, .errors = ext_errors,
    .summary = "Update ad unit extension: the submitted ext, with the defaults of AdUnitExt for "
               "omitted fields, replaces the stored ext whole",
};

const struct route developer_routes[] = {
    { "PATCH", "/api/developer/control/ad-units/{ad_unit_id}/ext", api_developer_ad_unit_ext,
      ROLE_ADMIN, BODY_JSON_SPEC_400, &ext_doc },
};
const size_t developer_routes_count = sizeof developer_routes / sizeof developer_routes[0];
