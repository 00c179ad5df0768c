
/*
 * Events: counted in worker memory, flushed to Redis in idempotent batches.
 *
 * Two kinds of data, both in fixed memory allocated when the worker starts:
 *
 * - counters, per (UTC hour, ad unit | line item | creative, metric), that
 *   serving bumps on every ad request (ngx_http_adserve_count) and that
 *   tracking bumps for invalid tokens. Two open-addressing tables: the live
 *   one takes the counts; at a flush it becomes the draining one, which
 *   batches walk in slot order (nothing writes to it any more, so nothing
 *   is ever deleted from a table that is probed). A full live table drops
 *   what does not fit, counted.
 *
 * - raw tracking events (impressions, clicks, conversions whose ad_log
 *   authenticated), in a ring of adserve_event_buffer slots. A full ring
 *   drops the event, counted, with one log line when the overflow starts
 *   and one with the count when it ends.
 *
 * Every adserve_flush_interval a batch is sealed: at most
 * NGX_HTTP_ADSERVE_BATCH_INCRS counter increments and
 * NGX_HTTP_ADSERVE_BATCH_EVENTS raw events, so that one script never holds
 * Redis for long. It is formatted once into one EVAL of the script below
 * and kept until Redis acknowledges it. One batch is in flight at a time;
 * one that fails (an error reply, its deadline, the connection lost) is
 * sent again, byte for byte, once the connection is back. When a batch was
 * cut by those bounds, the next is sealed as soon as it is acknowledged.
 *
 * Exactly once: a batch carries (instance, seq). The instance is random
 * per worker process; the script keeps the last seq it applied for it in
 * adserve:flush:{instance} and applies a batch only if its seq is newer.
 * A batch sent again after an ambiguous failure (the connection dropped
 * before the reply) is thus applied once, whichever copy arrives first.
 * The script's writes go through redis.pcall, so that a failing command
 * (a key of the wrong type) cannot stop it halfway: it always runs to its
 * end and records the seq, and reports how many commands failed.
 *
 * At worker exit, a last synchronous flush on a blocking connection sends
 * the batch in flight again (if it was not acknowledged) and the rest.
 */


#include "ngx_http_adserve.h"

#include <openssl/rand.h>

#include "adserve_contract.h"


#define NGX_HTTP_ADSERVE_COUNTER_SLOTS  16384          /* per table, 2^n */
#define NGX_HTTP_ADSERVE_COUNTER_MAX    12288          /* 3/4: short probes */
/* the counts of items fetched together (ngx_http_adserve_count_items) */
#define NGX_HTTP_ADSERVE_PREFETCH       16
/* measured here: a script takes about 10 us per new raw event and 2 us
 * per counter increment, so either bound holds Redis about 5 ms, well
 * under adserve_cap_timeout (20 ms) for the reads that share it */
#define NGX_HTTP_ADSERVE_BATCH_EVENTS   500
#define NGX_HTTP_ADSERVE_BATCH_INCRS    2000
#define NGX_HTTP_ADSERVE_EXTRA_INCRS    2              /* drops, after the fact */
#define NGX_HTTP_ADSERVE_EVENT_ARGS     17
/* EVALSHA sha numkeys, then the batch's keys, then seq, stream_max, nincr,
 * nevents */
#define NGX_HTTP_ADSERVE_CMD_ARGS       3
#define NGX_HTTP_ADSERVE_FIXED_KEYS     3
#define NGX_HTTP_ADSERVE_HEAD_ARGS      4
/* keys: the fixed ones, a stats hash per hour of a counter (one counter
 * each at most), a stats hash and a dedup set per event */
#define NGX_HTTP_ADSERVE_MAX_KEYS                                            \
    (NGX_HTTP_ADSERVE_FIXED_KEYS + NGX_HTTP_ADSERVE_BATCH_INCRS              \
     + NGX_HTTP_ADSERVE_EXTRA_INCRS + 2 * NGX_HTTP_ADSERVE_BATCH_EVENTS)
/* where the arguments after the keys are made, before the keys are known */
#define NGX_HTTP_ADSERVE_ARGS_AT                                             \
    (NGX_HTTP_ADSERVE_CMD_ARGS + NGX_HTTP_ADSERVE_MAX_KEYS                    \
     + NGX_HTTP_ADSERVE_HEAD_ARGS)
#define NGX_HTTP_ADSERVE_MAX_ARGS                                            \
    (NGX_HTTP_ADSERVE_ARGS_AT                                                \
     + 3 * (NGX_HTTP_ADSERVE_BATCH_INCRS + NGX_HTTP_ADSERVE_EXTRA_INCRS)      \
     + NGX_HTTP_ADSERVE_EVENT_ARGS * NGX_HTTP_ADSERVE_BATCH_EVENTS)
/* bytes made per increment (a key, its index, field, number) and per event
 * (numbers, two keys and their indexes, the request id in hex), with room
 * to spare */
#define NGX_HTTP_ADSERVE_INCR_BYTES     320
#define NGX_HTTP_ADSERVE_EVENT_BYTES    384
#define NGX_HTTP_ADSERVE_SCRATCH                                             \
    ((NGX_HTTP_ADSERVE_BATCH_INCRS + NGX_HTTP_ADSERVE_EXTRA_INCRS)            \
     * NGX_HTTP_ADSERVE_INCR_BYTES                                            \
     + NGX_HTTP_ADSERVE_BATCH_EVENTS * NGX_HTTP_ADSERVE_EVENT_BYTES + 256)

/* counters that are not per id: invalid tokens, id "imp", "clk", "conv" */
#define NGX_HTTP_ADSERVE_DIM_INVALID    ADSERVE_DIM_COUNT

/* a batch the script itself fails on would fail forever and hold up
 * every later one: given up after this many such refusals. Others (OOM,
 * BUSY, LOADING, NOAUTH, READONLY) pass, and the batch waits them out. */
#define NGX_HTTP_ADSERVE_REFUSALS       3
#define NGX_HTTP_ADSERVE_INSTANCE_LEN   (16 + 1 + NGX_INT64_LEN)
/* NOSCRIPT answers in a row before a batch takes the reconnect path */
#define NGX_HTTP_ADSERVE_NOSCRIPTS      3


/*
 * The flush script, loaded once per connection (SCRIPT LOAD) and called by
 * its SHA-1 (EVALSHA). Every key it touches is declared, as Redis Cluster
 * and Redis's rules for scripts ask: KEYS[1] is adserve:flush:{instance},
 * KEYS[2] adserve:delivery, KEYS[3] the stream adserve:events, and the rest
 * the hour hashes adserve:stats:{YYYYMMDDHH} and the dedup sets
 * adserve:seen:{type}:{issue hour} of this batch, which the arguments name
 * by their index in KEYS. ARGV:
 *   seq, stream_max, nincr, nevents,
 *   nincr x (key, field, n):          HINCRBY KEYS[key] field n
 *   nevents x (type, ts, stats, seen, seen_expireat, rid, unit, li, cr,
 *              user, cost, price, value, spend, issued, variant, source)
 * Counter increments come made in C ({u|li|cr}:{id}:{req|ads|opp} in an
 * hour's hash, {li}:{metric} in adserve:delivery, invalid:{type},
 * dropped:events, dropped:counters). Each raw event is deduplicated by its
 * request id in its seen set, which expires at the end of the issue hour
 * plus the type's ttl: a repeat only counts dup:{type}. A first one counts
 * {u|li|cr}:{id}:{type} in the hash of its hour, {li}:{type} in
 * adserve:delivery, its spend (made in C: CPM on an impression, CPC on a
 * click, CPA on a conversion) and a conversion's value as :spend and
 * :convval in both, and goes to the stream (capped at about stream_max; 0:
 * no stream). Hours and spend are computed in C: Redis's Lua has no
 * os.date. The events' counts and spend are summed per batch in Lua first,
 * so that a batch costs one HINCRBY per field rather than per event (about
 * half the script's time); those sums are exact in Lua's doubles.
 * Conversion values pass through as strings, unsummed.
 */
