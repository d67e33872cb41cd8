/**
 * Which Python runs `kernelscope lsp`: the `kernelscope.python` setting, else the
 * Python extension's active interpreter, else `python3` on PATH (the order of
 * microsoft/vscode-python-tools-extension-template).
 */
import * as path from 'node:path';

export type InterpreterSource = 'setting' | 'python-extension' | 'default';

export interface ResolvedInterpreter {
  /** The executable to run. */
  python: string;
  source: InterpreterSource;
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

/** The command line that starts the server with that interpreter. */
export function serverCommand(python: string): { command: string; args: string[] } {
  return { command: python, args: ['-m', 'kernelscope', 'lsp'] };
}

/** Whether the interpreter changed in a way that needs a server restart. */
export function interpreterChanged(previous: ResolvedInterpreter | undefined, next: ResolvedInterpreter): boolean {
  return previous === undefined || previous.python !== next.python;
}
