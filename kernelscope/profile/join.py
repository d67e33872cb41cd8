"""Join a profiler trace's device time to the kernels of a recorded run.

- A call of a compiled graph is a `## Call CompiledFxGraph` range in the trace.
  Which graph of the run it is, is decided by the Triton kernels launched inside
  it (their names must all be kernels of that graph), then by its extern ops.
- Triton (and template) kernels join by name within their graph.
- Extern calls (cuBLAS, cuDNN, attention kernels: named nothing like the call)
  join through the launch: kernel -> its `cudaLaunchKernel` (same correlation id)
  -> the op that encloses the launch directly under the graph range (`aten::mm`
  for the wrapper line `extern_kernels.mm(...)`). The k-th `aten::mm` of a graph
  call is the graph's k-th `extern_kernels.mm` call, in wrapper-line order.
- Device time launched inside a graph call but by no recorded kernel (a wrapper's
  `buf.zero_()`) is kept per graph as "in the graph, on no recorded kernel".
- Device time launched outside every graph call (eager ops, the optimizer,
  autograd's own copies) is "outside the compiled graphs", with its total and the
  ops that launched it. Nothing is dropped or spread over kernels.

A trace whose Triton kernels are not kernels of the run (another compile) is
refused with the names that did not match.
"""
from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from functools import cached_property

from kernelscope.errors import UserError
from kernelscope.profile.trace import GRAPH_CALL_PREFIX, STEP_PREFIX, CpuEvent, DeviceEvent, Trace, graph_call_key

_TRITON_NAME = re.compile(r"^triton_\w+$")


class ProfileMismatch(UserError):
    """The trace is not of this run's compile."""


@dataclass
class RunKernel:
    id: int
    name: str  # `triton_per_fused_...`, or `extern_kernels.mm#0` for the first mm call
    kind: str  # triton | template | extern
    wrapper_line: int | None

    @property
    def op(self) -> str | None:
        """The profiler op an extern call shows up as: `extern_kernels.mm#0` -> `aten::mm`."""
        if self.kind != "extern":
            return None
        call = self.name.split("#", 1)[0]
        parts = call.split(".")
        if parts[0] == "extern_kernels":
            return f"aten::{parts[-1]}"
        if parts[:2] == ["torch", "ops"]:
            parts = parts[2:]
        if len(parts) >= 2:  # aten.convolution.default -> aten::convolution
            return f"{parts[0]}::{parts[1]}"
        return call


@dataclass
class RunGraph:
    id: int
    label: str  # `[0/0] forward`
    kernels: list[RunKernel]

    @cached_property
    def triton(self) -> dict[str, RunKernel]:
        return {k.name: k for k in self.kernels if k.kind != "extern"}

    def externs_by_op(self) -> dict[str, list[RunKernel]]:
        by_op: dict[str, list[RunKernel]] = defaultdict(list)
        for kernel in sorted((k for k in self.kernels if k.kind == "extern"),
                             key=lambda k: (k.wrapper_line or 0, k.name)):
            op = kernel.op
            if op is not None:  # an extern call always has one
                by_op[op].append(kernel)
        return by_op


@dataclass
class KernelTime:
    total_us: float = 0.0
    launches: int = 0  # device kernels summed (an extern call may run several)


@dataclass
class JoinResult:
    trace_path: str
    device_name: str
    steps: int
    step_markers: bool  # False: no ProfilerStep ranges, the whole trace is one step
    step_time_us: float  # mean wall time of a step (see step_time)
    device_total_us: float  # device time of all kernels launched in the steps, summed
    kernels: dict[int, KernelTime]  # run kernel id -> time over all steps
    in_graphs_other: dict[str, float]  # "[0/0] forward: aten::zero_" -> time over all steps
    outside: dict[str, float]  # launching op -> time over all steps
    outside_steps_us: float  # device time launched outside the ProfilerStep ranges (not counted)
    graph_calls: dict[str, int]  # graph label -> calls seen
    warnings: list[str] = field(default_factory=list)

    @property
    def attributed_us(self) -> float:
        return sum(k.total_us for k in self.kernels.values())

    @property
    def in_graphs_other_us(self) -> float:
        return sum(self.in_graphs_other.values())

    @property
    def outside_us(self) -> float:
        return sum(self.outside.values())


