"""The patch points of "virtual-cuda program" (a whole program on the virtual GPU:
devices/cuda_program.py, cuda_runtime.py and the modules they install) and of its
"virtual-cuda optimizer fast path" (devices/program_optimizers.py), declared once.

Part of the register (patch_points.py, which lists these with its own in `POINTS` and says
what happens when a feature's point does not hold); kept in a module of its own because
the program's points are the register's largest group. The code that patches a point names
it from here (`program_points.PROGRAM_CUDA`).
"""
from __future__ import annotations

from kernelscope.engine.patching import CustomPoint, PatchPoint

# -- virtual-cuda program (devices/cuda_program.py, cuda_runtime.py: a whole program on the
# virtual GPU; also virtual-cuda's CUDA_QUERIES and CUDA_LAZY_INIT, answered for the program)

_PROGRAM = "virtual-cuda program"
PROGRAM_CUDA = {
    name: PatchPoint(_PROGRAM, "torch.cuda", name, "torch.cuda answers a program as one emulated GPU")
    for name in ("is_initialized", "init", "is_tf32_supported", "get_arch_list", "manual_seed", "manual_seed_all",
                 "seed", "seed_all", "initial_seed", "get_rng_state_all", "set_rng_state_all", "mem_get_info",
                 "memory_allocated", "max_memory_allocated", "memory_reserved", "max_memory_reserved",
                 "reset_peak_memory_stats", "reset_max_memory_allocated", "reset_accumulated_memory_stats",
                 "memory_stats", "memory_summary", "empty_cache", "ipc_collect", "set_per_process_memory_fraction",
                 "Stream", "Event", "StreamContext", "stream", "current_stream", "default_stream", "set_stream",
                 "is_current_stream_capturing")
}
PROGRAM_ACCELERATOR = {
    name: PatchPoint(_PROGRAM, "torch.accelerator", name, "torch.accelerator answers cuda, one device",
                     optional=True)
    for name in ("is_available", "current_accelerator", "device_count", "current_device_index",
                 "current_device_idx", "set_device_index", "set_device_idx", "synchronize", "current_stream",
                 "set_stream")
}
PROGRAM_NVTX = PatchPoint(_PROGRAM, "torch.cuda.nvtx", "_nvtx", "NVTX ranges and marks do nothing")
PROGRAM_REFUSED = {
    name: PatchPoint(_PROGRAM, "torch.cuda", name, "refused in one line: no CUDA graphs on the virtual GPU")
    for name in ("CUDAGraph", "graph", "make_graphed_callables", "graph_pool_handle")
}
SWAP_MODULE_PARAMS = PatchPoint(_PROGRAM, "torch.__future__", "_swap_module_params_on_conversion",
                                "setting: model.to('cuda') swaps each parameter for a virtual GPU tensor")
DTENSOR_NEW = PatchPoint(_PROGRAM, "torch.distributed.tensor._api.DTensor", "__new__",
                         "a DTensor on a cuda mesh holds its local tensor on the virtual GPU "
                         "(virtual_dtensor.py)", own=True, optional=True)
DTENSOR_DEVICE = PatchPoint(_PROGRAM, "torch.distributed.tensor._api.DTensor", "device",
                            "a DTensor on a cuda mesh answers cuda:0 in Python", optional=True)
ASYNC_COLLECTIVE_TENSOR_DEVICE = PatchPoint(_PROGRAM,
                                            "torch.distributed._functional_collectives.AsyncCollectiveTensor",
                                            "device", "an in-flight collective result on the virtual GPU answers "
                                            "cuda:0", optional=True)
DTENSOR_IS_CUDA = PatchPoint(_PROGRAM, "torch.distributed.tensor._api.DTensor", "is_cuda",
                             "the same for is_cuda", optional=True)
ASYNC_COLLECTIVE_TENSOR_IS_CUDA = PatchPoint(_PROGRAM,
                                             "torch.distributed._functional_collectives.AsyncCollectiveTensor",
                                             "is_cuda", "the same for is_cuda", optional=True)
