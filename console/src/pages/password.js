// Forgot and reset password, signed out: "Forgot password?" posts an
// e-mail to /api/auth/forgot-password (the answer is the same whether or
// not the account exists); the link in the mail opens #/reset-password
// ?token=..., which posts the new password to /api/auth/reset-password.
// The token is read once and taken out of the address bar and history.
import { useEffect, useRef, useState } from 'preact/hooks';
import { html } from '../html.js';
import { anonymous, signOut } from '../api.js';

function useFocus() {
    const ref = useRef(null);
    useEffect(() => ref.current && ref.current.focus(), []);
    return ref;
}

const Back = () => html`<p><a href="#/">Back to sign-in</a></p>`;

export function ForgotPassword() {
    const [sent, setSent] = useState(null);
    const [error, setError] = useState(null);
    const [busy, setBusy] = useState(false);
    const email = useFocus();

    async function submit(e) {
        e.preventDefault();
        setBusy(true);
        setError(null);
        try {
            const r = await anonymous('/api/auth/forgot-password', { email: String(new FormData(e.currentTarget).get('email')) });
            setSent(r && r.detail ? `${r.detail.charAt(0).toUpperCase()}${r.detail.slice(1)}.` : 'Sent.');
        } catch (err) {
            setError(err.message);
        }
        setBusy(false);
    }

    return html`<main id="main" class="sign-in">
        <h1>Forgot your password?</h1>
        <p>Give your account's e-mail: a link to choose a new password will be sent to it.</p>
        ${sent ? html`<p class="notice" role="status" id="forgot-sent">${sent}</p>` : html`<form onSubmit=${submit}>
            ${error && html`<p class="error" role="alert" id="forgot-error">${error}</p>`}
            <div class="field">
                <label for="forgot-email">E-mail</label>
                <input id="forgot-email" name="email" type="email" autocomplete="username" required ref=${email}
                    aria-describedby=${error ? 'forgot-error' : undefined} />
            </div>
            <button type="submit" disabled=${busy}>Send the link</button>
        </form>`}
        <${Back} />
    </main>`;
}

// the token of #/reset-password?token=..., once: the address keeps no copy
function takeToken() {
    const q = location.hash.split('?')[1] || '';
    const token = new URLSearchParams(q).get('token');
    if (token) history.replaceState(null, '', `${location.pathname}#/reset-password`);
    return token;
}

export function ResetPassword() {
    const [token] = useState(takeToken);
    const [done, setDone] = useState(false);
    const [error, setError] = useState(null);
    const [busy, setBusy] = useState(false);
    const first = useFocus();

    async function submit(e) {
        e.preventDefault();
        const form = new FormData(e.currentTarget);
        const password = String(form.get('password'));
        setError(null);
        if (password !== String(form.get('repeat'))) {
            setError('The two passwords differ.');
            return;
        }
        setBusy(true);
        try {
            await anonymous('/api/auth/reset-password', { token, password });
            signOut();              // the reset revoked every token of the account
            setDone(true);
        } catch (err) {
            setError(err.message);
        }
        setBusy(false);
    }

    if (!token) {
        return html`<main id="main" class="sign-in"><h1>Reset your password</h1>
            <p class="error" role="alert">This link has no reset token. Ask for a new one.</p>
            <p><a href="#/forgot-password">Ask for a new link</a></p><${Back} /></main>`;
    }
    return html`<main id="main" class="sign-in">
        <h1>Choose a new password</h1>
        ${done ? html`<p class="notice" role="status" id="reset-done">Your password is changed. Every earlier session and API token of the account is signed out.</p>
            <p><a href="#/" class="button">Sign in</a></p>` : html`<form onSubmit=${submit}>
            ${error && html`<p class="error" role="alert" id="reset-error">${error}</p>`}
            <div class="field">
                <label for="reset-password">New password</label>
                <input id="reset-password" name="password" type="password" autocomplete="new-password" required ref=${first}
                    aria-describedby="reset-help${error ? ' reset-error' : ''}" />
                <span class="help" id="reset-help">10 to 1024 characters.</span>
            </div>
            <div class="field">
                <label for="reset-repeat">The same again</label>
                <input id="reset-repeat" name="repeat" type="password" autocomplete="new-password" required />
            </div>
            <button type="submit" disabled=${busy}>Set the password</button>
        </form>`}
        ${error && html`<p><a href="#/forgot-password">Ask for a new link</a></p>`}
    </main>`;
}
