
/*
 * adserve_contract: the tables and parsers of the Redis contract
 * (adserve_contract.h).
 */


#include <string.h>
#include <strings.h>

#include "adserve_contract.h"


#define KIND(key, record)  { key, &(key)[sizeof(ADSERVE_KEY_PREFIX) - 1], record }

const adserve_kind_t  adserve_kinds[ADSERVE_KIND_ALL] = {
    [ADSERVE_KIND_AD_UNITS]       = KIND(ADSERVE_KEY_AD_UNITS, ADSERVE_RECORD_AD_UNIT),
    [ADSERVE_KIND_PLACEMENTS]     = KIND(ADSERVE_KEY_PLACEMENTS, ADSERVE_RECORD_PLACEMENT),
    [ADSERVE_KIND_ORDERS]         = KIND(ADSERVE_KEY_ORDERS, ADSERVE_RECORD_ORDER),
    [ADSERVE_KIND_LINE_ITEMS]     = KIND(ADSERVE_KEY_LINE_ITEMS, ADSERVE_RECORD_LINE_ITEM),
    [ADSERVE_KIND_CREATIVES]      = KIND(ADSERVE_KEY_CREATIVES, ADSERVE_RECORD_CREATIVE),
    [ADSERVE_KIND_LICAS]          = KIND(ADSERVE_KEY_LICAS, ADSERVE_RECORD_LICA),
    [ADSERVE_KIND_ADVERTISERS]    = KIND(ADSERVE_KEY_ADVERTISERS, ADSERVE_RECORD_ADVERTISER),
    [ADSERVE_KIND_TARGETING_KEYS] = KIND(ADSERVE_KEY_TARGETING_KEYS, ADSERVE_RECORD_TARGETING_KEY),
    [ADSERVE_KIND_NATIVE_STYLES]  = KIND(ADSERVE_KEY_NATIVE_STYLES, ADSERVE_RECORD_NATIVE_STYLE),
    [ADSERVE_KIND_AD_UNIT_NATIVE_STYLES] = KIND(ADSERVE_KEY_AD_UNIT_NATIVE_STYLES,
                                                ADSERVE_RECORD_AD_UNIT_NATIVE_STYLE),
    [ADSERVE_KIND_NATIVE_FORMATS] = KIND(ADSERVE_KEY_NATIVE_FORMATS,
                                         ADSERVE_RECORD_NATIVE_FORMAT),
    [ADSERVE_KIND_NATIVE_STYLE_TEMPLATES] = KIND(ADSERVE_KEY_NATIVE_STYLE_TEMPLATES,
                                                 ADSERVE_RECORD_NATIVE_STYLE_TEMPLATE),
    [ADSERVE_KIND_CATALOG_ITEMS]  = KIND(ADSERVE_KEY_CATALOG_ITEMS, ADSERVE_RECORD_CATALOG_ITEM),
    [ADSERVE_KIND_ITEM_POOLS]     = KIND(ADSERVE_KEY_ITEM_POOLS, ADSERVE_RECORD_ITEM_POOL),
    [ADSERVE_KIND_POPULAR_ITEMS]  = KIND(ADSERVE_KEY_POPULAR_ITEMS, ADSERVE_RECORD_POPULAR_ITEMS),
    [ADSERVE_KIND_COVIEW_POOLS]   = KIND(ADSERVE_KEY_COVIEW_POOLS, ADSERVE_RECORD_COVIEW_POOL),
    [ADSERVE_KIND_EXPERIMENTS]    = KIND(ADSERVE_KEY_EXPERIMENTS, ADSERVE_RECORD_EXPERIMENT),
    [ADSERVE_KIND_SETTINGS]       = KIND(ADSERVE_KEY_SETTINGS, ADSERVE_RECORD_SETTINGS),
    [ADSERVE_KIND_AD_SOURCES]     = KIND(ADSERVE_KEY_AD_SOURCES, ADSERVE_RECORD_AD_SOURCE),
    [ADSERVE_KIND_ALLOCATIONS]    = KIND(ADSERVE_KEY_ALLOCATIONS, ADSERVE_RECORD_ALLOCATION),
    [ADSERVE_KIND_BLOCKED_CREATIVES] = KIND(ADSERVE_KEY_BLOCKED_CREATIVES,
                                            ADSERVE_RECORD_BLOCKED_CREATIVE),
    [ADSERVE_KIND_EXTERNAL_CREATIVES] = KIND(ADSERVE_KEY_EXTERNAL_CREATIVES,
                                             ADSERVE_RECORD_EXTERNAL_CREATIVE),
};


