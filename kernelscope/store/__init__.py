"""The store: recorded runs in `.kernelscope/` (SQLite + real generated files).

Never imports torch: the CLI read-side, the language server and the TUI use it
and must start fast. Data flows one way: the engine hands a RunRecord to
`Store.write_run`; front ends read with `locate`, `query`, `lines_for_file`,
`runs`, `show` and `dump`.
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
    GraphRef,
    GraphSummary,
    KernelRef,
    KernelSummary,
    LineLinks,
    LineRef,
    Location,
    NodeRef,
    QueryResult,
    RecompileInfo,
    RunDetails,
    RunSummary,
    SourceRef,
)
from kernelscope.store.store import Store

__all__ = [
    "DEFAULT_STORE_DIR",
    "SCHEMA_VERSION",
    "FileLinks",
    "GraphBreakInfo",
    "GraphChain",
    "GraphRef",
    "GraphSummary",
    "InvalidDumpError",
    "KernelRef",
    "KernelSummary",
    "LineLinks",
    "LineRef",
    "Location",
    "NodeRef",
    "QueryResult",
    "RecompileInfo",
    "RunDetails",
    "RunSummary",
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
