// The recommendation widget on the demo publisher's page in Chromium,
// against the real stack (run by t/154-sdk-recommend.t).

import { tap } from './lib/tap.mjs';
import {
    BASE, DEMO, OUT, api, demoUnits, events, inBrowser, openDemo, sleep, statSum, until, waitFor,
    workersCurrent,
} from './lib/stack.mjs';

const t = tap();
const units = await demoUnits();
const RELATED = units['demo-related'];
const EVIL = '<img src=x onerror="window.__pwned=1">Fresh & <b>bold</b>';

// Through the API, as an operator and a customer's recommender would: an
// item whose title carries markup and a pool leading to it, and a unit in
// each tracking mode (no fallback: an item without a pool gets a 204).
async function fixtures() {
    await api('POST', '/api/catalog-items', {
        item_id: 'evil-title', title: EVIL, url: `${DEMO}landing.html?from=evil`, image: null,
    });
    await api('POST', '/api/associated-items-pools', {
        source_item_id: 'evil-source',
        items: [{ item_id: 'evil-title', score: 2 }, { item_id: 'race-food', score: 1 }],
    });
    const modes = {};
    for (const mode of ['on_ad_response', 'on_event_tracker']) {
        modes[mode] = (await api('POST', '/api/ad-units', {
            code: `rec-${mode}-${process.pid}`, name: `Related (${mode})`, status: 'ACTIVE',
            recommendation: { topn: 3, ad_log_tracking_mode: mode }, ext: { recommendation: { enabled: 1 } },
        })).id;
    }
    return modes;
}

// new elements at the end of the related articles' section, each filled
// by registerAd(options), or the value registerAd returned
function register(page, slots) {
    return page.evaluate((list) => list.map(([id, options]) => {
        const div = document.createElement('div');
        div.id = id;
        document.querySelector('.related').appendChild(div);
        if (options.recommendation && options.recommendation.template === '#related-item') {
            options.recommendation.template = document.getElementById('related-item').innerHTML;
        }
        return adserve.registerAd({ element: id, ...options }) !== undefined;
    }), slots);
}

const view = (page, id) => page.locator(`#${id}`).evaluate((e) => {
    e.scrollIntoView({ block: 'center' });
    return performance.now();
});

