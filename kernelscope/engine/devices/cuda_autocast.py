"""CUDA's autocast op lists on the virtual GPU's tensors (virtual-cuda program).

On a GPU, `torch.autocast("cuda")` acts through the AutocastCUDA dispatch key: a cuda
tensor carries it, and its kernels (ATen's autocast_mode.cpp) cast an op's arguments by
CUDA's policy — matmuls and convolutions to the low dtype, softmax, norms, losses,
exp/log/pow to float32, `sum`/`cumsum`/`softmax` told `dtype=float32`, `addcmul`,
`atan2`, `index_put` to their widest argument's type. The virtual GPU's tensors are
CPU tensors underneath (a virtual GPU tensor in the program, a CPU-backed fake cuda
tensor while Dynamo and AOTAutograd trace, fake_cuda.py), so they carry AutocastCPU,
whose op lists differ, and the C++ CUDA kernels would not cast them (they ask the C++
device, `cpu`).

So while a program runs on the virtual GPU (`cuda_autocast_on_the_virtual_gpu`):
- AutocastCUDA is in this thread's *included* dispatch keys, so every op passes through it
  exactly when `torch.autocast("cuda")` has it enabled (torch's own switch: outside such a
  region the key stays excluded and nothing changes); being above AutocastCPU, it comes
  first, as on a GPU;
- each op of CUDA's lists (`policies()`, ported from autocast_mode.h and autocast_mode.cpp)
  gets a Python AutocastCUDA kernel (torch.library, in place of the C++ one, which casts
  only real cuda tensors) applying its policy to the arguments on the virtual GPU, as
  ATen's `cached_cast`/`promote_type` do, then calls the op with AutocastCUDA excluded; a
  call with no argument on the virtual GPU passes by untouched, as it never reaches
  AutocastCUDA on a GPU (a CPU tensor's `binary_cross_entropy` is not refused).
The same kernels serve the program's eager run (its values follow CUDA's lists), Dynamo's
fake propagation and AOTAutograd's trace of the forward and backward (the python
dispatcher finds the registered kernel), so the traced graph has a GPU's casts.

Which tensors are on the virtual GPU: a virtual GPU tensor, a fake (or functionalized
fake) whose Python device is cuda, and, in the eager run, a plain tensor that a C++
composite made for an op that has one of those among its arguments (`cross_entropy`'s
log-softmax output reaching `nll_loss`). Not emulated: the cache of low-dtype casts of
fp32 leaves (ATen keeps one per region; the values are the same, and make_fx turns it off
while tracing), and an op whose AutocastCUDA kernel this table lacks (on a torch newer than
the table): it runs uncast, said in the run's warnings (`program_mode.note`).
"""
from __future__ import annotations

import contextlib
import warnings
from collections.abc import Callable

