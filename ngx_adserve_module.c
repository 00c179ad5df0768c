
/*
 * adserve: an ad server inside nginx. This file is the module: its
 * directives and configuration, the status location, and the life of each
 * worker process (what it starts at init and stops at exit).
 *
 * The rest is in src/: serving (_serve.c) and the explainer (_explain.c)
 * from the node's snapshot (_zone.c), which the loader (_loader.c) keeps
 * fresh from Redis through the hiredis adapter (_redis.c); frequency caps (_caps.c),
 * pacing (_pacing.c), counters and events (_events.c, _track.c),
 * recommendation histories and the node's copy of them (_history.c,
 * _hzone.c), what the node did lately (_once.c); the helpers every handler
 * shares (_util.c). None of them calls back into this
 * file: a request is resumed through the callbacks it was given.
 *
 * Directives (main):  adserve_redis, adserve_redis_write, adserve_redis_sentinel,
 *                     adserve_redis_timeout,
 *                     adserve_snapshot_zone, adserve_refresh,
 *                     adserve_ad_log_key, adserve_public_url,
 *                     adserve_flush_interval, adserve_pacing_interval,
 *                     adserve_cap_timeout, adserve_event_buffer,
 *                     adserve_event_stream_max, adserve_event_ttl,
 *                     adserve_conversion_ttl, adserve_test_clock,
 *                     adserve_rec_snapshots, adserve_rec_services,
 *                     adserve_rec_timeout, adserve_rtb_location,
 *                     adserve_notice_location, adserve_history_zone,
 *                     adserve_history_refresh, adserve_history_delay
 * Directives (location): adserve_ad, adserve_vast, adserve_event, adserve_explain,
 *                        adserve_status, adserve_metrics
 */


#include "ngx_http_adserve.h"

#if (NGX_THREADS)
#include <ngx_thread_pool.h>
#endif