def join(trace: Trace, graphs: list[RunGraph], run_label: str = "the run") -> JoinResult:
    calls = trace.graph_calls
    if not calls:
        raise ProfileMismatch(
            f"{trace.path}: the trace has no call of a compiled graph (no `{GRAPH_CALL_PREFIX} ... ##` "
            "range): profile the compiled model with torch.profiler's CPU and CUDA activities"
        )
    launched = _launched_under_calls(trace)
    graph_of_call = _match_calls(trace.path, calls, launched, graphs, run_label)
    steps = trace.steps
    result = JoinResult(
        trace_path=trace.path, device_name=trace.device_name, steps=max(len(steps), 1),
        step_markers=bool(steps), step_time_us=step_time(trace), device_total_us=0.0,
        kernels={}, in_graphs_other=defaultdict(float), outside=defaultdict(float),
        outside_steps_us=0.0, graph_calls=dict(Counter(graph_of_call[id(c)].label for c in calls)),
    )
    extern_of_op = _extern_ops(trace, graph_of_call)
    unlaunched = 0.0
    for event in trace.device_events:
        if event.launch is None:
            unlaunched += event.duration
            continue
        if steps and not any(s.start <= event.launch.start <= s.end for s in steps):
            result.outside_steps_us += event.duration
            continue
        result.device_total_us += event.duration
        call, op = _graph_call_and_op(event)
        if call is None:
            result.outside[_outside_label(event.launch)] += event.duration
            continue
        graph = graph_of_call[id(call)]
        kernel = graph.triton.get(event.name) or (graph.triton.get(op.name) if op is not None else None) \
            or (extern_of_op.get(id(op)) if op is not None else None)
        if kernel is None:
            result.in_graphs_other[f"{graph.label}: {op.name if op is not None else event.name}"] += event.duration
            continue
        time = result.kernels.setdefault(kernel.id, KernelTime())
        time.total_us += event.duration
        time.launches += 1
    if unlaunched:
        result.warnings.append(
            f"{unlaunched:.1f} us of device time has no launch event in the trace (the profiler "
            "dropped it): not counted")
    if result.outside_steps_us:
        result.warnings.append(
            f"{result.outside_steps_us:.1f} us of device time was launched outside the ProfilerStep "
            "ranges: not counted")
    seen = set(result.graph_calls)
    for graph in graphs:
        if graph.label not in seen:
            result.warnings.append(f"graph {graph.label} was not called in the trace")
            continue
        idle = [k.name for k in graph.kernels if k.id not in result.kernels]
        if idle:
            result.warnings.append(f"{len(idle)} kernel(s) of graph {graph.label} ran no device work in the trace: "
                                   f"{', '.join(idle[:5])}{' ...' if len(idle) > 5 else ''}")
    result.in_graphs_other = dict(result.in_graphs_other)
    result.outside = dict(result.outside)
    return result


def step_time(trace: Trace) -> float:
    """Mean wall time of a step: from a ProfilerStep range's start to the later of its
    end and the end of the last device work launched in it (a step that does not
    synchronize ends on the GPU after its CPU range). Without step markers, the span
    of the whole trace's device work."""
    if not trace.steps:
        if not trace.device_events:
            return 0.0
        return max(e.start + e.duration for e in trace.device_events) - min(e.start for e in trace.device_events)
    spans = []
    for step in trace.steps:
        end = step.end
        for event in trace.device_events:
            if event.launch is not None and step.start <= event.launch.start <= step.end:
                end = max(end, event.start + event.duration)
        spans.append(end - step.start)
    return sum(spans) / len(spans)


def _graph_call_and_op(event: DeviceEvent) -> tuple[CpuEvent | None, CpuEvent | None]:
    """The graph call around a launch, and the op directly under it that the launch is in."""
    below = None
    for enclosing in event.enclosing():
        if enclosing.name.startswith(GRAPH_CALL_PREFIX):
            return enclosing, below
        below = enclosing
    return None, None


