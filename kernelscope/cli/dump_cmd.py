"""`kernelscope dump`: a run as JSON matching kernelscope/schema/dump-v1.json."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from kernelscope.cli.common import new_parser, open_store, parse_run_id
from kernelscope.errors import UserError
from kernelscope.store import dump_json


def add_parser(subparsers) -> None:
    parser = new_parser(
        subparsers,
        "dump",
        help="write a run as JSON (for CI diffs and other tools)",
        description="Write a run (the latest by default) as deterministic JSON: sorted keys and lists, "
        "workspace-relative source paths, generated files as store-relative paths with sha256. "
        "The format is described by the JSON Schema kernelscope/schema/dump-v1.json.",
        examples=["kernelscope dump", "kernelscope dump --run 3 -o run3.json",
                  "kernelscope dump -o run.json && kernelscope validate run.json"],
    )
    parser.add_argument("--run", dest="run_id", type=parse_run_id, metavar="ID", help="run id (default: latest)")
    parser.add_argument("-o", "--output", metavar="FILE", help="write to FILE instead of stdout")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    with open_store(args) as store:
        text = dump_json(store.dump(args.run_id))
    if args.output is None:
        sys.stdout.write(text)
        return 0
    try:
        Path(args.output).write_text(text, encoding="utf-8")
    except OSError as error:
        raise UserError(f"cannot write {args.output}: {error.strerror} — pick another -o FILE") from error
    return 0
