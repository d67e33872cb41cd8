"""torchtitan's debug Llama 3 model with tensor parallelism and torch.compile, as torchtitan
builds it: its model registry (`debugmodel`), its Llama sharding config (tensor and
sequence parallel), its ParallelDims mesh, `model.parallelize` and `apply_compile` (one
compiled graph per transformer block). What torchtitan's trainer adds around this (data
loading, checkpoints, metrics) needs packages not installed here; the model and its
parallelism are torchtitan's own code.

Record every rank of a real job (CPU/gloo here, NCCL on GPUs):
    torchrun --nproc-per-node 2 -m kernelscope run examples/distributed/torchtitan_llama.py
    kernelscope merge
or one rank of a larger job, no GPU, on torch's fake process group:
    kernelscope run examples/distributed/torchtitan_llama.py --world-size 8

On a CPU the step runs forward only: FlexAttention (torchtitan's attention for Llama)
has no backward on the CPU. On GPUs it trains (`--train`).
"""
import argparse
import os

import torch
import torch.distributed as dist
import torchtitan.distributed.parallel_dims as parallel_dims_module
from torchtitan.config import CompileConfig
from torchtitan.distributed import ParallelDims
from torchtitan.distributed.compile import apply_compile
from torchtitan.models.llama3 import model_registry
from torchtitan.models.llama3.sharding import set_llama3_sharding_config

BATCH, SEQ = 2, 64


def build(device: str, backend: str):
    """torchtitan's debug Llama, tensor-parallel over every rank, its blocks compiled."""
    tp = dist.get_world_size()
    if device == "cpu":
        parallel_dims_module.device_type = "cpu"  # torchtitan assumes a GPU when it finds no accelerator
    spec = model_registry("debugmodel")
    config = spec.model
    set_llama3_sharding_config(config, enable_sp=True)  # what torchtitan's trainer sets for TP
    parallel_dims = ParallelDims(dp_replicate=1, dp_shard=1, cp=1, tp=tp, pp=1, ep=1, world_size=tp,
                                 spmd_backend=backend)
    parallel_dims.build_mesh()
    torch.manual_seed(0)
    with torch.device("meta"):
        model = config.build()
    model.parallelize(parallel_dims)
    apply_compile(model, compile_config=CompileConfig(enable=True, components=["model"]),
                  parallel_dims=parallel_dims)
    model.to_empty(device=device)
    with torch.no_grad():
        model.init_weights(buffer_device=torch.device(device))
    return model


def step(model, device: str, train: bool, seed: int = 0):
    generator = torch.Generator().manual_seed(seed)
    tokens = torch.randint(0, model.config.vocab_size, (BATCH, SEQ), generator=generator).to(device)
    positions = torch.arange(SEQ, device=device).repeat(BATCH, 1)
    masks = model.get_attention_masks(positions=positions)
    if not train:
        with torch.no_grad():
            return model(tokens, positions, masks)
    out = model(tokens, positions, masks)
    loss = out.float().pow(2).mean()
    loss.backward()
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=1)
    parser.add_argument("--cpu", action="store_true", help="run on the CPU (gloo) even where there is a GPU")
    parser.add_argument("--train", action="store_true", help="forward and backward (GPUs only: see above)")
    parser.add_argument("--spmd-backend", default="partial_dtensor",
                        choices=["partial_dtensor", "full_dtensor", "spmd_types"])
    args = parser.parse_args()
    use_cuda = torch.cuda.is_available() and not args.cpu
    if not dist.is_initialized():
        dist.init_process_group("nccl" if use_cuda else "gloo")
    device = "cuda" if use_cuda else "cpu"
    if use_cuda:
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", 0)))
    model = build(device, args.spmd_backend)
    for index in range(args.steps):
        out = step(model, device, args.train and use_cuda, seed=index)
    if dist.get_rank() == 0:
        print(f"rank 0 of {dist.get_world_size()}: logits {tuple(out.shape)}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
