/* GET /api/metrics: the module's counters per ad unit, line item, creative,
 * advertiser or ad source, per hour or per day (stats.h reads them).
 *
 * The window: from (default 00:00 UTC today) to (default now, exclusive);
 * every hour that overlaps it counts whole, since the counters are
 * hourly. A day row sums its hours inside the window (all 24 when the
 * window is whole days). At most 31 days at hour granularity and 400 at
 * day granularity (422 beyond).
 *
 * Rows: one per bucket and id with any non-zero counter, sorted by time,
 * then id; names come from the records (null once deleted). requests and
 * fill_rate belong to ad units: serving counts a request per ad unit, and
 * no line item or creative has requests of its own, so theirs are null.
 * Ad source rows have fields of their own: the auction's counters, kept
 * per ad unit and ad source (as:{unit}/{source}), summed over the units.
 *
 * Who sees what:
 *   - advertisers: their own line items and creatives (by the records'
 *     advertiser_id), and their own advertiser row; group_by=ad_unit and
 *     ad_source are 403s, like the ad units and sources themselves. A
 *     filter naming someone else's id finds no rows, as list filters do;
 *   - ext.metric_mode of an ad unit chooses the audiences of its rows:
 *     internal reports (admins' and operators' by default) hide the rows
 *     of external_only units, external ones (advertisers' always, or
 *     ?audience=external) those of internal_only units. An ad source row
 *     sums the units the audience sees. The counters are not kept per ad
 *     unit and line item, so it has no say on line item, creative or
 *     advertiser rows.
 *
 * The answer is written as text directly, JSON or CSV (Accept: text/csv or
 * ?format=csv), from the same rows: a report can be large, and a cJSON
 * tree would take ten times its size. */
#include "api.h"

#include "ad_units.h"
#include "resource.h"
#include "stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define METRICS_MAX_ROWS 100000
#define MAX_HOUR_DAYS 31
#define MAX_DAY_DAYS 400

enum group { GROUP_AD_UNIT, GROUP_LINE_ITEM, GROUP_CREATIVE, GROUP_ADVERTISER, GROUP_AD_SOURCE };

static const char *const group_names[] = { "ad_unit", "line_item", "creative", "advertiser",
                                           "ad_source", NULL };
static const char *const group_ids[] = { "ad_unit_id", "line_item_id", "creative_id",
                                         "advertiser_id", "ad_source_id" };

struct report {
    struct store_conn *c;
    enum group group;
    bool day, csv, external;
    const char *only;               /* the group's own id filter */
    const char *unit;               /* ad source rows: this ad unit's counters alone */
    const char *advertiser;         /* line items and creatives of this advertiser */
    const char *order;              /* line items of this order */
    const char *caller;             /* an advertiser caller's advertiser_id */

    long long bucket;               /* the start of the bucket being summed */
    bool open;
    struct stats_map sums;          /* counter id -> struct stats_counts, this bucket
                                     * (ad sources: "{unit}/{source}") */
    struct stats_records units, line_items, creatives, advertisers, sources;

    struct stats_buf out;
    size_t rows;
    enum store_status st;
    bool too_many;
};

/* ---- one bucket's rows ---------------------------------------------------------------- */

/* The VAST errors by code, those counted only, each as fmt (code,
 * count), sep between. */
static void error_codes(struct stats_buf *b, const struct stats_counts *c, const char *fmt,
                        const char *sep)
{
    const char *s = "";

    for (int i = 0; i < ADSERVE_VAST_ERROR_CODES; i++) {
        long long n = c->v[STATS_VAST_ERROR + i];

        if (n != 0) {
            stats_buf_str(b, s);
            stats_buf_printf(b, fmt, (unsigned)adserve_vast_error_codes[i], n);
            s = sep;
        }
    }
}

