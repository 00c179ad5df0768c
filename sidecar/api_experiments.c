/* /api/experiments: splits of an ad unit's traffic between variants of its
 * ext and recommendation fields (resource.h, README "Experiments"), and
 * GET /api/experiments/{id}/results, each variant's counters with its CTR,
 * the CTR's 95% interval and a test against the first variant.
 *
 * Inventory: admins and operators only. Rules:
 *   - ad_unit_id names an ad unit (422) and cannot change (409);
 *   - 2 to 8 variants of distinct ids; each variant, applied to the ad unit
 *     as serving applies it (adserve_variant_apply), must leave a unit the
 *     API would store: a valid AdUnitExt and RecommendationPlacement, a
 *     content filter that compiles, and so on (422 "variants[i]...");
 *   - PAUSED (the default) <-> ACTIVE, any -> ARCHIVED, nothing after
 *     ARCHIVED (409); one ACTIVE experiment per ad unit (409);
 *   - delete when not ACTIVE (409);
 *   - serving reads adserve:experiments, so every write bumps the
 *     revision. A variant is checked against the unit as it is when the
 *     variants are written and when the experiment starts; a later change
 *     to the unit is the unit's: a variant that no longer makes a valid
 *     unit serves what the engine makes of it, as any record written past
 *     the API would, and can still be paused, archived or deleted (as can
 *     an experiment whose unit was deleted). */
#include "api.h"

#include "ad_units.h"
#include "adserve_experiment.h"
#include "experiments.h"
#include "resource.h"
#include "schema_experiment.h"
#include "schemas.h"
#include "stats.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#define RESULTS_WINDOW_DAYS 31

static const char *const experiment_watch[] = { ADSERVE_KEY_AD_UNITS, ADSERVE_KEY_EXPERIMENTS,
                                                NULL };
static const char *const experiment_immutable[] = { "ad_unit_id", NULL };
static const struct resource_ref experiment_refs[] = {
    { "ad_unit_id", &resource_ad_units_ref, false },
    { NULL, NULL, false },
};
static const struct resource_index experiment_indexes[] = {
    { "ad_unit_id", ADSERVE_KEY_AD_UNIT_EXPERIMENTS },
    { NULL, NULL },
};
static const char *const experiment_deletable[] = { ADSERVE_V_PAUSED, ADSERVE_V_ARCHIVED, NULL };
static const struct resource_transition experiment_transitions[] = {
    { ADSERVE_V_PAUSED, ADSERVE_V_ACTIVE, 0 },
    { ADSERVE_V_ACTIVE, ADSERVE_V_PAUSED, 0 },
    { NULL, ADSERVE_V_ARCHIVED, 0 },
    { NULL, NULL, 0 },
};
static const struct resource_states experiment_states = {
    .field = "status", .transitions = experiment_transitions, .frozen = ADSERVE_V_ARCHIVED,
    .deletable = experiment_deletable,
};
static const struct resource_filter experiment_filters[] = {
    { "ad_unit_id", "ad_unit_id", ADSERVE_KEY_AD_UNIT_EXPERIMENTS, false },
    { "status", "status", NULL, false },
    { NULL, NULL, NULL, false },
};

/* A member of the variant's unit, normalised by its shape: what the API
 * would store. */
static bool member_valid(struct resource_write *w, cJSON *unit, int i, const char *name,
                         const struct schema *shape, enum store_status *st)
{
    struct schema_error err;
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(unit, name);
    cJSON *empty = m == NULL ? cJSON_CreateObject() : NULL;   /* a unit written past the API */
    cJSON *v = schema_apply(shape, m != NULL ? m : empty, SCHEMA_FULL, &err);

    cJSON_Delete(empty);

    if (v == NULL) {
        *st = resource_refuse(w, 422, "variants[%d].%s%s%s: %s", i, name, err.path[0] ? "." : "",
                              err.path, err.msg);
        return false;
    }
    if (m != NULL ? !cJSON_ReplaceItemInObjectCaseSensitive(unit, name, v)
                  : !cJSON_AddItemToObject(unit, name, v)) {
        cJSON_Delete(v);
        *st = STORE_ERROR;
        return false;
    }
    return true;
}

