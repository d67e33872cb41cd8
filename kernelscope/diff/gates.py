"""`--fail-on` gates: which differences fail a CI job.

A gate looks at a RunDiff and says whether it trips and why. Count gates trip
when the new run is worse than the baseline (more kernels, more graphs, ...),
not when it improves; `kernel-change` trips on any kernel difference, for
projects that pin their compiled output exactly.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from kernelscope.diff import device_time, memory, resources, vectorization
from kernelscope.diff.compare import KernelChange, RunDiff
from kernelscope.errors import UserError

EXIT_NO_GATE_TRIPPED = 0
EXIT_GATE_TRIPPED = 1


@dataclass(frozen=True)
class Gate:
    name: str
    help: str
    check: Callable[[RunDiff], list[str]]  # reasons it trips; empty when it passes


@dataclass
class GateResult:
    gate: str
    tripped: bool
    reasons: list[str]


def _more(total: str, what: str) -> Callable[[RunDiff], list[str]]:
    def check(diff: RunDiff) -> list[str]:
        count = diff.totals[total]
        return [f"{what}: {count.before} -> {count.after} (+{count.delta})"] if count.delta > 0 else []
    return check


def _kernel_changes(diff: RunDiff) -> list[str]:
    return [f"kernel {change.status}: {_kernel_named(change)}" for change in diff.kernels]


def _kernel_named(change: KernelChange) -> str:
    if change.status == "appeared":
        return f"{change.after}"
    if change.status == "vanished":
        return f"{change.before}"
    return f"{change.before} -> {change.after} ({', '.join(change.changes)})"


def _new_breaks(diff: RunDiff) -> list[str]:
    return [f"new graph break at {brk.file}:{brk.line}: {brk.reason}" for brk in diff.graph_breaks
            if brk.status == "new"]


def _new_recompiles(diff: RunDiff) -> list[str]:
    return [f"new recompile: {change['reason']}" for change in diff.recompiles if change["status"] == "new"]


def _new_why(field: str, what: str) -> Callable[[RunDiff], list[str]]:
    def check(diff: RunDiff) -> list[str]:
        return [f"{what} at {change['file']}:{change['line']}: {change['what']} ({change['detail']})"
                for change in getattr(diff, field) if change["status"] == "new"]
    return check


def _new_fallbacks(diff: RunDiff) -> list[str]:
    return [f"fallback {change.op}: {change.before} -> {change.after} call(s)"
            + (f" at {', '.join(change.source_lines)}" if change.source_lines else "")
            for change in diff.fallbacks if change.after > change.before]


def _lower_coverage(diff: RunDiff) -> list[str]:
    out = []
    for change in diff.coverage:
        old, new = change.before["share"], change.after["share"]
        if old is not None and (new is None or new < old):
            out.append(f"coverage {change.key}: {_percent(old)} -> {_percent(new)}")
    return out


def _new_divergences(diff: RunDiff) -> list[str]:
    return [f"numerics: {change['file']}:{change['line']} is beyond tolerance against eager (max rel "
            f"{change['max_rel'] if isinstance(change['max_rel'], str) else format(change['max_rel'], '.3g')}), "
            "the baseline was not" for change in diff.numerics if change["status"] == "new"]


def _percent(share) -> str:
    return "n/a" if share is None else f"{share * 100:.1f}%"


GATES: dict[str, Gate] = {gate.name: gate for gate in [
    Gate("kernel-count", "more generated (Triton/template) kernels", _more("kernels", "generated kernels")),
    Gate("kernel-change", "any kernel appeared, vanished or changed (fusion, name, size, graph)", _kernel_changes),
    Gate("graph-count", "more compiled graphs", _more("graphs", "graphs")),
    Gate("graph-break", "a graph break the baseline does not have", _new_breaks),
    Gate("recompile", "a recompile the baseline does not have", _new_recompiles),
    Gate("new-recompile", "a guard failure (a recompile's cause) at a line the baseline does not have (dumps 7.0)",
         _new_why("guard_failures", "new recompile")),
    Gate("new-guard", "a shape guard or specialization at a line the baseline does not have (dumps 7.0)",
         _new_why("guards", "new guard")),
    Gate("fallback", "more calls of an ATen op Inductor could not lower (run eagerly)", _new_fallbacks),
    Gate("extern-count", "more extern kernel calls (mm, convolution, fallbacks, ...)",
         _more("extern_calls", "extern calls")),
    Gate("kernel-lines", "more lines of generated kernel code", _more("kernel_lines", "kernel lines")),
    Gate("wrapper-lines", "more lines of wrapper code", _more("wrapper_lines", "wrapper lines")),
    Gate("coverage", "a provenance coverage share went down", _lower_coverage),
    Gate("numerics", "a model line whose kernel outputs are beyond tolerance against eager, not in the baseline "
         "(both sides recorded by `kernelscope numerics`)", _new_divergences),
    Gate("device-time", "more device time per step than A plus --time-tolerance (both sides profiled)",
         lambda diff: device_time.gate_reasons(diff.device_time)),
    Gate("registers-increase", "a kernel uses more registers per thread (both sides built with --asm)",
         lambda diff: resources.gate_reasons(diff.resources, "registers")),
    Gate("spills-increase", "a kernel spills more registers to local memory (both sides built with --asm)",
         lambda diff: resources.gate_reasons(diff.resources, "spills")),
    Gate("vectorization-lost", "a C++ kernel's loop nest vectorized in A is scalar in B, or has fewer lanes "
         "(Inductor's CPU backend; dumps 9.0)", lambda diff: vectorization.gate_reasons(diff.vectorization)),
    Gate("memory", "a higher peak memory than A plus 10% (memory+N% for another margin; dumps of schema 7.0)",
         lambda diff: memory.gate_reasons(diff.memory)),
]}
# Gates that need more than the plain dumps (a profile, kernels built below Triton, memory
# recorded on both sides): not in `all`.
NEEDS_MORE = ("device-time", "registers-increase", "spills-increase", "memory")
ALL = "all"


def parse_gates(values: list[str] | None) -> list[str]:
    """`["kernel-count,graph-break", "fallback"]` -> gate names in GATES order; `all` is every gate."""
    names: list[str] = []
    for value in values or []:
        for name in (part.strip() for part in value.split(",")):
            if not name:
                continue
            if name == ALL:  # every gate that needs nothing but the dumps
                names += [gate for gate in GATES if gate not in NEEDS_MORE]
            elif name.startswith("memory+"):  # the margin: gate_tolerances reads it
                names.append("memory")
            elif name in GATES:
                names.append(name)
            else:
                raise UserError(f"unknown gate {name!r} in --fail-on; gates: {', '.join(GATES)}, or {ALL}")
    return [name for name in GATES if name in names]


def gate_tolerances(values: list[str] | None) -> dict[str, float]:
    """The margins given with a gate's name: `memory+5%` -> {"memory": 0.05}."""
    found: dict[str, float] = {}
    for value in values or []:
        for name in (part.strip() for part in value.split(",")):
            if name.startswith("memory+"):
                try:
                    found["memory"] = memory.parse_tolerance(name.removeprefix("memory+"))
                except ValueError as error:
                    raise UserError(f"--fail-on {name}: {error}") from error
    return found


def evaluate_gates(diff: RunDiff, names: list[str]) -> list[GateResult]:
    results = []
    for name in names:
        reasons = GATES[name].check(diff)
        results.append(GateResult(name, bool(reasons), reasons))
    return results


def exit_code(results: list[GateResult]) -> int:
    return EXIT_GATE_TRIPPED if any(result.tripped for result in results) else EXIT_NO_GATE_TRIPPED
