"""Read a torch.profiler chrome trace (`export_chrome_trace`, `.json` or `.json.gz`).

What the join needs from it, and where each piece is in the trace:
- device activity: events of cat `kernel`, `gpu_memcpy`, `gpu_memset` (GPU
  timeline, `dur` in microseconds), each with a `correlation` id;
- the CPU call that launched each one: the `cuda_runtime` / `cuda_driver` event
  (`cudaLaunchKernel`, `cuLaunchKernel`, ...) with the same `correlation`;
- the CPU ops around that launch, found by nesting on the launching thread:
  Inductor's `## Call CompiledFxGraph <key> ##` range around each call of a
  compiled graph, the op a wrapper line issued inside it (`aten::mm` for
  `extern_kernels.mm`, `triton_...` for a Triton launch), and everything else
  (eager ops, `Optimizer.step#SGD.step`, autograd's own work);
- steps: the `ProfilerStep#N` ranges `torch.profiler`'s schedule writes.

No torch: this reads JSON only.
"""
from __future__ import annotations

import gzip
import json
from dataclasses import dataclass, field
from pathlib import Path

from kernelscope.errors import UserError

DEVICE_CATEGORIES = ("kernel", "gpu_memcpy", "gpu_memset")
LAUNCH_CATEGORIES = ("cuda_runtime", "cuda_driver")
CPU_CATEGORIES = ("cpu_op", "user_annotation", "python_function")
GRAPH_CALL_PREFIX = "## Call CompiledFxGraph"
STEP_PREFIX = "ProfilerStep#"


class TraceError(UserError):
    """The file is not a torch.profiler chrome trace kernelscope can read."""


@dataclass
class CpuEvent:
    name: str
    category: str
    thread: tuple  # (pid, tid)
    start: float  # microseconds
    duration: float
    parent: CpuEvent | None = None

    @property
    def end(self) -> float:
        return self.start + self.duration

    def ancestors(self):
        """This event's enclosing events, innermost first."""
        event = self.parent
        while event is not None:
            yield event
            event = event.parent


@dataclass
class DeviceEvent:
    """One kernel (or memcpy/memset) on the GPU, with the CPU call that launched it."""

    name: str
    category: str
    start: float
    duration: float
    correlation: int | None
    launch: CpuEvent | None = None  # the cudaLaunchKernel / cuLaunchKernel event, if in the trace

    def enclosing(self):
        """The CPU ops and ranges around the launch, innermost first."""
        return self.launch.ancestors() if self.launch is not None else iter(())


@dataclass
class Trace:
    path: str
    device_name: str  # e.g. "NVIDIA H100 80GB HBM3", "" when the trace does not say
    device_events: list[DeviceEvent]
    cpu_events: list[CpuEvent]
    steps: list[CpuEvent] = field(default_factory=list)  # ProfilerStep#N ranges, in order

    @property
    def graph_calls(self) -> list[CpuEvent]:
        return [event for event in self.cpu_events if event.name.startswith(GRAPH_CALL_PREFIX)]


def graph_call_key(event: CpuEvent) -> str:
    """`## Call CompiledFxGraph fab12... ##` -> "fab12..." ("None" when Inductor had no cache key)."""
    return event.name[len(GRAPH_CALL_PREFIX):].strip(" #")


def load_trace(path: str | Path) -> Trace:
    """Parse a chrome trace file; TraceError names the file and what is wrong."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as error:
        raise TraceError(f"{path}: cannot read the trace: {error.strerror}") from error
    try:
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
        data = json.loads(raw)
    except (OSError, EOFError, ValueError) as error:
        raise TraceError(
            f"{path}: not a chrome trace (JSON or gzipped JSON) — {error}; write one with "
            "torch.profiler's `prof.export_chrome_trace(PATH)`"
        ) from error
    events = data.get("traceEvents") if isinstance(data, dict) else data if isinstance(data, list) else None
    if not isinstance(events, list):
        raise TraceError(f"{path}: no `traceEvents` list — is this a torch.profiler chrome trace?")
    return parse_events(str(path), events, _device_name(data))


def parse_events(path: str, events: list, device_name: str = "") -> Trace:
    launches: dict[int, CpuEvent] = {}
    cpu: list[CpuEvent] = []
    device: list[DeviceEvent] = []
    for event in events:
        if not isinstance(event, dict) or event.get("ph") != "X":
            continue
        category = event.get("cat")
        try:
            start, duration = float(event["ts"]), float(event.get("dur", 0.0))
        except (KeyError, TypeError, ValueError):
            continue
        args = event.get("args")
        if not isinstance(args, dict):
            args = {}
        name = str(event.get("name", ""))
        if category in DEVICE_CATEGORIES:
            device.append(DeviceEvent(name, category, start, duration, _int_or_none(args.get("correlation"))))
        elif category in CPU_CATEGORIES or category in LAUNCH_CATEGORIES:
            cpu_event = CpuEvent(name, category, (str(event.get("pid")), str(event.get("tid"))), start, duration)
            cpu.append(cpu_event)
            correlation = _int_or_none(args.get("correlation"))
            if category in LAUNCH_CATEGORIES and correlation is not None:
                launches[correlation] = cpu_event
    if not device and not cpu:
        raise TraceError(f"{path}: the trace holds no CPU or GPU events")
    _nest(cpu)
    for event in device:
        if event.correlation is not None:
            event.launch = launches.get(event.correlation)
    steps = sorted((e for e in cpu if e.name.startswith(STEP_PREFIX) and e.category == "user_annotation"),
                   key=lambda e: e.start)
    device.sort(key=lambda e: e.start)
    return Trace(path, device_name, device, cpu, steps)


def _nest(events: list[CpuEvent]) -> None:
    """Set each event's parent: the innermost event of its thread that contains it."""
    events.sort(key=lambda e: (e.thread, e.start, -e.duration))
    stack: list[CpuEvent] = []
    for event in events:
        # Timestamps are rounded: a child may end a few nanoseconds after its parent.
        while stack and (stack[-1].thread != event.thread or stack[-1].end + 0.01 < event.end):
            stack.pop()
        event.parent = stack[-1] if stack else None
        stack.append(event)


def _device_name(data) -> str:
    if isinstance(data, dict):
        listed = data.get("deviceProperties")
        for properties in listed if isinstance(listed, list) else []:
            if isinstance(properties, dict) and properties.get("name"):
                return str(properties["name"])
    return ""


def _int_or_none(value) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None
