"""A training script written for GPUs, as torchrun runs it: NCCL, `set_device(local_rank)`,
the model on "cuda", DDP, `torch.compile`, an all-reduce of a cuda tensor, two steps with the
loss printed. tests/engine/test_torchrun_gpu.py runs it under torchrun on two ranks (no GPU:
virtual-cuda, NCCL served by gloo) and checks what each rank printed."""
import os
import sys

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

WIDTH, BATCH, STEPS = 32, 8, 2


def say(text: str) -> None:
    """One write per line: both ranks print to torchrun's one unbuffered stdout."""
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.up = nn.Linear(WIDTH, 2 * WIDTH)
        self.down = nn.Linear(2 * WIDTH, WIDTH)

    def forward(self, x):
        return self.down(torch.relu(self.up(x)))


def main() -> None:
    local_rank = int(os.environ["LOCAL_RANK"])
    dist.init_process_group(dist.get_default_backend_for_device("cuda"))
    torch.cuda.set_device(local_rank)
    device = torch.device("cuda", local_rank)
    rank = dist.get_rank()
    say(f"rank {rank}: devices {torch.cuda.device_count()} current {torch.cuda.current_device()} "
          f"backend {dist.get_backend()}")

    ones = torch.full((4,), float(rank + 1), device=device)
    dist.all_reduce(ones)
    say(f"rank {rank}: all_reduce {ones.tolist()} on {ones.device.type}")

    torch.manual_seed(0)
    model = MLP().to(device)
    step = torch.compile(DistributedDataParallel(model, device_ids=[local_rank]))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for index in range(STEPS):
        generator = torch.Generator().manual_seed(100 * rank + index)  # each rank its own batch
        loss = step(torch.randn(BATCH, WIDTH, generator=generator).to(device)).pow(2).mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        say(f"rank {rank} step {index}: loss {loss.item():.6f} on {loss.device.type}")
    total = sum(parameter.detach().double().sum() for parameter in model.parameters())
    say(f"rank {rank}: parameters {total.item():.12f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
