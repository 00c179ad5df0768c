/* Recommendation jobs (rec_jobs.h). Both rank pairs: (context, item) by
 * views for popularity, (item A, item B) by users for co-view. The pairs
 * are collected, sorted, summed and ranked here, then each key's top list
 * is written as a serving record when it changed. */
#include "rec_jobs.h"

#include "log.h"
#include "stats.h"
#include "txn.h"

#include <cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* the popularity hashes outlive the window by an hour: an hour's hash is
 * read for ADSERVE_POPULAR_HOURS after it began */
#define POP_TTL "90000"
#define SCAN_COUNT "500"
#define HISTORY_BATCH 100       /* histories read per pipeline */

/* ---- ranked pairs ---------------------------------------------------------------- */

/* A key (a context, a source item) and an item, and a count. */
struct pair {
    char *key;                  /* key and item in one allocation */
    const char *item;
    long long n;
};

struct pairs {
    struct pair *v;
    size_t n, cap;
};

static void pairs_free(struct pairs *p)
{
    for (size_t i = 0; i < p->n; i++)
        free(p->v[i].key);
    free(p->v);
}

/* false only out of memory */
static bool pairs_add(struct pairs *p, const char *key, size_t klen, const char *item,
                      size_t ilen, long long n)
{
    char *copy = malloc(klen + ilen + 2);

    if (copy == NULL)
        return false;
    memcpy(copy, key, klen);
    copy[klen] = '\0';
    memcpy(copy + klen + 1, item, ilen);
    copy[klen + 1 + ilen] = '\0';
    if (p->n == p->cap) {
        size_t cap = p->cap ? 2 * p->cap : 256;
        struct pair *grown = realloc(p->v, cap * sizeof *grown);
        if (grown == NULL) {
            free(copy);
            return false;
        }
        p->v = grown;
        p->cap = cap;
    }
    p->v[p->n++] = (struct pair){ copy, copy + klen + 1, n };
    return true;
}

static int by_key(const void *a, const void *b)
{
    const struct pair *x = a, *y = b;
    int c = strcmp(x->key, y->key);

    return c != 0 ? c : strcmp(x->item, y->item);
}

/* a key's highest count first, ties by item id: the same counts always
 * rank the same, so an unchanged ranking writes nothing */
static int by_rank(const void *a, const void *b)
{
    const struct pair *x = a, *y = b;
    int c = strcmp(x->key, y->key);

    if (c != 0)
        return c;
    if (x->n != y->n)
        return x->n > y->n ? -1 : 1;
    return strcmp(x->item, y->item);
}

/* The same key and item summed into one, then each key's ranked. */
static void pairs_rank(struct pairs *p)
{
    size_t k = 0;

    if (p->n == 0)
        return;
    qsort(p->v, p->n, sizeof *p->v, by_key);
    for (size_t i = 0; i < p->n; i++) {
        if (k > 0 && by_key(&p->v[k - 1], &p->v[i]) == 0) {
            p->v[k - 1].n += p->v[i].n;
            free(p->v[i].key);
        } else {
            p->v[k++] = p->v[i];
        }
    }
    p->n = k;
    qsort(p->v, p->n, sizeof *p->v, by_rank);
}

/* for maps whose values belong to something else (stats_map_free frees
 * them otherwise) */
static void borrowed(void *value)
{
    (void)value;
}

/* An HGETALL reply's fields by name (their value replies), for lookups in
 * constant time: a catalog's worth of keys is compared once each. */
static bool hash_index(const redisReply *h, struct stats_map *m)
{
    for (size_t i = 0; h->type == REDIS_REPLY_ARRAY && i + 1 < h->elements; i += 2) {
        const redisReply *f = h->element[i];
        struct stats_entry *e;
        if (f->type != REDIS_REPLY_STRING)
            continue;
        if ((e = stats_map_slot(m, f->str, f->len)) == NULL)
            return false;
        e->value = h->element[i + 1];
    }
    return true;
}

/* A key's record from its ranked pairs v[0..n). */
typedef char *record_fn(const struct pair *v, size_t n);

/* Each key's top max pairs as its record in the hash, in one transaction
 * with their change log: only those that changed, and a key no longer
 * ranked removed. */
