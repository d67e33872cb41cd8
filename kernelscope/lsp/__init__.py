"""`kernelscope lsp`: the provenance chain in any editor (pygls over stdio).

Reads the store only, through its read model (`StoreBackend.run(run_id)` -> RunView); compiles
only in the warm engine worker (`kernelscope.watch`), and nothing at all in a workspace
the client does not trust (`trusted: false`). Never imports torch, so it starts fast and
outlives any crash of the user's code.

- `server.py`      creates the server, registers the features, holds what they share:
                   options and trust, `kernelscope/status`, the refresh after new runs;
- `features/`      what it answers: one module per feature (the commands together), one
                   per custom request in `features/custom/` (see `features/__init__.py`);
- `options.py`     the initialization options (and didChangeConfiguration's section);
- `provenance.py`  the store as the features see it: URIs <-> stored paths, documents
                   located in runs, the shown run, a StoreBackend per thread;
- `positions.py`   stale files: recorded lines found again by their content;
- `lookup.py`      what is at an editor position (a line's answer), the lines features
                   point at (a kernel's `def`, the first line it computes for a model line);
- `editor.py`      store answers as LSP types (0-based ranges, locations, links) and the
                   checks of request parameters;
- `render.py`      every answer turned into text: hovers, lens titles, inlay hints;
- `below.py`       below the kernel (PTX and SASS): the hover, lens and definition parts;
- `targets.py`     what `kernelscope.compile` compiles, decided without running code;
- `compiler.py`    compiles and PTX/SASS builds through the engine worker;
- `attrs_cache.py` lsprotocol's attrs methods compiled once, not at every start.

Where a new feature goes: a hover section's text in `render.py` (or `below.py`), called
from `features/hover.py`; a custom request in `features/custom/`; a command in
`features/commands.py`; a diagnostic in `features/diagnostics.py`; each feature module
is named once in `features.FEATURES` (details in `features/__init__.py`). New data from
the store comes through the read model (`kernelscope.store`), never SQL here.
"""