static void row_json(struct report *r, const char *time, const char *id, const char *name,
                     const struct stats_counts *c)
{
    struct stats_buf *b = &r->out;
    bool unit = r->group == GROUP_AD_UNIT;
    struct stats_figures f;

    stats_figures(c, &f);

    stats_buf_str(b, r->rows ? ",{\"" : "{\"");
    stats_buf_str(b, group_ids[r->group]);
    stats_buf_str(b, "\":");
    stats_buf_json_str(b, id);
    stats_buf_str(b, ",\"name\":");
    stats_buf_json_str(b, name);
    stats_buf_printf(b, ",\"time\":\"%s\",\"requests\":", time);
    if (unit)
        stats_buf_num(b, (double)c->v[STATS_REQ]);
    else
        stats_buf_str(b, "null");
    stats_buf_printf(b, ",\"ads\":%lld,\"impressions\":%lld,\"clicks\":%lld,\"conversions\":%lld",
                     c->v[STATS_ADS], c->v[STATS_IMP], c->v[STATS_CLK], c->v[STATS_CONV]);
    stats_buf_str(b, ",\"ctr\":");
    stats_buf_num(b, f.ctr);
    stats_buf_str(b, ",\"spend\":");
    stats_buf_num(b, f.spend);
    stats_buf_str(b, ",\"conversion_value\":");
    stats_buf_num(b, f.conversion_value);
    stats_buf_str(b, ",\"fill_rate\":");
    if (unit)
        stats_buf_num(b, f.fill_rate);
    else
        stats_buf_str(b, "null");
    stats_buf_printf(b, ",\"video_starts\":%lld,\"video_completes\":%lld,\"video_errors\":%lld",
                     c->v[STATS_VIDEO + ADSERVE_VIDEO_START],
                     c->v[STATS_VIDEO + ADSERVE_VIDEO_COMPLETE],
                     c->v[STATS_VIDEO + ADSERVE_VIDEO_ERROR]);
    stats_buf_str(b, ",\"video_completion_rate\":");
    stats_buf_num(b, f.video_completion_rate);
    stats_buf_str(b, ",\"video_error_codes\":{");
    error_codes(b, c, "\"%u\":%lld", ",");
    stats_buf_str(b, "},\"passbacks\":");
    if (unit)
        stats_buf_num(b, (double)c->v[STATS_PASSBACK]);
    else
        stats_buf_str(b, "null");
    stats_buf_str(b, "}");
}

/* An ad source's row: the auction's counters and its wins' events. */
static void source_json(struct report *r, const char *time, const char *id, const char *name,
                        const struct stats_counts *c)
{
    struct stats_buf *b = &r->out;
    struct stats_source_figures f;

    stats_source_figures(c, &f);
    stats_buf_str(b, r->rows ? ",{\"" : "{\"");
    stats_buf_str(b, group_ids[r->group]);
    stats_buf_str(b, "\":");
    stats_buf_json_str(b, id);
    stats_buf_str(b, ",\"name\":");
    stats_buf_json_str(b, name);
    stats_buf_printf(b, ",\"time\":\"%s\",\"bid_requests\":%lld,\"bids\":%lld,\"wins\":%lld,"
                        "\"timeouts\":%lld,\"errors\":%lld,\"blocked\":%lld", time,
                     c->v[STATS_AUCTION_OF(ADSERVE_METRIC_BREQ)],
                     c->v[STATS_AUCTION_OF(ADSERVE_METRIC_BIDS)],
                     c->v[STATS_AUCTION_OF(ADSERVE_METRIC_WINS)],
                     c->v[STATS_AUCTION_OF(ADSERVE_METRIC_TIMEOUTS)],
                     c->v[STATS_AUCTION_OF(ADSERVE_METRIC_ERRORS)],
                     c->v[STATS_AUCTION_OF(ADSERVE_METRIC_BLOCKED)]);
    stats_buf_printf(b, ",\"impressions\":%lld,\"clicks\":%lld,\"revenue\":", c->v[STATS_IMP],
                     c->v[STATS_CLK]);
    stats_buf_num(b, f.revenue);
    stats_buf_str(b, ",\"ecpm\":");
    stats_buf_num(b, f.ecpm);           /* NAN: null */
    stats_buf_str(b, ",\"win_rate\":");
    stats_buf_num(b, f.win_rate);
    stats_buf_str(b, "}");
}

