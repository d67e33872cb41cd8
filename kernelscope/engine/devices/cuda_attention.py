"""scaled_dot_product_attention as a CUDA GPU would run it, for virtual-cuda.

`F.scaled_dot_product_attention` is a composite op: it asks the device which fused
backend to use and decomposes into that backend's op while AOTAutograd traces.
virtual-cuda traces CPU tensors, so the CPU build would choose CPU flash attention
(`_scaled_dot_product_flash_attention_for_cpu`), an op no GPU compile contains.
While a virtual-cuda recording runs, this module

1. decides the backend as an H100 does: `sdpa_choice.choose`, ATen's
   `select_sdp_backend` ported check by check (tests/engine/devices/test_sdpa_choice.py holds it to
   the choices an H100 made, bench/results/sdpa_choices_*.json);
2. decomposes the op the way ATen's composite (attention.cpp) does for that backend:
   boolean masks to additive float masks (cuDNN's own way for cuDNN), the efficient
   kernel's mask alignment and broadcast, flash attention's head-size padding, so the
   captured graph holds `_scaled_dot_product_cudnn_attention`,
   `_scaled_dot_product_flash_attention`, `_scaled_dot_product_efficient_attention` or
   the math ops, as on the GPU;
3. gives the CUDA-only ops and their backward ops CPU stand-ins computed with plain
   attention, so the graph can still run eagerly on the CPU (virtual-cuda never runs
   the CUDA code). The stand-ins' values follow the math, except that attention
   dropout is not applied.

Everything is registered on entry and removed on exit (torch.library).
"""
from __future__ import annotations

import contextlib
import math
import warnings

from kernelscope.engine.devices import sdpa_choice
from kernelscope.engine.devices.sdpa_choice import CUDNN, EFFICIENT, FLASH, MATH
from kernelscope.engine.devices.virtual_gpu_tensor import device_beside

_MEM_EFFICIENT_ALIGNMENT = 8


@contextlib.contextmanager
def attention_as_on_cuda():
    """While inside, SDPA on CPU tensors decomposes as on a CUDA GPU (see the module docstring)."""
    import torch

    library = torch.library.Library("aten", "IMPL")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "overriding a previously registered kernel"
            library.impl("scaled_dot_product_attention", _sdpa_as_on_cuda, "CompositeImplicitAutograd")
            for name, stand_in in _CPU_STAND_INS.items():
                library.impl(name, stand_in, "CPU")
        yield
    finally:
        library._destroy()


# -- the composite, as ATen's CUDA path runs it ----------------------------------------


def _sdpa_as_on_cuda(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                     enable_gqa=False):
    import torch

    aten = torch.ops.aten
    backend = sdpa_choice.choose(sdpa_choice.SdpaCall.of(query, key, value, attn_mask, dropout_p, is_causal,
                                                         enable_gqa))
    attn_mask = _boolean_mask_to_additive(attn_mask, query.dtype, backend)
    if backend == MATH:
        return aten._scaled_dot_product_attention_math(
            query, key, value, attn_mask, dropout_p, is_causal, None, scale=scale, enable_gqa=enable_gqa)[0]
    compute_log_sumexp = torch.is_grad_enabled() and (
        query.requires_grad or key.requires_grad or value.requires_grad)
    if backend == CUDNN:
        return aten._scaled_dot_product_cudnn_attention(
            query, key, value, attn_mask, compute_log_sumexp, dropout_p, is_causal, False, scale=scale)[0]
    if backend == FLASH:
        return _flash(query, key, value, dropout_p, is_causal, scale)
    if attn_mask is not None:
        attn_mask = _preprocess_efficient_mask(attn_mask, query, key)
    return aten._scaled_dot_product_efficient_attention(
        query, key, value, attn_mask, compute_log_sumexp, dropout_p, is_causal, scale=scale)[0]


def _flash(query, key, value, dropout_p, is_causal, scale):
    """ATen's flash case: q, k and v padded to a head size that is a multiple of 8, the
    scale taken from the unpadded size, the output sliced back (pad_last_dim,
    post_process_flash_output)."""
    import torch

    aten = torch.ops.aten
    size = query.size(-1)
    if scale is None:
        scale = 1.0 / math.sqrt(size) if isinstance(size, int) else 1.0 / torch.sym_sqrt(size)
    padded = [_pad_last_dim(tensor, 8) for tensor in (query, key, value)]
    output = aten._scaled_dot_product_flash_attention(*padded, dropout_p, is_causal, False, scale=scale)[0]
    if output.size(-1) != size:
        output = aten.slice.Tensor(output, -1, 0, size)
    return output


def _pad_last_dim(tensor, alignment):
    import torch

    last = tensor.size(-1)
    if last % alignment == 0:
        return tensor
    return torch.nn.functional.pad(tensor, [0, alignment - last % alignment])


