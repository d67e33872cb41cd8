"""Line-level provenance: the probes into Inductor internals that record, per line, where
generated code came from. They are installed through engine/patching.py, like every other
change kernelscope makes to torch; their patch points are declared in patch_points.py
("line provenance").

Inductor itself records provenance per kernel (a kernel <-> a set of post-grad
nodes). These probes record it per *line*: which post-grad node each Triton
kernel line and each wrapper line came from. There is no public API for this;
every patch point is checked at install, and a group whose point changed on this
torch is left out whole, so a compile never crashes because of us (the run then says
"kernel-level provenance only").

The probes and what they see:
- pre_grad_graph      compile_fx.run_pre_grad_passes: the graph Dynamo captured, before passes
- kernel_lines        ir.IRNode.__post_init__ + loop_body.LightTracer.create_node
                      + loop_body.InterpreterShim.run_node + utils.IndentedBuffer.writeline
                      + TritonScheduling.define_kernel: each kernel line -> the FX node
                      whose lowering produced it
- wrapper_regions     Scheduler.enter_context: every scheduler node opens a wrapper region
                      that carries all its post-grad origins
- graph_codegen       GraphLowering.codegen: the finished wrapper, its line map, the graph
- failed_node         GraphLowering.run_node: the node Inductor was lowering when it failed,
                      so a compile error names the user's line
"""
from __future__ import annotations

import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kernelscope.compile_text import wrapper_code
from kernelscope.engine import patch_points as points
from kernelscope.engine.fx_nodes import target_name
from kernelscope.engine.patching import Patches, install_groups

_local = threading.local()


def _fx_stack() -> list:
    if not hasattr(_local, "fx_stack"):
        _local.fx_stack = []
    return _local.fx_stack


@dataclass
class KernelLineCapture:
    """What the writeline probe saw for one Triton kernel while it was generated."""

    by_text: dict[str, tuple[str | None, str]] = field(default_factory=dict)
    nodes: list[str] = field(default_factory=list)  # kernel-level set, in schedule order
    # Inductor reuses a kernel whose generated code is identical (the same op in every
    # layer of a loop): what the probe saw at each reuse, so its lines link every layer.
    reuses: list[KernelLineCapture] = field(default_factory=list)

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
    # (first wrapper line, post-grad origins of the scheduler node, the nodes it computes)
    wrapper_regions: list[tuple[int, list[str], list[str]]] = field(default_factory=list)
    kernels: dict[str, KernelLineCapture] = field(default_factory=dict)
    # Inductor's own kernel -> post-grad nodes records made during this codegen,
    # keyed "kernel_name:debug_handle" (what it logs as cppCodeToPost, forward only).
    inductor_kernel_nodes: dict[str, list[str]] = field(default_factory=dict)
    trace_position: int = 0  # structured-trace records seen when codegen finished


@dataclass
class PreGradCapture:
    compile_id: tuple[int, int, int] | None
    gm: Any
    graph_id: int
    text: str


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


def current_compile_id() -> tuple[int, int, int] | None:
    from torch._guards import CompileContext

    trace_id = CompileContext.current_trace_id()
    if trace_id is None or trace_id.compile_id.frame_id is None:
        return None
    cid = trace_id.compile_id
    return (cid.frame_id, cid.frame_compile_id or 0, trace_id.attempt)


