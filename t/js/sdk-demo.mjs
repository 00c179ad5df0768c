// The demo publisher's page in Chromium, against the real stack (run by
// t/150-sdk-demo.t): the image ad, the HTML ad in its sandbox, the
// impression only once the ad is in view, a click through click_url to the
// landing page, the collapsed no-bid slot, and a page that keeps working
// when the ad server fails.

import fs from 'node:fs';
import net from 'node:net';
import { tap } from './lib/tap.mjs';
import {
    BASE, DEMO, OUT, RECORDER, demoUnits, events, inBrowser, metric, observe, sleep, until, waitFor,
} from './lib/stack.mjs';

const t = tap();
const units = await demoUnits();
await inBrowser(t, async (browser) => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 720 } });
    const page = await context.newPage();
    const seen = observe(page);
    const all = [];                                  // every request, popups' too
    context.on('request', (r) => all.push(r));
    await page.addInitScript(RECORDER);
    await page.goto(DEMO);

    // ---- the image ad ----------------------------------------------------
    const [rect] = await waitFor(page, 'render', 'ad-rectangle');
    t.like(rect.ad.display.banner.img, /\/assets\/rectangle\.svg$/, 'the rectangle is the image ad');
    const img = page.locator('#ad-rectangle img');
    const box = await img.boundingBox();
    t.isDeep([box.width, box.height], [300, 250], 'it is drawn at 300x250');
    t.ok(await img.evaluate((e) => e.complete && e.naturalWidth > 0), '... and the image loaded');
    t.is(await img.getAttribute('src'), rect.ad.display.banner.img, '... from banner.img');
    const link = page.locator('#ad-rectangle a');
    t.is(await link.getAttribute('href'), rect.ad.click_url, 'it links to click_url');
    t.like(rect.ad.click_url, new RegExp(`^${BASE}/app/v0/event/click\\?ad_log=[\\w-]+$`),
           '... on the ad server');
    t.is(await link.getAttribute('target'), '_blank', '... in a new tab');

    // ---- the HTML ad -----------------------------------------------------
    const [board] = await waitFor(page, 'render', 'ad-leaderboard');
    t.ok(typeof board.ad.display.adm === 'string', 'the leaderboard is the HTML ad');
    const iframe = page.locator('#ad-leaderboard iframe');
    const sandbox = (await iframe.getAttribute('sandbox')).split(/\s+/).sort();
    t.isDeep(sandbox, ['allow-popups', 'allow-popups-to-escape-sandbox', 'allow-scripts'],
             'its markup is in a sandboxed iframe: no allow-same-origin, no top navigation');
    const frame = await (await iframe.elementHandle()).contentFrame();
    t.is(await frame.evaluate(() => window.origin), 'null', '... whose origin is opaque');
    t.is(await frame.evaluate(() => {
        try {
            return parent.document.title;
        } catch (e) {
            return e.name;
        }
    }), 'SecurityError', '... so it cannot reach the page');
    t.like(await frame.locator('body').innerText(), /Trail Runner X/, '... and it shows the markup');
    t.is(await frame.locator('a').getAttribute('href'), board.ad.click_url,
         '%%CLICK_URL%% in the markup became the click URL');

    // ---- the slot without demand -----------------------------------------
    await waitFor(page, 'nobid', 'ad-empty');
    t.ok(await page.locator('#ad-empty').isHidden(), 'the no-bid slot (collapse_nobid) is hidden');
    t.is(await page.locator('#ad-empty').evaluate((e) => getComputedStyle(e).display), 'none',
         '... display: none, so it takes no space');
    t.is(await until(() => metric(units['demo-empty'], 'requests'), 1), 1, '... and its request was counted');

    // ---- impressions: half the ad in view for a second -------------------
    t.is(await until(() => metric(units['demo-rectangle'], 'impressions'), 1), 1,
         'the rectangle, in view from the start, counted its impression');
    t.is((await events(page, 'impression', 'ad-rectangle')).length, 1, '... once');
    t.is(await metric(units['demo-leaderboard'], 'ads'), 1, 'the leaderboard was served');
    t.is((await events(page, 'impression', 'ad-leaderboard')).length, 0,
         '... but, below the fold, fired no impression');
    t.ok(!all.some((r) => r.url() === board.ad.impression_url), '... and requested none');
    t.is(await metric(units['demo-leaderboard'], 'impressions'), 0, '... and none was counted');

    // a glance shorter than a second is no impression. How long it lasted is
    // read by an observer of the page's own, told of the ad's visibility in
    // the same rendering steps as the SDK's: a slow renderer lengthens both.
    await page.locator('#ad-leaderboard').evaluate((e) => {
        window.__glance = [];
        new IntersectionObserver((entries) => entries.forEach((en) => __glance.push(
            { at: en.time, half: en.intersectionRatio >= 0.5 })), { threshold: 0.5 }).observe(e);
        e.scrollIntoView({ block: 'center' });
        setTimeout(() => window.scrollTo(0, 0), 300);
    });
    await sleep(1800);
    const glanced = await page.evaluate(() => {
        const from = __glance.find((en) => en.half);
        const to = from && __glance.find((en) => !en.half && en.at > from.at);
        return to ? Math.round(to.at - from.at) : Infinity;
    });
    if (glanced < 900) {
        t.is((await events(page, 'impression', 'ad-leaderboard')).length, 0,
             `in view for ${glanced} ms only: no impression`);
    } else {
        t.skip('a glance is no impression', `the machine took ${glanced} ms to scroll there and back`);
    }

    const inView = await page.locator('#ad-leaderboard').evaluate((e) => {
        e.scrollIntoView({ block: 'center' });
        return performance.now();
    });
    const [shown] = await waitFor(page, 'impression', 'ad-leaderboard');
    t.cmp(shown.at - inView, '>=', 995, 'scrolled into view, it fired its impression after a second in view');
    t.ok(all.some((r) => r.url() === board.ad.impression_url), '... by requesting its impression_url');
    t.is(await until(() => metric(units['demo-leaderboard'], 'impressions'), 1), 1, '... which was counted');
    await page.evaluate(() => window.scrollTo(0, 0));
    await sleep(300);
    await page.locator('#ad-leaderboard').evaluate((e) => e.scrollIntoView({ block: 'center' }));
    await sleep(1500);
    t.is((await events(page, 'impression', 'ad-leaderboard')).length, 1,
         'seen again: still one impression per ad');

    // ---- a click: click_url, then the landing page -----------------------
    await page.evaluate(() => window.scrollTo(0, 0));
    const [popup] = await Promise.all([context.waitForEvent('page'), link.click()]);
    await popup.waitForLoadState();
    const landing = new URL('/landing.html?from=rectangle', DEMO).href;
    t.is(popup.url(), landing, 'a click on the image ad opens the landing page');
    t.like(await popup.locator('#from').innerText(), /rectangle ad/, '... which shows');
    const arrival = all.find((r) => r.url() === landing);
    t.is(arrival && arrival.redirectedFrom() && arrival.redirectedFrom().url(), rect.ad.click_url,
         '... redirected there by click_url');
    t.is(await until(() => metric(units['demo-rectangle'], 'clicks'), 1), 1, '... and the click was counted');
    await popup.close();

    const [fromMarkup] = await Promise.all([context.waitForEvent('page'), frame.locator('a').click()]);
    await fromMarkup.waitForLoadState();
    const boardLanding = new URL('/landing.html?from=leaderboard', DEMO).href;
    t.is(fromMarkup.url(), boardLanding, 'a click in the HTML ad\'s sandbox opens its landing page');
    const boardArrival = all.find((r) => r.url() === boardLanding);
    t.is(boardArrival && boardArrival.redirectedFrom() && boardArrival.redirectedFrom().url(),
         board.ad.click_url, '... through the click URL the markup was given');
    t.is(await until(() => metric(units['demo-leaderboard'], 'clicks'), 1), 1, '... and the click was counted');
    await fromMarkup.close();
    await page.evaluate(() => window.scrollTo(0, 0));

    // ---- the ad server failing: logged, the slot empty, the page fine ----
    const closed = await closedPort();
    await page.evaluate(([closedServer]) => {
        for (const id of ['fault-500', 'fault-404', 'fault-network']) {
            const div = document.createElement('div');
            div.id = id;
            document.querySelector('aside').appendChild(div);
        }
        adserve.registerAd({ tagid: 'demo-fault', element: 'fault-500', width: 300, height: 250 });
        adserve.registerAd({ tagid: 'no-such-unit', element: 'fault-404', width: 300, height: 250 });
        const server = new URL(document.querySelector('script[src*="adserve.js"]').src).origin;
        adserve.setConfig({ server: closedServer });
        adserve.registerAd({ tagid: 'no-server', element: 'fault-network', width: 300, height: 250 });
        adserve.setConfig({ server: server });
    }, [`http://127.0.0.1:${closed}`]);
    const failures = {
        'fault-500': /HTTP 500 .*injected fault/,
        'fault-404': /HTTP 404 .*unknown or inactive ad unit/,
        'fault-network': /Failed to fetch/,
    };
    for (const [id, why] of Object.entries(failures)) {
        const [failure] = await waitFor(page, 'error', id);
        t.like(failure.error, why, `${id}: reported as an error event (${failure.error})`);
        t.is(await page.locator(`#${id}`).innerHTML(), '', `${id}: the slot is left empty`);
        t.ok(seen.console.some((m) => m.type === 'warning' && m.text.startsWith(`[adserve] ad `)
                                      && why.test(m.text)), `${id}: ... and logged`);
    }

    // the page still works: its own button, and the SDK refreshing every slot
    const before = (await events(page, 'render', 'ad-rectangle')).length;
    await page.locator('#refresh').click();
    const renders = await waitFor(page, 'render', 'ad-rectangle', before + 1);
    t.ok(renders.at(-1).ad.impression_url !== rect.ad.impression_url,
         'after the failures the page\'s own refresh button brings a new ad');
    await waitFor(page, 'error', 'fault-500', 2);
    t.isDeep(seen.errors, [], 'no error ever reached the page');

    // the whole page in the viewport: a full-page capture leaves out the
    // frames of other origins (the HTML ad) that were off screen
    const height = await page.evaluate(() => document.documentElement.scrollHeight);
    await page.setViewportSize({ width: 1280, height });
    await sleep(500);
    await page.screenshot({ path: `${OUT}/demo.png` });
    await page.locator('#ad-leaderboard').screenshot({ path: `${OUT}/leaderboard.png` });
    t.cmp(fs.statSync(`${OUT}/demo.png`).size, '>', 20000, `a screenshot of the page: ${OUT}/demo.png`);
    await context.close();
});

// a port on this machine where nothing listens: a network error
function closedPort() {
    return new Promise((resolve, reject) => {
        const server = net.createServer().listen(0, '127.0.0.1', () => {
            const { port } = server.address();
            server.close(() => resolve(port));
        }).on('error', reject);
    });
}
