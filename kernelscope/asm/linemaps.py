"""Line maps from each stage Triton compiles a kernel through back to the kernel's lines.

- TTIR and TTGIR (MLIR): every operation ends in `loc(...)`; locations are defined at
  the end of the module (`#loc12 = loc("k.py":36:24)`), named (`loc("tmp9"(#loc16))`)
  or inlined (`loc(callsite(#loc1 at #loc80))`: a helper's line called from a kernel line).
- PTX: `.loc FILE LINE COL` directives before the instructions they cover; `.file N
  "path"` names the files. A line of an inlined helper (`tl.sum` in
  triton/language/standard.py) carries its call chain in LLVM's comment:
  `// standard.py:263:15 @[ standard.py:293:36 @[ k.py:48:26 ] ]`.
- SASS (`nvdisasm -gi`): `//## File "path", line N` markers before the instructions
  they cover. A marker in a helper file has no call chain there (ptxas keeps none), so
  it is mapped through the PTX: the kernel lines whose PTX inlines that helper line.

Each map keeps the lines that name a kernel line; the rest (declarations, labels) is
left out.
"""
from __future__ import annotations

import os
import re
from collections import defaultdict

from kernelscope.asm.model import AsmLine

InlineSites = dict[tuple[str, int], set[int]]  # (helper file's base name, line) -> kernel lines

_MLIR_LOC_DEF = re.compile(r"^(#loc\d*) = loc\((.*)\)\s*$")
_MLIR_FILE_LOC = re.compile(r'^"((?:[^"\\]|\\.)*)":(\d+):\d+')
_MLIR_NAME_LOC = re.compile(r'^"((?:[^"\\]|\\.)*)"\((.*)\)$', re.DOTALL)
_LOC_REF = re.compile(r"^#loc\d*")

_PTX_FILE = re.compile(r'^\s*\.file\s+(\d+)\s+"([^"]*)"')
_PTX_LOC = re.compile(r"^\s*\.loc\s+(\d+)\s+(\d+)\s+\d+(.*)$")
_PTX_INLINED_AT = re.compile(r"inlined_at\s+(\d+)\s+(\d+)")
_PTX_CHAIN_FRAME = re.compile(r"([^\s@\[\]]+):(\d+):\d+")

_SASS_MARKER = re.compile(r"^\s*//## File ")
_SASS_MARKER_FRAME = re.compile(r'"([^"]*)", line (\d+)')
_SASS_INSTRUCTION = re.compile(r"^\s*/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;?\s*(?:/\*.*\*/)?\s*$")
_SASS_PREDICATE = re.compile(r"^@!?U?P[T0-9]+\s+")


def _same_file(path: str, kernel_path: str) -> bool:
    return os.path.normpath(path) == os.path.normpath(kernel_path)


# -- MLIR (TTIR, TTGIR) ----------------------------------------------------------------


def mlir_lines(stage: str, text: str, kernel_path: str) -> list[AsmLine]:
    """Each operation of a TTIR/TTGIR module with the kernel line of its location."""
    lines = text.splitlines()
    definitions = {}
    for line in lines:
        match = _MLIR_LOC_DEF.match(line)
        if match:
            definitions[match.group(1)] = match.group(2)
    resolver = _MlirLocations(definitions, kernel_path)
    found = []
    for number, line in enumerate(lines, 1):
        if line.startswith("#") or " loc(" not in line:
            continue
        start = line.rfind(" loc(")
        body = _balanced(line, start + len(" loc("))
        if body is None or line[start + len(" loc(") + len(body) + 1:].strip() not in ("", "{"):
            continue  # a location inside the line (a block argument), not the operation's own
        operation = line[:start].strip()
        if not operation or operation.startswith("}"):
            continue  # the end of a region or the module: its location is the whole function's
        kernel_line, via = resolver.resolve(body)
        if kernel_line is None:
            continue
        found.append(AsmLine(stage, number, kernel_line, operation, _mlir_opcode(operation), via))
    return found


def _balanced(line: str, start: int) -> str | None:
    """The text from `start` up to the parenthesis that closes the one before it."""
    depth, quoted = 1, False
    for index in range(start, len(line)):
        char = line[index]
        if char == '"' and line[index - 1] != "\\":
            quoted = not quoted
        elif not quoted and char == "(":
            depth += 1
        elif not quoted and char == ")":
            depth -= 1
            if depth == 0:
                return line[start:index]
    return None


