"""virtual-cuda: the CUDA-target code Inductor would emit for an sm_90 GPU, without a GPU.

How: Dynamo captures on the user's real CPU tensors (so data-dependent Python,
graph breaks and the eager run behave as usual). Everything after the capture —
AOTAutograd, its decompositions, the joint-graph passes, the partitioner and
Inductor — runs on a copy of the graph whose inputs and device constants are fake
*cuda* tensors, while `torch.cuda` and Triton's driver report an H100 (see
`make_compile_fx`). So each decision torch makes in Python by device is made the
GPU's way by construction, not case by case (`device_audit` checks it). Inductor
writes its genuine CUDA wrapper and kernels; we keep the code and never load it
(loading would compile every kernel to a cubin). Dynamo's own graph then runs
eagerly on the CPU so the program goes on.

A program that runs on the virtual GPU (`kernelscope run`, cuda_program.py) is captured by
Dynamo on fake cuda tensors already: such a graph is compiled as captured, from its real
(virtual GPU) inputs, as a GPU compiles it; the copy onto cuda is for graphs of CPU tensors
(factories, CPU scripts).
"""
from __future__ import annotations

import contextlib
import types

from kernelscope.engine import patch_points as points
from kernelscope.engine.devices import (
    codegen_only,
    device_audit,
    eager_regions,
    fake_cuda,
    fake_distributed,
    lifted_constants,
    meta_models,
    program_mode,
    program_results,
    real_compute,
    triton_driver,
)
from kernelscope.engine.devices.cuda_fakes import fake_cuda_like
from kernelscope.engine.devices.virtual_gpu_tensor import device_index, virtual_device
from kernelscope.engine.patching import Patches

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


def device_answers(props) -> dict:
    """`torch.cuda`'s device queries as one GPU with `props` answers them: what the compile
    asks (pretend_cuda_present) and what a program asks (cuda_runtime) alike."""
    capability = (props.major, props.minor)
    return {
        "is_available": lambda: True,
        "device_count": lambda: 1,
        "current_device": device_index,
        "set_device": lambda device: None,
        "get_device_properties": lambda device=None: props,
        "get_device_capability": lambda device=None: capability,
        "get_device_name": lambda device=None: props.name,
        "is_bf16_supported": lambda *args, **kwargs: True,
        "_exchange_device": lambda device: device_index(),
        "_maybe_exchange_device": lambda device: device_index(),
        "synchronize": lambda device=None: None,
    }


@contextlib.contextmanager
def pretend_cuda_present():
    """Patch the torch.cuda queries Inductor's codegen makes; restore everything after."""
    import torch
    import torch.utils._triton as torch_triton

    props = _device_properties()
    cuda_fakes = {
        **device_answers(props),
        # Inductor saves and restores the RNG state around codegen.
        "get_rng_state": lambda device="cuda": torch.zeros(16, dtype=torch.uint8),
        "set_rng_state": lambda state, device="cuda": None,
    }
    interface_fakes = {
        "current_device": device_index,
        "set_device": lambda device: None,
        "device_count": lambda: 1,
        "get_device_properties": lambda device=None: props,
        "exchange_device": lambda device: device_index(),
        "maybe_exchange_device": lambda device: device_index(),
        "synchronize": lambda device=None: None,
        "is_bf16_supported": lambda *args, **kwargs: True,
        "get_raw_stream": lambda device: 0,
    }

    with Patches() as patches:
        for name, fake in cuda_fakes.items():
            patches.replace(points.CUDA_QUERIES[name], fake)
        for name, fake in interface_fakes.items():
            if points.CUDA_INTERFACE[name].holds():
                patches.replace(points.CUDA_INTERFACE[name], staticmethod(fake))
        patches.replace(points.CUDA_WORKER["current_device"], staticmethod(device_index))
        patches.replace(points.CUDA_WORKER["get_device_properties"], staticmethod(lambda d=None: props))
        # What a GPU decides by timing (pad_mm, max-autotune, fusion benchmarks) is replayed
        # from a recording or guessed by Inductor's own rules: engine/decision_hooks/, entered by
        # the recording (device_target.device_target) around the whole compile.
        # Generated modules would switch Triton to its real CUDA driver (needs libcuda).
        patches.replace(points.SET_DRIVER_TO_GPU, lambda: None)
        triton_driver.install(patches, points.TRITON_ACTIVE_DRIVER, ARCH)
        torch_triton.has_triton.cache_clear()
        patches.callback(torch_triton.has_triton.cache_clear)
        yield


def _as_cuda(value):
    """A cpu device (as a torch.device or a string) becomes cuda:0; anything else stays."""
    import torch

    if isinstance(value, torch.device) and value.type == "cpu":
        return virtual_device()
    if isinstance(value, str) and value == "cpu":
        return virtual_device()
    return value


