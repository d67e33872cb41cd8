"""Which kernel scaled_dot_product_attention runs on the GPU virtual-cuda stands for.

`F.scaled_dot_product_attention` asks the device which backend to use
(`_fused_sdp_choice`) and decomposes into that backend's op while AOTAutograd traces. On
CUDA the answer is `sdp::select_sdp_backend` (aten/src/ATen/native/transformers/cuda/
sdp_utils.cpp, with the checks of sdp_utils_cpp.h): backends are tried in priority order
and the first whose every check passes is taken. virtual-cuda cannot ask a GPU, so this
module runs the same checks, in the same order, on the call's metadata, for the GPU
virtual-cuda stands for: an H100 (sm_90) with the cuDNN that torch's CUDA 13 wheels ship
(9.19 with torch 2.11, 9.20 with torch 2.13).

Ported from torch 2.11's checks; torch 2.13 adds three (read from its CUDA build): the
memory-efficient kernel's storage-offset alignment, cuDNN's batch/head limit (65535) and
cuDNN's dropout resolution (1/16). Checks that cannot fail here are named and kept as
constants: every tensor is on the (virtual) GPU, none is nested, FA3 is off.
tests/engine/devices/test_sdpa_choice.py holds this port to what an H100 chose (bench/sdpa_choices.py:
2,400 synthetic calls, and every call the model suite makes).

The checks compare sizes and strides as the C++ does: `TORCH_GUARD_OR_FALSE` where the C++
uses it (an undecidable symbolic size fails the check, adding no guard), a plain comparison
(which guards) where the C++ compares SymInts with `==`.
"""
from __future__ import annotations

from dataclasses import dataclass

from kernelscope.engine import torch_compat

CUDNN = "cudnn"
FLASH = "flash"
EFFICIENT = "efficient"
MATH = "math"
# at::SDPBackend's values (torch._C._get_sdp_priority_order())
_BACKEND_OF_VALUE = {0: MATH, 1: FLASH, 2: EFFICIENT, 3: CUDNN}
_BUILD_DEFAULT_ORDER = [1, 2, 0, 3, 4]  # at::Context's order before the first CUDA choice


@dataclass(frozen=True)
class Gpu:
    capability: tuple[int, int] = (9, 0)
    cudnn: int = 91900  # cudnnGetVersion(): 9.19.0


H100 = Gpu()


@dataclass(frozen=True)
class TensorInfo:
    """What the checks read of a tensor (sizes and strides may be symbolic)."""

    shape: tuple
    stride: tuple
    dtype: str  # "float32", "bfloat16", ...
    requires_grad: bool = False
    storage_offset: object = 0
    element_size: int = 4

    @classmethod
    def of(cls, tensor) -> TensorInfo:
        return cls(tuple(tensor.shape), tuple(tensor.stride()), str(tensor.dtype).removeprefix("torch."),
                   bool(tensor.requires_grad), tensor.storage_offset(), tensor.element_size())

    def dim(self) -> int:
        return len(self.shape)


@dataclass(frozen=True)
class SdpaCall:
    query: TensorInfo
    key: TensorInfo
    value: TensorInfo
    attn_mask: TensorInfo | None = None
    dropout: float = 0.0
    is_causal: bool = False
    enable_gqa: bool = False
    grad_enabled: bool = False  # torch.is_grad_enabled() at the call

    @classmethod
    def of(cls, query, key, value, attn_mask=None, dropout=0.0, is_causal=False, enable_gqa=False,
           grad_enabled=None) -> SdpaCall:
        import torch

        return cls(TensorInfo.of(query), TensorInfo.of(key), TensorInfo.of(value),
                   None if attn_mask is None else TensorInfo.of(attn_mask), float(dropout), bool(is_causal),
                   bool(enable_gqa), torch.is_grad_enabled() if grad_enabled is None else bool(grad_enabled))

    def input_requires_grad(self) -> bool:  # sdp_utils_cpp.h: input_requires_grad
        return self.grad_enabled and (self.query.requires_grad or self.key.requires_grad
                                      or self.value.requires_grad)


