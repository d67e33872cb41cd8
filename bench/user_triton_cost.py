"""What a program's own Triton kernel costs on the virtual GPU: a launch in Triton's interpreter.

`python bench/user_triton_cost.py` launches one elementwise `@triton.jit` kernel
(`out = 2 * x + y`) inside `cuda_program()` (what `kernelscope run` puts a script in), where
each launch runs in Triton's interpreter (devices/user_triton.py), for a few sizes and block
sizes; it prints the median time of a launch, per program instance of the grid, and the same
op in torch on the virtual GPU (eager, on the CPU), each measured in this run (1 thread, median of `--rounds`).
Each launch's result is checked against torch's.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

CASES = ((2**16, 1024), (2**20, 1024), (2**16, 64))  # (elements, BLOCK)


def _kernel():
    import triton
    import triton.language as tl

    @triton.jit
    def axpy_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offsets < n
        x = tl.load(x_ptr + offsets, mask=mask)
        tl.store(out_ptr + offsets, 2 * x + tl.load(y_ptr + offsets, mask=mask), mask=mask)

    return axpy_kernel


def _median(rounds: int, run, *args, **kwargs) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        run(*args, **kwargs)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _twice_plus(x, y):
    return 2 * x + y


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    import torch
    import triton

    from kernelscope.engine.devices.cuda_program import cuda_program

    torch.set_num_threads(1)
    kernel = _kernel()
    print("| elements | BLOCK | instances | interpreted launch | per instance | torch eager |")
    print("|---|---|---|---|---|---|")
    with cuda_program():
        for n, block in CASES:
            x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
            out = torch.empty_like(x)
            grid = (triton.cdiv(n, block),)
            launch = _median(args.rounds, kernel[grid], x, y, out, n, BLOCK=block)
            assert torch.equal(out, _twice_plus(x, y))
            eager = _median(args.rounds, _twice_plus, x, y)
            print(f"| {n} | {block} | {grid[0]} | {launch * 1e3:.1f} ms | {launch / grid[0] * 1e6:.0f} µs | "
                  f"{eager * 1e3:.2f} ms |")


if __name__ == "__main__":
    main()
