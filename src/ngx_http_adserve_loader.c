
/*
 * Keeps the node's snapshot fresh, without ever blocking a worker.
 *
 * The snapshot is the node's, in the shared zone (_zone.c): one worker,
 * the builder, runs the states below and publishes each new snapshot; on
 * every tick each worker (the builder too) adopts the latest publication,
 * a pointer swap and the carry-over of its pace table. A follower reads
 * nothing from Redis for the snapshot; it takes over the builder's role
 * when that is free or its holder is gone (its first load is then a full
 * one: the records are the builder's own).
 *
 * The builder's states:
 *
 *   IDLE --poll timer--> POLLING:
 *       MULTI; GET adserve:rev; XREVRANGE adserve:changes + - COUNT 1;
 *       XRANGE adserve:changes <position> + COUNT n;
 *       XINFO STREAM adserve:changes; EXEC
 *     nothing new: back to IDLE
 *     change log entries after our position: FETCHING, HMGET of just the
 *       records they name, into the worker's copy of the records
 *     no snapshot yet, the log trimmed past our position, or a revision
 *       that moved without log entries (a writer outside the contract):
 *       SCANNING, a full load with HSCAN in chunks, into a fresh copy
 *   then BUILDING: the snapshot is compiled from the records in a thread-
 *     pool thread and swapped in on the event loop.
 *
 * The change log is what makes many nodes affordable: after its first full
 * load, a worker reads from Redis only what changed, whatever the size of
 * the inventory. It is an optimisation, never a condition of correctness:
 * any doubt ends in a full load.
 *
 * Consistency: the poll reads the revision and the log atomically. A full
 * load starts from the log's newest entry read before its scan; what lands
 * during the scan is in the log after that entry, and the next poll fetches
 * it again (fetches are idempotent: they read the current record).
 *
 * Every command in flight has a deadline; a missed one drops the connection
 * (the Redis layer reconnects with backoff) and the load starts over later.
 * Serving keeps using the last snapshot all the while.
 */


#include "ngx_http_adserve.h"

#include <time.h>


#ifdef __GLIBC__
#include <malloc.h>
#endif

#if (NGX_LINUX)
#include <sys/resource.h>
#include <sys/syscall.h>
#endif


#define NGX_HTTP_ADSERVE_POLL_GAP       25       /* ms between polls the
                                                  * watch makes (_gap) */
#define NGX_HTTP_ADSERVE_BUILD_NICE     10       /* a tenth of a core against
                                                  * a busy worker */
#define NGX_HTTP_ADSERVE_CHANGES_N      1000     /* log entries per poll */
#define NGX_HTTP_ADSERVE_CHANGES_BATCH  ngx_value(NGX_HTTP_ADSERVE_CHANGES_N)


typedef struct {
    ngx_http_adserve_offload_t  offload;
    ngx_http_adserve_loader_t  *loader;
    adserve_input_t             input;           /* refers to ld->records */
    adserve_snapshot_t         *snapshot;
    ngx_uint_t                  full;            /* after a full load */
    char                        err[128];
} ngx_http_adserve_build_ctx_t;


static void ngx_http_adserve_loader_poll(ngx_event_t *ev);
static void ngx_http_adserve_loader_tick(ngx_event_t *ev);
static ngx_msec_t ngx_http_adserve_loader_gap(ngx_http_adserve_loader_t *ld);


/* ---- states ------------------------------------------------------------ */

/* The first load of this worker is over, well or not: whoever waited for
 * it is answered now, from what there is. */
static void
ngx_http_adserve_loader_warm(ngx_http_adserve_loader_t *ld)
{
    ngx_queue_t  *q;

    if (!ld->warming) {
        return;
    }

    ld->warming = 0;

    if (ngx_http_adserve_zone_is_builder(ld->zone)) {
        /* followers waiting for a first snapshot stop waiting too */
        ngx_http_adserve_zone_attempted(ld->zone);
    }

    while (!ngx_queue_empty(&ld->waiting)) {
        q = ngx_queue_head(&ld->waiting);
        ngx_queue_remove(q);
        ld->resume(q);
    }
}


void
ngx_http_adserve_loader_wait(ngx_http_adserve_loader_t *ld, ngx_queue_t *q)
{
    ngx_queue_insert_tail(&ld->waiting, q);
}


/* The node's latest snapshot, when it is newer than the one this worker
 * serves: its pace table carried over, then the old one let go. */