static void source_csv(struct report *r, const char *time, const char *id, const char *name,
                       const struct stats_counts *c)
{
    struct stats_buf *b = &r->out;
    struct stats_source_figures f;

    stats_source_figures(c, &f);
    stats_buf_printf(b, "%s,", time);
    stats_buf_csv_str(b, id);
    stats_buf_str(b, ",");
    stats_buf_csv_str(b, name);
    stats_buf_printf(b, ",%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,",
                     c->v[STATS_AUCTION_OF(ADSERVE_METRIC_BREQ)],
                     c->v[STATS_AUCTION_OF(ADSERVE_METRIC_BIDS)],
                     c->v[STATS_AUCTION_OF(ADSERVE_METRIC_WINS)],
                     c->v[STATS_AUCTION_OF(ADSERVE_METRIC_TIMEOUTS)],
                     c->v[STATS_AUCTION_OF(ADSERVE_METRIC_ERRORS)],
                     c->v[STATS_AUCTION_OF(ADSERVE_METRIC_BLOCKED)], c->v[STATS_IMP],
                     c->v[STATS_CLK]);
    stats_buf_num(b, f.revenue);
    stats_buf_str(b, ",");
    if (!isnan(f.ecpm))
        stats_buf_num(b, f.ecpm);
    stats_buf_str(b, ",");
    if (!isnan(f.win_rate))
        stats_buf_num(b, f.win_rate);
    stats_buf_str(b, "\r\n");
}

static void header_csv(struct report *r)
{
    if (r->group == GROUP_AD_SOURCE) {
        stats_buf_str(&r->out, "time,ad_source_id,name,bid_requests,bids,wins,timeouts,errors,"
                               "blocked,impressions,clicks,revenue,ecpm,win_rate\r\n");
        return;
    }
    stats_buf_str(&r->out, "time,");
    stats_buf_str(&r->out, group_ids[r->group]);
    stats_buf_str(&r->out, ",name,requests,ads,impressions,clicks,conversions,ctr,spend,"
                           "conversion_value,fill_rate,video_starts,video_completes,"
                           "video_errors,video_completion_rate,video_error_codes,"
                           "passbacks\r\n");
}

static void row_csv(struct report *r, const char *time, const char *id, const char *name,
                    const struct stats_counts *c)
{
    struct stats_buf *b = &r->out;
    bool unit = r->group == GROUP_AD_UNIT;
    struct stats_figures f;

    stats_figures(c, &f);

    stats_buf_printf(b, "%s,", time);
    stats_buf_csv_str(b, id);
    stats_buf_str(b, ",");
    stats_buf_csv_str(b, name);
    stats_buf_str(b, ",");
    if (unit)
        stats_buf_num(b, (double)c->v[STATS_REQ]);
    stats_buf_printf(b, ",%lld,%lld,%lld,%lld,", c->v[STATS_ADS], c->v[STATS_IMP],
                     c->v[STATS_CLK], c->v[STATS_CONV]);
    stats_buf_num(b, f.ctr);
    stats_buf_str(b, ",");
    stats_buf_num(b, f.spend);
    stats_buf_str(b, ",");
    stats_buf_num(b, f.conversion_value);
    stats_buf_str(b, ",");
    if (unit)
        stats_buf_num(b, f.fill_rate);
    stats_buf_printf(b, ",%lld,%lld,%lld,", c->v[STATS_VIDEO + ADSERVE_VIDEO_START],
                     c->v[STATS_VIDEO + ADSERVE_VIDEO_COMPLETE],
                     c->v[STATS_VIDEO + ADSERVE_VIDEO_ERROR]);
    stats_buf_num(b, f.video_completion_rate);
    stats_buf_str(b, ",");
    error_codes(b, c, "%u:%lld", " ");
    stats_buf_str(b, ",");
    if (unit)
        stats_buf_num(b, (double)c->v[STATS_PASSBACK]);
    stats_buf_str(b, "\r\n");
}

/* The records of this group's ids. */
static struct stats_records *records_of(struct report *r, enum group g)
{
    switch (g) {
    case GROUP_AD_UNIT: return &r->units;
    case GROUP_LINE_ITEM: return &r->line_items;
    case GROUP_CREATIVE: return &r->creatives;
    case GROUP_ADVERTISER: return &r->advertisers;
    case GROUP_AD_SOURCE: return &r->sources;
    }
    return NULL;
}

