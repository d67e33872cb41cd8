"""ATen code kernelscope ports to Python for virtual-cuda, and how to see one drift.

A port reproduces what a CUDA build of torch decides in C++ (the SDPA backend, BatchNorm's
backend, `Tensor.to`'s no-op-or-copy, ...), so a CPU-only machine decides as the GPU would.
On a new torch the C++ may change and the port would go silently wrong; only the H100
comparison (bench/gpu_check.py) would see it. So each port names what it was ported from
and the torch versions it was checked against (by that comparison, or by reading that
version's CUDA build), and carries cheap drift checks that run on the installed torch:
the schemas of the ops it reads or emits, its own parameters against those schemas, and
small behavioural probes. `status()`:
- "ok": a checked torch version, and every drift check passes;
- "unverified": a torch outside the checked versions whose drift checks still pass;
- "broken": a drift check failed (why).
`kernelscope doctor --torch` lists them (engine/torch_doctor.py).
"""
from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass

from kernelscope.engine import torch_compat

# Op schemas as torch 2.11, 2.13 and 2.14 declare them (identical in the three).
SCHEMAS = {
    "scaled_dot_product_attention": "aten::scaled_dot_product_attention(Tensor query, Tensor key, Tensor value, "
    "Tensor? attn_mask=None, float dropout_p=0., bool is_causal=False, *, float? scale=None, "
    "bool enable_gqa=False) -> Tensor",
    "_fused_sdp_choice": "aten::_fused_sdp_choice(Tensor query, Tensor key, Tensor value, Tensor? attn_mask=None, "
    "float dropout_p=0., bool is_causal=False, *, float? scale=None, bool enable_gqa=False) -> int",
    "_scaled_dot_product_flash_attention": "aten::_scaled_dot_product_flash_attention(Tensor query, Tensor key, "
    "Tensor value, float dropout_p=0., bool is_causal=False, bool return_debug_mask=False, *, float? scale=None) "
    "-> (Tensor output, Tensor logsumexp, Tensor cum_seq_q, Tensor cum_seq_k, SymInt max_q, SymInt max_k, "
    "Tensor rng_state, Tensor unused, Tensor debug_attn_mask)",
    "_scaled_dot_product_flash_attention_backward": "aten::_scaled_dot_product_flash_attention_backward(Tensor "
    "grad_out, Tensor query, Tensor key, Tensor value, Tensor out, Tensor logsumexp, Tensor cum_seq_q, Tensor "
    "cum_seq_k, SymInt max_q, SymInt max_k, float dropout_p, bool is_causal, Tensor philox_seed, Tensor "
    "philox_offset, *, float? scale=None) -> (Tensor grad_query, Tensor grad_key, Tensor grad_value)",
    "_scaled_dot_product_efficient_attention": "aten::_scaled_dot_product_efficient_attention(Tensor query, Tensor "
    "key, Tensor value, Tensor? attn_bias, bool compute_log_sumexp, float dropout_p=0., bool is_causal=False, *, "
    "float? scale=None) -> (Tensor output, Tensor log_sumexp, Tensor philox_seed, Tensor philox_offset)",
    "_scaled_dot_product_efficient_attention_backward": "aten::_scaled_dot_product_efficient_attention_backward("
    "Tensor grad_out_, Tensor query, Tensor key, Tensor value, Tensor attn_bias, Tensor out, Tensor logsumexp, "
    "Tensor philox_seed, Tensor philox_offset, float dropout_p, bool[4] grad_input_mask, bool is_causal=False, *, "
    "float? scale=None) -> (Tensor, Tensor, Tensor, Tensor)",
    "_scaled_dot_product_cudnn_attention": "aten::_scaled_dot_product_cudnn_attention(Tensor query, Tensor key, "
    "Tensor value, Tensor? attn_bias, bool compute_log_sumexp, float dropout_p=0., bool is_causal=False, bool "
    "return_debug_mask=False, *, float? scale=None) -> (Tensor output, Tensor logsumexp, Tensor cum_seq_q, Tensor "
    "cum_seq_k, SymInt max_q, SymInt max_k, Tensor philox_seed, Tensor philox_offset, Tensor debug_attn_mask)",
    "_scaled_dot_product_cudnn_attention_backward": "aten::_scaled_dot_product_cudnn_attention_backward(Tensor "
    "grad_out, Tensor query, Tensor key, Tensor value, Tensor out, Tensor logsumexp, Tensor philox_seed, Tensor "
    "philox_offset, Tensor attn_bias, Tensor cum_seq_q, Tensor cum_seq_k, SymInt max_q, SymInt max_k, float "
    "dropout_p, bool is_causal, *, float? scale=None) -> (Tensor, Tensor, Tensor)",
    "_batch_norm_impl_index": "aten::_batch_norm_impl_index(Tensor input, Tensor? weight, Tensor? bias, Tensor? "
    "running_mean, Tensor? running_var, bool training, float momentum, float eps, bool cudnn_enabled) -> (Tensor, "
    "Tensor, Tensor, Tensor, int)",
    "cudnn_batch_norm": "aten::cudnn_batch_norm(Tensor input, Tensor weight, Tensor? bias, Tensor? running_mean, "
    "Tensor? running_var, bool training, float exponential_average_factor, float epsilon) -> (Tensor, Tensor, "
    "Tensor, Tensor)",
    "native_batch_norm": "aten::native_batch_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, "
    "Tensor? running_var, bool training, float momentum, float eps) -> (Tensor, Tensor, Tensor)",
    "lift_fresh": "aten::lift_fresh(Tensor(a) self) -> Tensor(a)",
    "lift_fresh_copy": "aten::lift_fresh_copy(Tensor self) -> Tensor",
    "_to_copy": "aten::_to_copy(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, "
    "bool? pin_memory=None, bool non_blocking=False, MemoryFormat? memory_format=None) -> Tensor",
    "to.dtype_layout": "aten::to.dtype_layout(Tensor(a) self, *, ScalarType? dtype=None, Layout? layout=None, "
    "Device? device=None, bool? pin_memory=None, bool non_blocking=False, bool copy=False, MemoryFormat? "
    "memory_format=None) -> Tensor(a)",
    "to.device": "aten::to.device(Tensor(a) self, Device device, ScalarType dtype, bool non_blocking=False, "
    "bool copy=False, MemoryFormat? memory_format=None) -> Tensor(a)",
    "to.dtype": "aten::to.dtype(Tensor(a) self, ScalarType dtype, bool non_blocking=False, bool copy=False, "
    "MemoryFormat? memory_format=None) -> Tensor(a)",
    "to.other": "aten::to.other(Tensor(a) self, Tensor other, bool non_blocking=False, bool copy=False, "
    "MemoryFormat? memory_format=None) -> Tensor(a)",
    "softmax.int": "aten::softmax.int(Tensor self, int dim, ScalarType? dtype=None) -> Tensor",
    "log_softmax.int": "aten::log_softmax.int(Tensor self, int dim, ScalarType? dtype=None) -> Tensor",
    "_softmax": "aten::_softmax(Tensor self, int dim, bool half_to_float) -> Tensor",
    "_log_softmax": "aten::_log_softmax(Tensor self, int dim, bool half_to_float) -> Tensor",
    "_fused_rms_norm": "aten::_fused_rms_norm(Tensor input, int[] normalized_shape, Tensor? weight, float? eps) "
    "-> (Tensor, Tensor)",
}


