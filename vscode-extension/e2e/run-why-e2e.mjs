// Why it recompiled, in a real VS Code (code-server through Chromium, driven by
// Playwright). The caller (tests/vscode/test_vscode_why.py) starts code-server on a
// workspace whose store holds a run with a recompile caused by one line; this script
// opens the model file, waits for the recompile's squiggle, reads the Problems panel and
// the hover on that line, and writes what it saw to results.json (with screenshots).
//
//   node run-why-e2e.mjs --url http://127.0.0.1:PORT/?folder=/ws --out DIR --file mlp.py --needle self.fc1
import { mkdirSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import { chromium } from 'playwright-core';
import { workbench } from './workbench.mjs';

const { values: args } = parseArgs({
  options: {
    url: { type: 'string' },
    out: { type: 'string' },
    file: { type: 'string' }, // the model file to open
    needle: { type: 'string' }, // text on the line that caused the recompile
    browser: { type: 'string', default: '/usr/bin/chromium' },
  },
});
mkdirSync(args.out, { recursive: true });
const results = { failure: null, console: [] };
const started = Date.now();
const log = (message) => console.log(`[e2e ${Math.round((Date.now() - started) / 100) / 10}s] ${message}`);

const browser = await chromium.launch({
  executablePath: args.browser,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking',
         '--disable-component-update', '--disable-sync'],
});
const page = await (await browser.newContext({ viewport: { width: 1680, height: 1000 } })).newPage();
page.on('console', (msg) => {
  if (msg.type() === 'error') results.console.push(msg.text().slice(0, 300));
});
const { hoverUntilShown } = workbench(page, log);

try {
  log('open the workbench');
  await page.goto(args.url, { waitUntil: 'domcontentloaded', timeout: 120000 });
  await page.locator('.monaco-workbench').waitFor({ timeout: 120000 });
  await page.locator('.statusbar-item[id$="kernelscope.status"]', { hasText: /run \d+/ }).waitFor({ timeout: 120000 });
  log(`open ${args.file}`);
  await page.keyboard.press('Control+P');
  const input = page.locator('.quick-input-widget input');
  await input.waitFor({ state: 'visible' });
  await input.fill(args.file);
  await page.locator('.quick-input-widget .monaco-list-row', { hasText: args.file }).first().waitFor({ timeout: 15000 });
  await page.keyboard.press('Enter');
  await page.locator('.editor-group-container.active .tab.active', { hasText: args.file }).waitFor({ timeout: 15000 });
  log('wait for the recompile squiggle');
  await page.locator('.view-overlays .squiggly-warning').first().waitFor({ timeout: 60000 });
  log('read the Problems panel');
  await page.keyboard.press('Control+Shift+M');
  const rows = page.locator('.markers-panel .monaco-list-row');
  await rows.first().waitFor({ timeout: 30000 });
  results.problems = (await rows.allTextContents()).map((text) => text.trim());
  await page.screenshot({ path: path.join(args.out, 'problems.png') });
  await page.keyboard.press('Control+Shift+M');
  log('hover the line that caused it');
  const line = page.locator('.editor-group-container').first().locator('.view-lines .view-line', { hasText: args.needle }).first();
  const word = line.locator('span span', { hasText: 'fc1' }).first();
  const hover = page.locator('.monaco-hover:not(.hidden)', { hasText: 'because of this line' }).first();
  results.hoverText = await hoverUntilShown(word, hover);
  await page.screenshot({ path: path.join(args.out, 'hover.png') });
} catch (error) {
  results.failure = String(error?.stack ?? error);
  await page.screenshot({ path: path.join(args.out, 'failure.png') }).catch(() => undefined);
} finally {
  writeFileSync(path.join(args.out, 'results.json'), JSON.stringify(results, null, 2));
  await browser.close();
}
process.exit(results.failure ? 1 : 0);
