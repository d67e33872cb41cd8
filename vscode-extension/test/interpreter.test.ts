import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { test } from 'node:test';
import {
  findOnPath,
  interpreterChanged,
  isInside,
  resolveInterpreter,
  resolveUntrustedInterpreter,
  serverCommand,
  serverLaunch,
  type ServerLaunch,
} from '../src/interpreter';
import { checkInterpreter } from '../src/serverCheck';

test('the setting wins over the Python extension and the default', () => {
  assert.deepEqual(resolveInterpreter('/opt/py/bin/python', '/env/bin/python', '/ws'), { python: '/opt/py/bin/python', source: 'setting' });
});

test("the Python extension's interpreter is used when the setting is empty", () => {
  assert.deepEqual(resolveInterpreter('  ', '/env/bin/python', '/ws'), { python: '/env/bin/python', source: 'python-extension' });
});

test('python3 when neither is there', () => {
  assert.deepEqual(resolveInterpreter(undefined, undefined, undefined), { python: 'python3', source: 'default' });
  assert.deepEqual(resolveInterpreter('', '', '/ws'), { python: 'python3', source: 'default' });
});

test('the setting expands ${workspaceFolder}, ~ and relative paths', () => {
  assert.equal(resolveInterpreter('${workspaceFolder}/.venv/bin/python', undefined, '/ws').python, '/ws/.venv/bin/python');
  assert.equal(resolveInterpreter('.venv/bin/python', undefined, '/ws').python, '/ws/.venv/bin/python');
  assert.equal(resolveInterpreter('~/py/bin/python', undefined, '/ws', '/home/me').python, '/home/me/py/bin/python');
  // A bare command name stays a command looked up on PATH.
  assert.equal(resolveInterpreter('python3.11', undefined, '/ws').python, 'python3.11');
});

test('the server runs as `python -m kernelscope lsp`', () => {
  assert.deepEqual(serverCommand('/x/python'), { command: '/x/python', args: ['-m', 'kernelscope', 'lsp'] });
});

test('a restart is needed only when the executable changes', () => {
  const a = { python: '/a', source: 'setting' as const };
  assert.equal(interpreterChanged(undefined, a), true);
  assert.equal(interpreterChanged(a, { python: '/a', source: 'python-extension' }), false);
  assert.equal(interpreterChanged(a, { python: '/b', source: 'setting' }), true);
});

// ---- an untrusted workspace (Restricted Mode) ---------------------------------------

/** A PATH of real directories: `outside` and `inside` (the workspace's .venv/bin) each hold an executable python3. */
function pathDirectories() {
  const root = mkdtempSync(path.join(tmpdir(), 'ks-path-'));
  const workspace = path.join(root, 'ws');
  const inside = path.join(workspace, '.venv', 'bin');
  const outside = path.join(root, 'usr', 'bin');
  for (const dir of [inside, outside]) {
    mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(dir, 'python3'), '#!/bin/sh\n');
    chmodSync(path.join(dir, 'python3'), 0o755);
  }
  writeFileSync(path.join(outside, 'not-executable'), '');
  return { workspace, inside, outside };
}

test("untrusted: the user's own setting is used, never the workspace's or the Python extension's", () => {
  // resolveUntrustedInterpreter is given only the user value: the workspace's cannot reach it.
  assert.deepEqual(resolveUntrustedInterpreter('/opt/py/bin/python', '/ws', '/home/me', ''), { python: '/opt/py/bin/python', source: 'user-setting' });
  assert.equal(resolveUntrustedInterpreter('~/py/bin/python', '/ws', '/home/me', '').python, '/home/me/py/bin/python');
});

test('untrusted: a user setting that points into the workspace falls back to python3 on PATH, saying why', () => {
  const { workspace, outside } = pathDirectories();
  const PATH = outside;
  for (const [setting, why] of [
    ['${workspaceFolder}/.venv/bin/python', /names the workspace folder/],
    ['.venv/bin/python', /relative to the workspace/],
    [path.join(workspace, '.venv', 'bin', 'python3'), /inside the workspace/],
  ] as const) {
    const resolved = resolveUntrustedInterpreter(setting, workspace, '/home/me', PATH);
    assert.equal(resolved.python, path.join(outside, 'python3'), setting);
    assert.equal(resolved.source, 'path');
    assert.match(resolved.ignored ?? '', why);
  }
  // Nothing set: python3 from PATH, nothing to explain.
  assert.deepEqual(resolveUntrustedInterpreter(undefined, workspace, '/home/me', PATH), { python: path.join(outside, 'python3'), source: 'path' });
  // A bare command name is looked up on PATH the same careful way.
  assert.deepEqual(resolveUntrustedInterpreter('python3', workspace, '/home/me', PATH), { python: path.join(outside, 'python3'), source: 'user-setting' });
});

