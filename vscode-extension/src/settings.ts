/** The extension's settings as the server's initialization options (and didChangeConfiguration payload). */

export interface KernelscopeSettings {
  python: string;
  target: string;
  deviceTarget: string;
  train: boolean;
  inlayHints: boolean;
  asmAfterCompile: boolean;
  decisions: string;
}

/**
 * Settings that name something to run or compile: the interpreter, the code to compile,
 * the decisions file a compile reads. The manifest lists them as the workspace-trust
 * capability's `restrictedConfigurations`, so VS Code ignores a workspace's values of them
 * in Restricted Mode; the extension reads only their user values there too.
 */
export const RESTRICTED_SETTINGS = ['python', 'target', 'decisions'] as const;

/** The levels of a setting, as `WorkspaceConfiguration.inspect` gives them. */
export interface SettingLevels<T> {
  globalValue?: T;
  workspaceValue?: T;
  workspaceFolderValue?: T;
}

/**
 * The value the user set (undefined: set nowhere): the workspace folder's, else the
 * workspace's, else the user's. In an untrusted workspace a restricted setting takes only
 * the user's own value.
 */
export function settingValue<T>(key: string, levels: SettingLevels<T> | undefined, trusted: boolean): T | undefined {
  if (!trusted && (RESTRICTED_SETTINGS as readonly string[]).includes(key)) {
    return levels?.globalValue;
  }
  return levels?.workspaceFolderValue ?? levels?.workspaceValue ?? levels?.globalValue;
}

export interface ServerOptionsPayload {
  target?: string;
  deviceTarget?: string;
  train?: boolean;
  inlayHints?: boolean;
  asmAfterCompile?: boolean;
  decisions?: string;
  python: string | null;
  /** Only when false: an untrusted workspace, where the server compiles nothing. */
  trusted?: false;
}

const DEVICE_TARGETS = ['auto', 'cuda', 'virtual-cuda', 'cpu-triton', 'cpu'];

/**
 * Map the settings the user actually set (undefined = not set anywhere) to the
 * contract's option keys. Unset keys are left out, so that `[tool.kernelscope]`
 * in the workspace's pyproject.toml decides them (options the client gives win
 * over it); an empty target counts as unset. `python` is the interpreter the
 * server runs with, so its engine worker uses the same one. `trusted` false (an
 * untrusted workspace) sends `trusted: false`: the server then compiles nothing.
 */
export function serverOptionsPayload(settings: Partial<KernelscopeSettings>, python: string | undefined, trusted = true): ServerOptionsPayload {
  const payload: ServerOptionsPayload = { python: python ?? null };
  if (!trusted) {
    payload.trusted = false;
  }
  const target = settings.target?.trim();
  if (target) {
    payload.target = target;
  }
  const device = settings.deviceTarget?.trim();
  if (device && DEVICE_TARGETS.includes(device)) {
    payload.deviceTarget = device;
  }
  const decisions = settings.decisions?.trim();
  if (decisions) {
    payload.decisions = decisions;
  }
  if (settings.train !== undefined) {
    payload.train = Boolean(settings.train);
  }
  // No pyproject.toml equivalent: always the effective value (default on).
  payload.inlayHints = settings.inlayHints ?? true;
  // Below the kernel after each compile: the effective value too (default off).
  payload.asmAfterCompile = settings.asmAfterCompile ?? false;
  return payload;
}

/**
 * Whether a settings change can go to the running server as didChangeConfiguration:
 * the server keeps options it was once given, so a setting the user removed
 * (falling back to pyproject.toml or the default) needs a fresh server.
 */
export function needsRestart(previous: ServerOptionsPayload | undefined, next: ServerOptionsPayload): boolean {
  if (previous === undefined) {
    return false;
  }
  return (Object.keys(previous) as (keyof ServerOptionsPayload)[]).some((key) => !(key in next));
}
