"""Inlay hints: the kernels a model line became, at the end of the line (option `inlayHints`)."""
from __future__ import annotations

from lsprotocol import types


def setup(server) -> None:
    @server.guarded_feature(types.TEXT_DOCUMENT_INLAY_HINT)
    def inlay_hint(server, params: types.InlayHintParams) -> list[types.InlayHint]:
        if not server.options.inlay_hints:
            return []
        from kernelscope.lsp import render  # the store side: loaded after `initialize`

        document = server.document(params.text_document.uri)
        if document is None or not document.is_source:
            return []
        first, last = params.range.start.line + 1, params.range.end.line + 1
        hints = []
        for line, summary in server.provenance.run(document.run_id).line_summaries(document.location).items():
            current = document.shown_line(line)
            if current is None or not first <= current <= last:
                continue
            text = document.lines[current - 1]
            hints.append(types.InlayHint(
                position=types.Position(line=current - 1, character=len(text)),
                label=render.inlay_label(summary),
                kind=types.InlayHintKind.Type,
                padding_left=True,
                tooltip=render.lens_title(summary),
            ))
        return hints
