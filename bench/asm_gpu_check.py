"""Below the kernel on a GPU: are the SASS and resources virtual-cuda shows those of the
kernels the GPU built?

Run on a machine with an NVIDIA GPU (torch and triton as the user has them, no network):

    python bench/asm_gpu_check.py --jobs 8 --out asm_gpu.json

For each model of the zoo (bench/models/; inference, and training for a few), it records
the model twice in fresh subprocesses, each followed by the build below the kernel of
every Triton kernel (`compile --asm`):
- `--target cuda`: the real compile. Every kernel is built and launched by the GPU; its
  autotuner keeps the config it launched (timing several where it has several). The child
  also keeps what the GPU itself built for each kernel: the launcher's cubin (disassembled
  with the Triton wheel's nvdisasm) and the registers, spills and shared memory the driver
  reported (`n_regs`, `n_spills` = local memory / 4, `shared`).
- `--target virtual-cuda`: no GPU involved; each kernel built for sm_90 from the file
  Inductor wrote. The virtual-cuda recording replays the timing decisions the cuda one made
  (docs/decisions.md: pad_mm, autotune choices, each kernel's launched config), so it runs
  after it and shows the config the GPU launched; with `--no-replay` both run at once and
  virtual-cuda shows the config Inductor runs when it does not time.
Three comparisons per kernel (paired by graph and kernel name, same kernel source):
1. rebuild vs GPU: the cuda run's build (the launched config, compiled again through
   Inductor's own compile path) against the GPU's own cubin: SASS identical, and registers,
   n_spills and shared memory equal to what the driver reported;
2. virtual-cuda vs GPU, SASS: identical, or why not — the GPU timed several configs and
   launched another one than virtual-cuda shows ("config chosen by timing"), or the kernel
   source differs (a codegen difference bench/gpu_check.py reports), or the kernel is not in
   both runs;
3. virtual-cuda vs GPU, resources (registers, n_spills, shared memory), with the same split.
Where the configs are the same and the SASS is not, the row carries the first differing SASS
lines, whether only NOP padding differs, and the diff of the PTX ptxas was given.
Prints a table per case and the shares over all kernels; --out writes everything as JSON.
`--self-check` runs the pipeline with a second virtual-cuda recording in place of the GPU
(to check the script on a machine without one).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# name -> (bench/models file, factory, train)
CASES = {
    "gpt2": ("gpt2", "make", False),
    "gpt2_eager": ("gpt2", "make_eager_attention", False),
    "bert": ("bert", "make", False),
    "llama": ("llama", "make", False),
    "llama_bf16": ("llama", "make_bf16", False),
    "transformer_encoder": ("transformer_encoder", "make", False),
    "small_cnn": ("small_cnn", "make", False),
    "moe": ("moe", "make", False),
    "gpt2 train": ("gpt2", "make_train", True),
    "llama train": ("llama", "make_train", True),
    "small_cnn train": ("small_cnn", "make_train", True),
}

_CHILD = r"""
import json, os, sys, tempfile, hashlib
sys.path.insert(0, {repo!r})
from pathlib import Path
from unittest import mock
from kernelscope.engine.recorder import RecordOptions, record_factory
from kernelscope.engine.asm_build import build_run_asm
from kernelscope.asm import linemaps, tools
from kernelscope.store import StoreBackend
from kernelscope.decisions.model import from_run, load_file, write_file

gpu_built = []
patches = []
if {device!r} == "cuda":
    from torch._inductor.runtime.triton_heuristics import CachingAutotuner
    autotuners = []
    original_init = CachingAutotuner.__init__
    def init(self, *args, **kwargs):
        original_init(self, *args, **kwargs)
        autotuners.append(self)
    patches.append(mock.patch.object(CachingAutotuner, "__init__", init))
for patch in patches:
    patch.start()
decisions = load_file(Path({decisions_in!r})) if {decisions_in!r} else None
run = record_factory({spec!r}, RecordOptions(device={device!r}, train={train!r}, workspace=Path({repo!r}),
                                             decisions=decisions))
for patch in patches:
    patch.stop()
if {decisions_out!r}:
    write_file(from_run(run, "asm_gpu_check"), Path({decisions_out!r}))

