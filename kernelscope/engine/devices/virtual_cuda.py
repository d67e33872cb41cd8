"""virtual-cuda: the CUDA-target code Inductor would emit for an sm_90 GPU, without a GPU.

How: Dynamo and AOTAutograd run on the user's real CPU tensors (so data-dependent
Python, graph breaks and autograd behave as usual), and Inductor's inner compile
of every forward/backward/inference graph is redone on fake *cuda* tensors while
`torch.cuda` and Triton's driver pretend an H100 is present. Inductor writes its
genuine CUDA wrapper and kernels; we keep the code and never load it (loading
would compile every kernel to a cubin). The graph itself then runs eagerly on the
CPU so the program goes on.
"""
from __future__ import annotations

import contextlib
import types
from unittest import mock

from kernelscope.engine.devices import codegen_only, triton_driver

ARCH = 90


def _device_properties():
    return types.SimpleNamespace(
        name="NVIDIA H100 (virtual)",
        major=ARCH // 10,
        minor=ARCH % 10,
        multi_processor_count=132,
        total_memory=80 * 2**30,
        warp_size=32,
        max_threads_per_multi_processor=2048,
        regs_per_multiprocessor=65536,
        max_threads_per_block=1024,
        shared_memory_per_block_optin=232448,
        shared_memory_per_block=49152,
        shared_memory_per_multiprocessor=233472,
        L2_cache_size=50 * 2**20,
        gcnArchName="",
        is_integrated=False,
        uuid="virtual",
        clock_rate=1980000,
        memory_clock_rate=2619000,
        memory_bus_width=5120,
        type="cuda",
    )


@contextlib.contextmanager
def pretend_cuda_present():
    """Patch the torch.cuda queries Inductor's codegen makes; restore everything after."""
    import torch
    from torch._dynamo import device_interface
    from torch._inductor.fx_passes import joint_graph
    import torch._inductor.runtime.triton_helpers as triton_helpers
    import torch.utils._triton as torch_triton

    props = _device_properties()
    capability = (props.major, props.minor)
    cuda_fakes = {
        "is_available": lambda: True,
        "device_count": lambda: 1,
        "current_device": lambda: 0,
        "set_device": lambda device: None,
        "get_device_properties": lambda device=None: props,
        "get_device_capability": lambda device=None: capability,
        "get_device_name": lambda device=None: props.name,
        "is_bf16_supported": lambda *args, **kwargs: True,
        "_exchange_device": lambda device: 0,
        "_maybe_exchange_device": lambda device: 0,
        "synchronize": lambda device=None: None,
        # Inductor saves and restores the RNG state around codegen.
        "get_rng_state": lambda device="cuda": torch.zeros(16, dtype=torch.uint8),
        "set_rng_state": lambda state, device="cuda": None,
    }
    interface_fakes = {
        "current_device": lambda: 0,
        "set_device": lambda device: None,
        "device_count": lambda: 1,
        "get_device_properties": lambda device=None: props,
        "exchange_device": lambda device: 0,
        "maybe_exchange_device": lambda device: 0,
        "synchronize": lambda device=None: None,
        "is_bf16_supported": lambda *args, **kwargs: True,
        "get_raw_stream": lambda device: 0,
    }
    original_lazy_init = joint_graph.lazy_init

    with contextlib.ExitStack() as stack:
        for name, fake in cuda_fakes.items():
            stack.enter_context(mock.patch.object(torch.cuda, name, fake))
        for name, fake in interface_fakes.items():
            if hasattr(device_interface.CudaInterface, name):
                stack.enter_context(
                    mock.patch.object(device_interface.CudaInterface, name, staticmethod(fake))
                )
        worker = device_interface.CudaInterface.Worker
        stack.enter_context(mock.patch.object(worker, "current_device", staticmethod(lambda: 0)))
        stack.enter_context(
            mock.patch.object(worker, "get_device_properties", staticmethod(lambda d=None: props))
        )
        # Joint-graph pattern setup traces patterns with real tensors on the input
        # device; a CPU build cannot create cuda tensors, so trace them on the CPU.
        stack.enter_context(
            mock.patch.object(
                joint_graph,
                "lazy_init",
                lambda input_device=None: original_lazy_init(torch.device("cpu")),
            )
        )
        # Generated modules would switch Triton to its real CUDA driver (needs libcuda).
        stack.enter_context(
            mock.patch.object(triton_helpers, "set_driver_to_gpu", lambda: None)
        )
        previous_driver = triton_driver.install(ARCH)
        stack.callback(triton_driver.restore, previous_driver)
        torch_triton.has_triton.cache_clear()
        stack.callback(torch_triton.has_triton.cache_clear)
        yield


def _cuda_fp32_matmul_uses_tf32() -> bool:
    import torch

    matmul = torch.backends.cuda.matmul
    precision = getattr(matmul, "fp32_precision", None)  # torch >= 2.9
    if precision is not None:
        return precision == "tf32"
    return bool(getattr(matmul, "allow_tf32", False))