# ATen's policies (at::autocast::CastPolicy) for DispatchKey::AutocastCUDA, by op overload
# (autocast_mode.h's AT_FORALL_* lists, registered for CUDA in autocast_mode.cpp, torch 2.13
# and 2.14; `linalg_matrix_sqrth` is new in 2.14). `_cudnn_rnn`'s kernel (cudnn/AutocastRNN.cpp)
# is left out: the virtual GPU's RNNs take the CPU's path, which never reaches it.
LOWER_PRECISION_FP = (
    "_convolution.deprecated", "_convolution", "conv1d", "conv2d", "conv3d", "conv_tbc", "conv_transpose1d",
    "conv_transpose2d.input", "conv_transpose3d.input", "convolution", "prelu", "addmm", "addmv", "addr", "matmul",
    "einsum", "mm", "mv", "linalg_vecdot", "linear", "addbmm", "baddbmm", "bmm", "chain_matmul", "linalg_multi_dot",
    "_thnn_fused_lstm_cell", "_thnn_fused_gru_cell", "lstm_cell", "gru_cell", "rnn_tanh_cell", "rnn_relu_cell",
    "_scaled_dot_product_flash_attention", "scaled_dot_product_attention",
    "cudnn_convolution", "cudnn_convolution_transpose",  # CUDA's own, beside the shared list
)
FP32 = (
    "acos", "asin", "cosh", "erfinv", "exp", "expm1", "log", "log10", "log2", "log1p", "reciprocal", "rsqrt", "sinh",
    "tan", "pow.Tensor_Scalar", "pow.Tensor_Tensor", "pow.Scalar", "softplus", "layer_norm", "native_layer_norm",
    "rms_norm", "group_norm", "frobenius_norm.dim", "nuclear_norm", "nuclear_norm.dim", "cosine_similarity",
    "poisson_nll_loss", "cosine_embedding_loss", "nll_loss", "nll_loss2d", "hinge_embedding_loss", "kl_div", "l1_loss",
    "smooth_l1_loss", "huber_loss", "mse_loss", "margin_ranking_loss", "multilabel_margin_loss", "soft_margin_loss",
    "triplet_margin_loss", "multi_margin_loss", "binary_cross_entropy_with_logits", "dist", "pdist", "cdist", "renorm",
    "logsumexp", "upsample_nearest1d", "_upsample_nearest_exact1d", "upsample_nearest2d", "_upsample_nearest_exact2d",
    "upsample_nearest3d", "_upsample_nearest_exact3d", "upsample_linear1d", "upsample_bilinear2d",
    "_upsample_bilinear2d_aa", "upsample_trilinear3d", "upsample_bicubic2d", "_upsample_bicubic2d_aa",
    "linalg_matrix_sqrth",  # torch 2.14
)
FP32_SET_OPT_DTYPE = ("prod", "prod.dim_int", "softmax.int", "log_softmax.int", "cumprod", "cumsum",
                      "linalg_vector_norm", "linalg_matrix_norm", "linalg_matrix_norm.str_ord", "sum",
                      "sum.dim_IntList")
FP32_APPEND_DTYPE = {"norm.Scalar": "norm.ScalarOpt_dtype", "norm.ScalarOpt_dim": "norm.ScalarOpt_dim_dtype"}
PROMOTE = ("addcdiv", "addcmul", "atan2", "bilinear", "cross", "dot", "vdot", "grid_sampler", "index_put",
           "tensordot", "scatter_add")
BANNED = ("binary_cross_entropy",)
BANNED_MESSAGE = (  # autocast_mode.cpp: binary_cross_entropy_banned
    "torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast.\n"
    "Many models use a sigmoid layer right before the binary cross entropy layer.\n"
    "In this case, combine the two layers using torch.nn.functional.binary_cross_entropy_with_logits\n"
    "or torch.nn.BCEWithLogitsLoss.  binary_cross_entropy_with_logits and BCEWithLogits are\n"
    "safe to autocast.")

POLICIES: dict[str, str] = {
    **{name: "lower_precision_fp" for name in LOWER_PRECISION_FP}, **{name: "fp32" for name in FP32},
    **{name: "fp32_set_opt_dtype" for name in FP32_SET_OPT_DTYPE},
    **{name: "fp32_append_dtype" for name in FP32_APPEND_DTYPE}, **{name: "promote" for name in PROMOTE},
    **{name: "banned" for name in BANNED},
}
CUDA_BUILD_ONLY = ("_cudnn_rnn",)  # AutocastCUDA kernels outside autocast_mode.cpp, not ported (above)

# Torch 2.11's lists (read from its CUDA build's dispatcher; 2.12 not checked): also the named-
# dimension overloads, and no `rms_norm` (whose kernel 2.13's fp32 list adds).
BEFORE_2_13 = "<2.13"
FP32_SET_OPT_DTYPE_BEFORE_2_13 = ("prod.dim_Dimname", "softmax.Dimname", "log_softmax.Dimname", "cumprod.dimname",
                                  "cumsum.dimname", "sum.dim_DimnameList")
FP32_APPEND_DTYPE_BEFORE_2_13 = {"norm.names_ScalarOpt_dim": "norm.names_ScalarOpt_dim_dtype"}
SINCE_2_13 = ("rms_norm",)


def policies() -> dict[str, str]:
    """The installed torch's AutocastCUDA policies by op ("op" or "op.overload")."""
    from kernelscope.engine import torch_compat

    if not torch_compat.in_range(BEFORE_2_13):
        return dict(POLICIES)
    return {**{name: policy for name, policy in POLICIES.items() if name not in SINCE_2_13},
            **{name: "fp32_set_opt_dtype" for name in FP32_SET_OPT_DTYPE_BEFORE_2_13},
            **{name: "fp32_append_dtype" for name in FP32_APPEND_DTYPE_BEFORE_2_13}}

