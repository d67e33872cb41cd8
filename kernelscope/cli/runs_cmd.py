"""`kernelscope runs`: list the recorded runs, newest first."""
from __future__ import annotations

import argparse
import dataclasses

from kernelscope.cli.common import format_share, format_table, format_time, new_parser, open_store, print_json


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
    with open_store(args) as store:
        runs = store.runs()
        ranks = store.ranks_of_runs([summary.id for summary in runs])  # runs of a distributed job
    if args.json:
        print_json([{**dataclasses.asdict(summary), "rank": dataclasses.asdict(ranks[summary.id])
                     if summary.id in ranks else None} for summary in runs])
        return 0
    if not runs:
        print("no runs yet — record one with `kernelscope compile FILE.py:FACTORY`")
        return 0
    header = ["id", "created", "target", "device", "mode", "graphs", "kernels", "kernel lines", "wrapper lines"]
    rows = [
        [str(summary.id), format_time(summary.created), summary.target, summary.device, summary.mode,
         str(summary.graph_count), str(summary.kernel_count),
         format_share(summary.coverage["kernel_lines"]), format_share(summary.coverage["wrapper_lines"])]
        for summary in runs
    ]
    if ranks:
        header.insert(3, "rank")
        for summary, row in zip(runs, rows):
            rank = ranks.get(summary.id)
            row.insert(3, f"{rank.rank}/{rank.world_size}" if rank else "-")
    print(format_table(header, rows))
    return 0
