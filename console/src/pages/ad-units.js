// The ad unit tree: every ad unit (pages of 500), nested by parent_id (the
// path hierarchy), with a search that keeps each match's ancestors.
import { useEffect, useState } from 'preact/hooks';
import { Link } from 'wouter-preact';
import { html } from '../html.js';
import { listAll } from '../api.js';

function Branch({ node, kids, shown }) {
    const children = (kids.get(node.id) || []).filter((c) => shown(c));
    return html`<li key=${node.id}>
        <${Link} href=${`/ad-units/${node.id}`}>${node.name}</${Link}>
        <span class="mono"> ${node.code}</span> <span class="badge" data-state=${node.status}>${node.status}</span>
        ${children.length > 0 && html`<ul>${children.map((c) => html`<${Branch} node=${c} kids=${kids} shown=${shown} />`)}</ul>`}
    </li>`;
}

export function AdUnitTree() {
    const [units, setUnits] = useState(null);
    const [error, setError] = useState(null);
    const [q, setQ] = useState('');
    useEffect(() => { listAll('/api/ad-units').then(setUnits, (e) => setError(e.message)); }, []);

    let body = null;
    if (units) {
        const byId = new Map(units.map((u) => [u.id, u]));
        const kids = new Map();
        for (const u of units) {
            const parent = u.parent_id && byId.has(u.parent_id) ? u.parent_id : null;
            if (!kids.has(parent)) kids.set(parent, []);
            kids.get(parent).push(u);
        }
        // a search shows the matches and the ancestors that lead to them
        const needle = q.trim().toLowerCase();
        const keep = new Set();
        for (const u of units) {
            if (!needle || u.name.toLowerCase().includes(needle) || u.code.toLowerCase().includes(needle)) {
                for (const id of u.path.split('/')) keep.add(id);
            }
        }
        const shown = (u) => keep.has(u.id);
        const roots = (kids.get(null) || []).filter(shown);
        body = roots.length
            ? html`<ul class="tree" aria-label="Ad units by path">${roots.map((r) => html`<${Branch} node=${r} kids=${kids} shown=${shown} />`)}</ul>`
            : html`<p>No ad unit${needle ? ' matches' : ' yet'}.</p>`;
    }
    return html`<h1 tabindex="-1">Ad units</h1>
        <div class="toolbar">
            <${Link} class="button" href="/ad-units/new">New ad unit</${Link}>
            <div>
                <label for="tree-q">Filter</label>
                <input id="tree-q" type="search" value=${q} onInput=${(e) => setQ(e.currentTarget.value)} />
            </div>
        </div>
        ${error && html`<p class="error" role="alert">${error}</p>`}
        ${!units && !error && html`<p role="status">Loading…</p>`}
        ${units && html`<p>${units.length} ad units</p>`}
        ${body}`;
}
