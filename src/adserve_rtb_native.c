/*
 * adserve_rtb_native: a native bid's markup, OpenRTB Native 1.2's response
 * (section 5), read by the strict scanner with a grammar of its own, in
 * place and without allocating, as the bid response around it is
 * (adserve_rtb.c). The markup is the bidder's: every list is bounded, and
 * what is not kept whole is said so, for the auction to drop the bid rather
 * than serve a part of it.
 *
 * Native 1.2 puts the response's members at the top level; 1.0 wrapped them
 * in a "native" object, which bidders still send. Both are read: the
 * members of either (the last one wins, as elsewhere).
 */


#include <string.h>

#include "adserve_contract.h"
#include "adserve_json_scan.h"
#include "adserve_rtb.h"


enum {
    OBJ_ROOT = ADSERVE_JS_OTHER + 1,    /* the top level, or "native" in it */
    OBJ_ASSET,
    OBJ_TITLE,
    OBJ_IMG,
    OBJ_DATA,
    OBJ_VIDEO,
    OBJ_LINK,
    OBJ_TRACKER
};

enum {
    F_NATIVE = ADSERVE_JS_NONE + 1,
    F_ASSETS,                           /* the array, */
    F_ASSET,                            /* and each of its elements */
    F_ASSET_ID,
    F_REQUIRED,
    F_TITLE,
    F_IMG,
    F_DATA,
    F_VIDEO,
    F_TEXT,                             /* title.text */
    F_URL,                              /* img.url */
    F_W,
    F_H,
    F_TYPE,                             /* img.type, data.type */
    F_VALUE,                            /* data.value */
    F_VASTTAG,                          /* video.vasttag */
    F_LINK,
    F_LINK_URL,
    F_CLICKTRACKERS,
    F_CLICKTRACKER,
    F_IMPTRACKERS,
    F_IMPTRACKER,
    F_EVENTTRACKERS,
    F_EVENTTRACKER,
    F_EVENT,
    F_METHOD,
    F_TRACKER_URL
};

static const adserve_js_key_t  native_keys[] = {
    { OBJ_ROOT,    "native",        6,  F_NATIVE },
    { OBJ_ROOT,    "assets",        6,  F_ASSETS },
    { OBJ_ROOT,    "link",          4,  F_LINK },
    { OBJ_ROOT,    "imptrackers",   11, F_IMPTRACKERS },
    { OBJ_ROOT,    "eventtrackers", 13, F_EVENTTRACKERS },
    { OBJ_ASSET,   "id",            2,  F_ASSET_ID },
    { OBJ_ASSET,   "required",      8,  F_REQUIRED },
    { OBJ_ASSET,   "title",         5,  F_TITLE },
    { OBJ_ASSET,   "img",           3,  F_IMG },
    { OBJ_ASSET,   "data",          4,  F_DATA },
    { OBJ_ASSET,   "video",         5,  F_VIDEO },
    { OBJ_TITLE,   "text",          4,  F_TEXT },
    { OBJ_IMG,     "url",           3,  F_URL },
    { OBJ_IMG,     "w",             1,  F_W },
    { OBJ_IMG,     "h",             1,  F_H },
    { OBJ_IMG,     "type",          4,  F_TYPE },
    { OBJ_DATA,    "value",         5,  F_VALUE },
    { OBJ_DATA,    "type",          4,  F_TYPE },
    { OBJ_VIDEO,   "vasttag",       7,  F_VASTTAG },
    { OBJ_LINK,    "url",           3,  F_LINK_URL },
    { OBJ_LINK,    "clicktrackers", 13, F_CLICKTRACKERS },
    { OBJ_TRACKER, "event",         5,  F_EVENT },
    { OBJ_TRACKER, "method",        6,  F_METHOD },
    { OBJ_TRACKER, "url",           3,  F_TRACKER_URL },
};

static const adserve_str_t  none = { NULL, 0 };


/* What s->slot names: inside one of assets[], its index (its title, img,
 * data or video object leave it as it is); inside one of eventtrackers[],
 * TRACKER(its index); elsewhere -1. */
#define TRACKER(i)  (-2 - (int) (i))


