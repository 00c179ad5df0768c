/*
 * Snapshot build: parse the records, join them, rank and render.
 *
 * Everything that does not depend on the request or the clock is decided
 * here, once per revision, so that serving does as little as possible.
 */

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <stdarg.h>
#include <time.h>
#include <pthread.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "adserve_snapshot.h"
#include "adserve_experiment.h"
#include "adserve_native.h"
#include "adserve_pacing.h"
#include "adserve_vast.h"


const char *const adserve_excl_names[ADSERVE_EXCL_COUNT + 1] = {
    "", "size", "bcat", "format", "duration", "mime", "skip", "linearity", "interstitial",
    "assets", "style", NULL
};


#define NONE  UINT32_MAX

/* A unit's pairs point all over the records: reading them a few ahead
 * overlaps the cache misses that bound a build after a change. */
#define PREFETCH_AHEAD  8

/* A chain of snapshots borrowing from each other (adserve_snapshot_t's
 * base) ends in a full render when it would be deeper than this, or when
 * what its builds added passes half its first snapshot (or BORROW_SLACK,
 * for a small one: a build takes 256 KiB at least): the zone holds a
 * chain, the snapshot being built and the old ones still read. */
#define BORROW_DEPTH    8
/* A build's work over several threads: at most this many parts, and a
 * join, its ranking and its keeping shared out from this many line items
 * (adserve_input_t's share_from) */
#define PARTS_MAX       16
#define JOIN_SHARED     4096
#define BORROW_SLACK    ((size_t) 4 << 20)

typedef struct {
    uint32_t     *v;
    uint32_t      n;
} idxs_t;

struct li_rec_s;
struct creative_rec_s;

/* a candidate while building: what it joins, before it is ranked */
typedef struct {
    struct li_rec_s              *li;
    struct creative_rec_s        *cr;
    uint32_t                      weight;   /* its LICA's */
    uint32_t                      reason;   /* excluded: adserve_excl_e */
} bcand_t;

/* What one build makes of a record: its parse (adserve_parsed), and the
 * references that this build resolves. */
typedef struct {
    const char                   *id;
    const adserve_parsed_t       *rec;    /* its id's length and hash */
    const adserve_parsed_unit_t  *p;
    uint32_t      parent;
    uint32_t      first_child;
    uint32_t      next_sibling;
    bcand_t      *cands;              /* grows during the build */
    uint32_t      ncands, cap;
    bcand_t      *excl;               /* targeted, but size or bcat says no; */
    uint32_t      nexcl, xcap;        /* the weight holds the reason */
    uint32_t      style;              /* its native style, or NONE */
    adserve_alloc_t *allocs;          /* its sources, each once (grows) */
    uint32_t      nallocs, acap;
    unsigned      ranked:1;           /* its cands came ranked (joins) */
    unsigned      dirty:1;            /* joined again: kept again */
} unit_rec_t;

typedef struct {
    idxs_t        units;
} placement_rec_t;

typedef struct li_rec_s {
    /* first what each of its candidates reads, copied from its parse: a
     * unit's candidates are finished without a look at their parses */
    uint32_t      snap_li;            /* index in the snapshot's lis, or NONE */
    uint8_t       tier, priority;
    int8_t        cost_type;
    uint32_t      max_cap;
    double        rate;
    adserve_str_t snap_id;            /* the id, copied into the snapshot once */
    uint64_t      id_hash;            /* the ranking's order (cand_cmp) */
    const char                   *id;
    adserve_parsed_t             *rec;    /* its slot is written */
    const adserve_parsed_li_t    *p;
    uint32_t      old_slot;           /* its index in the last snapshot
                                       * built with joins, or NONE */
    int           eligible;           /* active and its order APPROVED */
    idxs_t        include, exclude, placements;
    const adserve_target_t *target;   /* decided per request; NULL: nothing */
    unsigned      compile:1;          /* its rule, compiled when it first
                                       * takes a slot in the snapshot's lis
                                       * (a borrowed slot has it already) */
    uint32_t      first_lica;
    uint64_t      sig;                /* what it joins with (adserve_joins.h) */
    unsigned      fresh:1;            /* parsed since the last build */
    unsigned      dirty:1;            /* joined again, its kept pairs dropped */
} li_rec_t;

/* A native creative's "ad" object as units that render it alike want it
 * (adserve_parsed_unit_t's native_key, and for html mode the style and
 * the size): rendered for the first, shared by the others. */
typedef struct {
    uint64_t      key;
    uint32_t      style, w, h;
    const char   *head;
    size_t        len;
    unsigned      splices;
} native_head_t;

typedef struct creative_rec_s {
    const char   *head;               /* the response head, in the snapshot, */
    size_t        head_len;           /* rendered once, on first use */
    adserve_str_t snap_id;
    uint64_t      id_hash;            /* copied from its parse, as: */
    uint8_t       format;
    uint16_t      splices;
    unsigned      fresh:1;            /* parsed since the last build */
    const char                        *id;
    const adserve_parsed_t            *rec;
    const adserve_parsed_creative_t   *p;
    native_head_t *native;            /* NATIVE: its heads, by unit kind */
    uint32_t      nnative;
} creative_rec_t;

typedef struct {
    uint32_t      li, cr, weight;
    uint32_t      next;               /* next LICA of the same line item */
} lica_rec_t;


/* id -> index, open addressing by the ids' hashes (kept with each parse);
 * only used while building */
typedef struct {
    const char  **keys;
    uint64_t     *hashes;
    uint32_t     *vals;
    uint32_t      mask;
} idmap_t;

/* A snapshot fallback's file, read once per build (snapshot_fallback). */
#define SNAPSHOT_FILES_CACHED  64

typedef struct {
    const char         *path;
    const uint32_t     *items;
    uint32_t            n;
} snapshot_file_t;

/* The URL parts of one base (render_urls), rendered once per build: the
 * units of a base share them. Every display answer copies two of them;
 * with a copy per unit, each was a cache miss in every answer (perf: 1.2 %
 * of the workers' time at the bench's 1,000 units), and shared, they stay
 * in the cache. Bases past the cache's are rendered per unit, as before. */
#define URL_BASES_CACHED  64

typedef struct {
    const char         *base;
    adserve_str_t       impression_prefix;
    adserve_str_t       click_prefix;
    adserve_str_t       url_base_json;
    adserve_str_t       vast_base;
    adserve_str_t       vast_base_json;
} url_parts_t;

#define URL_PARTS_COPY(dst, src)                                             \
    (dst)->impression_prefix = (src)->impression_prefix;                     \
    (dst)->click_prefix = (src)->click_prefix;                               \
    (dst)->url_base_json = (src)->url_base_json;                             \
    (dst)->vast_base = (src)->vast_base;                                     \
    (dst)->vast_base_json = (src)->vast_base_json

typedef struct {
    adserve_snapshot_t *snap;
    adserve_arena_t     tmp;          /* what the build joins, freed after */
    const adserve_input_t *in;
    adserve_parsed_t  **parses[ADSERVE_KIND_COUNT]; /* of every input record;
                                       * those no slot keeps are freed after
                                       * the build */
    unit_rec_t         *units;
    placement_rec_t    *placements;
    int                *orders;       /* approved */
    li_rec_t           *lis;
    creative_rec_t     *crs;
    lica_rec_t         *licas;
    const adserve_parsed_style_t **styles;
    adserve_parsed_t  **item_ps;      /* the catalog's and the pools' parses */
    adserve_parsed_t  **pool_ps;
    adserve_parsed_t  **popular_ps;   /* the contexts' popular items */
    adserve_parsed_t  **coview_ps;    /* the co-view pools */
    adserve_parsed_t  **experiment_ps;
    const adserve_input_rec_t **unit_texts;  /* each unit's record, by its
                                       * index: its variants parse it */
    adserve_parsed_t  **variant_ps;   /* the variants' parses: freed after */
    uint32_t            nvariant_ps;
    snapshot_file_t     snapshot_files[SNAPSHOT_FILES_CACHED];  /* read so far */
    uint32_t            nsnapshot_files;
    url_parts_t         url_parts[URL_BASES_CACHED];  /* rendered so far */
    uint32_t            nurl_parts;
    uint32_t            n[ADSERVE_KIND_COUNT];
    idmap_t             map[ADSERVE_KIND_COUNT];
    adserve_target_builder_t  tb;     /* compiles targeting into the snapshot */
    const char         *public_url;
    const adserve_snapshot_t  *prev;  /* whose lis the pace map points at */
    uint32_t           *source_of;    /* a source record's index in the
                                       * snapshot's sources, or NONE */
    uint32_t           *alloc_seen;   /* per unit: the last allocation that
                                       * reached it (its index + 1) */
    adserve_parsed_t  **block_ps;     /* the blocked creatives' parses */
    adserve_joins_t    *joins;        /* the last build's, or NULL */
    int                 incremental;  /* this build joins from them */
    int                 borrow;       /* and borrows from prev (its base) */
    int                 borrow_creatives;  /* its creatives' table too */
    uint32_t            li_cap;       /* room in the snapshot's lis */
    uint8_t            *fresh[ADSERVE_KIND_COUNT];  /* per record (with
                                       * joins): parsed since the last build */
    uint32_t            nfresh[ADSERVE_KIND_COUNT];
    uint64_t            order[ADSERVE_KIND_COUNT];  /* of the records used, in
                                       * input order (with joins) */
    char               *err;
    size_t              errlen;
} build_t;


/* ---- small helpers ----------------------------------------------------- */

static uint32_t
table_size(size_t n)
{
    uint32_t  size = 16;

    while (size < n * 2) {
        size <<= 1;
    }

    return size;
}


static int
idmap_init(build_t *b, idmap_t *m, size_t n)
{
    uint32_t  size = table_size(n);

    m->keys = adserve_arena_calloc(&b->tmp, size * sizeof(char *));
    m->hashes = adserve_arena_alloc(&b->tmp, size * sizeof(uint64_t));
    m->vals = adserve_arena_alloc(&b->tmp, size * sizeof(uint32_t));
    m->mask = size - 1;

    return (m->keys && m->hashes && m->vals) ? 0 : -1;
}


/* Returns 0, or -1 when the id is already there (a duplicate record). */
static int
idmap_put(idmap_t *m, const char *key, uint64_t hash, uint32_t val)
{
    uint32_t  i = (uint32_t) hash & m->mask;

    while (m->keys[i]) {
        if (m->hashes[i] == hash && strcmp(m->keys[i], key) == 0) {
            return -1;
        }
        i = (i + 1) & m->mask;
    }

    m->keys[i] = key;
    m->hashes[i] = hash;
    m->vals[i] = val;

    return 0;
}


static uint32_t
idmap_get(const idmap_t *m, const char *key, uint64_t hash)
{
    uint32_t  i;

    if (key == NULL) {
        return NONE;
    }

    for (i = (uint32_t) hash & m->mask; m->keys[i]; i = (i + 1) & m->mask) {
        if (m->hashes[i] == hash && strcmp(m->keys[i], key) == 0) {
            return m->vals[i];
        }
    }

    return NONE;
}


static void
build_error(build_t *b, const char *fmt, ...)
{
    va_list  ap;

    va_start(ap, fmt);
    vsnprintf(b->err, b->errlen, fmt, ap);
    va_end(ap);
}


/* Resolves ids of one kind to indexes; unknown ids are dropped, since a
 * dangling reference must not stop anything else from serving. */
static int
get_idxs(build_t *b, const adserve_strs_t *s, adserve_kind_e kind, idxs_t *x)
{
    uint32_t  i, idx;

    x->v = NULL;
    x->n = 0;

    if (s->n == 0) {
        return 0;
    }

    x->v = adserve_arena_alloc(&b->tmp, s->n * sizeof(uint32_t));
    if (x->v == NULL) {
        return -1;
    }

    for (i = 0; i < s->n; i++) {
        idx = idmap_get(&b->map[kind], s->v[i],
                        s->h != NULL ? s->h[i] : adserve_hash(s->v[i], strlen(s->v[i])));
        if (idx != NONE) {
            x->v[x->n++] = idx;
        }
    }

    return 0;
}


/* ---- work over several threads ---------------------------------------- */

/* What each part of a build's shared work starts with: run_parts fills it
 * in. */
typedef struct {
    build_t            *b;
    unsigned            part, nparts;
} part_t;


/* Runs fn over n parts (an array of structs of size bytes, each starting
 * with a part_t, the rest set by the caller): parts 1.. in threads of
 * their own, part 0 on this one; a part whose thread cannot start is run
 * here, after. The parts share nothing the others write. */
static void
run_parts(build_t *b, void *(*fn)(void *), void *parts, size_t size, unsigned n)
{
    pthread_t  tids[PARTS_MAX];
    unsigned   i, started = 1;
    char      *v = parts;
    part_t    *h;

    for (i = 0; i < n; i++) {
        h = (part_t *) (v + i * size);
        h->b = b;
        h->part = i;
        h->nparts = n;
    }

    for (i = 1; i < n; i++) {
        if (pthread_create(&tids[i], NULL, fn, v + i * size) != 0) {
            break;
        }
        started++;
    }

    (void) fn(v);

    for (i = 1; i < n; i++) {
        if (i < started) {
            (void) pthread_join(tids[i], NULL);

        } else {
            (void) fn(v + i * size);
        }
    }
}


/* A part's contiguous share of n things: [*from, *to). */
static void
part_share(const part_t *h, size_t n, size_t *from, size_t *to)
{
    *from = n * h->part / h->nparts;
    *to = n * (h->part + 1) / h->nparts;
}


/* The parts a build splits its work into: the caller's choice of threads
 * (a node that serves on every core builds on them, at a lower priority;
 * a test, on one), and one when there is too little work to share. */
static unsigned
nparts(const build_t *b, size_t work, size_t least)
{
    unsigned  n = b->in->threads > 1 ? b->in->threads : 1;

    return work < least ? 1 : n > PARTS_MAX ? PARTS_MAX : n;
}


/* Line items joined from which joining, ranking and keeping are shared. */
static size_t
share_from(const build_t *b)
{
    return b->in->share_from ? b->in->share_from : JOIN_SHARED;
}


/* ---- the records, parsed, by several threads ---------------------------- */

typedef struct {
    part_t              h;
    int                 oom;
} parse_part_t;


/* Parses this part's share of the records that have no parse yet: a
 * contiguous run of each kind. Parses are independent (a record's own
 * text), so the parts share nothing but the input: each writes its own
 * records' slots and entries of b->parses. */
static void *
parse_part(void *data)
{
    parse_part_t               *pt = data;
    const adserve_input_t      *in = pt->h.b->in;
    const adserve_input_rec_t  *rec;
    adserve_parsed_t           *p;
    size_t                      i, from, to, n;
    unsigned                    k;

    for (k = 0; k < ADSERVE_KIND_COUNT; k++) {
        n = in->nrecords[k];
        part_share(&pt->h, n, &from, &to);

        for (i = from; i < to; i++) {
            rec = &in->records[k][i];

            if (rec->parsed != NULL && *rec->parsed != NULL) {
                p = *rec->parsed;

            } else {
                p = adserve_parse(k, rec->data, rec->len);
                if (p == NULL) {
                    pt->oom = 1;
                    continue;
                }

                if (rec->parsed != NULL) {
                    *rec->parsed = p;
                }
            }

            pt->h.b->parses[k][i] = p;
        }
    }

    return NULL;
}


static int
parse_all(build_t *b)
{
    parse_part_t  parts[PARTS_MAX];
    unsigned      i, n;
    size_t        k;
    int           oom = 0;

    for (k = 0; k < ADSERVE_KIND_COUNT; k++) {
        b->parses[k] = adserve_arena_calloc(&b->tmp,
                           (b->in->nrecords[k] + 1) * sizeof(adserve_parsed_t *));
        if (b->parses[k] == NULL) {
            return -1;
        }
    }

    /* from the loader, a full load comes parsed (each chunk as it came)
     * and a change has a record or two to parse: the parts then only list
     * the parses (a pointer a record); the bulk of parsing here is a
     * test's or a tool's */
    n = nparts(b, b->in->nrecords[ADSERVE_KIND_LINE_ITEMS], 1);
    memset(parts, 0, sizeof(parts));
    run_parts(b, parse_part, parts, sizeof(parse_part_t), n);

    for (i = 0; i < n; i++) {
        oom |= parts[i].oom;
    }

    return oom ? -1 : 0;
}


/* The usable records of a kind, in input order: those with an id, and a
 * unique one (the first of duplicates wins). */
static adserve_parsed_t **
parse_kind(build_t *b, const adserve_input_t *in, adserve_kind_e kind)
{
    adserve_parsed_t  **ps, *p;
    size_t              i, nrec = in->nrecords[kind];
    uint32_t            n = 0;

    ps = adserve_arena_alloc(&b->tmp, (nrec + 1) * sizeof(adserve_parsed_t *));
    if (ps == NULL || idmap_init(b, &b->map[kind], nrec) != 0) {
        return NULL;
    }

    if (b->joins != NULL) {
        b->fresh[kind] = adserve_arena_alloc(&b->tmp, nrec + 1);
        if (b->fresh[kind] == NULL) {
            return NULL;
        }
    }

    if (kind == ADSERVE_KIND_AD_UNITS) {
        b->unit_texts = adserve_arena_alloc(&b->tmp,
                            (nrec + 1) * sizeof(adserve_input_rec_t *));
        if (b->unit_texts == NULL) {
            return NULL;
        }
    }

    for (i = 0; i < nrec; i++) {
        p = b->parses[kind][i];

        if (p->id == NULL || idmap_put(&b->map[kind], p->id, p->id_hash, n) != 0) {
            /* not in this build: new to its joins if it is in a later one
             * (the duplicate that won here may go) */
            p->built = 0;
            b->snap->stats.skipped++;
            continue;
        }

        if (kind == ADSERVE_KIND_AD_UNITS) {
            b->unit_texts[n] = &in->records[kind][i];
        }

        /* built only by a build that keeps joins: another one's parses
         * would look known to them */
        if (b->joins != NULL) {
            b->fresh[kind][n] = !p->built;
            b->nfresh[kind] += !p->built;
            b->order[kind] = adserve_joins_mix(p, b->order[kind]);
            p->built = 1;
        }

        p->index = n;
        ps[n++] = p;
    }

    b->n[kind] = n;
    b->snap->stats.records[kind] = n;

    return ps;
}


