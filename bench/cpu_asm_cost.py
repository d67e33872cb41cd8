"""What building C++ kernels to x86-64 costs (docs/below-the-kernel.md, "C++ kernels").

Compiles small models with torch.compile on CPU tensors (Inductor's default cpp backend),
takes each C++ kernel from Inductor's output code, and builds it as kernelscope does
(kernelscope.engine.cpu_asm_build.build_cpp_kernel): seconds per kernel (wall clock, and
the CPU seconds of the compiler and objdump processes, which a loaded machine does not
inflate), next to the seconds torch.compile took for the model (its first call, fresh caches).

    PYTHONPATH=. python bench/cpu_asm_cost.py [--out FILE.json]
"""
from __future__ import annotations

import argparse
import json
import os
import re
import resource
import tempfile
import time
from pathlib import Path

_CPP_KERNEL = re.compile(r"(cpp_fused_\w+) = async_compile\.cpp_pybinding\(\[[^\]]*\], r'''(.*?)'''\)", re.DOTALL)


def _models():
    import torch
    from torch import nn

    class SwiGLU(nn.Module):
        def __init__(self):
            super().__init__()
            self.gate, self.up, self.down = nn.Linear(64, 172), nn.Linear(64, 172), nn.Linear(172, 64)

        def forward(self, x):
            return self.down(nn.functional.silu(self.gate(x)) * self.up(x))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm = nn.LayerNorm(64)
            self.attention = nn.MultiheadAttention(64, 4, batch_first=True)
            self.mlp = SwiGLU()

        def forward(self, x):
            y = self.norm(x)
            x = x + self.attention(y, y, y, need_weights=False)[0]
            return x + self.mlp(self.norm(x))

    return {
        "swiglu": (SwiGLU(), (torch.randn(8, 37, 64),)),
        "block": (Block(), (torch.randn(4, 37, 64),)),
        "softmax_sum": (lambda x: (torch.softmax(x, -1), x.sum(-1)), (torch.randn(8, 37),)),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", help="write the results as JSON here")
    args = parser.parse_args()
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", tempfile.mkdtemp(prefix="kernelscope-bench-"))
    import torch
    from torch._inductor import config as inductor_config
    from torch._inductor.utils import run_and_get_code

    from kernelscope.engine.cpu_asm_build import build_cpp_kernel

    results = []
    with inductor_config.patch(fx_graph_cache=False), tempfile.TemporaryDirectory() as directory:
        for case, (model, inputs) in _models().items():
            torch._dynamo.reset()
            started = time.perf_counter()
            with torch.no_grad():
                _, codes = run_and_get_code(torch.compile(model), *inputs)
            compile_seconds = time.perf_counter() - started
            kernels = [kernel for code in codes for kernel in _CPP_KERNEL.findall(code)]
            seconds, cpu_seconds = [], []
            for name, source in kernels:
                path = Path(directory) / case / f"{name}.cpp"
                path.parent.mkdir(exist_ok=True)
                path.write_text(source)
                children = resource.getrusage(resource.RUSAGE_CHILDREN)
                built = build_cpp_kernel(name, source, str(path))
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                seconds.append(round(built.build_seconds, 3))
                cpu_seconds.append(round(after.ru_utime + after.ru_stime - children.ru_utime - children.ru_stime, 3))
            results.append({"case": case, "kernels": len(kernels), "compile_s": round(compile_seconds, 2),
                            "asm_s": round(sum(seconds), 2), "per_kernel_s": seconds,
                            "per_kernel_cpu_s": cpu_seconds, "load_average": os.getloadavg()[0]})
            print(f"{case}: {len(kernels)} C++ kernels, torch.compile {compile_seconds:.1f} s, "
                  f"x86 build {sum(seconds):.1f} s ({', '.join(f'{s:.2f}' for s in seconds)}; CPU "
                  f"{', '.join(f'{s:.2f}' for s in cpu_seconds)}), load average {os.getloadavg()[0]:.1f}", flush=True)
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
