/*
 * adserve_pacing: how fast a line item may serve, and what its clicks and
 * conversions are worth, from what it has delivered.
 *
 * Every adserve_pacing_interval each worker reads the delivered counts of
 * its line items (adserve:delivery, written by every worker of every node)
 * and updates each line item's adserve_pace_t:
 *
 *   - factor: eCPM per unit of bid. CPM 1; CPC the observed CTR x 1000 and
 *     CPA the observed conversions per impression x 1000, each with a prior
 *     (1 click in 1000 impressions, 1 conversion in 10000) so a new line
 *     item is neither ignored nor favoured before it has data.
 *   - stopped: the goal (impressions or clicks) is reached.
 *   - want: what it should deliver by the next update. EVEN: the goal spread
 *     over the flight, linearly: goal x (t + h - start) / (end - start) less
 *     what is delivered, h the time between updates (so a deficit is made up
 *     over the next interval, a surplus waits). ASAP, or EVEN with an open
 *     flight: the rest of the goal.
 *   - allow: the share of opportunities to take. Opportunities are the
 *     requests where the line item was eligible and reached, counted by every
 *     worker into adserve:delivery; want, turned into ads by the observed
 *     impressions (or clicks) per ad, over the opportunities of the last
 *     interval. Every worker computes the same share from the same counts.
 *   - budget: a local guard against overshoot while counts are late: this
 *     worker's share of the ads wanted (its share of opportunities, 1.5x),
 *     or, before any opportunity is known, all of them.
 *
 * Line items without a goal are not paced: they serve whenever they win.
 * Plain C, unit-tested (t/unit/pacing_test.c).
 */

#ifndef ADSERVE_PACING_H
#define ADSERVE_PACING_H

#include <stdint.h>

#include "adserve_snapshot.h"

#define ADSERVE_CTR_PRIOR_CLICKS       1.0
#define ADSERVE_CTR_PRIOR_IMPRESSIONS  1000.0
#define ADSERVE_CVR_PRIOR_CONVERSIONS  1.0
#define ADSERVE_CVR_PRIOR_IMPRESSIONS  10000.0

/* A new line item's pace: prior rates; a paced one waits for its first
 * update. */
void adserve_pace_init(const adserve_li_t *li, adserve_pace_t *p);

/* Updates li's pace from its delivered counts at time now (seconds);
 * horizon: the expected time to the next update, used until two updates
 * have measured it. */
void adserve_pace_update(const adserve_li_t *li, adserve_pace_t *p,
    const adserve_delivered_t *d, int64_t now, double horizon);

/* Whether pacing lets this opportunity through; rnd uniformly random. */
static inline int
adserve_pace_allows(const adserve_pace_t *p, uint32_t rnd)
{
    return p->served < p->budget && (p->allow == UINT32_MAX || rnd <= p->allow);
}

/* Whether a line item's pace carries over from o to li: the same rules
 * (goal, delivery, flight, cost type) computed it. */
int adserve_pace_carries(const adserve_li_t *o, const adserve_li_t *li);

/* Fills p, a worker's pace table for snapshot s (s->nlis entries, by index,
 * as adserve_decision_t.paces takes it), carried over from old's table
 * where adserve_pace_carries: a line item whose rules changed starts
 * afresh (and is read at once). When old is the snapshot s was built
 * after, the build's map (plan[].prev) says where each pace was, a copy per
 * line item; else each is looked up by id. old and old_paces may be NULL.
 * Returns how many paced line items are left without a known pace. */
uint32_t adserve_paces_fill(const adserve_snapshot_t *s, const adserve_snapshot_t *old,
    const adserve_pace_t *old_paces, adserve_pace_t *p);

/* The same, into a new table: malloc'd (free()); NULL when out of memory. */
adserve_pace_t *adserve_paces_new(const adserve_snapshot_t *s,
    const adserve_snapshot_t *old, const adserve_pace_t *old_paces);

#endif