static ngx_int_t ngx_http_adserve_init(ngx_conf_t *cf);
static ngx_int_t ngx_http_adserve_init_process(ngx_cycle_t *cycle);
static void ngx_http_adserve_exit_process(ngx_cycle_t *cycle);
static void *ngx_http_adserve_create_main_conf(ngx_conf_t *cf);
static char *ngx_http_adserve_init_main_conf(ngx_conf_t *cf, void *conf);
static char *ngx_http_adserve_redis(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);
static char *ngx_http_adserve_redis_sentinel(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_http_adserve_ad(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);
static char *ngx_http_adserve_vast(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);
static char *ngx_http_adserve_status(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_http_adserve_event(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_http_adserve_explain(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_http_adserve_metrics_location(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_http_adserve_handled(ngx_conf_t *cf, ngx_http_handler_pt handler);


/* the node's snapshot zone: room for two snapshots at least (the one
 * served and the next); a few MB are the zone's own */
static char *ngx_http_adserve_zone_size(ngx_conf_t *cf, void *post, void *data);
static ngx_conf_post_handler_pt  ngx_http_adserve_zone_size_post =
    ngx_http_adserve_zone_size;


static ngx_command_t  ngx_http_adserve_commands[] = {

    { ngx_string("adserve_redis"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_http_adserve_redis,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_adserve_main_conf_t, redis),
      NULL },

    { ngx_string("adserve_redis_write"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_http_adserve_redis,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_adserve_main_conf_t, redis_write),
      NULL },

    { ngx_string("adserve_redis_sentinel"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_2MORE,
      ngx_http_adserve_redis_sentinel,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_adserve_main_conf_t, redis_write),
      NULL },

    { ngx_string("adserve_redis_timeout"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_msec_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_adserve_main_conf_t, redis_timeout),
      NULL },

    { ngx_string("adserve_snapshot_zone"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_size_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_adserve_main_conf_t, zone_size),
      &ngx_http_adserve_zone_size_post },

    { ngx_string("adserve_refresh"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_msec_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_adserve_main_conf_t, refresh),
      NULL },

    { ngx_string("adserve_ad_log_key"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_str_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_adserve_main_conf_t, key_file),
      NULL },

    { ngx_string("adserve_public_url"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_str_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_adserve_main_conf_t, public_url),
      NULL },

    { ngx_string("adserve_rec_snapshots"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_str_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_adserve_main_conf_t, rec_snapshots),
      NULL },

    { ngx_string("adserve_flush_interval"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_msec_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_adserve_main_conf_t, flush),
      NULL },

    { ngx_string("adserve_pacing_interval"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_msec_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_adserve_main_conf_t, pacing),
      NULL },

    { ngx_string("adserve_cap_timeout"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_msec_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_adserve_main_conf_t, cap_timeout),
      NULL },

    { ngx_string("adserve_rec_services"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_str_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_adserve_main_conf_t, rec_services),
      NULL },

    { ngx_string("adserve_rec_timeout"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_msec_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_adserve_main_conf_t, rec_timeout),
      NULL },

    { ngx_string("adserve_history_zone"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_size_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_adserve_main_conf_t, history_size),
      NULL },

    { ngx_string("adserve_history_refresh"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_sec_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_adserve_main_conf_t, history_refresh),
      NULL },

    { ngx_string("adserve_history_delay"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_msec_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_adserve_main_conf_t, history_delay),
      NULL },

    { ngx_string("adserve_rtb_location"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_str_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_adserve_main_conf_t, rtb_location),
      NULL },

    { ngx_string("adserve_notice_location"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_str_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_adserve_main_conf_t, notice_location),
      NULL },

    { ngx_string("adserve_event_buffer"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_num_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_adserve_main_conf_t, event_buffer),
      NULL },

    { ngx_string("adserve_event_stream_max"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_num_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_adserve_main_conf_t, stream_max),
      NULL },

    { ngx_string("adserve_event_ttl"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_sec_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_adserve_main_conf_t, event_ttl),
      NULL },

    { ngx_string("adserve_conversion_ttl"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_sec_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_adserve_main_conf_t, conversion_ttl),
      NULL },

    { ngx_string("adserve_test_clock"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_FLAG,
      ngx_conf_set_flag_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_adserve_main_conf_t, test_clock),
      NULL },

    { ngx_string("adserve_ad"),
      NGX_HTTP_LOC_CONF|NGX_CONF_NOARGS,
      ngx_http_adserve_ad,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("adserve_vast"),
      NGX_HTTP_LOC_CONF|NGX_CONF_NOARGS,
      ngx_http_adserve_vast,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("adserve_explain"),
      NGX_HTTP_LOC_CONF|NGX_CONF_NOARGS,
      ngx_http_adserve_explain,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("adserve_event"),
      NGX_HTTP_LOC_CONF|NGX_CONF_NOARGS,
      ngx_http_adserve_event,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("adserve_status"),
      NGX_HTTP_LOC_CONF|NGX_CONF_NOARGS,
      ngx_http_adserve_status,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("adserve_metrics"),
      NGX_HTTP_LOC_CONF|NGX_CONF_NOARGS,
      ngx_http_adserve_metrics_location,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

      ngx_null_command
};


static ngx_http_module_t  ngx_http_adserve_module_ctx = {
    ngx_http_adserve_add_variables,        /* preconfiguration */
    ngx_http_adserve_init,                 /* postconfiguration */

    ngx_http_adserve_create_main_conf,     /* create main configuration */
    ngx_http_adserve_init_main_conf,       /* init main configuration */

    NULL,                                  /* create server configuration */
    NULL,                                  /* merge server configuration */

    NULL,                                  /* create location configuration */
    NULL                                   /* merge location configuration */
};


ngx_module_t  ngx_http_adserve_module = {
    NGX_MODULE_V1,
    &ngx_http_adserve_module_ctx,          /* module context */
    ngx_http_adserve_commands,             /* module directives */
    NGX_HTTP_MODULE,                       /* module type */
    NULL,                                  /* init master */
    NULL,                                  /* init module */
    ngx_http_adserve_init_process,         /* init process */
    NULL,                                  /* init thread */
    NULL,                                  /* exit thread */
    ngx_http_adserve_exit_process,         /* exit process */
    NULL,                                  /* exit master */
    NGX_MODULE_V1_PADDING
};


/* ---- status ------------------------------------------------------------ */

static ngx_int_t
ngx_http_adserve_status_handler(ngx_http_request_t *r)
{
    ngx_http_adserve_main_conf_t  *amcf;
    ngx_http_adserve_loader_t  *ld = ngx_http_adserve_loader(r);
    adserve_snapshot_t         *s;
    u_char                     *body, *p;
    size_t                      len;
    ngx_int_t                   rc;

    rc = ngx_http_adserve_get_only(r);
    if (rc != NGX_OK) {
        return rc;
    }

    len = sizeof("{\"pid\":,\"redis\":\"down\",\"rev\":,\"change_id\":\"\","
                 "\"snapshot_age_ms\":,\"active_ad_units\":,\"candidates\":,"
                 "\"skipped_records\":,\"loads\":,\"full_loads\":,"
                 "\"changes_applied\":,\"load_failures\":,\"snapshot_kib\":,"
                 "\"build_ms\":,\"built\":}")
          + 14 * NGX_INT64_LEN + NGX_HTTP_ADSERVE_STREAM_ID
          + NGX_HTTP_ADSERVE_EVENTS_STATUS_LEN + NGX_HTTP_ADSERVE_ZONE_STATUS_LEN
          + NGX_HTTP_ADSERVE_HZONE_STATUS_LEN;

    body = ngx_pnalloc(r->pool, len);
    if (body == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    s = ld ? ld->snapshot : NULL;

    p = ngx_snprintf(body, len,
                     "{\"pid\":%P,\"redis\":\"%s\",\"rev\":%L,\"change_id\":\"%s\","
                     "\"snapshot_age_ms\":%L,\"active_ad_units\":%uz,"
                     "\"candidates\":%uz,\"skipped_records\":%uz,"
                     "\"loads\":%ui,\"full_loads\":%ui,\"changes_applied\":%ui,"
                     "\"load_failures\":%ui,\"snapshot_kib\":%uz,\"build_ms\":%ui,"
                     "\"built\":%ui",
                     ngx_pid, (ld && ld->redis.connected) ? "up" : "down",
                     s ? (int64_t) s->rev : (int64_t) -1,
                     ld ? ld->change_id : "",
                     s ? (int64_t) (ngx_current_msec - ld->loaded_at) : (int64_t) -1,
                     s ? s->stats.active_units : 0, s ? s->stats.candidates : 0,
                     s ? s->stats.skipped : 0,
                     ld ? ld->loads : 0, ld ? ld->full_loads : 0,
                     ld ? ld->changes : 0, ld ? ld->failures : 0,
                     s ? s->chain_bytes / 1024 : 0,
                     s ? (ngx_uint_t) s->stats.build_ms : 0, ld ? ld->built : 0);

    amcf = ngx_http_get_module_main_conf(r, ngx_http_adserve_module);
    if (amcf->events != NULL) {
        p = ngx_http_adserve_events_status(amcf->events, p, body + len - 1);
    }

    if (amcf->zone != NULL) {
        p = ngx_http_adserve_zone_status(amcf->zone, p, body + len - 1);
    }

    p = ngx_http_adserve_hzone_status(p, body + len - 1);
    *p++ = '}';

    return ngx_http_adserve_send(r, NGX_HTTP_OK, body, p - body);
}


/* ---- configuration ----------------------------------------------------- */

static void *
ngx_http_adserve_create_main_conf(ngx_conf_t *cf)
{
    ngx_http_adserve_main_conf_t  *amcf;

    amcf = ngx_pcalloc(cf->pool, sizeof(ngx_http_adserve_main_conf_t));
    if (amcf == NULL) {
        return NULL;
    }

    amcf->redis_timeout = NGX_CONF_UNSET_MSEC;
    amcf->refresh = NGX_CONF_UNSET_MSEC;
    amcf->flush = NGX_CONF_UNSET_MSEC;
    amcf->pacing = NGX_CONF_UNSET_MSEC;
    amcf->cap_timeout = NGX_CONF_UNSET_MSEC;
    amcf->rec_timeout = NGX_CONF_UNSET_MSEC;
    amcf->event_buffer = NGX_CONF_UNSET_UINT;
    amcf->stream_max = NGX_CONF_UNSET_UINT;
    amcf->event_ttl = NGX_CONF_UNSET;
    amcf->conversion_ttl = NGX_CONF_UNSET;
    amcf->test_clock = NGX_CONF_UNSET;
    amcf->zone_size = NGX_CONF_UNSET_SIZE;
    amcf->history_size = NGX_CONF_UNSET_SIZE;
    amcf->history_refresh = NGX_CONF_UNSET;
    amcf->history_delay = NGX_CONF_UNSET_MSEC;

    return amcf;
}


static char *
ngx_http_adserve_zone_size(ngx_conf_t *cf, void *post, void *data)
{
    size_t  *size = data;

    if (*size < 8 * 1024 * 1024) {
        return "must be 8m or more";
    }

    return NGX_CONF_OK;
}


static char *
ngx_http_adserve_load_keys(ngx_conf_t *cf, ngx_http_adserve_main_conf_t *amcf)
{
    ngx_file_t        file;
    ngx_file_info_t   fi;
    u_char           *text;
    ssize_t           n;
    char              err[128];

    if (ngx_conf_full_name(cf->cycle, &amcf->key_file, 1) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    ngx_memzero(&file, sizeof(ngx_file_t));
    file.name = amcf->key_file;
    file.log = cf->log;

    file.fd = ngx_open_file(file.name.data, NGX_FILE_RDONLY, NGX_FILE_OPEN, 0);
    if (file.fd == NGX_INVALID_FILE) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, ngx_errno,
                           "adserve_ad_log_key: cannot open \"%V\"", &file.name);
        return NGX_CONF_ERROR;
    }

    if (ngx_fd_info(file.fd, &fi) == NGX_FILE_ERROR || ngx_file_size(&fi) > 4096) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "adserve_ad_log_key: \"%V\" is not a key file", &file.name);
        ngx_close_file(file.fd);
        return NGX_CONF_ERROR;
    }

    text = ngx_pnalloc(cf->temp_pool, ngx_file_size(&fi) + 1);
    n = text ? ngx_read_file(&file, text, ngx_file_size(&fi), 0) : NGX_ERROR;
    ngx_close_file(file.fd);

    if (n == NGX_ERROR) {
        return NGX_CONF_ERROR;
    }

    amcf->tokens = ngx_pcalloc(cf->pool, sizeof(adserve_tokens_t));
    if (amcf->tokens == NULL) {
        return NGX_CONF_ERROR;
    }

    if (adserve_tokens_parse(amcf->tokens, (char *) text, n, err, sizeof(err)) != 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "adserve_ad_log_key: \"%V\": %s", &file.name, err);
        return NGX_CONF_ERROR;
    }

    ngx_explicit_memzero(text, n);

    return NGX_CONF_OK;
}


static char *
ngx_http_adserve_init_main_conf(ngx_conf_t *cf, void *conf)
{
    ngx_http_adserve_main_conf_t  *amcf = conf;

    ngx_conf_init_msec_value(amcf->redis_timeout, 1000);
    ngx_conf_init_msec_value(amcf->refresh, 100);
    ngx_conf_init_msec_value(amcf->flush, 1000);
    ngx_conf_init_msec_value(amcf->pacing, 5000);
    ngx_conf_init_msec_value(amcf->cap_timeout, 20);
    ngx_conf_init_msec_value(amcf->rec_timeout, 100);

    if (amcf->rec_services.len == 0) {
        ngx_str_set(&amcf->rec_services, "/_adserve/rec/");
    }

    if (amcf->rec_services.data[0] != '/'
        || amcf->rec_services.data[amcf->rec_services.len - 1] != '/')
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "adserve_rec_services must be a path that begins and ends with /");
        return NGX_CONF_ERROR;
    }

    if (amcf->rec_timeout < 1 || amcf->rec_timeout > 10000) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "adserve_rec_timeout must be between 1ms and 10s");
        return NGX_CONF_ERROR;
    }

    /* external demand's locations (README "External demand") */
    if (amcf->rtb_location.len == 0) {
        ngx_str_set(&amcf->rtb_location, "/_adserve/rtb");
    }

    if (amcf->notice_location.len == 0) {
        ngx_str_set(&amcf->notice_location, "/_adserve/notice");
    }

    if (amcf->rtb_location.data[0] != '/' || amcf->notice_location.data[0] != '/') {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "adserve_rtb_location and adserve_notice_location must be paths");
        return NGX_CONF_ERROR;
    }
    ngx_conf_init_uint_value(amcf->event_buffer, 16384);
    ngx_conf_init_uint_value(amcf->stream_max, 1000000);
    ngx_conf_init_value(amcf->event_ttl, 86400);
    ngx_conf_init_value(amcf->conversion_ttl, 30 * 86400);
    ngx_conf_init_value(amcf->test_clock, 0);
    ngx_conf_init_size_value(amcf->zone_size, 512 * 1024 * 1024);
    /* 32 MB: the histories of some 17,000 users */
    ngx_conf_init_size_value(amcf->history_size, 32 * 1024 * 1024);
    ngx_conf_init_value(amcf->history_refresh, 2);
    ngx_conf_init_msec_value(amcf->history_delay, 1000);

    if (amcf->history_refresh < 0 || amcf->history_refresh > 3600) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "adserve_history_refresh must be between 0 (off) and 1h");
        return NGX_CONF_ERROR;
    }

    if (amcf->history_delay > 10000) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "adserve_history_delay must be between 0 (off) and 10s");
        return NGX_CONF_ERROR;
    }

    if (amcf->flush > 1000 || amcf->flush < 10) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "adserve_flush_interval must be between 10ms and 1s");
        return NGX_CONF_ERROR;
    }

    if (amcf->pacing > 10000 || amcf->pacing < 100) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "adserve_pacing_interval must be between 100ms and 10s");
        return NGX_CONF_ERROR;
    }

    if (amcf->event_buffer < 16 || amcf->event_buffer > 1048576) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "adserve_event_buffer must be between 16 and 1048576");
        return NGX_CONF_ERROR;
    }

    if (!amcf->serving && !amcf->tracking) {
        if (amcf->metrics_location) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "\"adserve_metrics\" counts what \"adserve_ad\" and "
                               "\"adserve_event\" locations do: there is none");
            return NGX_CONF_ERROR;
        }

        return NGX_CONF_OK;
    }

    if (amcf->public_url.len == 0 && amcf->serving) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"adserve_ad\" needs \"adserve_public_url\" in the "
                           "http block (where impression and click URLs point)");
        return NGX_CONF_ERROR;
    }

    if (amcf->public_url.len
        && !adserve_public_url_ok((char *) amcf->public_url.data, amcf->public_url.len))
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "adserve_public_url: \"%V\" is not an http(s) URL "
                           "without a trailing slash, quotes, <, >, & or spaces",
                           &amcf->public_url);
        return NGX_CONF_ERROR;
    }

    if (amcf->redis_write.sentinels != NULL && amcf->redis_write.host != NULL) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"adserve_redis_write\" and \"adserve_redis_sentinel\" "
                           "both name the primary: keep one");
        return NGX_CONF_ERROR;
    }

    if (amcf->redis.host == NULL) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"adserve_ad\" and \"adserve_event\" need "
                           "\"adserve_redis\" in the http block");
        return NGX_CONF_ERROR;
    }

    if (amcf->key_file.data == NULL) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"adserve_ad\" and \"adserve_event\" need "
                           "\"adserve_ad_log_key\" in the http block");
        return NGX_CONF_ERROR;
    }

