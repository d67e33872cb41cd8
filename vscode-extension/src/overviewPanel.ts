/**
 * "kernelscope: Show run": a webview fed by the server's `kernelscope/runOverview`
 * (the extension never reads the store itself). Clicks in the page open files.
 */
import { randomBytes } from 'node:crypto';
import * as vscode from 'vscode';
import { columnFor, openAt } from './convert';
import { overviewShellHtml } from './overview/page';
import { Methods, type RunOverview } from './protocol';
import type { ServerManager } from './server';

type FromWebview =
  | { type: 'ready' }
  | { type: 'refresh' }
  | { type: 'pickRun' }
  | { type: 'buildAsm' }
  | { type: 'open'; uri: string; line: number };

export class OverviewPanel implements vscode.Disposable {
  private static current: OverviewPanel | undefined;
  private readonly disposables: vscode.Disposable[] = [];
  private shownRunId: number | undefined;

  static show(extensionUri: vscode.Uri, server: ServerManager): OverviewPanel {
    if (OverviewPanel.current) {
      OverviewPanel.current.panel.reveal();
      void OverviewPanel.current.refresh();
      return OverviewPanel.current;
    }
    const panel = vscode.window.createWebviewPanel('kernelscope.overview', 'kernelscope run', vscode.ViewColumn.Beside, {
      enableScripts: true,
      retainContextWhenHidden: true,
      localResourceRoots: [vscode.Uri.joinPath(extensionUri, 'dist'), vscode.Uri.joinPath(extensionUri, 'media')],
    });
    OverviewPanel.current = new OverviewPanel(panel, extensionUri, server);
    return OverviewPanel.current;
  }

  /** Refresh an open overview (after a new run or another run was picked). */
  static refreshIfOpen(runId?: number | null): void {
    const current = OverviewPanel.current;
    if (current && (runId === undefined || runId !== current.shownRunId)) {
      void current.refresh();
    }
  }

  private constructor(
    private readonly panel: vscode.WebviewPanel,
    extensionUri: vscode.Uri,
    private readonly server: ServerManager,
  ) {
    const webview = panel.webview;
    webview.html = overviewShellHtml({
      cspSource: webview.cspSource,
      nonce: randomBytes(16).toString('base64'),
      scriptUri: webview.asWebviewUri(vscode.Uri.joinPath(extensionUri, 'dist', 'webview.js')).toString(),
      styleUri: webview.asWebviewUri(vscode.Uri.joinPath(extensionUri, 'media', 'overview.css')).toString(),
    });
    this.disposables.push(
      webview.onDidReceiveMessage((message: FromWebview) => void this.handle(message)),
      panel.onDidDispose(() => this.dispose()),
    );
  }

  private async handle(message: FromWebview): Promise<void> {
    switch (message.type) {
      case 'ready':
      case 'refresh':
        await this.refresh();
        break;
      case 'pickRun':
        await vscode.commands.executeCommand('kernelscope.pickRun');
        break;
      case 'buildAsm':
        await vscode.commands.executeCommand('kernelscope.buildAsmForRun');
        await this.refresh();
        break;
      case 'open': {
        const fallback = this.panel.viewColumn === vscode.ViewColumn.One ? vscode.ViewColumn.Beside : vscode.ViewColumn.One;
        await openAt(message.uri, message.line, columnFor(message.uri, fallback));
        break;
      }
    }
  }

  async refresh(): Promise<void> {
    try {
      const client = await this.server.ready();
      const overview = await client.sendRequest<RunOverview>(Methods.runOverview, {});
      this.shownRunId = overview.run.id;
      this.panel.title = `kernelscope run ${overview.run.id}`;
      await this.panel.webview.postMessage({ type: 'overview', overview });
    } catch (error) {
      const text = error instanceof Error ? error.message : String(error);
      await this.panel.webview.postMessage({ type: 'error', message: text });
    }
  }

  dispose(): void {
    if (OverviewPanel.current === this) {
      OverviewPanel.current = undefined;
    }
    for (const d of this.disposables) d.dispose();
    this.panel.dispose();
  }
}
