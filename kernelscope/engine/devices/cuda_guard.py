"""A no-op CUDA device guard for CPU-only builds of torch, as torch gives a CUDA build
without a GPU.

Python indexing of a tensor (`x[idx]`, `x[idx] = v`) takes a device guard on the tensor's
device before it dispatches anything. Inside a decomposition virtual-cuda traces on fake
cuda tensors (e.g. `torch._refs.index_select`, which is `x[idx]`: XGLM's and M2M100's
sinusoidal positions), that device is cuda (see fake_cuda.py: below autograd, C++ reads
the GPU's device). A CUDA build without a GPU has a guard for it: FakeTensorMode installs
a no-op one (`torch._C._ensureCUDADeviceGuardSet()`, for "CPU-only build or cuda device
unavailable"), but it only replaces a guard that exists, and a CPU-only build has none:
"PyTorch is not linked with support for cuda devices".

There is no API to register a guard for CUDA from Python, so this copies the Meta
device's no-op guard into CUDA's slot of c10's guard registry
(`c10::impl::device_guard_impl_registry`, an array of pointers indexed by DeviceType,
exported by libc10). It is done once per process and only when the slot is empty (a CPU
build); a CPU-only process can never hold a real CUDA tensor, so a no-op guard hides
nothing. Every step is checked; when one fails nothing is changed and the reason is given.
The slot is a patch point of its own (patch_points.CUDA_DEVICE_GUARD, checked by
`registry_problem`), listed by `kernelscope doctor --torch`.
"""
from __future__ import annotations

import ctypes
import os

_CUDA = 1  # c10::DeviceType::CUDA
_META = 14  # c10::DeviceType::Meta
_REGISTRY_SYMBOL = "_ZN3c104impl26device_guard_impl_registryE"


def _slots():
    """(CUDA's slot, Meta's slot) of c10's guard registry in libc10; raises OSError/ValueError
    where the library or the symbol cannot be found."""
    import torch

    library = ctypes.CDLL(os.path.join(os.path.dirname(torch.__file__), "lib", "libc10.so"))
    registry = ctypes.addressof(ctypes.c_void_p.in_dll(library, _REGISTRY_SYMBOL))
    pointer_size = ctypes.sizeof(ctypes.c_void_p)
    return (ctypes.c_void_p.from_address(registry + pointer_size * _CUDA),
            ctypes.c_void_p.from_address(registry + pointer_size * _META))


def registry_problem() -> str | None:
    """Why the no-op guard could not be installed on this torch (None: it can, or a CUDA
    build needs none). Reads the registry, changes nothing (the patch point's check)."""
    import torch

    if torch.backends.cuda.is_built():
        return None  # FakeTensorMode swaps in its own no-op guard where there is no GPU
    try:
        cuda_slot, meta_slot = _slots()
    except (OSError, ValueError) as error:
        return f"no CUDA device guard on this CPU build of torch ({error})"
    if cuda_slot.value is None and meta_slot.value is None:
        return "no CUDA device guard on this CPU build of torch (the Meta guard is missing too)"
    return None


def ensure_cuda_device_guard() -> str | None:
    """Install the no-op guard if this torch has no CUDA one; None when done or not needed,
    else why it could not be installed."""
    problem = registry_problem()
    if problem is not None:
        return problem
    import torch

    if torch.backends.cuda.is_built():
        return None
    cuda_slot, meta_slot = _slots()
    if cuda_slot.value is None:
        cuda_slot.value = meta_slot.value
    return None
