"""Models built on the meta device: recorded without materializing a weight.

A model too big for this machine is built on meta (`with torch.device("meta")`,
accelerate's `init_empty_weights`, the way torchtitan builds large models): its weights
have sizes and no values. Nothing Inductor generates depends on weight values, so
virtual-cuda records such a model as it records any other:
- Dynamo captures on the CPU (virtual-cuda's capture device): while it captures, a fake
  tensor made from a meta tensor says `cpu` (`captured_as_cpu`), so the captured graph,
  its device constants and Dynamo's guards are those of the same model on the CPU
  (Dynamo itself cannot trace meta models: `torch.tensor([], device="meta")` inside a
  graph, as transformers' DynamicCache makes it, is a real tensor among fake ones);
- the compile that follows works from sizes, strides and dtypes only (fake cuda tensors);
- Dynamo's graph then runs on meta tensors (`runs_on_meta`): every device it names reads
  meta and CPU tensors it meets (inputs, buffers kept on the CPU) move to meta, so sizes
  flow on through the program, and the backward of a training step, without a value.
What needs values does not happen: the outputs have no numbers, `--execute` cannot
compare, and Inductor's freezing (which folds weights into constants) is not applied.
`meta_tensors` names the meta tensors a factory returned, for the run's summary and for
the error a target that needs values (`--target cuda`, `cpu-triton`) gives.
"""
from __future__ import annotations

import contextlib
import functools

from kernelscope.engine import patch_points, patching

_capturing: list[bool] = []  # True while Dynamo captures (meta fakes say cpu), False while compiling


def meta_tensors(model, inputs) -> list[str]:
    """Names of the meta parameters, buffers and inputs of what a factory returned."""
    import torch

    names = []
    if isinstance(model, torch.nn.Module):
        names += [name for name, tensor in model.named_parameters() if tensor.is_meta]
        names += [name for name, tensor in model.named_buffers() if tensor.is_meta]
    names += [f"input {index}" for index, value in enumerate(inputs)
              if isinstance(value, torch.Tensor) and value.is_meta]
    return names


def summary(names: list[str]) -> str:
    """The run's note on what a meta model could not do."""
    shown = ", ".join(names[:3]) + (f", … ({len(names)} tensors)" if len(names) > 3 else "")
    return (f"weights on the meta device ({shown}): recorded from sizes, strides and dtypes, no weight "
            "materialized; the captured graph ran on meta tensors, so no output value was computed "
            "(--execute and Inductor's weight freezing need values)")


@contextlib.contextmanager
def captured_as_cpu():
    """While inside (and not paused by `compiling`), Dynamo's fake tensors made from meta
    tensors say cpu: FakeTensorConverter builds each fake through MetaConverter, whose
    callback is told the real tensor's device."""
    def make_call(original):
        def call(self, t, *args, callback=None, **kwargs):
            if callback is not None and _capturing and _capturing[-1] and getattr(t, "is_meta", False):
                callback = _device_read_as_cpu(callback)
            if callback is None:
                return original(self, t, *args, **kwargs)
            return original(self, t, *args, callback=callback, **kwargs)

        return call

    with patching.wrapped(patch_points.META_CONVERTER_CALL, make_call):
        _capturing.append(True)
        try:
            yield
        finally:
            _capturing.pop()


def _device_read_as_cpu(callback):
    import torch

    def as_cpu(device):
        return torch.device("cpu") if device is not None and torch.device(device).type == "meta" else device

    @functools.wraps(callback)
    def wrapped(make_meta_t, *args, **kwargs):
        if args:
            args = (as_cpu(args[0]), *args[1:])
        if "device" in kwargs:
            kwargs["device"] = as_cpu(kwargs["device"])
        return callback(make_meta_t, *args, **kwargs)

    return wrapped


@contextlib.contextmanager
def compiling():
    """The compile after the capture sees meta tensors as they are."""
    _capturing.append(False)
    try:
        yield
    finally:
        _capturing.pop()


def runs_on_meta(forward):
    """`forward` (Dynamo's graph, run eagerly) on meta tensors when it is given any."""
    import torch

    @functools.wraps(forward)
    def run(*args, **kwargs):
        if not any(isinstance(value, torch.Tensor) and value.is_meta for value in (*args, *kwargs.values())):
            return forward(*args, **kwargs)
        with _on_meta_mode():
            return forward(*args, **kwargs)

    return run


def _on_meta_mode():
    import torch
    from torch.utils import _pytree as pytree
    from torch.utils._python_dispatch import TorchDispatchMode

    def to_meta(value):
        if isinstance(value, torch.Tensor) and not value.is_meta:
            return value.to("meta")
        if isinstance(value, torch.device) and value.type != "meta":
            return torch.device("meta")
        return value

    class OnMeta(TorchDispatchMode):
        """Runs each op on the meta device: device arguments and tensors it is given."""

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            args, kwargs = pytree.tree_map(to_meta, (tuple(args), dict(kwargs or {})))
            return func(*args, **kwargs)

    return OnMeta()
