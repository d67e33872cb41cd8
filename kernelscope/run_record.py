"""The recording of one compile session, as plain data.

This is the contract between the engine (which fills it while torch.compile runs)
and the store (which writes it to SQLite and files). It never imports torch, so
the store, the CLI and the front ends can use it without paying for torch.

Names used throughout:
- a *graph* is one Inductor compilation: a compile id (`[frame/attempt]`) plus a
  kind (`forward`, `backward`, `inference`);
- a *pre-grad node* is a node of the graph Dynamo captured (before Inductor's
  passes), a *post-grad node* one of the graph Inductor lowered;
- a *generated line* is a line of a Triton kernel or of the Python wrapper,
  linked to the post-grad nodes it came from and why.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

# Reason prefix of kernel lines tied to the whole fused kernel (index set-up, masks)
# rather than to the one node that produced them.
SHARED_LINE_REASON_PREFIX = "shared:"
# Reason of a template kernel's own lines (Triton's GEMM/FlexAttention templates, C++ GEMM
# templates): they compute the template's node; its fused epilogue's lines link to theirs.
TEMPLATE_REASON = "template code of"


@dataclass(frozen=True)
class SourceLocation:
    """A line of user (or library) Python source."""

    file: str  # absolute path as recorded; the store makes it workspace-relative
    line: int
    function: str = ""
    code: str = ""


@dataclass(frozen=True)
class PassStep:
    """One step of a post-grad node's pass lineage (FX `from_node` provenance):
    pass `pass_name` made this node (`action`: create, replace) from node `node`."""

    pass_name: str
    action: str  # "create", "replace" or "replace+create"
    node: str  # the node it was made from ("" when the pass created it from nothing)


@dataclass
class FxNode:
    name: str
    op: str  # call_function, placeholder, output, ...
    target: str  # e.g. aten.addmm.default
    source: SourceLocation | None = None  # innermost user frame (the node's *direct* line)
    source_via: str = ""  # how `source` was found: "stack_trace", "forward seq_nr"
    graph_line: int = 0  # line of this node in the rendered graph file
    from_pre_grad: list[str] = field(default_factory=list)  # post-grad only
    # Every user frame of the call stack, outermost first; the last is `source`
    # (the stack of the node `source` was borrowed from, when it was borrowed).
    stack: list[SourceLocation] = field(default_factory=list)
    module_path: str = ""  # module instance, e.g. "blocks.0.attn.qkv" ("" outside any submodule)
    module_class: str = ""  # e.g. "torch.nn.modules.linear.Linear"
    lineage: list[PassStep] = field(default_factory=list)  # post-grad only, latest pass first
    # A backward node that recomputes a forward op (engine/recompute.py): why ("activation
    # checkpointing", "partitioner"), and the forward graph's node it recomputes ("" if none found).
    recompute: str = ""
    recomputed_from: str = ""


@dataclass
class LineOrigin:
    """One generated line and the post-grad nodes it came from."""

    line: int
    text: str
    nodes: list[str]  # of this graph; `sdpa_mask0.ge`: node ge of its subgraph sdpa_mask0 (subgraph_node)
    reason: str  # e.g. "computes", "loads for", "launches kernel", "allocates for"


def subgraph_node(subgraph: str, node: str) -> str:
    """How a graph's line names a node of one of its subgraphs (a FlexAttention template's
    line computing the mask_mod's `ge`: `sdpa_mask0.ge`); FX names have no dot."""
    return f"{subgraph}.{node}"


def in_subgraph(name: str) -> bool:
    """Whether a node name of a line or kernel names a node of a subgraph (subgraph_node)."""
    return "." in name


@dataclass
class UserKernelLine:
    """A line of a program's own Triton kernel as Inductor copied it, and the user's line."""

    line: int  # line of the kernel file
    source: SourceLocation  # the user's line it is a copy of (or, for a decorator, stands for)
    reason: str  # "copied from", "decorator of", "configs and launch metadata of"


@dataclass
class UserKernel:
    """A kernel the program wrote itself (`@triton.jit`, `@triton.autotune`, `wrap_triton`):
    its generated copy's lines linked to the user's source, and the config the run launched
    (engine/user_kernels.py)."""

    function: str  # the kernel's Python function name
    source: SourceLocation  # its `def` line in the user's file
    lines: list[UserKernelLine] = field(default_factory=list)
    configs: list[dict] = field(default_factory=list)  # @triton.autotune's configs ({kwargs, num_warps, num_stages})
    chosen: dict | None = None  # the config the run launched (None: no autotune)
    chosen_by: str = ""  # how it was chosen, in words
    heuristics: list[str] = field(default_factory=list)  # names @triton.heuristics computes


