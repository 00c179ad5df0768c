/*
 * adserve_contract: what the sidecar and the module agree on in Redis,
 * spelled once.
 *
 * The sidecar writes Redis and the nginx module reads it (and writes
 * counters that the sidecar reads back). Both are built from this file:
 * every key, every record type, every vocabulary of a record field, the
 * grammar of the counters, the time formats and the hash. Nothing outside
 * it spells a key or a vocabulary word; t/unit/contract_test.c and
 * scripts/contract-check hold both programs to that.
 *
 * Plain C, no nginx types (the sidecar links it too); the README's "Redis
 * data contract" is its prose.
 */

#ifndef ADSERVE_CONTRACT_H
#define ADSERVE_CONTRACT_H

#include <endian.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>


/* ---- keys ---------------------------------------------------------------- */

/* What both programs' log lines start with: a name, not a key. */
#define ADSERVE_LOG_PREFIX               "adserve: "

/* Every key of ours starts with this: one Redis may serve other programs. */
#define ADSERVE_KEY_PREFIX               "adserve:"
#define ADSERVE_KEY(name)                ADSERVE_KEY_PREFIX name

/* the records (hashes id -> JSON text), by kind: adserve_kinds[] */
#define ADSERVE_KEY_AD_UNITS             ADSERVE_KEY("ad_units")
#define ADSERVE_KEY_PLACEMENTS           ADSERVE_KEY("placements")
#define ADSERVE_KEY_ORDERS               ADSERVE_KEY("orders")
#define ADSERVE_KEY_LINE_ITEMS           ADSERVE_KEY("line_items")
#define ADSERVE_KEY_CREATIVES            ADSERVE_KEY("creatives")
#define ADSERVE_KEY_LICAS                ADSERVE_KEY("licas")
#define ADSERVE_KEY_ADVERTISERS          ADSERVE_KEY("advertisers")
#define ADSERVE_KEY_TARGETING_KEYS       ADSERVE_KEY("targeting_keys")
#define ADSERVE_KEY_NATIVE_STYLES        ADSERVE_KEY("native_styles")
#define ADSERVE_KEY_AD_UNIT_NATIVE_STYLES \
                                         ADSERVE_KEY("ad_unit_native_styles")
#define ADSERVE_KEY_NATIVE_FORMATS       ADSERVE_KEY("native_formats")
#define ADSERVE_KEY_NATIVE_STYLE_TEMPLATES \
                                         ADSERVE_KEY("native_style_templates")
#define ADSERVE_KEY_CATALOG_ITEMS        ADSERVE_KEY("catalog_items")
#define ADSERVE_KEY_ITEM_POOLS           ADSERVE_KEY("associated_items_pools")
#define ADSERVE_KEY_POPULAR_ITEMS        ADSERVE_KEY("popular_items")
#define ADSERVE_KEY_COVIEW_POOLS         ADSERVE_KEY("coview_pools")
#define ADSERVE_KEY_EXPERIMENTS          ADSERVE_KEY("experiments")
/* external demand (README "External demand"): the OpenRTB sources, which
 * ad units send to which source, what bids may not carry, and what the
 * module saw win (written by the module, read by the API) */
#define ADSERVE_KEY_AD_SOURCES           ADSERVE_KEY("ad_sources")
#define ADSERVE_KEY_ALLOCATIONS          ADSERVE_KEY("allocations")
#define ADSERVE_KEY_BLOCKED_CREATIVES    ADSERVE_KEY("blocked_creatives")
#define ADSERVE_KEY_EXTERNAL_CREATIVES   ADSERVE_KEY("external_creatives")
/* the global settings (GET/PATCH /api/settings): one record,
 * ADSERVE_SETTINGS_ID */
#define ADSERVE_KEY_SETTINGS             ADSERVE_KEY("settings")

/* what serving follows: INCR on every change it reads, and the change log
 * (a stream of {kind, id}) that lets a worker fetch just those records */
#define ADSERVE_KEY_REV                  ADSERVE_KEY("rev")
#define ADSERVE_KEY_CHANGES              ADSERVE_KEY("changes")
#define ADSERVE_CHANGES_MAXLEN           "100000"
#define ADSERVE_CHANGE_KIND              "kind"     /* an entry's fields */
#define ADSERVE_CHANGE_ID                "id"

/* the management API's indexes: a value -> the record with it, or a set
 * per parent id (the prefix, then the id) */
#define ADSERVE_KEY_AD_UNIT_CODES        ADSERVE_KEY("ad_unit_codes")
#define ADSERVE_KEY_AD_UNIT_CHILDREN     ADSERVE_KEY("ad_unit_children:")
#define ADSERVE_KEY_TARGETING_KEY_NAMES  ADSERVE_KEY("targeting_key_names")
#define ADSERVE_KEY_TARGETING_VALUES     ADSERVE_KEY("targeting_values:")
#define ADSERVE_KEY_TARGETING_VALUE_NAMES \
                                         ADSERVE_KEY("targeting_value_names:")
#define ADSERVE_KEY_LICA_PAIRS           ADSERVE_KEY("lica_pairs")
#define ADSERVE_KEY_ADVERTISER_ORDERS    ADSERVE_KEY("advertiser_orders:")
#define ADSERVE_KEY_ADVERTISER_CREATIVES ADSERVE_KEY("advertiser_creatives:")
#define ADSERVE_KEY_MANAGER_ADVERTISERS  ADSERVE_KEY("manager_advertisers:")  /* + user id */
#define ADSERVE_KEY_SEGMENT_INCLUDERS    ADSERVE_KEY("segment_includers:")  /* + segment id */
#define ADSERVE_KEY_SEGMENT_EXCLUDERS    ADSERVE_KEY("segment_excluders:")  /* + segment id */
#define ADSERVE_KEY_ORDER_LINE_ITEMS     ADSERVE_KEY("order_line_items:")
#define ADSERVE_KEY_PLACEMENT_LINE_ITEMS ADSERVE_KEY("placement_line_items:")
#define ADSERVE_KEY_LINE_ITEM_LICAS      ADSERVE_KEY("line_item_licas:")
#define ADSERVE_KEY_CREATIVE_LICAS       ADSERVE_KEY("creative_licas:")
#define ADSERVE_KEY_AD_UNIT_STYLE_LINKS  ADSERVE_KEY("ad_unit_style_links")
#define ADSERVE_KEY_NATIVE_STYLE_LINKS   ADSERVE_KEY("native_style_links:")
#define ADSERVE_KEY_NATIVE_FORMAT_STYLES ADSERVE_KEY("native_format_styles:")
#define ADSERVE_KEY_NATIVE_FORMAT_CREATIVES \
                                         ADSERVE_KEY("native_format_creatives:")
#define ADSERVE_KEY_CATALOG_ITEM_IDS     ADSERVE_KEY("catalog_item_ids")
#define ADSERVE_KEY_POOL_SOURCES         ADSERVE_KEY("pool_sources")
#define ADSERVE_KEY_AD_UNIT_EXPERIMENTS  ADSERVE_KEY("ad_unit_experiments:")
#define ADSERVE_KEY_AD_SOURCE_NAMES      ADSERVE_KEY("ad_source_names")
#define ADSERVE_KEY_AD_SOURCE_ALLOCATIONS ADSERVE_KEY("ad_source_allocations:")  /* + source id */
#define ADSERVE_KEY_TARGET_ALLOCATIONS   ADSERVE_KEY("target_allocations:")  /* + unit or placement id */
#define ADSERVE_KEY_ALLOCATION_PAIRS     ADSERVE_KEY("allocation_pairs")   /* "source:target" -> id */
#define ADSERVE_KEY_BLOCK_VALUES         ADSERVE_KEY("block_values")  /* "kind:scope:source:value" -> id */

/* users and sessions (the sidecar's alone) */
#define ADSERVE_KEY_USERS                ADSERVE_KEY("users")
#define ADSERVE_KEY_USER                 ADSERVE_KEY("user:")
#define ADSERVE_KEY_USER_BY_EMAIL        ADSERVE_KEY("user_by_email")
#define ADSERVE_KEY_REFRESH_FAMILY       ADSERVE_KEY("refresh_family:")
#define ADSERVE_KEY_REFRESH_TOKEN        ADSERVE_KEY("refresh_token:")
#define ADSERVE_KEY_RESET                ADSERVE_KEY("reset:")
#define ADSERVE_KEY_RATELIMIT            ADSERVE_KEY("ratelimit:")

