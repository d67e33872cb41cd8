"""What the store answers with: plain dataclasses, no database handles.

The CLI prints them, the language server and the TUI turn them into editor
ranges; `dataclasses.asdict` makes any of them JSON.
"""
from __future__ import annotations

from dataclasses import dataclass, field

# Kinds of file a run knows (`Location.kind`).
SOURCE = "source"
PRE_GRAD = "pre_grad"
POST_GRAD = "post_grad"
WRAPPER = "wrapper"
KERNEL = "kernel"
ASM = "asm"  # a kernel's TTIR/TTGIR/PTX/SASS file (below the kernel, kernelscope.store.parts.asm_builds)


@dataclass(frozen=True)
class GraphRef:
    id: int
    key: str  # file-name form, `0_0_0-forward`
    compile_id: str  # display form, `0/0`
    kind: str  # forward | backward | inference
    label: str = ""  # a higher-order op's subgraph: what it is ("cond: true branch of Gate.forward (m.py:25)")

    @property
    def title(self) -> str:
        """How front ends name the graph: `0/0 forward`, or a subgraph's label."""
        return self.label or f"{self.compile_id} {self.kind}"


@dataclass
class Location:
    """What a file is in a run."""

    path: str  # the stored key: workspace-relative, absolute, or `runs/<id>/...`
    kind: str  # source | pre_grad | post_grad | wrapper | kernel | asm
    run_id: int
    absolute_path: str  # where to open it on this machine
    graph: GraphRef | None = None  # generated files only
    kernel: str | None = None  # kernel files (and their stage files) only
    line_count: int | None = None  # generated files only (source files are not copied)

    def require_graph(self) -> GraphRef:
        """The graph of a generated file (every one belongs to a graph; a source file to none)."""
        if self.graph is None:
            raise ValueError(f"{self.path} is a {self.kind} file: it belongs to no graph")
        return self.graph


@dataclass
class SourceRef:
    file: str
    line: int
    function: str
    code: str
    nodes: list[str]  # the nodes that point at this line
    reason: str  # how they point at it (FxNode.source_via, or "graph break")
    # Device time per step of the kernels on this line (a shared kernel counts whole on
    # each of its lines, `shared` then true); None when the run has no profile.
    device_time_us: float | None = None
    shared: bool = False


@dataclass(frozen=True)
class FrameRef:
    """One frame of a node's user call stack."""

    file: str
    line: int
    function: str
    code: str


@dataclass
class NodeRef:
    stage: str  # pre | post
    name: str
    op: str
    target: str
    graph_file: str | None  # the pre_grad.py / post_grad.py file this node is in
    graph_line: int
    source: SourceRef | None  # the node's direct line (innermost user frame)
    reason: str  # why this node is part of the answer, e.g. "stack_trace", "from pre-grad add"
    stack: list[FrameRef] = field(default_factory=list)  # every user frame, outermost first
    module: str = ""  # module instance path, e.g. "blocks.0.attn.qkv" ("" outside submodules)
    module_class: str = ""
    # How a queried *source* line reaches this node: "direct" (the node's own line) or
    # "call" (an outer frame of its stack, e.g. `x = block(x)`); "" for other queries.
    via: str = ""
    lineage: list[str] = field(default_factory=list)  # post-grad: "pass_name (action) from node", latest first
    # a backward node that recomputes a forward op: "recomputed from FILE:LINE (forward node N, why)"
    recomputed_from: str = ""


@dataclass
class ModuleSummary:
    """What one module instance of one graph contributes to an answer."""

    module: str  # instance path ("" = outside any submodule)
    module_class: str
    via: str  # "direct", "call" or "direct+call"
    post_nodes: int
    triton_kernels: list[str]  # Triton and template kernels, by name
    extern_calls: list[str]
    generated_lines: int  # kernel and wrapper lines of its nodes
    source_lines: list[str]  # direct lines of its nodes, "file:line"