def _graph_on_cuda(gm):
    """A copy of `gm` whose explicit device constants say cuda instead of cpu.

    The graph was captured on the CPU, so every device it names (a `device=`
    keyword such as `torch.arange(n, device=x.device)`, `.to(device)`, ...) is the
    capture device and becomes the virtual GPU.
    """
    import torch
    from torch.fx.node import map_aggregate

    def retarget(value):
        # devices as torch.device, and as the strings "cpu" / "cpu:0" (an autocast region's
        # device type, `.to("cpu")`, Dynamo's constant for `x.device.type`)
        if isinstance(value, str) and value in ("cpu", "cpu:0"):
            return "cuda"
        return _as_cuda(value) if isinstance(value, torch.device) else value

    cuda_gm = codegen_only.copy_graph_module(gm)
    _keep_dynamo_metadata(gm, cuda_gm)
    for node in cuda_gm.graph.nodes:
        if node.op not in ("call_function", "call_method"):
            continue
        node.args = map_aggregate(node.args, retarget)
        node.kwargs = map_aggregate(node.kwargs, retarget)
        if "device" in node.kwargs:  # devices given as strings ("cpu")
            node.kwargs = {**node.kwargs, "device": _as_cuda(node.kwargs["device"])}
    cuda_gm.recompile()
    return cuda_gm




def _captured_on_cuda(gm) -> bool:
    """Whether Dynamo captured `gm` on the virtual GPU (cuda_program): an input's fake value,
    or a device the graph names, is cuda. Such a graph is compiled as captured; a graph of
    CPU tensors (a CPU script, a factory) is copied onto cuda first (`_graph_on_cuda`)."""
    import torch

    for node in gm.graph.nodes:
        value = node.meta.get("example_value")
        if isinstance(value, torch.Tensor) and value.device.type == "cuda":
            return True
        device = node.kwargs.get("device") if node.op in ("call_function", "call_method") else None
        if device is not None and isinstance(device, (str, torch.device)) and torch.device(device).type == "cuda":
            return True
    return False


def _copied(gm):
    """A copy of Dynamo's graph with what Dynamo hands AOTAutograd beside it (the compile may
    change its graph; Dynamo's own runs eagerly)."""
    copy = codegen_only.copy_graph_module(gm)
    _keep_dynamo_metadata(gm, copy)
    return copy


def _keep_dynamo_metadata(gm, copy) -> None:
    """What Dynamo hands AOTAutograd beside the graph, which a deep copy drops: the
    parameters' sources and each placeholder's `_dynamo_source`. Without them AOTAutograd
    does not know which inputs are parameters (static inputs), and the partitioner saves
    other tensors for the backward than on a GPU."""
    copy.meta = dict(gm.meta)
    if hasattr(gm, "_param_name_to_source"):
        copy._param_name_to_source = gm._param_name_to_source
    for original, copied in zip(gm.graph.nodes, copy.graph.nodes):
        if hasattr(original, "_dynamo_source"):
            copied._dynamo_source = original._dynamo_source


def _fake_cuda_inputs(gm, example_inputs, fake_mode):
    """Leaf fake cuda tensors standing for the graph's inputs. Sizes come from Dynamo's own
    fake tensors (the placeholders' example values), so symbolic sizes stay the same symbols."""
    import torch

    placeholders = [node for node in gm.graph.nodes if node.op == "placeholder"]
    fakes = []
    for index, value in enumerate(example_inputs):
        traced = placeholders[index].meta.get("example_value") if index < len(placeholders) else None
        if not isinstance(value, torch.Tensor):
            # a size under dynamic shapes: Dynamo's symbol, as AOTAutograd would take it
            fakes.append(traced if isinstance(traced, torch.SymInt) and isinstance(value, int) else value)
            continue
        grapharg = placeholders[index].meta.get("grapharg") if index < len(placeholders) else None
        if grapharg is not None and getattr(grapharg, "is_tensor", True) is False:
            # a Python number Dynamo passes as a 0-dim CPU tensor (dynamic shapes): a CPU
            # tensor on a GPU too, and its `.item()` must stay Dynamo's symbol (memoized fake)
            fakes.append(fake_mode.from_tensor(value))
            continue
        like = traced if isinstance(traced, torch.Tensor) else fake_mode.from_tensor(value)
        fake = fake_cuda_like(like, fake_mode, fresh_symbols=True, subclasses=True)  # DTensor parameters too
        if value.requires_grad and not fake.requires_grad:
            fake.requires_grad_(True)
        fakes.append(fake)
    return fakes