# What a masked-out position becomes: -inf, except that the cuDNN path uses float16's
# lowest value (seen on an H100: -65504 rounded to bfloat16, -65536, in the kernel).
_MASKED_OUT = {EFFICIENT: -math.inf, FLASH: -math.inf, MATH: -math.inf, CUDNN: -65504.0}


def _boolean_mask_to_additive(attn_mask, dtype, backend):
    """ATen's convert_boolean_attn_mask(_cudnn): where(mask, 0, masked-out value), with the same ops."""
    import torch

    if attn_mask is None or attn_mask.dtype != torch.bool:
        return attn_mask
    aten = torch.ops.aten
    device = device_beside(attn_mask)  # the CPU in a program's eager run on the virtual GPU
    minus_infinity = aten.scalar_tensor.default(_MASKED_OUT[backend], dtype=dtype, device=device)
    zero = aten.scalar_tensor.default(0.0, dtype=dtype, layout=torch.strided, device=device)
    return aten.where.self(attn_mask, zero, minus_infinity)


def _preprocess_efficient_mask(mask, query, key):
    """ATen's preprocess_mask: pad rows to the memory-efficient kernel's alignment (keeping
    the logical size) unless already aligned, then broadcast the mask to (B, H, L, S)."""
    import torch

    aten = torch.ops.aten
    # ATen's aligned_tensor: a stride not known while compiling (symbolic, under dynamic
    # shapes) counts as unaligned, so the mask is padded and no guard is added
    aligned = all(_known_int(mask.stride(dim)) is not None
                  and _known_int(mask.stride(dim)) % _MEM_EFFICIENT_ALIGNMENT == 0
                  for dim in range(mask.dim() - 1)) and mask.stride(-1) == 1
    if not aligned:
        last = mask.size(-1)
        pad = _MEM_EFFICIENT_ALIGNMENT - last % _MEM_EFFICIENT_ALIGNMENT
        mask = aten.slice.Tensor(aten.constant_pad_nd.default(mask, [0, pad], 0.0), -1, 0, last)
    return aten.expand.default(mask, [query.size(0), query.size(1), query.size(2), key.size(2)])


def _known_int(size):
    """`size` as an int when it is one at compile time (c10's SymInt::maybe_as_int), else None."""
    import torch

    if isinstance(size, torch.SymInt):
        return size.node.maybe_as_int()
    return size


# -- CPU stand-ins for the CUDA-only ops -------------------------------------------------


def _grouped(query, tensor):
    """`tensor` (keys or values) with each of its heads repeated for the query heads it
    serves (grouped-query attention, which cuDNN and flash attention take as is)."""
    groups = query.size(-3) // tensor.size(-3)
    return tensor if groups == 1 else tensor.repeat_interleave(groups, dim=-3)