class Probes:
    """Install all probes for one recording; collect what they see."""

    def __init__(self):
        self.pre_grad: list[PreGradCapture] = []
        self.graphs: list[GraphCapture] = []
        self.errors: list[str] = []  # a probe that raised (the compile went on)
        # The post-grad node Inductor was lowering when it failed: (name, target, stack_trace).
        self.failed_node: tuple[str, str, str | None] | None = None
        self.disabled: list[str] = []  # probes switched off at install, and why
        self.seconds: dict[str, float] = {"lower": 0.0, "codegen": 0.0}
        self.on_phase: Callable[[str, str], None] = lambda phase, detail: None
        self.trace_position: Callable[[], int] = lambda: 0
        self._patches = Patches()
        self._current_graph: GraphCapture | None = None
        self._kernel_capture: dict[int, KernelLineCapture] = {}

    # -- install / uninstall -------------------------------------------------

    def install(self) -> None:
        self.disabled += install_groups(self._patches, self._probe_groups())

    def uninstall(self) -> None:
        self._patches.restore()

    def __enter__(self):
        self.install()
        return self

    def __exit__(self, *exc):
        self.uninstall()

    @property
    def line_level(self) -> bool:
        return not any(d.startswith(("kernel_lines", "wrapper_regions", "graph_codegen"))
                       for d in self.disabled)

    def _guarded(self, what: str, fn: Callable, *args) -> Any:
        """Run probe bookkeeping; an error in it is recorded, never raised."""
        try:
            return fn(*args)
        except Exception:
            self.errors.append(f"{what}: {traceback.format_exc(limit=3)}")
            return None

    def _probe_groups(self) -> dict:
        """{group: [(patch point, make its replacement from the original)]}; a group is
        installed whole or not at all."""
        return {
            "pre_grad_graph": [(points.PRE_GRAD_PASSES, self._wrap_pre_grad)],
            "kernel_lines": [
                (points.IR_POST_INIT, self._wrap_post_init),
                (points.TRACER_CREATE_NODE, self._wrap_create_node),
                (points.SHIM_RUN_NODE, self._wrap_run_node),
                (points.WRITELINE, self._wrap_writeline),
                (points.DEFINE_KERNEL, self._wrap_define_kernel),
            ],
            "wrapper_regions": [(points.ENTER_CONTEXT, self._wrap_enter_context)],
            "graph_codegen": [(points.GRAPH_CODEGEN, self._wrap_codegen), (points.GRAPH_RUN, self._wrap_lowering)],
            "failed_node": [(points.GRAPH_RUN_NODE, self._wrap_run_node_for_errors)],
        }

    # -- pre-grad graph --------------------------------------------------------

    def _wrap_pre_grad(self, original):
        probes = self

        def run_pre_grad_passes(model_, example_inputs_, *args, **kwargs):
            probes._guarded("pre_grad_graph", probes._record_pre_grad, model_)
            return original(model_, example_inputs_, *args, **kwargs)

        return run_pre_grad_passes

    def _record_pre_grad(self, gm) -> None:
        # The passes that follow rewrite the graph in place: copy what we need now.
        text = gm.print_readable(print_output=False, include_stride=True, include_device=True)
        nodes = _NodeView.from_graph(gm.graph)
        self.pre_grad.append(PreGradCapture(current_compile_id(), nodes, id(gm.graph), text))

    # -- kernel lines ----------------------------------------------------------

    def _wrap_post_init(self, original):
        probes = self

        def __post_init__(ir_node):
            original(ir_node)
            probes._guarded("kernel_lines", probes._tag_inner_fn, ir_node)

        return __post_init__

    def _tag_inner_fn(self, ir_node) -> None:
        import torch._inductor.ir as ir
        from torch._inductor.virtualized import V

        if isinstance(ir_node, ir.ExternKernel) and not hasattr(ir_node, "_kernelscope_fx"):
            fx_node = getattr(V.graph, "current_node", None) if V.graph is not None else None
            if fx_node is not None:  # the node whose lowering made this extern kernel
                object.__setattr__(ir_node, "_kernelscope_fx", fx_node)
            return
        if not isinstance(ir_node, ir.Loops) or getattr(ir_node.inner_fn, "_kernelscope", False):
            return
        fx_node = getattr(V.graph, "current_node", None) if V.graph is not None else None
        if fx_node is None:
            return
        inner_fn = ir_node.inner_fn

        def traced_inner_fn(*args, **kwargs):
            stack = _fx_stack()
            stack.append(fx_node)
            try:
                return inner_fn(*args, **kwargs)
            finally:
                stack.pop()

        traced_inner_fn._kernelscope = True
        traced_inner_fn.__name__ = getattr(inner_fn, "__name__", "inner_fn")
        object.__setattr__(ir_node, "inner_fn", traced_inner_fn)
        object.__setattr__(ir_node, "_kernelscope_fx", fx_node)

    def _wrap_create_node(self, original):
        def create_node(tracer, *args, **kwargs):
            node = original(tracer, *args, **kwargs)
            stack = _fx_stack()
            if stack:
                node.meta["kernelscope_fx"] = stack[-1]
            return node

        return create_node

    def _wrap_run_node(self, original):
        def run_node(shim, n):
            fx_node = n.meta.get("kernelscope_fx")
            if fx_node is None:
                return original(shim, n)
            previous = getattr(_local, "codegen_fx", None)
            _local.codegen_fx = fx_node
            try:
                return original(shim, n)
            finally:
                _local.codegen_fx = previous

        return run_node

    def _wrap_writeline(self, original):
        probes = self

        def writeline(buffer, line):
            probes._guarded("kernel_lines", probes._record_kernel_line, line)
            return original(buffer, line)

        return writeline

    def _record_kernel_line(self, line) -> None:
        from torch._inductor.codegen.triton import TritonKernel
        from torch._inductor.virtualized import V

        try:
            kernel = V.kernel
        except (AttributeError, AssertionError):
            return
        if not isinstance(kernel, TritonKernel):
            return
        text = getattr(line, "line", line)
        if not isinstance(text, str) or not text.strip():
            return
        fx_node = getattr(_local, "codegen_fx", None)
        if fx_node is not None:
            origin = (fx_node.name, "computes")
        else:
            origin = (_scheduler_node_origin(kernel.current_node), "stores or reduces for")
        if origin[0] is None:
            return  # kernel header and index set-up: not tied to one node
        capture = self._kernel_capture.setdefault(id(kernel), KernelLineCapture())
        stripped = text.strip()
        capture.by_text.setdefault(stripped, origin)
        target = wrapper_code.assignment_target(stripped)
        if target:
            capture.by_text.setdefault("=" + target, origin)

    def _wrap_define_kernel(self, original):
        probes = self

        def define_kernel(scheduling, src_code, node_schedule, kernel):
            name = original(scheduling, src_code, node_schedule, kernel)
            probes._guarded("kernel_lines", probes._finish_kernel, name, node_schedule, kernel)
            return name

        return define_kernel

    def _finish_kernel(self, name, node_schedule, kernel) -> None:
        capture = self._kernel_capture.pop(id(kernel), KernelLineCapture())
        nodes: list[str] = []
        for snode in node_schedule:
            ir_node = getattr(snode, "node", None)
            for origin in getattr(ir_node, "origins", ()) or ():
                if origin.name not in nodes:
                    nodes.append(origin.name)
        capture.nodes = nodes
        if self._current_graph is None:
            return
        first = self._current_graph.kernels.get(name)
        if first is None:
            self._current_graph.kernels[name] = capture
        elif capture is not first:
            first.reuses.append(capture)
            first.nodes += [node for node in nodes if node not in first.nodes]

    # -- wrapper regions and graph codegen ------------------------------------

    def _wrap_enter_context(self, original):
        probes = self

        def enter_context(scheduler_self, node):
            from torch._inductor.virtualized import V

            region = probes._guarded("wrapper_regions", WrapperRegion, node)
            if region is None:
                return original(scheduler_self, node)
            V.graph.wrapper_code.enter_context(region)

        return enter_context

    def _wrap_lowering(self, original):
        probes = self

        def run(graph_lowering, *args, **kwargs):
            probes.on_phase("lower", "")
            started = time.perf_counter()
            try:
                return original(graph_lowering, *args, **kwargs)
            finally:
                probes.seconds["lower"] += time.perf_counter() - started

        return run

    def _wrap_run_node_for_errors(self, original):
        probes = self

        def run_node(graph_lowering, n, *args, **kwargs):
            try:
                return original(graph_lowering, n, *args, **kwargs)
            except Exception:
                if probes.failed_node is None:  # the innermost node failed first
                    probes.failed_node = (n.name, target_name(n.target), n.meta.get("stack_trace"))
                raise

        return run_node

    def _wrap_codegen(self, original):
        probes = self

        def codegen(graph_lowering):
            capture = GraphCapture(
                compile_id=probes._guarded("graph_codegen", current_compile_id),
                is_backward=bool(getattr(graph_lowering, "is_backward", False)),
                is_inference=bool(getattr(graph_lowering, "is_inference", False)),
                post_grad_gm=graph_lowering.module,
            )
            outer = probes._current_graph
            probes._current_graph = capture
            before = probes._guarded("graph_codegen", _inductor_kernel_records) or {}
            probes.on_phase("codegen", "")
            started = time.perf_counter()
            try:
                result = original(graph_lowering)
            finally:
                probes._current_graph = outer
                probes.seconds["codegen"] += time.perf_counter() - started
            after = probes._guarded("graph_codegen", _inductor_kernel_records) or {}
            capture.inductor_kernel_nodes = {
                key: list(nodes) for key, nodes in after.items() if key not in before
            }
            probes._guarded("graph_codegen", probes._finish_graph, capture, result)
            return result

        return codegen

    def _finish_graph(self, capture: GraphCapture, result) -> None:
        wrapper = result[0]
        capture.wrapper_text = wrapper.value
        capture.trace_position = self.trace_position()
        capture.wrapper_regions = [
            (line_number, list(context.origins), list(context.computes))
            for line_number, context in wrapper.line_map
            if isinstance(context, WrapperRegion)
        ]
        self.graphs.append(capture)


