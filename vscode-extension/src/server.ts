/**
 * Starts, stops and restarts `kernelscope lsp` with the resolved interpreter,
 * after checking that the interpreter can import kernelscope.
 *
 * Workspace trust: in an untrusted workspace (Restricted Mode) the server starts with
 * the user's own interpreter (never one the workspace names or ships), outside the
 * workspace folder, and is told `trusted: false`, so it compiles nothing; a notification
 * and the status bar say so. Granting trust restarts it with the workspace's settings.
 */
import { mkdirSync } from 'node:fs';
import * as vscode from 'vscode';
import {
  DidChangeConfigurationNotification,
  LanguageClient,
  type LanguageClientOptions,
  type ServerOptions,
} from 'vscode-languageclient/node';
import {
  interpreterChanged,
  resolveInterpreter,
  resolveUntrustedInterpreter,
  serverLaunch,
  type ResolvedInterpreter,
} from './interpreter';
import { Methods, type StatusParams } from './protocol';
import { activePythonExecutable } from './python';
import { checkFailureMessage, checkInterpreter } from './serverCheck';
import { needsRestart, serverOptionsPayload, settingValue, type KernelscopeSettings, type ServerOptionsPayload } from './settings';
import type { ClientState } from './statusText';

/**
 * The interpreter setting, and the other settings only where the user set them (workspace
 * folder, workspace or user). Untrusted (`trusted` false): the restricted settings (the
 * interpreter, the target, the decisions file) only from the user's own settings.
 */