int
adserve_kind_by_name(const char *name, size_t len)
{
    int  k;

    for (k = 0; k < ADSERVE_KIND_SERVING; k++) {
        if (strlen(adserve_kinds[k].name) == len
            && memcmp(adserve_kinds[k].name, name, len) == 0)
        {
            return k;
        }
    }

    return -1;
}


int
adserve_kind_by_key(const char *key)
{
    size_t  n = sizeof(ADSERVE_KEY_PREFIX) - 1;

    if (key == NULL || strncmp(key, ADSERVE_KEY_PREFIX, n) != 0) {
        return -1;
    }

    return adserve_kind_by_name(key + n, strlen(key + n));
}


int
adserve_public_url_ok(const char *s, size_t len)
{
    size_t  i, scheme;

    if (len >= 8 && memcmp(s, "https://", 8) == 0) {
        scheme = 8;

    } else if (len >= 7 && memcmp(s, "http://", 7) == 0) {
        scheme = 7;

    } else {
        return 0;
    }

    if (len == scheme || len > ADSERVE_PUBLIC_URL_MAX || s[len - 1] == '/'
        || s[scheme] == '/')
    {
        return 0;
    }

    for (i = scheme; i < len; i++) {
        if ((unsigned char) s[i] <= ' ' || (unsigned char) s[i] >= 0x7f
            || strchr("\"'<>&\\", s[i]) != NULL)
        {
            return 0;
        }
    }

    return 1;
}


/* The printable ASCII bytes a URL here may not hold: those that need
 * escaping (1), and "#" (2), which only a landing page's may. */
static const unsigned char  url_refused[128] = {
    ['"'] = 1, ['\''] = 1, ['<'] = 1, ['>'] = 1, ['\\'] = 1, ['^'] = 1, ['`'] = 1,
    ['{'] = 1, ['|'] = 1, ['}'] = 1, ['#'] = 2
};


/* An absolute http(s) URL with a host and no user info, of printable
 * ASCII without the bytes that need escaping; fragment: whether a "#" may
 * end it (a landing page's, not a request's). */
static int
http_url_ok(const char *s, size_t len, int fragment)
{
    size_t         i, scheme, host;
    unsigned char  c, refused = fragment ? 1 : 3;

    if (len >= 8 && strncasecmp(s, "https://", 8) == 0) {
        scheme = 8;

    } else if (len >= 7 && strncasecmp(s, "http://", 7) == 0) {
        scheme = 7;

    } else {
        return 0;
    }

    if (len > ADSERVE_ENDPOINT_URL_MAX) {
        return 0;
    }

    for (i = scheme; i < len; i++) {
        c = (unsigned char) s[i];
        if (c <= ' ' || c >= 0x7f || (url_refused[c] & refused)) {
            return 0;
        }
    }

    /* the authority: a host (a name, an IPv4 address or [IPv6]) and an
     * optional port, without user info */
    host = scheme;
    while (host < len && s[host] != '/' && s[host] != '?' && s[host] != '#') {
        if (s[host] == '@') {
            return 0;
        }
        host++;
    }

    return host > scheme && s[scheme] != ':';
}


int
adserve_endpoint_url_ok(const char *s, size_t len)
{
    return http_url_ok(s, len, 0);
}


int
adserve_link_url_ok(const char *s, size_t len)
{
    return http_url_ok(s, len, 1);
}


/* FNV-1a continued from h over len bytes */
static uint64_t
fnv_more(uint64_t h, const char *p, size_t len)
{
    while (len--) {
        h ^= (unsigned char) *p++;
        h *= 1099511628211ULL;
    }

    return h;
}


