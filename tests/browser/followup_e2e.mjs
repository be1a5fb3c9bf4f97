#!/usr/bin/env node
// Follow-ups in the page (follow-ups), in headless Chromium against the real
// stack (test_followups_page.py starts it with a task that has ended):
//   the message box under the ended task, a message with a file sent from
//   it, the second round streaming in under its divider, the conversation
//   of two rounds with the outputs marked new / changed / removed against
//   round 1, the kept-sandbox note; Share: the link opens read-only in a
//   browser without the owner's session (thread, answer, file links, no
//   message box); Fork from round 1: a new task with round 1's answer and
//   its message box; no console errors. Screenshots to $SHOTS.
//
//   node followup_e2e.mjs http://127.0.0.1:PORT/ TASK_ID
import { chromium } from 'playwright-core';
import { block, check, exitStatus } from './harness.mjs';
import { writeFileSync, mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';

const [base, taskId] = process.argv.slice(2);
const shots = process.env.SHOTS || tmpdir();
const upload = mkdtempSync(join(tmpdir(), 'llmbox-followup-'));
writeFileSync(join(upload, 'colors.txt'), 'blue\n');

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--no-first-run'],
});
const errors = [];
const page = await browser.newPage({ viewport: { width: 1200, height: 1400 } });
page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
page.on('pageerror', (e) => errors.push(String(e)));

await block('followup_page', async () => {
  await page.goto(`${base}#task=${taskId}`);
  const box = page.locator('#followup-prompt');
  await box.waitFor({ timeout: 20000 });
  check('followup_box_under_ended_task', await box.isVisible());
  const note = await page.locator('.followup-note').innerText();
  check('followup_note_says_sandbox_kept', /kept until/.test(note), note);
  check('followup_fresh_unchecked_while_kept', !(await page.locator('#followup-fresh').isChecked()));
  check('followup_single_round_no_thread', (await page.locator('.rounds .round').count()) === 0);

  await box.fill('[conv-p] now make it blue');
  await page.locator('#followup-files').setInputFiles(join(upload, 'colors.txt'));
  await page.locator('.followup button[type=submit]').click();

  // round 2 streams in, then the thread shows both rounds
  await page.locator('.round-divider').first().waitFor({ timeout: 30000 });
  const divider = await page.locator('.round-divider').first().innerText();
  check('followup_round_divider_in_steps', /Round 2/.test(divider) && /make it blue/.test(divider), divider);
  await page.locator('.rounds .round').nth(1).waitFor({ timeout: 60000 });
  const rounds = page.locator('.rounds .round');
  check('followup_two_rounds_shown', (await rounds.count()) === 2);
  const r2 = rounds.nth(1);
  await r2.locator('.chip-ok').waitFor({ timeout: 30000 });
  const text = await r2.innerText();
  check('followup_round2_answer', /blue done/.test(text), text);
  check('followup_round2_same_sandbox', /same sandbox/.test(text), text);
  const mark = async (path) => {
    const li = r2.locator('.round-file', { hasText: path });
    return (await li.count()) ? (await li.locator('.mark').count() ? li.locator('.mark').innerText() : '') : null;
  };
  check('followup_mark_changed', (await mark('chart.txt')) === 'changed', await mark('chart.txt'));
  check('followup_mark_removed', (await mark('draft.txt')) === 'removed', await mark('draft.txt'));
  check('followup_mark_new', (await mark('legend.txt')) === 'new', await mark('legend.txt'));
  check('followup_mark_same', (await mark('same.txt')) === '', await mark('same.txt'));
  const link = r2.locator('.round-file', { hasText: 'legend.txt' }).locator('a');
  check('followup_last_round_files_download', (await link.count()) === 1);
  const r1file = rounds.nth(0).locator('.round-file', { hasText: 'draft.txt' }).locator('a');
  check('followup_earlier_round_file_link', (await r1file.count()) === 1 &&
    /\/rounds\/1\/draft\.txt$/.test(await r1file.getAttribute('href')));
  const got = await page.evaluate(async (u) => (await fetch(u)).text(), await r1file.getAttribute('href'));
  check('followup_earlier_round_file_content', got === 'draft\n', got);
  const turns = await page.locator('.turn-title').allInnerTexts();
  check('followup_turns_per_round', turns.includes('Turn 1') && turns.includes('Round 2 · turn 1'), turns.join('|'));
  await page.locator('#followup-prompt').waitFor({ timeout: 10000 });
  await page.screenshot({ path: join(shots, 'followup-thread.png'), fullPage: true });

  // share: a link that opens without any login, read-only
  await page.locator('.task-actions button', { hasText: 'Share' }).click();
  const shareLink = page.locator('.share-box a');
  await shareLink.waitFor({ timeout: 10000 });
  const url = await shareLink.getAttribute('href');
  check('share_link_shown', /\/shared\.html#[0-9a-f]{32}$/.test(url), url);
  const other = await browser.newContext();
  const anon = await other.newPage();
  anon.on('pageerror', (e) => errors.push(String(e)));
  await anon.goto(url);
  await anon.locator('#shared-view .rounds .round').nth(1).waitFor({ timeout: 15000 });
  const shared = await anon.locator('#shared-view').innerText();
  check('share_view_thread_and_answer', /Round 2/.test(shared) && /blue done/.test(shared), shared.slice(0, 300));
  check('share_view_no_message_box', (await anon.locator('#followup-prompt').count()) === 0);
  const dl = anon.locator('#shared-view a', { hasText: 'legend.txt' });
  check('share_view_file_link', (await dl.count()) === 1 && /^\/dl\//.test(await dl.getAttribute('href')));
  await anon.screenshot({ path: join(shots, 'followup-shared.png'), fullPage: true });
  await other.close();

  // fork from round 1: a new task with round 1 only, and its message box
  await page.locator('.rounds .round').first().locator('button', { hasText: 'Fork from round 1' }).click();
  await page.waitForURL((u) => !u.hash.includes(taskId) && /#task=[0-9a-f]{32}$/.test(u.hash), { timeout: 15000 });
  await page.locator('#followup-prompt').waitFor({ timeout: 20000 });
  const head = await page.locator('.answer').innerText();
  check('fork_shows_round1_answer', /red done/.test(head), head);
  const forkNote = await page.locator('.followup-note').innerText();
  check('fork_restores_round1_state', /no longer kept/.test(forkNote) && /restores its saved state/.test(forkNote), forkNote);
  check('fork_fresh_unchecked_with_a_state', !(await page.locator('#followup-fresh').isChecked()));
});
check('followup_no_console_errors', errors.length === 0, errors.join(' | '));
await browser.close();
process.exit(exitStatus());
