/*
 * A native bid (README "External demand"): its markup, OpenRTB Native
 * 1.2's response, read when the auction judges it and checked against the
 * ad unit's asset requests (adserve_rtb_native_unfit), and the answer's
 * ad.native written from it when it wins.
 *
 * The answer is the unit's own shape of a native ad (README "Native",
 * asset mode): the assets that answer a request, in the unit's order; the
 * bid's link, with our click URL first among its click trackers, since the
 * click lands where the bidder says; and our impression URL first among
 * the event trackers, then the bid's (its imptrackers as the event
 * trackers Native 1.2 made of them). Every value is JSON-escaped; what a
 * page does with it is the SDK's to put in as text.
 */


#include "ngx_http_adserve.h"


/* bytes around each value: {"id":4294967295,"img":{"type":1000,"url":"",
 * "w":10000,"h":10000}}, and a tracker's {"event":1000,"method":1000,
 * "url":""}, with room to spare */
#define NGX_HTTP_ADSERVE_NATIVE_ROOM  96


/* every value of the markup through fill: a text's or a VAST's as they
 * are, a URL's %-escaped */
static void
ngx_http_adserve_native_fill(adserve_rtb_native_t *x, ngx_http_adserve_fill_pt fill, void *data)
{
    ngx_uint_t  i;

    for (i = 0; i < x->nassets; i++) {
        fill(data, &x->assets[i].value, x->assets[i].kind == ADSERVE_ASSET_IMG);
    }
    fill(data, &x->link, 1);
    for (i = 0; i < x->nclicktrackers; i++) {
        fill(data, &x->clicktrackers[i], 1);
    }
    for (i = 0; i < x->nimptrackers; i++) {
        fill(data, &x->imptrackers[i], 1);
    }
    for (i = 0; i < x->nevents; i++) {
        fill(data, &x->events[i].url, 1);
    }
}


const char *
ngx_http_adserve_native_bid_read(ngx_pool_t *pool, const adserve_unit_t *unit,
    const adserve_rtb_bid_t *bid, ngx_http_adserve_fill_pt fill, void *data,
    ngx_http_adserve_native_bid_t **out)
{
    ngx_http_adserve_native_bid_t  *nb;
    const char                     *err;
    char                           *buf;

    nb = ngx_palloc(pool, sizeof(ngx_http_adserve_native_bid_t));
    buf = ngx_pnalloc(pool, bid->adm.len);
    if (nb == NULL || buf == NULL) {
        return "out of memory";
    }

    /* read in a copy: the bid's markup stays as it came, for the
     * external creative's sample */
    ngx_memcpy(buf, bid->adm.data, bid->adm.len);
    if (adserve_rtb_parse_native(buf, bid->adm.len, &nb->n, &err) != 0) {
        return err;
    }

    /* checked as it will be served: its macros filled (every value is
     * known once the bids are in), against the requests of the unit as
     * judged, which the answer keeps (a request may resume on a newer
     * snapshot) */
    ngx_http_adserve_native_fill(&nb->n, fill, data);

    nb->nreqs = unit->nnative_reqs;
    ngx_memcpy(nb->reqs, unit->native_reqs, nb->nreqs * sizeof(adserve_rtb_native_req_t));
    ngx_memset(nb->pick, ADSERVE_RTB_NATIVE_UNFILLED, sizeof(nb->pick));

    err = adserve_rtb_native_unfit(&nb->n, nb->reqs, nb->nreqs, nb->pick);
    if (err != NULL) {
        return err;
    }

    *out = nb;
    return NULL;
}


/* "url" of one of ours: the unit's base, the path of the splice, the token */
static u_char *
ngx_http_adserve_native_ours(u_char *p, const adserve_unit_t *unit, ngx_uint_t kind,
    const u_char *tok, size_t n)
{
    const ngx_str_t  *path = ngx_http_adserve_splice_path(kind);

    *p++ = '"';
    p = ngx_cpymem(p, unit->url_base_json.data, unit->url_base_json.len);
    p = ngx_cpymem(p, path->data, path->len);
    p = ngx_cpymem(p, tok, n);
    *p++ = '"';

    return p;
}


static size_t
ngx_http_adserve_native_len(const adserve_unit_t *unit, const ngx_http_adserve_native_bid_t *nb,
    size_t n)
{
    const adserve_rtb_native_t  *x = &nb->n;
    size_t                       len;
    ngx_uint_t                   i;

    len = sizeof("{\"ver\":\"1.2\",\"assets\":[],\"link\":{\"url\":,\"clicktrackers\":[]},"
                 "\"eventtrackers\":[]}")
          + 6 * x->link.len
          + 2 * (NGX_HTTP_ADSERVE_NATIVE_ROOM + unit->url_base_json.len
                 + ADSERVE_SPLICE_PATH_MAX + n);

    for (i = 0; i < nb->nreqs; i++) {
        if (nb->pick[i] != ADSERVE_RTB_NATIVE_UNFILLED) {
            len += NGX_HTTP_ADSERVE_NATIVE_ROOM + 6 * x->assets[nb->pick[i]].value.len;
        }
    }
    for (i = 0; i < x->nclicktrackers; i++) {
        len += 3 + 6 * x->clicktrackers[i].len;
    }
    for (i = 0; i < x->nimptrackers; i++) {
        len += NGX_HTTP_ADSERVE_NATIVE_ROOM + 6 * x->imptrackers[i].len;
    }
    for (i = 0; i < x->nevents; i++) {
        len += NGX_HTTP_ADSERVE_NATIVE_ROOM + 6 * x->events[i].url.len;
    }

    return len;
}


