"""GPU programs, unmodified: the real compile on a GPU against virtual-cuda, kernel by kernel.

Run on a machine with an NVIDIA GPU (one command, a minute or two):

    python bench/program_gpu_check.py --out DIR

For each script (examples/gpu_train_script.py, examples/device_branch.py,
examples/user_triton_kernel.py: programs written for a GPU, `.to("cuda")` and all, the last
with Triton kernels of its own; and FACTORIES, recorded with `compile` instead) it runs
`kernelscope run SCRIPT --target cuda` (the real
compile; the GPU's timing decisions are kept with the run), then `kernelscope run SCRIPT
--target virtual-cuda --decisions <that run>` on the same machine's CPU (the program sees
the virtual GPU, the GPU's decisions replayed), and compares the two runs graph by graph
from their dumps: the Triton kernels (names, and sources without cache paths and the GPU
index), the extern calls and the graphs themselves. One row per script with a verdict;
DIR/program_gpu_check.json keeps the rows and each differing kernel's first differing line,
and each side's coverage (a row below issue 32's floors — kernel and wrapper lines 95%, every
node traced to a line — says so and fails the command); for a compiled optimizer step, each
foreach sub-kernel's parameters on the GPU and whether virtual-cuda found the same.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # kernelscope from this checkout
SCRIPTS = {  # name -> (script, arguments after `--`)
    "gpu_train_script": ("examples/gpu_train_script.py", ["--steps", "2"]),
    "device_branch": ("examples/device_branch.py", []),
    "user_triton_kernel": ("examples/user_triton_kernel.py", ["--steps", "2"]),
    "flex_attention_train": ("examples/flex_attention_train.py", ["--steps", "2"]),
    "cond_model": ("examples/cond_model.py", []),
    "nested_regions_train": ("examples/nested_regions_train.py", ["--steps", "2"]),
    "checkpoint_train": ("examples/checkpoint_train.py", ["--steps", "2"]),
    "recompile_shape": ("examples/recompile_shape.py", []),
    "optimizer_step": ("examples/optimizer_step.py", []),
    "sgd_step": ("examples/sgd_step.py", []),
}
# Factories recorded with `compile` (name -> (PATH:FACTORY, extra options)): the subgraph,
# user-kernel and why cases of issues 32 and 33 that are not scripts.
FACTORIES = {
    "flex_attention": ("examples/flex_attention.py:make", []),
    "scan": ("examples/scan_map.py:make", []),
    "map_train": ("examples/scan_map.py:make_map", ["--train"]),
    "not_fused": ("examples/not_fused.py:make", []),
    "mutating_custom_op": ("examples/mutating_custom_op.py:make", []),
    "cond_branch_train": ("examples/cond_branch.py:make", ["--train"]),
    "nested_region_train": ("examples/nested_region.py:make", ["--train"]),
}
# The coverage floors of issue 32, read from each run's dump (kernel and wrapper lines at
# least 95%, every node traced to a source line).
COVERAGE = ("kernel_lines", "wrapper_lines", "forward_nodes_with_source", "backward_nodes_with_source")


def kernelscope(*args: str, env: dict, timeout: int = 900) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kernelscope", *args], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=timeout)


def record(script: str, script_args: list[str], store: Path, target: str, env: dict,
           decisions: str | None = None) -> tuple[int, float]:
    """Record a script (`run SCRIPT -- ARGS`) or a factory (`compile PATH:FACTORY OPTIONS`)."""
    started = time.perf_counter()
    extra = ["--decisions", decisions] if decisions else []
    if ":" in script:
        done = kernelscope("compile", script, "--target", target, "--store", str(store), *extra, "--json",
                           *script_args, env=env)
    else:
        done = kernelscope("run", script, "--target", target, "--store", str(store), *extra, "--json", "--",
                           *script_args, env=env)
    if done.returncode != 0:
        raise RuntimeError(f"{target} recording of {script} failed: {done.stderr.strip()[-1500:]}")
    return json.loads(done.stdout)["run"], round(time.perf_counter() - started, 1)


def graphs_of(store: Path, run_id: int, env: dict) -> dict:
    """Per graph key: {kernel name: comparable source}, extern call counts, post-grad node count."""
    from kernelscope.store.parts.distributed import comparable_code

    path = store / f"dump-{run_id}.json"
    done = kernelscope("dump", "--run", str(run_id), "--store", str(store), "-o", str(path), env=env)
    if done.returncode != 0:
        raise RuntimeError(done.stderr.strip()[-800:])
    data = json.loads(path.read_text())
    run_dir = store / "runs" / str(run_id)
    graphs: dict = {"coverage": {name: (data["run"]["coverage"][name] or {}).get("share")
                                 for name in COVERAGE if data["run"]["coverage"].get(name)}}
    for graph in data["run"]["graphs"]:
        triton = {kernel["name"]: comparable_code((run_dir / kernel["file"]["path"]).read_text(), str(REPO))
                  for kernel in graph["kernels"] if kernel["kind"] != "extern" and kernel["file"]}
        externs = Counter(kernel["name"].split("#")[0] for kernel in graph["kernels"] if kernel["kind"] == "extern")
        graphs[graph["key"]] = {"triton": triton, "externs": dict(externs), "nodes": len(graph["post_grad_nodes"])}
    return graphs


def compare(real: dict, virtual: dict) -> dict:
    coverage = {"gpu": real.pop("coverage"), "virtual_cuda": virtual.pop("coverage")}
    notes, same, total = [], 0, 0
    if set(real) != set(virtual):
        notes.append(f"graphs differ: GPU {sorted(real)}, virtual-cuda {sorted(virtual)}")
    for key in sorted(set(real) & set(virtual)):
        one, other = real[key], virtual[key]
        total += len(one["triton"])
        same += sum(1 for name, code in one["triton"].items() if other["triton"].get(name) == code)
        if set(one["triton"]) != set(other["triton"]):
            notes.append(f"{key}: kernels only on the GPU {sorted(set(one['triton']) - set(other['triton']))}, "
                         f"only on virtual-cuda {sorted(set(other['triton']) - set(one['triton']))}")
        for name in sorted(set(one["triton"]) & set(other["triton"])):
            if one["triton"][name] != other["triton"][name]:
                first = next(((a, b) for a, b in zip(one["triton"][name].splitlines(),
                                                     other["triton"][name].splitlines()) if a != b), ("", ""))
                notes.append(f"{key}: {name} source differs: GPU `{first[0].strip()[:160]}` · "
                             f"virtual-cuda `{first[1].strip()[:160]}`")
        if one["externs"] != other["externs"]:
            notes.append(f"{key}: extern calls differ: GPU {one['externs']}, virtual-cuda {other['externs']}")
        if one["nodes"] != other["nodes"]:
            notes.append(f"{key}: {one['nodes']} post-grad nodes on the GPU, {other['nodes']} on virtual-cuda")
    low = [f"{side} {name} {share:.1%}" for side, shares in coverage.items() for name, share in shares.items()
           if share is not None and share < (0.95 if "lines" in name else 1.0)]
    return {"verdict": "identical" if not notes else "DIFFERENT", "kernels": total, "same_source": same,
            "graphs": sorted(real), "notes": notes, "coverage": coverage, "below_floor": low}


def foreach_parts(store: Path, run_id: int) -> list:
    """Each foreach sub-kernel of the run's dump (written by graphs_of): graph, kernel, block and
    the optimizer parameters it updates, as (group, index, name, shape)."""
    dump = json.loads((store / f"dump-{run_id}.json").read_text())
    return [[graph["key"], kernel["name"], part["index"],
             [[p["group"], p["index"], p["name"], p["shape"]] for p in part["params"]]]
            for graph in dump["run"]["graphs"] for kernel in graph["kernels"] for part in kernel.get("parts", [])]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("program_gpu_check"), help="stores, dumps and the JSON")
    cases = {**SCRIPTS, **FACTORIES}
    parser.add_argument("--scripts", default=",".join(cases), help=f"comma-separated, of {', '.join(cases)}")
    args = parser.parse_args()
    out = args.out.absolute()
    out.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
               TORCHINDUCTOR_COMPILE_THREADS="1")
    import torch

    header = {"torch": torch.__version__,
              "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU"}
    print(f"torch {header['torch']} on {header['gpu']}", flush=True)
    rows = []
    for name in args.scripts.split(","):
        script, script_args = cases[name]
        store = out / name
        try:
            real_run, real_seconds = record(script, script_args, store, "cuda", env)
            virtual_run, virtual_seconds = record(script, script_args, store, "virtual-cuda", env,
                                                  decisions=str(real_run))
            row = {"script": name, **compare(graphs_of(store, real_run, env), graphs_of(store, virtual_run, env)),
                   "gpu_seconds": real_seconds, "virtual_seconds": virtual_seconds}
            parts = foreach_parts(store, real_run)  # a compiled optimizer step: its sub-kernels' parameters
            virtual_parts = foreach_parts(store, virtual_run)
            if parts or virtual_parts:
                row["foreach_parts"] = {"gpu": parts, "same_on_virtual_cuda": parts == virtual_parts}
                if parts != virtual_parts:
                    row["notes"].append("foreach sub-kernels or their parameters differ on virtual-cuda")
        except (RuntimeError, subprocess.TimeoutExpired) as error:
            row = {"script": name, "verdict": "ERROR", "notes": [str(error)[-1500:]]}
        rows.append(row)
        print(f"{name:<18} {row['verdict']:<10} {row.get('same_source', '-')}/{row.get('kernels', '-')} kernels "
              f"same source · graphs {row.get('graphs', '-')} · GPU {row.get('gpu_seconds', '-')} s, "
              f"virtual {row.get('virtual_seconds', '-')} s", flush=True)
        if row.get("below_floor"):
            print(f"    coverage below the floors: {', '.join(row['below_floor'])}", flush=True)
        for note in row["notes"][:8]:
            print(f"    {note[:400]}", flush=True)
        (out / "program_gpu_check.json").write_text(json.dumps({**header, "rows": rows}, indent=2) + "\n")
    return 0 if all(row["verdict"] == "identical" and not row.get("below_floor") for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
