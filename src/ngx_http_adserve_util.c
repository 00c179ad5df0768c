
/*
 * The helpers every handler of the module shares: the clock (with the test
 * clock of adserve_test_clock), the worker's loader, the request body as
 * one buffer, response headers and bodies, JSON strings.
 */


#include "ngx_http_adserve.h"

#include <time.h>


static ngx_str_t  ngx_http_adserve_json_type = ngx_string("application/json");
static ngx_str_t  ngx_http_adserve_xml_type = ngx_string("application/xml");



/* ---- the clock --------------------------------------------------------- */

static ngx_str_t  ngx_http_adserve_clock_header = ngx_string("X-Adserve-Clock");

/* the latest test clock seen by this worker: what its timers go by */
static time_t  ngx_http_adserve_test_now;


time_t
ngx_http_adserve_now(ngx_http_request_t *r)
{
    ngx_http_adserve_main_conf_t  *amcf;
    ngx_list_part_t               *part;
    ngx_table_elt_t               *h;
    ngx_uint_t                     i;
    time_t                         t;

    amcf = ngx_http_get_module_main_conf(r, ngx_http_adserve_module);

    if (!amcf->test_clock) {
        return ngx_time();
    }

    part = &r->headers_in.headers.part;
    h = part->elts;

    for (i = 0; /* void */; i++) {
        if (i >= part->nelts) {
            if (part->next == NULL) {
                break;
            }
            part = part->next;
            h = part->elts;
            i = 0;
        }

        if (h[i].key.len == ngx_http_adserve_clock_header.len
            && ngx_strncasecmp(h[i].key.data, ngx_http_adserve_clock_header.data,
                               h[i].key.len) == 0)
        {
            t = ngx_atotm(h[i].value.data, h[i].value.len);
            if (t != NGX_ERROR) {
                if (t > ngx_http_adserve_test_now) {
                    ngx_http_adserve_test_now = t;
                }
                return t;
            }
        }
    }

    return ngx_http_adserve_clock();
}


time_t
ngx_http_adserve_clock(void)
{
    return ngx_http_adserve_test_now ? ngx_http_adserve_test_now : ngx_time();
}


/* ---- requests and responses ------------------------------------------- */

ngx_http_adserve_loader_t *
ngx_http_adserve_loader(ngx_http_request_t *r)
{
    ngx_http_adserve_main_conf_t  *amcf;

    amcf = ngx_http_get_module_main_conf(r, ngx_http_adserve_module);

    return amcf->loader;
}


