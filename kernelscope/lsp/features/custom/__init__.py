"""The custom requests (`kernelscope/*`): answers for clients that draw more than LSP
shows, the VS Code extension first. One module per request, each with `setup(server)`
and its `METHOD`; plain JSON objects in and out, 0-based lines; the client's types are
in `vscode-extension/src/protocol.ts`.

- `linked_ranges.py`    kernelscope/linkedRanges: every line linked to a line, by file and
                        role (model, graphs, kernel, wrapper, PTX/SASS), for highlighting;
- `kernels_for_line.py` kernelscope/kernelsForLine: a line's kernels and where each opens;
- `source_for_line.py`  kernelscope/sourceForLine: the model lines a generated line came from;
- `asm_for_line.py`     kernelscope/asmForLine: a line's Triton kernels below Triton (built,
                        not built or failed; their PTX and SASS lines; how to build);
- `run_overview.py`     kernelscope/runOverview: a run as a whole for the overview page
                        (graphs, kernels, breaks, fusion SVG, modules, PTX/SASS facts);
- `overview_distributed.py` the overview's `distributed` section (ranks, collectives,
                        compute/communication order); not a request of its own.

A new custom request: a module here with `METHOD = "kernelscope/…"` and `setup(server)`
registering it with `@server.guarded_feature(METHOD)` (parameters through
`kernelscope.lsp.editor.text_position`/`param`), one line in
`kernelscope.lsp.features.FEATURES`, its types in `protocol.ts`.
"""
