/**
 * The run overview page: header, coverage, the fusion and memory pictures, graphs, kernels,
 * graph breaks and recompiles, as HTML strings built from the server's
 * `kernelscope/runOverview` answer. The fusion picture comes drawn: the server
 * lays it out and sends it as SVG (kernelscope/render/fusion.py, which Jupyter
 * uses too), styled by class only, with data-uri/data-line on the nodes. Shared
 * by the webview script (which renders it) and the unit tests;
 * `overviewShellHtml` is the page the extension hands to the webview, with its
 * content security policy.
 */
import type { KernelAsm, ModuleGroup, OverviewDistributed, RunOverview } from '../protocol';
import { baseName } from '../uris';
import { escapeHtml, passOf } from './html';

export { passOf };

function openLink(uri: string | null | undefined, line: number | null | undefined, text: string, title?: string): string {
  if (!uri) {
    return escapeHtml(text);
  }
  const tip = title ? ` title="${escapeHtml(title)}"` : '';
  return `<a href="#" class="open" data-uri="${escapeHtml(uri)}" data-line="${line ?? 0}"${tip}>${escapeHtml(text)}</a>`;
}

/** A run's creation time (seconds since the epoch, or already a string) as "YYYY-MM-DD HH:MM:SS" local time. */
export function formatCreated(created: unknown): string {
  const seconds = typeof created === 'number' ? created : typeof created === 'string' && /^\d+(\.\d+)?$/.test(created) ? Number(created) : undefined;
  if (seconds === undefined) {
    return String(created ?? '');
  }
  const d = new Date(seconds * 1000);
  const two = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${two(d.getMonth() + 1)}-${two(d.getDate())} ${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}`;
}

/** One coverage value as text: fractions as percentages, {covered,total} pairs as "p% (c/t)". */
export function coverageText(value: unknown): string {
  if (value === null || value === undefined) {
    return 'n/a';
  }
  if (typeof value === 'number') {
    return value >= 0 && value <= 1 && !Number.isInteger(value) ? `${(value * 100).toFixed(1)}%` : String(value);
  }
  if (typeof value === 'object' && !Array.isArray(value)) {
    const record = value as Record<string, unknown>;
    const numerator = firstNumber(record, ['covered', 'attributed', 'numerator', 'count', 'hit', 'matched', 'agree', 'n']);
    const denominator = firstNumber(record, ['total', 'denominator', 'of', 'all']);
    if (numerator !== undefined && denominator !== undefined) {
      return denominator === 0 ? 'n/a' : `${((numerator / denominator) * 100).toFixed(1)}% (${numerator}/${denominator})`;
    }
    return Object.entries(record)
      .map(([k, v]) => `${k}: ${typeof v === 'object' ? JSON.stringify(v) : String(v)}`)
      .join(', ');
  }
  return String(value);
}

function firstNumber(record: Record<string, unknown>, keys: string[]): number | undefined {
  for (const key of keys) {
    if (typeof record[key] === 'number') {
      return record[key] as number;
    }
  }
  return undefined;
}

function humanize(key: string): string {
  return key.replace(/_/g, ' ').replace(/([a-z])([A-Z])/g, '$1 $2').toLowerCase();
}

function section(title: string, id: string, body: string): string {
  return `<section id="${id}"><h2>${escapeHtml(title)}</h2>${body}</section>`;
}

function table(headers: string[], rows: string[][], emptyText: string): string {
  if (rows.length === 0) {
    return `<p class="empty">${escapeHtml(emptyText)}</p>`;
  }
  const head = headers.map((h) => `<th>${escapeHtml(h)}</th>`).join('');
  const body = rows.map((r) => `<tr>${r.map((c) => `<td>${c}</td>`).join('')}</tr>`).join('');
  return `<table><thead><tr>${head}</tr></thead><tbody>${body}</tbody></table>`;
}

/** The page body for one run. */
export function overviewBodyHtml(overview: RunOverview): string {
  const run = overview.run;
  const rank = run.rank ? `rank ${run.rank.rank} of ${run.rank.worldSize} · ` : '';
  const header =
    `<header><h1>Run ${escapeHtml(run.id)} <span class="target">${escapeHtml(run.target)}</span></h1>` +
    `<p class="meta">${escapeHtml(rank)}${escapeHtml(run.device)} · ${escapeHtml(run.mode)} · torch ${escapeHtml(run.torch)} · ` +
    `triton ${escapeHtml(run.triton)} · ${escapeHtml(formatCreated(run.created))} · ${overview.graphs.length} graph(s), ` +
    `${overview.kernels.length} kernel(s), ${overview.graphBreaks.length} graph break(s)</p>` +
    `<p class="actions"><button data-action="refresh">Refresh</button> <button data-action="pickRun">Pick run…</button></p></header>`;

  const coverageRows = Object.entries(run.coverage ?? {}).map(([k, v]) => [escapeHtml(humanize(k)), escapeHtml(coverageText(v))]);
  const coverage = section('Coverage', 'coverage', table(['measure', 'value'], coverageRows, 'No coverage recorded.'));

  const fusion = section(
    'Fusion',
    'fusion',
    `<p class="hint">Model lines (left) whose nodes were fused into each kernel (right). Click a line or a kernel to open it.</p>` +
      `<div class="fusion-wrap">${fusionHtml(overview)}</div>`,
  );

  const memory =
    overview.memorySvg === undefined
      ? ''
      : section(
          'Memory',
          'memory',
          `<p class="hint">Bytes live over each graph's allocation timeline (inputs dashed), as the wrapper plans them. Click a peak to open its wrapper line; \`kernelscope memory\` lists the model lines.</p>` +
            `<div class="memory-wrap">${memoryHtml(overview)}</div>`,
        );

  const graphRows = overview.graphs.map((g) => [
    escapeHtml(g.compileId),
    escapeHtml(g.parent && g.label ? `${g.kind} · ${g.label}` : g.kind),
    String(g.preNodes),
    String(g.postNodes),
    String(g.kernels),
    (['pre_grad', 'post_grad', 'wrapper'] as const)
      .filter((k) => g.uris?.[k])
      .map((k) => openLink(g.uris[k], 0, k))
      .join(' · '),
  ]);
  const graphs = section(
    'Graphs',
    'graphs',
    table(['compile id', 'kind', 'pre-grad nodes', 'post-grad nodes', 'kernels', 'files'], graphRows, 'No graphs.'),
  );

  const modules = section(
    'Module instances',
    'modules',
    overview.modules && overview.modules.length
      ? `<p class="hint">Alike instances (same class, kernels and structure) are folded into one row; open it to see them.</p>` +
          modulesHtml(overview.modules)
      : '<p class="empty">No module instances recorded.</p>',
  );

  const withAsm = (overview.asm?.built ?? 0) + (overview.asm?.failed ?? 0) > 0;
  const kernelRows = overview.kernels.map((k) => [
    openLink(k.uri, 0, k.name, k.name),
    `<span class="kind kind-${escapeHtml(k.kind)}">${escapeHtml(k.kind)}</span>`,
    escapeHtml(k.graph),
    passOf(k.graph),
    k.lines === null || k.lines === undefined ? '' : String(k.lines),
    k.sourceLines.map((s) => openLink(s.uri, s.line, `${baseName(s.uri)}:${s.line + 1}`)).join(', '),
    ...(withAsm ? asmCells(k.asm) : []),
  ]);
  const kernels = section(
    'Kernels',
    'kernels',
    belowHtml(overview) +
      table(
        ['kernel', 'kind', 'graph', 'fw/bw', 'lines', 'source lines', ...(withAsm ? ASM_HEADERS : [])],
        kernelRows,
        'No kernels.',
      ),
  );
  const distributed = overview.distributed ? distributedHtml(overview.distributed) : '';

  const breakRows = overview.graphBreaks.map((b) => [
    escapeHtml(b.reason),
    b.uri ? openLink(b.uri, b.line, `${baseName(b.uri)}:${(b.line ?? 0) + 1}`) : '',
  ]);
  const breaks = section('Graph breaks', 'breaks', table(['reason', 'where'], breakRows, 'No graph breaks.'));
  const recompileRows = overview.recompiles.map((r) => [escapeHtml(r.compileId), escapeHtml(r.reason)]);
  const recompiles = section('Recompiles', 'recompiles', table(['compile id', 'reason'], recompileRows, 'No recompiles.'));

  return header + coverage + fusion + memory + graphs + distributed + modules + kernels + breaks + recompiles;
}

