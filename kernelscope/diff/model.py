"""One side of a diff: a dump (file or a run of the store) read into plain views.

A side is whatever `kernelscope dump` writes: a JSON file (schema 1.0 to 9.0),
`-` for stdin, or a run of the store named `3`, `latest` or `latest~N` (N runs
before the latest). Only the facts a diff compares are kept.
"""
from __future__ import annotations

import json
import re
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from kernelscope.asm.model import CppLoop
from kernelscope.diff.decisions import DecisionView, decision_views
from kernelscope.errors import StoreError, UserError
from kernelscope.run_record import SHARED_LINE_REASON_PREFIX

RUN_REFERENCE = re.compile(r"^(?:(\d+)|latest(?:~(\d+))?)$")
READABLE_SCHEMAS = ("1.0", "2.0", "3.0", "4.0", "5.0", "6.0", "7.0", "8.0", "9.0")

# Extern calls into these namespaces are ATen ops Inductor had no lowering for and ran
# eagerly (a FallbackKernel: `torch.ops.aten.median.default(...)` in the wrapper).
# `extern_kernels.*` (mm, addmm, bmm, convolution, ...) are library kernels Inductor
# chose on purpose and are not fallbacks.
FALLBACK_PREFIXES = ("torch.ops.", "aten.")

SourceKey = tuple[str, int]  # (file, line)


class DiffInputError(UserError):
    """A side of the diff cannot be read (missing file, not JSON, not a dump)."""

    exit_code = 2


@dataclass(frozen=True)
class KernelView:
    graph: str  # `[0/0] inference`
    phase: str  # "forward" (forward and inference graphs) or "backward"
    name: str
    kind: str  # triton | template | extern
    targets: tuple[str, ...]  # sorted op targets of its post-grad nodes (with repeats)
    sources: frozenset[SourceKey]  # user lines of its post-grad nodes
    line_count: int  # lines of its kernel file (0 for extern calls)
    lines_by_source: tuple[tuple[SourceKey, int], ...]  # kernel body lines computed for each source line
    registers: int | None = None  # below the kernel (schema 4.0, when built): per thread
    spill_bytes: int | None = None  # local memory per thread
    # a C++ kernel's loops (schema 9.0 `cpp_loops`, or 8.0's `asm.loops` when it was built); None:
    # not a C++ kernel, or a dump that does not have them
    cpp_loops: tuple[CppLoop, ...] | None = None

    @property
    def is_generated(self) -> bool:
        return self.kind != "extern"

    @property
    def is_fallback(self) -> bool:
        return self.kind == "extern" and self.name.startswith(FALLBACK_PREFIXES)

    @property
    def stem(self) -> str:
        """The name without the numbering that shifts when other kernels come or go:
        `triton_poi_fused_gelu_3` -> `triton_poi_fused_gelu`, `extern_kernels.mm#1` -> `extern_kernels.mm`."""
        if self.kind == "extern":
            return self.name.split("#", 1)[0]
        return re.sub(r"_\d+$", "", self.name)


@dataclass(frozen=True)
class GraphView:
    compile_id: str
    kind: str
    kernels: int  # generated (Triton / template) kernels
    extern_calls: int
    fallbacks: int
    kernel_lines: int  # lines of its kernel files
    wrapper_lines: int  # lines of its wrapper file

    @property
    def label(self) -> str:
        return f"[{self.compile_id}] {self.kind}"


@dataclass(frozen=True)
class BreakView:
    file: str | None
    line: int | None
    reason: str
    compile_id: str


@dataclass
class DiffSide:
    """One side of a diff (a run or a dump), as the comparison reads it."""

    label: str  # how the report names this side: a file name or `run 3`
    target: str
    device: str
    mode: str
    torch_version: str
    graphs: list[GraphView]
    kernels: list[KernelView]
    graph_breaks: list[BreakView]
    recompiles: list[str]  # reasons
    coverage: dict
    source_code: dict[SourceKey, str] = field(default_factory=dict)  # code of every recorded user line
    ops_by_source: dict[tuple[str, SourceKey], Counter] = field(default_factory=dict)  # (phase, line) -> targets
    profile: dict | None = None  # the dump's device times per step (`kernelscope profile`), if any
    decisions: list[DecisionView] = field(default_factory=list)  # timing decisions (schema 5.0)
    # why (schema 7.0, docs/why.md): shape guards and specializations at their user lines,
    # and each recompile's failed guard at the first user line Dynamo names for it
    guards: list[WhyView] = field(default_factory=list)
    guard_failures: list[WhyView] = field(default_factory=list)
    memory: dict | None = None  # the dump's run.memory (schema 7.0), if recorded
    # `kernelscope numerics` (schema 7.0): model lines with a kernel output beyond tolerance -> max rel
    # error, and where compiled and eager first part ways ("file:line", "" when they do not); None: no numerics
    numerics_over: dict[SourceKey, object] | None = None
    first_divergence: str = ""
    cpu_vec_isa: dict | None = None  # the vector ISA of the run's C++ kernels (schema 9.0): {"name", "bits"}