static const char  ngx_http_adserve_flush_script[] =
    "local seq = tonumber(ARGV[1])\n"
    "local smax = ARGV[2]\n"
    "local ni = tonumber(ARGV[3])\n"
    "local ne = tonumber(ARGV[4])\n"
    "if not seq or not ni or not ne or #ARGV ~= 4 + 3 * ni + 17 * ne then\n"
    "  return redis.error_reply('ERR adserve: malformed events batch')\n"
    "end\n"
    "local delivery, stream = KEYS[2], KEYS[3]\n"
    "local last = tonumber(redis.call('GET', KEYS[1]) or '')\n"
    "if last and last >= seq then\n"
    "  return {'duplicate', 0}\n"
    "end\n"
    "local failed = 0\n"
    "local function check(r)\n"
    "  if type(r) == 'table' and r.err then failed = failed + 1 end\n"
    "  return r\n"
    "end\n"
    "local i = 5\n"
    "for _ = 1, ni do\n"
    "  check(redis.pcall('HINCRBY', KEYS[tonumber(ARGV[i])], ARGV[i + 1], ARGV[i + 2]))\n"
    "  i = i + 3\n"
    "end\n"
    /* the events' increments are summed here first: one HINCRBY per
     * field and batch, not per event (most of a call's cost is the call) */
    "local sums, expiring = {}, {}\n"
    "local function add(key, field, n)\n"
    "  local h = sums[key]\n"
    "  if not h then h = {} sums[key] = h end\n"
    "  h[field] = (h[field] or 0) + n\n"
    "end\n"
    "for _ = 1, ne do\n"
    "  local t, ts, stats, seen, exp, rid = ARGV[i], ARGV[i + 1],\n"
    "    KEYS[tonumber(ARGV[i + 2])], KEYS[tonumber(ARGV[i + 3])], ARGV[i + 4], ARGV[i + 5]\n"
    "  local unit, li, cr, user = ARGV[i + 6], ARGV[i + 7], ARGV[i + 8], ARGV[i + 9]\n"
    "  local cost, price, value, spend, issued, variant = ARGV[i + 10], ARGV[i + 11],\n"
    "    ARGV[i + 12], ARGV[i + 13], ARGV[i + 14], ARGV[i + 15]\n"
    "  local source = ARGV[i + 16]\n"
    "  i = i + 17\n"
    "  local added = check(redis.pcall('SADD', seen, rid))\n"
    "  if added == 1 then\n"
    "    if not expiring[seen] then\n"
    "      expiring[seen] = true\n"
    "      check(redis.pcall('EXPIREAT', seen, exp))\n"
    "    end\n"
    "    add(stats, '" ADSERVE_V_DIM_UNIT "' .. unit .. ':' .. t, 1)\n"
    "    if variant ~= '' then\n"
    "      add(stats, '" ADSERVE_V_DIM_VARIANT "' .. variant .. ':' .. t, 1)\n"
    "    end\n"
    /* an external win's: its unit's and source's, external demand alone */
    "    local as = source ~= '' and '" ADSERVE_V_DIM_AD_SOURCE "' .. unit .. '/' .. source .. ':'\n"
    "    if as then\n"
    "      add(stats, as .. t, 1)\n"
    "    end\n"
    /* a recommendation's token names no line item nor creative */
    "    if li ~= '' then\n"
    "      add(stats, '" ADSERVE_V_DIM_LINE_ITEM "' .. li .. ':' .. t, 1)\n"
    "      add(stats, '" ADSERVE_V_DIM_CREATIVE "' .. cr .. ':' .. t, 1)\n"
    "      add(delivery, li .. ':' .. t, 1)\n"
    "    end\n"
    "    local n = tonumber(spend)\n"
    "    if n > 0 then\n"
    "      add(stats, '" ADSERVE_V_DIM_UNIT "' .. unit .. ':" ADSERVE_V_SPEND "', n)\n"
    "      if as then\n"
    "        add(stats, as .. '" ADSERVE_V_SPEND "', n)\n"
    "      end\n"
    "      if li ~= '' then\n"
    "        add(stats, '" ADSERVE_V_DIM_LINE_ITEM "' .. li .. ':" ADSERVE_V_SPEND "', n)\n"
    "        add(stats, '" ADSERVE_V_DIM_CREATIVE "' .. cr .. ':" ADSERVE_V_SPEND "', n)\n"
    "        add(delivery, li .. ':" ADSERVE_V_SPEND "', n)\n"
    "      end\n"
    "    end\n"
    /* a VAST error's value is its code, counted apart: error:{code} */
    "    if value ~= '0' and t == '" ADSERVE_V_VIDEO_ERROR "' then\n"
    "      add(stats, '" ADSERVE_V_DIM_UNIT "' .. unit .. ':' .. t .. ':' .. value, 1)\n"
    "      if li ~= '' then\n"
    "        add(stats, '" ADSERVE_V_DIM_LINE_ITEM "' .. li .. ':' .. t .. ':' .. value, 1)\n"
    "        add(stats, '" ADSERVE_V_DIM_CREATIVE "' .. cr .. ':' .. t .. ':' .. value, 1)\n"
    "      end\n"
    "    elseif value ~= '0' then\n"
    "      check(redis.pcall('HINCRBY', stats, '" ADSERVE_V_DIM_UNIT "' .. unit .. ':" ADSERVE_V_CONVVAL "', value))\n"
    "      if li ~= '' then\n"
    "        check(redis.pcall('HINCRBY', stats, '" ADSERVE_V_DIM_LINE_ITEM "' .. li .. ':" ADSERVE_V_CONVVAL "', value))\n"
    "        check(redis.pcall('HINCRBY', stats, '" ADSERVE_V_DIM_CREATIVE "' .. cr .. ':" ADSERVE_V_CONVVAL "', value))\n"
    "        check(redis.pcall('HINCRBY', delivery, li .. ':" ADSERVE_V_CONVVAL "', value))\n"
    "      end\n"
    "    end\n"
    "    if smax ~= '0' then\n"
    "      check(redis.pcall('XADD', stream, 'MAXLEN', '~', smax, '*',\n"
    "        'type', t, 'ts', ts, 'rid', rid, 'unit', unit, 'li', li, 'cr', cr,\n"
    "        'user', user, 'cost', cost, 'price', price, 'value', value,\n"
    "        'issued', issued, 'variant', variant, 'source', source))\n"
    "    end\n"
    "  elseif added == 0 then\n"
    "    add(stats, '" ADSERVE_FIELD_DUP "' .. t, 1)\n"
    "  end\n"
    "end\n"
    /* sums stay exact in Lua's doubles: counts, and spend under 500 x
     * 1e12 micros; conversion values (up to 1e15 micros) are not summed */
    "for key, h in pairs(sums) do\n"
    "  for field, n in pairs(h) do\n"
    "    check(redis.pcall('HINCRBY', key, field, string.format('%d', n)))\n"
    "  end\n"
    "end\n"
    "redis.call('SET', KEYS[1], ARGV[1], 'EX', 86400)\n"
    "return {'applied', failed}\n";

/* run by its SHA-1 on the events' connection (ngx_http_adserve_redis_script) */
static ngx_http_adserve_script_t  ngx_http_adserve_flush =
    ngx_http_adserve_script(ngx_http_adserve_flush_script);


/* the contract's metric of each of the worker's counts */
static const adserve_metric_e  ngx_http_adserve_metrics[NGX_HTTP_ADSERVE_M_COUNT] = {
    ADSERVE_METRIC_REQ, ADSERVE_METRIC_ADS, ADSERVE_METRIC_OPP, ADSERVE_METRIC_SHOWN,
    ADSERVE_METRIC_VIEW, ADSERVE_METRIC_CLK, ADSERVE_METRIC_PASSBACK,
    ADSERVE_METRIC_BREQ, ADSERVE_METRIC_BIDS, ADSERVE_METRIC_WINS, ADSERVE_METRIC_TIMEOUTS,
    ADSERVE_METRIC_ERRORS, ADSERVE_METRIC_BLOCKED
};



/* A counter, cache-line aligned: its first line holds what an add writes
 * and what the probe compares first (32-bit counts, which a flush drains
 * every second; one that would wrap while Redis is away drops the count),
 * its second the rest of what the probe compares, the id's length and
 * its first 62 bytes (all of a UUID). A count of such an id reads those
 * two lines and no other (ngx_http_adserve_counter_prefetch). */
typedef struct {
    uint32_t      n[NGX_HTTP_ADSERVE_M_COUNT];
    uint32_t      hour;               /* unix time / 3600 */
    uint64_t      hash;               /* of hour, dim and id, never 0 */
    uint8_t       dim;
    uint8_t       len;
    u_char        id[NGX_HTTP_ADSERVE_COUNTER_ID_MAX];
} __attribute__((aligned(64))) ngx_http_adserve_counter_t;

_Static_assert(offsetof(ngx_http_adserve_counter_t, dim) == 64,
               "a counter's counts, hour and hash fill its first line");


/* An index slot: the counter's hash's upper half, and which counter. */
typedef struct {
    uint32_t      tag;
    uint32_t      entry;              /* counters[entry - 1]; 0: free */
} ngx_http_adserve_counter_slot_t;


/*
 * A table: an open-addressing index of 8-byte slots over counters kept in
 * the order they came. A request adds a dozen counts or more (a
 * recommendation one per item shown) to ids spread over the table: the
 * probe reads the small index (128 KB), and the counters in use lie
 * together at the start of their array, so the counts of a second touch
 * a few hundred KB, not a 4 MB table of sparse slots (its cache and TLB
 * misses were 6 % of a recommendation's time in perf). A drain reads the
 * counters in order and never walks empty slots.
 */
