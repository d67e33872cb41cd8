// Below the kernel and distributed jobs in a real VS Code (code-server through Chromium,
// driven by Playwright). The caller (tests/vscode/test_vscode_below.py) starts code-server on a
// workspace whose store holds GPT-2 with its softmax kernel built to PTX/SASS (run 1), the
// Llama TP block as rank 0 of a faked 8-rank job (run 2) and both ranks of a real 2-rank
// gloo job (runs 3, 4). This script reads the status bar and the run picker (ranks), the
// run overview's Distributed section, hovers a collective's wrapper line (opened from the
// overview) and goes to its model line, then reads the overview's registers column, opens
// the softmax kernel, runs "Show SASS beside" on its exp line and reads the highlighted
// SASS lines, and back from a SASS line to the kernel line. It writes what it saw to
// results.json (with screenshots); the caller checks it against the store.
//
//   node run-below-e2e.mjs --url http://127.0.0.1:PORT/?folder=/ws --out DIR --exp-line 58 --mufu-line 583
import { mkdirSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import { chromium } from 'playwright-core';
import { workbench } from './workbench.mjs';

const { values: args } = parseArgs({
  options: {
    url: { type: 'string' },
    out: { type: 'string' },
    'exp-line': { type: 'string' }, // the softmax kernel's exp line (1-based)
    'mufu-line': { type: 'string' }, // a MUFU.EX2 line of its SASS (1-based)
    browser: { type: 'string', default: '/usr/bin/chromium' },
  },
});
const OUT = args.out;
mkdirSync(OUT, { recursive: true });
const results = { steps: [], console: [] };
const started = Date.now();
const log = (message) => console.log(`[e2e ${Math.round((Date.now() - started) / 100) / 10}s] ${message}`);

const browser = await chromium.launch({
  executablePath: args.browser,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
         '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
const page = await (await browser.newContext({ viewport: { width: 1680, height: 1000 } })).newPage();
page.on('console', (msg) => {
  if (msg.type() === 'error') results.console.push(msg.text().slice(0, 300));
});

const STATUS = '.statusbar-item[id$="kernelscope.status"]';
const shot = (name) => page.screenshot({ path: path.join(OUT, `${name}.png`) });

async function step(name, fn) {
  const t0 = Date.now();
  log(`${name}…`);
  await fn();
  results.steps.push({ name, seconds: (Date.now() - t0) / 1000 });
}

const { runCommand, goToLine, cursorLine, themeColor, decoratedLines, hoverUntilShown } = workbench(page, log);

async function pickRun(runId) {
  await runCommand('kernelscope: Pick run');
  const rows = page.locator('.quick-input-widget .monaco-list-row');
  await rows.first().waitFor({ timeout: 15000 });
  await page.waitForTimeout(300);
  const texts = (await rows.allTextContents()).map((t) => t.trim());
  await page.locator('.quick-input-widget .monaco-list-row', { hasText: `Run ${runId} —` }).first().click();
  await page.waitForFunction((id) => Array.from(document.querySelectorAll('.statusbar-item[id$="kernelscope.status"]'))
    .some((e) => new RegExp(`kernelscope: run ${id}\\b`).test(e.textContent ?? '')), runId, { timeout: 20000 });
  return texts;
}



const activeTab = async () => (await page.locator('.editor-group-container.active .tab.active .label-name').first().textContent())?.trim();

/** The index of the editor group whose active tab's name matches `pattern`. */
async function groupOf(pattern) {
  return page.evaluate((source) => {
    const re = new RegExp(source);
    return Array.from(document.querySelectorAll('.editor-group-container'))
      .findIndex((g) => re.test(g.querySelector('.tab.active .label-name')?.textContent?.trim() ?? ''));
  }, pattern.source);
}


/** 1-based line numbers (among those rendered) whose whole-line decoration has background `color`, in group `groupIndex`. */

async function waitForDecoratedLines(color, groupIndex, wanted = (lines) => lines.length > 0, timeout = 20000) {
  const deadline = Date.now() + timeout;
  let lines = [];
  while (Date.now() < deadline) {
    lines = await decoratedLines(color, groupIndex);
    if (wanted(lines)) return lines;
    await page.waitForTimeout(250);
  }
  return lines;
}

const overviewFrame = () => page.frameLocator('iframe.webview.ready').last().frameLocator('iframe#active-frame');

async function readOverview(runId) {
  const frame = overviewFrame();
  await frame.locator('h1', { hasText: `Run ${runId} ` }).waitFor({ timeout: 30000 });
  return frame.locator('body').evaluate((body) => ({
    heading: body.querySelector('h1')?.textContent?.trim(),
    meta: body.querySelector('header .meta')?.textContent?.trim(),
    sections: Array.from(body.querySelectorAll('h2')).map((h) => h.textContent?.trim()),
    rank: body.querySelector('#distributed .rank')?.textContent?.trim() ?? null,
    code: Array.from(body.querySelectorAll('#distributed .code-groups li')).map((li) => li.textContent?.trim()),
    graphs: Array.from(body.querySelectorAll('#distributed .comm-graph')).map((g) => ({
      title: g.querySelector('h3')?.textContent?.trim(),
      order: g.querySelector('.order')?.textContent?.trim() ?? null,
      collectives: Array.from(g.querySelectorAll('li.collective')).map((li) => li.textContent?.trim()),
    })),
    below: body.querySelector('#kernels .below')?.textContent?.trim() ?? null,
    kernelHeaders: Array.from(body.querySelectorAll('#kernels thead th')).map((th) => th.textContent?.trim()),
    kernelRows: Array.from(body.querySelectorAll('#kernels tbody tr')).map((tr) => Array.from(tr.children).map((td) => td.textContent?.trim())),
  }));
}

/** Hover the word `word` on the active editor's cursor line; the hover's text. */
async function hoverWord(word, hasText) {
  const group = page.locator('.editor-group-container.active');
  const top = await group.locator('.view-overlays .current-line').first().evaluate((el) => el.parentElement.style.top);
  const line = group.locator(`.view-lines .view-line[style*="top:${top.replace('px', '')}px"], .view-lines .view-line[style*="top: ${top}"]`).first();
  const target = line.locator('span span', { hasText: word }).first();
  const hover = page.locator('.monaco-hover:not(.hidden)', { hasText }).first();
  const text = await hoverUntilShown(target, hover);
  await page.mouse.move(5, 5);
  await page.keyboard.press('Escape');
  return text;
}

/** Open a collective's wrapper line from the overview's Distributed section; hover its op. */
async function collectiveFromOverview(name) {
  await overviewFrame().locator('#distributed li.collective a', { hasText: 'wrapper line' }).first().click();
  await page.waitForFunction(() => document.querySelector('.editor-group-container.active .tab.active .label-name')?.textContent?.trim() === 'wrapper.py', null, { timeout: 20000 });
  await page.waitForTimeout(500);
  const line = await cursorLine();
  const hover = await hoverWord('all_gather_into_tensor', 'collectives');
  await shot(`${name}-hover`);
  return { line, hover };
}

let failure = null;
try {
  await step('open the workbench: the status bar shows the latest run and its rank', async () => {
    await page.goto(args.url, { waitUntil: 'domcontentloaded', timeout: 120000 });
    await page.locator('.monaco-workbench').waitFor({ timeout: 120000 });
    await page.locator(STATUS, { hasText: /run \d+/ }).waitFor({ timeout: 120000 });
    results.status = (await page.locator(STATUS).textContent())?.trim();
    await page.keyboard.press('Control+B');
  });

  await step('the run picker lists each run\'s rank', async () => {
    results.runPicker = await pickRun(4);
  });

  await step('run overview of rank 1 of the real 2-rank job: its Distributed section', async () => {
    await runCommand('kernelscope: Show run');
    results.overviewReal = await readOverview(4);
    await shot('01-overview-real-rank');
  });

  await step('a collective\'s wrapper line: hover, then go to its model line', async () => {
    results.real = await collectiveFromOverview('02-real');
    await page.keyboard.press('F12');
    await page.waitForFunction(() => document.querySelector('.editor-group-container.active .tab.active .label-name')?.textContent?.trim() === 'llama_tp.py', null, { timeout: 20000 });
    await page.waitForTimeout(300);
    results.real.definition = { tab: await activeTab(), line: await cursorLine() };
    await shot('03-real-definition');
  });

  await step('rank 0 of the faked 8-rank job', async () => {
    await pickRun(2);
    results.statusFaked = (await page.locator(STATUS).textContent())?.trim();
    await runCommand('kernelscope: Show run');
    results.overviewFaked = await readOverview(2);
    results.faked = await collectiveFromOverview('04-faked');
  });

  await step('GPT-2: the overview\'s registers, then Show SASS beside on the exp line', async () => {
    await pickRun(1);
    await runCommand('kernelscope: Show run');
    results.overviewGpt2 = await readOverview(1);
    await shot('05-overview-gpt2');
    const built = overviewFrame().locator('#kernels tbody tr', { hasText: 'SASS' }).first().locator('td').first().locator('a');
    const name = (await built.textContent())?.trim();
    await built.click();
    await page.waitForFunction((n) => document.querySelector('.editor-group-container.active .tab.active .label-name')?.textContent?.trim() === `${n}.py`, name, { timeout: 20000 });
    await goToLine(Number(args['exp-line']));
    await runCommand('kernelscope: Show SASS beside');
    await page.waitForFunction(() => Array.from(document.querySelectorAll('.editor-group-container .tab.active .label-name')).some((t) => /\.sass$/.test(t.textContent?.trim() ?? '')), null, { timeout: 30000 });
    const linked = await themeColor('kernelscope.linkedLineBackground');
    const origin = await themeColor('kernelscope.originLineBackground');
    const sassGroup = await groupOf(/\.sass$/);
    const kernelGroup = await groupOf(new RegExp(`^${name}\\.py$`));
    results.sass = {
      kernel: name,
      sassTab: await page.evaluate((i) => document.querySelectorAll('.editor-group-container')[i]?.querySelector('.tab.active .label-name')?.textContent?.trim(), sassGroup),
      // generous waits: under CI load the server's linked ranges can take a while
      sassLines: await waitForDecoratedLines(linked, sassGroup, undefined, 45000),
      kernelOrigin: await waitForDecoratedLines(origin, kernelGroup, undefined, 45000),
    };
    // what the test prints should the origin line be missing: which editor was active, and where the origin went
    results.sass.seen = { activeTab: await activeTab(), kernelGroup, sassGroup, sassOrigin: await decoratedLines(origin, sassGroup) };
    results.sass.mufuShown = (await page.locator('.editor-group-container').nth(sassGroup).locator('.view-lines .view-line', { hasText: 'MUFU.EX2' }).count()) > 0;
    await shot('06-sass-beside');

    // Back up: the cursor on a MUFU.EX2 line of the SASS highlights the kernel's exp line.
    await page.keyboard.press('Escape');
    await page.keyboard.press(`Control+${sassGroup + 1}`); // focus the SASS editor's group
    await page.waitForFunction((i) => document.querySelectorAll('.editor-group-container')[i]?.classList.contains('active'), sassGroup);
    await goToLine(Number(args['mufu-line']));
    results.sass.up = {
      sassOrigin: await waitForDecoratedLines(origin, sassGroup, (lines) => lines.includes(Number(args['mufu-line']))),
      kernelLines: await waitForDecoratedLines(linked, kernelGroup),
    };
    results.sass.upHover = await hoverWord('MUFU.EX2', 'from kernel line');
    await shot('07-sass-up');
  });
} catch (error) {
  failure = String(error?.stack ?? error);
  results.notifications = await page.locator('.notifications-toasts .notification-list-item-message').allTextContents().catch(() => []);
  log(`FAILED: ${failure}`);
  await shot('failure').catch(() => undefined);
}
results.failure = failure;
writeFileSync(path.join(OUT, 'results.json'), JSON.stringify(results, null, 2));
await browser.close();
process.exit(failure ? 1 : 0);
