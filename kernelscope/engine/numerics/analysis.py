"""From what ran to a NumericsReport: each kernel output compared with eager, launch by
launch, and where compiled and eager first part ways.

1. Each kernel's store lines name the post-grad node whose value goes to each pointer
   argument (the probes tie `tl.store(out_ptr0 + ...)` to its node). A kernel Inductor
   reuses (the same code in every layer) has one candidate node per reuse on its store
   line: the wrapper line that launched it (`kernel.run(...)`, in launch order) names the
   nodes of that launch, and picks the one.
2. Each graph call's post-grad graph is evaluated eagerly and in float64 on copies of the
   inputs the compiled graph got (reference.py): the backward on the forward's compiled
   saved tensors, so each graph is judged on what it really received.
3. The first launch with an output beyond tolerance is the first divergence; inside its
   kernel, the fused nodes are evaluated in the kernel's compute precision against eager
   (reference.kernel_precision): the first node beyond tolerance is named ("precision").
   When none is, precision does not explain it: the kernel's reduction (or the diverging
   output's node) is named ("order").
4. Extern kernels (mm, addmm, bmm, convolution) and fallback ops are compared too, each at
   its place in the launch order: their output is their node's (the op the extern call
   runs, from the kernel record of the wrapper line). One that diverges first is named itself
   ("extern"): it runs eager's own op, so the why says whether an input it read already
   differed from eager (within tolerance, and the op amplified it) or not (the library
   computed it another way).
5. A node with several outputs (var_mean, topk, attention) is compared output by output: a
   fallback's tuple element i against the node's `getitem(node, i)` (or element i of eager's
   tuple when the graph uses none); a Triton store names only the node, so its buffer is
   compared with the node's getitem whose eager value is closest (the outputs of one node
   are different quantities: mean and variance, values and indices).
"""
from __future__ import annotations

import operator
import re
import time

from kernelscope.engine.numerics import compare, reference
from kernelscope.run_record import GraphRecord, NumericsDivergence, NumericsOutput, NumericsReport, RunRecord

_STORE = re.compile(r"^\s*tl\.store\(\s*(\w+)")
_LAUNCH = re.compile(r"^\s*(\w+)\.run\(")
_REDUCTIONS = ("sum", "mean", "amax", "amin", "prod", "var", "std", "argmax", "argmin", "cumsum", "cumprod",
               "logsumexp", "max", "min")


def store_targets(kernel, launched_nodes: set[str]) -> dict[str, str]:
    """Pointer argument -> the post-grad node whose value the kernel stores there (of the
    launch whose nodes are `launched_nodes`, when Inductor reused the kernel)."""
    found: dict[str, str] = {}
    for line in kernel.lines:
        match = _STORE.match(line.text)
        if match and line.nodes and not line.reason.startswith("shared"):
            mine = [node for node in line.nodes if node in launched_nodes] or line.nodes
            found[match.group(1)] = mine[-1]
    return found


class _LaunchLines:
    """The wrapper's kernel launches in order, each with the nodes of its launch."""

    def __init__(self, graph: GraphRecord):
        self.lines = [(match.group(1), set(line.nodes)) for line in sorted(graph.wrapper_lines, key=lambda w: w.line)
                      if (match := _LAUNCH.match(line.text))]
        self.cursor = 0

    def next_of(self, kernel: str) -> set[str]:
        """The nodes of the next launch of `kernel` (empty when the wrapper shows none)."""
        for index in range(self.cursor, len(self.lines)):
            if self.lines[index][0] == kernel:
                self.cursor = index + 1
                return self.lines[index][1]
        return set()


def _is_reduction(target: str) -> bool:
    op = target.split(".")[1] if target.startswith("aten.") and "." in target else target
    return op in _REDUCTIONS


