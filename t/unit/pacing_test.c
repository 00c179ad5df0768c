/* pacing_test.c -- TAP tests for pacing (adserve_pacing.c): adserve_pace_init
 * and adserve_pace_update on hand-made line items (unpaced, goal reached,
 * EVEN and ASAP wants, the share of opportunities, yield, the local budget,
 * CTR and CVR factors with their priors, open-ended flights), then a
 * closed-loop simulation of one EVEN line item over a simulated day through
 * a real snapshot and adserve_decide. Deterministic: fixed seeds. */

#include "adserve_snapshot.h"
#include "adserve_pacing.h"
#include "tap.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define S0      1748736000LL    /* 2025-06-01T00:00:00Z */
#define DAY     86400
#define UMAX    4294967295.0

/* a line item as the build leaves it (cost type, goal, flight), and this
 * worker's pace of it */
typedef struct {
    adserve_li_t    li;
    adserve_pace_t  pace;
} tli_t;

static tli_t mk(int cost, int goal_type, uint64_t goal, int delivery, int64_t start,
    int64_t end)
{
    tli_t t;

    memset(&t, 0, sizeof(t));
    t.li.cost_type = (uint8_t) cost;
    t.li.goal_type = (uint8_t) goal_type;
    t.li.goal = goal;
    t.li.delivery = (uint8_t) delivery;
    t.li.paced = goal_type != ADSERVE_GOAL_NONE;
    t.li.start = start;
    t.li.end = end;
    adserve_pace_init(&t.li, &t.pace);
    return t;
}

static adserve_delivered_t dv(uint64_t imp, uint64_t clk, uint64_t conv, uint64_t ads,
    uint64_t opp)
{
    adserve_delivered_t d = { imp, clk, conv, ads, opp };

    return d;
}

static int near(double got, double want, double tol) {
    return fabs(got - want) <= tol;
}

/* allow as a share of opportunities */
static double share(const tli_t *li) {
    return li->pace.allow / UMAX;
}


/* ---- init ---------------------------------------------------------------- */

static void test_init(void) {
    tli_t li;

    li = mk(ADSERVE_COST_CPM, ADSERVE_GOAL_NONE, 0, ADSERVE_DELIVERY_EVEN, INT64_MIN, INT64_MAX);
    ok(li.pace.factor == 1, "init CPM: factor 1");
    ok(li.pace.allow == UINT32_MAX && li.pace.budget == UINT32_MAX,
       "init unpaced: allow and budget UINT32_MAX");
    ok(!li.pace.known && !li.pace.stopped && li.pace.opp == 0 && li.pace.served == 0
       && li.pace.pushed == 0 && li.pace.read_at == 0 && li.pace.read_opp == 0,
       "init: nothing known, nothing counted");
    ok(adserve_pace_allows(&li.pace, 0) && adserve_pace_allows(&li.pace, UINT32_MAX),
       "init unpaced: pace_allows for any rnd");

    li = mk(ADSERVE_COST_CPC, ADSERVE_GOAL_NONE, 0, ADSERVE_DELIVERY_EVEN, INT64_MIN, INT64_MAX);
    ok(near(li.pace.factor, 1000.0 * ADSERVE_CTR_PRIOR_CLICKS / ADSERVE_CTR_PRIOR_IMPRESSIONS,
            1e-12) && near(li.pace.factor, 1, 1e-12),
       "init CPC: the prior CTR, 1 in 1000: factor 1");
    li = mk(ADSERVE_COST_CPA, ADSERVE_GOAL_NONE, 0, ADSERVE_DELIVERY_EVEN, INT64_MIN, INT64_MAX);
    ok(near(li.pace.factor, 0.1, 1e-12), "init CPA: the prior CVR, 1 in 10000: factor 0.1");

    li = mk(ADSERVE_COST_CPM, ADSERVE_GOAL_IMPRESSIONS, 1000, ADSERVE_DELIVERY_EVEN,
            S0, S0 + 1000);
    ok(li.li.paced && li.pace.allow == 0 && li.pace.budget == 0 && !li.pace.known,
       "init paced: allow 0, budget 0 until the first update");
    ok(!adserve_pace_allows(&li.pace, 0) && !adserve_pace_allows(&li.pace, UINT32_MAX),
       "init paced: pace_allows never");

    /* init resets whatever was there */
    li.pace.opp = 5; li.pace.served = 6; li.pace.pushed = 7; li.pace.known = 1;
    li.pace.stopped = 1; li.pace.read_at = 9; li.pace.read_opp = 10; li.pace.factor = 3;
    adserve_pace_init(&li.li, &li.pace);
    ok(li.pace.opp == 0 && li.pace.served == 0 && li.pace.pushed == 0 && !li.pace.known
       && !li.pace.stopped && li.pace.read_at == 0 && li.pace.read_opp == 0
       && li.pace.factor == 1, "init: resets every field");
}


