#!/usr/bin/env node
// The login form, in headless Chromium against a stack with users
// (test_page.py starts it): the form alone before a login, a wrong token
// refused with a sentence, the session cookie out of the page's reach
// (HttpOnly, SameSite=Strict), a task run from the page with its html
// preview loading its own image through the preview key, the login kept
// across a reload, another user seeing "not found" for the task, and Log
// out. Prints PASS/FAIL lines.
//
//   LLMBOX_TEST_TOKEN_A=... LLMBOX_TEST_TOKEN_B=... node login_e2e.mjs http://127.0.0.1:PORT/
import { chromium } from 'playwright-core';
import { block, check, exitStatus, sleep } from './harness.mjs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';

const base = process.argv[2];
const tokenA = process.env.LLMBOX_TEST_TOKEN_A;
const tokenB = process.env.LLMBOX_TEST_TOKEN_B;
const shots = process.env.SHOTS || tmpdir();

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking',
    '--disable-component-update', '--no-first-run', '--disable-sync'],
});
const errors = [];
let expectFailedLoads = false;
const watch = (page, label) => {
  page.on('console', (m) => {
    if (m.type() !== 'error') return;
    if (expectFailedLoads && /Failed to load resource/.test(m.text())) return;
    errors.push(`${label}: ${m.text()}`);
  });
  page.on('pageerror', (e) => errors.push(`${label}: ${e.message}`));
};

const alice = await browser.newContext({ viewport: { width: 1280, height: 900 } });
const page = await alice.newPage();
watch(page, 'alice');
let taskId = '';

await block('login_form_first', async () => {
  await page.goto(base);
  await page.waitForSelector('#login-view:not([hidden])', { timeout: 10000 });
  const visible = await page.evaluate(() => ({
    form: !document.querySelector('#new-task-view').hidden,
    history: !document.querySelector('#history').hidden,
    account: !document.querySelector('#account').hidden,
    focused: document.activeElement && document.activeElement.id,
  }));
  check('login_form_first', !visible.form && !visible.history && !visible.account && visible.focused === 'login-token',
    JSON.stringify(visible));
  await page.screenshot({ path: join(shots, 'llmbox-login.png') });
});

await block('login_wrong_token', async () => {
  expectFailedLoads = true; // the 401 of the login request
  await page.fill('#login-token', 'lbx_' + '0'.repeat(64));
  await page.click('#login-button');
  await page.waitForSelector('#login-error:not([hidden])', { timeout: 5000 });
  const text = await page.textContent('#login-error');
  expectFailedLoads = false;
  check('login_wrong_token', /not valid here/.test(text) && await page.isVisible('#login-view'), text);
});

await block('login_cookie', async () => {
  await page.fill('#login-token', `  ${tokenA}\n`); // pasted with blanks: still fine
  await page.click('#login-button');
  await page.waitForSelector('#new-task-view:not([hidden])', { timeout: 5000 });
  const name = await page.textContent('#account-name');
  const cookies = await alice.cookies();
  const c = cookies.find((k) => k.name === 'llmbox_session');
  const docCookie = await page.evaluate(() => document.cookie);
  check('login_cookie', name === 'alice' && c && c.httpOnly && c.sameSite === 'Strict' && c.path === '/api/'
    && !docCookie.includes('llmbox_session') && await page.isHidden('#login-view'),
  JSON.stringify({ name, c, docCookie }));
});

await block('task_with_preview', async () => {
  await page.fill('#prompt', '[login] a page with a picture');
  await page.click('#run-button');
  await page.waitForFunction(() => /#task=/.test(location.hash), null, { timeout: 15000 });
  taskId = await page.evaluate(() => new URLSearchParams(location.hash.slice(1)).get('task'));
  await page.waitForSelector('.artifact-html iframe', { timeout: 30000 });
  const frameEl = await page.$('.artifact-html iframe');
  const src = await frameEl.getAttribute('src');
  const frame = await frameEl.contentFrame();
  await frame.waitForSelector('img', { timeout: 10000 });
  const width = await frame.waitForFunction(() => {
    const img = document.querySelector('img');
    return img && img.complete && img.naturalWidth;
  }, null, { timeout: 10000 }).then((h) => h.jsonValue());
  check('task_with_preview', /\/preview\/[0-9a-f]{32}\/page\.html$/.test(src) && width === 8,
    JSON.stringify({ src, width }));
  await page.screenshot({ path: join(shots, 'llmbox-login-task.png') });
});

await block('session_survives_reload', async () => {
  await page.reload();
  await page.waitForSelector('#task-view:not([hidden])', { timeout: 10000 });
  await page.waitForSelector('.artifact-html iframe', { timeout: 10000 });
  const items = await page.$$eval('#history-list li', (li) => li.length);
  check('session_survives_reload', items === 1 && await page.isHidden('#login-view'), `history items ${items}`);
});

await block('other_user_sees_not_found', async () => {
  const bob = await browser.newContext();
  const p2 = await bob.newPage();
  watch(p2, 'bob');
  await p2.goto(base);
  await p2.waitForSelector('#login-view:not([hidden])', { timeout: 10000 });
  await p2.fill('#login-token', tokenB);
  await p2.click('#login-button');
  await p2.waitForSelector('#new-task-view:not([hidden])', { timeout: 5000 });
  expectFailedLoads = true; // the 404 of alice's task
  await p2.evaluate((id) => { location.hash = `#task=${id}`; }, taskId);
  await p2.waitForFunction(() => /Not found/.test(document.querySelector('.task-chip')?.textContent || ''), null,
    { timeout: 10000 });
  const items = await p2.$$eval('#history-list li', (li) => li.length);
  expectFailedLoads = false;
  check('other_user_sees_not_found', items === 0, `bob's history has ${items} items`);
  await bob.close();
});

await block('logout', async () => {
  await page.click('#logout-button');
  await page.waitForSelector('#login-view:not([hidden])', { timeout: 5000 });
  expectFailedLoads = true;
  const st = await page.evaluate(async () => (await fetch('/api/tasks')).status);
  expectFailedLoads = false;
  const c = (await alice.cookies()).find((k) => k.name === 'llmbox_session');
  check('logout', st === 401 && !c && await page.isHidden('#history') && await page.isHidden('#new-task-view'),
    JSON.stringify({ st, c }));
});

check('login_no_console_errors', errors.length === 0, errors.join(' | '));
await browser.close();
process.exit(exitStatus());
