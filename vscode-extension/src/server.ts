/**
 * Starts, stops and restarts `kernelscope lsp` with the resolved interpreter,
 * after checking that the interpreter can import kernelscope.
 */
import * as vscode from 'vscode';
import {
  DidChangeConfigurationNotification,
  LanguageClient,
  type LanguageClientOptions,
  type ServerOptions,
} from 'vscode-languageclient/node';
import { interpreterChanged, resolveInterpreter, serverCommand, type ResolvedInterpreter } from './interpreter';
import { Methods, type StatusParams } from './protocol';
import { activePythonExecutable } from './python';
import { checkFailureMessage, checkInterpreter } from './serverCheck';
import { needsRestart, serverOptionsPayload, type KernelscopeSettings, type ServerOptionsPayload } from './settings';
import type { ClientState } from './statusText';

/** The interpreter setting, and the other settings only where the user set them (workspace folder, workspace or user). */
export function readSettings(): Partial<KernelscopeSettings> & { python: string } {
  const config = vscode.workspace.getConfiguration('kernelscope', workspaceFolder()?.uri);
  const explicit = <T>(key: string): T | undefined => {
    const inspected = config.inspect<T>(key);
    return inspected?.workspaceFolderValue ?? inspected?.workspaceValue ?? inspected?.globalValue;
  };
  return {
    python: config.get<string>('python', ''),
    target: explicit<string>('target'),
    deviceTarget: explicit<string>('deviceTarget'),
    train: explicit<boolean>('train'),
    inlayHints: explicit<boolean>('inlayHints'),
    asmAfterCompile: explicit<boolean>('asmAfterCompile'),
    decisions: explicit<string>('decisions'),
  };
}

export function workspaceFolder(): vscode.WorkspaceFolder | undefined {
  return vscode.workspace.workspaceFolders?.[0];
}