#if (NGX_THREADS)
    /* snapshot builds run in the "default" pool: 32 threads unless the
     * configuration declares it with "thread_pool default threads=N" */
    if (ngx_thread_pool_add(cf, NULL) == NULL) {
        return NGX_CONF_ERROR;
    }
#endif

    /* one snapshot for the node, which a reload's workers find as it was */
    amcf->zone = ngx_http_adserve_zone_add(cf, amcf->zone_size);
    if (amcf->zone == NULL) {
        return NGX_CONF_ERROR;
    }

    /* and its counters, which a reload keeps too */
    amcf->metrics = ngx_http_adserve_metrics_add(cf);
    if (amcf->metrics == NULL) {
        return NGX_CONF_ERROR;
    }

    /* and what it did lately (billing notices), which a reload keeps too */
    amcf->once = ngx_http_adserve_once_add(cf);
    if (amcf->once == NULL) {
        return NGX_CONF_ERROR;
    }

    /* and its copy of users' histories; 0 or a refresh of 0: none */
    if (amcf->history_size > 0 && amcf->history_refresh > 0) {
        amcf->history = ngx_http_adserve_hzone_add(cf, amcf->history_size);
        if (amcf->history == NULL) {
            return NGX_CONF_ERROR;
        }
    }

    return ngx_http_adserve_load_keys(cf, amcf);
}


