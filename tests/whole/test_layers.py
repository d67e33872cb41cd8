"""Layers that hold: who may import whom inside `kernelscope/`, read from the source.

Every import statement counts — at module level, inside a function, under
`TYPE_CHECKING` — since each is a dependency someone reading the code must follow. A
module depends on what it names: `import a.b` on `a.b`; `from pkg import name` on
`pkg.name` when that is a module, else on `pkg` (its `__init__`); relative imports are
resolved first. No module is imported and nothing runs: the test reads text only.

The rules:
- no import cycle among kernelscope's modules (a cycle is broken by moving the shared
  piece to where it belongs, never by hiding an import inside a function);
- torch and triton are imported only by `kernelscope/engine/`;
- `kernelscope.compile_text` (the torch-free parsers the engine and trace_import share)
  reaches neither the engine nor torch nor triton, and trace_import does not reach the engine;
- `kernelscope.render` does not import `kernelscope.api` (the API renders through it);
- no module of the engine, the parsers or trace_import is over 600 lines;
- every package of the engine, the parsers and the store maps its modules in its docstring.
"""
from __future__ import annotations

import ast
from functools import lru_cache
from pathlib import Path

from conftest import REPO

PACKAGE = REPO / "kernelscope"
ENGINE = "kernelscope.engine"
PARSERS = "kernelscope.compile_text"
TRACE_IMPORT = "kernelscope.trace_import"
STORE = "kernelscope.store"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@lru_cache(maxsize=1)
def _sources() -> dict[str, Path]:
    return {_module_name(path): path for path in PACKAGE.rglob("*.py") if "__pycache__" not in path.parts}


def _imported(module: str, path: Path) -> list[tuple[str, int]]:
    """(dotted name as imported, line) of every import statement in `path`."""
    modules = _sources()
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            for alias in node.names:
                named = f"{source}.{alias.name}"
                found.append((named if named in modules else source, node.lineno))
    return found


@lru_cache(maxsize=1)
def _graph() -> dict[str, dict[str, int]]:
    """module -> {kernelscope module it imports: first line}."""
    modules = _sources()
    graph = {}
    for module, path in modules.items():
        edges: dict[str, int] = {}
        for name, line in _imported(module, path):
            if name in modules and name != module:
                edges.setdefault(name, line)
        graph[module] = edges
    return graph


def _cycles() -> list[list[str]]:
    """The strongly connected groups of two or more modules (every module of a group reaches
    every other through imports), each sorted; Tarjan's algorithm, iteratively."""
    graph = _graph()
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    groups.append(sorted(group))
    return groups


def _cycle_path(group: list[str]) -> list[str]:
    """One shortest cycle through the group's first module, as module names."""
    graph, start = _graph(), group[0]
    members = set(group)
    previous: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for child in sorted(graph[node]):
                if child not in members:
                    continue
                if child == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(previous[path[-1]])
                    return [start, *reversed(path[:-1]), start]
                if child not in previous:
                    previous[child] = node
                    following.append(child)
        frontier = following
    return group


def _describe(group: list[str]) -> str:
    graph = _graph()
    short = lambda name: name.removeprefix("kernelscope.") or "kernelscope"  # noqa: E731
    edges = "; ".join(f"{short(a)} -> {short(b)} (line {graph[a][b]})" for a in group for b in sorted(graph[a])
                      if b in group)
    return f"{' -> '.join(short(name) for name in _cycle_path(group))}   [all edges: {edges}]"


def _reaches(start: str) -> set[str]:
    """Every kernelscope module `start` imports, directly or through others."""
    graph, seen, pending = _graph(), set(), [start]
    while pending:
        for child in graph[pending.pop()]:
            if child not in seen:
                seen.add(child)
                pending.append(child)
    return seen


