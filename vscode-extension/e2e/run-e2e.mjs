// End-to-end scenario in a real VS Code (code-server), driven through Debian's
// Chromium by Playwright. The caller (tests/vscode/test_vscode_e2e.py) starts
// code-server with the kernelscope .vsix installed and a workspace holding
// examples/mlp.py, then checks what this script saw (results.json) against the
// store. Each step checks what the page shows and keeps a screenshot.
//
//   node run-e2e.mjs --url http://127.0.0.1:PORT/?folder=/ws --out DIR
//        [--line 21] [--needle "F.gelu(h)"] [--browser /usr/bin/chromium]
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import { chromium } from 'playwright-core';
import { workbench } from './workbench.mjs';

const { values: args } = parseArgs({
  options: {
    url: { type: 'string' },
    out: { type: 'string' },
    line: { type: 'string', default: '21' },
    needle: { type: 'string', default: 'F.gelu(h)' },
    browser: { type: 'string', default: '/usr/bin/chromium' },
    'compile-timeout': { type: 'string', default: '180' },
    settings: { type: 'string' }, // the workspace's .vscode/settings.json
    'python-without-kernelscope': { type: 'string' },
  },
});
const OUT = args.out;
const LINE = Number(args.line);
mkdirSync(OUT, { recursive: true });

const results = { steps: [], screenshots: [], console: [] };
const started = Date.now();
const elapsed = () => Math.round((Date.now() - started) / 100) / 10;

function log(message) {
  console.log(`[e2e ${elapsed()}s] ${message}`);
}

async function shot(page, name) {
  const file = path.join(OUT, `${name}.png`);
  await page.screenshot({ path: file });
  results.screenshots.push(file);
  return file;
}

async function step(name, fn) {
  const t0 = Date.now();
  log(`${name}…`);
  const value = await fn();
  results.steps.push({ name, seconds: (Date.now() - t0) / 1000 });
  return value;
}

const browser = await chromium.launch({
  executablePath: args.browser,
  args: [
    '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync',
  ],
});
const context = await browser.newContext({ viewport: { width: 1680, height: 1000 } });
const page = await context.newPage();
page.on('console', (msg) => {
  if (msg.type() === 'error') results.console.push(msg.text().slice(0, 300));
});

// ---- helpers over VS Code's DOM -------------------------------------------

// The extension's item ("kernelscope.status"; VS Code prefixes the extension id); the
// server's $/progress may add another status-bar entry that also says kernelscope.
const STATUS = '.statusbar-item[id$="kernelscope.status"]';
const statusItem = () => page.locator(STATUS);

const { runCommand, goToLine, cursorLine, themeColor, decoratedLines, hoverUntilShown } = workbench(page, log);

async function openFile(name) {
  await page.keyboard.press('Escape');
  // Quick open acts on the focused group; a webview holding the focus would swallow the keys.
  const tab = page.locator('.editor-group-container').first().locator('.tab', { hasText: name }).first();
  if (await tab.count()) {
    await tab.click();
    await page.locator('.editor-group-container.active .tab.active', { hasText: name }).waitFor({ timeout: 15000 });
    return;
  }
  await page.keyboard.press('Control+P');
  const input = page.locator('.quick-input-widget input');
  await input.waitFor({ state: 'visible' });
  await input.fill(name);
  await page.locator('.quick-input-widget .monaco-list-row', { hasText: name }).first().waitFor({ timeout: 15000 });
  await page.keyboard.press('Enter');
  await page.locator('.editor-group-container.active .tab.active', { hasText: name }).waitFor({ timeout: 15000 });
}


async function activeTab() {
  return (await page.locator('.editor-group-container.active .tab.active .label-name').first().textContent())?.trim();
}


/**
 * The extension's decoration colours for the current theme, from its package.json
 * (VS Code resolves a ThemeColor into the decoration's CSS rule, so decorated
 * lines are found by their computed background colour).
 */

/** 1-based line numbers whose whole-line decoration has background `color`, in editor group `groupIndex` (0-based). */

async function waitForDecoratedLines(color, groupIndex, timeout = 15000) {
  const deadline = Date.now() + timeout;
  let lines = [];
  while (Date.now() < deadline) {
    lines = await decoratedLines(color, groupIndex);
    if (lines.length > 0) return lines;
    await page.waitForTimeout(250);
  }
  return lines;
}

async function editorLineLocator(groupIndex, needle) {
  const group = page.locator('.editor-group-container').nth(groupIndex);
  return group.locator('.view-lines .view-line', { hasText: needle }).first();
}

// ---- the scenario -------------------------------------------------------------

