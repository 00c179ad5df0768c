
/*
 * The node's copy of its users' recommendation histories, in a shared
 * zone (adserve_history_zone): what ViewOut and ViewPenalty read without
 * asking Redis on every request.
 *
 * Redis keeps every history (ngx_http_adserve_history.c appends each
 * answer's entries there, as before); the zone keeps the latest
 * ADSERVE_HISTORY_MAX entries of the users this node served lately. A
 * user's copy is filled by a read of Redis (their first request here, or
 * the first after adserve_history_refresh), with what the node added in
 * the last second; then every answer and click of any worker appends to
 * it, so the next request, on whichever worker, sees it at once. What
 * other nodes append reaches this one at its next read: an item repeated
 * meanwhile breaks no contract (a cap would, so caps do not do this).
 *
 * Fixed slots of ADSERVE_HISTORY_MAX item fingerprints and times each, in
 * sets of NGX_HTTP_ADSERVE_HZONE_WAYS; a user new to the zone takes the
 * least recently used slot of their set. A slot is a ring: an append to a
 * full one writes over its oldest entries, and moves none (a heavy user's
 * copy is always full, and every answer moved its 200 entries before). One
 * lock, the slab pool's mutex, which nginx's master releases when a worker
 * dies holding it, for the writers: an append, a read of Redis's merge of a
 * few KB, a slot taken. A request's read of 0.8 KB takes no lock: each slot
 * is also a seqlock, its seq odd while a writer changes it, and a read that
 * saw it odd, or changed under it, takes the lock and reads again (with
 * two workers, the lock's spinning was 4 % of a worker's time under the
 * bench's recommendations, a third of it for those reads). Users are
 * known by the 64-bit hash of their id: two ids of one hash would share a
 * copy (and filter each other's items) until the next read; at 2^-64 a
 * pair, that is accepted.
 *
 * Held writes (adserve_history_delay). An answer's entries go to Redis
 * with the user's next ones, in one APPEND, up to the delay later: one
 * record per set of slots (NGX_HTTP_ADSERVE_HELD_MAX entries and the
 * user's id), in a queue oldest first, which every worker's timer drains
 * (ngx_http_adserve_history.c). In the zone, not in a worker: a worker
 * that dies leaves them to the others, and a worker that exits writes
 * them all. A read of Redis merges the node's entries of the delay and a
 * second more, so the held ones stay in the copy. An APPEND is most of
 * what a recommendation costs Redis (its command, its share of the AOF,
 * its reply parsed in the worker); a reader's page asks for its widgets
 * together, and each answer wrote alone before. Other nodes see a user's
 * entries up to the delay later than they did, within their own refresh.
 */


#include "ngx_http_adserve.h"


#define NGX_HTTP_ADSERVE_HZONE_WAYS  4

/* Bumped whenever the slots' or records' layout changes (their sizes go
 * into the zone's name too, but a field moved within them may not change
 * a size): a reload that loads a changed module gets a zone of its own. */
#define NGX_HTTP_ADSERVE_HZONE_LAYOUT  3


typedef struct {
    uint64_t  user;                           /* adserve_hash of the id;
                                               * 0: a free slot */
    int64_t   read_at;                        /* the latest read of Redis */
    int64_t   used_at;                        /* the latest request: LRU */
    uint32_t  first;                          /* the oldest entry's index */
    uint32_t  n;                              /* entries, from first on,
                                               * round the ring */
    uint32_t  held;                           /* its record of held
                                               * entries, + 1; 0: none */
    uint32_t  ttl_at;                         /* when the node last set
                                               * the user's string's TTL
                                               * (unix s); 0: not since
                                               * the slot is theirs */
    uint32_t  seq;                            /* odd while a writer
                                               * changes what a read
                                               * reads (a seqlock) */
    uint32_t  pad;
    uint32_t  at[ADSERVE_HISTORY_MAX];
    uint32_t  fp[ADSERVE_HISTORY_MAX];
} ngx_http_adserve_hslot_t;


/* a user's entries held for one APPEND */
typedef struct {
    ngx_queue_t                queue;         /* the zone's held, oldest
                                               * first, or its free */
    uint64_t                   user;
    ngx_msec_t                 since;         /* its first entry's time:
                                               * ngx_current_msec, one
                                               * monotonic clock for all
                                               * the node's workers */
    ngx_http_adserve_held_t    w;
} ngx_http_adserve_hheld_t;


