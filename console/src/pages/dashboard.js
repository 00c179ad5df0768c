// The dashboard: delivery over the last 24 hours, hour by hour, from
// GET /api/metrics (an advertiser's own rows only), drawn with uPlot and
// given as a table too, for screen readers and keyboards.
import { useEffect, useRef, useState } from 'preact/hooks';
import uPlot from 'uplot';
import { html } from '../html.js';
import { api } from '../api.js';

const SERIES = ['ads', 'impressions', 'clicks'];
const COLORS = { ads: '#555', impressions: '#1d5fbf', clicks: '#b3541e' };

// rows of every advertiser summed per hour, every hour of the window present
function hourly(rows, from, hours) {
    const start = Math.floor(from.getTime() / 3600e3) * 3600;
    const times = Array.from({ length: hours }, (_, i) => start + i * 3600);
    const sums = Object.fromEntries(SERIES.map((s) => [s, times.map(() => 0)]));
    for (const r of rows) {
        const i = (Date.parse(r.time) / 1000 - start) / 3600;
        if (i >= 0 && i < hours) for (const s of SERIES) sums[s][i] += r[s] || 0;
    }
    return { times, sums };
}

function Chart({ times, sums }) {
    const box = useRef(null);
    useEffect(() => {
        const width = Math.max(280, Math.min(box.current.clientWidth, 900));
        const plot = new uPlot({
            width, height: 260, title: '',
            series: [{}, ...SERIES.map((s) => ({ label: s, stroke: COLORS[s], width: 2 }))],
            axes: [{}, { label: 'count' }],
            scales: { x: { time: true } },
        }, [times, ...SERIES.map((s) => sums[s])], box.current);
        return () => plot.destroy();
    }, [times, sums]);
    return html`<div ref=${box} class="chart" aria-hidden="true"></div>`;
}

export function Dashboard() {
    const [data, setData] = useState(null);
    const [error, setError] = useState(null);
    useEffect(() => {
        const from = new Date(Date.now() - 23 * 3600e3);
        const q = new URLSearchParams({ group_by: 'advertiser', granularity: 'hour', from: from.toISOString().replace(/\.\d{3}Z$/, 'Z') });
        api('GET', `/api/metrics?${q}`).then((d) => setData(hourly(d.rows, from, 24)), (e) => setError(e.message));
    }, []);
    const total = (s) => data.sums[s].reduce((a, b) => a + b, 0);
    return html`<h1 tabindex="-1">Dashboard</h1>
        ${error && html`<p class="error" role="alert">${error}</p>`}
        ${!data && !error && html`<p role="status">Loading…</p>`}
        ${data && html`
            <dl class="totals" aria-label="The last 24 hours">
                ${SERIES.map((s) => html`<div><dt>${s}</dt><dd data-metric=${s}>${total(s)}</dd></div>`)}
            </dl>
            <figure class="delivery">
                <figcaption>Delivery over the last 24 hours, per hour (UTC)</figcaption>
                <${Chart} times=${data.times} sums=${data.sums} />
                <details><summary>The same figures as a table</summary>
                    <div class="table-wrap"><table>
                        <thead><tr><th scope="col">Hour</th>${SERIES.map((s) => html`<th scope="col">${s}</th>`)}</tr></thead>
                        <tbody>${data.times.map((t, i) => html`<tr><th scope="row">${new Date(t * 1000).toISOString().slice(0, 13).replace('T', ' ')}:00</th>
                            ${SERIES.map((s) => html`<td>${data.sums[s][i]}</td>`)}</tr>`)}</tbody>
                    </table></div>
                </details>
            </figure>`}`;
}