void
adserve_external_creative_id(const char *source, size_t source_len, const char *crid,
    size_t crid_len, char out[ADSERVE_UUID_LEN + 1])
{
    static const char  hex[] = "0123456789abcdef";
    unsigned char      b[16];
    uint64_t           h[2];
    int                i, k, o;

    /* two hashes of "source/crid": FNV-1a's basis, and the same run from
     * the first hash's end, so the halves differ */
    h[0] = fnv_more(adserve_hash(source, source_len), "/", 1);
    h[0] = fnv_more(h[0], crid, crid_len);
    h[1] = fnv_more(fnv_more(h[0], crid, crid_len), source, source_len);

    for (i = 0; i < 16; i++) {
        b[i] = (unsigned char) (h[i / 8] >> (8 * (i % 8)));
    }

    b[6] = (unsigned char) ((b[6] & 0x0f) | 0x80);     /* version 8 */
    b[8] = (unsigned char) ((b[8] & 0x3f) | 0x80);     /* variant 10 */

    for (i = 0, o = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10) {
            out[o++] = '-';
        }
        k = b[i];
        out[o++] = hex[k >> 4];
        out[o++] = hex[k & 0x0f];
    }

    out[o] = '\0';
}


/* ---- vocabularies -------------------------------------------------------- */

/* ISO 4217, as of 2025 (ANG became XCG, ZWL ZWG) */
const char *const adserve_currency_names[ADSERVE_CURRENCY_COUNT + 1] = {
    "AED", "AFN", "ALL", "AMD", "AOA", "ARS", "AUD", "AWG", "AZN", "BAM", "BBD", "BDT",
    "BGN", "BHD", "BIF", "BMD", "BND", "BOB", "BRL", "BSD", "BTN", "BWP", "BYN", "BZD",
    "CAD", "CDF", "CHF", "CLP", "CNY", "COP", "CRC", "CUP", "CVE", "CZK", "DJF", "DKK",
    "DOP", "DZD", "EGP", "ERN", "ETB", "EUR", "FJD", "FKP", "GBP", "GEL", "GHS", "GIP",
    "GMD", "GNF", "GTQ", "GYD", "HKD", "HNL", "HTG", "HUF", "IDR", "ILS", "INR", "IQD",
    "IRR", "ISK", "JMD", "JOD", "JPY", "KES", "KGS", "KHR", "KMF", "KPW", "KRW", "KWD",
    "KYD", "KZT", "LAK", "LBP", "LKR", "LRD", "LSL", "LYD", "MAD", "MDL", "MGA", "MKD",
    "MMK", "MNT", "MOP", "MRU", "MUR", "MVR", "MWK", "MXN", "MYR", "MZN", "NAD", "NGN",
    "NIO", "NOK", "NPR", "NZD", "OMR", "PAB", "PEN", "PGK", "PHP", "PKR", "PLN", "PYG",
    "QAR", "RON", "RSD", "RUB", "RWF", "SAR", "SBD", "SCR", "SDG", "SEK", "SGD", "SHP",
    "SLE", "SOS", "SRD", "SSP", "STN", "SVC", "SYP", "SZL", "THB", "TJS", "TMT", "TND",
    "TOP", "TRY", "TTD", "TWD", "TZS", "UAH", "UGX", "USD", "UYU", "UZS", "VES", "VND",
    "VUV", "WST", "XAF", "XCD", "XCG", "XOF", "XPF", "YER", "ZAR", "ZMW", "ZWG",
    NULL
};


const char *const adserve_unit_status_names[ADSERVE_UNIT_STATUS_COUNT + 1] = {
    ADSERVE_V_ACTIVE, ADSERVE_V_INACTIVE, ADSERVE_V_ARCHIVED, NULL
};

const char *const adserve_order_status_names[ADSERVE_ORDER_STATUS_COUNT + 1] = {
    ADSERVE_V_DRAFT, ADSERVE_V_APPROVED, ADSERVE_V_PAUSED, ADSERVE_V_ARCHIVED, NULL
};

