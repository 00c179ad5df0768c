/*
 * adserve_rtb: adserve's side of OpenRTB 2.6 (README "External demand"):
 * what the snapshot build renders once of an ad unit's bid requests (its
 * imp, from the spec's AdCOM-shaped placements), and a bidder's
 * BidResponse, scanned by the strict scanner (adserve_json_scan.h) without
 * allocating, and the prices it carries.
 *
 * An answer comes from outside: every field is bounded, and what cannot be
 * checked whole is said so (more adomains or categories than are kept), so
 * that the auction drops such a bid rather than judge it on a part.
 *
 * Plain C, no nginx types; unit-tested (t/unit/rtb_test.c) and fuzzed
 * (t/fuzz/fuzz_rtb.c).
 */

#ifndef ADSERVE_RTB_H
#define ADSERVE_RTB_H

#include <stddef.h>
#include <stdint.h>

#include "adserve_contract.h"
#include "adserve_json.h"

struct cJSON;

#define ADSERVE_RTB_BIDS_MAX       8        /* Choice: bids kept of an answer */
#define ADSERVE_RTB_SEATS_MAX      8        /* seatbids whose seat is kept */
#define ADSERVE_RTB_ADOMAINS_MAX   4        /* Choice: of a bid */
#define ADSERVE_RTB_CATS_MAX       8
#define ADSERVE_RTB_ID_MAX         256      /* bytes: ids, crid, seat, cur */
#define ADSERVE_RTB_ADM_MAX        65536    /* bytes of markup */
#define ADSERVE_RTB_URL_MAX        2048     /* bytes: nurl, burl, lurl */
/* a price above this (CPM) is taken as a fault, not a bid */
#define ADSERVE_RTB_PRICE_MAX_MICROS  (1000000LL * 1000000)

typedef struct {
    adserve_str_t   id, impid, adm, crid, nurl, burl, lurl;
    adserve_str_t   adomain[ADSERVE_RTB_ADOMAINS_MAX];
    adserve_str_t   cat[ADSERVE_RTB_CATS_MAX];
    uint8_t         nadomain, ncat;
    unsigned        adomain_over:1;     /* more than ADSERVE_RTB_ADOMAINS_MAX, */
    unsigned        cat_over:1;         /* or CATS_MAX, or one too long */
    int64_t         price_micros;       /* CPM x 10^6; -1: absent, negative,
                                         * not a number, or over the max */
    int             w, h;               /* 0: absent */
    int             mtype;              /* 1 banner, 2 video, 3 audio,
                                         * 4 native; 0 absent */
    int             seatbid;            /* the index of its seatbid */
} adserve_rtb_bid_t;

typedef struct {
    adserve_str_t       id, cur;
    adserve_str_t       seat[ADSERVE_RTB_SEATS_MAX];   /* by seatbid */
    int                 nseatbids;
    adserve_rtb_bid_t   bids[ADSERVE_RTB_BIDS_MAX];
    unsigned            nbids;
    unsigned            bids_over;      /* bids beyond those kept */
} adserve_rtb_response_t;

/* Scans buf[0..len) as a BidResponse into r, its strings unescaped in
 * place (buf must stay while r is used): 0, or -1 when it is not one
 * well-formed JSON object (*err a static message). Members of the wrong
 * type are left absent, as unknown ones are; whether a bid is usable is
 * the auction's to decide (adserve_rtb_bid_usable). */
int adserve_rtb_parse_response(char *buf, size_t len, adserve_rtb_response_t *r,
    const char **err);

/* The bid's seat, or an absent string. */
adserve_str_t adserve_rtb_bid_seat(const adserve_rtb_response_t *r, const adserve_rtb_bid_t *b);

/* Why a bid cannot take part in an auction: NULL when it can (an impid,
 * a price, markup, and its adomains and categories kept whole). */
const char *adserve_rtb_bid_unusable(const adserve_rtb_bid_t *b);

/* ---- a native bid's markup (src/adserve_rtb_native.c) ------------------- */

#define ADSERVE_RTB_NATIVE_ASSETS_MAX    ADSERVE_NATIVE_ASSETS_MAX
#define ADSERVE_RTB_NATIVE_TRACKERS_MAX  8      /* Choice: of each list */
#define ADSERVE_RTB_NATIVE_TEXT_MAX      4096   /* bytes of a title or data */

