// The console tests' helpers (t/js/console.mjs): a signed-in page per
// role, forms filled by their fields' ids, axe-core's audit of a page, and
// what the page reported that it should not (errors, CSP violations).

import fs from 'node:fs';
import { createRequire } from 'node:module';
import { BASE } from './stack.mjs';

export const CONSOLE = `${BASE}/console/`;
const AXE = fs.readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

// a context of its own (its own sessionStorage: its own sign-in) and a page
// whose errors and policy violations are kept
export async function consolePage(browser, viewport = { width: 1280, height: 900 }) {
    const context = await browser.newContext({ viewport });
    const page = await context.newPage();
    const problems = [];
    page.on('pageerror', (e) => problems.push(`page error: ${e}`));
    page.on('console', (m) => {
        if (m.type() === 'error' && !/status of 40[134]|status of 422/.test(m.text())) problems.push(`console: ${m.text()}`);
    });
    page.on('dialog', (d) => d.accept());
    return { context, page, problems };
}

// signs in through the form, with the keyboard only
export async function signIn(page, email, password) {
    await page.goto(CONSOLE);
    await page.locator('#email').waitFor();
    // the form focuses the e-mail field once it is drawn: typing before
    // that lost the keys (a sign-in that never ended, now and then)
    await page.waitForFunction(() => document.activeElement?.id === 'email');
    await page.keyboard.type(email);
    await page.keyboard.press('Tab');
    await page.keyboard.type(password);
    await page.keyboard.press('Enter');
    await page.locator('header .role').waitFor();
}

// a page by its hash: once the router has seen the change and rendered
// (waiting for any h1 alone could find the page before's)
export async function go(page, hash) {
    await page.evaluate((h) => new Promise((resolve) => {
        if (location.hash === h) {
            resolve();
            return;
        }
        addEventListener('hashchange', () => setTimeout(resolve), { once: true });
        location.hash = h;
    }), hash);
    await page.locator('main h1').first().waitFor();
}

// the h1 once it says something other than "Loading": the one seen then
// (reading it again could find the next page's)
export async function heading(page) {
    const h = await page.waitForFunction(() => {
        const h1 = document.querySelector('main h1');
        return h1 && !document.querySelector('main [role=status]') ? h1.innerText : false;
    });
    return h.jsonValue();
}

// fills a generated form: {name: value}; selects take an option's label,
// given as {label: '...'}
export async function fill(page, prefix, values) {
    for (const [name, value] of Object.entries(values)) {
        const el = page.locator(`#${prefix}-${name}`);
        const tag = await el.evaluate((e) => e.tagName);
        if (tag === 'SELECT') {
            await el.selectOption(typeof value === 'object' ? value : { value: String(value) }, { timeout: 10000 });
        } else {
            await el.fill(String(value));
        }
    }
}

// submits a generated form and waits for the record page it leads to: the id
export async function create(page, res, label) {
    await page.getByRole('button', { name: label }).click();
    await page.waitForURL(new RegExp(`#/${res}/[0-9a-f-]{36}$`));
    await heading(page);
    return page.url().split('/').pop();
}

// the serious and critical violations axe-core finds on the page as it is
export async function axeViolations(page) {
    await page.evaluate(AXE);
    const found = await page.evaluate(async () => {
        const r = await window.axe.run(document, { resultTypes: ['violations'] });
        return r.violations.map((v) => ({ id: v.id, impact: v.impact, nodes: v.nodes.map((n) => n.target.join(' ')).slice(0, 3) }));
    });
    return found.filter((v) => v.impact === 'serious' || v.impact === 'critical');
}

export const buttons = (page, group) =>
    page.locator(`[role=group][aria-label="${group}"] button`).allInnerTexts();

// the focused element's id once focus has had up to 5 s to reach want (a
// page moves it after its render, a tick after its fields appear)
export async function focusedId(page, want) {
    await page.waitForFunction((id) => document.activeElement?.id === id, want, { timeout: 5000 })
        .catch(() => {});
    return page.evaluate(() => document.activeElement?.id);
}