static ngx_int_t
ngx_http_adserve_init(ngx_conf_t *cf)
{
    ngx_http_handler_pt           *h;
    ngx_http_core_main_conf_t     *cmcf;
    ngx_http_adserve_main_conf_t  *amcf;

    amcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_adserve_module);
    if (!amcf->serving && !amcf->tracking) {
        return NGX_OK;
    }

    ngx_http_adserve_splice_init();

    if (ngx_http_adserve_rec_init(cf) != NGX_OK) {
        return NGX_ERROR;
    }

    cmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_core_module);

    h = ngx_array_push(&cmcf->phases[NGX_HTTP_REWRITE_PHASE].handlers);
    if (h == NULL) {
        return NGX_ERROR;
    }

    *h = ngx_http_adserve_preflight_handler;

    h = ngx_array_push(&cmcf->phases[NGX_HTTP_LOG_PHASE].handlers);
    if (h == NULL) {
        return NGX_ERROR;
    }

    *h = ngx_http_adserve_metrics_log;

    return NGX_OK;
}


/* adserve_redis and adserve_redis_write: an address into the member at
 * cmd->offset */
static char *
ngx_http_adserve_redis(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_adserve_redis_t  *rd = (ngx_http_adserve_redis_t *)
                                    ((u_char *) conf + cmd->offset);
    ngx_str_t                 *value = cf->args->elts;
    ngx_int_t                  rc;
    char                      *err = NULL;

    if (rd->host != NULL) {
        return "is duplicate";
    }

    rc = ngx_http_adserve_redis_parse_addr(cf, &value[1], rd, &err);

    if (rc == NGX_DECLINED) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "%V: \"%V\": %s; it takes \"IP:port\", "
                           "\"[IPv6]:port\" or \"unix:/path\"",
                           &cmd->name, &value[1], err);
        return NGX_CONF_ERROR;
    }

    return rc == NGX_OK ? NGX_CONF_OK : NGX_CONF_ERROR;
}