@dataclass(frozen=True)
class WhyView:
    """A guard (or a recompile's failed guard) as a diff compares it: what, and where."""

    file: str | None
    line: int | None
    what: str  # the guard's expression, or the failed guard
    detail: str  # guard: "shape, added by user code"; failure: the compile ids


def load_side(spec: str, store_dir: str | Path) -> DiffSide:
    """Read one side given on the command line (see the module docstring)."""
    if spec == "-":
        return _checked_view(_parse_dump(sys.stdin.read(), "<stdin>"), "<stdin>")
    path = Path(spec)
    if path.is_file():
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            raise DiffInputError(f"cannot read {spec}: {getattr(error, 'strerror', None) or error}") from error
        return _checked_view(_parse_dump(text, spec), spec)
    reference = RUN_REFERENCE.match(spec)
    if reference is None:
        raise DiffInputError(
            f"{spec}: no such file, and not a run of the store (a run id such as 3, `latest` or `latest~1`) "
            "— pass a file written by `kernelscope dump -o FILE`, or see `kernelscope runs`"
        )
    from kernelscope.store import StoreBackend

    with StoreBackend(store_dir, create=False) as store:
        run_id = _resolve_reference(store, spec, reference)
        return diff_side(store.run(run_id).dump(), f"run {run_id}")


def _resolve_reference(store, spec: str, reference: re.Match) -> int:
    if reference.group(1) is not None:
        return int(reference.group(1))
    back = int(reference.group(2) or 0)
    runs = store.runs()  # newest first
    if back >= len(runs):
        have = f"only {len(runs)} run{'s' if len(runs) != 1 else ''}" if runs else "no runs"
        raise StoreError(f"{spec}: the store {store.root} has {have} — `kernelscope runs` lists them")
    return runs[back].id


def _parse_dump(text: str, name: str) -> dict:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise DiffInputError(f"{name}: not JSON (line {error.lineno} column {error.colno}: {error.msg}) "
                             "— pass a file written by `kernelscope dump`") from error
    version = data.get("schema_version") if isinstance(data, dict) else None
    if version not in READABLE_SCHEMAS:
        raise DiffInputError(
            f"{name}: not a kernelscope dump this version reads (schema_version {version!r}; "
            f"readable: {', '.join(READABLE_SCHEMAS)}) — `kernelscope compile --json` prints a summary, "
            "write the dump with `kernelscope compile --dump FILE` or `kernelscope dump -o FILE`"
        )
    return data


def _checked_view(data: dict, name: str) -> DiffSide:
    """The views of a dump read from a file. The JSON Schema is checked only when the
    dump cannot be read: a full check costs seconds on a large dump (see docs/ci.md)."""
    try:
        return diff_side(data, name)
    except (KeyError, TypeError, AttributeError, ValueError) as error:
        from kernelscope.store.export.dump import schema_problems

        problems = schema_problems(data)
        if not problems:
            raise
        more = f" (and {len(problems) - 1} more; `kernelscope validate {name}` lists them)" if len(problems) > 1 else ""
        raise DiffInputError(f"{name}: invalid dump at {problems[0].path}: {problems[0].message}{more}") from error