void
ngx_http_adserve_loader_adopt(ngx_http_adserve_loader_t *ld)
{
    adserve_snapshot_t          *s;
    ngx_uint_t                   gen = ld->gen;
    ngx_http_adserve_step_t      st;
    ngx_http_adserve_longest_t   took;

    s = ngx_http_adserve_zone_latest(ld->zone, &gen);
    if (s == NULL) {
        return;
    }

    if (s != ld->snapshot) {
        ngx_http_adserve_step_start(&st);

        if (ngx_http_adserve_pacing_swapped(s, ld->snapshot) != NGX_OK) {
            ngx_log_error(NGX_LOG_ERR, ld->redis.log, 0,
                          NGX_HTTP_ADSERVE_LOG "no memory for the pace table of snapshot rev %uL; "
                          "serving rev %uL", s->rev, ld->snapshot ? ld->snapshot->rev : 0);
            ld->adopt_failed = 1;     /* tried again by the tick alone */
            return;
        }

        ld->adopt_failed = 0;

        /* the one thing a worker does per snapshot: its pace table; on a
         * core apart, since the clock's includes waiting for one */
        took.wall_ms = 0;
        took.cpu_ms = 0;
        ngx_http_adserve_step_end(&st, &took);
        ngx_log_error(NGX_LOG_INFO, ld->redis.log, 0,
                      NGX_HTTP_ADSERVE_LOG "snapshot rev %uL (publication %ui) adopted; "
                      "its pace table in %.3f ms, %.3f ms of it on a core", s->rev, gen,
                      took.wall_ms, took.cpu_ms);

        ld->snapshot = s;
        ld->loaded_at = ngx_current_msec;
        ld->loads++;

        if (!ngx_http_adserve_zone_is_builder(ld->zone)) {
            ld->rev = s->rev;
        }
    }

    ld->gen = gen;
    ngx_http_adserve_zone_hold(ld->zone, gen);
    ngx_http_adserve_loader_warm(ld);
}


static void
ngx_http_adserve_records_free(adserve_records_t *records)
{
    ngx_uint_t  k;

    for (k = 0; k < ADSERVE_KIND_COUNT; k++) {
        adserve_records_free(&records[k]);
    }
}


static void ngx_http_adserve_loader_fetched(ngx_http_adserve_loader_t *ld);


/* Back to waiting for the next poll; a load cut short leaves no trace. */
static void
ngx_http_adserve_loader_idle(ngx_http_adserve_loader_t *ld)
{
    if (ld->deadline.timer_set) {
        ngx_del_timer(&ld->deadline);
    }

    if (ld->state == NGX_HTTP_ADSERVE_SCANNING) {
        ngx_http_adserve_loader_full_drop(ld);
    }

    if (ld->state == NGX_HTTP_ADSERVE_FETCHING) {
        /* some records may be newer than our position says: only a full
         * load can vouch for the copy now */
        ld->change_id[0] = '\0';
        ngx_http_adserve_loader_fetched(ld);
    }

    ld->state = NGX_HTTP_ADSERVE_IDLE;

    /* an entry the watch saw meanwhile: its poll soon, not at the tick */
    if (ld->changed && ld->poll.timer_set) {
        ngx_del_timer(&ld->poll);
    }

    /* exiting too: the tick hands the role over and keeps adopting */
    if (!ld->poll.timer_set && !ngx_terminate) {
        ngx_add_timer(&ld->poll, ld->changed ? ngx_http_adserve_loader_gap(ld) : ld->refresh);
    }
}


/* How long until the watch may make a poll: NGX_HTTP_ADSERVE_POLL_GAP
 * after the last one, or a quarter of adserve_refresh if that is less.
 * Each poll may publish a snapshot, and an old one is freed once every
 * worker has moved past it (at its tick or its next request): polls as
 * fast as writes come (a batch, a script) would publish faster than the
 * workers let go, and fill the zone's list of them. */
static ngx_msec_t
ngx_http_adserve_loader_gap(ngx_http_adserve_loader_t *ld)
{
    ngx_msec_t  gap = ngx_min(ld->refresh / 4, NGX_HTTP_ADSERVE_POLL_GAP);
    ngx_msec_t  since = ngx_current_msec - ld->polled;

    return since >= gap ? 1 : gap - since;
}


void
ngx_http_adserve_loader_changed(ngx_http_adserve_loader_t *ld)
{
    ngx_msec_t  wait;

    if (ld->state != NGX_HTTP_ADSERVE_IDLE) {
        ld->changed = 1;
        return;
    }

    wait = ngx_http_adserve_loader_gap(ld);

    if (ld->poll.timer_set) {
        if (ld->poll.timer.key <= ngx_current_msec + wait) {
            return;                 /* the tick comes sooner */
        }
        ngx_del_timer(&ld->poll);
    }

    if (wait > 1) {
        ld->changed = 1;
        ngx_add_timer(&ld->poll, wait);
        return;
    }

    ngx_http_adserve_loader_tick(&ld->poll);
}


void
ngx_http_adserve_loader_fail(ngx_http_adserve_loader_t *ld, const char *why)
{
    ld->failures++;

    ngx_http_adserve_loader_idle(ld);
    ngx_http_adserve_redis_drop(&ld->redis, why);
    ngx_http_adserve_loader_warm(ld);
}


ngx_int_t
ngx_http_adserve_loader_send(ngx_http_adserve_loader_t *ld, redisCallbackFn *fn,
    void *data, int argc, const char **argv)
{
    if (ngx_http_adserve_redis_command(&ld->redis, fn, data, argc, argv, NULL)
        != NGX_OK)
    {
        ngx_http_adserve_loader_fail(ld, "a command could not be sent");
        return NGX_ERROR;
    }

    if (!ld->deadline.timer_set) {
        ngx_add_timer(&ld->deadline, ld->timeout);
    }

    return NGX_OK;
}


/* ---- the build, in a thread -------------------------------------------- */

/* A build or a chunk's parse is background work: the workers' event loops
 * come first, on a node whose cores all serve (a build's own threads
 * inherit this). Returns the thread's priority to give back after, where
 * the worker may raise it (RLIMIT_NICE; else the pool's thread stays a
 * build's), or INT_MIN when it was not lowered. */