/* Whether this caller's report shows the row of id (rec: its record). */
static bool visible(const struct report *r, const char *id, const struct stats_record *rec)
{
    switch (r->group) {
    case GROUP_AD_UNIT:
        return stats_unit_shown(rec, r->external);
    case GROUP_AD_SOURCE:
        return true;                /* the units it sums are the audience's (fold_sources) */
    case GROUP_LINE_ITEM:
    case GROUP_CREATIVE:
        if (!resource_owned_by(r->caller, rec->exists ? rec->advertiser_id : NULL))
            return false;
        if (r->order != NULL && strcmp(rec->order_id, r->order) != 0)
            return false;           /* line items alone take it (read_filters) */
        return r->advertiser == NULL || strcmp(rec->advertiser_id, r->advertiser) == 0;
    case GROUP_ADVERTISER:
        return resource_owned_by(r->caller, id) &&
               (r->advertiser == NULL || strcmp(id, r->advertiser) == 0);
    }
    return false;
}

/* Advertiser rows: the line items' sums, folded by their advertiser. A
 * line item without a record has no known advertiser: not counted. */
static int fold_advertisers(struct report *r, struct stats_entry *const *items, size_t n,
                            struct stats_map *into)
{
    for (size_t i = 0; i < n; i++) {
        const struct stats_record *rec = stats_record(&r->line_items, items[i]->id);
        if (rec == NULL || !rec->exists || rec->advertiser_id[0] == '\0')
            continue;
        struct stats_entry *e = stats_map_slot(into, rec->advertiser_id, strlen(rec->advertiser_id));
        if (e == NULL ||
            (e->value == NULL && (e->value = calloc(1, sizeof(struct stats_counts))) == NULL))
            return -1;
        stats_counts_add(e->value, items[i]->value);
    }
    return 0;
}

/* Writes the rows of the bucket summed so far, and starts a new one. */
static int flush_bucket(struct report *r)
{
    struct stats_map folded = { 0 };
    struct stats_map *sums = &r->sums;
    struct stats_entry **ids = stats_map_sorted(sums);
    char time[RFC3339_LEN];
    int rc = -1;

    if (!r->open || sums->n == 0) {
        rc = 0;
        goto out;
    }
    if (ids == NULL || rfc3339_format(r->bucket, time) != 0) {
        r->st = STORE_ERROR;
        goto out;
    }
    if (r->group == GROUP_AD_SOURCE) {
        /* "{unit}/{source}" -> per source, the audience's units only */
        if ((r->st = stats_fold_ad_sources(r->c, sums, &r->units, r->external, r->unit, r->only,
                                           &folded)) != STORE_OK)
            goto out;
        free(ids);
        sums = &folded;
        ids = stats_map_sorted(sums);
        if (sums->n == 0) {
            rc = 0;
            goto out;
        }
        if (ids == NULL) {
            r->st = STORE_ERROR;
            goto out;
        }
    }
    enum group kind = r->group == GROUP_ADVERTISER ? GROUP_LINE_ITEM : r->group;
    if ((r->st = stats_records_load(r->c, records_of(r, kind), ids, sums->n)) != STORE_OK)
        goto out;
    if (r->group == GROUP_ADVERTISER) {
        if (fold_advertisers(r, ids, sums->n, &folded) != 0) {
            r->st = STORE_ERROR;
            goto out;
        }
        free(ids);
        sums = &folded;
        ids = stats_map_sorted(sums);
        if (sums->n == 0) {
            rc = 0;
            goto out;
        }
        if (ids == NULL || (r->st = stats_records_load(r->c, &r->advertisers, ids, sums->n)) != STORE_OK) {
            r->st = r->st != STORE_OK ? r->st : STORE_ERROR;
            goto out;
        }
    }
    for (size_t i = 0; i < sums->n; i++) {
        const struct stats_record *rec = stats_record(records_of(r, r->group), ids[i]->id);
        const struct stats_counts *c = ids[i]->value;
        if (rec == NULL || stats_counts_zero(c) || !visible(r, ids[i]->id, rec))
            continue;
        if (r->rows >= METRICS_MAX_ROWS) {
            r->too_many = true;
            goto out;
        }
        if (r->group == GROUP_AD_SOURCE)
            (r->csv ? source_csv : source_json)(r, time, ids[i]->id, rec->name, c);
        else
            (r->csv ? row_csv : row_json)(r, time, ids[i]->id, rec->name, c);
        r->rows++;
    }
    rc = r->out.oom ? -1 : 0;
    if (rc != 0)
        r->st = STORE_ERROR;
out:
    free(ids);
    stats_map_free(&folded, NULL);
    stats_map_clear(&r->sums, NULL);
    r->open = false;
    return rc;
}

