"""Pieces the read-side subcommands share: --store, FILE:LINE, JSON and number formatting
(the formatting itself lives in kernelscope.render.text, shared with the Python API)."""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys

from kernelscope.api.answer import parse_location
from kernelscope.render.query_tree import Branch, plain_lines

# The CLI's formatting, shared with the Python API (re-exported for the subcommands).
from kernelscope.render.text import format_share, format_table, format_time, graph_break_details  # noqa: F401
from kernelscope.store import DEFAULT_STORE_DIR, StoreBackend
from kernelscope.store.places import MAP_PATH_ENV, PathMap


def add_store_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--store",
        metavar="DIR",
        default=DEFAULT_STORE_DIR,
        help=f"the store directory (default: ./{DEFAULT_STORE_DIR})",
    )


def add_map_path_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--map-path", action="append", default=[], metavar="RECORDED=LOCAL", dest="store_map_path",
        help="read files recorded under RECORDED from LOCAL (a store whose runs were recorded on another "
        f"machine or in another folder; repeatable; also {MAP_PATH_ENV}=RECORDED=LOCAL{os.pathsep}...). "
        "A store moved together with its workspace needs none",
    )


def apply_map_path(args: argparse.Namespace) -> None:
    """Make --map-path pairs the process's (every StoreBackend opened later reads them, the
    TUI's threads included); a malformed pair is a one-line error here."""
    pairs = list(getattr(args, "store_map_path", None) or [])
    if not pairs:
        return
    PathMap.parse(pairs)
    existing = os.environ.get(MAP_PATH_ENV, "")
    os.environ[MAP_PATH_ENV] = os.pathsep.join(pairs + ([existing] if existing else []))


def open_store(args: argparse.Namespace) -> StoreBackend:
    """The existing store named by --store; StoreError says what to do when there is none."""
    return StoreBackend(args.store, create=False)


def new_parser(subparsers, name: str, help: str, description: str, examples: list[str],
               map_path: bool = True) -> argparse.ArgumentParser:
    """A subcommand parser whose help ends in examples; with --store, and with --map-path
    unless `map_path` is false (a command that gives --map-path a meaning of its own)."""
    parser = subparsers.add_parser(
        name,
        help=help,
        description=description,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n" + "\n".join(f"  {example}" for example in examples),
    )
    add_store_argument(parser)
    if map_path:
        add_map_path_argument(parser)
    return parser


def parse_file_line(text: str) -> tuple[str, int]:
    """`examples/mlp.py:14` -> ("examples/mlp.py", 14) (as the Python API's `query` reads it)."""
    return parse_location(text)


def parse_run_id(text: str) -> int:
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"a run id is a number (see `kernelscope runs`), not {text!r}")
    return int(text)


def print_json(data) -> None:
    if dataclasses.is_dataclass(data) and not isinstance(data, type):  # an instance, not a dataclass itself
        data = dataclasses.asdict(data)
    sys.stdout.write(json.dumps(data, indent=2, sort_keys=True) + "\n")


def stdout_is_tty() -> bool:
    return sys.stdout.isatty()


def print_tree(tree: Branch) -> None:
    """A rich tree on a terminal, indented plain lines otherwise."""
    if stdout_is_tty():
        _print_rich(tree)
    else:
        print("\n".join(plain_lines(tree)))


def _print_rich(tree: Branch) -> None:
    from rich.console import Console
    from rich.text import Text
    from rich.tree import Tree

    def add(parent: Tree, branch: Branch) -> None:
        node = parent.add(Text(branch.label, style=branch.style))
        for child in branch.children:
            add(node, child)

    root = Tree(Text(tree.label, style=tree.style))
    for child in tree.children:
        add(root, child)
    Console().print(root)
