// The workbench as the e2e scenarios drive it (code-server + Chromium through Playwright):
// run a command from the palette, go to a line, read the cursor's line, the colour a
// kernelscope theme colour has in the current theme, and the lines an editor group shows
// with that colour behind them, hover a word until its hover shows. Shared by every scenario.
import { readFileSync } from 'node:fs';

const manifest = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));

export function workbench(page, log = () => undefined) {
  async function runCommand(title) {
    await page.keyboard.press('Escape');
    await page.keyboard.press('F1');
    const input = page.locator('.quick-input-widget input');
    await input.waitFor({ state: 'visible' });
    await input.fill(`>${title}`);
    const row = page.locator('.quick-input-widget .monaco-list-row', { hasText: title }).first();
    await row.waitFor({ state: 'visible', timeout: 15000 });
    await page.keyboard.press('Enter');
  }

  async function goToLine(line) {
    // The quick input may take Enter before it has read the typed line (a loaded
    // machine): check that the cursor moved and try again if not.
    for (let attempt = 1; ; attempt++) {
      await page.keyboard.press('Control+G');
      const input = page.locator('.quick-input-widget input');
      await input.waitFor({ state: 'visible' });
      await input.fill(`:${line}`);
      await page.locator('.quick-input-widget .monaco-list-row', { hasText: `${line}` }).first().waitFor({ timeout: 10000 }).catch(() => undefined);
      await page.keyboard.press('Enter');
      try {
        await page.waitForFunction(
          (l) => document.querySelector('[id="status.editor.selection"]')?.textContent?.includes(`Ln ${l},`),
          line,
          { timeout: 10000 },
        );
        return;
      } catch (error) {
        if (attempt >= 3) throw error;
        log(`go to line ${line}: the cursor did not move, again (attempt ${attempt})`);
        await page.keyboard.press('Escape');
      }
    }
  }

  async function cursorLine() {
    const text = (await page.locator('[id="status.editor.selection"]').textContent()) ?? '';
    const match = /Ln (\d+)/.exec(text);
    return match ? Number(match[1]) : null;
  }

  async function themeColor(colorId) {
    const kind = await page.evaluate(() => {
      const classes = document.querySelector('.monaco-workbench')?.classList;
      if (classes?.contains('hc-light')) return 'highContrastLight';
      if (classes?.contains('hc-black')) return 'highContrast';
      return classes?.contains('vs-dark') ? 'dark' : 'light';
    });
    const hex = manifest.contributes.colors.find((c) => c.id === colorId).defaults[kind];
    const [r, g, b, a = 255] = hex.slice(1).match(/../g).map((h) => parseInt(h, 16));
    return { r, g, b, a: Math.round((a / 255) * 100) / 100 };
  }

  async function decoratedLines(color, groupIndex) {
    return page.evaluate(
      ({ color, groupIndex }) => {
        const group = document.querySelectorAll('.editor-group-container')[groupIndex];
        if (!group) return [];
        const numbers = new Map();
        for (const n of Array.from(group.querySelectorAll('.margin-view-overlays .line-numbers'))) {
          numbers.set(n.parentElement.style.top, Number(n.textContent.trim()));
        }
        const matches = (css) => {
          const m = /rgba?\(([^)]+)\)/.exec(css);
          if (!m) return false;
          const [r, g, b, a = 1] = m[1].split(',').map(Number);
          return r === color.r && g === color.g && b === color.b && Math.abs(a - color.a) < 0.02;
        };
        return Array.from(group.querySelectorAll('.view-overlays .cdr'))
          .filter((el) => matches(getComputedStyle(el).backgroundColor))
          .map((el) => numbers.get(el.parentElement.style.top))
          .filter((n) => n !== undefined)
          .sort((a, b) => a - b);
      },
      { color, groupIndex },
    );
  }

  /** Hover `target` (a locator) until `hover` (the hover widget's locator) shows, up to five
   * times (the language server may still be loading the run); the hover's text. */
  async function hoverUntilShown(target, hover) {
    for (let attempt = 0; attempt < 5; attempt++) {
      await page.mouse.move(5, 5);
      await target.hover();
      try {
        await hover.waitFor({ state: 'visible', timeout: 6000 });
        break;
      } catch {
        log(`no hover yet (attempt ${attempt + 1})`);
      }
    }
    return ((await hover.textContent()) ?? '').trim();
  }

  return { runCommand, goToLine, cursorLine, themeColor, decoratedLines, hoverUntilShown };
}
