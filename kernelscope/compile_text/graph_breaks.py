"""A `dynamo_graph_break_reason` artifact's text, read as a GraphBreak.

Shared by a live recording (engine/run_assembly.py) and the TORCH_TRACE importer
(trace_import/to_run.py), so it reads text only.
"""
from __future__ import annotations

import re

from kernelscope.compile_text.stack_traces import parse_frames
from kernelscope.run_record import GraphBreak, SourceLocation


def parse_graph_break(payload: str | None, compile_id: tuple | None) -> GraphBreak:
    """A `dynamo_graph_break_reason` artifact's text as a GraphBreak, keeping all that
    Dynamo explains: what it could not trace, the explanation, the hints (configs that
    would avoid the break), its documentation page and the user code traceback."""
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