static adserve_rtb_native_asset_t *
current_asset(adserve_js_scanner_t *s)
{
    adserve_rtb_native_t  *n = s->out;

    return s->slot >= 0 && (unsigned) s->slot < n->nassets ? &n->assets[s->slot] : NULL;
}


static adserve_rtb_native_tracker_t *
current_tracker(adserve_js_scanner_t *s)
{
    adserve_rtb_native_t  *n = s->out;
    int                    i = TRACKER(s->slot);     /* its own inverse */

    return s->slot <= TRACKER(0) && (unsigned) i < n->nevents ? &n->events[i] : NULL;
}


/* One URL of a list (clicktrackers, imptrackers): kept while there is room
 * and it fits, else the list is marked as not kept whole. */
static int
native_list_url(adserve_js_scanner_t *s, adserve_str_t *list, uint8_t *n)
{
    adserve_rtb_native_t  *nat = s->out;
    adserve_str_t          v = none;
    size_t                 len;

    if (*n >= ADSERVE_RTB_NATIVE_TRACKERS_MAX) {
        nat->trackers_over = 1;
        return adserve_js_string(s, NULL, 0, &len);
    }

    if (adserve_js_string_in_place(s, &v, ADSERVE_RTB_URL_MAX) != ADSERVE_JS_OK) {
        return ADSERVE_JS_ERR;
    }

    if (v.data == NULL) {
        nat->trackers_over = 1;
        return ADSERVE_JS_OK;
    }

    list[(*n)++] = v;
    return ADSERVE_JS_OK;
}


/* An asset's value: the kind of the object that holds it says which. */
static int
native_asset_value(adserve_js_scanner_t *s, uint8_t kind, size_t max)
{
    adserve_rtb_native_asset_t  *a = current_asset(s);
    size_t                       len;

    if (a == NULL) {
        return adserve_js_string(s, NULL, 0, &len);
    }

    a->kind = kind;
    a->value = none;
    return adserve_js_string_in_place(s, &a->value, max);
}


static int
native_string(adserve_js_scanner_t *s, int f)
{
    adserve_rtb_native_t          *n = s->out;
    adserve_rtb_native_tracker_t  *t;
    size_t                         len;

    switch (f) {
    case F_TEXT:
        return native_asset_value(s, ADSERVE_ASSET_TITLE, ADSERVE_RTB_NATIVE_TEXT_MAX);
    case F_URL:
        return native_asset_value(s, ADSERVE_ASSET_IMG, ADSERVE_RTB_URL_MAX);
    case F_VALUE:
        return native_asset_value(s, ADSERVE_ASSET_DATA, ADSERVE_RTB_NATIVE_TEXT_MAX);
    case F_VASTTAG:
        return native_asset_value(s, ADSERVE_ASSET_VIDEO, ADSERVE_RTB_ADM_MAX);
    case F_LINK_URL:
        return adserve_js_string_in_place(s, &n->link, ADSERVE_RTB_URL_MAX);
    case F_CLICKTRACKER:
        return native_list_url(s, n->clicktrackers, &n->nclicktrackers);
    case F_IMPTRACKER:
        return native_list_url(s, n->imptrackers, &n->nimptrackers);
    case F_TRACKER_URL:
        t = current_tracker(s);
        if (t != NULL) {
            t->url = none;
            if (adserve_js_string_in_place(s, &t->url, ADSERVE_RTB_URL_MAX) != ADSERVE_JS_OK) {
                return ADSERVE_JS_ERR;
            }
            n->trackers_over |= t->url.data == NULL;
            return ADSERVE_JS_OK;
        }
        break;
    default:
        break;
    }

    return adserve_js_string(s, NULL, 0, &len);
}


