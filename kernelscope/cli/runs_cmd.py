"""`kernelscope runs`: list the recorded runs, newest first (the Python API's
`store.runs`, printed)."""
from __future__ import annotations

import argparse

from kernelscope.api.store import Store
from kernelscope.cli.common import new_parser, print_json


def add_parser(subparsers) -> None:
    parser = new_parser(
        subparsers,
        "runs",
        help="list recorded runs",
        description="List the runs in the store, newest first: target, device, mode, graph and "
        "kernel counts, and how much of each run carries line-level provenance.",
        examples=["kernelscope runs", "kernelscope runs --json", "kernelscope runs --store /tmp/ks/.kernelscope"],
    )
    parser.add_argument("--json", action="store_true", help="print the runs as JSON")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    with Store(args.store) as store:
        runs = store.runs
    if args.json:
        print_json(runs.to_dicts())
    else:
        print(runs.table())
    return 0