@dataclass(frozen=True)
class Settings:
    """The global switches select_sdp_backend reads (torch.backends.cuda.*_sdp_enabled,
    sdpa_kernel, the priority order, deterministic algorithms)."""

    order: tuple[str, ...] = (CUDNN, FLASH, EFFICIENT, MATH)
    enabled: frozenset = frozenset({CUDNN, FLASH, EFFICIENT, MATH})
    deterministic: bool = False  # deterministic algorithms on and not warn-only

    @classmethod
    def current(cls, gpu: Gpu = H100) -> Settings:
        import os

        import torch

        getters = {CUDNN: "_get_cudnn_sdp_enabled", FLASH: "_get_flash_sdp_enabled",
                   EFFICIENT: "_get_mem_efficient_sdp_enabled", MATH: "_get_math_sdp_enabled"}
        enabled = frozenset(name for name, getter in getters.items() if getattr(torch._C, getter)())
        order = list(torch._C._get_sdp_priority_order())
        if order == _BUILD_DEFAULT_ORDER:
            # never set: the GPU's first choice sets it (sdp_utils.cpp: priority_order)
            order = [3, 1, 2, 0] if _prefers_cudnn(gpu, os.environ) else order
        deterministic = torch.are_deterministic_algorithms_enabled() and \
            not torch.is_deterministic_algorithms_warn_only_enabled()
        return cls(tuple(_BACKEND_OF_VALUE[value] for value in order if value in _BACKEND_OF_VALUE),
                   enabled, deterministic)


def _prefers_cudnn(gpu: Gpu, environ) -> bool:
    """sdp_utils.cpp: check_prefer_cudnn_attention (CUDA 13 builds)."""
    if environ.get("TORCH_CUDNN_SDPA_DEPRIORITIZED", "").lower() in ("1", "true", "on", "yes"):
        return False
    return gpu.cudnn > 91500 and gpu.capability[0] in (9, 10)


def choose(call: SdpaCall, gpu: Gpu = H100, settings: Settings | None = None,
           torch_version: tuple[int, int] | None = None) -> str:
    """The backend `select_sdp_backend` picks for `call` on `gpu`: cudnn, flash, efficient or math."""
    settings = settings or Settings.current(gpu)
    version = torch_version or torch_compat.torch_version()
    for backend in settings.order:
        if backend not in settings.enabled:
            continue
        if backend == MATH or _CAN_USE[backend](call, gpu, settings, version):
            return backend
    raise RuntimeError("scaled_dot_product_attention: no available kernel (every backend is disabled "
                       "or refuses these inputs), as a GPU would say")


# -- the checks (names as in sdp_utils.cpp / sdp_utils_cpp.h) -------------------------


def _guard_or_false(condition) -> bool:
    """TORCH_GUARD_OR_FALSE: the condition when it can be decided without a guard, else False."""
    if isinstance(condition, bool):
        return condition
    from torch.fx.experimental.symbolic_shapes import guard_or_false

    return guard_or_false(condition)


def _is_half(dtype: str) -> bool:
    return dtype in ("float16", "bfloat16")


def _check_tensor_shapes(call: SdpaCall) -> bool:
    return call.query.dim() == call.key.dim() == call.value.dim() == 4


def _check_nonzero_sequence_lengths_dense(call: SdpaCall) -> bool:
    return not (call.query.shape[-2] == 0 or call.key.shape[-2] == 0)


def _check_last_dim_stride_equals_1_dense(call: SdpaCall, ignore_singleton_dim: bool) -> bool:
    strides_1 = call.query.stride[-1] == 1 and call.key.stride[-1] == 1 and call.value.stride[-1] == 1
    if ignore_singleton_dim:
        strides_1 = strides_1 or call.query.shape[-1] == 1
    # on a GPU the mask's last dimension must have stride 1 too (the CPU does not ask)
    mask_stride_1 = call.attn_mask is None or call.attn_mask.stride[-1] == 1
    return bool(strides_1 and mask_stride_1)


def _check_grouped_query_attention(call: SdpaCall, requires_same_num_heads: bool) -> bool:
    q_heads, k_heads, v_heads = call.query.shape[-3], call.key.shape[-3], call.value.shape[-3]
    if requires_same_num_heads and k_heads != v_heads:
        return False
    return not (q_heads % k_heads != 0 or (not requires_same_num_heads and q_heads % v_heads != 0))


def _check_batch_size_and_num_heads_dense(call: SdpaCall, supports_gqa: bool,
                                          requires_same_num_heads: bool = True) -> bool:
    q, k, v = call.query, call.key, call.value
    if not (q.shape[0] == k.shape[0] and q.shape[0] == v.shape[0]):
        return False
    if call.enable_gqa and supports_gqa:
        return _check_grouped_query_attention(call, requires_same_num_heads)
    return bool(q.shape[-3] == k.shape[-3] and q.shape[-3] == v.shape[-3])


