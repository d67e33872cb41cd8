"""A graph's allocation timeline, read from its Inductor wrapper's `call` body (text only,
no torch; the sizes come from Inductor's IR, recorded at codegen by engine/memory.py).

The wrapper says when memory is taken and given back, one line each:
  buf0 = empty_strided_cuda((16, 128), (128, 1), torch.float32)     allocate
  buf4 = reinterpret_tensor(buf2, (16, 1), (1, 1), 0); del buf2  # reuse   buf4 takes buf2's storage
  buf5 = buf3[0]                                                     a fallback op's output (allocated by the op)
  buf7 = reinterpret_tensor(buf6, ...)   /   buf7 = buf6              a view of a live buffer: no new bytes
  del buf0                                                           free (when no other name holds the storage)
Names the wrapper binds that are not tensors Inductor sized (streams, a fallback op's tuple)
take no bytes. Graph inputs are held by the caller for the whole call (parameters, the
batch): they are the timeline's floor, never freed by the graph's own `del` — except the
`owned` ones, which only the call holds (a backward's saved activations and tangents:
AOTAutograd clears the autograd context's saved tensors and hands the backward its
arguments as a list the wrapper `clear()`s), freed at their `del`.
"""
from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field

from kernelscope.compile_text.wrapper_code import read_layout

_REUSE = re.compile(r"^\s*(\w+) = (.+); del (\w+)\s*# reuse\s*$")
_DEL = re.compile(r"^\s*del (\w+(?:\s*,\s*\w+)*)\s*$")
_ASSIGN = re.compile(r"^\s*(\w+) = (.+)$")
_VIEW_OF = re.compile(r"^(?:reinterpret_tensor\()?(\w+)\b(?!\[)")  # `buf6`, `reinterpret_tensor(buf6, ...)`


def owned_inputs(is_backward: bool, inputs: list[str]) -> frozenset[str]:
    """The inputs only the call holds: a backward's saved activations (named after the
    forward nodes that made them) and its `tangents_N` (the loss's gradient, which
    AOTAutograd restrides into a tensor of its own). Its `primals_N` (weights, the batch)
    and every input of a forward or inference graph are held by the caller."""
    if not is_backward:
        return frozenset()
    return frozenset(name for name in inputs if not name.startswith("primals_"))


@dataclass
class BufferSpan:
    """When one name held memory in the timeline."""

    allocated_line: int = 0
    freed_line: int = 0
    reused_by: str = ""
    live_at_peak: bool = False


@dataclass
class Timeline:
    events: list[tuple[int, str, str, int, int]] = field(default_factory=list)  # line, action, name, bytes, live
    spans: dict[str, BufferSpan] = field(default_factory=dict)
    peak_bytes: int = 0
    peak_line: int = 0
    inputs_bytes: int = 0


def read_timeline(wrapper_text: str, sizes: dict[str, int], inputs: list[str],
                  owned: frozenset[str] = frozenset()) -> Timeline:
    """`sizes`: bytes of every buffer and input Inductor sized (name -> bytes); `inputs`: the
    graph's tensor inputs; `owned`: those of them only the call holds (freed at their `del`).
    Every allocation, reuse and free of the call body, in order, with the bytes live after
    it; the peak and the names whose storage is live there."""
    layout = read_layout(wrapper_text)
    lines = wrapper_text.splitlines()
    start, end = layout.call_start, layout.call_end or len(lines)
    timeline = Timeline(inputs_bytes=sum(sizes.get(name, 0) for name in inputs))
    all_inputs = set(inputs)
    input_names = all_inputs - owned  # held by the caller: never freed here
    storage_of: dict[str, int] = {}  # live name -> storage id
    storage_bytes: dict[int, int] = {}
    holders: dict[int, set[str]] = {}
    owner: dict[int, str] = {}  # the name a storage's bytes count for (a view adds none)
    new_storage = itertools.count(1)
    for name in inputs:  # the call's own inputs: live from the start, each its own storage
        if name in owned and name in sizes:
            storage = next(new_storage)
            storage_of[name], storage_bytes[storage], holders[storage], owner[storage] = (storage, sizes[name],
                                                                                          {name}, name)
    live = timeline.inputs_bytes
    timeline.peak_bytes, peak_names = live, set(owner.values())

    def release(name: str) -> tuple[int, str]:
        """Drop a name; (bytes freed, the name they counted for) when it was the storage's last."""
        storage = storage_of.pop(name, None)
        if storage is None:
            return 0, name
        holders[storage].discard(name)
        if holders[storage]:  # a view still holds it; its bytes keep counting for the name that allocated it
            return 0, name
        return storage_bytes.pop(storage), owner.pop(storage)

    for number in range(start + 1, end):
        text = lines[number - 1]
        reuse = _REUSE.match(text)
        if reuse and reuse.group(3) in storage_of:
            new, old = reuse.group(1), reuse.group(3)
            storage = storage_of.pop(old)
            holders[storage].discard(old)
            holders[storage].add(new)
            storage_of[new], owner[storage] = storage, new
            timeline.spans.setdefault(old, BufferSpan()).freed_line = number
            timeline.spans[old].reused_by = new
            timeline.spans.setdefault(new, BufferSpan(allocated_line=number))
            timeline.events.append((number, "reuse", new, 0, live))
            continue
        deleted = _DEL.match(text)
        if deleted:
            for name in (part.strip() for part in deleted.group(1).split(",")):
                if name in input_names or name not in storage_of:
                    continue
                freed, counted_for = release(name)
                timeline.spans.setdefault(name, BufferSpan()).freed_line = number
                if freed:
                    live -= freed
                    timeline.events.append((number, "free", counted_for, -freed, live))
            continue
        assigned = _ASSIGN.match(text)
        if not assigned or assigned.group(1) in all_inputs or assigned.group(1) not in sizes:
            continue
        name, value = assigned.group(1), assigned.group(2).strip()
        if name in storage_of:
            live -= release(name)[0]
        view = _VIEW_OF.match(value)
        if view and view.group(1) in storage_of:  # another name for a live storage
            storage = storage_of[view.group(1)]
            storage_of[name] = storage
            holders[storage].add(name)
            timeline.spans[name] = BufferSpan(allocated_line=number)
            continue
        storage = next(new_storage)
        storage_of[name], storage_bytes[storage], holders[storage], owner[storage] = storage, sizes[name], {name}, name
        live += sizes[name]
        timeline.spans[name] = BufferSpan(allocated_line=number)
        timeline.events.append((number, "allocate", name, sizes[name], live))
        if live > timeline.peak_bytes:
            timeline.peak_bytes, timeline.peak_line = live, number
            peak_names = {owner[storage] for storage in storage_bytes}
    for name in peak_names:
        timeline.spans.setdefault(name, BufferSpan()).live_at_peak = True
    return timeline
