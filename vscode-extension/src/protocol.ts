/**
 * The kernelscope language server's custom messages, as typed data (see the
 * contract in the README's "VS Code extension" section). Plain types only: no
 * `vscode` import, so the modules that use them can be unit-tested in node.
 */

export interface Position {
  line: number;
  character: number;
}

export interface Range {
  start: Position;
  end: Position;
}

export type LinkRole = 'source' | 'pre_grad' | 'post_grad' | 'kernel' | 'wrapper';

export interface LinkedFile {
  uri: string;
  ranges: Range[];
  role: LinkRole;
  label: string;
}

/** Answer of `kernelscope/linkedRanges`. */
export interface LinkedRangesAnswer {
  origin: Range | null;
  links: LinkedFile[];
}

export interface KernelForLine {
  name: string;
  kind: 'triton' | 'template' | 'extern' | string;
  graph: string;
  uri: string | null;
  range: Range | null;
}

/** Answer of `kernelscope/kernelsForLine`. */
export interface KernelsForLineAnswer {
  kernels: KernelForLine[];
}

export interface SourceForLine {
  uri: string;
  range: Range;
  label: string;
}

/** Answer of `kernelscope/sourceForLine`. */
export interface SourceForLineAnswer {
  sources: SourceForLine[];
}

export interface RunListEntry {
  id: number;
  target: string;
  device: string;
  mode: string;
  created: number | string;
  graphs: number;
  kernels: number;
  selected: boolean;
}

/** Answer of the `kernelscope.runs` command. */
export interface RunsAnswer {
  runs: RunListEntry[];
}

export interface OverviewGraph {
  key: string;
  compileId: string;
  kind: string;
  preNodes: number;
  postNodes: number;
  kernels: number;
  uris: { pre_grad?: string; post_grad?: string; wrapper?: string };
}

export interface OverviewKernel {
  id: string;
  name: string;
  kind: string;
  graph: string;
  uri: string | null;
  lines: number | null;
  sourceLines: { uri: string; line: number }[];
}

/**
 * A run's module instances as a tree: sibling instances of the same shape (class,
 * kernels, structure) folded into one group, e.g. `blocks.2–46 (45 × Block)`.
 * A group of one (`folded` false) is an instance with its own submodules as children.
 */
export interface ModuleGroup {
  label: string;
  title: string;
  moduleClass: string;
  members: string[];
  folded: boolean;
  postNodes: number; // each member
  tritonKernels: number; // each member (the same kernels for all)
  externCalls: number; // each member
  children: ModuleGroup[];
}

/** Answer of `kernelscope/runOverview`. */
export interface RunOverview {
  run: {
    id: number;
    target: string;
    device: string;
    mode: string;
    torch: string;
    triton: string;
    created: number | string;
    coverage: Record<string, unknown>;
  };
  graphs: OverviewGraph[];
  kernels: OverviewKernel[];
  graphBreaks: { reason: string; uri: string | null; line: number | null }[];
  recompiles: { compileId: string; reason: string }[];
  // The fusion picture, laid out and drawn by the server (kernelscope/render/fusion.py): an
  // `<svg class="fusion">` (nodes with data-uri/data-line, classes only) or `<p class="empty">`.
  fusionSvg?: string; // absent from servers that predate it
  modules?: ModuleGroup[]; // absent from servers that predate module groups
}

export type ServerState = 'idle' | 'compiling' | 'failed' | 'watching';

/** Params of the `kernelscope/status` notification. */
export interface StatusParams {
  state: ServerState;
  runId: number | null;
  message: string;
  target: string | null;
}

export const Methods = {
  linkedRanges: 'kernelscope/linkedRanges',
  kernelsForLine: 'kernelscope/kernelsForLine',
  sourceForLine: 'kernelscope/sourceForLine',
  runOverview: 'kernelscope/runOverview',
  status: 'kernelscope/status',
} as const;

/** Commands the server lists in executeCommandProvider (workspace/executeCommand). */
export const ServerCommands = {
  compile: 'kernelscope.compile',
  toggleWatch: 'kernelscope.toggleWatch',
  runs: 'kernelscope.runs',
  selectRun: 'kernelscope.selectRun',
} as const;