/* ---- update: unpaced, goal reached, factors ------------------------------- */

static void test_unpaced(void) {
    tli_t li;
    adserve_delivered_t d;

    li = mk(ADSERVE_COST_CPM, ADSERVE_GOAL_NONE, 0, ADSERVE_DELIVERY_EVEN, INT64_MIN, INT64_MAX);
    li.pace.opp = 10;
    li.pace.pushed = 8;
    li.pace.served = 4;
    d = dv(5000, 20, 1, 6000, 777);
    adserve_pace_update(&li.li, &li.pace, &d, S0 + 5, 10);
    ok(li.pace.allow == UINT32_MAX && li.pace.budget == UINT32_MAX,
       "unpaced update: allow and budget stay UINT32_MAX");
    ok(!li.pace.stopped && li.pace.factor == 1, "unpaced update: not stopped, CPM factor 1");
    ok(li.pace.known && li.pace.read_at == S0 + 5 && li.pace.read_opp == 777,
       "update: known, read_at = now, read_opp = the counters' opportunities");
    ok(li.pace.opp == 2 && li.pace.pushed == 0 && li.pace.served == 0,
       "update: opp keeps what was not pushed yet; pushed and served start again");
    ok(adserve_pace_allows(&li.pace, UINT32_MAX), "unpaced update: pace_allows");
}

static void test_goal_reached(void) {
    tli_t li;
    adserve_delivered_t d;

    li = mk(ADSERVE_COST_CPM, ADSERVE_GOAL_IMPRESSIONS, 1000, ADSERVE_DELIVERY_ASAP,
            INT64_MIN, INT64_MAX);
    d = dv(1000, 0, 0, 1000, 5000);
    adserve_pace_update(&li.li, &li.pace, &d, S0, 10);
    ok(li.pace.stopped && li.pace.allow == 0 && li.pace.budget == 0 && li.pace.known,
       "impressions goal reached: stopped, allow 0, budget 0, known");
    ok(!adserve_pace_allows(&li.pace, 0), "stopped: pace_allows never");
    d = dv(1500, 0, 0, 1500, 6000);
    adserve_pace_update(&li.li, &li.pace, &d, S0 + 10, 10);
    ok(li.pace.stopped, "goal passed: stopped");
    d = dv(999, 0, 0, 999, 7000);
    adserve_pace_update(&li.li, &li.pace, &d, S0 + 20, 10);
    ok(!li.pace.stopped && li.pace.budget > 0, "one short of the goal (a correction): running again");

    li = mk(ADSERVE_COST_CPC, ADSERVE_GOAL_CLICKS, 10, ADSERVE_DELIVERY_ASAP,
            INT64_MIN, INT64_MAX);
    d = dv(1000000, 9, 0, 1000000, 0);
    adserve_pace_update(&li.li, &li.pace, &d, S0, 10);
    ok(!li.pace.stopped, "clicks goal: 9 of 10 clicks whatever the impressions: running");
    d = dv(10, 10, 0, 10, 0);
    adserve_pace_update(&li.li, &li.pace, &d, S0 + 10, 10);
    ok(li.pace.stopped, "clicks goal: 10 clicks: stopped");
    ok(near(li.pace.factor, 1000.0 * 11 / 1010, 1e-9),
       "stopped: the factor is still updated");
}

