// adserve.js's contract, in Chromium against the real stack (run by
// t/151-sdk-api.t): how nginx serves the file, the request it sends, the
// command queue, input checks, refresh and destroy (races included),
// sizing, timeouts, the page's visibility, and loading it twice.

import fs from 'node:fs';
import net from 'node:net';
import zlib from 'node:zlib';
import { minify } from 'terser';
import { tap } from './lib/tap.mjs';
import {
    BASE, DEMO, RECORDER, api, demoUnits, events, inBrowser, metric, observe, sleep, until, waitFor,
    workersCurrent,
} from './lib/stack.mjs';

const t = tap();
const SDK = `${BASE}/sdk/v0/adserve.js`;
const source = fs.readFileSync(new URL('../../sdk/adserve.js', import.meta.url), 'utf8');
const units = await demoUnits();

// ---- the file, as nginx serves it ------------------------------------------
const res = await fetch(SDK, { headers: { 'accept-encoding': 'gzip' } });
t.is(res.status, 200, 'GET /sdk/v0/adserve.js');
t.is(res.headers.get('content-type'), 'application/javascript; charset=utf-8', '... as JavaScript');
t.is(res.headers.get('cache-control'), 'public, max-age=3600', '... cached for an hour');
t.is(res.headers.get('content-encoding'), 'gzip', '... compressed');
t.is(res.headers.get('x-content-type-options'), 'nosniff', '... never sniffed as another type');
t.is(await res.text(), source, '... the file of sdk/');
const etag = res.headers.get('etag');
const again = await fetch(SDK, { headers: { 'if-none-match': etag } });
t.is(again.status, 304, 'revalidated by its ETag: 304');

const min = (await minify(source, { compress: true, mangle: true })).code;
const gzipped = zlib.gzipSync(min, { level: 9 }).length;
// the budget: display, native (both modes), a VAST video player, the
// recommendation widget and passbacks, no framework; a page pays it
// gzipped, about 5.8 KB
t.cmp(min.length, '<', 14848, `minified it is under 14.5 KB: ${min.length} bytes (${gzipped} gzipped)`);
t.cmp(gzipped, '<', 6144, '... and under 6 KB gzipped');
t.note(`source ${source.length} bytes, served gzipped: ${zlib.gzipSync(source).length} bytes`);

