"""cpu-triton: Inductor's Triton backend on CPU tensors.

Codegen needs an active Triton driver (the virtual one). With `execute=True` the
kernels really run, in Triton's interpreter (TRITON_INTERPRET=1, which must be set
before Inductor's Triton helpers are imported), so results can be checked against
eager. The interpreter leaves `libdevice.*` unimplemented; `LibdeviceForInterpreter`
maps those calls to `tl.math` or NumPy. Its float32 -> bfloat16 cast truncates (rounds
toward zero) where the GPU and eager round to nearest even: `bf16_round_to_nearest` makes
it round as they do, so a bfloat16 kernel's outputs can be compared with eager's.
"""
from __future__ import annotations

import contextlib
import os
import types

from kernelscope.engine import patch_points as points
from kernelscope.engine.devices import triton_driver
from kernelscope.engine.patching import Patches

INTERPRET_ENV = "TRITON_INTERPRET"


def prepare_process(execute: bool) -> None:
    """Call before torch._inductor is imported."""
    if execute:
        os.environ[INTERPRET_ENV] = "1"


def interpreter_ready() -> bool:
    import torch._inductor.runtime.triton_helpers  # noqa: F401  (reads the env at import)
    from triton.runtime import interpreter  # noqa: F401

    return os.environ.get(INTERPRET_ENV) == "1"


def _numpy_libdevice():
    import numpy as np

    return {
        "tanh": np.tanh, "tan": np.tan, "sinh": np.sinh, "cosh": np.cosh,
        "atan": np.arctan, "asin": np.arcsin, "acos": np.arccos, "asinh": np.arcsinh,
        "acosh": np.arccosh, "atanh": np.arctanh, "log1p": np.log1p, "log10": np.log10,
        "expm1": np.expm1, "trunc": np.trunc, "nearbyint": np.rint, "isnan": np.isnan,
        "isinf": np.isinf, "signbit": np.signbit, "pow": np.power, "fmod": np.fmod,
        "atan2": np.arctan2, "hypot": np.hypot, "copysign": np.copysign,
        "nextafter": np.nextafter, "fast_tanhf": np.tanh,
    }


class LibdeviceForInterpreter(types.ModuleType):
    """`libdevice.NAME(x)` for kernels running in Triton's interpreter."""

    def __init__(self):
        super().__init__("kernelscope_libdevice_for_interpreter")
        self._numpy = _numpy_libdevice()

    def __getattr__(self, name):
        import triton.language as tl

        if name.startswith("__"):
            raise AttributeError(name)
        if hasattr(tl.math, name):
            # Looked up at call time: the interpreter patches tl.math while a kernel runs.
            return lambda *args, **kwargs: getattr(tl.math, name)(*args, **kwargs)
        numpy_fn = self._numpy.get(name)
        if numpy_fn is None:
            raise AttributeError(
                f"libdevice.{name} has no implementation in Triton's interpreter; "
                "run without --execute to generate the code only"
            )
        return _elementwise(numpy_fn)


def _elementwise(numpy_fn):
    def apply(*args, **kwargs):
        import numpy as np
        import triton.language as tl
        from triton.runtime.interpreter import TensorHandle

        reference = next(a for a in args if isinstance(a, tl.tensor))
        data = [a.handle.data if isinstance(a, tl.tensor) else a for a in args]
        out = np.asarray(numpy_fn(*data))
        if out.dtype == np.bool_:
            block = tl.block_type(tl.int1, reference.shape) if reference.shape else tl.int1
            return tl.tensor(TensorHandle(out, tl.int1), block)
        out = out.astype(reference.handle.data.dtype, copy=False)
        return tl.tensor(TensorHandle(out, reference.handle.dtype), reference.type)

    return apply


def bf16_round_to_nearest(original):
    """InterpreterBuilder.cast_impl with float32 -> bfloat16 rounded to nearest even (by torch)."""

    def cast_impl(builder, src, dst_type):
        import numpy as np
        import torch
        import triton.language as tl
        from triton.runtime.interpreter import TensorHandle

        if src.dtype.scalar == tl.float32 and dst_type.scalar == tl.bfloat16:
            rounded = torch.from_numpy(np.ascontiguousarray(src.data)).to(torch.bfloat16)
            return TensorHandle(rounded.view(torch.int16).numpy().view(np.uint16), dst_type.scalar)
        return original(builder, src, dst_type)

    return cast_impl


def one_element_index(original):
    """The interpreter's patch of `tl.tensor` with `__index__` taking a one-element block of
    any rank, as Triton 3.7 does: Triton 3.6 calls `int()` on the block's NumPy array, which
    NumPy 2.4 refuses unless it has no dimensions (`for r0_offset in range(0, r0_numel, ...)`
    of a looped reduction)."""

    def patch_lang_tensor(tensor, scope):
        original(tensor, scope)
        scope.set_attr(tensor, "__index__", lambda self: int(self.handle.data.squeeze()))

    return patch_lang_tensor


@contextlib.contextmanager
def cpu_triton_backend(execute: bool):
    """Inductor config + driver for Triton kernels on CPU tensors."""
    import torch._inductor.config as inductor_config

    with inductor_config.patch(cpu_backend="triton"), Patches() as patches:
        triton_driver.install(patches, points.CPU_TRITON_ACTIVE_DRIVER)
        # Generated modules would switch to Triton's real driver at import.
        patches.replace(points.CPU_SET_DRIVER_TO_GPU, lambda: None)
        if execute:
            patches.replace(points.CPU_LIBDEVICE, LibdeviceForInterpreter())
            patches.wrap(points.CPU_INTERPRETER_CAST, bf16_round_to_nearest)
            if points.CPU_INTERPRETER_INDEX.holds():
                patches.wrap(points.CPU_INTERPRETER_INDEX, one_element_index)
        yield