static void test_factors(void) {
    tli_t li;
    adserve_delivered_t d;

    li = mk(ADSERVE_COST_CPC, ADSERVE_GOAL_NONE, 0, ADSERVE_DELIVERY_EVEN, INT64_MIN, INT64_MAX);
    d = dv(9000, 99, 0, 9000, 0);
    adserve_pace_update(&li.li, &li.pace, &d, S0, 10);
    ok(near(li.pace.factor, 10, 1e-9), "CPC: 1000 x (99 + 1) / (9000 + 1000) = 10 (%g)", li.pace.factor);
    d = dv(0, 0, 0, 0, 0);
    adserve_pace_update(&li.li, &li.pace, &d, S0 + 10, 10);
    ok(near(li.pace.factor, 1, 1e-12), "CPC, nothing delivered: the prior, 1");
    d = dv(1000000, 0, 0, 1000000, 0);
    adserve_pace_update(&li.li, &li.pace, &d, S0 + 20, 10);
    ok(near(li.pace.factor, 1000.0 / 1001000, 1e-12), "CPC, no click in 1e6: the prior fades");

    li = mk(ADSERVE_COST_CPA, ADSERVE_GOAL_NONE, 0, ADSERVE_DELIVERY_EVEN, INT64_MIN, INT64_MAX);
    d = dv(10000, 400, 9, 10000, 0);
    adserve_pace_update(&li.li, &li.pace, &d, S0, 10);
    ok(near(li.pace.factor, 0.5, 1e-12), "CPA: 1000 x (9 + 1) / (10000 + 10000) = 0.5 (%g)",
       li.pace.factor);
    d = dv(0, 0, 0, 0, 0);
    adserve_pace_update(&li.li, &li.pace, &d, S0 + 10, 10);
    ok(near(li.pace.factor, 0.1, 1e-12), "CPA, nothing delivered: the prior, 0.1");

    li = mk(ADSERVE_COST_CPM, ADSERVE_GOAL_NONE, 0, ADSERVE_DELIVERY_EVEN, INT64_MIN, INT64_MAX);
    d = dv(100, 50, 50, 100, 0);
    adserve_pace_update(&li.li, &li.pace, &d, S0, 10);
    ok(li.pace.factor == 1, "CPM: factor 1 whatever the rates");
}


/* ---- update: the wanted delivery -------------------------------------------- */

/* a worker that stalled (or a clock that stepped) gets at most 1/24 of the
 * flight, and at most an hour, as its horizon */
static void test_horizon_bound(void) {
    tli_t li;
    adserve_delivered_t d;

    li = mk(ADSERVE_COST_CPM, ADSERVE_GOAL_IMPRESSIONS, 86400, ADSERVE_DELIVERY_EVEN,
            S0, S0 + 86400);
    d = dv(0, 0, 0, 0, 0);
    adserve_pace_update(&li.li, &li.pace, &d, S0, 10);
    /* the next update comes 12 hours later, nothing delivered: the horizon
     * is 3600 s (1/24 of the day), not 12 h */
    adserve_pace_update(&li.li, &li.pace, &d, S0 + 43200, 10);
    is_int(li.pace.budget, 43200 + 3600, "horizon bound: a 12 h gap wants 12 h + 1 h, not 24 h");

    li = mk(ADSERVE_COST_CPM, ADSERVE_GOAL_IMPRESSIONS, 1000000, ADSERVE_DELIVERY_EVEN,
            S0, S0 + 1000 * 86400LL);
    d = dv(0, 0, 0, 0, 0);
    adserve_pace_update(&li.li, &li.pace, &d, S0, 10);
    adserve_pace_update(&li.li, &li.pace, &d, S0 + 500 * 86400LL, 10);
    is_int(li.pace.budget, 500000 + 42, "horizon bound: never above an hour (1000-day flight)");
}

