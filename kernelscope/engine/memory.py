"""A graph's memory from its compile alone (docs/memory.md).

At codegen (probes.py's graph_codegen probe) `capture` records, from Inductor's IR while it is
still alive, each buffer's and input's size, dtype and shape (symbolic sizes evaluated at the
shape environment's hints, i.e. the example inputs), the post-grad node that produced each
buffer, the graph's outputs and, for a backward graph, the nodes the partitioner put there to
recompute. `graph_memory` turns that and the wrapper's own alloc/reuse/free lines
(compile_text/wrapper_memory.py) into the GraphRecord's timeline; `mark_saved` finds what
each forward saves for its backward: the forward's outputs its backward takes as inputs
(AOTAutograd names a backward's saved inputs after the forward nodes that made them).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from kernelscope.compile_text import wrapper_code, wrapper_memory
from kernelscope.run_record import GraphMemory, GraphRecord, MemoryBuffer, MemoryEvent

# Inductor's own fallback for an unbacked size without a hint (config.unbacked_symint_fallback).
UNBACKED_FALLBACK = 8192


@dataclass
class TensorSize:
    bytes: int
    dtype: str
    shape: str


@dataclass
class MemoryCapture:
    """What Inductor's IR says about a graph's tensors, taken at codegen."""

    sizes: dict[str, TensorSize] = field(default_factory=dict)  # buffer or input name -> size
    producers: dict[str, str] = field(default_factory=dict)  # buffer name -> post-grad node
    inputs: list[str] = field(default_factory=list)  # tensor inputs, in order
    outputs: list[tuple[str, str]] = field(default_factory=list)  # (post-grad node, buffer name) per output
    recomputed: list[str] = field(default_factory=list)  # backward: forward nodes recomputed here
    is_backward: bool = False

    @property
    def owned_inputs(self) -> frozenset[str]:
        """Inputs only the call holds, freed at the wrapper's `del` (wrapper_memory.owned_inputs)."""
        return wrapper_memory.owned_inputs(self.is_backward, self.inputs)


def capture(graph_lowering) -> MemoryCapture:
    """Read sizes, producers, inputs and outputs off a GraphLowering after its codegen."""
    import torch._inductor.ir as ir

    found = MemoryCapture()
    hint = _hint_function(graph_lowering.sizevars)
    for name, value in graph_lowering.graph_inputs.items():
        size = _size_of(value, hint)
        if size is not None:
            found.sizes[name] = size
            found.inputs.append(name)
    for buffer in graph_lowering.buffers:
        name = buffer.get_name()
        if name in found.sizes:
            continue
        layout = getattr(buffer, "layout", None)
        if isinstance(layout, ir.Layout) and not isinstance(layout, (ir.NoneLayout, ir.MultiOutputLayout)):
            found.sizes[name] = _layout_size(layout, hint)
        producer = _producer(buffer)
        if producer:
            found.producers[name] = producer
    output = next((node for node in graph_lowering.module.graph.nodes if node.op == "output"), None)
    if output is not None:
        values = output.args[0] if isinstance(output.args[0], (tuple, list)) else [output.args[0]]
        names = graph_lowering.get_output_names()
        if len(values) == len(names):
            found.outputs = [(getattr(value, "name", ""), name) for value, name in zip(values, names)]
    found.is_backward = bool(getattr(graph_lowering, "is_backward", False))
    if found.is_backward:
        # the partitioner tags the joint graph's nodes; a forward node in the backward is recomputed
        found.recomputed = [node.name for node in graph_lowering.module.graph.nodes
                            if node.op == "call_function" and node.meta.get("partitioner_tag") == "is_forward"]
    return found


def _hint_function(sizevars):
    """sizevars' concrete-value hint: `optimization_hint` on newer torch, `size_hint` before."""
    hint = getattr(sizevars, "optimization_hint", None) or sizevars.size_hint

    def evaluate(expr) -> int:
        return int(hint(expr, fallback=UNBACKED_FALLBACK))

    return evaluate


def _layout_size(layout, hint) -> TensorSize:
    from torch._inductor.utils import get_dtype_size

    elements = hint(layout.storage_size())
    shape = "x".join(str(hint(dim)) for dim in layout.size) or "scalar"
    return TensorSize(elements * get_dtype_size(layout.dtype), str(layout.dtype), shape)