static int on_hour(long long hour, const redisReply *fields, void *arg)
{
    struct report *r = arg;
    long long bucket = r->day ? stats_floor(hour, STATS_DAY) : hour;
    enum stats_kind kind = r->group == GROUP_AD_UNIT ? STATS_UNIT
                         : r->group == GROUP_CREATIVE ? STATS_CREATIVE
                         : r->group == GROUP_AD_SOURCE ? STATS_AD_SOURCE : STATS_LINE_ITEM;

    if (r->open && bucket != r->bucket && flush_bucket(r) != 0)
        return -1;
    if (r->too_many)
        return -1;
    r->bucket = bucket;
    r->open = true;
    /* ad sources: the pairs' ids are not the filter's, fold_sources filters */
    if (stats_add_hour(&r->sums, fields, kind, r->group == GROUP_AD_SOURCE ? NULL : r->only) != 0) {
        r->st = STORE_ERROR;
        return -1;
    }
    return 0;
}

/* ---- the request ---------------------------------------------------------------------- */

/* Accept: text/csv, unless application/json is listed with a higher or
 * equal quality. Anything else (none, * / *, application/json) is JSON. */
static double quality(const char *range, size_t n)
{
    const char *q = NULL;

    for (const char *p = range; p < range + n; p++)
        if (*p == ';') {
            const char *s = p + 1;
            while (*s == ' ' || *s == '\t')
                s++;
            if (strncasecmp(s, "q=", 2) == 0)
                q = s + 2;
        }
    return q != NULL ? strtod(q, NULL) : 1.0;
}

static bool media_is(const char *range, size_t n, const char *type)
{
    size_t t = strlen(type);

    while (n > 0 && (*range == ' ' || *range == '\t'))
        range++, n--;
    return n >= t && strncasecmp(range, type, t) == 0 &&
           (n == t || range[t] == ';' || range[t] == ' ' || range[t] == '\t');
}

static bool wants_csv(const char *accept)
{
    double csv = 0, json = -1;

    for (const char *p = accept; p != NULL && *p != '\0';) {
        size_t n = strcspn(p, ",");
        if (media_is(p, n, "text/csv"))
            csv = quality(p, n) > csv ? quality(p, n) : csv;
        else if (media_is(p, n, "application/json"))
            json = quality(p, n) > json ? quality(p, n) : json;
        p += n;
        if (*p == ',')
            p++;
    }
    return csv > 0 && csv > json;
}

static const struct schema metrics_query;

/* The window's checks: 422 in rep and false when it is not one. */
static bool read_window(const cJSON *q, bool day, long long *from, long long *to,
                        struct reply *rep)
{
    return stats_window(q, stats_floor((long long)time(NULL), STATS_DAY),
                        day ? MAX_DAY_DAYS : MAX_HOUR_DAYS, day ? "day" : "hour", from, to, rep);
}

/* Which filters go with which group: 422 otherwise (the counters are not
 * kept per pair of kinds, so a line item report cannot be cut by ad unit;
 * the auction's are kept per ad unit and source, so a source's can). */
static bool read_filters(const cJSON *q, struct report *r, struct reply *rep)
{
    static const struct { const char *param; unsigned groups; } allowed[] = {
        { "ad_unit_id", 1u << GROUP_AD_UNIT | 1u << GROUP_AD_SOURCE },
        { "ad_source_id", 1u << GROUP_AD_SOURCE },
        { "line_item_id", 1u << GROUP_LINE_ITEM },
        { "creative_id", 1u << GROUP_CREATIVE },
        { "advertiser_id", 1u << GROUP_LINE_ITEM | 1u << GROUP_CREATIVE | 1u << GROUP_ADVERTISER },
        { "order_id", 1u << GROUP_LINE_ITEM },
    };

    for (size_t i = 0; i < sizeof allowed / sizeof allowed[0]; i++) {
        const char *v = json_str_member(q, allowed[i].param);
        if (v == NULL)
            continue;
        if ((allowed[i].groups & (1u << r->group)) == 0) {
            reply_error(rep, 422, "%s: not a filter of group_by=%s", allowed[i].param,
                        group_names[r->group]);
            return false;
        }
        if (strcmp(allowed[i].param, "advertiser_id") == 0)
            r->advertiser = v;      /* checked per row (advertiser rows: after folding) */
        else if (strcmp(allowed[i].param, "order_id") == 0)
            r->order = v;           /* checked per row, on its line item's record */
        else if (r->group == GROUP_AD_SOURCE && strcmp(allowed[i].param, "ad_unit_id") == 0)
            r->unit = v;
        else
            r->only = v;
    }
    return true;
}

