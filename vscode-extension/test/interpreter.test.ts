import assert from 'node:assert/strict';
import { test } from 'node:test';
import { interpreterChanged, resolveInterpreter, serverCommand } from '../src/interpreter';

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
