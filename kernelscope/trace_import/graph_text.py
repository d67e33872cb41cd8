"""FX nodes from a printed graph (`GraphModule.print_readable()`), as torch logs it.

A live recording reads nodes from the GraphModule; a log only has its text:

    def forward(self, arg0_1: "f32[128, 64][64, 1]cuda:0", ...):
        # File: /work/model.py:20 in forward, code: h = self.fc1(x)
        permute: "f32[64, 128][1, 64]cuda:0" = torch.ops.aten.permute.default(arg0_1, [1, 0]);  arg0_1 = None
        getitem: "f32[16, 1][1, 1]cuda:0" = var_mean[0]
        return (div,)

Placeholders come from the signature (or `l_x_ = L_x_` lines in Dynamo graphs),
each node's source line from the `# File:` comment above its group, inputs from
the names its right-hand side mentions. Only the top-level `forward` is read.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from kernelscope.compile_text.printed_graph import node_lines
from kernelscope.run_record import FxNode, SourceLocation

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'')
_DEF = re.compile(r"^(\s*)def forward\(")
_ASSIGN = re.compile(r"^(\w+)(?:\s*:\s*\"[^\"]*\")?\s*=\s*(.+)$")
_FILE_COMMENT = re.compile(r"File: (.+):(\d+) in (.+?), code: (.*)$")
_IDENT = re.compile(r"(?<![.\w])[A-Za-z_]\w*\b(?!\s*=[^=])")  # not attributes, not keywords
_CALL = re.compile(r"^([\w.]+)\(")
_GETITEM = re.compile(r"^(\w+)\[")
_BINARY = {
    "+": "add", "-": "sub", "*": "mul", "//": "floordiv", "/": "truediv", "%": "mod", "**": "pow",
    "==": "eq", "!=": "ne", "<=": "le", ">=": "ge", "<": "lt", ">": "gt", "&": "and_", "|": "or_",
}
_BINARY_RE = re.compile(r"^(\w+|-?[\d.]+) (\*\*|//|==|!=|<=|>=|[-+*/%<>&|]) (\w+|-?[\d.]+)$")


@dataclass
class ParsedGraph:
    nodes: list[FxNode] = field(default_factory=list)
    inputs: dict[str, list[str]] = field(default_factory=dict)  # node -> nodes it reads


def parse_graph(text: str) -> ParsedGraph:
    lines = [_ANSI.sub("", line) for line in text.splitlines()]
    graph_lines = node_lines("\n".join(lines))
    parsed = ParsedGraph()
    first_def = next(((i, match) for i, line in enumerate(lines) if (match := _DEF.match(line))), None)
    if first_def is None:
        return parsed
    start, definition = first_def
    def_indent = len(definition.group(1))
    signature, index = _signature(lines, start, def_indent)
    placeholders: dict[str, FxNode] = {}
    for name in signature:
        placeholders[name] = FxNode(name, "placeholder", name, graph_line=graph_lines.get("__signature__", 0))
    parsed.nodes.extend(placeholders.values())
    known = set(placeholders)
    source: SourceLocation | None = None
    while index < len(lines):
        line = lines[index]
        index += 1
        stripped = line.strip()
        if not stripped:
            continue
        if len(line) - len(line.lstrip()) <= def_indent:
            break  # the end of forward's body
        if stripped.startswith("#"):
            found = _FILE_COMMENT.search(stripped)
            if found:
                source = SourceLocation(found.group(1), int(found.group(2)), found.group(3), found.group(4).strip())
            elif "No stacktrace found" in stripped:
                source = None
            continue
        if stripped.startswith("return "):
            output = FxNode("output", "output", "output", graph_line=graph_lines.get("output", 0))
            parsed.nodes.append(output)
            parsed.inputs["output"] = _mentioned(stripped[len("return "):], known)
            continue
        statement = stripped.split(";  ", 1)[0]
        assign = _ASSIGN.match(statement)
        if not assign:
            continue
        name, rhs = assign.groups()
        if rhs in placeholders and name not in known:
            # Dynamo graphs rebind each input: `l_x_ = L_x_` names the placeholder node.
            node = placeholders.pop(rhs)
            node.name, node.target, node.graph_line = name, rhs, graph_lines.get(name, node.graph_line)
            node.source, node.source_via = source, "stack_trace" if source else ""
            known.add(name)
            continue
        op, target = _op_and_target(rhs, known)
        node = FxNode(name, op, target, source=source, source_via="stack_trace" if source else "",
                      graph_line=graph_lines.get(name, 0))
        parsed.inputs[name] = _mentioned(rhs, known)
        parsed.nodes.append(node)
        known.add(name)
    return parsed


def _signature(lines: list[str], start: int, def_indent: int) -> tuple[list[str], int]:
    """Placeholder names of `def forward(self, a: "...", b, ...):`, possibly over many lines."""
    text, index = "", start
    while index < len(lines):
        text += " " + lines[index].split("#", 1)[0] if index > start else lines[index]
        index += 1
        if text.rstrip().endswith(":") and text.count("(") <= text.count(")"):
            break
    inside = _STRINGS.sub('""', text)
    inside = inside[inside.index("(") + 1: inside.rindex(")")]
    names = []
    for part in inside.split(","):
        name = part.split(":", 1)[0].split("=", 1)[0].strip().lstrip("*")
        if name and name != "self" and name.isidentifier():
            names.append(name)
    return names, index


def _op_and_target(rhs: str, known: set[str]) -> tuple[str, str]:
    call = _CALL.match(rhs)
    if call:
        dotted = call.group(1)
        if dotted.startswith("torch.ops."):
            return "call_function", dotted[len("torch.ops."):]
        if dotted.startswith("self."):
            return "call_module", dotted[len("self."):]
        owner, _, method = dotted.rpartition(".")
        if owner in known:
            return "call_method", method
        return "call_function", dotted
    getitem = _GETITEM.match(rhs)
    if getitem and getitem.group(1) in known:
        return "call_function", "_operator.getitem"
    if rhs.startswith("self."):
        return "get_attr", rhs[len("self."):]
    binary = _BINARY_RE.match(rhs)
    if binary:
        return "call_function", f"_operator.{_BINARY[binary.group(2)]}"
    return "call_function", rhs.split("(", 1)[0].strip()


def _mentioned(rhs: str, known: set[str]) -> list[str]:
    names = []
    for name in _IDENT.findall(_STRINGS.sub("", rhs)):
        if name in known and name not in names:
            names.append(name)
    return names
