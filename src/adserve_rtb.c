/*
 * adserve_rtb.c -- an OpenRTB 2.6 BidResponse, read by the strict scanner's
 * core (adserve_json_scan.h) with a grammar of its own: the response's id
 * and cur, each seatbid's seat, and of each bid what an auction and its
 * notices need. Nothing is allocated: strings are unescaped in place, and
 * the bids go into the caller's fixed table.
 */

#include "adserve_rtb.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "adserve_contract.h"
#include "adserve_json_scan.h"
#include "adserve_jsonw.h"


/* ---- the imp of a bid request ----------------------------------------- */

/* An AdCOM placement member and its OpenRTB 2.6 name. */
typedef struct {
    const char  *adcom;
    const char  *openrtb;
} rename_t;

static const rename_t  banner_names[] = {
    { "w", "w" }, { "h", "h" }, { "pos", "pos" }, { "topframe", "topframe" },
    { "api", "api" }, { "mime", "mimes" }, { "expdir", "expdir" },
    { NULL, NULL }
};

static const rename_t  video_names[] = {
    { "mime", "mimes" }, { "mindur", "minduration" }, { "maxdur", "maxduration" },
    { "delay", "startdelay" }, { "maxseq", "maxseq" }, { "poddur", "poddur" },
    { "ctype", "protocols" }, { "w", "w" }, { "h", "h" }, { "podid", "podid" },
    { "podseq", "podseq" }, { "rqddurs", "rqddurs" }, { "ptype", "plcmt" },
    { "linear", "linearity" }, { "skip", "skip" }, { "skipmin", "skipmin" },
    { "skipafter", "skipafter" }, { "slotinpod", "slotinpod" },
    { "mincpmpersec", "mincpmpersec" }, { "maxext", "maxextended" },
    { "minbitr", "minbitrate" }, { "maxbitr", "maxbitrate" }, { "boxing", "boxingallowed" },
    { "playmethod", "playbackmethod" }, { "playend", "playbackend" },
    { "delivery", "delivery" }, { "pos", "pos" }, { "api", "api" },
    { "comptype", "companiontype" },
    { NULL, NULL }
};


/* The members of from that table names, under their OpenRTB names, into
 * a new object; nulls and an AdCOM "unknown" linearity (0) are left out. */
static cJSON *
renamed(const cJSON *from, const rename_t *table)
{
    const cJSON  *v;
    cJSON        *to, *copy;

    to = cJSON_CreateObject();
    if (to == NULL) {
        return NULL;
    }

    for (; table->adcom != NULL; table++) {
        v = cJSON_GetObjectItemCaseSensitive(from, table->adcom);
        if (v == NULL || cJSON_IsNull(v)
            || (strcmp(table->adcom, "linear") == 0 && cJSON_IsNumber(v) && v->valuedouble == 0))
        {
            continue;
        }
        copy = cJSON_Duplicate(v, 1);
        if (copy == NULL || !cJSON_AddItemToObject(to, table->openrtb, copy)) {
            cJSON_Delete(copy);
            cJSON_Delete(to);
            return NULL;
        }
    }

    return to;
}


/* banner.format: the unit's ad_unit_sizes, each {w, h} */
static int
add_formats(cJSON *banner, const cJSON *sizes)
{
    const cJSON  *sz;
    cJSON        *list, *f;

    if (cJSON_GetArraySize(sizes) == 0) {
        return 0;
    }

    list = cJSON_AddArrayToObject(banner, "format");
    if (list == NULL) {
        return -1;
    }

    cJSON_ArrayForEach(sz, sizes) {
        f = cJSON_CreateObject();
        if (f == NULL || !cJSON_AddItemToArray(list, f)
            || cJSON_AddNumberToObject(f, "w", cJSON_GetNumberValue(
                   cJSON_GetObjectItemCaseSensitive(sz, "w"))) == NULL
            || cJSON_AddNumberToObject(f, "h", cJSON_GetNumberValue(
                   cJSON_GetObjectItemCaseSensitive(sz, "h"))) == NULL)
        {
            return -1;
        }
    }

    return 0;
}


