import assert from 'node:assert/strict';
import { test } from 'node:test';
import { needsRestart, RESTRICTED_SETTINGS, serverOptionsPayload, settingValue } from '../src/settings';

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

test('untrusted: the restricted settings take only the user value; the others every level', () => {
  const levels = { globalValue: '/home/me/py/bin/python', workspaceValue: './evil.sh', workspaceFolderValue: './evil2.sh' };
  assert.equal(settingValue('python', levels, true), './evil2.sh');
  assert.equal(settingValue('python', levels, false), '/home/me/py/bin/python');
  assert.equal(settingValue('target', { workspaceValue: 'evil.py:make' }, false), undefined);
  assert.equal(settingValue('decisions', { workspaceFolderValue: 'd.json', globalValue: 'none' }, false), 'none');
  assert.equal(settingValue('inlayHints', { workspaceValue: false, globalValue: true }, false), false);
  assert.equal(settingValue('python', undefined, false), undefined);
  assert.deepEqual([...RESTRICTED_SETTINGS], ['python', 'target', 'decisions']);
});

test('untrusted: the server is told trusted false; trusted sends nothing; granting trust restarts', () => {
  assert.equal(serverOptionsPayload({}, '/p', false).trusted, false);
  assert.ok(!('trusted' in serverOptionsPayload({}, '/p', true)));
  assert.ok(!('trusted' in serverOptionsPayload({}, '/p')));
  assert.equal(needsRestart(serverOptionsPayload({}, '/p', false), serverOptionsPayload({}, '/p', true)), true);
});
