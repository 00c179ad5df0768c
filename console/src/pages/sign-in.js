// Sign-in: POST /api/auth/login. A refused sign-in says why (the API's
// detail: bad credentials, too many attempts), never which part was wrong.
import { useEffect, useRef, useState } from 'preact/hooks';
import { html } from '../html.js';
import { login } from '../api.js';

export function SignIn() {
    const [error, setError] = useState(null);
    const [busy, setBusy] = useState(false);
    const email = useRef(null);
    useEffect(() => email.current && email.current.focus(), []);

    async function submit(e) {
        e.preventDefault();
        const form = new FormData(e.currentTarget);
        setBusy(true);
        setError(null);
        try {
            await login(String(form.get('email')), String(form.get('password')));
        } catch (err) {
            setError(err.status === 401 ? 'Wrong e-mail or password.' : err.message);
            setBusy(false);
        }
    }

    return html`<main id="main" class="sign-in">
        <h1>Sign in to adserve</h1>
        <form onSubmit=${submit}>
            ${error && html`<p class="error" role="alert" id="sign-in-error">${error}</p>`}
            <div class="field">
                <label for="email">E-mail</label>
                <input id="email" name="email" type="email" autocomplete="username" required ref=${email}
                    aria-describedby=${error ? 'sign-in-error' : undefined} />
            </div>
            <div class="field">
                <label for="password">Password</label>
                <input id="password" name="password" type="password" autocomplete="current-password" required />
            </div>
            <button type="submit" disabled=${busy}>${busy ? 'Signing in…' : 'Sign in'}</button>
        </form>
        <p><a href="#/forgot-password">Forgot password?</a></p>
    </main>`;
}
