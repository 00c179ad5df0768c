// The auction per ad source over time (admins and operators: advertisers
// get a 403 for group_by=ad_source), from GET /api/metrics?group_by=ad_source:
// on the dashboard every source, one metric at a time; on a source's page
// that source, its bid requests, bids and wins, and its revenue and win
// rate. Each chart is given as a table too.
import { useEffect, useState } from 'preact/hooks';
import { html } from '../html.js';
import { api } from '../api.js';
import { LineChart, iso, percent, utc } from '../chart.js';

const HOUR = 3600e3;
const DAY = 24 * HOUR;
const PERIODS = {
    day: { label: 'The last 24 hours, hour by hour', step: HOUR, buckets: 24, granularity: 'hour' },
    month: { label: 'The last 30 days, day by day', step: DAY, buckets: 30, granularity: 'day' },
};
export const SOURCE_METRICS = {
    revenue: { label: 'Revenue', format: (v) => (v === null ? '—' : v.toFixed(2)) },
    win_rate: { label: 'Win rate (wins / bids)', format: percent, rate: true },
    bid_requests: { label: 'Bid requests', format: String },
    bids: { label: 'Bids', format: String },
    wins: { label: 'Wins', format: String },
    impressions: { label: 'Impressions', format: String },
    timeouts: { label: 'Timeouts', format: String },
    errors: { label: 'Errors', format: String },
};
const COLORS = ['#1d5fbf', '#b3541e', '#1e6b35', '#7a3e9d', '#555', '#a4262c', '#0f7b8a', '#8a6d00'];

// every bucket of the period, and the rows by source and bucket
function useSourceRows(period, sourceId) {
    const [data, setData] = useState(null);
    const [error, setError] = useState(null);
    useEffect(() => {
        const p = PERIODS[period];
        const first = Math.floor(Date.now() / p.step) * p.step - (p.buckets - 1) * p.step;
        const q = new URLSearchParams({ group_by: 'ad_source', granularity: p.granularity, from: iso(first) });
        if (sourceId) q.set('ad_source_id', sourceId);
        setData(null);
        api('GET', `/api/metrics?${q}`).then((d) => {
            const times = Array.from({ length: p.buckets }, (_, i) => first + i * p.step);
            const sources = new Map();              // id -> {name, byTime: Map(ms -> row)}
            for (const r of d.rows) {
                if (!sources.has(r.ad_source_id)) sources.set(r.ad_source_id, { id: r.ad_source_id, name: r.name, byTime: new Map() });
                sources.get(r.ad_source_id).byTime.set(Date.parse(r.time), r);
            }
            setData({ times, sources: [...sources.values()], day: p.granularity === 'day' });
        }, (e) => setError(e.message));
    }, [period, sourceId]);
    return [data, error];
}

// a counter's value in a bucket without a row is 0; a rate's is none
const valueOf = (row, metric) => (row ? row[metric] : SOURCE_METRICS[metric].rate ? null : 0);
const nameOf = (s) => s.name || `${s.id.slice(0, 8)}… (deleted)`;

function PeriodSelect({ id, period, setPeriod }) {
    return html`<div class="field inline"><label for=${id}>Period</label>
        <select id=${id} value=${period} onChange=${(e) => setPeriod(e.currentTarget.value)}>
            ${Object.entries(PERIODS).map(([k, p]) => html`<option value=${k}>${p.label}</option>`)}
        </select></div>`;
}

