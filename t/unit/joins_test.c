/* adserve_joins: a build that joins only what changed makes the snapshot
 * that joining everything makes. Each step below writes the records as the
 * API would (line items, creatives and LICAs most, now and then a unit, a
 * placement or an order), builds once keeping joins and once without, from
 * the same records, and compares every unit's candidates and exclusions. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adserve_records.h"
#include "adserve_pacing.h"
#include "tap.h"

#define NUNITS  12
#define NPLACE  3
#define NORDERS 4
#define NLIS    40
#define NCRS    60

typedef struct {
    int      exists, active, priority, type, nincl, nexcl, nplace;
    int      order, incl[3], excl[2], place[2];
} li_t;

typedef struct {
    int      exists, approved, w, cat;
} cr_t;

static adserve_records_t inv[ADSERVE_KIND_COUNT];
static adserve_joins_t   joins;
static li_t              lis[NLIS];
static cr_t              crs[NCRS];
static int               lica[NLIS][NCRS];       /* weight, 0: none */
static int               bcat[NUNITS], place_units[NPLACE][3], order_ok[NORDERS];
static unsigned long     rnd_state = 12345;

static int rnd(int n) {
    rnd_state = rnd_state * 6364136223846793005ul + 1442695040888963407ul;
    return (int) ((rnd_state >> 33) % (unsigned long) n);
}

/* records written under another key than their id, twins of the records
 * of that id (the build keeps the first of those it lists, in the order of
 * the records' table: some keys come before the id's own, some after) */
static const char *const twin_keys[] = { "~", "#2", "-b", ".x", "_" };
#define NTWINS  (sizeof(twin_keys) / sizeof(twin_keys[0]))
static const char *key_suffix = "";
static int twin_writes, unit_twin[NUNITS], place_twin[NPLACE];   /* 1 + key */

static void put(adserve_kind_e kind, const char *id, const char *text) {
    char key[64];

    snprintf(key, sizeof key, "%s%s", id, key_suffix);
    if (adserve_records_put(&inv[kind], key, strlen(key), text, strlen(text)) != 0) abort();
}

static void del(adserve_kind_e kind, const char *id) {
    char key[64];

    snprintf(key, sizeof key, "%s%s", id, key_suffix);
    adserve_records_del(&inv[kind], key, strlen(key));
}

/* Under ASan: freed parses' addresses are used again at once, so that a
 * kept pointer meets a new parse where its old one was. */
const char *__asan_default_options(void);
const char *__asan_default_options(void) {
    return "quarantine_size_mb=0";
}

static void put_unit(int i) {
    char id[16], text[512];

    snprintf(id, sizeof id, "u%d", i);
    snprintf(text, sizeof text,
             "{\"id\":\"%s\",\"code\":\"%s\",\"name\":\"U\",\"status\":\"%s\","
             "\"display\":{\"w\":%d,\"h\":%d}%s%s%s%s}",
             id, id, i == 11 ? "INACTIVE" : "ACTIVE", i % 2 ? 728 : 300, i % 2 ? 90 : 250,
             i >= 1 && i <= 3 ? ",\"parent_id\":\"u0\"" : "",
             bcat[i] ? ",\"ext\":{\"bcat\":[\"IAB" : "",
             bcat[i] ? (bcat[i] == 1 ? "3" : "7") : "", bcat[i] ? "\"]}" : "");
    put(ADSERVE_KIND_AD_UNITS, id, text);
}

static void put_placement(int i) {
    char id[16], text[256];

    snprintf(id, sizeof id, "p%d", i);
    snprintf(text, sizeof text, "{\"id\":\"%s\",\"name\":\"P\",\"ad_unit_ids\":"
             "[\"u%d\",\"u%d\",\"u%d\"]}", id, place_units[i][0], place_units[i][1],
             place_units[i][2]);
    put(ADSERVE_KIND_PLACEMENTS, id, text);
}

