/* The dashboard's recommendations (dash_rec.h): today's CTR of the items
 * recommended, per source and per algorithm, summed over every
 * recommendation ad unit, and today's figures of each ACTIVE experiment's
 * variants. From the hour hashes' rs:{unit}/{source or algorithm}:{metric}
 * and xv:{experiment}/{variant}:{metric} fields (README "Recommendation",
 * "Experiments"). */
#include "dash_rec.h"

#include "experiments.h"
#include "json_util.h"

#include <stdlib.h>
#include <string.h>

/* the rows of rs: fields: shown and clicks */
struct ctr_counts {
    long long shown, clicks;
};

struct dash_rec {
    struct ctr_counts sources[ADSERVE_SOURCE_COUNT];
    struct ctr_counts algorithms[ADSERVE_ALGORITHM_SERVICE + 1];
    struct stats_map variants;          /* "{experiment}/{variant}" -> long long[XV_COUNT] */
    bool oom;
};

struct dash_rec *dash_rec_new(void)
{
    return calloc(1, sizeof(struct dash_rec));
}

void dash_rec_free(struct dash_rec *r)
{
    if (r != NULL)
        stats_map_free(&r->variants, free);
    free(r);
}

static void add_source(struct dash_rec *r, const char *id, size_t len, const char *metric,
                       size_t mlen, long long n)
{
    const char *sep = memrchr(id, ADSERVE_SOURCE_SEP, len);
    int m = adserve_vocab(adserve_metric_names, metric, mlen);

    if (sep == NULL || (m != ADSERVE_METRIC_SHOWN && m != ADSERVE_METRIC_CLK))
        return;
    const char *name = sep + 1;
    size_t nlen = len - (size_t)(name - id);
    int a, k = adserve_rec_counted_source(name, nlen, &a);
    struct ctr_counts *rows[2] = { k >= 0 ? &r->sources[k] : NULL,
                                   a >= 0 ? &r->algorithms[a] : NULL };

    for (int i = 0; i < 2; i++)
        if (rows[i] != NULL)
            *(m == ADSERVE_METRIC_SHOWN ? &rows[i]->shown : &rows[i]->clicks) += n;
}

static void add_variant(struct dash_rec *r, const char *id, size_t len, const char *metric,
                        size_t mlen, long long n)
{
    int c = experiment_counter_of(metric, mlen);
    struct stats_entry *e = c >= 0 ? stats_map_slot(&r->variants, id, len) : NULL;

    if (c < 0)
        return;
    if (e == NULL || (e->value == NULL && (e->value = calloc(XV_COUNT, sizeof(long long))) == NULL))
        r->oom = true;
    else
        ((long long *)e->value)[c] += n;
}

int dash_rec_add_hour(struct dash_rec *r, const redisReply *fields)
{
    const char *id, *metric;
    size_t len, mlen;
    char *end;

    for (size_t i = 0; fields->type == REDIS_REPLY_ARRAY && i + 1 < fields->elements; i += 2) {
        const redisReply *f = fields->element[i], *v = fields->element[i + 1];
        long long n = v->type == REDIS_REPLY_STRING ? strtoll(v->str, &end, 10) : 0;
        if (n <= 0)
            continue;
        if (stats_field_split(f, ADSERVE_V_DIM_SOURCE, &id, &len, &metric, &mlen))
            add_source(r, id, len, metric, mlen, n);
        else if (stats_field_split(f, ADSERVE_V_DIM_VARIANT, &id, &len, &metric, &mlen))
            add_variant(r, id, len, metric, mlen, n);
    }
    return r->oom ? -1 : 0;
}