int
ngx_http_adserve_background_begin(void)
{
#if (NGX_LINUX)
    id_t  tid = (id_t) syscall(SYS_gettid);
    int   nice;

    errno = 0;
    nice = getpriority(PRIO_PROCESS, tid);
    if (errno == 0 && nice < NGX_HTTP_ADSERVE_BUILD_NICE
        && setpriority(PRIO_PROCESS, tid, NGX_HTTP_ADSERVE_BUILD_NICE) == 0)
    {
        return nice;
    }
#endif

    return INT_MIN;
}


void
ngx_http_adserve_background_end(int nice)
{
#if (NGX_LINUX)
    if (nice != INT_MIN) {
        (void) setpriority(PRIO_PROCESS, (id_t) syscall(SYS_gettid), nice);
    }
#endif
}


static void
ngx_http_adserve_build_thread(void *data, ngx_log_t *log)
{
    ngx_http_adserve_build_ctx_t  *bc = data;
    ngx_uint_t                     k;
    int                            nice;

    nice = ngx_http_adserve_background_begin();

    /* the input refers to the records: nothing changes them until the
     * build is back, since the loader does one thing at a time; listed
     * here, not on the event loop (half a million records at 100,000 line
     * items: tens of milliseconds) */
    for (k = 0; k < ADSERVE_KIND_COUNT; k++) {
        if (adserve_records_export(&bc->loader->records[k], &bc->input, k) != 0) {
            ngx_cpystrn((u_char *) bc->err, (u_char *) "out of memory listing the records",
                        sizeof(bc->err));
            break;
        }
    }

    bc->snapshot = k == ADSERVE_KIND_COUNT
                   ? adserve_snapshot_build(&bc->input, bc->err, sizeof(bc->err)) : NULL;

    /* the build kept a parse of each record: the texts are done with (the
     * loader does nothing else until the build is back), but for the ad
     * units': an experiment's variants are parsed from their unit's text
     * with their overrides applied, by any later build (a few MB at 5,000
     * units; the line items' texts are the bulk) */
    adserve_input_free(&bc->input);

    for (k = 0; k < ADSERVE_KIND_COUNT; k++) {
        if (k != ADSERVE_KIND_AD_UNITS) {
            adserve_records_drop_texts(&bc->loader->records[k]);
        }
    }

#ifdef __GLIBC__
    /* after a full load, hand back the pages of its peak (the replies of
     * the scan, the texts), or the builder keeps them for good; not after
     * each change, whose build would page its scratch memory in again */
    if (bc->full) {
        malloc_trim(0);
    }
#endif

    ngx_http_adserve_background_end(nice);
}


/* The cores this worker may run on (worker_cpu_affinity, a container's
 * cpuset): a build's threads inherit them. */
static unsigned
ngx_http_adserve_build_threads(void)
{
#if (NGX_HAVE_SCHED_SETAFFINITY)
    cpu_set_t  set;

    if (sched_getaffinity(0, sizeof(cpu_set_t), &set) == 0 && CPU_COUNT(&set) > 0) {
        return (unsigned) CPU_COUNT(&set);
    }
#endif

    return (unsigned) ngx_max(ngx_ncpu, 1);
}


static void
ngx_http_adserve_build_finish(void *data)
{
    ngx_http_adserve_build_ctx_t  *bc = data;
    ngx_http_adserve_loader_t     *ld = bc->loader;
    adserve_snapshot_t            *s = bc->snapshot;
    ngx_uint_t                     declined;

    /* the input went with the build (ngx_http_adserve_build_thread) */
    ld->state = NGX_HTTP_ADSERVE_IDLE;

    declined = 0;
    if (s != NULL && ngx_http_adserve_zone_publish(ld->zone, s) != NGX_OK) {
        s = NULL;                   /* its blocks go with the build */
        declined = 1;
        ngx_cpystrn((u_char *) bc->err,
                    (u_char *) "too many old snapshots are still read",
                    sizeof(bc->err));
    }

    ngx_http_adserve_zone_build_end(ld->zone);

    if (s == NULL) {
        ngx_http_adserve_zone_collect(ld->zone);
        ld->failures++;

        /* the records are still those of ld->rev: the poll builds them
         * again when nothing newer comes, later each time (a zone too
         * small fails every time; reading Redis again would not help),
         * but at the next tick when it was only not published (the
         * workers let go of old snapshots at their ticks) */
        ld->rebuild_at = ngx_current_msec
                         + (declined ? ld->refresh
                            : ngx_min(ld->refresh << ngx_min(ld->rebuild, 8), 30000));
        ld->rebuild += !declined;

        ngx_log_error(NGX_LOG_ERR, ld->redis.log, 0,
                      NGX_HTTP_ADSERVE_LOG "snapshot build failed: %s%s", bc->err,
                      ngx_strstr(bc->err, "out of memory") != NULL
                      ? " (is adserve_snapshot_zone large enough for two "
                        "snapshots?)" : "");

    } else {
        ngx_http_adserve_loader_adopt(ld);
        ld->built++;
        ld->rebuild = 0;

        ngx_log_error(NGX_LOG_INFO, ld->redis.log, 0,
                      NGX_HTTP_ADSERVE_LOG "snapshot rev %uL at change %s: %uz active ad "
                      "units, %uz candidates, %uz skipped records, %uz KiB "
                      "(%uz KiB with what it borrows); loaded in %M ms, of "
                      "which the build %ud ms (parse %ud, link %ud, join %ud, "
                      "render %ud, keep %ud; %uz line items joined, %uz "
                      "units ranked, %uz borrowed)",
                      s->rev, ld->change_id, s->stats.active_units,
                      s->stats.candidates, s->stats.skipped,
                      s->stats.bytes / 1024, s->chain_bytes / 1024,
                      ngx_current_msec - ld->started, s->stats.build_ms,
                      s->stats.parse_ms, s->stats.link_ms, s->stats.join_ms,
                      s->stats.render_ms, s->stats.keep_ms,
                      s->stats.joined, s->stats.ranked, s->stats.borrowed);

        if (bc->full) {
            ngx_log_error(NGX_LOG_INFO, ld->redis.log, 0,
                          NGX_HTTP_ADSERVE_LOG "the full load's longest chunk copy (out of "
                          "hiredis's reply, on the event loop) took "
                          "%.3f ms, %.3f ms of it on a core; reading waited "
                          "%ui times for parsing", ld->longest.wall_ms,
                          ld->longest.cpu_ms, ld->holds);
        }
    }

    ngx_free(bc);
    ngx_http_adserve_loader_idle(ld);
    ngx_http_adserve_loader_warm(ld);
}


