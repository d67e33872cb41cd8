"""Read a TORCH_TRACE log into records, tolerating damage.

The format (torch/_logging/_internal.py, `TorchLogsFormatter` in trace mode and
`trace_structured`): every record is one line

    V1122 21:48:01.218000 4250 torch/_inductor/compile_fx.py:2625] {"artifact": ...}

a glog-style prefix and one JSON object of metadata, followed, when the metadata
has `has_payload` (the payload's md5), by the payload's lines, each starting with
a tab. `{"str": [text, index]}` records intern strings that stack frames refer to
by index. Blank lines are never part of a record (a blank payload line is a lone
tab) and are skipped, as tlparse does.

Damage is counted, never fatal, unless `strict`: a line that is neither a record
nor a payload line, metadata that is not a JSON object, a payload whose md5 does
not match (truncated or edited), a compile id that is not a non-negative integer.
Payloads are decoded and checked only for the records a caller asks for, so the
bulk of a log (chromium events, guards, tensor descriptions) costs one scan.
"""
from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from kernelscope.compile_text.trace_records import record_kind
from kernelscope.errors import UserError

_PREFIX = re.compile(rb"(?:\[rank\d+\]:)?[VIWEC]\d{4} \d{2}:\d{2}:\d{2}\.\d{6} \d+ [^:\]]+:\d+\] ")
_COMPILE_ID_KEYS = ("frame_id", "frame_compile_id", "attempt", "compiled_autograd_id")
MAX_PROBLEMS_KEPT = 20
PROGRESS_EVERY_BYTES = 4 << 20


class TraceLogError(UserError):
    """A damaged TORCH_TRACE log under --strict (the message names file:line)."""

    exit_code = 6


@dataclass
class TraceLogRecord:
    """A structured-trace record read from a TORCH_TRACE log (a live recording receives the
    same records in-process: engine/trace_capture.py's TraceRecord)."""

    kind: str  # "inductor_output_code", "artifact:<name>", ... (see record_kind)
    metadata: dict
    payload: str | None  # None when not asked for, absent, or damaged
    line: int  # 1-based line of the record's metadata
    compile_id: tuple[int, int, int] | None  # (frame, frame compile, attempt)
    compiled_autograd_id: int | None = None
    rank: int | None = None


@dataclass
class Problem:
    line: int
    what: str


@dataclass
class ReadStats:
    lines: int = 0
    bytes: int = 0
    records: int = 0
    kinds: Counter = field(default_factory=Counter)
    malformed: int = 0  # lines that are not records, bad JSON, bad compile ids
    bad_payloads: int = 0  # md5 mismatch: truncated or edited payloads
    problems: list[Problem] = field(default_factory=list)  # the first few, for messages

    def note(self, line: int, what: str) -> None:
        if len(self.problems) < MAX_PROBLEMS_KEPT:
            self.problems.append(Problem(line, what))

    def to_dict(self) -> dict:
        return {
            "lines": self.lines,
            "bytes": self.bytes,
            "records": self.records,
            "malformed_lines": self.malformed,
            "bad_payloads": self.bad_payloads,
            "problems": [f"line {p.line}: {p.what}" for p in self.problems],
        }


class _Damage(Exception):
    pass


def read_log(
    path: Path,
    wants_payload: Callable[[str], bool],
    stats: ReadStats,
    strict: bool = False,
    on_progress: Callable[[int], None] | None = None,
) -> Iterator[TraceLogRecord]:
    """Yield the records of one log file, in order.

    `wants_payload(kind)` says which records need their payload (decoded and
    md5-checked); others get `payload=None` and cost almost nothing.
    """
    interned: dict[int, str] = {}
    pending: tuple[bytes, int] | None = None  # (metadata JSON, line)
    payload_lines: list[bytes] = []
    next_progress = PROGRESS_EVERY_BYTES

    def fail(line: int, what: str) -> None:
        if strict:
            raise TraceLogError(f"{path}:{line}: {what} (drop --strict to skip damaged records)")
        stats.note(line, what)

    with open(path, "rb") as stream:
        for number, raw in enumerate(stream, 1):
            stats.lines = number
            stats.bytes += len(raw)
            if on_progress is not None and stats.bytes >= next_progress:
                on_progress(stats.bytes)
                next_progress = stats.bytes + PROGRESS_EVERY_BYTES
            if raw[:1] == b"\t":
                if pending is not None:
                    payload_lines.append(raw)
                    continue
                stats.malformed += 1
                fail(number, "payload line without a record before it")
                continue
            if pending is not None:
                record = _finish(pending, payload_lines, interned, wants_payload, stats, fail)
                pending, payload_lines = None, []
                if record is not None:
                    yield record
            if raw.strip() == b"":
                continue
            prefix = _PREFIX.match(raw)
            if prefix is None:
                stats.malformed += 1
                fail(number, "not a structured-trace record (no glog prefix)")
                continue
            pending = (raw[prefix.end():], number)
        if pending is not None:
            record = _finish(pending, payload_lines, interned, wants_payload, stats, fail)
            if record is not None:
                yield record
    if on_progress is not None:
        on_progress(stats.bytes)


