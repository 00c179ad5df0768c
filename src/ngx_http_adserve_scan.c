
/*
 * A full load: every hash of the contract read with HSCAN into a fresh
 * copy of the records (ld->scan), which replaces the builder's own when
 * it is complete, and a build.
 *
 * Every hash is scanned at once, one HSCAN of each in flight, so Redis
 * reads the next chunk of one while the worker copies another's. Each
 * chunk is parsed in the thread pool (adserve_parse): the builder keeps
 * the parses, never the texts, and the build finds every record parsed.
 * Reading stays at most NGX_HTTP_ADSERVE_PARSE_AHEAD chunks ahead of the
 * parsing, so that the memory of a load is its parses and a few chunks.
 * The parses are stored in slices, one a turn of the event loop, so that
 * serving goes on between them.
 */


#include "ngx_http_adserve.h"

#include <time.h>



#define NGX_HTTP_ADSERVE_SCAN_COUNT     "1000"
#define NGX_HTTP_ADSERVE_PARSE_AHEAD    8        /* chunks read, not yet
                                                  * parsed (the pool's
                                                  * max_queue is 16) */
#define NGX_HTTP_ADSERVE_STORE_SLICE    128      /* records stored a turn */


static void ngx_http_adserve_loader_scan(ngx_http_adserve_scan_t *sc);


/* A chunk of a full load, parsed in the thread pool while Redis reads the
 * next: the records' parse is what the builder keeps, so their texts are
 * never stored, and a full load's build finds every record parsed. */
typedef struct {
    const char                 *id, *text;
    size_t                      id_len, len;
    adserve_parsed_t           *parsed;
} ngx_http_adserve_chunk_rec_t;

typedef struct {
    ngx_http_adserve_offload_t  offload;
    ngx_event_t                 store;         /* its next slice */
    ngx_http_adserve_loader_t  *loader;
    ngx_uint_t                  load;          /* ld->full_started of its load */
    adserve_kind_e              kind;
    size_t                      n;
    size_t                      stored;        /* recs before it: stored */
    ngx_http_adserve_chunk_rec_t  recs[];      /* then the records' bytes */
} ngx_http_adserve_chunk_t;


static ngx_http_adserve_chunk_t *
ngx_http_adserve_chunk_copy(ngx_http_adserve_scan_t *sc, const redisReply *items)
{
    ngx_http_adserve_chunk_t      *ch;
    ngx_http_adserve_chunk_rec_t  *rec;
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
                   + n * sizeof(ngx_http_adserve_chunk_rec_t) + bytes,
                   sc->loader->redis.log);
    if (ch == NULL) {
        return NULL;
    }

    ngx_memzero(&ch->store, sizeof(ngx_event_t));
    ch->loader = sc->loader;
    ch->load = sc->loader->full_started;
    ch->kind = sc->kind;
    ch->n = n;
    ch->stored = 0;
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


/* In the pool's thread: nothing but the chunk's own bytes. */
static void
ngx_http_adserve_chunk_parse(void *data, ngx_log_t *log)
{
    ngx_http_adserve_chunk_t  *ch = data;
    size_t                     i;
    int                        nice;

    nice = ngx_http_adserve_background_begin();

    for (i = 0; i < ch->n; i++) {
        ch->recs[i].parsed = adserve_parse(ch->kind, ch->recs[i].text,
                                           ch->recs[i].len);
    }

    ngx_http_adserve_background_end(nice);
}


static void ngx_http_adserve_loader_scanned(ngx_http_adserve_loader_t *ld);


/* The chunk's parses not stored yet go, and so does the chunk. */
static void
ngx_http_adserve_chunk_free(ngx_http_adserve_chunk_t *ch)
{
    for ( /* void */ ; ch->stored < ch->n; ch->stored++) {
        adserve_parsed_free(ch->recs[ch->stored].parsed);
    }

    ch->loader->parsing--;
    ngx_free(ch);
}


/* On the event loop: a slice of the parses into the builder's copy, unless
 * the load they belong to was given up, and the next slice at the next
 * turn. A chunk of 1,000 records stored at once held the loop 1 to 5 ms of
 * CPU (a fresh table's pages fault in as records land in them), and on a
 * busy node three times that on the clock. */
