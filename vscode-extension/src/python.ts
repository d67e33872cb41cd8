/** The Python extension's active interpreter, when ms-python.python is installed. */
import { PythonExtension } from '@vscode/python-extension';
import * as vscode from 'vscode';

const PYTHON_EXTENSION_ID = 'ms-python.python';

async function pythonApi(): Promise<PythonExtension | undefined> {
  if (!vscode.extensions.getExtension(PYTHON_EXTENSION_ID)) {
    return undefined;
  }
  try {
    return await PythonExtension.api();
  } catch {
    return undefined;
  }
}

/** The executable of the active environment for `resource`, or undefined. */
export async function activePythonExecutable(resource?: vscode.Uri): Promise<string | undefined> {
  const api = await pythonApi();
  if (!api) {
    return undefined;
  }
  try {
    const environmentPath = api.environments.getActiveEnvironmentPath(resource);
    const environment = await api.environments.resolveEnvironment(environmentPath);
    return environment?.executable.uri?.fsPath ?? environmentPath.path;
  } catch {
    return undefined;
  }
}

/** Call `listener` when the user selects another interpreter in the Python extension. */
export async function onActivePythonChanged(listener: () => void): Promise<vscode.Disposable | undefined> {
  const api = await pythonApi();
  return api?.environments.onDidChangeActiveEnvironmentPath(() => listener());
}
