// An ad unit's tag, ready to copy (GET /api/ad-units/{id}/integration): the
// web SDK's lines for the publisher's page and, for a unit with video, the
// VAST tag URL players fetch.
import { useEffect, useState } from 'preact/hooks';
import { html } from '../html.js';
import { api } from '../api.js';

function Copyable({ id, label, text, rows }) {
    const [copied, setCopied] = useState(false);
    const copy = () => navigator.clipboard.writeText(text).then(() => setCopied(true), () => {});
    return html`<div class="field">
        <label for=${id}>${label.charAt(0).toUpperCase()}${label.slice(1)}</label>
        ${rows > 1 ? html`<textarea id=${id} class="snippet" readonly rows=${rows} spellcheck="false" value=${text}
                onFocus=${(e) => e.currentTarget.select()}></textarea>`
            : html`<input id=${id} class="snippet" readonly value=${text} onFocus=${(e) => e.currentTarget.select()} />`}
        <div class="actions"><button type="button" onClick=${copy} aria-label=${`Copy the ${label}`}>Copy</button>
            <span aria-live="polite">${copied ? 'Copied.' : ''}</span></div>
    </div>`;
}

export function TagSnippet({ adUnitId }) {
    const [tag, setTag] = useState(null);
    const [error, setError] = useState(null);
    useEffect(() => {
        api('GET', `/api/ad-units/${adUnitId}/integration`).then(setTag, (e) => setError(e.message));
    }, [adUnitId]);
    return html`<section aria-labelledby="tag-h">
        <h2 id="tag-h">Tag</h2>
        ${error && html`<p class="error" role="alert">${error}</p>`}
        ${tag && html`<p>Paste this where the ad goes on the publisher's page.</p>
            <${Copyable} id="tag-snippet" label="web SDK snippet" text=${tag.sdk.snippet} rows=${tag.sdk.snippet.split('\n').length + 1} />
            ${tag.vast_tag_url && html`<${Copyable} id="tag-vast" label="VAST tag URL" text=${tag.vast_tag_url} rows=${1} />`}`}
    </section>`;
}
