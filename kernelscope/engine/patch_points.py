"""Every place inside torch and Triton that kernelscope replaces, declared once (patching.py).

Grouped by the feature that stops working where a point no longer holds. The code that
patches a point names it from here (`patch_points.GRAPH_CODEGEN`); `kernelscope doctor
--torch` checks them all (with the ports of ATen code, engine/ports.py, and the version
gates, engine/torch_compat.py).

Features and what happens when one of their points does not hold on a torch:
- "line provenance" (probes.py): its group is left out, the run is kernel-level and says so;
- "why" (why_probes.py): fusion refusals or guard-failure values are not recorded, said in the run;
- "distributed" (distributed_probes.py): its group is left out, a run with collectives says so;
- "timing decisions" (decision_hooks/): those decisions are neither recorded nor replayed, said in the run;
- "launch configs" (asm_launches.py, --target cuda): launch configs not recorded, said in the run;
- "upstream fixes" (torch_fixes.py): the fix is not applied, said in the run;
- "virtual-cuda optimizer fast path" (devices/program_optimizers.py): the point is left as it is,
  the optimizer's calls go through the program mode (slower, the same results);
- "recording", "virtual-cuda", "virtual-cuda program", "virtual-cuda AOT", "cpu-triton", "fake process
  group": they cannot work in part;
  checked when a recording starts (`require`, below), which stops with one message;
- "below the kernel" (asm_build.py): the kernel's build fails with the reason, stored with it;
- "numerics" (numerics/capture.py): `kernelscope numerics` stops with one message naming the point.
"""
from __future__ import annotations

from kernelscope.engine import program_patch_points as program_points  # "virtual-cuda program"'s points
from kernelscope.engine.patching import CustomPoint, PatchPoint, PatchPointChanged

# -- line provenance (probes.py) -----------------------------------------------------------

_LINES = "line provenance"
PRE_GRAD_PASSES = PatchPoint(_LINES, "torch._inductor.compile_fx", "run_pre_grad_passes",
                             "the graph Dynamo captured, before the pre-grad passes",
                             parameters=("model_", "example_inputs_"))
IR_POST_INIT = PatchPoint(_LINES, "torch._inductor.ir.IRNode", "__post_init__",
                          "tags each IR node's inner function with the FX node being lowered", parameters=("self",))
TRACER_CREATE_NODE = PatchPoint(_LINES, "torch._inductor.loop_body.LightTracer", "create_node",
                                "tags each loop-body node with that FX node", parameters=("self",))
SHIM_RUN_NODE = PatchPoint(_LINES, "torch._inductor.loop_body.InterpreterShim", "run_node",
                           "knows the FX node while a loop-body node generates code", parameters=("self", "n"))
WRITELINE = PatchPoint(_LINES, "torch._inductor.utils.IndentedBuffer", "writeline",
                       "each Triton kernel line -> the FX node that produced it", parameters=("self", "line"))
DEFINE_KERNEL = PatchPoint(_LINES, "torch._inductor.codegen.triton.TritonScheduling", "define_kernel",
                           "a finished kernel's lines and nodes, by its name",
                           parameters=("self", "src_code", "node_schedule", "kernel"))
SUBGRAPH_LOWERING_RUN_NODE = PatchPoint(
    _LINES, "torch._inductor.subgraph_lowering.PointwiseSubgraphLowering", "run_node",
    "knows the node of a FlexAttention score_mod/mask_mod subgraph while it is lowered, so the template "
    "lines that inline it link to that node", parameters=("self", "n"))
ENTER_CONTEXT = PatchPoint(_LINES, "torch._inductor.scheduler.Scheduler", "enter_context",
                           "each scheduler node opens a wrapper region with its post-grad origins",
                           parameters=("self", "node"))
GRAPH_CODEGEN = PatchPoint(_LINES, "torch._inductor.graph.GraphLowering", "codegen",
                           "the finished wrapper, its line map and its graph", parameters=("self",))
GRAPH_RUN = PatchPoint(_LINES, "torch._inductor.graph.GraphLowering", "run",
                       "times lowering (the run's `lower` phase)", parameters=("self",))
GRAPH_RUN_NODE = PatchPoint(_LINES, "torch._inductor.graph.GraphLowering", "run_node",
                            "the node Inductor was lowering when it failed", parameters=("self", "n"))