def _rederive_example_values(gm, fake_inputs, fake_mode) -> None:
    """Put a cuda value on each node where Dynamo kept its CPU one (`example_value`, `val`),
    so Inductor's pre-grad passes read cuda too: the values `gm` computes from the fake
    cuda inputs, or, where the graph cannot be re-run on fake tensors (a data-dependent
    step under dynamic shapes), each value re-made on cuda with its sizes and strides."""
    import torch
    import torch.fx
    from torch._dispatch.python import enable_python_dispatcher
    from torch._subclasses.fake_tensor import FakeTensor

    values = {}

    class ValueCollector(torch.fx.Interpreter):
        def run_node(self, node):
            result = super().run_node(node)
            values[node] = result
            return result

    try:
        # as Dynamo propagates its fake values: with the Python dispatcher, so composite
        # ops (linear, matmul) take their symbolic-size Python kernels and add no guards
        # (C++ `sizes()` on a symbolic size specializes it: seen on GPT-2 --dynamic)
        with fake_mode, enable_python_dispatcher():
            ValueCollector(gm).run(*fake_inputs)
    except Exception:  # noqa: BLE001 - fall back to re-making each value on cuda
        values = {}
        for node in gm.graph.nodes:
            value = node.meta.get("example_value", node.meta.get("val"))
            if isinstance(value, FakeTensor) and value.fake_device.type == "cpu":
                values[node] = fake_cuda_like(value, fake_mode)
            elif isinstance(value, torch.Tensor):
                values[node] = value
    for node, value in values.items():
        for key in ("example_value", "val"):
            if key in node.meta:
                node.meta[key] = value


_cpu_graphs_for_the_cpu: list[bool] = []  # cpu_graphs_compiled_for_the_cpu, while inside


@contextlib.contextmanager
def cpu_graphs_compiled_for_the_cpu():
    """While inside (a program recorded with `--target auto`, which a GPU machine records on
    cuda), a graph a program on the virtual GPU captured on CPU tensors alone is compiled for
    the CPU, as on a GPU machine: Inductor's C++ kernels, compiled and run (engine/cpp_kernels.py
    records them). Outside, such a graph is copied onto cuda, as before."""
    _cpu_graphs_for_the_cpu.append(True)
    try:
        yield
    finally:
        _cpu_graphs_for_the_cpu.pop()


def _building_aot() -> bool:
    """Whether AOTInductor is building a package (`compile_fx_aot`, under `--aot`)."""
    from torch._inductor.virtualized import V

    return bool(V.aot_compilation)


def make_compile_fx(original_compile_fx):
    """torch.compile's Inductor backend for virtual-cuda.

    Dynamo captured the graph on the user's CPU tensors. The whole compile —
    AOTAutograd with Inductor's decompositions, the joint-graph passes, the
    partitioner, the forward and backward inner compiles — runs on a copy whose
    device constants and inputs are fake cuda tensors, while `torch.cuda` and
    Triton's driver report an H100. The backward is compiled at once (a GPU
    compiles it at the first backward call; the code is the same). The generated
    code is kept and never loaded; Dynamo gets its own graph back, so the program
    runs eagerly on the CPU (autograd included) and goes on — on meta tensors for a
    model built on the meta device (meta_models).
    """
    from torch._functorch import config as functorch_config
    from torch._guards import detect_fake_mode

    compiling = []

    def compile_fx(model_, example_inputs_, inner_compile=None, **kwargs):
        if compiling or _building_aot():  # compile_fx calls itself (config patches, ...): that call
            # is the GPU's; an AOTInductor build (`--aot`, virtual_cuda_aot.py) compiles the exported
            # program as exported, on the virtual GPU
            if inner_compile is not None:
                kwargs["inner_compile"] = inner_compile
            return original_compile_fx(model_, example_inputs_, **kwargs)
        if inner_compile is not None:
            kwargs["inner_compile"] = inner_compile
        fake_mode = detect_fake_mode(example_inputs_)
        in_program = program_mode.running()  # a program on the virtual GPU: fake cuda tensors all along
        as_captured = in_program and _captured_on_cuda(model_)
        if in_program and not as_captured and _cpu_graphs_for_the_cpu:  # a CPU graph, compiled as on a GPU machine
            with pretend_cuda_present():  # Inductor hashes the active Triton backend into its wrapper's metadata
                return original_compile_fx(model_, example_inputs_, **kwargs)
        compiling.append(True)
        try:
            with meta_models.compiling(), pretend_cuda_present(), \
                    contextlib.nullcontext() if in_program else fake_cuda.cuda_fake_tensors(), \
                    fake_distributed.collectives_as_on_a_gpu_build(), \
                    device_audit.compiling_with(fake_mode), \
                    real_compute.real_compute_on_cpu(fake_mode), \
                    functorch_config.patch(force_non_lazy_backward_lowering=True), \
                    codegen_only.wrappers_kept(points.LOAD_BY_KEY_PATH):
                if as_captured:
                    # captured as a GPU captures it: compiled as captured, from the real inputs
                    cuda_gm = lifted_constants.lifts_on_cuda(_copied(model_))
                    original_compile_fx(cuda_gm, example_inputs_, **kwargs)
                else:
                    cuda_gm = lifted_constants.lifts_on_cuda(_graph_on_cuda(model_))
                    fake_inputs = _fake_cuda_inputs(cuda_gm, example_inputs_, fake_mode)
                    _rederive_example_values(cuda_gm, fake_inputs, fake_mode)
                    original_compile_fx(cuda_gm, fake_inputs, **kwargs)
        finally:
            compiling.pop()
        forward = meta_models.runs_on_meta(eager_regions.runs_regions_inline(model_).forward)
        if as_captured:  # its results where the capture put them (program_results)
            return program_results.graph_results_where_captured(model_, forward)
        return forward

    return compile_fx