/* {"id":…,"title":{"text":…}} and the other kinds: the bid's value under
 * the request's id */
static u_char *
ngx_http_adserve_native_asset(u_char *p, uint32_t id, const adserve_rtb_native_asset_t *a)
{
    p = ngx_sprintf(p, "{\"id\":%uD,", id);

    switch (a->kind) {
    case ADSERVE_ASSET_TITLE:
        p = ngx_cpymem(p, "\"title\":{\"text\":", sizeof("\"title\":{\"text\":") - 1);
        break;

    case ADSERVE_ASSET_IMG:
        p = ngx_cpymem(p, "\"img\":{", sizeof("\"img\":{") - 1);
        p = a->type ? ngx_sprintf(p, "\"type\":%uD,", (uint32_t) a->type) : p;
        p = a->w ? ngx_sprintf(p, "\"w\":%uD,", a->w) : p;
        p = a->h ? ngx_sprintf(p, "\"h\":%uD,", a->h) : p;
        p = ngx_cpymem(p, "\"url\":", sizeof("\"url\":") - 1);
        break;

    case ADSERVE_ASSET_DATA:
        p = ngx_cpymem(p, "\"data\":{", sizeof("\"data\":{") - 1);
        p = a->type ? ngx_sprintf(p, "\"type\":%uD,", (uint32_t) a->type) : p;
        p = ngx_cpymem(p, "\"value\":", sizeof("\"value\":") - 1);
        break;

    default:                            /* ADSERVE_ASSET_VIDEO */
        p = ngx_cpymem(p, "\"video\":{\"vasttag\":", sizeof("\"video\":{\"vasttag\":") - 1);
        break;
    }

    p = ngx_http_adserve_json_str(p, &a->value);

    return ngx_cpymem(p, "}}", 2);
}


static u_char *
ngx_http_adserve_native_tracker(u_char *p, ngx_uint_t event, ngx_uint_t method,
    const adserve_str_t *url)
{
    p = ngx_sprintf(p, ",{\"event\":%ui,\"method\":%ui,\"url\":", event, method);
    p = ngx_http_adserve_json_str(p, url);
    *p++ = '}';

    return p;
}


u_char *
ngx_http_adserve_native_bid_write(ngx_http_request_t *r, const adserve_unit_t *unit,
    const ngx_http_adserve_native_bid_t *nb, const u_char *tok, size_t n, size_t *len)
{
    const adserve_rtb_native_t  *x = &nb->n;
    u_char                      *text, *p;
    ngx_uint_t                   i, first = 1;

    text = ngx_pnalloc(r->pool, ngx_http_adserve_native_len(unit, nb, n));
    if (text == NULL) {
        return NULL;
    }

    p = ngx_cpymem(text, "{\"ver\":\"1.2\",\"assets\":[",
                   sizeof("{\"ver\":\"1.2\",\"assets\":[") - 1);

    for (i = 0; i < nb->nreqs; i++) {
        if (nb->pick[i] == ADSERVE_RTB_NATIVE_UNFILLED) {
            continue;
        }
        if (!first) {
            *p++ = ',';
        }
        first = 0;
        p = ngx_http_adserve_native_asset(p, nb->reqs[i].id, &x->assets[nb->pick[i]]);
    }

    p = ngx_cpymem(p, "],\"link\":{\"url\":", sizeof("],\"link\":{\"url\":") - 1);
    p = ngx_http_adserve_json_str(p, &x->link);
    p = ngx_cpymem(p, ",\"clicktrackers\":[", sizeof(",\"clicktrackers\":[") - 1);
    p = ngx_http_adserve_native_ours(p, unit, ADSERVE_SPLICE_CLICK, tok, n);
    for (i = 0; i < x->nclicktrackers; i++) {
        *p++ = ',';
        p = ngx_http_adserve_json_str(p, &x->clicktrackers[i]);
    }

    p = ngx_cpymem(p, "]},\"eventtrackers\":[{\"event\":1,\"method\":1,\"url\":",
                   sizeof("]},\"eventtrackers\":[{\"event\":1,\"method\":1,\"url\":") - 1);
    p = ngx_http_adserve_native_ours(p, unit, ADSERVE_SPLICE_IMPRESSION, tok, n);
    *p++ = '}';
    for (i = 0; i < x->nimptrackers; i++) {
        p = ngx_http_adserve_native_tracker(p, 1, 1, &x->imptrackers[i]);
    }
    for (i = 0; i < x->nevents; i++) {
        p = ngx_http_adserve_native_tracker(p, x->events[i].event, x->events[i].method,
                                            &x->events[i].url);
    }

    p = ngx_cpymem(p, "]}", 2);
    *len = p - text;

    return text;
}
