"""`kernelscope doctor --torch`: every patch point, port and version gate, checked on the installed torch.

One row per entry: {"name", "feature", "kind" ("patch" | "port" | "gate"), "status", "why"}.
A patch point is "ok" when it holds (or is optional and absent, or not for this torch
version) and "broken" when not; a port is "ok", "unverified" or "broken" (engine/ports.py);
a gate is "ok" and says whether it is on, except "supported torch", which is "broken" on a
torch older than the engine accepts.
"""
from __future__ import annotations

from kernelscope.engine.patching import PatchPoint


def report() -> dict:
    """{"torch", "triton", "patch_points": [rows]} for the installed torch."""
    import torch

    try:
        import triton

        triton_version = getattr(triton, "__version__", "unknown")
    except ImportError:
        triton_version = None
    return {"torch": torch.__version__, "triton": triton_version,
            "patch_points": _patch_rows() + _port_rows() + _gate_rows()}


def broken(rows: list[dict]) -> list[dict]:
    return [row for row in rows if row["status"] == "broken"]


def _patch_rows() -> list[dict]:
    from kernelscope.engine import patch_points, torch_compat

    installed = "{}.{}".format(*torch_compat.torch_version())
    rows = []
    for point in patch_points.POINTS:
        name = point.name
        if not point.applies():
            status, why = "ok", f"not used on torch {installed} (for {point.versions})"
        elif (problem := point.check()) is not None:
            status, why = "broken", f"{problem}: {_consequence(point.feature)}"
        elif isinstance(point, PatchPoint) and not point.present():
            status, why = "ok", ("torch has it already: nothing added" if point.adds
                                 else "absent on this torch: nothing to patch")
        else:
            status, why = "ok", point.why
        rows.append({"name": name, "feature": point.feature, "kind": "patch", "status": status, "why": why})
    return rows


def _port_rows() -> list[dict]:
    from kernelscope.engine import ports

    rows = []
    for port in ports.PORTS:
        status, why = port.status()
        rows.append({"name": port.name, "feature": port.feature, "kind": "port", "status": status, "why": why})
    return rows


def _gate_rows() -> list[dict]:
    from kernelscope.engine import torch_compat

    rows = []
    for name, gate in torch_compat.GATES.items():
        on = torch_compat.holds(name)
        status = "broken" if name == "supported torch" and not on else "ok"
        why = f"{'on' if on else 'off'} (torch {gate.versions}): {gate.what}"
        rows.append({"name": name, "feature": gate.feature, "kind": "gate", "status": status, "why": why})
    return rows


_CONSEQUENCES = {
    "line provenance": "its probe group switches off and runs are kernel-level",
    "distributed": "its probe group switches off; runs with collectives say so",
    "timing decisions": "those decisions are neither recorded nor replayed; runs say so",
    "launch configs": "--target cuda runs record no launch configs; they say so",
    "upstream fixes": "the fix is not applied",
    "below the kernel": "building kernels below Triton fails with this reason",
}


def _consequence(feature: str) -> str:
    return _CONSEQUENCES.get(feature, f"{feature} refuses to record (before compiling)")