typedef struct {
    ngx_http_adserve_counter_slot_t  *index;        /* COUNTER_SLOTS */
    ngx_http_adserve_counter_t       *counters;     /* COUNTER_MAX */
    ngx_uint_t                        used;
} ngx_http_adserve_table_t;


/* one raw event, as the flush needs it */
typedef struct {
    time_t        ts;
    int64_t       issued;
    uint64_t      price_micros;
    int64_t       value;
    uint8_t       type;
    uint8_t       cost_type;
    uint8_t       unit_len;
    uint8_t       li_len;
    uint8_t       cr_len;
    uint16_t      user_len;
    uint8_t       variant_len;
    uint8_t       source_len;
    u_char        rid[ADSERVE_TOKEN_NONCE];
    u_char        unit[ADSERVE_TOKEN_ID_MAX];
    u_char        li[ADSERVE_TOKEN_ID_MAX];
    u_char        cr[ADSERVE_TOKEN_ID_MAX];
    u_char        user[ADSERVE_TOKEN_USER_MAX];
    u_char        variant[ADSERVE_TOKEN_VARIANT_MAX];
    u_char        source[ADSERVE_TOKEN_ID_MAX];     /* an external win's */
} ngx_http_adserve_event_t;


/* a sealed batch: its command, kept until acknowledged */
typedef struct {
    u_char       *cmd;                /* RESP (ngx_http_adserve_resp_format) */
    size_t        len;
    uint64_t      seq;
    ngx_uint_t    incrs;
    ngx_uint_t    events;
    ngx_uint_t    refusals;           /* "ERR" replies: the script failed */
    ngx_uint_t    noscripts;          /* NOSCRIPT replies: loaded again */
    unsigned      sending:1;
} ngx_http_adserve_batch_t;


struct ngx_http_adserve_events_s {
    ngx_http_adserve_redis_t         redis;
    ngx_http_adserve_events_conf_t   conf;
    ngx_log_t                       *log;

    ngx_event_t                      flush;        /* every conf.flush */
    ngx_event_t                      kick;         /* posted: a full batch */
    ngx_event_t                      deadline;     /* the batch in flight */

    /* counters: tables[live] takes counts, tables[!live] is drained */
    ngx_http_adserve_table_t         tables[2];
    ngx_uint_t                       live;
    ngx_uint_t                       cursor;       /* next counter to drain */
    ngx_uint_t                       drain_left;   /* counters not yet sealed */

    /* raw events */
    ngx_http_adserve_event_t        *ring;
    ngx_uint_t                       head;
    ngx_uint_t                       queued;

    ngx_http_adserve_batch_t         batch;
    uint64_t                         seq;
    char                             instance[NGX_HTTP_ADSERVE_INSTANCE_LEN];
    u_char                           flush_key[sizeof(ADSERVE_KEY_FLUSH)
                                               + NGX_HTTP_ADSERVE_INSTANCE_LEN];
    size_t                           flush_key_len;
    unsigned                         backlog:1;    /* the last seal was cut */
    unsigned                         exiting:1;
    unsigned                         error_logged:1;
    unsigned                         overflow:1;   /* events being dropped */
    unsigned                         table_full:1; /* counts being dropped */

    /* what a seal assembles, allocated once */
    const char                     **argv;
    size_t                          *argvlen;
    u_char                          *scratch;

    /* drops not yet reported to Redis (dropped:events, dropped:counters) */
    uint64_t                         drop_pending;
    uint64_t                         drop_counts_pending;
    uint64_t                         overflow_dropped;  /* in this episode */

    /* for the status */
    uint64_t                         flushed_batches;
    uint64_t                         duplicate_batches;
    uint64_t                         flush_failures;
    uint64_t                         events_flushed;
    uint64_t                         dropped;
    uint64_t                         dropped_counts;
    uint64_t                         invalid[ADSERVE_EVENT_COUNT];
    uint64_t                         command_errors;
};


static void ngx_http_adserve_events_send(ngx_http_adserve_events_t *ev);


/* ---- counting (the request path) --------------------------------------- */

static ngx_inline uint64_t
ngx_http_adserve_counter_hash(uint64_t hash, uint32_t hour, ngx_uint_t dim)
{
    return (hash ^ ((uint64_t) hour * 0x9e3779b97f4a7c15ULL)
            ^ ((uint64_t) dim << 59)) | 1;
}


/* counts that cannot be kept until a flush drains the table (it is full,
 * or a count would wrap): counted as dropped, and said once */
static void
ngx_http_adserve_counts_dropped(ngx_http_adserve_events_t *ev, ngx_uint_t n)
{
    ev->dropped_counts += n;
    ev->drop_counts_pending += n;

    if (!ev->table_full) {
        ev->table_full = 1;
        ngx_log_error(NGX_LOG_WARN, ev->log, 0,
                      NGX_HTTP_ADSERVE_LOG "events: counter table full (%ui entries): "
                      "dropping counts until a flush drains it",
                      (ngx_uint_t) NGX_HTTP_ADSERVE_COUNTER_MAX);
    }
}


static void
ngx_http_adserve_counter_add(ngx_http_adserve_events_t *ev, time_t now,
    ngx_uint_t dim, const u_char *id, size_t len, uint64_t hash, ngx_uint_t m,
    ngx_uint_t n)
{
    ngx_http_adserve_table_t         *t;
    ngx_http_adserve_counter_t       *c;
    ngx_http_adserve_counter_slot_t  *slot;
    uint32_t                          hour, tag;
    uint64_t                          h;
    ngx_uint_t                        i;

    hour = (uint32_t) (now / 3600);
    h = ngx_http_adserve_counter_hash(hash, hour, dim);
    tag = (uint32_t) (h >> 32);
    t = &ev->tables[ev->live];

    /* the index is at most 3/4 full: a probe ends at a free slot */
    for (i = h & (NGX_HTTP_ADSERVE_COUNTER_SLOTS - 1); /* void */ ;
         i = (i + 1) & (NGX_HTTP_ADSERVE_COUNTER_SLOTS - 1))
    {
        slot = &t->index[i];

        if (slot->entry == 0) {
            break;
        }

        if (slot->tag != tag) {
            continue;
        }

        c = &t->counters[slot->entry - 1];

        if (c->hash == h && c->hour == hour && c->dim == dim && c->len == len
            && ngx_memcmp(c->id, id, len) == 0)
        {
            if (n > UINT32_MAX - c->n[m]) {
                ngx_http_adserve_counts_dropped(ev, n);
                return;
            }
            c->n[m] += (uint32_t) n;
            return;
        }
    }

    if (t->used >= NGX_HTTP_ADSERVE_COUNTER_MAX || n > UINT32_MAX) {
        ngx_http_adserve_counts_dropped(ev, n);
        return;
    }

    c = &t->counters[t->used++];
    slot->tag = tag;
    slot->entry = (uint32_t) t->used;

    c->hash = h;
    c->hour = hour;
    c->dim = (uint8_t) dim;
    c->len = (uint8_t) len;
    ngx_memcpy(c->id, id, len);
    ngx_memzero(c->n, sizeof(c->n));
    c->n[m] = (uint32_t) n;
}


void
ngx_http_adserve_count(ngx_http_adserve_events_t *ev, time_t now,
    ngx_uint_t dim, const adserve_str_t *id, uint64_t hash,
    ngx_http_adserve_metric_e m, ngx_uint_t n)
{
    if (ev == NULL || id->len == 0 || id->len > NGX_HTTP_ADSERVE_COUNTER_ID_MAX
        || (ngx_uint_t) m >= NGX_HTTP_ADSERVE_M_COUNT)
    {
        return;
    }

    ngx_http_adserve_counter_add(ev, now, dim, (const u_char *) id->data,
                                 id->len, hash, m, n);
}


/* A counter's two lines, ahead of its count (they are all it reads) */
static ngx_inline void
ngx_http_adserve_counter_prefetch(const ngx_http_adserve_counter_t *c)
{
    __builtin_prefetch(c, 1);
    __builtin_prefetch(c->id);
}


/* A count to come, fetched ahead in two steps some work apart, so that
 * its two cache misses overlap that work instead of stalling the count:
 * step 0 its index slot's line; step 1, the slot in the cache by then,
 * the counter it names. Serving's counts of the line item and creative
 * chosen were a miss each on the slot, then on the counter, one after
 * another (perf: the adds were 3.9 % of the workers' time, the largest
 * of the module's functions); the seal and the response's build come in
 * between now. */
