"""The store: recorded runs in `.kernelscope/` (SQLite + real generated files).

Never imports torch: the CLI read-side, the language server and the TUI use it
and must start fast. Data flows one way: the engine hands a RunRecord to
`Store.write_run`; front ends read a run through its read model,
`Store.run(run_id)` -> RunView (files, line answers, kernels, facts, profile,
module groups), and list runs with `Store.runs`. The SQLite connection and SQL
stay inside this package (tests/test_read_model_boundary.py checks it).
"""
from __future__ import annotations

from kernelscope.errors import StoreError
from kernelscope.store.dump import (
    SCHEMA_VERSION,
    InvalidDumpError,
    SchemaProblem,
    dump_json,
    load_schema,
    schema_problems,
    validate_dump,
)
from kernelscope.store.paths import DEFAULT_STORE_DIR, lookup_key
from kernelscope.store.results import (
    FileLinks,
    GraphBreakInfo,
    GraphChain,
    GraphOverview,
    GraphRef,
    GraphSummary,
    InstanceGroup,
    KernelRef,
    KernelSummary,
    LineLinks,
    LineOverview,
    LineRef,
    Location,
    ModuleGroup,
    ModuleSummary,
    NodeRef,
    QueryResult,
    RecompileInfo,
    RunDetails,
    RunSummary,
    SourceRef,
)
from kernelscope.store.run_view import RunView
from kernelscope.store.store import Store

__all__ = [
    "DEFAULT_STORE_DIR",
    "SCHEMA_VERSION",
    "FileLinks",
    "GraphBreakInfo",
    "GraphChain",
    "GraphOverview",
    "GraphRef",
    "GraphSummary",
    "InstanceGroup",
    "InvalidDumpError",
    "KernelRef",
    "KernelSummary",
    "LineLinks",
    "LineOverview",
    "LineRef",
    "Location",
    "ModuleGroup",
    "ModuleSummary",
    "NodeRef",
    "QueryResult",
    "RecompileInfo",
    "RunDetails",
    "RunSummary",
    "RunView",
    "SchemaProblem",
    "SourceRef",
    "Store",
    "StoreError",
    "dump_json",
    "load_schema",
    "lookup_key",
    "schema_problems",
    "validate_dump",
]