static void test_even(void) {
    tli_t li;
    adserve_delivered_t d;
    uint32_t a;

    /* 1000 impressions over 1000 s */
    li = mk(ADSERVE_COST_CPM, ADSERVE_GOAL_IMPRESSIONS, 1000, ADSERVE_DELIVERY_EVEN,
            S0, S0 + 1000);

    /* first update, at half time with 400 delivered, horizon 10:
     * want = 1000 x (500 + 10) / 1000 - 400 = 110; no opportunity measured
     * yet: take every one, up to 110 */
    d = dv(400, 0, 0, 400, 50000);
    adserve_pace_update(&li.li, &li.pace, &d, S0 + 500, 10);
    ok(!li.pace.stopped && li.pace.known, "EVEN first update: running, known");
    is_int(li.pace.allow, UINT32_MAX, "EVEN first update: no opportunities measured: allow all");
    is_int(li.pace.budget, 110, "EVEN first update: budget = want = 1000 x 510/1000 - 400 = 110");
    is_int(li.pace.read_opp, 50000, "EVEN first update: read_opp = 50000");

    /* second update 10 s later: 1000 opportunities since (half of them this
     * worker's), 405 delivered: want = 1000 x 520 / 1000 - 405 = 115 */
    li.pace.opp = 500;
    li.pace.pushed = 500;
    li.pace.served = 110;
    d = dv(405, 0, 0, 405, 51000);
    adserve_pace_update(&li.li, &li.pace, &d, S0 + 510, 10);
    a = (uint32_t) (115.0 / 1000 * UMAX);
    ok(li.pace.allow == a, "EVEN second update: allow = 115 / 1000 opportunities (%u, want %u)",
       li.pace.allow, a);
    is_int(li.pace.budget, 88, "EVEN second update: budget = ceil(115 x share 0.5 x 1.5 + 1) = 88");
    ok(li.pace.opp == 0 && li.pace.pushed == 0 && li.pace.served == 0,
       "EVEN second update: worker counts start again");

    /* the horizon is measured once two updates happened: 30 s here, the
     * argument (10) ignored: want = 1000 x (540 + 30) / 1000 - 480 = 90 over
     * 3000 opportunities */
    li.pace.opp = 3000;
    li.pace.pushed = 3000;
    d = dv(480, 0, 0, 480, 54000);
    adserve_pace_update(&li.li, &li.pace, &d, S0 + 540, 10);
    ok(near(share(&li), 90.0 / 3000, 1e-9), "EVEN: horizon measured (30 s): allow = 90 / 3000 (%g)",
       share(&li));
    is_int(li.pace.budget, 136, "EVEN: budget = ceil(90 x share 1 x 1.5 + 1) = 136");

    /* wanting more than the opportunities: all of them */
    li.pace.opp = 50;
    li.pace.pushed = 50;
    d = dv(490, 0, 0, 490, 54050);
    adserve_pace_update(&li.li, &li.pace, &d, S0 + 570, 10);
    is_int(li.pace.allow, UINT32_MAX, "EVEN: want (110) above the opportunities (50): allow all");

    /* counters late (no new opportunity): take what comes, up to the want */
    d = dv(500, 0, 0, 500, 54050);
    adserve_pace_update(&li.li, &li.pace, &d, S0 + 580, 10);
    ok(li.pace.allow == UINT32_MAX && li.pace.budget == 1000 * 590 / 1000 - 500,
       "EVEN: no opportunity counted since: allow all, budget = want (%u)", li.pace.budget);

    /* ahead of schedule: nothing */
    li = mk(ADSERVE_COST_CPM, ADSERVE_GOAL_IMPRESSIONS, 1000, ADSERVE_DELIVERY_EVEN,
            S0, S0 + 1000);
    d = dv(600, 0, 0, 600, 1000);
    adserve_pace_update(&li.li, &li.pace, &d, S0 + 500, 10);
    ok(li.pace.allow == 0 && li.pace.budget == 0 && !li.pace.stopped,
       "EVEN ahead of schedule (600 at half time): allow 0, budget 0, not stopped");
    ok(!adserve_pace_allows(&li.pace, 0), "ahead of schedule: pace_allows never");
    d = dv(510, 0, 0, 510, 1000);
    adserve_pace_update(&li.li, &li.pace, &d, S0 + 500, 10);
    is_int(li.pace.budget, 0, "EVEN exactly on the schedule (want 0): budget 0");

    /* before the flight: frac 0; after it: the whole rest */
    li = mk(ADSERVE_COST_CPM, ADSERVE_GOAL_IMPRESSIONS, 1000, ADSERVE_DELIVERY_EVEN,
            S0, S0 + 1000);
    d = dv(0, 0, 0, 0, 0);
    adserve_pace_update(&li.li, &li.pace, &d, S0 - 100, 10);
    is_int(li.pace.budget, 0, "EVEN before the flight: nothing wanted");
    li = mk(ADSERVE_COST_CPM, ADSERVE_GOAL_IMPRESSIONS, 1000, ADSERVE_DELIVERY_EVEN,
            S0, S0 + 1000);
    d = dv(0, 0, 0, 0, 0);
    adserve_pace_update(&li.li, &li.pace, &d, S0 - 5, 10);
    is_int(li.pace.budget, 5, "EVEN starting inside the horizon: 5 s of it, 5 wanted");
    li = mk(ADSERVE_COST_CPM, ADSERVE_GOAL_IMPRESSIONS, 1000, ADSERVE_DELIVERY_EVEN,
            S0, S0 + 1000);
    d = dv(700, 0, 0, 700, 0);
    adserve_pace_update(&li.li, &li.pace, &d, S0 + 995, 10);
    is_int(li.pace.budget, 300, "EVEN at the end: frac capped at 1, the rest (300)");
}

