"""What a numerics run captures while the compiled model runs: each compiled graph's
inputs and, launch by launch, the buffers each Triton kernel wrote and what each extern
kernel (mm, addmm, bmm, convolution) or fallback op returned.

Two patches (patch_points "numerics"): `GraphLowering.compile_to_module` wraps the compiled
module's `call` (copying its inputs and marking which graph runs), and
`CachingAutotuner.run` copies, after each launch, every pointer argument the kernel writes
(Inductor names them `out_ptrN` and `in_out_ptrN`, and lists inputs it mutates in
`mutated_arg_names`). Copies are taken right after the launch: a buffer Inductor reuses
later holds another value by the end of the call.

Extern kernels and fallbacks are aten ops the wrapper calls itself
(`extern_kernels.mm(..., out=buf1)`, `buf7 = torch.ops.aten.topk.default(...)`): while a
graph's `call` runs, a dispatch mode (`WrapperOps`) sees each aten op, finds the wrapper line
that called it (the `call` frame's current line) and, on a line that calls an extern kernel or
a fallback, keeps the last op's result (its `out=` tensor, or every tensor of a multi-output
op's tuple). The copy is taken when the wrapper moves on: at its next op on another line, at
the next Triton launch (which may write the same buffer in place), or when `call` returns.
"""
from __future__ import annotations

import functools
import re
import sys
from dataclasses import dataclass, field
from typing import Any

from kernelscope.engine import patch_points as points
from kernelscope.engine.patching import Patches, checked


@dataclass
class Launch:
    kernel: str  # a Triton kernel's name, or what a wrapper line calls (extern_kernels.mm)
    outputs: dict[str, Any]  # pointer argument (or out, out[0], ...) -> a copy of the tensor after the launch
    wrapper_line: int = 0  # an extern kernel's or fallback's call: its line in the wrapper (0: a Triton launch)


@dataclass
class GraphCall:
    """One call of one compiled graph."""

    capture: Any  # the probes' GraphCapture of the graph (its post-grad GraphModule)
    gm: Any
    inputs: list  # copies of the graph's inputs, as `call` received them
    launches: list[Launch] = field(default_factory=list)
    wrapper_ops: Any = None  # the WrapperOps seeing this call's extern kernels while it runs


# A wrapper line that calls an extern kernel or a fallback op, and what it calls.
_EXTERN_CALL = re.compile(r"^\s*(?:\w+\s*=\s*)?(extern_kernels\.\w+|torch\.ops\.\w+\.\w+\.\w+)\(")


def _copy(value):
    import torch

    return value.detach().clone() if isinstance(value, torch.Tensor) else value


def written_arguments(autotuner) -> list[str]:
    """The pointer arguments a Triton kernel of Inductor's writes."""
    mutated = set(getattr(autotuner, "mutated_arg_names", ()) or ())
    return [name for name in autotuner.fn.arg_names
            if name.startswith(("out_ptr", "in_out_ptr")) or name in mutated]


def kernel_name(autotuner) -> str:
    meta = getattr(autotuner, "inductor_meta", None) or {}
    return meta.get("kernel_name") or getattr(autotuner.fn, "__name__", "?")


