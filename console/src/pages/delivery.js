// A line item's delivery against its goal over its flight: the impressions
// (or clicks, for a CLICKS goal) delivered so far, cumulative, from
// GET /api/metrics?group_by=line_item&line_item_id=, hour by hour for a
// flight of up to three days and day by day beyond; the goal; and, for an
// EVEN line item with a start and an end, the pacing line: goal × the
// elapsed fraction of the flight, floored as the dashboard's expected_now.
// An order's is the sum of its line items' (&order_id=) over the span of
// their flights, against the sum of their goals when they all have one of
// the same kind; it has no pacing line (each line item paces on its own).
// Drawn with uPlot and given as a table too.
import { useEffect, useState } from 'preact/hooks';
import { html } from '../html.js';
import { api, listAll } from '../api.js';
import { LineChart, iso, utc } from '../chart.js';

const HOUR = 3600e3;
const DAY = 24 * HOUR;
const HOURLY_UP_TO = 3 * DAY;         // a longer flight is drawn day by day
const WINDOW_DAYS = 400;              // the API's longest window at day granularity

// what the chart shows: the flight (its start, or the record's creation;
// its end, or now), the bucket, the goal's metric, whether it is paced
export function deliveryPlan(li, now = Date.now()) {
    const start = Date.parse(li.start_at || li.created_at || '') || now - 30 * DAY;
    const end = li.end_at ? Date.parse(li.end_at) : Math.max(now, start + HOUR);
    const step = end - start <= HOURLY_UP_TO ? HOUR : DAY;
    const goal = li.goal && li.goal.type && li.goal.type !== 'NONE' && li.goal.units > 0 ? li.goal : null;
    return {
        start, end, step, granularity: step === HOUR ? 'hour' : 'day', goal,
        metric: goal && goal.type === 'CLICKS' ? 'clicks' : 'impressions',
        paced: !!(goal && li.start_at && li.end_at && (li.delivery || 'EVEN') === 'EVEN'),
        // the counters' window: whole buckets from the flight's, up to now or the end
        from: Math.floor(start / step) * step,
        to: Math.min(end, now),
    };
}

// the points: the flight's start, every bucket boundary inside the flight,
// now (while it runs) and its end. At each, what was delivered before it
// (null after now) and the even pace (null unless paced)
export function deliveryPoints(plan, rows, now = Date.now()) {
    const { start, end, step, from, goal, paced, metric } = plan;
    const perBucket = new Map();
    for (const r of rows) {
        const t = Date.parse(r.time);
        perBucket.set(t, (perBucket.get(t) || 0) + (r[metric] || 0));
    }
    const at = new Set([start, end]);
    for (let b = from + step; b < end; b += step) if (b > start) at.add(b);
    if (now > start && now < end) at.add(now);
    const times = [...at].sort((a, b) => a - b);
    const buckets = [...perBucket.keys()].sort((a, b) => a - b);
    let prev = 0;
    return times.map((t) => {
        const delivered = t > now ? null : buckets.filter((b) => b < t).reduce((s, b) => s + perBucket.get(b), 0);
        const fraction = Math.min(Math.max((t - start) / (end - start), 0), 1);
        const point = {
            t, delivered,
            period: delivered === null ? null : delivered - prev,
            pace: paced ? Math.floor(goal.units * fraction) : null,
        };
        if (delivered !== null) prev = delivered;
        return point;
    });
}

// What an order's chart shows, as a line item's flight and goal: from the
// earliest start (or creation) of its line items to the latest end (open
// when one has none), the sum of their goals when every one has a goal of
// the same kind, and never a pacing line
export function orderFlight(order, lineItems) {
    const at = (v) => { const t = Date.parse(v || ''); return Number.isFinite(t) ? t : null; };
    const starts = lineItems.map((li) => at(li.start_at) ?? at(li.created_at)).filter((t) => t !== null);
    const ends = lineItems.map((li) => at(li.end_at));
    const goals = lineItems.map((li) => (li.goal && li.goal.type && li.goal.type !== 'NONE' && li.goal.units > 0 ? li.goal : null));
    const common = goals.length > 0 && goals.every((g) => g && g.type === goals[0].type);
    return {
        start_at: starts.length ? iso(Math.min(...starts)) : null,
        end_at: ends.length && ends.every((t) => t !== null) ? iso(Math.max(...ends)) : null,
        created_at: order.created_at,
        goal: common ? { type: goals[0].type, units: goals.reduce((n, g) => n + g.units, 0) } : null,
        delivery: 'ASAP',
    };
}

async function deliveryRows(filter, plan) {
    if (plan.to <= plan.from) return [];
    const rows = [];
    const span = plan.granularity === 'day' ? WINDOW_DAYS * DAY : 31 * DAY;
    for (let from = plan.from; from < plan.to; from += span) {
        const q = new URLSearchParams({
            group_by: 'line_item', ...filter, granularity: plan.granularity,
            from: iso(from), to: iso(Math.min(from + span, plan.to)),
        });
        rows.push(...(await api('GET', `/api/metrics?${q}`)).rows);
    }
    return rows;
}

const count = (v) => (v === null || v === undefined ? '—' : v.toLocaleString('en'));

export function LineItemDelivery({ lineItem, headingLevel = 2, idPrefix = 'delivery' }) {
    const load = async (now) => {
        const plan = deliveryPlan(lineItem, now);
        return { plan, flight: lineItem, points: deliveryPoints(plan, await deliveryRows({ line_item_id: lineItem.id }, plan), now) };
    };
    return html`<${Delivery} load=${load} headingLevel=${headingLevel} idPrefix=${idPrefix} title="Delivery against the goal"
        deps=${[lineItem.id, lineItem.start_at, lineItem.end_at, lineItem.goal && lineItem.goal.units, lineItem.goal && lineItem.goal.type, lineItem.delivery]} />`;
}

