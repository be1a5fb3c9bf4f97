#!/usr/bin/env node
// The page as a user meets it, in headless Chromium against the real stack
// and the scripted fake model (test_page.py sets both up):
//   submit a task with two files dropped on the drop zone, the form locked
//   while it uploads, the turns arriving live, the sandbox-starting state;
//   the answer, an image that renders, a video that plays, an html page
//   that cannot reach the page or its cookies, a CSV table, a PDF link, the
//   file tree, the whole output as a zip; Stop on a long task; a reload, a
//   dropped stream and a hole in the events mid-task without duplicate or
//   missing steps; Run
//   again; delete from the history; an uploaded archive unpacked; phone
//   width in dark mode; keyboard order; labelled controls; no console errors.
// Prints PASS/FAIL lines; screenshots go to $SHOTS.
//
//   node page_e2e.mjs http://127.0.0.1:PORT/
import { chromium } from 'playwright-core';
import { block, check, exitStatus, sleep } from './harness.mjs';
import { writeFileSync, readFileSync, mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { spawnSync } from 'node:child_process';

const base = process.argv[2];
const shots = process.env.SHOTS || tmpdir();

/** Entry names and methods from a zip's central directory. */
function zipEntries(buf) {
  let eocd = -1;
  for (let i = buf.length - 22; i >= Math.max(0, buf.length - 65557); i--) {
    if (buf.readUInt32LE(i) === 0x06054b50) { eocd = i; break; }
  }
  if (eocd < 0) throw new Error('not a zip: no end of central directory');
  const n = buf.readUInt16LE(eocd + 10);
  let off = buf.readUInt32LE(eocd + 16);
  const out = new Map();
  for (let k = 0; k < n; k++) {
    if (buf.readUInt32LE(off) !== 0x02014b50) throw new Error('bad central directory');
    const method = buf.readUInt16LE(off + 10);
    const nl = buf.readUInt16LE(off + 28);
    const el = buf.readUInt16LE(off + 30);
    const cl = buf.readUInt16LE(off + 32);
    out.set(buf.toString('utf8', off + 46, off + 46 + nl), method);
    off += 46 + nl + el + cl;
  }
  return out;
}

const upload = mkdtempSync(join(tmpdir(), 'llmbox-upload-'));
writeFileSync(join(upload, 'data.csv'), 'x,y\n1,2\n2,4\n');
writeFileSync(join(upload, 'notes.txt'), 'two input files\n');

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking',
    '--disable-component-update', '--no-first-run', '--disable-sync', '--autoplay-policy=no-user-gesture-required'],
});
const errors = [];
// Chromium logs every failed request ("Failed to load resource: ... 400")
// as a console error; while a block provokes one on purpose, those are
// expected. Every other console error fails the run.
let expectFailedLoads = false;
const watch = (page, label) => {
  page.on('console', (m) => {
    if (m.type() !== 'error') return;
    if (expectFailedLoads && /Failed to load resource/.test(m.text())) return;
    errors.push(`${label}: ${m.text()}`);
  });
  page.on('pageerror', (e) => errors.push(`${label}: ${e.message}`));
};
const desktop = await browser.newContext({ viewport: { width: 1280, height: 900 }, acceptDownloads: true });
const page = await desktop.newPage();
watch(page, 'desktop');
const api = async (path, method = 'GET') => {
  const r = await page.request.fetch(new URL(path, base).toString(), { method });
  let body = null;
  try { body = await r.json(); } catch { /* not JSON */ }
  return { status: r.status(), body, raw: r };
};
const taskIdOf = (url) => new URL(url).hash.replace(/^#task=/, '');

/** Every visible form control and button has a name a screen reader can say. */
async function unlabelled(p) {
  return p.evaluate(() => {
    const bad = [];
    for (const el of document.querySelectorAll('input, select, textarea, button, a[href]')) {
      if (el.type === 'hidden' || el.hidden || el.closest('[hidden]')) continue;
      const r = el.getBoundingClientRect();
      if (!r.width && !r.height) continue;
      const named = (el.labels && el.labels.length && [...el.labels].some((l) => l.textContent.trim()))
        || el.getAttribute('aria-label') || el.getAttribute('aria-labelledby')
        || (el.tagName !== 'INPUT' && el.tagName !== 'SELECT' && el.tagName !== 'TEXTAREA' && el.textContent.trim());
      if (!named) bad.push(el.outerHTML.slice(0, 80));
    }
    return bad;
  });
}

let firstTask = '';

// ---- 1. the form: limits up front, examples, drop zone, locked while uploading
await block('submit_form', async () => {
  await page.goto(base);
  await page.waitForSelector('#health[data-state="ok"], #health[data-state="warn"]', { timeout: 15000 });
  await page.waitForFunction(() => !document.querySelector('#examples').hidden);
  check('size_limit_shown_up_front', /^\d+(\.\d)? MB$/.test(await page.locator('#upload-limit').innerText()),
    await page.locator('#upload-limit').innerText());
  const examples = page.locator('#examples .example');
  check('example_tasks', (await examples.count()) >= 3, `${await examples.count()} examples`);
  await examples.first().click();
  check('example_fills_prompt', (await page.inputValue('#prompt')).length > 40, await page.inputValue('#prompt'));
  await page.fill('#prompt', 'Make a small multimedia report from the inputs.');

  // two files dropped on the drop zone, as a drag from the desktop would
  const dt = await page.evaluateHandle(() => {
    const d = new DataTransfer();
    d.items.add(new File(['x,y\n1,2\n2,4\n'], 'data.csv', { type: 'text/csv' }));
    d.items.add(new File(['two input files\n'], 'notes.txt', { type: 'text/plain' }));
    return d;
  });
  await page.dispatchEvent('#dropzone', 'dragenter', { dataTransfer: dt });
  check('dropzone_highlights', await page.locator('#dropzone.is-dragover').count() === 1);
  await page.dispatchEvent('#dropzone', 'drop', { dataTransfer: dt });
  await page.waitForFunction(() => document.querySelectorAll('#file-list li').length === 2);
  check('two_files_dropped', true);
  const bad = await unlabelled(page);
  check('form_controls_labelled', bad.length === 0, bad.join(' | '));
  await page.screenshot({ path: join(shots, 'llmbox-submit.png') });

  // hold the upload for a moment to see the form locked
  await page.route('**/api/tasks', async (route) => {
    if (route.request().method() === 'POST') await sleep(1200);
    await route.continue();
  });
  await page.click('#run-button');
  await page.waitForFunction(() => document.querySelector('#task-fields').disabled, null, { timeout: 2000 });
  const locked = await page.evaluate(() => ({
    fieldset: document.querySelector('#task-fields').disabled,
    run: document.querySelector('#run-button').disabled,
    cancel: !document.querySelector('#cancel-upload').hidden,
    prompt: document.querySelector('#prompt').matches(':disabled'),
  }));
  check('form_locked_during_upload', locked.fieldset && locked.run && locked.cancel && locked.prompt, JSON.stringify(locked));
  await page.waitForURL(/#task=[0-9a-f]{32}$/, { timeout: 15000 });
  await page.unroute('**/api/tasks');
  firstTask = taskIdOf(page.url());
  const t = await api(`/api/tasks/${firstTask}`);
  check('two_files_uploaded', t.body && t.body.inputs.map((i) => i.path).sort().join(',') === 'data.csv,notes.txt',
    JSON.stringify(t.body && t.body.inputs));
});

// ---- 2. live: the sandbox-starting state, then turns one by one, the meter
await block('live_timeline', async () => {
  const phase = await page.waitForFunction(() => {
    const s = document.querySelector('.status-text');
    return s && /sandbox/i.test(s.textContent) ? s.textContent : false;
  }, null, { timeout: 10000 }).then((h) => h.jsonValue()).catch(() => '');
  check('sandbox_starting_state_shown', /sandbox/i.test(phase), phase || 'no status mentioned the sandbox');
  await page.waitForSelector('.turn', { timeout: 20000 });
  const firstSeen = await page.locator('.turn').count();
  await page.waitForSelector('.turn[data-turn="3"]', { timeout: 30000 });
  check('turns_appear_live', firstSeen < 5, `first look already showed ${firstSeen} turns`);
  const meter = await page.locator('.meter').innerText();
  check('token_and_time_meter', /TOKENS\s*[\d,]+/i.test(meter) && /TIME\s*\d+:\d\d/i.test(meter), meter.replace(/\n/g, ' '));
  await page.screenshot({ path: join(shots, 'llmbox-running.png') });
});

// ---- 3. results
await block('results', async () => {
  await page.waitForSelector('.answer-text', { timeout: 60000 });
  const answer = await page.locator('.answer-text').innerText();
  check('answer_shown', answer.startsWith('A chart, a 440 Hz tone'), answer.slice(0, 100));

  const img = page.locator('img[src*="chart.png"]').first();
  await img.waitFor({ timeout: 15000 });
  await img.scrollIntoViewIfNeeded();
  await page.waitForFunction((el) => el.complete, await img.elementHandle());
  const natural = await img.evaluate((el) => el.naturalWidth);
  check('image_renders', natural > 0, `naturalWidth ${natural}`);

  const video = page.locator('video[src*="clip.mp4"]');
  check('video_player', (await video.count()) === 1);
  await video.scrollIntoViewIfNeeded();
  const play = await video.evaluate(async (v) => {
    v.muted = true;
    try { await v.play(); } catch (e) { return { error: e.message }; }
    await new Promise((r) => setTimeout(r, 400));
    const playing = { paused: v.paused, time: v.currentTime, ready: v.readyState, duration: v.duration };
    v.pause();
    return { ...playing, pausedAfter: v.paused };
  });
  check('video_plays', !play.error && play.paused === false && play.time > 0 && play.pausedAfter === true
    && play.duration > 1, JSON.stringify(play));
  check('audio_player', (await page.locator('audio[src*="tone.wav"]').count()) === 1);

  // the html artifact runs in an opaque origin: no parent page, no cookies, no storage
  await page.evaluate(() => { document.cookie = 'llmbox_secret=s3cret; path=/'; localStorage.setItem('k', 'v'); });
  const frameEl = page.locator('iframe[src*="probe.html"]');
  check('html_in_sandboxed_iframe', (await frameEl.count()) === 1 && (await frameEl.getAttribute('sandbox')) === 'allow-scripts',
    await frameEl.getAttribute('sandbox'));
  await frameEl.scrollIntoViewIfNeeded();
  await page.reload(); // the probe reads the cookie set above
  await page.locator('iframe[src*="probe.html"]').scrollIntoViewIfNeeded();
  const frame = await (await page.locator('iframe[src*="probe.html"]').elementHandle()).contentFrame();
  await frame.waitForFunction(() => document.querySelector('#r').textContent !== 'script did not run', null, { timeout: 10000 });
  const probe = await frame.locator('#r').innerText();
  check('html_artifact_isolated', probe === 'parent:blocked cookie:blocked storage:blocked', probe);
  const parentSees = await page.evaluate(() => document.querySelector('iframe[src*="probe.html"]').contentDocument);
  check('page_cannot_reach_into_artifact', parentSees === null);
  // opened on its own (a new tab), the file is still sandboxed by its CSP header
  const tab = await desktop.newPage();
  const href = new URL(await page.locator('iframe[src*="probe.html"]').getAttribute('src'), base).toString();
  const resp = await tab.goto(href);
  check('artifact_csp_sandbox_header', /sandbox/.test(resp.headers()['content-security-policy'] || ''),
    resp.headers()['content-security-policy']);
  const alone = await tab.locator('#r').innerText();
  check('artifact_tab_has_no_cookies', /cookie:blocked/.test(alone) && !/s3cret/.test(alone), alone);
  await tab.close();

  // a CSV as a table, a PDF as a download link
  const table = page.locator('.csv-table').first();
  await table.waitFor({ timeout: 10000 });
  const headers = await table.locator('th').allInnerTexts();
  check('csv_as_table', headers.join(',') === 'bar,height' && (await table.locator('tbody tr').count()) === 12,
    `${headers} / ${await table.locator('tbody tr').count()} rows`);
  const pdfCard = page.locator('.artifact', { hasText: 'docs/plot.pdf' });
  const pdfLink = pdfCard.locator('a[download]');
  check('pdf_as_download_link', (await pdfCard.count()) === 1 && (await pdfLink.count()) === 1
    && (await pdfCard.locator('iframe, embed, object').count()) === 0
    && /^\/dl\/[0-9a-f]{32}\/docs\/plot\.pdf\?e=\d+&s=[A-Za-z0-9_-]{22}$/.test(await pdfLink.getAttribute('href')),
    await pdfLink.getAttribute('href'));
  // downloaded as a user would: nginx serves the signed link on its own
  const [pdfDownload] = await Promise.all([page.waitForEvent('download'), pdfLink.click()]);
  const pdfSaved = join(upload, 'plot.pdf');
  await pdfDownload.saveAs(pdfSaved);
  check('signed_download_link', pdfDownload.suggestedFilename() === 'plot.pdf'
    && readFileSync(pdfSaved).subarray(0, 5).toString() === '%PDF-',
    `${pdfDownload.suggestedFilename()} ${readFileSync(pdfSaved).subarray(0, 8)}`);

  // the file tree with a folder download
  const tree = page.locator('.tree');
  const folders = await tree.locator('.tree-folder > details > summary .tree-name').allInnerTexts();
  check('file_tree_folders', folders.join(',') === 'data/,docs/', folders.join(','));
  const folderHref = await tree.locator('a[href*="bundle.zip?path=docs"]').getAttribute('href');
  const fz = await page.request.get(new URL(folderHref, base).toString());
  const fzNames = [...zipEntries(await fz.body()).keys()];
  check('folder_download', fz.status() === 200 && fzNames.join(',') === 'docs/plot.pdf', `${fz.status()} ${fzNames}`);

  // the whole output, downloaded as a user would
  const [download] = await Promise.all([
    page.waitForEvent('download'),
    page.locator('a[href$="bundle.zip"]').first().click(),
  ]);
  const saved = join(upload, 'bundle.zip');
  await download.saveAs(saved);
  const entries = zipEntries(readFileSync(saved));
  const want = ['answer.txt', 'trajectory.json', 'output/chart.png', 'output/clip.mp4', 'output/tone.wav',
    'output/report.html', 'output/probe.html', 'output/data/summary.csv', 'output/docs/plot.pdf'];
  const missing = want.filter((n) => !entries.has(n));
  check('zip_download_entries', missing.length === 0 && download.suggestedFilename() === `llmbox-${firstTask.slice(0, 8)}.zip`,
    `missing ${missing}; name ${download.suggestedFilename()}; has ${[...entries.keys()]}`);
  check('zip_stores_media_deflates_text', entries.get('output/chart.png') === 0 && entries.get('output/clip.mp4') === 0
    && entries.get('output/tone.wav') === 0
    && entries.get('output/data/summary.csv') === 8 && entries.get('trajectory.json') === 8,
    JSON.stringify([...entries]));

  const first = await page.locator('.turn').first().innerText();
  check('command_output_shown', first.includes('data.csv') && first.includes('notes.txt'), first.slice(0, 200));
  const exitTurn = await page.locator('.turn[data-turn="6"]').innerText();
  check('exit_status_and_stderr_shown', /exit 2/.test(exitTurn) && /No such file/.test(exitTurn), exitTurn.slice(0, 300));
  const bad = await unlabelled(page);
  check('task_view_controls_labelled', bad.length === 0, bad.join(' | '));

  // The picture of the finished state: a tall window rather than a
  // full-page capture, which leaves sandboxed iframes blank.
  await page.setViewportSize({ width: 1280, height: 1700 });
  await page.evaluate(() => window.scrollTo(0, 0));
  for (const sel of ['iframe[src*="report.html"]', 'iframe[src*="probe.html"]']) {
    await page.locator(sel).first().scrollIntoViewIfNeeded();
    await sleep(300);
  }
  await page.evaluate(() => window.scrollTo(0, 0));
  await sleep(600);
  await page.screenshot({ path: join(shots, 'llmbox-finished.png') });
  await page.setViewportSize({ width: 1280, height: 900 });
});

// ---- 4. phone width, dark
await block('phone', async () => {
  const phoneCtx = await browser.newContext({ viewport: { width: 390, height: 844 }, colorScheme: 'dark', isMobile: true, hasTouch: true });
  const phone = await phoneCtx.newPage();
  watch(phone, 'phone');
  await phone.goto(`${base}#task=${firstTask}`);
  await phone.waitForSelector('img[src*="chart.png"]', { timeout: 15000 });
  await phone.waitForSelector('.turn[data-turn="7"]', { timeout: 15000 });
  const overflow = await phone.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  check('phone_width_no_horizontal_scroll', overflow <= 1, `overflow ${overflow}px`);
  const bg = await phone.evaluate(() => getComputedStyle(document.body).backgroundColor);
  check('dark_scheme_applies', /rgb\((\d+), (\d+), (\d+)\)/.test(bg) && Number(bg.match(/\d+/)[0]) < 60, bg);
  await phone.evaluate(() => window.scrollTo(0, 0));
  await phone.screenshot({ path: join(shots, 'llmbox-phone-dark.png') });
  await phoneCtx.close();
  const lightCtx = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
  const light = await lightCtx.newPage();
  watch(light, 'phone-light');
  await light.goto(base);
  await light.waitForSelector('#health[data-state="ok"], #health[data-state="warn"]', { timeout: 15000 });
  await light.waitForFunction(() => !document.querySelector('#examples').hidden);
  const overflow2 = await light.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  check('phone_form_no_horizontal_scroll', overflow2 <= 1, `overflow ${overflow2}px`);
  await light.screenshot({ path: join(shots, 'llmbox-phone-submit.png'), fullPage: true });
  await lightCtx.close();
});

// ---- 5. keyboard: the form is reachable in a sensible order
await block('keyboard', async () => {
  await page.goto(base);
  await page.waitForSelector('#health[data-state="ok"], #health[data-state="warn"]', { timeout: 15000 });
  // from the top of the page, as a keyboard user arrives
  await page.focus('.skip-link');
  const seen = [];
  for (let i = 0; i < 30; i++) {
    await page.keyboard.press('Tab');
    const id = await page.evaluate(() => {
      const a = document.activeElement;
      const ring = a ? getComputedStyle(a).outlineStyle : 'none';
      return a ? `${a.id || a.className || a.tagName}|${ring}` : '';
    });
    seen.push(id);
  }
  const order = ['prompt', 'choose-files', 'unpack', 'max-turns', 'run-button'];
  const at = order.map((id) => seen.findIndex((s) => s.startsWith(`${id}|`)));
  check('keyboard_reaches_form_in_order', at.every((x, i) => x >= 0 && (i === 0 || x > at[i - 1])), seen.join(' '));
  const run = seen.find((s) => s.startsWith('run-button|')) || '';
  check('keyboard_focus_visible', run.endsWith('|solid'), run);
});

// ---- 6. Stop on a long task (submitted with Ctrl+Enter)
await block('stop', async () => {
  await page.goto(base);
  await page.fill('#prompt', '[long] Wait for a long time.');
  await page.focus('#prompt');
  await page.keyboard.press('Control+Enter');
  await page.waitForURL(/#task=[0-9a-f]{32}$/, { timeout: 15000 });
  await page.waitForSelector('.call .chip:text("running…")', { timeout: 20000 });
  const t0 = Date.now();
  await page.click('button:text("Stop")');
  await page.waitForSelector('.task-chip:text("Stopped")', { timeout: 10000 });
  const took = Date.now() - t0;
  const line = await page.locator('.status-line').innerText();
  check('stop_ends_task', took < 5000 && /Stopped/.test(line), `${took} ms: ${line}`);
  const t = await api(`/api/tasks/${taskIdOf(page.url())}`);
  check('stop_recorded', t.body && t.body.status === 'cancelled', JSON.stringify(t.body && t.body.status));
  await page.waitForSelector('.answer-card', { timeout: 10000 });
});

/** Turn numbers, tool call count and the step-N outputs shown. */
const timelineShape = (p) => p.evaluate(() => ({
  turns: [...document.querySelectorAll('.turn')].map((t) => Number(t.dataset.turn)),
  calls: document.querySelectorAll('.call').length,
  outs: [...document.querySelectorAll('.out-stdout code')].map((c) => c.textContent.trim()),
}));
const noDupNoGap = (s) => s.turns.join(',') === '1,2,3,4,5' && s.calls === 5
  && s.outs.join(',') === 'step-1,step-2,step-3,step-4';

// ---- 7. reload mid-task, and a dropped connection: no duplicates, no gaps
await block('resume', async () => {
  await page.goto(base);
  await page.fill('#prompt', '[slow] Four slow steps.');
  await page.click('#run-button');
  await page.waitForURL(/#task=[0-9a-f]{32}$/, { timeout: 15000 });
  await page.waitForSelector('.turn[data-turn="2"]', { timeout: 20000 });
  await page.reload();
  await page.waitForSelector('.task-chip:text("Succeeded")', { timeout: 30000 });
  const after = await timelineShape(page);
  check('reload_mid_task_no_duplicates', noDupNoGap(after), JSON.stringify(after));

  // The stack ends every event stream after 3 s (LLMBOX_SSE_MAX_S): the
  // browser reconnects by itself with Last-Event-ID and the server goes on
  // from there, through nginx, while the task runs.
  const resumed = [];
  const onRequest = async (r) => {
    if (!/\/events/.test(r.url())) return;
    const last = (await r.allHeaders())['last-event-id'];
    if (last) resumed.push(Number(last));
  };
  page.on('request', onRequest);
  await page.goto(base);
  await page.fill('#prompt', '[slow] Four slow steps over streams that end every 3 s.');
  await page.click('#run-button');
  await page.waitForURL(/#task=[0-9a-f]{32}$/, { timeout: 15000 });
  await page.waitForSelector('.task-chip:text("Succeeded")', { timeout: 40000 });
  page.off('request', onRequest);
  const drop = await timelineShape(page);
  check('dropped_stream_resumes_from_last_event_id', noDupNoGap(drop) && resumed.length >= 1 && resumed.every((x) => x > 0),
    `${JSON.stringify(drop)} resumed after ${JSON.stringify(resumed)}`);
  // A stream that skips an event: the page notices the hole and asks again
  // from the last event it has.
  const seen2 = await cutStream(2, (evs) => evs.filter((e) => e.id <= 4 && e.id !== 3));
  const gap = await timelineShape(page);
  check('event_gap_is_refetched', noDupNoGap(gap) && seen2[1] && /last_event_id=2$/.test(seen2[1].url),
    `${JSON.stringify(gap)} requests ${JSON.stringify(seen2)}`);
});

/**
 * Starts a [slow] task whose first event stream is replaced: the real
 * stream is read until it has `until` events, then `keep(events)` of them
 * are sent and the connection ends. Later streams go to the server as they
 * are. Returns the event-stream requests seen ({url, lastEventId}).
 */
async function cutStream(n, keep) {
  const requests = [];
  let first = true;
  await page.route('**/api/tasks/*/events*', async (route) => {
    const req = route.request();
    requests.push({ url: req.url(), lastEventId: (await req.allHeaders())['last-event-id'] || '' });
    if (!first) { await route.continue(); return; }
    first = false;
    let text = '';
    const events = () => text.split('\n\n').filter((b) => /^id: \d+/m.test(b)).map((b) => ({ id: Number(b.match(/^id: (\d+)/m)[1]), block: b }));
    // the server ends streams every few seconds: read on from the last id
    for (let tries = 0; events().length < 4 && tries < 20; tries++) {
      const got = events();
      const after = got.length ? got[got.length - 1].id : 0;
      const res = await fetch(`${req.url().split('?')[0]}?last_event_id=${after}`, { headers: { Accept: 'text/event-stream' } });
      const reader = res.body.getReader();
      while (events().length < 4) {
        const { done, value } = await reader.read();
        if (done) break;
        text += Buffer.from(value).toString('utf8');
      }
      reader.cancel().catch(() => {});
      if (!text.endsWith('\n\n')) text += '\n\n';
    }
    const body = `retry: 500\n\n${keep(events()).map((e) => `${e.block.replace(/^retry: \d+\n+/, '')}\n\n`).join('')}`;
    await route.fulfill({ status: 200, headers: { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache' }, body });
  });
  await page.goto(base);
  await page.fill('#prompt', `[slow] Four slow steps, stream cut ${n}.`);
  await page.click('#run-button');
  await page.waitForURL(/#task=[0-9a-f]{32}$/, { timeout: 15000 });
  await page.waitForSelector('.task-chip:text("Succeeded")', { timeout: 40000 });
  await page.unroute('**/api/tasks/*/events*');
  return requests;
}

// ---- 8. Run again
let rerunId = '';
await block('run_again', async () => {
  await page.goto(`${base}#task=${firstTask}`);
  await page.waitForSelector('button:text("Run again")', { timeout: 10000 });
  await page.click('button:text("Run again")');
  await page.waitForFunction((old) => location.hash.startsWith('#task=') && !location.hash.endsWith(old), firstTask, { timeout: 10000 });
  rerunId = taskIdOf(page.url());
  const t = await api(`/api/tasks/${rerunId}`);
  const src = await api(`/api/tasks/${firstTask}`);
  check('run_again_same_prompt_and_inputs', t.body && t.body.rerun_of === firstTask && t.body.prompt === src.body.prompt
    && JSON.stringify(t.body.inputs) === JSON.stringify(src.body.inputs), JSON.stringify(t.body).slice(0, 300));
  await page.waitForSelector('.task-chip:text("Succeeded")', { timeout: 60000 });
  const first = await page.locator('.turn').first().innerText();
  check('run_again_sees_the_inputs', first.includes('data.csv') && first.includes('notes.txt'), first.slice(0, 200));
  check('run_again_links_back', (await page.locator(`.task-meta a[href="#task=${firstTask}"]`).count()) === 1);
});

// ---- 9. delete from the history
await block('history_delete', async () => {
  await page.goto(`${base}#task=${firstTask}`);
  const item = page.locator(`.history-item[data-id="${rerunId}"]`);
  await item.waitFor({ timeout: 15000 });
  await item.hover();
  await item.locator('.history-delete').click();
  await item.locator('button:text("Delete")').click();
  await item.waitFor({ state: 'detached', timeout: 10000 });
  const t = await api(`/api/tasks/${rerunId}`);
  check('history_delete_removes_task', t.status === 404, `status ${t.status}`);
  const list = await api('/api/tasks?limit=200');
  check('history_delete_gone_from_list', !list.body.tasks.some((x) => x.id === rerunId));
  check('history_shows_model', (await page.locator('.history-model').first().innerText()) === 'default');
});

// ---- 9b. Replay: the recorded tool calls again, without the model
await block('replay', async () => {
  await page.goto(`${base}#task=${firstTask}`);
  await page.waitForSelector('button:text("Replay")', { timeout: 10000 });
  await page.click('button:text("Replay")');
  await page.waitForFunction((old) => location.hash.startsWith('#task=') && !location.hash.endsWith(old), firstTask, { timeout: 10000 });
  const id = taskIdOf(page.url());
  await page.waitForSelector('.task-chip:text("Succeeded")', { timeout: 60000 });
  const t = await api(`/api/tasks/${id}`);
  const src = await api(`/api/tasks/${firstTask}`);
  const names = (x) => (x.body.artifacts || []).map((a) => a.path).sort().join(',');
  check('replay_same_files', t.body.rerun_of === firstTask && names(t) === names(src) && names(t) !== '',
    `${names(t)} vs ${names(src)}`);
  const model = await page.locator('.task-meta dd').first().innerText();
  check('replay_says_no_model', model === 'replay (no model)', model);
  await api(`/api/tasks/${id}`, 'DELETE');
});

// ---- 10. an archive upload, unpacked into the input
await block('archive_upload', async () => {
  const zip = process.env.LLMBOX_TEST_ZIP;
  if (!zip) throw new Error('LLMBOX_TEST_ZIP is not set');
  await page.goto(base);
  await page.fill('#prompt', '[archive] List the inputs.');
  await page.setInputFiles('#file-input', [zip, join(upload, 'notes.txt')]);
  const tag = await page.locator('#file-list li', { hasText: 'pack.zip' }).innerText();
  check('archive_marked_for_unpacking', /unpacked/.test(tag), tag);
  check('unpack_checked_by_default', await page.isChecked('#unpack'));
  await page.click('#run-button');
  await page.waitForURL(/#task=[0-9a-f]{32}$/, { timeout: 15000 });
  await page.waitForSelector('.turn[data-turn="1"] .out-stdout', { timeout: 20000 });
  const out = await page.locator('.turn[data-turn="1"] .out-stdout').innerText();
  check('archive_unpacked_in_sandbox', /\.\/pack\/a\.txt/.test(out) && /\.\/pack\/sub\/b\.csv/.test(out)
    && /\.\/notes\.txt/.test(out) && !/pack\.zip/.test(out), out);
  const t = await api(`/api/tasks/${taskIdOf(page.url())}`);
  const paths = t.body.inputs.map((i) => i.path).sort().join(',');
  check('archive_unpacked_inputs', paths === 'notes.txt,pack/a.txt,pack/sub/b.csv', paths);
  // a refused archive says why, in a sentence, next to the form
  await page.goto(base);
  await page.fill('#prompt', 'This should not start.');
  await page.setInputFiles('#file-input', [process.env.LLMBOX_TEST_EVIL_ZIP]);
  expectFailedLoads = true;
  await page.click('#run-button');
  const err = page.locator('#form-error');
  await err.waitFor({ state: 'visible', timeout: 10000 });
  expectFailedLoads = false;
  const msg = await err.innerText();
  check('unsafe_archive_refused_with_a_sentence', /climbs out/.test(msg) && /\.$/.test(msg), msg);
});

// ---- 11. history paging: older tasks a page at a time
await block('history_paging', async () => {
  const db = process.env.LLMBOX_TEST_DB;
  if (!db) throw new Error('LLMBOX_TEST_DB is not set');
  // 40 finished tasks from long ago, written as the service user would
  const code = `import sqlite3, sys, uuid
c = sqlite3.connect(sys.argv[1], timeout=10)
for i in range(40):
    c.execute("INSERT INTO tasks(id, status, prompt, model, max_turns, created_ms, finished_ms) VALUES(?,?,?,?,?,?,?)",
              (uuid.uuid4().hex, "succeeded", "An older task %d" % i, "old-model", 10, 1700000000000 - i, 1700000000000 - i))
c.commit()`;
  const r = spawnSync('runuser', ['-u', 'llmbox', '--', 'python3', '-c', code, db], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`could not add old tasks: ${r.stderr}`);
  const total = (await api('/api/tasks?limit=200')).body.tasks.length;
  await page.goto(base);
  await page.click('#history-refresh');
  await page.waitForFunction(() => document.querySelectorAll('#history-list li').length === 30, null, { timeout: 10000 });
  const more = page.locator('#history-more');
  check('history_first_page', await more.isVisible());
  await more.click();
  await page.waitForFunction(() => document.querySelectorAll('#history-list li').length > 30, null, { timeout: 10000 });
  if (await more.isVisible()) await more.click();
  await page.waitForFunction((n) => document.querySelectorAll('#history-list li').length === n, total, { timeout: 10000 });
  const ids = await page.evaluate(() => [...document.querySelectorAll('#history-list li')].map((li) => li.dataset.id));
  check('history_pages_all_tasks_once', ids.length === total && new Set(ids).size === total && !(await more.isVisible()),
    `${ids.length} shown, ${new Set(ids).size} distinct, ${total} tasks`);
});

await browser.close();
check('no_console_errors', errors.length === 0, errors.join(' | '));
process.exit(exitStatus());
