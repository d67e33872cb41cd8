"""`kernelscope run SCRIPT.py -- ARGS` — record every compile an unmodified script does."""
from __future__ import annotations

import argparse
from pathlib import Path

from kernelscope.cli import compile_cmd, distributed_args, numerics_cmd, recording_output


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "run",
        help="run a script unchanged and record every torch.compile it does",
        description="Run SCRIPT.py as __main__ with the ARGS that follow `--`; every graph torch.compile compiles "
        "while it runs is recorded into one run, with zero changes to the script.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n"
        "  kernelscope run examples/train_script.py\n"
        "  kernelscope run examples/train_script.py --target cpu-triton -- --steps 3\n"
        "  kernelscope run train.py --store /tmp/ks -- --epochs 1 --batch 8\n"
        "  torchrun --nproc-per-node 2 -m kernelscope run examples/distributed/llama_tp.py   # every rank\n"
        "  kernelscope merge                                  # then: the ranks' stores into one\n"
        "  kernelscope run examples/distributed/llama_tp.py --world-size 8   # one rank of 8, no GPU",
    )
    parser.add_argument("script", metavar="SCRIPT.py")
    recording_output.add_recording_arguments(parser)
    distributed_args.add_distributed_arguments(parser)
    parser.add_argument("--numerics", action="store_true",
                        help="compare every compiled kernel's outputs with eager and name the model line where they "
                             "part ways, as `kernelscope numerics` does (--target cpu-triton or cuda)")
    numerics_cmd.add_numerics_arguments(parser)
    compile_cmd.add_cpp_wrapper_argument(parser)
    parser.set_defaults(func=run)


def run(args) -> int:
    from kernelscope.engine.recorder import RecordOptions, record_script

    script_args = list(args.passthrough)  # what followed `--` on the command line
    distributed = distributed_args.record_options(args)
    root = Path(args.store)
    launched = distributed_args.store_for_rank(args)  # under torchrun: STORE/rank-<R>
    decisions = recording_output.resolve_decisions(args)

    def record(on_phase):
        if args.numerics:
            options = numerics_cmd.numerics_options(args, on_phase)
            return numerics_cmd.record_with_fixes(
                lambda opts: record_script(Path(args.script), script_args, opts), options, args.no_fixes)
        options = RecordOptions(
            device=args.target_device, execute=args.execute, workspace=Path.cwd(),
            on_phase=on_phase, decisions=decisions, cpp_wrapper=args.cpp_wrapper, **distributed,
        )
        return record_script(Path(args.script), script_args, options)

    code = recording_output.record_and_store(args, record)
    if launched is not None and not args.json:
        print(f"  rank {launched[0]} of {launched[1]} recorded into its own store {args.store}; when every rank "
              f"is done: kernelscope merge --store {root}")
    return code