# -- line provenance of C++ kernels (cpp_kernels.py; Inductor's CPU backend, issue 36) ------

_CPP = "torch._inductor.codegen.cpp"
CPP_CODEGEN_NODES = PatchPoint(_LINES, f"{_CPP}.CppKernelProxy", "codegen_nodes",
                               "knows the loop nest (its nodes) a C++ kernel's lines are written for",
                               parameters=("self", "nodes"))
CPP_FINALIZE_KERNEL = PatchPoint(_LINES, f"{_CPP}.KernelGroup", "finalize_kernel",
                                 "where each loop nest's lines sit in the C++ kernel's loop code",
                                 parameters=("self", "new_kernel", "nodes"))
CPP_DEFINE_KERNEL = PatchPoint(_LINES, f"{_CPP}.CppScheduling", "define_kernel",
                               "a finished C++ kernel's lines and nodes, by its name",
                               parameters=("self", "src_code", "nodes"))

# a C++ template (max-autotune's GEMM on the CPU, cpp_gemm_template.py) writes its fused
# epilogue's loop nests through CppKernelProxy.codegen_loop_bodies into a KernelGroup of its own
CPP_CODEGEN_LOOP_BODIES = PatchPoint(_LINES, f"{_CPP}.CppKernelProxy", "codegen_loop_bodies",
                                     "knows the loop nest a C++ template's epilogue lines are written for",
                                     parameters=("self", "loop_bodies", "var_sizes_list"))
CPP_CODEGEN_TEMPLATE = PatchPoint(_LINES, f"{_CPP}.CppScheduling", "codegen_template",
                                  "collects the epilogue loop nests of one C++ template kernel",
                                  parameters=("self", "template_node", "epilogue_nodes"))

CPU_CPP_BACKEND = PatchPoint(_LINES, "torch._inductor.config", "cpu_backend",
                             "config: --target cpu holds Inductor's CPU backend at its default, C++")

# -- why: guards, recompiles and fusion refusals (why_probes.py) ----------------------------

_WHY = "why"
WHY_NO_FUSE_INIT = PatchPoint(_WHY, "torch._inductor.scheduler.WhyNoFuse", "__init__",
                              "keeps the two scheduler nodes a fusion refusal is about",
                              parameters=("self", "node1", "node2"))
WHY_NO_FUSE_CALL = PatchPoint(_WHY, "torch._inductor.scheduler.WhyNoFuse", "__call__",
                              "each fusion the scheduler refuses, with its reason", parameters=("self", "reason"))
REALIZE_ON_REUSE = PatchPoint(_WHY, "torch._inductor.ir.StorageBox", "mark_reuse",
                             "a value Inductor stores in a buffer because several ops use it",
                             parameters=("self", "users"))
REALIZE_HINT = PatchPoint(_WHY, "torch._inductor.ir.StorageBox", "realize_hint",
                          "a value Inductor stores in a buffer on a hint (too many reads, an extern user)",
                          parameters=("self",))
GUARD_FAIL_REASON = PatchPoint(_WHY, "torch._dynamo.guards", "get_guard_fail_reason_helper",
                               "the values a call had when a cached compile's guard failed",
                               parameters=("guard_manager", "f_locals"))

# -- distributed programs (distributed_probes.py) ------------------------------------------

_DISTRIBUTED = "distributed"
DDP_BUCKETS = PatchPoint(_DISTRIBUTED, "torch._dynamo.backends.distributed", "pretty_print_buckets",
                         "DDPOptimizer's buckets", parameters=("buckets", "bucket_bytes_cap"))
DDP_SUBMOD = PatchPoint(_DISTRIBUTED, "torch._dynamo.backends.distributed.SubmodCompiler", "run_node",
                        "which split part is being compiled", parameters=("self", "n"))
OBSERVED_GRAPH_PASS = PatchPoint(_DISTRIBUTED, "torch.fx.passes.graph_transform_observer.GraphTransformObserver",
                                 "apply_graph_pass", "collectives a post-grad pass moved",
                                 parameters=("self", "pass_fn"))
OBSERVED_GM_PASS = PatchPoint(_DISTRIBUTED, "torch.fx.passes.graph_transform_observer.GraphTransformObserver",
                              "apply_gm_pass", "collectives a post-grad pass moved", parameters=("self", "pass_fn"))