static int
link_units(build_t *b, adserve_parsed_t **ps)
{
    uint32_t      i, j, steps, n = b->n[ADSERVE_KIND_AD_UNITS];
    unit_rec_t   *u;

    b->units = adserve_arena_calloc(&b->tmp, (n + 1) * sizeof(unit_rec_t));
    if (b->units == NULL) {
        return -1;
    }

    for (i = 0; i < n; i++) {
        u = &b->units[i];
        u->id = ps[i]->id;
        u->rec = ps[i];
        u->p = &ps[i]->u.unit;
        u->first_child = NONE;
        u->next_sibling = NONE;
        u->style = NONE;
        u->parent = idmap_get(&b->map[ADSERVE_KIND_AD_UNITS], u->p->parent_id,
                              u->p->parent_hash);
    }

    /* link the hierarchy: every parent is resolved; now cut cycles */
    for (i = 0; i < n; i++) {
        u = &b->units[i];

        /* bounded: a cycle above this unit (not through it) is cut when
         * one of its own members comes up */
        for (j = u->parent, steps = 0; j != NONE && steps < n;
             j = b->units[j].parent, steps++)
        {
            if (j == i) {
                u->parent = NONE;
                break;
            }
        }
    }

    for (i = 0; i < n; i++) {
        u = &b->units[i];
        if (u->parent != NONE) {
            u->next_sibling = b->units[u->parent].first_child;
            b->units[u->parent].first_child = i;
        }
    }

    return 0;
}


static int
link_placements(build_t *b, adserve_parsed_t **ps)
{
    uint32_t  i, n = b->n[ADSERVE_KIND_PLACEMENTS];

    b->placements = adserve_arena_calloc(&b->tmp, (n + 1) * sizeof(placement_rec_t));
    if (b->placements == NULL) {
        return -1;
    }

    for (i = 0; i < n; i++) {
        if (get_idxs(b, &ps[i]->u.placement.ad_unit_ids, ADSERVE_KIND_AD_UNITS,
                     &b->placements[i].units) != 0)
        {
            return -1;
        }
    }

    return 0;
}


static int
link_orders(build_t *b, adserve_parsed_t **ps)
{
    uint32_t  i, n = b->n[ADSERVE_KIND_ORDERS];

    b->orders = adserve_arena_calloc(&b->tmp, (n + 1) * sizeof(int));
    if (b->orders == NULL) {
        return -1;
    }

    for (i = 0; i < n; i++) {
        b->orders[i] = ps[i]->u.order.approved;
    }

    return 0;
}


static int
link_line_items(build_t *b, adserve_parsed_t **ps)
{
    uint32_t                    i, order, n = b->n[ADSERVE_KIND_LINE_ITEMS];
    li_rec_t                   *li;
    const adserve_parsed_li_t  *p;

    b->lis = adserve_arena_calloc(&b->tmp, (n + 1) * sizeof(li_rec_t));
    if (b->lis == NULL) {
        return -1;
    }

    for (i = 0; i < n; i++) {
        li = &b->lis[i];
        p = &ps[i]->u.li;
        li->id = ps[i]->id;
        li->id_hash = ps[i]->id_hash;
        li->rec = ps[i];
        li->p = p;
        li->first_lica = NONE;
        li->snap_li = NONE;
        li->tier = (uint8_t) p->tier;
        li->priority = (uint8_t) p->priority;
        li->cost_type = (int8_t) p->cost_type;
        li->rate = p->rate;
        li->max_cap = p->max_cap;
        li->fresh = b->fresh[ADSERVE_KIND_LINE_ITEMS] == NULL
                    || b->fresh[ADSERVE_KIND_LINE_ITEMS][i];

        /* meaningful for a parse built before only (carry_lis); set
         * again by this build's snapshot */
        li->old_slot = ps[i]->slot;
        if (b->joins != NULL) {
            ps[i]->slot = NONE;
        }

        order = idmap_get(&b->map[ADSERVE_KIND_ORDERS], p->order_id, p->order_hash);
        li->eligible = p->active && order != NONE && b->orders[order];

        if (get_idxs(b, &p->include, ADSERVE_KIND_AD_UNITS, &li->include) != 0
            || get_idxs(b, &p->exclude, ADSERVE_KIND_AD_UNITS, &li->exclude) != 0
            || get_idxs(b, &p->placements, ADSERVE_KIND_PLACEMENTS,
                        &li->placements) != 0)
        {
            return -1;
        }

        /* what only the request can decide; a rule that cannot be
         * compiled (the API refuses them) never serves */
        if (!li->eligible) {
            continue;
        }

        switch (p->rule) {
        case ADSERVE_RULE_MALFORMED:
            li->eligible = 0;
            b->snap->stats.skipped++;
            break;
        case ADSERVE_RULE_KEPT:
            li->compile = 1;
            break;
        default:
            break;
        }
    }

    return 0;
}


static int
link_creatives(build_t *b, adserve_parsed_t **ps)
{
    uint32_t  i, n = b->n[ADSERVE_KIND_CREATIVES];

    b->crs = adserve_arena_calloc(&b->tmp, (n + 1) * sizeof(creative_rec_t));
    if (b->crs == NULL) {
        return -1;
    }

    for (i = 0; i < n; i++) {
        b->crs[i].id = ps[i]->id;
        b->crs[i].rec = ps[i];
        b->crs[i].p = &ps[i]->u.creative;
        b->crs[i].id_hash = ps[i]->id_hash;
        b->crs[i].format = (uint8_t) ps[i]->u.creative.format;
        b->crs[i].splices = (uint16_t) ps[i]->u.creative.splices;
        b->crs[i].fresh = b->fresh[ADSERVE_KIND_CREATIVES] == NULL
                          || b->fresh[ADSERVE_KIND_CREATIVES][i];
    }

    return 0;
}


typedef struct {
    part_t                  h;
    adserve_parsed_t      **ps;
} lica_part_t;


/* Resolves a share of the LICAs: the two lookups of each, the bulk of
 * linking them. One that cannot serve keeps a weight of 0. */
static void *
lica_part(void *data)
{
    lica_part_t                  *lp = data;
    build_t                      *b = lp->h.b;
    const adserve_parsed_lica_t  *p;
    size_t                        i, from, to;
    uint32_t                      li, cr;

    part_share(&lp->h, b->n[ADSERVE_KIND_LICAS], &from, &to);

    for (i = from; i < to; i++) {
        p = &lp->ps[i]->u.lica;
        li = idmap_get(&b->map[ADSERVE_KIND_LINE_ITEMS], p->line_item_id,
                       p->line_item_hash);
        cr = idmap_get(&b->map[ADSERVE_KIND_CREATIVES], p->creative_id,
                       p->creative_hash);

        if (li != NONE && cr != NONE && b->lis[li].eligible && b->crs[cr].p->approved) {
            b->licas[i].li = li;
            b->licas[i].cr = cr;
            b->licas[i].weight = p->weight;
        }
    }

    return NULL;
}


/* Each line item's LICAs, resolved in shares over the build's threads,
 * then chained in order on this one. */
static int
link_licas(build_t *b, adserve_parsed_t **ps)
{
    lica_part_t   parts[PARTS_MAX];
    uint32_t      i, n = b->n[ADSERVE_KIND_LICAS];
    unsigned      k, np;
    lica_rec_t   *l;
    li_rec_t     *li;

    b->licas = adserve_arena_calloc(&b->tmp, (n + 1) * sizeof(lica_rec_t));
    if (b->licas == NULL) {
        return -1;
    }

    np = nparts(b, n, share_from(b));

    for (k = 0; k < np; k++) {
        parts[k].ps = ps;
    }

    run_parts(b, lica_part, parts, sizeof(lica_part_t), np);

    for (i = 0; i < n; i++) {
        l = &b->licas[i];
        if (l->weight == 0) {
            continue;
        }

        li = &b->lis[l->li];
        l->next = li->first_lica;
        li->first_lica = i;

        /* what the line item joins with: a creative parsed since the last
         * build may sit where an old one was, so it is joined again */
        li->sig += adserve_joins_mix(b->crs[l->cr].rec, l->weight);
        li->dirty |= b->crs[l->cr].fresh;
    }

    return 0;
}


static int
link_styles(build_t *b, adserve_parsed_t **ps)
{
    uint32_t  i, n = b->n[ADSERVE_KIND_NATIVE_STYLES];

    b->styles = adserve_arena_calloc(&b->tmp, (n + 1) * sizeof(adserve_parsed_style_t *));
    if (b->styles == NULL) {
        return -1;
    }

    for (i = 0; i < n; i++) {
        b->styles[i] = &ps[i]->u.style;
    }

    return 0;
}


/* each unit's style; the API keeps one link per unit, a second one found
 * here (written past it) loses to the first */
static int
link_unit_styles(build_t *b, adserve_parsed_t **ps)
{
    const adserve_parsed_unit_style_t  *l;
    uint32_t                            i, u, st;

    for (i = 0; i < b->n[ADSERVE_KIND_AD_UNIT_NATIVE_STYLES]; i++) {
        l = &ps[i]->u.unit_style;
        u = idmap_get(&b->map[ADSERVE_KIND_AD_UNITS], l->ad_unit_id, l->ad_unit_hash);
        st = idmap_get(&b->map[ADSERVE_KIND_NATIVE_STYLES], l->native_style_id,
                       l->native_style_hash);

        if (u != NONE && st != NONE && b->units[u].style == NONE) {
            b->units[u].style = st;
        }
    }

    return 0;
}


/* the catalog and the pools: tabled after the join (build_catalog) */
static int
link_items(build_t *b, adserve_parsed_t **ps)
{
    b->item_ps = ps;
    return 0;
}


static int
link_pools(build_t *b, adserve_parsed_t **ps)
{
    b->pool_ps = ps;
    return 0;
}


static int
link_popular(build_t *b, adserve_parsed_t **ps)
{
    b->popular_ps = ps;
    return 0;
}


static int
link_coview(build_t *b, adserve_parsed_t **ps)
{
    b->coview_ps = ps;
    return 0;
}


static int
link_experiments(build_t *b, adserve_parsed_t **ps)
{
    b->experiment_ps = ps;
    return 0;
}


/* The settings' public URL replaces adserve_public_url as the base of the
 * event URLs each unit renders (an ad unit's ext.public_url still wins);
 * their currency is the bids'. */
static int
link_settings(build_t *b, adserve_parsed_t **ps)
{
    const char  *cur = ADSERVE_CURRENCY_DEFAULT;
    uint32_t     i;

    for (i = 0; i < b->n[ADSERVE_KIND_SETTINGS]; i++) {
        if (ps[i]->id == NULL || strcmp(ps[i]->id, ADSERVE_SETTINGS_ID) != 0) {
            continue;
        }
        if (ps[i]->u.settings.public_url != NULL) {
            b->public_url = ps[i]->u.settings.public_url;
        }
        if (ps[i]->u.settings.currency >= 0) {
            cur = adserve_currency_names[ps[i]->u.settings.currency];
        }
    }

    /* copied: a snapshot outlives a reload, this module's literals not */
    snprintf(b->snap->currency, sizeof(b->snap->currency), "%s", cur);

    return 0;
}


/* External demand's blocks, parsed and kept with their texts
 * (adserve_records): what the auction checks bids against is its step
 * (README "External demand"). */
static int
link_blocks(build_t *b, adserve_parsed_t **ps)
{
    b->block_ps = ps;
    return 0;
}


/* The usable sources (enabled, a valid endpoint, a format), copied into
 * the snapshot; source_of maps each record to its row. */
static int
link_sources(build_t *b, adserve_parsed_t **ps)
{
    adserve_arena_t                *a = &b->snap->arena;
    const adserve_parsed_source_t  *p;
    adserve_source_t               *s;
    uint32_t                        i, n = b->n[ADSERVE_KIND_AD_SOURCES];

    b->source_of = adserve_arena_alloc(&b->tmp, (n + 1) * sizeof(uint32_t));
    b->snap->sources = adserve_arena_calloc(a, (n + 1) * sizeof(adserve_source_t));
    if (b->source_of == NULL || b->snap->sources == NULL) {
        return -1;
    }

    for (i = 0; i < n; i++) {
        p = &ps[i]->u.source;
        b->source_of[i] = NONE;
        if (p->endpoint == NULL || p->formats == 0) {
            continue;
        }

        s = &b->snap->sources[b->snap->nsources];
        s->id.len = ps[i]->id_len;
        s->id.data = adserve_arena_memdup(a, ps[i]->id, ps[i]->id_len);
        s->hash = ps[i]->id_hash;
        s->endpoint.len = strlen(p->endpoint);
        s->endpoint.data = adserve_arena_memdup(a, p->endpoint, s->endpoint.len);
        /* copied even when empty: the snapshot outlives a reload, and a
         * literal of this module's may be elsewhere in the next one */
        s->seat.len = p->seat != NULL ? strlen(p->seat) : 0;
        s->seat.data = adserve_arena_memdup(a, p->seat != NULL ? p->seat : "", s->seat.len + 1);
        if (s->id.data == NULL || s->endpoint.data == NULL || s->seat.data == NULL) {
            return -1;
        }
        s->tmax_ms = p->tmax_ms;
        s->qps_limit = p->qps_limit;
        s->formats = p->formats;
        s->floor = p->floor;
        s->adjustment = p->adjustment;
        b->source_of[i] = b->snap->nsources++;
    }

    return 0;
}


/* A source's share of unit u: a source reached twice (the unit's own
 * allocation and its path's, say) is asked once, at the larger share. */
static int
unit_alloc(unit_rec_t *u, uint32_t source, double share)
{
    adserve_alloc_t  *v;
    uint32_t          i, size;

    for (i = 0; i < u->nallocs; i++) {
        if (u->allocs[i].source == source) {
            u->allocs[i].share = share > u->allocs[i].share ? share : u->allocs[i].share;
            return 0;
        }
    }

    if (u->nallocs == u->acap) {
        size = u->acap ? u->acap * 2 : 4;
        v = realloc(u->allocs, size * sizeof(adserve_alloc_t));
        if (v == NULL) {
            return -1;
        }
        u->allocs = v;
        u->acap = size;
    }

    u->allocs[u->nallocs].source = source;
    u->allocs[u->nallocs++].share = share;
    return 0;
}


/* The allocation's source on unit u and, for a path or a placement, on
 * every unit under it; stamp keeps a unit from taking it twice. */
static int
alloc_subtree(build_t *b, uint32_t u, uint32_t stamp, uint32_t source, double share,
    int descend)
{
    uint32_t  c;

    if (b->alloc_seen[u] == stamp) {
        return 0;
    }
    b->alloc_seen[u] = stamp;

    if (unit_alloc(&b->units[u], source, share) != 0) {
        return -1;
    }

    for (c = descend ? b->units[u].first_child : NONE; c != NONE; c = b->units[c].next_sibling) {
        if (alloc_subtree(b, c, stamp, source, share, 1) != 0) {
            return -1;
        }
    }

    return 0;
}


/* Each allocation of a usable source and a share above 0, on the units it
 * names: a unit, a path (the unit and those under it), or a placement
 * (its units, each with those under it, as line items target them). */
static int
link_allocations(build_t *b, adserve_parsed_t **ps)
{
    const adserve_parsed_allocation_t  *a;
    uint32_t                            i, j, n, src, t;
    const idxs_t                       *units;

    n = b->n[ADSERVE_KIND_ALLOCATIONS];
    b->alloc_seen = adserve_arena_calloc(&b->tmp,
                        (b->n[ADSERVE_KIND_AD_UNITS] + 1) * sizeof(uint32_t));
    if (b->alloc_seen == NULL) {
        return -1;
    }

    for (i = 0; i < n; i++) {
        a = &ps[i]->u.allocation;
        src = idmap_get(&b->map[ADSERVE_KIND_AD_SOURCES], a->ad_source_id, a->ad_source_hash);
        if (a->target < 0 || a->share <= 0 || src == NONE || b->source_of[src] == NONE) {
            continue;
        }
        src = b->source_of[src];

        if (a->target == ADSERVE_ALLOC_PLACEMENT) {
            t = idmap_get(&b->map[ADSERVE_KIND_PLACEMENTS], a->target_id, a->target_hash);
            units = t != NONE ? &b->placements[t].units : NULL;
            for (j = 0; units != NULL && j < units->n; j++) {
                if (alloc_subtree(b, units->v[j], i + 1, src, a->share, 1) != 0) {
                    return -1;
                }
            }
            continue;
        }

        t = idmap_get(&b->map[ADSERVE_KIND_AD_UNITS], a->target_id, a->target_hash);
        if (t != NONE
            && alloc_subtree(b, t, i + 1, src, a->share, a->target == ADSERVE_ALLOC_PATH) != 0)
        {
            return -1;
        }
    }

    return 0;
}


/* A rendered part of the unit's bid requests into the snapshot (NULL
 * stays empty). */
static int
rtb_copy(build_t *b, const char *text, adserve_str_t *out)
{
    if (text == NULL) {
        return 0;
    }

    out->len = strlen(text);
    out->data = adserve_arena_memdup(&b->snap->arena, text, out->len + 1);

    return out->data != NULL ? 0 : -1;
}