def same_config(a, b):
    return (a.kwargs, a.num_warps, a.num_stages) == (b.kwargs, b.num_warps, b.num_stages)

def gpu_cubin(autotuner, launcher):
    # The cubin the launcher runs: its own binary, else the compile result of its config
    # (torch 2.11 keeps every candidate's compile result after timing; the first is not the launched one).
    binary = getattr(launcher, "bin", None)
    if binary is not None and getattr(binary, "asm", None) and "cubin" in binary.asm:
        return binary.asm["cubin"]
    for result in getattr(autotuner, "compile_results", None) or []:
        config = getattr(result, "config", None)
        if config is None or not same_config(config, launcher.config):
            continue
        kernel = getattr(result, "kernel", None)
        if getattr(kernel, "asm", None) and "cubin" in kernel.asm:
            return kernel.asm["cubin"]
        if getattr(kernel, "cubin_raw", None):
            return kernel.cubin_raw
        path = getattr(kernel, "cubin_path", None)
        if path and os.path.exists(path):
            return Path(path).read_bytes()
    return None

skipped = {{}}
if {device!r} == "cuda":
    for autotuner in autotuners:
        name = autotuner.fn.__name__
        launchers = getattr(autotuner, "launchers", None) or []
        if len(launchers) != 1:
            skipped[name] = f"{{len(launchers)}} launchers (never launched or not timed)"
            continue
        launcher = launchers[0]
        cubin = gpu_cubin(autotuner, launcher)
        if cubin is None:
            skipped[name] = "no cubin found for the launched config"
        sass = linemaps.sass_instructions(tools.disassemble(cubin)) if cubin else None
        binary = getattr(launcher, "bin", None)
        ptx = (getattr(binary, "asm", None) or {{}}).get("ptx")
        config = launcher.config
        gpu_built.append(dict(name=name, src=getattr(autotuner.fn, "src", None) or "",
                              config=dict(kwargs={{k: (v if isinstance(v, (bool, str)) else int(v))
                                                  for k, v in sorted(config.kwargs.items())}},
                                          num_warps=config.num_warps, num_stages=config.num_stages),
                              n_regs=launcher.n_regs, n_spills=launcher.n_spills, shared=launcher.shared,
                              sass=sass, ptx=ptx))

kernels = []
with tempfile.TemporaryDirectory() as directory, StoreBackend(Path(directory) / ".kernelscope") as store:
    run_id = store.write_run(run)
    summary = build_run_asm(store, run_id)
    for info in store.asm.run_infos(run_id).values():
        source = (store.root / info.kernel_file).read_text()
        row = dict(graph=info.graph_key, name=info.name, source_sha=hashlib.sha256(source.encode()).hexdigest(),
                   error=info.error)
        if info.facts is not None:
            facts = info.facts
            row.update(config=facts.config.to_dict(), candidates=len(facts.candidates), chosen_by=facts.chosen_by,
                       registers=facts.registers, spill_bytes=facts.spill_bytes, local_bytes=facts.local_bytes,
                       shared=facts.shared_bytes, sass=linemaps.sass_instructions(
                           (store.root / info.files["sass"]).read_text()),
                       ptx=(store.root / info.files["ptx"]).read_text())
            gpu = [g for g in gpu_built if g["name"] == info.name and g["src"].strip() in source]
            if gpu:
                row["gpu"] = {{k: v for k, v in gpu[0].items() if k != "src"}}
            elif {device!r} == "cuda":
                row["gpu_missing"] = skipped.get(info.name) or (
                    "source differs" if any(g["name"] == info.name for g in gpu_built) else
                    f"no autotuner of that name ({{len(autotuners)}} made)")
        kernels.append(row)
import triton
environment = {{key: value for key, value in sorted(os.environ.items()) if "TRITON" in key or "CUDA" in key
               or key in ("PATH", "LD_LIBRARY_PATH")}}
environment["ptxas"] = str(getattr(getattr(triton.knobs, "nvidia", None), "ptxas", None)
                           and triton.knobs.nvidia.ptxas.path)
print("KERNELSCOPE_JSON" + json.dumps(dict(torch=run.torch_version, triton=run.triton_version, environment=environment,
      asm=summary.to_dict(), kernels=kernels)))
