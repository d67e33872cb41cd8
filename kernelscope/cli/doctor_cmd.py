"""`kernelscope doctor [--repair]` — check a store, and repair what can be repaired safely.
`kernelscope doctor --torch` — check the installed torch: every patch point, port and version gate."""
from __future__ import annotations

import argparse
import json
import sys

from kernelscope.cli.common import new_parser
from kernelscope.store.health import integrity


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
        "never touched. Exit codes: 0 healthy (after --repair: nothing left), 5 problems remain. "
        "--torch checks the installed torch instead: every place kernelscope patches inside torch and Triton, "
        "every ATen port and version gate, with its status (ok, unverified, broken) and why; exit 1 when one "
        "is broken.",
        examples=[
            "kernelscope doctor",
            "kernelscope doctor --repair",
            "kernelscope doctor --store ci-artifact/.kernelscope --json",
            "kernelscope doctor --torch",
            "kernelscope doctor --torch --json",
        ],
        map_path=False,
    )
    parser.add_argument("--repair", action="store_true", help="repair what can be repaired safely, then check again")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--torch", action="store_true",
                        help="check the installed torch (patch points, ports, version gates), not the store")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.torch:
        return run_torch(args)
    report = integrity.repair(args.store) if args.repair else integrity.check(args.store)
    if args.json:
        sys.stdout.write(json.dumps(report.to_dict(), indent=2, sort_keys=True) + "\n")
    else:
        print(render(report, repairing=args.repair))
    return 0 if report.healthy else 5


def run_torch(args: argparse.Namespace) -> int:
    """`doctor --torch`: imports torch (engine/torch_doctor.py)."""
    if args.repair:
        sys.stderr.write("kernelscope: error: --repair checks the store; it does not go with --torch\n")
        return 2
    from kernelscope.engine import torch_doctor

    report = torch_doctor.report()
    if args.json:
        sys.stdout.write(json.dumps(report, indent=2) + "\n")
    else:
        print(render_torch(report))
    return 1 if torch_doctor.broken(report["patch_points"]) else 0


def render_torch(report: dict) -> str:
    rows = report["patch_points"]
    counts = {status: sum(row["status"] == status for row in rows) for status in ("ok", "unverified", "broken")}
    lines = [f"torch {report['torch']}, triton {report['triton'] or 'not installed'}: {len(rows)} patch points, "
             f"ports and gates: " + ", ".join(f"{count} {status}" for status, count in counts.items())]
    for row in rows:
        lines.append(f"  {row['status']:<10} {row['kind']:<5} {row['feature']:<18} {row['name']}")
        if row["status"] != "ok":
            lines.append(f"             {row['why']}")
    return "\n".join(lines)


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
