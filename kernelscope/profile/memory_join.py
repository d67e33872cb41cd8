"""Join a measured step's allocations to the wrapper lines that made them (docs/memory.md).

Pure: allocations with their Python frames in, wrapper lines out. Where the frames come
from is the engine's business (engine/memory_measure.py): the CUDA caching allocator's
history (`torch.cuda.memory._snapshot()`, each `alloc` of its `device_traces` with its
frames, innermost first) or the CPU allocator's events in torch.profiler.

A compiled graph runs its wrapper from Inductor's code cache, `<cache>/<xx>/<hash>.py`,
where `<hash>` is the hash of the wrapper's text: the file a recording computed for each
graph (GraphMemory.wrapper_file). An allocation joins the innermost of its frames in one of
those files, at that frame's line — a line of the stored wrapper, which is the same text.
Frames are matched by the file's name (the hash), so a path the profiler shortened, or a
cache directory moved since, still joins. An allocation with no such frame (the autograd
engine's, AOTAutograd's restrided tangent, the loss) is counted, not joined.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import PurePath


@dataclass
class Allocation:
    bytes: int
    frames: list[tuple[str, int]] = field(default_factory=list)  # (file, line), innermost first


@dataclass
class JoinedLine:
    graph: str  # graph key
    line: int  # wrapper line
    allocations: int = 0
    bytes: int = 0


@dataclass
class Join:
    allocations: int = 0
    joined: int = 0
    joined_bytes: int = 0
    lines: list[JoinedLine] = field(default_factory=list)  # by graph, then line


def wrapper_names(wrapper_files: Mapping[str, str]) -> dict[str, str]:
    """graph key -> its wrapper file, turned into file name -> graph key."""
    return {PurePath(path).name: key for key, path in wrapper_files.items() if path}


def join_allocations(allocations: Iterable[Allocation], wrapper_files: Mapping[str, str]) -> Join:
    """`wrapper_files`: graph key -> the file its wrapper runs from."""
    by_name = wrapper_names(wrapper_files)
    found = Join()
    lines: dict[tuple[str, int], JoinedLine] = {}
    for allocation in allocations:
        found.allocations += 1
        for file, line in allocation.frames:
            graph = by_name.get(PurePath(file).name)
            if graph is None:
                continue
            entry = lines.setdefault((graph, line), JoinedLine(graph, line))
            entry.allocations += 1
            entry.bytes += allocation.bytes
            found.joined += 1
            found.joined_bytes += allocation.bytes
            break
    found.lines = [lines[key] for key in sorted(lines)]
    return found


def snapshot_allocations(snapshot: Mapping) -> list[Allocation]:
    """The allocations of a `torch.cuda.memory._snapshot()`: each `alloc` event of its device
    traces, its size (the allocator's block) and frames (`filename`, `line`), innermost first."""
    return [Allocation(int(event.get("size", 0)),
                       [(frame.get("filename", ""), int(frame.get("line", 0))) for frame in event.get("frames", [])])
            for trace in snapshot.get("device_traces", []) for event in trace if event.get("action") == "alloc"]
