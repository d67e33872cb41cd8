"""A run as stable JSON, and its JSON Schema (`kernelscope/schema/dump-v1.json`).

The dump mirrors the RunRecord dataclasses, read back from the store, with
these differences (DUMP_FIELD_CHANGES; a test checks schema and dataclasses
agree through it):
- generated text (`pre_grad_text`, `Kernel.source`, ...) becomes a file
  reference `{"path", "sha256", "lines"}`: the text is in the store's files;
- `workspace` is left out, and source paths inside it are workspace-relative,
  so two machines dump the same run the same way;
- the run gains `id` and `coverage`, a graph its `key` and `compile_id`.
Every list is sorted and every object's keys too, so dumps diff cleanly.
"""
from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

from kernelscope import __version__
from kernelscope.errors import UserError
from kernelscope.store.catalog import resolve_run_id

SCHEMA_VERSION = "1.0"
SCHEMA_RESOURCE = ("schema", "dump-v1.json")

DUMP_FIELD_CHANGES: dict[str, dict] = {
    # dataclass name: {"$def": schema definition, "renamed": {field: property}, "dropped": {...}, "added": {...}}
    "RunRecord": {"$def": "run", "renamed": {}, "dropped": {"workspace"}, "added": {"id", "coverage"}},
    "GraphRecord": {
        "$def": "graph",
        "renamed": {"pre_grad_text": "pre_grad_file", "post_grad_text": "post_grad_file",
                    "wrapper_text": "wrapper_file"},
        "dropped": set(),
        "added": {"key", "compile_id"},
    },
    "Kernel": {"$def": "kernel", "renamed": {"source": "file"}, "dropped": set(), "added": set()},
    "FxNode": {"$def": "fx_node", "renamed": {}, "dropped": set(), "added": set()},
    "LineOrigin": {"$def": "line_origin", "renamed": {}, "dropped": set(), "added": set()},
    "SourceLocation": {"$def": "source_location", "renamed": {}, "dropped": set(), "added": set()},
    "GraphBreak": {"$def": "graph_break", "renamed": {}, "dropped": set(), "added": set()},
    "Recompile": {"$def": "recompile", "renamed": {}, "dropped": set(), "added": set()},
}


def dump_run(conn: sqlite3.Connection, run_id: int) -> dict:
    run_id = resolve_run_id(conn, run_id)
    run = conn.execute("SELECT * FROM runs WHERE id = ?", (run_id,)).fetchone()
    graphs = [_dump_graph(conn, graph) for graph in conn.execute("SELECT * FROM graphs WHERE run_id = ?", (run_id,))]
    graph_breaks = [
        {"reason": row["reason"], "compile_id": row["compile_id"], "source": _source(row)}
        for row in conn.execute("SELECT * FROM graph_breaks WHERE run_id = ?", (run_id,))
    ]
    recompiles = [
        {"compile_id": row["compile_id"], "reason": row["reason"]}
        for row in conn.execute("SELECT * FROM recompiles WHERE run_id = ?", (run_id,))
    ]
    return {
        "schema_version": SCHEMA_VERSION,
        "kernelscope_version": __version__,
        "run": {
            "id": run["id"],
            "target": run["target"],
            "device": run["device"],
            "mode": run["mode"],
            "dynamic": bool(run["dynamic"]),
            "torch_version": run["torch_version"],
            "triton_version": run["triton_version"],
            "provenance": run["provenance"],
            "created": run["created"],
            "peak_memory_mb": run["peak_memory_mb"],
            "execute_max_error": run["execute_max_error"],
            "timings": json.loads(run["timings_json"]),
            "config": json.loads(run["config_json"]),
            "warnings": sorted(json.loads(run["warnings_json"])),
            "coverage": json.loads(run["coverage_json"]),
            "graphs": sorted(graphs, key=lambda graph: graph["key"]),
            "graph_breaks": sorted(graph_breaks, key=_break_order),
            "recompiles": sorted(recompiles, key=lambda rec: (rec["compile_id"], rec["reason"])),
        },
    }


def dump_json(data: dict) -> str:
    return json.dumps(data, sort_keys=True, indent=2, ensure_ascii=False) + "\n"


