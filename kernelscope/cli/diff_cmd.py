"""`kernelscope diff A B`: compare two recordings, with CI gates."""
from __future__ import annotations

import argparse
import re
import sys
import textwrap
from pathlib import Path

from kernelscope.cli.common import new_parser
from kernelscope.diff import GATES, compare_runs, evaluate_gates, load_side, parse_gates
from kernelscope.diff.gates import exit_code, gate_tolerances
from kernelscope.diff.report import FORMATS, render
from kernelscope.errors import StoreError, UserError

EXIT_CODES = """exit status:
  0  no gate tripped (the runs may still differ; the report says how)
  1  a gate named by --fail-on tripped; the report lists which and why
  2  bad arguments, or a side that is not a readable dump
  5  a store problem: no store, no such run"""


def add_parser(subparsers) -> None:
    parser = new_parser(
        subparsers,
        "diff",
        help="compare two runs or dumps; --fail-on gates for CI",
        description=textwrap.fill(
            "Compare run A (the baseline) with run B. Each is a file written by `kernelscope dump` "
            "(or `kernelscope compile --dump FILE`), '-' for stdin, or a run of --store: an id (3), `latest` "
            "or `latest~N` (N runs before the latest). Kernels are paired by the source lines and ops they "
            "compute, not by name, so a renamed fused kernel shows as a change of fusion; source lines are "
            "aligned on their code, so inserted lines do not shift the comparison.", width=79) + "\n\n"
        "gates (--fail-on, comma-separated or repeated; `all` for every gate):\n"
        + "\n".join(f"  {name:<14} {gate.help}" for name, gate in GATES.items())
        + "\n\n" + EXIT_CODES,
        examples=["kernelscope diff latest~1 latest",
                  "kernelscope diff baseline.json new.json --fail-on kernel-count,graph-break,fallback",
                  "kernelscope diff baseline.json latest --format md -o diff.md",
                  "kernelscope diff 3 4 --format json | jq .source_lines",
                  "kernelscope diff rank0 rank1                  # two ranks of the latest distributed job",
                  "kernelscope diff base.json new.json --fail-on device-time --time-tolerance 5   # profiled dumps",
                  "kernelscope diff latest~1 latest --fail-on memory+10%   # peak memory up by more than 10%"],
    )
    parser.add_argument("before", metavar="A",
                        help="baseline: dump file, '-', or run (3, latest, latest~1, rank0: a rank's latest run)")
    parser.add_argument("after", metavar="B", help="new: dump file, '-', or run")
    parser.add_argument("--format", choices=FORMATS, default="text",
                        help="text (default), json (for tools) or md (a pull-request comment)")
    parser.add_argument("--fail-on", action="append", metavar="GATES",
                        help="exit 1 when one of these gates trips, e.g. kernel-count,graph-break,fallback")
    parser.add_argument("-o", "--output", metavar="FILE", help="write the report to FILE instead of stdout")
    parser.add_argument("--time-tolerance", type=float, default=10.0, metavar="PCT",
                        help="device-time gate: trip above A's device time per step plus PCT percent (default: 10)")
    parser.set_defaults(func=run)


_RANK = re.compile(r"^rank:?(\d+)$")


def _rank_run(spec: str, store_dir: str) -> str:
    """`rank1` (or `rank:1`): the latest run of rank 1, in the job of the store's latest
    distributed run; other sides pass through."""
    match = _RANK.match(spec)
    if match is None or Path(spec).is_file():
        return spec
    from kernelscope.store import StoreBackend

    with StoreBackend(store_dir, create=False) as store:
        run_id = store.latest_run_of_rank(int(match.group(1)))
    if run_id is None:
        raise StoreError(f"{spec}: no run of rank {match.group(1)} in {store_dir} — record the job's ranks "
                         "(under torchrun, then `kernelscope merge`), or give run ids (`kernelscope runs`)")
    return str(run_id)


def run(args: argparse.Namespace) -> int:
    gate_names = parse_gates(args.fail_on)
    tolerances = gate_tolerances(args.fail_on)
    if args.before == "-" and args.after == "-":
        raise UserError("only one side of the diff can be read from stdin ('-')")
    before = load_side(_rank_run(args.before, args.store), args.store)
    after = load_side(_rank_run(args.after, args.store), args.store)
    diff = compare_runs(before, after)
    if diff.device_time is not None:
        diff.device_time.tolerance = args.time_tolerance / 100
    if diff.memory is not None:
        diff.memory.tolerance = tolerances.get("memory", diff.memory.tolerance)
    results = evaluate_gates(diff, gate_names)
    code = exit_code(results)
    text = render(diff, results, code, args.format)
    if args.output is None:
        sys.stdout.write(text)
    else:
        try:
            Path(args.output).write_text(text, encoding="utf-8")
        except OSError as error:
            raise UserError(f"cannot write {args.output}: {error.strerror} — pick another -o FILE") from error
    return code
