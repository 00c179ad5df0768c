/* snapshot_test.c -- TAP tests for the snapshot build and the serving
 * decision (adserve_snapshot.c): eligibility, targeting, ranking, rotation,
 * per-request eCPM (CPC and CPA through pace.factor, default bids, the
 * target_ecpm floor, ties), frequency caps, goals and pacing at decision
 * time, adserve_li_check's reasons, line item and creative lookups,
 * inheritance of pace across builds, rendering (public_url),
 * robustness against bad records and a scale check.
 *
 * Records are written with single quotes for readability; the helper turns
 * every ' into " before handing them to the build (a real single quote in a
 * value is written \u0027). The input is freed right after each build, so
 * under AddressSanitizer any pointer the snapshot kept into it is caught. */

#include "adserve_rtb.h"
#include "adserve_snapshot.h"
#include "adserve_vast.h"
#include "adserve_parsed.h"
#include "adserve_pacing.h"
#include "adserve_contract.h"
#include "adserve_token.h"
#include "tap.h"
#include "kept.h"

#include <cjson/cJSON.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>


/* ---- this worker's pace tables ------------------------------------------
 *
 * As the module's pacing does, the tests keep one pace table per snapshot
 * (adserve_paces_new), made when a snapshot first decides; PACE(li) is the
 * pace of a line item of any snapshot the tests hold. A freed snapshot's
 * table goes with it (the free is wrapped below). */

static struct {
    const adserve_snapshot_t  *s;
    adserve_pace_t            *p;
} tables[256];

static adserve_pace_t *paces_set(const adserve_snapshot_t *s, adserve_pace_t *p) {
    size_t i, free_slot = sizeof(tables) / sizeof(tables[0]);

    for (i = 0; i < sizeof(tables) / sizeof(tables[0]); i++) {
        if (tables[i].s == s) {
            free(tables[i].p);
            tables[i].p = p;
            return p;
        }
        if (tables[i].s == NULL && free_slot == sizeof(tables) / sizeof(tables[0])) {
            free_slot = i;
        }
    }
    if (p == NULL || free_slot == sizeof(tables) / sizeof(tables[0])) abort();
    tables[free_slot].s = s;
    tables[free_slot].p = p;
    return p;
}

static adserve_pace_t *paces(const adserve_snapshot_t *s) {
    size_t i;

    for (i = 0; i < sizeof(tables) / sizeof(tables[0]); i++) {
        if (tables[i].s == s) return tables[i].p;
    }
    return paces_set(s, adserve_paces_new(s, NULL, NULL));
}

/* the table of the snapshot holding li (one the tests looked into) */
static size_t table_of(const adserve_li_t *li) {
    size_t i;

    for (i = 0; i < sizeof(tables) / sizeof(tables[0]); i++) {
        const adserve_snapshot_t *s = tables[i].s;
        if (s != NULL && li >= s->lis && li < s->lis + s->nlis) return i;
    }
    abort();
}

/* the pace of a line item of a snapshot the tests hold */
static adserve_pace_t *pace_of(const adserve_li_t *li) {
    size_t i = table_of(li);

    return &tables[i].p[li - tables[i].s->lis];
}
#define PACE(li)  pace_of(li)

/* adserve_li_check with the pace table of li's snapshot in d */
static adserve_reason_e li_check(const adserve_li_t *li, const adserve_unit_t *u,
    const adserve_cand_t *c, adserve_decision_t *d)
{
    d->paces = tables[table_of(li)].p;
    return adserve_li_check(li, u, c, d);
}

static void snapshot_free(adserve_snapshot_t *s) {
    size_t i;

    for (i = 0; s != NULL && i < sizeof(tables) / sizeof(tables[0]); i++) {
        if (tables[i].s == s) {
            free(tables[i].p);
            tables[i].s = NULL;
            tables[i].p = NULL;
        }
    }
    adserve_snapshot_free(s);
}
/* every free in the tests takes its table along */
#define adserve_snapshot_free(s)  snapshot_free(s)

#define NOW       1748736000LL    /* 2025-06-01T00:00:00Z */
#define JUL1      1751328000LL    /* 2025-07-01T00:00:00Z */

typedef struct {
    adserve_kind_e  kind;
    const char     *json;
} rec_t;

#define UNIT(j)  { ADSERVE_KIND_AD_UNITS, j }
#define PLC(j)   { ADSERVE_KIND_PLACEMENTS, j }
#define ORD(j)   { ADSERVE_KIND_ORDERS, j }
#define LI(j)    { ADSERVE_KIND_LINE_ITEMS, j }
#define CRE(j)   { ADSERVE_KIND_CREATIVES, j }
#define LICA(j)  { ADSERVE_KIND_LICAS, j }
#define SRC(j)   { ADSERVE_KIND_AD_SOURCES, j }
#define ALLOC(j) { ADSERVE_KIND_ALLOCATIONS, j }
#define BLOCK(j) { ADSERVE_KIND_BLOCKED_CREATIVES, j }

#define NRECS(...)  (sizeof((const rec_t[]){ __VA_ARGS__ }) / sizeof(rec_t))
#define BUILD(...)  build_recs((const rec_t[]){ __VA_ARGS__ }, NRECS(__VA_ARGS__))

/* the base world: u1 (ACTIVE, default 300x250), o1 APPROVED, li1 STANDARD
 * targeting u1, c1 an approved 300x250 image, a1 linking them */
#define U1_J  "{'id':'u1','status':'ACTIVE'}"
#define O1_J  "{'id':'o1','status':'APPROVED'}"
#define L1_J  "{'id':'li1','order_id':'o1','status':'ACTIVE','type':'STANDARD'," \
              "'priority':4,'cost_type':'CPM','rate':2.5," \
              "'targeting':{'ad_units':{'include':['u1']}}}"
#define C1_J  "{'id':'c1','approval':'APPROVED','type':'IMAGE','w':300,'h':250," \
              "'image_url':'https://cdn.example/c1.png','landing_url':'https://adv.example/'}"
#define A1_J  "{'id':'a1','line_item_id':'li1','creative_id':'c1','status':'ACTIVE','weight':1}"


/* ---- helpers ------------------------------------------------------------ */

static void add(adserve_input_t *in, adserve_kind_e kind, const char *json) {
    size_t i, len = strlen(json);
    char *q = malloc(len + 1);

    if (q == NULL) abort();
    for (i = 0; i <= len; i++) q[i] = json[i] == '\'' ? '"' : json[i];
    /* the input refers to the text: it must live as long as the input */
    if (adserve_input_ref(in, kind, keep(q), len) != 0) abort();
}

static adserve_snapshot_t *build_input(adserve_input_t *in) {
    char err[256] = "";
    adserve_snapshot_t *s = adserve_snapshot_build(in, err, sizeof(err));

    if (s == NULL) diag("build failed: %s", err);
    return s;
}

/* the default base of event URLs handed to every build (a test may change
 * it for one build) */
#define PUBLIC_URL "https://ads.example"
static const char *public_url = PUBLIC_URL;
/* the snapshot workers serve while the next is built (a test sets it) */
static const adserve_snapshot_t *build_prev;

static adserve_snapshot_t *build_recs(const rec_t *r, size_t n) {
    adserve_input_t in;
    adserve_snapshot_t *s;
    size_t i;

    adserve_input_init(&in);
    in.rev = 42;
    in.public_url = public_url;
    in.prev = build_prev;
    for (i = 0; i < n; i++) add(&in, r[i].kind, r[i].json);
    s = build_input(&in);
    adserve_input_free(&in);
    return s;
}

static const adserve_unit_t *unit(const adserve_snapshot_t *s, const char *id) {
    return adserve_snapshot_unit(s, id, strlen(id));
}

static const adserve_str_t nostr = { NULL, 0 };

/* a request with no facts (no user agent, user or kv): enough for every
 * test of this file, whose line items target no request facts */
static adserve_req_ctx_t *no_facts(void) {
    static adserve_req_ctx_t ctx;

    adserve_req_ctx_init(&ctx, NULL);
    return &ctx;
}

/* Checks an id of a candidate: the bytes, and the NUL after them. */
static int is_id(adserve_str_t got, const char *expected, const char *name) {
    int r = is_mem(got.data, got.len, expected, strlen(expected), "%s", name);

    return ok(got.data != NULL && got.data[got.len] == '\0', "%s: NUL-terminated", name) && r;
}

/* A decision at now with seed rnd, no request facts, and a user whose
 * frequency cap history is known: seen[0 .. nseen - 1]. */
static adserve_decision_t decision(int64_t now, uint32_t rnd, const adserve_seen_t *seen,
    uint32_t nseen)
{
    adserve_decision_t d;

    memset(&d, 0, sizeof(d));
    d.now = now;
    d.rnd = rnd;
    d.facts = no_facts();
    d.seen = seen;
    d.nseen = nseen;
    d.caps_known = 1;
    return d;
}

/* The candidate served on the unit for decision d, or NULL. */
static const adserve_cand_t *decide(adserve_snapshot_t *s, const char *id,
    adserve_decision_t *d)
{
    const adserve_unit_t *u = unit(s, id);

    d->paces = paces(s);
    return u ? adserve_decide(s, u, d) : NULL;
}

/* The creative served on the unit, or NULL. */
static const char *serve(adserve_snapshot_t *s, const char *id, int64_t now,
    uint32_t rnd)
{
    adserve_decision_t d = decision(now, rnd, NULL, 0);
    const adserve_cand_t *c = decide(s, id, &d);

    return c ? c->creative_id.data : NULL;
}

/* The creative served on the unit for decision d, or NULL. */
static const char *serve_d(adserve_snapshot_t *s, const char *id, adserve_decision_t d) {
    const adserve_cand_t *c = decide(s, id, &d);

    return c ? c->creative_id.data : NULL;
}

/* A line item of the snapshot by id, or NULL. */
static adserve_li_t *lookup(const adserve_snapshot_t *s, const char *id) {
    (void) paces(s);
    return adserve_snapshot_li(s, id, strlen(id));
}

/* qsort: ids in the order of their hashes, as a group's line items rank */
static int hash_order(const void *a, const void *b) {
    const char *x = *(const char *const *) a, *y = *(const char *const *) b;
    uint64_t hx = adserve_hash(x, strlen(x)), hy = adserve_hash(y, strlen(y));

    return hx != hy ? (hx < hy ? -1 : 1) : strcmp(x, y);
}

/* The line item of a candidate. */
static const adserve_li_t *li_of(const adserve_snapshot_t *s, const adserve_cand_t *c) {
    (void) paces(s);
    return &s->lis[c->li];
}

/* The first candidate of line item li on the unit, or NULL. */
static const adserve_cand_t *cand_of(const adserve_snapshot_t *s, const char *unit_id,
    const char *li)
{
    const adserve_unit_t *u = unit(s, unit_id);
    uint32_t i;

    for (i = 0; u && i < u->ncands; i++) {
        if (strcmp(s->lis[u->cands[i].li].id.data, li) == 0) return &u->cands[i];
    }
    return NULL;
}

/* Sets what line item id has delivered, as a pacing read does at now. */
static void deliver_at(adserve_snapshot_t *s, const char *id, uint64_t imp, uint64_t clk,
    uint64_t conv, int64_t now)
{
    adserve_delivered_t d = { imp, clk, conv, imp, 0 };
    adserve_li_t *li = lookup(s, id);

    if (li == NULL) {
        ok(0, "deliver: line item %s is in the snapshot", id);
        return;
    }
    adserve_pace_update(li, &paces(s)[li - s->lis], &d, now, 60);
}

static void deliver(adserve_snapshot_t *s, const char *id, uint64_t imp, uint64_t clk,
    uint64_t conv)
{
    deliver_at(s, id, imp, clk, conv, NOW);
}

static int near(double got, double want) {
    return got > want - 1e-9 * (1 + (want < 0 ? -want : want))
           && got < want + 1e-9 * (1 + (want < 0 ? -want : want));
}

/* Builds the base world with some records replaced (NULL keeps the
 * default), serves u1 at now; the creative id (or NULL) survives the
 * snapshot in a static buffer. */
static const char *base_serve(const char *u, const char *o, const char *l,
    const char *c, const char *a, int64_t now)
{
    static char id[64];
    const char *got;
    adserve_snapshot_t *s = BUILD(
        UNIT(u ? u : U1_J), ORD(o ? o : O1_J), LI(l ? l : L1_J),
        CRE(c ? c : C1_J), LICA(a ? a : A1_J));

    if (s == NULL) return "(build failed)";
    got = serve(s, "u1", now, 0);
    if (got) snprintf(id, sizeof(id), "%s", got);
    adserve_snapshot_free(s);
    return got ? id : NULL;
}

/* a line item record of any cost type; extra is appended inside the object */
static const char *li_cost(const char *id, const char *type, int prio, const char *cost,
    double rate, const char *extra)
{
    return fmt("{'id':'%s','order_id':'o1','status':'ACTIVE','type':'%s',"
               "'priority':%d,'cost_type':'%s','rate':%g,"
               "'targeting':{'ad_units':{'include':['u1']}}%s%s}",
               id, type, prio, cost, rate, extra ? "," : "", extra ? extra : "");
}

/* a CPM line item record; extra is appended inside the object */
static const char *li_rec(const char *id, const char *type, int prio, double rate,
    const char *extra)
{
    return li_cost(id, type, prio, "CPM", rate, extra);
}

static const char *cr_rec(const char *id) {
    return fmt("{'id':'%s','approval':'APPROVED','type':'IMAGE','w':300,'h':250,"
               "'image_url':'https://cdn.example/%s.png'}", id, id);
}

static const char *lica_rec(const char *li, const char *cr, int weight) {
    return fmt("{'id':'a-%s-%s','line_item_id':'%s','creative_id':'%s',"
               "'status':'ACTIVE','weight':%d}", li, cr, li, cr, weight);
}


/* ---- eligibility -------------------------------------------------------- */

static void test_base_and_units(void) {
    adserve_snapshot_t *s;
    const adserve_unit_t *u;

    s = BUILD(UNIT(U1_J), ORD(O1_J), LI(L1_J), CRE(C1_J), LICA(A1_J),
              UNIT("{'id':'u-inactive','status':'INACTIVE'}"),
              UNIT("{'id':'u-archived','status':'ARCHIVED'}"),
              UNIT("{'id':'u-nostatus'}"));
    ok(s != NULL, "base world builds");
    if (s == NULL) return;
    is_int((long long) s->rev, 42, "snapshot keeps the input revision");
    u = unit(s, "u1");
    ok(u != NULL, "ACTIVE unit is found");
    is_mem(u ? u->id : NULL, u ? u->id_len : 0, "u1", 2, "unit id");
    is_int(u ? (long long) u->ncands : -1, 1, "base unit has one candidate");
    is_str(serve(s, "u1", NOW, 0), "c1", "base world serves c1 on u1");
    ok(adserve_snapshot_unit(s, "u1x", 2) == u, "lookup uses len, not NUL");
    ok(unit(s, "u-inactive") == NULL, "INACTIVE unit: snapshot_unit NULL");
    ok(unit(s, "u-archived") == NULL, "ARCHIVED unit: snapshot_unit NULL");
    ok(unit(s, "u-nostatus") == NULL, "unit without status: snapshot_unit NULL");
    ok(unit(s, "nope") == NULL, "unknown unit id: snapshot_unit NULL");
    ok(adserve_snapshot_unit(s, "", 0) == NULL, "empty unit id: snapshot_unit NULL");
    ok(adserve_snapshot_unit(NULL, "u1", 2) == NULL, "NULL snapshot: snapshot_unit NULL");
    is_int((long long) s->stats.active_units, 1, "stats.active_units counts ACTIVE only");
    is_int((long long) s->stats.records[ADSERVE_KIND_AD_UNITS], 4, "stats.records[ad units]");
    adserve_snapshot_free(s);
}

static void test_order_line_item_lica_creative(void) {
    is_str(base_serve(NULL, "{'id':'o1','status':'PENDING'}", NULL, NULL, NULL, NOW),
           NULL, "order PENDING: no ad");
    is_str(base_serve(NULL, "{'id':'o1','status':'REJECTED'}", NULL, NULL, NULL, NOW),
           NULL, "order REJECTED: no ad");
    is_str(base_serve(NULL, "{'id':'o1'}", NULL, NULL, NULL, NOW),
           NULL, "order without status: no ad");
    is_str(base_serve(NULL, "{'id':'o2','status':'APPROVED'}", NULL, NULL, NULL, NOW),
           NULL, "line item's order unknown (dangling): no ad");

    is_str(base_serve(NULL, NULL, fmt("%s", L1_J), NULL, NULL, NOW), "c1",
           "line item ACTIVE: serves");
    is_str(base_serve(NULL, NULL,
           "{'id':'li1','order_id':'o1','status':'PAUSED','type':'STANDARD','priority':4,"
           "'cost_type':'CPM','rate':1,'targeting':{'ad_units':{'include':['u1']}}}",
           NULL, NULL, NOW), NULL, "line item PAUSED: no ad");
    is_str(base_serve(NULL, NULL,
           "{'id':'li1','order_id':'o1','status':'ARCHIVED','type':'STANDARD','priority':4,"
           "'cost_type':'CPM','rate':1,'targeting':{'ad_units':{'include':['u1']}}}",
           NULL, NULL, NOW), NULL, "line item ARCHIVED: no ad");
    is_str(base_serve(NULL, NULL,
           "{'id':'li1','order_id':'o1','status':'ACTIVE','type':'BOGUS','priority':4,"
           "'cost_type':'CPM','rate':1,'targeting':{'ad_units':{'include':['u1']}}}",
           NULL, NULL, NOW), NULL, "line item of unknown type: no ad");

    is_str(base_serve(NULL, NULL, NULL, NULL,
           "{'id':'a1','line_item_id':'li1','creative_id':'c1','status':'PAUSED','weight':1}",
           NOW), NULL, "LICA PAUSED: no ad");
    is_str(base_serve(NULL, NULL, NULL, NULL,
           "{'id':'a1','line_item_id':'li1','creative_id':'c1','status':'ACTIVE'}",
           NOW), "c1", "LICA without weight: weight 1, serves");
    is_str(base_serve(NULL, NULL, NULL, NULL,
           "{'id':'a1','line_item_id':'li1','creative_id':'c1','status':'ACTIVE','weight':0}",
           NOW), NULL, "LICA weight 0: no ad");
    is_str(base_serve(NULL, NULL, NULL, NULL,
           "{'id':'a1','line_item_id':'li1','creative_id':'c9','status':'ACTIVE'}",
           NOW), NULL, "LICA to an unknown creative (dangling): no ad, no crash");
    is_str(base_serve(NULL, NULL, NULL, NULL,
           "{'id':'a1','line_item_id':'li9','creative_id':'c1','status':'ACTIVE'}",
           NOW), NULL, "LICA to an unknown line item (dangling): no ad, no crash");

    is_str(base_serve(NULL, NULL, NULL,
           "{'id':'c1','approval':'PENDING','type':'IMAGE','w':300,'h':250,"
           "'image_url':'https://cdn.example/c1.png'}", NULL, NOW),
           NULL, "creative PENDING: no ad");
    is_str(base_serve(NULL, NULL, NULL,
           "{'id':'c1','approval':'REJECTED','type':'IMAGE','w':300,'h':250,"
           "'image_url':'https://cdn.example/c1.png'}", NULL, NOW),
           NULL, "creative REJECTED: no ad");
    is_str(base_serve(NULL, NULL, NULL,
           "{'id':'c1','approval':'APPROVED','type':'IMAGE','w':300,'h':250}", NULL, NOW),
           NULL, "IMAGE creative without image_url never serves");
    is_str(base_serve(NULL, NULL, NULL,
           "{'id':'c1','approval':'APPROVED','type':'HTML','w':300,'h':250}", NULL, NOW),
           NULL, "HTML creative without html never serves");
    is_str(base_serve(NULL, NULL, NULL,
           "{'id':'c1','approval':'APPROVED','type':'VIDEO','w':300,'h':250,"
           "'image_url':'https://x/'}", NULL, NOW),
           NULL, "creative of unknown type never serves");
}


/* line item li1 on unit u1, its flight fields ("'start_at':'...',") as given */
static const char *flight_li(const char *flight) {
    return fmt("{'id':'li1','order_id':'o1','status':'ACTIVE','type':'STANDARD','priority':4,"
               "'cost_type':'CPM','rate':1,%s'targeting':{'ad_units':{'include':['u1']}}}",
               flight);
}

static void test_flight(void) {
    const char *fl = "{'id':'li1','order_id':'o1','status':'ACTIVE','type':'STANDARD',"
        "'priority':4,'cost_type':'CPM','rate':1,'start_at':'2025-06-01T00:00:00Z',"
        "'end_at':'2025-07-01T00:00:00Z','targeting':{'ad_units':{'include':['u1']}}}";
    adserve_snapshot_t *s = BUILD(UNIT(U1_J), ORD(O1_J), LI(fl), CRE(C1_J), LICA(A1_J));
    const adserve_unit_t *u = unit(s, "u1");

    ok(u != NULL && u->ncands == 1, "flighted line item is a candidate");
    if (u == NULL || u->ncands != 1) { adserve_snapshot_free(s); return; }
    is_int(s->lis[u->cands[0].li].start, NOW, "line item start = start_at");
    is_int(s->lis[u->cands[0].li].end, JUL1, "line item end = end_at");
    is_str(serve(s, "u1", NOW - 1, 0), NULL, "flight: one second before start, no ad");
    is_str(serve(s, "u1", NOW, 0), "c1", "flight: at start (inclusive), serves");
    is_str(serve(s, "u1", NOW + 86400 * 10, 0), "c1", "flight: inside, serves");
    is_str(serve(s, "u1", JUL1 - 1, 0), "c1", "flight: last second, serves");
    is_str(serve(s, "u1", JUL1, 0), NULL, "flight: at end (exclusive), no ad");
    is_str(serve(s, "u1", JUL1 + 1, 0), NULL, "flight: after end, no ad");
    adserve_snapshot_free(s);

    /* no bounds at all: always in flight */
    s = BUILD(UNIT(U1_J), ORD(O1_J), LI(L1_J), CRE(C1_J), LICA(A1_J));
    u = unit(s, "u1");
    ok(u && u->ncands == 1 && s->lis[u->cands[0].li].start == INT64_MIN
       && s->lis[u->cands[0].li].end == INT64_MAX,
       "absent bounds: open flight [INT64_MIN, INT64_MAX)");
    is_str(serve(s, "u1", 0, 0), "c1", "absent bounds: serves at 0");
    is_str(serve(s, "u1", -4000000000LL, 0), "c1", "absent bounds: serves long ago");
    is_str(serve(s, "u1", INT64_MAX - 1, 0), "c1", "absent bounds: serves far ahead");
    adserve_snapshot_free(s);

    is_str(base_serve(NULL, NULL, flight_li("'start_at':'2025-06-01T00:00:00Z',"), NULL, NULL, NOW + 5),
           "c1", "only start_at, after it: serves");
    is_str(base_serve(NULL, NULL, flight_li("'start_at':'2025-06-01T00:00:00Z',"), NULL, NULL, NOW - 5),
           NULL, "only start_at, before it: no ad");
    is_str(base_serve(NULL, NULL, flight_li("'end_at':'2025-06-01T00:00:00Z',"), NULL, NULL, NOW - 5),
           "c1", "only end_at, before it: serves");
    is_str(base_serve(NULL, NULL, flight_li("'end_at':'2025-06-01T00:00:00Z',"), NULL, NULL, NOW),
           NULL, "only end_at, at it: no ad");
    is_str(base_serve(NULL, NULL, flight_li("'start_at':'2025-06-01T00:00:00Z','end_at':'2025-06-01T00:00:00Z',"),
           NULL, NULL, NOW), NULL, "empty flight (start = end): no ad");
    is_str(base_serve(NULL, NULL, flight_li("'start_at':'June 1st',"), NULL, NULL, NOW),
           NULL, "unparsable start_at: no ad");
    is_str(base_serve(NULL, NULL, flight_li("'start_at':'2025-06-01T02:00:00+02:00','end_at':'2025-06-01T00:00:01Z',"),
           NULL, NULL, NOW), "c1", "flight bounds honour the UTC offset");
}

