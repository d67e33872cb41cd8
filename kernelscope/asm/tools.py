"""The NVIDIA tools the Triton wheel ships (`triton/backends/nvidia/bin/`): `nvdisasm`
turns a cubin into SASS with line information, `cuobjdump -res-usage` reports its
registers, stack, local and shared memory. Found without importing triton; a
TRITON_NVDISASM_PATH / TRITON_CUOBJDUMP_PATH set for Triton is honoured as Triton does."""
from __future__ import annotations

import functools
import importlib.util
import os
import subprocess
import tempfile
from pathlib import Path

from kernelscope.errors import UserError


class ToolError(UserError):
    """An NVIDIA tool is missing or failed on a kernel."""


def tool_path(name: str) -> Path:
    """The path of `nvdisasm`, `cuobjdump` or `ptxas`."""
    override = os.environ.get(f"TRITON_{name.upper()}_PATH")
    if override:
        return Path(override)
    spec = importlib.util.find_spec("triton")
    if spec is None or not spec.submodule_search_locations:
        raise ToolError(f"{name} comes with the triton package, which this Python does not have: "
                        "pip install triton (the version torch pins)")
    path = Path(list(spec.submodule_search_locations)[0]) / "backends" / "nvidia" / "bin" / name
    if not path.exists():
        raise ToolError(f"the triton package has no {path}: install a Triton wheel with the NVIDIA "
                        f"backend, or point TRITON_{name.upper()}_PATH at a CUDA toolkit's {name}")
    return path


def _run(name: str, arguments: list[str], cubin: bytes) -> str:
    with tempfile.TemporaryDirectory(prefix="kernelscope-asm-") as directory:
        path = Path(directory) / "kernel.cubin"
        path.write_bytes(cubin)
        try:
            done = subprocess.run([str(tool_path(name)), *arguments, str(path)], capture_output=True, text=True,
                                  timeout=300)
        except OSError as error:
            raise ToolError(f"cannot run {tool_path(name)}: {error.strerror}") from error
    if done.returncode != 0:
        raise ToolError(f"{name} failed (exit {done.returncode}): {done.stderr.strip()[:300]}")
    return done.stdout


def disassemble(cubin: bytes) -> str:
    """SASS with `//## File "...", line N` markers (`nvdisasm -gi -c`)."""
    return _run("nvdisasm", ["-gi", "-c"], cubin)


def resource_usage_text(cubin: bytes) -> str:
    return _run("cuobjdump", ["-res-usage"], cubin)


def version(name: str) -> str:
    """`release 13.1, V13.1.80` for a tool (its `--version` line): of the binary its
    TRITON_*_PATH names now (Inductor may point Triton at another ptxas while a process runs)."""
    try:
        return _version_of(str(tool_path(name)))
    except UserError:
        return "unknown"


@functools.cache
def _version_of(path: str) -> str:
    try:
        done = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=60)
    except OSError:
        return "unknown"
    lines = [line for line in done.stdout.splitlines() if "release" in line]
    return lines[0].split("tools, ", 1)[-1].strip() if lines else "unknown"
