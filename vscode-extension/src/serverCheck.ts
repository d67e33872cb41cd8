/**
 * Before starting the server: does the interpreter exist and can it import
 * kernelscope? A missing package otherwise shows up only as a crashed server
 * and a stack trace in the log; here it becomes one clear message with the
 * command that installs it.
 */
import { execFile } from 'node:child_process';

export type InterpreterCheck =
  | { ok: true; version: string; location: string }
  | { ok: false; reason: 'no-interpreter' | 'no-kernelscope' | 'error'; detail: string };

const PROBE = [
  'import importlib.util, sys',
  "spec = importlib.util.find_spec('kernelscope')",
  "print(sys.version.split()[0]); print(spec.origin if spec else '')",
  'sys.exit(0 if spec else 3)',
].join('\n');

/**
 * Run the probe with `python` (a few tens of milliseconds), in `cwd` with `env` added to
 * the environment: where and how the server will start (see `serverLaunch`).
 */
export function checkInterpreter(python: string, cwd?: string, timeoutMs = 20000, env: Record<string, string> = {}): Promise<InterpreterCheck> {
  return new Promise((resolve) => {
    execFile(python, ['-c', PROBE], { cwd, timeout: timeoutMs, env: { ...process.env, ...env } }, (error, stdout, stderr) => {
      const code = error ? ((error as NodeJS.ErrnoException).code ?? (error as { code?: number }).code) : 0;
      resolve(interpretProbe(code, String(stdout), String(stderr)));
    });
  });
}

/** Turn the probe's exit status and output into a check result (pure, tested). */
export function interpretProbe(code: number | string | null | undefined, stdout: string, stderr: string): InterpreterCheck {
  if (code === 'ENOENT' || code === 'EACCES') {
    return { ok: false, reason: 'no-interpreter', detail: String(code) };
  }
  const [version = '', location = ''] = stdout.trim().split('\n');
  if (code === 0 || code === null || code === undefined) {
    return { ok: true, version: version.trim(), location: location.trim() };
  }
  if (code === 3) {
    return { ok: false, reason: 'no-kernelscope', detail: version.trim() };
  }
  return { ok: false, reason: 'error', detail: (stderr || stdout || `exit status ${code}`).trim() };
}

/**
 * The notification text for a failed check, with the command that fixes it. In
 * Restricted Mode (`restricted`) it adds where the interpreter came from: only the user's
 * settings or PATH count there.
 */
export function checkFailureMessage(python: string, check: InterpreterCheck, restricted = false): { message: string; installCommand?: string } {
  const failure = checkFailureText(python, check);
  if (restricted && !check.ok) {
    failure.message +=
      ' This workspace is not trusted (Restricted Mode): kernelscope uses only the "kernelscope.python" of your user settings' +
      ' (not the workspace\'s) or python3 on PATH.';
  }
  return failure;
}

function checkFailureText(python: string, check: InterpreterCheck): { message: string; installCommand?: string } {
  if (check.ok) {
    return { message: '' };
  }
  const quoted = /\s/.test(python) ? `"${python}"` : python;
  switch (check.reason) {
    case 'no-interpreter':
      return {
        message:
          `kernelscope: the Python interpreter "${python}" was not found. ` +
          'Set "kernelscope.python" to an interpreter that has kernelscope installed, or select one with "Python: Select Interpreter".',
      };
    case 'no-kernelscope': {
      // kernelscope is installed from its checkout (see the README's Quick start).
      const installCommand = `${quoted} -m pip install -e <path to your kernelscope checkout>`;
      return {
        message:
          `kernelscope is not installed in ${python}` + (check.detail ? ` (Python ${check.detail})` : '') +
          `. Install it into that interpreter: ${installCommand} — or set "kernelscope.python" to an interpreter that has it.`,
        installCommand,
      };
    }
    default:
      return { message: `kernelscope: could not run ${python}: ${check.detail}` };
  }
}
