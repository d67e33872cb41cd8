"""The user's model (or function), made ready for the target and called compiled.

`check_meta_model` refuses a model built on the meta device for a target that needs
weight values; `prepare_inputs` moves it to the GPU for `--target cuda`, makes a plain
function's float inputs require grad for `--train` and marks dynamic sizes for
`--dynamic`; `call_compiled` calls `torch.compile(model)` on the inputs (forward, and for
`--train` the backward of `scalar_loss`), comparing with eager under cpu-triton `--execute`.
"""
from __future__ import annotations

from kernelscope.engine import error_translation
from kernelscope.engine.devices import program_mode
from kernelscope.engine.record_options import RecordOptions
from kernelscope.errors import TargetError


def scalar_loss(outputs):
    """The loss `--train` differentiates: the sum of every output that requires grad."""
    import torch

    tensors = [t for t in _flatten(outputs) if isinstance(t, torch.Tensor) and t.requires_grad]
    if not tensors:
        raise TargetError(
            "--train: no output requires grad (give the model parameters, or inputs with "
            "requires_grad=True)"
        )
    return sum(t.sum() for t in tensors)


def _flatten(value):
    if isinstance(value, (list, tuple)):
        for item in value:
            yield from _flatten(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _flatten(item)
    elif hasattr(value, "to_tuple"):
        yield from _flatten(value.to_tuple())
    else:
        yield value


def _max_error(actual, expected) -> float:
    import torch

    worst = 0.0
    for a, e in zip(_flatten(actual), _flatten(expected)):
        if isinstance(a, torch.Tensor) and isinstance(e, torch.Tensor):
            worst = max(worst, (a.detach().float() - e.detach().float()).abs().max().item())
    return worst


def prepare_inputs(model, inputs, options: RecordOptions, device: str):
    import torch

    if device == "cuda":
        # The factory builds on the CPU; the real GPU target compiles for the GPU.
        if isinstance(model, torch.nn.Module):
            model.to("cuda")
        inputs = tuple(t.to("cuda") if isinstance(t, torch.Tensor) else t for t in inputs)

    if options.train and not isinstance(model, torch.nn.Module):
        # A plain function has no parameters: differentiate w.r.t. its float inputs.
        inputs = tuple(
            t.detach().requires_grad_(True)
            if isinstance(t, torch.Tensor) and t.is_floating_point() else t
            for t in inputs
        )
    if options.dynamic:
        for t in inputs:
            if isinstance(t, torch.Tensor) and t.dim() > 0:
                torch._dynamo.mark_dynamic(t, 0)
    return inputs


def check_meta_model(model, inputs, options: RecordOptions, device: str) -> list[str]:
    """The meta tensors the factory returned (a model built on the meta device); only
    virtual-cuda records such a model, which has sizes and no values."""
    from kernelscope.engine.devices import meta_models

    on_meta = meta_models.meta_tensors(model, inputs)
    if on_meta and options.aot:
        raise TargetError(
            f"--aot packages the model's weights, and `{on_meta[0]}` is on the meta device "
            f"({len(on_meta)} meta tensor(s)): build the model with real weights, or record without --aot")
    if on_meta and device != "virtual-cuda":
        raise TargetError(
            f"--target {device} needs weight values, and `{on_meta[0]}` is on the meta device "
            f"({len(on_meta)} meta tensor(s)): record a meta-device model with --target virtual-cuda, "
            "or build it with real weights")
    return on_meta


def call_compiled(model, inputs, options: RecordOptions, device: str) -> float | None:
    """Compile `model` with torch.compile and call it on `inputs` (and the backward for
    `--train`); the largest error against eager for cpu-triton `--execute`, else None."""
    import torch

    compare = device == "cpu-triton" and options.execute
    expected = None
    if compare:
        with torch.no_grad():
            expected = model(*[t.detach() if isinstance(t, torch.Tensor) else t for t in inputs])
    options.on_phase("capture", "Dynamo, AOTAutograd")
    compiled = torch.compile(model, dynamic=True if options.dynamic else None)
    try:
        if options.train:
            outputs = compiled(*inputs)
            options.on_phase("capture", "backward")
            scalar_loss(outputs).backward()
        else:
            with torch.no_grad():
                outputs = compiled(*inputs)
    except Exception as error:  # noqa: BLE001 - re-raised, with advice where we have some
        if device == "cuda" or (device == "virtual-cuda" and program_mode.running()):
            advice = error_translation.mixed_devices_error(error, device)
            if advice is not None:
                raise advice from error
        raise
    return _max_error(outputs, expected) if compare else None