typedef struct {
    ngx_uint_t                 nsets;
    ngx_http_adserve_hslot_t  *slots;
    ngx_http_adserve_hheld_t  *records;       /* nsets of them */
    ngx_uint_t                 fresh;         /* records never used yet */
    ngx_queue_t                held;
    ngx_queue_t                free;
    /* what the status shows */
    ngx_atomic_t               nheld;         /* users with held entries */
    ngx_atomic_t               hits;
    ngx_atomic_t               reads;
} ngx_http_adserve_hzone_sh_t;


static ngx_slab_pool_t              *ngx_http_adserve_hzone_pool;
static ngx_http_adserve_hzone_sh_t  *ngx_http_adserve_hzone_sh;
static time_t                        ngx_http_adserve_hzone_refresh;
static ngx_msec_t                    ngx_http_adserve_hzone_held_for;
/* the zone's, read once: every lookup's, while the counts beside them in
 * the zone change on every request */
static ngx_http_adserve_hslot_t     *ngx_http_adserve_hzone_slots;
static ngx_uint_t                    ngx_http_adserve_hzone_nsets;


static ngx_int_t
ngx_http_adserve_hzone_init_zone(ngx_shm_zone_t *shm_zone, void *data)
{
    ngx_slab_pool_t              *shpool = (ngx_slab_pool_t *) shm_zone->shm.addr;
    ngx_http_adserve_hzone_sh_t  *sh;
    ngx_uint_t                    nsets;

    if (data != NULL) {
        shm_zone->data = data;              /* a reload: the copies go on */
        return NGX_OK;
    }

    if (shm_zone->shm.exists) {
        shm_zone->data = shpool->data;
        return NGX_OK;
    }

    nsets = (uintptr_t) shm_zone->data;

    sh = ngx_slab_calloc(shpool, sizeof(ngx_http_adserve_hzone_sh_t));
    if (sh == NULL) {
        return NGX_ERROR;
    }

    /* not cleared: a new mapping is zeros, and a slot's pages are
     * touched only once a user takes it */
    sh->slots = ngx_slab_alloc(shpool, nsets * NGX_HTTP_ADSERVE_HZONE_WAYS
                                       * sizeof(ngx_http_adserve_hslot_t));
    sh->records = ngx_slab_alloc(shpool, nsets * sizeof(ngx_http_adserve_hheld_t));
    if (sh->slots == NULL || sh->records == NULL) {
        return NGX_ERROR;
    }

    ngx_queue_init(&sh->held);
    ngx_queue_init(&sh->free);
    sh->nsets = nsets;
    shpool->data = sh;
    shm_zone->data = sh;

    return NGX_OK;
}


ngx_shm_zone_t *
ngx_http_adserve_hzone_add(ngx_conf_t *cf, size_t size)
{
    ngx_shm_zone_t  *shm_zone;
    ngx_str_t        name;
    ngx_uint_t       nsets;
    size_t           slots;

    nsets = size / (NGX_HTTP_ADSERVE_HZONE_WAYS * sizeof(ngx_http_adserve_hslot_t)
                    + sizeof(ngx_http_adserve_hheld_t));
    if (nsets == 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "adserve_history_zone: %uz bytes hold no user's history "
                           "(%uz a user)", size, sizeof(ngx_http_adserve_hslot_t)
                           + sizeof(ngx_http_adserve_hheld_t) / NGX_HTTP_ADSERVE_HZONE_WAYS);
        return NULL;
    }

    /* the slots and the records, each rounded up to pages below */
    slots = nsets * (NGX_HTTP_ADSERVE_HZONE_WAYS * sizeof(ngx_http_adserve_hslot_t)
                     + sizeof(ngx_http_adserve_hheld_t));

    if (ngx_http_adserve_zone_name(cf, &name, NGX_HTTP_ADSERVE_HZONE_NAME,
                                   (uint64_t) NGX_HTTP_ADSERVE_HZONE_LAYOUT << 48
                                   | (uint64_t) sizeof(ngx_http_adserve_hheld_t) << 32
                                   | sizeof(ngx_http_adserve_hslot_t))
        != NGX_OK)
    {
        return NULL;
    }

    /* the slab pool's own pages and its page descriptors, the header, the
     * slots rounded up to pages */
    shm_zone = ngx_shared_memory_add(cf, &name,
                                     8 * ngx_pagesize + slots / ngx_pagesize * 64
                                     + ngx_align(slots, ngx_pagesize) + ngx_pagesize,
                                     &ngx_http_adserve_module);
    if (shm_zone == NULL) {
        return NULL;
    }

    shm_zone->init = ngx_http_adserve_hzone_init_zone;
    shm_zone->data = (void *) (uintptr_t) nsets;
    shm_zone->noreuse = 0;

    return shm_zone;
}


