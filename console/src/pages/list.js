// A resource's list: GET /api/{res} a page at a time, searchable where the
// API takes ?q=, each row a link to the record.
import { useEffect, useState } from 'preact/hooks';
import { Link } from 'wouter-preact';
import { html } from '../html.js';
import { api } from '../api.js';
import { RESOURCES, apiPath } from '../resources.js';
import { label } from '../schema.js';
import { BatchBar } from './batch.js';

const PAGE = 50;

export function Cell({ value }) {
    if (value === null || value === undefined) return html`<span class="none">—</span>`;
    // a list of ids (a placement's ad units) as how many
    if (Array.isArray(value) && value.every((v) => /^[0-9a-f-]{36}$/.test(v))) return String(value.length);
    if (Array.isArray(value) && value.every((v) => typeof v === 'string')) return value.join(', ');
    if (typeof value === 'object') return JSON.stringify(value);
    return String(value);
}

export function ListPage({ res }) {
    const conf = RESOURCES[res];
    const [offset, setOffset] = useState(0);
    const [q, setQ] = useState('');
    const [data, setData] = useState(null);
    const [error, setError] = useState(null);
    const [selected, setSelected] = useState(new Set());
    const [results, setResults] = useState({});       // a batch's answer, per row id
    const [reload, setReload] = useState(0);

    useEffect(() => {
        const query = new URLSearchParams({ limit: PAGE, offset });
        if (q) query.set('q', q);
        api('GET', `${apiPath(res)}?${query}`).then(setData, (e) => setError(e.message));
    }, [res, offset, q, reload]);
    useEffect(() => { setSelected(new Set()); setResults({}); }, [res, offset, q]);

    const batch = !!conf.batch;
    const tick = (id, on) => setSelected((old) => {
        const next = new Set(old);
        if (on) next.add(id); else next.delete(id);
        return next;
    });
    const all = data && data.items.length > 0 && data.items.every((i) => selected.has(i.id));
    const nameOf = (item) => String(item[conf.columns[0]] ?? item.id);

    const first = conf.columns[0];
    return html`<h1 tabindex="-1">${conf.title}</h1>
        <div class="toolbar">
            <${Link} class="button" href=${`/${res}/new`}>New ${conf.one}</${Link}>
            ${res !== 'licas' && html`<form role="search" onSubmit=${(e) => { e.preventDefault(); setOffset(0); setQ(new FormData(e.currentTarget).get('q')); }}>
                <label for="list-q">Search</label>
                <input id="list-q" name="q" type="search" />
                <button type="submit">Search</button>
            </form>`}
        </div>
        ${error && html`<p class="error" role="alert">${error}</p>`}
        ${!data && !error && html`<p role="status">Loading…</p>`}
        ${data && batch && html`<${BatchBar} res=${res} conf=${conf} selected=${selected} items=${data.items}
            onDone=${(byId) => { setResults(byId); setReload((n) => n + 1); }} />`}
        ${data && html`<div class="table-wrap"><table class=${batch ? 'selectable' : undefined}>
            <caption>${data.total} ${data.total === 1 ? conf.one : conf.title.toLowerCase()}</caption>
            <thead><tr>
                ${batch && html`<td class="pick"><input type="checkbox" id="pick-all" aria-label="Select every row on this page" checked=${all}
                    onChange=${(e) => { const on = e.currentTarget.checked; setSelected(new Set(on ? data.items.map((i) => i.id) : [])); }} /></td>`}
                ${conf.columns.map((c) => html`<th scope="col">${label(c)}</th>`)}
                ${batch && Object.keys(results).length > 0 && html`<th scope="col">Result</th>`}
            </tr></thead>
            <tbody>${data.items.map((item) => html`<tr key=${item.id} data-id=${item.id}>
                ${batch && html`<td class="pick"><input type="checkbox" aria-label=${`Select ${nameOf(item)}`} checked=${selected.has(item.id)}
                    onChange=${(e) => tick(item.id, e.currentTarget.checked)} /></td>`}
                <th scope="row"><${Link} href=${`/${res}/${item.id}`}><${Cell} value=${item[first] ?? item.id} /></${Link}></th>
                ${conf.columns.slice(1).map((c) => html`<td><${Cell} value=${item[c]} /></td>`)}
                ${batch && Object.keys(results).length > 0 && html`<td class=${results[item.id] ? (results[item.id].ok ? 'result notice' : 'result error') : 'result'}>
                    ${results[item.id] ? results[item.id].text : ''}</td>`}
            </tr>`)}</tbody>
        </table></div>
        <div class="pager">
            <button type="button" disabled=${offset === 0} onClick=${() => setOffset(Math.max(0, offset - PAGE))}>Previous</button>
            <span>${data.total ? `${offset + 1}–${offset + data.items.length} of ${data.total}` : ''}</span>
            <button type="button" disabled=${offset + PAGE >= data.total} onClick=${() => setOffset(offset + PAGE)}>Next</button>
        </div>`}`;
}
