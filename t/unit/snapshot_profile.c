/* snapshot-profile: builds snapshots outside nginx from an inventory in the
 * Redis data contract, to time and profile the build (perf, callgrind).
 *
 *   scripts/gen-inventory --units 5000 --line-items 100000 --creatives 200000 \
 *       | build/t/tools/snapshot-profile [rounds]
 *
 * Reads the RESP stream gen-inventory writes for redis-cli --pipe, keeps the
 * HSET records of each kind, then builds once from all of them (a full
 * load) and `rounds` times more after changing one line item each time (the
 * change log's path), and prints each build's time and the snapshot's size.
 * ADSERVE_DECIDE=N then makes N decisions on the last snapshot, every ACTIVE
 * unit in turn as the bench's requests come (looked up and fetched ahead
 * as serving does), and prints the time of one: the decision's memory,
 * apart from nginx, to weigh how it fetches (run a cache thrasher beside
 * it to see a busy host's).
 * Not a test: built into build/t/tools/, out of prove's way. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <malloc.h>
#include <sys/mman.h>

#include "adserve_pacing.h"
#include "adserve_records.h"

typedef struct {
    char   *data;
    size_t  len, cap;
} buf_t;

static int read_all(FILE *f, buf_t *b) {
    size_t n;

    b->cap = 1 << 20;
    b->data = malloc(b->cap);
    while (b->data != NULL && (n = fread(b->data + b->len, 1, b->cap - b->len, f)) > 0) {
        b->len += n;
        if (b->len == b->cap) {
            b->cap *= 2;
            b->data = realloc(b->data, b->cap);
        }
    }
    return b->data != NULL ? 0 : -1;
}

/* One RESP bulk string at *p: "$len\r\n<len bytes>\r\n". */
static int bulk(char **p, char *end, char **s, size_t *len) {
    char *q;

    if (*p >= end || **p != '$') {
        return -1;
    }
    *len = strtoul(*p + 1, &q, 10);
    if (q + 2 + *len + 2 > end) {
        return -1;
    }
    *s = q + 2;
    *p = *s + *len + 2;
    return 0;
}

static int kind_of(const char *key, size_t len) {
    int k;

    for (k = 0; k < ADSERVE_KIND_COUNT; k++) {
        if (strlen(adserve_kinds[k].key) == len && memcmp(adserve_kinds[k].key, key, len) == 0) {
            return k;
        }
    }
    return -1;
}

/* the last line item read: the record each round writes again */
static char *li_id, *li_text;
static size_t li_id_len, li_len;

static int load(buf_t *b, adserve_records_t *recs) {
    char *p = b->data, *end = b->data + b->len, *arg[4], *q;
    size_t alen[4], n, i;
    int k;

    while (p < end) {
        if (*p != '*') {
            return -1;
        }
        n = strtoul(p + 1, &q, 10);
        p = q + 2;
        for (i = 0; i < n; i++) {
            char *s;
            size_t len;
            if (bulk(&p, end, &s, &len) != 0) {
                return -1;
            }
            if (i < 4) {
                arg[i] = s;
                alen[i] = len;
            }
        }
        k = n == 4 && alen[0] == 4 && memcmp(arg[0], "HSET", 4) == 0
            ? kind_of(arg[1], alen[1]) : -1;
        if (k >= 0
            && adserve_records_put(&recs[k], arg[2], alen[2], arg[3], alen[3]) != 0)
        {
            return -1;
        }
        if (n == 4 && k == ADSERVE_KIND_LINE_ITEMS) {
            li_id = arg[2], li_id_len = alen[2], li_text = arg[3], li_len = alen[3];
        }
    }
    return li_id != NULL ? 0 : -1;
}