void
ngx_http_adserve_count_ahead(ngx_http_adserve_events_t *ev, time_t now,
    ngx_uint_t dim, uint64_t hash, ngx_uint_t step)
{
    ngx_http_adserve_table_t  *t;
    uint64_t                   i;
    uint32_t                   e;

    if (ev == NULL) {
        return;
    }

    t = &ev->tables[ev->live];
    i = ngx_http_adserve_counter_hash(hash, (uint32_t) (now / 3600), dim)
        & (NGX_HTTP_ADSERVE_COUNTER_SLOTS - 1);

    if (step == 0) {
        __builtin_prefetch(&t->index[i]);
        return;
    }

    /* the first probe's counter: most counts find theirs there */
    e = t->index[i].entry;
    if (e != 0) {
        ngx_http_adserve_counter_prefetch(&t->counters[e - 1]);
    }
}


/* Counts of many items, one each, in one dimension: their index slots
 * fetched together, then their counters, then the adds. An answer counts
 * its topn items, and each count missed the cache twice (a table of
 * megabytes, an item's slot cold since its last answer); fetched
 * together, their misses overlap instead of coming one after another. */
void
ngx_http_adserve_count_items(ngx_http_adserve_events_t *ev, time_t now,
    ngx_uint_t dim, const adserve_item_t *const *items, ngx_uint_t n,
    ngx_http_adserve_metric_e m)
{
    ngx_http_adserve_table_t  *t;
    uint64_t                   h[NGX_HTTP_ADSERVE_PREFETCH];
    uint32_t                   hour, e;
    ngx_uint_t                 i, k, chunk;

    if (ev == NULL) {
        return;
    }

    hour = (uint32_t) (now / 3600);
    t = &ev->tables[ev->live];

    for (k = 0; k < n; k += chunk) {
        chunk = ngx_min(n - k, NGX_HTTP_ADSERVE_PREFETCH);

        for (i = 0; i < chunk; i++) {
            h[i] = ngx_http_adserve_counter_hash(items[k + i]->hash, hour, dim)
                   & (NGX_HTTP_ADSERVE_COUNTER_SLOTS - 1);
            __builtin_prefetch(&t->index[h[i]]);
        }

        for (i = 0; i < chunk; i++) {
            e = t->index[h[i]].entry;
            if (e != 0) {
                ngx_http_adserve_counter_prefetch(&t->counters[e - 1]);
            }
        }

        for (i = 0; i < chunk; i++) {
            ngx_http_adserve_count(ev, now, dim, &items[k + i]->id, items[k + i]->hash, m, 1);
        }
    }
}


static uint64_t
ngx_http_adserve_invalid_sum(ngx_http_adserve_events_t *ev)
{
    uint64_t    n = 0;
    ngx_uint_t  t;

    for (t = 0; t < ADSERVE_EVENT_COUNT; t++) {
        n += ev->invalid[t];
    }

    return n;
}


void
ngx_http_adserve_track_invalid(ngx_http_adserve_events_t *ev,
    adserve_event_e type, time_t now)
{
    const char  *name;

    if (ev == NULL || (ngx_uint_t) type >= ADSERVE_EVENT_COUNT) {
        return;
    }

    ev->invalid[type]++;
    ngx_http_adserve_tally->invalid_tokens++;
    name = adserve_event_name(type);

    ngx_http_adserve_counter_add(ev, now, NGX_HTTP_ADSERVE_DIM_INVALID,
                                 (const u_char *) name, ngx_strlen(name),
                                 adserve_hash(name, ngx_strlen(name)), 0, 1);
}


static void
ngx_http_adserve_copy_id(u_char *dst, uint8_t *len, const adserve_str_t *s)
{
    size_t  n = s->data ? ngx_min(s->len, ADSERVE_TOKEN_ID_MAX) : 0;

    if (n) {
        ngx_memcpy(dst, s->data, n);
    }
    *len = (uint8_t) n;
}


ngx_int_t
ngx_http_adserve_track(ngx_http_adserve_events_t *ev,
    adserve_event_e type, const adserve_ad_log_t *log, time_t now,
    int64_t value)
{
    ngx_http_adserve_event_t  *e;
    size_t                     n;

    if (ev == NULL || (ngx_uint_t) type >= ADSERVE_EVENT_COUNT) {
        return NGX_DECLINED;
    }

    ngx_http_adserve_tally->events[type]++;

    if (ev->queued == ev->conf.buffer) {
        ev->dropped++;
        ngx_http_adserve_tally->events_dropped++;
        ev->drop_pending++;
        ev->overflow_dropped++;

        if (!ev->overflow) {
            ev->overflow = 1;
            ngx_log_error(NGX_LOG_WARN, ev->log, 0,
                          NGX_HTTP_ADSERVE_LOG "events: buffer full (%ui events): "
                          "dropping events until Redis takes them",
                          ev->conf.buffer);
        }

        return NGX_DECLINED;
    }

    e = &ev->ring[(ev->head + ev->queued) % ev->conf.buffer];

    e->ts = now;
    e->issued = log->issued;
    e->price_micros = log->price_micros;
    e->value = value;
    e->type = (uint8_t) type;
    e->cost_type = log->cost_type;
    ngx_memcpy(e->rid, log->request_id, ADSERVE_TOKEN_NONCE);
    ngx_http_adserve_copy_id(e->unit, &e->unit_len, &log->ad_unit);
    ngx_http_adserve_copy_id(e->li, &e->li_len, &log->line_item);
    ngx_http_adserve_copy_id(e->cr, &e->cr_len, &log->creative);

    n = log->user.data ? ngx_min(log->user.len, ADSERVE_TOKEN_USER_MAX) : 0;
    if (n) {
        ngx_memcpy(e->user, log->user.data, n);
    }
    e->user_len = (uint16_t) n;

    n = log->variant.data ? ngx_min(log->variant.len, ADSERVE_TOKEN_VARIANT_MAX) : 0;
    if (n) {
        ngx_memcpy(e->variant, log->variant.data, n);
    }
    e->variant_len = (uint8_t) n;
    ngx_http_adserve_copy_id(e->source, &e->source_len, &log->source);

    ev->queued++;

    /* a full batch waits: no need to wait for the timer (a posted event,
     * so that this request does not format it) */
    if (ev->queued >= NGX_HTTP_ADSERVE_BATCH_EVENTS && ev->batch.cmd == NULL
        && ev->redis.connected && !ev->kick.posted)
    {
        ngx_post_event(&ev->kick, &ngx_posted_events);
    }

    return NGX_OK;
}


/* ---- sealing a batch --------------------------------------------------- */

typedef struct {
    ngx_http_adserve_events_t  *ev;
    int                         argc;
    u_char                     *p;            /* in the scratch buffer */
    u_char                     *end;
    uint32_t                    key_hour;     /* the last stats key made */
    ngx_uint_t                  key;          /* and its index in KEYS */
    ngx_uint_t                  nkeys;        /* in argv after the command */
    ngx_uint_t                  incrs;
} ngx_http_adserve_seal_t;

/* the fixed keys' indexes in KEYS */
#define NGX_HTTP_ADSERVE_KEY_FLUSH      1
#define NGX_HTTP_ADSERVE_KEY_DELIVERY   2
#define NGX_HTTP_ADSERVE_KEY_EVENTS     3


static ngx_inline void
ngx_http_adserve_arg(ngx_http_adserve_seal_t *s, const void *data, size_t len)
{
    s->ev->argv[s->argc] = data;
    s->ev->argvlen[s->argc++] = len;
}


/* an argument made in the scratch buffer from p to the new end */
static ngx_inline void
ngx_http_adserve_arg_made(ngx_http_adserve_seal_t *s, u_char *end)
{
    ngx_http_adserve_arg(s, s->p, end - s->p);
    s->p = end;
}


static ngx_inline u_char *
ngx_http_adserve_hour(u_char *p, time_t t)
{
    ngx_tm_t  tm;

    ngx_gmtime(t, &tm);

    return ngx_sprintf(p, "%04d%02d%02d%02d", tm.ngx_tm_year, tm.ngx_tm_mon,
                       tm.ngx_tm_mday, tm.ngx_tm_hour);
}


/* The index in KEYS of a key given, or made in the scratch buffer from p
 * to end: a batch declares each key once (a few hours' hashes and sets). */
static ngx_uint_t
ngx_http_adserve_seal_keyref(ngx_http_adserve_seal_t *s, const void *key,
    size_t len)
{
    ngx_http_adserve_events_t  *ev = s->ev;
    ngx_uint_t                  i;

    for (i = 0; i < s->nkeys; i++) {
        if (ev->argvlen[NGX_HTTP_ADSERVE_CMD_ARGS + i] == len
            && ngx_memcmp(ev->argv[NGX_HTTP_ADSERVE_CMD_ARGS + i], key, len) == 0)
        {
            return i + 1;           /* one made in the scratch is not kept */
        }
    }

    ev->argv[NGX_HTTP_ADSERVE_CMD_ARGS + i] = key;
    ev->argvlen[NGX_HTTP_ADSERVE_CMD_ARGS + i] = len;
    s->nkeys++;

    if ((u_char *) key == s->p) {
        s->p += len;
    }

    return i + 1;
}


