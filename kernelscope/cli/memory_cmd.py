"""`kernelscope memory [RUN]`: a run's memory as its compile planned it — each graph's peak
and allocation timeline, what is live at the peak and what the forward saves for the
backward, per model line and module instance (docs/memory.md)."""
from __future__ import annotations

import argparse
import re

from kernelscope.api.store import Store
from kernelscope.cli.common import new_parser, print_json
from kernelscope.errors import UserError
from kernelscope.render.memory import section_lines, timeline_lines
from kernelscope.store.parts.memory import memory_json

RUN_REFERENCE = re.compile(r"^(\d+|latest(~\d+)?)$")


def add_parser(subparsers) -> None:
    parser = new_parser(
        subparsers,
        "memory",
        help="a run's memory: peak, allocation timeline, saved-for-backward bytes per model line",
        description="Read each graph's allocation timeline from its wrapper (allocations, reuses, frees; sizes "
        "from Inductor's IR at the example inputs), its peak and what is live there, and the tensors each forward "
        "saves for its backward (with the backward kernels that read them and what the backward recomputes "
        "instead), per model line and module instance. From the compile alone: works for every target, "
        "virtual-cuda and meta-device models included.",
        examples=["kernelscope memory              # the latest run",
                  "kernelscope memory 3 --json",
                  "kernelscope memory 3 --timeline    # every allocation, reuse and free of each graph",
                  "kernelscope memory 3 --all         # every model line, not the top 10"],
    )
    parser.add_argument("run", nargs="?", default="latest", metavar="RUN",
                        help="a run id, `latest` or `latest~N` (default: latest)")
    parser.add_argument("--json", action="store_true",
                        help="print peak_bytes, per graph the timeline and buffers, and lines as JSON")
    parser.add_argument("--timeline", action="store_true", help="also print each graph's allocation timeline")
    parser.add_argument("--all", action="store_true", help="every model line (default: the 10 holding the most)")
    parser.set_defaults(func=run)


def pick_run(store: Store, reference: str):
    """The run a `RUN` argument names: an id, `latest` or `latest~N`."""
    if RUN_REFERENCE.match(reference) is None:
        raise UserError(f"{reference!r} is not a run: give a run id, `latest` or `latest~N` (see `kernelscope runs`)")
    if reference.isdigit():
        return store.run(int(reference))
    runs = store.runs
    back = int(reference.partition("~")[2] or 0)
    if back >= len(runs):
        raise UserError(f"{reference}: the store has {len(runs)} run(s) — `kernelscope runs` lists them")
    return runs[back]


def run(args: argparse.Namespace) -> int:
    with Store(args.store) as store:
        chosen = pick_run(store, args.run)
        memory = chosen.memory
        if args.json:
            print_json({"run": chosen.id, **(memory_json(memory) if memory is not None else {"peak_bytes": None})})
            return 0
        summary = chosen.summary
        print(f"run {chosen.id}  {summary.target} ({summary.device}, {summary.mode}, torch {summary.torch_version})")
        for line in section_lines(memory, top=10**9 if args.all else 10):
            print(line)
        if args.timeline and memory is not None:
            for graph in memory.graphs:
                for line in timeline_lines(graph, memory.measured):
                    print(line)
    return 0