/*
 * adserve_redis_sentinel name IP:port [IP:port ...]: the primary (events,
 * caps, histories) is the one these sentinels name for the master "name",
 * asked again after every lost connection (README "Many nodes"). The
 * snapshot is still read from adserve_redis: a replica near the node,
 * which the sentinels repoint at a failover.
 */
static char *
ngx_http_adserve_redis_sentinel(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_adserve_redis_t  *rd = (ngx_http_adserve_redis_t *)
                                    ((u_char *) conf + cmd->offset);
    ngx_http_adserve_redis_t  *s;
    ngx_str_t                 *value = cf->args->elts;
    ngx_uint_t                 i;
    ngx_int_t                  rc;
    char                      *err = NULL;
    u_char                    *p;

    if (rd->sentinels != NULL) {
        return "is duplicate";
    }

    if (value[1].len == 0 || value[1].len > 255) {
        return "needs the master's name first";
    }

    rd->sentinels = ngx_array_create(cf->pool, cf->args->nelts - 2,
                                     sizeof(ngx_http_adserve_redis_t));
    if (rd->sentinels == NULL) {
        return NGX_CONF_ERROR;
    }

    for (i = 2; i < cf->args->nelts; i++) {
        s = ngx_array_push(rd->sentinels);
        if (s == NULL) {
            return NGX_CONF_ERROR;
        }

        ngx_memzero(s, sizeof(ngx_http_adserve_redis_t));

        rc = ngx_http_adserve_redis_parse_addr(cf, &value[i], s, &err);

        if (rc == NGX_DECLINED) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "%V: \"%V\": %s; a sentinel is \"IP:port\" or "
                               "\"[IPv6]:port\"", &cmd->name, &value[i], err);
            return NGX_CONF_ERROR;
        }

        if (rc != NGX_OK) {
            return NGX_CONF_ERROR;
        }
    }

    /* NUL-terminated: an argument of SENTINEL get-master-addr-by-name */
    rd->master.len = value[1].len;
    rd->master.data = ngx_pnalloc(cf->pool, value[1].len + 1);
    if (rd->master.data == NULL) {
        return NGX_CONF_ERROR;
    }
    (void) ngx_cpystrn(rd->master.data, value[1].data, value[1].len + 1);

    /* what the outage's log lines name */
    p = ngx_pnalloc(cf->pool, value[1].len + sizeof("the primary of \"\" (Sentinel)"));
    if (p == NULL) {
        return NGX_CONF_ERROR;
    }
    rd->addr.data = p;
    rd->addr.len = ngx_sprintf(p, "the primary of \"%V\" (Sentinel)", &value[1]) - p;

    return NGX_CONF_OK;
}