/* ---- video: formats, and each rule of a video placement ---- */

#define VU(video) "{'id':'u1','status':'ACTIVE','ext':{'video':{'enabled':1}},'video':{" video "}}"
#define VPLAYER   "'w':640,'h':360,'mindur':5,'maxdur':30,'mime':['video/mp4'],'skip':1"
#define VC(video) "{'id':'c1','approval':'APPROVED','type':'VIDEO','w':640,'h':360,'name':'Spot <b>','video':{" video "}}"
#define VFILE     "'media_files':[{'url':'https://cdn.example/v.mp4?a=1&b=2','mime':'video/mp4','w':640,'h':360,'bitrate':500}]"

static void test_video(void) {
    const char *vc = VC("'duration':15,'skip_offset':5," VFILE);
    const char *both = "{'id':'u1','status':'ACTIVE','display':{'w':300,'h':250},"
                       "'ext':{'video':{'enabled':1},'display':{'enabled':1}},'video':{" VPLAYER "}}";
    adserve_snapshot_t *s;
    const adserve_unit_t *u;

    is_str(base_serve(VU(VPLAYER), NULL, NULL, vc, NULL, NOW), "c1", "video: a fitting video creative serves");
    is_str(base_serve(VU(VPLAYER), NULL, NULL, NULL, NULL, NOW), NULL,
           "video: a display creative on a video-only unit, no ad");
    is_str(base_serve(NULL, NULL, NULL, vc, NULL, NOW), NULL,
           "video: a video creative on a unit with no format on (display), no ad");
    is_str(base_serve(both, NULL, NULL, NULL, NULL, NOW), "c1", "video: display on too: a banner serves");
    is_str(base_serve(both, NULL, NULL, vc, NULL, NOW), "c1", "... and the video");
    is_str(base_serve(VU(VPLAYER), NULL, NULL, VC("'duration':60," VFILE), NULL, NOW), NULL,
           "video: longer than maxdur, no ad");
    is_str(base_serve(VU(VPLAYER), NULL, NULL, VC("'duration':3," VFILE), NULL, NOW), NULL,
           "video: shorter than mindur, no ad");
    is_str(base_serve(VU("'w':640,'h':360,'rqddurs':[15,30]"), NULL, NULL, VC("'duration':15," VFILE), NULL, NOW),
           "c1", "video: a duration among rqddurs serves");
    is_str(base_serve(VU("'w':640,'h':360,'rqddurs':[30]"), NULL, NULL, VC("'duration':15," VFILE), NULL, NOW),
           NULL, "video: not among rqddurs, no ad");
    is_str(base_serve(VU("'w':640,'h':360,'mime':['video/webm']"), NULL, NULL, vc, NULL, NOW), NULL,
           "video: no media file of an accepted mime, no ad");
    is_str(base_serve(VU("'w':640,'h':360,'mime':['video/webm']"), NULL, NULL,
                      VC("'duration':15,'vast_tag_url':'https://dsp.example/vast'"), NULL, NOW), "c1",
           "video: a wrapper's files are the tag's: its mime is not ours to check");
    is_str(base_serve(VU("'w':640,'h':360,'skip':0"), NULL, NULL, vc, NULL, NOW), NULL,
           "video: a skippable ad where the player offers no skip, no ad");
    is_str(base_serve(VU("'w':640,'h':360,'skip':0"), NULL, NULL, VC("'duration':15," VFILE), NULL, NOW), "c1",
           "video: a non-skippable ad there serves");
    is_str(base_serve(VU("'w':640,'h':360,'linear':2"), NULL, NULL, vc, NULL, NOW), NULL,
           "video: a non-linear placement takes no linear ad");
    is_str(base_serve(VU("'w':1280,'h':720,'skip':1"), NULL, NULL, vc, NULL, NOW), "c1",
           "video: 640x360 on a 1280x720 player (same shape) serves");
    is_str(base_serve(VU("'w':640,'h':480,'skip':1"), NULL, NULL, vc, NULL, NOW), NULL,
           "video: 16:9 on a 4:3 player, no ad");
    is_str(base_serve("{'id':'u1','status':'ACTIVE','instl':1,'ext':{'video':{'enabled':1}},'video':{" VPLAYER "}}",
                      NULL, NULL, vc, NULL, NOW), NULL, "interstitial unit: a video not made for one, no ad");
    is_str(base_serve("{'id':'u1','status':'ACTIVE','instl':1,'ext':{'video':{'enabled':1}},'video':{" VPLAYER "}}",
                      NULL, NULL, "{'id':'c1','approval':'APPROVED','type':'VIDEO','w':640,'h':360,'interstitial':true,"
                      "'video':{'duration':15,'skip_offset':5," VFILE "}}", NULL, NOW), "c1",
           "interstitial unit: an interstitial video serves");
    is_str(base_serve(VU("'skip':1"), NULL, NULL, VC("'duration':15,'skip_offset':5," VFILE), NULL, NOW),
           NULL, "video: the spec's default player is 480x300 (16:10): a 16:9 ad is more than a tenth off");

    /* a parse is written into a scratch block, tried again larger when it
     * does not fit: every length of name lands its end somewhere else in
     * the block (under ASan, an overrun of its rounding is caught) */
    {
        char name[400], rec[2048];
        int n, all = 1;
        for (n = 0; n < 300; n++) {
            memset(name, 'n', n);
            name[n] = '\0';
            snprintf(rec, sizeof rec, "{\"id\":\"c1\",\"approval\":\"APPROVED\",\"type\":\"VIDEO\","
                     "\"w\":640,\"h\":360,\"name\":\"%s\",\"video\":{\"duration\":15,"
                     "\"media_files\":[{\"url\":\"https://cdn.example/v.mp4\",\"mime\":\"video/mp4\","
                     "\"w\":640,\"h\":360}]}}", name);
            adserve_parsed_t *p = adserve_parse(ADSERVE_KIND_CREATIVES, rec, strlen(rec));
            all &= p != NULL && p->u.creative.approved && p->u.creative.splices == 12;
            adserve_parsed_free(p);
        }
        ok(all, "video: names of 0 to 299 bytes all parse (the scratch block's every end)");
    }

    s = BUILD(UNIT(VU(VPLAYER)), ORD(O1_J), LI(L1_J), CRE(vc), LICA(A1_J));
    u = s ? adserve_snapshot_unit(s, "u1", 2) : NULL;
    ok(u && u->ncands == 1 && strstr(u->cands[0].response_head, "\"video\":{\"w\":640,\"h\":360,\"vast\":\"<VAST version=\\\"4.2\\\"") != NULL,
       "video: the ad holds video {w, h, vast}, the VAST escaped as a JSON string");
    ok(u && u->ncands == 1 && memchr(u->cands[0].response_head, ADSERVE_SPLICE, u->cands[0].response_head_len) != NULL
       && u->cands[0].splices == 12, "... with its 12 splices for serving to fill: impression, click, error, 9 events");
    ok(u && strstr(u->cands[0].response_head, "Spot &lt;b&gt;") != NULL
       && strstr(u->cands[0].response_head, "v.mp4?a=1&amp;b=2") != NULL,
       "... its text XML-escaped: a name cannot add markup, an & is an entity");
    adserve_snapshot_free(s);
}

static void test_sizes(void) {
    const char *u728 = "{'id':'u1','status':'ACTIVE','display':{'w':728,'h':90}}";
    const char *u728s = "{'id':'u1','status':'ACTIVE','display':{'w':728,'h':90},"
                        "'ad_unit_sizes':[{'w':160,'h':600},{'w':300,'h':250}]}";
    const char *c728 = "{'id':'c1','approval':'APPROVED','type':'IMAGE','w':728,'h':90,"
                       "'image_url':'https://cdn.example/c1.png'}";
    const char *c250x300 = "{'id':'c1','approval':'APPROVED','type':'IMAGE','w':250,'h':300,"
                           "'image_url':'https://cdn.example/c1.png'}";
    const char *cnosize = "{'id':'c1','approval':'APPROVED','type':'IMAGE',"
                          "'image_url':'https://cdn.example/c1.png'}";

    is_str(base_serve(u728, NULL, NULL, NULL, NULL, NOW), NULL,
           "size: 300x250 creative on a 728x90 display unit, no ad");
    is_str(base_serve(u728, NULL, NULL, c728, NULL, NOW), "c1",
           "size: 728x90 creative on a 728x90 display unit, serves");
    is_str(base_serve(u728s, NULL, NULL, NULL, NULL, NOW), NULL,
           "size: ad_unit_sizes are targeting metadata: a 300x250 creative on a 728x90 unit "
           "listing 300x250 there, no ad");
    is_str(base_serve(u728s, NULL, NULL, c728, NULL, NOW), "c1",
           "size: display size still matches when ad_unit_sizes exist");
    is_str(base_serve(NULL, NULL, NULL, NULL, NULL, NOW), "c1",
           "size: no display, 300x250 creative fits the default");
    is_str(base_serve(NULL, NULL, NULL, c728, NULL, NOW), NULL,
           "size: no display, 728x90 creative does not fit the default");
    is_str(base_serve(NULL, NULL, NULL, c250x300, NULL, NOW), NULL,
           "size: w and h are not interchangeable");
    is_str(base_serve(NULL, NULL, NULL, cnosize, NULL, NOW), NULL,
           "size: creative without w/h never fits");
}

static void test_bcat(void) {
    const char *ub = "{'id':'u1','status':'ACTIVE','ext':{'bcat':['IAB7','IAB25-3']}}";
    const char *cat[] = {
        "['IAB7']", "['IAB7-39']", "['IAB70']", "['IAB1','IAB7-1']", "[]",
        "['IAB25']", "['IAB25-3']", "['IAB25-31']", "['IAB25-3-1']", "['iab7']",
    };
    const int blocked[] = { 1, 1, 0, 1, 0, 0, 1, 0, 1, 0 };
    size_t i;

    for (i = 0; i < sizeof(cat) / sizeof(cat[0]); i++) {
        const char *c = fmt("{'id':'c1','approval':'APPROVED','type':'IMAGE','w':300,"
            "'h':250,'image_url':'https://cdn.example/c1.png','categories':%s}", cat[i]);
        is_str(base_serve(ub, NULL, NULL, c, NULL, NOW), blocked[i] ? NULL : "c1",
               "bcat ['IAB7','IAB25-3'] vs categories %s: %s", cat[i],
               blocked[i] ? "blocked" : "serves");
    }
    is_str(base_serve(NULL, NULL, NULL,
           "{'id':'c1','approval':'APPROVED','type':'IMAGE','w':300,'h':250,"
           "'image_url':'https://cdn.example/c1.png','categories':['IAB7']}", NULL, NOW),
           "c1", "bcat: a unit without ext.bcat blocks nothing");
}

static void test_targeting(void) {
    adserve_snapshot_t *s;
    const char *lr = li_rec("li1", "STANDARD", 4, 1, NULL);
    const adserve_unit_t *u;

    /* hierarchy root > mid > leaf, plus a sibling of mid */
#define HIER UNIT("{'id':'root','status':'ACTIVE'}"), \
             UNIT("{'id':'mid','status':'ACTIVE','parent_id':'root'}"), \
             UNIT("{'id':'leaf','status':'ACTIVE','parent_id':'mid'}"), \
             UNIT("{'id':'side','status':'ACTIVE','parent_id':'root'}"), \
             UNIT("{'id':'other','status':'ACTIVE'}")
#define DEMAND(li) ORD(O1_J), LI(li), CRE(C1_J), LICA(A1_J)
/* line item li1, everything default but its targeting */
#define TARGETED(t) fmt("{'id':'li1','order_id':'o1','status':'ACTIVE'," \
                        "'type':'STANDARD','cost_type':'CPM','rate':1,'targeting':" t "}")

    s = BUILD(HIER, DEMAND(TARGETED("{'ad_units':{'include':['mid']}}")));
    is_str(serve(s, "mid", NOW, 0), "c1", "targeting: unit included directly serves");
    is_str(serve(s, "leaf", NOW, 0), "c1", "targeting: child of an included unit serves");
    is_str(serve(s, "root", NOW, 0), NULL, "targeting: parent of an included unit does not");
    is_str(serve(s, "side", NOW, 0), NULL, "targeting: sibling of an included unit does not");
    is_str(serve(s, "other", NOW, 0), NULL, "targeting: unrelated unit does not");
    adserve_snapshot_free(s);

    s = BUILD(HIER, DEMAND(TARGETED("{'ad_units':{'include':['root'],'exclude':['mid']}}")));
    is_str(serve(s, "root", NOW, 0), "c1", "targeting: included root serves");
    is_str(serve(s, "side", NOW, 0), "c1", "targeting: root's other child serves");
    is_str(serve(s, "mid", NOW, 0), NULL, "targeting: excluded unit does not serve");
    is_str(serve(s, "leaf", NOW, 0), NULL, "targeting: child of an excluded unit does not serve");
    adserve_snapshot_free(s);

    s = BUILD(HIER, DEMAND(TARGETED("{'ad_units':{'include':['root']}}")));
    is_str(serve(s, "leaf", NOW, 0), "c1", "targeting: grand-child of an included root serves");
    adserve_snapshot_free(s);

    /* the same, with every child listed before its parent */
    s = BUILD(UNIT("{'id':'leaf','status':'ACTIVE','parent_id':'mid'}"),
              UNIT("{'id':'mid','status':'ACTIVE','parent_id':'root'}"),
              UNIT("{'id':'root','status':'ACTIVE'}"),
              DEMAND(fmt("{'id':'li1','order_id':'o1','status':'ACTIVE',"
                  "'type':'STANDARD','cost_type':'CPM','rate':1,"
                  "'targeting':{'ad_units':{'include':['root']}}}")));
    is_str(serve(s, "mid", NOW, 0), "c1",
           "targeting: child listed before its parent inherits (middle record)");
    is_str(serve(s, "leaf", NOW, 0), "c1",
           "targeting: grand-child listed first in the input inherits");
    adserve_snapshot_free(s);

    /* through placements */
    s = BUILD(HIER,
              PLC("{'id':'p1','ad_unit_ids':['side','nope']}"),
              PLC("{'id':'p2','ad_unit_ids':['mid']}"),
              DEMAND(fmt("{'id':'li1','order_id':'o1','status':'ACTIVE',"
                  "'type':'STANDARD','cost_type':'CPM','rate':1,"
                  "'targeting':{'placements':['p1','p-unknown']}}")));
    is_str(serve(s, "side", NOW, 0), "c1", "targeting: unit in a targeted placement serves");
    is_str(serve(s, "mid", NOW, 0), NULL, "targeting: unit of an untargeted placement does not");
    is_str(serve(s, "root", NOW, 0), NULL, "targeting: placement does not reach the parent");
    adserve_snapshot_free(s);

    s = BUILD(HIER,
              PLC("{'id':'p2','ad_unit_ids':['mid']}"),
              DEMAND(fmt("{'id':'li1','order_id':'o1','status':'ACTIVE',"
                  "'type':'STANDARD','cost_type':'CPM','rate':1,"
                  "'targeting':{'placements':['p2'],'ad_units':{'exclude':['leaf']}}}")));
    is_str(serve(s, "mid", NOW, 0), "c1", "targeting: placement unit serves");
    is_str(serve(s, "leaf", NOW, 0), NULL, "targeting: exclusion applies to placement subtree");
    adserve_snapshot_free(s);

    /* no targeting at all, or an empty one */
    s = BUILD(HIER, DEMAND(fmt("{'id':'li1','order_id':'o1','status':'ACTIVE',"
        "'type':'STANDARD','cost_type':'CPM','rate':1}")));
    is_int((long long) s->stats.candidates, 0, "no targeting: no candidate anywhere");
    is_str(serve(s, "root", NOW, 0), NULL, "no targeting: serves nowhere (root)");
    adserve_snapshot_free(s);
    s = BUILD(HIER, DEMAND(fmt("{'id':'li1','order_id':'o1','status':'ACTIVE',"
        "'type':'STANDARD','cost_type':'CPM','rate':1,'targeting':{'ad_units':"
        "{'include':[],'exclude':['mid']},'placements':[]}}")));
    is_int((long long) s->stats.candidates, 0, "empty targeting: no candidate anywhere");
    adserve_snapshot_free(s);

    /* an included unit that is INACTIVE: its ACTIVE children still serve */
    s = BUILD(UNIT("{'id':'root','status':'INACTIVE'}"),
              UNIT("{'id':'kid','status':'ACTIVE','parent_id':'root'}"),
              DEMAND(fmt("{'id':'li1','order_id':'o1','status':'ACTIVE',"
                  "'type':'STANDARD','cost_type':'CPM','rate':1,"
                  "'targeting':{'ad_units':{'include':['root']}}}")));
    ok(unit(s, "root") == NULL, "targeting: INACTIVE included unit is not served");
    is_str(serve(s, "kid", NOW, 0), "c1", "targeting: its ACTIVE child serves (ancestor status is not inherited)");
    adserve_snapshot_free(s);

    /* parent cycles and self-parents: the build ends and serves */
    alarm(20);
    s = BUILD(UNIT("{'id':'a','status':'ACTIVE','parent_id':'b'}"),
              UNIT("{'id':'b','status':'ACTIVE','parent_id':'c'}"),
              UNIT("{'id':'c','status':'ACTIVE','parent_id':'a'}"),
              UNIT("{'id':'d','status':'ACTIVE','parent_id':'d'}"),
              UNIT("{'id':'e','status':'ACTIVE','parent_id':'a'}"),
              UNIT("{'id':'x','status':'ACTIVE','parent_id':'y'}"),
              UNIT("{'id':'y','status':'ACTIVE','parent_id':'x'}"),
              DEMAND(fmt("{'id':'li1','order_id':'o1','status':'ACTIVE',"
                  "'type':'STANDARD','cost_type':'CPM','rate':1,"
                  "'targeting':{'ad_units':{'include':['a','d','x']}}}")));
    alarm(0);
    ok(s != NULL, "parent cycle: the build ends");
    if (s) {
        is_str(serve(s, "a", NOW, 0), "c1", "parent cycle: included unit in a 3-cycle serves");
        is_str(serve(s, "e", NOW, 0), "c1", "parent cycle: child of the cycle serves");
        is_str(serve(s, "d", NOW, 0), "c1", "parent cycle: self-parent unit serves");
        is_str(serve(s, "x", NOW, 0), "c1", "parent cycle: 2-cycle unit serves");
        is_int(unit(s, "a") ? (long long) unit(s, "a")->ncands : -1, 1,
               "parent cycle: no duplicate candidate");
    }
    adserve_snapshot_free(s);

    /* a unit whose parent is unknown is a root */
    s = BUILD(UNIT("{'id':'u1','status':'ACTIVE','parent_id':'ghost'}"),
              DEMAND(lr));
    is_str(serve(s, "u1", NOW, 0), "c1", "unknown parent_id: unit is a root, still served");
    adserve_snapshot_free(s);

    /* the same unit reached twice (include + placement + ancestor) is one candidate */
    s = BUILD(HIER, PLC("{'id':'p1','ad_unit_ids':['leaf']}"),
              DEMAND(fmt("{'id':'li1','order_id':'o1','status':'ACTIVE',"
                  "'type':'STANDARD','cost_type':'CPM','rate':1,'targeting':"
                  "{'ad_units':{'include':['root','leaf','mid']},'placements':['p1']}}")));
    u = unit(s, "leaf");
    is_int(u ? (long long) u->ncands : -1, 1, "targeting reached several ways: one candidate");
    adserve_snapshot_free(s);
#undef HIER
#undef DEMAND
}


/* ---- ranking ------------------------------------------------------------ */


/* Serves u1 for rnd = from .. from + n - 1 and counts the picks of the
 * creatives "ca" and "cb". */
static void split(adserve_snapshot_t *s, int64_t now, uint32_t from, uint32_t n,
                  int *na, int *nb) {
    const char *got;
    uint32_t i;

    *na = *nb = 0;
    for (i = 0; i < n; i++) {
        got = serve(s, "u1", now, from + i);
        *na += got && strcmp(got, "ca") == 0;
        *nb += got && strcmp(got, "cb") == 0;
    }
}

