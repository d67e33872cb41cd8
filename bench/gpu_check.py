"""Compare virtual-cuda against a real CUDA compile of the same model and torch.

Run on a machine with an NVIDIA GPU:

    python bench/gpu_check.py --zoo --variants --jobs 8 --out results.json

For every bundled example and (with --zoo) every model of bench/models/, inference
and training, and (with --variants) the `--dynamic` and max-autotune-no-cudagraphs
cases in VARIANTS, it records the model twice in fresh subprocesses, once with
`--target cuda` (the real compile, kernels built and launched on the GPU) and once
with `--target virtual-cuda`, and compares the Triton kernels: names, count, the
nodes fused into each, the kernel source text, and the extern calls. Each row gets
a verdict: "identical", "DIFFERENT", or one of these:
- "template choices differ (expected)": max-autotune, whose GEMM template choices are
  made by timing on the GPU;
- "pad_mm timing choice differs (expected)": the real compile padded a matmul because
  pad_mm timed the padded one faster on the GPU (virtual-cuda cannot time; it never
  pads where pad_mm leaves the choice to a benchmark), recorded on the real side;
- "same code (node names numbered differently)": every kernel's name and source and the
  extern calls are the same, the fused post-grad nodes too except for their numbers.
It also reports line-level coverage of the real compile (the probes work on that
torch version) and virtual-cuda's device-query audit (devices/device_audit.py).
`--dump DIR` writes each recording's post-grad graphs and wrappers under DIR.
"""
from __future__ import annotations

import argparse
import difflib
import json
import os
import re
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
    "small_cnn": ("small_cnn", "make", "make_train"),
    "moe": ("moe", "make", "make_train"),
    "moe_bf16": ("moe", "make_bf16", "make_bf16_train"),
}
# The engine's own cases (--engine): tensors a model makes inside forward, a Hugging Face decoder
# with the library's defaults, and a model built on the meta device, which only virtual-cuda
# records (the GPU side compiles the same model with real weights: FACTORY on the cuda side).
# name -> (file, inference factory, training factory, {factory: factory on the cuda side})
ENGINE = {
    "tensors_factories": ("tests/data/tensors_in_forward.py", "make_factories", "make_factories", {}),
    "tensors_new_and_to": ("tests/data/tensors_in_forward.py", "make_new_and_to", "make_new_and_to", {}),
    "tensors_cache_like": ("tests/data/tensors_in_forward.py", "make_cache_like", "make_cache_like", {}),
    "sinusoidal_positions": ("tests/data/tensors_in_forward.py", "make_sinusoidal_positions",
                             "make_sinusoidal_positions", {}),
    "overlapping_windows": ("tests/data/tensors_in_forward.py", "make_overlapping_windows",
                            "make_overlapping_windows", {}),
    "hf_llama_defaults": ("tests/data/hf_defaults.py", "make_llama", "make_llama", {}),
    "llama3_8b_meta_2_layers": ("bench/models/llama3_8b_meta.py", "make", "make_train",
                                {"make": "make_real", "make_train": "make_real_train"}),
}
MODE_ENV_ENGINE = {"llama3_8b_meta_2_layers": {"KERNELSCOPE_LAYERS": "2"}}
# Extra variants: (model, train, dynamic, mode). `dynamic` marks dim 0 of every input
# dynamic. A `max-autotune-no-cudagraphs` compile picks GEMM templates by timing them
# on the GPU; virtual-cuda cannot time anything, so those choices are expected to differ.
VARIANTS = [
    ("mlp", True, True, "default"),
    ("small_cnn", True, True, "default"),
    ("moe", True, True, "default"),
    ("gpt2", False, True, "default"),
    ("mlp", True, False, "max-autotune-no-cudagraphs"),
    ("small_cnn", True, False, "max-autotune-no-cudagraphs"),
]
MODE_ENV = {
    "default": {},
    # What torch.compile(mode="max-autotune-no-cudagraphs") sets (torch/_inductor/list_mode_options).
    "max-autotune-no-cudagraphs": {"TORCHINDUCTOR_MAX_AUTOTUNE": "1",
                                   "TORCHINDUCTOR_COORDINATE_DESCENT_TUNING": "1"},
}
TEMPLATE_MODES = {"max-autotune-no-cudagraphs"}