const char *const adserve_li_status_names[ADSERVE_LI_STATUS_COUNT + 1] = {
    ADSERVE_V_DRAFT, ADSERVE_V_ACTIVE, ADSERVE_V_PAUSED, ADSERVE_V_COMPLETED,
    ADSERVE_V_ARCHIVED, NULL
};

const char *const adserve_lica_status_names[ADSERVE_LICA_STATUS_COUNT + 1] = {
    ADSERVE_V_ACTIVE, ADSERVE_V_PAUSED, NULL
};

const char *const adserve_approval_names[ADSERVE_APPROVAL_COUNT + 1] = {
    ADSERVE_V_PENDING, ADSERVE_V_APPROVED, ADSERVE_V_REJECTED, NULL
};

const char *const adserve_tier_names[ADSERVE_TIER_COUNT + 1] = {
    ADSERVE_V_SPONSORSHIP, ADSERVE_V_STANDARD, ADSERVE_V_PRICE_PRIORITY,
    ADSERVE_V_HOUSE, NULL
};

const uint8_t  adserve_tier_priority[ADSERVE_TIER_COUNT] = { 4, 8, 12, 16 };

const char *const adserve_cost_names[ADSERVE_COST_COUNT + 1] = {
    ADSERVE_V_CPM, ADSERVE_V_CPC, ADSERVE_V_CPA, NULL
};

const char *const adserve_goal_names[ADSERVE_GOAL_COUNT + 1] = {
    ADSERVE_V_NONE, ADSERVE_V_IMPRESSIONS, ADSERVE_V_CLICKS, NULL
};

const char *const adserve_delivery_names[ADSERVE_DELIVERY_COUNT + 1] = {
    ADSERVE_V_EVEN, ADSERVE_V_ASAP, NULL
};

const char *const adserve_creative_type_names[ADSERVE_CREATIVE_TYPE_COUNT + 1] = {
    ADSERVE_V_IMAGE, ADSERVE_V_HTML, ADSERVE_V_VIDEO, ADSERVE_V_NATIVE, NULL
};

const char *const adserve_algorithm_names[ADSERVE_ALGORITHM_COUNT + 1] = {
    ADSERVE_V_AXA0, ADSERVE_V_COVIEW, NULL
};

const char *const adserve_experiment_status_names[ADSERVE_EXPERIMENT_STATUS_COUNT + 1] = {
    ADSERVE_V_ACTIVE, ADSERVE_V_PAUSED, ADSERVE_V_ARCHIVED, NULL
};

const char *const adserve_rec_algorithm_counted[ADSERVE_ALGORITHM_SERVICE + 2] = {
    ADSERVE_V_AXA0, ADSERVE_V_COVIEW, ADSERVE_V_SERVICE_ALGORITHM, NULL
};

const char *const adserve_rec_source_names[ADSERVE_SOURCE_COUNT + 1] = {
    "algorithm", ADSERVE_V_POPULAR, ADSERVE_V_PRESET, ADSERVE_V_SNAPSHOT, NULL
};

const char *const adserve_fallback_names[ADSERVE_FALLBACK_COUNT + 1] = {
    ADSERVE_V_POPULAR, ADSERVE_V_PRESET, ADSERVE_V_SNAPSHOT, NULL
};

const char *const adserve_activation_names[ADSERVE_ACTIVATION_COUNT + 1] = {
    ADSERVE_V_ALWAYS, ADSERVE_V_EXCEPT_TIMEOUT, ADSERVE_V_TIMEOUT_ONLY, NULL
};

const char *const adserve_filtering_names[ADSERVE_FILTERING_COUNT + 1] = {
    ADSERVE_V_NO_FILTER, ADSERVE_V_VIEW_PENALTY, ADSERVE_V_VIEW_OUT, NULL
};

const char *const adserve_order_names[ADSERVE_ORDER_COUNT + 1] = {
    ADSERVE_V_SEQUENTIAL, ADSERVE_V_RANDOM, NULL
};

const char *const adserve_render_names[ADSERVE_RENDER_COUNT + 1] = {
    "html", "asset", NULL
};

