"""Real ranks under torchrun run the program's GPU path on the virtual GPU (devices/real_ranks.py):
each rank sees its own virtual GPU, NCCL is served by gloo, the collectives carry the job's
real values, and the graphs are compiled for cuda. The jobs are recorded once per session
(`gpu_ddp_ranks`, `gloo_ranks` in conftest.py)."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import EXAMPLES, REPO

pytestmark = pytest.mark.slow


def kernelscope(*args, store: Path) -> str:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    done = subprocess.run([sys.executable, "-m", "kernelscope", *args, "--store", str(store)], cwd=store.parent,
                          env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_gpu_ddp_script_runs_its_gpu_path_on_every_rank_with_real_collectives(gpu_ddp_ranks):
    # each rank's line is one write, found whole wherever the other rank's output sits
    _, stdout = gpu_ddp_ranks
    losses, parameters = {}, {}
    for rank in (0, 1):
        assert f"rank {rank}: devices 2 current {rank} backend gloo" in stdout, stdout
        # each rank put rank + 1 on its GPU: the sum of both came back to both
        assert f"rank {rank}: all_reduce [3.0, 3.0, 3.0, 3.0] on cuda" in stdout, stdout
        losses[rank] = re.findall(rf"rank {rank} step \d: loss ([\d.]+) on cuda", stdout)
        assert len(losses[rank]) == 2, stdout
        parameters[rank] = re.findall(rf"rank {rank}: parameters (-?[\d.]+)", stdout)
    # each rank trained on its own batch (other losses), yet DDP's all-reduced gradients kept
    # the parameters the same on both: the gradients travelled between the ranks
    assert losses[0][0] != losses[1][0]
    assert len(parameters[0]) == 1 and parameters[0] == parameters[1]


def test_each_rank_records_cuda_graphs_for_its_own_gpu_and_the_ranks_compare_identical(gpu_ddp_ranks, tmp_path):
    job_store, _ = gpu_ddp_ranks
    store = tmp_path / ".kernelscope"
    for rank in (0, 1):
        shutil.copytree(job_store / f"rank-{rank}", store / f"rank-{rank}")
    assert "2 run(s) merged" in kernelscope("merge", store=store)
    shown = kernelscope("show", "2", store=store)
    assert "rank 1 of 2 (gloo)" in shown and "identical code on ranks 0, 1" in shown, shown
    assert re.search(r"gpu_ddp_job\.py:\d+: init_process_group\(backend='nccl'\) served by gloo", shown), shown
    assert "triton_" in shown  # kernels for the GPU, not the CPU's C++
    for run, index in ((1, 0), (2, 1)):  # rank R compiled for cuda:R, as a GPU rank after set_device(R)
        wrappers = "".join(path.read_text() for path in (store / "runs" / str(run) / "graphs").glob("*/wrapper.py"))
        assert f"index={index}," in wrappers and f"cuda:{index}" in wrappers
        assert f"index={1 - index}," not in wrappers


def test_a_tensor_parallel_block_gives_the_cpu_paths_loss_on_the_gpu_path(gloo_ranks, tmp_path):
    """The TP Llama block (DTensor, torch.compile) under torchrun: the GPU path (`gloo_ranks`:
    NCCL served by gloo, a cuda mesh on the virtual GPU) and the script's own CPU path (`--cpu`:
    gloo on CPU tensors, still run as before) print the same loss."""
    gpu_path = re.findall(r"rank 0 of 2: loss [\d.]+", (gloo_ranks.parent / "stdout.txt").read_text())
    env = dict(os.environ, PYTHONPATH=str(REPO), TORCHINDUCTOR_COMPILE_THREADS="1")
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2"]
    # --target virtual-cuda: the CPU graphs compiled for cuda (auto would build C++ kernels, slower)
    job = subprocess.run([*torchrun, "-m", "kernelscope", "run", str(EXAMPLES / "distributed" / "llama_tp.py"),
                          "--target", "virtual-cuda", "--store", str(tmp_path / ".kernelscope"), "--", "--steps", "1",
                          "--cpu"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert job.returncode == 0, job.stderr[-3000:]
    cpu_path = re.findall(r"rank 0 of 2: loss [\d.]+", job.stdout)
    assert len(gpu_path) == 1 and gpu_path == cpu_path, (gpu_path, cpu_path)
    assert "served by gloo" not in job.stdout  # it asked for gloo itself


def test_fsdp2_on_a_default_cuda_mesh_trains_as_ddp_did(gpu_ddp_ranks, tmp_path):
    """FSDP2 (`fully_shard`, its default mesh on cuda) under torchrun: the same training as
    the DDP job prints the same losses and parameters on every rank (all-gathers and
    reduce-scatters on gloo instead of DDP's all-reduce)."""
    _, ddp_stdout = gpu_ddp_ranks
    env = dict(os.environ, PYTHONPATH=str(REPO), TORCHINDUCTOR_COMPILE_THREADS="1")
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2"]
    job = subprocess.run([*torchrun, "-m", "kernelscope", "run", str(REPO / "tests" / "data" / "gpu_fsdp2_job.py"),
                          "--store", str(tmp_path / ".kernelscope")], cwd=tmp_path, env=env, capture_output=True,
                         text=True, timeout=600)
    assert job.returncode == 0, job.stderr[-3000:]
    for rank in (0, 1):
        pattern = rf"rank {rank}(?: step \d: loss [\d.]+ on cuda|: parameters -?[\d.]+)"
        assert re.findall(pattern, job.stdout) == re.findall(pattern, ddp_stdout) != [], job.stdout
    assert job.stdout.count("served by gloo") == 2  # init_device_mesh's default group, said on each rank