MICRO_PIPELINE_TP = PatchPoint(_DISTRIBUTED, "torch._inductor.fx_passes.post_grad", "micro_pipeline_tp_pass",
                               "async TP's fused ops carry the pass in their lineage", parameters=("graph",))
DISTRIBUTED_CODEGEN = PatchPoint(_DISTRIBUTED, "torch._inductor.graph.GraphLowering", "codegen",
                                 "each graph's split part, graph id, scheduler passes and the rank",
                                 parameters=("self",))

# -- the fake process group (devices/fake_distributed.py, --world-size) ---------------------

_FAKE_PG = "fake process group"
INIT_PROCESS_GROUP = PatchPoint(_FAKE_PG, "torch.distributed", "init_process_group",
                                "a script's own init_process_group gets the fake backend")
C10D_INIT_PROCESS_GROUP = PatchPoint(_FAKE_PG, "torch.distributed.distributed_c10d", "init_process_group",
                                     "the same, where the script imports it from distributed_c10d")
DDP_INIT = PatchPoint(_FAKE_PG, "torch.nn.parallel.DistributedDataParallel", "__init__",
                      "DDP modules get the no-op comm hook (no gradient all-reduce)", parameters=("self",))
DDP_REGISTER_COMM_HOOK = PatchPoint(_FAKE_PG, "torch.nn.parallel.DistributedDataParallel", "register_comm_hook",
                                    "a program's own comm hook is ignored", parameters=("self", "state", "hook"))

# -- the recording itself (recording.py) ----------------------------------------------------

_RECORDING = "recording"
CONFIG_FORCE_DISABLE_CACHES = PatchPoint(_RECORDING, "torch._inductor.config", "force_disable_caches",
                                         "config: every recorded graph is generated afresh")
CONFIG_COMPILE_THREADS = PatchPoint(_RECORDING, "torch._inductor.config", "compile_threads",
                                    "config: compiles stay in-process, where the probes see them")
CONFIG_PROVENANCE_TRACKING = PatchPoint(_RECORDING, "torch._inductor.config.trace", "provenance_tracking_level",
                                        "config: Inductor's own kernel -> node mapping")
AOT_COUNTER = PatchPoint(_RECORDING, "torch._functorch.aot_autograd", "AOT_COUNTER",
                         "AOT graph ids numbered from zero in each recording", optional=True)

# -- virtual-cuda (devices/) -----------------------------------------------------------------

_VIRTUAL = "virtual-cuda"
CUDA_QUERIES = {
    name: PatchPoint(_VIRTUAL, "torch.cuda", name, "torch.cuda answers as for an H100")
    for name in ("is_available", "device_count", "current_device", "set_device", "get_device_properties",
                 "get_device_capability", "get_device_name", "is_bf16_supported", "_exchange_device",
                 "_maybe_exchange_device", "synchronize", "get_rng_state", "set_rng_state")
}
CUDA_INTERFACE = {
    name: PatchPoint(_VIRTUAL, "torch._dynamo.device_interface.CudaInterface", name,
                     "Dynamo's device interface answers as for an H100", optional=True)
    for name in ("current_device", "set_device", "device_count", "get_device_properties", "exchange_device",
                 "maybe_exchange_device", "synchronize", "is_bf16_supported", "get_raw_stream")
}
CUDA_WORKER = {
    name: PatchPoint(_VIRTUAL, "torch._dynamo.device_interface.CudaInterface.Worker", name,
                     "compile workers' device queries answer as for an H100")
    for name in ("current_device", "get_device_properties")
}
SET_DRIVER_TO_GPU = PatchPoint(_VIRTUAL, "torch._inductor.runtime.triton_helpers", "set_driver_to_gpu",
                               "generated modules keep the virtual Triton driver")
TRITON_ACTIVE_DRIVER = PatchPoint(_VIRTUAL, "triton.runtime.driver", "_active",
                                  "Triton's active driver is an sm_90 one (triton_driver.py)")
VIRTUAL_COMPILE_FX = PatchPoint(_VIRTUAL, "torch._inductor.compile_fx", "compile_fx",
                                "torch.compile's backend compiles a cuda copy of the graph",
                                parameters=("model_", "example_inputs_"), keywords=("inner_compile",))