_CHILD = r"""
import json, sys
sys.path.insert(0, {repo!r})
from pathlib import Path
from kernelscope.engine.recorder import RecordOptions, record_factory
from kernelscope.engine.devices.device_audit import log_device_queries
from kernelscope.store.coverage import compute_coverage
# pad_mm decisions the GPU made by timing padded against unpadded matmuls (virtual-cuda
# cannot time anything and never pads there): each benchmark's verdict, as pad_mm caches it
pad_mm_timed = []
if {device!r} == "cuda":
    import torch._inductor.fx_passes.pad_mm as pad_mm
    _cache_verdict = pad_mm.set_cached_should_pad
    def _record_verdict(key, value):
        pad_mm_timed.append(bool(value))
        return _cache_verdict(key, value)
    pad_mm.set_cached_should_pad = _record_verdict
with log_device_queries() as audit:
    run = record_factory({spec!r}, RecordOptions(device={device!r}, train={train!r}, dynamic={dynamic!r},
                                                 workspace=Path({repo!r})))
audit = dict(audit.summary(), cpu_answers=[list(k) + [n] for k, n in audit.answered("cpu").items()])
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
if {dump!r}:
    folder = Path({dump!r})
    folder.mkdir(parents=True, exist_ok=True)
    for g in run.graphs:
        (folder / (g.key + ".post_grad.py")).write_text(g.post_grad_text)
        (folder / (g.key + ".wrapper.py")).write_text(g.wrapper_text)
print("KERNELSCOPE_JSON" + json.dumps(dict(torch=run.torch_version, triton=run.triton_version,
      provenance=run.provenance, warnings=run.warnings, graphs=graphs, timings=run.timings,
      audit=audit, pad_mm_timed=pad_mm_timed, coverage=compute_coverage(run))))
"""


def spec_for(example: str, train: bool, device: str = "virtual-cuda") -> str:
    if example in ENGINE:
        file, inference, training, on_cuda = ENGINE[example]
        factory = training if train else inference
        factory = on_cuda.get(factory, factory) if device == "cuda" else factory
        return f"{REPO / file}:{factory}"
    if example in ZOO:
        file, inference, training = ZOO[example]
        return f"{REPO / 'bench' / 'models' / file}.py:{training if train else inference}"
    return str(REPO / "examples" / f"{example}.py") + ":make"


def record(example: str, device: str, train: bool, dynamic: bool = False, mode: str = "default",
           dump: Path | None = None) -> dict:
    folder = dump / row_name(example, train, dynamic, mode).replace(" ", "_") / device if dump else None
    return record_spec(spec_for(example, train, device), device, train, dynamic, mode, folder,
                       env=MODE_ENV_ENGINE.get(example, {}))


def record_spec(spec: str, device: str, train: bool, dynamic: bool = False, mode: str = "default",
                dump_folder: Path | None = None, timeout: int = 480, env: dict | None = None) -> dict:
    """Record PATH.py:FACTORY in a fresh process on `device`; the child's JSON (kernels of every
    graph, coverage, provenance, device audit, pad_mm decisions), or {"error": ...}."""
    code = _CHILD.format(repo=str(REPO), spec=spec, device=device, train=train,
                         dynamic=dynamic, dump=str(dump_folder or ""))
    env = dict(os.environ, TORCHINDUCTOR_COMPILE_THREADS="1", HF_HUB_OFFLINE="1", **MODE_ENV[mode], **(env or {}))
    try:
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"{device} recording timed out after {timeout} s"}
    for line in done.stdout.splitlines():
        if line.startswith("KERNELSCOPE_JSON"):
            return json.loads(line[len("KERNELSCOPE_JSON"):])
    return {"error": (done.stderr or done.stdout)[-2000:]}


def _graph_order(graph: dict):
    frame, attempt = (int(part) for part in graph["compile_id"].split("/")[:2])
    return frame, attempt, {"inference": 0, "forward": 0, "backward": 1}.get(graph["kind"], 2)


def triton_kernels(result: dict) -> list[dict]:
    """Triton kernels graph by graph, in (compile id, forward before backward) order: a GPU
    compiles a backward graph at the first backward call, virtual-cuda right after its forward."""
    graphs = sorted(result.get("graphs", []), key=_graph_order)
    return [dict(k, graph=g["compile_id"] + " " + g["kind"])
            for g in graphs for k in g["kernels"] if k["kind"] == "triton"]