/* adserve_ad and adserve_explain: the tagid is what follows the prefix, so
 * a prefix location that ends with "/" */
static char *
ngx_http_adserve_tagid_location(ngx_conf_t *cf, ngx_http_handler_pt handler)
{
    ngx_http_core_loc_conf_t  *clcf;

    clcf = ngx_http_conf_get_module_loc_conf(cf, ngx_http_core_module);

#if (NGX_PCRE)
    if (clcf->regex != NULL || clcf->named || clcf->name.len == 0
        || clcf->name.data[clcf->name.len - 1] != '/')
#else
    if (clcf->named || clcf->name.len == 0
        || clcf->name.data[clcf->name.len - 1] != '/')
#endif
    {
        return "needs a prefix location that ends with \"/\"";
    }

    clcf->handler = handler;

    return NGX_CONF_OK;
}


/* adserve_ad and adserve_vast: a serving location (the worker loads
 * snapshots for it) */
static char *
ngx_http_adserve_serving_location(ngx_conf_t *cf, ngx_http_handler_pt handler)
{
    ngx_http_adserve_main_conf_t  *amcf;

    amcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_adserve_module);
    amcf->serving = 1;

    return ngx_http_adserve_tagid_location(cf, handler);
}


static char *
ngx_http_adserve_ad(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    return ngx_http_adserve_serving_location(cf, ngx_http_adserve_ad_handler);
}


