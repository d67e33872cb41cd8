/** The status-bar item: compiling / last run / errors; a click opens the run picker. */
import * as vscode from 'vscode';
import type { ServerManager } from './server';
import { statusPresentation } from './statusText';

export function createStatusBar(server: ServerManager): vscode.Disposable {
  const item = vscode.window.createStatusBarItem('kernelscope.status', vscode.StatusBarAlignment.Left, 50);
  item.name = 'kernelscope';
  item.command = 'kernelscope.pickRun';
  const update = () => {
    const presentation = statusPresentation(server.clientState, server.status, server.restricted);
    item.text = presentation.text;
    item.tooltip = presentation.tooltip;
    item.backgroundColor = presentation.isError ? new vscode.ThemeColor('statusBarItem.errorBackground') : undefined;
  };
  update();
  item.show();
  const subscription = server.onDidChange(update);
  return vscode.Disposable.from(item, subscription);
}