@dataclass(frozen=True)
class Port:
    name: str
    feature: str
    where: str  # the kernelscope module holding it
    ported_from: str
    checked_on: tuple[str, ...]  # "major.minor" of the torch versions it was checked against
    drift: Callable[[], list[str]]  # what no longer matches on the installed torch (empty: nothing)

    def status(self) -> tuple[str, str]:
        """("ok" | "unverified" | "broken", why)."""
        try:
            problems = self.drift()
        except Exception as error:  # noqa: BLE001 - a check reports, never raises
            problems = [f"the drift check raised {type(error).__name__}: {error}"]
        if problems:
            return "broken", f"{self.where}, ported from {self.ported_from}: {'; '.join(problems)}"
        version = "{}.{}".format(*torch_compat.torch_version())
        checked = ", ".join(self.checked_on)
        if version in self.checked_on:
            return "ok", f"{self.where}, ported from {self.ported_from}; checked on torch {checked}; drift checks pass"
        return "unverified", (f"{self.where}, ported from {self.ported_from}; checked on torch {checked}, not "
                              f"{version}; its drift checks pass here (the GPU check would confirm it)")


# -- drift checks --------------------------------------------------------------------------


def _overload(name: str):
    import torch

    op_name, _, overload = name.partition(".")
    return getattr(getattr(torch.ops.aten, op_name), overload or "default")