static void test_ranking(void) {
    adserve_snapshot_t *s;
    const adserve_unit_t *u;
    int na, nb, i, groups_ok;

    /* tier beats priority and price */
    s = BUILD(UNIT(U1_J), ORD(O1_J),
              LI(li_rec("house", "HOUSE", 1, 900, NULL)),
              LI(li_rec("pp", "PRICE_PRIORITY", 1, 800, NULL)),
              LI(li_rec("std", "STANDARD", 1, 700, NULL)),
              LI(li_rec("spon", "SPONSORSHIP", 12, 0.01, NULL)),
              CRE(cr_rec("c-house")), CRE(cr_rec("c-pp")), CRE(cr_rec("c-std")),
              CRE(cr_rec("c-spon")),
              LICA(lica_rec("house", "c-house", 1)), LICA(lica_rec("pp", "c-pp", 1)),
              LICA(lica_rec("std", "c-std", 1)), LICA(lica_rec("spon", "c-spon", 1)));
    u = unit(s, "u1");
    ok(u && u->ncands == 4, "tiers: four candidates");
    if (u && u->ncands == 4) {
        is_id(li_of(s, &u->cands[0])->id, "spon", "tiers: SPONSORSHIP first despite priority 12 and rate 0.01");
        is_id(li_of(s, &u->cands[1])->id, "std", "tiers: STANDARD second");
        is_id(li_of(s, &u->cands[2])->id, "pp", "tiers: PRICE_PRIORITY third");
        is_id(li_of(s, &u->cands[3])->id, "house", "tiers: HOUSE last");
        ok(u->cands[0].group < u->cands[1].group && u->cands[1].group < u->cands[2].group
           && u->cands[2].group < u->cands[3].group, "tiers: four distinct ascending groups");
    }
    is_str(serve(s, "u1", NOW, 0), "c-spon", "tiers: SPONSORSHIP serves");
    is_str(serve(s, "u1", NOW, UINT32_MAX), "c-spon", "tiers: SPONSORSHIP serves for any rnd");
    adserve_snapshot_free(s);

    /* priority within a tier beats price; eCPM within a priority. The
     * candidates of a group are no longer sorted by an eCPM fixed at build
     * (they are in their ids' hashes' order): each request computes bid x
     * pace.factor, and the highest wins. A CPC line item with no observed
     * rate yet ranks on the prior CTR (1 click in 1000 impressions, factor
     * 1), not after every CPM one as it used to. */
    s = BUILD(UNIT(U1_J), ORD(O1_J),
              LI(li_rec("p2-rich", "STANDARD", 2, 500, NULL)),
              LI(li_rec("p1-cheap", "STANDARD", 1, 0.5, NULL)),
              LI(li_rec("p1-mid", "STANDARD", 1, 3, NULL)),
              LI(li_rec("p1-top", "STANDARD", 1, 3.25, NULL)),
              LI(li_cost("p1-cpc", "STANDARD", 1, "CPC", 100, NULL)),
              CRE(cr_rec("c1")), CRE(cr_rec("c2")), CRE(cr_rec("c3")), CRE(cr_rec("c4")),
              CRE(cr_rec("c5")),
              LICA(lica_rec("p2-rich", "c1", 1)), LICA(lica_rec("p1-cheap", "c2", 1)),
              LICA(lica_rec("p1-mid", "c3", 1)), LICA(lica_rec("p1-top", "c4", 1)),
              LICA(lica_rec("p1-cpc", "c5", 1)));
    u = unit(s, "u1");
    ok(u && u->ncands == 5, "priority/eCPM: five candidates");
    if (u && u->ncands == 5) {
        /* the group in its ids' hashes' order (cand_cmp) */
        const char            *group[] = { "p1-cheap", "p1-cpc", "p1-mid", "p1-top" };
        const adserve_cand_t  *top = NULL, *cpc = NULL;
        char                   name[64];

        qsort(group, 4, sizeof(group[0]), hash_order);
        for (i = 0; i < 4; i++) {
            snprintf(name, sizeof(name), "group order: the line item ids' hashes (%s)", group[i]);
            is_id(li_of(s, &u->cands[i])->id, group[i], name);
            top = strcmp(group[i], "p1-top") == 0 ? &u->cands[i] : top;
            cpc = strcmp(group[i], "p1-cpc") == 0 ? &u->cands[i] : cpc;
        }
        is_id(li_of(s, &u->cands[4])->id, "p2-rich", "priority: priority 2 after all of priority 1 despite rate 500");
        ok(u->cands[0].group == 0 && u->cands[3].group == 0 && u->cands[4].group == 1,
           "priority: priority 1 one group, priority 2 the next");
        is_int((long long) top->bid_micros, 3250000, "bid_micros = rate x 1e6");
        ok(top->bid == 3.25, "bid = rate");
        is_int(li_of(s, top)->cost_type, ADSERVE_COST_CPM, "cost_type CPM");
        is_int(li_of(s, cpc)->cost_type, ADSERVE_COST_CPC, "cost_type CPC");
        is_int((long long) cpc->bid_micros, 100000000, "CPC bid_micros");
        ok(near(PACE(li_of(s, cpc))->factor, 1), "CPC before any read: prior factor 1");
        ok(near(PACE(li_of(s, top))->factor, 1), "CPM: factor 1");
    }
    is_str(serve(s, "u1", NOW, 7), "c5", "priority/eCPM: CPC 100 at the prior CTR (eCPM 100) serves");
    /* 1e6 impressions, no click: eCPM 100 x 1000 / 1001000 ~ 0.1 */
    deliver(s, "p1-cpc", 1000000, 0, 0);
    is_str(serve(s, "u1", NOW, 7), "c4", "priority/eCPM: CPC without clicks drops, 3.25 CPM serves");
    for (i = 0, na = 0; i < 100; i++) {
        const char *got = serve(s, "u1", NOW, (uint32_t) i * 2654435761u);
        na += got == NULL || strcmp(got, "c4") != 0;
    }
    is_int(na, 0, "priority/eCPM: the highest eCPM serves for any rnd");
    adserve_snapshot_free(s);

    /* weighted rotation: one line item, two creatives, weights 1 and 3 */
    s = BUILD(UNIT(U1_J), ORD(O1_J), LI(li_rec("li1", "STANDARD", 4, 1, NULL)),
              CRE(cr_rec("ca")), CRE(cr_rec("cb")),
              LICA(lica_rec("li1", "ca", 1)), LICA(lica_rec("li1", "cb", 3)));
    u = unit(s, "u1");
    ok(u && u->ncands == 2 && u->cands[0].group == u->cands[1].group,
       "rotation: two candidates in one group");
    split(s, NOW, 0, 4, &na, &nb);
    ok(na == 1 && nb == 3, "rotation: rnd 0..3 splits 1:3 (got %d:%d)", na, nb);
    split(s, NOW, 0, 4000, &na, &nb);
    ok(na == 1000 && nb == 3000, "rotation: rnd 0..3999 splits 1000:3000 (got %d:%d)", na, nb);
    split(s, NOW, UINT32_MAX - 3, 4, &na, &nb);
    ok(na == 1 && nb == 3, "rotation: the top four rnd values split 1:3 (got %d:%d)", na, nb);
    adserve_snapshot_free(s);

    /* two equal line items (same group, same eCPM), and an out-of-flight
     * member. The line item is drawn first, at random and evenly, then its
     * creative by LICA weight; weights no longer pool across line items
     * (this used to split 100:300 on weights 1 and 3). */
    s = BUILD(UNIT(U1_J), ORD(O1_J),
              LI(li_rec("la", "PRICE_PRIORITY", 3, 2, NULL)),
              LI(li_rec("lb", "PRICE_PRIORITY", 3, 2,
                  "'start_at':'2025-06-01T00:00:00Z','end_at':'2025-07-01T00:00:00Z'")),
              CRE(cr_rec("ca")), CRE(cr_rec("cb")),
              LICA(lica_rec("la", "ca", 1)), LICA(lica_rec("lb", "cb", 3)));
    u = unit(s, "u1");
    ok(u && u->ncands == 2 && u->cands[0].group == u->cands[1].group,
       "equal line items: one group");
    split(s, NOW, 0, 400, &na, &nb);
    ok(na + nb == 400 && na >= 160 && na <= 240,
       "equal line items: split about evenly whatever their LICA weights (got %d:%d)", na, nb);
    split(s, JUL1, 0, 400, &na, &nb);
    ok(na == 400 && nb == 0, "equal line items: the out-of-flight one never serves (got %d:%d)", na, nb);
    adserve_snapshot_free(s);

    /* a higher group out of flight falls through to the next group */
    s = BUILD(UNIT(U1_J), ORD(O1_J),
              LI(li_rec("spon", "SPONSORSHIP", 1, 10,
                  "'start_at':'2025-06-01T00:00:00Z','end_at':'2025-07-01T00:00:00Z'")),
              LI(li_rec("std1", "STANDARD", 1, 5,
                  "'end_at':'2025-06-01T00:00:00Z'")),
              LI(li_rec("std2", "STANDARD", 2, 5, NULL)),
              CRE(cr_rec("c-spon")), CRE(cr_rec("c-std1")), CRE(cr_rec("c-std2")),
              LICA(lica_rec("spon", "c-spon", 1)), LICA(lica_rec("std1", "c-std1", 1)),
              LICA(lica_rec("std2", "c-std2", 1)));
    is_str(serve(s, "u1", NOW + 3600, 0), "c-spon", "fall-through: sponsorship in flight serves");
    is_str(serve(s, "u1", JUL1, 0), "c-std2",
           "fall-through: after sponsorship and std1 end, the priority-2 group serves");
    is_str(serve(s, "u1", NOW - 1, 0), "c-std1",
           "fall-through: before sponsorship starts, the priority-1 group serves");
    adserve_snapshot_free(s);

    /* groups are non-decreasing and candidates of a group rank equal */
    s = BUILD(UNIT(U1_J), ORD(O1_J),
              LI(li_rec("x1", "STANDARD", 2, 1, NULL)), LI(li_rec("x2", "STANDARD", 2, 1, NULL)),
              LI(li_rec("x3", "HOUSE", 2, 1, NULL)), LI(li_rec("x4", "STANDARD", 1, 1, NULL)),
              CRE(cr_rec("c1")), CRE(cr_rec("c2")),
              LICA(lica_rec("x1", "c1", 2)), LICA(lica_rec("x1", "c2", 2)),
              LICA(lica_rec("x2", "c1", 5)), LICA(lica_rec("x3", "c2", 1)),
              LICA(lica_rec("x4", "c2", 1)));
    u = unit(s, "u1");
    groups_ok = u && u->ncands == 5 && u->cands[0].group == 0;
    for (i = 1; groups_ok && i < (int) u->ncands; i++) {
        groups_ok = u->cands[i].group == u->cands[i - 1].group
                    || u->cands[i].group == u->cands[i - 1].group + 1;
    }
    ok(groups_ok, "groups: numbered 0.. without gaps, non-decreasing");
    ok(u && u->ncands == 5 && u->cands[1].group == 1 && u->cands[3].group == 1
       && u->cands[4].group == 2, "groups: x4 | x1,x1,x2 | x3");
    is_int(u ? (long long) u->cands[1].weight + u->cands[2].weight + u->cands[3].weight : -1,
           9, "groups: LICA weights carried into the candidates");
    adserve_snapshot_free(s);
}


/* ---- eCPM per request --------------------------------------------------- */

/* CPC and CPA line items rank on bid x pace.factor, the factor set from
 * delivered counts by adserve_pace_update. */
static void test_cost_ranking(void) {
    adserve_snapshot_t *s;
    const adserve_li_t *li;

    /* CPM 2 against CPC 1 per click, one group */
    s = BUILD(UNIT(U1_J), ORD(O1_J),
              LI(li_rec("cpm", "STANDARD", 4, 2, NULL)),
              LI(li_cost("cpc", "STANDARD", 4, "CPC", 1, NULL)),
              CRE(cr_rec("c-cpm")), CRE(cr_rec("c-cpc")),
              LICA(lica_rec("cpm", "c-cpm", 1)), LICA(lica_rec("cpc", "c-cpc", 1)));
    if (s == NULL) return;
    li = lookup(s, "cpc");
    ok(li && li->cost_type == ADSERVE_COST_CPC && near(PACE(li)->factor, 1) && !PACE(li)->known,
       "CPC: prior factor 1000 x 1 / 1000 = 1 before any read");
    is_str(serve(s, "u1", NOW, 1), "c-cpm", "CPC at the prior CTR: eCPM 1 < CPM 2, the CPM serves");
    /* CTR 1 %: 1000 x 101 / 11000 = 9.18 */
    deliver(s, "cpc", 10000, 100, 0);
    ok(li && near(PACE(li)->factor, 1000.0 * 101 / 11000), "CPC: factor = 1000 x (clk + 1) / (imp + 1000)");
    ok(li && PACE(li)->known, "CPC: known after the read");
    is_str(serve(s, "u1", NOW, 1), "c-cpc", "CPC with a high observed CTR (eCPM 9.2) beats CPM 2");
    /* CTR 0.1 %: 1000 x 11 / 11000 = 1 */
    deliver(s, "cpc", 10000, 10, 0);
    is_str(serve(s, "u1", NOW, 1), "c-cpm", "CPC with a low observed CTR (eCPM 1) loses to CPM 2");
    /* 0 clicks in 1e5: the prior fades */
    deliver(s, "cpc", 100000, 0, 0);
    ok(li && near(PACE(li)->factor, 1000.0 / 101000), "CPC without clicks: factor 1000 / 101000");
    is_str(serve(s, "u1", NOW, 1), "c-cpm", "CPC without clicks loses");
    /* just above and just below CPM 2: CTR 0.21 % and 0.19 % over 1e6 */
    deliver(s, "cpc", 1000000, 2100, 0);
    is_str(serve(s, "u1", NOW, 1), "c-cpc", "CPC eCPM 2.1 beats CPM 2");
    deliver(s, "cpc", 1000000, 1900, 0);
    is_str(serve(s, "u1", NOW, 1), "c-cpm", "CPC eCPM 1.9 loses to CPM 2");
    /* a CPM line item's factor stays 1 whatever it delivers */
    deliver(s, "cpm", 1000, 900, 900);
    ok(near(PACE(lookup(s, "cpm"))->factor, 1), "CPM: factor 1 whatever the clicks");
    adserve_snapshot_free(s);

    /* CPM 2 against CPA 10 per conversion */
    s = BUILD(UNIT(U1_J), ORD(O1_J),
              LI(li_rec("cpm", "STANDARD", 4, 2, NULL)),
              LI(li_cost("cpa", "STANDARD", 4, "CPA", 10, NULL)),
              CRE(cr_rec("c-cpm")), CRE(cr_rec("c-cpa")),
              LICA(lica_rec("cpm", "c-cpm", 1)), LICA(lica_rec("cpa", "c-cpa", 1)));
    if (s == NULL) return;
    li = lookup(s, "cpa");
    ok(li && li->cost_type == ADSERVE_COST_CPA && near(PACE(li)->factor, 0.1),
       "CPA: prior factor 1000 x 1 / 10000 = 0.1");
    is_str(serve(s, "u1", NOW, 1), "c-cpm", "CPA at the prior CVR: eCPM 1 < CPM 2");
    /* 1000 x 101 / 20000 = 5.05: eCPM 50.5 */
    deliver(s, "cpa", 10000, 500, 100);
    ok(li && near(PACE(li)->factor, 1000.0 * 101 / 20000),
       "CPA: factor = 1000 x (conv + 1) / (imp + 10000)");
    is_str(serve(s, "u1", NOW, 1), "c-cpa", "CPA with a high observed CVR beats CPM 2");
    deliver(s, "cpa", 1000000, 50000, 10);
    is_str(serve(s, "u1", NOW, 1), "c-cpm", "CPA with a low observed CVR (eCPM 0.11) loses");
    adserve_snapshot_free(s);

    /* a better eCPM in a lower group never wins over the group above */
    s = BUILD(UNIT(U1_J), ORD(O1_J),
              LI(li_rec("cpm", "STANDARD", 4, 2, NULL)),
              LI(li_cost("cpc", "STANDARD", 5, "CPC", 1, NULL)),
              CRE(cr_rec("c-cpm")), CRE(cr_rec("c-cpc")),
              LICA(lica_rec("cpm", "c-cpm", 1)), LICA(lica_rec("cpc", "c-cpc", 1)));
    if (s == NULL) return;
    deliver(s, "cpc", 10000, 5000, 0);
    is_str(serve(s, "u1", NOW, 1), "c-cpm", "eCPM ranks inside a group only: priority first");
    adserve_snapshot_free(s);
}

/* CPC and CPA line items without a rate bid the unit's default_cpc or
 * default_cpa. */
static void test_default_bids(void) {
    adserve_snapshot_t *s;
    const adserve_cand_t *c;

    s = BUILD(UNIT("{'id':'u1','status':'ACTIVE','ext':{'default_cpc':3,'default_cpa':7}}"),
              UNIT("{'id':'u2','status':'ACTIVE'}"),
              ORD(O1_J),
              LI(li_rec("cpm", "STANDARD", 4, 2, NULL)),
              LI(li_cost("cpc0", "STANDARD", 4, "CPC", 0, NULL)),
              LI(li_cost("cpa0", "STANDARD", 5, "CPA", 0, NULL)),
              LI(li_cost("cpc2", "STANDARD", 6, "CPC", 2, NULL)),
              LI(li_rec("cpm0", "STANDARD", 7, 0, NULL)),
              LI(fmt("{'id':'both','order_id':'o1','status':'ACTIVE','type':'STANDARD',"
                     "'priority':8,'cost_type':'CPC','rate':0,"
                     "'targeting':{'ad_units':{'include':['u1','u2']}}}")),
              CRE(cr_rec("c1")),
              LICA(lica_rec("cpm", "c1", 1)), LICA(lica_rec("cpc0", "c1", 1)),
              LICA(lica_rec("cpa0", "c1", 1)), LICA(lica_rec("cpc2", "c1", 1)),
              LICA(lica_rec("cpm0", "c1", 1)), LICA(lica_rec("both", "c1", 1)));
    if (s == NULL) return;
    c = cand_of(s, "u1", "cpc0");
    ok(c && c->bid == 3 && c->bid_micros == 3000000, "CPC rate 0: bids the unit's default_cpc 3");
    c = cand_of(s, "u1", "cpa0");
    ok(c && c->bid == 7 && c->bid_micros == 7000000, "CPA rate 0: bids the unit's default_cpa 7");
    c = cand_of(s, "u1", "cpc2");
    ok(c && c->bid == 2 && c->bid_micros == 2000000, "CPC with a rate: bids its rate, not the default");
    c = cand_of(s, "u1", "cpm0");
    ok(c && c->bid == 0 && c->bid_micros == 0, "CPM rate 0: bids 0, no default");
    c = cand_of(s, "u1", "both");
    ok(c && c->bid == 3, "the default is the unit's: 3 on u1");
    c = cand_of(s, "u2", "both");
    ok(c && c->bid == 0 && c->bid_micros == 0, "the default is the unit's: 0 on a unit without one");
    adserve_snapshot_free(s);

    /* the default ranks: CPC 0 on u1 (default 3, eCPM 3) beats CPM 2; on
     * u2 (no default) it bids 0 and the CPM serves */
    s = BUILD(UNIT("{'id':'u1','status':'ACTIVE','ext':{'default_cpc':3}}"),
              UNIT("{'id':'u2','status':'ACTIVE','ext':{'default_cpc':-5}}"),
              ORD(O1_J),
              LI(fmt("{'id':'cpm','order_id':'o1','status':'ACTIVE','type':'STANDARD',"
                     "'priority':4,'cost_type':'CPM','rate':2,"
                     "'targeting':{'ad_units':{'include':['u1','u2']}}}")),
              LI(fmt("{'id':'cpc','order_id':'o1','status':'ACTIVE','type':'STANDARD',"
                     "'priority':4,'cost_type':'CPC','rate':0,"
                     "'targeting':{'ad_units':{'include':['u1','u2']}}}")),
              CRE(cr_rec("c-cpm")), CRE(cr_rec("c-cpc")),
              LICA(lica_rec("cpm", "c-cpm", 1)), LICA(lica_rec("cpc", "c-cpc", 1)));
    if (s == NULL) return;
    is_str(serve(s, "u1", NOW, 1), "c-cpc", "default_cpc 3 at the prior CTR beats CPM 2");
    is_str(serve(s, "u2", NOW, 1), "c-cpm", "a negative default_cpc counts as none: the CPM serves");
    c = cand_of(s, "u2", "cpc");
    ok(c && c->bid == 0, "negative default_cpc: bid 0");
    adserve_snapshot_free(s);
}

/* ext.target_ecpm: PRICE_PRIORITY line items below it do not serve. */
static void test_floor(void) {
    adserve_snapshot_t *s;
    const adserve_unit_t *u;
    adserve_decision_t d;

    s = BUILD(UNIT("{'id':'u1','status':'ACTIVE','ext':{'target_ecpm':2}}"),
              UNIT("{'id':'u2','status':'ACTIVE'}"),
              UNIT("{'id':'u3','status':'ACTIVE','ext':{'target_ecpm':5e9}}"),
              ORD(O1_J),
              LI(fmt("{'id':'pp-low','order_id':'o1','status':'ACTIVE','type':'PRICE_PRIORITY',"
                     "'priority':4,'cost_type':'CPM','rate':1.5,"
                     "'targeting':{'ad_units':{'include':['u1','u2','u3']}}}")),
              LI(li_rec("house", "HOUSE", 4, 0, NULL)),
              CRE(cr_rec("c-pp")), CRE(cr_rec("c-house")),
              LICA(lica_rec("pp-low", "c-pp", 1)), LICA(lica_rec("house", "c-house", 1)));
    if (s == NULL) return;
    u = unit(s, "u1");
    ok(u && u->floor == 2, "unit floor = ext.target_ecpm");
    ok(unit(s, "u3") && unit(s, "u3")->floor == ADSERVE_COST_MAX,
       "a target_ecpm past the API's bound (written around it): the bound, not no floor");
    is_str(serve(s, "u3", NOW, 1), NULL, "... and nothing clears it");
    ok(unit(s, "u2") && unit(s, "u2")->floor == 0, "no target_ecpm: floor 0");
    is_str(serve(s, "u1", NOW, 1), "c-house", "PRICE_PRIORITY eCPM 1.5 under floor 2: skipped, the house serves");
    is_str(serve(s, "u2", NOW, 1), "c-pp", "the same line item serves on a unit without a floor");
    d = decision(NOW, 1, NULL, 0);
    is_int(u && cand_of(s, "u1", "pp-low")
           ? (int) li_check(lookup(s, "pp-low"), u, cand_of(s, "u1", "pp-low"), &d) : -1,
           ADSERVE_NO_FLOOR, "li_check: PRICE_PRIORITY under the floor: ADSERVE_NO_FLOOR");
    adserve_snapshot_free(s);

    /* at the floor serves; STANDARD and SPONSORSHIP under it still serve;
     * a CPC PRICE_PRIORITY is compared on its eCPM */
    s = BUILD(UNIT("{'id':'u1','status':'ACTIVE','ext':{'target_ecpm':2}}"), ORD(O1_J),
              LI(li_rec("pp-at", "PRICE_PRIORITY", 4, 2, NULL)),
              LI(li_cost("pp-cpc", "PRICE_PRIORITY", 3, "CPC", 1, NULL)),
              LI(li_rec("std", "STANDARD", 4, 0.5, NULL)),
              LI(li_rec("spon", "SPONSORSHIP", 4, 0.1,
                        "'start_at':'2025-06-01T00:00:00Z','end_at':'2025-06-02T00:00:00Z'")),
              CRE(cr_rec("c-at")), CRE(cr_rec("c-cpc")), CRE(cr_rec("c-std")), CRE(cr_rec("c-spon")),
              LICA(lica_rec("pp-at", "c-at", 1)), LICA(lica_rec("pp-cpc", "c-cpc", 1)),
              LICA(lica_rec("std", "c-std", 1)), LICA(lica_rec("spon", "c-spon", 1)));
    if (s == NULL) return;
    is_str(serve(s, "u1", NOW, 1), "c-spon", "SPONSORSHIP eCPM 0.1 under the floor still serves");
    is_str(serve(s, "u1", NOW + 86400, 1), "c-std", "STANDARD eCPM 0.5 under the floor still serves");
    s->lis[cand_of(s, "u1", "std")->li].end = NOW;   /* std's flight ends */
    is_str(serve(s, "u1", NOW + 86400, 1), "c-at",
           "PRICE_PRIORITY at exactly the floor serves; CPC at eCPM 1 under it does not");
    deliver(s, "pp-cpc", 10000, 100, 0);               /* eCPM 9.2 */
    is_str(serve(s, "u1", NOW + 86400, 1), "c-cpc",
           "the floor is on eCPM: the CPC line item above it once its CTR is known");
    adserve_snapshot_free(s);
}