#if (NGX_THREADS)

static void
ngx_http_adserve_offload_done(ngx_event_t *ev)
{
    ngx_http_adserve_offload_t  *o = ev->data;

    /* the thread pool reads task->next before calling us: finish may free
     * the task */
    o->finish(o->data);
}

#endif


void
ngx_http_adserve_offload(ngx_http_adserve_loader_t *ld, ngx_http_adserve_offload_t *o)
{
#if (NGX_THREADS)
    if (ld->thread_pool != NULL) {
        ngx_memzero(&o->task, sizeof(ngx_thread_task_t));
        o->task.ctx = o->data;
        o->task.handler = o->work;
        o->task.event.handler = ngx_http_adserve_offload_done;
        o->task.event.data = o;
        o->task.event.log = ld->redis.log;

        if (ngx_thread_task_post(ld->thread_pool, &o->task) == NGX_OK) {
            return;
        }
    }
#endif

    o->work(o->data, ld->redis.log);
    o->finish(o->data);
}


/* The records are complete at next_rev and next_change_id: build. */
void
ngx_http_adserve_loader_build(ngx_http_adserve_loader_t *ld)
{
    ngx_http_adserve_build_ctx_t  *bc;

    if (ld->deadline.timer_set) {
        ngx_del_timer(&ld->deadline);
    }

    ld->rev = ld->next_rev;
    ngx_cpystrn((u_char *) ld->change_id, (u_char *) ld->next_change_id,
                sizeof(ld->change_id));
    ld->log_added = ld->next_log_added;

    bc = ngx_calloc(sizeof(ngx_http_adserve_build_ctx_t), ld->redis.log);
    if (bc == NULL) {
        ngx_http_adserve_loader_fail(ld, "out of memory");
        return;
    }

    bc->loader = ld;
    bc->full = ld->state == NGX_HTTP_ADSERVE_SCANNING;
    adserve_input_init(&bc->input);
    bc->input.rev = ld->rev;
    bc->input.public_url = ld->public_url;
    bc->input.rec_snapshots = ld->rec_snapshots;
    bc->input.prev = ld->snapshot;          /* our slot keeps it while we build */
    /* on every core it may use, at the build's low priority: the LICAs'
     * lookups, and a full load's join, ranking, and joins kept while it
     * renders (a change joins too few line items to share those; a full
     * load's chunks were parsed as they came, _scan.c) */
    bc->input.threads = ngx_http_adserve_build_threads();
    bc->input.joins = &ld->joins;
    bc->input.room = ngx_http_adserve_zone_room(ld->zone);
    bc->input.allocator = ngx_http_adserve_zone_build_start(ld->zone);

    if (bc->input.allocator == NULL) {
        adserve_input_free(&bc->input);
        ngx_free(bc);
        ngx_http_adserve_loader_fail(ld, "older builds are still in the zone");
        return;
    }

    ld->state = NGX_HTTP_ADSERVE_BUILDING;

    bc->offload.work = ngx_http_adserve_build_thread;
    bc->offload.finish = ngx_http_adserve_build_finish;
    bc->offload.data = bc;
    ngx_http_adserve_offload(ld, &bc->offload);
}


/* ---- changes ----------------------------------------------------------- */

/* The kind of a change log entry (adserve_kind_by_name), and its id. */
static ngx_int_t
ngx_http_adserve_change_kind(const redisReply *fields, const redisReply **id)
{
    const redisReply  *k = NULL;
    size_t             j;
    int                kind;

    *id = NULL;

    for (j = 0; j + 1 < fields->elements; j += 2) {
        if (fields->element[j]->type != REDIS_REPLY_STRING
            || fields->element[j + 1]->type != REDIS_REPLY_STRING)
        {
            continue;
        }
        if (ngx_strcmp(fields->element[j]->str, ADSERVE_CHANGE_KIND) == 0) {
            k = fields->element[j + 1];
        } else if (ngx_strcmp(fields->element[j]->str, ADSERVE_CHANGE_ID) == 0) {
            *id = fields->element[j + 1];
        }
    }

    kind = k != NULL && *id != NULL ? adserve_kind_by_name(k->str, k->len) : -1;

    return kind < 0 ? NGX_ERROR : kind;     /* -1: a kind serving does not read */
}