def _dump_graph(conn: sqlite3.Connection, graph: sqlite3.Row) -> dict:
    graph_id = graph["id"]
    files = {}
    kernel_files = {}
    for row in conn.execute("SELECT * FROM files WHERE graph_id = ?", (graph_id,)):
        ref = {"path": row["path"], "sha256": row["sha256"], "lines": row["line_count"]}
        if row["kind"] == "kernel":
            kernel_files[row["kernel_id"]] = ref
        else:
            files[row["kind"]] = ref

    from_pre_grad: dict[int, list[str]] = {}
    for row in conn.execute(
        "SELECT l.post_node_id, l.pre_node_name FROM node_links l JOIN nodes n ON n.id = l.post_node_id "
        "WHERE n.graph_id = ?",
        (graph_id,),
    ):
        from_pre_grad.setdefault(row["post_node_id"], []).append(row["pre_node_name"])
    nodes = {"pre": [], "post": []}
    for row in conn.execute("SELECT * FROM nodes WHERE graph_id = ?", (graph_id,)):
        nodes[row["stage"]].append({
            "name": row["name"],
            "op": row["op"],
            "target": row["target"],
            "source": _source(row),
            "source_via": row["source_via"],
            "graph_line": row["graph_line"],
            "from_pre_grad": sorted(from_pre_grad.get(row["id"], [])),
        })

    lines = _line_origins(conn, graph_id)
    kernel_nodes: dict[int, list[str]] = {}
    for row in conn.execute(
        "SELECT kn.kernel_id, kn.node_name FROM kernel_nodes kn JOIN kernels k ON k.id = kn.kernel_id "
        "WHERE k.graph_id = ?",
        (graph_id,),
    ):
        kernel_nodes.setdefault(row["kernel_id"], []).append(row["node_name"])
    kernel_calls: dict[int, list[int]] = {}
    for row in conn.execute("SELECT kernel_id, wrapper_line FROM kernel_calls WHERE graph_id = ?", (graph_id,)):
        kernel_calls.setdefault(row["kernel_id"], []).append(row["wrapper_line"])
    kernels = []
    for row in conn.execute("SELECT * FROM kernels WHERE graph_id = ?", (graph_id,)):
        inductor_nodes = None if row["inductor_nodes_json"] is None else sorted(json.loads(row["inductor_nodes_json"]))
        kernels.append({
            "name": row["name"],
            "kind": row["kind"],
            "file": kernel_files.get(row["id"]),
            "nodes": sorted(kernel_nodes.get(row["id"], [])),
            "lines": lines.get(row["id"], []),
            "inductor_nodes": inductor_nodes,
            "wrapper_lines": sorted(kernel_calls.get(row["id"], [])),
        })

    node_order = lambda node: (node["graph_line"], node["name"], node["target"])  # noqa: E731
    return {
        "key": graph["key"],
        "compile_id": graph["compile_id"],
        "frame_id": graph["frame_id"],
        "frame_compile_id": graph["frame_compile_id"],
        "attempt": graph["attempt"],
        "kind": graph["kind"],
        "pre_grad_file": files.get("pre_grad"),
        "post_grad_file": files.get("post_grad"),
        "wrapper_file": files.get("wrapper"),
        "pre_grad_nodes": sorted(nodes["pre"], key=node_order),
        "post_grad_nodes": sorted(nodes["post"], key=node_order),
        "kernels": sorted(kernels, key=lambda kernel: (kernel["name"], kernel["wrapper_lines"])),
        "wrapper_lines": lines.get(None, []),
        "wrapper_attributable": graph["wrapper_attributable"],
        "inductor_mapping": None if graph["inductor_mapping_json"] is None else json.loads(graph["inductor_mapping_json"]),
    }


def _line_origins(conn: sqlite3.Connection, graph_id: int) -> dict[int | None, list[dict]]:
    """The LineOrigins of a graph, keyed by kernel id (None for wrapper lines)."""
    origins: dict[tuple, dict] = {}
    for row in conn.execute("SELECT * FROM generated_lines WHERE graph_id = ? ORDER BY id", (graph_id,)):
        key = (row["kernel_id"], row["origin_index"])
        if key not in origins:
            origins[key] = {"line": row["line"], "text": row["text"], "reason": row["reason"], "nodes": []}
        if row["node_name"] is not None:
            origins[key]["nodes"].append(row["node_name"])
    by_kernel: dict[int | None, list[dict]] = {}
    for (kernel_id, _), origin in origins.items():
        origin["nodes"].sort()
        by_kernel.setdefault(kernel_id, []).append(origin)
    for origin_list in by_kernel.values():
        origin_list.sort(key=lambda origin: (origin["line"], origin["reason"], origin["nodes"], origin["text"]))
    return by_kernel


def _source(row: sqlite3.Row) -> dict | None:
    if row["source_file"] is None:
        return None
    return {"file": row["source_file"], "line": row["source_line"], "function": row["source_function"],
            "code": row["source_code"]}


def _break_order(brk: dict) -> tuple:
    source = brk["source"] or {"file": "", "line": 0}
    return (brk["compile_id"], source["file"], source["line"], brk["reason"])


# -- the schema -------------------------------------------------------------------


@dataclass(frozen=True)
class SchemaProblem:
    path: str  # JSON path of the offending value, e.g. `$.run.graphs[0].kind`
    message: str


class InvalidDumpError(UserError):
    """A dump does not match the schema; `problems` says where and why."""

    exit_code = 1

    def __init__(self, problems: list[SchemaProblem]):
        self.problems = problems
        first = problems[0]
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        super().__init__(f"invalid dump at {first.path}: {first.message}{more}")


@lru_cache(maxsize=1)
def load_schema() -> dict:
    resource = resources.files("kernelscope").joinpath(*SCHEMA_RESOURCE)
    return json.loads(resource.read_text(encoding="utf-8"))


def schema_problems(data) -> list[SchemaProblem]:
    """Every place `data` breaks the dump schema, sorted by path; empty when it is valid."""
    from jsonschema import Draft202012Validator  # imported here: only validation needs it

    validator = Draft202012Validator(load_schema())
    problems = [SchemaProblem(path=error.json_path, message=error.message) for error in validator.iter_errors(data)]
    return sorted(problems, key=lambda problem: (problem.path, problem.message))


def validate_dump(data) -> None:
    """Raise InvalidDumpError unless `data` matches the dump schema."""
    problems = schema_problems(data)
    if problems:
        raise InvalidDumpError(problems)
