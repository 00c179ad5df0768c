// The management console in Chromium, against the real stack (run by
// t/170-console.t): an admin, an operator and an advertiser sign in and
// work through it: advertisers and users, an ad unit tree, an order, a
// line item (a 422 shown at its field), a creative an advertiser makes and
// an operator approves, its LICA, the ad served and its impression on the
// dashboard, the API token regenerated, the advertiser kept out of another
// advertiser's order and of inventory, a reload signed in by a silent
// refresh, sign-out. axe-core audits every page; screenshots go to TEST_OUT.

import http from 'node:http';
import { tap } from './lib/tap.mjs';
import { BASE, OUT, api, inBrowser, sleep, until, workersCurrent } from './lib/stack.mjs';
import {
    CONSOLE, axeViolations, buttons, consolePage, create, fill, go, heading, signIn,
} from './lib/console.mjs';

const t = tap();
const run = Date.now().toString(36);
const ADMIN = [process.env.ADSERVE_ADMIN_EMAIL, process.env.ADSERVE_ADMIN_PASSWORD];
const OPERATOR = [`operator-${run}@example.com`, `operator-pass-${run}`];
const ADVERTISER = [`buyer-${run}@example.com`, `buyer-pass-${run}`];
const UUID = /^[0-9a-f-]{36}$/;

async function audit(page, name) {
    const v = await axeViolations(page);
    t.isDeep(v, [], `axe-core: no serious or critical violation on ${name}`);
}
const shot = (page, name) => page.screenshot({ path: `${OUT}/${name}.png`, fullPage: true });
const menu = (page) => page.locator('nav[aria-label=Main] a').allInnerTexts();

function raw(path, headers = {}) {           // bytes as sent: no decompression
    return new Promise((resolve, reject) => {
        http.get(BASE + path, { headers }, (res) => {
            const chunks = [];
            res.on('data', (c) => chunks.push(c));
            res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks) }));
        }).on('error', reject);
    });
}
const me = (token) => fetch(`${BASE}/api/auth/me`, { headers: { authorization: `Bearer ${token}` } }).then((r) => r.status);

