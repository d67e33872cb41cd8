"""What eager PyTorch saves for the backward, per model line (`compile --train --against-eager`;
docs/memory.md): the model's forward run once more, eagerly, under saved-tensor hooks.

Autograd calls the pack hook with every tensor an op saves for its backward; the hook
counts the tensor's storage once (by its StorageImpl: a storage saved by two ops, or a view
of it, is one allocation) at the model line that *produced* it — as the compiled side counts
a saved buffer at its producing node's line — in the module instance running then (forward
pre/post hooks keep that path). A torch-function mode notes each output's producing line
(the innermost frame of the user's code on the stack); a storage no op produced in the
forward is counted where it was saved. Parameters, buffers
and the inputs are counted apart (the caller holds them anyway), as the compiled side's
saved inputs are. On the meta device this computes nothing: a meta model's eager run gives
the same sizes at no cost.
"""
from __future__ import annotations

import os
import sys

from kernelscope.engine import fx_nodes
from kernelscope.run_record import EagerLine, EagerMemory, SourceLocation


def measure(model, inputs: tuple, device: str) -> EagerMemory:
    """Run `model(*inputs)` eagerly with grad, counting what autograd saves per model line."""
    import torch

    held = _storages_of(model, inputs)
    counted: set[int] = set()
    lines: dict[tuple[str, int, str], EagerLine] = {}
    inputs_bytes = 0
    modules: list[str] = []
    skip = (*fx_nodes.skip_prefixes(), os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep)
    producers = _producers(skip, modules)

    def pack(tensor):
        nonlocal inputs_bytes
        storage = tensor.untyped_storage()
        key = storage._cdata
        if key in counted:
            return tensor
        counted.add(key)
        if key in held:
            inputs_bytes += storage.nbytes()
            return tensor
        where, module = producers.made.get(key, (None, ""))
        if where is None:
            where, module = _user_frame(skip), modules[-1] if modules else ""
        if where is None:
            return tensor
        entry = lines.setdefault((where.file, where.line, module), EagerLine(where, module))
        entry.bytes += storage.nbytes()
        entry.tensors += 1
        return tensor

    handles = _track_modules(model, modules)
    try:
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor), producers:
            model(*inputs)
    finally:
        for handle in handles:
            handle.remove()
    found = sorted(lines.values(), key=lambda entry: (-entry.bytes, entry.source.file, entry.source.line))
    return EagerMemory(device=device, saved_bytes=sum(entry.bytes for entry in found),
                       saved_inputs_bytes=inputs_bytes, lines=found)


def _producers(skip: tuple[str, ...], modules: list[str]):
    """A torch-function mode (entered with the hooks) noting where each output storage was made."""
    from torch.overrides import TorchFunctionMode

    class Producers(TorchFunctionMode):
        """Notes, per storage an op's output has, the model line and module instance that made it.
        Outputs are kept alive while it runs, so a storage's id is never reused for another."""

        def __init__(self, skip: tuple[str, ...], modules: list[str]):
            super().__init__()
            self.skip, self.modules = skip, modules
            self.made: dict[int, tuple[SourceLocation | None, str]] = {}
            self.kept: list = []

        def __torch_function__(self, func, types, args=(), kwargs=None):
            import torch

            result = func(*args, **(kwargs or {}))
            outputs = result if isinstance(result, (tuple, list)) else (result,)
            for output in outputs:
                if isinstance(output, torch.Tensor) and not isinstance(output, torch.nn.Parameter):
                    key = output.untyped_storage()._cdata
                    if key not in self.made:
                        self.made[key] = (_user_frame(self.skip), self.modules[-1] if self.modules else "")
                        self.kept.append(output)
            return result

    return Producers(skip, modules)


def _storages_of(model, inputs) -> set[int]:
    import torch

    tensors = [t for t in inputs if isinstance(t, torch.Tensor)]
    if isinstance(model, torch.nn.Module):
        tensors += list(model.parameters()) + list(model.buffers())
    return {tensor.untyped_storage()._cdata for tensor in tensors}


def _user_frame(skip: tuple[str, ...]) -> SourceLocation | None:
    """The innermost frame of the user's code (not torch, Triton, kernelscope or the standard library)."""
    import linecache
    import sysconfig

    stdlib = sysconfig.get_paths()["stdlib"] + os.sep
    frame = sys._getframe(2)
    while frame is not None:
        file = os.path.abspath(frame.f_code.co_filename)
        if not file.startswith((*skip, stdlib)) and not frame.f_code.co_filename.startswith("<"):
            return SourceLocation(file, frame.f_lineno, frame.f_code.co_name,
                                  linecache.getline(file, frame.f_lineno).strip())
        frame = frame.f_back
    return None


def _track_modules(model, modules: list[str]) -> list:
    """Forward pre/post hooks that keep `modules[-1]` the module instance running now
    (named as nn_module_stack names them: `blocks.0.attn`)."""
    import torch

    if not isinstance(model, torch.nn.Module):
        return []
    def enter(name: str):
        def pre_hook(_module, _args) -> None:  # a hook that returns a value would replace the inputs
            modules.append(name)
        return pre_hook

    def leave(_module, _args, _output) -> None:  # ... or the output
        modules.pop()

    handles = []
    for name, module in model.named_modules():
        if name:
            handles.append(module.register_forward_pre_hook(enter(name)))
            handles.append(module.register_forward_hook(leave))
    return handles
