"""tests/data/gpu_ddp_job.py's training with FSDP2 instead of DDP: `set_device(local_rank)`, a
cuda device mesh, `fully_shard` with its default mesh (torch asks `torch._C._get_accelerator()`),
`torch.compile`, two steps. Same model, seeds and batches as the DDP job, so every rank prints
the DDP job's losses and final parameters (tests/engine/test_torchrun_gpu.py)."""
import os
import sys

import torch
import torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpu_ddp_job import BATCH, MLP, STEPS, WIDTH, say  # noqa: E402


def main() -> None:
    torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    init_device_mesh("cuda", (int(os.environ["WORLD_SIZE"]),))  # starts the group: NCCL on GPUs
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = MLP().to("cuda")
    fully_shard(model.up)
    fully_shard(model)
    step = torch.compile(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for index in range(STEPS):
        generator = torch.Generator().manual_seed(100 * rank + index)
        loss = step(torch.randn(BATCH, WIDTH, generator=generator).to("cuda")).pow(2).mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        say(f"rank {rank} step {index}: loss {loss.item():.6f} on {loss.device.type}")
    total = sum(parameter.full_tensor().double().sum() for parameter in model.parameters())
    say(f"rank {rank}: parameters {total.item():.12f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