/* streams */
#define ADSERVE_KEY_AUDIT                ADSERVE_KEY("audit")
#define ADSERVE_AUDIT_MAXLEN             "100000"
#define ADSERVE_KEY_OUTBOX               ADSERVE_KEY("outbox")
#define ADSERVE_KEY_EVENTS               ADSERVE_KEY("events")

/* counters (the grammar of their fields is below) */
#define ADSERVE_KEY_STATS                ADSERVE_KEY("stats:")     /* + YYYYMMDDHH */
#define ADSERVE_KEY_DELIVERY             ADSERVE_KEY("delivery")
#define ADSERVE_KEY_RESET_SUPPRESSED     ADSERVE_KEY("stats:reset_mails_suppressed")
#define ADSERVE_KEY_SEEN                 ADSERVE_KEY("seen:")      /* + type:hour */
#define ADSERVE_KEY_FLUSH                ADSERVE_KEY("flush:")     /* + instance */
#define ADSERVE_KEY_FC                   ADSERVE_KEY("fc:")        /* + user id */

/* A user's recommendation history (README "Recommendation"): a string per
 * user, adserve:rh2:{user id}, of ADSERVE_HISTORY_ENTRY-byte entries, oldest
 * first (adserve_history_put / _get), each a little-endian 64-bit word: the
 * low ADSERVE_HISTORY_HASH_BITS of the item id's adserve_hash, then the
 * kind (a bit, 1 viewed), then the unix minute modulo
 * 2^ADSERVE_HISTORY_MINUTE_BITS. Shown: recommended to the user; viewed:
 * the item a request said the user looks at (ext.item_id), or one they
 * clicked. candidate_filtering reads both kinds, the co-view algorithm the
 * views (it maps the hashes back to catalog item ids: 40 bits leave a
 * catalog of a million items about one pair of ids alike). One string, so
 * that reading a long history is one reply to parse, and a write is an
 * append.
 *
 * The minute wraps every 16 years, and a reader takes the one nearest its
 * own clock (within 8 years either way): an entry among a live string's
 * latest ADSERVE_HISTORY_MAX is less than ADSERVE_HISTORY_MAX times
 * ADSERVE_HISTORY_SECONDS old (3.8 years; consecutive writes come within
 * the TTL, or the string expires between them), so none is misread. 8
 * bytes an entry, not layout 1's 16 (adserve:rh:, its hash whole, seconds,
 * a kind byte and padding, which those strings' 7 days let expire): the
 * entries are most of the bytes a recommendation writes to Redis, through
 * its AOF and the AOF's rewrites, and of those a read brings back.
 *
 * What counts: the latest ADSERVE_HISTORY_MAX entries within
 * ADSERVE_HISTORY_SECONDS (to the minute). The writer appends (APPEND); it sets the string
 * to expire ADSERVE_HISTORY_SECONDS later when APPEND's reply shows it
 * new, and otherwise once every ADSERVE_HISTORY_TTL_REFRESH seconds of a
 * user's writes (so it expires with its latest entries, less that, and
 * with no EXPIRE per write; a writer that keeps no record of when it last
 * did, when the string grew past a multiple of ADSERVE_HISTORY_TTL_EVERY
 * entries instead); and it cuts the string to those ADSERVE_HISTORY_MAX once APPEND's reply
 * says it holds ADSERVE_HISTORY_CUT times as many (a cut rewrites the kept
 * entries through the AOF: at twice, that was as many bytes as the
 * appends; readers read the latest ADSERVE_HISTORY_MAX alone, whatever the
 * length). */
#define ADSERVE_KEY_HISTORY              ADSERVE_KEY("rh2:")       /* + user id */

/* Custom targeting segments (README "Segments"): the records, and each
 * user's memberships, a hash segment id -> the unix second its membership
 * ends (the upload's time plus its segment's membership_expiration_days),
 * living as long as its latest membership. Serving reads a user's hash
 * (HMGET of the segments an ad unit's line items target) with the caps,
 * in the same round trip. */
#define ADSERVE_KEY_SEGMENTS             ADSERVE_KEY("segments")
#define ADSERVE_KEY_USER_SEGMENTS        ADSERVE_KEY("us:")        /* + user id */
#define ADSERVE_SEGMENT_EXPIRATION_DAYS_MAX     540     /* GAM's bound */
#define ADSERVE_SEGMENT_EXPIRATION_DAYS_DEFAULT 30
/* a line item's targeting.segments.include and .exclude: ids each */
#define ADSERVE_SEGMENTS_MAX             100
#define ADSERVE_SEGMENT_ID_MAX           64      /* bytes; the API makes UUIDs */
/* the segments one ad unit's line items may target together: what one
 * HMGET asks; beyond, its segment-targeted line items do not serve */
#define ADSERVE_UNIT_SEGMENTS_MAX        256

/* The media library (README "Media library"): the sidecar's alone, serving
 * never reads them (a creative that uses an item carries its URL). The
 * items by id; the item of each stored file per owner ("<advertiser id or
 * ->:<sha256 hex>" -> id: the same bytes uploaded again are the same item);
 * the items that share one file (+ sha256 hex: the file goes with the
 * last); the creatives that use an item (+ item id: its delete rule). */
#define ADSERVE_KEY_MEDIA                ADSERVE_KEY("media")
#define ADSERVE_KEY_MEDIA_BY_HASH        ADSERVE_KEY("media_by_hash")
#define ADSERVE_KEY_MEDIA_FILE_ITEMS     ADSERVE_KEY("media_file_items:")  /* + sha256 hex */
#define ADSERVE_KEY_MEDIA_CREATIVES      ADSERVE_KEY("media_creatives:")   /* + item id */
#define ADSERVE_HISTORY_ENTRY            8
#define ADSERVE_HISTORY_HASH_BITS        40
#define ADSERVE_HISTORY_MINUTE_BITS      23
#define ADSERVE_HISTORY_SHOWN            's'
#define ADSERVE_HISTORY_VIEWED           'v'
#define ADSERVE_HISTORY_MAX              200
#define ADSERVE_HISTORY_SECONDS          (7 * 86400)
#define ADSERVE_HISTORY_TTL_REFRESH      3600
#define ADSERVE_HISTORY_TTL_EVERY        64
#define ADSERVE_HISTORY_CUT              3

typedef struct {
    uint64_t        hash;             /* an item id's adserve_hash: its
                                       * low ADSERVE_HISTORY_HASH_BITS are
                                       * kept, and read back */
    int64_t         at;               /* unix seconds; read back, the
                                       * minute's first */
    char            kind;             /* ADSERVE_HISTORY_SHOWN, _VIEWED */
} adserve_history_entry_t;

/* What a history keeps of an item id's adserve_hash: what a reader
 * compares with the hashes of its own ids */
static inline uint64_t
adserve_history_hash(uint64_t hash)
{
    return hash & ((UINT64_C(1) << ADSERVE_HISTORY_HASH_BITS) - 1);
}

/* One entry into out[ADSERVE_HISTORY_ENTRY], and back (as read at now,
 * unix seconds, the clock the minute is taken nearest to). Inline: a
 * request reads up to ADSERVE_HISTORY_MAX of them. */
static inline void
adserve_history_put(unsigned char *out, const adserve_history_entry_t *e)
{
    uint64_t  minute = e->at < 0 ? 0 : (uint64_t) e->at / 60;
    uint64_t  w;

    w = adserve_history_hash(e->hash)
        | (uint64_t) (e->kind == ADSERVE_HISTORY_VIEWED) << ADSERVE_HISTORY_HASH_BITS
        | (minute & ((UINT64_C(1) << ADSERVE_HISTORY_MINUTE_BITS) - 1))
          << (ADSERVE_HISTORY_HASH_BITS + 1);

    w = htole64(w);
    memcpy(out, &w, sizeof(w));
}

static inline void
adserve_history_get(const unsigned char *in, int64_t now, adserve_history_entry_t *e)
{
    const uint32_t  mask = (UINT32_C(1) << ADSERVE_HISTORY_MINUTE_BITS) - 1;
    uint64_t        w;
    int64_t         now_min, ago;
    uint32_t        d;

    memcpy(&w, in, sizeof(w));
    w = le64toh(w);
    now_min = (now < 0 ? 0 : now) / 60;

    /* minutes before now, modulo the wrap; its upper half is ahead of
     * now (another clock, a little fast) */
    d = ((uint32_t) now_min - (uint32_t) (w >> (ADSERVE_HISTORY_HASH_BITS + 1))) & mask;
    ago = d <= mask / 2 ? (int64_t) d : (int64_t) d - (int64_t) mask - 1;

    e->hash = adserve_history_hash(w);
    e->kind = (w >> ADSERVE_HISTORY_HASH_BITS) & 1 ? ADSERVE_HISTORY_VIEWED : ADSERVE_HISTORY_SHOWN;
    e->at = (now_min - ago) * 60;
}