@dataclass
class OptimizerParam:
    """A parameter of an optimizer's `param_groups`, as a compiled step's kernel updates it."""

    group: int  # its param_groups index
    index: int  # its place in that group's `params`
    name: str  # its name when the optimizer was built from named parameters, else ""
    shape: list[int] = field(default_factory=list)


@dataclass
class KernelPart:
    """One sub-kernel of a foreach/combo kernel (`triton_for_fused_*`): its block of lines
    (`if pid < num_xblocks_<index>:` ... ), the nodes it computes and, in a compiled
    optimizer step, the parameters it updates (engine/optimizer_params.py)."""

    index: int
    first_line: int  # of the kernel file
    last_line: int
    nodes: list[str] = field(default_factory=list)
    params: list[OptimizerParam] = field(default_factory=list)


@dataclass
class Kernel:
    name: str
    kind: str  # "triton" | "extern" | "template" | "cpp" (Inductor's C++ backend: stored as a .cpp file)
    source: str  # full kernel module text ("" for extern calls)
    nodes: list[str]  # kernel-level set of post-grad nodes (our probes)
    lines: list[LineOrigin] = field(default_factory=list)  # kernel body lines
    inductor_nodes: list[str] | None = None  # Inductor's own kernel->node mapping
    wrapper_lines: list[int] = field(default_factory=list)  # launch/call sites
    # --target cuda: the config its autotuner launched and what the GPU reported for it
    # ({"config", "candidates", "registers", "spills", "shared_bytes", "replayed_from"};
    # engine/asm_launches.py); virtual-cuda: the same, replayed from a GPU's recorded
    # decisions (`replayed_from` names them; docs/decisions.md)
    launch: dict | None = None
    user: UserKernel | None = None  # a program's own Triton kernel (engine/user_kernels.py)
    parts: list[KernelPart] = field(default_factory=list)  # a foreach/combo kernel's sub-kernels


@dataclass
class Collective:
    """A communication op of a post-grad graph (torch.distributed's functional
    collectives, which DTensor and Inductor emit) and why it is there.

    `role`: "issue" starts a collective, "wait" waits on one (`wait_tensor`), "fused"
    communicates and computes in one op (async-TP's fused all-gather matmul)."""

    node: str  # the post-grad node
    op: str  # all_reduce, all_gather_into_tensor, reduce_scatter_tensor, wait_tensor, ...
    role: str  # "issue" | "wait" | "fused"
    peers: list[str] = field(default_factory=list)  # issue: its wait nodes; wait: what it waits on
    group: str = ""  # process-group name as the graph passes it
    group_size: int | None = None
    reduce_op: str = ""  # "sum", "avg", ... (reductions only)
    bytes: int | None = None  # size of the tensor the op produces
    # What in torch issued it: a ParallelStyle's hook ("RowwiseParallel output"), a DTensor
    # call ("DTensor.redistribute"), or DTensor's sharding propagation of the op on the
    # model line (an implicit redistribution: "implicit in aten.mm").
    issued_by: str = ""
    style: str = ""  # the ParallelStyle class (ColwiseParallel, RowwiseParallel, ...), "" if none
    frame: SourceLocation | None = None  # the frame that issued it (style.py:298, a helper's redistribute call)
    redistribute: str = ""  # DTensor placements before -> after, e.g. "P(sum) -> R"
    # The model line whose op needed the communication: the node's own line, or, when
    # that line is a parallelization helper calling DTensor itself (torchtitan's
    # `_redistribute_inputs`), the innermost line outside the helper's file.
    model_line: SourceLocation | None = None


@dataclass
class GraphSplit:
    """A graph that is one part of a Dynamo graph split by DDP's optimizer at gradient
    bucket boundaries (`torch._dynamo.config.optimize_ddp`)."""

    part: int  # 0-based, in forward order (DDPOptimizer's submod_<part>)
    parts: int
    params: list[str] = field(default_factory=list)  # the parameters of this part's bucket
    bucket_bytes: int = 0
    cap_bytes: int = 0  # DDP's bucket_cap_mb in bytes
    splitter: str = "DDPOptimizer"


