
/*
 * Tracking: impressions, clicks and conversions, each authenticated by its
 * ad_log token, then queued raw in the worker (ngx_http_adserve_events.c).
 *
 *   GET|HEAD {location}/impression?ad_log=T  -> 204
 *   GET|HEAD {location}/click?ad_log=T       -> 302 to the creative's
 *                                               landing page
 *   GET|HEAD {location}/video/{event}?ad_log=T -> 204: a video's VAST
 *                                               tracking events and errors
 *   POST {location}  {"ad_log": T, "type": "conversion", "value": n?} -> 204
 *
 * A forged, altered, truncated or unknown-key token, or one issued longer
 * ago than its type's ttl (or more than a minute ahead), is a 400 counted as
 * invalid, never as an event. A valid repeat answers as the first did: the
 * flush script deduplicates by request id. Nothing here waits on Redis.
 */


#include "ngx_http_adserve.h"

#include <math.h>
#include <cjson/cJSON.h>


#define NGX_HTTP_ADSERVE_FUTURE_SKEW  60          /* seconds of clock skew */
#define NGX_HTTP_ADSERVE_VALUE_MAX    1e9         /* a conversion's value */

#define ngx_http_adserve_detail(text)  ngx_string("{\"detail\":\"" text "\"}")


static ngx_str_t  ngx_http_adserve_invalid = ngx_http_adserve_detail("invalid ad_log");
static ngx_str_t  ngx_http_adserve_expired = ngx_http_adserve_detail("expired ad_log");
static ngx_str_t  ngx_http_adserve_missing = ngx_http_adserve_detail("missing ad_log");
static ngx_str_t  ngx_http_adserve_unknown_creative =
    ngx_http_adserve_detail("unknown creative");
static ngx_str_t  ngx_http_adserve_unknown_item =
    ngx_http_adserve_detail("unknown item");
static ngx_str_t  ngx_http_adserve_bad_landing =
    ngx_http_adserve_detail("the creative has no valid landing page");
static ngx_str_t  ngx_http_adserve_not_found =
    ngx_http_adserve_detail("no such event endpoint: use impression, click, "
                            "video/{event}, or POST a conversion");
static ngx_str_t  ngx_http_adserve_use_get = ngx_http_adserve_detail("use GET");
static ngx_str_t  ngx_http_adserve_use_post = ngx_http_adserve_detail("use POST");
static ngx_str_t  ngx_http_adserve_not_json =
    ngx_http_adserve_detail("malformed request: the body must be a JSON object");
static ngx_str_t  ngx_http_adserve_bad_type =
    ngx_http_adserve_detail("type must be \\\"conversion\\\"");
static ngx_str_t  ngx_http_adserve_bad_value =
    ngx_http_adserve_detail("value must be a non-negative number (at most 1e9)");


static ngx_int_t
ngx_http_adserve_track_send(ngx_http_request_t *r, ngx_uint_t status,
    ngx_str_t *body)
{
    return ngx_http_adserve_send(r, status, body ? body->data : NULL,
                                 body ? body->len : 0);
}


