"""The `kernelscope` command line: one module per subcommand.

Each subcommand module exposes `add_parser(subparsers)`, which registers its
arguments and sets `func=run`, and `run(args) -> int` (the exit code). Only
`compile` and `run` import the engine (and so torch); everything else reads the
store and starts fast.
"""
from __future__ import annotations

import argparse
import importlib
import os
import sys

from kernelscope.errors import (
    CLI_TRACEBACK_HINT,
    INTERNAL_EXIT_CODE,
    TRACEBACK_ENV,
    UserError,
    full_error,
    one_line,
    traceback_wanted,
)
from kernelscope.version import __version__

MAP_PATH_ENV = "KERNELSCOPE_MAP_PATH"  # kernelscope.store.places.MAP_PATH_ENV (not imported: it loads the store)

SUBCOMMANDS = ["compile", "run", "runs", "show", "query", "dump", "validate", "watch", "diff", "import", "tui", "lsp",
               "profile", "doctor", "merge", "decisions", "memory", "numerics"]


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
        "  kernelscope runs\n"
        "  kernelscope --traceback query examples/mlp.py:14   # an error with the chain behind it",
    )
    parser.add_argument("--version", action="version", version=f"kernelscope {__version__}")
    parser.add_argument("--traceback", action="store_true",
                        help=f"on an error, also print the full chain behind it (or set {TRACEBACK_ENV}=1); "
                        "accepted anywhere before `--`")
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
    # --traceback and --map-path reach the engine worker and the TUI's threads through the
    # environment, for this command only (main() is also called in-process, by tests).
    saved = {name: os.environ.get(name) for name in (TRACEBACK_ENV, MAP_PATH_ENV)}
    if "--traceback" in argv:
        argv = [arg for arg in argv if arg != "--traceback"]
        os.environ[TRACEBACK_ENV] = "1"
    try:
        return _dispatch(argv, passthrough)
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _dispatch(argv: list[str], passthrough: list[str]) -> int:
    parser = build_parser(only=argv[0] if argv and argv[0] in SUBCOMMANDS else None)
    args = parser.parse_args(argv)
    args.passthrough = passthrough
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        if getattr(args, "store_map_path", None):
            from kernelscope.cli.common import apply_map_path  # loads the store side: only when given

            apply_map_path(args)
        return args.func(args)
    except UserError as error:
        print_error(f"kernelscope: error: {one_line(error)}", error)
        return error.exit_code
    except KeyboardInterrupt:
        print("kernelscope: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `kernelscope query ... | head`: the reader has what it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except Exception as error:  # noqa: BLE001 - a bug in kernelscope: one line, the chain on request
        damage = _store_damage_behind(args, error)
        if damage is not None:
            print_error(f"kernelscope: error: {one_line(damage)}", error)
            return damage.exit_code
        print_error(f"kernelscope: internal error: {one_line(error)} — a kernelscope bug; please report it "
                    "with the full error", error)
        return INTERNAL_EXIT_CODE


def _store_damage_behind(args, error: BaseException) -> UserError | None:
    """When a command that read a store failed unexpectedly: the store's crafted or damaged
    values, if it holds any (then the failure is theirs, not a bug)."""
    if not getattr(args, "store", None):
        return None
    try:
        from kernelscope.cli.common import open_store

        with open_store(args) as store:
            return store.damage_behind(error)
    except Exception:  # noqa: BLE001 - no readable store: the failure stays what it was
        return None


def print_error(line: str, error: BaseException) -> None:
    """One line; with --traceback (or KERNELSCOPE_TRACEBACK=1) the chain behind it first."""
    if traceback_wanted():
        sys.stderr.write(full_error(error))
        print(line, file=sys.stderr)
    else:
        print(f"{line} ({CLI_TRACEBACK_HINT})", file=sys.stderr)