/* the index of the key made in the scratch buffer from p to end */
static ngx_inline ngx_uint_t
ngx_http_adserve_seal_keyref_made(ngx_http_adserve_seal_t *s, u_char *end)
{
    return ngx_http_adserve_seal_keyref(s, s->p, end - s->p);
}


/* an index in KEYS as an argument */
static ngx_inline void
ngx_http_adserve_arg_key(ngx_http_adserve_seal_t *s, ngx_uint_t key)
{
    ngx_http_adserve_arg_made(s, ngx_sprintf(s->p, "%ui", key));
}


/* the hour's stats hash: s->key */
static void
ngx_http_adserve_seal_key(ngx_http_adserve_seal_t *s, uint32_t hour)
{
    u_char  *p;

    if (s->key != 0 && s->key_hour == hour) {
        return;
    }

    p = ngx_cpymem(s->p, ADSERVE_KEY_STATS, sizeof(ADSERVE_KEY_STATS) - 1);
    p = ngx_http_adserve_hour(p, (time_t) hour * 3600);

    s->key = ngx_http_adserve_seal_keyref_made(s, p);
    s->key_hour = hour;
}


/* the hour's popularity hash, its index in KEYS */
static ngx_uint_t
ngx_http_adserve_seal_pop_key(ngx_http_adserve_seal_t *s, uint32_t hour)
{
    u_char  *p;

    p = ngx_cpymem(s->p, ADSERVE_KEY_POPULARITY, sizeof(ADSERVE_KEY_POPULARITY) - 1);
    p = ngx_http_adserve_hour(p, (time_t) hour * 3600);

    return ngx_http_adserve_seal_keyref_made(s, p);
}


/* HINCRBY KEYS[key] field n, the field being a, id, b and c end to end */
static void
ngx_http_adserve_seal_incr(ngx_http_adserve_seal_t *s, ngx_uint_t key,
    const char *a, const u_char *id, size_t len, const char *b, const char *c,
    uint64_t n)
{
    u_char  *p;

    ngx_http_adserve_arg_key(s, key);

    p = ngx_cpymem(s->p, a, ngx_strlen(a));
    if (len) {
        p = ngx_cpymem(p, id, len);
    }
    p = ngx_cpymem(p, b, ngx_strlen(b));
    p = ngx_cpymem(p, c, ngx_strlen(c));
    ngx_http_adserve_arg_made(s, p);

    ngx_http_adserve_arg_made(s, ngx_sprintf(s->p, "%uL", n));

    s->incrs++;
}


static void
ngx_http_adserve_seal_counter(ngx_http_adserve_seal_t *s,
    const ngx_http_adserve_counter_t *c)
{
    const char  *metric;
    ngx_uint_t   m;

    if (c->dim == NGX_HTTP_ADSERVE_DIM_POPULAR) {
        /* {context}/{item id} in the hour's popularity hash */
        ngx_http_adserve_seal_incr(s, ngx_http_adserve_seal_pop_key(s, c->hour), "", c->id,
                                   c->len, "", "", c->n[NGX_HTTP_ADSERVE_M_VIEWS]);
        return;
    }

    ngx_http_adserve_seal_key(s, c->hour);

    if (c->dim == NGX_HTTP_ADSERVE_DIM_INVALID) {
        ngx_http_adserve_seal_incr(s, s->key, ADSERVE_FIELD_INVALID, c->id,
                                   c->len, "", "", c->n[0]);
        return;
    }

    for (m = 0; m < NGX_HTTP_ADSERVE_M_COUNT; m++) {
        if (c->n[m] == 0) {
            continue;
        }

        metric = adserve_metric_names[ngx_http_adserve_metrics[m]];

        /* {u|li|cr}:{id}:{metric} in the hour's hash */
        ngx_http_adserve_seal_incr(s, s->key, adserve_dim_names[c->dim], c->id,
                                   c->len, ":", metric, c->n[m]);

        if (c->dim == ADSERVE_DIM_LINE_ITEM) {
            /* lifetime, per line item: what pacing reads */
            ngx_http_adserve_seal_incr(s, NGX_HTTP_ADSERVE_KEY_DELIVERY, "",
                                       c->id, c->len, ":", metric, c->n[m]);
        }
    }
}


/* what a raw event costs: CPM on an impression (the rate is per mille),
 * CPC on a click, CPA on a conversion */
static uint64_t
ngx_http_adserve_spend(const ngx_http_adserve_event_t *e)
{
    switch (e->cost_type) {

    case ADSERVE_COST_CPM:
        return e->type == ADSERVE_EVENT_IMPRESSION ? e->price_micros / 1000 : 0;

    case ADSERVE_COST_CPC:
        return e->type == ADSERVE_EVENT_CLICK ? e->price_micros : 0;

    case ADSERVE_COST_CPA:
        return e->type == ADSERVE_EVENT_CONVERSION ? e->price_micros : 0;

    default:
        return 0;
    }
}


static void
ngx_http_adserve_seal_event(ngx_http_adserve_seal_t *s,
    const ngx_http_adserve_event_t *e)
{
    ngx_http_adserve_events_t  *ev = s->ev;
    const char                 *name;
    time_t                      ttl, expire;
    u_char                     *p;
    ngx_uint_t                  key;

    name = adserve_event_name(e->type);
    ttl = e->type == ADSERVE_EVENT_CONVERSION ? ev->conf.conversion_ttl
                                                    : ev->conf.event_ttl;
    /* a token is accepted until issue + ttl: its request id must be
     * remembered that long, from the end of its issue hour (the key) */
    expire = (time_t) (e->issued / 3600 + 1) * 3600 + ttl;

    ngx_http_adserve_arg(s, name, ngx_strlen(name));
    ngx_http_adserve_arg_made(s, ngx_sprintf(s->p, "%T", e->ts));

    /* its hour's stats hash, and the dedup set of its type and issue hour */
    p = ngx_cpymem(s->p, ADSERVE_KEY_STATS, sizeof(ADSERVE_KEY_STATS) - 1);
    key = ngx_http_adserve_seal_keyref_made(s, ngx_http_adserve_hour(p, e->ts));
    ngx_http_adserve_arg_key(s, key);

    p = ngx_cpymem(s->p, ADSERVE_KEY_SEEN, sizeof(ADSERVE_KEY_SEEN) - 1);
    p = ngx_cpymem(p, name, ngx_strlen(name));
    *p++ = ':';
    key = ngx_http_adserve_seal_keyref_made(s, ngx_http_adserve_hour(p,
                                                             (time_t) e->issued));
    ngx_http_adserve_arg_key(s, key);

    ngx_http_adserve_arg_made(s, ngx_sprintf(s->p, "%T", expire));
    ngx_http_adserve_arg_made(s, ngx_hex_dump(s->p, (u_char *) e->rid,
                                              ADSERVE_TOKEN_NONCE));
    ngx_http_adserve_arg(s, e->unit, e->unit_len);
    ngx_http_adserve_arg(s, e->li, e->li_len);
    ngx_http_adserve_arg(s, e->cr, e->cr_len);
    ngx_http_adserve_arg(s, e->user, e->user_len);
    name = e->cost_type < ADSERVE_COST_COUNT ? adserve_cost_names[e->cost_type] : "";
    ngx_http_adserve_arg(s, name, ngx_strlen(name));
    ngx_http_adserve_arg_made(s, ngx_sprintf(s->p, "%uL", e->price_micros));
    ngx_http_adserve_arg_made(s, ngx_sprintf(s->p, "%L", e->value));
    ngx_http_adserve_arg_made(s, ngx_sprintf(s->p, "%uL",
                                             ngx_http_adserve_spend(e)));
    ngx_http_adserve_arg_made(s, ngx_sprintf(s->p, "%L", e->issued));
    ngx_http_adserve_arg(s, e->variant, e->variant_len);
    ngx_http_adserve_arg(s, e->source, e->source_len);
}


/* Seals the next batch from what is pending: NGX_OK, NGX_DECLINED when
 * nothing is, NGX_ERROR when it could not be formatted (nothing is taken
 * then: it stays pending). */