const char *const adserve_asset_names[ADSERVE_ASSET_COUNT + 1] = {
    "title", "img", "video", "data", NULL
};

const char *const adserve_image_type_names[ADSERVE_IMAGE_TYPE_COUNT + 1] = {
    "icon", "main", NULL
};

const uint8_t  adserve_image_types[ADSERVE_IMAGE_TYPE_COUNT] = { 1, 3 };

const char *const adserve_data_type_names[ADSERVE_DATA_TYPE_COUNT + 1] = {
    "sponsored", "desc", "rating", "likes", "downloads", "price", "saleprice", "phone",
    "address", "desc2", "displayurl", "ctatext", NULL
};

const char *const adserve_format_names[ADSERVE_FORMAT_COUNT + 1] = {
    "display", "video", "native", NULL
};

const char *const adserve_alloc_target_names[ADSERVE_ALLOC_TARGET_COUNT + 1] = {
    ADSERVE_V_ALLOC_AD_UNIT, ADSERVE_V_ALLOC_PATH, ADSERVE_V_ALLOC_PLACEMENT, NULL
};

const char *const adserve_block_kind_names[ADSERVE_BLOCK_KIND_COUNT + 1] = {
    "adomain", "crid", "cat", NULL
};

const char *const adserve_metric_mode_names[ADSERVE_METRIC_MODE_COUNT + 1] = {
    "all", "internal_only", "external_only", NULL
};

const char *const adserve_video_event_names[ADSERVE_VIDEO_EVENT_COUNT + 1] = {
    "start", "firstQuartile", "midpoint", "thirdQuartile", "complete", "skip", "mute",
    "pause", "progress", ADSERVE_V_VIDEO_ERROR, NULL
};

const uint16_t  adserve_vast_error_codes[ADSERVE_VAST_ERROR_CODES] = {
    100, 101, 102, 200, 201, 202, 203, 204, 205, 206, 300, 301, 302, 303, 304,
    400, 401, 402, 403, 405, 406, 407, 408, 409, 410, 500, 501, 502, 503,
    600, 601, 602, 603, 604, 900, 901
};


/* 1..max bytes, each of chars */
static int
name_ok(const char *s, size_t max, const char *chars)
{
    size_t  n = s ? strlen(s) : 0;

    return n > 0 && n <= max && strspn(s, chars) == n;
}


int
adserve_item_id_ok(const char *s)
{
    return name_ok(s, ADSERVE_ITEM_ID_MAX, ADSERVE_ITEM_ID_CHARS);
}


int
adserve_service_name_ok(const char *s)
{
    return name_ok(s, ADSERVE_SERVICE_MAX, ADSERVE_SERVICE_CHARS);
}


int
adserve_rec_counted_source(const char *name, size_t len, int *algorithm)
{
    *algorithm = adserve_vocab(adserve_rec_algorithm_counted, name, len);

    return *algorithm >= 0 ? ADSERVE_SOURCE_ALGORITHM
                           : adserve_vocab(adserve_rec_source_names, name, len);
}


int
adserve_variant_id_ok(const char *s)
{
    return name_ok(s, ADSERVE_VARIANT_ID_MAX, ADSERVE_VARIANT_ID_CHARS);
}


const char *
adserve_snapshot_path_check(const char *path)
{
    const char  *seg, *end;
    size_t       n = path ? strlen(path) : 0;

    if (n == 0 || n > ADSERVE_SNAPSHOT_PATH_MAX) {
        return "must be 1 to 255 bytes";
    }

    if (strspn(path, ADSERVE_SNAPSHOT_PATH_CHARS) != n) {
        return "letters, digits, . _ - and / only";
    }

    for (seg = path; ; seg = end + 1) {
        end = strchr(seg, '/');
        n = end ? (size_t) (end - seg) : strlen(seg);

        if (n == 0 || (n == 1 && seg[0] == '.') || (n == 2 && seg[0] == '.' && seg[1] == '.')) {
            return "must stay inside the snapshot folder: a relative path without empty, "
                   "\".\" or \"..\" segments";
        }

        if (end == NULL) {
            return NULL;
        }
    }
}