static enum store_status write_ranked(struct store_conn *c, const struct pairs *p,
                                      const char *hash, record_fn *record, size_t max,
                                      long *written, long *removed)
{
    const char *const get[] = { "HGETALL", hash, NULL };
    redisReply *old = NULL;
    struct stats_map was = { 0 }, now = { 0 };
    enum store_status st = store_cmd(c, &old, get);
    struct txn t;

    if (st != STORE_OK)
        return st;
    txn_init(&t);
    t.failed = !hash_index(old, &was);
    for (size_t i = 0; i < p->n && !t.failed;) {
        size_t n = 1;
        while (i + n < p->n && strcmp(p->v[i + n].key, p->v[i].key) == 0)
            n++;
        char *json = record(&p->v[i], n < max ? n : max);
        const redisReply *prev = stats_map_get(&was, p->v[i].key, strlen(p->v[i].key));
        struct stats_entry *ranked = stats_map_slot(&now, p->v[i].key, strlen(p->v[i].key));
        if (json == NULL || ranked == NULL) {
            t.failed = true;
        } else {
            ranked->value = p->v[i].key;            /* present */
            if (prev == NULL || prev->type != REDIS_REPLY_STRING || strcmp(prev->str, json) != 0) {
                txn_cmd(&t, "HSET", hash, p->v[i].key, json, NULL);
                (*written)++;
            }
        }
        cJSON_free(json);
        i += n;
    }
    /* a key no longer ranked goes */
    for (size_t i = 0; !t.failed && old->type == REDIS_REPLY_ARRAY && i + 1 < old->elements;
         i += 2) {
        const redisReply *f = old->element[i];
        if (f->type == REDIS_REPLY_STRING && stats_map_get(&now, f->str, f->len) == NULL) {
            txn_cmd(&t, "HDEL", hash, f->str, NULL);
            (*removed)++;
        }
    }
    st = t.n > 0 || t.failed ? txn_exec(&t, c) : STORE_OK;
    txn_free(&t);
    stats_map_free(&was, borrowed);
    stats_map_free(&now, borrowed);
    freeReplyObject(old);
    return st;
}

static long count_keys(const struct pairs *p)
{
    long n = 0;

    for (size_t i = 0; i < p->n; i++)
        n += i == 0 || strcmp(p->v[i].key, p->v[i - 1].key) != 0;
    return n;
}

/* ---- popularity ------------------------------------------------------------------- */

/* A field "{context}/{item id}" and its count into p; false only out of
 * memory. Others are skipped: the module writes these hashes, but a stray
 * field must not stop the ranking. */
static bool pop_add(struct pairs *p, const redisReply *f, const redisReply *v)
{
    if (f->type != REDIS_REPLY_STRING || v->type != REDIS_REPLY_STRING)
        return true;
    const char *slash = memrchr(f->str, ADSERVE_POPULAR_SEP, f->len);
    size_t clen = slash != NULL ? (size_t)(slash - f->str) : 0;
    char item[ADSERVE_ITEM_ID_MAX + 1], *end;
    size_t ilen = slash != NULL ? f->len - clen - 1 : 0;
    long long n = strtoll(v->str, &end, 10);

    if (slash == NULL || clen == 0 || clen > ADSERVE_CONTEXT_MAX || ilen > ADSERVE_ITEM_ID_MAX ||
        n <= 0 || *end != '\0')
        return true;
    memcpy(item, slash + 1, ilen);
    item[ilen] = '\0';
    return !adserve_item_id_ok(item) || pairs_add(p, f->str, clen, item, ilen, n);
}

/* The window's hour hashes into p (their expiry set on the way). */
static enum store_status pop_read(struct store_conn *c, time_t now, struct pairs *p,
                                  struct rec_jobs_report *r)
{
    char keys[ADSERVE_POPULAR_HOURS][64];
    const char *argv[2 * ADSERVE_POPULAR_HOURS][4];
    const char *const *cmds[2 * ADSERVE_POPULAR_HOURS];
    redisReply *replies[2 * ADSERVE_POPULAR_HOURS];
    long long hour = (long long)now - (long long)now % STATS_HOUR;

