// Workspace trust in a real VS Code (code-server with workspace trust on, driven
// through Chromium by Playwright). The caller (tests/vscode/test_vscode_trust.py) opens a
// folder the fresh profile does not trust, whose .vscode/settings.json names as
// `kernelscope.python` a script that writes --marker when it runs, and whose store
// holds a run. This script declines the trust prompt, then reads what the extension
// shows in Restricted Mode (status bar, notification), the language server's process
// (command line, current directory: from /proc), a hover from the store, and the
// answer to "kernelscope: Compile"; whether the marker exists is noted before trust is
// granted. Then it grants trust and reads the status bar, the server process and the
// marker again (the workspace's interpreter is used once the workspace is trusted).
// What it saw goes to results.json, with screenshots. With --trust-at-prompt it answers
// the prompt with "Yes, I trust the authors" instead and reads the status bar and the
// server process once the server runs trusted.
//
//   node run-trust-e2e.mjs --url http://127.0.0.1:PORT/?folder=/ws --out DIR --marker FILE
//        [--trust-at-prompt] [--needle gelu(h)] [--browser /usr/bin/chromium]
import { existsSync, mkdirSync, readdirSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import { chromium } from 'playwright-core';
import { workbench } from './workbench.mjs';

const { values: args } = parseArgs({
  options: {
    url: { type: 'string' },
    out: { type: 'string' },
    marker: { type: 'string' },
    'trust-at-prompt': { type: 'boolean', default: false },
    needle: { type: 'string', default: 'gelu(h)' },
    browser: { type: 'string', default: '/usr/bin/chromium' },
  },
});
mkdirSync(args.out, { recursive: true });
const results = { failure: null, steps: [], console: [] };
const started = Date.now();
const log = (message) => console.log(`[e2e ${Math.round((Date.now() - started) / 100) / 10}s] ${message}`);

async function step(name, fn) {
  const t0 = Date.now();
  log(`${name}…`);
  const value = await fn();
  results.steps.push({ name, seconds: (Date.now() - t0) / 1000 });
  return value;
}

/**
 * The `kernelscope lsp` processes of this code-server (their environment has this run's
 * XDG_CONFIG_HOME: other sessions' servers on the machine are not ours): argv and cwd.
 */
function serverProcesses() {
  const found = [];
  for (const pid of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    try {
      const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
      if (argv.slice(-3).join(' ') !== '-m kernelscope lsp') continue;
      const environ = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
      if (!environ.includes(`XDG_CONFIG_HOME=${process.env.XDG_CONFIG_HOME}`)) continue;
      found.push({
        pid: Number(pid),
        argv,
        cwd: readlinkSync(`/proc/${pid}/cwd`),
        safePath: environ.find((v) => v.startsWith('PYTHONSAFEPATH='))?.split('=')[1] ?? null,
      });
    } catch {
      // a process that ended while we looked, or one we may not read
    }
  }
  return found;
}

async function waitFor(predicate, what, timeout = 30000) {
  const deadline = Date.now() + timeout;
  for (;;) {
    const value = await predicate();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

const browser = await chromium.launch({
  executablePath: args.browser,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
         '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
const page = await (await browser.newContext({ viewport: { width: 1680, height: 1000 } })).newPage();
page.on('console', (msg) => {
  if (msg.type() === 'error') results.console.push(msg.text().slice(0, 300));
});
const shot = (name) => page.screenshot({ path: path.join(args.out, `${name}.png`) });
const { runCommand, goToLine, hoverUntilShown } = workbench(page, log);
const STATUS = '.statusbar-item[id$="kernelscope.status"]';
const statusText = async () => ((await page.locator(STATUS).textContent()) ?? '').trim();
const toast = (text) => page.locator('.notifications-toasts .notification-list-item', { hasText: text }).first();
const toastContent = async (item) => ({
  message: ((await item.locator('.notification-list-item-message').textContent()) ?? '').trim(),
  buttons: (await item.locator('.monaco-button').allTextContents()).map((t) => t.trim()),
});

/** Open the folder and answer the trust prompt. */
async function openAndAnswerPrompt(answer) {
  await page.goto(args.url, { waitUntil: 'domcontentloaded', timeout: 120000 });
  await page.locator('.monaco-workbench').waitFor({ timeout: 120000 });
  const prompt = page.locator('.monaco-dialog-box', { hasText: 'trust the authors' });
  await prompt.waitFor({ timeout: 60000 });
  results.trustPrompt = ((await prompt.textContent()) ?? '').trim();
  await shot('01-trust-prompt');
  await prompt.locator('.monaco-button', { hasText: answer }).click();
  await prompt.waitFor({ state: 'hidden', timeout: 15000 });
}

/** Once the status bar shows the run without "restricted": the status and the one server process. */
async function readTrusted(previousPid) {
  await page.waitForFunction(
    (selector) => Array.from(document.querySelectorAll(selector)).some((e) => /kernelscope: run \d+$/.test((e.textContent ?? '').trim())),
    STATUS,
    { timeout: 90000 },
  );
  const status = await statusText();
  const server = await waitFor(() => {
    const found = serverProcesses();
    return found.length === 1 && found[0].pid !== previousPid ? found : null;
  }, 'the trusted server');
  return { status, server };
}

/** The folder trusted at the prompt: the server starts trusted, with the folder's settings. */
async function trustedAtPrompt() {
  await step('open the folder and trust it at the prompt', async () => {
    await openAndAnswerPrompt('Yes, I trust the authors');
    results.trusted = await readTrusted(undefined);
    results.markerAfterTrust = existsSync(args.marker);
    await shot('02-trusted-at-prompt');
  });
}

/** The prompt declined: Restricted Mode, then trust granted in the trust editor. */
async function declinedThenTrusted() {
  await step('open the folder and decline the trust prompt', async () => {
    await openAndAnswerPrompt("No, I don't trust the authors");
  });

  await step('Restricted Mode: the status bar and the notification say why nothing compiles', async () => {
    // "no run" until the server's first status arrives; then the run it reads from the store.
    await page.locator(STATUS, { hasText: /run \d+ · restricted/ }).waitFor({ timeout: 90000 });
    results.restricted = { status: await statusText() };
    const notice = toast('not trusted (Restricted Mode)');
    await notice.waitFor({ timeout: 30000 });
    results.restricted.notification = await toastContent(notice);
    results.restricted.server = serverProcesses();
    await shot('02-restricted');
  });

  await step('a hover answers from the store in the folder', async () => {
    await page.keyboard.press('Control+P');
    const input = page.locator('.quick-input-widget input');
    await input.waitFor({ state: 'visible' });
    await input.fill('mlp.py');
    await page.locator('.quick-input-widget .monaco-list-row', { hasText: 'mlp.py' }).first().waitFor({ timeout: 15000 });
    await page.keyboard.press('Enter');
    await page.locator('.editor-group-container.active .tab.active', { hasText: 'mlp.py' }).waitFor({ timeout: 15000 });
    const line = page.locator('.editor-group-container').first().locator('.view-lines .view-line', { hasText: args.needle }).first();
    const word = line.locator('span span', { hasText: 'gelu' }).first();
    const hover = page.locator('.monaco-hover:not(.hidden)', { hasText: 'triton_' }).first();
    results.hoverText = await hoverUntilShown(word, hover);
    await shot('03-hover');
    await page.mouse.move(5, 5);
    await page.keyboard.press('Escape');
  });

  await step('kernelscope: Compile is refused, saying why', async () => {
    await goToLine(1);
    await runCommand('kernelscope: Compile');
    const refusal = toast('compiling refused');
    await refusal.waitFor({ timeout: 30000 });
    results.compile = await toastContent(refusal);
    results.compile.status = await statusText();
    await shot('04-compile-refused');
    // Nothing ran: noted now, before trust is granted below.
    results.markerBeforeTrust = existsSync(args.marker);
    results.serverBeforeTrust = serverProcesses();
  });

  await step('grant trust: the server restarts with the workspace settings', async () => {
    await page.keyboard.press('Escape');
    await runCommand('Workspaces: Manage Workspace Trust');
    const trustButton = page.locator('.workspace-trust-editor .monaco-button', { hasText: /^Trust$/ }).first();
    await trustButton.waitFor({ timeout: 20000 });
    await shot('05-trust-editor');
    await trustButton.click();
    results.trusted = await readTrusted(results.serverBeforeTrust[0]?.pid);
    results.markerAfterTrust = existsSync(args.marker);
    await shot('06-trusted');
  });
}

try {
  if (args['trust-at-prompt']) {
    await trustedAtPrompt();
  } else {
    await declinedThenTrusted();
  }
} catch (error) {
  results.failure = String(error?.stack ?? error);
  results.notifications = await page.locator('.notifications-toasts .notification-list-item-message').allTextContents().catch(() => []);
  if (results.notifications.length) results.failure += `\nnotifications shown: ${results.notifications.join(' | ')}`;
  log(`FAILED: ${results.failure}`);
  await shot('failure').catch(() => undefined);
}
results.seconds = Math.round((Date.now() - started) / 100) / 10;
writeFileSync(path.join(args.out, 'results.json'), JSON.stringify(results, null, 2));
await browser.close();
log(results.failure ? 'failed' : 'done');
process.exit(results.failure ? 1 : 0);