static void put_order(int i) {
    char id[16], text[256];

    snprintf(id, sizeof id, "o%d", i);
    snprintf(text, sizeof text, "{\"id\":\"%s\",\"advertiser_id\":\"a\",\"name\":\"O\","
             "\"status\":\"%s\"}", id, order_ok[i] ? "APPROVED" : "PAUSED");
    put(ADSERVE_KIND_ORDERS, id, text);
}

static void put_li(int i) {
    static const char *types[] = { "STANDARD", "PRICE_PRIORITY", "SPONSORSHIP", "HOUSE" };
    char id[16], text[1024], incl[64] = "", excl[64] = "", place[64] = "";
    li_t *l = &lis[i];
    int k;

    snprintf(id, sizeof id, "l%d", i);
    if (!l->exists) {
        del(ADSERVE_KIND_LINE_ITEMS, id);
        return;
    }
    for (k = 0; k < l->nincl; k++) {
        snprintf(incl + strlen(incl), sizeof incl - strlen(incl), "%s\"u%d\"", k ? "," : "",
                 l->incl[k]);
    }
    for (k = 0; k < l->nexcl; k++) {
        snprintf(excl + strlen(excl), sizeof excl - strlen(excl), "%s\"u%d\"", k ? "," : "",
                 l->excl[k]);
    }
    for (k = 0; k < l->nplace; k++) {
        snprintf(place + strlen(place), sizeof place - strlen(place), "%s\"p%d\"",
                 k ? "," : "", l->place[k]);
    }
    snprintf(text, sizeof text,
             "{\"id\":\"%s\",\"order_id\":\"o%d\",\"name\":\"L\",\"status\":\"%s\","
             "\"type\":\"%s\",\"priority\":%d,\"cost_type\":\"%s\",\"rate\":%d.5,"
             "\"start_at\":\"2020-01-01T00:00:00Z\",\"end_at\":\"2099-01-01T00:00:00Z\","
             "\"targeting\":{\"ad_units\":{\"include\":[%s],\"exclude\":[%s]},"
             "\"placements\":[%s]}}",
             id, l->order, l->active ? "ACTIVE" : "PAUSED", types[l->type], l->priority,
             i % 3 ? "CPM" : "CPC", i % 7, incl, excl, place);
    put(ADSERVE_KIND_LINE_ITEMS, id, text);
}

static void put_cr(int i) {
    char id[16], text[512];
    cr_t *c = &crs[i];

    snprintf(id, sizeof id, "c%d", i);
    if (!c->exists) {
        del(ADSERVE_KIND_CREATIVES, id);
        return;
    }
    snprintf(text, sizeof text,
             "{\"id\":\"%s\",\"advertiser_id\":\"a\",\"name\":\"C\",\"type\":\"IMAGE\","
             "\"w\":%d,\"h\":%d,\"image_url\":\"https://cdn.example/%s.png\","
             "\"landing_url\":\"https://adv.example/\",\"approval\":\"%s\","
             "\"categories\":[\"IAB%d\"]}",
             id, c->w ? 728 : 300, c->w ? 90 : 250, id, c->approved ? "APPROVED" : "PENDING",
             c->cat);
    put(ADSERVE_KIND_CREATIVES, id, text);
}

/* the pair's LICA, or (second) another one of the same pair, of weight w
 * (0: none) */
static void put_lica_as(int l, int c, int second, int w) {
    char id[32], text[256];

    snprintf(id, sizeof id, "%s%d-%d", second ? "y" : "x", l, c);
    if (w == 0) {
        del(ADSERVE_KIND_LICAS, id);
        return;
    }
    snprintf(text, sizeof text, "{\"id\":\"%s\",\"line_item_id\":\"l%d\",\"creative_id\":"
             "\"c%d\",\"status\":\"ACTIVE\",\"weight\":%d}", id, l, c, w);
    put(ADSERVE_KIND_LICAS, id, text);
}

static void put_lica(int l, int c) {
    put_lica_as(l, c, 0, lica[l][c]);
}