static void
ngx_http_adserve_loader_fetched(ngx_http_adserve_loader_t *ld)
{
    adserve_arena_free(&ld->fetch_arena);
    ngx_memzero(ld->fetch_ids, sizeof(ld->fetch_ids));
    ngx_memzero(ld->fetch_n, sizeof(ld->fetch_n));
    ld->nfetch = 0;
    ld->fetched = 0;
}


/* One HMGET's values, in the order of the ids it was sent; replies come
 * back in the order the commands went out, so the n-th is fetch_order[n]. */
static void
ngx_http_adserve_loader_on_fetch(redisAsyncContext *ac, void *r, void *data)
{
    ngx_http_adserve_loader_t  *ld = data;
    redisReply                 *reply = r, *v;
    adserve_kind_e              kind;
    adserve_str_t              *id;
    size_t                      i;

    if (reply == NULL || ld->state != NGX_HTTP_ADSERVE_FETCHING) {
        return;
    }

    kind = ld->fetch_order[ld->fetched++];

    if (reply->type != REDIS_REPLY_ARRAY || reply->elements != ld->fetch_n[kind]) {
        ngx_http_adserve_loader_fail(ld, reply->type == REDIS_REPLY_ERROR
                                         ? reply->str : "unexpected HMGET reply");
        return;
    }

    for (i = 0; i < reply->elements; i++) {
        v = reply->element[i];
        id = &ld->fetch_ids[kind][i];

        if (v->type != REDIS_REPLY_STRING) {         /* nil: deleted */
            adserve_records_del(&ld->records[kind], id->data, id->len);

        } else if (adserve_records_put(&ld->records[kind], id->data, id->len,
                                       v->str, v->len) != 0)
        {
            ngx_http_adserve_loader_fail(ld, "out of memory");
            return;
        }
    }

    if (ld->fetched == ld->nfetch) {
        ngx_http_adserve_loader_fetched(ld);
        ngx_http_adserve_loader_build(ld);
    }
}


/* Copies the ids the entries name, by kind, into the fetch arena. */
static ngx_int_t
ngx_http_adserve_loader_collect(ngx_http_adserve_loader_t *ld,
    const redisReply *entries, size_t from)
{
    const redisReply  *e, *id;
    ngx_int_t          kind;
    size_t             i, cap = entries->elements;

    adserve_arena_init(&ld->fetch_arena, 16 * 1024);

    for (i = from; i < entries->elements; i++) {
        e = entries->element[i];

        if (e->type != REDIS_REPLY_ARRAY || e->elements != 2
            || e->element[1]->type != REDIS_REPLY_ARRAY
            || (kind = ngx_http_adserve_change_kind(e->element[1], &id)) == NGX_ERROR)
        {
            continue;                   /* not about a record serving reads */
        }

        if (ld->fetch_ids[kind] == NULL) {
            ld->fetch_ids[kind] = adserve_arena_alloc(&ld->fetch_arena,
                                                      cap * sizeof(adserve_str_t));
            if (ld->fetch_ids[kind] == NULL) {
                return NGX_ERROR;
            }
        }

        ld->fetch_ids[kind][ld->fetch_n[kind]].data =
            adserve_arena_memdup(&ld->fetch_arena, id->str, id->len);
        ld->fetch_ids[kind][ld->fetch_n[kind]].len = id->len;

        if (ld->fetch_ids[kind][ld->fetch_n[kind]++].data == NULL) {
            return NGX_ERROR;
        }
    }

    return NGX_OK;
}


/* HMGET of the changed records, one command per kind. */
static ngx_int_t
ngx_http_adserve_loader_fetch(ngx_http_adserve_loader_t *ld,
    const redisReply *entries, size_t from)
{
    const char  **argv;
    size_t        i, n;
    ngx_uint_t    k;

    if (ngx_http_adserve_loader_collect(ld, entries, from) != NGX_OK) {
        ngx_http_adserve_loader_fetched(ld);
        return NGX_ERROR;
    }

    ld->state = NGX_HTTP_ADSERVE_FETCHING;

    for (k = 0; k < ADSERVE_KIND_COUNT; k++) {
        if (ld->fetch_n[k] > 0) {
            ld->fetch_order[ld->nfetch++] = k;
        }
    }

    if (ld->nfetch == 0) {              /* only kinds serving does not read */
        ngx_http_adserve_loader_fetched(ld);
        ngx_http_adserve_loader_build(ld);
        return NGX_OK;
    }

    argv = ngx_alloc((entries->elements + 2) * sizeof(char *), ld->redis.log);
    if (argv == NULL) {
        ngx_http_adserve_loader_fetched(ld);
        return NGX_ERROR;
    }

    for (i = 0; i < ld->nfetch; i++) {
        k = ld->fetch_order[i];
        argv[0] = "HMGET";
        argv[1] = adserve_kinds[k].key;

        for (n = 0; n < ld->fetch_n[k]; n++) {
            argv[n + 2] = ld->fetch_ids[k][n].data;   /* NUL-ended copies */
        }

        if (ngx_http_adserve_loader_send(ld, ngx_http_adserve_loader_on_fetch, ld,
                                         (int) n + 2, argv) != NGX_OK)
        {
            break;                      /* failed, and handled */
        }
    }

    ngx_free(argv);

    return NGX_OK;
}