/* Popularity (the popular fallback, README "Recommendation"): the views of
 * each item per serving context, a hash per UTC hour,
 * adserve:pop:{YYYYMMDDHH}, field "{context}/{item id}" (an item id has no
 * '/'), counted by serving's flush for the context "all" and for each
 * context a popular fallback queries. The sidecar ranks the last
 * ADSERVE_POPULAR_HOURS into the popular_items records, one per context:
 * {"context": …, "items": [item ids, most viewed first]}. */
#define ADSERVE_KEY_POPULARITY           ADSERVE_KEY("pop:")       /* + hour */
#define ADSERVE_POPULAR_SEP              '/'
#define ADSERVE_POPULAR_HOURS            24
#define ADSERVE_POPULAR_ITEMS_MAX        100
#define ADSERVE_POPULAR_CONTEXTS_MAX     64       /* counted, "all" aside */
/* Co-view (the algorithm coview, README "Recommendation"): for each item A,
 * the items that users viewed after A, within ADSERVE_COVIEW_SECONDS, read
 * from their histories, ranked by how many users did (ties by id). The
 * sidecar's job writes them as coview_pools records, the shape of an
 * associated items pool: {"id": "cv-" + 16 hex digits of A's hash,
 * "source_item_id": A, "items": [{"item_id", "score": users}]}. */
#define ADSERVE_COVIEW_SECONDS           86400
#define ADSERVE_COVIEW_ID_PREFIX         "cv-"

/* held by the sidecar whose timer runs the recommendation jobs (several
 * sidecars on one Redis: one run per interval) */
#define ADSERVE_KEY_REC_JOBS_LOCK        ADSERVE_KEY("rec_jobs_lock")


/* ---- finding the primary ------------------------------------------------ */

/* Redis's own words, where both programs find the primary through Sentinel
 * (README "Many nodes"): the sentinels' answer, ROLE's first element on a
 * primary, and the error of a write on a server that a failover demoted. */
#define ADSERVE_REDIS_SENTINEL           "SENTINEL"
#define ADSERVE_REDIS_SENTINEL_PRIMARY   "get-master-addr-by-name"
#define ADSERVE_REDIS_ROLE               "ROLE"
#define ADSERVE_REDIS_ROLE_PRIMARY       "master"
#define ADSERVE_REDIS_READONLY           "READONLY"
/* the error of an EVALSHA whose script the server does not hold (a
 * restart, SCRIPT FLUSH): the module loads its scripts again */
#define ADSERVE_REDIS_NOSCRIPT           "NOSCRIPT"

/* the name the sentinels monitor, unless told otherwise */
#define ADSERVE_REDIS_MASTER_DEFAULT     "adserve"


/* ---- record kinds -------------------------------------------------------- */

/* The record hashes. Serving reads the first ADSERVE_KIND_SERVING; their
 * change log entries name them by kind name. */
typedef enum {
    ADSERVE_KIND_AD_UNITS = 0,
    ADSERVE_KIND_PLACEMENTS,
    ADSERVE_KIND_ORDERS,
    ADSERVE_KIND_LINE_ITEMS,
    ADSERVE_KIND_CREATIVES,
    ADSERVE_KIND_LICAS,
    ADSERVE_KIND_NATIVE_STYLES,
    ADSERVE_KIND_AD_UNIT_NATIVE_STYLES,
    ADSERVE_KIND_CATALOG_ITEMS,
    ADSERVE_KIND_ITEM_POOLS,
    ADSERVE_KIND_POPULAR_ITEMS,
    ADSERVE_KIND_COVIEW_POOLS,
    ADSERVE_KIND_EXPERIMENTS,
    ADSERVE_KIND_SETTINGS,
    ADSERVE_KIND_AD_SOURCES,
    ADSERVE_KIND_ALLOCATIONS,
    ADSERVE_KIND_BLOCKED_CREATIVES,
    ADSERVE_KIND_ADVERTISERS,
    ADSERVE_KIND_TARGETING_KEYS,
    ADSERVE_KIND_NATIVE_FORMATS,
    ADSERVE_KIND_NATIVE_STYLE_TEMPLATES,
    ADSERVE_KIND_EXTERNAL_CREATIVES,  /* the module writes them */
    ADSERVE_KIND_ALL
} adserve_kind_e;

#define ADSERVE_KIND_SERVING  (ADSERVE_KIND_BLOCKED_CREATIVES + 1)
/* the kinds a snapshot is built from */
#define ADSERVE_KIND_COUNT    ADSERVE_KIND_SERVING

typedef struct {
    const char     *key;              /* "adserve:line_items" */
    const char     *name;             /* "line_items": the change log's kind */
    const char     *record;           /* "line_item": the audit log's resource */
} adserve_kind_t;

extern const adserve_kind_t  adserve_kinds[ADSERVE_KIND_ALL];

/* The kind a change log entry names, or -1 for one serving does not read. */
int adserve_kind_by_name(const char *name, size_t len);
/* The serving kind of a record hash, or -1. */
int adserve_kind_by_key(const char *key);

/* the records' type names: the audit log's resource */
#define ADSERVE_RECORD_AD_UNIT           "ad_unit"
#define ADSERVE_RECORD_PLACEMENT         "placement"
#define ADSERVE_RECORD_ORDER             "order"
#define ADSERVE_RECORD_LINE_ITEM         "line_item"
#define ADSERVE_RECORD_CREATIVE          "creative"
#define ADSERVE_RECORD_LICA              "lica"
#define ADSERVE_RECORD_ADVERTISER        "advertiser"
#define ADSERVE_RECORD_TARGETING_KEY     "targeting_key"
#define ADSERVE_RECORD_TARGETING_VALUE   "targeting_value"
#define ADSERVE_RECORD_USER              "user"
#define ADSERVE_RECORD_NATIVE_STYLE      "native_style"
#define ADSERVE_RECORD_AD_UNIT_NATIVE_STYLE "ad_unit_native_style"
#define ADSERVE_RECORD_NATIVE_FORMAT     "native_format"
#define ADSERVE_RECORD_NATIVE_STYLE_TEMPLATE "native_style_template"
#define ADSERVE_RECORD_CATALOG_ITEM      "catalog_item"
#define ADSERVE_RECORD_ITEM_POOL         "associated_items_pool"
#define ADSERVE_RECORD_POPULAR_ITEMS     "popular_items"
#define ADSERVE_RECORD_COVIEW_POOL       "coview_pool"
#define ADSERVE_RECORD_EXPERIMENT        "experiment"
#define ADSERVE_RECORD_SETTINGS          "settings"
#define ADSERVE_RECORD_SEGMENT           "custom_targeting_segment"
#define ADSERVE_RECORD_MEDIA             "media_item"
#define ADSERVE_RECORD_AD_SOURCE         "ad_source"
#define ADSERVE_RECORD_ALLOCATION        "allocation"
#define ADSERVE_RECORD_BLOCKED_CREATIVE  "blocked_creative"
#define ADSERVE_RECORD_EXTERNAL_CREATIVE "external_creative"

/* the id of the settings' one record */
#define ADSERVE_SETTINGS_ID              "global"


/* ---- vocabularies ---------------------------------------------------------
 *
 * Each is an enum and a NULL-ended names table in the enum's order (the
 * sidecar's schemas take the tables as their enum values); the words are
 * macros for the few places that need a constant (a union's tag). */

/* find s (len bytes) in a NULL-ended names table: its index, or -1 */
int adserve_vocab(const char *const *names, const char *s, size_t len);
/* the same for a NUL-terminated s; NULL finds nothing */
int adserve_vocab_str(const char *const *names, const char *s);

