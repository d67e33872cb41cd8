"""Why `kernelscope run examples/recompile_shape.py --target cuda` records no Triton kernel
and no [0/0] backward (seen on an H200; docs/why.md): run on a machine with a GPU.

    python bench/cuda_cpu_graphs_check.py            # --target virtual-cuda: the same on a CPU, to compare

The script makes its tensors with `torch.randn(batch, 16)` and never moves the model: on a
real GPU its graphs are CPU graphs, which Inductor compiles with C++ kernels (virtual-cuda
compiles them as a GPU's). It never calls backward: torch compiles a backward at the first
backward call, at once only when it saves symbolic sizes ([0/1], [0/2] here, not the
static [0/0]). This records the example as it is, then a copy that moves model and inputs
to the GPU, and prints for each the graphs, their kernels by kind, the device of the
graphs' inputs, and the run's warnings (the run now says both things itself).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def kernelscope(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.run([sys.executable, "-m", "kernelscope", *args], cwd=cwd, env=env, capture_output=True,
                          text=True)


def report(name: str, script: Path, cwd: Path, target: str) -> dict:
    recorded = kernelscope("run", str(script), "--target", target, cwd=cwd)
    if recorded.returncode != 0:
        return {"case": name, "error": recorded.stderr[-1500:]}
    shown = json.loads(kernelscope("show", "--json", cwd=cwd).stdout)
    dumped = json.loads(kernelscope("dump", "--absolute-paths", cwd=cwd).stdout)["run"]
    graphs = {graph["key"]: dict(Counter(kernel["kind"] for kernel in graph["kernels"]))
              for graph in dumped["graphs"]}
    wrappers = {graph["key"]: "cpp_fused" in Path(graph["wrapper_file"]["path"]).read_text(errors="replace")
                for graph in dumped["graphs"] if graph.get("wrapper_file")}
    return {"case": name, "graphs": graphs, "wrapper_has_cpp_kernels": wrappers, "warnings": shown["warnings"]}


def main() -> int:
    import argparse

    import torch

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="cuda", choices=["cuda", "virtual-cuda"])
    target = parser.parse_args().target
    print(f"torch {torch.__version__}, GPU: {torch.cuda.get_device_name() if torch.cuda.is_available() else None}")
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        original = (REPO / "examples" / "recompile_shape.py").read_text()
        as_is, moved = work / "as_is", work / "moved"
        for folder in (as_is, moved):
            folder.mkdir()
        (as_is / "recompile_shape.py").write_text(original)
        (moved / "recompile_shape.py").write_text(
            original.replace("torch.compile(Head())", "torch.compile(Head().cuda())")
                    .replace("torch.randn(batch, 16)", "torch.randn(batch, 16, device='cuda')"))
        rows.append(report("as written (CPU tensors)", as_is / "recompile_shape.py", as_is, target))
        rows.append(report("moved to the GPU", moved / "recompile_shape.py", moved, target))
    print(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
