"""In generated files (kernels, wrappers, graphs): document links and the highlight of
the lines that belong to the same post-grad node."""
from __future__ import annotations

import re
from pathlib import Path

from lsprotocol import types

from kernelscope.lsp.editor import checked_line, line_range

FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+)')  # Python stack traces
GRAPH_COMMENT = re.compile(r"# File: (?P<file>[^\s:]+\.py):(?P<line>\d+)")  # FX graph code comments
KERNEL_DEFINED = re.compile(r"\b(?P<name>triton_\w+) = async_compile\.triton\(")
KERNEL_LAUNCH = re.compile(r"\b(?P<name>triton_\w+)\.run\(")
# C++ kernels of Inductor's CPU backend, kept as `.cpp` files
CPP_KERNEL_DEFINED = re.compile(r"^(?P<name>cpp_\w+) = async_compile\.cpp_pybinding\(")
CPP_KERNEL_LAUNCH = re.compile(r"^\s*(?P<name>cpp_\w+)\(")
KERNEL_PATH = re.compile(r"# kernel path: (?P<path>\S+)")


def setup(server) -> None:
    @server.guarded_feature(types.TEXT_DOCUMENT_DOCUMENT_LINK)
    def document_link(server, params: types.DocumentLinkParams) -> list[types.DocumentLink]:
        return links(server, params.text_document.uri)

    @server.guarded_feature(types.TEXT_DOCUMENT_DOCUMENT_HIGHLIGHT)
    def document_highlight(server, params: types.DocumentHighlightParams) -> list[types.DocumentHighlight] | None:
        return highlights(server, params.text_document.uri, params.position)


def links(server, uri: str) -> list[types.DocumentLink]:
    document = server.document(uri)
    if document is None or document.is_source:
        return []
    provenance = server.provenance
    kernels_dir = Path(document.location.absolute_path).parent
    if document.location.kind != "kernel":
        kernels_dir = kernels_dir / "kernels"
    found = []
    pending_path: list[tuple[int, re.Match]] = []

    def add(line: int, match: re.Match, group: str, target: str) -> None:
        found.append(types.DocumentLink(
            range=types.Range(start=types.Position(line=line, character=match.start(group)),
                              end=types.Position(line=line, character=match.end(group))),
            target=target))

    for number, text in enumerate(document.lines):
        for pattern in (FRAME, GRAPH_COMMENT):
            for match in pattern.finditer(text):
                file = Path(match["file"])
                path = file if file.is_absolute() else provenance.workspace / file
                if path.is_file():
                    add(number, match, "file", f"{provenance.uri_for(str(path))}#L{match['line']}")
        cache_path = KERNEL_PATH.search(text)
        if cache_path:
            pending_path.append((number, cache_path))
        for pattern in (KERNEL_DEFINED, KERNEL_LAUNCH, CPP_KERNEL_DEFINED, CPP_KERNEL_LAUNCH):
            for match in pattern.finditer(text):
                suffix = ".cpp" if pattern in (CPP_KERNEL_DEFINED, CPP_KERNEL_LAUNCH) else ".py"
                kernel_file = kernels_dir / f"{match['name']}{suffix}"
                if kernel_file.is_file():
                    target = provenance.uri_for(str(kernel_file))
                    add(number, match, "name", target)
                    if pattern in (KERNEL_DEFINED, CPP_KERNEL_DEFINED):
                        for path_line, path_match in pending_path:
                            add(path_line, path_match, "path", target)  # Inductor's cache path: the stored copy
                        pending_path = []
    return found


def highlights(server, uri: str, position: types.Position) -> list[types.DocumentHighlight] | None:
    document = server.document(uri)
    if document is None or document.is_source:
        return None
    line = checked_line(document, position)
    file_links = server.provenance.run(document.run_id).file_links(document.location)
    by_line = {entry.line: set(entry.nodes) for entry in file_links.lines}
    nodes = by_line.get(line)
    if not nodes:
        return None
    return [
        types.DocumentHighlight(range=line_range(other, document.lines[other - 1] if other <= len(document.lines)
                                                 else ""), kind=types.DocumentHighlightKind.Text)
        for other, other_nodes in sorted(by_line.items()) if other_nodes & nodes
    ]
