"""Compare two runs into a `RunDiff`: plain data the gates check and the reports render.

What is compared: totals (graphs, kernels, extern calls, fallbacks, kernel and
wrapper lines, graph breaks, recompiles), graphs by compile id and kind, kernels
paired by what they compute (`match`), each user source line (which kernels
appeared, vanished or changed fusion there, which ops it lowers to, how many
kernel lines it accounts for), graph breaks, recompiles, ATen fallbacks and
provenance coverage. An empty diff means none of these differ.
"""
from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field

from kernelscope.diff.align import LineAlignment
from kernelscope.diff.decisions import DecisionDiff, compare_decisions
from kernelscope.diff.device_time import DeviceTimeDiff, compare_device_time
from kernelscope.diff.match import KernelPair, match_kernels
from kernelscope.diff.memory import MemoryDiff, compare_memory
from kernelscope.diff.model import BreakView, DiffSide, KernelView, SourceKey
from kernelscope.diff.resources import ResourceDiff, compare_resources
from kernelscope.diff.vectorization import VectorizationDiff, compare_vectorization

TOTALS = ["graphs", "kernels", "extern_calls", "fallbacks", "kernel_lines", "wrapper_lines", "graph_breaks",
          "recompiles"]


@dataclass
class Side:
    label: str
    target: str
    device: str
    mode: str
    torch_version: str


@dataclass
class Count:
    before: int
    after: int

    @property
    def delta(self) -> int:
        return self.after - self.before


@dataclass
class GraphChange:
    graph: str  # `[0/0] inference`
    status: str  # added | removed | changed
    before: dict | None  # {"kernels", "extern_calls", "fallbacks", "kernel_lines", "wrapper_lines"}
    after: dict | None


@dataclass
class KernelChange:
    status: str  # appeared | vanished | changed
    before: str | None  # kernel name
    after: str | None
    kind: str
    graph_before: str | None
    graph_after: str | None
    changes: list[str]  # for `changed`: renamed, ops, size, graph
    ops_removed: dict[str, int]
    ops_added: dict[str, int]
    lines_before: int
    lines_after: int
    source_lines: list[str]  # `file:line` (after side where it has one)


@dataclass
class SourceLineChange:
    file: str
    line_before: int | None  # None: the line has no counterpart before (new code)
    line_after: int | None  # None: the line is gone
    code_before: str
    code_after: str
    appeared: list[str]  # kernels that appeared and compute this line
    vanished: list[str]
    changed: list[str]  # `old -> new` of kernels whose fusion (ops or name) changed
    moved: list[str]  # `name: [0/0] inference -> [1/0] inference`, kernels only moved to another graph
    ops_removed: dict[str, int]
    ops_added: dict[str, int]
    kernel_lines_before: int  # kernel body lines computing this line (not shared index lines)
    kernel_lines_after: int

    @property
    def where(self) -> str:
        if self.line_before == self.line_after or self.line_before is None:
            return f"{self.file}:{self.line_after}"
        if self.line_after is None:
            return f"{self.file}:{self.line_before} (gone)"
        return f"{self.file}:{self.line_before}->{self.line_after}"


@dataclass
class BreakChange:
    status: str  # new | fixed
    file: str | None
    line: int | None  # on the side that has the break
    reason: str
    compile_id: str


@dataclass
class FallbackChange:
    op: str  # `torch.ops.aten.median.default`
    before: int
    after: int
    source_lines: list[str]  # where the side with more calls calls it


@dataclass
class CoverageChange:
    key: str  # kernel_lines, wrapper_lines, ...
    before: dict  # {"covered", "total", "share"}
    after: dict


@dataclass
class RunDiff:
    before: Side
    after: Side
    notes: list[str]
    totals: dict[str, Count]
    graphs: list[GraphChange] = field(default_factory=list)
    kernels: list[KernelChange] = field(default_factory=list)
    unchanged_kernels: int = 0
    source_lines: list[SourceLineChange] = field(default_factory=list)
    graph_breaks: list[BreakChange] = field(default_factory=list)
    recompiles: list[dict] = field(default_factory=list)  # {"status": new|gone, "reason"}
    # why (docs/why.md): {"status": new|gone, "file", "line", "what", "detail"}
    guards: list[dict] = field(default_factory=list)
    guard_failures: list[dict] = field(default_factory=list)
    fallbacks: list[FallbackChange] = field(default_factory=list)
    coverage: list[CoverageChange] = field(default_factory=list)
    device_time: DeviceTimeDiff | None = None  # when either side has a profile
    resources: ResourceDiff | None = None  # registers and spills of paired kernels (below the kernel)
    decisions: DecisionDiff | None = None  # timing decisions made differently (schema 5.0)
    memory: MemoryDiff | None = None  # peak and saved-for-backward bytes (schema 7.0), when either side has them
    # model lines beyond numerics tolerance in one run only: {"status": new|gone, "file", "line", "max_rel"}
    numerics: list[dict] = field(default_factory=list)
    # C++ kernels (Inductor's CPU backend) and how they were vectorized, when either run has one
    vectorization: VectorizationDiff | None = None

    @property
    def is_empty(self) -> bool:
        return not (any(count.delta for count in self.totals.values()) or self.graphs or self.kernels
                    or self.source_lines or self.graph_breaks or self.recompiles or self.fallbacks or self.coverage
                    or self.guards or self.guard_failures
                    or (self.resources is not None and self.resources.changes)
                    or (self.decisions is not None and self.decisions.changed) or self.numerics
                    or (self.vectorization is not None and self.vectorization.differs))

    def to_dict(self) -> dict:
        data = asdict(self)
        data["totals"] = {name: {"before": c.before, "after": c.after, "delta": c.delta}
                          for name, c in self.totals.items()}
        data["source_lines"] = [{**asdict(line), "where": line.where} for line in self.source_lines]
        data["empty"] = self.is_empty
        return data