ASYNC_COLLECTIVE_TENSOR_NEW = PatchPoint(_PROGRAM, "torch.distributed._functional_collectives.AsyncCollectiveTensor",
                                         "__new__", "its wrapper of a virtual GPU tensor stays a CPU tensor in C++",
                                         parameters=("cls", "elem"), own=True, optional=True)
FUNCOL_MAYBE_WRAP = PatchPoint(_PROGRAM, "torch.distributed._functional_collectives", "_maybe_wrap_tensor",
                               "a collective's result on the virtual GPU is wrapped in flight as a plain tensor is",
                               parameters=("self",), optional=True)
DTENSOR_LOCAL_RESULTS = PatchPoint(_PROGRAM, "torch.distributed.tensor._dispatch.OpDispatcher",
                                   "_dispatch_get_local_results_slow_path",
                                   "DTensor's Python dispatch makes what it puts on 'cuda' on the virtual GPU",
                                   parameters=("self", "op_call"), optional=True)
DTENSOR_RNG_MESH = PatchPoint(_PROGRAM, "torch.distributed.tensor._random", "is_rng_supported_mesh",
                              "DTensor's random ops draw from the virtual GPU's generator (no Philox offsets)",
                              parameters=("device_mesh",), optional=True)
DTENSOR_DISPATCH_RNG_MESH = PatchPoint(_PROGRAM, "torch.distributed.tensor._dispatch", "is_rng_supported_mesh",
                                       "the same, where DTensor's dispatch imported it", optional=True)
HAS_TRITON = PatchPoint(_PROGRAM, "torch.utils._triton", "has_triton",
                        "cached answer: asked again inside and after a program, whose virtual GPU "
                        "changes it (Dynamo treats Triton kernels as kernels only where it is True)")
TENSOR_GUARD_TEXT = PatchPoint(_PROGRAM, "torch._dynamo.guards", "get_tensor_guard_code_part",
                               "the text of a TENSOR_MATCH guard on a virtual GPU tensor reads as a GPU's "
                               "(Tensor or Parameter, CUDA dispatch keys); the check itself is unchanged",
                               parameters=("value", "name", "sizes", "strides", "pytype", "dispatch_keys"))
COMPILING_FLAG = PatchPoint(_PROGRAM, "torch.compiler", "_is_compiling_flag",
                            "read, not patched: the program mode steps aside under Dynamo (what "
                            "torch.compiler.is_compiling() answers, without its two Python calls per torch call)")
OPTIM_FOREACH_TYPES = PatchPoint(_PROGRAM, "torch.optim.optimizer", "_foreach_supported_types",
                                 "list: optimizers take the foreach path for virtual GPU tensors, as for cuda")
UTILS_FOREACH_TYPES = PatchPoint(_PROGRAM, "torch.utils._foreach_utils", "_foreach_supported_types",
                                 "list: clip_grad_norm_ and friends take the foreach path, as for cuda")
OPTIMIZER_INIT_GROUP = PatchPoint(_PROGRAM, "torch._dynamo.variables.optimizer.OptimizerVariable", "call_method",
                                  "an optimizer's _init_group, run for real by Dynamo, makes its state on the "
                                  "virtual GPU", parameters=("self", "tx", "name", "args", "kwargs"))
DYNAMO_MODE_STACK = PatchPoint(_PROGRAM, "torch._dynamo.variables.torch_function.SymbolicTorchFunctionState",
                              "__init__", "Dynamo traces the program's own torch-function modes, not kernelscope's",
                              parameters=("self", "py_stack"), own=True)
DYNAMO_SET_MODE_STACK = PatchPoint(_PROGRAM, "torch._dynamo.utils", "set_torch_function_mode_stack",
                                   "the mode stack a compiled frame sets back (it entered or left a mode, as "
                                   "create_block_mask does) keeps the program's mode", parameters=("stack",))
DYNAMO_SUBCLASS_TYPE = PatchPoint(_PROGRAM, "torch._dynamo.variables.builder", "infer_subclass_type",
                                 "Dynamo traces a virtual GPU tensor as a plain tensor (a fake cuda one)",
                                 parameters=("value",))