def schema_problems(names) -> list[str]:
    """Each op of `names` whose schema is not the one recorded in SCHEMAS."""
    problems = []
    for name in names:
        try:
            schema = str(_overload(name)._schema)
        except AttributeError:
            problems.append(f"aten::{name} is missing")
            continue
        if schema != SCHEMAS[name]:
            problems.append(f"aten::{name}'s schema changed: {schema}")
    return problems


def parameter_problems(function, op_name: str) -> list[str]:
    """Whether a Python function standing for an op can take the op's arguments as the
    dispatcher passes them: as many positional ones, and each keyword-only one by its name."""
    try:
        arguments = list(_overload(op_name)._schema.arguments)
    except AttributeError:
        return [f"aten::{op_name} is missing"]
    keywords = [argument.name for argument in arguments if argument.kwarg_only]
    parameters = inspect.signature(function).parameters
    positional = [name for name, parameter in parameters.items()
                  if parameter.kind in (parameter.POSITIONAL_ONLY, parameter.POSITIONAL_OR_KEYWORD)
                  and name not in keywords]
    by_name = [name for name, parameter in parameters.items() if parameter.kind != parameter.POSITIONAL_ONLY]
    if len(positional) != len(arguments) - len(keywords) or any(name not in by_name for name in keywords):
        return [f"{function.__module__}.{function.__name__}{tuple(parameters)} no longer matches "
                f"aten::{op_name}{tuple(argument.name for argument in arguments)}"]
    return []


def _sdpa_choice_drift() -> list[str]:
    import torch

    problems = schema_problems(["scaled_dot_product_attention", "_fused_sdp_choice"])
    from kernelscope.engine.devices import sdpa_choice

    members = {name: member.value for name, member in torch.nn.attention.SDPBackend.__members__.items()}
    expected = {"MATH": 0, "FLASH_ATTENTION": 1, "EFFICIENT_ATTENTION": 2, "CUDNN_ATTENTION": 3}
    if any(members.get(name) != value for name, value in expected.items()):
        problems.append(f"at::SDPBackend's values changed: {members}")
    for getter in ("_get_cudnn_sdp_enabled", "_get_flash_sdp_enabled", "_get_mem_efficient_sdp_enabled",
                   "_get_math_sdp_enabled", "_get_sdp_priority_order"):
        if not hasattr(torch._C, getter):
            problems.append(f"torch._C.{getter} is missing")
    if not problems and list(torch._C._get_sdp_priority_order()) != sdpa_choice._BUILD_DEFAULT_ORDER:
        problems.append(f"the build's default priority order is {list(torch._C._get_sdp_priority_order())}, "
                        f"not {sdpa_choice._BUILD_DEFAULT_ORDER}")
    return problems


def _batch_norm_drift() -> list[str]:
    import torch

    from kernelscope.engine.devices import cuda_batch_norm

    problems = schema_problems(["_batch_norm_impl_index", "cudnn_batch_norm", "native_batch_norm"])
    problems += parameter_problems(cuda_batch_norm.batch_norm_impl_index, "_batch_norm_impl_index")
    if not torch._C._dispatch_has_kernel_for_dispatch_key("aten::_batch_norm_impl_index",
                                                          "CompositeImplicitAutograd"):
        problems.append("aten::_batch_norm_impl_index is no longer a C++ composite (the port would never run)")
    from torch._prims_common import suggest_memory_format

    for tensor in (torch.empty(2, 3, 4, 5).permute(0, 2, 3, 1), torch.empty(2, 3, 4, 5, 6).permute(0, 2, 3, 4, 1),
                   torch.empty(2, 3, 4, 5), torch.empty(2, 3, 1, 1)):
        if cuda_batch_norm.suggest_memory_format(tensor) != suggest_memory_format(tensor):
            problems.append(f"suggest_memory_format of a {tuple(tensor.stride())}-strided tensor differs from torch's")
    return problems