NOT_PORTED_NOTE = ("torch.autocast('cuda'): {op} has an AutocastCUDA kernel on this torch that kernelscope's port of "
                   "CUDA's autocast lists lacks; it ran uncast on the virtual GPU (a GPU casts it)")


def overload(name: str):
    """The aten OpOverload of "op" or "op.overload" (None where this torch lacks it)."""
    import torch

    op_name, _, overload_name = name.partition(".")
    packet = getattr(torch.ops.aten, op_name, None)
    return getattr(packet, overload_name or "default", None) if packet is not None else None


def cuda_kernel_ops() -> list[str]:
    """The ops with an AutocastCUDA kernel in this torch's dispatcher ("op" or "op.overload")."""
    import torch

    has = torch._C._dispatch_has_kernel_for_dispatch_key
    return sorted(name.removeprefix("aten::") for name in torch._C._dispatch_get_all_op_names()
                  if name.startswith("aten::") and has(name, "AutocastCUDA"))


# -- the policies, as ATen's WrapFunction_ applies them (autocast_mode.h) -------------------------


def _eligible_check():
    """`eligible_for(arguments)`: ATen's `is_eligible(arg, CUDA)` for one call's arguments on
    the virtual GPU (a floating, non-double tensor on it); None where no argument is on the
    virtual GPU (on a GPU, such a call never reaches AutocastCUDA: its tensors lack the key)."""
    import torch
    from torch._subclasses.fake_tensor import FakeTensor
    from torch._subclasses.functional_tensor import FunctionalTensor

    from kernelscope.engine.devices.virtual_gpu_tensor import tensor_class

    vgt = tensor_class()
    from_functional = torch._from_functional_tensor

    def on_virtual_gpu(value) -> bool:
        if type(value) is vgt:
            return True
        if isinstance(value, FunctionalTensor):
            value = from_functional(value.elem)
        return isinstance(value, FakeTensor) and value.fake_device.type == "cuda"

    def eligible_for(args) -> Callable[[object], bool] | None:
        if not any(on_virtual_gpu(value) for value in _flat(args) if isinstance(value, torch.Tensor)):
            return None

        def eligible(value) -> bool:
            if not isinstance(value, torch.Tensor) or not value.is_floating_point() or value.dtype == torch.float64:
                return False
            if on_virtual_gpu(value):
                return True
            # the eager run: a plain tensor a C++ composite made for an op on the virtual GPU
            return type(value) is torch.Tensor and not isinstance(value, (FakeTensor, FunctionalTensor))

        return eligible

    return eligible_for


def _flat(values):
    for value in values:
        if isinstance(value, (list, tuple)):
            yield from value
        else:
            yield value


def _bound(op, args, kwargs) -> tuple[list, dict]:
    """The op's arguments, every one given (defaults filled in): (positional, keyword-only)."""
    positional, keywords = list(args), dict(kwargs)
    for index, argument in enumerate(op._schema.arguments):
        if argument.kwarg_only:
            if argument.name not in keywords and argument.has_default_value():
                keywords[argument.name] = argument.default_value
        elif index >= len(positional):
            positional.append(keywords.pop(argument.name) if argument.name in keywords else argument.default_value)
    return positional, keywords


def _prioritize(current, tensor, low, eligible):
    """ATen's `prioritize` (the promote policy's widest type)."""
    import torch

    if current == torch.float64:
        raise RuntimeError("promote type is double in at::autocast::prioritize")
    if not eligible(tensor):
        return current
    if tensor.dtype == torch.float64:
        return current
    if current == torch.float32 or tensor.dtype == torch.float32:
        return torch.float32
    if current == low and tensor.dtype == low:
        return low
    raise RuntimeError("Unexpected floating ScalarType in at::autocast::prioritize")


