"""The torch-function mode a virtual-cuda program runs in: "cuda" made on the CPU.

While a program runs under virtual-cuda (`cuda_program`), `ProgramMode` sees every torch
call the program's Python makes (torch functions, tensor methods and attributes) and:
- runs what is asked for on cuda on the CPU and hands back a virtual GPU tensor
  (`virtual_gpu_tensor`): factories with `device="cuda"` (or `cuda:0`, `0`, a cuda
  `torch.device`; or no device under `torch.set_default_device("cuda")` or
  `with torch.device("cuda")`), `.cuda()`, `.to("cuda")`,
  `.to(cuda_tensor)`; `.cpu()` and `.to("cpu")` of one give a plain CPU tensor (a copy,
  as the GPU's copy to the host is);
- keeps results on the virtual GPU: an op with a virtual GPU tensor among its inputs
  returns virtual GPU tensors (its own inputs handed back, as in-place ops do, keep their
  class: a CPU tensor written with `cpu_t.copy_(gpu_t)` stays a CPU tensor), unless it
  is told a device of its own (`empty_like(x, device="cpu")`);
- answers as a GPU's tensors do where a method answers: `get_device()` 0 (a torchrun rank's
  local rank), `type()`
  `torch.cuda.FloatTensor`, `numpy()` refused with the GPU's own message, `repr`
  `tensor(..., device='cuda:0')`; `pin_memory()` returns the tensor (nothing is pinned),
  `is_pinned()` False, `record_stream` does nothing;
- runs a higher-order op (`torch.cond`, `while_loop`, FlexAttention's `flex_attention`, ...)
  on plain CPU aliases of its virtual GPU tensors, as the CPU program runs it
  (`program_hops`), its results put back on the virtual GPU;
- makes gradients of leaves on the virtual GPU virtual GPU tensors: when a leaf that
  requires grad is made here it gets a post-accumulate-grad hook that changes its fresh
  `.grad`'s class (so Dynamo, compiling an optimizer step, fakeifies the grads as cuda),
  and a `.grad` read through the mode is changed likewise.

Under Dynamo the mode steps aside (`torch.compiler.is_compiling()`): Dynamo traces the
program's own calls (`torch.zeros(n, device="cuda")` stays that in the graph). Dynamo
clears the mode stack while it compiles; where it runs the program's code for real there
(an optimizer's `_init_group`, which makes its state on the parameters' device), cuda_program
enters `EagerProgramMode`, the same work without the step aside.

Cost: one Python call per torch call, and for ops on virtual GPU tensors the subclass's
own `__torch_function__` is skipped (the mode runs the op with subclass handling off and
changes the class of what it made), so an op pays one Python layer, not two. Most calls need
no translation (an op with no device asked for, an attribute read, `.item()`): what the mode
does with a function is decided on its first call and kept (`_runner`'s kinds), so such a call
costs one dict lookup, the op run in one C call with subclass handling off
(`torch._C._disabled_torch_function_impl`) and, for a fresh tensor, a class change. Under
Dynamo the mode reads `torch.compiler`'s flag, not `is_compiling()` (two Python calls per torch
call). An optimizer's per-parameter bookkeeping (`zero_grad`, `_init_group` once the state
exists) does not reach the mode at all where that changes nothing (program_optimizers.py).
bench/virtual_cuda_program.py measures the eager cost (docs/targets.md).
"""
from __future__ import annotations

import contextlib

from kernelscope.engine.devices.virtual_gpu_tensor import (
    device_index,
    new_on_virtual_gpu,
    on_virtual_gpu,
    tensor_class,
    virtual_device,
)

_made: list = []


def mode_classes():
    """(ProgramMode, EagerProgramMode), made once (engine modules import without torch)."""
    if _made:
        return _made[0]
    from torch.overrides import TorchFunctionMode

    stepping_aside, never_aside = _runner()

    class ProgramMode(TorchFunctionMode):
        """The program's mode; steps aside while Dynamo traces (see the module docstring)."""

        __torch_function__ = stepping_aside

    class EagerProgramMode(TorchFunctionMode):
        """The same, for the program's code Dynamo runs for real while it compiles."""

        __torch_function__ = never_aside

    _made.append((ProgramMode, EagerProgramMode))
    return _made[0]


