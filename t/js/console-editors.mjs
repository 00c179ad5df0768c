// The console's editors against the real stack (run by t/173-console-editors.t).
// Every field, enum, bound and default the test expects of a generated form
// it reads from /api/openapi.json, as the console does; nothing is copied.

import { tap } from './lib/tap.mjs';
import { BASE, OUT, api } from './lib/stack.mjs';
import { axeViolations, consolePage, create, fill, go, heading, signIn } from './lib/console.mjs';

const t = tap();
const run = Date.now().toString(36);
const ADMIN = [process.env.ADSERVE_ADMIN_EMAIL, process.env.ADSERVE_ADMIN_PASSWORD];
const OPERATOR = [`op-${run}@example.com`, `op-pass-${run}`];

async function audit(page, name) {
    t.isDeep(await axeViolations(page), [], `axe-core: no serious or critical violation on ${name}`);
}
const shot = (page, name) => page.screenshot({ path: `${OUT}/${name}.png`, fullPage: true });
async function narrow(page, name) {
    const wide = await page.evaluate(() => document.documentElement.scrollWidth);
    t.cmp(wide, '<=', 390, `at 390 px, ${name} does not scroll sideways (${wide} px)`);
}
const doc = await (await fetch(`${BASE}/api/openapi.json`)).json();
const schema = (name) => doc.components.schemas[name];
// the focused element's id, once focus has settled on one (the forms move it after a render)
const focused = (page) => page.waitForFunction(() => document.activeElement && document.activeElement.id, null, { timeout: 5000 })
    .then((h) => h.jsonValue(), () => '');

// the test's own records, made through the API
const unit = (code, extra = {}) => api('POST', '/api/ad-units', { code: `${code}-${run}`, name: `${code} ${run}`, status: 'ACTIVE', ...extra });
await api('POST', '/api/users', { email: OPERATOR[0], password: OPERATOR[1], role: 'operator' });
const adv = await api('POST', '/api/advertisers', { name: `Editors ${run}` });
const site = await unit('site');
const child = await unit('child', { parent_id: site.id });
const placement = await api('POST', '/api/placements', { name: `Placement ${run}`, ad_unit_ids: [site.id] });
const order = await api('POST', '/api/orders', { advertiser_id: adv.id, name: `Order ${run}` });
for (const name of ['genre', 'mood']) await api('POST', '/api/custom-targeting/keys', { name, type: 'FREEFORM' });