/* statuses: of ad units, orders, line items and creatives' approval */
#define ADSERVE_V_ACTIVE          "ACTIVE"
#define ADSERVE_V_INACTIVE        "INACTIVE"
#define ADSERVE_V_ARCHIVED        "ARCHIVED"
#define ADSERVE_V_DRAFT           "DRAFT"
#define ADSERVE_V_APPROVED        "APPROVED"
#define ADSERVE_V_PAUSED          "PAUSED"
#define ADSERVE_V_COMPLETED       "COMPLETED"
#define ADSERVE_V_PENDING         "PENDING"
#define ADSERVE_V_REJECTED        "REJECTED"

typedef enum {
    ADSERVE_UNIT_ACTIVE = 0,
    ADSERVE_UNIT_INACTIVE,
    ADSERVE_UNIT_ARCHIVED,
    ADSERVE_UNIT_STATUS_COUNT
} adserve_unit_status_e;

extern const char *const adserve_unit_status_names[ADSERVE_UNIT_STATUS_COUNT + 1];

typedef enum {
    ADSERVE_ORDER_DRAFT = 0,
    ADSERVE_ORDER_APPROVED,
    ADSERVE_ORDER_PAUSED,
    ADSERVE_ORDER_ARCHIVED,
    ADSERVE_ORDER_STATUS_COUNT
} adserve_order_status_e;

extern const char *const adserve_order_status_names[ADSERVE_ORDER_STATUS_COUNT + 1];

typedef enum {
    ADSERVE_LI_DRAFT = 0,
    ADSERVE_LI_ACTIVE,
    ADSERVE_LI_PAUSED,
    ADSERVE_LI_COMPLETED,
    ADSERVE_LI_ARCHIVED,
    ADSERVE_LI_STATUS_COUNT
} adserve_li_status_e;

extern const char *const adserve_li_status_names[ADSERVE_LI_STATUS_COUNT + 1];

typedef enum {
    ADSERVE_LICA_ACTIVE = 0,
    ADSERVE_LICA_PAUSED,
    ADSERVE_LICA_STATUS_COUNT
} adserve_lica_status_e;

extern const char *const adserve_lica_status_names[ADSERVE_LICA_STATUS_COUNT + 1];

/* a creative's or a line item's approval (a review of what an advertiser
 * made or changed) */
typedef enum {
    ADSERVE_APPROVAL_PENDING = 0,
    ADSERVE_APPROVAL_APPROVED,
    ADSERVE_APPROVAL_REJECTED,
    ADSERVE_APPROVAL_COUNT
} adserve_approval_e;

extern const char *const adserve_approval_names[ADSERVE_APPROVAL_COUNT + 1];

/* The account currency (the settings' currency): ISO 4217's active codes
 * of currencies, without funds, metals and testing codes. Every money
 * field (rates, floors, spend) is in it. */
#define ADSERVE_CURRENCY_DEFAULT  "USD"
#define ADSERVE_CURRENCY_COUNT    155
extern const char *const adserve_currency_names[ADSERVE_CURRENCY_COUNT + 1];

/* Line item types in serving order: a lower tier always wins. */
#define ADSERVE_V_SPONSORSHIP     "SPONSORSHIP"
#define ADSERVE_V_STANDARD        "STANDARD"
#define ADSERVE_V_PRICE_PRIORITY  "PRICE_PRIORITY"
#define ADSERVE_V_HOUSE           "HOUSE"

typedef enum {
    ADSERVE_TIER_SPONSORSHIP = 0,
    ADSERVE_TIER_STANDARD,
    ADSERVE_TIER_PRICE_PRIORITY,
    ADSERVE_TIER_HOUSE,
    ADSERVE_TIER_COUNT
} adserve_tier_e;

extern const char *const adserve_tier_names[ADSERVE_TIER_COUNT + 1];

/* A new line item's priority by type: the middle of GAM's bands, which
 * is also how serving ranks types before priorities (1 is the highest). */
extern const uint8_t adserve_tier_priority[ADSERVE_TIER_COUNT];
#define ADSERVE_PRIORITY_MIN      1
#define ADSERVE_PRIORITY_MAX      16

#define ADSERVE_V_CPM             "CPM"
#define ADSERVE_V_CPC             "CPC"
#define ADSERVE_V_CPA             "CPA"

typedef enum {
    ADSERVE_COST_CPM = 0,
    ADSERVE_COST_CPC,
    ADSERVE_COST_CPA,
    ADSERVE_COST_COUNT
} adserve_cost_e;

extern const char *const adserve_cost_names[ADSERVE_COST_COUNT + 1];

/* The largest cost serving honours, a line item's rate or an ad unit's
 * default_cpc, default_cpa and target_ecpm (the floor), in currency units:
 * the API refuses more, so that a stored floor always applies. Its micros
 * (x 1e6, the ad_log's price) fit an int64 many times over. */
#define ADSERVE_COST_MAX          999999

#define ADSERVE_V_NONE            "NONE"
#define ADSERVE_V_IMPRESSIONS     "IMPRESSIONS"
#define ADSERVE_V_CLICKS          "CLICKS"

typedef enum {
    ADSERVE_GOAL_NONE = 0,
    ADSERVE_GOAL_IMPRESSIONS,
    ADSERVE_GOAL_CLICKS,
    ADSERVE_GOAL_COUNT
} adserve_goal_e;

extern const char *const adserve_goal_names[ADSERVE_GOAL_COUNT + 1];

#define ADSERVE_V_EVEN            "EVEN"
#define ADSERVE_V_ASAP            "ASAP"

typedef enum {
    ADSERVE_DELIVERY_EVEN = 0,
    ADSERVE_DELIVERY_ASAP,
    ADSERVE_DELIVERY_COUNT
} adserve_delivery_e;

extern const char *const adserve_delivery_names[ADSERVE_DELIVERY_COUNT + 1];

#define ADSERVE_V_IMAGE           "IMAGE"
#define ADSERVE_V_HTML            "HTML"
#define ADSERVE_V_VIDEO           "VIDEO"
#define ADSERVE_V_NATIVE          "NATIVE"

typedef enum {
    ADSERVE_CREATIVE_IMAGE = 0,
    ADSERVE_CREATIVE_HTML,
    ADSERVE_CREATIVE_VIDEO,
    ADSERVE_CREATIVE_NATIVE,
    ADSERVE_CREATIVE_TYPE_COUNT
} adserve_creative_type_e;

extern const char *const adserve_creative_type_names[ADSERVE_CREATIVE_TYPE_COUNT + 1];

/* A VIDEO creative's media file delivery (VAST 4.2 MediaFile@delivery). */
typedef enum {
    ADSERVE_VIDEO_PROGRESSIVE = 0,
    ADSERVE_VIDEO_STREAMING,
    ADSERVE_VIDEO_DELIVERY_COUNT
} adserve_video_delivery_e;

extern const char *const adserve_video_delivery_names[ADSERVE_VIDEO_DELIVERY_COUNT + 1];

/* An ad unit's formats: ext.{display,video,native}.enabled, and the member
 * of a served ad that holds it; none enabled means display. */
typedef enum {
    ADSERVE_FORMAT_DISPLAY = 0,
    ADSERVE_FORMAT_VIDEO,
    ADSERVE_FORMAT_NATIVE,
    ADSERVE_FORMAT_COUNT
} adserve_format_e;

extern const char *const adserve_format_names[ADSERVE_FORMAT_COUNT + 1];

/* ext.native.render_mode: the ad as HTML through the unit's native style
 * (ad.display.adm), or as an OpenRTB Native 1.2 response (ad.native) */
typedef enum {
    ADSERVE_RENDER_HTML = 0,
    ADSERVE_RENDER_ASSET,
    ADSERVE_RENDER_COUNT
} adserve_render_e;

extern const char *const adserve_render_names[ADSERVE_RENDER_COUNT + 1];

/* A native ad's assets (OpenRTB Native 1.2): the member of an
 * AssetRequest, and of a NATIVE creative's asset. */
typedef enum {
    ADSERVE_ASSET_TITLE = 0,
    ADSERVE_ASSET_IMG,
    ADSERVE_ASSET_VIDEO,
    ADSERVE_ASSET_DATA,
    ADSERVE_ASSET_COUNT
} adserve_asset_e;

extern const char *const adserve_asset_names[ADSERVE_ASSET_COUNT + 1];

/* Native image types by name; OpenRTB's number is adserve_image_types[]
 * (1 icon, 3 main: 2 is retired). */
typedef enum {
    ADSERVE_IMAGE_ICON = 0,
    ADSERVE_IMAGE_MAIN,
    ADSERVE_IMAGE_TYPE_COUNT
} adserve_image_type_e;

