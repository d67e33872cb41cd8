/**
 * The kernelscope language server's custom messages, as typed data (see the
 * requests in docs/lsp.md, "What it does"). Plain types only: no
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

/** `asm`: a kernel's PTX or SASS lines (below the kernel, once built). */
export type LinkRole = 'source' | 'pre_grad' | 'post_grad' | 'kernel' | 'wrapper' | 'asm';

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

/** A run's place in a distributed job (absent for a run of one process). */
export interface RankInfo {
  rank: number;
  worldSize: number;
  backend?: string;
  job?: string;
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
  rank?: RankInfo | null; // absent from servers that predate distributed jobs
}

/** Answer of the `kernelscope.runs` command. */
export interface RunsAnswer {
  runs: RunListEntry[];
}

export interface OverviewGraph {
  key: string;
  compileId: string;
  kind: string;
  /** `0/0 forward`, or a higher-order op's subgraph: `cond: true branch of Gate.forward (m.py:25)`. */
  label?: string;
  /** A subgraph's parent graph key; null for a graph of its own. */
  parent?: string | null;
  preNodes: number;
  postNodes: number;
  kernels: number;
  uris: { pre_grad?: string; post_grad?: string; wrapper?: string };
}

/** A kernel compiled below Triton for the run's GPU: its resources, or why it could not be built. */
export interface KernelAsm {
  error?: string | null;
  arch?: string;
  registers?: number;
  spillBytes?: number;
  localBytes?: number;
  sharedBytes?: number;
  occupancy?: number; // share of the SM's warps, 0..1
  limitedBy?: string;
  instructions?: number;
  config?: string;
  sassUri?: string | null;
  ptxUri?: string | null;
}

export interface OverviewKernel {
  id: string;
  name: string;
  kind: string;
  graph: string;
  uri: string | null;
  lines: number | null;
  sourceLines: { uri: string; line: number }[];
  asm?: KernelAsm | null; // null: not built yet
}

/** One collective of a graph, worded as `kernelscope show` words it. */
export interface OverviewCollective {
  text: string;
  op: string;
  role: string;
  module: string;
  modelUri: string | null;
  modelLine: number | null;
  wrapperLines: number[];
}

export interface OverviewCommGraph {
  graph: string;
  split: string | null;
  wrapperUri: string | null;
  order: string; // "2 compute -> all_gather_into_tensor -> wait -> ..."
  steps: { line: number; kind: string; name: string }[];
  collectives: OverviewCollective[];
}

/** A distributed run: its rank, the job's ranks, which compiled identical code, each graph's order. */
export interface OverviewDistributed {
  rank: (RankInfo & { label: string }) | null;
  ranks: { rank: number; runId: number }[];
  code: string[];
  graphs: OverviewCommGraph[];
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
    rank?: RankInfo | null;
  };
  graphs: OverviewGraph[];
  kernels: OverviewKernel[];
  graphBreaks: { reason: string; uri: string | null; line: number | null }[];
  recompiles: { compileId: string; reason: string }[];
  // The fusion picture, laid out and drawn by the server (kernelscope/render/fusion.py): an
  // `<svg class="fusion">` (nodes with data-uri/data-line, classes only) or `<p class="empty">`.
  fusionSvg?: string; // absent from servers that predate it
  // The memory picture (kernelscope/render/memory_svg.py): each graph's bytes live over its
  // allocation timeline, the peak marked (data-uri/data-line of its wrapper line), classes only;
  // or `<p class="empty">` for a run that recorded no memory.
  memorySvg?: string; // absent from servers that predate it
  modules?: ModuleGroup[]; // absent from servers that predate module groups
  asm?: { buildable: number; built: number; failed: number }; // Triton kernels below Triton
  distributed?: OverviewDistributed | null; // null: a run of one process
}

export interface AsmStageLines {
  uri: string;
  focus?: number; // the line to open it at (SASS: the line's most notable instruction, e.g. MUFU.EX2)
  ranges: Range[];
}

/** One kernel of `kernelscope/asmForLine`: its build below Triton and this line's PTX/SASS lines. */
export interface AsmKernel {
  name: string;
  kernelUri: string;
  status: 'built' | 'not built' | 'failed';
  facts: string | null;
  error: string | null;
  stages: { ptx?: AsmStageLines; sass?: AsmStageLines; x86?: AsmStageLines }; // x86: a C++ kernel's
}

/** Answer of `kernelscope/asmForLine`. */
export interface AsmForLineAnswer {
  kernels: AsmKernel[];
  how: string; // how to build what is not built ("" when nothing is missing)
}

/** Answer of the `kernelscope.buildAsm` command. */
export interface BuildAsmAnswer {
  runId: number;
  asked: number;
  built: number;
  failed: string[];
  seconds: number;
}

export type ServerState = 'idle' | 'compiling' | 'failed' | 'watching';

/** Params of the `kernelscope/status` notification. */
export interface StatusParams {
  state: ServerState;
  runId: number | null;
  message: string;
  target: string | null;
  rank?: string | null; // "1/2": the shown run's rank in its distributed job
  trusted?: boolean; // false: the server was told the workspace is not trusted (it compiles nothing)
}

export const Methods = {
  linkedRanges: 'kernelscope/linkedRanges',
  kernelsForLine: 'kernelscope/kernelsForLine',
  sourceForLine: 'kernelscope/sourceForLine',
  runOverview: 'kernelscope/runOverview',
  asmForLine: 'kernelscope/asmForLine',
  status: 'kernelscope/status',
} as const;

/** Commands the server lists in executeCommandProvider (workspace/executeCommand). */
export const ServerCommands = {
  compile: 'kernelscope.compile',
  toggleWatch: 'kernelscope.toggleWatch',
  runs: 'kernelscope.runs',
  selectRun: 'kernelscope.selectRun',
  buildAsm: 'kernelscope.buildAsm',
} as const;

/** Error codes of the server's answers (kernelscope/lsp/server.py, features/commands.py). */
export const ErrorCodes = {
  compileFailed: -32001,
  busy: -32002,
  /** A compile, watch or PTX/SASS build refused: the workspace is not trusted. */
  untrusted: -32003,
} as const;
