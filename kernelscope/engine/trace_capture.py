"""Receive torch's structured-trace records in-process.

These are the records TORCH_TRACE writes to disk and tlparse reads: graphs, output
code, Inductor's provenance mappings, graph-break and recompile reasons. We attach a
handler to torch's trace logger for the duration of a recording, so nothing is
written to disk and nothing has to be parsed back.
"""
from __future__ import annotations

import logging
import re
from dataclasses import dataclass

from kernelscope.engine.fx_nodes import parse_frames
from kernelscope.record import GraphBreak, SourceLocation

TRACE_LOGGER = "torch.__trace"

# Metadata keys that are not the record's kind.
_CONTEXT_KEYS = {
    "frame_id", "frame_compile_id", "attempt", "has_payload", "compiled_autograd_id",
    "rank", "stack", "subgraph_name",
}


@dataclass
class TraceRecord:
    kind: str  # "artifact:<name>", "graph_dump:<name>", or the record name
    metadata: dict
    payload: str | None

    @property
    def compile_id(self) -> tuple[int, int, int] | None:
        frame = self.metadata.get("frame_id")
        if frame is None:
            return None
        return (frame, self.metadata.get("frame_compile_id") or 0, self.metadata.get("attempt", 0))


def record_kind(metadata: dict) -> str:
    names = [key for key in metadata if key not in _CONTEXT_KEYS]
    kind = names[0] if names else "unknown"
    body = metadata.get(kind)
    if kind == "artifact" and isinstance(body, dict):
        return f"artifact:{body.get('name')}"
    if kind == "graph_dump" and isinstance(body, dict):
        return f"graph_dump:{body.get('name')}"
    return kind


class _Handler(logging.Handler):
    def __init__(self, sink: list[TraceRecord]):
        super().__init__(level=logging.DEBUG)
        self.sink = sink

    def emit(self, record: logging.LogRecord) -> None:
        metadata = getattr(record, "metadata", None)
        if not isinstance(metadata, dict):
            return  # string-interning records ("str") carry a tuple
        self.sink.append(TraceRecord(record_kind(metadata), metadata, getattr(record, "payload", None)))


class TraceCapture:
    """Context manager: collects structured-trace records while it is active."""

    def __init__(self):
        self.records: list[TraceRecord] = []
        self._handler = _Handler(self.records)
        self._logger = logging.getLogger(TRACE_LOGGER)
        self._previous_level = None

    def __enter__(self):
        self._previous_level = self._logger.level
        self._logger.setLevel(logging.DEBUG)
        self._logger.addHandler(self._handler)
        return self

    def __exit__(self, *exc):
        self._logger.removeHandler(self._handler)
        self._logger.setLevel(self._previous_level)

    def of_kind(self, kind: str) -> list[TraceRecord]:
        return [record for record in self.records if record.kind == kind]


def parse_graph_break(payload: str | None, compile_id: tuple | None) -> GraphBreak:
    """A `dynamo_graph_break_reason` artifact's text as a GraphBreak, keeping all that
    Dynamo explains: what it could not trace, the explanation, the hints (configs that
    would avoid the break), its documentation page and the user code traceback.
    Shared with the TORCH_TRACE importer, so it reads text only."""
    text = payload or ""
    location = None
    match = re.search(r"Graph break in user code at (.+):(\d+)", text)
    if match:
        location = SourceLocation(match.group(1), int(match.group(2)))
    head, _, rest = text.partition("User code traceback:")
    stack = parse_frames(rest.partition("Traceback (most recent call last):")[0])
    if location is not None and stack and (stack[-1].file, stack[-1].line) == (location.file, location.line):
        location = stack[-1]  # the same line, with its function and code
    return GraphBreak(
        reason=_break_reason(head),
        source=location,
        compile_id=f"{compile_id[0]}/{compile_id[1]}" if compile_id else "",
        explanation=" ".join(re.findall(r"^\s*Explanation: (.+)$", head, re.MULTILINE)).strip(),
        hints=[hint.strip() for hint in re.findall(r"^\s*Hint: (.+)$", head, re.MULTILINE)],
        url=url.group(1) if (url := re.search(r"please visit: (\S+)", head)) else "",
        stack=stack,
    )


def _break_reason(head: str) -> str:
    """What Dynamo could not trace: the message after "Graph Break Reason: …:" (newer
    torch puts it on its own line), else the reason line itself, else the first line."""
    lines = [line.strip() for line in head.splitlines()]
    for index, line in enumerate(lines):
        if not line.startswith("Graph Break Reason:"):
            continue
        reason = line.removeprefix("Graph Break Reason:").strip()
        if reason.endswith(":"):
            following = next((other for other in lines[index + 1:] if other), "")
            if following and not following.startswith(("Explanation:", "Hint:", "Developer debug")):
                return following
        return reason
    first = next((line for line in lines if line and not line.startswith("Graph break in user code")), "")
    return first