extern const char *const adserve_image_type_names[ADSERVE_IMAGE_TYPE_COUNT + 1];
extern const uint8_t adserve_image_types[ADSERVE_IMAGE_TYPE_COUNT];

/* Native data asset types by name, in OpenRTB's order: the number is the
 * index + 1 (1 sponsored ... 12 ctatext). */
typedef enum {
    ADSERVE_DATA_SPONSORED = 0,
    ADSERVE_DATA_DESC,
    ADSERVE_DATA_RATING,
    ADSERVE_DATA_LIKES,
    ADSERVE_DATA_DOWNLOADS,
    ADSERVE_DATA_PRICE,
    ADSERVE_DATA_SALEPRICE,
    ADSERVE_DATA_PHONE,
    ADSERVE_DATA_ADDRESS,
    ADSERVE_DATA_DESC2,
    ADSERVE_DATA_DISPLAYURL,
    ADSERVE_DATA_CTATEXT,
    ADSERVE_DATA_TYPE_COUNT
} adserve_data_type_e;

extern const char *const adserve_data_type_names[ADSERVE_DATA_TYPE_COUNT + 1];

/* Choice: a NATIVE creative's bounds, the API's and the build's */
#define ADSERVE_NATIVE_IMAGES_MAX     4
#define ADSERVE_NATIVE_DATA_MAX       12
#define ADSERVE_NATIVE_TEXT_MAX       1024     /* bytes of a title or a value */
#define ADSERVE_NATIVE_ASSETS_MAX     32       /* a placement's requests */
#define ADSERVE_NATIVE_TEMPLATE_MAX   65536    /* bytes of a style's html, css */

/* OpenRTB protocols a VAST of ours answers to (adserve_vast.h renders
 * 4.2, which VAST 4 players read): 7, 11, 13 an InLine; 8, 12, 14 a
 * Wrapper. Bit p is protocol p. */
#define ADSERVE_PROTOCOLS_INLINE      ((1u << 7) | (1u << 11) | (1u << 13))
#define ADSERVE_PROTOCOLS_WRAPPER     ((1u << 8) | (1u << 12) | (1u << 14))

/* Choice: the recommendation catalog's bounds, the API's and serving's: a
 * catalog item id (the spec's "catalog item id", the customer's own) is
 * 1..128 bytes of [A-Za-z0-9._:~-]; an item has up to 16 serving contexts
 * and 64 attributes; a pool ranks up to 100 associated items. */
#define ADSERVE_ITEM_ID_MAX           128
#define ADSERVE_ITEM_ID_CHARS         "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz" \
                                      "0123456789._:~-"

/* Whether s (NUL-terminated, may be NULL) can be a catalog item id: the
 * API's rule, and serving's before it puts one in JSON or a URL. */
int adserve_item_id_ok(const char *s);
#define ADSERVE_ITEM_CONTEXTS_MAX     16
#define ADSERVE_ITEM_ATTRIBUTES_MAX   64
#define ADSERVE_ITEM_ATTR_TEXT_MAX    256      /* bytes of a string attribute */
#define ADSERVE_ITEM_ATTR_VALUES_MAX  32       /* strings of an array attribute */
/* a content_filter_rule's lhs [ADSERVE_FILTER_KV, key] reads the request's
 * ext.kv; lhs [name] reads the item's attribute */
#define ADSERVE_FILTER_KV             "kv"
#define ADSERVE_POOL_ITEMS_MAX        100
#define ADSERVE_V_CONTEXT_ALL         "all"    /* the spec's default context */
#define ADSERVE_CONTEXT_MAX           64       /* bytes of a context's name */
#define ADSERVE_TOPN_DEFAULT          10       /* the spec's topn */
#define ADSERVE_TOPN_MAX              99

/* ext.algorithm of a recommendation unit: where its own items come from
 * (the spec's default axa0: the associated items pools; coview: the
 * co-view pools the sidecar computes). */
#define ADSERVE_V_AXA0                "axa0"
#define ADSERVE_V_COVIEW              "coview"

typedef enum {
    ADSERVE_ALGORITHM_AXA0 = 0,
    ADSERVE_ALGORITHM_COVIEW,
    ADSERVE_ALGORITHM_COUNT
} adserve_algorithm_e;

extern const char *const adserve_algorithm_names[ADSERVE_ALGORITHM_COUNT + 1];

/* ext.passback (the spec: "any JSON or null", a map of passback ad tags).
 * Choice: serving reads its ADSERVE_V_PASSBACK_DISPLAY member, a string of
 * HTML markup of up to ADSERVE_PASSBACK_MAX bytes, which a display or
 * native unit answers for the client to render when nothing fills; other
 * members are kept, and not served (README "Passback"). */
#define ADSERVE_V_PASSBACK_DISPLAY    "display"
#define ADSERVE_PASSBACK_MAX          16384

/* ext.target_service: an external recommender, by the name of the nginx
 * location that reaches it (adserve_rec_services + name): 1..64 bytes of
 * ADSERVE_SERVICE_CHARS, a safe URI segment. */
#define ADSERVE_SERVICE_MAX           64
#define ADSERVE_SERVICE_CHARS         "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz" \
                                      "0123456789_-"
int adserve_service_name_ok(const char *s);

/* What produced a recommended item (its "source" in the answer). */
typedef enum {
    ADSERVE_SOURCE_ALGORITHM = 0,
    ADSERVE_SOURCE_POPULAR,
    ADSERVE_SOURCE_PRESET,
    ADSERVE_SOURCE_SNAPSHOT,
    ADSERVE_SOURCE_COUNT
} adserve_rec_source_e;

extern const char *const adserve_rec_source_names[ADSERVE_SOURCE_COUNT + 1];

/* The algorithm source's items are counted per algorithm: the source id
 * "{ad unit id}/{name}" (ADSERVE_DIM_SOURCE) names the unit's algorithm
 * (adserve_algorithm_names), or this word when a target service gave them.
 * A click URL's src= still says "algorithm". */
#define ADSERVE_V_SERVICE_ALGORITHM   "target_service"
#define ADSERVE_ALGORITHM_SERVICE     ADSERVE_ALGORITHM_COUNT

/* the algorithm source's counted names: adserve_algorithm_names, then
 * ADSERVE_V_SERVICE_ALGORITHM (index ADSERVE_ALGORITHM_SERVICE) */
extern const char *const adserve_rec_algorithm_counted[ADSERVE_ALGORITHM_SERVICE + 2];

/* The source (adserve_rec_source_e) of a counted source id's name, the
 * part after ADSERVE_SOURCE_SEP, and in *algorithm its algorithm (an index
 * of adserve_rec_algorithm_counted, or -1: a fallback's, or "algorithm" as
 * counted before algorithms were apart); -1 for no source. */
int adserve_rec_counted_source(const char *name, size_t len, int *algorithm);

/* A RecommendationFallback's type (the union's tag: a source's name too),
 * its activation, and its order. */
#define ADSERVE_V_POPULAR             "popular"
#define ADSERVE_V_PRESET              "preset"
#define ADSERVE_V_SNAPSHOT            "snapshot"
#define ADSERVE_V_ALWAYS              "always"
#define ADSERVE_V_EXCEPT_TIMEOUT      "except_timeout"
#define ADSERVE_V_TIMEOUT_ONLY        "timeout_only"
#define ADSERVE_V_SEQUENTIAL          "sequential"
#define ADSERVE_V_RANDOM              "random"

typedef enum {
    ADSERVE_FALLBACK_POPULAR = 0,
    ADSERVE_FALLBACK_PRESET,
    ADSERVE_FALLBACK_SNAPSHOT,
    ADSERVE_FALLBACK_COUNT
} adserve_fallback_e;

extern const char *const adserve_fallback_names[ADSERVE_FALLBACK_COUNT + 1];

typedef enum {
    ADSERVE_ACTIVATION_ALWAYS = 0,
    ADSERVE_ACTIVATION_EXCEPT_TIMEOUT,
    ADSERVE_ACTIVATION_TIMEOUT_ONLY,
    ADSERVE_ACTIVATION_COUNT
} adserve_activation_e;

extern const char *const adserve_activation_names[ADSERVE_ACTIVATION_COUNT + 1];

typedef enum {
    ADSERVE_ORDER_SEQUENTIAL = 0,
    ADSERVE_ORDER_RANDOM,
    ADSERVE_ORDER_COUNT
} adserve_order_e;

