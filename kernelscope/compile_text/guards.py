"""Guards and recompile reasons, read from torch's structured-trace records (docs/why.md).

torch says why a compile is reused or not in records tlparse reads too:
- `create_symbol`: a symbolic size (`s77`), its source (`L['x'].size()[0]`) and the line
  that made it;
- `guard_added_fast`: each guard the shape environment installs (`s77 <= 4`), with the
  user stack that caused it (empty when torch itself asked: Inductor, AOTAutograd) and
  the framework stack (who asked);
- `symbolic_shape_specialization`: a symbol made a constant (a size made static);
- `dynamo_cpp_guards_str`: Dynamo's guard tree for a compile, each guard with the line
  that caused it in a comment (`TENSOR_MATCH: check_tensor(L['x'], ...)  # n = x.shape[0]
  # model.py:21 in forward`);
- `recompile_reasons`: per recompile, each cached compile's failed guard (`0/1: 2 <=
  x.size()[0] <= 4  # n = x.shape[0]  # model.py:21 in forward ... and if n > 4:  #
  model.py:23 in forward`).

This module turns them into `Guard` and `GuardFailure` records; it never imports torch.
Frames' file names arrive interned (an index into the trace's string table): callers pass
the table.
"""
from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass

from kernelscope.run_record import Guard, GuardFailure, Recompile, SourceLocation

# Frames of the shape environment's own machinery: who *asked* for a guard is the first
# frame outside them (as torch's own recompile message names it).
_SHAPE_ENV_FILES = (
    "fx/experimental/symbolic_shapes.py", "fx/experimental/recording.py", "fx/experimental/sym_node.py",
    "_logging/", "torch/__init__.py", "utils/_sympy/", "sympy/", "_subclasses/fake_tensor.py",
    "_subclasses/fake_impls.py", "_prims_common/", "_refs/", "_decomp/", "_meta_registrations.py",
    "_ops.py", "utils/_stats.py", "utils/_python_dispatch.py", "_library/",
)
# "<comment code>  # <file>:<line> in <function>" as Dynamo writes a guard's user line.
# A failure names a second line after ") and ":
# `... (tensor.py in evaluate_expr)) and if n > 4:  # f.py:23 in forward`.
_LINE_COMMENT = re.compile(r"(?:#|\) and )\s*(?P<code>[^#]*?)\s*#\s*(?P<file>[^\s#]+?\.py):(?P<line>\d+) in "
                           r"(?P<function>[\w<>.]+)")
_TREE_GUARD = re.compile(r"^[|\s]*\+- (?P<kind>[A-Z][A-Z0-9_]*): (?P<rest>.*)$")
_LOCAL_SCOPE = re.compile(r"L\[\s*['\"](.*?)['\"]\s*\]")
_COMPILE_ID = re.compile(r"^\s*(?P<id>\d+/\d+(?:_\d+)?): (?P<text>.*)$", re.S)


@dataclass
class TraceEntry:
    """One structured-trace record as this module reads it."""

    kind: str
    metadata: dict
    payload: str | None
    compile_id: str  # "0/1" ("" outside a compile)


def strip_local_scope(text: str) -> str:
    """`L['x'].size()[0]` -> `x.size()[0]` (as Dynamo shows sources to users)."""
    return _LOCAL_SCOPE.sub(r"\1", text)


def frames(stack: Iterable[dict] | None, strings: dict[int, str]) -> list[SourceLocation]:
    """A trace stack (outermost first, file names interned) as source locations."""
    found: list[SourceLocation] = []
    for frame in stack if isinstance(stack, list) else []:
        if not isinstance(frame, dict):  # a damaged log: not a frame
            continue
        file = frame.get("filename")
        file = strings.get(file, "") if isinstance(file, int) else str(file or "")
        line = frame.get("line")
        found.append(SourceLocation(file, line if isinstance(line, int) else 0, str(frame.get("name") or ""),
                                    str(frame.get("loc") or "")))
    return found


def record_body(entry: TraceEntry, kind: str | None = None) -> dict:
    """The record's own metadata (`{"create_symbol": {...}}` -> `{...}`); {} in a damaged log."""
    body = entry.metadata.get(kind or entry.kind)
    return body if isinstance(body, dict) else {}