LOAD_BY_KEY_PATH = PatchPoint(_VIRTUAL, "torch._inductor.codecache.PyCodeCache", "load_by_key_path",
                              "generated wrappers are kept, never imported (codegen_only.py)",
                              parameters=("key", "path", "linemap", "attrs"))
NON_LAZY_BACKWARD = PatchPoint(_VIRTUAL, "torch._functorch.config", "force_non_lazy_backward_lowering",
                               "config: the backward is compiled right after its forward")
NCCL_AVAILABLE = PatchPoint(_VIRTUAL, "torch.distributed", "is_nccl_available",
                            "NCCL is available while compiling, as on a CUDA build", optional=True)
# fake_cuda.py: CPU-backed fake cuda tensors
MAKE_SUBCLASS = PatchPoint(_VIRTUAL, "torch.Tensor", "_make_subclass",
                           "a fake cuda tensor's C++ side has the CPU's dispatch keys")
DEVICE_META_HANDLER = PatchPoint(_VIRTUAL, "torch._subclasses.fake_tensor", "_DISPATCH_META_HANDLERS",
                                 "C++ device() of a fake cuda tensor answers cpu (or cuda below autograd)",
                                 item="torch.ops.prim.device.default")
FAKE_TORCH_DISPATCH = PatchPoint(_VIRTUAL, "torch._subclasses.fake_tensor.FakeTensor", "__torch_dispatch__",
                                 "the same query through the tensor's own dispatch", own=True)
FAKE_DEVICE = PatchPoint(_VIRTUAL, "torch._subclasses.fake_tensor.FakeTensor", "device",
                         "Python device reads, audited (device_audit.py)", own=True)
FAKE_IS_CUDA = PatchPoint(_VIRTUAL, "torch._subclasses.fake_tensor.FakeTensor", "is_cuda",
                          "is_cuda from the Python device, audited")
FAKE_GET_DEVICE = PatchPoint(_VIRTUAL, "torch._subclasses.fake_tensor.FakeTensor", "get_device",
                             "get_device() from the Python device, audited")
FUNCTIONAL_DEVICE = PatchPoint(_VIRTUAL, "torch._subclasses.functional_tensor.FunctionalTensor", "device",
                               "functionalized tensors answer Python device reads like their fakes")
FUNCTIONAL_IS_CUDA = PatchPoint(_VIRTUAL, "torch._subclasses.functional_tensor.FunctionalTensor", "is_cuda",
                                "the same for is_cuda")
FUNCTIONAL_GET_DEVICE = PatchPoint(_VIRTUAL, "torch._subclasses.functional_tensor.FunctionalTensor", "get_device",
                                   "the same for get_device()")
AVOID_DEVICE_INIT = PatchPoint(_VIRTUAL, "torch._subclasses.fake_tensor.FakeTensorMode", "avoid_device_init",
                               "FakeTensorMode is told the GPU is unavailable", own=True)
INIT_GPU_CONTEXT = PatchPoint(_VIRTUAL, "torch._subclasses.fake_tensor", "init_gpu_context",
                              "no GPU context is initialized for a fake cuda tensor", optional=True)
PROXY_CALL = PatchPoint(_VIRTUAL, "torch.fx.experimental.proxy_tensor", "proxy_call",
                        "below autograd, C++ reads cuda; lifted constants become cuda constants",
                        parameters=("proxy_mode", "func", "pre_dispatch", "args", "kwargs"))
FAKE_MODE_DISPATCH = PatchPoint(_VIRTUAL, "torch._subclasses.fake_tensor.FakeTensorMode", "dispatch",
                                "FakeTensorMode's own execution keeps cpu; device=cpu args of cuda ops made cuda",
                                parameters=("self", "func", "types", "args", "kwargs"))
OP_PYTHON_KERNELS = PatchPoint(_VIRTUAL, "torch.ops.aten.to.device", "py_kernels",
                               "Python kernels on aten ops (the Tensor.to port, the composites table)")
NEW_TENSOR = PatchPoint(_VIRTUAL, "torch.Tensor", "new_tensor",
                        "t.new_tensor(data) made on t's Python device (lifted_constants.py)")
META_CONVERTER_CALL = PatchPoint(_VIRTUAL, "torch._subclasses.meta_utils.MetaConverter", "__call__",
                                 "meta-device models: fakes of meta tensors say cpu while Dynamo captures",
                                 parameters=("self", "t"), keywords=("callback",))