static ngx_int_t
ngx_http_adserve_track_not_allowed(ngx_http_request_t *r, char *allow,
    ngx_str_t *body)
{
    ngx_str_t  value;
    ngx_int_t  rc;

    rc = ngx_http_discard_request_body(r);
    if (rc != NGX_OK) {
        return rc;
    }

    value.data = (u_char *) allow;
    value.len = ngx_strlen(allow);

    if (ngx_http_adserve_header(r, "Allow", &value) == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    return ngx_http_adserve_track_send(r, NGX_HTTP_NOT_ALLOWED, body);
}


/* Decodes and checks a token: NGX_OK with *log (its strings in buf), or
 * the detail of a 400, counted as invalid. */
static ngx_str_t *
ngx_http_adserve_track_token(ngx_http_request_t *r,
    adserve_event_e type, u_char *tok, size_t len, time_t now,
    adserve_ad_log_t *log, u_char *buf)
{
    ngx_http_adserve_main_conf_t  *amcf;
    time_t                         ttl;

    amcf = ngx_http_get_module_main_conf(r, ngx_http_adserve_module);

    /* base64url only (the decoder refuses anything else, and any length
     * that is not a token's): an escaped query value is never unescaped */
    if (adserve_token_decode(amcf->tokens, (const char *) tok, len, log, buf)
        != 0)
    {
        goto invalid;
    }

    ttl = type == ADSERVE_EVENT_CONVERSION ? amcf->conversion_ttl
                                                 : amcf->event_ttl;

    if (log->issued < (int64_t) now - ttl
        || log->issued > (int64_t) now + NGX_HTTP_ADSERVE_FUTURE_SKEW)
    {
        ngx_http_adserve_track_invalid(amcf->events, type, now);
        return &ngx_http_adserve_expired;
    }

    return NULL;

invalid:

    ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                  NGX_HTTP_ADSERVE_LOG "invalid ad_log token (%uz bytes)", len);

    ngx_http_adserve_track_invalid(amcf->events, type, now);

    return &ngx_http_adserve_invalid;
}


/* Absolute http(s), and nothing that could end or split a header line:
 * the API checked it, this is the last line of defence. */
static ngx_int_t
ngx_http_adserve_landing_ok(const adserve_str_t *url)
{
    size_t  i;
    u_char  ch;

    if (url->data == NULL
        || !((url->len > 7 && ngx_strncasecmp((u_char *) url->data,
                                              (u_char *) "http://", 7) == 0)
             || (url->len > 8 && ngx_strncasecmp((u_char *) url->data,
                                                 (u_char *) "https://", 8) == 0)))
    {
        return NGX_DECLINED;
    }

    for (i = 0; i < url->len; i++) {
        ch = (u_char) url->data[i];

        if (ch < 0x20 || ch == 0x7f) {
            return NGX_DECLINED;
        }
    }

    return NGX_OK;
}


/* 302 to a stored landing page (a creative's, a catalog item's), never to
 * anything the request says */
