#!/usr/bin/env node
// Take a screenshot of a page in headless Chromium (playwright-core, no
// bundled browser: it uses the system's Chromium).
//
//   node screenshot.mjs URL OUT.png [--width=1280] [--height=900] [--dark]
//        [--full] [--wait=MS] [--selector=CSS] [--strict]
//
// Console errors and page errors are printed to stderr; with --strict any of
// them makes the exit status 2. CHROMIUM overrides the browser path.

import { chromium } from 'playwright-core';

const args = process.argv.slice(2);
const positional = args.filter((a) => !a.startsWith('--'));
const flags = Object.fromEntries(args.filter((a) => a.startsWith('--')).map((a) => {
  const [k, v] = a.slice(2).split('=');
  return [k, v === undefined ? true : v];
}));

if (positional.length < 2) {
  console.error('usage: node screenshot.mjs URL OUT.png [--width=1280] [--height=900] [--dark] [--full] [--wait=MS] [--selector=CSS] [--strict]');
  process.exit(64);
}
const [url, out] = positional;

export const LAUNCH = {
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking',
    '--disable-component-update', '--no-first-run', '--disable-sync'],
};

const browser = await chromium.launch(LAUNCH);
let problems = 0;
try {
  const width = Number(flags.width || 1280);
  const context = await browser.newContext({
    viewport: { width, height: Number(flags.height || 900) },
    deviceScaleFactor: Number(flags.scale || 1),
    colorScheme: flags.dark ? 'dark' : 'light',
    isMobile: width < 600,
    hasTouch: width < 600,
  });
  const page = await context.newPage();
  page.on('console', (msg) => {
    if (msg.type() === 'error' || msg.type() === 'warning') {
      if (msg.type() === 'error') problems++;
      console.error(`console.${msg.type()}: ${msg.text()}`);
    }
  });
  page.on('pageerror', (err) => { problems++; console.error(`pageerror: ${err.message}`); });
  await page.goto(url, { waitUntil: 'load' });
  if (flags.selector) await page.waitForSelector(flags.selector, { timeout: 15000 });
  await page.waitForTimeout(Number(flags.wait || 500));
  await page.screenshot({ path: out, fullPage: Boolean(flags.full) });
  console.log(out);
} finally {
  await browser.close();
}
process.exit(flags.strict && problems ? 2 : 0);