def _tensor_to_drift() -> list[str]:
    import torch

    from kernelscope.engine.devices import fake_cuda

    problems = schema_problems(["to.dtype_layout", "to.device", "to.dtype", "to.other", "_to_copy"])
    x, y = torch.ones(2, 3), torch.ones(1, 2, 3, 4)
    aten = torch.ops.aten.to
    cases = [(aten.dtype, x, (torch.float32,), {}), (aten.dtype, x, (torch.float64,), {}),
             (aten.dtype, x, (torch.float32, False, True), {}), (aten.device, x, ("cpu", torch.float32), {}),
             (aten.device, x, (torch.device("cpu"), torch.float16), {}), (aten.other, x, (x.double(),), {}),
             (aten.other, x, (x,), {}), (aten.dtype_layout, x, (), {"dtype": torch.float32, "device": "cpu"}),
             (aten.dtype_layout, y, (), {"memory_format": torch.channels_last})]
    for overload, source, args, kwargs in cases:
        ours, theirs = fake_cuda._to_python(source, *args, **kwargs), overload(source, *args, **kwargs)
        if (ours is source) != (theirs is source) or ours.dtype != theirs.dtype or ours.stride() != theirs.stride():
            problems.append(f"{overload}(*{args}, **{kwargs}) decides differently from ATen")
    return problems


def _composites_drift() -> list[str]:
    import torch

    from kernelscope.engine.devices import fake_cuda

    has = torch._C._dispatch_has_kernel_for_dispatch_key
    problems = schema_problems([name.removeprefix("aten::") for name in fake_cuda.CUDA_KEEPS_COMPOSITES])
    for name in fake_cuda.CUDA_KEEPS_COMPOSITES:
        if not has(name, "CompositeImplicitAutograd") or has(name, "CPU"):
            problems.append(f"{name} is no longer a composite without a CPU kernel")
    if torch.backends.cuda.is_built():  # the dispatcher of this CUDA build says which ops a GPU keeps
        from_build = fake_cuda.ops_a_gpu_keeps()
        if sorted(from_build) != sorted(fake_cuda.CUDA_KEEPS_COMPOSITES):
            problems.append(f"this CUDA build keeps {from_build}; the table for CPU builds says "
                            f"{list(fake_cuda.CUDA_KEEPS_COMPOSITES)}")
    for name in fake_cuda._ported_composites():
        op = "aten::" + name.removesuffix(".default")
        if not has(op, "CompositeImplicitAutograd"):
            problems.append(f"{op} is no longer a C++ composite")
    return problems


def _attention_drift() -> list[str]:
    from kernelscope.engine.devices import cuda_attention

    problems = schema_problems(["scaled_dot_product_attention", *cuda_attention._CPU_STAND_INS])
    problems += parameter_problems(cuda_attention._sdpa_as_on_cuda, "scaled_dot_product_attention")
    for name, stand_in in cuda_attention._CPU_STAND_INS.items():
        problems += parameter_problems(stand_in, name)
    return problems


def _lifted_constants_drift() -> list[str]:
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode

    problems = schema_problems(["lift_fresh", "lift_fresh_copy"])
    lift_fns = getattr(FakeTensorMode, "lift_fns", None) or {}
    for name in ("lift_fresh", "lift_fresh_copy"):
        if getattr(torch.ops.aten, name).default not in lift_fns:
            problems.append(f"FakeTensorMode.lift_fns no longer holds aten::{name}")
    return problems