/* ---- the poll ---------------------------------------------------------- */

static ngx_int_t
ngx_http_adserve_parse_rev(const redisReply *r, uint64_t *rev)
{
    ngx_int_t  n;

    if (r->type == REDIS_REPLY_NIL) {
        *rev = 0;                       /* nothing written yet */
        return NGX_OK;
    }

    n = r->type == REDIS_REPLY_STRING ? ngx_atoi((u_char *) r->str, r->len)
                                      : NGX_ERROR;
    if (n == NGX_ERROR) {
        return NGX_ERROR;
    }

    *rev = (uint64_t) n;

    return NGX_OK;
}


/* The id of an XRANGE reply's i-th entry (its first, or its last), or
 * NULL. */
static const char *
ngx_http_adserve_entry_id(const redisReply *entries, size_t i)
{
    const redisReply  *e;

    if (entries->type != REDIS_REPLY_ARRAY || entries->elements <= i) {
        return NULL;
    }

    e = entries->element[i];

    return (e->type == REDIS_REPLY_ARRAY && e->elements == 2
            && e->element[0]->type == REDIS_REPLY_STRING)
           ? e->element[0]->str : NULL;
}


/* Nothing new in Redis. When the last build failed, its records are built
 * again once its delay is over; else back to waiting. */
static void
ngx_http_adserve_loader_rebuild(ngx_http_adserve_loader_t *ld)
{
    if (!ld->rebuild || (ngx_msec_int_t) (ngx_current_msec - ld->rebuild_at) < 0) {
        ngx_http_adserve_loader_idle(ld);
        return;
    }

    ld->next_rev = ld->rev;
    ngx_cpystrn((u_char *) ld->next_change_id, (u_char *) ld->change_id,
                sizeof(ld->next_change_id));
    ld->next_log_added = ld->log_added;
    ld->started = ngx_current_msec;
    ngx_http_adserve_loader_build(ld);
}


/* From XINFO STREAM's reply: how many entries the change log ever had
 * added (trimmed ones included), 0 when it does not exist, or -1 when
 * Redis does not say (before 7.0). */
static int64_t
ngx_http_adserve_log_added(const redisReply *info)
{
    size_t  i;

    if (info->type == REDIS_REPLY_ERROR) {
        return 0;                        /* no such key: none yet */
    }

    if (info->type != REDIS_REPLY_ARRAY) {
        return -1;
    }

    for (i = 0; i + 1 < info->elements; i += 2) {
        if (info->element[i]->type == REDIS_REPLY_STRING
            && ngx_strcmp(info->element[i]->str, "entries-added") == 0)
        {
            return info->element[i + 1]->type == REDIS_REPLY_INTEGER
                   ? (int64_t) info->element[i + 1]->integer : -1;
        }
    }

    return -1;
}


static void
ngx_http_adserve_loader_on_poll(redisAsyncContext *ac, void *r, void *data)
{
    ngx_http_adserve_loader_t  *ld = data;
    redisReply                 *reply = r, *newest, *after;
    const char                 *first, *last;
    int64_t                     added;
    uint64_t                    rev;
    size_t                      from;

    if (reply == NULL || ld->state != NGX_HTTP_ADSERVE_POLLING) {
        return;
    }

    if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 4
        || ngx_http_adserve_parse_rev(reply->element[0], &rev) != NGX_OK
        || reply->element[1]->type != REDIS_REPLY_ARRAY
        || reply->element[2]->type != REDIS_REPLY_ARRAY)
    {
        ngx_http_adserve_loader_fail(ld, reply->type == REDIS_REPLY_ERROR
                                         ? reply->str
                                         : "unexpected reply to the poll");
        return;
    }

    ngx_http_adserve_redis_healthy(&ld->redis);

    if (ld->deadline.timer_set) {
        ngx_del_timer(&ld->deadline);
    }

    newest = reply->element[1];
    after = reply->element[2];
    first = ngx_http_adserve_entry_id(after, 0);
    added = ngx_http_adserve_log_added(reply->element[3]);

    /* what of the log is after our position: all of it when our entry is
     * not there (a position of "0-0": the log was empty at our load) */
    from = first != NULL && ngx_strcmp(first, ld->change_id) == 0 ? 1 : 0;

    /* our position still holds when its entry is in the log, or when the
     * log lost nothing after it: every entry added since (Redis 7 counts
     * them, trimmed or not) is in the reply. So a node loaded from a bulk
     * import, whose log was empty, follows the next writes one by one. */
    if ((ld->snapshot != NULL || ld->rebuild) && ld->change_id[0] != '\0'
        && (from == 1
            || (first == NULL && ngx_strcmp(ld->change_id, "0-0") == 0)
            || (added >= 0 && ld->log_added >= 0
                && after->elements < NGX_HTTP_ADSERVE_CHANGES_N
                && added - ld->log_added == (int64_t) after->elements)))
    {
        if (after->elements <= from) {
            if (rev == ld->rev) {
                ngx_http_adserve_loader_rebuild(ld);
                return;
            }
            /* the revision moved and the log did not: a writer outside
             * the contract; only a full load can see what it did */

        } else if (!ngx_exiting
                   && (last = ngx_http_adserve_entry_id(after, after->elements - 1)) != NULL)
        {
            ld->next_rev = rev;
            ngx_cpystrn((u_char *) ld->next_change_id, (u_char *) last,
                        sizeof(ld->next_change_id));
            /* a batch that holds the rest of the log: the count is ours */
            ld->next_log_added = after->elements < NGX_HTTP_ADSERVE_CHANGES_N
                                 ? added : -1;
            ld->changes += after->elements - from;
            ld->started = ngx_current_msec;

            if (ngx_http_adserve_loader_fetch(ld, after, from) == NGX_ERROR) {
                ngx_http_adserve_loader_fail(ld, "out of memory");
            }
            return;
        }
    }

    if (ngx_exiting) {
        /* an old worker after a reload: a new one builds for the node,
         * and whoever waited here is answered from what there is */
        ngx_http_adserve_zone_resign(ld->zone);
        ngx_http_adserve_loader_idle(ld);
        ngx_http_adserve_loader_warm(ld);
        return;
    }

    /* a full load, positioned at the log's newest entry as of now */
    first = ngx_http_adserve_entry_id(newest, 0);
    ld->next_rev = rev;
    ngx_cpystrn((u_char *) ld->next_change_id, (u_char *) (first ? first : "0-0"),
                sizeof(ld->next_change_id));
    ld->next_log_added = added;
    ld->started = ngx_current_msec;

    ngx_http_adserve_loader_full(ld);
}