void
ngx_http_adserve_hzone_init(ngx_shm_zone_t *shm_zone, time_t refresh, ngx_msec_t delay)
{
    if (shm_zone == NULL || shm_zone->data == NULL) {
        return;
    }

    ngx_http_adserve_hzone_pool = (ngx_slab_pool_t *) shm_zone->shm.addr;
    ngx_http_adserve_hzone_sh = shm_zone->data;
    ngx_http_adserve_hzone_refresh = refresh;
    ngx_http_adserve_hzone_held_for = refresh ? delay : 0;
    ngx_http_adserve_hzone_slots = ngx_http_adserve_hzone_sh->slots;
    ngx_http_adserve_hzone_nsets = ngx_http_adserve_hzone_sh->nsets;
}


/* The set of slots a user's copy is in */
static ngx_inline ngx_http_adserve_hslot_t *
ngx_http_adserve_hzone_set_of(uint64_t user)
{
    return &ngx_http_adserve_hzone_slots[(user ^ (user >> 32)) % ngx_http_adserve_hzone_nsets
                                         * NGX_HTTP_ADSERVE_HZONE_WAYS];
}


/* A writer's bracket of its changes to a slot, under the lock: seq odd
 * before the first store, even again after the last, so a reader without
 * the lock can tell a copy it made meanwhile. Odd whatever it was: a
 * worker that died writing left it odd, and an even seq during a write
 * would let a read take what it half wrote. */
static ngx_inline void
ngx_http_adserve_hzone_writing(ngx_http_adserve_hslot_t *slot)
{
    __atomic_store_n(&slot->seq, (slot->seq + 1) | 1, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_RELEASE);
}


static ngx_inline void
ngx_http_adserve_hzone_written(ngx_http_adserve_hslot_t *slot)
{
    __atomic_store_n(&slot->seq, slot->seq + 1, __ATOMIC_RELEASE);
}


/* The user's slot, or NULL; with take, a slot for them: a free one of
 * their set, else its least recently used, emptied. Under the lock. */
static ngx_http_adserve_hslot_t *
ngx_http_adserve_hzone_slot(uint64_t user, ngx_uint_t take)
{
    ngx_http_adserve_hslot_t  *set, *old;
    ngx_uint_t                 i;

    set = ngx_http_adserve_hzone_set_of(user);

    for (i = 0; i < NGX_HTTP_ADSERVE_HZONE_WAYS; i++) {
        if (set[i].user == user) {
            return &set[i];
        }
    }

    if (!take) {
        return NULL;
    }

    old = &set[0];
    for (i = 1; i < NGX_HTTP_ADSERVE_HZONE_WAYS; i++) {
        if (set[i].used_at < old->used_at) {
            old = &set[i];
        }
    }

    /* its held entries, if any, go out in their turn, as another user's;
     * the user last, so that a worker dying here (the master then frees
     * the lock) leaves an empty slot of the old user, not the new user
     * with the old one's copy and record */
    ngx_http_adserve_hzone_writing(old);
    old->read_at = 0;
    old->first = 0;
    old->n = 0;
    old->held = 0;
    old->ttl_at = 0;
    ngx_memory_barrier();
    old->user = user;
    ngx_http_adserve_hzone_written(old);

    return old;
}


/* The slot's entries from the from-th (0: its oldest) out into fp[] and
 * at[] (unless NULL), oldest first: the ring's tail, then its head; how
 * many. Its first and n as the caller read them once (a reader without
 * the lock must not read them again: from <= n, whatever a writer did). */
static ngx_uint_t
ngx_http_adserve_hzone_copy(const ngx_http_adserve_hslot_t *slot, uint32_t first,
    uint32_t n, ngx_uint_t from, uint32_t *fp, uint32_t *at)
{
    ngx_uint_t  i, tail;

    n -= from;
    i = (first + from) % ADSERVE_HISTORY_MAX;
    tail = ngx_min(n, ADSERVE_HISTORY_MAX - i);

    ngx_memcpy(fp, &slot->fp[i], tail * sizeof(uint32_t));
    ngx_memcpy(fp + tail, slot->fp, (n - tail) * sizeof(uint32_t));

    if (at != NULL) {
        ngx_memcpy(at, &slot->at[i], tail * sizeof(uint32_t));
        ngx_memcpy(at + tail, slot->at, (n - tail) * sizeof(uint32_t));
    }

    return n;
}