/* The body as one mutable buffer: the JSON scanner unescapes in place. */
ngx_int_t
ngx_http_adserve_body(ngx_http_request_t *r, u_char **start, size_t *len)
{
    ngx_http_request_body_t  *rb = r->request_body;
    ngx_chain_t              *cl;
    u_char                   *p;
    size_t                    n = 0;

    if (rb == NULL || rb->bufs == NULL) {
        *start = NULL;
        *len = 0;
        return NGX_OK;
    }

    if (rb->temp_file != NULL) {
        /* only when client_body_buffer_size < client_max_body_size */
        return NGX_HTTP_REQUEST_ENTITY_TOO_LARGE;
    }

    if (rb->bufs->next == NULL) {
        *start = rb->bufs->buf->pos;
        *len = rb->bufs->buf->last - rb->bufs->buf->pos;
        return NGX_OK;
    }

    for (cl = rb->bufs; cl; cl = cl->next) {
        n += cl->buf->last - cl->buf->pos;
    }

    p = ngx_pnalloc(r->pool, n);
    if (p == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    *start = p;
    *len = n;

    for (cl = rb->bufs; cl; cl = cl->next) {
        p = ngx_cpymem(p, cl->buf->pos, cl->buf->last - cl->buf->pos);
    }

    return NGX_OK;
}


/* A GET (or HEAD) location's start: NGX_OK, or what to answer (405, or
 * discarding the body's failure). */
ngx_int_t
ngx_http_adserve_get_only(ngx_http_request_t *r)
{
    if (!(r->method & (NGX_HTTP_GET|NGX_HTTP_HEAD))) {
        return NGX_HTTP_NOT_ALLOWED;
    }

    return ngx_http_discard_request_body(r);
}


ngx_int_t
ngx_http_adserve_send(ngx_http_request_t *r, ngx_uint_t status, u_char *body,
    size_t len)
{
    return ngx_http_adserve_send_as(r, status, body, len, &ngx_http_adserve_json_type);
}


ngx_int_t
ngx_http_adserve_send_xml(ngx_http_request_t *r, u_char *body, size_t len)
{
    return ngx_http_adserve_send_as(r, NGX_HTTP_OK, body, len, &ngx_http_adserve_xml_type);
}


ngx_int_t
ngx_http_adserve_send_as(ngx_http_request_t *r, ngx_uint_t status, u_char *body,
    size_t len, ngx_str_t *type)
{
    ngx_buf_t    *b;
    ngx_chain_t   out;
    ngx_int_t     rc;

    r->headers_out.status = status;
    r->headers_out.content_length_n = len;

    if (len == 0) {
        r->header_only = 1;
        return ngx_http_send_header(r);
    }

    r->headers_out.content_type = *type;
    r->headers_out.content_type_len = type->len;

    b = ngx_calloc_buf(r->pool);
    if (b == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    b->pos = body;
    b->last = body + len;
    b->memory = 1;
    b->last_buf = (r == r->main);
    b->last_in_chain = 1;

    rc = ngx_http_send_header(r);
    if (rc == NGX_ERROR || rc > NGX_OK || r->header_only) {
        return rc;
    }

    out.buf = b;
    out.next = NULL;

    return ngx_http_output_filter(r, &out);
}


ngx_int_t
ngx_http_adserve_zone_name(ngx_conf_t *cf, ngx_str_t *name, const char *prefix, uint64_t layout)
{
    size_t  len = ngx_strlen(prefix);

    name->data = ngx_pnalloc(cf->pool, len + 1 + NGX_INT64_LEN);
    if (name->data == NULL) {
        return NGX_ERROR;
    }

    name->len = ngx_sprintf(name->data, "%s_%uxL", prefix, layout) - name->data;

    return NGX_OK;
}


/* A zone that holds one zeroed table of size bytes (its size waits in
 * shm_zone->data until the zone is made): the table of the previous cycle
 * at a reload, or of the zone as found, else a new one. */
static ngx_int_t
ngx_http_adserve_table_init_zone(ngx_shm_zone_t *shm_zone, void *data)
{
    ngx_slab_pool_t  *shpool = (ngx_slab_pool_t *) shm_zone->shm.addr;
    size_t            size = (size_t) (uintptr_t) shm_zone->data;

    if (data != NULL) {
        shm_zone->data = data;
        return NGX_OK;
    }

    if (shm_zone->shm.exists) {
        shm_zone->data = shpool->data;
        return NGX_OK;
    }

    shpool->data = ngx_slab_calloc(shpool, size);
    if (shpool->data == NULL) {
        return NGX_ERROR;
    }

    shm_zone->data = shpool->data;

    return NGX_OK;
}


ngx_shm_zone_t *
ngx_http_adserve_table_add(ngx_conf_t *cf, const char *name, size_t size)
{
    ngx_shm_zone_t  *shm_zone;
    ngx_str_t        zname;

    zname.data = (u_char *) name;
    zname.len = ngx_strlen(name);

    /* the slab pool's own pages, and the table rounded up to pages */
    shm_zone = ngx_shared_memory_add(cf, &zname,
                                     8 * ngx_pagesize + ngx_align(size, ngx_pagesize),
                                     &ngx_http_adserve_module);
    if (shm_zone == NULL) {
        return NULL;
    }

    shm_zone->init = ngx_http_adserve_table_init_zone;
    shm_zone->data = (void *) (uintptr_t) size;
    shm_zone->noreuse = 0;

    return shm_zone;
}


ngx_table_elt_t *
ngx_http_adserve_header(ngx_http_request_t *r, const char *name, ngx_str_t *value)
{
    ngx_table_elt_t  *h;

    h = ngx_list_push(&r->headers_out.headers);
    if (h == NULL) {
        return NULL;
    }

    h->hash = 1;
    h->key.data = (u_char *) name;
    h->key.len = ngx_strlen(name);
    h->value = *value;

    return h;
}


u_char *
ngx_http_adserve_json_str(u_char *p, const adserve_str_t *s)
{
    *p++ = '"';
    p = (u_char *) ngx_escape_json(p, (u_char *) s->data, s->len);
    *p++ = '"';

    return p;
}


static double
ngx_http_adserve_since_ms(clockid_t clock, const struct timespec *t0)
{
    struct timespec  t1;

    (void) clock_gettime(clock, &t1);

    return (double) (t1.tv_sec - t0->tv_sec) * 1000
           + (double) (t1.tv_nsec - t0->tv_nsec) / 1e6;
}


/* Milliseconds since t0 (CLOCK_MONOTONIC), for the log. */
double
ngx_http_adserve_elapsed_ms(const struct timespec *t0)
{
    return ngx_http_adserve_since_ms(CLOCK_MONOTONIC, t0);
}


void
ngx_http_adserve_step_start(ngx_http_adserve_step_t *st)
{
    (void) clock_gettime(CLOCK_MONOTONIC, &st->wall);
    (void) clock_gettime(CLOCK_THREAD_CPUTIME_ID, &st->cpu);
}


void
ngx_http_adserve_step_end(const ngx_http_adserve_step_t *st,
    ngx_http_adserve_longest_t *longest)
{
    double  wall, cpu;

    wall = ngx_http_adserve_since_ms(CLOCK_MONOTONIC, &st->wall);
    cpu = ngx_http_adserve_since_ms(CLOCK_THREAD_CPUTIME_ID, &st->cpu);

    longest->wall_ms = ngx_max(longest->wall_ms, wall);
    longest->cpu_ms = ngx_max(longest->cpu_ms, cpu);
}


void
ngx_http_adserve_finish_posted(ngx_http_request_t *r)
{
    ngx_http_adserve_ctx_t  *ctx;

    ctx = ngx_http_get_module_ctx(r, ngx_http_adserve_module);

    r->write_event_handler = ngx_http_request_empty_handler;
    ngx_http_finalize_request(r, ctx->finish(r));
}


void
ngx_http_adserve_no_body(ngx_http_request_t *sr)
{
    sr->request_body = NULL;
    sr->headers_in.content_length = NULL;
    sr->headers_in.content_length_n = -1;
    sr->headers_in.chunked = 0;
}