/* One asset of the response: the request's asset id it answers, and its
 * value, by its kind: a title's text, an image's url, a data's value, a
 * video's VAST (vasttag). */
typedef struct {
    int64_t         id;                 /* -1: absent or not an id */
    uint8_t         kind;               /* adserve_asset_e; COUNT: none */
    uint8_t         required;
    uint16_t        type;               /* img, data: their type; 0 none */
    uint32_t        w, h;               /* img; 0 none */
    adserve_str_t   value;              /* absent: none, or too long */
} adserve_rtb_native_asset_t;

typedef struct {
    uint16_t        event, method;      /* 1, 1: an impression pixel */
    adserve_str_t   url;
} adserve_rtb_native_tracker_t;

typedef struct {
    adserve_rtb_native_asset_t    assets[ADSERVE_RTB_NATIVE_ASSETS_MAX];
    uint8_t                       nassets;
    adserve_str_t                 link;             /* link.url */
    adserve_str_t                 clicktrackers[ADSERVE_RTB_NATIVE_TRACKERS_MAX];
    uint8_t                       nclicktrackers;
    adserve_str_t                 imptrackers[ADSERVE_RTB_NATIVE_TRACKERS_MAX];
    uint8_t                       nimptrackers;
    adserve_rtb_native_tracker_t  events[ADSERVE_RTB_NATIVE_TRACKERS_MAX];
    uint8_t                       nevents;
    unsigned                      assets_over:1;    /* more than are kept */
    unsigned                      trackers_over:1;  /* a list not kept
                                                     * whole, or a URL too
                                                     * long */
} adserve_rtb_native_t;

/* Scans a native bid's markup (buf[0..len), the bid's adm) as OpenRTB
 * Native 1.2's response, bare or inside "native", into n, its strings
 * unescaped in place: 0, or -1 when it is not one well-formed JSON object
 * (*err a static message). Members of the wrong type are left absent, as
 * unknown ones are. */
int adserve_rtb_parse_native(char *buf, size_t len, adserve_rtb_native_t *n,
    const char **err);

/* What a native bid answers (README "External demand"): one of the ad
 * unit's asset requests, as the snapshot keeps it for the auction. */
typedef struct {
    uint32_t        id;
    uint8_t         kind;               /* adserve_asset_e */
    uint8_t         required;
} adserve_rtb_native_req_t;

#define ADSERVE_RTB_NATIVE_UNFILLED  0xff

/* Why n cannot be served for the requests reqs: NULL when it can, else a
 * static message. It can when it was kept whole, its link.url is where a
 * click may land (adserve_link_url_ok), every tracker and image URL is an
 * http(s) one (adserve_endpoint_url_ok; the caller fills the exchange's
 * macros first, adserve_rtb_expand: one left holds braces, refused),
 * every event tracker says its
 * event and method, and its assets fill every
 * required request and one at least: a request is filled by the first
 * asset of its id and kind that has a value. pick gets, per request, the
 * index of that asset or ADSERVE_RTB_NATIVE_UNFILLED (nreqs at most
 * ADSERVE_RTB_NATIVE_ASSETS_MAX). Assets that answer no request are not
 * served. */
const char *adserve_rtb_native_unfit(const adserve_rtb_native_t *n,
    const adserve_rtb_native_req_t *reqs, size_t nreqs, uint8_t *pick);

/* An ad unit's imp, as the build renders it once (malloc'd text, its
 * length in *len; NULL out of memory): {"id":"1","tagid":<the unit's id>,
 * then a banner, video and native object for each format of formats (bits
 * of adserve_format_e) that the unit has, instl, and ext.gpid, without the
 * closing brace: each source appends its bidfloor. The spec's placements
 * are AdCOM 1.0's; their members are renamed to OpenRTB 2.6's (mime to
 * mimes, mindur to minduration, ptype to plcmt...), and a banner's format
 * lists the unit's ad_unit_sizes. The native placement, OpenRTB Native
 * 1.2's request, goes as imp.native.request, a string. */
char *adserve_rtb_render_imp(const struct cJSON *unit, unsigned formats, size_t *len);

/* Where the impression is, rendered once per ad unit: "site":{...} from
 * its ext.publisher (PublisherSettings: page and domain on the site; id,
 * name (else company), domain and ext on site.publisher; seller_id as the
 * publisher's id when it has none), or, for app, "app":{...} from its
 * ext.implicit_app_inference: the bundle of os (ADSERVE_RTB_OS_*), name,
 * cat, and the same publisher. malloc'd text, its length in *len; NULL
 * out of memory, or for an app the unit cannot name (no bundle for os). */
