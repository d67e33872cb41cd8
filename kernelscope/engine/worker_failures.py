"""Where a failed recording failed, said in the user's terms (the engine worker's answers).

`describe_failure` locates an error in the user's code — a syntax error's file, line and
column; kernelscope's own errors by the `file:line:` they start with; else the deepest frame
of the user's workspace in the traceback — and names its kind (syntax, target, compile,
store, usage, internal), as front ends show it at that line. `out_of_memory` says whether
the error chain holds a memory failure (the worker's `--memory-limit` cap).
"""
from __future__ import annotations

import os
import re
import traceback

from kernelscope.errors import CompileError, StoreError, TargetError, UserError

_LOCATED_MESSAGE = re.compile(r"^(?P<file>[^\s:][^:]*?\.py)(?::(?P<line>\d+))?: (?P<message>.*)$", re.DOTALL)


def describe_failure(error: BaseException, imports) -> dict:
    """{kind, file, line, column, message} of a failed recording, located in the user's code."""
    syntax = _find_in_chain(error, SyntaxError)
    if syntax is not None and syntax.filename:
        message = str(error) if isinstance(error, UserError) else f"syntax error: {syntax.msg}"
        return _located("syntax", message, syntax.filename, syntax.lineno, syntax.offset)
    kind = "internal"
    for error_type, name in ((TargetError, "target"), (CompileError, "compile"),
                             (StoreError, "store"), (UserError, "usage")):
        if isinstance(error, error_type):
            kind = name
            break
    text = " ".join(str(error).split()) or type(error).__name__
    if kind != "internal":
        match = _LOCATED_MESSAGE.match(text)
        if match:
            line = int(match["line"]) if match["line"] else None
            return _located(kind, match["message"], match["file"], line, None)
    file, line = _deepest_user_frame(error, imports)
    message = text if kind != "internal" else f"{type(error).__name__}: {text}"
    return _located(kind, message, file, line, None)


def _located(kind: str, message: str, file: str | None, line: int | None, column: int | None) -> dict:
    if file and line and message.startswith(f"{file}:{line}: "):
        message = message[len(f"{file}:{line}: "):]
    return {
        "kind": kind,
        "file": os.path.abspath(file) if file and not file.startswith("<") else file,
        "line": line,
        "column": column,
        "message": message,
    }


def out_of_memory(error: BaseException) -> bool:
    """A MemoryError, or torch's allocator failing ("can't allocate memory"), in the chain."""
    seen = set()
    while error is not None and id(error) not in seen:
        if isinstance(error, MemoryError) or "can't allocate memory" in str(error):
            return True
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    return False


def _find_in_chain(error: BaseException, wanted: type) -> BaseException | None:
    seen = set()
    while error is not None and id(error) not in seen:
        if isinstance(error, wanted):
            return error
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    return None


def _deepest_user_frame(error: BaseException, imports) -> tuple[str | None, int | None]:
    found = (None, None)
    seen = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        for frame in traceback.extract_tb(error.__traceback__):
            if imports.owns(frame.filename):
                found = (frame.filename, frame.lineno)
        error = error.__cause__ or error.__context__
    return found