extern const char *const adserve_order_names[ADSERVE_ORDER_COUNT + 1];

/* A recommendation placement's candidate_filtering.method: what the
 * user's view history does to an item (README "Recommendation"). */
#define ADSERVE_V_NO_FILTER           "NoFilter"
#define ADSERVE_V_VIEW_PENALTY        "ViewPenalty"
#define ADSERVE_V_VIEW_OUT            "ViewOut"

typedef enum {
    ADSERVE_FILTERING_NONE = 0,       /* NoFilter */
    ADSERVE_FILTERING_PENALTY,        /* ViewPenalty: ranked after the others */
    ADSERVE_FILTERING_OUT,            /* ViewOut: not recommended */
    ADSERVE_FILTERING_COUNT
} adserve_filtering_e;

extern const char *const adserve_filtering_names[ADSERVE_FILTERING_COUNT + 1];

/* A snapshot fallback's path, relative to the folder adserve_rec_snapshots
 * names: 1..ADSERVE_SNAPSHOT_PATH_MAX bytes of ADSERVE_SNAPSHOT_PATH_CHARS
 * in segments split by '/', none empty, "." or "..", so no path can leave
 * the folder; the build then checks the file's real path too (symbolic
 * links). NULL when path is one, else why not (the API's 422). */
#define ADSERVE_SNAPSHOT_PATH_MAX     255
#define ADSERVE_SNAPSHOT_PATH_CHARS   "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz" \
                                      "0123456789._-/"
const char *adserve_snapshot_path_check(const char *path);

#define ADSERVE_FALLBACKS_MAX         8        /* Choice: a chain's length */
#define ADSERVE_PRESET_ITEMS_MAX      100      /* Choice: a preset's items */

/* the click URL's query arguments naming the recommended item clicked and
 * its source (adserve_rec_source_names) */
#define ADSERVE_ITEM_ARG              "item"
#define ADSERVE_SOURCE_ARG            "src"

/* The VAST tracking events a video ad reports through
 * /app/v0/event/video/{event}, and its errors (README "Video"). */
typedef enum {
    ADSERVE_VIDEO_START = 0,
    ADSERVE_VIDEO_FIRST_QUARTILE,
    ADSERVE_VIDEO_MIDPOINT,
    ADSERVE_VIDEO_THIRD_QUARTILE,
    ADSERVE_VIDEO_COMPLETE,
    ADSERVE_VIDEO_SKIP,
    ADSERVE_VIDEO_MUTE,
    ADSERVE_VIDEO_PAUSE,
    ADSERVE_VIDEO_PROGRESS,
    ADSERVE_VIDEO_ERROR,
    ADSERVE_VIDEO_EVENT_COUNT
} adserve_video_event_e;

extern const char *const adserve_video_event_names[ADSERVE_VIDEO_EVENT_COUNT + 1];

#define ADSERVE_V_VIDEO_ERROR     "error"

/* VAST 4.2's error codes (its table of them: 100 XML parsing ... 901
 * undefined VPAID), what a player puts in [ERRORCODE]. Each is counted
 * apart, as {dim}{id}:error:{code}; a code outside the table counts as
 * ADSERVE_VAST_ERROR_UNDEFINED. */
#define ADSERVE_VAST_ERROR_CODES      36
#define ADSERVE_VAST_ERROR_UNDEFINED  900

extern const uint16_t adserve_vast_error_codes[ADSERVE_VAST_ERROR_CODES];

/* The index of code in adserve_vast_error_codes; that of 900 for a code
 * not in it. */
int adserve_vast_error_index(long code);

#define ADSERVE_IMPRESSION_PATH   "/app/v0/event/impression?ad_log="
#define ADSERVE_CLICK_PATH        "/app/v0/event/click?ad_log="
#define ADSERVE_VIDEO_EVENT_PATH  "/app/v0/event/video/"   /* + event */
/* where the shipped configuration serves players' VAST (+ tagid) and the
 * web SDK: the Integration group's tags name them */
#define ADSERVE_VAST_PATH         "/app/v0/vast/"
/* A public URL (adserve_public_url, the settings' public_url, an ad
 * unit's ext.public_url): http(s)://host..., no trailing slash, and no
 * character that would need escaping in an HTML attribute, a script
 * string or a VAST document (quotes, <, >, &, backslash, space,
 * controls). 1 when s is one. */
#define ADSERVE_PUBLIC_URL_MAX    512
int adserve_public_url_ok(const char *s, size_t len);
#define ADSERVE_SDK_PATH          "/sdk/v0/adserve.js"
/* the console's page that a password-reset mail links to (+ the token):
 * after the "#", so the token never reaches a server log or a Referer */
#define ADSERVE_CONSOLE_RESET_PATH "/console/#/reset-password?token="
#define ADSERVE_VIDEO_PROGRESS_AT 5       /* Choice: seconds, VAST's progress */

/* Choice: a VIDEO creative's bounds, the API's and the build's */
#define ADSERVE_VIDEO_MEDIA_MAX       8        /* media files */
#define ADSERVE_VIDEO_COMPANIONS_MAX  4
#define ADSERVE_VIDEO_DURATION_MAX    3600     /* seconds */

/* targeting keys: values from a list, or any value */
#define ADSERVE_V_PREDEFINED      "PREDEFINED"
#define ADSERVE_V_FREEFORM        "FREEFORM"

typedef enum {
    ADSERVE_KEY_TYPE_PREDEFINED = 0,
    ADSERVE_KEY_TYPE_FREEFORM,
    ADSERVE_KEY_TYPE_COUNT
} adserve_key_type_e;

extern const char *const adserve_key_type_names[ADSERVE_KEY_TYPE_COUNT + 1];

/* a recommendation placement's ad_log_tracking_mode: when its impression
 * counts */
typedef enum {
    ADSERVE_TRACKING_ON_AD_RESPONSE = 0,
    ADSERVE_TRACKING_ON_EVENT_TRACKER,
    ADSERVE_TRACKING_COUNT
} adserve_tracking_e;

extern const char *const adserve_tracking_names[ADSERVE_TRACKING_COUNT + 1];


/* ---- the targeting grammar's vocabularies ----------------------------------
 *
 * A line item's targeting (README "Targeting"): device classes, operating
 * systems and browsers as serving reads them from a user agent (and the bit
 * positions of its masks), genders, weekdays, time zones, and the Expr of
 * targeting.kv: its node types and comparison operators. */

typedef enum {
    ADSERVE_DEVICE_DESKTOP = 0,
    ADSERVE_DEVICE_MOBILE,
    ADSERVE_DEVICE_TABLET,
    ADSERVE_DEVICE_CTV,
    ADSERVE_DEVICE_OTHER,
    ADSERVE_DEVICE_COUNT
} adserve_device_type_e;

extern const char *const adserve_device_type_names[ADSERVE_DEVICE_COUNT + 1];

typedef enum {
    ADSERVE_OS_WINDOWS = 0,
    ADSERVE_OS_MACOS,
    ADSERVE_OS_LINUX,
    ADSERVE_OS_ANDROID,
    ADSERVE_OS_IOS,
    ADSERVE_OS_OTHER,
    ADSERVE_OS_COUNT
} adserve_os_e;

extern const char *const adserve_os_names[ADSERVE_OS_COUNT + 1];

typedef enum {
    ADSERVE_BROWSER_CHROME = 0,
    ADSERVE_BROWSER_FIREFOX,
    ADSERVE_BROWSER_SAFARI,
    ADSERVE_BROWSER_EDGE,
    ADSERVE_BROWSER_OTHER,
    ADSERVE_BROWSER_COUNT
} adserve_browser_e;

extern const char *const adserve_browser_names[ADSERVE_BROWSER_COUNT + 1];

/* "M", "F", "O": the spec's user.gender */
#define ADSERVE_GENDER_COUNT      3
extern const char *const adserve_gender_names[ADSERVE_GENDER_COUNT + 1];

/* "mon" .. "sun" */
#define ADSERVE_WEEKDAY_COUNT     7
extern const char *const adserve_weekday_names[ADSERVE_WEEKDAY_COUNT + 1];

/* dayparts' tz: UTC only, for now */
#define ADSERVE_V_UTC             "UTC"
#define ADSERVE_ZONE_COUNT        1
extern const char *const adserve_zone_names[ADSERVE_ZONE_COUNT + 1];

