/*
 * adserve_fields: the members of a record that its parse reads
 * (adserve_parsed.c), found in one pass of the strict scanner
 * (adserve_json_scan.h) without building a cJSON document. For the kinds a
 * large inventory is made of: line items, creatives and LICAs.
 *
 * It reads a record as cJSON reads it, or not at all. A member is the first
 * one of its name (cJSON_GetObjectItemCaseSensitive); a name, and a string,
 * end at their first NUL, as C strings do; a number is what strtod makes of
 * its text. A record that the strict scanner refuses is not read, and
 * neither is one that cJSON would refuse although it is valid JSON (a number
 * longer than 63 bytes), nor one beyond what this reader holds: the parse
 * then falls back to cJSON, which decides. So whatever reader reads a
 * record, its parse is the same.
 *
 * Plain C, no nginx types; engine-internal (adserve_parsed.c uses it).
 */

#ifndef ADSERVE_FIELDS_H
#define ADSERVE_FIELDS_H

#include <stddef.h>
#include <stdint.h>

#include "adserve_contract.h"

/* The members read, of every kind: a record of one kind has only its own. */
typedef enum {
    ADSERVE_FL_ID = 0,
    ADSERVE_FL_TYPE,                  /* line item, creative */
    ADSERVE_FL_STATUS,                /* line item, LICA */
    ADSERVE_FL_APPROVAL,              /* line item, creative */
    /* a line item */
    ADSERVE_FL_PRIORITY,
    ADSERVE_FL_COST_TYPE,
    ADSERVE_FL_RATE,
    ADSERVE_FL_GOAL,
    ADSERVE_FL_GOAL_UNITS,            /* goal.units */
    ADSERVE_FL_GOAL_TYPE,             /* goal.type */
    ADSERVE_FL_DELIVERY,
    ADSERVE_FL_CAPS,                  /* frequency_caps */
    ADSERVE_FL_CAP,                   /* one element of it */
    ADSERVE_FL_CAP_MAX,               /* its max */
    ADSERVE_FL_CAP_SECONDS,           /* its seconds */
    ADSERVE_FL_START_AT,
    ADSERVE_FL_END_AT,
    ADSERVE_FL_ORDER_ID,
    ADSERVE_FL_TARGETING,
    ADSERVE_FL_AD_UNITS,              /* targeting.ad_units */
    ADSERVE_FL_INCLUDE,               /* targeting.ad_units.include */
    ADSERVE_FL_EXCLUDE,               /* targeting.ad_units.exclude */
    ADSERVE_FL_PLACEMENTS,            /* targeting.placements */
    /* a creative */
    ADSERVE_FL_W,
    ADSERVE_FL_H,
    ADSERVE_FL_CATEGORIES,
    ADSERVE_FL_LANDING_URL,
    ADSERVE_FL_INTERSTITIAL,
    ADSERVE_FL_IMAGE_URL,
    ADSERVE_FL_HTML,
    /* a LICA */
    ADSERVE_FL_LINE_ITEM_ID,
    ADSERVE_FL_CREATIVE_ID,
    ADSERVE_FL_WEIGHT,
    ADSERVE_FL_COUNT
} adserve_fl_e;

/* A member's value, as cJSON would type it */
typedef enum {
    ADSERVE_FV_ABSENT = 0,
    ADSERVE_FV_OTHER,                 /* an array */
    ADSERVE_FV_STRING,
    ADSERVE_FV_NUMBER,
    ADSERVE_FV_TRUE,
    ADSERVE_FV_FALSE,
    ADSERVE_FV_NULL,
    ADSERVE_FV_OBJECT
} adserve_fv_e;

typedef struct {
    uint32_t        type;             /* adserve_fv_e */
    uint32_t        start, end;       /* its text: text[start..end) */
    uint32_t        plain;            /* STRING: without escapes, so its
                                       * text between the quotes */
    double          num;              /* NUMBER: its value */
} adserve_fv_t;

/* A string list (ADSERVE_FL_INCLUDE, _EXCLUDE, _PLACEMENTS, _CATEGORIES):
 * its strings, in order, each NUL-terminated (and so cut at its first NUL),
 * one after the other in the sink from off. */
typedef struct {
    size_t          off;
    uint32_t        n;
} adserve_fl_list_t;

#define ADSERVE_FL_LISTS     4
#define ADSERVE_FL_CAPS_MAX  16       /* frequency_caps objects read; more:
                                       * not read */

typedef struct {
    const char     *text;
    size_t          len;
    adserve_kind_e  kind;
    adserve_fv_t    v[ADSERVE_FL_COUNT];
    adserve_fl_list_t  lists[ADSERVE_FL_LISTS];
    /* frequency_caps: each object's max and seconds (0 when not numbers) */
    double          caps[ADSERVE_FL_CAPS_MAX][2];
    uint32_t        ncaps;
    int             caps_over;        /* more objects than that */
    int             tg_other;         /* targeting has a member that is not
                                       * ad_units or placements */
    /* where the lists' strings are decoded: sink[0..sink_cap) */
    char           *sink;
    size_t          sink_used, sink_cap;
    int             sink_full;
} adserve_fields_t;

/* Whether adserve_fields_scan reads records of kind. */
int adserve_fields_kind(adserve_kind_e kind);

/* Reads text[0..len) as a record of kind, its lists' strings into
 * sink[0..cap). 0; 1 when the sink was too small (nothing else to blame:
 * try again with a larger one); -1 when it is not read (see above). */
int adserve_fields_scan(adserve_fields_t *fl, adserve_kind_e kind, const char *text,
    size_t len, char *sink, size_t cap);

/* The list of member f (ADSERVE_FL_INCLUDE ...), or NULL when f is none. */
const adserve_fl_list_t *adserve_fields_list(const adserve_fields_t *fl, adserve_fl_e f);

/* Member f as a string: decoded into dst as a C string (up to its first
 * NUL), or NULL when it is not a string. dst must have room for
 * adserve_fields_len(fl, f) bytes. */
const char *adserve_fields_str(const adserve_fields_t *fl, adserve_fl_e f, char *dst);

/* Member f, a string without escapes: its bytes in the text, *len of
 * them (no NUL among them); NULL when it is not such a string. */
const char *adserve_fields_plain(const adserve_fields_t *fl, adserve_fl_e f, size_t *len);

/* Room enough for member f decoded, with its NUL. */
size_t adserve_fields_len(const adserve_fields_t *fl, adserve_fl_e f);

/* Member f as a number, or dflt when it is not a number. */
double adserve_fields_num(const adserve_fields_t *fl, adserve_fl_e f, double dflt);

#endif