    for (int i = 0; i < ADSERVE_POPULAR_HOURS; i++) {
        if (stats_hour_key(keys[i], sizeof keys[i], ADSERVE_KEY_POPULARITY,
                           hour - i * STATS_HOUR) != 0)
            return STORE_ERROR;
        argv[2 * i][0] = "HGETALL";
        argv[2 * i][1] = keys[i];
        argv[2 * i][2] = NULL;
        argv[2 * i + 1][0] = "EXPIRE";
        argv[2 * i + 1][1] = keys[i];
        argv[2 * i + 1][2] = POP_TTL;
        argv[2 * i + 1][3] = NULL;
        cmds[2 * i] = argv[2 * i];
        cmds[2 * i + 1] = argv[2 * i + 1];
    }
    enum store_status st = store_pipeline(c, cmds, 2 * ADSERVE_POPULAR_HOURS, replies);
    if (st != STORE_OK)
        return st;
    bool oom = false;
    for (int i = 0; i < 2 * ADSERVE_POPULAR_HOURS; i++) {
        const redisReply *h = replies[i];
        for (size_t j = 0; i % 2 == 0 && !oom && h->type == REDIS_REPLY_ARRAY &&
                           j + 1 < h->elements; j += 2) {
            oom = !pop_add(p, h->element[j], h->element[j + 1]);
            r->views++;
        }
        freeReplyObject(replies[i]);
    }
    return oom ? STORE_ERROR : STORE_OK;
}

/* A context's record: {id, context, items: [ids]} */
static char *pop_record(const struct pair *v, size_t n)
{
    cJSON *o = cJSON_CreateObject(), *items;
    char *json = NULL;
    bool ok = o != NULL && cJSON_AddStringToObject(o, "id", v->key) != NULL &&
              cJSON_AddStringToObject(o, "context", v->key) != NULL &&
              (items = cJSON_AddArrayToObject(o, "items")) != NULL;

    for (size_t i = 0; i < n && ok; i++)
        ok = cJSON_AddItemToArray(items, cJSON_CreateString(v[i].item));
    if (ok)
        json = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return json;
}

static enum store_status popularity(struct store_conn *c, time_t now, struct rec_jobs_report *r)
{
    struct pairs p = { 0 };
    enum store_status st = pop_read(c, now, &p, r);

    if (st == STORE_OK) {
        pairs_rank(&p);
        r->contexts = count_keys(&p);
        st = write_ranked(c, &p, ADSERVE_KEY_POPULAR_ITEMS, pop_record, ADSERVE_POPULAR_ITEMS_MAX,
                          &r->written, &r->removed);
    }
    pairs_free(&p);
    return st;
}

/* ---- co-view ---------------------------------------------------------------------- */

/* The catalog's item ids by the hash a history holds (adserve_history_hash). */
static enum store_status catalog_hashes(struct store_conn *c, struct stats_map *ids)
{
    const char *const keys[] = { "HKEYS", ADSERVE_KEY_CATALOG_ITEM_IDS, NULL };
    redisReply *reply = NULL;
    enum store_status st = store_cmd(c, &reply, keys);
    char hex[17];

    if (st != STORE_OK)
        return st;
    for (size_t i = 0; reply->type == REDIS_REPLY_ARRAY && i < reply->elements; i++) {
        const redisReply *k = reply->element[i];
        if (k->type != REDIS_REPLY_STRING)
            continue;
        snprintf(hex, sizeof hex, "%016" PRIx64, adserve_history_hash(adserve_hash(k->str, k->len)));
        struct stats_entry *e = stats_map_slot(ids, hex, 16);
        if (e == NULL || (e->value == NULL && (e->value = strndup(k->str, k->len)) == NULL)) {
            st = STORE_ERROR;
            break;
        }
    }
    freeReplyObject(reply);
    return st;
}

static const char *item_of(const struct stats_map *ids, uint64_t hash)
{
    char hex[17];

    snprintf(hex, sizeof hex, "%016" PRIx64, hash);
    return stats_map_get(ids, hex, 16);
}

/* One user's history (entries oldest first; the latest ADSERVE_HISTORY_MAX
 * count): each item viewed, then each item first viewed later within
 * ADSERVE_COVIEW_SECONDS, as a pair. An item counts at its first view, so a
 * user counts once per pair, and a history costs n^2 at most. */
