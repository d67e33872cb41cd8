"""kernelscope: line-level provenance for torch.compile.

The Python API (docs/python-api.md)::

    import kernelscope

    run = kernelscope.record(model, x, train=True)       # compile, record, store
    run.query("model.py:27")                             # what that line became
    run.kernels, run.graph_breaks, run.profile           # the run, as `kernelscope show`

    with kernelscope.open(".kernelscope") as store:      # a store of runs
        store.runs, store.latest, store.query("model.py:27")

    with kernelscope.recording() as rec:                 # whatever torch.compile compiles inside
        torch.compile(model)(x)
    rec.run

Importing kernelscope is cheap: nothing is loaded until used, `open` and the answers
never import torch, and `record`/`recording` load the engine (and torch) when called.
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from kernelscope.version import __version__

# name -> the module that defines it (loaded on first use: PEP 562)
_PUBLIC = {
    "open": "kernelscope.api.store",
    "Store": "kernelscope.api.store",
    "Runs": "kernelscope.api.store",
    "Run": "kernelscope.api.store",
    "Answer": "kernelscope.api.answer",
    "record": "kernelscope.api.recording",
    "recording": "kernelscope.api.recording",
    "Recorder": "kernelscope.api.recording",
    "UserError": "kernelscope.errors",
    "StoreError": "kernelscope.errors",
    "TargetError": "kernelscope.errors",
    "CompileError": "kernelscope.errors",
}

__all__ = sorted(_PUBLIC) + ["__version__"]

if TYPE_CHECKING:
    from kernelscope.api.answer import Answer
    from kernelscope.api.recording import Recorder, record, recording
    from kernelscope.api.store import Run, Runs, Store, open
    from kernelscope.errors import CompileError, StoreError, TargetError, UserError


def __getattr__(name: str) -> Any:
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'kernelscope' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
