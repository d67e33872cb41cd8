"""An audit of the device queries made while virtual-cuda compiles a graph.

`log_device_queries()` records, while active, every device query on the fake
tensors of the compile itself (the fake mode Dynamo traced with, which AOTAutograd
and Inductor share; Inductor's pattern set-up traces its example patterns in
throw-away fake modes, on the CPU as on a GPU, and is left out):

- Python reads of a fake tensor's device — `t.device` (and so `t.device.type`,
  `is_gpu(t.device.type)`, `node.meta["val"].device`), `t.is_cuda`,
  `t.get_device()` — with the answer given, the torch module that asked, and
  whether the tensor is 0-dimensional or empty (a 0-dim CPU tensor can be right: a
  Python number Dynamo passes under dynamic shapes is a CPU scalar on a GPU too;
  the 0 of `where(mask, 0, x)`, made from `x`'s device, is not);
- C++ reads of its device (`device()`, asked by composite ops while they
  decompose, by autograd's engine and by device guards) answered `cpu`, on purpose
  where no GPU decision depends on them (see fake_cuda.py); they are only counted.

A query asked while FakeTensorMode runs a meta kernel answers `meta`; those are
recorded as such. Not recorded: device reads of real tensors (constants in a
graph), and devices Inductor keeps in its own IR after lowering (they are copied
from the fake tensors' Python answers).
"""
from __future__ import annotations

import contextlib
import os
import sys
from collections import Counter
from dataclasses import dataclass, field

_active: list[DeviceQueryLog] = []
_compile_modes: list = []  # the fake modes of the virtual-cuda compiles in progress


@dataclass
class DeviceQueryLog:
    # (query kind, answered device type, asking module, "0-dim" / "empty" / "") -> count
    python: Counter = field(default_factory=Counter)
    cpp: int = 0
    corrected: int = 0  # ops told device=cpu by a C++ composite, given cuda (fake_cuda._on_cuda_kwargs)

    def answered(self, device_type: str, all_shapes: bool = False) -> Counter:
        """The Python queries answered with `device_type`, by (kind, module); queries on
        0-dim and empty tensors only with `all_shapes`."""
        found = Counter()
        for (kind, answer, module, shape), count in self.python.items():
            if answer == device_type and (all_shapes or not shape):
                found[(kind, module)] += count
        return found

    def summary(self) -> dict:
        by_answer = Counter()
        for (_, answer, _, shape), count in self.python.items():
            by_answer[answer + (f" ({shape})" if shape else "")] += count
        return {"python": dict(by_answer), "cpp_answered_cpu": self.cpp,
                "cpu_device_arguments_made_cuda": self.corrected}


@contextlib.contextmanager
def log_device_queries():
    """Record the device queries of every virtual-cuda compile made while inside."""
    log = DeviceQueryLog()
    _active.append(log)
    try:
        yield log
    finally:
        _active.remove(log)


@contextlib.contextmanager
def compiling_with(fake_mode):
    """Mark `fake_mode` as a virtual-cuda compile's own while inside (see the docstring)."""
    _compile_modes.append(fake_mode)
    try:
        yield
    finally:
        _compile_modes.remove(fake_mode)


def is_compile_mode(fake_mode) -> bool:
    """Whether `fake_mode` is the fake mode of a virtual-cuda compile in progress (not one a
    program's own code made, as FlexAttention's eager autograd does for its score_mod)."""
    return fake_mode is not None and any(fake_mode is mode for mode in _compile_modes)


def note_python_query(tensor, kind: str, answer) -> None:
    if not _active or not any(tensor.fake_mode is mode for mode in _compile_modes):
        return
    module = _asking_module(sys._getframe(2))
    sizes = tensor.shape  # no arithmetic on symbolic sizes: that would add guards
    shape = "0-dim" if len(sizes) == 0 else "empty" if any(type(size) is int and size == 0 for size in sizes) else ""
    for log in _active:
        log.python[(kind, answer.type, module, shape)] += 1


def note_cpp_answer_corrected() -> None:
    for log in _active:
        log.corrected += 1


def note_cpp_query(tensor) -> None:
    if not _active or not any(tensor.fake_mode is mode for mode in _compile_modes):
        return
    for log in _active:
        log.cpp += 1


_HERE = os.path.dirname(os.path.abspath(__file__))


def _asking_module(frame) -> str:
    """The module (as a dotted path from `torch`) of the frame that asked."""
    while frame is not None and os.path.dirname(os.path.abspath(frame.f_code.co_filename)) == _HERE:
        frame = frame.f_back
    if frame is None:
        return "?"
    path = frame.f_code.co_filename
    marker = os.sep + "torch" + os.sep
    if marker in path:
        return "torch." + path.rsplit(marker, 1)[1].removesuffix(".py").replace(os.sep, ".")
    return os.path.basename(path)
