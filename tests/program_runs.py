"""Shared by the tests that record a whole program as a user does: `kernelscope run` in a
subprocess (this checkout's kernelscope, compiles in-process), and what it stored."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from conftest import REPO


def kernelscope(*args: str, cwd: Path = REPO, timeout: int = 900) -> subprocess.CompletedProcess:
    """`python -m kernelscope ARGS` in `cwd`, as a user runs it."""
    env = dict(os.environ, PYTHONPATH=str(REPO), TORCHINDUCTOR_COMPILE_THREADS="1")
    return subprocess.run([sys.executable, "-m", "kernelscope", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)


def recorded_run(store: Path, number: int = 1) -> dict:
    """Run `number` of `store`, as its dump holds it."""
    from kernelscope.store import StoreBackend

    with StoreBackend(store) as opened:
        return opened.run(number).dump()["run"]


def recorded_text(store: Path, graph: dict, key: str, number: int = 1) -> str:
    """The text of a graph's stored file (`key`: "post_grad_file", "wrapper_file", ...)."""
    return (store / "runs" / str(number) / graph[key]["path"]).read_text()
