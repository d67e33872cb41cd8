"""One module per LSP feature; each has `setup(server)` (see kernelscope.lsp.server)."""
