
/*
 * Pacing in a worker: the timer that feeds adserve_pace_update (see
 * adserve_pacing.h for the model and ngx_http_adserve.h for the cycle), and
 * the worker's pace table, one adserve_pace_t per line item of the current
 * snapshot: the one thing about a line item that changes while it serves,
 * kept here so that the snapshot is never written.
 *
 * The delivered counts of all nodes are in adserve:delivery, one field per
 * line item and metric ("{id}:imp", ...). They are read with HMGET, in
 * chunks, on the loader's connection; a reply that comes back after the
 * snapshot was swapped is dropped (indexes would not match) and the read is
 * done again at once.
 */


#include "ngx_http_adserve.h"
#include "adserve_pacing.h"


#define NGX_HTTP_ADSERVE_PACE_CHUNK   1000      /* line items per HMGET */

static const char *const  ngx_http_adserve_pace_fields[] = {
    ":imp", ":clk", ":conv", ":ads", ":opp"
};
#define NGX_HTTP_ADSERVE_PACE_NFIELDS  5


typedef struct {
    ngx_uint_t      loads;           /* the snapshot the indexes are of */
    ngx_uint_t      n;
    uint32_t        li[1];           /* n of them */
} ngx_http_adserve_pace_read_t;


static struct {
    ngx_http_adserve_main_conf_t  *amcf;
    ngx_event_t                    timer;
    ngx_uint_t                     pending;     /* HMGETs in flight */
    ngx_uint_t                     again;       /* a swap came meanwhile */
    ngx_uint_t                     refused;     /* the last read's error
                                                 * reply, said once */
    uint32_t                       next;        /* the next line item to read */
    adserve_pace_t                *paces;       /* of the current snapshot */
    adserve_pace_t                *spare;       /* the table before, reused: */
    uint32_t                       spare_n;     /* its pages are in memory */
    uint32_t                       paces_n;
} ngx_http_adserve_pacing;


static void ngx_http_adserve_pacing_tick(ngx_event_t *ev);
static ngx_int_t ngx_http_adserve_pacing_read(adserve_snapshot_t *s, uint32_t *next,
    ngx_log_t *log);


ngx_int_t
ngx_http_adserve_pacing_init(ngx_cycle_t *cycle, ngx_http_adserve_main_conf_t *amcf)
{
    ngx_memzero(&ngx_http_adserve_pacing, sizeof(ngx_http_adserve_pacing));

    ngx_http_adserve_pacing.amcf = amcf;
    ngx_http_adserve_pacing.timer.handler = ngx_http_adserve_pacing_tick;
    ngx_http_adserve_pacing.timer.log = cycle->log;
    ngx_http_adserve_pacing.timer.cancelable = 1;
    ngx_add_timer(&ngx_http_adserve_pacing.timer, amcf->pacing);

    return NGX_OK;
}


void
ngx_http_adserve_pacing_exit(void)
{
    if (ngx_http_adserve_pacing.timer.timer_set) {
        ngx_del_timer(&ngx_http_adserve_pacing.timer);
    }

    ngx_http_adserve_pacing.amcf = NULL;

    free(ngx_http_adserve_pacing.paces);
    free(ngx_http_adserve_pacing.spare);
    ngx_http_adserve_pacing.paces = NULL;
    ngx_http_adserve_pacing.spare = NULL;
}


adserve_pace_t *
ngx_http_adserve_paces(void)
{
    return ngx_http_adserve_pacing.paces;
}


ngx_int_t
ngx_http_adserve_pacing_swapped(adserve_snapshot_t *s, adserve_snapshot_t *old)
{
    ngx_event_t     *t = &ngx_http_adserve_pacing.timer;
    adserve_pace_t  *paces;
    uint32_t         n = s->nlis ? s->nlis : 1, unknown;

    /* the table before the current one, when it is large enough: writing
     * fresh pages costs a worker more than filling the table (about 14 ms
     * at 100,000 line items on this project's machine) */
    if (ngx_http_adserve_pacing.spare_n >= n) {
        paces = ngx_http_adserve_pacing.spare;
        n = ngx_http_adserve_pacing.spare_n;

    } else {
        paces = malloc(n * sizeof(adserve_pace_t));
        if (paces == NULL) {
            return NGX_ERROR;
        }
        free(ngx_http_adserve_pacing.spare);
    }

    unknown = adserve_paces_fill(s, old, ngx_http_adserve_pacing.paces, paces);

    ngx_http_adserve_pacing.spare = ngx_http_adserve_pacing.paces;
    ngx_http_adserve_pacing.spare_n = ngx_http_adserve_pacing.paces_n;
    ngx_http_adserve_pacing.paces = paces;
    ngx_http_adserve_pacing.paces_n = n;

    if (ngx_http_adserve_pacing.amcf == NULL || unknown == 0) {
        return NGX_OK;
    }

    /* a paced line item without a pace serves nothing: read now */
    if (ngx_http_adserve_pacing.pending) {
        ngx_http_adserve_pacing.again = 1;

    } else {
        if (t->timer_set) {
            ngx_del_timer(t);
        }
        ngx_add_timer(t, 1);
    }

    return NGX_OK;
}