int
adserve_vast_error_index(long code)
{
    int  i, undefined = 0;

    for (i = 0; i < ADSERVE_VAST_ERROR_CODES; i++) {
        if (adserve_vast_error_codes[i] == code) {
            return i;
        }

        if (adserve_vast_error_codes[i] == ADSERVE_VAST_ERROR_UNDEFINED) {
            undefined = i;
        }
    }

    return undefined;
}

const char *
adserve_event_name(adserve_event_e type)
{
    if (type < ADSERVE_EVENT_VIDEO) {
        return adserve_metric_names[ADSERVE_METRIC_IMP + type];
    }

    return type < ADSERVE_EVENT_COUNT ? adserve_video_event_names[type - ADSERVE_EVENT_VIDEO]
                                      : "";
}

const char *const adserve_video_delivery_names[ADSERVE_VIDEO_DELIVERY_COUNT + 1] = {
    "progressive", "streaming", NULL
};

const char *const adserve_key_type_names[ADSERVE_KEY_TYPE_COUNT + 1] = {
    ADSERVE_V_PREDEFINED, ADSERVE_V_FREEFORM, NULL
};

const char *const adserve_tracking_names[ADSERVE_TRACKING_COUNT + 1] = {
    "on_ad_response", "on_event_tracker", NULL
};

const char *const adserve_device_type_names[ADSERVE_DEVICE_COUNT + 1] = {
    "desktop", "mobile", "tablet", "ctv", "other", NULL
};

const char *const adserve_os_names[ADSERVE_OS_COUNT + 1] = {
    "windows", "macos", "linux", "android", "ios", "other", NULL
};

const char *const adserve_browser_names[ADSERVE_BROWSER_COUNT + 1] = {
    "chrome", "firefox", "safari", "edge", "other", NULL
};

const char *const adserve_gender_names[ADSERVE_GENDER_COUNT + 1] = {
    "M", "F", "O", NULL
};

const char *const adserve_weekday_names[ADSERVE_WEEKDAY_COUNT + 1] = {
    "mon", "tue", "wed", "thu", "fri", "sat", "sun", NULL
};

const char *const adserve_zone_names[ADSERVE_ZONE_COUNT + 1] = {
    ADSERVE_V_UTC, NULL
};

const char *const adserve_expr_names[ADSERVE_EXPR_COUNT + 1] = {
    ADSERVE_V_EXPR_CMP, ADSERVE_V_EXPR_AND, ADSERVE_V_EXPR_OR, ADSERVE_V_EXPR_NOT, NULL
};

const char *const adserve_op_names[ADSERVE_OP_COUNT + 1] = {
    "eq", "ne", "lt", "le", "gt", "ge", "in", "nin", "intersects", NULL
};

const char *const adserve_dim_names[ADSERVE_DIM_COUNT + 1] = {
    ADSERVE_V_DIM_UNIT, ADSERVE_V_DIM_LINE_ITEM, ADSERVE_V_DIM_CREATIVE, ADSERVE_V_DIM_ITEM,
    ADSERVE_V_DIM_SOURCE, ADSERVE_V_DIM_VARIANT, ADSERVE_V_DIM_AD_SOURCE, NULL
};

const char *const adserve_metric_names[ADSERVE_METRIC_COUNT + 1] = {
    [ADSERVE_METRIC_REQ] = "req",
    [ADSERVE_METRIC_ADS] = "ads",
    [ADSERVE_METRIC_IMP] = "imp",
    [ADSERVE_METRIC_CLK] = "clk",
    [ADSERVE_METRIC_CONV] = "conv",
    [ADSERVE_METRIC_SPEND] = ADSERVE_V_SPEND,
    [ADSERVE_METRIC_CONVVAL] = ADSERVE_V_CONVVAL,
    [ADSERVE_METRIC_OPP] = "opp",
    [ADSERVE_METRIC_SHOWN] = "shown",
    [ADSERVE_METRIC_VIEW] = "view",
    [ADSERVE_METRIC_PASSBACK] = "passback",
    [ADSERVE_METRIC_BREQ] = "breq",
    [ADSERVE_METRIC_BIDS] = "bids",
    [ADSERVE_METRIC_WINS] = "wins",
    [ADSERVE_METRIC_TIMEOUTS] = "timeouts",
    [ADSERVE_METRIC_ERRORS] = "errors",
    [ADSERVE_METRIC_BLOCKED] = "blocked",
    [ADSERVE_METRIC_COUNT] = NULL
};