static void report_free(struct report *r)
{
    stats_map_free(&r->sums, NULL);
    stats_records_free(&r->units);
    stats_records_free(&r->line_items);
    stats_records_free(&r->creatives);
    stats_records_free(&r->advertisers);
    stats_records_free(&r->sources);
    stats_buf_free(&r->out);
}

static void api_metrics(struct request *req, struct reply *rep)
{
    struct report r = {
        .units = { .hash = ADSERVE_KEY_AD_UNITS }, .line_items = { .hash = ADSERVE_KEY_LINE_ITEMS },
        .creatives = { .hash = ADSERVE_KEY_CREATIVES }, .advertisers = { .hash = ADSERVE_KEY_ADVERTISERS },
        .sources = { .hash = ADSERVE_KEY_AD_SOURCES },
    };
    bool advertiser = resource_role(req) == ROLE_ADVERTISER;
    long long from, to;
    cJSON *q = request_query_object(req, rep, &metrics_query);

    if (q == NULL)
        return;
    const char *group = json_str_member(q, "group_by"), *audience = json_str_member(q, "audience");
    const char *format = json_str_member(q, "format");
    for (int i = 0; group_names[i] != NULL; i++)
        if (strcmp(group, group_names[i]) == 0)
            r.group = (enum group)i;
    r.day = strcmp(json_str_member(q, "granularity"), "day") == 0;
    r.csv = format != NULL ? strcmp(format, "csv") == 0
                           : wants_csv(request_header(req, "Accept"));
    r.external = audience != NULL ? strcmp(audience, "external") == 0 : advertiser;
    r.caller = resource_caller_advertiser(req);

    if (advertiser && r.group == GROUP_AD_UNIT)
        reply_error(rep, 403, "group_by=ad_unit: advertisers cannot read ad units");
    else if (advertiser && r.group == GROUP_AD_SOURCE)
        reply_error(rep, 403, "group_by=ad_source: advertisers cannot read ad sources");
    else if (advertiser && !r.external)
        reply_error(rep, 403, "audience=internal: advertisers read external reports");
    else if (read_filters(q, &r, rep) && read_window(q, r.day, &from, &to, rep)) {
        long long first = stats_floor(from, STATS_HOUR);
        long long hours = (to - first + STATS_HOUR - 1) / STATS_HOUR;

        r.c = request_store(req);
        if (r.csv)
            header_csv(&r);
        else
            stats_buf_str(&r.out, "{\"rows\":[");
        /* a callback's own failure (a record read, memory) stops the walk
         * and is kept in r.st: the walk's status must not overwrite it */
        enum store_status walked = stats_read_hours(r.c, first, hours, on_hour, &r);
        if (r.st == STORE_OK)
            r.st = walked;
        if (r.st == STORE_OK && !r.too_many)
            flush_bucket(&r);
        if (!r.csv)
            stats_buf_str(&r.out, "]}");
        if (r.too_many)
            reply_error(rep, 422, "the report holds more than %d rows: narrow from and to, or "
                                  "filter", METRICS_MAX_ROWS);
        else if (r.st != STORE_OK)
            reply_store_error(rep, r.st);
        else if (r.out.oom)
            reply_error(rep, 500, "internal error");
        else {
            reply_text(rep, 200, r.csv ? "text/csv; charset=utf-8" : "application/json",
                       r.out.p, r.out.len);
            r.out.p = NULL;
        }
    }
    cJSON_Delete(q);
    report_free(&r);
}

/* ---- the shapes, for validation and the OpenAPI document -------------------------------- */

