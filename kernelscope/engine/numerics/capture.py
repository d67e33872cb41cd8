"""What a numerics run captures while the compiled model runs: each compiled graph's
inputs and, launch by launch, the buffers each Triton kernel wrote.

Two patches (patch_points "numerics"): `GraphLowering.compile_to_module` wraps the compiled
module's `call` (copying its inputs and marking which graph runs), and
`CachingAutotuner.run` copies, after each launch, every pointer argument the kernel writes
(Inductor names them `out_ptrN` and `in_out_ptrN`, and lists inputs it mutates in
`mutated_arg_names`). Copies are taken right after the launch: a buffer Inductor reuses
later holds another value by the end of the call.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kernelscope.engine import patch_points as points
from kernelscope.engine.patching import Patches, checked


@dataclass
class Launch:
    kernel: str
    outputs: dict[str, Any]  # pointer argument -> a copy of the tensor after the launch


@dataclass
class GraphCall:
    """One call of one compiled graph."""

    capture: Any  # the probes' GraphCapture of the graph (its post-grad GraphModule)
    gm: Any
    inputs: list  # copies of the graph's inputs, as `call` received them
    launches: list[Launch] = field(default_factory=list)


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

        def call_recorded(args):
            graph_call = GraphCall(capture, gm, [_copy(value) for value in args])
            numerics.calls.append(graph_call)
            outer, numerics._active = numerics._active, graph_call
            try:
                return call(args)
            finally:
                numerics._active = outer

        return call_recorded

    def _wrap_kernel_run(self, original):
        numerics = self

        def run(autotuner, *args, **kwargs):
            result = original(autotuner, *args, **kwargs)
            graph_call = numerics._active
            if graph_call is not None:
                names = autotuner.fn.arg_names
                written = written_arguments(autotuner)
                outputs = {name: _copy(value) for name, value in zip(names, args) if name in written}
                graph_call.launches.append(Launch(kernel_name(autotuner), outputs))
            return result

        return run