/* The time of the slot's i-th entry (0: its oldest) */
static ngx_inline uint32_t
ngx_http_adserve_hzone_at(const ngx_http_adserve_hslot_t *slot, ngx_uint_t i)
{
    return slot->at[(slot->first + i) % ADSERVE_HISTORY_MAX];
}


/* h, oldest first, as the slot's entries: its latest ADSERVE_HISTORY_MAX */
static void
ngx_http_adserve_hzone_set(ngx_http_adserve_hslot_t *slot, const ngx_http_adserve_hist_t *h)
{
    ngx_uint_t  skip;

    skip = h->n > ADSERVE_HISTORY_MAX ? h->n - ADSERVE_HISTORY_MAX : 0;
    slot->first = 0;
    slot->n = (uint32_t) (h->n - skip);
    ngx_memcpy(slot->fp, h->fp + skip, slot->n * sizeof(uint32_t));
    ngx_memcpy(slot->at, h->at + skip, slot->n * sizeof(uint32_t));
}


/* The user's copy as a request reads it, from a slot found (under the
 * lock, or in a read of one's seq): whether it is fresh enough
 * (adserve_history_refresh after its read of Redis; older: at all), and
 * then its entries within ADSERVE_HISTORY_SECONDS, their fingerprints
 * alone (the times are half the copy's bytes). The entries are oldest
 * first, so past the first recent one all are (or nearly: workers' and
 * nodes' clocks may put appends a second out of order, which near the 7
 * days' end counts an entry a second longer). Each field is read once:
 * without the lock, a writer may change them between two reads. */
static ngx_int_t
ngx_http_adserve_hzone_read(ngx_http_adserve_hslot_t *slot, time_t now, ngx_uint_t older,
    ngx_http_adserve_hist_t *h)
{
    int64_t     read_at;
    uint32_t    first, n;
    ngx_uint_t  from;

    read_at = __atomic_load_n(&slot->read_at, __ATOMIC_RELAXED);

    /* a test clock may go back: a copy read "later" is read again */
    if (read_at == 0) {
        return NGX_DECLINED;
    }

    if (!older && (now < read_at || now - read_at >= ngx_http_adserve_hzone_refresh)) {
        return NGX_AGAIN;
    }

    first = __atomic_load_n(&slot->first, __ATOMIC_RELAXED) % ADSERVE_HISTORY_MAX;
    n = ngx_min(__atomic_load_n(&slot->n, __ATOMIC_RELAXED), ADSERVE_HISTORY_MAX);

    for (from = 0;
         from < n
         && (int64_t) slot->at[(first + from) % ADSERVE_HISTORY_MAX]
            <= (int64_t) now - ADSERVE_HISTORY_SECONDS;
         from++)
    { /* void */ }

    h->n = ngx_http_adserve_hzone_copy(slot, first, n, from, h->fp, NULL);

    return NGX_OK;
}


/* Without the lock: NGX_BUSY when a writer had the slot odd, or changed
 * it during the read (the caller reads under the lock then). No slot of
 * the user's is NGX_DECLINED, as under the lock: one taken for them this
 * moment is found at their next request. */
static ngx_int_t
ngx_http_adserve_hzone_peek(uint64_t user, time_t now, ngx_uint_t older,
    ngx_http_adserve_hist_t *h)
{
    ngx_http_adserve_hslot_t  *set, *slot;
    ngx_uint_t                 i;
    ngx_int_t                  rc;
    uint32_t                   seq;

    set = ngx_http_adserve_hzone_set_of(user);

    for (i = 0; i < NGX_HTTP_ADSERVE_HZONE_WAYS; i++) {
        slot = &set[i];
        seq = __atomic_load_n(&slot->seq, __ATOMIC_ACQUIRE);

        if (__atomic_load_n(&slot->user, __ATOMIC_RELAXED) != user) {
            continue;
        }

        if (seq & 1) {
            return NGX_BUSY;
        }

        rc = ngx_http_adserve_hzone_read(slot, now, older, h);

        __atomic_thread_fence(__ATOMIC_ACQUIRE);

        if (__atomic_load_n(&slot->seq, __ATOMIC_RELAXED) != seq) {
            return NGX_BUSY;
        }

        if (rc == NGX_OK) {
            /* the LRU's hint: a store racing a writer's is harmless */
            __atomic_store_n(&slot->used_at, (int64_t) now, __ATOMIC_RELAXED);
        }

        return rc;
    }

    return NGX_DECLINED;
}


