"""What one recording is asked to do: `RecordOptions`, as the CLI, the Python API and the
engine worker fill it in (engine/recorder.py takes it)."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from kernelscope.decisions.model import DecisionSet


@dataclass
class RecordOptions:
    device: str = "auto"
    train: bool = False
    dynamic: bool = False
    execute: bool = False  # cpu-triton: run the kernels in Triton's interpreter
    workspace: Path = field(default_factory=Path.cwd)
    # A distributed job recorded in this one process on torch's fake process group
    # (devices/fake_distributed.py): its world size and this process's rank; `job` names
    # the job its ranks' runs share (engine/rank_info.py).
    world_size: int | None = None
    rank: int = 0
    job: str | None = None
    on_phase: Callable[[str, str], None] = lambda phase, detail: None
    # virtual-cuda: a GPU's recorded timing decisions to replay (kernelscope.decisions;
    # docs/decisions.md); those it does not hold are guessed, and the run says which.
    decisions: DecisionSet | None = None
    # Record fusion refusals and guard-failure values (engine/why_probes.py; docs/why.md).
    # Off only to measure what they cost (bench/why_cost.py).
    why: bool = True
    # --train --against-eager: also run the forward eagerly under saved-tensor hooks
    # (engine/eager_memory.py), to compare what eager saves for the backward per model line.
    against_eager: bool = False
    # --memory (engine/memory_measure.py): run the compiled step once more with every
    # allocation recorded (the CUDA allocator's history; the CPU allocator on cpu-triton
    # --execute) and join them to wrapper lines.
    measure_memory: bool = False
    # `kernelscope numerics` (engine/numerics/; docs/numerics.md): compare every kernel's
    # outputs with eager (cpu-triton runs the kernels in Triton's interpreter, cuda on the
    # GPU); rtol/atol None: per dtype. A recompile that tries a fix leaves model lines
    # ((resolved path, line)) to eager, or sets Inductor's emulate_precision_casts.
    numerics: bool = False
    rtol: float | None = None
    atol: float | None = None
    eager_lines: list[tuple[str, int]] = field(default_factory=list)
    emulate_precision_casts: bool = False
    # `--aot`: build with AOTInductor (torch.export + aoti_compile_and_package) instead of
    # calling torch.compile (engine/aot_build.py; docs/aot.md). `--cpp-wrapper`: Inductor's
    # C++ wrapper instead of its Python one (config.cpp_wrapper); `--aot` always has one.
    aot: bool = False
    cpp_wrapper: bool = False
