"""`kernelscope show [RUN]`: one run in full — the Python API's `Run` (`run.report()`,
`run.to_dict()`), printed."""
from __future__ import annotations

import argparse

from kernelscope.api.store import Store
from kernelscope.cli.common import new_parser, parse_run_id, print_json


def add_parser(subparsers) -> None:
    parser = new_parser(
        subparsers,
        "show",
        help="show one run: graphs, kernels, graph breaks, coverage",
        description="Show a run (the latest by default): its graphs with node and kernel counts, its "
        "kernels, graph breaks with the user line that caused them, recompiles, provenance coverage, "
        "warnings and timings; for a rank of a distributed job, which ranks compiled identical code, "
        "the graphs DDP split, and each graph's collectives in compute/communication order.",
        examples=["kernelscope show", "kernelscope show 3", "kernelscope show 3 --json",
                  "kernelscope show 3 --asm        # each Triton kernel's registers, spills, occupancy (sm_90)"],
    )
    parser.add_argument("run_id", nargs="?", type=parse_run_id, metavar="RUN", help="run id (default: latest)")
    parser.add_argument("--json", action="store_true", help="print the run as JSON")
    parser.add_argument("--asm", action="store_true",
                        help="below the kernel: compile the run's Triton kernels for its GPU where not done yet "
                        "and list each one's registers, spills, shared memory and occupancy")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    with Store(args.store) as store:
        shown = store.run(args.run_id)
        if args.asm:
            from kernelscope.cli import asm_ask

            asm_ask.ensure_built(store.backend, shown.id, quiet=args.json)
        if args.json:
            print_json(shown.to_dict())
        else:
            print(shown.report())
    return 0
