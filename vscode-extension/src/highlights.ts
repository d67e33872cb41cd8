/**
 * Linked highlighting: whenever the cursor moves in a Python editor (or a kernel's
 * PTX/SASS file), ask the server for `kernelscope/linkedRanges` and decorate the
 * linked lines in every other visible editor (model ↔ generated kernel, wrapper,
 * FX graphs, and the kernel's PTX and SASS once built).
 */
import * as vscode from 'vscode';
import { toRange } from './convert';
import { planHighlights } from './linked';
import { Methods, type LinkedRangesAnswer } from './protocol';
import type { ServerManager } from './server';
import { isAsmPath, isStoredCppPath } from './uris';

const DEBOUNCE_MS = 120;
const RETRY_MS = 500;

export class LinkedHighlighter implements vscode.Disposable {
  private readonly originType = vscode.window.createTextEditorDecorationType({
    isWholeLine: true,
    backgroundColor: new vscode.ThemeColor('kernelscope.originLineBackground'),
  });
  private readonly linkedType = vscode.window.createTextEditorDecorationType({
    isWholeLine: true,
    backgroundColor: new vscode.ThemeColor('kernelscope.linkedLineBackground'),
    overviewRulerColor: new vscode.ThemeColor('kernelscope.linkedLineRuler'),
    overviewRulerLane: vscode.OverviewRulerLane.Right,
  });
  private readonly disposables: vscode.Disposable[] = [];
  private timer: NodeJS.Timeout | undefined;
  private sequence = 0;

  constructor(
    private readonly server: ServerManager,
    private readonly log: vscode.LogOutputChannel,
  ) {
    this.disposables.push(
      this.originType,
      this.linkedType,
      vscode.window.onDidChangeTextEditorSelection((event) => {
        if (event.textEditor === vscode.window.activeTextEditor) {
          this.schedule(event.textEditor);
        }
      }),
      // Focusing the other editor makes its cursor line the one the highlights are about.
      vscode.window.onDidChangeActiveTextEditor((editor) => {
        if (editor) {
          this.schedule(editor);
        }
      }),
      vscode.window.onDidChangeVisibleTextEditors(() => {
        const active = vscode.window.activeTextEditor;
        if (active) {
          this.schedule(active);
        }
      }),
    );
  }

  private schedule(editor: vscode.TextEditor): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.refresh(editor), DEBOUNCE_MS);
  }

  /** Ask for the links of the cursor line of `editor` and decorate all visible editors. */
  async refresh(editor: vscode.TextEditor, reveal = true): Promise<void> {
    const sequence = ++this.sequence;
    const client = this.server.current;
    const supported = editor.document.uri.scheme === 'file' && (editor.document.languageId === 'python' || isAsmPath(editor.document.uri.fsPath) || isStoredCppPath(editor.document.uri.fsPath));
    let answer: LinkedRangesAnswer | null = null;
    if (client && supported) {
      const ask = () => client.sendRequest<LinkedRangesAnswer>(Methods.linkedRanges, {
        textDocument: { uri: editor.document.uri.toString() },
        position: editor.selection.active,
      });
      try {
        answer = await ask();
      } catch (error) {
        // A busy or restarting server: ask once more before leaving the editors unhighlighted.
        this.log.warn(`linkedRanges failed for ${editor.document.uri.fsPath}:${editor.selection.active.line + 1}: ${String(error)}; asking again`);
        await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
        try {
          answer = sequence === this.sequence ? await ask() : null;
        } catch (again) {
          this.log.warn(`linkedRanges failed again: ${String(again)}`);
          answer = null;
        }
      }
    }
    this.log.debug(`linked ranges of ${editor.document.uri.fsPath}:${editor.selection.active.line + 1}: ${answer ? answer.links.length : 'no'} file(s)`);
    if (sequence !== this.sequence) {
      return; // the cursor moved on while we waited
    }
    const visible = vscode.window.visibleTextEditors;
    const requestingUri = editor.document.uri.toString();
    const plan = planHighlights(answer, requestingUri, visible.map((e) => e.document.uri.toString()));
    for (const visibleEditor of visible) {
      const highlights = plan.get(visibleEditor.document.uri.toString());
      visibleEditor.setDecorations(this.originType, (highlights?.origin ?? []).map(toRange));
      const linked = (highlights?.linked ?? []).map((line) => ({
        range: toRange(line.range),
        hoverMessage: line.label ? new vscode.MarkdownString().appendText(line.label) : undefined,
      }));
      visibleEditor.setDecorations(this.linkedType, linked);
      if (reveal && linked.length > 0 && visibleEditor !== editor && !anyVisible(visibleEditor, linked.map((l) => l.range))) {
        visibleEditor.revealRange(linked[0].range, vscode.TextEditorRevealType.InCenterIfOutsideViewport);
      }
    }
  }

  /** Refresh from the active editor (after a new run, or after opening a kernel beside it). */
  async refreshActive(): Promise<void> {
    const active = vscode.window.activeTextEditor;
    if (active) {
      await this.refresh(active);
    }
  }

  dispose(): void {
    clearTimeout(this.timer);
    for (const d of this.disposables) d.dispose();
  }
}

function anyVisible(editor: vscode.TextEditor, ranges: vscode.Range[]): boolean {
  return ranges.some((r) => editor.visibleRanges.some((v) => v.intersection(r) !== undefined));
}
