/** Protocol ranges (plain data) to VS Code ranges. */
import * as vscode from 'vscode';
import type { Range } from './protocol';

export function toRange(range: Range): vscode.Range {
  return new vscode.Range(range.start.line, range.start.character, range.end.line, range.end.character);
}

/** Open a file URI from the server at a 0-based line. */
export async function openAt(
  uri: string,
  line: number,
  viewColumn: vscode.ViewColumn,
  preserveFocus = false,
): Promise<vscode.TextEditor> {
  const document = await vscode.workspace.openTextDocument(vscode.Uri.parse(uri));
  const position = new vscode.Position(Math.max(0, Math.min(line, document.lineCount - 1)), 0);
  const editor = await vscode.window.showTextDocument(document, {
    viewColumn,
    preserveFocus,
    selection: new vscode.Selection(position, position),
  });
  editor.revealRange(new vscode.Range(position, position), vscode.TextEditorRevealType.InCenterIfOutsideViewport);
  return editor;
}

/** The column of a visible editor showing `uri`, else `fallback`. */
export function columnFor(uri: string, fallback: vscode.ViewColumn): vscode.ViewColumn {
  const target = vscode.Uri.parse(uri).toString();
  const visible = vscode.window.visibleTextEditors.find((e) => e.document.uri.toString() === target);
  return visible?.viewColumn ?? fallback;
}