/* imp.native: the placement (Native 1.2's request) as a string, and ver */
static int
add_native(cJSON *imp, const cJSON *placement)
{
    cJSON  *native, *request;
    char   *text;
    int     rc = -1;

    request = placement != NULL ? cJSON_Duplicate(placement, 1) : cJSON_CreateObject();
    if (request == NULL) {
        return -1;
    }

    if (cJSON_GetObjectItemCaseSensitive(request, "ver") == NULL
        && cJSON_AddStringToObject(request, "ver", "1.2") == NULL)
    {
        cJSON_Delete(request);
        return -1;
    }

    text = cJSON_PrintUnformatted(request);
    cJSON_Delete(request);

    native = cJSON_AddObjectToObject(imp, "native");
    if (text != NULL && native != NULL && cJSON_AddStringToObject(native, "request", text) != NULL
        && cJSON_AddStringToObject(native, "ver", "1.2") != NULL)
    {
        rc = 0;
    }

    free(text);
    return rc;
}


static int
add_renamed(cJSON *imp, const char *name, const cJSON *placement, const rename_t *table)
{
    cJSON  *o = renamed(placement, table);

    if (o == NULL || !cJSON_AddItemToObject(imp, name, o)) {
        cJSON_Delete(o);
        return -1;
    }
    return 0;
}


static int
fill_imp(cJSON *imp, const cJSON *unit, unsigned formats)
{
    const cJSON  *v;
    cJSON        *ext;

    if (cJSON_AddStringToObject(imp, "id", "1") == NULL
        || cJSON_AddStringToObject(imp, "tagid",
               cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(unit, "id"))
               ? cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(unit, "id")) : "") == NULL)
    {
        return -1;
    }

    if ((formats & (1u << ADSERVE_FORMAT_DISPLAY))
        && (add_renamed(imp, "banner", cJSON_GetObjectItemCaseSensitive(unit, "display"),
                        banner_names) != 0
            || add_formats(cJSON_GetObjectItemCaseSensitive(imp, "banner"),
                           cJSON_GetObjectItemCaseSensitive(unit, "ad_unit_sizes")) != 0))
    {
        return -1;
    }

    if ((formats & (1u << ADSERVE_FORMAT_VIDEO))
        && add_renamed(imp, "video", cJSON_GetObjectItemCaseSensitive(unit, "video"),
                       video_names) != 0)
    {
        return -1;
    }

    if ((formats & (1u << ADSERVE_FORMAT_NATIVE))
        && add_native(imp, cJSON_GetObjectItemCaseSensitive(unit, "native")) != 0)
    {
        return -1;
    }

    v = cJSON_GetObjectItemCaseSensitive(unit, "instl");
    if (cJSON_AddNumberToObject(imp, "instl", cJSON_IsNumber(v) && v->valuedouble == 1 ? 1 : 0)
        == NULL)
    {
        return -1;
    }

    v = cJSON_GetObjectItemCaseSensitive(unit, "gpid");
    if (cJSON_IsString(v) && v->valuestring[0] != '\0') {
        ext = cJSON_AddObjectToObject(imp, "ext");
        if (ext == NULL || cJSON_AddStringToObject(ext, "gpid", v->valuestring) == NULL) {
            return -1;
        }
    }

    return 0;
}


char *
adserve_rtb_render_imp(const cJSON *unit, unsigned formats, size_t *len)
{
    cJSON  *imp;
    char   *text = NULL;

    imp = cJSON_CreateObject();
    if (imp != NULL && fill_imp(imp, unit, formats) == 0) {
        text = cJSON_PrintUnformatted(imp);
    }
    cJSON_Delete(imp);

    if (text == NULL) {
        return NULL;
    }

    /* open: each source appends its bidfloor and the brace */
    *len = strlen(text) - 1;
    text[*len] = '\0';
    return text;
}


/* the objects whose keys mean something */
enum {
    OBJ_ROOT = ADSERVE_JS_OTHER + 1,
    OBJ_SEATBID,
    OBJ_BID
};

