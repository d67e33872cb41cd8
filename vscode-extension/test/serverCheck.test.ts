import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync, chmodSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { test } from 'node:test';
import { checkFailureMessage, checkInterpreter, interpretProbe } from '../src/serverCheck';

test('probe results: found, missing package, missing interpreter, crash', () => {
  assert.deepEqual(interpretProbe(0, '3.11.2\n/x/kernelscope/__init__.py\n', ''), { ok: true, version: '3.11.2', location: '/x/kernelscope/__init__.py' });
  assert.deepEqual(interpretProbe(3, '3.11.2\n\n', ''), { ok: false, reason: 'no-kernelscope', detail: '3.11.2' });
  assert.deepEqual(interpretProbe('ENOENT', '', ''), { ok: false, reason: 'no-interpreter', detail: 'ENOENT' });
  assert.deepEqual(interpretProbe(1, '', 'SyntaxError: bad'), { ok: false, reason: 'error', detail: 'SyntaxError: bad' });
});

test('the missing-package message names the interpreter and the install command', () => {
  const { message, installCommand } = checkFailureMessage('/usr/bin/python3', { ok: false, reason: 'no-kernelscope', detail: '3.11.2' });
  assert.match(message, /kernelscope is not installed in \/usr\/bin\/python3 \(Python 3\.11\.2\)/);
  assert.equal(installCommand, '/usr/bin/python3 -m pip install -e <path to your kernelscope checkout>');
  assert.ok(message.includes(installCommand as string));
  assert.match(message, /kernelscope\.python/);
});

test('a missing interpreter points at the setting', () => {
  const { message, installCommand } = checkFailureMessage('/nope/python', { ok: false, reason: 'no-interpreter', detail: 'ENOENT' });
  assert.match(message, /"\/nope\/python" was not found/);
  assert.equal(installCommand, undefined);
});

// Real interpreters: the repo's venv has kernelscope; a fresh empty directory on
// PYTHONPATH does not change that, and a non-existent path is reported as such.
const repoPython = path.resolve(__dirname, '..', '..', '..', '.venv', 'bin', 'python');

test('checkInterpreter finds kernelscope in the repo venv', async () => {
  const result = await checkInterpreter(repoPython);
  assert.equal(result.ok, true, JSON.stringify(result));
  if (result.ok) assert.match(result.location, /kernelscope[\\/]__init__\.py$/);
});

test('checkInterpreter reports an interpreter without kernelscope', async () => {
  // python -I ignores the environment and user site; a wrapper script makes that interpreter.
  const dir = mkdtempSync(path.join(tmpdir(), 'ks-python-'));
  const wrapper = path.join(dir, 'python');
  writeFileSync(wrapper, `#!/bin/sh\ncd /\nexec /usr/bin/python3 -I -S "$@"\n`);
  chmodSync(wrapper, 0o755);
  const result = await checkInterpreter(wrapper);
  assert.equal(result.ok, false);
  if (!result.ok) assert.equal(result.reason, 'no-kernelscope');
});

test('checkInterpreter reports a missing interpreter', async () => {
  const result = await checkInterpreter('/nonexistent/bin/python');
  assert.deepEqual(result, { ok: false, reason: 'no-interpreter', detail: 'ENOENT' });
});

test('in Restricted Mode the failure says that only the user setting or PATH count', () => {
  const { message } = checkFailureMessage('/usr/bin/python3', { ok: false, reason: 'no-kernelscope', detail: '3.11.2' }, true);
  assert.match(message, /kernelscope is not installed in \/usr\/bin\/python3/);
  assert.match(message, /not trusted \(Restricted Mode\).*your user settings/);
  assert.doesNotMatch(checkFailureMessage('/usr/bin/python3', { ok: false, reason: 'no-kernelscope', detail: '' }).message, /Restricted/);
});