static bool coview_user(struct pairs *p, const struct stats_map *ids, const redisReply *h,
                        time_t now, struct rec_jobs_report *r)
{
    adserve_history_entry_t v[ADSERVE_HISTORY_MAX];
    size_t n = 0, from, entries;

    if (h->type != REDIS_REPLY_STRING)
        return true;
    r->histories++;
    entries = h->len / ADSERVE_HISTORY_ENTRY;
    from = entries > ADSERVE_HISTORY_MAX ? entries - ADSERVE_HISTORY_MAX : 0;
    for (size_t i = from; i < entries; i++) {
        adserve_history_get((const unsigned char *)h->str + i * ADSERVE_HISTORY_ENTRY, now, &v[n]);
        bool again = v[n].kind != ADSERVE_HISTORY_VIEWED || item_of(ids, v[n].hash) == NULL;
        for (size_t k = 0; k < n && !again; k++)
            again = v[k].hash == v[n].hash;              /* an item at its first view */
        n += !again;
    }
    for (size_t i = 0; i < n; i++) {
        for (size_t j = i + 1; j < n && v[j].at - v[i].at <= ADSERVE_COVIEW_SECONDS; j++) {
            if (v[j].at < v[i].at)    /* the same minute: the string's order */
                continue;
            const char *a = item_of(ids, v[i].hash), *b = item_of(ids, v[j].hash);
            if (!pairs_add(p, a, strlen(a), b, strlen(b), 1))
                return false;
        }
    }
    return true;
}

/* The histories of keys[from .. from + n), pipelined. */
static enum store_status coview_batch(struct store_conn *c, const struct stats_map *ids,
                                      const redisReply *keys, size_t from, size_t n,
                                      time_t now, struct pairs *p, struct rec_jobs_report *r)
{
    const char *argv[HISTORY_BATCH][3];
    const char *const *cmds[HISTORY_BATCH];
    redisReply *replies[HISTORY_BATCH];

    for (size_t i = 0; i < n; i++) {
        argv[i][0] = "GET";
        argv[i][1] = keys->element[from + i]->str;
        argv[i][2] = NULL;
        cmds[i] = argv[i];
    }
    enum store_status st = store_pipeline(c, cmds, n, replies);
    if (st != STORE_OK)
        return st;
    bool oom = false;
    for (size_t i = 0; i < n; i++) {
        oom = oom || !coview_user(p, ids, replies[i], now, r);
        freeReplyObject(replies[i]);
    }
    return oom ? STORE_ERROR : STORE_OK;
}

/* Every user's history, SCANned: the pairs they viewed in order. */
static enum store_status coview_read(struct store_conn *c, const struct stats_map *ids,
                                     time_t now, struct pairs *p, struct rec_jobs_report *r)
{
    char cursor[32] = "0";

    do {
        const char *const scan[] = { "SCAN", cursor, "MATCH", ADSERVE_KEY_HISTORY "*",
                                     "COUNT", SCAN_COUNT, NULL };
        redisReply *reply = NULL;
        enum store_status st = store_cmd(c, &reply, scan);
        if (st != STORE_OK)
            return st;
        const redisReply *keys = reply->type == REDIS_REPLY_ARRAY && reply->elements == 2
                                     ? reply->element[1] : NULL;
        if (keys == NULL || keys->type != REDIS_REPLY_ARRAY ||
            reply->element[0]->type != REDIS_REPLY_STRING ||
            reply->element[0]->len >= sizeof cursor) {
            freeReplyObject(reply);
            return STORE_ERROR;
        }
        memcpy(cursor, reply->element[0]->str, reply->element[0]->len + 1);
        for (size_t i = 0; st == STORE_OK && i < keys->elements; i += HISTORY_BATCH) {
            size_t n = keys->elements - i < HISTORY_BATCH ? keys->elements - i : HISTORY_BATCH;
            st = coview_batch(c, ids, keys, i, n, now, p, r);
        }
        freeReplyObject(reply);
        if (st != STORE_OK)
            return st;
    } while (strcmp(cursor, "0") != 0);
    return STORE_OK;
}

/* A source item's record, as an associated items pool:
 * {id, source_item_id, items: [{item_id, score}]} */
static char *coview_record(const struct pair *v, size_t n)
{
    char id[sizeof ADSERVE_COVIEW_ID_PREFIX + 16];
    cJSON *o = cJSON_CreateObject(), *items, *e;
    char *json = NULL;

    snprintf(id, sizeof id, ADSERVE_COVIEW_ID_PREFIX "%016" PRIx64,
             adserve_hash(v->key, strlen(v->key)));
    bool ok = o != NULL && cJSON_AddStringToObject(o, "id", id) != NULL &&
              cJSON_AddStringToObject(o, "source_item_id", v->key) != NULL &&
              (items = cJSON_AddArrayToObject(o, "items")) != NULL;
    for (size_t i = 0; i < n && ok; i++) {
        ok = (e = cJSON_CreateObject()) != NULL && cJSON_AddItemToArray(items, e) &&
             cJSON_AddStringToObject(e, "item_id", v[i].item) != NULL &&
             cJSON_AddNumberToObject(e, "score", (double)v[i].n) != NULL;
    }
    if (ok)
        json = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return json;
}

