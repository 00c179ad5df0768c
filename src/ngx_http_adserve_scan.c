
/*
 * A full load: every hash of the contract read with HSCAN into a fresh
 * copy of the records (ld->load), which replaces the builder's own when
 * it is complete, and a build.
 *
 * Every hash is scanned at once, one HSCAN of each in flight, so Redis
 * reads the next chunk of one while the worker copies another's. Each
 * chunk is parsed in the thread pool (adserve_parse) and stored there
 * into the copy: the builder keeps the parses, never the texts, and the
 * build finds every record parsed. The event loop only copies chunks.
 * Reading stays at most NGX_HTTP_ADSERVE_PARSE_AHEAD chunks ahead of the
 * parsing, so that the memory of a load is its parses and a few chunks.
 */


#include "ngx_http_adserve.h"

#ifdef __GLIBC__
#include <malloc.h>
#endif


#define NGX_HTTP_ADSERVE_SCAN_COUNT     "1000"
#define NGX_HTTP_ADSERVE_PARSE_AHEAD    8        /* chunks read, not yet
                                                  * parsed (the pool's
                                                  * max_queue is 16) */


static void ngx_http_adserve_loader_scan(ngx_http_adserve_scan_t *sc);


/* The copy a full load fills. The pool's threads store each chunk's
 * records into it (a lock for each hash, in case the pool has more than
 * one thread), so it lives until the last of its chunks is back, even
 * when the load is given up before. */
struct ngx_http_adserve_load_s {
    adserve_records_t           records[ADSERVE_KIND_COUNT];
#if (NGX_THREADS)
    ngx_thread_mutex_t          lock[ADSERVE_KIND_COUNT];
#endif
    ngx_uint_t                  chunks;        /* in the pool */
    ngx_log_t                  *log;
    ngx_http_adserve_offload_t  offload;       /* its freeing */
    ngx_uint_t                  previous;      /* it holds the builder's
                                                * previous records */
    size_t                      freed;         /* records, and how long */
    double                      free_ms;       /* their freeing took */
};


/* A chunk of a full load, parsed in the thread pool while Redis reads the
 * next: the records' parse is what the builder keeps, so their texts are
 * never stored (but the ad units'), and a full load's build finds every
 * record parsed. */
typedef struct {
    ngx_http_adserve_offload_t  offload;
    ngx_http_adserve_loader_t  *loader;
    ngx_http_adserve_load_t    *load;
    adserve_kind_e              kind;
    ngx_uint_t                  oom;           /* a record not stored */
    size_t                      n;
    adserve_records_item_t      recs[];        /* then the records' bytes */
} ngx_http_adserve_chunk_t;


static ngx_http_adserve_load_t *
ngx_http_adserve_load_new(ngx_log_t *log)
{
    ngx_http_adserve_load_t  *load;
    ngx_uint_t                k;

    load = ngx_calloc(sizeof(ngx_http_adserve_load_t), log);
    if (load == NULL) {
        return NULL;
    }

    load->log = log;

    for (k = 0; k < ADSERVE_KIND_COUNT; k++) {
        adserve_records_init(&load->records[k]);

#if (NGX_THREADS)
        if (ngx_thread_mutex_create(&load->lock[k], log) != NGX_OK) {
            while (k--) {
                (void) ngx_thread_mutex_destroy(&load->lock[k], log);
            }

            ngx_free(load);
            return NULL;
        }
#endif
    }

    return load;
}


/* In the pool's thread: the records a load holds (a given-up copy, or
 * the builder's previous records after a full load) are up to the whole
 * inventory. At 100k line items that is half a million records and their
 * parses: 320 to 400 ms of CPU to free, which held the builder's event
 * loop as long when done there. */
