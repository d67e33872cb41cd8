/**
 * The fusion picture of a run: model source lines on the left, kernels on the
 * right, an edge where a line's nodes were fused into a kernel. Built as an SVG
 * string from the `fusion` part of `kernelscope/runOverview`; every node carries
 * `data-uri`/`data-line` so that a click opens that end (the webview script posts
 * it to the extension). No inline styles: the webview's CSP allows only its
 * stylesheet, so everything is styled by class.
 */
import type { FusionEdge, FusionKernel, FusionSource, RunOverview } from '../protocol';
import { baseName } from '../uris';
import { escapeHtml, passOf, shorten, shortenEnd } from './html';

export interface PlacedNode {
  id: string;
  x: number;
  y: number;
  width: number;
  height: number;
  label: string;
  tag: string; // fw / bw / inf for kernels
  title: string;
  uri: string | null;
  line: number;
  kind: string;
}

export interface PlacedEdge {
  source: string;
  kernel: string;
  path: string;
}

export interface FusionLayout {
  width: number;
  height: number;
  sources: PlacedNode[];
  kernels: PlacedNode[];
  edges: PlacedEdge[];
}

const ROW = 30;
const NODE_HEIGHT = 22;
const SOURCE_WIDTH = 380;
const KERNEL_WIDTH = 400;
const GAP = 160;
const MARGIN = 12;
const HEADER = 26;
// Label budgets in characters: 12px monospace is about 7.3px a character, 8px padding each side.
export const SOURCE_LABEL_CHARS = Math.floor((SOURCE_WIDTH - 16) / 7.3);
export const KERNEL_LABEL_CHARS = Math.floor((KERNEL_WIDTH - 16 - 24) / 7.3); // room for the fw/bw tag

/**
 * Place the nodes: sources in file/line order, kernels ordered by the mean
 * position of the lines fused into them (fewer crossings), both columns spread
 * over the same height.
 */
export function layoutFusion(
  fusion: RunOverview['fusion'],
  kernelKinds: Map<string, string> = new Map(),
  kernelGraphs: Map<string, string> = new Map(),
): FusionLayout {
  const sources = [...fusion.sources].sort(
    (a, b) => a.uri.localeCompare(b.uri) || a.line - b.line || a.id.localeCompare(b.id),
  );
  const sourceIndex = new Map(sources.map((s, i) => [s.id, i]));
  const kernelIds = new Set(fusion.kernels.map((k) => k.id));
  const edges = fusion.edges.filter((e) => sourceIndex.has(e.source) && kernelIds.has(e.kernel));
  const barycenter = new Map<string, number>();
  for (const kernel of fusion.kernels) {
    const positions = edges.filter((e) => e.kernel === kernel.id).map((e) => sourceIndex.get(e.source) as number);
    barycenter.set(kernel.id, positions.length ? positions.reduce((a, b) => a + b, 0) / positions.length : Infinity);
  }
  const kernels = [...fusion.kernels].sort(
    (a, b) => (barycenter.get(a.id) as number) - (barycenter.get(b.id) as number) || a.name.localeCompare(b.name),
  );

  const rows = Math.max(sources.length, kernels.length, 1);
  const columnHeight = rows * ROW;
  const height = HEADER + columnHeight + MARGIN;
  const width = MARGIN * 2 + SOURCE_WIDTH + GAP + KERNEL_WIDTH;
  const rowY = (i: number, n: number) => HEADER + (i + 0.5) * (columnHeight / n) - NODE_HEIGHT / 2;

  const placedSources: PlacedNode[] = sources.map((s: FusionSource, i) => ({
    id: s.id,
    x: MARGIN,
    y: rowY(i, sources.length),
    width: SOURCE_WIDTH,
    height: NODE_HEIGHT,
    label: shortenEnd(`${baseName(s.uri)}:${s.line + 1}  ${s.code.trim()}`, SOURCE_LABEL_CHARS),
    tag: '',
    title: `${baseName(s.uri)}:${s.line + 1}  ${s.code.trim()}`,
    uri: s.uri,
    line: s.line,
    kind: 'source',
  }));
  const kernelX = MARGIN + SOURCE_WIDTH + GAP;
  const placedKernels: PlacedNode[] = kernels.map((k: FusionKernel, i) => {
    const kind = kernelKinds.get(k.id) ?? (k.uri ? 'triton' : 'extern');
    return {
      id: k.id,
      x: kernelX,
      y: rowY(i, kernels.length),
      width: KERNEL_WIDTH,
      height: NODE_HEIGHT,
      label: shorten(k.name, KERNEL_LABEL_CHARS),
      tag: passOf(kernelGraphs.get(k.id) ?? ''),
      title: `${k.name} (${kind}${kernelGraphs.get(k.id) ? `, ${kernelGraphs.get(k.id)}` : ''})`,
      uri: k.uri,
      line: 0,
      kind,
    };
  });
  const sourceById = new Map(placedSources.map((n) => [n.id, n]));
  const kernelById = new Map(placedKernels.map((n) => [n.id, n]));
  const placedEdges: PlacedEdge[] = edges.map((e: FusionEdge) => {
    const from = sourceById.get(e.source) as PlacedNode;
    const to = kernelById.get(e.kernel) as PlacedNode;
    const x1 = from.x + from.width;
    const y1 = from.y + from.height / 2;
    const x2 = to.x;
    const y2 = to.y + to.height / 2;
    const bend = GAP / 2;
    return {
      source: e.source,
      kernel: e.kernel,
      path: `M${x1},${round(y1)} C${x1 + bend},${round(y1)} ${x2 - bend},${round(y2)} ${x2},${round(y2)}`,
    };
  });
  return { width, height, sources: placedSources, kernels: placedKernels, edges: placedEdges };
}