/* Equal eCPMs share at random, evenly per line item; then the creative by
 * LICA weight. */
static void test_ties(void) {
    adserve_snapshot_t *s;
    const char *got;
    int n[4], i, other;
    static const char *const names[4] = { "ca1", "ca2", "cb", "cc" };

    s = BUILD(UNIT(U1_J), ORD(O1_J),
              LI(li_rec("la", "STANDARD", 4, 2, NULL)),
              LI(li_cost("lb", "STANDARD", 4, "CPC", 2, NULL)),     /* prior: eCPM 2 */
              CRE(cr_rec("ca1")), CRE(cr_rec("ca2")), CRE(cr_rec("cb")),
              LICA(lica_rec("la", "ca1", 1)), LICA(lica_rec("la", "ca2", 2)),
              LICA(lica_rec("lb", "cb", 1)));
    if (s == NULL) return;
    memset(n, 0, sizeof(n));
    for (i = 0, other = 0; i < 12000; i++) {
        got = serve(s, "u1", NOW, (uint32_t) i * 2654435761u + 12345);
        if (got == NULL) { other++; continue; }
        if (strcmp(got, "ca1") == 0) n[0]++;
        else if (strcmp(got, "ca2") == 0) n[1]++;
        else if (strcmp(got, "cb") == 0) n[2]++;
        else other++;
    }
    diag("ties: la %d (ca1 %d, ca2 %d), lb %d over 12000", n[0] + n[1], n[0], n[1], n[2]);
    is_int(other, 0, "ties: every request served by la or lb");
    ok(n[0] + n[1] >= 5700 && n[0] + n[1] <= 6300 && n[2] >= 5700 && n[2] <= 6300,
       "ties: equal eCPM (CPM 2, CPC 2 at the prior) split evenly per line item, "
       "not by LICA weight (la %d, lb %d)", n[0] + n[1], n[2]);
    ok(n[1] >= 2 * n[0] * 0.9 && n[1] <= 2 * n[0] * 1.1,
       "ties: inside la the creatives rotate 1:2 by LICA weight (%d:%d)", n[0], n[1]);
    adserve_snapshot_free(s);

    /* three ways */
    s = BUILD(UNIT(U1_J), ORD(O1_J),
              LI(li_rec("la", "STANDARD", 4, 2, NULL)), LI(li_rec("lb", "STANDARD", 4, 2, NULL)),
              LI(li_rec("lc", "STANDARD", 4, 2, NULL)), LI(li_rec("ld", "STANDARD", 4, 1.99, NULL)),
              CRE(cr_rec("ca1")), CRE(cr_rec("cb")), CRE(cr_rec("cc")), CRE(cr_rec("ca2")),
              LICA(lica_rec("la", "ca1", 1)), LICA(lica_rec("lb", "cb", 1)),
              LICA(lica_rec("lc", "cc", 1)), LICA(lica_rec("ld", "ca2", 100)));
    if (s == NULL) return;
    memset(n, 0, sizeof(n));
    for (i = 0, other = 0; i < 9000; i++) {
        int k;
        got = serve(s, "u1", NOW, (uint32_t) i * 2654435761u + 777);
        for (k = 0; k < 4; k++) {
            if (got && strcmp(got, names[k]) == 0) { n[k]++; break; }
        }
        other += k == 4;
    }
    ok(other == 0 && n[1] == 0, "ties: a line item just below the best eCPM never serves");
    ok(n[0] >= 2700 && n[0] <= 3300 && n[2] >= 2700 && n[2] <= 3300 && n[3] >= 2700
       && n[3] <= 3300, "ties: three equal line items get a third each (%d / %d / %d)",
       n[0], n[2], n[3]);
    adserve_snapshot_free(s);
}


/* ---- frequency caps ----------------------------------------------------- */

static void test_caps(void) {
    adserve_snapshot_t *s;
    const adserve_unit_t *u;
    const adserve_li_t *cl;
    adserve_decision_t d;
    adserve_seen_t seen[8];
    uint32_t ci, oi;

    s = BUILD(UNIT(U1_J), UNIT("{'id':'u2','status':'ACTIVE'}"), ORD(O1_J),
              LI(li_rec("capped", "STANDARD", 1, 1,
                        "'frequency_caps':[{'max':2,'seconds':3600}]")),
              LI(li_rec("open", "STANDARD", 2, 1, NULL)),
              LI(fmt("{'id':'two','order_id':'o1','status':'ACTIVE','type':'STANDARD',"
                     "'priority':1,'cost_type':'CPM','rate':1,'targeting':{'ad_units':"
                     "{'include':['u2']}},'frequency_caps':[{'max':1,'seconds':60},"
                     "{'max':3,'seconds':86400},{'max':0,'seconds':10},{'max':5,'seconds':0},"
                     "{'max':'9','seconds':9},{'seconds':9}]}")),
              CRE(cr_rec("c-capped")), CRE(cr_rec("c-open")), CRE(cr_rec("c-two")),
              LICA(lica_rec("capped", "c-capped", 1)), LICA(lica_rec("open", "c-open", 1)),
              LICA(lica_rec("two", "c-two", 1)));
    if (s == NULL) return;
    u = unit(s, "u1");
    cl = lookup(s, "capped");
    if (u == NULL || cl == NULL || lookup(s, "open") == NULL || lookup(s, "two") == NULL) {
        ok(0, "caps: world builds");
        adserve_snapshot_free(s);
        return;
    }
    ci = (uint32_t) (cl - s->lis);
    oi = (uint32_t) (lookup(s, "open") - s->lis);
    ok(cl->ncaps == 1 && cl->caps[0].max == 2 && cl->caps[0].seconds == 3600,
       "caps: frequency_caps parsed into the line item");
    is_int(lookup(s, "open")->ncaps, 0, "caps: none on an uncapped line item");
    ok(lookup(s, "two")->ncaps == 2 && lookup(s, "two")->caps[1].max == 3
       && lookup(s, "two")->caps[1].seconds == 86400,
       "caps: invalid caps (max 0, seconds 0, wrong types) are ignored");
    is_int(u->max_cap_seconds, 3600, "caps: unit max_cap_seconds = longest cap of its line items");
    is_int(unit(s, "u2")->max_cap_seconds, 86400, "caps: max_cap_seconds per unit");
    is_int(s->max_cap_seconds, 86400, "caps: snapshot max_cap_seconds = longest of all");

    d = decision(NOW, 1, NULL, 0);
    d.caps_known = 0;
    is_str(serve_d(s, "u1", d), "c-open", "caps unknown: the capped line item is skipped, the uncapped one serves");
    is_int(li_check(cl, u, cand_of(s, "u1", "capped"), &d), ADSERVE_NO_FREQUENCY_CAP,
           "caps unknown: li_check ADSERVE_NO_FREQUENCY_CAP");
    is_int(li_check(lookup(s, "open"), u, cand_of(s, "u1", "open"), &d), ADSERVE_OK,
           "caps unknown: an uncapped line item is OK");

    is_str(serve_d(s, "u1", decision(NOW, 1, NULL, 0)), "c-capped",
           "caps known, nothing seen: the capped line item serves");

    seen[0] = (adserve_seen_t) { ci, NOW - 10 };
    is_str(serve_d(s, "u1", decision(NOW, 1, seen, 1)), "c-capped",
           "caps: 1 seen in the window, max 2: serves");

    seen[1] = (adserve_seen_t) { ci, NOW - 3599 };
    is_str(serve_d(s, "u1", decision(NOW, 1, seen, 2)), "c-open",
           "caps: 2 seen in the window, max 2: skipped, the next serves");
    d = decision(NOW, 1, seen, 2);
    is_int(li_check(cl, u, cand_of(s, "u1", "capped"), &d), ADSERVE_NO_FREQUENCY_CAP,
           "caps at max: li_check ADSERVE_NO_FREQUENCY_CAP");

    seen[1] = (adserve_seen_t) { ci, NOW - 3600 };
    is_str(serve_d(s, "u1", decision(NOW, 1, seen, 2)), "c-capped",
           "caps: an ad at exactly now - seconds has left the window: serves");
    seen[1] = (adserve_seen_t) { ci, NOW - 100000 };
    is_str(serve_d(s, "u1", decision(NOW, 1, seen, 2)), "c-capped",
           "caps: an old ad does not count");
    seen[1] = (adserve_seen_t) { ci, NOW };
    is_str(serve_d(s, "u1", decision(NOW, 1, seen, 2)), "c-open",
           "caps: an ad at now counts");
    /* the window slides: the same history, later */
    seen[0] = (adserve_seen_t) { ci, NOW - 600 };
    seen[1] = (adserve_seen_t) { ci, NOW - 100 };
    is_str(serve_d(s, "u1", decision(NOW, 1, seen, 2)), "c-open", "caps: slide, both in the window");
    is_str(serve_d(s, "u1", decision(NOW + 2999, 1, seen, 2)), "c-open",
           "caps: slide, 1 s before the first leaves");
    is_str(serve_d(s, "u1", decision(NOW + 3000, 1, seen, 2)), "c-capped",
           "caps: slide, the first leaves the window at its time + seconds");

    /* exact caps: what Redis refused is capped, what it reserved for the
     * request may serve, caps known or not */
    {
        uint64_t refused = cl->hash, granted = cl->hash, other = lookup(s, "open")->hash;

        d = decision(NOW, 1, NULL, 0);
        d.refused = &refused;
        d.nrefused = 1;
        is_str(serve_d(s, "u1", d), "c-open",
               "caps: a reservation refused: capped, the next serves");
        d.refused = &other;
        is_str(serve_d(s, "u1", d), "c-capped",
               "caps: another line item's refusal does not count");
        d = decision(NOW, 1, seen, 2);
        d.caps_known = 0;
        d.granted = &granted;
        d.ngranted = 1;
        is_str(serve_d(s, "u1", d), "c-capped",
               "caps: reserved for the request: serves though the caps are unknown");
        d.granted = &other;
        is_str(serve_d(s, "u1", d), "c-open",
               "caps: another line item's reservation does not let it serve");
    }

    /* other line items' ads do not count */
    seen[0] = (adserve_seen_t) { oi, NOW - 1 };
    seen[1] = (adserve_seen_t) { oi, NOW - 2 };
    seen[2] = (adserve_seen_t) { oi, NOW - 3 };
    is_str(serve_d(s, "u1", decision(NOW, 1, seen, 3)), "c-capped",
           "caps: the user's ads of other line items do not count");

    /* several caps: each must hold */
    ci = (uint32_t) (lookup(s, "two") - s->lis);
    seen[0] = (adserve_seen_t) { ci, NOW - 100 };
    seen[1] = (adserve_seen_t) { ci, NOW - 200 };
    is_str(serve_d(s, "u2", decision(NOW, 1, seen, 2)), "c-two",
           "caps: two caps, 0 in 60 s and 2 in a day: serves");
    seen[2] = (adserve_seen_t) { ci, NOW - 30 };
    is_str(serve_d(s, "u2", decision(NOW, 1, seen, 3)), NULL,
           "caps: 1 in 60 s (max 1): no ad");
    seen[2] = (adserve_seen_t) { ci, NOW - 3000 };
    is_str(serve_d(s, "u2", decision(NOW, 1, seen, 3)), NULL,
           "caps: 0 in 60 s but 3 in a day (max 3): no ad");
    is_str(serve_d(s, "u2", decision(NOW + 86400 - 150, 1, seen, 3)), "c-two",
           "caps: a day later the oldest left the day window: serves");
    adserve_snapshot_free(s);
}


/* ---- goals and pacing at decision time ---------------------------------- */

static void test_goals(void) {
    adserve_snapshot_t *s;
    const adserve_unit_t *u;
    adserve_li_t *g;
    adserve_decision_t d;
    int i, n;

    s = BUILD(UNIT(U1_J), ORD(O1_J),
              LI(li_rec("goal", "STANDARD", 1, 1,
                        "'goal':{'type':'IMPRESSIONS','units':100},'delivery':'ASAP'")),
              LI(li_rec("open", "STANDARD", 2, 1, NULL)),
              CRE(cr_rec("c-goal")), CRE(cr_rec("c-open")),
              LICA(lica_rec("goal", "c-goal", 1)), LICA(lica_rec("open", "c-open", 1)));
    if (s == NULL) return;
    u = unit(s, "u1");
    g = lookup(s, "goal");
    if (u == NULL || g == NULL) { ok(0, "goals: world builds"); adserve_snapshot_free(s); return; }
    ok(g->paced && g->goal == 100 && g->goal_type == ADSERVE_GOAL_IMPRESSIONS
       && g->delivery == ADSERVE_DELIVERY_ASAP, "goals: goal and delivery parsed, paced");
    ok(!lookup(s, "open")->paced && lookup(s, "open")->goal_type == ADSERVE_GOAL_NONE
       && lookup(s, "open")->delivery == ADSERVE_DELIVERY_EVEN,
       "goals: no goal: not paced; delivery EVEN by default");
    ok(!PACE(g)->known && PACE(g)->allow == 0 && PACE(g)->budget == 0,
       "goals: a paced line item starts with nothing allowed");

    is_str(serve(s, "u1", NOW, 1), "c-open", "paced before its first update: does not serve");
    d = decision(NOW, 1, NULL, 0);
    is_int(li_check(g, u, cand_of(s, "u1", "goal"), &d), ADSERVE_OK,
           "paced before its first update: li_check OK (pacing decides after it)");
    is_int(PACE(g)->opp, 1, "paced: the opportunity is counted though pacing refused it");

    /* 95 delivered: ASAP wants 5, no opportunities measured yet: budget 5 */
    deliver(s, "goal", 95, 0, 0);
    ok(PACE(g)->known && PACE(g)->allow == UINT32_MAX && PACE(g)->budget == 5,
       "after an update: allow all, budget 5 (allow %u, budget %u)", PACE(g)->allow, PACE(g)->budget);
    for (i = 0, n = 0; i < 8; i++) {
        const char *got = serve(s, "u1", NOW, (uint32_t) i);
        n += got && strcmp(got, "c-goal") == 0;
    }
    is_int(n, 5, "paced: serves its budget (5 of 8), then the next line item");
    is_int(PACE(g)->served, 5, "paced: pace.served counts its ads");
    /* nothing was pushed to the counters: the update kept the first one */
    is_int(PACE(g)->opp, 1 + 8, "paced: pace.opp counts every eligible request reached");

    /* a dry decision (one that may be made again) counts nothing, and
     * decides as the counting one would */
    PACE(g)->served = 4;
    d = decision(NOW, 7, NULL, 0);
    d.dry = 1;
    is_str(serve_d(s, "u1", d), "c-goal", "dry: decides as the counting one");
    ok(PACE(g)->served == 4 && PACE(g)->opp == 9, "dry: counts no ad and no opportunity");
    d.dry = 0;
    is_str(serve_d(s, "u1", d), "c-goal", "made again, not dry: the same decision");
    ok(PACE(g)->served == 5 && PACE(g)->opp == 10, "... and it counts");

    PACE(g)->pushed = PACE(g)->opp - 2;       /* all but 2 pushed to the counters */
    deliver(s, "goal", 100, 0, 0);
    is_int(PACE(g)->opp, 2, "update: pace.opp keeps what came after the push");
    is_int(PACE(g)->pushed + PACE(g)->served, 0, "update: pushed and served start again");
    ok(PACE(g)->stopped && PACE(g)->allow == 0 && PACE(g)->budget == 0, "goal reached: stopped");
    is_str(serve(s, "u1", NOW, 1), "c-open", "goal reached: not served");
    is_int(li_check(g, u, cand_of(s, "u1", "goal"), &d), ADSERVE_NO_GOAL_REACHED,
           "goal reached: li_check ADSERVE_NO_GOAL_REACHED");
    is_int(PACE(g)->opp, 2, "goal reached: no opportunity counted any more");
    deliver(s, "goal", 150, 0, 0);
    ok(PACE(g)->stopped, "goal passed: still stopped");
    deliver(s, "goal", 99, 0, 0);
    ok(!PACE(g)->stopped, "below the goal again (a correction): not stopped");
    is_str(serve(s, "u1", NOW, 1), "c-goal", "below the goal again: serves");
    adserve_snapshot_free(s);

    /* click goals count clicks; invalid goals do not pace */
    s = BUILD(UNIT(U1_J), ORD(O1_J),
              LI(li_cost("clicks", "STANDARD", 1, "CPC", 1,
                         "'goal':{'type':'CLICKS','units':10}")),
              LI(li_rec("g0", "STANDARD", 2, 1, "'goal':{'type':'IMPRESSIONS','units':0}")),
              LI(li_rec("gbad", "STANDARD", 3, 1, "'goal':{'type':'VIEWS','units':10}")),
              LI(li_rec("gstr", "STANDARD", 4, 1, "'goal':{'type':'IMPRESSIONS','units':'10'}")),
              CRE(cr_rec("c-clicks")), CRE(cr_rec("c-g0")), CRE(cr_rec("c-gbad")),
              CRE(cr_rec("c-gstr")),
              LICA(lica_rec("clicks", "c-clicks", 1)), LICA(lica_rec("g0", "c-g0", 1)),
              LICA(lica_rec("gbad", "c-gbad", 1)), LICA(lica_rec("gstr", "c-gstr", 1)));
    if (s == NULL) return;
    g = lookup(s, "clicks");
    ok(g && g->paced && g->goal_type == ADSERVE_GOAL_CLICKS && g->goal == 10,
       "click goal parsed");
    ok(lookup(s, "g0") && !lookup(s, "g0")->paced, "goal of 0 units: not paced");
    ok(lookup(s, "gbad") && !lookup(s, "gbad")->paced, "goal of an unknown type: not paced");
    ok(lookup(s, "gstr") && !lookup(s, "gstr")->paced, "goal units not a number: not paced");
    is_str(serve(s, "u1", NOW, 1), "c-g0", "the unpaced line items serve without any update");
    deliver(s, "clicks", 1000000, 9, 0);
    ok(g && !PACE(g)->stopped, "click goal: 9 clicks of 10, whatever the impressions: not stopped");
    is_str(serve(s, "u1", NOW, 1), "c-clicks", "click goal not reached: serves");
    deliver(s, "clicks", 1000, 10, 0);
    ok(g && PACE(g)->stopped, "click goal: 10 clicks: stopped");
    is_str(serve(s, "u1", NOW, 1), "c-g0", "click goal reached: the next serves");
    adserve_snapshot_free(s);

    /* EVEN: ahead of schedule, nothing is allowed until the schedule
     * catches up */
    s = BUILD(UNIT(U1_J), ORD(O1_J),
              LI(li_rec("even", "STANDARD", 1, 1,
                        "'goal':{'type':'IMPRESSIONS','units':1000},"
                        "'start_at':'2025-06-01T00:00:00Z','end_at':'2025-06-01T00:16:40Z'")),
              LI(li_rec("open", "STANDARD", 2, 1, NULL)),
              CRE(cr_rec("c-even")), CRE(cr_rec("c-open")),
              LICA(lica_rec("even", "c-even", 1)), LICA(lica_rec("open", "c-open", 1)));
    if (s == NULL) return;
    g = lookup(s, "even");
    ok(g && g->paced && g->delivery == ADSERVE_DELIVERY_EVEN && g->end - g->start == 1000,
       "EVEN line item over 1000 s");
    deliver_at(s, "even", 600, 0, 0, NOW + 500);
    ok(g && !PACE(g)->stopped && PACE(g)->budget == 0, "EVEN ahead of schedule: budget 0");
    is_str(serve(s, "u1", NOW + 500, 1), "c-open", "EVEN ahead of schedule: not served");
    deliver_at(s, "even", 400, 0, 0, NOW + 510);
    ok(g && PACE(g)->budget > 0, "EVEN behind schedule: a budget");
    is_str(serve(s, "u1", NOW + 510, 1), "c-even", "EVEN behind schedule: served");
    adserve_snapshot_free(s);
}


/* ---- adserve_li_check --------------------------------------------------- */

