/* Reading the module's counters (README "Events") for /api/metrics and
 * /api/dashboard: the hour hashes adserve:stats:{YYYYMMDDHH}, whose fields
 * are {u|li|cr}:{id}:{metric} and, for the auction (README "External
 * demand"), as:{ad unit id}/{ad source id}:{metric}, and adserve:delivery. Redis only answers
 * HGETALLs, pipelined a day at a time; everything is summed here, in C.
 *
 * Also the small tools both reports share: a map of ids, the records
 * behind ids (names, advertisers, ad units' metric_mode) read with HMGET
 * only for the ids a report holds, and a growable text buffer. */
#ifndef ADSERVE_STATS_H
#define ADSERVE_STATS_H

#include "store.h"

#include <cJSON.h>
#include "util.h"

#include <stdbool.h>
#include <stddef.h>

#define STATS_ID_MAX 64                 /* longer ids are not ours: skipped */
#define STATS_HOUR 3600LL
#define STATS_DAY 86400LL

/* the contract's counter dimensions and metrics (adserve_contract.h) */
enum stats_kind {
    STATS_UNIT = ADSERVE_DIM_UNIT,
    STATS_LINE_ITEM = ADSERVE_DIM_LINE_ITEM,
    STATS_CREATIVE = ADSERVE_DIM_CREATIVE,
    STATS_AD_SOURCE = ADSERVE_DIM_AD_SOURCE,    /* ids "{ad unit id}/{ad source id}" */
};

/* The counters a report shows (opp, pacing's own, is not one). */
enum stats_metric {
    STATS_REQ = ADSERVE_METRIC_REQ,
    STATS_ADS = ADSERVE_METRIC_ADS,
    STATS_IMP = ADSERVE_METRIC_IMP,
    STATS_CLK = ADSERVE_METRIC_CLK,
    STATS_CONV = ADSERVE_METRIC_CONV,
    STATS_SPEND = ADSERVE_METRIC_SPEND,
    STATS_CONVVAL = ADSERVE_METRIC_CONVVAL,
    STATS_METRICS = ADSERVE_METRIC_REPORTED,
    /* then a video's events, by their VAST names (adserve_video_event_e) */
    STATS_VIDEO = STATS_METRICS,
    /* then the VAST errors by code (adserve_vast_error_codes' order) */
    STATS_VAST_ERROR = STATS_VIDEO + ADSERVE_VIDEO_EVENT_COUNT,
    /* then an ad unit's passback answers */
    STATS_PASSBACK = STATS_VAST_ERROR + ADSERVE_VAST_ERROR_CODES,
    /* then the auction's, ADSERVE_METRIC_BREQ .. BLOCKED in their order
     * (STATS_AD_SOURCE's only: STATS_AUCTION_OF(ADSERVE_METRIC_WINS)) */
    STATS_AUCTION,
    STATS_ALL = STATS_AUCTION + ADSERVE_METRIC_BLOCKED - ADSERVE_METRIC_BREQ + 1,
};
#define STATS_AUCTION_OF(metric) (STATS_AUCTION + (metric) - ADSERVE_METRIC_BREQ)

/* prefix then the UTC hour of hour (unix seconds) as YYYYMMDDHH into out:
 * the name of an hour's hash (ADSERVE_KEY_STATS, ADSERVE_KEY_POPULARITY). */
int stats_hour_key(char *out, size_t len, const char *prefix, long long hour);

struct stats_counts {
    long long v[STATS_ALL];             /* spend and convval in micros */
};

bool stats_counts_zero(const struct stats_counts *c);
void stats_counts_add(struct stats_counts *to, const struct stats_counts *c);

/* ---- a map of ids to values (open addressing, keys copied) ------------------- */

struct stats_entry {
    char *id;
    void *value;
};

struct stats_map {
    struct stats_entry *slots;
    size_t cap, n;
};

/* The value of id, or NULL. */
void *stats_map_get(const struct stats_map *m, const char *id, size_t len);
/* The slot of id, added (with a NULL value) when absent; NULL out of memory. */
struct stats_entry *stats_map_slot(struct stats_map *m, const char *id, size_t len);
/* The entries, in a malloc'd array of n pointers sorted by id (NULL when
 * empty or out of memory: check m->n). */
struct stats_entry **stats_map_sorted(const struct stats_map *m);
/* Frees every key and value (free_value, or free() when NULL), keeps the
 * table for reuse. */
void stats_map_clear(struct stats_map *m, void (*free_value)(void *));
void stats_map_free(struct stats_map *m, void (*free_value)(void *));

/* Adds the counters of kind in one HGETALL reply (field, value, ...) to m
 * (id -> struct stats_counts); with only, to that id alone. -1 out of
 * memory. */
int stats_add_hour(struct stats_map *m, const redisReply *fields, enum stats_kind kind,
                   const char *only);

/* Calls fn for each hour hash from first (an hour start, in unix seconds)
 * for n hours, in order, with its HGETALL reply (empty for an hour without
 * counters). A non-zero return from fn stops the walk (STORE_OK). */
typedef int stats_hour_fn(long long hour, const redisReply *fields, void *arg);
enum store_status stats_read_hours(struct store_conn *c, long long first, long long n,
                                   stats_hour_fn *fn, void *arg);

/* ---- the records behind ids ------------------------------------------------ */

