// Batch actions on a list (orders, line items): the ticked rows paused,
// resumed or archived in one POST /api/{res}/batch, each row's own answer
// (200, or the 409 of a change its state does not allow) shown on the row
// and in a summary read out to screen readers.
import { useState } from 'preact/hooks';
import { html } from '../html.js';
import { api } from '../api.js';
import { apiPath } from '../resources.js';

const WORDS = { pause: 'Pause', resume: 'Resume', archive: 'Archive' };

// what a row's result says
export function outcome(r) {
    if (r.status >= 200 && r.status < 300) return { ok: true, text: 'done' };
    return { ok: false, text: `${r.status}: ${r.detail || 'refused'}` };
}

export function BatchBar({ res, conf, selected, items, onDone }) {
    const [busy, setBusy] = useState(false);
    const [summary, setSummary] = useState(null);
    const run = async (action) => {
        const ids = items.filter((i) => selected.has(i.id)).map((i) => i.id);
        if (!ids.length) return;
        const to = conf.batch[action];
        setBusy(true);
        setSummary(null);
        try {
            const out = await api('POST', `${apiPath(res)}/batch`, {
                items: ids.map((id) => ({ op: 'update', id, data: { [conf.state]: to } })),
            });
            const byId = {};
            out.results.forEach((r) => { byId[ids[r.index]] = outcome(r); });
            const good = Object.values(byId).filter((o) => o.ok).length;
            setSummary({ ok: good === ids.length, text: `${WORDS[action]}: ${good} of ${ids.length} done${good < ids.length ? `, ${ids.length - good} refused (see each row)` : ''}.` });
            onDone(byId);
        } catch (e) {
            setSummary({ ok: false, text: e.message });
        } finally {
            setBusy(false);
        }
    };
    return html`<div class="batch" role="group" aria-label="With the selected rows">
        <span>${selected.size} selected</span>
        ${Object.keys(conf.batch).map((a) => html`<button type="button" disabled=${busy || selected.size === 0}
            onClick=${() => run(a)}>${WORDS[a]}</button>`)}
        <p class=${summary ? (summary.ok ? 'notice' : 'error') : 'sr-only'} aria-live="polite">${summary ? summary.text : ''}</p>
    </div>`;
}
