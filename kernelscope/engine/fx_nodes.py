"""FX nodes as kernelscope records: where in user source a node came from, and
where it sits in the printed graph file."""
from __future__ import annotations

import os
import re

from kernelscope.record import FxNode, SourceLocation

_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<function>\S+)\s*$')
_NODE_LINE = re.compile(r"^\s+(\w+)(?:: \"[^\"]*\")? = ")
_SIGNATURE = re.compile(r"^\s*def forward\(")


def _torch_dir() -> str:
    import torch

    return os.path.dirname(os.path.abspath(torch.__file__)) + os.sep


def user_frame(stack_trace: str | None, skip_prefixes: tuple[str, ...]) -> SourceLocation | None:
    """The innermost frame of a Dynamo stack trace that is not torch's own code.

    For a model built on a library (transformers) that frame is the library's
    source line: that is the line that produced the op.
    """
    if not stack_trace:
        return None
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
    for frame in reversed(frames):
        if not frame.file.startswith(skip_prefixes):
            return frame
    return frames[-1] if frames else None


def node_lines(printed_graph: str) -> dict[str, int]:
    """Map node name -> line in `GraphModule.print_readable()` output."""
    lines: dict[str, int] = {}
    signature_line = 0
    for number, line in enumerate(printed_graph.splitlines(), 1):
        if not signature_line and _SIGNATURE.match(line):
            signature_line = number
            continue
        match = _NODE_LINE.match(line)
        if match and match.group(1) not in lines:
            lines[match.group(1)] = number
        elif line.strip().startswith("return ") and signature_line:
            lines.setdefault("output", number)
    lines["__signature__"] = signature_line
    return lines


def target_name(target) -> str:
    if isinstance(target, str):
        return target
    text = str(target)
    if text.startswith(("aten.", "prims.", "inductor.", "quantized.")) or "::" in text:
        return text
    name = getattr(target, "__name__", text)
    module = getattr(target, "__module__", "") or ""
    return f"{module}.{name}" if module and module != "builtins" else name


def to_fx_node(name, op, target, stack_trace, graph_lines, skip_prefixes) -> FxNode:
    source = user_frame(stack_trace, skip_prefixes)
    line = graph_lines.get(name) or (graph_lines["__signature__"] if op == "placeholder" else 0)
    return FxNode(
        name=name,
        op=op,
        target=target,
        source=source,
        source_via="stack_trace" if source else "",
        graph_line=line,
    )


def skip_prefixes() -> tuple[str, ...]:
    return (_torch_dir(),)
