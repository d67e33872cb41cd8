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

export interface ServerOptionsPayload {
  target?: string;
  deviceTarget?: string;
  train?: boolean;
  inlayHints?: boolean;
  asmAfterCompile?: boolean;
  decisions?: string;
  python: string | null;
}

const DEVICE_TARGETS = ['auto', 'cuda', 'virtual-cuda', 'cpu-triton'];

/**
 * Map the settings the user actually set (undefined = not set anywhere) to the
 * contract's option keys. Unset keys are left out, so that `[tool.kernelscope]`
 * in the workspace's pyproject.toml decides them (options the client gives win
 * over it); an empty target counts as unset. `python` is the interpreter the
 * server runs with, so its engine worker uses the same one.
 */
export function serverOptionsPayload(settings: Partial<KernelscopeSettings>, python: string | undefined): ServerOptionsPayload {
  const payload: ServerOptionsPayload = { python: python ?? null };
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