def _softmax_drift() -> list[str]:
    """The schemas, the ports' parameters, and ATen's own composites on fake cuda tensors with
    CUDA's dispatch keys: a float16 input told float32 calls the `half_to_float` kernel."""
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.utils._python_dispatch import TorchDispatchMode

    from kernelscope.engine.devices import cuda_softmax

    problems = schema_problems(["softmax.int", "log_softmax.int", "_softmax", "_log_softmax"])
    problems += parameter_problems(cuda_softmax.softmax, "softmax.int")
    problems += parameter_problems(cuda_softmax.log_softmax, "log_softmax.int")
    seen: list = []

    class Below(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if func.namespace != "prim":
                seen.append((str(func), [a.dtype if isinstance(a, torch.Tensor) else a for a in args]))
            return func(*args, **(kwargs or {}))

    with FakeTensorMode():
        x = torch.empty(2, 4, dtype=torch.float16, device="cuda")
        for name, port in (("softmax.int", cuda_softmax.softmax), ("log_softmax.int", cuda_softmax.log_softmax)):
            outcomes = []
            for function in (_overload(name), port):
                seen.clear()
                with Below():
                    function(x, -1, torch.float32)
                outcomes.append(list(seen))
            if outcomes[0] != outcomes[1]:
                problems.append(f"aten::{name} of a float16 cuda tensor told float32 runs {outcomes[0]}, the port "
                                f"{outcomes[1]}")
    return problems


def autocast_probe_calls(cuda):
    """(op, args, kwargs) calls covering each of CUDA's autocast policies; `cuda(shape, dtype)`
    makes a tensor on cuda (a fake one)."""
    import torch

    f32, bf16, f64 = torch.float32, torch.bfloat16, torch.float64
    target = cuda((4,), torch.int64)
    return [
        ("mm", (cuda((4, 4), f32), cuda((4, 4), f32)), {}),  # lower_precision_fp
        ("mm", (cuda((4, 4), f64), cuda((4, 4), f64)), {}),  # doubles are never cast
        ("linear", (cuda((2, 4), f32), cuda((3, 4), f32), cuda((3,), f32)), {}),
        ("baddbmm", (cuda((2, 3, 3), f32), cuda((2, 3, 4), f32), cuda((2, 4, 3), f32)), {}),
        ("conv2d", (cuda((1, 2, 5, 5), f32), cuda((3, 2, 3, 3), f32)), {}),
        ("exp", (cuda((4,), bf16),), {}),  # fp32
        ("pow.Tensor_Scalar", (cuda((4,), bf16), 2), {}),
        ("layer_norm", (cuda((2, 4), bf16), [4]), {}),
        ("native_layer_norm", (cuda((2, 4), bf16), [4], None, None, 1e-5), {}),
        ("nll_loss", (cuda((4, 5), bf16), target), {}),
        ("mse_loss", (cuda((4,), bf16), cuda((4,), bf16)), {}),
        ("softmax.int", (cuda((2, 4), bf16), -1), {}),  # fp32_set_opt_dtype
        ("softmax.int", (cuda((2, 4), bf16), -1, torch.float16), {}),  # an explicit dtype is kept
        ("log_softmax.int", (cuda((2, 4), bf16), 1), {}),
        ("sum", (cuda((2, 4), bf16),), {}),
        ("sum.dim_IntList", (cuda((2, 4), bf16), [0]), {}),
        ("cumsum", (cuda((4,), bf16), 0), {}),
        ("norm.Scalar", (cuda((4,), bf16), 2), {}),  # fp32_append_dtype
        ("norm.ScalarOpt_dim", (cuda((2, 4), bf16), 2, [1]), {}),
        ("addcmul", (cuda((4,), f32), cuda((4,), bf16), cuda((4,), bf16)), {}),  # promote
        ("addcmul", (cuda((4,), bf16), cuda((4,), bf16), cuda((4,), bf16)), {}),
        ("atan2", (cuda((4,), bf16), cuda((4,), f32)), {}),
        ("binary_cross_entropy", (cuda((4,), f32), cuda((4,), f32)), {}),  # banned
    ]


def autocast_problems(calls_of=autocast_probe_calls) -> list[str]:
    """Each call of `calls_of(cuda)` that the port's AutocastCUDA kernel runs otherwise than
    the C++ one — the ops dispatched below autocast with their arguments' dtypes, the result's
    dtypes, or the error — both on fake cuda tensors with CUDA's dispatch keys under bf16
    `torch.autocast("cuda")`."""
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_leaves

    from kernelscope.engine.devices import cuda_autocast

    def dtypes(values):
        return [value.dtype for value in tree_leaves(values) if isinstance(value, torch.Tensor)]

    class Below(TorchDispatchMode):  # the ops autocast hands on, as the traced graph gets them
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if func.namespace != "prim":  # not the C++ device queries of a fake
                seen.append((str(func), dtypes((args, kwargs))))
            return func(*args, **(kwargs or {}))

    def outcome(function, args, kwargs):
        seen.clear()
        try:
            with Below():
                result = function(*args, **kwargs)
        except RuntimeError as error:
            return f"raises {str(error).splitlines()[0]}"
        return list(seen), dtypes(result)

    seen: list = []
    problems = []
    state = (torch.is_autocast_enabled("cuda"), torch.get_autocast_dtype("cuda"), torch.is_autocast_cache_enabled())
    eligible_for = cuda_autocast._eligible_check()
    try:
        torch.set_autocast_enabled("cuda", True)
        torch.set_autocast_dtype("cuda", torch.bfloat16)
        torch.set_autocast_cache_enabled(False)
        with FakeTensorMode():
            for name, args, kwargs in calls_of(lambda shape, dtype: torch.empty(shape, dtype=dtype, device="cuda")):
                op, policy = cuda_autocast.overload(name), cuda_autocast.policies().get(name)
                if policy is None or op is None:
                    problems.append(f"aten::{name} has no policy in the port")
                    continue
                ours = outcome(cuda_autocast.make_kernel(name, policy, eligible_for), args, kwargs)
                aten = outcome(op, args, kwargs)
                if ours != aten:
                    problems.append(f"aten::{name}{tuple(dtypes(args))}: AutocastCUDA runs {aten}, the port {ours}")
    finally:
        torch.set_autocast_enabled("cuda", state[0])
        torch.set_autocast_dtype("cuda", state[1])
        torch.set_autocast_cache_enabled(state[2])
    return problems


def _cuda_autocast_drift() -> list[str]:
    from kernelscope.engine.devices import cuda_autocast

    registered = {name for name in cuda_autocast.cuda_kernel_ops() if name not in cuda_autocast.CUDA_BUILD_ONLY}
    ported = {name for name in cuda_autocast.policies() if cuda_autocast.overload(name) is not None}
    problems = []
    if registered - ported:
        problems.append(f"ops with an AutocastCUDA kernel the port lacks: {sorted(registered - ported)}")
    if ported - registered:
        problems.append(f"ops the port casts that have no AutocastCUDA kernel here: {sorted(ported - registered)}")
    return problems + autocast_problems()


PORTS = [
    Port("SDPA backend choice", "virtual-cuda", "devices/sdpa_choice.py",
         "ATen's sdp::select_sdp_backend (transformers/cuda/sdp_utils.cpp, sdp_utils_cpp.h)", ("2.11", "2.13"),
         _sdpa_choice_drift),
    Port("SDPA decomposed as ATen's CUDA composite", "virtual-cuda", "devices/cuda_attention.py",
         "ATen's scaled_dot_product_attention (transformers/attention.cpp) and the backends' op signatures",
         ("2.11", "2.13"), _attention_drift),
    Port("BatchNorm backend", "virtual-cuda", "devices/cuda_batch_norm.py",
         "ATen's _batch_norm_impl_index and _select_batch_norm_backend (native/Normalization.cpp)",
         ("2.11", "2.13"), _batch_norm_drift),
    Port("Tensor.to", "virtual-cuda", "devices/fake_cuda.py (_to_python)",
         "ATen's to_impl and to_will_alias (native/TensorConversions.cpp)", ("2.11", "2.13"), _tensor_to_drift),
    Port("C++ composites on cuda", "virtual-cuda", "devices/fake_cuda.py (composites table)",
         "the dispatcher's CompositeImplicitAutograd/CUDA/CPU kernels of a CUDA build (ops a GPU keeps, "
         "ported composites)", ("2.11", "2.13", "2.14"), _composites_drift),
    Port("softmax's fp16-to-fp32 kernel", "virtual-cuda", "devices/cuda_softmax.py",
         "ATen's softmax and log_softmax composites (native/SoftMax.cpp)", ("2.13", "2.14"), _softmax_drift),
    Port("CUDA's autocast op lists", "virtual-cuda program", "devices/cuda_autocast.py",
         "ATen's AutocastCUDA registrations and cast policies (autocast_mode.h, autocast_mode.cpp)",
         ("2.11", "2.13", "2.14"), _cuda_autocast_drift),
    Port("lifted constants", "virtual-cuda", "devices/lifted_constants.py",
         "internal_new_from_data (torch/csrc/utils/tensor_new.cpp) and FakeTensorMode's lift", ("2.11", "2.13"),
         _lifted_constants_drift),
]