/* Variant i applied to the ad unit makes a unit the API would store. */
static enum store_status variant_check(struct resource_write *w, const cJSON *unit,
                                       const cJSON *variant, int i)
{
    enum store_status st = STORE_OK;
    struct reply fits = { 0 };
    cJSON *after = cJSON_Duplicate(unit, 1);

    if (after == NULL || adserve_variant_apply(after, variant) != 0)
        st = STORE_ERROR;
    else if (member_valid(w, after, i, ADSERVE_V_VARIANT_EXT, &schema_ad_unit_ext, &st) &&
             member_valid(w, after, i, ADSERVE_V_VARIANT_REC, &schema_recommendation_placement,
                          &st) &&
             !ad_unit_fits(after, &fits)) {
        const char *detail = json_str_member(fits.body, "detail");
        st = fits.status == 422 ? resource_refuse(w, 422, "variants[%d]: %s", i,
                                                  detail != NULL ? detail : "invalid")
                                : STORE_ERROR;
    }
    cJSON_Delete(fits.body);
    cJSON_Delete(after);
    return st;
}

/* No other ACTIVE experiment splits the same ad unit. */
static enum store_status single_active(struct resource_write *w, const char *unit_id)
{
    const char *id = json_str_member(w->after, "id");
    cJSON **recs;
    size_t n;
    enum store_status st = resource_load_indexed(w->c, w->res, ADSERVE_KEY_AD_UNIT_EXPERIMENTS,
                                                 unit_id, &recs, &n);

    for (size_t i = 0; st == STORE_OK && i < n; i++) {
        const char *other = json_str_member(recs[i], "id");
        const char *status = json_str_member(recs[i], "status");
        if (other != NULL && id != NULL && strcmp(other, id) != 0 && status != NULL &&
            strcmp(status, ADSERVE_V_ACTIVE) == 0)
            st = resource_refuse(w, 409, "status: experiment %s is ACTIVE on this ad unit "
                                         "already (pause it first)", other);
    }
    resource_free_records(recs, n);
    return st;
}

static enum store_status experiment_check(struct resource_write *w)
{
    const cJSON *variants = cJSON_GetObjectItemCaseSensitive(w->after, "variants"), *v, *u;
    const char *unit_id = json_str_member(w->after, "ad_unit_id");
    const char *status = json_str_member(w->after, "status");
    int n = cJSON_GetArraySize(variants), i = 0;
    cJSON *unit = NULL;
    enum store_status st;

    if (n < ADSERVE_VARIANTS_MIN)
        return resource_refuse(w, 422, "variants: %d at least", ADSERVE_VARIANTS_MIN);
    cJSON_ArrayForEach(v, variants) {
        const char *id = json_str_member(v, "id");
        if (!adserve_variant_id_ok(id))
            return resource_refuse(w, 422, "variants[%d].id: letters, digits, _ and - only", i);
        for (u = variants->child; u != v; u = u->next)
            if (strcmp(json_str_member(u, "id"), id) == 0)
                return resource_refuse(w, 422, "variants[%d].id: \"%s\" twice", i, id);
        i++;
    }

    /* the variants against the unit as it is now: when they are written,
     * and when the experiment starts (the unit may have changed since);
     * pausing, archiving or renaming one whose unit changed or went stays
     * possible */
    const char *was = w->before != NULL ? json_str_member(w->before, "status") : NULL;
    bool active = status != NULL && strcmp(status, ADSERVE_V_ACTIVE) == 0;
    bool starts = active && (was == NULL || strcmp(was, ADSERVE_V_ACTIVE) != 0);
    if (w->before != NULL && !starts && !resource_changed(w, "variants"))
        return STORE_OK;
    st = ad_unit_load(w->c, unit_id, &unit);
    if (st == STORE_NOT_FOUND)
        return resource_refuse(w, 422, "ad_unit_id: no such ad unit");
    i = 0;
    cJSON_ArrayForEach(v, variants) {
        if (st != STORE_OK || w->rep->status != 0)
            break;
        st = variant_check(w, unit, v, i++);
    }
    cJSON_Delete(unit);
    if (st == STORE_OK && w->rep->status == 0 && active)
        st = single_active(w, unit_id);
    return st;
}

const struct resource resource_experiments = {
    .name = ADSERVE_RECORD_EXPERIMENT, .label = "experiment", .hash = ADSERVE_KEY_EXPERIMENTS,
    .location = "/api/experiments", .schema = &schema_experiment,
    .list_query = &schema_experiment_list_query, .filters = experiment_filters,
    .serving = true, .owner = OWNER_NONE, .watch = experiment_watch,
    .immutable = experiment_immutable, .refs = experiment_refs, .indexes = experiment_indexes,
    .states = &experiment_states, .check = experiment_check,
};

/* ---- results ------------------------------------------------------------------------------- */

struct results {
    const char *id;                     /* the experiment's */
    size_t id_len;
    const cJSON *variants;
    long long v[ADSERVE_VARIANTS_MAX][XV_COUNT];
};

