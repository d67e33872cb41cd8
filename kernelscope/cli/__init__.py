"""The `kernelscope` command line: one module per subcommand.

Each subcommand module exposes `add_parser(subparsers)`, which registers its
arguments and sets `func=run`, and `run(args) -> int` (the exit code). Only
`compile` and `run` import the engine (and so torch); everything else reads the
store and starts fast.
"""
from __future__ import annotations

import argparse
import importlib
import sys

from kernelscope import __version__
from kernelscope.errors import UserError

SUBCOMMANDS = ["compile", "run", "runs", "show", "query", "dump", "validate", "watch", "diff", "import", "tui", "lsp",
               "profile", "merge"]


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The full parser, or with `only` one subcommand (its module alone is imported,
    so `kernelscope query` does not pay for loading `diff`, `watch` or `import`)."""
    parser = argparse.ArgumentParser(
        prog="kernelscope",
        description="Line-level provenance for torch.compile: from a model's source "
        "lines to the FX nodes, Triton kernel lines and wrapper lines they became.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n"
        "  kernelscope compile examples/mlp.py:make\n"
        "  kernelscope query examples/mlp.py:14\n"
        "  kernelscope runs",
    )
    parser.add_argument("--version", action="version", version=f"kernelscope {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in [only] if only else SUBCOMMANDS:
        module = importlib.import_module(f"kernelscope.cli.{name}_cmd")
        module.add_parser(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    # Everything after a bare `--` belongs to the user's script (`kernelscope run`).
    passthrough: list[str] = []
    if "--" in argv:
        cut = argv.index("--")
        argv, passthrough = argv[:cut], argv[cut + 1:]
    parser = build_parser(only=argv[0] if argv and argv[0] in SUBCOMMANDS else None)
    args = parser.parse_args(argv)
    args.passthrough = passthrough
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return args.func(args)
    except UserError as error:
        print(f"kernelscope: error: {error}", file=sys.stderr)
        return error.exit_code
    except KeyboardInterrupt:
        print("kernelscope: interrupted", file=sys.stderr)
        return 130