test('PATH lookup skips relative entries and directories inside the workspace', () => {
  const { workspace, inside, outside } = pathDirectories();
  const PATH = ['', '.', 'bin', inside, outside].join(path.delimiter);
  assert.equal(findOnPath('python3', PATH, workspace), path.join(outside, 'python3'));
  assert.equal(findOnPath('python3', [inside, outside].join(path.delimiter), undefined), path.join(inside, 'python3'));
  assert.equal(findOnPath('not-executable', outside, workspace), undefined);
  assert.equal(findOnPath('python3', inside, workspace), undefined);
  assert.equal(resolveUntrustedInterpreter(undefined, workspace, '/home/me', inside).python, 'python3');
  assert.equal(isInside('/ws/a/b', '/ws'), true);
  assert.equal(isInside('/ws', '/ws'), true);
  assert.equal(isInside('/wsx/a', '/ws'), false);
  assert.equal(isInside('/ws/../etc/python', '/ws'), false);
});

test('the server starts in the workspace when trusted, outside it (and with PYTHONSAFEPATH) when not', () => {
  assert.deepEqual(serverLaunch('/p/python', true, '/ws', '/ext/server-cwd'), {
    command: '/p/python', args: ['-m', 'kernelscope', 'lsp'], cwd: '/ws', env: { PYTHONUNBUFFERED: '1' },
  });
  assert.deepEqual(serverLaunch('/p/python', false, '/ws', '/ext/server-cwd'), {
    command: '/p/python', args: ['-m', 'kernelscope', 'lsp'], cwd: '/ext/server-cwd', env: { PYTHONUNBUFFERED: '1', PYTHONSAFEPATH: '1' },
  });
});

// A real interpreter (the repo's venv, kernelscope installed in editable mode) and a workspace
// with a `kernelscope/` package of its own that writes a marker when it is imported.
const repoPython = path.resolve(__dirname, '..', '..', '..', '.venv', 'bin', 'python');

function plantedWorkspace() {
  const root = mkdtempSync(path.join(tmpdir(), 'ks-planted-'));
  const workspace = path.join(root, 'ws');
  const outside = path.join(root, 'server-cwd');
  const marker = path.join(root, 'MARKER');
  mkdirSync(path.join(workspace, 'kernelscope'), { recursive: true });
  mkdirSync(outside);
  const plant = `open(${JSON.stringify(marker)}, "w").write("planted")\n`;
  writeFileSync(path.join(workspace, 'kernelscope', '__init__.py'), plant);
  writeFileSync(path.join(workspace, 'kernelscope', '__main__.py'), plant);
  return { workspace, outside, marker };
}

function runModule(launch: ServerLaunch) {
  // `python -m kernelscope --version`: the server's own command line, asking for less.
  const args = [...launch.args.slice(0, -1), '--version'];
  return spawnSync(launch.command, args, { cwd: launch.cwd, env: { ...process.env, ...launch.env }, encoding: 'utf8', timeout: 60000 });
}

test('untrusted: `python -m kernelscope` runs the installed kernelscope, not a package planted in the workspace', async () => {
  const { workspace, outside, marker } = plantedWorkspace();
  const untrusted = serverLaunch(repoPython, false, workspace, outside);
  const ran = runModule(untrusted);
  assert.equal(ran.status, 0, ran.stderr);
  assert.match(ran.stdout, /^kernelscope \d/);
  const check = await checkInterpreter(repoPython, untrusted.cwd, undefined, untrusted.env);
  assert.ok(check.ok && !check.location.startsWith(workspace), JSON.stringify(check));
  assert.equal(existsSync(marker), false, 'the planted package ran');

  // Why: started in the workspace, as a trusted workspace is, the planted package runs.
  runModule(serverLaunch(repoPython, true, workspace, outside));
  assert.equal(existsSync(marker), true);
});
