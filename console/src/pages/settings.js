// The account: who is signed in, with which role, and the API token,
// issued or regenerated here and shown this once (issuing one revokes the
// earlier ones).
import { useState } from 'preact/hooks';
import { html } from '../html.js';
import { api } from '../api.js';
import { useSession } from '../session.js';

export function Settings() {
    const user = useSession();
    const [token, setToken] = useState(null);
    const [error, setError] = useState(null);
    const [copied, setCopied] = useState(false);

    const issue = async () => {
        if (!confirm('A new API token stops the earlier one working at once. Go on?')) return;
        setError(null);
        setCopied(false);
        try {
            setToken(await api('POST', '/api/settings/api-token'));
        } catch (e) {
            setError(e.message);
        }
    };
    return html`<h1 tabindex="-1">Settings</h1>
        <section aria-labelledby="account-h">
            <h2 id="account-h">Account</h2>
            <dl class="facts">
                <dt>E-mail</dt><dd>${user.email}</dd>
                <dt>Role</dt><dd><span class="role" data-role=${user.role} id="my-role">${user.role}</span></dd>
                ${user.advertiser_id && html`<dt>Advertiser</dt><dd class="mono">${user.advertiser_id}</dd>`}
            </dl>
        </section>
        <section aria-labelledby="token-h">
            <h2 id="token-h">API token</h2>
            <p>A long-lived token for scripts (<code>Authorization: Bearer …</code>). Regenerating it revokes the earlier one.</p>
            <button type="button" onClick=${issue}>Regenerate the API token</button>
            ${error && html`<p class="error" role="alert">${error}</p>`}
            ${token && html`<div class="token" role="status">
                <label for="api-token">Your new API token (shown once; it expires ${token.expires_at})</label>
                <input id="api-token" readonly value=${token.api_token} onFocus=${(e) => e.currentTarget.select()} />
                <button type="button" onClick=${() => navigator.clipboard.writeText(token.api_token).then(() => setCopied(true), () => {})}>Copy</button>
                ${copied && html`<span> Copied.</span>`}
            </div>`}
        </section>`;
}