ngx_int_t
ngx_http_adserve_hzone_get(uint64_t user, time_t now, ngx_uint_t older,
    ngx_http_adserve_hist_t *h)
{
    ngx_http_adserve_hslot_t  *slot;
    ngx_int_t                  rc;

    if (ngx_http_adserve_hzone_sh == NULL || ngx_http_adserve_hzone_refresh == 0) {
        return NGX_DECLINED;
    }

    rc = ngx_http_adserve_hzone_peek(user, now, older, h);

    if (rc == NGX_BUSY) {
        ngx_shmtx_lock(&ngx_http_adserve_hzone_pool->mutex);

        slot = ngx_http_adserve_hzone_slot(user, 0);
        rc = slot != NULL ? ngx_http_adserve_hzone_read(slot, now, older, h) : NGX_DECLINED;

        if (rc == NGX_OK) {
            slot->used_at = now;
        }

        ngx_shmtx_unlock(&ngx_http_adserve_hzone_pool->mutex);
    }

    if (!older) {
        (void) ngx_atomic_fetch_add(rc == NGX_OK ? &ngx_http_adserve_hzone_sh->hits
                                                 : &ngx_http_adserve_hzone_sh->reads, 1);
    }

    return rc;
}


/* An entry as a key of the merge's set: its item and minute (Redis keeps
 * the minute alone); never 0 (a fingerprint is not) */
#define NGX_HTTP_ADSERVE_HZONE_KEY(fp, at)  ((uint64_t) ((at) / 60) << 32 | (fp))
/* the set's slots: a power of two, twice a read's entries at least */
#define NGX_HTTP_ADSERVE_HZONE_KEY_BITS     9
#define NGX_HTTP_ADSERVE_HZONE_KEYS         (1 << NGX_HTTP_ADSERVE_HZONE_KEY_BITS)

#if (NGX_HTTP_ADSERVE_HZONE_KEYS < 2 * ADSERVE_HISTORY_MAX)
#error "the merge's set must stay at most half full"
#endif


/* The key's slot in the set: its own, or the free one where it would go.
 * The set is at most half full, so a probe ends. */
static ngx_inline ngx_uint_t
ngx_http_adserve_hzone_probe(const uint64_t *keys, uint64_t key)
{
    ngx_uint_t  k;

    for (k = (key * 0x9e3779b97f4a7c15ULL) >> (64 - NGX_HTTP_ADSERVE_HZONE_KEY_BITS);
         keys[k] != 0 && keys[k] != key;
         k = (k + 1) & (NGX_HTTP_ADSERVE_HZONE_KEYS - 1))
    { /* void */ }

    return k;
}


/*
 * Redis's entries a (a read, oldest first) and the node's recent ones b
 * (oldest first) merged by time into out (room for both). An entry of b
 * that Redis has already (the same item in the same minute: this node's
 * append reached Redis before the read, or an item shown twice within the
 * minute, which one entry tells as well) is not taken twice. Which ones
 * those are is asked of a set of a's entries, not by comparing each with
 * its second's others: a heavy user's second holds a hundred entries or
 * more, and that comparison was quadratic. All of a's go in (at most
 * ADSERVE_HISTORY_MAX: a read's bound), since b may be a second out of
 * order (workers append at their own cached time).
 */
static void
ngx_http_adserve_hzone_merge(const ngx_http_adserve_hist_t *a, const uint32_t *bfp,
    const uint32_t *bat, ngx_uint_t bn, ngx_http_adserve_hist_t *out)
{
    uint64_t    keys[NGX_HTTP_ADSERVE_HZONE_KEYS], key;
    ngx_uint_t  i, j;

    ngx_memzero(keys, sizeof(keys));

    for (i = 0; i < a->n; i++) {
        key = NGX_HTTP_ADSERVE_HZONE_KEY(a->fp[i], a->at[i]);
        keys[ngx_http_adserve_hzone_probe(keys, key)] = key;
    }

    out->n = 0;
    i = 0;
    j = 0;

    while (i < a->n || j < bn) {
        if (j == bn || (i < a->n && a->at[i] <= bat[j])) {
            out->fp[out->n] = a->fp[i];
            out->at[out->n++] = a->at[i++];
            continue;
        }

        key = NGX_HTTP_ADSERVE_HZONE_KEY(bfp[j], bat[j]);

        if (keys[ngx_http_adserve_hzone_probe(keys, key)] == 0) {
            out->fp[out->n] = bfp[j];
            out->at[out->n++] = bat[j];
        }
        j++;
    }
}


