// The console's forgot/reset password flow in Chromium (run by
// t/171-console-password.t): "Forgot password?" on the sign-in page asks
// for a link; the mail reaches the SMTP sink (SMTP_MAILDIR); its link opens
// the console's reset page, which takes the token out of the address and
// sets a new password; the new password signs in, the old one is refused,
// and the link does not work twice. axe-core audits each page.

import fs from 'node:fs';
import path from 'node:path';
import { tap } from './lib/tap.mjs';
import { BASE, OUT, api, inBrowser, sleep } from './lib/stack.mjs';
import { CONSOLE, axeViolations, consolePage, focusedId, heading, signIn } from './lib/console.mjs';

const t = tap();
const run = Date.now().toString(36);
const EMAIL = `forgetful-${run}@example.com`;
const OLD = `old-password-${run}`;
const NEW = `new-password-${run}`;

async function audit(page, name) {
    t.isDeep(await axeViolations(page), [], `axe-core: no serious or critical violation on ${name}`);
}
const shot = (page, name) => page.screenshot({ path: `${OUT}/${name}.png`, fullPage: true });
const login = (password) => fetch(`${BASE}/api/auth/login`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: EMAIL, password }),
}).then((r) => r.status);

// the reset link of the newest mail to EMAIL in the sink's Maildir
function mailedLink() {
    const dir = path.join(process.env.SMTP_MAILDIR, 'new');
    const files = fs.existsSync(dir) ? fs.readdirSync(dir).map((f) => path.join(dir, f)) : [];
    const mails = files.map((f) => fs.readFileSync(f, 'utf8')).filter((m) => m.includes(EMAIL));
    const m = mails.length && mails[mails.length - 1].match(/(\S+\/console\/#\/reset-password\?token=[A-Za-z0-9_-]+)/);
    return m ? m[1] : null;
}

await inBrowser(t, async (browser) => {
    await api('POST', '/api/users', { email: EMAIL, password: OLD, role: 'operator' });
    t.is(await login(OLD), 200, 'a user with its first password');

    // ---- forgot password ----------------------------------------------------
    const s = await consolePage(browser);
    const page = s.page;
    await page.goto(CONSOLE);
    await page.locator('#email').waitFor();
    const link = page.getByRole('link', { name: 'Forgot password?' });
    await link.focus();
    await page.keyboard.press('Enter');
    await page.locator('#forgot-email').waitFor();
    t.is(await page.locator('h1').innerText(), 'Forgot your password?', '"Forgot password?" on the sign-in page opens its page (keyboard)');
    t.is(await focusedId(page, 'forgot-email'), 'forgot-email', '... with the focus on the e-mail');
    await audit(page, 'the forgot-password page');
    await page.keyboard.type(EMAIL);
    await page.keyboard.press('Enter');
    t.like(await page.locator('#forgot-sent').innerText(), /^If the account exists, a reset link has been sent\.$/,
           'sent: the API\'s answer, which does not tell whether the account exists');
    await shot(page, 'forgot-password');

    let url = null;
    for (let i = 0; i < 150 && !url; i++) url = mailedLink() || (await sleep(100), null);
    t.ok(url && url.startsWith(`${BASE}/console/#/reset-password?token=`),
         `the mail in the SMTP sink links to the console's reset page (${url && url.replace(/token=.*/, 'token=…')})`);

    // ---- the link, in a new tab ---------------------------------------------
    const r = await consolePage(browser);
    const tab = r.page;
    const requests = [];
    tab.on('request', (q) => requests.push(q.url()));
    await tab.goto(url);
    await tab.locator('#reset-password').waitFor();
    t.is(await tab.locator('h1').innerText(), 'Choose a new password', 'the link opens the reset page');
    t.ok(!(await tab.locator('body').innerText()).includes('Loading'), '... alone: no "Loading the console…" left behind');
    t.is(await tab.evaluate(() => location.hash), '#/reset-password', '... which takes the token out of the address');
    t.is(await focusedId(tab, 'reset-password'), 'reset-password', '... and puts the focus on the new password');
    t.ok(!requests.some((u) => u.includes('token=')), '... and no request carried it in its URL');
    await audit(tab, 'the reset page');

    await tab.fill('#reset-password', NEW);
    await tab.fill('#reset-repeat', `${NEW}x`);
    await tab.keyboard.press('Enter');
    t.like(await tab.locator('#reset-error').innerText(), /differ/, 'two passwords that differ: said so, nothing sent');
    await tab.fill('#reset-password', 'short');
    await tab.fill('#reset-repeat', 'short');
    await tab.keyboard.press('Enter');
    await tab.waitForFunction(() => /password/.test(document.querySelector('#reset-error')?.textContent || ''));
    t.like(await tab.locator('#reset-error').innerText(), /password/, 'a password under 10 characters: the API\'s 422 shown');
    t.is(await tab.locator('#reset-password').getAttribute('aria-describedby'), 'reset-help reset-error', '... and tied to the field');
    await audit(tab, 'the reset page with an error');
    await shot(tab, 'reset-password');

    await tab.fill('#reset-password', NEW);
    await tab.fill('#reset-repeat', NEW);
    await tab.keyboard.press('Enter');
    t.like(await tab.locator('#reset-done').innerText(), /password is changed/, 'the new password is set');
    t.is(await login(OLD), 401, 'the old password is refused by the API');

    await tab.getByRole('link', { name: 'Sign in' }).click();
    await tab.locator('#email').waitFor();
    // the form is drawn once it focuses the e-mail (signIn's wait): filled
    // before that, the fields could be drawn again empty, and the form,
    // its fields required, was never sent (make test failed here once)
    await tab.waitForFunction(() => document.activeElement?.id === 'email');
    await tab.fill('#email', EMAIL);
    await tab.fill('#password', OLD);
    await tab.keyboard.press('Enter');
    t.like(await tab.locator('[role=alert]').innerText(), /Wrong e-mail or password/, 'the old password is refused on the sign-in page');
    await signIn(tab, EMAIL, NEW);
    t.is(await tab.locator('header .role').innerText(), 'operator', 'the new password signs in');
    t.is(await heading(tab), 'Dashboard', '... to the dashboard');

    // ---- the link twice, and at 390 px --------------------------------------
    const phone = await consolePage(browser, { width: 390, height: 844 });
    await phone.page.goto(url);
    await phone.page.locator('#reset-password').waitFor();
    await phone.page.fill('#reset-password', `third-password-${run}`);
    await phone.page.fill('#reset-repeat', `third-password-${run}`);
    await phone.page.keyboard.press('Enter');
    t.like(await phone.page.locator('#reset-error').innerText(), /invalid or expired reset token/, 'the link does not work twice');
    const wide = await phone.page.evaluate(() => document.documentElement.scrollWidth);
    t.cmp(wide, '<=', 390, `at 390 px, the reset page does not scroll sideways (${wide} px)`);
    t.is(await login(NEW), 200, '... and the password stays the new one');

    for (const [who, x] of [['forgot', s], ['reset', r], ['phone', phone]]) {
        t.isDeep(x.problems.filter((p) => !/status of 400/.test(p)), [], `the ${who} tab raised no error and broke no policy`);
    }
});
