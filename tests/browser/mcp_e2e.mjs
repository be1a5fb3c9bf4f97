// The task form's MCP servers (web/js/form.js): one tick box per server the
// operator configured, named only (never its command, url or headers); the
// ticked names go out as the task's `mcp` field.
//   node mcp_e2e.mjs URL      (test_mcp_page.py starts the stack)
import { chromium } from 'playwright-core';

const url = process.argv[2];
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium', headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--no-first-run'],
});
let failed = 0;
const check = (name, ok, why) => {
  console.log(ok ? `PASS ${name}` : `FAIL ${name}: ${why}`);
  if (!ok) failed++;
};
try {
  const page = await browser.newPage();
  let sent = null;
  page.on('request', (r) => { if (r.url().endsWith('/api/tasks') && r.method() === 'POST') sent = r.postData(); });
  await page.goto(url);
  await page.waitForSelector('#mcp-list input', { timeout: 20000 });
  const names = await page.$$eval('#mcp-list input', (els) => els.map((e) => e.value));
  check('mcp_boxes_name_the_servers', JSON.stringify(names) === '["github","docs"]', JSON.stringify(names));
  const text = await page.content();
  check('mcp_url_and_command_not_shown', !text.includes('127.0.0.1:9') && !text.includes('gh_server'), 'leaked');
  await page.fill('#prompt', 'hello');
  await page.check('#mcp-list input[value="docs"]');
  await page.click('#run-button');
  for (let i = 0; i < 100 && !sent; i++) await page.waitForTimeout(100);
  check('mcp_ticked_names_sent', Boolean(sent) && /name="mcp"\r\n\r\ndocs\r\n/.test(sent),
    (sent || 'no request').slice(0, 300));
} finally {
  await browser.close();
}
process.exit(failed ? 1 : 0);
