"""`kernelscope compile PATH.py:FACTORY` — record a compile of what a factory returns."""
from __future__ import annotations

import argparse
from pathlib import Path

from kernelscope.cli import distributed_args, recording_output
from kernelscope.errors import UserError


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "compile",
        help="compile a model factory and record its provenance",
        description="Import PATH.py, call FACTORY() -> (model_or_callable, example_inputs), "
        "compile it with torch.compile and record every graph, kernel and link into the store. "
        "A factory with a `device` parameter is called as FACTORY(device=...): 'cuda' for "
        "--target cuda and virtual-cuda (which runs the factory as a GPU program, on its virtual GPU), "
        "'cpu' for cpu-triton and for a rank of --world-size.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n"
        "  kernelscope compile examples/mlp.py:make\n"
        "  kernelscope compile examples/mlp.py:make --train\n"
        "  kernelscope compile examples/function.py:make --target cpu-triton --execute\n"
        "  kernelscope compile model.py:make --json > run.json\n"
        "  kernelscope compile examples/mlp.py:make --target cuda --profile --steps 20   # on a GPU\n"
        "  kernelscope compile examples/mlp.py:make --train --target cuda --memory   # measured memory, on a GPU\n"
        "  kernelscope compile model.py:make --decisions gpu-run.json   # a GPU's pad_mm/autotune choices\n"
        "  kernelscope compile examples/distributed/llama_tp.py:make --world-size 8   # rank 0 of 8, faked\n"
        "  kernelscope compile examples/swiglu_mlp.py:make --aot --target cpu   # AOTInductor, its C++ wrapper",
    )
    parser.add_argument("target", metavar="PATH.py:FACTORY")
    recording_output.add_recording_arguments(parser)
    parser.add_argument("--train", action="store_true",
                        help="compile forward and backward of a scalar loss (sum of the outputs)")
    parser.add_argument("--dynamic", action="store_true", help="mark the batch dimension dynamic")
    parser.add_argument("--against-eager", action="store_true",
                        help="with --train: also run the model's forward eagerly under saved-tensor hooks (on the "
                             "CPU, or free on the meta device), so `kernelscope memory` sets what eager saves for "
                             "the backward beside what the compiled graphs save, per model line")
    parser.add_argument("--memory", action="store_true",
                        help="--target cuda (or cpu-triton --execute): then run the compiled step once more with "
                             "every allocation recorded (the CUDA caching allocator's history), so `kernelscope "
                             "memory` sets the measured peak and each wrapper line's bytes beside the predicted")
    parser.add_argument("--profile", action="store_true",
                        help="on a GPU: then run the compiled model (warm-up, then --steps steps) under "
                             "torch.profiler and attach each kernel's device time to the run")
    parser.add_argument("--steps", type=int, default=10, help="profiled steps with --profile (default: 10)")
    parser.add_argument("--aot", action="store_true",
                        help="build with AOTInductor (torch.export + aoti_compile_and_package) instead of "
                             "torch.compile: its C++ wrapper linked line by line, the .pt2 package kept with the run "
                             "(docs/aot.md)")
    add_cpp_wrapper_argument(parser)
    distributed_args.add_distributed_arguments(parser)
    parser.set_defaults(func=run)


def add_cpp_wrapper_argument(parser) -> None:
    parser.add_argument("--cpp-wrapper", action="store_true",
                        help="Inductor's C++ wrapper instead of its Python one (torch._inductor.config.cpp_wrapper), "
                             "linked line by line as wrapper.cpp (docs/aot.md)")


def run(args) -> int:
    if args.against_eager and not args.train:
        raise UserError("--against-eager compares what the backward keeps: add --train")
    if args.profile and args.memory:
        raise UserError("--memory and --profile each run the compiled step again: give one of them")
    if args.profile:
        from kernelscope.cli.profile_cmd import compile_and_profile

        return compile_and_profile(args)
    from kernelscope.engine.recorder import RecordOptions, record_factory

    distributed_args.store_for_rank(args)  # under torchrun: STORE/rank-<R>
    decisions = recording_output.resolve_decisions(args)

    def record(on_phase):
        options = RecordOptions(
            device=args.target_device, train=args.train, dynamic=args.dynamic,
            execute=args.execute, workspace=Path.cwd(), on_phase=on_phase, decisions=decisions,
            against_eager=args.against_eager, measure_memory=args.memory, aot=args.aot,
            cpp_wrapper=args.cpp_wrapper, **distributed_args.record_options(args),
        )
        return record_factory(args.target, options)

    return recording_output.record_and_store(args, record)