static void
ngx_http_adserve_pacing_reply(redisAsyncContext *ac, void *reply, void *data)
{
    ngx_http_adserve_pace_read_t  *rd = data;
    ngx_http_adserve_loader_t     *ld;
    adserve_delivered_t            d;
    adserve_snapshot_t            *s;
    redisReply                    *r = reply, *v;
    uint64_t                      *f[NGX_HTTP_ADSERVE_PACE_NFIELDS];
    ngx_uint_t                     i, k;
    double                         horizon;
    long long                      n;
    time_t                         now;

    (void) ac;

    f[0] = &d.imp; f[1] = &d.clk; f[2] = &d.conv; f[3] = &d.ads; f[4] = &d.opp;

    if (ngx_http_adserve_pacing.amcf == NULL) {
        ngx_free(rd);                     /* the worker is exiting */
        return;
    }

    ngx_http_adserve_pacing.pending--;
    ld = ngx_http_adserve_pacing.amcf->loader;
    s = ld->snapshot;

    /* no reply (the connection went) or a refusal (WRONGTYPE, LOADING,
     * NOPERM): this tick's read ends, and the next tick reads again. Only
     * a snapshot swapped meanwhile reads again at once: a refusal read
     * again 1 ms later was a thousand HMGETs a second, each refused. */
    if (r == NULL || r->type != REDIS_REPLY_ARRAY
        || r->elements != rd->n * NGX_HTTP_ADSERVE_PACE_NFIELDS)
    {
        if (r != NULL && r->type == REDIS_REPLY_ERROR && !ngx_http_adserve_pacing.refused) {
            ngx_log_error(NGX_LOG_WARN, ngx_cycle->log, 0,
                          NGX_HTTP_ADSERVE_LOG "pacing: the delivery counts were not "
                          "read: %*s", (size_t) r->len, r->str);
        }

        ngx_http_adserve_pacing.refused = (r != NULL && r->type == REDIS_REPLY_ERROR);
        s = NULL;                         /* done asks for no next chunk */
        goto done;
    }

    ngx_http_adserve_pacing.refused = 0;

    if (s == NULL || rd->loads != ld->loads) {
        ngx_http_adserve_pacing.again = 1;
        goto done;
    }

    now = ngx_http_adserve_clock();
    horizon = (double) ngx_http_adserve_pacing.amcf->pacing / 1000;

    for (i = 0; i < rd->n; i++) {
        for (k = 0; k < NGX_HTTP_ADSERVE_PACE_NFIELDS; k++) {
            v = r->element[i * NGX_HTTP_ADSERVE_PACE_NFIELDS + k];
            n = v->type == REDIS_REPLY_STRING ? strtoll(v->str, NULL, 10) : 0;

            /* (a count taken below 0 by hand reads 0, not 2^64 less it:
             * that would stop the line item as if its goal were met) */
            *f[k] = n > 0 ? (uint64_t) n : 0;
        }

        adserve_pace_update(&s->lis[rd->li[i]], &ngx_http_adserve_pacing.paces[rd->li[i]],
                            &d, now, horizon);
    }

done:

    ngx_free(rd);

    /* the next chunk on this reply: one HMGET in flight at a time, so a
     * read of 100,000 line items is many short slices of the event loop,
     * not one long one when all the replies come at once */
    if (!ngx_http_adserve_pacing.again && !ngx_exiting && s != NULL
        && ngx_http_adserve_pacing_read(s, &ngx_http_adserve_pacing.next,
                                        ngx_cycle->log) == NGX_OK)
    {
        return;
    }

    if (ngx_http_adserve_pacing.pending == 0 && ngx_http_adserve_pacing.again) {
        ngx_http_adserve_pacing.again = 0;
        if (ngx_http_adserve_pacing.timer.timer_set) {
            ngx_del_timer(&ngx_http_adserve_pacing.timer);
        }
        ngx_add_timer(&ngx_http_adserve_pacing.timer, 1);
    }
}