/* Expr node types: the union's tag */
#define ADSERVE_V_EXPR_CMP        "cmp"
#define ADSERVE_V_EXPR_AND        "and"
#define ADSERVE_V_EXPR_OR         "or"
#define ADSERVE_V_EXPR_NOT        "not"

typedef enum {
    ADSERVE_EXPR_CMP = 0,
    ADSERVE_EXPR_AND,
    ADSERVE_EXPR_OR,
    ADSERVE_EXPR_NOT,
    ADSERVE_EXPR_COUNT
} adserve_expr_e;

extern const char *const adserve_expr_names[ADSERVE_EXPR_COUNT + 1];

/* a cmp's op: eq and ne take one value, in, nin and intersects a list,
 * lt, le, gt and ge a number */
typedef enum {
    ADSERVE_OP_EQ = 0,
    ADSERVE_OP_NE,
    ADSERVE_OP_LT,
    ADSERVE_OP_LE,
    ADSERVE_OP_GT,
    ADSERVE_OP_GE,
    ADSERVE_OP_IN,
    ADSERVE_OP_NIN,
    ADSERVE_OP_INTERSECTS,
    ADSERVE_OP_COUNT
} adserve_op_e;

extern const char *const adserve_op_names[ADSERVE_OP_COUNT + 1];

/* the bounds of a kv rule: nesting (the root is level 1), comparisons, and
 * rhs values in all (they bound what one line item costs to check) */
#define ADSERVE_KV_MAX_DEPTH      16
#define ADSERVE_KV_MAX_CMPS       256
#define ADSERVE_KV_MAX_RHS        10000


/* ---- experiments -----------------------------------------------------------
 *
 * An experiment (README "Experiments") splits an ad unit's traffic between
 * variants: {"id", "ad_unit_id", "status", "variants": [{"id", "weight",
 * "ext": {…}, "recommendation": {…}}]}. Only an ACTIVE one splits, one per
 * ad unit. A variant's ext and recommendation members replace the unit's
 * members of the same names (adserve_variant_apply), so a variant is the
 * unit as it would be with those fields. A request joins the variant its
 * user.id draws (adserve_experiment_draw): stable, and independent between
 * experiments; a request without a user.id is served the unit as it is and
 * counted in no variant. Each variant is counted as
 * ADSERVE_V_DIM_VARIANT "{experiment id}/{variant id}", and its ad_log
 * token names it, so its events count there too. */
#define ADSERVE_VARIANTS_MIN          2
#define ADSERVE_VARIANTS_MAX          8
#define ADSERVE_VARIANT_ID_MAX        24       /* bytes of ADSERVE_VARIANT_ID_CHARS */
#define ADSERVE_VARIANT_ID_CHARS      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz" \
                                      "0123456789_-"
#define ADSERVE_VARIANT_WEIGHT_MAX    10000
#define ADSERVE_VARIANT_SEP           '/'
#define ADSERVE_V_VARIANT_EXT         "ext"    /* the members a variant */
#define ADSERVE_V_VARIANT_REC         "recommendation"   /* overrides */

typedef enum {
    ADSERVE_EXPERIMENT_ACTIVE = 0,
    ADSERVE_EXPERIMENT_PAUSED,
    ADSERVE_EXPERIMENT_ARCHIVED,
    ADSERVE_EXPERIMENT_STATUS_COUNT
} adserve_experiment_status_e;

extern const char *const adserve_experiment_status_names[ADSERVE_EXPERIMENT_STATUS_COUNT + 1];

/* Whether s (NUL-terminated, may be NULL) can be a variant id. */
int adserve_variant_id_ok(const char *s);


/* ---- external demand -------------------------------------------------------
 *
 * README "External demand" (issue 15). The API writes the first three
 * record kinds; serving reads them (the snapshot keeps them for the
 * auction, src/ngx_http_adserve_auction.c). The fourth is the module's.
 *
 * adserve:ad_sources, an OpenRTB 2.6 bidder each:
 *   {"id", "name", "endpoint_url", "seat", "tmax_ms", "floor", "formats":
 *    [adserve_format_names], "enabled", "bid_adjustment", "qps_limit",
 *    "description", created/updated}
 *   floor is a CPM in the account currency (sent as bidfloor, never below
 *   the ad unit's ext.target_ecpm); bid_adjustment (null: 1) multiplies a
 *   bid's price before it competes; qps_limit null: none; seat null: any.
 *
 * adserve:allocations, an ad unit's traffic to a source each:
 *   {"id", "ad_source_id", "target": adserve_alloc_target_names,
 *    "target_id", "share", created/updated}
 *   target ad_unit: the unit target_id; path: target_id and every unit
 *   whose path has target_id's path as its prefix (by the unit's id, so it
 *   follows the unit when it moves); placement: the units of placement
 *   target_id (each with its descendants, as line items target them).
 *   share: the percentage (0..100) of the unit's requests that go to the
 *   source, drawn apart per allocation; 0 keeps it listed but idle. One
 *   allocation per (source, target id).
 *
 * adserve:blocked_creatives, a block each:
 *   {"id", "kind": adserve_block_kind_names, "value", "ad_unit_id",
 *    "ad_source_id", "external_creative_id", "description", created/updated}
 *   ad_unit_id null: every ad unit; ad_source_id null: bids of every
 *   source (a crid is a source's own id, so crid blocks usually name one).
 *   adomain: a bid's adomain (lower case; the domain and its subdomains),
 *   sent as badv; crid: a bid's crid, exactly; cat: an IAB category code
 *   of the bid's cat (IAB7 blocks IAB7-39), sent with the unit's bcat.
 *
 * adserve:external_creatives, what won from outside, written by the module:
 *   {"id": adserve_external_creative_id(source id, crid), "ad_source_id",
 *    "crid", "adomain": [...], "cat": [...], "w", "h", "markup_sample"
 *    (at most ADSERVE_MARKUP_SAMPLE_MAX bytes of the adm), "first_seen",
 *    "last_seen" (RFC 3339 UTC)}
 *   The writer keeps an existing record's first_seen; several nodes may
 *   write one record, and the latest write wins (last_seen is then one
 *   node's latest). Not a serving kind: serving never reads it. */
#define ADSERVE_TMAX_MIN              10       /* Choice: ms, a source's tmax */
#define ADSERVE_TMAX_MAX              1000
#define ADSERVE_TMAX_DEFAULT          200
#define ADSERVE_BID_ADJUSTMENT_MIN    0.01     /* Choice: a multiplier */
#define ADSERVE_BID_ADJUSTMENT_MAX    10
#define ADSERVE_QPS_MAX               100000
#define ADSERVE_SHARE_MAX             100      /* percent */
#define ADSERVE_SEAT_MAX              64       /* bytes */
#define ADSERVE_BLOCK_VALUE_MAX       256      /* bytes */
#define ADSERVE_CRID_MAX              256      /* bytes */
#define ADSERVE_MARKUP_SAMPLE_MAX     4096     /* bytes of an adm kept */
/* An endpoint: http(s)://host[:port][/path][?query], at most this long */
#define ADSERVE_ENDPOINT_URL_MAX      2048
/* the blocked-creative unique's word for "no ad unit" / "no source" */
#define ADSERVE_BLOCK_ANY             "*"

#define ADSERVE_V_ALLOC_AD_UNIT       "ad_unit"
#define ADSERVE_V_ALLOC_PATH          "path"
#define ADSERVE_V_ALLOC_PLACEMENT     "placement"

typedef enum {
    ADSERVE_ALLOC_AD_UNIT = 0,        /* the unit alone */
    ADSERVE_ALLOC_PATH,               /* the unit and its descendants */
    ADSERVE_ALLOC_PLACEMENT,          /* the units of a placement */
    ADSERVE_ALLOC_TARGET_COUNT
} adserve_alloc_target_e;

extern const char *const adserve_alloc_target_names[ADSERVE_ALLOC_TARGET_COUNT + 1];

/* OpenRTB's names: adomain (badv), crid, cat (bcat) */
typedef enum {
    ADSERVE_BLOCK_ADOMAIN = 0,
    ADSERVE_BLOCK_CRID,
    ADSERVE_BLOCK_CAT,
    ADSERVE_BLOCK_KIND_COUNT
} adserve_block_kind_e;

extern const char *const adserve_block_kind_names[ADSERVE_BLOCK_KIND_COUNT + 1];

/* An ad unit's ext.metric_mode (the spec's): which demand its metrics
 * show. */
