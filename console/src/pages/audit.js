// The audit log (admins): the newest changes first, each with the record
// before and after, as text.
import { useEffect, useState } from 'preact/hooks';
import { html } from '../html.js';
import { api } from '../api.js';

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
                <td><details><summary>before / after</summary>
                    <div class="diff"><pre aria-label="before">${JSON.stringify(r.before, null, 1)}</pre><pre aria-label="after">${JSON.stringify(r.after, null, 1)}</pre></div>
                </details></td>
            </tr>`)}</tbody>
        </table></div>
        <div class="pager">
            <button type="button" disabled=${offset === 0} onClick=${() => setOffset(Math.max(0, offset - PAGE))}>Newer</button>
            <button type="button" disabled=${offset + PAGE >= data.total} onClick=${() => setOffset(offset + PAGE)}>Older</button>
        </div>`}`;
}
