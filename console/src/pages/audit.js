// The audit log (admins): the newest changes first, each with the fields
// it changed, before and after (a creation: the fields it set; a
// deletion: the fields the record had), as text.
import { useEffect, useState } from 'preact/hooks';
import { html } from '../html.js';
import { api } from '../api.js';
import { changes } from '../diff.js';

const shown = (v) => (v === undefined ? html`<span class="none">(none)</span>` : JSON.stringify(v));

function Diff({ before, after }) {
    const rows = changes(before, after);
    if (rows.length === 0) return html`<span class="none">no field changed</span>`;
    const n = `${rows.length} field${rows.length === 1 ? '' : 's'}`;
    // a creation has no before, a deletion no after: one column of values
    const made = before === null || before === undefined;
    const gone = !made && (after === null || after === undefined);
    return html`<details><summary>${n}: ${rows.slice(0, 3).map((r) => r.field).join(', ')}${rows.length > 3 ? '…' : ''}</summary>
        <table class="diff">
            <thead><tr><th scope="col">Field</th>
                ${!made && html`<th scope="col">${gone ? 'Was' : 'Before'}</th>`}
                ${!gone && html`<th scope="col">${made ? 'Set to' : 'After'}</th>`}</tr></thead>
            <tbody>${rows.map((r) => html`<tr key=${r.field}>
                <th scope="row" class="mono">${r.field}</th>
                ${!made && html`<td class="before">${gone ? shown(r.before) : html`<del>${shown(r.before)}</del>`}</td>`}
                ${!gone && html`<td class="after">${made ? shown(r.after) : html`<ins>${shown(r.after)}</ins>`}</td>`}
            </tr>`)}</tbody>
        </table>
    </details>`;
}

const PAGE = 50;

export function AuditLog() {
    const [data, setData] = useState(null);
    const [offset, setOffset] = useState(0);
    const [error, setError] = useState(null);
    useEffect(() => {
        api('GET', `/api/audit-logs?limit=${PAGE}&offset=${offset}`).then(setData, (e) => setError(e.message));
    }, [offset]);
    return html`<h1 tabindex="-1">Audit log</h1>
        ${error && html`<p class="error" role="alert">${error}</p>`}
        ${!data && !error && html`<p role="status">Loading…</p>`}
        ${data && html`<div class="table-wrap"><table class="audit">
            <caption>${data.total} changes, newest first</caption>
            <thead><tr><th scope="col">When</th><th scope="col">Who</th><th scope="col">Action</th><th scope="col">Resource</th><th scope="col">Change</th></tr></thead>
            <tbody>${data.items.map((r) => html`<tr key=${r.seq}>
                <td><time datetime=${r.at}>${r.at.replace('T', ' ').replace('Z', '')}</time></td>
                <td><span class="mono">${r.actor.slice(0, 8)}</span> (${r.role})</td>
                <td>${r.action}</td>
                <td>${r.resource} <span class="mono">${r.id.slice(0, 8)}</span></td>
                <td><${Diff} before=${r.before} after=${r.after} /></td>
            </tr>`)}</tbody>
        </table></div>
        <div class="pager">
            <button type="button" disabled=${offset === 0} onClick=${() => setOffset(Math.max(0, offset - PAGE))}>Newer</button>
            <button type="button" disabled=${offset + PAGE >= data.total} onClick=${() => setOffset(offset + PAGE)}>Older</button>
        </div>`}`;
}
