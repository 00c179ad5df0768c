/* snapshot_test.c -- TAP tests for the snapshot build and the serving
 * decision (adserve_snapshot.c): eligibility, targeting, ranking, rotation,
 * rendering, robustness against bad records, adserve_parse_time and a
 * scale check.
 *
 * Records are written with single quotes for readability; the helper turns
 * every ' into " before handing them to the build (a real single quote in a
 * value is written \u0027). The input is freed right after each build, so
 * under AddressSanitizer any pointer the snapshot kept into it is caught. */

#include "adserve_snapshot.h"
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

static adserve_snapshot_t *build_recs(const rec_t *r, size_t n) {
    adserve_input_t in;
    adserve_snapshot_t *s;
    size_t i;

    adserve_input_init(&in);
    in.rev = 42;
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

/* The creative served on the unit, or NULL. */
static const char *serve(const adserve_snapshot_t *s, const char *id, int64_t now,
    uint32_t rnd)
{
    const adserve_unit_t *u = unit(s, id);
    const adserve_cand_t *c = u ? adserve_decide(u, now, rnd, no_facts()) : NULL;

    return c ? c->creative_id.data : NULL;
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

/* a line item record; extra is appended inside the object */
static const char *li_rec(const char *id, const char *type, int prio, double rate,
    const char *extra)
{
    return fmt("{'id':'%s','order_id':'o1','status':'ACTIVE','type':'%s',"
               "'priority':%d,'cost_type':'CPM','rate':%g,"
               "'targeting':{'ad_units':{'include':['u1']}}%s%s}",
               id, type, prio, rate, extra ? "," : "", extra ? extra : "");
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
    is_int(u->cands[0].start, NOW, "candidate start = start_at");
    is_int(u->cands[0].end, JUL1, "candidate end = end_at");
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
    ok(u && u->ncands == 1 && u->cands[0].start == INT64_MIN && u->cands[0].end == INT64_MAX,
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
    is_str(base_serve(u728s, NULL, NULL, NULL, NULL, NOW), "c1",
           "size: 300x250 creative matches one of ad_unit_sizes, serves");
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
        is_id(u->cands[0].line_item_id, "spon", "tiers: SPONSORSHIP first despite priority 12 and rate 0.01");
        is_id(u->cands[1].line_item_id, "std", "tiers: STANDARD second");
        is_id(u->cands[2].line_item_id, "pp", "tiers: PRICE_PRIORITY third");
        is_id(u->cands[3].line_item_id, "house", "tiers: HOUSE last");
        ok(u->cands[0].group < u->cands[1].group && u->cands[1].group < u->cands[2].group
           && u->cands[2].group < u->cands[3].group, "tiers: four distinct ascending groups");
    }
    is_str(serve(s, "u1", NOW, 0), "c-spon", "tiers: SPONSORSHIP serves");
    is_str(serve(s, "u1", NOW, UINT32_MAX), "c-spon", "tiers: SPONSORSHIP serves for any rnd");
    adserve_snapshot_free(s);

    /* priority within a tier beats price; eCPM within a priority */
    s = BUILD(UNIT(U1_J), ORD(O1_J),
              LI(li_rec("p2-rich", "STANDARD", 2, 500, NULL)),
              LI(li_rec("p1-cheap", "STANDARD", 1, 0.5, NULL)),
              LI(li_rec("p1-mid", "STANDARD", 1, 3, NULL)),
              LI(li_rec("p1-top", "STANDARD", 1, 3.25, NULL)),
              LI(fmt("{'id':'p1-cpc','order_id':'o1','status':'ACTIVE','type':'STANDARD',"
                     "'priority':1,'cost_type':'CPC','rate':100,"
                     "'targeting':{'ad_units':{'include':['u1']}}}")),
              CRE(cr_rec("c1")), CRE(cr_rec("c2")), CRE(cr_rec("c3")), CRE(cr_rec("c4")),
              CRE(cr_rec("c5")),
              LICA(lica_rec("p2-rich", "c1", 1)), LICA(lica_rec("p1-cheap", "c2", 1)),
              LICA(lica_rec("p1-mid", "c3", 1)), LICA(lica_rec("p1-top", "c4", 1)),
              LICA(lica_rec("p1-cpc", "c5", 1)));
    u = unit(s, "u1");
    ok(u && u->ncands == 5, "priority/eCPM: five candidates");
    if (u && u->ncands == 5) {
        is_id(u->cands[0].line_item_id, "p1-top", "eCPM: 3.25 CPM first within priority 1");
        is_id(u->cands[1].line_item_id, "p1-mid", "eCPM: 3 CPM second");
        is_id(u->cands[2].line_item_id, "p1-cheap", "eCPM: 0.5 CPM third");
        is_id(u->cands[3].line_item_id, "p1-cpc", "eCPM: CPC (no observed rate yet) after every CPM");
        is_id(u->cands[4].line_item_id, "p2-rich", "priority: priority 2 after all of priority 1 despite rate 500");
        is_int((long long) u->cands[0].price_micros, 3250000, "price_micros = rate x 1e6");
        is_int(u->cands[0].cost_type, ADSERVE_COST_CPM, "cost_type CPM");
        is_int(u->cands[3].cost_type, ADSERVE_COST_CPC, "cost_type CPC");
        is_int((long long) u->cands[3].price_micros, 100000000, "CPC price_micros");
    }
    is_str(serve(s, "u1", NOW, 7), "c4", "priority/eCPM: best candidate serves");
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

    /* rotation between two equal line items, and an out-of-flight member */
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
    ok(na == 100 && nb == 300, "equal line items: weights 1 and 3 split 100:300 (got %d:%d)", na, nb);
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


/* ---- rendering ---------------------------------------------------------- */

static adserve_tokens_t tokens;

/* Serves the unit and assembles the whole body as the module does; returns
 * the parsed JSON (or NULL), and the token in tok. */
static cJSON *render(const adserve_snapshot_t *s, const char *id, char *tok,
    const adserve_cand_t **cp)
{
    const adserve_unit_t *u = unit(s, id);
    const adserve_cand_t *c = u ? adserve_decide(u, NOW, 0, no_facts()) : NULL;
    adserve_ad_log_t log;
    char body[8192];
    size_t n, tl;

    *cp = c;
    tok[0] = '\0';
    if (c == NULL || c->response_head_len + ADSERVE_TOKEN_MAX + 3 > sizeof(body)) return NULL;

    memset(&log, 0, sizeof(log));
    log.issued = NOW;
    log.price_micros = c->price_micros;
    log.cost_type = c->cost_type;
    log.ad_unit.data = u->id;
    log.ad_unit.len = u->id_len;
    log.line_item = c->line_item_id;
    log.creative = c->creative_id;
    tl = adserve_token_encode(&tokens, &log, tok);
    if (tl == 0) return NULL;
    tok[tl] = '\0';

    memcpy(body, c->response_head, c->response_head_len);
    n = c->response_head_len;
    memcpy(body + n, tok, tl);
    n += tl;
    memcpy(body + n, ADSERVE_RESPONSE_TAIL, sizeof(ADSERVE_RESPONSE_TAIL) - 1);
    n += sizeof(ADSERVE_RESPONSE_TAIL) - 1;

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
    ok(j != NULL, "render IMAGE: head + token + tail is valid JSON");
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
    ok(c && c->response_head_len == strlen("{\"version\":\"0.1.0\",\"ad\":") +
       strlen("{\"id\":\"cr-img\",\"display\":{\"w\":728,\"h\":90,\"banner\":"
              "{\"img\":\"https://cdn.example/a.png?x=1&y=2\"}}}")
       + strlen(",\"ext\":{\"message\":\"ok\",\"ad_log\":\""),
       "render IMAGE: head is compact (no whitespace)");
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
    is_int(c ? c->cost_type : -1, ADSERVE_COST_CPC, "render HTML: CPC candidate");
    cJSON_Delete(j);

    j = render(s, "u-esc", tok, &c);
    ok(j != NULL, "render escaping: valid JSON despite quotes, backslashes, controls");
    is_str(jstr(j, "ad.id"), "cr-\"esc\"", "render escaping: quotes in the creative id");
    is_str(jstr(j, "ad.display.banner.img"),
           "https://cdn.example/q\"uo\\te\nnl\ttab\xc3\xa9\xe2\x80\xa8"
           "\xf0\x9f\x98\x80\x01/</script>",
           "render escaping: quote, backslash, newline, tab, unicode, control char survive");
    is_id(c ? c->creative_id : nostr, "cr-\"esc\"", "render escaping: candidate creative_id raw");
    cJSON_Delete(j);

    adserve_snapshot_free(s);
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


/* ---- adserve_parse_time ------------------------------------------------- */

static void test_parse_time(void) {
    static const struct { const char *s; long long t; } good[] = {
        { "1970-01-01T00:00:00Z", 0 },
        { "2025-06-01T00:00:00Z", NOW },
        { "2025-06-01T00:00:00z", NOW },
        { "2024-02-29T12:00:00Z", 1709208000 },
        { "2000-02-29T00:00:00Z", 951782400 },
        { "2024-03-01T00:00:00Z", 1709251200 },
        { "2024-01-01T02:00:00+02:00", 1704067200 },
        { "2023-12-31T18:30:00-05:30", 1704067200 },
        { "2024-01-01T00:00:00+00:00", 1704067200 },
        { "2024-01-01T00:00:00-00:00", 1704067200 },
        { "2024-01-01T00:00:00.5Z", 1704067200 },
        { "2024-01-01T00:00:00.999999999Z", 1704067200 },
        { "2024-01-01T02:00:00.123+02:00", 1704067200 },
        { "2100-02-28T00:00:00Z", 4107456000LL },
        { "1969-12-31T23:00:00Z", -3600 },
        { "1969-12-31T23:59:59Z", -1 },       /* -1 is a time, not an error */
    };
    static const char *const bad[] = {
        "", "2024", "2024-01-01", "2024-01-01T00:00:00", "2024-01-01T00:00Z",
        "2024-01-01 00:00:00Z", "2024-01-01T00:00:00ZZ", "2024-01-01T00:00:00Z ",
        " 2024-01-01T00:00:00Z", "2024-1-01T00:00:00Z", "24-01-01T00:00:00Z",
        "2024-13-01T00:00:00Z", "2024-00-01T00:00:00Z", "2024-01-00T00:00:00Z",
        "2024-01-32T00:00:00Z", "2024-01-01T24:00:00Z", "2024-01-01T00:60:00Z",
        "2024-01-01T00:00:61Z", "2024-01-01T00:00:00+0200", "2024-01-01T00:00:00+02",
        "2024-01-01T00:00:00+24:00", "2024-01-01T00:00:00+02:60",
        "2024-01-01T00:00:00+02:00x", "2024-01-01T00:00:00UTC",
        "2024-01-01T00:00:00.Z", "2024-01-01T00:00:00.", "2024-01-01T00:00:00,5Z",
        "2023-02-29T00:00:00Z", "1900-02-29T00:00:00Z", "2024-04-31T00:00:00Z",
        "2024-02-30T00:00:00Z", "2024-01-01T-1:00:00Z", "2024-01-01T00:-1:00Z",
        "2024-01-01T00:00:-1Z", "2024-01-01T+1:00:00Z", "2024-01-01T00:00:00+-1:00",
        "2024-01-01T00:00:00+ 1:00", "tomorrow",
    };
    size_t i;
    int64_t t;

    for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        t = 12345;
        ok(adserve_parse_time(good[i].s, &t) == 0 && t == good[i].t,
           "parse_time %s = %lld (got %lld)", good[i].s, good[i].t, (long long) t);
    }
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        is_int(adserve_parse_time(bad[i], &t), -1, "parse_time rejects \"%s\"", bad[i]);
    }
    is_int(adserve_parse_time(NULL, &t), -1, "parse_time rejects NULL");
}


/* ---- scale -------------------------------------------------------------- */

#define S_UNITS  1000
#define S_LIS    10000
#define S_CRS    20000
#define S_ORDERS 100

static int s_parent(int k) { return k >= 10 ? k / 10 : -1; }
static int s_active(int k) { return k % 37 != 5; }

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
                 "\"w\":300,\"h\":250,\"image_url\":\"https://cdn.example/%05d.png\","
                 "\"html\":\"<a href=\\\"https://adv.example/%d\\\">ad</a>\","
                 "\"landing_url\":\"https://adv.example/\",\"categories\":[\"IAB%d-1\"]}",
                 i, i % 2 ? "HTML" : "IMAGE", i, i, 1 + i % 20);
        add(&in, ADSERVE_KIND_CREATIVES, buf);
        snprintf(buf, sizeof(buf),
                 "{\"id\":\"lica-%05d\",\"line_item_id\":\"li-%05d\",\"creative_id\":"
                 "\"cr-%05d\",\"status\":\"ACTIVE\",\"weight\":%d}", i, i / 2, i, 1 + i % 5);
        add(&in, ADSERVE_KIND_LICAS, buf);
    }

    /* expected candidates: per line item, its ACTIVE units reached, x 2 creatives */
    for (i = 0; i < S_LIS; i++) {
        for (k = 0; k < S_UNITS; k++) {
            int p = k;
            while (p >= 0 && p != target[i]) p = s_parent(p);
            if (p >= 0 && s_active(k)) cands += 2;
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

    for (k = 0; k < S_UNITS; k++) {
        snprintf(buf, sizeof(buf), "unit-%04d", k);
        u = unit(s, buf);
        if ((u != NULL) != s_active(k)) bad++;
        if (u) {
            for (a = 1; a < (int) u->ncands; a++) {
                if (u->cands[a].group < u->cands[a - 1].group) bad++;
            }
            if (u->ncands && adserve_decide(u, NOW, (uint32_t) k, no_facts()) == NULL) bad++;
            if (adserve_decide(u, JUL1 + 86400 * 365, (uint32_t) k, no_facts()) != NULL) bad++;
        }
    }
    is_int(bad, 0, "scale: every ACTIVE unit found, ranked, serving in flight only");
    adserve_snapshot_free(s);
    adserve_input_free(&in);
}


int main(void) {
    alarm(600);   /* a hang is a failure, not a stuck run */
    test_base_and_units();
    test_order_line_item_lica_creative();
    test_flight();
    test_sizes();
    test_bcat();
    test_targeting();
    test_ranking();
    test_rendering();
    test_robustness();
    test_parse_time();
    test_scale();
    free_kept();
    return done_testing();
}
