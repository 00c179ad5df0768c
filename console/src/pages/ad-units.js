// The ad unit tree: every ad unit (pages of 500), nested by parent_id (the
// path hierarchy), with a search that keeps each match's ancestors; each
// unit moved under another parent (PATCH parent_id: the API moves its
// subtree with it) or archived from its row.
import { useEffect, useRef, useState } from 'preact/hooks';
import { Link } from 'wouter-preact';
import { html } from '../html.js';
import { api, listAll } from '../api.js';

function MoveForm({ node, units, onMove, onCancel }) {
    const select = useRef(null);
    useEffect(() => { if (select.current) select.current.focus(); }, []);
    // not under itself nor anything under it
    const targets = units.filter((u) => u.id !== node.id && !u.path.split('/').includes(node.id));
    const id = `move-${node.id}`;
    return html`<form class="move" onSubmit=${(e) => { e.preventDefault(); onMove(node, select.current.value || null); }}>
        <label for=${id}>New parent of ${node.name}</label>
        <select id=${id} ref=${select} value=${node.parent_id || ''}
            onKeyDown=${(e) => { if (e.key === 'Escape') onCancel(); }}>
            <option value="">(none: a root)</option>
            ${targets.map((u) => html`<option value=${u.id} key=${u.id}>${u.name} (${u.code})</option>`)}
        </select>
        <button type="submit">Move</button>
        <button type="button" class="secondary" onClick=${onCancel}>Cancel</button>
    </form>`;
}

function Branch({ node, kids, shown, ctx }) {
    const children = (kids.get(node.id) || []).filter((c) => shown(c));
    return html`<li key=${node.id} data-id=${node.id}>
        <${Link} href=${`/ad-units/${node.id}`}>${node.name}</${Link}>
        <span class="mono"> ${node.code}</span> <span class="badge" data-state=${node.status}>${node.status}</span>
        <span class="row-actions">
            <button type="button" class="small secondary" aria-label=${`Move ${node.name}`} aria-expanded=${ctx.moving === node.id ? 'true' : 'false'}
                onClick=${() => ctx.setMoving(ctx.moving === node.id ? null : node.id)}>Move</button>
            ${node.status !== 'ARCHIVED' && html`<button type="button" class="small secondary" aria-label=${`Archive ${node.name}`}
                onClick=${() => ctx.archive(node)}>Archive</button>`}
        </span>
        ${ctx.moving === node.id && html`<${MoveForm} node=${node} units=${ctx.units} onMove=${ctx.move} onCancel=${() => ctx.setMoving(null)} />`}
        ${children.length > 0 && html`<ul>${children.map((c) => html`<${Branch} node=${c} kids=${kids} shown=${shown} ctx=${ctx} />`)}</ul>`}
    </li>`;
}

export function AdUnitTree() {
    const [units, setUnits] = useState(null);
    const [error, setError] = useState(null);
    const [notice, setNotice] = useState(null);
    const [q, setQ] = useState('');
    const [archived, setArchived] = useState(false);
    const [moving, setMoving] = useState(null);
    const load = () => listAll('/api/ad-units').then(setUnits, (e) => setError(e.message));
    useEffect(() => { load(); }, []);

    const change = async (node, body, text) => {
        setNotice(null);
        try {
            await api('PATCH', `/api/ad-units/${node.id}`, body);
            setMoving(null);
            await load();
            setNotice({ ok: true, text });
        } catch (e) {
            setNotice({ ok: false, text: `${node.name}: ${e.message}` });
        }
    };
    const byName = (id) => (units.find((u) => u.id === id) || {}).name;
    const ctx = {
        units: units || [], moving, setMoving,
        move: (node, parent) => change(node, { parent_id: parent },
            parent ? `${node.name} moved under ${byName(parent)}.` : `${node.name} is now a root.`),
        archive: (node) => {
            if (confirm(`Archive ${node.name}? It stops serving.`)) change(node, { status: 'ARCHIVED' }, `${node.name} archived.`);
        },
    };

    let body = null;
    if (units) {
        const byId = new Map(units.map((u) => [u.id, u]));
        const kids = new Map();
        for (const u of units) {
            const parent = u.parent_id && byId.has(u.parent_id) ? u.parent_id : null;
            if (!kids.has(parent)) kids.set(parent, []);
            kids.get(parent).push(u);
        }
        // a search shows the matches and the ancestors that lead to them;
        // archived units only when asked for
        const needle = q.trim().toLowerCase();
        const keep = new Set();
        for (const u of units) {
            if (!archived && u.status === 'ARCHIVED') continue;
            if (!needle || u.name.toLowerCase().includes(needle) || u.code.toLowerCase().includes(needle)) {
                for (const id of u.path.split('/')) keep.add(id);
            }
        }
        const shown = (u) => keep.has(u.id);
        const roots = (kids.get(null) || []).filter(shown);
        body = roots.length
            ? html`<ul class="tree" aria-label="Ad units by path">${roots.map((r) => html`<${Branch} node=${r} kids=${kids} shown=${shown} ctx=${ctx} />`)}</ul>`
            : html`<p>No ad unit${needle ? ' matches' : ' yet'}.</p>`;
    }
    return html`<h1 tabindex="-1">Ad units</h1>
        <div class="toolbar">
            <${Link} class="button" href="/ad-units/new">New ad unit</${Link}>
            <div>
                <label for="tree-q">Filter</label>
                <input id="tree-q" type="search" value=${q} onInput=${(e) => setQ(e.currentTarget.value)} />
                <input id="tree-archived" type="checkbox" checked=${archived} onChange=${(e) => setArchived(e.currentTarget.checked)} />
                <label for="tree-archived">Show archived</label>
            </div>
        </div>
        <p class=${notice ? (notice.ok ? 'notice' : 'error') : 'sr-only'} aria-live="polite">${notice ? notice.text : ''}</p>
        ${error && html`<p class="error" role="alert">${error}</p>`}
        ${!units && !error && html`<p role="status">Loading…</p>`}
        ${units && html`<p>${units.length} ad units</p>`}
        ${body}`;
}
