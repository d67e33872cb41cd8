"""`--memory`: the compiled step run once more with every allocation recorded, to set the
measured memory beside what the wrappers predict (docs/memory.md).

The recording's own call compiled the model (and paid what a first call allocates once: a
GPU's cuBLAS workspace); this is the second call, Dynamo's cache running the very wrappers
the recording stored, from the files Inductor wrote them to. The step is kernelscope's
(user_model.scalar_loss): the outputs summed into a loss and dropped, then the backward;
gradients are set to None first, so the ones the step makes count.
- On a GPU (`--target cuda`): `torch.cuda.max_memory_allocated()` over the step, above
  `memory_allocated()` before it, and the caching allocator's history
  (`torch.cuda.memory._record_memory_history`, then `_snapshot()`): every allocation with
  its size (the allocator's block) and Python frames.
- On cpu-triton `--execute` (the kernels in Triton's interpreter, the wrappers really
  run): torch.profiler with `profile_memory` — each CPU allocation and free in order (the
  peak is their running sum's highest point). Without frames: with the profiler's Python
  stacks (`with_stack`) over Triton's interpreter, which runs every kernel in Python, the
  run for examples/mlp.py was killed by the system after 13 minutes on a 2-core machine,
  so on the CPU the peak is measured and no allocation is joined to a line. Triton's interpreter also
  keeps a Triton kernel's arguments alive until about its next launch (a tensor the wrapper
  `del`s after a Triton kernel is freed a launch late), so on a model with Triton kernels
  the CPU's peak is above what a GPU's allocator holds; one with extern kernels only (mm)
  measures as a GPU would.
profile/memory_join.py joins the frames to wrapper lines.
"""
from __future__ import annotations

import gc
from dataclasses import dataclass, field

from kernelscope.errors import UserError
from kernelscope.profile.memory_join import Allocation, join_allocations, snapshot_allocations
from kernelscope.run_record import GraphRecord, MeasuredLine, MeasuredMemory

HISTORY_ENTRIES = 1_000_000  # the allocator history's ring: far more than one step allocates


@dataclass
class MeasuredStep:
    device: str
    method: str
    before_bytes: int
    peak_bytes: int  # above before_bytes
    allocations: list[Allocation] = field(default_factory=list)


def check_target(device: str, execute: bool) -> None:
    if device == "cuda" or (device == "cpu-triton" and execute):
        return
    raise UserError(f"--memory measures the compiled step as it runs, and on {device} "
                    f"{'nothing runs' if device != 'cpu-triton' else 'the kernels run only with --execute'}: "
                    "use --target cuda on a GPU, or --target cpu-triton --execute")


def measure_step(model, inputs: tuple, train: bool, device: str) -> MeasuredStep:
    import torch

    from kernelscope.engine.user_model import scalar_loss

    compiled = torch.compile(model)

    def step() -> None:
        if train:
            scalar_loss(compiled(*inputs)).backward()
        else:
            with torch.no_grad():
                compiled(*inputs)

    if train and isinstance(model, torch.nn.Module):
        model.zero_grad(set_to_none=True)
    for tensor in inputs:
        if isinstance(tensor, torch.Tensor) and tensor.grad is not None:
            tensor.grad = None
    gc.collect()
    if device == "cuda":
        return _on_cuda(step)
    return _on_cpu(step)


def _on_cuda(step) -> MeasuredStep:
    import torch

    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    # Python frames only (`stacks="python"`): the join needs the wrapper's file and line, and
    # unwinding every C++ stack would slow each allocation of the step
    torch.cuda.memory._record_memory_history(context="all", stacks="python", max_entries=HISTORY_ENTRIES)
    try:
        step()
        torch.cuda.synchronize()
        peak = torch.cuda.max_memory_allocated()
        snapshot = torch.cuda.memory._snapshot()
    finally:
        torch.cuda.memory._record_memory_history(enabled=None)
    return MeasuredStep("cuda", "the CUDA caching allocator's history (torch.cuda.memory._snapshot)", before,
                        peak - before, snapshot_allocations(snapshot))


def _on_cpu(step) -> MeasuredStep:
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as profiler:
        step()
    events = sorted(_allocation_events(profiler.profiler.kineto_results.experimental_event_tree()),
                    key=lambda event: event.start_time_ns)
    live = peak = 0
    allocations = []
    for event in events:
        size = event.typed[1].alloc_size
        live += size
        peak = max(peak, live)
        if size > 0:
            allocations.append(Allocation(size))
    before = events[0].typed[1].total_allocated - events[0].typed[1].alloc_size if events else 0
    return MeasuredStep("cpu", "the CPU allocator's events in torch.profiler (profile_memory; no frames)",
                        before, peak, allocations)


def _allocation_events(roots) -> list:
    from torch._C._profiler import _EventType

    found, stack = [], list(roots)
    while stack:
        event = stack.pop()
        if event.typed[0] == _EventType.Allocation:
            found.append(event)
        stack.extend(event.children)
    return found


def joined(step: MeasuredStep, graphs: list[GraphRecord]) -> MeasuredMemory:
    """The measured step with its allocations joined to the wrapper lines of `graphs`."""
    files = {graph.key: graph.memory.wrapper_file for graph in graphs
             if graph.memory is not None and graph.memory.wrapper_file}
    join = join_allocations(step.allocations, files)
    return MeasuredMemory(step.device, step.method, step.before_bytes, step.peak_bytes, join.allocations,
                          join.joined, join.joined_bytes,
                          [MeasuredLine(line.graph, line.line, line.allocations, line.bytes) for line in join.lines])