static void
ngx_http_adserve_load_clear(void *data, ngx_log_t *log)
{
    ngx_http_adserve_load_t  *load = data;
    ngx_uint_t                k;
    struct timespec           t0;
    int                       nice;

    nice = ngx_http_adserve_background_begin();
    (void) clock_gettime(CLOCK_MONOTONIC, &t0);

    for (k = 0; k < ADSERVE_KIND_COUNT; k++) {
        load->freed += load->records[k].count;
        adserve_records_free(&load->records[k]);
    }

#ifdef __GLIBC__
    /* the build's own malloc_trim cannot hand these pages back: they are
     * freed after it (or beside it, in a pool of more threads). It holds
     * the heap's lock a few ms, as the build's does. */
    malloc_trim(0);
#endif

    load->free_ms = ngx_http_adserve_elapsed_ms(&t0);
    ngx_http_adserve_background_end(nice);
}


/* Back on the event loop, or inline (ngx_http_adserve_offload). */
static void
ngx_http_adserve_load_free(void *data)
{
    ngx_http_adserve_load_t  *load = data;
#if (NGX_THREADS)
    ngx_uint_t                k;
#endif

    if (load->previous && load->freed > 0) {
        ngx_log_error(NGX_LOG_INFO, load->log, 0,
                      NGX_HTTP_ADSERVE_LOG "the previous records of the full load (%uz) "
                      "freed in %.1f ms, off the event loop", load->freed, load->free_ms);
    }

#if (NGX_THREADS)

    for (k = 0; k < ADSERVE_KIND_COUNT; k++) {
        (void) ngx_thread_mutex_destroy(&load->lock[k], load->log);
    }
#endif

    ngx_free(load);
}


/* No chunk of the load is in the pool any more. */
static void
ngx_http_adserve_load_retire(ngx_http_adserve_loader_t *ld,
    ngx_http_adserve_load_t *load)
{
    load->offload.work = ngx_http_adserve_load_clear;
    load->offload.finish = ngx_http_adserve_load_free;
    load->offload.data = load;
    ngx_http_adserve_offload(ld, &load->offload);
}


static ngx_int_t
ngx_http_adserve_load_lock(ngx_http_adserve_load_t *load, adserve_kind_e kind)
{
#if (NGX_THREADS)
    return ngx_thread_mutex_lock(&load->lock[kind], load->log);
#else
    return NGX_OK;
#endif
}


/* Only after a lock that succeeded; nginx logs a failure. */
static void
ngx_http_adserve_load_unlock(ngx_http_adserve_load_t *load, adserve_kind_e kind)
{
#if (NGX_THREADS)
    (void) ngx_thread_mutex_unlock(&load->lock[kind], load->log);
#endif
}


void
ngx_http_adserve_loader_full_drop(ngx_http_adserve_loader_t *ld)
{
    if (ld->load != NULL && ld->load->chunks == 0) {
        ngx_http_adserve_load_retire(ld, ld->load);
    }

    ld->load = NULL;                    /* else its last chunk frees it */
}


static ngx_http_adserve_chunk_t *
ngx_http_adserve_chunk_copy(ngx_http_adserve_scan_t *sc, const redisReply *items)
{
    ngx_http_adserve_chunk_t      *ch;
    adserve_records_item_t        *rec;
    const redisReply              *f, *v;
    size_t                         i, n = 0, bytes = 0;
    u_char                        *p;

    for (i = 0; i + 1 < items->elements; i += 2) {
        f = items->element[i];
        v = items->element[i + 1];

        if (f->type == REDIS_REPLY_STRING && v->type == REDIS_REPLY_STRING) {
            n++;
            bytes += f->len + v->len;
        }
    }

    ch = ngx_alloc(sizeof(ngx_http_adserve_chunk_t)
                   + n * sizeof(adserve_records_item_t) + bytes,
                   sc->loader->redis.log);
    if (ch == NULL) {
        return NULL;
    }

    ch->loader = sc->loader;
    ch->load = sc->loader->load;
    ch->kind = sc->kind;
    ch->oom = 0;
    ch->n = n;

    /* counted from now: should the load be given up before the chunk is
     * posted (the next HSCAN not sent), the chunk still holds it */
    ch->load->chunks++;
    sc->loader->parsing++;
    p = (u_char *) &ch->recs[n];
    rec = ch->recs;

    for (i = 0; i + 1 < items->elements; i += 2) {
        f = items->element[i];
        v = items->element[i + 1];

        if (f->type != REDIS_REPLY_STRING || v->type != REDIS_REPLY_STRING) {
            continue;
        }

        rec->id = (const char *) p;
        rec->id_len = f->len;
        p = ngx_cpymem(p, f->str, f->len);
        rec->text = (const char *) p;
        rec->len = v->len;
        p = ngx_cpymem(p, v->str, v->len);
        rec->parsed = NULL;
        rec++;
    }

    return ch;
}