_MLIR_OPCODE = re.compile(r'[A-Za-z_][\w.]*')


def _mlir_opcode(operation: str) -> str:
    """`%x = arith.addf %a, %b : f32` -> `arith.addf`; `%r:2 = "tt.reduce"(%a) ...` -> `tt.reduce`."""
    body = operation.split(" = ", 1)[1] if " = " in operation else operation
    match = _MLIR_OPCODE.search(body)
    return match.group(0) if match else ""


class _MlirLocations:
    def __init__(self, definitions: dict[str, str], kernel_path: str):
        self.definitions = definitions
        self.kernel_path = kernel_path
        self.cache: dict[str, tuple[int | None, str]] = {}

    def resolve(self, expression: str, depth: int = 0) -> tuple[int | None, str]:
        """(kernel line, via) of a location expression; (None, "") when it names none."""
        expression = expression.strip()
        if depth > 50:
            return None, ""
        if _LOC_REF.fullmatch(expression):
            if expression not in self.cache:
                definition = self.definitions.get(expression)
                self.cache[expression] = (None, "") if definition is None else self.resolve(definition, depth + 1)
            return self.cache[expression]
        if expression.startswith("callsite(") and expression.endswith(")"):
            callee, caller = _split_callsite(expression[len("callsite("):-1])
            line, via = self.resolve(callee, depth + 1)
            if line is not None:
                return line, via
            line, _ = self.resolve(caller, depth + 1)
            helper = self._file_line(callee, depth + 1)
            return line, (f"inlined from {helper}" if helper and line is not None else "")
        if expression.startswith("fused"):
            inner = expression[expression.find("[") + 1:expression.rfind("]")]
            for part in _split_top_level(inner, ","):
                line, via = self.resolve(part, depth + 1)
                if line is not None:
                    return line, via
            return None, ""
        match = _MLIR_FILE_LOC.match(expression)
        if match:
            return (int(match.group(2)), "") if _same_file(match.group(1), self.kernel_path) else (None, "")
        match = _MLIR_NAME_LOC.match(expression)
        if match:
            return self.resolve(match.group(2), depth + 1)
        return None, ""

    def _file_line(self, expression: str, depth: int) -> str:
        """`standard.py:263` for a location in a helper file (for `via`)."""
        expression = expression.strip()
        if depth > 50:
            return ""
        if _LOC_REF.fullmatch(expression):
            definition = self.definitions.get(expression)
            return "" if definition is None else self._file_line(definition, depth + 1)
        match = _MLIR_FILE_LOC.match(expression)
        if match:
            return f"{_short(match.group(1))}:{match.group(2)}"
        match = _MLIR_NAME_LOC.match(expression)
        if match:
            return self._file_line(match.group(2), depth + 1)
        if expression.startswith("callsite(") and expression.endswith(")"):
            return self._file_line(_split_callsite(expression[len("callsite("):-1])[0], depth + 1)
        return ""


def _split_callsite(inner: str) -> tuple[str, str]:
    parts = _split_top_level(inner, " at ")
    return (parts[0], parts[1]) if len(parts) == 2 else (inner, "")


def _split_top_level(text: str, separator: str) -> list[str]:
    parts, depth, quoted, start, index = [], 0, False, 0, 0
    while index < len(text):
        char = text[index]
        if char == '"' and (index == 0 or text[index - 1] != "\\"):
            quoted = not quoted
        elif not quoted and char in "([":
            depth += 1
        elif not quoted and char in ")]":
            depth -= 1
        elif not quoted and depth == 0 and text.startswith(separator, index):
            parts.append(text[start:index])
            index += len(separator)
            start = index
            continue
        index += 1
    parts.append(text[start:])
    return [part.strip() for part in parts]


# -- PTX --------------------------------------------------------------------------------