class _NodeView:
    """A frozen copy of what we need from FX nodes (graphs are rewritten in place)."""

    @staticmethod
    def from_graph(graph) -> list[dict]:
        return [
            {
                "name": node.name,
                "op": node.op,
                "target": target_name(node.target),
                "stack_trace": node.meta.get("stack_trace"),
                "nn_module_stack": dict(node.meta.get("nn_module_stack") or {}),
                # DTensor programs: the placements of a node's value ("S(0)", "R", "P(sum)")
                # and its inputs, so a collective can say what redistribution it makes.
                "placements": _placements(node.meta.get("example_value")),
                "inputs": [input_node.name for input_node in node.all_input_nodes],
            }
            for node in graph.nodes
        ]


def _placements(value) -> str:
    placements = getattr(value, "placements", None)
    if placements is None or not hasattr(value, "device_mesh"):
        return ""
    return ", ".join(str(placement) for placement in placements)


def _inductor_kernel_records() -> dict[str, list[str]]:
    import torch._inductor.debug as inductor_debug

    records = getattr(inductor_debug, "_inductor_triton_kernel_to_post_grad_node_info", None)
    return {key: list(nodes) for key, nodes in (records or {}).items()}


def _scheduler_node_origin(snode) -> str | None:
    ir_node = getattr(snode, "node", None)
    if ir_node is None:
        return None
    data = getattr(ir_node, "data", None)
    fx_node = getattr(data, "_kernelscope_fx", None) or getattr(ir_node, "origin_node", None)
    if fx_node is None:
        # The buffer is the value of the last op folded into it (origins are a set: take
        # the latest in graph order, e.g. a scatter, not one of the ops feeding it).
        origins = list(ir_node.get_origins()) if hasattr(ir_node, "get_origins") else []
        fx_node = max(origins) if origins else None
    return fx_node.name if fx_node is not None else None
