/* GET /api/dashboard: today against yesterday, today's top line items, the
 * pacing of every ACTIVE line item with a goal, and today's ad sources
 * (stats.h reads the counters; README "Statistics" has the formulas).
 *
 *   - totals: admins and operators see the traffic of every ad unit but the
 *     external_only ones (ext.metric_mode: an internal dashboard), summed
 *     from the units' counters, so requests and fill_rate are there;
 *     advertisers see the sums of their own line items (requests and
 *     fill_rate null: a request belongs to an ad unit, not a line item).
 *     today is every hour of the UTC day, yesterday the whole day before,
 *     yesterday_same_time yesterday's hours up to and including the
 *     current hour's counterpart (the counters are hourly);
 *   - top_line_items: the 10 with the most impressions today (then clicks,
 *     then id), among those with an impression, a click or spend today;
 *   - pacing: delivered is the line item's lifetime impressions or clicks
 *     (adserve:delivery, as serving's pacing reads them); expected_now is
 *     units x elapsed / flight for EVEN with a start and an end (null
 *     otherwise: serving paces those like ASAP); projected_end is the
 *     delivered rate carried to the flight's end, capped at units (serving
 *     stops there; null without a start and an end, or before the start).
 *     status: complete at the goal; else EVEN against expected_now within
 *     +-10% (ahead, on_track, behind); else behind when projected_end is
 *     under 90% of units, on_track otherwise;
 *   - ad_sources (admins and operators; null for advertisers): today's
 *     auction counters per ad source, as /api/metrics?group_by=ad_source
 *     has them, summed over the day and over the ad units that an internal
 *     report shows (not the external_only ones, as in the totals). */
#include "api.h"

#include "ad_units.h"
#include "dash_rec.h"
#include "resource.h"
#include "schema_catalog.h"
#include "schema_experiment.h"
#include "stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TOP_LINE_ITEMS 10
#define SCAN_COUNT "500"

enum day { TODAY, YESTERDAY, YESTERDAY_SAME, DAYS };

struct dash {
    struct store_conn *c;
    const char *caller;             /* an advertiser caller's advertiser_id */
    long long now, today, same_until;
    struct stats_map units[DAYS], items[DAYS];  /* id -> struct stats_counts */
    struct stats_map pairs;         /* today's "{unit}/{source}" -> struct stats_counts */
    struct stats_records unit_recs, item_recs, source_recs;
    struct dash_rec *rec;               /* admins and operators: recommendations */
    enum store_status st;
};

static int on_hour(long long hour, const redisReply *fields, void *arg)
{
    struct dash *d = arg;
    enum day day = hour >= d->today ? TODAY : YESTERDAY;

    if (day == TODAY && d->rec != NULL && dash_rec_add_hour(d->rec, fields) != 0) {
        d->st = STORE_ERROR;
        return -1;
    }
    if (day == TODAY && d->caller == NULL &&
        stats_add_hour(&d->pairs, fields, STATS_AD_SOURCE, NULL) != 0) {
        d->st = STORE_ERROR;
        return -1;
    }

    for (int pass = 0; pass < 2; pass++) {
        if ((d->caller == NULL && stats_add_hour(&d->units[day], fields, STATS_UNIT, NULL) != 0) ||
            stats_add_hour(&d->items[day], fields, STATS_LINE_ITEM, NULL) != 0) {
            d->st = STORE_ERROR;
            return -1;
        }
        if (day != YESTERDAY || hour > d->same_until)
            break;
        day = YESTERDAY_SAME;
    }
    return 0;
}

/* Loads the records of every id of m into recs. */
static enum store_status load_records(struct dash *d, struct stats_records *recs,
                                      const struct stats_map *m)
{
    if (m->n == 0)
        return STORE_OK;
    struct stats_entry **ids = stats_map_sorted(m);
    if (ids == NULL)
        return STORE_ERROR;
    enum store_status st = stats_records_load(d->c, recs, ids, m->n);
    free(ids);
    return st;
}

/* Whether the caller's dashboard counts this line item. */
static bool own_item(const struct dash *d, const char *id)
{
    const struct stats_record *rec = stats_record(&d->item_recs, id);

    return resource_owned_by(d->caller, rec != NULL && rec->exists ? rec->advertiser_id : NULL);
}

static double micros(long long v)
{
    return (double)v / 1e6;
}