function round(v: number): number {
  return Math.round(v * 10) / 10;
}

function nodeSvg(node: PlacedNode, side: 'source' | 'kernel'): string {
  const clickable = node.uri !== null;
  const data = clickable ? ` data-uri="${escapeHtml(node.uri)}" data-line="${node.line}"` : '';
  const classes = `fnode ${side} kind-${escapeHtml(node.kind)}${clickable ? ' clickable' : ''}`;
  return (
    `<g class="${classes}" data-id="${escapeHtml(node.id)}"${data}>` +
    `<title>${escapeHtml(node.title)}</title>` +
    `<rect x="${node.x}" y="${round(node.y)}" width="${node.width}" height="${node.height}" rx="4"/>` +
    `<text x="${node.x + 8}" y="${round(node.y + node.height / 2 + 4)}">${escapeHtml(node.label)}</text>` +
    (node.tag ? `<text class="tag" x="${node.x + node.width - 6}" y="${round(node.y + node.height / 2 + 4)}" text-anchor="end">${escapeHtml(node.tag)}</text>` : '') +
    `</g>`
  );
}

/** The whole picture as an `<svg>` element string. */
export function fusionSvg(overview: Pick<RunOverview, 'fusion' | 'kernels'>): string {
  const kinds = new Map(overview.kernels.map((k) => [k.id, k.kind]));
  const graphs = new Map(overview.kernels.map((k) => [k.id, k.graph]));
  const layout = layoutFusion(overview.fusion, kinds, graphs);
  if (layout.sources.length === 0 && layout.kernels.length === 0) {
    return '<p class="empty">No fusion links in this run.</p>';
  }
  const edges = layout.edges
    .map((e) => `<path class="fedge" data-source="${escapeHtml(e.source)}" data-kernel="${escapeHtml(e.kernel)}" d="${e.path}"/>`)
    .join('');
  const kernelX = layout.kernels[0]?.x ?? layout.width / 2;
  return (
    `<svg class="fusion" xmlns="http://www.w3.org/2000/svg" width="${layout.width}" height="${layout.height}" ` +
    `viewBox="0 0 ${layout.width} ${layout.height}" role="img" aria-label="Fusion of model lines into kernels">` +
    `<text class="colhead" x="${MARGIN}" y="16">model lines (${layout.sources.length})</text>` +
    `<text class="colhead" x="${kernelX}" y="16">kernels (${layout.kernels.length})</text>` +
    `<g class="edges">${edges}</g>` +
    `<g class="sources">${layout.sources.map((n) => nodeSvg(n, 'source')).join('')}</g>` +
    `<g class="kernels">${layout.kernels.map((n) => nodeSvg(n, 'kernel')).join('')}</g>` +
    `</svg>`
  );
}
