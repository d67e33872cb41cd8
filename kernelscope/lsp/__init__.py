"""`kernelscope lsp`: the provenance chain in any editor (pygls over stdio).

Reads the store only, through its read model (`Store.run(run_id)` -> RunView);
compiles go to the warm engine
worker (`kernelscope.watch`). Never imports torch, so it starts fast and
outlives any crash of the user's code.

- `server.py` creates the server and registers the features;
- `features/` one module per LSP feature, each with `setup(server)`;
- `provenance.py` the store as the features see it (URIs, runs, stale files);
- `render.py` every answer turned into text (hovers, lenses, hints);
- `compiler.py` compiles and watch mode through the engine worker;
- `attrs_cache.py` lsprotocol's attrs methods compiled once, not at every start.
"""