static void new_li(int i) {
    li_t *l = &lis[i];
    int k;

    l->exists = 1;
    l->active = rnd(6) != 0;
    l->priority = 1 + rnd(4);
    l->type = rnd(4);
    l->order = rnd(NORDERS);
    l->nincl = rnd(3);
    for (k = 0; k < l->nincl; k++) l->incl[k] = rnd(NUNITS);
    l->nexcl = rnd(4) == 0;
    for (k = 0; k < l->nexcl; k++) l->excl[k] = rnd(NUNITS);
    l->nplace = rnd(3) == 0;
    for (k = 0; k < l->nplace; k++) l->place[k] = rnd(NPLACE);
    put_li(i);
}

static void new_cr(int i) {
    crs[i].exists = 1;
    crs[i].approved = rnd(8) != 0;
    crs[i].w = rnd(2);
    crs[i].cat = 1 + rnd(8);
    put_cr(i);
}

/* prev: the snapshot served, which the build may borrow from (the loader
 * passes its own last one) */
static size_t room;                 /* the input's: 0, no bound */
static unsigned builds;

static adserve_snapshot_t *build_from(adserve_joins_t *j, const adserve_snapshot_t *prev) {
    adserve_input_t in;
    adserve_snapshot_t *s;
    char err[128];
    int k;

    adserve_input_init(&in);
    in.public_url = "http://ads.example";
    in.joins = j;
    in.prev = prev;
    in.room = room;
    /* on one, two or three threads in turn, however few the line items: a
     * build that joins all of them shares its join, ranking and keeping */
    in.threads = 1 + builds++ % 3;
    in.share_from = 1;
    for (k = 0; k < ADSERVE_KIND_COUNT; k++) {
        if (adserve_records_export(&inv[k], &in, k) != 0) abort();
    }
    s = adserve_snapshot_build(&in, err, sizeof err);
    if (s == NULL) {
        fprintf(stderr, "# build: %s\n", err);
        abort();
    }
    adserve_input_free(&in);
    return s;
}

static adserve_snapshot_t *build(adserve_joins_t *j) {
    return build_from(j, NULL);
}

static uint32_t live_lis(const adserve_snapshot_t *s) {
    uint32_t i, n = 0;

    for (i = 0; i < s->nlis; i++) n += !s->lis[i].dead;
    return n;
}

static int excl_cmp(const void *pa, const void *pb) {
    const adserve_excl_t *a = pa, *b = pb;
    int c = strcmp(a->line_item_id.data, b->line_item_id.data);

    c = c ? c : strcmp(a->creative_id.data, b->creative_id.data);
    return c ? c : a->reason - b->reason;
}

/* "" when each line item of s whose pace carries (not CPM, here) is
 * mapped to its own slot in the snapshot before, and no other is */
static const char *plan_differs(const adserve_snapshot_t *s, const adserve_snapshot_t *prev) {
    static char why[128];
    const adserve_li_t *o;
    uint32_t i, want;

    for (i = 0; i < s->nlis; i++) {
        if (s->lis[i].dead) continue;
        o = prev ? adserve_snapshot_li(prev, s->lis[i].id.data, s->lis[i].id.len) : NULL;
        want = o != NULL && (s->lis[i].paced || s->lis[i].cost_type != ADSERVE_COST_CPM)
               && adserve_pace_carries(o, &s->lis[i])
               ? (uint32_t) (o - prev->lis) : ADSERVE_LI_NONE;
        if (s->plan[i].prev != want) {
            snprintf(why, sizeof why, "%s's pace maps to %u, not %u", s->lis[i].id.data,
                     s->plan[i].prev, want);
            return why;
        }
    }
    return "";
}