"""


def record(case: str, device: str, decisions_in: Path | None = None, decisions_out: Path | None = None) -> dict:
    """One recording and build below the kernel in a fresh process; `decisions_out`: write the
    run's timing decisions there; `decisions_in`: replay that decisions file."""
    file, factory, train = CASES[case]
    spec = f"{REPO / 'bench' / 'models' / file}.py:{factory}"
    code = _CHILD.format(repo=str(REPO), spec=spec, device=device, train=train,
                         decisions_in=str(decisions_in or ""), decisions_out=str(decisions_out or ""))
    env = dict(os.environ, TORCHINDUCTOR_COMPILE_THREADS="1", HF_HUB_OFFLINE="1")
    if device == "cuda":
        # Triton's own launcher keeps each kernel's CompiledKernel (its cubin) on the launcher; the
        # static launcher (the default) drops it once the temporary caches go. Same kernels either way.
        env["TORCHINDUCTOR_USE_STATIC_CUDA_LAUNCHER"] = "0"
    try:
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=420)
    except subprocess.TimeoutExpired:
        return {"error": f"{device} recording timed out after 420 s"}
    for line in done.stdout.splitlines():
        if line.startswith("KERNELSCOPE_JSON"):
            return json.loads(line[len("KERNELSCOPE_JSON"):])
    return {"error": (done.stderr or done.stdout)[-2000:]}


def _sass_diff(gpu: list, rebuilt: list, context: int = 24) -> list[str]:
    """The first differing SASS lines (GPU first), for the report."""
    import difflib

    return list(difflib.unified_diff([str(i) for i in gpu], [str(i) for i in rebuilt], "gpu", "rebuild", n=1,
                                     lineterm=""))[:context]


def _text_diff(gpu: str, rebuilt: str, context: int) -> list[str]:
    import difflib

    return list(difflib.unified_diff(gpu.splitlines(), rebuilt.splitlines(), "gpu", "rebuild", n=1,
                                     lineterm=""))[:context]


def _without_locations(ptx: str) -> list[str]:
    """PTX without its debug locations and file table (`.loc`, `.file`, the debug sections)."""
    return [line for line in ptx.splitlines() if not line.strip().startswith((".loc", ".file", "//"))]


def _without_nops(sass: list) -> list:
    return [instruction for instruction in sass if instruction.split(" ")[0] != "NOP"]