int experiment_counter_of(const char *metric, size_t len)
{
    static const int map[ADSERVE_METRIC_COUNT] = {
        [ADSERVE_METRIC_REQ] = XV_REQ + 1, [ADSERVE_METRIC_ADS] = XV_ADS + 1,
        [ADSERVE_METRIC_IMP] = XV_IMP + 1, [ADSERVE_METRIC_CLK] = XV_CLK + 1,
        [ADSERVE_METRIC_SHOWN] = XV_SHOWN + 1,
    };
    int m = adserve_vocab(adserve_metric_names, metric, len);

    return m >= 0 ? map[m] - 1 : -1;
}

/* The variant index of "{experiment id}/{variant id}", or -1. */
static int variant_of(const struct results *r, const char *id, size_t len)
{
    const cJSON *v;
    int i = 0;

    if (len <= r->id_len + 1 || memcmp(id, r->id, r->id_len) != 0 ||
        id[r->id_len] != ADSERVE_VARIANT_SEP)
        return -1;
    id += r->id_len + 1;
    len -= r->id_len + 1;
    cJSON_ArrayForEach(v, r->variants) {
        const char *vid = json_str_member(v, "id");
        if (vid != NULL && strlen(vid) == len && memcmp(vid, id, len) == 0)
            return i < ADSERVE_VARIANTS_MAX ? i : -1;
        i++;
    }
    return -1;
}

static int on_hour(long long hour, const redisReply *fields, void *arg)
{
    struct results *r = arg;
    const char *id, *metric;
    size_t len, mlen;
    char *end;

    (void)hour;
    for (size_t i = 0; fields->type == REDIS_REPLY_ARRAY && i + 1 < fields->elements; i += 2) {
        const redisReply *f = fields->element[i], *val = fields->element[i + 1];
        if (!stats_field_split(f, ADSERVE_V_DIM_VARIANT, &id, &len, &metric, &mlen))
            continue;
        int k = variant_of(r, id, len), c = experiment_counter_of(metric, mlen);
        long long n = val->type == REDIS_REPLY_STRING ? strtoll(val->str, &end, 10) : 0;
        if (k >= 0 && c >= 0 && n > 0)
            r->v[k][c] += n;
    }
    return 0;
}

bool experiment_variant_row(cJSON *arr, const cJSON *variant, const long long *v,
                            const long long *first)
{
    double ctr[3], p = first != NULL ? stats_two_proportion_p(v[XV_CLK], v[XV_IMP], first[XV_CLK],
                                                              first[XV_IMP])
                                     : -1;
    cJSON *e = cJSON_CreateObject();

    stats_wilson(v[XV_CLK], v[XV_IMP], ctr);
    if (json_str_member(variant, "id") == NULL) {   /* written past the API: no row */
        cJSON_Delete(e);
        return e != NULL;
    }
    if (e == NULL || !cJSON_AddItemToArray(arr, e)) {
        cJSON_Delete(e);
        return false;
    }
    return cJSON_AddStringToObject(e, "id", json_str_member(variant, "id")) &&
           cJSON_AddNumberToObject(e, "weight",
                                   cJSON_GetNumberValue(cJSON_GetObjectItem(variant, "weight"))) &&
           cJSON_AddNumberToObject(e, "requests", (double)v[XV_REQ]) &&
           cJSON_AddNumberToObject(e, "answers", (double)v[XV_ADS]) &&
           cJSON_AddNumberToObject(e, "impressions", (double)v[XV_IMP]) &&
           cJSON_AddNumberToObject(e, "clicks", (double)v[XV_CLK]) &&
           cJSON_AddNumberToObject(e, "shown", (double)v[XV_SHOWN]) &&
           cJSON_AddNumberToObject(e, "fill_rate", stats_ratio(v[XV_ADS], v[XV_REQ])) &&
           cJSON_AddNumberToObject(e, "ctr", ctr[0]) &&
           cJSON_AddNumberToObject(e, "ctr_low", ctr[1]) &&
           cJSON_AddNumberToObject(e, "ctr_high", ctr[2]) &&
           (p >= 0 ? cJSON_AddNumberToObject(e, "p_value", p) != NULL
                   : cJSON_AddNullToObject(e, "p_value") != NULL);
}

