"""The linter and the type checker, as part of the suite (so CI runs them): ruff over the
package, the benchmarks and the tests, mypy over the torch-free packages. Both read their
settings from pyproject.toml ([tool.ruff], [tool.mypy])."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO

BIN = Path(sys.executable).parent


def tool(name: str) -> str:
    found = BIN / name if (BIN / name).exists() else shutil.which(name)
    if found is None:
        pytest.fail(f"{name} is not installed: ./scripts/setup.sh installs it (requirements-dev.txt)")
    return str(found)


def test_ruff_finds_nothing():
    done = subprocess.run([tool("ruff"), "check", "kernelscope", "bench", "tests"], cwd=REPO,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr


def test_mypy_finds_nothing_in_the_torch_free_packages():
    done = subprocess.run([tool("mypy")], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Success" in done.stdout