static void test_asap_and_open(void) {
    tli_t li;
    adserve_delivered_t d;

    li = mk(ADSERVE_COST_CPM, ADSERVE_GOAL_IMPRESSIONS, 1000, ADSERVE_DELIVERY_ASAP,
            S0, S0 + 1000);
    d = dv(400, 0, 0, 400, 100);
    adserve_pace_update(&li.li, &li.pace, &d, S0 + 10, 10);
    ok(li.pace.allow == UINT32_MAX && li.pace.budget == 600,
       "ASAP first update: want = the rest of the goal, 600, whatever the time (budget %u)",
       li.pace.budget);
    li.pace.opp = 2000;
    li.pace.pushed = 2000;
    d = dv(400, 0, 0, 400, 2100);
    adserve_pace_update(&li.li, &li.pace, &d, S0 + 20, 10);
    ok(near(share(&li), 0.3, 1e-9), "ASAP: allow = 600 / 2000 opportunities (%g)", share(&li));
    is_int(li.pace.budget, 600, "ASAP: budget 600 x 1.5 + 1, capped at the rest of the goal (600)");

    /* open-ended EVEN behaves like ASAP */
    li = mk(ADSERVE_COST_CPM, ADSERVE_GOAL_IMPRESSIONS, 1000, ADSERVE_DELIVERY_EVEN,
            S0, INT64_MAX);
    d = dv(400, 0, 0, 400, 100);
    adserve_pace_update(&li.li, &li.pace, &d, S0 + 10, 10);
    is_int(li.pace.budget, 600, "EVEN without an end: the rest of the goal, as ASAP");
    li = mk(ADSERVE_COST_CPM, ADSERVE_GOAL_IMPRESSIONS, 1000, ADSERVE_DELIVERY_EVEN,
            INT64_MIN, S0 + 1000);
    d = dv(400, 0, 0, 400, 100);
    adserve_pace_update(&li.li, &li.pace, &d, S0 + 10, 10);
    is_int(li.pace.budget, 600, "EVEN without a start: the rest of the goal, as ASAP");
    li = mk(ADSERVE_COST_CPM, ADSERVE_GOAL_IMPRESSIONS, 1000, ADSERVE_DELIVERY_EVEN,
            INT64_MIN, INT64_MAX);
    adserve_pace_update(&li.li, &li.pace, &d, S0 + 10, 10);
    is_int(li.pace.budget, 600, "EVEN with an open flight: the rest of the goal, as ASAP");

    /* a huge goal saturates */
    li = mk(ADSERVE_COST_CPM, ADSERVE_GOAL_IMPRESSIONS, 1000000000000ULL, ADSERVE_DELIVERY_ASAP,
            INT64_MIN, INT64_MAX);
    d = dv(0, 0, 0, 0, 0);
    adserve_pace_update(&li.li, &li.pace, &d, S0, 10);
    is_int(li.pace.budget, UINT32_MAX, "a goal beyond 32 bits: budget saturates at UINT32_MAX");
}

