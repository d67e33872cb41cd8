"""What the probes capture (engine/probes.py): a kernel's lines, a graph, a score_mod/mask_mod
subgraph, the pre-grad graph, and the wrapper region a scheduler node opens. Plain records,
filled while Inductor generates code and read by engine/links.py."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kernelscope.engine import cpp_kernels


@dataclass
class KernelLineCapture:
    """What the writeline probe saw for one Triton kernel while it was generated."""

    by_text: dict[str, tuple[str | None, str]] = field(default_factory=dict)
    nodes: list[str] = field(default_factory=list)  # kernel-level set, in schedule order
    # Inductor reuses a kernel whose generated code is identical (the same op in every
    # layer of a loop): what the probe saw at each reuse, so its lines link every layer.
    reuses: list[KernelLineCapture] = field(default_factory=list)
    # A foreach/combo kernel (`triton_for_fused_*`): the nodes of each sub-kernel, in the
    # order of its `if pid < num_xblocks_<i>` blocks (what each block computes).
    parts: list[list[str]] = field(default_factory=list)
    # a combo kernel's pointer arguments and the buffers they stand for (`in_ptr0` -> [`arg0_1`])
    arg_buffers: dict[str, list[str]] = field(default_factory=dict)
    # A template kernel (FlexAttention, a max-autotune GEMM): the node whose lowering chose the
    # template; the template's own code (its loops, loads, dots, softmax) computes it.
    template_node: str | None = None
    # The kernel's module as Inductor defined it (its name in place): a C++ wrapper does not
    # hold its Triton kernels' code, as the Python wrapper does (engine/cpp_wrapper_links.py).
    source: str = ""

    def origins(self, text: str) -> list[tuple[str | None, str]]:
        """The (node, reason) of a kernel line at its first generation and each reuse."""
        return [found for capture in [self, *self.reuses] if (found := capture.by_text.get(text))]


@dataclass
class GraphCapture:
    """Everything the probes saw while one graph was lowered and generated."""

    compile_id: tuple[int, int, int] | None
    is_backward: bool
    is_inference: bool
    post_grad_gm: Any = None
    wrapper_text: str = ""
    wrapper_file: str = ""  # where Inductor writes and runs the wrapper (inductor_reads.wrapper_file)
    # (first wrapper line, post-grad origins of the scheduler node, the nodes it computes)
    wrapper_regions: list[tuple[int, list[str], list[str]]] = field(default_factory=list)
    kernels: dict[str, KernelLineCapture] = field(default_factory=dict)
    # Inductor's own kernel -> post-grad nodes records made during this codegen,
    # keyed "kernel_name:debug_handle" (what it logs as cppCodeToPost, forward only).
    inductor_kernel_nodes: dict[str, list[str]] = field(default_factory=dict)
    trace_position: int = 0  # structured-trace records seen when codegen finished
    # A higher-order op's subgraph (SubgraphLowering): Inductor's name for it (qualified by
    # its parent's, e.g. `true_graph_0`) and the capture of the graph whose codegen made it.
    name: str | None = None
    parent: GraphCapture | None = None
    # The program's own Triton kernels by `kernel_idx` (torch's kernel_side_table, which the
    # post-grad graph's triton_kernel_wrapper nodes name; torch resets it before the run is
    # assembled, so it is read at codegen): engine/user_kernels.py.
    triton_kernels: dict[int, Any] = field(default_factory=dict)
    # The FlexAttention score_mod/mask_mod subgraphs Inductor inlined into this graph's
    # templates: {id(graph module): ModCapture}, in the order they were lowered.
    mods: dict[int, ModCapture] = field(default_factory=dict)
    # Fusions the scheduler refused (why_probes.py): (scheduler name 1, name 2, reason) ->
    # (post-grad nodes of node 1, of node 2).
    not_fused: dict[tuple[str, str, str], tuple[list[str], list[str]]] = field(default_factory=dict)
    # Sizes, producers, inputs and outputs from Inductor's IR at codegen (engine/memory.py).
    memory: Any = None
    # The C++ kernels of Inductor's CPU backend by name (engine/cpp_kernels.py).
    cpp_kernels: dict[str, cpp_kernels.CppKernelCapture] = field(default_factory=dict)
    # A C++ wrapper (AOTInductor, `cpp_wrapper` mode): "cpp", and the kernel code Inductor
    # returns beside it (AOTInductor's C++ kernels, compiled apart from the wrapper).
    wrapper_language: str = "python"
    kernel_code: str = ""
    # The first lines of the regions another GraphLowering opened: a higher-order op's subgraph
    # whose code a C++ wrapper inlines in the body (`if (...) { // subgraph: true_graph_0`).
    inlined_regions: list[int] = field(default_factory=list)


@dataclass
class ModCapture:
    """A pointwise subgraph (a FlexAttention score_mod or mask_mod) lowered for one call."""

    name: str  # the parent's get_attr target: `sdpa_score0`, `mask_graph0`
    gm: Any
    call_site: str  # the parent's post-grad node that calls it (`flex_attention`)


@dataclass
class PreGradCapture:
    compile_id: tuple[int, int, int] | None
    gm: Any  # the frozen node list (inductor_reads.NodeView), not the GraphModule
    graph_id: int
    text: str
    # Dynamo's subgraphs of higher-order ops (`cond_true_0`, `subgraph_0`), captured the same way.
    submodules: list[PreGradCapture] = field(default_factory=list)
    # The user frames that called the compiled function (fx_nodes.calling_frames), outermost first.
    callers: list = field(default_factory=list)
    # A compiled optimizer step: its graph attributes and inputs that are an optimizer's
    # parameters (engine/optimizer_params.py), ("attr", target) / ("input", index) -> param.
    optimizer_inputs: dict = field(default_factory=dict)
    # A submodule's name in its parent (`score_mod_0`, `cond_true_0`); "" for a whole graph.
    name: str = ""


class WrapperRegion:
    """Context object the wrapper keeps in its line map for one scheduler node.

    Inductor reads `.stack_trace` from these objects (it builds its own linemap
    from them), so we provide it.
    """

    def __init__(self, snode):
        origins = [
            origin
            for inner in snode.get_nodes()
            if inner.node is not None
            for origin in inner.node.get_origins()
        ]
        self.origins = list(dict.fromkeys(origin.name for origin in origins))
        # An extern kernel (mm, convolution, a fallback) computes exactly its origin_node —
        # unless a later op that returns its input (a collective's wait_tensor) was
        # assigned the buffer: then the node it was made for (kernel_lines probe).
        ir_node = getattr(snode, "node", None)
        origin_node = getattr(ir_node, "origin_node", None)
        if origin_node is not None and self.origins and origin_node.name not in self.origins:
            origin_node = getattr(ir_node, "_kernelscope_fx", None) or origin_node
        self.computes = [origin_node.name] if origin_node is not None else list(self.origins)
        last = max(origins) if origins else None  # FX nodes order by their place in the graph
        self.stack_trace = last.meta.get("stack_trace") if last is not None else None
        from torch._inductor.virtualized import V

        self.lowering = id(V.graph)  # the graph being generated: a subgraph a C++ wrapper inlines has its own
