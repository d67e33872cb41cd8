/** Comparing file URIs from the server with VS Code's (which percent-encodes differently). */

/** A key equal for two spellings of the same file URI. */
export function uriKey(uri: string): string {
  let decoded = uri;
  try {
    decoded = decodeURIComponent(uri);
  } catch {
    // leave undecodable URIs as they are
  }
  decoded = decoded.replace(/^file:\/\/\/([A-Za-z]):/, (_m, drive: string) => `file:///${drive.toLowerCase()}:`);
  return decoded.replace(/\/+$/, '');
}

/** The file system path of a file URI (POSIX or Windows), for labels and tooltips. */
export function uriPath(uri: string): string {
  const key = uriKey(uri);
  const withoutScheme = key.replace(/^file:\/\//, '');
  return /^\/[a-z]:/.test(withoutScheme) ? withoutScheme.slice(1) : withoutScheme;
}

/** The last path component, e.g. "mlp.py". */
export function baseName(uri: string): string {
  const p = uriPath(uri);
  return p.slice(p.lastIndexOf('/') + 1);
}

/** Whether a path is a generated file of a kernelscope store (`.../.kernelscope/runs/<id>/...`). */
export function isGeneratedPath(fsPath: string): boolean {
  return /[\\/]\.kernelscope[\\/]runs[\\/]\d+[\\/]/.test(fsPath);
}

/** Whether a path is a C++ kernel of Inductor's CPU backend kept in a store (`.kernelscope/runs/<id>/graphs/.../kernels/cpp_fused_x_0.cpp`). */
export function isCppKernelPath(fsPath: string): boolean {
  return isGeneratedPath(fsPath) && /[\\/]kernels[\\/][^\\/]+\.cpp$/.test(fsPath);
}

/** Whether a path is a C++ file of a kernelscope store (a C++ wrapper `wrapper.cpp`, a C++ kernel). */
export function isStoredCppPath(fsPath: string): boolean {
  return isGeneratedPath(fsPath) && /[\\/]graphs[\\/].*\.cpp$/.test(fsPath);
}

/** Whether a path is a kernel's stage file below the kernel (`.kernelscope/runs/<id>/asm/.../k.sass`, `k.x86`). */
export function isAsmPath(fsPath: string): boolean {
  return isGeneratedPath(fsPath) && /[\\/]asm[\\/].*\.(sass|ptx|ttgir|ttir|x86)$/.test(fsPath);
}