enum stats_metric_mode { MODE_ALL, MODE_INTERNAL_ONLY, MODE_EXTERNAL_ONLY };

struct stats_record {
    bool exists;                        /* false: no such record (deleted) */
    char *name;                         /* NULL when none */
    char advertiser_id[UUID_STR_LEN];   /* "" when none */
    char order_id[UUID_STR_LEN];        /* line items': "" when none */
    enum stats_metric_mode mode;        /* ad units' ext.metric_mode */
};

/* A cache of one hash's records (id -> struct stats_record). */
struct stats_records {
    const char *hash;                   /* ADSERVE_KEY_LINE_ITEMS */
    struct stats_map map;
};

/* Whether a report for this audience (external, or internal) shows the
 * figures of an ad unit with this record (ext.metric_mode): internal ones
 * hide external_only units, external ones internal_only units. An ad unit
 * without a record (NULL, or deleted) has no mode: shown. */
bool stats_unit_shown(const struct stats_record *rec, bool external);

/* Reads the records of the n ids that the cache lacks (HMGET, pipelined). */
enum store_status stats_records_load(struct store_conn *c, struct stats_records *r,
                                     struct stats_entry *const *ids, size_t n);
/* The record of id once loaded (exists false when there is none), or NULL. */
const struct stats_record *stats_record(const struct stats_records *r, const char *id);
void stats_records_free(struct stats_records *r);

/* ---- ad sources ------------------------------------------------------------ */

/* Sums pairs (STATS_AD_SOURCE's: "{ad unit id}/{ad source id}" -> struct
 * stats_counts) per ad source into out (ad source id -> struct
 * stats_counts), counting only the ad units that the audience sees
 * (stats_unit_shown; their records read into units, a cache of
 * ADSERVE_KEY_AD_UNITS), and with unit or source (NULL: any) only that ad
 * unit's or ad source's. */
enum store_status stats_fold_ad_sources(struct store_conn *c, const struct stats_map *pairs,
                                        struct stats_records *units, bool external,
                                        const char *unit, const char *source,
                                        struct stats_map *out);

/* An ad source's figures (README "External demand"): revenue, the spend of
 * its won bids' events in currency units; ecpm = revenue / impressions x
 * 1000 and win_rate = wins / bids, each rounded to 6 decimals, NAN (null)
 * without impressions or bids. */
struct stats_source_figures {
    double revenue, ecpm, win_rate;
};
void stats_source_figures(const struct stats_counts *c, struct stats_source_figures *f);

/* ---- time ------------------------------------------------------------------ */

/* t rounded down to a multiple of unit (also before 1970). */
long long stats_floor(long long t, long long unit);

/* ---- text ------------------------------------------------------------------ */

struct stats_buf {
    char *p;
    size_t len, cap;
    bool oom;                           /* an append failed: the text is short */
};

void stats_buf_add(struct stats_buf *b, const char *s, size_t n);
void stats_buf_str(struct stats_buf *b, const char *s);
void stats_buf_printf(struct stats_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* s as a JSON string (quoted and escaped); NULL as null. */
void stats_buf_json_str(struct stats_buf *b, const char *s);
/* s as a CSV field (RFC 4180: quoted when it holds a comma, a quote, CR or
 * LF, quotes doubled); NULL as an empty field. */
void stats_buf_csv_str(struct stats_buf *b, const char *s);
/* v as a JSON number: integers without a fraction, else the shortest of
 * 15 or 17 significant digits that reads back the same (as cJSON). */
void stats_buf_num(struct stats_buf *b, double v);
void stats_buf_free(struct stats_buf *b);

/* num / den rounded to 6 decimals; 0 when den is 0. */
double stats_ratio(long long num, long long den);

/* successes / trials and its 95% Wilson score interval, each rounded to 6
 * decimals, in out: rate, low, high (zeros without trials). So that a
 * product owner can tell a real difference in CTR from noise. */
void stats_wilson(long long successes, long long trials, double out[3]);

/* Appends {key: name, shown, clicks, ctr, ctr_low, ctr_high} to arr (the
 * CTR as stats_wilson gives it): the row, or NULL out of memory. */
cJSON *stats_ctr_row(cJSON *arr, const char *key, const char *name, long long shown,
                     long long clicks);

/* The two-sided p-value of a pooled two-proportion z-test of s1/n1 against
 * s2/n2 (6 decimals); -1 when either has no trials. */
double stats_two_proportion_p(long long s1, long long n1, long long s2, long long n2);

/* A report's window from its query's from and to (RFC 3339; absent:
 * dflt_from and now), at most max_days long: true, or false with a 422 in
 * rep (naming the granularity when one is given). */
struct reply;
bool stats_window(const cJSON *q, long long dflt_from, long long max_days,
                  const char *granularity, long long *from, long long *to, struct reply *rep);

/* One hour hash field "{prefix}{id}:{metric}": its id and metric. */
bool stats_field_split(const redisReply *f, const char *prefix, const char **id, size_t *len,
                       const char **metric, size_t *mlen);

/* The figures derived from counters (README "Statistics"): ctr = clicks /
 * impressions, fill_rate = ads / requests (ad units only), spend and
 * conversion_value in currency units (the counters hold micros). */
struct stats_figures {
    double ctr, fill_rate, spend, conversion_value;
    double video_completion_rate;       /* completes / starts */
};
void stats_figures(const struct stats_counts *c, struct stats_figures *f);

#endif