static ngx_int_t
ngx_http_adserve_events_seal(ngx_http_adserve_events_t *ev)
{
    ngx_http_adserve_seal_t      s;
    ngx_http_adserve_table_t    *drain;
    ngx_http_adserve_counter_t  *c;
    ngx_uint_t                   i, k, taken, nevents, live, head;
    int                          items;
    u_char                      *cmd;
    uint32_t                     now_hour;
    size_t                       len;

    if (ev->batch.cmd != NULL) {
        return NGX_OK;
    }

    ngx_memzero(&s, sizeof(ngx_http_adserve_seal_t));
    s.ev = ev;
    s.p = ev->scratch;
    s.end = ev->scratch + NGX_HTTP_ADSERVE_SCRATCH;
    s.argc = NGX_HTTP_ADSERVE_ARGS_AT;

    (void) ngx_http_adserve_seal_keyref(&s, ev->flush_key, ev->flush_key_len);
    (void) ngx_http_adserve_seal_keyref(&s, ADSERVE_KEY_DELIVERY,
                                        sizeof(ADSERVE_KEY_DELIVERY) - 1);
    (void) ngx_http_adserve_seal_keyref(&s, ADSERVE_KEY_EVENTS,
                                        sizeof(ADSERVE_KEY_EVENTS) - 1);

    now_hour = (uint32_t) (ngx_http_adserve_clock() / 3600);

    /* drops are known after the fact: reported in the hour of the flush */
    if (ev->drop_pending) {
        ngx_http_adserve_seal_key(&s, now_hour);
        ngx_http_adserve_seal_incr(&s, s.key, ADSERVE_FIELD_DROPPED_EVENTS,
                                   NULL, 0, "", "", ev->drop_pending);
    }

    if (ev->drop_counts_pending) {
        ngx_http_adserve_seal_key(&s, now_hour);
        ngx_http_adserve_seal_incr(&s, s.key, ADSERVE_FIELD_DROPPED_COUNTERS,
                                   NULL, 0, "", "", ev->drop_counts_pending);
    }

    /* counters: the draining table, or the live one's counts so far */
    if (ev->drain_left == 0 && ev->tables[ev->live].used > 0) {
        live = ev->live;
        ev->live = !live;
        ev->drain_left = ev->tables[live].used;
        ev->tables[live].used = 0;
        ev->cursor = 0;

        /* the drained table takes counts again: its index empty (its
         * counters are overwritten as they are taken) */
        ngx_memzero(ev->tables[!live].index,
                    NGX_HTTP_ADSERVE_COUNTER_SLOTS * sizeof(ngx_http_adserve_counter_slot_t));

        if (ev->table_full) {
            ev->table_full = 0;
            ngx_log_error(NGX_LOG_WARN, ev->log, 0,
                          NGX_HTTP_ADSERVE_LOG "events: counter table drained, %uL counts "
                          "were dropped in all", ev->dropped_counts);
        }
    }

    drain = &ev->tables[!ev->live];
    taken = 0;

    for (i = ev->cursor; taken < ev->drain_left; i++) {
        c = &drain->counters[i];

        if (s.incrs + 2 * NGX_HTTP_ADSERVE_M_COUNT
            > NGX_HTTP_ADSERVE_BATCH_INCRS + NGX_HTTP_ADSERVE_EXTRA_INCRS)
        {
            break;
        }

        ngx_http_adserve_seal_counter(&s, c);
        taken++;
    }

    /* raw events, oldest first */
    nevents = ngx_min(ev->queued, NGX_HTTP_ADSERVE_BATCH_EVENTS);

    for (k = 0; k < nevents; k++) {
        ngx_http_adserve_seal_event(&s,
                                    &ev->ring[(ev->head + k) % ev->conf.buffer]);
    }

    if (s.incrs == 0 && nevents == 0) {
        return NGX_DECLINED;
    }

    items = s.argc;

    if (s.p + 5 * NGX_INT64_LEN > s.end) {
        /* the per-item bounds make this impossible */
        ngx_log_error(NGX_LOG_ALERT, ev->log, 0,
                      NGX_HTTP_ADSERVE_LOG "events: batch scratch overflow");
        return NGX_ERROR;
    }

    /* EVALSHA sha numkeys keys... seq stream_max nincr nevents items...:
     * the items move down to follow the keys, now that they are known */
    ngx_http_adserve_script_call_args(&ngx_http_adserve_flush, ev->argv, ev->argvlen);
    ev->argv[2] = (const char *) s.p;
    s.p = ngx_sprintf(s.p, "%ui", s.nkeys);
    ev->argvlen[2] = (u_char *) s.p - (u_char *) ev->argv[2];

    head = NGX_HTTP_ADSERVE_CMD_ARGS + s.nkeys;
    s.argc = head;
    ngx_http_adserve_arg_made(&s, ngx_sprintf(s.p, "%uL", ev->seq + 1));
    ngx_http_adserve_arg_made(&s, ngx_sprintf(s.p, "%ui", ev->conf.stream_max));
    ngx_http_adserve_arg_made(&s, ngx_sprintf(s.p, "%ui", s.incrs));
    ngx_http_adserve_arg_made(&s, ngx_sprintf(s.p, "%ui", nevents));

    ngx_memmove(&ev->argv[s.argc], &ev->argv[NGX_HTTP_ADSERVE_ARGS_AT],
                (items - NGX_HTTP_ADSERVE_ARGS_AT) * sizeof(char *));
    ngx_memmove(&ev->argvlen[s.argc], &ev->argvlen[NGX_HTTP_ADSERVE_ARGS_AT],
                (items - NGX_HTTP_ADSERVE_ARGS_AT) * sizeof(size_t));
    s.argc += items - NGX_HTTP_ADSERVE_ARGS_AT;

    /* the command lives until acknowledged */
    cmd = ngx_alloc(ngx_http_adserve_resp_size(s.argc, ev->argvlen), ev->log);
    if (cmd == NULL) {
        return NGX_ERROR;
    }

    len = ngx_http_adserve_resp_format(cmd, s.argc, ev->argv, ev->argvlen) - cmd;

    /* taken: only now may the sources forget it */
    ev->cursor = i;
    ev->drain_left -= taken;

    ev->head = (ev->head + nevents) % ev->conf.buffer;
    ev->queued -= nevents;
    ev->drop_pending = 0;
    ev->drop_counts_pending = 0;

    ev->batch.cmd = cmd;
    ev->batch.len = (size_t) len;
    ev->batch.seq = ++ev->seq;
    ev->batch.incrs = s.incrs;
    ev->batch.events = nevents;
    ev->batch.sending = 0;

    ev->backlog = (ev->drain_left > 0 || ev->queued > 0);

    return NGX_OK;
}


static void
ngx_http_adserve_batch_free(ngx_http_adserve_batch_t *b)
{
    if (b->cmd != NULL) {
        ngx_free(b->cmd);
    }

    ngx_memzero(b, sizeof(ngx_http_adserve_batch_t));
}


/* ---- acknowledgements -------------------------------------------------- */

/* The script's answer: NGX_OK applied, NGX_DONE a duplicate (applied
 * before), NGX_ERROR anything else (*err says what). */
static ngx_int_t
ngx_http_adserve_batch_reply(ngx_http_adserve_events_t *ev, redisReply *reply,
    const char **err)
{
    redisReply  *st, *failed;

    if (reply->type == REDIS_REPLY_ERROR) {
        *err = reply->str;
        return NGX_ERROR;
    }

    if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 2
        || reply->element[0]->type != REDIS_REPLY_STRING
        || reply->element[1]->type != REDIS_REPLY_INTEGER)
    {
        *err = "unexpected reply to an events batch";
        return NGX_ERROR;
    }

    st = reply->element[0];
    failed = reply->element[1];

    if (ngx_strcmp(st->str, "duplicate") == 0) {
        ev->duplicate_batches++;
        return NGX_DONE;
    }

    if (ngx_strcmp(st->str, "applied") != 0) {
        *err = "unexpected reply to an events batch";
        return NGX_ERROR;
    }

    ev->flushed_batches++;
    ev->events_flushed += ev->batch.events;

    if (failed->integer > 0) {
        /* the rest of the batch is applied; these are lost, and said */
        ev->command_errors += failed->integer;
        ngx_log_error(NGX_LOG_WARN, ev->log, 0,
                      NGX_HTTP_ADSERVE_LOG "events: %L commands of batch %uL failed in "
                      "Redis (a key of the wrong type?)", failed->integer,
                      ev->batch.seq);
    }

    return NGX_OK;
}


static void
ngx_http_adserve_overflow_over(ngx_http_adserve_events_t *ev)
{
    if (ev->overflow && ev->queued < ev->conf.buffer) {
        ev->overflow = 0;
        ngx_log_error(NGX_LOG_WARN, ev->log, 0,
                      NGX_HTTP_ADSERVE_LOG "events: buffer no longer full: %uL events "
                      "were dropped", ev->overflow_dropped);
        ev->overflow_dropped = 0;
    }
}


