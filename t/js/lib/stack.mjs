// The browser tests' view of the stack that their .t file started
// (Adserve::Test::browser): addresses, the management API, and Debian's
// chromium driven by playwright-core, never a downloaded browser.

import { execFileSync } from 'node:child_process';
import http from 'node:http';
import { chromium } from 'playwright-core';

export const BASE = process.env.ADSERVE_BASE;        // nginx: serving, SDK, API
export const DEMO = process.env.DEMO_URL;            // the demo publisher's page
export const OUT = process.env.TEST_OUT;             // screenshots, kept

// the flags this machine needs: no sandbox as root, and no calls home,
// which the closed network would refuse
function launch() {
    return chromium.launch({
        executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
        chromiumSandbox: false,
        args: ['--disable-gpu', '--disable-quic', '--no-first-run', '--disable-sync',
               '--disable-background-networking', '--disable-component-update'],
    });
}

// runs a test file's body with a browser: an error fails the file, the
// plan is written, and the browser is closed whatever happened
export async function inBrowser(t, body) {
    const browser = await launch();
    try {
        await body(browser);
        t.done();
    } catch (e) {
        t.done(e);
    } finally {
        await browser.close();
    }
}

let token;

export async function api(method, path, body) {
    if (!token) {
        token = (await call('POST', '/api/auth/login', {
            email: process.env.ADSERVE_ADMIN_EMAIL, password: process.env.ADSERVE_ADMIN_PASSWORD,
        })).access_token;
    }
    return call(method, path, body, token);
}

async function call(method, path, body, bearer) {
    const headers = { 'content-type': 'application/json' };
    if (bearer) {
        headers.authorization = `Bearer ${bearer}`;
    }
    const res = await fetch(BASE + path, {
        method, headers, body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    if (!res.ok) {
        throw new Error(`${method} ${path}: ${res.status} ${text}`);
    }
    return text ? JSON.parse(text) : null;
}

// the demo's ad units, by code (scripts/demo made them)
export async function demoUnits() {
    const { items } = await api('GET', '/api/ad-units?q=demo-');
    return Object.fromEntries(items.map((u) => [u.code, u.id]));
}

// an ad unit's counter over the last two hours, from GET /api/metrics:
// requests, ads, impressions, clicks
export async function metric(unitId, name) {
    const from = new Date(Date.now() - 2 * 3600e3).toISOString();
    const { rows } = await api('GET',
        `/api/metrics?group_by=ad_unit&ad_unit_id=${unitId}&from=${encodeURIComponent(from)}`);
    return rows.reduce((sum, row) => sum + (row[name] || 0), 0);
}

// a counter of the hour hashes adserve:stats:*, summed over every hour (as
// Adserve::Test's stat_sum): u:{id}:imp, dup:imp, ...
export function statSum(field) {
    const redis = (...args) => execFileSync('redis-cli', ['-p', process.env.ADSERVE_REDIS_PORT, ...args],
                                            { encoding: 'utf8', timeout: 5000 });
    return redis('--scan', '--pattern', 'adserve:stats:*').split('\n').filter(Boolean)
        .reduce((sum, key) => sum + Number(redis('HGET', key, field).trim() || 0), 0);
}

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// polls fn until it returns want (counters reach Redis at each worker's
// flush, every second); its last value
export async function until(fn, want, ms = 10000) {
    const end = Date.now() + ms;
    let value = await fn();
    while (value !== want && Date.now() < end) {
        await sleep(100);
        value = await fn();
    }
    return value;
}

// GET /app/v0/status on a connection of its own: nginx gives each
// connection to one worker, so fresh ones reach every worker in time
function workerStatus() {
    return new Promise((resolve, reject) => {
        http.get(`${BASE}/app/v0/status`, { agent: false }, (res) => {
            let body = '';
            res.setEncoding('utf8');
            res.on('data', (chunk) => { body += chunk; });
            res.on('end', () => resolve(JSON.parse(body)));
        }).on('error', reject).setTimeout(2000, function () { this.destroy(new Error('status: timeout')); });
    });
}

// true once every worker is on the data's revision (adserve:rev) as it is
// now: each worker reloads on its own timer, so a write one of them serves
// may not be served by the other yet, and the browser may be talking to it
export async function workersCurrent(ms = 10000) {
    const rev = Number(execFileSync('redis-cli', ['-p', process.env.ADSERVE_REDIS_PORT, 'GET', 'adserve:rev'],
                                    { encoding: 'utf8', timeout: 5000 }).trim() || 0);
    const workers = Number(process.env.ADSERVE_WORKERS);
    if (!(workers > 0)) throw new Error(`ADSERVE_WORKERS is not a count of workers: ${process.env.ADSERVE_WORKERS}`);
    return until(async () => {
        const seen = new Map();
        for (let i = 0; i < 20 * workers && seen.size < workers; i++) {
            const s = await workerStatus();
            seen.set(s.pid, s.rev);
        }
        return seen.size === workers && [...seen.values()].every((r) => r >= rev);
    }, true, ms);
}

// Runs in the page before its own scripts: the first command queued for
// adserve.js records what the SDK reports, with the page's clock.
export const RECORDER = `
window.__events = [];
window.__rejections = [];
addEventListener('unhandledrejection', function (e) { __rejections.push(String(e.reason)); });
window.adserve = {cmd: [function () {
    ['render', 'nobid', 'passback', 'impression', 'error', 'video', 'recommendation'].forEach(function (name) {
        adserve.on(name, function (e) {
            __events.push({name: name, element: e.slot.element.id, at: performance.now(),
                           ad: e.ad || null, error: e.error || null, event: e.event || null,
                           item: e.item || null, url: e.url || null});
        });
    });
}]};`;

// what the page says and does: uncaught errors, console messages, requests
export function observe(page) {
    const seen = { errors: [], console: [], requests: [] };
    page.on('pageerror', (e) => seen.errors.push(String(e)));
    page.on('console', (m) => seen.console.push({ type: m.type(), text: m.text() }));
    page.on('request', (r) => seen.requests.push(r));
    return seen;
}

// The demo page in a fresh context, the events recorder installed: the
// context, the page, what it says and does (observe), and every request of
// the context (popups' too)
export async function openDemo(browser) {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    const seen = observe(page);
    const all = [];
    context.on('request', (r) => all.push(r));
    await page.addInitScript(RECORDER);
    await page.goto(DEMO);
    return { context, page, seen, all };
}

// the events recorded so far for one element, of one kind
export function events(page, name, element) {
    return page.evaluate(([n, el]) => __events.filter((e) => e.name === n && e.element === el),
                         [name, element]);
}

// waits until the element has had `count` events of the kind; they all
export async function waitFor(page, name, element, count = 1, ms = 10000) {
    await page.waitForFunction(([n, el, c]) =>
        __events.filter((e) => e.name === n && e.element === el).length >= c,
        [name, element, count], { timeout: ms });
    return events(page, name, element);
}