static cJSON *totals(struct dash *d, enum day day)
{
    struct stats_counts sum = { { 0 } };
    bool units = d->caller == NULL;
    const struct stats_map *m = units ? &d->units[day] : &d->items[day];

    for (size_t i = 0; i < m->cap; i++) {
        const struct stats_entry *e = &m->slots[i];
        if (e->id == NULL)
            continue;
        if (units) {
            const struct stats_record *rec = stats_record(&d->unit_recs, e->id);
            if (rec != NULL && rec->exists && rec->mode == MODE_EXTERNAL_ONLY)
                continue;
        } else if (!own_item(d, e->id)) {
            continue;
        }
        stats_counts_add(&sum, e->value);
    }
    struct stats_figures f;
    stats_figures(&sum, &f);
    cJSON *o = cJSON_CreateObject();
    if (o == NULL ||
        !cJSON_AddItemToObject(o, "requests", units ? cJSON_CreateNumber((double)sum.v[STATS_REQ])
                                                    : cJSON_CreateNull()) ||
        !cJSON_AddNumberToObject(o, "ads", (double)sum.v[STATS_ADS]) ||
        !cJSON_AddNumberToObject(o, "impressions", (double)sum.v[STATS_IMP]) ||
        !cJSON_AddNumberToObject(o, "clicks", (double)sum.v[STATS_CLK]) ||
        !cJSON_AddNumberToObject(o, "conversions", (double)sum.v[STATS_CONV]) ||
        !cJSON_AddNumberToObject(o, "spend", f.spend) ||
        !cJSON_AddNumberToObject(o, "conversion_value", f.conversion_value) ||
        !cJSON_AddNumberToObject(o, "ctr", f.ctr) ||
        !cJSON_AddItemToObject(o, "fill_rate", units ? cJSON_CreateNumber(f.fill_rate) : cJSON_CreateNull()) ||
        !cJSON_AddNumberToObject(o, "video_starts",
                                 (double)sum.v[STATS_VIDEO + ADSERVE_VIDEO_START]) ||
        !cJSON_AddNumberToObject(o, "video_completion_rate", f.video_completion_rate)) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

/* ---- top line items ------------------------------------------------------------------ */

static int by_impressions(const void *a, const void *b)
{
    const struct stats_entry *x = *(struct stats_entry *const *)a, *y = *(struct stats_entry *const *)b;
    const struct stats_counts *cx = x->value, *cy = y->value;

    if (cx->v[STATS_IMP] != cy->v[STATS_IMP])
        return cx->v[STATS_IMP] > cy->v[STATS_IMP] ? -1 : 1;
    if (cx->v[STATS_CLK] != cy->v[STATS_CLK])
        return cx->v[STATS_CLK] > cy->v[STATS_CLK] ? -1 : 1;
    return strcmp(x->id, y->id);
}

static cJSON *top_line_items(struct dash *d)
{
    const struct stats_map *m = &d->items[TODAY];
    cJSON *out = cJSON_CreateArray();
    struct stats_entry **top = m->n ? malloc(m->n * sizeof *top) : NULL;
    size_t n = 0;

    if (out == NULL || (m->n > 0 && top == NULL))
        goto fail;
    for (size_t i = 0; i < m->cap; i++) {
        struct stats_entry *e = &m->slots[i];
        const struct stats_counts *c = e->value;
        if (e->id != NULL && own_item(d, e->id) &&
            (c->v[STATS_IMP] != 0 || c->v[STATS_CLK] != 0 || c->v[STATS_SPEND] != 0))
            top[n++] = e;
    }
    if (n > 1)
        qsort(top, n, sizeof *top, by_impressions);
    for (size_t i = 0; i < n && i < TOP_LINE_ITEMS; i++) {
        const struct stats_counts *c = top[i]->value;
        const struct stats_record *rec = stats_record(&d->item_recs, top[i]->id);
        cJSON *o = cJSON_CreateObject();
        if (o == NULL || !cJSON_AddItemToArray(out, o)) {
            cJSON_Delete(o);
            goto fail;
        }
        if (!cJSON_AddStringToObject(o, "line_item_id", top[i]->id) ||
            !cJSON_AddItemToObject(o, "name", rec != NULL && rec->name != NULL
                                                  ? cJSON_CreateString(rec->name)
                                                  : cJSON_CreateNull()) ||
            !cJSON_AddNumberToObject(o, "impressions", (double)c->v[STATS_IMP]) ||
            !cJSON_AddNumberToObject(o, "clicks", (double)c->v[STATS_CLK]) ||
            !cJSON_AddNumberToObject(o, "spend", micros(c->v[STATS_SPEND])))
            goto fail;
    }
    free(top);
    return out;
fail:
    free(top);
    cJSON_Delete(out);
    return NULL;
}

/* ---- ad sources ------------------------------------------------------------------------ */

static int by_revenue(const void *a, const void *b)
{
    const struct stats_entry *x = *(struct stats_entry *const *)a, *y = *(struct stats_entry *const *)b;
    const struct stats_counts *cx = x->value, *cy = y->value;
    const int breq = STATS_AUCTION_OF(ADSERVE_METRIC_BREQ);

    if (cx->v[STATS_SPEND] != cy->v[STATS_SPEND])
        return cx->v[STATS_SPEND] > cy->v[STATS_SPEND] ? -1 : 1;
    if (cx->v[breq] != cy->v[breq])
        return cx->v[breq] > cy->v[breq] ? -1 : 1;
    return strcmp(x->id, y->id);
}

static cJSON *nullable_num(double v)
{
    return isnan(v) ? cJSON_CreateNull() : cJSON_CreateNumber(v);
}

static cJSON *source_entry(const char *id, const struct stats_record *rec,
                           const struct stats_counts *c)
{
    static const struct { const char *name; adserve_metric_e metric; } auction[] = {
        { "bid_requests", ADSERVE_METRIC_BREQ }, { "bids", ADSERVE_METRIC_BIDS },
        { "wins", ADSERVE_METRIC_WINS }, { "timeouts", ADSERVE_METRIC_TIMEOUTS },
        { "errors", ADSERVE_METRIC_ERRORS }, { "blocked", ADSERVE_METRIC_BLOCKED },
    };
    struct stats_source_figures f;
    cJSON *o = cJSON_CreateObject();

    stats_source_figures(c, &f);
    if (o == NULL || !cJSON_AddStringToObject(o, "ad_source_id", id) ||
        !cJSON_AddItemToObject(o, "name", rec != NULL && rec->name != NULL
                                              ? cJSON_CreateString(rec->name)
                                              : cJSON_CreateNull()))
        goto fail;
    for (size_t i = 0; i < sizeof auction / sizeof auction[0]; i++)
        if (!cJSON_AddNumberToObject(o, auction[i].name,
                                     (double)c->v[STATS_AUCTION_OF(auction[i].metric)]))
            goto fail;
    if (!cJSON_AddNumberToObject(o, "impressions", (double)c->v[STATS_IMP]) ||
        !cJSON_AddNumberToObject(o, "clicks", (double)c->v[STATS_CLK]) ||
        !cJSON_AddNumberToObject(o, "revenue", f.revenue) ||
        !cJSON_AddItemToObject(o, "ecpm", nullable_num(f.ecpm)) ||
        !cJSON_AddItemToObject(o, "win_rate", nullable_num(f.win_rate)))
        goto fail;
    return o;
fail:
    cJSON_Delete(o);
    return NULL;
}

/* Today's ad sources, by revenue, then bid requests, then id, those with a
 * counter only; *out NULL (null) for advertisers. */
static enum store_status ad_sources(struct dash *d, cJSON **out)
{
    struct stats_map by_source = { 0 };
    struct stats_entry **ids = NULL;
    enum store_status st;

    *out = NULL;
    if (d->caller != NULL)
        return STORE_OK;
    st = stats_fold_ad_sources(d->c, &d->pairs, &d->unit_recs, false, NULL, NULL, &by_source);
    if (st != STORE_OK)
        goto out;
    st = STORE_ERROR;
    if ((*out = cJSON_CreateArray()) == NULL)
        goto out;
    if (by_source.n == 0) {
        st = STORE_OK;
        goto out;
    }
    if ((ids = stats_map_sorted(&by_source)) == NULL)
        goto out;
    if ((st = stats_records_load(d->c, &d->source_recs, ids, by_source.n)) != STORE_OK)
        goto out;
    st = STORE_ERROR;
    qsort(ids, by_source.n, sizeof *ids, by_revenue);
    for (size_t i = 0; i < by_source.n; i++) {
        if (stats_counts_zero(ids[i]->value))
            continue;
        cJSON *e = source_entry(ids[i]->id, stats_record(&d->source_recs, ids[i]->id),
                                ids[i]->value);
        if (e == NULL || !cJSON_AddItemToArray(*out, e)) {
            cJSON_Delete(e);
            goto out;
        }
    }
    st = STORE_OK;
out:
    if (st != STORE_OK) {
        cJSON_Delete(*out);
        *out = NULL;
    }
    free(ids);
    stats_map_free(&by_source, NULL);
    return st;
}

/* ---- pacing --------------------------------------------------------------------------- */

struct paced {
    cJSON *li;                      /* the record */
    const char *id, *name;
    bool clicks, even;
    long long units, delivered;
};

/* An ACTIVE line item with an IMPRESSIONS or CLICKS goal that the caller
 * sees: its terms into p (taking li), else false. */
static bool paced_from(const struct dash *d, cJSON *li, struct paced *p)
{
    const cJSON *goal = cJSON_GetObjectItemCaseSensitive(li, "goal");
    const char *type = json_str_member(goal, "type"), *status = json_str_member(li, "status");
    const char *adv = json_str_member(li, "advertiser_id"), *id = json_str_member(li, "id");
    const cJSON *units = cJSON_GetObjectItemCaseSensitive(goal, "units");

    int goal_type = adserve_vocab_str(adserve_goal_names, type);

    if (id == NULL || adserve_vocab_str(adserve_li_status_names, status) != ADSERVE_LI_ACTIVE ||
        (goal_type != ADSERVE_GOAL_IMPRESSIONS && goal_type != ADSERVE_GOAL_CLICKS) ||
        !cJSON_IsNumber(units) || units->valuedouble < 1 || strlen(id) > STATS_ID_MAX ||
        !resource_owned_by(d->caller, adv))
        return false;
    const char *delivery = json_str_member(li, "delivery");
    *p = (struct paced){
        .li = li, .id = id, .name = json_str_member(li, "name"),
        .clicks = goal_type == ADSERVE_GOAL_CLICKS,
        .even = adserve_vocab_str(adserve_delivery_names, delivery) != ADSERVE_DELIVERY_ASAP,
        .units = (long long)units->valuedouble,
    };
    return true;
}

static int add_paced(struct paced **list, size_t *n, size_t *cap, const struct paced *p)
{
    if (*n == *cap) {
        size_t c = *cap ? *cap * 2 : 16;
        struct paced *grown = realloc(*list, c * sizeof *grown);
        if (grown == NULL)
            return -1;
        *list = grown;
        *cap = c;
    }
    (*list)[(*n)++] = *p;
    return 0;
}

/* Every line item the pacing shows, HSCANned (the hash can be large). */
static enum store_status scan_line_items(struct dash *d, struct paced **list, size_t *n)
{
    char cursor[32] = "0";
    size_t cap = 0;

    do {
        redisReply *r;
        enum store_status st = store_cmd(d->c, &r, (const char *[]){
            "HSCAN", ADSERVE_KEY_LINE_ITEMS, cursor, "COUNT", SCAN_COUNT, NULL });
        if (st != STORE_OK)
            return st;
        if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
            r->element[0]->type != REDIS_REPLY_STRING || r->element[1]->type != REDIS_REPLY_ARRAY ||
            copy_str(cursor, sizeof cursor, r->element[0]->str) != 0) {
            freeReplyObject(r);
            return STORE_ERROR;
        }
        const redisReply *kv = r->element[1];
        for (size_t i = 0; i + 1 < kv->elements; i += 2) {
            const redisReply *v = kv->element[i + 1];
            struct paced p;
            cJSON *li = v->type == REDIS_REPLY_STRING ? cJSON_ParseWithLength(v->str, v->len) : NULL;
            if (li == NULL || !paced_from(d, li, &p)) {
                cJSON_Delete(li);
                continue;
            }
            if (add_paced(list, n, &cap, &p) != 0) {
                cJSON_Delete(li);
                freeReplyObject(r);
                return STORE_ERROR;
            }
        }
        freeReplyObject(r);
    } while (strcmp(cursor, "0") != 0);
    return STORE_OK;
}

