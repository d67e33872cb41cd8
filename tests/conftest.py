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

REPO = Path(__file__).resolve().parent.parent
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

    def get_zoo(self, model: str, factory: str = "make", train: bool = False, dynamic: bool = False):
        """A model of bench/models/ (Hugging Face transformers or torch.nn), recorded once."""
        return self.get_spec(f"{ZOO / model}.py:{factory}", "virtual-cuda", train, dynamic)

    def get_spec(self, spec: str, device: str = "virtual-cuda", train: bool = False, dynamic: bool = False):
        key = (spec, device, train, dynamic)
        if key not in self._runs:
            from kernelscope.engine.recorder import RecordOptions, record_factory

            options = RecordOptions(device=device, train=train, dynamic=dynamic, workspace=REPO)
            self._runs[key] = record_factory(spec, options)
        return self._runs[key]


@pytest.fixture(scope="session")
def recordings() -> RecordingCache:
    return RecordingCache()


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
    from kernelscope.store.coverage import compute_coverage

    coverage = compute_coverage(run)
    assert coverage["kernel_agreement"]["share"] == 1.0, coverage
    assert coverage["kernel_lines"]["share"] == 1.0, coverage
    assert coverage["wrapper_lines"]["share"] == 1.0, coverage
    for kind in ("forward_nodes_with_source", "backward_nodes_with_source"):
        if coverage[kind]["total"]:
            assert coverage[kind]["share"] == 1.0, (kind, coverage)