static void
native_number(adserve_js_scanner_t *s, int f, size_t start, long ival)
{
    adserve_rtb_native_asset_t    *a = current_asset(s);
    adserve_rtb_native_tracker_t  *t = current_tracker(s);

    (void) start;

    switch (f) {
    case F_ASSET_ID:
        if (a != NULL) {
            a->id = ival >= 0 && ival <= UINT32_MAX ? (int64_t) ival : -1;
        }
        break;
    case F_REQUIRED:
        if (a != NULL) {
            a->required = ival == 1;
        }
        break;
    case F_W:
    case F_H:
        if (a != NULL) {
            *(f == F_W ? &a->w : &a->h) = ival > 0 && ival <= 10000 ? (uint32_t) ival : 0;
        }
        break;
    case F_TYPE:
        if (a != NULL) {
            a->type = ival > 0 && ival <= 1000 ? (uint16_t) ival : 0;
        }
        break;
    case F_EVENT:
    case F_METHOD:
        if (t != NULL) {
            *(f == F_EVENT ? &t->event : &t->method) = ival > 0 && ival <= 1000 ? (uint16_t) ival : 0;
        }
        break;
    default:
        break;
    }
}


/* A key seen again: what its earlier value set goes. */
static void
native_reset(adserve_js_scanner_t *s, int f)
{
    adserve_rtb_native_t          *n = s->out;
    adserve_rtb_native_asset_t    *a = current_asset(s);
    adserve_rtb_native_tracker_t  *t = current_tracker(s);

    switch (f) {
    case F_ASSETS:        n->nassets = 0; n->assets_over = 0; s->slot = -1; return;
    case F_LINK:          n->link = none; n->nclicktrackers = 0; return;
    case F_LINK_URL:      n->link = none; return;
    case F_CLICKTRACKERS: n->nclicktrackers = 0; return;
    case F_IMPTRACKERS:   n->nimptrackers = 0; return;
    case F_EVENTTRACKERS: n->nevents = 0; s->slot = -1; return;
    default:              break;
    }

    if (a != NULL) {
        switch (f) {
        case F_ASSET_ID:  a->id = -1; return;
        case F_REQUIRED:  a->required = 0; return;
        case F_TITLE: case F_IMG: case F_DATA: case F_VIDEO:
            a->kind = ADSERVE_ASSET_COUNT; a->value = none; a->w = a->h = 0; a->type = 0;
            return;
        case F_TEXT: case F_URL: case F_VALUE: case F_VASTTAG:
            a->value = none; return;
        case F_W:         a->w = 0; return;
        case F_H:         a->h = 0; return;
        case F_TYPE:      a->type = 0; return;
        default:          break;
        }
    }

    if (t != NULL) {
        switch (f) {
        case F_EVENT:       t->event = 0; break;
        case F_METHOD:      t->method = 0; break;
        case F_TRACKER_URL: t->url = none; break;
        default:            break;
        }
    }
}


/* The objects: the root and "native" (the same members), each asset (a
 * row while there is one, else skipped and said), its value's object, the
 * link, and each event tracker. */
static int
native_object(adserve_js_scanner_t *s, int f)
{
    adserve_rtb_native_t        *n = s->out;
    adserve_rtb_native_asset_t  *a;

    switch (f) {
    case ADSERVE_JS_NONE:
    case F_NATIVE:
        s->slot = -1;
        return OBJ_ROOT;

    case F_ASSET:
        if (n->nassets >= ADSERVE_RTB_NATIVE_ASSETS_MAX) {
            n->assets_over = 1;
            s->slot = -1;
            return ADSERVE_JS_OTHER;
        }
        s->slot = (int) n->nassets++;
        a = &n->assets[s->slot];
        memset(a, 0, sizeof(*a));
        a->id = -1;
        a->kind = ADSERVE_ASSET_COUNT;
        return OBJ_ASSET;

    case F_TITLE: return current_asset(s) != NULL ? OBJ_TITLE : ADSERVE_JS_OTHER;
    case F_IMG:   return current_asset(s) != NULL ? OBJ_IMG : ADSERVE_JS_OTHER;
    case F_DATA:  return current_asset(s) != NULL ? OBJ_DATA : ADSERVE_JS_OTHER;
    case F_VIDEO: return current_asset(s) != NULL ? OBJ_VIDEO : ADSERVE_JS_OTHER;

    case F_LINK:
        return OBJ_LINK;

    case F_EVENTTRACKER:
        if (n->nevents >= ADSERVE_RTB_NATIVE_TRACKERS_MAX) {
            n->trackers_over = 1;
            s->slot = -1;
            return ADSERVE_JS_OTHER;
        }
        memset(&n->events[n->nevents], 0, sizeof(n->events[0]));
        s->slot = TRACKER(n->nevents++);
        return OBJ_TRACKER;

    default:
        return ADSERVE_JS_OTHER;
    }
}


