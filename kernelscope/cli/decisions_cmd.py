"""`kernelscope decisions [RUN]`: the timing decisions of a run (what a `--target cuda`
run timed on its GPU, what a virtual-cuda run replayed or guessed), and writing them as
a decisions file for `--decisions` (docs/decisions.md)."""
from __future__ import annotations

import argparse
from pathlib import Path

from kernelscope.api.store import Store
from kernelscope.cli.common import new_parser, print_json
from kernelscope.decisions.model import DecisionSet, decision_to_dict, recorded_on, replayable, write_file
from kernelscope.decisions.sources import RUN_REFERENCE, default_file
from kernelscope.errors import UserError
from kernelscope.render.decisions import section_lines


def add_parser(subparsers) -> None:
    parser = new_parser(
        subparsers,
        "decisions",
        help="list a run's timing decisions; write them for --decisions",
        description="List the choices a run's compiles made by timing on the GPU: pad_mm's padding, "
        "max-autotune's GEMM/convolution choices, fusion benchmarks and each Triton kernel's launch "
        "config; a virtual-cuda run says which it replayed from a GPU's recording and which it guessed "
        "(and by which rule). With -o or --default, write the run's decisions (those the GPU made) as a "
        "decisions file that `compile/run/watch --decisions FILE` replay.",
        examples=["kernelscope decisions            # the latest run",
                  "kernelscope decisions 3 --json",
                  "kernelscope decisions 3 -o gpu-decisions.json     # on the GPU machine; copy it anywhere",
                  "kernelscope decisions 3 --default    # .kernelscope/decisions.json: every later compile replays it"],
    )
    parser.add_argument("run", nargs="?", default="latest", metavar="RUN",
                        help="a run id, `latest` or `latest~N` (default: latest)")
    parser.add_argument("--json", action="store_true", help="print the decisions as JSON")
    parser.add_argument("-o", "--output", metavar="FILE", help="write the run's decisions as a decisions file")
    parser.add_argument("--default", action="store_true",
                        help="write them as the store's decisions.json, which compile, run, watch and the language "
                             "server replay when no --decisions is given")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if RUN_REFERENCE.match(args.run) is None:
        raise UserError(f"{args.run!r} is not a run: give a run id, `latest` or `latest~N` (see `kernelscope runs`)")
    with Store(args.store) as store:
        runs = store.runs
        if args.run.isdigit():
            chosen = store.run(int(args.run))
        else:
            back = int(args.run.partition("~")[2] or 0)
            if back >= len(runs):
                raise UserError(f"{args.run}: the store has {len(runs)} run(s) — `kernelscope runs` lists them")
            chosen = runs[back]
        summary, decisions = chosen.summary, chosen.decisions
        targets = [Path(args.output)] if args.output else []
        if args.default:
            targets.append(default_file(Path(args.store)))
        if targets:
            mine = replayable(decisions.decisions)
            if not mine:
                raise UserError(f"run {chosen.id} holds no decisions a GPU made (a --target cuda run does; this one "
                                f"is {summary.device}): nothing to write")
            found = DecisionSet(f"run {chosen.id}", recorded_on(decisions.gpu, summary.torch_version,
                                                                summary.triton_version, summary.target, summary.device),
                                mine)
            for path in targets:
                write_file(found, path)
                print(f"wrote {len(mine)} decision(s) of run {chosen.id} to {path}")
            return 0
        if args.json:
            print_json({"run": chosen.id, "gpu": decisions.gpu, "counts": decisions.counts(),
                        "decisions": [decision_to_dict(d) for d in decisions.decisions],
                        "replay": None if decisions.replay is None else {
                            "source": decisions.replay.source, "recorded_on": decisions.replay.recorded_on,
                            "unused": [decision_to_dict(d) for d in decisions.replay.unused]}})
            return 0
        print(f"run {chosen.id}  {summary.target} ({summary.device}, torch {summary.torch_version})")
        if not decisions.decisions and decisions.replay is None:
            print("  no timing decisions (a run without a GPU target, or recorded before kernelscope kept them)")
            return 0
        for line in section_lines(decisions.gpu, decisions.decisions, decisions.replay, every_launch=True):
            print(line)
    return 0
