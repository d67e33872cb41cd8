"""BatchNorm's backend chosen as a CUDA build of torch chooses it, for virtual-cuda.

`torch.batch_norm` is a C++ composite: `_batch_norm_impl_index` asks the input's C++
device which backend runs it (ATen's `_select_batch_norm_backend`, Normalization.cpp).
On a GPU it picks cuDNN for a float32/float16 input of 3 or more dimensions and goes
through `input.contiguous(input.suggest_memory_format())` and `cudnn_batch_norm`
(which Inductor decomposes into the same `native_batch_norm` ops); on the CPU-backed
fake cuda tensors (fake_cuda) the C++ device is `cpu`, so the CPU path runs instead.
The kernels come out the same, but under dynamic shapes the GPU's checks trace symbolic
nodes of their own (`le`, `lt`, the channels-last and contiguity tests), later removed,
that number the post-grad nodes after them: `mul_14` on the GPU is `mul_7` without them.

`batch_norm_impl_index` is that C++ function ported check by check, in ATen's order, so
the traced nodes are the GPU's: for a fake cuda input, AOTAutograd's Python dispatcher
runs it in place of the C++ composite (fake_cuda registers it). Assumed, as on every
CUDA build of the torch versions we support: cuDNN compiled in, version 9 (its minimum
BatchNorm epsilon is 0), `torch.backends.cudnn.enabled` as the user set it.
"""
from __future__ import annotations

from kernelscope.engine.devices.virtual_gpu_tensor import device_beside

INT32_MAX = 2**31 - 1
CUDNN_BN_MIN_EPSILON = 0.0  # cuDNN 9 (cudnn_ops.h); cuDNN 7 had 1e-5


def batch_norm_impl_index(input, weight, bias, running_mean, running_var, training, momentum, eps,
                          cudnn_enabled):
    """ATen's `_batch_norm_impl_index` (Normalization.cpp), as a CUDA build runs it."""
    import torch

    aten = torch.ops.aten
    num_features = input.shape[1]
    if input.numel() == 0:  # ATen's empty-input branch: one the GPU takes the same way
        return aten._batch_norm_impl_index.default._op_dk(
            torch._C.DispatchKey.CompositeImplicitAutograd, input, weight, bias, running_mean, running_var,
            training, momentum, eps, cudnn_enabled)
    for name, tensor in (("running_mean", running_mean), ("running_var", running_var)):
        if tensor is not None:
            _check_features(name, num_features, tensor.numel())
        elif not training:
            raise RuntimeError(f"{name} must be defined in evaluation mode")
    for name, tensor in (("weight", weight), ("bias", bias)):
        if tensor is not None:
            _check_features(name, num_features, tensor.numel())

    if _uses_cudnn(input, weight, bias, running_mean, running_var, training, eps):
        input_c = input.contiguous(memory_format=suggest_memory_format(input))
        output, save_mean, save_var, reserve = aten.cudnn_batch_norm(
            input_c, weight.contiguous(), bias.contiguous(),
            running_mean.contiguous() if running_mean is not None else None,
            running_var.contiguous() if running_var is not None else None,
            training, momentum, eps)
        return output, save_mean, save_var, reserve, 1
    reserve = aten.empty.memory_format([0], dtype=torch.uint8, layout=input.layout, device=device_beside(input),
                                       pin_memory=False)
    output, save_mean, save_var = aten.native_batch_norm(input, weight, bias, running_mean, running_var,
                                                         training, momentum, eps)
    return output, save_mean, save_var, reserve, 0


def _check_features(name: str, expected, actual) -> None:
    # ATen: TORCH_CHECK(actual == expected, ...)
    if not actual == expected:
        raise RuntimeError(f"{name} should contain {expected} elements not {actual}")


def _uses_cudnn(input, weight, bias, running_mean, running_var, training, eps) -> bool:
    """ATen's `_select_batch_norm_backend` == Cudnn on a CUDA build with cuDNN 9."""
    import torch

    half, bfloat16 = torch.float16, torch.bfloat16
    return bool(
        input.is_cuda
        and input.dtype != bfloat16 and (weight is None or weight.dtype != bfloat16)
        and (input.dtype != half or (weight is not None and weight.dtype == torch.float32))
        and weight is not None and bias is not None
        and ((running_mean is not None and running_var is not None)
             or (running_mean is None and running_var is None and training))
        and input.dim() >= 3
        and ((input.shape[0] <= 880801 and training)  # spatial, training
             or (input.shape[0] <= 65535 and not training))  # spatial, eval
        and eps >= CUDNN_BN_MIN_EPSILON
        and torch.backends.cudnn.enabled
        and input.numel() < INT32_MAX  # some cuDNN kernels index with 32 bits
    )


def suggest_memory_format(tensor):
    """c10's `TensorBase::suggest_memory_format()` for a strided tensor."""
    import torch

    if tensor.layout == torch.strided:
        if _strides_like_channels_last_2d(tensor.shape, tensor.stride()):
            return torch.channels_last
        if _strides_like_channels_last_3d(tensor.shape, tensor.stride()):
            return torch.channels_last_3d
    return torch.contiguous_format


def _strides_like_channels_last_2d(sizes, strides) -> bool:
    # c10 MemoryFormat.h: is_channels_last_strides_2d (4 dimensions only)
    return len(sizes) == 4 and _strides_like_channels_last(sizes, strides, (1, 3, 2, 0))


def _strides_like_channels_last_3d(sizes, strides) -> bool:
    # c10 MemoryFormat.h: is_channels_last_strides_3d (5 dimensions only)
    return len(sizes) == 5 and _strides_like_channels_last(sizes, strides, (1, 4, 3, 2, 0))


def _strides_like_channels_last(sizes, strides, order) -> bool:
    """c10's `is_channels_last_strides_2d_s4` / `_3d_s5`, on SymInts as C++ evaluates them
    (a plain number compared with a SymInt is the SymInt's constant, on its own side)."""
    minimum = 0
    if _eq(strides[1], 0):
        return False
    for d in order:
        if _eq(sizes[d], 0):
            return False
        if _lt(strides[d], minimum):
            return False
        # fall back to NCHW where the strides are ambiguous (an N111 tensor)
        if d == 0 and _eq(minimum, strides[1]):
            return False
        minimum = strides[d]
        if sizes[d] > 1:
            minimum = _mul(minimum, sizes[d])
    return True


def _symbolic_pair(a, b):
    """`a`, `b` with a plain int left of a SymInt made that SymInt's constant, as c10's SymInt
    operators do, so the traced node keeps C++'s operand order (Python would swap them:
    `1 < s` runs `s > 1`)."""
    import torch

    if isinstance(a, int) and isinstance(b, torch.SymInt):
        a = torch.SymInt(b.node.wrap_int(a))
    return a, b


def _eq(a, b) -> bool:
    a, b = _symbolic_pair(a, b)
    return bool(a == b)


def _lt(a, b) -> bool:
    a, b = _symbolic_pair(a, b)
    return bool(a < b)


def _mul(a, b):
    a, b = _symbolic_pair(a, b)
    return a * b