static void test_li_check(void) {
    adserve_snapshot_t *s;
    const adserve_unit_t *u;
    adserve_decision_t d;

#define CHECK(li, dd) li_check(lookup(s, li), u, cand_of(s, "u1", li), dd)

    s = BUILD(UNIT("{'id':'u1','status':'ACTIVE','ext':{'target_ecpm':1}}"), ORD(O1_J),
              LI(li_rec("ok", "STANDARD", 1, 0.5, NULL)),
              LI(li_rec("flight", "STANDARD", 1, 1,
                        "'start_at':'2025-06-01T00:00:00Z','end_at':'2025-07-01T00:00:00Z'")),
              LI(fmt("{'id':'mobile','order_id':'o1','status':'ACTIVE','type':'STANDARD',"
                     "'priority':1,'cost_type':'CPM','rate':1,'targeting':{'ad_units':"
                     "{'include':['u1']},'device':{'types':['mobile']}}}")),
              LI(li_rec("goal", "STANDARD", 1, 1, "'goal':{'type':'IMPRESSIONS','units':10}")),
              LI(li_rec("capped", "STANDARD", 1, 1, "'frequency_caps':[{'max':1,'seconds':60}]")),
              LI(li_rec("cheap", "PRICE_PRIORITY", 1, 0.5, NULL)),
              LI(li_rec("all", "PRICE_PRIORITY", 1, 0.5,
                        "'start_at':'2025-06-01T00:00:00Z','goal':{'type':'IMPRESSIONS',"
                        "'units':10},'frequency_caps':[{'max':1,'seconds':60}]")),
              CRE(cr_rec("c1")),
              LICA(lica_rec("ok", "c1", 1)), LICA(lica_rec("flight", "c1", 1)),
              LICA(lica_rec("mobile", "c1", 1)), LICA(lica_rec("goal", "c1", 1)),
              LICA(lica_rec("capped", "c1", 1)), LICA(lica_rec("cheap", "c1", 1)),
              LICA(lica_rec("all", "c1", 1)));
    if (s == NULL) return;
    u = unit(s, "u1");
    if (u == NULL || u->ncands != 7) { ok(0, "li_check: world builds"); adserve_snapshot_free(s); return; }
    deliver(s, "goal", 10, 0, 0);
    deliver(s, "all", 10, 0, 0);

    d = decision(NOW, 1, NULL, 0);
    is_int(CHECK("ok", &d), ADSERVE_OK, "li_check: ADSERVE_OK (STANDARD under the floor too)");
    is_int(CHECK("flight", &d), ADSERVE_OK, "li_check: in flight: ADSERVE_OK");
    d.now = NOW - 1;
    is_int(CHECK("flight", &d), ADSERVE_NO_FLIGHT, "li_check: before start: ADSERVE_NO_FLIGHT");
    d.now = JUL1;
    is_int(CHECK("flight", &d), ADSERVE_NO_FLIGHT, "li_check: at end: ADSERVE_NO_FLIGHT");
    d.now = NOW;
    is_int(CHECK("mobile", &d), ADSERVE_NO_TARGETING,
           "li_check: targeting not met (mobile, no user agent): ADSERVE_NO_TARGETING");
    is_int(CHECK("goal", &d), ADSERVE_NO_GOAL_REACHED, "li_check: ADSERVE_NO_GOAL_REACHED");
    is_int(CHECK("capped", &d), ADSERVE_OK, "li_check: capped, nothing seen: ADSERVE_OK");
    d.caps_known = 0;
    is_int(CHECK("capped", &d), ADSERVE_NO_FREQUENCY_CAP,
           "li_check: caps unknown: ADSERVE_NO_FREQUENCY_CAP");
    is_int(CHECK("ok", &d), ADSERVE_OK, "li_check: caps unknown, uncapped: ADSERVE_OK");
    d.caps_known = 1;
    is_int(CHECK("cheap", &d), ADSERVE_NO_FLOOR, "li_check: ADSERVE_NO_FLOOR");
    /* order: flight, goal, floor, caps, targeting */
    d.now = NOW - 1;
    d.caps_known = 0;
    is_int(CHECK("all", &d), ADSERVE_NO_FLIGHT, "li_check: the flight is checked first");
    d.now = NOW;
    is_int(CHECK("all", &d), ADSERVE_NO_GOAL_REACHED, "li_check: then the goal");
    deliver(s, "all", 0, 0, 0);
    is_int(CHECK("all", &d), ADSERVE_NO_FLOOR, "li_check: then the floor");
    is_str(serve(s, "u1", NOW, 3), "c1", "li_check: the unit still serves (ok, capped)");
    is_str(serve_d(s, "u1", d), "c1", "li_check: ... and with caps unknown");
#undef CHECK
    adserve_snapshot_free(s);
}


/* ---- lookups and inheritance -------------------------------------------- */

/* The unit index over many units: ids of several lengths, many the prefix
 * of others, so that probes pass slots of other lengths and other ids
 * before they find theirs or an empty one. And one id made to start where
 * a longer one that it begins is: its lookup passes that one's slot. Two
 * ids longer than a slot holds, alike in what it holds, and a third made
 * to start at the first's slot: the rest of each is compared too. */
#define LONG_HEAD "a-unit-id-longer-than-what-an-index-slot-holds-"

#define BOUNDARY_ID  "boundary-0123456789-0123456789-0123456789-0123456789"

static void test_unit_index(void) {
    adserve_input_t in;
    adserve_snapshot_t *s;
    const adserve_unit_t *u;
    const adserve_unit_slot_t *e;
    char id[32], longer[32], other[64];
    uint32_t home, k, slots = 0, fetched = 0;
    int i, found = 0, absent = 0;

    /* 603 units: a table of 2,048 slots (twice as many, a power of 2) */
    home = (uint32_t) adserve_hash("probe", 5) & 2047;
    for (k = 0; ; k++) {
        snprintf(longer, sizeof(longer), "probe-%u", k);
        if (((uint32_t) adserve_hash(longer, strlen(longer)) & 2047) == home) break;
    }
    home = (uint32_t) adserve_hash(LONG_HEAD "00001", sizeof(LONG_HEAD) + 4) & 2047;
    for (k = 3; k < 100000; k++) {
        snprintf(other, sizeof(other), LONG_HEAD "%05u", k);
        if (((uint32_t) adserve_hash(other, strlen(other)) & 2047) == home) break;
    }

    adserve_input_init(&in);
    in.rev = 42;
    in.public_url = public_url;
    for (i = 0; i < 600; i++) {
        add(&in, ADSERVE_KIND_AD_UNITS, fmt("{'id':'u%d','status':'ACTIVE'}", i));
    }
    add(&in, ADSERVE_KIND_AD_UNITS, fmt("{'id':'%s','status':'ACTIVE'}", longer));
    add(&in, ADSERVE_KIND_AD_UNITS, "{'id':'" LONG_HEAD "00001','status':'ACTIVE'}");
    add(&in, ADSERVE_KIND_AD_UNITS, "{'id':'" LONG_HEAD "00002','status':'ACTIVE'}");
    /* ids of 43 and 44 bytes: the longest a slot holds with its NUL, and the
     * shortest it does not */
    add(&in, ADSERVE_KIND_AD_UNITS, fmt("{'id':'%.43s','status':'ACTIVE'}", BOUNDARY_ID));
    add(&in, ADSERVE_KIND_AD_UNITS, fmt("{'id':'%.44s','status':'ACTIVE'}", BOUNDARY_ID));
    s = build_input(&in);
    adserve_input_free(&in);
    ok(s != NULL, "605 units build");
    if (s == NULL) return;
    is_int(s->nunits, 605, "605 units in the index");
    is_int(s->unit_mask, 2047, "in 2,048 slots");
    for (i = 0; i < 600; i++) {
        snprintf(id, sizeof(id), "u%d", i);
        u = unit(s, id);
        found += u != NULL && u->id_len == strlen(id) && memcmp(u->id, id, u->id_len) == 0;
    }
    is_int(found, 600, "every unit is found by its id, and is the unit of that id");
    for (i = 600; i < 6000; i++) {
        snprintf(id, sizeof(id), "u%d", i);
        absent += unit(s, id) == NULL;
    }
    is_int(absent, 5400, "5,400 ids that extend a unit's id, or are new: none found");
    ok(adserve_snapshot_unit(s, "u123", 3) == unit(s, "u12"), "an id's prefix is its own unit");
    u = unit(s, longer);
    ok(u != NULL && u->id_len == strlen(longer), "%s: found", longer);
    ok(unit(s, "probe") == NULL,
       "probe, not a unit, starts at %s's slot: not found there", longer);
    ok(sizeof(LONG_HEAD) > ADSERVE_UNIT_SLOT_HEAD, "ids longer than a slot's head");
    u = unit(s, LONG_HEAD "00001");
    ok(u != NULL && u->id[u->id_len - 1] == '1', "... the first is found");
    u = unit(s, LONG_HEAD "00002");
    ok(u != NULL && u->id[u->id_len - 1] == '2', "... the second is found");
    ok(k < 100000 && unit(s, other) == NULL,
       "%s, not a unit, starts at the first's slot: not found there", other);
    for (k = 0; k <= s->unit_mask; k++) {
        e = &s->unit_index[k];
        if (e->unit == 0) continue;
        slots++;
        u = &s->units[e->unit - 1];
        fetched += e->cands == u->cands
                   && e->ahead == (u->ncands < ADSERVE_DECIDE_AHEAD ? u->ncands
                                                                    : ADSERVE_DECIDE_AHEAD)
                   && ((uintptr_t) e & 63) == 0
                   && (u->id_len < ADSERVE_UNIT_SLOT_HEAD ? u->id == e->head
                                                          : u->id != e->head)
                   && u->id[u->id_len] == '\0';
    }
    is_int(fetched, slots, "each slot, a line of its own, names its unit's candidates; "
           "a short id is the slot's own, a long one the unit's, each a C string");
    for (k = 43; k <= 44; k++) {
        snprintf(other, sizeof(other), "%.*s", (int) k, BOUNDARY_ID);
        u = unit(s, other);
        /* a slot's own id lies in the index (which slot, the loop above checked) */
        ok(u != NULL && u->id_len == k && u->id[k] == '\0'
           && (k < ADSERVE_UNIT_SLOT_HEAD)
              == ((const char *) u->id >= (const char *) s->unit_index
                  && (const char *) u->id < (const char *) (s->unit_index + s->unit_mask + 1)),
           "an id of %u bytes: found, a C string, %s", k,
           k < ADSERVE_UNIT_SLOT_HEAD ? "its slot's own" : "the unit's own copy");
    }
    adserve_snapshot_free(s);
}


static void test_li_lookup(void) {
    adserve_snapshot_t *s;
    adserve_li_t *li;
    const adserve_unit_t *u;
    uint32_t i, found = 0;

    s = BUILD(UNIT(U1_J), UNIT("{'id':'u2','status':'ACTIVE'}"), ORD(O1_J),
              LI(li_rec("li1", "SPONSORSHIP", 3, 2,
                        "'start_at':'2025-06-01T00:00:00Z','end_at':'2025-07-01T00:00:00Z',"
                        "'goal':{'type':'IMPRESSIONS','units':1000},'delivery':'EVEN',"
                        "'frequency_caps':[{'max':2,'seconds':600}]")),
              LI(li_cost("li2", "HOUSE", 16, "CPA", 4, NULL)),
              LI(li_rec("li-nolica", "STANDARD", 1, 1, NULL)),
              LI(fmt("{'id':'li-nowhere','order_id':'o1','status':'ACTIVE','type':'STANDARD',"
                     "'cost_type':'CPM','rate':1}")),
              LI(fmt("{'id':'li-paused','order_id':'o1','status':'PAUSED','type':'STANDARD',"
                     "'priority':1,'cost_type':'CPM','rate':1,"
                     "'targeting':{'ad_units':{'include':['u1']}}}")),
              CRE(cr_rec("c1")), CRE(cr_rec("c2")),
              LICA(lica_rec("li1", "c1", 1)), LICA(lica_rec("li1", "c2", 1)),
              LICA(lica_rec("li2", "c1", 1)), LICA(lica_rec("li-nowhere", "c1", 1)),
              LICA(lica_rec("li-paused", "c1", 1)));
    if (s == NULL) return;
    is_int(s->nlis, 2, "lis: only line items some unit can serve");
    li = lookup(s, "li1");
    ok(li != NULL, "snapshot_li: found by id");
    if (li) {
        is_id(li->id, "li1", "snapshot_li: id");
        ok(li->hash == adserve_hash("li1", 3), "snapshot_li: hash = adserve_hash(id)");
        ok(li->start == NOW && li->end == JUL1, "snapshot_li: flight");
        ok(li->tier == ADSERVE_TIER_SPONSORSHIP && li->priority == 3, "snapshot_li: tier, priority");
        ok(li->cost_type == ADSERVE_COST_CPM && li->goal == 1000
           && li->goal_type == ADSERVE_GOAL_IMPRESSIONS && li->delivery == ADSERVE_DELIVERY_EVEN
           && li->paced, "snapshot_li: cost type, goal, delivery, paced");
        ok(li->ncaps == 1 && li->caps[0].max == 2 && li->caps[0].seconds == 600,
           "snapshot_li: caps");
        ok(li->target == NULL, "snapshot_li: no request targeting: target NULL");
    }
    li = lookup(s, "li2");
    ok(li && li->tier == ADSERVE_TIER_HOUSE && li->priority == 16 && li->cost_type == ADSERVE_COST_CPA
       && !li->paced && li->start == INT64_MIN && li->end == INT64_MAX,
       "snapshot_li: second line item");
    ok(adserve_snapshot_li(s, "li1x", 3) == lookup(s, "li1"), "snapshot_li: uses len, not NUL");
    ok(lookup(s, "li") == NULL && lookup(s, "li3") == NULL && lookup(s, "") == NULL,
       "snapshot_li: unknown ids NULL");
    ok(lookup(s, "li-nolica") == NULL, "snapshot_li: a line item without creatives is not there");
    ok(lookup(s, "li-nowhere") == NULL, "snapshot_li: a line item targeting no unit is not there");
    ok(lookup(s, "li-paused") == NULL, "snapshot_li: a PAUSED line item is not there");
    ok(adserve_snapshot_li(NULL, "li1", 3) == NULL, "snapshot_li: NULL snapshot");

    /* every candidate's li is the one snapshot_li finds by its id */
    u = unit(s, "u1");
    for (i = 0; u && i < u->ncands; i++) {
        li = &s->lis[u->cands[i].li];
        found += u->cands[i].li < s->nlis && adserve_snapshot_li(s, li->id.data, li->id.len) == li;
    }
    ok(u && u->ncands == 3 && found == 3, "snapshot_li: candidates index lis consistently");
    adserve_snapshot_free(s);

    /* many line items: the open-addressing index finds every one */
    {
        rec_t r[3 + 2 * 300];
        int k, n = 0, bad = 0;
        r[n++] = (rec_t) UNIT(U1_J);
        r[n++] = (rec_t) ORD(O1_J);
        r[n++] = (rec_t) CRE(cr_rec("c1"));
        for (k = 0; k < 300; k++) {
            r[n++] = (rec_t) LI(li_rec(fmt("l%d", k), "STANDARD", 1 + k % 16, k, NULL));
            r[n++] = (rec_t) LICA(lica_rec(fmt("l%d", k), "c1", 1));
        }
        s = build_recs(r, (size_t) n);
        for (k = 0; s && k < 300; k++) {
            li = lookup(s, fmt("l%d", k));
            bad += li == NULL || strcmp(li->id.data, fmt("l%d", k)) != 0;
        }
        ok(s && s->nlis == 300 && bad == 0, "snapshot_li: 300 line items all found (%d bad)", bad);
        adserve_snapshot_free(s);
    }
}

static void test_inherit(void) {
    adserve_snapshot_t *s1, *s2;
    adserve_li_t *a1, *a2, *g1, *g2;
    const char *li_a = li_cost("li-a", "STANDARD", 4, "CPC", 1, NULL);
    const char *li_g = li_rec("li-g", "STANDARD", 5, 1,
                              "'goal':{'type':'IMPRESSIONS','units':1000},'delivery':'ASAP'");
    const char *li_c = li_cost("li-c", "STANDARD", 6, "CPC", 1, NULL);

    s1 = BUILD(UNIT(U1_J), ORD(O1_J), LI(li_rec("cpm", "STANDARD", 4, 2, NULL)),
               LI(li_a), LI(li_g), LI(li_c),
               CRE(cr_rec("c-cpm")), CRE(cr_rec("c-a")), CRE(cr_rec("c-g")), CRE(cr_rec("c-c")),
               LICA(lica_rec("cpm", "c-cpm", 1)), LICA(lica_rec("li-a", "c-a", 1)),
               LICA(lica_rec("li-g", "c-g", 1)), LICA(lica_rec("li-c", "c-c", 1)));
    /* the next revision: a new line item ranks first, so indexes move;
     * built after s1, as a builder does, which maps the paces */
    build_prev = s1;
    s2 = BUILD(UNIT(U1_J), ORD(O1_J), LI(li_rec("aaa", "STANDARD", 1, 2, NULL)),
               LI(li_rec("cpm", "STANDARD", 4, 2, NULL)), LI(li_a), LI(li_g), LI(li_c),
               CRE(cr_rec("c-aaa")), CRE(cr_rec("c-cpm")), CRE(cr_rec("c-a")), CRE(cr_rec("c-g")),
               CRE(cr_rec("c-c")),
               LICA(lica_rec("aaa", "c-aaa", 1)), LICA(lica_rec("cpm", "c-cpm", 1)),
               LICA(lica_rec("li-a", "c-a", 1)), LICA(lica_rec("li-g", "c-g", 1)),
               LICA(lica_rec("li-c", "c-c", 1)));
    if (s1 == NULL || s2 == NULL) {
        ok(0, "inherit: worlds build");
        adserve_snapshot_free(s1);
        adserve_snapshot_free(s2);
        return;
    }
    build_prev = NULL;
    a1 = lookup(s1, "li-a"); a2 = lookup(s2, "li-a");
    g1 = lookup(s1, "li-g"); g2 = lookup(s2, "li-g");
    ok(a1 && a2 && g1 && g2 && (a1 - s1->lis) != (a2 - s2->lis),
       "inherit: the line item's index differs between the snapshots");
    if (!(a1 && a2 && g1 && g2)) { adserve_snapshot_free(s1); adserve_snapshot_free(s2); return; }
    ok(s2->prev == s1 && s2->plan[a2 - s2->lis].prev == (uint32_t) (a1 - s1->lis)
       && s2->plan[g2 - s2->lis].prev == (uint32_t) (g1 - s1->lis),
       "inherit: the build maps each paced or CPC line item to its index before");
    ok(s2->plan[lookup(s2, "aaa") - s2->lis].prev == ADSERVE_LI_NONE
       && s2->plan[lookup(s2, "cpm") - s2->lis].prev == ADSERVE_LI_NONE,
       "inherit: a new line item, and an unpaced CPM one (nothing to carry), map to none");

    deliver(s1, "li-a", 10000, 100, 0);                 /* CTR 1 %: factor 9.18 */
    deliver_at(s1, "li-g", 400, 0, 0, NOW - 60);
    PACE(g1)->opp = 7;
    PACE(g1)->served = 3;
    ok(!PACE(g2)->known && !PACE(a2)->known, "inherit: before, the new snapshot knows nothing");
    is_str(serve(s2, "u1", NOW, 1), "c-aaa", "inherit: (aaa serves on the new snapshot)");

    (void) paces(s1);
    paces_set(s2, adserve_paces_new(s2, s1, paces(s1)));
    ok(PACE(a2)->known && near(PACE(a2)->factor, PACE(a1)->factor),
       "inherit: the observed CTR factor carries over by id");
    ok(PACE(g2)->known && PACE(g2)->allow == PACE(g1)->allow && PACE(g2)->budget == PACE(g1)->budget
       && PACE(g2)->read_at == NOW - 60 && PACE(g2)->opp == 7 && PACE(g2)->served == 3,
       "inherit: the whole pace carries over (allow, budget, opp, served, read_at)");
    ok(!PACE(lookup(s2, "li-c"))->known && near(PACE(lookup(s2, "li-c"))->factor, 1),
       "inherit: a line item the old snapshot never read keeps its initial pace");
    ok(!PACE(lookup(s2, "aaa"))->known, "inherit: a new line item keeps its initial pace");

    /* it serves at once on what was read */
    lookup(s2, "aaa")->end = NOW;
    is_str(serve(s2, "u1", NOW, 1), "c-a", "inherit: the CPC line item ranks on its inherited CTR");
    deliver(s2, "li-a", 1000000, 0, 0);
    is_str(serve(s2, "u1", NOW, 1), "c-cpm", "inherit: and the next read updates it");
    ok(near(PACE(a1)->factor, 1000.0 * 101 / 11000), "inherit: the old snapshot is not touched");

    {
        /* a worker that missed a publication: no map, a lookup by id */
        adserve_snapshot_t *s3 = BUILD(UNIT(U1_J), ORD(O1_J), LI(li_a), LI(li_g),
                                       CRE(cr_rec("c-a")), CRE(cr_rec("c-g")),
                                       LICA(lica_rec("li-a", "c-a", 1)),
                                       LICA(lica_rec("li-g", "c-g", 1)));
        adserve_pace_t *by_id = s3 ? adserve_paces_new(s3, s1, paces(s1)) : NULL;
        const adserve_li_t *g3 = s3 ? lookup(s3, "li-g") : NULL;

        ok(by_id != NULL && s3->prev == NULL && g3 != NULL && by_id[g3 - s3->lis].known
           && by_id[g3 - s3->lis].opp == 7, "inherit: without the build's map, by id");
        free(by_id);
        adserve_snapshot_free(s3);
    }

    {
        adserve_pace_t *fresh = adserve_paces_new(s2, NULL, NULL);

        ok(fresh != NULL && !fresh[a2 - s2->lis].known && near(fresh[a2 - s2->lis].factor, 1),
           "inherit: from no old table, every pace starts afresh");
        free(fresh);
    }
    adserve_snapshot_free(s2);

    /* a changed goal, cost type or flight starts afresh: a stopped line
     * item whose goal was raised must not stay stopped, a CPC line item
     * made CPM must not keep its CTR factor */
    deliver(s1, "li-g", 1000, 0, 0);
    ok(PACE(g1)->stopped, "inherit: (li-g reached its goal of 1000)");
    build_prev = s1;
    s2 = BUILD(UNIT(U1_J), ORD(O1_J),
               LI(li_rec("li-g", "STANDARD", 5, 1, "'goal':{'type':'IMPRESSIONS','units':5000},'delivery':'ASAP'")),
               LI(li_rec("li-a", "STANDARD", 4, 2, NULL)),
               CRE(cr_rec("c-g")), CRE(cr_rec("c-a")),
               LICA(lica_rec("li-g", "c-g", 1)), LICA(lica_rec("li-a", "c-a", 1)));
    build_prev = NULL;
    if (s2 != NULL) {
        paces_set(s2, adserve_paces_new(s2, s1, paces(s1)));
        ok(!PACE(lookup(s2, "li-g"))->known && !PACE(lookup(s2, "li-g"))->stopped,
           "inherit: a new goal: the pace starts afresh (not stopped, read again)");
        ok(!PACE(lookup(s2, "li-a"))->known && near(PACE(lookup(s2, "li-a"))->factor, 1),
           "inherit: CPC made CPM: factor 1, not the old CTR's");
    }
    adserve_snapshot_free(s1);
    adserve_snapshot_free(s2);
}

