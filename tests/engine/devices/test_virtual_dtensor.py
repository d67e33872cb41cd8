"""Distributed GPU programs on the virtual GPU: `kernelscope run SCRIPT --world-size N`.

A tensor-parallel program written for GPUs (a device mesh on "cuda", NCCL) runs its GPU
path under virtual-cuda on torch's fake process group: its DTensors answer cuda, their
local tensors are virtual GPU tensors, the in-flight collective a parallel layer hands the
program answers cuda, random initialization of sharded parameters works, it trains, and
its compiled graphs are captured on cuda. Each program is recorded once, in a subprocess
as a user runs it. Also: a GPU program that trains through RMSNorm (whose backward has only
a CUDA kernel in ATen) runs its eager backward on the CPU with the values of a CPU run.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap

import pytest
from program_runs import kernelscope

pytestmark = pytest.mark.slow

TP_PROGRAM = textwrap.dedent('''
    import torch, torch.distributed as dist
    from torch import nn
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import DTensor, Replicate, Shard
    from torch.distributed.tensor.parallel import (ColwiseParallel, RowwiseParallel, SequenceParallel,
                                                   parallelize_module)

    dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
    mesh = init_device_mesh("cuda", (dist.get_world_size(),))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm = nn.RMSNorm(32)
            self.up = nn.Linear(32, 64)
            self.down = nn.Linear(64, 32)

        def forward(self, x):
            return x + self.down(torch.relu(self.up(self.norm(x))))

    torch.manual_seed(0)
    embed = nn.Embedding(64, 32).to("cuda")
    block = Block().to("cuda")
    parallelize_module(embed, mesh, RowwiseParallel(input_layouts=Replicate(), output_layouts=Shard(1)))
    parallelize_module(block, mesh, {"norm": SequenceParallel(), "up": ColwiseParallel(input_layouts=Shard(1)),
                                     "down": RowwiseParallel(output_layouts=Shard(1))})
    with torch.no_grad():
        nn.init.normal_(block.up.weight, std=0.02)  # random init of a sharded parameter
    print("mesh", mesh.device_type)
    print("weight", block.up.weight.device, type(block.up.weight.to_local()).__name__)
    hidden = embed(torch.randint(0, 64, (2, 8), device="cuda"))
    print("hidden", hidden.device, hidden.is_cuda, hidden.get_device())
    compiled = torch.compile(block)
    out = compiled(hidden)
    out.float().pow(2).mean().backward()
    print("out", out.device, tuple(out.shape))
    grad = block.up.weight.grad
    print("grad", grad.device, type(grad).__name__, type(grad.to_local()).__name__)
''')


@pytest.fixture(scope="module")
def tp_program(tmp_path_factory):
    """TP_PROGRAM recorded as rank 1 of 2: (store, the program's stdout)."""
    folder = tmp_path_factory.mktemp("tp-program")
    (folder / "tp_block.py").write_text(TP_PROGRAM)
    done = kernelscope("run", "tp_block.py", "--world-size", "2", "--rank", "1", "--store", ".kernelscope",
                       cwd=folder)
    assert done.returncode == 0, done.stderr[-3000:]
    return folder / ".kernelscope", done.stdout


def test_a_tensor_parallel_program_runs_its_gpu_path(tp_program):
    _, printed = tp_program
    assert "mesh cuda" in printed  # torch.cuda.is_available(): the program took its GPU path
    assert "weight cuda:0 VirtualGpuTensor" in printed  # a sharded parameter: a DTensor on cuda, local on the GPU
    assert "hidden cuda:0 True 0" in printed  # the parallel embedding's in-flight reduce-scatter answers cuda
    assert "out cuda:0 (2, 4, 32)" in printed  # sequence-sharded: 8 / 2 ranks
    # it trained: the sharded weight's gradient is a DTensor on the virtual GPU (its values are
    # not meaningful: the fake process group communicates nothing)
    assert "grad cuda:0 DTensor VirtualGpuTensor" in printed


def test_its_graphs_are_captured_and_compiled_on_cuda(tp_program):
    from kernelscope.store import StoreBackend

    store, _ = tp_program
    with StoreBackend(store) as opened:
        run = opened.run(1).dump()["run"]
    assert sorted(graph["kind"] for graph in run["graphs"]) == ["backward", "forward"]
    for graph in run["graphs"]:
        post_grad = (store / "runs" / "1" / graph["post_grad_file"]["path"]).read_text()
        assert "cuda:0" in post_grad and not re.search(r'\]cpu"', post_grad), graph["kind"]
    forward = next(graph for graph in run["graphs"] if graph["kind"] == "forward")
    assert [(collective["op"], collective["role"]) for collective in forward["collectives"]] == [
        ("all_gather_into_tensor", "issue"), ("reduce_scatter_tensor", "issue"), ("wait_tensor", "wait"),
        ("wait_tensor", "wait")]
    assert {collective["group_size"] for collective in forward["collectives"]} == {2}


RMS_PROGRAM = textwrap.dedent('''
    import sys, torch
    from torch import nn
    device = sys.argv[1]
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 32), nn.RMSNorm(32)).to(device)
    out = torch.compile(model)(torch.randn(4, 32).to(device))
    (out * torch.linspace(-1, 1, 32).to(device)).pow(3).sum().backward()
    print("grads", repr(model[0].weight.grad.abs().sum().item()), repr(model[1].weight.grad.abs().sum().item()))
''')


def test_a_gpu_program_trains_through_rms_norm_with_the_cpu_values(tmp_path):
    (tmp_path / "rms.py").write_text(RMS_PROGRAM)
    done = kernelscope("run", "rms.py", "--store", ".kernelscope", "--", "cuda", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    plain = subprocess.run([sys.executable, "rms.py", "cpu"], cwd=tmp_path, capture_output=True, text=True,
                           timeout=600, env=dict(os.environ, TORCHINDUCTOR_COMPILE_THREADS="1"))
    assert plain.returncode == 0, plain.stderr[-2000:]
    on_virtual_gpu = [float(value) for value in re.search(r"grads (\S+) (\S+)", done.stdout).groups()]
    on_cpu = [float(value) for value in re.search(r"grads (\S+) (\S+)", plain.stdout).groups()]
    assert on_virtual_gpu == pytest.approx(on_cpu, rel=1e-4)