def _finish(pending, payload_lines, interned, wants_payload, stats, fail) -> TraceLogRecord | None:
    text, line = pending
    try:
        metadata = json.loads(text)
    except json.JSONDecodeError as error:
        stats.malformed += 1
        fail(line, f"metadata is not valid JSON ({error.msg} at column {error.colno}; truncated line?)")
        return None
    except UnicodeDecodeError:  # json.loads decodes the bytes first
        stats.malformed += 1
        fail(line, "metadata is not UTF-8")
        return None
    if not isinstance(metadata, dict) or not metadata:
        stats.malformed += 1
        fail(line, "metadata is not a JSON object")
        return None
    if "str" in metadata:
        entry = metadata["str"]
        if isinstance(entry, list) and len(entry) == 2 and isinstance(entry[0], str) and _is_index(entry[1]):
            interned[entry[1]] = entry[0]
        else:
            stats.malformed += 1
            fail(line, "string-interning record is not [text, index]")
        return None
    try:
        compile_id, autograd_id, rank = _context(metadata)
    except _Damage as damage:
        stats.malformed += 1
        fail(line, str(damage))
        return None
    kind = record_kind(metadata)
    stats.records += 1
    stats.kinds[kind] += 1
    payload = None
    expected = metadata.get("has_payload")
    if expected is not None and wants_payload(kind):
        data = _join_payload(payload_lines)
        if not isinstance(expected, str) or hashlib.md5(data, usedforsecurity=False).hexdigest() != expected:
            stats.bad_payloads += 1
            fail(line, f"payload of {kind} does not match its md5 (truncated or edited)")
            return None
        try:
            payload = data.decode("utf-8")
        except UnicodeDecodeError:
            stats.bad_payloads += 1
            fail(line, f"payload of {kind} is not UTF-8")
            return None
    if "stack" in metadata and isinstance(metadata["stack"], list):
        metadata["stack"] = [_unintern(frame, interned) for frame in metadata["stack"]]
    for body in metadata.values():  # a record's own stacks: `{"guard_added_fast": {"user_stack": [...]}}`
        if isinstance(body, dict):
            for key in ("stack", "user_stack"):
                if isinstance(body.get(key), list):
                    body[key] = [_unintern(frame, interned) for frame in body[key]]
    return TraceLogRecord(kind, metadata, payload, line, compile_id, autograd_id, rank)


def _join_payload(lines: list[bytes]) -> bytes:
    """Payload lines (`\\t` + text + `\\n`) back into the payload torch hashed."""
    if not lines:
        return b""
    data = b"".join(lines)
    data = data[1:-1] if data.endswith(b"\n") else data[1:]
    return data.replace(b"\n\t", b"\n")


def _is_index(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _context(metadata: dict) -> tuple[tuple[int, int, int] | None, int | None, int | None]:
    for key in _COMPILE_ID_KEYS + ("rank",):
        if key in metadata and metadata[key] is not None and not _is_index(metadata[key]):
            raise _Damage(f"{key} is {metadata[key]!r}, not a non-negative integer")
    frame = metadata.get("frame_id")
    compile_id = None
    if frame is not None:
        compile_id = (frame, metadata.get("frame_compile_id") or 0, metadata.get("attempt") or 0)
    return compile_id, metadata.get("compiled_autograd_id"), metadata.get("rank")


def _unintern(frame, interned: dict[int, str]):
    if isinstance(frame, dict) and _is_index(frame.get("filename")):
        return {**frame, "filename": interned.get(frame["filename"], f"<unknown string {frame['filename']}>")}
    return frame