let failure = null;
try {
  await step('open code-server', async () => {
    await page.goto(args.url, { waitUntil: 'domcontentloaded' });
    await page.locator('.monaco-workbench').waitFor({ timeout: 60000 });
    await statusItem().waitFor({ timeout: 60000 });
    await page.waitForFunction(
      () => Array.from(document.querySelectorAll('.statusbar-item[id$="kernelscope.status"]')).some((e) => /kernelscope: (no run|run \d+)/.test(e.textContent ?? '')),
      null,
      { timeout: 60000 },
    );
    results.statusBeforeCompile = (await statusItem().textContent())?.trim();
  });

  await step('open the model', async () => {
    await openFile('mlp.py');
    await goToLine(LINE);
  });

  await step('kernelscope: Compile', async () => {
    await runCommand('kernelscope: Compile');
    await page.waitForFunction(
      () => Array.from(document.querySelectorAll('.statusbar-item[id$="kernelscope.status"]')).some((e) => /kernelscope: compiling/.test(e.textContent ?? '')),
      null,
      { timeout: 30000 },
    ).catch(() => log('did not see "compiling" (the compile may have been faster than the poll)'));
    await page.waitForFunction(
      () => Array.from(document.querySelectorAll('.statusbar-item[id$="kernelscope.status"]')).some((e) => /kernelscope: (run \d+|failed)/.test(e.textContent ?? '')),
      null,
      { timeout: Number(args['compile-timeout']) * 1000 },
    );
    results.statusAfterCompile = (await statusItem().textContent())?.trim();
    if (/failed/.test(results.statusAfterCompile ?? '')) {
      const notices = await page.locator('.notifications-toasts .notification-list-item-message').allTextContents();
      throw new Error(`the compile failed: ${notices.join(' | ') || results.statusAfterCompile}`);
    }
    await shot(page, '01-compiled');
  });

  await step('hover names the kernels', async () => {
    const line = await editorLineLocator(0, args.needle);
    const word = line.locator('span span', { hasText: 'gelu' }).first();
    const hover = page.locator('.monaco-hover:not(.hidden)', { hasText: 'triton_' }).first();
    results.hoverText = await hoverUntilShown(word, hover);
    await shot(page, '02-hover');
    await page.mouse.move(5, 5);
    await page.keyboard.press('Escape');
  });

  await step('F12 opens the kernel', async () => {
    await page.locator('.editor-group-container').nth(0).locator('.view-lines').click({ position: { x: 5, y: 5 } });
    await goToLine(LINE);
    await page.keyboard.press('End');
    await page.keyboard.press('F12');
    await page.waitForFunction(
      () => /^triton_|^kernel/.test(document.querySelector('.editor-group-container.active .tab.active .label-name')?.textContent?.trim() ?? ''),
      null,
      { timeout: 20000 },
    );
    await page.waitForTimeout(500);
    results.definition = { tab: await activeTab(), line: await cursorLine(), title: await page.title() };
    await shot(page, '03-definition');
    // Back to a single editor with the model.
    await page.keyboard.press('Control+W');
    await page.locator('.editor-group-container.active .tab.active', { hasText: 'mlp.py' }).waitFor({ timeout: 10000 });
  });

  await step('Show kernels for this line: linked highlight', async () => {
    await goToLine(LINE);
    await runCommand('kernelscope: Show kernels for this line');
    await page.locator('.editor-group-container').nth(1).locator('.tab.active', { hasText: /^triton_|kernel/ }).waitFor({ timeout: 20000 });
    const linkedColor = await themeColor('kernelscope.linkedLineBackground');
    const originColor = await themeColor('kernelscope.originLineBackground');
    results.linked = {
      linkedColor,
      originColor,
      kernelTab: (await page.locator('.editor-group-container').nth(1).locator('.tab.active .label-name').first().textContent())?.trim(),
      kernelLines: await waitForDecoratedLines(linkedColor, 1),
      modelOrigin: await waitForDecoratedLines(originColor, 0),
    };
    await shot(page, '04-linked-model-to-kernel');
  });

  await step('cursor in the kernel highlights the model', async () => {
    // A highlighted line below the one F12 landed on (GELU's own code), not where the cursor already is.
    const first = results.linked.kernelLines.find((l) => l > results.definition.line) ?? results.linked.kernelLines[0];
    await page.keyboard.press('Control+2'); // focus the kernel's editor group
    await page.waitForFunction(() => document.querySelectorAll('.editor-group-container')[1]?.classList.contains('active'));
    await goToLine(first);
    // Wait until the kernel editor's origin is the new cursor line (focusing it first answered for the old one).
    const deadline = Date.now() + 15000;
    let kernelOrigin = [];
    while (Date.now() < deadline) {
      kernelOrigin = await decoratedLines(results.linked.originColor, 1);
      if (kernelOrigin.length === 1 && kernelOrigin[0] === first) break;
      await page.waitForTimeout(250);
    }
    results.reverse = {
      kernelLine: first,
      kernelOrigin,
      modelLines: await waitForDecoratedLines(results.linked.linkedColor, 0),
    };
    await shot(page, '05-linked-kernel-to-model');
  });

  await step('Reveal source of this line (from the kernel)', async () => {
    await runCommand('kernelscope: Reveal source of this line');
    await page.waitForFunction(
      () => document.querySelector('.editor-group-container.active .tab.active .label-name')?.textContent?.trim() === 'mlp.py',
      null,
      { timeout: 15000 },
    );
    await page.waitForTimeout(300);
    results.revealSource = { tab: await activeTab(), line: await cursorLine() };
    await page.keyboard.press('Control+2');
    await page.keyboard.press('Control+W'); // close the kernel: the overview gets the room
    await page.waitForFunction(() => document.querySelectorAll('.editor-group-container').length === 1);
  });

  await step('Show run: overview and fusion picture', async () => {
    await page.keyboard.press('Control+B'); // hide the side bar: room for the overview
    await runCommand('kernelscope: Show run');
    const frame = page.frameLocator('iframe.webview.ready').last().frameLocator('iframe#active-frame');
    await frame.locator('svg.fusion').waitFor({ timeout: 30000 });
    const overview = await frame.locator('body').evaluate((body) => ({
      heading: body.querySelector('h1')?.textContent?.trim(),
      sections: Array.from(body.querySelectorAll('h2')).map((h) => h.textContent?.trim()),
      edges: body.querySelectorAll('svg.fusion path.fedge').length,
      sources: Array.from(body.querySelectorAll('svg.fusion .fnode.source text')).map((t) => t.textContent),
      kernels: Array.from(body.querySelectorAll('svg.fusion .fnode.kernel title')).map((t) => t.textContent),
      kernelRows: Array.from(body.querySelectorAll('#kernels tbody tr')).map((tr) => Array.from(tr.children).map((td) => td.textContent?.trim())),
      coverageRows: Array.from(body.querySelectorAll('#coverage tbody tr')).map((tr) => Array.from(tr.children).map((td) => td.textContent?.trim())),
    }));
    results.overview = overview;
    // Hover the GELU line so the picture shows its edge lit up, then keep the screenshot.
    await frame.locator('svg.fusion .fnode.source', { hasText: 'gelu' }).first().hover();
    await page.waitForTimeout(300);
    await shot(page, '06-run-overview');
    // Click a kernel node: the extension opens that kernel file.
    const kernelName = (await frame.locator('svg.fusion .fnode.kernel.clickable title').first().textContent())?.split(' ')[0];
    await frame.locator('svg.fusion .fnode.kernel.clickable').first().click();
    await page.waitForFunction(
      (name) => Array.from(document.querySelectorAll('.tab.active .label-name')).some((t) => t.textContent?.trim().startsWith(name)),
      kernelName,
      { timeout: 15000 },
    );
    results.overviewClick = { kernel: kernelName, activeTab: await activeTab() };
    await shot(page, '07-overview-click-opens-kernel');
  });

  await step('status bar opens the run picker', async () => {
    await page.keyboard.press('Escape');
    await statusItem().click();
    const rows = page.locator('.quick-input-widget .monaco-list-row');
    await rows.first().waitFor({ timeout: 15000 });
    await page.waitForTimeout(300);
    results.runPicker = (await rows.allTextContents()).map((t) => t.trim());
    await shot(page, '08-run-picker');
    await page.keyboard.press('Escape');
  });

  const hintsShown = () =>
    page.evaluate(() => Array.from(document.querySelectorAll('.editor-group-container')[0]?.querySelectorAll('.view-line') ?? [])
      .some((l) => /→\s*triton_/.test(l.textContent ?? ''))); // view lines use non-breaking spaces
  const waitHints = async (wanted) => {
    const deadline = Date.now() + 20000;
    while (Date.now() < deadline) {
      if ((await hintsShown()) === wanted) return wanted;
      await page.waitForTimeout(250);
    }
    return !wanted;
  };

  if (args.settings) {
    await step('inlay hints setting reaches the server', async () => {
      await openFile('mlp.py');
      results.inlayHints = { before: await waitHints(true) };
      const original = readFileSync(args.settings, 'utf8');
      writeFileSync(args.settings, JSON.stringify({ ...JSON.parse(original), 'kernelscope.inlayHints': false }, null, 2));
      results.inlayHints.off = await waitHints(false);
      await shot(page, '09-inlay-hints-off');
      writeFileSync(args.settings, original);
      results.inlayHints.back = await waitHints(true);
    });
  }

  if (args.settings && args['python-without-kernelscope']) {
    await step('interpreter without kernelscope: notification, then back', async () => {
      const original = readFileSync(args.settings, 'utf8');
      const settings = JSON.parse(original);
      writeFileSync(args.settings, JSON.stringify({ ...settings, 'kernelscope.python': args['python-without-kernelscope'] }, null, 2));
      const notice = page.locator('.notifications-toasts .notification-list-item', { hasText: 'kernelscope is not installed' }).first();
      await notice.waitFor({ timeout: 30000 });
      await page.waitForFunction(
        () => Array.from(document.querySelectorAll('.statusbar-item[id$="kernelscope.status"]')).some((e) => /kernelscope: not installed/.test(e.textContent ?? '')),
        null,
        { timeout: 15000 },
      );
      results.missing = {
        notification: (await notice.locator('.notification-list-item-message').textContent())?.trim(),
        buttons: await notice.locator('.monaco-button').allTextContents(),
        status: (await statusItem().textContent())?.trim(),
      };
      await shot(page, '10-kernelscope-not-installed');
      // Back to the interpreter that has kernelscope: the server restarts and shows the run again.
      writeFileSync(args.settings, original);
      await page.waitForFunction(
        () => Array.from(document.querySelectorAll('.statusbar-item[id$="kernelscope.status"]')).some((e) => /kernelscope: run \d+/.test(e.textContent ?? '')),
        null,
        { timeout: 60000 },
      );
      results.missing.statusAfterRestore = (await statusItem().textContent())?.trim();
    });
  }

  await step('Toggle watch: an edit and a save record a new run', async () => {
    const watching = () => statusItem().locator('.codicon-eye').count();
    await runCommand('kernelscope: Toggle watch');
    await page.waitForFunction(
      () => Array.from(document.querySelectorAll('.statusbar-item[id$="kernelscope.status"]')).some((e) => /kernelscope/.test(e.textContent ?? '') && e.querySelector('.codicon-eye')),
      null,
      { timeout: 60000 },
    );
    const runShown = async () => Number(/run (\d+)/.exec((await statusItem().textContent()) ?? '')?.[1] ?? 0);
    // The eye was seen (the wait above throws otherwise). Do not count it again here: the
    // watch's own first build may already show "compiling", which has no eye.
    results.watch = { watching: true, runAtStart: await runShown() };
    const before = results.watch.runAtStart;
    results.watch.runBeforeSave = before;
    await openFile('mlp.py');
    await goToLine(LINE);
    // h = F.gelu(h)  ->  h = F.gelu(h, approximate="tanh"): the new kernel computes tanh, not erf.
    await page.keyboard.press('End');
    await page.keyboard.press('Backspace');
    await page.keyboard.type(', approximate="tanh")');
    await page.keyboard.press('Control+S');
    // Wait for a newer run, then until the status has settled for 5 s (the watch's own
    // first build may land first; builds run one after another).
    let last = '';
    let since = Date.now();
    const deadline = Date.now() + 150000;
    while (Date.now() < deadline) {
      const text = ((await statusItem().textContent()) ?? '').trim();
      if (text !== last) {
        last = text;
        since = Date.now();
      }
      const run = Number(/kernelscope: run (\d+)/.exec(text)?.[1] ?? 0);
      if (run > before && Date.now() - since > 5000) break;
      await page.waitForTimeout(250);
    }
    results.watch.editedLine = (await (await editorLineLocator(0, 'F.gelu')).textContent())?.replace(/\u00a0/g, ' ').trim();
    results.watch.statusAfterSave = (await statusItem().textContent())?.trim();
    await shot(page, '11-watch-new-run');
    await runCommand('kernelscope: Toggle watch');
    await page.waitForFunction(
      () => !Array.from(document.querySelectorAll('.statusbar-item[id$="kernelscope.status"]')).some((e) => /kernelscope/.test(e.textContent ?? '') && e.querySelector('.codicon-eye')),
      null,
      { timeout: 30000 },
    );
    results.watch.stopped = (await watching()) === 0;
  });
} catch (error) {
  failure = String(error?.stack ?? error);
  results.notifications = await page.locator('.notifications-toasts .notification-list-item-message').allTextContents().catch(() => []);
  if (results.notifications.length) failure += `\nnotifications shown: ${results.notifications.join(' | ')}`;
  log(`FAILED: ${failure}`);
  await shot(page, 'failure').catch(() => undefined);
}

results.failure = failure;
results.seconds = elapsed();
writeFileSync(path.join(OUT, 'results.json'), JSON.stringify(results, null, 2));
await browser.close();
log(failure ? 'failed' : 'done');
process.exit(failure ? 1 : 0);
