"""What running a factory as a GPU program costs (devices/factory_program.py), without a compile.

`python bench/factory_program_cost.py` takes factories (default: the suite's Llama and
Mixtral, inference and training) and, alternating in this process for several rounds, runs
each twice: plainly on the CPU, as virtual-cuda captured a factory before (the factory call,
then one eager call of the model, and for training the backward of its loss); and as
virtual-cuda runs it now, inside `cuda_program()` (the factory call, the move to the virtual
GPU, the same eager call). It prints the median CPU time (`time.process_time`, steadier than
wall time on a shared machine) of the build (factory call and move) and of the eager call
on both sides, and their ratios. The compile itself is not timed: it does the same work on
fake tensors either way (a recording's whole time is `kernelscope compile`'s `timings`).
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
DEFAULT = ["bench/suite/hf_decoders.py:llama", "bench/suite/hf_decoders.py:llama_train",
           "bench/suite/hf_moe.py:mixtral", "bench/suite/hf_moe.py:mixtral_train"]


def _one(spec: str, as_program: bool) -> tuple[float, float]:
    """(build seconds, eager-call seconds) of `spec`, CPU time, plainly or as a program."""
    import contextlib

    import torch

    from kernelscope.engine import targets, user_model
    from kernelscope.engine.devices import cuda_program, factory_program

    target = targets.parse_factory_spec(str(REPO / spec))
    train = spec.endswith("_train")
    with cuda_program.cuda_program() if as_program else contextlib.nullcontext():
        started = time.process_time()
        model, inputs = targets.load_factory(target, factory_program.DEVICE if as_program else "cpu")
        if as_program:
            inputs = factory_program.on_the_virtual_gpu(model, inputs)
        built = time.process_time()
        with contextlib.nullcontext() if train else torch.no_grad():
            outputs = model(*inputs)
            if train:
                user_model.scalar_loss(outputs).backward()
        return built - started, time.process_time() - built


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("specs", nargs="*", default=DEFAULT, help="PATH.py:FACTORY, relative to the repository")
    parser.add_argument("--rounds", type=int, default=5, help="alternating rounds per factory (median taken)")
    args = parser.parse_args()
    import torch

    torch.set_num_threads(1)
    print(f"{'factory':30} {'build cpu':>10} {'program':>8} {'ratio':>6}   "
          f"{'eager cpu':>10} {'program':>8} {'ratio':>6}")
    for spec in args.specs:
        _one(spec, False), _one(spec, True)  # warm: imports, first-call caches
        plain, program = [], []
        for _ in range(args.rounds):
            plain.append(_one(spec, False))
            program.append(_one(spec, True))
        (build, eager), (build_p, eager_p) = ([statistics.median(side[i] for side in runs) for i in (0, 1)]
                                              for runs in (plain, program))
        print(f"{spec.split('/')[-1]:30} {build * 1e3:8.1f}ms {build_p * 1e3:6.1f}ms {build_p / build:5.2f}x   "
              f"{eager * 1e3:8.1f}ms {eager_p * 1e3:6.1f}ms {eager_p / eager:5.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
