"""Compare virtual-cuda against a real CUDA compile of the same model and torch, with
the GPU's timing decisions replayed (docs/decisions.md).

Run on a machine with an NVIDIA GPU:

    python bench/gpu_check.py --zoo --variants --jobs 14 --out results.json --decisions-dir DIR
    python bench/gpu_check.py --examples --device-branches --jobs 8 --out results.json   # these models only

For every bundled example and (with --zoo) every model of bench/models/, inference
and training, and (with --variants) the `--dynamic` and max-autotune-no-cudagraphs
cases in VARIANTS, it records the model in fresh subprocesses: once with `--target
cuda` (the real compile, kernels built and launched on the GPU), which also writes the
timing decisions the GPU made (pad_mm, max-autotune's choices, fusion benchmarks,
launch configs) as a decisions file; then with `--target virtual-cuda --decisions`
that file (the "replayed" side); and, unless --no-unreplayed, once with virtual-cuda
alone (no recording: every timing decision guessed by Inductor's own rules). It
compares the generated kernels (Triton and Triton templates): names, count, the nodes
fused into each, the kernel source text, and the extern calls. Each comparison gets a
verdict: "identical", "DIFFERENT", "same code (node names numbered differently)" (every
kernel's name and source and the extern calls are the same, the fused post-grad nodes
too except for their numbers), or, for the unreplayed side only, one of the differences
a GPU's timing explains: "template choices differ (expected)" (max-autotune),
"pad_mm timing choice differs (expected)" (the GPU padded a matmul after timing it).
A replayed row also lists the decisions virtual-cuda still guessed and the recorded
ones no compile asked for. It also reports line-level coverage of the real compile and
virtual-cuda's device-query audit (devices/device_audit.py). Results are written to
--out after every case (`--resume` skips the cases it already holds); `--deadline`
stops starting recordings after that many seconds. `--dump DIR` writes each
recording's post-grad graphs and wrappers under DIR.
"""
from __future__ import annotations

