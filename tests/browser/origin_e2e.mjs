#!/usr/bin/env node
// Drive-by attacks on an install without users, in headless Chromium
// (test_origin.py starts the web and nginx, and a finished task whose
// output holds evil.html and evil.svg: scripts that POST /api/tasks):
//   - a page of another origin on this machine (another loopback port)
//     auto-submits a multipart form to /api/tasks and sends a no-cors fetch;
//   - DNS rebinding: a page of attacker.test, whose name resolves to
//     127.0.0.1 (--host-resolver-rules), reads /api/tasks as its own origin;
//   - the generated html, viewed in the page's preview and opened in a tab,
//     and the svg opened in a tab, run their scripts.
// None may create a task or read one; each attack must have reached the
// backend and been refused there (its log says so), so a check cannot pass
// because a request was never sent. The page itself still starts a task.
// Prints PASS/FAIL lines.
//
//   LLMBOX_TEST_TASK=<id> LLMBOX_TEST_WEB_LOG=<path> node origin_e2e.mjs http://127.0.0.1:PORT/
import { chromium } from 'playwright-core';
import { block, check, exitStatus, sleep } from './harness.mjs';
import http from 'node:http';
import { readFileSync } from 'node:fs';

const base = process.argv[2];
const port = new URL(base).port;
const taskId = process.env.LLMBOX_TEST_TASK;
const webLog = process.env.LLMBOX_TEST_WEB_LOG;

// The API as a script sees it (no Origin): the prompts of every task.
function prompts() {
  return new Promise((resolve, reject) => {
    http.get(`${base}api/tasks?limit=200`, (res) => {
      let body = '';
      res.on('data', (c) => { body += c; });
      res.on('end', () => {
        try { resolve(JSON.parse(body).tasks.map((t) => t.prompt)); } catch (e) { reject(e); }
      });
    }).on('error', reject);
  });
}
// Lines of the web's log that say a request was refused as cross-origin.
const refusals = () => readFileSync(webLog, 'utf8').split('\n').filter((l) => /refused, (it came|the browser says|its Origin)/.test(l)).length;
const hostRefusals = () => readFileSync(webLog, 'utf8').split('\n').filter((l) => /refused, Host/.test(l)).length;

// Waits until the log has more refusals than `before` (or 5 s).
async function refusedSince(before, count = refusals) {
  for (let i = 0; i < 50 && count() <= before; i++) await sleep(100);
  return count() - before;
}

// The attacker's page, on another loopback port: another origin (same site).
const evilPage = `<!doctype html><title>evil</title>
<form id="f" method="post" enctype="multipart/form-data" action="${base}api/tasks">
<input name="prompt" value="xorigin-form"></form>
<script>
const fd = new FormData();
fd.append('prompt', 'xorigin-nocors');
fetch('${base}api/tasks', { method: 'POST', mode: 'no-cors', body: fd })
  .then(() => { document.title = 'sent'; }, () => { document.title = 'sent'; })
  .finally(() => document.getElementById('f').submit());
</script>`;
const evil = http.createServer((req, res) => {
  res.writeHead(200, { 'Content-Type': 'text/html' });
  res.end(evilPage);
});
await new Promise((r) => evil.listen(0, '127.0.0.1', r));
const evilUrl = `http://127.0.0.1:${evil.address().port}/`;

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking',
    '--disable-component-update', '--no-first-run', '--disable-sync',
    // DNS rebinding without DNS: attacker.test resolves to loopback
    '--host-resolver-rules=MAP attacker.test 127.0.0.1'],
});
const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 } });

await block('cross_origin_form_and_nocors_fetch_refused', async () => {
  const before = refusals();
  const page = await ctx.newPage();
  const nav = page.waitForURL(`${base}api/tasks`, { timeout: 10000 });
  await page.goto(evilUrl);
  await nav; // the form was submitted: the tab shows the API's answer
  const answer = await page.locator('body').innerText();
  const n = await refusedSince(before + 1);
  const ps = await prompts();
  check('cross_origin_form_and_nocors_fetch_refused',
    !ps.includes('xorigin-form') && !ps.includes('xorigin-nocors') && n >= 1 && /csrf/.test(answer),
    `tasks ${JSON.stringify(ps.filter((p) => p.startsWith('xorigin')))}, ${n + 1} refusal(s) logged, answer ${answer.slice(0, 120)}`);
  await page.close();
});

await block('dns_rebinding_refused', async () => {
  const before = hostRefusals();
  const page = await ctx.newPage();
  // nginx serves the page's static files under any name (they are public)
  await page.goto(`http://attacker.test:${port}/`);
  const got = await page.evaluate(async () => {
    const r = await fetch('/api/tasks');
    const fd = new FormData();
    fd.append('prompt', 'rebinding-post');
    const p = await fetch('/api/tasks', { method: 'POST', body: fd });
    return { status: r.status, body: await r.text(), post: p.status };
  });
  const n = await refusedSince(before, hostRefusals);
  const ps = await prompts();
  check('dns_rebinding_refused', got.status === 403 && /host_not_allowed/.test(got.body) && !/secret prompt/.test(got.body)
    && got.post === 403 && !ps.includes('rebinding-post') && n >= 2,
  `GET ${got.status} ${got.body.slice(0, 150)}, POST ${got.post}, ${n} host refusal(s)`);
  await page.close();
});

await block('artifact_in_preview_refused', async () => {
  const before = refusals();
  const page = await ctx.newPage();
  await page.goto(`${base}#task=${taskId}`);
  const frame = page.locator('iframe[src*="evil.html"]');
  await frame.waitFor({ timeout: 10000 });
  await frame.scrollIntoViewIfNeeded();
  const n = await refusedSince(before);
  const ps = await prompts();
  check('artifact_in_preview_refused', !ps.some((p) => p.startsWith('from-artifact')) && n >= 1,
    `tasks ${JSON.stringify(ps.filter((p) => p.startsWith('from-artifact')))}, ${n} refusal(s)`);
  // the image preview of the svg is an <img>: its script never runs there;
  // the card links to the file itself, opened next
  await page.close();
});

for (const [name, file] of [['html_artifact_tab_refused', 'evil.html'], ['svg_artifact_tab_refused', 'evil.svg']]) {
  await block(name, async () => {
    const before = refusals();
    const tab = await ctx.newPage();
    const resp = await tab.goto(`${base}api/tasks/${taskId}/artifacts/${file}?inline=1`);
    const csp = resp.headers()['content-security-policy'] || '';
    const n = await refusedSince(before);
    const ps = await prompts();
    check(name, /sandbox/.test(csp) && !/allow-same-origin/.test(csp) && !ps.some((p) => p.startsWith('from-artifact')) && n >= 1,
      `csp "${csp}", tasks ${JSON.stringify(ps.filter((p) => p.startsWith('from-artifact')))}, ${n} refusal(s)`);
    await tab.close();
  });
}

await block('page_itself_starts_a_task', async () => {
  const page = await ctx.newPage();
  await page.goto(base);
  const st = await page.evaluate(async () => {
    const fd = new FormData();
    fd.append('prompt', 'from-the-page');
    return (await fetch('/api/tasks', { method: 'POST', body: fd })).status;
  });
  const ps = await prompts();
  check('page_itself_starts_a_task', st === 201 && ps.includes('from-the-page'), `status ${st}`);
  await page.close();
});

await browser.close();
evil.close();
process.exit(exitStatus());