def _in(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def _imports_of(package: str) -> list[tuple[str, str, int]]:
    """(module, dotted name imported, line) for every import statement of `package`'s modules."""
    return [(module, name, line) for module, path in sorted(_sources().items()) if _in(module, package)
            for name, line in _imported(module, path)]


# -- cycles ---------------------------------------------------------------------------------------


def test_the_import_graph_is_read():
    graph = _graph()
    assert "kernelscope.engine.recorder" in graph["kernelscope.engine.worker"]
    assert "kernelscope.engine.recording" in graph["kernelscope.engine.recorder"]
    # a function-level import counts, as does TYPE_CHECKING's
    assert "kernelscope.engine.devices.meta_models" in graph["kernelscope.engine.recorder"]
    assert "kernelscope.engine.recording" in graph["kernelscope.engine.run_assembly"]


def test_no_import_cycle_involves_the_engine_or_the_parsers():
    touching = [group for group in _cycles()
                if any(_in(module, package) for module in group for package in (ENGINE, PARSERS, TRACE_IMPORT))]
    assert touching == [], "\n".join(_describe(group) for group in touching)


def test_no_import_cycles_in_kernelscope():
    cycles = _cycles()
    assert cycles == [], f"{len(cycles)} import cycle(s):\n" + "\n".join(_describe(group) for group in cycles)


# -- torch and triton -----------------------------------------------------------------------------


def test_torch_and_triton_are_imported_only_by_the_engine():
    found = [f"{module}:{line} imports {name}" for module, name, line in _imports_of("kernelscope")
             if not _in(module, ENGINE) and name.split(".")[0] in ("torch", "triton")]
    assert found == []


# -- the parsers and trace_import -----------------------------------------------------------------


def test_the_parsers_reach_neither_the_engine_nor_torch():
    direct = [f"{module}:{line} imports {name}" for module, name, line in _imports_of(PARSERS)
              if name.split(".")[0] in ("torch", "triton") or _in(name, ENGINE)]
    assert direct == []
    reached = {name for module in _graph() if _in(module, PARSERS) for name in _reaches(module)}
    assert sorted(name for name in reached if _in(name, ENGINE)) == []
    # what the parsers build on imports no torch either
    outside = [f"{module}:{line} imports {name}" for module, name, line in _imports_of("kernelscope")
               if module in reached and name.split(".")[0] in ("torch", "triton")]
    assert outside == []


def test_trace_import_reaches_no_engine_module():
    reached = {name for module in _graph() if _in(module, TRACE_IMPORT) for name in _reaches(module)}
    assert sorted(name for name in reached if _in(name, ENGINE)) == []
    assert any(_in(name, PARSERS) for name in reached)  # it parses with the shared parsers


# -- render and the API ---------------------------------------------------------------------------


def test_render_does_not_import_the_api():
    found = [f"{module}:{line} imports {name}" for module, name, line in _imports_of("kernelscope.render")
             if _in(name, "kernelscope.api")]
    assert found == []


# -- rooms ----------------------------------------------------------------------------------------


def test_no_engine_parser_or_trace_import_module_is_over_600_lines():
    long = {module: length for module, path in _sources().items()
            if any(_in(module, package) for package in (ENGINE, PARSERS, TRACE_IMPORT))
            and (length := len(path.read_text(encoding="utf-8").splitlines())) > 600}
    assert long == {}


def test_every_engine_parser_and_store_package_has_a_map():
    """Each package's `__init__` docstring names every module in it (a newcomer's map)."""
    missing = {}
    for package, path in _sources().items():
        if path.name != "__init__.py" or not any(_in(package, root) for root in (ENGINE, PARSERS, STORE)):
            continue
        text = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
        members = sorted(child.stem if child.suffix == ".py" else child.name for child in path.parent.iterdir()
                         if (child.suffix == ".py" and child.name != "__init__.py")
                         or (child.is_dir() and (child / "__init__.py").exists()))
        unnamed = [member for member in members if f"`{member}" not in text]
        if not text or unnamed:
            missing[package] = unnamed or ["(no docstring)"]
    assert missing == {}
