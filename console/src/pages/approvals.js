// The review queue: creatives waiting (?approval=PENDING), each with its
// preview and the two decisions.
import { useEffect, useState } from 'preact/hooks';
import { Link } from 'wouter-preact';
import { html } from '../html.js';
import { api } from '../api.js';
import { CreativePreview } from '../preview.js';

export function Approvals() {
    const [items, setItems] = useState(null);
    const [error, setError] = useState(null);
    const [done, setDone] = useState(null);
    const load = () => api('GET', '/api/creatives?approval=PENDING&limit=100').then((d) => setItems(d.items), (e) => setError(e.message));
    useEffect(() => { load(); }, []);

    const decide = async (c, approval) => {
        try {
            await api('PATCH', `/api/creatives/${c.id}`, { approval });
            setDone(`${c.name}: ${approval}`);
            load();
        } catch (e) {
            setError(e.message);
        }
    };
    return html`<h1 tabindex="-1">Approvals</h1>
        <p>Creatives an advertiser made or changed wait here; only APPROVED ones serve.</p>
        ${done && html`<p class="notice" role="status">${done}</p>`}
        ${error && html`<p class="error" role="alert">${error}</p>`}
        ${!items && !error && html`<p role="status">Loading…</p>`}
        ${items && items.length === 0 && html`<p>Nothing waits for review.</p>`}
        ${items && html`<ul class="cards">${items.map((c) => html`<li key=${c.id} class="card">
            <h2><${Link} href=${`/creatives/${c.id}`}>${c.name}</${Link}></h2>
            <${CreativePreview} creative=${c} />
            <p>Landing page: <span class="mono">${c.landing_url}</span></p>
            <div class="actions" role="group" aria-label=${`Review ${c.name}`}>
                <button type="button" onClick=${() => decide(c, 'APPROVED')}>Approve</button>
                <button type="button" class="danger" onClick=${() => decide(c, 'REJECTED')}>Reject</button>
            </div>
        </li>`)}</ul>`}`;
}