/* an asset or a tracker read whole: the slot is no longer its */
static void
native_object_done(adserve_js_scanner_t *s, int f, size_t start)
{
    (void) start;

    if (f == F_ASSET || f == F_EVENTTRACKER) {
        s->slot = -1;
    }
}


static int
native_element(int f)
{
    switch (f) {
    case F_ASSETS:        return F_ASSET;
    case F_CLICKTRACKERS: return F_CLICKTRACKER;
    case F_IMPTRACKERS:   return F_IMPTRACKER;
    case F_EVENTTRACKERS: return F_EVENTTRACKER;
    default:              return ADSERVE_JS_NONE;
    }
}


static const adserve_js_grammar_t  native_grammar = {
    native_keys, sizeof(native_keys) / sizeof(native_keys[0]),
    native_reset, native_string, native_number, native_object, native_object_done,
    native_element, NULL, NULL, 0
};


int
adserve_rtb_parse_native(char *buf, size_t len, adserve_rtb_native_t *n, const char **err)
{
    return adserve_js_read(buf, len, &native_grammar, n, sizeof(*n), err);
}


/* ---- whether it can be served --------------------------------------------- */

/* Whether s is an http(s) URL (link: where a click lands, a fragment
 * allowed). The auction fills a bid's macros before it asks: a macro left
 * unfilled holds braces, which no URL here may. */
static int
url_ok(const adserve_str_t *s, int link)
{
    return link ? adserve_link_url_ok(s->data, s->len) : adserve_endpoint_url_ok(s->data, s->len);
}


static int
urls_ok(const adserve_str_t *v, size_t n)
{
    size_t  i;

    for (i = 0; i < n; i++) {
        if (!url_ok(&v[i], 0)) {
            return 0;
        }
    }

    return 1;
}


/* the first asset of the request's id and kind with a value, or UNFILLED */
static uint8_t
native_pick(const adserve_rtb_native_t *n, const adserve_rtb_native_req_t *req)
{
    unsigned  i;

    for (i = 0; i < n->nassets; i++) {
        if (n->assets[i].id == (int64_t) req->id && n->assets[i].kind == req->kind
            && n->assets[i].value.data != NULL)
        {
            return (uint8_t) i;
        }
    }

    return ADSERVE_RTB_NATIVE_UNFILLED;
}


const char *
adserve_rtb_native_unfit(const adserve_rtb_native_t *n, const adserve_rtb_native_req_t *reqs,
    size_t nreqs, uint8_t *pick)
{
    const adserve_rtb_native_asset_t  *a;
    size_t                             i;
    int                                filled = 0;

    if (n->assets_over || n->trackers_over) {
        return "its assets or trackers were not kept whole";
    }

    if (!url_ok(&n->link, 1)) {
        return "its link.url is not an http(s) URL";
    }

    if (!urls_ok(n->clicktrackers, n->nclicktrackers)
        || !urls_ok(n->imptrackers, n->nimptrackers))
    {
        return "a tracker is not an http(s) URL";
    }

    for (i = 0; i < n->nevents; i++) {
        if (n->events[i].event == 0 || n->events[i].method == 0) {
            return "an event tracker lacks its event or method";
        }
        if (!url_ok(&n->events[i].url, 0)) {
            return "an event tracker is not an http(s) URL";
        }
    }

    for (i = 0; i < nreqs; i++) {
        pick[i] = native_pick(n, &reqs[i]);
        if (pick[i] == ADSERVE_RTB_NATIVE_UNFILLED) {
            if (reqs[i].required) {
                return "a required asset is not given";
            }
            continue;
        }

        a = &n->assets[pick[i]];
        if (a->kind == ADSERVE_ASSET_IMG && !url_ok(&a->value, 0)) {
            return "an image's url is not an http(s) URL";
        }
        filled = 1;
    }

    return filled ? NULL : "no asset answers a request";
}
