/* Recommendation jobs (rec_jobs.h). */
#include "rec_jobs.h"

#include "log.h"
#include "stats.h"
#include "txn.h"

#include <cJSON.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* the popularity hashes outlive the window by an hour: an hour's hash is
 * read for ADSERVE_POPULAR_HOURS after it began */
#define POP_TTL "90000"

/* ---- popularity ------------------------------------------------------------------- */

/* One "{context}/{item id}" of an hour, or their sum. */
struct pop_view {
    char *context;              /* both in one allocation */
    const char *item;
    long long n;
};

struct pop_views {
    struct pop_view *v;
    size_t n, cap;
};

static void pop_views_free(struct pop_views *p)
{
    for (size_t i = 0; i < p->n; i++)
        free(p->v[i].context);
    free(p->v);
}

/* A field and its count into p; false only out of memory. Fields that are
 * not "{context}/{item id}" with a positive count are skipped: the module
 * writes them, but a stray one must not stop the ranking. */
static bool pop_add(struct pop_views *p, const redisReply *f, const redisReply *v)
{
    if (f->type != REDIS_REPLY_STRING || v->type != REDIS_REPLY_STRING)
        return true;
    const char *slash = memrchr(f->str, ADSERVE_POPULAR_SEP, f->len);
    size_t clen = slash != NULL ? (size_t)(slash - f->str) : 0;
    char *end;
    long long n = strtoll(v->str, &end, 10);

    if (slash == NULL || clen == 0 || clen > ADSERVE_CONTEXT_MAX || n <= 0 || *end != '\0')
        return true;
    char *copy = strndup(f->str, f->len);
    if (copy == NULL)
        return false;
    copy[clen] = '\0';
    if (!adserve_item_id_ok(copy + clen + 1)) {
        free(copy);
        return true;
    }
    if (p->n == p->cap) {
        size_t cap = p->cap ? 2 * p->cap : 256;
        struct pop_view *grown = realloc(p->v, cap * sizeof *grown);
        if (grown == NULL) {
            free(copy);
            return false;
        }
        p->v = grown;
        p->cap = cap;
    }
    p->v[p->n++] = (struct pop_view){ copy, copy + clen + 1, n };
    return true;
}

static int by_key(const void *a, const void *b)
{
    const struct pop_view *x = a, *y = b;
    int c = strcmp(x->context, y->context);

    return c != 0 ? c : strcmp(x->item, y->item);
}

/* a context's most viewed first, ties by item id: the same counts always
 * rank the same, so an unchanged ranking writes nothing */
static int by_rank(const void *a, const void *b)
{
    const struct pop_view *x = a, *y = b;
    int c = strcmp(x->context, y->context);

    if (c != 0)
        return c;
    if (x->n != y->n)
        return x->n > y->n ? -1 : 1;
    return strcmp(x->item, y->item);
}

/* The same context and item summed into one entry. */
static void pop_merge(struct pop_views *p)
{
    size_t k = 0;

    if (p->n == 0)
        return;
    qsort(p->v, p->n, sizeof *p->v, by_key);
    for (size_t i = 0; i < p->n; i++) {
        if (k > 0 && by_key(&p->v[k - 1], &p->v[i]) == 0) {
            p->v[k - 1].n += p->v[i].n;
            free(p->v[i].context);
        } else {
            p->v[k++] = p->v[i];
        }
    }
    p->n = k;
    qsort(p->v, p->n, sizeof *p->v, by_rank);
}

/* The window's hour hashes into p (their expiry set on the way). */
static enum store_status pop_read(struct store_conn *c, time_t now, struct pop_views *p,
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
            r->views += oom ? 0 : 1;
        }
        freeReplyObject(replies[i]);
    }
    return oom ? STORE_ERROR : STORE_OK;
}

/* A context's record: its top items, ranked. */
static char *pop_record(const struct pop_view *v, size_t n)
{
    cJSON *o = cJSON_CreateObject(), *items;
    char *json = NULL;
    bool ok = o != NULL && cJSON_AddStringToObject(o, "id", v->context) != NULL &&
              cJSON_AddStringToObject(o, "context", v->context) != NULL &&
              (items = cJSON_AddArrayToObject(o, "items")) != NULL;

    for (size_t i = 0; i < n && ok; i++)
        ok = cJSON_AddItemToArray(items, cJSON_CreateString(v[i].item));
    if (ok)
        json = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return json;
}

/* The value of field in an HGETALL reply, or NULL. */
static const redisReply *hash_value(const redisReply *h, const char *field)
{
    for (size_t i = 0; h->type == REDIS_REPLY_ARRAY && i + 1 < h->elements; i += 2)
        if (h->element[i]->type == REDIS_REPLY_STRING && strcmp(h->element[i]->str, field) == 0)
            return h->element[i + 1];
    return NULL;
}

static bool ranked(const struct pop_views *p, const char *context)
{
    for (size_t i = 0; i < p->n; i++)
        if (strcmp(p->v[i].context, context) == 0)
            return true;
    return false;
}

/* The records that changed, in one transaction with their change log. */
static enum store_status pop_write(struct store_conn *c, const struct pop_views *p,
                                   struct rec_jobs_report *r)
{
    const char *const get[] = { "HGETALL", ADSERVE_KEY_POPULAR_ITEMS, NULL };
    redisReply *old = NULL;
    enum store_status st = store_cmd(c, &old, get);
    struct txn t;

    if (st != STORE_OK)
        return st;
    txn_init(&t);
    for (size_t i = 0; i < p->n;) {
        size_t n = 1;
        while (i + n < p->n && strcmp(p->v[i + n].context, p->v[i].context) == 0)
            n++;
        char *json = pop_record(&p->v[i], n < ADSERVE_POPULAR_ITEMS_MAX ? n : ADSERVE_POPULAR_ITEMS_MAX);
        const redisReply *was = hash_value(old, p->v[i].context);
        if (json == NULL)
            t.failed = true;
        else if (was == NULL || was->type != REDIS_REPLY_STRING || strcmp(was->str, json) != 0) {
            txn_cmd(&t, "HSET", ADSERVE_KEY_POPULAR_ITEMS, p->v[i].context, json, NULL);
            r->written++;
        }
        cJSON_free(json);
        r->contexts++;
        i += n;
    }
    /* a context nobody viewed in the window has no popular items */
    for (size_t i = 0; old->type == REDIS_REPLY_ARRAY && i + 1 < old->elements; i += 2) {
        if (old->element[i]->type == REDIS_REPLY_STRING && !ranked(p, old->element[i]->str)) {
            txn_cmd(&t, "HDEL", ADSERVE_KEY_POPULAR_ITEMS, old->element[i]->str, NULL);
            r->removed++;
        }
    }
    st = t.n > 0 || t.failed ? txn_exec(&t, c) : STORE_OK;
    txn_free(&t);
    freeReplyObject(old);
    return st;
}

enum store_status rec_jobs_run(struct store_conn *c, time_t now, struct rec_jobs_report *r)
{
    struct pop_views p = { 0 };

    memset(r, 0, sizeof *r);
    enum store_status st = pop_read(c, now, &p, r);
    if (st == STORE_OK) {
        pop_merge(&p);
        st = pop_write(c, &p, r);
    }
    pop_views_free(&p);
    return st;
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
        else if (r.written > 0 || r.removed > 0)
            log_line("recommendation jobs: %lld views ranked in %ld contexts, %ld written, "
                     "%ld removed", r.views, r.contexts, r.written, r.removed);
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