enum {
    F_ID = ADSERVE_JS_NONE + 1,     /* the response's */
    F_CUR,
    F_SEATBIDS,                     /* the array, */
    F_SEATBID,                      /* and each of its elements */
    F_SEAT,
    F_BIDS,
    F_BID,
    F_BID_ID,
    F_IMPID,
    F_PRICE,
    F_ADM,
    F_ADOMAINS,
    F_ADOMAIN,
    F_CRID,
    F_CATS,
    F_CAT,
    F_W,
    F_H,
    F_MTYPE,
    F_NURL,
    F_BURL,
    F_LURL
};

static const adserve_js_key_t  rtb_keys[] = {
    { OBJ_ROOT,    "id",      2, F_ID },
    { OBJ_ROOT,    "cur",     3, F_CUR },
    { OBJ_ROOT,    "seatbid", 7, F_SEATBIDS },
    { OBJ_SEATBID, "seat",    4, F_SEAT },
    { OBJ_SEATBID, "bid",     3, F_BIDS },
    { OBJ_BID,     "id",      2, F_BID_ID },
    { OBJ_BID,     "impid",   5, F_IMPID },
    { OBJ_BID,     "price",   5, F_PRICE },
    { OBJ_BID,     "adm",     3, F_ADM },
    { OBJ_BID,     "adomain", 7, F_ADOMAINS },
    { OBJ_BID,     "crid",    4, F_CRID },
    { OBJ_BID,     "cat",     3, F_CATS },
    { OBJ_BID,     "w",       1, F_W },
    { OBJ_BID,     "h",       1, F_H },
    { OBJ_BID,     "mtype",   5, F_MTYPE },
    { OBJ_BID,     "nurl",    4, F_NURL },
    { OBJ_BID,     "burl",    4, F_BURL },
    { OBJ_BID,     "lurl",    4, F_LURL },
};


/* ---- site or app --------------------------------------------------------- */

static int
add_str(cJSON *o, const char *name, const cJSON *from, const char *member)
{
    const char  *v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(from, member));

    return v == NULL || v[0] == '\0' || cJSON_AddStringToObject(o, name, v) != NULL ? 0 : -1;
}


/* site.publisher / app.publisher from PublisherSettings */
static int
add_publisher(cJSON *place, const cJSON *ps)
{
    const cJSON  *ext = cJSON_GetObjectItemCaseSensitive(ps, "ext");
    cJSON        *pub, *copy;
    const char   *id = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ps, "id"));

    if (ps == NULL || cJSON_IsNull(ps)) {
        return 0;
    }

    pub = cJSON_AddObjectToObject(place, "publisher");
    if (pub == NULL
        || add_str(pub, "id", ps, id != NULL && id[0] != '\0' ? "id" : "seller_id") != 0
        || add_str(pub, "name", ps,
                   cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ps, "name")) != NULL
                   ? "name" : "company") != 0
        || add_str(pub, "domain", ps, "domain") != 0)
    {
        return -1;
    }

    if (ext != NULL && !cJSON_IsNull(ext)) {
        copy = cJSON_Duplicate(ext, 1);
        if (copy == NULL || !cJSON_AddItemToObject(pub, "ext", copy)) {
            cJSON_Delete(copy);
            return -1;
        }
    }

    return 0;
}


static int
fill_app(cJSON *app, const cJSON *inf, int os)
{
    const cJSON  *cat = cJSON_GetObjectItemCaseSensitive(inf, "cat");
    const char   *bundle = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
                               inf, os == ADSERVE_RTB_OS_ANDROID ? "android_bundle" : "ios_bundle"));
    cJSON        *copy;

    if (bundle == NULL || bundle[0] == '\0') {
        return -1;
    }

    if (cJSON_AddStringToObject(app, "bundle", bundle) == NULL
        || add_str(app, "name", inf, "app_name") != 0)
    {
        return -1;
    }

    if (cJSON_IsArray(cat) && cJSON_GetArraySize(cat) > 0) {
        copy = cJSON_Duplicate(cat, 1);
        if (copy == NULL || !cJSON_AddItemToObject(app, "cat", copy)) {
            cJSON_Delete(copy);
            return -1;
        }
    }

    return 0;
}


