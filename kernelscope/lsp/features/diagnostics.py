"""Diagnostics at the user's lines: graph breaks (Dynamo's reason), recompiles (the
guard that failed), ops that fell back to eager ATen, and compile errors (from the
engine worker) — plus a quick fix where Dynamo's advice is a config setting.

Published for open documents on open/save/change and after every new run.
"""
from __future__ import annotations

import ast
import asyncio
import re

from lsprotocol import types

from kernelscope.lsp.editor import line_range

SOURCE = "kernelscope"
CONFIG_IN_TEXT = re.compile(r"torch\._dynamo\.config\.(\w+)(\s*=\s*(True|False|\d+))?")
# Dynamo's hints for some graph breaks name a config (or a config set to add to);
# these are the ones turned into an edit.
KNOWN_FIXES = [
    (re.compile(r"builtin operator `print`|logging function", re.I),
     "torch._dynamo.config.reorderable_logging_functions.add(print)",
     "let Dynamo reorder print() calls after the graph instead of breaking it"),
    (re.compile(r"Tensor\.item|\.item\(\)|scalar output", re.I),
     "torch._dynamo.config.capture_scalar_outputs = True",
     "capture .item() in the graph"),
    (re.compile(r"dynamic.output.shape|nonzero", re.I),
     "torch._dynamo.config.capture_dynamic_output_shape_ops = True",
     "capture ops whose output shape depends on data"),
]


def setup(server) -> None:
    server.document_listeners.append(_on_document)
    server.on_runs_changed(republish_all)

    @server.guarded_feature(types.TEXT_DOCUMENT_CODE_ACTION,
                            types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix]))
    def code_action(server, params: types.CodeActionParams) -> list[types.CodeAction]:
        return quick_fixes(server, params)


CHANGE_QUIET_SECONDS = 0.3  # typing: publish once the document has been quiet this long
_pending: dict[str, asyncio.TimerHandle] = {}  # uri -> the scheduled publish


def _on_document(server, uri: str, event: str) -> None:
    pending = _pending.pop(uri, None)
    if pending is not None:
        pending.cancel()
    if event == "close":
        server.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))
    elif event == "change" and server.loop is not None:
        _pending[uri] = server.loop.call_later(CHANGE_QUIET_SECONDS, _publish_later, server, uri)
    elif event in ("open", "save", "change"):
        publish(server, uri)


def _publish_later(server, uri: str) -> None:
    _pending.pop(uri, None)
    if uri in server.workspace.text_documents:
        publish(server, uri)


def republish_all(server) -> None:
    for uri in server.open_uris():
        publish(server, uri)


def publish(server, uri: str) -> None:
    server.text_document_publish_diagnostics(
        types.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics_for(server, uri)))


def diagnostics_for(server, uri: str) -> list[types.Diagnostic]:
    path = server.path_of(uri)
    found = list(server.compile_problems.get(str(path), [])) if path else []
    document = server.document(uri)
    if document is None or not document.is_source:
        return found
    run = server.provenance.run(document.run_id)
    details = run.details()
    key = document.location.path
    stale = f" (run {document.run_id}, recorded before your last edit)" if document.stale else ""

    def at(line: int | None) -> types.Range | None:
        current = document.shown_line(line) if line else None
        if current is None:
            return None
        return line_range(current, document.lines[current - 1])

    for brk in details.graph_breaks:
        where = at(brk.line) if brk.file == key else None
        if where is None:
            continue
        hints = list(getattr(brk, "hints", None) or [])
        explanation = getattr(brk, "explanation", "") or ""
        fix = fix_for(" ".join([brk.reason, explanation, *hints]))
        text = f"graph break [{brk.compile_id}]: {brk.reason}"
        if explanation and explanation not in brk.reason:
            text += f" — {explanation}"
        text += "".join(f"\nhint: {hint}" for hint in hints[:3]) + stale
        found.append(types.Diagnostic(
            range=where, severity=types.DiagnosticSeverity.Warning, source=SOURCE, code="graph-break",
            message=text + (f"\nquick fix: {fix[0]} ({fix[1]})" if fix else ""),
            code_description=types.CodeDescription(href=brk.url) if getattr(brk, "url", "") else None,
            data={"fix": fix[0], "why": fix[1]} if fix else None,
        ))
    why = run.file_why(document.location)
    found += _why_diagnostics(why, at, stale)
    placed = {recompile.compile_id for line_why in why.values() for recompile in line_why.recompiles}
    for recompile in details.recompiles:
        if recompile.compile_id in placed:  # said at the line that caused it (above)
            continue
        frame = recompile.compile_id.split("/", 1)[0]
        if not frame.isdigit():
            continue
        lines = [line for file, line in run.frame_source_lines(int(frame))
                 if file == key]
        where = at(min(lines)) if lines else None
        if where is None:
            continue
        found.append(types.Diagnostic(
            range=where, severity=types.DiagnosticSeverity.Information, source=SOURCE, code="recompile",
            message=f"recompiled [{recompile.compile_id}]: guard failed: {recompile.reason}{stale}",
        ))
    fallbacks: dict[tuple[int, str, str], int] = {}  # (line, op, graph) -> calls
    for line, kernel in run.fallbacks().get(key, []):
        name = (line, kernel.name.split("#", 1)[0], f"{kernel.graph_kind} [{kernel.compile_id}]")
        fallbacks[name] = fallbacks.get(name, 0) + 1
    for (line, op, graph), calls in sorted(fallbacks.items()):
        where = at(line)
        if where is not None:
            times = f" ({calls} calls)" if calls > 1 else ""
            found.append(types.Diagnostic(
                range=where, severity=types.DiagnosticSeverity.Information, source=SOURCE, code="fallback",
                message=f"runs eagerly: `{op}` falls back to ATen (no generated kernel) in {graph}{times}{stale}",
            ))
    found += _numerics(run, key, at, stale)
    return found


