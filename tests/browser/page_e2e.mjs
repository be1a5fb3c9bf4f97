#!/usr/bin/env node
// The page as a user meets it, in headless Chromium against the real stack
// and the scripted fake model: type a prompt, attach two files, press Run,
// watch the turns arrive, see the answer, an inline image, players for the
// video and the sound, the html preview, and the "Download all" link.
// Prints PASS/FAIL lines; screenshots go to $SHOTS (default /tmp).
//
//   node page_e2e.mjs http://127.0.0.1:PORT/
import { chromium } from 'playwright-core';
import { writeFileSync, mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';

const base = process.argv[2];
const shots = process.env.SHOTS || tmpdir();
let failed = 0;
const check = (name, ok, why = '') => {
  console.log(ok ? `PASS ${name}` : `FAIL ${name}: ${why}`);
  if (!ok) failed++;
};

const dir = mkdtempSync(join(tmpdir(), 'llmbox-upload-'));
writeFileSync(join(dir, 'data.csv'), 'x,y\n1,2\n2,4\n');
writeFileSync(join(dir, 'notes.txt'), 'two input files\n');

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking',
    '--disable-component-update', '--no-first-run', '--disable-sync'],
});
const errors = [];
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  page.on('pageerror', (e) => errors.push(e.message));

  await page.goto(base);
  await page.waitForSelector('#health[data-state="ok"], #health[data-state="warn"], #health[data-state="down"]', { timeout: 10000 })
    .catch(() => {});
  await page.fill('#prompt', 'Make a small multimedia report from the inputs.');
  await page.setInputFiles('#file-input', [join(dir, 'data.csv'), join(dir, 'notes.txt')]);
  const listed = await page.locator('#file-list li').count();
  check('two_files_listed', listed === 2, `listed ${listed}`);
  await page.click('#run-button');

  // turns arrive one by one while the task runs (the fake model waits between steps)
  await page.waitForSelector('.turn', { timeout: 20000 });
  const firstSeen = await page.locator('.turn').count();
  await page.waitForSelector('.turn[data-turn="3"]', { timeout: 30000 });
  check('turns_appear_live', firstSeen < 5, `first look already showed ${firstSeen} turns`);
  await page.screenshot({ path: join(shots, 'llmbox-running.png') });

  await page.waitForSelector('.answer-text', { timeout: 30000 });
  const answer = await page.locator('.answer-text').innerText();
  check('answer_shown', answer.startsWith('A chart, a 440 Hz tone'), answer.slice(0, 100));
  await page.waitForSelector('img[src*="chart.png"]', { timeout: 15000 });
  const img = page.locator('img[src*="chart.png"]').first();
  await img.scrollIntoViewIfNeeded();
  const natural = await img.evaluate((el) => el.complete && el.naturalWidth);
  check('image_shown_inline', natural === 480, `naturalWidth ${natural}`);
  check('video_player', (await page.locator('video[src*="clip.mp4"], video source[src*="clip.mp4"]').count()) === 1);
  check('audio_player', (await page.locator('audio[src*="tone.wav"], audio source[src*="tone.wav"]').count()) === 1);
  const frame = page.locator('iframe[src*="report.html"]');
  check('html_in_sandboxed_iframe', (await frame.count()) === 1 &&
    (await frame.getAttribute('sandbox')) === 'allow-scripts', await frame.getAttribute('sandbox'));
  const zip = page.locator('a[href$="bundle.zip"]');
  check('download_all_zip_link', (await zip.count()) >= 1);
  if (await zip.count()) {
    const href = await zip.first().getAttribute('href');
    const r = await page.request.get(new URL(href, base).toString());
    const body = await r.body();
    check('zip_downloads', r.status() === 200 && body.subarray(0, 2).toString() === 'PK', `status ${r.status()}`);
  }
  const stdoutText = await page.locator('.turn').first().innerText();
  check('command_output_shown', stdoutText.includes('data.csv') && stdoutText.includes('notes.txt'), stdoutText.slice(0, 200));
  const exitChip = await page.locator('.turn[data-turn="4"]').innerText();
  check('exit_status_and_stderr_shown', /exit 2/.test(exitChip) && /No such file/.test(exitChip), exitChip.slice(0, 300));
  await page.screenshot({ path: join(shots, 'llmbox-done.png'), fullPage: true });

  // phone width, dark scheme: still usable, no horizontal scrolling
  const phone = await browser.newPage({ viewport: { width: 390, height: 844 }, colorScheme: 'dark' });
  phone.on('pageerror', (e) => errors.push(e.message));
  await phone.goto(page.url());
  await phone.waitForSelector('img[src*="chart.png"]', { timeout: 15000 });
  const overflow = await phone.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  check('phone_width_no_horizontal_scroll', overflow <= 1, `overflow ${overflow}px`);
  await phone.screenshot({ path: join(shots, 'llmbox-phone-dark.png'), fullPage: true });
} catch (e) {
  check('page_flow', false, e.message.split('\n')[0]);
} finally {
  await browser.close();
}
check('no_console_errors', errors.length === 0, errors.join(' | ').slice(0, 300));
process.exit(failed ? 1 : 0);