def _is_cuda(device) -> bool:
    import torch

    if isinstance(device, torch.device):
        return device.type == "cuda"
    if isinstance(device, str):
        return device == "cuda" or device.startswith("cuda:")
    return isinstance(device, int) and not isinstance(device, bool) and device >= 0


# How the mode handles a torch function, decided once per function (`_runner`'s `kind_of`).
_PASS = "pass"  # nothing to translate: run as asked, results of ops on the virtual GPU kept there
_SPECIAL = "special"  # answers differently on the virtual GPU (`_specials`)
_CONSTRUCTOR = "constructor"  # a factory a default device (`torch.set_default_device`) applies to
_HIGHER_ORDER = "higher-order"  # a higher-order op or a Python custom op: its body runs on CPU aliases
_COLLECTIVE = "collective"  # a functional collective: its result stays plain (virtual_dtensor wraps it)
_GRAD_READ = "grad read"  # `x.grad`: a virtual GPU tensor's gradient is on the virtual GPU
_LIBRARY_OP = "library op"  # an operator a library registered in C++ (`torch.ops.ns.op`): its kernel may be CUDA's only


def _runner():
    """The mode's `__torch_function__`, stepping aside under Dynamo and not (ProgramMode's,
    EagerProgramMode's), bound once to what they read on every call."""
    import torch
    import torch.compiler as compiler
    import torch.utils._device as default_device

    from kernelscope.engine import program_patch_points as program_points
    from kernelscope.engine.devices import program_hops, program_refusal
    from kernelscope.engine.patching import checked

    vgt = tensor_class()
    plain = torch.Tensor
    higher_order = torch._ops.HigherOrderOperator
    cpu = torch.device("cpu")
    no_subclass = torch._C.DisableTorchFunctionSubclass
    # `call_plain(func, types, args, kwargs)`: func(*args, **kwargs) with subclass handling off, in
    # one C call (what `with no_subclass(): func(...)` does, without the context manager's Python)
    call_plain = torch._C._disabled_torch_function_impl
    grad_get = torch.Tensor.grad.__get__  # the func the mode is given for `x.grad`
    specials = _specials(vgt, cpu, no_subclass)
    constructors = default_device._device_constructors()  # the factories a default device applies to
    kinds: dict = {}  # func -> its kind, decided on its first call
    checked(program_points.COMPILING_FLAG)

    def kind_of(func) -> str:
        if func == grad_get:
            return _GRAD_READ
        if func in specials:
            return _SPECIAL
        if func in constructors:
            return _CONSTRUCTOR
        if isinstance(func, higher_order) or program_hops.is_python_custom_op(func):
            return _HIGHER_ORDER
        if getattr(func, "namespace", None) == "_c10d_functional":
            return _COLLECTIVE
        if program_hops.is_library_op(func):
            return _LIBRARY_OP
        return _PASS

    def wrap(out, args):
        """Fresh results of an op on the virtual GPU change class; the op's inputs do not."""
        if type(out) is plain:
            for arg in args:
                if out is arg:
                    return out
            needs_grad_hook = out.requires_grad and out.is_leaf  # read while plain: no Python layer
            out.__class__ = vgt
            if needs_grad_hook:
                grads_on_virtual_gpu(out)
        elif isinstance(out, (tuple, list)):
            for item in out:
                if type(item) is plain and not any(item is arg for arg in args):
                    item.__class__ = vgt
        return out

    def torch_function(steps_aside: bool):
        """The mode's `__torch_function__`: a fast path for the calls that need no translation,
        `translate` for the others. `steps_aside`: under Dynamo (`torch.compiler.is_compiling()`,
        its flag read without the function's two Python calls) the call runs as asked."""

        def __torch_function__(self, func, types, args=(), kwargs=None):
            if steps_aside and compiler._is_compiling_flag:
                return func(*args, **(kwargs or {}))
            kind = kinds.get(func)
            if kind is None:
                kind = kinds[func] = kind_of(func)
            if kind is _PASS and not kwargs:  # most calls: one dict lookup, then the op
                if vgt not in types:
                    return func(*args)
                out = call_plain(func, types, args)
                # only a fresh plain tensor, or a tuple or list, may need its class changed
                return wrap(out, args) if type(out) is plain or isinstance(out, (tuple, list)) else out
            if kind is _GRAD_READ:  # an optimizer reads each `p.grad` several times a step
                grad = call_plain(func, types, args)
                if type(grad) is plain and type(args[0]) is vgt:
                    grad.__class__ = vgt
                return grad
            return translate(func, kind, types, args, kwargs or {})

        return __torch_function__

    def translate(func, kind, types, args, kwargs):
        if kind is _SPECIAL:
            return specials[func](func, args, kwargs)
        if kind is _CONSTRUCTOR and kwargs.get("device") is None:
            default = default_device.CURRENT_DEVICE  # torch.set_default_device / with torch.device(...)
            if default is not None and default.type == "cuda":
                return wrap(call_plain(func, types, args, {**kwargs, "device": cpu}), args)
        device = kwargs.get("device")
        if device is not None:
            if _is_cuda(device):
                return wrap(call_plain(func, types, args, {**kwargs, "device": cpu}), args)
            if vgt in types:  # told a device of its own: the result is not on the virtual GPU
                return call_plain(func, types, args, kwargs or None)
        if vgt not in types:
            return func(*args, **kwargs)
        if kind is _HIGHER_ORDER:
            return run_higher_order(func, args, kwargs)
        if kind is _LIBRARY_OP:
            return wrap(run_library_op(func, types, args, kwargs), args)
        out = call_plain(func, types, args, kwargs or None)
        # a functional collective's result stays plain: torch wraps it as an in-flight
        # AsyncCollectiveTensor next (virtual_dtensor puts it on the virtual GPU there)
        return out if kind is _COLLECTIVE else wrap(out, args)

    def run_higher_order(func, args, kwargs):
        """A higher-order op (FlexAttention's, for one) runs its Python body
        here, below the mode, on the CPU (program_hops)."""
        with no_subclass():
            cpu_args, cpu_kwargs = program_hops.cpu_arguments(args, kwargs, vgt)
            try:
                return wrap(func(*cpu_args, **cpu_kwargs), args)
            except NotImplementedError as error:  # a custom op's kernel for cuda only
                raise program_refusal.cuda_only_op(func) or error from error

    def run_library_op(func, types, args, kwargs):
        """A library's operator, refused in one line where its only kernel is CUDA's."""
        try:
            return call_plain(func, types, args, kwargs or None)
        except NotImplementedError as error:  # the dispatcher found no kernel for the CPU tensors
            raise program_refusal.cuda_only_op(func) or error from error

    def requires_grad_(func, args, kwargs):
        with no_subclass():
            out = func(*args, **kwargs)
        if type(args[0]) is vgt and args[0].requires_grad and args[0].is_leaf:
            grads_on_virtual_gpu(args[0])
        return out

    specials[torch.Tensor.requires_grad_] = requires_grad_
    specials[torch.Tensor.requires_grad.__set__] = requires_grad_
    return torch_function(steps_aside=True), torch_function(steps_aside=False)