/* A unit with allocations: the parts of its bid requests, rendered by its
 * parse (a variant's from its own, overrides and all), and its user-agent
 * keywords, the non-empty ones. */
static int
unit_rtb(build_t *b, const unit_rec_t *u, adserve_unit_t *out)
{
    const adserve_strs_t  *kw = &u->p->app_keywords;
    adserve_str_t         *v;
    uint32_t               i, n = 0;

    if (out->nallocs == 0) {
        return 0;
    }

    if (rtb_copy(b, u->p->rtb_imp, &out->rtb_imp) != 0
        || rtb_copy(b, u->p->rtb_site, &out->rtb_site) != 0
        || rtb_copy(b, u->p->rtb_app[0], &out->rtb_app[0]) != 0
        || rtb_copy(b, u->p->rtb_app[1], &out->rtb_app[1]) != 0)
    {
        return -1;
    }

    v = kw->n ? adserve_arena_alloc(&b->snap->arena, kw->n * sizeof(adserve_str_t)) : NULL;
    if (kw->n && v == NULL) {
        return -1;
    }

    for (i = 0; i < kw->n && n < UINT8_MAX; i++) {
        if (kw->v[i][0] != '\0' && rtb_copy(b, kw->v[i], &v[n++]) != 0) {
            return -1;
        }
    }

    out->app_keywords = v;
    out->napp_keywords = (uint8_t) n;
    return 0;
}


/* Whether a blocked creative's ad unit or source (NULL: any) is id. */
static int
block_names(const char *want, const char *id, size_t len)
{
    return want == NULL || (strlen(want) == len && memcmp(want, id, len) == 0);
}


/* Whether a block's ad unit (NULL: any) is u or one of its ancestors: a
 * block holds on the unit it names and every unit under it. */
static int
block_covers(build_t *b, const char *want, const unit_rec_t *u)
{
    uint32_t  k, depth;

    if (want == NULL || strcmp(want, u->id) == 0) {
        return 1;
    }

    for (k = u->parent, depth = 0; k != NONE && depth < b->n[ADSERVE_KIND_AD_UNITS];
         k = b->units[k].parent, depth++)
    {
        if (strcmp(want, b->units[k].id) == 0) {
            return 1;
        }
    }

    return 0;
}


/* What the bids of unit u from a's source are checked against: the unit's
 * bcat as categories, and the blocked creatives that name the unit (or an
 * ancestor) or none and the source or none; and its bid requests' bcat and
 * badv. */
static int
alloc_blocks(build_t *b, const unit_rec_t *u, adserve_alloc_t *a)
{
    const adserve_parsed_block_t  *p;
    const adserve_source_t        *src = &b->snap->sources[a->source];
    adserve_rtb_block_t           *v;
    uint32_t                       i, n = 0, nb = b->n[ADSERVE_KIND_BLOCKED_CREATIVES];
    size_t                         len;
    char                          *json;

    v = adserve_arena_alloc(&b->snap->arena,
                            (u->p->bcat.n + nb + 1) * sizeof(adserve_rtb_block_t));
    if (v == NULL) {
        return -1;
    }

    for (i = 0; i < u->p->bcat.n; i++) {
        v[n].kind = ADSERVE_BLOCK_CAT;
        v[n].value.data = u->p->bcat.v[i];
        v[n++].value.len = strlen(u->p->bcat.v[i]);
    }

    for (i = 0; i < nb; i++) {
        p = &b->block_ps[i]->u.block;
        if (p->kind < 0 || p->value == NULL
            || !block_covers(b, p->ad_unit_id, u)
            || !block_names(p->ad_source_id, src->id.data, src->id.len))
        {
            continue;
        }
        v[n].kind = (uint8_t) p->kind;
        v[n].value.data = p->value;
        v[n++].value.len = strlen(p->value);
    }

    /* the values into the snapshot: the parses are not kept with it */
    for (i = 0; i < n; i++) {
        v[i].value.data = adserve_arena_memdup(&b->snap->arena, v[i].value.data,
                                               v[i].value.len + 1);
        if (v[i].value.data == NULL) {
            return -1;
        }
    }

    json = adserve_rtb_render_blocks(v, n, &len);
    if (json == NULL) {
        return -1;
    }
    a->blocks_json.len = len;
    a->blocks_json.data = adserve_arena_memdup(&b->snap->arena, json, len + 1);
    free(json);

    a->blocks = v;
    a->nblocks = n;

    return a->blocks_json.data != NULL ? 0 : -1;
}


/* The unit's counter id of a's source: "{unit id}/{source id}". */
static int
alloc_counter(build_t *b, const unit_rec_t *u, adserve_alloc_t *a)
{
    const adserve_source_t  *src = &b->snap->sources[a->source];
    size_t                   ulen = strlen(u->id);
    char                    *id;

    id = adserve_arena_alloc(&b->snap->arena, ulen + 1 + src->id.len + 1);
    if (id == NULL) {
        return -1;
    }

    memcpy(id, u->id, ulen);
    id[ulen] = ADSERVE_SOURCE_SEP;
    memcpy(id + ulen + 1, src->id.data, src->id.len);
    id[ulen + 1 + src->id.len] = '\0';

    a->counter_id.data = id;
    a->counter_id.len = ulen + 1 + src->id.len;
    a->counter_hash = adserve_hash(id, a->counter_id.len);

    return 0;
}


/* What a native bid must answer on the unit: its asset requests' ids,
 * kinds and whether each is required (none when it takes no native bid). */
static int
unit_bid_native(build_t *b, const unit_rec_t *u, adserve_unit_t *out)
{
    adserve_rtb_native_req_t  *v;
    uint32_t                   i, n = u->p->nnative_reqs;

    if (!(u->p->bid_formats & (1u << ADSERVE_FORMAT_NATIVE))) {
        return 0;
    }

    n = n < ADSERVE_RTB_NATIVE_ASSETS_MAX ? n : ADSERVE_RTB_NATIVE_ASSETS_MAX;
    v = adserve_arena_alloc(&b->snap->arena, n * sizeof(adserve_rtb_native_req_t));
    if (v == NULL) {
        return -1;
    }

    for (i = 0; i < n; i++) {
        v[i].id = u->p->native_reqs[i].id;
        v[i].kind = u->p->native_reqs[i].kind;
        v[i].required = u->p->native_reqs[i].required;
    }

    out->native_reqs = v;
    out->nnative_reqs = (uint8_t) n;
    return 0;
}


/* A unit's allocations into the snapshot: the sources of a format it has
 * (the imp carries only those), at most UINT8_MAX, each with its blocks
 * and counter. */
static int
unit_allocs(build_t *b, const unit_rec_t *u, adserve_unit_t *out)
{
    adserve_alloc_t  *v;
    uint32_t          i, n = 0;

    if (u->nallocs == 0) {
        return 0;
    }

    v = adserve_arena_calloc(&b->snap->arena, u->nallocs * sizeof(adserve_alloc_t));
    if (v == NULL) {
        return -1;
    }

    for (i = 0; i < u->nallocs && n < UINT8_MAX; i++) {
        if (!(b->snap->sources[u->allocs[i].source].formats & u->p->bid_formats)) {
            continue;
        }
        v[n].source = u->allocs[i].source;
        v[n].share = u->allocs[i].share;
        if (alloc_blocks(b, u, &v[n]) != 0 || alloc_counter(b, u, &v[n]) != 0) {
            return -1;
        }
        n++;
    }

    out->allocs = v;
    out->nallocs = (uint8_t) n;
    out->formats = (uint8_t) u->p->bid_formats;

    if (n > 0 && unit_bid_native(b, u, out) != 0) {
        return -1;
    }

    if (u->p->nsizes > 0) {
        out->bid_w = (uint16_t) u->p->sizes[0].w;
        out->bid_h = (uint16_t) u->p->sizes[0].h;
    }

    return 0;
}


static const adserve_pool_t *pool_find(const adserve_pool_t *pools, uint32_t mask,
    const char *id, size_t len);


/* ---- joining ----------------------------------------------------------- */

static int
has_str(const adserve_strs_t *s, const char *v)
{
    uint32_t  i;

    for (i = 0; i < s->n; i++) {
        if (strcmp(s->v[i], v) == 0) {
            return 1;
        }
    }

    return 0;
}


/* A video creative on a video placement: 0, or why not (adserve_excl_e). */
static int
video_fits(const adserve_parsed_unit_t *u, const adserve_parsed_creative_t *c)
{
    double    ua, ca;
    uint32_t  i;
    int       ok;

    if (u->linear == 2) {                /* ours are linear ads */
        return ADSERVE_EXCL_LINEARITY;
    }

    if (u->nrqddurs > 0) {
        for (ok = 0, i = 0; i < u->nrqddurs; i++) {
            ok |= u->rqddurs[i] == c->duration;
        }

    } else {
        ok = c->duration >= u->mindur && (u->maxdur == 0 || c->duration <= u->maxdur);
    }

    if (!ok) {
        return ADSERVE_EXCL_DURATION;
    }

    /* a wrapper's files are the tag's: the player asked for them */
    if (u->video_mimes.n > 0 && c->mimes.n > 0) {
        for (ok = 0, i = 0; i < c->mimes.n; i++) {
            ok |= has_str(&u->video_mimes, c->mimes.v[i]);
        }

        if (!ok) {
            return ADSERVE_EXCL_MIME;
        }
    }

    if (c->skip_offset >= 0 && !u->skip) {
        return ADSERVE_EXCL_SKIP;
    }

    /* Choice: "close" is the shape: players scale a video to their size,
     * and a tenth more or less of aspect ratio shows no bars */
    ua = u->video.h > 0 ? u->video.w / u->video.h : 0;
    ca = c->size.h > 0 ? c->size.w / c->size.h : 0;

    return ua > 0 && ca > 0 && fabs(ca - ua) <= ua / 10 ? 0 : ADSERVE_EXCL_SIZE;
}


/* A native creative on a native placement: it fills every required
 * asset request, and one at least; in html mode the unit has a valid
 * style, which alone decides what shows when no asset is asked for. */
static int
native_fits(build_t *b, const unit_rec_t *ur, const adserve_parsed_creative_t *c)
{
    const adserve_parsed_unit_t  *u = ur->p;
    uint8_t                       pick[ADSERVE_NATIVE_ASSETS_MAX];
    int                           html = u->native_mode == ADSERVE_RENDER_HTML;

    if (html && (ur->style == NONE || b->styles[ur->style]->html == NULL)) {
        return ADSERVE_EXCL_STYLE;
    }

    if (adserve_native_match(u->native_reqs, u->nnative_reqs, c->assets, c->nassets, pick)
        >= 0 && !(html && u->nnative_reqs == 0))
    {
        return ADSERVE_EXCL_ASSETS;
    }

    return 0;
}


/* Whether a creative can fill the ad unit: 0, or why not. Display at the
 * unit's own display size only: ad_unit_sizes are targeting metadata (the
 * spec), not sizes it draws. */
static int
creative_fits(build_t *b, const unit_rec_t *ur, const adserve_parsed_creative_t *c)
{
    const adserve_parsed_unit_t  *u = ur->p;

    if (!(u->formats & (1u << c->format))) {
        return ADSERVE_EXCL_FORMAT;
    }

    /* an interstitial takes the screen: only creatives made for that, at
     * its own (full-screen) size */
    if (u->instl && !c->interstitial) {
        return ADSERVE_EXCL_INTERSTITIAL;
    }

    if (c->format == ADSERVE_FORMAT_VIDEO) {
        return video_fits(u, c);
    }

    if (c->format == ADSERVE_FORMAT_NATIVE) {
        return native_fits(b, ur, c);
    }

    return u->display.w == c->size.w && u->display.h == c->size.h ? 0 : ADSERVE_EXCL_SIZE;
}


/* IAB categories are hierarchical: blocking "IAB7" blocks "IAB7-39" too. */
static int
category_blocked(const adserve_strs_t *bcat, const adserve_strs_t *cats)
{
    uint32_t  i, j;
    size_t    n;

    for (i = 0; i < bcat->n; i++) {
        n = strlen(bcat->v[i]);

        for (j = 0; j < cats->n; j++) {
            if (strncmp(bcat->v[i], cats->v[j], n) == 0
                && (cats->v[j][n] == '\0' || cats->v[j][n] == '-'))
            {
                return 1;
            }
        }
    }

    return 0;
}


/* One thread's share of joining line items to units: the line items
 * [from, to), its own marks, and where its pairs go. Part 0 writes the
 * units' own pairs; each other part a shadow of the units of its own,
 * appended after (join_merge), so that every unit's pairs come in line
 * item order, as when one thread joins them all. */
typedef struct {
    part_t              h;
    unit_rec_t         *dst;          /* b->units, or a shadow */
    uint32_t           *stamp;        /* per unit: last line item that included it */
    uint32_t           *xstamp;       /* per unit: last line item that excluded it */
    uint32_t           *marked;       /* the units the line item included */
    uint32_t            nmarked;
    int                 dirty;        /* those marked dirty only */
    size_t              joined;
    int                 rc;
} join_part_t;


/* Marks unit u and its whole subtree with stamp; included units are also
 * listed in jp->marked, so a line item visits the units it targets and
 * not the whole inventory. */
static void
mark_subtree(join_part_t *jp, uint32_t *marks, uint32_t u, uint32_t stamp)
{
    const unit_rec_t  *units = jp->h.b->units;
    uint32_t           c;

    if (marks[u] == stamp) {
        return;                      /* already there through another root */
    }

    marks[u] = stamp;

    if (marks == jp->stamp) {
        jp->marked[jp->nmarked++] = u;
    }

    for (c = units[u].first_child; c != NONE; c = units[c].next_sibling) {
        mark_subtree(jp, marks, c, stamp);
    }
}


static int
push_bcand(bcand_t **v, uint32_t *n, uint32_t *cap, li_rec_t *li, creative_rec_t *cr,
    uint32_t weight, uint32_t reason)
{
    bcand_t   *c;
    uint32_t   size;

    if (*n == *cap) {
        size = *cap ? *cap * 2 : 8;
        c = realloc(*v, size * sizeof(bcand_t));
        if (c == NULL) {
            return -1;
        }
        *v = c;
        *cap = size;
    }

    c = &(*v)[(*n)++];
    c->li = li;
    c->cr = cr;
    c->weight = weight;
    c->reason = reason;

    return 0;
}


/* A creative of a line item that targets unit u: a candidate, or, for the
 * explainer, one that cannot serve there and why; into dst's pairs (u's
 * own, or a part's shadow of it). */
static int
add_pair(build_t *b, const unit_rec_t *u, unit_rec_t *dst, li_rec_t *li,
    creative_rec_t *cr, uint32_t weight)
{
    int  why = creative_fits(b, u, cr->p);

    dst->ranked = 0;
    dst->dirty = 1;

    if (why == 0 && category_blocked(&u->p->bcat, &cr->p->categories)) {
        why = ADSERVE_EXCL_BCAT;
    }

    return why ? push_bcand(&dst->excl, &dst->nexcl, &dst->xcap, li, cr, weight,
                            (uint32_t) why)
               : push_bcand(&dst->cands, &dst->ncands, &dst->cap, li, cr, weight, 0);
}


static int
join_line_item(join_part_t *jp, uint32_t i)
{
    build_t         *b = jp->h.b;
    li_rec_t        *li = &b->lis[i];
    lica_rec_t      *l;
    unit_rec_t      *u;
    uint32_t         k, j, m, stamp = i + 1;

    jp->nmarked = 0;

    for (k = 0; k < li->include.n; k++) {
        mark_subtree(jp, jp->stamp, li->include.v[k], stamp);
    }

    for (k = 0; k < li->placements.n; k++) {
        for (j = 0; j < b->placements[li->placements.v[k]].units.n; j++) {
            mark_subtree(jp, jp->stamp, b->placements[li->placements.v[k]].units.v[j],
                         stamp);
        }
    }

    for (k = 0; k < li->exclude.n; k++) {
        mark_subtree(jp, jp->xstamp, li->exclude.v[k], stamp);
    }

    for (m = 0; m < jp->nmarked; m++) {
        j = jp->marked[m];
        u = &b->units[j];

        if (jp->xstamp[j] == stamp || !u->p->active) {
            continue;
        }

        for (k = li->first_lica; k != NONE; k = l->next) {
            l = &b->licas[k];

            if (add_pair(b, u, &jp->dst[j], li, &b->crs[l->cr], l->weight) != 0) {
                return -1;
            }
        }
    }

    return 0;
}


static void *
join_part(void *data)
{
    join_part_t  *jp = data;
    li_rec_t     *li;
    size_t        i, from, to;

    part_share(&jp->h, jp->h.b->n[ADSERVE_KIND_LINE_ITEMS], &from, &to);

    for (i = from; i < to; i++) {
        li = &jp->h.b->lis[i];

        if ((!jp->dirty || li->dirty) && li->eligible && li->first_lica != NONE) {
            if (join_line_item(jp, (uint32_t) i) != 0) {
                jp->rc = -1;
                return NULL;
            }
            jp->joined++;
        }
    }

    return NULL;
}


/* Pairs x (nx) after those of *v (*n), which then fill it: 0, or -1 out
 * of memory (*v as it was). */
static int
append_pairs(bcand_t **v, uint32_t *n, uint32_t *cap, const bcand_t *x, uint32_t nx)
{
    bcand_t  *w;

    if (nx == 0) {
        return 0;
    }

    w = realloc(*v, (*n + nx) * sizeof(bcand_t));
    if (w == NULL) {
        return -1;
    }

    memcpy(w + *n, x, nx * sizeof(bcand_t));
    *v = w;
    *n += nx;
    *cap = *n;

    return 0;
}


