#!/usr/bin/env node
// The Evaluations view of a run of an official benchmark folder (llmbox eval
// --benchmark; test_evals_page.py starts it): under the title, the folder
// and the SHA-256 prefixes of its config.yaml and reward.py, so two runs can
// be told to be the same experiment. Prints PASS/FAIL lines.
//
//   LLMBOX_TEST_BENCH_EVAL=<eval id> LLMBOX_TEST_BENCH_SHA=<config.yaml sha256> node evals_bench_e2e.mjs URL
import { chromium } from 'playwright-core';
import { block, check, exitStatus } from './harness.mjs';

const base = process.argv[2];
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking',
    '--disable-component-update', '--no-first-run', '--disable-sync'],
});
const page = await (await browser.newContext({ viewport: { width: 1280, height: 1000 } })).newPage();

await block('benchmark_line', async () => {
  await page.goto(base + '#eval=' + encodeURIComponent(process.env.LLMBOX_TEST_BENCH_EVAL));
  await page.waitForSelector('#eval-benchmark', { timeout: 15000 });
  const text = await page.textContent('#eval-benchmark');
  const sha = (process.env.LLMBOX_TEST_BENCH_SHA || '').slice(0, 12);
  check('names_the_folder_and_hashes', /Official benchmark folder page-bench:/.test(text) && sha.length === 12 &&
    text.includes(`config.yaml sha256 ${sha}`), text);
});

await browser.close();
process.exit(exitStatus());
