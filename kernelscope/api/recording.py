"""Recording from Python: `kernelscope.record(model, *inputs)` and
`with kernelscope.recording(): ...`.

The model lives in the caller's process, so it is compiled right here, through the
engine (`kernelscope.engine.recorder`: the code path of `kernelscope compile`, and of
`kernelscope run` for the block form), and the run is written into a store with
`write_run` — the function `kernelscope compile` and `kernelscope run` write with.
The engine (and so torch) is imported when a recording starts, never before.
"""
from __future__ import annotations

import contextlib
import inspect
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from kernelscope.errors import UserError
from kernelscope.store import DEFAULT_STORE_DIR

if TYPE_CHECKING:
    from kernelscope.api.store import Run, Store
    from kernelscope.run_record import RunRecord

TARGETS = ("auto", "cuda", "virtual-cuda", "cpu-triton", "cpu")
_recording: Recorder | None = None  # the block recording now, if any
F = TypeVar("F", bound=Callable[..., Any])


def record(model: Any, *inputs: Any, train: bool = False, target: str = "auto", dynamic: bool = False,
           store: str | os.PathLike[str] | Store = DEFAULT_STORE_DIR, name: str | None = None,
           numerics: bool = False) -> Run:
    """Compile `model(*inputs)` with torch.compile, record its provenance and write the run
    into `store`; returns the Run.

    `model` is an `nn.Module` or a function (a string `"path.py:factory"` records what
    that factory returns, as `kernelscope compile` does). `train=True` also compiles the
    backward of the sum of the outputs; `target` is "auto" (a GPU if there is one, else
    virtual-cuda), "cuda", "virtual-cuda" (the CUDA code Inductor would generate, no GPU
    needed), "cpu-triton" or "cpu" (Inductor's C++ kernels, run); `dynamic=True` marks the
    inputs' first dimension dynamic.
    `name` names the run (default: the model's file and class, `examples/mlp.py:MLP`).
    `numerics=True` does what `kernelscope numerics` does (target "cpu-triton" or "cuda";
    "auto": cuda with a GPU, else cpu-triton): every kernel output compared with eager, the
    first divergence at its model line, the fixes tried; read them as `run.numerics`
    (docs/numerics.md). cpu-triton runs the kernels in Triton's interpreter, which must be
    chosen before torch loads its Triton helpers: set TRITON_INTERPRET=1 before `import torch`.

    Recording resets torch.compile's state (`torch._dynamo.reset()`) before and after, and
    with target "cuda" moves an `nn.Module` and the tensor inputs to the GPU. An exception
    in the model raises TargetError (CompileError when Inductor fails) naming the model's
    file:line; the store keeps its runs."""
    from kernelscope.engine.recorder import RecordOptions, record_factory, record_model

    _check_target(target)
    _check_not_recording()
    options = RecordOptions(device=target, train=train, dynamic=dynamic, workspace=Path.cwd())
    if numerics:
        options = _numerics_options(options)
    if isinstance(model, (str, os.PathLike)) and not inputs:
        def record_one(opts):
            return record_factory(str(model), opts)
    else:
        if not callable(model):
            raise UserError(f"kernelscope.record needs a model or function to call, got {type(model).__name__}")
        source = _source_file(model)
        shown = name or f"{_display(source, options.workspace) if source else '<python>'}:{_qualname(model)}"

        def record_one(opts):
            return record_model(model, inputs, opts, shown, source)
    recorded = record_one(options)
    if numerics and recorded.numerics is not None:
        from kernelscope.engine.numerics.fixes import try_fixes

        recorded.numerics.fixes = try_fixes(record_one, options, recorded.numerics)
    if name:
        recorded.target = name
    return write_run(recorded, store)


def _numerics_options(options):
    """RecordOptions for a numerics recording: kernels that run (cpu-triton's interpreter or the GPU)."""
    import dataclasses

    from kernelscope.engine.devices.device_target import resolve_device

    device = options.device
    if device == "auto":
        device = "cuda" if resolve_device("auto") == "cuda" else "cpu-triton"
    return dataclasses.replace(options, device=device, execute=device == "cpu-triton", numerics=True)