/* A snapshot built with an allocator of its own (as a shared zone gives it)
 * takes every byte from it, itself included, and gives all of it back. */
static struct { long live, calls; } counted;

static void *counting_alloc(void *data, size_t size) {
    (void) data;
    counted.live++;
    counted.calls++;
    return malloc(size);
}

static void counting_free(void *data, void *p) {
    (void) data;
    counted.live--;
    free(p);
}

static void test_allocator(void) {
    static const adserve_allocator_t al = { counting_alloc, counting_free, NULL };
    adserve_input_t in;
    adserve_snapshot_t *s;
    char err[256] = "";

    adserve_input_init(&in);
    in.rev = 7;
    in.public_url = public_url;
    in.allocator = &al;
    add(&in, ADSERVE_KIND_AD_UNITS, U1_J);
    add(&in, ADSERVE_KIND_ORDERS, O1_J);
    add(&in, ADSERVE_KIND_LINE_ITEMS, L1_J);
    add(&in, ADSERVE_KIND_CREATIVES, C1_J);
    add(&in, ADSERVE_KIND_LICAS, A1_J);
    s = adserve_snapshot_build(&in, err, sizeof(err));
    adserve_input_free(&in);

    ok(s != NULL && counted.live > 0 && counted.live == counted.calls,
       "allocator: the snapshot's blocks come from it (%ld)", counted.live);
    ok(s != NULL && (size_t) s->arena.total >= sizeof(*s) && s->rev == 7
       && adserve_snapshot_unit(s, "u1", 2) != NULL,
       "allocator: the snapshot serves from them");
    adserve_snapshot_free(s);
    is_int(counted.live, 0, "allocator: every block goes back to it at free");
}

static void test_creative_lookup(void) {
    adserve_snapshot_t *s;
    const adserve_creative_t *c;

    s = BUILD(UNIT(U1_J), ORD(O1_J), LI(L1_J), CRE(C1_J), LICA(A1_J),
              CRE("{'id':'c-pending','approval':'PENDING','type':'IMAGE','w':300,'h':250,"
                  "'image_url':'https://cdn.example/p.png','landing_url':'https://adv.example/p'}"),
              CRE("{'id':'c-rejected','approval':'REJECTED','landing_url':'https://adv.example/r?a=1&b=\\'q\\''}"),
              CRE("{'id':'c-nolanding','approval':'APPROVED','type':'IMAGE','w':300,'h':250,"
                  "'image_url':'https://cdn.example/n.png'}"),
              CRE("{'id':'c-unlinked','approval':'APPROVED','type':'IMAGE','w':1,'h':1,"
                  "'image_url':'https://cdn.example/u.png','landing_url':'https://adv.example/u'}"));
    if (s == NULL) return;
    c = adserve_snapshot_creative(s, "c1", 2);
    ok(c != NULL, "creative: found");
    if (c) {
        is_id(c->id, "c1", "creative: id");
        is_id(c->landing_url, "https://adv.example/", "creative: landing_url");
    }
    ok(adserve_snapshot_creative(s, "c1xyz", 2) == c, "creative: lookup uses len, not NUL");
    c = adserve_snapshot_creative(s, "c-pending", 9);
    ok(c && strcmp(c->landing_url.data, "https://adv.example/p") == 0,
       "creative: a PENDING creative is found (clicks on old ads still land)");
    c = adserve_snapshot_creative(s, "c-rejected", 10);
    ok(c && strcmp(c->landing_url.data, "https://adv.example/r?a=1&b=\"q\"") == 0,
       "creative: a REJECTED creative that cannot render is found too");
    c = adserve_snapshot_creative(s, "c-unlinked", 10);
    ok(c && strcmp(c->landing_url.data, "https://adv.example/u") == 0,
       "creative: a creative no line item serves is found");
    ok(adserve_snapshot_creative(s, "c-nolanding", 11) == NULL,
       "creative: without a landing_url: NULL");
    ok(adserve_snapshot_creative(s, "c2", 2) == NULL, "creative: unknown id: NULL");
    ok(adserve_snapshot_creative(s, "", 0) == NULL, "creative: empty id: NULL");
    ok(adserve_snapshot_creative(NULL, "c1", 2) == NULL, "creative: NULL snapshot: NULL");
    adserve_snapshot_free(s);

    s = BUILD(UNIT(U1_J));
    ok(s && adserve_snapshot_creative(s, "c1", 2) == NULL, "creative: no creatives at all: NULL");
    adserve_snapshot_free(s);
}


/* ---- units: public_url and impression_on_response ----------------------- */

/* The impression and click URL prefixes of unit u1 built with unit record
 * ur and the given default public_url. */
static void unit_urls(const char *ur, const char *dflt, char *imp, char *clk, size_t n) {
    adserve_snapshot_t *s;
    const adserve_unit_t *u;

    public_url = dflt;
    s = BUILD(UNIT(ur));
    public_url = PUBLIC_URL;
    u = s ? unit(s, "u1") : NULL;
    snprintf(imp, n, "%.*s", u ? (int) u->impression_prefix.len : 6,
             u ? u->impression_prefix.data : "(none)");
    snprintf(clk, n, "%.*s", u ? (int) u->click_prefix.len : 6,
             u ? u->click_prefix.data : "(none)");
    adserve_snapshot_free(s);
}

static void test_public_url(void) {
    static const struct {
        const char *unit, *dflt, *base, *name;
    } cases[] = {
        { "{'id':'u1','status':'ACTIVE'}", PUBLIC_URL, PUBLIC_URL, "no ext.public_url: the default" },
        { "{'id':'u1','status':'ACTIVE','ext':{'public_url':'https://pub.example/ads'}}",
          PUBLIC_URL, "https://pub.example/ads", "ext.public_url overrides the default" },
        { "{'id':'u1','status':'ACTIVE','ext':{'public_url':'https://pub.example/'}}",
          PUBLIC_URL, "https://pub.example", "ext.public_url: trailing slash dropped" },
        { "{'id':'u1','status':'ACTIVE','ext':{'public_url':'https://pub.example///'}}",
          PUBLIC_URL, "https://pub.example", "ext.public_url: trailing slashes dropped" },
        { "{'id':'u1','status':'ACTIVE','ext':{'public_url':''}}",
          PUBLIC_URL, PUBLIC_URL, "ext.public_url empty: the default" },
        { "{'id':'u1','status':'ACTIVE','ext':{'public_url':7}}",
          PUBLIC_URL, PUBLIC_URL, "ext.public_url not a string: the default" },
        { "{'id':'u1','status':'ACTIVE','ext':{'public_url':null}}",
          PUBLIC_URL, PUBLIC_URL, "ext.public_url null: the default" },
        { "{'id':'u1','status':'ACTIVE'}", "https://ads.example/",
          PUBLIC_URL, "default with a trailing slash: dropped" },
        { "{'id':'u1','status':'ACTIVE','ext':{'public_url':'https://p.example/a\\'b\\\\c'}}",
          PUBLIC_URL, "https://p.example/a\\\"b\\\\c", "ext.public_url JSON-escaped" },
        { "{'id':'u1','status':'ACTIVE'}", NULL, "", "no default, no ext.public_url: empty base" },
    };
    char imp[512], clk[512];
    size_t i;

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        unit_urls(cases[i].unit, cases[i].dflt, imp, clk, sizeof(imp));
        is_str(imp, fmt(",\"impression_url\":\"%s" ADSERVE_IMPRESSION_PATH, cases[i].base),
               "public_url: %s (impression prefix)", cases[i].name);
        is_str(clk, fmt("\",\"click_url\":\"%s" ADSERVE_CLICK_PATH, cases[i].base),
               "public_url: %s (click prefix)", cases[i].name);
    }
}

/* Units of one base URL share its rendered parts (every answer copies two
 * of them: shared, they stay in the cache); each base past the build's
 * cache of them is rendered for its unit, with the same text. */
static void test_shared_urls(void) {
    adserve_input_t in;
    adserve_snapshot_t *s;
    const adserve_unit_t *u1, *u2, *p1, *p2, *q, *u;
    char id[16];
    int i, right = 0, own = 0;

    adserve_input_init(&in);
    in.public_url = public_url;
    add(&in, ADSERVE_KIND_AD_UNITS, "{'id':'u1','status':'ACTIVE'}");
    add(&in, ADSERVE_KIND_AD_UNITS, "{'id':'u2','status':'ACTIVE'}");
    add(&in, ADSERVE_KIND_AD_UNITS,
        "{'id':'p1','status':'ACTIVE','ext':{'public_url':'https://pub.example'}}");
    add(&in, ADSERVE_KIND_AD_UNITS,
        "{'id':'p2','status':'ACTIVE','ext':{'public_url':'https://pub.example'}}");
    add(&in, ADSERVE_KIND_AD_UNITS,
        "{'id':'q','status':'ACTIVE','ext':{'public_url':'https://q.example'}}");
    for (i = 0; i < 100; i++) {
        add(&in, ADSERVE_KIND_AD_UNITS,
            fmt("{'id':'b%d','status':'ACTIVE','ext':{'public_url':'https://b%d.example'}}",
                i, i));
    }
    s = build_input(&in);
    adserve_input_free(&in);
    ok(s != NULL, "105 units of 103 base URLs build");
    if (s == NULL) return;

    u1 = unit(s, "u1");
    u2 = unit(s, "u2");
    p1 = unit(s, "p1");
    p2 = unit(s, "p2");
    q = unit(s, "q");
    ok(u1 && u2 && p1 && p2 && q, "the units are found");
    if (!(u1 && u2 && p1 && p2 && q)) {
        adserve_snapshot_free(s);
        return;
    }
    ok(u1->impression_prefix.data == u2->impression_prefix.data
       && u1->click_prefix.data == u2->click_prefix.data
       && u1->url_base_json.data == u2->url_base_json.data
       && u1->vast_base.data == u2->vast_base.data
       && u1->vast_base_json.data == u2->vast_base_json.data,
       "two units of the default base share its five rendered parts");
    ok(p1->impression_prefix.data == p2->impression_prefix.data
       && p1->click_prefix.data == p2->click_prefix.data,
       "two units of one ext.public_url share its parts");
    ok(p1->impression_prefix.data != u1->impression_prefix.data
       && q->impression_prefix.data != p1->impression_prefix.data,
       "units of other bases do not");
    is_str(fmt("%.*s", (int) p2->click_prefix.len, p2->click_prefix.data),
           "\",\"click_url\":\"https://pub.example" ADSERVE_CLICK_PATH,
           "a shared click prefix is its base's");
    is_str(fmt("%.*s", (int) u2->impression_prefix.len, u2->impression_prefix.data),
           fmt(",\"impression_url\":\"%s" ADSERVE_IMPRESSION_PATH, PUBLIC_URL),
           "a shared impression prefix is its base's");

    for (i = 0; i < 100; i++) {
        snprintf(id, sizeof(id), "b%d", i);
        u = unit(s, id);
        right += u != NULL
                 && strcmp(fmt("%.*s", (int) u->impression_prefix.len,
                               u->impression_prefix.data),
                           fmt(",\"impression_url\":\"https://b%d.example"
                               ADSERVE_IMPRESSION_PATH, i)) == 0
                 && strcmp(fmt("%.*s", (int) u->vast_base.len, u->vast_base.data),
                           fmt("https://b%d.example", i)) == 0;
        own += u != NULL && u->impression_prefix.data != u1->impression_prefix.data;
    }
    is_int(right, 100, "100 more bases, past the build's cache of them: each unit's parts "
           "are its own base's");
    is_int(own, 100, "... and none is another's");
    adserve_snapshot_free(s);
}

static void test_on_response(void) {
    static const struct {
        const char *rec;
        int want;
    } cases[] = {
        { "{'id':'u1','status':'ACTIVE','ext':{'recommendation':{'enabled':true}},"
          "'recommendation':{'ad_log_tracking_mode':'on_ad_response'}}", 1 },
        { "{'id':'u1','status':'ACTIVE','ext':{'recommendation':{'enabled':1}},"
          "'recommendation':{'ad_log_tracking_mode':'on_ad_response'}}", 1 },
        { "{'id':'u1','status':'ACTIVE','ext':{'recommendation':{'enabled':false}},"
          "'recommendation':{'ad_log_tracking_mode':'on_ad_response'}}", 0 },
        { "{'id':'u1','status':'ACTIVE','ext':{'recommendation':{'enabled':0}},"
          "'recommendation':{'ad_log_tracking_mode':'on_ad_response'}}", 0 },
        { "{'id':'u1','status':'ACTIVE','ext':{'recommendation':{'enabled':'yes'}},"
          "'recommendation':{'ad_log_tracking_mode':'on_ad_response'}}", 0 },
        { "{'id':'u1','status':'ACTIVE',"
          "'recommendation':{'ad_log_tracking_mode':'on_ad_response'}}", 0 },
        { "{'id':'u1','status':'ACTIVE','ext':{'recommendation':{'enabled':true}},"
          "'recommendation':{'ad_log_tracking_mode':'on_event_tracker'}}", 0 },
        { "{'id':'u1','status':'ACTIVE','ext':{'recommendation':{'enabled':true}},"
          "'recommendation':{'ad_log_tracking_mode':null}}", 0 },
        { "{'id':'u1','status':'ACTIVE','ext':{'recommendation':{'enabled':true}}}", 0 },
        { "{'id':'u1','status':'ACTIVE','ext':{'recommendation':{'enabled':true,"
          "'ad_log_tracking_mode':'on_ad_response'}}}", 0 },
        { "{'id':'u1','status':'ACTIVE'}", 0 },
    };
    adserve_snapshot_t *s;
    const adserve_unit_t *u;
    size_t i;

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        s = BUILD(UNIT(cases[i].rec));
        u = s ? unit(s, "u1") : NULL;
        is_int(u ? (long long) u->impression_on_response : -1, cases[i].want,
               "impression_on_response %d: %s", cases[i].want, cases[i].rec);
        adserve_snapshot_free(s);
    }
}


/* ---- experiments --------------------------------------------------------- */

#define EXPERIMENT(j)  { ADSERVE_KIND_EXPERIMENTS, j }

/* An ACTIVE experiment hangs its variants' units on the unit: each the unit
 * with its overrides (a rec variant's topn; a display variant's bcat lets a
 * blocked creative in); users draw them by weight, the same every time. */
static void test_experiments(void) {
    adserve_snapshot_t *s;
    const adserve_unit_t *u, *v, *d;
    char user[32];
    int i, n, counts[2] = { 0, 0 };

    s = BUILD(UNIT("{'id':'r1','status':'ACTIVE','ext':{'recommendation':{'enabled':1}},"
                   "'recommendation':{'topn':5}}"),
              UNIT("{'id':'u1','status':'ACTIVE','ext':{'bcat':['IAB7']}}"),
              ORD(O1_J), LI(L1_J), LICA(A1_J),
              CRE("{'id':'c1','approval':'APPROVED','type':'IMAGE','w':300,'h':250,"
                       "'image_url':'https://cdn.example/c1.png','categories':['IAB7-1']}"),
              EXPERIMENT("{'id':'x1','ad_unit_id':'r1','status':'ACTIVE','variants':["
                         "{'id':'control','weight':3},"
                         "{'id':'short','weight':1,'recommendation':{'topn':2}}]}"),
              EXPERIMENT("{'id':'x2','ad_unit_id':'u1','status':'ACTIVE','variants':["
                         "{'id':'blocked','weight':1},{'id':'open','weight':1,'ext':{'bcat':[]}}]}"),
              EXPERIMENT("{'id':'x3','ad_unit_id':'r1','status':'PAUSED','variants':["
                         "{'id':'a','weight':1},{'id':'b','weight':1}]}"));
    u = s ? unit(s, "r1") : NULL;
    ok(u && u->experiment && u->experiment->n == 2, "an ACTIVE experiment splits r1 in 2");
    if (u == NULL || u->experiment == NULL) {
        adserve_snapshot_free(s);
        return;
    }
    v = u->experiment->variants[1].unit;
    is_int(u->experiment->variants[0].unit->topn, 5, "the control: topn 5, as the unit");
    is_int(v->topn, 2, "the variant: its topn 2");
    ok(v->rec && v->variant == &u->experiment->variants[1] && v->experiment == NULL,
       "a variant's unit recommends, knows its variant, and splits no further");
    is_str(v->variant->id.data, "x1/short", "its counters' id: experiment/variant");
    ok(v->id == u->id || strcmp(v->id, u->id) == 0, "... and the unit's own id");
    is_str(v->source_ids[ADSERVE_SOURCE_ALGORITHM].data, "r1/axa0",
           "the algorithm's items are counted per algorithm");

    for (i = 0; i < 10000; i++) {
        snprintf(user, sizeof(user), "user-%d", i);
        n = adserve_unit_for_user(u, user, strlen(user)) == v;
        counts[n]++;
    }
    ok(counts[1] > 2500 - 150 && counts[1] < 2500 + 150, "weights 3:1 over 10,000 users: %d in the 1",
       counts[1]);
    ok(adserve_unit_for_user(u, "user-7", 6) == adserve_unit_for_user(u, "user-7", 6),
       "a user draws the same variant every time");
    ok(adserve_unit_for_user(u, NULL, 0) == u, "no user: the unit itself");
    ok(adserve_unit_variant(u, "x1/short", 8) == v, "a token's variant id finds its unit");
    ok(adserve_unit_variant(u, "x1/gone", 7) == u, "... an unknown one the unit");

    d = unit(s, "u1");
    ok(d && d->experiment && d->ncands == 0, "u1 blocks the creative's category");
    ok(d && d->experiment && d->experiment->variants[1].unit->ncands == 1
       && d->experiment->variants[0].unit->ncands == 0, "its open variant lets it in");
    ok(adserve_snapshot_li(s, "li1", 3) != NULL,
       "a line item only a variant serves is indexed (caps and pacing find it)");
    adserve_snapshot_free(s);

    /* a variant that lets in creatives its unit blocks ranks them among
     * the others, as a unit without the block does */
#define CR_CAT(id, cat) "{'id':'" id "','approval':'APPROVED','type':'IMAGE','w':300,'h':250," \
                        "'image_url':'https://cdn.example/" id ".png','categories':['" cat "']}"
    s = BUILD(UNIT("{'id':'u1','status':'ACTIVE','ext':{'bcat':['IAB7']}}"), UNIT("{'id':'u2','status':'ACTIVE'}"),
              ORD(O1_J), LI("{'id':'li1','order_id':'o1','status':'ACTIVE','type':'STANDARD','priority':4,"
                            "'cost_type':'CPM','rate':1,'targeting':{'ad_units':{'include':['u1','u2']}}}"),
              CRE(CR_CAT("c1", "IAB1")), CRE(CR_CAT("c2", "IAB7")), CRE(CR_CAT("c3", "IAB1")),
              CRE(CR_CAT("c4", "IAB7")), CRE(CR_CAT("c5", "IAB2")),
              LICA(lica_rec("li1", "c1", 1)), LICA(lica_rec("li1", "c2", 1)), LICA(lica_rec("li1", "c3", 1)),
              LICA(lica_rec("li1", "c4", 1)), LICA(lica_rec("li1", "c5", 1)),
              EXPERIMENT("{'id':'x2','ad_unit_id':'u1','status':'ACTIVE','variants':["
                         "{'id':'blocked','weight':1},{'id':'open','weight':1,'ext':{'bcat':[]}}]}"));
    d = s ? unit(s, "u1") : NULL;
    v = d && d->experiment ? d->experiment->variants[1].unit : NULL;
    const adserve_unit_t *free_unit = s ? unit(s, "u2") : NULL;
    ok(d && d->ncands == 3 && v && v->ncands == 5 && free_unit && free_unit->ncands == 5,
       "ranking: the unit blocks two of five creatives, its open variant none (%u, %u, %u)",
       d ? d->ncands : 0, v ? v->ncands : 0, free_unit ? free_unit->ncands : 0);
    for (i = 0; v && free_unit && v->ncands == 5 && free_unit->ncands == 5 && i < 5; i++) {
        is_str(v->cands[i].creative_id.data, free_unit->cands[i].creative_id.data,
               "ranking: the variant's candidate %d is the unblocked unit's", i);
    }
    adserve_snapshot_free(s);

    /* a variant's algorithm and fallback: counted per its algorithm */
    s = BUILD(UNIT("{'id':'r1','status':'ACTIVE','ext':{'recommendation':{'enabled':1}}}"),
              EXPERIMENT("{'id':'x1','ad_unit_id':'r1','status':'ACTIVE','variants':["
                         "{'id':'a','weight':1},{'id':'cv','weight':1,'ext':{'algorithm':'coview'},"
                         "'recommendation':{'fallback':[{'type':'popular'}]}}]}"));
    u = s ? unit(s, "r1") : NULL;
    v = u && u->experiment ? u->experiment->variants[1].unit : NULL;
    ok(v && v->algorithm == ADSERVE_ALGORITHM_COVIEW && v->nfallbacks == 1 && u->nfallbacks == 0
       && u->algorithm == ADSERVE_ALGORITHM_AXA0, "a variant's algorithm and fallback, not the unit's");
    is_str(v ? v->source_ids[ADSERVE_SOURCE_ALGORITHM].data : NULL, "r1/coview",
           "... its algorithm's items counted as coview");
    adserve_snapshot_free(s);

    /* two ACTIVE on a unit (past the API): the smaller id, whatever the order */
    s = BUILD(UNIT("{'id':'r1','status':'ACTIVE'}"),
              EXPERIMENT("{'id':'xb','ad_unit_id':'r1','status':'ACTIVE','variants':["
                         "{'id':'a','weight':1},{'id':'b','weight':1}]}"),
              EXPERIMENT("{'id':'xa','ad_unit_id':'r1','status':'ACTIVE','variants':["
                         "{'id':'a','weight':1},{'id':'b','weight':1}]}"));
    u = s ? unit(s, "r1") : NULL;
    ok(u && u->experiment && strcmp(u->experiment->variants[0].id.data, "xa/a") == 0,
       "two ACTIVE experiments on a unit: the smaller id splits it");
    adserve_snapshot_free(s);

    /* what splits nothing */
    s = BUILD(UNIT("{'id':'r1','status':'ACTIVE'}"),
              EXPERIMENT("{'id':'x1','ad_unit_id':'r1','status':'ACTIVE','variants':["
                         "{'id':'only','weight':1}]}"),
              EXPERIMENT("{'id':'x2','ad_unit_id':'r1','status':'ACTIVE','variants':["
                         "{'id':'a','weight':1},{'id':'a','weight':1}]}"),
              EXPERIMENT("{'id':'x3','ad_unit_id':'r1','status':'ACTIVE','variants':["
                         "{'id':'a','weight':0},{'id':'b','weight':1}]}"),
              EXPERIMENT("{'id':'x4','ad_unit_id':'r1','status':'ACTIVE','variants':["
                         "{'id':'a b','weight':1},{'id':'b','weight':1}]}"),
              EXPERIMENT("{'id':'x5','ad_unit_id':'nope','status':'ACTIVE','variants':["
                         "{'id':'a','weight':1},{'id':'b','weight':1}]}"));
    u = s ? unit(s, "r1") : NULL;
    ok(u && u->experiment == NULL, "one variant, ids twice, a weight 0, a bad id, another unit: "
       "no split");
    adserve_snapshot_free(s);
}


