"""A run's module instances as a tree, siblings of the same shape folded.

What a module list shows (the TUI's module filter, the VS Code run overview): the
top-level instances, each with its submodules, where sibling instances with the
same class, the same kernels (Triton kernels by graph and name, extern calls by op)
and the same structure (their submodules' relative paths and post-grad node
counts) fold into one group: `blocks.2–46 (45 × Block)`. Read once per run.
"""
from __future__ import annotations

import sqlite3
from collections import Counter

from kernelscope.store.reading.answer_cache import cached, db_key
from kernelscope.store.reading.folding import extern_op, fold_instances, parent
from kernelscope.store.results import InstanceGroup


def module_groups(conn: sqlite3.Connection, run_id: int) -> list[InstanceGroup]:
    """The run's top-level module instances, folded (see the module docstring)."""
    return cached(("modules", db_key(conn), run_id), lambda: _build(conn, run_id))


def _build(conn: sqlite3.Connection, run_id: int) -> list[InstanceGroup]:
    classes: dict[str, str] = {}
    own_nodes: Counter = Counter()  # module path -> its own post-grad nodes
    for path, module_class, stage, count in conn.execute(
            "SELECT module_path, module_class, stage, COUNT(*) FROM nodes WHERE run_id = ? AND module_path != '' "
            "GROUP BY module_path, module_class, stage", (run_id,)):
        if module_class and not classes.get(path):
            classes[path] = module_class
        classes.setdefault(path, "")
        if stage == "post":
            own_nodes[path] += count
    # path -> (kind, graph kind, name or op, kernel id) of the kernels it reaches
    kernels_of: dict[str, set[tuple[str, str, str, int]]] = {}
    for path, kind, graph_kind, name, kernel_id in conn.execute(
            """SELECT DISTINCT n.module_path, k.kind, g.kind, k.name, k.id FROM kernels k
               JOIN graphs g ON g.id = k.graph_id JOIN kernel_nodes kn ON kn.kernel_id = k.id
               JOIN nodes n ON n.id = kn.node_id WHERE k.run_id = ? AND n.module_path != ''""", (run_id,)):
        kernels_of.setdefault(path, set()).add((kind, graph_kind, name, kernel_id))

    every: set[str] = set()
    for path in classes:
        parts = path.split(".")
        every.update(".".join(parts[:end]) for end in range(1, len(parts) + 1))
    children: dict[str, list[str]] = {}
    for path in every:
        children.setdefault(parent(path), []).append(path)
    subtree: dict[str, list[str]] = {path: [] for path in every}  # path -> itself and its descendants
    for path in every:
        parts = path.split(".")
        for end in range(1, len(parts) + 1):
            subtree[".".join(parts[:end])].append(path)

    def shape(path: str) -> tuple:
        reached: set = set()
        for inner in subtree[path]:
            reached |= kernels_of.get(inner, set())
        triton = sorted(f"{graph_kind}/{name}" for kind, graph_kind, name, _ in reached if kind != "extern")
        externs = sorted(f"{graph_kind}/{extern_op(name)}" for kind, graph_kind, name, _ in reached if kind == "extern")
        structure = tuple(sorted((inner[len(path):], own_nodes[inner], classes.get(inner, ""))
                                 for inner in subtree[path]))
        post_nodes = sum(own_nodes[inner] for inner in subtree[path])
        return post_nodes, tuple(triton), len(externs), tuple(externs), structure

    def groups_below(path: str) -> list[InstanceGroup]:
        return fold_instances([(child, classes.get(child, ""), shape(child)) for child in children.get(path, [])],
                              groups_below)

    return groups_below("")
