"""Compare `--aot --target virtual-cuda` (AOTInductor's CUDA build without a GPU) with a real
`--aot --target cuda` build of the same factories: the C++ wrapper, the Triton kernels, their cubins.

Run on a machine with an NVIDIA GPU and a CUDA build of torch (the lead runs it; docs/aot.md):

    python3 bench/aot_gpu_check.py --out $OUT/aot_gpu_check.json
    python3 bench/aot_gpu_check.py examples/mlp.py:make --out $OUT/aot_mlp.json   # other factories

Each factory is recorded twice, in fresh processes, into stores of their own: `kernelscope
compile SPEC --aot --target cuda` (AOTInductor's real build: each Triton kernel compiled and
launched on the GPU to time its configs, the `.so` linked) and `--target virtual-cuda` (the
same build without a GPU: each kernel compiled for the config Inductor runs untimed, never
launched; C++ sources, CMake files and cubins, no `.so`). Then, graph by graph:
- `wrapper`: the recorded `wrapper.cpp` (what AOTInductor generated, before it is compiled),
  with what names a build rather than the code left out: each cubin's file (a hash of a
  temporary path on the GPU, the kernel's name here) is called by its kernel, and Triton's
  `backend_hash` (a hash of the Triton build and the ptxas it found) is blanked.
  "identical"; "same but launch configs" when the only differing lines are a Triton launch's
  grid, `loadKernel` shared memory or `launchKernel` arguments (the configs the GPU chose by
  timing, which virtual-cuda cannot: expected); else "DIFFERENT" with the diff's first lines;
  `launch_configs_differ` names the kernels whose launch lines differ;
- `kernels`: each Triton kernel's name and source (`backend_hash` blanked), and the extern
  calls, compared;
- `cubins`: per kernel, "identical" bytes, "same SASS (bytes differ)" (`nvdisasm -c`: the
  debug sections name the kernel file in each build's temporary cache directory), "SASS
  differs (another launch config)" for a kernel whose launch lines differ, else "SASS
  differs" (another ptxas, or a real difference);
- `package`: the files each package holds (hash-named files by their suffix); the virtual-cuda
  package has no `.so` (expected, see docs/aot.md);
- each side's coverage and the virtual side's warnings (the config compiled per kernel, and why).
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
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FACTORIES = ["examples/swiglu_mlp.py:make", "examples/mlp.py:make", "examples/attention.py:make",
             "examples/conv_bn.py:make", "examples/nanogpt.py:make"]
_CUBIN_PATH = re.compile(r'loadKernel\("([^"]*/)?([^"/]+\.cubin)", "(\w+)"')
_LAUNCH_CONFIG = re.compile(r"^\s*(uint32_t grid_\d = |launchKernel\(|kernels_\.\w+ = loadKernel\()")
_BACKEND_HASH = re.compile(r"('backend_hash':\s*)'[0-9A-Fa-f]+'")
_KERNEL_MENTION = re.compile(r"kernels_\.(\w+)")
_INT_ARRAY = re.compile(r"static constexpr int64_t (?:(int_array_\d+)\[\] = \{([^}]*)\}|\*(int_array_\d+)=nullptr);")
_INT_ARRAY_LINE = re.compile(
    r"^[ \t]*static constexpr int64_t (?:int_array_\d+\[\] = \{[^}]*\}|\*int_array_\d+=nullptr);\n", re.MULTILINE)


def kernelscope(*args: str, store: Path, timeout: int) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO), TORCHINDUCTOR_COMPILE_THREADS="1")
    return subprocess.run([sys.executable, "-m", "kernelscope", *args, "--store", str(store)], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=timeout)


def record(spec: str, target: str, store: Path, timeout: int) -> dict:
    """One `--aot` build, as its dump holds it; {"error": ...} if it failed."""
    try:
        done = kernelscope("compile", spec, "--aot", "--target", target, store=store, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"{target}: timed out after {timeout} s"}
    if done.returncode != 0:
        return {"error": f"{target}: {(done.stderr or done.stdout)[-2000:]}"}
    dumped = kernelscope("dump", "--absolute-paths", store=store, timeout=timeout)
    return json.loads(dumped.stdout)["run"]


def wrapper_text(graph: dict) -> str:
    return Path(graph["wrapper_file"]["path"]).read_text()


def without_build_names(text: str) -> str:
    """`text` without what names a build rather than the code: each cubin file called by its
    kernel, Triton's backend hash blanked, and each `int_array_N` (a size or stride array
    AOTInductor declares once and reuses: which declaration a later use shares depends on a
    cache keyed by object ids) replaced by its values."""
    text = _CUBIN_PATH.sub(lambda m: f'loadKernel("{m.group(3)}.cubin", "{m.group(3)}"', text)
    text = _BACKEND_HASH.sub(r"\1'...'", text)
    arrays = {m.group(1) or m.group(3): m.group(2) if m.group(1) else "nullptr" for m in _INT_ARRAY.finditer(text)}
    if not arrays:
        return text
    text = _INT_ARRAY_LINE.sub("", text)
    return re.sub(r"\bint_array_\d+\b", lambda m: "{" + arrays.get(m.group(0), m.group(0)) + "}", text)


def compare_wrappers(real: str, virtual: str) -> dict:
    if real == virtual:
        return {"verdict": "identical", "launch_configs_differ": []}
    real_lines, virtual_lines = real.splitlines(), virtual.splitlines()
    diff = list(difflib.unified_diff(real_lines, virtual_lines, "cuda", "virtual-cuda", lineterm="", n=0))
    changed, kernels = [], set()
    for tag, a0, a1, b0, b1 in difflib.SequenceMatcher(None, real_lines, virtual_lines, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        changed += real_lines[a0:a1] + virtual_lines[b0:b1]
        # the kernel a launch line belongs to: the first one named from there on (its launcher's loadKernel)
        named = next((m.group(1) for line in real_lines[a0:] for m in [_KERNEL_MENTION.search(line)] if m), None)
        if named and all(_LAUNCH_CONFIG.match(line) for line in real_lines[a0:a1] + virtual_lines[b0:b1]):
            kernels.add(named)
    verdict = ("same but launch configs (the GPU's timed choice)"
               if all(_LAUNCH_CONFIG.match(line) for line in changed) else "DIFFERENT")
    return {"verdict": verdict, "changed_lines": len(changed), "launch_configs_differ": sorted(kernels),
            "diff": "\n".join(diff[:80])}


def compare_kernels(real: dict, virtual: dict) -> dict:
    def of(graph):
        return [(kernel["name"], kernel["kind"],
                 without_build_names(Path(kernel["file"]["path"]).read_text()) if kernel.get("file") else "")
                for kernel in graph["kernels"]]

    a, b = of(real), of(virtual)
    return {"verdict": "identical" if a == b else "DIFFERENT",
            "cuda": [name for name, _, _ in a], "virtual-cuda": [name for name, _, _ in b],
            "source_differs": [x[0] for x, y in zip(a, b) if x[0] == y[0] and x[2] != y[2]]}


def package_files(run: dict, store: Path) -> dict[str, bytes]:
    """The package's files, each cubin by its kernel (the name the wrapper loads it by)."""
    path = store / "runs" / "1" / run["aot_package"]["file"]
    with zipfile.ZipFile(path) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def compare_cubins(real_wrapper: str, virtual_wrapper: str, real_files: dict, virtual_files: dict,
                   other_config: set[str]) -> dict:
    """`*_wrapper`: as recorded (their cubin file names); `other_config`: kernels whose launch
    lines differ."""
    def by_kernel(wrapper: str, files: dict) -> dict[str, bytes]:
        named = {Path(name).name: data for name, data in files.items()}
        return {kernel: named.get(cubin, b"") for cubin, kernel in
                ((m.group(2), m.group(3)) for m in _CUBIN_PATH.finditer(wrapper))}

    def verdict(kernel: str, a: bytes, b: bytes) -> str:
        if not (a and b):
            return "missing"
        if a == b:
            return "identical"
        # a cubin's debug sections name its kernel file, in each build's own temporary cache directory
        if sass(a) == sass(b):
            return "same SASS (bytes differ)"
        return "SASS differs (another launch config)" if kernel in other_config else "SASS differs"

    real, virtual = by_kernel(real_wrapper, real_files), by_kernel(virtual_wrapper, virtual_files)
    return {kernel: verdict(kernel, real.get(kernel, b""), virtual.get(kernel, b""))
            for kernel in sorted(set(real) | set(virtual))}