def _grad_hook():
    import torch

    vgt, plain = tensor_class(), torch.Tensor
    grad_get = torch._C.TensorBase.grad.__get__
    no_torch_function = torch._C.DisableTorchFunction  # the read reaches no mode (the backward runs in one)

    def grad_on_virtual_gpu(tensor):
        # runs once per parameter a backward (`on_virtual_gpu` inline: a Python call less)
        with no_torch_function():
            grad = grad_get(tensor)
        if type(grad) is plain:
            grad.__class__ = vgt

    return grad_on_virtual_gpu


_hook: list = []


def grads_on_virtual_gpu(leaf) -> None:
    """`leaf`'s gradients are virtual GPU tensors from now on (a post-accumulate-grad hook,
    added once)."""
    if not _hook:
        _hook.append(_grad_hook())
    hooks = leaf._post_accumulate_grad_hooks
    if hooks is not None and any(hook is _hook[0] for hook in hooks.values()):
        return
    leaf.register_post_accumulate_grad_hook(_hook[0])


# -- what answers differently from the generic path ------------------------------------------


def _specials(vgt, cpu, no_subclass):
    import torch

    to = torch._C.TensorBase.to
    parse_to = torch._C._nn._parse_to

    def copy_to(tensor, dtype=None, non_blocking=False, memory_format=None):
        kwargs = {"copy": True, "non_blocking": non_blocking}
        if memory_format is not None:
            kwargs["memory_format"] = memory_format
        with no_subclass():
            return to(tensor, cpu, dtype, **kwargs)

    def tensor_to(func, args, kwargs):
        self = args[0]
        copy = bool(kwargs.get("copy", False))
        with no_subclass():
            device, dtype, non_blocking, memory_format = parse_to(
                *args[1:], **{name: value for name, value in kwargs.items() if name != "copy"})
        if len(args) > 1 and isinstance(args[1], torch.Tensor):  # to(other): other's Python device
            device = args[1].device
        on_gpu = type(self) is vgt
        if device is None or device.type not in ("cuda", "cpu"):
            if device is not None and on_gpu:  # e.g. meta: a plain tensor there
                with no_subclass():
                    return func(*args, **kwargs)
            with no_subclass():
                out = func(*args, **kwargs)
            return on_virtual_gpu(out) if on_gpu and out is not self else out
        if device.type == "cuda":
            if on_gpu:
                with no_subclass():
                    out = to(self, cpu, dtype, non_blocking, copy, memory_format=memory_format) \
                        if memory_format is not None else to(self, cpu, dtype, non_blocking, copy)
                return out if out is self else on_virtual_gpu(out)
            return on_virtual_gpu(copy_to(self, dtype, non_blocking, memory_format))
        if on_gpu:  # to the host: a copy, a plain CPU tensor
            return copy_to(self, dtype, non_blocking, memory_format)
        with no_subclass():
            return func(*args, **kwargs)

    def tensor_cuda(func, args, kwargs):
        self = args[0]
        memory_format = kwargs.get("memory_format")
        if type(self) is vgt and memory_format in (None, torch.preserve_format):
            return self
        non_blocking = kwargs.get("non_blocking", args[2] if len(args) > 2 else False)
        out = copy_to(self, None, non_blocking, memory_format)
        return on_virtual_gpu(out)

    def tensor_cpu(func, args, kwargs):
        self = args[0]
        if type(self) is vgt:
            return copy_to(self, None, False, kwargs.get("memory_format"))
        with no_subclass():
            return func(*args, **kwargs)

    def tensor_numpy(func, args, kwargs):
        self = args[0]
        if type(self) is vgt:
            if not kwargs.get("force", args[1] if len(args) > 1 else False):
                raise TypeError(f"can't convert {virtual_device()} device type tensor to numpy. Use Tensor.cpu() to "
                                "copy the tensor to host memory first.")
            return copy_to(self.detach()).numpy()
        with no_subclass():
            return func(*args, **kwargs)

    def tensor_get_device(func, args, kwargs):
        if type(args[0]) is vgt or args[0].device.type == "cuda":  # a DTensor on the virtual GPU too
            return device_index()
        with no_subclass():
            return func(*args, **kwargs)

    def tensor_type(func, args, kwargs):
        self = args[0]
        wanted = kwargs.get("dtype", args[1] if len(args) > 1 else None)
        with no_subclass():
            if wanted is None:
                name = func(self)
                return name.replace("torch.", "torch.cuda.", 1) if type(self) is vgt else name
            if isinstance(wanted, str) and wanted.startswith("torch.cuda."):
                out = func(self, wanted.replace("torch.cuda.", "torch.", 1), *args[2:],
                           **{k: v for k, v in kwargs.items() if k != "dtype"})
                return out if out is self else on_virtual_gpu(copy_to(out) if out is self else out)
            out = func(*args, **kwargs)
        return on_virtual_gpu(out) if type(self) is vgt and out is not self else out

    def tensor_repr(func, args, kwargs):
        self = args[0]
        with no_subclass():
            text = func(*args, **kwargs)
        if type(self) is not vgt:
            return text
        is_param = getattr(self, "_is_param", False)
        if is_param and text.startswith("Parameter(") and text.endswith(")"):
            text = text[len("Parameter("):-1]  # torch's repr of a subclass parameter
        long, short = text[:text.find("(") + 1], "tensor("  # torch names a subclass by its class
        text = short + text[len(long):].replace("\n" + " " * len(long), "\n" + " " * len(short))
        return f"Parameter containing:\n{text}" if is_param else text

    def histc(func, args, kwargs):
        # CUDA's histc counts integer tensors (transformers' MoE routing gives it `expert_ids.int()`
        # on cuda), the CPU's kernel floating point only: an integer tensor on the virtual GPU is
        # counted as float32 (exact for the integers a histogram's bins tell apart) and the counts
        # come back in its own dtype, as CUDA's do
        self = args[0]
        if type(self) is not vgt:
            return func(*args, **kwargs)
        with no_subclass():
            if self.is_floating_point() or self.is_complex() or "out" in kwargs:
                out = func(*args, **kwargs)
            else:
                out = func(self.float(), *args[1:], **kwargs).to(self.dtype)
        return on_virtual_gpu(out)

    def returns_self(func, args, kwargs):
        return args[0]

    def answers_false(func, args, kwargs):
        return False

    def does_nothing(func, args, kwargs):
        return None

    return {
        torch.Tensor.to: tensor_to,
        torch.Tensor.cuda: tensor_cuda,
        torch.Tensor.cpu: tensor_cpu,
        torch.Tensor.numpy: tensor_numpy,
        torch.Tensor.get_device: tensor_get_device,
        torch.Tensor.type: tensor_type,
        torch.Tensor.__repr__: tensor_repr,
        torch.Tensor.pin_memory: returns_self,
        torch.Tensor.is_pinned: answers_false,
        torch.Tensor.record_stream: does_nothing,
        torch.histc: histc,
        torch.Tensor.histc: histc,
    }