# real_compute.py: what torch computes for real while compiling runs on the CPU
UNSET_FAKE_TEMPORARILY = PatchPoint(_VIRTUAL, "torch.fx.experimental.proxy_tensor", "unset_fake_temporarily",
                                    "make_fx's constant propagation runs on the CPU", own=True)
CONSTANT_FOLDER_RUN = PatchPoint(_VIRTUAL, "torch._inductor.constant_folding.ConstantFolder", "run",
                                 "Inductor's constant folding runs on the CPU", own=True)
UNIFORM_VALUE_FOLDER_INIT = PatchPoint(_VIRTUAL, "torch._inductor.fx_passes.joint_graph.UniformValueConstantFolder",
                                       "__init__", "the uniform-value folder's set-up runs on the CPU",
                                       own=True, optional=True)
CONSTANT_NAME = PatchPoint(_VIRTUAL, "torch._inductor.graph.GraphLowering", "constant_name",
                           "a constant moved to cuda is a fake cuda tensor", own=True,
                           parameters=("self", "name", "device_override"))
CUDA_LAZY_INIT = PatchPoint(_VIRTUAL, "torch.cuda", "_lazy_init",
                            "initializing the CUDA runtime while compiling raises kernelscope's error", own=True)


def _cuda_guard_problem():
    from kernelscope.engine.devices import cuda_guard

    return cuda_guard.registry_problem()


def _fake_mode_slot_problem() -> str | None:
    """Why the fake mode's dispatch slot cannot be taken on this torch (None: it can)."""
    import torch

    key = getattr(getattr(torch._C, "_TorchDispatchModeKey", None), "FAKE", None)
    if key is None:
        return "torch._C._TorchDispatchModeKey.FAKE is missing"
    missing = [name for name in ("_set_dispatch_mode", "_unset_dispatch_mode") if not hasattr(torch._C, name)]
    return f"torch._C.{', '.join(missing)} missing" if missing else None


CUDA_DEVICE_GUARD = CustomPoint(_VIRTUAL, "c10::impl::device_guard_impl_registry[CUDA] (ctypes)",
                                "CPU builds: the Meta device's no-op guard in CUDA's empty slot (cuda_guard.py)",
                                _cuda_guard_problem)
FAKE_MODE_SLOT = CustomPoint(_VIRTUAL, "torch._C._TorchDispatchModeKey.FAKE (dispatch-mode slot)",
                             "real computation runs on the CPU in the fake mode's slot (real_compute.py)",
                             _fake_mode_slot_problem)

# -- virtual-cuda AOT (devices/virtual_cuda_aot.py: `--aot --target virtual-cuda`)

_VIRTUAL_AOT = "virtual-cuda AOT"
AOT_AUTOTUNE_BLOCK = PatchPoint(_VIRTUAL_AOT, "torch._inductor.codegen.wrapper.PythonWrapperCodegen",
                                "generate_and_run_autotune_block",
                                "AOTInductor's kernel definitions run, its timing launches not (no GPU)",
                                parameters=("self",))
AOT_ASYNC_TRITON = PatchPoint(_VIRTUAL_AOT, "torch._inductor.async_compile.AsyncCompile", "triton",
                              "each Triton kernel compiled to a cubin for one config and saved, never launched",
                              parameters=("self", "kernel_name", "source_code"))
CPP_EXTENSION_CUDA_HOME = PatchPoint(_VIRTUAL_AOT, "torch.utils.cpp_extension", "CUDA_HOME",
                                     "setting: the CUDA toolkit AOTInductor's build flags name, on a CPU build")

# -- cpu-triton (devices/cpu_triton.py, codegen_only.py) ------------------------------------

_CPU_TRITON = "cpu-triton"
CPU_BACKEND_CONFIG = PatchPoint(_CPU_TRITON, "torch._inductor.config", "cpu_backend",
                                "config: Inductor's Triton backend on CPU tensors")
CPU_SET_DRIVER_TO_GPU = PatchPoint(_CPU_TRITON, "torch._inductor.runtime.triton_helpers", "set_driver_to_gpu",
                                   "generated modules keep the virtual Triton driver")