static ngx_int_t
ngx_http_adserve_track_redirect(ngx_http_request_t *r, const adserve_str_t *landing)
{
    ngx_str_t  url;

    url.len = landing->len;
    url.data = ngx_pnalloc(r->pool, url.len);
    if (url.data == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    ngx_memcpy(url.data, landing->data, url.len);

    r->headers_out.location = ngx_http_adserve_header(r, "Location", &url);
    if (r->headers_out.location == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    return ngx_http_adserve_send(r, NGX_HTTP_MOVED_TEMPORARILY, NULL, 0);
}


/* Where a click goes: an ad's creative's landing page (any creative of the
 * inventory, approved or not: an ad served just before a change still
 * lands), or for a recommendation (a token without a line item) the
 * catalog item that ?item= names. NULL, or the 404's detail. */
static ngx_str_t *
ngx_http_adserve_landing(ngx_http_request_t *r, const adserve_snapshot_t *s,
    const adserve_ad_log_t *log, adserve_str_t *landing, const adserve_item_t **item)
{
    const adserve_creative_t  *cr;
    const adserve_item_t      *it;
    ngx_str_t                  arg;
    u_char                     id[3 * ADSERVE_ITEM_ID_MAX], *dst, *src;

    if (log->line_item.len == 0) {
        it = NULL;
        /* %-escaped by some clients (a ':' as %3A): unescaped, and never
         * longer than its escaped form */
        if (ngx_http_arg(r, (u_char *) ADSERVE_ITEM_ARG, sizeof(ADSERVE_ITEM_ARG) - 1, &arg)
            == NGX_OK && arg.len <= 3 * ADSERVE_ITEM_ID_MAX)
        {
            dst = id;
            src = arg.data;
            ngx_unescape_uri(&dst, &src, arg.len, 0);
            it = adserve_snapshot_item(s, (const char *) id, dst - id);
        }

        if (it == NULL) {
            return &ngx_http_adserve_unknown_item;
        }

        *item = it;
        *landing = it->url;
        return NULL;
    }

    cr = adserve_snapshot_creative(s, log->creative.data, log->creative.len);
    if (cr == NULL) {
        return &ngx_http_adserve_unknown_creative;
    }

    *landing = cr->landing_url;
    return NULL;
}


/* The VAST error code of ?code= (the player's [ERRORCODE]): one of VAST
 * 4.2's, or 900 (undefined) for anything else, the macro left as it was
 * included. */
static int64_t
ngx_http_adserve_vast_error(ngx_http_request_t *r)
{
    ngx_str_t  arg;
    ngx_int_t  code = NGX_ERROR;

    if (ngx_http_arg(r, (u_char *) "code", sizeof("code") - 1, &arg) == NGX_OK
        && arg.len <= 3)
    {
        code = ngx_atoi(arg.data, arg.len);
    }

    return adserve_vast_error_codes[adserve_vast_error_index((long) code)];
}


/* An external win's impression: its billing notice, once per node for a
 * repeated impression (a reload, a retry), whichever worker the repeat
 * reaches (ngx_http_adserve_once). */
static void
ngx_http_adserve_track_burl(ngx_http_request_t *r, const adserve_ad_log_t *log)
{
    u_char  *url;

    if (!ngx_http_adserve_once(adserve_hash((const char *) log->request_id,
                                            ADSERVE_TOKEN_NONCE)))
    {
        return;
    }

    url = ngx_pnalloc(r->pool, log->burl.len);
    if (url == NULL) {
        return;
    }

    ngx_memcpy(url, log->burl.data, log->burl.len);
    ngx_http_adserve_notice(r, url, log->burl.len);
}


/* GET|HEAD .../impression and .../click */
static ngx_int_t
ngx_http_adserve_track_get(ngx_http_request_t *r, adserve_event_e type)
{
    ngx_http_adserve_main_conf_t  *amcf;
    adserve_snapshot_t            *s;
    adserve_ad_log_t               log;
    adserve_str_t                  landing = { NULL, 0 };
    const adserve_item_t          *item;
    ngx_str_t                      arg, *detail;
    u_char                         buf[ADSERVE_TOKEN_BUF];
    time_t                         now;
    ngx_int_t                      rc;

    if (!(r->method & (NGX_HTTP_GET|NGX_HTTP_HEAD))) {
        return ngx_http_adserve_track_not_allowed(r, "GET, HEAD",
                                                  &ngx_http_adserve_use_get);
    }

    rc = ngx_http_discard_request_body(r);
    if (rc != NGX_OK) {
        return rc;
    }

    if (ngx_http_arg(r, (u_char *) "ad_log", sizeof("ad_log") - 1, &arg)
        != NGX_OK)
    {
        return ngx_http_adserve_track_send(r, NGX_HTTP_BAD_REQUEST,
                                           &ngx_http_adserve_missing);
    }

    amcf = ngx_http_get_module_main_conf(r, ngx_http_adserve_module);
    now = ngx_http_adserve_now(r);

    detail = ngx_http_adserve_track_token(r, type, arg.data, arg.len, now, &log,
                                          buf);
    if (detail != NULL) {
        return ngx_http_adserve_track_send(r, NGX_HTTP_BAD_REQUEST, detail);
    }

    /* an impression, or a video's event: counted, and nothing to show; a
     * VAST error with its code, in the event's value; an external win's
     * click too: its markup carries its own landing page */
    if (type != ADSERVE_EVENT_CLICK || log.source.len) {
        (void) ngx_http_adserve_track(amcf->events, type, &log, now,
                                      type == ADSERVE_EVENT_VIDEO + ADSERVE_VIDEO_ERROR
                                      ? ngx_http_adserve_vast_error(r) : 0);
        if (type == ADSERVE_EVENT_IMPRESSION && log.burl.len) {
            ngx_http_adserve_track_burl(r, &log);
        }
        return ngx_http_adserve_track_send(r, NGX_HTTP_NO_CONTENT, NULL);
    }

    s = amcf->loader ? amcf->loader->snapshot : NULL;

    item = NULL;
    detail = ngx_http_adserve_landing(r, s, &log, &landing, &item);
    if (detail != NULL) {
        return ngx_http_adserve_track_send(r, NGX_HTTP_NOT_FOUND, detail);
    }

    if (ngx_http_adserve_landing_ok(&landing) != NGX_OK) {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      NGX_HTTP_ADSERVE_LOG "the landing page \"%*s\" cannot be sent in a "
                      "Location header", landing.len, landing.data);
        return ngx_http_adserve_track_send(r, NGX_HTTP_INTERNAL_SERVER_ERROR,
                                           &ngx_http_adserve_bad_landing);
    }

    (void) ngx_http_adserve_track(amcf->events, type, &log, now, 0);

    if (item != NULL) {
        ngx_http_adserve_rec_click(r, s, &log, item, now);
    }

    return ngx_http_adserve_track_redirect(r, &landing);
}


/* The conversion in the body: NGX_OK, or a 400's detail. cJSON allocates
 * (the body is at most 4 KiB) and is freed before this returns. */
static ngx_str_t *
ngx_http_adserve_conversion_parse(ngx_http_request_t *r, u_char *body,
    size_t len, time_t now, adserve_ad_log_t *log, u_char *buf, int64_t *value)
{
    cJSON      *root, *type, *token, *v;
    ngx_str_t  *detail = NULL;

    root = cJSON_ParseWithLength((const char *) body, len);

    if (root == NULL || !cJSON_IsObject(root)) {
        detail = &ngx_http_adserve_not_json;
        goto done;
    }

    type = cJSON_GetObjectItemCaseSensitive(root, "type");
    if (!cJSON_IsString(type) || ngx_strcmp(type->valuestring, "conversion") != 0) {
        detail = &ngx_http_adserve_bad_type;
        goto done;
    }

    v = cJSON_GetObjectItemCaseSensitive(root, "value");
    if (v == NULL || cJSON_IsNull(v)) {
        *value = 0;

    } else if (cJSON_IsNumber(v) && isfinite(v->valuedouble)
               && v->valuedouble >= 0
               && v->valuedouble <= NGX_HTTP_ADSERVE_VALUE_MAX)
    {
        *value = (int64_t) (v->valuedouble * 1e6 + 0.5);   /* >= 0: rounded */

    } else {
        detail = &ngx_http_adserve_bad_value;
        goto done;
    }

    token = cJSON_GetObjectItemCaseSensitive(root, "ad_log");
    if (!cJSON_IsString(token)) {
        detail = &ngx_http_adserve_missing;
        goto done;
    }

    /* the log's strings point into buf, not into the document */
    detail = ngx_http_adserve_track_token(r, ADSERVE_EVENT_CONVERSION,
                                          (u_char *) token->valuestring,
                                          ngx_strlen(token->valuestring), now,
                                          log, buf);

done:

    cJSON_Delete(root);

    return detail;
}


static ngx_int_t
ngx_http_adserve_conversion(ngx_http_request_t *r)
{
    ngx_http_adserve_main_conf_t  *amcf;
    adserve_ad_log_t               log;
    ngx_str_t                     *detail;
    u_char                         buf[ADSERVE_TOKEN_BUF], *body;
    int64_t                        value;
    size_t                         len;
    time_t                         now;
    ngx_int_t                      rc;

    rc = ngx_http_adserve_body(r, &body, &len);
    if (rc != NGX_OK) {
        return rc;
    }

    amcf = ngx_http_get_module_main_conf(r, ngx_http_adserve_module);
    now = ngx_http_adserve_now(r);

    detail = ngx_http_adserve_conversion_parse(r, body, len, now, &log, buf,
                                               &value);
    if (detail != NULL) {
        return ngx_http_adserve_track_send(r, NGX_HTTP_BAD_REQUEST, detail);
    }

    (void) ngx_http_adserve_track(amcf->events, ADSERVE_EVENT_CONVERSION,
                                  &log, now, value);

    return ngx_http_adserve_track_send(r, NGX_HTTP_NO_CONTENT, NULL);
}


static void
ngx_http_adserve_conversion_handler(ngx_http_request_t *r)
{
    ngx_http_finalize_request(r, ngx_http_adserve_conversion(r));
}


/* /video/{event} of a VAST's URLs (adserve_vast.h): the event's type, or
 * ADSERVE_EVENT_COUNT */
static adserve_event_e
ngx_http_adserve_video_event(const ngx_str_t *rest)
{
    static const char  prefix[] = "/video/";
    ngx_str_t          name;
    int                e;

    if (rest->len <= sizeof(prefix) - 1
        || ngx_strncmp(rest->data, prefix, sizeof(prefix) - 1) != 0)
    {
        return ADSERVE_EVENT_COUNT;
    }

    name.data = rest->data + sizeof(prefix) - 1;
    name.len = rest->len - (sizeof(prefix) - 1);

    e = adserve_vocab(adserve_video_event_names, (const char *) name.data, name.len);

    return e < 0 ? ADSERVE_EVENT_COUNT : (adserve_event_e) (ADSERVE_EVENT_VIDEO + e);
}


ngx_int_t
ngx_http_adserve_track_handler(ngx_http_request_t *r)
{
    ngx_http_core_loc_conf_t  *clcf;
    ngx_str_t                  rest;
    ngx_int_t                  rc;
    adserve_event_e            type;

    clcf = ngx_http_get_module_loc_conf(r, ngx_http_core_module);

    /* what follows the location's prefix */
    rest = r->uri;
    if (r->uri.len >= clcf->name.len
        && ngx_strncmp(r->uri.data, clcf->name.data, clcf->name.len) == 0)
    {
        rest.data += clcf->name.len;
        rest.len -= clcf->name.len;
    }

    if (rest.len == sizeof("/impression") - 1
        && ngx_strncmp(rest.data, "/impression", rest.len) == 0)
    {
        return ngx_http_adserve_track_get(r, ADSERVE_EVENT_IMPRESSION);
    }

    if (rest.len == sizeof("/click") - 1
        && ngx_strncmp(rest.data, "/click", rest.len) == 0)
    {
        return ngx_http_adserve_track_get(r, ADSERVE_EVENT_CLICK);
    }

    type = ngx_http_adserve_video_event(&rest);
    if (type != ADSERVE_EVENT_COUNT) {
        return ngx_http_adserve_track_get(r, type);
    }

    if (rest.len > 1 || (rest.len == 1 && rest.data[0] != '/')) {
        rc = ngx_http_discard_request_body(r);
        if (rc != NGX_OK) {
            return rc;
        }

        return ngx_http_adserve_track_send(r, NGX_HTTP_NOT_FOUND,
                                           &ngx_http_adserve_not_found);
    }

    /* the location itself: conversions */
    if (!(r->method & NGX_HTTP_POST)) {
        return ngx_http_adserve_track_not_allowed(r, "POST",
                                                  &ngx_http_adserve_use_post);
    }

    r->request_body_in_single_buf = 1;

    rc = ngx_http_read_client_request_body(r, ngx_http_adserve_conversion_handler);
    if (rc >= NGX_HTTP_SPECIAL_RESPONSE) {
        return rc;
    }

    return NGX_DONE;
}
