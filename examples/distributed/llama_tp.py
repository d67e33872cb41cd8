"""A Llama transformer block with tensor and sequence parallelism (DTensor), compiled.

The block's plan is torchtitan's for Llama: the norms are SequenceParallel, the
attention and feed-forward inputs are gathered (PrepareModuleInput: Shard(1) -> Replicate),
wq/wk/wv and w1/w3 are ColwiseParallel, wo and w2 RowwiseParallel with a reduce-scatter
back to Shard(1). Its compiled graphs hold the all-gathers and reduce-scatters.

Record it without a GPU, as one rank of an 8-way job on torch's fake process group:
    kernelscope compile examples/distributed/llama_tp.py:make --world-size 8
    kernelscope compile examples/distributed/llama_tp.py:make_async_tp --world-size 8   # async TP
or run it for real (CPU/gloo here, NCCL on GPUs), every rank recorded:
    torchrun --nproc-per-node 2 -m kernelscope run examples/distributed/llama_tp.py -- --steps 2
    kernelscope merge
"""
import argparse
import os

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import Replicate, Shard
from torch.distributed.tensor.parallel import (
    ColwiseParallel,
    PrepareModuleInput,
    RowwiseParallel,
    SequenceParallel,
    parallelize_module,
)

DIM, HEADS, HIDDEN, SEQ, BATCH = 256, 16, 512, 64, 2


class Attention(nn.Module):
    def __init__(self, dim: int, heads: int):
        super().__init__()
        self.head_dim = dim // heads
        self.wq = nn.Linear(dim, dim, bias=False)
        self.wk = nn.Linear(dim, dim, bias=False)
        self.wv = nn.Linear(dim, dim, bias=False)
        self.wo = nn.Linear(dim, dim, bias=False)

    def forward(self, x):
        batch, seq, _ = x.shape
        q = self.wq(x).view(batch, seq, -1, self.head_dim).transpose(1, 2)  # local heads
        k = self.wk(x).view(batch, seq, -1, self.head_dim).transpose(1, 2)
        v = self.wv(x).view(batch, seq, -1, self.head_dim).transpose(1, 2)
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.wo(out.transpose(1, 2).reshape(batch, seq, -1))


class FeedForward(nn.Module):
    def __init__(self, dim: int, hidden: int):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)
        self.w3 = nn.Linear(dim, hidden, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class Block(nn.Module):
    def __init__(self, dim: int = DIM, heads: int = HEADS, hidden: int = HIDDEN):
        super().__init__()
        self.attention_norm = nn.RMSNorm(dim)
        self.attention = Attention(dim, heads)
        self.ffn_norm = nn.RMSNorm(dim)
        self.feed_forward = FeedForward(dim, hidden)

    def forward(self, x):
        h = x + self.attention(self.attention_norm(x))
        return h + self.feed_forward(self.ffn_norm(h))


TP_PLAN = {
    "attention_norm": SequenceParallel(),
    "attention": PrepareModuleInput(input_layouts=(Shard(1),), desired_input_layouts=(Replicate(),)),
    "attention.wq": ColwiseParallel(),
    "attention.wk": ColwiseParallel(),
    "attention.wv": ColwiseParallel(),
    "attention.wo": RowwiseParallel(output_layouts=Shard(1)),
    "ffn_norm": SequenceParallel(),
    "feed_forward": PrepareModuleInput(input_layouts=(Shard(1),), desired_input_layouts=(Replicate(),)),
    "feed_forward.w1": ColwiseParallel(),
    "feed_forward.w2": RowwiseParallel(output_layouts=Shard(1)),
    "feed_forward.w3": ColwiseParallel(),
}


def parallel_block(device: str) -> Block:
    """The block, tensor-parallel over every rank of the (already initialized) job."""
    mesh = init_device_mesh(device, (dist.get_world_size(),), mesh_dim_names=("tp",))
    torch.manual_seed(0)  # every rank starts from the same weights
    block = Block().to(device)
    return parallelize_module(block, mesh, TP_PLAN)


def local_batch(device: str, seed: int = 0) -> torch.Tensor:
    """This rank's shard of the batch along the sequence (SequenceParallel's Shard(1))."""
    generator = torch.Generator().manual_seed(seed)
    full = torch.randn(BATCH, SEQ, DIM, generator=generator)
    return full.chunk(dist.get_world_size(), dim=1)[dist.get_rank()].contiguous().to(device)


def make(device="cpu"):
    """kernelscope's factory: needs a process group (`--world-size N` gives a fake one)."""
    if not dist.is_initialized():
        raise RuntimeError("no process group: record with `--world-size N` (torch's fake process group), "
                           "or run the script under torchrun")
    return parallel_block(device), (local_batch(device),)


def enable_async_tp() -> None:
    """Async TP as torchtitan turns it on: symmetric memory for the TP group, and Inductor's
    micro-pipeline pass, which fuses each all-gather into the matmuls that use it."""
    import torch._inductor.config as inductor_config
    from torch.distributed._symmetric_memory import enable_symm_mem_for_group

    enable_symm_mem_for_group(dist.group.WORLD.group_name)
    inductor_config._micro_pipeline_tp = True


def make_async_tp(device="cpu"):
    """The block with async TP (fused all-gather matmuls): `... llama_tp.py:make_async_tp --world-size 8`."""
    model, inputs = make(device)
    enable_async_tp()
    return model, inputs


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--cpu", action="store_true",
                        help="run on the CPU (gloo) even where there is a GPU: what virtual-cuda records")
    parser.add_argument("--async-tp", action="store_true", help="fuse all-gathers into matmuls (needs NCCL)")
    parser.add_argument("--overlap", action="store_true",
                        help="Inductor's overlap scheduling of collectives (aten_distributed_optimizations)")
    args = parser.parse_args()
    use_cuda = torch.cuda.is_available() and not args.cpu
    dist.init_process_group("nccl" if use_cuda else "gloo")
    device = "cuda" if use_cuda else "cpu"
    if use_cuda:
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", 0)))
    block = parallel_block(device)
    if args.async_tp:
        enable_async_tp()
    if args.overlap:
        import torch._inductor.config as inductor_config

        inductor_config.aten_distributed_optimizations.enable_overlap_scheduling = True
    step = torch.compile(block)
    optimizer = torch.optim.SGD(block.parameters(), lr=0.01)
    for index in range(args.steps):
        out = step(local_batch(device, seed=index))
        loss = out.float().pow(2).mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    if dist.get_rank() == 0:
        print(f"rank 0 of {dist.get_world_size()}: loss {loss.item():.4f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