static char *
ngx_http_adserve_vast(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    return ngx_http_adserve_serving_location(cf, ngx_http_adserve_vast_handler);
}


static char *
ngx_http_adserve_explain(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    return ngx_http_adserve_tagid_location(cf, ngx_http_adserve_explain_handler);
}


static char *
ngx_http_adserve_event(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_adserve_main_conf_t  *amcf;

    amcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_adserve_module);
    amcf->tracking = 1;

    return ngx_http_adserve_handled(cf, ngx_http_adserve_track_handler);
}


/* adserve_event, adserve_status and adserve_metrics: locations of one
 * handler each */
static char *
ngx_http_adserve_handled(ngx_conf_t *cf, ngx_http_handler_pt handler)
{
    ngx_http_core_loc_conf_t  *clcf;

    clcf = ngx_http_conf_get_module_loc_conf(cf, ngx_http_core_module);
    clcf->handler = handler;

    return NGX_CONF_OK;
}


static char *
ngx_http_adserve_status(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    return ngx_http_adserve_handled(cf, ngx_http_adserve_status_handler);
}


static char *
ngx_http_adserve_metrics_location(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_adserve_main_conf_t  *amcf;

    amcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_adserve_module);
    amcf->metrics_location = 1;

    return ngx_http_adserve_handled(cf, ngx_http_adserve_metrics_handler);
}


/* ---- worker life ------------------------------------------------------- */

