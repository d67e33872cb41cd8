"""A printed FX graph (`GraphModule.print_readable()`): the line each node is on.

The engine writes the printed graph as a run's `graphs/<id>/*.py` file and links each
node to its line; trace_import reads the same text from a log.
"""
from __future__ import annotations

import re

_NODE_LINE = re.compile(r"^\s+(\w+)(?:: \"[^\"]*\")? = ")
_SIGNATURE = re.compile(r"^\s*def forward\(")


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
