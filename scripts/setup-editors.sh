#!/usr/bin/env bash
# Set up what the VS Code extension's tests need, on a Debian machine; idempotent
# and fast (a few seconds) when already done.
#   1. Debian packages: chromium (the browser Playwright drives), libkrb5-dev
#      (code-server's kerberos module compiles against it), ripgrep (see 3.)
#   2. npm install at the repo root (the extension and playwright-core)
#   3. code-server 4.100.3 (the last release that runs on Node 20) into
#      vscode-extension/e2e/node_modules; its @vscode/ripgrep would download rg
#      from GitHub, so its download cache is seeded with Debian's rg first
#   4. npm run package: builds vscode-extension/kernelscope-<version>.vsix
# Called by scripts/setup.sh; run it alone after changing the extension.
# KERNELSCOPE_SKIP_EDITORS=1 skips it (no browser, no code-server: the VS Code tests then fail).
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
start=$SECONDS

if [ "${KERNELSCOPE_SKIP_EDITORS:-}" = 1 ]; then
  echo "setup-editors: skipped (KERNELSCOPE_SKIP_EDITORS=1); the tests of tests/vscode/ will fail until it runs"
  exit 0
fi
if ! command -v node >/dev/null || [ "$(node -p 'process.versions.node.split(".")[0]')" != 20 ]; then
  echo "setup-editors: needs Node.js 20 (code-server 4.100.3 runs only on Node 20); found: $(node --version 2>/dev/null || echo none)" >&2
  exit 1
fi

need_apt=()
command -v chromium >/dev/null || need_apt+=(chromium fonts-liberation)
dpkg -s libkrb5-dev >/dev/null 2>&1 || need_apt+=(libkrb5-dev)
command -v rg >/dev/null || need_apt+=(ripgrep)
if [ ${#need_apt[@]} -gt 0 ]; then
  if ! command -v apt-get >/dev/null; then
    echo "setup-editors: please install ${need_apt[*]} (no apt-get here)" >&2
    exit 1
  fi
  echo "setup-editors: apt-get install ${need_apt[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
fi

# npm's lifecycle scripts run as root only with --unsafe-perm; node-pty's build
# calls `npx node-gyp`, which must not stop to ask.
export npm_config_yes=true npm_config_fund=false npm_config_audit=false npm_config_update_notifier=false

stamp_ok() { [ -f "$1" ] && [ "$1" -nt "$2" ]; }

if ! stamp_ok node_modules/.package-lock.json package.json || ! stamp_ok node_modules/.package-lock.json vscode-extension/package.json; then
  echo "setup-editors: npm install (repo root)"
  t=$SECONDS
  npm install --no-audit --no-fund --unsafe-perm --loglevel=error
  echo "setup-editors: npm install took $((SECONDS - t)) s"
fi

E2E=vscode-extension/e2e
if [ ! -x "$E2E/node_modules/.bin/code-server" ] || ! stamp_ok "$E2E/node_modules/.package-lock.json" "$E2E/package.json"; then
  echo "setup-editors: npm install code-server (compiles native modules, 1-6 minutes)"
  t=$SECONDS
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  rg_cache="$tmp/vscode-ripgrep-cache-1.15.11"
  mkdir -p "$rg_cache"
  cp "$(command -v rg)" "$tmp/rg"
  tar -czf "$rg_cache/ripgrep-v13.0.0-10-x86_64-unknown-linux-musl.tar.gz" -C "$tmp" rg
  (cd "$E2E" && TMPDIR="$tmp" npm install --no-audit --no-fund --unsafe-perm --foreground-scripts --loglevel=error >"$tmp/npm.log" 2>&1) \
    || { tail -40 "$tmp/npm.log"; echo "setup-editors: code-server install failed (log above)"; exit 1; }
  echo "setup-editors: code-server install took $((SECONDS - t)) s"
fi

version=$(node -p "require('./vscode-extension/package.json').version")
vsix="vscode-extension/kernelscope-$version.vsix"
if [ ! -f "$vsix" ] || [ -n "$(find vscode-extension/src vscode-extension/media vscode-extension/package.json vscode-extension/esbuild.mjs -newer "$vsix" -print -quit)" ]; then
  echo "setup-editors: npm run package"
  log=$(mktemp)
  npm run package --silent >"$log" 2>&1 || { cat "$log"; rm -f "$log"; echo "setup-editors: packaging failed" >&2; exit 1; }
  rm -f "$log"
fi
echo "setup-editors: ready in $((SECONDS - start)) s ($REPO/$vsix)"
