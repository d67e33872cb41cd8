"""Attach a chrome trace's device time to a run of the store: read, join, write."""
from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from kernelscope.errors import StoreError
from kernelscope.profile.join import JoinResult, RunGraph, RunKernel, join
from kernelscope.profile.trace import load_trace
from kernelscope.store import StoreBackend
from kernelscope.store.parts.profiles import ProfileRecord, RunProfile


def run_graphs(store: StoreBackend, run_id: int) -> list[RunGraph]:
    """The run's graphs with their kernels and extern calls, as the join needs them."""
    graphs: dict[int, RunGraph] = {}
    kernels = defaultdict(list)
    for kernel in store.run(run_id).profile_kernels():
        graphs.setdefault(kernel.graph_id, RunGraph(kernel.graph_id, f"[{kernel.compile_id}] {kernel.graph_kind}", []))
        kernels[kernel.graph_id].append(RunKernel(kernel.id, kernel.name, kernel.kind, kernel.wrapper_line))
    for graph_id, graph in graphs.items():
        graph.kernels = kernels[graph_id]
    return list(graphs.values())


def attach_trace(store: StoreBackend, trace_path: str | Path, run_id: int | None = None,
                 source: str = "kernelscope profile") -> tuple[RunProfile, JoinResult]:
    """Join the trace at `trace_path` to run `run_id` (the latest run when None) and
    store the result; ProfileMismatch when the trace is of another compile."""
    if run_id is None:
        run_id = store.latest_run_id()
        if run_id is None:
            raise StoreError(f"{store.root} has no run to attach a trace to: record one with "
                             "`kernelscope compile` or `kernelscope import LOGS` first")
    details = store.run(run_id).details()  # StoreError names the run when it does not exist
    trace = load_trace(trace_path)
    result = join(trace, run_graphs(store, run_id), f"run {run_id} ({details.summary.target})")
    record = ProfileRecord(
        source=source, trace_name=Path(trace_path).name, device_name=result.device_name,
        steps=result.steps, step_markers=result.step_markers, step_time_us=result.step_time_us,
        device_total_us=result.device_total_us,
        kernel_times={kernel_id: (t.total_us, t.launches) for kernel_id, t in result.kernels.items()},
        in_graphs_other=result.in_graphs_other, outside=result.outside, graph_calls=result.graph_calls,
        warnings=result.warnings,
    )
    store.attach_profile(run_id, record)
    profile = store.run(run_id).profile()
    if profile is None:  # deleted by another process since
        raise StoreError(f"run {run_id} was deleted while its profile was attached")
    return profile, result