@dataclass
class ModuleGroup:
    """Module instances of one graph that a line reaches with links of the same shape,
    folded into one entry (see kernelscope.store.reading.folding): the same class, the same
    Triton kernels (Inductor reuses one kernel for identical layers), the same extern
    ops, the same counts of post-grad nodes and generated lines, the same source lines.
    A group of one is a module instance of its own. Numbers are per member."""

    label: str  # `blocks.2–46` for a folded group, else the one member's path ("" = top level)
    members: list[str]  # instance paths, in natural order (`blocks.2`, ..., `blocks.10`)
    module_class: str
    via: str
    post_nodes: int  # each member
    triton_kernels: list[str]  # each member: the same kernels for all of them
    extern_ops: list[str]  # each member: extern calls by op (`extern_kernels.mm`), one entry per call
    extern_calls: list[str]  # the first member's own extern calls, by name (`extern_kernels.mm#12`)
    generated_lines: int  # each member
    source_lines: list[str]  # "file:line", the same for all members

    @property
    def folded(self) -> bool:
        return len(self.members) > 1


@dataclass
class LineRef:
    file: str
    line: int
    text: str
    reason: str  # e.g. "computes", "loads for", "launches kernel", "allocates for"
    nodes: list[str]  # the post-grad nodes of this line that the query reached
    kernel: str | None = None  # kernel lines only


@dataclass
class KernelRef:
    name: str
    kind: str  # triton | template | extern
    file: str | None  # None for extern kernels
    nodes: list[str]  # the kernel's post-grad nodes that the query reached
    reason: str  # "fused into triton kernel", "calls extern kernel", "launched here"
    lines: list[LineRef] = field(default_factory=list)  # kernel lines of those nodes
    calls: list[LineRef] = field(default_factory=list)  # wrapper lines that launch it
    # Device time per step from an attached profile (`kernelscope profile`, `compile --profile`);
    # None when the run has none. `shared`: a kernel fused from several source lines.
    device_time_us: float | None = None
    shared: bool = False


@dataclass
class GraphChain:
    """The chain through one graph: nodes, what is above them, what is below."""

    graph: GraphRef
    pre_nodes: list[NodeRef] = field(default_factory=list)
    post_nodes: list[NodeRef] = field(default_factory=list)
    sources: list[SourceRef] = field(default_factory=list)  # up: user source lines
    kernels: list[KernelRef] = field(default_factory=list)  # down
    wrapper_lines: list[LineRef] = field(default_factory=list)  # down
    modules: list[ModuleSummary] = field(default_factory=list)  # per module instance, in graph order
    generated_lines: int = 0  # distinct kernel and wrapper lines below the chain's nodes (down)
    # The instances one level below what the nodes share (`blocks.0`, `blocks.1`, ...), folded
    # where they have the same shape; each group names its members (see ModuleGroup).
    groups: list[ModuleGroup] = field(default_factory=list)


@dataclass
class UserKernelRef:
    """A program's own Triton kernel in one graph: its generated copy, the user's function,
    and the autotune configs with the one the run launched (store/parts/user_kernels.py)."""

    kernel: str  # the kernel's name in the run
    graph: GraphRef
    file: str  # the generated copy (kernel file)
    function: str  # the user's kernel function
    source_file: str  # where the user wrote it
    source_line: int  # its `def` line
    configs: list[dict]  # @triton.autotune's configs ({kwargs..., num_warps, num_stages}); [] without autotune
    chosen: dict | None  # the config the run launched (None: no autotune)
    chosen_by: str  # how it was chosen, in words
    heuristics: list[str]  # names @triton.heuristics computes
    launch_lines: list[int]  # the wrapper lines that launch it


@dataclass
class UserKernelLineRef:
    """A line of a user kernel's generated copy and the user's line it was copied from."""

    line: int  # kernel file line
    text: str
    source_file: str
    source_line: int
    source_code: str
    reason: str  # copied from, decorator of, configs and launch metadata of


@dataclass
class UserKernelCopy:
    """One generated copy of a user kernel and the lines of it an answer reaches."""

    kernel: UserKernelRef
    lines: list[UserKernelLineRef] = field(default_factory=list)