/* A part's pairs after those of the parts before it, unit by unit. */
static int
join_merge(build_t *b, unit_rec_t *shadow)
{
    unit_rec_t  *u, *x;
    uint32_t     i;
    int          rc = 0;

    for (i = 0; i < b->n[ADSERVE_KIND_AD_UNITS]; i++) {
        u = &b->units[i];
        x = &shadow[i];

        if (rc == 0
            && (append_pairs(&u->cands, &u->ncands, &u->cap, x->cands, x->ncands) != 0
                || append_pairs(&u->excl, &u->nexcl, &u->xcap, x->excl, x->nexcl) != 0))
        {
            rc = -1;
        }

        if (x->dirty) {
            u->ranked = 0;
            u->dirty = 1;
        }

        free(x->cands);
        free(x->excl);
    }

    return rc;
}


/* Joins every line item that can serve, or those marked dirty only: all
 * of them in contiguous shares over the build's threads. */
static int
join_lis(build_t *b, int dirty)
{
    join_part_t  parts[PARTS_MAX];
    uint32_t     nunits = b->n[ADSERVE_KIND_AD_UNITS], nlis = b->n[ADSERVE_KIND_LINE_ITEMS];
    unsigned     i, n;
    int          rc = 0;

    n = dirty ? 1 : nparts(b, nlis, share_from(b));

    for (i = 0; i < n; i++) {
        memset(&parts[i], 0, sizeof(join_part_t));
        parts[i].dirty = dirty;
        parts[i].dst = i == 0 ? b->units
                       : adserve_arena_calloc(&b->tmp, (nunits + 1) * sizeof(unit_rec_t));
        parts[i].stamp = adserve_arena_calloc(&b->tmp, (nunits + 1) * sizeof(uint32_t));
        parts[i].xstamp = adserve_arena_calloc(&b->tmp, (nunits + 1) * sizeof(uint32_t));
        parts[i].marked = adserve_arena_alloc(&b->tmp, (nunits + 1) * sizeof(uint32_t));
        if (parts[i].dst == NULL || parts[i].stamp == NULL || parts[i].xstamp == NULL
            || parts[i].marked == NULL)
        {
            return -1;
        }
    }

    run_parts(b, join_part, parts, sizeof(join_part_t), n);

    /* in order; each merge frees its shadow's pairs, after a failure too */
    for (i = 0; i < n; i++) {
        rc |= parts[i].rc;
        if (i > 0 && join_merge(b, parts[i].dst) != 0) {
            rc = -1;
        }
        b->snap->stats.joined += parts[i].joined;
    }

    return rc;
}


/* ---- joining again only what changed (adserve_joins.h) ----------------- */

/* The kept joins stand for this build's but for line items, creatives and
 * LICAs: the units, their hierarchy and styles, the placements and the
 * orders are those they were joined from, the same parses in the same
 * order (which decides, say, the first of two style links of a unit), none
 * parsed since (a change to one of those joins everything: they are
 * rarely written). */
static int
joins_usable(build_t *b)
{
    static const adserve_kind_e  kinds[] = {
        ADSERVE_KIND_AD_UNITS, ADSERVE_KIND_PLACEMENTS, ADSERVE_KIND_ORDERS,
        ADSERVE_KIND_NATIVE_STYLES, ADSERVE_KIND_AD_UNIT_NATIVE_STYLES
    };
    uint32_t                     k;

    for (k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
        if (b->nfresh[kinds[k]] != 0 || b->n[kinds[k]] != b->joins->n[kinds[k]]
            || b->order[kinds[k]] != b->joins->order[kinds[k]])
        {
            return 0;
        }
    }

    return b->joins->valid;
}


/* A unit's kept pairs, less those of the line items gone: those left are
 * of line items unchanged since, whose parses and creatives' parses are the
 * ones kept, and they stay ranked. */
static int
load_unit(build_t *b, unit_rec_t *u, const adserve_joined_unit_t *ju)
{
    const adserve_joined_t  *p;
    uint32_t                 i;
    bcand_t                 *c;

    u->ncands = u->nexcl = 0;

    if (ju->ncands) {
        u->cands = malloc(ju->ncands * sizeof(bcand_t));
        if (u->cands == NULL) {
            return -1;
        }
        u->cap = ju->ncands;
    }

    if (ju->nexcl) {
        u->excl = malloc(ju->nexcl * sizeof(bcand_t));
        if (u->excl == NULL) {
            return -1;
        }
        u->xcap = ju->nexcl;
    }

    for (i = 0; i < ju->ncands + ju->nexcl; i++) {
        p = &ju->pairs[i];

        if (i + PREFETCH_AHEAD < ju->ncands + ju->nexcl) {
            adserve_prefetch(p[PREFETCH_AHEAD].li);
            adserve_prefetch(p[PREFETCH_AHEAD].cr);
        }

        if (adserve_joins_gone(b->joins, p->li)) {
            u->dirty = 1;
            continue;
        }

        c = i < ju->ncands ? &u->cands[u->ncands++] : &u->excl[u->nexcl++];
        c->li = &b->lis[p->li->index];
        c->cr = &b->crs[p->cr->index];
        c->weight = p->weight;
        c->reason = p->reason;
    }

    u->ranked = 1;

    return 0;
}


/* Which line items join again: those parsed since, or joining with a
 * creative parsed since, or whose signature moved (a LICA or a creative
 * gone, a weight, an order's approval...); and which kept pairs go: theirs,
 * and those of line items gone. Returns the number to join again; -1
 * when the kept joins do not know a line item they should (join all), -2
 * out of memory. */
static int64_t
join_dirty(build_t *b)
{
    adserve_joins_t      *j = b->joins;
    adserve_joined_li_t  *e;
    li_rec_t             *li;
    uint32_t              i, ndirty = 0, nold = 0, found = 0;

    for (i = 0; i < b->n[ADSERVE_KIND_LINE_ITEMS]; i++) {
        li = &b->lis[i];

        if (li->fresh) {
            li->dirty = 1;

        } else {
            e = adserve_joins_li(j->lis, j->lis_mask, li->rec);
            if (e == NULL) {
                return -1;
            }
            e->seen = j->gen;
            found++;
            li->dirty |= e->sig != li->sig;
            nold += li->dirty;
        }

        ndirty += li->dirty;
    }

    if (adserve_joins_gone_reset(j, nold + j->nlis - found) != 0) {
        return -2;
    }

    for (i = 0; nold && i < b->n[ADSERVE_KIND_LINE_ITEMS]; i++) {
        if (b->lis[i].dirty && !b->lis[i].fresh) {
            adserve_joins_gone_add(j, b->lis[i].rec);
        }
    }

    for (i = 0; found < j->nlis && i <= j->lis_mask; i++) {
        if (j->lis[i].li != NULL && j->lis[i].seen != j->gen) {
            adserve_joins_gone_add(j, j->lis[i].li);    /* changed, or deleted */
        }
    }

    return ndirty;
}


static int
join_changed(build_t *b)
{
    unit_rec_t                   *u;
    const adserve_joined_unit_t  *ju;
    uint32_t                      i;
    int64_t                       ndirty;

    b->joins->gen++;

    ndirty = join_dirty(b);
    if (ndirty == -2) {
        return -1;
    }

    /* a batch as large as an eighth of the line items: joining them all
     * costs less than dropping and merging */
    if (ndirty < 0 || ndirty > b->n[ADSERVE_KIND_LINE_ITEMS] / 8) {
        b->incremental = 0;
        return join_lis(b, 0);
    }

    for (i = 0; i < b->n[ADSERVE_KIND_AD_UNITS]; i++) {
        u = &b->units[i];
        ju = u->p->active ? adserve_joins_unit(b->joins, u->rec) : NULL;

        if (ju != NULL && load_unit(b, u, ju) != 0) {
            return -1;
        }
    }

    return join_lis(b, 1);
}


/* Joins the line items to the units: only what changed when the last
 * build's joins stand for this one's. */
static int
join(build_t *b)
{
    uint32_t  i;

    for (i = 0; i < b->n[ADSERVE_KIND_LINE_ITEMS]; i++) {
        b->lis[i].sig += adserve_joins_mix(b->lis[i].rec, b->lis[i].eligible);
    }

    b->incremental = b->joins != NULL && joins_usable(b);

    return b->incremental ? join_changed(b) : join_lis(b, 0);
}


/* Whether this build borrows from prev (adserve_snapshot_t's base): it
 * joined what changed since the build that made prev, no experiment
 * changed (a variant may be all that serves a line item: its slot would
 * stay), and the chain is neither too deep nor too large: the zone must
 * still hold, beside it, the whole render that ends it and one more
 * snapshot read meanwhile, or the chain could never end. */
static int
borrowable(build_t *b)
{
    const adserve_snapshot_t  *p = b->prev;
    adserve_kind_e             x = ADSERVE_KIND_EXPERIMENTS;

    return b->incremental && p != NULL && b->joins->stamp != 0
           && p->joins_stamp == b->joins->stamp && p->depth < BORROW_DEPTH
           && b->nfresh[x] == 0 && b->n[x] == b->joins->n[x]
           && b->order[x] == b->joins->order[x]
           && p->chain_bytes - p->whole_bytes
              <= (p->whole_bytes / 2 > BORROW_SLACK ? p->whole_bytes / 2 : BORROW_SLACK)
           && (b->in->room == 0 || p->chain_bytes + 2 * p->whole_bytes <= b->in->room);
}


/* A stamp no other joins of any process had: the joins and the snapshot
 * of the build that kept them carry it. */
static uint64_t
joins_stamp(void)
{
    static uint64_t  last;
    struct timespec  t;
    uint64_t         v;

    clock_gettime(CLOCK_REALTIME, &t);
    v = ((uint64_t) t.tv_sec * 1000000000 + (uint64_t) t.tv_nsec) ^ ((uint64_t) getpid() << 44);
    last = v > last ? v : last + 1;

    return last;
}


/* Keeps this build's joins for the next: every unit's and line item's
 * after joining all, those joined again after joining what changed. */
static int
keep_joins(build_t *b)
{
    adserve_joins_t      *j = b->joins;
    adserve_joined_li_t  *old;
    adserve_joined_t     *p;
    const bcand_t        *c;
    unit_rec_t           *u;
    uint32_t              i, k, mask, nunits = b->n[ADSERVE_KIND_AD_UNITS];

    if (!b->incremental) {
        if (adserve_joins_reset(j, nunits, b->n[ADSERVE_KIND_LINE_ITEMS]) != 0) {
            return -1;
        }

    } else {
        if (adserve_joins_renew_lis(j, b->n[ADSERVE_KIND_LINE_ITEMS], &old, &mask) != 0) {
            return -1;
        }
        free(old);
    }

    for (i = 0; i < b->n[ADSERVE_KIND_LINE_ITEMS]; i++) {
        adserve_joins_put_li(j, b->lis[i].rec, b->lis[i].sig);
    }

    for (i = 0; i < nunits; i++) {
        u = &b->units[i];

        if (!u->p->active || !(u->dirty || (!b->incremental && u->ncands + u->nexcl))) {
            continue;
        }

        if (adserve_joins_put_unit(j, u->rec, u->ncands, u->nexcl, &p) != 0) {
            return -1;
        }

        for (k = 0; k < u->ncands + u->nexcl; k++) {
            c = k < u->ncands ? &u->cands[k] : &u->excl[k - u->ncands];
            p[k].li = c->li->rec;
            p[k].cr = c->cr->rec;
            p[k].weight = c->weight;
            p[k].reason = c->reason;
        }
    }

    for (k = 0; k < ADSERVE_KIND_COUNT; k++) {
        j->n[k] = b->n[k];
        j->order[k] = b->order[k];
    }
    j->valid = 1;
    j->stamp = joins_stamp();
    b->snap->joins_stamp = j->stamp;

    return 0;
}


/* ---- ranking and rendering --------------------------------------------- */

static int
same_group(const li_rec_t *a, const li_rec_t *b)
{
    return a->tier == b->tier && a->priority == b->priority;
}


/* Two ids in the ranking's order: their hashes', and the ids' own when the
 * hashes are one. Any order every build and node keeps would do; this one
 * spares the ids' compare, which was a tenth of a full build (UUIDs of one
 * generator share their first 28 characters, and each id is a cache miss
 * away). */
static int
id_cmp(uint64_t ha, const char *a, uint64_t hb, const char *b)
{
    if (ha != hb) {
        return ha < hb ? -1 : 1;
    }

    return strcmp(a, b);
}


/* tier, then priority (1 is the highest); inside a group a line item's
 * candidates next to each other, in a stable order so builds are
 * reproducible. eCPM is decided per request: CPC and CPA line items rank on
 * observed rates, which change while a snapshot serves. */
static int
cand_cmp(const void *pa, const void *pb)
{
    const bcand_t   *a = pa, *b = pb;
    const li_rec_t  *la = a->li, *lb = b->li;
    int              c;

    if (la->tier != lb->tier) {
        return la->tier < lb->tier ? -1 : 1;
    }

    if (la->priority != lb->priority) {
        return la->priority < lb->priority ? -1 : 1;
    }

    c = la == lb ? 0 : id_cmp(la->id_hash, la->id, lb->id_hash, lb->id);
    c = c ? c : a->cr == b->cr ? 0 : id_cmp(a->cr->id_hash, a->cr->id,
                                            b->cr->id_hash, b->cr->id);

    /* two LICAs of the same pair (the API keeps one) */
    return c ? c : a->weight != b->weight ? (a->weight < b->weight ? -1 : 1) : 0;
}


typedef struct {
    part_t              h;
    size_t              ranked;
} rank_part_t;


/* Sorts a unit's candidates unless they came ranked: 1 when it sorted. */
static int
rank_unit(unit_rec_t *u)
{
    int  sorted = 0;

    if (!u->ranked) {
        if (u->ncands > 1) {
            qsort(u->cands, u->ncands, sizeof(bcand_t), cand_cmp);
            sorted = 1;
        }
        u->ranked = 1;
    }

    return sorted;
}


/* Ranks the candidates of every unit the join reached, units dealt out
 * over the build's threads one by one (one unit may have many more
 * candidates than the next): each sorts its own units' pairs, nothing
 * else. */
static void *
rank_part(void *data)
{
    rank_part_t  *rp = data;
    uint32_t      i;

    for (i = rp->h.part; i < rp->h.b->n[ADSERVE_KIND_AD_UNITS]; i += rp->h.nparts) {
        rp->ranked += rank_unit(&rp->h.b->units[i]);
    }

    return NULL;
}


static void
rank_units(build_t *b)
{
    rank_part_t  parts[PARTS_MAX];
    unsigned     i, n = nparts(b, b->snap->stats.joined, share_from(b));

    memset(parts, 0, sizeof(parts));
    run_parts(b, rank_part, parts, sizeof(rank_part_t), n);

    for (i = 0; i < n; i++) {
        b->snap->stats.ranked += parts[i].ranked;
    }
}


/* The 200 body up to the ad's URLs: the "ad" object without its closing
 * brace. It does not depend on the ad unit, so all the candidates of a
 * creative share it. */
static const char *
render_head(build_t *b, creative_rec_t *cr, size_t *len)
{
    static const char  pre[] = ADSERVE_RESPONSE_HEAD;
    size_t             n;
    char              *p;

    if (cr->head == NULL) {
        n = cr->p->ad_json_len - 1;           /* without the closing '}' */
        cr->head_len = sizeof(pre) - 1 + n;

        p = adserve_arena_alloc(&b->snap->arena, cr->head_len);
        if (p == NULL) {
            return NULL;
        }

        memcpy(p, pre, sizeof(pre) - 1);
        memcpy(p + sizeof(pre) - 1, cr->p->ad_json, n);
        cr->head = p;
    }

    *len = cr->head_len;

    return cr->head;
}


/* A native creative's 200 body up to the ad's URLs, for one unit: asset
 * mode's "native" member, or html mode's "display" with the creative
 * through the unit's style. NULL when out of memory. */
static char *
render_native(build_t *b, const unit_rec_t *u, const creative_rec_t *cr, size_t *len,
    unsigned *splices)
{
    static const char                 pre[] = ADSERVE_RESPONSE_HEAD "{\"id\":";
    const adserve_parsed_unit_t      *p = u->p;
    const adserve_parsed_creative_t  *c = cr->p;
    const adserve_parsed_style_t     *st;
    adserve_jsonw_t                   w, h;
    uint8_t                           pick[ADSERVE_NATIVE_ASSETS_MAX];
    char                             *head;

    adserve_jsonw_init(&w);
    adserve_jsonw_raw(&w, pre, sizeof(pre) - 1);
    adserve_jsonw_str(&w, cr->id);

    if (p->native_mode == ADSERVE_RENDER_HTML) {
        st = b->styles[u->style];
        adserve_jsonw_init(&h);
        *splices = adserve_native_render_html(&h, st->html, st->css, c->assets, c->nassets);

        adserve_jsonw_lit(&w, ",\"display\":{\"w\":");
        adserve_jsonw_num(&w, p->display.w);
        adserve_jsonw_lit(&w, ",\"h\":");
        adserve_jsonw_num(&w, p->display.h);
        adserve_jsonw_lit(&w, ",\"adm\":\"");
        adserve_jsonw_esc(&w, h.data ? h.data : "", h.len, ADSERVE_SPLICE);
        adserve_jsonw_lit(&w, "\"}");
        w.oom |= h.oom;
        adserve_jsonw_free(&h);

    } else {
        (void) adserve_native_match(p->native_reqs, p->nnative_reqs, c->assets, c->nassets,
                                    pick);
        adserve_jsonw_lit(&w, ",\"native\":");
        *splices = adserve_native_render_assets(&w, p->native_reqs, p->nnative_reqs,
                                                c->assets, pick, c->vast, c->vast_len,
                                                c->splices);
    }

    head = w.oom ? NULL : adserve_arena_memdup(&b->snap->arena, w.data, w.len);
    *len = w.len;
    adserve_jsonw_free(&w);

    return head;
}