typedef enum {
    ADSERVE_METRIC_MODE_ALL = 0,
    ADSERVE_METRIC_MODE_INTERNAL_ONLY,
    ADSERVE_METRIC_MODE_EXTERNAL_ONLY,
    ADSERVE_METRIC_MODE_COUNT
} adserve_metric_mode_e;

extern const char *const adserve_metric_mode_names[ADSERVE_METRIC_MODE_COUNT + 1];

/* Whether s (len bytes) can be a source's endpoint: an absolute http or
 * https URL with a host, no user info (a password would sit in the audit
 * log and the logs of every node), no fragment, no space, control, quote,
 * backslash or non-ASCII byte, at most ADSERVE_ENDPOINT_URL_MAX. 1 when
 * it is one. */
int adserve_endpoint_url_ok(const char *s, size_t len);

/* Whether s can be where an ad's click lands (a native bid's link.url):
 * as an endpoint, and a fragment may end it. */
int adserve_link_url_ok(const char *s, size_t len);

/* The id of the external creative of crid from source: a UUID (RFC 9562
 * version 8, the vendor's own) of two FNV-1a hashes of "source/crid", so
 * that every node names one creative alike without asking Redis. out
 * holds 37 bytes. */
#define ADSERVE_UUID_LEN              36
void adserve_external_creative_id(const char *source, size_t source_len, const char *crid,
    size_t crid_len, char out[ADSERVE_UUID_LEN + 1]);


/* ---- counters -------------------------------------------------------------
 *
 * adserve:stats:{YYYYMMDDHH} (UTC) holds {dim}{id}:{metric} per ad unit,
 * line item and creative, plus invalid:{event}, dup:{event},
 * dropped:events and dropped:counters; adserve:delivery holds
 * {line item id}:{metric} over the line item's life (pacing reads it).
 * spend and convval are in micros of the account currency.
 *
 * External demand (README "External demand"): the auction counts
 * as:{ad unit id}/{ad source id}:{breq|bids|wins|timeouts|errors|blocked};
 * a won bid's events count on its ad unit (u:, every demand) and on
 * as:{unit}/{source} (:imp, :clk, :spend: external demand alone), never
 * on a line item or creative. */

typedef enum {
    ADSERVE_DIM_UNIT = 0,
    ADSERVE_DIM_LINE_ITEM,
    ADSERVE_DIM_CREATIVE,
    ADSERVE_DIM_ITEM,                 /* a catalog item: shown, view, clk */
    ADSERVE_DIM_SOURCE,               /* "{ad unit id}/{source}": shown, clk */
    ADSERVE_DIM_VARIANT,              /* "{experiment id}/{variant id}": req,
                                       * ads, shown, and the events */
    ADSERVE_DIM_AD_SOURCE,            /* "{ad unit id}/{ad source id}": the
                                       * auction's counts (breq .. blocked),
                                       * and its wins' events and spend */
    ADSERVE_DIM_COUNT
} adserve_dim_e;

#define ADSERVE_V_DIM_UNIT        "u:"
#define ADSERVE_V_DIM_LINE_ITEM   "li:"
#define ADSERVE_V_DIM_CREATIVE    "cr:"
#define ADSERVE_V_DIM_ITEM        "it:"
#define ADSERVE_V_DIM_SOURCE      "rs:"
#define ADSERVE_SOURCE_SEP        '/'
#define ADSERVE_V_DIM_VARIANT     "xv:"
#define ADSERVE_V_DIM_AD_SOURCE   "as:"

extern const char *const adserve_dim_names[ADSERVE_DIM_COUNT + 1];

/* The metrics, the reports' first (up to ADSERVE_METRIC_REPORTED); the
 * three events in the order of adserve_event_e. */
typedef enum {
    ADSERVE_METRIC_REQ = 0,           /* ad requests */
    ADSERVE_METRIC_ADS,               /* 200 answers */
    ADSERVE_METRIC_IMP,               /* impressions */
    ADSERVE_METRIC_CLK,               /* clicks */
    ADSERVE_METRIC_CONV,              /* conversions */
    ADSERVE_METRIC_SPEND,
    ADSERVE_METRIC_CONVVAL,
    ADSERVE_METRIC_OPP,               /* pacing's: a paced line item could
                                       * have served */
    ADSERVE_METRIC_SHOWN,             /* recommended in an answer */
    ADSERVE_METRIC_VIEW,              /* a recommendation request's item */
    ADSERVE_METRIC_PASSBACK,          /* nothing filled: the unit's passback */
    /* the auction's, per ad unit and source (ADSERVE_DIM_AD_SOURCE) */
    ADSERVE_METRIC_BREQ,              /* bid requests sent */
    ADSERVE_METRIC_BIDS,              /* usable bids received */
    ADSERVE_METRIC_WINS,              /* bids that won and were served */
    ADSERVE_METRIC_TIMEOUTS,          /* no answer within the source's tmax */
    ADSERVE_METRIC_ERRORS,            /* down, an HTTP error, a malformed
                                       * answer or an unusable bid */
    ADSERVE_METRIC_BLOCKED,           /* bids dropped by a block */
    ADSERVE_METRIC_COUNT
} adserve_metric_e;

#define ADSERVE_V_SPEND           "spend"
#define ADSERVE_V_CONVVAL         "convval"

#define ADSERVE_METRIC_REPORTED   ADSERVE_METRIC_OPP

extern const char *const adserve_metric_names[ADSERVE_METRIC_COUNT + 1];

/* the tracked events: ADSERVE_METRIC_IMP + type is each one's metric, up
 * to the video's, whose names are their own (adserve_event_name) */
typedef enum {
    ADSERVE_EVENT_IMPRESSION = 0,
    ADSERVE_EVENT_CLICK,
    ADSERVE_EVENT_CONVERSION,
    ADSERVE_EVENT_VIDEO,              /* + adserve_video_event_e */
    ADSERVE_EVENT_COUNT = ADSERVE_EVENT_VIDEO + ADSERVE_VIDEO_EVENT_COUNT
} adserve_event_e;

/* An event's name: its metric in the stats hashes (imp, clk, conv; a
 * video's events by their VAST names), its dedup set and its stream type. */
const char *adserve_event_name(adserve_event_e type);

#define ADSERVE_FIELD_INVALID           "invalid:"          /* + event */
#define ADSERVE_FIELD_DUP               "dup:"              /* + event */
#define ADSERVE_FIELD_DROPPED_EVENTS    "dropped:events"
#define ADSERVE_FIELD_DROPPED_COUNTERS  "dropped:counters"

/* the hour hash's suffix: YYYYMMDDHH */
#define ADSERVE_HOUR_LEN          10


/* ---- time ---------------------------------------------------------------- */

/* An RFC 3339 date-time ("2024-01-31T12:34:56Z", fractions and +hh:mm
 * offsets allowed) as unix seconds in *t. 0, or -1 when it is not one
 * (the calendar is checked: no February 30). */
int adserve_parse_time(const char *s, int64_t *t);

/* Minutes since midnight of "HH:MM", 00:00 to 23:59, or 24:00 when end;
 * -1 when it is not one. The daypart grammar of line item targeting. */
int adserve_parse_hhmm(const char *s, int end);

/* Days since 1970-01-01 of a proleptic Gregorian date. */
int64_t adserve_days_from_civil(int64_t y, unsigned m, unsigned d);


/* ---- Prometheus ---------------------------------------------------------- */

/* Both programs answer GET /metrics in Prometheus's text format (0.0.4):
 * the module for the node (nginx, loopback only in the shipped
 * configuration), the sidecar for the API (its own loopback port). Their
 * latency histograms share these upper bounds, in milliseconds (printed as
 * seconds in le=""), and the last bucket is +Inf. */
#define ADSERVE_PROMETHEUS_TYPE          "text/plain; version=0.0.4; charset=utf-8"
#define ADSERVE_LATENCY_NBUCKETS         11
#define ADSERVE_LATENCY_BUCKETS_MS       { 1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500 }


/* ---- the hash ------------------------------------------------------------ */

/* FNV-1a over bytes: every id table of both programs (the snapshot's ad
 * units and records, interned targeting strings, the reports' maps). Short
 * ids, built once or looked up once per request: simplicity wins. */
static inline uint64_t
adserve_hash(const char *p, size_t len)
{
    uint64_t  h = 14695981039346656037ULL;   /* the offset basis */

    while (len--) {
        h ^= (unsigned char) *p++;
        h *= 1099511628211ULL;
    }

    return h;
}

#endif