_running: list[list[str]] = []  # per program inside: the notes its run carries


def running() -> bool:
    """Whether a program runs on the virtual GPU in this process (inside `program_mode`)."""
    return bool(_running)


def note(text: str) -> None:
    """A note for the run of the program running now (its warnings), once."""
    if _running and text not in _running[-1]:
        _running[-1].append(text)


@contextlib.contextmanager
def program_mode():
    """The program's mode, entered while inside (outermost of the program's own modes); yields
    the list of notes (`note`) the program's run carries in its warnings."""
    mode_class, _ = mode_classes()
    notes: list[str] = []
    _running.append(notes)
    mode = mode_class()
    mode.__enter__()
    try:
        yield notes
    finally:
        _running.pop()
        _leave(mode)


def _leave(mode) -> None:
    """Pop `mode` where it is still on the stack: a compile that fails midway can leave the
    stack emptied (Dynamo clears it while it traces), and the program's own error, not
    "trying to pop from empty mode stack", is what the user must see."""
    from torch.overrides import _get_current_function_mode_stack

    stack = _get_current_function_mode_stack()
    if stack and stack[-1] is mode:
        mode.__exit__(None, None, None)


@contextlib.contextmanager
def program_mode_again():
    """The program's mode pushed again while inside, where the program runs and its mode is
    not on the stack (torch pops a mode while it handles a call: `loss.backward()`), with
    subclass handling on again (the mode runs a call with it off)."""
    import torch

    mode_class, _ = mode_classes()
    if not _running or any(type(mode) is mode_class for mode in torch.overrides._get_current_function_mode_stack()):
        yield
        return
    with torch._C._EnableTorchFunction(), mode_class():
        yield


@contextlib.contextmanager
def eager_program_mode():
    """`EagerProgramMode` while inside: for the program's code Dynamo runs for real."""
    _, mode_class = mode_classes()
    with mode_class():
        yield


__all__ = ["eager_program_mode", "grads_on_virtual_gpu", "mode_classes", "new_on_virtual_gpu", "note", "program_mode",
           "program_mode_again", "running"]