/* The native head of cr on unit u: rendered for the first unit of its
 * kind (native_head_t), then shared. */
static const char *
native_head(build_t *b, const unit_rec_t *u, creative_rec_t *cr, size_t *len,
    unsigned *splices)
{
    const adserve_parsed_unit_t  *p = u->p;
    native_head_t                *nh, *v;
    int                           html = p->native_mode == ADSERVE_RENDER_HTML;
    uint32_t                      i, style = html ? u->style : NONE;
    uint32_t                      w = html ? (uint32_t) p->display.w : 0;
    uint32_t                      h = html ? (uint32_t) p->display.h : 0;

    for (i = 0; i < cr->nnative; i++) {
        nh = &cr->native[i];
        if (nh->key == p->native_key && nh->style == style && nh->w == w && nh->h == h) {
            goto found;
        }
    }

    v = realloc(cr->native, (cr->nnative + 1) * sizeof(native_head_t));
    if (v == NULL) {
        return NULL;
    }
    cr->native = v;

    nh = &v[cr->nnative];
    nh->head = render_native(b, u, cr, &nh->len, &nh->splices);
    if (nh->head == NULL) {
        return NULL;
    }
    nh->key = p->native_key;
    nh->style = style;
    nh->w = w;
    nh->h = h;
    cr->nnative++;

found:

    *len = nh->len;
    *splices = nh->splices;

    return nh->head;
}


/* The base URL where a VAST's splices put it (adserve_vast.h): XML text,
 * and that inside the JSON string of ad.video.vast. */
static int
render_vast_base(build_t *b, const char *base, adserve_unit_t *out)
{
    adserve_jsonw_t  x, j;
    size_t           n = base ? strlen(base) : 0;
    char            *trimmed;

    while (n > 0 && base[n - 1] == '/') {
        n--;
    }

    trimmed = strndup(base ? base : "", n);
    if (trimmed == NULL) {
        return -1;
    }

    adserve_jsonw_init(&x);
    adserve_xml_esc(&x, trimmed);
    free(trimmed);
    adserve_jsonw_init(&j);
    adserve_jsonw_esc(&j, x.data ? x.data : "", x.len, 0);

    if (!x.oom && !j.oom) {
        out->vast_base.len = x.len;
        out->vast_base.data = adserve_arena_memdup(&b->snap->arena, x.data ? x.data : "", x.len);
        out->vast_base_json.len = j.len;
        out->vast_base_json.data = adserve_arena_memdup(&b->snap->arena, j.data ? j.data : "",
                                                        j.len);
    }

    adserve_jsonw_free(&x);
    adserve_jsonw_free(&j);

    return out->vast_base.data && out->vast_base_json.data ? 0 : -1;
}


/* ,"impression_url":"<base>/app/v0/event/impression?ad_log= and the same
 * for the click: the base is the unit's ext.public_url or the default,
 * escaped as a JSON string (the API checked it is an http(s) URL) */
static int
render_base_urls(build_t *b, const char *base, adserve_unit_t *out)
{
    cJSON       *str;
    char        *json, *p;
    size_t       n;

    str = cJSON_CreateString(base);
    json = str ? cJSON_PrintUnformatted(str) : NULL;
    cJSON_Delete(str);
    if (json == NULL) {
        return -1;
    }

    /* without its quotes, and without a trailing slash */
    n = strlen(json) - 2;
    while (n > 0 && json[n] == '/') {
        n--;
    }

#define URL_PART(field, lead, path)                                          \
    out->field.len = sizeof(lead) - 1 + n + sizeof(path) - 1;                \
    p = adserve_arena_alloc(&b->snap->arena, out->field.len);                \
    if (p != NULL) {                                                         \
        memcpy(p, lead, sizeof(lead) - 1);                                   \
        memcpy(p + sizeof(lead) - 1, json + 1, n);                           \
        memcpy(p + sizeof(lead) - 1 + n, path, sizeof(path) - 1);            \
    }                                                                        \
    out->field.data = p;

    URL_PART(impression_prefix, ",\"impression_url\":\"", ADSERVE_IMPRESSION_PATH)
    URL_PART(click_prefix, "\",\"click_url\":\"", ADSERVE_CLICK_PATH)

#undef URL_PART

    out->url_base_json.len = n;
    out->url_base_json.data = adserve_arena_memdup(&b->snap->arena, json + 1, n);
    cJSON_free(json);

    return out->impression_prefix.data && out->click_prefix.data && out->url_base_json.data
           && render_vast_base(b, base, out) == 0 ? 0 : -1;
}


/* A unit's URL parts: its base's, rendered by the first unit of that base
 * (url_parts_t) */
static int
render_urls(build_t *b, const unit_rec_t *u, adserve_unit_t *out)
{
    const char   *base = u->p->public_url ? u->p->public_url : b->public_url;
    url_parts_t  *up;
    uint32_t      i;

    if (base == NULL) {
        base = "";
    }

    for (i = 0; i < b->nurl_parts; i++) {
        up = &b->url_parts[i];
        if (strcmp(up->base, base) == 0) {
            URL_PARTS_COPY(out, up);
            return 0;
        }
    }

    if (render_base_urls(b, base, out) != 0) {
        return -1;
    }

    if (b->nurl_parts < URL_BASES_CACHED) {
        up = &b->url_parts[b->nurl_parts++];
        up->base = base;
        URL_PARTS_COPY(up, out);
    }

    return 0;
}


/* a record's id, copied into the snapshot the first time a candidate
 * needs it; later candidates share the copy */
static int
snap_id(build_t *b, const adserve_parsed_t *rec, adserve_str_t *out)
{
    if (out->data == NULL) {
        out->len = rec->id_len;
        out->data = adserve_arena_memdup(&b->snap->arena, rec->id, out->len);
    }

    return out->data ? 0 : -1;
}


/* Twice the room in the snapshot's lis: a build that borrows does not
 * know how many of its line items a variant will add. The old arrays stay
 * in the arena. */
static int
grow_lis(build_t *b)
{
    adserve_snapshot_t   *s = b->snap;
    adserve_li_t         *lis;
    adserve_pace_plan_t  *plan;
    uint32_t              cap = b->li_cap * 2 + 16;

    lis = adserve_arena_alloc(&s->arena, cap * sizeof(adserve_li_t));
    plan = adserve_arena_alloc(&s->arena, cap * sizeof(adserve_pace_plan_t));
    if (lis == NULL || plan == NULL) {
        return -1;
    }

    memcpy(lis, s->lis, s->nlis * sizeof(adserve_li_t));
    memcpy(plan, s->plan, s->nlis * sizeof(adserve_pace_plan_t));
    s->lis = lis;
    s->plan = plan;
    b->li_cap = cap;

    return 0;
}


/* The line item in the snapshot's lis, added the first time a candidate
 * needs it. */
static uint32_t
snap_li(build_t *b, li_rec_t *r)
{
    const adserve_parsed_li_t  *p = r->p;
    const adserve_li_t         *o;
    adserve_pace_plan_t        *plan;
    adserve_snapshot_t  *s = b->snap;
    adserve_li_t        *li;
    adserve_cap_t       *caps = NULL;

    if (r->snap_li != NONE) {
        return r->snap_li;
    }

    if (s->nlis == b->li_cap && grow_lis(b) != 0) {
        return NONE;
    }

    if (p->ncaps) {
        caps = adserve_arena_alloc(&s->arena, p->ncaps * sizeof(adserve_cap_t));
        if (caps == NULL) {
            return NONE;
        }
        memcpy(caps, p->caps, p->ncaps * sizeof(adserve_cap_t));
    }

    /* the one copy of the id, shared with the explainer's exclusions */
    li = &s->lis[s->nlis];
    if (snap_id(b, r->rec, &r->snap_id) != 0) {
        return NONE;
    }
    /* it compiled when parsed: only out of memory fails here */
    if (r->compile) {
        if (adserve_target_compile(&b->tb, p->targeting, &r->target) != 0) {
            return NONE;
        }
        r->compile = 0;
    }

    memset(li, 0, sizeof(adserve_li_t));
    li->id = r->snap_id;

    li->hash = r->rec->id_hash;
    li->start = p->start;
    li->end = p->end;
    li->goal = p->goal;
    li->target = r->target;
    li->caps = caps;
    li->ncaps = (uint8_t) p->ncaps;
    li->tier = (uint8_t) p->tier;
    li->priority = (uint8_t) p->priority;
    li->cost_type = (uint8_t) p->cost_type;
    li->goal_type = (uint8_t) p->goal_type;
    li->delivery = (uint8_t) p->delivery;
    li->paced = p->goal_type != ADSERVE_GOAL_NONE;

    /* where its pace was: the workers copy it from there (pacing) */
    plan = &s->plan[s->nlis];
    plan->prev = ADSERVE_LI_NONE;
    plan->paced = li->paced;
    plan->cost_type = li->cost_type;
    if (b->prev != NULL && (li->paced || li->cost_type != ADSERVE_COST_CPM)) {
        o = adserve_snapshot_li(b->prev, li->id.data, li->id.len);
        if (o != NULL && adserve_pace_carries(o, li)) {
            plan->prev = (uint32_t) (o - b->prev->lis);
        }
    }

    if (p->max_cap > s->max_cap_seconds) {
        s->max_cap_seconds = p->max_cap;
    }

    r->snap_li = s->nlis++;
    if (b->joins != NULL) {
        r->rec->slot = r->snap_li;      /* for the next build to borrow */
    }

    return r->snap_li;
}


/* what a candidate bids per unit of its cost type: the line item's rate, or
 * for CPC and CPA without one, the ad unit's default */
static double
cand_bid(const adserve_parsed_unit_t *u, const li_rec_t *li)
{
    if (li->rate > 0 || li->cost_type == ADSERVE_COST_CPM) {
        return li->rate;
    }

    return li->cost_type == ADSERVE_COST_CPC ? u->default_cpc : u->default_cpa;
}


/* A recommendation unit's answer up to its first item: "ad.id" is the
 * unit's (there is no creative). */
static int
render_rec_head(build_t *b, const unit_rec_t *u, adserve_unit_t *out)
{
    static const char  pre[] = ADSERVE_RESPONSE_HEAD "{\"id\":";
    adserve_jsonw_t    w;

    adserve_jsonw_init(&w);
    adserve_jsonw_raw(&w, pre, sizeof(pre) - 1);
    adserve_jsonw_str(&w, u->id);
    adserve_jsonw_lit(&w, ",\"recommendation\":{\"items\":[");

    out->rec_head.len = w.len;
    out->rec_head.data = w.oom ? NULL : adserve_arena_memdup(&b->snap->arena, w.data, w.len);
    adserve_jsonw_free(&w);

    return out->rec_head.data ? 0 : -1;
}


/* A display or native unit's answer when nothing fills, whole: its
 * ext.passback markup, as JSON string text, with the unit's first size.
 * No impression or click URL and no ad_log: the tag is another network's,
 * which tracks it. */
static int
render_passback(build_t *b, const unit_rec_t *u, adserve_unit_t *out)
{
    static const char  pre[] = ADSERVE_RESPONSE_HEAD "{\"id\":";
    adserve_jsonw_t    w;

    if (u->p->passback == NULL || u->p->rec) {
        return 0;
    }

    adserve_jsonw_init(&w);
    adserve_jsonw_raw(&w, pre, sizeof(pre) - 1);
    adserve_jsonw_str(&w, u->id);
    adserve_jsonw_lit(&w, ",\"passback\":{");
    if (u->p->nsizes > 0) {
        adserve_jsonw_lit(&w, "\"w\":");
        adserve_jsonw_num(&w, u->p->sizes[0].w);
        adserve_jsonw_lit(&w, ",\"h\":");
        adserve_jsonw_num(&w, u->p->sizes[0].h);
        adserve_jsonw_lit(&w, ",");
    }
    adserve_jsonw_lit(&w, "\"adm\":");
    adserve_jsonw_str(&w, u->p->passback);
    adserve_jsonw_lit(&w, "}" ADSERVE_PASSBACK_TAIL);

    out->passback.len = w.len;
    out->passback.data = w.oom ? NULL : adserve_arena_memdup(&b->snap->arena, w.data, w.len);
    adserve_jsonw_free(&w);

    return out->passback.data ? 0 : -1;
}


/* A popular fallback: its context's popular items as they are now, and
 * the context counted from now on (up to ADSERVE_POPULAR_CONTEXTS_MAX). */
static int
popular_fallback(build_t *b, const char *context, adserve_fallback_t *f)
{
    adserve_snapshot_t    *s = b->snap;
    const adserve_pool_t  *pl;
    size_t                 len = strlen(context);

    pl = adserve_snapshot_popular(s, context, len);
    f->items = pl != NULL ? pl->items : NULL;
    f->n = pl == NULL ? 0 : pl->n < ADSERVE_PRESET_ITEMS_MAX ? pl->n : ADSERVE_PRESET_ITEMS_MAX;
    f->expire = NULL;

    if ((len == sizeof(ADSERVE_V_CONTEXT_ALL) - 1
         && memcmp(context, ADSERVE_V_CONTEXT_ALL, len) == 0)
        || adserve_snapshot_counts_context(s, context, len)
        || s->npop_contexts == ADSERVE_POPULAR_CONTEXTS_MAX)
    {
        return 0;
    }

    if (s->pop_contexts == NULL) {
        s->pop_contexts = adserve_arena_alloc(&s->arena,
                              ADSERVE_POPULAR_CONTEXTS_MAX * sizeof(adserve_str_t));
        if (s->pop_contexts == NULL) {
            return -1;
        }
    }

    s->pop_contexts[s->npop_contexts].len = len;
    s->pop_contexts[s->npop_contexts].data = adserve_arena_memdup(&s->arena, context, len);

    return s->pop_contexts[s->npop_contexts++].data != NULL ? 0 : -1;
}


/* A snapshot file's items: its catalog item ids, one per line (blank
 * lines and lines starting with '#' skipped, ids the catalog lacks
 * dropped, ADSERVE_PRESET_ITEMS_MAX at most). A path that could leave the
 * folder, by its text or by its real path (a symbolic link), reads as no
 * file, as a file that cannot be read does. The build runs off the event
 * loop: reading a file here blocks no request. */
static uint32_t
snapshot_read(build_t *b, const char *path, uint32_t *items)
{
    const adserve_item_t  *it;
    char                   full[PATH_MAX], real[PATH_MAX], dir[PATH_MAX];
    char                   line[ADSERVE_ITEM_ID_MAX + 2];
    size_t                 dlen, len;
    uint32_t               n = 0;
    FILE                  *fp;
    int                    w;

    if (b->in->rec_snapshots == NULL || path == NULL
        || adserve_snapshot_path_check(path) != NULL
        || realpath(b->in->rec_snapshots, dir) == NULL)
    {
        return 0;
    }

    w = snprintf(full, sizeof(full), "%s/%s", dir, path);
    dlen = strlen(dir);
    if (w < 0 || (size_t) w >= sizeof(full) || realpath(full, real) == NULL
        || strncmp(real, dir, dlen) != 0 || real[dlen] != '/')
    {
        return 0;
    }

    fp = fopen(real, "re");
    if (fp == NULL) {
        return 0;
    }

    while (n < ADSERVE_PRESET_ITEMS_MAX && fgets(line, sizeof(line), fp) != NULL) {
        len = strcspn(line, "\r\n");
        if (line[len] == '\0' && !feof(fp)) {
            /* longer than any item id: the rest of the line goes too */
            while (fgets(line, sizeof(line), fp) != NULL && line[strlen(line) - 1] != '\n') {
                /* void */
            }
            continue;
        }
        line[len] = '\0';

        if (len == 0 || line[0] == '#' || !adserve_item_id_ok(line)) {
            continue;
        }

        it = adserve_snapshot_item(b->snap, line, len);
        if (it != NULL) {
            items[n++] = (uint32_t) (it - b->snap->items);
        }
    }

    (void) fclose(fp);

    return n;
}


/* A snapshot fallback: its file's items, read once per build and shared
 * by the units that name the same file. */
static int
snapshot_fallback(build_t *b, const char *path, adserve_fallback_t *f)
{
    snapshot_file_t  *sf;
    uint32_t         *items;
    uint32_t          i;

    f->expire = NULL;

    for (i = 0; path != NULL && i < b->nsnapshot_files; i++) {
        if (strcmp(b->snapshot_files[i].path, path) == 0) {
            f->items = b->snapshot_files[i].items;
            f->n = b->snapshot_files[i].n;
            return 0;
        }
    }

    items = adserve_arena_alloc(&b->snap->arena, ADSERVE_PRESET_ITEMS_MAX * sizeof(uint32_t));
    if (items == NULL) {
        return -1;
    }

    f->items = items;
    f->n = snapshot_read(b, path, items);

    if (path != NULL && b->nsnapshot_files < SNAPSHOT_FILES_CACHED) {
        sf = &b->snapshot_files[b->nsnapshot_files++];
        sf->path = path;
        sf->items = items;
        sf->n = f->n;
    }

    return 0;
}


/* A recommendation unit's fallback chain, its presets' ids resolved to
 * the catalog's items (the build made their table first). */
