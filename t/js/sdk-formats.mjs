// Native and video on the demo publisher's page in Chromium, against the
// real stack (run by t/153-sdk-formats.t).

import { tap } from './lib/tap.mjs';
import {
    BASE, OUT, DEMO, api, demoUnits, events, inBrowser, metric, openDemo, sleep, until,
    waitFor, workersCurrent,
} from './lib/stack.mjs';

const t = tap();
const units = await demoUnits();
const EVIL = '<img src=x onerror="window.__pwned=1">Fresh & <b>bold</b>';

// A unit in each render mode whose only ad is a creative with markup in
// its texts, made through the API as an operator would.
async function evilUnits() {
    const [style] = (await api('GET', '/api/native-styles?q=Demo')).items;
    const feed = (await api('GET', `/api/ad-units/${units['demo-native-feed']}`));
    const made = {};
    for (const mode of ['asset', 'html']) {
        made[mode] = (await api('POST', '/api/ad-units', {
            code: `evil-${mode}-${process.pid}`, name: `Markup in texts (${mode})`, status: 'ACTIVE',
            display: { w: 300, h: 250 }, native: feed.native,
            ext: { native: { enabled: 1, render_mode: mode } },
        })).id;
    }
    await api('POST', '/api/ad-unit-native-styles', { ad_unit_id: made.html, native_style_id: style.id });
    const adv = await api('POST', '/api/advertisers', { name: `Markup ${process.pid}` });
    const order = await api('POST', '/api/orders', { advertiser_id: adv.id, name: 'Markup' });
    await api('PATCH', `/api/orders/${order.id}`, { status: 'APPROVED' });
    const li = await api('POST', '/api/line-items', {
        order_id: order.id, name: 'Markup', type: 'STANDARD', cost_type: 'CPM', rate: 3,
        targeting: { ad_units: { include: [made.asset, made.html] } },
    });
    await api('PATCH', `/api/line-items/${li.id}`, { status: 'ACTIVE' });
    const cr = await api('POST', '/api/creatives', {
        advertiser_id: adv.id, name: 'Markup', type: 'NATIVE', w: 240, h: 126,
        landing_url: `${DEMO}landing.html?from=markup`,
        native: {
            title: EVIL,
            images: [{ type: 'main', url: `${DEMO}assets/native-main.svg`, w: 240, h: 126 }],
            data: [{ type: 'sponsored', value: '"><script>window.__pwned=2</script>' },
                   { type: 'desc', value: EVIL }],
        },
    });
    await api('POST', '/api/licas', { line_item_id: li.id, creative_id: cr.id });
    return made;
}