def sass(cubin: bytes) -> str:
    """The cubin's SASS without line information (`nvdisasm -c`, the Triton wheel's)."""
    sys.path.insert(0, str(REPO))
    from kernelscope.asm.tools import tool_path

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "kernel.cubin"
        path.write_bytes(cubin)
        return subprocess.run([str(tool_path("nvdisasm")), "-c", str(path)], capture_output=True, text=True,
                              check=True).stdout


def suffixes(files: dict) -> list[str]:
    """The package's files by name, hashes left out (`<hash>.wrapper.cpp` -> `*.wrapper.cpp`)."""
    return sorted({re.sub(r"^[a-z0-9]{40,}", "*", Path(name).name) for name in files})


def check(spec: str, scratch: Path, timeout: int, real_target: str = "cuda") -> dict:
    stores = {"cuda": scratch / "real", "virtual-cuda": scratch / "virtual"}
    targets = {"cuda": real_target, "virtual-cuda": "virtual-cuda"}
    runs = {side: record(spec, targets[side], store, timeout) for side, store in stores.items()}
    if any("error" in run for run in runs.values()):
        return {"factory": spec, "errors": [run["error"] for run in runs.values() if "error" in run]}
    real, virtual = runs["cuda"], runs["virtual-cuda"]
    row: dict = {"factory": spec, "real_target": real_target, "graphs": []}
    real_files, virtual_files = package_files(real, stores["cuda"]), package_files(virtual, stores["virtual-cuda"])
    for real_graph, virtual_graph in zip(real["graphs"], virtual["graphs"]):
        real_wrapper, virtual_wrapper = wrapper_text(real_graph), wrapper_text(virtual_graph)
        wrapper = compare_wrappers(without_build_names(real_wrapper), without_build_names(virtual_wrapper))
        row["graphs"].append({
            "graph": real_graph["key"],
            "wrapper": wrapper,
            "kernels": compare_kernels(real_graph, virtual_graph),
            "cubins": compare_cubins(real_wrapper, virtual_wrapper, real_files, virtual_files,
                                     set(wrapper["launch_configs_differ"])),
        })
    if len(real["graphs"]) != len(virtual["graphs"]):
        row["graph_count"] = {"cuda": len(real["graphs"]), "virtual-cuda": len(virtual["graphs"])}
    row["package"] = {"cuda": suffixes(real_files), "virtual-cuda": suffixes(virtual_files)}
    row["coverage"] = {"cuda": real["coverage"], "virtual-cuda": virtual["coverage"]}
    row["virtual_warnings"] = virtual["warnings"]
    row["torch"] = real["torch_version"]
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("factories", nargs="*", default=FACTORIES, help="PATH.py:FACTORY, relative to the repo")
    parser.add_argument("--out", type=Path, help="the results as JSON")
    parser.add_argument("--timeout", type=int, default=900, help="seconds one build may take")
    parser.add_argument("--real-target", default="cuda", choices=["cuda", "virtual-cuda"],
                        help="virtual-cuda: compare virtual-cuda with itself (this script's dry run without a GPU)")
    args = parser.parse_args()
    rows = []
    for spec in args.factories:
        with tempfile.TemporaryDirectory(prefix="kernelscope-aot-check-") as scratch:
            rows.append(check(spec, Path(scratch), args.timeout, args.real_target))
        row = rows[-1]
        graphs = row.get("graphs", [])
        verdicts = "; ".join(f"{g['graph']}: wrapper {g['wrapper']['verdict']}, kernels {g['kernels']['verdict']}, "
                             f"cubins {sorted(set(g['cubins'].values()))}" for g in graphs)
        print(f"{spec}: {verdicts or row.get('errors')}", flush=True)
        if args.out:
            args.out.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