await inBrowser(t, async (browser) => {
    const { context, page, seen, all } = await openDemo(browser);

    // ---- the related articles of the page's article ----------------------------
    const [rendered] = await waitFor(page, 'render', 'ad-related');
    const items = rendered.ad.recommendation.items;
    t.isDeep(items.map((i) => i.id), ['gps-trackers', 'shoes-grip', 'race-food', 'volunteers'],
             'the widget got topn (4) items of the article\'s pool, in its rank');
    const asked = all.find((r) => r.url() === `${BASE}/app/v0/ad/${RELATED}`);
    t.isDeep(asked && JSON.parse(asked.postData()).ext, { item_id: 'mud-10k' },
             '... asked for with the page\'s article as ext.item_id');
    const links = page.locator('#ad-related a.related-item');
    t.is(await links.count(), 4, 'the page\'s <template> drew each item');
    t.isDeep(await links.evaluateAll((as) => as.map((a) => a.href)), items.map((i) => i.click_url),
             '... in the answer\'s order, each linking to its own click URL');
    t.ok(items.every((i) => i.click_url.startsWith(`${BASE}/app/v0/event/click?ad_log=`)
                            && i.click_url.endsWith(`&item=${i.id}&src=${i.source}`)),
         '... on the ad server, naming the item and its source');
    t.isDeep(await links.locator('span').allInnerTexts(), items.map((i) => i.title), '{{title}}: the titles');
    t.ok(await links.locator('img').evaluateAll((imgs) => imgs.length === 4
                                                && imgs.every((e) => e.complete && e.naturalWidth > 0)),
         '{{image}}: the thumbnails, loaded');
    t.isDeep(await links.evaluateAll((as) => as.map((a) => a.target)), ['', '', '', ''],
             '... the publisher\'s own pages, opened in this tab');

    // ---- its impression: half of it in view for a second ------------------------
    await sleep(1500);
    t.is((await events(page, 'impression', 'ad-related')).length, 0, 'below the fold: no impression');
    t.is(statSum(`u:${RELATED}:imp`), 0, '... and none counted (the demo unit is on_event_tracker)');
    const inView = await view(page, 'ad-related');
    const [imp] = await waitFor(page, 'impression', 'ad-related');
    t.cmp(imp.at - inView, '>=', 995, 'scrolled into view, it fired its impression after a second');
    t.is(imp.url, rendered.ad.impression_url, '... the answer\'s impression_url');
    const impReq = all.find((r) => r.url() === rendered.ad.impression_url);
    t.is(impReq && (await impReq.response()).status(), 204, '... requested (204)');
    t.is(await until(() => statSum(`u:${RELATED}:imp`), 1), 1, '... and counted once');

    // ---- markup in a title renders inert ----------------------------------------
    const modes = await fixtures();
    t.ok(await workersCurrent(), 'every worker has the new items and units');
    await page.evaluate(() => window.scrollTo(0, 0));
    await register(page, [
        ['evil-template', { tagid: RELATED,
                            recommendation: { item_id: 'evil-source', template: '#related-item' } }],
        ['evil-default', { tagid: RELATED, recommendation: { item_id: 'evil-source' } }],
    ]);
    const [evil] = await waitFor(page, 'render', 'evil-template');
    const [evilPlain] = await waitFor(page, 'render', 'evil-default');
    await sleep(300);
    t.isDeep(evil.ad.recommendation.items.map((i) => `${i.id}/${i.source}`),
             ['evil-title/algorithm', 'race-food/algorithm', 'first-ultra/preset', 'night-running/preset'],
             'an item whose title holds markup, first (the rest: its pool, then the editors\' picks)');
    t.is(await page.locator('#evil-template span').first().innerText(), EVIL,
         'the page\'s template: the title\'s markup is shown as text');
    t.is(await page.locator('#evil-template b, #evil-template img[onerror]').count(), 0,
         '... no element made of it');
    const plain = page.locator('#evil-default a');
    t.is(await plain.count(), 4, 'no template: the SDK draws a link per item');
    t.isDeep(await plain.evaluateAll((as) => as.map((a) => a.href)),
             evilPlain.ad.recommendation.items.map((i) => i.click_url), '... each to its click URL, in order');
    t.is(await plain.first().innerText(), EVIL, '... the title\'s markup shown as text there too');
    t.is(await page.locator('#evil-default b, #evil-default img[onerror]').count(), 0,
         '... no element made of it');
    t.isDeep(await plain.evaluateAll((as) => as.map((a) => a.querySelectorAll('img').length)), [0, 1, 1, 1],
             '... a thumbnail for each item with an image (evil-title has none)');
    t.is(await page.evaluate(() => window.__pwned), undefined, 'no script of a title ran');

    // ---- both tracking modes: one impression each, exactly ----------------------------
    t.isDeep(await register(page, [
        ['rec-resp', { tagid: modes.on_ad_response, recommendation: { item_id: 'mud-10k', context: 'demo' } }],
        ['rec-tracker', { tagid: modes.on_event_tracker, recommendation: { item_id: 'mud-10k' } }],
        ['rec-none', { tagid: modes.on_event_tracker, collapse_nobid: true,
                       recommendation: { item_id: 'navigation' } }],
        ['rec-bad', { tagid: modes.on_event_tracker, recommendation: { item_id: 'not an id' } }],
    ]), [true, true, true, false], 'an item_id the server would not take: registerAd refuses it');
    t.ok(seen.console.some((m) => m.type === 'warning'
                                  && m.text.startsWith('[adserve] registerAd: recommendation: item_id must be')),
         '... and says why');
    const [resp] = await waitFor(page, 'render', 'rec-resp');
    const [trk] = await waitFor(page, 'render', 'rec-tracker');
    const respAsked = all.find((r) => r.url() === `${BASE}/app/v0/ad/${modes.on_ad_response}`);
    t.isDeep(JSON.parse(respAsked.postData()).ext, { item_id: 'mud-10k', context: 'demo' },
             'recommendation.context goes as ext.context');
    t.is(resp.ad.recommendation.items.length, 3, 'a unit of topn 3: three items');
    t.is(await until(() => statSum(`u:${modes.on_ad_response}:imp`), 1), 1,
         'on_ad_response: the impression was counted with the answer, before the widget was seen');
    t.is(statSum(`u:${modes.on_event_tracker}:imp`), 0, 'on_event_tracker: not yet');
    t.is(statSum('dup:imp'), 0, '... and no repeat so far');
    for (const id of ['rec-resp', 'rec-tracker']) {
        await view(page, id);
        await waitFor(page, 'impression', id);
    }
    const sent = (id, ad) => all.find((r) => r.url() === ad.impression_url)
        && events(page, 'impression', id).then((e) => e.length === 1 && e[0].url === ad.impression_url);
    t.ok(await sent('rec-resp', resp.ad) && await sent('rec-tracker', trk.ad),
         'in view, each widget requested its impression_url once (the answer cannot say its mode)');
    t.is(await until(() => statSum(`u:${modes.on_event_tracker}:imp`), 1), 1,
         'on_event_tracker: counted then, once');
    t.is(await until(() => statSum('dup:imp'), 1), 1,
         'on_ad_response: the server took the SDK\'s request as a repeat of the same token');
    t.is(statSum(`u:${modes.on_ad_response}:imp`), 1, '... and still counts one impression');

    // ---- a 204: nothing to recommend ---------------------------------------------
    await waitFor(page, 'nobid', 'rec-none');
    t.ok(await page.locator('#rec-none').isHidden(),
         'an item without a pool, a unit without fallback: 204, collapsed');
    t.is(await page.locator('#rec-none').innerHTML(), '', '... and empty');
    await page.locator('.related').screenshot({ path: `${OUT}/related.png` });

    // ---- a click: the item's click URL, then the item's page ---------------------
    await view(page, 'ad-related');
    await page.evaluate(() => adserve.on('recommendation',
                                         (e) => console.log(`recommendation ${e.event} ${e.item.id}`)));
    const target = items[1];
    await Promise.all([page.waitForURL(target.url), links.nth(1).click()]);
    t.is(page.url(), target.url, 'a click on an item lands on its url, that article\'s page');
    const arrival = all.find((r) => r.url() === target.url);
    t.is(arrival && arrival.redirectedFrom() && arrival.redirectedFrom().url(), target.click_url,
         '... redirected there by its click URL');
    t.ok(seen.console.some((m) => m.text === `recommendation click ${target.id}`),
         '... and the SDK told the page first (a recommendation event)');
    t.is(await until(() => statSum(`u:${RELATED}:clk`), 1), 1, '... the click counted');
    const [next] = await waitFor(page, 'render', 'ad-related');
    t.isDeep(next.ad.recommendation.items.map((i) => i.id), ['downhill', 'winter', 'mud-10k', 'first-ultra'],
             'there the widget shows that article\'s related articles');
    t.like(await page.locator('#reading').innerText(), /"shoes-grip"/, '... and the page says which');

    t.isDeep(seen.errors, [], 'no error reached the page');
    await context.close();
});
