"""Dynamo's printed stack traces (`File "...", line N, in fn` frames), read as source locations.

A node's `stack_trace`, a kernel's stack trace artifact and an error's "from user code:"
text all print frames this way. Which frames are the user's is decided by path prefixes
the caller gives (torch's own directory, in a live recording: `engine/fx_nodes.skip_prefixes`).
"""
from __future__ import annotations

import re

from kernelscope.run_record import SourceLocation

_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<function>\S+)\s*$')


def parse_frames(stack_trace: str | None) -> list[SourceLocation]:
    """Every `File "...", line N, in fn` frame of a printed traceback, outermost first."""
    if not stack_trace:
        return []
    frames: list[SourceLocation] = []
    lines = stack_trace.splitlines()
    for index, line in enumerate(lines):
        match = _FRAME.match(line)
        if not match:
            continue
        code = lines[index + 1].strip() if index + 1 < len(lines) else ""
        frames.append(
            SourceLocation(
                file=match["file"], line=int(match["line"]), function=match["function"], code=code
            )
        )
    return frames


def user_frames(stack_trace: str | None, skip_prefixes: tuple[str, ...]) -> list[SourceLocation]:
    """The frames of a Dynamo stack trace that are not torch's own code, outermost first.

    Library frames (transformers' `modeling_*.py`) are user code here: they are the
    lines that produced the op. A trace made only of torch frames keeps its innermost
    one, so a node is never left without a line when Dynamo recorded one.
    """
    frames = parse_frames(stack_trace)
    kept = [frame for frame in frames if not frame.file.startswith(skip_prefixes)]
    if not kept and frames:
        kept = frames[-1:]
    return kept


def user_frame(stack_trace: str | None, skip_prefixes: tuple[str, ...]) -> SourceLocation | None:
    """The innermost user frame of a Dynamo stack trace (the node's direct line)."""
    frames = user_frames(stack_trace, skip_prefixes)
    return frames[-1] if frames else None