/* delivered of each: {id}:imp or {id}:clk of adserve:delivery. */
static enum store_status load_delivered(struct dash *d, struct paced *list, size_t n)
{
    enum { PER = 60 };
    char fields[PER][STATS_ID_MAX + 8];
    const char *argv[PER + 3];

    for (size_t done = 0; done < n; done += PER) {
        size_t k = n - done < PER ? n - done : PER;
        argv[0] = "HMGET";
        argv[1] = ADSERVE_KEY_DELIVERY;
        for (size_t i = 0; i < k; i++) {
            snprintf(fields[i], sizeof fields[i], "%s:%s", list[done + i].id,
                     adserve_metric_names[list[done + i].clicks ? ADSERVE_METRIC_CLK
                                                                     : ADSERVE_METRIC_IMP]);
            argv[2 + i] = fields[i];
        }
        argv[2 + k] = NULL;
        redisReply *r;
        enum store_status st = store_cmd(d->c, &r, argv);
        if (st != STORE_OK)
            return st;
        if (r->type != REDIS_REPLY_ARRAY || r->elements != k) {
            freeReplyObject(r);
            return STORE_ERROR;
        }
        for (size_t i = 0; i < k; i++) {
            const redisReply *v = r->element[i];
            list[done + i].delivered = v->type == REDIS_REPLY_STRING ? strtoll(v->str, NULL, 10) : 0;
        }
        freeReplyObject(r);
    }
    return STORE_OK;
}

