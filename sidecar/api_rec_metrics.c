/* GET /api/metrics/recommendations: a recommendation ad unit's counters
 * over a window, per source of its items, and the catalog items' own
 * (README "Recommendation", "Counts"). Admins and operators.
 *
 * From the hour hashes serving's flush writes (stats.h): the unit's
 * u:{id}:{req|ads|imp|clk}, its rs:{id}/{source}:{shown|clk}, and every
 * item's it:{item}:{shown|view|clk} (items are counted across units: an
 * item is the same wherever it is shown). CTR is clicks / shown, with its
 * 95% Wilson interval, so that a product owner can tell a real difference
 * from noise. The window is as /api/metrics's: from (default 00:00 UTC
 * today) to (default now), every overlapping hour whole, 31 days at most. */
#include "api.h"

#include "ad_units.h"
#include "schema_catalog.h"
#include "stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define REC_ITEMS_MAX 100               /* the items listed: most shown first */
#define REC_WINDOW_DAYS 31

/* the counters a row sums */
enum { C_SHOWN, C_VIEW, C_CLK, C_REQ, C_ADS, C_IMP, C_COUNT };

struct rec_row {
    long long v[C_COUNT];
};

struct rec_report {
    const char *unit;
    size_t unit_len;
    struct rec_row total, sources[ADSERVE_SOURCE_COUNT];
    struct rec_row algorithms[ADSERVE_ALGORITHM_SERVICE + 1];
    struct stats_map items;             /* item id -> struct rec_row */
    bool oom;
};

/* metric name -> counter, or -1 */
static int counter_of(const char *name, size_t len)
{
    static const struct { int metric, counter; } map[] = {
        { ADSERVE_METRIC_SHOWN, C_SHOWN }, { ADSERVE_METRIC_VIEW, C_VIEW },
        { ADSERVE_METRIC_CLK, C_CLK },     { ADSERVE_METRIC_REQ, C_REQ },
        { ADSERVE_METRIC_ADS, C_ADS },     { ADSERVE_METRIC_IMP, C_IMP },
    };
    int m = adserve_vocab(adserve_metric_names, name, len);

    for (size_t i = 0; m >= 0 && i < sizeof map / sizeof map[0]; i++)
        if (map[i].metric == m)
            return map[i].counter;
    return -1;
}

/* One field "{prefix}{id}:{metric}" of prefix: its id and counter. */
static bool field_of(const redisReply *f, const char *prefix, const char **id, size_t *len,
                     int *counter)
{
    const char *metric;
    size_t mlen;

    if (!stats_field_split(f, prefix, id, len, &metric, &mlen))
        return false;
    *counter = counter_of(metric, mlen);
    return *counter >= 0;
}

static void add_field(struct rec_report *r, const redisReply *f, long long n)
{
    const char *id;
    size_t len;
    int c;

    if (field_of(f, ADSERVE_V_DIM_UNIT, &id, &len, &c)) {
        if (len == r->unit_len && memcmp(id, r->unit, len) == 0)
            r->total.v[c] += n;
    } else if (field_of(f, ADSERVE_V_DIM_SOURCE, &id, &len, &c) && len > r->unit_len + 1 &&
               memcmp(id, r->unit, r->unit_len) == 0 && id[r->unit_len] == ADSERVE_SOURCE_SEP) {
        const char *name = id + r->unit_len + 1;
        size_t nlen = len - r->unit_len - 1;
        int a, k = adserve_rec_counted_source(name, nlen, &a);
        if (k >= 0)
            r->sources[k].v[c] += n;
        if (a >= 0)
            r->algorithms[a].v[c] += n;
    } else if (field_of(f, ADSERVE_V_DIM_ITEM, &id, &len, &c) && len <= ADSERVE_ITEM_ID_MAX) {
        struct stats_entry *e = stats_map_slot(&r->items, id, len);
        if (e == NULL || (e->value == NULL && (e->value = calloc(1, sizeof(struct rec_row))) == NULL))
            r->oom = true;
        else
            ((struct rec_row *)e->value)->v[c] += n;
    }
}

