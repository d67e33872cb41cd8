"""`kernelscope dump`: a run as deterministic JSON matching kernelscope/schema/dump-v9.json (the
Python API's `run.dump()`, written out)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from kernelscope.api.store import Store
from kernelscope.cli.common import new_parser, parse_run_id
from kernelscope.errors import UserError
from kernelscope.store import dump_json


def add_parser(subparsers) -> None:
    parser = new_parser(
        subparsers,
        "dump",
        help="write a run as JSON (for CI diffs and other tools)",
        description="Write a run (the latest by default) as deterministic JSON: two recordings of the same "
        "model dump byte-identically. Keys and lists are sorted, source paths are workspace-relative "
        "(`<site-packages>/...` for installed packages), generated files are named by their path in the "
        "run's directory with the sha256 of their portable text. The format is the JSON Schema "
        "kernelscope/schema/dump-v9.json (`kernelscope validate FILE` checks it).",
        examples=["kernelscope dump -o baseline.json",
                  "kernelscope dump --run 3 -o run3.json && kernelscope validate run3.json",
                  "kernelscope dump --include-volatile --absolute-paths | jq .run.volatile",
                  "kernelscope diff baseline.json latest"],
    )
    parser.add_argument("--run", dest="run_id", type=parse_run_id, metavar="ID", help="run id (default: latest)")
    parser.add_argument("-o", "--output", metavar="FILE", help="write to FILE instead of stdout")
    parser.add_argument("--include-volatile", action="store_true",
                        help="add run.volatile: the run id, creation time, timings and peak memory "
                             "(they differ between two recordings, so the dump is no longer reproducible)")
    parser.add_argument("--absolute-paths", action="store_true",
                        help="write every source and generated-file path as an absolute path on this machine")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    with Store(args.store) as store:
        text = dump_json(store.run(args.run_id).dump(include_volatile=args.include_volatile,
                                                   absolute_paths=args.absolute_paths))
    if args.output is None:
        sys.stdout.write(text)
        return 0
    try:
        Path(args.output).write_text(text, encoding="utf-8")
    except OSError as error:
        raise UserError(f"cannot write {args.output}: {error.strerror} — pick another -o FILE") from error
    return 0