static void test_yield(void) {
    tli_t li;
    adserve_delivered_t d;

#define ASAP_IMP(goal) mk(ADSERVE_COST_CPM, ADSERVE_GOAL_IMPRESSIONS, goal, \
                          ADSERVE_DELIVERY_ASAP, INT64_MIN, INT64_MAX)

    /* half the ads become impressions: twice the ads for the want */
    li = ASAP_IMP(1000);
    d = dv(500, 0, 0, 1000, 0);
    adserve_pace_update(&li.li, &li.pace, &d, S0, 10);
    is_int(li.pace.budget, 1000, "yield 0.5: 500 impressions wanted = 1000 ads");
    li.pace.opp = 4000;
    li.pace.pushed = 4000;
    d = dv(500, 0, 0, 1000, 4000);
    adserve_pace_update(&li.li, &li.pace, &d, S0 + 10, 10);
    ok(near(share(&li), 0.25, 1e-9), "yield 0.5: allow = 1000 ads / 4000 opportunities (%g)",
       share(&li));

    li = ASAP_IMP(1000);
    d = dv(10, 0, 0, 1000, 0);
    adserve_pace_update(&li.li, &li.pace, &d, S0, 10);
    is_int(li.pace.budget, 19800, "yield 0.01 floored at 0.05: 990 / 0.05 = 19800 ads");

    li = ASAP_IMP(1000);
    d = dv(10, 0, 0, 99, 0);
    adserve_pace_update(&li.li, &li.pace, &d, S0, 10);
    is_int(li.pace.budget, 990, "under 100 ads the yield is taken as 1");

    li = ASAP_IMP(1000);
    d = dv(300, 0, 0, 200, 0);
    adserve_pace_update(&li.li, &li.pace, &d, S0, 10);
    is_int(li.pace.budget, 700, "more impressions than ads (late events): yield capped at 1");

    /* a clicks goal turns clicks into ads by the observed clicks per ad */
    li = mk(ADSERVE_COST_CPC, ADSERVE_GOAL_CLICKS, 100, ADSERVE_DELIVERY_ASAP,
            INT64_MIN, INT64_MAX);
    d = dv(9000, 9, 0, 9000, 0);
    adserve_pace_update(&li.li, &li.pace, &d, S0, 10);
    is_int(li.pace.budget, 91000, "clicks goal: 91 clicks at (9 + 1) / (9000 + 1000) per ad = 91000 ads");
    d = dv(0, 0, 0, 0, 0);
    adserve_pace_update(&li.li, &li.pace, &d, S0 + 10, 10);
    is_int(li.pace.budget, 100000, "clicks goal, nothing delivered: the prior, 1 click per 1000 ads");
    d = dv(1000000000, 0, 0, 1000000000, 0);
    adserve_pace_update(&li.li, &li.pace, &d, S0 + 20, 10);
    is_int(li.pace.budget, 10000000, "clicks goal: clicks per ad floored at 1e-5");
    li = mk(ADSERVE_COST_CPC, ADSERVE_GOAL_CLICKS, 10000, ADSERVE_DELIVERY_ASAP,
            INT64_MIN, INT64_MAX);
    d = dv(10, 5000, 0, 10, 0);
    adserve_pace_update(&li.li, &li.pace, &d, S0, 10);
    is_int(li.pace.budget, 5000, "clicks goal: clicks per ad capped at 1 (5000 wanted, 5000 ads)");
#undef ASAP_IMP
}

static void test_budget_share(void) {
    tli_t li;
    adserve_delivered_t d;

    li = mk(ADSERVE_COST_CPM, ADSERVE_GOAL_IMPRESSIONS, 1000, ADSERVE_DELIVERY_ASAP,
            INT64_MIN, INT64_MAX);
    d = dv(0, 0, 0, 0, 0);
    adserve_pace_update(&li.li, &li.pace, &d, S0, 10);

    /* this worker saw 250 of 1000 opportunities: a quarter of 1000, x 1.5 */
    li.pace.opp = 250;
    li.pace.pushed = 250;
    d = dv(0, 0, 0, 0, 1000);
    adserve_pace_update(&li.li, &li.pace, &d, S0 + 10, 10);
    is_int(li.pace.budget, 275, "budget: share 0.25 of 1000 ads x 1.5 + 1 = 376, capped at 1.1 x its share of the rest: 275");
    is_int(li.pace.allow, UINT32_MAX, "budget: want 1000 = opportunities: allow all");

    li.pace.opp = 10;
    li.pace.pushed = 10;
    d = dv(0, 0, 0, 0, 2000);
    adserve_pace_update(&li.li, &li.pace, &d, S0 + 20, 10);
    is_int(li.pace.budget, 56, "budget: share 0.01 floored at 0.05: capped at ceil(1000 x 0.05 x 1.1) = 56 (rounding up)");

    li.pace.opp = 5000;
    li.pace.pushed = 5000;
    d = dv(0, 0, 0, 0, 3000);
    adserve_pace_update(&li.li, &li.pace, &d, S0 + 30, 10);
    is_int(li.pace.budget, 1000, "budget: share above 1 counts as 1: 1501, capped at the rest (1000)");

    /* the budget stops a worker within an interval */
    li.pace.served = 999;
    ok(adserve_pace_allows(&li.pace, 0), "budget: 999 of 1000 served: allowed");
    li.pace.served = 1000;
    ok(!adserve_pace_allows(&li.pace, 0), "budget: 1000 of 1000 served: refused");

    /* allow against rnd */
    li.pace.served = 0;
    li.pace.allow = 1000;
    ok(adserve_pace_allows(&li.pace, 1000) && !adserve_pace_allows(&li.pace, 1001),
       "pace_allows: rnd <= allow");
}


/* ---- closed loop ------------------------------------------------------------ */

static uint64_t sim_state = 0x9e3779b97f4a7c15ULL;

/* xorshift64*: uniform 64 bits */
static uint64_t sim_next(void) {
    sim_state ^= sim_state >> 12;
    sim_state ^= sim_state << 25;
    sim_state ^= sim_state >> 27;
    return sim_state * 0x2545f4914f6cdd1dULL;
}