const ASM_HEADERS = ['registers', 'spills', 'occupancy', 'SASS'];

/** A kernel's facts below Triton as table cells: registers, spill bytes, occupancy, its SASS file. */
export function asmCells(asm: KernelAsm | null | undefined): string[] {
  if (!asm) {
    return ['', '', '', ''];
  }
  if (asm.error) {
    return [`<span class="empty" title="${escapeHtml(asm.error)}">not built</span>`, '', '', ''];
  }
  const occupancy = asm.occupancy === undefined ? '' : `${Math.round(asm.occupancy * 100)}% (${escapeHtml(asm.limitedBy ?? '')})`;
  return [
    String(asm.registers ?? ''),
    asm.spillBytes ? `<span class="error">${asm.spillBytes} B</span>` : '0',
    occupancy,
    asm.sassUri ? openLink(asm.sassUri, 0, 'SASS', asm.config) : '',
  ];
}

/** How many Triton kernels are compiled below Triton, and a button to build the rest. */
export function belowHtml(overview: RunOverview): string {
  const asm = overview.asm;
  if (!asm || asm.buildable === 0) {
    return '';
  }
  const failed = asm.failed ? `, ${asm.failed} could not be built` : '';
  const pending = asm.buildable - asm.built - asm.failed;
  const button = pending > 0 ? ` <button data-action="buildAsm">Build PTX/SASS for this run</button>` : '';
  return `<p class="hint below">Below the kernel: ${asm.built} of ${asm.buildable} Triton kernel(s) compiled to PTX and SASS${escapeHtml(failed)}.${button}</p>`;
}