def _check_attn_mask_shape(call: SdpaCall) -> bool:
    mask = call.attn_mask
    if mask is None:
        return True
    if mask.requires_grad:
        return False
    batch, heads, q_len, kv_len = call.query.shape[0], call.query.shape[1], call.query.shape[2], call.key.shape[2]
    if mask.shape[-2] != q_len and mask.shape[-2] != 1:
        return False
    if mask.shape[-1] != kv_len and mask.shape[-1] != 1:
        return False
    if mask.dim() == 2:
        return True
    if mask.dim() == 4:
        return bool((mask.shape[0] == 1 or mask.shape[0] == batch) and (mask.shape[1] == 1 or mask.shape[1] == heads))
    return False


def _check_dtype(call: SdpaCall, allowed) -> bool:
    return call.query.dtype == call.key.dtype == call.value.dtype and call.query.dtype in allowed


def _minimum_gemm_alignment(call: SdpaCall, gpu: Gpu) -> int:
    half = _is_half(call.query.dtype)
    major = gpu.capability[0]
    use_tensor_cores = major >= 8 or (major >= 7 and half)
    alignment = 4 if major >= 8 else 1
    if use_tensor_cores:
        alignment = max(alignment, 128 // (16 if half else 32))
    return alignment


def _check_head_dim_size_mem_efficient(call: SdpaCall, gpu: Gpu) -> bool:
    alignment = _minimum_gemm_alignment(call, gpu)
    q_last, k_last, v_last = call.query.shape[-1], call.key.shape[-1], call.value.shape[-1]
    return (_guard_or_false(q_last == k_last) and _guard_or_false(q_last % alignment == 0)
            and _guard_or_false(q_last > 0) and _guard_or_false(v_last % alignment == 0)
            and _guard_or_false(v_last > 0))


def _check_data_ptr_alignment_mem_efficient(call: SdpaCall, gpu: Gpu) -> bool:
    """torch >= 2.13: q, k and v storage offsets (in bytes) aligned to the GEMM's alignment;
    a symbolic offset counts as aligned, an empty tensor needs none."""
    if gpu.capability[0] < 8:
        return True
    alignment_bytes = _minimum_gemm_alignment(call, gpu) * call.query.element_size

    def aligned(info: TensorInfo) -> bool:
        offset_bytes = info.storage_offset * info.element_size
        numel = 1
        for size in info.shape:
            numel = numel * size
        if _guard_or_false(numel == 0):
            return True
        condition = offset_bytes % alignment_bytes == 0
        if isinstance(condition, bool):
            return condition
        from torch.fx.experimental.symbolic_shapes import guard_or_true

        return guard_or_true(condition)

    return aligned(call.query) and aligned(call.key) and aligned(call.value)


def _check_head_dim_size_flash(call: SdpaCall) -> bool:
    q_last, k_last, v_last = call.query.shape[-1], call.key.shape[-1], call.value.shape[-1]
    return (_guard_or_false(q_last == k_last) and _guard_or_false(q_last == v_last)
            and _guard_or_false(q_last <= 256))


def _check_flash_causal_non_square_seqlens(call: SdpaCall) -> bool:
    return not call.is_causal or _guard_or_false(call.query.shape[-2] == call.key.shape[-2])


def _sm_between(gpu: Gpu, low: tuple[int, int], high: tuple[int, int]) -> bool:
    return low <= gpu.capability <= high


def _check_requires_grad_and_head_dim_gt192(call: SdpaCall, gpu: Gpu) -> bool:
    if not (call.input_requires_grad() and (_sm_between(gpu, (8, 6), (8, 9)) or _sm_between(gpu, (12, 0), (12, 1)))):
        return True
    head_dim = call.query.shape[-1]
    return _guard_or_false(head_dim <= 192) or (not call.dropout > 0.0 and _guard_or_false(head_dim > 224))


def _check_cudnn_tensor_shapes(call: SdpaCall, gpu: Gpu, version: tuple[int, int]) -> bool:
    if torch_compat.holds("sdpa: cuDNN batch and head limit", version) \
            and not (_guard_or_false(call.query.shape[0] <= 65535)
                                   and _guard_or_false(call.query.shape[1] <= 65535)):
        return False
    s_q, s_k = call.query.shape[2], call.key.shape[2]
    d_qk, d_v = call.query.shape[3], call.value.shape[3]
    if gpu.cudnn < 8903 or (gpu.cudnn < 8906 and call.dropout != 0.0):
        return False
    head_dim_limit = 128
    if gpu.cudnn >= 91000 and gpu.capability == (9, 0):
        head_dim_limit = 256  # Hopper: head_dim <= 256 with cuDNN >= 9.10
    if gpu.cudnn >= 91100 and gpu.capability[0] == 10 and _guard_or_false(d_qk == 192) \
            and _guard_or_false(d_v == 128):
        head_dim_limit = 192
    if not (_guard_or_false(d_qk <= head_dim_limit) and _guard_or_false(d_v <= head_dim_limit)):
        return False
    if not (_guard_or_false(d_qk % 8 == 0) and _guard_or_false(d_v % 8 == 0)):
        return False
    if gpu.cudnn < 8906 and not _guard_or_false(s_k % 64 == 0):
        return False
    if gpu.cudnn < 90000:
        if not _guard_or_false(s_q >= 64):
            return False
        if call.dropout != 0.0 and not (_guard_or_false(s_q % 64 == 0) and _guard_or_false(s_k % 64 == 0)):
            return False
    if not _guard_or_false(s_k != 1):
        return False
    return not (call.dropout != 0.0 and not _guard_or_false(s_q != 1))


def _can_use_cudnn(call: SdpaCall, gpu: Gpu, settings: Settings, version) -> bool:
    if call.dropout > 0.0 and 91100 < gpu.cudnn < 91400:
        return False
    return (_check_tensor_shapes(call)
            and not settings.deterministic  # check_cudnn_deterministic
            and _check_dtype(call, ("float16", "bfloat16") if gpu.capability[0] >= 8 else ("float16",))
            and _check_attn_mask_shape(call)
            and _sm_between(gpu, (8, 0), (12, 1))  # check_cudnn_hardware_support
            # check_cudnn_dropout (torch >= 2.13): a multiple of 1/16
            and (not torch_compat.holds("sdpa: cuDNN dropout resolution", version)
                 or call.dropout * 16.0 == int(call.dropout * 16.0))
            and _check_nonzero_sequence_lengths_dense(call)
            and _check_last_dim_stride_equals_1_dense(call, ignore_singleton_dim=True)
            and _check_batch_size_and_num_heads_dense(call, supports_gqa=True, requires_same_num_heads=False)
            and _check_cudnn_tensor_shapes(call, gpu, version))


def _can_use_flash(call: SdpaCall, gpu: Gpu, settings: Settings, version) -> bool:
    return (_check_tensor_shapes(call)
            and call.attn_mask is None  # check_for_attn_mask
            and _check_head_dim_size_flash(call)
            and _sm_between(gpu, (8, 0), (12, 1))  # check_flash_attention_hardware_support
            and _check_requires_grad_and_head_dim_gt192(call, gpu)
            and _check_flash_causal_non_square_seqlens(call)
            and _check_dtype(call, ("float16", "bfloat16") if gpu.capability[0] >= 8 else ("float16",))
            and _check_batch_size_and_num_heads_dense(call, supports_gqa=True, requires_same_num_heads=True)
            and _check_nonzero_sequence_lengths_dense(call)
            and _check_last_dim_stride_equals_1_dense(call, ignore_singleton_dim=True))


def _can_use_mem_efficient(call: SdpaCall, gpu: Gpu, settings: Settings, version) -> bool:
    return (_sm_between(gpu, (5, 0), (12, 1))  # check_mem_efficient_hardware_support
            and _check_tensor_shapes(call)
            and _check_head_dim_size_mem_efficient(call, gpu)
            and (not torch_compat.holds("sdpa: memory-efficient storage-offset alignment", version)
                 or _check_data_ptr_alignment_mem_efficient(call, gpu))
            and _check_nonzero_sequence_lengths_dense(call)
            and _check_last_dim_stride_equals_1_dense(call, ignore_singleton_dim=False)
            # no grouped-query attention in this kernel (torch 2.11, 2.13): differing heads fail
            and _check_batch_size_and_num_heads_dense(call, supports_gqa=False)
            and _check_dtype(call, ("float16", "float32", "bfloat16") if gpu.capability[0] >= 8
                             else ("float16", "float32")))


_CAN_USE = {CUDNN: _can_use_cudnn, FLASH: _can_use_flash, EFFICIENT: _can_use_mem_efficient}