await inBrowser(t, async (browser) => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 720 } });
    const page = await context.newPage();
    const seen = observe(page);
    await page.addInitScript(RECORDER);
    const firstAsk = page.waitForRequest((r) => r.method() === 'POST'
        && r.url() === `${BASE}/app/v0/ad/${units['demo-rectangle']}`);
    await page.goto(DEMO);

    // ---- the serving request -------------------------------------------
    const ask = await firstAsk;
    const body = JSON.parse(ask.postData());
    const visitor = await page.evaluate(() => localStorage.getItem('demo-visitor'));
    t.isDeep(body, { version: '0.1.0', device: { ua: await page.evaluate(() => navigator.userAgent) },
                     user: { id: visitor, yob: 1990, gender: 'F' } },
             'the request is the spec\'s: version, user {id, yob, gender}, device.ua');
    const headers = await ask.allHeaders();
    t.like(headers['content-type'], /^text\/plain/, '... sent as text/plain: no CORS preflight');
    t.ok(!('cookie' in headers), '... without cookies');
    await waitFor(page, 'render', 'ad-rectangle');
    await waitFor(page, 'impression', 'ad-rectangle');

    // ---- the command queue ---------------------------------------------
    t.ok(await page.evaluate(() => {
        let ran = false;
        adserve.cmd.push(() => { ran = true; });
        return ran;
    }), 'once loaded, a pushed command runs at once');
    t.is(await page.evaluate(() => {
        window.after = 0;
        adserve.cmd.push(() => { throw new Error('the publisher\'s bug'); }, () => { window.after = 1; });
        return window.after;
    }), 1, 'a command that throws does not stop the next');
    t.ok(seen.console.some((m) => m.text.includes('[adserve] a queued command failed')), '... it is logged');

    // ---- input checks: a warning, no request, nothing thrown -----------
    const asked = () => seen.requests.filter((r) => r.method() === 'POST').length;
    const before = asked();
    const bad = await page.evaluate(() => {
        const div = document.createElement('div');
        div.id = 'spare';
        document.body.prepend(div);
        const tries = [
            {},
            { tagid: 'a b', element: 'spare', width: 300, height: 250 },
            { tagid: 'x', element: 'nowhere', width: 300, height: 250 },
            { tagid: 'x', element: 'spare', width: 0, height: 250 },
            { tagid: 'x', element: 'spare', width: 300, height: 25.5 },
            { tagid: 'x', element: 'spare', width: 300, height: 250, responsive: 'fluid' },
        ];
        return tries.map((o) => adserve.registerAd(o) === undefined);
    });
    t.isDeep(bad, [true, true, true, true, true, true], 'bad registrations return nothing');
    for (const what of ['tagid must be', 'no element "nowhere"', 'width and height must be',
                        'responsive must be fixed or resized']) {
        t.ok(seen.console.some((m) => m.type === 'warning' && m.text.includes(what)), `... and log "${what}"`);
    }
    await page.evaluate(() => adserve.setUser({ id: 7, yob: 1850, gender: 'X' }));
    for (const what of ['id must be', 'yob must be', 'gender must be']) {
        t.ok(seen.console.some((m) => m.text.includes(`setUser: ${what}`)), `setUser: "${what}" is logged`);
    }
    await page.evaluate(() => {
        adserve.setConfig({ server: 'javascript:alert(1)', timeout: 5 });
        adserve.cmd.push(42);
    });
    for (const what of ['setConfig: server must be', 'setConfig: timeout must be', 'cmd.push takes functions']) {
        t.ok(seen.console.some((m) => m.type === 'warning' && m.text.includes(what)), `"${what}" is logged`);
    }
    await page.evaluate(() => adserve.setUser({ id: 'v-2' }));
    await sleep(200);
    t.is(asked(), before, 'no request was sent for them');

    const twice = await page.evaluate(() => {
        const el = document.getElementById('ad-rectangle');
        const again = adserve.registerAd({ tagid: 'x', element: el, width: 300, height: 250 });
        return again && again.element === el;
    });
    t.ok(twice, 'registering a filled element again gives back its slot');
    t.ok(seen.console.some((m) => m.text.includes('already holds an ad')), '... with a warning');

    // ---- refresh: a new ad, a new impression ---------------------------
    const refreshed = page.waitForRequest((r) => r.method() === 'POST'
        && r.url().endsWith(units['demo-rectangle']));
    await page.evaluate(() => adserve.refresh('ad-rectangle'));
    t.isDeep(JSON.parse((await refreshed).postData()).user, { id: 'v-2' }, 'refresh asks again, as the new user');
    const renders = await waitFor(page, 'render', 'ad-rectangle', 2);
    t.ok(renders[1].ad.impression_url !== renders[0].ad.impression_url, '... and gets a new ad');
    await waitFor(page, 'impression', 'ad-rectangle', 2);
    t.is(await until(() => metric(units['demo-rectangle'], 'impressions'), 2), 2,
         '... whose impression counts too');
    await page.evaluate(() => adserve.refresh('no-such-element'));
    t.ok(seen.console.some((m) => m.text.includes('refresh: no such ad')), 'refreshing nothing is logged');
    await page.evaluate((tag) => {
        const anonymous = document.createElement('div');
        document.body.prepend(anonymous);
        window.anonymousSlot = adserve.registerAd({ tagid: tag, element: anonymous, width: 300, height: 250 });
    }, units['demo-rectangle']);
    await page.waitForFunction(() => anonymousSlot.element.querySelector('img'));
    const quiet = asked();
    await page.evaluate(() => adserve.refresh(''));
    await sleep(200);
    t.is(asked(), quiet, 'refresh(\'\') names no slot, not even one whose element has no id');
    await page.evaluate(() => { anonymousSlot.destroy(); anonymousSlot.element.remove(); });

    // ---- destroy, and the races of an answer in flight ------------------
    const destroyed = await page.evaluate(() => {
        adserve.destroy('ad-rectangle');
        const el = document.getElementById('ad-rectangle');
        return [el.innerHTML, el.style.cssText];
    });
    t.isDeep(destroyed, ['', ''], 'destroy empties the element and gives back its own style');
    await page.evaluate((tag) => {
        const slot = adserve.registerAd({ tagid: tag, element: 'spare', width: 300, height: 250 });
        slot.refresh();
        slot.destroy();
        slot.refresh();                       // a destroyed slot stays destroyed
        adserve.refresh();
    }, units['demo-rectangle']);
    await sleep(1000);                        // the answers have come back by now
    t.is(await page.evaluate(() => document.getElementById('spare').innerHTML), '',
         'a slot destroyed while its request is in flight stays empty');
    t.isDeep(await events(page, 'render', 'spare'), [], '... never renders its answer');
    t.is((await events(page, 'render', 'ad-rectangle')).length, 2, 'refresh() skips destroyed slots');

    // ---- sizing: resized follows its container, fixed does not ----------
    await page.setViewportSize({ width: 480, height: 720 });
    // the ResizeObserver scales the ad after layout: wait for it to have run
    await page.waitForFunction(() => document.getElementById('ad-leaderboard').clientWidth < 728
        && document.querySelector('#ad-leaderboard iframe').style.transform !== 'scale(1)');
    const narrow = await page.evaluate(() => {
        const el = document.getElementById('ad-leaderboard');
        return [el.clientWidth, el.clientHeight, el.querySelector('iframe').style.transform];
    });
    t.cmp(Math.abs(narrow[1] - narrow[0] * 90 / 728), '<=', 1,
          `resized: ${narrow[0]}x${narrow[1]} keeps the ad's 728:90`);
    const scale = Number(/^scale\(([\d.]+)\)$/.exec(narrow[2])?.[1]);
    t.cmp(Math.abs(scale - narrow[0] / 728), '<', 1e-4, `... the markup scaled to fit: ${narrow[2]}`);
    await page.setViewportSize({ width: 1280, height: 720 });
    await page.waitForFunction(() => document.getElementById('ad-leaderboard').clientWidth === 728);
    t.is(await until(() => page.evaluate(() => document.querySelector('#ad-leaderboard iframe').style.transform),
                     'scale(1)', 3000), 'scale(1)', '... and back at full width');

    // ---- an ad server that never answers --------------------------------
    const silent = await silentServer();
    const slow = await page.evaluate(([server, tag]) => {
        const home = new URL(document.querySelector('script[src*="adserve.js"]').src).origin;
        adserve.setConfig({ server, timeout: 300 });
        // before the request starts: taken after it, the time registerAd
        // itself took (several ms on a busy machine) read as an early timeout
        const asked = performance.now();
        adserve.registerAd({ tagid: tag, element: 'spare', width: 300, height: 250 });
        adserve.setConfig({ server: home, timeout: 5000 });
        return asked;
    }, [`http://127.0.0.1:${silent.port}`, units['demo-rectangle']]);
    const [timeout] = await waitFor(page, 'error', 'spare');
    t.is(timeout.error, 'no answer within 300 ms', 'a server that does not answer: given up after the timeout');
    // (timers and performance.now() may disagree by a millisecond)
    t.cmp(timeout.at - slow, '>=', 295, '... not before');
    silent.close();
    await page.evaluate(() => adserve.destroy('spare'));

    // ---- answers it cannot use, and slots that cannot hold the ad --------
    const odd = await page.evaluate(([board]) => {
        for (const id of ['odd-null', 'odd-id', 'odd-size', 'odd-shape', 'odd-js', 'odd-jsclick']) {
            const div = document.createElement('div');
            div.id = id;
            document.body.prepend(div);
        }
        const loose = document.createElement('div');
        adserve.setConfig({ debug: true });
        adserve.registerAd({ tagid: 'answer-null', element: 'odd-null', width: 300, height: 250 });
        adserve.registerAd({ tagid: 'answer-odd', element: 'odd-id', width: 300, height: 250 });
        adserve.registerAd({ tagid: 'answer-js', element: 'odd-js', width: 300, height: 250 });
        adserve.registerAd({ tagid: 'answer-jsclick', element: 'odd-jsclick', width: 300, height: 250 });
        adserve.registerAd({ tagid: board, element: 'odd-size', width: 300, height: 250 });
        return adserve.registerAd({ tagid: board, element: loose, width: 728, height: 90 }) === undefined;
    }, [units['demo-leaderboard']]);
    await waitFor(page, 'render', 'odd-id');
    t.is(await page.locator('#odd-id img').getAttribute('src'), 'http://127.0.0.1/x.png',
         'an ad whose id is an object (the SDK uses none) still renders, debug log and all');
    await waitFor(page, 'render', 'odd-jsclick');
    t.isDeep(await page.locator('#odd-jsclick').evaluate((e) => [e.querySelectorAll('a').length,
                                                                  e.querySelector('img').src]),
             [0, 'http://127.0.0.1/x.png'], 'a javascript: click_url is never a link: the image alone');
    for (const [id, why] of [['odd-null', /no ad it can show/], ['odd-js', /no ad it can show/],
                             ['odd-size', /a 728x90 ad does not fit the 300x250 slot/]]) {
        const [failure] = await waitFor(page, 'error', id);
        t.like(failure.error, why, `${id}: an error (${failure.error})`);
        t.is(await page.locator(`#${id}`).innerHTML(), '', `${id}: ... the slot left empty`);
    }
    t.isDeep(await page.evaluate(() => __rejections), [], '... and no promise rejection reached the page');
    t.ok(odd, 'an element that is not in the page is refused');
    await page.evaluate(() => adserve.setConfig({ debug: false }));

    // a resized slot: padding is not the ad's, and a no-bid gives back the
    // registered shape
    await page.evaluate((board) => {
        const el = document.getElementById('odd-shape');
        el.style.cssText = 'width: 500px; padding: 0 50px; box-sizing: border-box';
        adserve.registerAd({ tagid: board, element: el, width: 300, height: 250, responsive: 'resized' });
    }, units['demo-leaderboard']);
    await waitFor(page, 'render', 'odd-shape');     // scaled as it is placed
    const padScale = await page.evaluate(() => document.querySelector('#odd-shape iframe').style.transform);
    t.cmp(Math.abs(Number(/[\d.]+/.exec(padScale)[0]) - 400 / 728), '<', 1e-4,
          `resized in a padded element: scaled to its content box, 400 px (${padScale})`);
    const { items: [boardItem] } = await api('GET', `/api/line-items?q=${encodeURIComponent('Demo: leaderboard')}`);
    await api('PATCH', `/api/line-items/${boardItem.id}`, { status: 'PAUSED' });
    t.ok(await workersCurrent(), 'the leaderboard\'s line item paused through the API: every worker has it');
    t.is((await fetch(`${BASE}/app/v0/ad/${units['demo-leaderboard']}`, { method: 'POST', body: '{}' })).status,
         204, '... and serves no ad for it');
    await page.evaluate(() => adserve.refresh('odd-shape'));
    await waitFor(page, 'nobid', 'odd-shape');
    t.is(await page.evaluate(() => document.getElementById('odd-shape').style.aspectRatio), '300 / 250',
         '... a refresh leaves the slot at its registered shape, not the last ad\'s');
    t.isDeep(await page.locator('#odd-shape').evaluate((e) => [e.innerHTML, getComputedStyle(e).display]),
             ['', 'block'], '... empty and in place: without collapse_nobid a no-bid hides nothing');
    await api('PATCH', `/api/line-items/${boardItem.id}`, { status: 'ACTIVE' });
    await page.evaluate(() => ['odd-null', 'odd-id', 'odd-size', 'odd-shape', 'odd-js', 'odd-jsclick'].forEach((id) => {
        adserve.destroy(id);
        document.getElementById(id).remove();
    }));

    // ---- the threshold: half of the ad ------------------------------------
    await page.evaluate((tag) => {
        const div = document.createElement('div');
        div.id = 'edge';
        div.style.cssText = `position: fixed; left: 0; top: ${innerHeight - 100}px`;
        document.body.appendChild(div);
        adserve.registerAd({ tagid: tag, element: div, width: 300, height: 250 });
    }, units['demo-rectangle']);
    await waitFor(page, 'render', 'edge');
    await sleep(1500);
    t.isDeep(await events(page, 'impression', 'edge'), [], '40% of the ad in view for 1.5 s: no impression');
    const more = await page.evaluate(() => {
        document.getElementById('edge').style.top = `${innerHeight - 150}px`;
        return performance.now();
    });
    const [edge] = await waitFor(page, 'impression', 'edge');
    t.cmp(edge.at - more, '>=', 995, '60% in view: the impression a second later');
    await page.evaluate(() => { adserve.destroy('edge'); document.getElementById('edge').remove(); });

    // ---- a hidden page sees nothing --------------------------------------
    // headless Chromium is always visible: the page is told otherwise
    const hiddenAt = await page.evaluate((tag) => {
        Object.defineProperty(document, 'visibilityState', { value: 'hidden', configurable: true });
        document.dispatchEvent(new Event('visibilitychange'));
        adserve.registerAd({ tagid: tag, element: 'spare', width: 300, height: 250 });
        return performance.now();
    }, units['demo-rectangle']);
    await waitFor(page, 'render', 'spare');
    await sleep(1500);
    t.isDeep(await events(page, 'impression', 'spare'), [], 'an ad in view on a hidden page: no impression');
    const visibleAt = await page.evaluate(() => {
        delete document.visibilityState;
        document.dispatchEvent(new Event('visibilitychange'));
        return performance.now();
    });
    const [late] = await waitFor(page, 'impression', 'spare');
    t.cmp(late.at - visibleAt, '>=', 995, `visible again: the impression a second later (hidden at ${Math.round(hiddenAt)} ms)`);

    // ---- the script twice on a page --------------------------------------
    const renderCount = (await page.evaluate(() => __events.filter((e) => e.name === 'render'))).length;
    const same = await page.evaluate((src) => new Promise((resolve) => {
        const first = window.adserve;
        const s = document.createElement('script');
        s.src = src;
        s.onload = () => resolve(window.adserve === first);
        document.head.appendChild(s);
    }), SDK);
    await sleep(500);
    t.ok(same, 'loaded twice, the first adserve stays');
    t.is((await page.evaluate(() => __events.filter((e) => e.name === 'render'))).length, renderCount,
         '... and no slot asks again');

    t.isDeep(seen.errors, [], 'no error ever reached the page');
    await context.close();
});

// a server that accepts connections and never answers
function silentServer() {
    return new Promise((resolve) => {
        const sockets = [];
        const server = net.createServer((s) => sockets.push(s)).listen(0, '127.0.0.1', () => {
            resolve({
                port: server.address().port,
                close: () => { sockets.forEach((s) => s.destroy()); server.close(); },
            });
        });
    });
}
