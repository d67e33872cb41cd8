import assert from 'node:assert/strict';
import { test } from 'node:test';
import { RESTRICTED_TOOLTIP, rankText, statusPresentation } from '../src/statusText';

const status = (state: 'idle' | 'compiling' | 'failed' | 'watching', runId: number | null, message = '') => ({ state, runId, message, target: 'examples/mlp.py:make' });

test('idle shows the run', () => {
  const p = statusPresentation('running', status('idle', 3));
  assert.equal(p.text, '$(circuit-board) kernelscope: run 3');
  assert.equal(p.isError, false);
  assert.match(p.tooltip, /Showing run 3 examples\/mlp\.py:make/);
});

test('no run yet says what to do', () => {
  assert.match(statusPresentation('running', status('idle', null)).tooltip, /kernelscope: Compile/);
  assert.match(statusPresentation('running', undefined).text, /no run/);
});

test('compiling spins; failed is an error that keeps the last good run', () => {
  assert.equal(statusPresentation('running', status('compiling', 2)).text, '$(sync~spin) kernelscope: compiling');
  const failed = statusPresentation('running', status('failed', 2, 'examples/mlp.py:21: NameError'));
  assert.equal(failed.isError, true);
  assert.match(failed.tooltip, /mlp\.py:21: NameError/);
  assert.match(failed.tooltip, /run 2/);
});

test('watching, and the client states before the server runs', () => {
  assert.equal(statusPresentation('running', status('watching', 5)).text, '$(eye) kernelscope: run 5');
  assert.equal(statusPresentation('not-installed', undefined).isError, true);
  assert.match(statusPresentation('no-interpreter', undefined).tooltip, /kernelscope\.python/);
  assert.match(statusPresentation('starting', status('idle', 1)).text, /loading~spin/);
});

test('a rank of a distributed job shows its rank beside the run', () => {
  assert.equal(statusPresentation('running', { ...status('idle', 3), rank: '1/2' }).text, '$(circuit-board) kernelscope: run 3 · rank 1/2');
  assert.equal(statusPresentation('running', { ...status('idle', 3), rank: null }).text, '$(circuit-board) kernelscope: run 3');
  assert.equal(rankText({ rank: 0, worldSize: 8, backend: 'fake' }), 'rank 0 of 8 (fake)');
  assert.equal(rankText({ rank: 1, worldSize: 2 }), 'rank 1 of 2');
});

test('an untrusted workspace: a shield, "restricted", and why nothing compiles', () => {
  const p = statusPresentation('running', status('idle', 1), true);
  assert.equal(p.text, '$(shield) kernelscope: run 1 · restricted');
  assert.equal(p.isError, false);
  assert.ok(p.tooltip.startsWith(RESTRICTED_TOOLTIP));
  assert.match(p.tooltip, /not trusted/);
  assert.match(p.tooltip, /Manage Workspace Trust/);
  assert.match(p.tooltip, /Showing run 1/);
  // Before the server runs, the client's own state is what matters.
  assert.equal(statusPresentation('not-installed', undefined, true).text, '$(error) kernelscope: not installed');
  assert.equal(statusPresentation('running', status('idle', 1), false).text, '$(circuit-board) kernelscope: run 1');
});