export function OrderDelivery({ order, headingLevel = 2, idPrefix = 'order-delivery' }) {
    const load = async (now) => {
        const lineItems = await listAll(`/api/line-items?order_id=${encodeURIComponent(order.id)}`);
        const flight = orderFlight(order, lineItems);
        const plan = deliveryPlan(flight, now);
        const rows = await deliveryRows({ order_id: order.id }, plan);
        return { plan, flight, order: lineItems.length, points: deliveryPoints(plan, rows, now) };
    };
    return html`<${Delivery} load=${load} headingLevel=${headingLevel} idPrefix=${idPrefix} title="Delivery of its line items"
        deps=${[order.id]} />`;
}

// The chart and its table, of what load(now) resolves to: {plan, flight,
// points}, and for an order its number of line items
function Delivery({ load, deps, headingLevel, idPrefix, title }) {
    const [data, setData] = useState(null);
    const [error, setError] = useState(null);
    useEffect(() => {
        setData(null);
        setError(null);
        const now = Date.now();
        load(now).then((d) => setData({ ...d, now }), (e) => setError(e.message));
    }, deps);

    const H = `h${headingLevel}`;
    const hid = `${idPrefix}-h`;
    const heading = html`<${H} id=${hid}>${title}</${H}>`;
    if (error) return html`<section aria-labelledby=${hid}>${heading}<p class="error" role="alert">${error}</p></section>`;
    if (!data) return html`<section aria-labelledby=${hid}>${heading}<p role="status">Loading the delivery…</p></section>`;

    const ofOrder = data.order !== undefined;
    if (ofOrder && data.order === 0) {
        return html`<section aria-labelledby=${hid}>${heading}<p>No line item yet: nothing to deliver.</p></section>`;
    }
    const { plan, points, now, flight } = data;
    const { goal, metric, paced } = plan;
    const noPace = ofOrder ? 'each line item paces on its own'
        : flight.start_at && flight.end_at ? 'delivery ASAP' : 'the flight is open';
    const day = plan.granularity === 'day';
    const last = points.filter((p) => p.delivered !== null).pop();
    const delivered = last ? last.delivered : 0;
    const series = [{ label: `${metric} delivered`, values: points.map((p) => p.delivered), color: '#1d5fbf' }];
    if (paced) series.push({ label: 'even pace', values: points.map((p) => p.pace), color: '#b3541e', dash: [6, 4] });
    if (goal) series.push({ label: 'goal', values: points.map(() => goal.units), color: '#1e6b35', dash: [2, 4] });
    const x = points.map((p) => p.t / 1000);
    const paceNow = paced ? points.find((p) => p.t === Math.min(Math.max(now, plan.start), plan.end)) : null;
    const summary = [
        goal ? `${count(delivered)} of ${count(goal.units)} ${metric} delivered (${((delivered / goal.units) * 100).toFixed(1)} %)`
             : `${count(delivered)} ${metric} delivered`,
        ofOrder ? ` by its ${data.order} line item${data.order === 1 ? '' : 's'}` : '',
        goal ? '' : `; ${ofOrder ? 'no common goal' : 'no goal'}`,
        paceNow ? `; the even pace is at ${count(paceNow.pace)} ${now < plan.end ? 'now' : 'at the end'}` : '',
        goal && !paced ? `; no pacing line (${noPace})` : '',
        '.',
        now < plan.start ? ` The flight starts ${utc(plan.start / 1000)} UTC.` : '',
    ].join('');
    return html`<section aria-labelledby=${hid} class=${ofOrder ? 'order-delivery' : 'line-item-delivery'} data-goal-metric=${metric} data-granularity=${plan.granularity}>
        ${heading}
        <p class="summary">${summary}</p>
        <figure class="delivery">
            <figcaption>Cumulative ${metric} from ${utc(plan.start / 1000)} to ${utc(plan.end / 1000)} UTC, ${day ? 'day' : 'hour'} by ${day ? 'day' : 'hour'}${goal ? `, against a goal of ${count(goal.units)}` : ''}</figcaption>
            <${LineChart} x=${x} series=${series} axes=${{ y: metric }} />
            <details><summary>The same figures as a table</summary>
                <div class="table-wrap"><table class="numbers" id=${`${idPrefix}-table`}>
                    <caption>${metric} delivered${paced ? ' and the even pace' : ''}, at each ${day ? 'day' : 'hour'} of the flight (UTC)</caption>
                    <thead><tr><th scope="col">Time</th><th scope="col">In the period</th><th scope="col">Delivered so far</th>
                        ${paced && html`<th scope="col">Even pace</th>`}${goal && html`<th scope="col">Goal</th>`}</tr></thead>
                    <tbody>${points.map((p) => html`<tr data-time=${iso(p.t)} data-delivered=${p.delivered ?? ''} data-pace=${p.pace ?? ''}>
                        <th scope="row">${utc(p.t / 1000)}${p.t === now ? ' (now)' : ''}</th>
                        <td>${count(p.period)}</td><td>${count(p.delivered)}</td>
                        ${paced && html`<td>${count(p.pace)}</td>`}${goal && html`<td>${count(goal.units)}</td>`}</tr>`)}</tbody>
                </table></div>
            </details>
        </figure>
    </section>`;
}