def compare(real: dict, virtual: dict, mode: str = "default") -> dict:
    if "error" in real or "error" in virtual:
        side = "both" if "error" in real and "error" in virtual else "cuda" if "error" in real else "virtual-cuda"
        return {"error": real.get("error") or virtual.get("error"), "error_in": side, "mode": mode}
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
    identical = (names_a == names_b and same_nodes == same_source == len(a) == len(b)
                 and extern_a == extern_b)
    padded_by_timing = sum(real.get("pad_mm_timed", []))
    if identical:
        verdict = "identical"
    elif mode in TEMPLATE_MODES:
        verdict = "template choices differ (expected)"
    elif padded_by_timing:
        verdict = "pad_mm timing choice differs (expected)"
    elif same_code_but_numbering(a, b) and extern_a == extern_b:
        verdict = "same code (node names numbered differently)"
    else:
        verdict = "DIFFERENT"
    return {
        "mode": mode, "verdict": verdict,
        "kernels_real": len(a), "kernels_virtual": len(b),
        "same_names": names_a == names_b,
        "same_fusion": same_nodes, "same_source": same_source,
        "extern_real": extern_a, "extern_virtual": extern_b,
        "only_real": sorted(set(names_a) - set(names_b)), "only_virtual": sorted(set(names_b) - set(names_a)),
        "differing_kernels": differing,
        "real_pad_mm_padded_by_timing": padded_by_timing,
        "real_specific_line_share": round(sum(k["specific"] for k in a) / lines, 3) if lines else None,
        "real_coverage": real.get("coverage"), "virtual_coverage": virtual.get("coverage"),
        "real_provenance": real["provenance"], "real_warnings": real["warnings"],
        "virtual_audit": virtual.get("audit"),
        "torch": real["torch"], "triton": real["triton"],
    }


def same_code_but_numbering(a: list[dict], b: list[dict]) -> bool:
    """Same kernels (names, sources) whose fused post-grad nodes differ only in their numbers
    (`mul_16` / `mul_9`: the traces made a different count of nodes that were later removed)."""
    def unnumbered(nodes):
        return sorted(re.sub(r"_\d+$", "", node) for node in nodes)

    return ([k["name"] for k in a] == [k["name"] for k in b]
            and all(x["source"] == y["source"] and unnumbered(x["nodes"]) == unnumbered(y["nodes"])
                    for x, y in zip(a, b)))


def cases(examples: list[str], variants: bool) -> list[tuple[str, bool, bool, str]]:
    found = [(example, train, False, "default") for example in examples for train in (False, True)]
    if variants:
        found += [v for v in VARIANTS if v[0] in examples]
    return found


def row_name(example: str, train: bool, dynamic: bool, mode: str) -> str:
    return " ".join([example] + (["train"] if train else []) + (["dynamic"] if dynamic else [])
                    + ([mode] if mode != "default" else []))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path)
    parser.add_argument("--examples", nargs="*", default=EXAMPLES,
                        help=f"examples/ names, or model zoo names ({', '.join(ZOO)})")
    parser.add_argument("--zoo", action="store_true", help="add the model zoo to the examples")
    parser.add_argument("--engine", action="store_true",
                        help=f"add the engine's own cases ({', '.join(ENGINE)})")
    parser.add_argument("--variants", action="store_true",
                        help="add the --dynamic and max-autotune-no-cudagraphs variants (VARIANTS)")
    parser.add_argument("--jobs", type=int, default=4, help="recordings run in parallel")
    parser.add_argument("--dump", type=Path,
                        help="write each recording's post-grad graphs and wrappers under DIR/case/device/")
    args = parser.parse_args()
    if args.zoo:
        args.examples = [*args.examples, *ZOO]
    if args.engine:
        args.examples = [*args.examples, *ENGINE]
    todo = cases(args.examples, args.variants)
    # the slowest (max-autotune times every template on the GPU) first
    jobs = [(case, device) for case in sorted(todo, key=lambda case: case[3] == "default")
            for device in ("cuda", "virtual-cuda")]
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        results = dict(zip(jobs, pool.map(
            lambda job: record(job[0][0], job[1], job[0][1], job[0][2], job[0][3], args.dump), jobs)))
    rows = {}
    for case in todo:
        key = row_name(*case)
        rows[key] = compare(results[(case, "cuda")], results[(case, "virtual-cuda")], case[3])
        print(key, json.dumps(rows[key]), flush=True)
    if args.out:
        args.out.write_text(json.dumps(rows, indent=1))
    print(f"{'case':44} {'real':>5} {'virt':>5} {'names':>6} {'fusion':>7} {'source':>7}  verdict")
    for key, row in rows.items():
        if "error" in row:
            print(f"{key:44} error ({row['error_in']}): {row['error'][-300:]}")
            continue
        print(f"{key:44} {row['kernels_real']:5} {row['kernels_virtual']:5} {str(row['same_names']):>6} "
              f"{row['same_fusion']:7} {row['same_source']:7}  {row['verdict']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