def compare_runs(before: DiffSide, after: DiffSide) -> RunDiff:
    alignment = LineAlignment(before, after)
    pairs = match_kernels(before.kernels, after.kernels, alignment)
    changed_pairs = [pair for pair in pairs if pair.status != "unchanged"]
    return RunDiff(
        before=_side(before),
        after=_side(after),
        notes=_notes(before, after),
        totals={name: Count(_total(before, name), _total(after, name)) for name in TOTALS},
        graphs=_graph_changes(before, after),
        kernels=[_kernel_change(pair, alignment) for pair in changed_pairs],
        unchanged_kernels=len(pairs) - len(changed_pairs),
        source_lines=_source_line_changes(before, after, changed_pairs, alignment),
        graph_breaks=_break_changes(before.graph_breaks, after.graph_breaks, alignment),
        recompiles=_recompile_changes(before.recompiles, after.recompiles),
        guards=_why_changes(before.guards, after.guards, alignment),
        guard_failures=_why_changes(before.guard_failures, after.guard_failures, alignment),
        fallbacks=_fallback_changes(before, after),
        coverage=_coverage_changes(before.coverage, after.coverage),
        device_time=compare_device_time(before.profile, after.profile, pairs),
        resources=compare_resources(pairs),
        decisions=compare_decisions(before.decisions, after.decisions),
        memory=compare_memory(before.memory, after.memory),
        numerics=_numerics_changes(before, after),
        vectorization=compare_vectorization(pairs, before.cpu_vec_isa, after.cpu_vec_isa),
    )


def _numerics_changes(before: DiffSide, after: DiffSide) -> list[dict]:
    """Model lines beyond tolerance (`kernelscope numerics`) in one run and not the other."""
    old, new = before.numerics_over or {}, after.numerics_over or {}
    changes = [{"status": "new", "file": file, "line": line, "max_rel": new[file, line]}
               for file, line in new if (file, line) not in old]
    changes += [{"status": "gone", "file": file, "line": line, "max_rel": old[file, line]}
                for file, line in old if (file, line) not in new]
    return sorted(changes, key=lambda change: (change["status"], change["file"], change["line"]))


def _side(run: DiffSide) -> Side:
    return Side(run.label, run.target, run.device, run.mode, run.torch_version)


def _notes(before: DiffSide, after: DiffSide) -> list[str]:
    notes = []
    for name in ("target", "device", "mode", "torch_version"):
        old, new = getattr(before, name), getattr(after, name)
        if old != new:
            notes.append(f"the runs differ in {name.replace('_', ' ')}: {old} -> {new}")
    return notes


def _total(run: DiffSide, name: str) -> int:
    if name == "graphs":
        return len(run.graphs)
    if name == "graph_breaks":
        return len(run.graph_breaks)
    if name == "recompiles":
        return len(run.recompiles)
    return sum(getattr(graph, name) for graph in run.graphs)


def _graph_numbers(graph) -> dict:
    return {"kernels": graph.kernels, "extern_calls": graph.extern_calls, "fallbacks": graph.fallbacks,
            "kernel_lines": graph.kernel_lines, "wrapper_lines": graph.wrapper_lines}


def _graph_changes(before: DiffSide, after: DiffSide) -> list[GraphChange]:
    old = {(g.compile_id, g.kind): g for g in before.graphs}
    new = {(g.compile_id, g.kind): g for g in after.graphs}
    changes = []
    for key in sorted(set(old) | set(new)):
        a, b = old.get(key), new.get(key)
        label = old[key].label if key in old else new[key].label
        if a is None:
            changes.append(GraphChange(label, "added", None, _graph_numbers(b)))
        elif b is None:
            changes.append(GraphChange(label, "removed", _graph_numbers(a), None))
        elif _graph_numbers(a) != _graph_numbers(b):
            changes.append(GraphChange(label, "changed", _graph_numbers(a), _graph_numbers(b)))
    return changes


