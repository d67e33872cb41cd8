import assert from 'node:assert/strict';
import { test } from 'node:test';
import { needsRestart, serverOptionsPayload } from '../src/settings';

test('only the settings the user set are sent, so pyproject.toml decides the rest', () => {
  assert.deepEqual(serverOptionsPayload({}, '/p/python'), { python: '/p/python', inlayHints: true, asmAfterCompile: false });
  assert.deepEqual(serverOptionsPayload({ target: '  ' }, undefined), { python: null, inlayHints: true, asmAfterCompile: false });
});

test('set settings become the contract keys', () => {
  assert.deepEqual(
    serverOptionsPayload({ target: ' examples/mlp.py:make ', deviceTarget: 'cpu-triton', train: true, inlayHints: false, asmAfterCompile: true }, '/p/python'),
    { target: 'examples/mlp.py:make', deviceTarget: 'cpu-triton', train: true, inlayHints: false, asmAfterCompile: true, python: '/p/python' },
  );
  assert.deepEqual(serverOptionsPayload({ train: false }, undefined), { train: false, python: null, inlayHints: true, asmAfterCompile: false });
});

test('the decisions to replay are sent when set, trimmed; empty leaves them to pyproject.toml', () => {
  assert.equal(serverOptionsPayload({ decisions: ' gpu-decisions.json ' }, '/p').decisions, 'gpu-decisions.json');
  assert.equal(serverOptionsPayload({ decisions: 'none' }, '/p').decisions, 'none');
  assert.ok(!('decisions' in serverOptionsPayload({ decisions: '  ' }, '/p')));
  // removing it falls back to the workspace default: the server restarts to forget it
  assert.equal(needsRestart(serverOptionsPayload({ decisions: '3' }, '/p'), serverOptionsPayload({}, '/p')), true);
});

test('an unknown device target is left to the server default', () => {
  assert.equal(serverOptionsPayload({ deviceTarget: 'tpu' }, undefined).deviceTarget, undefined);
});

test('removing a setting restarts the server; changing or adding one does not', () => {
  const withTrain = serverOptionsPayload({ train: true }, '/p');
  const without = serverOptionsPayload({}, '/p');
  assert.equal(needsRestart(undefined, without), false);
  assert.equal(needsRestart(without, withTrain), false);
  assert.equal(needsRestart(withTrain, serverOptionsPayload({ train: false }, '/p')), false);
  assert.equal(needsRestart(withTrain, without), true);
  // inlayHints is always sent, so turning it off and back to the default is a plain notification.
  assert.equal(needsRestart(serverOptionsPayload({ inlayHints: false }, '/p'), without), false);
});
