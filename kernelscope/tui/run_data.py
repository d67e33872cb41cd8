"""A run as the TUI lists it: kernel rows to sort, filter and search, and the
facts that need the whole run (source lines per kernel, module instances),
read from the store in the background after the first paint."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from kernelscope.store.reading.graphs_and_kernels import KernelFacts
from kernelscope.store.results import RunDetails

PHASES = {"forward": "fw", "backward": "bw", "inference": "inf"}
SORT_COLUMNS = ("name", "kind", "phase", "lines", "sources", "device", "regs", "spills")
ASM_COLUMNS = ("regs", "spills")  # shown once a kernel of the run is built below Triton


@dataclass
class KernelRow:
    graph: str  # graph key, `0_0_0-forward`
    compile_id: str
    name: str
    kind: str  # triton | template | extern
    phase: str  # fw | bw | inf
    file: str | None
    line_count: int | None
    nodes: list[str]
    device_time_us: float | None = None  # when the run was profiled
    source_lines: list[tuple[str, int]] | None = None  # None until the run's facts are loaded
    wrapper_lines: list[int] = field(default_factory=list)
    modules: set[str] = field(default_factory=set)
    registers: int | None = None  # below the kernel, once built: registers per thread
    spill_bytes: int | None = None  # bytes of register spill stores per thread

    @property
    def key(self) -> str:
        return f"{self.graph}/{self.name}"


@dataclass
class KernelFilter:
    """`text` matches names (space-separated words all must match); `kind:triton`, `fw`/`bw`/`inf`
    and `graph:0/1` narrow further; `module` keeps the kernels of one module instance, `modules`
    (when given) those of any of several (a folded group's members; `module` is then its label)."""

    text: str = ""
    module: str = ""
    modules: tuple[str, ...] = ()

    def keeps(self, row: KernelRow) -> bool:
        for word in self.text.lower().split():
            if word in PHASES.values():
                if row.phase != word:
                    return False
            elif word.startswith("kind:"):
                if row.kind != word[5:]:
                    return False
            elif word.startswith("graph:"):
                if row.compile_id != word[6:]:
                    return False
            elif word not in row.name.lower():
                return False
        kept = self.modules or ((self.module,) if self.module else ())
        if kept:
            return any(in_instance(module, instance) for module in row.modules for instance in kept)
        return True


def in_instance(path: str, instance: str) -> bool:
    """Whether module `path` is instance `instance` or inside it (a dotted prefix)."""
    return path == instance or path.startswith(instance + ".")


def kernel_rows(details: RunDetails) -> list[KernelRow]:
    compile_ids = {graph.key: graph.compile_id for graph in details.graphs}
    kinds = {graph.key: graph.kind for graph in details.graphs}
    return [
        KernelRow(
            graph=kernel.graph, compile_id=compile_ids.get(kernel.graph, ""), name=kernel.name, kind=kernel.kind,
            phase=PHASES.get(kinds.get(kernel.graph, ""), "?"), file=kernel.file, line_count=kernel.line_count,
            nodes=list(kernel.nodes), device_time_us=getattr(kernel, "device_time_us", None),
        )
        for kernel in details.kernels
    ]


def has_device_time(rows: list[KernelRow]) -> bool:
    return any(row.device_time_us is not None for row in rows)


def has_asm(rows: list[KernelRow]) -> bool:
    return any(row.registers is not None for row in rows)


def shown_columns(rows: list[KernelRow]) -> list[str]:
    """The kernel list's columns: device time when profiled, registers and spills once built."""
    return [name for name in SORT_COLUMNS
            if (name != "device" or has_device_time(rows)) and (name not in ASM_COLUMNS or has_asm(rows))]


def add_asm_facts(rows: list[KernelRow], builds: dict) -> None:
    """Each row's registers and spills from the run's builds below Triton (RunView.asm_builds)."""
    by_key = {info.key: info.facts for info in builds.values() if info.facts is not None}
    for row in rows:
        facts = by_key.get(row.key)
        row.registers = None if facts is None else facts.registers
        row.spill_bytes = None if facts is None else facts.spill_bytes


def sort_key(column: str):
    """A key for sorted(); numbers sort with missing values last."""
    if column == "name":
        return lambda row: row.name
    if column == "kind":
        return lambda row: (row.kind, row.name)
    if column == "phase":
        return lambda row: (row.phase, row.graph, row.name)
    if column == "lines":
        return lambda row: (row.line_count is None, -(row.line_count or 0))
    if column == "sources":
        return lambda row: (row.source_lines is None, -len(row.source_lines or ()))
    if column == "device":
        return lambda row: (row.device_time_us is None, -(row.device_time_us or 0.0))
    if column == "regs":
        return lambda row: (row.registers is None, -(row.registers or 0))
    if column == "spills":
        return lambda row: (row.spill_bytes is None, -(row.spill_bytes or 0), -(row.registers or 0))
    return lambda row: (row.graph, row.name)


def add_run_facts(rows: list[KernelRow], facts: dict[str, KernelFacts]) -> list[str]:
    """Fill each row's source lines, wrapper call lines and modules from the run's kernel
    facts (StoreBackend.kernel_facts); returns the module instances of the run, with their parents
    (empty when the store recorded none)."""
    modules: set[str] = set()
    for row in rows:
        fact = facts.get(row.key)
        if fact is None:
            continue
        row.source_lines = list(fact.source_lines)
        row.wrapper_lines = list(fact.wrapper_lines)
        row.modules = set(fact.modules)
        modules |= row.modules
    return sorted(_with_parents(modules))


def _with_parents(modules: set[str]) -> set[str]:
    """`blocks.0.attn.qkv` also offers `blocks.0.attn` and `blocks.0` (a whole layer)."""
    every: set[str] = set()
    for module in modules:
        parts = module.split(".")
        every.update(".".join(parts[:end]) for end in range(1, len(parts) + 1))
    return every


def target_file(target: str) -> str:
    """`examples/mlp.py:make` -> `examples/mlp.py`; a script target is its own file."""
    path, separator, factory = target.rpartition(":")
    return path if separator and factory.isidentifier() and path.endswith(".py") else target


def display_path(path: str, workspace: str) -> str:
    """Paths inside the workspace or the store are shown relative (`runs/3/...` as is)."""
    if Path(path).is_absolute():
        try:
            return str(Path(path).relative_to(workspace))
        except ValueError:
            return path
    return path