class NumericsCapture:
    """Installed around the compiled model's calls; `calls` lists every graph call seen."""

    def __init__(self, probes):
        self.probes = probes  # engine/probes.py: the GraphCapture of each lowered graph
        self.calls: list[GraphCall] = []
        self._active: GraphCall | None = None
        self._patches = Patches()

    def __enter__(self):
        checked(points.NUMERICS_COMPILE_TO_MODULE, points.NUMERICS_KERNEL_RUN)
        self._patches.wrap(points.NUMERICS_COMPILE_TO_MODULE, self._wrap_compile_to_module)
        self._patches.wrap(points.NUMERICS_KERNEL_RUN, self._wrap_kernel_run)
        return self

    def __exit__(self, *exc):
        self._patches.restore()

    def _capture_of(self, graph_lowering):
        return next((capture for capture in reversed(self.probes.graphs)
                     if capture.post_grad_gm is graph_lowering.module), None)

    def _wrap_compile_to_module(self, original):
        numerics = self

        def compile_to_module(graph_lowering):
            module = original(graph_lowering)
            capture = numerics._capture_of(graph_lowering)
            if capture is not None and hasattr(module, "call"):
                module.call = numerics._wrap_call(module.call, capture, graph_lowering.module)
            return module

        return compile_to_module

    def _wrap_call(self, call, capture, gm):
        numerics = self
        code = getattr(getattr(call, "__func__", call), "__code__", None)

        def call_recorded(args):
            graph_call = GraphCall(capture, gm, [_copy(value) for value in args])
            numerics.calls.append(graph_call)
            outer, numerics._active = numerics._active, graph_call
            ops = WrapperOps(code, graph_call)
            try:
                with ops:
                    return call(args)
            finally:
                ops.finish()
                numerics._active = outer

        return call_recorded

    def _wrap_kernel_run(self, original):
        numerics = self

        def run(autotuner, *args, **kwargs):
            graph_call = numerics._active
            if graph_call is not None and graph_call.wrapper_ops is not None:
                graph_call.wrapper_ops.finish()  # an extern output this kernel may now write in place
            result = original(autotuner, *args, **kwargs)
            if graph_call is not None:
                names = autotuner.fn.arg_names
                written = written_arguments(autotuner)
                outputs = {name: _copy(value) for name, value in zip(names, args) if name in written}
                graph_call.launches.append(Launch(kernel_name(autotuner), outputs))
            return result

        return run


def _extern_lines(code) -> dict[int, str]:
    """Line -> what it calls, for the wrapper lines of `code` (its `call`) that call an extern
    kernel or a fallback op."""
    import linecache

    if code is None:
        return {}
    found = {}
    for number, text in enumerate(linecache.getlines(code.co_filename), 1):
        match = _EXTERN_CALL.match(text)
        if match:
            found[number] = match.group(1)
    return found


@functools.cache
def _wrapper_ops_class():
    from torch.utils._python_dispatch import TorchDispatchMode

    class WrapperOpsMode(TorchDispatchMode):
        """Sees the aten ops run while a compiled graph's `call` runs (see the module's doc)."""

        def __init__(self, code, graph_call: GraphCall):
            super().__init__()
            self.code = code
            self.graph_call = graph_call
            self.lines = _extern_lines(code)
            self.pending: tuple[int, Any] | None = None  # (wrapper line, the tensor(s) its op wrote)
            graph_call.wrapper_ops = self

        def _wrapper_line(self) -> int:
            frame = sys._getframe(2)
            while frame is not None and frame.f_code is not self.code:
                frame = frame.f_back
            return frame.f_lineno if frame is not None else 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            result = func(*args, **kwargs)
            line = self._wrapper_line() if self.lines else 0
            if line and self.pending is not None and self.pending[0] != line:
                self.finish()
            if line in self.lines:
                self.pending = (line, kwargs["out"] if "out" in kwargs else result)
            return result

        def finish(self) -> None:
            """Copy the pending line's output(s) into the graph call's launches."""
            if self.pending is None:
                return
            line, value = self.pending
            self.pending = None
            import torch

            if isinstance(value, torch.Tensor):
                outputs = {"out": _copy(value)}
            elif isinstance(value, (tuple, list)):
                outputs = {f"out[{index}]": _copy(item) for index, item in enumerate(value)
                           if isinstance(item, torch.Tensor)}
            else:
                return
            self.graph_call.launches.append(Launch(self.lines[line], outputs, wrapper_line=line))

    return WrapperOpsMode


def WrapperOps(code, graph_call: GraphCall):  # noqa: N802 - a class, made when torch is imported
    """The dispatch mode that copies what a graph call's extern kernels and fallbacks wrote."""
    return _wrapper_ops_class()(code, graph_call)