static double sim_uniform(void) {
    return (double) (sim_next() >> 11) / 9007199254740992.0;
}

/* Knuth's method: fine for a mean of a few */
static int sim_poisson(double mean) {
    double l = exp(-mean), p = 1;
    int k = 0;

    do {
        k++;
        p *= sim_uniform();
    } while (p > l);
    return k - 1;
}

static adserve_snapshot_t *sim_build(const char *li) {
    static const char *const recs[][2] = {
        { "u", "{\"id\":\"u1\",\"status\":\"ACTIVE\"}" },
        { "o", "{\"id\":\"o1\",\"status\":\"APPROVED\"}" },
        { "c", "{\"id\":\"c1\",\"approval\":\"APPROVED\",\"type\":\"IMAGE\",\"w\":300,"
               "\"h\":250,\"image_url\":\"https://cdn.example/c1.png\"}" },
        { "a", "{\"id\":\"a1\",\"line_item_id\":\"li\",\"creative_id\":\"c1\","
               "\"status\":\"ACTIVE\"}" },
    };
    static const adserve_kind_e kinds[] = {
        ADSERVE_KIND_AD_UNITS, ADSERVE_KIND_ORDERS, ADSERVE_KIND_CREATIVES, ADSERVE_KIND_LICAS
    };
    adserve_input_t in;
    adserve_snapshot_t *s;
    char err[256] = "";
    size_t i;

    adserve_input_init(&in);
    in.public_url = "https://ads.example";
    for (i = 0; i < 4; i++) {
        adserve_input_ref(&in, kinds[i], recs[i][1], strlen(recs[i][1]));
    }
    adserve_input_ref(&in, ADSERVE_KIND_LINE_ITEMS, li, strlen(li));
    s = adserve_snapshot_build(&in, err, sizeof(err));
    if (s == NULL) diag("build failed: %s", err);
    adserve_input_free(&in);
    return s;
}

typedef struct {
    uint64_t  delivered, at_half, opps, max_interval;
    int       over;                  /* delivered ever above the goal */
} sim_result_t;

/* One EVEN line item over a simulated day: traffic of mean rate(t) per
 * second (Poisson), every opportunity decided by adserve_decide, every ad
 * an impression at once (render = 1) or with probability render; the
 * worker pushes its opportunities and reads the counters every interval
 * seconds, as the module's pacing timer does (the first read at the
 * start, as after a snapshot swap). */
static sim_result_t simulate(uint64_t goal, double base, double swing, int interval,
    double render, uint64_t seed)
{
    adserve_snapshot_t *s;
    adserve_li_t *li;
    adserve_pace_t *paces, *pc;
    const adserve_unit_t *u;
    adserve_delivered_t d;
    adserve_decision_t dec;
    adserve_req_ctx_t ctx;
    sim_result_t r;
    uint64_t last = 0;
    int64_t t;
    int k, n;
    double rate;

    memset(&r, 0, sizeof(r));
    sim_state = seed;
    s = sim_build(
        "{\"id\":\"li\",\"order_id\":\"o1\",\"status\":\"ACTIVE\",\"type\":\"STANDARD\","
        "\"cost_type\":\"CPM\",\"rate\":1,\"goal\":{\"type\":\"IMPRESSIONS\",\"units\":10000},"
        "\"delivery\":\"EVEN\",\"start_at\":\"2025-06-01T00:00:00Z\","
        "\"end_at\":\"2025-06-02T00:00:00Z\",\"targeting\":{\"ad_units\":{\"include\":[\"u1\"]}}}");
    if (s == NULL) return r;
    li = adserve_snapshot_li(s, "li", 2);
    u = adserve_snapshot_unit(s, "u1", 2);
    if (li == NULL || u == NULL || li->goal != goal) {
        diag("simulation: the line item is not as expected");
        adserve_snapshot_free(s);
        return r;
    }

    paces = adserve_paces_new(s, NULL, NULL);
    if (paces == NULL) abort();
    pc = &paces[li - s->lis];
    memset(&d, 0, sizeof(d));
    adserve_req_ctx_init(&ctx, NULL);

    for (t = 0; t < DAY; t++) {
        if (t % interval == 0) {
            /* the timer: push this worker's opportunities, read, update */
            d.opp += pc->opp - pc->pushed;
            pc->pushed = pc->opp;
            adserve_pace_update(li, pc, &d, S0 + t, interval);
            if (d.imp - last > r.max_interval) r.max_interval = d.imp - last;
            last = d.imp;
        }
        if (t == DAY / 2) r.at_half = d.imp;

        rate = base * (1 + swing * sin(2 * M_PI * (double) t / DAY - M_PI / 2));
        n = sim_poisson(rate);
        for (k = 0; k < n; k++) {
            memset(&dec, 0, sizeof(dec));
            dec.now = S0 + t;
            dec.rnd = (uint32_t) (sim_next() >> 32);
            dec.facts = &ctx;
            dec.paces = paces;
            dec.caps_known = 1;
            r.opps++;
            if (adserve_decide(s, u, &dec) != NULL) {
                d.ads++;
                if (render >= 1 || sim_uniform() < render) d.imp++;
                if (d.imp > goal) r.over = 1;
            }
        }
    }

    /* the flight is over: nothing more may serve */
    memset(&dec, 0, sizeof(dec));
    dec.now = S0 + DAY;
    dec.facts = &ctx;
    dec.paces = paces;
    dec.caps_known = 1;
    if (adserve_decide(s, u, &dec) != NULL) r.over = 2;

    r.delivered = d.imp;
    free(paces);
    adserve_snapshot_free(s);
    return r;
}

