"""Compare virtual-cuda against a real CUDA compile of the same model and torch.

Run on a machine with an NVIDIA GPU:

    python bench/gpu_check.py [--out results.json]

For every bundled example (inference and training) it records the model twice in
fresh subprocesses, once with `--target cuda` (the real compile, kernels built
and launched on the GPU) and once with `--target virtual-cuda`, and compares the
Triton kernels: names, count, the nodes fused into each, and the kernel source
text. It also reports line-level coverage of the real compile, which shows the
probes work on that torch version.
"""
from __future__ import annotations

import argparse
import difflib
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = ["mlp", "attention", "conv_bn", "graph_break", "function"]
# The model zoo (bench/models/): name -> (file, inference factory, training factory).
ZOO = {
    "gpt2": ("gpt2", "make", "make_train"),
    "bert": ("bert", "make", "make_train"),
    "llama": ("llama", "make", "make_train"),
    "llama_bf16": ("llama", "make_bf16", "make_bf16_train"),
    "transformer_encoder": ("transformer_encoder", "make", "make_train"),
}

_CHILD = r"""
import json, sys
sys.path.insert(0, {repo!r})
from pathlib import Path
from kernelscope.engine.recorder import RecordOptions, record_factory
run = record_factory({spec!r}, RecordOptions(device={device!r}, train={train!r}, workspace=Path({repo!r})))
graphs = []
for g in run.graphs:
    kernels = []
    for k in g.kernels:
        body = [l.text for l in k.lines]
        specific = sum(1 for l in k.lines if not l.reason.startswith("shared"))
        kernels.append(dict(name=k.name, kind=k.kind, nodes=sorted(k.nodes),
                            inductor_nodes=sorted(k.inductor_nodes) if k.inductor_nodes is not None else None,
                            source="\n".join(body), lines=len(body), specific=specific))
    graphs.append(dict(compile_id=g.compile_id, kind=g.kind, kernels=kernels))
print("KERNELSCOPE_JSON" + json.dumps(dict(torch=run.torch_version, triton=run.triton_version,
      provenance=run.provenance, warnings=run.warnings, graphs=graphs, timings=run.timings)))
"""


def record(example: str, device: str, train: bool) -> dict:
    if example in ZOO:
        file, inference, training = ZOO[example]
        spec = f"{REPO / 'bench' / 'models' / file}.py:{training if train else inference}"
    else:
        spec = str(REPO / "examples" / f"{example}.py") + ":make"
    code = _CHILD.format(repo=str(REPO), spec=spec, device=device, train=train)
    env = dict(os.environ, TORCHINDUCTOR_COMPILE_THREADS="1")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=600)
    for line in done.stdout.splitlines():
        if line.startswith("KERNELSCOPE_JSON"):
            return json.loads(line[len("KERNELSCOPE_JSON"):])
    return {"error": (done.stderr or done.stdout)[-2000:]}


def triton_kernels(result: dict) -> list[dict]:
    return [dict(k, graph=g["compile_id"] + " " + g["kind"])
            for g in result.get("graphs", []) for k in g["kernels"] if k["kind"] == "triton"]


def compare(real: dict, virtual: dict) -> dict:
    if "error" in real or "error" in virtual:
        return {"error": real.get("error") or virtual.get("error")}
    a, b = triton_kernels(real), triton_kernels(virtual)
    names_a, names_b = [k["name"] for k in a], [k["name"] for k in b]
    same_nodes = sum(1 for x, y in zip(a, b) if x["name"] == y["name"] and x["nodes"] == y["nodes"])
    same_source = sum(1 for x, y in zip(a, b) if x["name"] == y["name"] and x["source"] == y["source"])
    extern_a = sorted(k["name"] for g in real["graphs"] for k in g["kernels"] if k["kind"] == "extern")
    extern_b = sorted(k["name"] for g in virtual["graphs"] for k in g["kernels"] if k["kind"] == "extern")
    lines = sum(k["lines"] for k in a)
    differing = [
        {"name": x["name"], "nodes_real": x["nodes"], "nodes_virtual": y["nodes"],
         "source_diff": "\n".join(difflib.unified_diff(
             x["source"].splitlines(), y["source"].splitlines(), "real", "virtual", lineterm="", n=1))[:3000]}
        for x, y in zip(a, b) if x["name"] == y["name"] and (x["nodes"] != y["nodes"] or x["source"] != y["source"])
    ]
    return {
        "kernels_real": len(a), "kernels_virtual": len(b),
        "same_names": names_a == names_b,
        "same_fusion": same_nodes, "same_source": same_source,
        "extern_real": extern_a, "extern_virtual": extern_b,
        "only_real": sorted(set(names_a) - set(names_b)), "only_virtual": sorted(set(names_b) - set(names_a)),
        "differing_kernels": differing,
        "real_specific_line_share": round(sum(k["specific"] for k in a) / lines, 3) if lines else None,
        "real_provenance": real["provenance"], "real_warnings": real["warnings"],
        "torch": real["torch"], "triton": real["triton"],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path)
    parser.add_argument("--examples", nargs="*", default=EXAMPLES,
                        help=f"examples/ names, or model zoo names ({', '.join(ZOO)})")
    parser.add_argument("--zoo", action="store_true", help="add the model zoo to the examples")
    parser.add_argument("--jobs", type=int, default=4, help="recordings run in parallel")
    args = parser.parse_args()
    if args.zoo:
        args.examples = [*args.examples, *ZOO]
    jobs = [(example, train, device) for example in args.examples for train in (False, True)
            for device in ("cuda", "virtual-cuda")]
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        results = dict(zip(jobs, pool.map(lambda job: record(job[0], job[2], job[1]), jobs)))
    rows = {}
    for example in args.examples:
        for train in (False, True):
            key = f"{example}{' train' if train else ''}"
            rows[key] = compare(results[(example, train, "cuda")], results[(example, train, "virtual-cuda")])
            print(key, json.dumps(rows[key]), flush=True)
    if args.out:
        args.out.write_text(json.dumps(rows, indent=1))
    print(f"{'example':22} {'real':>5} {'virt':>5} {'names':>6} {'fusion':>7} {'source':>7}  extern (real | virtual)")
    for key, row in rows.items():
        if "error" in row:
            print(f"{key:22} error: {row['error'][-300:]}")
            continue
        print(f"{key:22} {row['kernels_real']:5} {row['kernels_virtual']:5} {str(row['same_names']):>6} "
              f"{row['same_fusion']:7} {row['same_source']:7}  {row['extern_real']} | {row['extern_virtual']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