void
ngx_http_adserve_hzone_fill(uint64_t user, time_t now, ngx_http_adserve_hist_t *h,
    ngx_http_adserve_hist_t *scratch)
{
    ngx_http_adserve_hslot_t  *slot;
    ngx_uint_t                 recent, bn, held;
    time_t                     since;
    uint32_t                   bfp[ADSERVE_HISTORY_MAX], bat[ADSERVE_HISTORY_MAX];

    if (ngx_http_adserve_hzone_sh == NULL || ngx_http_adserve_hzone_refresh == 0) {
        return;
    }

    ngx_shmtx_lock(&ngx_http_adserve_hzone_pool->mutex);

    slot = ngx_http_adserve_hzone_slot(user, 1);

    /* Redis's entries, and the node's that Redis may not have yet: those
     * the user's record holds (the ring's last ones), and those sent
     * lately, which may still be on their way (sent at the end of their
     * event loop iteration, or a held record after the delay and a tick).
     * Older ones Redis has, or dropped (a cut, an expiry, a delete):
     * Redis's word is the history. Most reads find none so recent (the
     * refresh is past), and Redis's entries are the copy as they are. */
    since = now - (time_t) ngx_max(1, (ngx_http_adserve_hzone_held_for
                                       + ngx_http_adserve_hzone_tick() + 50 + 999) / 1000);

    for (recent = slot->n;
         recent > 0 && (time_t) ngx_http_adserve_hzone_at(slot, recent - 1) >= since;
         recent--)
    {
        /* void */
    }

    if (slot->held) {
        held = ngx_http_adserve_hzone_sh->records[slot->held - 1].w.n;
        recent = ngx_min(recent, slot->n - ngx_min(held, slot->n));
    }

    ngx_http_adserve_hzone_writing(slot);

    if (recent == slot->n) {
        ngx_http_adserve_hzone_set(slot, h);

    } else {
        bn = ngx_http_adserve_hzone_copy(slot, slot->first, slot->n, recent, bfp, bat);
        ngx_http_adserve_hzone_merge(h, bfp, bat, bn, scratch);
        ngx_http_adserve_hzone_set(slot, scratch);
        h->n = ngx_http_adserve_hzone_copy(slot, slot->first, slot->n, 0, h->fp, NULL);
    }

    slot->read_at = now;
    slot->used_at = now;

    ngx_http_adserve_hzone_written(slot);

    ngx_shmtx_unlock(&ngx_http_adserve_hzone_pool->mutex);
}


/* Whether the user's next APPEND sets the string's TTL (the contract's
 * ADSERVE_HISTORY_TTL_REFRESH), at now, the request's time: due when the
 * node has not for that long, and then it has, as of now. Under the
 * lock. */
static ngx_uint_t
ngx_http_adserve_hzone_ttl(ngx_http_adserve_hslot_t *slot, time_t now)
{
    /* (a test clock that went back: due) */
    if (slot->ttl_at != 0 && now >= (time_t) slot->ttl_at
        && now - (time_t) slot->ttl_at < ADSERVE_HISTORY_TTL_REFRESH)
    {
        return NGX_HTTP_ADSERVE_TTL_SET;
    }

    slot->ttl_at = (uint32_t) now;

    return NGX_HTTP_ADSERVE_TTL_DUE;
}


/* The user's held record's entries into out, and the record freed; under
 * the lock */
static void
ngx_http_adserve_hzone_release(ngx_http_adserve_hheld_t *rec, ngx_http_adserve_held_t *out)
{
    out->len = rec->w.len;
    out->n = rec->w.n;
    out->ttl = rec->w.ttl;
    ngx_memcpy(out->id, rec->w.id, rec->w.len);
    ngx_memcpy(out->entries, rec->w.entries, rec->w.n * ADSERVE_HISTORY_ENTRY);

    ngx_queue_remove(&rec->queue);
    ngx_queue_insert_head(&ngx_http_adserve_hzone_sh->free, &rec->queue);
    (void) ngx_atomic_fetch_add(&ngx_http_adserve_hzone_sh->nheld, -1);
}


