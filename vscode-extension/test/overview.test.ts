import assert from 'node:assert/strict';
import { test } from 'node:test';
import { escapeHtml } from '../src/overview/html';
import { coverageText, formatCreated, fusionHtml, memoryHtml, overviewBodyHtml, overviewShellHtml, passOf } from '../src/overview/page';
import type { RunOverview } from '../src/protocol';

const M = 'file:///ws/examples/mlp.py';
const K = (n: string) => `file:///ws/.kernelscope/runs/4/graphs/0_0_0-forward/kernels/${n}.py`;

function sample(): RunOverview {
  return {
    run: { id: 4, target: 'examples/mlp.py:make', device: 'virtual-cuda', mode: 'train', torch: '2.13.0', triton: '3.7.1', created: '2026-11-23 09:00', coverage: { kernel_lines: { covered: 79, total: 79 }, wrapper: 0.5 } },
    graphs: [
      { key: '0/0 forward', compileId: '[0/0]', kind: 'forward', preNodes: 9, postNodes: 25, kernels: 2, uris: { pre_grad: 'file:///ws/pre.py', wrapper: 'file:///ws/wrapper.py' } },
      { key: '0/0 backward', compileId: '[0/0]', kind: 'backward', preNodes: 0, postNodes: 30, kernels: 1, uris: {} },
    ],
    kernels: [
      { id: 'k1', name: 'triton_per_fused_addmm_gelu_native_layer_norm_0', kind: 'triton', graph: '0/0 forward', uri: K('a'), lines: 55, sourceLines: [{ uri: M, line: 20 }, { uri: M, line: 21 }] },
      { id: 'k2', name: 'triton_per_fused__softmax_1', kind: 'triton', graph: '0/0 forward', uri: K('b'), lines: 40, sourceLines: [{ uri: M, line: 24 }] },
      { id: 'k3', name: 'extern_kernels.mm', kind: 'extern', graph: '0/0 backward', uri: null, lines: null, sourceLines: [{ uri: M, line: 19 }] },
    ],
    graphBreaks: [{ reason: 'print() <script>', uri: M, line: 10 }],
    recompiles: [],
    // As kernelscope/render/fusion.py draws it (tests/render/test_render_fusion.py checks the drawing).
    fusionSvg:
      '<svg class="fusion" xmlns="http://www.w3.org/2000/svg" width="976" height="158" viewBox="0 0 976 158">' +
      `<g class="edges"><path class="fedge" data-source="s20" data-kernel="k1" d="M392,45 C472,45 472,45 552,45"/></g>` +
      `<g class="sources"><g class="fnode source kind-source clickable" data-id="s20" data-uri="${M}" data-line="20"><title>mlp.py:21</title></g></g>` +
      '<g class="kernels"><g class="fnode kernel kind-extern" data-id="k3"><title>extern_kernels.mm</title></g></g></svg>',
  };
}

test('memory: the server-drawn SVG goes in as drawn, with the peak as a click target; anything else says why not', () => {
  const memorySvg =
    '<svg class="memory" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 760 96" width="760" height="96">' +
    `<g class="mrow"><g class="mpeak clickable" data-uri="${M}" data-line="238"><circle cx="1" cy="1" r="3.5"/></g></g></svg>`;
  const overview = { ...sample(), memorySvg };
  assert.equal(memoryHtml(overview), memorySvg);
  assert.match(overviewBodyHtml(overview), new RegExp(`<div class="memory-wrap"><svg class="memory"[^]*data-uri="${M}" data-line="238"`));
  assert.doesNotMatch(overviewBodyHtml(sample()), /memory-wrap/); // a server that predates it: no section
  for (const bad of ['', '<script>alert(1)</script>', '<svg onload="x()">']) {
    assert.match(memoryHtml({ memorySvg: bad }), /^<p class="empty">The server sent no memory picture/, bad);
  }
});

test('fusion: the server-drawn SVG goes in as drawn, with its click targets; anything else says why not', () => {
  const overview = sample();
  assert.equal(fusionHtml(overview), overview.fusionSvg);
  assert.match(overviewBodyHtml(overview), new RegExp(`<div class="fusion-wrap"><svg class="fusion"[^]*data-uri="${M}" data-line="20"`));
  assert.equal(fusionHtml({ fusionSvg: '<p class="empty">No fusion links in this run.</p>' }), '<p class="empty">No fusion links in this run.</p>');
  for (const fusionSvg of [undefined, '', '<script>alert(1)</script>', '<svg onload="x()">']) {
    assert.match(fusionHtml({ fusionSvg }), /^<p class="empty">The server sent no fusion picture/, String(fusionSvg));
  }
});