// the dashboard's: one metric, a series per source
export function SourcesOverTime() {
    const [period, setPeriod] = useState('day');
    const [metric, setMetric] = useState('revenue');
    const [data, error] = useSourceRows(period, null);
    const m = SOURCE_METRICS[metric];
    return html`<div class="sources-over-time">
        <div class="toolbar">
            <div class="field inline"><label for="sources-metric">Figure</label>
                <select id="sources-metric" value=${metric} onChange=${(e) => setMetric(e.currentTarget.value)}>
                    ${Object.entries(SOURCE_METRICS).map(([k, v]) => html`<option value=${k}>${v.label}</option>`)}
                </select></div>
            <${PeriodSelect} id="sources-period" period=${period} setPeriod=${setPeriod} />
        </div>
        ${error && html`<p class="error" role="alert">${error}</p>`}
        ${!data && !error && html`<p role="status">Loading…</p>`}
        ${data && (data.sources.length === 0 ? html`<p>No ad source has figures in this period.</p>` : html`<figure class="delivery">
            <figcaption>${m.label} per ad source, ${PERIODS[period].label.toLowerCase()} (UTC)</figcaption>
            <${LineChart} x=${data.times.map((t) => t / 1000)} axes=${{ y: m.rate ? 'win rate' : m.label.toLowerCase() }}
                yFormat=${m.rate ? (v) => `${Math.round(v * 100)} %` : undefined}
                series=${data.sources.map((s, i) => ({ label: nameOf(s), color: COLORS[i % COLORS.length],
                                                      values: data.times.map((t) => valueOf(s.byTime.get(t), metric)) }))} />
            <details><summary>The same figures as a table</summary>
                <div class="table-wrap"><table class="numbers" id="sources-over-time-table">
                    <caption>${m.label} per ad source and ${data.day ? 'day' : 'hour'} (UTC)</caption>
                    <thead><tr><th scope="col">${data.day ? 'Day' : 'Hour'}</th>${data.sources.map((s) => html`<th scope="col" data-id=${s.id}>${nameOf(s)}</th>`)}</tr></thead>
                    <tbody>${data.times.map((t) => html`<tr data-time=${iso(t)}><th scope="row">${utc(t / 1000, data.day)}</th>
                        ${data.sources.map((s) => html`<td>${m.format(valueOf(s.byTime.get(t), metric))}</td>`)}</tr>`)}</tbody>
                </table></div>
            </details>
        </figure>`)}
    </div>`;
}

const COUNTS = ['bid_requests', 'bids', 'wins', 'timeouts', 'errors', 'blocked', 'impressions'];

// an ad source's page: its auction over time
export function SourceOverTime({ sourceId }) {
    const [period, setPeriod] = useState('day');
    const [data, error] = useSourceRows(period, sourceId);
    const source = data && data.sources[0];
    const row = (t) => source && source.byTime.get(t);
    const col = (metric) => data.times.map((t) => (row(t) ? row(t)[metric] : (metric === 'win_rate' ? null : 0)));
    return html`<section aria-labelledby="source-figures-h" class="source-figures">
        <h2 id="source-figures-h">Auction figures</h2>
        <div class="toolbar"><${PeriodSelect} id="source-period" period=${period} setPeriod=${setPeriod} /></div>
        ${error && html`<p class="error" role="alert">${error}</p>`}
        ${!data && !error && html`<p role="status">Loading…</p>`}
        ${data && !source && html`<p>No figures for this ad source in this period.</p>`}
        ${source && html`<figure class="delivery">
            <figcaption>Bid requests, bids and wins, ${PERIODS[period].label.toLowerCase()} (UTC)</figcaption>
            <${LineChart} x=${data.times.map((t) => t / 1000)} axes=${{ y: 'count' }} series=${[
                { label: 'bid requests', values: col('bid_requests'), color: '#555' },
                { label: 'bids', values: col('bids'), color: '#1d5fbf' },
                { label: 'wins', values: col('wins'), color: '#1e6b35' },
            ]} />
        </figure>
        <figure class="delivery">
            <figcaption>Revenue and win rate, ${PERIODS[period].label.toLowerCase()} (UTC)</figcaption>
            <${LineChart} x=${data.times.map((t) => t / 1000)} axes=${{ y: 'revenue', r: 'win rate' }}
                rFormat=${(v) => `${Math.round(v * 100)} %`} series=${[
                { label: 'revenue', values: col('revenue'), color: '#b3541e' },
                { label: 'win rate', values: col('win_rate'), color: '#7a3e9d', scale: 'r', dash: [6, 4] },
            ]} />
            <details><summary>The same figures as a table</summary>
                <div class="table-wrap"><table class="numbers" id="source-figures-table">
                    <caption>The auction per ${data.day ? 'day' : 'hour'} (UTC)</caption>
                    <thead><tr><th scope="col">${data.day ? 'Day' : 'Hour'}</th>
                        ${COUNTS.map((c) => html`<th scope="col">${c.replace('_', ' ')}</th>`)}<th scope="col">revenue</th><th scope="col">win rate</th></tr></thead>
                    <tbody>${data.times.map((t) => html`<tr data-time=${iso(t)}><th scope="row">${utc(t / 1000, data.day)}</th>
                        ${COUNTS.map((c) => html`<td>${row(t) ? row(t)[c] : 0}</td>`)}
                        <td>${SOURCE_METRICS.revenue.format(row(t) ? row(t).revenue : 0)}</td>
                        <td>${percent(row(t) ? row(t).win_rate : null)}</td></tr>`)}</tbody>
                </table></div>
            </details>
        </figure>`}
    </section>`;
}