static int
build_fallbacks(build_t *b, const unit_rec_t *u, adserve_unit_t *out)
{
    adserve_arena_t                  *a = &b->snap->arena;
    const adserve_parsed_fallback_t  *pf;
    const adserve_item_t             *it;
    adserve_fallback_t               *f;
    uint32_t                          i, j, *items;
    int64_t                          *expire;

    if (u->p->nfallbacks == 0) {
        return 0;
    }

    f = adserve_arena_alloc(a, u->p->nfallbacks * sizeof(adserve_fallback_t));
    if (f == NULL) {
        return -1;
    }

    for (i = 0; i < u->p->nfallbacks; i++) {
        pf = &u->p->fallbacks[i];
        f[i].type = pf->type;
        f[i].activation = pf->activation;
        f[i].order = pf->order;
        f[i].n = 0;

        if (pf->type == ADSERVE_FALLBACK_POPULAR) {
            if (popular_fallback(b, pf->context, &f[i]) != 0) {
                return -1;
            }
            continue;
        }

        if (pf->type == ADSERVE_FALLBACK_SNAPSHOT) {
            if (snapshot_fallback(b, pf->path, &f[i]) != 0) {
                return -1;
            }
            continue;
        }

        items = adserve_arena_alloc(a, (pf->items.n + 1) * sizeof(uint32_t));
        expire = adserve_arena_alloc(a, (pf->items.n + 1) * sizeof(int64_t));
        if (items == NULL || expire == NULL) {
            return -1;
        }

        for (j = 0; j < pf->items.n; j++) {
            it = adserve_snapshot_item(b->snap, pf->items.v[j], strlen(pf->items.v[j]));
            if (it != NULL) {
                items[f[i].n] = (uint32_t) (it - b->snap->items);
                expire[f[i].n++] = pf->expire[j];
            }
        }

        f[i].items = items;
        f[i].expire = expire;
    }

    out->fallbacks = f;
    out->nfallbacks = (uint8_t) u->p->nfallbacks;

    return 0;
}


/* A recommendation unit's candidate filtering and content filter (a rule
 * that does not compile, written past the API, lets no item through), and
 * the ids its items are counted by per source. */
static int
build_filter(build_t *b, const unit_rec_t *u, adserve_unit_t *out)
{
    char  id[ADSERVE_TOKEN_ID_MAX + 16];
    int   rc, k, n, a;

    /* the algorithm's items are counted per algorithm (the contract's
     * adserve_rec_algorithm_counted); an unknown one gives none */
    a = u->p->target_service != NULL ? ADSERVE_ALGORITHM_SERVICE
        : u->p->algorithm < ADSERVE_ALGORITHM_COUNT ? u->p->algorithm : ADSERVE_ALGORITHM_AXA0;

    for (k = 0; k < ADSERVE_SOURCE_COUNT; k++) {
        n = snprintf(id, sizeof(id), "%s%c%s", u->id, ADSERVE_SOURCE_SEP,
                     k == ADSERVE_SOURCE_ALGORITHM ? adserve_rec_algorithm_counted[a]
                                                   : adserve_rec_source_names[k]);
        if (n < 0 || (size_t) n >= sizeof(id)) {
            return -1;
        }
        out->source_ids[k].len = (size_t) n;
        out->source_ids[k].data = adserve_arena_memdup(&b->snap->arena, id, (size_t) n);
        out->source_hashes[k] = adserve_hash(id, (size_t) n);
        if (out->source_ids[k].data == NULL) {
            return -1;
        }
    }

    out->filtering = (uint8_t) u->p->filtering;
    out->algorithm = (uint8_t) u->p->algorithm;
    if (u->p->target_service != NULL) {
        out->target_service.len = strlen(u->p->target_service);
        out->target_service.data = adserve_arena_memdup(&b->snap->arena, u->p->target_service,
                                                        out->target_service.len);
        if (out->target_service.data == NULL) {
            return -1;
        }
    }

    rc = adserve_target_compile_filter(&b->tb, u->p->filter, &out->filter);
    out->filter_refuses = rc == 1;

    return rc < 0 ? -1 : 0;
}


/* The unit's video candidates, apart: a VAST request takes no banner. */
static int
video_cands(adserve_arena_t *a, adserve_unit_t *out)
{
    adserve_cand_t  *v;
    uint32_t         i, n = 0;

    for (i = 0; i < out->ncands; i++) {
        n += out->cands[i].format == ADSERVE_FORMAT_VIDEO;
    }

    out->nvcands = n;
    out->vcands = out->cands;

    if (n == 0 || n == out->ncands) {
        return 0;
    }

    v = adserve_arena_alloc(a, n * sizeof(adserve_cand_t));
    if (v == NULL) {
        return -1;
    }

    for (n = 0, i = 0; i < out->ncands; i++) {
        if (out->cands[i].format == ADSERVE_FORMAT_VIDEO) {
            v[n++] = out->cands[i];
        }
    }

    out->vcands = v;

    return 0;
}


/* The segments the unit's line items target, once each: what serving asks
 * of a user's memberships, in one command. The ids are the rules', in the
 * snapshot's arena already. */
static int
unit_segments(build_t *b, const adserve_cand_t *c, uint32_t ncands, adserve_unit_t *out)
{
    adserve_str_t            ids[ADSERVE_UNIT_SEGMENTS_MAX], id, *sids;
    uint64_t                 hashes[ADSERVE_UNIT_SEGMENTS_MAX], h, *shashes;
    const adserve_target_t  *t, *last = NULL;
    uint32_t                 i, j, k, m, n = 0;

    for (i = 0; i < ncands; i++) {
        t = b->snap->lis[c[i].li].target;
        if (t == NULL || t == last) {        /* a line item's are neighbours */
            continue;
        }
        last = t;

        m = adserve_target_nsegments(t);
        for (k = 0; k < m; k++) {
            adserve_target_segment(t, k, &id, &h);
            for (j = 0; j < n && hashes[j] != h; j++) {
                /* seen */
            }
            if (j < n) {
                continue;
            }
            if (n == ADSERVE_UNIT_SEGMENTS_MAX) {
                out->segments_overflow = 1;
                return 0;
            }
            ids[n] = id;
            hashes[n++] = h;
        }
    }

    if (n == 0) {
        return 0;
    }

    sids = adserve_arena_alloc(&b->snap->arena, n * sizeof(adserve_str_t));
    shashes = adserve_arena_alloc(&b->snap->arena, n * sizeof(uint64_t));
    if (sids == NULL || shashes == NULL) {
        return -1;
    }

    memcpy(sids, ids, n * sizeof(adserve_str_t));
    memcpy(shashes, hashes, n * sizeof(uint64_t));
    out->segment_ids = sids;
    out->segment_hashes = shashes;
    out->nsegments = n;
    out->segments_sig = adserve_hash((const char *) shashes, n * sizeof(uint64_t));

    return 0;
}


static int
render_cands(build_t *b, unit_rec_t *u, adserve_unit_t *out)
{
    adserve_arena_t  *a = &b->snap->arena;
    adserve_cand_t   *c;
    adserve_excl_t   *x;
    const bcand_t    *bc;
    uint32_t          i, group = 0;
    unsigned          splices = 0;

    /* the table's units come ranked (rank_units), a variant's not yet */
    b->snap->stats.ranked += rank_unit(u);

    c = adserve_arena_alloc(a, (u->ncands + 1) * sizeof(adserve_cand_t));
    if (c == NULL) {
        return -1;
    }

    out->max_cap_seconds = 0;

    for (i = 0; i < u->ncands; i++) {
        bc = &u->cands[i];

        if (i + PREFETCH_AHEAD < u->ncands) {
            adserve_prefetch(bc[PREFETCH_AHEAD].li);
            adserve_prefetch(bc[PREFETCH_AHEAD].cr);
        }

        if (i > 0 && !same_group(bc->li, u->cands[i - 1].li)) {
            group++;
        }

        c[i].li = snap_li(b, bc->li);
        c[i].weight = bc->weight;
        c[i].group = group;
        c[i].bid = cand_bid(u->p, bc->li);
        c[i].bid_micros = (uint64_t) (c[i].bid * 1e6 + 0.5);
        c[i].format = bc->cr->format;
        /* the creative's id first: a display head that is new comes
         * right after it, in the line serving's token reads */
        if (snap_id(b, bc->cr->rec, &bc->cr->snap_id) != 0) {
            return -1;
        }

        if (c[i].format == ADSERVE_FORMAT_NATIVE) {
            c[i].response_head = native_head(b, u, bc->cr, &c[i].response_head_len,
                                             &splices);
        } else {
            c[i].response_head = render_head(b, bc->cr, &c[i].response_head_len);
            splices = bc->cr->splices;
        }
        c[i].splices = splices;

        if (c[i].li == NONE || c[i].response_head == NULL) {
            return -1;
        }

        c[i].creative_id = bc->cr->snap_id;
        c[i].creative_hash = bc->cr->id_hash;

        if (bc->li->max_cap > out->max_cap_seconds) {
            out->max_cap_seconds = bc->li->max_cap;
        }
    }

    x = NULL;
    if (u->nexcl) {
        x = adserve_arena_alloc(a, u->nexcl * sizeof(adserve_excl_t));
        if (x == NULL) {
            return -1;
        }
    }

    for (i = 0; i < u->nexcl; i++) {
        bc = &u->excl[i];

        if (i + PREFETCH_AHEAD < u->nexcl) {
            adserve_prefetch(bc[PREFETCH_AHEAD].li);
            adserve_prefetch(bc[PREFETCH_AHEAD].cr);
        }

        if (snap_id(b, bc->li->rec, &bc->li->snap_id) != 0
            || snap_id(b, bc->cr->rec, &bc->cr->snap_id) != 0)
        {
            return -1;
        }
        x[i].line_item_id = bc->li->snap_id;
        x[i].creative_id = bc->cr->snap_id;
        x[i].reason = (uint8_t) bc->reason;
    }
    out->excluded = x;
    out->nexcluded = u->nexcl;

    if (unit_segments(b, c, u->ncands, out) != 0) {
        return -1;
    }

    out->cands = c;
    out->ncands = u->ncands;

    return video_cands(a, out);
}


/* What an ad unit that no change reached keeps of the snapshot before:
 * its candidates and all that is made of them, as they were ranked and
 * rendered (their lis' slots are carried, carry_lis). 1 when borrowed, 0
 * when the base has no such unit. */
static int
borrow_cands(build_t *b, const unit_rec_t *u, adserve_unit_t *out)
{
    const adserve_unit_t  *o;

    o = adserve_snapshot_unit(b->prev, u->id, u->rec->id_len);
    if (o == NULL) {
        return 0;
    }

    out->cands = o->cands;
    out->ncands = o->ncands;
    out->vcands = o->vcands;
    out->nvcands = o->nvcands;
    out->excluded = o->excluded;
    out->nexcluded = o->nexcluded;
    out->max_cap_seconds = o->max_cap_seconds;
    out->segment_ids = o->segment_ids;
    out->segment_hashes = o->segment_hashes;
    out->nsegments = o->nsegments;
    out->segments_sig = o->segments_sig;
    out->segments_overflow = o->segments_overflow;
    b->snap->stats.borrowed++;

    return 1;
}


/* A unit of the snapshot: its candidates rendered, or borrowed when it may
 * (a unit of the table, not a variant's), and the rest of it rendered. */
static int
finish_unit(build_t *b, unit_rec_t *u, adserve_unit_t *out, int borrow)
{
    adserve_arena_t  *a = &b->snap->arena;

    if (!(borrow && b->borrow && !u->dirty && borrow_cands(b, u, out))
        && render_cands(b, u, out) != 0)
    {
        return -1;
    }

    out->id_len = u->rec->id_len;
    if (out->id == NULL) {
        out->id = adserve_arena_memdup(a, u->id, out->id_len);
    }
    out->hash = u->rec->id_hash;

    out->floor = u->p->target_ecpm;
    out->rec = u->p->rec ? 1 : 0;
    out->topn = (uint8_t) u->p->topn;
    if (out->rec && (render_rec_head(b, u, out) != 0 || build_fallbacks(b, u, out) != 0
                     || build_filter(b, u, out) != 0))
    {
        return -1;
    }
    out->impression_on_response = u->p->on_response ? 1 : 0;
    if (render_passback(b, u, out) != 0 || unit_allocs(b, u, out) != 0
        || unit_rtb(b, u, out) != 0)
    {
        return -1;
    }
    b->snap->stats.candidates += out->ncands;
    b->snap->stats.excluded += out->nexcluded;

    return out->id && render_urls(b, u, out) == 0 ? 0 : -1;
}


/* id -> line item, for frequency cap replies and pacing */
static int
index_lis(adserve_snapshot_t *s)
{
    uint32_t  i, j, size = table_size(s->nlis);

    s->li_index = adserve_arena_calloc(&s->arena, size * sizeof(uint32_t));
    if (s->li_index == NULL) {
        return -1;
    }
    s->li_mask = size - 1;

    for (i = 0; i < s->nlis; i++) {
        if (s->lis[i].dead) {
            continue;
        }

        for (j = (uint32_t) s->lis[i].hash & s->li_mask; s->li_index[j];
             j = (j + 1) & s->li_mask)
        { /* void */ }

        s->li_index[j] = i + 1;
    }

    return 0;
}


/* A build that borrows takes the lis of its base by the same index, so
 * that the candidates it borrows point at the same line items: those its
 * line items still are (not changed since) stay, with their pace where it
 * was; the others die (a changed line item gets a new slot when a unit
 * needs it). */
static int
carry_lis(build_t *b)
{
    adserve_snapshot_t        *s = b->snap;
    const adserve_snapshot_t  *p = b->prev;
    adserve_pace_plan_t       *pl;
    adserve_li_t              *li;
    li_rec_t                  *r;
    uint8_t                   *alive;
    uint32_t                   i, k;

    b->li_cap = p->nlis + (uint32_t) s->stats.joined + 16;
    s->lis = adserve_arena_alloc(&s->arena, b->li_cap * sizeof(adserve_li_t));
    s->plan = adserve_arena_alloc(&s->arena, b->li_cap * sizeof(adserve_pace_plan_t));
    alive = adserve_arena_calloc(&b->tmp, p->nlis + 1);
    if (s->lis == NULL || s->plan == NULL || alive == NULL) {
        return -1;
    }

    memcpy(s->lis, p->lis, p->nlis * sizeof(adserve_li_t));
    memcpy(s->plan, p->plan, p->nlis * sizeof(adserve_pace_plan_t));
    s->nlis = p->nlis;
    s->max_cap_seconds = p->max_cap_seconds;

    for (i = 0; i < b->n[ADSERVE_KIND_LINE_ITEMS]; i++) {
        r = &b->lis[i];
        k = r->old_slot;

        /* a parse built before, not joined again: the same line item */
        if (r->dirty || r->fresh || k >= p->nlis || s->lis[k].dead) {
            continue;
        }

        r->snap_li = k;
        r->snap_id = s->lis[k].id;
        r->rec->slot = k;
        alive[k] = 1;
    }

    for (k = 0; k < p->nlis; k++) {
        pl = &s->plan[k];

        if (alive[k]) {
            pl->prev = pl->paced || pl->cost_type != ADSERVE_COST_CPM ? k : ADSERVE_LI_NONE;
            continue;
        }

        li = &s->lis[k];
        li->dead = 1;
        li->paced = 0;
        li->cost_type = ADSERVE_COST_CPM;
        pl->paced = 0;
        pl->cost_type = ADSERVE_COST_CPM;
        pl->prev = ADSERVE_LI_NONE;
    }

    return 0;
}


/* unit index slot e, its id's head copied in, names unit u, units[k - 1] */
static void
unit_slot(adserve_unit_slot_t *e, const adserve_unit_t *u, uint32_t k)
{
    e->len = (uint32_t) u->id_len;
    e->cands = u->cands;
    e->ahead = (uint8_t) adserve_cands_ahead(u);
    e->unit = k;
}


static int
build_table(build_t *b)
{
    adserve_snapshot_t  *s = b->snap;
    adserve_unit_slot_t *slots;
    unit_rec_t          *u;
    uint32_t             i, j, size, n = b->n[ADSERVE_KIND_AD_UNITS];

    for (i = 0; i < n; i++) {
        s->stats.active_units += b->units[i].p->active;
    }

    if (b->borrow) {
        if (carry_lis(b) != 0) {
            return -1;
        }

    } else {
        b->li_cap = b->n[ADSERVE_KIND_LINE_ITEMS] + 1;
        s->lis = adserve_arena_alloc(&s->arena, b->li_cap * sizeof(adserve_li_t));
        s->plan = adserve_arena_alloc(&s->arena, b->li_cap * sizeof(adserve_pace_plan_t));
        if (s->lis == NULL || s->plan == NULL) {
            return -1;
        }
    }

    size = table_size(s->stats.active_units);
    s->units = adserve_arena_calloc(&s->arena,
                                    (s->stats.active_units + 1) * sizeof(adserve_unit_t));
    /* a slot a line: the arena aligns to 16 bytes only */
    slots = adserve_arena_calloc(&s->arena, (size + 1) * sizeof(adserve_unit_slot_t));
    if (s->units == NULL || slots == NULL) {
        return -1;
    }
    s->unit_index = (adserve_unit_slot_t *) (((uintptr_t) slots + sizeof(adserve_unit_slot_t) - 1)
                                             & ~(uintptr_t) (sizeof(adserve_unit_slot_t) - 1));
    s->unit_mask = size - 1;

    for (i = 0; i < n; i++) {
        u = &b->units[i];
        if (!u->p->active) {
            continue;
        }

        j = (uint32_t) u->rec->id_hash & s->unit_mask;
        while (s->unit_index[j].unit != 0) {
            j = (j + 1) & s->unit_mask;
        }

        /* an id the slot holds whole, with its NUL (the slots are zeroed),
         * is the unit's own copy: a request's count and token read it in
         * the line its lookup has just read, not in a line of its own
         * (perf: the unit's count waited on it, 1 % of the workers' time) */
        memcpy(s->unit_index[j].head, u->id,
               u->rec->id_len < ADSERVE_UNIT_SLOT_HEAD ? u->rec->id_len
                                                       : ADSERVE_UNIT_SLOT_HEAD);
        if (u->rec->id_len < ADSERVE_UNIT_SLOT_HEAD) {
            s->units[s->nunits].id = s->unit_index[j].head;
        }

        if (finish_unit(b, u, &s->units[s->nunits], 1) != 0) {
            return -1;
        }
        unit_slot(&s->unit_index[j], &s->units[s->nunits], s->nunits + 1);
        s->nunits++;
    }

    return 0;
}