@dataclass
class Subgraph:
    """A graph that is a higher-order op's subgraph, compiled inside its parent graph:
    `torch.cond`'s branches, `while_loop`'s cond and body, a nested compile region
    (`invoke_subgraph`: compiled once, called from each call site), `scan`'s and `map`'s body."""

    name: str  # Inductor's name for it, qualified by its parent's: `true_graph_0`, `repeated_subgraph0`
    op: str  # the higher-order op: cond, while_loop, invoke_subgraph, scan, map_impl, ...
    role: str  # "true branch", "false branch", "cond", "body", "region", "combine_fn", "subgraph"
    parent: str  # the parent graph's key (GraphRecord.key)
    call_sites: list[str] = field(default_factory=list)  # the parent's post-grad nodes that call it
    label: str = ""  # "cond: true branch of Gate.forward (cond_branch.py:25)"


@dataclass
class MemoryBuffer:
    """One tensor of a graph's allocation timeline (docs/memory.md): a buffer the wrapper
    allocates, or a graph input (held by the caller for the whole call; a backward's saved
    activations and tangents only by the call, freed at their `del`: wrapper_memory.owned_inputs)."""

    name: str  # the wrapper's name: buf3, primals_1, addmm (a backward input)
    node: str  # the post-grad node that produced it ("" for an input)
    kind: str  # "buffer" | "input"
    bytes: int  # storage bytes at the example inputs' sizes (symbolic sizes at their hints)
    dtype: str  # torch.float32
    shape: str  # "16x128"
    allocated_line: int = 0  # wrapper line that allocates it (0: an input)
    freed_line: int = 0  # wrapper line of its `del` (0: still live when the graph returns, or held by the caller)
    reused_by: str = ""  # the buffer that took its storage over (`# reuse`)
    live_at_peak: bool = False
    is_output: bool = False
    # forward graphs: what the partitioner saves for the backward (the forward's extra
    # outputs), the backward kernels that read it
    saved_for_backward: bool = False
    read_by: list[str] = field(default_factory=list)
    from_forward: bool = False  # a backward's input that is a saved activation: `node` is the forward's


@dataclass
class MemoryEvent:
    """One step of a graph's allocation timeline."""

    line: int  # wrapper line
    action: str  # "allocate" | "reuse" | "free"
    buffer: str
    bytes: int  # bytes this step allocates (+) or frees (-); 0 for a reuse
    live_bytes: int  # bytes live after it, graph inputs included


@dataclass
class GraphMemory:
    """A graph's memory as its wrapper allocates it, sized from Inductor's IR at codegen."""

    peak_bytes: int  # inputs + the most the wrapper's own buffers hold at once
    peak_line: int  # wrapper line where the peak is reached
    inputs_bytes: int
    buffers: list[MemoryBuffer] = field(default_factory=list)
    timeline: list[MemoryEvent] = field(default_factory=list)
    # backward graphs: post-grad nodes the partitioner recomputes here instead of saving them
    recomputed: list[str] = field(default_factory=list)
    # the file Inductor writes the wrapper to and runs it from (its cache: <dir>/<xx>/<hash>.py,
    # the hash of the wrapper's text): what a measured step's allocation frames name
    wrapper_file: str = ""


@dataclass
class MeasuredLine:
    """What a measured step allocated from one wrapper line (engine/memory_measure.py)."""

    graph: str  # graph key
    line: int  # wrapper line
    allocations: int
    bytes: int


@dataclass
class MeasuredMemory:
    """The compiled step run once more with its allocations recorded (`--memory`): the CUDA
    caching allocator's history on a GPU, the CPU allocator through torch.profiler on
    cpu-triton --execute; each allocation joined to the wrapper line that made it."""

    device: str  # cuda | cpu
    method: str  # how it was measured, in words
    before_bytes: int  # allocated before the step (parameters, inputs, ...)
    peak_bytes: int  # the most allocated during the step, above before_bytes
    allocations: int  # allocations during the step
    joined: int  # of them, made on a wrapper line of one of the run's graphs
    joined_bytes: int
    lines: list[MeasuredLine] = field(default_factory=list)