/* A follower's connection carries its pacing reads; a PING a tick tells it
 * is usable (or not: the outage is logged once, as the builder's is). */
static void
ngx_http_adserve_loader_on_ping(redisAsyncContext *ac, void *r, void *data)
{
    ngx_http_adserve_loader_t  *ld = data;
    redisReply                 *reply = r;

    ld->pinging = 0;

    if (reply == NULL) {
        return;                         /* connection gone */
    }

    /* the deadline is the PING's, unless this worker became the builder
     * meanwhile and its poll is out */
    if (ld->deadline.timer_set && ld->state == NGX_HTTP_ADSERVE_IDLE) {
        ngx_del_timer(&ld->deadline);
    }

    if (reply->type == REDIS_REPLY_ERROR) {
        ngx_http_adserve_redis_drop(&ld->redis, reply->str);
        return;
    }

    ngx_http_adserve_redis_healthy(&ld->redis);
}


static void
ngx_http_adserve_loader_ping(ngx_http_adserve_loader_t *ld)
{
    const char  *ping[] = { "PING" };

    if (ld->pinging || !ld->redis.connected || ld->state != NGX_HTTP_ADSERVE_IDLE) {
        return;
    }

    if (ngx_http_adserve_redis_command(&ld->redis, ngx_http_adserve_loader_on_ping, ld,
                                       1, ping, NULL)
        == NGX_OK)
    {
        ld->pinging = 1;

        if (!ld->deadline.timer_set) {
            ngx_add_timer(&ld->deadline, ld->timeout);
        }
    }
}


/* Every adserve_refresh: the latest publication, and, for the builder,
 * what Redis has. */
static void
ngx_http_adserve_loader_tick(ngx_event_t *ev)
{
    ngx_http_adserve_loader_t  *ld = ev->data;

    ngx_http_adserve_loader_adopt(ld);

    if (ngx_exiting) {
        /* an old worker after a reload: it hands the role over as soon as
         * it has nothing in flight, and keeps adopting while its last
         * requests finish, or its reader slot would keep every snapshot
         * published after it in the zone (the timer is cancelable: it
         * does not hold the shutdown) */
        if (ld->state == NGX_HTTP_ADSERVE_IDLE) {
            ngx_http_adserve_zone_resign(ld->zone);
        }
        ngx_http_adserve_watch_stop(ld);

    } else if (ngx_http_adserve_zone_builder(ld->zone)) {
        /* what the workers have moved past goes (a few syscalls) */
        ngx_http_adserve_zone_collect(ld->zone);
        ngx_http_adserve_watch_start(ld);
        ngx_http_adserve_loader_poll(ev);
        return;

    } else {
        ngx_http_adserve_loader_ping(ld);
    }

    /* a follower: waiting for a first snapshot ends with the builder's
     * first attempt, as the builder's own wait does */
    if (ld->warming && ngx_http_adserve_zone_attempts(ld->zone) != ld->attempts) {
        ngx_http_adserve_loader_warm(ld);
    }

    if (!ld->poll.timer_set && !ngx_terminate) {
        ngx_add_timer(&ld->poll, ld->refresh);
    }
}


