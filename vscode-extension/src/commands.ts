/** The extension's commands (the server's own command ids are called through workspace/executeCommand). */
import * as vscode from 'vscode';
import { ExecuteCommandRequest, ResponseError } from 'vscode-languageclient/node';
import { columnFor, openAt, toRange } from './convert';
import type { LinkedHighlighter } from './highlights';
import { formatCreated } from './overview/page';
import { OverviewPanel } from './overviewPanel';
import {
  ErrorCodes,
  Methods,
  ServerCommands,
  type AsmForLineAnswer,
  type AsmKernel,
  type BuildAsmAnswer,
  type KernelForLine,
  type KernelsForLineAnswer,
  type RunsAnswer,
  type SourceForLineAnswer,
} from './protocol';
import type { ServerManager } from './server';
import { rankText } from './statusText';
import { baseName, isAsmPath, isStoredCppPath } from './uris';

async function serverCommand<T>(server: ServerManager, command: string, args: unknown[] = []): Promise<T> {
  const client = await server.ready();
  return (await client.sendRequest(ExecuteCommandRequest.type, { command, arguments: args })) as T;
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

async function reportError(what: string, error: unknown, output: vscode.OutputChannel): Promise<void> {
  if (error instanceof ResponseError && error.code === ErrorCodes.untrusted) {
    // Refused in an untrusted workspace: the server's message says why and how to trust it.
    const choice = await vscode.window.showWarningMessage(error.message, 'Manage Workspace Trust');
    if (choice) await vscode.commands.executeCommand('workbench.trust.manage');
    return;
  }
  const choice = await vscode.window.showErrorMessage(`kernelscope: ${what}: ${errorText(error)}`, 'Show log');
  if (choice) output.show(true);
}

function cursorParams(editor: vscode.TextEditor) {
  return { textDocument: { uri: editor.document.uri.toString() }, position: editor.selection.active };
}

export function registerCommands(
  context: vscode.ExtensionContext,
  server: ServerManager,
  highlighter: LinkedHighlighter,
  output: vscode.LogOutputChannel,
): void {
  const register = (id: string, handler: () => Promise<unknown>) =>
    context.subscriptions.push(vscode.commands.registerCommand(id, handler));

  register('kernelscope.compileModel', async () => {
    const editor = vscode.window.activeTextEditor;
    const args = editor?.document.languageId === 'python' && editor.document.uri.scheme === 'file'
      ? [{ uri: editor.document.uri.toString() }]
      : [];
    try {
      const result = await vscode.window.withProgress(
        { location: vscode.ProgressLocation.Window, title: 'kernelscope: compiling' },
        () => serverCommand<{ runId: number }>(server, ServerCommands.compile, args),
      );
      vscode.window.setStatusBarMessage(`kernelscope: recorded run ${result.runId}`, 8000);
      OverviewPanel.refreshIfOpen(result.runId);
      await highlighter.refreshActive();
    } catch (error) {
      await reportError('compile failed', error, output);
    }
  });

  register('kernelscope.toggleWatchMode', async () => {
    try {
      const result = await serverCommand<{ watching: boolean }>(server, ServerCommands.toggleWatch);
      vscode.window.setStatusBarMessage(result.watching ? 'kernelscope: watching (recompiles on save)' : 'kernelscope: watch off', 5000);
    } catch (error) {
      await reportError('could not toggle watch', error, output);
    }
  });

  register('kernelscope.showKernels', async () => {
    const editor = vscode.window.activeTextEditor;
    if (!editor) return;
    try {
      const client = await server.ready();
      const answer = await client.sendRequest<KernelsForLineAnswer>(Methods.kernelsForLine, cursorParams(editor));
      const line = editor.selection.active.line + 1;
      const openable = answer.kernels.filter((k) => k.uri);
      if (openable.length === 0) {
        const externs = answer.kernels.map((k) => k.name);
        void vscode.window.showInformationMessage(
          externs.length
            ? `kernelscope: line ${line} runs only as extern call(s) (${externs.join(', ')}): no generated kernel to open.`
            : `kernelscope: no kernels for line ${line} of ${baseName(editor.document.uri.toString())} in this run. Compile first, or pick another run.`,
        );
        return;
      }
      const kernel = openable.length === 1 ? openable[0] : await pickKernel(openable);
      if (!kernel?.uri) return;
      const kernelEditor = await openAt(kernel.uri, kernel.range?.start.line ?? 0, vscode.ViewColumn.Beside, true);
      if (kernel.range) {
        kernelEditor.revealRange(toRange(kernel.range), vscode.TextEditorRevealType.InCenter);
      }
      await highlighter.refresh(editor);
    } catch (error) {
      await reportError('could not show kernels', error, output);
    }
  });

  register('kernelscope.revealSource', async () => {
    const editor = vscode.window.activeTextEditor;
    if (!editor) return;
    try {
      const client = await server.ready();
      const answer = await client.sendRequest<SourceForLineAnswer>(Methods.sourceForLine, cursorParams(editor));
      if (answer.sources.length === 0) {
        void vscode.window.showInformationMessage(`kernelscope: line ${editor.selection.active.line + 1} has no source line.`);
        return;
      }
      const source = answer.sources.length === 1
        ? answer.sources[0]
        : (await vscode.window.showQuickPick(
            answer.sources.map((s) => ({ label: s.label || `${baseName(s.uri)}:${s.range.start.line + 1}`, description: `${baseName(s.uri)}:${s.range.start.line + 1}`, source: s })),
            { placeHolder: 'Source lines of this generated line' },
          ))?.source;
      if (!source) return;
      const sourceEditor = await openAt(source.uri, source.range.start.line, columnFor(source.uri, vscode.ViewColumn.One));
      sourceEditor.revealRange(toRange(source.range), vscode.TextEditorRevealType.InCenter);
      await highlighter.refresh(editor);
    } catch (error) {
      await reportError('could not reveal the source', error, output);
    }
  });

  register('kernelscope.showRun', async () => {
    OverviewPanel.show(context.extensionUri, server);
  });

  register('kernelscope.pickRun', async () => {
    try {
      const { runs } = await serverCommand<RunsAnswer>(server, ServerCommands.runs);
      type Item = vscode.QuickPickItem & { runId: number | null };
      const items: Item[] = [
        { label: '$(arrow-up) Follow the latest run', description: 'each new compile becomes the shown run', runId: null },
        ...runs.map((run) => ({
          label: `${run.selected ? '$(check) ' : ''}Run ${run.id} — ${run.target}`,
          description: `${run.rank ? `${rankText(run.rank)} · ` : ''}${run.device} · ${run.mode} · ${run.graphs} graph(s) · ${run.kernels} kernel(s)`,
          detail: `recorded ${formatCreated(run.created)}`,
          runId: run.id,
        })),
      ];
      const picked = await vscode.window.showQuickPick(items, {
        placeHolder: runs.length ? 'Show which run?' : 'No runs yet: run "kernelscope: Compile" first',
      });
      if (!picked) return;
      await serverCommand(server, ServerCommands.selectRun, [picked.runId]);
      OverviewPanel.refreshIfOpen();
      await highlighter.refreshActive();
    } catch (error) {
      await reportError('could not list runs', error, output);
    }
  });

  register('kernelscope.restartServer', async () => {
    await server.restart();
  });

  /** Compile kernels to PTX and SASS in the engine worker: those of `args` ({uri, line}), else the shown run's. */
  const buildAsm = async (args: { uri?: string; line?: number }): Promise<BuildAsmAnswer | undefined> => {
    try {
      const result = await vscode.window.withProgress(
        { location: vscode.ProgressLocation.Notification, title: 'kernelscope: compiling to PTX and SASS' },
        () => serverCommand<BuildAsmAnswer>(server, ServerCommands.buildAsm, [args]),
      );
      const failed = result.failed.length ? `, ${result.failed.length} failed: ${result.failed[0]}` : '';
      vscode.window.setStatusBarMessage(
        result.asked === 0
          ? 'kernelscope: already compiled to PTX and SASS'
          : `kernelscope: ${result.built} kernel(s) compiled to PTX and SASS in ${result.seconds.toFixed(1)}s${failed}`,
        8000,
      );
      OverviewPanel.refreshIfOpen();
      await highlighter.refreshActive();
      return result;
    } catch (error) {
      await reportError('compiling to PTX and SASS failed', error, output);
      return undefined;
    }
  };

  register('kernelscope.buildAsmForLine', async () => {
    const editor = vscode.window.activeTextEditor;
    const linkable = editor && editor.document.uri.scheme === 'file' && (editor.document.languageId === 'python' || isAsmPath(editor.document.uri.fsPath) || isStoredCppPath(editor.document.uri.fsPath));
    await buildAsm(linkable ? { uri: editor.document.uri.toString(), line: editor.selection.active.line } : {});
  });

  register('kernelscope.buildAsmForRun', async () => {
    await buildAsm({});
  });

  register('kernelscope.showAsm', async () => {
    const editor = vscode.window.activeTextEditor;
    if (!editor) return;
    try {
      const client = await server.ready();
      const ask = () => client.sendRequest<AsmForLineAnswer>(Methods.asmForLine, cursorParams(editor));
      let answer = await ask();
      const line = editor.selection.active.line + 1;
      if (answer.kernels.length === 0) {
        void vscode.window.showInformationMessage(`kernelscope: line ${line} reaches no Triton kernel in this run: there is no PTX or SASS to show.`);
        return;
      }
      if (answer.kernels.some((k) => k.status === 'not built')) {
        const choice = await vscode.window.showInformationMessage(
          `kernelscope: the kernels of line ${line} are not compiled to PTX and SASS yet (about 1-2 s a kernel, in the engine worker).`,
          'Build',
        );
        if (choice !== 'Build' || !(await buildAsm({ uri: editor.document.uri.toString(), line: editor.selection.active.line }))) {
          return;
        }
        answer = await ask();
      }
      const built = answer.kernels.filter((k) => k.status === 'built' && (k.stages.sass ?? k.stages.x86));
      if (built.length === 0) {
        const failed = answer.kernels.find((k) => k.error);
        void vscode.window.showWarningMessage(`kernelscope: no SASS for line ${line}${failed ? `: ${failed.error}` : ''}.`);
        return;
      }
      const kernel = built.length === 1 ? built[0] : await pickAsmKernel(built);
      const sass = kernel?.stages.sass ?? kernel?.stages.x86; // a C++ kernel: its x86-64
      if (!kernel || !sass) return;
      const first = sass.focus ?? sass.ranges[0]?.start.line ?? 0;
      const beside = editor.viewColumn === vscode.ViewColumn.One ? vscode.ViewColumn.Beside : vscode.ViewColumn.One;
      await openAt(sass.uri, first, columnFor(sass.uri, beside), true);
      vscode.window.setStatusBarMessage(`kernelscope: ${kernel.name}: ${kernel.facts ?? ''}`, 10000);
      await highlighter.refresh(editor);
    } catch (error) {
      await reportError('could not show the SASS', error, output);
    }
  });
}

async function pickAsmKernel(kernels: AsmKernel[]): Promise<AsmKernel | undefined> {
  const picked = await vscode.window.showQuickPick(
    kernels.map((k) => ({ label: k.name, description: k.facts ?? '', kernel: k })),
    { placeHolder: 'This line was fused into several kernels: show the SASS of which?' },
  );
  return picked?.kernel;
}

async function pickKernel(kernels: KernelForLine[]): Promise<KernelForLine | undefined> {
  const picked = await vscode.window.showQuickPick(
    kernels.map((k) => ({ label: k.name, description: `${k.kind} · ${k.graph}`, kernel: k })),
    { placeHolder: 'This line was fused into several kernels: open which?' },
  );
  return picked?.kernel;
}