class GuardReader:
    """Reads a recording's guards from its trace records, in order.

    `skip`: directories whose frames are not the program's (torch's own): a user stack's
    line is its innermost frame outside them."""

    def __init__(self, strings: dict[int, str], skip: tuple[str, ...]):
        self.strings = strings
        self.skip = skip
        # compile id -> symbol -> (its source, the line that made it)
        self.symbols: dict[str, dict[str, tuple[str, SourceLocation | None]]] = {}
        self.user_files: set[str] = set()
        self.guards: list[Guard] = []

    def read(self, entries: Iterable[TraceEntry]) -> list[Guard]:
        entries = list(entries)
        for entry in entries:  # first the symbols and the user files the stacks name
            if entry.kind == "create_symbol":
                self._symbol(entry)
            elif entry.kind in ("dynamo_start", "guard_added_fast"):
                stack = record_body(entry).get("stack" if entry.kind == "dynamo_start" else "user_stack")
                self.user_files.update(frame.file for frame in self._user_frames(frames(stack, self.strings)))
        for entry in entries:
            if entry.kind in ("guard_added_fast", "guard_added"):
                self._shape_guard(entry, record_body(entry))
            elif entry.kind == "symbolic_shape_specialization":
                self._specialization(entry, record_body(entry))
            elif entry.kind == "dynamo_cpp_guards_str" and entry.payload:
                self._dynamo_guards(entry)
        return self.guards

    # -- the shape environment -------------------------------------------------------------

    def _symbol(self, entry: TraceEntry) -> None:
        body = record_body(entry, "create_symbol")
        user = frames(body.get("user_stack"), self.strings)
        line = self._user_line(user)
        if line is not None:
            self.user_files.add(line.file)
        self.symbols.setdefault(entry.compile_id, {})[str(body.get("symbol"))] = (
            strip_local_scope(str(body.get("source") or "")), line)

    def _shape_guard(self, entry: TraceEntry, body: dict) -> None:
        raw = str(body.get("expr") or "")
        known = self.symbols.get(entry.compile_id, {})
        used = {symbol: known[symbol][0] for symbol in re.findall(r"\b[a-z]+\d+\b", raw) if symbol in known}
        user = frames(body.get("user_stack"), self.strings)
        line, via = self._user_line(user), "guard"
        if line is None:  # torch asked (Inductor, AOTAutograd): the line that made the symbol
            line = next((known[symbol][1] for symbol in used if known[symbol][1] is not None), None)
            via = "symbol" if line is not None else ""
        if line is not None:
            self.user_files.add(line.file)
        self.guards.append(Guard(
            compile_id=entry.compile_id, kind="shape", expression=_in_user_names(raw, used), raw=raw,
            symbols=used, added_by=self._added_by(user, frames(body.get("stack"), self.strings)),
            source=line, source_via=via, stack=self._user_frames(user)))

    def _specialization(self, entry: TraceEntry, body: dict) -> None:
        raw_sources = body.get("sources")
        sources = [strip_local_scope(str(source)) for source in (raw_sources if isinstance(raw_sources, list) else [])]
        user = frames(body.get("user_stack"), self.strings)
        line = self._user_line(user)
        value, reason = str(body.get("value", "")), str(body.get("reason") or "")
        self.guards.append(Guard(
            compile_id=entry.compile_id, kind="specialization",
            expression=(f"{sources[0] if sources else body.get('symbol')} == {value}"
                        + (f" ({reason})" if reason else "")),
            raw=f"{body.get('symbol')} = {value}", symbols={str(body.get("symbol")): sources[0]} if sources else {},
            added_by=self._added_by(user, frames(body.get("stack"), self.strings)),
            source=line, source_via="guard" if line else "", stack=self._user_frames(user)))

    def _user_frames(self, stack: list[SourceLocation]) -> list[SourceLocation]:
        return [frame for frame in stack if frame.file and not frame.file.startswith(self.skip)]

    def _user_line(self, stack: list[SourceLocation]) -> SourceLocation | None:
        own = self._user_frames(stack)
        return own[-1] if own else None

    def _added_by(self, user: list[SourceLocation], framework: list[SourceLocation]) -> str:
        if user:
            if user[-1].file.startswith(self.skip):  # traced library code (torch.nn, ...)
                return f"library ({_short(user[-1].file)}:{user[-1].line} in {user[-1].function})"
            return "user code"
        for frame in reversed(framework):  # innermost first: the first frame outside the shape env
            short = _short(frame.file)
            if any(part in frame.file for part in _SHAPE_ENV_FILES):
                continue
            return f"{_component(frame.file)} ({short}:{frame.line} in {frame.function})"
        return "torch"

    # -- Dynamo's guard tree ---------------------------------------------------------------

    def _dynamo_guards(self, entry: TraceEntry) -> None:
        for text in (entry.payload or "").splitlines():
            match = _TREE_GUARD.match(text)
            if match is None:
                continue
            rest = match["rest"]
            comment = _LINE_COMMENT.search(rest)
            code = rest[: rest.index("#")].strip() if "#" in rest else rest.strip()
            line = None
            if comment is not None:
                line = self._known_file(comment["file"], int(comment["line"]), comment["function"], comment["code"])
            code = _machine_free(code)
            shape = match["kind"] == "LAMBDA_GUARD" and ".size()" in code  # the shape guards, all in one check
            self.guards.append(Guard(
                compile_id=entry.compile_id, kind=match["kind"], expression=strip_local_scope(code), raw=code,
                added_by="shape environment" if shape else "dynamo", source=line,
                source_via="guard" if line else ""))

    def _known_file(self, short: str, line: int, function: str, code: str) -> SourceLocation | None:
        """Dynamo writes a guard's file shortened (`examples/model.py`): the user file that
        ends so, among those the recording's stacks name."""
        for file in self.user_files:
            if file == short or file.endswith("/" + short):
                return SourceLocation(file, line, function, code)
        return None