class _GraphReference:
    """A graph call's reference values and the facts of its nodes."""

    def __init__(self, graph: GraphRecord, call):
        self.graph = graph
        self.call = call
        self.nodes = {node.name: node for node in graph.post_grad_nodes}
        self.skip = reference.random_nodes(call.gm)
        self.eager = reference.evaluate(call.gm, call.inputs, skip=self.skip)
        self.judge = reference.evaluate(call.gm, call.inputs, judge=True, skip=self.skip)
        self.order = [node.name for node in call.gm.graph.nodes]
        self.by_name = {node.name: node for node in call.gm.graph.nodes}
        self.getitems: dict[str, dict[int, str]] = {}  # multi-output node -> index -> its getitem node
        for node in call.gm.graph.nodes:
            if node.op == "call_function" and node.target is operator.getitem and len(node.args) == 2 \
                    and hasattr(node.args[0], "name") and isinstance(node.args[1], int):
                self.getitems.setdefault(node.args[0].name, {})[node.args[1]] = node.name


def _extern_kernel(graph: GraphRecord, line: int):
    """The extern kernel record of the wrapper line that calls it."""
    return next((kernel for kernel in graph.kernels if kernel.kind == "extern" and line in kernel.wrapper_lines),
                None)


def _extern_node(kernel, callee: str, ref: _GraphReference) -> str:
    """The post-grad node whose value an extern call returns: of the record's nodes, the one
    running the op called (extern_kernels.mm -> aten.mm), else the last in graph order."""
    nodes = [name for name in ref.order if kernel is not None and name in kernel.nodes]
    op = callee.removeprefix("extern_kernels.").removeprefix("torch.ops.")
    op = op if op.startswith("aten.") else f"aten.{op}."
    running = [name for name in nodes if name in ref.nodes and (ref.nodes[name].target + ".").startswith(op)]
    return (running or nodes or [""])[-1]


def analyze(run: RunRecord, calls: list, key_of: dict[int, str], target: str,
            rtol: float | None, atol: float | None) -> NumericsReport:
    started = time.perf_counter()
    report = NumericsReport(target=target, rtol=rtol, atol=atol)
    graphs = {graph.key: graph for graph in run.graphs}
    launch = 0
    first: tuple | None = None  # (launch, reference, kernel record, outputs beyond tolerance)
    for call in calls:
        graph = graphs.get(key_of.get(id(call.capture), ""))
        if graph is None:
            report.notes.append("a compiled graph kernelscope did not record ran: its kernels are not compared")
            continue
        ref = _GraphReference(graph, call)
        kernels = {kernel.name: kernel for kernel in graph.kernels}
        launch_lines = _LaunchLines(graph)
        if ref.skip:
            report.notes.append(f"{graph.compile_id} {graph.kind}: {len(ref.skip)} node(s) draw random numbers "
                                "or depend on them: not compared (Inductor's random numbers are not eager's)")
        for launched in call.launches:
            if launched.wrapper_line:  # an extern kernel or a fallback op
                kernel = _extern_kernel(graph, launched.wrapper_line)
                node = _extern_node(kernel, launched.kernel, ref)
                stores = {arg: node for arg in launched.outputs}
            else:
                kernel = kernels.get(launched.kernel)
                launched_nodes = launch_lines.next_of(launched.kernel)
                stores = store_targets(kernel, launched_nodes) if kernel is not None else {}
            name = kernel.name if kernel is not None else launched.kernel
            over = []
            for arg, actual in launched.outputs.items():
                output = _compare(launch, graph, name, arg, stores.get(arg, ""), actual, ref, rtol, atol)
                report.outputs.append(output)
                if output.over:
                    over.append(output)
            if over and first is None and kernel is not None:
                first = (launch, ref, kernel, set(stores.values()), over)
            launch += 1
    if first is not None:
        report.first_divergence = locate(*first, rtol=rtol, atol=atol, compared=report.outputs)
    report.seconds["reference"] = time.perf_counter() - started
    return report


def _index(arg: str) -> int | None:
    """out[2] -> 2 (an element of a multi-output op's result), else None."""
    match = re.fullmatch(r"\w+\[(\d+)\]", arg)
    return int(match.group(1)) if match else None


