"""The store: recorded runs in `.kernelscope/` (SQLite + real generated files).

Never imports torch: the CLI read-side, the language server and the TUI use it and must
start fast. Data flows one way: the engine hands a RunRecord (kernelscope.run_record) to
`StoreBackend.write_run`; front ends read a run through its read model,
`StoreBackend.run(run_id)` -> RunView (files, line answers, kernels, facts, profile,
module groups), and list runs with `StoreBackend.runs`. The SQLite connection and SQL
stay inside this package (tests/store/test_read_model_boundary.py checks it). The Python API's
`kernelscope.Store` (kernelscope/api/store.py) wraps a StoreBackend.

Map — what front ends use sits at the top; each folder is one job with its own map:
- `backend`   — `StoreBackend`: the object a front end opens on a store; owns the
  connection, turns user-given paths into stored keys, hands work to the modules below.
- `run_view`  — `RunView`: one run as every front end reads it (one method per read).
- `results`   — the answer dataclasses (Location, QueryResult, RunSummary, ...): plain
  data, no database handles.
- `paths`     — how files are named in the store (stored keys, `runs/<id>/...`,
  `lookup_key`, `generated_path`).
- `places`    — where recorded paths are now (a moved store, `--map-path`: `PathMap`).
- `database/` — the SQLite file: opening it, its tables, SQL helpers, checks of values
  kernelscope never writes. Internal: only the store's own modules import it.
- `writing/`  — putting runs in and taking them out: the writer, coverage, merging
  another store's runs, deleting and pruning runs.
- `reading/`  — answering from stored runs: the runs list, locating a file, the query
  chain, a source file's index, the line overviews kept per line, graphs and kernels,
  recorded code, module folding and trees, the per-process answer cache.
- `parts/`    — parts of a run beyond the provenance chain, each with its own tables:
  below the kernel (`asm_builds`), distributed jobs, timing decisions, profiles, `why`
  (guards, recompile failures, fusion refusals: docs/why.md), recomputes, user kernels, memory.
- `export/`   — a run as stable JSON (`kernelscope dump`) and its JSON Schema.
- `health/`   — `kernelscope doctor`: checking a store and repairing what is safe.

Where new things go
- a new store read: a function in `reading/` (or the `parts/` module whose tables it
  reads), taking the connection and the run id; one method on `RunView` that calls it
  (cached through `reading/answer_cache` when it covers a whole run); a dataclass it
  returns in `results` when front ends name it;
- a new table: the core tables and indexes in `database/tables.py` (raising
  `STORE_SCHEMA_VERSION`, with an `ADDED_SINCE_VERSION` entry so older stores gain it),
  filled by `writing/writer.py`; a new part of a run gets its own module in `parts/`
  (its writes, reads and its piece of the dump), its tables beside the others in
  `database/tables.py`;
- a new export: a field in `export/dump.py` and the schema (`kernelscope/schema/`,
  `DUMP_FIELD_CHANGES`); a part's own piece of the dump lives in its `parts/` module
  (or, for below the kernel, `export/asm_dump.py`).
"""
from __future__ import annotations

from kernelscope.errors import StoreError
from kernelscope.store.backend import StoreBackend
from kernelscope.store.export.dump import (
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
    RecomputeRef,
    RunDetails,
    RunSummary,
    SourceRef,
    SubgraphRef,
)
from kernelscope.store.run_view import RunView

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
    "RecomputeRef",
    "RunDetails",
    "RunSummary",
    "RunView",
    "SchemaProblem",
    "SourceRef",
    "StoreBackend",
    "StoreError",
    "SubgraphRef",
    "dump_json",
    "load_schema",
    "lookup_key",
    "schema_problems",
    "validate_dump",
]