static int by_name(const void *a, const void *b)
{
    const struct paced *x = a, *y = b;
    int c = strcmp(x->name ? x->name : "", y->name ? y->name : "");

    return c != 0 ? c : strcmp(x->id, y->id);
}

static int by_id(const void *a, const void *b)
{
    return strcmp(((const struct paced *)a)->id, ((const struct paced *)b)->id);
}

/* HSCAN may return a field twice (the hash rehashing during the walk):
 * keeps one of each line item. The new length. */
static size_t drop_repeats(struct paced *list, size_t n)
{
    size_t kept = 0;

    if (n > 1)
        qsort(list, n, sizeof *list, by_id);
    for (size_t i = 0; i < n; i++) {
        if (kept > 0 && strcmp(list[kept - 1].id, list[i].id) == 0)
            cJSON_Delete(list[i].li);
        else
            list[kept++] = list[i];
    }
    return kept;
}

struct pace {
    bool has_expected, has_projected;
    double expected;
    long long projected;
    const char *status;
};

static void pace(const struct paced *p, long long now, struct pace *out)
{
    long long start, end;
    bool closed = rfc3339_parse(json_str_member(p->li, "start_at"), &start) == 0 &&
                  rfc3339_parse(json_str_member(p->li, "end_at"), &end) == 0 && end > start;
    double units = (double)p->units, delivered = (double)p->delivered;

    *out = (struct pace){ .status = "on_track" };
    if (closed && now > start) {
        double projected = now >= end ? delivered
                                      : floor(delivered * (double)(end - start) / (double)(now - start));
        out->has_projected = true;
        out->projected = (long long)(projected < units ? projected : units);
    }
    if (closed && p->even) {
        double frac = (double)(now - start) / (double)(end - start);
        out->has_expected = true;
        out->expected = units * (frac < 0 ? 0 : frac > 1 ? 1 : frac);
    }
    if (p->delivered >= p->units)
        out->status = "complete";
    else if (out->has_expected)
        out->status = delivered > out->expected * 1.1 ? "ahead"
                    : delivered < out->expected * 0.9 ? "behind" : "on_track";
    else if (out->has_projected && (double)out->projected < units * 0.9)
        out->status = "behind";
}