def _one_output(ref: _GraphReference, node: str, arg: str, actual) -> tuple[str, object, object]:
    """(node, eager value, float64 value) to compare `actual` with: for a node with several
    outputs, the one this buffer holds (see the module's doc, 5)."""
    expected, judge = ref.eager.get(node), ref.judge.get(node)
    if not isinstance(expected, (tuple, list)):
        return node, expected, judge
    users = ref.getitems.get(node, {})
    index = _index(arg)
    if index is not None:
        if index in users:
            return users[index], ref.eager.get(users[index]), ref.judge.get(users[index])
        element = expected[index] if index < len(expected) else None
        return node, element, judge[index] if isinstance(judge, (tuple, list)) and index < len(judge) else None
    candidates = [name for name in users.values() if not compare.comparable(actual, ref.eager.get(name))]
    if not candidates:
        return node, expected, judge

    def distance(name: str) -> float:
        value = ref.eager[name]
        found = compare.difference(compare.aligned(actual, value), value, 0, 0).max_abs
        return found if found == found else float("inf")  # nan: furthest

    name = min(candidates, key=distance)
    return name, ref.eager.get(name), ref.judge.get(name)


def _compare(launch: int, graph: GraphRecord, kernel: str, arg: str, node: str, actual, ref: _GraphReference,
             rtol: float | None, atol: float | None) -> NumericsOutput:
    if node and node not in ref.skip:
        node, expected, judge = _one_output(ref, node, arg, actual)
    source = ref.nodes[node].source if node in ref.nodes else None
    dtype = compare.dtype_name(getattr(actual, "dtype", ""))
    output_rtol, output_atol = compare.tolerance(getattr(actual, "dtype", None), rtol, atol)
    output = NumericsOutput(launch=launch, graph=graph.key, kernel=kernel, arg=arg, node=node, dtype=dtype,
                            source=source, rtol=output_rtol, atol=output_atol, max_abs=None, max_rel=None)
    if not node:
        output.note = "no store line of the kernel names the node it writes here"
        return output
    if node in ref.skip:
        output.note = "depends on random numbers"
        return output
    problem = compare.comparable(actual, expected)
    if problem:
        output.note = problem
        return output
    difference = compare.difference(compare.aligned(actual, expected), expected, output_rtol, output_atol)
    output.max_abs, output.max_rel = difference.max_abs, difference.max_rel
    output.mismatched, output.elements = difference.mismatched, difference.elements
    if not compare.comparable(actual, judge):
        output.compiled_vs_fp64 = compare.difference(compare.aligned(actual, judge), judge, 0, 0).max_abs
        output.eager_vs_fp64 = compare.difference(expected, judge, 0, 0).max_abs
    return output


def _feeding(ref: _GraphReference, stored: set[str], inside: set[str]) -> set[str]:
    """The kernel's nodes that feed the nodes it stores: of a kernel Inductor reused in every
    layer, those of this launch's layer."""
    by_name = {node.name: node for node in ref.call.gm.graph.nodes}
    found: set[str] = set()
    pending = list(stored)
    while pending:
        name = pending.pop()
        if name in found or name not in inside or name not in by_name:
            continue
        found.add(name)
        pending += [node.name for node in by_name[name].all_input_nodes]
    return found


def _read_outputs(ref: _GraphReference, name: str, launch: int,
                  compared: list[NumericsOutput]) -> list[NumericsOutput]:
    """The outputs compared before `launch` (in this graph) that node `name` reads: its
    inputs', or, through inputs no launch wrote (views such as a weight's transpose), theirs."""
    written = {output.node: output for output in compared
               if output.graph == ref.graph.key and output.launch < launch and output.max_abs is not None}
    found, seen = [], set()
    pending = list(ref.by_name[name].all_input_nodes) if name in ref.by_name else []
    while pending:
        node = pending.pop(0)
        if node.name in seen:
            continue
        seen.add(node.name)
        if node.name in written:
            found.append(written[node.name])
        elif node.op == "call_function":
            pending += node.all_input_nodes
    return found


def _extern_divergence(launch: int, ref: _GraphReference, kernel, over: list[NumericsOutput],
                       compared: list[NumericsOutput]) -> NumericsDivergence:
    """An extern kernel or fallback diverges first: it is eager's own op, run on what the
    compiled graph gave it."""
    worst = max(over, key=lambda output: output.max_abs or 0.0)
    node = ref.nodes.get(worst.node)
    op = node.target if node else kernel.name
    differing = [output for output in _read_outputs(ref, worst.node, launch, compared) if output.max_abs]
    if differing:
        read = max(differing, key=lambda output: output.max_rel or 0.0)
        where = f" (line {read.source.line})" if read.source is not None else ""
        why = (f"an extern kernel runs eager's own {op}, on compiled inputs: its input {read.node}{where} already "
               f"differs from eager (max rel {read.max_rel:.3g}, "
               f"{'beyond' if read.over else 'within'} tolerance) and the op amplifies it")
    else:
        why = (f"an extern kernel runs eager's own {op} and its compared inputs agree with eager: the library "
               "computes it another way here (another algorithm for these strides, sizes or this device)")
    return _divergence(launch, ref, kernel, worst.node, worst.max_abs or 0.0, worst.max_rel or 0.0, "extern", why,
                       worst)