/* A record for the user's held entries: a freed one, else one never used
 * (its pages untouched until then); NULL when all hold entries. Under the
 * lock. */
static ngx_http_adserve_hheld_t *
ngx_http_adserve_hzone_record(ngx_http_adserve_hslot_t *slot, const adserve_str_t *id,
    time_t now)
{
    ngx_http_adserve_hzone_sh_t  *sh = ngx_http_adserve_hzone_sh;
    ngx_http_adserve_hheld_t     *rec;
    ngx_queue_t                  *q;

    if (!ngx_queue_empty(&sh->free)) {
        q = ngx_queue_head(&sh->free);
        ngx_queue_remove(q);
        rec = ngx_queue_data(q, ngx_http_adserve_hheld_t, queue);

    } else if (sh->fresh < sh->nsets) {
        rec = &sh->records[sh->fresh++];

    } else {
        return NULL;
    }

    rec->user = slot->user;
    rec->since = ngx_current_msec;
    rec->w.len = id->len;
    rec->w.n = 0;
    rec->w.ttl = ngx_http_adserve_hzone_ttl(slot, now);
    ngx_memcpy(rec->w.id, id->data, id->len);

    ngx_queue_insert_tail(&sh->held, &rec->queue);
    (void) ngx_atomic_fetch_add(&sh->nheld, 1);
    slot->held = (uint32_t) (rec - sh->records) + 1;

    return rec;
}


/* The entries held in the user's record (one taken if need be, at now):
 * NGX_OK, or NGX_DECLINED when they cannot be; a full record goes into
 * out first. Under the lock. */
static ngx_int_t
ngx_http_adserve_hzone_hold(ngx_http_adserve_hslot_t *slot, const adserve_str_t *id,
    const u_char *entries, ngx_uint_t n, time_t now, ngx_http_adserve_held_t *out)
{
    ngx_http_adserve_hheld_t  *rec = NULL;

    if (slot->held) {
        rec = &ngx_http_adserve_hzone_sh->records[slot->held - 1];

        if (rec->w.n + n > NGX_HTTP_ADSERVE_HELD_MAX) {
            ngx_http_adserve_hzone_release(rec, out);
            slot->held = 0;
            rec = NULL;
        }
    }

    if (n > NGX_HTTP_ADSERVE_HELD_MAX || id->len > ADSERVE_TOKEN_USER_MAX) {
        return NGX_DECLINED;
    }

    if (rec == NULL) {
        rec = ngx_http_adserve_hzone_record(slot, id, now);
        if (rec == NULL) {
            return NGX_DECLINED;
        }
    }

    ngx_memcpy(rec->w.entries + rec->w.n * ADSERVE_HISTORY_ENTRY, entries,
               n * ADSERVE_HISTORY_ENTRY);
    rec->w.n += n;

    return NGX_OK;
}


ngx_int_t
ngx_http_adserve_hzone_append(uint64_t user, time_t now, const uint32_t *fp, ngx_uint_t n,
    const adserve_str_t *id, const u_char *entries, ngx_http_adserve_held_t *out,
    ngx_uint_t *ttl)
{
    ngx_http_adserve_hslot_t  *slot;
    ngx_uint_t                 i, k;
    ngx_int_t                  rc = NGX_DECLINED;

    out->n = 0;
    *ttl = NGX_HTTP_ADSERVE_TTL_UNKNOWN;

    if (ngx_http_adserve_hzone_sh == NULL || ngx_http_adserve_hzone_refresh == 0 || n == 0) {
        return NGX_DECLINED;
    }

    ngx_shmtx_lock(&ngx_http_adserve_hzone_pool->mutex);

    /* a user the zone does not hold gets a slot at their next read */
    slot = ngx_http_adserve_hzone_slot(user, 0);

    if (slot != NULL) {
        /* into the ring: past its newest entry, over its oldest when full */
        ngx_http_adserve_hzone_writing(slot);

        for (i = 0; i < ngx_min(n, ADSERVE_HISTORY_MAX); i++) {
            k = (slot->first + slot->n) % ADSERVE_HISTORY_MAX;
            slot->fp[k] = fp[i];
            slot->at[k] = (uint32_t) now;

            if (slot->n < ADSERVE_HISTORY_MAX) {
                slot->n++;

            } else {
                slot->first = (slot->first + 1) % ADSERVE_HISTORY_MAX;
            }
        }

        ngx_http_adserve_hzone_written(slot);
        slot->used_at = now;

        if (ngx_http_adserve_hzone_held_for) {
            rc = ngx_http_adserve_hzone_hold(slot, id, entries, n, now, out);
        }

        if (rc != NGX_OK) {
            *ttl = ngx_http_adserve_hzone_ttl(slot, now);
        }
    }

    ngx_shmtx_unlock(&ngx_http_adserve_hzone_pool->mutex);

    return rc;
}


