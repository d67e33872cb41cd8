"""Timing decisions: the choices Inductor makes by timing on a GPU (pad_mm, max-autotune,
fusion benchmarks, each Triton kernel's launch config), recorded on `--target cuda` and
replayed by virtual-cuda (docs/decisions.md). This package is the part without torch:
the data, its files and keys, and where `--decisions` finds them."""
from kernelscope.decisions.model import DecisionsError, DecisionSet, from_run, load_file, write_file
from kernelscope.decisions.sources import resolve

__all__ = ["DecisionSet", "DecisionsError", "from_run", "load_file", "resolve", "write_file"]