/* "" when both snapshots serve the same, else what differs first */
static const char *differs(const adserve_snapshot_t *a, const adserve_snapshot_t *b) {
    static char why[256];
    adserve_excl_t xa[NLIS * NCRS], xb[NLIS * NCRS];
    char id[16];
    uint32_t i, k;

    if (a->stats.candidates != b->stats.candidates || live_lis(a) != live_lis(b)) {
        return "candidates or line items";
    }
    /* every line item found by its id, the same, and no dead slot found */
    for (i = 0; i < b->nlis; i++) {
        const adserve_li_t *la, *lb = &b->lis[i];
        la = adserve_snapshot_li(a, lb->id.data, lb->id.len);
        if (la == NULL || la->dead || la->start != lb->start || la->end != lb->end
            || la->tier != lb->tier || la->priority != lb->priority || la->paced != lb->paced
            || la->cost_type != lb->cost_type || la->ncaps != lb->ncaps)
        {
            snprintf(why, sizeof why, "line item %s", lb->id.data);
            return why;
        }
        if (a->plan[la - a->lis].paced != b->plan[i].paced
            || a->plan[la - a->lis].cost_type != b->plan[i].cost_type)
        {
            snprintf(why, sizeof why, "line item %s's pace plan", lb->id.data);
            return why;
        }
    }
    for (i = 0; i < NUNITS; i++) {
        const adserve_unit_t *ua, *ub;
        snprintf(id, sizeof id, "u%u", i);
        ua = adserve_snapshot_unit(a, id, strlen(id));
        ub = adserve_snapshot_unit(b, id, strlen(id));
        if ((ua == NULL) != (ub == NULL)) return "a unit";
        if (ua == NULL) continue;
        if (ua->ncands != ub->ncands || ua->nexcluded != ub->nexcluded) {
            snprintf(why, sizeof why, "%s: %u/%u candidates, %u/%u excluded", id, ua->ncands,
                     ub->ncands, ua->nexcluded, ub->nexcluded);
            return why;
        }
        for (k = 0; k < ua->ncands; k++) {
            const adserve_cand_t *ca = &ua->cands[k], *cb = &ub->cands[k];
            if (strcmp(a->lis[ca->li].id.data, b->lis[cb->li].id.data) != 0
                || strcmp(ca->creative_id.data, cb->creative_id.data) != 0
                || ca->weight != cb->weight || ca->group != cb->group
                || ca->bid_micros != cb->bid_micros || ca->format != cb->format
                || ca->response_head_len != cb->response_head_len
                || memcmp(ca->response_head, cb->response_head, ca->response_head_len) != 0)
            {
                snprintf(why, sizeof why, "%s: candidate %u: %s/%s against %s/%s", id, k,
                         a->lis[ca->li].id.data, ca->creative_id.data,
                         b->lis[cb->li].id.data, cb->creative_id.data);
                return why;
            }
        }
        if (ua->nexcluded == 0) continue;
        memcpy(xa, ua->excluded, ua->nexcluded * sizeof(adserve_excl_t));
        memcpy(xb, ub->excluded, ub->nexcluded * sizeof(adserve_excl_t));
        qsort(xa, ua->nexcluded, sizeof(adserve_excl_t), excl_cmp);
        qsort(xb, ub->nexcluded, sizeof(adserve_excl_t), excl_cmp);
        for (k = 0; k < ua->nexcluded; k++) {
            if (excl_cmp(&xa[k], &xb[k]) != 0) {
                snprintf(why, sizeof why, "%s: exclusion %u", id, k);
                return why;
            }
        }
    }
    return "";
}

/* A twin of record id (again(i) writes it) under a key of its own, or the
 * end of the twin it has; *twin: 1 + its key's index, 0 none. */
static void toggle_twin(int *twin, adserve_kind_e kind, const char *id, void (*again)(int),
                        int i) {
    twin_writes++;
    if (*twin) {
        key_suffix = twin_keys[*twin - 1];
        del(kind, id);
        *twin = 0;
    } else {
        *twin = 1 + rnd(NTWINS);
        key_suffix = twin_keys[*twin - 1];
        again(i);
    }
}