#define ADSERVE_RTB_SITE         0
#define ADSERVE_RTB_OS_ANDROID   1
#define ADSERVE_RTB_OS_IOS       2
char *adserve_rtb_render_place(const struct cJSON *unit, int place, size_t *len);

/* Which app a request's user agent is, for a unit whose
 * implicit_app_inference lists keywords: ADSERVE_RTB_OS_ANDROID or _IOS
 * when ua holds one of the keywords (ASCII case aside) and names that OS
 * (Android; iPhone, iPad or iPod), else ADSERVE_RTB_SITE. */
int adserve_rtb_app_of(const adserve_str_t *keywords, size_t nkeywords, const char *ua,
    size_t len);

/* ---- blocks and notices ------------------------------------------------ */

/* A block that applies to one unit's bids from one source (the build
 * gathers them: the blocked creatives of adserve:blocked_creatives that
 * name the unit or none, and the source or none, and the unit's ext.bcat
 * as categories). kind: adserve_block_kind_e. */
typedef struct {
    uint8_t         kind;
    adserve_str_t   value;            /* an adomain in lower case, a crid,
                                       * or an IAB category code */
} adserve_rtb_block_t;

/* The block that drops b, or NULL: an adomain that is the blocked domain
 * or one of its subdomains (ASCII case aside), a crid exactly, a category
 * that is the blocked one or one of its subcategories (IAB7 blocks
 * IAB7-39). */
const adserve_rtb_block_t *adserve_rtb_blocked(const adserve_rtb_bid_t *b,
    const adserve_rtb_block_t *blocks, size_t n);

/* A bid request's bcat and badv from blocks, rendered once by the build:
 * ,"bcat":[...],"badv":[...], each only when it has a value (crids are
 * not the bidder's to be told). malloc'd text, its length in *len; NULL
 * out of memory. */
char *adserve_rtb_render_blocks(const adserve_rtb_block_t *blocks, size_t n, size_t *len);

/* OpenRTB 2.6 section 4.4's loss reasons that the auction gives */
#define ADSERVE_RTB_LOSS_WON             0
#define ADSERVE_RTB_LOSS_INVALID         3
#define ADSERVE_RTB_LOSS_BELOW_FLOOR     100
#define ADSERVE_RTB_LOSS_HIGHER_BID      102
#define ADSERVE_RTB_LOSS_DISAPPROVED     202  /* its crid is blocked */
#define ADSERVE_RTB_LOSS_FORMAT          204  /* not a format asked for here */
#define ADSERVE_RTB_LOSS_ADVERTISER      205  /* its adomain is blocked */
#define ADSERVE_RTB_LOSS_CATEGORY        209

/* The values of the substitution macros (OpenRTB 2.6 section 4.4). */
typedef struct {
    adserve_str_t   auction_id;       /* the bid request's id */
    adserve_str_t   bid_id;           /* the bid's id */
    adserve_str_t   imp_id;
    adserve_str_t   seat_id;
    adserve_str_t   currency;
    int64_t         price_micros;     /* the clearing price, CPM x 10^6 */
    int             loss;             /* ADSERVE_RTB_LOSS_* */
} adserve_rtb_macros_t;

/* Writes s (len bytes) to out (cap bytes) with ${AUCTION_PRICE},
 * ${AUCTION_ID}, ${AUCTION_BID_ID}, ${AUCTION_IMP_ID}, ${AUCTION_SEAT_ID},
 * ${AUCTION_CURRENCY} and ${AUCTION_LOSS} replaced, and ${AUCTION_AD_ID},
 * ${AUCTION_MBR} and ${AUCTION_MIN_TO_WIN} by nothing (not known here);
 * other text is kept. url: the values are %-escaped as query arguments
 * (a bid's notices), else written as they are (its markup). The length
 * written, or (size_t) -1 when it does not fit. */
size_t adserve_rtb_expand(char *out, size_t cap, const char *s, size_t len,
    const adserve_rtb_macros_t *m, int url);

/* A price in micros as OpenRTB writes it ("1.25", "3"): at most 24 bytes. */
size_t adserve_rtb_price(char *out, int64_t micros);

#endif