char *
adserve_rtb_render_place(const cJSON *unit, int place, size_t *len)
{
    const cJSON  *ext = cJSON_GetObjectItemCaseSensitive(unit, "ext");
    const cJSON  *ps = cJSON_GetObjectItemCaseSensitive(ext, "publisher");
    cJSON        *wrap, *o;
    char         *text = NULL;
    int           rc;

    wrap = cJSON_CreateObject();
    o = cJSON_AddObjectToObject(wrap, place == ADSERVE_RTB_SITE ? "site" : "app");
    if (o == NULL) {
        cJSON_Delete(wrap);
        return NULL;
    }

    if (place == ADSERVE_RTB_SITE) {
        rc = add_str(o, "page", ps, "page") == 0 && add_str(o, "domain", ps, "domain") == 0 ? 0 : -1;
    } else {
        rc = fill_app(o, cJSON_GetObjectItemCaseSensitive(ext, "implicit_app_inference"), place);
    }

    if (rc == 0 && add_publisher(o, ps) == 0) {
        text = cJSON_PrintUnformatted(wrap);
    }
    cJSON_Delete(wrap);

    if (text == NULL) {
        return NULL;
    }

    /* the member alone: "site":{...} */
    *len = strlen(text) - 2;
    memmove(text, text + 1, *len);
    text[*len] = '\0';
    return text;
}


/* Whether hay (n bytes) holds needle (m bytes), ASCII case aside. */
static int
has_word(const char *hay, size_t n, const char *needle, size_t m)
{
    size_t  i, j;

    for (i = 0; m > 0 && i + m <= n; i++) {
        for (j = 0; j < m; j++) {
            char  a = hay[i + j], b = needle[j];

            if (a >= 'A' && a <= 'Z') {
                a = (char) (a - 'A' + 'a');
            }
            if (b >= 'A' && b <= 'Z') {
                b = (char) (b - 'A' + 'a');
            }
            if (a != b) {
                break;
            }
        }
        if (j == m) {
            return 1;
        }
    }

    return 0;
}


int
adserve_rtb_app_of(const adserve_str_t *keywords, size_t nkeywords, const char *ua, size_t len)
{
    size_t  i;

    for (i = 0; i < nkeywords; i++) {
        if (has_word(ua, len, keywords[i].data, keywords[i].len)) {
            break;
        }
    }

    if (i == nkeywords) {
        return ADSERVE_RTB_SITE;
    }

    if (has_word(ua, len, "Android", 7)) {
        return ADSERVE_RTB_OS_ANDROID;
    }

    return has_word(ua, len, "iPhone", 6) || has_word(ua, len, "iPad", 4)
           || has_word(ua, len, "iPod", 4)
           ? ADSERVE_RTB_OS_IOS : ADSERVE_RTB_SITE;
}


/* ---- a bid response ----------------------------------------------------------- */

/* The bid being read: s->slot, set when its object opened. */
static adserve_rtb_bid_t *
current_bid(adserve_js_scanner_t *s)
{
    adserve_rtb_response_t  *r = s->out;

    return s->slot >= 0 ? &r->bids[s->slot] : NULL;
}


/* The text of a JSON number (validated) as micros of its value, rounded
 * half up: -1 when negative or above ADSERVE_RTB_PRICE_MAX_MICROS. Up to
 * 18 significant digits count; integer arithmetic, no locale. */