static int on_hour(long long hour, const redisReply *fields, void *arg)
{
    struct rec_report *r = arg;
    char *end;

    (void)hour;
    for (size_t i = 0; fields->type == REDIS_REPLY_ARRAY && i + 1 < fields->elements; i += 2) {
        const redisReply *v = fields->element[i + 1];
        long long n = v->type == REDIS_REPLY_STRING ? strtoll(v->str, &end, 10) : 0;
        if (n > 0)
            add_field(r, fields->element[i], n);
    }
    return r->oom ? -1 : 0;
}

static int by_shown(const void *a, const void *b)
{
    const struct rec_row *x = (*(struct stats_entry *const *)a)->value;
    const struct rec_row *y = (*(struct stats_entry *const *)b)->value;

    if (x->v[C_SHOWN] != y->v[C_SHOWN])
        return x->v[C_SHOWN] > y->v[C_SHOWN] ? -1 : 1;
    return strcmp((*(struct stats_entry *const *)a)->id, (*(struct stats_entry *const *)b)->id);
}

static cJSON *report_json(struct rec_report *r, const cJSON *unit)
{
    cJSON *o = cJSON_CreateObject(), *sources, *algorithms, *items, *e;
    const cJSON *ext = cJSON_GetObjectItemCaseSensitive(unit, "ext");
    const char *service = json_str_member(ext, "target_service");
    struct stats_entry **sorted = stats_map_sorted(&r->items);
    bool ok = o != NULL && cJSON_AddStringToObject(o, "ad_unit_id", r->unit) != NULL &&
              cJSON_AddStringToObject(o, "algorithm",
                                      service != NULL ? service
                                      : json_str_member(ext, "algorithm") != NULL
                                          ? json_str_member(ext, "algorithm") : ADSERVE_V_AXA0) &&
              cJSON_AddBoolToObject(o, "target_service", service != NULL) &&
              cJSON_AddNumberToObject(o, "requests", (double)r->total.v[C_REQ]) &&
              cJSON_AddNumberToObject(o, "answers", (double)r->total.v[C_ADS]) &&
              cJSON_AddNumberToObject(o, "impressions", (double)r->total.v[C_IMP]) &&
              cJSON_AddNumberToObject(o, "clicks", (double)r->total.v[C_CLK]) &&
              (sources = cJSON_AddArrayToObject(o, "sources")) != NULL &&
              (algorithms = cJSON_AddArrayToObject(o, "algorithms")) != NULL &&
              (items = cJSON_AddArrayToObject(o, "items")) != NULL;

    for (int k = 0; ok && k < ADSERVE_SOURCE_COUNT; k++) {
        const struct rec_row *s = &r->sources[k];
        if (s->v[C_SHOWN] != 0 || s->v[C_CLK] != 0)
            ok = stats_ctr_row(sources, "source", adserve_rec_source_names[k], s->v[C_SHOWN],
                               s->v[C_CLK]) != NULL;
    }
    for (int a = 0; ok && a <= ADSERVE_ALGORITHM_SERVICE; a++) {
        const struct rec_row *s = &r->algorithms[a];
        if (s->v[C_SHOWN] != 0 || s->v[C_CLK] != 0)
            ok = stats_ctr_row(algorithms, "algorithm", adserve_rec_algorithm_counted[a],
                               s->v[C_SHOWN], s->v[C_CLK]) != NULL;
    }
    if (r->items.n > 0 && sorted == NULL)
        ok = false;
    if (ok && sorted != NULL)
        qsort(sorted, r->items.n, sizeof *sorted, by_shown);
    for (size_t i = 0; ok && i < r->items.n && i < REC_ITEMS_MAX; i++) {
        const struct rec_row *it = sorted[i]->value;
        ok = (e = stats_ctr_row(items, "item_id", sorted[i]->id, it->v[C_SHOWN], it->v[C_CLK])) !=
                 NULL &&
             cJSON_AddNumberToObject(e, "views", (double)it->v[C_VIEW]);
    }
    free(sorted);
    if (!ok) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

static const struct schema rec_metrics_query;

static void api_rec_metrics(struct request *req, struct reply *rep)
{
    cJSON *q = request_query_object(req, rep, &rec_metrics_query), *unit = NULL;
    struct rec_report r = { 0 };
    long long from, to, now = (long long)time(NULL);

    if (q == NULL)
        return;
    r.unit = json_str_member(q, "ad_unit_id");
    r.unit_len = strlen(r.unit);
    if (stats_window(q, stats_floor(now, STATS_DAY), REC_WINDOW_DAYS, NULL, &from, &to, rep)) {
        enum store_status st = ad_unit_load(request_store(req), r.unit, &unit);
        long long first = stats_floor(from, STATS_HOUR);
        if (st == STORE_NOT_FOUND)
            reply_error(rep, 404, "ad unit not found");
        else if (st != STORE_OK ||
                 (st = stats_read_hours(request_store(req), first,
                                        (to - first + STATS_HOUR - 1) / STATS_HOUR, on_hour, &r)) !=
                     STORE_OK || r.oom)
            reply_store_error(rep, st != STORE_OK ? st : STORE_ERROR);
        else
            reply_json(rep, 200, report_json(&r, unit));
    }
    cJSON_Delete(unit);
    stats_map_free(&r.items, free);
    cJSON_Delete(q);
}

/* ---- the shapes --------------------------------------------------------------------------- */

static const struct schema uuid = { .type = SCHEMA_STRING, .format = SCHEMA_FORMAT_UUID };
static const struct schema at = { .type = SCHEMA_STRING, .format = SCHEMA_FORMAT_DATE_TIME };
static const struct schema_field query_fields[] = {
    { "ad_unit_id", &uuid, .required = true, .description = "the recommendation ad unit" },
    { "from", &at, .description = "the window's start; default 00:00 UTC today" },
    { "to", &at, .description = "the window's end (exclusive); default now; 31 days at most" },
    { NULL },
};
static const struct schema rec_metrics_query = { .type = SCHEMA_OBJECT, .fields = query_fields };

static const struct schema text = { .type = SCHEMA_STRING };
static const struct schema flag = { .type = SCHEMA_BOOLEAN };
static const struct schema count = { .type = SCHEMA_INTEGER, .has_min = true, .min = 0 };
static const struct schema sources = { .type = SCHEMA_ARRAY,
                                       .items = &schema_rec_source_metrics };
static const struct schema algorithms = { .type = SCHEMA_ARRAY,
                                          .items = &schema_rec_algorithm_metrics };
static const struct schema items = { .type = SCHEMA_ARRAY, .items = &schema_rec_item_metrics };
static const struct schema_field report_fields[] = {
    { "ad_unit_id", &uuid, .required = true },
    { "algorithm", &text, .required = true,
      .description = "ext.algorithm, or the target service's name when it has one" },
    { "target_service", &flag, .required = true },
    { "requests", &count, .required = true },
    { "answers", &count, .required = true, .description = "answers with items" },
    { "impressions", &count, .required = true },
    { "clicks", &count, .required = true, .description = "once per answer" },
    { "sources", &sources, .required = true, .description = "per source, those counted" },
    { "algorithms", &algorithms, .required = true,
      .description = "the algorithm source per algorithm, those counted" },
    { "items", &items, .required = true,
      .description = "the catalog's items, across units, most shown first (100 at most)" },
    { NULL },
};
static const struct schema report = {
    .name = "RecommendationMetrics", .type = SCHEMA_OBJECT, .fields = report_fields,
};
static const int errors[] = { 401, 403, 404, 422, 503, 0 };
static const struct route_doc doc = {
    .tag = "Metric", .response = &report, .status = 200, .query = &rec_metrics_query,
    .errors = errors,
    .summary = "A recommendation ad unit's counters over a window: per source of its items "
               "(CTR with its 95% interval, per source and so per algorithm), and the catalog "
               "items' shown, views and clicks",
};

const struct route rec_metrics_routes[] = {
    { "GET", "/api/metrics/recommendations", api_rec_metrics, ROLE_ADMIN | ROLE_OPERATOR,
      BODY_NONE, &doc },
};
const size_t rec_metrics_routes_count = sizeof rec_metrics_routes / sizeof rec_metrics_routes[0];