def _numerics(run, key: str, at, stale: str) -> list[types.Diagnostic]:
    """`kernelscope numerics`: the line where compiled and eager part ways, and lines beyond tolerance."""
    from kernelscope.render.numerics import file_notes

    report = run.numerics()
    if report is None:
        return []
    found = []
    for note in file_notes(report, key):
        where = at(note.line)
        if where is None or not (note.first or note.over):
            continue
        found.append(types.Diagnostic(
            range=where, source=SOURCE, code="numerics-divergence" if note.first else "numerics",
            severity=types.DiagnosticSeverity.Warning if note.first else types.DiagnosticSeverity.Information,
            message=note.message + stale,
        ))
    return found


# The config a size-mismatch recompile's quick fix sets: every size dynamic from the first
# compile, so Dynamo does not compile static first and again dynamic (docs/why.md).
DYNAMIC_FROM_THE_START = ("torch._dynamo.config.assume_static_by_default = False",
                          "compile sizes dynamic from the first call (no static compile first)")


def _why_diagnostics(why: dict, at, stale: str) -> list[types.Diagnostic]:
    """At the line that caused them: each recompile (the failed guard, the values the call
    had, advice and, for a size mismatch, a quick fix) and the shape guards and
    specializations the line installed (docs/why.md)."""
    found = []
    for line, line_why in sorted(why.items()):
        where = at(line)
        if where is None:
            continue
        by_compile: dict[str, list] = {}
        for recompile in line_why.recompiles:
            by_compile.setdefault(recompile.compile_id, []).append(recompile)
        for compile_id, failures in by_compile.items():
            parts = []
            for failure in failures:
                values = ", ".join(f"{source}={value}" for source, value in failure.values.items())
                parts.append(f"guard of [{failure.failed_compile_id}] failed: {failure.guard}"
                             + (f" (the call had {values})" if values else ""))
            advice = next((failure.advice for failure in failures if failure.advice), "")
            fix = DYNAMIC_FROM_THE_START if "size mismatch" in " ".join(f.guard for f in failures) else None
            found.append(types.Diagnostic(
                range=where, severity=types.DiagnosticSeverity.Warning, source=SOURCE, code="recompile",
                message=f"recompiled [{compile_id}] because of this line: " + "; ".join(parts)
                + (f"\nadvice: {advice}" if advice else "") + (f"\nquick fix: {fix[0]}" if fix else "") + stale,
                data={"fix": fix[0], "why": fix[1]} if fix else None,
            ))
        shape = [guard for guard in line_why.guards if guard.added_by == "user code" or guard.kind == "specialization"]
        if shape:
            text = "; ".join(f"[{guard.compile_id}] {guard.expression}" for guard in shape)
            kind = "specialized" if all(guard.kind == "specialization" for guard in shape) else "guard"
            found.append(types.Diagnostic(
                range=where, severity=types.DiagnosticSeverity.Information, source=SOURCE, code=f"shape-{kind}",
                message=f"this line installed {len(shape)} shape guard(s): {text} — a call that fails one "
                        f"recompiles{stale}"))
    return found


def compile_problem(file: str | None, line: int | None, message: str, kind: str) -> types.Diagnostic:
    return types.Diagnostic(
        range=line_range(line or 1), severity=types.DiagnosticSeverity.Error, source=SOURCE,
        code=f"compile-{kind}", message=message,
    )


def fix_for(reason: str) -> tuple[str, str] | None:
    """(a line of Python that avoids the break, why) for reasons Dynamo advises a config for."""
    named = CONFIG_IN_TEXT.search(reason)
    if named and named.group(2):
        return named.group(0), "as Dynamo's hint suggests"
    for pattern, fix, why in KNOWN_FIXES:
        if pattern.search(reason):
            return fix, why
    return None


def quick_fixes(server, params: types.CodeActionParams) -> list[types.CodeAction]:
    uri = params.text_document.uri
    actions = []
    for diagnostic in params.context.diagnostics:
        data = diagnostic.data if isinstance(diagnostic.data, dict) else None
        if diagnostic.source != SOURCE or not data or not isinstance(data.get("fix"), str):
            continue
        edit = _insert_config(server, uri, data["fix"])
        if edit is None:
            continue
        actions.append(types.CodeAction(
            title=f"kernelscope: add `{data['fix']}` ({data.get('why', '')})",
            kind=types.CodeActionKind.QuickFix, diagnostics=[diagnostic], edit=edit, is_preferred=True,
        ))
    return actions


def _insert_config(server, uri: str, statement: str) -> types.WorkspaceEdit | None:
    text = server.text_of(uri)
    if text is None:
        path = server.path_of(uri)
        try:
            text = path.read_text(encoding="utf-8") if path else None
        except OSError:
            return None
    if text is None or statement in text:
        return None
    line, imports_torch = _after_imports(text)
    insert = ("" if imports_torch else "import torch\n") + statement + "\n"
    position = types.Position(line=line, character=0)
    return types.WorkspaceEdit(changes={uri: [types.TextEdit(range=types.Range(start=position, end=position),
                                                            new_text=insert)]})


def _after_imports(text: str) -> tuple[int, bool]:
    """(0-based line after the last top-level import, whether `import torch` is there)."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return 0, False
    last, imports_torch = 0, False
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            last = node.end_lineno or node.lineno
            if isinstance(node, ast.Import) and any(alias.name == "torch" and alias.asname is None
                                                    for alias in node.names):
                imports_torch = True
    return last, imports_torch