static int64_t
price_micros(const char *p, const char *end)
{
    uint64_t  m = 0;
    int64_t   e10 = 6, exp = 0;
    int       digits = 0, neg_exp = 0;

    if (p < end && *p == '-') {
        /* "-0" and its kin are 0; any other negative price is no price */
        for (p++; p < end && (*p == '0' || *p == '.'); p++) { /* void */ }
        return p == end || *p == 'e' || *p == 'E' ? 0 : -1;
    }

    for (; p < end && *p >= '0' && *p <= '9'; p++) {
        if (digits < 18) {
            m = m * 10 + (uint64_t) (*p - '0');
            digits += m != 0;
        } else {
            e10++;
        }
    }

    if (p < end && *p == '.') {
        for (p++; p < end && *p >= '0' && *p <= '9'; p++) {
            if (digits < 18) {
                m = m * 10 + (uint64_t) (*p - '0');
                digits += m != 0;
                e10--;
            }
        }
    }

    if (p < end && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < end && (*p == '+' || *p == '-')) {
            neg_exp = *p++ == '-';
        }
        for (; p < end && *p >= '0' && *p <= '9'; p++) {
            if (exp < 100000) {
                exp = exp * 10 + (*p - '0');
            }
        }
        e10 += neg_exp ? -exp : exp;
    }

    if (m == 0) {
        return 0;
    }

    for (; e10 < -1; e10++) {
        m /= 10;
        if (m == 0) {
            return 0;
        }
    }
    if (e10 == -1) {
        m = (m + 5) / 10;
    }

    for (; e10 > 0; e10--) {
        if (m > (uint64_t) ADSERVE_RTB_PRICE_MAX_MICROS) {
            return -1;
        }
        m *= 10;
    }

    return m > (uint64_t) ADSERVE_RTB_PRICE_MAX_MICROS ? -1 : (int64_t) m;
}


/* One string of a list (adomain, cat): kept while there is room and it
 * fits, else the list is marked as not kept whole. */
static int
list_string(adserve_js_scanner_t *s, adserve_str_t *list, uint8_t *n, size_t max,
    adserve_rtb_bid_t *b)
{
    adserve_str_t  v = { NULL, 0 };
    size_t         len;

    if (*n >= max) {
        b->adomain_over |= list == b->adomain;
        b->cat_over |= list == b->cat;
        return adserve_js_string(s, NULL, 0, &len);
    }

    if (adserve_js_string_in_place(s, &v, ADSERVE_RTB_ID_MAX) != ADSERVE_JS_OK) {
        return ADSERVE_JS_ERR;
    }

    if (v.data == NULL) {
        b->adomain_over |= list == b->adomain;
        b->cat_over |= list == b->cat;
        return ADSERVE_JS_OK;
    }

    list[(*n)++] = v;
    return ADSERVE_JS_OK;
}


static int
rtb_string(adserve_js_scanner_t *s, int f)
{
    adserve_rtb_response_t  *r = s->out;
    adserve_rtb_bid_t       *b = current_bid(s);
    adserve_str_t           *dst = NULL;
    size_t                   max = ADSERVE_RTB_ID_MAX, len;

    switch (f) {
    case F_ID:      dst = &r->id; break;
    case F_CUR:     dst = &r->cur; break;
    case F_SEAT:
        if (r->nseatbids > 0 && r->nseatbids <= ADSERVE_RTB_SEATS_MAX) {
            dst = &r->seat[r->nseatbids - 1];
        }
        break;
    default:
        break;
    }

    if (b != NULL) {
        switch (f) {
        case F_BID_ID:  dst = &b->id; break;
        case F_IMPID:   dst = &b->impid; break;
        case F_CRID:    dst = &b->crid; break;
        case F_ADM:     dst = &b->adm; max = ADSERVE_RTB_ADM_MAX; break;
        case F_NURL:    dst = &b->nurl; max = ADSERVE_RTB_URL_MAX; break;
        case F_BURL:    dst = &b->burl; max = ADSERVE_RTB_URL_MAX; break;
        case F_LURL:    dst = &b->lurl; max = ADSERVE_RTB_URL_MAX; break;
        case F_ADOMAIN:
            return list_string(s, b->adomain, &b->nadomain, ADSERVE_RTB_ADOMAINS_MAX, b);
        case F_CAT:
            return list_string(s, b->cat, &b->ncat, ADSERVE_RTB_CATS_MAX, b);
        default:
            break;
        }
    }

    return dst != NULL ? adserve_js_string_in_place(s, dst, max)
                       : adserve_js_string(s, NULL, 0, &len);
}