export class ServerManager implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private interpreter: ResolvedInterpreter | undefined;
  private state: ClientState = 'stopped';
  private lastStatus: StatusParams | undefined;
  private starting: Promise<void> | undefined;
  private sentOptions: ServerOptionsPayload | undefined;
  private readonly stateEmitter = new vscode.EventEmitter<{ state: ClientState; status?: StatusParams }>();
  /** Fires on every change of the client's state or the server's status. */
  readonly onDidChange = this.stateEmitter.event;

  constructor(private readonly output: vscode.LogOutputChannel) {}

  get current(): LanguageClient | undefined {
    return this.state === 'running' ? this.client : undefined;
  }

  get clientState(): ClientState {
    return this.state;
  }

  get status(): StatusParams | undefined {
    return this.lastStatus;
  }

  /** The running client, or an error a command can show. */
  async ready(): Promise<LanguageClient> {
    if (this.starting) {
      await this.starting;
    }
    if (!this.client || this.state !== 'running') {
      throw new Error('The kernelscope language server is not running (see the "kernelscope" output channel).');
    }
    return this.client;
  }

  start(): Promise<void> {
    this.starting ??= this.doStart().finally(() => {
      this.starting = undefined;
    });
    return this.starting;
  }

  private setState(state: ClientState): void {
    this.state = state;
    this.stateEmitter.fire({ state, status: this.lastStatus });
  }

  private async resolve(): Promise<ResolvedInterpreter> {
    const folder = workspaceFolder();
    const settings = readSettings();
    const active = settings.python.trim() ? undefined : await activePythonExecutable(folder?.uri);
    return resolveInterpreter(settings.python, active, folder?.uri.fsPath);
  }

  private async doStart(): Promise<void> {
    const interpreter = await this.resolve();
    this.interpreter = interpreter;
    this.setState('starting');
    const cwd = workspaceFolder()?.uri.fsPath;
    this.output.info(`Interpreter: ${interpreter.python} (from ${interpreter.source})`);
    const check = await checkInterpreter(interpreter.python, cwd);
    if (!check.ok) {
      const { message, installCommand } = checkFailureMessage(interpreter.python, check);
      this.output.error(message);
      this.setState(check.reason === 'no-interpreter' ? 'no-interpreter' : 'not-installed');
      void this.offerFix(message, installCommand);
      return;
    }
    this.output.info(`kernelscope found at ${check.location} (Python ${check.version})`);

    const { command, args } = serverCommand(interpreter.python);
    const serverOptions: ServerOptions = {
      command,
      args,
      options: { cwd, env: { ...process.env, PYTHONUNBUFFERED: '1' } },
    };
    const clientOptions: LanguageClientOptions = {
      // Python files, and kernels' PTX/SASS files in the store (the server answers in them too).
      documentSelector: [
        { scheme: 'file', language: 'python' },
        { scheme: 'file', pattern: '**/.kernelscope/runs/*/asm/**/*.{sass,ptx,ttgir,ttir}' },
      ],
      outputChannel: this.output,
      traceOutputChannel: this.output,
      initializationOptions: (this.sentOptions = serverOptionsPayload(readSettings(), interpreter.python)),
      workspaceFolder: workspaceFolder(),
    };
    const client = new LanguageClient('kernelscope', 'kernelscope', serverOptions, clientOptions);
    client.onNotification(Methods.status, (status: StatusParams) => {
      this.lastStatus = status;
      this.stateEmitter.fire({ state: this.state, status });
    });
    client.onDidChangeState((event) => {
      // 1 = stopped, 2 = running (vscode-languageclient's State).
      if (event.newState === 1 && this.client === client && this.state === 'running') {
        this.setState('stopped');
      }
    });
    this.client = client;
    try {
      await client.start();
      this.setState('running');
    } catch (error) {
      this.output.error(`The language server failed to start: ${String(error)}`);
      this.setState('stopped');
      void vscode.window
        .showErrorMessage(`kernelscope: the language server failed to start with ${interpreter.python}.`, 'Show log')
        .then((choice) => choice && this.output.show());
    }
  }

  private async offerFix(message: string, installCommand: string | undefined): Promise<void> {
    const actions = [installCommand ? 'Copy install command' : undefined, 'Open settings', 'Select interpreter'].filter(
      (a): a is string => a !== undefined,
    );
    const choice = await vscode.window.showErrorMessage(message, ...actions);
    if (choice === 'Copy install command' && installCommand) {
      await vscode.env.clipboard.writeText(installCommand);
    } else if (choice === 'Open settings') {
      await vscode.commands.executeCommand('workbench.action.openSettings', 'kernelscope.python');
    } else if (choice === 'Select interpreter') {
      await vscode.commands.executeCommand('python.setInterpreter');
    }
  }

  async stop(): Promise<void> {
    if (this.starting) {
      await this.starting.catch(() => undefined);
    }
    const client = this.client;
    this.client = undefined;
    this.lastStatus = undefined;
    if (client) {
      try {
        await client.stop();
      } catch (error) {
        this.output.warn(`Stopping the server: ${String(error)}`);
      }
    }
    this.setState('stopped');
  }

  async restart(): Promise<void> {
    this.output.info('Restarting the kernelscope language server');
    await this.stop();
    await this.start();
  }

  /** Restart only if the interpreter resolves to another executable now. */
  async restartIfInterpreterChanged(): Promise<void> {
    const next = await this.resolve();
    if (interpreterChanged(this.interpreter, next) || this.state !== 'running') {
      this.output.info(`Interpreter changed to ${next.python}: restarting`);
      await this.restart();
    }
  }

  /** Send changed settings (other than the interpreter) to the running server; restart it when one was removed. */
  async sendSettings(): Promise<void> {
    const client = this.current;
    if (!client) {
      return;
    }
    const options = serverOptionsPayload(readSettings(), this.interpreter?.python);
    if (needsRestart(this.sentOptions, options)) {
      this.output.info('A kernelscope setting was removed: restarting the server so that pyproject.toml or the default applies');
      await this.restart();
      return;
    }
    this.sentOptions = options;
    await client.sendNotification(DidChangeConfigurationNotification.type, { settings: { kernelscope: options } });
  }

  dispose(): void {
    void this.stop();
    this.stateEmitter.dispose();
  }
}