static void
ngx_http_adserve_events_on_reply(redisAsyncContext *ac, void *r, void *data)
{
    ngx_http_adserve_events_t  *ev = data;
    redisReply                 *reply = r;
    const char                 *err;
    ngx_int_t                   rc;

    if (!ev->batch.sending) {
        return;                 /* already given up on (its deadline) */
    }

    ev->batch.sending = 0;

    if (ev->deadline.timer_set) {
        ngx_del_timer(&ev->deadline);
    }

    if (reply == NULL) {
        /* the connection went away: kept, and sent again once it is back */
        ev->flush_failures++;
        return;
    }

    rc = ngx_http_adserve_batch_reply(ev, reply, &err);

    if (rc == NGX_ERROR && ngx_http_adserve_redis_noscript(&ev->redis, reply)
        && ++ev->batch.noscripts <= NGX_HTTP_ADSERVE_NOSCRIPTS)
    {
        /* Redis lost the script (a restart, SCRIPT FLUSH): loaded again
         * there, and the same batch sent after it */
        ngx_http_adserve_events_send(ev);
        return;
    }

    if (rc == NGX_ERROR) {
        ev->flush_failures++;

        if (ngx_strncmp(err, "ERR", 3) == 0
            && ++ev->batch.refusals >= NGX_HTTP_ADSERVE_REFUSALS)
        {
            ngx_log_error(NGX_LOG_ERR, ev->log, 0,
                          NGX_HTTP_ADSERVE_LOG "events: batch %uL refused %ui times (%s): "
                          "given up, %ui events and %ui counter increments lost",
                          ev->batch.seq, ev->batch.refusals, err,
                          ev->batch.events, ev->batch.incrs);
            ev->dropped += ev->batch.events;
            ngx_http_adserve_tally->events_dropped += ev->batch.events;
            ngx_http_adserve_batch_free(&ev->batch);
            return;
        }

        if (!ev->error_logged) {
            ev->error_logged = 1;
            ngx_log_error(NGX_LOG_WARN, ev->log, 0,
                          NGX_HTTP_ADSERVE_LOG "events: batch %uL refused: %s; kept, to be "
                          "sent again", ev->batch.seq, err);
        }

        /* as the loader does: a reconnect, with backoff, then again */
        ngx_http_adserve_redis_drop(&ev->redis, err);
        return;
    }

    ev->error_logged = 0;
    ngx_http_adserve_redis_healthy(&ev->redis);
    ngx_http_adserve_batch_free(&ev->batch);

    if (ev->exiting) {
        return;
    }

    ngx_http_adserve_overflow_over(ev);

    /* the last seal was cut by the bounds, or a full batch is waiting: no
     * need to wait for the timer */
    if (ev->backlog || ev->queued >= NGX_HTTP_ADSERVE_BATCH_EVENTS) {
        ngx_http_adserve_events_send(ev);
    }
}


static void
ngx_http_adserve_events_send(ngx_http_adserve_events_t *ev)
{
    ngx_http_adserve_redis_t  *rd = &ev->redis;
    ngx_int_t                  rc;

    if (ev->exiting || ev->batch.sending || rd->ac == NULL || !rd->connected) {
        return;
    }

    rc = ngx_http_adserve_events_seal(ev);
    if (rc != NGX_OK) {
        return;
    }

    if (redisAsyncFormattedCommand(rd->ac, ngx_http_adserve_events_on_reply, ev,
                                   (char *) ev->batch.cmd, ev->batch.len)
        != REDIS_OK)
    {
        ev->flush_failures++;
        return;
    }

    ev->batch.sending = 1;

    ngx_add_timer(&ev->deadline, rd->timeout);
}


/* ---- timers and connection events -------------------------------------- */

static void
ngx_http_adserve_events_flush(ngx_event_t *e)
{
    ngx_http_adserve_events_t  *ev = e->data;

    if (ev->exiting) {
        return;
    }

    ngx_add_timer(&ev->flush, ev->conf.flush);

    ngx_http_adserve_tally->events_buffered = ev->queued;
    ngx_http_adserve_tally->events_capacity = ev->conf.buffer;

    ngx_http_adserve_events_send(ev);
}


static void
ngx_http_adserve_events_kick(ngx_event_t *e)
{
    ngx_http_adserve_events_send(e->data);
}


static void
ngx_http_adserve_events_deadline(ngx_event_t *e)
{
    ngx_http_adserve_events_t  *ev = e->data;

    if (!ev->batch.sending) {
        return;
    }

    /* the batch may yet be applied: it is sent again after the reconnect,
     * and the script's seq check makes the second copy a no-op then */
    ngx_http_adserve_redis_drop(&ev->redis, "an events batch timed out");
}


/* A reply to a connection's own command (not a batch's): NGX_OK to read
 * on; an error reply drops the connection (reconnected with backoff). */
static ngx_int_t
ngx_http_adserve_events_answered(ngx_http_adserve_events_t *ev,
    redisReply *reply)
{
    if (reply == NULL || ev->exiting) {
        return NGX_DECLINED;
    }

    if (reply->type == REDIS_REPLY_ERROR) {
        ngx_http_adserve_redis_drop(&ev->redis, reply->str);
        return NGX_ERROR;
    }

    return NGX_OK;
}


static void
ngx_http_adserve_events_on_ping(redisAsyncContext *ac, void *r, void *data)
{
    ngx_http_adserve_events_t  *ev = data;

    if (ngx_http_adserve_events_answered(ev, r) == NGX_OK) {
        ngx_http_adserve_redis_healthy(&ev->redis);
    }
}


static void
ngx_http_adserve_events_on_up(ngx_http_adserve_redis_t *rd)
{
    ngx_http_adserve_events_t  *ev = rd->data;
    const char                 *ping[] = { "PING" };

    /* the script is loaded ahead of this by the Redis layer */
    if (ev->batch.cmd != NULL || ev->backlog) {
        /* the batch that failed, same id, or the backlog */
        ngx_http_adserve_events_send(ev);
        return;
    }

    /* nothing to send: a PING tells whether this connection is usable */
    (void) ngx_http_adserve_redis_command(rd, ngx_http_adserve_events_on_ping, ev,
                                          1, ping, NULL);
}


static void
ngx_http_adserve_events_on_down(ngx_http_adserve_redis_t *rd)
{
    ngx_http_adserve_events_t  *ev = rd->data;

    /* the batch's callback has run (hiredis answers every pending command
     * with NULL first); kept for on_up */
    ev->batch.sending = 0;

    if (ev->deadline.timer_set) {
        ngx_del_timer(&ev->deadline);
    }
}


/* ---- worker start and exit --------------------------------------------- */

/* what init allocated; any of it may be NULL after a failed init */
static void
ngx_http_adserve_events_free(ngx_http_adserve_events_t *ev)
{
    ngx_free(ev->tables[0].index);
    ngx_free(ev->tables[1].index);
    ngx_free(ev->tables[0].counters);
    ngx_free(ev->tables[1].counters);
    ngx_free(ev->ring);
    ngx_free(ev->argv);
    ngx_free(ev->argvlen);
    ngx_free(ev->scratch);
    ngx_free(ev);
}


ngx_http_adserve_events_t *
ngx_http_adserve_events_init(ngx_cycle_t *cycle,
    ngx_http_adserve_events_conf_t *conf)
{
    ngx_http_adserve_events_t  *ev;
    u_char                      rnd[8], *p;
    size_t                      index, counters;

    ev = ngx_calloc(sizeof(ngx_http_adserve_events_t), cycle->log);
    if (ev == NULL) {
        return NULL;
    }

    ev->conf = *conf;
    ev->log = cycle->log;

    index = NGX_HTTP_ADSERVE_COUNTER_SLOTS * sizeof(ngx_http_adserve_counter_slot_t);
    counters = NGX_HTTP_ADSERVE_COUNTER_MAX * sizeof(ngx_http_adserve_counter_t);

    ev->tables[0].index = ngx_calloc(index, cycle->log);
    ev->tables[1].index = ngx_calloc(index, cycle->log);
    ev->tables[0].counters = ngx_memalign(64, counters, cycle->log);
    ev->tables[1].counters = ngx_memalign(64, counters, cycle->log);
    ev->ring = ngx_alloc(conf->buffer * sizeof(ngx_http_adserve_event_t),
                         cycle->log);
    ev->argv = ngx_alloc(NGX_HTTP_ADSERVE_MAX_ARGS * sizeof(char *), cycle->log);
    ev->argvlen = ngx_alloc(NGX_HTTP_ADSERVE_MAX_ARGS * sizeof(size_t),
                            cycle->log);
    ev->scratch = ngx_alloc(NGX_HTTP_ADSERVE_SCRATCH, cycle->log);

    if (ev->tables[0].index == NULL || ev->tables[1].index == NULL
        || ev->tables[0].counters == NULL || ev->tables[1].counters == NULL
        || ev->ring == NULL || ev->argv == NULL || ev->argvlen == NULL
        || ev->scratch == NULL)
    {
        goto failed;
    }

    /* this process's batches: a random id, so that a new worker (even
     * with a recycled pid) never passes for an old one */
    if (RAND_bytes(rnd, sizeof(rnd)) != 1) {
        ngx_log_error(NGX_LOG_EMERG, cycle->log, 0,
                      NGX_HTTP_ADSERVE_LOG "events: RAND_bytes() failed");
        goto failed;
    }

    p = ngx_hex_dump((u_char *) ev->instance, rnd, sizeof(rnd));
    p = ngx_sprintf(p, "-%P", ngx_pid);
    *p = '\0';

    p = ngx_sprintf(ev->flush_key, ADSERVE_KEY_FLUSH "%s", ev->instance);
    ev->flush_key_len = p - ev->flush_key;

    /* the second connection: the loader's address, its own callbacks */
    ev->redis = *conf->redis;
    ev->redis.log = cycle->log;
    ev->redis.timeout = conf->redis->timeout ? conf->redis->timeout : 1000;
    ev->redis.data = ev;
    ev->redis.on_up = ngx_http_adserve_events_on_up;
    ev->redis.on_down = ngx_http_adserve_events_on_down;
    ev->redis.name = "events";
    ev->redis.metric = NGX_HTTP_ADSERVE_CONN_EVENTS;
    ev->redis.outage = "events kept in worker memory";

    /* loaded on every connect, ahead of the batches (Redis runs a
     * connection's commands in order) */
    if (ngx_http_adserve_redis_script(&ev->redis, &ngx_http_adserve_flush) != NGX_OK) {
        goto failed;
    }

    ev->flush.handler = ngx_http_adserve_events_flush;
    ev->flush.data = ev;
    ev->flush.log = cycle->log;
    ev->flush.cancelable = 1;     /* a graceful shutdown does not wait: */
    ev->kick.handler = ngx_http_adserve_events_kick;
    ev->kick.data = ev;
    ev->kick.log = cycle->log;
    ev->deadline.handler = ngx_http_adserve_events_deadline;
    ev->deadline.data = ev;       /* the exit flushes synchronously */
    ev->deadline.log = cycle->log;
    ev->deadline.cancelable = 1;

    ngx_http_adserve_redis_start(&ev->redis);
    ngx_add_timer(&ev->flush, ev->conf.flush);

    return ev;

failed:

    ngx_http_adserve_events_free(ev);

    return NULL;
}