CPU_TRITON_ACTIVE_DRIVER = PatchPoint(_CPU_TRITON, "triton.runtime.driver", "_active",
                                      "Triton's active driver is the virtual one (triton_driver.py)")
CPU_LIBDEVICE = PatchPoint(_CPU_TRITON, "torch._inductor.runtime.triton_helpers", "libdevice",
                           "--execute: libdevice calls mapped for Triton's interpreter")
CPU_INTERPRETER_CAST = PatchPoint(_CPU_TRITON, "triton.runtime.interpreter.InterpreterBuilder", "cast_impl",
                                  "--execute: float32 -> bfloat16 rounds to nearest even, as the GPU and eager do",
                                  parameters=("self", "src", "dst_type"))
CPU_INTERPRETER_INDEX = PatchPoint(_CPU_TRITON, "triton.runtime.interpreter", "_patch_lang_tensor",
                                   "--execute: a one-element block used as a Python int (a looped reduction's "
                                   "range bound) converts as Triton 3.7 converts it (Triton 3.6 raises with NumPy 2.4)",
                                   parameters=("tensor", "scope"), optional=True)
CPU_COMPILE_FX = PatchPoint(_CPU_TRITON, "torch._inductor.compile_fx", "compile_fx",
                            "every compile uses the codegen-only inner compile",
                            parameters=("model_", "example_inputs_"), keywords=("inner_compile",))
CPU_LOAD_BY_KEY_PATH = PatchPoint(_CPU_TRITON, "torch._inductor.codecache.PyCodeCache", "load_by_key_path",
                                  "generated wrappers are kept, never imported (codegen_only.py)",
                                  parameters=("key", "path", "linemap", "attrs"))

# -- timing decisions (decision_hooks/) -----------------------------------------------------

_DECISIONS = "timing decisions"
_PAD_MM = "torch._inductor.fx_passes.pad_mm"
PAD_MM_BENCH_KEY = PatchPoint(_DECISIONS, _PAD_MM, "should_pad_bench_key", "pad_mm: what each verdict is keyed by",
                              parameters=("match", "mat1", "mat2", "op", "input", "is_base_time_key"))
PAD_MM_GET_CACHED = PatchPoint(_DECISIONS, _PAD_MM, "get_cached_should_pad",
                               "pad_mm: the verdict, recorded or replayed", parameters=("key",))
PAD_MM_SET_CACHED = PatchPoint(_DECISIONS, _PAD_MM, "set_cached_should_pad",
                               "pad_mm: the verdict a GPU reached", parameters=("key", "value"))
PAD_MM_COMPUTE_BOUND = PatchPoint(_DECISIONS, _PAD_MM, "is_mm_compute_bound",
                                  "pad_mm: whether a matmul is compute bound", parameters=("M", "K", "N", "dtype"))
PAD_MM_PADDED_FASTER = PatchPoint(_DECISIONS, _PAD_MM, "is_padded_faster", "pad_mm: the two times a GPU measured",
                                  parameters=("key", "ori_time", "pad_time"), optional=True)
PAD_MM_AUTOHEURISTIC = PatchPoint(_DECISIONS, _PAD_MM, "run_autoheuristic",
                                  "pad_mm: verdicts of the learned heuristic", optional=True)
AUTOTUNE_LOOKUP = PatchPoint(_DECISIONS, "torch._inductor.select_algorithm.AlgorithmSelectorCache", "lookup",
                             "max-autotune: each GEMM/convolution choice's time, recorded or replayed",
                             parameters=("self", "choices", "op", "inputs", "benchmark"))
AUTOTUNE_BENCHMARK = PatchPoint(_DECISIONS, "torch._inductor.select_algorithm.AlgorithmSelectorCache", "benchmark",
                                "max-autotune timing outside the cache lookup (replay: none)",
                                parameters=("self", "choices"), optional=True)
FUSION_BENCHMARK = PatchPoint(_DECISIONS, "torch._inductor.codegen.triton.TritonScheduling",
                              "benchmark_codegened_module", "fusion benchmarks: each kernel's time",
                              parameters=("self", "mod"))
SPEEDUP_BY_FUSION = PatchPoint(_DECISIONS, "torch._inductor.scheduler.Scheduler", "speedup_by_fusion",
                               "which nodes a fusion benchmark decides", parameters=("self", "node1", "node2"),
                               optional=True)

# -- launch configs (asm_launches.py, --target cuda) -----------------------------------------