/* one write, as the API would make it; *kind: which */
static void mutate(int *kind) {
    int l = rnd(NLIS), c = rnd(NCRS), r = rnd(100);

    *kind = 0;
    if (r < 15) {                                   /* a line item's status */
        if (!lis[l].exists) new_li(l);
        lis[l].active = !lis[l].active;
        put_li(l);
    } else if (r < 25) {                            /* its targeting */
        if (!lis[l].exists) new_li(l);
        lis[l].nincl = 1 + rnd(3);
        lis[l].incl[0] = rnd(NUNITS);
        lis[l].incl[1] = rnd(NUNITS);
        lis[l].incl[2] = rnd(NUNITS);
        put_li(l);
    } else if (r < 32) {                            /* its rank */
        if (!lis[l].exists) new_li(l);
        lis[l].priority = 1 + rnd(4);
        lis[l].type = rnd(4);
        put_li(l);
    } else if (r < 37) {                            /* deleted, or back */
        lis[l].exists ? (lis[l].exists = 0, put_li(l)) : new_li(l);
    } else if (r < 52) {                            /* a LICA: added, weighed, gone */
        lica[l][c] = lica[l][c] && rnd(2) ? 0 : 1 + rnd(3);
        put_lica(l, c);
    } else if (r < 60) {                            /* a creative's approval */
        if (!crs[c].exists) new_cr(c);
        crs[c].approved = !crs[c].approved;
        put_cr(c);
    } else if (r < 68) {                            /* its size, its category */
        if (!crs[c].exists) new_cr(c);
        crs[c].w = rnd(2);
        crs[c].cat = 1 + rnd(8);
        put_cr(c);
    } else if (r < 73) {                            /* deleted, or back */
        crs[c].exists ? (crs[c].exists = 0, put_cr(c)) : new_cr(c);
    } else if (r < 74) {                            /* the same text again */
        put_li(l);
        put_cr(c);
    } else if (r < 75) {                            /* a pair's second LICA */
        put_lica_as(l, c, 1, rnd(3) ? 1 + rnd(3) : 0);
    } else if (r < 83) {                            /* a twin, or its end */
        int on = rnd(2), u = l % NUNITS, pl = c % NPLACE;
        char id[32];
        key_suffix = twin_keys[rnd(NTWINS)];
        switch (rnd(5)) {
        case 0:                                     /* written, or gone */
            *kind = 1;
            snprintf(id, sizeof id, "u%d", u);
            toggle_twin(&unit_twin[u], ADSERVE_KIND_AD_UNITS, id, put_unit, u);
            break;
        case 1:
            *kind = 1;
            snprintf(id, sizeof id, "p%d", pl);
            toggle_twin(&place_twin[pl], ADSERVE_KIND_PLACEMENTS, id, put_placement, pl);
            break;
        case 2:
            snprintf(id, sizeof id, "l%d", l);
            on && lis[l].exists ? put_li(l) : del(ADSERVE_KIND_LINE_ITEMS, id);
            break;
        case 3:
            snprintf(id, sizeof id, "c%d", c);
            on && crs[c].exists ? put_cr(c) : del(ADSERVE_KIND_CREATIVES, id);
            break;
        default:
            snprintf(id, sizeof id, "x%d-%d", l, c);
            on && lica[l][c] ? put_lica(l, c) : del(ADSERVE_KIND_LICAS, id);
            break;
        }
        key_suffix = "";
    } else if (r < 88) {                            /* a unit's bcat */
        *kind = 1;
        bcat[l % NUNITS] = rnd(3);
        put_unit(l % NUNITS);
    } else if (r < 90) {                            /* a placement */
        *kind = 1;
        place_units[c % NPLACE][rnd(3)] = rnd(NUNITS);
        put_placement(c % NPLACE);
    } else if (r < 92) {                            /* an order */
        *kind = 1;
        order_ok[l % NORDERS] = !order_ok[l % NORDERS];
        put_order(l % NORDERS);
    } else {                                        /* a batch of the above */
        int n = 2 + rnd(4), k, sub;
        for (k = 0; k < n; k++) {
            mutate(&sub);
            *kind |= sub;
        }
    }
}