def ptx_lines(text: str, kernel_path: str) -> tuple[list[AsmLine], InlineSites]:
    """Each PTX instruction with the kernel line of the `.loc` before it, and the inline
    sites (a helper line -> the kernel lines that inline it) for mapping SASS."""
    lines = text.splitlines()
    files = {}
    for line in lines:
        match = _PTX_FILE.match(line)
        if match:
            files[match.group(1)] = match.group(2)
    kernel_files = {index for index, path in files.items() if _same_file(path, kernel_path)}
    kernel_base = os.path.basename(kernel_path)
    found: list[AsmLine] = []
    sites: InlineSites = defaultdict(set)
    current: tuple[int, str] | None = None
    for number, line in enumerate(lines, 1):
        stripped = line.strip()
        if stripped.startswith(".section") or stripped.startswith("// -- End function"):
            current = None
            continue
        match = _PTX_LOC.match(line)
        if match:
            current = _ptx_location(match, files, kernel_files, kernel_base, sites)
            continue
        if current is None or not stripped.endswith(";") or stripped.startswith((".", "//")):
            continue
        instruction = stripped.split("//", 1)[0].strip().rstrip(";").strip()
        found.append(AsmLine("ptx", number, current[0], instruction, _ptx_opcode(instruction), current[1]))
    return found, dict(sites)


def _ptx_location(match: re.Match, files: dict[str, str], kernel_files: set[str], kernel_base: str,
                  sites: InlineSites) -> tuple[int, str] | None:
    file_index, line, rest = match.group(1), int(match.group(2)), match.group(3)
    if file_index in kernel_files:
        return line, ""
    helper = files.get(file_index, "")
    kernel_line = None
    inlined = _PTX_INLINED_AT.search(rest)
    if inlined and inlined.group(1) in kernel_files:
        kernel_line = int(inlined.group(2))
    elif "//" in rest:  # LLVM's comment: `standard.py:263:15 @[ standard.py:293:36 @[ k.py:48:26 ] ]`
        for name, frame_line in _PTX_CHAIN_FRAME.findall(rest.split("//", 1)[1]):
            if name == kernel_base:
                kernel_line = int(frame_line)
                break
    if kernel_line is None:
        return None
    sites[(os.path.basename(helper), line)].add(kernel_line)
    return kernel_line, f"inlined from {_short(helper)}:{line}"


def _ptx_opcode(instruction: str) -> str:
    body = re.sub(r"^@!?%\w+\s+", "", instruction)
    return body.split(None, 1)[0] if body else ""


# -- SASS -------------------------------------------------------------------------------


def sass_lines(text: str, kernel_path: str, sites: InlineSites) -> list[AsmLine]:
    """Each SASS instruction of `nvdisasm -gi` output with its kernel line(s): one AsmLine
    per kernel line (a helper line inlined at several kernel lines gives several)."""
    found: list[AsmLine] = []
    current: list[tuple[int, str]] = []
    for number, line in enumerate(text.splitlines(), 1):
        if _SASS_MARKER.match(line):
            current = _sass_location(line, kernel_path, sites)
            continue
        match = _SASS_INSTRUCTION.match(line)
        if match is None:
            continue  # directives and labels keep the current location
        instruction = match.group(2).strip()
        for kernel_line, via in current:
            found.append(AsmLine("sass", number, kernel_line, instruction, sass_opcode(instruction), via))
    return found


def _sass_location(marker: str, kernel_path: str, sites: InlineSites) -> list[tuple[int, str]]:
    frames = _SASS_MARKER_FRAME.findall(marker)
    for path, line in frames:  # an "inlined at" chain, where nvdisasm has one
        if _same_file(path, kernel_path):
            return [(int(line), "")]
    if not frames:
        return []
    helper, helper_line = frames[0][0], int(frames[0][1])
    kernel_lines = sorted(sites.get((os.path.basename(helper), helper_line), ()))
    via = f"inlined from {_short(helper)}:{helper_line}"
    if len(kernel_lines) > 1:
        via += f" (called from lines {', '.join(map(str, kernel_lines))}; SASS keeps no call site)"
    return [(kernel_line, via) for kernel_line in kernel_lines]


def sass_opcode(instruction: str) -> str:
    """`@!P0 MUFU.EX2 R0, R0` -> `MUFU.EX2`."""
    body = _SASS_PREDICATE.sub("", instruction.strip())
    return body.split(None, 1)[0] if body else ""


def sass_instructions(text: str) -> list[str]:
    """Every SASS instruction of `nvdisasm` output, in order (with or without line info)."""
    return [match.group(2).strip() for match in map(_SASS_INSTRUCTION.match, text.splitlines()) if match]


def _short(path: str) -> str:
    """A helper file as people name it: `triton/language/standard.py`, not the full path."""
    parts = path.replace("\\", "/").split("/")
    for anchor in ("triton", "torch"):
        if anchor in parts[:-1]:
            index = len(parts) - 1 - parts[::-1].index(anchor)
            return "/".join(parts[index:])
    return parts[-1]