_LAUNCHES = "launch configs"
AUTOTUNER_INIT = PatchPoint(_LAUNCHES, "torch._inductor.runtime.triton_heuristics.CachingAutotuner", "__init__",
                            "every kernel's autotuner, read after the run", parameters=("self",))
AUTOTUNER_BENCHMARK_ALL = PatchPoint(_LAUNCHES, "torch._inductor.runtime.triton_heuristics.CachingAutotuner",
                                     "benchmark_all_configs", "the times of the configs it compared",
                                     parameters=("self",), optional=True)

# -- below the kernel (asm_build.py) --------------------------------------------------------

_ASM = "below the kernel"
HEURISTICS = {
    name: PatchPoint(_ASM, "torch._inductor.runtime.triton_heuristics", name,
                     "each kernel's configs as Inductor picks them without timing", optional=True)
    for name in ("pointwise", "reduction", "persistent_reduction")
}
STATIC_LAUNCHER_CONFIG = PatchPoint(_ASM, "torch._inductor.config", "use_static_triton_launcher",
                                    "config: Triton's own launcher, whose compile result is read")
PTXAS_LOG_KNOB = PatchPoint(_ASM, "triton.knobs.nvidia", "dump_ptxas_log",
                            "ptxas -v (registers, spills) printed and read", optional=True)

# -- numerics (numerics/capture.py, numerics/fallback.py) ----------------------------------

_NUMERICS = "numerics"
NUMERICS_COMPILE_TO_MODULE = PatchPoint(_NUMERICS, "torch._inductor.graph.GraphLowering", "compile_to_module",
                                        "each compiled graph's `call`, to capture its inputs and launches",
                                        parameters=("self",))
NUMERICS_KERNEL_RUN = PatchPoint(_NUMERICS, "torch._inductor.runtime.triton_heuristics.CachingAutotuner", "run",
                                 "each Triton kernel launch, to copy the buffers it wrote",
                                 parameters=("self",))


def _node_fallback_problem() -> str | None:
    """Why Inductor would not lower a node kernelscope tags with its fallback handler (None: it would)."""
    import inspect

    from torch._inductor.graph import GraphLowering

    from kernelscope.engine import torch_compat

    source = inspect.getsource(GraphLowering.call_function)
    keys = ["should_fallback"]
    if torch_compat.holds("inductor: fallback_to_eager node tag"):
        keys.append("fallback_to_eager")
    missing = [key for key in keys if f'"{key}"' not in source]
    if missing:
        return f"GraphLowering.call_function no longer reads the node meta {', '.join(missing)}"
    return None


NUMERICS_NODE_FALLBACK = CustomPoint(_NUMERICS, "node.meta['should_fallback'] (read by GraphLowering.call_function)",
                                     "a line's post-grad nodes left to eager: Inductor lowers each with its "
                                     "fallback handler (numerics/fallback.py)", _node_fallback_problem)

# -- upstream fixes (torch_fixes.py) --------------------------------------------------------

IDENTITY_EVALF = PatchPoint("upstream fixes", "torch.utils._sympy.functions.Identity", "_eval_evalf",
                            "pytorch/pytorch#175975, added where torch lacks it", adds=True, optional=True)


def _declared():
    """Every point above and in program_patch_points.py, in the order written (dictionaries of
    points flattened)."""
    found = []
    for value in [*list(globals().values()), *vars(program_points).values()]:
        values = value.values() if isinstance(value, dict) else [value]
        found += [point for point in values if isinstance(point, (PatchPoint, CustomPoint))]
    return found


POINTS: list = _declared()


def problems_of(feature: str) -> list[str]:
    """Why each point of `feature` that applies to this torch does not hold (empty: all hold)."""
    return [problem for point in POINTS
            if point.feature == feature and point.applies() and (problem := point.check())]


def require(feature: str, consequence: str) -> None:
    """Raise PatchPointChanged, before anything is compiled, when a point of `feature` does
    not hold on this torch (a feature that cannot work in part, such as virtual-cuda)."""
    problems = problems_of(feature)
    if problems:
        import torch

        raise PatchPointChanged(
            f"{feature} is unavailable on torch {torch.__version__}: {'; '.join(problems)} ({consequence}; "
            "`kernelscope doctor --torch` lists every patch point)")