/* {experiment_id, name, ad_unit_id, variants: [rows]} of an ACTIVE one */
static bool add_experiment(struct dash_rec *r, cJSON *arr, const cJSON *x)
{
    static const long long none[XV_COUNT];
    const char *xid = json_str_member(x, "id");
    const cJSON *v;
    cJSON *e = cJSON_CreateObject(), *rows;
    const long long *first = NULL;
    char key[UUID_STR_LEN + 1 + ADSERVE_VARIANT_ID_MAX + 1];

    if (e == NULL || !cJSON_AddItemToArray(arr, e)) {
        cJSON_Delete(e);
        return false;
    }
    if (!cJSON_AddStringToObject(e, "experiment_id", xid) ||
        !cJSON_AddItemToObject(e, "name", cJSON_CreateString(json_str_member(x, "name"))) ||
        !cJSON_AddStringToObject(e, "ad_unit_id", json_str_member(x, "ad_unit_id")) ||
        (rows = cJSON_AddArrayToObject(e, "variants")) == NULL)
        return false;
    cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(x, "variants")) {
        if (json_str_member(v, "id") == NULL)           /* written past the API */
            continue;
        int n = snprintf(key, sizeof key, "%s%c%s", xid, ADSERVE_VARIANT_SEP,
                         json_str_member(v, "id"));
        const long long *c = n > 0 && (size_t)n < sizeof key
                                 ? stats_map_get(&r->variants, key, (size_t)n) : NULL;
        if (!experiment_variant_row(rows, v, c != NULL ? c : none, first))
            return false;
        if (first == NULL)
            first = c != NULL ? c : none;
    }
    return true;
}

/* The ACTIVE experiments, by name then id. */
static int by_name(const void *a, const void *b)
{
    const cJSON *x = *(cJSON *const *)a, *y = *(cJSON *const *)b;
    int c = strcmp(json_str_member(x, "name"), json_str_member(y, "name"));

    return c != 0 ? c : strcmp(json_str_member(x, "id"), json_str_member(y, "id"));
}

static bool add_experiments(struct dash_rec *r, cJSON *arr, const redisReply *vals)
{
    cJSON **xs = calloc(vals->elements + 1, sizeof *xs);
    size_t n = 0;
    bool ok = xs != NULL;

    for (size_t i = 0; ok && i < vals->elements; i++) {
        const redisReply *v = vals->element[i];
        cJSON *x = v->type == REDIS_REPLY_STRING ? cJSON_ParseWithLength(v->str, v->len) : NULL;
        if (x != NULL && json_str_member(x, "id") != NULL && json_str_member(x, "name") != NULL &&
            json_str_member(x, "ad_unit_id") != NULL &&
            adserve_vocab_str(adserve_experiment_status_names, json_str_member(x, "status")) ==
                ADSERVE_EXPERIMENT_ACTIVE)
            xs[n++] = x;
        else
            cJSON_Delete(x);
    }
    if (n > 1)
        qsort(xs, n, sizeof *xs, by_name);
    for (size_t i = 0; ok && i < n; i++)
        ok = add_experiment(r, arr, xs[i]);
    for (size_t i = 0; xs != NULL && i < n; i++)
        cJSON_Delete(xs[i]);
    free(xs);
    return ok;
}

enum store_status dash_rec_json(struct dash_rec *r, struct store_conn *c, cJSON **out)
{
    redisReply *vals;
    cJSON *o = cJSON_CreateObject(), *sources, *algorithms, *experiments;
    enum store_status st = store_cmd(c, &vals, (const char *[]){ "HVALS", ADSERVE_KEY_EXPERIMENTS,
                                                                 NULL });
    bool ok = st == STORE_OK && vals->type == REDIS_REPLY_ARRAY && o != NULL &&
              (sources = cJSON_AddArrayToObject(o, "sources")) != NULL &&
              (algorithms = cJSON_AddArrayToObject(o, "algorithms")) != NULL &&
              (experiments = cJSON_AddArrayToObject(o, "experiments")) != NULL;

    for (int k = 0; ok && k < ADSERVE_SOURCE_COUNT; k++)
        if (r->sources[k].shown || r->sources[k].clicks)
            ok = stats_ctr_row(sources, "source", adserve_rec_source_names[k], r->sources[k].shown,
                               r->sources[k].clicks) != NULL;
    for (int a = 0; ok && a <= ADSERVE_ALGORITHM_SERVICE; a++)
        if (r->algorithms[a].shown || r->algorithms[a].clicks)
            ok = stats_ctr_row(algorithms, "algorithm", adserve_rec_algorithm_counted[a],
                               r->algorithms[a].shown, r->algorithms[a].clicks) != NULL;
    ok = ok && add_experiments(r, experiments, vals);
    if (st == STORE_OK)
        freeReplyObject(vals);
    if (!ok) {
        cJSON_Delete(o);
        return st != STORE_OK ? st : STORE_ERROR;
    }
    *out = o;
    return STORE_OK;
}