def _where(key: SourceKey) -> str:
    return f"{key[0]}:{key[1]}"


def _kernel_change(pair: KernelPair, alignment: LineAlignment) -> KernelChange:
    kernel = pair.kernel
    old_targets = Counter(pair.before.targets if pair.before else ())
    new_targets = Counter(pair.after.targets if pair.after else ())
    lines = set(pair.after.sources) if pair.after else set()
    if pair.before:
        lines |= {alignment.paired(key) or key for key in pair.before.sources}
    return KernelChange(
        status=pair.status,
        before=pair.before.name if pair.before else None,
        after=pair.after.name if pair.after else None,
        kind=kernel.kind,
        graph_before=pair.before.graph if pair.before else None,
        graph_after=pair.after.graph if pair.after else None,
        changes=pair.changes,
        ops_removed=dict(sorted((old_targets - new_targets).items())),
        ops_added=dict(sorted((new_targets - old_targets).items())),
        lines_before=pair.before.line_count if pair.before else 0,
        lines_after=pair.after.line_count if pair.after else 0,
        source_lines=[_where(key) for key in sorted(lines)],
    )


class _Rows:
    """Source-line rows of the report, keyed in after-side coordinates where a line has them."""

    def __init__(self, alignment: LineAlignment):
        self.alignment = alignment
        self.rows: dict[tuple, dict] = {}

    def for_before(self, key: SourceKey) -> dict:
        paired = self.alignment.paired(key)
        if paired is not None:
            return self._row(("after", *paired), key, paired)
        return self._row(("before", *key), key, None)

    def for_after(self, key: SourceKey) -> dict:
        return self._row(("after", *key), None, key)

    def _row(self, row_key: tuple, before_key: SourceKey | None, after_key: SourceKey | None) -> dict:
        row = self.rows.get(row_key)
        if row is None:
            row = self.rows[row_key] = {
                "file": row_key[1], "line_before": None, "line_after": after_key[1] if after_key else None,
                "appeared": set(), "vanished": set(), "changed": set(), "moved": set(), "ops_before": Counter(),
                "ops_after": Counter(), "kernel_lines_before": 0, "kernel_lines_after": 0,
            }
        if before_key is not None:
            row["line_before"] = before_key[1]
        return row


def _source_line_changes(before: DiffSide, after: DiffSide, changed_pairs: list[KernelPair],
                         alignment: LineAlignment) -> list[SourceLineChange]:
    rows = _Rows(alignment)
    for pair in changed_pairs:
        if pair.before is None:
            appeared = pair.kernel  # B's
            for key in appeared.sources:
                rows.for_after(key)["appeared"].add(appeared.name)
        elif pair.after is None:
            for key in pair.before.sources:
                rows.for_before(key)["vanished"].add(pair.before.name)
        elif {"renamed", "ops"} & set(pair.changes):
            label = (pair.after.name if pair.before.name == pair.after.name
                     else f"{pair.before.name} -> {pair.after.name}")
            for key in pair.before.sources:
                rows.for_before(key)["changed"].add(label)
            for key in pair.after.sources:
                rows.for_after(key)["changed"].add(label)
        elif "graph" in pair.changes:
            label = f"{pair.after.name}: {pair.before.graph} -> {pair.after.graph}"
            for key in pair.before.sources:
                rows.for_before(key)["moved"].add(label)
            for key in pair.after.sources:
                rows.for_after(key)["moved"].add(label)
    for run, side, lookup in ((before, "before", rows.for_before), (after, "after", rows.for_after)):
        for (phase, key), ops in run.ops_by_source.items():
            suffix = " (backward)" if phase == "backward" else ""
            lookup(key)[f"ops_{side}"].update({target + suffix: count for target, count in ops.items()})
        for kernel in run.kernels:
            for key, count in kernel.lines_by_source:
                lookup(key)[f"kernel_lines_{side}"] += count
    changes = []
    for row in rows.rows.values():
        if row["line_before"] is None and row["line_after"] is not None:
            old = alignment.counterpart((row["file"], row["line_after"]))
            row["line_before"] = old[1] if old else None
        removed, added = row["ops_before"] - row["ops_after"], row["ops_after"] - row["ops_before"]
        if not (row["appeared"] or row["vanished"] or row["changed"] or row["moved"] or removed or added
                or row["kernel_lines_before"] != row["kernel_lines_after"]):
            continue
        file = row["file"]
        changes.append(SourceLineChange(
            file=file,
            line_before=row["line_before"],
            line_after=row["line_after"],
            code_before=before.source_code.get((file, row["line_before"]), "") if row["line_before"] else "",
            code_after=after.source_code.get((file, row["line_after"]), "") if row["line_after"] else "",
            appeared=sorted(row["appeared"]),
            vanished=sorted(row["vanished"]),
            changed=sorted(row["changed"]),
            moved=sorted(row["moved"]),
            ops_removed=dict(sorted(removed.items())),
            ops_added=dict(sorted(added.items())),
            kernel_lines_before=row["kernel_lines_before"],
            kernel_lines_after=row["kernel_lines_after"],
        ))
    return sorted(changes, key=lambda c: (c.file, c.line_after or c.line_before or 0, c.line_before or 0))


