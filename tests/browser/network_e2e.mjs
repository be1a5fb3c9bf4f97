#!/usr/bin/env node
// The task view's Network section (network.js), in headless Chromium
// against the real stack (test_network_page.py starts it, inside the egress
// test's namespaces, with a task that has ended): the rules, an allowed row
// (allowed.test, 45.1.1.10:80, the rule, bytes), a refused name
// (denied.test) and a refused address typed by hand, each with the rule
// that decided; a hostile record line shown as text, never as HTML; no
// console errors. Screenshots to $SHOTS: network-record.png (the page),
// network-card.png (the section).
//
// Then a task still running (its sandbox busy after one fetch): the live
// record shows its row while the task runs (read again every 5 s).
//
//   node network_e2e.mjs http://127.0.0.1:PORT/ TASK_ID RUNNING_TASK_ID
import { chromium } from 'playwright-core';
import { block, check, exitStatus } from './harness.mjs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';

const [base, taskId, slowId] = process.argv.slice(2);
const shots = process.env.SHOTS || tmpdir();

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--no-first-run'],
});
const errors = [];
const page = await browser.newPage({ viewport: { width: 1200, height: 1400 } });
page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
page.on('pageerror', (e) => errors.push(String(e)));

await block('network_page', async () => {
  await page.goto(`${base}#task=${taskId}`);
  const card = page.locator('.network-card');
  await card.locator('tbody tr').first().waitFor({ timeout: 30000 });
  check('network_section_shown', await card.isVisible());
  const rules = await card.locator('.net-rules').innerText();
  check('network_rules_shown', /allow allowed\.test/.test(rules), rules);

  const rows = card.locator('tbody tr');
  const texts = await rows.allInnerTexts();
  const allowed = await card.locator('tr.net-allowed', { hasText: 'connection' }).filter({ hasText: 'allowed.test' }).allInnerTexts();
  check('network_allowed_connection_row', allowed.length === 1 && /45\.1\.1\.10:80/.test(allowed[0])
    && /allow allowed\.test/.test(allowed[0]) && /[1-9]\d* B ↑\s+[1-9]\d* B ↓/.test(allowed[0])
    && /\d\d:\d\d:\d\d/.test(allowed[0]), texts.join(' | '));
  const deniedName = await card.locator('tr.net-refused', { hasText: 'denied.test' }).allInnerTexts();
  check('network_refused_name_row', deniedName.length >= 1 && /refused/.test(deniedName[0])
    && /no allow rule names it/.test(deniedName[0]), texts.join(' | '));
  const literal = await card.locator('tr.net-refused', { hasText: '45.1.1.20:80' }).allInnerTexts();
  check('network_refused_address_row', literal.length === 1
    && /refused/.test(literal[0]), texts.slice(-3).join(' | '));
  const count = await card.locator('.section-count').innerText();
  check('network_count_says_refused', /attempts, [1-9]\d* refused/.test(count), count);

  // the hostile line: its text shown as it is, nothing of it run or drawn
  const hostile = card.locator('td.net-name', { hasText: '<img src=x onerror=' });
  check('network_hostile_name_is_text', (await hostile.count()) === 1
    && (await hostile.innerText()).includes('<img src=x onerror="window.__xss=1">.test'), await card.innerText());
  const hrow = await card.locator('tr', { hasText: '<img src=x' }).innerText();
  check('network_hostile_rule_and_addr_are_text', hrow.includes('<script>window.__xss=2</script>:80')
    && hrow.includes('<b onmouseover="window.__xss=3">deny</b>'), hrow);
  check('network_hostile_made_no_elements', (await card.locator('img, script, b').count()) === 0);
  await card.scrollIntoViewIfNeeded();
  await page.screenshot({ path: join(shots, 'network-record.png'), fullPage: true });
  await card.screenshot({ path: join(shots, 'network-card.png') });
  await card.locator('tr', { hasText: '<img src=x' }).hover();
  check('network_hostile_ran_nothing', (await page.evaluate(() => window.__xss)) === undefined);
  check('network_no_console_errors', errors.length === 0, errors.join(' | '));
});

await block('network_page_live', async () => {
  await page.goto(`${base}#task=${slowId}`);
  const row = page.locator('.network-card tr.net-allowed', { hasText: 'connection' }).filter({ hasText: 'allowed.test' });
  await row.waitFor({ timeout: 20000 });
  const chip = await page.locator('.task-chip').innerText();
  check('network_live_record_while_running', /running/i.test(chip) && /45\.1\.1\.10:80/.test(await row.innerText()),
    chip);
});

await browser.close();
process.exit(exitStatus());
