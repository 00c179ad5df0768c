/*
 * The members of a record of a hot kind, read by the strict scanner as
 * cJSON reads them (adserve_fields.h).
 *
 * The scan records where the first member of each known name is and what
 * it holds (a span of the text, a type, a number's value); strings are
 * decoded later, by the parse, into the room it has for them. Only the
 * string lists are decoded during the scan, into the sink, since their
 * length is unknown until their array ends.
 */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "adserve_fields.h"
#include "adserve_json_scan.h"


/* The objects whose keys mean something */
enum {
    OBJ_LI = ADSERVE_JS_OTHER + 1,
    OBJ_CREATIVE,
    OBJ_LICA,
    OBJ_GOAL,
    OBJ_CAP,
    OBJ_TARGETING,
    OBJ_AD_UNITS
};

/* The scanner's fields are the members' (adserve_fl_e) plus one, 0 being
 * "nothing to read"; past them, an element of one of the lists. */
#define FIELD(fl)       ((int) (fl) + 1)
#define MEMBER(f)       ((adserve_fl_e) ((f) - 1))
#define ITEM_OF(list)   (FIELD(ADSERVE_FL_COUNT) + (list))

/* cJSON copies a number into 64 bytes, its NUL included: a longer one
 * leaves digits behind, and the record fails to parse */
#define NUMBER_MAX  63


typedef struct {
    const char   *name;
    size_t        len;
    adserve_fl_e  fl;
} field_key_t;

#define K(name, fl)  { name, sizeof(name) - 1, fl }

static const field_key_t  li_keys[] = {
    K("id", ADSERVE_FL_ID),
    K("type", ADSERVE_FL_TYPE),
    K("status", ADSERVE_FL_STATUS),
    K("approval", ADSERVE_FL_APPROVAL),
    K("priority", ADSERVE_FL_PRIORITY),
    K("cost_type", ADSERVE_FL_COST_TYPE),
    K("rate", ADSERVE_FL_RATE),
    K("goal", ADSERVE_FL_GOAL),
    K("delivery", ADSERVE_FL_DELIVERY),
    K("frequency_caps", ADSERVE_FL_CAPS),
    K("start_at", ADSERVE_FL_START_AT),
    K("end_at", ADSERVE_FL_END_AT),
    K("order_id", ADSERVE_FL_ORDER_ID),
    K("targeting", ADSERVE_FL_TARGETING)
};

static const field_key_t  creative_keys[] = {
    K("id", ADSERVE_FL_ID),
    K("type", ADSERVE_FL_TYPE),
    K("approval", ADSERVE_FL_APPROVAL),
    K("w", ADSERVE_FL_W),
    K("h", ADSERVE_FL_H),
    K("categories", ADSERVE_FL_CATEGORIES),
    K("landing_url", ADSERVE_FL_LANDING_URL),
    K("interstitial", ADSERVE_FL_INTERSTITIAL),
    K("image_url", ADSERVE_FL_IMAGE_URL),
    K("html", ADSERVE_FL_HTML)
};

static const field_key_t  lica_keys[] = {
    K("id", ADSERVE_FL_ID),
    K("status", ADSERVE_FL_STATUS),
    K("line_item_id", ADSERVE_FL_LINE_ITEM_ID),
    K("creative_id", ADSERVE_FL_CREATIVE_ID),
    K("weight", ADSERVE_FL_WEIGHT)
};

static const field_key_t  goal_keys[] = {
    K("units", ADSERVE_FL_GOAL_UNITS),
    K("type", ADSERVE_FL_GOAL_TYPE)
};

static const field_key_t  cap_keys[] = {
    K("max", ADSERVE_FL_CAP_MAX),
    K("seconds", ADSERVE_FL_CAP_SECONDS)
};

static const field_key_t  targeting_keys[] = {
    K("ad_units", ADSERVE_FL_AD_UNITS),
    K("placements", ADSERVE_FL_PLACEMENTS)
};

static const field_key_t  ad_units_keys[] = {
    K("include", ADSERVE_FL_INCLUDE),
    K("exclude", ADSERVE_FL_EXCLUDE)
};

#define KEYS(k)  { k, sizeof(k) / sizeof(k[0]) }

