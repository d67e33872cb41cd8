/**
 * Which Python runs `kernelscope lsp`: the `kernelscope.python` setting, else the
 * Python extension's active interpreter, else `python3` on PATH (the order of
 * microsoft/vscode-python-tools-extension-template).
 *
 * In an untrusted workspace (Restricted Mode) nothing the workspace controls is run:
 * only the user's own `kernelscope.python` (user settings, not the workspace's), else
 * `python3` from an absolute PATH directory outside the workspace; and the server
 * starts outside the workspace, so `python -m kernelscope` cannot import a
 * `kernelscope/` package planted in it (see `serverLaunch`).
 */
import { accessSync, constants, statSync } from 'node:fs';
import * as path from 'node:path';

export type InterpreterSource = 'setting' | 'python-extension' | 'default' | 'user-setting' | 'path';

export interface ResolvedInterpreter {
  /** The executable to run. */
  python: string;
  source: InterpreterSource;
  /** Restricted Mode: why the user's setting was not used (it pointed into the workspace). */
  ignored?: string;
}

export const DEFAULT_PYTHON = 'python3';

/**
 * Resolve the interpreter. `setting` may use `${workspaceFolder}` and `~`, and may
 * be relative to the workspace folder; `activeEnvironment` is the executable the
 * Python extension reports (undefined when that extension is absent).
 */
export function resolveInterpreter(
  setting: string | undefined,
  activeEnvironment: string | undefined,
  workspaceFolder: string | undefined,
  home: string | undefined = process.env.HOME,
): ResolvedInterpreter {
  const configured = (setting ?? '').trim();
  if (configured) {
    return { python: expandPath(configured, workspaceFolder, home), source: 'setting' };
  }
  if (activeEnvironment && activeEnvironment.trim()) {
    return { python: activeEnvironment.trim(), source: 'python-extension' };
  }
  return { python: DEFAULT_PYTHON, source: 'default' };
}

function expandPath(value: string, workspaceFolder: string | undefined, home: string | undefined): string {
  let expanded = value;
  if (workspaceFolder) {
    expanded = expanded.split('${workspaceFolder}').join(workspaceFolder);
  }
  if (home && (expanded === '~' || expanded.startsWith('~/'))) {
    expanded = path.join(home, expanded.slice(1));
  }
  const looksLikePath = expanded.includes('/') || expanded.includes('\\');
  if (looksLikePath && !path.isAbsolute(expanded) && workspaceFolder) {
    expanded = path.join(workspaceFolder, expanded);
  }
  return expanded;
}

/**
 * Restricted Mode: the interpreter of the user's own settings (`userSetting`: the
 * *user* value of `kernelscope.python`, `inspect().globalValue`), unless it points into
 * the workspace (`${workspaceFolder}`, a relative path, a path inside the folder), else
 * `python3` found on PATH. The workspace's settings and the Python extension's choice
 * (which may be the workspace's own `.venv`) are never asked.
 */
export function resolveUntrustedInterpreter(
  userSetting: string | undefined,
  workspaceFolder: string | undefined,
  home: string | undefined = process.env.HOME,
  pathVariable: string | undefined = process.env.PATH,
  isExecutable: (file: string) => boolean = isExecutableFile,
): ResolvedInterpreter {
  const fallback = (ignored?: string): ResolvedInterpreter => ({
    python: findOnPath(DEFAULT_PYTHON, pathVariable, workspaceFolder, isExecutable) ?? DEFAULT_PYTHON,
    source: 'path',
    ...(ignored ? { ignored } : {}),
  });
  let configured = (userSetting ?? '').trim();
  if (!configured) {
    return fallback();
  }
  if (configured.includes('${workspaceFolder}')) {
    return fallback(`your kernelscope.python "${configured}" names the workspace folder`);
  }
  if (home && (configured === '~' || configured.startsWith('~/'))) {
    configured = path.join(home, configured.slice(1));
  }
  if (!configured.includes('/') && !configured.includes('\\')) {
    // A command name: looked up on PATH, outside the workspace.
    const found = findOnPath(configured, pathVariable, workspaceFolder, isExecutable);
    return found ? { python: found, source: 'user-setting' } : fallback(`"${configured}" was not found on PATH`);
  }
  if (!path.isAbsolute(configured)) {
    return fallback(`your kernelscope.python "${configured}" is relative to the workspace`);
  }
  if (workspaceFolder && isInside(configured, workspaceFolder)) {
    return fallback(`your kernelscope.python "${configured}" lies inside the workspace`);
  }
  return { python: configured, source: 'user-setting' };
}

/** `name` in the first absolute PATH directory outside `workspaceFolder` that has it as an executable file. */
export function findOnPath(
  name: string,
  pathVariable: string | undefined,
  workspaceFolder: string | undefined,
  isExecutable: (file: string) => boolean = isExecutableFile,
): string | undefined {
  for (const directory of (pathVariable ?? '').split(path.delimiter)) {
    // Relative entries ("", ".", "bin") would be looked up from the current directory.
    if (!directory || !path.isAbsolute(directory) || (workspaceFolder && isInside(directory, workspaceFolder))) {
      continue;
    }
    const candidate = path.join(directory, name);
    if (isExecutable(candidate)) {
      return candidate;
    }
  }
  return undefined;
}

/** Whether `file` is `folder` or below it (by path, as written). */
export function isInside(file: string, folder: string): boolean {
  const relative = path.relative(path.resolve(folder), path.resolve(file));
  return relative === '' || (!relative.startsWith('..') && !path.isAbsolute(relative));
}

function isExecutableFile(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return statSync(file).isFile();
  } catch {
    return false;
  }
}

/** The command line that starts the server with that interpreter. */
export function serverCommand(python: string): { command: string; args: string[] } {
  return { command: python, args: ['-m', 'kernelscope', 'lsp'] };
}

export interface ServerLaunch {
  command: string;
  args: string[];
  /** The server's current directory. */
  cwd: string | undefined;
  /** Variables added to the extension host's environment. */
  env: Record<string, string>;
}

/**
 * How the server process starts. Trusted: in the workspace folder. Untrusted: in
 * `outsideDirectory` (an empty folder of the extension's own), because `python -m`
 * puts the current directory first on sys.path, where a `kernelscope/` package of the
 * workspace would shadow the installed one; PYTHONSAFEPATH=1 (Python >= 3.11) leaves it
 * off sys.path too. (`-P` does the same but stops Python 3.10 from starting; `-I` would
 * also drop the user site-packages and PYTHONPATH kernelscope may be installed through.)
 * The workspace root still reaches the server through LSP `initialize`.
 */
export function serverLaunch(python: string, trusted: boolean, workspaceFolder: string | undefined, outsideDirectory: string): ServerLaunch {
  const { command, args } = serverCommand(python);
  if (trusted) {
    return { command, args, cwd: workspaceFolder, env: { PYTHONUNBUFFERED: '1' } };
  }
  return { command, args, cwd: outsideDirectory, env: { PYTHONUNBUFFERED: '1', PYTHONSAFEPATH: '1' } };
}

/** Whether the interpreter changed in a way that needs a server restart. */
export function interpreterChanged(previous: ResolvedInterpreter | undefined, next: ResolvedInterpreter): boolean {
  return previous === undefined || previous.python !== next.python;
}