@contextlib.contextmanager
def decide_passes_as_cuda():
    """Make device-dependent graph passes decide as they would for a CUDA device.

    Dynamo and AOTAutograd trace the CPU tensors, so Inductor's joint-graph passes
    see CPU tensors. One of them changes the kernels a user gets: the attention
    fusion (matmul-softmax-matmul -> scaled_dot_product_attention) refuses fp32
    CUDA inputs unless TF32 matmuls are enabled, but accepts fp32 CPU inputs.
    Without this, virtual-cuda showed a CPU flash-attention call where a real
    GPU compile has bmm + a softmax kernel (seen on an H100, torch 2.11). Another,
    bmm -> mm for batch 1, fires only for GPU tensors (LLaMA's rotary embedding).
    """
    import torch

    with contextlib.ExitStack() as stack:
        fuse_attention = _module_or_none("torch._inductor.fx_passes.fuse_attention")
        original_sfdp_check = getattr(fuse_attention, "_sfdp_params_check", None)
        if original_sfdp_check is not None:

            def sfdp_params_check(match):
                query = match.kwargs["query"].meta["val"]
                if query.device.type == "cpu" and query.dtype == torch.float32 \
                        and not _cuda_fp32_matmul_uses_tf32():
                    return False
                return original_sfdp_check(match)

            stack.enter_context(mock.patch.object(fuse_attention, "_sfdp_params_check", sfdp_params_check))

        # Joint-graph patterns that only fire on a GPU (e.g. bmm with batch 1 -> mm)
        # ask `check_device(a, b, "cuda")`: the CPU tensors stand for the GPU here.
        joint_graph = _module_or_none("torch._inductor.fx_passes.joint_graph")
        original_check_device = getattr(joint_graph, "check_device", None)
        if original_check_device is not None:

            def check_device(a, b, device="cuda"):
                if device == "cuda" and a.device.type == b.device.type == "cpu":
                    return True
                return original_check_device(a, b, device)

            stack.enter_context(mock.patch.object(joint_graph, "check_device", check_device))
        yield


def _module_or_none(name: str):
    import importlib

    try:
        return importlib.import_module(name)
    except ImportError:
        return None


def _as_cuda(value):
    """A cpu device (as a torch.device or a string) becomes cuda:0; anything else stays."""
    import torch

    if isinstance(value, torch.device) and value.type == "cpu":
        return torch.device("cuda", 0)
    if isinstance(value, str) and value == "cpu":
        return torch.device("cuda", 0)
    return value


def _graph_on_cuda(gm):
    """A copy of `gm` whose explicit device constants say cuda instead of cpu.

    The graph was captured on the CPU, so every device it names (a `device=`
    keyword, `device_put`, the device argument of `prims.inductor_seeds` that
    dropout's RNG uses, ...) is the capture device and becomes the virtual GPU.
    """
    import torch
    from torch.fx.node import map_aggregate

    def retarget(value):
        return _as_cuda(value) if isinstance(value, torch.device) else value

    cuda_gm = codegen_only.copy_graph_module(gm)
    for node in cuda_gm.graph.nodes:
        if node.op != "call_function":
            continue
        node.args = map_aggregate(node.args, retarget)
        node.kwargs = map_aggregate(node.kwargs, retarget)
        if "device" in node.kwargs:  # devices given as strings ("cpu")
            node.kwargs = {**node.kwargs, "device": _as_cuda(node.kwargs["device"])}
    cuda_gm.recompile()
    return cuda_gm


def _fake_cuda_inputs(example_inputs, fake_mode):
    import torch
    from torch._subclasses.fake_tensor import FakeTensor, unset_fake_temporarily

    cuda = torch.device("cuda", 0)
    with unset_fake_temporarily():
        return [
            FakeTensor(
                fake_mode,
                torch.empty_strided(t.shape, t.stride(), dtype=t.dtype, device="meta"),
                cuda,
            )
            if isinstance(t, torch.Tensor)
            else t
            for t in example_inputs
        ]


def make_inner_compile(original_inner_compile):
    """Inductor's inner compile, retargeted: codegen for virtual cuda, run eagerly on CPU."""

    def retarget(gm, example_inputs):
        from torch._guards import detect_fake_mode
        from torch._subclasses.fake_tensor import FakeTensorMode
        from torch.fx.passes.fake_tensor_prop import FakeTensorProp

        fake_mode = detect_fake_mode(example_inputs) or FakeTensorMode(
            allow_non_fake_inputs=True
        )
        cuda_gm = _graph_on_cuda(gm)
        cuda_inputs = _fake_cuda_inputs(example_inputs, fake_mode)
        FakeTensorProp(cuda_gm, mode=fake_mode).propagate_dont_convert_inputs(*cuda_inputs)
        return cuda_gm, cuda_inputs

    return codegen_only.make_inner_compile(
        original_inner_compile, retarget=retarget, context=pretend_cuda_present
    )