def failures(payload: str | None, values: dict[str, dict[str, str]]) -> list[GuardFailure]:
    """A `recompile_reasons` payload (a JSON list of "0/1: <failed guard>", or one such
    string) as failures; `values` maps a failure's text to what the failing call had."""
    if not payload:
        return []
    try:
        reasons = json.loads(payload)
    except ValueError:
        reasons = payload
    if isinstance(reasons, str):
        reasons = [reasons]
    found = []
    for reason in reasons:
        match = _COMPILE_ID.match(str(reason))
        failed, text = (match["id"], match["text"]) if match else ("", str(reason))
        guard = text.split("  #", 1)[0].split("\nUser stack trace:", 1)[0].strip()
        lines = [SourceLocation(m["file"], int(m["line"]), m["function"], m["code"].strip())
                 for m in _LINE_COMMENT.finditer(text)]
        found.append(GuardFailure(failed, guard, dict(values.get(str(reason).strip(), {})), lines))
    return found


def resolve_lines(found: list[GuardFailure], user_files: Iterable[str]) -> None:
    """Dynamo names a failure's lines by shortened paths: the user file each stands for."""
    files = list(user_files)
    for failure in found:
        failure.lines = [
            SourceLocation(next((f for f in files if f == line.file or f.endswith("/" + line.file)), line.file),
                           line.line, line.function, line.code)
            for line in failure.lines
        ]


def attach_failures(recompiles: list[Recompile], entries: Iterable[TraceEntry], values: dict[str, dict[str, str]],
                    user_files: set[str], guards: list[Guard]) -> list[Recompile]:
    """Each recompile with the guards that failed (torch's `recompile_reasons`), the values
    the failing call had (`values`: a live recording's, none for a log) and the user lines
    Dynamo names for them (a tensor check Dynamo names no line for: the line of the failed
    compile's guard on that tensor)."""
    by_id = {recompile.compile_id: recompile for recompile in recompiles}
    for entry in entries:
        if entry.kind != "artifact:recompile_reasons":
            continue
        compile_id = entry.compile_id.split("_", 1)[0]
        recompile = by_id.get(compile_id)
        if recompile is None:  # torch wrote the reasons but no metrics: a recompile all the same
            recompile = by_id[compile_id] = Recompile(compile_id, "")
            recompiles.append(recompile)
        found = failures(entry.payload, values)
        resolve_lines(found, user_files)
        for failure in found:
            if not failure.lines:
                failure.lines = _tensor_guard_lines(failure, guards)
        recompile.failures = found
        if not recompile.reason:
            recompile.reason = "; ".join(f"{f.failed_compile_id}: {f.guard}" for f in found)
    return recompiles


