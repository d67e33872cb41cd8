// A higher-order op's subgraph in a real VS Code (code-server through Chromium, driven by
// Playwright). The caller (tests/vscode/test_vscode_subgraph.py) starts code-server on a
// workspace whose store holds a `torch.cond` model's run; this script opens the model,
// hovers a line of the true branch and reads the hover (the branch's subgraph label), then
// presses F12 there and reads which kernel opened; it writes what it saw to results.json
// (with screenshots).
//
//   node run-subgraph-e2e.mjs --url http://127.0.0.1:PORT/?folder=/ws --out DIR --file cond_branch.py
//        --line 20 --needle 'torch.sigmoid(h)' --word sigmoid
import { mkdirSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import { chromium } from 'playwright-core';
import { workbench } from './workbench.mjs';

const { values: args } = parseArgs({
  options: {
    url: { type: 'string' },
    out: { type: 'string' },
    file: { type: 'string' },
    line: { type: 'string' },
    needle: { type: 'string' }, // text of the branch line, to find it on screen
    word: { type: 'string' }, // a word of that line to hover
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

const { goToLine, cursorLine, hoverUntilShown } = workbench(page, log);
const activeTab = async () =>
  (await page.locator('.editor-group-container.active .tab.active .label-name').first().textContent())?.trim();

try {
  log('open the workbench');
  await page.goto(args.url, { waitUntil: 'domcontentloaded', timeout: 120000 });
  await page.locator('.monaco-workbench').waitFor({ timeout: 120000 });
  // The extension is up once its status bar item shows a run.
  await page.locator('.statusbar-item[id$="kernelscope.status"]', { hasText: /run \d+/ }).waitFor({ timeout: 120000 });
  log(`open ${args.file}`);
  await page.keyboard.press('Control+P');
  const input = page.locator('.quick-input-widget input');
  await input.waitFor({ state: 'visible' });
  await input.fill(args.file);
  await page.locator('.quick-input-widget .monaco-list-row', { hasText: args.file }).first().waitFor({ timeout: 15000 });
  await page.keyboard.press('Enter');
  await page.locator('.editor-group-container.active .tab.active', { hasText: args.file }).waitFor({ timeout: 15000 });
  await goToLine(Number(args.line));
  log('hover the branch line');
  const line = page.locator('.editor-group-container').first().locator('.view-lines .view-line', { hasText: args.needle }).first();
  const word = line.locator('span span', { hasText: args.word }).first();
  const hover = page.locator('.monaco-hover:not(.hidden)', { hasText: 'triton_' }).first();
  results.hoverText = await hoverUntilShown(word, hover);
  await page.screenshot({ path: path.join(args.out, '01-hover.png') });
  await page.mouse.move(5, 5);
  await page.keyboard.press('Escape');
  log('F12 on the branch line');
  await page.locator('.editor-group-container').nth(0).locator('.view-lines').click({ position: { x: 5, y: 5 } });
  await goToLine(Number(args.line));
  await page.keyboard.press('End');
  await page.keyboard.press('F12');
  await page.waitForFunction(
    () => /^triton_/.test(document.querySelector('.editor-group-container.active .tab.active .label-name')?.textContent?.trim() ?? ''),
    null,
    { timeout: 20000 },
  );
  await page.waitForTimeout(500);
  results.definition = { tab: await activeTab(), line: await cursorLine() };
  await page.screenshot({ path: path.join(args.out, '02-definition.png') });
} catch (error) {
  results.failure = String(error?.stack ?? error);
  await page.screenshot({ path: path.join(args.out, 'failure.png') }).catch(() => undefined);
} finally {
  writeFileSync(path.join(args.out, 'results.json'), JSON.stringify(results, null, 2));
  await browser.close();
}
process.exit(results.failure ? 1 : 0);
