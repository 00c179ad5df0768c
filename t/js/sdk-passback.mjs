// A passback on the demo publisher's page in Chromium, against the real
// stack (run by t/155-sdk-passback.t): an ad unit nothing fills, whose
// ext.passback tag the SDK renders in the same sandboxed frame as an HTML
// ad, where its script runs and cannot reach the page; a collapse_nobid
// slot is not collapsed by it, and no impression of ours is fired.

import { tap } from './lib/tap.mjs';
import { OUT, api, inBrowser, openDemo, sleep, waitFor, workersCurrent } from './lib/stack.mjs';

const t = tap();
// another network's tag: it writes into its own document, and tries the page
const TAG = '<p id="pb">another network\'s ad</p><script>'
    + 'document.getElementById("pb").dataset.ran = "yes";'
    + 'try { parent.document.body.dataset.pwned = "1"; } catch (e) { document.body.dataset.blocked = "yes"; }'
    + '</script>';
const unit = await api('POST', '/api/ad-units', {
    code: `passback-${process.pid}`, name: 'Passback', status: 'ACTIVE',
    ad_unit_sizes: [{ w: 300, h: 250 }], ext: { passback: { display: TAG } },
});
await workersCurrent();

await inBrowser(t, async (browser) => {
    const { page } = await openDemo(browser);
    await page.evaluate((tagid) => {
        const div = document.createElement('div');
        div.id = 'ad-passback';
        document.body.appendChild(div);
        adserve.registerAd({ tagid, element: 'ad-passback', width: 300, height: 250, collapse_nobid: true });
    }, unit.id);

    const [shown] = await waitFor(page, 'passback', 'ad-passback');
    t.is(shown.ad.passback.adm, TAG, 'a "passback" event with the unit\'s tag');
    const frame = page.locator('#ad-passback iframe');
    t.is(await frame.getAttribute('sandbox'), 'allow-scripts allow-popups allow-popups-to-escape-sandbox',
         '... drawn in a sandboxed frame, as an HTML ad');
    t.isDeep(await frame.evaluate((f) => [f.width, f.height]), ['300', '250'], '... at the unit\'s size');
    const inside = page.frameLocator('#ad-passback iframe');
    t.is(await inside.locator('#pb').getAttribute('data-ran'), 'yes', 'the tag\'s script ran in its frame');
    t.is(await inside.locator('body').getAttribute('data-blocked'), 'yes', '... and could not reach the page');
    t.is(await page.evaluate(() => document.body.dataset.pwned), undefined, '... which it left untouched');
    t.ok(await page.locator('#ad-passback').isVisible(), 'collapse_nobid: a passback is not collapsed');
    await page.locator('#ad-passback').scrollIntoViewIfNeeded();
    await sleep(1500);
    t.isDeep(await page.evaluate(() => __events.filter((e) => e.element === 'ad-passback').map((e) => e.name)),
             ['passback'], 'seen a while in view: no impression of ours, the SDK told nothing but the passback');
    await page.locator('#ad-passback').screenshot({ path: `${OUT}/passback.png` });
});