def _launched_under_calls(trace: Trace) -> dict[int, tuple[set[str], list[str]]]:
    """Graph call -> (Triton kernel names launched in it, names of the ops directly
    under it that launched device work and are not Triton launches)."""
    found: dict[int, tuple[set[str], list[CpuEvent]]] = {}
    for event in trace.device_events:
        call, op = _graph_call_and_op(event)
        if call is None:
            continue
        triton, ops = found.setdefault(id(call), (set(), []))
        if _TRITON_NAME.match(event.name):
            triton.add(event.name)
        elif op is not None and op not in ops:
            ops.append(op)
    return {key: (triton, [op.name for op in ops]) for key, (triton, ops) in found.items()}


def _match_calls(path: str, calls: list[CpuEvent], launched, graphs: list[RunGraph],
                 run_label: str) -> dict[int, RunGraph]:
    """Which graph of the run each graph call is (see the module docstring)."""
    all_triton = {name for graph in graphs for name in graph.triton}
    unknown = sorted({name for triton, _ in launched.values() for name in triton} - all_triton)
    if unknown:
        known = ", ".join(sorted(all_triton)[:6]) or "none"
        raise ProfileMismatch(
            f"{path} is not a trace of {run_label}'s compile: {len(unknown)} Triton kernel(s) in it are "
            f"not kernels of the run: {', '.join(unknown[:8])}{' ...' if len(unknown) > 8 else ''} "
            f"(the run's: {known}{' ...' if len(all_triton) > 6 else ''}) — attach it to the run of "
            "that compile (`kernelscope import` its TORCH_TRACE log), or pass --run ID"
        )
    matched: dict[int, RunGraph] = {}
    graph_of_key: dict[str, RunGraph] = {}
    for call in calls:
        triton, ops = launched.get(id(call), (set(), []))
        key = graph_call_key(call)
        scored = []
        for order, graph in enumerate(graphs):
            names = set(graph.triton)
            if not triton <= names:
                continue
            externs = Counter({op: len(kernels) for op, kernels in graph.externs_by_op().items()})
            extern_hits = sum((Counter(ops) & externs).values())
            extern_misses = sum((Counter(ops) - externs).values())
            scored.append((-(triton == names), extern_misses, -extern_hits, order, graph))
        if not scored:
            raise ProfileMismatch(
                f"{path} is not a trace of {run_label}'s compile: one call of a compiled graph launches "
                f"{', '.join(sorted(triton))}, which no single graph of the run has"
            )
        scored.sort(key=lambda item: item[:4])
        best = scored[0][4]
        if key != "None" and key in graph_of_key:
            best = graph_of_key[key]  # the same compiled graph is called again
        elif key != "None":
            taken = set(map(id, graph_of_key.values()))
            ties = [item[4] for item in scored if item[:3] == scored[0][:3]]
            best = next((g for g in ties if id(g) not in taken), best)
            graph_of_key[key] = best
        matched[id(call)] = best
    if not any(triton or ops for triton, ops in launched.values()):
        raise ProfileMismatch(f"{path}: the compiled-graph calls in the trace launched no device work")
    return matched


def _extern_ops(trace: Trace, graph_of_call: dict[int, RunGraph]) -> dict[int, RunKernel]:
    """Op event (directly under a graph call) -> the extern call of the run it is.

    Per graph call, the k-th op named `aten::mm` is the graph's k-th `aten::mm` extern
    call in wrapper-line order."""
    children: dict[int, list[CpuEvent]] = defaultdict(list)
    for event in trace.cpu_events:
        if event.parent is not None and id(event.parent) in graph_of_call:
            children[id(event.parent)].append(event)
    found: dict[int, RunKernel] = {}
    for call in trace.graph_calls:
        by_op = graph_of_call[id(call)].externs_by_op()
        seen: Counter = Counter()
        for op in sorted(children[id(call)], key=lambda e: e.start):
            ordinal = seen[op.name]
            seen[op.name] += 1
            candidates = by_op.get(op.name, [])
            if ordinal < len(candidates):
                found[id(op)] = candidates[ordinal]
    return found


def _outside_label(launch: CpuEvent) -> str:
    """Which eager work launched device time outside the graphs: the op that issued the
    launch, under the outermost range around it (a ProfilerStep range aside)."""
    enclosing = [e for e in launch.ancestors() if not e.name.startswith(STEP_PREFIX)]
    if not enclosing:
        return f"{launch.name} (no enclosing op)"
    inner, outer = enclosing[0], enclosing[-1]
    return inner.name if inner.name == outer.name else f"{inner.name} (in {outer.name})"