import argparse
import difflib
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
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
    "fourier_mixing": ("tests/data/tensors_in_forward.py", "make_fourier_mixing", "make_fourier_mixing", {}),
    "overlapping_windows": ("tests/data/tensors_in_forward.py", "make_overlapping_windows",
                            "make_overlapping_windows", {}),
    "hf_llama_defaults": ("tests/data/hf_defaults.py", "make_llama", "make_llama", {}),
    "llama3_8b_meta_2_layers": ("bench/models/llama3_8b_meta.py", "make", "make_train",
                                {"make": "make_real", "make_train": "make_real_train"}),
}
MODE_ENV_ENGINE = {"llama3_8b_meta_2_layers": {"KERNELSCOPE_LAYERS": "2"}}
# Models whose code decides by device (`x.device.type`): virtual-cuda captures a factory on the
# virtual GPU, as a GPU program (--device-branches; devices/factory_program.py). The suite's MoE
# decoders (transformers' routing: `histc(expert_ids.int())` on cuda) and bench/models/device_branches.py.
# name -> (file, inference factory, training factory, {}), as ENGINE
DEVICE_BRANCHES = {
    "mixtral": ("bench/suite/hf_moe.py", "mixtral", "mixtral_train", {}),
    "gpt_oss": ("bench/suite/hf_moe.py", "gpt_oss", "gpt_oss_train", {}),
    "qwen2_moe": ("bench/models/device_branches.py", "make_qwen2_moe", "make_qwen2_moe_train", {}),
    "falcon": ("bench/models/device_branches.py", "make_falcon", "make_falcon_train", {}),
}
# Extra variants: (model, train, dynamic, mode). `dynamic` marks dim 0 of every input
# dynamic. A `max-autotune-no-cudagraphs` compile picks GEMM templates by timing them
# on the GPU; virtual-cuda replays those choices from the GPU run's decisions.
VARIANTS = [
    ("mlp", True, True, "default"),
    ("small_cnn", False, True, "default"),
    ("small_cnn", True, True, "default"),
    ("moe", True, True, "default"),
    ("gpt2", False, True, "default"),
    ("mlp", True, False, "max-autotune-no-cudagraphs"),
    ("small_cnn", False, False, "max-autotune-no-cudagraphs"),
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
from kernelscope.store.writing.coverage import compute_coverage
from kernelscope.decisions.model import from_run, load_file, write_file
decisions = load_file(Path({decisions_in!r})) if {decisions_in!r} else None
with log_device_queries() as audit:
    run = record_factory({spec!r}, RecordOptions(device={device!r}, train={train!r}, dynamic={dynamic!r},
                                                 workspace=Path({repo!r}), decisions=decisions))
if {decisions_out!r}:
    write_file(from_run(run, "gpu_check"), Path({decisions_out!r}))
audit = dict(audit.summary(), cpu_answers=[list(k) + [n] for k, n in audit.answered("cpu").items()])
graphs = []
for g in run.graphs:
    kernels = []
    for k in g.kernels:
        body = [l.text for l in k.lines]
        specific = sum(1 for l in k.lines if not l.reason.startswith("shared"))
        kernels.append(dict(name=k.name, kind=k.kind, nodes=sorted(k.nodes),
                            inductor_nodes=sorted(k.inductor_nodes) if k.inductor_nodes is not None else None,
                            source="\n".join(body), lines=len(body), specific=specific,
                            launch=(k.launch or {{}}).get("config"),
                            replayed_from=(k.launch or {{}}).get("replayed_from")))
    graphs.append(dict(compile_id=g.compile_id, kind=g.kind, kernels=kernels))
if {dump!r}:
    folder = Path({dump!r})
    folder.mkdir(parents=True, exist_ok=True)
    for g in run.graphs:
        (folder / (g.key + ".post_grad.py")).write_text(g.post_grad_text)
        (folder / (g.key + ".wrapper.py")).write_text(g.wrapper_text)
brief = lambda d: dict(kind=d.kind, origin=d.origin, summary=d.summary, choice=d.choice, rule=d.rule[:300],
                       key=d.key[:400], kernel=d.kernel)
pad_mm_timed = [d.choice == "pad" for d in run.decisions if d.kind == "pad_mm" and d.origin == "timed"]
print("KERNELSCOPE_JSON" + json.dumps(dict(torch=run.torch_version, triton=run.triton_version,
      provenance=run.provenance, warnings=run.warnings, graphs=graphs, timings=run.timings,
      audit=audit, pad_mm_timed=pad_mm_timed, coverage=compute_coverage(run), gpu=run.gpu,
      decisions=[brief(d) for d in run.decisions if d.kind != "triton_config"],
      launch_decisions={{origin: sum(1 for d in run.decisions if d.kind == "triton_config" and d.origin == origin)
                        for origin in ("timed", "heuristic", "replayed", "guessed")}},
      unused=[brief(d) for d in (run.replay.unused if run.replay else [])])))
"""


def spec_for(example: str, train: bool, device: str = "virtual-cuda") -> str:
    if example in ENGINE or example in DEVICE_BRANCHES:
        file, inference, training, on_cuda = ENGINE.get(example) or DEVICE_BRANCHES[example]
        factory = training if train else inference
        factory = on_cuda.get(factory, factory) if device == "cuda" else factory
        return f"{REPO / file}:{factory}"
    if example in ZOO:
        file, inference, training = ZOO[example]
        return f"{REPO / 'bench' / 'models' / file}.py:{training if train else inference}"
    return str(REPO / "examples" / f"{example}.py") + ":make"


def record(example: str, device: str, train: bool, dynamic: bool = False, mode: str = "default",
           dump: Path | None = None, decisions_in: Path | None = None, decisions_out: Path | None = None,
           timeout: int = 480, label: str | None = None) -> dict:
    folder = dump / row_name(example, train, dynamic, mode).replace(" ", "_") / (label or device) if dump else None
    return record_spec(spec_for(example, train, device), device, train, dynamic, mode, folder, timeout=timeout,
                       env=MODE_ENV_ENGINE.get(example, {}), decisions_in=decisions_in, decisions_out=decisions_out)


def record_spec(spec: str, device: str, train: bool, dynamic: bool = False, mode: str = "default",
                dump_folder: Path | None = None, timeout: int = 480, env: dict | None = None,
                decisions_in: Path | None = None, decisions_out: Path | None = None) -> dict:
    """Record PATH.py:FACTORY in a fresh process on `device`; the child's JSON (kernels of every
    graph, coverage, provenance, device audit, timing decisions), or {"error": ...}.
    `decisions_out`: write the run's timing decisions there (a decisions file);
    `decisions_in`: replay that decisions file (virtual-cuda)."""
    code = _CHILD.format(repo=str(REPO), spec=spec, device=device, train=train, dynamic=dynamic,
                         dump=str(dump_folder or ""), decisions_in=str(decisions_in or ""),
                         decisions_out=str(decisions_out or ""))
    env = dict(os.environ, TORCHINDUCTOR_COMPILE_THREADS="1", HF_HUB_OFFLINE="1", **MODE_ENV[mode], **(env or {}))
    started = time.perf_counter()
    try:
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"{device} recording timed out after {timeout} s"}
    for line in done.stdout.splitlines():
        if line.startswith("KERNELSCOPE_JSON"):
            return dict(json.loads(line[len("KERNELSCOPE_JSON"):]), wall=round(time.perf_counter() - started, 1))
    return {"error": (done.stderr or done.stdout)[-2000:]}


def _graph_order(graph: dict):
    frame, attempt = (int(part) for part in graph["compile_id"].split("/")[:2])
    return frame, attempt, {"inference": 0, "forward": 0, "backward": 1}.get(graph["kind"], 2)


def generated_kernels(result: dict) -> list[dict]:
    """Triton kernels and Triton template kernels, graph by graph, in (compile id, forward before
    backward) order: a GPU compiles a backward graph at the first backward call, virtual-cuda
    right after its forward."""
    graphs = sorted(result.get("graphs", []), key=_graph_order)
    return [dict(k, graph=g["compile_id"] + " " + g["kind"])
            for g in graphs for k in g["kernels"] if k["kind"] in ("triton", "template")]


triton_kernels = generated_kernels  # bench/suite.py's name for it


def compare(real: dict, virtual: dict, mode: str = "default", replayed: bool = False) -> dict:
    """The verdict on the kernels of `virtual` against `real`; `replayed`: virtual-cuda replayed
    the real side's timing decisions, so no difference is expected."""
    if "error" in real or "error" in virtual:
        side = "both" if "error" in real and "error" in virtual else "cuda" if "error" in real else "virtual-cuda"
        return {"error": real.get("error") or virtual.get("error"), "error_in": side, "mode": mode}
    a, b = generated_kernels(real), generated_kernels(virtual)
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
    same_launches = sum(1 for x, y in zip(a, b) if x["name"] == y["name"] and x.get("launch") is not None
                        and x.get("launch") == y.get("launch"))
    if identical:
        verdict = "identical"
    elif mode in TEMPLATE_MODES and not replayed:
        verdict = "template choices differ (expected)"
    elif padded_by_timing and not replayed:
        verdict = "pad_mm timing choice differs (expected)"
    elif same_code_but_numbering(a, b) and extern_a == extern_b:
        verdict = "same code (node names numbered differently)"
    else:
        verdict = "DIFFERENT"
    return {
        "mode": mode, "verdict": verdict, "replayed": replayed,
        "kernels_real": len(a), "kernels_virtual": len(b),
        "templates_real": sum(1 for k in a if k["kind"] == "template"),
        "templates_virtual": sum(1 for k in b if k["kind"] == "template"),
        "same_names": names_a == names_b,
        "same_fusion": same_nodes, "same_source": same_source,
        "extern_real": extern_a, "extern_virtual": extern_b,
        "only_real": sorted(set(names_a) - set(names_b)), "only_virtual": sorted(set(names_b) - set(names_a)),
        "differing_kernels": differing,
        "real_pad_mm_padded_by_timing": padded_by_timing,
        "launched_real": sum(1 for k in a if k.get("launch") is not None),
        "launch_replayed": sum(1 for k in b if k.get("replayed_from")), "same_launch_config": same_launches,
        "real_specific_line_share": round(sum(k["specific"] for k in a) / lines, 3) if lines else None,
        "real_coverage": real.get("coverage"), "virtual_coverage": virtual.get("coverage"),
        "real_provenance": real["provenance"], "real_warnings": real["warnings"],
        "virtual_warnings": virtual.get("warnings"),
        "virtual_audit": virtual.get("audit"),
        "torch": real["torch"], "triton": real["triton"],
    }