def locate(launch: int, ref: _GraphReference, kernel, stored: set[str], over: list[NumericsOutput],
           rtol: float | None, atol: float | None, compared: list[NumericsOutput] = ()) -> NumericsDivergence:
    """Inside the first diverging kernel, the first fused node that diverges."""
    import torch

    if kernel.kind == "extern":
        return _extern_divergence(launch, ref, kernel, over, list(compared))
    own = _feeding(ref, stored, set(kernel.nodes)) or set(kernel.nodes)
    fused = [name for name in ref.order if name in own]
    worst = max(over, key=lambda output: output.max_abs or 0.0)
    computed = reference.kernel_precision(ref.call.gm, fused, ref.eager)
    for name in fused:
        value, expected = computed.get(name), ref.eager.get(name)
        if not isinstance(value, torch.Tensor) or compare.comparable(value, expected):
            continue
        node_rtol, node_atol = compare.tolerance(expected.dtype, rtol, atol)
        difference = compare.difference(value, expected, node_rtol, node_atol)
        if difference.mismatched:
            culprit, why = _precision_culprit(ref, name, expected, fused)
            return _divergence(launch, ref, kernel, culprit, difference.max_abs, difference.max_rel, "precision",
                               why, worst)
    reductions = [name for name in fused if name in ref.nodes and _is_reduction(ref.nodes[name].target)]
    if reductions:
        name = reductions[0]
        why = ("computed in the kernel's precision the fused nodes agree with eager: the kernel's reduction "
               "order (or algorithm) differs from eager's")
    else:
        name = worst.node
        why = "computed in the kernel's precision the fused nodes agree with eager: the kernel computes it differently"
    return _divergence(launch, ref, kernel, name, worst.max_abs or 0.0, worst.max_rel or 0.0, "order", why, worst)


def _precision_culprit(ref: _GraphReference, name: str, expected, fused: list[str]) -> tuple[str, str]:
    """The node to name for a fused node `name` that, computed in the kernel's precision,
    differs from eager, and why in words. A float16/bfloat16 node is named itself; a wider
    one whose fused input eager rounds to float16/bfloat16 (and the kernel does not) names
    that input: leaving the input's line to eager, or emulating its rounding, is the fix."""
    dtype = compare.dtype_name(expected.dtype)
    if dtype in reference.LOW_PRECISION:
        return name, f"the kernel computes it in float32 and eager rounds it to {dtype}"
    call = next((node for node in ref.call.gm.graph.nodes if node.name == name), None)
    for source in (call.all_input_nodes if call is not None else ()):
        value = ref.eager.get(source.name)
        if source.name in fused and compare.dtype_name(getattr(value, "dtype", "")) in reference.LOW_PRECISION:
            line = ref.nodes[name].source if name in ref.nodes else None
            where = f" (line {line.line})" if line is not None else ""
            return source.name, (f"eager rounds it to {compare.dtype_name(value.dtype)} and the kernel keeps it in "
                                 f"float32: {name}{where}, which uses it, then differs beyond tolerance")
    return name, "the kernel computes it differently from eager"


def _divergence(launch, ref: _GraphReference, kernel, name: str, max_abs: float, max_rel: float, cause: str,
                why: str, worst: NumericsOutput) -> NumericsDivergence:
    """`worst`: the kernel's output furthest from eager, whose float64 errors say which side is closer."""
    node = ref.nodes.get(name)
    return NumericsDivergence(launch=launch, graph=ref.graph.key, kernel=kernel.name, node=name,
                              target=node.target if node else "", source=node.source if node else None,
                              max_abs=max_abs, max_rel=max_rel, cause=cause, why=why,
                              compiled_vs_fp64=worst.compiled_vs_fp64, eager_vs_fp64=worst.eager_vs_fp64)
