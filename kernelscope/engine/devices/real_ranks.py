"""A rank `torchrun` started on this machine, run as a GPU program: NCCL served by gloo.

Under `torchrun ... -m kernelscope run SCRIPT` (virtual-cuda, no `--world-size`) each rank
runs in the program context (cuda_program) like any GPU program, so the script takes its GPU
path: `torch.cuda.is_available()` is true, it asks for NCCL, calls
`torch.cuda.set_device(local_rank)`, moves its model to "cuda", wraps it in DDP or
parallelizes it on a cuda device mesh. What this module adds for a real job:

- NCCL is served by gloo: `init_process_group("nccl")`, the default backend (NCCL for cuda
  on a GPU: `init_process_group()`, `init_device_mesh("cuda", ...)`) and a per-device list
  naming NCCL (`"cpu:gloo,cuda:nccl"`) become `init_process_group("gloo", ...)`. A virtual
  GPU tensor is a CPU tensor to C++, so gloo's collectives (DDP's reducer, `dist.all_reduce`,
  DTensor's functional collectives) work on the values underneath: the job's real values
  travel between the ranks, at gloo's speed, not NCCL's. The run says so in its warnings
  (`note`), naming the call and the program's line. A `device_id=` (which binds a GPU to
  the group) is dropped. A script that asks for gloo itself gets it unchanged.
- the devices: `torch.cuda.device_count()` is the number of ranks torchrun started on this
  host (LOCAL_WORLD_SIZE: a GPU host with one GPU per rank), `set_device(local_rank)` is
  accepted and `current_device()` answers it; the rank's own virtual GPU is
  `cuda:<local_rank>` (virtual_gpu_tensor's `rank_device`), as the GPU a rank works on after
  `set_device(local_rank)`: its tensors answer that device (whatever device was set: the
  rank has one GPU's worth of data, on the CPU), Dynamo captures on fake tensors of that
  device and Inductor compiles for it, so rank 1's wrapper names `cuda:1` as a GPU rank's
  does (`kernelscope show` compares ranks with the GPU index left out).
- `torch._C._get_accelerator()`, which torch.distributed asks for the default device (FSDP2's
  default mesh when `fully_shard` is given none), answers cuda, as `torch.accelerator` does.
- NCCL's own API, which gloo cannot stand in for (`torch.cuda.nccl.*`), is refused in one
  line naming the call, the program's line and what to do (program_refusal).
- the default process group and that of every DDP module are kept until the process ends
  (`_kept_groups`).
  torch copies the thread's state, the program's torch-function mode included, into each
  gloo work item, so gloo's worker thread needs the GIL to free a finished one; a DDP module
  freed on the main thread (the script's `main()` returning) frees its reducer, whose process
  group joins that worker while the main thread holds the GIL: a deadlock whenever a work
  item was still being freed (seen in two of four runs of tests/data/gpu_ddp_job.py). Kept,
  the group is freed at the interpreter's exit, seconds after its last work.
"""
from __future__ import annotations

import os

from kernelscope.engine import program_patch_points as program_points
from kernelscope.engine.devices import program_refusal
from kernelscope.engine.patching import Patches


def local_rank() -> int:
    """This rank's index among the ranks torchrun started on this host (LOCAL_RANK; 0 without it)."""
    rank = os.environ.get("LOCAL_RANK", "")
    return int(rank) if rank.isdigit() else 0


def local_device_count() -> int:
    """How many virtual GPUs a rank sees: the ranks torchrun started on this host (at least one
    more than its own local rank)."""
    count = os.environ.get("LOCAL_WORLD_SIZE", "")
    return max(int(count) if count.isdigit() else 1, local_rank() + 1)


def install(patches: Patches) -> None:
    """NCCL served by gloo, and NCCL's own API refused, until `patches` is restored."""
    import torch

    if not torch.distributed.is_available():
        return
    for point in (program_points.PROGRAM_INIT_PROCESS_GROUP, program_points.PROGRAM_C10D_INIT_PROCESS_GROUP,
                  program_points.PROGRAM_MESH_INIT_PROCESS_GROUP):  # init_device_mesh("cuda", ...) starts the group
        if point.holds():
            patches.wrap(point, _nccl_served_by_gloo)
    for name, point in program_points.PROGRAM_NCCL_API.items():
        if point.holds():
            patches.replace(point, _nccl_api_refused(name))
    patches.wrap(program_points.PROGRAM_DDP_INIT, _process_group_kept)
    if program_points.PROGRAM_GET_ACCELERATOR.holds():  # torch.accelerator answers cuda already (cuda_runtime)
        patches.replace(program_points.PROGRAM_GET_ACCELERATOR, lambda: torch.device("cuda"))


_kept_groups: list = []  # every DDP module's process group, until the process ends (module docstring)


def _process_group_kept(ddp_init):
    def __init__(self, *args, **kwargs):
        ddp_init(self, *args, **kwargs)
        if not any(group is self.process_group for group in _kept_groups):
            _kept_groups.append(self.process_group)
    return __init__


def _asks_for_nccl(backend) -> bool:
    """Whether `backend` (as init_process_group takes it) would be NCCL for cuda tensors on a GPU:
    "nccl", a per-device list naming it, or none given (a CUDA build's default for cuda)."""
    return backend is None or "nccl" in str(backend).lower() or str(backend).lower() == "undefined"


def _nccl_served_by_gloo(init_process_group):
    import torch

    def served_by_gloo(*args, **kwargs):
        if "backend" in kwargs:
            backend = kwargs.pop("backend")
        else:
            backend, args = (args[0], args[1:]) if args else (None, args)
        if not _asks_for_nccl(backend):
            init_process_group(backend, *args, **kwargs)
            _kept_groups.append(torch.distributed.distributed_c10d._get_default_group())
            return None
        kwargs.pop("device_id", None)  # binding a device to the group would reach the CUDA runtime
        asked = "the default backend (NCCL for cuda tensors)" if backend is None else f"backend={backend!r}"
        from kernelscope.engine.devices import program_mode

        program_mode.note(
            f"{program_refusal.program_line()}: init_process_group({asked}) served by gloo: there is no NCCL "
            "without GPUs; this rank's collectives ran on gloo over the CPU values under its virtual GPU "
            "tensors (the job's real values, gloo's speed); the compiled graphs and their collectives are "
            "compiled for cuda as with NCCL")
        init_process_group("gloo", *args, **kwargs)
        _kept_groups.append(torch.distributed.distributed_c10d._get_default_group())
        return None
    return served_by_gloo


def _nccl_api_refused(name: str):
    def refused(*args, **kwargs):
        raise program_refusal.refuse(
            f"torch.cuda.nccl.{name}(...)",
            "it calls NCCL directly on GPU buffers, and gloo (which serves this job's process group) has no "
            "such API",
            "use torch.distributed's collectives on the process group (dist.all_reduce, ...), which gloo "
            "serves here, or " + program_refusal.ON_A_GPU)
    return refused
