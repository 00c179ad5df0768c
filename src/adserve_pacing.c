/*
 * Pacing: see adserve_pacing.h for the model.
 */

#include <math.h>
#include <stdlib.h>

#include "adserve_pacing.h"


static double
rate_factor(int cost_type, const adserve_delivered_t *d)
{
    double  imp = d ? (double) d->imp : 0;

    switch (cost_type) {

    case ADSERVE_COST_CPC:
        return 1000.0 * ((d ? (double) d->clk : 0) + ADSERVE_CTR_PRIOR_CLICKS)
               / (imp + ADSERVE_CTR_PRIOR_IMPRESSIONS);

    case ADSERVE_COST_CPA:
        return 1000.0 * ((d ? (double) d->conv : 0) + ADSERVE_CVR_PRIOR_CONVERSIONS)
               / (imp + ADSERVE_CVR_PRIOR_IMPRESSIONS);

    default:
        return 1.0;
    }
}


/* a line item's pace before any update: what it costs and whether it
 * is paced is all it depends on */
static void
pace_start(int cost_type, int paced, adserve_pace_t *p)
{
    p->factor = rate_factor(cost_type, NULL);
    p->allow = paced ? 0 : UINT32_MAX;
    p->budget = paced ? 0 : UINT32_MAX;
    p->opp = 0;
    p->pushed = 0;
    p->served = 0;
    p->stopped = 0;
    p->known = 0;
    p->read_at = 0;
    p->read_opp = 0;
}


void
adserve_pace_init(const adserve_li_t *li, adserve_pace_t *p)
{
    pace_start(li->cost_type, li->paced, p);
}


/* units of the goal delivered per ad served: impressions per ad (not every
 * ad is rendered), or clicks per ad, each once there is enough to tell */
static double
yield(const adserve_li_t *li, const adserve_delivered_t *d)
{
    double  y;

    if (li->goal_type == ADSERVE_GOAL_CLICKS) {
        y = ((double) d->clk + ADSERVE_CTR_PRIOR_CLICKS)
            / ((double) d->ads + ADSERVE_CTR_PRIOR_IMPRESSIONS);
        return y < 1e-5 ? 1e-5 : y > 1 ? 1 : y;
    }

    if (d->ads < 100) {
        return 1;
    }

    y = (double) d->imp / (double) d->ads;

    return y < 0.05 ? 0.05 : y > 1 ? 1 : y;
}


static uint32_t
to_u32(double v)
{
    return v >= 4294967295.0 ? UINT32_MAX : v <= 0 ? 0 : (uint32_t) ceil(v);
}


void
adserve_pace_update(const adserve_li_t *li, adserve_pace_t *p,
    const adserve_delivered_t *d, int64_t now, double horizon)
{
    double           delivered, want, ads, rest, opp, frac, share, cap;

    p->factor = rate_factor(li->cost_type, d);

    if (!li->paced) {
        goto done;
    }

    delivered = (double) (li->goal_type == ADSERVE_GOAL_CLICKS ? d->clk : d->imp);

    if (delivered >= (double) li->goal) {
        p->stopped = 1;
        p->allow = 0;
        p->budget = 0;
        goto done;
    }

    p->stopped = 0;

    if (p->known && now > p->read_at) {
        horizon = (double) (now - p->read_at);
    }

    /* a worker that stalled, or a clock that stepped forward, must not
     * open a whole stretch of the flight to one interval */
    if (li->start != INT64_MIN && li->end != INT64_MAX
        && horizon > ((double) li->end - (double) li->start) / 24)
    {
        horizon = ((double) li->end - (double) li->start) / 24;
    }

    if (horizon > 3600) {
        horizon = 3600;
    }

    if (li->delivery == ADSERVE_DELIVERY_EVEN && li->start != INT64_MIN
        && li->end != INT64_MAX)
    {
        frac = ((double) now + horizon - (double) li->start)
               / ((double) li->end - (double) li->start);
        frac = frac < 0 ? 0 : frac > 1 ? 1 : frac;
        want = (double) li->goal * frac - delivered;

    } else {
        want = (double) li->goal - delivered;
    }

    if (want <= 0) {
        p->allow = 0;
        p->budget = 0;
        goto done;
    }

    ads = want / yield(li, d);
    rest = ((double) li->goal - delivered) / yield(li, d);
    opp = p->known && d->opp > p->read_opp ? (double) (d->opp - p->read_opp) : 0;

    if (opp > 0) {
        p->allow = ads >= opp ? UINT32_MAX : (uint32_t) (ads / opp * 4294967295.0);
        share = (double) p->opp / opp;
        share = share < 0.05 ? 0.05 : share > 1 ? 1 : share;

        /* slack for the randomness of one interval, but never this
         * worker's share of the rest of the goal: the goal is passed by
         * at most one ad per worker */
        cap = ceil(rest * (share * 1.1 > 1 ? 1 : share * 1.1));
        p->budget = to_u32(ads * share * 1.5 + 1);
        if ((double) p->budget > cap) {
            p->budget = to_u32(cap);
        }

    } else {
        /* nothing measured yet: take what comes, up to what is wanted */
        p->allow = UINT32_MAX;
        p->budget = to_u32(ads < rest ? ads : rest);
    }

done:

    p->known = 1;
    p->read_at = now;
    p->read_opp = d->opp;
    p->opp -= p->pushed;              /* what came after the push stays */
    p->pushed = 0;
    p->served = 0;
}


int
adserve_pace_carries(const adserve_li_t *o, const adserve_li_t *li)
{
    return o->paced == li->paced && o->cost_type == li->cost_type
           && o->goal_type == li->goal_type && o->goal == li->goal
           && o->delivery == li->delivery
           && o->start == li->start && o->end == li->end;
}


uint32_t
adserve_paces_fill(const adserve_snapshot_t *s, const adserve_snapshot_t *old,
    const adserve_pace_t *old_paces, adserve_pace_t *p)
{
    const adserve_pace_plan_t  *pl;
    const adserve_li_t         *li, *o;
    uint32_t                    i, k, unknown = 0;
    int                         mapped = old != NULL && old == s->prev;

    if (old_paces == NULL) {
        old = NULL;
    }

    for (i = 0; i < s->nlis; i++) {
        pl = &s->plan[i];
        pace_start(pl->cost_type, pl->paced, &p[i]);

        /* an unpaced CPM line item's pace never moves from its start:
         * nothing to carry over (most line items) */
        if (!pl->paced && pl->cost_type == ADSERVE_COST_CPM) {
            continue;
        }

        k = ADSERVE_LI_NONE;

        if (old == NULL) {
            /* void */

        } else if (mapped) {
            /* the builder looked it up, off every worker's event loop */
            k = pl->prev;

        } else {
            li = &s->lis[i];
            o = adserve_snapshot_li(old, li->id.data, li->id.len);
            k = o != NULL && adserve_pace_carries(o, li)
                ? (uint32_t) (o - old->lis) : ADSERVE_LI_NONE;
        }

        if (k != ADSERVE_LI_NONE && old_paces[k].known) {
            p[i] = old_paces[k];
        }

        unknown += pl->paced && !p[i].known;
    }

    return unknown;
}


adserve_pace_t *
adserve_paces_new(const adserve_snapshot_t *s, const adserve_snapshot_t *old,
    const adserve_pace_t *old_paces)
{
    adserve_pace_t  *p;

    p = malloc((s->nlis ? s->nlis : 1) * sizeof(adserve_pace_t));
    if (p != NULL) {
        (void) adserve_paces_fill(s, old, old_paces, p);
    }

    return p;
}