static double now_ms(void) {
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* ADSERVE_SHM=1: each snapshot into one half of a shared anonymous mapping,
 * by turns, as nginx builds into its zone (a bump allocator; a half is
 * reused two builds later, when its snapshot is long freed). */
#define SHM_HALF  ((size_t) 768 << 20)

typedef struct {
    char   *base;
    size_t  used;
} shm_t;

static void *shm_alloc(void *data, size_t size) {
    shm_t *m = data;
    void *p;

    size = (size + 15) & ~(size_t) 15;
    if (m->used + size > SHM_HALF) {
        return NULL;
    }
    p = m->base + m->used;
    m->used += size;
    return p;
}

static void shm_free(void *data, void *p) {
    (void) data;
    (void) p;
}

static shm_t shm_halves[2];
static adserve_allocator_t shm_allocs[2];

static const adserve_allocator_t *shm_for(uint64_t rev) {
    static char *base;
    shm_t *m;

    if (base == NULL) {
        base = mmap(NULL, 2 * SHM_HALF, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                    -1, 0);
        if (base == MAP_FAILED) {
            perror("mmap");
            exit(1);
        }
    }
    m = &shm_halves[rev % 2];
    m->base = base + (rev % 2) * SHM_HALF;
    m->used = 0;
    shm_allocs[rev % 2].alloc = shm_alloc;
    shm_allocs[rev % 2].free = shm_free;
    shm_allocs[rev % 2].data = m;
    return &shm_allocs[rev % 2];
}

static adserve_snapshot_t *build(adserve_records_t *recs, uint64_t rev, unsigned threads,
                                 adserve_joins_t *joins, const adserve_snapshot_t *prev) {
    adserve_input_t in;
    adserve_snapshot_t *s = NULL;
    char err[256];
    int k;

    adserve_input_init(&in);
    in.rev = rev;
    in.public_url = "http://127.0.0.1:8080";
    in.threads = threads;               /* as the loader: on every core */
    if (getenv("ADSERVE_SHM") != NULL && strcmp(getenv("ADSERVE_SHM"), "1") == 0) {
        in.allocator = shm_for(rev);
    }
    in.joins = joins;                   /* as the loader: what the last
                                         * build joined, unless ADSERVE_JOINS=0 */
    in.prev = prev;                     /* as the loader: the snapshot served,
                                         * which the build may borrow from */
    for (k = 0; k < ADSERVE_KIND_COUNT; k++) {
        if (adserve_records_export(&recs[k], &in, k) != 0) {
            goto done;
        }
    }
    s = adserve_snapshot_build(&in, err, sizeof(err));
    if (s == NULL) {
        fprintf(stderr, "build failed: %s\n", err);
    }
done:
    adserve_input_free(&in);
    return s;
}

/* n decisions over every unit in turn, as serving makes them: the unit
 * looked up (which fetches it ahead), its candidates' line items and paces
 * fetched before the request's parse (here: none), then the decision and
 * its answer's head read as the body's copy does. */
/* the ids a request names, as its path holds them: apart from the units'
 * records, so that a lookup does not find its unit's lines already read */
#define ID_ROOM  64

static int decide(const adserve_snapshot_t *s, long n) {
    adserve_pace_t *paces = adserve_paces_new(s, NULL, NULL);
    char *ids = malloc((size_t) s->nunits * ID_ROOM);
    size_t *lens = malloc(s->nunits * sizeof(size_t));
    adserve_req_ctx_t facts;
    adserve_decision_t d;
    const adserve_cand_t *c;
    const adserve_unit_t *u;
    unsigned long sum = 0, filled = 0;
    int64_t now = time(NULL);
    double t0;
    uint32_t k;
    long i;
    size_t b;

    if (paces == NULL || ids == NULL || lens == NULL || s->nunits == 0) {
        free(paces), free(ids), free(lens);
        return -1;
    }
    for (k = 0; k < s->nunits; k++) {
        lens[k] = s->units[k].id_len < ID_ROOM ? s->units[k].id_len : ID_ROOM;
        memcpy(ids + (size_t) k * ID_ROOM, s->units[k].id, lens[k]);
    }
    adserve_req_ctx_init(&facts, NULL);
    t0 = now_ms();
    for (i = 0; i < n; i++) {
        k = (uint32_t) (i * 7919) % s->nunits;
        u = adserve_snapshot_unit(s, ids + (size_t) k * ID_ROOM, lens[k]);
        if (u == NULL) {
            continue;           /* an id longer than ID_ROOM, cut */
        }
        adserve_decide_ahead(s, u, paces);
        memset(&d, 0, sizeof(d));
        d.now = now;
        d.rnd = (uint32_t) i * 2654435761u;
        d.facts = &facts;
        d.paces = paces;
        d.dry = 1;
        c = adserve_decide(s, u, &d);
        if (c != NULL) {
            filled++;
            for (b = 0; b < c->response_head_len; b += 8) {
                sum += (unsigned char) c->response_head[b];
            }
        }
    }
    printf("%ld decisions over %u units: %.1f ns each, %lu filled (%lu)\n", n, s->nunits,
           (now_ms() - t0) * 1e6 / n, filled, sum % 10);
    free(paces), free(ids), free(lens);
    return 0;
}

int main(int argc, char **argv) {
    adserve_records_t recs[ADSERVE_KIND_COUNT];
    adserve_snapshot_t *s, *prev = NULL;
    adserve_joins_t joins;
    const char *use_joins = getenv("ADSERVE_JOINS");
    buf_t b = {0};
    double t0;
    int k, round, rounds = argc > 1 ? atoi(argv[1]) : 3;

    /* as the module's builder sets it (ngx_http_adserve_loader_init): a
     * build's scratch memory stays in the heap for the next one */
    mallopt(M_MMAP_THRESHOLD, 32 * 1024 * 1024);
    mallopt(M_TRIM_THRESHOLD, 256 * 1024 * 1024);

    for (k = 0; k < ADSERVE_KIND_COUNT; k++) {
        adserve_records_init(&recs[k]);
    }
    adserve_joins_init(&joins);
    t0 = now_ms();
    if (read_all(stdin, &b) != 0 || load(&b, recs) != 0) {
        fprintf(stderr, "snapshot-profile: the input is not a RESP stream of HSETs\n");
        return 2;
    }
    printf("read %zu line items, %zu creatives, %zu ad units in %.0f ms\n",
           recs[ADSERVE_KIND_LINE_ITEMS].count, recs[ADSERVE_KIND_CREATIVES].count,
           recs[ADSERVE_KIND_AD_UNITS].count, now_ms() - t0);

    for (round = 0; round <= rounds; round++) {
        /* an API write: the record's text is new, its parse is gone */
        if (round > 0
            && adserve_records_put(&recs[ADSERVE_KIND_LINE_ITEMS], li_id, li_id_len,
                                   li_text, li_len) != 0)
        {
            return 1;
        }
        t0 = now_ms();
        s = build(recs, (uint64_t) round + 1, 2,
                  use_joins != NULL && strcmp(use_joins, "0") == 0 ? NULL : &joins, prev);
        if (s == NULL) {
            return 1;
        }
        printf("%-12s %6.0f ms  (build_ms %u)  %zu KiB, %zu candidates, %zu active units, "
               "%zu excluded, %zu line items joined, %zu units ranked, %zu borrowed "
               "(depth %u, chain %zu KiB)\n",
               round == 0 ? "full" : "one change", now_ms() - t0, s->stats.build_ms,
               s->stats.bytes / 1024, s->stats.candidates, s->stats.active_units,
               s->stats.excluded, s->stats.joined, s->stats.ranked, s->stats.borrowed,
               s->depth, s->chain_bytes / 1024);
        printf("%-12s parse %u, link %u, join %u, render %u, keep %u ms\n", "",
               s->stats.parse_ms, s->stats.link_ms, s->stats.join_ms,
               s->stats.render_ms, s->stats.keep_ms);
        /* as the zone: the snapshot before is freed once the next serves
         * (what the new one borrows stays until it goes too) */
        adserve_snapshot_free(prev);
        prev = s;
    }
    if (getenv("ADSERVE_DECIDE") != NULL && decide(prev, atol(getenv("ADSERVE_DECIDE"))) != 0) {
        return 1;
    }
    adserve_snapshot_free(prev);

    for (k = 0; k < ADSERVE_KIND_COUNT; k++) {
        adserve_records_free(&recs[k]);
    }
    adserve_joins_free(&joins);
    free(b.data);
    return 0;
}