/* ---- rendering ---------------------------------------------------------- */

static adserve_tokens_t tokens;

/* The body of the last render(), as the module sends it. */
static char body[32768];
static size_t body_len;

/* Serves the unit and assembles the whole body as the module does
 * (ngx_http_adserve_send_ad): the creative's response head, the unit's
 * impression prefix, the token, the unit's click prefix, the token,
 * ADSERVE_RESPONSE_MIDDLE, the token, ADSERVE_RESPONSE_TAIL. Returns the
 * parsed JSON (or NULL); the token in tok, the body in body. */
static cJSON *render(adserve_snapshot_t *s, const char *id, char *tok,
    const adserve_cand_t **cp)
{
    const adserve_unit_t *u = unit(s, id);
    adserve_decision_t d = decision(NOW, 0, NULL, 0);
    const adserve_cand_t *c = u ? (d.paces = paces(s), adserve_decide(s, u, &d)) : NULL;
    const adserve_li_t *li;
    adserve_ad_log_t log;
    size_t n, tl;

    *cp = c;
    tok[0] = '\0';
    body_len = 0;
    if (c == NULL
        || c->response_head_len + u->impression_prefix.len + u->click_prefix.len
           + 3 * ADSERVE_TOKEN_MAX + sizeof(ADSERVE_RESPONSE_MIDDLE ADSERVE_RESPONSE_TAIL)
           > sizeof(body))
    {
        return NULL;
    }
    li = li_of(s, c);

    memset(&log, 0, sizeof(log));
    log.issued = NOW;
    log.price_micros = c->bid_micros;
    log.cost_type = li->cost_type;
    log.ad_unit.data = u->id;
    log.ad_unit.len = u->id_len;
    log.line_item = li->id;
    log.creative = c->creative_id;
    tl = adserve_token_encode(&tokens, &log, tok);
    if (tl == 0) return NULL;
    tok[tl] = '\0';

#define PUT(p, len) do { memcpy(body + n, p, len); n += len; } while (0)
    n = 0;
    PUT(c->response_head, c->response_head_len);
    PUT(u->impression_prefix.data, u->impression_prefix.len);
    PUT(tok, tl);
    PUT(u->click_prefix.data, u->click_prefix.len);
    PUT(tok, tl);
    PUT(ADSERVE_RESPONSE_MIDDLE, sizeof(ADSERVE_RESPONSE_MIDDLE) - 1);
    PUT(tok, tl);
    PUT(ADSERVE_RESPONSE_TAIL, sizeof(ADSERVE_RESPONSE_TAIL) - 1);
#undef PUT
    body[n] = '\0';
    body_len = n;

    return cJSON_ParseWithLength(body, n);
}

static const char *jstr(const cJSON *o, const char *path) {
    char name[64];
    const char *dot;

    while ((dot = strchr(path, '.')) != NULL) {
        snprintf(name, sizeof(name), "%.*s", (int) (dot - path), path);
        o = cJSON_GetObjectItemCaseSensitive(o, name);
        path = dot + 1;
    }
    o = cJSON_GetObjectItemCaseSensitive(o, path);
    return cJSON_IsString(o) ? o->valuestring : NULL;
}

static double jnum(const cJSON *o, const char *path) {
    char name[64];
    const char *dot;

    while ((dot = strchr(path, '.')) != NULL) {
        snprintf(name, sizeof(name), "%.*s", (int) (dot - path), path);
        o = cJSON_GetObjectItemCaseSensitive(o, name);
        path = dot + 1;
    }
    o = cJSON_GetObjectItemCaseSensitive(o, path);
    return cJSON_IsNumber(o) ? o->valuedouble : -1;
}

static void test_rendering(void) {
    static const char key[] =
        "# test key\n7 000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\n";
    adserve_snapshot_t *s;
    const adserve_cand_t *c;
    adserve_ad_log_t dlog;
    unsigned char dbuf[ADSERVE_TOKEN_BUF];
    char tok[ADSERVE_TOKEN_MAX + 1], err[128];
    cJSON *j;

    if (adserve_tokens_parse(&tokens, key, sizeof(key) - 1, err, sizeof(err)) != 0
        || adserve_tokens_start(&tokens) != 0)
    {
        ok(0, "token key set up: %s", err);
        return;
    }

    s = BUILD(UNIT("{'id':'u-img','status':'ACTIVE','display':{'w':728,'h':90}}"),
              UNIT("{'id':'u-html','status':'ACTIVE','display':{'w':160,'h':600}}"),
              UNIT("{'id':'u-esc','status':'ACTIVE'}"),
              ORD(O1_J),
              LI("{'id':'li-img','order_id':'o1','status':'ACTIVE','type':'STANDARD',"
                 "'priority':1,'cost_type':'CPM','rate':1.75,"
                 "'targeting':{'ad_units':{'include':['u-img']}}}"),
              LI("{'id':'li-html','order_id':'o1','status':'ACTIVE','type':'HOUSE',"
                 "'priority':1,'cost_type':'CPC','rate':0.3,"
                 "'targeting':{'ad_units':{'include':['u-html']}}}"),
              LI("{'id':'li-esc','order_id':'o1','status':'ACTIVE','type':'STANDARD',"
                 "'priority':1,'cost_type':'CPM','rate':1,"
                 "'targeting':{'ad_units':{'include':['u-esc']}}}"),
              CRE("{'id':'cr-img','approval':'APPROVED','type':'IMAGE','w':728,'h':90,"
                  "'image_url':'https://cdn.example/a.png?x=1&y=2',"
                  "'html':'<b>ignored</b>','landing_url':'https://adv.example/l'}"),
              CRE("{'id':'cr-html','approval':'APPROVED','type':'HTML','w':160,'h':600,"
                  "'html':'<div class=\\'ad\\'>Hi</div>','landing_url':'https://adv.example/'}"),
              CRE("{'id':'cr-\\'esc\\'','approval':'APPROVED','type':'IMAGE','w':300,'h':250,"
                  "'image_url':'https://cdn.example/q\\'uo\\\\te\\nnl\\ttab\\u00e9\\u2028"
                  "\\ud83d\\ude00\\u0001\\/</script>'}"),
              LICA("{'id':'a1','line_item_id':'li-img','creative_id':'cr-img','status':'ACTIVE'}"),
              LICA("{'id':'a2','line_item_id':'li-html','creative_id':'cr-html','status':'ACTIVE'}"),
              LICA("{'id':'a3','line_item_id':'li-esc','creative_id':'cr-\\'esc\\'',"
                   "'status':'ACTIVE'}"));
    ok(s != NULL, "render: world builds");
    if (s == NULL) return;

    j = render(s, "u-img", tok, &c);
    ok(j != NULL, "render IMAGE: head + URLs + tokens + tail is valid JSON");
    is_str(jstr(j, "version"), ADSERVE_RESPONSE_VERSION, "render IMAGE: version");
    is_str(jstr(j, "version"), "0.1.0", "render IMAGE: version is 0.1.0");
    is_str(jstr(j, "ad.id"), "cr-img", "render IMAGE: ad.id is the creative id");
    ok(jnum(j, "ad.display.w") == 728 && jnum(j, "ad.display.h") == 90,
       "render IMAGE: ad.display.w/h");
    is_str(jstr(j, "ad.display.banner.img"), "https://cdn.example/a.png?x=1&y=2",
           "render IMAGE: ad.display.banner.img");
    ok(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(
       cJSON_GetObjectItemCaseSensitive(j, "ad"), "display"), "adm") == NULL,
       "render IMAGE: no adm");
    is_str(jstr(j, "ext.message"), "ok", "render IMAGE: ext.message");
    is_str(jstr(j, "ext.ad_log"), tok, "render IMAGE: ext.ad_log is the token");
    memset(&dlog, 0, sizeof(dlog));
    ok(jstr(j, "ext.ad_log") != NULL
       && adserve_token_decode(&tokens, jstr(j, "ext.ad_log"), strlen(jstr(j, "ext.ad_log")),
                               &dlog, dbuf) == 0
       && dlog.creative.len == 6 && memcmp(dlog.creative.data, "cr-img", 6) == 0
       && dlog.price_micros == 1750000,
       "render IMAGE: ad_log decodes back to the creative and price");
    is_str(jstr(j, "ad.impression_url"),
           fmt(PUBLIC_URL ADSERVE_IMPRESSION_PATH "%s", tok),
           "render IMAGE: ad.impression_url = public_url + impression path + token");
    is_str(jstr(j, "ad.click_url"), fmt(PUBLIC_URL ADSERVE_CLICK_PATH "%s", tok),
           "render IMAGE: ad.click_url = public_url + click path + token");
    is_str(jstr(j, "ad.impression_url"),
           fmt("https://ads.example/app/v0/event/impression?ad_log=%s", tok),
           "render IMAGE: the impression URL spelled out");
    is_str(jstr(j, "ad.click_url"), fmt("https://ads.example/app/v0/event/click?ad_log=%s", tok),
           "render IMAGE: the click URL spelled out");
    ok(c && c->response_head_len == strlen("{\"version\":\"0.1.0\",\"ad\":") +
       strlen("{\"id\":\"cr-img\",\"display\":{\"w\":728,\"h\":90,\"banner\":"
              "{\"img\":\"https://cdn.example/a.png?x=1&y=2\"}}"),
       "render IMAGE: head is compact (no whitespace), the ad without its closing brace");
    is_str(body, fmt("{\"version\":\"0.1.0\",\"ad\":{\"id\":\"cr-img\",\"display\":"
           "{\"w\":728,\"h\":90,\"banner\":{\"img\":\"https://cdn.example/a.png?x=1&y=2\"}},"
           "\"impression_url\":\"https://ads.example/app/v0/event/impression?ad_log=%s\","
           "\"click_url\":\"https://ads.example/app/v0/event/click?ad_log=%s\"},"
           "\"ext\":{\"message\":\"ok\",\"ad_log\":\"%s\"}}", tok, tok, tok),
           "render IMAGE: the whole body, byte for byte");
    cJSON_Delete(j);

    j = render(s, "u-html", tok, &c);
    ok(j != NULL, "render HTML: valid JSON");
    is_str(jstr(j, "ad.id"), "cr-html", "render HTML: ad.id");
    ok(jnum(j, "ad.display.w") == 160 && jnum(j, "ad.display.h") == 600,
       "render HTML: ad.display.w/h");
    is_str(jstr(j, "ad.display.adm"), "<div class=\"ad\">Hi</div>", "render HTML: ad.display.adm");
    ok(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(
       cJSON_GetObjectItemCaseSensitive(j, "ad"), "display"), "banner") == NULL,
       "render HTML: no banner");
    is_str(jstr(j, "ext.ad_log"), tok, "render HTML: ext.ad_log");
    is_str(jstr(j, "ext.message"), "ok", "render HTML: ext.message");
    is_int(c ? li_of(s, c)->cost_type : -1, ADSERVE_COST_CPC, "render HTML: CPC candidate");
    ok(c && c->bid_micros == 300000, "render HTML: CPC bid_micros 0.3 x 1e6");
    is_str(jstr(j, "ad.impression_url"), fmt(PUBLIC_URL ADSERVE_IMPRESSION_PATH "%s", tok),
           "render HTML: ad.impression_url");
    is_str(jstr(j, "ad.click_url"), fmt(PUBLIC_URL ADSERVE_CLICK_PATH "%s", tok),
           "render HTML: ad.click_url");
    cJSON_Delete(j);

    j = render(s, "u-esc", tok, &c);
    ok(j != NULL, "render escaping: valid JSON despite quotes, backslashes, controls");
    is_str(jstr(j, "ad.id"), "cr-\"esc\"", "render escaping: quotes in the creative id");
    is_str(jstr(j, "ad.display.banner.img"),
           "https://cdn.example/q\"uo\\te\nnl\ttab\xc3\xa9\xe2\x80\xa8"
           "\xf0\x9f\x98\x80\x01/</script>",
           "render escaping: quote, backslash, newline, tab, unicode, control char survive");
    is_id(c ? c->creative_id : nostr, "cr-\"esc\"", "render escaping: candidate creative_id raw");
    is_str(jstr(j, "ext.ad_log"), tok, "render escaping: ext.ad_log");
    is_str(jstr(j, "ad.click_url"), fmt(PUBLIC_URL ADSERVE_CLICK_PATH "%s", tok),
           "render escaping: ad.click_url");
    cJSON_Delete(j);

    adserve_snapshot_free(s);

    /* the unit's ext.public_url, in the whole body: trailing slash dropped,
     * and a quote and a backslash escaped so the body stays JSON */
    s = BUILD(UNIT("{'id':'u-pub','status':'ACTIVE','ext':{'public_url':'https://pub.example/x/'}}"),
              UNIT("{'id':'u-q','status':'ACTIVE','ext':{'public_url':'https://q.example/a\\'b\\\\c'}}"),
              UNIT("{'id':'u-def','status':'ACTIVE','ext':{'public_url':''}}"),
              ORD(O1_J),
              LI(fmt("{'id':'li1','order_id':'o1','status':'ACTIVE','type':'STANDARD',"
                     "'priority':1,'cost_type':'CPM','rate':1,"
                     "'targeting':{'ad_units':{'include':['u-pub','u-q','u-def']}}}")),
              CRE(C1_J), LICA(A1_J));
    ok(s != NULL, "render public_url: world builds");
    if (s != NULL) {
        j = render(s, "u-pub", tok, &c);
        ok(j != NULL, "render ext.public_url: valid JSON");
        is_str(jstr(j, "ad.impression_url"),
               fmt("https://pub.example/x/app/v0/event/impression?ad_log=%s", tok),
               "render ext.public_url: impression_url on the unit's base, slash dropped");
        is_str(jstr(j, "ad.click_url"), fmt("https://pub.example/x/app/v0/event/click?ad_log=%s", tok),
               "render ext.public_url: click_url on the unit's base");
        is_str(jstr(j, "ext.ad_log"), tok, "render ext.public_url: ext.ad_log");
        cJSON_Delete(j);

        j = render(s, "u-q", tok, &c);
        ok(j != NULL, "render escaped ext.public_url: valid JSON");
        is_str(jstr(j, "ad.impression_url"),
               fmt("https://q.example/a\"b\\c/app/v0/event/impression?ad_log=%s", tok),
               "render escaped ext.public_url: the URL decodes to the configured text");
        cJSON_Delete(j);

        j = render(s, "u-def", tok, &c);
        is_str(jstr(j, "ad.click_url"), fmt(PUBLIC_URL ADSERVE_CLICK_PATH "%s", tok),
               "render empty ext.public_url: the default base");
        cJSON_Delete(j);
        adserve_snapshot_free(s);
    }

    adserve_tokens_stop(&tokens);
}


/* ---- robustness --------------------------------------------------------- */

static void test_robustness(void) {
    adserve_snapshot_t *s;
    adserve_input_t in;
    const adserve_unit_t *u;

    adserve_input_init(&in);
    s = build_input(&in);
    ok(s != NULL, "empty input builds");
    if (s) {
        is_int((long long) (s->stats.active_units + s->stats.candidates + s->stats.skipped),
               0, "empty input: empty stats");
        ok(unit(s, "u1") == NULL, "empty input: no unit");
        ok(adserve_snapshot_unit(s, "", 0) == NULL, "empty input: no empty-id unit");
    }
    adserve_snapshot_free(s);
    adserve_input_free(&in);

    s = BUILD(UNIT("{"), UNIT("[]"), UNIT("null"), UNIT("'u1'"), UNIT(""),
              UNIT("{'status':'ACTIVE'}"), UNIT("{'id':7,'status':'ACTIVE'}"),
              UNIT("{'id':null,'status':'ACTIVE'}"),
              UNIT(U1_J),
              UNIT("{'id':'u1','status':'INACTIVE'}"),
              UNIT("{'id':'u2','status':'ACTIVE','display':'big','ad_unit_sizes':7,"
                   "'ext':{'bcat':'IAB7'},'parent_id':5}"),
              PLC("{'id':'p1','ad_unit_ids':'u1'}"), PLC("nope"),
              ORD(O1_J), ORD("{'id':'o1','status':'PENDING'}"), ORD("{'status':'APPROVED'}"),
              LI(L1_J), LI("{'id':'li1'}"), LI("{'id':'li2','targeting':7,'order_id':['o1']}"),
              LI("{'id':'li3','order_id':'o1','status':'ACTIVE','type':'STANDARD',"
                 "'cost_type':'CPM','rate':-1,'targeting':{'ad_units':{'include':['u2']}}}"),
              CRE(C1_J), CRE("{'id':'c1','approval':'REJECTED'}"),
              CRE("{'id':'c2','approval':'APPROVED','type':'IMAGE','w':'300','h':250,"
                  "'image_url':'https://x/','categories':'IAB1'}"),
              LICA(A1_J), LICA("{'id':'a1','line_item_id':'li1','creative_id':'c1',"
                               "'status':'PAUSED'}"),
              LICA("{'line_item_id':'li1','creative_id':'c1','status':'ACTIVE'}"),
              LICA("{'id':'a2','line_item_id':'li3','creative_id':'c2','status':'ACTIVE'}"),
              LICA("{'id':'a3','line_item_id':7,'creative_id':null,'status':'ACTIVE'}"));
    ok(s != NULL, "bad records: the build still succeeds");
    if (s == NULL) return;
    /* units: 8 invalid or id-less, 1 duplicate; placements 1; orders 1 + 1;
     * line items 1; creatives 1; licas 1 + 1 */
    is_int((long long) s->stats.skipped, 9 + 1 + 2 + 1 + 1 + 2,
           "bad records: invalid JSON, id-less and duplicate records counted in stats.skipped");
    is_int((long long) s->stats.records[ADSERVE_KIND_AD_UNITS], 2, "bad records: 2 units kept");
    is_int((long long) s->stats.records[ADSERVE_KIND_PLACEMENTS], 1, "bad records: 1 placement kept");
    is_int((long long) s->stats.records[ADSERVE_KIND_ORDERS], 1, "bad records: 1 order kept");
    is_int((long long) s->stats.records[ADSERVE_KIND_LINE_ITEMS], 3, "bad records: 3 line items kept");
    is_int((long long) s->stats.records[ADSERVE_KIND_CREATIVES], 2, "bad records: 2 creatives kept");
    is_int((long long) s->stats.records[ADSERVE_KIND_LICAS], 3, "bad records: 3 LICAs kept");
    is_str(serve(s, "u1", NOW, 0), "c1", "duplicates: the first record of an id wins");
    is_int((long long) s->stats.active_units, 2, "bad records: stats.active_units");
    is_int((long long) s->stats.candidates, 1, "bad records: stats.candidates");
    u = unit(s, "u2");
    ok(u != NULL && u->ncands == 0, "wrongly typed fields: unit kept, nothing serves on it");
    is_str(serve(s, "u2", NOW, 0), NULL, "unit without candidates: no ad");
    ok(s->stats.bytes > 0, "stats.bytes is set");
    adserve_snapshot_free(s);

    /* a record with text after the object is not valid JSON either */
    s = BUILD(UNIT("{'id':'u1','status':'ACTIVE'} trailing"), UNIT("{'id':'u2','status':'ACTIVE'}}"));
    ok(s && unit(s, "u1") == NULL && unit(s, "u2") == NULL && s->stats.skipped == 2,
       "a record with trailing text after the object is skipped as invalid JSON");
    adserve_snapshot_free(s);

    /* stats over a small world: 3 ACTIVE units, 2 line items x 2 creatives */
    s = BUILD(UNIT(U1_J), UNIT("{'id':'u2','status':'ACTIVE','parent_id':'u1'}"),
              UNIT("{'id':'u3','status':'ACTIVE'}"), UNIT("{'id':'u4','status':'INACTIVE',"
              "'parent_id':'u1'}"),
              ORD(O1_J),
              LI(li_rec("l1", "STANDARD", 1, 1, NULL)),
              LI(fmt("{'id':'l2','order_id':'o1','status':'ACTIVE','type':'HOUSE',"
                     "'cost_type':'CPM','rate':0,'targeting':{'ad_units':{'include':['u3','u4']}}}")),
              CRE(cr_rec("c1")), CRE(cr_rec("c2")),
              LICA(lica_rec("l1", "c1", 1)), LICA(lica_rec("l1", "c2", 1)),
              LICA(lica_rec("l2", "c1", 1)), LICA(lica_rec("l2", "c2", 1)));
    is_int((long long) s->stats.active_units, 3, "stats: active_units");
    is_int((long long) s->stats.candidates, 6, "stats: candidates (u1 2, u2 2, u3 2)");
    is_int((long long) s->stats.skipped, 0, "stats: nothing skipped");
    is_int((long long) s->stats.records[ADSERVE_KIND_LICAS], 4, "stats: LICA records");
    ok(s->stats.bytes == s->arena.total, "stats.bytes = snapshot arena size");
    {
        const adserve_unit_t *u1 = unit(s, "u1"), *u3 = unit(s, "u3");
        ok(u1 && u3 && u1->ncands == 2 && u3->ncands == 2
           && u1->cands[0].response_head == u3->cands[0].response_head
           && u1->cands[0].creative_id.data == u3->cands[0].creative_id.data,
           "stats: candidates of one creative share its response head and id");
    }
    adserve_snapshot_free(s);
}