/* each object kind's keys */
static const struct {
    const field_key_t  *keys;
    size_t              n;
} keys_of[] = {
    [OBJ_LI] = KEYS(li_keys),
    [OBJ_CREATIVE] = KEYS(creative_keys),
    [OBJ_LICA] = KEYS(lica_keys),
    [OBJ_GOAL] = KEYS(goal_keys),
    [OBJ_CAP] = KEYS(cap_keys),
    [OBJ_TARGETING] = KEYS(targeting_keys),
    [OBJ_AD_UNITS] = KEYS(ad_units_keys)
};

#undef KEYS
#undef K


/* The string lists, by their index in fl->lists */
static int
list_of(adserve_fl_e fl)
{
    switch (fl) {
    case ADSERVE_FL_INCLUDE:
        return 0;
    case ADSERVE_FL_EXCLUDE:
        return 1;
    case ADSERVE_FL_PLACEMENTS:
        return 2;
    case ADSERVE_FL_CATEGORIES:
        return 3;
    default:
        return -1;
    }
}


int
adserve_fields_kind(adserve_kind_e kind)
{
    return kind == ADSERVE_KIND_LINE_ITEMS || kind == ADSERVE_KIND_CREATIVES
           || kind == ADSERVE_KIND_LICAS;
}


/* A key of an object of kind in: the first member of a known name is read,
 * a later one of the same name is not (cJSON finds the first). A name ends
 * at its first NUL, as cJSON's strcmp sees it. */
static int
fields_key(adserve_js_scanner_t *s, int in, const char *key, size_t len)
{
    adserve_fields_t         *fl = s->out;
    const field_key_t        *keys;
    const char               *nul;
    size_t                    i, n;

    n = len < ADSERVE_JS_KEY_MAX ? len : ADSERVE_JS_KEY_MAX;
    nul = memchr(key, '\0', n);
    if (nul != NULL) {
        len = (size_t) (nul - key);

    } else if (len >= ADSERVE_JS_KEY_MAX) {
        /* longer than every name (the buffer holds the longest and one
         * byte more) */
        len = SIZE_MAX;
    }

    keys = keys_of[in].keys;

    for (i = 0; i < keys_of[in].n; i++) {
        if (keys[i].len == len && keys[i].name[0] == key[0]
            && memcmp(keys[i].name, key, len) == 0)
        {
            break;
        }
    }

    if (i == keys_of[in].n) {
        /* what the targeting compiler may read: any other member */
        fl->tg_other |= in == OBJ_TARGETING;
        return ADSERVE_JS_NONE;
    }

    if (fl->v[keys[i].fl].type != ADSERVE_FV_ABSENT) {
        return ADSERVE_JS_NONE;
    }

    /* present, of a type the value's own callback tells (an array: none) */
    fl->v[keys[i].fl].type = ADSERVE_FV_OTHER;
    fl->v[keys[i].fl].start = (uint32_t) s->pos;
    fl->v[keys[i].fl].end = (uint32_t) s->pos;

    return FIELD(keys[i].fl);
}


/* Not called: fields_key decides. */
static void
fields_reset(adserve_js_scanner_t *s, int f)
{
    (void) s;
    (void) f;
}


/* An element of a list: decoded into the sink, cut at its first NUL. */
static int
list_item(adserve_js_scanner_t *s, adserve_fields_t *fl, int list)
{
    adserve_fl_list_t  *l = &fl->lists[list];
    char               *dst;
    size_t              room, n;

    room = fl->sink_cap - fl->sink_used;
    dst = fl->sink_full ? NULL : fl->sink + fl->sink_used;

    if (adserve_js_string(s, dst, room, &n) != ADSERVE_JS_OK) {
        return ADSERVE_JS_ERR;
    }

    if (dst == NULL || n >= room) {
        fl->sink_full = 1;
        return ADSERVE_JS_OK;
    }

    dst[n] = '\0';

    if (l->n == 0) {
        l->off = fl->sink_used;
    }

    /* the sink holds a list's strings one after the other */
    fl->sink_used += strlen(dst) + 1;
    l->n++;

    return ADSERVE_JS_OK;
}


