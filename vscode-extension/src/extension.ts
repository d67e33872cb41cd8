/** Entry point: wires the language client, status bar, linked highlighting, commands and the run overview. */
import * as vscode from 'vscode';
import { registerCommands } from './commands';
import { LinkedHighlighter } from './highlights';
import { OverviewPanel } from './overviewPanel';
import { onActivePythonChanged } from './python';
import { ServerManager } from './server';
import { createStatusBar } from './statusBar';
import { isGeneratedPath } from './uris';

let server: ServerManager | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const output = vscode.window.createOutputChannel('kernelscope', { log: true });
  // Where the server starts in an untrusted workspace: a folder of our own, not the workspace.
  server = new ServerManager(output, vscode.Uri.joinPath(context.globalStorageUri, 'server-cwd').fsPath);
  const highlighter = new LinkedHighlighter(server, output);
  context.subscriptions.push(output, server, highlighter, createStatusBar(server));
  registerCommands(context, server, highlighter, output);

  const updateContext = (editor: vscode.TextEditor | undefined) =>
    void vscode.commands.executeCommand('setContext', 'kernelscope.generatedFile', Boolean(editor && isGeneratedPath(editor.document.uri.fsPath)));
  updateContext(vscode.window.activeTextEditor);
  context.subscriptions.push(vscode.window.onDidChangeActiveTextEditor(updateContext));

  let lastRunId: number | null | undefined;
  context.subscriptions.push(
    server.onDidChange(({ status }) => {
      if (status && status.runId !== lastRunId && status.state !== 'compiling') {
        lastRunId = status.runId;
        OverviewPanel.refreshIfOpen(status.runId);
        void highlighter.refreshActive();
      }
    }),
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (event.affectsConfiguration('kernelscope.python')) {
        void server?.restartIfInterpreterChanged();
      } else if (event.affectsConfiguration('kernelscope')) {
        void server?.sendSettings();
      }
    }),
  );
  // Trust granted (Restricted Mode left): restart in trusted mode, with the workspace's settings.
  context.subscriptions.push(vscode.workspace.onDidGrantWorkspaceTrust(() => void server?.restartIfInterpreterChanged()));
  const pythonListener = await onActivePythonChanged(() => void server?.restartIfInterpreterChanged());
  if (pythonListener) context.subscriptions.push(pythonListener);

  void server.start();
}

export async function deactivate(): Promise<void> {
  await server?.stop();
}