def _break_changes(before: list[BreakView], after: list[BreakView], alignment: LineAlignment) -> list[BreakChange]:
    """Breaks pair up by file and reason: at the aligned line first, then in order."""
    old_groups: dict[tuple, list[BreakView]] = defaultdict(list)
    new_groups: dict[tuple, list[BreakView]] = defaultdict(list)
    for brk in before:
        old_groups[(brk.file or "", brk.reason)].append(brk)
    for brk in after:
        new_groups[(brk.file or "", brk.reason)].append(brk)
    changes = []
    for group in sorted(set(old_groups) | set(new_groups)):
        old = sorted(old_groups.get(group, []), key=lambda b: (b.line or 0, b.compile_id))
        new = sorted(new_groups.get(group, []), key=lambda b: (b.line or 0, b.compile_id))
        unpaired_new = list(new)
        unpaired_old = []
        for brk in old:
            target = alignment.follow(brk.file, brk.line)
            same = next((n for n in unpaired_new if n.line == target), None)
            if same is not None:
                unpaired_new.remove(same)
            else:
                unpaired_old.append(brk)
        count = min(len(unpaired_old), len(unpaired_new))  # same reason, moved: the same break
        for brk in unpaired_old[count:]:
            changes.append(BreakChange("fixed", brk.file, brk.line, brk.reason, brk.compile_id))
        for brk in unpaired_new[count:]:
            changes.append(BreakChange("new", brk.file, brk.line, brk.reason, brk.compile_id))
    return sorted(changes, key=lambda c: (c.file or "", c.line or 0, c.status, c.reason))


def _recompile_changes(before: list[str], after: list[str]) -> list[dict]:
    old, new = Counter(before), Counter(after)
    changes = [{"status": "new", "reason": reason} for reason, n in sorted((new - old).items()) for _ in range(n)]
    changes += [{"status": "gone", "reason": reason} for reason, n in sorted((old - new).items()) for _ in range(n)]
    return changes


def _why_changes(before: list, after: list, alignment: LineAlignment) -> list[dict]:
    """Guards (or failed guards) one side has at a line and the other not; a before-side
    line is followed to where it is on the after side (an edit above moves it)."""
    def key(view, line):
        return (view.file, line, view.what)

    old = Counter(key(view, alignment.follow(view.file, view.line)) for view in before)
    new = Counter(key(view, view.line) for view in after)
    detail = {key(view, view.line): view.detail for view in after}
    detail.update({key(view, alignment.follow(view.file, view.line)): view.detail for view in before})
    changes = []
    for status, counts in (("new", new - old), ("gone", old - new)):
        for (file, line, what), count in sorted(counts.items(), key=lambda item: (item[0][0] or "", item[0][1] or 0,
                                                                                 item[0][2])):
            changes += [{"status": status, "file": file, "line": line, "what": what,
                         "detail": detail.get((file, line, what), "")}] * count
    return changes


def _fallback_changes(before: DiffSide, after: DiffSide) -> list[FallbackChange]:
    def calls(run: DiffSide) -> dict[str, list[KernelView]]:
        found: dict[str, list[KernelView]] = defaultdict(list)
        for kernel in run.kernels:
            if kernel.is_fallback:
                found[kernel.stem].append(kernel)
        return found

    old, new = calls(before), calls(after)
    changes = []
    for op in sorted(set(old) | set(new)):
        a, b = old.get(op, []), new.get(op, [])
        if len(a) != len(b):
            more = b if len(b) > len(a) else a
            lines = sorted({_where(key) for kernel in more for key in kernel.sources})
            changes.append(FallbackChange(op, len(a), len(b), lines))
    return changes


def _coverage_changes(before: dict, after: dict) -> list[CoverageChange]:
    changes = []
    for key in sorted(set(before) & set(after)):
        old, new = before[key], after[key]
        if old.get("share") != new.get("share"):
            changes.append(CoverageChange(key, {k: old.get(k) for k in ("covered", "total", "share")},
                                          {k: new.get(k) for k in ("covered", "total", "share")}))
    return changes