def diff_side(data: dict, label: str) -> DiffSide:
    """The views of a dump (schema 1.0 to 5.0)."""
    run = data["run"]
    graphs: list[GraphView] = []
    kernels: list[KernelView] = []
    source_code: dict[SourceKey, str] = {}
    ops_by_source: dict[tuple[str, SourceKey], Counter] = {}
    for graph in run["graphs"]:
        phase = "backward" if graph["kind"] == "backward" else "forward"
        graph_label = f"[{graph['compile_id']}] {graph['kind']}"
        node_sources: dict[str, SourceKey] = {}
        targets: dict[str, str] = {}
        for node in graph["post_grad_nodes"]:
            targets[node["name"]] = node["target"]
            source = node["source"]
            if source is None:
                continue
            key = (source["file"], source["line"])
            node_sources[node["name"]] = key
            if source["code"]:
                source_code.setdefault(key, source["code"])
            if node["op"] == "call_function":
                ops_by_source.setdefault((phase, key), Counter())[node["target"]] += 1
        graph_kernels = [_kernel_view(kernel, graph_label, phase, node_sources, targets) for kernel in graph["kernels"]]
        kernels += graph_kernels
        graphs.append(GraphView(
            compile_id=graph["compile_id"],
            kind=graph["kind"],
            kernels=sum(1 for kernel in graph_kernels if kernel.is_generated),
            extern_calls=sum(1 for kernel in graph_kernels if not kernel.is_generated),
            fallbacks=sum(1 for kernel in graph_kernels if kernel.is_fallback),
            kernel_lines=sum(kernel.line_count for kernel in graph_kernels),
            wrapper_lines=(graph["wrapper_file"] or {}).get("lines", 0),
        ))
    breaks = [
        BreakView(file=(brk["source"] or {}).get("file"), line=(brk["source"] or {}).get("line"),
                  reason=_break_reason(brk), compile_id=brk["compile_id"])
        for brk in run["graph_breaks"]
    ]
    return DiffSide(
        label=label,
        target=run["target"],
        device=run["device"],
        mode=run["mode"],
        torch_version=run["torch_version"],
        graphs=graphs,
        kernels=kernels,
        graph_breaks=breaks,
        recompiles=[recompile["reason"] for recompile in run["recompiles"]],
        coverage=run["coverage"],
        source_code=source_code,
        ops_by_source=ops_by_source,
        profile=data.get("profile"),
        decisions=decision_views(run),
        guards=[WhyView((g["source"] or {}).get("file"), (g["source"] or {}).get("line"), g["expression"],
                        f"{g['kind']}, added by {g['added_by']}")
                for g in run.get("guards", []) if g["kind"] in ("shape", "specialization")],
        guard_failures=[WhyView((f["lines"][-1] if f["lines"] else {}).get("file"),
                                (f["lines"][-1] if f["lines"] else {}).get("line"), f["guard"],
                                f"[{recompile['compile_id']}] after [{f['failed_compile_id']}]")
                        for recompile in run["recompiles"] for f in recompile.get("failures", [])],
        memory=run.get("memory"),
        cpu_vec_isa=run["config"].get("cpu_vec_isa") if isinstance(run.get("config"), dict) else None,
        **_numerics_view(run.get("numerics")),
    )


def _numerics_view(numerics: dict | None) -> dict:
    if numerics is None:
        return {}
    first = numerics["first_divergence"]
    over = {(line["file"], line["line"]): line["max_rel"] for line in numerics["lines"] if line["over"]}
    return {"numerics_over": over,
            "first_divergence": f"{first['file']}:{first['line']}" if first else ""}


def _kernel_view(kernel: dict, graph_label: str, phase: str, node_sources: dict[str, SourceKey],
                 targets: dict[str, str]) -> KernelView:
    lines_by_source: Counter = Counter()
    for origin in kernel["lines"]:
        if origin["reason"].startswith(SHARED_LINE_REASON_PREFIX):
            continue  # index set-up and masks serve the whole kernel, not one line
        for key in {node_sources[name] for name in origin["nodes"] if name in node_sources}:
            lines_by_source[key] += 1
    return KernelView(
        graph=graph_label,
        phase=phase,
        name=kernel["name"],
        kind=kernel["kind"],
        targets=tuple(sorted(targets.get(name, "?") for name in kernel["nodes"])),
        sources=frozenset(node_sources[name] for name in kernel["nodes"] if name in node_sources),
        line_count=(kernel["file"] or {}).get("lines", 0),
        lines_by_source=tuple(sorted(lines_by_source.items())),
        registers=(kernel.get("asm") or {}).get("registers"),
        spill_bytes=(kernel.get("asm") or {}).get("spill_bytes"),
        cpp_loops=_cpp_loops(kernel),
    )


def _cpp_loops(kernel: dict) -> tuple[CppLoop, ...] | None:
    """A C++ kernel's loops: read from its code (9.0), else from its CPU build (8.0, `--asm`)."""
    if kernel["kind"] != "cpp":
        return None
    loops = kernel.get("cpp_loops")
    if loops is None and (kernel.get("asm") or {}).get("arch") == "x86-64":
        loops = kernel["asm"]["loops"]
    return None if loops is None else tuple(CppLoop.from_dict(loop) for loop in loops)


def _break_reason(brk: dict) -> str:
    """What Dynamo could not trace, with its explanation (schema 3.0 keeps them apart)."""
    explanation = brk.get("explanation") or ""
    return f"{brk['reason']} - {explanation}" if explanation else brk["reason"]