static cJSON *nullable_str(const char *s)
{
    return s != NULL ? cJSON_CreateString(s) : cJSON_CreateNull();
}

static cJSON *pacing_entry(const struct paced *p, long long now)
{
    struct pace pc;
    cJSON *o = cJSON_CreateObject(), *goal = cJSON_CreateObject();

    pace(p, now, &pc);
    if (o == NULL || !cJSON_AddItemToObject(o, "goal", goal)) {
        cJSON_Delete(o);
        cJSON_Delete(goal);
        return NULL;
    }
    if (!cJSON_AddStringToObject(o, "line_item_id", p->id) ||
        !cJSON_AddItemToObject(o, "name", nullable_str(p->name)) ||
        !cJSON_AddStringToObject(goal, "type", adserve_goal_names[p->clicks ? ADSERVE_GOAL_CLICKS
                                                                        : ADSERVE_GOAL_IMPRESSIONS]) ||
        !cJSON_AddNumberToObject(goal, "units", (double)p->units) ||
        !cJSON_AddStringToObject(o, "delivery", adserve_delivery_names[p->even ? ADSERVE_DELIVERY_EVEN
                                                                       : ADSERVE_DELIVERY_ASAP]) ||
        !cJSON_AddItemToObject(o, "start_at", nullable_str(json_str_member(p->li, "start_at"))) ||
        !cJSON_AddItemToObject(o, "end_at", nullable_str(json_str_member(p->li, "end_at"))) ||
        !cJSON_AddNumberToObject(o, "delivered", (double)p->delivered) ||
        !cJSON_AddItemToObject(o, "expected_now", pc.has_expected
                                                      ? cJSON_CreateNumber(floor(pc.expected))
                                                      : cJSON_CreateNull()) ||
        !cJSON_AddItemToObject(o, "projected_end", pc.has_projected
                                                       ? cJSON_CreateNumber((double)pc.projected)
                                                       : cJSON_CreateNull()) ||
        !cJSON_AddStringToObject(o, "status", pc.status)) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

static enum store_status pacing(struct dash *d, cJSON **out)
{
    struct paced *list = NULL;
    size_t n = 0;
    enum store_status st = scan_line_items(d, &list, &n);

    *out = NULL;
    n = drop_repeats(list, n);
    if (st == STORE_OK)
        st = load_delivered(d, list, n);
    if (st == STORE_OK) {
        if (n > 1)
            qsort(list, n, sizeof *list, by_name);
        *out = cJSON_CreateArray();
        for (size_t i = 0; *out != NULL && i < n; i++) {
            cJSON *e = pacing_entry(&list[i], d->now);
            if (e == NULL || !cJSON_AddItemToArray(*out, e)) {
                cJSON_Delete(e);
                cJSON_Delete(*out);
                *out = NULL;
            }
        }
        if (*out == NULL)
            st = STORE_ERROR;
    }
    for (size_t i = 0; i < n; i++)
        cJSON_Delete(list[i].li);
    free(list);
    return st;
}

/* ---- the route ------------------------------------------------------------------------- */

static void dash_free(struct dash *d)
{
    for (int i = 0; i < DAYS; i++) {
        stats_map_free(&d->units[i], NULL);
        stats_map_free(&d->items[i], NULL);
    }
    stats_map_free(&d->pairs, NULL);
    stats_records_free(&d->unit_recs);
    stats_records_free(&d->item_recs);
    stats_records_free(&d->source_recs);
    dash_rec_free(d->rec);
}

/* Adds item under name, freeing it when that fails; -1 then. */
static int put(cJSON *o, const char *name, cJSON *item)
{
    if (item == NULL)
        return -1;
    if (!cJSON_AddItemToObject(o, name, item)) {
        cJSON_Delete(item);
        return -1;
    }
    return 0;
}

static enum store_status build(struct dash *d, cJSON *body)
{
    char at[RFC3339_LEN];
    enum store_status st = stats_read_hours(d->c, d->today - STATS_DAY, 48, on_hour, d);
    cJSON *pace_list;

    if (st != STORE_OK || d->st != STORE_OK)
        return st != STORE_OK ? st : d->st;
    for (int i = 0; i < DAYS; i++)
        if ((st = load_records(d, &d->unit_recs, &d->units[i])) != STORE_OK ||
            (st = load_records(d, &d->item_recs, &d->items[i])) != STORE_OK)
            return st;
    if (rfc3339_format(d->now, at) != 0 || !cJSON_AddStringToObject(body, "at", at) ||
        put(body, "today", totals(d, TODAY)) != 0 ||
        put(body, "yesterday", totals(d, YESTERDAY)) != 0 ||
        put(body, "yesterday_same_time", totals(d, YESTERDAY_SAME)) != 0 ||
        put(body, "top_line_items", top_line_items(d)) != 0)
        return STORE_ERROR;
    if ((st = pacing(d, &pace_list)) != STORE_OK)
        return st;
    if (put(body, "pacing", pace_list) != 0)
        return STORE_ERROR;
    cJSON *sources;
    if ((st = ad_sources(d, &sources)) != STORE_OK)
        return st;
    if (put(body, "ad_sources", sources != NULL ? sources : cJSON_CreateNull()) != 0)
        return STORE_ERROR;
    cJSON *rec = NULL;
    if (d->rec != NULL && (st = dash_rec_json(d->rec, d->c, &rec)) != STORE_OK)
        return st;
    return put(body, "recommendations", rec != NULL ? rec : cJSON_CreateNull()) == 0 ? STORE_OK
                                                                                   : STORE_ERROR;
}

static const struct schema dashboard_query;

static void api_dashboard(struct request *req, struct reply *rep)
{
    struct dash d = {
        .unit_recs = { .hash = ADSERVE_KEY_AD_UNITS }, .item_recs = { .hash = ADSERVE_KEY_LINE_ITEMS },
        .source_recs = { .hash = ADSERVE_KEY_AD_SOURCES },
        .now = (long long)time(NULL),
    };
    cJSON *query = request_query_object(req, rep, &dashboard_query);

    if (query == NULL)
        return;
    cJSON_Delete(query);
    cJSON *body = cJSON_CreateObject();
    d.today = stats_floor(d.now, STATS_DAY);
    d.same_until = stats_floor(d.now, STATS_HOUR) - STATS_DAY;
    d.caller = resource_caller_advertiser(req);
    d.c = request_store(req);
    d.rec = d.caller == NULL ? dash_rec_new() : NULL;
    enum store_status st = body != NULL && (d.caller != NULL || d.rec != NULL) ? build(&d, body)
                                                                               : STORE_ERROR;
    dash_free(&d);
    if (st != STORE_OK) {
        cJSON_Delete(body);
        reply_store_error(rep, st);
        return;
    }
    reply_json(rep, 200, body);
}

/* ---- the shape, for the OpenAPI document ---------------------------------------------- */

static const struct schema at_s = { .type = SCHEMA_STRING, .format = SCHEMA_FORMAT_DATE_TIME };
static const struct schema at_n = { .type = SCHEMA_STRING, .format = SCHEMA_FORMAT_DATE_TIME,
                                    .nullable = true };
static const struct schema str = { .type = SCHEMA_STRING };
static const struct schema str_n = { .type = SCHEMA_STRING, .nullable = true };
static const struct schema count = { .type = SCHEMA_INTEGER, .has_min = true, .min = 0 };
static const struct schema count_n = { .type = SCHEMA_INTEGER, .nullable = true };
static const struct schema number = { .type = SCHEMA_NUMBER };
static const struct schema number_n = { .type = SCHEMA_NUMBER, .nullable = true };

static const struct schema_field totals_fields[] = {
    { "requests", &count_n, .required = true,
      .description = "ad requests of the ad units (null for advertisers)" },
    { "ads", &count, .required = true },
    { "impressions", &count, .required = true },
    { "clicks", &count, .required = true },
    { "conversions", &count, .required = true },
    { "spend", &number, .required = true, .description = "in the account currency" },
    { "conversion_value", &number, .required = true },
    { "ctr", &number, .required = true, .description = "clicks / impressions, 6 decimals" },
    { "fill_rate", &number_n, .required = true,
      .description = "ads / requests, 6 decimals (null for advertisers)" },
    { "video_starts", &count, .required = true },
    { "video_completion_rate", &number, .required = true,
      .description = "video completes / starts, 6 decimals (0 without starts)" },
    { NULL },
};
static const struct schema totals_s = {
    .name = "DashboardTotals", .type = SCHEMA_OBJECT, .fields = totals_fields,
    .description = "Admins and operators: every ad unit but the external_only ones; "
                   "advertisers: their line items.",
};

static const struct schema_field top_fields[] = {
    { "line_item_id", &str, .required = true },
    { "name", &str_n, .required = true },
    { "impressions", &count, .required = true },
    { "clicks", &count, .required = true },
    { "spend", &number, .required = true },
    { NULL },
};
static const struct schema top_s = { .name = "DashboardLineItem", .type = SCHEMA_OBJECT,
                                     .fields = top_fields };
static const struct schema top_list = { .type = SCHEMA_ARRAY, .items = &top_s,
                                        .max_items = TOP_LINE_ITEMS };

/* a paced goal: the contract's goal types after NONE */
static const struct schema goal_type = { .type = SCHEMA_STRING,
                                         .enum_values = &adserve_goal_names[ADSERVE_GOAL_NONE + 1] };
static const struct schema units_s = { .type = SCHEMA_INTEGER, .has_min = true, .min = 1 };
static const struct schema_field goal_fields[] = {
    { "type", &goal_type, .required = true },
    { "units", &units_s, .required = true },
    { NULL },
};
static const struct schema goal_s = { .type = SCHEMA_OBJECT, .fields = goal_fields };
static const struct schema delivery_s = { .type = SCHEMA_STRING,
                                          .enum_values = adserve_delivery_names };
static const char *const statuses[] = { "on_track", "behind", "ahead", "complete", NULL };
static const struct schema status_s = { .type = SCHEMA_STRING, .enum_values = statuses };
static const struct schema_field pacing_fields[] = {
    { "line_item_id", &str, .required = true },
    { "name", &str_n, .required = true },
    { "goal", &goal_s, .required = true },
    { "delivery", &delivery_s, .required = true },
    { "start_at", &at_n, .required = true },
    { "end_at", &at_n, .required = true },
    { "delivered", &count, .required = true,
      .description = "lifetime impressions or clicks (the goal's type)" },
    { "expected_now", &count_n, .required = true,
      .description = "EVEN with a start and an end: floor(units x elapsed / flight), within "
                     "[0, units]; else null" },
    { "projected_end", &count_n, .required = true,
      .description = "floor(delivered x flight / elapsed), at most units; null without a start "
                     "and an end or before the start" },
    { "status", &status_s, .required = true,
      .description = "complete at the goal; EVEN: delivered against expected_now +-10%; else "
                     "behind when projected_end < 90% of units" },
    { NULL },
};
static const struct schema pacing_s = { .name = "DashboardPacing", .type = SCHEMA_OBJECT,
                                        .fields = pacing_fields };
static const struct schema pacing_list = { .type = SCHEMA_ARRAY, .items = &pacing_s };

static const struct schema_field source_fields[] = {
    { "ad_source_id", &str, .required = true },
    { "name", &str_n, .required = true, .description = "null once deleted" },
    { "bid_requests", &count, .required = true },
    { "bids", &count, .required = true },
    { "wins", &count, .required = true },
    { "timeouts", &count, .required = true },
    { "errors", &count, .required = true },
    { "blocked", &count, .required = true },
    { "impressions", &count, .required = true },
    { "clicks", &count, .required = true },
    { "revenue", &number, .required = true, .description = "in the account currency" },
    { "ecpm", &number_n, .required = true,
      .description = "revenue / impressions x 1000, 6 decimals (null without impressions)" },
    { "win_rate", &number_n, .required = true,
      .description = "wins / bids, 6 decimals (null without bids)" },
    { NULL },
};
static const struct schema source_s = { .name = "DashboardAdSource", .type = SCHEMA_OBJECT,
                                        .fields = source_fields };
static const struct schema source_list = {
    .type = SCHEMA_ARRAY, .items = &source_s, .nullable = true,
    .description = "Admins and operators; null for advertisers.",
};

static const struct schema rec_sources = { .type = SCHEMA_ARRAY, .items = &schema_rec_source_metrics };
static const struct schema rec_algorithms = { .type = SCHEMA_ARRAY,
                                              .items = &schema_rec_algorithm_metrics };
static const struct schema variant_rows = { .type = SCHEMA_ARRAY,
                                            .items = &schema_experiment_variant_result };
static const struct schema_field experiment_fields[] = {
    { "experiment_id", &str, .required = true },
    { "name", &str, .required = true },
    { "ad_unit_id", &str, .required = true },
    { "variants", &variant_rows, .required = true, .description = "today's, in its order" },
    { NULL },
};
static const struct schema experiment_s = { .name = "DashboardExperiment", .type = SCHEMA_OBJECT,
                                            .fields = experiment_fields };
static const struct schema experiments_s = { .type = SCHEMA_ARRAY, .items = &experiment_s };
static const struct schema_field rec_fields[] = {
    { "sources", &rec_sources, .required = true,
      .description = "today's recommended items per source, over every recommendation unit" },
    { "algorithms", &rec_algorithms, .required = true,
      .description = "... and the algorithm source's per algorithm" },
    { "experiments", &experiments_s, .required = true,
      .description = "every ACTIVE experiment, by name: its variants today (the whole run: "
                     "/api/experiments/{id}/results)" },
    { NULL },
};
static const struct schema rec_s = { .name = "DashboardRecommendations", .type = SCHEMA_OBJECT,
                                     .fields = rec_fields, .nullable = true,
                                     .description = "Admins and operators; null for advertisers." };

static const struct schema_field dashboard_fields[] = {
    { "at", &at_s, .required = true, .description = "now, as the figures use it" },
    { "today", &totals_s, .required = true, .description = "the UTC day so far" },
    { "yesterday", &totals_s, .required = true, .description = "the whole UTC day before" },
    { "yesterday_same_time", &totals_s, .required = true,
      .description = "yesterday up to the end of the current hour's counterpart" },
    { "top_line_items", &top_list, .required = true,
      .description = "today's 10 with the most impressions" },
    { "pacing", &pacing_list, .required = true,
      .description = "every ACTIVE line item with a goal, by name" },
    { "ad_sources", &source_list, .required = true,
      .description = "today's auction per ad source (as /api/metrics?group_by=ad_source), over "
                     "every ad unit but the external_only ones, by revenue, then bid requests" },
    { "recommendations", &rec_s, .required = true,
      .description = "recommendation CTR per source and algorithm, and experiments, today" },
    { NULL },
};
static const struct schema dashboard_s = { .name = "Dashboard", .type = SCHEMA_OBJECT,
                                           .fields = dashboard_fields };
static const struct schema_field no_fields[] = { { NULL } };
static const struct schema dashboard_query = { .type = SCHEMA_OBJECT, .fields = no_fields };
static const int dashboard_errors[] = { 401, 422, 503, 0 };
static const struct route_doc dashboard_doc = {
    .tag = "Dashboard", .summary = "Today against yesterday, top line items, pacing, ad sources "
                                   "(advertisers: their own line items)",
    .response = &dashboard_s, .status = 200, .errors = dashboard_errors,
    .query = &dashboard_query,
};

const struct route dashboard_routes[] = {
    { "GET", "/api/dashboard", api_dashboard, ROLES_ANY, BODY_NONE, &dashboard_doc },
};
const size_t dashboard_routes_count = sizeof dashboard_routes / sizeof dashboard_routes[0];