/* In the pool's thread: the chunk's records parsed, and stored into its
 * load's copy. Stored on the event loop, they held it 1 to 5 ms of CPU a
 * chunk: inserting into tables of megabytes is a few cache misses a
 * record, and it was the loop's largest work in a full load. */
static void
ngx_http_adserve_chunk_parse(void *data, ngx_log_t *log)
{
    ngx_http_adserve_chunk_t      *ch = data;
    adserve_records_item_t        *rec;
    adserve_records_t             *records;
    size_t                         i, failed;
    int                            nice;

    nice = ngx_http_adserve_background_begin();

    /* NULL only when out of memory */
    for (i = 0; i < ch->n; i++) {
        rec = &ch->recs[i];
        rec->parsed = adserve_parse(ch->kind, rec->text, rec->len);
    }

    /* an ad unit keeps its text: its experiments' variants are parsed from
     * it by every build (ngx_http_adserve_build_thread) */
    records = &ch->load->records[ch->kind];

    if (ngx_http_adserve_load_lock(ch->load, ch->kind) != NGX_OK) {
        failed = ch->n;
        for (i = 0; i < ch->n; i++) {
            adserve_parsed_free(ch->recs[i].parsed);
        }

    } else {
        failed = adserve_records_put_batch(records, ch->recs, ch->n,
                                           ch->kind == ADSERVE_KIND_AD_UNITS);
        ngx_http_adserve_load_unlock(ch->load, ch->kind);
    }

    ch->oom = failed > 0;

    ngx_http_adserve_background_end(nice);
}


static void ngx_http_adserve_loader_scanned(ngx_http_adserve_loader_t *ld);


/* Back on the event loop: the chunk is stored, or its load was given up. */
static void
ngx_http_adserve_chunk_done(void *data)
{
    ngx_http_adserve_chunk_t   *ch = data;
    ngx_http_adserve_loader_t  *ld = ch->loader;
    ngx_http_adserve_load_t    *load = ch->load;
    ngx_uint_t                  oom = ch->oom;

    ngx_free(ch);
    ld->parsing--;
    load->chunks--;

    if (load != ld->load) {
        if (load->chunks == 0) {
            ngx_http_adserve_load_retire(ld, load);
        }

        /* a load since may have held its scans for this chunk's room */
        if (ld->state == NGX_HTTP_ADSERVE_SCANNING) {
            ngx_http_adserve_loader_scanned(ld);
        }

        return;
    }

    if (oom) {
        ngx_http_adserve_loader_fail(ld, "out of memory");
        return;
    }

    ngx_http_adserve_loader_scanned(ld);
}


/* Parses the chunk in the pool, or here when there is none (or its queue
 * is full). */
static void
ngx_http_adserve_chunk_post(ngx_http_adserve_chunk_t *ch)
{
    ngx_http_adserve_loader_t  *ld = ch->loader;

    ch->offload.work = ngx_http_adserve_chunk_parse;
    ch->offload.finish = ngx_http_adserve_chunk_done;
    ch->offload.data = ch;
    ngx_http_adserve_offload(ld, &ch->offload);
}