/* A variant's unit: the unit's record parsed with the variant's overrides,
 * and every creative that targets the unit judged again against it (its
 * sizes, formats or bcat may differ), then finished as any unit is. The
 * parse lives until the build ends: fallbacks keep pointers into it. 0, 1
 * when the unit's text is gone (no variant can be made), -1 out of
 * memory. */
static int
build_variant(build_t *b, uint32_t ui, const adserve_parsed_variant_t *pv,
    adserve_unit_t *out)
{
    const adserve_input_rec_t  *text = b->unit_texts[ui];
    const unit_rec_t           *base = &b->units[ui];
    adserve_parsed_t           *vp;
    unit_rec_t                  vr;
    uint32_t                    i;
    int                         rc = -1;

    /* the loader keeps the units' texts (a kept parse alone has none) */
    if (text->len == 0) {
        return 1;
    }

    vp = adserve_parse_variant(text->data, text->len, pv->overrides);
    if (vp == NULL) {
        return -1;
    }
    b->variant_ps[b->nvariant_ps++] = vp;

    vr = *base;
    vr.p = &vp->u.unit;
    vr.cands = vr.excl = NULL;
    vr.ncands = vr.cap = vr.nexcl = vr.xcap = 0;

    for (i = 0; i < base->ncands + base->nexcl; i++) {
        const bcand_t  *bc = i < base->ncands ? &base->cands[i]
                                              : &base->excl[i - base->ncands];

        if (add_pair(b, &vr, &vr, bc->li, bc->cr, bc->weight) != 0) {
            goto done;
        }
    }

    rc = finish_unit(b, &vr, out, 0);

done:

    free(vr.cands);
    free(vr.excl);

    return rc;
}


/* experiments by id: of two ACTIVE ones on a unit (the API allows one),
 * every worker and node keeps the same */
static int
experiment_cmp(const void *pa, const void *pb)
{
    const adserve_parsed_t  *a = *(adserve_parsed_t *const *) pa;
    const adserve_parsed_t  *b = *(adserve_parsed_t *const *) pb;

    return strcmp(a->id, b->id);
}


/* Each ACTIVE experiment on an ACTIVE unit: its variants' units, hung on
 * the unit in the table (of two on a unit, the smaller id's). */
static int
build_experiments(build_t *b)
{
    const adserve_parsed_experiment_t  *x;
    const adserve_parsed_t             *p;
    adserve_experiment_t               *ex;
    adserve_variant_t                  *vs;
    adserve_unit_t                     *tu, *vu;
    adserve_arena_t                    *a = &b->snap->arena;
    char                                id[ADSERVE_TOKEN_VARIANT_MAX + 1];
    uint32_t                            i, k, ui, n = b->n[ADSERVE_KIND_EXPERIMENTS];
    int                                 len, rc;

    b->variant_ps = adserve_arena_alloc(&b->tmp,
                        (n * ADSERVE_VARIANTS_MAX + 1) * sizeof(adserve_parsed_t *));
    if (b->variant_ps == NULL) {
        return -1;
    }

    if (n > 1) {
        qsort(b->experiment_ps, n, sizeof(adserve_parsed_t *), experiment_cmp);
    }

    for (i = 0; i < n; i++) {
        p = b->experiment_ps[i];
        x = &p->u.experiment;
        ui = x->active ? idmap_get(&b->map[ADSERVE_KIND_AD_UNITS], x->ad_unit_id,
                                   x->ad_unit_hash)
                       : NONE;
        if (ui == NONE || !b->units[ui].p->active) {
            continue;
        }

        tu = (adserve_unit_t *) adserve_snapshot_unit(b->snap, b->units[ui].id,
                                                      b->units[ui].rec->id_len);
        if (tu == NULL || tu->experiment != NULL) {
            continue;
        }

        ex = adserve_arena_calloc(a, sizeof(adserve_experiment_t));
        vs = adserve_arena_calloc(a, x->nvariants * sizeof(adserve_variant_t));
        vu = adserve_arena_calloc(a, x->nvariants * sizeof(adserve_unit_t));
        if (ex == NULL || vs == NULL || vu == NULL) {
            return -1;
        }

        for (k = 0, rc = 0; k < x->nvariants; k++) {
            len = snprintf(id, sizeof(id), "%s%c%s", p->id, ADSERVE_VARIANT_SEP,
                           x->variants[k].id);
            rc = len < 0 || (size_t) len >= sizeof(id)
                 ? -1 : build_variant(b, ui, &x->variants[k], &vu[k]);
            if (rc != 0) {
                break;
            }

            vs[k].id.len = (size_t) len;
            vs[k].id.data = adserve_arena_memdup(a, id, (size_t) len);
            vs[k].hash = adserve_hash(id, (size_t) len);
            vs[k].upto = x->upto[k];
            vs[k].unit = &vu[k];
            vu[k].variant = &vs[k];
            if (vs[k].id.data == NULL) {
                return -1;
            }
        }

        if (rc < 0) {
            return -1;
        }

        if (rc > 0) {
            continue;
        }

        ex->salt = p->id_hash;
        ex->n = x->nvariants;
        ex->variants = vs;
        tu->experiment = ex;
    }

    return 0;
}


/* Every creative with a landing page, for clicks: approved or not, since an
 * ad served before a change may still be clicked. */
static int
build_creatives(build_t *b)
{
    adserve_snapshot_t  *s = b->snap;
    adserve_creative_t  *c;
    creative_rec_t      *cr;
    uint32_t             i, j, size, n = b->n[ADSERVE_KIND_CREATIVES];

    if (b->borrow_creatives) {
        s->creatives = b->prev->creatives;
        s->creative_mask = b->prev->creative_mask;
        return 0;
    }

    size = table_size(n);
    s->creatives = adserve_arena_calloc(&s->arena, size * sizeof(adserve_creative_t));
    if (s->creatives == NULL) {
        return -1;
    }
    s->creative_mask = size - 1;

    for (i = 0; i < n; i++) {
        cr = &b->crs[i];
        if (cr->p->landing_url == NULL) {
            continue;
        }

        j = (uint32_t) cr->rec->id_hash & s->creative_mask;
        while (s->creatives[j].id.data != NULL) {
            j = (j + 1) & s->creative_mask;
        }

        c = &s->creatives[j];
        if (snap_id(b, cr->rec, &cr->snap_id) != 0) {
            return -1;
        }
        c->id = cr->snap_id;
        c->landing_url.len = strlen(cr->p->landing_url);
        c->landing_url.data = adserve_arena_memdup(&s->arena, cr->p->landing_url,
                                                   c->landing_url.len);
        if (c->landing_url.data == NULL) {
            return -1;
        }

        if (cr->p->vast != NULL && cr->p->approved && cr->p->format == ADSERVE_FORMAT_VIDEO) {
            c->vast.len = cr->p->vast_len;
            c->vast.data = adserve_arena_memdup(&s->arena, cr->p->vast, c->vast.len);
            c->splices = cr->p->splices;
            if (c->vast.data == NULL) {
                return -1;
            }
        }
    }

    return 0;
}


/* An item's attributes into the snapshot: the parse goes with its record. */
static int
copy_attrs(adserve_arena_t *a, const adserve_attrs_t *from, adserve_attrs_t *to)
{
    const adserve_kv_key_t  *k;
    size_t                   bytes = 0, nvalues = 0, end;
    uint32_t                 i;

    *to = *from;
    if (from->nkeys == 0) {
        return 0;
    }

    for (i = 0; i < from->nkeys; i++) {
        k = &from->keys[i];
        nvalues = k->first + k->n > nvalues ? k->first + k->n : nvalues;
        end = (size_t) from->values[k->first + k->n - 1].off
              + from->values[k->first + k->n - 1].len;
        bytes = end > bytes ? end : bytes;
    }

    to->base = adserve_arena_memdup(a, from->base, bytes);
    to->keys = (void *) adserve_arena_memdup(a, from->keys,
                                             from->nkeys * sizeof(adserve_kv_key_t));
    to->values = (void *) adserve_arena_memdup(a, from->values,
                                               nvalues * sizeof(adserve_kv_value_t));

    return to->base && to->keys && to->values ? 0 : -1;
}


/* The catalog's items by item_id (the first of duplicate ids wins), and
 * each pool's items resolved to them: ids the catalog lacks are dropped,
 * so serving only copies. */
static int
build_items(build_t *b)
{
    adserve_snapshot_t           *s = b->snap;
    const adserve_parsed_item_t  *p;
    adserve_item_t               *it;
    uint32_t                      i, j, n = b->n[ADSERVE_KIND_CATALOG_ITEMS];

    s->item_mask = table_size(n) - 1;
    s->items = adserve_arena_calloc(&s->arena, (s->item_mask + 1) * sizeof(adserve_item_t));
    if (s->items == NULL) {
        return -1;
    }

    for (i = 0; i < n; i++) {
        p = &b->item_ps[i]->u.item;
        if (p->item_id == NULL
            || adserve_snapshot_item(s, p->item_id, strlen(p->item_id)) != NULL)
        {
            continue;
        }

        for (j = (uint32_t) p->item_hash & s->item_mask; s->items[j].id.data != NULL;
             j = (j + 1) & s->item_mask)
        {
            /* probe */
        }

        it = &s->items[j];
        it->hash = p->item_hash;
        it->id.len = strlen(p->item_id);
        it->id.data = adserve_arena_memdup(&s->arena, p->item_id, it->id.len);
        it->head.len = p->head_len;
        it->head.data = adserve_arena_memdup(&s->arena, p->head, p->head_len);
        it->url.len = strlen(p->url);
        it->url.data = adserve_arena_memdup(&s->arena, p->url, it->url.len);
        if (it->id.data == NULL || it->head.data == NULL || it->url.data == NULL
            || copy_attrs(&s->arena, &p->attrs, &it->attrs) != 0)
        {
            return -1;
        }
    }

    return 0;
}


/* A table of ranked item lists by their source (an item, or a context),
 * each list resolved to the catalog's items: ids it lacks are dropped, so
 * serving only copies. The first of duplicate sources wins. */
static int
build_pool_table(build_t *b, adserve_parsed_t **ps, uint32_t n, adserve_pool_t **out,
    uint32_t *mask)
{
    adserve_snapshot_t           *s = b->snap;
    const adserve_parsed_pool_t  *p;
    const adserve_item_t         *it;
    adserve_pool_t               *pl, *pools;
    uint32_t                      i, j, k, *v;

    *mask = table_size(n) - 1;
    pools = adserve_arena_calloc(&s->arena, (*mask + 1) * sizeof(adserve_pool_t));
    if (pools == NULL) {
        return -1;
    }
    *out = pools;

    for (i = 0; i < n; i++) {
        p = &ps[i]->u.pool;
        if (p->source == NULL || pool_find(pools, *mask, p->source, strlen(p->source)) != NULL) {
            continue;
        }

        v = adserve_arena_alloc(&s->arena, (p->items.n + 1) * sizeof(uint32_t));
        if (v == NULL) {
            return -1;
        }

        for (k = 0, j = 0; j < p->items.n; j++) {
            it = adserve_snapshot_item(s, p->items.v[j], strlen(p->items.v[j]));
            if (it != NULL) {
                v[k++] = (uint32_t) (it - s->items);
            }
        }

        for (j = (uint32_t) p->source_hash & *mask; pools[j].source.data != NULL;
             j = (j + 1) & *mask)
        {
            /* probe */
        }

        pl = &pools[j];
        pl->hash = p->source_hash;
        pl->source.len = strlen(p->source);
        pl->source.data = adserve_arena_memdup(&s->arena, p->source, pl->source.len);
        pl->items = v;
        pl->n = k;
        if (pl->source.data == NULL) {
            return -1;
        }
    }

    return 0;
}


static int
build_pools(build_t *b)
{
    adserve_snapshot_t  *s = b->snap;

    return build_pool_table(b, b->pool_ps, b->n[ADSERVE_KIND_ITEM_POOLS], &s->pools,
                            &s->pool_mask)
           || build_pool_table(b, b->popular_ps, b->n[ADSERVE_KIND_POPULAR_ITEMS],
                               &s->popular, &s->popular_mask)
           || build_pool_table(b, b->coview_ps, b->n[ADSERVE_KIND_COVIEW_POOLS],
                               &s->coview, &s->coview_mask)
           ? -1 : 0;
}


/* ---- the build --------------------------------------------------------- */

/* The ms since *t, and *t moved to now: one phase's time. */
static unsigned
phase_ms(struct timespec *t)
{
    struct timespec  t0 = *t;

    clock_gettime(CLOCK_MONOTONIC, t);

    return (unsigned) ((t->tv_sec - t0.tv_sec) * 1000
                       + (t->tv_nsec - t0.tv_nsec) / 1000000);
}


static unsigned
elapsed_ms(const struct timespec *t0)
{
    struct timespec  t1 = *t0;

    return phase_ms(&t1);
}


/* Everything of the snapshot made of the joined and ranked units. The
 * catalog first: recommendation units resolve their presets in it; the
 * line items' index last: a variant may serve a line item that its unit
 * never does (a creative its bcat let in). */
static int
render(build_t *b)
{
    return build_items(b) != 0 || build_pools(b) != 0 || build_table(b) != 0
           || build_experiments(b) != 0 || index_lis(b->snap) != 0
           || build_creatives(b) != 0 ? -1 : 0;
}


typedef struct {
    build_t            *b;
    int                 rc;
} keep_part_t;


static void *
keep_part(void *data)
{
    keep_part_t  *kp = data;

    kp->rc = keep_joins(kp->b);

    return NULL;
}


typedef int (*link_pt)(build_t *b, adserve_parsed_t **ps);

static int
build(build_t *b, const adserve_input_t *in)
{
    /* order matters: each kind resolves references to the kinds before it */
    static const link_pt  linkers[ADSERVE_KIND_COUNT] = {
        link_units, link_placements, link_orders,
        link_line_items, link_creatives, link_licas, link_styles, link_unit_styles,
        link_items, link_pools, link_popular, link_coview, link_experiments,
        link_settings, link_sources, link_allocations, link_blocks
    };
    adserve_stats_t    *st = &b->snap->stats;
    adserve_parsed_t  **ps;
    keep_part_t         kp;
    pthread_t           tid;
    uint32_t            k;
    int                 keeping, rc;
    struct timespec     t;

    clock_gettime(CLOCK_MONOTONIC, &t);

    if (parse_all(b) != 0) {
        build_error(b, "out of memory parsing records");
        return -1;
    }

    st->parse_ms = phase_ms(&t);

    for (k = 0; k < ADSERVE_KIND_COUNT; k++) {
        ps = parse_kind(b, in, k);
        if (ps == NULL || linkers[k](b, ps) != 0) {
            build_error(b, "out of memory parsing %s", adserve_kinds[k].key);
            return -1;
        }
    }

    st->link_ms = phase_ms(&t);

    if (join(b) != 0) {
        build_error(b, "out of memory joining line items");
        return -1;
    }

    rank_units(b);
    st->join_ms = phase_ms(&t);

    b->borrow = borrowable(b);

    /* the same parses in the same order as the base's: its table (decided
     * before the joins are kept anew, below) */
    b->borrow_creatives = b->borrow && b->nfresh[ADSERVE_KIND_CREATIVES] == 0
        && b->n[ADSERVE_KIND_CREATIVES] == b->joins->n[ADSERVE_KIND_CREATIVES]
        && b->order[ADSERVE_KIND_CREATIVES] == b->joins->order[ADSERVE_KIND_CREATIVES];

    /* the joins are kept for the next build while this one renders, on
     * another thread: keeping reads the units' pairs, ranked, and nothing
     * that rendering writes */
    kp.b = b;
    kp.rc = 0;
    keeping = b->joins != NULL && nparts(b, st->joined, share_from(b)) > 1
              && pthread_create(&tid, NULL, keep_part, &kp) == 0;

    rc = render(b);

    st->render_ms = phase_ms(&t);

    if (keeping) {
        (void) pthread_join(tid, NULL);

    } else if (b->joins != NULL && rc == 0) {
        (void) keep_part(&kp);
    }

    /* the snapshot stands without them: the next build joins all */
    if (b->joins != NULL && kp.rc != 0) {
        adserve_joins_clear(b->joins);
    }

    st->keep_ms = phase_ms(&t);

    if (rc != 0) {
        build_error(b, "out of memory ranking candidates");
    }

    return rc;
}


static void
build_cleanup(build_t *b)
{
    uint32_t  i, k;

    for (i = 0; b->units && i < b->n[ADSERVE_KIND_AD_UNITS]; i++) {
        free(b->units[i].cands);
        free(b->units[i].excl);
        free(b->units[i].allocs);
    }

    for (i = 0; b->crs && i < b->n[ADSERVE_KIND_CREATIVES]; i++) {
        free(b->crs[i].native);
    }

    for (i = 0; i < b->nvariant_ps; i++) {
        adserve_parsed_free(b->variant_ps[i]);
    }

    /* the parses of records without a slot; the others are kept */
    for (k = 0; k < ADSERVE_KIND_COUNT; k++) {
        for (i = 0; b->parses[k] != NULL && i < b->in->nrecords[k]; i++) {
            if (b->in->records[k][i].parsed == NULL) {
                adserve_parsed_free(b->parses[k][i]);
            }
        }
    }

    adserve_target_builder_free(&b->tb);
    adserve_arena_free(&b->tmp);
}


