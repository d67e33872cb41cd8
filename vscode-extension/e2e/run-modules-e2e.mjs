// The run overview's module instances in a real VS Code (code-server through
// Chromium, driven by Playwright). The caller (tests/vscode/test_vscode_modules.py)
// starts code-server on a workspace whose store holds a deep model's run; this
// script opens "kernelscope: Show run", reads the "Module instances" section,
// opens a folded group and reads its members, and writes what it saw to
// results.json (with screenshots).
//
//   node run-modules-e2e.mjs --url http://127.0.0.1:PORT/?folder=/ws --out DIR [--group blocks.1–10]
import { mkdirSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import { chromium } from 'playwright-core';
import { workbench } from './workbench.mjs';

const { values: args } = parseArgs({
  options: {
    url: { type: 'string' },
    out: { type: 'string' },
    group: { type: 'string' }, // the label of the folded group to open
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

const { runCommand } = workbench(page, log);

const rowsOf = (frame) => frame.locator('#modules').evaluate((section) => ({
  top: Array.from(section.querySelectorAll(':scope > ul.modules > li > .title')).map((t) => t.textContent.trim()),
  folded: Array.from(section.querySelectorAll('li.folded summary')).map((s) => s.textContent.trim()),
  visibleMembers: Array.from(section.querySelectorAll('li.member')).filter((m) => m.checkVisibility()).map((m) => m.textContent.trim()),
  instances: Array.from(section.querySelectorAll('li.module-group:not(.folded) > .title')).map((t) => t.textContent.trim()),
}));

try {
  log('open the workbench');
  await page.goto(args.url, { waitUntil: 'domcontentloaded', timeout: 120000 });
  await page.locator('.monaco-workbench').waitFor({ timeout: 120000 });
  // The extension is up once its status bar item shows a run.
  await page.locator('.statusbar-item[id$="kernelscope.status"]', { hasText: /run \d+/ }).waitFor({ timeout: 120000 });
  log('show the run overview');
  await page.keyboard.press('Control+B');
  await runCommand('kernelscope: Show run');
  const frame = page.frameLocator('iframe.webview.ready').last().frameLocator('iframe#active-frame');
  await frame.locator('#modules > ul.modules').waitFor({ timeout: 60000 });
  await frame.locator('#modules').scrollIntoViewIfNeeded();
  results.closed = await rowsOf(frame);
  await page.screenshot({ path: path.join(args.out, 'modules-folded.png') });
  log(`open the folded group ${args.group}`);
  await frame.locator('#modules li.folded summary', { hasText: args.group }).first().click();
  await frame.locator('#modules li.folded details[open] li.member').first().waitFor({ timeout: 15000 });
  results.opened = await rowsOf(frame);
  await page.screenshot({ path: path.join(args.out, 'modules-opened.png') });
} catch (error) {
  results.failure = String(error?.stack ?? error);
  await page.screenshot({ path: path.join(args.out, 'failure.png') }).catch(() => undefined);
} finally {
  writeFileSync(path.join(args.out, 'results.json'), JSON.stringify(results, null, 2));
  await browser.close();
}
process.exit(results.failure ? 1 : 0);