static void
ngx_http_adserve_loader_poll(ngx_event_t *ev)
{
    ngx_http_adserve_loader_t  *ld = ev->data;
    const char                 *multi[] = { "MULTI" };
    const char                 *rev[] = { "GET", ADSERVE_KEY_REV };
    const char                 *newest[] = { "XREVRANGE", ADSERVE_KEY_CHANGES,
                                             "+", "-", "COUNT", "1" };
    const char                 *after[] = { "XRANGE", ADSERVE_KEY_CHANGES,
                                            ld->change_id[0] ? ld->change_id : "+",
                                            "+", "COUNT",
                                            NGX_HTTP_ADSERVE_CHANGES_BATCH };
    const char                 *info[] = { "XINFO", "STREAM", ADSERVE_KEY_CHANGES };
    const char                 *exec[] = { "EXEC" };

    if (ld->state != NGX_HTTP_ADSERVE_IDLE || !ld->redis.connected) {
        return;               /* busy, or on_up polls once connected again */
    }

    ld->state = NGX_HTTP_ADSERVE_POLLING;
    ld->changed = 0;              /* this poll reads it */
    ld->polled = ngx_current_msec;

    /* one atomic read: no write can land between the revision and the log */
    if (ngx_http_adserve_loader_send(ld, NULL, ld, 1, multi) != NGX_OK
        || ngx_http_adserve_loader_send(ld, NULL, ld, 2, rev) != NGX_OK
        || ngx_http_adserve_loader_send(ld, NULL, ld, 6, newest) != NGX_OK
        || ngx_http_adserve_loader_send(ld, NULL, ld, 6, after) != NGX_OK
        || ngx_http_adserve_loader_send(ld, NULL, ld, 3, info) != NGX_OK)
    {
        return;
    }

    (void) ngx_http_adserve_loader_send(ld, ngx_http_adserve_loader_on_poll, ld, 1, exec);
}


/* ---- timers and connection events -------------------------------------- */

static void
ngx_http_adserve_loader_deadline(ngx_event_t *ev)
{
    ngx_http_adserve_loader_fail(ev->data, "a command timed out");
}


static void
ngx_http_adserve_loader_on_up(ngx_http_adserve_redis_t *rd)
{
    ngx_http_adserve_loader_t  *ld = rd->data;

    if (ld->poll.timer_set) {
        ngx_del_timer(&ld->poll);
    }

    ngx_http_adserve_loader_tick(&ld->poll);
}


static void
ngx_http_adserve_loader_on_down(ngx_http_adserve_redis_t *rd)
{
    ngx_http_adserve_loader_t  *ld = rd->data;

    /* a build in the thread pool finishes on its own */
    if (ld->state != NGX_HTTP_ADSERVE_BUILDING) {
        ngx_http_adserve_loader_idle(ld);
        ngx_http_adserve_loader_warm(ld);
    }
}


static void
ngx_http_adserve_loader_event(ngx_event_t *ev, ngx_event_handler_pt handler,
    ngx_http_adserve_loader_t *ld)
{
    ev->handler = handler;
    ev->data = ld;
    ev->log = ld->redis.log;
    ev->cancelable = 1;       /* a graceful shutdown does not wait for them */
}


ngx_int_t
ngx_http_adserve_loader_init(ngx_http_adserve_loader_t *ld, ngx_cycle_t *cycle)
{
    ngx_uint_t  k;

    ld->redis.log = cycle->log;
    ld->watch.redis = ld->redis;  /* as configured: the watch's own */
    ld->redis.data = ld;
    ld->redis.on_up = ngx_http_adserve_loader_on_up;
    ld->redis.on_down = ngx_http_adserve_loader_on_down;
    ld->warming = 1;
    ngx_queue_init(&ld->waiting);

    for (k = 0; k < ADSERVE_KIND_COUNT; k++) {
        adserve_records_init(&ld->records[k]);
    }
    ld->load = NULL;
    adserve_joins_init(&ld->joins);

#ifdef __GLIBC__
    /* the scratch memory of one build is the next one's: kept in the heap,
     * not mapped and unmapped by every build, which pages it in again
     * (some 30 MB at 100,000 line items, a third of a change's build on a
     * virtual machine); a full load hands its peak back (malloc_trim) */
    (void) mallopt(M_MMAP_THRESHOLD, 32 * 1024 * 1024);
    (void) mallopt(M_TRIM_THRESHOLD, 256 * 1024 * 1024);
#endif

    ngx_http_adserve_loader_event(&ld->poll, ngx_http_adserve_loader_tick, ld);
    ngx_http_adserve_loader_event(&ld->deadline, ngx_http_adserve_loader_deadline,
                                  ld);

    if (ngx_http_adserve_zone_join(ld->zone) != NGX_OK) {
        return NGX_ERROR;
    }

    /* a reload's new worker serves the node's snapshot at once */
    ld->attempts = ngx_http_adserve_zone_attempts(ld->zone);
    ngx_http_adserve_loader_adopt(ld);

    ngx_http_adserve_redis_start(&ld->redis);

    /* followers tick whether Redis is up or not */
    ngx_add_timer(&ld->poll, ld->refresh);

    return NGX_OK;
}


void
ngx_http_adserve_loader_exit(ngx_http_adserve_loader_t *ld)
{
    if (ld->poll.timer_set) {
        ngx_del_timer(&ld->poll);
    }

    if (ld->deadline.timer_set) {
        ngx_del_timer(&ld->deadline);
    }

    /* the thread pool module's exit_process ran before this dynamic
     * module's: the pool is gone, and what is left, even a load that
     * stopping Redis below gives up (loader_idle), is freed here */
    ld->thread_pool = NULL;

    ngx_http_adserve_redis_stop(&ld->redis);
    ngx_http_adserve_watch_stop(ld);

    /* a build still running in a thread reads the records; the process
     * exit reclaims them then */
    if (ld->state != NGX_HTTP_ADSERVE_BUILDING) {
        ngx_http_adserve_records_free(ld->records);
        ngx_http_adserve_loader_full_drop(ld);
        adserve_joins_free(&ld->joins);
    }

    /* the snapshot is the node's: the zone keeps it for the others */
    ngx_http_adserve_zone_leave(ld->zone);
    ld->snapshot = NULL;
}
