"""`kernelscope doctor [--repair]` — check a store, and repair what can be repaired safely."""
from __future__ import annotations

import argparse
import json
import sys

from kernelscope.cli.common import new_parser
from kernelscope.store import integrity


def add_parser(subparsers) -> None:
    parser = new_parser(
        subparsers,
        "doctor",
        help="check the store (database, every run's files) and repair what is safe",
        description="Check the store: that its database opens and is a kernelscope store of a schema this "
        "version reads, SQLite's integrity and foreign-key checks, that every run is whole and every "
        "generated file is there with the content it was written with (sha256), and what interrupted "
        "writes left behind. --repair rebuilds damaged indexes, drops runs that are not whole, removes "
        "leftovers, and sets an unreadable database aside (nothing is deleted from it); good runs are "
        "never touched. Exit codes: 0 healthy (after --repair: nothing left), 5 problems remain.",
        examples=[
            "kernelscope doctor",
            "kernelscope doctor --repair",
            "kernelscope doctor --store ci-artifact/.kernelscope --json",
        ],
        map_path=False,
    )
    parser.add_argument("--repair", action="store_true", help="repair what can be repaired safely, then check again")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    report = integrity.repair(args.store) if args.repair else integrity.check(args.store)
    if args.json:
        sys.stdout.write(json.dumps(report.to_dict(), indent=2, sort_keys=True) + "\n")
    else:
        print(render(report, repairing=args.repair))
    return 0 if report.healthy else 5


def render(report: integrity.Report, repairing: bool) -> str:
    lines = [f"store {report.root}: {report.runs} run(s), {report.files_checked} generated file(s) checked"]
    lines += [f"  repaired: {done}" for done in report.repaired]
    for problem in report.problems:
        fix = f"  [--repair: {problem.repair}]" if problem.repair and not repairing else ""
        lines.append(f"  problem: {problem.message}{fix}")
    if report.healthy:
        lines.append("  healthy" if not report.repaired else "  healthy now")
    elif not repairing and any(problem.repair for problem in report.problems):
        lines.append("  `kernelscope doctor --repair` repairs what is marked; good runs are not touched")
    return "\n".join(lines)
