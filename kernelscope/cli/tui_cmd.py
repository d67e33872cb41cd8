"""`kernelscope tui [TARGET]` — the terminal explorer (Textual) over the store."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from kernelscope.cli.common import new_parser, parse_run_id
from kernelscope.cli.recording_output import add_target_arguments
from kernelscope.errors import StoreError, UserError


def add_parser(subparsers) -> None:
    parser = new_parser(
        subparsers,
        "tui",
        help="explore a run in the terminal: source | post-grad | kernel | wrapper, linked",
        description="Open the terminal explorer: four linked panes (model source, post-grad graph, "
        "kernel, wrapper); moving the cursor in one highlights the linked lines in the others. "
        "With PATH.py:FACTORY it records the target first, in the engine worker (torch is never "
        "imported by the explorer itself); without, it opens the latest run of the store. "
        "--watch records again on every save and updates the panes in place. Press ? for the keys.",
        examples=["kernelscope tui                               # the latest run of ./.kernelscope",
                  "kernelscope tui examples/mlp.py:make          # record, then open",
                  "kernelscope tui examples/mlp.py:make --watch --train",
                  "kernelscope tui --run 3 --store /tmp/store"],
    )
    parser.add_argument("target", metavar="PATH.py:FACTORY", nargs="?",
                        help="record this model factory first (as `kernelscope compile`)")
    parser.add_argument("--run", type=parse_run_id, metavar="ID", help="open this run (default: the latest)")
    parser.add_argument("--watch", action="store_true", help="record again on every save (needs a TARGET)")
    parser.add_argument("--train", action="store_true",
                        help="compile forward and backward of a scalar loss (sum of the outputs)")
    parser.add_argument("--dynamic", action="store_true", help="mark the batch dimension dynamic")
    parser.add_argument("--build-timeout", type=float, default=600.0, metavar="SECONDS",
                        help="stop a build that runs longer and restart the engine worker (default: 600)")
    parser.add_argument("--memory-limit", type=int, metavar="MB",
                        help="cap the engine worker's memory (RLIMIT_AS; default: no cap)")
    add_target_arguments(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from kernelscope.tui.app import KernelscopeApp
    from kernelscope.tui.compile_driver import CompileRequest

    if args.build_timeout <= 0 or (args.memory_limit is not None and args.memory_limit < 1):
        raise UserError("--build-timeout and --memory-limit must be positive numbers")
    if args.watch and not args.target:
        raise UserError("--watch needs a target to record, e.g. `kernelscope tui examples/mlp.py:make --watch`")
    request = None
    if args.target:
        from kernelscope.watch.session import resolve_target

        if resolve_target(args.target, Path.cwd())[1] is None:  # a clear error before the screen opens
            raise UserError(f"{args.target}: the explorer records a factory (PATH.py:FACTORY); record a script "
                            f"with `kernelscope run {args.target}` or `kernelscope watch {args.target}`, "
                            "then open it with `kernelscope tui`")
        request = CompileRequest(target=args.target, store=Path(args.store), workspace=Path.cwd(), watch=args.watch,
                                 device=args.target_device, train=args.train, dynamic=args.dynamic,
                                 execute=args.execute, build_timeout=args.build_timeout,
                                 memory_limit_mb=args.memory_limit)
    elif not (Path(args.store) / "kernelscope.sqlite").exists():
        raise StoreError(f"no kernelscope store at {args.store} — run `kernelscope tui PATH.py:FACTORY` "
                        "(or `kernelscope compile`) first, or pass --store DIR")
    app = KernelscopeApp(args.store, run_id=args.run, compile_request=request)
    app.run()
    for text in getattr(app, "full_errors", []):  # KERNELSCOPE_TRACEBACK=1 / --traceback: after the screen closes
        sys.stderr.write(text.rstrip("\n") + "\n")
    return 0