test('page: header, coverage, graphs, kernels with fw/bw and source lines, breaks, escaping', () => {
  const html = overviewBodyHtml(sample());
  assert.match(html, /<h1>Run 4 <span class="target">examples\/mlp\.py:make<\/span><\/h1>/);
  assert.match(html, /kernel lines<\/td><td>100\.0% \(79\/79\)/);
  assert.match(html, /wrapper<\/td><td>50\.0%/);
  assert.match(html, /<td>\[0\/0\]<\/td><td>forward<\/td><td>9<\/td><td>25<\/td><td>2<\/td>/);
  assert.match(html, /data-line="0">pre_grad<\/a> · <a[^>]+>wrapper<\/a>/);
  assert.match(html, /triton_per_fused_addmm_gelu_native_layer_norm_0<\/a><\/td><td><span class="kind kind-triton">triton<\/span><\/td><td>0\/0 forward<\/td><td>fw<\/td><td>55<\/td>/);
  assert.match(html, /data-line="20">mlp\.py:21<\/a>, <a [^>]+data-line="21">mlp\.py:22<\/a>/);
  assert.match(html, /extern_kernels\.mm<\/td><td><span class="kind kind-extern">extern<\/span><\/td><td>0\/0 backward<\/td><td>bw<\/td><td><\/td>/);
  assert.match(html, /print\(\) &lt;script&gt;/);
  assert.match(html, /No recompiles\./);
  assert.match(html, /<svg class="fusion"/);
});

test('module instances: alike instances folded into one row that opens to its members, others with their submodules', () => {
  const leaf = (label: string, cls: string) => ({ label, title: `${label} (${cls})`, moduleClass: cls, members: [label], folded: false, postNodes: 14, tritonKernels: 3, externCalls: 4, children: [] });
  const overview = sample();
  overview.modules = [{
    label: 'blocks', title: 'blocks', moduleClass: '', members: ['blocks'], folded: false, postNodes: 2112, tritonKernels: 14, externCalls: 168,
    children: [
      { ...leaf('blocks.0', 'Block'), children: [leaf('blocks.0.attn', 'CausalSelfAttention')] },
      { label: 'blocks.1–10', title: 'blocks.1–10 (10 × Block)', moduleClass: 'Block', members: Array.from({ length: 10 }, (_, i) => `blocks.${i + 1}`), folded: true, postNodes: 176, tritonKernels: 10, externCalls: 14, children: [] },
    ],
  }];
  const html = overviewBodyHtml(overview);
  assert.match(html, /<h2>Module instances<\/h2>/);
  assert.match(html, /<details><summary><span class="title">blocks\.1–10 \(10 × Block\)<\/span> <span class="counts">10 Triton, 14 extern, 176 post-grad nodes each · same kernels<\/span><\/summary><ul class="members"><li class="member">blocks\.1<\/li>/);
  assert.equal((html.match(/<li class="member">/g) ?? []).length, 10);
  assert.match(html, /<span class="title">blocks\.0 \(Block\)<\/span> <span class="counts">3 Triton, 4 extern, 14 post-grad nodes<\/span><ul class="modules"><li class="module-group"><span class="title">blocks\.0\.attn/);
  assert.ok(html.indexOf('id="graphs"') < html.indexOf('id="modules"') && html.indexOf('id="modules"') < html.indexOf('id="kernels"'));
  delete overview.modules;
  assert.match(overviewBodyHtml(overview), /No module instances recorded\./);
});

test('below the kernel: registers, spills, occupancy and a SASS link per built kernel; a button builds the rest', () => {
  const overview = sample();
  assert.doesNotMatch(overviewBodyHtml(overview), /registers|Below the kernel/, 'a server without builds: no columns');
  overview.asm = { buildable: 2, built: 1, failed: 0 };
  overview.kernels[0].asm = { arch: 'sm_90', registers: 40, spillBytes: 0, occupancy: 0.75, limitedBy: 'registers', config: 'XBLOCK=32 num_warps=2', sassUri: 'file:///ws/k.sass', ptxUri: 'file:///ws/k.ptx' };
  overview.kernels[1].asm = null;
  const html = overviewBodyHtml(overview);
  assert.match(html, /<th>registers<\/th><th>spills<\/th><th>occupancy<\/th><th>SASS<\/th>/);
  assert.match(html, /<td>55<\/td><td>[^]*?<\/td><td>40<\/td><td>0<\/td><td>75% \(registers\)<\/td><td><a href="#" class="open" data-uri="file:\/\/\/ws\/k\.sass" data-line="0" title="XBLOCK=32 num_warps=2">SASS<\/a><\/td>/);
  assert.match(html, /Below the kernel: 1 of 2 Triton kernel\(s\) compiled to PTX and SASS\. <button data-action="buildAsm">/);
  overview.kernels[1].asm = { error: 'generated for a cpu device' };
  overview.kernels[0].asm!.spillBytes = 64;
  overview.asm = { buildable: 2, built: 1, failed: 1 };
  const all = overviewBodyHtml(overview);
  assert.match(all, /<span class="error">64 B<\/span>/);
  assert.match(all, /title="generated for a cpu device">not built<\/span>/);
  assert.doesNotMatch(all, /data-action="buildAsm"/, 'nothing left to build');
});

