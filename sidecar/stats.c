#include "stats.h"

#include "json_util.h"

#include <cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>
#include <time.h>

#define STATS_BATCH 24              /* hour hashes per pipeline */
#define RECORDS_PER_HMGET 60        /* store.c takes 64 arguments a command */
#define RECORDS_PER_PIPELINE 200    /* HMGETs per round trip */

bool stats_counts_zero(const struct stats_counts *c)
{
    for (int i = 0; i < STATS_ALL; i++)
        if (c->v[i] != 0)
            return false;
    return true;
}

void stats_counts_add(struct stats_counts *to, const struct stats_counts *c)
{
    for (int i = 0; i < STATS_ALL; i++)
        to->v[i] += c->v[i];
}

/* ---- the map ------------------------------------------------------------------ */

static struct stats_entry *find(const struct stats_map *m, const char *id, size_t len)
{
    if (m->cap == 0)
        return NULL;
    for (size_t i = adserve_hash(id, len) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        struct stats_entry *e = &m->slots[i];
        if (e->id == NULL || (strncmp(e->id, id, len) == 0 && e->id[len] == '\0'))
            return e;
    }
}

static int grow(struct stats_map *m)
{
    size_t cap = m->cap ? m->cap * 2 : 64;
    struct stats_entry *slots = calloc(cap, sizeof *slots), *old = m->slots;

    if (slots == NULL)
        return -1;
    size_t old_cap = m->cap;
    m->slots = slots;
    m->cap = cap;
    for (size_t i = 0; i < old_cap; i++)
        if (old[i].id != NULL)
            *find(m, old[i].id, strlen(old[i].id)) = old[i];
    free(old);
    return 0;
}

void *stats_map_get(const struct stats_map *m, const char *id, size_t len)
{
    struct stats_entry *e = find(m, id, len);

    return e != NULL && e->id != NULL ? e->value : NULL;
}

struct stats_entry *stats_map_slot(struct stats_map *m, const char *id, size_t len)
{
    struct stats_entry *e = find(m, id, len);

    if (e != NULL && e->id != NULL)
        return e;
    /* at most half full */
    if ((m->n + 1) * 2 > m->cap) {
        if (grow(m) != 0)
            return NULL;
        e = find(m, id, len);
    }
    e->id = malloc(len + 1);
    if (e->id == NULL)
        return NULL;
    memcpy(e->id, id, len);
    e->id[len] = '\0';
    e->value = NULL;
    m->n++;
    return e;
}

static int by_id(const void *a, const void *b)
{
    return strcmp((*(struct stats_entry *const *)a)->id, (*(struct stats_entry *const *)b)->id);
}

struct stats_entry **stats_map_sorted(const struct stats_map *m)
{
    if (m->n == 0)
        return NULL;
    struct stats_entry **out = malloc(m->n * sizeof *out);
    if (out == NULL)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < m->cap; i++)
        if (m->slots[i].id != NULL)
            out[k++] = &m->slots[i];
    qsort(out, k, sizeof *out, by_id);
    return out;
}

void stats_map_clear(struct stats_map *m, void (*free_value)(void *))
{
    for (size_t i = 0; i < m->cap; i++) {
        struct stats_entry *e = &m->slots[i];
        if (e->id == NULL)
            continue;
        if (free_value != NULL)
            free_value(e->value);
        else
            free(e->value);
        free(e->id);
        e->id = NULL;
        e->value = NULL;
    }
    m->n = 0;
}

void stats_map_free(struct stats_map *m, void (*free_value)(void *))
{
    stats_map_clear(m, free_value);
    free(m->slots);
    m->slots = NULL;
    m->cap = 0;
}

/* ---- the hour hashes --------------------------------------------------------------- */

/* An id as the reports print it: printable ASCII without quotes or
 * backslashes (ours are UUIDs; anything else was not written by serving). */