/* Every hash read and every chunk parsed: the fresh copy replaces the old
 * one, and the build finds each record's parse in it. Held scans go on
 * as parses come back. */
static void
ngx_http_adserve_loader_scanned(ngx_http_adserve_loader_t *ld)
{
    ngx_http_adserve_scan_t  *sc;
    ngx_http_adserve_load_t  *old;
    adserve_records_t         records;
    ngx_uint_t                k;

    for (k = 0; k < ADSERVE_KIND_COUNT; k++) {
        sc = &ld->scans[k];

        if (sc->held && ld->parsing < NGX_HTTP_ADSERVE_PARSE_AHEAD
            && ld->state == NGX_HTTP_ADSERVE_SCANNING)
        {
            sc->held = 0;
            ngx_http_adserve_loader_scan(sc);
        }
    }

    /* its own chunks: those of a load given up may still be in the pool */
    if (ld->state != NGX_HTTP_ADSERVE_SCANNING || ld->scanning > 0
        || ld->load->chunks > 0)
    {
        return;
    }

    /* the fresh copy for the builder's records, which leave in the load */
    old = ld->load;
    ld->load = NULL;

    for (k = 0; k < ADSERVE_KIND_COUNT; k++) {
        records = ld->records[k];
        ld->records[k] = old->records[k];
        old->records[k] = records;
    }

    /* they were the old records' joins */
    adserve_joins_clear(&ld->joins);

    ld->full_loads++;
    ngx_http_adserve_loader_build(ld);

    /* after the build, in the pool's queue: the snapshot comes first, and
     * the old records are freed while it is built or after (with one
     * thread, a change that comes within that time waits for them) */
    old->previous = 1;
    ngx_http_adserve_load_retire(ld, old);
}


static ngx_uint_t
ngx_http_adserve_loader_scans_out(ngx_http_adserve_loader_t *ld)
{
    ngx_uint_t  k;

    for (k = 0; k < ADSERVE_KIND_COUNT; k++) {
        if (ld->scans[k].out) {
            return 1;
        }
    }

    return 0;
}


static void
ngx_http_adserve_loader_on_scan(redisAsyncContext *ac, void *r, void *data)
{
    ngx_http_adserve_scan_t    *sc = data;
    ngx_http_adserve_loader_t  *ld = sc->loader;
    ngx_http_adserve_chunk_t   *ch;
    redisReply                 *reply = r;
    ngx_http_adserve_step_t     step;

    if (reply == NULL || ld->state != NGX_HTTP_ADSERVE_SCANNING) {
        return;                         /* connection gone: cleanup handles it */
    }

    sc->out = 0;

    if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 2
        || reply->element[0]->type != REDIS_REPLY_STRING
        || reply->element[0]->len >= sizeof(sc->cursor)
        || reply->element[1]->type != REDIS_REPLY_ARRAY)
    {
        ngx_http_adserve_loader_fail(ld, reply->type == REDIS_REPLY_ERROR
                                         ? reply->str : "unexpected HSCAN reply");
        return;
    }

    /* timed, since a chunk holds the event loop while it is copied */
    ngx_http_adserve_step_start(&step);

    ch = ngx_http_adserve_chunk_copy(sc, reply->element[1]);
    if (ch == NULL) {
        ngx_http_adserve_loader_fail(ld, "out of memory");
        return;
    }

    ngx_http_adserve_step_end(&step, &ld->longest);

    ngx_memcpy(sc->cursor, reply->element[0]->str, reply->element[0]->len);
    sc->cursor[reply->element[0]->len] = '\0';

    /* the deadline covers the commands still in flight, from now */
    if (ld->deadline.timer_set) {
        ngx_del_timer(&ld->deadline);
    }

    if (ngx_strcmp(sc->cursor, "0") == 0) {
        ld->scanning--;

    } else if (ld->parsing < NGX_HTTP_ADSERVE_PARSE_AHEAD) {
        /* Redis reads the next chunk while this one is parsed */
        ngx_http_adserve_loader_scan(sc);

    } else {
        sc->held = 1;                   /* until a parse comes back */
        ld->holds++;
    }

    if (!ld->deadline.timer_set && ngx_http_adserve_loader_scans_out(ld)) {
        ngx_add_timer(&ld->deadline, ld->timeout);
    }

    ngx_http_adserve_chunk_post(ch);
}


