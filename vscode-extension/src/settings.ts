/** The extension's settings as the server's initialization options (and didChangeConfiguration payload). */

export interface KernelscopeSettings {
  python: string;
  target: string;
  deviceTarget: string;
  train: boolean;
  inlayHints: boolean;
}

export interface ServerOptionsPayload {
  target: string | null;
  deviceTarget: string;
  train: boolean;
  inlayHints: boolean;
  python: string | null;
}

const DEVICE_TARGETS = ['auto', 'cuda', 'virtual-cuda', 'cpu-triton'];

/**
 * Map settings to the contract's option keys: an empty target means "let the
 * server decide" (pyproject.toml, else a make() in the current file); `python`
 * is the interpreter the server itself runs with, so its engine worker uses the
 * same one.
 */
export function serverOptionsPayload(settings: Partial<KernelscopeSettings>, python: string | undefined): ServerOptionsPayload {
  const target = (settings.target ?? '').trim();
  const device = (settings.deviceTarget ?? 'auto').trim();
  return {
    target: target === '' ? null : target,
    deviceTarget: DEVICE_TARGETS.includes(device) ? device : 'auto',
    train: Boolean(settings.train),
    inlayHints: settings.inlayHints ?? true,
    python: python ?? null,
  };
}