@dataclass
class EagerLine:
    """What eager PyTorch saves for the backward at one model line (in one module instance)."""

    source: SourceLocation
    module: str = ""
    bytes: int = 0
    tensors: int = 0  # distinct storages saved


@dataclass
class EagerMemory:
    """The model run eagerly under saved-tensor hooks (`--against-eager`; engine/eager_memory.py)."""

    device: str  # where it ran: cpu, meta
    saved_bytes: int  # activations saved for the backward
    saved_inputs_bytes: int  # parameters, buffers and inputs saved too (held by the caller anyway)
    lines: list[EagerLine] = field(default_factory=list)


@dataclass
class GraphRecord:
    frame_id: int
    frame_compile_id: int
    attempt: int
    kind: str  # "forward" | "backward" | "inference"
    pre_grad_text: str = ""
    post_grad_text: str = ""
    wrapper_text: str = ""
    pre_grad_nodes: list[FxNode] = field(default_factory=list)
    post_grad_nodes: list[FxNode] = field(default_factory=list)
    kernels: list[Kernel] = field(default_factory=list)
    wrapper_lines: list[LineOrigin] = field(default_factory=list)
    wrapper_attributable: int = 0  # wrapper lines that should carry provenance
    inductor_mapping: dict | None = None  # raw inductor_provenance_tracking_node_mappings
    collectives: list[Collective] = field(default_factory=list)
    split: GraphSplit | None = None  # a DDP split part
    subgraph: Subgraph | None = None  # a higher-order op's subgraph, nested in its parent graph
    not_fused: list[NotFused] = field(default_factory=list)  # fusions Inductor's scheduler refused (why)
    memory: GraphMemory | None = None  # the allocation timeline (engine/memory.py)
    # The wrapper's language: "python" (Inductor's default), "cpp" (AOTInductor's wrapper,
    # or `cpp_wrapper` mode's): the store keeps it as wrapper.py or wrapper.cpp.
    wrapper_language: str = "python"

    @property
    def compile_id(self) -> str:
        """Display form, as Dynamo and tlparse print it: `0/1` (attempt as `_N`)."""
        suffix = f"_{self.attempt}" if self.attempt else ""
        return f"{self.frame_id}/{self.frame_compile_id}{suffix}"

    @property
    def key(self) -> str:
        """File-name form, unique within a run: `0_1_0-forward` (`0_1_0-forward-part2`
        for part 2 of a graph DDP's optimizer split, `0_1_0-forward-true_graph_0` for a subgraph)."""
        part = f"-part{self.split.part}" if self.split is not None else ""
        sub = f"-{self.subgraph.name}" if self.subgraph is not None else ""
        return f"{self.frame_id}_{self.frame_compile_id}_{self.attempt}-{self.kind}{part}{sub}"


@dataclass
class GraphBreak:
    reason: str  # what Dynamo could not trace, e.g. "Unsupported Tensor.item() call with ..."
    source: SourceLocation | None  # the user line that broke the graph
    compile_id: str = ""
    explanation: str = ""  # Dynamo's "Explanation:"
    hints: list[str] = field(default_factory=list)  # Dynamo's "Hint:" lines (configs to set, ...)
    url: str = ""  # Dynamo's page about this kind of graph break
    stack: list[SourceLocation] = field(default_factory=list)  # user code traceback, outermost first


@dataclass
class Recompile:
    compile_id: str
    reason: str
    failures: list[GuardFailure] = field(default_factory=list)  # each cached compile's failed guard (why)


@dataclass
class RankInfo:
    """Where a run sits in a torch.distributed job."""

    rank: int
    world_size: int
    job: str  # runs of one job share it (see engine/rank_info.py)
    backend: str = ""  # gloo, nccl, fake, ...
    local_rank: int | None = None