@dataclass
class KernelPartRef:
    """One sub-kernel of a foreach/combo kernel (a compiled optimizer step's
    `triton_for_fused_*`): its lines, its nodes and their lines, and the optimizer parameters
    it updates (store/parts/kernel_parts.py)."""

    kernel: str
    graph: GraphRef
    file: str  # the kernel file
    part: int  # its `if pid < num_xblocks_<part>:` block
    first_line: int
    last_line: int
    nodes: list[str]
    params: list[dict]  # {group, index, name, shape}: `param_groups[group]["params"][index]`
    sources: list[str] = field(default_factory=list)  # its nodes' own lines: `torch/optim/sgd.py:429 _multi_tensor_sgd`
    called_from: list[str] = field(default_factory=list)  # the outermost user lines: `examples/sgd_step.py:31 main`


@dataclass
class QueryResult:
    """The answer of `StoreBackend.query`. With `detail=False` kernels carry no lines and
    graphs no wrapper lines: only counts (GraphChain.generated_lines, modules)."""

    location: Location
    line: int
    text: str  # the queried line's text ("" when the source file is not on this machine)
    direction: str  # up | down | both
    origins: list[LineRef] = field(default_factory=list)  # generated start: the recorded rows of the line
    graphs: list[GraphChain] = field(default_factory=list)
    profile: dict | None = None  # the run's profile summary (step time, outside-graph time), if any
    # A program's own Triton kernel: a kernel line's user kernel (with the user's line it was
    # copied from); a user kernel's source line, each generated copy of it.
    user_kernels: list[UserKernelCopy] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not self.user_kernels and not any(chain.pre_nodes or chain.post_nodes or chain.kernels
                                                 for chain in self.graphs)


@dataclass
class GraphOverview:
    """What one source line became in one graph, counted (no line lists): the default
    answer of `kernelscope query` for a source line, read from the store's line overviews."""

    graph: GraphRef
    pre_nodes: int
    post_nodes: int
    called_nodes: int  # of them, reached through an outer frame (`x = block(x)`)
    triton_kernels: int
    extern_calls: int
    generated_lines: int  # distinct kernel and wrapper lines below the nodes
    modules: list[ModuleSummary]  # per instance one level below what the nodes share, in graph order
    groups: list[ModuleGroup]  # `modules` folded (instances with links of the same shape)


@dataclass
class LineOverview:
    """One source line's answer as counts per graph and module group. Computed once per
    run and file when the run is written (kept in the store), so it costs an index probe
    however deep the model; agrees with `StoreBackend.query(..., detail=False, rollup=True)`."""

    location: Location
    line: int
    text: str  # the line's text ("" when the source file is not on this machine)
    graphs: list[GraphOverview] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not any(graph.pre_nodes or graph.post_nodes or graph.triton_kernels or graph.extern_calls
                       for graph in self.graphs)


@dataclass
class InstanceGroup:
    """Sibling module instances of a run (children of one parent) with the same class,
    kernels and structure, folded: what a module list shows (TUI filter, VS Code overview).
    A group of one is an instance of its own, with its own submodules as `children`."""

    label: str  # `blocks.2–46`, or the one member's path
    members: list[str]  # natural order
    module_class: str
    post_nodes: int  # each member
    triton_kernels: list[str]  # each member (the same for all): `graph kind/kernel name`
    extern_calls: int  # each member
    children: list[InstanceGroup] = field(default_factory=list)  # unfolded groups only

    @property
    def folded(self) -> bool:
        return len(self.members) > 1


@dataclass
class LineLinks:
    """One line of a file and what it is linked to (for code lenses, inlay hints)."""

    line: int
    graphs: list[str]  # compile ids with kind, e.g. "0/0 forward"
    kernels: list[str]
    nodes: list[str]
    reasons: list[str]
    device_time_us: float | None = None  # source files of a profiled run: as SourceRef.device_time_us
    shared: bool = False


@dataclass
class FileLinks:
    location: Location
    lines: list[LineLinks]
    profile: dict | None = None  # the run's profile summary (step time, ...), if it has one


