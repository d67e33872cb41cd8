"""Distributed programs on the virtual GPU: DTensor inputs, and torch's fake process group.

- DTensor (tensor parallelism) parameters reach the compile as tensor subclasses. Dynamo
  captured them on the CPU; virtual-cuda hands AOTAutograd the same subclass with its
  inner tensors made fake cuda tensors (`cuda_fakes.fake_cuda_like`), so AOTAutograd desugars it
  as on a GPU and the functional collectives DTensor traces work on fake cuda tensors.
- `collectives_as_on_a_gpu_build()`: while compiling, NCCL is available, as on a CUDA
  build (async TP fuses only then).
- `fake_process_group(world_size, rank)`: a job of any world size in one process, on
  torch's own fake backend (`torch.testing._internal.distributed.fake_pg`: no
  communication, every collective "succeeds" with its input). A script's own
  `init_process_group(...)` is given that backend instead of the one it names, so a
  `torchrun` script records unchanged. DDP's gradient all-reduce is not run (the fake
  backend's reductions return nothing DDP's reducer can read): every DDP module built
  inside gets torch's `noop_hook` (its gradients stay local; a comm hook the program
  registers itself is ignored). RANK, WORLD_SIZE, LOCAL_RANK and LOCAL_WORLD_SIZE are set
  as torchrun sets them, for programs that read them.
"""
from __future__ import annotations

import contextlib

from kernelscope.engine import patch_points as points
from kernelscope.engine.patching import Patches, replaced


@contextlib.contextmanager
def collectives_as_on_a_gpu_build():
    """While virtual-cuda compiles, torch.distributed says NCCL is available, as a CUDA build
    of torch does: async TP's pass (`micro_pipeline_tp`) fuses all-gathers into matmuls only
    where NCCL is, and would leave them unfused on a CPU build."""
    import torch.distributed as dist

    if not dist.is_available():
        yield
        return
    with replaced(points.NCCL_AVAILABLE, lambda: True):
        yield


@contextlib.contextmanager
def fake_process_group(world_size: int, rank: int = 0):
    """While inside, torch.distributed is an initialized fake process group of `world_size`
    ranks whose own rank is `rank` (see the module docstring); destroyed on the way out
    unless the program destroyed it itself."""
    import torch.distributed as dist
    from torch.testing._internal.distributed.fake_pg import FakeStore  # registers the "fake" backend

    if not dist.is_available():
        raise RuntimeError("this build of torch has no torch.distributed")
    if world_size < 1 or not 0 <= rank < world_size:
        raise ValueError(f"rank {rank} is not in a world of {world_size}")
    original_init = dist.init_process_group
    created = []

    def init_process_group(*args, **kwargs):
        # The program's own call: the fake backend, this rank and world size, whatever it named.
        if dist.is_initialized():
            return None
        kwargs = {key: value for key, value in kwargs.items()
                  if key in ("timeout", "group_name", "pg_options", "device_id")}
        kwargs.pop("device_id", None)  # binding a device would touch a GPU
        original_init("fake", store=FakeStore(), rank=rank, world_size=world_size, **kwargs)
        created.append(True)
        return None

    with contextlib.ExitStack() as stack:
        stack.enter_context(_torchrun_environment(world_size, rank))
        if not dist.is_initialized():
            init_process_group()
        patches = stack.enter_context(Patches())
        patches.replace(points.INIT_PROCESS_GROUP, init_process_group)
        patches.replace(points.C10D_INIT_PROCESS_GROUP, init_process_group)
        _ddp_without_reduction(patches)
        try:
            yield
        finally:
            if created and dist.is_initialized():
                dist.destroy_process_group()


@contextlib.contextmanager
def _torchrun_environment(world_size: int, rank: int):
    import os

    values = {"RANK": str(rank), "WORLD_SIZE": str(world_size), "LOCAL_RANK": str(rank),
              "LOCAL_WORLD_SIZE": str(world_size), "MASTER_ADDR": "localhost", "MASTER_PORT": "29500"}
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _ddp_without_reduction(patches: Patches) -> None:
    """Until `patches` is restored, every DDP module built gets torch's no-op comm hook."""
    from torch.distributed.algorithms.ddp_comm_hooks.debugging_hooks import noop_hook
    from torch.nn.parallel import DistributedDataParallel

    original_init = DistributedDataParallel.__init__
    original_register = DistributedDataParallel.register_comm_hook

    def __init__(self, *args, **kwargs):
        original_init(self, *args, **kwargs)
        original_register(self, None, noop_hook)

    def register_comm_hook(self, state, hook):
        return None  # the no-op hook is in place (a reducer takes one hook)

    patches.replace(points.DDP_INIT, __init__)
    patches.replace(points.DDP_REGISTER_COMM_HOOK, register_comm_hook)