@dataclass
class Decision:
    """A choice Inductor makes by timing on the GPU (or by a measurement of it), and how
    this run made it (docs/decisions.md).

    Kinds, each keyed by Inductor's own cache key: `pad_mm` (pad a matmul or not;
    pad_mm's `should_pad_bench_key`), `mm_compute_bound` (pad_mm's test whether the
    matmul is compute bound, from the GPU's clocks and bandwidth), `autotune` (the
    timings of max-autotune's GEMM/convolution choices; select_algorithm's op, inputs
    key and matmul precision), `fusion_benchmark` (a fused kernel timed to decide a
    fusion; the benchmarked module's code) and `triton_config` (the launch config a
    Triton kernel's autotuner kept; the kernel's name and code)."""

    kind: str
    key: str
    choice: str  # what was decided: "pad", "no pad", a choice, a config label, a time
    origin: str  # "timed" (on the GPU) | "heuristic" (Inductor decided without timing) | "replayed" | "guessed"
    rule: str  # how, in words: "timed on the GPU", "replayed from run 3", the rule of a guess
    summary: str = ""  # what was decided on: op, shapes, dtypes
    where: str = ""  # the compile id it was made in (`0/0`), or the graph key of a kernel
    kernel: str = ""  # triton_config: the kernel's name
    timings: dict[str, float | None] = field(default_factory=dict)  # ms per option (None: failed)
    detail: dict = field(default_factory=dict)  # per kind: a config, the candidates, ...


@dataclass
class DecisionReplay:
    """virtual-cuda with `--decisions`: where the replayed decisions came from."""

    source: str  # "run 3 of .kernelscope", "gpu.json", ...
    recorded_on: dict  # their GPU, torch and triton versions, target and device
    unused: list[Decision] = field(default_factory=list)  # recorded, but no compile of this run asked for them


# -- why: guards, recompiles and fusion refusals (docs/why.md) ---------------------------


@dataclass
class Guard:
    """A guard a compile installed: the check a later call must pass to reuse the compile.

    `kind`: "shape" (the shape environment's guard on a symbolic size: `expression` is in
    the user's names, `x.size()[0] <= 4`), "specialization" (a size made static), or
    Dynamo's guard type (`TENSOR_MATCH`, `ID_MATCH`, `LAMBDA_GUARD`, ...)."""

    compile_id: str  # "0/1"
    kind: str
    expression: str  # in the user's names where the symbols' sources are known
    raw: str = ""  # as the shape environment wrote it ("s77 <= 4"); "" for Dynamo's guards
    symbols: dict[str, str] = field(default_factory=dict)  # symbol -> its source ("s77" -> "x.size()[0]")
    # Who added it: "user code" (traced from the line), "dynamo", or the torch frame that
    # asked the shape environment, e.g. "inductor (_inductor/scheduler.py:4012 in can_fuse)".
    added_by: str = ""
    source: SourceLocation | None = None  # the user line that caused it
    source_via: str = ""  # "guard" (its own user stack) | "symbol" (the line that made the symbol)
    stack: list[SourceLocation] = field(default_factory=list)  # user frames, outermost first


@dataclass
class GuardFailure:
    """One guard of a cached compile that failed, so that a call compiled again."""

    failed_compile_id: str  # the cached compile whose guard failed ("0/1")
    guard: str  # the failed check as Dynamo says it ("2 <= x.size()[0] <= 4", "tensor 'x' size mismatch ...")
    values: dict[str, str] = field(default_factory=dict)  # what the failing call had ("x.size()[0]": "8")
    lines: list[SourceLocation] = field(default_factory=list)  # the user lines Dynamo names for it


@dataclass
class NotFused:
    """Two groups of post-grad nodes that ended in different kernels, and why (docs/why.md).

    `cause`: "scheduler" (Inductor's scheduler considered fusing them and refused:
    WhyNoFuse's reason), "extern" (one side is an extern call, e.g. `extern_kernels.mm`,
    which fuses nothing), "template" (the scheduler refused a template's epilogue or
    prologue), "realized buffer" (Inductor stored side 1's value in a buffer instead of
    computing it inside side 2's kernel) or "graph break" (the two sides are in different
    graphs: `other_graph` names side 2's)."""

    node1: str  # scheduler names (op3, op2_op6_op7); the kernel's name for an extern side; "" else
    node2: str
    nodes1: list[str]  # the post-grad nodes each computes
    nodes2: list[str]
    reason: str  # WhyNoFuse's reason, e.g. "no shared data"; for the other causes, ours
    cause: str = "scheduler"
    other_graph: str = ""  # side 2's graph key when it is not this graph's (a graph break)