/** A distributed run: rank and job, which ranks compiled identical code, and per graph the
 * compute/communication order with each collective (its model line and wrapper line). */
export function distributedHtml(view: OverviewDistributed): string {
  const parts: string[] = [];
  if (view.rank) {
    const ranks = view.ranks.map((r) => `${r.rank} (run ${r.runId})`).join(', ');
    parts.push(`<p class="meta rank">${escapeHtml(view.rank.label)} · job ${escapeHtml(view.rank.job ?? '')} · ranks in this store: ${escapeHtml(ranks)}</p>`);
  }
  if (view.code.length) {
    parts.push(`<ul class="code-groups">${view.code.map((line) => `<li>${escapeHtml(line)}</li>`).join('')}</ul>`);
  }
  for (const graph of view.graphs) {
    const split = graph.split ? `, ${graph.split}` : '';
    const collectives = graph.collectives
      .map((c) => {
        const model = c.modelUri && c.modelLine !== null ? ` · ${openLink(c.modelUri, c.modelLine, 'model line')}` : '';
        const wrapper = graph.wrapperUri && c.wrapperLines.length ? ` · ${openLink(graph.wrapperUri, c.wrapperLines[0], 'wrapper line')}` : '';
        return `<li class="collective">${escapeHtml(c.text)}${model}${wrapper}</li>`;
      })
      .join('');
    const order = graph.collectives.length ? `<p class="order"><span class="label">order</span> ${escapeHtml(graph.order)}</p>` : '';
    parts.push(
      `<div class="comm-graph"><h3>${escapeHtml(graph.graph)}${escapeHtml(split)}</h3>${order}` +
        (collectives ? `<ul class="collectives">${collectives}</ul>` : '') +
        `</div>`,
    );
  }
  return section('Distributed', 'distributed', parts.join(''));
}

/**
 * The fusion picture as the server drew it (an `<svg class="fusion">`, or a
 * `<p class="empty">` for a run without fusion links). A server that predates
 * drawing it sends none: say so rather than show an empty section.
 */
export function fusionHtml(overview: Pick<RunOverview, 'fusionSvg'>): string {
  const drawn = overview.fusionSvg;
  if (typeof drawn !== 'string' || !/^<(svg class="fusion"|p class="empty")[ >]/.test(drawn)) {
    return '<p class="empty">The server sent no fusion picture (a kernelscope older than the extension): update kernelscope to see it.</p>';
  }
  return drawn;
}

/** The memory picture as the server drew it (an `<svg class="memory">` or a `<p class="empty">`). */
export function memoryHtml(overview: Pick<RunOverview, 'memorySvg'>): string {
  const drawn = overview.memorySvg;
  if (typeof drawn !== 'string' || !/^<(svg class="memory"|p class="empty")[ >]/.test(drawn)) {
    return '<p class="empty">The server sent no memory picture.</p>';
  }
  return drawn;
}

function groupCounts(group: ModuleGroup): string {
  const each = group.folded ? ' each' : '';
  const same = group.folded ? ' · same kernels' : '';
  return `${group.tritonKernels} Triton, ${group.externCalls} extern, ${group.postNodes} post-grad nodes${each}${same}`;
}

/** The module tree: a folded group is a <details> listing its members; an instance lists its submodules. */
export function modulesHtml(groups: ModuleGroup[]): string {
  const items = groups.map((group) => {
    const counts = `<span class="counts">${escapeHtml(groupCounts(group))}</span>`;
    if (group.folded) {
      const members = group.members.map((m) => `<li class="member">${escapeHtml(m)}</li>`).join('');
      return (
        `<li class="module-group folded"><details><summary><span class="title">${escapeHtml(group.title)}</span> ${counts}</summary>` +
        `<ul class="members">${members}</ul></details></li>`
      );
    }
    const children = group.children.length ? modulesHtml(group.children) : '';
    return `<li class="module-group"><span class="title">${escapeHtml(group.title)}</span> ${counts}${children}</li>`;
  });
  return `<ul class="modules">${items.join('')}</ul>`;
}

export interface ShellOptions {
  cspSource: string;
  nonce: string;
  scriptUri: string;
  styleUri: string;
}

/** The webview's page: no network, scripts only with the nonce, styles only from the extension. */
export function overviewShellHtml(options: ShellOptions): string {
  const csp = [
    "default-src 'none'",
    `style-src ${options.cspSource}`,
    `img-src ${options.cspSource} data:`,
    `font-src ${options.cspSource}`,
    `script-src 'nonce-${options.nonce}'`,
  ].join('; ');
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="stylesheet" href="${escapeHtml(options.styleUri)}">
<title>kernelscope run</title>
</head>
<body>
<div id="root"><p class="loading">Loading the run overview…</p></div>
<script nonce="${options.nonce}" src="${escapeHtml(options.scriptUri)}"></script>
</body>
</html>`;
}