static void
rtb_number(adserve_js_scanner_t *s, int f, size_t start, long ival)
{
    adserve_rtb_bid_t  *b = current_bid(s);

    if (b == NULL) {
        return;
    }

    switch (f) {
    case F_PRICE:
        b->price_micros = price_micros(s->buf + start, s->buf + s->pos);
        break;
    case F_W:
        b->w = ival > 0 && ival <= 10000 ? (int) ival : 0;
        break;
    case F_H:
        b->h = ival > 0 && ival <= 10000 ? (int) ival : 0;
        break;
    case F_MTYPE:
        b->mtype = ival >= 1 && ival <= 4 ? (int) ival : 0;
        break;
    case F_ADOMAIN:
        b->adomain_over = 1;    /* not a domain: the list is not whole */
        break;
    case F_CAT:
        b->cat_over = 1;
        break;
    default:
        break;
    }
}


static void
clear_bid(adserve_rtb_bid_t *b, int seatbid)
{
    memset(b, 0, sizeof(*b));
    b->price_micros = -1;
    b->seatbid = seatbid;
}


/* A key seen again: its last value wins, as for the ad request. */
static void
rtb_reset(adserve_js_scanner_t *s, int f)
{
    adserve_rtb_response_t  *r = s->out;
    adserve_rtb_bid_t       *b = current_bid(s);
    static const adserve_str_t  none = { NULL, 0 };

    switch (f) {
    case F_ID:       r->id = none; return;
    case F_CUR:      r->cur = none; return;
    case F_SEATBIDS: r->nseatbids = 0; r->nbids = 0; r->bids_over = 0; s->slot = -1; return;
    case F_SEAT:
        if (r->nseatbids > 0 && r->nseatbids <= ADSERVE_RTB_SEATS_MAX) {
            r->seat[r->nseatbids - 1] = none;
        }
        return;
    case F_BIDS:
        /* the seatbid's bids so far are the table's last ones */
        while (r->nbids > 0 && r->bids[r->nbids - 1].seatbid == r->nseatbids - 1) {
            r->nbids--;
        }
        s->slot = -1;
        return;
    default:
        break;
    }

    if (b == NULL) {
        return;
    }

    switch (f) {
    case F_BID_ID:   b->id = none; break;
    case F_IMPID:    b->impid = none; break;
    case F_PRICE:    b->price_micros = -1; break;
    case F_ADM:      b->adm = none; break;
    case F_CRID:     b->crid = none; break;
    case F_NURL:     b->nurl = none; break;
    case F_BURL:     b->burl = none; break;
    case F_LURL:     b->lurl = none; break;
    case F_W:        b->w = 0; break;
    case F_H:        b->h = 0; break;
    case F_MTYPE:    b->mtype = 0; break;
    case F_ADOMAINS: b->nadomain = 0; b->adomain_over = 0; break;
    case F_CATS:     b->ncat = 0; b->cat_over = 0; break;
    default:         break;
    }
}


/* The objects: the root, each seatbid (counted, for its seat) and each
 * bid (a row of the table while there is one, else skipped, counted). */
static int
rtb_object(adserve_js_scanner_t *s, int f)
{
    adserve_rtb_response_t  *r = s->out;

    switch (f) {
    case ADSERVE_JS_NONE:
        return OBJ_ROOT;

    case F_SEATBID:
        r->nseatbids++;
        s->slot = -1;
        return OBJ_SEATBID;

    case F_BID:
        if (r->nbids >= ADSERVE_RTB_BIDS_MAX) {
            r->bids_over++;
            s->slot = -1;
            return ADSERVE_JS_OTHER;
        }
        s->slot = (int) r->nbids++;
        clear_bid(&r->bids[s->slot], r->nseatbids - 1);
        return OBJ_BID;

    default:
        return ADSERVE_JS_OTHER;
    }
}


static int
rtb_element(int f)
{
    switch (f) {
    case F_SEATBIDS: return F_SEATBID;
    case F_BIDS:     return F_BID;
    case F_ADOMAINS: return F_ADOMAIN;
    case F_CATS:     return F_CAT;
    default:         return ADSERVE_JS_NONE;
    }
}


static const adserve_js_grammar_t  rtb_grammar = {
    rtb_keys, sizeof(rtb_keys) / sizeof(rtb_keys[0]),
    rtb_reset, rtb_string, rtb_number, rtb_object, NULL, rtb_element, NULL, NULL, 0
};


