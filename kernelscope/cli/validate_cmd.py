"""`kernelscope validate FILE`: check a dump against the JSON Schema."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from kernelscope.errors import UserError
from kernelscope.store import schema_problems


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "validate",
        help="check a dump against the dump JSON Schema",
        description="Validate a file written by `kernelscope dump` against the JSON Schema of its "
        "`schema_version` (kernelscope/schema/dump-v9.json for 9.0, dump-v8.json for 8.0, dump-v7.json for 7.0, "
        "dump-v6.json for 6.0, dump-v5.json for 5.0, dump-v4.json for 4.0, dump-v3.json for 3.0, dump-v2.json for 2.0, "
        "dump-v1.json for 1.0). "
        "Exit status 0 when valid; 1 with the JSON path of each problem when not; 2 when FILE cannot be read.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n  kernelscope validate run.json\n  kernelscope dump | kernelscope validate -",
    )
    parser.add_argument("file", metavar="FILE", help="the dump to check ('-' for stdin)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    name = "<stdin>" if args.file == "-" else args.file
    try:
        text = sys.stdin.read() if args.file == "-" else Path(args.file).read_text(encoding="utf-8")
    except OSError as error:
        raise UserError(f"cannot read {args.file}: {error.strerror}") from error
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        print(f"{name}: not JSON: line {error.lineno} column {error.colno}: {error.msg}")
        return 1
    problems = schema_problems(data)
    if not problems:
        print(f"{name}: valid kernelscope dump (schema {data.get('schema_version')})")
        return 0
    for problem in problems:
        print(f"{name}: {problem.path}: {problem.message}")
    print(f"{name}: {len(problems)} problem{'s' if len(problems) != 1 else ''}")
    return 1