def _size_of(value, hint) -> TensorSize | None:
    try:
        layout = value.get_layout()
    except (AttributeError, NotImplementedError, TypeError):
        return None
    import torch._inductor.ir as ir

    if not isinstance(layout, ir.Layout) or isinstance(layout, (ir.NoneLayout, ir.MultiOutputLayout)):
        return None
    return _layout_size(layout, hint)


def _producer(buffer) -> str:
    """The post-grad node whose value the buffer holds: the node whose lowering made it (the
    kernel_lines probe's tag, or Inductor's origin_node), else the latest of its origins."""
    data = getattr(buffer, "data", None)
    fx_node = (getattr(buffer, "_kernelscope_fx", None) or getattr(data, "_kernelscope_fx", None)
               or getattr(buffer, "origin_node", None))
    if fx_node is None:
        origins = list(buffer.get_origins()) if hasattr(buffer, "get_origins") else []
        fx_node = max(origins) if origins else None
    return fx_node.name if fx_node is not None else ""


# -- the GraphRecord's memory ---------------------------------------------------------------


def graph_memory(found: MemoryCapture, wrapper_text: str) -> GraphMemory:
    sizes = {name: size.bytes for name, size in found.sizes.items()}
    owned = found.owned_inputs
    timeline = wrapper_memory.read_timeline(wrapper_text, sizes, found.inputs, owned)
    outputs = {name for _, name in found.outputs}
    buffers = []
    for name in found.inputs:  # held by the caller through the whole call, unless owned (freed at its del)
        span = timeline.spans.get(name) if name in owned else None
        buffers.append(MemoryBuffer(name, "", "input", found.sizes[name].bytes, found.sizes[name].dtype,
                                    found.sizes[name].shape, freed_line=span.freed_line if span else 0,
                                    live_at_peak=span.live_at_peak if span else name not in owned,
                                    is_output=name in outputs))
    for name, span in timeline.spans.items():
        size = found.sizes.get(name)
        if size is None or name in found.inputs:
            continue
        buffers.append(MemoryBuffer(name, found.producers.get(name, ""), "buffer", size.bytes, size.dtype,
                                    size.shape, allocated_line=span.allocated_line, freed_line=span.freed_line,
                                    reused_by=span.reused_by, live_at_peak=span.live_at_peak,
                                    is_output=name in outputs))
    events = [MemoryEvent(line, action, name, bytes_, live) for line, action, name, bytes_, live in timeline.events]
    return GraphMemory(timeline.peak_bytes, timeline.peak_line, timeline.inputs_bytes, buffers, events,
                       list(found.recomputed))


def mark_saved(forward: GraphRecord, forward_found: MemoryCapture, backward: GraphRecord,
               backward_found: MemoryCapture) -> None:
    """Mark the forward's buffers (or inputs) its backward takes as saved tensors, with the
    backward kernels that read each."""
    if forward.memory is None:
        return
    saved = {name for name in backward_found.inputs if not name.startswith("tangents")}
    by_name = {buffer.name: buffer for buffer in forward.memory.buffers}
    readers = _readers(backward.wrapper_text, saved)
    for node_name, buffer_name in forward_found.outputs:
        buffer = by_name.get(buffer_name)
        if node_name in saved and buffer is not None:
            buffer.saved_for_backward = True
            if not buffer.node and buffer.kind == "buffer":
                buffer.node = node_name
            buffer.read_by = sorted(set(buffer.read_by) | set(readers.get(node_name, ())))
    forward_nodes = {node.name for node in forward.post_grad_nodes if node.op != "placeholder"}
    for buffer in backward.memory.buffers if backward.memory is not None else ():
        if buffer.kind == "input" and buffer.name in saved and buffer.name in forward_nodes:
            buffer.node, buffer.from_forward = buffer.name, True  # a saved activation: its forward node


def _readers(wrapper_text: str, names: set[str]) -> dict[str, list[str]]:
    """Input name -> the kernels (Triton launches, extern calls) of the wrapper that take it."""
    found: dict[str, list[str]] = {}
    layout = wrapper_code.read_layout(wrapper_text)
    lines = wrapper_text.splitlines()
    for text in lines[layout.call_start:layout.call_end or len(lines)]:
        kernel = wrapper_code.kernel_launch(text) or wrapper_code.extern_call(text)
        if not kernel:
            continue
        for word in set(re.findall(r"\b\w+\b", text)) & names:
            if kernel not in found.setdefault(word, []):
                found[word].append(kernel)
    return found