static ngx_uint_t
ngx_http_adserve_pending_counters(ngx_http_adserve_events_t *ev)
{
    return ev->tables[ev->live].used + ev->drain_left;
}


/* At exit: what is pending, over a blocking connection, each command
 * bounded by the Redis timeout and the whole by a few of them. */
static void
ngx_http_adserve_events_last_flush(ngx_http_adserve_events_t *ev)
{
    redisContext  *c;
    redisReply    *reply;
    struct timeval tv;
    ngx_msec_t     timeout, started, budget;
    ngx_uint_t     batches = 0, events = 0, incrs = 0;
    const char    *err = NULL;
    u_char         why[128];
    ngx_int_t      rc;
    const char    *load[NGX_HTTP_ADSERVE_SCRIPT_LOAD_ARGS];
    size_t         loadlen[NGX_HTTP_ADSERVE_SCRIPT_LOAD_ARGS];

    if (ev->batch.cmd == NULL && ev->queued == 0
        && ngx_http_adserve_pending_counters(ev) == 0
        && ev->drop_pending == 0 && ev->drop_counts_pending == 0)
    {
        return;
    }

    timeout = ev->redis.timeout;
    tv.tv_sec = timeout / 1000;
    tv.tv_usec = (timeout % 1000) * 1000;

    ngx_time_update();
    started = ngx_current_msec;
    budget = 5 * timeout;

    c = ngx_http_adserve_redis_connect_now(&ev->redis, tv, &err);
    if (err != NULL) {
        goto done;
    }

    ngx_http_adserve_script_load_args(&ngx_http_adserve_flush, load, loadlen);
    reply = redisCommandArgv(c, NGX_HTTP_ADSERVE_SCRIPT_LOAD_ARGS, load, loadlen);
    if (reply == NULL || reply->type != REDIS_REPLY_STRING) {
        err = reply == NULL ? (c->errstr[0] ? c->errstr : "no reply")
                            : "SCRIPT LOAD failed";
        if (reply != NULL) {
            freeReplyObject(reply);
        }
        goto done;
    }

    freeReplyObject(reply);

    for ( ;; ) {
        /* the batch in flight first, if it was not acknowledged: same
         * id, so that it applies once whether or not its first copy did */
        rc = ngx_http_adserve_events_seal(ev);
        if (rc == NGX_DECLINED) {
            break;
        }

        if (rc == NGX_ERROR) {
            err = "a batch could not be formatted";
            break;
        }

        if (redisAppendFormattedCommand(c, (char *) ev->batch.cmd, ev->batch.len)
            != REDIS_OK
            || redisGetReply(c, (void **) &reply) != REDIS_OK
            || reply == NULL)
        {
            err = c->errstr[0] ? c->errstr : "no reply";
            break;
        }

        rc = ngx_http_adserve_batch_reply(ev, reply, &err);
        if (rc == NGX_ERROR) {
            ngx_log_error(NGX_LOG_WARN, ev->log, 0,
                          NGX_HTTP_ADSERVE_LOG "events: batch %uL refused at exit: %s",
                          ev->batch.seq, err);

            /* err is the reply's text, which goes with the reply: the
             * summary below says it too */
            (void) ngx_cpystrn(why, (u_char *) err, sizeof(why));
            err = (char *) why;
            freeReplyObject(reply);
            break;
        }

        freeReplyObject(reply);
        err = NULL;

        batches++;
        events += ev->batch.events;
        incrs += ev->batch.incrs;
        ngx_http_adserve_batch_free(&ev->batch);

        ngx_time_update();
        if (ngx_current_msec - started > budget) {
            err = "out of time";
            break;
        }
    }

done:

    ngx_time_update();

    if (batches) {
        ngx_log_error(NGX_LOG_NOTICE, ev->log, 0,
                      NGX_HTTP_ADSERVE_LOG "events: flushed at exit: %ui batches, %ui events, "
                      "%ui counter increments in %M ms", batches, events, incrs,
                      ngx_current_msec - started);
    }

    if (err != NULL) {
        ngx_http_adserve_tally->events_dropped += ev->queued
                                                  + (ev->batch.cmd ? ev->batch.events : 0);
        ngx_log_error(NGX_LOG_WARN, ev->log, 0,
                      NGX_HTTP_ADSERVE_LOG "events: could not flush at exit (%s): %ui events "
                      "and %ui counters lost", err,
                      ev->queued + (ev->batch.cmd ? ev->batch.events : 0),
                      ngx_http_adserve_pending_counters(ev)
                      + (ev->batch.cmd ? ev->batch.incrs : 0));
    }

    if (c != NULL) {
        redisFree(c);
    }
}


void
ngx_http_adserve_events_exit(ngx_http_adserve_events_t *ev)
{
    ev->exiting = 1;

    if (ev->flush.timer_set) {
        ngx_del_timer(&ev->flush);
    }

    if (ev->deadline.timer_set) {
        ngx_del_timer(&ev->deadline);
    }

    if (ev->kick.posted) {
        ngx_delete_posted_event(&ev->kick);
    }

    /* a batch in flight is answered NULL here, and kept */
    ngx_http_adserve_redis_stop(&ev->redis);

    ngx_http_adserve_events_last_flush(ev);

    if (ev->overflow_dropped) {
        ngx_log_error(NGX_LOG_WARN, ev->log, 0,
                      NGX_HTTP_ADSERVE_LOG "events: %uL events were dropped (buffer full)",
                      ev->overflow_dropped);
    }

    ngx_http_adserve_batch_free(&ev->batch);
    ngx_http_adserve_events_free(ev);
}


u_char *
ngx_http_adserve_events_status(ngx_http_adserve_events_t *ev, u_char *p,
    u_char *last)
{
    return ngx_slprintf(p, last,
                        ",\"events\":{\"redis\":\"%s\",\"instance\":\"%s\","
                        "\"queued\":%ui,\"pending_counters\":%ui,"
                        "\"unacknowledged\":%ui,\"in_flight\":%ui,"
                        "\"flushed_batches\":%uL,"
                        "\"duplicate_batches\":%uL,\"flush_failures\":%uL,"
                        "\"events_flushed\":%uL,\"dropped\":%uL,"
                        "\"dropped_counts\":%uL,\"invalid\":%uL,"
                        "\"command_errors\":%uL,\"script_loads\":%uL}",
                        ev->redis.connected ? "up" : "down", ev->instance,
                        ev->queued, ngx_http_adserve_pending_counters(ev),
                        (ngx_uint_t) (ev->batch.cmd != NULL),
                        (ngx_uint_t) (ev->batch.cmd ? ev->batch.events : 0),
                        ev->flushed_batches, ev->duplicate_batches,
                        ev->flush_failures, ev->events_flushed, ev->dropped,
                        ev->dropped_counts,
                        ngx_http_adserve_invalid_sum(ev),
                        ev->command_errors, ev->redis.script_loads);
}
