import assert from 'node:assert/strict';
import { test } from 'node:test';
import { firstLinkedLine, linesOf, mergeLines, planHighlights } from '../src/linked';
import type { LinkedRangesAnswer, Range } from '../src/protocol';

const r = (start: number, end = start): Range => ({ start: { line: start, character: 0 }, end: { line: end, character: 0 } });
/** LSP's whole-line form: lines first..last (0-based), ending at character 0 of the next line. */
const whole = (first: number, last = first): Range => ({ start: { line: first, character: 0 }, end: { line: last + 1, character: 0 } });
const MODEL = 'file:///ws/examples/mlp.py';
const KERNEL = 'file:///ws/.kernelscope/runs/1/graphs/0_0_0-inference/kernels/triton_per_fused_gelu_0.py';
const WRAPPER = 'file:///ws/.kernelscope/runs/1/graphs/0_0_0-inference/wrapper.py';

const answer: LinkedRangesAnswer = {
  origin: r(20),
  links: [
    { uri: KERNEL, ranges: [r(41), r(38), r(41)], role: 'kernel', label: 'computes erf' },
    { uri: KERNEL, ranges: [r(41)], role: 'kernel', label: 'computes mul' },
    { uri: WRAPPER, ranges: [r(233)], role: 'wrapper', label: 'launches kernel' },
    { uri: MODEL, ranges: [r(5)], role: 'source', label: 'same file' },
  ],
};

test('each visible editor gets its own lines; the requesting one only its origin', () => {
  const plan = planHighlights(answer, MODEL, [MODEL, KERNEL]);
  assert.deepEqual(plan.get(MODEL), { origin: [r(20)], linked: [] });
  assert.deepEqual(plan.get(KERNEL)?.linked, [
    { range: r(38), role: 'kernel', label: 'computes erf' },
    { range: r(41), role: 'kernel', label: 'computes erf\ncomputes mul' },
  ]);
  assert.equal(plan.has(WRAPPER), false, 'editors that are not visible are not planned');
});

test('visible editors the answer does not name are cleared', () => {
  const other = 'file:///ws/other.py';
  const plan = planHighlights(answer, MODEL, [MODEL, other]);
  assert.deepEqual(plan.get(other), { origin: [], linked: [] });
});

test('no answer clears every visible editor', () => {
  const plan = planHighlights(null, MODEL, [MODEL, KERNEL]);
  assert.deepEqual([...plan.values()], [{ origin: [], linked: [] }, { origin: [], linked: [] }]);
});

test("URIs match across VS Code's and the server's percent-encoding", () => {
  const serverUri = 'file:///ws/my%20models/mlp.py';
  const vscodeUri = 'file:///ws/my%20models/mlp.py'.replace('%20', '%20');
  const rawUri = 'file:///ws/my models/mlp.py';
  const plan = planHighlights({ origin: null, links: [{ uri: rawUri, ranges: [r(3)], role: 'source', label: '' }] }, KERNEL, [vscodeUri, KERNEL]);
  assert.deepEqual(plan.get(serverUri)?.linked.map((l) => l.range.start.line), [3]);
  const drive = planHighlights({ origin: null, links: [{ uri: 'file:///C:/m/a.py', ranges: [r(1)], role: 'source', label: '' }] }, KERNEL, ['file:///c%3A/m/a.py']);
  assert.equal(drive.get('file:///c%3A/m/a.py')?.linked.length, 1);
});

test('the kernel editor asking highlights the model lines', () => {
  const back: LinkedRangesAnswer = { origin: r(41), links: [{ uri: MODEL, ranges: [r(20)], role: 'source', label: 'h = F.gelu(h)' }] };
  const plan = planHighlights(back, KERNEL, [MODEL, KERNEL]);
  assert.deepEqual(plan.get(KERNEL)?.origin, [r(41)]);
  assert.equal(firstLinkedLine(plan.get(MODEL)), 20);
});