static void test_differential(void) {
    adserve_snapshot_t *si, *sf, *prev = NULL;
    int i, l, c, k, steps = 1500, kind, bad = 0, partial = 0, whole = 0, borrowed = 0;
    int chains = 0;
    size_t active = 0;

    for (i = 0; i < NUNITS; i++) {
        bcat[i] = i == 5;
        put_unit(i);
    }
    for (i = 0; i < NPLACE; i++) {
        for (k = 0; k < 3; k++) place_units[i][k] = rnd(NUNITS);
        put_placement(i);
    }
    for (i = 0; i < NORDERS; i++) {
        order_ok[i] = i != 3;
        put_order(i);
    }
    for (i = 0; i < NLIS; i++) new_li(i);
    for (i = 0; i < NCRS; i++) new_cr(i);
    for (i = 0; i < 2 * NCRS; i++) {
        l = rnd(NLIS), c = rnd(NCRS);
        lica[l][c] = 1 + rnd(3);
        put_lica(l, c);
    }

    adserve_joins_init(&joins);
    si = build(&joins);
    sf = build(NULL);
    is_str(differs(si, sf), "", "the first build keeping joins makes the same snapshot");
    ok(si->stats.joined > 0 && si->stats.ranked > 0, "it joins and ranks everything (%zu, %zu)",
       si->stats.joined, si->stats.ranked);
    active = si->stats.active_units;
    adserve_snapshot_free(si);
    adserve_snapshot_free(sf);

    /* as the loader: each build gets the one before as prev, which is
     * freed once the new one is made (what it lent stays until its
     * borrowers go: ASan, without quarantine, sees a read of it freed) */
    for (i = 0; i < steps; i++) {
        mutate(&kind);
        si = build_from(&joins, prev);
        sf = build(NULL);
        if (*differs(si, sf) != '\0') {
            if (bad++ < 5) diag("step %d: %s", i, differs(si, sf));
        }
        if (*plan_differs(si, prev) != '\0') {
            if (bad++ < 5) diag("step %d: %s", i, plan_differs(si, prev));
        }
        if (si->stats.ranked < active && kind == 0) partial++;
        if (kind == 1) whole += si->stats.ranked == sf->stats.ranked;
        borrowed += si->stats.borrowed > 0;
        chains += prev != NULL && prev->depth > 0 && si->depth == 0 && kind == 0;
        adserve_snapshot_free(prev);
        adserve_snapshot_free(sf);
        prev = si;
    }
    ok(prev->refs == 1, "the last snapshot has its owner alone");
    adserve_snapshot_free(prev);
    ok(bad == 0, "%d writes: every build joining only what changed serves as joining all "
       "(%d differ)", steps, bad);
    ok(borrowed > steps / 3, "most builds after a line item's, creative's or LICA's write "
       "borrow the units it does not reach (%d of %d)", borrowed, steps);
    ok(chains > 0, "a chain too deep or too large ends in a whole render (%d)", chains);
    ok(twin_writes > 10, "twins of units and placements were written, and deleted (%d)",
       twin_writes);

    /* the twins go, for the tests below */
    for (k = 0; k < (int) NTWINS; k++) {
        key_suffix = twin_keys[k];
        for (i = 0; i < NUNITS; i++) { char id[16]; snprintf(id, sizeof id, "u%d", i); del(ADSERVE_KIND_AD_UNITS, id); }
        for (i = 0; i < NPLACE; i++) { char id[16]; snprintf(id, sizeof id, "p%d", i); del(ADSERVE_KIND_PLACEMENTS, id); }
        for (i = 0; i < NLIS; i++) { char id[16]; snprintf(id, sizeof id, "l%d", i); del(ADSERVE_KIND_LINE_ITEMS, id); }
        for (i = 0; i < NCRS; i++) { char id[16]; snprintf(id, sizeof id, "c%d", i); del(ADSERVE_KIND_CREATIVES, id); }
        for (l = 0; l < NLIS; l++) for (c = 0; c < NCRS; c++) { char id[32]; snprintf(id, sizeof id, "x%d-%d", l, c); del(ADSERVE_KIND_LICAS, id); }
    }
    key_suffix = "";
    for (i = 0; i < NUNITS; i++) put_unit(i);
    for (i = 0; i < NPLACE; i++) put_placement(i);
    for (i = 0; i < NLIS; i++) put_li(i);
    for (i = 0; i < NCRS; i++) if (crs[i].exists) put_cr(i);
    for (l = 0; l < NLIS; l++) for (c = 0; c < NCRS; c++) if (lica[l][c]) put_lica(l, c);
    ok(partial > steps / 2, "most of them ranked only some units (%d of %d)", partial, steps);
    ok(whole > 0, "a unit, placement or order written joins all (%d)", whole);
}

