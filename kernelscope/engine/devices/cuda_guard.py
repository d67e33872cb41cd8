"""A CUDA device guard for CPU-only builds of torch, so virtual-cuda can compute on fake cuda tensors.

Some operations take a device guard on their tensors' device even when the tensors
are fake: Python indexing (`t[:, :1]`, used by Inductor's RNG seed lookup) and
several decompositions (`masked_fill` in `_unsafe_masked_index_put_accumulate`,
which embedding backward uses). A CPU-only build has no CUDA guard and raises
"PyTorch is not linked with support for cuda devices". CUDA builds have one and
need nothing here.

There is no public API to register a guard for CUDA, so this copies the Meta
device's no-op guard into CUDA's slot of c10's guard registry
(`c10::impl::device_guard_impl_registry`, an array of pointers indexed by
DeviceType, exported by libc10). It is done once per process and only when the
slot is empty; a CPU-only process can never hold a real CUDA tensor, so a no-op
guard cannot hide anything. Every step is checked; when one fails, nothing is
changed and the reason is returned for the run's warnings.
"""
from __future__ import annotations

import ctypes
import os

_CUDA = 1  # c10::DeviceType::CUDA
_META = 14  # c10::DeviceType::Meta
_REGISTRY_SYMBOL = "_ZN3c104impl26device_guard_impl_registryE"


def ensure_cuda_device_guard() -> str | None:
    """Install the no-op guard if this torch lacks a CUDA one; None when done or not needed,
    else why it could not be installed."""
    import torch

    if torch.backends.cuda.is_built():
        return None
    try:
        library = ctypes.CDLL(os.path.join(os.path.dirname(torch.__file__), "lib", "libc10.so"))
        registry = ctypes.addressof(ctypes.c_void_p.in_dll(library, _REGISTRY_SYMBOL))
    except (OSError, ValueError) as error:
        return f"no CUDA device guard on this CPU build of torch ({error})"
    pointer_size = ctypes.sizeof(ctypes.c_void_p)
    cuda_slot = ctypes.c_void_p.from_address(registry + pointer_size * _CUDA)
    meta_slot = ctypes.c_void_p.from_address(registry + pointer_size * _META)
    if cuda_slot.value is not None:
        return None
    if meta_slot.value is None:
        return "no CUDA device guard on this CPU build of torch (the Meta guard is missing too)"
    cuda_slot.value = meta_slot.value
    return None