def _same_resources(a: dict, n_regs, n_spills, shared) -> bool:
    return (a["registers"], a["local_bytes"] // 4, a["shared"]) == (n_regs, n_spills, shared)


def compare(real: dict, virtual: dict) -> dict:
    """The three comparisons of the module docstring, kernel by kernel."""
    if "error" in real or "error" in virtual:
        return {"error": real.get("error") or virtual.get("error"),
                "error_in": "cuda" if "error" in real else "virtual-cuda"}
    virtual_by_key = {(k["graph"], k["name"]): k for k in virtual["kernels"]}
    rows = []
    for kernel in real["kernels"]:
        row = {"graph": kernel["graph"], "name": kernel["name"]}
        gpu = kernel.get("gpu")
        if kernel.get("error") or gpu is None or gpu.get("sass") is None:
            row["rebuild"] = (f"no GPU build captured ({kernel.get('gpu_missing', '?')})" if not kernel.get("error")
                              else f"not built: {kernel['error']}")
        else:
            row["rebuild_same_config"] = kernel["config"] == gpu["config"]  # the launch was kept and built
            row["rebuild_sass"] = kernel["sass"] == gpu["sass"]
            if not row["rebuild_sass"]:
                row["rebuild_sass_diff"] = _sass_diff(gpu["sass"], kernel["sass"])
            row["rebuild_resources"] = _same_resources(kernel, gpu["n_regs"], gpu["n_spills"], gpu["shared"])
            row["gpu"] = {"config": gpu["config"], "n_regs": gpu["n_regs"], "n_spills": gpu["n_spills"],
                          "shared": gpu["shared"]}
            row["rebuild"] = {"registers": kernel["registers"], "n_spills": kernel["local_bytes"] // 4,
                              "shared": kernel["shared"]}
        other = virtual_by_key.get((kernel["graph"], kernel["name"]))
        if other is None:
            row["virtual"] = "not in the virtual-cuda run"
        elif other.get("error"):
            row["virtual"] = f"not built: {other['error']}"
        elif other["source_sha"] != kernel["source_sha"]:
            row["virtual"] = "kernel source differs"
        elif gpu is None or gpu.get("sass") is None:
            row["virtual"] = "no GPU build to compare"
        else:
            row["virtual_sass"] = other["sass"] == gpu["sass"]
            row["virtual_resources"] = _same_resources(other, gpu["n_regs"], gpu["n_spills"], gpu["shared"])
            row["virtual_facts"] = {"registers": other["registers"], "n_spills": other["local_bytes"] // 4,
                                    "shared": other["shared"]}
            row["virtual_config"] = other["config"]
            row["virtual_chosen_by"] = other["chosen_by"]
            row["same_config"] = other["config"] == gpu["config"]
            if row["same_config"] and not row["virtual_sass"]:
                row["virtual_sass_diff"] = _sass_diff(gpu["sass"], other["sass"], 60)
                # ptxas placed an alignment NOP elsewhere (seen around a device assert's call)
                row["virtual_sass_but_nops"] = _without_nops(other["sass"]) == _without_nops(gpu["sass"])
                # the PTX ptxas was given: the GPU's (Triton's launcher kept it) against virtual-cuda's
                # (else the cuda run's own build of it, whose SASS is the GPU's)
                ptx = gpu.get("ptx") or kernel.get("ptx")
                if ptx:
                    row["virtual_ptx_against"] = "gpu" if gpu.get("ptx") else "cuda rebuild"
                    row["virtual_ptx_same"] = _without_locations(ptx) == _without_locations(other["ptx"])
                    row["virtual_ptx_diff"] = _text_diff(ptx, other["ptx"], 80)
            row["virtual"] = ("identical" if row["virtual_sass"] and row["virtual_resources"] else
                              "config chosen by timing" if not row["same_config"] else
                              "identical but for NOP padding" if row.get("virtual_sass_but_nops")
                              and row["virtual_resources"] else "DIFFERENT")
        rows.append(row)
    return {"torch": real["torch"], "triton": real["triton"], "kernels": rows,
            "environment": {"cuda": real.get("environment"), "virtual-cuda": virtual.get("environment")}}


def shares(rows: list[dict]) -> dict:
    rebuilt = [r for r in rows if "rebuild_sass" in r]
    paired = [r for r in rows if "virtual_sass" in r]
    same_config = [r for r in paired if r["same_config"]]
    return {
        "kernels": len(rows),
        "rebuild_same_config": f"{sum(r['rebuild_same_config'] for r in rebuilt)}/{len(rebuilt)}",
        "rebuild_sass_identical": f"{sum(r['rebuild_sass'] for r in rebuilt)}/{len(rebuilt)}",
        "rebuild_resources_equal": f"{sum(r['rebuild_resources'] for r in rebuilt)}/{len(rebuilt)}",
        "virtual_sass_identical": f"{sum(r['virtual_sass'] for r in paired)}/{len(paired)}",
        "virtual_resources_equal": f"{sum(r['virtual_resources'] for r in paired)}/{len(paired)}",
        "virtual_same_config": f"{len(same_config)}/{len(paired)}",
        "same_config_sass_identical": f"{sum(r['virtual_sass'] for r in same_config)}/{len(same_config)}",
        "same_config_sass_identical_but_nops": (
            f"{sum(r['virtual_sass'] or r.get('virtual_sass_but_nops', False) for r in same_config)}"
            f"/{len(same_config)}"),
        "same_config_resources_equal": f"{sum(r['virtual_resources'] for r in same_config)}/{len(same_config)}",
        "not_compared": sorted({r["virtual"] for r in rows if "virtual_sass" not in r}),
    }


def _self_check_as_gpu(result: dict) -> dict:
    """A virtual-cuda result dressed as the GPU's: its own SASS and facts as `gpu`."""
    for kernel in result.get("kernels", []):
        if kernel.get("sass") is not None:
            kernel["gpu"] = {"config": kernel["config"], "n_regs": kernel["registers"],
                             "n_spills": kernel["local_bytes"] // 4, "shared": kernel["shared"], "sass": kernel["sass"],
                             "ptx": kernel.get("ptx")}
    return result


def _print_row(case: str, row: dict) -> None:
    if "error" in row:
        print(f"{case:22} error ({row['error_in']}): {row['error'][-400:]}", flush=True)
        return
    s = row["shares"]
    print(f"{case:22} {s['kernels']:>7} {s['rebuild_sass_identical']:>12} {s['rebuild_resources_equal']:>11} "
          f"{s['virtual_sass_identical']:>9} {s['virtual_resources_equal']:>8} {s['virtual_same_config']:>8} "
          f"{s['same_config_sass_identical']:>13}  {'; '.join(s['not_compared'])}", flush=True)
    for kernel in row["kernels"]:
        if kernel.get("virtual") == "DIFFERENT" or kernel.get("rebuild_sass") is False \
                or kernel.get("rebuild_same_config") is False \
                or kernel.get("rebuild_resources") is False:
            details = {key: kernel.get(key) for key in ("gpu", "rebuild", "virtual_config", "rebuild_same_config",
                                                        "rebuild_sass",
                                                        "rebuild_resources", "virtual_sass", "virtual_resources")}
            print(f"    {kernel['graph']}/{kernel['name']}: {json.dumps(details)}", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", nargs="*", default=list(CASES), help=f"default: {', '.join(CASES)}")
    parser.add_argument("--jobs", type=int, default=4, help="recordings run in parallel")
    parser.add_argument("--out", type=Path, help="write every kernel's comparison as JSON (after each case)")
    parser.add_argument("--no-replay", action="store_true",
                        help="virtual-cuda without the GPU's decisions (launch configs as Inductor runs them untimed)")
    parser.add_argument("--self-check", action="store_true",
                        help="no GPU: a second virtual-cuda recording stands in for the GPU's")
    args = parser.parse_args()
    devices = {"gpu": "virtual-cuda" if args.self_check else "cuda", "virtual": "virtual-cuda"}
    results: dict[tuple[str, str], dict] = {}
    report: dict[str, dict] = {"replayed": not args.no_replay}
    all_rows: list[dict] = []
    decisions_dir = Path(tempfile.mkdtemp(prefix="asm-gpu-check-decisions-"))
    print(f"{'case':22} {'kernels':>7} {'rebuild SASS':>12} {'rebuild res':>11} {'virt SASS':>9} {'virt res':>8} "
          f"{'same cfg':>8} {'same-cfg SASS':>13}  not compared", flush=True)

    def chain(case: str) -> None:
        """The GPU's recording, then virtual-cuda's replaying the decisions it made."""
        decisions = decisions_dir / f"{case.replace(' ', '_')}.json"
        real = record(case, devices["gpu"], decisions_out=decisions)
        done(case, "gpu", real)
        if "error" in real or not decisions.is_file():
            done(case, "virtual", {"error": "no GPU recording to replay"})
        else:
            done(case, "virtual", record(case, devices["virtual"], decisions_in=decisions))

    lock = threading.Lock()

    def done(case: str, role: str, result: dict) -> None:
        with lock:
            results[(case, role)] = result
            if (case, "gpu") not in results or (case, "virtual") not in results:
                return
            real = results[(case, "gpu")]
            if args.self_check:
                real = _self_check_as_gpu(real)
            row = compare(real, results[(case, "virtual")])
            if "error" not in row:
                row["shares"] = shares(row["kernels"])
                all_rows.extend(row["kernels"])
            report[case] = row
            _print_row(case, row)
            report["all"] = shares(all_rows)
            if args.out:
                args.out.write_text(json.dumps(report, indent=1) + "\n")

    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        if args.no_replay:
            jobs = [pool.submit(lambda c=case, r=role: done(c, r, record(c, devices[r])))
                    for case in args.cases for role in devices]
        else:
            jobs = [pool.submit(chain, case) for case in args.cases]
        for job in as_completed(jobs):
            job.result()
    print("all: " + json.dumps(shares(all_rows)), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