def make_kernel(name: str, policy: str, eligible_for, note=None):
    """The AutocastCUDA kernel of op `name` with ATen's `policy` ("not_ported": none, said
    through `note(text)`); `eligible_for(arguments)` says which arguments are on the GPU."""
    import torch
    from torch._C import DispatchKey, DispatchKeySet

    op = overload(name)
    autocast_cuda = DispatchKeySet(DispatchKey.AutocastCUDA)
    to_dtype = torch.ops.aten.to.dtype
    appended = overload({**FP32_APPEND_DTYPE, **FP32_APPEND_DTYPE_BEFORE_2_13}[name]) \
        if policy == "fp32_append_dtype" else None

    def kernel(*args, **kwargs):
        eligible = eligible_for(list(args) + list(kwargs.values()))
        if eligible is None:  # nothing on the virtual GPU: CUDA's autocast does not see the call
            with torch._C._ExcludeDispatchKeyGuard(autocast_cuda):
                return op(*args, **kwargs)

        def cast(value, dtype):  # cached_cast (without its cache)
            if isinstance(value, (list, tuple)):
                return type(value)(cast(item, dtype) for item in value)
            if eligible(value) and value.dtype != dtype:
                return to_dtype(value, dtype)
            return value

        with torch._C._ExcludeDispatchKeyGuard(autocast_cuda):
            if policy in ("lower_precision_fp", "fp32", "promote"):
                if policy == "fp32":
                    dtype = torch.float32
                else:
                    dtype = torch.get_autocast_dtype("cuda")
                    if policy == "promote":
                        for value in _flat(list(args) + list(kwargs.values())):
                            if isinstance(value, torch.Tensor):
                                dtype = _prioritize(dtype, value, torch.get_autocast_dtype("cuda"), eligible)
                return op(*(cast(value, dtype) for value in args), **{k: cast(v, dtype) for k, v in kwargs.items()})
            if policy == "fp32_set_opt_dtype":
                if not (args and eligible(args[0])):
                    return op(*args, **kwargs)
                positional, keywords = _bound(op, args, kwargs)
                index = next(i for i, argument in enumerate(op._schema.arguments) if argument.name == "dtype")
                if op._schema.arguments[index].kwarg_only:
                    keywords["dtype"] = torch.float32 if keywords.get("dtype") is None else keywords["dtype"]
                else:
                    positional[index] = torch.float32 if positional[index] is None else positional[index]
                return op(*positional, **keywords)
            if policy == "fp32_append_dtype":
                positional, keywords = _bound(op, args, kwargs)
                out_type = torch.float32 if eligible(positional[0]) else positional[0].dtype
                return appended(*positional, **keywords, dtype=out_type)
            if policy == "banned":
                raise RuntimeError(BANNED_MESSAGE)
            if note is not None:  # "not_ported": the GPU's C++ kernel would cast; said in the run
                note(NOT_PORTED_NOTE.format(op=op))
            return op(*args, **kwargs)

    return kernel


@contextlib.contextmanager
def cuda_autocast_on_the_virtual_gpu(note=None):
    """While inside, `torch.autocast("cuda")` applies CUDA's op lists to the virtual GPU's
    tensors on this thread (see the module docstring); `note(text)` says what is not ported."""
    import torch
    from torch._C import DispatchKey

    from kernelscope.engine import program_patch_points as program_points
    from kernelscope.engine.patching import checked

    checked(program_points.AUTOCAST_CUDA_KERNELS)
    eligible_for = _eligible_check()
    library = torch.library.Library("aten", "IMPL")
    ported = {**{name: "not_ported" for name in cuda_kernel_ops() if name not in CUDA_BUILD_ONLY}, **policies()}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "Overriding a previously registered kernel": that is the point
            for name, policy in ported.items():
                op = overload(name)
                if op is not None:
                    library.impl(op, make_kernel(name, policy, eligible_for, note), "AutocastCUDA")
                    op._dispatch_cache.clear()
        included = torch._C._dispatch_tls_is_dispatch_key_included(DispatchKey.AutocastCUDA)
        torch._C._dispatch_tls_set_dispatch_key_included(DispatchKey.AutocastCUDA, True)
        try:
            yield
        finally:
            torch._C._dispatch_tls_set_dispatch_key_included(DispatchKey.AutocastCUDA, included)
    finally:
        library._destroy()
        for name in ported:
            op = overload(name)
            if op is not None:
                op._dispatch_cache.clear()