def _ungrouped(grad, like):
    """The gradient of `_grouped(query, like)` summed back onto `like`'s heads."""
    heads = like.size(-3)
    if grad.size(-3) == heads:
        return grad
    return grad.unflatten(-3, (heads, grad.size(-3) // heads)).sum(-3)


def _probabilities(query, key, bias, is_causal, scale):
    """softmax(scale * q k^T + bias, causal-masked) in fp32, with each row's log-sum-exp."""
    import torch

    key = _grouped(query, key)
    scale = 1.0 / math.sqrt(query.size(-1)) if scale is None else scale
    scores = (query.float() @ key.float().transpose(-2, -1)) * scale
    if bias is not None:
        scores = scores + bias.float()
    if is_causal:
        length, source = scores.shape[-2:]
        keep = torch.ones(length, source, dtype=torch.bool).tril()
        scores = scores.masked_fill(~keep, -math.inf)
    return torch.softmax(scores, dim=-1), torch.logsumexp(scores, dim=-1), scale


def _attention(query, key, value, bias, is_causal, scale):
    """Plain attention; returns the output and the log-sum-exp of each query row."""
    probabilities, log_sum_exp, _ = _probabilities(query, key, bias, is_causal, scale)
    return (probabilities @ _grouped(query, value).float()).to(query.dtype), log_sum_exp


def _gradients(grad_out, query, key, value, bias, is_causal, scale, want_bias):
    """Gradients of plain attention, written out: a backward kernel runs below autograd,
    so autograd cannot be asked for them here."""
    probabilities, _, scale = _probabilities(query, key, bias, is_causal, scale)
    grad_out = grad_out.float()
    grad_value = _ungrouped(probabilities.transpose(-2, -1) @ grad_out, value)
    grad_probabilities = grad_out @ _grouped(query, value).float().transpose(-2, -1)
    grad_scores = probabilities * (grad_probabilities - (grad_probabilities * probabilities).sum(-1, keepdim=True))
    grad_query = (grad_scores @ _grouped(query, key).float()) * scale
    grad_key = _ungrouped((grad_scores.transpose(-2, -1) @ query.float()) * scale, key)
    grads = [grad_query.to(query.dtype), grad_key.to(key.dtype), grad_value.to(value.dtype)]
    if want_bias:
        grads.append(grad_scores.sum_to_size(bias.shape).to(bias.dtype))
    return grads


def _in_layout(values, like_shape_order):
    """`values` copied into a tensor laid out as the GPU kernel (and its meta function) lays
    out its result: the captured graph may `view` it assuming exactly those strides."""
    import torch

    result = torch.empty_permuted(values.shape, like_shape_order, dtype=values.dtype)
    return result.copy_(values)


def _order_of(tensor) -> tuple[int, ...]:
    """Dimension order from outermost to innermost, as torch.empty_permuted takes it."""
    return tuple(sorted(range(tensor.dim()), key=lambda dim: tensor.stride(dim), reverse=True))


def _philox_state():
    import torch

    return torch.zeros((), dtype=torch.long), torch.zeros((), dtype=torch.long)


def _efficient_forward(query, key, value, attn_bias, compute_log_sumexp, dropout_p=0.0, is_causal=False,
                       *, scale=None):
    import torch

    output, log_sum_exp = _attention(query, key, value, attn_bias, is_causal, scale)
    output = _in_layout(output, (0, 2, 1, 3))  # (batch, seq, heads, dim) in memory
    padded = math.ceil(query.size(2) / 32) * 32 if compute_log_sumexp else 0
    lse = torch.zeros(query.size(0), query.size(1), padded, dtype=torch.float)
    if compute_log_sumexp:
        lse[..., : query.size(2)] = log_sum_exp
    return (output, lse, *_philox_state())


def _efficient_backward(grad_out, query, key, value, attn_bias, out, logsumexp, philox_seed, philox_offset,
                        dropout_p, grad_input_mask, is_causal=False, *, scale=None):
    want_bias = attn_bias is not None and bool(grad_input_mask[3])
    grads = _gradients(grad_out, query, key, value, attn_bias, is_causal, scale, want_bias)
    grad_q, grad_k, grad_v = (_in_layout(grad, (0, 2, 1, 3)) for grad in grads[:3])
    return grad_q, grad_k, grad_v, grads[3] if want_bias else None


def _cudnn_forward(query, key, value, attn_bias, compute_log_sumexp, dropout_p=0.0, is_causal=False,
                   return_debug_mask=False, *, scale=None):
    output, log_sum_exp = _attention(query, key, value, attn_bias, is_causal, scale)
    output = _in_layout(output, _order_of(query))
    return (output, log_sum_exp.unsqueeze(-1), None, None, query.size(2), key.size(2), *_philox_state(), None)


def _cudnn_backward(grad_out, query, key, value, out, logsumexp, philox_seed, philox_offset, attn_bias,
                    cum_seq_q, cum_seq_k, max_q, max_k, dropout_p, is_causal, *, scale=None):
    grads = _gradients(grad_out, query, key, value, attn_bias, is_causal, scale, want_bias=False)
    return tuple(_in_layout(grad, _order_of(like)) for grad, like in zip(grads, (query, key, value)))


def _flash_forward(query, key, value, dropout_p=0.0, is_causal=False, return_debug_mask=False, *, scale=None):
    import torch

    output, log_sum_exp = _attention(query, key, value, None, is_causal, scale)
    output = _in_layout(output, _order_of(query))  # the meta function: empty_like(query)
    rng_state = torch.zeros(2, dtype=torch.uint64)
    unused = torch.zeros((), dtype=torch.uint64)
    debug_mask = torch.empty(0, dtype=query.dtype)
    return (output, log_sum_exp, None, None, query.size(2), key.size(2), rng_state, unused, debug_mask)


def _flash_backward(grad_out, query, key, value, out, logsumexp, cum_seq_q, cum_seq_k, max_q, max_k, dropout_p,
                    is_causal, philox_seed, philox_offset, *, scale=None):
    grads = _gradients(grad_out, query, key, value, None, is_causal, scale, want_bias=False)
    return tuple(_in_layout(grad, _order_of(like)) for grad, like in zip(grads, (query, key, value)))


_CPU_STAND_INS = {
    "_scaled_dot_product_flash_attention": _flash_forward,
    "_scaled_dot_product_flash_attention_backward": _flash_backward,
    "_scaled_dot_product_efficient_attention": _efficient_forward,
    "_scaled_dot_product_efficient_attention_backward": _efficient_backward,
    "_scaled_dot_product_cudnn_attention": _cudnn_forward,
    "_scaled_dot_product_cudnn_attention_backward": _cudnn_backward,
}