/* one HMGET of up to a chunk of line items, from index *next on */
static ngx_int_t
ngx_http_adserve_pacing_read(adserve_snapshot_t *s, uint32_t *next, ngx_log_t *log)
{
    ngx_http_adserve_loader_t     *ld = ngx_http_adserve_pacing.amcf->loader;
    ngx_http_adserve_pace_read_t  *rd;
    adserve_li_t                  *li;
    const char                   **argv;
    size_t                        *argvlen;
    u_char                        *buf, *p;
    ngx_uint_t                     n, k, argc;
    ngx_int_t                      rc;

    rd = ngx_alloc(sizeof(ngx_http_adserve_pace_read_t)
                   + NGX_HTTP_ADSERVE_PACE_CHUNK * sizeof(uint32_t), log);
    argc = 2 + NGX_HTTP_ADSERVE_PACE_CHUNK * NGX_HTTP_ADSERVE_PACE_NFIELDS;
    argv = ngx_alloc(argc * (sizeof(char *) + sizeof(size_t)), log);
    buf = ngx_alloc(NGX_HTTP_ADSERVE_PACE_CHUNK * NGX_HTTP_ADSERVE_PACE_NFIELDS
                    * (ADSERVE_TOKEN_ID_MAX + 5), log);

    if (rd == NULL || argv == NULL || buf == NULL) {
        rc = NGX_ERROR;
        goto failed;
    }

    argvlen = (size_t *) (argv + argc);
    argv[0] = "HMGET";
    argvlen[0] = 5;
    argv[1] = ADSERVE_KEY_DELIVERY;
    argvlen[1] = sizeof(ADSERVE_KEY_DELIVERY) - 1;
    argc = 2;
    p = buf;
    n = 0;

    for ( /* void */ ; *next < s->nlis && n < NGX_HTTP_ADSERVE_PACE_CHUNK; (*next)++) {
        li = &s->lis[*next];

        if (!li->paced && li->cost_type == ADSERVE_COST_CPM) {
            continue;
        }

        for (k = 0; k < NGX_HTTP_ADSERVE_PACE_NFIELDS; k++) {
            argv[argc] = (char *) p;
            p = ngx_cpymem(p, li->id.data, li->id.len);
            p = ngx_cpymem(p, ngx_http_adserve_pace_fields[k],
                           ngx_strlen(ngx_http_adserve_pace_fields[k]));
            argvlen[argc] = p - (u_char *) argv[argc];
            argc++;
        }

        rd->li[n++] = *next;
    }

    if (n == 0) {
        rc = NGX_DONE;
        goto failed;
    }

    rd->n = n;
    rd->loads = ld->loads;

    rc = ngx_http_adserve_redis_command(&ld->redis, ngx_http_adserve_pacing_reply, rd,
                                        (int) argc, argv, argvlen);
    if (rc != NGX_OK) {
        goto failed;
    }

    ngx_http_adserve_pacing.pending++;
    ngx_free(argv);
    ngx_free(buf);

    return NGX_OK;

failed:

    ngx_free(rd);
    ngx_free(argv);
    ngx_free(buf);

    return rc;
}


static void
ngx_http_adserve_pacing_tick(ngx_event_t *ev)
{
    ngx_http_adserve_main_conf_t  *amcf = ngx_http_adserve_pacing.amcf;
    adserve_snapshot_t            *s;
    adserve_li_t                  *li;
    adserve_pace_t                *p;
    uint32_t                       i;
    time_t                         now;

    if (amcf == NULL || ngx_exiting) {
        return;
    }

    ngx_add_timer(ev, amcf->pacing);

    s = amcf->loader->snapshot;
    if (s == NULL || ngx_http_adserve_pacing.pending) {
        return;
    }

    /* this worker's opportunities, for every node's pacing */
    now = ngx_http_adserve_clock();

    for (i = 0; i < s->nlis; i++) {
        li = &s->lis[i];
        p = &ngx_http_adserve_pacing.paces[i];
        if (li->paced && p->opp > p->pushed) {
            ngx_http_adserve_count(amcf->events, now, ADSERVE_DIM_LINE_ITEM,
                                   &li->id, li->hash, NGX_HTTP_ADSERVE_M_OPPORTUNITIES,
                                   p->opp - p->pushed);
            p->pushed = p->opp;
        }
    }

    /* the first chunk; each reply sends the next */
    ngx_http_adserve_pacing.next = 0;
    (void) ngx_http_adserve_pacing_read(s, &ngx_http_adserve_pacing.next, ev->log);
}
