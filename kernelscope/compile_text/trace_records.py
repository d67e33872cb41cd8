"""Structured-trace records (what TORCH_TRACE writes and tlparse reads), told apart by kind.

A record is a JSON object of metadata (and maybe a payload): one key names what it is
(`artifact`, `graph_dump`, `compilation_metrics`, ...), the others say where it was
made (frame, compile id, rank). The engine receives records in-process
(`engine/trace_capture.py`); trace_import reads them from a log (`trace_import/log_reader.py`).
"""
from __future__ import annotations

# Metadata keys that are not the record's kind.
_CONTEXT_KEYS = {
    "frame_id", "frame_compile_id", "attempt", "has_payload", "compiled_autograd_id",
    "rank", "stack", "subgraph_name",
}


def record_kind(metadata: dict) -> str:
    """"artifact:<name>", "graph_dump:<name>", or the record's name ("unknown" when it has none)."""
    names = [key for key in metadata if key not in _CONTEXT_KEYS]
    kind = names[0] if names else "unknown"
    body = metadata.get(kind)
    if kind == "artifact" and isinstance(body, dict):
        return f"artifact:{body.get('name')}"
    if kind == "graph_dump" and isinstance(body, dict):
        return f"graph_dump:{body.get('name')}"
    return kind
