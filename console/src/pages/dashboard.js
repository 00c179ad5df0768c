// The dashboard: traffic over the last 24 hours, hour by hour, from
// GET /api/metrics (admins and operators: the ad units' rows, with
// requests and fill rate; an advertiser: its own advertiser's rows);
// today's pacing of the line items with a goal and, for one of them at a
// time, its delivery chart; and (admins and operators) today's ad sources
// from GET /api/dashboard and their figures over time. Every chart is
// given as a table too, for screen readers and keyboards.
import { useEffect, useState } from 'preact/hooks';
import { Link } from 'wouter-preact';
import { html } from '../html.js';
import { api } from '../api.js';
import { useSession } from '../session.js';
import { LineChart, iso, percent, utc } from '../chart.js';
import { LineItemDelivery } from './delivery.js';
import { SourcesOverTime } from './ad-source-figures.js';

const COUNTS = ['requests', 'ads', 'impressions', 'clicks'];
const COLORS = { requests: '#7a3e9d', ads: '#555', impressions: '#1d5fbf', clicks: '#b3541e', fill_rate: '#1e6b35', ctr: '#b3541e' };
const ratio = (a, b) => (b > 0 ? a / b : null);

// rows summed per hour, every hour of the window present; requests only
// where the rows have them (ad units)
function hourly(rows, first, hours, withRequests) {
    const times = Array.from({ length: hours }, (_, i) => first / 1000 + i * 3600);
    const counts = withRequests ? COUNTS : COUNTS.slice(1);
    const sums = Object.fromEntries(counts.map((s) => [s, times.map(() => 0)]));
    for (const r of rows) {
        const i = (Date.parse(r.time) - first) / 3600e3;
        if (i >= 0 && i < hours) for (const s of counts) sums[s][i] += r[s] || 0;
    }
    if (withRequests) sums.fill_rate = times.map((_, i) => ratio(sums.ads[i], sums.requests[i]));
    sums.ctr = times.map((_, i) => ratio(sums.clicks[i], sums.impressions[i]));
    return { times, sums, counts };
}

function Traffic({ staff }) {
    const [data, setData] = useState(null);
    const [error, setError] = useState(null);
    useEffect(() => {
        const first = Math.floor(Date.now() / 3600e3) * 3600e3 - 23 * 3600e3;
        const q = new URLSearchParams({ group_by: staff ? 'ad_unit' : 'advertiser', granularity: 'hour', from: iso(first) });
        api('GET', `/api/metrics?${q}`).then((d) => setData(hourly(d.rows, first, 24, staff)), (e) => setError(e.message));
    }, [staff]);
    if (error) return html`<p class="error" role="alert">${error}</p>`;
    if (!data) return html`<p role="status">Loading…</p>`;
    const total = (s) => data.sums[s].reduce((a, b) => a + b, 0);
    const rates = staff ? ['fill_rate', 'ctr'] : ['ctr'];
    const rateLabel = { fill_rate: 'fill rate', ctr: 'CTR' };
    const x = data.times;
    return html`
        <dl class="totals" aria-label="The last 24 hours">
            ${data.counts.map((s) => html`<div><dt>${s}</dt><dd data-metric=${s}>${total(s)}</dd></div>`)}
            ${staff && html`<div><dt>fill rate</dt><dd data-metric="fill_rate">${percent(ratio(total('ads'), total('requests')))}</dd></div>`}
            <div><dt>CTR</dt><dd data-metric="ctr">${percent(ratio(total('clicks'), total('impressions')))}</dd></div>
        </dl>
        <figure class="delivery traffic">
            <figcaption>${staff ? 'Requests, ads, impressions and clicks' : 'Ads, impressions and clicks'} over the last 24 hours, per hour (UTC)</figcaption>
            <${LineChart} x=${x} axes=${{ y: 'count' }} series=${data.counts.map((s) => ({ label: s, values: data.sums[s], color: COLORS[s] }))} />
        </figure>
        <figure class="delivery rates">
            <figcaption>${staff ? 'Fill rate and CTR' : 'CTR'} over the last 24 hours, per hour (UTC)</figcaption>
            <${LineChart} x=${x} axes=${{ y: 'rate' }} yFormat=${(v) => `${+(v * 100).toFixed(1)} %`} height=${180}
                series=${rates.map((s) => ({ label: rateLabel[s], values: data.sums[s], color: COLORS[s] }))} />
            <details><summary>The same figures as a table</summary>
                <div class="table-wrap"><table class="numbers" id="traffic-table">
                    <caption>Traffic per hour (UTC)</caption>
                    <thead><tr><th scope="col">Hour</th>${data.counts.map((s) => html`<th scope="col">${s}</th>`)}
                        ${rates.map((s) => html`<th scope="col">${rateLabel[s]}</th>`)}</tr></thead>
                    <tbody>${x.map((t, i) => html`<tr data-time=${iso(t * 1000)}><th scope="row">${utc(t)}</th>
                        ${data.counts.map((s) => html`<td>${data.sums[s][i]}</td>`)}
                        ${rates.map((s) => html`<td>${percent(data.sums[s][i])}</td>`)}</tr>`)}</tbody>
                </table></div>
            </details>
        </figure>`;
}

