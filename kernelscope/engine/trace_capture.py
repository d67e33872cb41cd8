"""Receive torch's structured-trace records in-process.

These are the records TORCH_TRACE writes to disk and tlparse reads: graphs, output
code, Inductor's provenance mappings, graph-break and recompile reasons. We attach a
handler to torch's trace logger for the duration of a recording, so nothing is
written to disk and nothing has to be parsed back. What a record's text says is read
by `kernelscope.compile_text` (shared with the TORCH_TRACE importer).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass

from kernelscope.compile_text.trace_records import record_kind

TRACE_LOGGER = "torch.__trace"


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