export function readSettings(trusted: boolean): Partial<KernelscopeSettings> & { python: string } {
  const config = vscode.workspace.getConfiguration('kernelscope', workspaceFolder()?.uri);
  const explicit = <T>(key: string): T | undefined => settingValue<T>(key, config.inspect<T>(key), trusted);
  return {
    python: explicit<string>('python') ?? '',
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
  /** Whether the running (or starting) server was started for a trusted workspace. */
  private trusted = true;
  private restrictedNoticeShown = false;
  private checking: Promise<void> = Promise.resolve();
  private state: ClientState = 'stopped';
  private lastStatus: StatusParams | undefined;
  private starting: Promise<void> | undefined;
  private sentOptions: ServerOptionsPayload | undefined;
  private readonly stateEmitter = new vscode.EventEmitter<{ state: ClientState; status?: StatusParams }>();
  /** Fires on every change of the client's state or the server's status. */
  readonly onDidChange = this.stateEmitter.event;

  /**
   * `outsideDirectory`: an empty folder of the extension's own (in its global storage),
   * where the server starts in an untrusted workspace.
   */
  constructor(
    private readonly output: vscode.LogOutputChannel,
    private readonly outsideDirectory: string,
  ) {}

  /** Whether the server runs for an untrusted workspace (Restricted Mode): it compiles nothing. */
  get restricted(): boolean {
    return !this.trusted;
  }

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

  private async resolve(trusted: boolean): Promise<ResolvedInterpreter> {
    const folder = workspaceFolder();
    if (!trusted) {
      // Only the user's own setting, else python3 on PATH: not the workspace's setting,
      // not the Python extension's pick (a cloned repository can ship .venv/bin/python).
      const userSetting = vscode.workspace.getConfiguration('kernelscope', folder?.uri).inspect<string>('python')?.globalValue;
      return resolveUntrustedInterpreter(userSetting, folder?.uri.fsPath);
    }
    const settings = readSettings(true);
    const active = settings.python.trim() ? undefined : await activePythonExecutable(folder?.uri);
    return resolveInterpreter(settings.python, active, folder?.uri.fsPath);
  }

  private async doStart(): Promise<void> {
    const trusted = vscode.workspace.isTrusted;
    this.trusted = trusted;
    const interpreter = await this.resolve(trusted);
    this.interpreter = interpreter;
    this.setState('starting');
    const folder = workspaceFolder()?.uri.fsPath;
    if (!trusted) {
      this.logRestrictedMode(interpreter);
      try {
        mkdirSync(this.outsideDirectory, { recursive: true });
      } catch (error) {
        // Not /tmp instead: anyone may put a kernelscope/ there.
        this.output.error(`Restricted Mode: could not create ${this.outsideDirectory} to start the server in: ${String(error)}`);
        this.setState('stopped');
        return;
      }
    }
    const launch = serverLaunch(interpreter.python, trusted, folder, this.outsideDirectory);
    this.output.info(`Interpreter: ${interpreter.python} (from ${interpreter.source})${trusted ? '' : `, started in ${launch.cwd}`}`);
    const check = await checkInterpreter(interpreter.python, launch.cwd, undefined, launch.env);
    if (!check.ok) {
      const { message, installCommand } = checkFailureMessage(interpreter.python, check, !trusted);
      this.output.error(message);
      this.setState(check.reason === 'no-interpreter' ? 'no-interpreter' : 'not-installed');
      void this.offerFix(message, installCommand, !trusted);
      return;
    }
    this.output.info(`kernelscope found at ${check.location} (Python ${check.version})`);

    const serverOptions: ServerOptions = {
      command: launch.command,
      args: launch.args,
      options: { cwd: launch.cwd, env: { ...process.env, ...launch.env } },
    };
    const clientOptions: LanguageClientOptions = {
      // Python files, kernels' PTX/SASS (a C++ kernel's x86) files and C++ wrappers/kernels in the store (the server answers in them too).
      documentSelector: [
        { scheme: 'file', language: 'python' },
        { scheme: 'file', pattern: '**/.kernelscope/runs/*/asm/**/*.{sass,ptx,ttgir,ttir,x86}' },
        { scheme: 'file', pattern: '**/.kernelscope/runs/*/graphs/**/*.cpp' },
      ],
      outputChannel: this.output,
      traceOutputChannel: this.output,
      initializationOptions: (this.sentOptions = serverOptionsPayload(readSettings(trusted), interpreter.python, trusted)),
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
      if (!trusted) {
        void this.showRestrictedNotice(interpreter);
      }
    } catch (error) {
      this.output.error(`The language server failed to start: ${String(error)}`);
      this.setState('stopped');
      void vscode.window
        .showErrorMessage(`kernelscope: the language server failed to start with ${interpreter.python}.`, 'Show log')
        .then((choice) => choice && this.output.show());
    }
  }

  /** The output channel: Restricted Mode, and a user setting it could not use. (VS Code does not
   * even show the extension a workspace's value of a restricted setting while untrusted.) */
  private logRestrictedMode(interpreter: ResolvedInterpreter): void {
    this.output.warn(
      "Restricted Mode: the workspace is not trusted; the server compiles nothing and runs with your user-level interpreter, not the workspace's kernelscope.python or .venv",
    );
    if (interpreter.ignored) {
      this.output.warn(`Restricted Mode: ${interpreter.ignored}; using ${interpreter.python}`);
    }
  }

  /** Once per window: why nothing compiles here, with the way to trust the workspace. */
  private async showRestrictedNotice(interpreter: ResolvedInterpreter): Promise<void> {
    if (this.restrictedNoticeShown) {
      return;
    }
    this.restrictedNoticeShown = true;
    const choice = await vscode.window.showWarningMessage(
      'kernelscope: this workspace is not trusted (Restricted Mode), so kernelscope compiles nothing in it: a compile runs its code. ' +
        `Its language server runs with your user-level Python (${interpreter.python}), not the interpreter the workspace's settings name. ` +
        'Recorded runs can still be browsed. Trust the workspace to compile.',
      'Manage Workspace Trust',
    );
    if (choice) {
      await vscode.commands.executeCommand('workbench.trust.manage');
    }
  }

  private async offerFix(message: string, installCommand: string | undefined, restricted: boolean): Promise<void> {
    // In Restricted Mode the Python extension's interpreter is not used: no "Select interpreter".
    const actions = [
      installCommand ? 'Copy install command' : undefined,
      'Open settings',
      restricted ? 'Manage Workspace Trust' : 'Select interpreter',
    ].filter((a): a is string => a !== undefined);
    const choice = await vscode.window.showErrorMessage(message, ...actions);
    if (choice === 'Copy install command' && installCommand) {
      await vscode.env.clipboard.writeText(installCommand);
    } else if (choice === 'Open settings') {
      await vscode.commands.executeCommand('workbench.action.openSettings', 'kernelscope.python');
    } else if (choice === 'Select interpreter') {
      await vscode.commands.executeCommand('python.setInterpreter');
    } else if (choice === 'Manage Workspace Trust') {
      await vscode.commands.executeCommand('workbench.trust.manage');
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

  /**
   * Restart only if the interpreter resolves to another executable now (or the workspace's
   * trust changed). One check at a time: granting trust fires both onDidGrantWorkspaceTrust
   * and a configuration change (the workspace's restricted settings now apply), and the
   * second must see the first's restart, not restart again.
   */
  restartIfInterpreterChanged(): Promise<void> {
    this.checking = this.checking
      .then(() => this.restartIfChanged())
      .catch((error) => this.output.error(`Restarting the server: ${String(error)}`));
    return this.checking;
  }

  private async restartIfChanged(): Promise<void> {
    const trusted = vscode.workspace.isTrusted;
    if (trusted !== this.trusted) {
      this.output.info(trusted ? 'The workspace is trusted now: restarting with its settings' : 'The workspace is not trusted: restarting');
      await this.restart();
      return;
    }
    const next = await this.resolve(trusted);
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
    const options = serverOptionsPayload(readSettings(this.trusted), this.interpreter?.python, this.trusted);
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