/* The size of the hash about to be scanned: the copy is made that large
 * at once, rather than doubled, and rehashed, as it fills. */
static void
ngx_http_adserve_loader_on_hlen(redisAsyncContext *ac, void *r, void *data)
{
    ngx_http_adserve_scan_t    *sc = data;
    ngx_http_adserve_loader_t  *ld = sc->loader;
    redisReply                 *reply = r;
    int                         rc;

    if (reply == NULL || ld->state != NGX_HTTP_ADSERVE_SCANNING
        || reply->type != REDIS_REPLY_INTEGER || reply->integer <= 0)
    {
        return;                         /* the scan goes on without it */
    }

    /* a little room over: what lands during the scan (the hash's first
     * chunk comes after this reply, so no thread holds the lock yet) */
    if (ngx_http_adserve_load_lock(ld->load, sc->kind) != NGX_OK) {
        return;                         /* the scan goes on without it */
    }

    rc = adserve_records_reserve(&ld->load->records[sc->kind],
                                 (size_t) reply->integer + reply->integer / 8);
    ngx_http_adserve_load_unlock(ld->load, sc->kind);

    if (rc != 0) {
        ngx_http_adserve_loader_fail(ld, "out of memory");
    }
}


static void
ngx_http_adserve_loader_scan(ngx_http_adserve_scan_t *sc)
{
    const char  *argv[5];

    if (sc->cursor[0] == '0' && sc->cursor[1] == '\0') {
        argv[0] = "HLEN";
        argv[1] = adserve_kinds[sc->kind].key;

        if (ngx_http_adserve_loader_send(sc->loader, ngx_http_adserve_loader_on_hlen,
                                         sc, 2, argv)
            != NGX_OK)
        {
            return;
        }
    }

    argv[0] = "HSCAN";
    argv[1] = adserve_kinds[sc->kind].key;
    argv[2] = sc->cursor;
    argv[3] = "COUNT";
    argv[4] = NGX_HTTP_ADSERVE_SCAN_COUNT;

    if (ngx_http_adserve_loader_send(sc->loader, ngx_http_adserve_loader_on_scan,
                                     sc, 5, argv)
        == NGX_OK)
    {
        sc->out = 1;
    }
}


/* Every hash at once: HLEN and the first HSCAN of each are pipelined, and
 * each reply sends its hash's next HSCAN. */
void
ngx_http_adserve_loader_full(ngx_http_adserve_loader_t *ld)
{
    ngx_http_adserve_scan_t  *sc;
    ngx_uint_t                k;

    ngx_http_adserve_loader_full_drop(ld);

    ld->load = ngx_http_adserve_load_new(ld->redis.log);
    if (ld->load == NULL) {
        ngx_http_adserve_loader_fail(ld, "out of memory");
        return;
    }

    ld->longest.wall_ms = 0;
    ld->longest.cpu_ms = 0;
    ld->holds = 0;
    ld->state = NGX_HTTP_ADSERVE_SCANNING;
    ld->scanning = ADSERVE_KIND_COUNT;

    for (k = 0; k < ADSERVE_KIND_COUNT && ld->state == NGX_HTTP_ADSERVE_SCANNING; k++) {
        sc = &ld->scans[k];
        sc->loader = ld;
        sc->kind = (adserve_kind_e) k;
        sc->held = 0;
        sc->out = 0;
        ngx_cpystrn((u_char *) sc->cursor, (u_char *) "0", sizeof(sc->cursor));

        ngx_http_adserve_loader_scan(sc);
    }
}