int
adserve_vocab(const char *const *names, const char *s, size_t len)
{
    int  i;

    if (s == NULL) {
        return -1;
    }

    for (i = 0; names[i] != NULL; i++) {
        if (strlen(names[i]) == len && memcmp(names[i], s, len) == 0) {
            return i;
        }
    }

    return -1;
}


int
adserve_vocab_str(const char *const *names, const char *s)
{
    return s == NULL ? -1 : adserve_vocab(names, s, strlen(s));
}


/* ---- time ---------------------------------------------------------------- */

/* days since 1970-01-01 in the proleptic Gregorian calendar (H. Hinnant) */
int64_t
adserve_days_from_civil(int64_t y, unsigned m, unsigned d)
{
    int64_t   era;
    unsigned  yoe, doy, doe;

    y -= m <= 2;
    era = (y >= 0 ? y : y - 399) / 400;
    yoe = (unsigned) (y - era * 400);
    doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
    doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;

    return era * 146097 + (int64_t) doe - 719468;
}


/* n decimal digits, and nothing else: sscanf's %2d would take signs and
 * blanks too */
static int
digits(const char *s, int n, int *v)
{
    int  i;

    *v = 0;

    for (i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') {
            return -1;
        }
        *v = *v * 10 + (s[i] - '0');
    }

    return 0;
}


static int
days_in_month(int y, int m)
{
    static const int  days[] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };

    if (m == 2 && y % 4 == 0 && (y % 100 != 0 || y % 400 == 0)) {
        return 29;
    }

    return days[m - 1];
}


int
adserve_parse_time(const char *s, int64_t *t)
{
    int  y, mo, d, h, mi, sec, oh, om, off = 0;

    /* YYYY-MM-DDTHH:MM:SS */
    if (s == NULL || strlen(s) < 20
        || digits(s, 4, &y) || s[4] != '-' || digits(s + 5, 2, &mo) || s[7] != '-'
        || digits(s + 8, 2, &d) || (s[10] != 'T' && s[10] != 't')
        || digits(s + 11, 2, &h) || s[13] != ':' || digits(s + 14, 2, &mi)
        || s[16] != ':' || digits(s + 17, 2, &sec)
        || mo < 1 || mo > 12 || d < 1 || d > days_in_month(y, mo)
        || h > 23 || mi > 59 || sec > 60)
    {
        return -1;
    }

    s += 19;

    if (*s == '.') {                       /* fractional seconds: dropped */
        if (s[1] < '0' || s[1] > '9') {
            return -1;
        }
        do { s++; } while (*s >= '0' && *s <= '9');
    }

    if ((*s == 'Z' || *s == 'z') && s[1] == '\0') {
        off = 0;

    } else if ((*s == '+' || *s == '-') && strlen(s) == 6
               && digits(s + 1, 2, &oh) == 0 && s[3] == ':'
               && digits(s + 4, 2, &om) == 0 && oh < 24 && om < 60)
    {
        off = (*s == '+' ? 1 : -1) * (oh * 3600 + om * 60);

    } else {
        return -1;
    }

    *t = adserve_days_from_civil(y, (unsigned) mo, (unsigned) d) * 86400
         + h * 3600 + mi * 60 + sec - off;

    return 0;
}


int
adserve_parse_hhmm(const char *s, int end)
{
    int  h, m;

    if (s == NULL || strlen(s) != 5 || s[2] != ':'
        || digits(s, 2, &h) != 0 || digits(s + 3, 2, &m) != 0)
    {
        return -1;
    }

    if (m > 59 || h > 24 || (h == 24 && (!end || m != 0))) {
        return -1;
    }

    return h * 60 + m;
}