static void
ngx_http_adserve_chunk_store(void *data)
{
    ngx_http_adserve_chunk_t      *ch = data;
    ngx_http_adserve_loader_t     *ld = ch->loader;
    ngx_http_adserve_chunk_rec_t  *rec;
    ngx_http_adserve_step_t        step;
    size_t                         end;

    if (ld->state != NGX_HTTP_ADSERVE_SCANNING || ch->load != ld->full_started) {
        ngx_http_adserve_chunk_free(ch);
        return;
    }

    ngx_http_adserve_step_start(&step);

    end = ngx_min(ch->n, ch->stored + NGX_HTTP_ADSERVE_STORE_SLICE);

    for ( /* void */ ; ch->stored < end; ch->stored++) {
        rec = &ch->recs[ch->stored];

        /* an ad unit keeps its text: its experiments' variants are
         * parsed from it by every build (ngx_http_adserve_build_thread);
         * adserve_parse returns NULL only when out of memory, and a
         * record not stored frees its parse */
        if (rec->parsed == NULL
            || adserve_records_put_parsed(&ld->scan[ch->kind], rec->id,
                                          rec->id_len, rec->text,
                                          ch->kind == ADSERVE_KIND_AD_UNITS
                                          ? rec->len : 0,
                                          rec->parsed)
               != 0)
        {
            ch->stored++;
            ngx_http_adserve_chunk_free(ch);
            ngx_http_adserve_loader_fail(ld, "out of memory");
            return;
        }
    }

    ngx_http_adserve_step_end(&step, &ld->longest);

    if (ch->stored < ch->n) {
        ngx_post_event(&ch->store, &ngx_posted_next_events);
        return;
    }

    ngx_http_adserve_chunk_free(ch);
    ngx_http_adserve_loader_scanned(ld);
}


static void
ngx_http_adserve_chunk_store_next(ngx_event_t *ev)
{
    ngx_http_adserve_chunk_store(ev->data);
}


/* Parses the chunk in the pool, or here when there is none (or its queue
 * is full). */
static void
ngx_http_adserve_chunk_post(ngx_http_adserve_chunk_t *ch)
{
    ngx_http_adserve_loader_t  *ld = ch->loader;

    ld->parsing++;

    ch->store.handler = ngx_http_adserve_chunk_store_next;
    ch->store.data = ch;
    ch->store.log = ld->redis.log;

    ch->offload.work = ngx_http_adserve_chunk_parse;
    ch->offload.finish = ngx_http_adserve_chunk_store;
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

    if (ld->scanning > 0 || ld->parsing > 0
        || ld->state != NGX_HTTP_ADSERVE_SCANNING)
    {
        return;
    }

    for (k = 0; k < ADSERVE_KIND_COUNT; k++) {
        adserve_records_free(&ld->records[k]);
        ld->records[k] = ld->scan[k];
        adserve_records_init(&ld->scan[k]);
    }

    /* they were the old records' joins */
    adserve_joins_clear(&ld->joins);

    ld->full_loads++;
    ngx_http_adserve_loader_build(ld);
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

    if (reply == NULL || ld->state != NGX_HTTP_ADSERVE_SCANNING
        || reply->type != REDIS_REPLY_INTEGER || reply->integer <= 0)
    {
        return;                         /* the scan goes on without it */
    }

    /* a little room over: what lands during the scan */
    if (adserve_records_reserve(&ld->scan[sc->kind],
                                (size_t) reply->integer + reply->integer / 8)
        != 0)
    {
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

    ld->longest.wall_ms = 0;
    ld->longest.cpu_ms = 0;
    ld->holds = 0;
    ld->state = NGX_HTTP_ADSERVE_SCANNING;
    ld->scanning = ADSERVE_KIND_COUNT;
    ld->full_started++;                 /* parses of an earlier one: dropped */

    for (k = 0; k < ADSERVE_KIND_COUNT; k++) {
        adserve_records_init(&ld->scan[k]);
    }

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
