import assert from 'node:assert/strict';
import { test } from 'node:test';
import { serverOptionsPayload } from '../src/settings';

test('settings become the contract keys; an empty target lets the server decide', () => {
  assert.deepEqual(serverOptionsPayload({ target: '', deviceTarget: 'auto', train: false, inlayHints: true }, '/p/python'), {
    target: null, deviceTarget: 'auto', train: false, inlayHints: true, python: '/p/python',
  });
  assert.deepEqual(serverOptionsPayload({ target: ' examples/mlp.py:make ', deviceTarget: 'cpu-triton', train: true, inlayHints: false }, undefined), {
    target: 'examples/mlp.py:make', deviceTarget: 'cpu-triton', train: true, inlayHints: false, python: null,
  });
});

test('an unknown device target falls back to auto', () => {
  assert.equal(serverOptionsPayload({ deviceTarget: 'tpu' }, undefined).deviceTarget, 'auto');
});
