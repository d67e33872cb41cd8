"""`kernelscope lsp` — the language server (stdio), for any LSP client."""
from __future__ import annotations

import argparse


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "lsp",
        help="run the language server over stdio (hover, go to kernel, lenses, diagnostics)",
        description="Run kernelscope's language server on stdin/stdout for an editor: hovers show what "
        "a model line became (kernels per graph, extern calls, fused lines), go-to-definition lands on "
        "the Triton kernel or wrapper line, references lead back from generated files to the model, "
        "plus code lenses, inlay hints, diagnostics (graph breaks, recompiles, fallbacks, compile errors) "
        "and the commands kernelscope.compile / toggleWatch / runs / selectRun. It reads the store of the "
        "workspace (.kernelscope by default, the 'store' initialization option) and compiles only when a "
        "command asks, in the engine worker; it never imports torch.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n"
        "  kernelscope lsp                      # started by the editor, talks over stdio\n"
        "  nvim: vim.lsp.start({name = 'kernelscope', cmd = {'kernelscope', 'lsp'}})\n"
        "  helix languages.toml: [language-server.kernelscope] command = \"kernelscope\", args = [\"lsp\"]",
    )
    parser.set_defaults(func=run)


def run(args) -> int:
    import gc

    from kernelscope.lsp.attrs_cache import compiled_once

    with compiled_once():  # lsprotocol's ~570 attrs classes: their generated methods from a cache
        from kernelscope.lsp.server import main
    # The ~50,000 objects the imports made (modules, classes, functions) live as long as
    # the server: out of the collector's way, its full passes no longer walk them.
    gc.freeze()
    return main()