static bool plain_id(const char *s, size_t n)
{
    if (n == 0 || n > STATS_ID_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        if (s[i] <= 0x20 || s[i] >= 0x7f || s[i] == '"' || s[i] == '\\')
            return false;
    return true;
}

/* An auction counter's id, "{ad unit id}/{ad source id}": two plain ids
 * around one separator. */
static bool pair_id(const char *s, size_t n)
{
    const char *sep = memchr(s, ADSERVE_SOURCE_SEP, n);

    if (sep == NULL)
        return false;
    size_t left = (size_t)(sep - s);
    return plain_id(s, left) && plain_id(sep + 1, n - left - 1) &&
           memchr(sep + 1, ADSERVE_SOURCE_SEP, n - left - 1) == NULL;
}

/* A VAST error's code at the end of a field, {id}:error:{code}: its
 * metric, with *colon moved to the colon before "error"; -1 otherwise. */
static int vast_error(const char *start, const char **colon, const char *name, size_t nlen)
{
    static const char error[] = ":" ADSERVE_V_VIDEO_ERROR;
    size_t n = sizeof error - 1;
    char digits[4];

    if (nlen != 3 || strspn(name, "0123456789") < 3 || *colon - start < (ptrdiff_t)n ||
        memcmp(*colon - n, error, n) != 0)
        return -1;
    memcpy(digits, name, 3);
    digits[3] = '\0';
    *colon -= n;
    return STATS_VAST_ERROR + adserve_vast_error_index(strtol(digits, NULL, 10));
}

/* {prefix}{id}:{metric} (or {prefix}{id}:error:{code}) of kind: the id's
 * place and the metric; false for other fields (another kind, opp, dup:*,
 * invalid:*, dropped:*, the auction's counters of another kind, and on an
 * ad source's pair anything but the auction's, imp, clk and spend). */
static bool parse_field(const redisReply *f, enum stats_kind kind, const char **id, size_t *len,
                        int *metric)
{
    const char *prefix = adserve_dim_names[kind];
    size_t plen = strlen(prefix);

    if (f->type != REDIS_REPLY_STRING || f->len <= plen || strncmp(f->str, prefix, plen) != 0)
        return false;
    const char *colon = memrchr(f->str, ':', f->len);
    if (colon == NULL || colon < f->str + plen)
        return false;
    const char *name = colon + 1;
    size_t nlen = f->len - (size_t)(name - f->str);
    int m = adserve_vocab(adserve_metric_names, name, nlen);

    if (kind == STATS_AD_SOURCE) {
        /* the auction's counters, and its wins' events and spend: no more */
        if (m >= ADSERVE_METRIC_BREQ && m <= ADSERVE_METRIC_BLOCKED)
            m = STATS_AUCTION_OF(m);
        else if (m != ADSERVE_METRIC_IMP && m != ADSERVE_METRIC_CLK && m != ADSERVE_METRIC_SPEND)
            return false;
    } else if (m == ADSERVE_METRIC_PASSBACK) {
        m = STATS_PASSBACK;
    } else if (m >= ADSERVE_METRIC_BREQ && m <= ADSERVE_METRIC_BLOCKED) {
        return false;                   /* the auction's, of another kind: not ours */
    } else if (m < 0 || m >= STATS_METRICS) {
        m = adserve_vocab(adserve_video_event_names, name, nlen);
        m = m < 0 ? vast_error(f->str + plen, &colon, name, nlen) : STATS_VIDEO + m;
    }
    if (m < 0)
        return false;
    *id = f->str + plen;
    *len = (size_t)(colon - *id);
    *metric = m;
    return kind == STATS_AD_SOURCE ? pair_id(*id, *len) : plain_id(*id, *len);
}

/* A counter's value: an integer (HINCRBY's), else none. */
static bool parse_value(const redisReply *v, long long *out)
{
    char *end;

    if (v->type != REDIS_REPLY_STRING || v->len == 0 || v->len > 20)
        return false;
    errno = 0;
    *out = strtoll(v->str, &end, 10);
    return errno == 0 && end == v->str + v->len;
}

int stats_add_hour(struct stats_map *m, const redisReply *fields, enum stats_kind kind,
                   const char *only)
{
    size_t only_len = only != NULL ? strlen(only) : 0;

    if (fields->type != REDIS_REPLY_ARRAY)
        return 0;
    for (size_t i = 0; i + 1 < fields->elements; i += 2) {
        const char *id;
        size_t len;
        int metric;
        long long v;
        if (!parse_field(fields->element[i], kind, &id, &len, &metric) ||
            !parse_value(fields->element[i + 1], &v) ||
            (only != NULL && (len != only_len || memcmp(id, only, len) != 0)))
            continue;
        struct stats_entry *e = stats_map_slot(m, id, len);
        if (e == NULL)
            return -1;
        if (e->value == NULL && (e->value = calloc(1, sizeof(struct stats_counts))) == NULL)
            return -1;
        ((struct stats_counts *)e->value)->v[metric] += v;
    }
    return 0;
}

int stats_hour_key(char *out, size_t len, const char *prefix, long long hour)
{
    time_t t = (time_t)hour;
    struct tm tm;

    if (gmtime_r(&t, &tm) == NULL || tm.tm_year + 1900 < 0 || tm.tm_year + 1900 > 9999)
        return -1;
    int n = snprintf(out, len, "%s%04d%02d%02d%02d", prefix, tm.tm_year + 1900,
                     tm.tm_mon + 1, tm.tm_mday, tm.tm_hour);
    return n > 0 && (size_t)n < len ? 0 : -1;
}

enum store_status stats_read_hours(struct store_conn *c, long long first, long long n,
                                   stats_hour_fn *fn, void *arg)
{
    char keys[STATS_BATCH][48];
    const char *argv[STATS_BATCH][3];
    const char *const *cmds[STATS_BATCH];
    redisReply *replies[STATS_BATCH];

    for (long long done = 0; done < n;) {
        size_t k = (size_t)(n - done < STATS_BATCH ? n - done : STATS_BATCH);
        for (size_t i = 0; i < k; i++) {
            if (stats_hour_key(keys[i], sizeof keys[i], ADSERVE_KEY_STATS,
                               first + (done + (long long)i) * STATS_HOUR) != 0)
                return STORE_ERROR;
            argv[i][0] = "HGETALL";
            argv[i][1] = keys[i];
            argv[i][2] = NULL;
            cmds[i] = argv[i];
        }
        enum store_status st = store_pipeline(c, cmds, k, replies);
        if (st != STORE_OK)
            return st;
        int stop = 0;
        for (size_t i = 0; i < k; i++) {
            if (!stop)
                stop = fn(first + (done + (long long)i) * STATS_HOUR, replies[i], arg);
            freeReplyObject(replies[i]);
        }
        if (stop)
            return STORE_OK;
        done += (long long)k;
    }
    return STORE_OK;
}

/* ---- records ------------------------------------------------------------------------ */

static void record_free(void *p)
{
    struct stats_record *r = p;

    if (r != NULL)
        free(r->name);
    free(r);
}

static enum stats_metric_mode metric_mode(const cJSON *rec)
{
    const char *m = json_str_member(cJSON_GetObjectItemCaseSensitive(rec, "ext"), "metric_mode");

    switch (adserve_vocab_str(adserve_metric_mode_names, m)) {
    case ADSERVE_METRIC_MODE_INTERNAL_ONLY:
        return MODE_INTERNAL_ONLY;
    case ADSERVE_METRIC_MODE_EXTERNAL_ONLY:
        return MODE_EXTERNAL_ONLY;
    default:
        return MODE_ALL;
    }
}

/* The record of one HMGET value (nil: none). NULL out of memory. */
static struct stats_record *record_from(const redisReply *v)
{
    struct stats_record *r = calloc(1, sizeof *r);

    if (r == NULL || v->type != REDIS_REPLY_STRING)
        return r;
    cJSON *j = cJSON_ParseWithLength(v->str, v->len);
    if (!cJSON_IsObject(j)) {       /* not ours: as if absent */
        cJSON_Delete(j);
        return r;
    }
    r->exists = true;
    const char *name = json_str_member(j, "name");
    const char *adv = json_str_member(j, "advertiser_id");
    const char *order = json_str_member(j, "order_id");
    if (name != NULL && (r->name = strdup(name)) == NULL) {
        cJSON_Delete(j);
        free(r);
        return NULL;
    }
    if (adv != NULL && copy_str(r->advertiser_id, sizeof r->advertiser_id, adv) != 0)
        r->advertiser_id[0] = '\0';
    if (order != NULL && copy_str(r->order_id, sizeof r->order_id, order) != 0)
        r->order_id[0] = '\0';
    r->mode = metric_mode(j);
    cJSON_Delete(j);
    return r;
}

/* One round trip: HMGETs of ids[0..n) (n <= RECORDS_PER_PIPELINE * RECORDS_PER_HMGET). */
static enum store_status load_round(struct store_conn *c, struct stats_records *r,
                                    const char **ids, size_t n)
{
    size_t ncmd = (n + RECORDS_PER_HMGET - 1) / RECORDS_PER_HMGET;
    const char **argv = malloc((n + 3 * ncmd) * sizeof *argv);
    const char *const **cmds = malloc(ncmd * sizeof *cmds);
    redisReply **replies = malloc(ncmd * sizeof *replies);
    enum store_status st = STORE_ERROR;

    if (argv == NULL || cmds == NULL || replies == NULL)
        goto out;
    const char **a = argv;
    for (size_t i = 0; i < ncmd; i++) {
        size_t from = i * RECORDS_PER_HMGET, to = from + RECORDS_PER_HMGET < n ? from + RECORDS_PER_HMGET : n;
        cmds[i] = a;
        *a++ = "HMGET";
        *a++ = r->hash;
        for (size_t j = from; j < to; j++)
            *a++ = ids[j];
        *a++ = NULL;
    }
    if ((st = store_pipeline(c, cmds, ncmd, replies)) != STORE_OK)
        goto out;
    for (size_t i = 0; i < ncmd; i++) {
        size_t from = i * RECORDS_PER_HMGET, to = from + RECORDS_PER_HMGET < n ? from + RECORDS_PER_HMGET : n;
        const redisReply *rep = replies[i];
        if (rep->type != REDIS_REPLY_ARRAY || rep->elements != to - from)
            st = STORE_ERROR;
        for (size_t j = from; st == STORE_OK && j < to; j++) {
            struct stats_entry *e = stats_map_slot(&r->map, ids[j], strlen(ids[j]));
            struct stats_record *rec = e != NULL ? record_from(rep->element[j - from]) : NULL;
            if (rec == NULL) {
                st = STORE_ERROR;
                break;
            }
            record_free(e->value);
            e->value = rec;
        }
    }
    for (size_t i = 0; i < ncmd; i++)
        freeReplyObject(replies[i]);
out:
    free(argv);
    free(cmds);
    free(replies);
    return st;
}

enum store_status stats_records_load(struct store_conn *c, struct stats_records *r,
                                     struct stats_entry *const *ids, size_t n)
{
    const size_t round = RECORDS_PER_PIPELINE * RECORDS_PER_HMGET;
    const char **missing = malloc((n ? n : 1) * sizeof *missing);
    size_t k = 0;
    enum store_status st = STORE_OK;

    if (missing == NULL)
        return STORE_ERROR;
    for (size_t i = 0; i < n; i++)
        if (stats_map_get(&r->map, ids[i]->id, strlen(ids[i]->id)) == NULL)
            missing[k++] = ids[i]->id;
    for (size_t done = 0; st == STORE_OK && done < k; done += round)
        st = load_round(c, r, missing + done, k - done < round ? k - done : round);
    free(missing);
    return st;
}

bool stats_unit_shown(const struct stats_record *rec, bool external)
{
    return rec == NULL || !rec->exists ||
           rec->mode != (external ? MODE_INTERNAL_ONLY : MODE_EXTERNAL_ONLY);
}

const struct stats_record *stats_record(const struct stats_records *r, const char *id)
{
    return stats_map_get(&r->map, id, strlen(id));
}

void stats_records_free(struct stats_records *r)
{
    stats_map_free(&r->map, record_free);
}

/* ---- ad sources -------------------------------------------------------------------------- */

/* The ad unit id of a pair (a STATS_AD_SOURCE id: pair_id made sure of its
 * one separator), as a length; *source after it. */
static size_t pair_split(const char *pair, const char **source)
{
    const char *sep = strchr(pair, ADSERVE_SOURCE_SEP);

    *source = sep + 1;
    return (size_t)(sep - pair);
}

static bool pair_wanted(const char *pair, const char *unit, const char *source)
{
    const char *src;
    size_t ulen = pair_split(pair, &src);

    return (unit == NULL || (strlen(unit) == ulen && memcmp(pair, unit, ulen) == 0)) &&
           (source == NULL || strcmp(src, source) == 0);
}

enum store_status stats_fold_ad_sources(struct store_conn *c, const struct stats_map *pairs,
                                        struct stats_records *units, bool external,
                                        const char *unit, const char *source,
                                        struct stats_map *out)
{
    struct stats_map unit_ids = { 0 };
    struct stats_entry **ids = NULL;
    enum store_status st = STORE_ERROR;

    /* the ad units first, to read their records in one go */
    for (size_t i = 0; i < pairs->cap; i++) {
        const char *pair = pairs->slots[i].id, *src;
        if (pair == NULL || !pair_wanted(pair, unit, source))
            continue;
        if (stats_map_slot(&unit_ids, pair, pair_split(pair, &src)) == NULL)
            goto out;
    }
    if (unit_ids.n == 0) {
        st = STORE_OK;
        goto out;
    }
    if ((ids = stats_map_sorted(&unit_ids)) == NULL ||
        (st = stats_records_load(c, units, ids, unit_ids.n)) != STORE_OK)
        goto out;
    st = STORE_ERROR;
    for (size_t i = 0; i < pairs->cap; i++) {
        const char *pair = pairs->slots[i].id, *src;
        if (pair == NULL || !pair_wanted(pair, unit, source))
            continue;
        size_t ulen = pair_split(pair, &src);
        char unit_id[STATS_ID_MAX + 1];
        memcpy(unit_id, pair, ulen);
        unit_id[ulen] = '\0';
        if (!stats_unit_shown(stats_record(units, unit_id), external))
            continue;
        struct stats_entry *e = stats_map_slot(out, src, strlen(src));
        if (e == NULL ||
            (e->value == NULL && (e->value = calloc(1, sizeof(struct stats_counts))) == NULL))
            goto out;
        stats_counts_add(e->value, pairs->slots[i].value);
    }
    st = STORE_OK;
out:
    free(ids);
    stats_map_free(&unit_ids, NULL);
    return st;
}

void stats_source_figures(const struct stats_counts *c, struct stats_source_figures *f)
{
    long long imp = c->v[STATS_IMP], bids = c->v[STATS_AUCTION_OF(ADSERVE_METRIC_BIDS)];

    f->revenue = (double)c->v[STATS_SPEND] / 1e6;
    f->ecpm = imp != 0 ? round((double)c->v[STATS_SPEND] / (double)imp / 1e3 * 1e6) / 1e6 : NAN;
    f->win_rate = bids != 0 ? stats_ratio(c->v[STATS_AUCTION_OF(ADSERVE_METRIC_WINS)], bids) : NAN;
}

/* ---- time ------------------------------------------------------------------------------ */

long long stats_floor(long long t, long long unit)
{
    long long q = t / unit;

    if (t % unit != 0 && t < 0)
        q--;
    return q * unit;
}

/* ---- text ------------------------------------------------------------------------------- */

void stats_buf_add(struct stats_buf *b, const char *s, size_t n)
{
    if (b->oom)
        return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (p == NULL) {
            b->oom = true;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

void stats_buf_str(struct stats_buf *b, const char *s)
{
    stats_buf_add(b, s, strlen(s));
}

void stats_buf_printf(struct stats_buf *b, const char *fmt, ...)
{
    char tmp[256];
    va_list ap;

    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof tmp)
        b->oom = true;          /* never: the formats are short */
    else
        stats_buf_add(b, tmp, (size_t)n);
}

void stats_buf_json_str(struct stats_buf *b, const char *s)
{
    if (s == NULL) {
        stats_buf_str(b, "null");
        return;
    }
    stats_buf_add(b, "\"", 1);
    for (const char *p = s; *p != '\0'; p++) {
        unsigned char ch = (unsigned char)*p;
        if (ch == '"' || ch == '\\') {
            char esc[2] = { '\\', (char)ch };
            stats_buf_add(b, esc, 2);
        } else if (ch < 0x20) {
            stats_buf_printf(b, "\\u%04x", ch);
        } else {
            stats_buf_add(b, p, 1);
        }
    }
    stats_buf_add(b, "\"", 1);
}

void stats_buf_csv_str(struct stats_buf *b, const char *s)
{
    if (s == NULL)
        return;
    if (strpbrk(s, ",\"\r\n") == NULL) {
        stats_buf_str(b, s);
        return;
    }
    stats_buf_add(b, "\"", 1);
    for (const char *p = s; *p != '\0'; p++) {
        if (*p == '"')
            stats_buf_add(b, "\"\"", 2);
        else
            stats_buf_add(b, p, 1);
    }
    stats_buf_add(b, "\"", 1);
}

void stats_buf_num(struct stats_buf *b, double v)
{
    char tmp[64];

    if (!isfinite(v)) {
        stats_buf_str(b, "null");
        return;
    }
    if (v == 0)
        v = 0;          /* no "-0" */
    if (v == trunc(v) && fabs(v) < 1e15) {
        stats_buf_printf(b, "%.0f", v);
        return;
    }
    snprintf(tmp, sizeof tmp, "%.15g", v);
    if (strtod(tmp, NULL) != v)
        snprintf(tmp, sizeof tmp, "%.17g", v);
    stats_buf_str(b, tmp);
}

void stats_buf_free(struct stats_buf *b)
{
    free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
}

double stats_ratio(long long num, long long den)
{
    if (den == 0)
        return 0;
    return round((double)num / (double)den * 1e6) / 1e6;
}

void stats_wilson(long long successes, long long trials, double out[3])
{
    const double z = 1.959964;           /* the normal's 97.5% quantile */
    double n = (double)trials, p, d, c, h;

    if (trials <= 0) {
        out[0] = out[1] = out[2] = 0;
        return;
    }
    p = (double)(successes < trials ? successes : trials) / n;
    d = 1 + z * z / n;
    c = (p + z * z / (2 * n)) / d;
    h = z * sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d;
    out[0] = round(p * 1e6) / 1e6;
    out[1] = round(fmax(0, c - h) * 1e6) / 1e6;
    out[2] = round(fmin(1, c + h) * 1e6) / 1e6;
}

cJSON *stats_ctr_row(cJSON *arr, const char *key, const char *name, long long shown,
                     long long clicks)
{
    double ctr[3];
    cJSON *e = cJSON_CreateObject();

    stats_wilson(clicks, shown, ctr);
    if (e == NULL || !cJSON_AddItemToArray(arr, e)) {
        cJSON_Delete(e);
        return NULL;
    }
    return cJSON_AddStringToObject(e, key, name) &&
                   cJSON_AddNumberToObject(e, "shown", (double)shown) &&
                   cJSON_AddNumberToObject(e, "clicks", (double)clicks) &&
                   cJSON_AddNumberToObject(e, "ctr", ctr[0]) &&
                   cJSON_AddNumberToObject(e, "ctr_low", ctr[1]) &&
                   cJSON_AddNumberToObject(e, "ctr_high", ctr[2])
               ? e : NULL;
}

double stats_two_proportion_p(long long s1, long long n1, long long s2, long long n2)
{
    if (n1 <= 0 || n2 <= 0)
        return -1;
    double p1 = (double)s1 / (double)n1, p2 = (double)s2 / (double)n2;
    double pool = (double)(s1 + s2) / (double)(n1 + n2);
    double se = sqrt(pool * (1 - pool) * (1 / (double)n1 + 1 / (double)n2));

    /* no variance at all (no clicks anywhere, or every one clicked): the
     * rates are equal, and nothing tells them apart */
    if (se == 0)
        return 1;
    return round(erfc(fabs(p1 - p2) / se / sqrt(2)) * 1e6) / 1e6;
}

bool stats_window(const cJSON *q, long long dflt_from, long long max_days,
                  const char *granularity, long long *from, long long *to, struct reply *rep)
{
    const char *f = json_str_member(q, "from"), *t = json_str_member(q, "to");

    *from = dflt_from;
    *to = (long long)time(NULL);
    if ((f != NULL && rfc3339_parse(f, from) != 0) || (t != NULL && rfc3339_parse(t, to) != 0))
        reply_error(rep, 422, "from, to: must be RFC 3339 date-times");
    else if (*to <= *from)
        reply_error(rep, 422, "to: must be after from");
    else if (*to - *from > max_days * STATS_DAY)
        reply_error(rep, 422, "to: the window spans more than %lld days%s%s%s", max_days,
                    granularity != NULL ? " at " : "", granularity != NULL ? granularity : "",
                    granularity != NULL ? " granularity" : "");
    else
        return true;
    return false;
}

bool stats_field_split(const redisReply *f, const char *prefix, const char **id, size_t *len,
                       const char **metric, size_t *mlen)
{
    size_t plen = strlen(prefix);

    if (f->type != REDIS_REPLY_STRING || f->len <= plen || memcmp(f->str, prefix, plen) != 0)
        return false;
    const char *colon = memrchr(f->str, ':', f->len);
    if (colon == NULL || colon <= f->str + plen)
        return false;
    *id = f->str + plen;
    *len = (size_t)(colon - *id);
    *metric = colon + 1;
    *mlen = f->len - (size_t)(colon + 1 - f->str);
    return true;
}

void stats_figures(const struct stats_counts *c, struct stats_figures *f)
{
    f->ctr = stats_ratio(c->v[STATS_CLK], c->v[STATS_IMP]);
    f->fill_rate = stats_ratio(c->v[STATS_ADS], c->v[STATS_REQ]);
    f->spend = (double)c->v[STATS_SPEND] / 1e6;
    f->conversion_value = (double)c->v[STATS_CONVVAL] / 1e6;
    f->video_completion_rate = stats_ratio(c->v[STATS_VIDEO + ADSERVE_VIDEO_COMPLETE],
                                           c->v[STATS_VIDEO + ADSERVE_VIDEO_START]);
}