int
adserve_rtb_parse_response(char *buf, size_t len, adserve_rtb_response_t *r, const char **err)
{
    return adserve_js_read(buf, len, &rtb_grammar, r, sizeof(*r), err);
}


adserve_str_t
adserve_rtb_bid_seat(const adserve_rtb_response_t *r, const adserve_rtb_bid_t *b)
{
    static const adserve_str_t  none = { NULL, 0 };

    return b->seatbid >= 0 && b->seatbid < ADSERVE_RTB_SEATS_MAX ? r->seat[b->seatbid] : none;
}


const char *
adserve_rtb_bid_unusable(const adserve_rtb_bid_t *b)
{
    if (b->impid.data == NULL) {
        return "no impid";
    }
    if (b->price_micros <= 0) {
        return "no price above 0";
    }
    if (b->adm.data == NULL || b->adm.len == 0) {
        return "no markup (adm)";
    }
    if (b->adomain_over) {
        return "more adomains than can be checked";
    }
    if (b->cat_over) {
        return "more categories than can be checked";
    }
    return NULL;
}


/* ---- blocks ------------------------------------------------------------ */

/* d is domain or one of its subdomains, ASCII case aside */
static int
domain_under(const adserve_str_t *d, const adserve_str_t *domain)
{
    size_t  off;

    if (d->len < domain->len || domain->len == 0) {
        return 0;
    }

    off = d->len - domain->len;
    if (off > 0 && d->data[off - 1] != '.') {
        return 0;
    }

    return strncasecmp(d->data + off, domain->data, domain->len) == 0;
}


/* cat is code or one of its subcategories: IAB7 holds IAB7-39 */
static int
category_under(const adserve_str_t *cat, const adserve_str_t *code)
{
    return cat->len >= code->len && code->len > 0
           && memcmp(cat->data, code->data, code->len) == 0
           && (cat->len == code->len || cat->data[code->len] == '-');
}


const adserve_rtb_block_t *
adserve_rtb_blocked(const adserve_rtb_bid_t *b, const adserve_rtb_block_t *blocks, size_t n)
{
    const adserve_rtb_block_t  *k;
    unsigned                    i;

    for (k = blocks; k < blocks + n; k++) {
        switch (k->kind) {

        case ADSERVE_BLOCK_ADOMAIN:
            for (i = 0; i < b->nadomain; i++) {
                if (domain_under(&b->adomain[i], &k->value)) {
                    return k;
                }
            }
            break;

        case ADSERVE_BLOCK_CRID:
            if (b->crid.len == k->value.len
                && memcmp(b->crid.data, k->value.data, k->value.len) == 0)
            {
                return k;
            }
            break;

        case ADSERVE_BLOCK_CAT:
            for (i = 0; i < b->ncat; i++) {
                if (category_under(&b->cat[i], &k->value)) {
                    return k;
                }
            }
            break;

        default:
            break;
        }
    }

    return NULL;
}


/* ,"name":[the values of kind] when there is one */
static void
render_list(adserve_jsonw_t *w, const char *name, int kind,
    const adserve_rtb_block_t *blocks, size_t n)
{
    size_t  i, k = 0;

    for (i = 0; i < n; i++) {
        if (blocks[i].kind != kind) {
            continue;
        }
        if (k++ == 0) {
            adserve_jsonw_raw(w, name, strlen(name));
        } else {
            adserve_jsonw_lit(w, ",");
        }
        adserve_jsonw_lit(w, "\"");
        adserve_jsonw_esc(w, blocks[i].value.data, blocks[i].value.len, 0);
        adserve_jsonw_lit(w, "\"");
    }

    if (k) {
        adserve_jsonw_lit(w, "]");
    }
}


char *
adserve_rtb_render_blocks(const adserve_rtb_block_t *blocks, size_t n, size_t *len)
{
    adserve_jsonw_t  w;
    char            *text;

    adserve_jsonw_init(&w);
    render_list(&w, ",\"bcat\":[", ADSERVE_BLOCK_CAT, blocks, n);
    render_list(&w, ",\"badv\":[", ADSERVE_BLOCK_ADOMAIN, blocks, n);

    text = w.oom ? NULL : malloc(w.len + 1);
    if (text != NULL) {
        if (w.len) {
            memcpy(text, w.data, w.len);
        }
        text[w.len] = '\0';
        *len = w.len;
    }
    adserve_jsonw_free(&w);

    return text;
}


