// A native bid from outside demand in Chromium, against the real stack
// and the reference bidder (run by t/158-sdk-native-bid.t): an ad unit in
// asset mode with the demo's in-feed placement, allocated to the bidder,
// drawn by the demo page's own card template.

import { readFileSync } from 'node:fs';
import { tap } from './lib/tap.mjs';
import {
    OUT, api, demoUnits, inBrowser, metric, openDemo, sleep, until, waitFor, workersCurrent,
} from './lib/stack.mjs';

const t = tap();
const BIDDER = process.env.BIDDER;
const bidder = async (path, init) => (await fetch(`${BIDDER}${path}`, init)).json();
const notices = async (kind) => (await bidder('/notices')).filter((n) => n.kind === kind);

const feed = await api('GET', `/api/ad-units/${(await demoUnits())['demo-native-feed']}`);
const unit = await api('POST', '/api/ad-units', {
    code: `native-bid-${process.pid}`, name: 'Native from outside', status: 'ACTIVE',
    native: feed.native, ext: { native: { enabled: 1, render_mode: 'asset' } },
});
const source = await api('POST', '/api/ad-sources', {
    name: `Reference bidder ${process.pid}`, endpoint_url: `${BIDDER}/openrtb2/auction`,
    tmax_ms: 300, formats: ['native'],
});
await api('POST', '/api/allocations', { ad_source_id: source.id, target: 'ad_unit', target_id: unit.id, share: 100 });
t.ok(await workersCurrent(), 'every worker has the unit and its allocation');

// the bidder's landing page and images are not on this machine: the
// browser gets them from here
const SVG = readFileSync(new URL('../../sdk/demo/assets/native-main.svg', import.meta.url));

await inBrowser(t, async (browser) => {
    const { context, page, all } = await openDemo(browser);
    await context.route(/^https:\/\/(cdn\.)?bidder\.example\//, (route) => route.fulfill(
        route.request().url().endsWith('.png')
            ? { status: 200, contentType: 'image/svg+xml', body: SVG }
            : { status: 200, contentType: 'text/html', body: '<title>landing</title>the bidder\'s page' }));
    await page.evaluate((tagid) => {
        const div = document.createElement('div');
        div.id = 'ad-native-bid';
        div.style.cssText = 'width:600px;height:126px';
        document.querySelector('main').prepend(div);
        adserve.registerAd({ tagid, element: 'ad-native-bid', width: 600, height: 126,
                             native: { template: document.getElementById('native-card').innerHTML } });
    }, unit.id);

    const [shown] = await waitFor(page, 'render', 'ad-native-bid');
    const n = shown.ad.native || {};
    t.is(n.ver, '1.2', 'the slot got the native bid as ad.native');
    t.is(n.link.clicktrackers[0], shown.ad.click_url, '... our click URL first among its click trackers');
    const card = page.locator('#ad-native-bid a.card');
    t.is(await card.getAttribute('href'), 'https://bidder.example/landing', 'the page\'s template links to the bidder\'s landing page');
    t.is(await card.locator('b').innerText(), 'A reference native bid', '{{title}}: the bid\'s title');
    t.like(await card.locator('small').innerText(), /^Sponsored by Reference data 1$/, '{{data.sponsored}}: its sponsor');
    t.ok(await card.locator('img').evaluate((e) => e.complete && e.naturalWidth > 0), '{{img.main}}: its image, loaded');

    await page.locator('#ad-native-bid').scrollIntoViewIfNeeded();
    const [imp] = await waitFor(page, 'impression', 'ad-native-bid');
    t.is(imp.url, shown.ad.impression_url, 'seen for a second: the impression, ours');
    t.is(await until(() => metric(unit.id, 'impressions'), 1), 1, '... counted');
    t.isDeep(await until(async () => (await notices('native-imp')).length + (await notices('native-event')).length, 2), 2,
             '... and the bid\'s imptracker and event tracker fired by the browser');
    t.is((await notices('native-imp'))[0].query.PRICE, '4', '... their ${AUCTION_PRICE} filled');
    t.ok(await until(async () => (await notices('bill')).length, 1), '... the bid\'s burl fired by the server');
    await sleep(1500);
    t.is(await metric(unit.id, 'impressions'), 1, '... and a while later still once');

    const [landing] = await Promise.all([context.waitForEvent('page'), card.click()]);
    await landing.waitForLoadState();
    t.is(landing.url(), 'https://bidder.example/landing', 'a click lands on the bidder\'s page');
    t.is(await until(() => metric(unit.id, 'clicks'), 1), 1, '... our click tracker counted it');
    t.is(await until(async () => (await notices('native-click')).length, 1), 1, '... and the bid\'s click tracker was called');
    t.ok(all.some((r) => r.url() === shown.ad.click_url), '... by the page itself');
    await page.locator('#ad-native-bid').screenshot({ path: `${OUT}/native-bid.png` });
});
