"""Store answers as LSP types: 1-based stored lines <-> 0-based editor positions,
stored paths -> URIs and links, and the checks every request makes of its parameters (a
position inside the document, a run id)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams

if TYPE_CHECKING:  # the store side loads after `initialize` (see server.py)
    from kernelscope.lsp.provenance import Document, Provenance


def checked_line(document: Document, position: types.Position) -> int:
    """The 1-based line of the document a position is on; InvalidParams when outside it."""
    count = len(document.lines)
    if position.line >= max(count, 1):
        raise JsonRpcInvalidParams(
            f"line {position.line} is out of range for {document.location.path} "
            f"({count} lines; positions are 0-based)")
    return position.line + 1


def recorded_line(document: Document, position: types.Position) -> int | None:
    """The line of the run that the position is on (None: a line changed since the run)."""
    return document.line_map.recorded_line(checked_line(document, position))


def line_range(line: int, text: str | None = None) -> types.Range:
    """The whole of 1-based `line` as a 0-based range: to the end of its text when
    known, else to the start of the next line (LSP's whole-line form)."""
    if text is None:
        return types.Range(start=types.Position(line=line - 1, character=0),
                           end=types.Position(line=line, character=0))
    return types.Range(start=types.Position(line=line - 1, character=0),
                       end=types.Position(line=line - 1, character=len(text)))


def location(provenance: Provenance, stored_path: str, line: int, workspace: str | None = None,
             line_map=None) -> dict | None:
    """A stored file and 1-based line as an LSP Location in JSON form (whole line; None
    when the line moved away). Plain dicts: answers can hold thousands of them, and
    building lsprotocol objects costs 50 times more."""
    if line_map is not None:
        current = line_map.current_line(line)
        if current is None:
            return None
        line = current
    return line_location(provenance, stored_path, line, workspace)


def line_location(provenance: Provenance, stored_path: str, line: int, workspace: str | None = None) -> dict:
    """`location` of a line as recorded (no line map: never None)."""
    return {"uri": provenance.uri_for(stored_path, workspace),
            "range": {"start": {"line": line - 1, "character": 0}, "end": {"line": line, "character": 0}}}


def range_of(loc: dict | None) -> dict | None:
    """The range of a location in JSON form (None for None)."""
    return None if loc is None else loc["range"]


def typed(loc: dict) -> types.Location:
    start, end = loc["range"]["start"], loc["range"]["end"]
    return types.Location(uri=loc["uri"], range=types.Range(start=types.Position(**start), end=types.Position(**end)))


def link(provenance: Provenance, workspace: str | None = None):
    """(stored path, 1-based line) -> a file URI with a `#L<line>` fragment, as VS Code opens it."""
    def make(stored_path: str, line: int | None) -> str:
        uri = provenance.uri_for(stored_path, workspace)
        return f"{uri}#L{line}" if line else uri

    return make


def param(params, *names, default=None):
    """A field of a custom request's params, whether pygls gave a dict or an object."""
    value = params
    for name in names:
        if value is None:
            return default
        value = value.get(name) if isinstance(value, dict) else getattr(value, name, None)
    return default if value is None else value


def text_position(params) -> tuple[str, types.Position]:
    """(uri, position) of a custom request's {textDocument: {uri}, position}."""
    uri = param(params, "textDocument", "uri")
    line = param(params, "position", "line")
    character = param(params, "position", "character", default=0)
    if not isinstance(uri, str) or not isinstance(line, int) or line < 0 or not isinstance(character, int):
        raise JsonRpcInvalidParams("expected {textDocument: {uri}, position: {line, character}} "
                                   "with a 0-based line")
    return uri, types.Position(line=line, character=max(character, 0))


def checked_run_id(value):
    """A `runId` parameter: a run id, or None when not given; InvalidParams otherwise."""
    if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
        raise JsonRpcInvalidParams(f"runId must be a run id, got {value!r}")
    return value