await inBrowser(t, async (browser) => {
    const { context, page, seen, all } = await openDemo(browser);

    // ---- native, asset mode: the page's own template ----------------------
    const [feed] = await waitFor(page, 'render', 'ad-native-feed');
    t.is(feed.ad.native && feed.ad.native.ver, '1.2', 'the in-feed slot got an OpenRTB Native 1.2 ad');
    const card = page.locator('#ad-native-feed a.card');
    t.is(await card.getAttribute('href'), feed.ad.native.link.url, 'the page\'s template: its link is link.url');
    t.is(feed.ad.native.link.url, feed.ad.click_url, '... which is the click URL');
    t.is(await card.getAttribute('target'), '_blank', '... opening a new tab');
    t.like(await card.locator('b').innerText(), /^Trail Runner X: 210 g of grip/, '{{title}}: the title');
    t.like(await card.locator('small').innerText(), /^Sponsored by Trail Runner Co\.$/, '{{data.sponsored}}');
    const img = card.locator('img');
    t.like(await img.getAttribute('src'), /\/assets\/native-main\.svg$/, '{{img.main}}: the main image');
    t.ok(await img.evaluate((e) => e.complete && e.naturalWidth > 0), '... loaded');
    await waitFor(page, 'impression', 'ad-native-feed');
    t.is(await until(() => metric(units['demo-native-feed'], 'impressions'), 1), 1,
         'in view for a second: its eventtracker counted the impression');

    // ---- native, html mode: the unit's style, sandboxed --------------------
    const [side] = await waitFor(page, 'render', 'ad-native-html');
    t.ok(typeof side.ad.display.adm === 'string', 'the sidebar card came as display.adm (html mode)');
    const iframe = page.locator('#ad-native-html iframe');
    t.like(await iframe.getAttribute('sandbox'), /^allow-scripts allow-popups/, '... drawn in the sandbox');
    const frame = await (await iframe.elementHandle()).contentFrame();
    t.like(await frame.locator('a.card b').innerText(), /^Trail Runner X/, '... through the style: the title');
    t.is(await frame.locator('a.card').getAttribute('href'), side.ad.click_url, '... linking to the click URL');
    t.ok(await frame.locator('a.card img').evaluate((e) => e.complete && e.naturalWidth > 0), '... its image loaded');
    const [popup] = await Promise.all([context.waitForEvent('page'), frame.locator('a.card').click()]);
    await popup.waitForLoadState();
    t.like(popup.url(), /landing\.html\?from=native$/, 'a click on the card lands');
    await popup.close();
    t.is(await until(() => metric(units['demo-native-html'], 'clicks'), 1), 1, '... and counts');

    // ---- markup in an ad's texts renders inert, in both modes --------------
    const evil = await evilUnits();
    t.ok(await workersCurrent(), 'every worker has the markup creative');
    await page.evaluate(([a, h]) => {
        for (const [id, tag, native] of [['evil-asset', a, true], ['evil-html', h, false]]) {
            const div = document.createElement('div');
            div.id = id;
            document.querySelector('aside').appendChild(div);
            adserve.registerAd({ tagid: tag, element: id, width: 300, height: 250,
                                 native: native ? { template: document.getElementById('native-card').innerHTML }
                                                : undefined });
        }
    }, [evil.asset, evil.html]);
    await waitFor(page, 'render', 'evil-asset');
    await waitFor(page, 'render', 'evil-html');
    await sleep(300);
    t.like(await page.locator('#evil-asset b').innerText(), /^<img src=x onerror="window.__pwned=1">Fresh & <b>bold<\/b>$/,
           'asset mode: the title\'s markup is shown as text');
    t.is(await page.locator('#evil-asset img').count(), 1, '... no element made of it (only the template\'s image)');
    t.like(await page.locator('#evil-asset small').innerText(), /script/, '... nor of a sponsor\'s <script>');
    const evilFrame = await (await page.locator('#evil-html iframe').elementHandle()).contentFrame();
    t.like(await evilFrame.locator('a.card b').innerText(), /^<img src=x onerror=/, 'html mode: shown as text too');
    t.is(await evilFrame.locator('img').count(), 1, '... the style\'s image alone');
    t.is(await evilFrame.evaluate(() => window.__pwned), undefined, '... no script ran in the frame');
    t.is(await page.evaluate(() => window.__pwned), undefined, 'no script of the ad ran in the page');

    // ---- video: played through, every event in order ------------------------
    await page.locator('#ad-video').scrollIntoViewIfNeeded();
    const [vr] = await waitFor(page, 'render', 'ad-video');
    t.like(vr.ad.video.vast, /^<VAST version="4\.2"/, 'the video slot got a VAST');
    const video = page.locator('#ad-video video');
    t.like(await video.getAttribute('src'), /\/assets\/demo\.webm$/, 'a <video> of the shipped WebM');
    await page.waitForFunction(() => __events.some((e) => e.element === 'ad-video' && e.event === 'complete'),
                               null, { timeout: 20000 });
    const played = (await events(page, 'video', 'ad-video')).map((e) => e.event);
    t.isDeep(played, ['start', 'firstQuartile', 'midpoint', 'thirdQuartile', 'complete'],
             'start, the quartiles and complete, in that order');
    const imp = await events(page, 'impression', 'ad-video');
    const first = (await events(page, 'video', 'ad-video'))[0];
    t.ok(imp.length === 1 && imp[0].at <= first.at, 'the impression fired once, with the start');
    for (const e of ['start', 'firstQuartile', 'midpoint', 'thirdQuartile', 'complete']) {
        const r = all.find((q) => q.url().startsWith(`${BASE}/app/v0/event/video/${e}?ad_log=`));
        const res = r && await r.response();
        t.is(res && res.status(), 204, `${e}: its VAST tracking URL requested (204)`);
    }
    t.is(await until(() => metric(units['demo-video'], 'video_completes'), 1), 1, 'the completion was counted');
    t.is(await metric(units['demo-video'], 'video_starts'), 1, '... and the start');

    // ---- video again: skipped once the offset has passed ----------------------
    await page.evaluate(() => adserve.refresh('ad-video'));
    await waitFor(page, 'render', 'ad-video', 2);
    const skip = page.locator('#ad-video button', { hasText: 'Skip ad' });
    t.ok(await skip.isHidden(), 'a skippable ad: no skip button at first');
    await skip.waitFor({ state: 'visible', timeout: 5000 });
    const shownAt = await page.evaluate(() => document.querySelector('#ad-video video').currentTime);
    t.cmp(shownAt, '>=', 1, `... offered after its 1 s skip offset (at ${shownAt.toFixed(2)} s)`);
    await skip.click();
    await page.waitForFunction(() => __events.some((e) => e.element === 'ad-video' && e.event === 'skip'));
    const second = (await events(page, 'video', 'ad-video')).map((e) => e.event).slice(5);
    t.is(second.at(-1), 'skip', `skipped: ${second.join(', ')}`);
    t.ok(!second.includes('complete'), '... and never completed');
    t.is(await page.locator('#ad-video video').count(), 0, '... the player gone');
    const skipReq = all.find((q) => q.url().startsWith(`${BASE}/app/v0/event/video/skip?ad_log=`));
    t.is(skipReq && (await skipReq.response()).status(), 204, '... its skip tracking URL requested (204)');

    t.isDeep(seen.errors, [], 'no error reached the page');
    await page.screenshot({ path: `${OUT}/formats.png`, fullPage: false });
    await context.close();
});