ENGINE_RUN_BACKWARD = PatchPoint(_PROGRAM, "torch.autograd", "_engine_run_backward",
                                 "the backward runs inside the program mode (what autograd runs in Python, "
                                 "such as checkpoint's recomputation, sees the program's tensors)",
                                 parameters=("t_outputs",))
CHECKPOINT_METADATA = PatchPoint(_PROGRAM, "torch.utils.checkpoint", "_allowed_determinism_checks_to_fns",
                                 "checkpoint's determinism check compares a tensor's C++ device (cpu for a "
                                 "virtual GPU tensor and its detached recomputation alike)",
                                 item="torch.utils.checkpoint._DEFAULT_DETERMINISM_MODE")
DYNAMO_SKIP_DIRS = PatchPoint(_PROGRAM, "torch._dynamo.trace_rules", "SKIP_DIRS",
                              "list: Dynamo never compiles kernelscope's program modules as frames of their own "
                              "(trace_rules.add and _recompile_re)")
DYNAMO_SKIP_DIRS_RE = PatchPoint(_PROGRAM, "torch._dynamo.trace_rules", "_recompile_re",
                                 "the skip list's pattern, made again after the list changed")
PROGRAM_INIT_PROCESS_GROUP = PatchPoint(_PROGRAM, "torch.distributed", "init_process_group",
                                        "NCCL in a single process is refused in one line; under torchrun, "
                                        "served by gloo",
                                        optional=True)
PROGRAM_C10D_INIT_PROCESS_GROUP = PatchPoint(_PROGRAM, "torch.distributed.distributed_c10d", "init_process_group",
                                             "the same, where the program imports it from distributed_c10d",
                                             optional=True)
PROGRAM_MESH_INIT_PROCESS_GROUP = PatchPoint(_PROGRAM, "torch.distributed.device_mesh", "init_process_group",
                                             "the same, where init_device_mesh calls it (imported by name)",
                                             optional=True)
PROGRAM_DDP_INIT = PatchPoint(_PROGRAM, "torch.nn.parallel.DistributedDataParallel", "__init__",
                              "under torchrun, a DDP module's process group is kept until the process ends",
                              parameters=("self",))
PROGRAM_GET_ACCELERATOR = PatchPoint(_PROGRAM, "torch._C", "_get_accelerator",
                                     "under torchrun, the accelerator is cuda (FSDP2's default mesh, DDP's barrier)",
                                     optional=True)
PROGRAM_NCCL_API = {  # torchrun's ranks (real_ranks): NCCL's own API has no gloo equivalent
    name: PatchPoint(_PROGRAM, "torch.cuda.nccl", name, "NCCL's own API is refused in one line", optional=True)
    for name in ("all_reduce", "reduce", "broadcast", "all_gather", "reduce_scatter", "unique_id", "init_rank",
                 "version")
}
CPP_EXTENSION_LOAD = PatchPoint(_PROGRAM, "torch.utils.cpp_extension", "load",
                                "a CUDA C++ extension is refused in one line", parameters=("name", "sources"),
                                keywords=("with_cuda",))
CPP_EXTENSION_LOAD_INLINE = PatchPoint(_PROGRAM, "torch.utils.cpp_extension", "load_inline",
                                       "the same for load_inline's cuda_sources",
                                       parameters=("name", "cpp_sources", "cuda_sources"), keywords=("with_cuda",))
OPS_LOAD_LIBRARY = PatchPoint(_PROGRAM, "torch._ops._Ops", "load_library",
                              "a library that needs CUDA's runtime is refused in one line",
                              parameters=("self", "path"))
PROGRAM_VMAP = PatchPoint(_PROGRAM, "torch._functorch.apis", "vmap_impl",
                         "torch.vmap's results for virtual GPU inputs are virtual GPU tensors (program_results.py: "
                         "create_block_mask's BlockMask)",
                         parameters=("func", "in_dims", "out_dims", "randomness", "chunk_size"))