static int
fields_string(adserve_js_scanner_t *s, int f)
{
    adserve_fields_t  *fl = s->out;
    adserve_fv_t      *v;
    size_t             n;

    if (f >= ITEM_OF(0)) {
        return list_item(s, fl, f - ITEM_OF(0));
    }

    if (f == FIELD(ADSERVE_FL_CAP)) {
        return adserve_js_string(s, NULL, 0, &n);
    }

    v = &fl->v[MEMBER(f)];
    v->type = ADSERVE_FV_STRING;

    if (adserve_js_string(s, NULL, 0, &n) != ADSERVE_JS_OK) {
        return ADSERVE_JS_ERR;
    }

    v->end = (uint32_t) s->pos;
    /* every escape decodes shorter than it is written; a raw NUL is not
     * JSON */
    v->plain = n + 2 == v->end - v->start;

    return ADSERVE_JS_OK;
}


/* A number's text that is an integer of at most 15 digits, exactly as
 * strtod makes it (below 2^53, every integer is a double); *exact 0 for any
 * other, which strtod reads. Most numbers of a record are such: sizes,
 * priorities, weights. */
static double
integer(const char *p, size_t n, int *exact)
{
    uint64_t  v = 0;
    size_t    i, neg = p[0] == '-';

    *exact = 0;

    if (n - neg == 0 || n - neg > 15) {
        return 0;
    }

    for (i = neg; i < n; i++) {
        if (p[i] < '0' || p[i] > '9') {
            return 0;
        }
        v = v * 10 + (uint64_t) (p[i] - '0');
    }

    *exact = 1;

    return neg ? -(double) v : (double) v;
}


static void
fields_number(adserve_js_scanner_t *s, int f, size_t start, long ival)
{
    adserve_fields_t  *fl = s->out;
    adserve_fv_t      *v;
    char               num[NUMBER_MAX + 1];
    size_t             n = s->pos - start;
    int                exact;

    (void) ival;

    if (f >= ITEM_OF(0) || f == FIELD(ADSERVE_FL_CAP)) {
        return;
    }

    v = &fl->v[MEMBER(f)];
    v->type = ADSERVE_FV_NUMBER;
    v->end = (uint32_t) s->pos;
    v->num = integer(s->buf + start, n, &exact);

    if (!exact) {
        /* the grammar's number_max: never longer */
        memcpy(num, s->buf + start, n);
        num[n] = '\0';
        v->num = strtod(num, NULL);
    }
}


static void
fields_literal(adserve_js_scanner_t *s, int f, int c)
{
    adserve_fields_t  *fl = s->out;
    adserve_fv_t      *v;

    if (f >= ITEM_OF(0) || f == FIELD(ADSERVE_FL_CAP)) {
        return;
    }

    v = &fl->v[MEMBER(f)];
    v->type = c == 't' ? ADSERVE_FV_TRUE : c == 'f' ? ADSERVE_FV_FALSE : ADSERVE_FV_NULL;
    v->end = (uint32_t) s->pos;
}


static int
fields_object(adserve_js_scanner_t *s, int f)
{
    adserve_fields_t  *fl = s->out;

    if (f == ADSERVE_JS_NONE) {
        return fl->kind == ADSERVE_KIND_LINE_ITEMS ? OBJ_LI
               : fl->kind == ADSERVE_KIND_CREATIVES ? OBJ_CREATIVE : OBJ_LICA;
    }

    if (f >= ITEM_OF(0)) {
        return ADSERVE_JS_OTHER;
    }

    if (f == FIELD(ADSERVE_FL_CAP)) {
        /* a cap of its own: its members are read afresh */
        if (fl->ncaps == ADSERVE_FL_CAPS_MAX) {
            fl->caps_over = 1;
            return ADSERVE_JS_OTHER;
        }
        fl->v[ADSERVE_FL_CAP_MAX].type = ADSERVE_FV_ABSENT;
        fl->v[ADSERVE_FL_CAP_SECONDS].type = ADSERVE_FV_ABSENT;
        return OBJ_CAP;
    }

    fl->v[MEMBER(f)].type = ADSERVE_FV_OBJECT;

    switch (MEMBER(f)) {
    case ADSERVE_FL_GOAL:
        return OBJ_GOAL;
    case ADSERVE_FL_TARGETING:
        return OBJ_TARGETING;
    case ADSERVE_FL_AD_UNITS:
        return OBJ_AD_UNITS;
    default:
        return ADSERVE_JS_OTHER;
    }
}