static enum store_status coview(struct store_conn *c, time_t now, struct rec_jobs_report *r)
{
    struct pairs p = { 0 };
    struct stats_map ids = { 0 };
    enum store_status st = catalog_hashes(c, &ids);

    if (st == STORE_OK)
        st = coview_read(c, &ids, now, &p, r);

    if (st == STORE_OK) {
        pairs_rank(&p);
        r->sources = count_keys(&p);
        st = write_ranked(c, &p, ADSERVE_KEY_COVIEW_POOLS, coview_record, ADSERVE_POOL_ITEMS_MAX,
                          &r->pools_written, &r->pools_removed);
    }
    pairs_free(&p);
    stats_map_free(&ids, free);
    return st;
}

enum store_status rec_jobs_run(struct store_conn *c, time_t now, struct rec_jobs_report *r)
{
    memset(r, 0, sizeof *r);
    enum store_status st = popularity(c, now, r);
    return st == STORE_OK ? coview(c, now, r) : st;
}

/* ---- the timer ------------------------------------------------------------------- */

static struct {
    pthread_mutex_t lock;
    pthread_cond_t wake;
    pthread_t thread;
    long interval;
    bool stop, running;
} J = { .lock = PTHREAD_MUTEX_INITIALIZER, .wake = PTHREAD_COND_INITIALIZER };

/* One run, unless another sidecar holds this interval's lock. */
static void tick(void)
{
    char ttl[24];
    struct store_conn *c = store_acquire();
    struct rec_jobs_report r;

    snprintf(ttl, sizeof ttl, "%ld", J.interval > 1 ? J.interval - 1 : 1);
    const char *const lock[] = { "SET", ADSERVE_KEY_REC_JOBS_LOCK, "1", "NX", "EX", ttl, NULL };
    redisReply *got = NULL;
    enum store_status st = store_cmd(c, &got, lock);

    if (st == STORE_OK && got->type == REDIS_REPLY_STATUS) {
        st = rec_jobs_run(c, time(NULL), &r);
        if (st != STORE_OK)
            log_line("recommendation jobs: failed (%d), trying again in %ld s", (int)st,
                     J.interval);
        else if (r.written + r.removed + r.pools_written + r.pools_removed > 0)
            log_line("recommendation jobs: popular items of %ld contexts (%ld written, %ld "
                     "removed); co-view pools of %ld items from %lld histories (%ld written, "
                     "%ld removed)", r.contexts, r.written, r.removed, r.sources, r.histories,
                     r.pools_written, r.pools_removed);
    }
    if (got != NULL)
        freeReplyObject(got);
    store_release(c);
}

static void *worker(void *arg)
{
    struct timespec at;

    (void)arg;
    pthread_mutex_lock(&J.lock);
    while (!J.stop) {
        clock_gettime(CLOCK_REALTIME, &at);
        at.tv_sec += J.interval;
        while (!J.stop && pthread_cond_timedwait(&J.wake, &J.lock, &at) != ETIMEDOUT)
            ;
        if (J.stop)
            break;
        pthread_mutex_unlock(&J.lock);
        tick();
        pthread_mutex_lock(&J.lock);
    }
    pthread_mutex_unlock(&J.lock);
    return NULL;
}

int rec_jobs_start(long interval)
{
    if (interval <= 0)
        return 0;
    J.interval = interval;
    J.stop = false;
    int rc = pthread_create(&J.thread, NULL, worker, NULL);
    if (rc != 0) {
        log_line("cannot start the recommendation jobs' thread: %s", strerror(rc));
        return -1;
    }
    J.running = true;
    return 0;
}

void rec_jobs_stop(void)
{
    if (!J.running)
        return;
    pthread_mutex_lock(&J.lock);
    J.stop = true;
    pthread_cond_signal(&J.wake);
    pthread_mutex_unlock(&J.lock);
    int rc = pthread_join(J.thread, NULL);
    if (rc != 0)
        log_line("cannot join the recommendation jobs' thread: %s", strerror(rc));
    J.running = false;
}