const STATUS = { behind: 'Behind', ahead: 'Ahead', on_track: 'On track', complete: 'Complete' };
const num = (v) => (v === null || v === undefined ? '—' : v.toLocaleString('en'));

// today's pacing (GET /api/dashboard), and one line item's delivery chart
function Pacing({ pacing }) {
    const [chosen, setChosen] = useState(pacing.length ? pacing[0].line_item_id : '');
    const [record, setRecord] = useState(null);
    useEffect(() => {
        setRecord(null);
        if (chosen) api('GET', `/api/line-items/${chosen}`).then(setRecord, () => setRecord(null));
    }, [chosen]);
    if (!pacing.length) return html`<p>No active line item has an impressions or clicks goal.</p>`;
    return html`<div class="table-wrap"><table id="pacing-table">
            <caption>Active line items with a goal: delivered against the goal</caption>
            <thead><tr><th scope="col">Line item</th><th scope="col">Goal</th><th scope="col">Delivery</th><th scope="col">Delivered</th>
                <th scope="col">Expected now</th><th scope="col">Projected at the end</th><th scope="col">Status</th></tr></thead>
            <tbody>${pacing.map((p) => html`<tr key=${p.line_item_id} data-id=${p.line_item_id}>
                <th scope="row"><${Link} href=${`/line-items/${p.line_item_id}`}>${p.name || p.line_item_id}</${Link}></th>
                <td>${num(p.goal.units)} ${p.goal.type.toLowerCase()}</td><td>${p.delivery}</td>
                <td><meter min="0" max=${p.goal.units} value=${p.delivered} aria-hidden="true"></meter> ${num(p.delivered)}</td>
                <td>${num(p.expected_now)}</td><td>${num(p.projected_end)}</td>
                <td><span class="badge" data-pacing=${p.status}>${STATUS[p.status] || p.status}</span></td></tr>`)}</tbody>
        </table></div>
        <div class="field inline"><label for="pacing-chart-of">Delivery chart of</label>
            <select id="pacing-chart-of" value=${chosen} onChange=${(e) => setChosen(e.currentTarget.value)}>
                ${pacing.map((p) => html`<option value=${p.line_item_id}>${p.name || p.line_item_id}</option>`)}
            </select></div>
        ${record && html`<${LineItemDelivery} key=${record.id} lineItem=${record} headingLevel=${3} idPrefix="dashboard-delivery" />`}`;
}

const SOURCE_COLUMNS = ['bid_requests', 'bids', 'wins', 'timeouts', 'errors', 'blocked', 'impressions', 'clicks'];

function AdSourcesToday({ sources }) {
    if (!sources.length) return html`<p>No ad source has figures today.</p>`;
    return html`<div class="table-wrap"><table class="numbers" id="ad-sources-table">
        <caption>Today's auction per ad source (UTC day)</caption>
        <thead><tr><th scope="col">Ad source</th>${SOURCE_COLUMNS.map((c) => html`<th scope="col">${c.replace('_', ' ')}</th>`)}
            <th scope="col">revenue</th><th scope="col">eCPM</th><th scope="col">win rate</th></tr></thead>
        <tbody>${sources.map((s) => html`<tr key=${s.ad_source_id} data-id=${s.ad_source_id}>
            <th scope="row">${s.name ? html`<${Link} href=${`/ad-sources/${s.ad_source_id}`}>${s.name}</${Link}>` : `${s.ad_source_id} (deleted)`}</th>
            ${SOURCE_COLUMNS.map((c) => html`<td>${s[c]}</td>`)}
            <td>${s.revenue.toFixed(2)}</td><td>${s.ecpm === null ? '—' : s.ecpm.toFixed(2)}</td><td>${percent(s.win_rate)}</td></tr>`)}</tbody>
    </table></div>`;
}

export function Dashboard() {
    const user = useSession();
    const staff = user.role !== 'advertiser';
    const [dash, setDash] = useState(null);
    const [error, setError] = useState(null);
    useEffect(() => {
        api('GET', '/api/dashboard').then(setDash, (e) => setError(e.message));
    }, []);
    return html`<h1 tabindex="-1">Dashboard</h1>
        <section aria-labelledby="traffic-h"><h2 id="traffic-h">Traffic</h2><${Traffic} staff=${staff} /></section>
        <section aria-labelledby="pacing-h"><h2 id="pacing-h">Pacing</h2>
            ${error && html`<p class="error" role="alert">${error}</p>`}
            ${!dash && !error && html`<p role="status">Loading…</p>`}
            ${dash && html`<${Pacing} pacing=${dash.pacing || []} />`}
        </section>
        ${staff && html`<section aria-labelledby="ad-sources-h"><h2 id="ad-sources-h">Ad sources</h2>
            ${dash && html`<${AdSourcesToday} sources=${dash.ad_sources || []} />`}
            <h3>Over time</h3>
            <${SourcesOverTime} />
        </section>`}`;
}
