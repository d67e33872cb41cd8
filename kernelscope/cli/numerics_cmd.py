"""`kernelscope numerics PATH.py:FACTORY` — where compiled and eager part ways, at the model line.

Records the factory's compile with every Triton kernel's outputs compared with eager
(engine/numerics/), then, unless --no-fixes, recompiles with the diverging line left to
eager and with emulate_precision_casts to say whether the divergence goes away; stores the
run with its numerics and prints them (docs/numerics.md).
"""
from __future__ import annotations

import argparse
import contextlib
import json
import sys
from pathlib import Path

from kernelscope.api.recording import write_run
from kernelscope.cli.common import add_store_argument
from kernelscope.cli.progress import phase_display


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "numerics",
        help="compare every compiled kernel's outputs with eager and name the model line where they part ways",
        description="Compile what FACTORY returns and run it; compare every Triton kernel's output buffers, in "
        "launch order, forward and backward, with eager's values of the post-grad nodes they store (and with a "
        "float64 judge); inside the first kernel that diverges, name the first fused node that does, and its model "
        "line. Then recompile with that line left to eager, and with emulate_precision_casts, and say whether the "
        "divergence is gone. The run is stored with its numerics (`show`, the editor, `diff --fail-on numerics`).",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n"
        "  kernelscope numerics examples/numerics_fp16_overflow.py:make\n"
        "  kernelscope numerics examples/numerics_bf16_rounding.py:make --json\n"
        "  kernelscope numerics model.py:make --train --rtol 1e-3 --atol 1e-5\n"
        "  kernelscope numerics model.py:make --target cuda            # on a GPU\n"
        "  kernelscope numerics model.py:make --eager-line model.py:42  # recompile with line 42 left to eager",
    )
    parser.add_argument("target", metavar="PATH.py:FACTORY")
    add_store_argument(parser)
    add_numerics_arguments(parser)
    parser.add_argument("--target", dest="target_device", default="auto", choices=["auto", "cuda", "cpu-triton"],
                        help="cpu-triton: kernels run in Triton's interpreter on the CPU; cuda: on the GPU "
                             "(auto: cuda with a GPU, else cpu-triton)")
    parser.add_argument("--train", action="store_true", help="forward and backward of a scalar loss (gradients too)")
    parser.add_argument("--dynamic", action="store_true", help="mark the batch dimension dynamic")
    parser.add_argument("--json", action="store_true", help="print the numerics as JSON (docs/numerics.md)")
    parser.set_defaults(func=run)


def add_numerics_arguments(parser) -> None:
    """--rtol, --atol, --eager-line, --emulate-precision-casts, --no-fixes (numerics, run --numerics)."""
    parser.add_argument("--rtol", type=float, help="relative tolerance (default: per dtype, docs/numerics.md)")
    parser.add_argument("--atol", type=float, help="absolute tolerance (default: per dtype)")
    parser.add_argument("--eager-line", action="append", default=[], metavar="FILE.py:LINE",
                        help="leave this model line's nodes to eager (Inductor's fallback) in the compile itself; "
                             "repeatable")
    parser.add_argument("--emulate-precision-casts", action="store_true",
                        help="compile with torch._inductor.config.emulate_precision_casts=True")
    parser.add_argument("--no-fixes", action="store_true",
                        help="do not recompile to try the fixes (the line left to eager, emulate_precision_casts)")


def numerics_options(args, on_phase):
    """The RecordOptions of a numerics recording from the command line."""
    from kernelscope.engine.devices.device_target import resolve_device
    from kernelscope.engine.numerics.fallback import parse_line
    from kernelscope.engine.recorder import RecordOptions

    device = args.target_device
    if device == "auto":
        device = "cuda" if resolve_device("auto") == "cuda" else "cpu-triton"
    return RecordOptions(device=device, train=getattr(args, "train", False), dynamic=getattr(args, "dynamic", False),
                         execute=device == "cpu-triton", workspace=Path.cwd(), on_phase=on_phase, numerics=True,
                         rtol=args.rtol, atol=args.atol,
                         eager_lines=[parse_line(spec, Path.cwd()) for spec in args.eager_line],
                         emulate_precision_casts=args.emulate_precision_casts)


def record_with_fixes(record, options, no_fixes: bool):
    """record(options) -> RunRecord, then the fixes tried on its first divergence."""
    from kernelscope.engine.numerics.fixes import try_fixes

    run = record(options)
    if not no_fixes and run.numerics is not None:
        run.numerics.fixes = try_fixes(record, options, run.numerics)
    return run


def run(args) -> int:
    from kernelscope.engine.recorder import record_factory

    with phase_display(enabled=not args.json) as on_phase:
        user_output = contextlib.redirect_stdout(sys.stderr) if args.json else contextlib.nullcontext()
        with user_output:
            options = numerics_options(args, on_phase)
            recorded = record_with_fixes(lambda opts: record_factory(args.target, opts), options, args.no_fixes)
        on_phase("store", args.store)
        stored = write_run(recorded, args.store)
    with stored.store:
        print_numerics(stored, args.json)
    return 0


def print_numerics(stored, as_json: bool) -> None:
    from kernelscope.render.numerics import report_lines

    report = stored.numerics
    if as_json:
        sys.stdout.write(json.dumps({"run": stored.id, "store": str(stored.store.path), **stored.numerics_dict()},
                                    indent=2, sort_keys=True) + "\n")
        return
    print(f"run {stored.id} of {stored.target} ({report.target})")
    print("\n".join(report_lines(report)))
    print(f"  next: kernelscope show {stored.id}   ·   kernelscope query FILE:LINE")