@dataclass
class NumericsOutput:
    """One buffer one kernel launch wrote, compared with eager's value of the post-grad node
    the kernel stores there (engine/numerics/; docs/numerics.md)."""

    launch: int  # place in the run's launch order (forward, then backward)
    graph: str  # the graph's key
    kernel: str
    arg: str  # the kernel's pointer argument (out_ptr0, in_out_ptr0); an extern call's: out, or out[i] of a tuple
    node: str  # the post-grad node whose value it stores ("" when none is known)
    dtype: str  # the buffer's dtype (float16, ...)
    source: SourceLocation | None  # the node's model line
    rtol: float
    atol: float
    max_abs: float | None  # compiled vs eager (None: not compared, `note` says why)
    max_rel: float | None
    mismatched: int = 0  # elements beyond atol + rtol * |eager|
    elements: int = 0
    compiled_vs_fp64: float | None = None  # max abs error of the kernel against the float64 judge
    eager_vs_fp64: float | None = None  # max abs error of eager against the float64 judge
    note: str = ""

    @property
    def over(self) -> bool:
        return self.mismatched > 0


@dataclass
class NumericsDivergence:
    """Where compiled and eager first part ways: the first launched kernel with an output
    beyond tolerance, and inside it the first fused node that diverges."""

    launch: int
    graph: str
    kernel: str
    node: str
    target: str  # the node's op, e.g. aten.mul.Tensor
    source: SourceLocation | None
    max_abs: float
    max_rel: float
    # "precision": evaluating the kernel's fused nodes in its compute precision (float32)
    # diverges from eager at this node; "order": it does not (the kernel's reduction order
    # or algorithm differs), the node is the kernel's reduction or the diverging output;
    # "extern": an extern kernel or fallback op (eager's own op) diverges first.
    cause: str
    why: str  # in words
    compiled_vs_fp64: float | None = None
    eager_vs_fp64: float | None = None


@dataclass
class NumericsFix:
    """A recompile that tries to make the divergence go away, and what it did."""

    kind: str  # "eager_line" (the line's nodes left to eager) | "emulate_precision_casts"
    what: str  # "examples/x.py:13 left to eager", "config.emulate_precision_casts=True"
    gone: bool  # no kernel output beyond tolerance any more
    first_divergence: NumericsDivergence | None = None  # what remains
    error: str = ""  # the recompile failed: why


@dataclass
class NumericsReport:
    """`kernelscope numerics`: every kernel output of the run compared with eager."""

    target: str  # cuda | cpu-triton
    rtol: float | None  # given on the command line; None: per dtype (docs/numerics.md)
    atol: float | None
    outputs: list[NumericsOutput] = field(default_factory=list)
    first_divergence: NumericsDivergence | None = None
    fixes: list[NumericsFix] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)  # compiled, reference, analysis


@dataclass
class AotPackage:
    """The `.pt2` package an `--aot` build wrote (engine/aot_build.py): where the engine left it
    (the store copies it into the run's folder, store/paths.py AOT_PACKAGE), its size and the
    files it holds (paths inside the zip)."""

    local_path: str
    bytes: int
    files: list[str] = field(default_factory=list)


@dataclass
class RunRecord:
    target: str  # "examples/mlp.py:make" or "script.py"
    device: str  # cuda | virtual-cuda | cpu-triton
    mode: str  # "inference" | "train"
    dynamic: bool
    torch_version: str
    triton_version: str
    provenance: str  # "line" or "kernel" (probes off)
    created: float  # unix time
    workspace: str  # absolute path sources are made relative to
    graphs: list[GraphRecord] = field(default_factory=list)
    graph_breaks: list[GraphBreak] = field(default_factory=list)
    recompiles: list[Recompile] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    peak_memory_mb: float = 0.0
    execute_max_error: float | None = None
    config: dict = field(default_factory=dict)
    rank: RankInfo | None = None  # a rank of a distributed job
    # The GPU the code was generated for ({"name", "capability", "sm_count"}; virtual-cuda:
    # the emulated one), the choices Inductor made by timing on it, and, for virtual-cuda,
    # where replayed decisions came from (docs/decisions.md).
    gpu: dict | None = None
    decisions: list[Decision] = field(default_factory=list)
    replay: DecisionReplay | None = None
    guards: list[Guard] = field(default_factory=list)  # every guard each compile installed (why)
    eager_memory: EagerMemory | None = None  # --against-eager: what eager saves for the backward
    measured_memory: MeasuredMemory | None = None  # --memory: the step's allocations, measured
    numerics: NumericsReport | None = None  # `kernelscope numerics` (docs/numerics.md)
    aot_package: AotPackage | None = None  # `--aot`: the AOTInductor package (docs/aot.md)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)