/* One line item's status: it alone is joined again, and only the units it
 * reaches are ranked again. */
static void test_one_change(void) {
    adserve_snapshot_t *s;
    int l;

    for (l = 0; l < NLIS && !(lis[l].exists && lis[l].active && lis[l].nincl == 1
                               && order_ok[lis[l].order]); l++) { /* void */ }
    if (l == NLIS) {
        lis[0].exists = lis[0].active = 1;
        lis[0].nincl = 1;
        lis[0].nplace = 0;
        lis[0].order = 0;
        order_ok[0] = 1;
        put_order(0);
        put_li(0);
        l = 0;
    }
    adserve_snapshot_free(build(&joins));

    lis[l].active = 0;
    lis[l].nincl = 1;
    lis[l].nplace = 0;
    lis[l].incl[0] = 4;                             /* a leaf */
    put_li(l);
    s = build(&joins);
    ok(s->stats.joined == 0, "a line item paused is joined to nothing (%zu)", s->stats.joined);
    adserve_snapshot_free(s);

    lis[l].active = 1;
    put_li(l);
    s = build(&joins);
    ok(s->stats.joined == 1, "resumed, it alone is joined again (%zu)", s->stats.joined);
    ok(s->stats.ranked <= 1, "and only its unit is ranked again (%zu)", s->stats.ranked);
    adserve_snapshot_free(s);

    s = build(&joins);
    ok(s->stats.joined == 0 && s->stats.ranked == 0, "nothing written: nothing joined "
       "(%zu, %zu)", s->stats.joined, s->stats.ranked);
    adserve_snapshot_free(s);
}

/* A chain leaves room for two whole snapshots beside it, in what the
 * allocator holds: with less, a build after a change renders whole. */
static void test_room(void) {
    adserve_snapshot_t *s0, *s1, *s2;
    int l = 0;

    lis[l].exists = 1;
    put_li(l);
    s0 = build_from(&joins, NULL);
    lis[l].active = !lis[l].active;
    put_li(l);
    room = s0->chain_bytes + 2 * s0->whole_bytes - 1;
    s1 = build_from(&joins, s0);
    ok(s1->depth == 0 && s1->base == NULL, "a byte short of two whole snapshots beside the "
       "chain: whole (depth %u)", s1->depth);
    lis[l].active = !lis[l].active;
    put_li(l);
    room = s1->chain_bytes + 2 * s1->whole_bytes;
    s2 = build_from(&joins, s1);
    ok(s2->depth == 1 && s2->base == s1, "room for them: it borrows (depth %u)", s2->depth);
    room = 0;
    adserve_snapshot_free(s0);
    adserve_snapshot_free(s1);
    ok(s2->base->refs == 1, "the base freed by its owner stays for the one that borrows");
    adserve_snapshot_free(s2);
}

/* A build that fails leaves nothing: the next joins all. */
static void test_cleared(void) {
    adserve_snapshot_t *s;

    adserve_joins_clear(&joins);
    s = build(&joins);
    ok(s->stats.ranked > 0 && joins.valid, "cleared joins: the next build joins all and "
       "keeps again");
    adserve_snapshot_free(s);
}

int main(void) {
    int k;

    for (k = 0; k < ADSERVE_KIND_COUNT; k++) adserve_records_init(&inv[k]);
    test_differential();
    test_one_change();
    test_room();
    test_cleared();
    adserve_joins_free(&joins);
    for (k = 0; k < ADSERVE_KIND_COUNT; k++) adserve_records_free(&inv[k]);
    return done_testing();
}