static void
fields_object_done(adserve_js_scanner_t *s, int f, size_t start)
{
    adserve_fields_t  *fl = s->out;

    (void) start;

    if (f >= ITEM_OF(0)) {
        return;
    }

    if (f == FIELD(ADSERVE_FL_CAP)) {
        if (!fl->caps_over) {
            fl->caps[fl->ncaps][0] = adserve_fields_num(fl, ADSERVE_FL_CAP_MAX, 0);
            fl->caps[fl->ncaps][1] = adserve_fields_num(fl, ADSERVE_FL_CAP_SECONDS, 0);
            fl->ncaps++;
        }
        return;
    }

    fl->v[MEMBER(f)].end = (uint32_t) s->pos;
}


static int
fields_element(int f)
{
    int  list;

    if (f == FIELD(ADSERVE_FL_CAPS)) {
        return FIELD(ADSERVE_FL_CAP);
    }

    list = f > ADSERVE_JS_NONE && f < ITEM_OF(0) ? list_of(MEMBER(f)) : -1;

    return list >= 0 ? ITEM_OF(list) : ADSERVE_JS_NONE;
}


static const adserve_js_grammar_t  fields_grammar = {
    NULL, 0,
    fields_reset, fields_string, fields_number, fields_object, fields_object_done,
    fields_element, fields_key, fields_literal, NUMBER_MAX
};


int
adserve_fields_scan(adserve_fields_t *fl, adserve_kind_e kind, const char *text, size_t len,
    char *sink, size_t cap)
{
    adserve_js_scanner_t  s;

    memset(fl, 0, sizeof(adserve_fields_t));
    fl->text = text;
    fl->len = len;
    fl->kind = kind;
    fl->sink = sink;
    fl->sink_cap = cap;

    /* spans are 32-bit: a longer record (none is) is cJSON's */
    if (!adserve_fields_kind(kind) || len > UINT32_MAX) {
        return -1;
    }

    /* the grammar decodes nothing in place: the text stays as it is */
    if (adserve_js_scan(&s, (char *) text, len, &fields_grammar, fl) != ADSERVE_JS_OK
        || fl->caps_over)
    {
        return -1;
    }

    return fl->sink_full ? 1 : 0;
}


const adserve_fl_list_t *
adserve_fields_list(const adserve_fields_t *fl, adserve_fl_e f)
{
    int  list = list_of(f);

    return list >= 0 ? &fl->lists[list] : NULL;
}


size_t
adserve_fields_len(const adserve_fields_t *fl, adserve_fl_e f)
{
    return (size_t) (fl->v[f].end - fl->v[f].start) + 1;
}


const char *
adserve_fields_plain(const adserve_fields_t *fl, adserve_fl_e f, size_t *len)
{
    if (fl->v[f].type != ADSERVE_FV_STRING || !fl->v[f].plain) {
        return NULL;
    }

    *len = fl->v[f].end - fl->v[f].start - 2;

    return fl->text + fl->v[f].start + 1;
}


const char *
adserve_fields_str(const adserve_fields_t *fl, adserve_fl_e f, char *dst)
{
    adserve_js_scanner_t  s;
    const char           *plain;
    size_t                n;

    if (fl->v[f].type != ADSERVE_FV_STRING) {
        return NULL;
    }

    plain = adserve_fields_plain(fl, f, &n);
    if (plain != NULL) {
        memcpy(dst, plain, n);
        dst[n] = '\0';
        return dst;
    }

    memset(&s, 0, sizeof(s));
    s.buf = (char *) fl->text;
    s.len = fl->len;
    s.pos = fl->v[f].start;

    /* scanned whole before: it decodes, into fewer bytes than its text */
    if (adserve_js_string(&s, dst, adserve_fields_len(fl, f), &n) != ADSERVE_JS_OK) {
        return NULL;
    }

    dst[n] = '\0';

    return dst;
}


double
adserve_fields_num(const adserve_fields_t *fl, adserve_fl_e f, double dflt)
{
    return fl->v[f].type == ADSERVE_FV_NUMBER ? fl->v[f].num : dflt;
}
