"""Which torch versions kernelscope's code treats differently: every version gate, in one table.

A gate is a name, what it switches and the torch versions where it holds. Code that
behaves differently by torch version asks `holds(name)` (or `holds(name, version)`,
for a check run as another torch would, e.g. the SDPA rule's tests); nothing else in
the engine compares `torch.__version__`. `kernelscope doctor --torch` lists the gates
with their state on the installed torch (engine/torch_doctor.py).

Ranges are written `>=2.13`, `<2.14`, or both with a comma (`>=2.11,<2.14`); versions
compare by (major, minor).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

# The oldest torch the engine accepts (pyproject's `engine` extra says the same).
MIN_TORCH = (2, 11)


@dataclass(frozen=True)
class Gate:
    feature: str
    versions: str  # where it holds
    what: str  # what holds there


GATES: dict[str, Gate] = {
    "supported torch": Gate(
        "recording", f">={MIN_TORCH[0]}.{MIN_TORCH[1]}",
        "the engine records on this torch (older ones are refused with what to do)"),
    "sdpa: memory-efficient storage-offset alignment": Gate(
        "virtual-cuda", ">=2.13",
        "select_sdp_backend checks q, k and v storage offsets for the memory-efficient kernel (sdpa_choice)"),
    "sdpa: cuDNN batch and head limit": Gate(
        "virtual-cuda", ">=2.13", "select_sdp_backend refuses cuDNN for a batch or head count over 65535"),
    "sdpa: cuDNN dropout resolution": Gate(
        "virtual-cuda", ">=2.13", "select_sdp_backend refuses cuDNN for a dropout that is no multiple of 1/16"),
    "inductor: fallback_to_eager node tag": Gate(
        "numerics", ">=2.13",
        "GraphLowering.call_function lowers a node tagged meta['custom']['fallback_to_eager'] (what "
        "torch.fx.traceback.annotate sets) with its fallback handler; every supported torch does so for "
        "meta['should_fallback'], the key kernelscope sets (numerics/fallback.py)"),
}


def version_tuple(version: str) -> tuple[int, int]:
    """(major, minor) of a version string such as "2.13.0+cpu"; (0, 0) when it has none."""
    numbers = re.findall(r"\d+", version)
    return (int(numbers[0]), int(numbers[1])) if len(numbers) >= 2 else (0, 0)


def torch_version() -> tuple[int, int]:
    """(major, minor) of the installed torch."""
    import torch

    return version_tuple(torch.__version__)


def in_range(versions: str, version: tuple[int, int] | None = None) -> bool:
    """Whether `version` (the installed torch's when None) is in a range such as ">=2.11,<2.14"."""
    version = version or torch_version()
    for bound in filter(None, (part.strip() for part in versions.split(","))):
        match = re.fullmatch(r"(>=|<=|<|>|==)\s*(\d+)\.(\d+)", bound)
        if match is None:
            raise ValueError(f"not a version bound: {bound!r}")
        other = (int(match.group(2)), int(match.group(3)))
        holds = {">=": version >= other, "<=": version <= other, "<": version < other,
                 ">": version > other, "==": version == other}[match.group(1)]
        if not holds:
            return False
    return True


def holds(name: str, version: tuple[int, int] | None = None) -> bool:
    """Whether the gate `name` holds on `version` (the installed torch's when None)."""
    return in_range(GATES[name].versions, version)
