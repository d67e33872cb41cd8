"""Shared fixtures. Real recordings are expensive (seconds each): every example is
recorded once per test session and the RunRecord is shared by all tests."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

# Compiles stay in-process (the probes see them) and skip a worker pool's start-up.
os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")
# The model zoo builds transformers models from configs; nothing may be downloaded.
os.environ.setdefault("HF_HUB_OFFLINE", "1")

REPO = Path(__file__).resolve().parent.parent  # the checkout: test files import REPO, DATA, ... from here
DATA = REPO / "tests" / "data"  # models and files the tests share (also named by bench/ and scripts/)
EXAMPLES = REPO / "examples"
ZOO = REPO / "bench" / "models"


def example_line(example: str, needle: str) -> int:
    """The 1-based line of the first line of examples/<example>.py containing needle."""
    for number, line in enumerate((EXAMPLES / f"{example}.py").read_text().splitlines(), 1):
        if needle in line:
            return number
    raise AssertionError(f"{needle!r} not in examples/{example}.py")


class RecordingCache:
    def __init__(self):
        self._runs = {}

    def get(self, example: str, device: str = "virtual-cuda", train: bool = False, dynamic: bool = False):
        return self.get_spec(f"{EXAMPLES / example}.py:make", device, train, dynamic)

    def get_zoo(self, model: str, factory: str = "make", train: bool = False, dynamic: bool = False,
                device: str = "virtual-cuda"):
        """A model of bench/models/ (Hugging Face transformers or torch.nn), recorded once."""
        return self.get_spec(f"{ZOO / model}.py:{factory}", device, train, dynamic)

    def get_spec(self, spec: str, device: str = "virtual-cuda", train: bool = False, dynamic: bool = False,
                 world_size: int | None = None, decisions: str | None = None, max_autotune: bool = False):
        """`world_size`: record rank 0 of a job of that many ranks on torch's fake process group;
        `decisions`: a decisions file to replay (docs/decisions.md); `max_autotune`: as
        torch.compile(mode="max-autotune-no-cudagraphs") sets Inductor up."""
        key = (spec, device, train, dynamic, world_size, decisions, max_autotune)
        if key not in self._runs:
            import contextlib

            from kernelscope.decisions import load_file
            from kernelscope.engine.recorder import RecordOptions, record_factory

            options = RecordOptions(device=device, train=train, dynamic=dynamic, workspace=REPO,
                                    world_size=world_size, decisions=load_file(Path(decisions)) if decisions else None)
            patched = contextlib.nullcontext()
            if max_autotune:
                import torch._inductor.config as inductor_config

                patched = inductor_config.patch(max_autotune=True, coordinate_descent_tuning=True)
            with patched:
                self._runs[key] = record_factory(spec, options)
        return self._runs[key]

    def get_script(self, script: str, *args: str):
        """A script of examples/ run under `kernelscope run` (virtual-cuda), recorded once."""
        key = ("script", script, args)
        if key not in self._runs:
            from kernelscope.engine.recorder import RecordOptions, record_script

            self._runs[key] = record_script(EXAMPLES / f"{script}.py", list(args),
                                            RecordOptions(device="virtual-cuda", workspace=REPO))
        return self._runs[key]

    def get_distributed(self, factory: str, world_size: int, train: bool = False):
        """An example of examples/distributed/ (`llama_tp.py:make`) as rank 0 of `world_size`."""
        return self.get_spec(f"{EXAMPLES / 'distributed' / factory}", train=train, world_size=world_size)


@pytest.fixture(scope="session")
def recordings() -> RecordingCache:
    return RecordingCache()


@pytest.fixture(scope="session")
def user_triton_store(recordings, tmp_path_factory):
    """examples/user_triton_kernel.py (its own Triton kernels: autotuned, heuristics, a
    `triton_op`) recorded under virtual-cuda training one step (run 1) and for inference
    (`--eval`, run 2), in one store: (store root, {"train": 1, "inference": 2}). Read it,
    never write it."""
    from kernelscope.store import StoreBackend

    root = tmp_path_factory.mktemp("user-triton-kernels") / ".kernelscope"
    with StoreBackend(root) as store:
        runs = {"train": store.write_run(recordings.get_script("user_triton_kernel", "--steps", "1")),
                "inference": store.write_run(recordings.get_script("user_triton_kernel", "--eval"))}
    return root, runs


def gpt2_softmax_line() -> tuple[str, int]:
    """modeling_gpt2.py's softmax line (transformers' eager attention): a model nobody here wrote."""
    import transformers.models.gpt2.modeling_gpt2 as modeling

    path = Path(modeling.__file__)
    line = next(number for number, text in enumerate(path.read_text().splitlines(), 1)
                if "attn_weights = nn.functional.softmax(attn_weights, dim=-1)" in text)
    return str(path), line


@pytest.fixture(scope="session")
def gpt2_asm(recordings, tmp_path_factory):
    """A store holding GPT-2 (eager attention) as run 1, the Triton kernels of its softmax line
    compiled below Triton (PTX, SASS): (store root, softmax file, softmax line, kernel files).
    Read it, never write it (tests that build copy the recording into a store of their own)."""
    from kernelscope.engine.asm_build import build_run_asm
    from kernelscope.store import StoreBackend

    root = tmp_path_factory.mktemp("gpt2-asm") / ".kernelscope"
    path, line = gpt2_softmax_line()
    with StoreBackend(root) as store:
        run_id = store.write_run(recordings.get_zoo("gpt2", "make_eager_attention"))
        assert run_id == 1
        result = store.query(path, line, run_id=run_id)
        files = sorted({kernel.file for chain in result.graphs for kernel in chain.kernels if kernel.kind == "triton"})
        summary = build_run_asm(store, run_id, list(store.asm.kernel_ids_of_files(files).values()))
        assert summary.built == len(files) >= 1 and not summary.failed
    return root, path, line, files


@pytest.fixture(scope="session")
def gloo_ranks(tmp_path_factory):
    """A real 2-rank job: examples/distributed/llama_tp.py under torchrun on gloo (CPU), every
    rank recorded into `<dir>/.kernelscope/rank-<R>`; returns `<dir>/.kernelscope`. Merge
    the rank stores into a store of your own (StoreBackend.merge_from): they are shared."""
    import subprocess

    directory = tmp_path_factory.mktemp("gloo")
    env = dict(os.environ, PYTHONPATH=str(REPO), TORCHINDUCTOR_COMPILE_THREADS="1")
    store = directory / ".kernelscope"
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2"]
    job = subprocess.run([*torchrun, "-m", "kernelscope", "run", str(EXAMPLES / "distributed" / "llama_tp.py"),
                          "--store", str(store), "--", "--steps", "1"], cwd=directory, env=env,
                         capture_output=True, text=True, timeout=600)
    assert job.returncode == 0, job.stderr[-3000:]
    (directory / "stdout.txt").write_text(job.stdout)  # what the ranks printed (test_torchrun_gpu)
    return store


@pytest.fixture(scope="session")
def gpu_ddp_ranks(tmp_path_factory):
    """A real 2-rank job of a training script written for GPUs (tests/data/gpu_ddp_job.py: NCCL,
    set_device, DDP, torch.compile) under torchrun, each rank on its virtual GPU with NCCL served
    by gloo, recorded into `<dir>/.kernelscope/rank-<R>`; returns (store, what the ranks printed)."""
    import subprocess

    directory = tmp_path_factory.mktemp("gpu_ddp")
    env = dict(os.environ, PYTHONPATH=str(REPO), TORCHINDUCTOR_COMPILE_THREADS="1")
    store = directory / ".kernelscope"
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2"]
    job = subprocess.run([*torchrun, "-m", "kernelscope", "run", str(REPO / "tests" / "data" / "gpu_ddp_job.py"),
                          "--store", str(store)], cwd=directory, env=env, capture_output=True, text=True,
                         timeout=600)
    assert job.returncode == 0, job.stderr[-3000:]
    return store, job.stdout


@pytest.fixture
def run_cli():
    """Run `python -m kernelscope ARGS` in a subprocess; returns CompletedProcess."""
    import subprocess

    def run(args, cwd=REPO, env_extra=None, timeout=600):
        env = dict(os.environ, PYTHONPATH=str(REPO), **(env_extra or {}))
        return subprocess.run(
            [sys.executable, "-m", "kernelscope", *args],
            cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout,
        )

    return run


def assert_full_links(run):
    """Every kernel agrees with Inductor's mapping and every kernel line, wrapper line and
    post-grad node is linked (the floors of a run at 100%)."""
    from kernelscope.store.writing.coverage import compute_coverage

    coverage = compute_coverage(run)
    assert coverage["kernel_agreement"]["share"] == 1.0, coverage
    assert coverage["kernel_lines"]["share"] == 1.0, coverage
    assert coverage["wrapper_lines"]["share"] == 1.0, coverage
    for kind in ("forward_nodes_with_source", "backward_nodes_with_source"):
        if coverage[kind]["total"]:
            assert coverage[kind]["share"] == 1.0, (kind, coverage)
