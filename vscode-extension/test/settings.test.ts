import assert from 'node:assert/strict';
import { test } from 'node:test';
import { serverOptionsPayload } from '../src/settings';

test('only the settings the user set are sent, so pyproject.toml decides the rest', () => {
  assert.deepEqual(serverOptionsPayload({}, '/p/python'), { python: '/p/python' });
  assert.deepEqual(serverOptionsPayload({ target: '  ' }, undefined), { python: null });
});

test('set settings become the contract keys', () => {
  assert.deepEqual(
    serverOptionsPayload({ target: ' examples/mlp.py:make ', deviceTarget: 'cpu-triton', train: true, inlayHints: false }, '/p/python'),
    { target: 'examples/mlp.py:make', deviceTarget: 'cpu-triton', train: true, inlayHints: false, python: '/p/python' },
  );
  assert.deepEqual(serverOptionsPayload({ train: false }, undefined), { train: false, python: null });
});

test('an unknown device target is left to the server default', () => {
  assert.equal(serverOptionsPayload({ deviceTarget: 'tpu' }, undefined).deviceTarget, undefined);
});