await inBrowser(t, async (browser) => {
    // ---- what nginx serves -------------------------------------------------
    const index = await raw('/console/', { 'accept-encoding': 'gzip' });
    t.is(index.status, 200, 'GET /console/ answers the page');
    t.like(index.headers['content-security-policy'], /default-src 'none'; script-src 'self'; style-src 'self';.*connect-src 'self'/,
           '... with a strict Content-Security-Policy');
    t.is(index.headers['x-content-type-options'], 'nosniff', '... nosniff');
    t.is(index.headers['cache-control'], 'no-cache', '... revalidated on every load');
    const html = (await raw('/console/')).body.toString();
    const js = html.match(/src="(assets\/app-\w+\.js)"/)[1];
    const asset = await raw(`/console/${js}`, { 'accept-encoding': 'gzip' });
    t.is(asset.headers['cache-control'], 'public, max-age=31536000, immutable', 'its script, named by its hash, is cached for a year');
    t.is(asset.headers['content-encoding'], 'gzip', '... and sent compressed');
    t.cmp(asset.body.length, '<', 300 * 1024, `the first load's JavaScript is under 300 KB compressed (${(asset.body.length / 1024).toFixed(1)} KB)`);
    t.is((await raw('/console/assets/../index.html')).status, 404, 'nothing else under /console/ is served');
    t.is((await raw('/console')).headers.location?.endsWith('/console/'), true, '/console redirects to /console/');

    // ---- the admin: sign-in, advertisers, users, ad unit tree ---------------
    const admin = await consolePage(browser);
    let page = admin.page;
    await page.goto(CONSOLE);
    await page.locator('#email').waitFor();
    await shot(page, 'sign-in');
    await audit(page, 'the sign-in page');
    await page.fill('#email', ADMIN[0]);
    await page.fill('#password', 'not-the-password');
    await page.keyboard.press('Enter');
    t.like(await page.locator('[role=alert]').innerText(), /Wrong e-mail or password/, 'a wrong password is refused, saying so');

    await signIn(page, ...ADMIN);
    t.is(await page.locator('header .role').innerText(), 'admin', 'the admin signs in with the keyboard; the role is shown');
    t.isDeep(await menu(page), ['Dashboard', 'Advertisers', 'Orders', 'Line items', 'Creatives', 'LICAs', 'Approvals',
                                'Ad units', 'Placements', 'Targeting keys', 'Ad sources', 'Explainer', 'Users', 'Audit log', 'Settings'],
             '... and every menu');
    await page.locator('figure.delivery canvas').first().waitFor();
    t.ok(true, 'the dashboard draws its chart');
    await audit(page, 'the dashboard');

    await go(page, '#/advertisers/new');
    await fill(page, 'new-advertisers', { name: `Acme ${run}`, domain: 'acme.example' });
    const acme = await create(page, 'advertisers', 'Create advertiser');
    t.is(await heading(page), `Acme ${run}`, 'an advertiser made through the generated form');
    await go(page, '#/advertisers/new');
    await fill(page, 'new-advertisers', { name: `Other ${run}` });
    const other = await create(page, 'advertisers', 'Create advertiser');
    t.like(other, UUID, 'and a second advertiser');

    await go(page, '#/users/new');
    // the form renders after the schema's fetch: wait for its options, then count them
    await page.locator('#new-users-role option').nth(3).waitFor({ state: 'attached' });
    t.is(await page.locator('#new-users-role option').count(), 4, 'the role field offers the enum of the schema (and a prompt)');
    await fill(page, 'new-users', { email: OPERATOR[0], password: OPERATOR[1], role: 'operator' });
    await create(page, 'users', 'Create user');
    await go(page, '#/users/new');
    await fill(page, 'new-users', { email: ADVERTISER[0], password: ADVERTISER[1], role: 'advertiser', advertiser_id: { label: `Acme ${run}` } });
    await create(page, 'users', 'Create user');
    t.ok(true, 'an operator and an advertiser user made through the users form');

    await go(page, '#/ad-units/new');
    await audit(page, 'a create form');
    await fill(page, 'new-ad-units', { code: `site-${run}`, name: `Site ${run}`, status: 'ACTIVE' });
    const site = await create(page, 'ad-units', 'Create ad unit');
    await go(page, '#/ad-units/new');
    await fill(page, 'new-ad-units', { code: `sports-${run}`, name: `Sports ${run}`, parent_id: { label: `Site ${run}` }, status: 'ACTIVE' });
    const sports = await create(page, 'ad-units', 'Create ad unit');
    await go(page, '#/ad-units');
    await page.locator('.tree').waitFor();
    const nested = page.locator('.tree > li', { hasText: `Site ${run}` }).locator('ul > li', { hasText: `Sports ${run}` });
    t.is(await nested.count(), 1, 'the ad unit tree shows the child under its parent');
    await page.fill('#tree-q', `sports-${run}`);
    t.isDeep(await page.locator('.tree a').allInnerTexts(), [`Site ${run}`, `Sports ${run}`],
             '... and a search keeps a match with its ancestors only');
    await shot(page, 'ad-units');
    await audit(page, 'the ad unit tree');

    // ---- placements, targeting keys and values, an ad unit's tag ------------
    await go(page, '#/placements/new');
    const units = page.locator('#new-placements-ad_unit_ids');
    await units.getByLabel(`Sports ${run}`, { exact: true }).waitFor();
    t.is(await units.evaluate((e) => e.tagName), 'FIELDSET', "a placement's ad units are checkboxes in a group");
    const placementName = `<b>Sports</b> & more ${run}`;
    await fill(page, 'new-placements', { name: placementName });
    await units.getByLabel(`Site ${run}`, { exact: true }).check();
    await units.getByLabel(`Sports ${run}`, { exact: true }).check();
    await audit(page, 'the placement form');
    await shot(page, 'placement-form');
    const placement = await create(page, 'placements', 'Create placement');
    t.is(await heading(page), placementName, '... made; its name shown as text');
    t.is(await page.locator('main h1 b').count(), 0, '... not as markup');
    // the ad units, the checkboxes' options, come after the record itself
    await page.locator('#edit-placements-ad_unit_ids').getByLabel(`Sports ${run}`, { exact: true }).waitFor();
    const checked = await page.locator('#edit-placements-ad_unit_ids input:checked').evaluateAll((l) => l.map((e) => e.value).sort());
    t.isDeep(checked, [site, sports].sort(), '... its edit form has both ad units ticked');
    await fill(page, 'edit-placements', { name: `Sports and more ${run}` });
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.locator('[role=status]', { hasText: 'Saved.' }).waitFor();
    await go(page, '#/placements');
    const placementRow = page.locator('tbody tr', { hasText: `Sports and more ${run}` });
    await placementRow.waitFor();
    t.is(await placementRow.locator('td').first().innerText(), '2', '... renamed; the list counts its ad units');
    await audit(page, 'the placements list');

    await go(page, '#/targeting-keys/new');
    await fill(page, 'new-targeting-keys', { name: `genre_${run}`, type: 'PREDEFINED' });
    await create(page, 'targeting-keys', 'Create targeting key');
    for (const v of ['jazz', 'rock']) {
        await page.fill('#new-value-name', v);
        await page.getByRole('button', { name: 'Add value' }).click();
        await page.locator('table.values tbody th', { hasText: v }).waitFor();
    }
    t.isDeep(await page.locator('table.values tbody th').allInnerTexts(), ['jazz', 'rock'],
             'a targeting key, and two values added on its page');
    await page.getByRole('button', { name: 'Delete the value rock' }).click();
    await page.locator('table.values tbody th', { hasText: 'rock' }).waitFor({ state: 'detached' });
    t.isDeep(await page.locator('table.values tbody th').allInnerTexts(), ['jazz'], '... and one deleted');
    const jazz = page.locator('table.values tbody tr', { hasText: 'jazz' });
    await page.getByRole('button', { name: 'Edit the description of jazz' }).click();
    await page.getByLabel('Description of jazz').fill('Smooth & <b>cool</b>');
    await jazz.getByRole('button', { name: 'Save' }).click();
    await page.locator('[role=status]', { hasText: 'Saved the description of jazz.' }).waitFor();
    // the row is drawn again from the value the API gave back, which may
    // come after the status: wait for it, then read it exactly
    await jazz.getByRole('button', { name: 'Edit the description of jazz' }).waitFor();
    await jazz.locator('td', { hasText: 'cool' }).first().waitFor();
    t.is(await jazz.locator('td').first().innerText(), 'Smooth & <b>cool</b>', "a value's description edited in its row, shown as text");
    t.is(await jazz.locator('td b').count(), 0, '... not as markup');
    const keyId = page.url().match(/targeting-keys\/([0-9a-f-]{36})/)[1];
    const [stored] = (await api('GET', `/api/custom-targeting/keys/${keyId}/values?q=jazz`)).items;
    t.is(stored.description, 'Smooth & <b>cool</b>', '... and stored by the API');
    await page.getByRole('button', { name: 'Edit the description of jazz' }).click();
    await page.getByLabel('Description of jazz').fill('');
    await jazz.getByRole('button', { name: 'Save' }).click();
    await jazz.getByRole('button', { name: 'Edit the description of jazz' }).waitFor();
    t.is((await api('GET', `/api/custom-targeting/keys/${keyId}/values/${stored.id}`)).description, null,
         '... emptied, it is null again');
    await audit(page, 'a targeting key with its values');
    await shot(page, 'targeting-key');

    await admin.context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: BASE });
    await go(page, `#/ad-units/${sports}`);
    const snippet = page.locator('#tag-snippet');
    await snippet.waitFor();
    const integration = await api('GET', `/api/ad-units/${sports}/integration`);
    t.is(await snippet.inputValue(), integration.sdk.snippet, "an ad unit's page shows its tag snippet, as the integration API gives it");
    t.like(integration.sdk.snippet, /<script/, '... the SDK\'s lines');
    await page.getByRole('button', { name: 'Copy the web SDK snippet' }).click();
    await page.locator('#tag-h ~ .field [aria-live]', { hasText: 'Copied.' }).first().waitFor();
    t.is(await page.evaluate(() => navigator.clipboard.readText()), integration.sdk.snippet, '... and the Copy button copies it');
    await audit(page, 'an ad unit with its tag');
    await shot(page, 'ad-unit-tag');

    await go(page, '#/orders/new');
    await fill(page, 'new-orders', { advertiser_id: { label: `Other ${run}` }, name: `Other's order ${run}` });
    const otherOrder = await create(page, 'orders', 'Create order');

    // ---- the operator: an order, a line item, a 422 at its field -----------
    const op = await consolePage(browser);
    page = op.page;
    await signIn(page, ...OPERATOR);
    t.is(await page.locator('header .role').innerText(), 'operator', 'the operator signs in; the role is shown');
    t.isDeep(await menu(page), ['Dashboard', 'Advertisers', 'Orders', 'Line items', 'Creatives', 'LICAs', 'Approvals',
                                'Ad units', 'Placements', 'Targeting keys', 'Ad sources', 'Explainer', 'Settings'],
             '... with every menu but users and the audit log');
    await go(page, '#/users');
    t.is(await heading(page), 'Not available', '... and the users page by URL says it is not available');

    await go(page, '#/orders/new');
    await fill(page, 'new-orders', { advertiser_id: { label: `Acme ${run}` }, name: `Spring ${run}` });
    const order = await create(page, 'orders', 'Create order');
    t.isDeep(await buttons(page, 'Change the status'), ['Set APPROVED', 'Archive'], 'a DRAFT order offers only APPROVED and ARCHIVED');
    await page.getByRole('button', { name: 'Set APPROVED' }).click();
    await page.locator('.state .badge', { hasText: 'APPROVED' }).waitFor();
    t.isDeep(await buttons(page, 'Change the status'), ['Set PAUSED', 'Archive'], '... approved, it offers PAUSED and ARCHIVED');

    await page.getByRole('link', { name: 'New line item' }).click();
    await page.locator(`#new-line-items-order_id option[value="${order}"]`).waitFor({ state: 'attached' });
    t.is(await page.locator('#new-line-items-order_id').inputValue(), order, 'a line item made from its order has the order chosen');
    t.is(await page.locator('#new-line-items-rate').getAttribute('max'), '999999', 'the rate field has the schema\'s bounds');
    await fill(page, 'new-line-items', { name: `Spring LI ${run}`, type: 'STANDARD', cost_type: 'CPM', rate: '10000000' });
    // the targeting builder: its ad units section, the site ticked
    await page.locator('#new-line-items-targeting-ad_units > summary').click();
    await page.locator('#new-line-items-targeting-ad_units-include').getByLabel(`Site ${run}`, { exact: true }).check();
    await page.getByRole('button', { name: 'Create line item' }).click();
    const rateError = page.locator('#new-line-items-rate-error');
    await rateError.waitFor();
    t.like(await rateError.innerText(), /999999|at most|maximum/, 'a rate over the bound: the 422 is shown at the rate field');
    t.is(await page.locator('#new-line-items-rate').getAttribute('aria-invalid'), 'true', '... which is marked invalid');
    t.is(await page.evaluate(() => document.activeElement.id), 'new-line-items-rate', '... and has the focus');
    await shot(page, 'line-item-422');
    await audit(page, 'a form with a 422');
    await fill(page, 'new-line-items', { rate: '2.5' });
    const lineItem = await create(page, 'line-items', 'Create line item');
    t.isDeep(await buttons(page, 'Change the status'), ['Set ACTIVE', 'Archive'], 'a DRAFT line item offers ACTIVE and ARCHIVED');
    await page.getByRole('button', { name: 'Set ACTIVE' }).click();
    await page.locator('.state .badge', { hasText: 'ACTIVE' }).waitFor();
    t.isDeep(await buttons(page, 'Change the status'), ['Set PAUSED', 'Set COMPLETED', 'Archive'], '... active: PAUSED, COMPLETED, ARCHIVED');
    await audit(page, 'a record page');

    // ---- the advertiser: its own things only, a creative for review --------
    const adv = await consolePage(browser);
    page = adv.page;
    await signIn(page, ...ADVERTISER);
    t.is(await page.locator('header .role').innerText(), 'advertiser', 'the advertiser signs in; the role is shown');
    t.isDeep(await menu(page), ['Dashboard', 'Orders', 'Line items', 'Creatives', 'LICAs', 'Settings'],
             '... with no inventory, advertiser, approval, user or audit menu');
    await go(page, '#/ad-units');
    t.is(await heading(page), 'Not available', '... the ad units page by URL is not available');
    await go(page, '#/orders');
    await page.locator('table').waitFor();
    t.isDeep(await page.locator('tbody th').allInnerTexts(), [`Spring ${run}`], '... its orders list holds its own order only');
    await go(page, `#/orders/${otherOrder}`);
    t.is(await heading(page), 'Not found', 'another advertiser\'s order by URL: not found');
    t.ok(!(await page.locator('main').innerText()).includes(`Other's order`), '... and nothing of it shows');
    await go(page, `#/orders/${order}`);
    t.is(await heading(page), `Spring ${run}`, 'its own order opens');
    t.isDeep(await buttons(page, 'Change the status'), ['Set PAUSED', 'Archive'], '... offering what an advertiser may do');

    await go(page, '#/creatives/new');
    await page.locator(`#new-creatives-advertiser_id option[value="${acme}"]`).waitFor({ state: 'attached' });
    t.is(await page.locator('#new-creatives-advertiser_id').inputValue(), acme, 'a new creative is for its own advertiser');
    await fill(page, 'new-creatives', { name: `Banner ${run}`, type: 'HTML', w: 300, h: 250,
        html: `<div><b>Hello</b> from run ${run}</div>`, landing_url: 'https://acme.example/spring' });
    const creative = await create(page, 'creatives', 'Create creative');
    t.is(await page.locator('.review .badge').innerText(), 'PENDING', 'an advertiser\'s creative waits for review');
    t.is(await page.locator('[role=group][aria-label=Review]').count(), 0, '... which it cannot give itself');
    const frame = page.locator('.preview iframe');
    t.is(await frame.getAttribute('sandbox'), '', 'its HTML preview is an iframe sandboxed without any permission');
    t.like(await page.frameLocator('.preview iframe').locator('body').innerText(), new RegExp(`Hello from run ${run}`),
           '... showing the markup');
    await shot(page, 'creative');
    await audit(page, 'a creative with its preview');

    // ---- the operator approves it, and attaches it --------------------------
    page = op.page;
    await go(page, '#/approvals');
    const card = page.locator('.card', { hasText: `Banner ${run}` });
    await card.waitFor();
    t.is(await card.locator('iframe[sandbox=""]').count(), 1, 'the approval queue shows the pending creative with its preview');
    t.like(await card.frameLocator('iframe').locator('body').innerText(), /Hello from run/, '... its markup drawn');
    await shot(page, 'approvals');
    await audit(page, 'the approval queue');
    await card.getByRole('button', { name: 'Approve' }).click();
    await page.locator('[role=status]', { hasText: 'APPROVED' }).waitFor();
    // the status is said before the queue is read again: wait for the card
    // to go (a failure shows as a count of 1 after 5 s)
    await card.waitFor({ state: 'detached', timeout: 5000 }).catch(() => {});
    t.is(await card.count(), 0, '... approved, it leaves the queue');

    await go(page, `#/line-items/${lineItem}`);
    await page.getByRole('link', { name: 'New LICA' }).click();
    await page.locator('#new-licas-creative_id').waitFor();
    await fill(page, 'new-licas', { creative_id: { label: `Banner ${run} (300×250)` } });
    const lica = await create(page, 'licas', 'Create LICA');
    t.isDeep(await buttons(page, 'Change the status'), ['Set PAUSED'], 'a LICA made from its line item: ACTIVE, offering PAUSED');

    // the chain serves, and its impression reaches the dashboard
    await workersCurrent();
    let served = null;
    for (let i = 0; i < 50 && !served; i++) {
        const r = await fetch(`${BASE}/app/v0/ad/${sports}`, { method: 'POST', body: '{}' });
        served = r.status === 200 ? await r.json() : (await sleep(200), null);
    }
    t.ok(served && served.ad && /Hello/.test(served.ad.display.adm), 'the ad serves on the child ad unit (targeted through its parent)');
    if (served) await fetch(served.ad.impression_url);
    await go(page, '#/');
    const impressions = await until(async () => {
        await page.reload();
        await page.locator('[data-metric=impressions]').waitFor();
        return Number(await page.locator('[data-metric=impressions]').innerText());
    }, 1, 15000);
    t.is(impressions, 1, 'its impression shows on the dashboard');
    await shot(page, 'dashboard');

    // ---- the decision explainer ---------------------------------------------
    // a second line item on the same unit, cheaper and capped at one ad an hour
    const capped = await api('POST', '/api/line-items', {
        order_id: order, name: `Capped LI ${run}`, type: 'STANDARD', cost_type: 'CPM', rate: 1,
        frequency_caps: [{ max: 1, seconds: 3600 }], targeting: { ad_units: { include: [site] } },
    });
    await api('PATCH', `/api/line-items/${capped.id}`, { approval: 'APPROVED' }).catch(() => {});
    await api('PATCH', `/api/line-items/${capped.id}`, { status: 'ACTIVE' });
    await api('POST', '/api/licas', { line_item_id: capped.id, creative_id: creative });
    await workersCurrent();
    await go(page, '#/explain');
    await page.locator(`#explain-unit option[value="${sports}"]`).waitFor({ state: 'attached' });
    await page.selectOption('#explain-unit', sports);
    const explain = async (request) => {
        await page.fill('#explain-request', request);
        const answered = page.waitForResponse((r) => r.url().includes('/api/explain/'));
        await page.getByRole('button', { name: 'Explain' }).click();
        await answered;
        await page.locator('#explain-winner').waitFor();
        return page.locator('#explain-winner').innerText();
    };
    t.like(await explain('{}'), new RegExp(`^Would serve: Spring LI ${run}\\.$`), 'the explainer names the line item that would serve');
    t.like(await page.locator('tr[data-decision=held_back]').innerText(), new RegExp(`Capped LI ${run}.*held back: its frequency cap cannot be checked without a user.id`, 's'),
           '... and why the capped one would not: no user.id, so its cap is unknown');
    await audit(page, 'the decision explainer');
    await shot(page, 'explain');
    // the request built from fields, written into its JSON
    await page.fill('#explain-user-id', 'reader-1');
    await page.fill('#explain-yob', '1990');
    await page.selectOption('#explain-gender', 'F');
    await page.getByRole('button', { name: 'Add a key-value' }).click();
    await page.fill('#explain-kv-0-key', 'genre');
    await page.fill('#explain-kv-0-value', 'jazz');
    const built = () => page.inputValue('#explain-request').then(JSON.parse);
    t.isDeep(await built(), { user: { id: 'reader-1', yob: 1990, gender: 'F' }, ext: { kv: { genre: 'jazz' } } },
             "the explainer's request built from its fields: user, key-values");
    const asked = page.waitForResponse((r) => r.url().includes('/api/explain/'));
    await page.getByRole('button', { name: 'Explain' }).click();
    t.isDeep((await asked).request().postDataJSON(), await built(), '... and is what the explainer is asked');
    await page.locator('tr[data-decision=outranked]').waitFor();
    t.like(await page.locator('tr[data-decision=outranked]').innerText(), new RegExp(`Capped LI ${run}.*a higher eCPM wins`, 's'),
           '... with a user.id: able to serve, outranked');
    await audit(page, 'the decision explainer with its request fields filled');
    await shot(page, 'explain-fields');
    await page.getByRole('button', { name: 'Remove key-value 1' }).click();
    await page.fill('#explain-yob', '');
    await page.selectOption('#explain-gender', '');
    t.isDeep(await built(), { user: { id: 'reader-1' } }, '... an emptied field removes its member, and the objects left empty');
    await page.fill('#explain-request', '{"user": ');
    t.is(await page.isDisabled('#explain-user-id'), true, 'the fields wait while the JSON is not valid');
    await page.getByRole('button', { name: 'Explain' }).click();
    t.like(await page.locator('main [role=alert]').innerText(), /not valid JSON/, 'a request that is not JSON is refused before asking');

    // ---- the admin: audit log, API token, silent refresh, sign-out ----------
    page = admin.page;
    await go(page, '#/audit');
    await page.locator('table.audit > tbody > tr').first().waitFor();
    t.like(await page.locator('table.audit > tbody').innerText(), /lica|line_item/, 'the audit log lists the changes');
    const renamed = page.locator('table.audit > tbody > tr', { hasText: placement.slice(0, 8) }).filter({ has: page.locator('td:nth-child(3)', { hasText: /^update$/ }) });
    await renamed.locator('summary').click();
    // updated_at too, unless the rename came within the second of the creation
    t.isDeep((await renamed.locator('table.diff tbody th').allInnerTexts()).filter((f) => f !== 'updated_at'), ['name'],
             "the placement's rename shows as the fields it changed, not two whole records");
    const nameRow = renamed.locator('table.diff tbody tr').first();
    t.isDeep([await nameRow.locator('td.before').innerText(), await nameRow.locator('td.after').innerText()],
             [JSON.stringify(placementName), JSON.stringify(`Sports and more ${run}`)], '... before and after');
    const made = page.locator('table.audit > tbody > tr', { hasText: placement.slice(0, 8) }).filter({ has: page.locator('td:nth-child(3)', { hasText: /^create$/ }) });
    await made.locator('summary').click();
    t.ok((await made.locator('table.diff tbody th').allInnerTexts()).includes('ad_unit_ids'), '... its creation, the fields it set');
    t.isDeep(await made.locator('table.diff thead th').allInnerTexts(), ['Field', 'Set to'], '... as one column of values');
    await shot(page, 'audit');
    await audit(page, 'the audit log');

    await go(page, '#/settings');
    t.is(await page.locator('#my-role').innerText(), 'admin', 'the settings show the role');
    await audit(page, 'the settings');
    await shot(page, 'settings');
    await page.getByRole('button', { name: 'Regenerate the API token' }).click();
    const first = await page.locator('#api-token').inputValue();
    t.is(await me(first), 200, 'a regenerated API token is shown, and works');
    await page.getByRole('button', { name: 'Regenerate the API token' }).click();
    await page.waitForFunction((old) => document.querySelector('#api-token').value !== old, first);
    const second = await page.locator('#api-token').inputValue();
    t.is(await me(first), 401, 'regenerated again: the old token is refused');
    t.is(await me(second), 200, '... and the new one works');
    await go(page, '#/');
    await go(page, '#/settings');
    t.is(await page.locator('#api-token').count(), 0, 'the token is shown once: not again on coming back');

    const refreshed = page.waitForResponse((r) => r.url().endsWith('/api/auth/refresh'));
    await page.reload();
    t.is((await refreshed).status(), 200, 'a reload signs in silently with the refresh token');
    await page.locator('header .role').waitFor();
    t.is(await heading(page), 'Settings', '... back on the same page');
    const held = await page.evaluate(() => sessionStorage.getItem('adserve.console.refresh'));
    const loggedOut = page.waitForResponse((r) => r.url().endsWith('/api/auth/logout'));
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.locator('#email').waitFor();
    t.is((await loggedOut).status(), 204, 'signing out posts the refresh token to /api/auth/logout');
    const reuse = await fetch(`${BASE}/api/auth/refresh`, { method: 'POST', headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ refresh_token: held }) });
    t.is(reuse.status, 401, '... which revoked it server-side: it no longer refreshes');
    t.is(await page.evaluate(() => sessionStorage.length), 0, 'signing out forgets the session');
    await page.reload();
    await page.locator('#email').waitFor();
    t.ok(true, '... and a reload stays signed out');

    // ---- 390 px wide --------------------------------------------------------
    const phone = await consolePage(browser, { width: 390, height: 844 });
    await signIn(phone.page, ...ADVERTISER);
    for (const [hash, name] of [['#/', 'dashboard'], ['#/orders', 'orders'], [`#/creatives/${creative}`, 'a creative']]) {
        await go(phone.page, hash);
        await heading(phone.page);
        const wide = await phone.page.evaluate(() => document.documentElement.scrollWidth);
        t.cmp(wide, '<=', 390, `at 390 px, ${name} does not scroll sideways (${wide} px)`);
    }
    await shot(phone.page, 'phone-creative');
    await audit(phone.page, 'a creative at 390 px');
    const opPhone = await consolePage(browser, { width: 390, height: 844 });
    await signIn(opPhone.page, ...OPERATOR);
    for (const [hash, name] of [['#/placements', 'the placements'], ['#/targeting-keys', 'the targeting keys'], [`#/ad-units/${sports}`, 'an ad unit with its tag']]) {
        await go(opPhone.page, hash);
        await heading(opPhone.page);
        const wide = await opPhone.page.evaluate(() => document.documentElement.scrollWidth);
        t.cmp(wide, '<=', 390, `at 390 px, ${name} does not scroll sideways (${wide} px)`);
    }
    await go(opPhone.page, '#/explain');
    await opPhone.page.locator(`#explain-unit option[value="${sports}"]`).waitFor({ state: 'attached' });
    await opPhone.page.selectOption('#explain-unit', sports);
    await opPhone.page.getByRole('button', { name: 'Explain' }).click();
    await opPhone.page.locator('#explain-winner').waitFor();
    const wideExplain = await opPhone.page.evaluate(() => document.documentElement.scrollWidth);
    t.cmp(wideExplain, '<=', 390, `at 390 px, the explainer's answer does not scroll sideways (${wideExplain} px)`);
    await shot(opPhone.page, 'phone-explain');
    await audit(opPhone.page, 'the explainer at 390 px');
    t.like(lica, UUID, 'the LICA was made');

    for (const [who, s] of [['admin', admin], ['operator', op], ['advertiser', adv], ['phone', phone], ['operator\'s phone', opPhone]]) {
        t.isDeep(s.problems, [], `the ${who}'s pages raised no error and broke no policy`);
    }
});