/* ---- scale -------------------------------------------------------------- */

#define S_UNITS  1000
#define S_LIS    10000
#define S_CRS    20000
#define S_ORDERS 100

static int s_parent(int k) { return k >= 10 ? k / 10 : -1; }
static int s_active(int k) { return k % 37 != 5; }
/* a creative at the units' 300x250, or a 728x90 that they exclude */
static int s_fits(int c) { return c % 7 != 3; }

static double seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void test_scale(void) {
    adserve_input_t in;
    adserve_snapshot_t *s;
    char buf[512];
    int k, i, a, target[S_LIS], bad = 0;
    size_t active = 0, cands = 0;
    double t0, t1;
    const adserve_unit_t *u;

    adserve_input_init(&in);
    /* children before parents: the input order must not matter */
    for (k = S_UNITS - 1; k >= 0; k--) {
        if (s_parent(k) >= 0) {
            snprintf(buf, sizeof(buf), "{\"id\":\"unit-%04d\",\"status\":\"%s\","
                     "\"parent_id\":\"unit-%04d\",\"ext\":{\"bcat\":[\"IAB%d\"]}}", k,
                     s_active(k) ? "ACTIVE" : "INACTIVE", s_parent(k), 100 + k % 3);
        } else {
            snprintf(buf, sizeof(buf), "{\"id\":\"unit-%04d\",\"status\":\"%s\"}", k,
                     s_active(k) ? "ACTIVE" : "INACTIVE");
        }
        add(&in, ADSERVE_KIND_AD_UNITS, buf);
        active += s_active(k);
    }
    for (i = 0; i < S_ORDERS; i++) {
        snprintf(buf, sizeof(buf), "{\"id\":\"order-%03d\",\"status\":\"APPROVED\"}", i);
        add(&in, ADSERVE_KIND_ORDERS, buf);
    }
    for (i = 0; i < S_LIS; i++) {
        /* every 100th line item targets a top-level unit and its subtree,
         * the others one leaf */
        target[i] = i % 100 == 0 ? (i / 100) % 10 : 100 + i % 900;
        snprintf(buf, sizeof(buf),
                 "{\"id\":\"li-%05d\",\"order_id\":\"order-%03d\",\"status\":\"ACTIVE\","
                 "\"type\":\"%s\",\"priority\":%d,\"cost_type\":\"CPM\",\"rate\":%d.%02d,"
                 "\"start_at\":\"2025-01-01T00:00:00Z\",\"end_at\":\"2026-01-01T00:00:00Z\","
                 "\"targeting\":{\"ad_units\":{\"include\":[\"unit-%04d\"]}}}",
                 i, i % S_ORDERS, i % 4 == 0 ? "SPONSORSHIP" : i % 4 == 1 ? "STANDARD"
                 : i % 4 == 2 ? "PRICE_PRIORITY" : "HOUSE", 1 + i % 12, i % 17, i % 100,
                 target[i]);
        add(&in, ADSERVE_KIND_LINE_ITEMS, buf);
    }
    for (i = 0; i < S_CRS; i++) {
        snprintf(buf, sizeof(buf),
                 "{\"id\":\"cr-%05d\",\"approval\":\"APPROVED\",\"type\":\"%s\","
                 "\"w\":%d,\"h\":%d,\"image_url\":\"https://cdn.example/%05d.png\","
                 "\"html\":\"<a href=\\\"https://adv.example/%d\\\">ad</a>\","
                 "\"landing_url\":\"https://adv.example/\",\"categories\":[\"IAB%d-1\"]}",
                 i, i % 2 ? "HTML" : "IMAGE", s_fits(i) ? 300 : 728, s_fits(i) ? 250 : 90,
                 i, i, 1 + i % 20);
        add(&in, ADSERVE_KIND_CREATIVES, buf);
        snprintf(buf, sizeof(buf),
                 "{\"id\":\"lica-%05d\",\"line_item_id\":\"li-%05d\",\"creative_id\":"
                 "\"cr-%05d\",\"status\":\"ACTIVE\",\"weight\":%d}", i, i / 2, i, 1 + i % 5);
        add(&in, ADSERVE_KIND_LICAS, buf);
    }

    /* expected candidates: per line item, its ACTIVE units reached, x its
     * 2 creatives that fit (the others are exclusions) */
    for (i = 0; i < S_LIS; i++) {
        for (k = 0; k < S_UNITS; k++) {
            int p = k;
            while (p >= 0 && p != target[i]) p = s_parent(p);
            if (p >= 0 && s_active(k)) cands += s_fits(2 * i) + s_fits(2 * i + 1);
        }
    }

    t0 = seconds();
    s = build_input(&in);
    t1 = seconds();
    ok(s != NULL, "scale: %d units, %d line items, %d creatives build", S_UNITS, S_LIS, S_CRS);
    if (s == NULL) { adserve_input_free(&in); return; }
    diag("scale: build %.3f s, snapshot %zu bytes (%.1f MB), %zu candidates, input %zu bytes",
         t1 - t0, s->stats.bytes, s->stats.bytes / 1048576.0, s->stats.candidates,
         in.arena.total);
    is_int((long long) s->stats.active_units, (long long) active, "scale: active_units");
    is_int((long long) s->stats.candidates, (long long) cands, "scale: candidates");
    is_int((long long) s->stats.skipped, 0, "scale: nothing skipped");
    ok(s->stats.excluded > 0, "scale: creatives of another size are exclusions (%zu)",
       s->stats.excluded);

    for (k = 0; k < S_UNITS; k++) {
        snprintf(buf, sizeof(buf), "unit-%04d", k);
        u = unit(s, buf);
        if ((u != NULL) != s_active(k)) bad++;
        if (u) {
            for (a = 1; a < (int) u->ncands; a++) {
                if (u->cands[a].group < u->cands[a - 1].group) bad++;
            }
            adserve_decision_t d = decision(NOW, (uint32_t) k, NULL, 0);
            d.paces = paces(s);
            if (u->ncands && adserve_decide(s, u, &d) == NULL) bad++;
            d = decision(JUL1 + 86400 * 365, (uint32_t) k, NULL, 0);
            d.paces = paces(s);
            if (adserve_decide(s, u, &d) != NULL) bad++;
        }
    }
    is_int(bad, 0, "scale: every ACTIVE unit found, ranked, serving in flight only");

    /* a full load parses, joins, ranks and keeps on several threads: the
     * same snapshot, slot for slot */
    {
        adserve_snapshot_t *s4;
        const adserve_unit_t *u1, *u4;

        adserve_joins_t joins4;

        adserve_joins_init(&joins4);
        in.threads = 4;
        in.joins = &joins4;
        s4 = build_input(&in);
        in.threads = 0;
        in.joins = NULL;
        bad = s4 == NULL || s4->stats.candidates != s->stats.candidates
              || s4->stats.active_units != s->stats.active_units
              || s4->stats.bytes != s->stats.bytes || s4->nlis != s->nlis;
        for (k = 0; !bad && k < S_UNITS; k += 7) {
            snprintf(buf, sizeof(buf), "unit-%04d", k);
            u1 = unit(s, buf);
            u4 = unit(s4, buf);
            if ((u1 == NULL) != (u4 == NULL)) bad++;
            if (u1 && u4 && u1->nexcluded != u4->nexcluded) bad++;
            for (a = 0; u1 && u4 && !bad && a < (int) u1->nexcluded; a++) {
                if (strcmp(u1->excluded[a].line_item_id.data, u4->excluded[a].line_item_id.data)
                    || strcmp(u1->excluded[a].creative_id.data, u4->excluded[a].creative_id.data)
                    || u1->excluded[a].reason != u4->excluded[a].reason)
                {
                    bad++;
                }
            }
            for (a = 0; u1 && u4 && a < (int) u1->ncands; a++) {
                if (u1->ncands != u4->ncands
                    || u1->cands[a].response_head_len != u4->cands[a].response_head_len
                    || memcmp(u1->cands[a].response_head, u4->cands[a].response_head,
                              u1->cands[a].response_head_len) != 0
                    || u1->cands[a].li != u4->cands[a].li
                    || strcmp(s->lis[u1->cands[a].li].id.data, s4->lis[u4->cands[a].li].id.data))
                {
                    bad++;
                }
            }
        }
        ok(!bad, "scale: built on 4 threads, the same snapshot, candidate for candidate");
        ok(s4 != NULL && s4->stats.ranked == s->stats.ranked && joins4.valid,
           "scale: on 4 threads, as many units ranked, and the joins kept");
        adserve_snapshot_free(s4);
        adserve_joins_free(&joins4);
    }

    adserve_snapshot_free(s);
    adserve_input_free(&in);
}


/* a unit's allocations as "source:share" (sources by id), in order */
static const char *allocs_of(const adserve_snapshot_t *s, const char *unit_id) {
    static char buf[256];
    const adserve_unit_t *u = unit(s, unit_id);
    size_t used = 0;
    uint32_t i;

    buf[0] = '\0';
    for (i = 0; u != NULL && i < u->nallocs && used < sizeof(buf); i++) {
        const adserve_source_t *src = &s->sources[u->allocs[i].source];
        used += (size_t)snprintf(buf + used, sizeof(buf) - used, "%s%.*s:%g", i ? " " : "",
                                 (int)src->id.len, src->id.data, u->allocs[i].share);
    }
    return u != NULL ? buf : "(no unit)";
}

/* External demand's tables: the usable sources, and each unit's
 * allocations through itself, its path and its placements. */
static void test_allocations(void) {
#define SRC_J(id, extra) "{'id':'" id "','endpoint_url':'http://127.0.0.1:9/bid','enabled':true," extra "}"
    adserve_snapshot_t *s = BUILD(
        UNIT("{'id':'root','status':'ACTIVE'}"),
        UNIT("{'id':'kid','status':'ACTIVE','parent_id':'root'}"),
        UNIT("{'id':'grandkid','status':'ACTIVE','parent_id':'kid'}"),
        UNIT("{'id':'video','status':'ACTIVE','ext':{'video':{'enabled':1}},'video':{'w':640,'h':360}}"),
        UNIT("{'id':'lone','status':'ACTIVE'}"),
        PLC("{'id':'pl','ad_unit_ids':['lone']}"),
        SRC(SRC_J("disp", "'formats':['display'],'tmax_ms':150,'floor':0.5,'seat':'s-1'")),
        SRC(SRC_J("vid", "'formats':['video']")),
        SRC("{'id':'off','endpoint_url':'http://127.0.0.1:9/bid','enabled':false,'formats':['display']}"),
        SRC("{'id':'bad','endpoint_url':'ftp://x','enabled':true,'formats':['display']}"),
        ALLOC("{'id':'a1','ad_source_id':'disp','target':'path','target_id':'root','share':50}"),
        ALLOC("{'id':'a2','ad_source_id':'disp','target':'ad_unit','target_id':'kid','share':80}"),
        ALLOC("{'id':'a3','ad_source_id':'vid','target':'path','target_id':'root','share':100}"),
        ALLOC("{'id':'a4','ad_source_id':'vid','target':'ad_unit','target_id':'video','share':30}"),
        ALLOC("{'id':'a5','ad_source_id':'disp','target':'placement','target_id':'pl','share':10}"),
        ALLOC("{'id':'a6','ad_source_id':'off','target':'ad_unit','target_id':'lone','share':100}"),
        ALLOC("{'id':'a7','ad_source_id':'bad','target':'ad_unit','target_id':'lone','share':100}"),
        ALLOC("{'id':'a8','ad_source_id':'vid','target':'ad_unit','target_id':'lone','share':0}"),
        ALLOC("{'id':'a9','ad_source_id':'disp','target':'ad_unit','target_id':'video','share':40}"),
        ALLOC("{'id':'a10','ad_source_id':'nope','target':'ad_unit','target_id':'video','share':40}"));

    ok(s != NULL, "a build with sources and allocations");
    is_int(s->nsources, 2, "the usable sources: enabled, a valid endpoint (not off, not bad)");
    is_mem(s->sources[0].seat.data, s->sources[0].seat.len, "s-1", 3, "... with their seat");
    is_int(s->sources[0].tmax_ms, 150, "... tmax");
    ok(s->sources[0].floor == 0.5 && s->sources[0].adjustment == 1, "... floor, and an adjustment of 1 by default");
    is_str(allocs_of(s, "root"), "disp:50", "a path's root: the path's source (a video-only source left out of a display unit)");
    is_str(allocs_of(s, "kid"), "disp:80", "under it, allocated itself too: once, at the larger share");
    is_str(allocs_of(s, "grandkid"), "disp:50", "two levels under: the path's");
    is_str(allocs_of(s, "video"), "vid:30",
           "a video unit: its video source; a display-only one allocated to it is left out");
    is_str(allocs_of(s, "lone"), "disp:10",
           "a placement's unit: its share; a disabled source, a bad endpoint and a share of 0 send nothing");
    const adserve_unit_t *kid = unit(s, "kid");
    ok(kid->rtb_imp.data != NULL && strncmp(kid->rtb_imp.data, "{\"id\":\"1\",\"tagid\":\"kid\",\"banner\":", 33) == 0,
       "a unit with allocations: its imp rendered (%.60s)", kid->rtb_imp.data ? kid->rtb_imp.data : "-");
    is_mem(kid->rtb_site.data, kid->rtb_site.len, "\"site\":{}", strlen("\"site\":{}"), "... its site");
    ok(kid->rtb_app[0].data == NULL && kid->napp_keywords == 0, "... no app without inference");
    ok(unit(s, "video")->rtb_imp.data && strstr(unit(s, "video")->rtb_imp.data, "\"video\":{") != NULL,
       "a video unit's imp: a video object");
    adserve_snapshot_free(s);

    s = BUILD(UNIT("{'id':'app','status':'ACTIVE','ext':{'implicit_app_inference':{'android_bundle':'com.a',"
                   "'ua_keywords':['AppKw','']},'publisher':{'id':'p1'}}}"),
              UNIT("{'id':'plain','status':'ACTIVE'}"),
              SRC(SRC_J("disp", "'formats':['display']")),
              ALLOC("{'id':'a1','ad_source_id':'disp','target':'ad_unit','target_id':'app','share':100}"));
    const adserve_unit_t *app = unit(s, "app");
    is_int(app->napp_keywords, 1, "its ua_keywords kept (the empty one left out)");
    const char *want_app = "\"app\":{\"bundle\":\"com.a\",\"publisher\":{\"id\":\"p1\"}}";
    is_mem(app->rtb_app[ADSERVE_RTB_OS_ANDROID - 1].data, app->rtb_app[ADSERVE_RTB_OS_ANDROID - 1].len,
           want_app, strlen(want_app), "its Android app");
    ok(app->rtb_app[ADSERVE_RTB_OS_IOS - 1].data == NULL, "... no iOS app without its bundle");
    ok(unit(s, "plain")->rtb_imp.data == NULL, "a unit without allocations: nothing rendered");
    adserve_snapshot_free(s);

    /* native bids: a unit whose native ads are assets takes them, and
     * answers what it asks; one drawn by its style (html) asks for none */
#define NATIVE_ASSETS "'native':{'assets':[{'id':1,'required':1,'title':{'len':90}},{'id':3,'img':{'type':3}}]}"
    s = BUILD(UNIT("{'id':'asset','status':'ACTIVE','ext':{'native':{'enabled':true,'render_mode':'asset'}},"
                   NATIVE_ASSETS "}"),
              UNIT("{'id':'html','status':'ACTIVE','ext':{'native':{'enabled':true,'render_mode':'html'},"
                   "'display':{'enabled':true}}," NATIVE_ASSETS "}"),
              UNIT("{'id':'empty','status':'ACTIVE','ext':{'native':{'enabled':true,'render_mode':'asset'}},"
                   "'native':{'assets':[]}}"),
              SRC(SRC_J("nat", "'formats':['native','display']")),
              SRC(SRC_J("natonly", "'formats':['native']")),
              ALLOC("{'id':'a1','ad_source_id':'nat','target':'ad_unit','target_id':'asset','share':100}"),
              ALLOC("{'id':'a2','ad_source_id':'natonly','target':'ad_unit','target_id':'asset','share':100}"),
              ALLOC("{'id':'a3','ad_source_id':'nat','target':'ad_unit','target_id':'html','share':100}"),
              ALLOC("{'id':'a4','ad_source_id':'natonly','target':'ad_unit','target_id':'html','share':100}"),
              ALLOC("{'id':'a5','ad_source_id':'natonly','target':'ad_unit','target_id':'empty','share':100}"));
    const adserve_unit_t *as = unit(s, "asset"), *hm = unit(s, "html");
    is_str(allocs_of(s, "asset"), "nat:100 natonly:100", "native in asset mode: both sources asked");
    ok((as->formats & (1u << ADSERVE_FORMAT_NATIVE)) && as->nnative_reqs == 2
       && as->native_reqs[0].id == 1 && as->native_reqs[0].kind == ADSERVE_ASSET_TITLE
       && as->native_reqs[0].required && as->native_reqs[1].id == 3
       && as->native_reqs[1].kind == ADSERVE_ASSET_IMG && !as->native_reqs[1].required,
       "... takes native bids, and knows what they answer: its requests' ids, kinds, required");
    ok(as->rtb_imp.data && strstr(as->rtb_imp.data, "\"native\":{\"request\":") != NULL,
       "... its imp asks for native");
    is_str(allocs_of(s, "html"), "nat:100", "native in html mode: a native-only source is not asked");
    ok(!(hm->formats & (1u << ADSERVE_FORMAT_NATIVE)) && hm->nnative_reqs == 0
       && hm->rtb_imp.data && strstr(hm->rtb_imp.data, "\"native\"") == NULL,
       "... its bids are banners: its imp has no native (its style draws a creative's own assets)");
    is_str(allocs_of(s, "empty"), "", "asset mode asking for no asset: no native bid either");
    adserve_snapshot_free(s);

    s = BUILD(UNIT("{'id':'root','status':'ACTIVE'}"),
              SRC(SRC_J("disp", "'formats':['display']")),
              ALLOC("{'id':'a1','ad_source_id':'disp','target':'placement','target_id':'gone','share':50}"),
              ALLOC("{'id':'a2','ad_source_id':'disp','target':'ad_unit','target_id':'gone','share':50}"));
    is_str(allocs_of(s, "root"), "", "allocations of a placement or unit that is gone: nothing");
    adserve_snapshot_free(s);

    /* what each unit's bids from each source are checked against */
    s = BUILD(UNIT("{'id':'u1','status':'ACTIVE','ad_unit_sizes':[{'w':300,'h':250}],'ext':{'bcat':['IAB25']}}"),
              UNIT("{'id':'u2','status':'ACTIVE'}"),
              SRC(SRC_J("s1", "'formats':['display']")),
              SRC(SRC_J("s2", "'formats':['display']")),
              ALLOC("{'id':'a1','ad_source_id':'s1','target':'ad_unit','target_id':'u1','share':100}"),
              ALLOC("{'id':'a2','ad_source_id':'s2','target':'ad_unit','target_id':'u1','share':100}"),
              ALLOC("{'id':'a3','ad_source_id':'s1','target':'ad_unit','target_id':'u2','share':100}"),
              BLOCK("{'id':'b1','kind':'adomain','value':'bad.example','ad_unit_id':null,'ad_source_id':null}"),
              BLOCK("{'id':'b2','kind':'crid','value':'c-7','ad_unit_id':null,'ad_source_id':'s2'}"),
              BLOCK("{'id':'b3','kind':'cat','value':'IAB7','ad_unit_id':'u2','ad_source_id':null}"),
              BLOCK("{'id':'b4','kind':'nonsense','value':'x'}"),
              UNIT("{'id':'u3','status':'ACTIVE','parent_id':'u2'}"),
              ALLOC("{'id':'a4','ad_source_id':'s1','target':'ad_unit','target_id':'u3','share':100}"));
    const adserve_unit_t *u3 = unit(s, "u3");
    ok(u3 && u3->nallocs == 1 && u3->allocs[0].nblocks == 2,
       "blocks: a block of a unit holds under it (u3 under u2: the global block and u2's category)");
    const adserve_unit_t *u1 = unit(s, "u1"), *u2 = unit(s, "u2");
    ok(u1 && u1->nallocs == 2 && u2 && u2->nallocs == 1, "blocks: two units, three allocations");
    if (u1 && u1->nallocs == 2 && u2 && u2->nallocs == 1) {
        const adserve_alloc_t *a1 = &u1->allocs[0], *a2 = &u1->allocs[1], *a3 = &u2->allocs[0];
        if (strcmp(s->sources[a1->source].id.data, "s1") != 0) {
            const adserve_alloc_t *t = a1; a1 = a2; a2 = t;
        }
        is_int(a1->nblocks, 2, "blocks: u1 from s1, its bcat and the block of every unit and source");
        is_int(a2->nblocks, 3, "blocks: u1 from s2, and the crid block of s2");
        is_int(a3->nblocks, 2, "blocks: u2 from s1, the global block and its own category");
        is_mem(a1->blocks_json.data, a1->blocks_json.len, ",\"bcat\":[\"IAB25\"],\"badv\":[\"bad.example\"]",
               strlen(",\"bcat\":[\"IAB25\"],\"badv\":[\"bad.example\"]"), "blocks: u1's bcat and badv to s1");
        is_mem(a2->blocks_json.data, a2->blocks_json.len, a1->blocks_json.data, a1->blocks_json.len,
               "blocks: the same to s2 (a crid is not told)");
        is_mem(a3->counter_id.data, a3->counter_id.len, "u2/s1", 5, "counter: {unit id}/{source id}");
        ok(a3->counter_hash == adserve_hash("u2/s1", 5), "counter: its hash");
        is_int(u1->bid_w * 1000 + u1->bid_h, 300250, "a bid's default size: the unit's first");
    }
    adserve_snapshot_free(s);
#undef SRC_J
}

int main(void) {
    alarm(600);   /* a hang is a failure, not a stuck run */
    test_base_and_units();
    test_order_line_item_lica_creative();
    test_flight();
    test_sizes();
    test_video();
    test_bcat();
    test_targeting();
    test_ranking();
    test_cost_ranking();
    test_default_bids();
    test_floor();
    test_ties();
    test_caps();
    test_goals();
    test_li_check();
    test_li_lookup();
    test_unit_index();
    test_shared_urls();
    test_inherit();
    test_creative_lookup();
    test_allocator();
    test_rendering();
    test_public_url();
    test_on_response();
    test_experiments();
    test_allocations();
    test_robustness();
    test_scale();
    free_kept();
    return done_testing();
}