static const char *const granularities[] = { "hour", "day", NULL };
static const char *const audiences[] = { "internal", "external", NULL };
static const char *const formats[] = { "json", "csv", NULL };
static const struct schema group_s = { .type = SCHEMA_STRING, .enum_values = group_names };
static const struct schema granularity_s = { .type = SCHEMA_STRING, .enum_values = granularities };
static const struct schema audience_s = { .type = SCHEMA_STRING, .enum_values = audiences };
static const struct schema format_s = { .type = SCHEMA_STRING, .enum_values = formats };
static const struct schema at = { .type = SCHEMA_STRING, .format = SCHEMA_FORMAT_DATE_TIME };
static const struct schema uuid = { .type = SCHEMA_STRING, .format = SCHEMA_FORMAT_UUID };

static const struct schema_field metrics_query_fields[] = {
    { "group_by", &group_s, .required = true,
      .description = "one row per bucket and ad unit, line item, creative, advertiser or ad "
                     "source (advertisers: not ad_unit nor ad_source, 403)" },
    { "granularity", &granularity_s, .dflt = "\"hour\"",
      .description = "hour buckets, or days (the sum of their hours)" },
    { "from", &at, .description = "the window's start; default 00:00 UTC today. Every hour "
                                  "that overlaps the window counts whole" },
    { "to", &at, .description = "the window's end (exclusive); default now. At most 31 days "
                                "after from at hour granularity, 400 at day granularity" },
    { "ad_unit_id", &uuid,
      .description = "group_by=ad_unit, or ad_source (only that unit's auction counters)" },
    { "ad_source_id", &uuid, .description = "group_by=ad_source only" },
    { "line_item_id", &uuid, .description = "group_by=line_item only" },
    { "creative_id", &uuid, .description = "group_by=creative only" },
    { "advertiser_id", &uuid,
      .description = "group_by=line_item, creative (those of this advertiser) or advertiser" },
    { "order_id", &uuid,
      .description = "group_by=line_item only (the line items of this order: its delivery)" },
    { "audience", &audience_s,
      .description = "whose report, for ad units' ext.metric_mode: internal (default for admins "
                     "and operators) hides external_only units, external (always for "
                     "advertisers) internal_only ones; an ad source row sums the units shown" },
    { "format", &format_s, .description = "json or csv; default from Accept (text/csv: CSV)" },
    { NULL },
};
static const struct schema metrics_query = { .type = SCHEMA_OBJECT, .fields = metrics_query_fields };