@dataclass
class RunSummary:
    id: int
    created: float
    target: str
    device: str
    mode: str
    dynamic: bool
    provenance: str
    torch_version: str
    triton_version: str
    graph_count: int
    kernel_count: int
    coverage: dict


@dataclass
class SubgraphRef:
    """A graph that is a higher-order op's subgraph (a `torch.cond` branch, a nested
    compile region), nested in the graph whose op calls it."""

    name: str  # Inductor's name: true_graph_0, repeated_subgraph0
    op: str  # cond, while_loop, invoke_subgraph, scan, map_impl, ...
    role: str  # true branch, false branch, cond, body, region, ...
    parent: str  # the parent graph's key
    call_sites: list[str]  # the parent's post-grad nodes that call it
    label: str  # "cond: true branch of Gate.forward (cond_branch.py:25)"


@dataclass
class RecomputeRef:
    """A backward post-grad node that computes a forward op again: inside a
    `torch.utils.checkpoint` region ("activation checkpointing"), or because the
    partitioner found it cheaper to recompute than to save ("partitioner")."""

    graph: str  # the backward graph's title
    node: str  # the backward node
    target: str
    why: str  # "activation checkpointing" | "partitioner"
    forward_graph: str  # the forward graph's title ("" when no forward twin was found)
    forward_node: str  # the forward node it recomputes ("" when none was found)
    forward_source: str  # that node's line, "file:line" ("" when unknown)
    kernels: list[str]  # the backward kernels (and extern calls) that compute it

    @property
    def text(self) -> str:
        """`addmm_3 recomputed from examples/m.py:29 (forward node addmm, activation checkpointing)`."""
        where = self.forward_source or "the forward"
        twin = f"forward node {self.forward_node}, " if self.forward_node else ""
        return f"{self.node} recomputed from {where} ({twin}{self.why})"


@dataclass
class RecomputeSummary:
    """What one backward graph computes again of the forward (activation checkpointing)."""

    nodes: dict[str, int]  # why ("activation checkpointing", "partitioner") -> recomputed nodes
    forward_lines: list[str]  # the lines they recompute, "file:line"
    kernels: list[str]  # the backward kernels and extern calls that compute them


@dataclass
class GraphSummary:
    key: str
    compile_id: str
    kind: str
    pre_nodes: int
    post_nodes: int
    kernels: int
    files: dict[str, str]  # pre_grad / post_grad / wrapper -> stored path
    subgraph: SubgraphRef | None = None  # set for a higher-order op's subgraph
    recomputed: RecomputeSummary | None = None  # a backward graph that recomputes forward ops

    @property
    def label(self) -> str:
        """What the graph is: `0/0 inference`, or a subgraph's label."""
        return self.subgraph.label if self.subgraph is not None else f"{self.compile_id} {self.kind}"


@dataclass
class KernelSummary:
    graph: str  # graph key
    name: str
    kind: str
    file: str | None
    nodes: list[str]
    line_count: int | None
    # Device time per step from an attached profile (`kernelscope profile`, `compile --profile`);
    # None when the run has none. `shared`: a kernel fused from several source lines.
    device_time_us: float | None = None
    shared: bool = False


@dataclass
class GraphBreakInfo:
    reason: str  # what Dynamo could not trace
    compile_id: str
    file: str | None
    line: int | None
    function: str
    code: str
    explanation: str = ""
    hints: list[str] = field(default_factory=list)  # e.g. the config that would avoid the break
    url: str = ""
    stack: list[FrameRef] = field(default_factory=list)  # user code traceback, outermost first


@dataclass
class RecompileInfo:
    compile_id: str
    reason: str


@dataclass
class RunDetails:
    summary: RunSummary
    workspace: str
    graphs: list[GraphSummary]
    kernels: list[KernelSummary]
    graph_breaks: list[GraphBreakInfo]
    recompiles: list[RecompileInfo]
    warnings: list[str]
    timings: dict[str, float]
    peak_memory_mb: float
    execute_max_error: float | None
    config: dict
