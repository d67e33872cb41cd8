"""What the language server answers: one module per feature, each with `setup(server)`,
registered in the order of `FEATURES` (the one list of them; kernelscope.lsp.server
imports every module it names and calls its `setup`).

- `documents.py`       initialize, initialized, shutdown, configuration; open, change,
                       save and close (which only refresh: they never compile);
- `hover.py`           textDocument/hover on model, kernel, wrapper, graph and PTX/SASS lines;
- `navigation.py`      textDocument/definition (down the chain) and references (up it);
- `code_lens.py`       textDocument/codeLens over model lines, kernel `def`s, stage files;
- `inlay_hints.py`     textDocument/inlayHint: a model line's kernels at its end;
- `diagnostics.py`     published diagnostics (graph breaks, recompiles, eager fallbacks,
                       compile errors) and their quick fixes (textDocument/codeAction);
- `commands.py`        workspace/executeCommand: kernelscope.compile, toggleWatch, runs,
                       selectRun, buildAsm (compiles only here, in the engine worker);
- `generated_files.py` document links and highlights in generated files;
- `symbols.py`         workspace/symbol: the shown run's kernels and graphs;
- `custom/`            the custom requests `kernelscope/*`, one module each (see its map).

The `kernelscope/status` notification is the server's (`server.set_state`). What the
features share lives beside this package, in `kernelscope.lsp`: `lookup` (what is at a
position), `editor` (LSP types, parameter checks), `render` and `below` (every text).

Where a new feature goes:
- a new hover section: its text in `render.py` (below the kernel: `below.py`), from the
  read model (`server.provenance.run(run_id)`, a RunView; never SQL), called from
  `hover.hover_text`; the same text for the lens or hint goes in `render.py` too;
- a new custom request: a module in `custom/` (its map says how), one line in `FEATURES`;
- a new command: a function in `commands.py`, registered in its `setup`; one that runs
  workspace code calls `server.require_trust(...)` first and compiles through
  `server.compiler`;
- a new diagnostic: one more block in `diagnostics.diagnostics_for` (a quick fix: `KNOWN_FIXES`);
- another LSP method: a module here with `setup(server)` using
  `@server.guarded_feature(method)`, and one line in `FEATURES`.
Feature modules import the store side (`provenance`, `render`, `below`,
`kernelscope.store`) inside their handlers, never at import time: the server answers
`initialize` before loading it (tests/lsp/test_lsp_start.py checks).
"""

FEATURES = [
    "documents", "hover", "navigation", "code_lens", "inlay_hints", "diagnostics",
    "commands", "generated_files", "symbols",
    "custom.linked_ranges", "custom.kernels_for_line", "custom.source_for_line", "custom.asm_for_line",
    "custom.run_overview",
]
