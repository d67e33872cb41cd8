"""A model trained with DistributedDataParallel and torch.compile.

DDP's optimizer (`torch._dynamo.config.optimize_ddp`) splits the Dynamo graph at the
boundaries of DDP's gradient buckets, so each bucket's all-reduce can start while the
rest of the backward runs; every part is compiled on its own. kernelscope marks each
graph with its part and bucket.

    kernelscope compile examples/distributed/ddp_train.py:make --train --world-size 2
    torchrun --nproc-per-node 2 -m kernelscope run examples/distributed/ddp_train.py
    kernelscope merge
"""
import argparse
import os

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

WIDTH, DEPTH, BATCH = 512, 4, 8
BUCKET_CAP_MB = 1  # one 512x512 layer (1 MiB of fp32 weights) per bucket: four parts


class Stack(nn.Module):
    def __init__(self, width: int = WIDTH, depth: int = DEPTH):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(width, width) for _ in range(depth))

    def forward(self, x):
        for layer in self.layers:
            x = torch.relu(layer(x))
        return x


def ddp_model(device: str) -> DistributedDataParallel:
    torch.manual_seed(0)
    model = Stack().to(device)
    return DistributedDataParallel(model, bucket_cap_mb=BUCKET_CAP_MB,
                                   device_ids=[torch.cuda.current_device()] if device == "cuda" else None)


def make(device="cpu"):
    """kernelscope's factory: needs a process group (`--world-size N` gives a fake one)."""
    if not dist.is_initialized():
        raise RuntimeError("no process group: record with `--world-size N`, or run the script under torchrun")
    return ddp_model(device), (torch.randn(BATCH, WIDTH, device=device),)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--cpu", action="store_true",
                        help="run on the CPU (gloo) even where there is a GPU: what virtual-cuda records")
    args = parser.parse_args()
    use_cuda = torch.cuda.is_available() and not args.cpu
    dist.init_process_group("nccl" if use_cuda else "gloo")
    device = "cuda" if use_cuda else "cpu"
    if use_cuda:
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", 0)))
    model = ddp_model(device)
    step = torch.compile(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for index in range(args.steps):
        generator = torch.Generator().manual_seed(dist.get_rank() * 100 + index)
        loss = step(torch.randn(BATCH, WIDTH, generator=generator).to(device)).pow(2).mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    if dist.get_rank() == 0:
        print(f"rank 0 of {dist.get_world_size()}: loss {loss.item():.4f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