def _tensor_guard_lines(failure: GuardFailure, guards: list[Guard]) -> list:
    names = {name for name, _, _ in sources_in(failure.guard)}
    return list(dict.fromkeys(
        guard.source for guard in guards
        if guard.compile_id == failure.failed_compile_id and guard.kind == "TENSOR_MATCH"
        and guard.source is not None and any(guard.expression.startswith(f"check_tensor({n},") for n in names)))


# torch's own files, wherever it is installed: `<prefix>torch/_dynamo/...`
_TORCH_DIR = re.compile(r"^(.*[/\\]torch[/\\])(?:_dynamo|_inductor|_functorch|_subclasses|_logging|_ops\.py|fx|nn|"
                        r"utils|_refs|_decomp|_prims_common|overrides\.py|__init__\.py)")


def torch_dirs(entries: Iterable[TraceEntry]) -> tuple[str, ...]:
    """The torch install directories a log's stacks name (a log from another machine: its
    torch is not this one's), for GuardReader's `skip`."""
    found: dict[str, None] = {}
    for entry in entries:
        for body in entry.metadata.values():
            if not isinstance(body, dict):
                continue
            for key in ("stack", "user_stack"):
                stack = body.get(key)
                for frame in stack if isinstance(stack, list) else []:
                    match = _TORCH_DIR.match(str(frame.get("filename", ""))) if isinstance(frame, dict) else None
                    if match:
                        found.setdefault(match[1])
    return tuple(found)


_SIZE_SOURCE = re.compile(r"\b([A-Za-z_]\w*)\.(size|stride)\(\)\[(\d+)\]")
_TENSOR_MISMATCH = re.compile(r"tensor '([A-Za-z_]\w*)' (size|stride) mismatch at index (\d+)")


def sources_in(text: str) -> list[tuple[str, str, int]]:
    """The (local name, "size" | "stride", dimension) a failed guard's text checks."""
    found = [(m[1], m[2], int(m[3])) for m in _SIZE_SOURCE.finditer(text)]
    found += [(m[1], m[2], int(m[3])) for m in _TENSOR_MISMATCH.finditer(text)]
    return list(dict.fromkeys(found))


_OBJECT_ID = re.compile(r"(___check_(?:obj|type)_id\(.+?, )\d+(\))")
# Dynamo names the globals a guard reads with a counter of the process (`__builtins_dict___331`)
_GLOBAL_COUNTER = re.compile(r"\b(__\w+?___)\d+\b")


def _machine_free(code: str) -> str:
    """A Dynamo guard's text without what differs between two processes: object ids
    (`___check_obj_id(G['torch'], <id>)`), the counters in the names of the globals it reads
    (`G['__builtins_dict___N']`) and the global state's values (thread count...)."""
    code = _OBJECT_ID.sub(r"\1<id>\2", code)
    code = _GLOBAL_COUNTER.sub(r"\1N", code)
    return code.split(" against {", 1)[0] if code.startswith("___check_global_state()") else code


def _in_user_names(expression: str, sources: dict[str, str]) -> str:
    for symbol, source in sources.items():
        if source:
            expression = re.sub(rf"\b{re.escape(symbol)}\b", source, expression)
    return expression


def _short(file: str) -> str:
    marker = "/torch/"
    return file[file.rindex(marker) + len(marker):] if marker in file else file


def _component(file: str) -> str:
    for part, name in (("/_inductor/", "inductor"), ("/_functorch/", "aot_autograd"), ("/_dynamo/", "dynamo"),
                       ("/_export/", "export")):
        if part in file:
            return name
    return "torch" if "/torch/" in file else "library"
