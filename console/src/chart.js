// A line chart drawn with uPlot, the width of its box (redrawn when the box
// changes width: 1280 px or 390 px). It is hidden from assistive
// technologies: each chart's figure gives the same figures as a table.
import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import { html } from './html.js';

// x: seconds since the epoch; series: [{label, values, color, dash, scale}];
// axes: {y: 'count', r: 'rate'} names the scales drawn (r on the right)
export function LineChart({ x, series, axes = { y: '' }, height = 240, yFormat, rFormat }) {
    const box = useRef(null);
    useEffect(() => {
        const el = box.current;
        const widthOf = () => Math.max(260, Math.min(el.clientWidth || 600, 960));
        const scaleAxes = [{}, { scale: 'y', label: axes.y, values: yFormat && ((u, ticks) => ticks.map(yFormat)) }];
        if (axes.r !== undefined) {
            scaleAxes.push({ scale: 'r', side: 1, label: axes.r, grid: { show: false },
                             values: rFormat && ((u, ticks) => ticks.map(rFormat)) });
        }
        const plot = new uPlot({
            width: widthOf(), height, title: '',
            series: [{}, ...series.map((s) => ({
                label: s.label, stroke: s.color, width: 2, scale: s.scale || 'y', dash: s.dash, spanGaps: false,
                points: { show: x.length < 40 },
            }))],
            axes: scaleAxes,
            scales: { x: { time: true }, y: { range: (u, min, max) => [0, max > 0 ? max * 1.05 : 1] },
                      r: { range: (u, min, max) => [0, max > 0 ? max * 1.05 : 1] } },
            legend: { live: false },
        }, [x, ...series.map((s) => s.values)], el);
        let last = widthOf();
        const watch = new ResizeObserver(() => {
            const w = widthOf();
            if (w !== last) { last = w; plot.setSize({ width: w, height }); }
        });
        watch.observe(el);
        return () => { watch.disconnect(); plot.destroy(); };
    }, [JSON.stringify([x, series.map((s) => [s.label, s.values]), axes])]);
    return html`<div ref=${box} class="chart" aria-hidden="true"></div>`;
}

// "2026-11-27 14:00" (UTC), or the day alone
export const utc = (seconds, day = false) => {
    const s = new Date(seconds * 1000).toISOString();
    return day ? s.slice(0, 10) : `${s.slice(0, 10)} ${s.slice(11, 16)}`;
};
// a rate as a percentage, or a dash without one
export const percent = (v) => (v === null || v === undefined ? '—' : `${(v * 100).toFixed(2)} %`);
export const iso = (ms) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