class Recorder(contextlib.ContextDecorator):
    """Records every graph torch.compile compiles inside a `with` block (or a decorated
    function); `run` is the Run it wrote once the block ended. Made by `recording()`."""

    def __init__(self, store: str | os.PathLike[str] | Store, target: str, name: str, source_file: Path | None,
                 named: bool = True):
        _check_target(target)
        self.store = store
        self.target = target
        self.name = name
        self.source_file = source_file
        self._named = named  # False: `name` is the caller's; a decorated function names the run instead
        self.run: Run | None = None
        self._block: contextlib.AbstractContextManager | None = None
        self._recorded: Any = None  # the engine's recording block (torch side: not typed here)

    def __enter__(self) -> Recorder:
        from kernelscope.engine.recorder import RecordOptions, record_block

        global _recording
        _check_not_recording()
        options = RecordOptions(device=self.target, workspace=Path.cwd())
        nothing = (f"{self.name}: nothing was compiled with torch.compile inside kernelscope.recording() "
                   "(call the compiled model inside the block)")
        self._block = record_block(options, self.name, self.source_file, nothing)
        self._recorded = self._block.__enter__()
        _recording = self
        return self

    def __exit__(self, *exc_info: Any) -> Literal[False]:
        global _recording
        block, self._block, _recording = self._block, None, None
        if block is None:  # not entered
            return False
        block.__exit__(*exc_info)  # raises the one-line error of a failed block
        if exc_info[0] is None:
            self.run = write_run(self._recorded.run, self.store)
        return False

    def __call__(self, func: F) -> F:
        if not self._named:  # a decorator names the run after its function
            source = _source_file(func)
            self.name = f"{_display(source, Path.cwd()) if source else '<python>'}:{func.__qualname__}"
            self.source_file = source or self.source_file
        return super().__call__(func)

    def __repr__(self) -> str:
        return f"<kernelscope recording {self.name}: {self.run!r}>"


def recording(*, store: str | os.PathLike[str] | Store = DEFAULT_STORE_DIR, target: str = "auto",
              name: str | None = None) -> Recorder:
    """Record whatever torch.compile compiles inside a `with` block (or each call of a
    decorated function) into `store`, as `kernelscope run` does for a script:

        with kernelscope.recording(store=".kernelscope") as rec:
            compiled = torch.compile(model)
            compiled(x).sum().backward()
        rec.run  # the Run

    `target` as for `record`; `name` names the run (default: the calling file and
    function, the decorated function, or the file alone at a script's top level).
    torch.compile's state is reset when the block starts and ends, so a model compiled
    inside recompiles (unrecorded) when called after it. An exception in the block
    raises TargetError naming the user's file:line, and no run is written."""
    frame = sys._getframe(1)
    called_from = Path(frame.f_code.co_filename)
    source = called_from if called_from.is_file() else None
    where = _display(source, Path.cwd()) if source else "<python>"
    function = frame.f_code.co_name
    shown = where if function == "<module>" else f"{where}:{function}"  # a script's top level: as `kernelscope run`
    return Recorder(store, target, name or shown, source, named=name is not None)


def write_run(recorded: RunRecord, store: str | os.PathLike[str] | Store) -> Run:
    """Write a recording into `store` (a path, created when missing, or an open Store),
    all or nothing; returns its Run. What `kernelscope compile` and `run` write with."""
    from kernelscope.api.store import Store

    opened = store if isinstance(store, Store) else Store(store, create=True)
    recorded.timings["store"] = 0.0
    return opened.run(opened.backend.write_run(recorded))


def _check_not_recording() -> None:
    """One recording at a time in a process: the engine patches torch while it records."""
    if _recording is not None:
        raise UserError(f"kernelscope.recording() is recording ({_recording.name}): recordings do not nest — "
                        "record after the block ends")


def _check_target(target: str) -> None:
    if target not in TARGETS:
        raise UserError(f"unknown target '{target}': choose one of {', '.join(TARGETS)}")


def _source_file(model: Any) -> Path | None:
    """The file that defines the model's class (an nn.Module) or the function; None for
    code typed at a prompt or in a notebook cell."""
    subject = model if inspect.isfunction(model) or inspect.ismethod(model) else type(model)
    try:
        found = inspect.getsourcefile(subject)
    except (TypeError, OSError):  # a class of __main__ (a notebook) or of a module not in sys.modules
        codes = [value.__code__ for value in vars(subject).values() if inspect.isfunction(value)]
        found = codes[0].co_filename if codes else None
    return Path(found) if found and Path(found).is_file() else None


def _qualname(model: Any) -> str:
    subject = model if inspect.isfunction(model) or inspect.ismethod(model) else type(model)
    return getattr(subject, "__qualname__", type(model).__name__)


def _display(path: Path, workspace: Path) -> str:
    """Workspace-relative where it can be (as runs name their targets), else absolute."""
    try:
        return path.resolve().relative_to(workspace.resolve()).as_posix()
    except ValueError:
        return str(path.resolve())
