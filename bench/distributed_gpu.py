"""Distributed jobs on two GPUs against virtual-cuda with torch's fake process group.

Run on a machine with two NVIDIA GPUs (one command, a few minutes):

    python bench/distributed_gpu.py --out results_dir

For each job — the tensor-parallel Llama block (examples/distributed/llama_tp.py,
plain and with async TP), DDP training (examples/distributed/ddp_train.py) and
torchtitan's debug Llama with TP and SP (examples/distributed/torchtitan_llama.py) — it
1. runs the job for real: `torchrun --nproc-per-node 2 -m kernelscope run SCRIPT --target cuda`
   (NCCL, every rank recorded into its own store), then `kernelscope merge`;
2. records the same script with `--target virtual-cuda --world-size 2 --rank R` for R = 0
   and 1 (one process each, torch's fake process group, no GPU used; the script runs its
   GPU path on the virtual GPU: a cuda device mesh, DDP on cuda);
3. compares, per rank, the real run with the virtual one graph by graph (from their
   dumps): the Triton kernels (names, and sources without cache paths and the GPU index
   a rank compiled for), the extern calls,
   the collectives (op, role, group size, bytes, what issued them, the placements,
   the model line and layer, the passes in their lineage) and DDP's split parts; and
   the real ranks with each other (`show`: which ranks compiled identical code), keeping
   every line where the ranks' wrappers differ before and after what `show` leaves out
   (the GPU index, kernel files named by hashes of sources that hold it).
It prints one row per job and rank with a verdict and writes OUT/distributed_gpu.json;
OUT/<job>/ keeps the stores and dumps for a closer look.
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
EXAMPLES = REPO / "examples" / "distributed"
JOBS = {  # name -> (script, arguments after `--`), in the order they run
    "tp": ("llama_tp.py", ["--steps", "2"]),
    "ddp": ("ddp_train.py", ["--steps", "2"]),
    "tp_async": ("llama_tp.py", ["--steps", "2", "--async-tp"]),
    # torchtitan's debug Llama, tensor and sequence parallel, its blocks compiled (forward)
    "torchtitan_tp": ("torchtitan_llama.py", ["--steps", "2"]),
}


def run(command: list[str], env: dict, timeout: int = 400) -> subprocess.CompletedProcess:
    return subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout)


def kernelscope(*args: str, env: dict) -> subprocess.CompletedProcess:
    return run([sys.executable, "-m", "kernelscope", *args], env)


def dump(store: Path, run_id: int, path: Path, env: dict) -> dict:
    done = kernelscope("dump", "--run", str(run_id), "--store", str(store), "-o", str(path), env=env)
    if done.returncode != 0:
        raise RuntimeError(f"dump of run {run_id} in {store}: {done.stderr.strip()[-500:]}")
    return json.loads(path.read_text())


def runs_by_rank(store: Path, env: dict) -> dict[int, int]:
    done = kernelscope("runs", "--json", "--store", str(store), env=env)
    if done.returncode != 0:
        raise RuntimeError(done.stderr.strip()[-500:])
    return {run["rank"]["rank"]: run["id"] for run in json.loads(done.stdout) if run.get("rank")}


def summary(data: dict, store: Path, run_id: int) -> dict:
    """What is compared: per graph key, kernels (their source without the GPU index a rank
    compiled for, as `show` compares ranks), extern calls, collectives, split."""
    from kernelscope.store.parts.distributed import code_digest

    run_dir = store / "runs" / str(run_id)
    graphs = {}
    for graph in data["run"]["graphs"]:
        triton = {k["name"]: code_digest((run_dir / k["file"]["path"]).read_text(), str(REPO))
                  for k in graph["kernels"] if k["kind"] != "extern" and k["file"]}
        externs = Counter(k["name"].split("#")[0] for k in graph["kernels"] if k["kind"] == "extern")
        collectives = [(c["op"], c["role"], c["group_size"], c["bytes"], c["issued_by"], c["redistribute"],
                        (c["model_line"] or {}).get("line"),
                        next((n["module_path"] for n in graph["post_grad_nodes"] if n["name"] == c["node"]), ""),
                        tuple(step["pass_name"] for step in next((n["lineage"] for n in graph["post_grad_nodes"]
                                                                  if n["name"] == c["node"]), [])))
                       for c in graph["collectives"]]
        split = graph["split"] and (graph["split"]["part"], graph["split"]["parts"], tuple(graph["split"]["params"]))
        graphs[graph["key"]] = {"triton": triton, "externs": externs, "collectives": collectives, "split": split}
    return graphs


def rank_differences(store: Path, runs: dict[int, int], env: dict) -> dict:
    """Per graph, the lines where rank 0's and rank 1's wrappers differ: `raw` only without
    cache directories and the workspace (what a dump hashes), `compared` as `show` compares
    ranks (store.parts.distributed.comparable_code). Both dumps are written by check_job."""
    import difflib

    from kernelscope.store.export.dump import portable_text
    from kernelscope.store.parts.distributed import comparable_code

    def wrappers(rank: int) -> dict[str, str]:
        data = json.loads((store.parent / f"real-rank{rank}.json").read_text())
        run_dir = store / "runs" / str(runs[rank])
        return {graph["key"]: (run_dir / graph["wrapper_file"]["path"]).read_text()
                for graph in data["run"]["graphs"] if graph["wrapper_file"]}

    def changed(one: str, other: str) -> list[str]:
        return [line for line in difflib.unified_diff(one.splitlines(), other.splitlines(), lineterm="", n=0)
                if line[:1] in "+-" and not line.startswith(("+++", "---"))]

    first, second = wrappers(0), wrappers(1)
    found = {}
    for key in sorted(set(first) & set(second)):
        raw = changed(portable_text(first[key], str(REPO)), portable_text(second[key], str(REPO)))
        if raw:
            compared = changed(comparable_code(first[key], str(REPO)), comparable_code(second[key], str(REPO)))
            found[key] = {"raw_lines": len(raw), "raw": raw[:12], "compared_lines": len(compared),
                          "compared": compared[:12]}
    return found


def compare(real: dict, virtual: dict) -> dict:
    real_graphs, virtual_graphs = real, virtual
    notes, verdict = [], "identical"
    if set(real_graphs) != set(virtual_graphs):
        notes.append(f"graphs differ: real {sorted(real_graphs)} virtual {sorted(virtual_graphs)}")
        verdict = "DIFFERENT"
    counts = {"kernels_real": 0, "kernels_virtual": 0, "same_source": 0, "collectives_real": 0,
              "collectives_same": 0}
    for key in sorted(set(real_graphs) & set(virtual_graphs)):
        one, other = real_graphs[key], virtual_graphs[key]
        counts["kernels_real"] += len(one["triton"])
        counts["kernels_virtual"] += len(other["triton"])
        counts["same_source"] += sum(1 for name, sha in one["triton"].items() if other["triton"].get(name) == sha)
        if set(one["triton"]) != set(other["triton"]):
            notes.append(f"{key}: kernel names differ: only real {sorted(set(one['triton']) - set(other['triton']))}, "
                         f"only virtual {sorted(set(other['triton']) - set(one['triton']))}")
            verdict = "DIFFERENT"
        elif one["triton"] != other["triton"]:
            differing = sum(1 for name in one["triton"] if one["triton"][name] != other["triton"][name])
            notes.append(f"{key}: same kernel names, {differing} source(s) differ")
            verdict = "DIFFERENT"
        if one["externs"] != other["externs"]:
            notes.append(f"{key}: extern calls differ: real {dict(one['externs'])} virtual {dict(other['externs'])}")
            verdict = "DIFFERENT"
        counts["collectives_real"] += len(one["collectives"])
        counts["collectives_same"] += sum(1 for a, b in zip(one["collectives"], other["collectives"]) if a == b)
        if one["collectives"] != other["collectives"]:
            notes.append(f"{key}: collectives differ: real {one['collectives']} virtual {other['collectives']}")
            verdict = "DIFFERENT"
        if one["split"] != other["split"]:
            notes.append(f"{key}: DDP split differs: real {one['split']} virtual {other['split']}")
            verdict = "DIFFERENT"
    return {"verdict": verdict, **counts, "notes": notes}


def check_job(name: str, out: Path, env: dict, real_target: str = "cuda") -> list[dict]:
    script, script_args = JOBS[name]
    base = out / name
    real_store, rows = base / "real", []
    started = time.perf_counter()
    job = run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
               "-m", "kernelscope", "run", str(EXAMPLES / script), "--target", real_target, "--store", str(real_store),
               "--", *script_args], env, timeout=600)
    real_seconds = round(time.perf_counter() - started, 1)
    (base / "real.log").parent.mkdir(parents=True, exist_ok=True)
    (base / "real.log").write_text(job.stdout + job.stderr)
    if job.returncode != 0:
        return [{"job": name, "rank": None, "verdict": "ERROR (real job)", "notes": [job.stderr.strip()[-1500:]]}]
    merged = kernelscope("merge", "--store", str(real_store), env=env)
    shown = kernelscope("show", "--store", str(real_store), env=env)
    ranks_line = next((line.strip() for line in shown.stdout.splitlines() if "code" in line and "rank" in line), "")
    real_runs = runs_by_rank(real_store, env)
    for rank in (0, 1):
        dump(real_store, real_runs[rank], base / f"real-rank{rank}.json", env)
    differences = rank_differences(real_store, real_runs, env)
    for rank in (0, 1):
        virtual_store = base / f"virtual-rank{rank}"
        started = time.perf_counter()
        recorded = kernelscope("run", str(EXAMPLES / script), "--target", "virtual-cuda", "--world-size", "2",
                               "--rank", str(rank), "--store", str(virtual_store), "--", *script_args, env=env)
        virtual_seconds = round(time.perf_counter() - started, 1)
        if recorded.returncode != 0 or merged.returncode != 0:
            rows.append({"job": name, "rank": rank, "verdict": "ERROR (virtual recording)",
                         "notes": [(recorded.stderr or merged.stderr).strip()[-1500:]]})
            continue
        real = summary(dump(real_store, real_runs[rank], base / f"real-rank{rank}.json", env), real_store,
                       real_runs[rank])
        virtual = summary(dump(virtual_store, 1, base / f"virtual-rank{rank}.json", env), virtual_store, 1)
        row = {"job": name, "rank": rank, **compare(real, virtual), "real_ranks": ranks_line,
               "real_rank_differences": differences,
               "real_job_seconds": real_seconds, "virtual_seconds": virtual_seconds}
        rows.append(row)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="distributed_gpu", help="directory for stores, dumps and the JSON results")
    parser.add_argument("--jobs", default=",".join(JOBS), help=f"comma-separated, of {', '.join(JOBS)}")
    parser.add_argument("--real-target", default="cuda",
                        help="the torchrun job's --target (virtual-cuda: a dry run of this script without GPUs)")
    args = parser.parse_args()
    out = Path(args.out).absolute()
    out.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
               TORCHINDUCTOR_COMPILE_THREADS="1")
    # NVLink multicast stays off (shared machines): async TP's symmetric memory works without it.
    for name in ("NCCL_NVLS_ENABLE", "NVSHMEM_DISABLE_NVLS", "TORCH_SYMM_MEM_DISABLE_MULTICAST"):
        env.setdefault(name, "0" if name == "NCCL_NVLS_ENABLE" else "1")
    import torch

    header = {"torch": torch.__version__,
              "gpus": [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]}
    print(f"torch {header['torch']} on {', '.join(header['gpus']) or 'no GPU'}", flush=True)
    rows = []
    for name in args.jobs.split(","):
        for row in check_job(name, out, env, args.real_target):
            rows.append(row)
            kernels = f"{row.get('same_source', '-')}/{row.get('kernels_real', '-')} kernels same source"
            collectives = f"{row.get('collectives_same', '-')}/{row.get('collectives_real', '-')} collectives same"
            print(f"{row['job']:<9} rank {row['rank']}: {row['verdict']:<10} {kernels} · {collectives} · "
                  f"real job {row.get('real_job_seconds', '-')} s, virtual {row.get('virtual_seconds', '-')} s",
                  flush=True)
            if row.get("real_ranks"):
                print(f"          real ranks: {row['real_ranks']}")
            for note in row.get("notes", [])[:6]:
                print(f"          {note[:400]}", flush=True)
        (out / "distributed_gpu.json").write_text(json.dumps({**header, "rows": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