ngx_uint_t
ngx_http_adserve_hzone_due(ngx_msec_t now, ngx_msec_t age, ngx_http_adserve_held_t *out,
    ngx_uint_t max)
{
    ngx_http_adserve_hzone_sh_t  *sh = ngx_http_adserve_hzone_sh;
    ngx_http_adserve_hheld_t     *rec;
    ngx_http_adserve_hslot_t     *slot;
    ngx_uint_t                    k = 0;
    uint32_t                      index;

    if (sh == NULL || ngx_http_adserve_hzone_held_for == 0) {
        return 0;
    }

    ngx_shmtx_lock(&ngx_http_adserve_hzone_pool->mutex);

    /* oldest first: the first one not due ends it */
    while (k < max && !ngx_queue_empty(&sh->held)) {
        rec = ngx_queue_data(ngx_queue_head(&sh->held), ngx_http_adserve_hheld_t, queue);

        if ((ngx_msec_int_t) (now - rec->since) < (ngx_msec_int_t) age) {
            break;
        }

        /* the user's slot lets it go, unless it was since given to another */
        index = (uint32_t) (rec - sh->records) + 1;
        slot = ngx_http_adserve_hzone_slot(rec->user, 0);
        if (slot != NULL && slot->held == index) {
            slot->held = 0;
        }

        ngx_http_adserve_hzone_release(rec, &out[k++]);
    }

    ngx_shmtx_unlock(&ngx_http_adserve_hzone_pool->mutex);

    return k;
}


ngx_msec_t
ngx_http_adserve_hzone_tick(void)
{
    return ngx_max(ngx_http_adserve_hzone_held_for / 4, 10);
}


ngx_msec_t
ngx_http_adserve_hzone_delay(void)
{
    return ngx_http_adserve_hzone_sh ? ngx_http_adserve_hzone_held_for : 0;
}


u_char *
ngx_http_adserve_hzone_status(u_char *p, u_char *last)
{
    ngx_http_adserve_hzone_sh_t  *sh = ngx_http_adserve_hzone_sh;

    if (sh == NULL) {
        return ngx_slprintf(p, last, ",\"history_zone\":null");
    }

    return ngx_slprintf(p, last,
                        ",\"history_zone\":{\"users\":%ui,\"refresh_s\":%T,"
                        "\"hits\":%uA,\"reads\":%uA,\"delay_ms\":%M,\"held\":%uA}",
                        sh->nsets * NGX_HTTP_ADSERVE_HZONE_WAYS, ngx_http_adserve_hzone_refresh,
                        sh->hits, sh->reads, ngx_http_adserve_hzone_held_for, sh->nheld);
}


/* The copy's uses, node-wide, in Prometheus's text (metrics.c's page);
 * nothing without a copy */
u_char *
ngx_http_adserve_hzone_metrics(u_char *p, u_char *last)
{
    ngx_http_adserve_hzone_sh_t  *sh = ngx_http_adserve_hzone_sh;

    if (sh == NULL) {
        return p;
    }

    return ngx_slprintf(p, last,
                        "# HELP adserve_history_copy_total Recommendation history lookups "
                        "of the node's copy (adserve_history_zone): a hit served from it, "
                        "a read went to Redis.\n"
                        "# TYPE adserve_history_copy_total counter\n"
                        "adserve_history_copy_total{result=\"hit\"} %uA\n"
                        "adserve_history_copy_total{result=\"read\"} %uA\n"
                        "# HELP adserve_history_held Users whose latest recommendation "
                        "history entries the node holds for one write "
                        "(adserve_history_delay).\n"
                        "# TYPE adserve_history_held gauge\n"
                        "adserve_history_held %uA\n",
                        sh->hits, sh->reads, sh->nheld);
}