adserve_snapshot_t *
adserve_snapshot_build(const adserve_input_t *in, char *err, size_t errlen)
{
    build_t              b;
    adserve_snapshot_t  *s;
    adserve_arena_t      arena;
    struct timespec      t0;

    clock_gettime(CLOCK_MONOTONIC, &t0);

    /* the snapshot lives in its own arena, the struct included: one
     * allocator for all of it (a shared zone takes it whole) */
    adserve_arena_init_from(&arena, 256 * 1024, in->allocator);

    s = adserve_arena_calloc(&arena, sizeof(adserve_snapshot_t));
    if (s == NULL) {
        adserve_arena_free(&arena);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }

    s->arena = arena;
    s->rev = in->rev;
    s->refs = 1;

    memset(&b, 0, sizeof(build_t));
    adserve_arena_init(&b.tmp, 256 * 1024);
    b.snap = s;
    adserve_target_builder_init(&b.tb, &s->arena);
    b.err = err;
    b.errlen = errlen;
    b.in = in;
    b.public_url = in->public_url;
    b.prev = in->prev;
    s->prev = in->prev;
    b.joins = in->joins;

    if (build(&b, in) != 0) {
        /* some parses are marked built, yet nothing was kept of them */
        if (b.joins != NULL) {
            adserve_joins_clear(b.joins);
        }
        build_cleanup(&b);
        adserve_snapshot_free(s);
        return NULL;
    }

    build_cleanup(&b);
    s->stats.bytes = s->arena.total;
    s->chain_bytes = s->stats.bytes;
    s->whole_bytes = s->stats.bytes;

    /* the base is only ever read again, but for its count of borrowers */
    if (b.borrow) {
        s->base = (adserve_snapshot_t *) in->prev;
        s->base->refs++;
        s->depth = s->base->depth + 1;
        s->chain_bytes += s->base->chain_bytes;
        s->whole_bytes = s->base->whole_bytes;
    }

    s->stats.build_ms = elapsed_ms(&t0);

    return s;
}


void
adserve_snapshot_free(adserve_snapshot_t *s)
{
    adserve_snapshot_t  *base;
    adserve_arena_t      arena;

    /* down the chain, as long as nothing else borrows */
    while (s != NULL && --s->refs == 0) {
        base = s->base;
        arena = s->arena;           /* s is in it */
        adserve_arena_free(&arena);
        s = base;
    }
}


const adserve_item_t *
adserve_snapshot_item(const adserve_snapshot_t *s, const char *id, size_t len)
{
    uint64_t  h;
    uint32_t  j;

    if (s == NULL || s->items == NULL) {
        return NULL;
    }

    h = adserve_hash(id, len);

    for (j = (uint32_t) h & s->item_mask; s->items[j].id.data != NULL;
         j = (j + 1) & s->item_mask)
    {
        if (s->items[j].hash == h && s->items[j].id.len == len
            && memcmp(s->items[j].id.data, id, len) == 0)
        {
            return &s->items[j];
        }
    }

    return NULL;
}


/* The pool of a table (pools or popular) with this source, or NULL. */
static const adserve_pool_t *
pool_find(const adserve_pool_t *pools, uint32_t mask, const char *id, size_t len)
{
    uint64_t  h;
    uint32_t  j;

    if (pools == NULL) {
        return NULL;
    }

    h = adserve_hash(id, len);

    for (j = (uint32_t) h & mask; pools[j].source.data != NULL; j = (j + 1) & mask) {
        if (pools[j].hash == h && pools[j].source.len == len
            && memcmp(pools[j].source.data, id, len) == 0)
        {
            return &pools[j];
        }
    }

    return NULL;
}


const adserve_pool_t *
adserve_snapshot_pool(const adserve_snapshot_t *s, int algorithm, const char *id, size_t len)
{
    if (s == NULL) {
        return NULL;
    }

    switch (algorithm) {
    case ADSERVE_ALGORITHM_AXA0:
        return pool_find(s->pools, s->pool_mask, id, len);
    case ADSERVE_ALGORITHM_COVIEW:
        return pool_find(s->coview, s->coview_mask, id, len);
    default:
        return NULL;                  /* one adserve does not have */
    }
}


const adserve_pool_t *
adserve_snapshot_popular(const adserve_snapshot_t *s, const char *context, size_t len)
{
    return s != NULL ? pool_find(s->popular, s->popular_mask, context, len) : NULL;
}


int
adserve_snapshot_counts_context(const adserve_snapshot_t *s, const char *context, size_t len)
{
    uint32_t  i;

    for (i = 0; s != NULL && i < s->npop_contexts; i++) {
        if (s->pop_contexts[i].len == len && memcmp(s->pop_contexts[i].data, context, len) == 0)
        {
            return 1;
        }
    }

    return 0;
}


/* What a unit's decision reads first, fetched as soon as its slot is: the
 * unit's record (it spans several lines, read here and there all along
 * the request) and its first candidates. */
static void
unit_ahead(const adserve_unit_t *u, const adserve_unit_slot_t *e)
{
    const char  *p;

    for (p = (const char *) u; p < (const char *) (u + 1); p += 64) {
        __builtin_prefetch(p);
    }

    for (p = (const char *) e->cands; p < (const char *) (e->cands + e->ahead); p += 64) {
        __builtin_prefetch(p);
    }
}


const adserve_unit_t *
adserve_snapshot_unit(const adserve_snapshot_t *s, const char *id, size_t len)
{
    return adserve_snapshot_unit_hashed(s, id, len, adserve_hash(id, len));
}


const adserve_unit_t *
adserve_snapshot_unit_hashed(const adserve_snapshot_t *s, const char *id, size_t len,
    uint64_t hash)
{
    const adserve_unit_slot_t  *e;
    const adserve_unit_t       *u;
    uint32_t                    i;
    size_t                      head;

    if (s == NULL) {
        return NULL;
    }

    head = len < ADSERVE_UNIT_SLOT_HEAD ? len : ADSERVE_UNIT_SLOT_HEAD;

    for (i = (uint32_t) hash & s->unit_mask;
         (e = &s->unit_index[i])->unit != 0;
         i = (i + 1) & s->unit_mask)
    {
        if (e->len != len || memcmp(e->head, id, head) != 0) {
            continue;
        }

        u = &s->units[e->unit - 1];

        if (len > head && memcmp(u->id + head, id + head, len - head) != 0) {
            continue;
        }

        unit_ahead(u, e);

        return u;
    }

    return NULL;
}


const adserve_unit_t *
adserve_unit_for_user(const adserve_unit_t *u, const char *user, size_t len)
{
    const adserve_experiment_t  *x = u->experiment;
    uint32_t                     i, draw;

    if (x == NULL || len == 0) {
        return u;
    }

    draw = adserve_experiment_draw(x->salt, user, len);

    for (i = 0; i + 1 < x->n && draw >= x->variants[i].upto; i++) { /* void */ }

    return x->variants[i].unit;
}


const adserve_unit_t *
adserve_unit_variant(const adserve_unit_t *u, const char *id, size_t len)
{
    const adserve_experiment_t  *x = u->experiment;
    uint32_t                     i;

    for (i = 0; x != NULL && len && i < x->n; i++) {
        if (x->variants[i].id.len == len && memcmp(x->variants[i].id.data, id, len) == 0) {
            return x->variants[i].unit;
        }
    }

    return u;
}


const adserve_creative_t *
adserve_snapshot_creative(const adserve_snapshot_t *s, const char *id, size_t len)
{
    const adserve_creative_t  *c;
    uint32_t                   i;

    if (s == NULL) {
        return NULL;
    }

    for (i = (uint32_t) adserve_hash(id, len) & s->creative_mask; ;
         i = (i + 1) & s->creative_mask)
    {
        c = &s->creatives[i];

        if (c->id.data == NULL) {
            return NULL;
        }

        if (c->id.len == len && memcmp(c->id.data, id, len) == 0) {
            return c;
        }
    }
}


adserve_li_t *
adserve_snapshot_li(const adserve_snapshot_t *s, const char *id, size_t len)
{
    uint32_t       i, k;
    adserve_li_t  *li;

    if (s == NULL || s->li_index == NULL) {
        return NULL;
    }

    for (i = (uint32_t) adserve_hash(id, len) & s->li_mask; (k = s->li_index[i]);
         i = (i + 1) & s->li_mask)
    {
        li = &s->lis[k - 1];
        if (li->id.len == len && memcmp(li->id.data, id, len) == 0) {
            return li;
        }
    }

    return NULL;
}


/* xorshift32: the decision's further random draws, from the caller's seed */
static inline uint32_t
next_rnd(adserve_decision_t *d)
{
    uint32_t  x = d->rnd ? d->rnd : 0x9e3779b9;

    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    d->rnd = x;

    return x;
}


/* Whether one more ad now would break a cap: the user's ads of this line
 * item inside (now - seconds, now] must stay below max. Unknown (no user
 * id, Redis late or down): the line item does not serve. An ad Redis
 * reserved for the request (exact caps) may go; one it refused may not. */
static int
capped(uint32_t idx, const adserve_li_t *li, const adserve_decision_t *d)
{
    uint32_t  i, k, n;

    for (i = 0; i < d->ngranted; i++) {
        if (d->granted[i] == li->hash) {
            return 0;
        }
    }

    if (!d->caps_known) {
        return 1;
    }

    for (i = 0; i < d->nrefused; i++) {
        if (d->refused[i] == li->hash) {
            return 1;
        }
    }

    for (k = 0; k < li->ncaps; k++) {
        n = 0;
        for (i = 0; i < d->nseen; i++) {
            if (d->seen[i].li == idx && d->seen[i].at > d->now - li->caps[k].seconds) {
                n++;
            }
        }

        if (n >= li->caps[k].max) {
            return 1;
        }
    }

    return 0;
}


adserve_reason_e
adserve_li_check(const adserve_li_t *li, const adserve_unit_t *u,
    const adserve_cand_t *c, adserve_decision_t *d)
{
    const adserve_pace_t  *pace;

    if (d->now < li->start || d->now >= li->end) {
        return ADSERVE_NO_FLIGHT;
    }

    pace = &d->paces[c->li];

    if (pace->stopped) {
        return ADSERVE_NO_GOAL_REACHED;
    }

    if (li->tier == ADSERVE_TIER_PRICE_PRIORITY && c->bid * pace->factor < u->floor) {
        return ADSERVE_NO_FLOOR;
    }

    if (li->ncaps && capped(c->li, li, d)) {
        return ADSERVE_NO_FREQUENCY_CAP;
    }

    if (li->target != NULL && !adserve_target_match(li->target, d->facts, d->now)) {
        return ADSERVE_NO_TARGETING;
    }

    return ADSERVE_OK;
}


/* a line item's creative, by LICA weight */
static const adserve_cand_t *
pick_creative(const adserve_cand_t *c, const adserve_cand_t *end, uint32_t rnd)
{
    const adserve_cand_t  *k;
    uint64_t               total = 0, pick;

    for (k = c; k < end; k++) {
        total += k->weight;
    }

    pick = (uint64_t) rnd % total;

    for (k = c; k < end - 1; k++) {
        if (pick < k->weight) {
            break;
        }
        pick -= k->weight;
    }

    return k;
}


/* What the answer to a decision reads first, fetched as it is made: its
 * token's creative id, and the start of the head copied into its body
 * (a display ad's whole head; the hardware's own prefetch follows a
 * longer copy). Both are the snapshot's, cold since the creative last
 * served. */
#define ADSERVE_ANSWER_AHEAD  512         /* bytes of the head */

static const adserve_cand_t *
answer_ahead(const adserve_cand_t *c)
{
    const char  *p, *end;

    adserve_prefetch(c->creative_id.data);

    end = c->response_head
          + (c->response_head_len < ADSERVE_ANSWER_AHEAD ? c->response_head_len
                                                         : ADSERVE_ANSWER_AHEAD);
    for (p = c->response_head; p < end; p += 64) {
        adserve_prefetch(p);
    }

    return c;
}


void
adserve_decide_ahead(const adserve_snapshot_t *s, const adserve_unit_t *u,
    const adserve_pace_t *paces)
{
    const adserve_cand_t  *c;
    uint32_t               i, n;

    n = adserve_cands_ahead(u);

    for (i = 0, c = u->cands; i < n; i++, c++) {
        __builtin_prefetch(&s->lis[c->li]);
        if (paces != NULL) {
            __builtin_prefetch(&paces[c->li]);
        }
    }
}


const adserve_cand_t *
adserve_decide(const adserve_snapshot_t *s, const adserve_unit_t *u,
    adserve_decision_t *d)
{
    const adserve_cand_t  *c = d->video_only ? u->vcands : u->cands;
    const adserve_cand_t  *end = c + (d->video_only ? u->nvcands : u->ncands);
    const adserve_cand_t  *g, *run_end, *best, *best_end = NULL;
    const adserve_li_t    *li;
    adserve_pace_t        *pace;
    uint32_t               seed = d->rnd, ties = 0;
    double                 ecpm, best_ecpm = 0;

    while (c < end) {
        best = NULL;

        for (g = c; g < end && g->group == c->group; g = run_end) {
            for (run_end = g + 1; run_end < end && run_end->li == g->li; run_end++) {
                /* void */
            }

            li = &s->lis[g->li];

            if (adserve_li_check(li, u, g, d) != ADSERVE_OK) {
                continue;
            }

            /* the ad_log token of the line item chosen carries its id */
            adserve_prefetch(li->id.data);

            pace = &d->paces[g->li];

            if (li->paced) {
                pace->opp += !d->dry;
                if (!adserve_pace_allows(pace, next_rnd(d))) {
                    continue;
                }
            }

            /* the highest eCPM; equals at random (reservoir of one) */
            ecpm = g->bid * pace->factor;

            if (best == NULL || ecpm > best_ecpm) {
                best = g;
                best_end = run_end;
                best_ecpm = ecpm;
                ties = 1;

            } else if (ecpm == best_ecpm && next_rnd(d) % ++ties == 0) {
                best = g;
                best_end = run_end;
            }
        }

        if (best != NULL) {
            d->paces[best->li].served += d->dry ? 0 : s->lis[best->li].paced;
            return answer_ahead(pick_creative(best, best_end, seed));
        }

        c = g;
    }

    return NULL;
}


uint32_t
adserve_explain(const adserve_snapshot_t *s, const adserve_unit_t *u,
    adserve_decision_t *d, adserve_explained_t *out)
{
    const adserve_cand_t  *c, *end = u->cands + u->ncands;
    adserve_explained_t   *x;
    const adserve_li_t    *li;
    uint32_t               n = 0, i, first = 0, group = UINT32_MAX;
    double                 best = -1;
    int                    decided = 0, nbest = 0;

    for (c = u->cands; c < end; n++) {
        x = &out[n];
        li = &s->lis[c->li];
        x->li = li;
        x->cand = c;
        for (x->ncands = 0; c < end && c->li == x->cand->li; c++) {
            x->ncands++;
        }

        x->pace = &d->paces[x->cand->li];
        x->ecpm = x->cand->bid * x->pace->factor;
        x->reason = adserve_li_check(li, u, x->cand, d);
        if (x->reason == ADSERVE_OK && li->paced
            && (x->pace->served >= x->pace->budget || x->pace->allow == 0))
        {
            x->reason = ADSERVE_NO_PACING;
        }
        x->verdict = x->reason == ADSERVE_OK ? ADSERVE_X_LOWER_PRIORITY : ADSERVE_X_RULE;

        /* the end of a group: the first one with a line item able to
         * serve is where the decision is made */
        if (x->cand->group != group) {
            if (!decided && best >= 0) {
                decided = 1;
            }
            if (!decided) {
                group = x->cand->group;
                first = n;
            }
        }

        if (!decided && x->reason == ADSERVE_OK) {
            if (x->ecpm > best) {
                best = x->ecpm;
                nbest = 1;
            } else if (x->ecpm == best) {
                nbest++;
            }
        }
    }

    for (i = first; best >= 0 && i < n && out[i].cand->group == group; i++) {
        if (out[i].reason == ADSERVE_OK) {
            out[i].verdict = out[i].ecpm < best ? ADSERVE_X_OUTRANKED
                             : nbest > 1 ? ADSERVE_X_TIED : ADSERVE_X_WON;
        }
    }

    return n;
}


/* ---- input ------------------------------------------------------------- */

void
adserve_input_init(adserve_input_t *in)
{
    memset(in, 0, sizeof(adserve_input_t));
    adserve_arena_init(&in->arena, 256 * 1024);
}


int
adserve_input_ref(adserve_input_t *in, adserve_kind_e kind, const char *data,
    size_t len)
{
    return adserve_input_ref_parsed(in, kind, data, len, NULL);
}


int
adserve_input_ref_parsed(adserve_input_t *in, adserve_kind_e kind,
    const char *data, size_t len, adserve_parsed_t **parsed)
{
    adserve_input_rec_t  *v;
    size_t                cap;

    if (in->nrecords[kind] == in->cap[kind]) {
        /* arrays double inside the arena; the old copies are garbage
         * until the load ends, at most as much again as the final array */
        cap = in->cap[kind] ? in->cap[kind] * 2 : 256;
        v = adserve_arena_alloc(&in->arena, cap * sizeof(adserve_input_rec_t));
        if (v == NULL) {
            return -1;
        }
        if (in->nrecords[kind]) {
            memcpy(v, in->records[kind],
                   in->nrecords[kind] * sizeof(adserve_input_rec_t));
        }
        in->records[kind] = v;
        in->cap[kind] = cap;
    }

    v = &in->records[kind][in->nrecords[kind]++];
    v->data = data;
    v->len = len;
    v->parsed = parsed;

    return 0;
}


void
adserve_input_free(adserve_input_t *in)
{
    adserve_arena_free(&in->arena);
    memset(in, 0, sizeof(adserve_input_t));
}
