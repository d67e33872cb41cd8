"""The step's peak: the most a whole compiled step holds at once above what its caller held
before it (parameters, inputs), from the graphs' wrapper timelines (docs/memory.md).

The step is kernelscope's own: the compiled forward graphs in order, the loss summed from
their outputs, then the backward graphs in reverse order (`--train`). What is live when:
- a forward or inference graph: its own buffers over its timeline (its inputs are the
  caller's), plus the activations earlier forwards saved for backwards not yet run;
- between forward and backward: only what the forwards saved. A user output that is not
  also saved is dropped once the loss is summed from it;
- a backward: its saved activations and tangents (the loss's gradient, a tensor of its
  own) from the start, each freed at the wrapper's `del` that ends its last use (only the
  backward holds them: AOTAutograd clears the autograd context's saved tensors and the
  wrapper clears its argument list); its own buffers over its timeline; the activations of
  the backwards still to run; the gradients earlier backwards returned (they become
  `.grad`).
Each graph's part is its timeline walked again (so a size function — the allocator's
block rounding — can be applied to every allocation). Across graph breaks, a backward's
tangents that an earlier backward returned are counted twice (once as its output, once
as the next backward's input): the step is over-predicted by those bytes there.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from kernelscope.compile_text.wrapper_memory import owned_inputs


@dataclass
class StepGraph:
    """What the step needs of one graph's memory."""

    key: str
    kind: str  # forward | backward | inference
    compile_id: str
    events: list[tuple[int, str, int]] = field(default_factory=list)  # (wrapper line, action, bytes)
    inputs: list[tuple[str, int]] = field(default_factory=list)  # (name, bytes), in order
    output_bytes: list[int] = field(default_factory=list)  # each output buffer the graph allocated

    @property
    def owned(self) -> frozenset[str]:
        return owned_inputs(self.kind == "backward", [name for name, _ in self.inputs])


@dataclass
class StepPeak:
    bytes: int  # above what the caller held before the step
    graph: str  # key of the graph whose call reaches it ("" when no graph allocates)
    line: int  # that graph's wrapper line


def graph_top(graph: StepGraph, size: Callable[[int], int] = int) -> tuple[int, int]:
    """(the most the call holds above its caller's inputs, the wrapper line where): its owned
    inputs from the start, then each allocation and free of its timeline."""
    live = sum(size(count) for name, count in graph.inputs if name in graph.owned)
    top, line = live, 0
    for number, action, count in graph.events:
        if action == "allocate":
            live += size(count)
        elif action == "free":
            live -= size(-count)
        if live > top:
            top, line = live, number
    return top, line


def saved_bytes(backward: StepGraph, size: Callable[[int], int] = int) -> int:
    """The activations a backward takes from its forward (its owned inputs but the tangents)."""
    return sum(size(count) for name, count in backward.inputs
               if name in backward.owned and not name.startswith("tangents"))


def step_peak(graphs: Sequence[StepGraph], size: Callable[[int], int] = int) -> StepPeak:
    """`graphs` in the order they were compiled (a backward after its forward)."""
    backward_of = {graph.compile_id: graph for graph in graphs if graph.kind == "backward"}
    runs_first = [graph for graph in graphs if graph.kind in ("forward", "inference")]
    best = StepPeak(0, "", 0)
    held = grads = 0

    def consider(graph: StepGraph, around: int) -> None:
        nonlocal best
        top, line = graph_top(graph, size)
        if around + top > best.bytes:
            best = StepPeak(around + top, graph.key, line)

    for graph in runs_first:
        consider(graph, held)
        backward = backward_of.get(graph.compile_id) if graph.kind == "forward" else None
        if backward is not None:
            held += saved_bytes(backward, size)
    for graph in reversed(runs_first):
        backward = backward_of.get(graph.compile_id) if graph.kind == "forward" else None
        if backward is None:
            continue
        held -= saved_bytes(backward, size)
        consider(backward, held + grads)
        grads += sum(size(count) for count in backward.output_bytes)
    return best


def from_buffers(key: str, kind: str, compile_id: str, events: Iterable[tuple[int, str, int]],
                 buffers: Iterable) -> StepGraph:
    """A StepGraph from a graph's timeline and its buffers (run_record.MemoryBuffer or the
    store's BufferMemory: both have name, kind, bytes, is_output)."""
    buffers = list(buffers)
    return StepGraph(key, kind, compile_id, list(events),
                     [(buffer.name, buffer.bytes) for buffer in buffers if buffer.kind == "input"],
                     [buffer.bytes for buffer in buffers if buffer.kind == "buffer" and buffer.is_output])
