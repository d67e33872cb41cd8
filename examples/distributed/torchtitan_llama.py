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

torchtitan 0.3 needs torch 2.12 or newer; with an older torch (2.11) use torchtitan 0.2,
whose debug Llama attends with SDPA and whose TP plan is `apply_tp` (what its
`parallelize_llama` applies for tensor parallelism alone): `build_v02` below.
"""
import argparse
import os

import torch
import torch.distributed as dist
import torchtitan.distributed.parallel_dims as parallel_dims_module
import torchtitan.models.llama3 as llama3
from torchtitan.distributed import ParallelDims

BATCH, SEQ = 2, 64
TORCHTITAN_02 = not hasattr(llama3, "model_registry")  # torchtitan 0.2.x


def build(device: str, backend: str):
    """torchtitan's debug Llama, tensor-parallel over every rank, its blocks compiled."""
    from torchtitan.config import CompileConfig
    from torchtitan.distributed.compile import apply_compile
    from torchtitan.models.llama3 import model_registry
    from torchtitan.models.llama3.sharding import set_llama3_sharding_config

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


def build_v02(device: str):
    """torchtitan 0.2's debug Llama with its tensor (and sequence) parallel plan and its
    per-block compile, as its `parallelize_llama` applies them when only TP is on."""
    from torchtitan.config.job_config import Compile
    from torchtitan.models.llama3.infra.parallelize import apply_compile, apply_tp

    tp = dist.get_world_size()
    if device == "cpu":
        parallel_dims_module.device_type = "cpu"
    parallel_dims = ParallelDims(dp_replicate=1, dp_shard=1, cp=1, tp=tp, pp=1, ep=1, etp=1, world_size=tp)
    parallel_dims.build_mesh()
    torch.manual_seed(0)
    with torch.device("meta"):
        model = llama3.Transformer(llama3.llama3_args["debugmodel"])
    apply_tp(model, parallel_dims.get_mesh("tp"), loss_parallel=True, enable_float8_tensorwise_tp=False)
    apply_compile(model, Compile(enable=True, components=["model"]))
    model.to_empty(device=device)
    with torch.no_grad():
        model.init_weights(buffer_device=torch.device(device))
    return model


def step(model, device: str, train: bool, seed: int = 0):
    generator = torch.Generator().manual_seed(seed)
    vocab_size = model.model_args.vocab_size if TORCHTITAN_02 else model.config.vocab_size
    tokens = torch.randint(0, vocab_size, (BATCH, SEQ), generator=generator).to(device)
    if TORCHTITAN_02:
        call = lambda: model(tokens)  # noqa: E731 (SDPA, causal: no mask to build)
    else:
        positions = torch.arange(SEQ, device=device).repeat(BATCH, 1)
        masks = model.get_attention_masks(positions=positions)
        call = lambda: model(tokens, positions, masks)  # noqa: E731
    if not train:
        with torch.no_grad():
            return call()
    out = call()
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
    model = build_v02(device) if TORCHTITAN_02 else build(device, args.spmd_backend)
    for index in range(args.steps):
        out = step(model, device, args.train and use_cuda, seed=index)
    if dist.get_rank() == 0:
        print(f"rank 0 of {dist.get_world_size()}: logits {tuple(out.shape)}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