static cJSON *results_json(const struct results *r, const cJSON *x, long long from, long long to)
{
    char f[RFC3339_LEN], t[RFC3339_LEN];
    cJSON *o = cJSON_CreateObject(), *arr;
    const cJSON *v;
    int i = 0;
    bool ok = o != NULL && rfc3339_format(from, f) == 0 && rfc3339_format(to, t) == 0 &&
              cJSON_AddStringToObject(o, "experiment_id", r->id) &&
              cJSON_AddStringToObject(o, "ad_unit_id", json_str_member(x, "ad_unit_id")) &&
              cJSON_AddStringToObject(o, "status", json_str_member(x, "status")) &&
              cJSON_AddStringToObject(o, "from", f) && cJSON_AddStringToObject(o, "to", t) &&
              (arr = cJSON_AddArrayToObject(o, "variants")) != NULL;

    cJSON_ArrayForEach(v, r->variants) {
        if (!ok || i == ADSERVE_VARIANTS_MAX)
            break;
        ok = experiment_variant_row(arr, v, r->v[i], i > 0 ? r->v[0] : NULL);
        i++;
    }
    if (!ok) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

static void experiment_results(struct request *req, struct reply *rep)
{
    char id[UUID_STR_LEN];
    cJSON *q, *x = NULL;
    long long from, to, created;
    struct results r = { 0 };

    if (!request_uuid_param(req, "id", id)) {
        reply_error(rep, 404, "experiment not found");
        return;
    }
    if ((q = request_query_object(req, rep, &schema_experiment_results_query)) == NULL)
        return;
    enum store_status st = resource_load(request_store(req), &resource_experiments, NULL, id, &x);
    const char *created_at = x != NULL ? json_str_member(x, "created_at") : NULL;

    if (st == STORE_NOT_FOUND)
        reply_error(rep, 404, "experiment not found");
    else if (st != STORE_OK)
        reply_store_error(rep, st);
    else if (stats_window(q, created_at != NULL && rfc3339_parse(created_at, &created) == 0
                                 ? created : (long long)time(NULL) - STATS_DAY,
                          RESULTS_WINDOW_DAYS, NULL, &from, &to, rep)) {
        long long first = stats_floor(from, STATS_HOUR);
        r.id = id;
        r.id_len = strlen(id);
        r.variants = cJSON_GetObjectItemCaseSensitive(x, "variants");
        st = stats_read_hours(request_store(req), first,
                              (to - first + STATS_HOUR - 1) / STATS_HOUR, on_hour, &r);
        if (st != STORE_OK)
            reply_store_error(rep, st);
        else
            reply_json(rep, 200, results_json(&r, x, from, to));
    }
    cJSON_Delete(x);
    cJSON_Delete(q);
}

/* ---- routes -------------------------------------------------------------------------------- */

RESOURCE_HANDLERS(experiments, resource_experiments)
RESOURCE_DOCS(experiments, "Experiment", schema_experiment, schema_experiment_patch,
              schema_experiment_list_query,
              "List experiments, oldest first; filters: ad_unit_id, status",
              "Create an experiment (PAUSED unless given); every variant applied to the ad "
              "unit must make a valid unit (422); one ACTIVE per ad unit (409)",
              "Get an experiment (advertisers: 403)",
              "Update an experiment; status: PAUSED <-> ACTIVE, any -> ARCHIVED (else 409); "
              "ad_unit_id cannot change; serving follows within a second",
              "Delete an experiment that is not ACTIVE (else 409)");

static const int results_errors[] = { 401, 403, 404, 422, 503, 0 };
static const struct route_doc results_doc = {
    .tag = "Experiment", .response = &schema_experiment_results, .status = 200,
    .query = &schema_experiment_results_query, .errors = results_errors,
    .summary = "Each variant's requests, answers, impressions and clicks over a window, its "
               "CTR with the 95% Wilson interval, and the p-value of its CTR against the "
               "first variant's",
};

const struct route experiments_routes[] = {
    { "GET", "/api/experiments", experiments_list, INVENTORY_ROLES, BODY_NONE,
      &experiments_list_doc },
    { "POST", "/api/experiments", experiments_create, INVENTORY_ROLES, BODY_JSON,
      &experiments_create_doc },
    { "GET", "/api/experiments/{id}", experiments_get, INVENTORY_ROLES, BODY_NONE,
      &experiments_get_doc },
    { "PATCH", "/api/experiments/{id}", experiments_update, INVENTORY_ROLES, BODY_JSON,
      &experiments_update_doc },
    { "DELETE", "/api/experiments/{id}", experiments_delete, INVENTORY_ROLES, BODY_NONE,
      &experiments_delete_doc },
    { "GET", "/api/experiments/{id}/results", experiment_results, INVENTORY_ROLES, BODY_NONE,
      &results_doc },
};
const size_t experiments_routes_count = sizeof experiments_routes / sizeof experiments_routes[0];