test('mergeLines sorts and de-duplicates per line', () => {
  assert.deepEqual(
    mergeLines([
      { range: r(9), role: 'kernel', label: 'a' },
      { range: r(2), role: 'kernel', label: '' },
      { range: r(9), role: 'kernel', label: 'a' },
    ]).map((l) => [l.range.start.line, l.label]),
    [[2, ''], [9, 'a']],
  );
});

test("whole-line ranges (ending at character 0 of the next line) do not spill onto that line", () => {
  assert.deepEqual(linesOf(whole(17)), [17]);
  assert.deepEqual(linesOf(whole(17, 29)), [...Array(13).keys()].map((i) => 17 + i));
  assert.deepEqual(linesOf({ start: { line: 4, character: 2 }, end: { line: 4, character: 9 } }), [4]);
  assert.deepEqual(linesOf({ start: { line: 4, character: 0 }, end: { line: 6, character: 3 } }), [4, 5, 6]);
  // Overlapping blocks and single lines of the same file: one decoration per line.
  const plan = planHighlights(
    { origin: whole(20), links: [{ uri: KERNEL, ranges: [whole(17, 29), whole(19), whole(37, 44)], role: 'kernel', label: 'k' }] },
    MODEL,
    [MODEL, KERNEL],
  );
  const lines = plan.get(KERNEL)!.linked.map((l) => l.range.start.line);
  assert.deepEqual(lines, [...[...Array(13).keys()].map((i) => 17 + i), ...[...Array(8).keys()].map((i) => 37 + i)]);
  assert.deepEqual(plan.get(MODEL)!.origin, [r(20)]);
});

test('a kernel\'s PTX and SASS files are stage files of the store; other files are not', async () => {
  const { isAsmPath } = await import('../src/uris');
  assert.equal(isAsmPath('/ws/.kernelscope/runs/3/asm/0_0_0-inference/k/k.sass'), true);
  assert.equal(isAsmPath('C:\\ws\\.kernelscope\\runs\\3\\asm\\g\\k\\k.ptx'), true);
  assert.equal(isAsmPath('/ws/.kernelscope/runs/3/asm/0_0_0-inference/cpp_fused_gelu_0/cpp_fused_gelu_0.x86'), true);
  assert.equal(isAsmPath('/ws/.kernelscope/runs/3/graphs/0_0_0-forward/kernels/k.py'), false);
  assert.equal(isAsmPath('/ws/styles/site.sass'), false);
});

test('a C++ wrapper or kernel of the store is served; a C++ file of the workspace is not', async () => {
  const { isStoredCppPath } = await import('../src/uris');
  assert.equal(isStoredCppPath('/ws/.kernelscope/runs/3/graphs/0_0_0-inference/wrapper.cpp'), true);
  assert.equal(isStoredCppPath('C:\\ws\\.kernelscope\\runs\\3\\graphs\\g\\kernels\\cpp_fused_0.cpp'), true);
  assert.equal(isStoredCppPath('/ws/.kernelscope/runs/3/graphs/0_0_0-inference/wrapper.py'), false);
  assert.equal(isStoredCppPath('/ws/src/model.cpp'), false);
});

test('PTX/SASS links highlight like any other file, labelled with their kernel', () => {
  const sass = 'file:///ws/.kernelscope/runs/1/asm/g/k/k.sass';
  const plan = planHighlights(
    { origin: null, links: [{ uri: sass, ranges: [{ start: { line: 582, character: 0 }, end: { line: 583, character: 0 } }], role: 'asm', label: 'SASS of k' }] },
    'file:///ws/.kernelscope/runs/1/graphs/g/kernels/k.py',
    [sass],
  );
  assert.deepEqual(plan.get(sass)!.linked, [{ range: { start: { line: 582, character: 0 }, end: { line: 582, character: 0 } }, role: 'asm', label: 'SASS of k' }]);
});