static void test_closed_loop(void) {
    sim_result_t r;
    uint64_t lo = UINT64_MAX, hi = 0;
    int k, above = 0, outside = 0;

    /* 10000 impressions over a day; traffic 3 per second on average,
     * from 1.2 at midnight to 4.8 at noon; an update every 300 s */
    r = simulate(10000, 3, 0.6, 300, 1, 20250601);
    diag("closed loop: delivered %llu of 10000 (%.2f %%), %llu at noon (%.2f %% of the "
         "goal), %llu opportunities, at most %llu in one interval",
         (unsigned long long) r.delivered, r.delivered / 100.0,
         (unsigned long long) r.at_half, r.at_half / 100.0, (unsigned long long) r.opps,
         (unsigned long long) r.max_interval);
    ok(r.delivered >= 9500 && r.delivered <= 10500,
       "closed loop: final delivery within 5 %% of the goal (%llu)",
       (unsigned long long) r.delivered);
    /* Checked for fixed seeds (this one and the sweep below), not proved:
     * nothing stops a line item between two reads, and the last interval's
     * budget (1.5 x the rest + 1) could let that interval's binomial noise
     * through on another seed. */
    ok(r.delivered <= 10000 && r.over == 0,
       "closed loop: never above the goal, seed 20250601 (%llu)", (unsigned long long) r.delivered);
    ok(r.at_half >= 4750 && r.at_half <= 5250,
       "closed loop: EVEN: half the goal by half the flight, within 5 %% (%llu)",
       (unsigned long long) r.at_half);

    /* the same over 20 other seeds */
    for (k = 0; k < 20; k++) {
        r = simulate(10000, 3, 0.6, 300, 1, 1000 + (uint64_t) k * 7919);
        if (r.delivered < lo) lo = r.delivered;
        if (r.delivered > hi) hi = r.delivered;
        above += r.delivered > 10000 || r.over == 2;
        outside += r.delivered < 9500 || r.delivered > 10500;
    }
    diag("closed loop, 20 more seeds: delivered %llu .. %llu; above the goal in %d",
         (unsigned long long) lo, (unsigned long long) hi, above);
    is_int(outside, 0, "closed loop, 20 more seeds: every final delivery within 5 %% "
           "(%llu .. %llu)", (unsigned long long) lo, (unsigned long long) hi);
    is_int(above, 0, "closed loop, 20 more seeds: none above the goal (%llu .. %llu)",
           (unsigned long long) lo, (unsigned long long) hi);

    /* a fifth of the ads never rendered: the yield makes up for it */
    r = simulate(10000, 3, 0.6, 300, 0.8, 20250602);
    diag("closed loop, 80 %% of ads rendered: delivered %llu impressions", (unsigned long long) r.delivered);
    ok(r.delivered >= 9500 && r.delivered <= 10500,
       "closed loop, 80 %% of ads rendered: within 5 %% of the goal (%llu)",
       (unsigned long long) r.delivered);
}


int main(void) {
    alarm(600);
    test_init();
    test_unpaced();
    test_goal_reached();
    test_factors();
    test_even();
    test_horizon_bound();
    test_asap_and_open();
    test_yield();
    test_budget_share();
    test_closed_loop();
    return done_testing();
}