test('distributed: the rank, identical code across ranks, each graph\'s order and its collectives with links', () => {
  const overview = sample();
  assert.doesNotMatch(overviewBodyHtml(overview), /id="distributed"/);
  overview.run.rank = { rank: 1, worldSize: 2 };
  overview.distributed = {
    rank: { rank: 1, worldSize: 2, backend: 'gloo', job: 'torchrun:abc', label: 'rank 1 of 2 (gloo)' },
    ranks: [{ rank: 0, runId: 2 }, { rank: 1, runId: 3 }],
    code: ['identical code on ranks 0, 1 (every graph\'s wrapper and kernels)'],
    graphs: [{
      graph: '0/0 forward', split: null, wrapperUri: 'file:///ws/w.py', order: '1 compute -> all_gather_into_tensor -> wait -> 3 compute',
      steps: [],
      collectives: [{ text: 'all_gather_into_tensor over 2 ranks · layer attention (Attention) · PrepareModuleInput input S(1) -> R', op: 'all_gather_into_tensor', role: 'issue', module: 'attention', modelUri: M, modelLine: 71, wrapperLines: [119] }],
    }],
  };
  const html = overviewBodyHtml(overview);
  assert.match(html, /<p class="meta">rank 1 of 2 · virtual-cuda · train/);
  assert.match(html, /<h2>Distributed<\/h2><p class="meta rank">rank 1 of 2 \(gloo\) · job torchrun:abc · ranks in this store: 0 \(run 2\), 1 \(run 3\)<\/p>/);
  assert.match(html, /<li>identical code on ranks 0, 1 \(every graph&#39;s wrapper and kernels\)<\/li>/);
  assert.match(html, /<h3>0\/0 forward<\/h3><p class="order"><span class="label">order<\/span> 1 compute -&gt; all_gather_into_tensor -&gt; wait -&gt; 3 compute<\/p>/);
  assert.match(html, new RegExp(`S\\(1\\) -&gt; R · <a href="#" class="open" data-uri="${M}" data-line="71">model line</a> · <a href="#" class="open" data-uri="file:///ws/w.py" data-line="119">wrapper line</a></li>`));
  assert.ok(html.indexOf('id="graphs"') < html.indexOf('id="distributed"') && html.indexOf('id="distributed"') < html.indexOf('id="modules"'));
});

test('shell: CSP without network or inline script, nonce on the script', () => {
  const html = overviewShellHtml({ cspSource: 'https://x.vscode-cdn.net', nonce: 'abc123', scriptUri: 'https://x/webview.js', styleUri: 'https://x/o.css' });
  assert.match(html, /default-src 'none'; style-src https:\/\/x\.vscode-cdn\.net; img-src https:\/\/x\.vscode-cdn\.net data:; font-src https:\/\/x\.vscode-cdn\.net; script-src 'nonce-abc123'/);
  assert.match(html, /<script nonce="abc123" src="https:\/\/x\/webview\.js"><\/script>/);
  assert.doesNotMatch(html, /unsafe-inline|unsafe-eval/);
});

test('helpers', () => {
  assert.equal(passOf('1/0 backward'), 'bw');
  assert.equal(passOf('0/0 inference'), 'inf');
  assert.equal(coverageText(null), 'n/a');
  assert.equal(coverageText({ attributed: 0, total: 0 }), 'n/a');
  assert.equal(coverageText(12), '12');
  assert.equal(escapeHtml(`<a href="x">'&'</a>`), '&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;');
  assert.match(formatCreated(1795424302.4), /^20\d\d-\d\d-\d\d \d\d:\d\d:\d\d$/);
  assert.equal(formatCreated(new Date(2026, 10, 23, 9, 5, 7).getTime() / 1000), '2026-11-23 09:05:07');
  assert.equal(formatCreated('yesterday'), 'yesterday');
});