def decisions_report(real: dict, replayed: dict) -> dict:
    """What the GPU decided by timing, and what virtual-cuda replayed, still guessed, or never asked."""
    def counts(result: dict) -> dict:
        found: dict[str, int] = {}
        for decision in result.get("decisions", []):
            name = f"{decision['kind']} {decision['origin']}"
            found[name] = found.get(name, 0) + 1
        for origin, count in (result.get("launch_decisions") or {}).items():
            if count:
                found[f"triton_config {origin}"] = count
        return dict(sorted(found.items()))

    return {"gpu": real.get("gpu"), "recorded": counts(real), "virtual": counts(replayed),
            "guessed": [d for d in replayed.get("decisions", []) if d["origin"] == "guessed"],
            "unused": replayed.get("unused", []),
            "real_decisions": real.get("decisions", [])}


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


class Checker:
    """Runs the cases, writing the results to --out after every one. A case is a chain (the
    GPU, then virtual-cuda replaying its decisions) and, unless --no-unreplayed, virtual-cuda
    alone, compared with the same GPU run once both are there."""

    def __init__(self, args):
        self.args = args
        self.started = time.monotonic()
        self.rows: dict[str, dict] = {}
        self.lock = threading.Lock()
        self.pending: dict[str, dict] = {}  # case -> {"real": ..., "plain": ...} until both are there
        if args.resume and args.out and args.out.is_file():
            self.rows = {key: row for key, row in json.loads(args.out.read_text()).get("rows", {}).items()
                         if "error" not in row.get("replayed", {"error": "none"})}
        self.decisions_dir = args.decisions_dir or Path(tempfile.mkdtemp(prefix="gpu-check-decisions-"))
        self.decisions_dir.mkdir(parents=True, exist_ok=True)

    def done(self, case: tuple) -> bool:
        return row_name(*case) in self.rows

    def late(self) -> bool:
        return self.args.deadline is not None and time.monotonic() - self.started > self.args.deadline

    def chain(self, case: tuple) -> None:
        example, train, dynamic, mode = case
        key = row_name(*case)
        if self.late():
            self._keep(key, {"skipped": f"not started: past --deadline {self.args.deadline} s"})
            return
        decisions = self.decisions_dir / (key.replace(" ", "_") + ".json")
        real = record(example, self.args.real_target, train, dynamic, mode, self.args.dump, decisions_out=decisions,
                      timeout=self.args.timeout, label="cuda")
        self._pair(case, "real", real)
        if "error" in real or not decisions.is_file():
            replayed = {"error": "no cuda recording to replay"}
        elif self.late():
            replayed = {"error": f"not started: past --deadline {self.args.deadline} s"}
        else:
            replayed = record(example, "virtual-cuda", train, dynamic, mode, self.args.dump, decisions_in=decisions,
                              timeout=self.args.timeout, label="virtual-cuda-replayed")
        row = {"case": key, "replayed": compare(real, replayed, mode, replayed=True),
               "wall": {"cuda": real.get("wall"), "virtual_replayed": replayed.get("wall")}}
        if "error" not in real and "error" not in replayed:
            row["decisions"] = decisions_report(real, replayed)
        self._keep(key, row)

    def plain(self, case: tuple) -> None:
        """virtual-cuda with no recording: every timing decision guessed."""
        example, train, dynamic, mode = case
        if self.late():
            return
        self._pair(case, "plain", record(example, "virtual-cuda", train, dynamic, mode, self.args.dump,
                                         timeout=self.args.timeout))

    def _pair(self, case: tuple, side: str, result: dict) -> None:
        key = row_name(*case)
        with self.lock:
            pair = self.pending.setdefault(key, {})
            pair[side] = result
            if "real" not in pair or "plain" not in pair:
                return
            real, plain = pair["real"], pair["plain"]
            del self.pending[key]
        row = {"unreplayed": compare(real, plain, case[3])}
        if "error" not in plain:
            row["unreplayed_guessed"] = [d for d in plain.get("decisions", []) if d["origin"] == "guessed"]
        self._keep(key, row, quiet=True)

    def _keep(self, key: str, row: dict, quiet: bool = False) -> None:
        with self.lock:
            self.rows[key] = {**self.rows.get(key, {}), **row}
            self.write()
        if not quiet:
            replayed = row.get("replayed", {})
            print(f"{key}: {replayed.get('verdict') or replayed.get('error', row.get('skipped', ''))[:300]}",
                  flush=True)

    def write(self, final: bool = False) -> None:
        if self.args.out is None:
            return
        data = {"partial": not final, "elapsed_s": round(time.monotonic() - self.started, 1), "rows": self.rows}
        staging = self.args.out.with_name(self.args.out.name + ".tmp")
        staging.write_text(json.dumps(data, indent=1))
        os.replace(staging, self.args.out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="the results, written again after every case")
    parser.add_argument("--examples", nargs="*", default=EXAMPLES,
                        help=f"examples/ names, or names of the model zoo ({', '.join(ZOO)}), "
                             "--engine or --device-branches")
    parser.add_argument("--zoo", action="store_true", help="add the model zoo to the examples")
    parser.add_argument("--engine", action="store_true",
                        help=f"add the engine's own cases ({', '.join(ENGINE)})")
    parser.add_argument("--device-branches", action="store_true",
                        help=f"add the models whose code decides by device ({', '.join(DEVICE_BRANCHES)})")
    parser.add_argument("--variants", action="store_true",
                        help="add the --dynamic and max-autotune-no-cudagraphs variants (VARIANTS)")
    parser.add_argument("--jobs", type=int, default=4, help="recordings run in parallel")
    parser.add_argument("--dump", type=Path,
                        help="write each recording's post-grad graphs and wrappers under DIR/case/device/")
    parser.add_argument("--decisions-dir", type=Path,
                        help="keep each case's recorded decisions file (the GPU's) in DIR")
    parser.add_argument("--no-unreplayed", action="store_true",
                        help="skip virtual-cuda without the GPU's decisions (the comparison of today's guesses)")
    parser.add_argument("--resume", action="store_true", help="skip the cases --out already holds")
    parser.add_argument("--deadline", type=float, metavar="SECONDS",
                        help="start no recording after this many seconds (the rest are marked skipped)")
    parser.add_argument("--timeout", type=int, default=480, help="seconds one recording may take")
    parser.add_argument("--real-target", default="cuda", choices=["cuda", "virtual-cuda"],
                        help="the side compared against (default cuda; virtual-cuda tries this script without a GPU)")
    args = parser.parse_args()
    if args.zoo:
        args.examples = [*args.examples, *ZOO]
    if args.engine:
        args.examples = [*args.examples, *ENGINE]
    if args.device_branches:
        args.examples = [*args.examples, *DEVICE_BRANCHES]
    todo = cases(args.examples, args.variants)
    checker = Checker(args)
    todo = [case for case in todo if not checker.done(case)]
    # the slowest (max-autotune times every template on the GPU) first; each chain before the plain runs
    ordered = sorted(todo, key=lambda case: case[3] == "default")
    tasks = [(checker.chain, case) for case in ordered]
    if not args.no_unreplayed:
        tasks += [(checker.plain, case) for case in ordered]
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        for future in [pool.submit(task, case) for task, case in tasks]:
            future.result()
    checker.write(final=True)
    print_table(checker.rows)
    return 0


def print_table(rows: dict[str, dict]) -> None:
    print(f"{'case':46} {'real':>5} {'virt':>5} {'tmpl':>4} {'names':>6} {'fusion':>7} {'source':>7}  "
          f"{'replayed: verdict':36} {'guessed':>7}  unreplayed")
    for key, row in rows.items():
        replayed = row.get("replayed", {})
        plain = (row.get("unreplayed") or {}).get("verdict") or (row.get("unreplayed") or {}).get("error", "-")
        if "skipped" in row and not replayed:
            print(f"{key:46} skipped: {row['skipped']}")
            continue
        if "error" in replayed:
            print(f"{key:46} error ({replayed.get('error_in', '?')}): {replayed['error'][-300:]}")
            continue
        guessed = len((row.get("decisions") or {}).get("guessed", []))
        print(f"{key:46} {replayed['kernels_real']:5} {replayed['kernels_virtual']:5} {replayed['templates_real']:4} "
              f"{str(replayed['same_names']):>6} {replayed['same_fusion']:7} {replayed['same_source']:7}  "
              f"{replayed['verdict']:36} {guessed:7}  {str(plain)[:60]}")


if __name__ == "__main__":
    raise SystemExit(main())