static ngx_int_t
ngx_http_adserve_init_process(ngx_cycle_t *cycle)
{
    ngx_http_adserve_main_conf_t  *amcf;
    ngx_http_adserve_loader_t     *ld;
    ngx_http_adserve_events_conf_t ecf;
#if (NGX_THREADS)
    ngx_str_t                      pool = ngx_string("default");
#endif

    if (ngx_process != NGX_PROCESS_WORKER && ngx_process != NGX_PROCESS_SINGLE) {
        return NGX_OK;
    }

    amcf = ngx_http_cycle_get_module_main_conf(cycle, ngx_http_adserve_module);
    if (amcf == NULL || (!amcf->serving && !amcf->tracking)) {
        return NGX_OK;
    }

    if (adserve_tokens_start(amcf->tokens) != 0) {
        ngx_log_error(NGX_LOG_EMERG, cycle->log, 0,
                      NGX_HTTP_ADSERVE_LOG "cannot set up the ad_log cipher");
        return NGX_ERROR;
    }

    /* first: what starts next counts in the worker's slot */
    ngx_http_adserve_metrics_init(amcf->metrics);
    ngx_http_adserve_once_init(amcf->once);
    ngx_http_adserve_hzone_init(amcf->history, amcf->history_refresh, amcf->history_delay);

    ld = ngx_pcalloc(cycle->pool, sizeof(ngx_http_adserve_loader_t));
    if (ld == NULL) {
        return NGX_ERROR;
    }

    ld->zone = amcf->zone;
    ld->redis = amcf->redis;
    ld->redis.timeout = amcf->redis_timeout;
    ld->refresh = amcf->refresh;
    ld->timeout = amcf->redis_timeout;
    ld->public_url = (char *) amcf->public_url.data;    /* ngx_conf_set_str_slot
                                                       * NUL-terminates */
    ld->rec_snapshots = amcf->rec_snapshots.len ? (char *) amcf->rec_snapshots.data : NULL;
#if (NGX_THREADS)
    ld->thread_pool = ngx_thread_pool_get(cycle, &pool);
#endif

    ld->resume = ngx_http_adserve_resume;
    amcf->loader = ld;

    /* events and caps go to the primary, by default the one address */
    if (amcf->redis_write.host == NULL && amcf->redis_write.sentinels == NULL) {
        amcf->redis_write = amcf->redis;
    }
    amcf->redis_write.timeout = amcf->redis_timeout;
    ecf.redis = &amcf->redis_write;
    ecf.flush = amcf->flush;
    ecf.buffer = amcf->event_buffer;
    ecf.stream_max = amcf->stream_max;
    ecf.event_ttl = amcf->event_ttl;
    ecf.conversion_ttl = amcf->conversion_ttl;

    amcf->events = ngx_http_adserve_events_init(cycle, &ecf);
    if (amcf->events == NULL || ngx_http_adserve_pacing_init(cycle, amcf) != NGX_OK
        || ngx_http_adserve_caps_init(cycle, &amcf->redis_write) != NGX_OK)
    {
        return NGX_ERROR;
    }

    ngx_http_adserve_history_init(cycle);

    return ngx_http_adserve_loader_init(ld, cycle);
}


static void
ngx_http_adserve_exit_process(ngx_cycle_t *cycle)
{
    ngx_http_adserve_main_conf_t  *amcf;

    amcf = ngx_http_cycle_get_module_main_conf(cycle, ngx_http_adserve_module);

    /* the caps' connection first: hiredis answers its pending commands
     * with no reply as it goes, and the requests that waited on them end
     * now, deciding with the pacing table, which goes after them */
    ngx_http_adserve_caps_exit();

    /* the events then: they bill; the histories after, in what time the
     * master leaves */
    if (amcf != NULL && amcf->events != NULL) {
        ngx_http_adserve_events_exit(amcf->events);
        amcf->events = NULL;
    }

    ngx_http_adserve_pacing_exit();

    if (amcf != NULL && amcf->loader != NULL) {
        ngx_http_adserve_history_exit(&amcf->redis_write);
    }

    if (amcf != NULL && amcf->loader != NULL) {
        ngx_http_adserve_loader_exit(amcf->loader);
        adserve_tokens_stop(amcf->tokens);
        amcf->loader = NULL;
    }

    /* last: the exit's final flush counted what it dropped */
    ngx_http_adserve_metrics_exit();
}