# user_triton.py: the program's own Triton kernels run in Triton's interpreter
PROGRAM_TRITON_RUN = PatchPoint(_PROGRAM, "triton.runtime.jit.JITFunction", "run",
                                "a program's Triton kernel launch runs in Triton's interpreter",
                                parameters=("self",), keywords=("grid", "warmup"), own=True)
PROGRAM_TRITON_CALL = PatchPoint(_PROGRAM, "triton.runtime.jit.JITFunction", "__call__",
                                 "a @triton.jit helper called from an interpreted kernel runs interpreted",
                                 parameters=("self",), own=True)
PROGRAM_TRITON_AUTOTUNE = PatchPoint(_PROGRAM, "triton.runtime.autotuner.Autotuner", "run",
                                     "@triton.autotune launches its first config untimed (no timing in the "
                                     "interpreter)", parameters=("self",), own=True)


def _triton_interpreter_problem():
    import inspect

    from triton.runtime.interpreter import InterpretedFunction

    parameters = tuple(inspect.signature(InterpretedFunction.run).parameters)
    if not {"grid", "warmup"} <= set(parameters):
        return f"triton.runtime.interpreter.InterpretedFunction.run{parameters} takes no grid, warmup"
    return None


TRITON_INTERPRETER = CustomPoint(_PROGRAM, "triton.runtime.interpreter.InterpretedFunction (used, not patched)",
                                 "runs a program's Triton kernels on the CPU tensors (user_triton.py)",
                                 _triton_interpreter_problem)



def _autocast_cuda_problem() -> str | None:
    """Why CUDA's autocast lists cannot be given to the virtual GPU's tensors on this torch."""
    import torch

    key = getattr(torch._C.DispatchKey, "AutocastCUDA", None)
    if key is None:
        return "torch._C.DispatchKey.AutocastCUDA is missing"
    missing = [name for name in ("_dispatch_tls_set_dispatch_key_included", "_dispatch_tls_is_dispatch_key_included",
                                 "_ExcludeDispatchKeyGuard") if not hasattr(torch._C, name)]
    if missing:
        return f"torch._C.{', '.join(missing)} missing"
    if not torch._C._dispatch_has_kernel_for_dispatch_key("aten::mm", "AutocastCUDA"):
        return "aten::mm has no AutocastCUDA kernel (CUDA's autocast lists are no longer registered there)"
    return None


AUTOCAST_CUDA_KERNELS = CustomPoint(_PROGRAM, "AutocastCUDA kernels of aten ops (torch.library) + AutocastCUDA "
                                    "in the thread's included dispatch keys",
                                    "torch.autocast('cuda') applies CUDA's op lists to the virtual GPU's tensors "
                                    "(cuda_autocast.py)", _autocast_cuda_problem)

# -- virtual-cuda optimizer fast path (devices/program_optimizers.py: an optimizer's bookkeeping
# below the program mode; a point that does not hold leaves its calls to the mode, only slower)

_OPTIMIZER_FAST_PATH = "virtual-cuda optimizer fast path"
OPTIMIZER_ZERO_GRAD = PatchPoint(_OPTIMIZER_FAST_PATH, "torch.optim.optimizer.Optimizer", "zero_grad",
                                 "runs with torch functions off in a program (it reads gradients, sets None)",
                                 parameters=("self", "set_to_none"), own=True)
OPTIMIZER_INIT_GROUPS = {
    name: PatchPoint(_OPTIMIZER_FAST_PATH, f"torch.optim.{module}.{name}", "_init_group",
                     "runs with torch functions off in a program once every parameter has its state (it then "
                     "makes no tensor)", parameters=("self", "group"), own=True, optional=True)
    # AdamW inherits Adam's until Dynamo gives every optimizer class a disabled copy of its own
    # (program_optimizers.install makes that happen first)
    for module, name in (("adam", "Adam"), ("adamw", "AdamW"), ("sgd", "SGD"), ("rmsprop", "RMSprop"),
                         ("adagrad", "Adagrad"), ("adadelta", "Adadelta"), ("adamax", "Adamax"), ("nadam", "NAdam"),
                         ("radam", "RAdam"), ("asgd", "ASGD"), ("rprop", "Rprop"))
}