await import('./lib/stack.mjs').then(({ inBrowser }) => inBrowser(t, async (browser) => {
    const admin = await consolePage(browser);
    let page = admin.page;
    await signIn(page, ...ADMIN);

    // ---- placement editors -------------------------------------------------
    await go(page, `#/ad-units/${site.id}`);
    await heading(page);
    await page.locator('#format-ext').waitFor();
    t.isDeep(await page.locator('details.format > summary').allInnerTexts(),
             ['Display (not set)', 'Video (not set)', 'Native (set)', 'Recommendation (set)', 'Edit ext'],
             'an ad unit has an editor per format, saying which are set, and the admin its ext editor');
    t.is(await page.locator('section[aria-labelledby="edit-h"]').locator('[data-path^="display"], [data-path^="ext"], textarea.code').count(), 0,
         '... and the edit form has no JSON box for them');
    await page.locator('#format-display > summary').click();
    const display = schema('DisplayPlacement').properties;
    t.is(await page.locator('#edit-ad-units-display-w').getAttribute('placeholder'), String(display.w.default),
         'the display width shows its default from the schema');
    t.is(await page.locator('#edit-ad-units-display-w').getAttribute('min'), String(display.w.minimum), '... and its bound');
    t.isDeep(await page.locator('#edit-ad-units-display-unit option').allInnerTexts(),
             [`(default: ${display.unit.default})`, ...display.unit.enum.map(String)], 'an enum is a select of its values, the default first');
    t.isDeep(await page.locator('#edit-ad-units-display-pos option').allInnerTexts(),
             ['(not set)', ...schema('PlacementPosition').enum], 'a nullable $ref enum is a select of the referenced enum');
    const shown = await page.locator('#edit-ad-units-display [data-path^="display."]').evaluateAll(
        (l) => [...new Set(l.map((e) => e.getAttribute('data-path').split(/[.[]/)[1]))]);
    t.isDeep(shown.sort(), Object.keys(display).sort(), 'every member of DisplayPlacement has its control');

    await fill(page, 'edit-ad-units', { 'display-w': '-1', 'display-h': '90' });
    await page.getByRole('button', { name: 'Save the display placement' }).click();
    await page.locator('#edit-ad-units-display-w-error').waitFor();
    t.like(await page.locator('#edit-ad-units-display-w-error').innerText(), />= 0/, "the API's 422 (display.w) is shown at the width");
    t.is(await page.locator('#edit-ad-units-display-w').getAttribute('aria-invalid'), 'true', '... marked invalid');
    t.is(await focused(page), 'edit-ad-units-display-w', '... and focused');
    await shot(page, 'placement-editor-422');
    await fill(page, 'edit-ad-units', { 'display-w': '728', 'display-mime': 'image/png, image/jpeg' });
    await page.selectOption('#edit-ad-units-display-pos', 'AboveTheFold');
    await page.getByRole('button', { name: 'Save the display placement' }).click();
    await page.locator('[role=status]', { hasText: 'The display placement is saved.' }).waitFor();
    let saved = await api('GET', `/api/ad-units/${site.id}`);
    t.isDeep([saved.display.w, saved.display.h, saved.display.pos, saved.display.mime, saved.display.unit],
             [728, 90, 'AboveTheFold', ['image/png', 'image/jpeg'], display.unit.default],
             'saved: the fields set, the others at their defaults');

    await page.locator('#format-video > summary').click();
    await fill(page, 'edit-ad-units', { 'video-w': '640', 'video-h': '360', 'video-mime': 'video/mp4' });
    await page.locator('#edit-ad-units-video-playmethod').getByLabel('1', { exact: true }).check();
    await page.getByRole('button', { name: 'Save the video placement' }).click();
    await page.locator('[role=status]', { hasText: 'The video placement is saved.' }).waitFor();
    saved = await api('GET', `/api/ad-units/${site.id}`);
    t.isDeep([saved.video.w, saved.video.h, saved.video.mime, saved.video.playmethod], [640, 360, ['video/mp4'], [1]],
             'a video placement: numbers, a list, and an enum array as checkboxes');

    await page.locator('#format-native > summary').click();
    await page.getByRole('button', { name: 'Add asset to native.assets' }).click();
    await fill(page, 'edit-ad-units', { 'native-assets-0-id': '1' });
    await page.getByRole('button', { name: 'Save the native placement' }).click();
    await page.locator('#edit-ad-units-native-assets-0-error').waitFor();
    t.like(await page.locator('#edit-ad-units-native-assets-0-error').innerText(), /at least one of title/,
           "an asset with no title, image, video or data: the 422 at that asset");
    await page.locator('#edit-ad-units-native-assets-0-title > summary').click();
    await fill(page, 'edit-ad-units', { 'native-assets-0-title-len': '25' });
    await page.getByRole('button', { name: 'Save the native placement' }).click();
    await page.locator('[role=status]', { hasText: 'The native placement is saved.' }).waitFor();
    saved = await api('GET', `/api/ad-units/${site.id}`);
    t.isDeep(saved.native.assets, [{ id: 1, title: { len: 25 } }], 'a native placement with a title asset');

    await page.locator('#format-recommendation > summary').click();
    const topn = schema('RecommendationPlacement').properties.topn;
    t.is(await page.locator('#edit-ad-units-recommendation-topn').inputValue(), String(topn.default), "the recommendation's topn as stored");
    await fill(page, 'edit-ad-units', { 'recommendation-topn': String(topn.maximum + 1) });
    await page.getByRole('button', { name: 'Add fallback to recommendation.fallback' }).click();
    await page.getByRole('button', { name: 'Save the recommendation placement' }).click();
    await page.locator('#edit-ad-units-recommendation-topn-error').waitFor();
    t.ok(true, `topn over ${topn.maximum}: the 422 at topn`);
    await fill(page, 'edit-ad-units', { 'recommendation-topn': '5' });
    await page.getByRole('button', { name: 'Save the recommendation placement' }).click();
    await page.locator('[role=status]', { hasText: 'The recommendation placement is saved.' }).waitFor();
    saved = await api('GET', `/api/ad-units/${site.id}`);
    t.isDeep([saved.recommendation.topn, saved.recommendation.fallback.map((f) => f.type)], [5, ['popular']],
             'a recommendation placement, its fallback a union whose type is chosen');
    await audit(page, 'the placement editors');
    await shot(page, 'placement-editors');

    // ---- ext, admin only, through endpoint 1 --------------------------------
    await page.locator('#format-ext > summary').click();
    const ext = schema('DeveloperAdUnitExt').properties;
    t.isDeep(await page.locator('#ext-ext-metric_mode option').allInnerTexts(),
             [`(default: ${ext.metric_mode.default})`, ...ext.metric_mode.enum], "the ext editor's enums are the schema's");
    await fill(page, 'ext', { 'ext-default_cpc': '-1', 'ext-bcat': 'IAB7-39, IAB8' });
    const extCall = page.waitForResponse((r) => r.url().includes('/api/developer/control/ad-units/'));
    await page.getByRole('button', { name: 'Save ext' }).click();
    t.is((await extCall).status(), 422, 'the ext editor saves through PATCH /api/developer/control/ad-units/{id}/ext');
    await page.locator('#ext-ext-default_cpc-error').waitFor();
    t.is(await focused(page), 'ext-ext-default_cpc', "... and its 422 (ext.default_cpc) is at that field, focused");
    await fill(page, 'ext', { 'ext-default_cpc': '0.5' });
    await page.selectOption('#ext-ext-metric_mode', 'internal_only');
    await page.getByRole('button', { name: 'Save ext' }).click();
    await page.locator('[role=status]', { hasText: 'The ext is saved.' }).waitFor();
    saved = await api('GET', `/api/ad-units/${site.id}`);
    t.isDeep([saved.ext.bcat, saved.ext.default_cpc, saved.ext.metric_mode], [['IAB7-39', 'IAB8'], 0.5, 'internal_only'], '... saved');
    await audit(page, 'the ext editor');

    const op = await consolePage(browser);
    await signIn(op.page, ...OPERATOR);
    await go(op.page, `#/ad-units/${site.id}`);
    await heading(op.page);
    await op.page.locator('#format-display').waitFor();
    t.is(await op.page.locator('#ext-h, #format-ext').count(), 0, 'an operator has the placement editors but no ext editor');

    // ---- the targeting builder -------------------------------------------
    page = op.page;
    await go(page, '#/line-items/new');
    await fill(page, 'new-line-items', { name: `Targeted ${run}`, type: 'STANDARD', cost_type: 'CPM', rate: '3',
                                         order_id: { label: `Order ${run}` } });
    const open = (part) => page.locator(`#new-line-items-targeting-${part} > summary`).click();
    await open('ad_units');
    await page.locator('#new-line-items-targeting-ad_units-include').getByLabel(`site ${run}`, { exact: true }).check();
    await page.locator('#new-line-items-targeting-ad_units-exclude').getByLabel(`child ${run}`, { exact: true }).check();
    await page.locator('#new-line-items-targeting-placements').getByLabel(`Placement ${run}`, { exact: true }).check();
    await page.getByRole('button', { name: 'Add size to targeting.sizes' }).click();
    await fill(page, 'new-line-items', { 'targeting-sizes-0-w': '300', 'targeting-sizes-0-h': '250' });
    // key-values: genre in [jazz, rock] and not mood = sad
    await page.selectOption('#new-line-items-targeting-kv-type', 'cmp');
    await fill(page, 'new-line-items', { 'targeting-kv-data-lhs': 'nosuchkey', 'targeting-kv-data-rhs': '1' });
    await page.selectOption('#new-line-items-targeting-kv-data-op', 'eq');
    // the keys come from a fetch of their own (a datalist's options are never visible)
    await page.locator('#new-line-items-targeting-kv-data-lhs-keys option[value=mood]').waitFor({ state: 'attached' });
    t.isDeep(await page.locator('#new-line-items-targeting-kv-data-lhs-keys option').evaluateAll((l) => l.map((o) => o.value).sort()),
             ['genre', 'mood'], "a comparison's key offers the custom targeting keys");
    await page.getByRole('button', { name: 'Create line item' }).click();
    await page.locator('#new-line-items-targeting-kv-data-lhs-error').waitFor();
    t.like(await page.locator('#new-line-items-targeting-kv-data-lhs-error').innerText(), /lhs\[0\].*not a custom targeting key/,
           'an unknown key: the 422 (targeting.kv.data.lhs[0]) at the key field, its full path said');
    await page.selectOption('#new-line-items-targeting-kv-type', 'and');
    await page.getByRole('button', { name: 'Add condition to targeting.kv.data' }).click();
    await page.getByRole('button', { name: 'Add condition to targeting.kv.data' }).click();
    await page.selectOption('#new-line-items-targeting-kv-data-0-type', 'cmp');
    await fill(page, 'new-line-items', { 'targeting-kv-data-0-data-lhs': 'genre', 'targeting-kv-data-0-data-rhs': '["jazz", "rock"]' });
    await page.selectOption('#new-line-items-targeting-kv-data-0-data-op', 'in');
    await page.selectOption('#new-line-items-targeting-kv-data-1-type', 'not');
    await page.selectOption('#new-line-items-targeting-kv-data-1-data-type', 'cmp');
    await fill(page, 'new-line-items', { 'targeting-kv-data-1-data-data-lhs': 'mood', 'targeting-kv-data-1-data-data-rhs': 'sad' });
    await page.selectOption('#new-line-items-targeting-kv-data-1-data-data-op', 'eq');
    await open('device');
    await page.locator('#new-line-items-targeting-device-types').getByLabel('mobile', { exact: true }).check();
    await page.locator('#new-line-items-targeting-device-types').getByLabel('tablet', { exact: true }).check();
    await open('user');
    const yob = schema('TargetingUser').properties.yob_min;
    t.isDeep([await page.locator('#new-line-items-targeting-user-yob_min').getAttribute('min'),
              await page.locator('#new-line-items-targeting-user-yob_min').getAttribute('max')],
             [String(yob.minimum), String(yob.maximum)], "the user's year of birth has the schema's bounds");
    await fill(page, 'new-line-items', { 'targeting-user-yob_min': '1970' });
    await page.locator('#new-line-items-targeting-user-genders').getByLabel('F', { exact: true }).check();
    await page.getByRole('button', { name: 'Add daypart to targeting.dayparts' }).click();
    await page.locator('#new-line-items-targeting-dayparts-0-days').getByLabel('mon', { exact: true }).check();
    await page.locator('#new-line-items-targeting-dayparts-0-days').getByLabel('tue', { exact: true }).check();
    await fill(page, 'new-line-items', { 'targeting-dayparts-0-start': '10:00', 'targeting-dayparts-0-end': '09:00' });
    await page.getByRole('button', { name: 'Create line item' }).click();
    const endError = page.locator('#new-line-items-targeting-dayparts-0-end-error');
    await endError.waitFor();
    t.like(await endError.innerText(), /after start/, "a daypart ending before it starts: the 422 (targeting.dayparts[0].end) at that field");
    t.is(await focused(page), 'new-line-items-targeting-dayparts-0-end', '... focused');
    await audit(page, 'the targeting builder with a 422');
    await shot(page, 'targeting-builder');
    await fill(page, 'new-line-items', { 'targeting-dayparts-0-start': '09:00', 'targeting-dayparts-0-end': '18:00' });
    const lineItem = await create(page, 'line-items', 'Create line item');
    const li = await api('GET', `/api/line-items/${lineItem}`);
    t.isDeep(li.targeting, {
        ad_units: { include: [site.id], exclude: [child.id] },
        placements: [placement.id],
        sizes: [{ w: 300, h: 250 }],
        kv: { type: 'and', data: [
            { type: 'cmp', data: { lhs: ['genre'], op: 'in', rhs: ['jazz', 'rock'] } },
            { type: 'not', data: { type: 'cmp', data: { lhs: ['mood'], op: 'eq', rhs: 'sad' } } },
        ] },
        device: { types: ['mobile', 'tablet'], os: [], browsers: [] },
        user: { yob_min: 1970, yob_max: null, genders: ['F'] },
        dayparts: [{ days: ['mon', 'tue'], start: '09:00', end: '18:00', tz: 'UTC' }],
        segments: { include: [], exclude: [] },
    }, 'the builder made the targeting JSON the API takes: ad units, placements, sizes, a key-value Expr tree, device, user, dayparts');
    t.is(await page.locator('#edit-line-items-targeting-kv-data-1-data-data-lhs').inputValue(), 'mood',
         "the line item's page edits the same tree");
    await page.locator('#edit-line-items-targeting-kv-data-1-data-data-rhs').fill('happy');
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.locator('[role=status]', { hasText: 'Saved.' }).waitFor();
    t.is((await api('GET', `/api/line-items/${lineItem}`)).targeting.kv.data[1].data.data.rhs, 'happy', '... and saves a change deep in it');
    await audit(page, 'a line item with its targeting');

    // ---- batch actions --------------------------------------------------------
    const li2 = await api('POST', '/api/line-items', { order_id: order.id, name: `Batch B ${run}`, type: 'STANDARD', cost_type: 'CPM', rate: 1 });
    const li3 = await api('POST', '/api/line-items', { order_id: order.id, name: `Batch C ${run}`, type: 'STANDARD', cost_type: 'CPM', rate: 1 });
    await api('PATCH', `/api/line-items/${li2.id}`, { status: 'ACTIVE' });
    await api('PATCH', `/api/line-items/${li3.id}`, { status: 'ACTIVE' });
    const draft = await api('POST', '/api/line-items', { order_id: order.id, name: `Batch A ${run}`, type: 'STANDARD', cost_type: 'CPM', rate: 1 });
    await go(page, '#/line-items');
    await page.fill('#list-q', `Batch`);
    await page.keyboard.press('Enter');
    await page.locator('tbody tr', { hasText: `Batch C ${run}` }).waitFor();
    await page.getByLabel(`Select Batch A ${run}`, { exact: true }).check();
    await page.getByLabel(`Select Batch B ${run}`, { exact: true }).check();
    await page.getByLabel(`Select Batch C ${run}`, { exact: true }).check();
    const batchCall = page.waitForResponse((r) => r.url().endsWith('/api/line-items/batch'));
    await page.locator('[role=group][aria-label="With the selected rows"]').getByRole('button', { name: 'Pause' }).click();
    t.is((await batchCall).status(), 200, 'Pause on three line items: one POST /api/line-items/batch');
    await page.locator('.batch p', { hasText: 'Pause: 2 of 3 done' }).waitFor();
    const row = (id) => page.locator(`tr[data-id="${id}"] td.result`);
    t.like(await row(draft.id).innerText(), /^409: status: cannot go from DRAFT to PAUSED/, "the draft's row shows its own refusal");
    t.is(await row(li2.id).innerText(), 'done', 'the others say done');
    t.like(await page.locator('.batch p').innerText(), /1 refused/, '... and the summary counts both');
    t.isDeep([(await api('GET', `/api/line-items/${li2.id}`)).status, (await api('GET', `/api/line-items/${li3.id}`)).status,
              (await api('GET', `/api/line-items/${draft.id}`)).status], ['PAUSED', 'PAUSED', 'DRAFT'], '... as the API has them');
    await page.locator(`tr[data-id="${li2.id}"] td`, { hasText: 'PAUSED' }).waitFor();
    t.ok(true, 'the list shows the new statuses');
    await audit(page, 'the line items list with batch results');
    await shot(page, 'batch-results');
    await page.getByLabel(`Select Batch A ${run}`, { exact: true }).uncheck();
    await page.locator('[role=group][aria-label="With the selected rows"]').getByRole('button', { name: 'Resume' }).click();
    await page.locator('.batch p', { hasText: 'Resume: 2 of 2 done' }).waitFor();
    t.is((await api('GET', `/api/line-items/${li3.id}`)).status, 'ACTIVE', 'Resume makes them ACTIVE again');

    const order2 = await api('POST', '/api/orders', { advertiser_id: adv.id, name: `Batch order ${run}` });
    await go(page, '#/orders');
    await page.fill('#list-q', run);
    await page.keyboard.press('Enter');
    await page.locator('tbody tr', { hasText: `Batch order ${run}` }).waitFor();
    await page.getByLabel(`Select Batch order ${run}`, { exact: true }).check();
    await page.getByLabel(`Select Order ${run}`, { exact: true }).check();
    await page.locator('[role=group][aria-label="With the selected rows"]').getByRole('button', { name: 'Archive' }).click();
    await page.locator('.batch p', { hasText: 'Archive: 2 of 2 done' }).waitFor();
    t.isDeep([(await api('GET', `/api/orders/${order2.id}`)).status, (await api('GET', `/api/orders/${order.id}`)).status],
             ['ARCHIVED', 'ARCHIVED'], 'two orders archived in one batch');

    // ---- the ad unit tree: move and archive, by keyboard ---------------------
    page = admin.page;
    const other = await unit('other');
    await go(page, '#/ad-units');
    await page.fill('#tree-q', run);
    const moveChild = page.getByRole('button', { name: `Move child ${run}` });
    await moveChild.focus();
    await page.keyboard.press('Enter');
    t.is(await focused(page), `move-${child.id}`, 'Move opens a parent picker, focused');
    const offered = await page.locator(`#move-${child.id} option`).evaluateAll((l) => l.map((o) => o.value));
    t.ok(offered.includes(other.id) && !offered.includes(child.id), '... offering other units, not itself');
    await page.keyboard.press('Escape');
    t.is(await page.locator(`#move-${child.id}`).count(), 0, '... Escape closes it');
    const moveSite = page.getByRole('button', { name: `Move site ${run}` });
    await moveSite.click();
    t.ok(!(await page.locator(`#move-${site.id} option`).evaluateAll((l) => l.map((o) => o.value))).includes(child.id),
         "a unit's own descendants are not offered as its parent");
    await page.getByRole('button', { name: 'Cancel' }).click();
    await moveChild.click();
    await page.selectOption(`#move-${child.id}`, other.id);
    await page.getByRole('button', { name: 'Move', exact: true }).click();
    await page.locator('[aria-live]', { hasText: `child ${run} moved under other ${run}` }).waitFor();
    const moved = await api('GET', `/api/ad-units/${child.id}`);
    t.isDeep([moved.parent_id, moved.path], [other.id, `${other.id}/${child.id}`], 'moved: its parent and path are the new ones');
    t.is(await page.locator('.tree > li', { hasText: `other ${run}` }).locator('ul > li', { hasText: `child ${run}` }).count(), 1,
         '... and the tree shows it under its new parent');
    await audit(page, 'the ad unit tree with its actions');
    await shot(page, 'ad-unit-move');
    await page.getByRole('button', { name: `Archive child ${run}` }).click();
    await page.locator('[aria-live]', { hasText: `child ${run} archived.` }).waitFor();
    t.is((await api('GET', `/api/ad-units/${child.id}`)).status, 'ARCHIVED', 'Archive archives the unit');
    t.is(await page.locator('.tree a', { hasText: `child ${run}` }).count(), 0, '... which leaves the tree');
    await page.check('#tree-archived');
    t.is(await page.locator('.tree a', { hasText: `child ${run}` }).count(), 1, '... until archived units are asked for');
    t.is(await page.getByRole('button', { name: `Archive child ${run}` }).count(), 0, '... with no Archive button of its own');

    // ---- an advertiser: no inventory to list, ids typed -------------------------
    const buyer = [`buyer-${run}@example.com`, `buyer-pass-${run}`];
    await api('POST', '/api/users', { email: buyer[0], password: buyer[1], role: 'advertiser', advertiser_id: adv.id });
    const advPage = await consolePage(browser);
    await signIn(advPage.page, ...buyer);
    await go(advPage.page, '#/line-items/new');
    await heading(advPage.page);
    await advPage.page.locator('#new-line-items-targeting-ad_units > summary').click();
    const include = advPage.page.locator('#new-line-items-targeting-ad_units-include');
    await include.waitFor();
    t.is(await include.evaluate((e) => e.tagName), 'INPUT',
         "an advertiser, who may not list ad units (403), gets the builder with the ad units' ids as a field");
    await audit(advPage.page, "an advertiser's targeting builder");

    // ---- 390 px ---------------------------------------------------------------
    const phone = await consolePage(browser, { width: 390, height: 844 });
    await signIn(phone.page, ...ADMIN);
    await go(phone.page, `#/ad-units/${site.id}`);
    await heading(phone.page);
    await phone.page.locator('#format-ext').waitFor();
    for (const k of ['display', 'video', 'native', 'recommendation', 'ext']) await phone.page.locator(`#format-${k} > summary`).click();
    await narrow(phone.page, 'the placement and ext editors, open');
    await audit(phone.page, 'the editors at 390 px');
    await shot(phone.page, 'phone-placement-editors');
    await go(phone.page, `#/line-items/${lineItem}`);
    await heading(phone.page);
    for (const k of ['ad_units', 'device', 'user', 'segments']) await phone.page.locator(`#edit-line-items-targeting-${k} > summary`).click();
    await narrow(phone.page, 'the targeting builder, open');
    await go(phone.page, '#/line-items');
    await heading(phone.page);
    await narrow(phone.page, 'the line items list with its batch actions');
    await go(phone.page, '#/ad-units');
    await heading(phone.page);
    await narrow(phone.page, 'the ad unit tree with its actions');

    for (const [who, s] of [['admin', admin], ['operator', op], ['advertiser', advPage], ['phone', phone]]) {
        t.isDeep(s.problems, [], `the ${who}'s pages raised no error and broke no policy`);
    }
}));