/* ---- notices ----------------------------------------------------------- */

size_t
adserve_rtb_price(char *out, int64_t micros)
{
    int  n, i;

    if (micros < 0) {
        micros = 0;
    }

    n = snprintf(out, 24, "%lld.%06lld", (long long) (micros / 1000000),
                 (long long) (micros % 1000000));

    /* "1.250000" as "1.25", "3.000000" as "3" */
    for (i = n - 1; out[i] == '0'; i--) {
        /* void */
    }
    n = out[i] == '.' ? i : i + 1;
    out[n] = '\0';

    return (size_t) n;
}


typedef enum {
    M_PRICE = 0, M_ID, M_BID_ID, M_IMP_ID, M_SEAT_ID, M_CURRENCY, M_LOSS,
    M_AD_ID, M_MBR, M_MIN_TO_WIN, M_COUNT
} macro_e;

static const char *const  macro_names[M_COUNT] = {
    "AUCTION_PRICE", "AUCTION_ID", "AUCTION_BID_ID", "AUCTION_IMP_ID", "AUCTION_SEAT_ID",
    "AUCTION_CURRENCY", "AUCTION_LOSS", "AUCTION_AD_ID", "AUCTION_MBR",
    "AUCTION_MIN_TO_WIN"
};


/* v, %-escaped as a query argument's value when url */
static size_t
put_value(char *out, size_t room, const adserve_str_t *v, int url)
{
    static const char  hex[] = "0123456789ABCDEF";
    size_t             i, n = 0;
    unsigned char      c;

    for (i = 0; i < v->len; i++) {
        c = (unsigned char) v->data[i];
        if (!url || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
            || (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' || c == '~')
        {
            if (n + 1 > room) {
                return (size_t) -1;
            }
            out[n++] = (char) c;
            continue;
        }
        if (n + 3 > room) {
            return (size_t) -1;
        }
        out[n++] = '%';
        out[n++] = hex[c >> 4];
        out[n++] = hex[c & 15];
    }

    return n;
}


/* The macro at s ("${NAME}"), its length in *mlen; -1 when none is. */
static int
macro_at(const char *s, size_t left, size_t *mlen)
{
    size_t  n;
    int     k;

    for (k = 0; k < M_COUNT; k++) {
        n = strlen(macro_names[k]);
        if (left >= n + 3 && s[1] == '{' && s[n + 2] == '}'
            && memcmp(s + 2, macro_names[k], n) == 0)
        {
            *mlen = n + 3;
            return k;
        }
    }

    return -1;
}


size_t
adserve_rtb_expand(char *out, size_t cap, const char *s, size_t len,
    const adserve_rtb_macros_t *m, int url)
{
    const adserve_str_t  *v;
    adserve_str_t         num;
    char                  buf[24];
    size_t                i = 0, o = 0, mlen, n;
    int                   k;

    while (i < len) {
        k = s[i] == '$' ? macro_at(s + i, len - i, &mlen) : -1;
        if (k < 0) {
            if (o == cap) {
                return (size_t) -1;
            }
            out[o++] = s[i++];
            continue;
        }

        num.data = buf;
        num.len = 0;
        v = &num;
        switch (k) {
        case M_PRICE:    num.len = adserve_rtb_price(buf, m->price_micros); break;
        case M_ID:       v = &m->auction_id; break;
        case M_BID_ID:   v = &m->bid_id; break;
        case M_IMP_ID:   v = &m->imp_id; break;
        case M_SEAT_ID:  v = &m->seat_id; break;
        case M_CURRENCY: v = &m->currency; break;
        case M_LOSS:     num.len = (size_t) snprintf(buf, sizeof(buf), "%d", m->loss); break;
        default:         break;
        }

        n = v->len ? put_value(out + o, cap - o, v, url) : 0;
        if (n == (size_t) -1) {
            return (size_t) -1;
        }
        o += n;
        i += mlen;
    }

    return o;
}
