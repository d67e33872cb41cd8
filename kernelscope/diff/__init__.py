"""`kernelscope diff`: compare two recordings (dump files or runs of a store).

Data flows one way: `model` loads each side into plain views, `align` pairs
their source lines, `match` pairs their kernels, `compare` builds the
`RunDiff`, `gates` decides the exit code, and `report` renders text, JSON or
Markdown. Never imports torch.
"""
from __future__ import annotations

from kernelscope.diff.compare import RunDiff, compare_runs
from kernelscope.diff.gates import GATES, GateResult, evaluate_gates, parse_gates
from kernelscope.diff.model import DiffSide, diff_side, load_side

__all__ = ["GATES", "DiffSide", "GateResult", "RunDiff", "compare_runs", "diff_side", "evaluate_gates", "load_side",
           "parse_gates"]
