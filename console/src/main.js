// The console's entry: the session (signed in or not, and who), the shell
// with the menus the role may use, and the routes (hash-based, so nginx
// serves one page at /console/).
import 'uplot/dist/uPlot.min.css';
import './style.css';
import { render } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { Link, Route, Router, Switch, useLocation } from 'wouter-preact';
import { useHashLocation } from 'wouter-preact/use-hash-location';
import { html } from './html.js';
import { api, hasSession, onSession, refresh, signOut } from './api.js';
import { Session, may } from './session.js';
import { RESOURCES } from './resources.js';
import { SignIn } from './pages/sign-in.js';
import { ForgotPassword, ResetPassword } from './pages/password.js';
import { ListPage } from './pages/list.js';
import { CreatePage, RecordPage } from './pages/record.js';
import { AdUnitTree } from './pages/ad-units.js';
import { Approvals } from './pages/approvals.js';
import { Dashboard } from './pages/dashboard.js';
import { AuditLog } from './pages/audit.js';
import { Explain } from './pages/explain.js';
import { Settings } from './pages/settings.js';

const MENU = [
    ['dashboard', '/', 'Dashboard'],
    ['advertisers', '/advertisers', 'Advertisers'],
    ['orders', '/orders', 'Orders'],
    ['line-items', '/line-items', 'Line items'],
    ['creatives', '/creatives', 'Creatives'],
    ['licas', '/licas', 'LICAs'],
    ['approvals', '/approvals', 'Approvals'],
    ['ad-units', '/ad-units', 'Ad units'],
    ['placements', '/placements', 'Placements'],
    ['targeting-keys', '/targeting-keys', 'Targeting keys'],
    ['ad-sources', '/ad-sources', 'Ad sources'],
    ['explain', '/explain', 'Explainer'],
    ['users', '/users', 'Users'],
    ['audit', '/audit', 'Audit log'],
    ['settings', '/settings', 'Settings'],
];

function Nav({ user }) {
    const [loc] = useLocation();
    const current = (href) => (href === '/' ? loc === '/' : loc === href || loc.startsWith(`${href}/`));
    return html`<nav aria-label="Main">
        <ul>${MENU.filter(([area]) => may(user, area)).map(([area, href, text]) => html`
            <li key=${area}><${Link} href=${href} aria-current=${current(href) ? 'page' : undefined}>${text}</${Link}></li>`)}
        </ul>
    </nav>`;
}

// a page the role may not open: the API would refuse it too
const Forbidden = () => html`<h1 tabindex="-1">Not available</h1><p>Your role cannot open this page.</p>`;
const NotFound = () => html`<h1 tabindex="-1">Not found</h1><p>There is no such page.</p>`;

function guard(user, area, page) {
    return may(user, area) ? page : html`<${Forbidden} />`;
}

function Routes({ user }) {
    const resourceRoutes = Object.keys(RESOURCES).flatMap((res) => [
        html`<${Route} path=${`/${res}`}>${guard(user, res, html`<${ListPage} res=${res} />`)}</${Route}>`,
        html`<${Route} path=${`/${res}/new`}>${guard(user, res, html`<${CreatePage} res=${res} />`)}</${Route}>`,
        html`<${Route} path=${`/${res}/new/:field/:value`}>${(p) => guard(user, res, html`<${CreatePage} res=${res} prefill=${{ [p.field]: p.value }} />`)}</${Route}>`,
        html`<${Route} path=${`/${res}/:id`}>${(p) => guard(user, res, html`<${RecordPage} key=${`${res}/${p.id}`} res=${res} id=${p.id} />`)}</${Route}>`,
    ]);
    return html`<${Switch}>
        <${Route} path="/">${guard(user, 'dashboard', html`<${Dashboard} />`)}</${Route}>
        <${Route} path="/ad-units">${guard(user, 'ad-units', html`<${AdUnitTree} />`)}</${Route}>
        <${Route} path="/approvals">${guard(user, 'approvals', html`<${Approvals} />`)}</${Route}>
        <${Route} path="/explain">${guard(user, 'explain', html`<${Explain} />`)}</${Route}>
        <${Route} path="/audit">${guard(user, 'audit', html`<${AuditLog} />`)}</${Route}>
        <${Route} path="/settings">${guard(user, 'settings', html`<${Settings} />`)}</${Route}>
        ${resourceRoutes}
        <${Route}><${NotFound} /></${Route}>
    </${Switch}>`;
}

// each new page moves the focus to its heading, for keyboards and screen readers
function FocusOnNavigate({ children }) {
    const [loc] = useLocation();
    const main = useRef(null);
    const first = useRef(true);
    useEffect(() => {
        if (first.current) {
            first.current = false;
            return undefined;
        }
        const t = setTimeout(() => {
            const h1 = main.current && main.current.querySelector('h1');
            if (h1) h1.focus();
        }, 0);
        return () => clearTimeout(t);
    }, [loc]);
    return html`<main id="main" ref=${main}>${children}</main>`;
}

function Shell({ user }) {
    return html`<${Router} hook=${useHashLocation}>
        <a class="skip" href="#main" onClick=${(e) => { e.preventDefault(); document.getElementById('main').querySelector('h1')?.focus(); }}>Skip to content</a>
        <header class="top">
            <span class="brand">adserve</span>
            <span class="who">${user.email} <span class="role" data-role=${user.role}>${user.role}</span></span>
            <button type="button" class="link" onClick=${() => { location.hash = '#/'; signOut(); }}>Sign out</button>
        </header>
        <div class="layout">
            <${Nav} user=${user} />
            <${FocusOnNavigate}><${Routes} user=${user} /></${FocusOnNavigate}>
        </div>
    </${Router}>`;
}

// the address's hash, outside the router: the signed-out pages
function useHash() {
    const [hash, setHash] = useState(location.hash);
    useEffect(() => {
        const update = () => setHash(location.hash);
        addEventListener('hashchange', update);
        return () => removeEventListener('hashchange', update);
    }, []);
    return hash;
}

function App() {
    const hash = useHash();
    // undefined: finding out (a stored refresh token is tried); null: signed out
    const [user, setUser] = useState(undefined);
    useEffect(() => {
        const load = () => api('GET', '/api/auth/me').then(setUser, () => setUser(null));
        const off = onSession((signedIn) => (signedIn ? load() : setUser(null)));
        if (hasSession()) refresh().then((ok) => { if (!ok) setUser(null); });
        else setUser(null);
        return off;
    }, []);
    // a reset link opens its page whoever is signed in in this tab
    if (hash.startsWith('#/reset-password')) return html`<${ResetPassword} />`;
    if (user === undefined) return html`<p class="loading" role="status">Signing in…</p>`;
    if (user === null) return hash.startsWith('#/forgot-password') ? html`<${ForgotPassword} />` : html`<${SignIn} />`;
    return html`<${Session.Provider} value=${user}><${Shell} user=${user} /></${Session.Provider}>`;
}

// the page's "Loading the console…" goes first: Preact would keep a node it
// cannot match (the reset page's first render is not the loading line)
const root = document.getElementById('app');
root.textContent = '';
render(html`<${App} />`, root);