static const struct schema id_s = { .type = SCHEMA_STRING };
static const struct schema name_s = { .type = SCHEMA_STRING, .nullable = true };
static const struct schema count = { .type = SCHEMA_INTEGER, .has_min = true, .min = 0 };
static const struct schema count_n = { .type = SCHEMA_INTEGER, .nullable = true };
static const struct schema money = { .type = SCHEMA_NUMBER };
static const struct schema ratio = { .type = SCHEMA_NUMBER };
static const struct schema error_codes_s = {
    .type = SCHEMA_FREE_OBJECT, .description = "e.g. {\"405\": 2, \"403\": 1}",
};
static const struct schema ratio_n = { .type = SCHEMA_NUMBER, .nullable = true };
static const struct schema_field row_fields[] = {
    { "ad_unit_id", &id_s, .description = "group_by=ad_unit" },
    { "line_item_id", &id_s, .description = "group_by=line_item" },
    { "creative_id", &id_s, .description = "group_by=creative" },
    { "advertiser_id", &id_s, .description = "group_by=advertiser" },
    { "name", &name_s, .required = true, .description = "the record's name (null once deleted)" },
    { "time", &at, .required = true, .description = "the bucket's start (UTC)" },
    { "requests", &count_n, .required = true,
      .description = "ad requests (ad units; null for other groups)" },
    { "ads", &count, .required = true, .description = "ads served" },
    { "impressions", &count, .required = true },
    { "clicks", &count, .required = true },
    { "conversions", &count, .required = true },
    { "ctr", &ratio, .required = true,
      .description = "clicks / impressions, 6 decimals (0 without impressions)" },
    { "spend", &money, .required = true, .description = "in the account currency" },
    { "conversion_value", &money, .required = true, .description = "in the account currency" },
    { "fill_rate", &ratio_n, .required = true,
      .description = "ads / requests, 6 decimals (ad units; null for other groups)" },
    { "video_starts", &count, .required = true, .description = "videos started (VAST start)" },
    { "video_completes", &count, .required = true, .description = "videos played to the end" },
    { "video_errors", &count, .required = true, .description = "VAST errors reported" },
    { "video_completion_rate", &ratio, .required = true,
      .description = "video_completes / video_starts, 6 decimals (0 without starts)" },
    { "video_error_codes", &error_codes_s, .required = true,
      .description = "VAST error code -> errors reported with it, the codes counted only "
                     "(a code outside VAST 4.2's table counts as 900)" },
    { "passbacks", &count_n, .required = true,
      .description = "answers with the unit's ext.passback tag, nothing having filled "
                     "(ad units; null for other groups)" },
    { NULL },
};
static const struct schema metrics_row = {
    .name = "MetricsRow", .type = SCHEMA_OBJECT, .fields = row_fields,
    .description = "One bucket of one ad unit, line item, creative or advertiser; the id member "
                   "is <group_by>_id.",
};
static const struct schema_field source_row_fields[] = {
    { "ad_source_id", &id_s, .required = true },
    { "name", &name_s, .required = true,
      .description = "the ad source's name (null once deleted)" },
    { "time", &at, .required = true, .description = "the bucket's start (UTC)" },
    { "bid_requests", &count, .required = true, .description = "bid requests sent (breq)" },
    { "bids", &count, .required = true, .description = "usable bids received" },
    { "wins", &count, .required = true, .description = "bids that won and were served" },
    { "timeouts", &count, .required = true,
      .description = "no answer within the source's tmax" },
    { "errors", &count, .required = true,
      .description = "down, an HTTP error, a malformed answer or an unusable bid" },
    { "blocked", &count, .required = true, .description = "bids dropped by a block" },
    { "impressions", &count, .required = true, .description = "of the won bids' ads" },
    { "clicks", &count, .required = true, .description = "of the won bids' ads" },
    { "revenue", &money, .required = true,
      .description = "the won bids' spend, in the account currency" },
    { "ecpm", &ratio_n, .required = true,
      .description = "revenue / impressions x 1000, 6 decimals (null without impressions)" },
    { "win_rate", &ratio_n, .required = true,
      .description = "wins / bids, 6 decimals (null without bids)" },
    { NULL },
};
static const struct schema metrics_source_row = {
    .name = "MetricsAdSourceRow", .type = SCHEMA_OBJECT, .fields = source_row_fields,
    .description = "group_by=ad_source: one bucket of one ad source, summed over the ad units "
                   "that the audience sees (ext.metric_mode).",
};
/* the rows of either kind: told apart by their required members */
static const struct schema_variant row_variants[] = {
    { "counters", &metrics_row },
    { "ad_source", &metrics_source_row },
    { NULL },
};
static const struct schema metrics_any_row = { .type = SCHEMA_UNION, .variants = row_variants };
static const struct schema metrics_rows = { .type = SCHEMA_ARRAY, .items = &metrics_any_row };
static const struct schema_field report_fields[] = {
    { "rows", &metrics_rows, .required = true, .description = "sorted by time, then id" },
    { NULL },
};
static const struct schema metrics_report = {
    .name = "MetricsReport", .type = SCHEMA_OBJECT, .fields = report_fields,
};
static const int metrics_errors[] = { 401, 403, 422, 503, 0 };
static const struct route_doc metrics_doc = {
    .tag = "Metric", .summary = "Counters per ad unit, line item, creative, advertiser or ad "
                                "source, per hour or day (advertisers: their own)",
    .response = &metrics_report, .status = 200, .query = &metrics_query, .errors = metrics_errors,
    .csv = "Accept: text/csv or ?format=csv: a header line (time,<group_by>_id,name,requests,ads,"
           "impressions,clicks,conversions,ctr,spend,conversion_value,fill_rate,video_starts,"
           "video_completes,video_errors,video_completion_rate,video_error_codes: "
           "code:count pairs, space-separated, passbacks; group_by=ad_source: time,ad_source_id,"
           "name,bid_requests,bids,wins,timeouts,errors,blocked,impressions,clicks,revenue,ecpm,"
           "win_rate), then the same rows (RFC 4180, CRLF; null as an empty field)",
};

const struct route metrics_routes[] = {
    { "GET", "/api/metrics", api_metrics, ROLES_ANY, BODY_NONE, &metrics_doc },
};
const size_t metrics_routes_count = sizeof metrics_routes / sizeof metrics_routes[0];
